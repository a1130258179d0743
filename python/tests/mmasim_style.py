# A test in MMA-Sim's style (its README's example and its equivalence loop),
# with NumPy arrays where MMA-Sim takes torch tensors. It imports mmasim;
# test_mmasim.py runs it with the two imports pointed at fp8lab.mmasim.
import numpy as np
from mmasim.nv_ptx.sim import MMA  # for "mma.sync" instructions
from mmasim.amd.sim import MFMA  # for "v_mfma" instructions

# mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (PTX)
mma_a100 = MMA("Ampere", "m16n8k16.f32.f16.f16.f32")
# v_mfma_f32_16x16x16_f16
mfma_mi300 = MFMA("CDNA3", "f32_16x16x16_f16")

rng = np.random.default_rng(0)
A = rng.standard_normal([16, 16]).astype(np.float16)
B = rng.standard_normal([16, 16]).astype(np.float16)
C = np.zeros([16, 16], dtype=np.float32)
D_a100 = np.concatenate([mma_a100(A, B[:, :8], C[:, :8]), mma_a100(A, B[:, 8:], C[:, 8:])], axis=1)
D_mi300 = mfma_mi300(A, B, C)
assert D_a100.shape == D_mi300.shape == (16, 16) and D_a100.dtype == np.float32
assert np.abs(D_a100 - D_mi300).max() < 1e-2  # non-zero values are numerical discrepancies

# The equivalence loop of MMA-Sim's README, against float64 where the
# products and the sum are exact (small integers): every architecture agrees.
checked = 0
for _ in range(100):
    A = rng.integers(-8, 8, [16, 16]).astype(np.float16)
    B = rng.integers(-8, 8, [16, 8]).astype(np.float16)
    C = rng.integers(-64, 64, [16, 8]).astype(np.float32)
    D_sim = mma_a100(A, B, C)
    D_ref = (A.astype(np.float64) @ B.astype(np.float64) + C).astype(np.float32)
    assert np.array_equal(D_sim, D_ref)  # bit-wise identical
    checked += 1

# The dot product of one row and column (MMA-Sim's dpa): a 2^23 accumulator
# keeps or drops small terms depending on the architecture's alignment.
a = np.array([-(2.0 ** 13), -0.5, -0.25, -0.125])
b = np.array([2.0 ** 10, 1.0, 1.0, 1.0])
c = 2.0 ** 23
assert MMA("Volta", "m8n8k4.f32.f16.f16.f32").dpa(a, b, c).item() == 0.0
assert MFMA("CDNA1", "f32_16x16x4f32").dpa(a, b, c).item() == -0.875
