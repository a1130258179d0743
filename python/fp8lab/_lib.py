"""The ctypes binding of libfp8lab (capi/, a Go c-shared library).

Every call goes through ``call``: the Go side returns 0 (ok), 1 (an error,
its message in a buffer: raised as :class:`Error`) or 2 (cancelled).  A
panic in Go is recovered at the C boundary and comes back as an Error.
ctypes releases the GIL for the whole foreign call.  Long calls run in a
worker thread while the calling thread waits in short slices, so that
Ctrl-C (KeyboardInterrupt) reaches Python at once: the call's Go context
is then cancelled, the worker returns within milliseconds, and the
KeyboardInterrupt propagates.
"""

import ctypes
import json
import os
import threading

__all__ = ["Error", "Cancelled", "lib", "call", "info"]


class Error(Exception):
    """An error reported by fp8lab (the Go message)."""


class Cancelled(Error):
    """A call whose cancellation token was cancelled."""


_LIBNAME = "libfp8lab.so"
_here = os.path.dirname(os.path.abspath(__file__))


def _find():
    env = os.environ.get("FP8LAB_LIB")
    if env:
        return env
    p = os.path.join(_here, _LIBNAME)
    if os.path.exists(p):
        return p
    raise ImportError(
        "fp8lab: the shared library %s is missing; build it with `make python` "
        "(go build -buildmode=c-shared -o python/fp8lab/%s ./capi) or set FP8LAB_LIB"
        % (p, _LIBNAME))


lib = ctypes.CDLL(_find())

_c = ctypes
_p = ctypes.c_void_p
_i64 = ctypes.c_int64
_int = ctypes.c_int
_str = ctypes.c_char_p
_err = [ctypes.c_char_p, ctypes.c_int64]

lib.fp8lab_free.argtypes = [_p]
lib.fp8lab_free.restype = None
lib.fp8lab_info.argtypes = [ctypes.POINTER(_p)] + _err
lib.fp8lab_token_new.argtypes = []
lib.fp8lab_token_new.restype = _i64
lib.fp8lab_token_cancel.argtypes = [_i64]
lib.fp8lab_token_cancel.restype = None
lib.fp8lab_token_free.argtypes = [_i64]
lib.fp8lab_token_free.restype = None
lib.fp8lab_model_chain.argtypes = [_str, _p, _p, _int, _i64, _i64, _i64, _int, _p, _p, _i64, _int, _int, _i64] + _err
lib.fp8lab_instr_chain.argtypes = [_str, _p, _p, _int, _i64, _i64, _p, _p, _i64, _p, _p, _i64, _int, _int, _int, _i64] + _err
lib.fp8lab_encode.argtypes = [_str, _p, _i64, _p, _int, _int] + _err
lib.fp8lab_decode.argtypes = [_str, _p, _i64, _p] + _err
lib.fp8lab_quantize_mx.argtypes = [_str, _int, _p, _i64, _p, _p, _i64] + _err
lib.fp8lab_dequantize_mx.argtypes = [_str, _p, _i64, _p, _i64, _p] + _err
lib.fp8lab_quantize_nvfp4.argtypes = [_p, _i64, ctypes.c_float, _p, _p, _i64, ctypes.POINTER(ctypes.c_float)] + _err
lib.fp8lab_dequantize_nvfp4.argtypes = [_p, _i64, _p, _i64, ctypes.c_float, _p] + _err
lib.fp8lab_attention.argtypes = ([_str, _p, _i64, _i64, _i64, _p, _i64, _i64, _p, _i64, _p, _p, _p, _i64, _p, _p,
                                  ctypes.POINTER(_p), _int, _i64] + _err)
for _f in ("fp8lab_info", "fp8lab_model_chain", "fp8lab_instr_chain", "fp8lab_encode", "fp8lab_decode",
           "fp8lab_quantize_mx", "fp8lab_dequantize_mx", "fp8lab_quantize_nvfp4", "fp8lab_dequantize_nvfp4",
           "fp8lab_attention"):
    getattr(lib, _f).restype = _int

_ERRLEN = 8192

# How often a waiting thread wakes to let a KeyboardInterrupt in (seconds).
_POLL = 0.05


def call(fn, *args, long=None):
    """Calls fn(*args, [token], errbuf, errlen) and raises on an error.

    long=None: fn takes no token.  long=False: fn takes a cancellation token
    (0, none: a short call).  long=True: fn gets a fresh token and runs in a
    worker thread; a KeyboardInterrupt in the calling thread cancels it and
    is re-raised once the call has returned (within milliseconds)."""
    err = ctypes.create_string_buffer(_ERRLEN)
    if not long:
        st = fn(*args, err, _ERRLEN) if long is None else fn(*args, 0, err, _ERRLEN)
        return _check(st, err)
    token = lib.fp8lab_token_new()
    box = {}

    def work():
        try:
            box["st"] = fn(*args, token, err, _ERRLEN)
        except BaseException as e:  # ctypes argument errors
            box["exc"] = e

    t = threading.Thread(target=work, name="fp8lab-call", daemon=True)
    try:
        t.start()
        try:
            while t.is_alive():
                t.join(_POLL)
        except KeyboardInterrupt:
            lib.fp8lab_token_cancel(token)
            t.join()
            raise
    finally:
        if not t.is_alive():
            lib.fp8lab_token_free(token)
    if "exc" in box:
        raise box["exc"]
    return _check(box["st"], err)


def _check(st, err):
    if st == 0:
        return
    msg = err.value.decode("utf-8", "replace")
    if st == 2:
        raise Cancelled(msg)
    raise Error(msg)


def take_string(p):
    """Returns the C string p (from Go) as str and frees it."""
    try:
        return ctypes.string_at(p).decode("utf-8")
    finally:
        lib.fp8lab_free(p)


_info = None


def info():
    """The build, every model and instruction, every format (a dict)."""
    global _info
    if _info is None:
        out = _p()
        call(lib.fp8lab_info, ctypes.byref(out))
        _info = json.loads(take_string(out))
    return _info
