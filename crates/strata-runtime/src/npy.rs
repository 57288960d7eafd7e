//! numpy `.npy` / `.npz` exchange for dense tensors.
//!
//! Index 0 along an axis is the start of the dimension's interval. Reading checks the file's
//! shape against the interval lengths and its dtype against the element type (`index` is stored
//! as `int64`) and accepts C and Fortran order, either byte order. Writing produces C order,
//! little endian, through a temporary file renamed into place, so a failed write never leaves a
//! half-written file and never touches anything but the named output.

use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use npyz::WriterBuilder;
use strata_ir::Scalar;

use crate::scalar::Column;
use crate::tensor::{strides, Data, ElemType, Tensor, ValueType};

/// Failures of `.npy` exchange.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file could not be opened or read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file's content does not fit the declared type.
    #[error("argument `{name}`: {path} holds {found}, but the program expects {expected}")]
    Mismatch {
        /// The argument or result name.
        name: String,
        /// The file.
        path: PathBuf,
        /// What the file holds.
        found: String,
        /// What the type asks for.
        expected: String,
    },
    /// The value's type cannot be stored in a single `.npy` file.
    #[error("`{name}`: {what} cannot be stored as one .npy file")]
    Unsupported {
        /// The argument or result name.
        name: String,
        /// What.
        what: String,
    },
}

/// The numpy dtype name of a scalar type.
pub fn dtype_name(s: Scalar) -> &'static str {
    s.numpy_name()
}

/// numpy's little-endian type string of a scalar type (`<f8`, `|b1`, …).
pub fn descr(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "|b1",
        Scalar::I8 => "|i1",
        Scalar::I16 => "<i2",
        Scalar::I32 => "<i4",
        Scalar::I64 | Scalar::Index => "<i8",
        Scalar::U8 => "|u1",
        Scalar::U16 => "<u2",
        Scalar::U32 => "<u4",
        Scalar::U64 => "<u8",
        Scalar::F32 => "<f4",
        Scalar::F64 => "<f8",
        Scalar::C64 => "<c8",
        Scalar::C128 => "<c16",
    }
}

/// The scalar type of numpy's type string (`<f8`, `|b1`, `<c16`, …), if Strata has it.
pub fn scalar_of_descr(descr: &str) -> Option<Scalar> {
    let body = descr.trim_start_matches(['<', '>', '|', '=']);
    Some(match body {
        "b1" => Scalar::Bool,
        "i1" => Scalar::I8,
        "i2" => Scalar::I16,
        "i4" => Scalar::I32,
        "i8" => Scalar::I64,
        "u1" => Scalar::U8,
        "u2" => Scalar::U16,
        "u4" => Scalar::U32,
        "u8" => Scalar::U64,
        "f4" => Scalar::F32,
        "f8" => Scalar::F64,
        "c8" => Scalar::C64,
        "c16" => Scalar::C128,
        _ => return None,
    })
}

/// Reads one `.npy` stream holding `want` values of shape `shape` (C or Fortran order).
pub(crate) fn read_column<R: std::io::Read>(
    reader: R,
    name: &str,
    path: &Path,
    want: Scalar,
    shape: &[usize],
) -> Result<Column, NpyError> {
    let rerr = |source| NpyError::Read { path: path.into(), source };
    let mut reader = reader;
    let npy = npyz::NpyFile::new(&mut reader).map_err(rerr)?;
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => format!("{other:?}"),
    };
    let found_shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let found_scalar = scalar_of_descr(&descr);
    let dtype_ok = found_scalar == Some(want) || (want == Scalar::Index && found_scalar == Some(Scalar::I64));
    if !dtype_ok || found_shape != shape {
        let found = format!(
            "dtype {}, shape {found_shape:?}",
            found_scalar.map_or(descr.clone(), |s| dtype_name(s).to_string())
        );
        let expected = format!("dtype {}, shape {shape:?}", dtype_name(want));
        return Err(NpyError::Mismatch { name: name.into(), path: path.into(), found, expected });
    }
    let fortran = npy.order() == npyz::Order::Fortran;
    macro_rules! read {
        ($t:ty, $variant:ident) => {{
            let v: Vec<$t> = npy.into_vec::<$t>().map_err(rerr)?;
            Column::$variant(v)
        }};
    }
    let column = match want {
        Scalar::Bool => read!(bool, Bool),
        Scalar::I8 => read!(i8, I8),
        Scalar::I16 => read!(i16, I16),
        Scalar::I32 => read!(i32, I32),
        Scalar::I64 => read!(i64, I64),
        Scalar::Index => read!(i64, Index),
        Scalar::U8 => read!(u8, U8),
        Scalar::U16 => read!(u16, U16),
        Scalar::U32 => read!(u32, U32),
        Scalar::U64 => read!(u64, U64),
        Scalar::F32 => read!(f32, F32),
        Scalar::F64 => read!(f64, F64),
        Scalar::C64 => read!(num_complex::Complex32, C64),
        Scalar::C128 => read!(num_complex::Complex64, C128),
    };
    // A file longer than its header says is not what it claims to be (a truncated write of
    // another array, a concatenation): refused like a short one.
    let mut extra = [0u8; 1];
    if std::io::Read::read(&mut reader, &mut extra).map_err(rerr)? != 0 {
        return Err(NpyError::Mismatch {
            name: name.into(),
            path: path.into(),
            found: "bytes after the data its header describes".into(),
            expected: format!("exactly the values of shape {shape:?}"),
        });
    }
    let n: usize = shape.iter().product();
    if column.len() != n {
        return Err(NpyError::Mismatch {
            name: name.into(),
            path: path.into(),
            found: format!("{} values", column.len()),
            expected: format!("{n} values for shape {shape:?}"),
        });
    }
    Ok(if fortran && shape.len() > 1 { fortran_to_c(&column, shape) } else { column })
}

/// Serializes a column as one `.npy` stream (C order).
pub(crate) fn write_column<W: std::io::Write>(w: W, col: &Column, shape: &[u64]) -> std::io::Result<()> {
    macro_rules! write {
        ($v:expr, $t:ty) => {{
            let mut npy = npyz::WriteOptions::<$t>::new().default_dtype().shape(shape).writer(w).begin_nd()?;
            npy.extend($v.iter().copied())?;
            npy.finish()
        }};
    }
    match col {
        Column::Bool(v) => write!(v, bool),
        Column::I8(v) => write!(v, i8),
        Column::I16(v) => write!(v, i16),
        Column::I32(v) => write!(v, i32),
        Column::I64(v) | Column::Index(v) => write!(v, i64),
        Column::U8(v) => write!(v, u8),
        Column::U16(v) => write!(v, u16),
        Column::U32(v) => write!(v, u32),
        Column::U64(v) => write!(v, u64),
        Column::F32(v) => write!(v, f32),
        Column::F64(v) => write!(v, f64),
        Column::C64(v) => write!(v, num_complex::Complex32),
        Column::C128(v) => write!(v, num_complex::Complex64),
    }
}

/// The scalar fields of a (nested) tuple element type, flattened with their `.npz` names
/// (`f0`, `f1`, `f1_0`, …).
fn tuple_fields(t: &ElemType, prefix: &str, out: &mut Vec<(String, Scalar)>) -> Option<()> {
    match t {
        ElemType::Scalar(s) => out.push((prefix.to_string(), *s)),
        ElemType::Tuple(fs) => {
            for (i, f) in fs.iter().enumerate() {
                let name = if prefix.is_empty() { format!("f{i}") } else { format!("{prefix}_{i}") };
                tuple_fields(f, &name, out)?;
            }
        }
        ElemType::Tensor(_) => return None,
    }
    Some(())
}

fn data_from_fields(t: &ElemType, prefix: &str, cols: &mut std::collections::HashMap<String, Column>) -> Data {
    match t {
        ElemType::Scalar(_) => Data::Scalars(cols.remove(prefix).expect("field read")),
        ElemType::Tuple(fs) => Data::Tuple(
            fs.iter()
                .enumerate()
                .map(|(i, f)| {
                    let name = if prefix.is_empty() { format!("f{i}") } else { format!("{prefix}_{i}") };
                    data_from_fields(f, &name, cols)
                })
                .collect(),
        ),
        ElemType::Tensor(_) => unreachable!("checked by tuple_fields"),
    }
}

fn fields_of_data<'d>(d: &'d Data, prefix: &str, out: &mut Vec<(String, &'d Column)>) -> Option<()> {
    match d {
        Data::Scalars(c) => out.push((prefix.to_string(), c)),
        Data::Tuple(fs) => {
            for (i, f) in fs.iter().enumerate() {
                let name = if prefix.is_empty() { format!("f{i}") } else { format!("{prefix}_{i}") };
                fields_of_data(f, &name, out)?;
            }
        }
        Data::Tensors(_) => return None,
    }
    Some(())
}

/// Reads a value of type `ty` from `path`: a `.npy` file for scalar elements, a `.npz` archive
/// with one array per tuple field (`f0`, `f1`, nested `f1_0`, …) for tuple elements.
pub fn read_value(path: &Path, name: &str, ty: &ValueType) -> Result<Tensor, NpyError> {
    if ty.levels.iter().any(|l| !l.format.is_dense_like()) {
        return crate::sparse_io::read_sparse(path, name, ty);
    }
    let rerr = |source| NpyError::Read { path: path.into(), source };
    let shape = ty.shape();
    match &ty.element {
        ElemType::Scalar(want) => {
            let file = std::fs::File::open(path).map_err(rerr)?;
            let col = read_column(BufReader::new(file), name, path, *want, &shape)?;
            Ok(Tensor { ty: ty.clone(), data: Data::Scalars(col), present: None })
        }
        ElemType::Tuple(_) => {
            let mut fields = Vec::new();
            tuple_fields(&ty.element, "", &mut fields)
                .ok_or_else(|| NpyError::Unsupported { name: name.into(), what: "a tuple holding tensors".into() })?;
            let file = std::fs::File::open(path).map_err(rerr)?;
            let zerr = |e: zip::result::ZipError| rerr(std::io::Error::other(e));
            let mut archive = zip::ZipArchive::new(BufReader::new(file)).map_err(zerr)?;
            let mut cols = std::collections::HashMap::new();
            for (field, scalar) in fields {
                let entry = archive.by_name(&format!("{field}.npy")).map_err(|_| NpyError::Mismatch {
                    name: name.into(),
                    path: path.into(),
                    found: format!("no array `{field}`"),
                    expected: "one array per tuple field (`f0`, `f1`, …)".into(),
                })?;
                let col = read_column(entry, &format!("{name}.{field}"), path, scalar, &shape)?;
                cols.insert(field, col);
            }
            Ok(Tensor { ty: ty.clone(), data: data_from_fields(&ty.element, "", &mut cols), present: None })
        }
        // A dense tensor of dense tensors is one array of the outer shape followed by the inner
        // shapes (seed 001: `tensor<4x8 x tensor<32x32xf32>>` is a (4, 8, 32, 32) array; each
        // further level of nesting appends its shape).
        ElemType::Tensor(_) => {
            let (full, want) = nested_shape(ty).ok_or_else(|| NpyError::Unsupported {
                name: name.into(),
                what: "tensor elements that are sparse, ragged or tuples".into(),
            })?;
            let file = std::fs::File::open(path).map_err(rerr)?;
            let col = read_column(BufReader::new(file), name, path, want, &full)?;
            Ok(nest(ty, &col, 0))
        }
    }
}

/// The full array shape of a dense tensor of dense tensors (outer shape, then each element's)
/// and its scalar type; `None` for sparse or ragged elements and tuples.
pub fn nested_shape(ty: &ValueType) -> Option<(Vec<usize>, strata_ir::Scalar)> {
    let mut shape = ty.shape();
    let mut element = &ty.element;
    loop {
        match element {
            ElemType::Scalar(s) => return Some((shape, *s)),
            ElemType::Tensor(inner) if inner.levels.iter().all(|l| l.format.is_dense_like()) => {
                shape.extend(inner.shape());
                element = &inner.element;
            }
            _ => return None,
        }
    }
}

/// The value of type `ty` (dense, possibly nested) whose scalars are `col[at..]` in row-major
/// order of the full nested shape.
pub fn nest(ty: &ValueType, col: &Column, at: usize) -> Tensor {
    let data = match &ty.element {
        ElemType::Tensor(inner) => {
            let size = nested_shape(inner).map_or(0, |(s, _)| s.iter().product());
            Data::Tensors((0..ty.len()).map(|k| nest(inner, col, at + k * size)).collect())
        }
        _ => Data::Scalars(col.slice(at..at + ty.len())),
    };
    Tensor { ty: ty.clone(), data, present: None }
}

/// Appends the scalars of a dense (possibly nested) value to `out` in row-major order of the
/// full nested shape, absent elements as zeros; `false` if a level is not a dense tensor of
/// scalars.
pub fn flatten(t: &Tensor, out: &mut Vec<crate::Sv>) -> bool {
    match &t.data {
        Data::Scalars(c) => {
            out.extend((0..c.len()).map(|i| if t.is_present(i) { c.get(i) } else { crate::Sv::zero(c.scalar()) }));
            true
        }
        Data::Tensors(tiles) => tiles.iter().all(|x| flatten(x, out)),
        Data::Tuple(_) => false,
    }
}

/// Reads a dense tensor of type `ty` from a `.npy` file; `name` is used in messages.
pub fn read_npy(path: &Path, name: &str, ty: &ValueType) -> Result<Tensor, NpyError> {
    read_value(path, name, ty)
}

/// Writes through a temporary file renamed into place.
pub(crate) fn write_atomically(
    path: &Path,
    f: impl FnOnce(BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), NpyError> {
    let werr = |source| NpyError::Write { path: path.into(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.strata-tmp.{}", std::process::id()));
    let result =
        std::fs::File::create(&tmp).and_then(|file| f(BufWriter::new(file))).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(werr(e));
    }
    Ok(())
}

/// Writes a value: scalar elements as `.npy` (C order), tuple elements as `.npz` with one
/// array per field. Absent elements are written as zeros.
pub fn write_value(path: &Path, name: &str, t: &Tensor) -> Result<(), NpyError> {
    if t.ty.levels.iter().any(|l| !l.format.is_dense_like()) {
        return crate::sparse_io::write_sparse(path, name, t);
    }
    let shape: Vec<u64> = t.ty.shape().iter().map(|&d| d as u64).collect();
    match &t.data {
        Data::Scalars(col) => write_atomically(path, |w| write_column(w, col, &shape)),
        Data::Tuple(_) => {
            let mut fields = Vec::new();
            fields_of_data(&t.data, "", &mut fields)
                .ok_or_else(|| NpyError::Unsupported { name: name.into(), what: "a tuple holding tensors".into() })?;
            write_atomically(path, |w| {
                let mut zip = zip::ZipWriter::new(w);
                let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
                for (field, col) in fields {
                    zip.start_file(format!("{field}.npy"), opts).map_err(std::io::Error::other)?;
                    let mut buf = Vec::new();
                    write_column(&mut buf, col, &shape)?;
                    std::io::Write::write_all(&mut zip, &buf)?;
                }
                let mut inner = zip.finish().map_err(std::io::Error::other)?;
                std::io::Write::flush(&mut inner)
            })
        }
        Data::Tensors(_) => {
            let unsupported =
                || NpyError::Unsupported { name: name.into(), what: "tensor elements that are tuples".into() };
            let (full, scalar) = nested_shape(&t.ty).ok_or_else(unsupported)?;
            let mut values = Vec::with_capacity(full.iter().product());
            if !flatten(t, &mut values) {
                return Err(unsupported());
            }
            let col = Column::from_fn(scalar, values.len(), |i| values[i]);
            let full: Vec<u64> = full.iter().map(|&d| d as u64).collect();
            write_atomically(path, |w| write_column(w, &col, &full))
        }
    }
}

/// Reorders a column-major buffer into row-major order.
fn fortran_to_c(col: &Column, shape: &[usize]) -> Column {
    let c_strides = strides(shape);
    let mut f_strides = vec![1; shape.len()];
    for i in 1..shape.len() {
        f_strides[i] = f_strides[i - 1] * shape[i - 1];
    }
    let positions: Vec<usize> = (0..col.len())
        .map(|c_index| {
            let mut rem = c_index;
            let mut f_index = 0;
            for d in 0..shape.len() {
                let coord = rem / c_strides[d];
                rem %= c_strides[d];
                f_index += coord * f_strides[d];
            }
            f_index
        })
        .collect();
    col.select(&positions)
}
