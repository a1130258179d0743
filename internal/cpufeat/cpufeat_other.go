//go:build !amd64 || purego

package cpufeat

// AVX2, FMA, F16C and SlowGather are false here: no assembly kernel runs.
var AVX2, FMA, F16C, SlowGather = false, false, false, false
