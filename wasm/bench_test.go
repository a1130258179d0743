package main

import (
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/accum"
)

func TestBenchChain(t *testing.T) {
	r := benchChain("sm90.wgmma.e4m3.f32", 4096, 20*time.Millisecond)
	if r.Error != "" || r.Dots < 1 || r.ProductsPS <= 0 {
		t.Fatalf("%+v", r)
	}
	again := benchChain("sm90.wgmma.e4m3.f32", 4096, time.Millisecond)
	if again.Check != r.Check {
		t.Errorf("check %v then %v", r.Check, again.Check)
	}
	if r := benchChain("nope", 16, time.Millisecond); r.Error == "" {
		t.Error("unknown model accepted")
	}
}

// BenchmarkChainNative is the native side of the WASM/native ratio of
// BENCHMARKS.md: the sm90 wgmma chain over K = 65536, one core.
func BenchmarkChainNative(b *testing.B) {
	m := accum.MustLookup("sm90.wgmma.e4m3.f32")
	x, y := benchInputs(1 << 16)
	var s float32
	for b.Loop() {
		s += m.Dot(x, y, 0)
	}
	b.ReportMetric(float64(1<<16)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
	sink = s
}

var sink float32
