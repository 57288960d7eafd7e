//! `scatter` into a destination distributed along the indexed dimension: each rank writes the
//! rows it holds ([`crate::plan::Plan::local_module`] redirects the others' writes), so the
//! destination needs the rows the result does and the replicated values and indices are read
//! whole.

use strata_entity::Handle;
use strata_ir::{Function, Value};

use super::{Analysis, Gives, Need, Tables};
use crate::plan::{block_level, PlanError};
use crate::rows::Rows;

/// What a distributed scatter must be for the ranks to run it.
pub(crate) const SCATTER: &str =
    "a scatter runs distributed when its destination is distributed along its one indexed \
                                  dimension, a named one, and its values and indices are replicated on the team";

/// The distributed scatter `scatter(source, dest, indices, coordinates = [k])` of `f`, if it
/// is one the ranks run (see [`SCATTER`]): the destination's block level's position.
pub(crate) fn distributed_scatter(
    types: &strata_ir::TypeArena,
    f: &Function,
    (source, dest, indices): (Value, Value, Value),
    coordinates: &[u32],
) -> Result<Option<usize>, &'static str> {
    let Some((pos, dim, _)) = block_level(types, f.exprs[dest].ty) else {
        let replicated = |x: Value| block_level(types, f.exprs[x].ty).is_none();
        return match replicated(source) && replicated(indices) {
            true => Ok(None),
            false => Err(SCATTER),
        };
    };
    let replicated =
        block_level(types, f.exprs[source].ty).is_none() && block_level(types, f.exprs[indices].ty).is_none();
    match coordinates == [pos as u32] && dim.position().is_none() && replicated {
        true => Ok(Some(pos)),
        false => Err(SCATTER),
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
            Ok(Some(_)) => {
                let (_, dim, _) = block_level(self.types, f.exprs[dest].ty).expect("distributed");
                let rows = n.get(&dim).map(|r| r.hull()).unwrap_or(strata_ir::Interval::new(0, 0));
                self.narrow(fh, v, rows);
                Ok(vec![(dest, n.clone())])
            }
        }
    }
}
