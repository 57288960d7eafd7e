//! The distribution plan of an entry on a number of ranks, derived from the interval types.
//!
//! Each rank *owns* the block of every block-distributed value given by [`block_partition`] of
//! its interval. What a rank must *hold* follows backwards from what it writes: an output's
//! owned block, moved back through every shift (a shift by `o` along `I` reads `o` further),
//! unchanged through elementwise ops, through calls into their bodies. A parameter is held on
//! the hull of its owned block and what the rank reads of it; the part another rank owns is
//! received from it before the run — the halo exchange, whose widths are therefore known from
//! the types alone. Each rank then runs its *local program*: the entry specialized at those
//! intervals ([`Plan::local_module`]), with `distribute` a subset of its replicated operand and
//! `collect` into an output a gather of the owned blocks after the run.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use strata_entity::Handle;
use strata_ir::{
    DimName, ExprKind, Function, Interval, LevelFormat, Module, Op, ParamMode, Statement, TensorType, Type, TypeArena,
    Value,
};
use strata_runtime::dist::block_partition;

use crate::rows::{hull, RowSet, Rows};

/// Why an entry cannot run distributed (yet).
#[derive(Debug, thiserror::Error)]
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

const SUPPORTED: &str =
    "ranks run elementwise ops, storage conversions, cartesian shifts, concats along named dimensions, neighbor \
     reductions, scans along local dimensions, calls, `distribute` and `collect` into an output";

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

/// The plan of one entry on `ranks` ranks.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The entry's name.
    pub entry: String,
    /// The number of ranks.
    pub ranks: usize,
    /// Block-distributed parameters (and outputs gathered from `collect`), in parameter order.
    pub params: Vec<BlockParam>,
    /// Each rank's needed rows (their hull) of each value whose local form depends on them,
    /// by function and value: a `distribute` (the rank's subset of its replicated operand), a
    /// `concat` along a block level (joining only the operands those rows reach) and a `subset`
    /// cutting a block level (to those rows).
    narrowed: HashMap<(Handle<Function>, Value), Vec<Interval>>,
    /// Outputs written from `collect(x)`: parameter index → the block level `x` has.
    collected: HashMap<usize, (usize, DimName, Interval)>,
    /// The entry returns a reduction over a block level: each rank computes its partial.
    pub partial: Option<Partial>,
    /// Neighbor shifts of block-distributed sources: what they read is planned at run time
    /// from the tables' entries ([`crate::indirect`]).
    pub indirect: Vec<IndirectShift>,
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
    /// A reduction in an order that does not depend on the rank count ([`reproducible`]): each
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

/// Needed rows per block dimension, for one rank.
type Need<R> = BTreeMap<DimName, R>;

fn merge<R: Rows>(into: &mut Need<R>, from: &Need<R>) {
    for (d, rows) in from {
        into.entry(d.clone()).and_modify(|x| x.add(rows)).or_insert_with(|| rows.clone());
    }
}

/// What the analysis knows of the neighbor tables: nothing at compile time (the rows a
/// table reaches are planned at run time, [`crate::indirect`]), their entries at run time.
pub trait Tables {
    /// How rows are counted.
    type R: Rows;
    /// The rows of the source dimension that the table (entry parameter `param`) reaches
    /// from its rows `dst` (`None`: all) through neighbor `neighbor` (`None`: all), or `None`
    /// when not known now.
    fn reached(&mut self, param: usize, dst: Option<&Self::R>, neighbor: Option<i64>) -> Option<Self::R>;
}

/// The compile-time analysis: intervals, tables unknown.
struct FromTypes;

impl Tables for FromTypes {
    type R = Interval;
    fn reached(&mut self, _: usize, _: Option<&Interval>, _: Option<i64>) -> Option<Interval> {
        None
    }
}

fn tensor(types: &TypeArena, ty: Handle<Type>) -> Option<&TensorType> {
    match &types[ty] {
        Type::Tensor(t) => Some(t),
        _ => None,
    }
}

/// A sparse or ragged parameter is held as storage (`Value::Stored`), which the halo exchange
/// and the inspector do not cut or fill: each rank holds exactly its own rows of it, read from
/// the file ([`strata_runtime::sparse_rows`]). So its block level must be its rows (the first
/// level) and no shift may reach beyond them. (A sparse or ragged result is gathered on rank 0
/// as storage: `job::gather_stored`.)
fn check_stored_rows(
    types: &TypeArena,
    ty: Handle<Type>,
    p: &BlockParam,
    indirect: &[IndirectShift],
) -> Result<(), PlanError> {
    let Some(t) = tensor(types, ty) else { return Ok(()) };
    if t.levels.iter().all(|l| l.format.is_dense_like()) {
        return Ok(());
    }
    let fail = |reason| Err(PlanError::StoredRows { name: p.name.clone(), reason });
    if p.level != 0 {
        return fail("its block level must be its first (the rows)");
    }
    if p.held != p.owned || indirect.iter().any(|s| s.dim == p.dim) {
        return fail(
            "no shift along its block level may read other ranks' rows (shift a dense value computed from it instead)",
        );
    }
    Ok(())
}

/// The block level of a type: position, name, interval.
pub(crate) fn block_level(types: &TypeArena, ty: Handle<Type>) -> Option<(usize, DimName, Interval)> {
    let t = tensor(types, ty)?;
    t.levels
        .iter()
        .position(|l| l.format == LevelFormat::Block)
        .map(|i| (i, t.levels[i].name.clone(), t.levels[i].interval))
}

/// The name of level `pos` of a type when it is a block level.
pub(crate) fn block_level_named(types: &TypeArena, ty: Handle<Type>, pos: usize) -> Option<DimName> {
    let l = tensor(types, ty)?.levels.get(pos)?;
    (l.format == LevelFormat::Block).then(|| l.name.clone())
}

/// The team size every team type of the entry (and what it calls) agrees on (`None`: no
/// team; [`strata_ir::Team::WORLD`]: `team = world`).
pub fn team_of(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
) -> Result<Option<(u32, String)>, PlanError> {
    let mut found: Option<(u32, String)> = None;
    for fh in module.reachable(entry) {
        let f = &module.functions[fh];
        for (_, e) in f.exprs.iter() {
            let team = match &e.kind {
                ExprKind::Op(Op::Distribute { ranks, .. }) => Some(*ranks),
                _ => tensor(types, e.ty).and_then(|t| t.placement.team).map(|t| t.ranks),
            };
            let Some(team) = team else { continue };
            let show = |r: u32| strata_ir::Team { ranks: r }.to_string();
            match &found {
                Some((r, n)) if *r != team => {
                    return Err(PlanError::Teams {
                        a: format!("{} (`%{n}`)", show(*r)),
                        b: format!("{} (`%{}` in `@{}`)", show(team), e.name, f.name),
                    })
                }
                Some(_) => {}
                None => found = Some((team, e.name.clone())),
            }
        }
    }
    Ok(found)
}

struct Analysis<'m, T: Tables> {
    module: &'m Module,
    types: &'m TypeArena,
    ranks: usize,
    rank: usize,
    tables: &'m mut T,
    /// Values bound to an entry parameter (through calls): the parameter's index.
    bound: HashMap<(Handle<Function>, Value), usize>,
    /// The entry (whose parameters `bound` names).
    bound_entry: Handle<Function>,
    /// Neighbor shifts of a block-distributed source, met on the way.
    indirect: Vec<IndirectShift>,
    /// The entry's returned reduction over block levels, if any.
    partial: Option<Value>,
    narrowed: HashMap<(Handle<Function>, Value), Interval>,
    collected: HashMap<usize, (usize, DimName, Interval)>,
}

impl<T: Tables> Analysis<'_, T> {
    fn owned(&self, iv: Interval) -> Interval {
        block_partition(iv, self.ranks as u32)[self.rank]
    }

    /// Whether a neighbor shift reads a block-distributed source through `table`.
    fn shifts_distributed(&self, f: &Function, arg: Value, table: Value) -> bool {
        let source =
            tensor(self.types, f.exprs[table].ty).and_then(|t| t.levels.iter().find_map(|l| l.name.table_source()));
        block_level(self.types, f.exprs[arg].ty).is_some_and(|(_, d, _)| Some(d) == source)
    }

    /// What a neighbor shift of a block-distributed source needs when its result `v` must
    /// hold `n`: of the table, the destination rows needed (if the table is distributed); of
    /// the source, the rows those table rows reach — known from the entries at run time only.
    /// Returns the needs of the source and of the table.
    fn neighbor_shift(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        arg: Value,
        table: Value,
        neighbor: Option<i64>,
        n: &Need<T::R>,
    ) -> Result<[Need<T::R>; 2], PlanError> {
        let f = &self.module.functions[fh];
        let tt = tensor(self.types, f.exprs[table].ty).expect("a verified table");
        let dst = tt.levels.iter().find(|l| l.name.table_source().is_none()).expect("a verified table").clone();
        self.through_table(fh, v, arg, table, &dst, neighbor, Indirection::Neighbor, n)
    }

    /// The needs of a read of the block-distributed `arg` through `table` (an entry parameter
    /// holding coordinates of `arg`'s block dimension, column `column`) at the rows of the
    /// table's `dst` level that `n` needs: the table rows (if it is distributed), and the
    /// source rows they reach (at run time; at compile time recorded as an
    /// [`IndirectShift`]).
    #[allow(clippy::too_many_arguments)]
    fn through_table(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        arg: Value,
        table: Value,
        dst: &strata_ir::Level,
        column: Option<i64>,
        kind: Indirection,
        n: &Need<T::R>,
    ) -> Result<[Need<T::R>; 2], PlanError> {
        let f = &self.module.functions[fh];
        let neighbor = column;
        let Some(&param) = self.bound.get(&(fh, table)) else {
            let op = match &f.exprs[v].kind {
                ExprKind::Op(op) => op.name(),
                _ => "shift",
            };
            return Err(PlanError::Unsupported {
                op: op.to_string(),
                name: f.exprs[v].name.clone(),
                func: f.name.clone(),
                hint: match kind {
                    Indirection::Neighbor => {
                        "the neighbor table of a distributed source must be a parameter of the entry (its entries \
                         say which rows each rank fetches)"
                    }
                    Indirection::Gather => {
                        "the indices of a gather from a distributed source must be a parameter of the entry (its \
                         entries say which rows each rank fetches)"
                    }
                },
            });
        };
        let (_, src, src_iv) = block_level(self.types, f.exprs[arg].ty).expect("a distributed source");
        let rows = match dst.format {
            LevelFormat::Block => match n.get(&dst.name) {
                Some(r) => Some(r.clone()),
                None => return Ok([Need::new(), Need::new()]),
            },
            _ => None,
        };
        let reached = match self.tables.reached(param, rows.as_ref(), neighbor) {
            Some(r) => r,
            None => {
                let table_name = self.module.functions[self.bound_entry].params[param];
                let shift = IndirectShift {
                    value: f.exprs[v].name.clone(),
                    func: f.name.clone(),
                    table: self.module.functions[self.bound_entry].exprs[table_name].name.clone(),
                    table_param: param,
                    dim: src.clone(),
                    kind,
                };
                if !self.indirect.contains(&shift) {
                    self.indirect.push(shift);
                }
                T::R::of(self.owned(src_iv))
            }
        };
        let mut to_arg: Need<T::R> =
            n.iter().filter(|(d, _)| **d != dst.name).map(|(d, r)| (d.clone(), r.clone())).collect();
        to_arg.insert(src, reached);
        let to_table = rows.map(|r| Need::from([(dst.name.clone(), r)])).unwrap_or_default();
        Ok([to_arg, to_table])
    }

    /// The needs of a `gather`'s source and indices when its result `v` must hold `n`. The
    /// indices are `tensor<index, B, C>`: a batch level `B` (distributed or not) and the
    /// coordinates `C`. A source distributed along an indexed dimension is read through the
    /// indices as through a neighbor table (the rows their entries reach, at run time); along
    /// a sliced (named) dimension, the result keeps that dimension and the rows pass through.
    fn gather(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        source: Value,
        indices: Value,
        coordinates: &[u32],
        n: &Need<T::R>,
    ) -> Result<[Need<T::R>; 2], PlanError> {
        let f = &self.module.functions[fh];
        let unsupported = |hint| PlanError::Unsupported {
            op: "gather".into(),
            name: f.exprs[v].name.clone(),
            func: f.name.clone(),
            hint,
        };
        let it = tensor(self.types, f.exprs[indices].ty).expect("verified indices");
        let idx_block = block_level(self.types, f.exprs[indices].ty);
        let src_block = block_level(self.types, f.exprs[source].ty);
        if src_block.is_none() && idx_block.is_none() {
            return Ok([Need::new(), Need::new()]);
        }
        if it.levels.len() != 2 || idx_block.as_ref().is_some_and(|(pos, _, _)| *pos != 0) {
            return Err(unsupported(
                "a gather over distributed operands takes indices with one batch level (distributed or not) and \
                 the coordinate level",
            ));
        }
        let batch = it.levels[0].clone();
        let batch_rows = |n: &Need<T::R>| match &idx_block {
            Some((_, b, _)) => n.get(b).map(|r| Need::from([(b.clone(), r.clone())])).unwrap_or_default(),
            None => Need::new(),
        };
        match src_block {
            Some((pos, _, _)) if coordinates.contains(&(pos as u32)) => {
                let k = coordinates.iter().position(|&c| c as usize == pos).expect("indexed") as i64;
                // The rank gathers at every index row it holds, so the source rows of all the
                // rows it owns are fetched (not only of those its results need).
                let mut n = n.clone();
                if let (Some((_, b, iv)), Some(rows)) = (&idx_block, n.get_mut(&batch.name)) {
                    debug_assert_eq!(*b, batch.name);
                    rows.add(&T::R::of(self.owned(*iv)));
                }
                self.through_table(fh, v, source, indices, &batch, Some(k), Indirection::Gather, &n)
            }
            Some((_, dim, _)) if dim.position().is_some() => Err(unsupported(
                "a gather keeps a positional distributed dimension under another position; name the dimension",
            )),
            // Distributed along a sliced dimension: the result keeps it, its rows pass through.
            Some((_, dim, _)) => {
                let to_source = n.get(&dim).map(|r| Need::from([(dim.clone(), r.clone())])).unwrap_or_default();
                Ok([to_source, batch_rows(n)])
            }
            // A replicated source: each rank gathers its rows of the indices.
            None => Ok([Need::new(), batch_rows(n)]),
        }
    }

    /// The needs of `func`'s parameters when its statements must produce `seeds`.
    fn function(
        &mut self,
        fh: Handle<Function>,
        seeds: HashMap<Value, Need<T::R>>,
    ) -> Result<Vec<Need<T::R>>, PlanError> {
        let f = &self.module.functions[fh];
        let mut need: HashMap<Value, Need<T::R>> = seeds;
        for (_, stmt) in f.body.iter().rev() {
            let Statement::Let(v) = stmt else { continue };
            let e = &f.exprs[*v];
            let ExprKind::Op(op) = &e.kind else { continue };
            let Some(n) = need.get(v).cloned() else { continue };
            let unsupported = || PlanError::Unsupported {
                op: op.name().to_string(),
                name: e.name.clone(),
                func: f.name.clone(),
                hint: SUPPORTED,
            };
            let distributed = |x: &Value| block_level(self.types, f.exprs[*x].ty).is_some();
            let mut give = |x: Value, n: &Need<T::R>| merge(need.entry(x).or_default(), n);
            match op {
                Op::CartesianShift { arg, dim, offset } => {
                    let mut m = n.clone();
                    if let Some(rows) = m.get_mut(dim) {
                        *rows = rows.shifted(*offset);
                    }
                    give(*arg, &m);
                }
                Op::ShiftInit { arg, table } | Op::UnstructuredShift { arg, table, .. }
                    if self.shifts_distributed(f, *arg, *table) =>
                {
                    let neighbor = match op {
                        Op::UnstructuredShift { neighbor, .. } => Some(*neighbor),
                        _ => None,
                    };
                    let [to_arg, to_table] = self.neighbor_shift(fh, *v, *arg, *table, neighbor, &n)?;
                    give(*arg, &to_arg);
                    give(*table, &to_table);
                }
                Op::Call { func, args, result } => {
                    for (p, a) in self.module.functions[*func].params.iter().zip(args) {
                        if let Some(&i) = self.bound.get(&(fh, *a)) {
                            self.bound.insert((*func, *p), i);
                        }
                    }
                    let callee = &self.module.functions[*func];
                    let mut seeds = HashMap::new();
                    for (_, s) in callee.body.iter() {
                        // What this value needs, the callee's result it is needs.
                        if let Statement::Return(rs) = s {
                            seeds.insert(rs[*result as usize], n.clone());
                        }
                    }
                    let params = self.function(*func, seeds)?;
                    for (a, p) in args.iter().zip(params) {
                        give(*a, &p);
                    }
                }
                Op::Distribute { arg, dim, .. } => {
                    let iv = n.get(dim).map_or(Interval::new(0, 0), |r| r.hull());
                    let slot = self.narrowed.entry((fh, *v)).or_insert(iv);
                    *slot = hull(*slot, iv);
                    give(*arg, &Need::new());
                }
                // Cut along a block level: on a rank, to the rows its users need (the rank's
                // operand holds those, not the whole global cut).
                Op::Subset { arg, domain } => {
                    for (dim, cut) in domain {
                        if let Some(rows) = n.get(dim) {
                            let iv = rows.hull().intersect(*cut);
                            let slot = self.narrowed.entry((fh, *v)).or_insert(iv);
                            *slot = hull(*slot, iv);
                        }
                    }
                    give(*arg, &n);
                }
                Op::Concat { args, dim, mode: _ } => {
                    let along_block =
                        args.iter().any(|a| block_level(self.types, f.exprs[*a].ty).is_some_and(|(_, d, _)| &d == dim));
                    // Positional pieces are placed one after another: the rows keep their
                    // numbers only when each piece starts where the one before ends.
                    let renumbered = dim.position().is_some()
                        && args.windows(2).any(|w| {
                            let at = |a: Value| tensor(self.types, f.exprs[a].ty).and_then(|t| t.level(dim));
                            match (at(w[0]), at(w[1])) {
                                (Some(a), Some(b)) => a.interval.stop != b.interval.start,
                                _ => true,
                            }
                        });
                    if along_block && renumbered {
                        return Err(PlanError::Unsupported {
                            op: op.name().to_string(),
                            name: e.name.clone(),
                            func: f.name.clone(),
                            hint: "a concat along a positional block level of pieces that are not contiguous \
                                   renumbers the rows; contiguous pieces (or a named level) keep them and run \
                                   distributed",
                        });
                    }
                    match n.get(dim).cloned() {
                        // Joined along a block level: each operand's part of the rows; the
                        // rank's local concat joins only the operands they reach.
                        Some(rows) if along_block => {
                            let iv = rows.hull();
                            let slot = self.narrowed.entry((fh, *v)).or_insert(iv);
                            *slot = hull(*slot, iv);
                            for a in args {
                                let Some(at) = tensor(self.types, f.exprs[*a].ty).and_then(|t| t.level(dim)) else {
                                    continue;
                                };
                                let part = rows.within(at.interval);
                                if !part.hull().is_empty() {
                                    let mut m = n.clone();
                                    m.insert(dim.clone(), part);
                                    give(*a, &m);
                                }
                            }
                        }
                        _ => {
                            for a in args {
                                give(*a, &n);
                            }
                        }
                    }
                }
                Op::Gather { source, indices, coordinates, mode: _ } => {
                    let [to_source, to_indices] = self.gather(fh, *v, *source, *indices, coordinates, &n)?;
                    give(*source, &to_source);
                    give(*indices, &to_indices);
                }
                Op::MapReduce { args, subscripts, init, func: _ } => {
                    let contracted = crate::stages::contracted_blocks(f, self.types, op);
                    if !contracted.is_empty() && Some(*v) != self.partial {
                        return Err(PlanError::Unsupported {
                            op: op.name().to_string(),
                            name: e.name.clone(),
                            func: f.name.clone(),
                            hint: "a reduction over a block level runs at the top of the entry, where the \
                                   ranks combine their partials (not inside a called function)",
                        });
                    }
                    let out = tensor(self.types, e.ty).map(|t| t.levels.clone()).unwrap_or_default();
                    for (a, letters) in args.iter().zip(&subscripts.inputs) {
                        let Some(at) = tensor(self.types, f.exprs[*a].ty) else { continue };
                        let mut m = Need::new();
                        for (l, c) in at.levels.iter().zip(letters) {
                            if l.format != LevelFormat::Block {
                                continue;
                            }
                            let iv = match subscripts.output.iter().position(|o| o == c) {
                                // Output rows map to the operand's rows at the same offset.
                                Some(p) => {
                                    let o = &out[p];
                                    let Some(need) = n.get(&o.name) else { continue };
                                    need.shifted(l.interval.start - o.interval.start)
                                }
                                // Contracted: the rows the rank owns.
                                None => T::R::of(self.owned(l.interval)),
                            };
                            m.insert(l.name.clone(), iv);
                        }
                        give(*a, &m);
                    }
                    if let strata_ir::Init::Value(i) = init {
                        give(*i, &n);
                    }
                }
                Op::Scan { dim, args, init, .. } => {
                    // Along a block level: only as a stage's collective (rank after rank).
                    let along_block =
                        args.iter().any(|a| block_level(self.types, f.exprs[*a].ty).is_some_and(|(_, d, _)| &d == dim));
                    if along_block && Some(*v) != self.partial {
                        return Err(unsupported());
                    }
                    for a in args {
                        give(*a, &n);
                    }
                    if let strata_ir::Init::Value(i) = init {
                        give(*i, &n);
                    }
                }
                Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Select { .. }
                | Op::Cast { .. }
                | Op::MakeTuple { .. }
                | Op::TupleGet { .. }
                | Op::CanDeref { .. }
                | Op::Reduce { .. }
                | Op::ShiftApply { .. }
                | Op::Map { .. }
                | Op::Pos { .. }
                | Op::AddDim { .. }
                | Op::DropDim { .. }
                | Op::Convert { .. }
                | Op::Constant { .. } => {
                    for a in op.operands() {
                        give(a, &n);
                    }
                }
                _ if op.operands().iter().any(distributed) => return Err(unsupported()),
                _ => {}
            }
        }
        Ok(f.params.iter().map(|p| need.remove(p).unwrap_or_default()).collect())
    }
}

/// The entry's returned reduction over block levels, with each contracted level's blocks.
/// Whether reductions over block levels are asked to give the same bits at every rank count
/// (`$STRATA_REPRODUCIBLE=1`, read once): [`PartialStart::Rows`].
pub fn reproducible() -> bool {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASKED.get_or_init(|| std::env::var("STRATA_REPRODUCIBLE").is_ok_and(|v| v == "1"))
}

fn partial_of(module: &Module, types: &TypeArena, entry: Handle<Function>, ranks: usize) -> Option<Partial> {
    let f = &module.functions[entry];
    let value = f.body.iter().find_map(|(_, s)| match s {
        Statement::Return(vs) if vs.len() == 1 => Some(vs[0]),
        _ => None,
    })?;
    if let ExprKind::Op(op @ Op::Scan { func, args, forward, .. }) = &f.exprs[value].kind {
        let dim = crate::stages::scanned_block(f, types, op, value)?;
        let iv = tensor(types, f.exprs[value].ty)?.level(&dim)?.interval;
        let blocks = block_partition(iv, ranks as u32);
        let owned = (0..args.len())
            .filter(|&k| tensor(types, f.exprs[args[k]].ty).is_some_and(|t| t.level(&dim).is_some()))
            .map(|k| (k, dim.clone(), blocks.clone()))
            .collect();
        let mut chain: Vec<usize> = (0..ranks).filter(|&r| !blocks[r].is_empty()).collect();
        if !forward {
            chain.reverse();
        }
        let param = *f.params.last()?;
        let monoid = strata_ir::element_scalar(types, f.exprs[value].ty)
            .filter(|s| s.is_integer() || *s == strata_ir::Scalar::Bool)
            .and_then(|s| crate::stages::folding_op(module, *func, s));
        let start = PartialStart::Carry { param, chain, forward: *forward, monoid };
        return Some(Partial { value, owned, start });
    }
    let ExprKind::Op(op @ Op::MapReduce { func, args, init, subscripts: _ }) = &f.exprs[value].kind else {
        return None;
    };
    let contracted = crate::stages::contracted_blocks(f, types, op);
    if contracted.is_empty() {
        return None;
    }
    let scalar = strata_ir::element_scalar(types, f.exprs[value].ty)?;
    let (_, identity) = crate::stages::folding_op(module, *func, scalar)?;
    let letter = contracted[0].2;
    let owned = contracted
        .into_iter()
        .map(|(k, name, _)| {
            let iv = tensor(types, f.exprs[args[k]].ty).and_then(|t| t.level(&name)).map(|l| l.interval);
            (k, name, block_partition(iv.unwrap_or(Interval::new(0, 0)), ranks as u32))
        })
        .collect::<Vec<_>>();
    // The rows' tree needs one partition of one row dimension and a literal initial value.
    let start = match (init, owned.first()) {
        (strata_ir::Init::Literal(init), Some((_, name, blocks)))
            if reproducible() && owned.iter().all(|(_, n, b)| n == name && b == blocks) =>
        {
            PartialStart::Rows { identity, init: init.clone(), letter }
        }
        _ => PartialStart::Identity(identity),
    };
    Some(Partial { value, owned, start })
}

/// What one rank needs: each entry parameter's rows per block dimension, each `distribute`'s
/// rows, the outputs written from `collect`, and the neighbor shifts planned at run time.
struct RankNeeds<R> {
    params: Vec<Need<R>>,
    distribute: HashMap<(Handle<Function>, Value), Interval>,
    collected: HashMap<usize, (usize, DimName, Interval)>,
    indirect: Vec<IndirectShift>,
}

/// Analyses `entry` backwards from what `rank` writes.
fn rank_needs<T: Tables>(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    ranks: usize,
    rank: usize,
    partial: Option<Value>,
    tables: &mut T,
) -> Result<RankNeeds<T::R>, PlanError> {
    let f = &module.functions[entry];
    let mut a = Analysis {
        module,
        types,
        ranks,
        rank,
        tables,
        bound: f.params.iter().enumerate().map(|(i, &p)| ((entry, p), i)).collect(),
        bound_entry: entry,
        indirect: Vec::new(),
        partial,
        narrowed: HashMap::new(),
        collected: HashMap::new(),
    };
    let mut seeds: HashMap<Value, Need<T::R>> = HashMap::new();
    for (_, s) in f.body.iter() {
        match s {
            Statement::Assign { target, domain, value } => {
                let (ty, vty) = (f.exprs[*target].ty, f.exprs[*value].ty);
                // The value whose owned block the statement writes (a collected one's).
                let (v, block) = match (&f.exprs[*value].kind, block_level(types, ty)) {
                    (ExprKind::Op(Op::Collect { arg }), None) => {
                        let block = block_level(types, f.exprs[*arg].ty).ok_or_else(|| PlanError::Unsupported {
                            op: "collect".into(),
                            name: f.exprs[*value].name.clone(),
                            func: f.name.clone(),
                            hint: SUPPORTED,
                        })?;
                        a.collected.insert(target.index(), block.clone());
                        (*arg, Some(block))
                    }
                    (_, b) => (*value, b.or_else(|| block_level(types, vty))),
                };
                if let Some((_, dim, iv)) = block {
                    let mut owned = a.owned(iv);
                    if let Some(dom) = domain.as_ref().and_then(|d| d.iter().find(|(n, _)| *n == dim)) {
                        owned = owned.intersect(dom.1);
                    }
                    merge(seeds.entry(v).or_default(), &Need::from([(dim, T::R::of(owned))]));
                }
            }
            Statement::Return(vs) => {
                for v in vs {
                    let need = match block_level(types, f.exprs[*v].ty) {
                        Some((_, dim, iv)) => Need::from([(dim.clone(), T::R::of(a.owned(iv)))]),
                        None => Need::new(),
                    };
                    seeds.insert(*v, need);
                }
            }
            Statement::Let(_) => {}
        }
    }
    let params = a.function(entry, seeds)?;
    Ok(RankNeeds { params, distribute: a.narrowed, collected: a.collected, indirect: a.indirect })
}

impl Plan {
    /// Plans `entry` (verified; `types` its extended arena) on `ranks` ranks.
    pub fn new(module: &Module, types: &TypeArena, entry: Handle<Function>, ranks: usize) -> Result<Plan, PlanError> {
        if let Some((team, name)) = team_of(module, types, entry)? {
            if team != strata_ir::Team::WORLD && team as usize != ranks {
                return Err(PlanError::TeamSize { name, team, ranks });
            }
        }
        let f = &module.functions[entry];
        let partial = partial_of(module, types, entry, ranks);
        let mut params: Vec<BlockParam> = Vec::new();
        let mut narrowed: HashMap<(Handle<Function>, Value), Vec<Interval>> = HashMap::new();
        let mut collected = HashMap::new();
        let mut indirect = Vec::new();
        let mut held: Vec<Vec<Need<Interval>>> = Vec::new();
        for rank in 0..ranks {
            let value = partial.as_ref().map(|p| p.value);
            let needs = rank_needs(module, types, entry, ranks, rank, value, &mut FromTypes)?;
            held.push(needs.params);
            for (k, iv) in needs.distribute {
                narrowed.entry(k).or_insert_with(|| vec![Interval::new(0, 0); ranks])[rank] = iv;
            }
            collected = needs.collected;
            indirect = needs.indirect;
        }
        for (i, &p) in f.params.iter().enumerate() {
            let e = &f.exprs[p];
            let output = e.kind == ExprKind::Param(ParamMode::Out);
            let block = block_level(types, e.ty).or_else(|| collected.get(&p.index()).cloned());
            let Some((level, dim, global)) = block else { continue };
            let owned = block_partition(global, ranks as u32);
            let read: Vec<Interval> = (0..ranks)
                .map(|r| match output {
                    true => owned[r],
                    false => held[r][i].get(&dim).copied().unwrap_or(owned[r]).intersect(global),
                })
                .collect();
            let held = (0..ranks).map(|r| hull(owned[r], read[r])).collect();
            let stored = tensor(types, e.ty).is_some_and(|t| t.levels.iter().any(|l| !l.format.is_dense_like()));
            let scalar = strata_ir::element_scalar(types, e.ty).is_some();
            let param = BlockParam {
                index: i,
                name: e.name.clone(),
                output,
                level,
                dim,
                global,
                owned,
                held,
                read,
                stored,
                scalar,
            };
            check_stored_rows(types, e.ty, &param, &indirect)?;
            params.push(param);
        }
        Ok(Plan { entry: f.name.clone(), ranks, params, narrowed, collected, partial, indirect })
    }

    /// The rows of each block-distributed input `rank` reads, with the neighbor tables'
    /// entries known (`tables`): by [`BlockParam`], in the plan's order (outputs: their
    /// blocks). Also narrows `rank`'s `distribute`s to what it reads.
    pub fn needs_at_run_time<T: Tables<R = RowSet>>(
        &mut self,
        module: &Module,
        types: &TypeArena,
        entry: Handle<Function>,
        rank: usize,
        tables: &mut T,
    ) -> Result<Vec<RowSet>, PlanError> {
        let value = self.partial.as_ref().map(|p| p.value);
        let needs = rank_needs(module, types, entry, self.ranks, rank, value, tables)?;
        for (k, iv) in needs.distribute {
            if let Some(slot) = self.narrowed.get_mut(&k) {
                slot[rank] = iv;
            }
        }
        Ok(self
            .params
            .iter()
            .map(|b| match needs.params[b.index].get(&b.dim) {
                _ if b.output => RowSet::of(b.owned[rank]),
                Some(n) => n.within(b.global),
                None => RowSet::default(),
            })
            .collect())
    }

    /// The local program of `rank`: the module with the entry's instance at the rank's
    /// intervals (block levels dense, no team), and that instance.
    pub fn local_module(
        &self,
        module: &Module,
        types: &TypeArena,
        entry: Handle<Function>,
        rank: usize,
    ) -> Result<(Module, Handle<Function>), PlanError> {
        let mut m = module.clone();
        // `distribute` takes the rank's part of its replicated operand, `concat` along a block
        // level joins the operands the rank's rows reach; `collect` into an output keeps the
        // owned block (gathered after the run).
        for ((fh, v), needs) in &self.narrowed {
            let rows = needs[rank];
            let func = &mut m.functions[*fh];
            match &func.exprs[*v].kind {
                ExprKind::Op(Op::Distribute { arg, dim, .. }) => {
                    func.exprs[*v].kind = ExprKind::Op(Op::Subset { arg: *arg, domain: vec![(dim.clone(), rows)] });
                }
                ExprKind::Op(Op::Subset { arg, domain }) => {
                    let block = block_level(types, module.functions[*fh].exprs[*arg].ty).map(|(_, d, _)| d);
                    let domain = domain
                        .iter()
                        .map(|(d, cut)| (d.clone(), if Some(d) == block.as_ref() { cut_to(*cut, rows) } else { *cut }))
                        .collect();
                    func.exprs[*v].kind = ExprKind::Op(Op::Subset { arg: *arg, domain });
                }
                // The operands the rows reach are contiguous on the rank (each held as far
                // as the rows need it); the others are left out.
                ExprKind::Op(Op::Concat { args, dim, mode }) => {
                    let reached: Vec<Value> = args
                        .iter()
                        .copied()
                        .filter(|a| {
                            tensor(types, module.functions[*fh].exprs[*a].ty)
                                .and_then(|t| t.level(dim))
                                .is_some_and(|l| !l.interval.intersect(rows).is_empty())
                        })
                        .collect();
                    let args = if reached.is_empty() { args[..1].to_vec() } else { reached };
                    func.exprs[*v].kind = ExprKind::Op(Op::Concat { args, dim: dim.clone(), mode: *mode });
                }
                _ => {}
            }
        }
        let f = &module.functions[entry];
        self.cut_assignments(&mut m.functions[entry], types, rank);
        self.read_only_needed_rows(&mut m.functions[entry], rank);
        let strips = self.strips(rank, f.params.len());
        crate::strips::join_strips(&mut m.functions[entry], &strips);
        for (_, s) in f.body.iter() {
            if let Statement::Assign { target, value, .. } = s {
                if !self.collected.contains_key(&target.index()) {
                    continue;
                }
                let e = &mut m.functions[entry].exprs[*value];
                if let ExprKind::Op(Op::Collect { arg }) = &e.kind {
                    let scalar = strata_ir::element_scalar(types, f.exprs[*arg].ty);
                    if let Some(to) = scalar {
                        e.kind = ExprKind::Op(Op::Cast { arg: *arg, to });
                    }
                }
            }
        }
        // A `collect` of a value replicated on the team (a reduction's result, which every
        // rank holds whole) is that value on each rank.
        let replicated: Vec<(Value, Value)> = f
            .exprs
            .iter()
            .filter_map(|(v, e)| match &e.kind {
                ExprKind::Op(Op::Collect { arg }) if block_level(types, f.exprs[*arg].ty).is_none() => Some((v, *arg)),
                _ => None,
            })
            .collect();
        for (v, arg) in replicated {
            if let Some(to) = strata_ir::element_scalar(types, f.exprs[arg].ty) {
                m.functions[entry].exprs[v].kind = ExprKind::Op(Op::Cast { arg, to });
            }
        }
        if let Some(p) = &self.partial {
            partial_on(&mut m.functions[entry], p, rank);
        }
        // What no result reads is not run: its operands are held only as far as the results
        // need them (a dead shift through a table would read rows the rank does not hold).
        for fh in m.reachable(entry) {
            drop_dead(&mut m.functions[fh]);
        }
        let mut types = types.clone();
        // Declared types (a `constant` on the team) are not inferred again: localized here.
        for fh in m.reachable(entry) {
            let f = &mut m.functions[fh];
            let constants: Vec<Value> = f
                .exprs
                .iter()
                .filter(|(_, e)| matches!(e.kind, ExprKind::Op(Op::Constant { .. })))
                .map(|(v, _)| v)
                .collect();
            for v in constants {
                f.exprs[v].ty = localize(&mut types, f.exprs[v].ty, None);
            }
        }
        // An input held as strips is its owned block; each strip is typed at its rows.
        let mut params: Vec<Handle<Type>> = f
            .params
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let held = match strips.iter().find(|s| s.index == i) {
                    Some(s) => Some((s.level, s.owned)),
                    None => self.params.iter().find(|b| b.index == i).map(|b| (b.level, b.held[rank])),
                };
                localize(&mut types, f.exprs[p].ty, held)
            })
            .collect();
        for s in &strips {
            for strip in s.strips() {
                params.push(localize(&mut types, f.exprs[f.params[s.index]].ty, Some((s.level, strip.rows))));
            }
        }
        strata_verify::specialize(&m, &types, entry, &params).map_err(|d| PlanError::Local {
            rank,
            message: d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "),
        })
    }

    /// Cuts the region of every assignment into a distributed output (`%out[I[1:63], J[1:63]]
    /// <- …`) to the rows `rank` owns: each rank writes its part of the region (an empty one
    /// where the region misses its rows).
    fn cut_assignments(&self, f: &mut Function, types: &TypeArena, rank: usize) {
        let params = f.params.clone();
        let mut cuts = Vec::new();
        for (h, s) in f.body.iter() {
            let Statement::Assign { target, domain: Some(domain), .. } = s else { continue };
            let Some(i) = params.iter().position(|p| p == target) else { continue };
            let Some(b) = self.params.iter().find(|b| b.index == i) else { continue };
            let Some((_, dim, _)) = block_level(types, f.exprs[*target].ty) else { continue };
            let owned = b.owned[rank];
            let cut: Vec<_> =
                domain.iter().map(|(d, iv)| (d.clone(), if *d == dim { cut_to(*iv, owned) } else { *iv })).collect();
            cuts.push((h, cut));
        }
        for (h, cut) in cuts {
            if let Statement::Assign { domain, .. } = &mut f.body[h] {
                *domain = Some(cut);
            }
        }
    }

    /// Reads of a parameter along a positional block level (the array front end's `_0`) cut to
    /// the rows `rank` reads of it: it holds its whole block too, and positional levels combine
    /// by extent, not by interval (`a[1:-1] + b` over blocks of 34 and 32 rows at 4 ranks: the
    /// rank reads 7 rows of its 8 of `b`). Named levels intersect by interval: left as they are.
    fn read_only_needed_rows(&self, f: &mut Function, rank: usize) {
        for b in &self.params {
            let (read, held) = (b.read[rank], b.held[rank]);
            if b.output || b.stored || b.dim.position().is_none() || read == held {
                continue;
            }
            let read = if read.is_empty() { Interval::new(held.start, held.start) } else { read };
            let p = f.params[b.index];
            let span = *f.exprs.meta(p);
            let e = strata_ir::Expr {
                name: format!("{}.read", f.exprs[p].name),
                ty: f.exprs[p].ty,
                kind: ExprKind::Op(Op::Subset { arg: p, domain: vec![(b.dim.clone(), read)] }),
            };
            let cut = f.exprs.append(e, span);
            crate::strips::redirect(f, p, cut);
            crate::strips::prepend(f, &[cut]);
        }
    }
}

/// The part of `iv` within `rows`; where they do not meet, an empty interval at a bound of
/// `rows` (a region or a subset of no rows on this rank, still a valid interval).
fn cut_to(iv: Interval, rows: Interval) -> Interval {
    let within = iv.intersect(rows);
    let start = within.start.clamp(rows.start, rows.stop.max(rows.start));
    Interval::new(start, within.stop.max(start))
}

/// Makes `f` return `rank`'s part of `p`: the reduction or scan over the rows the rank owns
/// (a `subset` of each operand), from its start ([`PartialStart`]).
fn partial_on(f: &mut Function, p: &Partial, rank: usize) {
    let ExprKind::Op(op) = f.exprs[p.value].kind.clone() else { return };
    let span = *f.exprs.meta(p.value);
    let mut args = match &op {
        Op::MapReduce { args, .. } | Op::Scan { args, .. } => args.clone(),
        _ => return,
    };
    let mut added = Vec::new();
    for (k, name, owned) in &p.owned {
        let arg = args[*k];
        let e = strata_ir::Expr {
            name: format!("{}.owned", f.exprs[arg].name),
            ty: f.exprs[arg].ty,
            kind: ExprKind::Op(Op::Subset { arg, domain: vec![(name.clone(), owned[rank])] }),
        };
        args[*k] = f.exprs.append(e, span);
        added.push(args[*k]);
    }
    let op = match (op, &p.start) {
        (Op::MapReduce { func, args: _, init, subscripts }, PartialStart::Identity(identity)) => {
            let init = if rank == 0 { init } else { strata_ir::Init::Literal(identity.clone()) };
            Op::MapReduce { func, args, init, subscripts }
        }
        // Every row folded on its own: the output keeps the rows.
        (Op::MapReduce { func, args: _, init: _, mut subscripts }, PartialStart::Rows { identity, letter, .. }) => {
            subscripts.output.insert(0, *letter);
            Op::MapReduce { func, args, init: strata_ir::Init::Literal(identity.clone()), subscripts }
        }
        (Op::Scan { func, args: _, dim, forward, init }, PartialStart::Carry { param, chain, .. }) => {
            let init = if chain.first() == Some(&rank) { init } else { strata_ir::Init::Value(*param) };
            Op::Scan { func, args, dim, forward, init }
        }
        _ => return,
    };
    let e = strata_ir::Expr {
        name: format!("{}.partial", f.exprs[p.value].name),
        ty: f.exprs[p.value].ty,
        kind: ExprKind::Op(op),
    };
    let partial = f.exprs.append(e, span);
    added.push(partial);
    let mut body = strata_entity::Arena::new();
    for (s, stmt) in f.body.iter() {
        let meta = f.body.meta(s).clone();
        if let Statement::Let(v) = stmt {
            if *v == p.value {
                continue;
            }
        }
        if let Statement::Return(_) = stmt {
            for &v in &added {
                body.append(Statement::Let(v), meta.clone());
            }
            body.append(Statement::Return(vec![partial]), meta);
        } else {
            body.append(stmt.clone(), meta);
        }
    }
    f.body = body;
}

/// Removes the statements of `f` whose values no result, output or later live statement reads.
fn drop_dead(f: &mut Function) {
    let live = crate::stages::dependencies(f, &crate::stages::result_values(f), &Default::default());
    let mut body = strata_entity::Arena::new();
    for (s, stmt) in f.body.iter() {
        if !matches!(stmt, Statement::Let(v) if !live.contains(v)) {
            body.append(stmt.clone(), f.body.meta(s).clone());
        }
    }
    f.body = body;
}

/// `ty` on one rank: the block level narrowed to `held` and dense, no team.
fn localize(types: &mut TypeArena, ty: Handle<Type>, held: Option<(usize, Interval)>) -> Handle<Type> {
    let Type::Tensor(t) = &types[ty] else { return ty };
    if t.placement.team.is_none() && held.is_none() {
        return ty;
    }
    let mut t = t.clone();
    t.placement.team = None;
    for (i, l) in t.levels.iter_mut().enumerate() {
        if l.format == LevelFormat::Block {
            l.format = LevelFormat::Dense;
        }
        if let Some((lvl, iv)) = held {
            if lvl == i {
                l.interval = iv;
            }
        }
    }
    types.insert(Type::Tensor(t))
}

impl fmt::Display for Plan {
    /// What `strata lower --to dist` prints: each distributed parameter's blocks, halos and
    /// messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "distribution of @{} over {} ranks (block partition: remainders to the last ranks)",
            self.entry, self.ranks
        )?;
        for p in &self.params {
            let kind = if p.output { "out" } else { "in " };
            writeln!(f, "  {kind} %{}: block level `{}{}`", p.name, p.dim, p.global)?;
            for r in 0..self.ranks {
                let (o, h) = (p.owned[r], p.held[r]);
                write!(f, "    rank {r}: owns {}{o}", p.dim)?;
                if h != o {
                    write!(f, ", holds {}{h} (halo {} below, {} above)", p.dim, o.start - h.start, h.stop - o.stop)?;
                }
                writeln!(f)?;
            }
            let msgs = p.messages();
            if !p.output && !self.indirect.is_empty() {
                writeln!(
                    f,
                    "    the rows beyond its block that it reads (through the tables below) are fetched at run time"
                )?;
            } else if msgs.is_empty() {
                if !p.output {
                    writeln!(f, "    no exchange")?;
                }
            } else {
                let strips = (0..self.ranks).filter(|&r| self.strips(r, 0).iter().any(|s| s.index == p.index)).count();
                if strips > 0 {
                    writeln!(
                        f,
                        "    halo exchange (non-blocking send/receive, overlapped: the kernels that read no received \
                         row run while it is under way, the others after it completes):"
                    )?;
                    writeln!(
                        f,
                        "      (into strips beside the block on {strips} of {} ranks: the block is read where it is, \
                         the program joins block and strips with a `concat`)",
                        self.ranks
                    )?;
                } else {
                    writeln!(f, "    halo exchange (non-blocking send/receive, before the run):")?;
                }
                for (from, to, rows) in msgs {
                    writeln!(f, "      rank {from} -> rank {to}: {}{rows}", p.dim)?;
                }
            }
            match (p.output, p.stored) {
                (false, true) => {
                    writeln!(f, "    sparse or ragged: each rank reads only its rows of the .npz, as storage")?
                }
                (true, true) => writeln!(
                    f,
                    "    sparse or ragged: the ranks' stored entries gathered on rank 0, written as one .npz"
                )?,
                (true, false) => writeln!(f, "    each rank writes its block at its offset in one file")?,
                (false, false) => {}
            }
        }
        for s in &self.indirect {
            let through = match s.kind {
                Indirection::Neighbor => "the table",
                Indirection::Gather => "the gather indices",
            };
            writeln!(
                f,
                "  `%{}` in `@{}` reads `{}` rows through {through} %{}: which ones is planned at run time from \
                 its entries (an all-to-all of the rows each rank needs, then point-to-point messages of exactly \
                 those rows; a rank holds the hull of its rows)",
                s.value, s.func, s.dim, s.table
            )?;
        }
        if self.params.is_empty() {
            writeln!(f, "  nothing is distributed: every rank runs the whole program; rank 0 writes")?;
        }
        Ok(())
    }
}
