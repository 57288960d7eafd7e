//! The front end under `mpirun` (SPMD): examples/array/spmd.rs — team arrays read from a
//! `.npy` by rows, every kind of operation, results written by each rank into one file — run
//! as one process and at 1–4 ranks, every result checked against numpy
//! (tests/oracles/check_spmd.py).

mod common;

use std::process::Command;

use common::{python, root};

#[test]
fn the_array_api_runs_on_team_arrays_under_mpirun_as_numpy_does() {
    let mpi = Command::new(root().join("scripts/mpi-env")).output().expect("scripts/mpi-env runs");
    assert!(mpi.status.success(), "Open MPI is needed:\n{}", String::from_utf8_lossy(&mpi.stderr));
    // `cargo test` builds the examples beside the test binaries' folder.
    let exe = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().join("examples/spmd");
    assert!(exe.exists(), "{} is not built (cargo test builds the examples)", exe.display());
    let work = std::env::temp_dir().join(format!("strata-spmd-{}", std::process::id()));
    for ranks in [None, Some("1"), Some("2"), Some("3"), Some("4")] {
        let mut cmd = Command::new(python());
        cmd.arg(root().join("tests/oracles/check_spmd.py")).arg(&exe).arg(&work);
        cmd.env("STRATA_CACHE_DIR", work.join("cache"));
        if let Some(n) = ranks {
            cmd.args(["--ranks", n]);
        }
        let out = cmd.output().expect("python runs");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("19 passed, 0 failed"), "{ranks:?} ranks:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&work);
}
