"""A diffusion time loop on team arrays, checked against numpy after every step (bit for bit:
nothing reassociates). Run under `mpirun -n P` (or alone); prints one JSON line per rank.
    python diffusion.py N M STEPS"""
import json
import os
import sys

import numpy as np

import strata
import strata.array_api as xp


def progress_thread():
    """Whether this process runs the MPI layer's progress thread (None where /proc is absent)."""
    tasks = "/proc/self/task"
    if not os.path.isdir(tasks):
        return None
    names = []
    for t in os.listdir(tasks):
        try:
            with open(f"{tasks}/{t}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return "strata-progress" in names


def main():
    n, m, steps = (int(a) for a in sys.argv[1:4])
    a0 = np.random.default_rng(7).random((n, m))
    u = xp.asarray(a0, device=strata.world)
    w = a0.copy()
    before = xp.cache_stats()
    timed = strata.world.timings()
    mismatches = []
    for step in range(steps):
        dt = 0.05 + 0.0002 * (step % 100)  # varies every step; stable (dt < 1/4)
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + dt * lap
        lap_w = w[2:, 1:-1] + w[:-2, 1:-1] + w[1:-1, 2:] + w[1:-1, :-2] - 4.0 * w[1:-1, 1:-1]
        w[1:-1, 1:-1] = w[1:-1, 1:-1] + dt * lap_w
        # Every step, gathered on every rank (an explicit, collective read).
        if not np.array_equal(np.asarray(u), w):
            mismatches.append(step)
    after = xp.cache_stats()
    overlap_s = strata.world.timings()["overlap_s"] - timed["overlap_s"]
    rows = strata._strata.spmd.local_rows(u._x)
    total = float(xp.sum(u))
    print(json.dumps({
        "rank": strata.world.rank,
        "size": strata.world.size,
        "rows": rows,
        "mismatches": mismatches,
        "sum_error": abs(total - float(np.sum(w))) / abs(float(np.sum(w))),
        "misses": after["misses"] - before["misses"],
        "distributed_runs": after["distributed_runs"] - before["distributed_runs"],
        "device": repr(u.device),
        "overlap_s": overlap_s,
        "progress_thread": progress_thread(),
    }), flush=True)


if __name__ == "__main__":
    main()
