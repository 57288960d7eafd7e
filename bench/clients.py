"""The clients and shapes groups (`bench/run --only clients`, `bench/run --only shapes`).

clients: libraries nobody here wrote, called unchanged on `strata.array_api` arrays, against the
same calls on numpy arrays — scikit-learn (with `array_api_dispatch=True`), einops
(`einops.array_api`) and array-api-extra — at two data sizes (rows x 50 columns). Each case
runs in a fresh process with an empty kernel cache, and reports:

- cold: the first call (tracing, lowering, C compiles: what a new program structure costs;
  under tiered execution small programs run in the interpreter and compile in the background);
- settle: the calls after it until three in a row leave no compile queued or running and
  load no new library, and their total time;
- warm: the median of repeated calls at that size, once settled (compiled, cached);
- new size: the median of the first calls at three sizes not seen before (about 3/4 of the
  rows), once the structure has been seen: kernels take their sizes as arguments, so no
  compile should happen;
- numpy: the median of the same call on numpy arrays (and at the new size);
- numpy (dispatch), scikit-learn only: the same call on numpy arrays with
  `array_api_dispatch=True`, the path a Strata array takes through scikit-learn (its namespace
  checks and array-API code run per call); numpy (dispatch) / warm is then Strata's own share;
- compiles: the libraries the process loaded, cold and settling, and at the new size.

Results are checked against numpy's (PCA up to the sign of each component; the distances'
diagonal up to the cancellation sklearn's formula has in both).

shapes: a loop over 50 different sizes of one program (array API, `strata.fields`, a GT4Py
program on `strata.gt4py.backend`), in a fresh process with an empty cache: total time against
numpy's total, the compiles, the first call (the structure's compile) and the median time of
a new size in the second half of the loop.

Medians; ratios are numpy / strata (above 1: Strata is faster). The big size also prints the
bandwidth of reading X once against the machine's STREAM triad measured in this run (a lower
bound on the traffic of any of these calls).

    bench/clients.py --group clients|shapes [--sizes 2000,1000000] [--runs 5] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
COLUMNS = 50


def data(n: int):
    """X (n x 50), class labels (3 classes) and a regression target, the same for a given n."""
    import numpy as np

    r = np.random.default_rng(n)
    X = r.standard_normal((n, COLUMNS))
    labels = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * r.standard_normal(n) > 0).astype(np.int64) + (X[:, 2] > 1)
    target = X @ np.linspace(-1.0, 1.0, COLUMNS) + 0.1 * r.standard_normal(n)
    return X, labels, target


# How many new sizes a case times (the median of their first calls is its "new size").
NEW_SIZES = 3

# The cases that read only some rows of X (no bandwidth figure: X is not read whole).
READ_PART_OF_X = {"sklearn euclidean_distances 500 x 2000"}


def client_cases():
    """name -> (call(X, labels, target), how results compare: "close", "abs" or "dist")."""
    import array_api_extra as xpx
    import einops.array_api as ea
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.metrics.pairwise import euclidean_distances
    from sklearn.preprocessing import StandardScaler

    return {
        "sklearn PCA(5, full).fit_transform": (lambda X, c, t: PCA(n_components=5, svd_solver="full").fit_transform(X), "abs"),
        "sklearn LDA fit + predict": (lambda X, c, t: LinearDiscriminantAnalysis().fit(X, c).predict(X), "close"),
        "sklearn Ridge(svd) fit + predict": (lambda X, c, t: Ridge(alpha=1.0, solver="svd").fit(X, t).predict(X), "close"),
        "sklearn StandardScaler fit + transform": (lambda X, c, t: StandardScaler().fit(X).transform(X), "close"),
        "sklearn euclidean_distances 500 x 2000": (lambda X, c, t: euclidean_distances(X[:500], X[:2000]), "dist"),
        "einops rearrange + reduce(max)": (
            lambda X, c, t: ea.reduce(ea.rearrange(X, "n (g k) -> n g k", g=5), "n g k -> n g", "max"),
            "close",
        ),
        "array-api-extra cov(X.T)": (lambda X, c, t: xpx.cov(X.T), "close"),
        "array-api-extra pad(X, 2)": (lambda X, c, t: xpx.pad(X, 2), "close"),
    }


def agree(got, want, how: str) -> bool:
    import numpy as np

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if how == "abs":  # each component's sign is a convention of the SVD
        got, want = np.abs(got), np.abs(want)
    atol = 1e-6 if how == "dist" else 1e-9
    return bool(np.allclose(got, want, rtol=1e-8, atol=atol))


def one_client(name: str, n: int, runs: int) -> dict:
    """One case at `n` rows in this (fresh) process: see the module documentation."""
    import numpy as np
    import sklearn

    import strata.array_api as xp

    call, how = client_cases()[name]
    libraries = lambda: xp.cache_stats()["libraries"]  # noqa: E731

    def timed(f):
        t = time.perf_counter()
        out = f()
        return out, time.perf_counter() - t

    def median(f):
        return statistics.median(timed(f)[1] for _ in range(runs))

    # New sizes: about 3/4 of the rows, three of them (a single first call varies too much).
    news = [n - n // 4 + 1 + 7 * i for i in range(NEW_SIZES)]
    X, c, t = data(n)
    new_data = [data(m) for m in news]
    # numpy first: sklearn's lazy imports and checks are then warm for both.
    want, _ = timed(lambda: call(X, c, t))
    numpy_s = median(lambda: call(X, c, t))
    wants_new, numpy_new = zip(*(timed(lambda d=d: call(*d)) for d in new_data))
    numpy_dispatch_s = None
    if name.startswith("sklearn"):
        with sklearn.config_context(array_api_dispatch=True):
            call(X, c, t)
            numpy_dispatch_s = median(lambda: call(X, c, t))
    with sklearn.config_context(array_api_dispatch=True):
        Xs, cs, ts = xp.asarray(X), xp.asarray(c), xp.asarray(t)
        before = libraries()
        got, cold_s = timed(lambda: np.asarray(call(Xs, cs, ts)))
        # Tiered execution interprets small programs until their kernels, compiled in the
        # background, are ready: the call is repeated until three calls in a row leave no
        # compile queued or running and load no library (at most 200 calls or 60 s) before the
        # warm timing. Programs too cheap to have been interpreted 20 ms stay interpreted.
        settle_calls, quiet, start = 0, 0, time.perf_counter()
        while quiet < 3 and settle_calls < 200 and time.perf_counter() - start < 60:
            loaded = libraries()
            np.asarray(call(Xs, cs, ts))
            settle_calls += 1
            quiet = quiet + 1 if xp.cache_stats()["compiling"] == 0 and libraries() == loaded else 0
        settle_s = time.perf_counter() - start
        cold_compiles = libraries() - before
        warm_s = median(lambda: np.asarray(call(Xs, cs, ts)))
        before = libraries()
        agree_new, strata_new = True, []
        for d, w in zip(new_data, wants_new):
            args = tuple(xp.asarray(a) for a in d)
            got2, s = timed(lambda: np.asarray(call(*args)))
            agree_new = agree_new and agree(got2, w, how)
            strata_new.append(s)
        new_compiles = libraries() - before
    return {
        "case": name,
        "n": n,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "new_s": statistics.median(strata_new),
        "new_n": news,
        "numpy_s": numpy_s,
        "numpy_new_s": statistics.median(numpy_new),
        "numpy_dispatch_s": numpy_dispatch_s,
        "settle_calls": settle_calls,
        "settle_s": settle_s,
        "cold_compiles": cold_compiles,
        "new_compiles": new_compiles,
        "agree": agree(got, want, how) and agree_new,
    }


def shape_programs():
    """name -> (strata(n) -> numpy array, numpy(n) -> array, sizes)."""
    import numpy as np

    import strata.array_api as xp

    def a(n, m=7):
        return np.random.default_rng(n).standard_normal((n, m))

    def grid(n):
        return np.random.default_rng(n).standard_normal((n + 2, n + 2))

    def lap_np(g):
        return -4 * g[1:-1, 1:-1] + g[2:, 1:-1] + g[:-2, 1:-1] + g[1:-1, 2:] + g[1:-1, :-2]

    rows = list(range(40, 90))
    progs = {
        "array a * 2 + 1": (lambda n: np.asarray(xp.asarray(a(n)) * 2.0 + 1.0), lambda n: a(n) * 2.0 + 1.0, rows),
        "array std(axis=0)": (lambda n: np.asarray(xp.std(xp.asarray(a(n)), axis=0)), lambda n: a(n).std(0), rows),
        "array X.T @ X": (lambda n: np.asarray(xp.asarray(a(n)).T @ xp.asarray(a(n))), lambda n: a(n).T @ a(n), rows),
        "array where(a > 0, a, 0)": (
            lambda n: np.asarray(xp.where(xp.asarray(a(n)) > 0, xp.asarray(a(n)), 0.0)),
            lambda n: np.where(a(n) > 0, a(n), 0.0),
            rows,
        ),
        "array cumulative_sum(axis=0)": (
            lambda n: np.asarray(xp.cumulative_sum(xp.asarray(a(n)), axis=0)),
            lambda n: np.cumsum(a(n), axis=0),
            rows,
        ),
        "array concat([a(n), a(n+1)])": (
            lambda n: np.asarray(xp.concat([xp.asarray(a(n)), xp.asarray(a(n + 1))], axis=0)),
            lambda n: np.concatenate([a(n), a(n + 1)]),
            rows,
        ),
    }
    from strata import fields

    I, J = fields.dims("I J")

    def lap_fields(n):
        x = fields.field(grid(n), I[-1 : n + 1], J[-1 : n + 1])
        return (-4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)).numpy()

    progs["fields laplacian (n x n)"] = (lap_fields, lambda n: lap_np(grid(n)), list(range(20, 70)))
    try:
        import gt4py_peers

        progs["gt4py laplacian program (n x n)"] = (gt4py_peers.laplacian_on_strata(), lambda n: lap_np(grid(n)), list(range(20, 70)))
    except ImportError as e:
        print(f"shapes: GT4Py not available ({e})")
    return progs


def one_shape(name: str) -> dict:
    """The loop over the sizes of one program in this (fresh) process."""
    import numpy as np

    import strata.array_api as xp

    f, f_np, sizes = shape_programs()[name]
    before = xp.cache_stats()["libraries"]
    strata_s, numpy_s, per_size = 0.0, 0.0, []
    for n in sizes:
        t = time.perf_counter()
        got = f(n)
        dt = time.perf_counter() - t
        strata_s += dt
        per_size.append(dt)
        t = time.perf_counter()
        want = f_np(n)
        numpy_s += time.perf_counter() - t
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    return {
        "case": name,
        "sizes": len(sizes),
        "strata_s": strata_s,
        "numpy_s": numpy_s,
        "compiles": xp.cache_stats()["libraries"] - before,
        "first_s": per_size[0],
        "new_size_s": statistics.median(per_size[len(per_size) // 2 :]),
    }


def in_fresh_process(args: list[str], threads: int) -> dict:
    """Runs this file with `args` in a new process with an empty kernel cache; its JSON."""
    with tempfile.TemporaryDirectory(prefix="strata-clients-") as cache:
        env = dict(os.environ, STRATA_CACHE_DIR=cache, STRATA_NUM_THREADS=str(threads), SCIPY_ARRAY_API="1")
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
        p = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def clients(sizes: list[int], runs: int, threads: int, triad: float | None) -> list[dict]:
    import numpy as np

    records = []
    print(f"{'clients':10} {'case':40} {'rows':>8}  {'cold':>9} {'settle':>15} {'warm':>9} {'new size':>9} {'numpy':>9}  "
          f"{'numpy/warm':>10} {'new/numpy':>9}  {'np dispatch':>11} {'/warm':>6}  compiles  agree")
    for n in sizes:
        for name in client_cases():
            try:
                r = in_fresh_process(["--one-client", name, "--n", str(n), "--runs", str(runs)], threads)
            except RuntimeError as e:
                print(f"{'clients':10} {name:40} {n:8}  did not run: {str(e).splitlines()[-1][:120]}")
                continue
            ms = lambda s: f"{s * 1e3:7.1f}ms"  # noqa: E731
            extra = ""
            if triad and n >= 100_000 and name not in READ_PART_OF_X:
                gbps = n * COLUMNS * 8 / r["warm_s"] / 1e9
                extra = f"  X once {gbps:.1f} GB/s = {gbps / triad:.2f} of triad"
            settle = f"{r['settle_calls']:3d} in {r['settle_s']:6.2f}s"
            dispatch = r.get("numpy_dispatch_s")
            dispatch = f"{ms(dispatch):>11} {dispatch / r['warm_s']:5.2f}x" if dispatch else f"{'-':>11} {'-':>6}"
            print(f"{'clients':10} {name:40} {n:8}  {ms(r['cold_s'])} {settle:>15} {ms(r['warm_s'])} {ms(r['new_s'])} "
                  f"{ms(r['numpy_s'])}  {r['numpy_s'] / r['warm_s']:9.2f}x {r['new_s'] / r['numpy_new_s']:8.2f}x  "
                  f"{dispatch}  {r['cold_compiles']:3d} / {r['new_compiles']:<3d}  {'yes' if r['agree'] else 'NO'}{extra}")
            records.append({"group": "clients", "threads": threads, **r})
            if not r["agree"]:
                raise SystemExit(f"clients: {name} at {n} rows differs from numpy")
    warm = [r["numpy_s"] / r["warm_s"] for r in records]
    if warm:
        print(f"clients: median numpy/strata warm {np.median(warm):.2f}x; "
              f"median cold {np.median([r['cold_s'] for r in records]) * 1e3:.0f} ms")
    return records


def shapes(threads: int) -> list[dict]:
    records = []
    print(f"{'shapes':10} {'program':40} {'sizes':>5}  {'strata':>10} {'numpy':>10}  {'numpy/strata':>12}  compiles  {'first':>9}  new size (median)")
    for name in shape_programs():
        r = in_fresh_process(["--one-shape", name], threads)
        print(f"{'shapes':10} {name:40} {r['sizes']:5}  {r['strata_s'] * 1e3:8.1f}ms {r['numpy_s'] * 1e3:8.1f}ms  "
              f"{r['numpy_s'] / r['strata_s']:11.3f}x  {r['compiles']:8d}  {r['first_s'] * 1e3:7.1f}ms  "
              f"{r['new_size_s'] * 1e3:.2f} ms")
        records.append({"group": "shapes", "threads": threads, **r})
    return records


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/clients.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--group", choices=["clients", "shapes"])
    p.add_argument("--sizes", default="2000,1000000", help="rows of X (50 columns), comma-separated")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--json", type=Path)
    p.add_argument("--one-client", help=argparse.SUPPRESS)
    p.add_argument("--one-shape", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one_client:
        print(json.dumps(one_client(a.one_client, a.n, a.runs)))
        return 0
    if a.one_shape:
        print(json.dumps(one_shape(a.one_shape)))
        return 0
    if not a.group:
        p.error("--group clients or --group shapes")
    import runner

    with tempfile.TemporaryDirectory() as d:
        limits = runner.probe_limits(a.threads, Path(d))
    triad = next((r["gbps"] for r in limits if r["workload"] == "stream_triad"), None)
    print(f"{a.group}: {a.threads} thread(s)" + (f", STREAM triad {triad:.1f} GB/s" if triad else "")
          + f"; medians of {a.runs} runs; each case in a fresh process with an empty kernel cache")
    if a.group == "clients":
        records = clients([int(s) for s in a.sizes.split(",")], a.runs, a.threads, triad)
    else:
        records = shapes(a.threads)
    if a.json:
        a.json.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
