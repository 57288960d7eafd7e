"""Fields over named dimensions from Python (seed 000's stencils), against numpy oracles."""

import os
import sys

import numpy as np
import pytest

import strata
from strata import fields

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "oracles"))
import mesh  # noqa: E402  (the generated mesh the nabla examples use)

I, J, K = strata.dims("I J K")
V, E = strata.dims("V E")


def lap(x):
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)


def lap_np(a):
    return -4.0 * a[1:-1, 1:-1] + a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2]


def test_laplacian_and_laplacian_of_laplacian():
    a = np.random.default_rng(1).standard_normal((9, 11, 4))
    x = strata.field(a, I[-2:7], J[-2:9], K[0:4])
    l1 = lap(x)
    assert l1.domain == (I[-1:6], J[-1:8], K[0:4])
    np.testing.assert_array_equal(l1.numpy(), lap_np(a))
    l2 = lap(lap(x))
    assert l2.domain == (I[0:5], J[0:7], K[0:4])
    np.testing.assert_allclose(l2.numpy(), lap_np(lap_np(a)), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(np.asarray(l2), lap_np(lap_np(a)), rtol=1e-13, atol=1e-12)
    for backend in ("native", "interp"):
        np.testing.assert_array_equal(l1.numpy(backend=backend), lap_np(a))


def test_broadcast_by_name_and_choices():
    rng = np.random.default_rng(2)
    a, col = rng.standard_normal((5, 6)), rng.standard_normal(6)
    x, c = strata.field(a, I[0:5], J[0:6]), strata.field(col, J[0:6])
    np.testing.assert_array_equal((x * c - 1.5).numpy(), a * col - 1.5)
    np.testing.assert_array_equal((2 / x).numpy(), 2 / a)
    np.testing.assert_array_equal(strata.where(x > c, x, c).numpy(), np.where(a > col, a, col))
    np.testing.assert_array_equal(strata.where((x > 0) & (c < 0), 1.0, 0.0).numpy(), ((a > 0) & (col < 0)) * 1.0)
    np.testing.assert_array_equal(strata.minimum(abs(x), 0.5).numpy(), np.minimum(np.abs(a), 0.5))
    np.testing.assert_array_equal((-x).astype(np.float32).numpy(), (-a).astype(np.float32))
    # Intervals intersect: a shifted field meets the unshifted one on their overlap.
    d = x(I + 1) - x
    assert d.domain == (I[0:4], J[0:6])
    np.testing.assert_array_equal(d.numpy(), a[1:] - a[:-1])


def test_evaluate_into_an_output_field_and_coverage():
    a = np.random.default_rng(3).standard_normal((9, 11, 4))
    x = strata.field(a, I[-2:7], J[-2:9], K[0:4])
    out = strata.field(np.zeros((3, 5, 4)), I[1:4], J[0:5], K[0:4])
    got = strata.evaluate(lap(x), out=out)
    assert got is out.array
    np.testing.assert_array_equal(got, lap_np(a)[2:5, 1:6])
    with pytest.raises(strata.FieldError, match=r"`%value` is computed on `I\[-1:6\]` but `%out` is written on `I\[0:8\]`"):
        strata.evaluate(lap(x), out=strata.field(np.zeros((8, 5, 4)), I[0:8], J[0:5], K[0:4]))
    with pytest.raises(strata.FieldError, match="dimension `K`, which `%out` does not have"):
        strata.evaluate(lap(x), out=strata.field(np.zeros((3, 5)), I[1:4], J[0:5]))


def test_errors_in_python_terms():
    x = strata.field(np.zeros((4, 5)), I[0:4], J[0:5])
    with pytest.raises(strata.FieldError, match="different element types `f64` and `f32`"):
        x + strata.field(np.zeros(5, dtype=np.float32), J[0:5])
    with pytest.raises(strata.FieldError, match="disjoint intervals"):
        x + strata.field(np.zeros(3), J[10:13])
    with pytest.raises(strata.FieldError, match="shape"):
        strata.field(np.zeros((4, 5)), I[0:5], J[0:5])
    with pytest.raises(strata.FieldError, match="`%field` has no dimension `K` for `cartesian_shift`"):
        x(K + 1)
    with pytest.raises(strata.FieldError, match="truth value"):
        bool(x > 0)
    assert issubclass(strata.FieldError, strata.Error)
    # A 0-d field is evaluated like any other; an expression reading no field is not.
    assert strata.evaluate(strata.field(np.asarray(3.0)) * 2.0) == 6.0
    with pytest.raises(strata.FieldError, match="a constant has no domain"):
        strata.evaluate(fields._as_field(2, np.dtype(np.int64)) + 1)
    # The verifier's reason, at the line of the user's code that wrote the operation.
    line = sys._getframe().f_lineno + 2
    with pytest.raises(strata.FieldError, match=rf"test_fields.py:{line}: .*no dimension `K`"):
        x(I + 1) + x(K - 1)


def test_neighbor_shifts_and_reductions_with_skips():
    """The nabla of seed 000 on the generated mesh (5,440 vertices, 16,167 edges, skips in
    V2E), in Python: flux on edges from the two vertices, summed around each vertex."""
    e2v, v2e = mesh.make_mesh()
    nv, ne = v2e.shape[0], e2v.shape[0]
    rng = np.random.default_rng(4)
    pp_a, s_a, vol_a = rng.standard_normal(nv), rng.standard_normal(ne), 1.0 + rng.random(nv)
    first = e2v[np.maximum(v2e, 0), 0] == np.arange(nv)[:, None]
    sign_a = np.where(v2e == -1, 0.0, np.where(first, 1.0, -1.0))
    E2V = strata.connectivity(e2v, E[0:ne], V)
    V2E = strata.connectivity(v2e, V[0:nv], E)
    pp, s, vol = strata.field(pp_a, V[0:nv]), strata.field(s_a, E[0:ne]), strata.field(vol_a, V[0:nv])
    flux = s * 0.5 * (pp(E2V[0]) + pp(E2V[1]))
    shifted = flux(V2E)
    sign = strata.field(sign_a, V[0:nv], V2E.neighbors)
    nabla = strata.neighbor_sum(shifted * sign, axis=V2E) / vol
    want_flux = s_a * 0.5 * (pp_a[e2v[:, 0]] + pp_a[e2v[:, 1]])
    want = np.where(v2e != -1, want_flux[np.maximum(v2e, 0)] * sign_a, 0.0).sum(axis=1) / vol_a
    np.testing.assert_allclose(nabla.numpy(), want, rtol=1e-12, atol=1e-12)
    # Skips take no part in maxima and minima (a vertex without neighbors: the fold's start).
    big = np.where(v2e != -1, want_flux[np.maximum(v2e, 0)], -np.inf).max(axis=1)
    np.testing.assert_array_equal(strata.neighbor_max(shifted, axis=V2E).numpy(), big)
    small = np.where(v2e != -1, want_flux[np.maximum(v2e, 0)], np.inf).min(axis=1)
    np.testing.assert_array_equal(strata.neighbor_min(shifted, axis=V2E).numpy(), small)
    with pytest.raises(strata.FieldError, match="maps into `V`"):
        s(E2V[0])


def test_scans():
    a = np.random.default_rng(5).standard_normal((4, 5, 6))
    x = strata.field(a, I[0:4], J[0:5], K[0:6])
    np.testing.assert_allclose(strata.scan(lambda s, v: s + v, x, dim=K).numpy(), np.cumsum(a, axis=2), rtol=1e-14)
    got = strata.scan(lambda s, v: strata.maximum(s, v) * 0.5 + v, x, dim=I, init=1.0, forward=False).numpy()
    want, s = np.empty_like(a), np.ones((5, 6))
    for i in range(3, -1, -1):
        s = np.maximum(s, a[i]) * 0.5 + a[i]
        want[i] = s
    np.testing.assert_array_equal(got, want)


def test_one_compile_per_structure():
    rng = np.random.default_rng(6)
    make = lambda: strata.field(rng.standard_normal((9, 11, 4)), I[-2:7], J[-2:9], K[0:4])  # noqa: E731
    lap(lap(make())).numpy()
    before = strata._strata.field_programs()
    for _ in range(3):
        lap(lap(make())).numpy()
    assert strata._strata.field_programs() == before
    # Other intervals are another structure.
    lap(strata.field(rng.standard_normal((5, 5, 4)), I[0:5], J[0:5], K[0:4])).numpy()
    assert strata._strata.field_programs() == before + 1


def test_tridiagonal_solve_with_tuple_states():
    """Seed 000's tridiagonal solve along K: a forward scan with a tuple state, a backward one;
    numpy's dense solver per column as the oracle."""
    rng = np.random.default_rng(7)
    shape = (3, 7, 5)
    a, c, d = (rng.standard_normal(shape) for _ in range(3))
    b = 4.0 + rng.random(shape)
    dom = (I[0:3], J[0:7], K[0:5])
    fa, fb, fc, fd = (strata.field(v, *dom) for v in (a, b, c, d))

    def forward(state, a, b, c, d):
        cp, dp = state[0], state[1]
        den = b - a * cp
        return strata.make_tuple(c / den, (d - a * dp) / den)

    cpdp = strata.scan(forward, fa, fb, fc, fd, dim=K, init=(0.0, 0.0))
    x = strata.scan(lambda x, t: t[1] - t[0] * x, cpdp, dim=K, init=0.0, forward=False)
    want = np.empty(shape)
    for idx in np.ndindex(shape[:-1]):
        m = np.diag(b[idx]) + np.diag(a[idx][1:], -1) + np.diag(c[idx][:-1], 1)
        want[idx] = np.linalg.solve(m, d[idx])
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-12, atol=1e-12)
    # A field of tuples evaluates to a tuple of arrays.
    first, second = strata.make_tuple(fa, fb * 2.0).numpy()
    np.testing.assert_array_equal(first, a)
    np.testing.assert_array_equal(second, b * 2.0)
    with pytest.raises(strata.FieldError, match=r"accumulator type `\(f64, f64\)`"):
        strata.scan(lambda s, v: strata.make_tuple(v, v), fa, dim=K, init=0.0)


def test_comparisons_division_and_numpy_functions_stay_fields():
    """Issue 31: `==` / `!=` are fields of bools, `/` is true division on integers, numpy's
    ufuncs build fields instead of evaluating, `axis` must be the table reduced."""
    a = np.arange(12.0).reshape(3, 4) % 3
    x = strata.field(a, I[0:3], J[0:4])
    for got, want in ((x == 2.0, a == 2.0), (x != 2.0, a != 2.0), (2.0 == x, a == 2.0)):
        assert isinstance(got, fields.Field) and got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(strata.where(x == 0.0, 1.0, x).numpy(), np.where(a == 0.0, 1.0, a))
    n = strata.field(np.arange(12, dtype=np.int64).reshape(3, 4), I[0:3], J[0:4])
    half = n / 2
    assert half.dtype == np.float64
    np.testing.assert_array_equal(half.numpy(), np.arange(12).reshape(3, 4) / 2)
    np.testing.assert_array_equal((7 / (n + 1)).numpy(), 7 / (np.arange(12).reshape(3, 4) + 1))
    np.testing.assert_array_equal((n // 5).numpy(), np.arange(12).reshape(3, 4) // 5)
    root = np.sqrt(x)
    assert isinstance(root, fields.Field)
    np.testing.assert_array_equal(root.numpy(), np.sqrt(a))
    np.testing.assert_array_equal(np.maximum(x, 1.0).numpy(), np.maximum(a, 1.0))
    np.testing.assert_array_equal(np.isnan(x).numpy(), np.isnan(a))
    with pytest.raises(strata.FieldError, match="np.cumsum"):
        np.cumsum(x)
    e2v = np.array([[0, 1], [1, 2]], dtype=np.int32)
    v2e = np.array([[0, -1, -1], [0, 1, -1], [1, -1, -1]], dtype=np.int32)
    E2V, V2E = strata.connectivity(e2v, E[0:2], V), strata.connectivity(v2e, V[0:3], E)
    vf = strata.field(np.array([1.0, 10.0, 100.0]), V[0:3])
    edge = strata.neighbor_sum(vf(E2V), axis=E2V)
    np.testing.assert_array_equal(edge.numpy(), [11.0, 110.0])
    with pytest.raises(strata.FieldError, match="`axis`"):
        strata.neighbor_sum(vf(E2V), axis=V2E)
    # Nested: a sum over each vertex's edges of the sums over each edge's vertices.
    np.testing.assert_array_equal(strata.neighbor_sum(edge(V2E), axis=V2E).numpy(), [11.0, 121.0, 110.0])


def test_fields_dropped_on_another_thread_and_refused_there():
    """Python's garbage collector may free a field on any thread (GT4Py compiles in worker
    threads): that is silent. Using it on another thread is a clear error, not a wrong type."""
    import gc
    import threading
    import warnings

    f = fields.field(np.arange(5.0), I[0:5]) + 1.0
    errors = []

    def use():
        try:
            f * 2.0
        except RuntimeError as e:
            errors.append(str(e))

    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert errors == ["a field expression is used on a thread other than the one that built it"]

    # Garbage other tests left in reference cycles (their arrays belong to this thread) is
    # collected here first, so the other thread's collection frees only the field below.
    gc.collect()
    unraisable = []
    old, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        box = [fields.field(np.arange(3.0), I[0:3]) * 2.0]
        t = threading.Thread(target=lambda: (box.clear(), gc.collect()))
        t.start()
        t.join()
    finally:
        sys.unraisablehook = old
    assert not unraisable
    with warnings.catch_warnings():
        assert (f.numpy() == np.arange(5.0) + 1.0).all(), "still usable on its own thread"
