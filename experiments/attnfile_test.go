package experiments

import (
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// numpyPython returns a Python interpreter with NumPy (Debian's
// python3-numpy, which make test-deps installs), or skips the test saying
// why.
func numpyPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import numpy").Run() == nil {
			return p
		}
	}
	t.Skip("no python3 with NumPy (apt-get install python3-numpy; make test-deps does)")
	return ""
}

// attnInputsPy is ../shared/golden/h200/capture/attn_inputs.py's make(),
// the generator of the H200 attention inputs, followed by np.save of Q, K,
// V in both layouts.
const attnInputsPy = `
import sys
import numpy as np
D, M = 128, 64
def _uniform(bg, n):
    return (bg.random_raw(n) >> np.uint64(11)).astype(np.float64) * 2.0**-53
def _normal(bg, shape):
    n = int(np.prod(shape))
    u = _uniform(bg, 4 * n).reshape(4, n)
    x = (((u[0] + u[1]) + u[2]) + u[3]) - 2.0
    return (x * 1.7320508075688772).reshape(shape)
def make(N, seed=20261129, alpha=0.9, mu=0.5, sigma_k=1.0):
    bg = np.random.PCG64(seed + N)
    Q = _normal(bg, (M, D))
    K = _normal(bg, (N, D)) * sigma_k
    V = _normal(bg, (N, D)) + mu
    pos = (bg.random_raw(M) % np.uint64(N)).astype(np.int64)
    signs = np.where((bg.random_raw(M * D) & np.uint64(1)).reshape(M, D) == 1, 2.0, -2.0)
    for r in range(M):
        K[pos[r]] = Q[r] * alpha
        V[pos[r]] = signs[r]
    return Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32)
out, N = sys.argv[1], int(sys.argv[2])
Q, K, V = make(N)
for name, x in (("q", Q), ("k", K), ("v", V)):
    np.save(f"{out}/{name}.npy", x)                                   # [tokens, dim]: one head
    np.save(f"{out}/{name}_htd.npy", x[None, :, :])                   # [heads, tokens, dim]
    np.save(f"{out}/{name}_f16.npy", x.astype(np.float16)[:, None, :])  # [tokens, heads, dim]
`

// The H200 attention inputs written by NumPy's np.save and read back by
// attention-file give exactly the outputs of h200-attention (bit for bit),
// in either layout, and so lie within 1e-5 of the H200's own O.
func TestAttentionFileH200Inputs(t *testing.T) {
	py := numpyPython(t)
	dir := t.TempDir()
	if out, err := exec.Command(py, "-c", attnInputsPy, dir, "4096").CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	simDir := t.TempDir()
	if _, err := attnExec(t, H200Attention{OutDir: simDir}, 1, map[string]string{"N": "4096", "blockN": "128", "modes": "0,1,4"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		layout, suffix, format string
		promotions             []int
		keys                   []string
	}{
		{"thd", "", "e4m3", []int{0, 1, 4}, []string{"fp8_bn128_mode0", "fp8_bn128_mode1", "fp8_bn128_mode4"}},
		{"htd", "_htd", "e4m3", []int{0}, []string{"fp8_bn128_mode0"}},
		{"thd", "", "bf16", []int{0}, []string{"bf16_bn128_mode0"}},
	} {
		out := t.TempDir()
		files := map[string]string{}
		for _, r := range []string{"q", "k", "v"} {
			files[r] = filepath.Join(dir, r+tc.suffix+".npy")
		}
		e, err := AttentionFile{OutDir: out}.WithFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		var ps []string
		for _, p := range tc.promotions {
			ps = append(ps, strconv.Itoa(p))
		}
		prom := strings.Join(ps, ",")
		rec, err := attnExec(t, e, 1, map[string]string{"layout": tc.layout, "format": tc.format, "saturation": "nosat",
			"k-block-m": "64", "k-block-n": "128", "promotions": prom})
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Points()) != len(tc.promotions) { // one query head
			t.Errorf("%d points", len(rec.Points()))
		}
		for i, p := range tc.promotions {
			got, err := tensorfile.ReadFile(filepath.Join(out, "o_promotion"+strconv.Itoa(p)+".npy"), "", tensorfile.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := attnReadF32(filepath.Join(simDir, "N4096_"+tc.keys[i]+".f32"), 64*128)
			if err != nil {
				t.Fatal(err)
			}
			for j := range want {
				if math.Float32bits(got.Data[j]) != math.Float32bits(want[j]) {
					t.Fatalf("%s %s promotion %d: O[%d] = %g, h200-attention gives %g", tc.layout, tc.format, p, j, got.Data[j], want[j])
				}
			}
			if hw, err := attnReadF32(filepath.Join("..", "testdata", "h200-attention", "N4096_"+tc.keys[i]+".f32"), 64*128); err == nil {
				if d := attention.Compare(f64s(got.Data), f64s(hw)).RelL2; !(d < 1e-5) {
					t.Errorf("%s: O differs from the H200's by %g", tc.keys[i], d)
				}
			}
		}
	}
}

// Bad files and mismatched tensors give errors naming the file and the
// fault; a name leaving the tensors folder is refused.
func TestAttentionFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, shape []int, fill func(i int) float32) string {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = fill(i)
		}
		p := filepath.Join(dir, name)
		if err := tensorfile.WriteNPY(p, shape, x); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ones := func(int) float32 { return 1 }
	q := write("q.npy", []int{1, 2, 64}, ones)
	k := write("k.npy", []int{100, 1, 64}, ones)
	v := write("v.npy", []int{100, 1, 64}, ones)
	nan := write("knan.npy", []int{100, 1, 64}, func(i int) float32 {
		if i == 70 {
			return float32(math.NaN())
		}
		return 1
	})
	k128 := write("k128.npy", []int{100, 1, 128}, ones)
	v3 := write("v3.npy", []int{100, 3, 64}, ones)
	k32 := filepath.Join(dir, "k32.npy")
	int32K(t, k32, []int{100, 1, 64})
	trunc := filepath.Join(dir, "trunc.npy")
	b, _ := os.ReadFile(k)
	os.WriteFile(trunc, b[:len(b)-10], 0o644)
	for _, tc := range []struct {
		e    AttentionFile
		args map[string]string
		msg  string
	}{
		{AttentionFile{Files: map[string]string{"q": q, "k": nan, "v": v}}, nil, "k file: knan.npy: element [1 0 6] is NaN"},
		{AttentionFile{Files: map[string]string{"q": q, "k": k128, "v": v}}, nil, "head dim 64, k file k128.npy 128"},
		{AttentionFile{Files: map[string]string{"q": q, "k": k, "v": v3}}, nil, "v file v3.npy has 100 tokens × 3 heads"},
		{AttentionFile{Files: map[string]string{"q": q, "k": trunc, "v": v}}, nil, "k file: trunc.npy: truncated"},
		{AttentionFile{Files: map[string]string{"q": q, "k": k32, "v": v}}, nil, "k file: k32.npy: element type int32 is not accepted here (want float32, float16, bfloat16, float8_e4m3fn, float64)"},
		{AttentionFile{Files: map[string]string{"q": q, "k": k}}, nil, "no v file"},
		{AttentionFile{Files: map[string]string{"q": "../q.npy", "k": "k.npy", "v": "v.npy"}, Root: dir}, nil, "not a name inside the tensors folder"},
		{AttentionFile{Files: map[string]string{"q": "/etc/passwd", "k": "k.npy", "v": "v.npy"}, Root: dir}, nil, "not a name inside the tensors folder"},
		{AttentionFile{Files: map[string]string{"q": q, "k": k, "v": v}, MaxElements: 1000}, nil, "more than 1000"},
		{AttentionFile{Files: map[string]string{"q": q, "k": k, "v": v}}, map[string]string{"format": "nvfp4"}, "dequantizing path"},
		{AttentionFile{Files: map[string]string{"q": q, "k": k, "v": v}}, map[string]string{"arch": "blackwell", "path": "dequant-bf16"}, "no blackwell model reads bf16"},
	} {
		args := tc.args
		if args == nil {
			args = map[string]string{}
		}
		_, err := attnExec(t, tc.e, 1, args)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v %v: error %v, want %q", tc.e.Files, args, err, tc.msg)
		}
	}
	// Relative names inside the folder work, with GQA (2 query heads, 1 KV head).
	rec, err := attnExec(t, AttentionFile{Files: map[string]string{"q": "q.npy", "k": "k.npy", "v": "v.npy"}, Root: dir}, 1,
		map[string]string{"format": "nvfp4", "path": "dequant-e4m3", "arch": "blackwell", "scale": "amax"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Points()) != 4 { // 2 heads × promotions 0, 1
		t.Errorf("%d points", len(rec.Points()))
	}
	if _, err := (AttentionFile{}).WithFiles(map[string]string{"x": "a"}); err == nil {
		t.Error("unknown role accepted")
	}
}

// attention-file with device gpu gives the CPU's O bit for bit (a decode
// with GQA over a cache in several KV formats and paths, every promotion,
// one split and several),
// and names what it does not run.
func TestAttentionFileGPUEqualsCPU(t *testing.T) {
	gpuTestGPU(t)
	dir := t.TempDir()
	const n, kvh, qh, d = 300, 2, 4, 64
	rng := rand.New(rand.NewPCG(3, 4))
	draw := func(count int, mean float64) []float32 {
		x := make([]float32, count)
		for i := range x {
			x[i] = float32(mean + rng.NormFloat64())
		}
		return x
	}
	write := func(name string, shape []int, x []float32) string {
		p := filepath.Join(dir, name)
		if err := tensorfile.WriteNPY(p, shape, x); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := map[string]string{
		"q": write("q.npy", []int{1, qh, d}, draw(qh*d, 0)),
		"k": write("k.npy", []int{n, kvh, d}, draw(n*kvh*d, 0)),
		"v": write("v.npy", []int{n, kvh, d}, draw(n*kvh*d, 0.5)),
	}
	for _, args := range []map[string]string{
		{"format": "e4m3"},
		{"format": "e4m3", "k-scales": "head", "v-scales": "head", "scale": "amax", "window": "200"},
		{"format": "nvfp4", "scale": "amax", "path": "dequant-e4m3"},
		{"format": "mxfp8", "path": "dequant-e4m3", "arch": "blackwell", "k-block-n": "64"},
		{"format": "e5m2", "causal": "true"},
		{"format": "e4m3", "splits": "3"},
		{"format": "bf16", "splits": "auto", "batch": "1"},
	} {
		args["promotions"] = "0,1,4"
		var outs [2]string
		for i, dev := range []string{"cpu", "gpu"} {
			outs[i] = t.TempDir()
			e, err := AttentionFile{OutDir: outs[i]}.WithFiles(files)
			if err != nil {
				t.Fatal(err)
			}
			a := maps.Clone(args)
			a["device"] = dev
			if _, err := attnExec(t, e, 1, a); err != nil {
				t.Fatalf("%v: %v", a, err)
			}
		}
		for _, p := range []string{"0", "1", "4"} {
			var o [2]*tensorfile.Tensor
			for i := range o {
				var err error
				if o[i], err = tensorfile.ReadFile(filepath.Join(outs[i], "o_promotion"+p+".npy"), "", tensorfile.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			if len(o[0].Data) != qh*d || !slices.EqualFunc(o[0].Data, o[1].Data, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				t.Errorf("%v promotion %s: gpu O differs from cpu O", args, p)
			}
		}
	}
	two := map[string]string{"q": write("q2.npy", []int{2, qh, d}, draw(2*qh*d, 0)), "k": files["k"], "v": files["v"]}
	for _, c := range []struct {
		files map[string]string
		args  map[string]string
		want  string
	}{
		{two, map[string]string{"device": "gpu"}, "one query token"},
		{files, map[string]string{"device": "gpu", "format": "mxfp4", "path": "dequant-bf16", "k-block-n": "48"}, "SimDecode"},
	} {
		e, err := AttentionFile{}.WithFiles(c.files)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := attnExec(t, e, 1, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
