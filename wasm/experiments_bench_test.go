package main

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/fp8lab/fp8lab/experiments"
	"github.com/fp8lab/fp8lab/internal/wasmtest"
	"github.com/fp8lab/fp8lab/sim"
)

// BenchmarkBrowserRuns times one run of each of wasmtest.BrowserRuns. Natively run
// it on one core (-cpu 1) and as WebAssembly under node
// (GOOS=js GOARCH=wasm go test -exec="$(go env GOROOT)/lib/wasm/go_js_wasm_exec"),
// with -benchtime 1x: the ratio of the two is the browser's slowdown.
// It reports the run's points and a checksum of their y values, so that the
// two builds can be seen to compute the same run.
func BenchmarkBrowserRuns(b *testing.B) {
	_ = experiments.AttentionFile{} // the registry
	for _, r := range wasmtest.BrowserRuns {
		b.Run(r.Name, func(b *testing.B) {
			exp, err := sim.Lookup(r.Name)
			if err != nil {
				b.Fatal(err)
			}
			vals, err := sim.ParseValues(exp.Params(), r.Params)
			if err != nil {
				b.Fatal(err)
			}
			var sink checkSink
			for b.Loop() {
				sink = checkSink{}
				if _, err := sim.Execute(context.Background(), exp, vals, 1, &sink); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sink.points), "points")
			b.ReportMetric(float64(sink.check>>12), "check")
		})
	}
}

// checkSink counts a run's points and sums a hash of each one's series, x,
// y and extra values (a sum: the order in which trials emit does not
// count), so that a native and a WebAssembly run can be compared by two
// numbers.
type checkSink struct {
	mu     sync.Mutex // trials may emit concurrently
	points int
	check  uint64
}

func (s *checkSink) Point(p sim.Point) error {
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * 1099511628211 }
	for _, c := range []byte(p.Series) {
		mix(uint64(c))
	}
	mix(math.Float64bits(p.X))
	mix(math.Float64bits(p.Y))
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		mix(math.Float64bits(p.Extra[k]))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points++
	s.check += h
	return nil
}

func (*checkSink) Progress(int64, int64)      {}
func (*checkSink) Note(string)                {}
func (*checkSink) Summary(map[string]float64) {}
func (*checkSink) Close() error               { return nil }
