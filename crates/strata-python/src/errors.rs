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
