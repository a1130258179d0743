package experiments

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/internal/cputime"
	"github.com/fp8lab/fp8lab/internal/pmath"
)

// exactOneByOne is attnNeedle.exact as it was written before its keys went
// four side by side and its exp through pmath.Exps: one key's dot product
// at a time, pmath.Exp a key, the weighted sum key by key. It pins exact's
// bits.
func exactOneByOne(t attnNeedle, h *attnHaystack, q []float32, pos int, needleK, needleV, sinkK, sinkV []float32) []float64 {
	d := t.d
	n := len(h.k) / d
	key := func(j int) ([]float32, []float32) {
		switch {
		case j == pos:
			return needleK, needleV
		case j < t.sinks:
			return sinkK, sinkV
		}
		return h.k[j*d : (j+1)*d], h.v[j*d : (j+1)*d]
	}
	s := make([]float64, n)
	m := math.Inf(-1)
	scale := 1 / math.Sqrt(float64(d))
	for j := range s {
		k, _ := key(j)
		var dot float64
		for i, x := range q {
			dot += float64(x) * float64(k[i])
		}
		s[j] = dot * scale
		m = max(m, s[j])
	}
	o := make([]float64, d)
	var l float64
	for j := range s {
		w := pmath.Exp(s[j] - m)
		l += w
		_, v := key(j)
		for i := range o {
			o[i] += w * float64(v[i])
		}
	}
	for i := range o {
		o[i] /= l
	}
	return o
}

// exactCase is a haystack of n tokens of head_dim d with a needle at pos
// and sinks, from seed.
func exactCase(seed uint64, n, d, sinks, pos int, logitStd float64) (attnNeedle, *attnHaystack, []float32, [4][]float32) {
	r := rand.New(rand.NewPCG(seed, 3))
	vec := func(m int, std, mean float64) []float32 {
		x := make([]float32, m)
		for i := range x {
			x[i] = float32(r.NormFloat64()*std + mean)
		}
		return x
	}
	t := attnNeedle{d: d, sinks: sinks}
	h := &attnHaystack{k: vec(n*d, logitStd, 0), v: vec(n*d, 1, 0.5)}
	var kv [4][]float32
	kv[0], kv[1], kv[2], kv[3] = vec(d, 3, 0), vec(d, 1, 0.5), vec(d, 2, 0), vec(d, 0.1, 0)
	return t, h, vec(d, 1, 0), kv
}

// TestExactBits: exact equals exactOneByOne bit for bit: token counts that
// are and are not multiples of four (and of the exp's blocks), the needle
// at the first, the last and an inner token, among the sinks, head_dim 64,
// 128 and 256, and logits wide enough that some weights leave the batch
// exp's fast path (subnormal and zero weights).
func TestExactBits(t *testing.T) {
	for i, c := range []struct {
		n, d, sinks, pos int
		std              float64
	}{
		{1, 64, 0, 0, 1}, {3, 64, 0, 2, 1}, {17, 128, 2, 5, 1}, {1000, 128, 4, 999, 1}, {1001, 128, 0, 0, 1},
		{4099, 256, 3, 1, 1}, {2050, 64, 0, 1023, 12}, {517, 128, 5, 2, 40}, {611, 128, 1, 7, 200},
	} {
		tk, h, q, kv := exactCase(uint64(i), c.n, c.d, c.sinks, c.pos, c.std)
		got := tk.exact(h, q, c.pos, kv[0], kv[1], kv[2], kv[3])
		want := exactOneByOne(tk, h, q, c.pos, kv[0], kv[1], kv[2], kv[3])
		for x := range want {
			if math.Float64bits(got[x]) != math.Float64bits(want[x]) {
				t.Fatalf("n %d, d %d, sinks %d, needle %d: element %d = %v, want %v", c.n, c.d, c.sinks, c.pos, x, got[x], want[x])
			}
		}
	}
}

// BenchmarkExact is exact over a 128k-token haystack (head_dim 128), the
// reference of one kv-formats trial, and exactOneByOne, on one core
// (cpu-ms/op is the thread's CPU time).
func BenchmarkExact(b *testing.B) {
	const n = 128 << 10
	tk, h, q, kv := exactCase(1, n, 128, 4, 5000, 1)
	b.Run("exact", func(b *testing.B) {
		cpu := cputime.Start()
		for b.Loop() {
			tk.exact(h, q, 5000, kv[0], kv[1], kv[2], kv[3])
		}
		cpu.Report(b, 2*n*128)
	})
	b.Run("one-by-one", func(b *testing.B) {
		cpu := cputime.Start()
		for b.Loop() {
			exactOneByOne(tk, h, q, 5000, kv[0], kv[1], kv[2], kv[3])
		}
		cpu.Report(b, 2*n*128)
	})
}
