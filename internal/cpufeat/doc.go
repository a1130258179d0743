// Package cpufeat reports the x86 vector features that fp8lab's assembly
// kernels need, once, for every package that has such kernels (accum, fp8,
// pmath, attention): AVX2 with the YMM registers saved by the OS, FMA and
// F16C. On other architectures, and with the purego build tag (no
// assembly anywhere), every feature is false and the callers run their
// pure-Go code. The flags are variables for tests that force the pure-Go
// paths; nothing else writes them.
package cpufeat
