//! The extension module as `cargo test` builds it: a cdylib re-exporting the library's
//! `PyInit__strata` (tests/pytest.rs imports it from `target/<profile>/examples/`). Users
//! build the package with `pip install ./crates/strata-python` (maturin) instead.

extern crate _strata;
