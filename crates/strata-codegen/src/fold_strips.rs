//! The `strip-crosswise-folds` pass: folds that read their operands across memory run in strips.
//!
//! A fold per point reads, at each step, the operands' elements along the fold's variable. When
//! an operand stores that variable outside the kernel's innermost loop variable — GT4Py's
//! connectivities and local fields keep the neighbor dimension outermost (`NB_Edge[0:7],
//! Vertex[0:n]`) — each step of each point touches another line: a 7-neighbor reduction over
//! two such operands walks 14 streams at once, and measured twice as slow as the same fold
//! over row-major operands. In strips of the innermost level (`schedule::Layout::Strips`: a
//! row of accumulators per fold, the fold loop outside the strip's loop) every step reads one
//! contiguous run of each operand instead.
//!
//! The pass marks a plain nest ([`crate::kernel::Nest::fold_strips`]) when one of its folds
//! reads an operand *crosswise* (the fold's innermost variable at some coordinate, the
//! kernel's innermost domain variable as the last one) and none of them reads along its
//! variable contiguously (which strips would read with a stride); the schedule then lays it
//! out in strips where every store is always present, sibling folds sharing each strip's
//! loop. Preserves: every value, bit for bit (each point folds its steps in the same order).
//! Changes: only the loop order.

use std::rc::Rc;

use strata_ir::DimName;

use crate::kernel::{Kernel, KernelKind, KernelProgram};
use crate::sym::{for_each_coord_part, for_each_part, Coord, Load, Part, SExpr};

/// The pass: marks the plain nests whose folds read crosswise.
pub fn strip_crosswise_folds(p: &mut KernelProgram) {
    for k in &mut p.kernels {
        let mark = crosswise_kernel(k);
        if let KernelKind::Nest(n) = &mut k.kind {
            n.fold_strips = mark;
        }
    }
}

/// Whether kernel `k` is a plain nest (no windows, sparse result or stored-coordinate loops)
/// some of whose folds read an operand crosswise, none along its own variable.
fn crosswise_kernel(k: &Kernel) -> bool {
    let KernelKind::Nest(n) = &k.kind else { return false };
    let Some(inner) = k.domain.last() else { return false };
    if !n.windows.is_empty() || n.compressed.is_some() || !k.sets.is_empty() {
        return false;
    }
    let reads: Vec<Reads> = crate::folds::hoisted_folds(k).iter().filter_map(|f| fold_reads(f, &inner.name)).collect();
    reads.iter().any(|r| r.crosswise) && !reads.iter().any(|r| r.along)
}

/// How a fold's loads meet its innermost variable.
#[derive(Default)]
struct Reads {
    /// Some load has the variable at an outer coordinate and the kernel's innermost domain
    /// variable as its last one.
    crosswise: bool,
    /// Some load has the variable as its last coordinate (contiguous along the fold).
    along: bool,
}

/// The reads of fold `r` (value loads and neighbor-table loads alike) against its innermost
/// variable, `inner` being the kernel's innermost domain variable.
fn fold_reads(r: &Rc<SExpr>, inner: &DimName) -> Option<Reads> {
    let SExpr::Reduce { vars, body, .. } = &**r else { return None };
    let (v, _) = vars.last()?;
    let mut reads = Reads::default();
    visit(Part::Expr(body), v, inner, &mut reads);
    Some(reads)
}

fn visit(p: Part, v: &DimName, inner: &DimName, reads: &mut Reads) {
    let is = |c: Option<&Coord>, d: &DimName| matches!(c, Some(Coord::Var { dim, .. }) if dim == d);
    let mut note = |l: &Load| {
        let last = l.coords.last();
        if is(last, v) {
            reads.along = true;
        } else if is(last, inner) && l.coords.iter().any(|c| is(Some(c), v)) {
            reads.crosswise = true;
        }
    };
    match p {
        Part::Expr(e) => {
            match &**e {
                SExpr::Load(l) => note(l),
                SExpr::Guard { table, .. } => note(table),
                _ => {}
            }
            for_each_part(e, &mut |q| visit(q, v, inner, reads));
        }
        Part::Coord(c) => {
            if let Coord::Table { table, .. } = c {
                note(table);
            }
            for_each_coord_part(c, &mut |q| visit(q, v, inner, reads));
        }
    }
}
