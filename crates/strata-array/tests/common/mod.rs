//! Shared by the oracle tests: the repository root and the Python that has numpy.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A Python interpreter with numpy 2 and SciPy (set up by scripts/python-env).
pub fn python() -> String {
    let out = Command::new(root().join("scripts/python-env")).output().expect("scripts/python-env runs");
    assert!(out.status.success(), "cannot set up the Python oracles:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8").trim().to_string()
}
