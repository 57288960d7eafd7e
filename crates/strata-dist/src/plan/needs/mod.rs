//! What each rank reads of every value, derived backwards from what it writes.
//!
//! `rank_needs` seeds the analysis with the rows a rank owns of each output and returned
//! value, and walks each function's statements backwards: an op whose result must hold some
//! rows needs rows of its operands, by op family — shifts move them (`shift`), gathers read
//! them through their indices (`gather`), cuts and joins narrow them (`layout`), reductions
//! and scans fold them (`fold`), calls pass them into the callee (`call`), and elementwise ops
//! pass them through unchanged. What an op needs of a neighbor table or gather indices is known
//! from the table's entries only, at run time ([`Tables`]).

use std::collections::{BTreeMap, HashMap};

use strata_entity::Handle;
use strata_ir::{DimName, ExprKind, Function, Interval, Module, Op, Statement, TypeArena, Value};
use strata_runtime::dist::block_partition;

use super::error::SUPPORTED;
use super::{block_level, IndirectShift, PlanError};
use crate::rows::Rows;

mod call;
mod fold;
mod gather;
mod layout;
mod scatter;
mod shift;

/// Needed rows per block dimension, for one rank.
pub(super) type Need<R> = BTreeMap<DimName, R>;

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
pub(super) struct FromTypes;

impl Tables for FromTypes {
    type R = Interval;
    fn reached(&mut self, _: usize, _: Option<&Interval>, _: Option<i64>) -> Option<Interval> {
        None
    }
}

/// The backward analysis of one rank: what it needs of each value, and what it met on the way.
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

/// The needs of an op's operands: each operand with the rows it must hold (an operand may
/// appear more than once; its needs are merged).
type Gives<R> = Vec<(Value, Need<R>)>;

/// What one rank needs: each entry parameter's rows per block dimension, each `distribute`'s
/// rows, the outputs written from `collect`, and the neighbor shifts planned at run time.
pub(super) struct RankNeeds<R> {
    pub(super) params: Vec<Need<R>>,
    pub(super) distribute: HashMap<(Handle<Function>, Value), Interval>,
    pub(super) collected: HashMap<usize, (usize, DimName, Interval)>,
    pub(super) indirect: Vec<IndirectShift>,
}

/// Analyses `entry` backwards from what `rank` writes.
pub(super) fn rank_needs<T: Tables>(
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
impl<T: Tables> Analysis<'_, T> {
    /// The rows `rank` owns of a block level over `iv`.
    fn owned(&self, iv: Interval) -> Interval {
        block_partition(iv, self.ranks as u32)[self.rank]
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
            let ExprKind::Op(op) = &f.exprs[*v].kind else { continue };
            let Some(n) = need.get(v).cloned() else { continue };
            for (x, m) in self.op(fh, *v, op, &n)? {
                merge(need.entry(x).or_default(), &m);
            }
        }
        Ok(f.params.iter().map(|p| need.remove(p).unwrap_or_default()).collect())
    }

    /// The needs of the operands of `op` (the value `v` of `fh`) when `v` must hold `n`.
    fn op(&mut self, fh: Handle<Function>, v: Value, op: &Op, n: &Need<T::R>) -> Result<Gives<T::R>, PlanError> {
        let f = &self.module.functions[fh];
        match op {
            Op::CartesianShift { arg, dim, offset } => Ok(shift::cartesian(*arg, dim, *offset, n)),
            Op::ShiftInit { arg, table } | Op::UnstructuredShift { arg, table, .. }
                if self.shifts_distributed(f, *arg, *table) =>
            {
                let neighbor = match op {
                    Op::UnstructuredShift { neighbor, .. } => Some(*neighbor),
                    _ => None,
                };
                self.neighbor_shift(fh, v, *arg, *table, neighbor, n)
            }
            Op::Call { func, args, result } => self.call(fh, *func, args, *result, n),
            Op::Distribute { arg, dim, .. } => Ok(self.distribute(fh, v, *arg, dim, n)),
            Op::Subset { arg, domain } => Ok(self.subset(fh, v, *arg, domain, n)),
            Op::Concat { args, dim, mode: _ } => self.concat(fh, v, args, dim, n),
            Op::Gather { source, indices, coordinates, mode: _ } => {
                self.gather(fh, v, *source, *indices, coordinates, n)
            }
            Op::Scatter { source, dest, indices, coordinates, mode: _ } => {
                self.scatter(fh, v, (*source, *dest, *indices), coordinates, n)
            }
            Op::MapReduce { .. } => self.map_reduce(fh, v, op, n),
            Op::Scan { .. } => self.scan(fh, v, op, n),
            // Elementwise: the rows pass through.
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
            | Op::Constant { .. } => Ok(op.operands().into_iter().map(|a| (a, n.clone())).collect()),
            _ if op.operands().iter().any(|x| block_level(self.types, f.exprs[*x].ty).is_some()) => {
                Err(PlanError::unsupported(f, v, SUPPORTED))
            }
            _ => Ok(Vec::new()),
        }
    }
}
