//! The parts of a [`super::Plan`]: distributed parameters, partial results, reads through tables.

use strata_ir::{DimName, Interval, Value};

/// One block-distributed parameter of the entry.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockParam {
    /// Parameter index in the entry.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Written by the program (`out`), or the entry's result.
    pub output: bool,
    /// The position of its block level.
    pub level: usize,
    /// The block level's name.
    pub dim: DimName,
    /// The block level's global interval.
    pub global: Interval,
    /// The block each rank owns.
    pub owned: Vec<Interval>,
    /// What each rank holds: its block and the halo it reads of its neighbors' blocks.
    pub held: Vec<Interval>,
    /// What each rank reads of it (within `held`, which also has the rank's whole block; an
    /// empty interval when it reads nothing).
    pub read: Vec<Interval>,
    /// Sparse or ragged: held as storage, exactly the rank's own rows (no exchange).
    pub stored: bool,
    /// Its elements are scalars (not tuples or tensors).
    pub scalar: bool,
    /// Whether a rank reads beyond its block below it and above it: on some rank of the
    /// plan's (at 1 rank, of a 2-rank plan). Every rank then holds a strip on that side
    /// ([`crate::Strips`]), empty where it reads none, so all ranks' local programs, at every
    /// rank count, have one structure.
    pub reaches: [bool; 2],
}

impl BlockParam {
    /// The messages of the halo exchange: `(from, to, rows)` for every rank's rows another
    /// rank holds.
    pub fn messages(&self) -> Vec<(usize, usize, Interval)> {
        (0..self.held.len()).flat_map(|to| self.received_by(to)).collect()
    }

    /// The messages of the halo exchange rank `to` receives, by sender.
    pub fn received_by(&self, to: usize) -> impl Iterator<Item = (usize, usize, Interval)> + '_ {
        let held = self.held[to];
        self.owned.iter().enumerate().filter(move |&(from, _)| from != to).filter_map(move |(from, owned)| {
            let rows = held.intersect(*owned);
            (!rows.is_empty()).then_some((from, to, rows))
        })
    }

    /// The messages of the halo exchange rank `from` sends, by receiver.
    pub fn sent_by(&self, from: usize) -> impl Iterator<Item = (usize, usize, Interval)> + '_ {
        let owned = self.owned[from];
        self.held.iter().enumerate().filter(move |&(to, _)| to != from).filter_map(move |(to, held)| {
            let rows = held.intersect(owned);
            (!rows.is_empty()).then_some((from, to, rows))
        })
    }
}

/// The entry's result is a collective (the end of a stage, [`crate::stages`]): a `map_reduce`
/// over block levels, or a `scan` along one. Each rank computes its part over the rows it owns.
#[derive(Clone, Debug)]
pub struct Partial {
    /// The `map_reduce` or `scan`.
    pub value: Value,
    /// Each operand level cut to the owned rows: operand position, level name, each rank's rows.
    pub owned: Vec<(usize, DimName, Vec<Interval>)>,
    /// Where the ranks start from.
    pub start: PartialStart,
}

/// The initial value of each rank's part of a collective.
#[derive(Clone, Debug)]
pub enum PartialStart {
    /// A reduction: rank 0 folds from the `map_reduce`'s initial value, the others from this
    /// identity.
    Identity(strata_ir::Literal),
    /// A reduction in an order that does not depend on the rank count ([`super::reproducible`]): each
    /// rank folds every row it owns from the identity (its partial keeps the row level, the
    /// `map_reduce`'s output led by the row letter), and the rows are combined in a fixed
    /// pairwise tree over the global rows, the initial value last ([`crate::combine::rows_tree`]).
    Rows {
        /// The folding operation's identity.
        identity: strata_ir::Literal,
        /// The `map_reduce`'s initial value.
        init: strata_ir::Literal,
        /// The einsum letter of the rows.
        letter: char,
    },
    /// A scan: the ranks holding rows scan them in turn (`chain`, in the scan's direction);
    /// the first starts from the `scan`'s initial value, every later one from the carry
    /// parameter (the stage's last, [`crate::stages::split`]).
    Carry {
        /// The carry parameter.
        param: Value,
        /// The ranks holding rows, in the order they scan.
        chain: Vec<usize>,
        /// The scan's direction.
        forward: bool,
        /// The payload is `acc ⊕ x` with an exact `⊕` (on integers or booleans) and its
        /// identity: the ranks scan their rows at once from the identity, and each adds the
        /// ranks' last states before it (combined in chain order) to its rows afterwards —
        /// the same bits as one process, without the chain's wait.
        monoid: Option<(strata_ir::BinaryOp, strata_ir::Literal)>,
    },
}

/// A neighbor shift (or a `gather`) whose source is block-distributed: the source rows a rank
/// reads are the table's entries at the rows it needs, so they are planned at run time
/// ([`crate::indirect`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IndirectShift {
    /// The shifted value.
    pub value: String,
    /// Its function.
    pub func: String,
    /// The table (a parameter of the entry).
    pub table: String,
    /// The table's parameter index in the entry.
    pub table_param: usize,
    /// The source's block dimension.
    pub dim: DimName,
    /// What reads through the table.
    pub kind: Indirection,
}

/// What reads a distributed source through a table of coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indirection {
    /// A neighbor shift: `-1` is the skip value (no row), table rows a rank does not need are
    /// held as skips.
    Neighbor,
    /// A `gather`: every entry is a coordinate (`-1` too), the indices' rows a rank holds are
    /// real rows.
    Gather,
}
