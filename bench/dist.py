"""Distributed benchmark: the laplacian of the laplacian and the nabla (on a partitioned mesh)
on 1 and 2 MPI ranks (strong and weak scaling) against the same program in one process at 1 and 2 threads and against mpi4py + numpy
with a hand-written halo exchange; then a 500-step diffusion simulation from Python with team
arrays resident across steps (bench/dist_sim.py) against numpy and mpi4py + numpy, and the
laplacian of laplacian and the nabla called from Python on team arrays (bench/dist_resident.py). The
machine's STREAM bandwidth and this MPI's α and β are measured in the same run, and the α-β
model is extrapolated to 1,024 ranks.
    bench/dist [--runs N] [--json PATH] [--only-sim] [--only-resident]"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import runner  # noqa: E402  (the STREAM probe)

LOCAL = (256, 256, 64)  # one rank's interior block for weak scaling; the strong-scaling size


def program(ni, nj, nk):
    """The laplap workload's program over a block-distributed I (team = world)."""
    def t(i0, i1, j0, j1):
        return f"tensor<f64, I[{i0}:{i1}] block, J[{j0}:{j1}], K[0:{nk}], team = world>"

    def lap(name, h, out_h):
        a, b = -h, ni + h
        c, d = -h, nj + h
        return f"""func @{name}(%x: {t(a, b, c, d)}) -> {t(-out_h, ni + out_h, -out_h, nj + out_h)} {{
  %four = constant(value = 4.0) : f64
  %ip = cartesian_shift(%x, dim = I, offset = 1) : {t(a - 1, b - 1, c, d)}
  %im = cartesian_shift(%x, dim = I, offset = -1) : {t(a + 1, b + 1, c, d)}
  %jp = cartesian_shift(%x, dim = J, offset = 1) : {t(a, b, c - 1, d - 1)}
  %jm = cartesian_shift(%x, dim = J, offset = -1) : {t(a, b, c + 1, d + 1)}
  %si = plus(%ip, %im) : {t(a + 1, b - 1, c, d)}
  %sj = plus(%jp, %jm) : {t(a, b, c + 1, d - 1)}
  %s = plus(%si, %sj) : {t(a + 1, b - 1, c + 1, d - 1)}
  %c4 = multiplies(%four, %x) : {t(a, b, c, d)}
  %r = minus(%s, %c4) : {t(a + 1, b - 1, c + 1, d - 1)}
  return %r
}}
"""
    return (lap("lap1", 2, 1) + lap("lap2", 1, 0) + f"""program @laplap(%out: out {t(0, ni, 0, nj)}, %x: {t(-2, ni + 2, -2, nj + 2)}) {{
  %m = call(@lap1, %x) : {t(-1, ni + 1, -1, nj + 1)}
  %r = call(@lap2, %m) : {t(0, ni, 0, nj)}
  %out <- %r
}}
""")


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def mpirun():
    cmd = ["mpirun", "--oversubscribe", "--quiet"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


LAPLAP_IO = ["--arg", "x=random:1", "--out", "out={tmp}/o.npy"]


def io(spec, tmp):
    return [a.replace("{tmp}", str(tmp)) for a in spec]


def strata_single(strata, prog, threads, runs, tmp, spec=LAPLAP_IO):
    t = tmp / f"single{threads}.json"
    subprocess.run([strata, "run", str(prog), *io(spec, tmp), "--threads", str(threads),
                    "--repeat", str(runs), "--timings", str(t)], check=True, capture_output=True)
    return median(json.loads(t.read_text())["preallocated_s"])


def strata_ranks(strata, prog, ranks, runs, tmp, spec=LAPLAP_IO):
    t = tmp / f"ranks{ranks}.json"
    subprocess.run([strata, "run", "--ranks", str(ranks), str(prog), *io(spec, tmp),
                    "--threads", "1", "--repeat", str(runs), "--timings", str(t)], check=True, capture_output=True)
    r = json.loads(t.read_text())
    # The slowest rank's exchange + run (each rank's medians), as the mpi4py peer reports its
    # slowest rank.
    return r["slowest_step_s"], r["slowest_exchange_s"], r["halo_bytes"]


# --- the nabla on a partitioned mesh --------------------------------------------------------

NABLA_MESH = (600, 560)  # vertices in x (periodic) and y: 336,000 vertices, 1,006,800 edges
NABLA_NAMES = ("pp", "s_mxx", "s_myy", "sign", "vol", "e2v", "v2e")


def nabla_mesh(nx, ny):
    """bench/workloads.py's triangulated grid with the edges renumbered by their first vertex
    (what a mesh partitioner does): a block of vertices then reaches a block of edges."""
    import numpy as np
    from workloads import make_mesh

    e2v, _ = make_mesh(nx, ny)
    e2v = e2v[np.lexsort((e2v.max(axis=1), e2v.min(axis=1)))]
    nv = nx * ny
    edge = np.repeat(np.arange(len(e2v)), 2)
    vert = e2v.reshape(-1)
    order = np.argsort(vert, kind="stable")
    edge, vert = edge[order], vert[order]
    slot = np.arange(len(vert)) - np.searchsorted(vert, np.arange(nv))[vert]
    v2e = -np.ones((nv, 7), dtype=np.int32)
    v2e[vert, slot] = edge
    return e2v, v2e


def nabla_case(nx, ny, tmp):
    """Writes the mesh, the fields and the distributed nabla at this size; returns the program
    and the numbers of vertices and edges."""
    import numpy as np

    e2v, v2e = nabla_mesh(nx, ny)
    nv, ne = v2e.shape[0], e2v.shape[0]
    rng = np.random.default_rng(7)
    d = tmp / f"nabla_{nx}x{ny}"
    d.mkdir(exist_ok=True)
    first = e2v[np.maximum(v2e, 0), 0] == np.arange(nv)[:, None]
    data = {"pp": rng.random(nv), "s_mxx": rng.random(ne), "s_myy": rng.random(ne),
            "sign": np.where(v2e == -1, 0.0, np.where(first, 1.0, -1.0)), "vol": 1.0 + rng.random(nv),
            "e2v": e2v, "v2e": v2e}
    for k, v in data.items():
        np.save(d / f"{k}.npy", v)
    text = (HERE.parent / "examples/distributed/nabla.strata").read_text()
    text = text.replace("Vertex[0:5440]", f"Vertex[0:{nv}]").replace("Edge[0:16167]", f"Edge[0:{ne}]")
    prog = d / "nabla.strata"
    prog.write_text(text)
    spec = [x for k in NABLA_NAMES for x in ("--arg", f"{k}={d / (k + '.npy')}")]
    spec += ["--out", f"nabla_x={d / 'x.npy'}", "--out", f"nabla_y={d / 'y.npy'}"]
    return prog, spec, d, nv, ne


def nabla_peer(py, ranks, d, runs):
    out = subprocess.run(mpirun() + ["-n", str(ranks), py, str(HERE / "dist_mpi4py_nabla.py"), str(d), str(runs)],
                         check=True, capture_output=True, text=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["exchange_s"] + r["compute_s"], r["exchange_s"], r["halo_bytes"]


def nabla_rows(a, tmp, triad):
    """Strong and weak scaling of the nabla: Strata on 1 and 2 ranks, in one process at 1 and 2
    threads, and the mpi4py + numpy peer."""
    rows = []
    nx, ny = NABLA_MESH
    cases = {}
    for scaling, sizes in (("strong", {1: ny, 2: ny}), ("weak", {1: ny, 2: 2 * ny})):
        for ranks, y in sizes.items():
            if y not in cases:
                cases[y] = nabla_case(nx, y, tmp)
            prog, spec, d, nv, ne = cases[y]
            # Bytes of the straightforward two-loop schedule: fields and tables read once, the
            # edge fluxes written and read once, two results written.
            bytes_moved = nv * 8 + 2 * ne * 8 + nv * 7 * 8 + nv * 8 + ne * 2 * 4 + nv * 7 * 4 + 2 * nv * 8
            meas = {
                f"strata 1 process, {ranks} thread(s)": (strata_single(a.strata, prog, ranks, a.runs, tmp, spec), 0.0, 0),
                f"strata {ranks} rank(s) x 1 thread": strata_ranks(a.strata, prog, ranks, a.runs, tmp, spec),
                f"mpi4py+numpy {ranks} rank(s)": nabla_peer(a.python, ranks, d, a.runs),
            }
            for impl, (t, ex, halo) in meas.items():
                gbps = bytes_moved / t / 1e9
                rows.append({"workload": "nabla", "scaling": scaling, "ranks": ranks, "shape": [nv, ne], "impl": impl,
                             "median_s": t, "exchange_s": ex, "halo_bytes": halo, "gbps": gbps,
                             "fraction_of_triad": gbps / triad})
    return rows


def rank_reports(text):
    """Every rank's JSON report (`{"rank": …}`) in a job's output: mpirun forwards the ranks'
    lines as they come, so two may share a line."""
    decoder, reps = json.JSONDecoder(), []
    at = text.find('{"rank"')
    while at >= 0:
        obj, end = decoder.raw_decode(text, at)
        reps.append(obj)
        at = text.find('{"rank"', end)
    return reps


# --- resident fields from Python: an entry called in a loop on team arrays ------------------

RESIDENT_CALLS = 12


def python_job(cmd, ranks=None, threads=None, stage=None, extra_env=None):
    """Runs a Python benchmark script `cmd` alone (`ranks` None) or under mpirun, with the
    staged package (`stage`), `threads` per process and `extra_env`: every rank's JSON report
    and the wall time from launch to exit."""
    import time

    if ranks is not None:
        cmd = mpirun() + ["-n", str(ranks)] + cmd
    env = dict(os.environ)
    if stage:
        env["PYTHONPATH"] = stage
    if threads is not None:
        env["STRATA_NUM_THREADS"] = str(threads)
    env.update(extra_env or {})
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return rank_reports(out.stdout), time.perf_counter() - t


def resident_run(py, prog, entry, inputs, ranks=None, threads=None, stage=None):
    """The slowest rank's first call and median later call of bench/dist_resident.py."""
    cmd = [py, str(HERE / "dist_resident.py"), str(prog), entry, str(inputs), str(RESIDENT_CALLS)]
    reps, _ = python_job(cmd, ranks, threads, stage)
    return max(r["first_s"] for r in reps), max(r["step_s"] for r in reps)


def resident_rows(a, tmp, triad):
    """The laplacian of laplacian and the nabla (strong-scaling sizes) from Python with their
    fields resident: one process with numpy arrays at 1 and 2 threads, 1 and 2 ranks with team
    arrays (plan, inspector and kernels made at the first call), against the mpi4py + numpy
    peers' steps."""
    import numpy as np

    stage = os.environ.get("STRATA_PYTHONPATH")
    rows = []
    ni, nj, nk = LOCAL
    d = tmp / "resident_laplap"
    d.mkdir(exist_ok=True)
    np.save(d / "x.npy", np.random.default_rng(1).random((ni + 4, nj + 4, nk)))
    prog = d / "laplap.strata"
    prog.write_text(program(ni, nj, nk))
    nprog, _, nd, nv, ne = nabla_case(*NABLA_MESH, tmp)
    cases = [("laplap", prog, "laplap", d, [ni, nj, nk], 16 * ni * nj * nk,
              lambda: peer(a.python, 2, (ni, nj, nk), a.runs)[0]),
             ("nabla", nprog, "nabla", nd, [nv, ne],
              nv * 8 + 2 * ne * 8 + nv * 7 * 8 + nv * 8 + ne * 2 * 4 + nv * 7 * 4 + 2 * nv * 8,
              lambda: nabla_peer(a.python, 2, nd, a.runs)[0])]
    for workload, p_, entry, inputs, shape, bytes_moved, peer2 in cases:
        configs = [("strata 1 process, 1 thread (numpy in)", None, 1, 1),
                   ("strata 1 process, 2 threads (numpy in)", None, 2, 1),
                   ("strata 1 rank x 1 thread (team arrays)", 1, 1, 1),
                   ("strata 2 ranks x 1 thread (team arrays)", 2, 1, 2)]
        for name, ranks, threads, size in configs:
            first, step = resident_run(a.python, p_, entry, inputs, ranks, threads, stage)
            rows.append({"workload": workload, "impl": name, "ranks": size, "shape": shape, "first_s": first,
                         "median_s": step, "gbps": bytes_moved / step / 1e9,
                         "fraction_of_triad": bytes_moved / step / 1e9 / triad})
        t = peer2()
        rows.append({"workload": workload, "impl": "mpi4py+numpy 2 ranks", "ranks": 2, "shape": shape, "first_s": None,
                     "median_s": t, "gbps": bytes_moved / t / 1e9, "fraction_of_triad": bytes_moved / t / 1e9 / triad})
    return rows


def print_resident(rows):
    print(f"resident fields from Python: an entry called {RESIDENT_CALLS} times (slowest rank; median of the calls "
          f"after the first):")
    print(f"  {'work':6} {'impl':46} {'1st call ms':>11} {'call ms':>8} {'GB/s':>6} {'of triad':>8}")
    for r in rows:
        first = f"{r['first_s'] * 1e3:11.1f}" if r["first_s"] is not None else f"{'':>11}"
        print(f"  {r['workload']:6} {r['impl']:46} {first} {r['median_s'] * 1e3:8.3f} {r['gbps']:6.1f} "
              f"{r['fraction_of_triad']:8.2f}")
    for w in sorted({r["workload"] for r in rows}):
        by = {r["impl"]: r["median_s"] for r in rows if r["workload"] == w}
        two = by["strata 2 ranks x 1 thread (team arrays)"]
        print(f"  {w}: 2 ranks vs the 2-thread single process {by['strata 1 process, 2 threads (numpy in)'] / two:.2f}x "
              f"(target >= 0.9); vs mpi4py+numpy at 2 ranks {by['mpi4py+numpy 2 ranks'] / two:.2f}x (target >= 5)")


# --- a simulation from Python: team arrays resident across steps ---------------------------

SIM = (1024, 500)  # grid points per side, steps


def sim_run(py, impl, n, steps, ranks=None, threads=None, stage=None, extra_env=None):
    """One run of bench/dist_sim.py: every rank's JSON report and the end-to-end wall time
    (launch to exit, as the user waits for it)."""
    return python_job([py, str(HERE / "dist_sim.py"), "--impl", impl, str(n), str(steps)], ranks, threads, stage,
                      extra_env)


# The 2-rank Strata run with MPI progress made otherwise: by default the kernels' polls move the
# halo during the interior (and a progress thread where the node has a core to spare); then with
# the progress thread forced on (every 20 us) beside the polls, and with neither, where the halo
# crosses in the wait after the interior (Open MPI moves messages over 4 KiB only inside MPI
# calls).
DEFAULT = "strata 2 ranks x 1 thread"
PROGRESS = {
    "strata 2 ranks x 1 thread, + progress thread": {"STRATA_MPI_PROGRESS_US": "20"},
    "strata 2 ranks x 1 thread, no polls or thread": {"STRATA_MPI_PROGRESS_US": "0", "STRATA_MPI_POLL": "0"},
}


def sim_rows(a, triad, ab):
    """The diffusion simulation (SIM) from Python: numpy; Strata in one process at 1 and 2
    threads and under mpirun at 1 and 2 ranks (and at 2 with the progress thread on and off); mpi4py +
    numpy at 1 and 2 ranks. Each reports its slowest rank's median step, and Strata's ranks the
    time per step spent completing the overlapped exchange after the interior (`wait`)."""
    n, steps = SIM
    stage = os.environ.get("STRATA_PYTHONPATH")
    configs = [
        ("numpy 1 process", "numpy", None, None, 1),
        ("strata 1 process, 1 thread", "strata", None, 1, 1),
        ("strata 1 process, 2 threads", "strata", None, 2, 1),
        ("strata 1 rank x 1 thread", "strata", 1, 1, 1),
        (DEFAULT, "strata", 2, 1, 2),
        *((name, "strata", 2, 1, 2) for name in PROGRESS),
        ("mpi4py+numpy 1 rank", "mpi4py", 1, None, 1),
        ("mpi4py+numpy 2 ranks", "mpi4py", 2, None, 2),
    ]
    rows = []
    bytes_moved = 16 * n * n  # read the state once, write it once
    # The 2-rank configurations share their kernels: one unrecorded run compiles them (and
    # their specialized versions, built in the background once a size has run 0.25 s), so
    # that no recorded run shares the cores with a compiler.
    sim_run(a.python, "strata", n, steps, 2, 1, stage)
    for name, impl, ranks, threads, size in configs:
        extra = PROGRESS.get(name)
        reps, wall = sim_run(a.python, impl, n, steps, ranks, threads, stage, extra)
        slow = max(reps, key=lambda r: r["step_s"])
        t = slow["step_s"]
        halo = max(r.get("halo_bytes_per_step", 0) for r in reps)
        msgs = 1 if size == 2 else 0  # each of two ranks has one neighbour
        rows.append({"workload": "diffusion-sim", "impl": name, "ranks": size, "shape": [n, n], "steps": steps,
                     "median_s": t, "loop_s": max(r["loop_s"] for r in reps), "wall_s": wall,
                     "first_step_s": max(r["first_step_s"] for r in reps),
                     "exchange_s": max(r.get("exchange_s_per_step", 0.0) for r in reps), "halo_bytes": int(halo),
                     "wait_s": max(r.get("wait_s_per_step", 0.0) for r in reps),
                     "model_exchange_s": msgs * (ab["alpha_s"] + ab["beta_s_per_byte"] * 8 * n),
                     "gbps": bytes_moved / t / 1e9, "fraction_of_triad": bytes_moved / t / 1e9 / triad,
                     "mass": reps[0]["mass"]})
    return rows


def print_sim(rows):
    n, steps = SIM
    print(f"diffusion simulation from Python, {n}x{n} float64, {steps} steps (slowest rank's median step):")
    print(f"  {'impl':46} {'step ms':>8} {'loop s':>7} {'wall s':>7} {'1st ms':>7} {'exch ms':>8} {'wait ms':>8} "
          f"{'model ms':>8} {'halo B':>7} {'GB/s':>6} {'of triad':>8}")
    for r in rows:
        print(f"  {r['impl']:46} {r['median_s'] * 1e3:8.3f} {r['loop_s']:7.2f} {r['wall_s']:7.2f} "
              f"{r['first_step_s'] * 1e3:7.1f} {r['exchange_s'] * 1e3:8.3f} {r['wait_s'] * 1e3:8.3f} "
              f"{r['model_exchange_s'] * 1e3:8.3f} {r['halo_bytes']:7d} {r['gbps']:6.1f} {r['fraction_of_triad']:8.2f}")
    by = {r["impl"]: r["median_s"] for r in rows}
    two = by[DEFAULT]
    print(f"  2 ranks vs the 2-thread single process: {by['strata 1 process, 2 threads'] / two:.2f}x (target >= 0.9); "
          f"vs mpi4py+numpy at 2 ranks: {by['mpi4py+numpy 2 ranks'] / two:.2f}x (target >= 5); "
          f"vs numpy: {by['numpy 1 process'] / two:.2f}x")
    row = {r["impl"]: r for r in rows}
    off = row[list(PROGRESS)[-1]]
    if off["wait_s"] > 0:
        print(f"  waiting for the halo after the interior, 2 ranks, without polls or progress thread: "
              f"{off['wait_s'] * 1e6:.0f} us per step (step {off['median_s'] * 1e3:.3f} ms); target < 20 % of it")
        for name in [DEFAULT, list(PROGRESS)[0]]:
            r = row[name]
            print(f"    {name}: {r['wait_s'] * 1e6:.0f} us ({r['wait_s'] / off['wait_s']:.0%}), "
                  f"step {r['median_s'] * 1e3:.3f} ms")


def peer(py, ranks, shape, runs):
    out = subprocess.run(mpirun() + ["-n", str(ranks), py, str(HERE / "dist_mpi4py.py"), *map(str, shape), str(runs)],
                         check=True, capture_output=True, text=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["exchange_s"] + r["compute_s"], r["exchange_s"], r["halo_bytes"]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strata", required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--json")
    p.add_argument("--skip-nabla", action="store_true", help="only the laplacian of laplacian")
    p.add_argument("--only-sim", action="store_true", help="only the simulation from Python")
    p.add_argument("--only-resident", action="store_true", help="only the entries called from Python on team arrays")
    a = p.parse_args(argv)
    # The meshes, fields and probes of this run (hundreds of MB at the nabla's size), removed after.
    with tempfile.TemporaryDirectory(prefix="strata-bench-dist-") as d:
        run(a, Path(d))


def run(a, tmp):
    """The benchmark with arguments `a`, its files under `tmp`."""
    build = tmp / "probes"
    build.mkdir()
    limits = runner.probe_limits(2, build)
    triad = next(r["gbps"] for r in limits if r["workload"] == "stream_triad")
    ab = json.loads(subprocess.run(mpirun() + ["-n", "2", a.python, str(HERE / "dist_alpha_beta.py")], check=True,
                                   capture_output=True, text=True).stdout.strip().splitlines()[-1])
    if a.only_resident:
        res = resident_rows(a, tmp, triad)
        print(f"STREAM triad (2 threads): {triad:.1f} GB/s")
        print_resident(res)
        if a.json:
            Path(a.json).write_text(json.dumps({"stream_triad_gbps": triad, "resident": res}, indent=1) + "\n")
        return
    if a.only_sim:
        sim = sim_rows(a, triad, ab)
        print(f"STREAM triad (2 threads): {triad:.1f} GB/s;  MPI α = {ab['alpha_s'] * 1e6:.2f} µs, "
              f"β = {1 / ab['beta_s_per_byte'] / 1e9:.2f} GB/s (1/β)")
        print_sim(sim)
        if a.json:
            Path(a.json).write_text(json.dumps({"stream_triad_gbps": triad, "alpha_beta": ab, "simulation": sim},
                                               indent=1) + "\n")
        return
    rows = []
    ni, nj, nk = LOCAL
    for scaling, shapes in (("strong", {1: (ni, nj, nk), 2: (ni, nj, nk)}), ("weak", {1: (ni, nj, nk), 2: (2 * ni, nj, nk)})):
        for ranks, shape in shapes.items():
            prog = tmp / f"laplap_{shape[0]}.strata"
            prog.write_text(program(*shape))
            points = shape[0] * shape[1] * shape[2]
            bytes_moved = 16 * points  # read the field once, write the result once
            meas = {
                f"strata 1 process, {ranks} thread(s)": (strata_single(a.strata, prog, ranks, a.runs, tmp), 0.0, 0),
                f"strata {ranks} rank(s) x 1 thread": strata_ranks(a.strata, prog, ranks, a.runs, tmp),
                f"mpi4py+numpy {ranks} rank(s)": peer(a.python, ranks, shape, a.runs),
            }
            for impl, (t, ex, halo) in meas.items():
                gbps = bytes_moved / t / 1e9
                rows.append({"workload": "laplap", "scaling": scaling, "ranks": ranks, "shape": list(shape), "impl": impl, "median_s": t,
                             "exchange_s": ex, "halo_bytes": halo, "gbps": gbps, "fraction_of_triad": gbps / triad})
    if not a.skip_nabla:
        rows += nabla_rows(a, tmp, triad)
    sim = sim_rows(a, triad, ab)
    resident = [] if a.skip_nabla else resident_rows(a, tmp, triad)

    # The target: 2 ranks against the 2-thread single process, same global size.
    def find(scaling, ranks, prefix, workload="laplap"):
        return next(r for r in rows if r["workload"] == workload and r["scaling"] == scaling and r["ranks"] == ranks
                    and r["impl"].startswith(prefix))
    ratios = {}
    for workload in ("laplap",) + (() if a.skip_nabla else ("nabla",)):
        for scaling in ("strong", "weak"):
            two_ranks = find(scaling, 2, "strata 2 rank", workload)["median_s"]
            two_threads = find(scaling, 2, "strata 1 process, 2", workload)["median_s"]
            ratios[f"{workload} {scaling}"] = two_threads / two_ranks
    # α-β model, weak scaling of the laplacian of laplacian at the local size LOCAL.
    alpha, beta = ab["alpha_s"], ab["beta_s_per_byte"]
    t_c = find("weak", 1, "strata 1 rank")["median_s"]
    halo = 2 * (nj + 4) * nk * 8  # two rows of the haloed field per neighbor
    t_x = 2 * (alpha + beta * halo)  # two neighbors, send and receive overlapped per neighbor
    model = []
    for p_ in (2, 16, 128, 1024):
        t_red = 2 * math.ceil(math.log2(p_)) * (alpha + 8 * beta)  # one allreduce per iteration (a residual)
        model.append({"ranks": p_, "halo_s": t_x, "allreduce_s": t_red,
                      "efficiency_halo_only": t_c / (t_c + t_x), "efficiency_with_allreduce": t_c / (t_c + t_x + t_red)})
    # Strong scaling of the same global size: the local work shrinks as 1/P, the halo does not.
    t_c1 = find("strong", 1, "strata 1 rank")["median_s"]
    strong = []
    for p_ in (2, 4, 8, 16, 32, 64, 128, 256):
        t_red = 2 * math.ceil(math.log2(p_)) * (alpha + 8 * beta)
        local = t_c1 / p_
        strong.append({"ranks": p_, "efficiency": local / (local + t_x + t_red)})
    below = next((m["ranks"] for m in strong if m["efficiency"] < 0.9), None)
    result = {"stream_triad_gbps": triad, "alpha_beta": ab, "rows": rows, "simulation": sim, "resident": resident,
              "two_ranks_over_two_threads": ratios,
              "model": {"local_shape": list(LOCAL), "compute_s": t_c, "halo_bytes": halo, "points": model,
                        "strong": strong, "strong_below_90_at": below}}
    print(f"STREAM triad (2 threads): {triad:.1f} GB/s;  MPI α = {alpha * 1e6:.2f} µs, β = {1 / beta / 1e9:.2f} GB/s "
          f"(1/β), allreduce(8 B) = {ab['allreduce_8B_s'] * 1e6:.2f} µs")
    print(f"{'work':6} {'scaling':7} {'ranks':>5} {'shape':>16} {'impl':36} {'median ms':>10} {'exchange ms':>11} {'halo B':>9} "
          f"{'GB/s':>6} {'of triad':>8}")
    for r in rows:
        print(f"{r['workload']:6} {r['scaling']:7} {r['ranks']:>5} {str(tuple(r['shape'])):>16} {r['impl']:36} {r['median_s'] * 1e3:10.3f} "
              f"{r['exchange_s'] * 1e3:11.3f} {r['halo_bytes']:9d} {r['gbps']:6.1f} {r['fraction_of_triad']:8.2f}")
    for s, v in ratios.items():
        print(f"{s}: 2 ranks reach {v:.2f}x the throughput of the 2-thread single process (target >= 0.9)")
    print(f"model (weak, local {LOCAL}, compute {t_c * 1e3:.2f} ms, halo {halo} B/neighbor):")
    for m in model:
        print(f"  {m['ranks']:5d} ranks: halo {m['halo_s'] * 1e6:8.1f} µs, allreduce {m['allreduce_s'] * 1e6:6.1f} µs, "
              f"efficiency {m['efficiency_halo_only']:.3f} (halo only), {m['efficiency_with_allreduce']:.3f} (with allreduce)")
    print(f"model (strong, global {LOCAL}, 1-rank compute {t_c1 * 1e3:.2f} ms): " + ", ".join(
        f"{m['ranks']}: {m['efficiency']:.2f}" for m in strong) + f"; below 90 % from {below} ranks")
    print_sim(sim)
    if resident:
        print_resident(resident)
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
