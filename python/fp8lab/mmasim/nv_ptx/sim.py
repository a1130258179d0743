"""mmasim.nv_ptx.sim on fp8lab models: MMA, WGMMA, TCGen05MMA(arch,
qualifier); a block-scaled qualifier (".block16"/".block32") takes scale_A
and scale_B too."""

from .._core import Simulator

__all__ = ["MMA", "WGMMA", "TCGen05MMA"]


def _kind(qualifier, plain, scaled):
    return scaled if isinstance(qualifier, str) and ".block" in qualifier else plain


class MMA(Simulator):
    """mma.sync (block-scaled qualifiers too)."""

    def __init__(self, arch, qualifier):
        self._cls = _kind(qualifier, "mma", "mma_block_scale")
        super().__init__(arch, qualifier)


class WGMMA(Simulator):
    """wgmma.mma_async (Hopper)."""
    _cls = "wgmma"


class TCGen05MMA(Simulator):
    """tcgen05.mma (Blackwell; block-scaled qualifiers too)."""

    def __init__(self, arch, qualifier):
        self._cls = _kind(qualifier, "tcgen05mma", "tcgen05mma_block_scale")
        super().__init__(arch, qualifier)
