//! Shifts: a cartesian shift moves the rows it needs; a neighbor shift of a block-distributed
//! source reads the rows its table's entries reach.

use strata_entity::Handle;
use strata_ir::{DimName, Function, LevelFormat, Value};

use super::{Analysis, Gives, Need, Tables};
use crate::plan::{block_level, tensor, IndirectShift, Indirection, PlanError};
use crate::rows::Rows;

/// A shift by `offset` along `dim` reads `offset` further along it.
pub(super) fn cartesian<R: Rows>(arg: Value, dim: &DimName, offset: i64, n: &Need<R>) -> Gives<R> {
    let mut m = n.clone();
    if let Some(rows) = m.get_mut(dim) {
        *rows = rows.shifted(offset);
    }
    vec![(arg, m)]
}

impl<T: Tables> Analysis<'_, T> {
    /// Whether a neighbor shift reads a block-distributed source through `table`.
    pub(super) fn shifts_distributed(&self, f: &Function, arg: Value, table: Value) -> bool {
        let source =
            tensor(self.types, f.exprs[table].ty).and_then(|t| t.levels.iter().find_map(|l| l.name.table_source()));
        block_level(self.types, f.exprs[arg].ty).is_some_and(|(_, d, _)| Some(d) == source)
    }

    /// What a neighbor shift of a block-distributed source needs when its result `v` must
    /// hold `n`: of the table, the destination rows needed (if the table is distributed); of
    /// the source, the rows those table rows reach — known from the entries at run time only.
    pub(super) fn neighbor_shift(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        arg: Value,
        table: Value,
        neighbor: Option<i64>,
        n: &Need<T::R>,
    ) -> Result<Gives<T::R>, PlanError> {
        let f = &self.module.functions[fh];
        let tt = tensor(self.types, f.exprs[table].ty).expect("a verified table");
        let dst = tt.levels.iter().find(|l| l.name.table_source().is_none()).expect("a verified table").clone();
        let [to_arg, to_table] = self.through_table(fh, v, arg, table, &dst, neighbor, Indirection::Neighbor, n)?;
        Ok(vec![(arg, to_arg), (table, to_table)])
    }

    /// The needs of a read of the block-distributed `arg` through `table` (an entry parameter
    /// holding coordinates of `arg`'s block dimension, column `column`) at the rows of the
    /// table's `dst` level that `n` needs: the table rows (if it is distributed), and the
    /// source rows they reach (at run time; at compile time recorded as an
    /// [`IndirectShift`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn through_table(
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
            return Err(PlanError::unsupported(
                f,
                v,
                match kind {
                    Indirection::Neighbor => {
                        "the neighbor table of a distributed source must be a parameter of the entry (its entries \
                         say which rows each rank fetches)"
                    }
                    Indirection::Gather => {
                        "the indices of a gather from a distributed source must be a parameter of the entry (its \
                         entries say which rows each rank fetches)"
                    }
                },
            ));
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
}
