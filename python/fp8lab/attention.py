"""The FP8 FlashAttention-3 simulator (package attention) on NumPy arrays."""

import ctypes
import json

import numpy as np

from . import _lib
from ._lib import Error, call, lib
from .core import as_array

__all__ = ["attention", "AttentionResult", "PARAMS"]

# The parameters and their defaults: those of `lab run attention-file`
# (experiments/attnfile.go: splits a number or "auto", batch for auto) plus
# sms (0: the arch's SM count); names with "-" or "_".
PARAMS = {
    "format": "e4m3", "k-scales": "tensor", "v-scales": "tensor", "scale": "one", "prefix": 1024,
    "path": "direct", "arch": "hopper", "saturation": "satfinite", "promotions": (0, 1),
    "k-block-m": 0, "k-block-n": 0, "causal": False, "window": 0, "softmax-scale": 0.0,
    "splits": 1, "batch": 1, "sms": 0,
}


class AttentionResult:
    """What one simulation gives.

    o: {promotion: O} with O the kernel's FP32 output per promotion, in the
    input layout ([query tokens, query heads, V dim] for thd);
    exact: float64 attention on the unquantized inputs; quantized_ref: float64
    attention on the quantized inputs (same layout); errors: {promotion:
    {"vs_exact": e, "vs_quantized": e, "per_head": [e...],
    "per_head_vs_quantized": [e...]}} with e a dict rel_l2, max_abs, cosine,
    alpha (the shrinkage, <o, ref>/<ref, ref>), residual (||o - alpha ref|| /
    ||ref||; rel_l2^2 = (1 - alpha)^2 + residual^2), None where not finite;
    quantized_inputs: the errors of quantized_ref against exact; plan: the
    resolved kernel (kv, dtype, qk_model, pv_model, k_block_m, k_block_n,
    splits, decode, params)."""

    def __init__(self, o, exact, qref, res):
        self.o = o
        self.exact = exact
        self.quantized_ref = qref
        self.errors = {p["promotion"]: p for p in res["promotions"]}
        self.quantized_inputs = res["quantized_inputs"]
        self.plan = {k: v for k, v in res.items() if k not in ("promotions", "quantized_inputs")}

    def __repr__(self):
        parts = ["promotion %d: rel L2 %s (alpha %s, residual %s)" % (
            p, _g(e["vs_exact"]["rel_l2"]), _g(e["vs_exact"]["alpha"]), _g(e["vs_exact"]["residual"]))
            for p, e in self.errors.items()]
        return "AttentionResult(%s; %s)" % (self.plan.get("kv"), "; ".join(parts))


def _g(x):
    return "nan" if x is None else "%.4g" % x


def _value(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (list, tuple, np.ndarray)):
        return ",".join(str(int(v)) for v in x)
    return str(x)


def _layout(name, x, layout):
    a = np.asarray(as_array(x, name))
    if a.dtype.kind != "f":
        raise Error("attention: %s must be floats (float16/32/64), got dtype %s" % (name, a.dtype))
    if a.ndim == 4 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 2:
        a = a[:, None, :]
    elif a.ndim != 3:
        raise Error("attention: %s has shape %s: want [tokens, heads, dim] (thd) or [heads, tokens, dim] (htd); 2-D is one head"
                    % (name, a.shape))
    if layout == "htd":
        a = a.transpose(1, 0, 2)
    return np.ascontiguousarray(a, dtype=np.float32)


def attention(q, k, v, *, layout="thd", positions=None, mask=None, threads=0, **params):
    """Runs the simulator on q, k, v as `lab run attention-file` does.

    q: [query tokens, query heads, d], k: [tokens, KV heads, d], v: [tokens,
    KV heads, dv] (layout "thd"; "htd" swaps the first two axes; a 2-D array
    is one head, a leading batch of 1 is dropped), floats, every element
    finite.  positions: each query's position (int, default the last tokens);
    mask: [query tokens, tokens], nonzero where a key takes part.  params
    (see PARAMS; "-" or "_" in names): format (e4m3, e5m2, bf16, f16, mxfp8,
    nvfp4, mxfp4, ...), k_scales, v_scales, scale, prefix, path, arch,
    saturation, promotions, k_block_m, k_block_n, causal, window,
    softmax_scale, splits (a number, or "auto": FA3's heuristic for sms SMs)
    and sms.  Bit for bit the attention-file experiment's O.  Raises
    fp8lab.Error on a bad shape or parameter (the Go message), cancelled by
    KeyboardInterrupt."""
    if layout not in ("thd", "htd"):
        raise Error("attention: layout %r: want 'thd' or 'htd'" % (layout,))
    vals = {}
    for name, x in params.items():
        key = name.replace("_", "-")
        if key not in PARAMS:
            raise Error("attention: unknown parameter %r (known: %s)" % (name, ", ".join(sorted(PARAMS))))
        vals[key] = _value(x)
    proms = vals.get("promotions", _value(PARAMS["promotions"]))
    proms = [int(p) for p in proms.split(",") if p.strip() != ""]
    qa, ka, va = _layout("q", q, layout), _layout("k", k, layout), _layout("v", v, layout)
    mq, qh, d = qa.shape
    n, kvh, kd = ka.shape
    if va.shape[0] != n or va.shape[1] != kvh:
        raise Error("attention: v has %d tokens x %d heads, k %d x %d: they must agree" % (va.shape[0], va.shape[1], n, kvh))
    if kd != d:
        raise Error("attention: q has head dim %d, k %d: they must agree" % (d, kd))
    dv = va.shape[2]
    pos = None
    if positions is not None:
        pa = np.asarray(as_array(positions, "positions")).reshape(-1)
        if pa.dtype.kind == "f":
            if not np.all(pa == np.trunc(pa)):
                raise Error("attention: positions must be whole numbers")
        elif pa.dtype.kind not in "iu":
            raise Error("attention: positions must be integers, got dtype %s" % pa.dtype)
        pos = np.ascontiguousarray(pa, dtype=np.int64)
    mk = None
    if mask is not None:
        ma = np.asarray(as_array(mask, "mask"))
        if ma.shape != (mq, n):
            raise Error("attention: mask has shape %s: want [%d, %d] (query tokens x tokens)" % (ma.shape, mq, n))
        mk = np.ascontiguousarray(ma != 0, dtype=np.uint8)
    o = np.empty((max(len(proms), 1), mq, qh, dv), np.float32)
    exact = np.empty((mq, qh, dv), np.float64)
    qref = np.empty((mq, qh, dv), np.float64)
    out = ctypes.c_void_p()
    p = lambda a: None if a is None else a.ctypes.data_as(ctypes.c_void_p)
    call(lib.fp8lab_attention, json.dumps(vals).encode(), p(qa), mq, qh, d, p(ka), n, kvh, p(va), dv,
         p(pos), p(mk), p(o), o.size if proms else 0, p(exact), p(qref), ctypes.byref(out), int(threads), long=True)
    res = json.loads(_lib.take_string(out))
    back = (lambda a: a.transpose(1, 0, 2)) if layout == "htd" else (lambda a: a)
    outs = {pr: back(o[i]) for i, pr in enumerate(proms)}
    return AttentionResult(outs, back(exact), back(qref), res)
