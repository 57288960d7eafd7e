"""One compiled kernel per program structure, whatever the sizes: kernels take their extents
(interval bounds, strides, a mean's divisor, a concatenation's seam) as run-time arguments, so a
program run at a new size loads no new kernel library. Every size's result against numpy."""

import numpy as np
import pytest

import strata
import strata.array_api as xp

# Sizes of the loops: extent 1, small, odd, and a few larger (threads start above 2^15 points).
SIZES = [1, 2, 3, 5, 17, 40, 41, 64, 129, 5000]


def data(n, m=7, seed=0):
    return np.random.default_rng(seed + n).standard_normal((n, m))


def libraries():
    return xp.cache_stats()["libraries"]


CASES = {
    "elementwise": (lambda a, b: a * 2.5 + b, lambda a, b: a * 2.5 + b),
    "where": (lambda a, b: xp.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b)),
    "sum over rows": (lambda a, b: xp.sum(a, axis=0), lambda a, b: a.sum(axis=0)),
    "sum over columns": (lambda a, b: xp.sum(a, axis=1), lambda a, b: a.sum(axis=1)),
    "mean and std": (lambda a, b: xp.std(a, axis=0) + xp.mean(b, axis=0), lambda a, b: a.std(0) + b.mean(0)),
    "gram matrix": (lambda a, b: a.T @ b, lambda a, b: a.T @ b),
    "differences": (lambda a, b: a[1:] - a[:-1], lambda a, b: a[1:] - a[:-1]),
    "cumulative sum": (lambda a, b: xp.cumulative_sum(a, axis=0), lambda a, b: np.cumsum(a, axis=0)),
    "argmax": (lambda a, b: xp.argmax(a, axis=0), lambda a, b: np.argmax(a, axis=0)),
    "reversed rows": (
        lambda a, b: xp.take(a, xp.asarray(np.arange(a.shape[0])[::-1].copy()), axis=0),
        lambda a, b: a[::-1],
    ),
    "concatenation": (lambda a, b: xp.concat([a, b[:3]], axis=0), lambda a, b: np.concatenate([a, b[:3]])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_new_size_loads_no_new_kernel(name):
    f, want = CASES[name]

    def check(n):
        a, b = data(n), data(n, seed=9)
        got = np.asarray(f(xp.asarray(a), xp.asarray(b)))
        np.testing.assert_allclose(got, want(a, b), rtol=1e-12, atol=1e-12, err_msg=f"{name} at {n} rows")

    check(1200)
    before = libraries()
    for n in [1000, 1001, 1517, 2047, 3001, 4000]:
        check(n)
    assert libraries() == before, f"{name}: {libraries() - before} kernels compiled for new sizes"


@pytest.mark.parametrize("name", sorted(CASES))
def test_sizes_from_1_up_compile_a_few_kernels_at_most(name):
    # A kernel's structure may change at a few sizes: extent 1, a slice that is the whole
    # array (`b[:3]` of 3 rows or fewer), a fold short enough to run per point, a temporary
    # worth keeping, a contraction long enough for the runtime GEMM. Between those, a size
    # compiles nothing.
    f, want = CASES[name]
    before = libraries()
    for n in SIZES + [6, 33, 100, 257, 1000, 4097]:
        a, b = data(n), data(n, seed=9)
        got = np.asarray(f(xp.asarray(a), xp.asarray(b)))
        np.testing.assert_allclose(got, want(a, b), rtol=1e-12, atol=1e-12, err_msg=f"{name} at {n} rows")
    assert libraries() - before <= 5, f"{name}: {libraries() - before} kernels for 16 sizes"


def test_a_stencil_on_new_grid_sizes_loads_no_new_kernel():
    I, J = strata.dims("I J")

    def grid(n):
        return np.random.default_rng(n).standard_normal((n + 2, n + 3))

    def laplacian(n):
        x = strata.field(grid(n), I[-1 : n + 1], J[-1 : n + 2])
        return (-4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)).numpy()

    def want(n):
        a = grid(n)
        return -4 * a[1:-1, 1:-1] + a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2]

    for n in [8, 1]:
        np.testing.assert_allclose(laplacian(n), want(n), rtol=1e-13)
    before = libraries()
    for n in [2, 3, 9, 16, 31, 50]:
        np.testing.assert_allclose(laplacian(n), want(n), rtol=1e-13, err_msg=f"{n}x{n + 1}")
    assert libraries() == before, f"{libraries() - before} kernels compiled for new grid sizes"
