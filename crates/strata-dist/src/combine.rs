//! Combining the ranks' partials of a collective ([`crate::stages`]) in a fixed pairwise tree
//! over the ranks, then a broadcast: `log₂ P` rounds, in round `r` rank `k·2ʳ⁺¹` combining
//! its value with rank `k·2ʳ⁺¹ + 2ʳ`'s as `mine ⊕ theirs` — for 4 ranks `(p₀ ⊕ p₁) ⊕ (p₂ ⊕ p₃)`.
//! The order is fixed by the rank count alone (never MPI's choice), and rank 0's result is
//! broadcast, so every rank holds the same bits, run after run. A float sum still depends on
//! the rank count: each partial sums its own rank's block.

use strata_ir::{BinaryOp, Scalar};
use strata_runtime::{Data, Tensor};

use crate::job::{RankError, Step};
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
pub fn combine(comm: &Comm, t: &mut Tensor, op: BinaryOp) -> Step<()> {
    if !matches!(t.data, Data::Scalars(_)) || t.present.is_some() {
        return Err(RankError::internal("a reduction over a block level combines tensors of scalars only"));
    }
    let combined = tree(comm, t, op);
    let sent = comm.bcast(slab::bytes_mut(t), 0).map_err(RankError::from);
    combined.and(sent)
}

/// The tree's rounds on this rank: rank 0 ends with every partial combined. A rank whose
/// combination fails still passes its value on (its partner waits for it) and reports after.
fn tree(comm: &Comm, t: &mut Tensor, op: BinaryOp) -> Step<()> {
    let (rank, size) = (comm.rank, comm.size);
    let mut failed = None;
    let mut theirs = t.clone();
    let mut step = 1;
    while step < size {
        if rank % (2 * step) == step {
            // This rank's value is complete for its subtree: to its left partner, then done.
            comm.exchange(&[(rank - step, slab::bytes(t))], &mut [], REDUCE_TAG)?;
            break;
        }
        let partner = rank + step;
        if partner < size {
            comm.exchange(&[], &mut [(partner, slab::bytes_mut(&mut theirs))], REDUCE_TAG)?;
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
pub fn fold_into(acc: &mut Tensor, x: &Tensor, op: BinaryOp) -> Step<()> {
    let (Data::Scalars(a), Data::Scalars(b)) = (&mut acc.data, &x.data) else {
        return Err(RankError::internal("a combination of tensors of scalars only"));
    };
    let mut failed = None;
    for i in 0..a.len() {
        match a.get(i).binary(op, b.get(i)) {
            Ok(v) => a.set(i, v),
            Err(e) => {
                failed.get_or_insert(RankError::Combine(e.to_string()));
            }
        }
    }
    failed.map_or(Ok(()), Err)
}

/// MPI's element type and combination for `op` over values of `scalar`, where MPI computes
/// it exactly as Strata does: integers' sums, products and bitwise ops on unsigned types of the
/// same width (two's complement wraps alike), their maximum and minimum on the signed or
/// unsigned type, `bool`'s logical ops; `None` for the others.
pub fn mpi_op(op: BinaryOp, scalar: Scalar) -> Option<(crate::comm::ReduceType, crate::comm::ReduceOp)> {
    use crate::comm::{ReduceOp as O, ReduceType as T};
    if scalar == Scalar::Bool {
        let o = match op {
            BinaryOp::And | BinaryOp::BitAnd | BinaryOp::Minimum => O::LAnd,
            BinaryOp::Or | BinaryOp::BitOr | BinaryOp::Maximum => O::LOr,
            BinaryOp::Xor | BinaryOp::BitXor => O::LXor,
            _ => return None,
        };
        return Some((T::U8, o));
    }
    let (signed, unsigned) = match scalar {
        Scalar::I8 => (T::I8, T::U8),
        Scalar::U8 => (T::U8, T::U8),
        Scalar::I16 => (T::I16, T::U16),
        Scalar::U16 => (T::U16, T::U16),
        Scalar::I32 => (T::I32, T::U32),
        Scalar::U32 => (T::U32, T::U32),
        Scalar::I64 | Scalar::Index => (T::I64, T::U64),
        Scalar::U64 => (T::U64, T::U64),
        _ => return None,
    };
    Some(match op {
        BinaryOp::Plus => (unsigned, O::Sum),
        BinaryOp::Multiplies => (unsigned, O::Prod),
        BinaryOp::Maximum => (signed, O::Max),
        BinaryOp::Minimum => (signed, O::Min),
        BinaryOp::BitAnd => (unsigned, O::BAnd),
        BinaryOp::BitOr => (unsigned, O::BOr),
        BinaryOp::BitXor => (unsigned, O::BXor),
        _ => return None,
    })
}

/// The rows' tree of a reduction asked to be reproducible ([`crate::PartialStart::Rows`]):
/// `t` holds this rank's `rows` (its level 0, one partial per row, every row folded from the
/// identity), `blocks` every rank's rows. The result is `init ⊕ tree(rows)`, the tree over the
/// global rows `[lo, hi)` fixed by them alone: a node `[s, e)` of more than one row is
/// `[s, m) ⊕ [m, e)` with `m - s` the largest power of two below `e - s`. Each rank combines
/// the largest nodes within its rows, every rank receives every rank's nodes (`O(P log n)`
/// rows), and every rank evaluates the top of the tree: the same bits on every rank, at every
/// rank count.
///
/// # Errors
/// An MPI failure, a partial that is not a tensor of scalars, or `op` failing on the values.
/// Every rank makes the same collective calls whatever failed, so none waits forever.
pub fn rows_tree(
    comm: &Comm,
    t: &Tensor,
    blocks: &[strata_ir::Interval],
    op: BinaryOp,
    init: &strata_ir::Literal,
) -> Step<Tensor> {
    let rows = blocks[comm.rank];
    let lo = blocks.iter().filter(|b| !b.is_empty()).map(|b| b.start).min().unwrap_or(0);
    let hi = blocks.iter().filter(|b| !b.is_empty()).map(|b| b.stop).max().unwrap_or(lo);
    let row_ty = strata_runtime::ValueType { levels: t.ty.levels.iter().skip(1).cloned().collect(), ..t.ty.clone() };
    let row_bytes = row_ty.size_bytes().unwrap_or(0);
    let scalar = match &t.ty.element {
        strata_runtime::ElemType::Scalar(s) if matches!(t.data, Data::Scalars(_)) && t.present.is_none() => *s,
        _ => return Err(RankError::internal("a reduction over a block level combines tensors of scalars only")),
    };
    let mut failed: Option<RankError> = None;
    let mine = slab::bytes(t);
    let row = |r: i64| {
        let mut x = Tensor::zeros(&row_ty);
        let at = (r - rows.start) as usize * row_bytes;
        if let Some(b) = mine.get(at..at + row_bytes) {
            slab::bytes_mut(&mut x).copy_from_slice(b);
        }
        x
    };
    // This rank's largest nodes, each as `s`, `e` and its value's bytes.
    let mut nodes = Vec::new();
    if !rows.is_empty() && mine.len() == rows.len() as usize * row_bytes {
        let mut cover = Vec::new();
        covering(lo, hi, rows, &mut cover);
        for (s, e) in cover {
            let v = evaluate(s, e, &mut |s, e| (e - s == 1).then(|| row(s)), op, &mut failed).expect("its rows");
            nodes.extend_from_slice(&s.to_ne_bytes());
            nodes.extend_from_slice(&e.to_ne_bytes());
            nodes.extend_from_slice(slab::bytes(&v));
        }
    } else if !rows.is_empty() {
        failed = Some(RankError::internal(format!("a partial of {} bytes for {} rows", mine.len(), rows.len())));
    }
    let all = allgather_bytes(comm, &nodes)?;
    let mut given = std::collections::HashMap::new();
    let entry = 16 + row_bytes;
    for chunk in all.iter().flat_map(|b| b.chunks_exact(entry)) {
        let s = i64::from_ne_bytes(chunk[..8].try_into().expect("8 bytes"));
        let e = i64::from_ne_bytes(chunk[8..16].try_into().expect("8 bytes"));
        let mut v = Tensor::zeros(&row_ty);
        slab::bytes_mut(&mut v).copy_from_slice(&chunk[16..]);
        given.insert((s, e), v);
    }
    let unit = strata_runtime::Sv::from_literal(init, scalar)
        .ok_or_else(|| RankError::Combine("the initial value does not fit its type".into()))?;
    let mut out = Tensor::zeros(&row_ty);
    if let Data::Scalars(c) = &mut out.data {
        (0..c.len()).for_each(|i| c.set(i, unit));
    }
    if hi > lo {
        let top = evaluate(lo, hi, &mut |s, e| given.remove(&(s, e)), op, &mut failed);
        match top {
            Some(v) => {
                if let Err(e) = fold_into(&mut out, &v, op) {
                    failed.get_or_insert(e);
                }
            }
            None => {
                failed.get_or_insert_with(|| RankError::internal("a row of the reduction's tree is missing"));
            }
        }
    }
    failed.map_or(Ok(out), Err)
}

/// The tree's split of `[s, e)` (more than one row): `s` plus the largest power of two below
/// `e - s`.
fn split(s: i64, e: i64) -> i64 {
    let n = (e - s) as u64;
    s + (1u64 << (63 - (n - 1).leading_zeros())) as i64
}

/// The largest nodes of the tree over `[s, e)` within `rows`, in order.
fn covering(s: i64, e: i64, rows: strata_ir::Interval, out: &mut Vec<(i64, i64)>) {
    if e <= rows.start || rows.stop <= s || e <= s {
        return;
    }
    if rows.start <= s && e <= rows.stop {
        out.push((s, e));
        return;
    }
    let m = split(s, e);
    covering(s, m, rows, out);
    covering(m, e, rows, out);
}

/// The value of node `[s, e)`: what `known` gives for it, else its children's combined (`None`
/// where a row is not known); the first failure of `op` is kept in `failed`.
fn evaluate(
    s: i64,
    e: i64,
    known: &mut dyn FnMut(i64, i64) -> Option<Tensor>,
    op: BinaryOp,
    failed: &mut Option<RankError>,
) -> Option<Tensor> {
    if let Some(v) = known(s, e) {
        return Some(v);
    }
    if e - s <= 1 {
        return None;
    }
    let m = split(s, e);
    let mut left = evaluate(s, m, known, op, failed)?;
    let right = evaluate(m, e, known, op, failed)?;
    if let Err(x) = fold_into(&mut left, &right, op) {
        failed.get_or_insert(x);
    }
    Some(left)
}

/// Every rank's `mine` on every rank, in rank order (a collective call).
fn allgather_bytes(comm: &Comm, mine: &[u8]) -> Result<Vec<Vec<u8>>, crate::CommError> {
    let size = comm.size;
    let mut lens = comm.gatherv(&(mine.len() as u64).to_ne_bytes(), &vec![8; size], 0)?.unwrap_or_default();
    lens.resize(8 * size, 0);
    comm.bcast(&mut lens, 0)?;
    let lens: Vec<usize> =
        lens.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")) as usize).collect();
    let mut all = comm.gatherv(mine, &lens, 0)?.unwrap_or_default();
    all.resize(lens.iter().sum(), 0);
    comm.bcast(&mut all, 0)?;
    let mut at = 0;
    Ok(lens
        .iter()
        .map(|&n| {
            at += n;
            all[at - n..at].to_vec()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_splits_at_powers_of_two_and_each_rank_covers_its_rows_with_its_nodes() {
        assert_eq!((split(0, 2), split(0, 3), split(0, 4), split(0, 5), split(8, 21)), (1, 2, 2, 4, 16));
        // Rows [3, 11) of a tree over [0, 13): [3,4) [4,8) [8,10) [10,11), by hand.
        let mut cover = Vec::new();
        covering(0, 13, strata_ir::Interval::new(3, 11), &mut cover);
        assert_eq!(cover, [(3, 4), (4, 8), (8, 10), (10, 11)]);
        // The ranks' nodes tile the rows exactly, for any block partition.
        for n in 1..40i64 {
            for ranks in 1..6u32 {
                let blocks = strata_runtime::dist::block_partition(strata_ir::Interval::new(0, n), ranks);
                let mut all = Vec::new();
                for b in &blocks {
                    covering(0, n, *b, &mut all);
                }
                all.sort();
                let mut at = 0;
                for (s, e) in &all {
                    assert_eq!(*s, at, "n {n}, {ranks} ranks: {all:?}");
                    at = *e;
                }
                assert_eq!(at, n);
            }
        }
    }
}
