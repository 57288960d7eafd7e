"""`A @ B` of two team matrices (each partitioned by rows) against numpy, for shapes with fewer
rows or contracted rows than ranks: each rank computes its rows of the product from its block
of `A` and the blocks of `B` broadcast one after another (a one-dimensional SUMMA), so no rank
gathers an operand (`gathered_bytes` stays 0) and the product stays on the team. Prints one
JSON line per rank.
    python matmul.py"""
import json, numpy as np, strata, strata.array_api as xp
w = strata.world
wrong = []
gathered = 0
for (m, k, n) in [(8, 5, 3), (2, 7, 4), (13, 1, 6), (5, 16, 9), (40, 33, 17)]:
    rng = np.random.default_rng(m * 100 + k)
    a, b = rng.random((m, k)) - 0.5, rng.random((k, n)) - 0.5
    A, B = xp.asarray(a, device=w), xp.asarray(b, device=w)
    before = w.timings()["gathered_bytes"]
    C = A @ B
    D = C + 1.0   # the product stays on the team
    gathered += w.timings()["gathered_bytes"] - before
    got = np.asarray(D) - 1.0
    if not (C.device == w and got.shape == (m, n) and np.allclose(got, a @ b, rtol=1e-12, atol=1e-14)):
        wrong.append([m, k, n, float(np.abs(got - a @ b).max())])
print(json.dumps({"rank": w.rank, "wrong": wrong, "gathered_bytes": gathered}), flush=True)
