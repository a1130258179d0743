package lab

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// BenchmarkSweepAggregate: GET /api/sweeps/{id}/aggregate (JSON, grouped
// by the swept parameter) of a finished sweep of 1,000 runs (5 values ×
// 200 seeds), each with 64 points (4 series × 16 x, 6 extras: more than a
// contraction run with K ≤ 16384 has) and 32 summary values, read from the
// notebook every time (the cache of finished sweeps is emptied).
func BenchmarkSweepAggregate(b *testing.B) {
	l := newTestLab(b, Options{Workers: 1})
	rec := notebook.Sweep{Experiment: "lab-demo", Axes: []notebook.SweepAxis{{Name: "n", Values: []any{1, 2, 3, 4, 5}}},
		Runs: 1000, Executor: "pool", State: notebook.Done}
	for s := 1; s <= 200; s++ {
		rec.Seeds = append(rec.Seeds, uint64(s))
	}
	if err := l.store.CreateSweep(&rec); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		n := i/200 + 1
		summary := notebook.Floats{}
		for k := range 32 {
			summary[fmt.Sprintf("value%d", k)] = rng.NormFloat64()
		}
		run := notebook.Run{Experiment: "lab-demo", Params: map[string]any{"n": float64(n)}, Seed: uint64(i%200 + 1),
			State: notebook.Done, Sweep: rec.ID, SweepRun: i, Summary: summary}
		if err := l.store.Create(&run); err != nil {
			b.Fatal(err)
		}
		var pts []sim.Point
		for s := range 4 {
			for x := range 16 {
				extra := map[string]float64{}
				for e := range 6 {
					extra[fmt.Sprintf("e%d", e)] = rng.Float64()
				}
				pts = append(pts, sim.Point{Series: fmt.Sprintf("series %d", s), X: float64(1024 * (x + 1)), Y: rng.ExpFloat64(), Extra: extra})
			}
		}
		if err := l.store.Append(run.ID, 0, pts, func(r *notebook.Run) { r.State = notebook.Done }); err != nil {
			b.Fatal(err)
		}
		if err := l.store.SetSweepRun(rec.ID, i, run.ID); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time as well as wall time: on a shared machine the wall time
	// measures the other tenants too.
	cpu := func() float64 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano() + ru.Stime.Nano())
	}
	ops := 0
	b.ResetTimer()
	c0 := cpu()
	for b.Loop() {
		ops++
		l.srv.sw.mu.Lock()
		clear(l.srv.sw.cache)
		l.srv.sw.mu.Unlock()
		w := httptest.NewRecorder()
		l.srv.ServeHTTP(w, httptest.NewRequest("GET", "http://"+l.ts.Listener.Addr().String()+"/api/sweeps/"+rec.ID+"/aggregate", nil))
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body.String())
		}
	}
	b.ReportMetric((cpu()-c0)/float64(ops)/1e6, "cpu-ms/op")
}
