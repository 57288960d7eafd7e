//! SciPy sparse matrices (`scipy.sparse.save_npz` / `load_npz`) and ragged tensors in `.npz`.
//!
//! Reading accepts SciPy's CSR, CSC and COO files for any sparse tensor type: the file holds the
//! matrix whose rows are the tensor's level 0 and columns its level 1, whatever the SciPy
//! format; its stored entries give the tensor's values there (duplicates add up, as in SciPy)
//! and every other entry is the fill value, zero. The level formats of the type only decide
//! how the tensor is stored afterwards. Writing stores the entries that differ from zero
//! (`storage::assemble`), so a computed result has SciPy's canonical pattern: the one SciPy's
//! own operations produce, which drop the zeros they compute. Writing picks the SciPy
//! format from the type: `[dense, compressed]` levels as CSR with shape (level 0, level 1),
//! everything else as COO. A 1-d sparse tensor is a COO matrix of shape `(1, n)`.
//!
//! Ragged tensors (dense and ragged levels, e.g. `[dense, ragged]` or `[dense, ragged,
//! ragged]`) use one offsets array per ragged level — `offsets` for the outermost, then
//! `offsets_1`, `offsets_2`, … — with one entry per position of the levels above plus one
//! (int64, starting at 0), and `values`: every element inside the runs, in row-major order.

use std::io::{BufReader, Read};
use std::path::Path;

use strata_ir::LevelFormat;

use crate::npy::{read_column, write_atomically, write_column, NpyError};
use crate::scalar::Column;
use crate::storage::{assemble_entries, entries, Entries, LevelBuffers, Storage};
use crate::tensor::{Data, Tensor, ValueType};
use crate::value::Stored;

pub(crate) type Archive = zip::ZipArchive<BufReader<std::fs::File>>;

pub(crate) fn open(path: &Path) -> Result<Archive, NpyError> {
    let rerr = |source| NpyError::Read { path: path.into(), source };
    let file = std::fs::File::open(path).map_err(rerr)?;
    zip::ZipArchive::new(BufReader::new(file)).map_err(|e| rerr(std::io::Error::other(e)))
}

pub(crate) fn entry<'a>(
    a: &'a mut Archive,
    path: &Path,
    name: &str,
    array: &str,
) -> Result<zip::read::ZipFile<'a, BufReader<std::fs::File>>, NpyError> {
    a.by_name(&format!("{array}.npy")).map_err(|_| NpyError::Mismatch {
        name: name.into(),
        path: path.into(),
        found: format!("no array `{array}`"),
        expected: "a SciPy sparse matrix (scipy.sparse.save_npz) or Strata's ragged layout".into(),
    })
}

/// Reads an integer array of any integer dtype.
pub(crate) fn read_ints<R: Read>(r: R, path: &Path, name: &str, array: &str) -> Result<Vec<i64>, NpyError> {
    let rerr = |source| NpyError::Read { path: path.into(), source };
    let npy = npyz::NpyFile::new(r).map_err(rerr)?;
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => format!("{other:?}"),
    };
    let body = descr.trim_start_matches(['<', '>', '|', '=']).to_string();
    Ok(match body.as_str() {
        "i4" => npy.into_vec::<i32>().map_err(rerr)?.into_iter().map(i64::from).collect(),
        "i8" => npy.into_vec::<i64>().map_err(rerr)?,
        "u4" => npy.into_vec::<u32>().map_err(rerr)?.into_iter().map(i64::from).collect(),
        "u8" => npy.into_vec::<u64>().map_err(rerr)?.into_iter().map(|v| v as i64).collect(),
        _ => {
            return Err(NpyError::Mismatch {
                name: name.into(),
                path: path.into(),
                found: format!("array `{array}` of dtype {descr}"),
                expected: "integer indices".into(),
            })
        }
    })
}

pub(crate) fn read_format<R: Read>(r: R, path: &Path) -> Result<String, NpyError> {
    let rerr = |source| NpyError::Read { path: path.into(), source };
    let npy = npyz::NpyFile::new(r).map_err(rerr)?;
    let v: Vec<Vec<u8>> = npy.into_vec::<Vec<u8>>().map_err(rerr)?;
    Ok(v.first().map(|b| String::from_utf8_lossy(b).trim_end_matches('\0').to_string()).unwrap_or_default())
}

pub(crate) fn to_usize(v: &[i64], what: &str, path: &Path, name: &str) -> Result<Vec<usize>, NpyError> {
    v.iter().map(|&x| usize::try_from(x)).collect::<Result<_, _>>().map_err(|_| NpyError::Mismatch {
        name: name.into(),
        path: path.into(),
        found: format!("negative {what}"),
        expected: "non-negative indices".into(),
    })
}

/// Reads a sparse or ragged tensor of type `ty` (its logical view; see [`read_stored`]).
pub fn read_sparse(path: &Path, name: &str, ty: &ValueType) -> Result<Tensor, NpyError> {
    let stored = read_stored(path, name, ty)?;
    stored
        .to_tensor()
        .map_err(|e| NpyError::Unsupported { name: name.into(), what: format!("this value in the interpreter: {e}") })
}

/// Reads a sparse or ragged tensor of type `ty` as its storage in the type's formats, without
/// a dense view: the file's entries (duplicates summed, zeros dropped for a sparse type) sorted
/// row-major and stored level by level.
pub fn read_stored(path: &Path, name: &str, ty: &ValueType) -> Result<Stored, NpyError> {
    let scalar = ty.element.scalar().ok_or_else(|| NpyError::Unsupported {
        name: name.into(),
        what: "a sparse tensor of tuples or tensors".into(),
    })?;
    let mut a = open(path)?;
    let shape = ty.shape();
    let mismatch =
        |found: String, expected: String| NpyError::Mismatch { name: name.into(), path: path.into(), found, expected };
    let ragged = crate::storage::has_ragged(&ty.levels);
    let storage = if ragged {
        ragged_storage(&mut a, path, name, ty, scalar)?
    } else {
        let format = read_format(entry(&mut a, path, name, "format")?, path)?;
        let file_shape = read_ints(entry(&mut a, path, name, "shape")?, path, name, "shape")?;
        let (rows, cols) = match shape.as_slice() {
            [n] => (1, *n),
            [m, n] => (*m, *n),
            _ => {
                return Err(NpyError::Unsupported {
                    name: name.into(),
                    what: format!("a sparse tensor of rank {}", shape.len()),
                })
            }
        };
        let want = |r: usize, c: usize| vec![r as i64, c as i64];
        let expect_shape = |s: Vec<i64>| -> Result<(), NpyError> {
            if file_shape != s {
                return Err(mismatch(format!("a {format} matrix of shape {file_shape:?}"), format!("shape {s:?}")));
            }
            Ok(())
        };
        let nnz_data = |a: &mut Archive, n: usize| read_column(entry(a, path, name, "data")?, name, path, scalar, &[n]);
        match format.as_str() {
            "csr" | "csc" => {
                let indptr = to_usize(
                    &read_ints(entry(&mut a, path, name, "indptr")?, path, name, "indptr")?,
                    "indptr",
                    path,
                    name,
                )?;
                let indices = to_usize(
                    &read_ints(entry(&mut a, path, name, "indices")?, path, name, "indices")?,
                    "indices",
                    path,
                    name,
                )?;
                let data = nnz_data(&mut a, indices.len())?;
                expect_shape(want(rows, cols))?;
                // CSR compresses rows, CSC columns: either way, list the (row, col) pairs.
                let outer = if format == "csr" { rows } else { cols };
                let consistent = indptr.len() == outer + 1
                    && indptr.first() == Some(&0)
                    && indptr.last() == Some(&indices.len())
                    && indptr.windows(2).all(|w| w[0] <= w[1]);
                if !consistent {
                    return Err(mismatch(
                        format!("an inconsistent {format} index pointer"),
                        format!("{} non-decreasing entries from 0 to nnz", outer + 1),
                    ));
                }
                let mut major = Vec::with_capacity(indices.len());
                for o in 0..outer {
                    major.extend(std::iter::repeat_n(o, indptr[o + 1] - indptr[o]));
                }
                let (r, c) = if format == "csr" { (major, indices) } else { (indices, major) };
                triplet_storage(ty, (rows, cols), r, c, data)
                    .map_err(|found| mismatch(found, format!("entries inside {rows}×{cols}")))?
            }
            "coo" => {
                expect_shape(want(rows, cols))?;
                let r = to_usize(&read_ints(entry(&mut a, path, name, "row")?, path, name, "row")?, "row", path, name)?;
                let c = to_usize(&read_ints(entry(&mut a, path, name, "col")?, path, name, "col")?, "col", path, name)?;
                let data = nnz_data(&mut a, r.len())?;
                triplet_storage(ty, (rows, cols), r, c, data)
                    .map_err(|found| mismatch(found, format!("entries inside {rows}×{cols}")))?
            }
            other => return Err(mismatch(format!("SciPy format `{other}`"), "csr, csc or coo".into())),
        }
    };
    crate::storage::validate(&shape, &storage).map_err(|e| {
        mismatch(
            format!("malformed {} storage ({e})", if ragged { "ragged" } else { "sparse" }),
            "well-formed storage".into(),
        )
    })?;
    Ok(Stored { ty: ty.clone(), storage })
}

/// The `.npz` array holding the offsets of the `k`-th ragged level (outermost first):
/// `offsets`, then `offsets_1`, `offsets_2`, ….
pub(crate) fn offsets_name(k: usize) -> String {
    if k == 0 {
        "offsets".into()
    } else {
        format!("offsets_{k}")
    }
}

/// Reads the storage of a ragged tensor whose levels are dense or ragged: one offsets array per
/// ragged level ([`offsets_name`]) with one entry per position of the levels above plus one,
/// and the values of every element inside the runs, in row-major order.
fn ragged_storage(
    a: &mut Archive,
    path: &Path,
    name: &str,
    ty: &ValueType,
    scalar: strata_ir::Scalar,
) -> Result<Storage, NpyError> {
    let mismatch =
        |found: String, expected: String| NpyError::Mismatch { name: name.into(), path: path.into(), found, expected };
    let (levels, count) = ragged_levels(ty, |array| {
        to_usize(&read_ints(entry(a, path, name, array)?, path, name, array)?, array, path, name)
    })
    .map_err(|e| match e {
        RaggedError::Read(e) => e,
        RaggedError::Offsets { found, expected } => mismatch(found, expected),
        RaggedError::Sparse => {
            NpyError::Unsupported { name: name.into(), what: "a ragged tensor with sparse levels".into() }
        }
    })?;
    let values = read_column(entry(a, path, name, "values")?, name, path, scalar, &[count])?;
    Ok(Storage { levels, values })
}

/// Why the levels of a ragged tensor could not be built.
enum RaggedError<E> {
    /// An offsets array could not be had.
    Read(E),
    /// An offsets array is inconsistent.
    Offsets { found: String, expected: String },
    /// A level is sparse.
    Sparse,
}

/// The level buffers of a ragged tensor of type `ty` (dense and ragged levels), with the
/// offsets array of each ragged level from `offsets(name)` ([`offsets_name`]) checked, and the
/// number of values they hold.
fn ragged_levels<E>(
    ty: &ValueType,
    mut offsets: impl FnMut(&str) -> Result<Vec<usize>, E>,
) -> Result<(Vec<LevelBuffers>, usize), RaggedError<E>> {
    let mut levels = Vec::new();
    // Positions of the levels read so far (the parents of the next level).
    let mut parents = 1usize;
    let mut k = 0;
    for l in &ty.levels {
        match l.format {
            LevelFormat::Dense | LevelFormat::Block => {
                let size = l.interval.len() as usize;
                parents = parents.checked_mul(size).ok_or_else(|| RaggedError::Offsets {
                    found: "too many elements".into(),
                    expected: "fewer".into(),
                })?;
                levels.push(LevelBuffers::Dense { size });
            }
            LevelFormat::Ragged { .. } => {
                let array = offsets_name(k);
                k += 1;
                let offsets = offsets(&array).map_err(RaggedError::Read)?;
                if offsets.len() != parents + 1
                    || offsets.first() != Some(&0)
                    || offsets.windows(2).any(|w| w[0] > w[1])
                {
                    return Err(RaggedError::Offsets {
                        found: format!("`{array}` of {} entries (starting {:?})", offsets.len(), offsets.first()),
                        expected: format!(
                            "{} non-decreasing offsets from 0 (one per position of the levels above `{}`, plus one)",
                            parents + 1,
                            l.name
                        ),
                    });
                }
                parents = *offsets.last().expect("at least one offset");
                levels.push(LevelBuffers::Ragged { offsets });
            }
            _ => return Err(RaggedError::Sparse),
        }
    }
    Ok((levels, parents))
}

/// A ragged tensor of type `ty` from its offsets arrays (by name: `offsets`, `offsets_1`, …)
/// and its values, checked as when read from a file (what the Python package passes).
///
/// # Errors
/// A missing or inconsistent offsets array, a value count that differs from the offsets', or
/// a sparse level.
pub fn stored_from_ragged(
    ty: &ValueType,
    mut arrays: impl FnMut(&str) -> Option<Vec<usize>>,
    values: Column,
) -> Result<Stored, String> {
    let (levels, count) =
        ragged_levels(ty, |a| arrays(a).ok_or_else(|| format!("no offsets array `{a}`"))).map_err(|e| match e {
            RaggedError::Read(m) => m,
            RaggedError::Offsets { found, expected } => format!("{found}, but the type needs {expected}"),
            RaggedError::Sparse => "a ragged tensor with sparse levels is not supported".into(),
        })?;
    if values.len() != count {
        return Err(format!("{} values, but the offsets hold {count}", values.len()));
    }
    Ok(Stored { ty: ty.clone(), storage: Storage { levels, values } })
}

/// A sparse tensor of type `ty` (a matrix, or a vector as one row) from its entries
/// `(rows[k], cols[k], data[k])` in any order: duplicates summed, zeros dropped, as when read
/// from a file (what the Python package passes for a SciPy matrix).
///
/// # Errors
/// An entry outside the shape, or arrays of different lengths.
pub fn stored_from_entries(ty: &ValueType, rows: Vec<usize>, cols: Vec<usize>, data: Column) -> Result<Stored, String> {
    let shape = ty.shape();
    let (m, n) = match shape.as_slice() {
        [n] => (1, *n),
        [m, n] => (*m, *n),
        _ => return Err(format!("a sparse tensor of rank {}", shape.len())),
    };
    if rows.len() != cols.len() || data.len() != cols.len() {
        return Err(format!("{} rows, {} columns and {} values", rows.len(), cols.len(), data.len()));
    }
    let storage = triplet_storage(ty, (m, n), rows, cols, data).map_err(|e| format!("{e} of shape ({m}, {n})"))?;
    Ok(Stored { ty: ty.clone(), storage })
}

/// Storage in `ty`'s formats of the matrix (`rows` × `cols`; a vector is one row) with entries
/// `(r[k], c[k], data[k])`: sorted row-major (stably, so duplicates add up in file order, as
/// in SciPy), duplicates summed, zeros dropped. Err names an entry outside the shape.
pub(crate) fn triplet_storage(
    ty: &ValueType,
    (rows, cols): (usize, usize),
    r: Vec<usize>,
    c: Vec<usize>,
    data: Column,
) -> Result<Storage, String> {
    if let Some(k) = (0..r.len()).find(|&k| r[k] >= rows || c[k] >= cols) {
        return Err(format!("entry ({}, {}) outside the matrix", r[k], c[k]));
    }
    let sorted = (1..r.len()).all(|k| (r[k - 1], c[k - 1]) < (r[k], c[k]));
    let order: Vec<usize> = if sorted {
        (0..r.len()).collect()
    } else {
        let mut o: Vec<usize> = (0..r.len()).collect();
        o.sort_by_key(|&k| (r[k], c[k]));
        o
    };
    let vector = ty.levels.len() == 1;
    let rank = if vector { 1 } else { 2 };
    let mut coords = Vec::with_capacity(order.len() * rank);
    let mut keep: Vec<usize> = Vec::with_capacity(order.len());
    let mut values = data.select(&order);
    let mut at = 0;
    while at < order.len() {
        let (kr, kc) = (r[order[at]], c[order[at]]);
        let mut v = values.get(at);
        let mut next = at + 1;
        while next < order.len() && (r[order[next]], c[order[next]]) == (kr, kc) {
            v = v.binary(strata_ir::BinaryOp::Plus, values.get(next)).unwrap_or(v);
            next += 1;
        }
        if !v.is_zero() {
            if next > at + 1 {
                values.set(at, v);
            }
            keep.push(at);
            if !vector {
                coords.push(kr);
            }
            coords.push(kc);
        }
        at = next;
    }
    if keep.len() != values.len() {
        values = values.select(&keep);
    }
    let entries = Entries { rank, coords, values };
    let formats: Vec<LevelFormat> = ty.levels.iter().map(|l| l.format).collect();
    Ok(assemble_entries(&ty.shape(), &formats, &entries))
}

/// Writes a sparse or ragged tensor (see the module docs for the formats).
pub fn write_sparse(path: &Path, name: &str, t: &Tensor) -> Result<(), NpyError> {
    if !matches!(t.data, Data::Scalars(_)) {
        return Err(NpyError::Unsupported { name: name.into(), what: "a sparse tensor of tuples or tensors".into() });
    }
    write_stored(path, name, &Stored::from_tensor(t))
}

/// Writes a sparse or ragged tensor held as storage (in its type's formats).
pub fn write_stored(path: &Path, name: &str, t: &Stored) -> Result<(), NpyError> {
    let shape = t.ty.shape();
    let formats: Vec<LevelFormat> = t.ty.levels.iter().map(|l| l.format).collect();
    let mut arrays: Vec<(String, Column, Vec<u64>)> = Vec::new();
    let mut format = None;
    match formats.as_slice() {
        _ if crate::storage::has_ragged(&t.ty.levels) => {
            if !formats
                .iter()
                .all(|f| matches!(f, LevelFormat::Dense | LevelFormat::Block | LevelFormat::Ragged { .. }))
            {
                return Err(NpyError::Unsupported {
                    name: name.into(),
                    what: "a ragged tensor with sparse levels".into(),
                });
            }
            let s = &t.storage;
            let mut k = 0;
            for lb in &s.levels {
                if let LevelBuffers::Ragged { offsets } = lb {
                    let col = Column::I64(offsets.iter().map(|&o| o as i64).collect());
                    arrays.push((offsets_name(k), col, vec![offsets.len() as u64]));
                    k += 1;
                }
            }
            arrays.push(("values".into(), s.values.clone(), vec![s.values.len() as u64]));
        }
        _ if shape.len() > 2 => {
            return Err(NpyError::Unsupported { name: name.into(), what: "this sparse or ragged layout".into() })
        }
        [LevelFormat::Dense | LevelFormat::Block, LevelFormat::Compressed { .. }] => {
            let s = &t.storage;
            let LevelBuffers::Compressed { positions, coordinates } = &s.levels[1] else {
                unreachable!("storage in the type's formats")
            };
            format = Some("csr");
            arrays.push((
                "indptr".into(),
                Column::I64(positions.iter().map(|&o| o as i64).collect()),
                vec![positions.len() as u64],
            ));
            arrays.push((
                "indices".into(),
                Column::I64(coordinates.iter().map(|&o| o as i64).collect()),
                vec![coordinates.len() as u64],
            ));
            arrays.push(("data".into(), s.values.clone(), vec![s.values.len() as u64]));
            arrays.push(("shape".into(), Column::I64(vec![shape[0] as i64, shape[1] as i64]), vec![2]));
        }
        _ => {
            // The stored entries that differ from zero (a dense level below a stored one
            // stores zeros too), row-major.
            let e = entries(&t.storage);
            let nonzero: Vec<usize> = (0..e.len()).filter(|&k| !e.values.get(k).is_zero()).collect();
            let coord = |k: usize, d: usize| e.coords[k * e.rank + d];
            let vector = shape.len() == 1;
            let r: Vec<usize> = nonzero.iter().map(|&k| if vector { 0 } else { coord(k, 0) }).collect();
            let c: Vec<usize> = nonzero.iter().map(|&k| coord(k, e.rank - 1)).collect();
            let values = e.values.select(&nonzero);
            let s = Storage { levels: Vec::new(), values };
            let (rows, cols) = if vector { (1, shape[0]) } else { (shape[0], shape[1]) };
            format = Some("coo");
            arrays.push(("row".into(), Column::I64(r.iter().map(|&o| o as i64).collect()), vec![r.len() as u64]));
            arrays.push(("col".into(), Column::I64(c.iter().map(|&o| o as i64).collect()), vec![c.len() as u64]));
            arrays.push(("data".into(), s.values.clone(), vec![s.values.len() as u64]));
            arrays.push(("shape".into(), Column::I64(vec![rows as i64, cols as i64]), vec![2]));
        }
    }
    write_atomically(path, |w| {
        let mut zip = zip::ZipWriter::new(w);
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (n, col, shape) in &arrays {
            zip.start_file(format!("{n}.npy"), opts).map_err(std::io::Error::other)?;
            let mut buf = Vec::new();
            write_column(&mut buf, col, shape)?;
            std::io::Write::write_all(&mut zip, &buf)?;
        }
        if let Some(f) = format {
            zip.start_file("format.npy", opts).map_err(std::io::Error::other)?;
            let mut buf = Vec::new();
            write_bytes_scalar(&mut buf, f.as_bytes())?;
            std::io::Write::write_all(&mut zip, &buf)?;
        }
        let mut inner = zip.finish().map_err(std::io::Error::other)?;
        std::io::Write::flush(&mut inner)
    })
}

/// A 0-d `|S<n>` array, as SciPy stores its `format` entry.
fn write_bytes_scalar<W: std::io::Write>(w: W, bytes: &[u8]) -> std::io::Result<()> {
    let dtype = npyz::DType::Plain(format!("|S{}", bytes.len()).parse().map_err(std::io::Error::other)?);
    use npyz::WriterBuilder;
    let mut npy = npyz::WriteOptions::<[u8]>::new().dtype(dtype).shape(&[]).writer(w).begin_nd()?;
    npy.push(bytes)?;
    npy.finish()
}
