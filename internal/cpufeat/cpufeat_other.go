//go:build !amd64 || purego

package cpufeat

// AVX2, FMA and F16C are false here: no assembly kernel runs.
var AVX2, FMA, F16C = false, false, false
