//! Seed 000's domain builtins: `subset`, `concat`, `pos`, `add_dim`.

use strata_ir::{DimName, Interval, Level, LevelFormat, Scalar, Value};

use crate::broadcast::common_placement;
use crate::context::{Cx, RuleResult, View};
use crate::rules::shifts::unknown_dim;

pub(crate) fn subset(cx: &mut Cx, arg: Value, domain: &[(DimName, Interval)]) -> RuleResult {
    let mut v = cx.view(arg);
    for (name, iv) in domain {
        let Some(level) = v.levels.iter_mut().find(|l| &l.name == name) else {
            return Err(unknown_dim(cx, arg, name, "subset"));
        };
        if iv.stop < iv.start {
            return Err(cx.error(
                "strata::verify::invalid_interval",
                format!("interval `{name}{iv}` ends before it starts"),
                "stop < start",
            ));
        }
        if !level.interval.contains(*iv) {
            let d = cx.error(
                "strata::verify::subset_not_contained",
                format!("`{name}{iv}` is not inside the operand's `{name}{}`", level.interval),
                "a subset may only shrink intervals",
            );
            return Err(cx.with_operand(d, arg));
        }
        level.interval = *iv;
    }
    Ok(cx.tensor_or_element(v.is_tensor, v.element, v.levels, v.placement))
}

pub(crate) fn concat(cx: &mut Cx, args: &[Value], dim: &DimName) -> RuleResult {
    let Some(&first) = args.first() else {
        return Err(cx.error("strata::verify::arity_mismatch", "`concat` needs at least one operand", "no operands"));
    };
    let views: Vec<View> = args.iter().map(|&a| cx.view(a)).collect();
    let placement = common_placement(cx, args, &views)?;
    let base = &views[0];
    let Some(pos) = base.levels.iter().position(|l| &l.name == dim) else {
        return Err(unknown_dim(cx, first, dim, "concat"));
    };
    let positional = dim.position().is_some();
    let mut joined = base.levels[pos].interval;
    for (k, v) in views.iter().enumerate() {
        let a = args[k];
        let Some(level) = v.level(dim) else { return Err(unknown_dim(cx, a, dim, "concat")) };
        // Dense levels, or block levels (distributed operands joined along their rows).
        let format = base.levels[pos].format;
        if !level.format.is_dense_like() || level.format != format {
            let d = cx.error(
                "strata::verify::format_not_supported",
                format!(
                    "`concat` joins dense levels (or block levels, all of them), but `{dim}` is `{}`{}",
                    level.format.keyword(),
                    if level.format.is_dense_like() { " here and not in the first operand" } else { "" }
                ),
                if level.format.is_dense_like() { "dense and block mixed" } else { "not dense" },
            );
            return Err(cx.with_operand(d, a));
        }
        if v.element != base.element {
            let d = cx.error(
                "strata::verify::element_type_mismatch",
                "`concat` operands have different element types",
                "mixed element types",
            );
            return Err(cx.with_operand(cx.with_operand(d, first), a));
        }
        let others_match =
            v.without(dim) == base.without(dim) && v.levels.iter().position(|l| &l.name == dim) == Some(pos);
        if !others_match {
            let d = cx.error(
                "strata::verify::concat_shape_mismatch",
                format!("`concat` operands must agree on every dimension but `{dim}`"),
                "other dimensions differ",
            );
            return Err(cx.with_operand(cx.with_operand(d, first), a));
        }
        if k == 0 {
            continue;
        }
        if positional {
            joined = cx.interval(
                joined.start as i128,
                joined.stop as i128 + level.interval.len() as i128,
                "the concatenated interval",
            )?;
        } else if level.interval.start != joined.stop {
            let d = cx.error(
                "strata::verify::concat_not_contiguous",
                format!(
                    "`{dim}` intervals must be contiguous: {} does not start where {} ends",
                    level.interval,
                    Interval::new(joined.start, joined.stop)
                ),
                "gap or overlap",
            );
            return Err(cx.with_operand(d, a));
        } else {
            joined.stop = level.interval.stop;
        }
    }
    let mut levels = base.levels.clone();
    levels[pos].interval = joined;
    Ok(cx.tensor(base.element, levels, placement))
}

pub(crate) fn pos(cx: &mut Cx, arg: Value, dim: &DimName) -> RuleResult {
    let v = cx.view(arg);
    let Some(level) = v.level(dim) else { return Err(unknown_dim(cx, arg, dim, "pos")) };
    // A positional dimension is renumbered: the result's only dimension stands at position 0.
    let levels = crate::context::renumber(vec![Level::dense(dim.clone(), level.interval)]).expect("one level");
    let idx = cx.scalar(Scalar::Index);
    Ok(cx.tensor(idx, levels, v.placement))
}

pub(crate) fn add_dim(cx: &mut Cx, arg: Value, dim: &DimName, interval: Interval) -> RuleResult {
    let v = cx.view(arg);
    if v.level(dim).is_some() {
        let d = cx.error(
            "strata::verify::duplicate_dimension",
            format!("`%{}` already has a dimension `{dim}`", cx.expr(arg).name),
            "cannot add it again",
        );
        return Err(cx.with_operand(d, arg));
    }
    if interval.stop < interval.start {
        return Err(cx.error(
            "strata::verify::invalid_interval",
            format!("interval `{dim}{interval}` ends before it starts"),
            "stop < start",
        ));
    }
    let mut levels = vec![Level::dense(dim.clone(), interval)];
    levels.extend(v.levels);
    if dim.position().is_some() {
        return Err(cx.error(
            "strata::verify::positional_name_mismatch",
            format!("`add_dim` adds a named dimension; `{dim}` is a positional name"),
            "positional name",
        ));
    }
    Ok(cx.tensor(v.element, levels, v.placement))
}

/// `drop_dim(%x, dim = K)`: the operand without its dense dimension `K` of extent 1.
pub(crate) fn drop_dim(cx: &mut Cx, arg: Value, dim: &DimName) -> RuleResult {
    let v = cx.need_tensor(arg, "drop_dim")?;
    let Some(level) = v.level(dim) else {
        let d = cx.error(
            "strata::verify::unknown_dimension",
            format!("`%{}` has no dimension `{dim}` to drop", cx.expr(arg).name),
            format!("`{dim}` not found"),
        );
        return Err(cx.with_operand(d, arg));
    };
    if level.interval.len() != 1 || level.format != LevelFormat::Dense {
        let d = cx.error(
            "strata::verify::extent_not_one",
            format!("`drop_dim` drops a dense dimension of extent 1, but `{dim}{}` is not one", level.interval),
            "extent is not 1",
        );
        return Err(Box::new(
            cx.with_operand(d, arg).with_help("select one position first with `subset`, or reduce with `map_reduce`"),
        ));
    }
    // Positional dimensions after the dropped one move up (`_2` becomes `_1`).
    let levels = crate::rules::structured::renumber_positional(cx, v.without(dim))?;
    Ok(cx.tensor_or_element(true, v.element, levels, v.placement))
}
