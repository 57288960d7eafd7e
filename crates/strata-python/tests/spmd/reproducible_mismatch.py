"""`STRATA_REPRODUCIBLE=1` on rank 0 only (set before the first reduction, which reads it): the
first reduction over the block axis must end with a message naming the variable on every rank,
not wait forever. Prints one JSON line per rank.
    python reproducible_mismatch.py"""
import json
import os

import numpy as np

import strata
import strata.array_api as xp

w = strata.world
if w.rank == 0:
    os.environ["STRATA_REPRODUCIBLE"] = "1"
u = xp.asarray(np.arange(12.0).reshape(6, 2), device=w)
try:
    float(xp.sum(u))
    message = ""
except Exception as e:  # noqa: BLE001 - the message is the result
    message = str(e)
print(json.dumps({"rank": w.rank, "message": message}), flush=True)
