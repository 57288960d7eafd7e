//! The array-API example (examples/array/climate.rs) runs end to end and matches numpy.

mod common;

use std::process::Command;

use common::{python, root};

#[path = "../../../examples/array/climate.rs"]
mod climate;

#[test]
fn climate_example_matches_numpy() {
    let input = root().join("examples/array/temperatures.npy");
    let out = std::env::temp_dir().join(format!("strata-climate-{}", std::process::id()));
    let table = climate::run(&input, &out).expect("the example runs");
    assert_eq!(table.len(), 12, "one summary row per station");
    let check = Command::new(python())
        .arg(root().join("tests/oracles/check_array_example.py"))
        .arg(&input)
        .arg(&out)
        .output()
        .expect("python runs");
    let _ = std::fs::remove_dir_all(&out);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success() && text.trim() == "ok", "{text}{}", String::from_utf8_lossy(&check.stderr));
}
