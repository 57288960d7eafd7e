"""A generator of array-API chains as numpy code writes them, checked against numpy.

Each chain starts from two to four float64 arrays of a small shape (every extent from 1 to 8
occurs: issue 49's `where` bug hid at 4×5 and not at 3×5) and applies 5–30 operations drawn from
what numpy code does — elementwise arithmetic, comparisons feeding `where`, `abs`/`exp`/`sqrt`,
`maximum`/`clip`, reductions with `keepdims` broadcast back, `matmul` with a transpose, `concat`
and slices that undo it, reshapes through a flat vector, `roll`, cumulative sums, `expand_dims`
and `squeeze` — over a pool of values that several later operations share. Every value of the
pool is compared with numpy's at the end (one evaluation computing several outputs that share
operands). `device` places the inputs (`strata.world` for team arrays under mpirun).
"""

import numpy as np


def _close(got, want):
    got = np.asarray(got)
    if got.shape != want.shape:
        return False
    scale = max(1.0, float(np.abs(want[np.isfinite(want)]).max(initial=0.0)))
    same_nan = np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want) & np.isfinite(got)
    return same_nan and np.array_equal(np.isinf(got), np.isinf(want)) and bool(
        np.all(np.abs(got[finite] - want[finite]) <= 1e-9 * scale)
    )


def _near(a, b):
    """Whether `a` and `b` agree to within rounding (1e-9 of the operands' scale) somewhere: a
    comparison of them there, or a square root of `a` near 0, is decided by rounding (a row's
    centred cumulative sum ends at a rounding error of either sign, which a different summation
    order flips). Such an operation has no single right answer, so the generator does not write
    it."""
    scale = max(1.0, float(np.abs(a).max(initial=0.0)), float(np.abs(np.asarray(b)).max(initial=0.0)))
    return bool(np.any(np.abs(a - b) <= 1e-9 * scale))


def chain(xp, seed, device=None):
    """Builds and checks one chain; returns `(description, [names of wrong values])`."""
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 9)), int(rng.integers(1, 9)))
    pool = []  # (name, strata array, numpy array)
    for k in range(int(rng.integers(2, 5))):
        a = np.round(rng.standard_normal(shape) * 3, 3)
        pool.append((f"x{k}", xp.asarray(a, device=device) if device is not None else xp.asarray(a), a))
    steps = []

    def pick(same_shape_as=None):
        cands = [p for p in pool if same_shape_as is None or p[2].shape == same_shape_as]
        return cands[int(rng.integers(len(cands)))]

    for i in range(int(rng.integers(5, 31))):
        n, s, a = pick()
        kind = int(rng.integers(16))
        try:
            if kind == 0:
                m, t, b = pick(a.shape)
                r = (s + t, a + b, f"{n} + {m}")
            elif kind == 1:
                m, t, b = pick(a.shape)
                r = (s * t - 0.5, a * b - 0.5, f"{n} * {m} - 0.5")
            elif kind == 2:
                m, t, b = pick(a.shape)
                o, u, c = pick(a.shape)
                if _near(a, 0.0):
                    continue
                r = (xp.where(s > 0, t, u), np.where(a > 0, b, c), f"where({n} > 0, {m}, {o})")
            elif kind == 3:
                m, t, b = pick(a.shape)
                if _near(a, b):
                    continue
                r = (xp.where(s >= t, s, 2.0 * t), np.where(a >= b, a, 2.0 * b), f"where({n} >= {m}, {n}, 2 {m})")
            elif kind == 4:
                r = (xp.abs(s) + 1.0, np.abs(a) + 1.0, f"abs({n}) + 1")
            elif kind == 5:
                r = (xp.exp(xp.clip(s, -5.0, 5.0)), np.exp(np.clip(a, -5.0, 5.0)), f"exp(clip({n}))")
            elif kind == 6:
                if _near(a, 0.0):  # √ turns a rounding error of 1e-15 into 3e-8
                    continue
                r = (xp.sqrt(xp.abs(s)), np.sqrt(np.abs(a)), f"sqrt(abs({n}))")
            elif kind == 7:
                m, t, b = pick(a.shape)
                r = (xp.maximum(s, t), np.maximum(a, b), f"maximum({n}, {m})")
            elif kind == 8 and a.ndim == 2:
                ax = int(rng.integers(2))
                r = (s - xp.sum(s, axis=ax, keepdims=True) / a.shape[ax], a - a.sum(axis=ax, keepdims=True) / a.shape[ax],
                     f"{n} - mean({n}, {ax})")
            elif kind == 9 and a.ndim == 2:
                ax = int(rng.integers(2))
                r = (xp.max(s, axis=ax, keepdims=True) + s, a.max(axis=ax, keepdims=True) + a, f"max({n}, {ax}) + {n}")
            elif kind == 10 and a.ndim == 2:
                # a @ a.T @ a: the shape comes back
                r = ((s @ xp.matrix_transpose(s)) @ s * 0.1, (a @ a.T) @ a * 0.1, f"{n} @ {n}.T @ {n}")
            elif kind == 11 and a.ndim == 2:
                ax = int(rng.integers(2))
                m, t, b = pick(a.shape)
                both = xp.concat([s, t], axis=ax)
                ref = np.concatenate([a, b], axis=ax)
                sl = (slice(None),) * ax + (slice(a.shape[ax] // 2, a.shape[ax] // 2 + a.shape[ax]),)
                r = (both[sl] * 2.0, ref[sl] * 2.0, f"concat({n}, {m}, {ax})[mid] * 2")
            elif kind == 12:
                r = (xp.reshape(xp.reshape(s, (-1,)) * 3.0, a.shape), (a.reshape(-1) * 3.0).reshape(a.shape), f"reshape(flat({n}) * 3)")
            elif kind == 13 and a.ndim == 2:
                sh, ax = int(rng.integers(-3, 4)), int(rng.integers(2))
                r = (xp.roll(s, sh, axis=ax), np.roll(a, sh, axis=ax), f"roll({n}, {sh}, {ax})")
            elif kind == 14 and a.ndim == 2:
                ax = int(rng.integers(2))
                r = (xp.cumulative_sum(s, axis=ax), np.cumsum(a, axis=ax), f"cumsum({n}, {ax})")
            elif kind == 15:
                r = (xp.squeeze(xp.expand_dims(s, axis=0), axis=0) - s * s, a - a * a, f"squeeze(expand({n})) - {n}²")
            else:
                continue
        except Exception as e:  # noqa: BLE001 - a refusal of a valid chain is a wrong case
            return f"shape {shape}: {'; '.join(steps)}", [f"step {i} raised {type(e).__name__}: {e}"]
        name = f"v{i}"
        steps.append(f"{name} = {r[2]}")
        pool.append((name, r[0], r[1]))
    wrong = []
    for name, s, a in pool:
        try:
            if not _close(np.asarray(s), a):
                wrong.append(name)
        except Exception as e:  # noqa: BLE001
            wrong.append(f"{name}: {type(e).__name__}: {e}")
    return f"shape {shape}: {'; '.join(steps)}", wrong
