//! The loop-IR verifier's check of set-based iteration: a loop that visits only stored
//! coordinates ([`CoIteration`]) must leave out no point that changes a value.
//!
//! [`crate::sparse::coiterate`] records its decisions as [`Kernel::sets`], keyed by loop
//! variable; every later pass may move, merge or rename folds. This check does not trust the
//! record: it re-derives, from each statement the loop governs, that leaving the loop's
//! left-out points out changes nothing ([`crate::fill`]'s algebra):
//! - a fold binding the variable (every such fold, wherever a pass put it) must leave its
//!   accumulator unchanged where the set's read is its fill value (each member of an
//!   intersection alone, a union's members together), or need the read when it is ragged;
//! - a domain level's set: every store must be zero there (outputs start as zeros), or be
//!   skipped with the ragged read.
//!
//! So a pass that gives a non-annihilating fold (a count, a maximum on negative data) the set of
//! a sibling sum fails verification naming the pass, the kernel and the statement.

use std::rc::Rc;

use strata_ir::Scalar;

use crate::fill::{unchanged_at_fill, zero_at_fill};
use crate::kernel::{Kernel, KernelProgram};
use crate::sparse::{required_reads, CoIteration, IterSet, LevelStorage};
use crate::sym::SparseRead;
use crate::sym::{for_each_coord_part, for_each_part, show, Part, SExpr};

/// Checks every set of `kernel` against the statements it governs; the first violation found.
pub(crate) fn verify_sets(program: &KernelProgram, kernel: &Kernel) -> Result<(), String> {
    if kernel.sets.is_empty() {
        return Ok(());
    }
    let scalar_of = |t: usize| program.buffers[program.sparse[t].values].scalar;
    let ragged = |r: &Rc<SparseRead>, level: usize| {
        program.sparse.get(r.tensor).is_some_and(|t| matches!(t.storage.get(level), Some(LevelStorage::Ragged { .. })))
    };
    for set in &kernel.sets {
        let members = members(&set.set);
        if kernel.domain.iter().any(|l| l.name == set.var) {
            for st in &kernel.stores {
                let value = match &*st.value {
                    SExpr::Present(x) => x,
                    _ => &st.value,
                };
                let ok = left_out_is_a_no_op(set, &members, &ragged, value, &|reads| {
                    zero_at_fill(&st.value, reads, &scalar_of)
                });
                if !ok {
                    return Err(format!(
                        "the domain level `{}` visits {} only, but the store into b{} is not zero where it leaves out: {}",
                        set.var,
                        set.set,
                        st.buffer,
                        show(&st.value)
                    ));
                }
            }
        }
        for st in kernel.all_stores() {
            check_folds(&st.value, set, &members, &scalar_of, &ragged)?;
        }
    }
    Ok(())
}

/// Whether the points `set` leaves out change nothing for a statement: `at_fill` holds where
/// the given reads are their fill value (a union's members together, each other member alone),
/// and a ragged member's skipped positions are skipped by `needs` (the statement needs the read).
fn left_out_is_a_no_op(
    set: &CoIteration,
    members: &[(Rc<SparseRead>, usize)],
    ragged: &dyn Fn(&Rc<SparseRead>, usize) -> bool,
    needs: &Rc<SExpr>,
    at_fill: &dyn Fn(&[Rc<SparseRead>]) -> bool,
) -> bool {
    if set.is_union() {
        let reads: Vec<_> = members.iter().map(|(r, _)| r.clone()).collect();
        return at_fill(&reads);
    }
    members.iter().all(|(r, level)| {
        if ragged(r, *level) {
            required_reads(needs).contains(r)
        } else {
            at_fill(std::slice::from_ref(r))
        }
    })
}

/// The stored levels a set walks or locates, with their levels.
fn members(set: &IterSet) -> Vec<(Rc<SparseRead>, usize)> {
    match set {
        IterSet::Stored { read, level } => vec![(read.clone(), *level)],
        IterSet::Intersection(sets) | IterSet::Union(sets) => sets.iter().flat_map(members).collect(),
    }
}

/// Every fold in `e` binding `set.var` leaves its accumulator unchanged where the set leaves out.
fn check_folds(
    e: &Rc<SExpr>,
    set: &CoIteration,
    members: &[(Rc<SparseRead>, usize)],
    scalar_of: &dyn Fn(usize) -> Scalar,
    ragged: &dyn Fn(&Rc<SparseRead>, usize) -> bool,
) -> Result<(), String> {
    if let SExpr::Reduce { id, vars, body, .. } = &**e {
        if vars.iter().any(|(v, _)| v == &set.var) {
            let ok = left_out_is_a_no_op(set, members, ragged, body, &|reads| {
                unchanged_at_fill(body, *id, reads, scalar_of)
            });
            if !ok {
                return Err(format!(
                    "the fold over `{}` visits {} only, but its step changes the accumulator where it leaves out: {}",
                    set.var,
                    set.set,
                    show(e)
                ));
            }
        }
    }
    let mut result = Ok(());
    visit_children(e, &mut |x| {
        if result.is_ok() {
            result = check_folds(x, set, members, scalar_of, ragged);
        }
    });
    result
}

/// Calls `f` on every expression directly below `e` (inside coordinates too).
fn visit_children(e: &Rc<SExpr>, f: &mut dyn FnMut(&Rc<SExpr>)) {
    fn part(p: Part, f: &mut dyn FnMut(&Rc<SExpr>)) {
        match p {
            Part::Expr(x) => f(x),
            Part::Coord(c) => for_each_coord_part(c, &mut |q| part(q, f)),
        }
    }
    for_each_part(e, &mut |p| part(p, f));
}
