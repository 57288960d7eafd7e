//! Runtime kernels: operations that are not loop nests over a known iteration space. Each
//! evaluates its operands (compiled like any other array), then runs a named kernel on the
//! values; the result is data that later operations read as a program input.
//!
//! - `sort` / `argsort`: a (stable) comparison sort per lane; NaNs sort last in both
//!   directions (the standard leaves NaN placement to the implementation; numpy puts them last
//!   in ascending order), `-0.0` and `0.0` are equal.
//! - `unique_*`: values in ascending order, NaNs last and each NaN distinct (the standard's
//!   rule, numpy 2's `equal_nan=False`), `indices` of first occurrences, `inverse_indices` in
//!   the input's shape, `counts`.
//! - `nonzero`, boolean-mask indexing: the result's length is the number of true elements.
//!
//! Under [`crate::spmd`] a kernel reads its team operands whole (gathered on every rank),
//! runs replicated, and a team result keeps each rank's block.

use std::cmp::Ordering;

use strata_runtime::{Column, Data, Tensor};

use crate::array::Array;
use crate::error::{invalid, Result};

/// A sort key per element: floats with NaNs last, integers exactly.
enum Keys {
    Float(Vec<f64>),
    Int(Vec<i128>),
    /// Real part, then imaginary part (numpy's order of complex numbers; a NaN in either part
    /// sorts last).
    Complex(Vec<(f64, f64)>),
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).expect("no NaN"),
    }
}

impl Keys {
    fn of(c: &Column) -> Keys {
        if c.scalar().is_complex() {
            Keys::Complex(
                (0..c.len())
                    .map(|i| {
                        let z = c.get(i).as_c128();
                        if z.re.is_nan() || z.im.is_nan() {
                            (f64::NAN, f64::NAN)
                        } else {
                            (z.re, z.im)
                        }
                    })
                    .collect(),
            )
        } else if c.scalar().is_float() {
            Keys::Float((0..c.len()).map(|i| c.get(i).as_f64()).collect())
        } else {
            Keys::Int((0..c.len()).map(|i| c.get(i).as_i128()).collect())
        }
    }

    /// Ascending order; NaN after everything and equal to nothing but (for sorting) NaN.
    fn cmp(&self, i: usize, j: usize) -> Ordering {
        self.cmp_with(i, self, j)
    }

    /// [`Keys::cmp`] between element `i` of these keys and element `j` of `other` (of the
    /// same kind).
    fn cmp_with(&self, i: usize, other: &Keys, j: usize) -> Ordering {
        match (self, other) {
            (Keys::Int(k), Keys::Int(l)) => k[i].cmp(&l[j]),
            (Keys::Float(k), Keys::Float(l)) => float_cmp(k[i], l[j]),
            (Keys::Complex(k), Keys::Complex(l)) => float_cmp(k[i].0, l[j].0).then_with(|| float_cmp(k[i].1, l[j].1)),
            _ => unreachable!("keys of one dtype"),
        }
    }

    fn is_nan(&self, i: usize) -> bool {
        match self {
            Keys::Float(k) => k[i].is_nan(),
            Keys::Complex(k) => k[i].0.is_nan(),
            Keys::Int(_) => false,
        }
    }
}

fn column(t: &Tensor) -> &Column {
    match &t.data {
        Data::Scalars(c) => c,
        _ => unreachable!("arrays hold scalars"),
    }
}

/// The permutation sorting each lane of `x` along `axis` (flat positions per lane).
fn lane_orders(
    x: &Array,
    axis: isize,
    descending: bool,
    op: &'static str,
) -> Result<(std::rc::Rc<Tensor>, Vec<Vec<usize>>, usize)> {
    if x.ndim() == 0 {
        return Err(invalid(op, "0-d arrays cannot be sorted"));
    }
    super::need_real(op, x.dtype())?;
    let axis = Array::axis(op, axis, x.ndim())?;
    let t = x.eval_whole()?;
    let keys = Keys::of(column(&t));
    let shape = x.shape();
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut lanes = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let base = o * n * inner + i;
            let mut lane: Vec<usize> = (0..n).map(|k| base + k * inner).collect();
            // A stable sort; descending keeps equal elements in their order and NaNs last.
            lane.sort_by(|&a, &b| {
                let c = keys.cmp(a, b);
                if descending && !keys.is_nan(a) && !keys.is_nan(b) {
                    c.reverse()
                } else {
                    c
                }
            });
            lanes.push(lane);
        }
    }
    Ok((t, lanes, axis))
}

/// Scatters per-lane results back into row-major order.
fn place_lanes(shape: &[usize], axis: usize, lanes: &[Vec<usize>], mut put: impl FnMut(usize, usize, usize)) {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    for (l, lane) in lanes.iter().enumerate() {
        let (o, i) = (l / inner.max(1), l % inner.max(1));
        for (k, &src) in lane.iter().enumerate() {
            put(o * n * inner + i + k * inner, src, k);
        }
    }
}

/// The values sorted along `axis` (stable; `stable = false` is allowed and sorts stably too).
pub fn sort(x: &Array, axis: isize, descending: bool, stable: bool) -> Result<Array> {
    let _ = stable;
    let (t, lanes, axis) = lane_orders(x, axis, descending, "sort")?;
    let mut positions = vec![0usize; x.size()];
    place_lanes(x.shape(), axis, &lanes, |dst, src, _| positions[dst] = src);
    Array::from_column(x.shape(), column(&t).select(&positions), x.place().clone())
}

/// The positions (along `axis`) that sort the values, as `int64`.
pub fn argsort(x: &Array, axis: isize, descending: bool, stable: bool) -> Result<Array> {
    let _ = stable;
    let (_, lanes, ax) = lane_orders(x, axis, descending, "argsort")?;
    let inner: usize = x.shape()[ax + 1..].iter().product();
    let n = x.shape()[ax];
    let mut out = vec![0i64; x.size()];
    place_lanes(x.shape(), ax, &lanes, |dst, src, _| out[dst] = ((src / inner.max(1)) % n.max(1)) as i64);
    Array::from_column(x.shape(), Column::I64(out), x.place().clone())
}

/// The four results of [`unique_all`].
#[derive(Clone, Debug)]
pub struct Unique {
    /// The distinct values, ascending (NaNs last, each distinct).
    pub values: Array,
    /// The flat position of each value's first occurrence.
    pub indices: Array,
    /// For each input element, the position of its value in `values` (the input's shape).
    pub inverse_indices: Array,
    /// How often each value occurs.
    pub counts: Array,
}

/// Distinct values with first indices, inverse indices and counts.
pub fn unique_all(x: &Array) -> Result<Unique> {
    let t = x.eval_whole()?;
    let col = column(&t);
    let keys = Keys::of(col);
    let mut order: Vec<usize> = (0..col.len()).collect();
    order.sort_by(|&a, &b| keys.cmp(a, b));
    let mut firsts: Vec<usize> = Vec::new();
    let mut counts: Vec<i64> = Vec::new();
    let mut inverse = vec![0i64; col.len()];
    for (k, &p) in order.iter().enumerate() {
        let same = k > 0 && !keys.is_nan(p) && keys.cmp(order[k - 1], p) == Ordering::Equal;
        if !same {
            firsts.push(p);
            counts.push(0);
        }
        *counts.last_mut().expect("a group") += 1;
        inverse[p] = firsts.len() as i64 - 1;
    }
    let place = x.place().clone();
    let m = firsts.len();
    Ok(Unique {
        values: Array::from_column(&[m], col.select(&firsts), place.clone())?,
        indices: Array::from_column(&[m], Column::I64(firsts.iter().map(|&p| p as i64).collect()), place.clone())?,
        inverse_indices: Array::from_column(x.shape(), Column::I64(inverse), place.clone())?,
        counts: Array::from_column(&[m], Column::I64(counts), place)?,
    })
}

/// `(values, counts)`.
pub fn unique_counts(x: &Array) -> Result<(Array, Array)> {
    let u = unique_all(x)?;
    Ok((u.values, u.counts))
}

/// `(values, inverse_indices)`.
pub fn unique_inverse(x: &Array) -> Result<(Array, Array)> {
    let u = unique_all(x)?;
    Ok((u.values, u.inverse_indices))
}

/// The distinct values.
pub fn unique_values(x: &Array) -> Result<Array> {
    Ok(unique_all(x)?.values)
}

/// The coordinates of the nonzero elements, one `int64` array per axis, in row-major order.
pub fn nonzero(x: &Array) -> Result<Vec<Array>> {
    if x.ndim() == 0 {
        return Err(invalid("nonzero", "0-d arrays are not allowed (use `expand_dims` first)"));
    }
    let t = x.eval_whole()?;
    let col = column(&t);
    // NaN is not zero; a complex number is zero only if both parts are.
    let hits: Vec<usize> = (0..col.len()).filter(|&i| !col.get(i).is_zero()).collect();
    let strides = strata_runtime::strides(x.shape());
    (0..x.ndim())
        .map(|d| {
            let coords = hits.iter().map(|&p| ((p / strides[d]) % x.shape()[d]) as i64).collect();
            Array::from_column(&[hits.len()], Column::I64(coords), x.place().clone())
        })
        .collect()
}

/// `x[mask]`: the elements (or sub-arrays) where the boolean `mask`, which covers `x`'s
/// leading axes, is true, in row-major order.
pub fn mask(x: &Array, mask: &Array) -> Result<Array> {
    if mask.dtype() != strata_ir::Scalar::Bool {
        return Err(crate::error::dtype_error(
            "mask",
            format!("the mask must be boolean, not {}", mask.dtype().numpy_name()),
        ));
    }
    let k = mask.ndim();
    if k > x.ndim() || mask.shape() != &x.shape()[..k] {
        return Err(invalid(
            "mask",
            format!("a mask of shape {:?} does not match the leading axes of shape {:?}", mask.shape(), x.shape()),
        ));
    }
    Array::same_place("mask", &[x, mask])?;
    let (tx, tm) = (x.eval_whole()?, mask.eval_whole()?);
    let m = column(&tm);
    let block: usize = x.shape()[k..].iter().product();
    let Column::Bool(m) = m else { unreachable!("a boolean array holds a bool column") };
    let starts: Vec<usize> = m.iter().enumerate().filter(|(_, &b)| b).map(|(i, _)| i * block).collect();
    let mut shape = vec![starts.len()];
    shape.extend_from_slice(&x.shape()[k..]);
    Array::from_column(&shape, column(&tx).select_runs(&starts, block), x.place().clone())
}

/// For each element of `x2`, the position in the sorted 1-d `x1` before which it would be
/// inserted to keep `x1` sorted: the first such position (`right = false`) or the last.
/// NaNs sort last, as in [`sort`].
pub fn searchsorted(x1: &Array, x2: &Array, right: bool) -> Result<Array> {
    if x1.ndim() != 1 {
        return Err(invalid("searchsorted", format!("x1 must be 1-d, not of shape {:?}", x1.shape())));
    }
    Array::same_place("searchsorted", &[x1, x2])?;
    let d = crate::dtype::promote("searchsorted", x1.dtype(), x2.dtype())?;
    super::need_real("searchsorted", d)?;
    let (a, b) = (super::cast(x1, d).eval_whole()?, super::cast(x2, d).eval_whole()?);
    let (ka, kb) = (Keys::of(column(&a)), Keys::of(column(&b)));
    let n = x1.size();
    let out: Vec<i64> = (0..x2.size())
        .map(|j| {
            // Binary search on x1 (sorted by `Keys::cmp`).
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = (lo + hi) / 2;
                let before = match ka.cmp_with(mid, &kb, j) {
                    Ordering::Less => true,
                    Ordering::Equal => right,
                    Ordering::Greater => false,
                };
                if before {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo as i64
        })
        .collect();
    Array::from_column(x2.shape(), Column::I64(out), x2.place().clone())
}
