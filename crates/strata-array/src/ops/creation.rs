//! Creation functions: defined through `constant`, `pos` (index grids), elementwise ops and
//! `broadcast_in_dim`.

use strata_ir::{DimName, Literal, Op, Scalar};

use super::{broadcast_in_dim, cast, constant, elementwise, placed, to_shape, untiled};
use crate::array::{literal, operand, Array, Place};
use crate::dtype::{DType, Weak, DEFAULT_FLOAT, DEFAULT_INT};
use crate::error::{dtype_error, invalid, Result};

fn check_place(op: &'static str, place: &Place, shape: &[usize]) -> Result<()> {
    if let Some(r) = place.team {
        if shape.is_empty() {
            return Err(invalid(op, "a 0-d array cannot be distributed over a team"));
        }
        crate::spmd::check_team(op, r, "`Place::world()`")?;
    }
    Ok(())
}

/// An array of `shape` with every element `value` (`full`).
pub fn full(shape: &[usize], value: Weak, dtype: Option<DType>, place: &Place) -> Result<Array> {
    check_place("full", place, shape)?;
    let dtype = dtype.unwrap_or(value.default_dtype());
    if let Weak::Complex(..) = value {
        if !dtype.is_complex() {
            return Err(dtype_error("full", format!("a complex fill value for dtype {}", dtype.numpy_name())));
        }
        // No literal holds a complex number: a 0-d array of the value, broadcast.
        let z = super::weak_operand(value, dtype, &untiled(place));
        return Ok(placed(super::manipulation::broadcast_to(&z, shape)?, place));
    }
    let lit = match value {
        Weak::Int(i) => crate::array::int_literal(i as i128, dtype),
        _ => literal(value.as_f64(), dtype),
    };
    let c = Array::traced(Op::Constant { value: lit }, vec![], shape.to_vec(), dtype, untiled(place));
    Ok(placed(c, place))
}

/// Zeros (default dtype `f64`).
pub fn zeros(shape: &[usize], dtype: Option<DType>, place: &Place) -> Result<Array> {
    full(shape, Weak::Int(0), Some(dtype.unwrap_or(DEFAULT_FLOAT)), place)
}

/// Ones (default dtype `f64`).
pub fn ones(shape: &[usize], dtype: Option<DType>, place: &Place) -> Result<Array> {
    full(shape, Weak::Int(1), Some(dtype.unwrap_or(DEFAULT_FLOAT)), place)
}

/// An array whose contents are unspecified: Strata fills it with zeros.
pub fn empty(shape: &[usize], dtype: Option<DType>, place: &Place) -> Result<Array> {
    zeros(shape, dtype, place)
}

/// `full` with `x`'s shape, dtype (unless given) and place.
pub fn full_like(x: &Array, value: Weak, dtype: Option<DType>) -> Result<Array> {
    full(x.shape(), value, Some(dtype.unwrap_or(x.dtype())), x.place())
}

/// Zeros shaped like `x`.
pub fn zeros_like(x: &Array) -> Result<Array> {
    full_like(x, Weak::Int(0), None)
}

/// Ones shaped like `x`.
pub fn ones_like(x: &Array) -> Result<Array> {
    full_like(x, Weak::Int(1), None)
}

/// Unspecified contents shaped like `x` (zeros).
pub fn empty_like(x: &Array) -> Result<Array> {
    zeros_like(x)
}

/// `0, 1, …, n-1` as `index` values along one axis, placed at axis `axis` of `shape`.
pub(crate) fn index_grid(n: usize, shape: &[usize], axis: usize, place: &Place) -> Array {
    let local = untiled(place);
    let zeros = Array::traced(Op::Constant { value: Literal::Int(0) }, vec![], vec![n], Scalar::I64, local.clone());
    let pos = Array::traced(
        Op::Pos { arg: operand(0), dim: DimName::positional(0) },
        vec![zeros],
        vec![n],
        Scalar::Index,
        local.clone(),
    );
    if shape.len() == 1 {
        return placed(pos, place);
    }
    placed(broadcast_in_dim(&pos, shape, &[axis]), place)
}

/// `start, start + step, …` up to (excluding) `stop`. The dtype defaults to `i64` when every
/// argument is an integer, else `f64`.
pub fn arange(start: Weak, stop: Option<Weak>, step: Weak, dtype: Option<DType>, place: &Place) -> Result<Array> {
    let (start, stop) = match stop {
        Some(s) => (start, s),
        None => (Weak::Int(0), start),
    };
    if [start, stop, step].iter().any(|w| matches!(w, Weak::Complex(..))) {
        return Err(dtype_error("arange", "start, stop and step must be real numbers"));
    }
    let all_int = [start, stop, step].iter().all(|w| matches!(w, Weak::Int(_) | Weak::Bool(_)));
    let dtype = dtype.unwrap_or(if all_int { DEFAULT_INT } else { DEFAULT_FLOAT });
    let (a, b, s) = (start.as_f64(), stop.as_f64(), step.as_f64());
    if s == 0.0 {
        return Err(invalid("arange", "the step must not be zero"));
    }
    let n = ((b - a) / s).ceil().max(0.0) as usize;
    if n == 0 {
        return full(&[0], Weak::Int(0), Some(dtype), place);
    }
    check_place("arange", place, &[n])?;
    let i = index_grid(n, &[n], 0, place);
    // Integers are computed exactly in 64 bits, floats in the dtype's precision (numpy).
    let (compute, step, start) = if all_int && !dtype.is_float() {
        (Scalar::I64, int_const(step, Scalar::I64, place), int_const(start, Scalar::I64, place))
    } else {
        let c = if dtype == Scalar::F32 { Scalar::F32 } else { Scalar::F64 };
        (c, constant(s, c, place), constant(a, c, place))
    };
    let scaled = elementwise("arange", "multiplies", &[&cast(&i, compute), &step], compute)?;
    Ok(cast(&elementwise("arange", "plus", &[&scaled, &start], compute)?, dtype))
}

fn int_const(w: Weak, d: DType, place: &Place) -> Array {
    super::weak_constant(
        match w {
            Weak::Float(x) => Weak::Int(x as i64),
            other => other,
        },
        d,
        place,
    )
}

/// The `n × m` matrix with ones on diagonal `k` (default `m = n`, dtype `f64`).
pub fn eye(n: usize, m: Option<usize>, k: i64, dtype: Option<DType>, place: &Place) -> Result<Array> {
    let m = m.unwrap_or(n);
    let dtype = dtype.unwrap_or(DEFAULT_FLOAT);
    check_place("eye", place, &[n, m])?;
    if n == 0 || m == 0 {
        return zeros(&[n, m], Some(dtype), place);
    }
    let d = diagonal_offset(n, m, place)?;
    let on = elementwise("eye", "eq", &[&d, &index_const(k, place)], Scalar::Bool)?;
    Ok(cast(&on, dtype))
}

/// `j - i` over an `n × m` grid (`index` values).
fn diagonal_offset(n: usize, m: usize, place: &Place) -> Result<Array> {
    let shape = [n, m];
    let i = index_grid(n, &shape, 0, place);
    let j = index_grid(m, &shape, 1, place);
    elementwise("eye", "minus", &[&j, &i], Scalar::Index)
}

fn index_const(k: i64, place: &Place) -> Array {
    Array::traced(Op::Constant { value: Literal::Int(k) }, vec![], vec![], Scalar::Index, place.clone())
}

/// `num` evenly spaced values from `start` to `stop` (included when `endpoint`).
pub fn linspace(
    start: f64,
    stop: f64,
    num: usize,
    endpoint: bool,
    dtype: Option<DType>,
    place: &Place,
) -> Result<Array> {
    let dtype = dtype.unwrap_or(DEFAULT_FLOAT);
    if num == 0 {
        return zeros(&[0], Some(dtype), place);
    }
    check_place("linspace", place, &[num])?;
    let div = if endpoint { num.saturating_sub(1) } else { num };
    let step = if div > 0 { (stop - start) / div as f64 } else { f64::NAN };
    let f = Scalar::F64;
    let i = cast(&index_grid(num, &[num], 0, place), f);
    let mut v = if div > 0 {
        elementwise(
            "linspace",
            "plus",
            &[&elementwise("linspace", "multiplies", &[&i, &constant(step, f, place)], f)?, &constant(start, f, place)],
            f,
        )?
    } else {
        // numpy: a single point is `start`.
        elementwise(
            "linspace",
            "plus",
            &[&elementwise("linspace", "multiplies", &[&i, &constant(0.0, f, place)], f)?, &constant(start, f, place)],
            f,
        )?
    };
    if endpoint && num > 1 {
        let last = elementwise(
            "linspace",
            "eq",
            &[&index_grid(num, &[num], 0, place), &index_const(num as i64 - 1, place)],
            Scalar::Bool,
        )?;
        v = elementwise("linspace", "select", &[&last, &constant(stop, f, place), &v], f)?;
    }
    Ok(cast(&v, dtype))
}

/// Coordinate grids from 1-d arrays (each keeps its dtype, as numpy): `indexing = "xy"` (Cartesian: the first two axes
/// swapped) or `"ij"` (matrix).
pub fn meshgrid(arrays: &[&Array], indexing: &str) -> Result<Vec<Array>> {
    if indexing != "xy" && indexing != "ij" {
        return Err(invalid("meshgrid", format!("indexing must be \"xy\" or \"ij\", not {indexing:?}")));
    }
    for a in arrays {
        if a.ndim() != 1 {
            return Err(invalid("meshgrid", format!("every input must be 1-d, not of shape {:?}", a.shape())));
        }
    }
    Array::same_place("meshgrid", arrays)?;
    let mut shape: Vec<usize> = arrays.iter().map(|a| a.shape()[0]).collect();
    let swap = indexing == "xy" && arrays.len() >= 2;
    if swap {
        shape.swap(0, 1);
    }
    Ok(arrays
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let axis = if swap && k < 2 { 1 - k } else { k };
            broadcast_in_dim(a, &shape, &[axis])
        })
        .collect())
}

fn triangle(op: &'static str, x: &Array, k: i64, lower: bool) -> Result<Array> {
    if x.ndim() < 2 {
        return Err(invalid(op, format!("needs an array of at least 2 dimensions, not of shape {:?}", x.shape())));
    }
    let r = x.ndim();
    let (n, m) = (x.shape()[r - 2], x.shape()[r - 1]);
    if n == 0 || m == 0 {
        return Ok(x.clone());
    }
    let d = diagonal_offset(n, m, x.place())?;
    let keep = elementwise(
        op,
        if lower { "less_equal" } else { "greater_equal" },
        &[&d, &index_const(k, x.place())],
        Scalar::Bool,
    )?;
    let keep = to_shape(&keep, x.shape());
    let zero = super::weak_constant(Weak::Int(0), x.dtype(), x.place());
    elementwise(op, "select", &[&keep, x, &zero], x.dtype())
}

/// The lower triangle (elements with `j - i <= k`), zeros elsewhere; over the last two axes.
pub fn tril(x: &Array, k: i64) -> Result<Array> {
    triangle("tril", x, k, true)
}

/// The upper triangle (elements with `j - i >= k`), zeros elsewhere.
pub fn triu(x: &Array, k: i64) -> Result<Array> {
    triangle("triu", x, k, false)
}

/// A 0-d array holding a scalar (its default dtype unless given).
pub fn asarray_scalar(v: Weak, dtype: Option<DType>, place: &Place) -> Result<Array> {
    full(&[], v, dtype, place)
}
