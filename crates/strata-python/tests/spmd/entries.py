"""Entries of a `.strata` module whose types live on a team (`team = world`), called from
Python under mpirun with team arrays (run by test_spmd.py): a time loop that mixes an entry
with array-API assignments keeps every field resident, plans and compiles once, and equals
numpy alone step for step.

    mpirun -n P python entries.py
"""

import os

import numpy as np

import strata
import strata.array_api as xp

TEXT = """
!In = tensor<f64, I[-1:33] block, J[-1:21], team = world>
!Out = tensor<f64, I[0:32] block, J[0:20], team = world>

func @lap(%inp: !In) -> !Out {
  %four = constant(value = 4.0) : f64
  %ip = cartesian_shift(%inp, dim = I, offset = 1) : tensor<f64, I[-2:32] block, J[-1:21], team = world>
  %im = cartesian_shift(%inp, dim = I, offset = -1) : tensor<f64, I[0:34] block, J[-1:21], team = world>
  %jp = cartesian_shift(%inp, dim = J, offset = 1) : tensor<f64, I[-1:33] block, J[-2:20], team = world>
  %jm = cartesian_shift(%inp, dim = J, offset = -1) : tensor<f64, I[-1:33] block, J[0:22], team = world>
  %si = plus(%ip, %im) : tensor<f64, I[0:32] block, J[-1:21], team = world>
  %sj = plus(%jp, %jm) : tensor<f64, I[-1:33] block, J[0:20], team = world>
  %s = plus(%si, %sj) : !Out
  %c = multiplies(%four, %inp) : !In
  %r = minus(%s, %c) : !Out
  return %r
}

func @add(%a: f64, %b: f64) -> f64 {
  %s = plus(%a, %b) : f64
  return %s
}

program @energy(%total: out tensor<f64, team = world>, %norm: out tensor<f64, I[0:32] block, J[0:20], team = world>, %u: !Out) {
  %sq = multiplies(%u, %u) : !Out
  %t = map_reduce(@add, %sq, init = 0.0, einsum = "ij->") : tensor<f64, team = world>
  %total <- %t
  %norm <- %sq
}

"""


def lap_numpy(a: np.ndarray) -> np.ndarray:
    c = a[1:-1, 1:-1]
    return ((a[2:, 1:-1] + a[:-2, 1:-1]) + (a[1:-1, 2:] + a[1:-1, :-2])) - 4.0 * c


def main() -> None:
    rank = strata.world.rank
    m = strata.compile(TEXT, "entries.strata")
    a0 = np.random.default_rng(11).random((34, 22))
    u = xp.asarray(a0, device=strata.world)
    ref = a0.copy()
    prepared = []
    for step in range(60):
        dt = 0.2 + 0.0005 * step
        lap = m.lap(u)  # a team array: each rank its rows, halos exchanged inside
        assert lap.shape == (32, 20) and lap.device == strata.Place(team=strata.world), (lap.shape, lap.device)
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + dt * lap
        ref[1:-1, 1:-1] = ref[1:-1, 1:-1] + dt * lap_numpy(ref)
        prepared.append(strata.world.timings()["prepared"])
        if step % 20 == 0 or step == 59:
            got = np.asarray(u)
            assert np.array_equal(got, ref), f"step {step}: off by {np.abs(got - ref).max()}"
    assert prepared[-1] == prepared[1], f"programs prepared after the second step: {prepared[1]} → {prepared[-1]}"

    # A program with a replicated and a distributed result; arguments every rank holds (numpy).
    inner = ref[1:-1, 1:-1]
    total, norm = m.energy(u=np.ascontiguousarray(inner))
    assert isinstance(total, np.ndarray) and total.shape == (), type(total)
    np.testing.assert_allclose(float(total), float((inner * inner).sum()), rtol=1e-12)
    assert np.array_equal(np.asarray(norm), inner * inner)
    # The same from a team array, as a named tuple.
    r = m.energy(u=xp.asarray(inner, device=strata.world))
    np.testing.assert_allclose(float(r.total), float(total), rtol=1e-12)

    # Clear errors on every rank (no hang): a wrong shape; `out=` (numpy arrays written in
    # place) of a distributed call.
    wrong = [(lambda: m.lap(xp.asarray(np.zeros((30, 22)), device=strata.world)), "30, 22")]
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        wrong.append((lambda: m.lap(u, out=np.zeros((32, 20))), "out="))
    for call, words in wrong:
        try:
            call()
        except strata.Error as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError(f"no error for {words}")
    print(f"rank {rank}: entries ok ({prepared[-1]} programs prepared)", flush=True)


if __name__ == "__main__":
    main()
