"""Runs the array front end under mpirun (examples/array/spmd.rs) and checks every result
against numpy.

Usage: python check_spmd.py SPMD_BINARY WORKDIR [--ranks N]
Without --ranks the binary runs as one process (no mpirun). The input has 37 rows, so 2, 3 and
4 ranks split it unevenly (remainders to the last ranks). Sums over the distributed rows are
combined from the ranks' partials (reassociated): floats compare at rtol = atol = 1e-12.
"""

import os
import subprocess
import sys

import numpy as np

RTOL = ATOL = 1e-12


def expect(name, got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise SystemExit(f"{name}: got shape {got.shape} {got.dtype}, expected {want.shape} {want.dtype}")
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
        raise SystemExit(f"{name}: max abs error {err}\n got {got.ravel()[:8]}\nwant {want.ravel()[:8]}")
    print(f"ok {name}: shape {got.shape}")


def main():
    exe, work = sys.argv[1], sys.argv[2]
    ranks = int(sys.argv[sys.argv.index("--ranks") + 1]) if "--ranks" in sys.argv else None
    os.makedirs(work, exist_ok=True)
    x = np.random.default_rng(20261124).standard_normal((37, 5))
    x[5, 2] = x[30, 2] = x.max() + 1.0  # a tie for argmax along axis 0 would be ambiguous; along 1 it is not
    np.save(os.path.join(work, "x.npy"), x)
    out = os.path.join(work, f"out{ranks or 0}")
    os.makedirs(out, exist_ok=True)
    cmd = [exe, os.path.join(work, "x.npy"), out]
    env = dict(os.environ)
    if ranks:
        cmd = ["mpirun", "-n", str(ranks), "--oversubscribe"] + cmd
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0 or "ok:" not in proc.stdout:
        raise SystemExit(f"spmd failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    got = {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}
    a = np.arange(0, 110, dtype=np.float32)
    want = {
        "elementwise": x * x + 1.0,
        "where": np.where(x > 0, x, -x),
        "sum_all": np.array(x.sum()),
        "sum_axis0": x.sum(axis=0),
        "sum_axis1": x.sum(axis=1),
        "mean_axis0": x.mean(axis=0),
        "max_all": np.array(x.max()),
        "argmax_axis1": x.argmax(axis=1),
        "cumulative_sum_axis0": np.cumsum(x, axis=0),
        "slice": x[3:30:2],
        "flip": np.flip(x),
        "roll": np.roll(x, 3, axis=0),
        "matrix_transpose": x.T,
        "reshape": x.reshape(5, 37),
        "matmul": x @ x.T,
        "concat": np.concatenate([x, x], axis=0),
        "sort_axis0": np.sort(x, axis=0),
        "arange_slice": a[34:82:2],
        "collect_distribute": 2.0 * x,
    }
    missing = sorted(set(want) - set(got))
    if missing:
        raise SystemExit(f"no output for {missing}")
    for name, w in want.items():
        expect(name, got[name], w)
    # No temporary file is left beside the outputs.
    left = [f for f in os.listdir(out) if f.startswith(".")]
    if left:
        raise SystemExit(f"temporary files left: {left}")
    if ranks:
        # A file too short for the last rank's rows: every rank fails (the last with the
        # reason), nobody hangs, and no output is written.
        data = open(os.path.join(work, "x.npy"), "rb").read()
        open(os.path.join(work, "short.npy"), "wb").write(data[: len(data) - 100])
        bad = os.path.join(work, f"bad{ranks}")
        os.makedirs(bad, exist_ok=True)
        cmd[-2:] = [os.path.join(work, "short.npy"), bad]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        if proc.returncode == 0 or f"rank {ranks - 1}: cannot read" not in proc.stderr or os.listdir(bad):
            raise SystemExit(f"a truncated input: exit {proc.returncode}, files {os.listdir(bad)}\n{proc.stderr}")
        print(f"ok a truncated input ends the job on every rank (exit {proc.returncode})")
    on = f"{ranks} ranks" if ranks else "one process"
    print(f"{len(want)} passed, 0 failed ({on})")


if __name__ == "__main__":
    main()
