//! `gather`: a source distributed along an indexed dimension is read through the indices as
//! through a neighbor table; along a sliced dimension the rows pass through.

use strata_entity::Handle;
use strata_ir::{Function, Value};

use super::{Analysis, Gives, Need, Tables};
use crate::plan::{block_level, tensor, Indirection, PlanError};
use crate::rows::Rows;

impl<T: Tables> Analysis<'_, T> {
    /// The needs of a `gather`'s source and indices when its result `v` must hold `n`. The
    /// indices are `tensor<index, B, C>`: a batch level `B` (distributed or not) and the
    /// coordinates `C`. A source distributed along an indexed dimension is read through the
    /// indices as through a neighbor table (the rows their entries reach, at run time); along
    /// a sliced (named) dimension, the result keeps that dimension and the rows pass through.
    pub(super) fn gather(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        source: Value,
        indices: Value,
        coordinates: &[u32],
        n: &Need<T::R>,
    ) -> Result<Gives<T::R>, PlanError> {
        let f = &self.module.functions[fh];
        let unsupported = |hint| PlanError::unsupported(f, v, hint);
        let it = tensor(self.types, f.exprs[indices].ty).expect("verified indices");
        let idx_block = block_level(self.types, f.exprs[indices].ty);
        let src_block = block_level(self.types, f.exprs[source].ty);
        if src_block.is_none() && idx_block.is_none() {
            return Ok(Vec::new());
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
                let [to_source, to_indices] =
                    self.through_table(fh, v, source, indices, &batch, Some(k), Indirection::Gather, &n)?;
                Ok(vec![(source, to_source), (indices, to_indices)])
            }
            Some((_, dim, _)) if dim.position().is_some() => Err(unsupported(
                "a gather keeps a positional distributed dimension under another position; name the dimension",
            )),
            // Distributed along a sliced dimension: the result keeps it, its rows pass through.
            Some((_, dim, _)) => {
                let to_source = n.get(&dim).map(|r| Need::from([(dim.clone(), r.clone())])).unwrap_or_default();
                Ok(vec![(source, to_source), (indices, batch_rows(n))])
            }
            // A replicated source: each rank gathers its rows of the indices.
            None => Ok(vec![(indices, batch_rows(n))]),
        }
    }
}
