"""Loops are the workload: a time loop compiles once whatever its scalars, a chain reusing a
value stays small, and a loop that never reads its state runs programs of bounded size. Every
result against numpy."""

import numpy as np
import pytest

import strata
import strata.array_api as xp
from strata import fields


def test_a_reuse_chain_compiles_small_and_matches_numpy():
    x = np.linspace(0, 1e-3, 64)
    y, want = xp.asarray(x), x.copy()
    for _ in range(50):  # inlined, 3^50 copies of the input read
        y = y * y + y
        want = want * want + want
    np.testing.assert_array_equal(np.asarray(y), want)
    # The sum's order may differ from numpy's pairwise summation.
    np.testing.assert_allclose(float(xp.sum(y)), np.sum(want), rtol=1e-14)


def test_a_time_loop_with_a_new_scalar_each_step_compiles_once():
    rng = np.random.default_rng(1)
    u0 = rng.random(257)
    u, want = xp.asarray(u0), u0.copy()
    before = xp.cache_stats()
    for step in range(60):
        dt = 1e-3 * (1 + step % 7)
        u = u + dt * (xp.roll(u, 1) - u)
        want = want + dt * (np.roll(want, 1) - want)
        u = xp.asarray(np.asarray(u))  # the state read back every step
    after = xp.cache_stats()
    np.testing.assert_allclose(np.asarray(u), want, rtol=1e-13, atol=0)
    # One program for the step (its scalar a parameter), whatever dt is.
    assert after["misses"] - before["misses"] <= 2, (before, after)
    # Later steps find it by the walk of their operations: not even built again.
    assert after["built"] - before["built"] <= 2, (before, after)


def test_a_loop_that_never_reads_its_state_runs_programs_of_bounded_size():
    rng = np.random.default_rng(2)
    u0 = rng.random(300)
    u, want = xp.asarray(u0), u0.copy()
    before = xp.cache_stats()
    for step in range(400):
        dt = 1e-3 * (1 + step % 3)
        u = u + dt * (xp.roll(u, 1) - u)
        want = want + dt * (np.roll(want, 1) - want)
    np.testing.assert_allclose(np.asarray(u), want, rtol=1e-12, atol=0)
    after = xp.cache_stats()
    runs = after["native_runs"] + after["interpreted_runs"] - before["native_runs"] - before["interpreted_runs"]
    # Evaluated every few steps (a fixed chain length), by a handful of distinct programs.
    assert runs >= 400 * 5 // 48, (before, after)
    assert after["misses"] - before["misses"] <= 16, (before, after)


def test_fields_time_loop_with_a_changing_dt_compiles_once():
    I, J = strata.dims("I J")
    u = np.random.default_rng(3).random((34, 34))
    w = u.copy()
    before = strata._strata.field_programs()
    for step in range(40):
        dt = 0.01 * (1 + step % 5)
        x = strata.field(u, I[-1:33], J[-1:33])
        lap = x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1) - 4.0 * x
        new = u.copy()
        new[1:-1, 1:-1] = (x + dt * lap).numpy()
        u = new
        lap_np = w[2:, 1:-1] + w[:-2, 1:-1] + w[1:-1, 2:] + w[1:-1, :-2] - 4.0 * w[1:-1, 1:-1]
        nw = w.copy()
        nw[1:-1, 1:-1] = w[1:-1, 1:-1] + dt * lap_np
        w = nw
    np.testing.assert_array_equal(u, w)
    assert strata._strata.field_programs() - before == 1, "one program for every dt"


def test_program_calls_are_prepared_once():
    m = strata.compile(
        """
func @axpy(%a: f64, %x: tensor<f64, I[0:5]>, %y: tensor<f64, I[0:5]>) -> tensor<f64, I[0:5]> {
  %r = plus(multiplies(%a, %x), %y) : tensor<f64, I[0:5]>
  return %r
}
"""
    )
    x, y = np.arange(5.0), np.ones(5)
    for a in np.linspace(-1, 1, 50):
        np.testing.assert_array_equal(m.axpy(a=float(a), x=x, y=y), float(a) * x + y)


def test_a_stencil_compiles_once_and_takes_a_new_scalar_each_call():
    I, J = strata.dims("I J")
    n = 30
    u0 = np.random.default_rng(4).random((n + 2, n + 2))

    @strata.stencil
    def step(x, dt):
        lap = x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1) - 4.0 * x
        return x + (dt / 2) * lap + (dt / 2) * lap

    u, new = u0.copy(), u0.copy()
    w = u0.copy()
    for s in range(25):
        dt = 0.05 * (1 + s % 4)
        got = step(strata.field(u, I[-1 : n + 1], J[-1 : n + 1]), dt, out=strata.field(new[1:-1, 1:-1], I[0:n], J[0:n]))
        assert np.shares_memory(got, new)
        u, new = new, u
        c = w[1:-1, 1:-1]
        lap = w[2:, 1:-1] + w[:-2, 1:-1] + w[1:-1, 2:] + w[1:-1, :-2] - 4.0 * c
        nw = w.copy()
        nw[1:-1, 1:-1] = c + (dt / 2) * lap + (dt / 2) * lap
        w = nw
    np.testing.assert_array_equal(u, w)
    assert len(step._compiled) == 1
    # Another structure (other intervals) is another program; a result without `out`.
    small = np.arange(16.0).reshape(4, 4)
    r = step(strata.field(small, I[0:4], J[0:4]), 1.0)
    c = small[1:-1, 1:-1]
    lap = small[2:, 1:-1] + small[:-2, 1:-1] + small[1:-1, 2:] + small[1:-1, :-2] - 4.0 * c
    np.testing.assert_array_equal(r, c + 0.5 * lap + 0.5 * lap)
    assert len(step._compiled) == 2


def test_a_stencil_refuses_to_turn_its_scalar_into_a_python_number():
    import math

    I = strata.dims("I")[0]

    @strata.stencil
    def bad(x, dt):
        return x * math.sqrt(dt)

    with pytest.raises(fields.FieldError, match="scalar argument"):
        bad(strata.field(np.arange(4.0), I[0:4]), 4.0)


def test_out_arrays_are_written_in_place_and_aliasing_inputs_are_read_as_they_were():
    m = strata.compile(
        """
program @smooth(%out: out tensor<f64, I[0:6]>, %x: tensor<f64, I[0:6]>) {
  %s = plus(cartesian_shift(%x, dim = I, offset = 1), cartesian_shift(%x, dim = I, offset = -1))
  %out[I[1:5]] <- multiplies(0.5, %s)
}
"""
    )
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    want = x.copy()
    want[1:5] = 0.5 * (x[2:] + x[:-2])
    for backend in ("native", "interp"):
        out = np.full(6, -1.0)
        got = m.smooth(x=x, out=out, backend=backend)
        assert got is out
        np.testing.assert_array_equal(out, np.where(np.arange(6) % 5 == 0, -1.0, want))
        # The same array as input and output: the input is read as it was before the call.
        y = x.copy()
        got = m.smooth(x=y, out=y, backend=backend)
        assert got is y
        np.testing.assert_array_equal(y, want)


def _diffusion_stencil(I, J):
    """The 2-d diffusion step as a stencil over dimensions `I` and `J`."""

    @strata.stencil
    def step(x, dt):
        return x + dt * (x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1) - 4.0 * x)

    return step


def _numpy_diffusion_step(w, dt):
    """The same step in numpy on a whole array: the interior updated, the boundary kept."""
    c = w[1:-1, 1:-1]
    nw = w.copy()
    nw[1:-1, 1:-1] = c + dt * (w[2:, 1:-1] + w[:-2, 1:-1] + w[1:-1, 2:] + w[1:-1, :-2] - 4.0 * c)
    return nw


def test_a_stencil_writes_a_whole_array_in_place():
    I, J = strata.dims("I J")
    n = 12
    u0 = np.random.default_rng(5).random((n + 2, n + 2))
    step = _diffusion_stencil(I, J)

    u, new = u0.copy(), np.zeros_like(u0)
    new[0, :], new[-1, :], new[:, 0], new[:, -1] = u0[0, :], u0[-1, :], u0[:, 0], u0[:, -1]
    w = u0.copy()
    for s in range(10):
        dt = 0.02 * (1 + s % 3)
        got = step(strata.field(u, I[-1 : n + 1], J[-1 : n + 1]), dt, out=strata.field(new, I[-1 : n + 1], J[-1 : n + 1]))
        assert got is new
        u, new = new, u
        w = _numpy_diffusion_step(w, dt)
    np.testing.assert_array_equal(u, w)
    # In place on its own input: read as it was.
    v = u0.copy()
    step(strata.field(v, I[-1 : n + 1], J[-1 : n + 1]), 0.1, out=strata.field(v, I[-1 : n + 1], J[-1 : n + 1]))
    np.testing.assert_array_equal(v, _numpy_diffusion_step(u0, 0.1))


def test_a_stencil_called_again_on_the_same_fields_repeats_its_plan():
    # A time loop keeps its two fields and swaps them: each call after the first two repeats
    # a kept plan (the fields by identity, the float filled in); the values stay numpy's.
    import gc
    import weakref

    I, J = strata.dims("I J")
    n = 9
    u0 = np.random.default_rng(6).random((n + 2, n + 2))
    step, numpy_step = _diffusion_stencil(I, J), _numpy_diffusion_step

    u, new = u0.copy(), u0.copy()
    fu, fnew = strata.field(u, I[-1 : n + 1], J[-1 : n + 1]), strata.field(new, I[-1 : n + 1], J[-1 : n + 1])
    w = u0.copy()
    for s in range(12):
        # A Python float is filled into the plan; a numpy float takes the general path.
        dt = 0.02 * (1 + s % 3) if s % 4 else np.float64(0.01 * s)
        assert step(fu, dt, out=fnew) is fnew.array
        fu, fnew = fnew, fu
        w = numpy_step(w, float(dt))
        np.testing.assert_array_equal(fu.array, w)
    assert len(step._plans) == 2 and len(step._compiled) == 1
    # The same fields without `out`: a result, through a plan of its own from the second call.
    for _ in range(2):
        np.testing.assert_array_equal(step(fu, 0.5), numpy_step(w, 0.5)[1:-1, 1:-1])
    # A plan whose `out` has gone never serves a call without `out` (its program takes one).
    spare = strata.field(u0.copy(), I[-1 : n + 1], J[-1 : n + 1])
    step(fu, 0.25, out=spare)
    step(fu, 0.25, out=spare)
    del spare
    gc.collect()
    for _ in range(2):
        np.testing.assert_array_equal(step(fu, 0.25), numpy_step(w, 0.25)[1:-1, 1:-1])
    # A plan holds its fields weakly: dropping them frees their arrays.
    gone = weakref.ref(fu.array)
    del fu, fnew, u, new
    gc.collect()
    assert gone() is None
    # A dead field's place in a plan is no match for anything, not even a bad argument.
    with pytest.raises(fields.FieldError, match="fields and numbers"):
        step(None, 0.1)
    # New fields on other arrays find no plan of the old ones (compared by identity).
    a, b = u0.copy(), u0.copy()
    got = step(strata.field(a, I[-1 : n + 1], J[-1 : n + 1]), 0.1, out=strata.field(b, I[-1 : n + 1], J[-1 : n + 1]))
    np.testing.assert_array_equal(got, numpy_step(u0, 0.1))
    assert len(step._plans) <= 8


def test_a_loop_of_evaluations_reuses_its_memory():
    # Each step's result (800 KB) and its numpy copy are freed and allocated again: the
    # allocator serves them from memory already mapped, not fresh pages (glibc's thresholds,
    # strata_runtime::aligned::start). Counted in minor page faults, not timed.
    import resource

    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2000, 50))
    a = xp.asarray(x0)
    for _ in range(20):  # compiled, warmed up
        got = (a + 1.0).to_numpy()
    steps = 200
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        got = (a + 1.0).to_numpy()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    np.testing.assert_array_equal(got, x0 + 1.0)
    # Fresh pages would be ~400 faults a step (1.6 MB); reused memory none.
    assert faults < 20 * steps, f"{faults} page faults in {steps} steps"


def test_numpy_views_of_a_loop_s_states_keep_their_values():
    # np.asarray(x) views the array's own buffer (read-only, no copy). A loop's later states
    # are written into recycled buffers only when nothing else holds them: every view taken
    # along the way still reads the state it was taken of, after the arrays are gone.
    x0 = np.random.default_rng(4).standard_normal((1000, 300))  # 2.4 MB: a pooled size
    u, want = xp.asarray(x0), x0.copy()
    views, wants = [], []
    for step in range(12):
        u = u * 0.5 + 1.0
        want = want * 0.5 + 1.0
        v = np.asarray(u)
        assert not v.flags.writeable
        views.append(v)
        wants.append(want.copy())
    del u
    for _ in range(5):  # more results of the same size, into whatever buffers are free
        _ = np.asarray(xp.asarray(x0) * 3.0)
    for v, w in zip(views, wants):
        np.testing.assert_array_equal(v, w)
    # np.array(x) and to_numpy() are the caller's own, writable.
    a = xp.asarray(x0) + 1.0
    c = np.array(a)
    c[0, 0] = -1.0
    assert a.to_numpy()[0, 0] == x0[0, 0] + 1.0
    # Another dtype is a new array, which copy=False refuses (numpy's rule).
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float32), (x0 + 1.0).astype(np.float32))
    with pytest.raises(ValueError):
        np.asarray(a, dtype=np.float32, copy=False)


def test_a_view_read_and_dropped_on_another_thread():
    # numpy arrays travel between threads: a view's values are read there, and its last
    # reference dropped there is handed back to the evaluating thread (no unraisable error).
    import sys
    import threading

    raised = []
    hook, sys.unraisablehook = sys.unraisablehook, raised.append
    try:
        x0 = np.random.default_rng(5).standard_normal((300, 400))
        box = [np.asarray(xp.asarray(x0) * 2.0)]
        seen = {}

        def work():
            v = box.pop()
            seen["values"] = v.copy()
            del v  # the last reference: dropped on this thread

        t = threading.Thread(target=work)
        t.start()
        t.join()
        np.testing.assert_array_equal(seen["values"], x0 * 2.0)
        # The next view lets the handed-back reference go, on this thread.
        np.testing.assert_array_equal(np.asarray(xp.asarray(x0) + 1.0), x0 + 1.0)
    finally:
        sys.unraisablehook = hook
    assert not raised, [r.exc_value for r in raised]


def test_conjugate_gradients_match_numpy_and_compute_each_product_once():
    # A matvec both read back (`p · q`) and kept for the next step (`r - alpha q`); that it is
    # computed once, into `q`, is tested on the lowering (strata-codegen's tests/passes.rs).
    rng = np.random.default_rng(5)
    n = 300
    r0 = rng.random((n, n)) / n
    a = (r0 + r0.T) / 2 + 2.0 * np.eye(n)
    b = rng.random(n)

    def solve(mod, A, b):
        x = mod.zeros_like(b)
        r = p = b
        rr = float(mod.vecdot(r, r))
        for _ in range(25):
            q = A @ p
            alpha = rr / float(mod.vecdot(p, q))
            x = x + alpha * p
            r = r - alpha * q
            rr, rr_old = float(mod.vecdot(r, r)), rr
            p = r + (rr / rr_old) * p
        return x

    want = solve(np, a, b)
    got = np.asarray(solve(xp, xp.asarray(a), xp.asarray(b)))
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(a @ got, b, rtol=1e-8, atol=1e-10)
    A, p = xp.asarray(a), xp.asarray(b) * 1.5
    q = A @ p
    np.testing.assert_allclose(float(xp.vecdot(p, q)), (b * 1.5) @ (a @ (b * 1.5)), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(q), a @ (b * 1.5), rtol=1e-13)


def test_a_result_numpy_lets_go_of_serves_the_next_result_of_its_size():
    # A program's result becomes a numpy array that owns Strata's buffer (no copy). Once numpy
    # frees it, the buffer goes back to the native backend's pool, and the next result of that
    # size is written into it (no zeroing, no page faults) — whatever the caller wrote there.
    I, J = strata.dims("I J")
    a = np.random.default_rng(5).standard_normal((700, 400))  # 2.2 MB: a pooled size
    x = strata.field(a, I[0:700], J[0:400])
    r = (x * 2.0 + 1.0).numpy()
    np.testing.assert_array_equal(r, a * 2.0 + 1.0)
    assert r.flags.writeable and type(r.base).__name__ == "ResultBuffer"
    address = r.ctypes.data
    r[...] = np.nan
    del r
    s = (x * 3.0 - 1.0).numpy()
    assert s.ctypes.data == address
    np.testing.assert_array_equal(s, a * 3.0 - 1.0)
    # Held by numpy, a buffer is never reused: the next result gets one of its own.
    t = (x * 4.0).numpy()
    assert t.ctypes.data != s.ctypes.data
    np.testing.assert_array_equal(s, a * 3.0 - 1.0)
    np.testing.assert_array_equal(t, a * 4.0)
