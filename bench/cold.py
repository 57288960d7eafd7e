#!/usr/bin/env python3
"""Cold start: the first call of every bench/run workload into an empty kernel cache.

Issue 50, item 7 asks for the first call of a new program structure within 100 ms (median over
the bench's workloads). For each workload of bench/workloads.py this runs `strata run` on the
workload's data with a fresh `STRATA_CACHE_DIR` `--fresh` times (default 3) and prints the
compile time `--timings` reports (lowering, emission, the C compile and the load: everything
before the first run), the median per workload and the median over the workloads. Results
are checked against numpy's reference as bench/run checks them.

    .venv/bin/python bench/cold.py [--fresh N] [--only NAME,NAME] [--strata target/release/strata]

Run it on a quiet machine; it times C compiles, which another process on the two cores
slows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import runner  # noqa: E402
import workloads  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", type=int, default=3, help="fresh kernel caches per workload")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--strata", default=str(HERE.parent / "target/release/strata"))
    args = ap.parse_args()
    only = {n for n in args.only.split(",") if n}
    medians = []
    for w in workloads.workloads():
        if only and w.name not in only:
            continue
        inputs = w.make(np.random.default_rng(0))
        want = w.reference(inputs)
        times = []
        for _ in range(args.fresh):
            with tempfile.TemporaryDirectory() as tmp:
                tmp = Path(tmp)
                got, t = runner.run_strata(w, inputs, 2, 1, args.strata, tmp, tmp / "cache")
                runner.check(w, got, want)
                times.append(t["compile_s"])
        medians.append(statistics.median(times))
        each = " ".join(f"{x * 1e3:.0f}" for x in times)
        print(f"cold  {w.name:24} {medians[-1] * 1e3:7.1f} ms   (each: {each})", flush=True)
    if medians:
        print(f"cold  median over {len(medians)} workloads: {statistics.median(medians) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
