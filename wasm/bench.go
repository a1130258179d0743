package main

import (
	"math/rand/v2"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
)

// benchResult is the speed of one accumulation model's chain on this
// machine (native) or in this browser (wasm).
type benchResult struct {
	Model      string  `json:"model"`
	K          int     `json:"K"`
	Dots       int     `json:"dots"`
	Seconds    float64 `json:"seconds"`
	ProductsPS float64 `json:"products_per_s"`
	Check      float32 `json:"check"` // the last dot product, so that both builds can be compared
	Error      string  `json:"error,omitempty"`
}

// benchInputs returns a P·V-like pair of e4m3 vectors (softmax-like
// weights scaled into e4m3: 32 times an exponential variate; and N(0,1)
// values), drawn through pmath so that the native and the wasm build get
// the same inputs (lab's TestBrowser compares the two Checks; rand's
// ExpFloat64 and NormFloat64 call math.Exp and math.Log, which differ).
func benchInputs(k int) (a, b []uint16) {
	r := rand.New(rand.NewPCG(1, 99))
	a, b = make([]uint16, k), make([]uint16, k)
	for i := range a {
		e := -pmath.Log(1 - r.Float64()) // exponential, mean 1
		a[i] = uint16(fp8.EncodeE4M3(float32(256*e/8), fp8.SatFinite))
		b[i] = uint16(fp8.EncodeE4M3(float32(pmath.NormFloat64(r)), fp8.SatFinite))
	}
	return
}

// benchChain runs model's Dot over K-long inputs for at least d on one
// goroutine and reports FP8 products per second. The wasm build exposes it
// as fp8lab.bench; the native test runs the same code, so the two figures
// compare the same work.
func benchChain(model string, k int, d time.Duration) benchResult {
	res := benchResult{Model: model, K: k}
	m, err := accum.Lookup(model)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if k < 1 || k > 1<<22 {
		res.Error = "K out of [1, 4194304]"
		return res
	}
	x, y := benchInputs(k)
	start := time.Now()
	for time.Since(start) < d || res.Dots == 0 {
		res.Check = m.Dot(x, y, 0)
		res.Dots++
	}
	res.Seconds = time.Since(start).Seconds()
	res.ProductsPS = float64(k) * float64(res.Dots) / res.Seconds
	return res
}
