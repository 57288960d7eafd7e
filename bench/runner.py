"""The benchmark runner (called by bench/run).

For each thread count (1 and all cores, or --threads N) it measures the machine's limits with
the C probes (STREAM triad and read, FMA peak; the better of a probe before and after the
workloads), and runs every workload in a child process
pinned to that many cores, with every peer's thread pool set to the same count:
Strata (native backend, cached compile; --repeat timings on preallocated and on freshly
allocated outputs) and the peers on identical data, in interleaved rounds so that load bursts
on a shared machine hit every implementation alike, the order rotating every round. Every
result is checked against the numpy reference. Prints the table (bench/report.py) and writes
the JSON records with --json. With --baseline STRATA, that binary (a build of an earlier
commit) takes turns too, and a list after the table names the workloads this build runs
slower than it beyond the run's noise (bench/report.py, `against_baseline`).
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

import report  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", help="comma-separated workload names (e.g. laplap,sgemm,reductions)")
    p.add_argument("--threads", type=int, help="one thread count (default: 1 and all cores)")
    p.add_argument("--json", type=Path, help="write the records to this file")
    p.add_argument("--runs", type=int, default=7, help="timed runs after the warm-up (default 7, at least 5)")
    p.add_argument("--readme", action="store_true", help="rewrite the README's performance table from these results")
    p.add_argument("--strata", default=str(HERE.parent / "target/release/strata"), help=argparse.SUPPRESS)
    p.add_argument("--baseline", metavar="STRATA",
                   help="another `strata` binary (a build of an earlier commit) timed in the same interleaved rounds "
                        "as this one, with a kernel cache of its own: its rows are 'strata (baseline)', and a list "
                        "after the table says which workloads this build runs slower beyond the run's noise")
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--builds-only", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.runs < 5:
        p.error("--runs must be at least 5")
    if a.threads is not None and a.threads < 1:
        p.error("--threads must be at least 1")
    if a.baseline is not None:
        if a.readme:
            p.error("--readme takes a run without --baseline (the README's table compares peers, not builds)")
        a.baseline = str(Path(a.baseline).resolve())
        if not os.access(a.baseline, os.X_OK):
            p.error(f"--baseline {a.baseline}: not an executable file")
    return a


def selected(only):
    import workloads

    ws = workloads.workloads()
    if not only:
        return ws
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = sorted({w.group for w in ws} | {w.name for w in ws})
    for n in names:
        if n not in known:
            sys.exit(f"bench/run: unknown workload `{n}` (known: {', '.join(known)})")
    return [w for w in ws if w.group in names or w.name in names]


def thread_env(threads: int) -> dict:
    env = dict(os.environ)
    t = str(threads)
    env.update(
        OMP_NUM_THREADS=t,
        OPENBLAS_NUM_THREADS=t,
        MKL_NUM_THREADS=t,
        NUMBA_NUM_THREADS=t,
        STRATA_NUM_THREADS=t,
        RAYON_NUM_THREADS=t,
        XLA_FLAGS=f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} intra_op_parallelism_threads={t}",
        JAX_PLATFORMS="cpu",
        JAX_ENABLE_X64="1",  # f64 workloads stay f64 (JAX defaults to f32)
        PYTHONOPTIMIZE="1",  # GT4Py skips its argument checks (it warns about them otherwise)
    )
    return env


def pin(threads: int):
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    return lambda: os.sched_setaffinity(0, cpus)


def probe_limits(threads: int, build: Path) -> list[dict]:
    """Compiles and runs the C probes; returns "limit" records."""
    recs = []
    for probe in ("stream", "fma"):
        exe = build / probe
        if not exe.exists():
            cc = os.environ.get("CC", "cc")
            subprocess.run([cc, "-O3", "-march=native", "-fopenmp", str(HERE / "probes" / f"{probe}.c"), "-o", str(exe)], check=True)
        out = subprocess.run([str(exe)], env=thread_env(threads), preexec_fn=pin(threads), check=True, capture_output=True, text=True)
        r = json.loads(out.stdout)
        if probe == "stream":
            recs.append(limit_record("stream_triad", threads, gbps=r["triad_gbps"]))
            recs.append(limit_record("stream_read", threads, gbps=r["read_gbps"]))
        else:
            recs.append(limit_record("fma_peak_f64", threads, gflops=r["f64_gflops"], isa=r["isa"]))
            recs.append(limit_record("fma_peak_f32", threads, gflops=r["f32_gflops"], isa=r["isa"]))
    return recs


def limit_record(name, threads, gbps=None, gflops=None, **extra):
    return {"workload": name, "impl": "limit", "threads": threads, "median_s": None, "min_s": None, "max_s": None,
            "gbps": gbps, "gflops": gflops, "fraction_of_limit": 1.0, **extra}


# --- the child: one thread count, all workloads --------------------------------------------


def check(w, got, want) -> float:
    """The largest error relative to the tolerance (<= 1 passes); raises on a mismatch."""
    import numpy as np

    if hasattr(want, "tocsr"):  # a sparse result: pattern and values, never a dense view
        g, r = got.tocsr(), want.tocsr()
        r.eliminate_zeros()
        g.sort_indices()
        r.sort_indices()
        if g.shape != r.shape or not (np.array_equal(g.indptr, r.indptr) and np.array_equal(g.indices, r.indices)):
            raise AssertionError(f"stored pattern differs from SciPy's ({g.nnz} entries, SciPy {r.nnz})")
        err = np.abs(g.data - r.data) / (w.atol + w.rtol * np.abs(r.data))
        worst = float(err.max()) if err.size else 0.0
        if worst > 1.0:
            raise AssertionError(f"differs from the reference by {worst:.3g}x the tolerance")
        return worst
    gots = got if isinstance(got, tuple) else (got,)
    wants = want if isinstance(want, tuple) else (want,)
    worst = 0.0
    for g, r in zip(gots, wants):
        g = np.asarray(g)
        r = np.asarray(r)
        if g.shape != r.shape:
            raise AssertionError(f"shape {g.shape} != reference {r.shape}")
        if r.dtype.kind in "iu":
            bad = int((g != r).sum())
            if bad:
                raise AssertionError(f"{bad} of {r.size} indices differ from the reference")
            continue
        err = np.abs(g.astype(np.float64) - r.astype(np.float64)) / (w.atol + w.rtol * np.abs(r.astype(np.float64)))
        worst = max(worst, float(err.max()) if err.size else 0.0)
    if worst > 1.0:
        raise AssertionError(f"differs from the reference by {worst:.3g}x the tolerance (rtol {w.rtol}, atol {w.atol})")
    return worst


def run_strata(w, inputs, threads, runs, strata, tmp: Path, cache: Path | None = None):
    import numpy as np

    args = []
    for k, v in inputs.items():
        sparse = hasattr(v, "tocsr")  # a SciPy sparse matrix: SciPy's .npz
        path = tmp / f"{w.group}-{k}.{'npz' if sparse else 'npy'}"
        if not path.exists():
            if sparse:
                from scipy import sparse as sp

                sp.save_npz(path, v)
            else:
                np.save(path, v)
        args += ["--arg", f"{k}={path}"]
    sparse_out = w.sparse_out
    out = tmp / f"out-{w.name.replace('/', '-')}.{'npz' if w.name == 'nabla' or sparse_out else 'npy'}"
    timings = tmp / "timings.json"
    cmd = [strata, "run", str(HERE / "workloads" / w.program), "--entry", w.entry, "--backend", "native",
           "--threads", str(threads), "--repeat", str(runs), "--timings", str(timings), "--out", f"{w.out}={out}", *args]
    env = dict(os.environ, STRATA_CACHE_DIR=str(cache)) if cache else None
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"strata failed ({' '.join(cmd[:6])} ...):\n{p.stderr.strip()}")
    t = json.loads(timings.read_text())
    if sparse_out:
        from scipy import sparse as sp

        result = sp.load_npz(out)
    elif out.suffix == ".npz":
        z = np.load(out)
        result = tuple(z[f"f{i}"] for i in range(len(z.files)))
    else:
        result = np.load(out)
    return result, t


def stats(times):
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


ROUND = 3  # timed runs per implementation per round


def measure(w, inputs, want, threads, runs, strata, tmp, baseline=None, peers=True):
    """Times Strata and every peer on `w` in interleaved rounds of ROUND runs each, so that a
    burst of load on the shared machine hits every implementation alike. Returns records
    (without derived figures); a failing implementation gets an "error" record. `baseline`:
    another `strata` binary timed the same way in the same rounds (impl `report.BASELINE`,
    its kernels compiled into a cache of its own). `peers=False` times the builds alone."""
    base = {"workload": w.name, "threads": threads}
    rounds = -(-runs // ROUND)
    times = {}  # impl -> list of run times (Strata: per variant)
    extra = {}
    runners = {}
    errors = {}
    # Set up and warm up each peer once (JIT compiles, first touch), checking its result.
    for impl, factory in (w.peers if peers else {}).items():
        try:
            t0 = time.perf_counter()
            run = factory(inputs)
            first = getattr(run, "first_s", None)  # a factory that compiles times its first call
            result = run()
            extra[impl] = {"check": check(w, result, want), "first_s": first if first is not None else time.perf_counter() - t0}
            extra[impl].update({k: getattr(run, k) for k in ("label", "note") if getattr(run, k, "")})
            runners[impl] = run
            times[impl] = []
        except Exception as e:  # noqa: BLE001 — reported in the table, the suite goes on
            errors[impl] = f"{type(e).__name__}: {e}"
    builds = {"strata": strata} | ({report.BASELINE: baseline} if baseline else {})
    for impl in builds:
        times[f"{impl}/preallocated"], times[f"{impl}/allocating"] = [], []

    def build_turn(r, impl, binary):
        if impl in errors:
            return
        try:
            # The first round compiles into an empty cache (a cold compile), the second finds it
            # there (a cached call's overhead). The baseline keeps a cache of its own.
            tag = f"{w.name.replace('/', '-')}-{threads}"
            cache = (tmp / f"cache-{tag}" if r < 2 else None) if impl == "strata" else tmp / f"cache-baseline-{tag}"
            got, t = run_strata(w, inputs, threads, ROUND, binary, tmp, cache)
            if r == 0:
                extra[impl] = {"check": check(w, got, want), "compile_s": t["compile_s"], "cached": t["cached"],
                               "cold_compile_s": t["compile_s"]}
                if impl != "strata":
                    extra[impl]["label"] = "strata (baseline)"
            elif r == 1:
                extra[impl]["cached_compile_s"] = t["compile_s"]
            times[f"{impl}/preallocated"] += t["preallocated_s"]
            times[f"{impl}/allocating"] += t["allocating_s"]
        except Exception as e:  # noqa: BLE001
            errors[impl] = str(e)

    def peer_turn(_r, impl, run):
        for _ in range(ROUND):
            t0 = time.perf_counter()
            run()
            times[impl].append(time.perf_counter() - t0)

    turns = [(build_turn, impl, binary) for impl, binary in builds.items()]
    turns += [(peer_turn, impl, run) for impl, run in runners.items()]
    for r in range(rounds):
        # Every implementation takes its turn first in some round: the one right after another's
        # turn meets that one's thread pools still spinning (OpenBLAS, XLA, OpenMP), which cost a
        # 2-thread GEMM ~40 % where the same build, run later in the round, did not pay it.
        for turn, impl, what in turns[r % len(turns):] + turns[: r % len(turns)]:
            turn(r, impl, what)
    records = []
    for impl in builds:
        if impl in errors:
            records.append({**base, "impl": impl, "variant": "allocating", "error": errors[impl]})
            continue
        for variant in ("preallocated", "allocating"):
            records.append({**base, "impl": impl, "variant": variant, **stats(times[f"{impl}/{variant}"]), **extra[impl]})
    for impl in w.peers if peers else ():
        if impl in errors:
            records.append({**base, "impl": impl, "variant": "allocating", "error": errors[impl]})
        else:
            records.append({**base, "impl": impl, "variant": "allocating", **stats(times[impl]), **extra[impl]})
    return records


def child(args):
    import numpy as np

    threads = args.threads
    try:
        import numba

        numba.set_num_threads(threads)
    except ImportError:
        pass
    records = []
    ws = selected(args.only)
    with tempfile.TemporaryDirectory(prefix="strata-bench-") as d:
        tmp = Path(d)
        data = {}
        for w in ws:
            if w.group not in data:
                # One data set per program file: entries of one group share inputs.
                for f in [*tmp.glob("*.npy"), *tmp.glob("*.npz")]:
                    f.unlink()
                data = {w.group: w.make(np.random.default_rng(20261122))}
            inputs = data[w.group]
            want = w.reference(inputs)
            print(f"  {w.name}: strata, {', '.join(w.peers)}", file=sys.stderr, flush=True)
            records += measure(w, inputs, want, threads, args.runs * w.runs_scale, args.strata, tmp, args.baseline,
                               peers=not args.builds_only)
    args.child.write_text(json.dumps(records))


# --- the parent ----------------------------------------------------------------------------


def confirm(flagged, ws, runs, run_child):
    """A second pass over the workloads the first found slower than the baseline: the two builds
    alone (no peers), twice the first pass's `runs`, in alternating rounds. Returns "workload
    (N thr, variant)" for each found slower in both passes: one pass's burst of load on a shared
    machine, hitting a few of one build's runs, flags a workload about once a full run."""
    confirmed = []
    for t in sorted({t for _, t, _ in flagged}):
        only = sorted({n for n, tt, _ in flagged if tt == t})
        print(f"bench: {t} thread(s): confirming {', '.join(only)} against the baseline", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="strata-confirm-") as d:
            again = run_child(t, ",".join(only), 2 * runs, d, builds_only=True)
        text, slower = report.against_baseline(again, [w for w in ws if w.name in only],
                                               f"Confirmation, {t} thread(s): the two builds alone, {2 * runs} runs each")
        print(text)
        confirmed += [f"{n} ({t} thr, {v})" for n, tt, v in flagged if tt == t and (n, tt, v) in slower]
    return confirmed


def main(argv):
    args = parse_args(argv)
    if args.child:
        return child(args)
    start = time.time()
    counts = [args.threads] if args.threads else sorted({1, len(os.sched_getaffinity(0))})
    ws = selected(args.only)
    records = []

    def run_child(t, only, runs, d, builds_only=False):
        out = Path(d) / f"child-{t}.json"
        cmd = [sys.executable, __file__, "--child", str(out), "--threads", str(t), "--runs", str(runs), "--strata", args.strata]
        if only:
            cmd += ["--only", only]
        if args.baseline:
            cmd += ["--baseline", args.baseline]
        if builds_only:
            cmd += ["--builds-only"]
        subprocess.run(cmd, env=thread_env(t), preexec_fn=pin(t), check=True)
        return json.loads(out.read_text())

    with tempfile.TemporaryDirectory(prefix="strata-probes-") as d:
        for t in counts:
            print(f"bench: {t} thread(s): probing the machine's limits", file=sys.stderr)
            before = probe_limits(t, Path(d))
            print(f"bench: {t} thread(s): {len(ws)} workloads", file=sys.stderr)
            records += run_child(t, args.only, args.runs, d)
            # Limits are what the machine can do: the better of a probe before and after.
            after = probe_limits(t, Path(d))
            for b, a in zip(before, after):
                key = "gbps" if b["gbps"] is not None else "gflops"
                records.append(b if b[key] >= a[key] else a)
    report.derive(records, ws)
    meta = report.machine(time.time() - start)
    for r in records:
        if r["impl"] == "limit":
            r["machine"] = meta
    print(report.table(records, ws, meta))
    if args.baseline:
        text, flagged = report.against_baseline(records, ws, f"Against the baseline build {args.baseline}, same rounds")
        print(text)
        slower = confirm(flagged, ws, args.runs, run_child)
        print("slower than the baseline (in both passes): " + (", ".join(slower) if slower else "none") + "\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(records, indent=1) + "\n")
        print(f"bench: wrote {args.json}", file=sys.stderr)
    if args.readme:
        report.update_readme(HERE.parent / "README.md", report.table(records, ws, meta, markdown=True))
        print("bench: updated the README's performance table", file=sys.stderr)
    failed = [r for r in records if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
