//! What can go wrong with an array operation, named by the operation.

/// An array-API failure. Every message names the operation (`sum`, `matmul`, …) first.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArrayError {
    /// Arguments the operation does not accept (an axis out of range, a bad shape, …).
    #[error("{op}: {message}")]
    Invalid {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// An axis out of range for the array (numpy's `AxisError`).
    #[error("{op}: {message}")]
    Axis {
        /// The operation.
        op: &'static str,
        /// Which axis, and how many there are.
        message: String,
    },
    /// Shapes that do not broadcast (array-API rules: right-aligned, extent 1 stretches).
    #[error("{op}: shapes {a:?} and {b:?} cannot be broadcast together (extents must be equal or 1, aligned from the right)")]
    Broadcast {
        /// The operation.
        op: &'static str,
        /// One shape.
        a: Vec<usize>,
        /// The other.
        b: Vec<usize>,
    },
    /// A dtype the operation is not defined on, or no promotion between two dtypes.
    #[error("{op}: {message}")]
    DType {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Operands on different devices or teams (compute follows data, seed 003).
    #[error("{op}: operands live in different places ({a} and {b}); compute follows data, so move one explicitly with `to_device`")]
    Placement {
        /// The operation.
        op: &'static str,
        /// One placement.
        a: String,
        /// The other.
        b: String,
    },
    /// Running the traced program failed (an integer overflow trap, an index out of range, …).
    #[error("evaluating the array failed: {0}")]
    Run(String),
    /// A distributed run failed: the lowest failed rank, its cause and its message, alike on
    /// every rank.
    #[error("evaluating the array failed: {0}")]
    Job(strata_dist::job::JobError),
    /// Reading or writing data (`.npy`, `ndarray`) failed.
    #[error("{0}")]
    Data(String),
    /// A factorization that needs an invertible matrix met a singular one (an exactly zero
    /// pivot, as LAPACK's `getrf` reports it; numpy's `LinAlgError`).
    #[error("{op}: matrix {index} of the stack is singular (a zero pivot in its LU factorization)")]
    Singular {
        /// The operation.
        op: &'static str,
        /// The matrix's position in the (flattened) stack.
        index: usize,
    },
    /// The traced program was rejected by the verifier: a bug in this crate, reported with the
    /// program text.
    #[error("internal error: the traced program does not verify ({message}):\n{program}")]
    Internal {
        /// The verifier's first message.
        message: String,
        /// The traced program.
        program: String,
    },
}

/// Results of array operations.
pub type Result<T, E = ArrayError> = std::result::Result<T, E>;

/// An [`ArrayError::Invalid`].
pub(crate) fn invalid(op: &'static str, message: impl Into<String>) -> ArrayError {
    ArrayError::Invalid { op, message: message.into() }
}

/// An [`ArrayError::DType`].
pub(crate) fn dtype_error(op: &'static str, message: impl Into<String>) -> ArrayError {
    ArrayError::DType { op, message: message.into() }
}
