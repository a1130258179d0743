"""MMA-Sim's mmasim.amd (its README's layout)."""
