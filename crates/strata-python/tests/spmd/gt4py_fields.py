"""GT4Py programs on `strata.gt4py.backend` over team fields (`device=strata.world`), run
under mpirun by test_spmd.py: the programs are the ones a single-process user writes; only the
fields are made on the team. Checked against numpy alone (bit-exact where the order of
operations is numpy's), the compiled programs counted.

    mpirun -n P python gt4py_fields.py
"""

import os
import sys

import numpy as np

import gt4py.next as gtx
from gt4py.next import neighbor_sum

import strata
import strata.gt4py as sg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tests", "oracles"))
import mesh  # noqa: E402  (a generated unstructured mesh with skips)

I, J = gtx.Dimension("I"), gtx.Dimension("J")
F = gtx.Field[[I, J], gtx.float64]
N = 48


@gtx.field_operator
def lap(f: F) -> F:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@gtx.field_operator
def step(f: F, dt: gtx.float64) -> F:
    return f + dt * lap(f)


@gtx.program(backend=sg.backend)
def diffuse(f: F, dt: gtx.float64, out: F):
    step(f, dt, out=out, domain={I: (1, 47), J: (1, 47)})  # N = 48


Vx, Ed = gtx.Dimension("Vertex"), gtx.Dimension("Edge")
V2EDim = gtx.Dimension("V2E", kind=gtx.DimensionKind.LOCAL)
E2VDim = gtx.Dimension("E2V", kind=gtx.DimensionKind.LOCAL)
V2E = gtx.FieldOffset("V2E", source=Ed, target=(Vx, V2EDim))
E2V = gtx.FieldOffset("E2V", source=Vx, target=(Ed, E2VDim))
FV, FE = gtx.Field[gtx.Dims[Vx], gtx.float64], gtx.Field[gtx.Dims[Ed], gtx.float64]


@gtx.field_operator
def edge_flux(pp: FV, s: FE) -> FE:
    return s * 0.5 * (pp(E2V[0]) + pp(E2V[1]))


@gtx.field_operator
def vertex_sum(pp: FV, s: FE) -> FV:
    return neighbor_sum(edge_flux(pp, s)(V2E), axis=V2EDim)


@gtx.program(backend=sg.backend)
def vertex_sum_program(pp: FV, s: FE, out: FV):
    vertex_sum(pp, s, out=out)


def diffusion(rank: int) -> None:
    a = np.random.default_rng(3).random((N, N))
    dom = gtx.domain({I: (0, N), J: (0, N)})
    u, v = sg.as_field(dom, a, device=strata.world), sg.as_field(dom, a, device=strata.world)
    ref = a.copy()
    prepared = []
    for s in range(120):
        dt = 0.2 + 0.0002 * s  # a new float every step: a parameter, not a new program
        diffuse(u, dt, v, offset_provider={})
        u, v = v, u
        nxt = ref.copy()
        c = ref[1:-1, 1:-1]
        nxt[1:-1, 1:-1] = c + dt * (-4.0 * c + ref[2:, 1:-1] + ref[:-2, 1:-1] + ref[1:-1, 2:] + ref[1:-1, :-2])
        ref = nxt
        prepared.append(strata.world.timings()["prepared"])
        if s % 40 == 0 or s == 119:
            got = u.asnumpy()  # gathers on every rank
            assert got.shape == (N, N)
            assert np.array_equal(got, ref), f"step {s}: off by {np.abs(got - ref).max()}"
    assert prepared[-1] == prepared[0], f"programs prepared after the first step: {prepared[0]} → {prepared[-1]}"
    full = sg.full(dom, 2.5, device=strata.world)
    assert np.array_equal(full.asnumpy(), np.full((N, N), 2.5))
    if strata.world.size > 1:
        assert type(u).__name__ == "_TeamField", type(u)
    print(f"rank {rank}: diffusion ok, prepared {prepared[0]} programs", flush=True)


def unstructured(rank: int) -> None:
    e2v, v2e = mesh.make_mesh()
    nv, ne = v2e.shape[0], e2v.shape[0]
    rng = np.random.default_rng(6)
    pp, s = rng.standard_normal(nv), rng.standard_normal(ne)
    offsets = {
        "V2E": gtx.as_connectivity([Vx, V2EDim], codomain=Ed, data=v2e.astype(np.int32), skip_value=-1),
        "E2V": gtx.as_connectivity([Ed, E2VDim], codomain=Vx, data=e2v.astype(np.int32)),
    }
    out = sg.zeros(gtx.domain({Vx: (0, nv)}), device=strata.world)
    args = (sg.as_field(gtx.domain({Vx: (0, nv)}), pp, device=strata.world),
            sg.as_field(gtx.domain({Ed: (0, ne)}), s, device=strata.world))
    flux = s * 0.5 * (pp[e2v[:, 0]] + pp[e2v[:, 1]])
    want = np.where(v2e != -1, flux[np.maximum(v2e, 0)], 0.0).sum(axis=1)
    for _ in range(3):  # the inspector runs once; later calls reuse what it found
        vertex_sum_program(*args, out, offset_provider=offsets)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, atol=1e-12)
    # New table entries (every vertex's first edge skipped, the edges' ends swapped): the
    # inspector runs again.
    cut, swapped = v2e.copy(), e2v[:, ::-1].copy()
    cut[:, 0] = -1
    offsets = {
        "V2E": gtx.as_connectivity([Vx, V2EDim], codomain=Ed, data=cut.astype(np.int32), skip_value=-1),
        "E2V": gtx.as_connectivity([Ed, E2VDim], codomain=Vx, data=swapped.astype(np.int32)),
    }
    want = np.where(cut != -1, flux[np.maximum(cut, 0)], 0.0).sum(axis=1)
    for _ in range(2):
        vertex_sum_program(*args, out, offset_provider=offsets)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, atol=1e-12)
    print(f"rank {rank}: unstructured ok", flush=True)


if __name__ == "__main__":
    rank = strata.world.rank
    diffusion(rank)
    unstructured(rank)
