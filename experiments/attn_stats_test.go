package experiments

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/sim"
)

// The K band sits on the last k-band/2 channels of each half of the head,
// with one sign per channel, the same in every call.
func TestKBandChannels(t *testing.T) {
	tk := attnNeedle{d: 128, kBand: 48, kBandMean: 8}
	off := tk.bandOffset()
	var pos, neg int
	for c, x := range off {
		in := (c >= 40 && c < 64) || c >= 104
		switch {
		case in && math.Abs(float64(x)) != 8:
			t.Errorf("channel %d: offset %g, want ±8", c, x)
		case !in && x != 0:
			t.Errorf("channel %d: offset %g outside the band", c, x)
		case x > 0:
			pos++
		case x < 0:
			neg++
		}
	}
	if pos+neg != 48 || pos == 0 || neg == 0 {
		t.Errorf("%d positive and %d negative offsets, want 48 of both signs", pos, neg)
	}
	if again := tk.bandOffset(); again[40] != off[40] || again[127] != off[127] {
		t.Error("the signs change between calls")
	}
	if (attnNeedle{d: 128, kBand: 0, kBandMean: 8}).bandOffset() != nil {
		t.Error("an empty band gives offsets")
	}
}

// The band shifts every logit of a trial alike (needle and sinks
// included), so exact attention is the same with and without it, up to
// the float32 rounding of the keys (an offset of 8 moves them to a grid
// of 2^-20, logits by about 1e-6).
func TestKBandLeavesExactAttention(t *testing.T) {
	base := attnNeedle{d: 64, m: 8, margin: 6, scoreStd: 1.5, valueMean: 0.2, valueStd: 0.35, amp: 1, sinks: 1, sinkLogit: 5, sinkValue: 0.04}
	band := base
	band.kBand, band.kBandMean = 24, 8
	var o [2][]float64
	for i, tk := range []attnNeedle{base, band} {
		h, err := tk.haystack(context.Background(), 500, rand.New(rand.NewPCG(1, 2)), nil)
		if err != nil {
			t.Fatal(err)
		}
		dr := tk.draw(500, rand.New(rand.NewPCG(3, 4)))
		o[i] = tk.exact(h, dr.q, dr.pos, dr.needleK, dr.needleV, dr.sinkK, dr.sinkV)
	}
	if d := attention.Compare(o[1], o[0]).RelL2; !(d < 1e-5) {
		t.Errorf("O with the band differs from O without it by %g (relative L2)", d)
	}
}

// stats llama31-8b sets the published values, keeps margin and value-mean
// as given, and the run's notes cite the sources.
func TestStatsProfile(t *testing.T) {
	v, err := sim.ParseValues(Needle{}.Params(), map[string]string{"stats": "llama31-8b", "margin": "7", "value-mean": "0.1", "score-std": "3"})
	if err != nil {
		t.Fatal(err)
	}
	tk := attnNeedleFromValues(v)
	if tk.scoreStd != 1.5 || tk.sinks != 1 || tk.sinkLogit != 5 || tk.kBand != 48 || tk.margin != 7 || tk.valueMean != 0.1 {
		t.Errorf("profile gives %+v", tk)
	}
	rec, err := attnExec(t, Needle{}, 1, map[string]string{"stats": "llama31-8b", "contexts": "300", "trials": "3", "series": "fp8-two-level"})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(rec.Notes(), "\n")
	for _, want := range []string{"stats llama31-8b", "arXiv 2410.10781", "arXiv 2502.01563", "not published"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}
