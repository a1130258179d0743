package attention

import (
	"context"
	"math"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// The Hopper parameters as tensorcore-numerics.md §1 and the H200 captures
// give them, written here rather than read from accum's table, so that a
// wrong entry there (F = 14, L = 16, another rounding) makes Run disagree
// with stepDecode below.
var (
	hopperFP8Params = accum.Params{L: 32, F: 13, Rho: accum.RZE8M13, EZero: -133, In: fp8.FormatE4M3}
	hopper16Params  = accum.Params{L: 16, F: 25, Rho: accum.RZFP32, EZero: -133, In: fp8.FormatBF16}
)

// chainStep is a chain of T-FDPA steps of p.L elements over a·b from c,
// through the reference step accum.Params.Step (FP32 output formats only).
func chainStep(p accum.Params, a, b []uint16, c float32) float32 {
	bits := math.Float32bits(c)
	ab, bb := make([]uint32, p.L), make([]uint32, p.L)
	for i := 0; i < len(a); i += p.L {
		n := min(p.L, len(a)-i)
		for j := range n {
			ab[j], bb[j] = uint32(a[i+j]), uint32(b[i+j])
		}
		bits = p.Step(ab[:n], bb[:n], bits)
	}
	return math.Float32frombits(bits)
}

// stepDecode computes one decode query of FA3's forward pass element by
// element (fp8-attention.md §2–§3), without the kernel's code: tiles of bn
// tokens newest first, S = chain(q, k)·scale_log2, online max and
// alpha = exp2(m − m_new), P = exp2(S − m + 8) summed unrounded into l and
// cast to the dtype, O = chain(P, V, O·alpha) over the zero-padded tile (no
// promotion), then O·(1/l)·v_descale. Scales are 1.
func stepDecode(p accum.Params, q []float32, kv *KV, bn int) []float32 {
	f, d, n := kv.Format(), kv.Dim(), kv.Tokens()
	qc := make([]uint16, d)
	for i := range qc {
		qc[i] = uint16(f.Encode(q[i], fp8.SatFinite))
	}
	scale := float32(float32(float32(1/math.Sqrt(float64(d))*math.Log2E)*1) * 1)
	m, l := float32(math.Inf(-1)), float32(0)
	o := make([]float32, d)
	key, v := make([]uint16, d), make([]uint16, bn)
	s, pc := make([]float32, bn), make([]uint16, bn)
	for t := (n+bn-1)/bn - 1; t >= 0; t-- {
		mNew := m
		for j := range s {
			tok := t*bn + j
			s[j] = float32(math.Inf(-1))
			if tok < n {
				for i := range key {
					key[i] = kv.KCode(tok, 0, i)
				}
				s[j] = chainStep(p, qc, key, 0) * scale
			}
			mNew = max(mNew, s[j])
		}
		alpha := float32(math.Exp2(float64(m - mNew)))
		m = mNew
		var sum float32
		for j := range s {
			pj := float32(math.Exp2(float64(float32(s[j]-m) + 8)))
			sum += pj
			pc[j] = uint16(f.Encode(pj, fp8.SatFinite))
		}
		l = float32(l*alpha) + sum
		for i := range o {
			for j := range v {
				v[j] = 0
				if tok := t*bn + j; tok < n {
					v[j] = kv.VCode(tok, 0, i)
				}
			}
			o[i] = chainStep(p, pc, v, float32(o[i]*alpha))
		}
	}
	for i := range o {
		o[i] *= 1 / l * 1
	}
	return o
}

// TestRunEqualsStepByStep checks Run's decode output bit for bit against
// stepDecode with the Hopper parameters written above, for e4m3 (L 32,
// F 13, RZ to e8m13) and bf16 (L 16, F 25, RZ to FP32), over several tiles.
// It then checks that the comparison can fail: the same computation with a
// wrong F, L or final rounding differs from Run in many elements, while its
// relative L2 error against float64 attention moves by less than the
// tolerances of the other tests (which is why they cannot see it).
func TestRunEqualsStepByStep(t *testing.T) {
	const n, d, bn = 1000, 128, 128 // 8 tiles, the last one partial
	for _, tt := range []struct {
		name  string
		dtype fp8.Format
		par   accum.Params
	}{
		{"e4m3", fp8.FormatE4M3, hopperFP8Params},
		{"bf16", fp8.FormatBF16, hopper16Params},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProblem(13, 1, n, 1, 1, d, 0.5)
			kv := p.kv(t, tt.dtype, nil, nil)
			got, err := Run(context.Background(), Config{HeadDim: d, KBlockN: bn}, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			differ := func(o []float32) int {
				k := 0
				for i := range o {
					if math.Float32bits(float32(got[i])) != math.Float32bits(o[i]) {
						k++
					}
				}
				return k
			}
			if k := differ(stepDecode(tt.par, p.q, kv, bn)); k != 0 {
				t.Fatalf("Run differs from the step-by-step computation with %+v in %d of %d outputs", tt.par, k, d)
			}

			ref, err := ReferenceQuantized(context.Background(), Config{HeadDim: d}, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			wrong := map[string]accum.Params{}
			for name, change := range map[string]func(*accum.Params){
				"F+1": func(q *accum.Params) { q.F++ },
				"F-1": func(q *accum.Params) { q.F-- },
				"L/2": func(q *accum.Params) { q.L /= 2 },
				"rho": func(q *accum.Params) { // the other FP32-output rounding
					if q.Rho == accum.RZE8M13 {
						q.Rho = accum.RZFP32
					} else {
						q.Rho = accum.RZE8M13
					}
				},
			} {
				q := tt.par
				change(&q)
				wrong[name] = q
			}
			for name, q := range wrong {
				o := stepDecode(q, p.q, kv, bn)
				o64 := make([]float64, d)
				for i := range o {
					o64[i] = float64(o[i])
				}
				k := differ(o)
				t.Logf("%s %+v: %d of %d outputs differ from Run; rel L2 vs float64 %.4g (right model %.4g)",
					name, q, k, d, relDiff(o64, ref), relDiff(got, ref))
				if k < d/4 {
					t.Errorf("%s: only %d of %d outputs differ: the bit-exact comparison would hardly see a wrong model", name, k, d)
				}
			}
		})
	}
}
