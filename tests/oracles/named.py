"""Seed 000's named-dimension semantics in numpy, written independently of Strata: the oracle
the random-program generator (crates/strata-codegen/tests/differential.rs) translates each of
its programs into.

A value is an `NV`: its dimensions `(name, start, stop)` in order and an array with one axis per
dimension. Elementwise operations broadcast by name (the union of the dimensions in order of
appearance, each interval the intersection); shifts move an interval by `-offset`; a neighbor
reduction folds, for every destination point, over the neighbors in order from `init`,
skipping the table's `-1` entries; a scan runs in order along its dimension.
"""

import numpy as np


class NV:
    def __init__(self, dims, a):
        self.dims = [tuple(d) for d in dims]
        self.a = np.asarray(a)
        assert self.a.shape == tuple(e - s for _, s, e in self.dims), (self.dims, self.a.shape)


def _names(v):
    return [d for d, _, _ in v.dims]


def _common(vs):
    out = []
    for v in vs:
        for d, s, e in v.dims:
            for i, (d2, s2, e2) in enumerate(out):
                if d2 == d:
                    out[i] = (d, max(s, s2), min(e, e2))
                    break
            else:
                out.append((d, s, e))
    return out


def _view(v, dims):
    """`v` over `dims` (a superset of its dimensions with narrower intervals), broadcast."""
    names = _names(v)
    idx = []
    for d, s, e in v.dims:
        _, cs, ce = next(x for x in dims if x[0] == d)
        idx.append(slice(cs - s, ce - s))
    a = v.a[tuple(idx)]
    order = [names.index(d) for d, _, _ in dims if d in names]
    a = np.transpose(a, order)
    for axis, (d, _, _) in enumerate(dims):
        if d not in names:
            a = np.expand_dims(a, axis)
    return np.broadcast_to(a, tuple(e - s for _, s, e in dims))


def elementwise(f, *vs):
    dims = _common(vs)
    return NV(dims, f(*[_view(v, dims) for v in vs]))


BINARY = {
    "plus": np.add,
    "minus": np.subtract,
    "multiplies": np.multiply,
    "divides": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "less": np.less,
    "greater": np.greater,
    "eq": np.equal,
    "ne": np.not_equal,
}
UNARY = {"neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "floor": np.floor}


def binary(op, x, y):
    return elementwise(BINARY[op], x, y)


def unary(op, x):
    return NV(x.dims, UNARY[op](x.a))


def select(c, t, f):
    return elementwise(np.where, c, t, f)


def cast(x, to):
    if to == "f64":
        return NV(x.dims, x.a.astype(np.float64))
    # Saturating, NaN to 0 (Rust's `as`).
    r = np.trunc(x.a)
    big, small = r >= 2.0**63, r < -(2.0**63)
    safe = np.where(np.isnan(r) | big | small, 0.0, r).astype(np.int64)
    out = np.where(big, np.iinfo(np.int64).max, np.where(small, np.iinfo(np.int64).min, safe))
    return NV(x.dims, out.astype(np.int64))


def shift(x, dim, offset):
    return NV([(d, s - offset, e - offset) if d == dim else (d, s, e) for d, s, e in x.dims], x.a)


def subset(x, dim, start, stop):
    idx = tuple(slice(start - s, stop - s) if d == dim else slice(None) for d, s, e in x.dims)
    return NV([(d, start, stop) if d == dim else (d, s, e) for d, s, e in x.dims], x.a[idx])


def pick(k, a, b):
    """`tuple_get(make_tuple(a, b), index = k)`."""
    return elementwise(lambda x, y: x if k == 0 else y, a, b)


STEPS = {
    "sum": lambda acc, x, w: acc + x,
    "count": lambda acc, x, w: acc + acc.dtype.type(1),
    "max": lambda acc, x, w: np.maximum(acc, x),
    "min": lambda acc, x, w: np.minimum(acc, x),
    "mac": lambda acc, x, w: acc + x * w,
}


def reduce_table(x, src, dst, table, step, init, weight=None):
    """Each destination point of `dst` (name, start, stop) folds `step` over its neighbors in
    `table` (coordinates of `x`'s dimension `src`, -1 skipped) from `init`; `weight` is
    `(array, start)` on the neighbor counter, whose interval the fold intersects."""
    i = _names(x).index(src)
    s0 = x.dims[i][1]
    a = np.moveaxis(x.a, i, 0)
    n, m = table.shape
    lo, hi = 0, m
    if weight is not None:
        w, ws = weight
        lo, hi = max(0, ws), min(m, ws + len(w))
    out = np.empty((n,) + a.shape[1:], dtype=a.dtype)
    for c in range(n):
        acc = np.full(a.shape[1:], init, dtype=a.dtype)
        for k in range(lo, hi):
            e = int(table[c, k])
            if e == -1:
                continue
            wk = a.dtype.type(weight[0][k - weight[1]]) if weight is not None else None
            acc = STEPS[step](acc, a[e - s0], wk)
        out[c] = acc
    dims = list(x.dims)
    dims[i] = dst
    return NV(dims, np.moveaxis(out, 0, i))


def scan(x, dim, op, init, forward):
    """`state = op(x, state)` along `dim` from `init`, each state written at its position."""
    i = _names(x).index(dim)
    a = np.moveaxis(x.a, i, 0)
    out = np.empty_like(a)
    state = np.full(a.shape[1:], init, dtype=a.dtype)
    order = range(a.shape[0]) if forward else range(a.shape[0] - 1, -1, -1)
    for k in order:
        state = BINARY[op](a[k], state)
        out[k] = state
    return NV(x.dims, np.moveaxis(out, 0, i))
