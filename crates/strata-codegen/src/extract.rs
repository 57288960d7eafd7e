//! The cost rule of extraction of temporaries: whether a value read through a neighbor table
//! is computed once over its own domain into a temporary (`Lowerer::extract_temporary`) or
//! recomputed at every reference.

use std::rc::Rc;

use strata_ir::Level;

use crate::sym::{Coord, SExpr};

/// Whether the value with scalar leaves `parts`, over dense-like `levels` and reading loop
/// variables of those levels only, is worth a temporary: it reads through a neighbor table
/// and is not [`cheap_to_recompute`].
pub(crate) fn worth_extracting(parts: &[Rc<SExpr>], levels: &[Level]) -> bool {
    parts.iter().any(reads_through_table)
        && levels.iter().all(|l| l.format.is_dense_like())
        && !cheap_to_recompute(parts)
}

/// Most loads (table entries included) of a value read through a neighbor table that
/// [`cheap_to_recompute`] lets be recomputed at every reference instead of extracted.
const RECOMPUTE_LOADS: u64 = 8;

/// The cost rule of extraction of temporaries: a value read through a neighbor table is
/// recomputed at each reference, not extracted, when evaluating it takes at most
/// [`RECOMPUTE_LOADS`] loads (table entries included; a load inside a fold counts once per
/// step, so GT4Py's `neighbor_sum` over an edge's two vertices is cheap) and no sparse lookup.
/// On a mesh numbered for locality the recomputation's loads hit the cache (the edges of
/// neighboring vertices are near each other), while a temporary costs a store and a gathered
/// reload from memory per point and leaf, plus a presence column where the value can be
/// skipped: measured on the nabla (docs/performance.md), recomputing the edge flux at each of
/// the ~2.3 vertex references per edge is 20 % faster than the temporary. A value with a long
/// fold, or one that itself reads an expensive value through a table (the inner laplacian of
/// a mesh laplacian of laplacian), is extracted.
fn cheap_to_recompute(parts: &[Rc<SExpr>]) -> bool {
    use crate::sym::Part;
    fn part(p: Part, trips: u64, loads: &mut u64, plain: &mut bool) {
        match p {
            Part::Expr(e) => {
                let mut inner = trips;
                match &**e {
                    SExpr::Load(_) | SExpr::Guard { .. } => *loads = loads.saturating_add(trips),
                    SExpr::Sparse(_) => *plain = false,
                    SExpr::Reduce { vars, .. } => {
                        inner = vars.iter().fold(trips, |t, (_, i)| t.saturating_mul(i.len()));
                    }
                    _ => {}
                }
                crate::sym::for_each_part(e, &mut |q| part(q, inner, loads, plain));
            }
            Part::Coord(c) => {
                if matches!(c, Coord::Table { .. }) {
                    *loads = loads.saturating_add(trips);
                }
                crate::sym::for_each_coord_part(c, &mut |q| part(q, trips, loads, plain));
            }
        }
    }
    let (mut loads, mut plain) = (0, true);
    for e in parts {
        part(Part::Expr(e), 1, &mut loads, &mut plain);
    }
    plain && loads <= RECOMPUTE_LOADS
}

/// Whether `e` loads through a neighbor table anywhere.
fn reads_through_table(e: &Rc<SExpr>) -> bool {
    fn part(p: crate::sym::Part, found: &mut bool) {
        use crate::sym::Part;
        match p {
            Part::Expr(e) => {
                *found |= matches!(&**e, SExpr::Guard { .. });
                crate::sym::for_each_part(e, &mut |q| part(q, found));
            }
            Part::Coord(c) => {
                *found |= matches!(c, Coord::Table { .. });
                crate::sym::for_each_coord_part(c, &mut |q| part(q, found));
            }
        }
    }
    let mut found = false;
    part(crate::sym::Part::Expr(e), &mut found);
    found
}
