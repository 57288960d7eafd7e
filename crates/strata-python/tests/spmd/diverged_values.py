"""The ranks trace one program over team arrays with values that differ between them (a Python
number): the run must fail on every rank with an error naming the cause, never
compute a mix of the ranks' programs, never hang.
    python diverged_values.py"""
import numpy as np

import strata
import strata.array_api as xp

w = strata.world
x = xp.asarray(np.arange(12.0).reshape(6, 2), device=w)
for name, make in [
    ("scalar", lambda: xp.sum(x * (2.0 if w.rank == 0 else 3.0))),
    ("integer", lambda: xp.sum(x + (1 if w.rank == 0 else 2))),
]:
    try:
        print(f"rank {w.rank} {name} sum {float(make())}", flush=True)
    except strata.RunError as e:
        print(f"rank {w.rank} {name} error: {e}", flush=True)
# The same values everywhere still run.
print(f"rank {w.rank} same sum {float(xp.sum(x * 2.0))}", flush=True)
