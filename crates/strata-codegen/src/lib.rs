//! Strata's native backend.
//!
//! Pipeline, each stage printable (`strata lower --to loops|c`):
//! 1. [`lower()`]: a verified entry → the loop-level IR ([`kernel::KernelProgram`]): one fused
//!    loop nest per output over its domain, every elementwise op, shift, call, reshape and
//!    neighbor reduction inlined into one scalar expression ([`sym`]), except values read
//!    through neighbor tables that [`extract`]'s cost rule computes once into temporaries;
//!    then the passes
//!    [`invariant`], [`kernel_passes`], [`sparse::coiterate`] (loops over stored sparse
//!    coordinates where the algebra of [`fill`] proves it changes no value), [`workspace`]
//!    (Gustavson's row workspace for sparse results such as SpGEMM) and [`matmul`] (kernels
//!    that are matrix products, for the runtime GEMM), and last [`stage`] (values read at
//!    several offsets computed once into rolling windows of planes);
//! 2. [`emit_c`]: kernels → one C translation unit, calling back into [`runtime`] for GEMM;
//! 3. [`compile`]: C → shared object with the system C compiler, cached on disk;
//! 4. [`exec`]: running it on runtime values (sparse arguments assembled into storage).
//!
//! Coverage: every core operation on dense tensors, tensors of tensors (any depth), tuples,
//! neighbor tables, sparse and ragged tensors. What is not compiled yet is reported by name
//! ([`LowerError`]), never approximated; `strata run` then uses the interpreter.

#![deny(missing_docs)]

pub mod affine;
pub mod compile;
pub mod emit_c;
pub mod exec;
pub mod extract;
pub mod fill;
pub mod fold_strips;
pub mod folds;
pub mod invariant;
pub mod jam_rows;
pub mod kernel;
pub mod kernel_passes;
pub mod lower;
pub mod machine;
pub mod matmul;
pub mod nested;
pub mod phases;
pub mod pipeline;
pub mod placement;
pub mod runtime;
pub mod schedule;
pub mod sparse;
pub mod split;
pub mod stage;
pub mod sym;
pub mod unify_folds;
pub mod verify_kernels;
pub mod verify_sets;
pub mod workspace;

pub use kernel::KernelProgram;
pub use lower::{lower, lower_observed, lower_with, LowerError, LowerOptions};
