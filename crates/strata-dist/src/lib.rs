//! Distributed execution over MPI (seed 003): tensors with a `block` level live on a team of
//! processes, each rank holding its block; compute follows data.
//!
//! - [`plan`]: the block partition of every distributed value, the intervals each rank must
//!   hold (derived from the interval types: halos are what the shifts read), the halo
//!   exchange's messages, and each rank's local program.
//! - [`comm`]: the MPI layer (built with `mpicc` at first use) and its calls.
//! - [`stages`]: an entry split at its reductions over block levels, whose partials the
//!   ranks combine before the next stage runs.
//! - [`exchange`]: rows moved between ranks — halos and the rows a table reaches.
//! - [`indirect`]: neighbor shifts of distributed sources — the rows each rank reads are the
//!   tables' entries, planned once at run time (an all-to-all of requests) and fetched.
//! - [`rows`]: needed rows as an interval (compile time) or a set (from a table's entries).
//! - [`job`]: one rank's run of every stage — inputs, exchanges, local programs, collectives —
//!   and its results leaving the ranks (gathered, or written into one file).
//! - [`combine`]: the ranks' partials of such a reduction folded in rank order.
//! - [`slab`]: the rows of a block level as bytes — packing messages, placing received rows,
//!   reading and writing one rank's part of a `.npy` file.

#![deny(missing_docs)]

pub mod combine;
pub mod comm;
pub mod exchange;
pub mod indirect;
pub mod job;
pub mod plan;
pub mod rows;
pub mod slab;
pub mod stages;
pub mod strips;

pub use comm::{launched_by_mpi, Comm, CommError};
pub use plan::{BlockParam, IndirectShift, Partial, PartialStart, Plan, PlanError, Tables};
pub use rows::{RowSet, Rows};
pub use stages::{split, Collective, Distribution, PlannedStage, Stage};
pub use strips::{Strip, Strips};
