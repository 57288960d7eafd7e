//! Rows of a block level as raw bytes.
//!
//! A dense tensor of shape `(outer…, rows, inner…)` with its block level at position `level`
//! stores, for each outer index, one contiguous run of `rows × inner` elements; a range of rows
//! is therefore `outer` runs of `len × inner` elements. The functions here copy such ranges
//! between tensors and byte buffers, and between a rank's tensor and its part of a `.npy` file.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use strata_ir::Interval;
use strata_runtime::{Data, Tensor, ValueType};

/// The geometry of a block level in a tensor type.
#[derive(Clone, Copy, Debug)]
pub struct Rows {
    /// The product of the extents before the level.
    pub outer: usize,
    /// The level's interval in this tensor.
    pub interval: Interval,
    /// The product of the extents after the level.
    pub inner: usize,
    /// Bytes per element.
    pub elem: usize,
}

impl Rows {
    /// The geometry of level `level` of `ty` (scalar elements).
    pub fn of(ty: &ValueType, level: usize) -> Option<Rows> {
        Some(Rows::with_elem(ty, level, ty.element.scalar()?.size_bytes()))
    }

    /// The geometry of level `level` of `ty` for elements of `elem` bytes (one column of a
    /// tuple element).
    fn with_elem(ty: &ValueType, level: usize, elem: usize) -> Rows {
        let shape = ty.shape();
        Rows {
            outer: shape[..level].iter().product(),
            interval: ty.levels[level].interval,
            inner: shape[level + 1..].iter().product(),
            elem,
        }
    }

    /// Byte runs `(offset, length)` of `rows` in this tensor's buffer (none for no rows, which
    /// may lie anywhere).
    pub fn runs(&self, rows: Interval) -> impl Iterator<Item = (usize, usize)> + '_ {
        let row_bytes = self.inner * self.elem;
        let len = if rows.is_empty() { 0 } else { rows.len() as usize * row_bytes };
        let first = if len == 0 { 0 } else { (rows.start - self.interval.start) as usize * row_bytes };
        let stride = self.interval.len() as usize * row_bytes;
        (0..if len == 0 { 0 } else { self.outer }).map(move |o| (o * stride + first, len))
    }
}

impl Rows {
    /// The bytes `rows` take packed.
    pub fn packed_len(&self, rows: Interval) -> usize {
        self.outer * self.inner * self.elem * rows.len() as usize
    }

    /// Places packed `rows` into `dst` (a column of this geometry, as bytes); returns the
    /// bytes of `packed` it read.
    pub fn unpack_into(&self, dst: &mut [u8], rows: Interval, packed: &[u8]) -> usize {
        let mut at = 0;
        for (off, len) in self.runs(rows) {
            dst[off..off + len].copy_from_slice(&packed[at..at + len]);
            at += len;
        }
        at
    }
}

/// The raw bytes of a scalar tensor.
pub fn bytes(t: &Tensor) -> &[u8] {
    let Data::Scalars(c) = &t.data else { return &[] };
    column_bytes(c)
}

/// The raw bytes of a scalar tensor, mutable.
pub fn bytes_mut(t: &mut Tensor) -> &mut [u8] {
    let Data::Scalars(c) = &mut t.data else { return &mut [] };
    column_bytes_mut(c)
}

/// The geometry of level `level` for one scalar column of a tensor of type `ty`.
fn column_rows(ty: &ValueType, level: usize, c: &strata_runtime::Column) -> Rows {
    Rows::with_elem(ty, level, c.scalar().size_bytes())
}

/// Packs `rows` of `t` (level `level`) into one buffer (a tuple's fields one after another).
pub fn pack(t: &Tensor, level: usize, rows: Interval) -> Vec<u8> {
    pack_as(&t.ty, &t.data, level, rows)
}

/// [`pack`] of `data` read as a value of type `ty`.
pub fn pack_as(ty: &ValueType, data: &Data, level: usize, rows: Interval) -> Vec<u8> {
    let mut out = Vec::new();
    for c in columns(data) {
        let (g, src) = (column_rows(ty, level, c), column_bytes(c));
        for (off, len) in g.runs(rows) {
            out.extend_from_slice(&src[off..off + len]);
        }
    }
    out
}

/// The bytes [`pack`] makes of `rows` of `t`.
pub fn packed_len(t: &Tensor, level: usize, rows: Interval) -> usize {
    columns(&t.data).iter().map(|c| column_rows(&t.ty, level, c).packed_len(rows)).sum()
}

/// Places packed `rows` into `t` (level `level`).
pub fn unpack(t: &mut Tensor, level: usize, rows: Interval, packed: &[u8]) {
    let ty = t.ty.clone();
    let mut at = 0;
    for c in columns_mut(&mut t.data) {
        at += column_rows(&ty, level, c).unpack_into(column_bytes_mut(c), rows, &packed[at..]);
    }
}

/// Copies `rows` of level `level` from `src` into the same rows of `dst` (both hold them; the
/// other levels agree): run by run, without an intermediate buffer.
pub fn copy_rows(src: &Tensor, dst: &mut Tensor, level: usize, rows: Interval) {
    copy_rows_as(&src.ty, &src.data, dst, level, rows);
}

/// [`copy_rows`] from `src` read as a value of type `src_ty` (its layout, at other coordinates).
pub fn copy_rows_as(src_ty: &ValueType, src: &Data, dst: &mut Tensor, level: usize, rows: Interval) {
    let dst_ty = dst.ty.clone();
    for (s, d) in columns(src).into_iter().zip(columns_mut(&mut dst.data)) {
        let (gs, gd) = (column_rows(src_ty, level, s), column_rows(&dst_ty, level, d));
        let (from, to) = (column_bytes(s), column_bytes_mut(d));
        for ((so, len), (dof, _)) in gs.runs(rows).zip(gd.runs(rows)) {
            to[dof..dof + len].copy_from_slice(&from[so..so + len]);
        }
    }
}

/// Checks that `t` (a rank's local result) holds `rows` (its owned block) of level `level`.
///
/// # Errors
/// It does not, named with both intervals.
pub fn holds(t: &Tensor, level: usize, rows: Interval) -> Result<(), String> {
    let have = t.ty.levels[level].interval;
    match have.contains(rows) {
        true => Ok(()),
        false => Err(format!("the local result covers {have}, not the owned block {rows}")),
    }
}

/// A zero tensor of `ty` with level `level`'s interval replaced by `rows`.
pub fn with_rows(ty: &ValueType, level: usize, rows: Interval) -> Tensor {
    let mut ty = ty.clone();
    ty.levels[level].interval = rows;
    Tensor::zeros(&ty)
}

/// The rows `rows` of `t` as a tensor of their own.
pub fn slice(t: &Tensor, level: usize, rows: Interval) -> Tensor {
    if t.ty.levels[level].interval == rows {
        return t.clone();
    }
    let mut out = with_rows(&t.ty, level, rows);
    copy_rows(t, &mut out, level, rows);
    out
}

/// Reads the rows `rows` of level `level` of the `.npy` file `path`, whose whole array has the
/// (global) type `ty`, into the same rows of `out` (which holds at least them): only those bytes
/// are read, each run at its byte offset. The file must be little-endian and in C order, with
/// the dtype and shape of `ty` (numpy's default).
pub fn read_rows(
    path: &Path,
    name: &str,
    ty: &ValueType,
    level: usize,
    rows: Interval,
    out: &mut Tensor,
) -> Result<(), String> {
    let scalar = ty.element.scalar().ok_or_else(|| format!("`{name}`: a distributed argument holds scalars"))?;
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let header =
        npyz::NpyHeader::from_reader(&mut file).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let data_start = file.stream_position().map_err(|e| e.to_string())?;
    let shape: Vec<usize> = header.shape().iter().map(|&d| d as usize).collect();
    let descr = match header.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => format!("{other:?}"),
    };
    let want = strata_runtime::npy::descr(scalar);
    let ok_descr = descr == want || descr.get(1..) == want.get(1..) && scalar.size_bytes() == 1;
    if !ok_descr || shape != ty.shape() || header.order() != npyz::Order::C {
        return Err(format!(
            "argument `{name}`: {} holds dtype {descr}, shape {shape:?}{}, but the distributed program reads dtype {want}, \
             shape {:?} in C order",
            path.display(),
            if header.order() == npyz::Order::C { "" } else { " in Fortran order" },
            ty.shape()
        ));
    }
    let g = Rows::of(ty, level).expect("scalar tensor");
    let h = Rows::of(&out.ty, level).expect("scalar tensor");
    let dst = bytes_mut(out);
    for ((off, len), (at, _)) in g.runs(rows).zip(h.runs(rows)) {
        file.seek(SeekFrom::Start(data_start + off as u64)).map_err(|e| e.to_string())?;
        file.read_exact(&mut dst[at..at + len])
            .map_err(|e| format!("cannot read `{}`: {e} (is the file truncated?)", path.display()))?;
    }
    Ok(())
}

/// Creates `path` as a `.npy` file of the global type `ty` (header written, data zero-filled to
/// its full size); returns the byte offset of the data. One rank calls this.
pub fn create_npy(path: &Path, ty: &ValueType) -> Result<u64, String> {
    let scalar = ty.element.scalar().ok_or("a distributed output must hold scalars")?;
    let shape: Vec<u64> = ty.shape().iter().map(|&d| d as u64).collect();
    let mut header = Vec::new();
    let dtype = npyz::DType::Plain(strata_runtime::npy::descr(scalar).parse().map_err(|e| format!("{e:?}"))?);
    {
        use npyz::WriterBuilder;
        npyz::WriteOptions::new_header_only()
            .dtype(dtype)
            .shape(&shape)
            .writer(&mut header)
            .write_header_only()
            .map_err(|e| e.to_string())?;
    }
    let werr = |e: std::io::Error| format!("cannot write `{}`: {e}", path.display());
    let mut f = std::fs::File::create(path).map_err(werr)?;
    f.write_all(&header).map_err(werr)?;
    let total = header.len() as u64 + shape.iter().product::<u64>() * scalar.size_bytes() as u64;
    f.set_len(total).map_err(werr)?;
    Ok(header.len() as u64)
}

/// Writes `t`'s rows `rows` (level `level`) at their place in the `.npy` file `path` of the
/// global type `global`, whose data starts at `data_start`.
pub fn write_rows(
    path: &Path,
    data_start: u64,
    global: &ValueType,
    level: usize,
    t: &Tensor,
    rows: Interval,
) -> Result<(), String> {
    let werr = |e: std::io::Error| format!("cannot write `{}`: {e}", path.display());
    let f = std::fs::OpenOptions::new().write(true).open(path).map_err(werr)?;
    let g = Rows::of(global, level).expect("scalar tensor");
    let Data::Scalars(c) = &t.data else {
        return Err(format!("`{}`: a distributed output holds scalars", path.display()));
    };
    holds(t, level, rows)?;
    // Straight from the value's buffer, run by run (no packed copy of the block).
    let (from, src) = (column_rows(&t.ty, level, c), column_bytes(c));
    for ((so, len), (off, _)) in from.runs(rows).zip(g.runs(rows)) {
        f.write_all_at(&src[so..so + len], data_start + off as u64).map_err(werr)?;
    }
    f.sync_data().map_err(werr)
}

/// The scalar columns of `d`, a tuple's fields in order.
fn columns(d: &Data) -> Vec<&strata_runtime::Column> {
    match d {
        Data::Scalars(c) => vec![c],
        Data::Tuple(fs) => fs.iter().flat_map(columns).collect(),
        Data::Tensors(_) => Vec::new(),
    }
}

fn columns_mut(d: &mut Data) -> Vec<&mut strata_runtime::Column> {
    match d {
        Data::Scalars(c) => vec![c],
        Data::Tuple(fs) => fs.iter_mut().flat_map(columns_mut).collect(),
        Data::Tensors(_) => Vec::new(),
    }
}

/// The raw bytes of a scalar column (its elements in memory order).
pub fn column_bytes(c: &strata_runtime::Column) -> &[u8] {
    // SAFETY: the column's buffer holds `len` initialized elements of `size_bytes` each.
    unsafe { std::slice::from_raw_parts(c.as_ptr().cast::<u8>(), c.len() * c.scalar().size_bytes()) }
}

pub(crate) fn column_bytes_mut(c: &mut strata_runtime::Column) -> &mut [u8] {
    let n = c.len() * c.scalar().size_bytes();
    // SAFETY: as in `column_bytes`; every bit pattern written is a value the runtime itself
    // produced for this element type (rows of a tensor of the same type, sent by another rank,
    // or read from a file checked to hold it).
    unsafe { std::slice::from_raw_parts_mut(c.as_mut_ptr().cast::<u8>(), n) }
}

/// Every element of a dense tensor of scalars or tuples as bytes, field after field.
pub fn all_bytes(t: &Tensor) -> Vec<u8> {
    columns(&t.data).into_iter().flat_map(|c| column_bytes(c).iter().copied()).collect()
}

/// The inverse of [`all_bytes`] for a tensor of the same type.
pub fn set_all_bytes(t: &mut Tensor, bytes: &[u8]) {
    let mut at = 0;
    for c in columns_mut(&mut t.data) {
        let dst = column_bytes_mut(c);
        let n = dst.len();
        dst.copy_from_slice(&bytes[at..at + n]);
        at += n;
    }
}
