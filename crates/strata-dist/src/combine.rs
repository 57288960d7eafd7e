//! Combining the ranks' partials of a collective ([`crate::stages`]): gathered on rank 0,
//! folded in rank order `((p₀ ⊕ p₁) ⊕ p₂) ⊕ …`, and broadcast, so every rank holds the same
//! bits whatever MPI's own reduction order would be.

use strata_ir::BinaryOp;
use strata_runtime::{Data, Tensor};

use crate::slab;
use crate::Comm;

/// Replaces `t` (this rank's partial; the same type on every rank) by the combination of every
/// rank's partial with `op`.
///
/// # Errors
/// An MPI failure, a partial that is not a tensor of scalars, or `op` failing on the values.
pub fn combine(comm: &Comm, t: &mut Tensor, op: BinaryOp) -> Result<(), String> {
    if !matches!(t.data, Data::Scalars(_)) || t.present.is_some() {
        return Err("a reduction over a block level combines tensors of scalars only".into());
    }
    let n = slab::bytes(t).len();
    let all = comm.gatherv(slab::bytes(t), &vec![n; comm.size], 0).map_err(|e| e.to_string())?;
    if let Some(all) = all {
        // Rank 0's own partial is p₀.
        let mut part = t.clone();
        let Data::Scalars(mine) = &mut t.data else { unreachable!("checked above") };
        for k in 1..comm.size {
            slab::bytes_mut(&mut part).copy_from_slice(&all[k * n..(k + 1) * n]);
            let Data::Scalars(p) = &part.data else { unreachable!("a clone") };
            for i in 0..mine.len() {
                let v = mine.get(i).binary(op, p.get(i)).map_err(|e| e.to_string())?;
                mine.set(i, v);
            }
        }
    }
    comm.bcast(slab::bytes_mut(t), 0).map_err(|e| e.to_string())
}
