"""mmasim.simulator.amd's class on fp8lab models: mfma(arch, qualifier)."""

from .._core import Simulator

__all__ = ["mfma"]


class mfma(Simulator):
    """v_mfma (CDNA1, CDNA2, CDNA3)."""
    _cls = "mfma"
