//! Seed 002's structured core: `map_reduce` (Einstein and affine), `dot_general`, `product_2d`,
//! `transpose`, `broadcast`, `broadcast_in_dim`, `map`, `get`, `set`, and rings.
//!
//! These ops are positional: an operand's dimensions are taken in their level order. Result
//! dimensions keep the names of the operand dimensions they come from; positional names are
//! renumbered to their new position.

use strata_entity::Handle;
use strata_ir::{
    AffineMap, BuiltinRing, DimName, Einsum, Function, Init, Interval, Level, LevelFormat, MapKind, PermKind,
    Placement, RingRef, Scalar, Type, Value,
};

use crate::broadcast::common_placement;
use crate::context::{renumber, Cx, RuleResult, View};
use crate::rules::elementwise::{accumulator, check_signature};

type Res<T> = Result<T, Box<strata_ir::Diagnostic>>;

fn views(cx: &Cx, args: &[Value]) -> Res<(Vec<View>, Placement)> {
    let vs: Vec<View> = args.iter().map(|&a| cx.view(a)).collect();
    let p = common_placement(cx, args, &vs)?;
    Ok((vs, p))
}

/// Positional levels renamed by position (`_0`, `_1`, …), named ones kept.
pub(crate) fn renumber_positional(cx: &Cx, levels: Vec<Level>) -> Res<Vec<Level>> {
    finish_levels(cx, levels)
}

fn finish_levels(cx: &Cx, levels: Vec<Level>) -> Res<Vec<Level>> {
    renumber(levels).map_err(|name| {
        Box::new(
            cx.error(
                "strata::verify::duplicate_dimension",
                format!("the result would have two dimensions named `{name}`"),
                "name clash in the result",
            )
            .with_help("rename one operand's dimension, or use positional tensors"),
        )
    })
}

fn dense_result(levels: &[Level]) -> Vec<Level> {
    levels.iter().map(|l| Level::dense(l.name.clone(), l.interval)).collect()
}

fn check_init(cx: &Cx, init: &Init, to: Handle<Type>, result: Handle<Type>) -> Res<()> {
    match init {
        Init::Literal(l) => {
            if !cx.literal_fits(l, to) {
                return Err(cx.error(
                    "strata::verify::literal_type_mismatch",
                    format!("initial value `{l}` is not a value of the accumulator type `{}`", cx.show(to)),
                    "init does not fit",
                ));
            }
        }
        Init::Value(v) => {
            if cx.ty(*v) != result {
                let d = cx.error(
                    "strata::verify::init_type_mismatch",
                    format!("the initial tensor must have the result type `{}`", cx.show(result)),
                    "init has another type",
                );
                return Err(cx.with_operand(d, *v));
            }
        }
    }
    Ok(())
}

pub(crate) fn map_reduce(cx: &mut Cx, func: Handle<Function>, args: &[Value], init: &Init, e: &Einsum) -> RuleResult {
    let (vs, placement) = views(cx, args)?;
    if e.inputs.len() != args.len() {
        return Err(cx.error(
            "strata::verify::einsum_arity",
            format!("subscripts `{e}` describe {} inputs, but {} are given", e.inputs.len(), args.len()),
            "operand count differs",
        ));
    }
    let mut bound: Vec<(char, Level, usize)> = Vec::new();
    for (k, (subs, v)) in e.inputs.iter().zip(&vs).enumerate() {
        if subs.len() != v.rank() {
            let d = cx.error(
                "strata::verify::einsum_rank_mismatch",
                format!(
                    "input {} has {} subscripts `{}` but rank {}",
                    k + 1,
                    subs.len(),
                    subs.iter().collect::<String>(),
                    v.rank()
                ),
                "one letter per dimension",
            );
            return Err(cx.with_operand(d, args[k]));
        }
        for (c, l) in subs.iter().zip(&v.levels) {
            match bound.iter().find(|b| b.0 == *c) {
                Some((_, prev, pk)) if prev.interval.len() != l.interval.len() => {
                    let d = cx.error(
                        "strata::verify::einsum_extent_mismatch",
                        format!(
                            "index `{c}` ranges over {} elements in one input and {} in another",
                            prev.interval.len(),
                            l.interval.len()
                        ),
                        "extents differ",
                    );
                    return Err(cx.with_operand(cx.with_operand(d, args[*pk]), args[k]));
                }
                Some(_) => {}
                None => bound.push((*c, l.clone(), k)),
            }
        }
    }
    let mut levels = Vec::new();
    for c in &e.output {
        let Some((_, l, _)) = bound.iter().find(|b| b.0 == *c) else {
            return Err(cx.error(
                "strata::verify::einsum_unbound_output",
                format!("output index `{c}` appears in no input"),
                "its extent is unknown",
            ));
        };
        // An output index over a block level keeps the block (each rank computes its rows);
        // contracted away, the result is replicated on the team.
        let format = if l.format == LevelFormat::Block { LevelFormat::Block } else { LevelFormat::Dense };
        levels.push(Level { format, ..Level::dense(l.name.clone(), l.interval) });
    }
    let levels = finish_levels(cx, levels)?;
    let peer = vs.first().map_or_else(|| cx.scalar(strata_ir::Scalar::F64), |v| v.element);
    let to = accumulator(cx, "map_reduce", func, init, peer)?;
    let mut params = vec![to];
    params.extend(vs.iter().map(|v| v.element));
    check_signature(cx, "map_reduce", func, &params, Some(to))?;
    let result = cx.tensor(to, levels, placement);
    check_init(cx, init, to, result)?;
    Ok(result)
}

/// Checks an access map: its arity, and (if `in_bounds`) that every coordinate stays inside
/// the tensor it indexes (`target`: the extents, `names`: the dimensions, `operand`: the input
/// it reads, for the diagnostic's label).
#[allow(clippy::too_many_arguments)]
fn check_map(
    cx: &Cx,
    what: &str,
    m: &AffineMap,
    dims: usize,
    results: usize,
    bounds: &[u64],
    target: &[u64],
    names: &[DimName],
    operand: Option<Value>,
    in_bounds: bool,
) -> Res<()> {
    if m.num_dims as usize != dims || m.results.len() != results {
        return Err(cx.error(
            "strata::verify::affine_map_arity",
            format!(
                "{what} must map {dims} loop dimensions to {results} coordinates, but `{m}` maps {} to {}",
                m.num_dims,
                m.results.len()
            ),
            "wrong arity",
        ));
    }
    for (i, e) in m.results.iter().enumerate().filter(|_| in_bounds) {
        if let Some((lo, hi)) = e.range(bounds) {
            if lo < 0 || hi >= target[i] as i128 {
                let d = cx.error(
                    "strata::verify::affine_out_of_bounds",
                    format!(
                        "{what}: the coordinate of dimension `{}`, `{e}`, ranges over [{lo}, {hi}] but the extent is {}",
                        names[i], target[i]
                    ),
                    "access outside the tensor",
                );
                return Err(match operand {
                    Some(v) => cx.with_operand(d, v),
                    None => d,
                });
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn map_reduce_aff(
    cx: &mut Cx,
    func: Handle<Function>,
    args: &[Value],
    init: &Init,
    domain: &[u64],
    outputs: u32,
    shape: &[u64],
    out_map: &AffineMap,
    maps: &[AffineMap],
    padding: Option<&strata_ir::Literal>,
) -> RuleResult {
    let (vs, placement) = views(cx, args)?;
    let ro = outputs as usize;
    if ro > domain.len() {
        return Err(cx.error(
            "strata::verify::affine_domain_mismatch",
            format!("{ro} output loops but the iteration domain has only {} dimensions", domain.len()),
            "outputs > domain rank",
        ));
    }
    if shape.len() != ro {
        return Err(cx.error(
            "strata::verify::affine_domain_mismatch",
            format!("the result shape has rank {} but there are {ro} output loops", shape.len()),
            "shape rank differs",
        ));
    }
    if maps.len() != args.len() {
        return Err(cx.error(
            "strata::verify::affine_map_count",
            format!("{} access maps for {} inputs", maps.len(), args.len()),
            "one map per input",
        ));
    }
    let out_names: Vec<DimName> = (0..shape.len()).map(DimName::positional).collect();
    check_map(cx, "`out_map`", out_map, domain.len(), ro, domain, shape, &out_names, None, true)?;
    if let Some(d) = out_map.results.iter().filter_map(|e| e.max_dim()).find(|&d| d as usize >= ro) {
        return Err(Box::new(
            cx.error(
                "strata::verify::affine_out_map_reduction",
                format!("`out_map` reads reduction loop `d{d}`; the reduction is folded before the write"),
                "depends on a reduction loop",
            )
            .with_help(format!("write coordinates may use `d0`…`d{}` only", ro.saturating_sub(1))),
        ));
    }
    for ((m, v), &arg) in maps.iter().zip(&vs).zip(args) {
        let extents: Vec<u64> = v.levels.iter().map(|l| l.interval.len()).collect();
        let names: Vec<DimName> = v.levels.iter().map(|l| l.name.clone()).collect();
        let what = format!("the map of `%{}`", cx.expr(arg).name);
        // With a padding value, reads outside the input are defined: they read it.
        check_map(cx, &what, m, domain.len(), v.rank(), domain, &extents, &names, Some(arg), padding.is_none())?;
        if let Some(p) = padding.filter(|p| !cx.literal_fits(p, v.element)) {
            let d = cx.error(
                "strata::verify::literal_type_mismatch",
                format!("padding `{p}` is not a value of the element type `{}`", cx.show(v.element)),
                "padding does not fit",
            );
            return Err(cx.with_operand(d, arg));
        }
    }
    let levels: Vec<Level> =
        shape.iter().enumerate().map(|(i, &n)| Level::dense(DimName::positional(i), Interval::from_len(n))).collect();
    let peer = vs.first().map_or_else(|| cx.scalar(strata_ir::Scalar::F64), |v| v.element);
    let to = accumulator(cx, "map_reduce_aff", func, init, peer)?;
    let mut params = vec![to];
    params.extend(vs.iter().map(|v| v.element));
    check_signature(cx, "map_reduce_aff", func, &params, Some(to))?;
    let result = cx.tensor(to, levels, placement);
    check_init(cx, init, to, result)?;
    Ok(result)
}

/// Checks a ring against an element type; returns the element type.
pub(crate) fn check_ring(cx: &Cx, ring: RingRef, element: Handle<Type>) -> Res<Handle<Type>> {
    let s = cx.scalar_of(element);
    let ok = match ring {
        RingRef::Builtin(BuiltinRing::OrAnd) => s == Some(Scalar::Bool),
        RingRef::Builtin(_) => s.is_some_and(Scalar::is_numeric),
        RingRef::User(h) => s == Some(cx.module.rings[h].element),
    };
    if !ok {
        let name = match ring {
            RingRef::Builtin(b) => b.keyword().to_string(),
            RingRef::User(h) => format!("@{}", cx.module.rings[h].name),
        };
        return Err(cx.error(
            "strata::verify::ring_type_mismatch",
            format!("ring `{name}` is not defined on elements of type `{}`", cx.show(element)),
            "ring and operands disagree",
        ));
    }
    Ok(element)
}

fn check_dims(cx: &Cx, which: &str, dims: &[u32], rank: usize) -> Res<()> {
    for (i, &d) in dims.iter().enumerate() {
        if d as usize >= rank || dims[..i].contains(&d) {
            return Err(cx.error(
                "strata::verify::invalid_dimension_index",
                format!(
                    "{which} lists dimension {d}, but the operand has rank {rank} (and each dimension may appear once)"
                ),
                "bad dimension list",
            ));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn dot_general(
    cx: &mut Cx,
    lhs: Value,
    rhs: Value,
    ring: RingRef,
    lc: &[u32],
    rc: &[u32],
    lb: &[u32],
    rb: &[u32],
) -> RuleResult {
    let (vs, placement) = views(cx, &[lhs, rhs])?;
    let (a, b) = (&vs[0], &vs[1]);
    if lc.len() != rc.len() || lb.len() != rb.len() {
        return Err(cx.error(
            "strata::verify::dot_dims_mismatch",
            "contracting and batching dimension lists must pair up one-to-one",
            "list lengths differ",
        ));
    }
    check_dims(cx, "`lhs_contract` + `lhs_batch`", &[lc, lb].concat(), a.rank())?;
    check_dims(cx, "`rhs_contract` + `rhs_batch`", &[rc, rb].concat(), b.rank())?;
    for (&i, &j) in lc.iter().chain(lb).zip(rc.iter().chain(rb)) {
        let (x, y) = (&a.levels[i as usize], &b.levels[j as usize]);
        if x.interval.len() != y.interval.len() {
            let d = cx.error(
                "strata::verify::dot_extent_mismatch",
                format!(
                    "paired dimensions `{}` of `%{}` ({}) and `{}` of `%{}` ({}) differ in extent",
                    x.name,
                    cx.expr(lhs).name,
                    x.interval.len(),
                    y.name,
                    cx.expr(rhs).name,
                    y.interval.len()
                ),
                "extents differ",
            );
            return Err(cx.with_operand(cx.with_operand(d, lhs), rhs));
        }
    }
    if a.element != b.element {
        let d = cx.error(
            "strata::verify::element_type_mismatch",
            "`dot_general` operands have different element types",
            "mixed element types",
        );
        return Err(cx.with_operand(cx.with_operand(d, lhs), rhs));
    }
    let el = check_ring(cx, ring, a.element)?;
    let mut levels: Vec<Level> = lb.iter().map(|&i| a.levels[i as usize].clone()).collect();
    let used_a: Vec<u32> = [lc, lb].concat();
    let used_b: Vec<u32> = [rc, rb].concat();
    levels.extend(a.levels.iter().enumerate().filter(|(i, _)| !used_a.contains(&(*i as u32))).map(|(_, l)| l.clone()));
    levels.extend(b.levels.iter().enumerate().filter(|(i, _)| !used_b.contains(&(*i as u32))).map(|(_, l)| l.clone()));
    let levels = finish_levels(cx, dense_result(&levels))?;
    Ok(cx.tensor(el, levels, placement))
}

pub(crate) fn product_2d(cx: &mut Cx, lhs: Value, rhs: Value, ring: RingRef) -> RuleResult {
    for v in [lhs, rhs] {
        if cx.view(v).rank() != 2 {
            let d = cx.error("strata::verify::rank_mismatch", "`product_2d` multiplies two 2-d tensors", "not 2-d");
            return Err(cx.with_operand(d, v));
        }
    }
    dot_general(cx, lhs, rhs, ring, &[1], &[0], &[], &[])
}

pub(crate) fn transpose(cx: &mut Cx, arg: Value, perm: &[u32], kind: PermKind) -> RuleResult {
    let v = cx.require_dense(arg, "transpose")?;
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    if sorted != (0..v.rank() as u32).collect::<Vec<_>>() {
        let d = cx.error(
            "strata::verify::invalid_permutation",
            format!("`{perm:?}` is not a permutation of the operand's {} dimensions", v.rank()),
            "not a permutation",
        );
        return Err(cx.with_operand(d, arg));
    }
    let levels: Vec<Level> = kind.as_gather(perm).iter().map(|&p| v.levels[p as usize].clone()).collect();
    let levels = finish_levels(cx, levels)?;
    Ok(cx.tensor(v.element, levels, v.placement))
}

pub(crate) fn broadcast_op(cx: &mut Cx, arg: Value, shape: &[u64]) -> RuleResult {
    let v = cx.require_dense(arg, "broadcast")?;
    if shape.len() != v.rank() {
        let d = cx.error(
            "strata::verify::rank_mismatch",
            format!("`broadcast` keeps the rank: shape has {} entries, the operand rank {}", shape.len(), v.rank()),
            "rank differs",
        );
        return Err(Box::new(cx.with_operand(d, arg).with_help("use `broadcast_in_dim` to add dimensions")));
    }
    let mut levels = Vec::new();
    for (l, &n) in v.levels.iter().zip(shape) {
        let len = l.interval.len();
        if len != n && len != 1 {
            let d = cx.error(
                "strata::verify::broadcast_incompatible",
                format!("dimension `{}` has extent {len}, which cannot broadcast to {n}", l.name),
                "only extent 1 stretches",
            );
            return Err(cx.with_operand(d, arg));
        }
        let iv =
            cx.interval(l.interval.start as i128, l.interval.start as i128 + n as i128, "the broadcast interval")?;
        levels.push(Level::dense(l.name.clone(), iv));
    }
    Ok(cx.tensor(v.element, levels, v.placement))
}

pub(crate) fn broadcast_in_dim(cx: &mut Cx, arg: Value, shape: &[u64], dims: &[u32]) -> RuleResult {
    let v = cx.require_dense(arg, "broadcast_in_dim")?;
    if dims.len() != v.rank() {
        let d = cx.error(
            "strata::verify::rank_mismatch",
            format!("`dims` places {} dimensions but the operand has rank {}", dims.len(), v.rank()),
            "one entry per operand dimension",
        );
        return Err(cx.with_operand(d, arg));
    }
    check_dims(cx, "`dims`", dims, shape.len())?;
    let mut levels: Vec<Level> =
        shape.iter().enumerate().map(|(i, &n)| Level::dense(DimName::positional(i), Interval::from_len(n))).collect();
    for (l, &d) in v.levels.iter().zip(dims) {
        let n = shape[d as usize];
        let len = l.interval.len();
        if len != n && len != 1 {
            let diag = cx.error(
                "strata::verify::broadcast_incompatible",
                format!("dimension `{}` has extent {len}, which cannot broadcast to {n}", l.name),
                "only extent 1 stretches",
            );
            return Err(cx.with_operand(diag, arg));
        }
        let iv =
            cx.interval(l.interval.start as i128, l.interval.start as i128 + n as i128, "the broadcast interval")?;
        levels[d as usize] = Level::dense(l.name.clone(), iv);
    }
    let levels = finish_levels(cx, levels)?;
    Ok(cx.tensor(v.element, levels, v.placement))
}

pub(crate) fn map(cx: &mut Cx, kind: MapKind, func: Handle<Function>, args: &[Value]) -> RuleResult {
    let want = match kind {
        MapKind::Unary => Some(1),
        MapKind::Binary => Some(2),
        MapKind::Map => None,
    };
    if args.is_empty() || want.is_some_and(|n| n != args.len()) {
        return Err(cx.error(
            "strata::verify::arity_mismatch",
            format!(
                "`{}` takes {} operands, {} given",
                kind.keyword(),
                want.map_or("at least 1".into(), |n| n.to_string()),
                args.len()
            ),
            "wrong number of operands",
        ));
    }
    let (vs, placement) = views(cx, args)?;
    for (k, v) in vs.iter().enumerate().skip(1) {
        if v.levels != vs[0].levels {
            let d = cx.error(
                "strata::verify::map_shape_mismatch",
                format!("`{}` operands must have the same dimensions", kind.keyword()),
                "shapes differ",
            );
            return Err(cx.with_operand(cx.with_operand(d, args[0]), args[k]));
        }
    }
    let params: Vec<Handle<Type>> = vs.iter().map(|v| v.element).collect();
    let out = check_signature(cx, kind.keyword(), func, &params, None)?;
    Ok(cx.tensor_or_element(vs[0].is_tensor, out, vs[0].levels.clone(), placement))
}

fn check_indices(cx: &Cx, arg: Value, indices: &[Value], op: &str) -> Res<View> {
    let v = cx.view(arg);
    if indices.len() != v.rank() {
        let d = cx.error(
            "strata::verify::index_count_mismatch",
            format!("`{op}` needs {} indices for `%{}`, {} given", v.rank(), cx.expr(arg).name, indices.len()),
            "one index per dimension",
        );
        return Err(cx.with_operand(d, arg));
    }
    for &i in indices {
        if cx.scalar_of(cx.ty(i)) != Some(Scalar::Index) {
            let d = cx.error(
                "strata::verify::expected_index",
                format!("`{op}` indices are `index` scalars"),
                "not an `index`",
            );
            return Err(cx.with_operand(d, i));
        }
    }
    Ok(v)
}

pub(crate) fn get(cx: &mut Cx, arg: Value, indices: &[Value]) -> RuleResult {
    let v = check_indices(cx, arg, indices, "get")?;
    Ok(v.element)
}

pub(crate) fn set(cx: &mut Cx, arg: Value, indices: &[Value], value: Value) -> RuleResult {
    let v = check_indices(cx, arg, indices, "set")?;
    if cx.ty(value) != v.element {
        let d = cx.error(
            "strata::verify::element_type_mismatch",
            format!("`set` writes elements of type `{}`, found `{}`", cx.show(v.element), cx.show(cx.ty(value))),
            "wrong element type",
        );
        return Err(cx.with_operand(d, value));
    }
    Ok(cx.ty(arg))
}
