"""Resident fields from Python: one entry of a `.strata` program over `team = world` types
called CALLS times in a loop, its inputs made once — team arrays under mpirun (each rank holds
its rows; plan, inspector and kernel made at the first call), numpy arrays in one process.
Prints one JSON line per rank: the first call's time and the median of the others.

    python dist_resident.py PROGRAM ENTRY INPUTS_DIR CALLS              # one process (numpy)
    mpirun -n P python dist_resident.py PROGRAM ENTRY INPUTS_DIR CALLS  # team arrays
"""
import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import strata
import strata.array_api as xp


def main():
    p = argparse.ArgumentParser()
    p.add_argument("program")
    p.add_argument("entry")
    p.add_argument("inputs", help="a folder of NAME.npy, one per input of the entry")
    p.add_argument("calls", type=int)
    a = p.parse_args()
    m = strata.load(a.program)
    entry = getattr(m, a.entry)
    launched = "OMPI_COMM_WORLD_SIZE" in os.environ
    w = strata.world
    args = {}
    for name in entry._inputs:
        v = np.load(Path(a.inputs) / f"{name}.npy")
        args[name] = xp.asarray(v, device=w) if launched else v
    times = []
    for _ in range(a.calls):
        t = time.perf_counter()
        entry(**args)
        times.append(time.perf_counter() - t)
    rest = times[1:] or times
    print(json.dumps({"rank": w.rank, "size": w.size, "first_s": times[0], "step_s": float(np.median(rest)),
                      "prepared": w.timings()["prepared"]}), flush=True)


if __name__ == "__main__":
    main()
