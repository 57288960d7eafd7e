"""Edge cases of team arrays, each against numpy: more ranks than rows, an integer 1-D stencil,
empty arrays, a 3-D assignment, a step slice (computed whole) and a mean. Prints one JSON line
per rank.
    python edges.py"""
import json

import numpy as np

import strata
import strata.array_api as xp

w = strata.world
res = []


def check(name, got, want):
    g = np.asarray(got)
    ok = g.shape == want.shape and g.dtype == want.dtype and np.array_equal(g, want)
    res.append((name, ok))


# more ranks than rows
a = np.arange(3.0)
u = xp.asarray(a, device=w); v = a.copy()
u[1:] = u[1:] + u[:-1]; v[1:] = v[1:] + v[:-1]
check("3 rows", u, v)
# 1-D stencil with ints
b = np.arange(10, dtype=np.int32)
x = xp.asarray(b, device=w); y = b.copy()
for k in range(3):
    x[1:-1] = x[2:] + x[:-2] - x[1:-1]
    y[1:-1] = y[2:] + y[:-2] - y[1:-1]
check("int32 1-D", x, y)
# empty
e = xp.zeros((0, 4), device=w)
check("empty", e, np.zeros((0, 4)))
e2 = xp.zeros((4, 0), device=w)
e2[1:3] = 1.0
check("empty cols", e2, np.zeros((4, 0)))
# 3-D
c = np.random.default_rng(0).random((6, 5, 4))
t = xp.asarray(c, device=w); d = c.copy()
t[1:-1, :, 1:] = t[2:, :, 1:] - t[:-2, :, :-1]
d[1:-1, :, 1:] = d[2:, :, 1:] - d[:-2, :, :-1]
check("3-D", t, d)
# negative step slice (falls back to whole-array compute)
check("step -1", t[::-1], d[::-1])
# a mean over the block axis: each rank sums its rows and the partials are combined, so it
# agrees with numpy to rounding
m = np.asarray(xp.mean(t, axis=0))
res.append(("mean", m.shape == (5, 4) and np.allclose(m, np.mean(d, axis=0), rtol=1e-14, atol=0)))
# two team arrays whose blocks differ (34 and 32 rows: at 4 ranks a rank reads 7 of its 8 rows
# of the smaller one)
f, g = np.random.default_rng(1).random((34, 3)), np.random.default_rng(2).random((32, 3))
tf, tg = xp.asarray(f, device=w), xp.asarray(g, device=w)
check("blocks of two sizes", tf[1:-1] + tg, f[1:-1] + g)
check("blocks of two sizes, the other way", tg[:-2] * tf[2:-2], g[:-2] * f[2:-2])
# cumulative sums and products along the block axis (integers: each rank's carry by an
# exclusive scan over the ranks; the products wrap as numpy's do)
c = (np.arange(7 * 3, dtype=np.int64).reshape(7, 3) * 7919) % 13 - 6
tc = xp.asarray(c, device=w)
check("cumulative_sum int64", xp.cumulative_sum(tc, axis=0), np.cumsum(c, axis=0))
check("cumulative_prod int64", xp.cumulative_prod(tc, axis=0), np.cumprod(c, axis=0))
c8 = c.astype(np.int8)
check("cumulative_sum int8", xp.cumulative_sum(xp.asarray(c8, device=w), axis=0, dtype=xp.int8),
      np.cumsum(c8, axis=0, dtype=np.int8))
print(json.dumps({"rank": w.rank, "wrong": [n for n, ok in res if not ok]}), flush=True)
