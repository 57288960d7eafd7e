//! Tensors of tensors in the loop-level IR. A nested value is lowered *flat*: one buffer over
//! its outer levels followed by the levels of its tensor elements at every depth, whose loop
//! variables are the element variables `$e0, $e1, …` ([`element_var`]), numbered across
//! depths and relative to the value's own type. Taking an element out of a value
//! ([`element_exit`]) or making a value an element ([`element_entry`]) renames them.

use std::rc::Rc;

use strata_entity::Handle;
use strata_ir::{BinaryOp, DimName, Level, PackLayout, Scalar, Type, TypeArena};

use crate::sym::{add, bin, index, ix, mul, sub, Coord, SExpr};

/// A tensor type's levels and element type (no levels, and the type itself, for any other type).
pub fn split(types: &TypeArena, ty: Handle<Type>) -> (Vec<Level>, Handle<Type>) {
    match &types[ty] {
        Type::Tensor(t) => (t.levels.clone(), t.element),
        _ => (Vec::new(), ty),
    }
}

/// The loop variable of position `k` inside a tensor element (`$e0`, `$e1`, …).
///
/// A tensor of tensors is lowered *flat*: its buffer has the outer levels followed by the
/// element's levels, and its symbolic value is an expression over the outer dimensions and
/// these element variables (which never clash with user dimensions, as `$` is not an
/// identifier character). Element variables number the levels of every depth of nesting
/// consecutively: in a `tensor<2x2 x tensor<4x4 x tensor<8x8xf64>>>`, `$e0, $e1` are the
/// block's levels and `$e2, $e3` the tile's. They are relative to the value's own type: the
/// element of that tensor (a block) is a value over the block's dimensions and `$e0, $e1`
/// for the tile's (see [`element_exit`] and [`element_entry`]).
pub fn element_var(k: usize) -> DimName {
    DimName(format!("$e{k}"))
}

/// The flat levels of `ty` (outer levels, then the levels of every nested element tensor named
/// by [`element_var`]) and its innermost element type.
pub fn flat(types: &TypeArena, ty: Handle<Type>) -> Result<(Vec<Level>, Handle<Type>), String> {
    let (mut levels, element) = split(types, ty);
    let inner = element_levels(types, ty);
    if inner.iter().any(|l| !l.format.is_dense_like()) {
        return Err("sparse or ragged tensor elements".into());
    }
    levels.extend(inner.iter().enumerate().map(|(k, l)| Level { name: element_var(k), ..l.clone() }));
    Ok((levels, innermost(types, element)))
}

/// The innermost element type of `ty` (`ty` itself when it is not a tensor).
fn innermost(types: &TypeArena, ty: Handle<Type>) -> Handle<Type> {
    match &types[ty] {
        Type::Tensor(t) => innermost(types, t.element),
        _ => ty,
    }
}

/// The levels of the tensor elements of `ty` at every depth, outermost first, with their own
/// names (empty when the element is not a tensor).
pub fn element_levels(types: &TypeArena, ty: Handle<Type>) -> Vec<Level> {
    let mut out = Vec::new();
    let mut element = split(types, ty).1;
    while let Type::Tensor(t) = &types[element] {
        out.extend(t.levels.iter().cloned());
        element = t.element;
    }
    out
}

/// Renaming pairs taking a value's tensor element out of it: the element's own levels `$e{k}`
/// become `to[k]`, and the variables of deeper elements `$e{n + j}` become `$e{j}`.
pub fn element_exit(to: Vec<Coord>, deeper: usize) -> (Vec<DimName>, Vec<Coord>) {
    let n = to.len();
    let mut from: Vec<DimName> = (0..n).map(element_var).collect();
    from.extend((0..deeper).map(|j| element_var(n + j)));
    let mut to = to;
    to.extend((0..deeper).map(|j| Coord::Var { dim: element_var(j), offset: 0 }));
    (from, to)
}

/// Renaming pairs making a value over `dims` a tensor element: `dims[k]` become `$e{k}` and the
/// value's own element variables `$e{j}` move past them, to `$e{n + j}`.
pub fn element_entry(dims: &[DimName], deeper: usize) -> (Vec<DimName>, Vec<Coord>) {
    let n = dims.len();
    let mut from = dims.to_vec();
    from.extend((0..deeper).map(element_var));
    let to = (0..n + deeper).map(|k| Coord::Var { dim: element_var(k), offset: 0 }).collect();
    (from, to)
}

/// How a `pack` result reads its operand: renaming pairs from the operand's dimensions to
/// coordinates over the result's outer dimensions and tile variables, and, where tiles
/// overhang the operand, the condition under which a point lies inside it (the coordinates
/// are then clamped into the operand, and the caller selects the padding outside).
pub struct PackRead {
    /// Operand dimensions (then its own element variables).
    pub from: Vec<DimName>,
    /// Their coordinates in the result.
    pub to: Vec<Coord>,
    /// `None` when every tile lies inside the operand.
    pub inside: Option<Rc<SExpr>>,
}

/// `pack`'s read of an operand with `levels` (and `deeper` element levels of its own) from a
/// result with outer levels `result` and tile levels `tile_levels`.
pub fn pack_read(
    result: &[Level],
    tile_levels: &[Level],
    levels: &[Level],
    deeper: usize,
    tile: &[u64],
    layout: &PackLayout,
) -> PackRead {
    let rank = levels.len();
    let mut position = vec![0; rank];
    for (i, d) in layout.outer(rank).into_iter().enumerate() {
        position[d] = i;
    }
    let var = |l: &Level| Coord::Var { dim: l.name.clone(), offset: 0 };
    let mut to: Vec<Coord> = (0..rank).map(|d| var(&result[position[d]])).collect();
    let mut inside: Option<Rc<SExpr>> = None;
    for (j, (d, &b)) in layout.tiled(rank).into_iter().zip(tile).enumerate() {
        // Element (outer o, tile i) of dimension d is operand offset o·b + i.
        let o = &result[position[d]];
        let t = &tile_levels[j];
        let offset = add(
            mul(sub(index(var(o)), ix(o.interval.start)), ix(b as i64)),
            sub(index(Coord::Var { dim: element_var(j), offset: 0 }), ix(t.interval.start)),
        );
        let n = levels[d].interval.len();
        let value = if n.is_multiple_of(b) {
            offset
        } else {
            // Offsets are never negative here: only the upper end needs the test.
            let here = Rc::new(SExpr::Binary(BinaryOp::Less, offset.clone(), ix(n as i64), Scalar::Index));
            inside = Some(crate::affine::and(inside, here));
            bin(BinaryOp::Minimum, offset, ix(n as i64 - 1))
        };
        to[d] = Coord::Computed { value, source: strata_ir::Interval::from_len(n), offset: levels[d].interval.start };
    }
    let mut from: Vec<DimName> = levels.iter().map(|l| l.name.clone()).collect();
    // The operand's own tensor elements (if any) sit below the new tile level.
    from.extend((0..deeper).map(element_var));
    to.extend((0..deeper).map(|j| Coord::Var { dim: element_var(tile_levels.len() + j), offset: 0 }));
    PackRead { from, to, inside }
}

/// `unpack`'s read of an operand with outer levels `outer` and tile levels `tile_levels` (and
/// `deeper` levels below them) from a result with `levels`: renaming pairs.
pub fn unpack_read(
    levels: &[Level],
    outer: &[Level],
    tile_levels: &[Level],
    deeper: usize,
    layout: &PackLayout,
) -> (Vec<DimName>, Vec<Coord>) {
    let rank = levels.len();
    let tiled = layout.tiled(rank);
    // Coordinate p of tiled dimension d is tile p / b at position p % b (b: tile size).
    let part = |d: usize, op: BinaryOp, source: &Level, b: u64| {
        let p = sub(index(Coord::Var { dim: levels[d].name.clone(), offset: 0 }), ix(levels[d].interval.start));
        Coord::Computed {
            value: bin(op, p, ix(b.max(1) as i64)),
            source: strata_ir::Interval::from_len(source.interval.len()),
            offset: source.interval.start,
        }
    };
    let mut from: Vec<DimName> = outer.iter().map(|l| l.name.clone()).collect();
    let mut to: Vec<Coord> = layout
        .outer(rank)
        .into_iter()
        .zip(outer)
        .map(|(d, o)| match tiled.iter().position(|&t| t == d) {
            Some(j) => part(d, BinaryOp::Divides, o, tile_levels[j].interval.len()),
            None => Coord::Var { dim: levels[d].name.clone(), offset: 0 },
        })
        .collect();
    let mods = tiled.iter().zip(tile_levels).map(|(&d, t)| part(d, BinaryOp::Modulo, t, t.interval.len())).collect();
    // The tile's own tensor elements (if any) become the result's.
    let (ef, et) = element_exit(mods, deeper);
    from.extend(ef);
    to.extend(et);
    (from, to)
}

/// `convert` from a tensor of tiles (outer levels `outer`, `k` tile levels, `deeper` below) to
/// its flat form with `levels`: renaming pairs (the buffers are the same, row-major).
pub fn flatten_read(levels: &[Level], outer: &[Level], k: usize, deeper: usize) -> (Vec<DimName>, Vec<Coord>) {
    let var = |l: &Level| Coord::Var { dim: l.name.clone(), offset: 0 };
    let mut from: Vec<DimName> = outer.iter().map(|l| l.name.clone()).collect();
    let mut to: Vec<Coord> = levels[..outer.len()].iter().map(var).collect();
    let (ef, et) = element_exit(levels[outer.len()..outer.len() + k].iter().map(var).collect(), deeper);
    from.extend(ef);
    to.extend(et);
    (from, to)
}

/// `convert` from the flat form with `levels` to a tensor of tiles with outer levels `outer`
/// (the rest of `levels` become the tile's, `deeper` below): renaming pairs.
pub fn nest_read(levels: &[Level], outer: &[Level], deeper: usize) -> (Vec<DimName>, Vec<Coord>) {
    let names: Vec<DimName> = levels.iter().map(|l| l.name.clone()).collect();
    let (mut from, mut to) = (names[..outer.len()].to_vec(), Vec::new());
    to.extend(outer.iter().map(|l| Coord::Var { dim: l.name.clone(), offset: 0 }));
    let (ef, et) = element_entry(&names[outer.len()..], deeper);
    from.extend(ef);
    to.extend(et);
    (from, to)
}
