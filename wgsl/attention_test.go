package wgsl

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

func randNormal(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// TestDecodeAttentionAccuracy compares the native decode kernel with a
// float64 attention over the same FP16 / e4m3 cache values, for every
// arithmetic of DecodeMaths (all f32: the same bound).
func TestDecodeAttentionAccuracy(t *testing.T) {
	r := testGPU(t)
	for _, math := range DecodeMaths {
		t.Run(math, func(t *testing.T) { testDecodeAccuracy(t, r, math) })
	}
}

func testDecodeAccuracy(t *testing.T, r *Runner, mathName string) {
	for _, tc := range []DecodeConfig{
		{Batch: 2, KVHeads: 2, QHeads: 8, HeadDim: 128, Context: 1, KV: KVFP16},
		{Batch: 2, KVHeads: 2, QHeads: 8, HeadDim: 128, Context: 100, KV: KVFP16},
		{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 1500, KV: KVFP16},
		{Batch: 3, KVHeads: 1, QHeads: 1, HeadDim: 128, Context: 513, KV: KVE4M3, KScale: 0.01, VScale: 0.02},
		{Batch: 1, KVHeads: 2, QHeads: 16, HeadDim: 128, Context: 2100, KV: KVE4M3, KScale: 0.0125, VScale: 0.0125},
		// scales this large put many values in e4m3's subnormal range
		{Batch: 1, KVHeads: 1, QHeads: 2, HeadDim: 128, Context: 300, KV: KVE4M3, KScale: 8, VScale: 16},
	} {
		tc.Math = mathName
		rng := rand.New(rand.NewPCG(uint64(tc.Context), map[KVFormat]uint64{KVE4M3: 1}[tc.KV])) // the seeds of the kernel's own format numbers (fp16 0, e4m3 1)
		nkv := tc.Batch * tc.KVHeads * tc.Context * tc.HeadDim
		q := randNormal(rng, tc.Batch*tc.QHeads*tc.HeadDim, 1)
		k, v := randNormal(rng, nkv, 1), randNormal(rng, nkv, 1)
		got, err := r.DecodeAttention(context.Background(), tc, q, k, v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeReference(tc, q, k, v)
		if err != nil {
			t.Fatal(err)
		}
		var num, den, maxAbs float64
		for i := range want {
			d := float64(got[i]) - want[i]
			num += d * d
			den += want[i] * want[i]
			maxAbs = max(maxAbs, math.Abs(d))
		}
		rel := math.Sqrt(num / den)
		t.Logf("%s %s B=%d Hkv=%d Hq=%d L=%d: relative L2 error %.2e, max abs %.2e", tc.Math, tc.KV, tc.Batch, tc.KVHeads, tc.QHeads, tc.Context, rel, maxAbs)
		if !(rel < 1e-5) {
			t.Errorf("%+v: relative error %g against float64", tc, rel)
		}
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	for _, c := range []DecodeConfig{
		{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 64, Context: 10},
		{Batch: 1, KVHeads: 8, QHeads: 12, HeadDim: 128, Context: 10},
		{Batch: 1, KVHeads: 1, QHeads: 16, HeadDim: 128, Context: 10},
		{Batch: 0, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 10},
		{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 10, Math: MathF16},
		{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 10, Math: "f64"},
		{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 10, KV: KVE4M3 + 1}, // e5m2: the kernel reads fp16 and e4m3 only
	} {
		if err := c.check(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func TestBenchDecodeRuns(t *testing.T) {
	r := testGPU(t)
	for _, kv := range []KVFormat{KVFP16, KVE4M3} {
		b, err := r.BenchDecode(context.Background(), DecodeConfig{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 4096, KV: kv, Math: MathF32QReg}, 3)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s L=4096: %v (%s, %d steps a submission), %.2f GB/s", kv, b.Config.Math, b.Time, b.Source, b.Steps, b.Bandwidth/1e9)
		if b.Time <= 0 || b.Bytes != 2*8*4096*128*int64(kv.CodeBytes()) || b.Steps < 1 || b.Steps > decodeBenchMaxSteps {
			t.Errorf("implausible bench %+v", b)
		}
	}
}

func TestDecodePlan(t *testing.T) {
	c := DecodeConfig{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 5000}
	for _, tc := range []struct {
		q     int
		limit uint32
		want  int
	}{{32, 32768, 1024}, {32, 16384, 512}, {64, 32768, 512}, {64, 16384, 256}, {32, 4096, 0}} {
		c.QHeads = tc.q
		p, err := c.plan(tc.limit, false)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("G=%d limit %d: no error", tc.q/8, tc.limit)
			}
			continue
		}
		if err != nil || p.T != tc.want {
			t.Errorf("G=%d limit %d: T=%d (%v), want %d", tc.q/8, tc.limit, p.T, err, tc.want)
		}
	}
}

// decodeTunes are the shapes TestDecodeTunes checks and TestDecodeSweep
// times: the defaults first, then the alternatives.
var decodeTunes = []struct {
	name string
	kv   KVFormat
	tune decodeTune
}{
	{"fp16 default", KVFP16, defaultTune(KVFP16, true)},
	{"e4m3 default", KVE4M3, defaultTune(KVE4M3, true)},
	{"fp16 cpu default", KVFP16, defaultTune(KVFP16, false)},
	{"e4m3 cpu default", KVE4M3, defaultTune(KVE4M3, false)},
	{"fp16 serial (old)", KVFP16, decodeTune{ntok: 1, u: 8, serial: true}},
	{"e4m3 old", KVE4M3, decodeTune{ntok: 1, u: 8, oldConv: true, serial: true}},
	{"e4m3 conv", KVE4M3, decodeTune{ntok: 1, u: 8, serial: true}},
	{"e4m3 conv tree", KVE4M3, decodeTune{ntok: 1, u: 8}},
	{"e4m3 conv tree ntok2", KVE4M3, decodeTune{ntok: 2, u: 8}},
	{"e4m3 conv tree wideV", KVE4M3, decodeTune{ntok: 1, u: 8, wideV: true}},
	{"e4m3 conv tree u16", KVE4M3, decodeTune{ntok: 1, u: 16}},
	{"e4m3 ntok2 u16", KVE4M3, decodeTune{ntok: 2, u: 16}},
	{"e4m3 ntok2 wideV u4", KVE4M3, decodeTune{ntok: 2, u: 4, wideV: true}},
	{"e4m3 ntok2 wideV u8 serial", KVE4M3, decodeTune{ntok: 2, u: 8, wideV: true, serial: true}},
	{"e4m3 ntok1 wideV u4", KVE4M3, decodeTune{ntok: 1, u: 4, wideV: true}},
	{"fp16 u4", KVFP16, decodeTune{ntok: 1, u: 4}},
	{"fp16 ntok2", KVFP16, decodeTune{ntok: 2, u: 8}},
}

// TestDecodeTunes checks every shape of decodeTunes against the float64
// reference.
func TestDecodeTunes(t *testing.T) {
	r := testGPU(t)
	for _, dt := range decodeTunes {
		if f := os.Getenv("TUNE"); f != "" && f != dt.name {
			continue
		}
		for _, c := range []DecodeConfig{
			{Batch: 2, KVHeads: 1, QHeads: 4, HeadDim: 128, Context: 700},
			{Batch: 1, KVHeads: 1, QHeads: 8, HeadDim: 128, Context: 1100},
			{Batch: 1, KVHeads: 2, QHeads: 2, HeadDim: 128, Context: 37},
		} {
			c.KV, c.KScale, c.VScale = dt.kv, 0.01, 0.02
			p, err := c.plan(r.Info().MaxWorkgroupStorage, r.Info().Hardware)
			if err != nil {
				t.Fatal(err)
			}
			p.tune = dt.tune
			if !r.Info().Hardware && dt.tune != defaultTune(dt.kv, false) && (dt.tune.wideV || dt.tune.u > 8 || dt.kv == KVFP16 && dt.tune.ntok > 1 || dt.tune.ntok*dt.tune.u > 16) {
				continue // lavapipe's compiler crashes on these long kernels
			}
			rng := rand.New(rand.NewPCG(uint64(c.Context), 5))
			nkv := c.Batch * c.KVHeads * c.Context * c.HeadDim
			q := randNormal(rng, c.Batch*c.QHeads*c.HeadDim, 1)
			k, v := randNormal(rng, nkv, 1), randNormal(rng, nkv, 1)
			got, err := r.decodeAttention(context.Background(), p, q, k, v)
			if err != nil {
				t.Fatalf("%s: %v", dt.name, err)
			}
			want, _ := decodeReference(c, q, k, v)
			var num, den float64
			for i := range want {
				d := float64(got[i]) - want[i]
				num += d * d
				den += want[i] * want[i]
			}
			if rel := math.Sqrt(num / den); !(rel < 1e-5) {
				t.Errorf("%s, G=%d L=%d: relative error %g", dt.name, c.group(), c.Context, rel)
			}
		}
	}
}

// TestDecodeSweep times every shape of decodeTunes on a hardware GPU at
// long contexts (set FP8LAB_DECODE_SWEEP=1; used to pick the defaults).
func TestDecodeSweep(t *testing.T) {
	if os.Getenv("FP8LAB_DECODE_SWEEP") == "" {
		t.Skip("set FP8LAB_DECODE_SWEEP=1 to time the decode kernels' shapes")
	}
	r := testGPU(t)
	needHardware(t, r)
	ctx := context.Background()
	if bw, _, err := r.ReadBandwidth(ctx, 1<<30, 4096, 30); err == nil {
		t.Logf("warm-up: streaming read at %.1f GB/s", bw/1e9)
	}
	contexts := []int{65536, 131072, 262144, 524288}
	for _, dt := range decodeTunes {
		var xs, ts []float64
		line := ""
		var last DecodeBench
		for _, l := range contexts {
			c := DecodeConfig{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: l, KV: dt.kv, KScale: 0.01, VScale: 0.01}
			p, err := c.plan(r.Info().MaxWorkgroupStorage, r.Info().Hardware)
			if err != nil {
				t.Fatal(err)
			}
			p.tune = dt.tune
			b, err := r.benchDecode(ctx, p, 10)
			if err != nil {
				t.Fatalf("%s: %v", dt.name, err)
			}
			xs, ts = append(xs, float64(l)), append(ts, b.Time.Seconds())
			line += fmt.Sprintf(" %.4f", b.Time.Seconds()*1e3)
			last = b
		}
		n := float64(len(xs))
		var sx, st, sxx, sxt float64
		for i := range xs {
			sx, st, sxx, sxt = sx+xs[i], st+ts[i], sxx+xs[i]*xs[i], sxt+xs[i]*ts[i]
		}
		slope := (n*sxt - sx*st) / (n*sxx - sx*sx)
		t.Logf("SWEEP %-30s ms at 64k..512k:%s | %.1f GB/s at 512k | slope %.4f ns/token", dt.name, line, last.Bandwidth/1e9, slope*1e9)
	}
}

// decodeReference computes what [Runner.DecodeAttention] computes, in
// float64 from the same cache values (the FP16 or e4m3 codes decoded
// exactly): the reference the tests compare with.
func decodeReference(cfg DecodeConfig, q, k, v []float32) ([]float64, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	_, _, kval, vval := cfg.packCache(k, v)
	D, L, G := cfg.HeadDim, cfg.Context, cfg.group()
	out := make([]float64, cfg.Batch*cfg.QHeads*D)
	s := make([]float64, L)
	scale := 1 / math.Sqrt(float64(D))
	for b := 0; b < cfg.Batch; b++ {
		for h := 0; h < cfg.QHeads; h++ {
			bh := b*cfg.KVHeads + h/G
			qv := q[(b*cfg.QHeads+h)*D:][:D]
			m := math.Inf(-1)
			for t := 0; t < L; t++ {
				kv := kval[(bh*L+t)*D:][:D]
				var dot float64
				for d := range D {
					dot += float64(qv[d]) * kv[d]
				}
				s[t] = dot * scale
				m = max(m, s[t])
			}
			var den float64
			for t := range s {
				s[t] = math.Exp(s[t] - m)
				den += s[t]
			}
			o := out[(b*cfg.QHeads+h)*D:][:D]
			for t := 0; t < L; t++ {
				vv := vval[(bh*L+t)*D:][:D]
				for d := range D {
					o[d] += s[t] / den * vv[d]
				}
			}
		}
	}
	return out, nil
}
