//! Runs `tests/filetests/**/*.strata` and checks the examples.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn filetests() {
    let bless = std::env::var_os("STRATA_BLESS").is_some_and(|v| v == "1");
    let filter = std::env::var("STRATA_FILTER").ok();
    let out = strata_filetests::run_dir(&workspace().join("tests/filetests"), bless, filter.as_deref());
    assert!(out.failures.is_empty(), "{} file test(s) failed:\n\n{}", out.failures.len(), out.failures.join("\n\n"));
    assert!(out.passed > 0 || filter.is_some(), "no file test ran");
    eprintln!("filetests: {} files passed, {} error cases", out.passed, out.error_cases);
}

/// Every diagnostic code is exercised by at least one negative case (one per diagnostic class).
#[test]
fn every_diagnostic_code_has_a_negative_test() {
    if std::env::var_os("STRATA_FILTER").is_some() {
        return;
    }
    let out = strata_filetests::run_dir(&workspace().join("tests/filetests"), false, None);
    let declared = strata_filetests::declared_codes(&workspace().join("crates"));
    // Only modules built by passes can contain dangling handles, and only a module verified
    // without elaboration a use of a generic function; unit tests in strata-verify cover them.
    let not_from_text = ["strata::verify::invalid_handle", "strata::verify::generic_not_instantiated"];
    let missing: Vec<&String> =
        declared.iter().filter(|c| !not_from_text.contains(&c.as_str()) && !out.codes_seen.contains(c)).collect();
    assert!(missing.is_empty(), "diagnostic codes without a negative file test: {missing:?}");
    assert!(out.error_cases >= 60, "only {} negative cases", out.error_cases);
}

fn examples() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in std::fs::read_dir(workspace().join("examples")).expect("examples/").flatten() {
        let p = dir.path();
        let files: Vec<PathBuf> = if p.is_dir() {
            std::fs::read_dir(&p).expect("dir").flatten().map(|e| e.path()).collect()
        } else {
            vec![p]
        };
        v.extend(files.into_iter().filter(|f| f.extension().is_some_and(|x| x == "strata")));
    }
    v.sort();
    v
}

/// Every example verifies, is in canonical form, and round-trips.
#[test]
fn examples_check_and_are_canonical() {
    let files = examples();
    assert!(files.len() >= 14, "expected the examples listed in the README, found {}", files.len());
    for f in files {
        let src = std::fs::read_to_string(&f).expect("readable");
        let m = strata_filetests::check_clean(&src).unwrap_or_else(|e| panic!("{} does not check:\n{e}", f.display()));
        let printed = m.to_string();
        assert_eq!(
            printed,
            src,
            "{} is not in canonical form:\n{}",
            f.display(),
            strata_filetests::diff(&src, &printed)
        );
        strata_filetests::roundtrip(&src).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
}
