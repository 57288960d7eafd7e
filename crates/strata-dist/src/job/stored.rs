//! A distributed sparse or ragged result leaving the ranks: every rank's stored entries
//! gathered on rank 0 as the storage of the whole value (never a dense view), which rank 0
//! writes as one SciPy or ragged `.npz`, as a single process does.

use strata_ir::{Interval, LevelFormat};
use strata_runtime::storage::{assemble_entries, entries, Entries};
use strata_runtime::{Column, Stored, Tensor, Value, ValueType};

use super::{RankError, Step};
use crate::{slab, Comm};

/// Whether values of `ty` leave the ranks as storage (a sparse or ragged level).
pub fn is_stored(ty: &ValueType) -> bool {
    ty.levels.iter().any(|l| !l.format.is_dense_like())
}

/// Gathers a distributed sparse or ragged result whose rows (its first level) are block
/// distributed, `owned` on this rank: rank 0 gets the whole value's storage in the formats of
/// `global` (the block level dense, no team), the others `None`. A collective call.
///
/// # Errors
/// A block level that is not the first, or MPI failing.
pub fn gather_stored(comm: &Comm, v: &Value, level: usize, owned: Interval, global: &ValueType) -> Step<Option<Value>> {
    if level != 0 {
        return Err(RankError::internal(
            "a distributed sparse or ragged result must be distributed by its rows (its first level)",
        ));
    }
    let local = match v {
        Value::Stored(s) => std::borrow::Cow::Borrowed(s),
        Value::Tensor(t) => std::borrow::Cow::Owned(Stored::from_tensor(t)),
    };
    let rows = local.ty.levels[0].interval;
    let first = global.levels[0].interval;
    let e = entries(&local.storage);
    let rank = e.rank;
    // This rank's entries in its owned rows, rows renumbered from the global interval's start.
    let keep: Vec<usize> = (0..e.len())
        .filter(|&k| {
            let row = rows.start + e.coords[k * rank] as i64;
            owned.start <= row && row < owned.stop
        })
        .collect();
    let mut coords = Vec::with_capacity(keep.len() * rank);
    for &k in &keep {
        let c = &e.coords[k * rank..(k + 1) * rank];
        coords.push((c[0] as i64 + rows.start - first.start) as u64);
        coords.extend(c[1..].iter().map(|&x| x as u64));
    }
    let values = e.values.select(&keep);
    // Every rank's entry count, on every rank.
    let counts = gathered_counts(comm, keep.len())?;
    let coord_bytes: Vec<u8> = coords.iter().flat_map(|c| c.to_le_bytes()).collect();
    let sizes = |per: usize| counts.iter().map(|&n| n * per).collect::<Vec<_>>();
    let all_coords = comm.gatherv(&coord_bytes, &sizes(8 * rank), 0)?;
    let scalar = values.scalar();
    let all_values = comm.gatherv(slab::column_bytes(&values), &sizes(scalar.size_bytes()), 0)?;
    let (Some(all_coords), Some(all_values)) = (all_coords, all_values) else { return Ok(None) };
    let total: usize = counts.iter().sum();
    let mut values = Column::zeros(scalar, total);
    slab::column_bytes_mut(&mut values).copy_from_slice(&all_values);
    let coords =
        all_coords.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize).collect();
    let mut ty = global.clone();
    ty.levels[0].format = LevelFormat::Dense;
    ty.placement.team = None;
    let formats: Vec<LevelFormat> = ty.levels.iter().map(|l| l.format).collect();
    // Ranks own increasing rows, so the entries gathered in rank order are row-major.
    let storage = assemble_entries(&ty.shape(), &formats, &Entries { rank, coords, values });
    Ok(Some(Value::Stored(Stored { ty, storage })))
}

/// Each rank's `n`, on every rank.
fn gathered_counts(comm: &Comm, n: usize) -> Step<Vec<usize>> {
    let mut all =
        comm.gatherv(&(n as u64).to_le_bytes(), &vec![8; comm.size], 0)?.unwrap_or_else(|| vec![0; 8 * comm.size]);
    comm.bcast(&mut all, 0)?;
    Ok(all.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize).collect())
}

/// A distributed result gathered on rank 0 (`None` on the others), whatever it holds: storage
/// for a sparse or ragged type, else the dense blocks. A collective call.
///
/// # Errors
/// As [`gather_stored`] and [`super::gather`].
pub fn gather_value(comm: &Comm, v: &Value, level: usize, owned: Interval, global: &ValueType) -> Step<Option<Value>> {
    if is_stored(global) {
        return gather_stored(comm, v, level, owned, global);
    }
    let t: std::borrow::Cow<'_, Tensor> = super::dense(v)?;
    super::gather(comm, &t, level, owned, global)
}
