//! The exceptions Strata raises: one base class, `strata.Error`, and one subclass per phase.
//! Their text is what the `strata` command prints (located diagnostics without colour).

use pyo3::exceptions::{PyException, PyValueError};

pyo3::create_exception!(
    strata,
    Error,
    PyException,
    "Every error Strata raises: its text is the diagnostic the `strata` command prints."
);
pyo3::create_exception!(strata, ParseError, Error, "The program text does not parse (a located diagnostic).");
pyo3::create_exception!(
    strata,
    VerifyError,
    Error,
    "The program does not verify: a type error (a located diagnostic)."
);
pyo3::create_exception!(
    strata,
    RunError,
    Error,
    "Running the program failed: a run-time error located in the program, or a native backend failure."
);
pyo3::create_exception!(
    strata,
    ArgumentError,
    Error,
    "An argument does not fit its parameter: a missing or unknown name, the wrong dtype or shape."
);
pyo3::create_exception!(
    strata,
    LinAlgError,
    PyValueError,
    "A linear-algebra routine met a matrix it is not defined on: `inv` or `solve` of a singular one \
     (numpy's `LinAlgError`, also a `ValueError`)."
);

/// `strata.AxisError`: an axis out of range for an array, both a `ValueError` and an
/// `IndexError` (as numpy's `AxisError`: code written for either catches it). A class of two
/// built-in bases, so it is defined in Python when the module loads ([`register_axis_error`]).
static AXIS_ERROR: pyo3::sync::PyOnceLock<pyo3::Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();

/// Defines `AxisError` and adds it to module `m`.
pub(crate) fn register_axis_error(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    use pyo3::prelude::*;
    let py = m.py();
    let ns = pyo3::types::PyDict::new(py);
    py.run(
        c"class AxisError(ValueError, IndexError):\n    \"\"\"An axis out of range for an array (a ValueError and an IndexError, as numpy's AxisError).\"\"\"\n    __module__ = 'strata'\n",
        None,
        Some(&ns),
    )?;
    let ty = ns.get_item("AxisError")?.expect("defined just above").cast_into::<pyo3::types::PyType>()?;
    m.add("AxisError", &ty)?;
    let _ = AXIS_ERROR.set(py, ty.unbind());
    Ok(())
}

/// An `AxisError` saying `message`.
pub(crate) fn axis_error(message: String) -> pyo3::PyErr {
    pyo3::Python::attach(|py| match AXIS_ERROR.get(py) {
        Some(ty) => pyo3::PyErr::from_type(ty.bind(py).clone(), message),
        None => pyo3::exceptions::PyIndexError::new_err(message),
    })
}
