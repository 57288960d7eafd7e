"""Issue 49's team-array cases, each against numpy: `take_along_axis` of team arrays (the flat
positions were made off the team), slices of a computed team array that miss some ranks' rows
(the rank's local program refused positional intervals that differ), a strided slice through a
gather (sharpy's `a[34:82:2]`: its source rows beyond a rank's block), `where` on small shapes.
Prints one JSON line per rank.
    python trust.py"""
import json

import numpy as np

import strata
import strata.array_api as xp

w = strata.world
res = []
rng = np.random.default_rng(49)


def check(name, got, want):
    try:
        g = np.asarray(got)
        ok = g.shape == want.shape and g.dtype == want.dtype and np.array_equal(g, want)
    except Exception as e:  # noqa: BLE001 - any failure is a wrong case
        ok = False
        name = f"{name}: {type(e).__name__} {e}"
    res.append((name, ok))


# take_along_axis on team arrays (A2)
for shape, axis in [((5, 3), 0), ((5, 3), 1), ((7, 4), -1), ((6, 2, 3), 1), ((1, 5), 1)]:
    a = rng.standard_normal(shape)
    i = np.argsort(a, axis=axis)
    check(f"take_along_axis {shape} axis {axis}",
          xp.take_along_axis(xp.asarray(a, device=w), xp.asarray(i, device=w), axis=axis),
          np.take_along_axis(a, i, axis=axis))
# slices of a computed team array (A3)
a = np.arange(35.0).reshape(7, 5)
x = xp.asarray(a, device=w)
for k in (slice(-1, None), slice(6, None), slice(0, 1), slice(2, 4), slice(3, 3)):
    check(f"(x * 2)[{k}]", (x * 2.0)[k], (a * 2.0)[k])
# a strided slice: a gather from the team array through replicated indices (D1)
r = np.arange(110, dtype=np.float32)
check("a[34:82:2]", xp.asarray(r, device=w)[34:82:2], r[34:82:2])
check("a[::7]", xp.asarray(r, device=w)[::7], r[::7])
# where on small shapes (A1)
for shape in [(4, 5), (7, 5), (5, 7), (3, 5), (16, 16)]:
    a, y, z = rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(shape)
    check(f"where {shape}", xp.where(xp.asarray(a, device=w) > 0, xp.asarray(y, device=w), xp.asarray(z, device=w)),
          np.where(a > 0, y, z))
print(json.dumps({"rank": w.rank, "wrong": [n for n, ok in res if not ok]}), flush=True)
