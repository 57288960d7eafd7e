//! Seed 001's nested tensors: `pack` and `unpack` (with MLIR `tensor.pack`'s layout options),
//! and the flat view of a tensor of tensors that `convert` moves to and from.

use strata_ir::{DimName, Interval, Level, Literal, PackLayout, Placement, Type, Value};

use crate::context::{renumber, Cx, RuleResult, View};

/// Checks `layout` against an operand of rank `rank`: `inner_dims_pos` lists distinct
/// dimensions (`tiles` of them), `outer_dims_perm` is a permutation.
fn check_layout(
    cx: &Cx,
    arg: Value,
    layout: &PackLayout,
    rank: usize,
    tiles: usize,
    op: &str,
) -> Result<(), Box<strata_ir::Diagnostic>> {
    let tiled = layout.tiled(rank);
    let mut seen = vec![false; rank];
    let distinct = tiled.iter().all(|&d| d < rank && !std::mem::replace(&mut seen[d], true));
    if !distinct {
        let d = cx.error(
            "strata::verify::invalid_permutation",
            format!(
                "`inner_dims_pos = {:?}` must name distinct dimensions of the rank-{rank} operand",
                layout.inner_dims_pos
            ),
            "not distinct dimensions",
        );
        return Err(cx.with_operand(d, arg));
    }
    if tiled.len() != tiles {
        let what = if layout.inner_dims_pos.is_empty() { "dimensions" } else { "entries in `inner_dims_pos`" };
        let d = cx.error(
            "strata::verify::rank_mismatch",
            format!("`{op}` has {tiles} tile sizes for {} {what}", tiled.len()),
            "one tile size per tiled dimension",
        );
        return Err(cx.with_operand(d, arg));
    }
    let mut outer = layout.outer(rank);
    outer.sort_unstable();
    if outer != (0..rank).collect::<Vec<_>>() {
        let d = cx.error(
            "strata::verify::invalid_permutation",
            format!(
                "`outer_dims_perm = {:?}` is not a permutation of the operand's {rank} dimensions",
                layout.outer_dims_perm
            ),
            "not a permutation",
        );
        return Err(cx.with_operand(d, arg));
    }
    Ok(())
}

pub(crate) fn pack(
    cx: &mut Cx,
    arg: Value,
    tile: &[u64],
    layout: &PackLayout,
    padding: Option<&Literal>,
) -> RuleResult {
    let v = cx.require_dense(arg, "pack")?;
    check_layout(cx, arg, layout, v.rank(), tile.len(), "pack")?;
    if let Some(p) = padding {
        if !cx.literal_fits(p, v.element) {
            let d = cx.error(
                "strata::verify::literal_type_mismatch",
                format!("padding `{p}` is not a value of the element type `{}`", cx.show(v.element)),
                "padding does not fit",
            );
            return Err(cx.with_operand(d, arg));
        }
    }
    // Each source dimension: its outer extent (tiles, or itself when not tiled).
    let mut outer_of: Vec<Level> = v.levels.clone();
    let mut inner = Vec::new();
    for (j, (&d, &b)) in layout.tiled(v.rank()).iter().zip(tile).enumerate() {
        let l = &v.levels[d];
        let n = l.interval.len();
        if b == 0 || (padding.is_none() && n % b != 0) {
            let d = cx.error(
                "strata::verify::tile_not_dividing",
                format!("tile size {b} does not divide the extent {n} of `{}`", l.name),
                "tiles must cover the dimension exactly",
            );
            let help = if b == 0 {
                "tile sizes are positive"
            } else {
                "give `padding = …` for the last tiles, or pick a divisor"
            };
            return Err(Box::new(cx.with_operand(d, arg).with_help(help)));
        }
        outer_of[d] = Level::dense(l.name.clone(), Interval::from_len(n.div_ceil(b)));
        inner.push(Level::dense(DimName::positional(j), Interval::from_len(b)));
    }
    let outer: Vec<Level> = layout.outer(v.rank()).into_iter().map(|d| outer_of[d].clone()).collect();
    let outer = renumber(outer)
        .map_err(|n| cx.error("strata::verify::duplicate_dimension", format!("duplicate `{n}`"), "name clash"))?;
    let el = cx.tensor(v.element, inner, Placement::HOST);
    Ok(cx.tensor(el, outer, v.placement))
}

pub(crate) fn unpack(cx: &mut Cx, arg: Value, layout: &PackLayout, shape: &[u64]) -> RuleResult {
    let v = cx.require_dense(arg, "unpack")?;
    let Type::Tensor(inner) = cx.types[v.element].clone() else {
        let d = cx.error(
            "strata::verify::expected_nested",
            format!("`unpack` needs a tensor of tensors, but the elements are `{}`", cx.show(v.element)),
            "not nested",
        );
        return Err(cx.with_operand(d, arg));
    };
    if let Some(l) = inner.levels.iter().find(|l| l.format != strata_ir::LevelFormat::Dense) {
        let d = cx.error(
            "strata::verify::format_not_supported",
            format!("`unpack` needs dense tiles, but the tile level `{}` is `{}`", l.name, l.format.keyword()),
            "tiles not dense",
        );
        return Err(Box::new(cx.with_operand(d, arg).with_help("convert the tiles to dense storage first")));
    }
    check_layout(cx, arg, layout, v.rank(), inner.levels.len(), "unpack")?;
    if !shape.is_empty() && shape.len() != v.rank() {
        let d = cx.error(
            "strata::verify::rank_mismatch",
            format!("`shape` has {} entries for a result of rank {}", shape.len(), v.rank()),
            "one extent per dimension",
        );
        return Err(cx.with_operand(d, arg));
    }
    // Source dimension d is outer dimension `position[d]`.
    let mut position = vec![0; v.rank()];
    for (i, d) in layout.outer(v.rank()).into_iter().enumerate() {
        position[d] = i;
    }
    let mut levels: Vec<Level> = position.iter().map(|&i| v.levels[i].clone()).collect();
    let tiled = layout.tiled(v.rank());
    for (&d, l) in tiled.iter().zip(&inner.levels) {
        let o = &v.levels[position[d]];
        let n = cx.product([o.interval.len(), l.interval.len()], &format!("the unpacked extent of `{}`", o.name))?;
        levels[d] = Level::dense(o.name.clone(), Interval::from_len(n));
    }
    for (d, (l, &want)) in levels.iter_mut().zip(shape).enumerate() {
        let full = l.interval.len();
        let is_tiled = tiled.contains(&d);
        if want > full || (!is_tiled && want != full) {
            let d = cx.error(
                "strata::verify::unpack_shape_mismatch",
                format!("`shape` asks for extent {want} of `{}`, whose unpacked extent is {full}", l.name),
                if is_tiled { "larger than the tiles" } else { "an untiled dimension keeps its extent" },
            );
            return Err(cx.with_operand(d, arg));
        }
        l.interval = Interval::new(l.interval.start, l.interval.start + want as i64);
    }
    let levels = renumber(levels)
        .map_err(|n| cx.error("strata::verify::duplicate_dimension", format!("duplicate `{n}`"), "name clash"))?;
    Ok(cx.tensor(inner.element, levels, v.placement))
}

/// The levels of a tensor of tensors seen flat (the outer levels, then the tile's, positional
/// names renumbered) and the tile's element; `None` unless every level of both is dense.
pub(crate) fn flattened(cx: &Cx, v: &View) -> Option<(Vec<Level>, strata_entity::Handle<Type>)> {
    let Type::Tensor(inner) = &cx.types[v.element] else { return None };
    let dense = |ls: &[Level]| ls.iter().all(|l| l.format == strata_ir::LevelFormat::Dense);
    if !v.is_tensor || !dense(&v.levels) || !dense(&inner.levels) {
        return None;
    }
    let levels = v.levels.iter().chain(&inner.levels).cloned().collect();
    renumber(levels).ok().map(|l| (l, inner.element))
}
