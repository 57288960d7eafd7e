//! The array-API operations, by the standard's sections. Each is defined through the core IR
//! (one or more traced Strata ops) or, where the result's shape depends on the data or the
//! algorithm is not a loop nest (sort, unique, nonzero, boolean masks, the factorizations of
//! [`decompositions`], the transforms of [`fft`]), as a named runtime kernel that evaluates
//! its operand first.

pub mod creation;
pub mod decompositions;
pub mod elementwise;
pub mod fft;
pub mod indexing;
pub mod kernels;
pub mod linalg;
pub mod manipulation;
pub mod placement;
pub mod statistics;
mod team_matmul;

pub use creation::*;
pub use decompositions::*;
pub use elementwise::*;
pub use indexing::*;
pub use kernels::*;
pub use linalg::*;
pub use manipulation::*;
pub use placement::*;
pub use statistics::*;

use strata_ir::{BinaryOp, DimName, Literal, Op, UnaryOp};

use crate::array::{literal, operand, Array, Kind, Place};
use crate::dtype::{DType, Weak};
use crate::error::{ArrayError, Result};

/// The broadcast shape of `shapes` (array-API rules: right-aligned, extent 1 stretches).
pub fn broadcast_shapes(op: &'static str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    let mut first: Vec<usize> = Vec::new();
    for (k, s) in shapes.iter().enumerate() {
        for (i, &n) in s.iter().enumerate() {
            let o = &mut out[rank - s.len() + i];
            if *o == 1 {
                *o = n;
            } else if n != 1 && n != *o {
                return Err(ArrayError::Broadcast {
                    op,
                    a: if k == 0 { s.to_vec() } else { first.clone() },
                    b: s.to_vec(),
                });
            }
        }
        if k == 0 {
            first = s.to_vec();
        } else {
            first = out.clone();
        }
    }
    Ok(out)
}

/// `x` placed in `shape` (which it broadcasts to): `broadcast_in_dim`, aligned from the right.
pub(crate) fn to_shape(x: &Array, shape: &[usize]) -> Array {
    if x.shape() == shape || x.ndim() == 0 {
        return x.clone();
    }
    let off = shape.len() - x.ndim();
    broadcast_in_dim(x, shape, &(off..shape.len()).collect::<Vec<_>>())
}

/// `broadcast_in_dim(x, shape, dims)`: `x`'s axis `i` becomes axis `dims[i]` of `shape`, the
/// others are new (or stretched from extent 1).
pub(crate) fn broadcast_in_dim(x: &Array, shape: &[usize], dims: &[usize]) -> Array {
    Array::traced(
        Op::BroadcastInDim { arg: operand(0), shape: u64s(shape), dims: u32s(dims) },
        vec![x.clone()],
        shape.to_vec(),
        x.dtype(),
        x.place().clone(),
    )
}

/// `x` converted to `dtype` (`x` itself if it has it).
pub(crate) fn cast(x: &Array, dtype: DType) -> Array {
    if x.dtype() == dtype {
        return x.clone();
    }
    if x.is_bare_scalar() {
        return Array::special_traced(
            Op::Cast { arg: operand(0), to: dtype },
            vec![x.clone()],
            vec![],
            dtype,
            Kind::Scalar,
            x.place().clone(),
        );
    }
    Array::traced_blockwise(
        Op::Cast { arg: operand(0), to: dtype },
        vec![x.clone()],
        x.shape().to_vec(),
        dtype,
        x.place().clone(),
    )
}

/// A 0-d constant of `dtype` living at `place`.
pub(crate) fn constant(v: f64, dtype: DType, place: &Place) -> Array {
    constant_literal(literal(v, dtype), dtype, place)
}

/// A scalar constant: an operand of elementwise ops only. Its IR type is the bare scalar,
/// which broadcasts to any operand wherever that lives.
pub(crate) fn constant_literal(value: Literal, dtype: DType, place: &Place) -> Array {
    Array::special_traced(Op::Constant { value }, vec![], vec![], dtype, Kind::Scalar, place.clone())
}

/// `x` (computed without a team) distributed over `place`'s team along its first axis;
/// `x` itself when `place` has no team.
pub(crate) fn placed(x: Array, place: &Place) -> Array {
    match place.team {
        Some(r) if x.place() != place && x.ndim() > 0 => Array::traced_blockwise(
            Op::Distribute { arg: operand(0), ranks: r, dim: DimName::positional(0) },
            vec![x.clone()],
            x.shape().to_vec(),
            x.dtype(),
            place.clone(),
        ),
        _ => x,
    }
}

/// `x` gathered from its team into one array (`x` itself when it has no team).
pub(crate) fn collected(x: &Array) -> Array {
    if !x.on_team() {
        return x.clone();
    }
    let place = untiled(x.place());
    Array::traced_blockwise(Op::Collect { arg: operand(0) }, vec![x.clone()], x.shape().to_vec(), x.dtype(), place)
}

/// An error unless `d` is real-valued: the standard orders, clips and bounds real numbers only.
pub(crate) fn need_real(op: &'static str, d: DType) -> Result<()> {
    if d.is_complex() {
        return Err(crate::error::dtype_error(op, format!("defined on real-valued dtypes, not on {}", d.numpy_name())));
    }
    Ok(())
}

/// `place` without its team: where creation functions compute before distributing.
pub(crate) fn untiled(place: &Place) -> Place {
    Place { device: place.device.clone(), team: None }
}

/// A Python scalar the caller gives an operation (`x * dt`), of type `dtype`: a float is a
/// 0-d array holding it, so the traced program reads it as a parameter and a loop that changes
/// it each step (a time step, a relaxation factor) runs one compiled program; integers and
/// booleans (exponents, offsets, masks: structure rather than data) stay literals the C
/// compiler can fold. With team operands the 0-d array is on the host, replicated: every rank
/// holds it, and a time loop over team arrays too runs one program whatever `dt` is.
pub(crate) fn weak_operand(w: Weak, dtype: DType, place: &Place) -> Array {
    match w {
        Weak::Float(_) | Weak::Complex(..) if dtype.is_inexact() => {
            let col = strata_runtime::Column::from_fn(dtype, 1, |_| w.value(dtype));
            Array::from_column(&[], col, untiled(place)).expect("one element for shape []")
        }
        _ => weak_constant(w, dtype, place),
    }
}

/// A weak scalar as a literal of `dtype` (a bare scalar operand of elementwise ops).
pub(crate) fn weak_constant(w: Weak, dtype: DType, place: &Place) -> Array {
    match w {
        Weak::Int(i) => constant_literal(crate::array::int_literal(i as i128, dtype), dtype, place),
        Weak::Complex(..) if dtype.is_complex() => weak_operand(w, dtype, place),
        _ => constant(w.as_f64(), dtype, place),
    }
}

/// The elementwise builtin `name` (`plus`, `neg`, `select`, …: the IR's keyword) on operands
/// `0, 1, …`.
fn builtin(name: &str, arity: usize) -> Op {
    if let (Some(op), 1) = (UnaryOp::from_keyword(name), arity) {
        return Op::Unary { op, arg: operand(0) };
    }
    if let (Some(op), 2) = (BinaryOp::from_keyword(name), arity) {
        return Op::Binary { op, lhs: operand(0), rhs: operand(1) };
    }
    match (name, arity) {
        ("select", 3) => Op::Select { cond: operand(0), on_true: operand(1), on_false: operand(2) },
        _ => unreachable!("no elementwise builtin `{name}` of {arity} operands"),
    }
}

/// An elementwise op over operands already of one dtype, broadcast to a common shape.
pub(crate) fn elementwise(op: &'static str, call: &str, args: &[&Array], dtype: DType) -> Result<Array> {
    let place = Array::same_place(op, args)?;
    let shapes: Vec<&[usize]> = args.iter().map(|a| a.shape()).collect();
    let shape = broadcast_shapes(op, &shapes)?;
    // A replicated 0-d operand of team operands is broadcast and distributed like them.
    let operands: Vec<Array> = args
        .iter()
        .map(|a| match a.is_bare_scalar() || *a.place() == place {
            true => to_shape(a, &shape),
            false => placed(broadcast_in_dim(a, &shape, &[]), &place),
        })
        .collect();
    let ir = builtin(call, args.len());
    if args.iter().all(|a| a.is_bare_scalar()) {
        return Ok(Array::special_traced(ir, operands, shape, dtype, Kind::Scalar, place));
    }
    Ok(Array::traced_blockwise(ir, operands, shape, dtype, place))
}

/// Extents as the IR's shape attribute.
pub(crate) fn u64s(xs: &[usize]) -> Vec<u64> {
    xs.iter().map(|&x| x as u64).collect()
}

/// Axes as the IR's dimension-number attribute.
pub(crate) fn u32s(xs: &[usize]) -> Vec<u32> {
    xs.iter().map(|&x| x as u32).collect()
}

/// The einsum letter of dimension `i`.
pub(crate) fn letter(i: usize) -> char {
    (b'a' + i as u8) as char
}
