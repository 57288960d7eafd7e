"""The ranks trace different programs over team arrays (a shape that depends on the rank): the
run must fail on every rank with an error naming the cause, not wait in mismatched collectives.
    python diverged.py"""
import numpy as np

import strata
import strata.array_api as xp

w = strata.world
u = xp.asarray(np.ones((8, 6)), device=w)
try:
    # Rank 0 slices more than the others: different programs.
    v = u[1:, :] if w.rank == 0 else u[2:, :]
    print("sum", float(xp.sum(v * 2.0)), flush=True)
except strata.RunError as e:
    print(f"rank {w.rank} error: {e}", flush=True)
