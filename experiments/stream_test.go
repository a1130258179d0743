package experiments

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/sim"
)

// arrivalSink records when each point and the summary arrive.
type arrivalSink struct {
	mu      sync.Mutex
	start   time.Time
	points  []time.Duration
	summary time.Duration
}

func (s *arrivalSink) Point(sim.Point) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points = append(s.points, time.Since(s.start))
	return nil
}
func (s *arrivalSink) Progress(int64, int64) {}
func (s *arrivalSink) Note(string)           {}
func (s *arrivalSink) Summary(map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary = time.Since(s.start)
}
func (s *arrivalSink) Close() error { return nil }

// Every experiment that runs in steps streams its points as each step
// finishes: with small sizes whose first step is a small part of the run
// (a short context, a small K, one of several grid values or outlier
// factors, promotion's bf16 kernel before its e4m3 one), the first point
// arrives before 80 % of the run's time has passed, and before the
// summary. On the CPU: with device gpu the needle experiments emit from
// the same loop (a step's haystacks go to the GPU together, never a later
// step's), and a run's first step there also compiles the shaders, which
// would make the timing say little. Points are final values: a step's are
// the same whenever they arrive (TestNeedleGPUEqualsCPU,
// TestWasmEqualsNative).
func TestPointsStream(t *testing.T) {
	cases := []struct {
		e    sim.Experiment
		args map[string]string
	}{
		{Needle{}, map[string]string{"contexts": "1024,8192", "trials": "8", "head-dim": "64", "haystacks": "2"}},
		{Promotion{}, map[string]string{"context": "8192", "trials": "4", "intervals": "1,4,0", "head-dim": "64", "haystacks": "2"}},
		{KVFormats{}, map[string]string{"contexts": "512,4096", "trials": "2", "head-dim": "64", "haystacks": "2"}},
		{Sensitivity{}, map[string]string{"vary": "value-mean", "context": "2048", "trials": "2", "haystacks": "2", "head-dim": "64"}},
		{Scales{}, map[string]string{"outlier": "1,100,10000", "kv-heads": "2", "tokens": "2048", "trials": "2"}},
		{Contraction{}, map[string]string{"K": "1024,131072", "trials": "2", "captures": "off"}},
		{SkipSW{}, map[string]string{"acc-contexts": "1024,16384", "trials": "2", "q-per-kv": "4", "contexts": "1024,65536"}},
	}
	for _, c := range cases {
		name := c.e.Name()
		v, err := sim.ParseValues(c.e.Params(), c.args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := &arrivalSink{start: time.Now()}
		if _, err := sim.Execute(context.Background(), c.e, v, 1, s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		end := time.Since(s.start)
		if len(s.points) < 2 {
			t.Errorf("%s: %d points, want several steps", name, len(s.points))
			continue
		}
		first := s.points[0]
		t.Logf("%s: first of %d points after %v of %v (%.0f %%), summary after %v", name, len(s.points), first.Round(time.Millisecond), end.Round(time.Millisecond), 100*first.Seconds()/end.Seconds(), s.summary.Round(time.Millisecond))
		if first > s.summary || first.Seconds() > 0.8*end.Seconds() {
			t.Errorf("%s: the first point arrived after %v of a %v run (summary at %v): points are held back", name, first, end, s.summary)
		}
	}
}
