//! Seed 000's shifts and neighbor reductions: cartesian and unstructured shifts, `can_deref`,
//! `reduce` and `scan`.

use strata_entity::Handle;
use strata_ir::{DimName, Function, Init, Interval, Level, LevelFormat, Literal, Scalar, Type, Value};

use crate::broadcast::{broadcast, SparseMerge};
use crate::context::{Cx, RuleResult, View};
use crate::rules::elementwise::{accumulator, check_signature};

pub(crate) fn unknown_dim(cx: &Cx, v: Value, dim: &DimName, op: &str) -> Box<strata_ir::Diagnostic> {
    let d = cx.error(
        "strata::verify::unknown_dimension",
        format!("`%{}` has no dimension `{dim}` for `{op}`", cx.expr(v).name),
        format!("`{dim}` not found"),
    );
    cx.with_operand(d, v)
}

pub(crate) fn cartesian_shift(cx: &mut Cx, arg: Value, dim: &DimName, offset: i64) -> RuleResult {
    let mut v = cx.need_tensor(arg, "cartesian_shift")?;
    let Some(i) = v.levels.iter().position(|l| &l.name == dim) else {
        return Err(unknown_dim(cx, arg, dim, "cartesian_shift"));
    };
    if dim.neighbor_counter_index().is_some() || dim.table_source().is_some() {
        return Err(Box::new(
            cx.error(
                "strata::verify::shift_neighbor_dimension",
                format!("`{dim}` is a neighbor dimension and cannot be shifted cartesianly"),
                "neighbor dimension",
            )
            .with_help("select a neighbor with `shift_apply`"),
        ));
    }
    // A block level is dense on each rank: the shift reads across blocks (a halo exchange).
    if !matches!(v.levels[i].format, LevelFormat::Dense | LevelFormat::Block) {
        let d = cx.error(
            "strata::verify::format_not_supported",
            format!(
                "`cartesian_shift` needs a dense or block level, but `{dim}` is `{}`",
                v.levels[i].format.keyword()
            ),
            "not dense",
        );
        return Err(cx.with_operand(d, arg));
    }
    let moved = offset.checked_neg().and_then(|d| v.levels[i].interval.shifted(d));
    v.levels[i].interval = moved.ok_or_else(|| cx.overflow(&format!("the shifted interval of `{dim}`")))?;
    Ok(cx.tensor(v.element, v.levels, v.placement))
}

/// The parts of a neighbor table `tensor<int, Dst[..], NB_Src[0:n]>`, or, with extra
/// dimensions the shifted operand also has, `tensor<int, I[..], K[..], NB_K[0:n]>` (a table per
/// column: GT4Py's `as_offset`), whose entries vary along them.
struct Table {
    dst: Level,
    src: DimName,
    neighbors: Interval,
    /// Dimensions shared with the operand (neither the destination nor the source).
    extras: Vec<Level>,
}

fn table(cx: &Cx, t: Value, arg: Value) -> Result<Table, Box<strata_ir::Diagnostic>> {
    let v = cx.need_tensor(t, "shift_init")?;
    if !cx.scalar_of(v.element).is_some_and(Scalar::is_integer) {
        let d = cx.error(
            "strata::verify::table_not_integer",
            format!("a neighbor table holds integers, not `{}`", cx.show(v.element)),
            "not an index table",
        );
        return Err(cx.with_operand(d, t));
    }
    let tagged: Vec<&Level> = v.levels.iter().filter(|l| l.name.table_source().is_some()).collect();
    let src = match tagged.as_slice() {
        [one] => one.name.table_source(),
        _ => None,
    };
    // With one more dimension, that is the destination. With several, the destination is the
    // one the operand lacks (or its source itself, for an indirection along one dimension); the
    // others are extras the operand shares.
    let x = cx.view(arg);
    let others: Vec<&Level> = v.levels.iter().filter(|l| l.name.table_source().is_none()).collect();
    let (dsts, extras): (Vec<&Level>, Vec<&Level>) = if others.len() == 1 {
        (others, Vec::new())
    } else {
        others.into_iter().partition(|l| Some(&l.name) == src.as_ref() || x.level(&l.name).is_none())
    };
    let Some(src) = src.filter(|_| {
        dsts.len() == 1
            && tagged[0].format == LevelFormat::Dense
            && matches!(dsts[0].format, LevelFormat::Dense | LevelFormat::Block)
            && extras.iter().all(|l| l.format == LevelFormat::Dense)
    }) else {
        let d = cx.error(
            "strata::verify::malformed_table",
            "a neighbor table has one destination dimension (dense, or block on a team), one dense `NB_<Src>` dimension, and optionally dense dimensions the shifted operand shares",
            "not a neighbor table",
        );
        let d = cx.with_operand(d, t);
        return Err(Box::new(d.with_help(
            "e.g. `tensor<i32, Edge[0:16167], NB_Vertex[0:2]>` maps edges to their vertices; `tensor<i32, I[0:8], K[0:5], NB_K[0:1]>` gives a K coordinate per (I, K)",
        )));
    };
    Ok(Table {
        dst: dsts[0].clone(),
        src,
        neighbors: tagged[0].interval,
        extras: extras.into_iter().cloned().collect(),
    })
}

/// Levels of `shift_init(table)(arg)` before the neighbor dimension is added.
fn shifted_levels(cx: &Cx, arg: Value, tbl: &Table) -> Result<View, Box<strata_ir::Diagnostic>> {
    let mut v = cx.need_tensor(arg, "shift_init")?;
    let Some(i) = v.levels.iter().position(|l| l.name == tbl.src) else {
        let d = cx.error(
            "strata::verify::table_source_missing",
            format!("the table maps into `{}`, but `%{}` has no dimension `{}`", tbl.src, cx.expr(arg).name, tbl.src),
            "operand lacks the table's source dimension",
        );
        return Err(cx.with_operand(d, arg));
    };
    if v.levels.iter().enumerate().any(|(k, l)| k != i && l.name == tbl.dst.name) {
        let d = cx.error(
            "strata::verify::table_destination_conflict",
            format!("`%{}` already has the table's destination dimension `{}`", cx.expr(arg).name, tbl.dst.name),
            "the shifted tensor would have it twice",
        );
        return Err(cx.with_operand(d, arg));
    }
    // Compute follows data: a shift of a distributed source is distributed by its destination.
    let block = v.levels[i].format == LevelFormat::Block;
    v.levels[i] = tbl.dst.clone();
    if block {
        v.levels[i].format = LevelFormat::Block;
    }
    // Along an extra dimension the result exists where both the operand and the table do.
    for e in &tbl.extras {
        let l = v.levels.iter_mut().find(|l| l.name == e.name).expect("an extra is an operand dimension");
        if l.format != LevelFormat::Dense {
            let d = cx.error(
                "strata::verify::format_not_supported",
                format!("a table with the extra dimension `{}` needs it dense in the operand", e.name),
                "not dense",
            );
            return Err(cx.with_operand(d, arg));
        }
        let start = l.interval.start.max(e.interval.start);
        l.interval = Interval::new(start, l.interval.stop.min(e.interval.stop).max(start));
    }
    Ok(v)
}

pub(crate) fn shift_init(cx: &mut Cx, arg: Value, t: Value) -> RuleResult {
    let tbl = table(cx, t, arg)?;
    crate::broadcast::common_placement(cx, &[arg, t], &[cx.view(arg), cx.view(t)])?;
    let mut v = shifted_levels(cx, arg, &tbl)?;
    let k = v.highest_neighbor_counter().map_or(0, |k| k + 1);
    v.levels.push(Level::dense(DimName::neighbor_counter(k), tbl.neighbors));
    Ok(cx.tensor(v.element, v.levels, v.placement))
}

fn check_neighbor(cx: &Cx, neighbor: i64, range: Interval, what: &str) -> Result<(), Box<strata_ir::Diagnostic>> {
    if neighbor < range.start || neighbor >= range.stop {
        return Err(cx.error(
            "strata::verify::neighbor_out_of_range",
            format!("neighbor {neighbor} is outside {what} {range}"),
            "no such neighbor",
        ));
    }
    Ok(())
}

pub(crate) fn shift_apply(cx: &mut Cx, arg: Value, neighbor: i64) -> RuleResult {
    let v = cx.need_tensor(arg, "shift_apply")?;
    let Some(k) = v.highest_neighbor_counter() else {
        let d = cx.error(
            "strata::verify::no_neighbor_dimension",
            format!("`%{}` has no neighbor dimension `NB_k` to select from", cx.expr(arg).name),
            "nothing to apply",
        );
        return Err(Box::new(cx.with_operand(d, arg).with_help("create one with `shift_init`")));
    };
    let name = DimName::neighbor_counter(k);
    let range = v.level(&name).expect("present").interval;
    check_neighbor(cx, neighbor, range, &format!("`{name}`"))?;
    let levels = v.without(&name);
    Ok(cx.tensor(v.element, levels, v.placement))
}

pub(crate) fn unstructured_shift(cx: &mut Cx, arg: Value, t: Value, neighbor: i64) -> RuleResult {
    let tbl = table(cx, t, arg)?;
    crate::broadcast::common_placement(cx, &[arg, t], &[cx.view(arg), cx.view(t)])?;
    check_neighbor(cx, neighbor, tbl.neighbors, "the table's neighbor interval")?;
    let v = shifted_levels(cx, arg, &tbl)?;
    Ok(cx.tensor(v.element, v.levels, v.placement))
}

pub(crate) fn can_deref(cx: &mut Cx, arg: Value) -> RuleResult {
    let v = cx.view(arg);
    let b = cx.scalar(Scalar::Bool);
    Ok(cx.tensor_or_element(v.is_tensor, b, v.levels, v.placement))
}

fn check_init(cx: &Cx, init: &Literal, elem: Handle<Type>) -> Result<(), Box<strata_ir::Diagnostic>> {
    if !cx.literal_fits(init, elem) {
        return Err(cx.error(
            "strata::verify::literal_type_mismatch",
            format!("initial value `{init}` is not a value of the accumulator type `{}`", cx.show(elem)),
            "init does not fit",
        ));
    }
    Ok(())
}

/// Whether the payload of a `reduce` or `scan` is written over elements (its state parameter
/// is the element type `element`) rather than over whole cross-sections (`state`): it is then
/// applied at every point of the cross-section, as `map_reduce`'s payloads are.
/// A generic payload is always applied over elements.
fn takes_elements(cx: &Cx, func: Handle<Function>, element: Handle<Type>, state: Handle<Type>) -> bool {
    let f = &cx.module.functions[func];
    f.is_generic() || (element != state && f.params.first().is_some_and(|&p| f.exprs[p].ty == element))
}

pub(crate) fn reduce(cx: &mut Cx, func: Handle<Function>, args: &[Value], init: &Literal) -> RuleResult {
    if args.is_empty() {
        return Err(cx.error("strata::verify::arity_mismatch", "`reduce` needs at least one operand", "no operands"));
    }
    let views: Vec<View> = args.iter().map(|&a| cx.view(a)).collect();
    let Some(k) = views.iter().filter_map(View::highest_neighbor_counter).max() else {
        return Err(Box::new(
            cx.error(
                "strata::verify::no_neighbor_dimension",
                "`reduce` folds the highest neighbor dimension `NB_k`, but no operand has one",
                "nothing to reduce",
            )
            .with_help("make a neighbor dimension with `shift_init`"),
        ));
    };
    let nb = DimName::neighbor_counter(k);
    let (levels, placement, _) = broadcast(cx, args, SparseMerge::Union)?;
    let reduced: Vec<Level> = levels.into_iter().filter(|l| l.name != nb).collect();
    let peer = views[0].element;
    let acc = accumulator(cx, "reduce", func, &Init::Literal(init.clone()), peer)?;
    let tr = strata_ir::element_of(cx.types, acc);
    check_init(cx, init, tr)?;
    let result = cx.tensor(tr, reduced, placement.clone());
    if takes_elements(cx, func, tr, result) {
        let params: Vec<_> = std::iter::once(tr).chain(views.iter().map(|v| v.element)).collect();
        check_signature(cx, "reduce", func, &params, Some(tr))?;
        return Ok(result);
    }
    let mut params = vec![result];
    for v in &views {
        let p = cx.tensor_or_element(v.is_tensor, v.element, v.without(&nb), v.placement.clone());
        params.push(p);
    }
    check_signature(cx, "reduce", func, &params, Some(result))?;
    Ok(result)
}

pub(crate) fn scan(cx: &mut Cx, func: Handle<Function>, args: &[Value], dim: &DimName, init: &Init) -> RuleResult {
    if args.is_empty() {
        return Err(cx.error("strata::verify::arity_mismatch", "`scan` needs at least one operand", "no operands"));
    }
    let (levels, placement, _) = broadcast(cx, args, SparseMerge::Union)?;
    let Some(level) = levels.iter().find(|l| &l.name == dim) else {
        return Err(cx.error(
            "strata::verify::unknown_dimension",
            format!("no operand of `scan` has the scanned dimension `{dim}`"),
            format!("`{dim}` not found"),
        ));
    };
    // A block level is scanned rank after rank (each passing its last state on).
    if !matches!(level.format, LevelFormat::Dense | LevelFormat::Ragged { .. } | LevelFormat::Block) {
        return Err(cx.error(
            "strata::verify::format_not_supported",
            format!(
                "`scan` runs along a dense, ragged or block dimension, but `{dim}` is `{}`",
                level.format.keyword()
            ),
            "not dense, ragged or block",
        ));
    }
    let peer = cx.element(args[0]);
    let acc = accumulator(cx, "scan", func, init, peer)?;
    let tr = strata_ir::element_of(cx.types, acc);
    let column: Vec<Level> = levels.iter().filter(|l| &l.name != dim).cloned().collect();
    let state = cx.tensor(tr, column, placement.clone());
    match init {
        Init::Literal(l) => check_init(cx, l, tr)?,
        Init::Value(v) if cx.ty(*v) != state => {
            let d = cx.error(
                "strata::verify::init_type_mismatch",
                format!("the initial state must have the state type `{}`", cx.show(state)),
                "init has another type",
            );
            return Err(cx.with_operand(d, *v));
        }
        Init::Value(_) => {}
    }
    if takes_elements(cx, func, tr, state) {
        let params: Vec<_> = std::iter::once(tr).chain(args.iter().map(|&a| cx.element(a))).collect();
        check_signature(cx, "scan", func, &params, Some(tr))?;
        return Ok(cx.tensor(tr, levels, placement));
    }
    let mut params = vec![state];
    for &a in args {
        let v = cx.view(a);
        let p = cx.tensor_or_element(v.is_tensor, v.element, v.without(dim), v.placement.clone());
        params.push(p);
    }
    check_signature(cx, "scan", func, &params, Some(state))?;
    Ok(cx.tensor(tr, levels, placement))
}
