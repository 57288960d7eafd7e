"""SPMD Python under `mpirun` (tests/spmd/*.py, each run at 1–4 ranks and alone): team arrays
partitioned along their first axis, a 500-step diffusion loop checked bit for bit against numpy,
creation functions holding only each rank's rows, parallel `.npy` writes, a failing rank ending
the job, and each rank's memory over a loop. Needs Open MPI (`scripts/mpi-env` installs it)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SCRIPTS = HERE / "spmd"


@pytest.fixture(scope="module")
def mpirun():
    env = subprocess.run([str(ROOT / "scripts/mpi-env")], capture_output=True, text=True)
    assert env.returncode == 0, f"Open MPI is needed:\n{env.stderr}"
    cmd = ["mpirun", "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run(mpirun, ranks, script, *args, timeout=300, check=True, env=None):
    """Runs `script` alone (`ranks` None) or under `mpirun -n ranks` (with more environment
    variables `env`); returns the process."""
    cmd = [sys.executable, str(SCRIPTS / script), *map(str, args)]
    if ranks is not None:
        cmd = mpirun + ["-n", str(ranks)] + cmd
    # One thread per rank: the ranks share this machine's cores.
    env = dict(os.environ, STRATA_NUM_THREADS="1", **(env or {}))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if check:
        assert out.returncode == 0, f"{ranks} ranks:\n{out.stdout}\n{out.stderr}"
    return out


def reports(out, ranks):
    """Each rank's JSON line, by rank."""
    # mpirun forwards the ranks' lines as they come: two may share a line of its output.
    decoder = json.JSONDecoder()
    text, found, at = out.stdout, [], out.stdout.find('{"rank"')
    while at >= 0:
        obj, end = decoder.raw_decode(text, at)
        found.append(obj)
        at = text.find('{"rank"', end)
    by_rank = {r["rank"]: r for r in found}
    assert sorted(by_rank) == list(range(ranks or 1)), out.stdout
    return [by_rank[k] for k in sorted(by_rank)]


def blocks(n, ranks):
    """Strata's block partition of `n` rows: remainders to the last ranks."""
    base, rem = divmod(n, ranks)
    sizes = [base + (1 if k >= ranks - rem else 0) for k in range(ranks)]
    starts = np.cumsum([0] + sizes)
    return [[int(starts[k]), int(starts[k + 1])] for k in range(ranks)]


@pytest.mark.parametrize("ranks", [None, 1, 2, 3, 4])
def test_a_500_step_diffusion_equals_numpy_at_every_step(mpirun, ranks):
    n, m = 30, 12
    got = reports(run(mpirun, ranks, "diffusion.py", n, m, 500), ranks)
    for r in got:
        assert r["size"] == (ranks or 1)
        assert r["mismatches"] == [], r  # bit for bit: no operation reassociates
        assert r["sum_error"] < 1e-13, r
        # The step compiles once whatever dt is (the reads after each step are gathers, not
        # programs), and every step runs distributed under mpirun.
        assert r["misses"] <= 1, r
        if ranks is not None:
            assert r["distributed_runs"] >= 500, r
        # With neighbors, each step's interior runs while its halo is being exchanged (the
        # boundary rows after it arrives).
        if (ranks or 1) > 1:
            assert r["overlap_s"] > 0, r
        assert r["device"] == "strata.Place(device='cpu', team=strata.world)"
    if ranks is not None:
        assert [r["rows"] for r in got] == blocks(n, ranks)


@pytest.mark.parametrize("n, m", [(30, 12), (48, 48), (31, 7)])
def test_a_loops_kernels_do_not_depend_on_the_rank_count(mpirun, tmp_path, n, m):
    # The ranks' local programs differ in their blocks' sizes and places, and the first and
    # last rank read a halo on one side only and keep the assignment's untouched border rows:
    # each prints one text all the same (extents are arguments, each in a slot of its own;
    # strips, pieces and border operands of no rows where a rank has none, one rank too), so
    # the loop compiles the same kernels at 1, 2, 3 and 4 ranks. A fresh kernel cache per job:
    # its compiles are the kernels found there after.
    # Specializing a long-running size (a decision per rank, off here) would add kernels.
    found = {}
    for ranks in (1, 2, 3, 4):
        cache = tmp_path / f"cache{ranks}"
        env = {"STRATA_CACHE_DIR": str(cache), "STRATA_SPECIALIZE_AFTER_S": "never"}
        for r in reports(run(mpirun, ranks, "diffusion.py", n, m, 50, env=env), ranks):
            assert r["mismatches"] == [], r
        found[ranks] = sorted(p.name for p in cache.glob("k*.so"))
    assert found[1] == found[2] == found[3] == found[4], found


@pytest.mark.parametrize("progress_us, poll, columns, pieces", [
    ("1", "0", 600, None), ("1", "1", 12, "7"), ("0", "1", 600, None), ("0", "1", 12, "7"), ("0", "0", 600, None)])
def test_mpi_progress_on_and_off_keeps_the_diffusion_exact(mpirun, progress_us, poll, columns, pieces):
    # Two helpers test the exchanges a rank started while it computes: the MPI layer's
    # progress thread ($STRATA_MPI_PROGRESS_US: microseconds between its tests, here every
    # microsecond; 0: no thread) and the polls of the local program's kernels ($STRATA_MPI_POLL;
    # 0: empty). With neither, the wait moves the bytes. Halo rows of 600 float64 pass Open
    # MPI's 4 KiB eager limit; 7-byte pieces make dozens of requests per exchange, completing
    # on a helper while the main thread posts the next and waits. Every step equals numpy's
    # bit for bit.
    env = {"STRATA_MPI_PROGRESS_US": progress_us, "STRATA_MPI_POLL": poll}
    if pieces:
        env["STRATA_MPI_CHUNK_BYTES"] = pieces
    got = reports(run(mpirun, 3, "diffusion.py", 30, columns, 60, env=env), 3)
    for r in got:
        assert r["mismatches"] == [], r
        assert r["sum_error"] < 1e-13, r
        if r["progress_thread"] is not None:
            assert r["progress_thread"] == (progress_us != "0"), r


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_creation_assignment_save_and_load_on_the_team(mpirun, ranks, tmp_path):
    got = reports(run(mpirun, ranks, "creation.py", tmp_path), ranks)
    for r in got:
        assert r["wrong"] == [], r
    lengths = {"zeros": 13, "ones": 13, "full": 9, "arange": 13, "linspace": 11, "asarray": 10,
               "zeros_like": 7, "to_device": 8, "load_array": 10}
    for name, n in lengths.items():
        # Each rank holds exactly its block of rows.
        assert [r["blocks"][name] for r in got] == blocks(n, ranks), name
    # Nothing but the saved array is left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_a_rank_that_raises_ends_the_job_with_its_message(mpirun):
    out = run(mpirun, 2, "failure.py", timeout=120, check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "rank 1 of 2 failed" in text and "rank one gives up" in text, text
    # The rank that did not fail stopped in its next collective rather than finishing.
    assert "sum again" not in out.stdout


def test_each_rank_holds_its_share_of_a_time_loop(mpirun):
    n, m = 2048, 1024  # 16 MiB of float64
    sums = set()
    peak = {}
    for ranks in (1, 2, 4):
        # Reductions in the rank-count-independent order: the total's bits too are the same.
        for r in reports(run(mpirun, ranks, "memory.py", n, m, 8, env={"STRATA_REPRODUCIBLE": "1"}), ranks):
            block = r["block_mb"]
            # Making the array allocates the rank's block only (never the whole array).
            assert r["made_mb"] <= 1.2 * block + 1.0, r
            # A step holds the state and the next state, as one process does: the block is
            # read in place with its halo in strips, and the next state is written into the
            # last one's memory (recycled). 2 blocks, plus 1 MiB for allocator slack (memory.py
            # turns transparent huge pages off: with them, the heaps grow 2 MiB at a time and a
            # page boundary, not the data, decided whether a step fit).
            assert r["loop_mb"] <= 2.05 * block + 1.0, r
            peak[ranks] = max(peak.get(ranks, 0.0), r["loop_mb"])
            sums.add(r["sum"])
    assert peak[4] <= 0.6 * peak[2] <= 0.6 * 0.6 * peak[1] * 1.2, peak
    assert len(sums) == 1, sums  # every rank count computes the same values


@pytest.fixture(scope="module")
def strata_exe(mpirun):
    exe = os.environ.get("STRATA_EXE")
    if not exe:
        pytest.skip("STRATA_EXE (the `strata` command; set by `cargo test`) is not set")
    assert Path(exe).exists(), exe
    return exe


def test_strata_launch_runs_a_script_on_ranks(strata_exe, tmp_path):
    out = subprocess.run(
        [strata_exe, "launch", "--ranks", "3", sys.executable, str(ROOT / "examples/python/diffusion.py"),
         "--n", "64", "--steps", "100", "--check", "--save", str(tmp_path / "u.npy")],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, STRATA_NUM_THREADS="1"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "on 3 rank(s)" in out.stdout and "equal to numpy bit for bit" in out.stdout, out.stdout
    assert np.load(tmp_path / "u.npy").shape == (64, 64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["u.npy"]


def test_the_gt4py_example_runs_on_ranks(strata_exe):
    pytest.importorskip("gt4py.next")
    out = subprocess.run(
        [strata_exe, "launch", "--ranks", "2", sys.executable, str(ROOT / "examples/python/gt4py_diffusion.py"),
         "--n", "64", "--steps", "30", "--check"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, STRATA_NUM_THREADS="1"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "on 2 rank(s)" in out.stdout and "equal to numpy bit for bit" in out.stdout, out.stdout


def test_strata_launch_names_a_killed_rank(strata_exe):
    out = subprocess.run([strata_exe, "launch", "--ranks", "2", sys.executable, str(SCRIPTS / "killed.py")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "error: rank 1 was killed by signal 9" in out.stderr, out.stderr
    assert "sum again" not in out.stdout


def test_strata_launch_refuses_a_missing_command(strata_exe):
    out = subprocess.run([strata_exe, "launch", "--ranks", "2", "no-such-command-here"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "cannot find the command `no-such-command-here`" in out.stderr, out.stderr


def test_ranks_that_trace_different_programs_get_an_error_not_a_hang(mpirun):
    out = run(mpirun, 2, "diverged.py", timeout=120)
    for rank in (0, 1):
        assert f"rank {rank} error:" in out.stdout, out.stdout + out.stderr
    assert "differs from another rank's" in out.stdout and "sum" not in out.stdout


def test_ranks_with_different_values_of_one_program_get_an_error_not_a_mix(mpirun):
    # Issue 49's A4: ranks tracing `sum(x * 2.0)` and `sum(x * 3.0)` got one mixed answer.
    out = run(mpirun, 2, "diverged_values.py", timeout=120)
    for rank in (0, 1):
        for name in ("scalar", "integer"):
            assert f"rank {rank} {name} error:" in out.stdout, out.stdout + out.stderr
        assert f"rank {rank} same sum 132.0" in out.stdout, out.stdout
    assert "differs between ranks" in out.stdout and " scalar sum" not in out.stdout


@pytest.mark.parametrize("ranks", [None, 1, 2, 3])
def test_trust_cases_of_team_arrays_match_numpy(mpirun, ranks):
    # Issue 49's A1–A3 and D1 on teams of 1–3 ranks.
    for r in reports(run(mpirun, ranks, "trust.py"), ranks):
        assert r["wrong"] == [], r


@pytest.mark.parametrize("ranks", [2, 3])
def test_generated_chains_of_team_arrays_match_numpy(mpirun, ranks):
    # tests/chains.py's generator on team arrays (`STRATA_CHAINS_COUNT` for a long run).
    count = os.environ.get("STRATA_CHAINS_COUNT", "6")
    for r in reports(run(mpirun, ranks, "chains_team.py", count, 1000 + 100 * ranks, timeout=1200), ranks):
        assert r["wrong"] == [], r["wrong"][:3]


@pytest.mark.parametrize("ranks", [None, 1, 2, 3, 4])
def test_entries_of_a_module_take_team_arrays_in_a_time_loop(mpirun, ranks):
    """`strata.compile(...)` entries over `team = world` types called with team arrays: each
    rank its block, halos inside, results team arrays, equal to numpy step for step; planned
    and compiled once."""
    out = run(mpirun, ranks, "entries.py")
    assert out.stdout.count("entries ok") == (ranks or 1), out.stdout


@pytest.mark.parametrize("ranks", [None, 2, 3])
def test_fields_on_the_team_evaluate_distributed(mpirun, ranks):
    """`strata.field(..., device=strata.world)`: expressions and a stencil in a time loop on
    each rank's rows, equal to numpy; the stencil compiles once."""
    out = run(mpirun, ranks, "fields.py")
    assert out.stdout.count("fields ok") == (ranks or 1), out.stdout


@pytest.mark.parametrize("ranks", [None, 1, 2, 3, 4])
def test_gt4py_programs_run_unchanged_on_team_fields(mpirun, ranks):
    """GT4Py programs on `strata.gt4py.backend` with fields made on `strata.world`: a
    120-step diffusion bit for bit against numpy, compiled once; an unstructured neighbor sum
    through team-distributed tables."""
    pytest.importorskip("gt4py.next")
    out = run(mpirun, ranks, "gt4py_fields.py")
    assert out.stdout.count("diffusion ok") == (ranks or 1), out.stdout
    assert out.stdout.count("unstructured ok") == (ranks or 1), out.stdout


@pytest.mark.parametrize("ranks", [None, 2, 4])
def test_edge_cases_of_team_arrays_match_numpy(mpirun, ranks):
    for r in reports(run(mpirun, ranks, "edges.py"), ranks):
        assert r["wrong"] == [], r


@pytest.mark.parametrize("ranks", [None, 2, 3])
def test_neighbor_tables_on_the_team_are_reinspected_only_when_replaced(mpirun, ranks):
    # The inspector keeps what it found while a table is the same array (its stamp) and runs
    # again for a new one; every call equals numpy.
    for r in reports(run(mpirun, ranks, "tables.py"), ranks):
        assert r["wrong"] == [], r


@pytest.mark.parametrize("ranks", [None, 1, 2, 3])
def test_reductions_of_team_arrays_fold_blocks_and_gather_nothing(mpirun, ranks):
    """sum, prod, max, min, mean, var, std, any and all over every axis combination, against
    numpy; each rank folds its rows and the partials are combined, so no rank receives another
    rank's block (`gathered_bytes` stays 0)."""
    for r in reports(run(mpirun, ranks, "reductions.py"), ranks):
        assert r["wrong"] == [], r["wrong"][:5]
        assert r["gathered_bytes"] == 0, r


def test_reproducible_reductions_give_the_same_bits_at_every_rank_count(mpirun):
    """With `STRATA_REPRODUCIBLE=1` float sums over the block axis fold each row and combine
    the rows in a fixed tree: 1, 2, 3 and 4 ranks give the same bits (and numpy's values to
    rounding); without it each rank sums its block and the bits depend on the rank count."""
    digests = set()
    for ranks in (1, 2, 3, 4):
        for r in reports(run(mpirun, ranks, "reductions.py", env={"STRATA_REPRODUCIBLE": "1"}), ranks):
            assert r["wrong"] == [], r["wrong"][:5]
            digests.add(r["digest"])
    assert len(digests) == 1, digests


@pytest.mark.parametrize("ranks", [None, 1, 2, 3])
def test_matmul_of_team_operands_computes_each_ranks_rows_without_gathering(mpirun, ranks):
    for r in reports(run(mpirun, ranks, "matmul.py"), ranks):
        assert r["wrong"] == [], r
        # 5 shapes × 6 dtype pairs × (matrix·matrix, matrix·vector, vector·matrix).
        assert r["checked"] == 90, r
        assert r["gathered_bytes"] == 0, r


def test_ranks_that_disagree_on_reproducible_reductions_get_an_error_not_a_hang(mpirun):
    for r in reports(run(mpirun, 2, "reproducible_mismatch.py", timeout=120), 2):
        assert "`STRATA_REPRODUCIBLE` is set to 1 on some ranks and not on others" in r["message"], r
