//! The `unify-fold-vars` pass: sibling folds over the same ranges bind the same loop variables.
//!
//! Lowering names a fold's loop variables after the op that made it, so two reductions written
//! separately — the x and y components of a nabla built by a front end statement by statement,
//! each its own `map_reduce` — get different names even when they fold over the same neighbor
//! range. The schedule shares one loop among sibling folds only when their variables are equal
//! (`Layout::SharedFolds`: one table read and one skip check per step for all of them), so this
//! pass renames the variables of each fold outside any other fold to those of the first such
//! fold of its kernel over the same ranges.
//!
//! Folds whose variables visit stored coordinates only ([`crate::kernel::Kernel::sets`], keyed by
//! variable name) keep their names: a set belongs to the fold `coiterate` proved it for, and a
//! sibling taking its names would take its set (a row maximum given a row sum's stored entries
//! saw only those; the kernel verifier's `verify_sets` now refuses that).
//!
//! Preserves: every value (a fold's variables are bound by the fold; the new names are used
//! only where the fold mentions no variable of that name, free or bound, so nothing is
//! captured, and never for a variable with a set). Changes: only the names of fold variables.

use std::cell::RefCell;
use std::rc::Rc;

use strata_ir::{DimName, Interval};

use crate::kernel::KernelProgram;
use crate::sym::{for_each_coord_part, for_each_part, map_children, rename, Coord, Part, SExpr};

type Vars = Vec<(DimName, Interval)>;

/// The pass: in every kernel, folds outside other folds over equal ranges share their names.
pub fn unify_fold_vars(p: &mut KernelProgram) {
    for k in &mut p.kernels {
        let seen = RefCell::new(Vec::new());
        let with_set: Vec<DimName> = k.sets.iter().map(|s| s.var.clone()).collect();
        for st in &mut k.stores {
            st.value = unify(&st.value, &seen, &with_set);
        }
    }
}

/// `e` with its outermost folds renamed to the first seen fold over the same ranges.
fn unify(e: &Rc<SExpr>, seen: &RefCell<Vec<Vars>>, with_set: &[DimName]) -> Rc<SExpr> {
    let SExpr::Reduce { id, vars, init, scalar, body } = &**e else {
        return map_children(e, &|x| unify(x, seen, with_set), &|c| c.clone());
    };
    let init = unify(init, seen, with_set);
    if vars.iter().any(|(v, _)| with_set.contains(v)) {
        return Rc::new(SExpr::Reduce { id: *id, vars: vars.clone(), init, scalar: *scalar, body: body.clone() });
    }
    let same_ranges = |s: &Vars| s.len() == vars.len() && s.iter().zip(vars).all(|((_, a), (_, b))| a == b);
    let target = seen.borrow().iter().find(|s| same_ranges(s)).cloned();
    // (`seen` never holds a fold with a set: those returned above.)
    let (vars, body) = match target {
        Some(t) if &t != vars && !t.iter().any(|(name, _)| mentions(body, name)) => {
            let from: Vec<DimName> = vars.iter().map(|(n, _)| n.clone()).collect();
            let to: Vec<Coord> = t.iter().map(|(n, _)| Coord::Var { dim: n.clone(), offset: 0 }).collect();
            (t, rename(body, &from, &to, *id))
        }
        Some(_) => (vars.clone(), body.clone()),
        None => {
            seen.borrow_mut().push(vars.clone());
            (vars.clone(), body.clone())
        }
    };
    Rc::new(SExpr::Reduce { id: *id, vars, init, scalar: *scalar, body })
}

/// Whether `e` reads or binds the loop variable `name` anywhere.
fn mentions(e: &Rc<SExpr>, name: &DimName) -> bool {
    fn part(p: Part, name: &DimName, found: &mut bool) {
        match p {
            Part::Coord(Coord::Var { dim, .. }) => *found |= dim == name,
            Part::Coord(c) => for_each_coord_part(c, &mut |q| part(q, name, found)),
            Part::Expr(e) => {
                if let SExpr::Reduce { vars, .. } = &**e {
                    *found |= vars.iter().any(|(v, _)| v == name);
                }
                for_each_part(e, &mut |q| part(q, name, found));
            }
        }
    }
    let mut found = false;
    part(Part::Expr(e), name, &mut found);
    found
}
