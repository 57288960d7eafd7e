//! The `jam-rows` pass: kernels whose points each sum a contiguous row in vector lanes (a
//! matrix–vector product, row sums) step the folds of [`JAM`] neighbouring points of the
//! innermost level together ([`Layout::JammedRows`]), so that several rows stream from memory
//! at once. Runs after `schedule`, whose per-point layouts it refines; values are unchanged
//! (every point folds as alone).

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

/// Whether kernel `k` runs its rows in groups: a plain nest laid out per point (its sibling
/// folds perhaps sharing a loop) whose stores are
/// always present, every fold summed in vector lanes (reassociated) along a contiguous row,
/// reading no other fold and nesting none, all sharing one loop, no value reading a neighbor
/// table, and at least a group of points on the innermost level.
fn jammable(p: &KernelProgram, k: &Kernel) -> bool {
    let Some(s) = &k.schedule else { return false };
    let KernelKind::Nest(n) = &k.kind else { return false };
    let Some(inner) = k.domain.last() else { return false };
    if !matches!(s.layout, Layout::PerPoint | Layout::SharedFolds)
        || n.compressed.is_some()
        || !n.windows.is_empty()
        || !k.sets.is_empty()
    {
        return false;
    }
    let values: Vec<&Rc<SExpr>> = k.stores.iter().map(|st| &st.value).collect();
    let folds = crate::folds::hoisted_folds(k);
    let vector = |r: &Rc<SExpr>| matches!(&**r, SExpr::Reduce { id, .. } if s.reassociate.contains(id));
    !folds.is_empty()
        && inner.interval.len() as i64 >= JAM
        && values.iter().all(|v| crate::emit_c::always_present(p, k, v))
        && folds.iter().all(|r| vector(r) && crate::folds::contiguous_fold(r) && crate::sym::fold_height(r) == 1)
        && crate::folds::sibling_groups(&folds).len() == 1
        && !crate::emit_c::reads_tables(p, k, &values)
}
