//! Statistical, searching and utility reductions through the core `map_reduce` (einsum
//! subscripts over the positional dimensions, a payload per reduction), `scan` for
//! `cumulative_sum`, and a tuple accumulator (value, position) for `argmax` / `argmin`.

use strata_ir::{BinaryOp, DimName, Einsum, Init, Literal, Op, Scalar};

use super::elementwise::truthy;
use super::manipulation::reshape;
use super::{cast, elementwise, letter};
use crate::array::{literal, operand, Array, Kind};
use crate::dtype::{sum_dtype, DType};
use crate::error::{dtype_error, invalid, Result};
use crate::trace::{arg_extreme_payload, fold_payload, running_fold_payload};

/// `fold(kw)` of `x` over `axes` from `init`.
fn fold(x: &Array, axes: &[usize], kw: BinaryOp, init: Literal, keepdims: bool) -> Result<Array> {
    let kept: Vec<usize> = (0..x.ndim()).filter(|d| !axes.contains(d)).collect();
    let shape: Vec<usize> = kept.iter().map(|&d| x.shape()[d]).collect();
    let r = if axes.is_empty() {
        x.clone()
    } else if x.size() == 0 {
        let fill = Array::traced(Op::Constant { value: init }, vec![], shape.clone(), x.dtype(), x.place().clone());
        if shape.iter().product::<usize>() == 0 {
            super::creation::zeros(&shape, Some(x.dtype()), x.place())?
        } else {
            fill
        }
    } else {
        let func = fold_payload(x.dtype(), Some(kw));
        let subscripts = Einsum {
            inputs: vec![(0..x.ndim()).map(letter).collect()],
            output: kept.iter().map(|&d| letter(d)).collect(),
        };
        let op = Op::MapReduce { func, args: vec![operand(0)], init: Init::Literal(init), subscripts };
        match x.on_team() {
            // On a team each rank folds its own rows. Over the first axis (the block axis) the
            // ranks' partials are combined by a collective into a value every rank holds,
            // which `collect` makes a host array; nothing is gathered.
            true if axes.contains(&0) => {
                let partial = Array::traced_step(op, vec![x.clone()], x.dtype(), x.place().clone());
                let collect = Op::Collect { arg: operand(0) };
                Array::traced_blockwise(collect, vec![partial], shape, x.dtype(), super::untiled(x.place()))
            }
            // Along other axes, block by block: the result keeps the block axis.
            true => Array::traced_blockwise(op, vec![x.clone()], shape, x.dtype(), x.place().clone()),
            false => Array::traced(op, vec![x.clone()], shape, x.dtype(), x.place().clone()),
        }
    };
    if keepdims {
        keep_dims(&r, x, axes)
    } else {
        Ok(r)
    }
}

/// `r` (a reduction of `x` over `axes`) with the reduced axes back as extent 1.
fn keep_dims(r: &Array, x: &Array, axes: &[usize]) -> Result<Array> {
    let shape: Vec<isize> = (0..x.ndim()).map(|d| if axes.contains(&d) { 1 } else { x.shape()[d] as isize }).collect();
    // A reduction to 0-d of a team array is replicated; with its axes kept it is on the team.
    Ok(super::placed(reshape(r, &shape, None)?, x.place()))
}

/// The sum over `axes` (every axis when `None`); integers accumulate in 64 bits unless
/// `dtype` says otherwise.
pub fn sum(x: &Array, axes: Option<&[isize]>, dtype: Option<DType>, keepdims: bool) -> Result<Array> {
    let axes = Array::axes("sum", axes, x.ndim())?;
    let d = dtype.unwrap_or(sum_dtype(x.dtype()));
    fold(&cast(x, d), &axes, BinaryOp::Plus, literal(0.0, d), keepdims)
}

/// The product over `axes`.
pub fn prod(x: &Array, axes: Option<&[isize]>, dtype: Option<DType>, keepdims: bool) -> Result<Array> {
    let axes = Array::axes("prod", axes, x.ndim())?;
    let d = dtype.unwrap_or(sum_dtype(x.dtype()));
    fold(&cast(x, d), &axes, BinaryOp::Multiplies, literal(1.0, d), keepdims)
}

fn extreme(op: &'static str, x: &Array, axes: Option<&[isize]>, keepdims: bool, largest: bool) -> Result<Array> {
    if x.dtype() == Scalar::U64 && !largest {
        // The minimum's identity, 2^64 - 1, is no IR integer literal (they are 64-bit signed):
        // inverting the bits reverses the order of unsigned values, so min(x) = !max(!x).
        let inverted = super::elementwise::bitwise_invert(x)?;
        return super::elementwise::bitwise_invert(&extreme(op, &inverted, axes, keepdims, true)?);
    }
    let axes = Array::axes(op, axes, x.ndim())?;
    super::need_real(op, x.dtype())?;
    if x.dtype() == Scalar::Bool {
        return Err(dtype_error(op, "defined on numeric dtypes, not on bool"));
    }
    if axes.iter().any(|&a| x.shape()[a] == 0) {
        return Err(invalid(
            op,
            format!("zero-size array (shape {:?}) to a reduction which has no identity", x.shape()),
        ));
    }
    let d = x.dtype();
    let init = worst(d, largest);
    fold(x, &axes, if largest { BinaryOp::Maximum } else { BinaryOp::Minimum }, init, keepdims)
}

/// The value every element beats: −∞ (the type's minimum) when looking for the largest.
fn worst(d: DType, largest: bool) -> Literal {
    if d.is_float() {
        literal(if largest { f64::NEG_INFINITY } else { f64::INFINITY }, d)
    } else {
        let (lo, hi) = int_range(d);
        crate::array::int_literal(if largest { lo } else { hi }, d)
    }
}

fn int_range(d: DType) -> (i128, i128) {
    let bits = 8 * d.size_bytes() as u32;
    if d.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// The largest element over `axes` (NaN if any is).
pub fn max(x: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    extreme("max", x, axes, keepdims, true)
}

/// The smallest element over `axes` (NaN if any is).
pub fn min(x: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    extreme("min", x, axes, keepdims, false)
}

fn count(x: &Array, axes: &[usize]) -> usize {
    axes.iter().map(|&a| x.shape()[a]).product()
}

/// The arithmetic mean over `axes` (integers are averaged as `f64`; an empty mean is NaN).
pub fn mean(x: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let ax = Array::axes("mean", axes, x.ndim())?;
    if x.dtype() == Scalar::Bool {
        return Err(dtype_error("mean", "defined on numeric dtypes, not on bool"));
    }
    let f = if x.dtype().is_inexact() { x.dtype() } else { Scalar::F64 };
    let s = sum(&cast(x, f), axes, Some(f), keepdims)?;
    let n = super::constant(count(x, &ax) as f64, f, x.place());
    elementwise("mean", "divides", &[&s, &n], f)
}

/// The variance over `axes` with `correction` degrees of freedom removed (two passes:
/// the mean, then the mean squared deviation).
pub fn var(x: &Array, axes: Option<&[isize]>, correction: f64, keepdims: bool) -> Result<Array> {
    let ax = Array::axes("var", axes, x.ndim())?;
    if x.dtype() == Scalar::Bool {
        return Err(dtype_error("var", "defined on numeric dtypes, not on bool"));
    }
    super::need_real("var", x.dtype())?;
    let f = if x.dtype().is_float() { x.dtype() } else { Scalar::F64 };
    let xf = cast(x, f);
    // The mean in `x`'s shape: its kept axes where they are, the reduced ones stretched. Of a
    // team array, a mean over the block axis is replicated, so each rank takes its rows of the
    // stretched mean and nothing is gathered; over other axes (a team array) it is gathered to
    // be stretched (a reduced result, not the input).
    let m = mean(&xf, axes, false)?;
    let kept: Vec<usize> = (0..x.ndim()).filter(|d| !ax.contains(d)).collect();
    let m = super::placed(super::broadcast_in_dim(&m, x.shape(), &kept), x.place());
    let dev = elementwise("var", "minus", &[&xf, &m], f)?;
    let sq = elementwise("var", "multiplies", &[&dev, &dev], f)?;
    let ss = sum(&sq, axes, Some(f), keepdims)?;
    let dof = (count(x, &ax) as f64 - correction).max(0.0);
    elementwise("var", "divides", &[&ss, &super::constant(dof, f, x.place())], f)
}

/// The standard deviation: `sqrt(var)`.
pub fn std(x: &Array, axes: Option<&[isize]>, correction: f64, keepdims: bool) -> Result<Array> {
    let v = var(x, axes, correction, keepdims)?;
    let d = v.dtype();
    elementwise("std", "sqrt", &[&v], d)
}

/// Whether any element over `axes` is true (nonzero).
pub fn any(x: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let axes = Array::axes("any", axes, x.ndim())?;
    fold(&truthy(x), &axes, BinaryOp::Or, Literal::Bool(false), keepdims)
}

/// Whether every element over `axes` is true (nonzero).
pub fn all(x: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let axes = Array::axes("all", axes, x.ndim())?;
    fold(&truthy(x), &axes, BinaryOp::And, Literal::Bool(true), keepdims)
}

/// Running sums along `axis` (required unless `x` is 1-d); `include_initial` prepends a zero.
pub fn cumulative_sum(x: &Array, axis: Option<isize>, dtype: Option<DType>, include_initial: bool) -> Result<Array> {
    running("cumulative_sum", BinaryOp::Plus, x, axis, dtype, include_initial)
}

/// Running products along `axis` (required unless `x` is 1-d); `include_initial` prepends a
/// one.
pub fn cumulative_prod(x: &Array, axis: Option<isize>, dtype: Option<DType>, include_initial: bool) -> Result<Array> {
    running("cumulative_prod", BinaryOp::Multiplies, x, axis, dtype, include_initial)
}

/// The running fold `op` (`plus` or `multiplies`) along `axis`, a forward `scan` from the op's
/// identity, in `sum`'s dtype unless `dtype` is given.
fn running(
    name: &'static str,
    op: BinaryOp,
    x: &Array,
    axis: Option<isize>,
    dtype: Option<DType>,
    include_initial: bool,
) -> Result<Array> {
    let axis = match axis {
        Some(a) => Array::axis(name, a, x.ndim())?,
        None if x.ndim() == 1 => 0,
        None => return Err(invalid(name, "axis is required for arrays of more than one dimension")),
    };
    let d = dtype.unwrap_or(sum_dtype(x.dtype()));
    let identity = if op == BinaryOp::Multiplies { 1.0 } else { 0.0 };
    let xd = cast(x, d);
    let scanned = if x.size() == 0 {
        xd.clone()
    } else {
        // The scan's payload works on slices without the scanned dimension; with the axis
        // last, the slices keep their positional names `_0 … _{r-2}`.
        let r = x.ndim();
        let to_last: Vec<isize> = (0..r).filter(|&d| d != axis).chain([axis]).map(|d| d as isize).collect();
        let moved = super::manipulation::permute_dims(&xd, &to_last)?;
        let slice: Vec<usize> = moved.shape()[..r - 1].to_vec();
        let func = running_fold_payload(op, &slice, d, &super::untiled(x.place()));
        let s = Array::traced(
            Op::Scan {
                func,
                args: vec![operand(0)],
                dim: DimName::positional(r - 1),
                forward: true,
                init: Init::Literal(literal(identity, d)),
            },
            vec![moved.clone()],
            moved.shape().to_vec(),
            d,
            x.place().clone(),
        );
        let back: Vec<isize> = (0..r).map(|k| if k < axis { k } else if k == axis { r - 1 } else { k - 1 } as isize).collect();
        super::manipulation::permute_dims(&s, &back)?
    };
    if !include_initial {
        return Ok(scanned);
    }
    let mut ishape = x.shape().to_vec();
    ishape[axis] = 1;
    let first = if op == BinaryOp::Multiplies {
        super::creation::ones(&ishape, Some(d), x.place())?
    } else {
        super::creation::zeros(&ishape, Some(d), x.place())?
    };
    super::manipulation::concat(&[&first, &scanned], Some(axis as isize))
}

fn arg_extreme(op: &'static str, x: &Array, axis: Option<isize>, keepdims: bool, largest: bool) -> Result<Array> {
    super::need_real(op, x.dtype())?;
    if x.dtype() == Scalar::Bool {
        return arg_extreme(op, &cast(x, Scalar::U8), axis, keepdims, largest);
    }
    if x.dtype() == Scalar::U64 && !largest {
        // As for `min`: the first smallest of x is the first largest of !x (2^64 - 1, the
        // identity here, is no IR literal).
        return arg_extreme(op, &super::elementwise::bitwise_invert(x)?, axis, keepdims, true);
    }
    let (src, ax) = match axis {
        Some(a) => (x.clone(), Array::axis(op, a, x.ndim().max(1))?),
        None => (reshape(x, &[-1], None)?, 0),
    };
    if src.ndim() == 0 {
        let z = super::creation::zeros(&[], Some(Scalar::I64), x.place())?;
        return Ok(z);
    }
    if src.shape()[ax] == 0 {
        return Err(invalid(op, format!("attempt to get {op} of an empty sequence (shape {:?})", x.shape())));
    }
    let d = src.dtype();
    let func = arg_extreme_payload(d, largest);
    let n = src.shape()[ax];
    let j = super::creation::index_grid(n, &[n], 0, src.place());
    let inputs = vec![(0..src.ndim()).map(letter).collect(), vec![letter(ax)]];
    let subscripts = Einsum { inputs, output: (0..src.ndim()).filter(|&k| k != ax).map(letter).collect() };
    let shape: Vec<usize> = (0..src.ndim()).filter(|&k| k != ax).map(|k| src.shape()[k]).collect();
    let init = Init::Literal(Literal::Tuple(vec![worst(d, largest), Literal::Int(0)]));
    let fold = Array::special_traced(
        Op::MapReduce { func, args: vec![operand(0), operand(1)], init, subscripts },
        vec![src.clone(), j],
        shape.clone(),
        d,
        Kind::Operand,
        src.place().clone(),
    );
    let folded = Array::traced(
        Op::TupleGet { tuple: operand(0), index: 1 },
        vec![fold],
        shape,
        Scalar::Index,
        src.place().clone(),
    );
    let r = cast(&folded, Scalar::I64);
    if !keepdims {
        return Ok(r);
    }
    let kshape: Vec<isize> = match axis {
        Some(_) => (0..x.ndim()).map(|k| if k == ax { 1 } else { x.shape()[k] as isize }).collect(),
        None => vec![1; x.ndim()],
    };
    Ok(super::placed(reshape(&r, &kshape, None)?, x.place()))
}

/// The position of the largest element along `axis` (of the flattened array when `None`);
/// the first one on ties, the first NaN if any.
pub fn argmax(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_extreme("argmax", x, axis, keepdims, true)
}

/// The position of the smallest element along `axis`.
pub fn argmin(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_extreme("argmin", x, axis, keepdims, false)
}
