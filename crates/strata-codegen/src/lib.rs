//! Strata's native backend.
//!
//! Pipeline, each stage printable (`strata lower --to loops|c`):
//! 1. [`lower`]: a verified entry → fused loop kernels ([`lower::KernelProgram`]): one loop nest
//!    per output over its domain, every elementwise op, shift, call and neighbor reduction
//!    inlined into one scalar expression ([`sym`]);
//!    [`matmul`] marks the kernels that are matrix products, for the runtime GEMM;
//! 2. [`emit_c`]: kernels → one C translation unit, calling back into [`runtime`] for GEMM;
//! 3. [`compile`]: C → shared object with the system C compiler, cached on disk;
//! 4. [`exec`]: running it on runtime values.
//!
//! Coverage today: elementwise builtins, constants, tuples, calls, cartesian and unstructured
//! shifts, `can_deref`, neighbor `reduce`, `subset`, `add_dim`, `pos`, on dense tensors.
//! Everything else is reported as not compiled yet (the interpreter runs it).

#![deny(missing_docs)]

pub mod compile;
pub mod emit_c;
pub mod exec;
pub mod invariant;
pub mod lower;
pub mod matmul;
pub mod runtime;
pub mod sparse;
pub mod sym;

pub use lower::{lower, KernelProgram, LowerError};
