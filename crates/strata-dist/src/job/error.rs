//! Why a distributed run failed: on one rank ([`RankError`], what a phase returns), and as every
//! rank learns it once they agree ([`JobError`]: the lowest failed rank and its cause).

use crate::{CommError, PlanError};

/// Why a phase of a distributed run failed on this rank.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RankError {
    /// Planning this rank's part: its local program, or the rows it reads through tables.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// An MPI call, or the MPI layer itself.
    #[error(transparent)]
    Comm(#[from] CommError),
    /// An input of the entry this rank cannot supply or hold.
    #[error("`{name}`: {reason}")]
    Input {
        /// The entry parameter.
        name: String,
        /// What is wrong with this rank's value of it.
        reason: String,
    },
    /// Reading or writing a data file (this rank's rows of an input, a written output).
    #[error("{0}")]
    Data(String),
    /// The local program failed to compile or run on this rank (the executor's message).
    #[error("{0}")]
    Run(String),
    /// Combining the ranks' partial results (a fold of the ranks' values failed).
    #[error("combining the ranks' partial results: {0}")]
    Combine(String),
    /// A setting that must be alike on every rank differs.
    #[error(
        "`{variable}` is set to 1 on some ranks and not on others, so their reductions would combine in different \
         orders: set it for the whole job (`mpirun -x {variable}=1` on several nodes)"
    )]
    SettingDiffers {
        /// The environment variable.
        variable: &'static str,
    },
    /// The ranks run different programs, or hold different values of what every rank must
    /// hold alike (the caller says which).
    #[error("{0}")]
    Diverged(&'static str),
    /// A bug in the job's bookkeeping (a plan that does not match the values it meets).
    #[error("internal: {0}")]
    Internal(String),
}

/// A rank's failure in a phase.
pub type Step<T> = Result<T, RankError>;

/// What kind of failure a [`JobError`] reports: [`RankError`]'s variants, as they cross ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cause {
    /// [`RankError::Plan`].
    Plan = 1,
    /// [`RankError::Comm`].
    Comm,
    /// [`RankError::Input`].
    Input,
    /// [`RankError::Data`].
    Data,
    /// [`RankError::Run`].
    Run,
    /// [`RankError::Combine`].
    Combine,
    /// [`RankError::SettingDiffers`].
    SettingDiffers,
    /// [`RankError::Diverged`].
    Diverged,
    /// [`RankError::Internal`].
    Internal,
    /// Not known: the ranks could not exchange it (MPI failed while they agreed).
    Unknown,
}

impl Cause {
    /// The cause a byte sent by [`Cause::byte`] stands for.
    pub(crate) fn from_byte(b: u8) -> Cause {
        [
            Cause::Plan,
            Cause::Comm,
            Cause::Input,
            Cause::Data,
            Cause::Run,
            Cause::Combine,
            Cause::SettingDiffers,
            Cause::Diverged,
            Cause::Internal,
        ]
        .into_iter()
        .find(|c| *c as u8 == b)
        .unwrap_or(Cause::Unknown)
    }

    /// The byte that carries the cause to other ranks.
    pub(crate) fn byte(self) -> u8 {
        self as u8
    }
}

impl RankError {
    /// Its kind, as it crosses ranks.
    pub fn cause(&self) -> Cause {
        match self {
            RankError::Plan(_) => Cause::Plan,
            RankError::Comm(_) => Cause::Comm,
            RankError::Input { .. } => Cause::Input,
            RankError::Data(_) => Cause::Data,
            RankError::Run(_) => Cause::Run,
            RankError::Combine(_) => Cause::Combine,
            RankError::SettingDiffers { .. } => Cause::SettingDiffers,
            RankError::Diverged(_) => Cause::Diverged,
            RankError::Internal(_) => Cause::Internal,
        }
    }

    /// A [`RankError::Input`].
    pub fn input(name: &str, reason: impl Into<String>) -> RankError {
        RankError::Input { name: name.to_string(), reason: reason.into() }
    }

    /// This error boxed, for an executor that knows nothing of ranks (a late argument's
    /// arrival, [`super::Rank::execute_overlapped`]); [`RankError::unbox`] takes it back.
    pub fn boxed(self) -> Box<dyn std::error::Error + Send + Sync> {
        Box::new(self)
    }

    /// A boxed error an executor returned: this rank's own error where it is one
    /// ([`RankError::boxed`]), else the executor's as a [`RankError::Run`].
    pub fn unbox(e: Box<dyn std::error::Error + Send + Sync>) -> RankError {
        e.downcast::<RankError>().map_or_else(|e| RankError::Run(e.to_string()), |e| *e)
    }

    /// A [`RankError::Internal`].
    pub(crate) fn internal(what: impl Into<String>) -> RankError {
        RankError::Internal(what.into())
    }
}

/// A distributed run's failure as every rank reports it: the lowest rank that failed, the kind
/// of failure and that rank's message ([`super::shared_failure`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", rank.map(|r| format!("rank {r}: ")).unwrap_or_default())]
pub struct JobError {
    /// The lowest failed rank (`None`: not known, the ranks could not exchange it).
    pub rank: Option<usize>,
    /// The kind of failure.
    pub cause: Cause,
    /// That rank's message.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of rank error keeps its cause across ranks (the byte `shared_failure` sends).
    #[test]
    fn causes_cross_ranks_as_bytes() {
        let errors = [
            RankError::Plan(PlanError::Local { rank: 1, message: "extent 0".into() }),
            RankError::Comm(CommError::Call { call: "MPI_Bcast", text: "truncated".into() }),
            RankError::input("x", "no value given"),
            RankError::Data("cannot read `x.npy`".into()),
            RankError::Run("index 9 is outside [0:8]".into()),
            RankError::Combine("integer overflow".into()),
            RankError::SettingDiffers { variable: "STRATA_REPRODUCIBLE" },
            RankError::Diverged("the programs differ"),
            RankError::internal("no final stage"),
        ];
        let mut seen = Vec::new();
        for e in &errors {
            let c = e.cause();
            assert_eq!(Cause::from_byte(c.byte()), c, "{e}");
            assert!(!seen.contains(&c), "two kinds share {c:?}");
            seen.push(c);
        }
        assert_eq!(Cause::from_byte(0), Cause::Unknown);
        assert_eq!(Cause::from_byte(200), Cause::Unknown);
    }

    /// The message names the rank when it is known, and the boxed form comes back as itself.
    #[test]
    fn job_errors_name_the_rank_and_unbox() {
        let e = JobError { rank: Some(2), cause: Cause::Input, message: "`x`: no value given".into() };
        assert_eq!(e.to_string(), "rank 2: `x`: no value given");
        let e = JobError { rank: None, cause: Cause::Unknown, message: "another rank failed".into() };
        assert_eq!(e.to_string(), "another rank failed");
        let back = RankError::unbox(RankError::input("x", "late").boxed());
        assert!(matches!(back, RankError::Input { ref name, .. } if name == "x"), "{back}");
        let foreign: Box<dyn std::error::Error + Send + Sync> = "a compiler failed".into();
        assert!(matches!(RankError::unbox(foreign), RankError::Run(m) if m == "a compiler failed"));
    }
}
