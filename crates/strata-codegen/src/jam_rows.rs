//! The `jam-rows` pass: kernels whose points' folds can step together run the folds of [`JAM`]
//! neighbouring points of the innermost level in one loop ([`Layout::JammedRows`]), each point
//! with its own accumulators. Two kinds qualify:
//! - points that each sum a contiguous row in vector lanes (a matrix–vector product, row
//!   sums): several rows then stream from memory at once;
//! - points that fold over the same stored coordinates of a sparse operand, which the innermost
//!   level does not index, reading their other operands along that level (a CSR matrix times
//!   a dense matrix, `ij,jk->ik`): the group walks the row's positions, coordinates and values
//!   once instead of once per point, and reads neighbouring elements of the dense rows.
//!
//! Runs after `schedule`, whose per-point layouts it refines; values are unchanged (every point
//! folds as alone, in the same order).

use std::rc::Rc;

use crate::kernel::{Kernel, KernelKind, KernelProgram};
use crate::schedule::{Layout, JAM};
use crate::sym::SExpr;

/// The pass.
pub fn jam_rows(p: &mut KernelProgram) {
    let jam: Vec<bool> = p.kernels.iter().map(|k| jammable(p, k)).collect();
    for (k, jam) in p.kernels.iter_mut().zip(jam) {
        if let (true, Some(s)) = (jam, k.schedule.as_mut()) {
            s.layout = Layout::JammedRows;
        }
    }
}

/// Whether kernel `k` runs its points in groups: a plain nest laid out per point (its sibling
/// folds perhaps sharing a loop) whose stores are always present, with at least a group of
/// points on the innermost level, whose folds — all sharing one loop, reading no other fold,
/// nesting none, reading no neighbor table — either each sum a contiguous row in vector lanes
/// (reassociated) or walk stored coordinates the group shares ([`shared_walk`]).
fn jammable(p: &KernelProgram, k: &Kernel) -> bool {
    let Some(s) = &k.schedule else { return false };
    let KernelKind::Nest(n) = &k.kind else { return false };
    let Some(inner) = k.domain.last() else { return false };
    if !matches!(s.layout, Layout::PerPoint | Layout::SharedFolds) || n.compressed.is_some() || !n.windows.is_empty() {
        return false;
    }
    let values: Vec<&Rc<SExpr>> = k.stores.iter().map(|st| &st.value).collect();
    let folds = crate::folds::hoisted_folds(k);
    let vector = |r: &Rc<SExpr>| matches!(&**r, SExpr::Reduce { id, .. } if s.reassociate.contains(id));
    let rows = k.sets.is_empty() && folds.iter().all(|r| vector(r) && crate::folds::contiguous_fold(r));
    !folds.is_empty()
        && inner.interval.len() as i64 >= JAM
        && (rows || shared_walk(k, &folds, &inner.name))
        && folds.iter().all(|r| crate::sym::fold_height(r) == 1)
        && values.iter().all(|v| crate::emit_c::always_present(p, k, v))
        && crate::folds::sibling_groups(&folds).len() == 1
        && !crate::emit_c::reads_tables(p, k, &values)
}

/// Whether the folds of `k` (one sibling group) walk stored coordinates that the points of the
/// innermost level `inner` share: every loop of `k` visiting a set is a fold variable, no set
/// and no sparse read in a fold depends on `inner`, and every dense load that depends on
/// `inner` has it as its last (contiguous) coordinate.
fn shared_walk(k: &Kernel, folds: &[Rc<SExpr>], inner: &strata_ir::DimName) -> bool {
    let Some(vars) = crate::folds::fold_vars(&folds[0]) else { return false };
    let reads_inner = |r: &Rc<crate::sym::SparseRead>| {
        crate::sym::free_vars(&Rc::new(SExpr::Sparse(r.clone()))).iter().any(|v| v == inner)
    };
    !k.sets.is_empty()
        && k.sets.iter().all(|c| vars.iter().any(|(v, _)| *v == c.var) && !c.set.reads().into_iter().any(reads_inner))
        && folds.iter().all(|r| {
            let SExpr::Reduce { body, .. } = &**r else { return false };
            !crate::sparse::sparse_reads(body).iter().any(reads_inner) && crate::folds::loads_along(body, inner).0
        })
}
