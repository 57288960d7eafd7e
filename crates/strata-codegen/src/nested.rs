//! Tensors of tensors in the loop-level IR. A nested value is lowered *flat*: one buffer over
//! its outer levels followed by the levels of its tensor elements at every depth, whose loop
//! variables are the element variables `$e0, $e1, …` ([`element_var`]), numbered across
//! depths and relative to the value's own type. Taking an element out of a value
//! ([`element_exit`]) or making a value an element ([`element_entry`]) renames them.

use strata_entity::Handle;
use strata_ir::{DimName, Level, Type, TypeArena};

use crate::sym::Coord;

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
