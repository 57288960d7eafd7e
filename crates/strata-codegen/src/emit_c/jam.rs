//! Rows in groups (`schedule::Layout::JammedRows`): the innermost level's points taken
//! [`JAM`] at a time, their folds stepped by one loop with an accumulator each.
//!
//! A fold summing a contiguous row in vector lanes reads one stream from memory; alone, one
//! core keeps too few lines in flight to reach its bandwidth (a 4096² matrix–vector product
//! read 8–9 GB/s a row at a time, 15.6 GB/s four rows at a time, standalone C on this machine).
//! Each point of the group folds exactly as it would alone (same order, same vector lanes);
//! the points left over after the last whole group run one by one.

use std::fmt::Write;
use std::rc::Rc;

use super::expr::{var, Emitter};
use super::extents::ext;
use super::{c_type, close_loops, emit_stores_at, fold_vars, hoisted_stores, open_domain_loops, PARALLEL_FOR};
use crate::kernel::{Kernel, Store};
use crate::schedule::JAM;
use crate::sym::{Coord, SExpr};

/// The accumulator id of fold `id` at point `j` of a group (ids from lowering and hoisting stay
/// below bit 26 or use bit 30).
fn jam_id(id: u32, j: i64) -> u32 {
    id | ((j as u32 + 1) << 26)
}

/// `e` at point `j` of the group: the innermost variable `dim` moved by `j`, fold ids and their
/// accumulators' reads renamed by [`jam_id`].
fn at_point(e: &Rc<SExpr>, dim: &strata_ir::DimName, j: i64) -> Rc<SExpr> {
    fn rename(e: &Rc<SExpr>, j: i64) -> Rc<SExpr> {
        match &**e {
            SExpr::Acc(a) => Rc::new(SExpr::Acc(jam_id(*a, j))),
            SExpr::Reduce { id, vars, init, scalar, body } => Rc::new(SExpr::Reduce {
                id: jam_id(*id, j),
                vars: vars.clone(),
                init: rename(init, j),
                scalar: *scalar,
                body: rename(body, j),
            }),
            _ => crate::sym::map_children(e, &|x| rename(x, j), &|c| {
                crate::sym::map_coord_parts(c, &|x| rename(x, j), &|c2| c2.clone())
            }),
        }
    }
    rename(&crate::sym::shift(e, dim, j), j)
}

/// A kernel under `Layout::JammedRows`: the outer levels' loops, then the innermost level in
/// groups of [`JAM`] points (shared among threads when it is the outermost), then its last
/// points one by one.
pub(super) fn emit_jammed(out: &mut String, em: &Emitter, k: &Kernel) {
    let (outer, inner) = k.domain.split_at(k.domain.len() - 1);
    let inner = &inner[0];
    let mut indent = String::from("  ");
    let braces = open_domain_loops(out, em, outer, &mut indent);
    let d = var(inner.name.as_str());
    let (start, stop) = (ext(inner.interval.start), ext(inner.interval.stop));
    let whole = format!("{start} + ({stop} - {start}) / {JAM} * {JAM}");
    let outermost = outer.is_empty();
    if outermost {
        let _ = writeln!(out, "{indent}{PARALLEL_FOR}");
    }
    let _ = writeln!(
        out,
        "{indent}for (int64_t {d} = {start}; {d} < {whole}; {d} += {JAM}) {{  /* {} in groups of {JAM} */",
        inner.name
    );
    indent.push_str("  ");
    if outermost {
        let _ = writeln!(out, "{indent}int *err = &e_;");
    }
    let mut folds = Vec::new();
    let stores = hoisted_stores(k, &mut folds);
    let (mut steps, mut sums) = (Vec::new(), Vec::new());
    for j in 0..JAM {
        for f in &folds {
            let SExpr::Reduce { id, init, scalar, body, .. } = &*at_point(f, &inner.name, j) else {
                unreachable!("hoisted folds")
            };
            let _ = writeln!(out, "{indent}{} acc{id} = {};", c_type(*scalar), em.value(init));
            steps.push(em.fold_step(*id, body));
            sums.push(format!("acc{id}"));
        }
    }
    let loops = em.fold_loops(fold_vars(&folds[0]).expect("a fold"), &sums);
    let _ = writeln!(out, "{indent}{loops}{{ {} }}", steps.join(" "));
    for j in 0..JAM {
        let here: Vec<Store> =
            stores.iter().map(|st| Store { buffer: st.buffer, value: at_point(&st.value, &inner.name, j) }).collect();
        emit_stores_at(out, em, &here, &indent, &|c| match c {
            Coord::Var { dim, offset } if dim == inner.name => Coord::Var { dim, offset: offset + j },
            c => c,
        });
    }
    indent.truncate(indent.len() - 2);
    let _ = writeln!(out, "{indent}}}");
    // The points after the last whole group.
    let _ = writeln!(out, "{indent}for (int64_t {d} = {whole}; {d} < {stop}; ++{d}) {{");
    indent.push_str("  ");
    if outermost {
        let _ = writeln!(out, "{indent}int *err = &e_;");
    }
    super::emit_stores(out, em, &k.stores, &indent);
    indent.truncate(indent.len() - 2);
    let _ = writeln!(out, "{indent}}}");
    close_loops(out, &mut indent, braces);
}
