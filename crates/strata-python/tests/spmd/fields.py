"""Fields over named dimensions on the team (`strata.field(a, I[...], J[...],
device=strata.world)`) under mpirun (run by test_spmd.py): expressions and stencils evaluate as
distributed jobs on each rank's rows, equal to numpy alone; a stencil in a time loop compiles
once.

    mpirun -n P python fields.py
"""

import numpy as np

import strata
import strata.array_api as xp

I, J = strata.dims("I J")


def lap(x):
    return -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)


def lap_np(a):
    return -4.0 * a[1:-1, 1:-1] + a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2]


@strata.stencil
def step(u, dt):
    return u + dt * lap(u)


def main() -> None:
    rank = strata.world.rank
    a = np.random.default_rng(4).standard_normal((23, 17))
    x = strata.field(a, I[-1:22], J[-1:16], device=strata.world)
    l1 = lap(x)
    assert l1.domain == (I[0:21], J[0:15])
    np.testing.assert_array_equal(l1.numpy(), lap_np(a))
    l2 = lap(lap(x))
    np.testing.assert_allclose(np.asarray(l2), lap_np(lap_np(a)), rtol=1e-13, atol=1e-12)
    got = strata.evaluate(l1)
    launched = strata.world.size > 1 or "OMPI_COMM_WORLD_SIZE" in __import__("os").environ
    assert isinstance(got, xp.Array) == launched, type(got)

    # A time loop: the interior of a team array stepped by a stencil over the field of it.
    u = xp.asarray(a, device=strata.world)
    ref = a.copy()
    prepared = []
    for s in range(40):
        dt = 0.1 + 0.001 * s
        new = step(strata.field(u, I[-1:22], J[-1:16], device=strata.world), dt)
        u[1:-1, 1:-1] = new
        ref[1:-1, 1:-1] = ref[1:-1, 1:-1] + dt * lap_np(ref)
        prepared.append(strata.world.timings()["prepared"])
    np.testing.assert_array_equal(np.asarray(u), ref)
    assert prepared[-1] == prepared[1], prepared

    try:
        strata.evaluate(l1, out=x)
    except strata.FieldError as e:
        assert not launched or "on a team" in str(e), str(e)
    print(f"rank {rank}: fields ok", flush=True)


if __name__ == "__main__":
    main()
