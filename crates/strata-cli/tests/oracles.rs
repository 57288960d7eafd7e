//! The examples run end to end through `strata run` and match independent numpy oracles
//! (tests/oracles/check_examples.py), with data generated at the seeds' sizes.

use std::path::Path;
use std::process::Command;

fn python() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(root.join("scripts/python-env")).output().expect("scripts/python-env runs");
    assert!(out.status.success(), "cannot set up the Python oracles:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8").trim().to_string()
}

#[test]
fn examples_match_numpy_and_scipy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let work = std::env::temp_dir().join(format!("strata-oracles-{}", std::process::id()));
    let out = Command::new(python())
        .arg(root.join("tests/oracles/check_examples.py"))
        .arg(env!("CARGO_BIN_EXE_strata"))
        .arg(&work)
        .output()
        .expect("python runs");
    let _ = std::fs::remove_dir_all(&work);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("ok nabla.f1") && text.contains("ok distributed_axpy") && text.contains(" passed, 0 failed"),
        "{text}"
    );
}

#[test]
fn every_interpreted_operation_matches_numpy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let work = std::env::temp_dir().join(format!("strata-ops-{}", std::process::id()));
    let out = Command::new(python())
        .arg(root.join("tests/oracles/check_ops.py"))
        .arg(env!("CARGO_BIN_EXE_strata"))
        .arg(&work)
        .output()
        .expect("python runs");
    let _ = std::fs::remove_dir_all(&work);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");
}
