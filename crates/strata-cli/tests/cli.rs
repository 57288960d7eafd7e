//! The `strata` binary as users and scripts run it: exit statuses, output, and that `fmt`
//! never damages a file.

#[path = "scratch/mod.rs"]
mod scratch;
use scratch::{scratch, Scratch};

use std::path::{Path, PathBuf};
use std::process::Command;

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmpdir(name: &str) -> Scratch {
    scratch(&format!("cli-{name}"))
}

#[test]
fn check_accepts_the_examples() {
    let ex = workspace().join("examples/stencil/laplacian.strata");
    let out = strata().arg("check").arg(&ex).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("laplacian.strata: ok"));
}

#[test]
fn check_and_fmt_accept_folders() {
    let ex = workspace().join("examples");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&ex).unwrap().flatten().map(|e| e.path()).collect();
    let out = strata().arg("check").args(&dirs).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().filter(|l| l.ends_with(": ok")).count() >= 15, "{stdout}");
    let out = strata().args(["fmt", "--check"]).args(&dirs).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn check_reports_with_location_and_exit_1() {
    let d = tmpdir("check");
    let f = d.join("bad.strata");
    std::fs::write(&f, "func @f(%a: f64) -> f64 {\n  %b = plus(%a, %zz) : f64\n  return %b\n}\n").unwrap();
    let out = strata().arg("check").arg(&f).env("NO_COLOR", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.strata:2:17: error: no value named `%zz`"), "{err}");
    assert!(err.contains("strata::parse::unknown_value"), "{err}");
}

#[test]
fn check_reports_unreadable_files_with_exit_2() {
    let out = strata().args(["check", "/nonexistent/x.strata"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read `/nonexistent/x.strata`"));
    let d = tmpdir("binary");
    let f = d.join("bin.strata");
    std::fs::write(&f, [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let out = strata().arg("check").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not UTF-8 text"));
}

#[test]
fn fmt_rewrites_to_canonical_form_and_keeps_comments() {
    let d = tmpdir("fmt");
    let f = d.join("x.strata");
    let messy = "// header\nfunc @f(%a: f64)->f64{ // why\n  %b = plus( %a,%a ) :f64   // double\n\n  return %b\n  // done\n}\n";
    std::fs::write(&f, messy).unwrap();
    let check = strata().args(["fmt", "--check"]).arg(&f).output().unwrap();
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), messy, "--check must not write");
    let out = strata().arg("fmt").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let formatted = std::fs::read_to_string(&f).unwrap();
    assert_eq!(
        formatted,
        "// header\nfunc @f(%a: f64) -> f64 {  // why\n  %b = plus(%a, %a) : f64  // double\n\n  return %b\n  // done\n}\n"
    );
    let again = strata().args(["fmt", "--check"]).arg(&f).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "fmt is idempotent");
    let leftovers: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().filter(|e| e.file_name() != "x.strata").collect();
    assert!(leftovers.is_empty(), "temporary files left behind");
}

#[test]
fn fmt_leaves_files_with_syntax_errors_untouched() {
    let d = tmpdir("fmt-bad");
    let f = d.join("x.strata");
    let broken = "func @f(%a: f64) -> f64 {\n  %b = plus(%a %a) : f64\n  return %b\n}\n";
    std::fs::write(&f, broken).unwrap();
    let out = strata().arg("fmt").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), broken);
}

#[test]
fn help_shows_examples() {
    let out = strata().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("check") && text.contains("fmt") && text.contains("Examples:"), "{text}");
}

/// Statement types the verifier infers may be left out: `strata check` and `strata run` accept
/// the short form, `strata fmt` keeps it, `strata fmt --types` writes every type (the fully
/// typed canonical form), and both forms compute the same values as the typed example.
#[test]
fn inferred_types_are_kept_out_by_fmt_and_written_by_fmt_types() {
    let d = tmpdir("inferred");
    let short = workspace().join("tests/filetests/verify/types-inferred.strata");
    let text = std::fs::read_to_string(&short).unwrap();
    let f = d.join("lap.strata");
    std::fs::write(&f, &text).unwrap();
    let run = |file: &Path, entry: &str| {
        let o = strata().args(["run"]).arg(file).args(["--entry", entry, "--arg", "inp=random:3"]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // The example's program writes the same values as `out` (its `@lap` is generic, no entry).
    let typed =
        run(&workspace().join("examples/stencil/laplacian.strata"), "laplacian").replacen("out =", "result =", 1);
    assert_eq!(run(&f, "lap"), typed);
    let o = strata().args(["fmt", "--check"]).arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = strata().args(["fmt", "--types"]).arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = std::fs::read_to_string(&f).unwrap();
    assert!(full.contains("%ip = cartesian_shift(%inp, dim = I, offset = 1) : tensor<f64, I[-2:5], J[-1:8], K[0:9]>"));
    let statements = full.lines().filter(|l| l.trim_start().starts_with('%') && l.contains(" = "));
    assert!(statements.clone().count() > 10 && statements.into_iter().all(|l| l.contains(") : ")), "{full}");
    assert_eq!(run(&f, "lap"), typed);
}

#[test]
fn outputs_are_checked_before_running_and_written_all_or_none() {
    // Issue 31: a folder, a misspelled name or two results into one file is found before the
    // run, and nothing the user had is touched.
    let d = tmpdir("outs");
    let divmod = workspace().join("examples/structured/divmod.strata");
    let keep = d.join("A.npy");
    std::fs::write(&keep, "the user's file").unwrap();
    std::fs::create_dir(d.join("folder")).unwrap();
    let run = |outs: &[String]| {
        let mut c = strata();
        c.arg("run").arg(&divmod).args(["--arg", "a=random:1", "--arg", "b=random:2"]);
        for o in outs {
            c.args(["--out", o]);
        }
        c.output().unwrap()
    };
    let at = |name: &str| d.join(name).display().to_string();
    let cases = [
        (vec![format!("result.0={}", at("A.npy")), format!("result.1={}", at("folder"))], "is a folder"),
        (vec![format!("result.0={}", at("A.npy")), format!("reslt.1={}", at("B.npy"))], "no result named `reslt.1`"),
        (vec![format!("result.0={}", at("F.npy")), format!("result.1={}/./F.npy", d.display())], "name the same file"),
        (vec![format!("result.0={}", at("A.npy")), format!("result.1={}", at("missing/B.npy"))], "does not exist"),
    ];
    for (outs, why) in cases {
        let out = run(&outs);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{outs:?}: {err}");
        assert!(err.contains(why), "{outs:?}: {err}");
        assert_eq!(std::fs::read_to_string(&keep).unwrap(), "the user's file", "{outs:?}");
        assert!(!d.join("F.npy").exists());
    }
    // No temporaries are left behind, and a good run writes both.
    let out = run(&[format!("result.0={}", at("A.npy")), format!("result.1={}", at("B.npy"))]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<String> =
        std::fs::read_dir(&d).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.contains("strata-")), "{names:?}");
    assert!(std::fs::read(&keep).unwrap().starts_with(b"\x93NUMPY"));
}

#[cfg(unix)]
#[test]
fn fmt_writes_through_a_symbolic_link() {
    let d = tmpdir("fmt-link");
    let real = d.join("real.strata");
    std::fs::write(&real, "func @f(%x: f64) -> f64 {\n    return %x\n}\n").unwrap();
    let link = d.join("link.strata");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = strata().arg("fmt").arg(&link).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "func @f(%x: f64) -> f64 {\n  return %x\n}\n");
}

#[test]
fn a_damaged_cached_kernel_is_built_again() {
    // Issue 31: the cache checks each object's length and hash (once per process) instead of
    // trusting any file that exists; a truncated one was SIGBUS on every later run.
    let cache = tmpdir("cache-damaged");
    let divmod = workspace().join("examples/structured/divmod.strata");
    let run = || {
        strata()
            .env("STRATA_CACHE_DIR", &cache)
            .arg("run")
            .arg(&divmod)
            .args(["--arg", "a=random:1", "--arg", "b=random:2", "--backend", "native"])
            .output()
            .unwrap()
    };
    let first = run();
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let objects: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "so"))
        .collect();
    assert!(!objects.is_empty());
    for so in &objects {
        let f = std::fs::OpenOptions::new().write(true).open(so).unwrap();
        f.set_len(1000).unwrap();
    }
    let again = run();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(first.stdout, again.stdout);
    assert!(objects.iter().all(|so| std::fs::metadata(so).unwrap().len() > 1000));
}

#[test]
fn lower_lists_its_passes_and_prints_the_kernels_after_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = |args: &[&str]| std::process::Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().unwrap();
    let o = run(&["lower", "--passes"]);
    assert_eq!(o.status.code(), Some(0));
    let list = String::from_utf8_lossy(&o.stdout).to_string();
    let names: Vec<&str> = list.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(names.first(), Some(&"lower"));
    for pass in ["simplify", "fuse-adjacent", "recognize-matmul", "coiterate", "stage-windows", "schedule"] {
        assert!(names.contains(&pass), "{list}");
    }
    // The schedule is decided last, then refined: long sums on a GPU, rows summed in vector
    // lanes on a CPU.
    assert_eq!(names[names.len() - 3..], ["schedule", "gpu-sums", "jam-rows"], "{list}");
    // The laplacian of laplacian: inlined after lowering, its inner laplacian staged into a
    // rolling window, then scheduled (the last pass).
    let file = root.join("bench/workloads/laplap.strata").display().to_string();
    let after = |name: &str| String::from_utf8_lossy(&run(&["lower", "--print-after", name, &file]).stdout).to_string();
    let lowered = after("lower");
    assert!(lowered.starts_with("// loop kernels of @") && !lowered.contains("staged"), "{lowered}");
    let staged = after("stage-windows");
    assert!(staged.contains("staged") && !staged.contains("schedule:"), "{staged}");
    let scheduled = after("schedule");
    // (Whether the stores stream as well depends on this machine's cache size.)
    assert!(scheduled.contains("  schedule: parallel"), "{scheduled}");
    let final_form = String::from_utf8_lossy(&run(&["lower", &file]).stdout).to_string();
    assert_eq!(scheduled, final_form, "the last pass's output is what `lower` prints");
    let o = run(&["lower", "--print-after", "no-such-pass", &file]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no pass named `no-such-pass`"));
}

/// `strata lower --passes` marks the pass that always runs; `--disable-pass` takes optional
/// passes only (a clear error naming them otherwise); `--bisect` runs the entry with the first
/// k optional passes for every k and says that none changes issue 49's S2 (row sums beside row
/// maxima of one CSR matrix), exit 0; `run --disable-pass` gives the same values.
#[test]
fn passes_can_be_disabled_and_bisected() {
    let run_strata = |args: &[&str]| strata().args(args).output().unwrap();
    let root = workspace();
    let trust = root.join("tests/programs/trust.strata").display().to_string();
    let o = run_strata(&["lower", "--passes"]);
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(listed.contains("unify-fold-vars") && listed.contains("(always runs)"), "{listed}");
    let o = run_strata(&["lower", &trust, "--entry", "where45", "--disable-pass", "no-such-pass"]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(e.contains("`no-such-pass` is not an optional pass") && e.contains("coiterate"), "{e}");
    let o = run_strata(&["lower", &trust, "--entry", "where45", "--disable-pass", "schedule"]);
    assert_eq!(o.status.code(), Some(1), "the schedule always runs");
    // Without `coiterate` the row sum visits every column.
    let o = run_strata(&["lower", &trust, "--entry", "rowsum_rowmax", "--disable-pass", "coiterate"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("visits stored"), "{}", String::from_utf8_lossy(&o.stdout));
    let o = run_strata(&["lower", &trust, "--entry", "rowsum_rowmax"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("visits stored"));
    let o = run_strata(&["lower", &trust, "--entry", "rowsum_rowmax", "--bisect", "--arg", "a=random:4"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("up to `unify-fold-vars`: same result") && out.contains("no pass changes the result"),
        "{out}"
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["run", &trust, "--entry", "rowsum_rowmax", "--arg", "a=random:4"];
        args.extend_from_slice(extra);
        String::from_utf8_lossy(&run_strata(&args).stdout).into_owned()
    };
    assert_eq!(run(&[]), run(&["--disable-pass", "coiterate,unify-fold-vars", "--backend", "native"]));
    // Bisecting without the arguments is an error naming them.
    let o = run_strata(&["lower", &trust, "--entry", "rowsum_rowmax", "--bisect"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing --arg for `a`"));
}
