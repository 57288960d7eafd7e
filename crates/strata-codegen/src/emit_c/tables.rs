//! Neighbor-table entries read once per statement: the C for a fold step or a point's stores
//! first binds each distinct table entry its expressions read — its raw value (the skip
//! value −1 where an entry it is read through was skipped), whether it names a neighbor, and
//! the checked coordinate — and the expressions then use those names. Without this an
//! expression that reads through two table levels (the nabla's edge flux recomputed per vertex
//! neighbor) repeats each entry's load, skip test and interval check in every presence test and
//! value, which the C compiler cannot merge: each check may record an error.
//!
//! Every entry is checked where it is bound, also one that only a branch not taken reads; the
//! interpreter checks a whole shift's table, so an entry outside its source interval is an
//! error on both backends. Loads stay in bounds: a skipped or bad entry binds the coordinate
//! the interval starts at, as `strata_nb` returns. An input table is checked whole before the
//! kernels run (`exec::Buffers::new`), as the interpreter checks it: its entries are bound
//! unchecked (`strata_nb_prechecked`), which on the nabla's gathers (an edge's vertices read
//! through a vertex's edges) took 8.3 ms down to 4.5 (one thread, GT4Py's table layout).

use std::fmt::Write;
use std::rc::Rc;

use strata_ir::Interval;

use crate::sym::{for_each_coord_part, for_each_part, Coord, Load, Part, SExpr};

use super::Emitter;

/// A table entry bound to C variables `t{n}` (raw), `ok{n}` (names a neighbor), `nb{n}`
/// (checked coordinate).
#[derive(Clone)]
pub(super) struct BoundEntry {
    /// The C text of the entry's load, with inner entries already bound.
    load: String,
    /// The interval the entry must lie in.
    source: Interval,
    n: usize,
}

impl Emitter<'_> {
    /// The bound entry for table load `table` checked against `source`, if any.
    fn bound(&self, table: &Load, source: Interval) -> Option<&BoundEntry> {
        if self.entries.is_empty() {
            return None;
        }
        let load = self.load(table);
        self.entries.iter().find(|b| b.load == load && b.source == source)
    }

    /// A table entry as a signed 64-bit value. Only signed tables have the skip value −1: an
    /// unsigned 64-bit entry beyond `i64::MAX` becomes `i64::MIN`, which no interval check
    /// accepts (intervals start above it), instead of wrapping to −1.
    fn table_entry(&self, table: &Load) -> String {
        match self.program.buffers[table.buffer].scalar {
            strata_ir::Scalar::U64 => format!("strata_u64_entry({})", self.load(table)),
            _ => format!("(int64_t){}", self.load(table)),
        }
    }

    /// The checked coordinate of a table entry (`strata_nb`), by name where bound.
    pub(super) fn table_coord(&self, table: &Load, source: Interval) -> String {
        match self.bound(table, source) {
            Some(b) => format!("nb{}", b.n),
            None => self.checked_entry(&self.table_entry(table), table, source),
        }
    }

    /// The coordinate entry `t` (C text) of `table` names, `source`'s start for the skip value:
    /// checked against `source` (`strata_nb`, which records a bad entry as the run's error),
    /// but for an input table whose every entry the run checked before the kernels
    /// ([`Emitter::prechecked`]: the check would never fail, and its bound and error flag would
    /// take registers in the loop that reads it).
    fn checked_entry(&self, t: &str, table: &Load, source: Interval) -> String {
        let start = super::extents::ext(source.start);
        if self.prechecked.contains(&(table.buffer, source)) {
            return format!("strata_nb_prechecked({t}, {start})");
        }
        format!("strata_nb({t}, {start}, {}, {}, err)", super::extents::ext(source.stop), table.buffer)
    }

    /// Whether a table entry names a neighbor (and every entry it is read through does).
    pub(super) fn table_present(&self, table: &Load, source: Interval) -> Vec<String> {
        match self.bound(table, source) {
            Some(b) => vec![format!("ok{}", b.n)],
            None => {
                let mut v = self.load_present(table);
                v.push(format!("strata_ok({})", self.table_entry(table)));
                v
            }
        }
    }

    /// A guarded value: the entry's interval check, then the value.
    pub(super) fn guarded(&self, table: &Load, source: Interval, value: &SExpr) -> String {
        match self.bound(table, source) {
            Some(_) => self.value(value),
            None => format!("((void){}, {})", self.table_coord(table, source), self.value(value)),
        }
    }

    /// Binds the table entries `exprs` read at the current point (not those inside folds, which
    /// read them at their own loop variables), innermost first; returns the C declarations and
    /// the emitter that reads them by name.
    pub(super) fn bind_tables(&self, exprs: &[&Rc<SExpr>]) -> (String, Emitter<'_>) {
        let mut found: Vec<(Rc<Load>, Interval)> = Vec::new();
        for e in exprs {
            collect(Part::Expr(e), &mut found);
        }
        let mut em = self.clone();
        let mut decls = String::new();
        for (table, source) in found {
            if em.bound(&table, source).is_some() {
                continue;
            }
            let n = em.next_entry.get();
            em.next_entry.set(n + 1);
            let load = em.load(&table);
            let entry = em.table_entry(&table);
            let outer: Vec<String> = em.load_present(&table);
            let raw = if outer.is_empty() { entry } else { format!("({}) ? {entry} : -1", outer.join(" && ")) };
            let checked = em.checked_entry(&format!("t{n}"), &table, source);
            let _ = write!(
                decls,
                "const int64_t t{n} = {raw}; const int ok{n} = t{n} != -1; const int64_t nb{n} = {checked}; "
            );
            em.entries.push(BoundEntry { load, source, n });
        }
        (decls, em)
    }
}

/// Collects the distinct table entries read in `p` (outside folds) in post-order.
fn collect(p: Part, found: &mut Vec<(Rc<Load>, Interval)>) {
    let note = |table: &Rc<Load>, source: Interval, found: &mut Vec<(Rc<Load>, Interval)>| {
        for c in &table.coords {
            collect(Part::Coord(c), found);
        }
        if !found.iter().any(|(t, s)| **t == **table && *s == source) {
            found.push((table.clone(), source));
        }
    };
    match p {
        Part::Expr(e) => match &**e {
            SExpr::Reduce { .. } => {}
            SExpr::Guard { table, source, value } => {
                note(table, *source, found);
                collect(Part::Expr(value), found);
            }
            _ => for_each_part(e, &mut |q| collect(q, found)),
        },
        Part::Coord(Coord::Table { table, source, .. }) => note(table, *source, found),
        Part::Coord(c) => for_each_coord_part(c, &mut |q| collect(q, found)),
    }
}
