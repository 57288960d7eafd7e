"""The peer an HPC user writes by hand for the distributed nabla: each rank owns a block of the
vertices and of the edges (block partition, remainders to the last ranks, as Strata); at setup
it works out from the tables which edges its vertices reach and which vertices those edges
reach, and which of them other ranks own (the communication plan: one Alltoall of counts and
one Alltoallv of the requested vertex ids); each iteration exchanges the needed `pp` values with
one Alltoallv and computes with numpy. The static inputs (tables, `s_m`, `sign`, `vol`) are read
once at setup from the .npy files. Run under mpirun; prints one JSON line from rank 0.
    mpirun -n R python bench/dist_mpi4py_nabla.py DIR RUNS"""
import json
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI


def blocks(n, size):
    base, rem = divmod(n, size)
    lens = [base + (1 if k >= size - rem else 0) for k in range(size)]
    return np.concatenate([[0], np.cumsum(lens)])


def main():
    d, runs = Path(sys.argv[1]), int(sys.argv[2])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    load = lambda name: np.load(d / f"{name}.npy", mmap_mode="r")  # noqa: E731
    e2v, v2e = load("e2v"), load("v2e")
    nv, ne = v2e.shape[0], e2v.shape[0]
    vb = blocks(nv, size)
    v0, v1 = vb[rank], vb[rank + 1]
    # Setup: the edges the owned vertices reach, the vertices those edges reach.
    my_v2e = np.array(v2e[v0:v1])
    mask = my_v2e >= 0
    edges = np.unique(my_v2e[mask])
    my_e2v = np.array(e2v[edges])
    verts = np.unique(my_e2v)
    remote = verts[(verts < v0) | (verts >= v1)]
    owner = np.searchsorted(vb, remote, side="right") - 1
    want = [remote[owner == k] for k in range(size)]
    counts = np.array([len(w) for w in want], dtype=np.int64)
    asked_counts = np.empty(size, dtype=np.int64)
    comm.Alltoall(counts, asked_counts)
    asked = np.empty(asked_counts.sum(), dtype=np.int64)
    comm.Alltoallv([np.concatenate(want).astype(np.int64), counts], [asked, asked_counts])
    pp_owned = np.array(load("pp")[v0:v1])
    s = [np.array(load(n)[edges]) for n in ("s_mxx", "s_myy")]
    sign, vol = np.array(load("sign")[v0:v1]), np.array(load("vol")[v0:v1])
    # Local numbering: owned vertices first, then the remote ones in owner order.
    local_ids = np.concatenate([np.arange(v0, v1), np.concatenate(want)])
    order = np.argsort(local_ids)
    lookup = lambda g: order[np.searchsorted(local_ids[order], g)]  # noqa: E731
    e_local = lookup(my_e2v)
    idx = np.where(mask, np.searchsorted(edges, np.where(mask, my_v2e, edges[0])), 0)
    recv = np.empty(counts.sum())

    def exchange():
        send = pp_owned[asked - v0]
        comm.Alltoallv([send, asked_counts], [recv, counts])
        return np.concatenate([pp_owned, recv])

    ex, co = [], []
    for _ in range(runs + 1):
        comm.Barrier()
        t0 = time.perf_counter()
        pp = exchange()
        t1 = time.perf_counter()
        avg = 0.5 * (pp[e_local[:, 0]] + pp[e_local[:, 1]])
        out = [np.where(mask, (sm * avg)[idx] * sign, 0.0).sum(axis=1) / vol for sm in s]
        t2 = time.perf_counter()
        ex.append(t1 - t0)
        co.append(t2 - t1)
    np.save(d / f"peer_x_{rank}.npy", out[0])
    ex = comm.reduce(float(np.median(ex[1:])), op=MPI.MAX, root=0)
    co = comm.reduce(float(np.median(co[1:])), op=MPI.MAX, root=0)
    received = comm.reduce(int(counts.sum() * 8), op=MPI.MAX, root=0)
    if rank == 0:
        print(json.dumps({"exchange_s": ex, "compute_s": co, "halo_bytes": received}))


if __name__ == "__main__":
    main()
