"""Rank 1 is killed by SIGKILL (what the out-of-memory killer sends) after a collective step,
while the others wait for it in the next one.
    python killed.py"""
import os
import signal

import numpy as np

import strata
import strata.array_api as xp

u = xp.asarray(np.ones((8, 8)), device=strata.world)
print("sum", float(xp.sum(u)), flush=True)
if strata.world.rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
print("sum again", float(xp.sum(u * 2.0)), flush=True)
