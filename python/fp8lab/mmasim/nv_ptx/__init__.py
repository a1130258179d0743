"""MMA-Sim's mmasim.nv_ptx (its README's layout)."""
