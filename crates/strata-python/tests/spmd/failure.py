"""Rank 1 raises after a collective step; the job must end (not hang) with the rank named.
    python failure.py"""
import numpy as np

import strata
import strata.array_api as xp

u = xp.asarray(np.ones((8, 8)), device=strata.world)
print("sum", float(xp.sum(u)), flush=True)
if strata.world.rank == 1:
    raise RuntimeError("rank one gives up")
# The others wait in the next collective for the rank that is gone.
print("sum again", float(xp.sum(u * 2.0)), flush=True)
