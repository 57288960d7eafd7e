//! Seed 001's nested tensors: `pack`, `unpack`, and `convert` between a tensor of tiles and
//! its flat form.

use strata_ir::{Literal, PackLayout, Value};
use strata_runtime::{strides, Data, ElemType, Tensor};

use crate::ops::{literal_elem, OpCx};
use crate::structured::{for_each_pos, linear};
use crate::RunError;

type R<T> = Result<T, RunError>;

/// The tile type of a nested result or operand (its tensor element type).
fn tile_type(element: &ElemType) -> &strata_runtime::ValueType {
    let ElemType::Tensor(t) = element else { unreachable!("verified nested type") };
    t
}

pub(crate) fn pack(cx: &OpCx, arg: Value, tile: &[u64], layout: &PackLayout, padding: Option<&Literal>) -> R<Tensor> {
    let t = cx.arg(arg);
    let (shape, st) = (t.ty.shape(), t.strides());
    let (tiled, outer) = (layout.tiled(shape.len()), layout.outer(shape.len()));
    let tile_ty = tile_type(&cx.ty.element);
    let pad = padding.map(|p| literal_elem(p, &tile_ty.element));
    let mut tiles = Vec::with_capacity(cx.ty.len());
    for_each_pos(&cx.ty.shape(), |opos| {
        // The operand coordinates of the tile's first element.
        let mut base = vec![0; shape.len()];
        for (&d, &o) in outer.iter().zip(opos) {
            base[d] = o;
        }
        for (&d, &b) in tiled.iter().zip(tile) {
            base[d] *= b as usize;
        }
        let mut out = Tensor::zeros(tile_ty);
        let mut present = vec![true; out.len()];
        let mut k = 0;
        for_each_pos(&tile_ty.shape(), |ipos| {
            let mut at = base.clone();
            for (&d, &i) in tiled.iter().zip(ipos) {
                at[d] += i;
            }
            if at.iter().zip(&shape).all(|(a, n)| a < n) {
                let j = linear(&st, &at);
                out.data.set(k, t.get(j));
                present[k] = t.is_present(j);
            } else {
                out.data.set(k, pad.clone().expect("verified: padding given where tiles overhang"));
            }
            k += 1;
            Ok(())
        })?;
        out.present = Some(present);
        out.normalize_presence();
        tiles.push(out);
        Ok(())
    })?;
    Ok(Tensor { ty: cx.ty.clone(), data: Data::Tensors(tiles), present: None })
}

pub(crate) fn unpack(cx: &OpCx, arg: Value, layout: &PackLayout) -> R<Tensor> {
    let t = cx.arg(arg);
    let Data::Tensors(tiles) = &t.data else { unreachable!("verified nested operand") };
    let rank = cx.ty.levels.len();
    let (tiled, outer) = (layout.tiled(rank), layout.outer(rank));
    let tile_shape = tile_type(&t.ty.element).shape();
    let (outer_st, tile_st) = (t.strides(), strides(&tile_shape));
    let mut out = Tensor::zeros(cx.ty);
    let mut present = vec![true; out.len()];
    let mut k = 0;
    for_each_pos(&cx.ty.shape(), |pos| {
        // Tiled dimension d at coordinate p is tile p / b, element p % b.
        let mut block = pos.to_vec();
        let mut inner = vec![0; tiled.len()];
        for (j, &d) in tiled.iter().enumerate() {
            block[d] = pos[d] / tile_shape[j];
            inner[j] = pos[d] % tile_shape[j];
        }
        let o: Vec<usize> = outer.iter().map(|&d| block[d]).collect();
        let tile = &tiles[linear(&outer_st, &o)];
        let i = linear(&tile_st, &inner);
        out.data.set(k, tile.get(i));
        present[k] = t.is_present(linear(&outer_st, &o)) && tile.is_present(i);
        k += 1;
        Ok(())
    })?;
    out.present = Some(present);
    out.normalize_presence();
    Ok(out)
}

/// `convert` between a tensor of tiles and its flat form (outer levels, then the tile's):
/// in row-major order the flat elements are the tiles' elements one tile after another.
pub(crate) fn convert_nesting(cx: &OpCx, arg: Value) -> R<Tensor> {
    let t = cx.arg(arg);
    match &t.data {
        Data::Tensors(tiles) => {
            let n = tile_type(&t.ty.element).len();
            let mut data = Data::zeros(&cx.ty.element, n * tiles.len());
            let mut present = vec![true; n * tiles.len()];
            for (o, tile) in tiles.iter().enumerate() {
                for i in 0..n {
                    data.set(o * n + i, tile.get(i));
                    present[o * n + i] = t.is_present(o) && tile.is_present(i);
                }
            }
            let mut out = Tensor { ty: cx.ty.clone(), data, present: Some(present) };
            out.normalize_presence();
            Ok(out)
        }
        _ => {
            let tile_ty = tile_type(&cx.ty.element);
            let n = tile_ty.len();
            let tiles = (0..cx.ty.len())
                .map(|o| {
                    let positions: Vec<usize> = (o * n..(o + 1) * n).collect();
                    let present = t.present.as_ref().map(|p| positions.iter().map(|&j| p[j]).collect());
                    let mut tile = Tensor { ty: tile_ty.clone(), data: t.data.select(&positions), present };
                    tile.normalize_presence();
                    tile
                })
                .collect();
            Ok(Tensor { ty: cx.ty.clone(), data: Data::Tensors(tiles), present: None })
        }
    }
}
