"""fp8lab from Python: FP8 products per second of one batched call on one
thread, with the inputs of accum's BenchmarkChain (P·V-like e4m3 codes:
softmax-like weights 32·Exp(1) times N(0,1) values), 64 output elements of
K = 65536 each (4.2e6 products a call).  `make bench-python` runs it beside
`go test ./accum -bench Chain -cpu 1` (BENCHMARKS.md)."""

import time

import numpy as np

import fp8lab

ROWS, K, REPEAT = 64, 1 << 16, 7


def main():
    r = np.random.default_rng(99)
    a = fp8lab.encode("e4m3", 256 * r.standard_exponential((ROWS, K)) / 8, sat="satfinite")
    b = fp8lab.encode("e4m3", r.standard_normal((ROWS, K)), sat="satfinite")
    fp8lab.chain("sm90.wgmma.e4m3.f32", a[:1], b[:1], threads=1)  # warm up
    rates = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        fp8lab.chain("sm90.wgmma.e4m3.f32", a, b, threads=1)
        rates.append(a.size / (time.perf_counter() - t))
    rates.sort()
    print("fp8lab.chain sm90.wgmma.e4m3.f32, %d x K=%d, one thread: median %.3g, best %.3g products/s (%d calls)"
          % (ROWS, K, rates[len(rates) // 2], rates[-1], REPEAT))


if __name__ == "__main__":
    main()
