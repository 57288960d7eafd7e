//! Why preparing or running an entry failed.

use strata_ir::Diagnostic;

/// Why preparing or running an entry failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    /// `backend = native`, and the native backend does not compile the entry.
    #[error("{0}")]
    NotCompiled(String),
    /// `backend = native`, and compiling or loading the generated code failed (no C compiler,
    /// the compiler rejected the code, the kernel cache cannot be written).
    #[error("{0}")]
    Compile(String),
    /// `backend = native`, and the native run failed (an entry outside its interval, bad
    /// storage in an argument).
    #[error("{0}")]
    Exec(String),
    /// The entry's values live on a GPU, and it could not run there (no driver or NVRTC, a
    /// kernel the CUDA back end cannot print yet, a failed launch): the message says which.
    #[error("{0}")]
    Gpu(String),
    /// The program failed at run time: the interpreter's located diagnostic.
    #[error("{}", .0.message)]
    Program(Box<Diagnostic>),
    /// A result that cannot be held in memory.
    #[error("cannot hold `{name}` of `@{func}`: {message}")]
    Result {
        /// The result's name.
        name: String,
        /// The entry.
        func: String,
        /// Why.
        message: String,
    },
    /// Late arguments did not arrive ([`crate::Prepared::run_overlapped`]): the caller's error,
    /// as it returned it.
    #[error("{0}")]
    Arrival(Box<dyn std::error::Error + Send + Sync>),
    /// An argument the interpreter cannot hold (a stored value too large for a dense view).
    #[error("the interpreter cannot take `%{name}` of `@{func}`: {message}")]
    Argument {
        /// The parameter.
        name: String,
        /// The entry.
        func: String,
        /// Why.
        message: String,
    },
}
