"""The models, conversions and quantizers through the Python API: results
bit for bit what the arithmetic gives, errors as fp8lab.Error with the Go
message, never a crash."""

import math

import numpy as np
import pytest

import fp8lab

E4M3 = "sm90.wgmma.e4m3.f32"


def test_models_listed():
    names = {m["name"]: m for m in fp8lab.models()}
    for n in (E4M3, "sm90.mma.sync.e4m3.f32", "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", "cdna3.mfma.f64.f64", "fp32"):
        assert n in names
    assert names[E4M3]["k"] == 32 and names[E4M3]["f"] == 13 and names[E4M3]["a"] == "e4m3"
    assert names["sm80.mma.sync.tf32.f32"]["kind"] == "instruction"  # full tf32 operands
    assert {f["name"] for f in fp8lab.formats()} >= {"e4m3", "e5m2", "e2m1", "ue8m0", "bf16", "f16", "tf32"}


# One wgmma step keeps 14 significant bits of the running accumulator,
# truncating toward zero (F = 13, RZ to e8m13): 2^14 + 1 loses the 1, and
# so does a term 2^-13 below the largest one.
@pytest.mark.parametrize("a,b,c,want", [
    ([1.0] * 4, [1.0] * 4, 0.0, 4.0),
    ([1.0], [1.0], 16384.0, 16384.0),       # 2^14 + 1 -> 2^14 (14 bits kept)
    ([1.0], [1.0], 8192.0, 8193.0),         # 2^13 + 1 exact
    ([448.0, -448.0], [1.0, 1.0], 0.0, 0.0),
    ([1.0, 2.0 ** -9], [1.0, 2.0 ** -6], 0.0, 1.0),  # 2^-15 below 1: truncated
])
def test_step_values(a, b, c, want):
    ca, cb = fp8lab.encode("e4m3", a), fp8lab.encode("e4m3", b)
    got = fp8lab.step(E4M3, ca, cb, np.float32(c))
    assert got.dtype == np.float32 and float(got) == want


def test_chain_promotion_is_blockwise():
    r = np.random.default_rng(1)
    a = fp8lab.encode("e4m3", np.abs(r.standard_normal((6, 1024))) * 8)
    b = fp8lab.encode("e4m3", r.standard_normal((6, 1024)))
    never = fp8lab.chain(E4M3, a, b)
    every = fp8lab.chain(E4M3, a, b, promote=128)
    manual = np.zeros(6, np.float32)
    for i in range(0, 1024, 128):
        manual = (manual + fp8lab.chain(E4M3, a[:, i:i + 128], b[:, i:i + 128])).astype(np.float32)
    assert np.array_equal(every.view(np.uint32), manual.view(np.uint32))
    exact = (fp8lab.decode("e4m3", a).astype(np.float64) * fp8lab.decode("e4m3", b)).sum(axis=1)
    # promotion reduces the error of the long chain (the point of two-level accumulation)
    assert np.abs(every - exact).sum() <= np.abs(never - exact).sum()


def test_broadcast_and_gemm():
    r = np.random.default_rng(2)
    A = fp8lab.encode("e4m3", r.standard_normal((5, 64)))
    B = fp8lab.encode("e4m3", r.standard_normal((64, 3)))
    D = fp8lab.gemm(E4M3, A, B, promote=32)
    assert D.shape == (5, 3)
    for i in range(5):
        for j in range(3):
            assert D[i, j] == fp8lab.chain(E4M3, A[i], B[:, j], promote=32)
    # batch axes broadcast: one a row against three b rows
    assert np.array_equal(fp8lab.chain(E4M3, A[0], B.T), D[0] * 0 + fp8lab.chain(E4M3, A[0], B.T))
    assert fp8lab.chain(E4M3, A[0][None, :], B.T).shape == (3,)


def test_instruction_scaled_and_bits():
    k = 32
    a = fp8lab.encode("e4m3", np.ones(k))
    b = fp8lab.encode("e4m3", np.ones(k))
    d = fp8lab.step("sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", a, b, np.float32(1.0),
                    scale_a=np.array([128], np.uint8), scale_b=np.array([126], np.uint8))
    assert d.dtype == np.float32 and float(d) == 32 * 2.0 * 0.5 + 1
    bits = fp8lab.step("cdna3.mfma.f64.f64", np.array([1.5, 2.0]).view(np.uint64), np.array([2.0, 0.25]).view(np.uint64),
                       np.float64(1.0), bits=True)
    assert bits.dtype == np.uint64 and float(bits.view(np.float64)) == 4.5


@pytest.mark.parametrize("call,msg", [
    (lambda: fp8lab.chain("sm91.nope", np.zeros(32, np.uint8), np.zeros(32, np.uint8)), "unknown model"),
    (lambda: fp8lab.chain(E4M3, np.zeros(32, np.uint8), np.zeros(31, np.uint8)), "last axis"),
    (lambda: fp8lab.chain(E4M3, np.zeros((2, 32), np.uint8), np.zeros((3, 32), np.uint8)), "do not broadcast"),
    (lambda: fp8lab.chain(E4M3, np.zeros(32, np.float32), np.zeros(32, np.uint8)), "codes are unsigned integers"),
    (lambda: fp8lab.chain(E4M3, np.full(32, 300, np.uint16), np.zeros(32, np.uint16)), "does not fit 1 bytes"),
    (lambda: fp8lab.chain(E4M3, np.zeros(64, np.uint8), np.zeros(64, np.uint8), promote=48), "not a multiple of"),
    (lambda: fp8lab.step(E4M3, np.zeros(64, np.uint8), np.zeros(64, np.uint8)), "at most K = 32"),
    (lambda: fp8lab.step("sm100.tcgen05.f8f6f4.e2m1.e2m1.f32", np.full(32, 0x1f, np.uint8), np.zeros(32, np.uint8)),
     "is not a e2m1 code"),
    (lambda: fp8lab.step("sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", np.zeros(32, np.uint8), np.zeros(32, np.uint8)),
     "give scale_a and scale_b"),
    (lambda: fp8lab.encode("e9m9", [1.0]), "unknown format"),
    (lambda: fp8lab.encode("e4m3", [1.0], rounding="rz"), "only tf32 and ue8m0"),
    (lambda: fp8lab.decode("e2m1", np.array([0x10], np.uint8)), "not a e2m1 code"),
    (lambda: fp8lab.quantize_mx("e4m3", np.zeros(33, np.float32)), "multiple of the block size 32"),
    (lambda: fp8lab.quantize_mx("bf16", np.zeros(32, np.float32)), "MX element format"),
    (lambda: fp8lab.quantize_nvfp4(np.zeros(16, np.float32), tensor_scale=-1), "positive and finite"),
])
def test_errors(call, msg):
    with pytest.raises(fp8lab.Error, match=msg):
        call()


def test_conversions_all_codes():
    for fmt, n in (("e4m3", 256), ("e5m2", 256), ("e2m1", 16), ("ue8m0", 256), ("e4m3fnuz", 256)):
        codes = np.arange(n, dtype=np.uint8)
        vals = fp8lab.decode(fmt, codes)
        finite = np.isfinite(vals)
        back = fp8lab.encode(fmt, vals[finite], sat="nosat")
        same = back == codes[finite]
        # every finite code encodes back to itself, but for the one zero of
        # formats with -0 encoding to a zero
        assert same.all() or (fmt in ("e2m1",) and not (vals[finite][~same] != 0).any())
    # the rounding directions of ue8m0 (a power of two per block)
    x = np.float32([3.0])
    assert fp8lab.encode("ue8m0", x)[0] == 128 and fp8lab.encode("ue8m0", x, rounding="rp")[0] == 129


def test_block_quantizers_round_trip():
    r = np.random.default_rng(3)
    x = r.standard_normal((4, 64)).astype(np.float32)
    codes, scales = fp8lab.quantize_mx("e4m3", x)
    assert codes.shape == (4, 64) and scales.shape == (4, 2)
    y = fp8lab.dequantize_mx("e4m3", codes, scales)
    assert np.all(np.abs(y - x) <= 0.0625 * np.abs(x) + 2.0 ** -9 * np.abs(x).max())
    c4, s4, ts = fp8lab.quantize_nvfp4(x)
    assert c4.max() < 16 and s4.shape == (4, 4) and ts == pytest.approx(np.abs(x).max() / (448 * 6))
    z = fp8lab.dequantize_nvfp4(c4, s4, ts)
    assert np.corrcoef(z.ravel(), x.ravel())[0, 1] > 0.98


def test_torch_tensors():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (optional: tensors are read through NumPy)")
    a = torch.ones(32).to(torch.float8_e4m3fn)
    d = fp8lab.step(E4M3, a, a, 1.0)
    assert float(d) == 33.0


def test_gil_released_during_long_call():
    import threading
    rows, k = 256, 1 << 16
    a = np.full((rows, k), 0x38, np.uint8)
    done = threading.Event()
    ticks = [0]

    def work():
        fp8lab.chain(E4M3, a, a, threads=1)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks[0] += 1  # Python code runs while Go computes
    t.join()
    assert ticks[0] > 1000
