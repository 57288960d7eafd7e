//! The array-API example (examples/array/climate.rs) runs end to end and matches numpy.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../examples/array/climate.rs"]
mod climate;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn climate_example_matches_numpy() {
    let input = root().join("examples/array/temperatures.npy");
    let out = std::env::temp_dir().join(format!("strata-climate-{}", std::process::id()));
    let table = climate::run(&input, &out).expect("the example runs");
    assert_eq!(table.len(), 12, "one summary row per station");
    let py = Command::new(root().join("scripts/python-env")).output().expect("scripts/python-env runs");
    assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
    let python = String::from_utf8(py.stdout).unwrap().trim().to_string();
    let check = Command::new(python)
        .arg(root().join("tests/oracles/check_array_example.py"))
        .arg(&input)
        .arg(&out)
        .output()
        .expect("python runs");
    let _ = std::fs::remove_dir_all(&out);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success() && text.trim() == "ok", "{text}{}", String::from_utf8_lossy(&check.stderr));
}
