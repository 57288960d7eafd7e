"""Generated gathers and scatters over distributed operands at 1–4 ranks, against numpy.

Usage: python check_dist_gather.py STRATA_BINARY WORKDIR [--count N] [--ranks 1,2,3,4]

Each generated program gathers rows of a source through an index array given as a file:
the source distributed (`block`) along the indexed dimension — named, at a random interval
start (coordinates below 0 included), or positional as the array front end writes it — or
replicated; the indices replicated on the team or distributed by their batch rows; batches of
1–13 rows reaching both ends of the interval, repeated rows; then nothing, an elementwise op,
a sum of every gathered value (a reduction over the block level when the indices are
distributed) or a product with a replicated weight. Scatters write replicated values through
replicated indices (repeated rows: the last write wins) into a destination distributed along
the indexed dimension, given or computed, then nothing, an elementwise op or a sum. Every
program runs as one process and at every rank count, and every result must equal numpy's
(sums within 1e-12); an index outside the destination and a scatter through distributed
indices (not supported) end with clear errors. `--count N` sets the number of gathers and of
scatters (CI: 6 each).
"""

import os
import subprocess
import sys

import numpy as np

from check_sparse import take_flag

argv = list(sys.argv)
COUNT = int(take_flag(argv, "--count", 6))
RANKS = [int(r) for r in take_flag(argv, "--ranks", "1,2,3,4").split(",")]
rng = np.random.default_rng(4949)
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

FUNCS = """func @add(%acc: f64, %a: f64) -> f64 { return plus(%acc, %a) }
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 { return plus(%acc, multiplies(%a, %b)) }
"""


def generated(k):
    """One program, its inputs and numpy's result."""
    n, cols, m = int(rng.integers(1, 45)), int(rng.integers(1, 4)), int(rng.integers(1, 14))
    positional = rng.random() < 0.3
    start = 0 if positional else int(rng.integers(-3, 4))
    src_block = rng.random() < 0.8
    idx_block = rng.random() < 0.5 or not src_block
    entries = rng.integers(start, start + n, size=m)
    # Both ends of the interval, and a repeated row, when the batch has room.
    if m >= 3:
        entries[0], entries[-1], entries[1] = start, start + n - 1, entries[-2]
    x = np.round(rng.standard_normal((n, cols)), 3)
    want = x[entries - start]
    team = ", team = world"
    blk = lambda on: " block" if on else ""
    if positional:
        src_t = f"tensor<f64, _0[0:{n}]{blk(src_block)}, _1[0:{cols}]{team}>"
        idx_t = f"tensor<i64, _0[0:{m}]{blk(idx_block)}, _1[0:1]{team}>"
        res_t = f"tensor<f64, _0[0:{m}]{blk(idx_block)}, _1[0:{cols}]{team}>"
        letters = "ab"
    else:
        src_t = f"tensor<f64, I[{start}:{start + n}]{blk(src_block)}, J[0:{cols}]{team}>"
        idx_t = f"tensor<index, B[0:{m}]{blk(idx_block)}, C[0:1]{team}>"
        res_t = f"tensor<f64, B[0:{m}]{blk(idx_block)}, J[0:{cols}]{team}>"
        letters = "bj"
    after = str(rng.choice(["none", "exp", "sum", "weighted"]))
    params = f"%x: {src_t}, %idx: {idx_t}"
    inputs = {"x": x, "idx": entries.reshape(m, 1).astype(np.int64)}
    body = f"  %g = gather(%x, %idx, coordinates = [0]) : {res_t}\n"
    if after == "none":
        result_t, body = res_t, body + "  return %g\n"
    elif after == "exp":
        result_t, body, want = res_t, body + "  return exp(%g)\n", np.exp(want)
    elif after == "sum":
        result_t = f"tensor<f64{team}>"
        body += f'  return map_reduce(@add, %g, init = 0.0, einsum = "{letters}->")\n'
        want = np.array(want.sum())
    else:
        w = np.round(rng.standard_normal(cols), 3)
        wdim = "_0" if positional else "J"
        params += f", %w: tensor<f64, {wdim}[0:{cols}]{team}>"
        inputs["w"] = w
        out = letters[0]
        result_t = res_t.replace(f", {'_1' if positional else 'J'}[0:{cols}]", "")
        if positional:
            result_t = f"tensor<f64, _0[0:{m}]{blk(idx_block)}{team}>"
        body += f'  return map_reduce(@mac, %g, %w, init = 0.0, einsum = "{letters},{letters[1]}->{out}")\n'
        want = want @ w
    program = FUNCS + f"func @f({params}) -> {result_t} {{\n{body}}}\n"
    name = f"g{k}_n{n}_m{m}_{'pos' if positional else 'named'}_{'src' if src_block else 'rep'}_{'idxblk' if idx_block else 'idxrep'}_{after}"
    return name, program, inputs, want


def run(strata, work, name, program, inputs, ranks):
    src = os.path.join(work, name + ".strata")
    with open(src, "w") as f:
        f.write(program)
    cmd = [strata, "run", src]
    if ranks:
        cmd += ["--ranks", str(ranks)]
    for key, value in inputs.items():
        path = os.path.join(work, f"{name}_{key}.npy")
        np.save(path, value)
        cmd += ["--arg", f"{key}={path}"]
    out = os.path.join(work, f"{name}_r{ranks}.npy")
    cmd += ["--out", f"result={out}"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=300)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return np.load(out), None


def generated_scatter(k):
    """A scatter into a destination distributed along the indexed (named) dimension, with
    replicated values and indices (repeated rows: the last write wins, as in one process)."""
    n, cols, m = int(rng.integers(1, 40)), int(rng.integers(1, 4)), int(rng.integers(1, 12))
    start = int(rng.integers(-3, 4))
    entries = rng.integers(start, start + n, size=m)
    if m >= 3:
        entries[0], entries[-1], entries[1] = start, start + n - 1, entries[-2]
    vals = np.round(rng.standard_normal((m, cols)), 3)
    d = np.round(rng.standard_normal((n, cols)), 3)
    team = ", team = world"
    dest_t = f"tensor<f64, I[{start}:{start + n}] block, J[0:{cols}]{team}>"
    before = str(rng.choice(["none", "scaled"]))
    after = str(rng.choice(["none", "exp", "sum"]))
    dest = "%d" if before == "none" else "multiplies(%d, 2.0)"
    base = d if before == "none" else d * 2.0
    want = base.copy()
    for row, e in enumerate(entries):
        want[e - start] = vals[row]
    body = f"  %s = scatter(%v, {dest}, %idx, coordinates = [0]) : {dest_t}\n"
    result_t = dest_t
    if after == "none":
        body += "  return %s\n"
    elif after == "exp":
        body += "  return exp(%s)\n"
        want = np.exp(want)
    else:
        result_t = f"tensor<f64{team}>"
        body += '  return map_reduce(@add, %s, init = 0.0, einsum = "ij->")\n'
        want = np.array(want.sum())
    params = f"%v: tensor<f64, B[0:{m}], J[0:{cols}]{team}>, %d: {dest_t}, %idx: tensor<index, B[0:{m}], C[0:1]{team}>"
    program = FUNCS + f"func @f({params}) -> {result_t} {{\n{body}}}\n"
    inputs = {"v": vals, "d": d, "idx": entries.reshape(m, 1).astype(np.int64)}
    return f"s{k}_n{n}_m{m}_{before}_{after}", program, inputs, want


def scatter_errors(strata, work):
    """A scatter index outside the destination ends the job with a clear error at every rank
    count; a scatter the ranks cannot run (distributed indices) is refused by name."""
    program = (
        "func @f(%v: tensor<f64, B[0:3]{blk}, J[0:2], team = world>, %d: tensor<f64, I[0:10] block, J[0:2], team = world>, "
        "%idx: tensor<index, B[0:3]{blk}, C[0:1], team = world>) -> tensor<f64, I[0:10] block, J[0:2], team = world> {{\n"
        "  return scatter(%v, %d, %idx, coordinates = [0])\n}}\n"
    )
    inputs = {"v": np.ones((3, 2)), "d": np.zeros((10, 2)), "idx": np.array([[1], [10], [9]], dtype=np.int64)}
    for ranks in [None] + RANKS:
        got, err = run(strata, work, "scatter_outside", program.format(blk=""), inputs, ranks)
        if got is not None or err is None or "outside" not in err or "panicked" in err:
            return f"scatter index outside at {ranks}: expected a clear error, got {err!r}"
    inputs["idx"] = np.array([[1], [4], [9]], dtype=np.int64)
    got, err = run(strata, work, "scatter_idxblk", program.format(blk=" block"), inputs, 2)
    if got is not None or err is None or "scatter" not in err or "not supported" not in err or "panicked" in err:
        return f"scatter with distributed indices: expected a clear error, got {err!r}"
    return None


def main():
    strata, work = argv[1], argv[2]
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    cases = [generated(k) for k in range(COUNT)] + [generated_scatter(k) for k in range(COUNT)]
    for name, program, inputs, want in cases:
        for ranks in [None] + RANKS:
            got, err = run(strata, work, name, program, inputs, ranks)
            where = f"{name} at {ranks or 'one process'}"
            if err is not None:
                problem = err
            elif got.shape != want.shape:
                problem = f"shape {got.shape}, expected {want.shape}"
            elif not np.allclose(got, want, rtol=1e-12, atol=1e-12):
                problem = f"got {got.ravel()[:6]}, expected {want.ravel()[:6]}"
            else:
                problem = None
            if problem:
                failed += 1
                print("FAIL", where, problem, "\n" + program, flush=True)
            else:
                passed += 1
                print("ok", where, flush=True)
    problem = scatter_errors(strata, work)
    if problem:
        failed += 1
        print("FAIL", problem)
    else:
        passed += 1
        print("ok scatter_errors_are_clear")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
