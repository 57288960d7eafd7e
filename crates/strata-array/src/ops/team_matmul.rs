//! `matmul` of two team operands under [`crate::spmd`]: a one-dimensional SUMMA, so that no
//! rank holds more than its blocks.
//!
//! Operands are partitioned by their first axis over the `P` ranks.
//!
//! - **Matrix · matrix** (`A` `M×K`, `B` `K×N`) and **matrix · vector** (`B` of shape `(K,)`,
//!   a `K×1` matrix): rank `i` holds `Aᵢ` (its rows of `A`) and `Bᵢ` (rows `Kᵢ` of `B`). Its
//!   rows of `C = A·B` are `Cᵢ = Σⱼ Aᵢ[:, Kⱼ] · Bⱼ`: in round `j` rank `j` broadcasts `Bⱼ` and
//!   every rank adds `Aᵢ[:, Kⱼ] · Bⱼ` into `Cᵢ` (faer's matrix product, accumulating). A rank
//!   holds `Aᵢ`, `Bᵢ`, one received block of `B` and `Cᵢ` — about `(MK + 2KN + MN)/P`
//!   elements — where computing on whole operands gathered `A` and `B` on every rank. `Cᵢ` is
//!   this rank's block of the result, a team array like the operands.
//! - **Vector · matrix** (`a` of shape `(K,)`, `B` `K×N`): both are partitioned along `K`, so
//!   rank `i` computes the partial product `aᵢ · Bᵢ` (`N` values), the ranks sum the partials
//!   (one all-reduce of `N` values) and each keeps its block of the `N` results.
//!
//! The rounds run in the order `j = 0, 1, …`, so every rank count gives the result of one sum
//! over `K` in blocks; it agrees with one process to rounding (as matrix products of BLAS
//! libraries do). Floating-point and complex dtypes (`float32`, `float64`, `complex64`,
//! `complex128`; mixed operands promoted first); integer and boolean matrices, stacks of
//! matrices and vector · vector compute on whole operands.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use num_complex::{Complex32, Complex64};
use strata_dist::comm::{Comm, ReduceOp, ReduceType};
use strata_ir::{Interval, Scalar};
use strata_runtime::{Column, Data, Tensor};

use crate::array::{value_type, Array};
use crate::error::{ArrayError, Result};

/// An element type the rounds compute in: faer multiplies it, MPI moves it as bytes and sums
/// it as its real parts.
trait Element: faer::traits::ComplexField + Copy + bytemuck::Pod + 'static {
    /// The real type the all-reduce sums (a complex number as its two parts).
    const PARTS: ReduceType;
    /// The values of a column of this dtype.
    fn of(c: &Column) -> Option<&[Self]>;
    /// A column of these values.
    fn column(v: Vec<Self>) -> Column;
    /// One.
    fn one() -> Self;
}

/// `Element` for a dtype: its column variant, the reduce type of its parts and its one.
macro_rules! element {
    ($t:ty, $variant:ident, $parts:ident, $one:expr) => {
        impl Element for $t {
            const PARTS: ReduceType = ReduceType::$parts;
            fn of(c: &Column) -> Option<&[$t]> {
                if let Column::$variant(v) = c {
                    Some(v)
                } else {
                    None
                }
            }
            fn column(v: Vec<$t>) -> Column {
                Column::$variant(v)
            }
            fn one() -> $t {
                $one
            }
        }
    };
}

element!(f32, F32, F32, 1.0);
element!(f64, F64, F64, 1.0);
element!(Complex32, C64, F32, Complex32::new(1.0, 0.0));
element!(Complex64, C128, F64, Complex64::new(1.0, 0.0));

/// `a @ b` by the rounds of the module docs when both are team operands of the shapes and
/// dtypes they cover under [`crate::spmd`] (`None` otherwise: the caller computes on whole
/// operands).
///
/// # Errors
/// Evaluating an operand, or an MPI failure during the rounds.
pub(crate) fn summa(a: &Array, b: &Array) -> Result<Option<Array>> {
    let Some(comm) = crate::spmd::comm() else { return Ok(None) };
    let shapes = matches!((a.ndim(), b.ndim()), (2, 2) | (2, 1) | (1, 2));
    if !(shapes && a.on_team() && b.on_team() && a.place() == b.place() && a.shape()[a.ndim() - 1] == b.shape()[0]) {
        return Ok(None);
    }
    let Ok(d) = crate::dtype::promote("matmul", a.dtype(), b.dtype()) else { return Ok(None) };
    let (a, b) = (super::cast(a, d), super::cast(b, d));
    match d {
        Scalar::F32 => rounds::<f32>(&comm, &a, &b),
        Scalar::F64 => rounds::<f64>(&comm, &a, &b),
        Scalar::C64 => rounds::<Complex32>(&comm, &a, &b),
        Scalar::C128 => rounds::<Complex64>(&comm, &a, &b),
        _ => Ok(None),
    }
}

/// The product in element type `T` (both operands of its dtype).
fn rounds<T: Element>(comm: &Comm, a: &Array, b: &Array) -> Result<Option<Array>> {
    let (Some(rows), Some(_)) = (crate::spmd::owned(a), crate::spmd::owned(b)) else { return Ok(None) };
    let (ab, bb) = (a.eval()?, b.eval()?);
    let (Data::Scalars(ac), Data::Scalars(bc)) = (&ab.data, &bb.data) else { return Ok(None) };
    let (Some(av), Some(bv)) = (T::of(ac), T::of(bc)) else { return Ok(None) };
    let k = b.shape()[0];
    let n = if b.ndim() == 2 { b.shape()[1] } else { 1 };
    let fail = |e: strata_dist::comm::CommError| ArrayError::Run(format!("matmul of team arrays: {e}"));
    let blocks = strata_runtime::dist::block_partition(Interval::new(0, k as i64), comm.size as u32);
    if a.ndim() == 1 {
        // Vector · matrix: this rank's partial product over its rows of K, summed over ranks.
        let mine = blocks[comm.rank].len() as usize;
        let mut c = vec![T::zeroed(); n];
        if mine > 0 {
            let lhs = MatRef::from_row_major_slice(av, 1, mine);
            let rhs = MatRef::from_row_major_slice(bv, mine, n);
            matmul(MatMut::from_row_major_slice_mut(&mut c, 1, n), Accum::Replace, lhs, rhs, T::one(), Par::Seq);
        }
        comm.allreduce(bytemuck::cast_slice_mut(&mut c), T::PARTS, ReduceOp::Sum).map_err(fail)?;
        let Some(out) = crate::spmd::block(a.place(), &[n]) else { return Ok(None) };
        let kept = c[out.start as usize..out.stop as usize].to_vec();
        return Ok(Some(block_of(kept, out, &[n], a)));
    }
    let (m, kk) = (a.shape()[0], a.shape()[1]);
    let mine = rows.len() as usize;
    let lhs = MatRef::from_row_major_slice(av, mine, kk);
    let mut c = vec![T::zeroed(); mine * n];
    // Round `j`'s block of `B`: this rank's own copied in when it is the root, else received.
    let mut bj: Vec<T> = Vec::new();
    let mut failed = None;
    for (j, kj) in blocks.iter().enumerate() {
        let len = kj.len() as usize;
        bj.clear();
        match j == comm.rank {
            true => bj.extend_from_slice(bv),
            false => bj.resize(len * n, T::zeroed()),
        }
        if let Err(e) = comm.bcast(bytemuck::cast_slice_mut(&mut bj), j) {
            failed.get_or_insert(e);
            continue;
        }
        if len == 0 || mine == 0 {
            continue;
        }
        let rhs = MatRef::from_row_major_slice(&bj, len, n);
        let dst = MatMut::from_row_major_slice_mut(&mut c, mine, n);
        matmul(dst, Accum::Add, lhs.subcols(kj.start as usize, len), rhs, T::one(), Par::Seq);
    }
    if let Some(e) = failed {
        return Err(fail(e));
    }
    let shape: Vec<usize> = if b.ndim() == 2 { vec![m, n] } else { vec![m] };
    Ok(Some(block_of(c, rows, &shape, a)))
}

/// This rank's `rows` (of the first axis) of a team array of `shape` at `like`'s place.
fn block_of<T: Element>(values: Vec<T>, rows: Interval, shape: &[usize], like: &Array) -> Array {
    let column = T::column(values);
    let mut ty = value_type(shape, column.scalar(), like.place());
    ty.levels[0].interval = rows;
    let t = Tensor { ty, data: Data::Scalars(column), present: None };
    Array::from_block(t, shape, like.place().clone())
}
