//! Cuts and joins: `distribute` and `subset` narrow a value to the rows a rank needs; `concat`
//! along a block level joins only the operands those rows reach.

use strata_entity::Handle;
use strata_ir::{DimName, Function, Interval, Value};

use super::{Analysis, Gives, Need, Tables};
use crate::plan::{block_level, tensor, PlanError};
use crate::rows::{hull, Rows};

impl<T: Tables> Analysis<'_, T> {
    /// Widens the rows `rank` keeps of `v` (a `distribute`, `subset` or `concat` of `fh`) to `iv`.
    pub(super) fn narrow(&mut self, fh: Handle<Function>, v: Value, iv: Interval) {
        let slot = self.narrowed.entry((fh, v)).or_insert(iv);
        *slot = hull(*slot, iv);
    }

    /// `distribute`: the rank's part of its replicated operand, which needs no rows itself.
    pub(super) fn distribute(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        arg: Value,
        dim: &DimName,
        n: &Need<T::R>,
    ) -> Gives<T::R> {
        let iv = n.get(dim).map_or(Interval::new(0, 0), |r| r.hull());
        self.narrow(fh, v, iv);
        vec![(arg, Need::new())]
    }

    /// `subset` cutting a block level: on a rank, to the rows its users need (the rank's
    /// operand holds those, not the whole global cut).
    pub(super) fn subset(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        arg: Value,
        domain: &[(DimName, Interval)],
        n: &Need<T::R>,
    ) -> Gives<T::R> {
        for (dim, cut) in domain {
            if let Some(rows) = n.get(dim) {
                let iv = rows.hull().intersect(*cut);
                self.narrow(fh, v, iv);
            }
        }
        vec![(arg, n.clone())]
    }

    /// `concat` along `dim`: joined along a block level, each operand gets its part of the
    /// rows (the rank's local concat joins only the operands they reach); else every operand
    /// needs what the result does.
    pub(super) fn concat(
        &mut self,
        fh: Handle<Function>,
        v: Value,
        args: &[Value],
        dim: &DimName,
        n: &Need<T::R>,
    ) -> Result<Gives<T::R>, PlanError> {
        let f = &self.module.functions[fh];
        let level = |a: Value| tensor(self.types, f.exprs[a].ty).and_then(|t| t.level(dim));
        let along_block =
            args.iter().any(|a| block_level(self.types, f.exprs[*a].ty).is_some_and(|(_, d, _)| &d == dim));
        // Positional pieces are placed one after another: the rows keep their numbers only
        // when each piece starts where the one before ends.
        let renumbered = dim.position().is_some()
            && args.windows(2).any(|w| match (level(w[0]), level(w[1])) {
                (Some(a), Some(b)) => a.interval.stop != b.interval.start,
                _ => true,
            });
        if along_block && renumbered {
            return Err(PlanError::unsupported(
                f,
                v,
                "a concat along a positional block level of pieces that are not contiguous renumbers the rows; \
                 contiguous pieces (or a named level) keep them and run distributed",
            ));
        }
        let Some(rows) = n.get(dim).filter(|_| along_block).cloned() else {
            return Ok(args.iter().map(|a| (*a, n.clone())).collect());
        };
        self.narrow(fh, v, rows.hull());
        let mut gives = Vec::new();
        for a in args {
            let Some(at) = level(*a) else { continue };
            let part = rows.within(at.interval);
            if !part.hull().is_empty() {
                let mut m = n.clone();
                m.insert(dim.clone(), part);
                gives.push((*a, m));
            }
        }
        Ok(gives)
    }
}
