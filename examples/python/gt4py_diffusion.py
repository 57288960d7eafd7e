"""A GT4Py diffusion program running unchanged over MPI on Strata: the program is plain GT4Py;
only the fields are made on the team (`device=strata.world`), so each rank holds its rows of I
and the halo exchanges come from the program's shifts. Run it alone, or on several ranks with
`strata launch --ranks 2 python3 examples/python/gt4py_diffusion.py` (or `mpirun -n 2 …`).

    python3 examples/python/gt4py_diffusion.py [--n 512] [--steps 200] [--check]

`--check` runs the same steps in numpy and compares the result bit for bit (needs the
`gt4py` package: `pip install gt4py`)."""
import argparse
import time

import numpy as np

import gt4py.next as gtx

import strata
import strata.gt4py

I, J = gtx.Dimension("I"), gtx.Dimension("J")
F = gtx.Field[[I, J], gtx.float64]


@gtx.field_operator
def laplacian(u: F) -> F:
    return -4.0 * u + u(I + 1) + u(I - 1) + u(J + 1) + u(J - 1)


@gtx.field_operator
def step(u: F, dt: gtx.float64) -> F:
    return u + dt * laplacian(u)


@gtx.program(backend=strata.gt4py.backend)
def diffuse(u: F, dt: gtx.float64, n: gtx.int32, out: F):
    step(u, dt, out=out, domain={I: (1, n - 1), J: (1, n - 1)})


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=512, help="grid points per side")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--check", action="store_true", help="compare with numpy, bit for bit")
    a = p.parse_args()
    world = strata.world
    x = np.linspace(0.0, 1.0, a.n)
    u0 = np.exp(-50.0 * ((x[:, None] - 0.5) ** 2 + (x[None, :] - 0.5) ** 2))
    domain = gtx.domain({I: (0, a.n), J: (0, a.n)})
    u = strata.gt4py.as_field(domain, u0, device=world)  # each rank keeps its rows of I
    v = strata.gt4py.as_field(domain, u0, device=world)
    t0 = time.perf_counter()
    for k in range(a.steps):
        if k == 1:  # the first step lowered and compiled the program (GT4Py's, then Strata's)
            t1 = time.perf_counter()
        diffuse(u, 0.2 + 0.04 * np.sin(k), np.int32(a.n), v, offset_provider={})
        u, v = v, u
    t2 = time.perf_counter()
    result = u.asnumpy()  # gathers the field on every rank
    if world.rank == 0 and a.steps > 1:
        print(f"{a.steps} GT4Py steps of {a.n}x{a.n} on {world.size} rank(s): first step {t1 - t0:.3f} s, then "
              f"{1e3 * (t2 - t1) / (a.steps - 1):.3f} ms per step, mass {result.sum():.12g}")
    if a.check:
        w = u0.copy()
        for k in range(a.steps):
            dt, c = 0.2 + 0.04 * np.sin(k), w[1:-1, 1:-1]
            nxt = w.copy()
            nxt[1:-1, 1:-1] = c + dt * (-4.0 * c + w[2:, 1:-1] + w[:-2, 1:-1] + w[1:-1, 2:] + w[1:-1, :-2])
            w = nxt
        same = np.array_equal(result, w)
        if world.rank == 0:
            print("equal to numpy bit for bit" if same else "DIFFERS from numpy")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
