"""MMA-Sim's entry points on fp8lab's bit-exact models.

A test written against MMA-Sim runs on fp8lab by changing its import:

    from mmasim.nv_ptx.sim import MMA            ->  from fp8lab.mmasim.nv_ptx.sim import MMA
    from mmasim.simulator.nv_ptx import wgmma    ->  from fp8lab.mmasim.simulator.nv_ptx import wgmma

with NumPy arrays where MMA-Sim takes tensors (or the same torch tensors when
PyTorch is installed).  Both of MMA-Sim's layouts are here:
fp8lab.mmasim.nv_ptx.sim (MMA, WGMMA, TCGen05MMA) and fp8lab.mmasim.amd.sim
(MFMA), as MMA-Sim's README shows them; fp8lab.mmasim.simulator.nv_ptx (mma,
mma_block_scale, wgmma, tcgen05mma, tcgen05mma_block_scale) and
fp8lab.mmasim.simulator.amd (mfma), as MMA-Sim c785138 names its classes.
COVERED lists the (class, architecture, qualifier) triples fp8lab models;
any other raises NotCovered.
"""

from ._core import COVERED, NotCovered, Simulator, covered

__all__ = ["COVERED", "NotCovered", "Simulator", "covered"]
