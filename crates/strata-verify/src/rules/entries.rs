//! `coordinates`, `nonzeros` and `assemble`: a tensor's non-zero entries along one dimension
//! as data (ragged levels of coordinates and values) and a tensor built back from them.
//!
//! `coordinates(%a, dim = D) : tensor<index, L…, E[0:n] ragged>` and `nonzeros(%a, dim = D)
//! : tensor<T, L…, E[0:n] ragged>`, where `L…` are `%a`'s other levels in order (dense) and
//! `n` is `D`'s length; `assemble(%crd, %vals, dim = D[a:b])` takes two such ragged tensors
//! (integer coordinates) and declares a tensor over `L…` and `D` in any order and formats.

use strata_entity::Handle;
use strata_ir::{DimName, Level, LevelFormat, Scalar, Type, Value};

use crate::context::{Cx, RuleResult, View};
use crate::rules::shifts::unknown_dim;

/// `coordinates` (element `index`) or `nonzeros` (`%a`'s element).
pub(crate) fn entries(cx: &mut Cx, arg: Value, dim: &DimName, declared: Handle<Type>, coordinates: bool) -> RuleResult {
    let op = if coordinates { "coordinates" } else { "nonzeros" };
    let v = cx.need_tensor(arg, op)?;
    let Some(level) = v.level(dim).cloned() else { return Err(unknown_dim(cx, arg, dim, op)) };
    if cx.scalar_of(v.element).is_none() {
        let d = cx.error(
            "strata::verify::entries_element",
            format!("`{op}` lists scalar entries; `%{}` has elements `{}`", cx.expr(arg).name, cx.show(v.element)),
            "not a scalar element",
        );
        return Err(cx.with_operand(d, arg));
    }
    let element = if coordinates { cx.scalar(Scalar::Index) } else { v.element };
    let others = v.without(dim);
    let to = cx.view_of_type(declared);
    if let Err(why) = ragged_over(&to, &others, level.interval.len(), element, v.placement == to.placement) {
        let d = cx.error(
            "strata::verify::entries_type",
            format!("`{op}` of `%{}` along `{dim}` cannot have type `{}`", cx.expr(arg).name, cx.show(declared)),
            why,
        );
        let help = format!(
            "the result keeps the other levels and adds one ragged level bounded by `{dim}`: `tensor<{}, {}E[0:{}] ragged>`",
            cx.show(element),
            others.iter().map(|l| format!("{}{}, ", l.name, l.interval)).collect::<String>(),
            level.interval.len()
        );
        return Err(Box::new(cx.with_operand(d, arg).with_help(help)));
    }
    Ok(declared)
}

/// `assemble(%crd, %vals, dim = D)`: the declared tensor over the operands' outer levels and `D`.
pub(crate) fn assemble(cx: &mut Cx, crd: Value, vals: Value, dim: &DimName, declared: Handle<Type>) -> RuleResult {
    let (c, v) = (cx.need_tensor(crd, "assemble")?, cx.need_tensor(vals, "assemble")?);
    let to = cx.view_of_type(declared);
    let mismatch = |cx: &Cx, operand: Value, why: String| {
        let d = cx.error(
            "strata::verify::assemble_mismatch",
            format!("`assemble` along `{dim}` cannot build `{}` from `{}`", cx.show(declared), cx.show(cx.ty(operand))),
            why,
        );
        Err(Box::new(cx.with_operand(d, operand).with_help(
            "the coordinates and values are ragged over the result's other levels, e.g. \
             `assemble(%crd, %vals, dim = Col) : tensor<f64, Row[0:m], Col[0:n] compressed>` from \
             `tensor<index, Row[0:m], E[0:n] ragged>` and `tensor<f64, Row[0:m], E[0:n] ragged>`",
        )))
    };
    if to.level(dim).is_none() {
        return mismatch(cx, crd, format!("the result has no dimension `{dim}`"));
    }
    if !to.is_tensor || v.element != to.element || v.placement != to.placement {
        return mismatch(cx, vals, "the values' element and placement must be the result's".into());
    }
    if to.levels.iter().any(|l| matches!(l.format, LevelFormat::Ragged { .. })) {
        return mismatch(cx, crd, "the result has a value at every coordinate: no ragged levels".into());
    }
    if !cx.scalar_of(c.element).is_some_and(|s| s.is_integer() || s == Scalar::Index) {
        return mismatch(cx, crd, "coordinates must be integers".into());
    }
    let mut others = to.without(dim);
    others.sort_by(|a, b| a.name.cmp(&b.name));
    for (operand, view) in [(crd, &c), (vals, &v)] {
        let Some((last, outer)) = view.levels.split_last() else {
            return mismatch(cx, operand, "a ragged level is needed".into());
        };
        let mut outer: Vec<Level> = outer.to_vec();
        outer.sort_by(|a, b| a.name.cmp(&b.name));
        let same = outer.len() == others.len()
            && outer.iter().zip(&others).all(|(a, b)| a.name == b.name && a.interval == b.interval);
        if !matches!(last.format, LevelFormat::Ragged { .. }) || !same {
            return mismatch(
                cx,
                operand,
                "the last level must be ragged and the others must be the result's other levels".into(),
            );
        }
    }
    if c.levels != v.levels {
        return mismatch(cx, vals, "coordinates and values must have the same levels".into());
    }
    Ok(declared)
}

/// Whether `to` is `others` (dense, same names and intervals, in order) followed by one ragged
/// level `[0:n]`, with element `element`; else why not.
fn ragged_over(to: &View, others: &[Level], n: u64, element: Handle<Type>, same_placement: bool) -> Result<(), String> {
    if !to.is_tensor || to.element != element {
        return Err("wrong element type".into());
    }
    if !same_placement {
        return Err("the placement must stay".into());
    }
    let Some((last, outer)) = to.levels.split_last() else { return Err("a ragged level is needed".into()) };
    let same = outer.len() == others.len()
        && outer
            .iter()
            .zip(others)
            .all(|(a, b)| a.name == b.name && a.interval == b.interval && a.format == LevelFormat::Dense);
    if !same {
        return Err("the levels before the ragged one must be the operand's other levels, dense, in order".into());
    }
    if !matches!(last.format, LevelFormat::Ragged { .. }) || last.interval.start != 0 || last.interval.len() != n {
        return Err(format!("the last level must be ragged with interval [0:{n}]"));
    }
    Ok(())
}
