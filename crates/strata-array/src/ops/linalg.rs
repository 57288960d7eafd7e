//! Linear algebra: `matmul` and `tensordot` through the core `dot_general` (seed 002, which
//! the native backend turns into a GEMM call where it recognizes one), `vecdot` through an
//! elementwise product and a `sum`.

use strata_ir::Scalar;

use super::manipulation::{broadcast_to, expand_dims, reshape};
use strata_ir::{BuiltinRing, Op, RingRef};

use super::{broadcast_shapes, cast, u32s};
use crate::array::{operand, Array};
use crate::dtype::promote;
use crate::error::{invalid, Result};

fn dot_general(
    op: &'static str,
    a: &Array,
    b: &Array,
    contract: (&[usize], &[usize]),
    batch: usize,
    shape: Vec<usize>,
) -> Result<Array> {
    let place = Array::same_place(op, &[a, b])?;
    let d = promote(op, a.dtype(), b.dtype())?;
    if shape.contains(&0) || contract.0.iter().any(|&k| a.shape()[k] == 0) {
        return super::creation::zeros(&shape, Some(d), &place);
    }
    let ring = RingRef::Builtin(if d == Scalar::Bool { BuiltinRing::OrAnd } else { BuiltinRing::PlusTimes });
    let batch: Vec<u32> = (0..batch as u32).collect();
    Ok(Array::traced(
        Op::DotGeneral {
            lhs: operand(0),
            rhs: operand(1),
            ring,
            lhs_contract: u32s(contract.0),
            rhs_contract: u32s(contract.1),
            lhs_batch: batch.clone(),
            rhs_batch: batch,
        },
        vec![cast(a, d), cast(b, d)],
        shape,
        d,
        place,
    ))
}

/// The matrix product with numpy's rules: 1-d operands become a row / column and lose that
/// axis again; leading (batch) axes broadcast.
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(invalid("matmul", "0-d operands are not allowed (use multiply)"));
    }
    // Two team matrices under mpirun: block by block, nothing gathered.
    if let Some(c) = super::team_matmul::summa(a, b)? {
        return Ok(c);
    }
    // A matrix and a vector (or two vectors): one contraction over the vector's only axis,
    // with no unit axis added and dropped again (which would leave an extent-1 level in the
    // loops: a kept vector with a stride).
    if a.ndim() <= 2 && b.ndim() <= 2 && (a.ndim() == 1 || b.ndim() == 1) {
        let (ka, kb) = (a.ndim() - 1, 0);
        if a.shape()[ka] != b.shape()[kb] {
            return Err(invalid(
                "matmul",
                format!(
                    "contracted extents differ: shapes {:?} and {:?} ({} ≠ {})",
                    a.shape(),
                    b.shape(),
                    a.shape()[ka],
                    b.shape()[kb]
                ),
            ));
        }
        let shape: Vec<usize> = a.shape()[..ka].iter().chain(&b.shape()[1..]).copied().collect();
        return dot_general("matmul", a, b, (&[ka], &[kb]), 0, shape);
    }
    let a2 = if a.ndim() == 1 { expand_dims(a, 0)? } else { a.clone() };
    let b2 = if b.ndim() == 1 { expand_dims(b, -1)? } else { b.clone() };
    let (ra, rb) = (a2.ndim(), b2.ndim());
    let (m, k) = (a2.shape()[ra - 2], a2.shape()[ra - 1]);
    let (k2, n) = (b2.shape()[rb - 2], b2.shape()[rb - 1]);
    if k != k2 {
        return Err(invalid(
            "matmul",
            format!("contracted extents differ: shapes {:?} and {:?} ({k} ≠ {k2})", a.shape(), b.shape()),
        ));
    }
    let batch = broadcast_shapes("matmul", &[&a2.shape()[..ra - 2], &b2.shape()[..rb - 2]])?;
    let nb = batch.len();
    let a3 = broadcast_to(&a2, &[batch.as_slice(), &[m, k]].concat())?;
    let b3 = broadcast_to(&b2, &[batch.as_slice(), &[k, n]].concat())?;
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let r = dot_general("matmul", &a3, &b3, (&[nb + 1], &[nb]), nb, shape.clone())?;
    let mut out: Vec<isize> = batch.iter().map(|&e| e as isize).collect();
    if a.ndim() > 1 {
        out.push(m as isize);
    }
    if b.ndim() > 1 {
        out.push(n as isize);
    }
    if out.len() == shape.len() {
        Ok(r)
    } else {
        reshape(&r, &out, None)
    }
}

/// How `tensordot` pairs axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axes {
    /// The last `n` axes of `a` with the first `n` of `b`.
    Count(usize),
    /// Explicit pairs.
    Pairs(Vec<isize>, Vec<isize>),
}

/// Sums products over paired axes; the result has `a`'s free axes, then `b`'s.
pub fn tensordot(a: &Array, b: &Array, axes: Axes) -> Result<Array> {
    let (xa, xb): (Vec<usize>, Vec<usize>) = match axes {
        Axes::Count(n) => {
            if n > a.ndim() || n > b.ndim() {
                return Err(invalid(
                    "tensordot",
                    format!("cannot contract {n} axes of shapes {:?} and {:?}", a.shape(), b.shape()),
                ));
            }
            ((a.ndim() - n..a.ndim()).collect(), (0..n).collect())
        }
        Axes::Pairs(p, q) => {
            if p.len() != q.len() {
                return Err(invalid("tensordot", format!("{} axes of a paired with {} of b", p.len(), q.len())));
            }
            let p = p.iter().map(|&x| Array::axis("tensordot", x, a.ndim())).collect::<Result<Vec<_>>>()?;
            let q = q.iter().map(|&x| Array::axis("tensordot", x, b.ndim())).collect::<Result<Vec<_>>>()?;
            (p, q)
        }
    };
    for (&i, &j) in xa.iter().zip(&xb) {
        if a.shape()[i] != b.shape()[j] {
            return Err(invalid(
                "tensordot",
                format!("paired axes differ in extent: axis {i} of {:?} and axis {j} of {:?}", a.shape(), b.shape()),
            ));
        }
    }
    let mut shape: Vec<usize> = (0..a.ndim()).filter(|d| !xa.contains(d)).map(|d| a.shape()[d]).collect();
    shape.extend((0..b.ndim()).filter(|d| !xb.contains(d)).map(|d| b.shape()[d]));
    dot_general("tensordot", a, b, (&xa, &xb), 0, shape)
}

/// `sum(conj(a) * b, axis)` over broadcast operands.
pub fn vecdot(a: &Array, b: &Array, axis: isize) -> Result<Array> {
    let shape = broadcast_shapes("vecdot", &[a.shape(), b.shape()])?;
    if shape.is_empty() {
        return Err(invalid("vecdot", "needs operands of at least one dimension"));
    }
    if axis >= 0 && a.ndim() != b.ndim() {
        return Err(invalid(
            "vecdot",
            format!(
                "a non-negative axis is ambiguous for operands of shapes {:?} and {:?}: count from the end (axis < 0)",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let ax = Array::axis("vecdot", axis, shape.len())?;
    let ea = a.shape().len() as isize - shape.len() as isize + ax as isize;
    let eb = b.shape().len() as isize - shape.len() as isize + ax as isize;
    let ext = |x: &Array, e: isize| if e >= 0 { x.shape()[e as usize] } else { 1 };
    if ext(a, ea) != ext(b, eb) {
        return Err(invalid(
            "vecdot",
            format!("axis {axis} has extent {} in {:?} but {} in {:?}", ext(a, ea), a.shape(), ext(b, eb), b.shape()),
        ));
    }
    let p = super::elementwise::multiply(&super::elementwise::conj(a)?, b)?;
    let d = p.dtype();
    super::statistics::sum(&p, Some(&[ax as isize]), Some(d), false)
}
