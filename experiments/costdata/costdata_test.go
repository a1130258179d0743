package costdata

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// synthHeader is the head of the small SYNTHETIC documents of these tests
// (not measurements).
const synthHeader = `{"schema": "fp8lab-kernel-costs/1", "provenance": {"gpu": "SYNTHETIC (tests only)"}, "rows": [`

func synthDoc(rows ...string) []byte { return []byte(synthHeader + strings.Join(rows, ",") + "]}") }

func TestParseErrors(t *testing.T) {
	good := `{"op": "decode", "impl": "triton-splitkv", "kv": "bf16", "batch": 1, "context": 1024, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "us": 10}`
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"not json", `{"schema": `, "synthetic.json: unexpected EOF"},
		{"schema", `{"schema": "other/2", "rows": [` + good + `]}`, `synthetic.json: field "schema": "other/2"`},
		{"no rows", synthHeader + `]}`, `field "rows": no rows`},
		{"unknown op", string(synthDoc(good, `{"op": "decod", "us": 1}`)), `synthetic.json: rows[1] (op "decod"): field "op": unknown op`},
		{"zero context", string(synthDoc(strings.Replace(good, `"context": 1024`, `"context": 0`, 1))), `rows[0] (op "decode"): field "context": 0`},
		{"kv", string(synthDoc(strings.Replace(good, `"bf16"`, `"fp4"`, 1))), `rows[0] (op "decode"): field "kv": "fp4"`},
		{"impl", string(synthDoc(strings.Replace(good, `triton-splitkv`, `cuda`, 1))), `field "impl": "cuda"`},
		{"negative us", string(synthDoc(strings.Replace(good, `"us": 10`, `"us": -1`, 1))), `field "us": -1`},
		{"q1 above median", string(synthDoc(strings.Replace(good, `"us": 10`, `"us": 10, "us_q1": 11`, 1))), `field "us_q1": 11`},
		{"q3 below median", string(synthDoc(strings.Replace(good, `"us": 10`, `"us": 10, "us_q3": 9`, 1))), `field "us_q3": 9`},
		{"stream without bytes", string(synthDoc(`{"op": "stream", "us": 3}`)), `rows[0] (op "stream"): field "bytes"`},
		{"q_quant of bf16", string(synthDoc(`{"op": "q_quant", "kv": "bf16", "batch": 1, "q_heads": 32, "head_dim": 128, "us": 3}`)), `field "kv": "bf16"`},
		{"wrong type", string(synthDoc(`{"op": "launch", "impl": "graph", "us": "fast"}`)), `synthetic.json: rows[0]: json: cannot unmarshal string`},
		{"registers", string(synthDoc(`{"op": "prefill", "impl": "sdpa", "context": 4096, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "registers": -5, "us": 3}`)), `"registers"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("synthetic.json", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	f, err := Parse("synthetic.json", synthDoc(good, `{"op": "prefill", "impl": "sdpa", "context": 4096, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "us": 3, "extra_field": [1, 2]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rows) != 2 || f.Rows[1].Registers != -1 || f.Rows[1].Spills != -1 || f.Rows[0].US != 10 {
		t.Errorf("rows %+v: want 2, unknown registers and spills -1", f.Rows)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(synthDoc(`{"op": "decode", "impl": "triton-splitkv", "kv": "bf16", "batch": 1, "context": 1024, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "us": 10}`))
	f.Add(synthDoc(`{"op": "stream", "bytes": 1e9, "us": 500}`, `{"op": "launch", "impl": "graph", "us": 2.5}`))
	f.Add([]byte(`{"schema": "fp8lab-kernel-costs/1", "rows": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		if len(file.Rows) == 0 {
			t.Fatal("parsed without rows")
		}
		for i, r := range file.Rows {
			if !(r.US > 0) || math.IsInf(r.US, 0) {
				t.Fatalf("rows[%d]: us %v accepted", i, r.US)
			}
		}
	})
}

func TestCurveAt(t *testing.T) {
	c := newCurve([]float64{4, 1, 2, 2}, []float64{40, 10, 25, 20}) // x = 2 twice: the least
	for _, tc := range []struct{ x, want float64 }{
		{0.5, 10}, // held below the first point
		{1, 10}, {1.5, 15}, {2, 20}, {3, 30}, {4, 40},
		{6, 60}, // the line through the last two
	} {
		if got := c.At(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("At(%g) = %g, want %g", tc.x, got, tc.want)
		}
	}
	if got := c.Intercept(); got != 0 {
		t.Errorf("intercept %g, want 0 (10 at 1, 20 at 2)", got)
	}
	if got := newCurve([]float64{1, 2}, []float64{10, 12}).Intercept(); got != 8 {
		t.Errorf("intercept %g, want 8", got)
	}
	// Beyond the last point, a falling pair does not make the time fall.
	if got := newCurve([]float64{1, 2}, []float64{10, 9}).At(10); got != 9 {
		t.Errorf("extrapolated %g, want held at 9", got)
	}
}

func TestLookups(t *testing.T) {
	var rows []string
	add := func(s string) { rows = append(rows, s) }
	for _, b := range []string{"1", "8"} {
		for _, c := range []string{"1024", "2048"} {
			us := map[string]float64{"1/1024": 10, "1/2048": 12, "8/1024": 20, "8/2048": 30}[b+"/"+c]
			add(`{"op": "decode", "impl": "triton-splitkv", "kv": "fp8-tensor", "batch": ` + b + `, "context": ` + c + `, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "us": ` + ftoa(us) + `}`)
		}
	}
	add(`{"op": "stream", "bytes": 1e9, "us": 500}`)
	add(`{"op": "launch", "impl": "graph", "us": 2.5}`)
	add(`{"op": "launch", "impl": "graph", "us": 2.0}`)
	add(`{"op": "prefill", "impl": "sdpa", "context": 1000, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "us": 100, "registers": 200, "spills": 0}`)
	add(`{"op": "prefill", "impl": "sdpa", "context": 2000, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "us": 400, "registers": 255, "spills": 12}`)
	f, err := Parse("synthetic.json", synthDoc(rows...))
	if err != nil {
		t.Fatal(err)
	}
	s := Shape{32, 8, 128}
	for _, tc := range []struct {
		batch int
		ctx   float64
		want  float64
	}{
		{1, 1536, 11}, {8, 1536, 25}, {8, 3072, 40}, {4, 1024, 0}, // between batches 1 and 8
	} {
		got, err := f.Decode(s, "fp8-tensor", "triton-splitkv", tc.batch, tc.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if tc.batch == 4 {
			want = 10 + (20-10)*3.0/7
		}
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("Decode(batch %d, %g) = %g, want %g", tc.batch, tc.ctx, got, want)
		}
	}
	// A batch of one context has no slope: left out, not an error.
	g, err := Parse("synthetic.json", synthDoc(append(rows, `{"op": "decode", "impl": "triton-splitkv", "kv": "fp8-tensor", "batch": 32, "context": 1024, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "us": 99}`)...))
	if err != nil {
		t.Fatal(err)
	}
	if bs, _, err := g.DecodeCurves(s, "fp8-tensor", "triton-splitkv"); err != nil || len(bs) != 2 {
		t.Errorf("batches %v, %v: want 1 and 8 (32 has one context)", bs, err)
	}
	if _, err := f.Decode(s, "bf16", "triton-splitkv", 1, 1024); err == nil || !strings.Contains(err.Error(), "synthetic.json: no decode rows") {
		t.Errorf("missing format: %v", err)
	}
	if bw, err := f.StreamBandwidth(); err != nil || bw != 2e12 {
		t.Errorf("stream bandwidth %g, %v; want 2e12 (1e9 B moved in 500 µs)", bw, err)
	}
	if us, err := f.Launch("graph"); err != nil || us != 2 {
		t.Errorf("launch %g, %v; want the least, 2", us, err)
	}
	if _, err := f.Launch("eager"); err == nil {
		t.Error("no eager row: want an error")
	}
	c, reg, sp, err := f.PrefillCurve(s, "sdpa")
	if err != nil || reg != 255 || sp != 12 {
		t.Fatalf("prefill: %v, registers %d spills %d", err, reg, sp)
	}
	// a + b·context²: 100 at 1000, 400 at 2000, so 225 at 1500.
	if got := c.At(1500 * 1500 / 2); math.Abs(got-225) > 1e-9 {
		t.Errorf("prefill at 1500 = %g, want 225 (quadratic in the context)", got)
	}
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func TestEmbedded(t *testing.T) {
	f, err := Embedded()
	if errors.Is(err, ErrNoMeasuredCosts) {
		if !strings.Contains(err.Error(), "no measured costs") {
			t.Errorf("error %q does not say so", err)
		}
		t.Logf("this build has no measured costs: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if f.Provenance.GPU == "" || f.Provenance.Date == "" || f.Provenance.Commit == "" {
		t.Errorf("provenance incomplete: %+v", f.Provenance)
	}
	if strings.Contains(strings.ToLower(f.Provenance.GPU), "synthetic") {
		t.Errorf("the embedded file is synthetic (%q): ship measured costs only", f.Provenance.GPU)
	}
}

// FuzzCurveAt: a curve through points whose y does not fall with x never
// falls (inside, below and beyond the points), and passes through them.
func FuzzCurveAt(f *testing.F) {
	f.Add(1.0, 2.0, 5.0, 10.0, 12.0, 30.0, 0.5, 7.0)
	f.Add(1024.0, 2048.0, 4096.0, 3.0, 3.0, 3.5, 100.0, 1e6)
	f.Fuzz(func(t *testing.T, x0, x1, x2, y0, y1, y2, a, b float64) {
		for _, v := range []float64{x0, x1, x2, y0, y1, y2, a, b} {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e12 {
				return
			}
		}
		if !(x0 < x1 && x1 < x2) || !(y0 <= y1 && y1 <= y2) {
			return
		}
		c := newCurve([]float64{x2, x0, x1}, []float64{y2, y0, y1})
		for i, x := range []float64{x0, x1, x2} {
			if got := c.At(x); got != []float64{y0, y1, y2}[i] {
				t.Fatalf("At(%g) = %g, want the measured %g", x, got, []float64{y0, y1, y2}[i])
			}
		}
		lo, hi := min(a, b), max(a, b)
		if ya, yb := c.At(lo), c.At(hi); ya > yb*(1+1e-12)+1e-300 && ya-yb > 1e-9*math.Abs(yb) {
			t.Fatalf("At(%g) = %g > At(%g) = %g on a non-falling curve", lo, ya, hi, yb)
		}
	})
}

// TestDecodeImpl: BF16 reads the split-KV kernel; an FP8 cache the faster
// of the two split-KV kernels at the longest context both measured.
func TestDecodeImpl(t *testing.T) {
	row := func(impl string, ctx int, us float64) Row {
		return Row{Op: "decode", Impl: impl, KV: KVFP8Tensor, Batch: 1, Context: ctx, QHeads: 32, KVHeads: 8, HeadDim: 128, US: us}
	}
	s := Shape{QHeads: 32, KVHeads: 8, HeadDim: 128}
	for _, tc := range []struct {
		name string
		rows []Row
		want string
	}{
		{"only split-KV", []Row{row(ImplSplitKV, 1024, 10)}, ImplSplitKV},
		{"only dequant", []Row{row(ImplSplitKVDequant, 1024, 10)}, ImplSplitKVDequant},
		{"dequant faster at the longest", []Row{row(ImplSplitKV, 1024, 5), row(ImplSplitKV, 8192, 40), row(ImplSplitKVDequant, 1024, 9), row(ImplSplitKVDequant, 8192, 30)}, ImplSplitKVDequant},
		{"split-KV faster at the longest", []Row{row(ImplSplitKV, 8192, 20), row(ImplSplitKVDequant, 8192, 30), row(ImplSplitKVDequant, 65536, 1)}, ImplSplitKV},
	} {
		f := &File{Rows: tc.rows}
		if got := f.DecodeImpl(s, KVFP8Tensor); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if got := f.DecodeImpl(s, KVBF16); got != ImplSplitKV {
			t.Errorf("%s: bf16 reads %s", tc.name, got)
		}
	}
}
