//! Seed 001's nested tensors: `pack` and `unpack`.

use strata_ir::{DimName, Interval, Level, Placement, Type, Value};

use crate::context::{renumber, Cx, RuleResult};

pub(crate) fn pack(cx: &mut Cx, arg: Value, tile: &[u64]) -> RuleResult {
    let v = cx.require_dense(arg, "pack")?;
    if tile.len() != v.rank() {
        let d = cx.error(
            "strata::verify::rank_mismatch",
            format!("`tile` has {} entries for an operand of rank {}", tile.len(), v.rank()),
            "one tile size per dimension",
        );
        return Err(cx.with_operand(d, arg));
    }
    let mut outer = Vec::new();
    let mut inner = Vec::new();
    for (i, (l, &b)) in v.levels.iter().zip(tile).enumerate() {
        let n = l.interval.len();
        if b == 0 || n % b != 0 {
            let d = cx.error(
                "strata::verify::tile_not_dividing",
                format!("tile size {b} does not divide the extent {n} of `{}`", l.name),
                "tiles must cover the dimension exactly",
            );
            return Err(Box::new(cx.with_operand(d, arg).with_help("pad the tensor first, or pick a divisor")));
        }
        outer.push(Level::dense(l.name.clone(), Interval::from_len(n / b)));
        inner.push(Level::dense(DimName::positional(i), Interval::from_len(b)));
    }
    let outer = renumber(outer)
        .map_err(|n| cx.error("strata::verify::duplicate_dimension", format!("duplicate `{n}`"), "name clash"))?;
    let el = cx.tensor(v.element, inner, Placement::HOST);
    Ok(cx.tensor(el, outer, v.placement))
}

pub(crate) fn unpack(cx: &mut Cx, arg: Value) -> RuleResult {
    let v = cx.view(arg);
    let Type::Tensor(inner) = cx.types[v.element].clone() else {
        let d = cx.error(
            "strata::verify::expected_nested",
            format!("`unpack` needs a tensor of tensors, but the elements are `{}`", cx.show(v.element)),
            "not nested",
        );
        return Err(cx.with_operand(d, arg));
    };
    if inner.levels.len() != v.rank()
        || !inner.is_all_dense()
        || v.levels.iter().any(|l| l.format != strata_ir::LevelFormat::Dense)
    {
        let d = cx.error(
            "strata::verify::rank_mismatch",
            format!("`unpack` needs dense tiles of the outer rank {}, found rank {}", v.rank(), inner.levels.len()),
            "tile rank differs",
        );
        return Err(cx.with_operand(d, arg));
    }
    let mut levels = Vec::new();
    for (o, i) in v.levels.iter().zip(&inner.levels) {
        let n = cx.product([o.interval.len(), i.interval.len()], &format!("the unpacked extent of `{}`", o.name))?;
        levels.push(Level::dense(o.name.clone(), Interval::from_len(n)));
    }
    Ok(cx.tensor(inner.element, levels, v.placement))
}
