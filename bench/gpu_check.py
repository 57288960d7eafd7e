"""The GPU check (issue 52): on a machine with an NVIDIA GPU, every example entry runs on the GPU
and on the CPU backend and the two are compared, then the GPU bench group runs Strata, CuPy and
JAX on the same device and data, against the device's copy bandwidth measured in the same run.

Run it through `scripts/gpu-check` (which finds CUDA's libraries); it needs the release `strata`
binary, numpy, and for the bench group CuPy and JAX (each peer is skipped where missing). It
prints a table last and writes every number to --json.

    python3 bench/gpu_check.py --strata target/release/strata --json bench/gpu_results.json
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
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
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def sh(cmd, env=None, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


# --- every example entry: GPU against the CPU backend ----------------------------------------

def entries(strata):
    files = sorted((ROOT / "examples").rglob("*.strata")) + sorted((ROOT / "bench" / "workloads").glob("*.strata"))
    for f in files:
        p = sh([strata, "sig", "--json", str(f)])
        if p.returncode != 0:
            continue
        for e in json.loads(p.stdout)["entries"]:
            yield f, e


def load(path: Path):
    """The arrays of a result file: one array, a tuple's fields, or sparse storage's arrays."""
    z = np.load(path, allow_pickle=False)
    if isinstance(z, np.ndarray):
        return [z]
    return [z[k] for k in sorted(z.files)]


def compare(a, b):
    """("bitwise" | "close" | "differs", max relative difference)."""
    worst, exact = 0.0, True
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return "differs", float("inf")
        if x.tobytes() == y.tobytes():
            continue
        exact = False
        if x.dtype.kind in "fc":
            both_nan = np.isnan(x) & np.isnan(y)
            d = np.where(both_nan, 0, np.abs(x.astype(np.complex128) - y.astype(np.complex128)))
            scale = np.maximum(np.abs(y.astype(np.complex128)), 1e-300)
            worst = max(worst, float(np.max(d / np.maximum(scale, 1.0))))
        else:
            return "differs", float("inf")
    if exact:
        return "bitwise", 0.0
    return ("close" if worst <= 1e-5 else "differs"), worst


def check_entry(strata, f, e, tmp: Path, i: int):
    name = f"{f.relative_to(ROOT)}@{e['name']}"
    args = []
    for k, p in enumerate(e["params"]):
        args += ["--arg", f"{p['name']}=random:{k + 1}"]
    runs = {}
    # The CPU reference: the native backend; an entry whose own types place it on the GPU
    # runs there under every backend but the interpreter, which is then the reference.
    placed = any("device = gpu" in x["type"] for x in e["params"] + e["results"])
    cpu = ["--backend", "interp"] if placed else []
    for where, extra in (("cpu", cpu), ("gpu", ["--device", "gpu0"])):
        outs, paths = [], []
        for r in e["results"]:
            path = tmp / f"{i}-{where}-{r['name']}.npz"
            outs += ["--out", f"{r['name']}={path}"]
            paths.append(path)
        p = sh([strata, "run", str(f), "--entry", e["name"], *args, *outs, *extra])
        if p.returncode != 0:
            runs[where] = (None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
        else:
            try:
                runs[where] = ([x for path in paths for x in load(path)], "")
            except Exception as exc:  # an output the check cannot read (sparse storage)
                runs[where] = (None, f"unreadable output: {exc}")
    cpu, cpu_why = runs["cpu"]
    gpu, gpu_why = runs["gpu"]
    if cpu is None:
        return {"entry": name, "status": "skipped", "why": f"the CPU run refuses these random arguments: {cpu_why}"}
    if gpu is None:
        return {"entry": name, "status": "not on gpu", "why": gpu_why}
    status, rel = compare(gpu, cpu)
    return {"entry": name, "status": status, "max_rel_diff": rel}


def check_examples(strata, workers):
    tmp = Path(tempfile.mkdtemp(prefix="strata-gpu-check-"))
    todo = list(entries(strata))
    with cf.ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda a: check_entry(strata, a[1][0], a[1][1], tmp, a[0]), enumerate(todo)))
    return results


# --- the bench group: Strata, CuPy and JAX on one device ------------------------------------

def copy_bandwidth():
    """Bytes read plus written per second of a 1 GiB device-to-device copy (CuPy), median of 20."""
    import cupy as cp

    n = 1 << 27
    a = cp.random.random(n)
    b = cp.empty_like(a)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(25):
        start.record()
        b[...] = a
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return 2 * a.nbytes / statistics.median(times[5:])


def time_cupy(fn, reps=30):
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(10):
            r = fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e4)
    return statistics.median(times), r


def time_jax(fn, reps=30):
    import jax

    r = fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(10):
            r = fn()
        jax.block_until_ready(r)
        times.append((time.perf_counter() - t) / 10)
    return statistics.median(times), r


BENCH = ["laplap", "hdiff", "nabla", "tridiag", "elementwise", "sgemm", "spmv"]


def bench(strata, bandwidth):
    import workloads as wl

    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="strata-gpu-bench-"))
    for w in wl.workloads():
        if w.name not in BENCH:
            continue
        rng = np.random.default_rng(0)
        inputs = w.make(rng)
        want = w.reference(inputs)
        row = {"workload": w.name, "bytes": w.bytes, "flops": w.flops}
        # Strata: the kernels on resident buffers (`--repeat`: preallocated_s).
        args = []
        for k, v in inputs.items():
            if hasattr(v, "tocsr"):
                from scipy import sparse as sp

                path = tmp / f"{w.name}-{k}.npz"
                sp.save_npz(path, v)
            else:
                path = tmp / f"{w.name}-{k}.npy"
                np.save(path, v)
            args += ["--arg", f"{k}={path}"]
        out = tmp / f"{w.name}-out.{'npz' if w.name == 'nabla' else 'npy'}"
        timings = tmp / f"{w.name}-t.json"
        p = sh([strata, "run", str(HERE / "workloads" / w.program), "--entry", w.entry, "--device", "gpu0",
                "--repeat", "20", "--timings", str(timings), "--out", f"{w.out}={out}", *args], timeout=300)
        if p.returncode != 0:
            row["strata_error"] = p.stderr.strip()[-400:]
        else:
            t = json.loads(timings.read_text())
            row["strata_s"] = statistics.median(t["preallocated_s"])
            row["strata_roundtrip_s"] = statistics.median(t["allocating_s"])
            got = load(out)
            ref = list(want) if isinstance(want, tuple) else [np.asarray(want)]
            ok = all(np.allclose(g, r, rtol=max(w.rtol, 1e-9), atol=max(w.atol, 1e-9)) for g, r in zip(got, ref))
            row["strata_correct"] = bool(ok)
        # CuPy: the numpy reference on CuPy arrays (cuBLAS for the products, cuSPARSE for SpMV).
        try:
            import cupy as cp

            if w.name == "spmv":
                from cupyx.scipy import sparse as cps

                a, x = cps.csr_matrix(inputs["a"]), cp.asarray(inputs["x"])
                fn = lambda: a @ x  # noqa: E731
            else:
                dev = {k: cp.asarray(v) for k, v in inputs.items()}
                fn = lambda: w.reference(dev)  # noqa: E731
            row["cupy_s"], _ = time_cupy(fn)
        except Exception as exc:
            row["cupy_error"] = f"{type(exc).__name__}: {exc}"[:300]
        # JAX: the workload's own JAX peer (jit, float64 enabled), on the GPU.
        try:
            if "jax" in w.peers:
                row["jax_s"], _ = time_jax(w.peers["jax"](inputs))
        except Exception as exc:
            row["jax_error"] = f"{type(exc).__name__}: {exc}"[:300]
        if "strata_s" in row:
            row["strata_fraction_of_copy_bw"] = w.bytes / row["strata_s"] / bandwidth
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=str(ROOT / "target" / "release" / "strata"))
    ap.add_argument("--json", default=str(ROOT / "bench" / "gpu_results.json"))
    ap.add_argument("--skip-examples", action="store_true")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--workers", type=int, default=8)
    a = ap.parse_args()
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        smi = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]).stdout.strip()
    except FileNotFoundError:
        smi = "no nvidia-smi: no NVIDIA driver here"
    report = {"date": datetime.date.today().isoformat(), "device": smi, "strata": a.strata}
    t0 = time.time()
    if not a.skip_examples:
        ex = check_examples(a.strata, a.workers)
        report["examples"] = ex
        counts = {}
        for r in ex:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        report["examples_summary"] = counts
        print("examples:", counts, f"({time.time() - t0:.0f} s)", flush=True)
        for r in ex:
            if r["status"] in ("differs", "not on gpu"):
                print("  ", r, flush=True)
    if not a.skip_bench:
        try:
            bw = copy_bandwidth()
        except Exception as exc:
            bw = float("nan")
            print("copy bandwidth not measured:", exc)
        report["copy_bandwidth_Bps"] = bw
        report["bench"] = bench(a.strata, bw)
        print(f"\ndevice: {smi}; device-to-device copy {bw / 1e9:.0f} GB/s (read + write)")
        print(f"{'workload':12} {'strata ms':>10} {'cupy ms':>9} {'jax ms':>9} {'vs cupy':>8} {'vs jax':>8} {'of copy bw':>10} ok")
        for r in report["bench"]:
            s = r.get("strata_s")
            fmt = lambda v: f"{v * 1e3:10.4f}" if isinstance(v, float) else f"{'-':>10}"  # noqa: E731
            ratio = lambda k: f"{r[k] / s:8.2f}" if s and k in r else f"{'-':>8}"  # noqa: E731
            frac = f"{r['strata_fraction_of_copy_bw']:10.0%}" if "strata_fraction_of_copy_bw" in r else f"{'-':>10}"
            print(f"{r['workload']:12} {fmt(s)} {fmt(r.get('cupy_s'))[1:]} {fmt(r.get('jax_s'))[1:]} {ratio('cupy_s')} "
                  f"{ratio('jax_s')} {frac} {r.get('strata_correct', r.get('strata_error', '')[:60])}")
    report["seconds"] = time.time() - t0
    Path(a.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
