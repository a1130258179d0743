"""fp8lab from Python: the bit-exact tensor-core models, narrow-format
conversions, block quantizers and the FP8 attention simulator of the Go
module github.com/fp8lab/fp8lab, through its C ABI (capi/, loaded with
ctypes), on NumPy arrays (PyTorch tensors accepted).

    import fp8lab
    d = fp8lab.chain("sm90.wgmma.e4m3.f32", a_codes, b_codes, promote=128)
    print(fp8lab.golden.verify("../shared/golden/h200/wgmma_e4m3_inside_normal.tsv"))

Submodules: fp8lab.golden (capture files verified through this API),
fp8lab.mmasim (MMA-Sim's entry points), fp8lab.lab (a client of the lab).
Every error is an fp8lab.Error carrying the Go message.
"""

from ._lib import Cancelled, Error, info
from .core import (as_array, as_codes, chain, decode, dequantize_mx, dequantize_nvfp4, encode, formats, gemm,
                   model, models, quantize_mx, quantize_nvfp4, step)
from .attention import AttentionResult, attention
from . import golden

__version__ = "0.1.0"

__all__ = ["Error", "Cancelled", "info", "models", "model", "formats", "chain", "step", "gemm", "encode",
           "decode", "quantize_mx", "dequantize_mx", "quantize_nvfp4", "dequantize_nvfp4", "attention",
           "AttentionResult", "golden", "as_array", "as_codes"]
