"""MMA-Sim's entry points on fp8lab's models (written from MMA-Sim's
documented API: README and the ISA classes' signatures; no MMA-Sim code).

A simulator is made from an architecture name and an instruction qualifier
as MMA-Sim names them (``MMA("Ampere", "m16n8k16.f32.f16.f16.f32")``,
``WGMMA("Hopper", "m64n8k32.f32.e4m3.e4m3")``, ``MFMA("CDNA3",
"f32_16x16x16_f16")``...), and called as ``sim(A, B, C)`` (block-scaled:
``sim(A, B, C, scale_A, scale_B)``) with A [m, k] (FP4 on k = 64: [m, k/2]
packed bytes, element 2t in the low nibble), B [k, n], C [m, n], scales
[m, k/block] and [k/block, n]; it returns D [m, n] in the d type.  dpa(a, b,
c) is the dot product of one row and column (a and b as values, converted
to the operand format by round-to-nearest-even as torch's .to() does).

Arrays: NumPy where MMA-Sim takes tensors (float16/float32/float64 arrays
for f16/tf32/f32/f64 operands; uint8 codes for fp8/fp4 and the scales,
uint16 codes for bf16; ml_dtypes arrays are read as their codes), or
PyTorch tensors when PyTorch is installed (then D is a tensor too).

An instruction fp8lab does not model raises NotCovered (a NotImplementedError)
naming it; COVERED lists what is.
"""

import re

import numpy as np

from .. import core
from .._lib import Error

__all__ = ["NotCovered", "COVERED", "Simulator", "covered"]


class NotCovered(Error, NotImplementedError):
    """An MMA-Sim instruction that fp8lab does not model."""


# (class, arch, qualifier pattern) -> fp8lab model.  The patterns use {A},
# {B} for operand formats and {N} for any n (wgmma/tcgen05 take n = 8..256 by 8).
_FP8 = ("e4m3", "e5m2")
_F8F6F4 = ("e4m3", "e5m2", "e2m1")


def _table():
    t = {}

    def add(cls, archs, qual, name):
        for arch in archs:
            t[(cls, arch, qual)] = name

    add("mma", ["Volta"], "m8n8k4.f32.f16.f16.f32", "sm70.mma.f16.f32")
    add("mma", ["Volta"], "m8n8k4.f16.f16.f16.f16", "sm70.mma.f16.f16")
    add("mma", ["Ampere"], "m16n8k16.f32.f16.f16.f32", "sm80.mma.sync.f16.f32")
    add("mma", ["Ampere"], "m16n8k16.f32.bf16.bf16.f32", "sm80.mma.sync.bf16.f32")
    add("mma", ["Ampere", "Ada Lovelace"], "m16n8k16.f16.f16.f16.f16", "sm80.mma.sync.f16.f16")
    for k in ("m16n8k8", "m16n8k4"):
        add("mma", ["Ampere", "Ada Lovelace"], k + ".f32.tf32.tf32.f32", "sm80.mma.sync.tf32.f32")
    for f in _FP8:
        add("mma", ["Ada Lovelace"], "m16n8k32.f32.%s.%s.f32" % (f, f), "sm89.mma.sync.%s.f32" % f)
        add("mma", ["Ada Lovelace"], "m16n8k32.f16.%s.%s.f16" % (f, f), "sm89.mma.sync.%s.f16" % f)
    add("mma", ["Hopper"], "m16n8k8.f32.tf32.tf32.f32", "sm90.mma.sync.tf32.f32")
    add("mma", ["Hopper"], "m16n8k16.f16.f16.f16.f16", "sm90.mma.sync.f16.f16")
    add("mma", ["Blackwell"], "m16n8k16.f32.f16.f16.f32", "sm100.mma.sync.f16.f32")
    add("mma", ["Blackwell"], "m16n8k16.f32.bf16.bf16.f32", "sm100.mma.sync.bf16.f32")
    add("mma", ["Blackwell"], "m16n8k16.f16.f16.f16.f16", "sm100.mma.sync.f16.f16")
    add("mma", ["Blackwell"], "m16n8k8.f32.tf32.tf32.f32", "sm100.mma.sync.tf32.f32")
    for a in _F8F6F4:
        for b in _F8F6F4:
            add("mma_block_scale", ["RTX Blackwell"], "m16n8k32.block32.f32.%s.%s.f32.ue8m0" % (a, b),
                "sm120.mma.sync.mxf8f6f4.%s.%s.f32" % (a, b))
            add("tcgen05mma_block_scale", ["Blackwell"], "m128n{N}k32.block32.f32.%s.%s.ue8m0" % (a, b),
                "sm100.tcgen05.mxf8f6f4.%s.%s.f32" % (a, b))
            for d in ("f32", "f16"):
                add("tcgen05mma", ["Blackwell"], "m{M}n{N}k32.%s.%s.%s" % (d, a, b), "sm100.tcgen05.f8f6f4.%s.%s.%s" % (a, b, d))
    add("mma_block_scale", ["RTX Blackwell"], "m16n8k64.block32.f32.e2m1.e2m1.f32.ue8m0", "sm120.mma.sync.mxf4.f32")
    add("mma_block_scale", ["RTX Blackwell"], "m16n8k64.block16.f32.e2m1.e2m1.f32.ue8m0", "sm120.mma.sync.mxf4nvf4.ue8m0.f32")
    add("mma_block_scale", ["RTX Blackwell"], "m16n8k64.block16.f32.e2m1.e2m1.f32.ue4m3", "sm120.mma.sync.mxf4nvf4.ue4m3.f32")
    add("tcgen05mma_block_scale", ["Blackwell"], "m128n{N}k64.block32.f32.e2m1.e2m1.ue8m0", "sm100.tcgen05.mxf4.f32")
    add("tcgen05mma_block_scale", ["Blackwell"], "m128n{N}k64.block16.f32.e2m1.e2m1.ue8m0", "sm100.tcgen05.mxf4nvf4.ue8m0.f32")
    add("tcgen05mma_block_scale", ["Blackwell"], "m128n{N}k64.block16.f32.e2m1.e2m1.ue4m3", "sm100.tcgen05.mxf4nvf4.ue4m3.f32")
    add("tcgen05mma", ["Blackwell"], "m{M}n{N}k16.f32.f16.f16", "sm100.tcgen05.f16.f32")
    add("tcgen05mma", ["Blackwell"], "m{M}n{N}k8.f32.tf32.tf32", "sm100.tcgen05.tf32.f32")
    for f in _FP8:
        add("wgmma", ["Hopper"], "m64n{N}k32.f32.%s.%s" % (f, f), "sm90.wgmma.%s.f32" % f)
    add("wgmma", ["Hopper"], "m64n{N}k32.f16.e4m3.e4m3", "sm90.wgmma.e4m3.f16")
    add("wgmma", ["Hopper"], "m64n{N}k16.f32.f16.f16", "sm90.wgmma.f16.f32")
    add("wgmma", ["Hopper"], "m64n{N}k16.f32.bf16.bf16", "sm90.wgmma.bf16.f32")
    add("wgmma", ["Hopper"], "m64n{N}k8.f32.tf32.tf32", "sm90.wgmma.tf32.f32")
    amd = {
        "CDNA1": {"f32_16x16x4f32": "f32.f32", "f32_16x16x16f16": "f16.f32", "f32_16x16x8bf16": "bf16.f32"},
        "CDNA2": {"f64_16x16x4f64": "f64.f64", "f32_16x16x4f32": "f32.f32", "f32_16x16x16f16": "f16.f32",
                  "f32_16x16x8bf16": "bf16.f32", "f32_16x16x16bf16_1k": "bf16_1k.f32"},
        "CDNA3": {"f64_16x16x4_f64": "f64.f64", "f32_16x16x4_f32": "f32.f32", "f32_16x16x8_xf32": "xf32.f32",
                  "f32_16x16x16_f16": "f16.f32", "f32_16x16x16_bf16": "bf16.f32"},
    }
    for x in ("fp8", "bf8"):
        for y in ("fp8", "bf8"):
            amd["CDNA3"]["f32_16x16x32_%s_%s" % (x, y)] = "%s.%s.f32" % (x, y)
    for arch, quals in amd.items():
        for q, cls in quals.items():
            add("mfma", [arch], q, "%s.mfma.%s" % (arch.lower(), cls))
    return t


_TABLE = _table()

#: Every covered (class, arch, qualifier pattern) and its fp8lab model.
COVERED = dict(_TABLE)

_NV_FORMATS = {"f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2", "e2m1", "ue8m0", "ue4m3"}


def _nv_mnk(shape, what):
    try:
        mnk = shape.split("m", 1)[1]
        m, nk = mnk.split("n", 1)
        n, k = nk.split("k", 1)
        return int(m), int(n), int(k)
    except (IndexError, ValueError):
        raise Error("%s: shape %r is not mMnNkK" % (what, shape)) from None


def _lookup(cls, arch, qualifier):
    what = "%s(%r, %r)" % (cls, arch, qualifier)
    if not isinstance(arch, str) or not isinstance(qualifier, str):
        raise Error("%s: the architecture and the qualifier are strings" % what)
    if (cls, arch, qualifier) in _TABLE:
        return _TABLE[(cls, arch, qualifier)], qualifier
    if cls in ("wgmma", "tcgen05mma", "tcgen05mma_block_scale"):
        shape = qualifier.split(".", 1)[0]
        m, n, k = _nv_mnk(shape, what)
        if n % 8 == 0 and 8 <= n <= 256:
            pattern = qualifier.replace(shape, "m%sn{N}k%d" % ("{M}" if cls == "tcgen05mma" and m in (64, 128) else m, k), 1)
            if (cls, arch, pattern) in _TABLE:
                return _TABLE[(cls, arch, pattern)], pattern
    near = sorted(q for (c, a, q) in _TABLE if c == cls and a == arch)
    raise NotCovered("%s: fp8lab does not model this instruction%s" % (
        what, "; covered on %s: %s" % (arch, ", ".join(near)) if near else " (nothing of %s on %s)" % (cls, arch)))


class Simulator:
    """One MMA-Sim-style instruction simulator on an fp8lab model (see the
    module doc).  Attributes: arch, qualifier, m, n, k, a_type, b_type,
    c_type, d_type (format names), block_size and s_type (block-scaled),
    packing, and model (the fp8lab model name)."""

    _cls = None

    def __init__(self, arch, qualifier):
        self.model, _ = _lookup(self._cls, arch, qualifier)
        self.arch, self.qualifier = arch, qualifier
        info = core.model(self.model)
        self._info = info
        self.block_size, self.s_type, self.packing = None, None, 1
        if self._cls == "mfma":
            head, rest = qualifier.split("_", 1)
            dims = rest.split("x")
            self.m, self.n = int(dims[0]), int(dims[1])
            self.k = int(re.match(r"\d+", dims[2]).group(0))
            self.d_type = self.c_type = head
            self.a_type, self.b_type = info["a"], info["b"]
        else:
            parts = qualifier.split(".")
            self.m, self.n, self.k = _nv_mnk(parts[0], "%s(%r, %r)" % (self._cls, arch, qualifier))
            if self._cls in ("mma_block_scale", "tcgen05mma_block_scale"):
                self.block_size = int(parts[1][len("block"):])
                self.s_type = parts[-1]
                self.packing = 2 if self.k == 64 else 1
                self.d_type = parts[2]
                self.a_type, self.b_type = parts[3], parts[4]
                self.c_type = parts[5] if self._cls == "mma_block_scale" else parts[2]
            elif self._cls == "mma":
                self.d_type, self.a_type, self.b_type, self.c_type = parts[1:5]
            else:  # wgmma, tcgen05mma: c is d's type
                self.d_type, self.a_type, self.b_type = parts[1:4]
                self.c_type = self.d_type
        if self.k > info["k"]:
            raise NotCovered("%s: k = %d exceeds the model %s's K = %d" % (qualifier, self.k, self.model, info["k"]))

    def __repr__(self):
        return "%s(%r, %r) -> fp8lab %s" % (type(self).__name__, self.arch, self.qualifier, self.model)

    # -- operands ---------------------------------------------------------

    def _operand(self, x, fmt, shape, name):
        torch_in = type(x).__module__.startswith("torch")
        a = core.as_array(x, name)
        if tuple(a.shape) != tuple(shape):
            raise Error("%s: %s has shape %s, want %s" % (self.qualifier, name, tuple(a.shape), tuple(shape)))
        return self._codes(a, fmt, name), torch_in

    def _codes(self, a, fmt, name):
        kind = a.dtype.kind
        if fmt in ("f16", "f32", "f64", "tf32", "xf32"):
            want = {"f16": np.float16, "f32": np.float32, "tf32": np.float32, "xf32": np.float32, "f64": np.float64}[fmt]
            if kind == "f":
                if a.dtype != want:
                    raise Error("%s: %s has dtype %s, want %s (%s)" % (self.qualifier, name, a.dtype, np.dtype(want), fmt))
                bits = a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
            else:
                bits = core.as_codes(a, name, np.dtype(want).itemsize)
            if fmt == "tf32":
                bits = bits & np.uint32(0xFFFFE000)  # the tensor core reads the upper 19 bits
            return bits
        if kind == "f":
            raise Error("%s: %s holds floats (%s): %s operands are codes (uint8 for fp8/fp4 and scales, uint16 for bf16), "
                        "an ml_dtypes array or a torch tensor of that dtype" % (self.qualifier, name, a.dtype, fmt))
        c = core.as_codes(a, name)
        if fmt == "ue4m3":
            c = c & np.uint8(0x7F)  # MMA-Sim reads |scale|
        return c

    def _unpack(self, codes, axis):
        lo = codes & np.uint8(0x0F)
        hi = codes >> np.uint8(4)
        return np.stack([lo, hi], axis=axis + 1).reshape(
            codes.shape[:axis] + (codes.shape[axis] * 2,) + codes.shape[axis + 1:])

    @staticmethod
    def _fmt(f):
        return {"fp8": "e4m3fnuz", "bf8": "e5m2fnuz", "xf32": "f32"}.get(f, f)

    def __call__(self, A, B, C, scale_A=None, scale_B=None):
        scaled = self.block_size is not None
        if scaled != (scale_A is not None or scale_B is not None) or scaled and (scale_A is None or scale_B is None):
            raise Error("%s: %s" % (self.qualifier, "give scale_A and scale_B" if scaled else "takes no scales"))
        m, n, k, p = self.m, self.n, self.k, self.packing
        a, ta = self._operand(A, self._fmt(self.a_type), (m, k // p), "A")
        b, tb = self._operand(B, self._fmt(self.b_type), (k // p, n), "B")
        c, tc = self._operand(C, self._fmt(self.c_type), (m, n), "C")
        if p == 2:
            a, b = self._unpack(a, 1), self._unpack(b, 0)
        sa = sb = None
        if scaled:
            sa, _ = self._operand(scale_A, self.s_type, (m, k // self.block_size), "scale_A")
            sb, _ = self._operand(scale_B, self.s_type, (k // self.block_size, n), "scale_B")
        d = self._run(a, b, c, sa, sb)
        return self._result(d, ta or tb or tc)

    def _run(self, a, b, c_bits, sa, sb):
        # One instruction per output element: row i of A against column j of B.
        info = self._info
        a3, b3 = a[:, None, :], b.T[None, :, :]
        s3a = None if sa is None else sa[:, None, :]
        s3b = None if sb is None else sb.T[None, :, :]
        if info["kind"] == "model":
            c = c_bits.view({2: np.float16, 4: np.float32}[c_bits.dtype.itemsize]).astype(np.float32)
            d = core.step(self.model, a3, b3, c)
        else:
            d = core.step(self.model, a3, b3, c_bits, scale_a=s3a, scale_b=s3b, bits=True)
            d = d.view({"f16": np.float16, "f32": np.float32, "f64": np.float64}[info["c"]])
        return d.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[self.d_type])

    @staticmethod
    def _result(d, as_torch):
        if as_torch:
            import torch
            return torch.from_numpy(np.ascontiguousarray(d))
        return d

    def dpa(self, a, b, c, scale_a=None, scale_b=None):
        """d = a·b + c of one row of A and column of B (len(a) <= k, the rest
        zero): a, b and c are values (lists, arrays or tensors), converted to
        the operand formats by round-to-nearest-even (FP8: torch's .to(),
        nosat); scale_a, scale_b are scale values (block-scaled)."""
        torch_in = any(type(x).__module__.startswith("torch") for x in (a, b, c))
        av = np.asarray(core.as_array(a, "a"), np.float64).reshape(-1)
        bv = np.asarray(core.as_array(b, "b"), np.float64).reshape(-1)
        if av.size != bv.size or av.size > self.k:
            raise Error("%s: dpa of %d and %d elements (at most k = %d, the same for both)" % (self.qualifier, av.size, bv.size, self.k))
        A = np.zeros((self.m, self.k), np.float64)
        B = np.zeros((self.k, self.n), np.float64)
        A[0, :av.size] = av
        B[:bv.size, 0] = bv
        C = np.zeros((self.m, self.n), np.float64)
        C[0, 0] = float(np.asarray(core.as_array(c, "c"), np.float64).reshape(-1)[0])
        Ac, Bc = self._encode(A, self.a_type), self._encode(B, self.b_type)
        Cc = self._encode(C, self.c_type)
        sa = sb = None
        if self.block_size is not None:
            nb = self.k // self.block_size
            SA = np.ones((self.m, nb))
            SB = np.ones((nb, self.n))
            if scale_a is not None:
                SA[0, :len(scale_a)] = scale_a
                SB[:len(scale_b), 0] = scale_b
            sa, sb = self._encode(SA, self.s_type), self._encode(SB, self.s_type)
        d = self._run(Ac, Bc, Cc, sa, sb)[0, 0]
        if torch_in:
            import torch
            return torch.tensor(d.item(), dtype={"f16": torch.float16, "f32": torch.float32, "f64": torch.float64}[self.d_type])
        return d

    def _encode(self, x, fmt):
        f = self._fmt(fmt)
        if f in ("f32", "tf32"):
            return x.astype(np.float32).view(np.uint32) & (np.uint32(0xFFFFE000) if f == "tf32" else np.uint32(0xFFFFFFFF))
        if f == "f64":
            return x.astype(np.float64).view(np.uint64)
        if f == "f16":
            return x.astype(np.float16).view(np.uint16)
        if f == "ue8m0":
            return core.encode("ue8m0", x.astype(np.float32))
        sat = "satfinite" if f in ("e2m1", "ue4m3") else "nosat"
        return core.encode(f, x.astype(np.float32), sat=sat)


def covered():
    """The covered (class, arch, qualifier pattern) -> fp8lab model table."""
    return dict(_TABLE)
