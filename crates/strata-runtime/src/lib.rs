//! Strata's runtime values.
//!
//! - [`scalar`]: scalar values with their types and the arithmetic rules; typed columns;
//! - [`tensor`]: every value as a tensor over levels, with tuple, nested and absent elements;
//! - [`storage`]: per-level buffers of sparse and ragged tensors (positions, coordinates, offsets);
//! - [`value`]: arguments and results — logical tensors, or sparse and ragged ones held as storage;
//! - [`dist`]: block partitions and per-rank blocks of tensors on a team;
//! - [`random`]: the deterministic generator behind `random:SEED` arguments;
//! - [`npy`]: numpy `.npy` / `.npz` and SciPy sparse exchange ([`sparse_io`]; one block of rows:
//!   [`sparse_rows`]).

#![deny(missing_docs)]

pub mod aligned;
pub mod column_ref;
pub mod complex;
pub mod dist;
pub mod npy;
pub mod random;
pub mod scalar;
pub mod sparse_io;
pub mod sparse_rows;
pub mod storage;
pub mod tensor;
pub mod value;

pub use column_ref::{ColumnElement, ColumnMut, ColumnRef};
pub use scalar::{Column, ScalarError, Sv};
pub use tensor::{strides, Data, Elem, ElemType, Tensor, ValueType};
pub use value::{Argument, Stored, Value};
