//! Combining the ranks' partials of a collective ([`crate::stages`]) in a fixed pairwise tree
//! over the ranks, then a broadcast: `log₂ P` rounds, in round `r` rank `k·2ʳ⁺¹` combining
//! its value with rank `k·2ʳ⁺¹ + 2ʳ`'s as `mine ⊕ theirs` — for 4 ranks `(p₀ ⊕ p₁) ⊕ (p₂ ⊕ p₃)`.
//! The order is fixed by the rank count alone (never MPI's choice), and rank 0's result is
//! broadcast, so every rank holds the same bits, run after run. A float sum still depends on
//! the rank count: each partial sums its own rank's block.

use strata_ir::BinaryOp;
use strata_runtime::{Data, Tensor};

use crate::slab;
use crate::Comm;

/// The tag of the tree's messages: within the 32767 MPI guarantees, apart from the scans'
/// carries (32767) and the MPI layer's own collectives (32766).
const REDUCE_TAG: i32 = 32765;

/// Replaces `t` (this rank's partial; the same type on every rank) by the combination of every
/// rank's partial with `op`, in the tree of the module docs.
///
/// # Errors
/// An MPI failure, a partial that is not a tensor of scalars, or `op` failing on the values.
/// A rank that fails to combine still takes part in the broadcast, so no rank waits forever.
pub fn combine(comm: &Comm, t: &mut Tensor, op: BinaryOp) -> Result<(), String> {
    if !matches!(t.data, Data::Scalars(_)) || t.present.is_some() {
        return Err("a reduction over a block level combines tensors of scalars only".into());
    }
    let combined = tree(comm, t, op);
    let sent = comm.bcast(slab::bytes_mut(t), 0).map_err(|e| e.to_string());
    combined.and(sent)
}

/// The tree's rounds on this rank: rank 0 ends with every partial combined. A rank whose
/// combination fails still passes its value on (its partner waits for it) and reports after.
fn tree(comm: &Comm, t: &mut Tensor, op: BinaryOp) -> Result<(), String> {
    let (rank, size) = (comm.rank, comm.size);
    let mut failed = None;
    let mut theirs = t.clone();
    let mut step = 1;
    while step < size {
        if rank % (2 * step) == step {
            // This rank's value is complete for its subtree: to its left partner, then done.
            comm.exchange(&[(rank - step, slab::bytes(t))], &mut [], REDUCE_TAG).map_err(|e| e.to_string())?;
            break;
        }
        let partner = rank + step;
        if partner < size {
            comm.exchange(&[], &mut [(partner, slab::bytes_mut(&mut theirs))], REDUCE_TAG)
                .map_err(|e| e.to_string())?;
            if let Err(e) = fold_into(t, &theirs, op) {
                failed.get_or_insert(e);
            }
        }
        step *= 2;
    }
    failed.map_or(Ok(()), Err)
}

/// `acc ← acc ⊕ x`, elementwise (tensors of scalars of one type): every element is combined;
/// the first failure of `⊕` is returned after (its element keeps `acc`'s value).
///
/// # Errors
/// A value that is not a tensor of scalars, or `op` failing on an element.
pub fn fold_into(acc: &mut Tensor, x: &Tensor, op: BinaryOp) -> Result<(), String> {
    let (Data::Scalars(a), Data::Scalars(b)) = (&mut acc.data, &x.data) else {
        return Err("a combination of tensors of scalars only".into());
    };
    let mut failed = None;
    for i in 0..a.len() {
        match a.get(i).binary(op, b.get(i)) {
            Ok(v) => a.set(i, v),
            Err(e) => {
                failed.get_or_insert(e.to_string());
            }
        }
    }
    failed.map_or(Ok(()), Err)
}
