"""Loops are the workload: a time loop compiles once whatever its scalars, a chain reusing a
value stays small, and a loop that never reads its state runs programs of bounded size. Every
result against numpy."""

import numpy as np

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
    texts = set(fields._CACHE)
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
    assert len(set(fields._CACHE) - texts) == 1, "one program for every dt"


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
