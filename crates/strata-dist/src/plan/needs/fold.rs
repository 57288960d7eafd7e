//! Folds: a `map_reduce` needs its operands at the rows its output keeps (contracted block
//! levels: the rows the rank owns); a `scan` needs what its result does. Folds over a block
//! level run only as a stage's collective, at the top of the entry.

use strata_entity::Handle;
use strata_ir::{Function, LevelFormat, Op, Value};

use super::{Analysis, Gives, Need, Tables};
use crate::plan::error::SUPPORTED;
use crate::plan::{block_level, tensor, PlanError};
use crate::rows::Rows;

impl<T: Tables> Analysis<'_, T> {
    /// The needs of a `map_reduce`'s operands (and initial value) when its result `v` must hold `n`.
    pub(super) fn map_reduce(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        op: &Op,
        n: &Need<T::R>,
    ) -> Result<Gives<T::R>, PlanError> {
        let Op::MapReduce { args, subscripts, init, func: _ } = op else { unreachable!("a map_reduce") };
        let f = &self.module.functions[fh];
        let contracted = crate::stages::contracted_blocks(f, self.types, op);
        if !contracted.is_empty() && Some(v) != self.partial {
            return Err(PlanError::unsupported(
                f,
                v,
                "a reduction over a block level runs at the top of the entry, where the ranks combine their \
                 partials (not inside a called function)",
            ));
        }
        let out = tensor(self.types, f.exprs[v].ty).map(|t| t.levels.clone()).unwrap_or_default();
        let mut gives = Vec::new();
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
            gives.push((*a, m));
        }
        if let strata_ir::Init::Value(i) = init {
            gives.push((*i, n.clone()));
        }
        Ok(gives)
    }

    /// The needs of a `scan`'s operands (and initial value) when its result `v` must hold `n`.
    pub(super) fn scan(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        op: &Op,
        n: &Need<T::R>,
    ) -> Result<Gives<T::R>, PlanError> {
        let Op::Scan { dim, args, init, .. } = op else { unreachable!("a scan") };
        let f = &self.module.functions[fh];
        // Along a block level: only as a stage's collective (rank after rank).
        let along_block =
            args.iter().any(|a| block_level(self.types, f.exprs[*a].ty).is_some_and(|(_, d, _)| &d == dim));
        if along_block && Some(v) != self.partial {
            return Err(PlanError::unsupported(f, v, SUPPORTED));
        }
        let mut gives: Gives<T::R> = args.iter().map(|a| (*a, n.clone())).collect();
        if let strata_ir::Init::Value(i) = init {
            gives.push((*i, n.clone()));
        }
        Ok(gives)
    }
}
