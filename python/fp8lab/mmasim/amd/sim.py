"""mmasim.amd.sim on fp8lab models: MFMA(arch, qualifier)."""

from .._core import Simulator

__all__ = ["MFMA"]


class MFMA(Simulator):
    """v_mfma (CDNA1, CDNA2, CDNA3)."""
    _cls = "mfma"
