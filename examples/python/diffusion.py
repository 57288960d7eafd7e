"""A 2-D diffusion simulation on team arrays: run it alone, or on several ranks with
`strata launch --ranks 2 python3 examples/python/diffusion.py` (or `mpirun -n 2 python3 …`).
Each rank holds its block of rows; each step exchanges one halo row with each neighbour, updates
the interior in place and compiles once (the time step `dt` is a parameter).

    python3 examples/python/diffusion.py [--n 1024] [--steps 500] [--check] [--save u.npy]

`--check` runs the same loop in numpy on every rank and compares the result bit for bit;
`--save` writes the final state into one `.npy` file, each rank its rows."""
import argparse
import time

import numpy as np

import strata
import strata.array_api as xp


def step(u, dt):
    """One explicit diffusion step: the same text runs on numpy arrays and team arrays."""
    lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
    u[1:-1, 1:-1] = u[1:-1, 1:-1] + dt * lap


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1024, help="grid points per side")
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--check", action="store_true", help="compare with numpy, bit for bit")
    p.add_argument("--save", help="write the final state into this .npy file")
    a = p.parse_args()
    world = strata.world
    x = np.linspace(0.0, 1.0, a.n)
    u0 = np.exp(-50.0 * ((x[:, None] - 0.5) ** 2 + (x[None, :] - 0.5) ** 2))
    u = xp.asarray(u0, device=world)  # each rank keeps its rows
    t0 = time.perf_counter()
    for k in range(a.steps):
        step(u, 0.2 + 0.04 * np.sin(k))  # dt changes every step: one compiled program
    mass = float(xp.sum(u))  # a collective: every rank gets the total
    elapsed = time.perf_counter() - t0
    if world.rank == 0:
        print(f"{a.steps} steps of {a.n}x{a.n} on {world.size} rank(s): {elapsed:.3f} s, "
              f"{1e3 * elapsed / a.steps:.3f} ms per step, mass {mass:.12g}")
    if a.save:
        strata.save(a.save, u)
    if a.check:
        w = u0.copy()
        for k in range(a.steps):
            step(w, 0.2 + 0.04 * np.sin(k))
        same = np.array_equal(np.asarray(u), w)  # gathers u on every rank
        if world.rank == 0:
            print("equal to numpy bit for bit" if same else "DIFFERS from numpy")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
