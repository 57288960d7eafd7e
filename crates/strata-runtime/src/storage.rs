//! Compiler-visible storage of sparse and ragged tensors, level by level (the TACO / MLIR
//! sparse-tensor model): a dense level stores nothing but its size; a compressed level stores
//! `positions` (one range per parent position) and `coordinates`; a singleton level stores one
//! coordinate per parent entry; a ragged level stores `offsets` (a run per parent position, the
//! coordinates being implicit `0, 1, …`). Values sit at the leaves.
//!
//! [`assemble`] builds the buffers from a logical tensor, [`disassemble`] turns buffers back
//! into the logical view. CSR is `[dense, compressed]`, CSC the same over `(Col, Row)`, DCSR
//! `[compressed, compressed]`, COO `[compressed(nonunique), singleton]`.
//!
//! Two different things are *not stored* (docs/runtime.md): an entry a compressed or
//! singleton level does not list is the tensor's **fill value** (zero; `false` for `bool`) — a
//! value like any other, present in the logical view; a position past the end of a ragged run
//! is **skipped** — absent, no value at all. So the logical view of a sparse tensor holds zeros
//! at its unstored entries, and [`assemble`] stores exactly the entries that differ from the
//! fill value (SciPy's canonical form after `eliminate_zeros`; stored zeros read from a file
//! are not kept). A tensor with a ragged level stores every present element instead (its runs
//! are dense, zeros included).

use std::borrow::Cow;

use strata_ir::LevelFormat;

use crate::scalar::Column;
use crate::tensor::{strides, Data, Tensor, ValueType};
use crate::value::Stored;

/// The buffers of one level.
#[derive(Clone, Debug, PartialEq)]
pub enum LevelBuffers {
    /// Every coordinate of the interval.
    Dense {
        /// Interval length.
        size: usize,
    },
    /// `coordinates[positions[p]..positions[p + 1]]` are parent `p`'s stored coordinates.
    Compressed {
        /// Length = parents + 1.
        positions: Vec<usize>,
        /// Offsets within the interval.
        coordinates: Vec<usize>,
    },
    /// One coordinate per parent entry.
    Singleton {
        /// Offsets within the interval.
        coordinates: Vec<usize>,
    },
    /// Parent `p` stores `offsets[p + 1] - offsets[p]` entries at coordinates `0, 1, …`.
    Ragged {
        /// Length = parents + 1.
        offsets: Vec<usize>,
    },
}

/// A tensor's storage: one [`LevelBuffers`] per level and the stored values in leaf order.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// Per level, outermost first.
    pub levels: Vec<LevelBuffers>,
    /// One value per leaf position.
    pub values: Column,
}

/// Builds the storage of `t` for its type's level formats. The stored entries are those
/// [`is_stored`] says (a dense level below a compressed one stores its zeros too, as in DCSR
/// blocks).
pub fn assemble(t: &Tensor) -> Storage {
    let formats: Vec<LevelFormat> = t.ty.levels.iter().map(|l| l.format).collect();
    assemble_as(t, &formats)
}

/// Where `storage` (of a value of type `ty`, in its formats) contradicts a static extent the
/// type declares — `compressed(nnz = N)`, `ragged(total = N)` — naming the level and both
/// counts; `None` when it does not (or the type declares none).
pub fn extent_mismatch(ty: &ValueType, storage: &Storage) -> Option<String> {
    use strata_ir::Extent;
    for (l, buffers) in ty.levels.iter().zip(&storage.levels) {
        let (declared, what, stored) = match (l.format, buffers) {
            (LevelFormat::Compressed { nnz: Extent::Static(n), .. }, LevelBuffers::Compressed { coordinates, .. }) => {
                (n, "nnz", coordinates.len())
            }
            (LevelFormat::Ragged { total: Extent::Static(n) }, LevelBuffers::Ragged { offsets }) => {
                (n, "total", offsets.last().copied().unwrap_or(0))
            }
            _ => continue,
        };
        if stored as u64 != declared {
            return Some(format!(
                "level `{}` stores {stored} entries, but its type says `{what} = {declared}`",
                l.name
            ));
        }
    }
    None
}

/// Whether `ty` declares a static extent ([`extent_mismatch`] has something to check).
pub fn has_static_extents(ty: &ValueType) -> bool {
    use strata_ir::Extent;
    ty.levels.iter().any(|l| {
        matches!(
            l.format,
            LevelFormat::Compressed { nnz: Extent::Static(_), .. } | LevelFormat::Ragged { total: Extent::Static(_) }
        )
    })
}

/// [`assemble`] with other level formats than `t`'s type has, one per level (a backend's
/// choice of storage for the same stored entries).
pub fn assemble_as(t: &Tensor, formats: &[LevelFormat]) -> Storage {
    let shape = t.ty.shape();
    let st = strides(&shape);
    let Data::Scalars(col) = &t.data else { panic!("storage holds scalar elements") };
    let keeps_zeros = keeps_zeros(&t.ty.levels);
    let stored: Vec<usize> =
        (0..t.len()).filter(|&i| t.is_present(i) && (keeps_zeros || !col.get(i).is_zero())).collect();
    let entries = Entries {
        rank: shape.len(),
        coords: stored
            .iter()
            .flat_map(|&i| (0..shape.len()).map(|d| (i / st[d]) % shape[d].max(1)).collect::<Vec<_>>())
            .collect(),
        values: col.select(&stored),
    };
    assemble_entries(&shape, formats, &entries)
}

/// Stored entries of a tensor: coordinates (offsets within each level's interval, `rank` per
/// entry) in row-major order, and their values — the format-free form storage converts through.
#[derive(Clone, Debug, PartialEq)]
pub struct Entries {
    /// Coordinates per entry.
    pub rank: usize,
    /// `rank` coordinates per entry, entries in row-major order.
    pub coords: Vec<usize>,
    /// One value per entry.
    pub values: Column,
}

impl Entries {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn at(&self, k: usize, d: usize) -> usize {
        self.coords[k * self.rank + d]
    }
}

/// Storage in `formats` of `entries` (row-major, unique unless a level is non-unique) of a tensor
/// of `shape`: every entry is stored; a dense level below a stored one stores every coordinate
/// (zeros where no entry is).
pub fn assemble_entries(shape: &[usize], formats: &[LevelFormat], entries: &Entries) -> Storage {
    // A segment is the range of entries below one position of the current level: entries are
    // in row-major order, so those sharing a prefix are contiguous and sorted by the next
    // coordinate, and every level is built in one pass over its segments.
    let mut segments: Vec<std::ops::Range<usize>> = std::iter::once(0..entries.len()).collect();
    let mut levels = Vec::new();
    // The sub-ranges of `seg` holding coordinate `0, 1, …, n - 1` at level `d`.
    let runs = |seg: &std::ops::Range<usize>, d: usize, n: usize| {
        let mut at = seg.start;
        (0..n)
            .map(|c| {
                let from = at;
                while at < seg.end && entries.at(at, d) == c {
                    at += 1;
                }
                from..at
            })
            .collect::<Vec<_>>()
    };
    for (d, &format) in formats.iter().enumerate() {
        let mut next_segments = Vec::new();
        match format {
            LevelFormat::Dense | LevelFormat::Block => {
                for seg in &segments {
                    next_segments.extend(runs(seg, d, shape[d]));
                }
                levels.push(LevelBuffers::Dense { size: shape[d] });
            }
            LevelFormat::Compressed { unique, .. } => {
                let mut positions = Vec::with_capacity(segments.len() + 1);
                positions.push(0);
                let mut coordinates = Vec::new();
                for seg in &segments {
                    let mut at = seg.start;
                    while at < seg.end {
                        let c = entries.at(at, d);
                        let from = at;
                        at += 1;
                        while unique && at < seg.end && entries.at(at, d) == c {
                            at += 1;
                        }
                        coordinates.push(c);
                        next_segments.push(from..at);
                    }
                    positions.push(coordinates.len());
                }
                levels.push(LevelBuffers::Compressed { positions, coordinates });
            }
            LevelFormat::Singleton { .. } => {
                let mut coordinates = Vec::with_capacity(segments.len());
                for seg in &segments {
                    coordinates.push(if seg.is_empty() { 0 } else { entries.at(seg.start, d) });
                    next_segments.push(seg.clone());
                }
                levels.push(LevelBuffers::Singleton { coordinates });
            }
            LevelFormat::Ragged { .. } => {
                let mut offsets = vec![0];
                for seg in &segments {
                    // Sorted within the segment: the last entry has the largest coordinate.
                    let len = if seg.is_empty() { 0 } else { entries.at(seg.end - 1, d) + 1 };
                    next_segments.extend(runs(seg, d, len));
                    offsets.push(offsets.last().copied().unwrap_or(0) + len);
                }
                levels.push(LevelBuffers::Ragged { offsets });
            }
        }
        segments = next_segments;
    }
    // Each leaf holds its entry's value, or zero (a dense level's coordinate no entry has).
    let scalar = entries.values.scalar();
    let values = if segments.iter().enumerate().all(|(k, s)| s.start == k && s.len() == 1) {
        entries.values.clone()
    } else {
        Column::from_fn(scalar, segments.len(), |k| {
            if segments[k].is_empty() {
                crate::Sv::zero(scalar)
            } else {
                entries.values.get(segments[k].start)
            }
        })
    };
    Storage { levels, values }
}

/// The stored entries of (validated) `storage` in row-major order, without a dense view: each
/// leaf position with its coordinates (a dense level lists every coordinate below a stored
/// parent, so its stored zeros are entries too).
pub fn entries(storage: &Storage) -> Entries {
    let rank = storage.levels.len();
    // Each position of the current level: its coordinates so far.
    let mut prefixes: Vec<usize> = Vec::new();
    let mut count = 1usize;
    for (d, lb) in storage.levels.iter().enumerate() {
        let mut next = Vec::new();
        let mut next_count = 0;
        let push = |p: usize, c: usize, next: &mut Vec<usize>| {
            next.extend_from_slice(&prefixes[p * d..p * d + d]);
            next.push(c);
        };
        for p in 0..count {
            match lb {
                LevelBuffers::Dense { size } => {
                    (0..*size).for_each(|c| push(p, c, &mut next));
                    next_count += size;
                }
                LevelBuffers::Compressed { positions, coordinates } => {
                    coordinates[positions[p]..positions[p + 1]].iter().for_each(|&c| push(p, c, &mut next));
                    next_count += positions[p + 1] - positions[p];
                }
                LevelBuffers::Singleton { coordinates } => {
                    push(p, coordinates[p], &mut next);
                    next_count += 1;
                }
                LevelBuffers::Ragged { offsets } => {
                    (0..offsets[p + 1] - offsets[p]).for_each(|c| push(p, c, &mut next));
                    next_count += offsets[p + 1] - offsets[p];
                }
            }
        }
        prefixes = next;
        count = next_count;
    }
    Entries { rank, coords: prefixes, values: storage.values.clone() }
}

/// `storage` of a tensor of `shape` re-stored in `formats` (the same entries; a backend's
/// choice of storage), without a dense view. Returns `storage` itself when the formats already
/// agree.
pub fn restore<'s>(storage: Cow<'s, Storage>, shape: &[usize], formats: &[LevelFormat]) -> Cow<'s, Storage> {
    let same = storage.levels.iter().zip(formats).all(|(lb, f)| {
        matches!(
            (lb, f),
            (LevelBuffers::Dense { .. }, LevelFormat::Dense | LevelFormat::Block)
                | (LevelBuffers::Compressed { .. }, LevelFormat::Compressed { unique: true, .. })
                | (LevelBuffers::Singleton { .. }, LevelFormat::Singleton { .. })
                | (LevelBuffers::Ragged { .. }, LevelFormat::Ragged { .. })
        )
    });
    if same {
        return storage;
    }
    Cow::Owned(assemble_entries(shape, formats, &entries(&storage)))
}

/// Whether a level is ragged (the one format whose runs decide which elements exist).
pub fn has_ragged(levels: &[strata_ir::Level]) -> bool {
    levels.iter().any(|l| matches!(l.format, LevelFormat::Ragged { .. }))
}

/// Whether tensors over `levels` store their zeros: true when a level is ragged (runs are
/// dense) or no level is compressed or singleton; false for sparse tensors, whose unstored
/// entries are the fill value.
pub fn keeps_zeros(levels: &[strata_ir::Level]) -> bool {
    has_ragged(levels) || !levels.iter().any(|l| l.format.is_sparse())
}

/// Gives a value of a sparse type (one that does not [`keep_zeros`](keeps_zeros)) `+0.0`
/// wherever it is zero: storage lists only entries that differ from the fill value, so the sign
/// of a zero is not part of a sparse value (`0 · −2` into a sparse result is the fill value,
/// `+0.0`, whichever entries a backend visits).
pub fn canonical_fill(t: &mut Tensor) {
    if keeps_zeros(&t.ty.levels) {
        return;
    }
    match &mut t.data {
        Data::Scalars(Column::F64(v)) => v.iter_mut().filter(|x| **x == 0.0).for_each(|x| *x = 0.0),
        Data::Scalars(Column::F32(v)) => v.iter_mut().filter(|x| **x == 0.0).for_each(|x| *x = 0.0),
        _ => {}
    }
}

/// Whether element `i` of `t` is stored by [`assemble`]: present, and different from the fill
/// value unless the type [`keeps_zeros`].
pub fn is_stored(t: &Tensor, i: usize) -> bool {
    t.is_present(i) && (keeps_zeros(&t.ty.levels) || !t.get(i).scalar().is_some_and(|v| v.is_zero()))
}

/// Why storage buffers do not describe a tensor of the expected type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StorageError(pub String);

/// Checks that `storage` is well-formed for a tensor of shape `shape` with one
/// [`LevelBuffers`] per level — the one run-time check every backend relies on before it
/// reads storage (the interpreter through [`disassemble`], native code through its storage
/// buffers), so no kernel indexes past an array:
/// - positions and offsets have one entry per parent plus one, start at 0, never decrease,
///   and end at the number of coordinates (SciPy's rules for `indptr`);
/// - every coordinate lies within its level's extent;
/// - a ragged run is no longer than its level's bound;
/// - there is one value per stored entry.
///
/// Returns the number of stored entries.
pub fn validate(shape: &[usize], storage: &Storage) -> Result<usize, StorageError> {
    if storage.levels.len() != shape.len() {
        return Err(StorageError(format!(
            "{} storage levels for a tensor of rank {}",
            storage.levels.len(),
            shape.len()
        )));
    }
    // Entries stored at the levels so far (the parents of the next level).
    let mut parents: usize = 1;
    for (d, lb) in storage.levels.iter().enumerate() {
        let bad = |what: String| StorageError(format!("level {d}: {what}"));
        let runs = |starts: &[usize], what: &str, bound: Option<usize>| -> Result<usize, StorageError> {
            if starts.len() != parents + 1 {
                return Err(bad(format!("{} {what} for {parents} parents (expected {})", starts.len(), parents + 1)));
            }
            if starts[0] != 0 {
                return Err(bad(format!("the first of the {what} is {}, not 0", starts[0])));
            }
            for (k, w) in starts.windows(2).enumerate() {
                let len = w[1].checked_sub(w[0]).ok_or_else(|| bad(format!("{what} decrease after parent {k}")))?;
                if let Some(bound) = bound.filter(|&b| len > b) {
                    return Err(bad(format!("a run of {len} exceeds the bound {bound} (parent {k})")));
                }
            }
            Ok(starts[parents])
        };
        let inside = |coordinates: &[usize]| match coordinates.iter().find(|&&c| c >= shape[d]) {
            Some(c) => Err(bad(format!("coordinate {c} outside the extent {}", shape[d]))),
            None => Ok(()),
        };
        parents = match lb {
            LevelBuffers::Dense { size } => {
                if *size != shape[d] {
                    return Err(bad(format!("dense size {size}, expected {}", shape[d])));
                }
                parents.checked_mul(*size).ok_or_else(|| bad("too many entries".into()))?
            }
            LevelBuffers::Compressed { positions, coordinates } => {
                let n = runs(positions, "positions", None)?;
                if n != coordinates.len() {
                    return Err(bad(format!("positions end at {n} but there are {} coordinates", coordinates.len())));
                }
                inside(coordinates)?;
                n
            }
            LevelBuffers::Singleton { coordinates } => {
                if coordinates.len() != parents {
                    return Err(bad(format!("{} coordinates for {parents} parents", coordinates.len())));
                }
                inside(coordinates)?;
                parents
            }
            LevelBuffers::Ragged { offsets } => runs(offsets, "offsets", Some(shape[d]))?,
        };
    }
    if storage.values.len() != parents {
        return Err(StorageError(format!("{} values for {parents} stored entries", storage.values.len())));
    }
    Ok(parents)
}

/// The row-major offset in the dense view of every stored entry of (validated) `storage`, in
/// storage order.
fn stored_offsets(shape: &[usize], storage: &Storage) -> Vec<usize> {
    let st = strides(shape);
    // Each position of the current level: the linear offset of its prefix.
    let mut prefixes: Vec<usize> = vec![0];
    for (d, lb) in storage.levels.iter().enumerate() {
        let mut next = Vec::new();
        match lb {
            LevelBuffers::Dense { size } => {
                for &p in &prefixes {
                    next.extend((0..*size).map(|c| p + c * st[d]));
                }
            }
            LevelBuffers::Compressed { positions, coordinates } => {
                for (k, &p) in prefixes.iter().enumerate() {
                    next.extend(coordinates[positions[k]..positions[k + 1]].iter().map(|&c| p + c * st[d]));
                }
            }
            LevelBuffers::Singleton { coordinates } => {
                next.extend(prefixes.iter().zip(coordinates).map(|(&p, &c)| p + c * st[d]));
            }
            LevelBuffers::Ragged { offsets } => {
                for (k, &p) in prefixes.iter().enumerate() {
                    next.extend((0..offsets[k + 1] - offsets[k]).map(|c| p + c * st[d]));
                }
            }
        }
        prefixes = next;
    }
    prefixes
}

/// The storage of ragged tensor `t` with the runs of `like`, a stored value of the same type
/// whose runs hold exactly the elements `t` has: then `like`'s empty runs (a row without
/// elements inside a group, which presence alone cannot show) are `t`'s too. `None` when the
/// types or the present elements differ. This is how a ragged result keeps the runs of the
/// argument it is computed from (`return %y`, `plus(%y, 0.0)`, a scan along a ragged level).
pub fn with_runs_of(t: &Tensor, like: &Stored) -> Option<Stored> {
    if t.ty != like.ty || !has_ragged(&t.ty.levels) || !matches!(t.data, Data::Scalars(_)) {
        return None;
    }
    let shape = t.ty.shape();
    validate(&shape, &like.storage).ok()?;
    let offsets = stored_offsets(&shape, &like.storage);
    let mut inside = vec![false; t.len()];
    for &o in &offsets {
        inside[o] = true;
    }
    if (0..t.len()).any(|i| inside[i] != t.is_present(i)) {
        return None;
    }
    let Data::Scalars(col) = &t.data else { return None };
    let values = Column::from_fn(col.scalar(), offsets.len(), |k| col.get(offsets[k]));
    Some(Stored { ty: t.ty.clone(), storage: Storage { levels: like.storage.levels.clone(), values } })
}

/// The logical tensor of type `ty` described by `storage`: stored entries hold their values,
/// unstored entries of compressed and singleton levels the fill value (zero, present), and
/// positions past a ragged run are absent (skipped).
pub fn disassemble(ty: &ValueType, storage: &Storage) -> Result<Tensor, StorageError> {
    let shape = ty.shape();
    validate(&shape, storage)?;
    let st = strides(&shape);
    let prefixes = stored_offsets(&shape, storage);
    let scalar = ty.element.scalar().ok_or_else(|| StorageError("storage holds scalar elements".into()))?;
    let mut t = Tensor::zeros(ty);
    let mut seen = vec![false; t.len()];
    if let Data::Scalars(col) = &mut t.data {
        for (k, &i) in prefixes.iter().enumerate() {
            let v = storage.values.get(k);
            // Duplicates (non-unique COO) add up, as in SciPy.
            let v = if seen[i] { col.get(i).binary(strata_ir::BinaryOp::Plus, v).unwrap_or(v) } else { v };
            col.set(i, v.cast(scalar));
            seen[i] = true;
        }
    }
    // Unstored entries of compressed and singleton levels are the fill value (zero, present);
    // only ragged runs skip.
    if has_ragged(&ty.levels) {
        t.present = Some(inside_runs(&shape, &st, storage));
        t.normalize_presence();
    }
    Ok(t)
}

/// Which elements lie inside the ragged runs of (validated) `storage`: every coordinate of
/// dense, compressed and singleton levels (unstored ones hold the fill value), the first
/// `run` coordinates of a ragged level, and none below an unstored parent of a ragged level
/// (its run is empty).
fn inside_runs(shape: &[usize], st: &[usize], storage: &Storage) -> Vec<bool> {
    // Each point of the levels so far: its linear prefix and its storage position, if stored.
    let mut points: Vec<(usize, Option<usize>)> = vec![(0, Some(0))];
    for (d, lb) in storage.levels.iter().enumerate() {
        let mut next = Vec::new();
        for &(lin, pos) in &points {
            match lb {
                LevelBuffers::Dense { size } => {
                    next.extend((0..*size).map(|c| (lin + c * st[d], pos.map(|p| p * size + c))));
                }
                LevelBuffers::Compressed { positions, coordinates } => {
                    for c in 0..shape[d] {
                        let at = pos.and_then(|p| (positions[p]..positions[p + 1]).find(|&k| coordinates[k] == c));
                        next.push((lin + c * st[d], at));
                    }
                }
                LevelBuffers::Singleton { coordinates } => {
                    next.extend((0..shape[d]).map(|c| (lin + c * st[d], pos.filter(|&p| coordinates[p] == c))));
                }
                LevelBuffers::Ragged { offsets } => {
                    if let Some(p) = pos {
                        next.extend((0..offsets[p + 1] - offsets[p]).map(|c| (lin + c * st[d], Some(offsets[p] + c))));
                    }
                }
            }
        }
        points = next;
    }
    let mut inside = vec![false; shape.iter().product()];
    for (lin, _) in points {
        inside[lin] = true;
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::ElemType;
    use strata_ir::{DimName, Extent, Interval, Level, Placement, Scalar};

    fn ty(formats: &[LevelFormat], shape: &[u64]) -> ValueType {
        ValueType {
            levels: formats
                .iter()
                .zip(shape)
                .enumerate()
                .map(|(i, (&format, &n))| Level {
                    name: DimName::new(format!("D{i}")),
                    interval: Interval::from_len(n),
                    format,
                })
                .collect(),
            placement: Placement::HOST,
            element: ElemType::Scalar(Scalar::F64),
            is_tensor: true,
        }
    }

    /// [[0, 2, 0], [0, 0, 0], [5, 0, 7]]: a sparse type stores the non-zeros.
    fn matrix(t: ValueType) -> Tensor {
        let vals = [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 7.0];
        let mut m = Tensor::zeros(&t);
        m.data = Data::Scalars(Column::F64(vals.to_vec()));
        m
    }

    const C: LevelFormat = LevelFormat::COMPRESSED;

    #[test]
    fn csr_buffers_match_scipy() {
        let s = assemble(&matrix(ty(&[LevelFormat::Dense, C], &[3, 3])));
        assert_eq!(s.levels[1], LevelBuffers::Compressed { positions: vec![0, 1, 1, 3], coordinates: vec![1, 0, 2] });
        assert_eq!(s.values, Column::F64(vec![2.0, 5.0, 7.0]));
    }

    #[test]
    fn dcsr_and_coo_buffers() {
        let s = assemble(&matrix(ty(&[C, C], &[3, 3])));
        assert_eq!(s.levels[0], LevelBuffers::Compressed { positions: vec![0, 2], coordinates: vec![0, 2] });
        assert_eq!(s.levels[1], LevelBuffers::Compressed { positions: vec![0, 1, 3], coordinates: vec![1, 0, 2] });
        let coo = [
            LevelFormat::Compressed { unique: false, ordered: true, nnz: Extent::Dynamic },
            LevelFormat::Singleton { unique: true, ordered: true },
        ];
        let s = assemble(&matrix(ty(&coo, &[3, 3])));
        assert_eq!(s.levels[0], LevelBuffers::Compressed { positions: vec![0, 3], coordinates: vec![0, 2, 2] });
        assert_eq!(s.levels[1], LevelBuffers::Singleton { coordinates: vec![1, 0, 2] });
        // Blocks: stored rows keep every column (a dense level below a compressed one).
        let s = assemble(&matrix(ty(&[C, LevelFormat::Dense], &[3, 3])));
        assert_eq!(s.levels[0], LevelBuffers::Compressed { positions: vec![0, 2], coordinates: vec![0, 2] });
        assert_eq!(s.values, Column::F64(vec![0.0, 2.0, 0.0, 5.0, 0.0, 7.0]));
    }

    #[test]
    fn assemble_then_disassemble_is_identity() {
        let coo = [
            LevelFormat::Compressed { unique: false, ordered: true, nnz: Extent::Dynamic },
            LevelFormat::Singleton { unique: true, ordered: true },
        ];
        for f in [vec![LevelFormat::Dense, C], vec![C, C], coo.to_vec()] {
            let t = ty(&f, &[3, 3]);
            let m = matrix(t.clone());
            let st = assemble(&m);
            assert_eq!(st.values.len(), 3, "{f:?} stores the non-zeros");
            assert_eq!(disassemble(&t, &st).expect("valid"), m, "{f:?}");
        }
        // A ragged row is a dense run (zeros included) up to its last present element; the
        // positions past it are absent.
        let t = ty(&[LevelFormat::Dense, LevelFormat::Ragged { total: Extent::Dynamic }], &[3, 3]);
        let mut m = matrix(t.clone());
        m.present = Some(vec![true, true, false, false, false, false, true, true, true]);
        let st = assemble(&m);
        assert_eq!(st.levels[1], LevelBuffers::Ragged { offsets: vec![0, 2, 2, 5] });
        assert_eq!(disassemble(&t, &st).expect("valid"), m);
    }

    #[test]
    fn unstored_entries_are_the_fill_value_and_ragged_ends_are_skips() {
        // CSR with an explicit zero: every entry is present; the stored zero is not kept.
        let t = ty(&[LevelFormat::Dense, C], &[2, 3]);
        let s = Storage {
            levels: vec![
                LevelBuffers::Dense { size: 2 },
                LevelBuffers::Compressed { positions: vec![0, 2, 2], coordinates: vec![0, 2] },
            ],
            values: Column::F64(vec![0.0, 4.0]),
        };
        let m = disassemble(&t, &s).expect("valid");
        assert_eq!(m.present, None);
        assert_eq!(m.data, Data::Scalars(Column::F64(vec![0.0, 0.0, 4.0, 0.0, 0.0, 0.0])));
        assert_eq!(assemble(&m).values, Column::F64(vec![4.0]));
        // Ragged below compressed: an unstored parent has an empty run.
        let t = ty(&[C, LevelFormat::Ragged { total: Extent::Dynamic }], &[3, 2]);
        let s = Storage {
            levels: vec![
                LevelBuffers::Compressed { positions: vec![0, 1], coordinates: vec![1] },
                LevelBuffers::Ragged { offsets: vec![0, 1] },
            ],
            values: Column::F64(vec![3.0]),
        };
        let m = disassemble(&t, &s).expect("valid");
        assert_eq!(m.present, Some(vec![false, false, true, false, false, false]));
    }

    #[test]
    fn restoring_in_other_formats_keeps_the_entries() {
        let coo = [
            LevelFormat::Compressed { unique: false, ordered: true, nnz: Extent::Dynamic },
            LevelFormat::Singleton { unique: true, ordered: true },
        ];
        let csr = [LevelFormat::Dense, C];
        let all = [csr.to_vec(), vec![C, C], coo.to_vec(), vec![C, LevelFormat::Dense]];
        for from in &all {
            for to in &all {
                let m = matrix(ty(from, &[3, 3]));
                let direct = assemble(&Tensor { ty: ty(to, &[3, 3]), ..m.clone() });
                let restored = restore(Cow::Owned(assemble(&m)), &[3, 3], to).into_owned();
                // Blocks store the zeros of their rows: compare the logical values.
                let back = disassemble(&ty(to, &[3, 3]), &restored).expect("valid");
                assert_eq!(back.data, m.data, "{from:?} -> {to:?}");
                if !matches!(from[1], LevelFormat::Dense) {
                    assert_eq!(restored, direct, "{from:?} -> {to:?}");
                }
            }
        }
    }

    #[test]
    fn malformed_buffers_are_rejected() {
        let t = ty(&[LevelFormat::Dense, C], &[3, 3]);
        let s = Storage {
            levels: vec![
                LevelBuffers::Dense { size: 3 },
                LevelBuffers::Compressed { positions: vec![0, 1, 1, 3], coordinates: vec![1, 0, 9] },
            ],
            values: Column::F64(vec![1.0; 3]),
        };
        assert!(disassemble(&t, &s).unwrap_err().0.contains("coordinate 9 outside the extent 3"));
    }
}
