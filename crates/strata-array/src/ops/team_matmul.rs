//! `matmul` of two team matrices under [`crate::spmd`]: a one-dimensional SUMMA, so that no
//! rank holds more than its blocks.
//!
//! `A` (`M×K`) and `B` (`K×N`) are both partitioned by rows over the `P` ranks: rank `i` holds
//! `Aᵢ` (its rows of `A`) and `Bᵢ` (rows `Kᵢ` of `B`). Its rows of `C = A·B` are
//! `Cᵢ = Σⱼ Aᵢ[:, Kⱼ] · Bⱼ`: in round `j` rank `j` broadcasts `Bⱼ` and every rank adds
//! `Aᵢ[:, Kⱼ] · Bⱼ` into `Cᵢ` (faer's matrix product, accumulating). A rank holds `Aᵢ`, `Bᵢ`,
//! one received block of `B` and `Cᵢ` — about `(MK + 2KN + MN)/P` elements — where computing on
//! whole operands gathered `A` and `B` on every rank. `Cᵢ` is this rank's block of the result,
//! a team array like the operands. The rounds run in the order `j = 0, 1, …`, so every rank
//! count gives the result of one sum over `K` in blocks; it agrees with one process to rounding
//! (as matrix products of BLAS libraries do).
//!
//! Float64 matrices only; other dtypes and shapes compute on whole operands.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use strata_ir::{Interval, Scalar};
use strata_runtime::{Column, Data, Tensor};

use crate::array::{value_type, Array};
use crate::error::{ArrayError, Result};

/// `a @ b` by the rounds of the module docs when both are float64 team matrices under
/// [`crate::spmd`] (`None` otherwise: the caller computes on whole operands).
///
/// # Errors
/// Evaluating an operand, or an MPI failure during the rounds.
pub(crate) fn summa(a: &Array, b: &Array) -> Result<Option<Array>> {
    let Some(comm) = crate::spmd::comm() else { return Ok(None) };
    let float_matrices = a.ndim() == 2 && b.ndim() == 2 && a.dtype() == Scalar::F64 && b.dtype() == Scalar::F64;
    if !(float_matrices && a.on_team() && b.on_team() && a.place() == b.place() && a.shape()[1] == b.shape()[0]) {
        return Ok(None);
    }
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let (Some(rows), Some(_)) = (crate::spmd::owned(a), crate::spmd::owned(b)) else { return Ok(None) };
    let (ab, bb) = (a.eval()?, b.eval()?);
    let (Data::Scalars(Column::F64(av)), Data::Scalars(Column::F64(bv))) = (&ab.data, &bb.data) else {
        return Ok(None);
    };
    let mine = rows.len() as usize;
    let lhs = MatRef::from_row_major_slice(av.as_slice(), mine, k);
    let blocks = strata_runtime::dist::block_partition(Interval::new(0, k as i64), comm.size as u32);
    let mut c = vec![0.0f64; mine * n];
    // Round `j`'s block of `B`: this rank's own copied in when it is the root, else received.
    // Broadcast as the bytes of `f64`s (always aligned that way round).
    let mut bj: Vec<f64> = Vec::new();
    let mut failed = None;
    for (j, kj) in blocks.iter().enumerate() {
        let len = kj.len() as usize;
        bj.clear();
        match j == comm.rank {
            true => bj.extend_from_slice(bv),
            false => bj.resize(len * n, 0.0),
        }
        if let Err(e) = comm.bcast(bytemuck::cast_slice_mut(&mut bj), j) {
            failed.get_or_insert(e.to_string());
            continue;
        }
        if len == 0 || mine == 0 {
            continue;
        }
        let rhs = MatRef::from_row_major_slice(&bj, len, n);
        let dst = MatMut::from_row_major_slice_mut(&mut c, mine, n);
        matmul(dst, Accum::Add, lhs.subcols(kj.start as usize, len), rhs, 1.0, Par::Seq);
    }
    if let Some(e) = failed {
        return Err(ArrayError::Run(format!("matmul of team arrays: {e}")));
    }
    let mut ty = value_type(&[m, n], Scalar::F64, a.place());
    ty.levels[0].interval = rows;
    let t = Tensor { ty, data: Data::Scalars(Column::F64(c)), present: None };
    Ok(Some(Array::from_block(t, &[m, n], a.place().clone())))
}
