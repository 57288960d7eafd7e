//! Gustavson's row workspace for sparse results whose column set is a union over a fold:
//! `C[i,j] = Σ_k A[i,k] · B[k,j]` into a compressed `C` (SpGEMM).
//!
//! The plain way to write a compressed result ([`crate::kernel::CompressedOut`]) visits every
//! column `j` of a row (or the stored coordinates of the operands read at `[i, j]`) and keeps
//! the non-zero values. When the value is a fold over `k` whose step reads `B[k, j]` with `B`'s
//! last level compressed, the columns that can be non-zero are the union, over the fold's
//! `k`, of the columns `B` stores in row `k` — which no loop over `j` can visit without `k`.
//! The pass [`gustavson`] recognizes that case and interchanges the loops: for each row, for
//! each `k` the fold visits, for each `j` stored in `B`'s row `k`, the step updates a dense
//! accumulator `w[j]` (the first touch of `j` in the row starts it at the fold's initial value,
//! lists `j` and sets its bit in a bitmap); then the listed columns, in order (sorted when few,
//! else read off the bitmap), give the row's entries.
//!
//! It changes no value: every `w[j]` sees the same steps in the same order as the fold at `j`
//! (the steps left out are those where `B[k, j]` is its fill value, which
//! [`crate::fill::unchanged_at_fill`] proves are no-ops), and a column no step touches holds the
//! value the store has when `B` is all fill, which [`crate::fill::zero_at_fill`] proves is zero,
//! so it is not stored.

use std::rc::Rc;

use crate::fill::{unchanged_at_fill, zero_at_fill};
use crate::kernel::KernelProgram;
use crate::sparse::{sparse_reads, CoIteration, IterSet, LevelStorage};
use crate::sym::{for_each_coord_part, for_each_part, map_children, Coord, Part, SExpr};

/// A compressed result's row computed in a workspace ([`gustavson`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Workspace {
    /// The fold ([`SExpr::Reduce`]) inside the store's value whose steps the workspace runs.
    pub fold: Rc<SExpr>,
    /// The store's value with the fold replaced by its accumulator (`SExpr::Acc(id)`): the
    /// value of a listed column, from its workspace entry.
    pub value: Rc<SExpr>,
}

/// The pass: gives every kernel writing a compressed result whose innermost level is not
/// already a loop over stored coordinates a [`Workspace`] where the conditions in the module
/// documentation hold, adding the loop over `B`'s stored columns (inside the fold's loops) to
/// [`crate::kernel::Kernel::sets`].
pub fn gustavson(program: &mut KernelProgram) {
    let scalar_of = |t: usize| program.buffers[program.sparse[t].values].scalar;
    let mut found = Vec::new();
    for (ki, k) in program.kernels.iter().enumerate() {
        let (Some(_), Some(inner), [store]) = (k.compressed(), k.domain.last(), &k.stores[..]) else { continue };
        if k.sets.iter().any(|c| c.var == inner.name) {
            continue;
        }
        let [fold] = &folds(&store.value)[..] else { continue };
        let SExpr::Reduce { id, vars, body, .. } = &**fold else { unreachable!("folds") };
        if !folds(body).is_empty() {
            continue;
        }
        let bound: Vec<&strata_ir::DimName> = vars.iter().map(|(v, _)| v).collect();
        let candidate = sparse_reads(body).into_iter().find(|r| {
            let t = &program.sparse[r.tensor];
            let Some((last, earlier)) = r.coords.split_last() else { return false };
            matches!(last, Coord::Var { dim, offset: 0 } if *dim == inner.name)
                && matches!(t.storage.last(), Some(LevelStorage::Compressed { .. }))
                && t.levels.last().is_some_and(|l| l.interval == inner.interval)
                && earlier.iter().all(|c| !coord_reads(c, &inner.name))
                && earlier.iter().any(|c| bound.iter().any(|v| coord_reads(c, v)))
        });
        let Some(b) = candidate else { continue };
        let reads = std::slice::from_ref(&b);
        if !unchanged_at_fill(body, *id, reads, &scalar_of) || !zero_at_fill(&store.value, reads, &scalar_of) {
            continue;
        }
        let level = b.coords.len() - 1;
        let set = CoIteration {
            var: inner.name.clone(),
            range: inner.interval,
            set: IterSet::Stored { read: b.clone(), level },
            merge: false,
        };
        let value = replace(&store.value, fold, &Rc::new(SExpr::Acc(*id)));
        if !folds(&value).is_empty() {
            continue;
        }
        found.push((ki, set, Workspace { fold: fold.clone(), value }));
    }
    for (ki, set, w) in found {
        let k = &mut program.kernels[ki];
        k.sets.push(set);
        if let Some(c) = k.as_nest_mut().and_then(|n| n.compressed.as_mut()) {
            c.workspace = Some(w);
        }
    }
}

/// The folds in `e`, outermost only.
fn folds(e: &Rc<SExpr>) -> Vec<Rc<SExpr>> {
    fn walk(p: Part, out: &mut Vec<Rc<SExpr>>) {
        match p {
            Part::Expr(e) if matches!(&**e, SExpr::Reduce { .. }) => out.push(e.clone()),
            Part::Expr(e) => for_each_part(e, &mut |q| walk(q, out)),
            Part::Coord(c) => for_each_coord_part(c, &mut |q| walk(q, out)),
        }
    }
    let mut out = Vec::new();
    walk(Part::Expr(e), &mut out);
    out
}

/// Whether coordinate `c` depends on loop variable `v`.
fn coord_reads(c: &Coord, v: &strata_ir::DimName) -> bool {
    crate::sym::free_vars(&Rc::new(SExpr::Index(c.clone()))).contains(v)
}

/// `e` with every occurrence of `what` replaced by `with`.
fn replace(e: &Rc<SExpr>, what: &Rc<SExpr>, with: &Rc<SExpr>) -> Rc<SExpr> {
    if e == what {
        return with.clone();
    }
    map_children(e, &|x| replace(x, what, with), &|c| c.clone())
}
