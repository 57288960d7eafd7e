"""The loop workloads (bench/run runs them after the others; `bench/run --only loops` alone).

Users run loops: time steps, solver iterations, scripts that reuse values. Each group times the
whole loop from Python against numpy on the same data (results checked against numpy), and
prints medians, ratios and the fraction of the machine's measured memory bandwidth:

- diffusion: 1,000 steps of a 2-D diffusion written with `strata.fields`, a new `dt` each
  step, as a `strata.stencil` (compiled once, writing its `out` array in place) and as an
  expression traced each step, against numpy, against GT4Py (its program called once per
  step, gtfn backend), and against 1,000 times the step's program run alone (`strata run
  --repeat` on the same program: the ratio says what Python and the call cost per step);
- power: a power iteration (matvec, normalize, `float()` of the norm each step) with
  `strata.array_api` against numpy;
- cg: conjugate gradients (a matvec, two dot products read back, three axpys each step) with
  `strata.array_api` against numpy;
- reuse: `y = y*y + y` repeated 5, 10 and 50 times (cold compile into an empty kernel cache,
  then a run), against numpy;
- lapk: `lap^k` for k = 1..5 on 64^3 and 256x256x64 fields, warm, against numpy;
- overhead: a cached `Program` call on a tiny input, next to a numpy ufunc call;
- array: `strata.array_api`'s per-call cost (an 8-element add, evaluated) next to numpy's, and
  its `linalg` and `fft` kernels (solve, inv, eigh, svd on 1024x1024; fft of 2^20 complex
  values) against numpy's LAPACK (OpenBLAS) and pocketfft, with the solve's fraction of the
  machine's measured FMA peak.

bench/run runs this file with `python -O`, as GT4Py asks of performance runs (without it
every GT4Py program call validates its arguments: ~0.3 ms per call, for gtfn and for
`strata.gt4py.backend` alike); results are checked by `np.testing` and explicit raises, which
`-O` keeps.
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

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def median_time(fn, runs: int) -> float:
    fn()  # warm-up (compiles, caches)
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def row(group: str, what: str, strata_s: float, peer_s: float | None, peer: str = "numpy", extra: str = "") -> dict:
    r = {"group": group, "what": what, "strata_s": strata_s, "peer": peer, "peer_s": peer_s}
    ratio = f"{peer_s / strata_s:6.2f}x" if peer_s else "     -"
    peer_txt = f"{peer_s * 1e3:10.3f} ms" if peer_s is not None else " " * 13
    print(f"{group:10} {what:44} strata {strata_s * 1e3:10.3f} ms  {peer:6} {peer_txt}  {peer} / strata {ratio}  {extra}")
    return r


def diffusion(strata, cli: str, runs: int, triad: float | None) -> list[dict]:
    from strata import fields

    I, J = strata.dims("I J")
    out = []
    for n, steps in ((256, 1000), (1024, 200)):
        u0 = np.random.default_rng(0).random((n + 2, n + 2))

        @strata.stencil
        def step(x, dt):
            return x + dt * (x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1) - 4.0 * x)

        def run_stencil():
            # Both arrays whole, boundary included: `out` is written in place (its boundary
            # keeps its values), and the fields are made once.
            u, new = u0.copy(), u0.copy()
            fu, fnew = strata.field(u, I[-1 : n + 1], J[-1 : n + 1]), strata.field(new, I[-1 : n + 1], J[-1 : n + 1])
            for s in range(steps):
                dt = 0.1 * (1 + s % 5) / 5
                step(fu, dt, out=fnew)
                fu, fnew = fnew, fu
            return fu.array

        def run_traced():
            u, new = u0.copy(), u0.copy()
            for s in range(steps):
                dt = 0.1 * (1 + s % 5) / 5
                x = strata.field(u, I[-1 : n + 1], J[-1 : n + 1])
                lap = x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1) - 4.0 * x
                fields.evaluate(x + dt * lap, out=strata.field(new[1:-1, 1:-1], I[0:n], J[0:n]))
                u, new = new, u
            return u

        def run_numpy():
            u, new = u0.copy(), u0.copy()
            for s in range(steps):
                dt = 0.1 * (1 + s % 5) / 5
                c = u[1:-1, 1:-1]
                new[1:-1, 1:-1] = c + dt * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * c)
                u, new = new, u
            return u

        want = run_numpy()
        try:
            import gt4py_peers

            run_gt4py = gt4py_peers.diffusion_loop(u0, steps)
            np.testing.assert_allclose(run_gt4py(), want, rtol=1e-12, atol=1e-12)
        except Exception as e:  # noqa: BLE001 - the row says GT4Py could not run, and why
            run_gt4py = None
            print(f"diffusion: GT4Py did not run ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        np.testing.assert_array_equal(run_stencil(), want)
        np.testing.assert_allclose(run_traced(), want, rtol=1e-12, atol=1e-12)
        reps = max(3, runs // 2)
        ts, tt, tn = median_time(run_stencil, reps), median_time(run_traced, reps), median_time(run_numpy, reps)
        # The step's program alone, run by the CLI on the same text (its kernel, no Python).
        text = next(iter(step._compiled.values()))[0].text
        with tempfile.TemporaryDirectory() as d:
            prog, js = Path(d) / "step.strata", Path(d) / "t.json"
            prog.write_text(text)
            sig = json.loads(subprocess.run([cli, "sig", "--json", str(prog)], check=True, capture_output=True).stdout)
            entry = sig["entries"][-1]
            params = [q["name"] for q in entry["params"]]
            args = [x for q in params for x in ("--arg", f"{q}=random:1")]
            result = entry["results"][0]["name"]
            subprocess.run([cli, "run", str(prog), *args, "--repeat", "50", "--timings", str(js),
                            "--out", f"{result}={d}/r.npy"], check=True, capture_output=True)
            kernel = statistics.median(json.loads(js.read_text())["preallocated_s"])
        moved = 2 * n * n * 8 * steps
        frac = f"{moved / ts / 1e9 / triad:.0%} of STREAM triad" if triad else ""
        out.append(row("diffusion", f"{steps} steps {n}x{n}, new dt each step, stencil", ts, tn, extra=frac))
        out.append(row("diffusion", f"  the same, the expression traced each step", tt, tn))
        if run_gt4py is not None:
            tg = median_time(run_gt4py, reps)
            out.append(row("diffusion", f"  stencil vs GT4Py calling its program per step", ts, tg, peer="gt4py",
                           extra=run_gt4py.label))
            # The same GT4Py loop through `strata.gt4py.backend` (its per-call overhead shows at
            # 256x256), against gtfn: the row's ratio is gtfn time / GT4Py-on-Strata time.
            run_gs = gt4py_peers.diffusion_loop(u0, steps, on_strata=True)
            np.testing.assert_allclose(run_gs(), want, rtol=1e-12, atol=1e-12)
            out.append(row("diffusion", f"  GT4Py on strata vs GT4Py (gtfn), per step program call", median_time(run_gs, reps),
                           tg, peer="gt4py", extra=run_gt4py.label))
        out.append(row("diffusion", f"  stencil vs {steps} x the step's program alone", ts, steps * kernel, peer="kernel",
                       extra=f"(target >= 0.8: {steps * kernel / ts:.2f})"))
    return out


def power(runs: int) -> list[dict]:
    """Power iteration from Python (matvec, norm, scale per step; the norm read back every step)
    at a cache-sized and a memory-sized matrix (issue 53 item 4: within 1.0x numpy, ahead at
    4096^2)."""
    import strata.array_api as xp

    out = []
    for n, steps in [(512, 50), (4096, 10)]:
        a = np.random.default_rng(1).random((n, n)) / n
        x0 = np.ones(n)
        A = xp.asarray(a)

        def run_strata():
            x = xp.asarray(x0)
            lam = 0.0
            for _ in range(steps):
                y = A @ x
                lam = float(xp.sqrt(xp.sum(y * y)))
                x = y / lam
            return lam

        def run_numpy():
            x, lam = x0, 0.0
            for _ in range(steps):
                y = a @ x
                lam = float(np.sqrt(np.sum(y * y)))
                x = y / lam
            return lam

        if not abs(run_strata() - run_numpy()) <= 1e-10 * abs(run_numpy()):
            raise AssertionError(f"power iteration: strata {run_strata()} vs numpy {run_numpy()}")
        out.append(row("power", f"{steps} iterations, {n}x{n} matvec + norm", median_time(run_strata, runs),
                       median_time(run_numpy, runs), extra="(target: numpy / strata >= 1.0)"))
    return out


def cg(runs: int) -> list[dict]:
    """Conjugate gradients from Python (a matvec, two dot products read back with `float()`, three
    axpys per step) on a symmetric, diagonally dominant matrix at a cache-sized and a memory-sized
    size (issue 53 item 4: within 1.0x numpy, ahead at 4096^2)."""
    import strata.array_api as xp

    out = []
    for n, steps in [(512, 50), (4096, 10)]:
        rng = np.random.default_rng(2)
        r0 = rng.random((n, n)) / n
        a = (r0 + r0.T) / 2 + 2.0 * np.eye(n)
        b = rng.random(n)
        A = xp.asarray(a)

        def solve(mod, A, b):
            x = mod.zeros_like(b)
            r = b
            p = r
            rr = float(mod.vecdot(r, r))
            for _ in range(steps):
                q = A @ p
                alpha = rr / float(mod.vecdot(p, q))
                x = x + alpha * p
                r = r - alpha * q
                rr, rr_old = float(mod.vecdot(r, r)), rr
                p = r + (rr / rr_old) * p
            return x

        def run_strata():
            return np.asarray(solve(xp, A, xp.asarray(b)))

        def run_numpy():
            return solve(np, a, b)

        np.testing.assert_allclose(run_strata(), run_numpy(), rtol=1e-10, atol=1e-12)
        out.append(row("cg", f"{steps} iterations, {n}x{n} matvec + 2 dots + 3 axpys", median_time(run_strata, runs),
                       median_time(run_numpy, runs), extra="(target: numpy / strata >= 1.0)"))
    return out


def reuse(runs: int) -> list[dict]:
    import strata.array_api as xp

    out = []
    for levels in (5, 10, 50):
        for size in (64, 1 << 20):
            x = np.linspace(0, 1e-3, size)

            def chain(v):
                y = v
                for _ in range(levels):
                    y = y * y + y
                return y

            with tempfile.TemporaryDirectory() as cache:
                # A fresh process, so the compile is cold (an empty kernel cache) and measured.
                code = (
                    "import time, numpy as np, strata.array_api as xp\n"
                    f"x = np.linspace(0, 1e-3, {size})\n"
                    "t = time.perf_counter()\n"
                    f"y = xp.asarray(x)\nfor _ in range({levels}): y = y * y + y\n"
                    "np.asarray(y)\nprint(time.perf_counter() - t)\n"
                )
                env = dict(os.environ, STRATA_CACHE_DIR=cache)
                cold = float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                            text=True).stdout)
            want = chain(x)
            np.testing.assert_array_equal(np.asarray(chain(xp.asarray(x))), want)
            warm = median_time(lambda: np.asarray(chain(xp.asarray(x))), runs)
            numpy_t = median_time(lambda: chain(x), runs)
            out.append(row("reuse", f"{levels} levels, {size} elements: cold compile+run", cold, None,
                           extra="(target < 1 s at 50 levels)"))
            out.append(row("reuse", f"{levels} levels, {size} elements: warm run", warm, numpy_t))
    return out


def lapk(strata, runs: int, triad: float | None) -> list[dict]:
    I, J, K = strata.dims("I J K")
    out = []
    for (ni, nj, nk) in ((64, 64, 64), (256, 256, 64)):
        a = np.random.default_rng(2).random((ni, nj, nk))
        for k in range(1, 6):
            x = strata.field(a, I[0:ni], J[0:nj], K[0:nk])

            def lap(f):
                return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)

            def run_strata():
                f = x
                for _ in range(k):
                    f = lap(f)
                return f.numpy()

            def lap_np(v):
                return -4.0 * v[1:-1, 1:-1] + v[2:, 1:-1] + v[:-2, 1:-1] + v[1:-1, 2:] + v[1:-1, :-2]

            def run_numpy():
                v = a
                for _ in range(k):
                    v = lap_np(v)
                return v

            np.testing.assert_allclose(run_strata(), run_numpy(), rtol=1e-9, atol=1e-9)
            ts, tn = median_time(run_strata, runs), median_time(run_numpy, runs)
            moved = (ni * nj + (ni - 2 * k) * (nj - 2 * k)) * nk * 8
            frac = f"{moved / ts / 1e9 / triad:.0%} of STREAM triad" if triad else ""
            out.append(row("lapk", f"lap^{k} on {ni}x{nj}x{nk}", ts, tn, extra=frac))
    return out


def overhead(strata, runs: int) -> list[dict]:
    m = strata.compile(
        "func @axpy(%a: f64, %x: tensor<f64, I[0:8]>, %y: tensor<f64, I[0:8]>) -> tensor<f64, I[0:8]> {\n"
        "  %r = plus(multiplies(%a, %x), %y) : tensor<f64, I[0:8]>\n  return %r\n}\n"
    )
    x, y = np.arange(8.0), np.ones(8)
    calls = 2000

    def many_strata():
        for _ in range(calls):
            m.axpy(a=0.5, x=x, y=y)

    def many_numpy():
        for _ in range(calls):
            np.add(x, y)

    ts = median_time(many_strata, runs) / calls
    tn = median_time(many_numpy, runs) / calls
    return [row("overhead", "a cached Program call (8 elements) vs np.add", ts, tn, extra="(target: <= 10 us above the run)")]


def array_kernels(runs: int, peak_gflops: float | None) -> list[dict]:
    import strata.array_api as xp

    out = []
    x8, y8 = xp.asarray(np.arange(8.0)), xp.asarray(np.ones(8))
    a8, b8 = np.arange(8.0), np.ones(8)
    calls = 2000

    def many_strata():
        for _ in range(calls):
            (x8 + y8).to_numpy()

    def many_numpy():
        for _ in range(calls):
            np.add(a8, b8)

    ts, tn = median_time(many_strata, runs) / calls, median_time(many_numpy, runs) / calls
    out.append(row("array", "xp.add of 8 elements, evaluated, vs np.add", ts, tn,
                   extra=f"({(ts - tn) * 1e6:.1f} us above numpy; target <= 3 us)"))
    n = 1024
    rng = np.random.default_rng(7)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal(n)
    sym = a + a.T
    xa, xb, xs = xp.asarray(a), xp.asarray(b), xp.asarray(sym)
    np.testing.assert_allclose(xp.linalg.solve(xa, xb).to_numpy(), np.linalg.solve(a, b), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(xp.linalg.eigvalsh(xs).to_numpy(), np.linalg.eigvalsh(sym), rtol=1e-9, atol=1e-9)
    for what, fs, fn in [
        ("linalg.solve 1024^2", lambda: xp.linalg.solve(xa, xb).to_numpy(), lambda: np.linalg.solve(a, b)),
        ("linalg.inv 1024^2", lambda: xp.linalg.inv(xa).to_numpy(), lambda: np.linalg.inv(a)),
        ("linalg.eigh 1024^2", lambda: [r.to_numpy() for r in xp.linalg.eigh(xs)], lambda: np.linalg.eigh(sym)),
        ("linalg.svd 1024^2", lambda: [r.to_numpy() for r in xp.linalg.svd(xa)], lambda: np.linalg.svd(a)),
    ]:
        ts, tn = median_time(fs, max(3, runs // 2)), median_time(fn, max(3, runs // 2))
        extra = "(target: numpy / strata >= 0.83)"
        if what.startswith("linalg.solve") and peak_gflops:
            extra += f"  {2 * n**3 / 3 / ts / 1e9:.1f} GFLOP/s = {2 * n**3 / 3 / ts / 1e9 / peak_gflops:.0%} of the FMA peak"
        out.append(row("array", what, ts, tn, peer="numpy", extra=extra))
    z = rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)
    xz = xp.asarray(z)
    np.testing.assert_allclose(xp.fft.fft(xz).to_numpy(), np.fft.fft(z), rtol=1e-9, atol=1e-6)
    # Real transforms of rows, and a strided axis (the lanes are columns): issue 53 item 5.
    r = rng.standard_normal((256, 4096))
    xr = xp.asarray(r)
    zc = z.reshape(4096, 256)
    xzc = xp.asarray(zc)
    np.testing.assert_allclose(xp.fft.rfft(xr).to_numpy(), np.fft.rfft(r), rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(xp.fft.fft(xzc, axis=0).to_numpy(), np.fft.fft(zc, axis=0), rtol=1e-9, atol=1e-8)
    for what, fs, fn in [
        ("fft of 2^20 complex128", lambda: xp.fft.fft(xz).to_numpy(), lambda: np.fft.fft(z)),
        ("rfft of 256 rows of 4096 float64", lambda: xp.fft.rfft(xr).to_numpy(), lambda: np.fft.rfft(r)),
        ("fft along axis 0 of 4096x256 complex128", lambda: xp.fft.fft(xzc, axis=0).to_numpy(), lambda: np.fft.fft(zc, axis=0)),
    ]:
        ts, tn = median_time(fs, runs), median_time(fn, runs)
        out.append(row("array", what, ts, tn, extra="(target: numpy / strata >= 1.0)"))
    return out


def compare(now: list[Path], base: list[Path]) -> int:
    """Strata's time per row in the `--json` records of processes of this build (`now`) against
    those of a baseline build's processes run alternately with them: the best and worst
    process of each side, their ratio, and a verdict — slower where even this build's best
    process is more than the workloads' slack (`report.BASELINE_SLACK`) above the baseline's
    worst (the processes' spread does not explain it). Returns 0 (the table is the result)."""
    from report import BASELINE_SLACK as SLACK

    def times(paths):
        out = {}
        for path in paths:
            # An indented row ("  the same, ...") details the row above it: keyed with it.
            above = ""
            for r in json.loads(path.read_text()):
                what = r["what"]
                if what[:1].isspace():
                    what = f"{above} /{what.strip()}"
                else:
                    above = what
                out.setdefault((r["group"], what), []).append(r["strata_s"])
        return out

    t_now, t_base = times(now), times(base)
    print(f"\nloops against the baseline build ({len(now)} + {len(base)} alternating processes): "
          "best and worst process per side, baseline / this build on the best (> 1: this build is faster)")
    slower = []
    for key, ns in t_now.items():
        bs = t_base.get(key)
        if not bs:
            print(f"{key[0]:10} {key[1]:44} {min(ns) * 1e3:10.3f} ms  baseline: not measured")
            continue
        verdict = "same"
        if min(ns) > max(bs) * (1 + SLACK):
            verdict = "slower"
            slower.append(f"{key[0]}: {key[1]}")
        elif min(bs) > max(ns) * (1 + SLACK):
            verdict = "faster"
        print(f"{key[0]:10} {key[1]:44} {min(ns) * 1e3:10.3f}-{max(ns) * 1e3:.3f} ms  baseline "
              f"{min(bs) * 1e3:10.3f}-{max(bs) * 1e3:.3f} ms  {min(bs) / min(ns):5.2f}x  {verdict}")
    print("loops slower than the baseline: " + ("; ".join(slower) if slower else "none"))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/loops.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strata", help="the strata binary")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--json", type=Path)
    p.add_argument("--compare", type=Path, nargs="+", metavar="JSON",
                   help="compare these --json records (this build's processes) with --against's and exit")
    p.add_argument("--against", type=Path, nargs="+", metavar="JSON", help="the baseline build's --json records")
    a = p.parse_args(argv)
    if a.compare or a.against:
        if not (a.compare and a.against):
            p.error("--compare and --against go together")
        return compare(a.compare, a.against)
    if not a.strata:
        p.error("--strata is required")
    import strata

    import runner

    threads = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as d:
        limits = runner.probe_limits(threads, Path(d))
    triad = next((r["gbps"] for r in limits if r["workload"] == "stream_triad"), None)
    peak = next((r["gflops"] for r in limits if r["workload"] == "fma_peak_f64"), None)
    print(f"loops: {threads} thread(s), STREAM triad {triad:.1f} GB/s; medians of {a.runs} runs" if triad else "loops:")
    records = []
    records += overhead(strata, a.runs)
    records += array_kernels(a.runs, peak)
    records += reuse(a.runs)
    records += lapk(strata, a.runs, triad)
    records += power(a.runs)
    records += cg(a.runs)
    records += diffusion(strata, a.strata, a.runs, triad)
    if a.json:
        a.json.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
