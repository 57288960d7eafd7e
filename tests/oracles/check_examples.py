"""Runs Strata's examples with generated data and compares with numpy / SciPy oracles.

Usage: python check_examples.py STRATA_BINARY WORKDIR [--backend auto|interp|native] [--ranks N] [NAME ...]
With the default `auto` backend, entries the native backend compiles run natively and the rest
in the interpreter; `interp` checks the reference interpreter alone. With `--ranks N` every run
is `strata run --ranks N` (MPI; the distributed examples are partitioned over N processes).
Exits non-zero on the first mismatch, printing what differed. Float results are compared with
rtol=1e-12, atol=1e-12 (the interpreter evaluates in the same precision and order as the
straightforward numpy formula, so only reassociation of sums may differ).
"""

import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mesh  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
RTOL = ATOL = 1e-12
BACKEND = "auto"
RANKS = None


def run(strata, example, work, args, outs, entry=None, backend=None):
    """Runs an example entry; `args` maps names to numpy arrays (saved as .npy) or to paths of
    files already written. Returns the outputs loaded (`.npy`) or their paths (other files)."""
    cmd = [strata, "run", os.path.join(ROOT, "examples", example), "--backend", backend or BACKEND]
    if RANKS:
        cmd += ["--ranks", str(RANKS)]
    if entry:
        cmd += ["--entry", entry]
    for name, value in args.items():
        path = value
        if isinstance(value, np.ndarray):
            path = os.path.join(work, f"{name}.npy")
            np.save(path, value)
        cmd += ["--arg", f"{name}={path}"]
    paths = {}
    for name, ext in outs.items():
        paths[name] = os.path.join(work, f"out_{name}{ext}")
        cmd += ["--out", f"{name}={paths[name]}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{example}: strata run failed ({proc.returncode}):\n{proc.stderr}")
    return {n: np.load(p) if p.endswith(".npy") else p for n, p in paths.items()}


def expect(name, got, want):
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise SystemExit(f"{name}: got shape {got.shape} {got.dtype}, expected {want.shape} {want.dtype}")
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        err = np.max(np.abs(got - want))
        raise SystemExit(f"{name}: max abs error {err}\n got {got.ravel()[:8]}\nwant {want.ravel()[:8]}")
    print(f"ok {name}: shape {got.shape}, max |value| {np.max(np.abs(want)) if want.size else 0:.3g}")


def lap_np(x):
    """Seed 000's horizontal laplacian of a field with a one-point halo in I and J."""
    return x[2:, 1:-1] + x[:-2, 1:-1] + (x[1:-1, 2:] + x[1:-1, :-2]) - 4.0 * x[1:-1, 1:-1]


def laplacian(strata, work, rng):
    inp = rng.standard_normal((7, 9, 9))  # I[-1:6], J[-1:8], K[0:9]
    out = run(strata, "stencil/laplacian.strata", work, {"inp": inp}, {"out": ".npy"})["out"]
    expect("laplacian", out, lap_np(inp))


def tridiagonal_check(strata, work, rng, example, shape=(3, 7, 5), axis=-1, entry=None, dtype=np.float64):
    """Solves along `axis` (numpy's dense f64 solver per system as the oracle)."""
    a, c, d = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    b = (4.0 + rng.random(shape)).astype(dtype)
    x = run(strata, example, work, {"a": a, "b": b, "c": c, "d": d}, {"x": ".npy"}, entry)["x"]
    a, b, c, d = (np.moveaxis(v, axis, -1).astype(np.float64) for v in (a, b, c, d))
    want = np.empty(a.shape)
    for idx in np.ndindex(a.shape[:-1]):
        m = np.diag(b[idx]) + np.diag(a[idx][1:], -1) + np.diag(c[idx][:-1], 1)
        want[idx] = np.linalg.solve(m, d[idx])
    want = np.moveaxis(want, -1, axis)
    if dtype == np.float32:
        close32(f"{example} @{entry}", x, want.astype(np.float32))
    else:
        expect(example, x, want)


def tridiagonal(strata, work, rng):
    """The same generic steps in f64 and in f32."""
    tridiagonal_check(strata, work, rng, "stencil/tridiagonal.strata", entry="solve_tridiag")
    tridiagonal_check(
        strata, work, rng, "stencil/tridiagonal.strata", shape=(4, 6), entry="solve_tridiag_f32", dtype=np.float32
    )


def distributed_stencils(strata, work, rng):
    """The examples block-distributed along I (over `--ranks` processes, or in one)."""
    inp = rng.standard_normal((66, 66, 8))  # I[-1:65], J[-1:65], K[0:8]
    out = run(strata, "distributed/laplacian.strata", work, {"inp": inp}, {"out": ".npy"})["out"]
    expect("distributed/laplacian", out, lap_np(inp))
    inp = rng.standard_normal((132, 132, 16))  # I[-2:130], J[-2:130], K[0:16]
    out = run(strata, "distributed/laplacian_of_laplacian.strata", work, {"inp": inp}, {"out": ".npy"})["out"]
    expect("distributed/laplacian_of_laplacian", out, lap_np(lap_np(inp)))
    tridiagonal_check(strata, work, rng, "distributed/tridiagonal.strata")
    # Scans along I: rank after rank, each starting from the previous rank's last state.
    tridiagonal_check(strata, work, rng, "distributed/tridiagonal_along_i.strata", shape=(11, 3), axis=0)
    x = rng.standard_normal((40, 5))
    outs = {"running": ".npy", "from_end": ".npy", "difference": ".npy"}
    out = run(strata, "distributed/prefix_sum.strata", work, {"x": x}, outs)
    expect("distributed/prefix_sum.running", out["running"], np.cumsum(x, axis=0))
    expect("distributed/prefix_sum.from_end", out["from_end"], np.cumsum(x[::-1], axis=0)[::-1])
    expect("distributed/prefix_sum.difference", out["difference"], x[1:])
    # Complex values move through the halo exchange like any other.
    z = rng.standard_normal((64, 8)) + 1j * rng.standard_normal((64, 8))
    w = np.array(0.2 - 0.3j)
    out = run(strata, "distributed/complex_phase.strata", work, {"z": z, "w": w}, {"result": ".npy"})["result"]
    expect("distributed/complex_phase", out, np.exp((z[2:] + z[:-2]) * w))
    # Reductions over I: collectives combining the ranks' partials.
    x = rng.standard_normal((50, 6))
    outs = {"colsum": ".npy", "scaled": ".npy", "energy": ".npy"}
    out = run(strata, "distributed/statistics.strata", work, {"x": x}, outs)
    scaled = x / x.max()
    expect("distributed/statistics.colsum", out["colsum"], x.sum(axis=0))
    expect("distributed/statistics.scaled", out["scaled"], scaled)
    expect("distributed/statistics.energy", out["energy"], np.asarray((scaled * scaled).sum()))


def nabla_data(rng):
    """The generated mesh's tables and random fields; the nabla's two components by numpy."""
    e2v, v2e = mesh.make_mesh()
    nv, ne = v2e.shape[0], e2v.shape[0]
    assert (nv, ne) == (5440, 16167)
    pp = rng.standard_normal(nv)
    s_mxx, s_myy = rng.standard_normal(ne), rng.standard_normal(ne)
    vol = 1.0 + rng.random(nv)
    # sign: +1 where the vertex is the edge's first vertex, -1 otherwise, 0 for skipped slots.
    first = e2v[np.maximum(v2e, 0), 0] == np.arange(nv)[:, None]
    sign = np.where(v2e == -1, 0.0, np.where(first, 1.0, -1.0))
    args = {"pp": pp, "s_mxx": s_mxx, "s_myy": s_myy, "sign": sign, "vol": vol, "e2v": e2v, "v2e": v2e}
    valid = v2e != -1
    want = []
    for s in (s_mxx, s_myy):
        flux = s * 0.5 * (pp[e2v[:, 0]] + pp[e2v[:, 1]])
        want.append(np.where(valid, flux[np.maximum(v2e, 0)] * sign, 0.0).sum(axis=1) / vol)
    return args, want


def nabla(strata, work, rng):
    args, want = nabla_data(rng)
    out = np.load(run(strata, "stencil/nabla.strata", work, args, {"out": ".npz"})["out"])
    for field, w in zip(("f0", "f1"), want):
        expect(f"nabla.{field}", out[field], w)


def mesh_laplacian(strata, work, rng):
    """The laplacian of laplacian on the mesh: its inner laplacian is extracted into a vertex
    temporary, the edge gradients recomputed per vertex neighbor."""
    args, _ = nabla_data(rng)
    args = {k: args[k] for k in ("pp", "sign", "vol", "e2v", "v2e")}
    e2v, v2e, sign, vol = args["e2v"], args["v2e"], args["sign"], args["vol"]
    valid = v2e != -1

    def lap(f):
        grad = f[e2v[:, 1]] - f[e2v[:, 0]]
        return np.where(valid, grad[np.maximum(v2e, 0)] * sign, 0.0).sum(axis=1) / vol

    got = run(strata, "stencil/mesh_laplacian.strata", work, args, {"out": ".npy"})["out"]
    expect("mesh_laplacian", got, lap(lap(args["pp"])))


def vertical_indirection(strata, work, rng):
    # Tables with an extra dimension (I): per-column K coordinates, numpy fancy indexing.
    f = rng.standard_normal((8, 10))
    kidx = rng.integers(0, 10, (8, 10, 1)).astype(np.int32)
    got = run(strata, "stencil/vertical_indirection.strata", work, {"f": f, "kidx": kidx}, {"result": ".npy"}, entry="lookup")["result"]
    rows = np.arange(8)[:, None]
    expect("as_offset lookup (table over I, K, NB_K)", got, f[rows, kidx[:, :, 0]])
    kn = rng.integers(-1, 10, (8, 10, 3)).astype(np.int32)
    kn[0, :, :] = -1  # a column with every neighbor skipped
    got = run(strata, "stencil/vertical_indirection.strata", work, {"f": f, "kn": kn}, {"result": ".npy"}, entry="gather_levels")["result"]
    picked = f[np.arange(8)[:, None, None], np.maximum(kn, 0)]
    expect("reduce over a per-column table with skips", got, np.where(kn >= 0, picked, 0.0).sum(axis=2))
    inner = kidx[2:6]
    got = run(strata, "stencil/vertical_indirection.strata", work, {"f": f, "kidx": inner}, {"result": ".npy"}, entry="lookup_inner")["result"]
    expect("table over I[2:6] of a field over I[0:8]", got, f[np.arange(2, 6)[:, None], inner[:, :, 0]])


def distributed_nabla(strata, work, rng):
    """The nabla with vertices and edges distributed: the rows each rank reads through the
    tables are planned from their entries at run time. Nothing is reassociated, so the result
    is also bit for bit the single-process run's."""
    global RANKS
    args, want = nabla_data(rng)
    outs = {"nabla_x": ".npy", "nabla_y": ".npy"}
    got = run(strata, "distributed/nabla.strata", work, args, outs)
    for name, w in zip(outs, want):
        expect(f"distributed/nabla.{name}", got[name], w)
    ranks, RANKS = RANKS, None
    single = run(strata, "distributed/nabla.strata", work, args, outs)
    RANKS = ranks
    for name in outs:
        if got[name].tobytes() != single[name].tobytes():
            raise SystemExit(f"distributed/nabla.{name}: differs from the single-process run")
    print("ok distributed/nabla: bit for bit the single-process run")


def distributed_normalize(strata, work, rng):
    """A `collect` read inside the program: the smoothed field gathered on every rank, column
    norms and the normalized field computed replicated, distributed again. Nothing is
    reassociated (the norms are summed over the whole field on every rank)."""
    inp = rng.standard_normal((42, 6))
    outs = {"norms": ".npy", "unit": ".npy"}
    got = run(strata, "distributed/normalize.strata", work, {"inp": inp}, outs)
    u = (inp[2:] + inp[:-2] + inp[1:-1]) * 0.3333333333333333
    norms = np.sqrt((u * u).sum(axis=0))
    expect("distributed/normalize.norms", got["norms"], norms)
    expect("distributed/normalize.unit", got["unit"], u / norms)


def distributed_sparse(strata, work, rng):
    """A SciPy matrix and a ragged tensor distributed by rows: each rank reads only its rows of
    the file. The matrix in every SciPy format, compressed or not, with duplicate entries and
    empty rows; the ragged rows with empty ones. Row values are computed as in one process
    (compared bit for bit); the reductions over the rows are compared with numpy to rounding."""
    import scipy.sparse as sp

    global RANKS
    a = sp.random(3000, 2000, density=0.003, format="csr", random_state=np.random.RandomState(5))
    a = sp.diags(np.where(np.arange(3000) % 7 == 3, 0.0, 1.0)) @ a  # every 7th row empty
    a.eliminate_zeros()
    x, b = rng.standard_normal(2000), rng.standard_normal(3000)
    r = b - a @ x
    coo = a.tocoo()
    dup = sp.coo_matrix(  # the first 100 entries split in two halves: duplicates add up
        (np.concatenate([coo.data / 2, coo.data[:100] / 2, coo.data[100:] / 2]),
         (np.concatenate([coo.row, coo.row[:100], coo.row[100:]]), np.concatenate([coo.col, coo.col[:100], coo.col[100:]]))),
        shape=a.shape,
    )
    files = {"csr": a, "csc": a.tocsc(), "coo": coo, "coo_duplicates": dup}
    outs = {"r": ".npy", "norm2": ".npy"}
    first = None
    for label, m in files.items():
        for compressed in (True, False):
            path = os.path.join(work, f"a_{label}_{compressed}.npz")
            sp.save_npz(path, m, compressed=compressed)
            got = run(strata, "distributed/sparse_residual.strata", work, {"a": path, "x": x, "b": b}, outs)
            tag = f"distributed/sparse_residual ({label}, {'deflated' if compressed else 'stored'})"
            if label != "coo_duplicates":
                expect(tag + ".r", got["r"], r)
            elif not np.allclose(got["r"], r, rtol=1e-12, atol=1e-12):
                raise SystemExit(f"{tag}: max error {np.abs(got['r'] - r).max()}")
            expect(tag + ".norm2", got["norm2"], np.asarray(r @ r))
            first = first if first is not None else got["r"]
    ranks, RANKS = RANKS, None
    single = run(strata, "distributed/sparse_residual.strata", work, {"a": os.path.join(work, "a_csr_True.npz"), "x": x, "b": b}, outs)
    RANKS = ranks
    if single["r"].tobytes() != first.tobytes():
        raise SystemExit("distributed/sparse_residual.r: differs from the single-process run")
    print("ok distributed/sparse_residual: rows bit for bit the single-process run")

    lengths = rng.integers(0, 65, 1000)
    lengths[[0, 1, 500, 999]] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = rng.standard_normal(offsets[-1]).astype(np.float32)
    path = os.path.join(work, "jagged.npz")
    np.savez(path, offsets=offsets, values=values)
    got = run(strata, "distributed/ragged_rows.strata", work, {"x": path}, {"sums": ".npy", "largest": ".npy"})
    want = np.array([values[offsets[i]:offsets[i + 1]].sum(dtype=np.float32) for i in range(1000)], dtype=np.float32)
    if got["sums"].dtype != np.float32 or not np.allclose(got["sums"], want, rtol=1e-5, atol=1e-5):
        raise SystemExit(f"distributed/ragged_rows.sums: got {got['sums'][:6]}, want {want[:6]}")
    if got["largest"] != got["sums"].max():
        raise SystemExit(f"distributed/ragged_rows.largest: {got['largest']} is not the largest row sum {got['sums'].max()}")
    print("ok distributed/ragged_rows: 1000 rows, 4 empty")


def distributed_gather(strata, work, rng):
    """Rows of a distributed field picked by distributed indices (the rows each rank reads
    planned from the indices at run time), then differenced along the picked rows."""
    x = rng.standard_normal((40, 3))  # I[-1:39]
    idx = rng.integers(-1, 39, (11, 1)).astype(np.int64)
    idx[:3, 0] = [-1, 38, 0]  # both ends of the interval
    got = run(strata, "distributed/gather_rows.strata", work, {"x": x, "idx": idx}, {"result": ".npy"})["result"]
    picked = x[idx[:, 0] + 1]
    expect("distributed/gather_rows", got, picked[1:] - picked[:-1])


def spmv_csr(strata, work, rng):
    import scipy.sparse as sp

    a = sp.random(4096, 4096, density=0.002, format="csr", random_state=np.random.RandomState(1), dtype=np.float64)
    x = rng.standard_normal(4096)
    sp.save_npz(os.path.join(work, "a.npz"), a)
    np.save(os.path.join(work, "x.npy"), x)
    out = run(strata, "sparse/spmv_csr.strata", work, {"a": os.path.join(work, "a.npz"), "x": os.path.join(work, "x.npy")}, {"result": ".npy"}, entry="spmv")
    expect("spmv_csr", out["result"], a @ x)
    # The file may hold the same matrix in any SciPy format.
    for fmt in ("csc", "coo"):
        sp.save_npz(os.path.join(work, f"a_{fmt}.npz"), a.asformat(fmt))
        out = run(strata, "sparse/spmv_csr.strata", work, {"a": os.path.join(work, f"a_{fmt}.npz"), "x": os.path.join(work, "x.npy")}, {"result": ".npy"}, entry="spmv")
        expect(f"spmv_from_{fmt}", out["result"], a @ x)
    # Format conversions keep the matrix: CSR -> CSC -> COO -> DCSR, written back as SciPy COO.
    out = run(strata, "sparse/spmv_csr.strata", work, {"a": os.path.join(work, "a.npz")}, {"result": ".npz"}, entry="formats")
    back = sp.load_npz(out["result"])
    expect("formats", back.toarray(), a.toarray())


def sparse_dot(strata, work, rng):
    import scipy.sparse as sp

    n = 1_000_000
    rs = np.random.RandomState(2)
    a = sp.random(1, n, density=2e-3, format="coo", random_state=rs)
    b = sp.random(1, n, density=2e-3, format="coo", random_state=rs)
    b = (b + sp.coo_matrix((np.ones(50), (np.zeros(50, int), a.col[:50])), shape=(1, n))).tocoo()  # overlap
    for name, m in (("a", a), ("b", b)):
        sp.save_npz(os.path.join(work, f"{name}.npz"), m)
    files = {"a": os.path.join(work, "a.npz"), "b": os.path.join(work, "b.npz")}
    out = run(strata, "sparse/sparse_dot.strata", work, files, {"result": ".npy"}, entry="dot")
    expect("sparse_dot", out["result"], np.array(a.multiply(b).sum()))
    out = run(strata, "sparse/sparse_dot.strata", work, files, {"result": ".npz"}, entry="hadamard")
    expect("hadamard", sp.load_npz(out["result"]).toarray(), a.multiply(b).toarray())


def spgemm(strata, work, rng):
    import scipy.sparse as sp

    rs = np.random.RandomState(3)
    a = sp.random(200, 300, density=0.02, format="csr", random_state=rs)
    b = sp.random(300, 250, density=0.03, format="csr", random_state=rs)
    a.data, b.data = a.data * 4, b.data * 4
    for name, m in (("a", a), ("b", b)):
        sp.save_npz(os.path.join(work, f"{name}.npz"), m)
    files = {"a": os.path.join(work, "a.npz"), "b": os.path.join(work, "b.npz")}
    c = (a @ b).tocsr()
    c.eliminate_zeros()
    c.sort_indices()
    out = run(strata, "sparse/spgemm.strata", work, files, {"result": ".npz"}, entry="spgemm")
    got = sp.load_npz(out["result"]).tocsr()
    if not (got.has_sorted_indices and np.array_equal(got.indptr, c.indptr) and np.array_equal(got.indices, c.indices)):
        raise SystemExit(f"spgemm: stored pattern differs from SciPy's ({got.nnz} entries, SciPy {c.nnz})")
    expect("spgemm", got.data, c.data)
    sp.save_npz(os.path.join(work, "c.npz"), c)
    out = run(strata, "sparse/spgemm.strata", work, {"c": os.path.join(work, "c.npz")}, {"result": ".npz"}, entry="row_entries")
    z = np.load(out["result"])
    expect("row_entries offsets", z["offsets"], c.indptr.astype(np.int64))
    expect("row_entries", z["values"], c.indices.astype(np.int64))
    out = run(strata, "sparse/spgemm.strata", work, {"c": os.path.join(work, "c.npz")}, {"result": ".npz"}, entry="row_values")
    expect("row_values", np.load(out["result"])["values"], c.data)
    t = c.multiply(c > 1).tocsr()
    t.eliminate_zeros()
    out = run(strata, "sparse/spgemm.strata", work, files, {"result": ".npz"}, entry="threshold")
    expect("threshold", sp.load_npz(out["result"]).toarray(), t.toarray())


def ragged_row_sum(strata, work, rng):
    lengths = rng.integers(0, 65, 1000)
    lengths[:3] = 0  # empty rows
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = rng.standard_normal(offsets[-1]).astype(np.float32)
    path = os.path.join(work, "jagged.npz")
    np.savez(path, offsets=offsets, values=values)
    out = run(strata, "sparse/ragged_row_sum.strata", work, {"x": path}, {"result": ".npy"})
    want = np.array([values[offsets[i]:offsets[i + 1]].sum(dtype=np.float32) for i in range(1000)], dtype=np.float32)
    got = out["result"]
    if got.dtype != np.float32 or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        raise SystemExit(f"ragged_row_sum: got {got[:6]}, want {want[:6]}")
    print("ok ragged_row_sum: 1000 rows, 3 empty")


def nested(strata, work, rng):
    a = rng.standard_normal((128, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    got = run(strata, "nested/gemm_tensor_of_tensors.strata", work, {"a": a, "b": b}, {"result": ".npy"}, entry="packed_gemm")["result"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    if got.dtype != np.float32 or not np.allclose(got, want, rtol=1e-4, atol=1e-3):
        raise SystemExit(f"gemm_tensor_of_tensors: max error {np.abs(got - want).max()}")
    print("ok gemm_tensor_of_tensors (f32 tiles, tolerance 1e-3)")
    # The tensor-of-tensors entry reads and writes (outer..., inner...) arrays.
    a4 = rng.standard_normal((4, 8, 32, 32)).astype(np.float32)
    b4 = rng.standard_normal((8, 8, 32, 32)).astype(np.float32)
    got = run(strata, "nested/gemm_tensor_of_tensors.strata", work, {"arg0": a4, "arg1": b4}, {"result": ".npy"}, entry="entry")["result"]
    want = np.einsum("ikab,kjbc->ijac", a4.astype(np.float64), b4.astype(np.float64))
    close32("tensor of tensors entry", got, want, tol=1e-3)
    # Two levels of nesting: 2x2 blocks of 4x4 tiles of 8x8, packed twice from 64x64 (f64).
    a, b = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    got = run(strata, "nested/gemm_two_level.strata", work, {"a": a, "b": b}, {"result": ".npy"}, entry="gemm")["result"]
    expect("gemm_two_level (packed twice)", got, a @ b)
    a6, b6 = rng.standard_normal((2, 2, 4, 4, 8, 8)), rng.standard_normal((2, 2, 4, 4, 8, 8))
    got = run(strata, "nested/gemm_two_level.strata", work, {"a": a6, "b": b6}, {"result": ".npy"}, entry="blocked")["result"]
    expect("gemm_two_level blocks of tiles", got, np.einsum("IKikab,KJkjbc->IJijac", a6, b6))


def close32(name, got, want, tol=2e-4):
    if got.dtype != np.float32 or got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol * np.abs(want).max()):
        raise SystemExit(f"{name}: dtype {got.dtype}, shape {got.shape}, max error {np.abs(got - want).max()}")
    print(f"ok {name} (f32, relative tolerance {tol})")


def gemms(strata, work, rng):
    a = rng.standard_normal((256, 1024)).astype(np.float32)
    w = rng.standard_normal((1024, 1024)).astype(np.float32)
    got = run(strata, "nested/gemm_2d.strata", work, {"arg0": a}, {"result": ".npy"}, entry="entry")["result"]
    close32("gemm_2d (constant weight 1)", got, a.astype(np.float64) @ np.ones((1024, 1024)))
    got = run(strata, "nested/gemm_2d.strata", work, {"arg0": a, "w": w}, {"result": ".npy"}, entry="entry_einsum")["result"]
    close32("gemm_2d einsum", got, a.astype(np.float64) @ w.astype(np.float64))
    p = rng.standard_normal((4, 16, 64, 64)).astype(np.float32)
    got = run(strata, "nested/gemm_packed_4d.strata", work, {"arg0": p}, {"result": ".npy"}, entry="entry")["result"]
    want = np.einsum("akbl,nklm->anbm", p.astype(np.float64), np.ones((16, 16, 64, 64)))
    close32("gemm_packed_4d", got, want)
    got = run(strata, "nested/gemm_packed_4d.strata", work, {"a": a, "w": w}, {"result": ".npy"}, entry="gemm")["result"]
    close32("gemm_packed_4d from 2-d (pack, outer_dims_perm, convert to flat and back)", got, a.astype(np.float64) @ w.astype(np.float64))


def pack_layouts(strata, work, rng):
    # MLIR tensor.pack semantics written out in numpy: pad, split each tiled dimension into
    # (blocks, tile), order the blocks by outer_dims_perm and the tile dimensions by inner_dims_pos.
    w = rng.standard_normal((100, 60))
    padded = np.zeros((104, 64))
    padded[:100, :60] = w
    want = padded.reshape(13, 8, 4, 16).transpose(2, 0, 3, 1)  # [o0 = col block, o1 = row block, i0 = col, i1 = row]
    got = run(strata, "nested/pack_layouts.strata", work, {"w": w}, {"result": ".npy"}, entry="blocked")["result"]
    expect("pack inner_dims_pos = [1, 0], outer_dims_perm = [1, 0], padding 0 (flat form)", got, want)
    got = run(strata, "nested/pack_layouts.strata", work, {"w": w}, {"result": ".npy"}, entry="round_trip")["result"]
    expect("unpack of the same layout, shape trims the padding", got, w)
    x = rng.standard_normal((6, 10)).astype(np.float32)
    padded = np.full((6, 12), -1.0, dtype=np.float32)
    padded[:, :10] = x
    got = run(strata, "nested/pack_layouts.strata", work, {"x": x}, {"result": ".npy"}, entry="rows_of_tiles")["result"]
    expect("pack of the columns only, padding -1", got, padded.reshape(6, 3, 4))
    f = rng.integers(-100, 100, (2, 3, 4, 2)).astype(np.int32)
    got = run(strata, "nested/pack_layouts.strata", work, {"f": f}, {"result": ".npy"}, entry="from_flat")["result"]
    expect("convert flat -> tiles, then unpack", got, f.transpose(0, 2, 1, 3).reshape(8, 6))


def convolution(strata, work, rng):
    # Independent oracles: scipy.signal.correlate2d for the padded and the periodic borders,
    # explicit numpy slicing for the strided 1-d case, np.repeat for the upsampling.
    from scipy.signal import correlate2d

    x, w = rng.standard_normal((64, 48)), rng.standard_normal((3, 3))
    got = run(strata, "structured/convolution.strata", work, {"x": x, "w": w}, {"result": ".npy"}, entry="conv_zero")["result"]
    expect("conv_zero (padding = 0.0)", got, correlate2d(x, w, mode="same", boundary="fill", fillvalue=0.0))
    got = run(strata, "structured/convolution.strata", work, {"x": x, "w": w}, {"result": ".npy"}, entry="conv_periodic")["result"]
    expect("conv_periodic (mod in the map)", got, correlate2d(x, w, mode="same", boundary="wrap"))
    x1, w1 = rng.standard_normal(101), rng.standard_normal(5)
    xp = np.concatenate([np.ones(2), x1, np.ones(2)])
    want = np.array([xp[2 * i : 2 * i + 5] @ w1 for i in range(51)])
    got = run(strata, "structured/convolution.strata", work, {"x": x1, "w": w1}, {"result": ".npy"}, entry="conv_strided")["result"]
    expect("conv_strided (stride 2, padding = 1.0)", got, want)
    small = rng.standard_normal((32, 24))
    got = run(strata, "structured/convolution.strata", work, {"x": small}, {"result": ".npy"}, entry="upsample")["result"]
    expect("upsample (floordiv in the map)", got, np.repeat(np.repeat(small, 2, axis=0), 2, axis=1))
    x5, i = rng.standard_normal(5), np.arange(8)
    got = run(strata, "structured/convolution.strata", work, {"x": x5}, {"result": ".npy"}, entry="negative_operands")["result"]
    expect("floordiv / mod of negative operands (Python's // and %)", got, x5[(i - 3) // 2 + 2] + x5[(i - 3) % 5])


def divmod_results(strata, work, rng):
    """A function with two results, called and run as an entry (`result.0`, `result.1`)."""
    a = rng.standard_normal((6, 4)) * 10
    b = rng.random(4) + 0.5
    out = run(strata, "structured/divmod.strata", work, {"a": a, "b": b}, {"result.0": ".npy", "result.1": ".npy"})
    q = np.floor(a / b)
    expect("divmod quotient", out["result.0"], q)
    expect("divmod remainder / divisor", out["result.1"], (a - q * b) / b)


def structured(strata, work, rng):
    a, b = rng.standard_normal((8, 64, 32)), rng.standard_normal((8, 32, 16))
    out = run(strata, "structured/dot_product.strata", work, {"a": a, "b": b}, {"result": ".npy"}, entry="batched_matmul")
    expect("batched_matmul", out["result"], np.einsum("bij,bjk->bik", a, b))
    x, y = rng.standard_normal(1000), rng.standard_normal(1000)
    out = run(strata, "structured/dot_product.strata", work, {"x": x, "y": y}, {"result": ".npy"}, entry="vector_dot")
    expect("vector_dot", out["result"], np.array(x @ y))
    d = np.abs(rng.standard_normal((100, 100)))
    out = run(strata, "structured/product_2d.strata", work, {"d": d}, {"result": ".npy"}, entry="shortest_step")
    expect("min_plus", out["result"], (d[:, :, None] + d[None, :, :]).min(axis=1))
    r = rng.random((100, 100)) < 0.02
    out = run(strata, "structured/product_2d.strata", work, {"r": r}, {"result": ".npy"}, entry="reach_step")
    expect("or_and", out["result"], (r.astype(int) @ r.astype(int)) > 0)
    p, q = rng.random((16, 16)), rng.random((16, 16))
    out = run(strata, "structured/product_2d.strata", work, {"p": p, "q": q}, {"result": ".npy"}, entry="most_likely")
    expect("viterbi", out["result"], (p[:, :, None] * q[None, :, :]).max(axis=1))
    t = rng.standard_normal((2, 3, 4)).astype(np.float32)
    out = run(strata, "structured/transpose.strata", work, {"x": t}, {"result": ".npy"}, entry="transpose_3d")
    expect("transpose", out["result"], t.transpose(2, 0, 1))
    out = run(strata, "structured/transpose.strata", work, {"x": t}, {"result": ".npy"}, entry="transpose_mimir")
    expect("transpose perm_kind = scatter", out["result"], np.transpose(t, np.argsort([1, 2, 0])))
    sq = rng.standard_normal((3, 1, 5)).astype(np.float32)
    out = run(strata, "structured/transpose.strata", work, {"x": sq}, {"result": ".npy"}, entry="squeeze")
    expect("drop_dim", out["result"], np.squeeze(sq, axis=1))
    n = rng.standard_normal((3, 5)).astype(np.float32)
    out = run(strata, "structured/transpose.strata", work, {"x": n}, {"result": ".npy"}, entry="named")
    expect("transpose named", out["result"], n.T)
    row, v, m = (rng.standard_normal(s).astype(np.float32) for s in ((1, 8), (8,), (4, 8)))
    i, j = np.array(2, dtype=np.int64), np.array(5, dtype=np.int64)
    got = run(strata, "structured/transpose.strata", work, {"row": row, "v": v, "m": m, "i": i, "j": j}, {"result": ".npy"}, entry="friends")["result"]
    y = row * v[None, :] + m
    s_ = np.where(y > m, y, m)
    s_[2, 5] *= 2
    close32("broadcast/map/select/get/set", got, s_.astype(np.float64), tol=1e-6)
    a, b = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((32, 48)).astype(np.float32)
    got = run(strata, "structured/product_2d.strata", work, {"a": a, "b": b}, {"result": ".npy"}, entry="matmul")["result"]
    close32("product_2d", got, a.astype(np.float64) @ b.astype(np.float64))
    a, b = rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    got = run(strata, "structured/dot_product.strata", work, {"a": a, "b": b}, {"result": ".npy"}, entry="named")["result"]
    close32("dot_general named", got, a.astype(np.float64) @ b.astype(np.float64))


def beyond(strata, work, rng):
    a0, a1, a2 = (rng.standard_normal(s).astype(np.float32) for s in ((42, 32), (32, 64), (42, 64)))
    a5 = rng.standard_normal(2688).astype(np.float32)
    out = run(strata, "beyond/matmul_collapse_sub.strata", work, {"0": a0, "1": a1, "2": a2, "5": a5}, {"result": ".npy"}, entry="matmul_bias")
    got, want = out["result"], (a2 + a0 @ a1).reshape(-1) - a5
    if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        raise SystemExit(f"matmul_collapse_sub: max error {np.abs(got - want).max()}")
    print("ok matmul_collapse_sub (f32, tolerance 1e-4)")
    idx = np.array([[3], [41], [0], [3], [17]], dtype=np.int64)
    b5 = rng.standard_normal((5, 64)).astype(np.float32)
    out = run(strata, "beyond/matmul_gather_sub.strata", work, {"0": a0, "1": a1, "2": a2, "indices": idx, "5": b5}, {"result": ".npy"}, entry="matmul_gather_bias")
    got, want = out["result"], (a2 + a0 @ a1)[idx[:, 0]] - b5
    if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        raise SystemExit(f"matmul_gather_sub: max error {np.abs(got - want).max()}")
    print("ok matmul_gather_sub (f32, tolerance 1e-4)")
    rows, m = rng.standard_normal((5, 64)).astype(np.float32), rng.standard_normal((42, 64)).astype(np.float32)
    idx2 = np.array([[3], [41], [0], [7], [17]], dtype=np.int64)
    got = run(strata, "beyond/matmul_gather_sub.strata", work, {"rows": rows, "m": m, "indices": idx2}, {"result": ".npy"}, entry="write_rows")["result"]
    want = m.copy()
    want[idx2[:, 0]] = rows
    expect("scatter rows", got, want)
    got = run(strata, "beyond/matmul_gather_sub.strata", work, {"m": m, "indices": idx2}, {"result": ".npy"}, entry="row_views")["result"]
    expect("gather view", got, m[idx2[:, 0]])
    p, q = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    got = run(strata, "beyond/matmul_gather_sub.strata", work, {"a": p, "b": q}, {"result": ".npy"}, entry="stack_rows")["result"]
    expect("concat", got, np.concatenate([p, q], axis=1))
    vec = rng.standard_normal(2688).astype(np.float32)
    got = run(strata, "beyond/matmul_collapse_sub.strata", work, {"v": vec}, {"result": ".npy"}, entry="rows")["result"]
    expect("expand_shape", got, vec.reshape(42, 64))


def hdiff_np(x, coeff):
    """Horizontal diffusion with a flux limiter, written independently in numpy: `x` has a
    two-point halo in I and J, the result and `coeff` none."""
    lap = lap_np(x)  # one-point halo left
    fx = lap[1:, 1:-1] - lap[:-1, 1:-1]  # flux from i to i+1, i in [-1, n)
    fx = np.where(fx * (x[2:-1, 2:-2] - x[1:-2, 2:-2]) > 0, 0.0, fx)
    fy = lap[1:-1, 1:] - lap[1:-1, :-1]
    fy = np.where(fy * (x[2:-2, 2:-1] - x[2:-2, 1:-2]) > 0, 0.0, fy)
    return x[2:-2, 2:-2] - coeff * (fx[1:] - fx[:-1] + fy[:, 1:] - fy[:, :-1])


def horizontal_diffusion(strata, work, rng):
    inp, coeff = rng.standard_normal((10, 12, 8)), rng.random((6, 8, 8))  # I[-2:8], J[-2:10]
    out = run(strata, "stencil/horizontal_diffusion.strata", work, {"inp": inp, "coeff": coeff}, {"out": ".npy"})
    expect("horizontal_diffusion", out["out"], hdiff_np(inp, coeff))


def hdiff_columns(strata, work, rng):
    """tests/programs/hdiff_columns.strata: the same diffusion stored K, J, I (GT4Py's layout),
    on planes too large for all three staged values' windows."""
    inp, coeff = rng.standard_normal((3, 224, 224)), rng.random((3, 220, 220))
    out = run(strata, "../tests/programs/hdiff_columns.strata", work, {"inp": inp, "coeff": coeff}, {"out": ".npy"})
    # hdiff_np takes I, J first: (K, J, I) -> (I, J, K) and back.
    want = hdiff_np(inp.transpose(2, 1, 0), coeff.transpose(2, 1, 0)).transpose(2, 1, 0)
    expect("hdiff_columns", out["out"], np.ascontiguousarray(want))


def distributed(strata, work, rng):
    x, y = rng.standard_normal(1_000_000), rng.standard_normal(1_000_000)
    out = run(strata, "placement/distributed_axpy.strata", work, {"x": x, "y": y}, {"out": ".npy"}, entry="run")
    expect("distributed_axpy", out["out"], 2.0 * x + y)
    # Values placed on a GPU run there natively (and fail without one): on a machine without an
    # NVIDIA driver the interpreter computes them (placement is not meaning; scripts/gpu-check
    # runs this entry on a GPU).
    gpu = shutil.which("nvidia-smi") is not None
    out = run(strata, "placement/distributed_axpy.strata", work, {"x": x, "y": y}, {"result": ".npy"}, entry="on_gpu",
              backend=None if gpu else "interp")
    expect("to_device", out["result"], x + y)


CHECKS = {
    "laplacian": laplacian,
    "horizontal_diffusion": horizontal_diffusion,
    "hdiff_columns": hdiff_columns,
    "tridiagonal": tridiagonal,
    "divmod": divmod_results,
    "nabla": nabla,
    "mesh_laplacian": mesh_laplacian,
    "vertical_indirection": vertical_indirection,
    "spmv_csr": spmv_csr,
    "sparse_dot": sparse_dot,
    "spgemm": spgemm,
    "ragged_row_sum": ragged_row_sum,
    "nested": nested,
    "gemms": gemms,
    "pack_layouts": pack_layouts,
    "structured": structured,
    "convolution": convolution,
    "beyond": beyond,
    "distributed": distributed,
    "distributed_stencils": distributed_stencils,
    "distributed_nabla": distributed_nabla,
    "distributed_normalize": distributed_normalize,
    "distributed_sparse": distributed_sparse,
    "distributed_gather": distributed_gather,
}


def main():
    global BACKEND, RANKS
    strata, work = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    if "--ranks" in rest:
        i = rest.index("--ranks")
        RANKS = int(rest[i + 1])
        rest = rest[:i] + rest[i + 2 :]
    if "--backend" in rest:
        i = rest.index("--backend")
        BACKEND = rest[i + 1]
        rest = rest[:i] + rest[i + 2 :]
    names = rest or list(CHECKS)
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261122)
    for n in names:
        CHECKS[n](strata, work, rng)
    on = f", {RANKS} ranks" if RANKS else ""
    print(f"{len(names)} passed, 0 failed ({BACKEND} backend{on})")


if __name__ == "__main__":
    main()
