//! What the distributed tests share: the repository root, Open MPI present, and `strata` run
//! with a deadline (a hung rank fails the test instead of hanging it).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Open MPI is present (installed on first use where possible).
pub fn require_mpi() {
    let o = Command::new(root().join("scripts/mpi-env")).output().expect("scripts/mpi-env runs");
    assert!(o.status.success(), "Open MPI is needed: {}", String::from_utf8_lossy(&o.stderr));
}

/// Runs `strata` (one native thread per process) with a deadline: a hung job is killed and
/// fails the test.
pub fn strata<S: AsRef<OsStr>>(args: &[S]) -> Output {
    strata_with(args, &[])
}

/// [`strata`] with more environment variables.
pub fn strata_with<S: AsRef<OsStr>>(args: &[S], vars: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .envs(vars.iter().copied())
        .env("NO_COLOR", "1")
        .env("STRATA_NUM_THREADS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drained while it runs: output past a pipe's buffer would block it.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() };
        }
        if start.elapsed() > Duration::from_secs(240) {
            let _ = child.kill();
            let shown: Vec<String> = args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();
            panic!("`strata {}` did not finish in 240 s (a rank hangs?)", shown.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
