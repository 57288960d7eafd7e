"""GT4Py programs on Strata (`strata.gt4py.backend`), written as GT4Py's documentation writes
them, each compared with GT4Py's embedded backend and with a numpy formulation."""

import numpy as np
import pytest

gtx = pytest.importorskip("gt4py.next")

import strata
import strata.gt4py
from gt4py.next import where

I, J, K = gtx.Dimension("I"), gtx.Dimension("J"), gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)
F = gtx.Field[gtx.Dims[I, J, K], gtx.float64]
F2 = gtx.Field[gtx.Dims[I, J], gtx.float64]


@gtx.field_operator
def lap(x: F) -> F:
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)


@gtx.field_operator
def laplap(x: F) -> F:
    return lap(lap(x))


@gtx.program
def laplap_program(x: F, out: F):
    laplap(x, out=out[2:-2, 2:-2, :])


@gtx.field_operator
def flux_i(lp: F, x: F) -> F:
    f = lp(I + 1) - lp
    return where(f * (x(I + 1) - x) > 0.0, 0.0, f)


@gtx.field_operator
def flux_j(lp: F, x: F) -> F:
    f = lp(J + 1) - lp
    return where(f * (x(J + 1) - x) > 0.0, 0.0, f)


@gtx.field_operator
def hdiff_op(x: F, coeff: F) -> F:
    lp = lap(x)
    fx, fy = flux_i(lp, x), flux_j(lp, x)
    return x - coeff * (fx - fx(I - 1) + fy - fy(J - 1))


@gtx.program
def hdiff_program(x: F, coeff: F, out: F):
    hdiff_op(x, coeff, out=out[2:-2, 2:-2, :])


@gtx.field_operator
def step(u: F2, dt: gtx.float64) -> F2:
    return u + dt * (u(I + 1) + u(I - 1) + u(J + 1) + u(J - 1) - 4.0 * u)


@gtx.program
def step_program(u: F2, dt: gtx.float64, out: F2, n: gtx.int32, m: gtx.int32):
    step(u, dt, out=out, domain={I: (1, n - 1), J: (1, m - 1)})


@gtx.field_operator
def sum_and_difference(a: F2, b: F2) -> tuple[F2, F2]:
    return a + b, a - b


@gtx.field_operator
def half(a: F2) -> F2:
    return 0.5 * a


@gtx.field_operator
def shifted_sum(t: F2) -> F2:
    return t(I + 1) + t


@gtx.program
def two_operators(a: F2, tmp: F2, out: F2):
    # The second field operator reads what the first wrote.
    half(a, out=tmp)
    shifted_sum(tmp, out=out[0:-1, :])


def lap_np(a):
    return -4.0 * a[1:-1, 1:-1] + a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2]


def both(program, make_args, **kwargs):
    """Runs `program` on Strata and on GT4Py's embedded backend with fresh arguments; returns
    both argument lists (outputs written)."""
    ours, theirs = make_args(), make_args()
    program.with_backend(strata.gt4py.backend)(*ours, offset_provider={}, **kwargs)
    program.with_backend(None)(*theirs, offset_provider={}, **kwargs)
    return ours, theirs


def test_laplacian_of_laplacian():
    a = np.random.default_rng(1).random((12, 13, 4))
    ours, theirs = both(laplap_program, lambda: (gtx.as_field([I, J, K], a), gtx.as_field([I, J, K], np.zeros(a.shape))))
    got = ours[1].asnumpy()
    np.testing.assert_array_equal(got, theirs[1].asnumpy())
    np.testing.assert_allclose(got[2:-2, 2:-2], lap_np(lap_np(a)), rtol=1e-12, atol=1e-12)
    assert not got[:2].any() and not got[:, :2].any(), "only the domain is written"


def test_horizontal_diffusion_with_flux_limiter():
    rng = np.random.default_rng(2)
    a, c = rng.random((14, 15, 3)), rng.random((14, 15, 3))
    ours, theirs = both(
        hdiff_program,
        lambda: (gtx.as_field([I, J, K], a), gtx.as_field([I, J, K], c), gtx.as_field([I, J, K], np.zeros(a.shape))),
    )
    np.testing.assert_allclose(ours[2].asnumpy(), theirs[2].asnumpy(), rtol=1e-13, atol=1e-13)
    # numpy: the same stencil on arrays.
    lp = lap_np(a)  # on [1:-1, 1:-1]
    fx = lp[1:, :] - lp[:-1, :]
    fx = np.where(fx * (a[2:-1, 1:-1] - a[1:-2, 1:-1]) > 0.0, 0.0, fx)
    fy = lp[:, 1:] - lp[:, :-1]
    fy = np.where(fy * (a[1:-1, 2:-1] - a[1:-1, 1:-2]) > 0.0, 0.0, fy)
    want = a[2:-2, 2:-2] - c[2:-2, 2:-2] * (fx[1:, 1:-1] - fx[:-1, 1:-1] + fy[1:-1, 1:] - fy[1:-1, :-1])
    np.testing.assert_allclose(ours[2].asnumpy()[2:-2, 2:-2], want, rtol=1e-12, atol=1e-12)


def test_a_time_loop_with_scalar_arguments_compiles_once():
    """A float argument is a parameter (a new `dt` each step, one program); integer arguments
    that size the domain are part of the structure."""
    u0 = np.random.default_rng(3).random((10, 11))
    run = step_program.with_backend(strata.gt4py.backend)
    u, new = gtx.as_field([I, J], u0.copy()), gtx.as_field([I, J], u0.copy())
    w = u0.copy()
    before = strata._strata.field_programs()
    for s in range(20):
        dt = 0.01 * (1 + s % 3)
        run(u, dt, new, np.int32(10), np.int32(11), offset_provider={})
        u, new = new, u
        nw = w.copy()
        nw[1:-1, 1:-1] = w[1:-1, 1:-1] + dt * (lap_np(w))
        w = nw
    np.testing.assert_allclose(u.asnumpy(), w, rtol=1e-12, atol=1e-12)
    assert strata._strata.field_programs() - before == 1


def test_tuple_returns_and_a_program_with_a_temporary():
    rng = np.random.default_rng(4)
    a, b = rng.random((6, 7)), rng.random((6, 7))

    @gtx.program
    def tuple_program(a: F2, b: F2, s: F2, d: F2):
        sum_and_difference(a, b, out=(s, d))

    ours, theirs = both(
        tuple_program,
        lambda: (gtx.as_field([I, J], a), gtx.as_field([I, J], b), gtx.as_field([I, J], np.zeros((6, 7))),
                 gtx.as_field([I, J], np.zeros((6, 7)))),
    )
    np.testing.assert_array_equal(ours[2].asnumpy(), a + b)
    np.testing.assert_array_equal(ours[3].asnumpy(), a - b)
    np.testing.assert_array_equal(ours[3].asnumpy(), theirs[3].asnumpy())
    ours, theirs = both(
        two_operators,
        lambda: (gtx.as_field([I, J], a), gtx.as_field([I, J], np.zeros((6, 7))), gtx.as_field([I, J], np.zeros((6, 7)))),
    )
    np.testing.assert_array_equal(ours[2].asnumpy(), theirs[2].asnumpy())
    np.testing.assert_array_equal(ours[1].asnumpy(), 0.5 * a)
    np.testing.assert_allclose(ours[2].asnumpy()[:-1], 0.5 * a[1:] + 0.5 * a[:-1], rtol=1e-15)


def test_unsupported_constructs_are_errors_naming_them():
    """A vertical scan is not lowered yet: a `GTIRError` naming the construct, no result."""

    @gtx.scan_operator(axis=K, forward=True, init=0.0)
    def running(state: float, x: float) -> float:
        return state + x

    @gtx.program
    def scan_program(x: F, out: F):
        running(x, out=out)

    a = np.ones((3, 3, 4))
    out = gtx.as_field([I, J, K], np.zeros(a.shape))
    with pytest.raises(strata.gt4py.GTIRError, match="does not support"):
        scan_program.with_backend(strata.gt4py.backend)(gtx.as_field([I, J, K], a), out, offset_provider={})
    assert not out.asnumpy().any(), "nothing written"
