"""Resident memory of each rank over a diffusion loop on an N×M float64 team array, measured
from a baseline taken after a small warm-up (Python, numpy, the extension, MPI and the compiled
step are the fixed overhead): the growth of the peak (`VmHWM`, reset through
/proc/self/clear_refs) while the array is made and while the loop runs. One JSON line per rank.
    python memory.py N M STEPS"""
import ctypes
import json
import sys

# Transparent huge pages off for this process (PR_SET_THP_DISABLE), before anything allocates:
# the heaps then grow by 4 KiB pages, and the figures below measure the data a rank holds, not
# where a 2 MiB page boundary happens to fall in its allocator's heap.
ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0)

import strata  # noqa: E402
import strata.array_api as xp  # noqa: E402


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def step(u, k):
    lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
    u[1:-1, 1:-1] = u[1:-1, 1:-1] + (0.05 + 0.0001 * k) * lap


def main():
    n, m, steps = (int(a) for a in sys.argv[1:4])
    w = strata.world
    small = xp.zeros((16, m), device=w)
    small[1:-1, 1:-1] = 1.0
    for k in range(2):
        step(small, k)
    base = status("VmRSS")
    reset_peak()
    u = xp.zeros((n, m), device=w)
    u[1:-1, 1:-1] = xp.full((n - 2, m - 2), 1.0, device=w)
    made = status("VmHWM") - base
    reset_peak()
    for k in range(steps):
        step(u, k)
    loop = status("VmHWM") - base
    print(json.dumps({"rank": w.rank, "size": w.size, "block_mb": n * m * 8 / 2**20 / w.size,
                      "made_mb": made, "loop_mb": loop, "sum": float(xp.sum(u))}), flush=True)


if __name__ == "__main__":
    main()
