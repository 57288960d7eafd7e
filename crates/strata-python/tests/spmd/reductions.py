"""Reductions of team arrays against numpy: sum, prod, max, min, mean, var, std, any, all over
every axis, axis 0 (the block axis), the other axes, and with keepdims, for f64, int64 and bool.
Each rank folds its own rows and the ranks' partials are combined (a collective): no block of
the input is gathered, which the rank's `gathered_bytes` shows for every result the ranks hold
whole (reductions over the block axis, `var`/`std` included: the replicated mean is stretched
by each rank for its rows). A reduction that keeps the block axis is a team array, whose
`np.asarray` gathers it; with `keepdims` or inside `var`/`std` such a reduced result (not the
input) is gathered to be reshaped or stretched: not counted. Float sums over the block axis are
reassociated by rank, so they match numpy to rounding (with `STRATA_REPRODUCIBLE=1` in an order
that does not depend on the rank count: `digest` shows their bits); integer, boolean and
extreme results are exact. Prints one JSON line per rank.
    python reductions.py"""
import hashlib
import json

import numpy as np

import strata
import strata.array_api as xp

w = strata.world
rng = np.random.default_rng(5)
data = {
    "f64": rng.random((13, 5, 3)) - 0.5,
    "i64": rng.integers(-9, 10, (13, 5, 3)),
    "bool": rng.random((13, 5, 3)) < 0.7,
}
wrong = []


def check(name, got, want, exact):
    global plain_gathered
    b = w.timings()["gathered_bytes"]
    g = np.asarray(got)
    # `np.asarray` of a team result gathers it: not the reduction's doing.
    if not (isinstance(got, float) or got.device == w):
        plain_gathered += w.timings()["gathered_bytes"] - b
    want = np.asarray(want)
    same = g.shape == want.shape and g.dtype == want.dtype
    if same:
        same = np.array_equal(g, want) if exact else np.allclose(g, want, rtol=1e-13, atol=1e-15)
    if not same:
        wrong.append(f"{name}: {g!r} vs {want!r}")


plain_gathered = 0
for dtype, a in data.items():
    t = xp.asarray(a, device=w)
    for axis in [None, 0, 1, (0, 2), (1, 2)]:
        for keepdims in [False, True]:
            kw = {"axis": axis, "keepdims": keepdims}
            name = f"{dtype} axis={axis} keepdims={keepdims}"
            if dtype == "bool":
                check("any " + name, xp.any(t, **kw), np.any(a, **kw), True)
                check("all " + name, xp.all(t, **kw), np.all(a, **kw), True)
                continue
            exact = dtype == "i64"
            check("sum " + name, xp.sum(t, **kw), np.sum(a, **kw), exact)
            check("max " + name, xp.max(t, **kw), np.max(a, **kw), True)
            check("min " + name, xp.min(t, **kw), np.min(a, **kw), True)
            if dtype == "f64":
                check("prod " + name, xp.prod(t + 1.0, **kw), np.prod(a + 1.0, **kw), False)
                check("mean " + name, xp.mean(t, **kw), np.mean(a, **kw), False)
                check("var " + name, xp.var(t, **kw), np.var(a, **kw), False)
                check("std " + name, xp.std(t, **kw), np.std(a, **kw), False)
# A reduction of a computed team array (a stencil step's result) in a loop.
u = xp.asarray(data["f64"][:, :, 0], device=w)
v = data["f64"][:, :, 0].copy()
for k in range(5):
    u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (u[2:, 1:-1] + u[:-2, 1:-1] - 2.0 * u[1:-1, 1:-1])
    v[1:-1, 1:-1] = v[1:-1, 1:-1] + 0.1 * (v[2:, 1:-1] + v[:-2, 1:-1] - 2.0 * v[1:-1, 1:-1])
    check(f"step {k} total", float(xp.sum(u)), float(np.sum(v)), False)
    check(f"step {k} column maxima", xp.max(u, axis=0), np.max(v, axis=0), True)
# The bits of float results over the block axis (the same at every rank count only with
# `STRATA_REPRODUCIBLE=1`).
t = xp.asarray(data["f64"], device=w)
bits = [np.asarray(r).tobytes() for r in (xp.sum(t), xp.sum(t, axis=0), xp.mean(t, axis=(0, 2)), xp.var(t))]
digest = hashlib.sha256(b"".join(bits)).hexdigest()
print(json.dumps({"rank": w.rank, "wrong": wrong, "gathered_bytes": plain_gathered, "digest": digest}), flush=True)
