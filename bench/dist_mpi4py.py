"""The peer an HPC user writes by hand: the laplacian of the laplacian with numpy on each rank's
block of I and an explicit two-row halo exchange with mpi4py (Sendrecv with both neighbors).
Run under mpirun; prints one JSON line from rank 0: median seconds of the exchange and of the
compute per iteration, and the halo bytes each interior rank receives.
    mpirun -n R python bench/dist_mpi4py.py NI NJ NK RUNS"""
import json
import sys
import time

import numpy as np
from mpi4py import MPI


def lap(x):
    return x[2:, 1:-1] + x[:-2, 1:-1] + x[1:-1, 2:] + x[1:-1, :-2] - 4.0 * x[1:-1, 1:-1]


def main():
    ni, nj, nk, runs = (int(a) for a in sys.argv[1:5])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    # Block partition of the interior rows, remainders to the last ranks (as Strata).
    base, rem = divmod(ni, size)
    lens = [base + (1 if k >= size - rem else 0) for k in range(size)]
    n = lens[rank]
    h = 2
    x = np.random.default_rng(rank).random((n + 2 * h, nj + 2 * h, nk))
    up, down = rank - 1, rank + 1

    def exchange():
        reqs = []
        if up >= 0:
            reqs.append(comm.Irecv(x[:h], source=up, tag=1))
            reqs.append(comm.Isend(np.ascontiguousarray(x[h:2 * h]), dest=up, tag=2))
        if down < size:
            reqs.append(comm.Irecv(x[n + h:], source=down, tag=2))
            reqs.append(comm.Isend(np.ascontiguousarray(x[n:n + h]), dest=down, tag=1))
        MPI.Request.Waitall(reqs)

    ex, co = [], []
    for _ in range(runs + 1):
        comm.Barrier()
        t0 = time.perf_counter()
        exchange()
        t1 = time.perf_counter()
        out = lap(lap(x))
        t2 = time.perf_counter()
        ex.append(t1 - t0)
        co.append(t2 - t1)
    assert out.shape == (n, nj, nk)
    # The job's time per iteration is the slowest rank's.
    ex = comm.reduce(float(np.median(ex[1:])), op=MPI.MAX, root=0)
    co = comm.reduce(float(np.median(co[1:])), op=MPI.MAX, root=0)
    if rank == 0:
        halo = (2 if size > 2 else 1) * h * (nj + 2 * h) * nk * 8 if size > 1 else 0
        print(json.dumps({"exchange_s": ex, "compute_s": co, "halo_bytes": halo}))


if __name__ == "__main__":
    main()
