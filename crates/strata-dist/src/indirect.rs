//! Neighbor shifts of block-distributed sources — the nabla's `pp(E2V[0])` with the vertices
//! spread over the ranks. The rows of the source a rank reads are the table's entries at the
//! rows it needs, known only from the data, so they are planned at run time
//! (inspector–executor):
//!
//! 1. *Inspect.* The plan's backward analysis runs again with rows as sets
//!    ([`crate::RowSet`]) and the tables' entries known ([`KnownTables`]): a shift through a
//!    table reaches the entries of the table rows needed. Table rows another rank owns are
//!    fetched first (an all-to-all round per level of indirection: the nabla's flux on edges
//!    reached from the vertices needs those edges' `E2V` rows before it knows which vertices).
//! 2. *Plan the exchange.* For every distributed input, the rows needed that other ranks own
//!    are requested from their owners with one `MPI_Alltoallv` ([`crate::exchange::FetchPlan::new`]);
//!    each rank learns which of its rows to serve to whom.
//! 3. *Exchange.* Point-to-point messages of exactly those rows
//!    ([`crate::exchange::FetchPlan::run_into`]), reused on every run of the stage.
//!
//! A rank stores each input on the hull of its rows: rows inside the hull that it neither owns
//! nor needs stay zero (a table's: `-1`, the skip value, so they reach nothing).

use std::collections::{BTreeMap, HashMap};

use strata_ir::Interval;
use strata_runtime::Tensor;

use crate::plan::Tables;
use crate::rows::{RowSet, Rows};

/// The neighbor tables' entries a rank knows: the rows it holds or has fetched.
#[derive(Default)]
pub struct KnownTables {
    tables: HashMap<usize, KnownTable>,
    missing: BTreeMap<usize, RowSet>,
}

struct KnownTable {
    /// Destination row → its entries, in neighbor order.
    rows: HashMap<i64, Vec<i64>>,
    /// The destination level's interval (a replicated table's rows are all known).
    global: Interval,
    /// `-1` is the skip value (neighbor tables), not a coordinate (gather indices).
    skips: bool,
}

impl KnownTables {
    /// Learns rows `rows` of the table that is entry parameter `param` from `t`, whose
    /// destination level is at position `level` (the other level is the neighbors', or the
    /// coordinates'); with `skips`, entries `-1` reach no row.
    pub fn learn(&mut self, param: usize, t: &Tensor, level: usize, rows: Interval, global: Interval, skips: bool) {
        let shape = t.ty.shape();
        let lo = t.ty.levels[level].interval.start;
        let neighbors = shape[1 - level];
        let stride = |row: i64, k: usize| {
            let r = (row - lo) as usize;
            if level == 0 {
                r * neighbors + k
            } else {
                k * shape[1] + r
            }
        };
        let table = self.tables.entry(param).or_insert_with(|| KnownTable { rows: HashMap::new(), global, skips });
        for row in rows.start..rows.stop {
            let entries = (0..neighbors).map(|k| t.scalar_at(stride(row, k)).as_i128() as i64).collect();
            table.rows.insert(row, entries);
        }
    }

    /// The table rows asked for but not known, by parameter (and forgets them).
    pub fn take_missing(&mut self) -> BTreeMap<usize, RowSet> {
        std::mem::take(&mut self.missing)
    }
}

impl Tables for KnownTables {
    type R = RowSet;

    fn reached(&mut self, param: usize, dst: Option<&RowSet>, neighbor: Option<i64>) -> Option<RowSet> {
        let table = self.tables.get(&param)?;
        let all;
        let dst = match dst {
            Some(d) => d,
            None => {
                all = RowSet::of(table.global);
                &all
            }
        };
        let mut reached = Vec::new();
        let mut missing = Vec::new();
        // Rows outside the table are no rows of it (an entry pointing there is reported by
        // the run, at the shift that reads it).
        for run in dst.within(table.global).runs() {
            for row in run.start..run.stop {
                let Some(entries) = table.rows.get(&row) else {
                    missing.push(row);
                    continue;
                };
                match neighbor {
                    Some(k) => reached.extend(entries.get(k as usize).copied()),
                    None => reached.extend_from_slice(entries),
                }
            }
        }
        // -1 is the skip value: no row.
        if table.skips {
            reached.retain(|&r| r != -1);
        }
        if !missing.is_empty() {
            self.missing.entry(param).or_default().add(&RowSet::from_rows(missing));
        }
        Some(RowSet::from_rows(reached))
    }
}
