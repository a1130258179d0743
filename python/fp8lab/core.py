"""Models, conversions and block quantizers over NumPy arrays.

Codes are unsigned integer arrays (uint8 for FP8/FP6/FP4 and the scale
formats, uint16 for f16/bf16, uint32 for tf32/f32, uint64 for f64), one
code per element, right-aligned.  Values are float32 (float64 for f64
instructions).  PyTorch tensors are accepted wherever an array is (moved to
the CPU; float8 and bfloat16 tensors are read as their codes), and ml_dtypes
arrays (bfloat16, float8_*) likewise.
"""

import ctypes
import math

import numpy as np

from . import _lib
from ._lib import Error, call, lib

__all__ = ["models", "model", "formats", "chain", "step", "gemm", "encode", "decode",
           "quantize_mx", "dequantize_mx", "quantize_nvfp4", "dequantize_nvfp4",
           "as_array", "as_codes", "LONG_CALL"]

# Calls with at least this many products run as long calls (a worker thread,
# cancellable by KeyboardInterrupt); smaller ones are a plain foreign call
# (well under a second).
LONG_CALL = 1 << 22

_CODE_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_FLOAT_OF = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
_BITS_OF = {"f16": np.uint16, "f32": np.uint32, "f64": np.uint64}


def models():
    """Every model and instruction: a list of dicts (name, kind, a, b, c, k, ...)."""
    return list(_lib.info()["models"])


_by_name = None


def model(name):
    """The description of the named model or instruction (a dict)."""
    global _by_name
    if _by_name is None:
        _by_name = {m["name"]: m for m in _lib.info()["models"]}
    try:
        return _by_name[name]
    except (KeyError, TypeError):
        raise Error("unknown model %r; known models: %s" % (name, ", ".join(sorted(_by_name)))) from None


def formats():
    """Every number format: a list of dicts (name, bits, signed, inf, max, ...)."""
    return list(_lib.info()["formats"])


def _torch_to_numpy(x):
    t = x.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    name = str(t.dtype)
    if "float8" in name or "float4" in name:
        import torch
        return t.contiguous().view(torch.uint8).numpy()
    if name == "torch.bfloat16":
        import torch
        return t.contiguous().view(torch.int16).numpy().view(np.uint16)
    return t.contiguous().numpy()


def as_array(x, what="array"):
    """x as a NumPy array: NumPy arrays as they are, PyTorch tensors through
    .numpy() (float8/bfloat16 as their codes), ml_dtypes arrays as their codes,
    anything else through np.asarray."""
    if type(x).__module__.startswith("torch"):
        return _torch_to_numpy(x)
    a = np.asarray(x)
    if a.dtype.kind == "V" or a.dtype.name.startswith(("float8_", "float4_", "float6_")) or a.dtype.name == "bfloat16":
        # ml_dtypes: the codes are the array's bytes.
        a = a.view(_CODE_DTYPES.get(a.dtype.itemsize, np.uint8))
    return a


def as_codes(x, what, width=None):
    """x as a C-contiguous array of unsigned codes (width bytes, if given)."""
    a = as_array(x, what)
    if a.dtype.kind == "b":
        raise Error("%s: booleans are not codes" % what)
    if a.dtype.kind == "i":
        if a.size and a.min() < 0:
            raise Error("%s: negative code %d" % (what, int(a.min())))
        a = a.astype(_CODE_DTYPES[max(a.dtype.itemsize, 1)])
    if a.dtype.kind != "u":
        raise Error("%s: codes are unsigned integers (uint8 for FP8/FP4, uint16 for f16/bf16, "
                    "uint32 for tf32/f32, uint64 for f64), got dtype %s: convert values with fp8lab.encode"
                    % (what, a.dtype))
    if width is not None and a.dtype.itemsize != width:
        if a.size and int(a.max()) >> (8 * width):
            raise Error("%s: code %#x does not fit %d bytes" % (what, int(a.max()), width))
        a = a.astype(_CODE_DTYPES[width])
    return np.asarray(a, order="C")


def _ptr(a):
    return None if a is None else a.ctypes.data_as(ctypes.c_void_p)


def _broadcast_rows(what, arrays, k):
    """Broadcasts the batch shapes (all axes but the last) of arrays whose
    last axis is k (or given per array): returns the batch shape and the
    arrays as contiguous [rows, last] arrays."""
    shapes = []
    for name, a, last in arrays:
        if a.ndim < 1:
            raise Error("%s: %s must have at least one axis (the K axis), got a scalar" % (what, name))
        if a.shape[-1] != last:
            raise Error("%s: %s has %d elements on its last axis, want %d" % (what, name, a.shape[-1], last))
        shapes.append(a.shape[:-1])
    try:
        batch = np.broadcast_shapes(*shapes)
    except ValueError:
        raise Error("%s: batch shapes %s do not broadcast" % (what, ", ".join(str(s) for s in shapes))) from None
    rows = int(np.prod(batch, dtype=np.int64))
    out = [np.ascontiguousarray(np.broadcast_to(a, batch + (last,))).reshape(rows, last) for _, a, last in arrays]
    return batch, rows, out


def _c_values(c, fmt, batch, rows, what):
    """c (None, floats or bits) as a contiguous array of C's bit patterns."""
    if c is None:
        return None
    ca = as_array(c, "c")
    bits = _BITS_OF[fmt]
    if ca.dtype.kind == "f":
        ca = ca.astype(_FLOAT_OF[fmt]).view(bits)
    elif ca.dtype.kind in "ui":
        ca = as_codes(ca, "c", np.dtype(bits).itemsize)
    else:
        raise Error("%s: c must be floats or the bit patterns of %s, got dtype %s" % (what, fmt, ca.dtype))
    try:
        ca = np.broadcast_to(ca, batch)
    except ValueError:
        raise Error("%s: c has shape %s, the outputs %s" % (what, ca.shape, batch)) from None
    return np.ascontiguousarray(ca).reshape(rows)


def _run(name, a, b, c, scale_a, scale_b, promote, single, variant, threads, bits, what):
    m = model(name)
    a = as_array(a, "a")
    b = as_array(b, "b")
    if a.ndim < 1 or b.ndim < 1:
        raise Error("%s: a and b must have a K axis (their last)" % what)
    k = a.shape[-1]
    if m["kind"] == "model":
        if variant:
            raise Error("%s: %s is a model without peer variants" % (what, name))
        if scale_a is not None or scale_b is not None:
            raise Error("%s: %s is not block-scaled: give no scales" % (what, name))
        width = 1 if m["a"] in ("e4m3", "e5m2") else 2
        a = as_codes(a, "a", width)
        b = as_codes(b, "b", width)
        batch, rows, (a2, b2) = _broadcast_rows(what, [("a", a, k), ("b", b, k)], k)
        c2 = _c_values(c, "f32", batch, rows, what)
        out = np.empty(rows, np.float32)
        if c2 is not None:
            c2 = c2.view(np.float32)
        args = (name.encode(), _ptr(a2), _ptr(b2), width, rows, 0, k, 0, _ptr(c2), _ptr(out),
                int(promote), 1 if single else 0, int(threads))
        call(lib.fp8lab_model_chain, *args, long=rows * k >= LONG_CALL)
        out = out.reshape(batch)
        return out.view(np.uint32) if bits else out
    # An instruction: codes in their natural width.
    width = max(as_codes(a, "a").dtype.itemsize, as_codes(b, "b").dtype.itemsize)
    a = as_codes(a, "a", width)
    b = as_codes(b, "b", width)
    arrays = [("a", a, k), ("b", b, k)]
    nsc = 0
    if m.get("scale"):
        if scale_a is None or scale_b is None:
            raise Error("%s: %s is block-scaled (%s per %d elements): give scale_a and scale_b"
                        % (what, name, m["scale"], m["block"]))
        nsc = -(-k // m["block"])
        arrays += [("scale_a", as_codes(scale_a, "scale_a", 1), nsc), ("scale_b", as_codes(scale_b, "scale_b", 1), nsc)]
    elif scale_a is not None or scale_b is not None:
        raise Error("%s: %s is not block-scaled: give no scales" % (what, name))
    batch, rows, flat = _broadcast_rows(what, arrays, k)
    a2, b2 = flat[0], flat[1]
    sa2, sb2 = (flat[2], flat[3]) if nsc else (None, None)
    c2 = _c_values(c, m["c"], batch, rows, what)
    if c2 is not None:
        c2 = c2.astype(np.uint64)
    out = np.empty(rows, np.uint64)
    args = (name.encode(), _ptr(a2), _ptr(b2), width, rows, k, _ptr(sa2), _ptr(sb2), nsc, _ptr(c2), _ptr(out),
            int(promote), 1 if single else 0, int(variant), int(threads))
    call(lib.fp8lab_instr_chain, *args, long=rows * k >= LONG_CALL)
    res = out.astype(_BITS_OF[m["c"]]).reshape(batch)
    return res if bits else res.view(_FLOAT_OF[m["c"]])


def chain(name, a, b, c=None, promote=0, scale_a=None, scale_b=None, threads=0, bits=False):
    """One output element per row: the K loop of a kernel with model ``name``.

    a and b hold codes of the model's input formats with K on the last axis;
    their other axes broadcast (each row of the broadcast shape is one output
    element).  c is the starting accumulator per output (None: +0), as values
    (float32 for an FP32 accumulator) or as bit patterns.  promote = N > 0
    promotes the chain into an FP32 register every N elements (N a multiple of
    the instruction's K), as DeepGEMM, CUTLASS and vLLM's two-level
    FlashAttention do; 0 keeps the accumulator in the tensor core (one chain).
    Block-scaled instructions take scale_a and scale_b (uint8 codes,
    ceil(K/block) per row).  Returns the outputs as float32 (the C format's
    floats for instructions; bits=True: their bit patterns), bit for bit the
    Go model's (accum.Chain / accum.ChainCodes): each instruction's final
    conversion is the model's (RZ to e8m13 for sm90 FP8 wgmma, RZ to FP32 for
    most others, see fp8lab.model(name)["rho"]), a promotion's FP32 add rounds
    to nearest even; specials as the model gives them (a NaN input, inf x 0 or
    +inf with -inf give the canonical NaN 0x7fffffff, a zero sum is +0).
    threads <= 0 uses every CPU.  Raises fp8lab.Error on a bad name, shape,
    dtype, code or promotion; a call of LONG_CALL products or more runs in a
    worker thread and is cancelled by KeyboardInterrupt."""
    return _run(name, a, b, c, scale_a, scale_b, promote, False, 0, threads, bits, "chain")


def step(name, a, b, c=None, scale_a=None, scale_b=None, variant=0, threads=0, bits=False):
    """One instruction per row: d = MMA(a, b, c) of at most K elements (the
    missing ones +0), c entering the instruction as its accumulator.  For
    instructions with documented peer variants, variant = i >= 1 computes the
    i-th variant (model(name)["variants"][i-1]) instead.  Otherwise as chain."""
    return _run(name, a, b, c, scale_a, scale_b, 0, True, variant, threads, bits, "step")


def gemm(name, A, B, C=None, promote=0, scale_a=None, scale_b=None, threads=0, bits=False):
    """D = A·B + C through model ``name``: A is [M, K] codes, B [K, N] codes, C
    [M, N] (None: 0); each D[i, j] is chain(name, A[i, :], B[:, j], C[i, j],
    promote).  Block scales: scale_a [M, ceil(K/block)], scale_b
    [ceil(K/block), N]."""
    A = as_array(A, "A")
    B = as_array(B, "B")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise Error("gemm: A must be [M, K] and B [K, N], got %s and %s" % (A.shape, B.shape))
    M, K = A.shape
    N = B.shape[1]
    m = model(name)
    if m["kind"] == "model" and scale_a is None and scale_b is None:
        width = 1 if m["a"] in ("e4m3", "e5m2") else 2
        a2 = as_codes(A, "A", width)
        b2 = np.ascontiguousarray(as_codes(B, "B", width).T)
        c2 = _c_values(C, "f32", (M, N), M * N, "gemm") if C is not None else None
        if c2 is not None:
            c2 = c2.view(np.float32)
        out = np.empty(M * N, np.float32)
        call(lib.fp8lab_model_chain, name.encode(), _ptr(a2), _ptr(b2), width, M, N, K, 1, _ptr(c2), _ptr(out),
             int(promote), 0, int(threads), long=M * N * K >= LONG_CALL)
        out = out.reshape(M, N)
        return out.view(np.uint32) if bits else out
    a3 = A[:, None, :]
    b3 = B.T[None, :, :]
    sa = None if scale_a is None else as_array(scale_a, "scale_a")[:, None, :]
    sb = None if scale_b is None else as_array(scale_b, "scale_b").T[None, :, :]
    return chain(name, a3, b3, C, promote, sa, sb, threads, bits)


def _fmt_bits(fmt):
    for f in _lib.info()["formats"]:
        if f["name"] == fmt:
            return f["bits"]
    return None


_ROUNDINGS = {None: -1, "rn": 0, "rna": 1, "rz": 2, "rp": 3}


def encode(fmt, x, sat="satfinite", rounding=None):
    """Converts float values to codes of format fmt (e4m3, e5m2, e2m1, e2m3,
    e3m2, ue8m0, ue4m3, e4m3fnuz, e5m2fnuz, f16, bf16, tf32, f32; the OCP,
    PTX and PyTorch spellings too).  Rounds to nearest even with fmt's
    overflow, NaN and signed-zero rules: sat="satfinite" clamps to +-max (CUDA
    __NV_SATFINITE, vLLM's cache write), "nosat" gives NaN (e4m3) or +-inf
    (e5m2), as PyTorch's .to() does.  tf32 is the tensor cores' truncation of
    an FP32 register and ue8m0 rounds toward zero, unless rounding is given
    ("rn", "rna", "rz", "rp": cvt's directions; tf32 and ue8m0 only).
    Returns codes in the smallest unsigned dtype that holds them, the shape of x."""
    xa = as_array(x, "x")
    if xa.dtype.kind not in "fiu":
        raise Error("encode: x must be numbers, got dtype %s" % xa.dtype)
    xa = np.asarray(xa, dtype=np.float32, order="C")
    if sat not in ("satfinite", "nosat"):
        raise Error("encode: sat %r: want 'satfinite' or 'nosat'" % (sat,))
    if rounding not in _ROUNDINGS:
        raise Error("encode: rounding %r: want None, 'rn', 'rna', 'rz' or 'rp'" % (rounding,))
    out = np.empty(xa.shape, np.uint32)
    call(lib.fp8lab_encode, fmt.encode(), _ptr(xa), xa.size, _ptr(out), 0 if sat == "satfinite" else 1, _ROUNDINGS[rounding])
    bits = _fmt_bits(fmt)
    if bits is None:  # an alias: the Go side accepted it
        bits = 32 if int(out.max(initial=0)) >> 16 else (16 if int(out.max(initial=0)) >> 8 else 8)
    return out.astype(np.uint8 if bits <= 8 else (np.uint16 if bits <= 16 else np.uint32))


def decode(fmt, codes):
    """The float32 value of every code of format fmt (NaN codes: the H200's
    patterns for e4m3/e5m2, 0x7fc00000 for the other narrow formats; f16,
    bf16, tf32 and f32 NaNs keep their bits).  A code wider than fmt is an error."""
    ca = np.asarray(as_codes(codes, "codes"), dtype=np.uint32, order="C")
    out = np.empty(ca.shape, np.float32)
    call(lib.fp8lab_decode, fmt.encode(), _ptr(ca), ca.size, _ptr(out))
    return out


def quantize_mx(elem, x, rule="ocp"):
    """MX block quantization (OCP MX v1.0, blocks of 32 along the last axis):
    returns (codes uint8 of x's shape, ue8m0 scales uint8 [..., n/32]).
    rule "ocp" is the spec's floor(log2 amax) - emax; "roundup" is
    TransformerEngine's MXFP8 recipe (no element saturates)."""
    xa = np.ascontiguousarray(as_array(x, "x"), dtype=np.float32)
    if xa.ndim < 1 or xa.shape[-1] % 32:
        raise Error("quantize_mx: the last axis (%s) must be a multiple of the block size 32" % (xa.shape[-1:] or "a scalar",))
    rules = {"ocp": 0, "roundup": 1}
    if rule not in rules:
        raise Error("quantize_mx: rule %r: want 'ocp' or 'roundup'" % (rule,))
    codes = np.empty(xa.shape, np.uint8)
    scales = np.empty(xa.shape[:-1] + (xa.shape[-1] // 32,), np.uint8)
    call(lib.fp8lab_quantize_mx, elem.encode(), rules[rule], _ptr(xa), xa.size, _ptr(codes), _ptr(scales), scales.size)
    return codes, scales


def dequantize_mx(elem, codes, scales):
    """Values of MX blocks: element x 2^(scale-127), exact then rounded once to
    float32; a NaN scale (0xff) makes its block NaN."""
    ca = as_codes(codes, "codes", 1)
    sa = as_codes(scales, "scales", 1)
    if ca.ndim < 1 or sa.shape != ca.shape[:-1] + (ca.shape[-1] // 32,) or ca.shape[-1] % 32:
        raise Error("dequantize_mx: codes %s and scales %s: want [..., 32n] and [..., n]" % (ca.shape, sa.shape))
    out = np.empty(ca.shape, np.float32)
    call(lib.fp8lab_dequantize_mx, elem.encode(), _ptr(ca), ca.size, _ptr(sa), sa.size, _ptr(out))
    return out


def quantize_nvfp4(x, tensor_scale=None):
    """NVFP4 quantization (blocks of 16 along the last axis, ue4m3 block
    scales, the FP32 tensor scale amax/(448*6) unless given), following
    NVIDIA's kernel in float32.  Returns (e2m1 codes uint8, scales uint8
    [..., n/16], tensor_scale)."""
    xa = np.ascontiguousarray(as_array(x, "x"), dtype=np.float32)
    if xa.ndim < 1 or xa.shape[-1] % 16:
        raise Error("quantize_nvfp4: the last axis must be a multiple of the block size 16, got shape %s" % (xa.shape,))
    ts = math.nan if tensor_scale is None else float(tensor_scale)
    codes = np.empty(xa.shape, np.uint8)
    scales = np.empty(xa.shape[:-1] + (xa.shape[-1] // 16,), np.uint8)
    used = ctypes.c_float()
    call(lib.fp8lab_quantize_nvfp4, _ptr(xa), xa.size, ts, _ptr(codes), _ptr(scales), scales.size, ctypes.byref(used))
    return codes, scales, float(used.value)


def dequantize_nvfp4(codes, scales, tensor_scale):
    """Values of NVFP4 blocks: (e2m1 x ue4m3) x tensor_scale in float32."""
    ca = as_codes(codes, "codes", 1)
    sa = as_codes(scales, "scales", 1)
    if ca.ndim < 1 or ca.shape[-1] % 16 or sa.shape != ca.shape[:-1] + (ca.shape[-1] // 16,):
        raise Error("dequantize_nvfp4: codes %s and scales %s: want [..., 16n] and [..., n]" % (ca.shape, sa.shape))
    out = np.empty(ca.shape, np.float32)
    call(lib.fp8lab_dequantize_nvfp4, _ptr(ca), ca.size, _ptr(sa), sa.size, float(tensor_scale), _ptr(out))
    return out
