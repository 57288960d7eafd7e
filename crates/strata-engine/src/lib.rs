//! Strata's execution engine: compile once, run many.
//!
//! [`prepare`] takes a verified entry and returns a [`Prepared`] program: results-as-outputs
//! applied, the entry lowered to loop kernels, the C compiled (or found in the on-disk cache)
//! and loaded — or, where the native backend does not compile the entry or no C compiler is
//! installed, the reference interpreter chosen, with one notice saying why. Prepared programs
//! are memoized for the process, keyed on the IR's structure and the options (backend,
//! threads, machine facts). [`Prepared::run`] then runs it on argument values as often as the
//! caller likes, with no re-planning. With [`Options::tiered`], small runs of a program not
//! compiled yet are interpreted while its library compiles in the background ([`tier`]).
//!
//! Every front end runs programs through this crate: `strata run`, each rank of a distributed
//! run, the Rust array front end and the Python package.

#![deny(missing_docs)]

mod backend;
mod error;
mod gpu;
mod key;
mod prepared;
pub mod tier;
mod timings;

pub use backend::Backend;
pub use error::ExecuteError;
pub use key::{structure as structure_key, StructureKey};
pub use prepared::{
    prepare, prepare_keyed, prepared_count, tiered_default, Bounded, Executed, Options, Prepared, MEMO_CAPACITY,
};
pub use strata_codegen::compile::libraries_loaded;
pub use strata_codegen::exec::{recycle, recycle_column};
pub use strata_codegen::placement::gpu_ordinal;
pub use timings::{median, Timings};
