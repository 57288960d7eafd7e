//! Manipulation functions: defined through `broadcast_in_dim`, `transpose`, `concat`,
//! `collapse_shape` / `expand_shape`, and `map_reduce_aff` with an identity payload for
//! every strided view (slices, flips, rolls) — an affine access map is exactly a strided view.

use strata_ir::{AffineExpr, AffineMap, DimName, Einsum, Init, Mode, Op, PermKind};

use super::{broadcast_in_dim, broadcast_shapes, cast, to_shape, u32s, u64s};
use crate::array::{operand, Array};
use crate::dtype::result_type;
use crate::error::{invalid, ArrayError, Result};
use crate::trace::fold_payload;

/// One coordinate of an affine view: `offset + Σ coef · out_dim`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Coord {
    pub offset: i64,
    pub terms: Vec<(usize, i64)>,
}

impl Coord {
    /// `out_dim`, unchanged.
    pub fn dim(d: usize) -> Coord {
        Coord { offset: 0, terms: vec![(d, 1)] }
    }

    fn expr(&self) -> AffineExpr {
        let mut e = AffineExpr::constant(self.offset);
        for &(d, c) in &self.terms {
            e.add_term(d as u32, c);
        }
        e
    }
}

/// The array `y[p] = x[coords(p)]` of `shape`: a `map_reduce_aff` without reduction loops
/// whose payload returns the element read. Every coordinate must stay in bounds.
pub(crate) fn affine_view(x: &Array, shape: &[usize], coords: &[Coord]) -> Result<Array> {
    if shape.iter().product::<usize>() == 0 {
        return super::creation::zeros(shape, Some(x.dtype()), x.place());
    }
    let func = fold_payload(x.dtype(), None);
    let init = Init::Literal(crate::array::literal(0.0, x.dtype()));
    if shape.is_empty() {
        // A 0-d result: view one element, then fold it out (`map_reduce` over one point
        // yields a 0-d tensor).
        let one = affine_view(x, &[1], coords)?;
        let subscripts = Einsum { inputs: vec![vec!['a']], output: vec![] };
        return Ok(Array::traced(
            Op::MapReduce { func, args: vec![operand(0)], init, subscripts },
            vec![one],
            vec![],
            x.dtype(),
            x.place().clone(),
        ));
    }
    let r = shape.len() as u32;
    let identity = AffineMap { num_dims: r, results: (0..r).map(AffineExpr::dim).collect() };
    let read = AffineMap { num_dims: r, results: coords.iter().map(Coord::expr).collect() };
    let op = Op::MapReduceAff {
        func,
        args: vec![operand(0)],
        init,
        domain: u64s(shape),
        outputs: r,
        shape: u64s(shape),
        out_map: identity,
        maps: vec![read],
        padding: None,
    };
    Ok(Array::traced(op, vec![x.clone()], shape.to_vec(), x.dtype(), x.place().clone()))
}

/// `x` broadcast to `shape` (an error unless `x` broadcasts to exactly that shape).
pub fn broadcast_to(x: &Array, shape: &[usize]) -> Result<Array> {
    let b = broadcast_shapes("broadcast_to", &[x.shape(), shape])?;
    if b != shape {
        return Err(ArrayError::Broadcast { op: "broadcast_to", a: x.shape().to_vec(), b: shape.to_vec() });
    }
    if x.ndim() == 0 && !shape.is_empty() {
        return Ok(broadcast_in_dim(x, shape, &[]));
    }
    Ok(to_shape(x, shape))
}

/// Every array broadcast to their common shape.
pub fn broadcast_arrays(xs: &[&Array]) -> Result<Vec<Array>> {
    let shapes: Vec<&[usize]> = xs.iter().map(|a| a.shape()).collect();
    let shape = broadcast_shapes("broadcast_arrays", &shapes)?;
    xs.iter().map(|x| broadcast_to(x, &shape)).collect()
}

/// The dimensions reordered: result axis `i` is `x`'s axis `axes[i]`.
pub fn permute_dims(x: &Array, axes: &[isize]) -> Result<Array> {
    if axes.len() != x.ndim() {
        return Err(invalid(
            "permute_dims",
            format!("{} axes given for an array of {} dimensions", axes.len(), x.ndim()),
        ));
    }
    let perm = Array::axes("permute_dims", Some(axes), x.ndim())
        .and_then(|_| axes.iter().map(|&a| Array::axis("permute_dims", a, x.ndim())).collect::<Result<Vec<_>>>())?;
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x.clone());
    }
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    Ok(Array::traced(
        Op::Transpose { arg: operand(0), perm: u32s(&perm), kind: PermKind::Gather },
        vec![x.clone()],
        shape,
        x.dtype(),
        x.place().clone(),
    ))
}

/// The last two axes swapped.
pub fn matrix_transpose(x: &Array) -> Result<Array> {
    let r = x.ndim();
    if r < 2 {
        return Err(invalid("matrix_transpose", format!("needs at least 2 dimensions, not shape {:?}", x.shape())));
    }
    let mut axes: Vec<isize> = (0..r as isize).collect();
    axes.swap(r - 2, r - 1);
    permute_dims(x, &axes)
}

/// A new axis of extent 1 at `axis` (in `[-ndim-1, ndim]`).
pub fn expand_dims(x: &Array, axis: isize) -> Result<Array> {
    let axis = Array::axis("expand_dims", axis, x.ndim() + 1)?;
    let mut shape = x.shape().to_vec();
    shape.insert(axis, 1);
    let dims: Vec<usize> = (0..x.ndim()).map(|i| if i < axis { i } else { i + 1 }).collect();
    Ok(broadcast_in_dim(x, &shape, &dims))
}

/// `x` with the given extent-1 axes removed.
pub fn squeeze(x: &Array, axes: &[isize]) -> Result<Array> {
    let axes = Array::axes("squeeze", Some(axes), x.ndim())?;
    for &a in &axes {
        if x.shape()[a] != 1 {
            return Err(invalid("squeeze", format!("axis {a} has extent {}, not 1", x.shape()[a])));
        }
    }
    let shape: Vec<isize> =
        x.shape().iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &n)| n as isize).collect();
    reshape(x, &shape, None)
}

/// The elements in row-major order, in a new shape (one extent may be `-1`). Arrays are
/// values, so `copy = Some(false)` (a view) is always possible and the result never aliases
/// anything observable.
pub fn reshape(x: &Array, shape: &[isize], copy: Option<bool>) -> Result<Array> {
    let _ = copy;
    let size = x.size();
    let known: usize = shape.iter().filter(|&&n| n >= 0).map(|&n| n as usize).product();
    let wild = shape.iter().filter(|&&n| n == -1).count();
    if wild > 1 || shape.iter().any(|&n| n < -1) {
        return Err(invalid("reshape", format!("invalid shape {shape:?}: at most one extent may be -1, none below")));
    }
    let target: Vec<usize> =
        shape.iter().map(|&n| if n == -1 { size.checked_div(known).unwrap_or(0) } else { n as usize }).collect();
    if target.iter().product::<usize>() != size || (wild == 1 && known != 0 && !size.is_multiple_of(known)) {
        return Err(invalid(
            "reshape",
            format!("cannot reshape an array of shape {:?} ({size} elements) into {shape:?}", x.shape()),
        ));
    }
    if target == x.shape() {
        return Ok(x.clone());
    }
    if size == 0 {
        return super::creation::zeros(&target, Some(x.dtype()), x.place());
    }
    let place = x.place().clone();
    let flat = match x.ndim() {
        0 => broadcast_to(x, &[1])?,
        1 => x.clone(),
        r => Array::traced(
            Op::CollapseShape { arg: operand(0), groups: vec![(0..r as u32).collect()], mode: Mode::View },
            vec![x.clone()],
            vec![size],
            x.dtype(),
            place.clone(),
        ),
    };
    Ok(match target.len() {
        0 => affine_view(&flat, &[], &[Coord::default()])?,
        1 => flat,
        m => Array::traced(
            Op::ExpandShape {
                arg: operand(0),
                groups: vec![(0..m as u32).collect()],
                shape: u64s(&target),
                mode: Mode::View,
            },
            vec![flat],
            target,
            x.dtype(),
            place,
        ),
    })
}

/// The elements reversed along `axes` (every axis when `None`).
pub fn flip(x: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let axes = Array::axes("flip", axes, x.ndim())?;
    let coords: Vec<Coord> = (0..x.ndim())
        .map(|d| {
            if axes.contains(&d) {
                Coord { offset: x.shape()[d] as i64 - 1, terms: vec![(d, -1)] }
            } else {
                Coord::dim(d)
            }
        })
        .collect();
    if axes.is_empty() {
        return Ok(x.clone());
    }
    affine_view(x, x.shape(), &coords)
}

/// `x[start : start + len]` along `axis`.
pub(crate) fn slice_axis(x: &Array, axis: usize, start: usize, len: usize) -> Result<Array> {
    let mut shape = x.shape().to_vec();
    shape[axis] = len;
    let coords: Vec<Coord> = (0..x.ndim())
        .map(|d| if d == axis { Coord { offset: start as i64, terms: vec![(d, 1)] } } else { Coord::dim(d) })
        .collect();
    affine_view(x, &shape, &coords)
}

/// Elements shifted by `shift[i]` positions along `axes[i]`, wrapping around; with no axes,
/// along the flattened array.
pub fn roll(x: &Array, shift: &[i64], axes: Option<&[isize]>) -> Result<Array> {
    let Some(axes) = axes else {
        let total: i64 = shift.iter().sum();
        let flat = reshape(x, &[-1], None)?;
        let rolled = roll(&flat, &[total], Some(&[0]))?;
        return reshape(&rolled, &x.shape().iter().map(|&n| n as isize).collect::<Vec<_>>(), None);
    };
    if shift.len() != axes.len() && shift.len() != 1 {
        return Err(invalid("roll", format!("{} shifts for {} axes", shift.len(), axes.len())));
    }
    let mut r = x.clone();
    for (k, &a) in axes.iter().enumerate() {
        let axis = Array::axis("roll", a, x.ndim())?;
        let n = x.shape()[axis] as i64;
        let s = if n == 0 { 0 } else { shift[if shift.len() == 1 { 0 } else { k }].rem_euclid(n) };
        if s == 0 {
            continue;
        }
        let tail = slice_axis(&r, axis, (n - s) as usize, s as usize)?;
        let head = slice_axis(&r, axis, 0, (n - s) as usize)?;
        r = concat(&[&tail, &head], Some(axis as isize))?;
    }
    Ok(r)
}

/// Arrays joined along an existing axis (`None`: flattened first), promoted to a common dtype.
pub fn concat(xs: &[&Array], axis: Option<isize>) -> Result<Array> {
    if xs.is_empty() {
        return Err(invalid("concat", "needs at least one array"));
    }
    let place = Array::same_place("concat", xs)?;
    let dtype = result_type("concat", &xs.iter().map(|a| a.dtype()).collect::<Vec<_>>())?;
    let Some(axis) = axis else {
        let flat: Vec<Array> = xs.iter().map(|a| reshape(a, &[-1], None)).collect::<Result<_>>()?;
        return concat(&flat.iter().collect::<Vec<_>>(), Some(0));
    };
    let r = xs[0].ndim();
    if r == 0 {
        return Err(invalid("concat", "0-d arrays cannot be concatenated"));
    }
    let axis = Array::axis("concat", axis, r)?;
    for a in xs {
        let same = a.ndim() == r && (0..r).all(|d| d == axis || a.shape()[d] == xs[0].shape()[d]);
        if !same {
            return Err(invalid(
                "concat",
                format!("shapes {:?} and {:?} differ off the concatenation axis {axis}", xs[0].shape(), a.shape()),
            ));
        }
    }
    let mut shape = xs[0].shape().to_vec();
    shape[axis] = xs.iter().map(|a| a.shape()[axis]).sum();
    let pieces: Vec<Array> = xs.iter().filter(|a| a.shape()[axis] > 0).map(|a| cast(a, dtype)).collect();
    match pieces.len() {
        0 => return super::creation::zeros(&shape, Some(dtype), &place),
        1 => return Ok(pieces[0].clone()),
        _ => {}
    }
    Ok(Array::traced(
        Op::Concat { args: (0..pieces.len()).map(operand).collect(), dim: DimName::positional(axis), mode: Mode::Copy },
        pieces,
        shape,
        dtype,
        place,
    ))
}

/// Arrays of one shape joined along a new axis.
pub fn stack(xs: &[&Array], axis: isize) -> Result<Array> {
    let Some(first) = xs.first() else { return Err(invalid("stack", "needs at least one array")) };
    for a in xs {
        if a.shape() != first.shape() {
            return Err(invalid("stack", format!("shapes {:?} and {:?} differ", first.shape(), a.shape())));
        }
    }
    let ax = Array::axis("stack", axis, first.ndim() + 1)? as isize;
    let expanded: Vec<Array> = xs.iter().map(|a| expand_dims(a, ax)).collect::<Result<_>>()?;
    concat(&expanded.iter().collect::<Vec<_>>(), Some(ax))
}

/// Axes moved to new positions (the others keep their order), as `numpy.moveaxis`.
pub fn moveaxis(x: &Array, source: &[isize], destination: &[isize]) -> Result<Array> {
    if source.len() != destination.len() {
        return Err(invalid(
            "moveaxis",
            format!("{} source axes but {} destinations", source.len(), destination.len()),
        ));
    }
    let n = x.ndim();
    let src: Vec<usize> = source.iter().map(|&a| Array::axis("moveaxis", a, n)).collect::<Result<_>>()?;
    let dst: Vec<usize> = destination.iter().map(|&a| Array::axis("moveaxis", a, n)).collect::<Result<_>>()?;
    Array::axes("moveaxis", Some(source), n)?;
    Array::axes("moveaxis", Some(destination), n)?;
    let mut order: Vec<usize> = (0..n).filter(|d| !src.contains(d)).collect();
    let mut pairs: Vec<(usize, usize)> = dst.into_iter().zip(src).collect();
    pairs.sort_unstable();
    for (d, s) in pairs {
        order.insert(d, s);
    }
    permute_dims(x, &order.iter().map(|&d| d as isize).collect::<Vec<_>>())
}

/// How often `repeat` repeats each element.
#[derive(Clone, Debug)]
pub enum Repeats<'a> {
    /// Every element the same number of times: a broadcast and a reshape.
    Count(usize),
    /// Element `i` `repeats[i]` times (a 1-d integer array as long as the axis, or of length
    /// 1): the result's length depends on the data, so the counts are evaluated and the
    /// elements gathered with `take`.
    Each(&'a Array),
}

/// Each element repeated along `axis` (of the flattened array when `None`).
pub fn repeat(x: &Array, repeats: Repeats, axis: Option<isize>) -> Result<Array> {
    let (src, axis) = match axis {
        Some(a) => (x.clone(), Array::axis("repeat", a, x.ndim())?),
        None => (reshape(x, &[-1], None)?, 0),
    };
    if src.ndim() == 0 {
        return Err(invalid("repeat", "0-d arrays need axis = None"));
    }
    let repeats = match repeats {
        Repeats::Count(n) => n,
        Repeats::Each(r) => {
            if !r.dtype().is_integer() || r.ndim() > 1 {
                return Err(invalid(
                    "repeat",
                    format!(
                        "repeats must be a 1-d integer array, not {} of shape {:?}",
                        r.dtype().numpy_name(),
                        r.shape()
                    ),
                ));
            }
            let counts = cast(r, strata_ir::Scalar::I64).to_vec::<i64>()?;
            if counts.iter().any(|&c| c < 0) {
                return Err(invalid("repeat", "repeats must not be negative"));
            }
            let n = src.shape()[axis];
            if counts.len() == 1 {
                return repeat(&src, Repeats::Count(counts[0] as usize), Some(axis as isize));
            }
            if counts.len() != n {
                return Err(invalid("repeat", format!("{} repeats for an axis of extent {n}", counts.len())));
            }
            let idx: Vec<i64> =
                counts.iter().enumerate().flat_map(|(i, &c)| std::iter::repeat_n(i as i64, c as usize)).collect();
            let k = idx.len();
            let idx = super::placed(Array::from_vec(&[k], idx)?, src.place());
            return super::indexing::take(&src, &idx, Some(axis as isize));
        }
    };
    let mut wide = src.shape().to_vec();
    wide.insert(axis + 1, repeats);
    let dims: Vec<usize> = (0..src.ndim()).map(|d| if d <= axis { d } else { d + 1 }).collect();
    let spread = broadcast_in_dim(&src, &wide, &dims);
    let mut shape: Vec<isize> = src.shape().iter().map(|&e| e as isize).collect();
    shape[axis] *= repeats as isize;
    if src.size() == 0 || repeats == 0 {
        return super::creation::zeros(
            &shape.iter().map(|&e| e as usize).collect::<Vec<_>>(),
            Some(x.dtype()),
            x.place(),
        );
    }
    reshape(&spread, &shape, None)
}

/// The array repeated `reps[i]` times as a whole along each axis (`numpy.tile`: missing leading
/// repetitions or axes count as 1).
pub fn tile(x: &Array, reps: &[usize]) -> Result<Array> {
    let n = x.ndim().max(reps.len());
    let mut shape = vec![1usize; n - x.ndim()];
    shape.extend_from_slice(x.shape());
    let mut r = vec![1usize; n - reps.len()];
    r.extend_from_slice(reps);
    let grown = reshape(x, &shape.iter().map(|&e| e as isize).collect::<Vec<_>>(), None)?;
    let wide: Vec<usize> = (0..n).flat_map(|d| [r[d], shape[d]]).collect();
    let out: Vec<usize> = (0..n).map(|d| r[d] * shape[d]).collect();
    if out.contains(&0) {
        return super::creation::zeros(&out, Some(x.dtype()), x.place());
    }
    let dims: Vec<usize> = (0..n).map(|d| 2 * d + 1).collect();
    let spread = broadcast_in_dim(&grown, &wide, &dims);
    reshape(&spread, &out.iter().map(|&e| e as isize).collect::<Vec<_>>(), None)
}

/// The slices along `axis`, as separate arrays.
pub fn unstack(x: &Array, axis: isize) -> Result<Vec<Array>> {
    if x.ndim() == 0 {
        return Err(invalid("unstack", "0-d arrays cannot be unstacked"));
    }
    let axis = Array::axis("unstack", axis, x.ndim())?;
    (0..x.shape()[axis])
        .map(|i| {
            let mut idx = vec![super::indexing::Index::Slice(None, None, None); axis];
            idx.push(super::indexing::Index::At(i as i64));
            super::indexing::index(x, &idx)
        })
        .collect()
}
