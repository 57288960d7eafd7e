//! Distributed runs on real MPI processes (Open MPI, installed by `scripts/mpi-env`): every
//! distributed example at 1–4 ranks equals its single-process run bit for bit, inputs are read
//! at their offsets, printed results are gathered, and failures end the job with the failing
//! rank's message, a non-zero exit, no hang and no output file.

mod common;

#[path = "scratch/mod.rs"]
mod scratch;
use scratch::{scratch, Scratch};

use std::path::Path;
use std::process::Output;

use common::{require_mpi, root, strata, strata_with};

fn tmp(name: &str) -> Scratch {
    scratch(&format!("dist-{name}"))
}

fn ok(o: &Output) -> String {
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{e}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `example` in one process and on 1..=4 ranks (or `only`); the written output files must
/// be identical.
fn same_on_ranks(example: &str, args: &[&str], out: &str, only: Option<usize>) {
    require_mpi();
    let d = tmp(&example.replace('/', "_"));
    let file = root().join("examples").join(example).display().to_string();
    let mut base: Vec<String> = vec!["run".into(), file];
    for a in args {
        base.push("--arg".into());
        base.push((*a).into());
    }
    let run = |extra: &[String], path: &Path| {
        let mut v: Vec<String> = base.clone();
        v.extend(extra.iter().cloned());
        v.push("--out".into());
        v.push(format!("{out}={}", path.display()));
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        ok(&strata(&refs));
        std::fs::read(path).unwrap()
    };
    let single = run(&[], &d.join("single.npy"));
    let ranks: Vec<usize> = only.map_or_else(|| (1..=4).collect(), |n| vec![n]);
    for n in ranks {
        let got = run(&["--ranks".into(), n.to_string()], &d.join(format!("r{n}.npy")));
        assert!(got == single, "{example} on {n} ranks differs from the single-process run");
    }
    // Nothing but the outputs is left in the folder (no temporary files).
    let names: Vec<String> =
        std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| n.ends_with(".npy") && !n.starts_with('.')), "{names:?}");
}

#[test]
fn laplacian_equals_the_single_process_run_on_1_to_4_ranks() {
    same_on_ranks("distributed/laplacian.strata", &["inp=random:1"], "out", None);
}

#[test]
fn every_rank_count_compiles_the_same_one_kernel() {
    require_mpi();
    // The first rank reads a halo above only, the last below only, the inner ones both, one
    // rank none, and the blocks differ in size and place (66 input rows over 8 ranks: 9, 9,
    // 8, …): one kernel, the same one at every rank count (its extents are arguments, each
    // printed in a slot of its own; empty strips and pieces where a rank reads none).
    for example in ["laplacian", "laplacian_of_laplacian"] {
        let d = tmp(&format!("one-kernel-{example}"));
        let file = root().join(format!("examples/distributed/{example}.strata")).display().to_string();
        let single = d.join("single.npy");
        ok(&strata(&["run", &file, "--arg", "inp=random:1", "--out", &format!("out={}", single.display())]));
        let mut seen: Option<Vec<String>> = None;
        for ranks in [1, 2, 3, 4, 8] {
            // A fresh kernel cache: the job's compiles are the kernels found there afterwards.
            let cache = d.join(format!("cache{ranks}"));
            let vars = [("STRATA_CACHE_DIR", cache.to_str().unwrap())];
            let out = d.join(format!("r{ranks}.npy"));
            let n = ranks.to_string();
            let args =
                ["run", "--ranks", &n, &file, "--arg", "inp=random:1", "--out", &format!("out={}", out.display())];
            ok(&strata_with(&args, &vars));
            assert_eq!(std::fs::read(&single).unwrap(), std::fs::read(&out).unwrap(), "{example}, {ranks} ranks");
            let files: Vec<String> = std::fs::read_dir(&cache)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            let mut kernels: Vec<String> =
                files.iter().filter(|n| n.starts_with('k') && n.ends_with(".so")).cloned().collect();
            kernels.sort();
            assert_eq!(kernels.len(), 1, "{example}, {ranks} ranks: {kernels:?}");
            // The builds' lock files are shared by keys (a bounded set), none named after a kernel.
            let locks: Vec<&String> = files.iter().filter(|n| n.starts_with("klock.")).collect();
            assert!(!locks.is_empty() && locks.len() <= kernels.len(), "{locks:?}");
            assert!(files.iter().all(|n| !n.ends_with(".lock")), "{files:?}");
            assert!(seen.as_ref().is_none_or(|s| *s == kernels), "{example}: {seen:?} then {kernels:?}");
            seen = Some(kernels);
        }
    }
}

#[test]
fn reproducible_reductions_give_the_same_bits_at_every_rank_count() {
    require_mpi();
    let d = tmp("reproducible");
    let stats = root().join("examples/distributed/statistics.strata").display().to_string();
    let vars = [("STRATA_REPRODUCIBLE", "1")];
    let run = |ranks: usize, name: &str, vars: &[(&str, &str)]| {
        let (c, e) = (d.join(format!("{name}{ranks}.c.npy")), d.join(format!("{name}{ranks}.e.npy")));
        let n = ranks.to_string();
        let (cs, es) = (format!("colsum={}", c.display()), format!("energy={}", e.display()));
        let args = ["run", "--ranks", &n, &stats, "--arg", "x=random:4", "--out", &cs, "--out", &es];
        ok(&strata_with(&args, vars));
        (std::fs::read(c).unwrap(), std::fs::read(e).unwrap())
    };
    // Column sums and the energy, float sums over the block level: the same bits at 1-5 ranks.
    let one = run(1, "r", &vars);
    for ranks in 2..=5 {
        assert!(run(ranks, "r", &vars) == one, "{ranks} ranks differ from 1 rank");
    }
    // Without it, each rank sums its own block: 2 and 3 ranks round differently here.
    assert!(run(2, "p", &[]).1 != run(3, "p", &[]).1, "the test input does not tell the orders apart");
}

#[test]
fn a_complex_stencil_equals_the_single_process_run_on_1_to_4_ranks() {
    same_on_ranks("distributed/complex_phase.strata", &["z=random:1", "w=random:2"], "result", None);
}

#[test]
fn laplacian_of_laplacian_equals_the_single_process_run_on_1_to_4_ranks() {
    same_on_ranks("distributed/laplacian_of_laplacian.strata", &["inp=random:2"], "out", None);
}

#[test]
fn tridiagonal_solve_with_k_local_equals_the_single_process_run() {
    // I has 3 rows: on 4 ranks the first rank holds none.
    let args = ["a=random:1", "b=random:2", "c=random:3", "d=random:4"];
    same_on_ranks("distributed/tridiagonal.strata", &args, "x", None);
}

#[test]
fn scans_along_the_distributed_dimension_equal_the_single_process_run() {
    // Rank after rank, nothing reassociated: bit for bit, forward and backward, tuple states.
    let args = ["a=random:1", "b=random:2", "c=random:3", "d=random:4"];
    same_on_ranks("distributed/tridiagonal_along_i.strata", &args, "x", None);
    same_on_ranks("distributed/prefix_sum.strata", &["x=random:1"], "running", None);
    same_on_ranks("distributed/prefix_sum.strata", &["x=random:1"], "from_end", None);
    // The difference reads a halo row of the scan's result on the neighbor rank.
    same_on_ranks("distributed/prefix_sum.strata", &["x=random:1"], "difference", None);
    let ps = root().join("examples/distributed/prefix_sum.strata").display().to_string();
    let lowered = ok(&strata(&["lower", "--to", "dist", "--ranks", "2", &ps]));
    assert!(lowered.contains("scans `%c` along `I` rank after rank (increasing)"), "{lowered}");
    assert!(lowered.contains("rank 0 -> rank 1: I[19:20]"), "{lowered}");
}

/// Scans `acc ⊕ x` with an exact `⊕` (integers: sums, maxima) run on every rank at once and add
/// the carries of the ranks before afterwards: the running sums and maxima computed here (the
/// oracle), and byte for byte one process, forward and backward, with ranks holding no rows (3
/// rows over 4 ranks).
#[test]
fn integer_scans_run_on_every_rank_at_once_and_equal_one_process() {
    require_mpi();
    let d = tmp("intscan");
    const COLS: usize = 5;
    for (rows, name) in [(40, "many"), (3, "few")] {
        let prog = d.join(format!("{name}.strata"));
        std::fs::write(
            &prog,
            format!(
                "!F = tensor<i64, I[0:{rows}] block, J[0:5], team = world>\n\
                 !C = tensor<i64, J[0:5], team = world>\n\
                 func @add(%s: !C, %x: !C) -> !C {{\n  %r = plus(%s, %x) : !C\n  return %r\n}}\n\
                 func @top(%s: !C, %x: !C) -> !C {{\n  %r = maximum(%x, %s) : !C\n  return %r\n}}\n\
                 func @low(%s: !C, %x: !C) -> !C {{\n  %r = minimum(%s, %x) : !C\n  return %r\n}}\n\
                 func @mul(%s: !C, %x: !C) -> !C {{\n  %r = multiplies(%s, %x) : !C\n  return %r\n}}\n\
                 func @xor(%s: !C, %x: !C) -> !C {{\n  %r = bit_xor(%s, %x) : !C\n  return %r\n}}\n\
                 program @main(%x: !F, %up: out !F, %down: out !F, %best: out !F, %least: out !F, \
                 %prod: out !F, %parity: out !F) {{\n  \
                 %u = scan(@add, %x, dim = I, forward = true, init = 7) : !F\n  \
                 %d = scan(@add, %x, dim = I, forward = false, init = 0) : !F\n  \
                 %b = scan(@top, %x, dim = I, forward = true, init = -5) : !F\n  \
                 %l = scan(@low, %x, dim = I, forward = false, init = 3) : !F\n  \
                 %p = scan(@mul, %x, dim = I, forward = false, init = 1) : !F\n  \
                 %q = scan(@xor, %x, dim = I, forward = true, init = 0) : !F\n  \
                 %up <- %u\n  %down <- %d\n  %best <- %b\n  %least <- %l\n  %prod <- %p\n  %parity <- %q\n}}\n"
            ),
        )
        .unwrap();
        let prog = prog.display().to_string();
        // Values of both signs, not monotone along I (the maxima change inside blocks).
        let x: Vec<i64> = (0..rows * COLS).map(|k| ((k as i64 * 37) % 23) - 11).collect();
        let input = d.join(format!("{name}-x.npy"));
        write_i64(&input, COLS, &x);
        let at = |i: usize, j: usize| x[i * COLS + j];
        let mut want = std::collections::HashMap::new();
        let (mut up, mut down, mut best) = (vec![0; x.len()], vec![0; x.len()], vec![0; x.len()]);
        let (mut least, mut prod, mut parity) = (vec![0; x.len()], vec![0; x.len()], vec![0; x.len()]);
        for j in 0..COLS {
            let (mut s, mut m, mut q) = (7, -5, 0);
            for i in 0..rows {
                s += at(i, j);
                m = m.max(at(i, j));
                q ^= at(i, j);
                (up[i * COLS + j], best[i * COLS + j], parity[i * COLS + j]) = (s, m, q);
            }
            // The products wrap (two's complement), as Strata's integer arithmetic does.
            let (mut s, mut l, mut p) = (0, 3, 1i64);
            for i in (0..rows).rev() {
                s += at(i, j);
                l = l.min(at(i, j));
                p = p.wrapping_mul(at(i, j));
                (down[i * COLS + j], least[i * COLS + j], prod[i * COLS + j]) = (s, l, p);
            }
        }
        want.extend([("up", up), ("down", down), ("best", best), ("least", least), ("prod", prod), ("parity", parity)]);
        for out in ["up", "down", "best", "least", "prod", "parity"] {
            let run = |extra: &[&str], path: &Path| {
                let (o, a) = (format!("{out}={}", path.display()), format!("x={}", input.display()));
                let mut v = vec!["run", prog.as_str(), "--arg", &a, "--out", &o];
                v.extend_from_slice(extra);
                ok(&strata(&v));
                assert_eq!(read_i64(path, COLS, x.len()), want[out], "{name}: `{out}` {extra:?}");
                std::fs::read(path).unwrap()
            };
            let single = run(&[], &d.join(format!("{name}-{out}.npy")));
            for n in ["2", "3", "4"] {
                let got = run(&["--ranks", n], &d.join(format!("{name}-{out}-r{n}.npy")));
                assert!(got == single, "{name}: `{out}` on {n} ranks differs from one process");
            }
        }
        let lowered = ok(&strata(&["lower", "--to", "dist", "--ranks", "3", &prog]));
        assert!(lowered.contains("scans `%u` along `I` on every rank at once (increasing)"), "{lowered}");
    }
}

#[test]
fn distribute_and_collect_run_on_the_declared_team() {
    same_on_ranks("placement/distributed_axpy.strata", &["x=random:1", "y=random:2"], "out", Some(4));
}

#[test]
fn inputs_are_read_at_their_offsets_and_printed_results_gathered() {
    require_mpi();
    let d = tmp("files");
    let lap = root().join("examples/distributed/laplacian.strata").display().to_string();
    // An input file made by a single-process run (a laplacian output has the input's shape
    // only with the halo, so write the input type's data with `zeros`-free random values).
    let src = d.join("prog.strata");
    std::fs::write(
        &src,
        "program @p(%out: out tensor<f64, I[-1:65], J[-1:65], K[0:8]>, %a: tensor<f64, I[-1:65], J[-1:65], K[0:8]>) {\n  %out <- %a\n}\n",
    )
    .unwrap();
    let inp = d.join("inp.npy");
    ok(&strata(&[
        "run",
        &src.display().to_string(),
        "--arg",
        "a=random:7",
        "--out",
        &format!("out={}", inp.display()),
    ]));
    let inp_arg = format!("inp={}", inp.display());
    let one = d.join("one.npy");
    ok(&strata(&["run", &lap, "--arg", &inp_arg, "--out", &format!("out={}", one.display())]));
    let three = d.join("three.npy");
    ok(&strata(&["run", "--ranks", "3", &lap, "--arg", &inp_arg, "--out", &format!("out={}", three.display())]));
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&three).unwrap());
    // Printed: gathered on rank 0, printed once, as in one process.
    let tiny = d.join("tiny.strata");
    std::fs::write(
        &tiny,
        "!T = tensor<f64, I[0:5] block, team = world>\nfunc @twice(%a: !T) -> !T {\n  %r = plus(%a, %a) : !T\n  return %r\n}\n",
    )
    .unwrap();
    let t = tiny.display().to_string();
    let single = ok(&strata(&["run", &t, "--arg", "a=ones"]));
    assert_eq!(single, "result =\n[2, 2, 2, 2, 2]\n");
    assert_eq!(ok(&strata(&["run", "--ranks", "3", &t, "--arg", "a=ones"])), single);
}

#[test]
fn the_distribution_is_printed_with_its_halo_exchange() {
    let lap = root().join("examples/distributed/laplacian.strata").display().to_string();
    let out = ok(&strata(&["lower", "--to", "dist", "--ranks", "2", &lap]));
    assert!(out.contains("rank 0: owns I[-1:32], holds I[-1:33] (halo 0 below, 1 above)"), "{out}");
    assert!(out.contains("rank 1 -> rank 0: I[32:33]"), "{out}");
    assert!(out.contains("rank 0 -> rank 1: I[31:32]"), "{out}");
}

#[test]
fn a_ranks_local_program_is_printed_as_it_compiles() {
    // `strata lower --rank K`: rank K's local program, lowered as the rank lowers it. The
    // first, an inner and the last rank print the same C; only the extents a run passes
    // (the last line) and the header naming the rank differ.
    let lap = root().join("examples/distributed/laplacian.strata").display().to_string();
    let c = |rank: &str| {
        let out = ok(&strata(&["lower", "--ranks", "4", "--rank", rank, "--to", "c", &lap]));
        assert!(out.starts_with(&format!("// stage 1 of 1, rank {rank} of 4\n")), "{out}");
        let code: Vec<&str> =
            out.lines().skip(1).filter(|l| !l.starts_with("/* the extents a run at these sizes passes")).collect();
        code.join("\n")
    };
    let first = c("0");
    assert!(first.contains("inp_below") && first.contains("inp_above"), "{first}");
    assert_eq!(first, c("1"));
    assert_eq!(first, c("3"));
    let loops = ok(&strata(&["lower", "--ranks", "4", "--rank", "2", &lap]));
    assert!(loops.contains("// extents per site"), "{loops}");
    let o = strata(&["lower", "--ranks", "4", "--rank", "4", &lap]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("--rank 4: the ranks are 0 to 3"), "{e}");
}

fn fails_with(args: &[&str], message: &str) {
    require_mpi();
    let o = strata(args);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains(message), "expected `{message}` in:\n{e}");
}

#[test]
fn a_team_of_the_wrong_size_is_a_clear_error() {
    let axpy = root().join("examples/placement/distributed_axpy.strata").display().to_string();
    fails_with(
        &["run", "--ranks", "2", &axpy, "--arg", "x=ones", "--arg", "y=ones"],
        "lives on a team of 4 ranks, but the job has 2",
    );
}

#[test]
fn a_contraction_over_a_block_level_another_operand_holds_whole_is_a_clear_error() {
    // `A` distributed by rows, `B` by its contracted rows: each rank would fold its own `K`
    // rows of `B` against every `K` row of `A` (which it does not hold by columns). Refused
    // when planning, not when a rank's program fails to verify.
    let d = tmp("block-contract");
    let src = d.join("mm.strata");
    std::fs::write(
        &src,
        "func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {\n  %p = multiplies(%a, %b) : f64\n  %r = plus(%acc, %p) : f64\n  return %r\n}\n\
         func @mm(%a: tensor<f64, I[0:10] block, K[0:4], team = world>, %b: tensor<f64, K[0:4] block, J[0:3], team = world>) \
         -> tensor<f64, I[0:10] block, J[0:3], team = world> {\n  \
         %c = map_reduce(@mac, %a, %b, init = 0.0, einsum = \"ik,kj->ij\") : tensor<f64, I[0:10] block, J[0:3], team = world>\n  \
         return %c\n}\n",
    )
    .unwrap();
    let file = src.display().to_string();
    let message = "every operand that has that dimension must be distributed along it";
    fails_with(&["run", "--ranks", "2", &file, "--arg", "a=ones", "--arg", "b=ones"], message);
    fails_with(&["lower", "--to", "dist", "--ranks", "2", &file], message);
}

#[test]
fn a_failing_rank_ends_the_job_with_its_message_and_no_output() {
    let d = tmp("fail");
    let lap = root().join("examples/distributed/laplacian.strata").display().to_string();
    // A file too short: rank 0's rows are there, the last rank's are not.
    let short = d.join("short.npy");
    let src = d.join("p.strata");
    std::fs::write(
        &src,
        "program @p(%out: out tensor<f64, I[-1:65], J[-1:65], K[0:8]>, %a: tensor<f64, I[-1:65], J[-1:65], K[0:8]>) {\n  %out <- %a\n}\n",
    )
    .unwrap();
    ok(&strata(&["run", &src.display().to_string(), "--arg", "a=ones", "--out", &format!("out={}", short.display())]));
    let bytes = std::fs::read(&short).unwrap();
    std::fs::write(&short, &bytes[..bytes.len() / 2]).unwrap();
    let out = d.join("out.npy");
    fails_with(
        &[
            "run",
            "--ranks",
            "3",
            &lap,
            "--arg",
            &format!("inp={}", short.display()),
            "--out",
            &format!("out={}", out.display()),
        ],
        "(is the file truncated?)",
    );
    assert!(!out.exists());
    // A missing file: every rank reports it.
    fails_with(
        &["run", "--ranks", "2", &lap, "--arg", "inp=/nonexistent/in.npy", "--out", &format!("out={}", out.display())],
        "error: rank 1: cannot read `/nonexistent/in.npy`",
    );
    // A file of the wrong shape.
    fails_with(
        &["run", "--ranks", "2", &lap, "--arg", &format!("inp={}", d.join("none.npy").display())],
        "cannot read",
    );
    assert!(!out.exists());
    let left: Vec<String> =
        std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|n| !n.contains("strata-tmp")), "{left:?}");
}

#[test]
fn a_run_time_error_on_one_rank_ends_the_job() {
    require_mpi();
    let d = tmp("div");
    let f = d.join("div.strata");
    std::fs::write(
        &f,
        "!T = tensor<i32, I[0:40] block, team = world>\nfunc @f(%a: !T, %b: !T) -> !T {\n  %q = divides(%a, %b) : !T\n  return %q\n}\n",
    )
    .unwrap();
    // random:3 integers are in [0, 10): some rank divides by zero.
    let o = strata(&["run", "--ranks", "2", &f.display().to_string(), "--arg", "a=ones", "--arg", "b=random:3"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("error: rank ") && e.contains("division by zero"), "{e}");
}

/// A program with reductions over the distributed dimension, in integers (so a sum is exact
/// whatever the order): a matrix-vector product keeping the block (local to each rank), a dot
/// product with an initial value (counted once, not once per rank) and a minimum (the identity
/// on ranks but 0 is the type's largest value).
const REDUCTIONS: &str = "\
!V = tensor<i64, I[0:7] block, team = world>
!A = tensor<i64, I[0:7] block, J[0:3], team = world>
!X = tensor<i64, J[0:3], team = world>
!S = tensor<i64, team = world>
func @mac(%acc: i64, %a: i64, %b: i64) -> i64 {
  %p = multiplies(%a, %b) : i64
  %s = plus(%acc, %p) : i64
  return %s
}
func @least(%acc: i64, %a: i64) -> i64 {
  %r = minimum(%a, %acc) : i64
  return %r
}
program @p(%a: !A, %x: !X, %v: !V, %y: out !V, %dot: out !S, %low: out !S, %shifted: out !V) {
  %ax = map_reduce(@mac, %a, %x, init = 0, einsum = \"ij,j->i\") : !V
  %d = map_reduce(@mac, %ax, %v, init = 5, einsum = \"i,i->\") : !S
  %m = map_reduce(@least, %ax, init = 100, einsum = \"i->\") : !S
  %t = minus(%ax, %m) : !V
  %y <- %ax
  %dot <- %d
  %low <- %m
  %shifted <- %t
}
";

#[test]
fn reductions_over_the_distributed_dimension_equal_one_process() {
    require_mpi();
    let d = tmp("reductions");
    let f = d.join("r.strata");
    std::fs::write(&f, REDUCTIONS).unwrap();
    let f = f.display().to_string();
    let args = ["--arg", "a=random:1", "--arg", "x=random:2", "--arg", "v=random:3"];
    let run = |extra: &[&str]| {
        let mut v = vec!["run", f.as_str()];
        v.extend(args);
        v.extend(extra);
        ok(&strata(&v))
    };
    let single = run(&[]);
    assert!(single.contains("dot =") && single.contains("low =") && single.contains("shifted ="), "{single}");
    // 4 ranks: 7 rows split 1, 2, 2, 2; 8 ranks: the first ones hold no rows at all.
    for n in ["1", "2", "3", "4", "8"] {
        assert_eq!(run(&["--ranks", n]), single, "{n} ranks");
    }
    // The stages and their collectives are shown.
    let lowered = ok(&strata(&["lower", "--to", "dist", "--ranks", "2", &f]));
    assert!(lowered.contains("stage 1 of 3") && lowered.contains("`%d`") && lowered.contains("plus"), "{lowered}");
}

#[test]
fn a_reduction_that_cannot_be_split_is_a_clear_error() {
    let d = tmp("nosplit");
    let f = d.join("f.strata");
    std::fs::write(
        &f,
        "!V = tensor<f64, I[0:8] block, team = world>\nfunc @sub(%acc: f64, %a: f64) -> f64 {\n  %r = minus(%acc, %a) : f64\n  return %r\n}\nfunc @f(%v: !V) -> tensor<f64, team = world> {\n  %s = map_reduce(@sub, %v, init = 0.0, einsum = \"i->\") : tensor<f64, team = world>\n  return %s\n}\n",
    )
    .unwrap();
    fails_with(&["run", "--ranks", "2", &f.display().to_string(), "--arg", "v=ones"], "must end in `acc ⊕ term`");
}

/// Neighbor shifts of a distributed source through a distributed table: the table's random
/// entries (in [0, 10)) reach rows the first rank owns from every rank, after a cartesian
/// shift (the rows reached move by one).
const INDIRECT: &str = "\
!S = tensor<i64, V[0:40] block, team = world>
!S1 = tensor<i64, V[-1:39] block, team = world>
!T = tensor<i32, E[0:30] block, NB_V[0:3], team = world>
!E = tensor<i64, E[0:30] block, team = world>
!EN = tensor<i64, E[0:30] block, NB_0[0:3], team = world>
func @add(%acc: !E, %x: !E) -> !E {
  %s = plus(%acc, %x) : !E
  return %s
}
program @p(%s: !S, %t: !T, %y: out !E, %z: out !E) {
  %up = cartesian_shift(%s, dim = V, offset = 1) : !S1
  %a = unstructured_shift(%up, %t, neighbor = 2) : !E
  %n = shift_init(%s, %t) : !EN
  %r = reduce(@add, %n, init = 0) : !E
  %y <- %a
  %z <- %r
}
";

#[test]
fn neighbor_shifts_of_a_distributed_source_equal_one_process() {
    require_mpi();
    let d = tmp("indirect");
    let f = d.join("indirect.strata");
    std::fs::write(&f, INDIRECT).unwrap();
    let file = f.display().to_string();
    let run = |ranks: Option<usize>, out: &str, path: &Path| {
        let mut v = vec!["run".to_string(), file.clone(), "--arg".into(), "s=random:1".into()];
        v.extend(["--arg".into(), "t=random:2".into(), "--out".into(), format!("{out}={}", path.display())]);
        if let Some(n) = ranks {
            v.extend(["--ranks".into(), n.to_string()]);
        }
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        ok(&strata(&refs));
        std::fs::read(path).unwrap()
    };
    for out in ["y", "z"] {
        let single = run(None, out, &d.join(format!("{out}.npy")));
        for n in 1..=4 {
            let got = run(Some(n), out, &d.join(format!("{out}{n}.npy")));
            assert!(got == single, "`{out}` on {n} ranks differs from the single-process run");
        }
    }
    let lowered = ok(&strata(&["lower", "--to", "dist", "--ranks", "2", &file]));
    assert!(lowered.contains("`%a` in `@p` reads `V` rows through the table %t"), "{lowered}");
    assert!(lowered.contains("fetched at run time"), "{lowered}");
}

#[test]
fn a_bad_table_entry_on_one_rank_ends_the_job() {
    require_mpi();
    let d = tmp("badtable");
    let f = d.join("bad.strata");
    // The source starts at 2: the random entries 0 and 1 are outside it.
    std::fs::write(&f, INDIRECT.replace("V[0:40]", "V[2:40]").replace("V[-1:39]", "V[1:39]")).unwrap();
    let out = d.join("y.npy");
    let o = strata(&[
        "run",
        "--ranks",
        "3",
        &f.display().to_string(),
        "--arg",
        "s=random:1",
        "--arg",
        "t=random:2",
        "--out",
        &format!("y={}", out.display()),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("error: rank ") && e.contains("neighbor table entry"), "{e}");
    assert!(!out.exists(), "no output is left");
}

#[test]
fn tuple_inputs_and_outputs_equal_one_process() {
    require_mpi();
    let d = tmp("tuples");
    let make = d.join("make.strata");
    std::fs::write(
        &make,
        "func @main(%x: tensor<f64, I[-1:11]>, %y: tensor<f64, I[-1:11]>) -> tensor<(f64, f64), I[-1:11]> {\n  \
         %t = make_tuple(%x, %y) : tensor<(f64, f64), I[-1:11]>\n  return %t\n}\n",
    )
    .unwrap();
    let pairs = d.join("pairs.npz").display().to_string();
    ok(&strata(&[
        "run",
        &make.display().to_string(),
        "--arg",
        "x=random:1",
        "--arg",
        "y=random:2",
        "--out",
        &format!("result={pairs}"),
    ]));
    // A tuple input partitioned by rows (its halo exchanged field by field), a tuple result
    // gathered into one `.npz`.
    let prog = d.join("tuples.strata");
    std::fs::write(
        &prog,
        "!P = tensor<(f64, f64), I[-1:11] block, team = world>\n\
         !T = tensor<(f64, f64), I[-1:10] block, team = world>\n\
         func @main(%p: !P) -> !T {\n  \
         %a = cartesian_shift(%p, dim = I, offset = 1) : tensor<(f64, f64), I[-2:10] block, team = world>\n  \
         %x = tuple_get(%a, index = 0) : tensor<f64, I[-2:10] block, team = world>\n  \
         %y = tuple_get(%p, index = 1) : tensor<f64, I[-1:11] block, team = world>\n  \
         %s = plus(%x, %y) : tensor<f64, I[-1:10] block, team = world>\n  \
         %t = make_tuple(%s, %x) : !T\n  return %t\n}\n",
    )
    .unwrap();
    let prog = prog.display().to_string();
    let run = |extra: &[&str], out: &Path| {
        let mut v = vec!["run", prog.as_str(), "--arg"];
        let p = format!("p={pairs}");
        v.push(&p);
        v.extend_from_slice(extra);
        let o = format!("result={}", out.display());
        v.extend_from_slice(&["--out", &o]);
        ok(&strata(&v));
        std::fs::read(out).unwrap()
    };
    let single = run(&[], &d.join("single.npz"));
    for n in ["1", "2", "3", "4"] {
        assert!(run(&["--ranks", n], &d.join(format!("r{n}.npz"))) == single, "{n} ranks differ from one process");
    }
}

/// Assignments to regions of a distributed output (`%out[I[1:19], J[1:5]] <- …`, as GT4Py's
/// domains lower): each rank writes its rows of each region (none where a region misses them),
/// later assignments over earlier ones; equal to one process at 1–4 ranks.
#[test]
fn assignments_to_regions_of_a_distributed_output_equal_one_process() {
    require_mpi();
    let d = tmp("regions");
    let prog = d.join("regions.strata");
    std::fs::write(
        &prog,
        "!U = tensor<f64, I[0:20] block, J[0:6], team = world>\n\
         program @main(%out: out !U, %u: !U) {\n  \
         %ip = cartesian_shift(%u, dim = I, offset = 1) : tensor<f64, I[-1:19] block, J[0:6], team = world>\n  \
         %im = cartesian_shift(%u, dim = I, offset = -1) : tensor<f64, I[1:21] block, J[0:6], team = world>\n  \
         %s = plus(%ip, %im) : tensor<f64, I[1:19] block, J[0:6], team = world>\n  \
         %v = subset(%s, domain = [I[1:19], J[1:5]]) : tensor<f64, I[1:19] block, J[1:5], team = world>\n  \
         %w = subset(%u, domain = [I[0:2], J[0:6]]) : tensor<f64, I[0:2] block, J[0:6], team = world>\n  \
         %out[I[0:2], J[0:6]] <- %w\n  \
         %out[I[1:19], J[1:5]] <- %v\n}\n",
    )
    .unwrap();
    let prog = prog.display().to_string();
    let run = |extra: &[&str], out: &Path| {
        let o = format!("out={}", out.display());
        let mut v = vec!["run", prog.as_str(), "--arg", "u=random:3", "--out", &o];
        v.extend_from_slice(extra);
        ok(&strata(&v));
        std::fs::read(out).unwrap()
    };
    let single = run(&[], &d.join("single.npy"));
    for n in ["1", "2", "3", "4"] {
        assert!(run(&["--ranks", n], &d.join(format!("r{n}.npy"))) == single, "{n} ranks differ from one process");
    }
}

/// Each rank's peak memory stays near its share of the data: a stencil over 67 MB in and out,
/// its input from `random:`, `zeros` or a file made or read for the rank's rows only, its
/// output written from the block — peak ≤ 1.2 × (input + output) / P + a fixed 40 MB, at 2
/// and 4 ranks (`--timings` reports the largest `VmHWM` over the ranks).
#[test]
fn each_rank_holds_its_share_of_inputs_and_outputs() {
    require_mpi();
    let d = tmp("memory");
    let prog = d.join("lap.strata");
    let text = std::fs::read_to_string(root().join("examples/distributed/laplacian.strata")).unwrap();
    let text = text.replace("65]", "1025]").replace("64]", "1024]").replace("66]", "1026]");
    std::fs::write(&prog, text).unwrap();
    let prog = prog.display().to_string();
    let bytes = |n: f64| n * n * 8.0 * 8.0;
    let data = bytes(1026.0) + bytes(1024.0);
    for source in ["random:1", "zeros"] {
        for ranks in ["2", "4"] {
            let t = d.join(format!("t{ranks}.json"));
            let out = format!("out={}", d.join("out.npy").display());
            let timings = t.display().to_string();
            let arg = format!("inp={source}");
            ok(&strata(&["run", "--ranks", ranks, &prog, "--arg", &arg, "--out", &out, "--timings", &timings]));
            let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
            let peak = report["peak_rss_bytes"].as_f64().unwrap();
            let share = data / ranks.parse::<f64>().unwrap();
            let bound = 1.2 * share + 40e6;
            assert!(peak > 0.5 * share && peak <= bound, "{source} at {ranks} ranks: peak {peak} B, bound {bound} B");
        }
    }
}

/// A sparse matrix and a ragged tensor distributed by rows: each rank reads its rows of the
/// `.npz` (CSR at offsets), computes on them as storage, and sparse and ragged results are
/// gathered on rank 0 as storage and written as one `.npz` — byte for byte the single-process
/// files at 1–4 ranks (8 ranks leave some without rows). The inputs are made by Strata itself
/// (a thresholded random matrix stored as CSR: some rows empty), in one process and on ranks.
#[test]
fn sparse_and_ragged_rows_equal_one_process() {
    require_mpi();
    let d = tmp("stored-rows");
    let make = d.join("make.strata");
    std::fs::write(
        &make,
        "!D = tensor<f64, I[0:13] block, J[0:7], team = world>\n\
         !S = tensor<f64, team = world>\n\
         func @mk(%x: !D) -> tensor<f64, I[0:13] block, J[0:7] compressed, team = world> {\n  \
         %h = constant(value = 0.7) : !S\n  %z = constant(value = 0.0) : !S\n  \
         %c = greater(%x, %h) : tensor<bool, I[0:13] block, J[0:7], team = world>\n  \
         %s = select(%c, %x, %z) : !D\n  \
         %t = convert(%s, mode = copy) : tensor<f64, I[0:13] block, J[0:7] compressed, team = world>\n  return %t\n}\n\
         func @jag(%x: tensor<f32, I[0:13], J[0:5]>) -> tensor<f32, I[0:13], J[0:5] ragged> {\n  \
         %t = convert(%x, mode = copy) : tensor<f32, I[0:13], J[0:5] ragged>\n  return %t\n}\n",
    )
    .unwrap();
    let (make, a, j) = (make.display().to_string(), d.join("a.npz"), d.join("j.npz"));
    ok(&strata(&["run", &make, "--entry", "mk", "--arg", "x=random:4", "--out", &format!("result={}", a.display())]));
    ok(&strata(&["run", &make, "--entry", "jag", "--arg", "x=random:5", "--out", &format!("result={}", j.display())]));
    // Made on ranks (team constants and a storage conversion, rank by rank): the same file.
    for n in ["2", "3"] {
        let again = d.join(format!("a{n}.npz"));
        let out = format!("result={}", again.display());
        ok(&strata(&["run", "--ranks", n, &make, "--entry", "mk", "--arg", "x=random:4", "--out", &out]));
        assert!(std::fs::read(&again).unwrap() == std::fs::read(&a).unwrap(), "made on {n} ranks");
    }
    let prog = d.join("p.strata");
    std::fs::write(
        &prog,
        "!A = tensor<f64, I[0:13] block, J[0:7] compressed, team = world>\n\
         !R = tensor<f32, I[0:13] block, J[0:5] ragged, team = world>\n\
         !V = tensor<f64, I[0:13] block, team = world>\n\
         func @mac(%acc: f64, %a: f64, %x: f64) -> f64 {\n  %p = multiplies(%a, %x) : f64\n  \
         %s = plus(%acc, %p) : f64\n  return %s\n}\n\
         program @p(%a: !A, %j: !R, %x: tensor<f64, J[0:7], team = world>, %y: out !V, %sq: out !A, %jj: out !R) {\n  \
         %ax = map_reduce(@mac, %a, %x, init = 0.0, einsum = \"ij,j->i\") : !V\n  \
         %s = multiplies(%a, %a) : !A\n  %t = plus(%j, %j) : !R\n  \
         %y <- %ax\n  %sq <- %s\n  %jj <- %t\n}\n",
    )
    .unwrap();
    let prog = prog.display().to_string();
    let (a, j) = (format!("a={}", a.display()), format!("j={}", j.display()));
    let run = |extra: &[&str], tag: &str| {
        let outs: Vec<String> =
            ["y.npy", "sq.npz", "jj.npz"].iter().map(|f| d.join(format!("{tag}_{f}")).display().to_string()).collect();
        let mut v = vec!["run", prog.as_str(), "--arg", &a, "--arg", &j, "--arg", "x=random:6"];
        let o: Vec<String> = ["y", "sq", "jj"].iter().zip(&outs).map(|(n, p)| format!("{n}={p}")).collect();
        for o in &o {
            v.extend_from_slice(&["--out", o]);
        }
        v.extend_from_slice(extra);
        ok(&strata(&v));
        outs.iter().map(|p| std::fs::read(p).unwrap()).collect::<Vec<_>>()
    };
    let single = run(&[], "single");
    for n in ["1", "2", "3", "4", "8"] {
        assert!(run(&["--ranks", n], &format!("r{n}")) == single, "{n} ranks differ from one process");
    }
    // `strata lower --to dist` says how the sparse and ragged values are held and written.
    let lowered = ok(&strata(&["lower", "--to", "dist", "--ranks", "2", &prog]));
    assert!(lowered.contains("each rank reads only its rows of the .npz"), "{lowered}");
    assert!(lowered.contains("stored entries gathered on rank 0"), "{lowered}");
    // A shift along the rows reaching other ranks' rows of the sparse matrix is refused at
    // planning; a file of another shape names both shapes.
    let shifted = d.join("shift.strata");
    std::fs::write(
        &shifted,
        "!A = tensor<f64, I[0:13] block, J[0:7] compressed, team = world>\n\
         func @f(%a: !A) -> tensor<f64, I[0:12] block, J[0:7], team = world> {\n  \
         %s = cartesian_shift(%a, dim = I, offset = 1) : tensor<f64, I[-1:12] block, J[0:7] compressed, team = world>\n  \
         %d = convert(%a, mode = copy) : tensor<f64, I[0:13] block, J[0:7], team = world>\n  \
         %e = convert(%s, mode = copy) : tensor<f64, I[-1:12] block, J[0:7], team = world>\n  \
         %r = plus(%d, %e) : tensor<f64, I[0:12] block, J[0:7], team = world>\n  return %r\n}\n",
    )
    .unwrap();
    let shifted = shifted.display().to_string();
    fails_with(&["run", "--ranks", "2", &shifted, "--arg", &a], "each rank holds exactly its own rows");
    let wide = prog.replace("p.strata", "wide.strata");
    std::fs::write(&wide, std::fs::read_to_string(&prog).unwrap().replace("J[0:7]", "J[0:8]")).unwrap();
    fails_with(
        &["run", "--ranks", "3", &wide, "--arg", &a, "--arg", &j, "--arg", "x=ones"],
        "holds a csr matrix of shape [13, 7], but the program expects shape [13, 8]",
    );
}

/// A concat along a positional block level renumbers rows (not planned yet): a named error.
#[test]
fn a_positional_concat_over_blocks_is_a_clear_error() {
    let d = tmp("positional-concat");
    let f = d.join("f.strata");
    std::fs::write(
        &f,
        "!A = tensor<f64, _0[0:10] block, team = world>\n!B = tensor<f64, _0[0:5] block, team = world>\n\
         func @f(%a: !A, %b: !B) -> tensor<f64, _0[0:15] block, team = world> {\n  \
         %c = concat(%a, %b, dim = _0) : tensor<f64, _0[0:15] block, team = world>\n  return %c\n}\n",
    )
    .unwrap();
    let f = f.display().to_string();
    fails_with(&["run", "--ranks", "2", &f, "--arg", "a=ones", "--arg", "b=zeros"], "along a positional block level");
}

/// Writes an `int64` index array of `rows` × 1 as `.npy` (gather indices).
fn write_indices(path: &Path, entries: &[i64]) {
    write_i64(path, 1, entries);
}

/// The type of an `int64` array of `entries` values in rows of `cols`.
fn i64_type(cols: usize, entries: usize) -> strata_runtime::ValueType {
    use strata_ir::{DimName, Interval, Level};
    strata_runtime::ValueType {
        levels: vec![
            Level::dense(DimName::positional(0), Interval::from_len((entries / cols) as u64)),
            Level::dense(DimName::positional(1), Interval::from_len(cols as u64)),
        ],
        placement: strata_ir::Placement::HOST,
        element: strata_runtime::ElemType::Scalar(strata_ir::Scalar::I64),
        is_tensor: true,
    }
}

/// Writes `entries` as an `int64` array in rows of `cols` (`.npy`).
fn write_i64(path: &Path, cols: usize, entries: &[i64]) {
    use strata_runtime::{Column, Data, Tensor};
    let ty = i64_type(cols, entries.len());
    let t = Tensor { ty, data: Data::Scalars(Column::I64(entries.to_vec())), present: None };
    strata_runtime::npy::write_value(path, "indices", &t).unwrap();
}

/// Reads an `int64` array of `entries` values in rows of `cols` (`.npy`).
fn read_i64(path: &Path, cols: usize, entries: usize) -> Vec<i64> {
    let t = strata_runtime::npy::read_value(path, "result", &i64_type(cols, entries)).unwrap();
    let strata_runtime::Data::Scalars(strata_runtime::Column::I64(v)) = t.data else { panic!("int64 values") };
    v
}

/// Gathers over distributed operands at 1–4 ranks, byte for byte the single-process run:
/// the source distributed along the indexed dimension (indices replicated, or distributed
/// with a shift of the result after it), along a sliced one, and a replicated source with
/// distributed indices. Indices reaching both ends of the interval (coordinate -1 included).
/// An index outside the interval ends the job with the rank's message; indices computed in
/// the program are a named planning error.
#[test]
fn gathers_over_distributed_operands_equal_one_process() {
    require_mpi();
    let d = tmp("gather");
    let x = "!X = tensor<f64, I[-1:39] block, J[0:3], team = world>\n";
    let cases = [
        (
            "replicated_indices",
            format!(
                "{x}func @f(%x: !X, %idx: tensor<index, B[0:6], C[0:1], team = world>) -> tensor<f64, B[0:6], J[0:3], team = world> {{\n  \
                 %g = gather(%x, %idx, coordinates = [0]) : tensor<f64, B[0:6], J[0:3], team = world>\n  return %g\n}}\n"
            ),
            vec![3, 38, -1, 17, 17, 25],
        ),
        (
            // Issue 49's D1 (sharpy's strided slice `a[34:82:2]`): a positional source whose rows
            // a rank reads beyond its block (it was still cut to its owned rows).
            "replicated_indices_positional",
            "func @f(%x: tensor<f64, _0[0:110] block, team = world>, %idx: tensor<i64, _0[0:26], _1[0:1], team = world>) \
             -> tensor<f64, _0[0:26], team = world> {\n  \
             %g = gather(%x, %idx, coordinates = [0]) : tensor<f64, _0[0:26], team = world>\n  return %g\n}\n"
                .to_string(),
            (34..82).step_by(2).chain([0, 109]).collect(),
        ),
        (
            "distributed_indices",
            std::fs::read_to_string(root().join("examples/distributed/gather_rows.strata")).unwrap(),
            vec![-1, 38, 0, 17, 17, 25, 3, -1, 9, 30, 2],
        ),
        (
            "sliced",
            "func @f(%x: tensor<f64, J[0:5], I[0:40] block, team = world>, %idx: tensor<index, B[0:4], C[0:1], team = world>) \
             -> tensor<f64, B[0:4], I[0:40] block, team = world> {\n  \
             %g = gather(%x, %idx, coordinates = [0]) : tensor<f64, B[0:4], I[0:40] block, team = world>\n  return %g\n}\n"
                .to_string(),
            vec![4, 0, 2, 2],
        ),
        (
            "replicated_source",
            "func @f(%x: tensor<f64, I[0:40], J[0:3], team = world>, %idx: tensor<index, B[0:11] block, C[0:1], team = world>) \
             -> tensor<f64, B[0:11] block, J[0:3], team = world> {\n  \
             %g = gather(%x, %idx, coordinates = [0]) : tensor<f64, B[0:11] block, J[0:3], team = world>\n  return %g\n}\n"
                .to_string(),
            vec![5, 38, 0, 17, 17, 25, 3, 39, 9, 30, 2],
        ),
    ];
    for (name, text, entries) in &cases {
        let prog = d.join(format!("{name}.strata"));
        std::fs::write(&prog, text).unwrap();
        let idx = d.join(format!("{name}_idx.npy"));
        write_indices(&idx, entries);
        let (prog, idx) = (prog.display().to_string(), format!("idx={}", idx.display()));
        let run = |extra: &[&str], out: &Path| {
            let o = format!("result={}", out.display());
            let mut v = vec!["run", prog.as_str(), "--arg", "x=random:3", "--arg", idx.as_str(), "--out", o.as_str()];
            v.extend_from_slice(extra);
            ok(&strata(&v));
            std::fs::read(out).unwrap()
        };
        let single = run(&[], &d.join(format!("{name}_single.npy")));
        for n in ["1", "2", "3", "4"] {
            assert!(run(&["--ranks", n], &d.join(format!("{name}_r{n}.npy"))) == single, "{name} on {n} ranks");
        }
    }
    // Out of the interval: the rank that reads it says so.
    let prog = d.join("replicated_indices.strata").display().to_string();
    let bad = d.join("bad_idx.npy");
    write_indices(&bad, &[3, 39, 0, 1, 2, 4]);
    let bad = format!("idx={}", bad.display());
    fails_with(&["run", "--ranks", "3", &prog, "--arg", "x=random:3", "--arg", &bad], "outside");
    // Indices computed in the program: not known before the run.
    let computed = d.join("computed.strata");
    std::fs::write(
        &computed,
        format!(
            "{x}func @f(%x: !X, %idx: tensor<index, B[0:6], C[0:1], team = world>) -> tensor<f64, B[0:6], J[0:3], team = world> {{\n  \
             %i = plus(%idx, %idx) : tensor<index, B[0:6], C[0:1], team = world>\n  \
             %g = gather(%x, %i, coordinates = [0]) : tensor<f64, B[0:6], J[0:3], team = world>\n  return %g\n}}\n"
        ),
    )
    .unwrap();
    let idx = d.join("replicated_indices_idx.npy");
    fails_with(
        &[
            "run",
            "--ranks",
            "2",
            &computed.display().to_string(),
            "--arg",
            "x=ones",
            "--arg",
            &format!("idx={}", idx.display()),
        ],
        "the indices of a gather from a distributed source must be a parameter",
    );
}

/// The pid of rank `rank` of the job whose launcher was started with `STRATA_TEST_MARK=mark`
/// (the ranks inherit the launcher's environment through `mpirun`).
fn rank_pid(mark: &str, rank: usize) -> Option<i32> {
    let want_mark = format!("STRATA_TEST_MARK={mark}");
    let want_rank = format!("OMPI_COMM_WORLD_RANK={rank}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let env = std::fs::read(e.path().join("environ")).ok()?;
        let vars: Vec<&[u8]> = env.split(|&b| b == 0).collect();
        (vars.contains(&want_mark.as_bytes()) && vars.contains(&want_rank.as_bytes())).then_some(pid)
    })
}

/// Starts `strata run --ranks 2 ARGS`, waits until `ready()` holds (polling), SIGKILLs rank 1
/// (what the out-of-memory killer does), and returns the job's output and the seconds from
/// the kill to its end.
fn kill_rank_1_when(args: &[String], ready: impl Fn() -> bool) -> (Output, f64) {
    let mark = format!("kill-{}-{}", std::process::id(), args.len());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["run", "--ranks", "2"])
        .args(args)
        .env("STRATA_TEST_MARK", &mark)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("strata starts");
    let start = std::time::Instant::now();
    let pid = loop {
        if let (true, Some(pid)) = (ready(), rank_pid(&mark, 1)) {
            break pid;
        }
        assert!(start.elapsed().as_secs() < 120, "the job never got ready");
        std::thread::sleep(std::time::Duration::from_micros(500));
    };
    // SAFETY: kill has no memory-safety preconditions; `pid` is the job's rank 1.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let killed = std::time::Instant::now();
    let o = child.wait_with_output().expect("the job ends");
    (o, killed.elapsed().as_secs_f64())
}

#[test]
fn a_killed_rank_ends_the_job_naming_itself_and_leaves_no_files() {
    require_mpi();
    let d = tmp("killed");
    let out = d.join("out.npy");
    // While ranks compute (a long repeat): the job ends within seconds, saying which rank died
    // and of what, and writes nothing.
    let lap = root().join("examples/distributed/laplacian.strata").display().to_string();
    let args: Vec<String> = vec![
        lap,
        "--arg".into(),
        "inp=random:1".into(),
        "--repeat".into(),
        "100000000".into(),
        "--out".into(),
        format!("out={}", out.display()),
    ];
    let begun = std::time::Instant::now();
    let (o, after) = kill_rank_1_when(&args, || begun.elapsed().as_millis() > 1500);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("error: rank 1 was killed by signal 9 (Killed): SIGKILL, which the kernel's out-of-memory killer"),
        "{e}"
    );
    assert!(!e.contains("mpirun noticed"), "Open MPI's notice is not repeated: {e}");
    assert!(after < 20.0, "the job took {after:.1} s to end after the kill");
    // While ranks write their blocks of a large output into the hidden temporary: it goes too.
    let prog = d.join("copy.strata");
    std::fs::write(
        &prog,
        "!T = tensor<f64, I[0:20000000] block, team = world>\nprogram @p(%out: out !T, %a: !T) {\n  %out <- %a\n}\n",
    )
    .unwrap();
    let args = vec![
        prog.display().to_string(),
        "--arg".into(),
        "a=ones".into(),
        "--out".into(),
        format!("out={}", out.display()),
    ];
    let temporary =
        || std::fs::read_dir(&d).unwrap().flatten().any(|e| e.file_name().to_string_lossy().contains("strata-tmp"));
    // (A loaded machine may finish the write between seeing the temporary and the kill: then
    // the job succeeded, and it is tried again.)
    let mut o = kill_rank_1_when(&args, temporary).0;
    for _ in 0..3 {
        if o.status.code() != Some(0) {
            break;
        }
        std::fs::remove_file(&out).unwrap();
        o = kill_rank_1_when(&args, temporary).0;
    }
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("error: rank 1 was killed by signal 9"), "{e}");
    let left: Vec<String> =
        std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec!["copy.strata".to_string()], "nothing but the program is left");
}

#[test]
fn messages_in_pieces_give_the_same_results() {
    // MPI counts are C ints: the layer sends larger buffers in pieces (1 GiB). With pieces of 7
    // bytes every path that splits (halo and fetch exchanges, gathers, broadcasts, all-reduces,
    // all-to-all) runs on small data: each run equals its single-process run bit for bit.
    require_mpi();
    let d = tmp("pieces");
    let idx = d.join("idx.npy");
    write_indices(&idx, &[-1, 38, 0, 17, 17, 25, 3, -1, 9, 30, 2]);
    let idx = format!("idx={}", idx.display());
    let cases: [(&str, Vec<&str>, &str); 4] = [
        ("distributed/laplacian.strata", vec!["inp=random:1"], "out"),
        ("distributed/prefix_sum.strata", vec!["x=random:1"], "running"),
        ("distributed/statistics.strata", vec!["x=random:3"], "scaled"),
        ("distributed/gather_rows.strata", vec!["x=random:3", idx.as_str()], "result"),
    ];
    for (example, args, out) in cases {
        let file = root().join("examples").join(example).display().to_string();
        let mut base: Vec<String> = vec!["run".into(), file];
        for a in args {
            base.extend(["--arg".into(), a.into()]);
        }
        let run = |ranks: Option<&str>, path: &Path| {
            let mut v = base.clone();
            if let Some(n) = ranks {
                v.extend(["--ranks".into(), n.into()]);
            }
            v.extend(["--out".into(), format!("{out}={}", path.display())]);
            let o = strata_with(&v, &[("STRATA_MPI_CHUNK_BYTES", "7")]);
            ok(&o);
            std::fs::read(path).unwrap()
        };
        let single = run(None, &d.join("single.npy"));
        assert!(run(Some("3"), &d.join("three.npy")) == single, "{example} in 7-byte pieces on 3 ranks differs");
    }
}

#[test]
fn timings_report_the_slowest_rank() {
    // A step of a job takes as long as its slowest rank: `--timings` gives every rank's
    // largest median exchange and run next to rank 0's own.
    require_mpi();
    let d = tmp("timings");
    let t = d.join("t.json");
    let lap = root().join("examples/distributed/laplacian.strata").display().to_string();
    let timings = t.display().to_string();
    ok(&strata(&["run", "--ranks", "2", &lap, "--arg", "inp=random:1", "--repeat", "5", "--timings", &timings]));
    let text = std::fs::read_to_string(&t).unwrap();
    let field = |name: &str| -> f64 {
        let at = text.find(&format!("\"{name}\":")).unwrap_or_else(|| panic!("no `{name}` in {text}"));
        let rest = &text[at + name.len() + 3..];
        rest[..rest.find([',', '}']).unwrap()].parse().unwrap()
    };
    assert!(field("slowest_exchange_s") >= field("exchange_s"), "{text}");
    assert!(field("slowest_run_s") >= field("run_s"), "{text}");
    let step = field("slowest_step_s");
    assert!(
        step >= field("slowest_exchange_s") && step <= field("slowest_exchange_s") + field("slowest_run_s") + 1e-12,
        "{text}"
    );
}
