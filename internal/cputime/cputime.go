// Package cputime measures the CPU time of the calling goroutine's thread,
// for benchmarks on a shared machine, where wall time also measures the
// other tenants. On systems other than Linux it reports 0.
package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Timer measures the thread CPU time of a benchmark loop.
type Timer struct{ t0 time.Duration }

// Start locks the goroutine to its OS thread and reads its CPU time.
func Start() *Timer {
	runtime.LockOSThread()
	return &Timer{thread()}
}

// Report adds the cpu-ms/op metric (the thread's CPU time per iteration)
// and, when products > 0, Mproducts/cpu-s; it unlocks the thread.
func (t *Timer) Report(b *testing.B, products float64) {
	d := thread() - t.t0
	runtime.UnlockOSThread()
	if d <= 0 {
		return
	}
	b.ReportMetric(d.Seconds()*1000/float64(b.N), "cpu-ms/op")
	if products > 0 {
		b.ReportMetric(products*float64(b.N)/d.Seconds()/1e6, "Mproducts/cpu-s")
	}
}
