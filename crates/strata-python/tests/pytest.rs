//! Runs the Python package's tests (`tests/*.py`, pytest) on the extension `cargo test` just
//! built (the example `python_extension`, a cdylib of the library): the package
//! (`python/strata`) and the library, named as CPython imports it (`_strata.abi3.so`), are
//! staged in a temporary folder put first on `PYTHONPATH`. The
//! interpreter is the project's virtualenv (`scripts/python-env`: numpy, SciPy, pytest, and the
//! array API clients scikit-learn, einops and array-api-extra).

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn python_package_tests_pass() {
    let env = Command::new(root().join("scripts/python-env")).output().expect("scripts/python-env runs");
    assert!(env.status.success(), "no Python with the oracles:\n{}", String::from_utf8_lossy(&env.stderr));
    let python = String::from_utf8_lossy(&env.stdout).trim().to_string();
    // target/<profile>/deps/pytest-… → target/<profile>/examples/libpython_extension.so (the
    // example `cargo test` builds: the extension as a cdylib).
    let exe = std::env::current_exe().expect("the test's path");
    let lib = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("examples/libpython_extension.so");
    assert!(lib.exists(), "{} is not built (cargo test builds it)", lib.display());
    let stage = std::env::temp_dir().join(format!("strata-python-{}", std::process::id()));
    let pkg = stage.join("strata");
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(&pkg).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/strata");
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let keep = path.extension().is_some_and(|e| e == "py" || e == "pyi") || path.ends_with("py.typed");
        if keep {
            std::fs::copy(&path, pkg.join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::copy(&lib, pkg.join("_strata.abi3.so")).unwrap();
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut cmd = Command::new(&python);
    // The `strata` command `cargo test --workspace` built beside this test (for `strata launch`).
    let strata = lib.parent().and_then(|d| d.parent()).map(|p| p.join("strata")).filter(|p| p.exists());
    if let Some(s) = strata {
        cmd.env("STRATA_EXE", s);
    }
    let out = cmd
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        .env("PYTHONPATH", &stage)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(root())
        .output()
        .expect("python runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&stage);
    assert!(out.status.success(), "pytest failed:\n{text}");
    eprintln!("{}", text.lines().last().unwrap_or(""));
}
