//! Why an entry cannot run distributed.

use strata_ir::{ExprKind, Function, Value};

/// Why an entry cannot run distributed (yet).
#[derive(Clone, Debug, thiserror::Error)]
pub enum PlanError {
    /// The program's team size differs from the job's.
    #[error("`%{name}` lives on a team of {team} ranks, but the job has {ranks} (declare `team = world` to run on any number, or run with --ranks {team})")]
    TeamSize {
        /// The value.
        name: String,
        /// Its team size.
        team: u32,
        /// The job's.
        ranks: usize,
    },
    /// Values on teams of different sizes.
    #[error("values on teams of different sizes in one distributed run: {a} and {b}")]
    Teams {
        /// One size.
        a: String,
        /// Another.
        b: String,
    },
    /// An operation the rank-local execution does not support on distributed operands.
    #[error("`{op}` (`%{name}` in `@{func}`) on a block-distributed operand is not supported by the distributed runtime yet; {hint}")]
    Unsupported {
        /// The op.
        op: String,
        /// The value it defines.
        name: String,
        /// The function.
        func: String,
        /// What is supported.
        hint: &'static str,
    },
    /// A sparse or ragged parameter the ranks cannot hold as blocks of rows.
    #[error("`%{name}` is sparse or ragged and distributed, so each rank holds exactly its own rows of it: {reason}")]
    StoredRows {
        /// The parameter.
        name: String,
        /// What the program asks for instead.
        reason: &'static str,
    },
    /// A stage of the split entry does not verify (a bug in the split).
    #[error("internal: stage `@{name}` of the distributed program does not verify: {message}")]
    Stage {
        /// The stage's function.
        name: String,
        /// The verifier's messages.
        message: String,
    },
    /// The local program does not verify (a halo too narrow, a type the rank cannot hold).
    #[error("the local program of rank {rank} does not verify: {message}")]
    Local {
        /// The rank.
        rank: usize,
        /// The verifier's message.
        message: String,
    },
}

pub(super) const SUPPORTED: &str =
    "ranks run elementwise ops, storage conversions, cartesian shifts, concats along named dimensions, neighbor \
     reductions, gathers, scatters into a destination distributed along the indexed dimension, scans along local \
     dimensions, calls, `distribute` and `collect` into an output";

impl PlanError {
    /// `v` (an op of `f`) on a block-distributed operand, with what is supported instead.
    pub(super) fn unsupported(f: &Function, v: Value, hint: &'static str) -> PlanError {
        let op = match &f.exprs[v].kind {
            ExprKind::Op(op) => op.name(),
            _ => "shift",
        };
        PlanError::Unsupported { op: op.to_string(), name: f.exprs[v].name.clone(), func: f.name.clone(), hint }
    }
}
