"""`A @ B` of two team operands (each partitioned by its first axis) against numpy: matrix ·
matrix, matrix · vector and vector · matrix, in float32, float64, complex64 and complex128 and
mixed dtypes (promoted as the standard says), for shapes with fewer rows or contracted rows
than ranks. Each rank computes its rows of the product from its block of `A` and the blocks of
`B` broadcast one after another (a one-dimensional SUMMA; vector · matrix sums the ranks'
partial products), so no rank gathers an operand (`gathered_bytes` stays 0) and the product
stays on the team. Prints one JSON line per rank.
    python matmul.py"""
import json, numpy as np, strata, strata.array_api as xp
w = strata.world
wrong = []
gathered = 0
checked = 0
TOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}


def values(rng, shape, dtype):
    v = rng.random(shape) - 0.5
    if dtype.startswith("complex"):
        v = v + 1j * (rng.random(shape) - 0.5)
    return v.astype(dtype)


for (m, k, n) in [(8, 5, 3), (2, 7, 4), (13, 1, 6), (5, 16, 9), (40, 33, 17)]:
    for da, db in [("float64", "float64"), ("float32", "float32"), ("complex128", "complex128"),
                   ("complex64", "complex64"), ("float32", "complex128"), ("float64", "float32")]:
        rng = np.random.default_rng(m * 100 + k)
        for sa, sb in [((m, k), (k, n)), ((m, k), (k,)), ((k,), (k, n))]:
            a, b = values(rng, sa, da), values(rng, sb, db)
            A, B = xp.asarray(a, device=w), xp.asarray(b, device=w)
            before = w.timings()["gathered_bytes"]
            C = A @ B
            D = C + 1   # the product stays on the team
            gathered += w.timings()["gathered_bytes"] - before
            want = a @ b
            got = np.asarray(D) - 1
            tol = TOL[str(want.dtype)]
            checked += 1
            if not (C.device == w and got.shape == want.shape and got.dtype == want.dtype
                    and np.allclose(got, want, rtol=tol, atol=tol)):
                wrong.append([sa, sb, da, db, str(got.dtype), float(np.abs(got - want).max())])
print(json.dumps({"rank": w.rank, "wrong": wrong, "checked": checked, "gathered_bytes": gathered}), flush=True)
