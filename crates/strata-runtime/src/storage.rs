//! Compiler-visible storage of sparse and ragged tensors, level by level (the TACO / MLIR
//! sparse-tensor model): a dense level stores nothing but its size; a compressed level stores
//! `positions` (one range per parent position) and `coordinates`; a singleton level stores one
//! coordinate per parent entry; a ragged level stores `offsets` (a run per parent position, the
//! coordinates being implicit `0, 1, …`). Values sit at the leaves.
//!
//! [`assemble`] builds the buffers from a logical tensor (stored entries = present elements),
//! [`disassemble`] turns buffers back into the logical view. CSR is `[dense, compressed]`, CSC
//! the same over `(Col, Row)`, DCSR `[compressed, compressed]`, COO
//! `[compressed(nonunique), singleton]`.

use strata_ir::LevelFormat;

use crate::scalar::Column;
use crate::tensor::{strides, Data, Tensor, ValueType};

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

/// Builds the storage of `t` for its type's level formats. The stored entries are the present
/// elements (a dense level below a compressed one stores its zeros too, as in DCSR blocks).
pub fn assemble(t: &Tensor) -> Storage {
    let formats: Vec<LevelFormat> = t.ty.levels.iter().map(|l| l.format).collect();
    assemble_as(t, &formats)
}

/// [`assemble`] with other level formats than `t`'s type has, one per level (a backend's
/// choice of storage for the same stored entries).
pub fn assemble_as(t: &Tensor, formats: &[LevelFormat]) -> Storage {
    let shape = t.ty.shape();
    let st = strides(&shape);
    let Data::Scalars(col) = &t.data else { panic!("storage holds scalar elements") };
    // Every present element as its coordinate vector, in row-major order.
    let entries: Vec<Vec<usize>> = (0..t.len())
        .filter(|&i| t.is_present(i))
        .map(|i| shape.iter().enumerate().map(|(d, _)| (i / st[d]) % shape[d].max(1)).collect())
        .collect();
    // A segment is the range of entries below one position of the current level: entries are
    // in row-major order, so those sharing a prefix are contiguous and sorted by the next
    // coordinate, and every level is built in one pass over its segments.
    let mut segments: Vec<std::ops::Range<usize>> = std::iter::once(0..entries.len()).collect();
    let mut leaf_linear: Vec<Option<usize>> = vec![Some(0)];
    let mut levels = Vec::new();
    // The sub-ranges of `seg` holding coordinate `0, 1, …, n - 1` at level `d`.
    let runs = |seg: &std::ops::Range<usize>, d: usize, n: usize| {
        let mut at = seg.start;
        (0..n)
            .map(|c| {
                let from = at;
                while at < seg.end && entries[at][d] == c {
                    at += 1;
                }
                from..at
            })
            .collect::<Vec<_>>()
    };
    for (d, &format) in formats.iter().enumerate() {
        let mut next_segments = Vec::new();
        let mut next_linear = Vec::new();
        match format {
            LevelFormat::Dense | LevelFormat::Block => {
                for (seg, lin) in segments.iter().zip(&leaf_linear) {
                    for (c, run) in runs(seg, d, shape[d]).into_iter().enumerate() {
                        next_segments.push(run);
                        next_linear.push(lin.map(|x| x + c * st[d]));
                    }
                }
                levels.push(LevelBuffers::Dense { size: shape[d] });
            }
            LevelFormat::Compressed { unique, .. } => {
                let mut positions = vec![0];
                let mut coordinates = Vec::new();
                for seg in &segments {
                    let mut at = seg.start;
                    while at < seg.end {
                        let c = entries[at][d];
                        let from = at;
                        at += 1;
                        while unique && at < seg.end && entries[at][d] == c {
                            at += 1;
                        }
                        coordinates.push(c);
                        next_segments.push(from..at);
                    }
                    positions.push(coordinates.len());
                }
                next_linear = next_segments.iter().map(|s| prefix_linear(s, d, &entries, &st)).collect();
                levels.push(LevelBuffers::Compressed { positions, coordinates });
            }
            LevelFormat::Singleton { .. } => {
                let mut coordinates = Vec::new();
                for seg in &segments {
                    coordinates.push(entries.get(seg.start).filter(|_| !seg.is_empty()).map_or(0, |x| x[d]));
                    next_segments.push(seg.clone());
                }
                next_linear = next_segments.iter().map(|s| prefix_linear(s, d, &entries, &st)).collect();
                levels.push(LevelBuffers::Singleton { coordinates });
            }
            LevelFormat::Ragged { .. } => {
                let mut offsets = vec![0];
                for (seg, lin) in segments.iter().zip(&leaf_linear) {
                    // Sorted within the segment: the last entry has the largest coordinate.
                    let len = if seg.is_empty() { 0 } else { entries[seg.end - 1][d] + 1 };
                    for (c, run) in runs(seg, d, len).into_iter().enumerate() {
                        next_segments.push(run);
                        next_linear.push(lin.map(|x| x + c * st[d]));
                    }
                    offsets.push(offsets.last().copied().unwrap_or(0) + len);
                }
                levels.push(LevelBuffers::Ragged { offsets });
            }
        }
        segments = next_segments;
        leaf_linear = next_linear;
    }
    let values = Column::from_fn(col.scalar(), leaf_linear.len(), |k| match leaf_linear[k] {
        Some(i) => col.get(i),
        None => crate::Sv::zero(col.scalar()),
    });
    Storage { levels, values }
}

/// The linear offset of a segment's coordinates up to level `d` (the prefix its entries
/// share; `None` for an empty segment).
fn prefix_linear(seg: &std::ops::Range<usize>, d: usize, entries: &[Vec<usize>], st: &[usize]) -> Option<usize> {
    (!seg.is_empty()).then(|| linear(&entries[seg.start][..=d], &st[..=d]))
}

fn linear(coord: &[usize], st: &[usize]) -> usize {
    coord.iter().zip(st).map(|(c, s)| c * s).sum()
}

/// Why storage buffers do not describe a tensor of the expected type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StorageError(pub String);

/// The logical tensor of type `ty` described by `storage`: stored entries are present, the rest
/// absent (and zero).
pub fn disassemble(ty: &ValueType, storage: &Storage) -> Result<Tensor, StorageError> {
    let shape = ty.shape();
    let st = strides(&shape);
    if storage.levels.len() != shape.len() {
        return Err(StorageError(format!(
            "{} storage levels for a tensor of rank {}",
            storage.levels.len(),
            shape.len()
        )));
    }
    // Each position of the current level: the linear offset of its prefix.
    let mut prefixes: Vec<usize> = vec![0];
    for (d, lb) in storage.levels.iter().enumerate() {
        let mut next = Vec::new();
        let bad = |what: String| StorageError(format!("level {d}: {what}"));
        match lb {
            LevelBuffers::Dense { size } => {
                if *size != shape[d] {
                    return Err(bad(format!("dense size {size}, expected {}", shape[d])));
                }
                for &p in &prefixes {
                    next.extend((0..*size).map(|c| p + c * st[d]));
                }
            }
            LevelBuffers::Compressed { positions, coordinates } => {
                if positions.len() != prefixes.len() + 1 || positions.last() != Some(&coordinates.len()) {
                    return Err(bad(format!(
                        "{} positions for {} parents and {} coordinates",
                        positions.len(),
                        prefixes.len(),
                        coordinates.len()
                    )));
                }
                for (k, &p) in prefixes.iter().enumerate() {
                    let (a, b) = (positions[k], positions[k + 1]);
                    if a > b {
                        return Err(bad("positions decrease".into()));
                    }
                    for &c in &coordinates[a..b] {
                        if c >= shape[d] {
                            return Err(bad(format!("coordinate {c} outside the extent {}", shape[d])));
                        }
                        next.push(p + c * st[d]);
                    }
                }
            }
            LevelBuffers::Singleton { coordinates } => {
                if coordinates.len() != prefixes.len() {
                    return Err(bad(format!("{} coordinates for {} parents", coordinates.len(), prefixes.len())));
                }
                for (&p, &c) in prefixes.iter().zip(coordinates) {
                    if c >= shape[d] {
                        return Err(bad(format!("coordinate {c} outside the extent {}", shape[d])));
                    }
                    next.push(p + c * st[d]);
                }
            }
            LevelBuffers::Ragged { offsets } => {
                if offsets.len() != prefixes.len() + 1 || offsets.first() != Some(&0) {
                    return Err(bad(format!("{} offsets for {} parents", offsets.len(), prefixes.len())));
                }
                for (k, &p) in prefixes.iter().enumerate() {
                    let len = offsets[k + 1].checked_sub(offsets[k]).ok_or_else(|| bad("offsets decrease".into()))?;
                    if len > shape[d] {
                        return Err(bad(format!("a run of {len} exceeds the bound {}", shape[d])));
                    }
                    next.extend((0..len).map(|c| p + c * st[d]));
                }
            }
        }
        prefixes = next;
    }
    if storage.values.len() != prefixes.len() {
        return Err(StorageError(format!("{} values for {} stored entries", storage.values.len(), prefixes.len())));
    }
    let scalar = ty.element.scalar().ok_or_else(|| StorageError("storage holds scalar elements".into()))?;
    let mut t = Tensor::zeros(ty);
    let mut present = vec![false; t.len()];
    if let Data::Scalars(col) = &mut t.data {
        for (k, &i) in prefixes.iter().enumerate() {
            let v = storage.values.get(k);
            // Duplicates (non-unique COO) add up, as in SciPy.
            let v = if present[i] { col.get(i).binary(strata_ir::BinaryOp::Plus, v).unwrap_or(v) } else { v };
            col.set(i, v.cast(scalar));
            present[i] = true;
        }
    }
    t.present = Some(present);
    t.normalize_presence();
    Ok(t)
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

    /// [[0, 2, 0], [0, 0, 0], [5, 0, 7]] with zeros unstored.
    fn matrix(t: ValueType) -> Tensor {
        let vals = [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 7.0];
        let mut m = Tensor::zeros(&t);
        m.data = Data::Scalars(Column::F64(vals.to_vec()));
        m.present = Some(vals.iter().map(|&v| v != 0.0).collect());
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
        for f in [
            vec![LevelFormat::Dense, C],
            vec![C, C],
            coo.to_vec(),
            vec![LevelFormat::Dense, LevelFormat::Ragged { total: Extent::Dynamic }],
        ] {
            let t = ty(&f, &[3, 3]);
            let m = matrix(t.clone());
            let back = disassemble(&t, &assemble(&m)).expect("valid");
            if matches!(f[1], LevelFormat::Ragged { .. }) {
                // A ragged row stores everything up to its last present entry (zeros included).
                assert_eq!(back.present, Some(vec![true, true, false, false, false, false, true, true, true]));
            } else {
                assert_eq!(back, m, "{f:?}");
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
