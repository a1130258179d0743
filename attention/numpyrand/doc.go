// Package numpyrand reproduces, bit for bit, the parts of NumPy's random
// number machinery that fp8lab's golden inputs depend on: SeedSequence
// (numpy/random/bit_generator.pyx: the hashmix/mix entropy pool and
// generate_state) and the PCG64 bit generator (numpy/random/src/pcg64:
// 128-bit LCG, XSL-RR output, seeded through SeedSequence), including
// random_raw and the O(log n) jump ahead (advance).
//
// It exists so that inputs generated on a GPU machine with NumPy
// (../shared/golden/h200/capture/attn_inputs.py) can be regenerated here
// without NumPy. It implements only what those inputs use: no Generator
// distributions (their algorithms are NumPy's, not reproduced here), no
// spawning, no PCG64DXSM.
//
// The algorithms follow NumPy's sources; the tests check them against
// NumPy's published test vectors (numpy/random/tests/data/pcg64-testset-*.csv
// and the SeedSequence(0) state quoted in pcg64-test-data-gen.c).
package numpyrand
