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
//!
//! - [`needs`]: the backward analysis of what each rank reads, one module per op family;
//! - `levels`: block levels of types and the team an entry runs on;
//! - `params`: the plan's parts (distributed parameters, partial results, indirect reads);
//! - `partial`: an entry that ends in a reduction or scan over a block level;
//! - `local`: each rank's local program;
//! - `display`: what `strata lower --to dist` prints.

use std::collections::HashMap;

use strata_entity::Handle;
use strata_ir::{DimName, ExprKind, Function, Interval, Module, ParamMode, TypeArena, Value};
use strata_runtime::dist::block_partition;

use crate::rows::{hull, RowSet, Rows};

mod display;
mod error;
mod levels;
mod local;
pub mod needs;
mod params;
mod partial;

pub use error::PlanError;
pub use levels::team_of;
pub(crate) use levels::{block_level, block_level_named};
use levels::{check_stored_rows, tensor};
pub use needs::Tables;
use needs::{rank_needs, FromTypes, Need};
pub use params::{BlockParam, IndirectShift, Indirection, Partial, PartialStart};
use partial::partial_of;
pub use partial::reproducible;

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
            let held: Vec<Interval> = (0..ranks).map(|r| hull(owned[r], read[r])).collect();
            let reaches =
                [(0..ranks).any(|r| held[r].start < owned[r].start), (0..ranks).any(|r| held[r].stop > owned[r].stop)];
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
                reaches,
            };
            check_stored_rows(types, e.ty, &param, &indirect)?;
            params.push(param);
        }
        if ranks == 1 {
            // One rank reads nothing beyond its block: where a rank of more would, its strips
            // are there (empty), so that one rank compiles the kernels more ranks do.
            if let Ok(two) = Plan::new(module, types, entry, 2) {
                for p in &mut params {
                    if let Some(q) = two.params.iter().find(|q| q.index == p.index) {
                        p.reaches = q.reaches;
                    }
                }
            }
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
}
