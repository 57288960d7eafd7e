//! `strata._strata`: the extension module under the Python package `strata`
//! (`python/strata/__init__.py` holds the Python-facing API and its documentation).
//!
//! - `program`: `compile` (parse + verify, diagnostics as exceptions) and `Program.run` (the
//!   `strata run` policy, the GIL released while it runs);
//! - `convert`: numpy arrays (and SciPy matrices, unpacked by the Python side) to runtime
//!   values and back; results are handed to numpy without a copy;
//! - `errors`: the exception hierarchy (`strata.Error` and its subclasses);
//! - `array_api`: the Rust array-API front end's lazy arrays and operations, which
//!   `python/strata/array_api.py` makes into the standard's namespace;
//! - `fields`: `strata.fields`' expressions as IR values, typed by the verifier's rules as
//!   they are made, and the programs computing them;
//! - `spmd`: joining an MPI job (`strata.world`), team arrays' blocks and parallel `.npy`
//!   writes.

#![deny(missing_docs)]

mod array_api;
mod convert;
mod errors;
mod fields;
mod program;
mod spmd;

use pyo3::prelude::*;

/// Large tensor columns aligned to a cache line (`strata_runtime::aligned`).
#[global_allocator]
static ALLOCATOR: strata_runtime::aligned::CacheLineAligned = strata_runtime::aligned::CacheLineAligned;

/// The extension module.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    strata_runtime::aligned::start();
    // The workspace's version: `strata.__version__` and `strata --version` agree.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(program::compile, m)?)?;
    m.add_class::<program::Program>()?;
    m.add_class::<program::Runner>()?;
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add("ParseError", py.get_type::<errors::ParseError>())?;
    m.add("VerifyError", py.get_type::<errors::VerifyError>())?;
    m.add("RunError", py.get_type::<errors::RunError>())?;
    m.add("ArgumentError", py.get_type::<errors::ArgumentError>())?;
    m.add("LinAlgError", py.get_type::<errors::LinAlgError>())?;
    errors::register_axis_error(m)?;
    array_api::register(m)?;
    fields::register(m)?;
    spmd::register(m)?;
    Ok(())
}
