"""Tiered execution from Python: `strata.array_api` runs a small evaluation of a program not
compiled yet in the reference interpreter, compiles its kernels in the background once the
program has spent a while interpreted, and runs them natively from then on; a large
evaluation compiles at once. Every value against numpy, in every tier.

The programs run in a child process (this file as a script) with the tiers on and a kernel
cache of its own, empty at the start (conftest.py turns the tiers off for the other tests)."""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def programs(xp, np_):
    """Array programs as users write them, each a function of (namespace, a, b) for 2-d a, b."""
    return {
        "affine": lambda m, a, b: a * 2.0 + 1.0,
        "where": lambda m, a, b: m.where(a > 0, b, -b),
        "row sums next to row maxima": lambda m, a, b: m.sum(a, axis=1) + m.max(b, axis=1),
        "matmul": lambda m, a, b: a @ m.matrix_transpose(b),
        "cumulative sum": lambda m, a, b: m.cumulative_sum(a * b, axis=0),
        "mean of exp": lambda m, a, b: m.mean(m.exp(a), axis=0),
    }


def child():
    import strata.array_api as xp

    r = np.random.default_rng(3)
    report = {"first": {}, "values": [], "libraries_after_first": None}
    shapes = [(7, 5), (12, 9), (1, 6)]
    for name, f in programs(xp, np).items():
        for shape in shapes:
            a, b = r.standard_normal(shape), r.standard_normal(shape)
            before = xp.cache_stats()
            got = np.asarray(f(xp, xp.asarray(a), xp.asarray(b)))
            after = xp.cache_stats()
            want = f(np, a, b) if name != "cumulative sum" else np.cumsum(a * b, axis=0)
            report["values"].append([name, list(shape), bool(np.allclose(got, want, rtol=1e-12, atol=1e-12))])
            if shape == shapes[0]:
                report["first"][name] = after["interpreted_runs"] - before["interpreted_runs"]
    report["libraries_after_first"] = xp.cache_stats()["libraries"]

    # One program run again and again: interpreted until its kernels are compiled, then native.
    a, b = r.standard_normal((20, 30)), r.standard_normal((20, 30))
    f = programs(xp, np)["row sums next to row maxima"]
    want = f(np, a, b)
    start, loops, native = time.monotonic(), 0, False
    while not native and time.monotonic() - start < 120:
        before = xp.cache_stats()["native_runs"]
        got = np.asarray(f(xp, xp.asarray(a), xp.asarray(b)))
        native = xp.cache_stats()["native_runs"] > before
        loops += 1
        report["values"].append(["loop", [20, 30], bool(np.allclose(got, want, rtol=1e-12, atol=1e-12))])
    report["loop"] = {"native": native, "evaluations": loops}

    # A large evaluation of a new structure compiles at once.
    a = r.standard_normal((800, 600))
    before = xp.cache_stats()
    got = np.asarray(xp.sqrt(xp.abs(xp.asarray(a))) - 0.5)
    after = xp.cache_stats()
    report["large"] = {"native": after["native_runs"] - before["native_runs"],
                       "close": bool(np.allclose(got, np.sqrt(np.abs(a)) - 0.5, rtol=1e-15, atol=0))}
    print(json.dumps(report))


def test_small_evaluations_are_interpreted_until_their_kernels_are_compiled():
    env = dict(os.environ)
    env.pop("STRATA_TIERED", None)
    with tempfile.TemporaryDirectory() as cache:
        env["STRATA_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    wrong = [v for v in report["values"] if not v[2]]
    assert not wrong, wrong
    # Met once, each program ran in the interpreter and compiled nothing.
    assert all(n == 1 for n in report["first"].values()), report["first"]
    assert report["libraries_after_first"] == 0, report
    # Met often, its kernels compiled in the background and took over.
    assert report["loop"]["native"], report["loop"]
    assert report["large"] == {"native": 1, "close": True}, report["large"]


def test_import_bounds_openmp_spinning_unless_the_user_chose():
    """`import strata` bounds libgomp's idle spinning (docs/python.md, "Threads"), before any
    kernel library loads libgomp; a user's own wait policy or spin count stays as it is."""
    show = "import os, strata; print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))"
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    for extra, want in [({}, "10000 None"), ({"GOMP_SPINCOUNT": "5"}, "5 None"),
                        ({"OMP_WAIT_POLICY": "active"}, "None active")]:
        out = subprocess.run([sys.executable, "-c", show], env={**base, **extra}, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[0] == want, (extra, out.stdout)
    check = "import sys, strata; sys.exit(any('libgomp' in l for l in open('/proc/self/maps')))"
    out = subprocess.run([sys.executable, "-c", check], env=base, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, "libgomp was loaded by the import itself, before the setting: " + out.stderr


if __name__ == "__main__":
    child()
