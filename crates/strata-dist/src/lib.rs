//! Distributed execution over MPI (seed 003): tensors with a `block` level live on a team of
//! processes, each rank holding its block; compute follows data.
//!
//! - [`plan`]: the block partition of every distributed value, the intervals each rank must
//!   hold (derived from the interval types: halos are what the shifts read), the halo
//!   exchange's messages, and each rank's local program.
//! - [`comm`]: the MPI layer (built with `mpicc` at first use) and its calls.
//! - [`slab`]: the rows of a block level as bytes — packing messages, placing received rows,
//!   reading and writing one rank's part of a `.npy` file.

#![deny(missing_docs)]

pub mod comm;
pub mod plan;
pub mod slab;

pub use comm::{launched_by_mpi, Comm, CommError};
pub use plan::{BlockParam, Plan, PlanError};
