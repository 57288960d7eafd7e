//! Indexing: basic indexing (integers, slices with steps, new axes, an ellipsis) through
//! affine views, and `take` through the core `gather` (seed 004). Boolean masks are a runtime
//! kernel ([`super::kernels::mask`]): the result's length depends on the data.

use strata_ir::{DimName, Interval, Mode, Op, Scalar};

use super::cast;
use super::manipulation::{affine_view, permute_dims, reshape, Coord};
use crate::array::{operand, Array, Place};
use crate::dtype::DType;
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

/// Integer index `k` along `axis` of extent `n` (negative counts from the end) as a position;
/// out of range is an error of `op` naming it (numpy's `IndexError`).
fn position(op: &'static str, k: i64, n: i64, axis: usize) -> Result<i64> {
    let p = if k < 0 { k + n } else { k };
    if !(0..n).contains(&p) {
        return Err(invalid(op, format!("index {k} is out of bounds for axis {axis} with size {n}")));
    }
    Ok(p)
}

/// `index` with its ellipsis (or the end) expanded into full slices, checked against an array
/// of `ndim` dimensions.
fn expanded(index: &[Index], ndim: usize) -> Result<Vec<Index>> {
    let ellipses = index.iter().filter(|i| **i == Index::Ellipsis).count();
    if ellipses > 1 {
        return Err(invalid("index", "an index can only have a single ellipsis"));
    }
    let consuming = index.iter().filter(|i| matches!(i, Index::At(_) | Index::Slice(..))).count();
    if consuming > ndim {
        return Err(invalid("index", format!("too many indices: {consuming} for an array of {ndim} dimensions")));
    }
    let mut full = Vec::new();
    for i in index {
        if *i == Index::Ellipsis {
            full.extend(std::iter::repeat_n(Index::Slice(None, None, None), ndim - consuming));
        } else {
            full.push(*i);
        }
    }
    if ellipses == 0 {
        full.extend(std::iter::repeat_n(Index::Slice(None, None, None), ndim - consuming));
    }
    Ok(full)
}

/// The box `[start, stop)` per axis an index of slices of step 1 selects (`None` for any other
/// index: integers, steps, new axes).
fn unit_box(x: &Array, full: &[Index]) -> Result<Option<Vec<(i64, i64)>>> {
    let mut bounds = Vec::with_capacity(full.len());
    for (axis, i) in full.iter().enumerate() {
        match *i {
            Index::Slice(a, b, s) if s.unwrap_or(1) == 1 => {
                let (start, _, len) = slice_range(a, b, s, x.shape()[axis] as i64)?;
                bounds.push((start, start + len as i64));
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(bounds))
}

/// The `subset` of `x` to `bounds` (intervals where they are in `x`, not moved to the origin;
/// block levels stay block levels). `shape`: the array it is when every bound starts at 0,
/// else a step of the slice ([`Array::traced_step`]).
fn boxed(x: &Array, bounds: &[(i64, i64)], shape: Option<&[usize]>) -> Array {
    let domain: Vec<_> = bounds
        .iter()
        .enumerate()
        .filter(|(d, b)| **b != (0, x.shape()[*d] as i64))
        .map(|(d, &(s, e))| (DimName::positional(d), Interval::new(s, e)))
        .collect();
    if domain.is_empty() {
        return x.clone();
    }
    let op = Op::Subset { arg: operand(0), domain };
    match shape {
        Some(shape) => Array::traced_blockwise(op, vec![x.clone()], shape.to_vec(), x.dtype(), x.place().clone()),
        None => Array::traced_step(op, vec![x.clone()], x.dtype(), x.place().clone()),
    }
}

/// `x` (a step whose axis `d` starts at `starts[d]`) moved so that every axis starts at 0:
/// one `cartesian_shift` per moved axis, the last of them the array of `shape`.
fn to_origin(x: Array, starts: &[i64], shape: &[usize], dtype: DType, place: &Place) -> Array {
    let moved: Vec<usize> = (0..starts.len()).filter(|&d| starts[d] != 0).collect();
    let mut out = x;
    for (k, &d) in moved.iter().enumerate() {
        let op = Op::CartesianShift { arg: operand(0), dim: DimName::positional(d), offset: starts[d] };
        out = match k + 1 == moved.len() {
            true => Array::traced_blockwise(op, vec![out], shape.to_vec(), dtype, place.clone()),
            false => Array::traced_step(op, vec![out], dtype, place.clone()),
        };
    }
    out
}

/// Basic indexing `x[index…]` (array-API semantics: out-of-range integers are errors, slices
/// clamp).
///
/// On a team array, slices of step 1 are a `subset` and shifts back to the origin: the rows a
/// rank's part of the result reads from other ranks arrive by a halo exchange, and nothing is
/// gathered (`u[2:, 1:-1] + u[:-2, 1:-1]` is a stencil). Other indices of a team array compute
/// on the whole array.
pub fn index(x: &Array, index: &[Index]) -> Result<Array> {
    let full = expanded(index, x.ndim())?;
    if x.on_team() && x.ndim() > 0 {
        if let Some(bounds) = unit_box(x, &full)? {
            let shape: Vec<usize> = bounds.iter().map(|&(s, e)| (e - s) as usize).collect();
            if shape == x.shape() {
                return Ok(x.clone());
            }
            if shape.contains(&0) {
                return super::creation::zeros(&shape, Some(x.dtype()), x.place());
            }
            let starts: Vec<i64> = bounds.iter().map(|b| b.0).collect();
            if starts.iter().all(|&s| s == 0) {
                return Ok(boxed(x, &bounds, Some(&shape)));
            }
            let part = boxed(x, &bounds, None);
            return Ok(to_origin(part, &starts, &shape, x.dtype(), x.place()));
        }
    }
    let mut coords = Vec::new();
    let mut shape = Vec::new();
    let mut final_shape: Vec<isize> = Vec::new();
    let mut axis = 0;
    for i in &full {
        match *i {
            Index::At(k) => {
                let p = position("index", k, x.shape()[axis] as i64, axis)?;
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
        normalized.push(position("take", v, n as i64, axis)?);
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

/// `x` with the part `index` selects replaced by `value` (`x[index] = value`), as a new array:
/// `value` (cast to `x`'s dtype, broadcast to the part's shape) moved to the part's place and
/// joined with the rest of `x` by `concat`s along each axis whose part is not whole. Integers
/// and slices of step 1 (and `...`) only.
///
/// On a team array the pieces keep the block level, so each rank assigns its own rows: an
/// interior update `u[1:-1, 1:-1] = …` of a time loop runs without gathering.
///
/// # Errors
/// An index with a step other than 1 or a new axis, an integer out of range, or a value that
/// does not broadcast to the part (or lives elsewhere).
pub fn set_index(x: &Array, index: &[Index], value: &Array) -> Result<Array> {
    let full = expanded(index, x.ndim())?;
    // The value moves to where `x` lives (an assignment writes into `x`): a host value of the
    // same device is distributed over `x`'s team.
    let place = match value.on_team() || value.device() != x.device() {
        true => Array::same_place("__setitem__", &[x, value])?,
        false => x.place().clone(),
    };
    // Integers are parts of extent 1 whose axis the value does not have.
    let mut bounds = Vec::with_capacity(full.len());
    let mut part_shape = Vec::new();
    for (axis, i) in full.iter().enumerate() {
        let n = x.shape()[axis] as i64;
        match *i {
            Index::At(k) => {
                let p = position("index", k, n, axis)?;
                bounds.push((p, p + 1));
            }
            Index::Slice(a, b, s) if s.unwrap_or(1) == 1 => {
                let (start, _, len) = slice_range(a, b, s, n)?;
                bounds.push((start, start + len as i64));
                part_shape.push(len);
            }
            _ => {
                return Err(invalid(
                    "__setitem__",
                    "assignment takes integers and slices of step 1 (and `...`); compute the array another way",
                ))
            }
        }
    }
    let b = super::broadcast_shapes("__setitem__", &[value.shape(), &part_shape])?;
    if b != part_shape {
        return Err(crate::error::ArrayError::Broadcast {
            op: "__setitem__",
            a: value.shape().to_vec(),
            b: part_shape,
        });
    }
    let shape: Vec<usize> = bounds.iter().map(|&(s, e)| (e - s) as usize).collect();
    if shape.contains(&0) {
        return Ok(x.clone());
    }
    let v = cast(value, x.dtype());
    let v =
        if v.ndim() == 0 { super::broadcast_in_dim(&v, &part_shape, &[]) } else { super::to_shape(&v, &part_shape) };
    let v = if part_shape.len() != shape.len() {
        let s: Vec<isize> = shape.iter().map(|&e| e as isize).collect();
        super::manipulation::reshape(&v, &s, None)?
    } else {
        v
    };
    let v = super::placed(v, &place);
    let whole = |d: usize| bounds[d] == (0, x.shape()[d] as i64);
    let Some(outer) = (0..x.ndim()).find(|&d| !whole(d)) else { return Ok(v) };
    // The value at the part's place (a step: its intervals start at the part's).
    let mut acc = v;
    for d in (0..x.ndim()).filter(|&d| bounds[d].0 != 0) {
        let op = Op::CartesianShift { arg: operand(0), dim: DimName::positional(d), offset: -bounds[d].0 };
        acc = Array::traced_step(op, vec![acc], x.dtype(), place.clone());
    }
    // Cut to the part on the first axis (the identity), so that on a team each rank's piece
    // is the rows it needs, as the pieces of `x` beside it are.
    let op =
        Op::Subset { arg: operand(0), domain: vec![(DimName::positional(0), Interval::new(bounds[0].0, bounds[0].1))] };
    acc = Array::traced_step(op, vec![acc], x.dtype(), place.clone());
    // Innermost axis first: after axis `d`, `acc` spans axes `d..` whole and the part's
    // bounds on the axes before `d`.
    for d in (outer..x.ndim()).rev().filter(|&d| !whole(d)) {
        let n = x.shape()[d] as i64;
        let strip = |s: i64, e: i64| {
            let mut b: Vec<(i64, i64)> =
                (0..x.ndim()).map(|k| if k < d { bounds[k] } else { (0, x.shape()[k] as i64) }).collect();
            b[d] = (s, e);
            boxed(x, &b, None)
        };
        let mut pieces = Vec::new();
        if bounds[d].0 > 0 {
            pieces.push(strip(0, bounds[d].0));
        }
        pieces.push(acc);
        if bounds[d].1 < n {
            pieces.push(strip(bounds[d].1, n));
        }
        let op = Op::Concat {
            args: (0..pieces.len()).map(operand).collect(),
            dim: DimName::positional(d),
            mode: Mode::Copy,
        };
        acc = match d == outer {
            true => Array::traced_blockwise(op, pieces, x.shape().to_vec(), x.dtype(), place.clone()),
            false => Array::traced_step(op, pieces, x.dtype(), place.clone()),
        };
    }
    Ok(acc)
}
