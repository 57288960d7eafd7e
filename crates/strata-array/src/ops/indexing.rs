//! Indexing: basic indexing (integers, slices with steps, new axes, an ellipsis) through
//! affine views, and `take` through the core `gather` (seed 004). Boolean masks are a runtime
//! kernel ([`super::kernels::mask`]): the result's length depends on the data.

use strata_ir::{Mode, Op, Scalar};

use super::cast;
use super::manipulation::{affine_view, permute_dims, reshape, Coord};
use crate::array::{operand, Array};
use crate::error::{invalid, Result};

/// One entry of a basic index (`x[1, 2:8:2, ..., None]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Index {
    /// One position (negative counts from the end); the axis is dropped.
    At(i64),
    /// `start:stop:step` with Python's defaults and clamping.
    Slice(Option<i64>, Option<i64>, Option<i64>),
    /// A new axis of extent 1 (`None` / `np.newaxis`).
    NewAxis,
    /// As many full slices as needed (`...`).
    Ellipsis,
}

/// `(start, step, len)` of a slice over an axis of extent `n`, as Python's `slice.indices`.
fn slice_range(start: Option<i64>, stop: Option<i64>, step: Option<i64>, n: i64) -> Result<(i64, i64, usize)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(invalid("index", "slice step cannot be zero"));
    }
    let clamp = |v: Option<i64>, default: i64, lo: i64, hi: i64| -> i64 {
        match v {
            None => default,
            Some(v) => {
                let v = if v < 0 { v + n } else { v };
                v.clamp(lo, hi)
            }
        }
    };
    let (s, e) = if step > 0 {
        (clamp(start, 0, 0, n), clamp(stop, n, 0, n))
    } else {
        (clamp(start, n - 1, -1, n - 1), clamp(stop, -1, -1, n - 1))
    };
    let len = if step > 0 { (e - s + step - 1).div_euclid(step) } else { (s - e + (-step) - 1).div_euclid(-step) };
    Ok((s, step, len.max(0) as usize))
}

/// Basic indexing `x[index…]` (array-API semantics: out-of-range integers are errors, slices
/// clamp).
pub fn index(x: &Array, index: &[Index]) -> Result<Array> {
    let ellipses = index.iter().filter(|i| **i == Index::Ellipsis).count();
    if ellipses > 1 {
        return Err(invalid("index", "an index can only have a single ellipsis"));
    }
    let consuming = index.iter().filter(|i| matches!(i, Index::At(_) | Index::Slice(..))).count();
    if consuming > x.ndim() {
        return Err(invalid("index", format!("too many indices: {consuming} for an array of {} dimensions", x.ndim())));
    }
    // Expand the ellipsis (or pad at the end) with full slices.
    let mut full = Vec::new();
    for i in index {
        if *i == Index::Ellipsis {
            full.extend(std::iter::repeat_n(Index::Slice(None, None, None), x.ndim() - consuming));
        } else {
            full.push(*i);
        }
    }
    if ellipses == 0 {
        full.extend(std::iter::repeat_n(Index::Slice(None, None, None), x.ndim() - consuming));
    }
    let mut coords = Vec::new();
    let mut shape = Vec::new();
    let mut final_shape: Vec<isize> = Vec::new();
    let mut axis = 0;
    for i in &full {
        match *i {
            Index::At(k) => {
                let n = x.shape()[axis] as i64;
                let p = if k < 0 { k + n } else { k };
                if !(0..n).contains(&p) {
                    return Err(invalid("index", format!("index {k} is out of bounds for axis {axis} with size {n}")));
                }
                coords.push(Coord { offset: p, terms: vec![] });
                axis += 1;
            }
            Index::Slice(a, b, s) => {
                let (start, step, len) = slice_range(a, b, s, x.shape()[axis] as i64)?;
                coords.push(Coord { offset: start, terms: vec![(shape.len(), step)] });
                shape.push(len);
                final_shape.push(len as isize);
                axis += 1;
            }
            Index::NewAxis => final_shape.push(1),
            Index::Ellipsis => unreachable!("expanded"),
        }
    }
    let identity = coords.iter().enumerate().all(|(d, c)| c.offset == 0 && c.terms == [(d, 1)]) && shape == x.shape();
    let viewed = if identity { x.clone() } else { affine_view(x, &shape, &coords)? };
    if final_shape.len() == shape.len() {
        return Ok(viewed);
    }
    reshape(&viewed, &final_shape, None)
}

/// The elements at integer `indices` (negative counts from the end) along `axis` (required
/// unless `x` is 1-d); an index out of range is an error. The indices are evaluated first.
pub fn take(x: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    if !indices.dtype().is_integer() {
        return Err(crate::error::dtype_error(
            "take",
            format!("indices must be integers, not {}", indices.dtype().numpy_name()),
        ));
    }
    if indices.ndim() != 1 {
        return Err(invalid("take", format!("indices must be 1-d, not of shape {:?}", indices.shape())));
    }
    let axis = match axis {
        Some(a) => Array::axis("take", a, x.ndim())?,
        None if x.ndim() == 1 => 0,
        None => return Err(invalid("take", "axis is required for arrays of more than one dimension")),
    };
    let place = Array::same_place("take", &[x, indices])?;
    let n = x.shape()[axis];
    let k = indices.shape()[0];
    let mut shape = x.shape().to_vec();
    shape[axis] = k;
    if k == 0 || x.size() == 0 {
        return super::creation::zeros(&shape, Some(x.dtype()), &place);
    }
    // The indices are evaluated here: an index out of range is an error naming it (numpy's
    // `IndexError`), and negative ones count from the end.
    let values = cast(indices, Scalar::I64).to_vec::<i64>()?;
    let mut normalized = Vec::with_capacity(values.len());
    for &v in &values {
        let p = if v < 0 { v + n as i64 } else { v };
        if !(0..n as i64).contains(&p) {
            return Err(invalid("take", format!("index {v} is out of bounds for axis {axis} with size {n}")));
        }
        normalized.push(p);
    }
    let idx = super::placed(Array::from_vec(&[k], normalized)?, &place);
    let col = Array::traced(
        Op::ExpandShape { arg: operand(0), groups: vec![vec![0, 1]], shape: vec![k as u64, 1], mode: Mode::View },
        vec![idx],
        vec![k, 1],
        Scalar::I64,
        place.clone(),
    );
    let mut gathered_shape = vec![k];
    gathered_shape.extend(x.shape().iter().enumerate().filter(|(d, _)| *d != axis).map(|(_, &e)| e));
    let g = Array::traced(
        Op::Gather { source: operand(0), indices: operand(1), coordinates: vec![axis as u32], mode: Mode::Copy },
        vec![x.clone(), col],
        gathered_shape,
        x.dtype(),
        place,
    );
    let perm: Vec<isize> = (0..x.ndim()).map(|i| if i < axis { i + 1 } else if i == axis { 0 } else { i } as isize).collect();
    permute_dims(&g, &perm)
}
