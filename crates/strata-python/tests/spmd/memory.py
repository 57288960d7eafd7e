"""Peak resident memory of each rank over a diffusion loop on an N×M float64 team array:
prints one JSON line per rank with the peak before the array exists (the fixed overhead:
Python, numpy, the extension, MPI) and after the loop.
    python memory.py N M STEPS"""
import json
import resource
import sys

import numpy as np

import strata
import strata.array_api as xp


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    n, m, steps = (int(a) for a in sys.argv[1:4])
    w = strata.world
    # A warm-up on a small array compiles the step and starts MPI: fixed overhead.
    for size in ((16, m), (n, m)):
        u = xp.zeros(size, device=w)
        u[1:-1, 1:-1] = xp.full((size[0] - 2, m - 2), 1.0, device=w)
        for step in range(steps if size[0] == n else 2):
            lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
            u[1:-1, 1:-1] = u[1:-1, 1:-1] + (0.1 + 0.001 * step) * lap
        if size[0] != n:
            base = peak_mb()
    check = float(xp.sum(u))
    print(json.dumps({"rank": w.rank, "size": w.size, "base_mb": base, "peak_mb": peak_mb(),
                      "global_mb": n * m * 8 / 2**20, "sum": check}), flush=True)


if __name__ == "__main__":
    main()
