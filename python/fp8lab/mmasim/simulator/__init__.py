"""MMA-Sim's simulator classes (mmasim.simulator.nv_ptx, mmasim.simulator.amd)."""
