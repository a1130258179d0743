package experiments

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// dumpLayer is one synthetic layer: Q [mq, qh, d], K and V [n, kvh, d]
// (layout thd), V with a mean, so that the error grows with the context.
type dumpLayer struct{ q, k, v *tensorfile.Tensor }

// makeDump draws the layers of a synthetic model (seeded per layer).
func makeDump(layers []int, mq, n, qh, kvh, d int, vMean float64) map[int]dumpLayer {
	out := map[int]dumpLayer{}
	for _, l := range layers {
		rng := rand.New(rand.NewPCG(uint64(l), 99))
		draw := func(shape []int, mean float64) *tensorfile.Tensor {
			x := make([]float32, elems(shape))
			for i := range x {
				x[i] = float32(mean + rng.NormFloat64())
			}
			return &tensorfile.Tensor{Shape: shape, Data: x}
		}
		out[l] = dumpLayer{draw([]int{mq, qh, d}, 0), draw([]int{n, kvh, d}, 0), draw([]int{n, kvh, d}, vMean*float64(l+1))}
	}
	return out
}

// writeDumpNPY writes the layers as a dump folder (and each layer's q, k,
// v as single files under single/, for comparison).
func writeDumpNPY(t *testing.T, dir string, ls map[int]dumpLayer, positions []float32) {
	t.Helper()
	for l, x := range ls {
		for role, tt := range map[string]*tensorfile.Tensor{"q": x.q, "k": x.k, "v": x.v} {
			if err := tensorfile.WriteNPY(filepath.Join(dir, fmt.Sprintf("layer%d_%s.npy", l, role)), tt.Shape, tt.Data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if positions != nil {
		if err := tensorfile.WriteNPY(filepath.Join(dir, "positions.npy"), []int{len(positions)}, positions); err != nil {
			t.Fatal(err)
		}
	}
}

// writeDumpST writes the layers as one .safetensors dump.
func writeDumpST(t *testing.T, path string, ls map[int]dumpLayer, positions []float32) {
	t.Helper()
	ts := map[string]*tensorfile.Tensor{}
	for l, x := range ls {
		ts[fmt.Sprintf("layer%d.q", l)], ts[fmt.Sprintf("layer%d.k", l)], ts[fmt.Sprintf("layer%d.v", l)] = x.q, x.k, x.v
	}
	if positions != nil {
		ts["positions"] = &tensorfile.Tensor{Shape: []int{len(positions)}, Data: positions}
	}
	if err := tensorfile.WriteSafetensors(path, ts); err != nil {
		t.Fatal(err)
	}
}

// attnFileRun runs attention-file on files with args.
func attnFileRun(t *testing.T, e AttentionFile, files map[string]string, args map[string]string) (*sim.Recorder, error) {
	t.Helper()
	x, err := e.WithFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if args == nil {
		args = map[string]string{}
	}
	return attnExec(t, x, 1, args)
}

// A dump (a folder of .npy, or one .safetensors, with positions) gives for
// every layer's heads exactly the points of that layer's files run alone
// (x counted over the layers), its summary over all heads is one Compare
// of every head's O against the exact O (the merged decomposition), the
// verdict follows the stated rule at any threshold, heads.csv holds every
// head, and NumPy's np.save of the same layers reads alike.
func TestAttentionFileDump(t *testing.T) {
	const mq, n, qh, kvh, d = 2, 700, 4, 2, 64
	layerIdx := []int{0, 1, 3} // not contiguous
	ls := makeDump(layerIdx, mq, n, qh, kvh, d, 0.4)
	positions := []float32{650, 699}
	folder := t.TempDir()
	writeDumpNPY(t, folder, ls, positions)
	os.WriteFile(filepath.Join(folder, "info.json"), []byte("{}"), 0o644) // other files are ignored
	st := filepath.Join(t.TempDir(), "model.safetensors")
	writeDumpST(t, st, ls, positions)
	args := map[string]string{"promotions": "0,1", "k-block-n": "64"}

	out := filepath.Join(t.TempDir(), "a", "b") // -o creates it
	recs := map[string]*sim.Recorder{}
	for name, dump := range map[string]string{"folder": folder, "safetensors": st} {
		e := AttentionFile{}
		if name == "folder" {
			e.OutDir = out
		}
		rec, err := attnFileRun(t, e, map[string]string{"dump": dump}, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		recs[name] = rec
	}
	if !slices.EqualFunc(recs["folder"].Points(), recs["safetensors"].Points(), pointsEqual) {
		t.Error("the folder and the safetensors dump give different points")
	}
	pts := recs["folder"].Points()
	if len(pts) != len(layerIdx)*qh*2 {
		t.Fatalf("%d points, want %d", len(pts), len(layerIdx)*qh*2)
	}
	// Each layer alone, from its own files, gives the same points.
	for li, l := range layerIdx {
		rec, err := attnFileRun(t, AttentionFile{}, map[string]string{
			"q": filepath.Join(folder, fmt.Sprintf("layer%d_q.npy", l)), "k": filepath.Join(folder, fmt.Sprintf("layer%d_k.npy", l)),
			"v": filepath.Join(folder, fmt.Sprintf("layer%d_v.npy", l)), "positions": filepath.Join(folder, "positions.npy")}, args)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rec.Points() {
			i := slices.IndexFunc(pts, func(q sim.Point) bool {
				return q.Series == p.Series && q.Extra["layer"] == float64(l) && q.Extra["head"] == p.X
			})
			if i < 0 {
				t.Fatalf("layer %d: no dump point for %s head %v", l, p.Series, p.X)
			}
			q := pts[i]
			if q.X != float64(li*qh)+p.X || q.Y != p.Y || !maps.EqualFunc(withoutLayer(q.Extra), withoutLayer(p.Extra), func(a, b float64) bool { return a == b }) {
				t.Errorf("layer %d %s head %v: dump point %+v, alone %+v", l, p.Series, p.X, q, p)
			}
		}
	}
	// The summary over all heads is Compare of the whole O written by -o.
	sum := recs["folder"].SummaryValues()
	for _, p := range []int{0, 1} {
		var o, ex []float64
		for _, l := range layerIdx {
			o = append(o, readF64(t, filepath.Join(out, fmt.Sprintf("layer%d_o_promotion%d.npy", l, p)))...)
			ex = append(ex, readF64(t, filepath.Join(out, fmt.Sprintf("layer%d_o_exact.npy", l)))...)
		}
		want := attention.Compare(o, ex) // O as written (float32): the kernel's FP32 O exactly; O* rounded to float32
		for k, w := range map[string]float64{"relerr": 100 * want.RelL2, "alpha": want.Alpha, "residual": 100 * want.Residual} {
			got := sum[fmt.Sprintf("%s_p%d", k, p)]
			if !(math.Abs(got-w) <= 1e-5*math.Abs(w)+1e-9) {
				t.Errorf("promotion %d: summary %s = %.9g, Compare of the written O gives %.9g", p, k, got, w)
			}
		}
		if g := sum[fmt.Sprintf("relerr_p%d", p)]; math.Abs(g*g-100*100*((1-sum[fmt.Sprintf("alpha_p%d", p)])*(1-sum[fmt.Sprintf("alpha_p%d", p)]))-sum[fmt.Sprintf("residual_p%d", p)]*sum[fmt.Sprintf("residual_p%d", p)]) > 1e-9*g*g {
			t.Errorf("promotion %d: relerr² ≠ (1 − α)² + residual²", p)
		}
	}
	// heads.csv: a header and one row per head and promotion.
	csv, err := os.ReadFile(filepath.Join(out, "heads.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Split(strings.TrimSpace(string(csv)), "\n"); len(rows) != 1+len(pts) || !strings.HasPrefix(rows[1], "0,0,0,0,") {
		t.Errorf("heads.csv:\n%s", csv)
	}
	// The verdict: the rule at a threshold between the heads' errors.
	var errs0 []float64
	for _, p := range pts {
		if p.Series == "promotion 0" {
			errs0 = append(errs0, p.Y)
		}
	}
	slices.Sort(errs0)
	for _, tc := range []struct {
		threshold float64
		pass      float64
		above     int
	}{
		{errs0[len(errs0)-1] * 1.001, 1, 0},
		{(errs0[3] + errs0[4]) / 2, 0, len(errs0) - 4},
		{errs0[0] / 2, 0, len(errs0)},
	} {
		a := maps.Clone(args)
		a["threshold"] = strconv.FormatFloat(tc.threshold, 'g', -1, 64)
		rec, err := attnFileRun(t, AttentionFile{}, map[string]string{"dump": st}, a)
		if err != nil {
			t.Fatal(err)
		}
		s := rec.SummaryValues()
		if s["pass_p0"] != tc.pass || s["frac_heads_above_p0"] != float64(tc.above)/float64(len(errs0)) || s["worst_relerr_p0"] != errs0[len(errs0)-1] {
			t.Errorf("threshold %g: pass %v, fraction above %v, worst %v; want %v, %d/%d, %v", tc.threshold, s["pass_p0"], s["frac_heads_above_p0"], s["worst_relerr_p0"], tc.pass, tc.above, len(errs0), errs0[len(errs0)-1])
		}
		notes := strings.Join(rec.Notes(), "\n")
		verdict := map[float64]string{1: "PASS", 0: "FAIL"}[tc.pass]
		if !strings.Contains(notes, "verdict, promotion 0 (e4m3, scale one, path direct, hopper): "+verdict) || !strings.Contains(notes, "layer   3:") || !strings.Contains(notes, "worst heads, promotion 0: layer ") {
			t.Errorf("threshold %g: notes\n%s", tc.threshold, notes)
		}
	}
	if sum["layers"] != 3 || sum["heads"] != 3*qh || sum["splits"] != 1 {
		t.Errorf("summary %v", sum)
	}

	// NumPy's np.save of the same layers (float32, thd) is the same dump.
	py := numpyPython(t)
	raw, np := t.TempDir(), t.TempDir()
	var b strings.Builder
	b.WriteString("import numpy as np, sys\nraw, out = sys.argv[1], sys.argv[2]\n")
	for l, x := range ls {
		for role, tt := range map[string]*tensorfile.Tensor{"q": x.q, "k": x.k, "v": x.v} {
			name := fmt.Sprintf("layer%d_%s", l, role)
			if err := os.WriteFile(filepath.Join(raw, name), f32Bytes(tt.Data), 0o644); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "np.save(out + '/%s.npy', np.fromfile(raw + '/%s', '<f4').reshape(%s))\n", name, name, pyShape(tt.Shape))
		}
	}
	b.WriteString("np.save(out + '/positions.npy', np.array([650, 699], dtype=np.int64))\n")
	if o, err := exec.Command(py, "-c", b.String(), raw, np).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, o)
	}
	rec, err := attnFileRun(t, AttentionFile{}, map[string]string{"dump": np}, args)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(rec.Points(), pts, pointsEqual) {
		t.Error("NumPy's dump gives other points")
	}
}

func withoutLayer(m map[string]float64) map[string]float64 {
	m = maps.Clone(m)
	delete(m, "layer")
	return m
}

func pointsEqual(a, b sim.Point) bool {
	return a.Series == b.Series && a.X == b.X && a.Y == b.Y && maps.Equal(a.Extra, b.Extra)
}

func readF64(t *testing.T, path string) []float64 {
	t.Helper()
	x, err := tensorfile.ReadFile(path, "", tensorfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f64s(x.Data)
}

func f32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func pyShape(s []int) string {
	var p []string
	for _, d := range s {
		p = append(p, strconv.Itoa(d))
	}
	return "(" + strings.Join(p, ", ") + ",)"
}

// A malformed dump is refused before any layer runs (no point emitted),
// the error naming the file and the fault; the limits are named.
func TestAttentionFileDumpErrors(t *testing.T) {
	ls := makeDump([]int{0, 1, 2}, 1, 100, 2, 1, 64, 0)
	good := func() string {
		dir := t.TempDir()
		writeDumpNPY(t, dir, ls, nil)
		return dir
	}
	noV := good()
	os.Remove(filepath.Join(noV, "layer2_v.npy"))
	badName := good()
	os.WriteFile(filepath.Join(badName, "layer1_q_last.npy"), nil, 0o644)
	st := good()
	os.WriteFile(filepath.Join(st, "x.safetensors"), nil, 0o644)
	k32 := good()
	int32K(t, filepath.Join(k32, "layer2_k.npy"), []int{100, 1, 64})
	dim := good()
	tensorfile.WriteNPY(filepath.Join(dim, "layer1_k.npy"), []int{100, 1, 128}, make([]float32, 100*128))
	nan := good()
	x := slices.Clone(ls[2].v.Data)
	x[5] = float32(math.NaN())
	tensorfile.WriteNPY(filepath.Join(nan, "layer2_v.npy"), ls[2].v.Shape, x)
	empty := t.TempDir()
	stBad := filepath.Join(t.TempDir(), "m.safetensors")
	tensorfile.WriteSafetensors(stBad, map[string]*tensorfile.Tensor{"layer0.q": ls[0].q, "layer0.k": ls[0].k, "layer0.v": ls[0].v, "layer0.o": ls[0].v})
	stMany := filepath.Join(t.TempDir(), "many.safetensors")
	many := map[string]*tensorfile.Tensor{}
	for l := range MaxDumpLayers + 1 {
		many[fmt.Sprintf("layer%d.q", l)] = &tensorfile.Tensor{Shape: []int{0}}
	}
	tensorfile.WriteSafetensors(stMany, many)
	for _, tc := range []struct {
		e     AttentionFile
		files map[string]string
		msg   string
	}{
		{AttentionFile{}, map[string]string{"dump": noV}, "layer 2 has no v (layer2_v.npy)"},
		{AttentionFile{}, map[string]string{"dump": badName}, "layer1_q_last.npy is not a name of the layout"},
		{AttentionFile{}, map[string]string{"dump": st}, "holds x.safetensors: a folder's layers are .npy files"},
		{AttentionFile{}, map[string]string{"dump": k32}, "k file: layer2_k.npy: element type int32 is not accepted here (want float32, float16, bfloat16, float8_e4m3fn, float64)"},
		{AttentionFile{}, map[string]string{"dump": dim}, "q file layer1_q.npy has head dim 64, k file layer1_k.npy 128"},
		{AttentionFile{}, map[string]string{"dump": nan}, "layer 2: v file: layer2_v.npy: element [0 0 5] is NaN"},
		{AttentionFile{}, map[string]string{"dump": empty}, "holds no layer"},
		{AttentionFile{}, map[string]string{"dump": stBad}, `tensor "layer0.o" is not a name of the layout`},
		{AttentionFile{}, map[string]string{"dump": stMany}, "more than 1024 layers (the limit)"},
		{AttentionFile{}, map[string]string{"dump": filepath.Join(noV, "layer0_q.npy")}, "want a folder of layer{L}_{q,k,v}.npy files or a .safetensors file"},
		{AttentionFile{}, map[string]string{"dump": good(), "q": "q.npy"}, "give a dump or q files, not both"},
		{AttentionFile{MaxTotalElements: 1000}, map[string]string{"dump": good()}, "hold 38784 elements over 3 layers, more than 1000 (the limit)"},
		{AttentionFile{MaxElements: 1000}, map[string]string{"dump": good()}, "more than 1000 elements"},
		{AttentionFile{Root: filepath.Dir(noV)}, map[string]string{"dump": "../x"}, "not a name inside the tensors folder"},
	} {
		rec, err := attnFileRun(t, tc.e, tc.files, nil)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: error %v, want %q", tc.files, err, tc.msg)
		}
		if n := len(rec.Points()); n > 0 && !strings.Contains(tc.msg, "NaN") {
			t.Errorf("%v: %d points emitted before the error", tc.files, n)
		}
	}
	// Under a root, a dump folder inside it works and a link in it is refused.
	root := filepath.Dir(good())
	dir := good()
	if _, err := attnFileRun(t, AttentionFile{Root: root}, map[string]string{"dump": filepath.Base(dir)}, nil); err != nil {
		t.Errorf("dump inside the root: %v", err)
	}
	os.Remove(filepath.Join(dir, "layer1_q.npy"))
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "layer1_q.npy")); err == nil {
		if _, err := attnFileRun(t, AttentionFile{Root: root}, map[string]string{"dump": filepath.Base(dir)}, nil); err == nil || !strings.Contains(err.Error(), "links are refused") {
			t.Errorf("link in a dump: %v", err)
		}
	}
}

// int32K writes an int32 .npy of shape (what np.save(np.zeros(shape, np.int32)) writes).
func int32K(t *testing.T, path string, shape []int) {
	t.Helper()
	h := fmt.Sprintf("{'descr': '<i4', 'fortran_order': False, 'shape': %s, }", pyShape(shape))
	h += strings.Repeat(" ", 63-(10+len(h))%64) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	b = append(b, h...)
	b = append(b, make([]byte, 4*elems(shape))...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// splits: the kernel attention-file runs is attention's with Config.Splits
// (bit for bit, every promotion), more splits change a single-level O and
// its error, auto is Plan.AutoSplits for the arch's SMs and batch × KV
// heads, and the notes say which; the GPU path refuses splits it cannot run.
func TestAttentionFileSplits(t *testing.T) {
	const n, qh, kvh, d = 6000, 4, 2, 64
	ls := makeDump([]int{0}, 1, n, qh, kvh, d, 0.5)
	dir := t.TempDir()
	writeDumpNPY(t, dir, ls, nil)
	files := map[string]string{"q": filepath.Join(dir, "layer0_q.npy"), "k": filepath.Join(dir, "layer0_k.npy"), "v": filepath.Join(dir, "layer0_v.npy")}
	in, err := AttentionFile{Files: files}.inputs(mustValues(t, nil), attnLayer{refs: map[string]attnRef{
		"q": {path: files["q"]}, "k": {path: files["k"]}, "v": {path: files["v"]}}})
	if err != nil {
		t.Fatal(err)
	}
	errs := map[string]float64{}
	for _, tc := range []struct {
		args  map[string]string
		want  int // splits; 0: Plan.AutoSplits
		sms   int
		batch int
		note  string
	}{
		{map[string]string{"splits": "1"}, 1, 0, 0, "splits 1 (given)"},
		{map[string]string{"splits": "4"}, 4, 0, 0, "splits 4 (given)"},
		{map[string]string{"splits": "64"}, 64, 0, 0, "splits 64 (given)"},
		{map[string]string{"splits": "auto"}, 0, 132, 1, "(auto: FA3's num_splits heuristic for 132 SMs, H100 SXM5, H200 SXM, bhk = batch 1 × 2 KV heads = 2"},
		{map[string]string{"splits": "auto", "arch": "blackwell", "format": "e4m3"}, 0, 148, 1, "for 148 SMs, B200"},
		{map[string]string{"splits": "auto", "batch": "512"}, 0, 132, 512, "splits 1 (auto"},
	} {
		a := maps.Clone(tc.args)
		a["promotions"] = "0,1,4"
		out := t.TempDir()
		rec, err := attnFileRun(t, AttentionFile{OutDir: out}, files, a)
		if err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		vals := mustValues(t, a)
		spec, cfg, err := attnFileSpec(vals, in)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := attention.QuantizeKV(in.k, in.v, attention.KVShape{Tokens: n, Heads: kvh, KDim: d, VDim: d}, spec)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if want == 0 {
			plan, err := cfg.Plan(1, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			want = plan.AutoSplits(tc.sms, tc.batch*kvh)
		}
		if s := rec.SummaryValues()["splits"]; s != float64(want) {
			t.Errorf("%v: %v splits, want %d", a, s, want)
		}
		if notes := strings.Join(rec.Notes(), "\n"); !strings.Contains(notes, tc.note) || !strings.Contains(notes, fmt.Sprintf("splits %d", want)) {
			t.Errorf("%v: notes\n%s", a, notes)
		}
		cfg.Splits = want
		o, err := attention.RunPromotions(t.Context(), cfg, []int{0, 1, 4}, in.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range []int{0, 1, 4} {
			got := readF64(t, filepath.Join(out, fmt.Sprintf("o_promotion%d.npy", p)))
			if !slices.Equal(got, f64s(f32s(o[i]))) {
				t.Errorf("%v promotion %d: O differs from attention.RunPromotions with %d splits", a, p, want)
			}
		}
		if tc.args["arch"] == "" {
			errs[tc.args["splits"]] = rec.SummaryValues()["relerr_p0"]
		}
	}
	// Split-KV shortens each split's accumulation: at 6000 tokens with a
	// V mean the single-level error falls as the splits grow.
	if !(errs["1"] > errs["4"] && errs["4"] > errs["64"]) {
		t.Errorf("single-level error with 1, 4, 64 splits: %v", errs)
	}
}

func mustValues(t *testing.T, args map[string]string) sim.Values {
	t.Helper()
	v, err := sim.ParseValues(AttentionFile{}.Params(), args)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every point carries relerr (y), α, residual, cosine and the same vs the
// quantized inputs, each declared with its unit; relerr² = (1 − α)² +
// residual² on every point; attnMerge of heads is Compare of their
// concatenation; the chart draws heads as points.
func TestAttentionFileDecomposition(t *testing.T) {
	ls := makeDump([]int{0}, 3, 500, 4, 1, 128, 0.5)
	dir := t.TempDir()
	writeDumpNPY(t, dir, ls, nil)
	rec, err := attnFileRun(t, AttentionFile{}, map[string]string{"dump": dir}, map[string]string{"format": "e5m2", "causal": "true"})
	if err != nil {
		t.Fatal(err)
	}
	ch := AttentionFile{}.Chart()
	declared := map[string]bool{}
	for _, f := range ch.Fields {
		declared[f.Key] = true
	}
	for _, s := range ch.Styles {
		if !s.Points {
			t.Errorf("style %q joins heads with lines", s.Match)
		}
	}
	if err := ch.Check(); err != nil {
		t.Error(err)
	}
	for _, p := range rec.Points() {
		for _, k := range []string{"alpha", "residual", "cosine", "vs_quantized", "alpha_vs_quantized", "residual_vs_quantized", "cosine_vs_quantized", "layer", "head", "splits"} {
			if _, ok := p.Extra[k]; !ok {
				t.Errorf("point %v has no %s", p, k)
			}
		}
		for k := range p.Extra {
			if !declared[k] {
				t.Errorf("extra %q is not a declared field", k)
			}
		}
		a, r := p.Extra["alpha"], p.Extra["residual"]
		if lhs, rhs := p.Y*p.Y, 1e4*(1-a)*(1-a)+r*r; math.Abs(lhs-rhs) > 1e-9*lhs {
			t.Errorf("%v: relerr² %g, (1 − α)² + residual² %g", p, lhs, rhs)
		}
		if !(p.Extra["cosine"] > 0.9 && p.Extra["cosine"] <= 1+1e-12) {
			t.Errorf("%v: cosine", p)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, chunks := range [][]int{{5}, {3, 7, 1}, {100, 100, 100, 2}} {
		var o, ref []float64
		var cs []attnCmp
		for i, c := range chunks {
			co, cr := make([]float64, c), make([]float64, c)
			for j := range co {
				cr[j] = rng.NormFloat64() + 0.3
				co[j] = cr[j]*(0.7+0.1*float64(i)) + 0.05*rng.NormFloat64()
			}
			cs = append(cs, attnCompare(co, cr))
			o, ref = append(o, co...), append(ref, cr...)
		}
		got, want := attnMerge(cs), attention.Compare(o, ref)
		for _, pair := range [][2]float64{{got.RelL2, want.RelL2}, {got.Alpha, want.Alpha}, {got.Residual, want.Residual}, {got.Cosine, want.Cosine}, {got.MaxAbs, want.MaxAbs}} {
			if math.Abs(pair[0]-pair[1]) > 1e-12*math.Abs(pair[1]) {
				t.Errorf("chunks %v: merged %+v, Compare %+v", chunks, got, want)
				break
			}
		}
	}
}

// -o: a missing folder is created; a path that cannot be a folder is
// refused before anything is computed (no point). Every file read is
// recorded with its absolute path and SHA-256.
func TestAttentionFileOutDirAndInputs(t *testing.T) {
	ls := makeDump([]int{0, 1}, 1, 200, 2, 1, 64, 0)
	dir := t.TempDir()
	writeDumpNPY(t, dir, ls, nil)
	files := map[string]string{"q": filepath.Join(dir, "layer0_q.npy"), "k": filepath.Join(dir, "layer0_k.npy"), "v": filepath.Join(dir, "layer0_v.npy")}
	out := filepath.Join(t.TempDir(), "new", "folder")
	rec, err := attnFileRun(t, AttentionFile{OutDir: out}, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"o_exact.npy", "o_promotion0.npy", "o_promotion1.npy", "heads.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("-o: %v", err)
		}
	}
	inputs := map[string]sim.Input{}
	for _, n := range rec.Notes() {
		if in, ok := sim.ParseInputNote(n); ok {
			inputs[in.Path] = in
		}
	}
	for role, p := range files {
		b, _ := os.ReadFile(p)
		sum := sha256.Sum256(b)
		if in := inputs[p]; in.Role != role || in.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: recorded %+v", role, in)
		}
	}
	rec, err = attnFileRun(t, AttentionFile{}, map[string]string{"dump": dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, note := range rec.Notes() {
		if in, ok := sim.ParseInputNote(note); ok && in.Role == "dump" && filepath.Dir(in.Path) == dir {
			n++
		}
	}
	if n != 6 {
		t.Errorf("%d dump files recorded, want 6", n)
	}
	blocked := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocked, nil, 0o644)
	rec, err = attnFileRun(t, AttentionFile{OutDir: filepath.Join(blocked, "sub")}, files, nil)
	if err == nil || !strings.Contains(err.Error(), "nothing was computed") || len(rec.Points()) > 0 {
		t.Errorf("-o under a file: %v, %d points", err, len(rec.Points()))
	}
}

// The cost of a dump covers every layer: the work of three layers is three
// times one layer's (hashing and reading included), the memory one layer's.
func TestAttentionFileDumpCost(t *testing.T) {
	ls := makeDump([]int{0, 1, 2}, 1, 300, 4, 2, 64, 0)
	dir := t.TempDir()
	writeDumpNPY(t, dir, ls, nil)
	v := mustValues(t, nil)
	all := AttentionFile{Files: map[string]string{"dump": dir}}.Cost(v)
	one := AttentionFile{Files: map[string]string{"q": filepath.Join(dir, "layer0_q.npy"), "k": filepath.Join(dir, "layer0_k.npy"), "v": filepath.Join(dir, "layer0_v.npy")}}.Cost(v)
	if all.Work != 3*one.Work || all.Memory != one.Memory {
		t.Errorf("three layers %v, one %v", all, one)
	}
	if one.Work < 4*300*64*(2*costKernel+2*costRef) {
		t.Errorf("one layer's work %d is below its kernels'", one.Work)
	}
}

// tools/dump_qkv.py: its unit tests (each reported as a subtest: a test
// Python skipped, the capture through a real model when torch and
// transformers are missing, is skipped here too, with Python's reason),
// and a dump its Recorder and DumpWriter write from transformers-layout
// arrays ([1, heads, tokens, d]) is what attention-file reads: every
// value in place in layout thd, the positions of the rows chosen, and a
// run of the command the script prints.
func TestDumpQKVTool(t *testing.T) {
	py := numpyPython(t)
	cmd := exec.Command(py, "-m", "unittest", "-v", "test_dump_qkv")
	cmd.Dir = filepath.Join("..", "tools")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in the tree
	out, err := cmd.CombinedOutput()
	results := regexp.MustCompile(`(?m)^(test_\w+) \(test_dump_qkv\.(\w+)\.\w+\) \.\.\. (ok|skipped '(.*)'|FAIL|ERROR)`).FindAllStringSubmatch(string(out), -1)
	if err != nil || len(results) < 9 {
		t.Fatalf("python -m unittest test_dump_qkv: %v\n%s", err, out)
	}
	for _, r := range results {
		t.Run(r[2]+"/"+r[1], func(t *testing.T) {
			switch {
			case strings.HasPrefix(r[3], "skipped"):
				t.Skip("skipped by Python: " + r[4])
			case r[3] != "ok":
				t.Errorf("%s\n%s", r[3], out)
			}
		})
	}
	dir := t.TempDir()
	script := `
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, dump_qkv
def fake(layer, heads, tokens, d, salt):
    h, t, i = np.meshgrid(np.arange(heads), np.arange(tokens), np.arange(d), indexing="ij")
    return ((((layer * 8 + h) * 1024 + t) * 4 + (i % 4) + salt / 8) / 4096).astype(np.float32)[None]
w = dump_qkv.DumpWriter(sys.argv[2])
rec = dump_qkv.Recorder([0, 1, 3], "last:2", w)
for l in range(4):
    rec(l, fake(l, 4, 300, 64, 0), fake(l, 2, 300, 64, 1), fake(l, 2, 300, 64, 2), scaling=0.125)
print(w.finish(rec.rows, dict(rec.info(), model="fake")))
`
	pc := exec.Command(py, "-c", script, filepath.Join("..", "tools"), dir)
	pc.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	o, err := pc.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, o)
	}
	printed := strings.Fields(strings.TrimSpace(string(o)))
	if strings.Join(printed, " ") != "lab run attention-file -dump "+dir+" -causal" {
		t.Fatalf("printed %q", o)
	}
	fake := func(layer, h, tok, i, salt int) float32 {
		return float32((float64(((layer*8+h)*1024+tok)*4+i%4) + float64(salt)/8) / 4096)
	}
	for _, l := range []int{0, 1, 3} {
		for r, salt := range map[string]int{"q": 0, "k": 1, "v": 2} {
			x, err := tensorfile.ReadFile(filepath.Join(dir, fmt.Sprintf("layer%d_%s.npy", l, r)), "", tensorfile.Options{})
			if err != nil {
				t.Fatal(err)
			}
			heads, first := 2, 0
			if r == "q" {
				heads, first = 4, 298
			}
			if x.Shape[1] != heads || x.Shape[2] != 64 {
				t.Fatalf("layer %d %s: shape %v", l, r, x.Shape)
			}
			for tok := 0; tok < x.Shape[0]; tok++ {
				for h := 0; h < heads; h++ {
					for i := 0; i < 64; i++ {
						if got, want := x.Data[(tok*heads+h)*64+i], fake(l, h, first+tok, i, salt); got != want {
							t.Fatalf("layer %d %s[%d, %d, %d] = %g, want %g", l, r, tok, h, i, got, want)
						}
					}
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "layer2_q.npy")); err == nil {
		t.Error("layer 2 was dumped, not asked")
	}
	rec, err := attnFileRun(t, AttentionFile{}, map[string]string{"dump": dir}, map[string]string{"causal": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if s := rec.SummaryValues(); s["layers"] != 3 || s["query_tokens"] != 2 || s["heads"] != 12 || len(rec.Points()) != 24 {
		t.Errorf("summary %v, %d points", s, len(rec.Points()))
	}
}

// FuzzAttentionFileDumpNames: whatever tensor names a .safetensors dump
// holds, reading its layout returns layers each with q, k and v, or an
// error naming the dump; it never panics.
func FuzzAttentionFileDumpNames(f *testing.F) {
	f.Add("layer0.q\nlayer0.k\nlayer0.v\npositions")
	f.Add("layer01.q\nlayer1.k")
	f.Add("layer999999.q\nlayer-1.v\n__metadata__")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, names string) {
		ts := map[string]*tensorfile.Tensor{}
		for _, n := range strings.Split(names, "\n") {
			if n != "" && n != "__metadata__" && len(ts) < 64 {
				ts[n] = &tensorfile.Tensor{Shape: []int{1}, Data: []float32{1}}
			}
		}
		p := filepath.Join(dir, "fuzz.safetensors")
		if err := tensorfile.WriteSafetensors(p, ts); err != nil {
			return
		}
		layers, _, err := AttentionFile{Files: map[string]string{"dump": p}}.layers()
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.safetensors") {
				t.Fatalf("error does not name the dump: %v", err)
			}
			return
		}
		for _, l := range layers {
			for _, r := range []string{"q", "k", "v"} {
				if _, ok := l.refs[r]; !ok {
					t.Fatalf("layer %d has no %s", l.index, r)
				}
			}
		}
	})
}
