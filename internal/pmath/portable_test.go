package pmath

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// portableFunc is one function TestPortableAcrossPlatforms evaluates on
// its vectors; portable says whether it must give the same bits under
// wasm (this package's) or is only counted (math's, for comparison).
type portableFunc struct {
	name     string
	portable bool
	values   func() []float64
}

// portableN is the number of values of each function.
const portableN = 1 << 17

// portableVectors returns the arguments of one function: n values drawn
// by gen from a PCG seeded by seed (integer arithmetic and math's exact
// functions only, the same on every platform).
func portableVectors(seed uint64, gen func(r *rand.Rand) float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, portableN)
	for i := range x {
		x[i] = gen(r)
	}
	return x
}

func portableApply(f func(float64) float64, x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = f(v)
	}
	return y
}

func portableFuncs() []portableFunc {
	expArgs := portableVectors(1, func(r *rand.Rand) float64 { return r.Float64()*1440 - 730 })
	logArgs := portableVectors(2, func(r *rand.Rand) float64 { return math.Ldexp(1+r.Float64(), r.IntN(2098)-1074) })
	erfcArgs := portableVectors(3, func(r *rand.Rand) float64 { return r.Float64()*34 - 6 })
	erfinvArgs := portableVectors(4, func(r *rand.Rand) float64 {
		if r.IntN(2) == 0 {
			return r.Float64()*2 - 1
		}
		return math.Copysign(1-math.Ldexp(1+r.Float64(), -r.IntN(52)-1), r.Float64()-0.5) // near ±1
	})
	normals := func(f func(*rand.Rand) float64) func() []float64 {
		return func() []float64 {
			r := rand.New(rand.NewPCG(5, 6))
			x := make([]float64, portableN)
			for i := range x {
				x[i] = f(r)
			}
			return x
		}
	}
	fn := func(name string, portable bool, f func(float64) float64, x []float64) portableFunc {
		return portableFunc{name, portable, func() []float64 { return portableApply(f, x) }}
	}
	return []portableFunc{
		fn("Exp", true, Exp, expArgs),
		{"Exps", true, func() []float64 { y := make([]float64, len(expArgs)); Exps(y, expArgs); return y }},
		fn("Log", true, Log, logArgs), fn("Log2", true, Log2, logArgs),
		fn("Log2f", true, func(x float64) float64 { return float64(Log2f(float32(x))) }, logArgs),
		fn("Erfc", true, Erfc, erfcArgs), fn("Erfinv", true, Erfinv, erfinvArgs),
		{"NormFloat64", true, normals(NormFloat64)},
		fn("math.Exp", false, math.Exp, expArgs), fn("math.Log", false, math.Log, logArgs),
		fn("math.Log2", false, math.Log2, logArgs), fn("math.Erfc", false, math.Erfc, erfcArgs),
		fn("math.Erfinv", false, math.Erfinv, erfinvArgs),
		{"rand.NormFloat64", false, normals((*rand.Rand).NormFloat64)},
		{"rand.ExpFloat64", false, normals((*rand.Rand).ExpFloat64)},
	}
}

// portableEnv names the folder the WebAssembly side writes its values to
// (one file per function, little-endian float64 bits).
const portableEnv = "PMATH_PORTABLE_OUT"

// TestPortableAcrossPlatforms evaluates every function of this package
// on 2^17 arguments (each range, the tails and subnormals included; for
// NormFloat64, 2^17 draws) natively and as WebAssembly under Node.js
// (package wasmtest), and fails when any value differs in any bit. It logs
// how many of math's values differ on the same arguments: the reason this
// package exists.
func TestPortableAcrossPlatforms(t *testing.T) {
	funcs := portableFuncs()
	if dir := os.Getenv(portableEnv); dir != "" {
		for _, f := range funcs {
			y := f.values()
			b := make([]byte, 8*len(y))
			for i, v := range y {
				binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
			}
			if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if runtime.GOOS == "js" {
		t.Skip("compares a WebAssembly run with a native one: run it natively")
	}
	if testing.Short() {
		t.Skip("builds this package for js/wasm and runs it under node (-short)")
	}
	node := wasmtest.Node(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	times, _, err := wasmtest.Run(ctx, node, dir, "^TestPortableAcrossPlatforms$", portableEnv+"="+dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range funcs {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		y := f.values()
		if len(b) != 8*len(y) {
			t.Fatalf("%s: %d bytes from wasm, want %d", f.name, len(b), 8*len(y))
		}
		differ, first := 0, -1
		for i, v := range y {
			if binary.LittleEndian.Uint64(b[8*i:]) != math.Float64bits(v) {
				differ++
				if first < 0 {
					first = i
				}
			}
		}
		switch {
		case differ == 0:
			t.Logf("%s: all %d values equal", f.name, len(y))
		case f.portable:
			w := math.Float64frombits(binary.LittleEndian.Uint64(b[8*first:]))
			t.Errorf("%s: %d of %d values differ under wasm; the first, #%d: native %v, wasm %v", f.name, differ, len(y), first, y[first], w)
		default:
			t.Logf("%s: %d of %d values differ under wasm (not this package's: counted only)", f.name, differ, len(y))
		}
	}
	t.Logf("js/wasm build %.1f s, run under node %.1f s", times.Build.Seconds(), times.Run.Seconds())
}
