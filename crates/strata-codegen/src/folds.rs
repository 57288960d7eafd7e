//! Folds as the passes and the printers see them: which folds a kernel's stores always
//! evaluate (hoisted out of the stores, in dependency order, each read as its accumulator),
//! which share their loop variables, and which read rows contiguous in memory. Pure functions
//! of the kernel IR, shared by the schedule pass, `jam-rows`, `strip-crosswise-folds` and the C
//! and CUDA printers.

use std::rc::Rc;

use strata_ir::BinaryOp;

use crate::kernel::{Kernel, Store};
use crate::sym::{Coord, SExpr};

/// Replaces the reductions `e` always evaluates (not under a select branch, a short-circuit
/// operator or another reduction) for which `pick` holds by their accumulators, collecting
/// them (once per id). Each collected reduction is preceded by the reductions hoisted out of
/// its own body: those that do not depend on its loop variables nor its accumulator (loop
/// invariants, e.g. a row mean inside a variance), evaluated once instead of once per step.
pub(crate) fn hoist_reductions(
    e: &Rc<SExpr>,
    out: &mut Vec<Rc<SExpr>>,
    pick: &dyn Fn(&Rc<SExpr>) -> bool,
) -> Rc<SExpr> {
    let mut go = |x: &Rc<SExpr>| hoist_reductions(x, out, pick);
    match &**e {
        SExpr::Reduce { id, vars, init, scalar, body } if pick(e) => {
            let body = hoist_reductions(body, out, &|r| invariant(r, vars, *id));
            let fold =
                Rc::new(SExpr::Reduce { id: *id, vars: vars.clone(), init: init.clone(), scalar: *scalar, body });
            // The same fold hoisted already (a value read twice at one point): its register,
            // under the id it was hoisted with.
            let same = out.iter().find_map(|r| match &**r {
                SExpr::Reduce { id: k, .. } if *k == *id && *r == fold => Some(*k),
                SExpr::Reduce { id: k, .. } if *k >= RENAMED && *r == rename_acc(&fold, *id, *k) => Some(*k),
                _ => None,
            });
            if let Some(k) = same {
                return Rc::new(SExpr::Acc(k));
            }
            // Another fold under an id already taken: one lowered op inlined at two points (a
            // view read at two shifts, `v[1:] + v[:-1]`) keeps its id in both copies, and
            // sharing the register would read the first copy's value for the second.
            let taken = |k: u32| out.iter().any(|r| matches!(&**r, SExpr::Reduce { id, .. } if *id == k));
            let fresh = match taken(*id) {
                true => (RENAMED..).find(|&k| !taken(k)).expect("a free accumulator id"),
                false => *id,
            };
            out.push(match fresh == *id {
                true => fold,
                false => rename_acc(&fold, *id, fresh),
            });
            Rc::new(SExpr::Acc(fresh))
        }
        SExpr::Unary(op, a, s) => Rc::new(SExpr::Unary(*op, go(a), *s)),
        SExpr::Cast(a, from, to) => Rc::new(SExpr::Cast(go(a), *from, *to)),
        SExpr::Binary(op, a, b, s) if !matches!(op, BinaryOp::And | BinaryOp::Or) => {
            let a = go(a);
            Rc::new(SExpr::Binary(*op, a, go(b), *s))
        }
        SExpr::Select(c, t, f) => Rc::new(SExpr::Select(go(c), t.clone(), f.clone())),
        _ => e.clone(),
    }
}

/// The folds the stores of kernel `k` always evaluate, hoisted ([`hoist_reductions`]), in
/// dependency order.
pub(crate) fn hoisted_folds(k: &Kernel) -> Vec<Rc<SExpr>> {
    let mut folds = Vec::new();
    hoisted_stores(k, &mut folds);
    folds
}

/// The stores of `k` with every fold hoisted into `folds` (in dependency order), each read
/// as its accumulator.
pub(crate) fn hoisted_stores(k: &Kernel, folds: &mut Vec<Rc<SExpr>>) -> Vec<Store> {
    k.stores
        .iter()
        .map(|st| Store { buffer: st.buffer, value: hoist_reductions(&st.value, folds, &|_| true) })
        .collect()
}

/// Whether every load of fold `r`'s body that depends on its innermost variable has that
/// variable as its last (contiguous) coordinate, and some load does.
pub(crate) fn contiguous_fold(r: &Rc<SExpr>) -> bool {
    let SExpr::Reduce { vars, body, .. } = &**r else { return false };
    vars.last().is_some_and(|(v, _)| matches!(loads_along(body, v), (true, true)))
}

/// Accumulator ids given to folds renamed when hoisted (lowering numbers folds from 0).
const RENAMED: u32 = 1 << 30;

/// Fold `r` (with id `from`) under id `to`: its own accumulator's reads renamed (folds nested
/// in it have ids of their own).
fn rename_acc(r: &Rc<SExpr>, from: u32, to: u32) -> Rc<SExpr> {
    fn go(e: &Rc<SExpr>, from: u32, to: u32) -> Rc<SExpr> {
        match &**e {
            SExpr::Acc(a) if *a == from => Rc::new(SExpr::Acc(to)),
            _ => crate::sym::map_children(e, &|x| go(x, from, to), &|c| {
                crate::sym::map_coord_parts(c, &|x| go(x, from, to), &|c2| c2.clone())
            }),
        }
    }
    let SExpr::Reduce { vars, init, scalar, body, .. } = &**r else { return r.clone() };
    Rc::new(SExpr::Reduce { id: to, vars: vars.clone(), init: init.clone(), scalar: *scalar, body: go(body, from, to) })
}

/// Whether reduction `r` can be evaluated outside fold `id` over `vars`.
pub(crate) fn invariant(r: &Rc<SExpr>, vars: &[(strata_ir::DimName, strata_ir::Interval)], id: u32) -> bool {
    !crate::sym::free_vars(r).iter().any(|v| vars.iter().any(|(d, _)| d == v)) && !crate::sym::reads_acc(r, id)
}

/// The loop variables of fold `r`.
pub(crate) fn fold_vars(r: &SExpr) -> Option<&[(strata_ir::DimName, strata_ir::Interval)]> {
    match r {
        SExpr::Reduce { vars, .. } => Some(vars),
        _ => None,
    }
}

/// Hoisted folds (in dependency order) in runs that may share one loop: consecutive folds over
/// the same variables that do not read each other's accumulators.
pub(crate) fn sibling_groups(folds: &[Rc<SExpr>]) -> Vec<Vec<&Rc<SExpr>>> {
    let mut groups: Vec<Vec<&Rc<SExpr>>> = Vec::new();
    for f in folds {
        let joins = groups.last().is_some_and(|g| {
            fold_vars(g[0]) == fold_vars(f)
                && !g.iter().any(|h| matches!(&***h, SExpr::Reduce { id, .. } if crate::sym::reads_acc(f, *id)))
        });
        match groups.last_mut() {
            Some(g) if joins => g.push(f),
            _ => groups.push(vec![f]),
        }
    }
    groups
}

/// For the loads in `e` that depend on `dim`: whether all have it as their last (contiguous)
/// coordinate, and whether there is any.
pub(crate) fn loads_along(e: &Rc<SExpr>, dim: &strata_ir::DimName) -> (bool, bool) {
    fn visit(p: crate::sym::Part, v: &strata_ir::DimName, ok: &mut bool, seen: &mut bool) {
        if let crate::sym::Part::Expr(e) = p {
            if let SExpr::Load(l) = &**e {
                if l.coords.iter().any(|c| matches!(c, Coord::Var { dim, .. } if dim == v)) {
                    *seen = true;
                    *ok &= matches!(l.coords.last(), Some(Coord::Var { dim, .. }) if dim == v);
                }
            }
            crate::sym::for_each_part(e, &mut |q| visit(q, v, ok, seen));
        }
    }
    let (mut ok, mut seen) = (true, false);
    visit(crate::sym::Part::Expr(e), dim, &mut ok, &mut seen);
    (ok, seen)
}
