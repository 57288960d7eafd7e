//! One block of rows of a SciPy sparse matrix or a ragged tensor in an `.npz` (the files
//! [`crate::sparse_io`] reads whole), for a rank of a distributed run that holds only those rows.
//!
//! What a rank reads is proportional to its rows, not to the matrix:
//! - **CSR** (SciPy's row format, and the one to use for row partitions): the rows' `indptr`
//!   entries, then their stretch of `indices` and `data`;
//! - **ragged**: the rows' `offsets`, then their stretch of every level below and of `values`;
//! - **CSC** and **COO** are not sorted by rows: the row indices are scanned in chunks and only
//!   the rows' entries kept (memory: the rank's entries, plus CSC's column pointers).
//!
//! An array stored uncompressed in the zip (`scipy.sparse.save_npz(…, compressed=False)`,
//! `numpy.savez`) is read at its byte offset; a deflated one (SciPy's default) is decompressed
//! as a stream up to the stretch, without keeping what precedes it. Entries are then treated as
//! [`crate::sparse_io::read_stored`] treats the whole file (duplicates summed, zeros dropped),
//! so every rank's rows hold what the same rows of the whole matrix hold.

use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

use strata_ir::LevelFormat;

use crate::npy::{read_column, NpyError};
use crate::scalar::Column;
use crate::sparse_io::{entry, offsets_name, open, read_format, read_ints, to_usize, triplet_storage};
use crate::storage::{LevelBuffers, Storage};
use crate::tensor::ValueType;
use crate::value::Stored;

/// Elements decoded per chunk when scanning an array that is not sorted by rows.
const CHUNK: usize = 1 << 16;

/// Reads rows `held.levels[0].interval` (coordinates of the global interval) of the sparse or
/// ragged tensor of type `global` stored in `path`, as a value of type `held`: `global` with
/// its first level's interval cut to those rows (and that level dense).
///
/// # Errors
/// An unreadable file, one that does not hold a matrix of `global`'s shape and dtype, or a type
/// whose rows are not its first level.
pub fn read_stored_rows(path: &Path, name: &str, global: &ValueType, held: &ValueType) -> Result<Stored, NpyError> {
    let unsupported = |what: String| NpyError::Unsupported { name: name.into(), what };
    let scalar = global.element.scalar().ok_or_else(|| unsupported("a sparse tensor of tuples or tensors".into()))?;
    let (Some(g0), Some(h0)) = (global.levels.first(), held.levels.first()) else {
        return Err(unsupported("a distributed sparse scalar".into()));
    };
    let rows = h0.interval;
    if !g0.interval.contains(rows) || held.levels.len() != global.levels.len() {
        return Err(unsupported(format!("rows {rows} of a tensor over {}", g0.interval)));
    }
    // Row offsets within the file's first dimension.
    let lo = (rows.start - g0.interval.start) as usize;
    let range = lo..lo + rows.len() as usize;
    let storage = if crate::storage::has_ragged(&global.levels) {
        ragged_rows(path, name, held, scalar, range)?
    } else {
        matrix_rows(path, name, global, held, scalar, range)?
    };
    Ok(Stored { ty: held.clone(), storage })
}

/// A 1-d array of an `.npz`: its header, and where its data starts in the file when it is
/// stored uncompressed (then it is read at offsets; otherwise as a stream).
struct Member {
    header: npyz::NpyHeader,
    item: usize,
    raw_start: Option<u64>,
}

impl Member {
    fn open(path: &Path, name: &str, array: &str) -> Result<Member, NpyError> {
        let rerr = |source| NpyError::Read { path: path.into(), source };
        let mut a = open(path)?;
        let mut f = entry(&mut a, path, name, array)?;
        let stored = f.compression() == zip::CompressionMethod::Stored;
        let data_start = f.data_start();
        let header = npyz::NpyHeader::from_reader(&mut f).map_err(rerr)?;
        let raw_start = match (stored, data_start) {
            (true, Some(s)) => {
                let mut raw = std::fs::File::open(path).map_err(rerr)?;
                raw.seek(SeekFrom::Start(s)).map_err(rerr)?;
                npyz::NpyHeader::from_reader(&mut raw).map_err(rerr)?;
                Some(raw.stream_position().map_err(rerr)?)
            }
            _ => None,
        };
        let item = match header.dtype() {
            npyz::DType::Plain(ts) => ts.num_bytes(),
            _ => None,
        };
        let item = item.filter(|_| header.shape().len() == 1).ok_or_else(|| NpyError::Mismatch {
            name: name.into(),
            path: path.into(),
            found: format!("array `{array}` of shape {:?}", header.shape()),
            expected: "a 1-d array of plain numbers".into(),
        })?;
        Ok(Member { header, item, raw_start })
    }

    fn len(&self) -> usize {
        self.header.shape()[0] as usize
    }

    /// The raw bytes of elements `range` (checked against the length).
    fn bytes(&self, path: &Path, name: &str, array: &str, range: Range<usize>) -> Result<Vec<u8>, NpyError> {
        if range.end > self.len() || range.start > range.end {
            return Err(NpyError::Mismatch {
                name: name.into(),
                path: path.into(),
                found: format!("array `{array}` of {} elements", self.len()),
                expected: format!("elements {}..{}", range.start, range.end),
            });
        }
        let rerr = |source| NpyError::Read { path: path.into(), source };
        let mut buf = vec![0u8; (range.end - range.start) * self.item];
        if let Some(start) = self.raw_start {
            let mut raw = std::fs::File::open(path).map_err(rerr)?;
            raw.seek(SeekFrom::Start(start + (range.start * self.item) as u64)).map_err(rerr)?;
            raw.read_exact(&mut buf).map_err(rerr)?;
        } else {
            self.stream(path, name, array, |mut r| {
                std::io::copy(&mut (&mut r).take((range.start * self.item) as u64), &mut std::io::sink())?;
                r.read_exact(&mut buf)
            })?;
        }
        Ok(buf)
    }

    /// Runs `f` on a reader positioned at the array's first element (decompressing).
    fn stream<T>(
        &self,
        path: &Path,
        name: &str,
        array: &str,
        f: impl FnOnce(&mut dyn Read) -> std::io::Result<T>,
    ) -> Result<T, NpyError> {
        let rerr = |source| NpyError::Read { path: path.into(), source };
        let mut a = open(path)?;
        let mut z = entry(&mut a, path, name, array)?;
        npyz::NpyHeader::from_reader(&mut z).map_err(rerr)?;
        f(&mut z).map_err(rerr)
    }

    /// `count` elements in `bytes`, framed again as a `.npy` of this array's dtype.
    fn framed(&self, bytes: &[u8], count: usize) -> Result<Vec<u8>, NpyError> {
        use npyz::WriterBuilder;
        let mut out = Vec::with_capacity(128 + bytes.len());
        npyz::WriteOptions::new_header_only()
            .dtype(self.header.dtype())
            .shape(&[count as u64])
            .writer(&mut out)
            .write_header_only()
            .map_err(|e| NpyError::Unsupported { name: String::new(), what: e.to_string() })?;
        out.extend_from_slice(bytes);
        Ok(out)
    }

    /// Elements `range` as integers.
    fn ints(&self, path: &Path, name: &str, array: &str, range: Range<usize>) -> Result<Vec<usize>, NpyError> {
        let n = range.len();
        let framed = self.framed(&self.bytes(path, name, array, range)?, n)?;
        to_usize(&read_ints(framed.as_slice(), path, name, array)?, array, path, name)
    }

    /// Elements `range` as values of `scalar`.
    fn values(
        &self,
        path: &Path,
        name: &str,
        array: &str,
        scalar: strata_ir::Scalar,
        range: Range<usize>,
    ) -> Result<Column, NpyError> {
        let n = range.len();
        let framed = self.framed(&self.bytes(path, name, array, range)?, n)?;
        read_column(framed.as_slice(), name, path, scalar, &[n])
    }

    /// The positions (ascending) of the elements, read as integers chunk by chunk, that `keep`
    /// accepts, with those elements.
    fn select_ints(
        &self,
        path: &Path,
        name: &str,
        array: &str,
        mut keep: impl FnMut(usize, usize) -> bool,
    ) -> Result<(Vec<usize>, Vec<usize>), NpyError> {
        let (mut at, mut picked) = (Vec::new(), Vec::new());
        let n = self.len();
        let mut chunk = vec![0u8; CHUNK * self.item];
        self.stream(path, name, array, |r| {
            let mut start = 0;
            while start < n {
                let count = CHUNK.min(n - start);
                r.read_exact(&mut chunk[..count * self.item])?;
                let framed = self.framed(&chunk[..count * self.item], count).map_err(std::io::Error::other)?;
                let ints = read_ints(framed.as_slice(), path, name, array).map_err(std::io::Error::other)?;
                for (k, &v) in ints.iter().enumerate() {
                    let v = usize::try_from(v).map_err(|_| std::io::Error::other(format!("negative `{array}`")))?;
                    if keep(start + k, v) {
                        at.push(start + k);
                        picked.push(v);
                    }
                }
                start += count;
            }
            Ok(())
        })?;
        Ok((at, picked))
    }

    /// The raw bytes of the elements at `positions` (ascending), streamed chunk by chunk.
    fn pick_bytes(&self, path: &Path, name: &str, array: &str, positions: &[usize]) -> Result<Vec<u8>, NpyError> {
        if positions.last().is_some_and(|&p| p >= self.len()) {
            return Err(NpyError::Mismatch {
                name: name.into(),
                path: path.into(),
                found: format!("array `{array}` of {} elements", self.len()),
                expected: format!("at least {}", positions.last().map_or(0, |p| p + 1)),
            });
        }
        let mut out = Vec::with_capacity(positions.len() * self.item);
        let mut chunk = vec![0u8; CHUNK * self.item];
        let item = self.item;
        self.stream(path, name, array, |r| {
            let (mut start, mut next) = (0, 0);
            while next < positions.len() {
                let count = CHUNK.min(self.len() - start);
                r.read_exact(&mut chunk[..count * item])?;
                while next < positions.len() && positions[next] < start + count {
                    let k = positions[next] - start;
                    out.extend_from_slice(&chunk[k * item..(k + 1) * item]);
                    next += 1;
                }
                start += count;
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// The storage of rows `range` of a sparse matrix file, in `held`'s formats.
fn matrix_rows(
    path: &Path,
    name: &str,
    global: &ValueType,
    held: &ValueType,
    scalar: strata_ir::Scalar,
    range: Range<usize>,
) -> Result<Storage, NpyError> {
    let mismatch =
        |found: String, expected: String| NpyError::Mismatch { name: name.into(), path: path.into(), found, expected };
    let shape = global.shape();
    let [rows, cols] = shape[..] else {
        return Err(NpyError::Unsupported {
            name: name.into(),
            what: format!("a sparse tensor of rank {}", shape.len()),
        });
    };
    let mut a = open(path)?;
    let format = read_format(entry(&mut a, path, name, "format")?, path)?;
    let file_shape = read_ints(entry(&mut a, path, name, "shape")?, path, name, "shape")?;
    drop(a);
    if file_shape != [rows as i64, cols as i64] {
        return Err(mismatch(
            format!("a {format} matrix of shape {file_shape:?}"),
            format!("shape {:?}", [rows, cols]),
        ));
    }
    let lo = range.start;
    let (r, c, data) = match format.as_str() {
        "csr" => {
            let indptr = Member::open(path, name, "indptr")?;
            if indptr.len() != rows + 1 {
                return Err(mismatch(
                    format!("a csr index pointer of {} entries", indptr.len()),
                    format!("{}", rows + 1),
                ));
            }
            let ptr = indptr.ints(path, name, "indptr", range.start..range.end + 1)?;
            if ptr.windows(2).any(|w| w[0] > w[1]) {
                return Err(mismatch("an inconsistent csr index pointer".into(), "non-decreasing entries".into()));
            }
            let span = ptr[0]..*ptr.last().expect("at least one entry");
            let c = Member::open(path, name, "indices")?.ints(path, name, "indices", span.clone())?;
            let data = Member::open(path, name, "data")?.values(path, name, "data", scalar, span)?;
            let mut r = Vec::with_capacity(c.len());
            for (k, w) in ptr.windows(2).enumerate() {
                r.extend(std::iter::repeat_n(k, w[1] - w[0]));
            }
            (r, c, data)
        }
        "csc" => {
            let ptr = Member::open(path, name, "indptr")?;
            let ptr = ptr.ints(path, name, "indptr", 0..ptr.len())?;
            if ptr.len() != cols + 1 || ptr.windows(2).any(|w| w[0] > w[1]) {
                return Err(mismatch(
                    "an inconsistent csc index pointer".into(),
                    format!("{} non-decreasing entries", cols + 1),
                ));
            }
            let indices = Member::open(path, name, "indices")?;
            let (at, r) = indices.select_ints(path, name, "indices", |_, row| range.contains(&row))?;
            // The column of entry k: the compressed segment holding k.
            let c: Vec<usize> = at.iter().map(|&k| ptr.partition_point(|&p| p <= k).saturating_sub(1)).collect();
            let data = picked_values(path, name, "data", scalar, &at)?;
            (r.into_iter().map(|x| x - lo).collect(), c, data)
        }
        "coo" => {
            let (at, r) =
                Member::open(path, name, "row")?.select_ints(path, name, "row", |_, row| range.contains(&row))?;
            let col = Member::open(path, name, "col")?;
            let c = col.framed(&col.pick_bytes(path, name, "col", &at)?, at.len())?;
            let c = to_usize(&read_ints(c.as_slice(), path, name, "col")?, "col", path, name)?;
            let data = picked_values(path, name, "data", scalar, &at)?;
            (r.into_iter().map(|x| x - lo).collect(), c, data)
        }
        other => return Err(mismatch(format!("SciPy format `{other}`"), "csr, csc or coo".into())),
    };
    if r.len() != c.len() || data.len() != c.len() {
        return Err(mismatch("index and data arrays of different lengths".into(), "one entry each".into()));
    }
    triplet_storage(held, (range.len(), cols), r, c, data)
        .map_err(|found| mismatch(found, format!("entries inside {rows}×{cols}")))
}

/// The values at `positions` (ascending) of the array `array`.
fn picked_values(
    path: &Path,
    name: &str,
    array: &str,
    scalar: strata_ir::Scalar,
    positions: &[usize],
) -> Result<Column, NpyError> {
    let m = Member::open(path, name, array)?;
    let framed = m.framed(&m.pick_bytes(path, name, array, positions)?, positions.len())?;
    read_column(framed.as_slice(), name, path, scalar, &[positions.len()])
}

/// The storage of rows `range` of a ragged tensor file (levels dense or ragged), in `held`'s
/// formats: each level's stretch under those rows, offsets rebased to start at 0.
fn ragged_rows(
    path: &Path,
    name: &str,
    held: &ValueType,
    scalar: strata_ir::Scalar,
    range: Range<usize>,
) -> Result<Storage, NpyError> {
    let mut levels = vec![LevelBuffers::Dense { size: range.len() }];
    // The positions of the level above, in the file's numbering.
    let mut span = range;
    let mut k = 0;
    for l in &held.levels[1..] {
        match l.format {
            LevelFormat::Dense | LevelFormat::Block => {
                let size = l.interval.len() as usize;
                span = span.start * size..span.end * size;
                levels.push(LevelBuffers::Dense { size });
            }
            LevelFormat::Ragged { .. } => {
                let array = offsets_name(k);
                k += 1;
                let offsets = Member::open(path, name, &array)?.ints(path, name, &array, span.start..span.end + 1)?;
                if offsets.windows(2).any(|w| w[0] > w[1]) {
                    return Err(NpyError::Mismatch {
                        name: name.into(),
                        path: path.into(),
                        found: format!("`{array}` decreasing"),
                        expected: "non-decreasing offsets".into(),
                    });
                }
                let base = offsets[0];
                span = base..*offsets.last().expect("at least one offset");
                levels.push(LevelBuffers::Ragged { offsets: offsets.into_iter().map(|o| o - base).collect() });
            }
            _ => {
                return Err(NpyError::Unsupported {
                    name: name.into(),
                    what: "a ragged tensor with sparse levels".into(),
                })
            }
        }
    }
    let values = Member::open(path, name, "values")?.values(path, name, "values", scalar, span)?;
    Ok(Storage { levels, values })
}
