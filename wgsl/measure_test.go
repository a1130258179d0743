package wgsl

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestMeasureWaitsForClock checks the warm-up rule: times that agree end
// it only once the clock probe reads ClockFrac of the maximum; a probe
// that never gets there leaves the measurement not stable at MaxRuns; no
// probe (or one without an answer) leaves the rule on times alone.
func TestMeasureWaitsForClock(t *testing.T) {
	one := func() (Timing, error) { return Timing{Wall: time.Millisecond, GPU: time.Millisecond}, nil }
	// ClockSettle is far longer than 40 instant runs: only a clock at 90 %
	// of its maximum ends these warm-ups.
	base := Warmup{MinRuns: 3, Window: 3, MaxRuns: 40, MaxTime: time.Minute, Tol: 0.05, ClockFrac: 0.9, ClockSettle: time.Hour}
	for _, tc := range []struct {
		name       string
		clock      func(call int) (float64, float64, bool)
		warmups    int
		stable     bool
		clockAtEnd float64
	}{
		{"no probe", nil, 3, true, 0},
		{"no answer", func(int) (float64, float64, bool) { return 0, 0, false }, 3, true, 0},
		{"ramps at the 10th read", func(c int) (float64, float64, bool) {
			if c < 10 {
				return 345, 1980, true
			}
			return 1980, 1980, true
		}, 12, true, 1980},
		{"never ramps", func(int) (float64, float64, bool) { return 675, 1980, true }, 40, false, 675},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := base
			calls := 0
			if tc.clock != nil {
				w.Clock = func() (float64, float64, bool) { calls++; return tc.clock(calls) }
			}
			m, err := measure(context.Background(), w, 5, one)
			if err != nil {
				t.Fatal(err)
			}
			if m.Warmups != tc.warmups || m.Stable != tc.stable || m.ClockMHz != tc.clockAtEnd {
				t.Errorf("warm-ups %d stable %v clock %v, want %d %v %v", m.Warmups, m.Stable, m.ClockMHz, tc.warmups, tc.stable, tc.clockAtEnd)
			}
			if len(m.Times) != 5 || m.Source != "timestamp" {
				t.Errorf("%d timed runs by %s", len(m.Times), m.Source)
			}
		})
	}
	// A clock that stays at 675 MHz for ClockSettle has settled: stable,
	// not up; one that hunts between 675 and 1200 never settles.
	slow := func() (Timing, error) {
		time.Sleep(time.Millisecond)
		return Timing{Wall: time.Millisecond, GPU: time.Millisecond}, nil
	}
	for _, tc := range []struct {
		name   string
		clock  func(call int) float64
		stable bool
	}{
		{"settles low", func(int) float64 { return 675 }, true},
		{"hunts", func(c int) float64 { return []float64{675, 1200}[c%2] }, false},
	} {
		w := Warmup{MinRuns: 3, Window: 3, MaxRuns: 1000, MaxTime: 200 * time.Millisecond, Tol: 0.05, ClockFrac: 0.9, ClockSettle: 20 * time.Millisecond}
		calls := 0
		w.Clock = func() (float64, float64, bool) { calls++; return tc.clock(calls), 1980, true }
		m, err := measure(context.Background(), w, 3, slow)
		if err != nil {
			t.Fatal(err)
		}
		if m.Stable != tc.stable || m.ClockUp {
			t.Errorf("%s: stable %v up %v after %d warm-ups in %v, want stable %v, not up", tc.name, m.Stable, m.ClockUp, m.Warmups, m.WarmupTime, tc.stable)
		}
	}
	w := DefaultWarmup(true)
	if strings.Contains(w.String(), "clock") {
		t.Errorf("rule without a probe mentions the clock: %s", w)
	}
	w.Clock = func() (float64, float64, bool) { return 0, 0, false }
	if !strings.Contains(w.String(), "SM clock is at 90 % of its maximum or has settled") {
		t.Errorf("rule with a probe: %s", w)
	}
}

// A first repetition that takes longer than MinTime (pipelines compiled
// on a cold cache) does not end the warm-up: MinTime counts from its end,
// so the GPU still runs MinTime of repetitions before the timed ones
// (gpucheck's decode-tile bench on the H200 ended its warm-up after 3 runs
// in 1.7 s of compiling and then timed runs of 3.7 and 8.0 ms by turns).
func TestMeasureWarmupAfterCompile(t *testing.T) {
	calls := 0
	one := func() (Timing, error) {
		calls++
		if calls == 1 {
			time.Sleep(60 * time.Millisecond) // the compile
		} else {
			time.Sleep(time.Millisecond)
		}
		return Timing{Wall: time.Millisecond, GPU: time.Millisecond}, nil
	}
	w := Warmup{MinRuns: 3, Window: 3, MaxRuns: 100000, MinTime: 30 * time.Millisecond, MaxTime: time.Minute, Tol: 0.05}
	m, err := measure(context.Background(), w, 3, one)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Stable || m.WarmupTime < 90*time.Millisecond || m.Warmups < 10 {
		t.Errorf("warm-up of %d runs in %v (stable %v): want MinTime (30ms) of runs after the 60ms first one", m.Warmups, m.WarmupTime, m.Stable)
	}
}
