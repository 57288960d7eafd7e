//! `scatter` into a destination distributed along the indexed dimension: each rank writes the
//! rows it holds ([`crate::plan::Plan::local_module`] redirects the others' writes), so the
//! destination needs the rows the result does and the replicated values and indices are read
//! whole.

use strata_entity::Handle;
use strata_ir::{DimName, Function, Value};

use super::{Analysis, Gives, Need, Tables};
use crate::plan::{block_level, PlanError};
use crate::rows::Rows;

/// What a distributed scatter must be for the ranks to run it.
const SCATTER: &str = "a scatter runs distributed when its destination is distributed along its one indexed \
                       dimension, a named one, and its values and indices are replicated on the team";

/// Whether `scatter(source, dest, indices, coordinates)` of `f` runs on the ranks: `None` where
/// nothing of it is distributed, the destination's block dimension where it is a scatter the
/// ranks run (see [`SCATTER`]).
fn distributed_scatter(
    types: &strata_ir::TypeArena,
    f: &Function,
    (source, dest, indices): (Value, Value, Value),
    coordinates: &[u32],
) -> Result<Option<DimName>, &'static str> {
    let replicated = |x: Value| block_level(types, f.exprs[x].ty).is_none();
    let operands_replicated = replicated(source) && replicated(indices);
    match block_level(types, f.exprs[dest].ty) {
        None if operands_replicated => Ok(None),
        Some((pos, dim, _)) if operands_replicated && coordinates == [pos as u32] && dim.position().is_none() => {
            Ok(Some(dim))
        }
        _ => Err(SCATTER),
    }
}

impl<T: Tables> Analysis<'_, T> {
    /// The needs of a `scatter`'s operands when its result `v` must hold `n`: the destination's
    /// rows are the result's; the replicated values and indices need no rows.
    pub(super) fn scatter(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        operands: (Value, Value, Value),
        coordinates: &[u32],
        n: &Need<T::R>,
    ) -> Result<Gives<T::R>, PlanError> {
        let f = &self.module.functions[fh];
        let (_, dest, _) = operands;
        match distributed_scatter(self.types, f, operands, coordinates) {
            Err(hint) => Err(PlanError::unsupported(f, v, hint)),
            Ok(None) => Ok(Vec::new()),
            Ok(Some(dim)) => {
                let rows = n.get(&dim).map(|r| r.hull()).unwrap_or(strata_ir::Interval::new(0, 0));
                self.narrow(fh, v, rows);
                Ok(vec![(dest, n.clone())])
            }
        }
    }
}
