"""α-β model parameters of this machine's MPI, measured with mpi4py on 2 ranks: ping-pong
half round trips for message sizes from 8 B to 8 MiB (α: the latency of the smallest message,
β: seconds per byte from the largest), and the latency of an 8-byte allreduce. Prints one JSON
line from rank 0.
    mpirun -n 2 python bench/dist_alpha_beta.py"""
import json
import time

import numpy as np
from mpi4py import MPI


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    other = 1 - rank
    sizes = [8, 1024, 65536, 1 << 20, 8 << 20]
    half = {}
    for s in sizes:
        buf = np.zeros(s, dtype=np.uint8)
        reps = 200 if s <= 65536 else 20
        ts = []
        for _ in range(reps):
            comm.Barrier()
            t0 = time.perf_counter()
            if rank == 0:
                comm.Send(buf, dest=other)
                comm.Recv(buf, source=other)
            else:
                comm.Recv(buf, source=other)
                comm.Send(buf, dest=other)
            ts.append((time.perf_counter() - t0) / 2)
        half[s] = float(np.median(ts))
    red = []
    v = np.ones(1)
    for _ in range(500):
        comm.Barrier()
        t0 = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, v)
        red.append(time.perf_counter() - t0)
    if rank == 0:
        alpha = half[8]
        beta = (half[8 << 20] - half[1 << 20]) / ((8 << 20) - (1 << 20))
        print(json.dumps({"alpha_s": alpha, "beta_s_per_byte": beta, "half_round_trip_s": half,
                          "allreduce_8B_s": float(np.median(red))}))


if __name__ == "__main__":
    main()
