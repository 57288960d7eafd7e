"""The simulation benchmark: an explicit 2-D diffusion of STEPS steps on an N×N float64 grid,
the same step text in three implementations. Prints one JSON line per rank: the loop's time,
the median step, and (Strata) the halo exchange's time and bytes per step.

    python dist_sim.py --impl numpy N STEPS              # numpy, one process
    python dist_sim.py --impl strata N STEPS             # Strata team arrays (alone or under mpirun)
    mpirun -n P python dist_sim.py --impl mpi4py N STEPS # numpy blocks + hand-written halo exchange
"""
import argparse
import json
import time

import numpy as np


def initial(n):
    x = np.linspace(0.0, 1.0, n)
    return np.exp(-50.0 * ((x[:, None] - 0.5) ** 2 + (x[None, :] - 0.5) ** 2))


def dt_of(k):
    return 0.2 + 0.04 * np.sin(k)


def step(u, dt):
    lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
    u[1:-1, 1:-1] = u[1:-1, 1:-1] + dt * lap


def run_numpy(n, steps):
    u = initial(n)
    times = []
    for k in range(steps):
        t = time.perf_counter()
        step(u, dt_of(k))
        times.append(time.perf_counter() - t)
    return {"rank": 0, "size": 1, "times": times, "mass": float(u.sum())}


def run_strata(n, steps):
    import strata
    import strata.array_api as xp

    w = strata.world
    u = xp.asarray(initial(n), device=w)
    before = w.timings()
    times = []
    for k in range(steps):
        t = time.perf_counter()
        step(u, dt_of(k))
        times.append(time.perf_counter() - t)
    after = w.timings()
    mass = float(xp.sum(u))
    return {"rank": w.rank, "size": w.size, "times": times, "mass": mass,
            "exchange_s_per_step": (after["exchange_s"] - before["exchange_s"]) / steps,
            "wait_s_per_step": (after["wait_s"] - before["wait_s"]) / steps,
            "overlap_s_per_step": (after["overlap_s"] - before["overlap_s"]) / steps,
            "halo_bytes_per_step": (after["halo_bytes"] - before["halo_bytes"]) / steps}


def run_mpi4py(n, steps):
    """What an mpi4py user writes: each rank its block of rows plus one ghost row on each
    side, exchanged with Sendrecv before every step."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    base, rem = divmod(n, size)
    lens = [base + (1 if k >= size - rem else 0) for k in range(size)]
    lo = sum(lens[:rank])
    hi = lo + lens[rank]
    g0, g1 = max(lo - 1, 0), min(hi + 1, n)  # held rows: the block and its ghosts
    u = initial(n)[g0:g1].copy()
    up, down = (rank - 1 if rank > 0 else MPI.PROC_NULL), (rank + 1 if rank < size - 1 else MPI.PROC_NULL)
    times, exch = [], []
    for k in range(steps):
        t = time.perf_counter()
        # Ghost rows from the neighbours: my first owned row up, my last owned row down.
        first, last = lo - g0, hi - 1 - g0
        if up != MPI.PROC_NULL or down != MPI.PROC_NULL:
            comm.Sendrecv(u[first], dest=up, recvbuf=u[last + 1] if down != MPI.PROC_NULL else np.empty(n),
                          source=down)
            comm.Sendrecv(u[last], dest=down, recvbuf=u[first - 1] if up != MPI.PROC_NULL else np.empty(n),
                          source=up)
        te = time.perf_counter()
        # The interior rows this rank owns (global rows 1 … n-2).
        a, b = max(lo, 1) - g0, min(hi, n - 1) - g0
        lap = u[a + 1:b + 1, 1:-1] + u[a - 1:b - 1, 1:-1] + u[a:b, 2:] + u[a:b, :-2] - 4.0 * u[a:b, 1:-1]
        u[a:b, 1:-1] = u[a:b, 1:-1] + dt_of(k) * lap
        times.append(time.perf_counter() - t)
        exch.append(te - t)
    mass = comm.allreduce(float(u[lo - g0:hi - g0].sum()))
    return {"rank": rank, "size": size, "times": times, "mass": mass,
            "exchange_s_per_step": float(np.median(exch)), "halo_bytes_per_step": 8 * n * ((up >= 0) + (down >= 0))}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--impl", choices=["numpy", "strata", "mpi4py"], required=True)
    p.add_argument("n", type=int)
    p.add_argument("steps", type=int)
    a = p.parse_args()
    t0 = time.perf_counter()
    r = {"numpy": run_numpy, "strata": run_strata, "mpi4py": run_mpi4py}[a.impl](a.n, a.steps)
    times = r.pop("times")
    r.update(loop_s=float(np.sum(times)), step_s=float(np.median(times)), first_step_s=times[0],
             run_s=time.perf_counter() - t0)
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
