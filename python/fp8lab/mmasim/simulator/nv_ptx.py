"""mmasim.simulator.nv_ptx's classes on fp8lab models: mma, mma_block_scale,
wgmma, tcgen05mma, tcgen05mma_block_scale (arch, qualifier) -> sim(A, B, C[,
scale_A, scale_B])."""

from .._core import Simulator

__all__ = ["mma", "mma_block_scale", "wgmma", "tcgen05mma", "tcgen05mma_block_scale"]


class mma(Simulator):
    """mma.sync.aligned (Volta, Ampere, Ada Lovelace, Hopper, Blackwell)."""
    _cls = "mma"


class mma_block_scale(Simulator):
    """mma.sync ... block_scale (RTX Blackwell: mxf8f6f4, mxf4, mxf4nvf4)."""
    _cls = "mma_block_scale"


class wgmma(Simulator):
    """wgmma.mma_async (Hopper)."""
    _cls = "wgmma"


class tcgen05mma(Simulator):
    """tcgen05.mma (Blackwell: kind::f8f6f4, f16, tf32)."""
    _cls = "tcgen05mma"


class tcgen05mma_block_scale(Simulator):
    """tcgen05.mma ... block_scale (Blackwell: mxf8f6f4, mxf4, mxf4nvf4)."""
    _cls = "tcgen05mma_block_scale"
