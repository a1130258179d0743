package notebook

import (
	"errors"
	"math"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

func TestSweepStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSweep("1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty store: %v", err)
	}
	if list, err := s.ListSweeps(); err != nil || len(list) != 0 {
		t.Errorf("empty list: %v %v", list, err)
	}
	if err := s.SetSweepRun("1", 0, "1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("run of no sweep: %v", err)
	}
	a := Sweep{Experiment: "x", Axes: []SweepAxis{{Name: "n", Values: []any{1.0, 2.0}}}, Seeds: []uint64{1, 2}, Runs: 4, State: Running}
	b := a
	if err := s.CreateSweep(&a); err != nil || a.ID != "1" {
		t.Fatal(a.ID, err)
	}
	if err := s.CreateSweep(&b); err != nil || b.ID != "2" {
		t.Fatal(b.ID, err)
	}
	var runs []string
	for i, st := range []State{Done, Failed, Done} {
		r := Run{Experiment: "x", Params: map[string]any{"n": float64(i)}, State: st, Summary: Floats{"v": float64(i), "nan": math.NaN()}}
		if err := s.Create(&r); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(r.ID, 0, []sim.Point{{Series: "s", X: 1, Y: float64(i), Extra: map[string]float64{"e": 1}}, {Series: "t", X: math.NaN(), Y: 2}}, func(x *Run) { x.State = st }); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r.ID)
	}
	for n, id := range runs {
		if err := s.SetSweepRun("1", n, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSweepRun("1", 0, runs[2]); err != nil { // replaced
		t.Fatal(err)
	}
	if err := s.SetSweepRun("1", -1, runs[2]); err == nil {
		t.Error("negative number accepted")
	}
	if err := s.UpdateSweep("1", func(sw *Sweep) error { sw.State = Done; return nil }); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetSweep("1")
	if err != nil || got.State != Done || got.Runs != 4 || len(got.Axes) != 1 || got.Axes[0].Values[1] != 2.0 {
		t.Errorf("after reopening: %+v %v", got, err)
	}
	list, _ := s.ListSweeps()
	if len(list) != 2 || list[0].ID != "2" {
		t.Errorf("list %+v", list)
	}
	m, err := s.SweepRuns("1")
	if err != nil || len(m) != 3 || m[0] != runs[2] || m[1] != runs[1] {
		t.Errorf("sweep runs %v %v", m, err)
	}
	var samples []SweepSample
	err = s.ReadSweep("1", func(st State) bool { return st == Done }, func(smp SweepSample) error {
		samples = append(samples, smp)
		return nil
	})
	if err != nil || len(samples) != 3 {
		t.Fatalf("%d samples, %v", len(samples), err)
	}
	if samples[0].N != 0 || samples[0].ID != runs[2] || len(samples[0].Points) != 2 || samples[0].Points[0].Y != 2 || samples[0].Points[0].Extra != nil ||
		!math.IsNaN(samples[0].Points[1].X) || !math.IsNaN(samples[0].Summary["nan"]) {
		t.Errorf("sample 0: %+v", samples[0])
	}
	if samples[1].State != Failed || samples[1].Points != nil {
		t.Errorf("sample 1 (failed, no points read): %+v", samples[1])
	}
	for _, bad := range []string{"0", "x", "01", "9"} {
		if _, err := s.GetSweep(bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetSweep(%q): %v", bad, err)
		}
	}
	stop := errors.New("stop")
	if err := s.ReadSweep("1", nil, func(SweepSample) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error: %v", err)
	}
}
