//! Passes `materialize_invariant_reductions` and `materialize_nested_folds`: a reduction is
//! computed once, by a kernel of its own over the loop variables it depends on, into a
//! temporary the first kernel reads —
//! - when it would be recomputed along a loop it does not depend on (a loop of its kernel, or
//!   of an enclosing fold it cannot be hoisted out of);
//! - when it is a long fold nested in an enclosing fold (`Σᵢ Σₖ a[i, k]·x[k]`, the sum of a
//!   matrix-vector product): as a kernel over the enclosing fold's points it runs as one,
//!   rows in parallel and jammed ([`materialize_nested_folds`]).
//!
//! Fusion inlines every value at its use, which is right for elementwise work but not for a
//! fold broadcast along another dimension: `(x - mean(x, axis 0)) / std(x, axis 0)` over an
//! `n × n` matrix would recompute each column's mean and deviation at every row, `O(n³)`
//! instead of `O(n²)`; the same holds inside a fold (`sum over j of f(x[i, j], mean over k of
//! x[k, j])` recomputes the column mean for every `i`). Folds that are invariant inside an
//! enclosing fold and depend on every loop outside it are hoisted by the C emitter instead
//! (a row's mean before the row's fold): that needs no memory and is left alone. Decision: the
//! temporary holds one value per point of the loops the reduction depends on, fewer than
//! those around it.
//!
//! A reduction under a `select` branch (a concatenation's piece) is evaluated only where the
//! branch is taken, and may read out of its operands elsewhere (a reshape's computed
//! coordinates): its kernel stores it under the same conditions (zero elsewhere, never read),
//! and a reduction whose conditions read a loop it does not depend on stays where it is.

use std::collections::BTreeSet;
use std::rc::Rc;

use strata_ir::{DimName, Interval, Level};

use crate::kernel::{Buffer, Kernel, Store};
use crate::sym::{for_each_coord_part, for_each_part, map_children, map_coord_parts, Coord, Load, Part, SExpr};

/// What an expression refers to from outside: loop variables not bound inside it, and
/// accumulators used versus defined inside it.
#[derive(Default)]
struct Uses {
    dims: BTreeSet<DimName>,
    accs_used: BTreeSet<u32>,
    accs_defined: BTreeSet<u32>,
}

fn uses(e: &Rc<SExpr>) -> Uses {
    fn visit(p: Part, bound: &mut Vec<DimName>, u: &mut Uses) {
        match p {
            Part::Coord(c) => {
                if let Coord::Var { dim, .. } = c {
                    if !bound.contains(dim) {
                        u.dims.insert(dim.clone());
                    }
                }
                for_each_coord_part(c, &mut |q| visit(q, bound, u));
            }
            Part::Expr(e) => match &**e {
                SExpr::Acc(id) => {
                    u.accs_used.insert(*id);
                }
                SExpr::Reduce { id, vars, init, body, .. } => {
                    u.accs_defined.insert(*id);
                    visit(Part::Expr(init), bound, u);
                    let n = bound.len();
                    bound.extend(vars.iter().map(|(d, _)| d.clone()));
                    visit(Part::Expr(body), bound, u);
                    bound.truncate(n);
                }
                _ => for_each_part(e, &mut |q| visit(q, bound, u)),
            },
        }
    }
    let mut u = Uses::default();
    visit(Part::Expr(e), &mut Vec::new(), &mut u);
    u
}

/// Loop variables with their ranges.
type LoopGroup = Vec<(DimName, Interval)>;

/// The loops around a point of a kernel's expression: the kernel's own, then those of the
/// enclosing folds, outermost first (one group per fold).
type Loops = Vec<LoopGroup>;

/// The `select` conditions around a point, each with the branch taken (`true`: the condition
/// holds).
type Conditions = Vec<(Rc<SExpr>, bool)>;

/// A reduction to materialize, the loops it depends on, and the conditions under which it is
/// evaluated.
type Found = Option<(Rc<SExpr>, LoopGroup, Conditions)>;

/// Which reductions a pass materializes.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    /// Those recomputed along a loop they do not depend on.
    Invariant,
    /// Long folds inside an enclosing fold ([`materialize_nested_folds`]).
    Nested,
}

/// The fewest steps of a fold [`materialize_nested_folds`] computes on its own: its temporary
/// (one value per step of the enclosing folds) then moves at most 1/64 of the bytes the fold
/// reads, and its points are long enough to run as vector sums
/// ([`crate::schedule::REASSOCIATE_MIN`]).
pub const NESTED_FOLD_MIN: i64 = crate::schedule::REASSOCIATE_MIN;

/// Whether nested fold `r`, evaluated once per point of `over`, is worth its own kernel: at
/// least [`NESTED_FOLD_MIN`] steps, and a temporary no larger than the largest of `buffers` it
/// reads, so that the temporary never costs more memory than the operands the program already
/// holds.
fn nested_worth(r: &Rc<SExpr>, over: &LoopGroup, buffers: &[Buffer]) -> bool {
    let SExpr::Reduce { vars, .. } = &**r else { return false };
    let steps: i64 = vars.iter().map(|(_, i)| i.len() as i64).product();
    let points: i64 = over.iter().map(|(_, i)| i.len() as i64).product();
    let mut largest = 0usize;
    crate::sym::for_each_load(r, &mut |l| largest = largest.max(buffers.get(l.buffer).map_or(0, Buffer::len)));
    steps >= NESTED_FOLD_MIN && points <= largest as i64
}

/// The innermost reduction in `e` that `want` asks for — recomputed along a loop it does not
/// depend on (a kernel loop, or a fold it cannot be hoisted out of), or a long fold inside an
/// enclosing fold — with the loop variables it depends on (and their ranges, in loop order).
/// Reductions reading an enclosing accumulator stay.
/// The program's `buffers` bound a nested fold's temporary.
fn candidate(e: &Rc<SExpr>, loops: &mut Loops, conds: &mut Conditions, want: Want, buffers: &[Buffer]) -> Found {
    fn in_part(p: Part, loops: &mut Loops, conds: &mut Conditions, want: Want, buffers: &[Buffer], found: &mut Found) {
        if found.is_some() {
            return;
        }
        match p {
            Part::Expr(x) => *found = candidate(x, loops, conds, want, buffers),
            Part::Coord(c) => for_each_coord_part(c, &mut |q| in_part(q, loops, conds, want, buffers, found)),
        }
    }
    let mut found = None;
    match &**e {
        SExpr::Reduce { vars, init, body, .. } => {
            in_part(Part::Expr(init), loops, conds, want, buffers, &mut found);
            loops.push(vars.clone());
            in_part(Part::Expr(body), loops, conds, want, buffers, &mut found);
            loops.pop();
        }
        SExpr::Select(c, t, f) => {
            in_part(Part::Expr(c), loops, conds, want, buffers, &mut found);
            for (branch, taken) in [(t, true), (f, false)] {
                conds.push((c.clone(), taken));
                in_part(Part::Expr(branch), loops, conds, want, buffers, &mut found);
                conds.pop();
            }
        }
        _ => for_each_part(e, &mut |p| in_part(p, loops, conds, want, buffers, &mut found)),
    }
    if found.is_some() || !matches!(&**e, SExpr::Reduce { .. }) {
        return found;
    }
    let u = uses(e);
    if !u.accs_used.is_subset(&u.accs_defined) {
        return None;
    }
    // The C emitter hoists a fold out of enclosing folds it does not depend on; it is then
    // evaluated inside the innermost loop group (kernel loops are group 0) it depends on.
    let depends = |g: &LoopGroup| g.iter().any(|(d, _)| u.dims.contains(d));
    let home = loops.iter().rposition(depends).unwrap_or(0);
    let around: Vec<&(DimName, Interval)> = loops[..=home].iter().flatten().collect();
    let invariant = !around.iter().all(|(d, _)| u.dims.contains(d));
    let over: LoopGroup = around.into_iter().filter(|(d, _)| u.dims.contains(d)).cloned().collect();
    let wanted = match want {
        Want::Invariant => invariant,
        // Inside an enclosing fold (group 0 is the kernel's own loops).
        Want::Nested => home >= 1 && nested_worth(e, &over, buffers),
    };
    if !wanted {
        return None;
    }
    // Every variable it reads must be one of these loops (not an element variable, say), and
    // so must every condition it is evaluated under.
    let conditions_computable = conds.iter().all(|(c, _)| {
        let cu = uses(c);
        cu.accs_used.is_empty() && cu.dims.iter().all(|d| over.iter().any(|(v, _)| v == d))
    });
    (over.len() == u.dims.len() && conditions_computable).then(|| (e.clone(), over, conds.clone()))
}

/// `value` where every condition holds as taken, zero of `scalar` elsewhere.
fn under(value: Rc<SExpr>, conds: &Conditions, scalar: strata_ir::Scalar) -> Rc<SExpr> {
    let zero = Rc::new(SExpr::Const(strata_runtime::Sv::zero(scalar)));
    conds.iter().rev().fold(value, |v, (c, taken)| {
        Rc::new(if *taken {
            SExpr::Select(c.clone(), v, zero.clone())
        } else {
            SExpr::Select(c.clone(), zero.clone(), v)
        })
    })
}

fn replace(e: &Rc<SExpr>, target: &Rc<SExpr>, with: &Rc<SExpr>) -> Rc<SExpr> {
    if Rc::ptr_eq(e, target) || **e == **target {
        return with.clone();
    }
    map_children(e, &|x| replace(x, target, with), &|c| replace_in_coord(c, target, with))
}

fn replace_in_coord(c: &Coord, target: &Rc<SExpr>, with: &Rc<SExpr>) -> Coord {
    map_coord_parts(c, &|x| replace(x, target, with), &|c2| replace_in_coord(c2, target, with))
}

/// Runs the pass over every plain kernel (scans and GEMMs keep their form), placing each
/// reduction's kernel before its first reader.
pub fn materialize_invariant_reductions(kernels: Vec<Kernel>, buffers: &mut Vec<Buffer>) -> Vec<Kernel> {
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        materialize(k, buffers, &mut out, Want::Invariant);
    }
    out
}

/// Runs the nested-fold pass over every plain kernel: a fold of at least [`NESTED_FOLD_MIN`]
/// steps inside an enclosing fold (the sum of a matrix-vector product, the trace of a matrix
/// product) is computed first, by a kernel over the points of the enclosing folds, into a
/// temporary the enclosing fold then reads. Inlined, every step of the outer fold runs the
/// inner one as a nested loop on one thread; on its own it is a kernel like any other — its
/// points in parallel, rows of a matrix-vector product jammed (`jam-rows`), a product of
/// matrices a GEMM (`recognize-matmul`). Each fold runs its steps in its own order either way,
/// so values change only where a schedule reassociates a sum (to rounding, as anywhere).
pub fn materialize_nested_folds(kernels: Vec<Kernel>, buffers: &mut Vec<Buffer>) -> Vec<Kernel> {
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        materialize(k, buffers, &mut out, Want::Nested);
    }
    out
}

fn materialize(mut k: Kernel, buffers: &mut Vec<Buffer>, out: &mut Vec<Kernel>, want: Want) {
    let eligible = k.as_nest().is_some() && k.domain.iter().all(|l| l.format.is_dense_like());
    let kernel_loops: LoopGroup = k.domain.iter().map(|l| (l.name.clone(), l.interval)).collect();
    let next = |k: &Kernel, buffers: &[Buffer]| {
        k.stores
            .iter()
            .find_map(|st| candidate(&st.value, &mut vec![kernel_loops.clone()], &mut Vec::new(), want, buffers))
    };
    while let Some((r, over, conds)) = eligible.then(|| next(&k, buffers)).flatten() {
        let SExpr::Reduce { scalar, .. } = &*r else { unreachable!("candidates are reductions") };
        let levels: Vec<Level> = over.iter().map(|(d, iv)| Level::dense(d.clone(), *iv)).collect();
        let name = format!("red{}", buffers.len());
        buffers.push(Buffer::temporary(name.clone(), *scalar, levels.clone(), Vec::new()));
        let b = buffers.len() - 1;
        let coords = crate::sym::level_vars(&levels);
        let load = Rc::new(SExpr::Load(Rc::new(Load { buffer: b, coords })));
        for st in &mut k.stores {
            st.value = replace(&st.value, &r, &load);
        }
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        let why = match want {
            Want::Invariant => "a reduction",
            Want::Nested => "a fold nested in a fold",
        };
        let reduced = Kernel::nest(
            format!("%{name}: {why} in `{}` depending on [{}] only, computed once", k.comment, names.join(", ")),
            levels,
            vec![Store { buffer: b, value: under(r.clone(), &conds, *scalar) }],
        );
        materialize(reduced, buffers, out, want);
    }
    out.push(k);
}
