//! The `split-pieces` pass: a kernel whose stores choose between values by comparing a loop
//! variable with a constant — a concatenation's pieces (an assignment `u[1:-1, 1:-1] = …`
//! joins the untouched borders and the new interior), GT4Py's `concat_where` — runs as one
//! kernel per piece of its domain, so no loop tests the coordinate at every point and the
//! interior's loop vectorizes. The pass after it (`simplify`) drops the branches each piece's
//! ranges decide. Values are unchanged: every point computes the same expression.
//!
//! Measured on a 1024² diffusion step written as an assignment (one thread): the select chain
//! in the innermost loop made it ~2× slower than the same stencil without the borders.

use std::rc::Rc;

use strata_ir::{Interval, Level};

use crate::kernel::{Kernel, KernelKind};
use crate::sym::{below, for_each_part, Part, SExpr};

/// At most this many kernels come from one (the product of every level's pieces).
const MAX_PIECES: usize = 64;

mod generic;

/// Splits each plain kernel at the coordinates where its stores' selects change branch.
/// `generic` (a program whose C takes an extent slot per site): into pieces that depend on
/// the selects alone, not on where their cuts fall (`split::generic`).
pub fn split_pieces(kernels: Vec<Kernel>, generic: bool) -> Vec<Kernel> {
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        if generic {
            out.extend(generic::split(k));
            continue;
        }
        match cuts(&k) {
            Some(cuts) => out.extend(pieces(&k, &cuts)),
            None => out.push(k),
        }
    }
    out
}

/// The cut points inside each domain level's interval (sorted, without the ends), when the
/// kernel is a plain nest whose stores compare its loop variables with constants and the
/// pieces are few enough.
fn cuts(k: &Kernel) -> Option<Vec<Vec<i64>>> {
    if !splittable(k) {
        return None;
    }
    let mut cuts: Vec<Vec<i64>> = vec![Vec::new(); k.domain.len()];
    for st in &k.stores {
        collect(&st.value, &k.domain, &mut cuts);
    }
    for c in &mut cuts {
        c.sort_unstable();
        c.dedup();
    }
    let count: usize = cuts.iter().map(|c| c.len() + 1).product();
    (count > 1 && count <= MAX_PIECES).then_some(cuts)
}

/// Whether `k` is a plain nest, whose pieces may run as kernels of their own.
fn splittable(k: &Kernel) -> bool {
    let KernelKind::Nest(nest) = &k.kind else { return false };
    nest.windows.is_empty() && nest.compressed.is_none() && k.sets.is_empty()
}

/// Adds the cut of every `select(v + o < c, …)` in `e` on a domain level `v` (strictly inside
/// its interval) to `cuts`.
fn collect(e: &Rc<SExpr>, domain: &[Level], cuts: &mut [Vec<i64>]) {
    if let SExpr::Select(c, _, _) = &**e {
        if let Some((dim, at)) = below(c) {
            if let Some(i) = domain.iter().position(|l| &l.name == dim) {
                let iv = domain[i].interval;
                if iv.start < at && at < iv.stop && !cuts[i].contains(&at) {
                    cuts[i].push(at);
                }
            }
        }
    }
    for_each_part(e, &mut |p| {
        if let Part::Expr(x) = p {
            collect(x, domain, cuts);
        }
    });
}

/// The kernels over each box of the product of the levels' pieces, outermost level first.
fn pieces(k: &Kernel, cuts: &[Vec<i64>]) -> Vec<Kernel> {
    let ranges: Vec<Vec<Interval>> = k
        .domain
        .iter()
        .zip(cuts)
        .map(|(l, c)| {
            let mut bounds = vec![l.interval.start];
            bounds.extend(c);
            bounds.push(l.interval.stop);
            bounds.windows(2).map(|w| Interval::new(w[0], w[1])).collect()
        })
        .collect();
    let mut boxes: Vec<Vec<Interval>> = vec![Vec::new()];
    for r in &ranges {
        boxes = boxes.iter().flat_map(|b| r.iter().map(move |iv| [b.as_slice(), &[*iv]].concat())).collect();
    }
    let n = boxes.len();
    boxes
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let mut piece = k.clone();
            for (l, iv) in piece.domain.iter_mut().zip(b) {
                l.interval = iv;
            }
            piece.comment = format!("{} (piece {} of {n})", k.comment, i + 1);
            piece
        })
        .collect()
}
