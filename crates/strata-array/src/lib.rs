//! `strata_array`: the array-API operation set of seed 003 on Strata, as a lazy Rust front end.
//!
//! Arrays ([`Array`]) build Strata IR lazily, like a tracing JIT: every operation checks its
//! arguments at once (shapes, dtypes, placement) and records one IR statement; [`Array::eval`]
//! (or any read: [`Array::to_ndarray`], [`Array::to_vec`], [`Array::to_npy`]) traces the
//! program computing the array, verifies it, compiles it with the native backend where it
//! can (the reference interpreter otherwise) and runs it. Compiled programs are cached by
//! structure and shapes.
//!
//! The semantics are the Python array API standard's (2023.12), numpy's where the standard
//! leaves a choice; docs/array-api.md lists every operation, how it is defined (through the
//! core IR or as a runtime kernel) and where it is tested.
//!
//! ```
//! use strata_array::*;
//!
//! let x = Array::from_vec(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let centered = subtract(&x, &mean(&x, Some(&[1]), true)?)?; // traced, not computed
//! assert_eq!(centered.to_vec::<f64>()?, vec![-1.0, 0.0, 1.0, -1.0, 0.0, 1.0]);
//! assert_eq!(argmax(&x, None, false)?.to_vec::<i64>()?, vec![5]);
//! # Ok::<(), ArrayError>(())
//! ```
//!
//! Positional semantics on named dimensions: an array of rank `n` is a Strata tensor over the
//! positional dimensions `_0 … _{n-1}`; operands of a broadcasting operation are first placed
//! in the result's shape with `broadcast_in_dim` (right-aligned, extent 1 stretched), after
//! which the core IR's name-based broadcasting is the identity on dimensions.

#![deny(missing_docs)]

mod array;
mod data;
pub mod dtype;
mod engine;
mod error;
pub mod ops;
pub mod spmd;
mod trace;

pub use array::{Array, Place};
pub use data::Element;
pub use dtype::{DType, Weak};
pub use engine::{backend, cache_stats, set_backend, Backend, CacheStats, CAPACITY};
pub use error::{ArrayError, Result};
pub use ops::*;
/// A distributed run's failure as [`ArrayError::Job`] carries it.
pub use strata_dist::job::{Cause as JobCause, JobError};
