//! numpy arrays to Strata values and back.
//!
//! In: a dense parameter takes an array of its dtype and shape (any strides: a C-contiguous
//! array is copied in one block, others element by element); tuple elements a tuple of arrays,
//! one per field; tensor elements one array of the outer shape followed by the inner ones; a
//! sparse parameter an unpacked SciPy matrix (`{"kind": "coo", "row", "col", "data",
//! "shape"}`) and a ragged one its arrays (`{"kind": "ragged", "offsets", …, "values"}`), which
//! the Python side makes.
//!
//! Out: scalars as numpy arrays that take over the result's buffer (no copy), absent elements
//! as zeros; sparse results as `csr` / `coo` dicts, ragged ones as `ragged` dicts — the Python
//! side wraps them (SciPy, `strata.Ragged`).

use numpy::{PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use strata_ir::{LevelFormat, Scalar};
use strata_runtime::storage::{entries, LevelBuffers};
use strata_runtime::{Argument, Column, ColumnMut, ColumnRef, Data, ElemType, Stored, Tensor, Value, ValueType};

use crate::errors::ArgumentError;

/// `$m!(T)` for `T` the Rust element type of `$scalar` (`i64` for `index`).
macro_rules! by_scalar {
    ($scalar:expr, $m:ident) => {
        match $scalar {
            strata_ir::Scalar::Bool => $m!(bool),
            strata_ir::Scalar::I8 => $m!(i8),
            strata_ir::Scalar::I16 => $m!(i16),
            strata_ir::Scalar::I32 => $m!(i32),
            strata_ir::Scalar::I64 | strata_ir::Scalar::Index => $m!(i64),
            strata_ir::Scalar::U8 => $m!(u8),
            strata_ir::Scalar::U16 => $m!(u16),
            strata_ir::Scalar::U32 => $m!(u32),
            strata_ir::Scalar::U64 => $m!(u64),
            strata_ir::Scalar::F32 => $m!(f32),
            strata_ir::Scalar::F64 => $m!(f64),
            strata_ir::Scalar::C64 => $m!(num_complex::Complex32),
            strata_ir::Scalar::C128 => $m!(num_complex::Complex64),
        }
    };
}
pub(crate) use by_scalar;

/// The numpy name of a scalar type.
fn dtype_name(s: Scalar) -> &'static str {
    strata_runtime::npy::dtype_name(s)
}

/// The scalar type of a numpy dtype, if Strata has it (`index` reads as `int64`).
pub(crate) fn scalar_of(d: &Bound<'_, numpy::PyArrayDescr>) -> Option<Scalar> {
    // By kind and size (no dtype objects made, no cast-safety machinery): called for every
    // array of every call. A non-native byte order is no scalar of ours.
    if d.is_native_byteorder() == Some(false) || d.has_fields() || d.has_subarray() {
        return None;
    }
    Some(match (d.kind(), d.itemsize()) {
        (b'b', 1) => Scalar::Bool,
        (b'i', 1) => Scalar::I8,
        (b'i', 2) => Scalar::I16,
        (b'i', 4) => Scalar::I32,
        (b'i', 8) => Scalar::I64,
        (b'u', 1) => Scalar::U8,
        (b'u', 2) => Scalar::U16,
        (b'u', 4) => Scalar::U32,
        (b'u', 8) => Scalar::U64,
        (b'f', 4) => Scalar::F32,
        (b'f', 8) => Scalar::F64,
        (b'c', 8) => Scalar::C64,
        (b'c', 16) => Scalar::C128,
        _ => return None,
    })
}

/// An argument of a run: a value the conversion made, or a numpy array read in place.
pub enum Arg<'a> {
    /// A value (copied or built from the caller's objects).
    Value(Value),
    /// A C-contiguous numpy array of a dense scalar parameter, viewed in place.
    Numpy(NumpyArg<'a>),
    /// An `out` parameter the caller did not pass: zeros of its type, made only if something
    /// reads them (native code writing the whole output takes a recycled buffer instead).
    Zeros(ValueType, std::sync::OnceLock<Tensor>),
}

/// A dense tensor of scalars whose values are a numpy array's buffer, viewed for `'a` (the
/// array object is borrowed that long, so the buffer stays allocated). Native code reads the
/// view in place; a backend that needs the value ([`Argument::tensor`]: the interpreter, a
/// parameter the program writes) gets a copy, made once.
pub struct NumpyArg<'a> {
    /// The parameter's type (the caller's, made once per program).
    ty: &'a ValueType,
    view: ColumnRef<'a>,
    /// For an `out` parameter's writable array: the buffer lent for writing in place.
    lent: Option<ColumnMut<'a>>,
    whole: std::sync::OnceLock<Tensor>,
}

impl NumpyArg<'_> {
    /// The array's values as a tensor of their own (a copy of the buffer).
    fn copied(&self) -> Tensor {
        Tensor { ty: self.ty.clone(), data: Data::Scalars(self.view.to_column()), present: None }
    }
}

impl Arg<'_> {
    /// Whether a native run writes this argument in place (an `out` parameter's array).
    pub fn lent(&self) -> bool {
        matches!(self, Arg::Numpy(NumpyArg { lent: Some(_), .. }))
    }

    /// Zeros of type `ty` for an `out` parameter not passed ([`Arg::Zeros`]).
    pub fn zeros<'a>(ty: &ValueType) -> Arg<'a> {
        Arg::Zeros(ty.clone(), std::sync::OnceLock::new())
    }

    /// The argument as a value of its own (a numpy array's buffer copied).
    pub fn into_value(self) -> Value {
        match self {
            Arg::Value(v) => v,
            Arg::Numpy(mut n) => Value::Tensor(n.whole.take().unwrap_or_else(|| n.copied())),
            Arg::Zeros(ty, made) => Value::Tensor(made.into_inner().unwrap_or_else(|| Tensor::zeros(&ty))),
        }
    }

    /// A static extent of the type the value does not have (see `Value::extent_mismatch`).
    pub fn extent_mismatch(&self) -> Option<String> {
        match self {
            Arg::Value(v) => v.extent_mismatch(),
            Arg::Numpy(_) | Arg::Zeros(..) => None,
        }
    }
}

impl Argument for Arg<'_> {
    fn value_type(&self) -> &ValueType {
        match self {
            Arg::Value(v) => v.value_type(),
            Arg::Numpy(n) => n.ty,
            Arg::Zeros(ty, _) => ty,
        }
    }
    fn tensor(&self) -> Option<&Tensor> {
        match self {
            Arg::Value(v) => v.tensor(),
            Arg::Numpy(n) => Some(n.whole.get_or_init(|| n.copied())),
            Arg::Zeros(ty, made) => Some(made.get_or_init(|| Tensor::zeros(ty))),
        }
    }
    fn stored(&self) -> Option<&Stored> {
        match self {
            Arg::Value(v) => v.stored(),
            Arg::Numpy(_) | Arg::Zeros(..) => None,
        }
    }
    fn column(&self) -> Option<ColumnRef<'_>> {
        match self {
            Arg::Value(v) => v.column(),
            Arg::Numpy(n) => Some(n.view),
            Arg::Zeros(..) => self.tensor().and_then(|t| t.column()),
        }
    }
    fn column_mut(&self) -> Option<ColumnMut<'_>> {
        match self {
            Arg::Value(_) | Arg::Zeros(..) => None,
            Arg::Numpy(n) => n.lent,
        }
    }
}

/// Takes back the lending of every `out` array whose memory overlaps another argument's: the
/// run must read its inputs as they were, so such an output is written to a copy as before.
pub fn unlend_overlapping(args: &mut [Arg<'_>]) {
    let span = |a: &Arg<'_>| match a {
        Arg::Numpy(n) => {
            let start = n.view.as_ptr() as usize;
            Some((start, start + n.view.len() * n.view.scalar().size_bytes()))
        }
        Arg::Value(_) | Arg::Zeros(..) => None,
    };
    let spans: Vec<Option<(usize, usize)>> = args.iter().map(span).collect();
    for (i, a) in args.iter_mut().enumerate() {
        let Arg::Numpy(n) = a else { continue };
        let Some((lo, hi)) = spans[i].filter(|_| n.lent.is_some()) else { continue };
        let overlaps = spans.iter().enumerate().any(|(j, s)| j != i && s.is_some_and(|(l, h)| l < hi && lo < h));
        if overlaps {
            n.lent = None;
        }
    }
}

/// The buffer of `obj` (as [`view`]) lent for writing: a writeable array's, else `None`.
fn view_mut<'a>(obj: &'a Bound<'_, PyAny>, scalar: Scalar) -> Option<ColumnMut<'a>> {
    let arr = obj.cast::<PyUntypedArray>().ok()?;
    if !arr.is_c_contiguous() || !writeable(arr) {
        return None;
    }
    macro_rules! view {
        ($t:ty) => {{
            let a = obj.cast::<PyArrayDyn<$t>>().ok()?;
            // SAFETY: as in `view`; the array is writeable and `obj` is borrowed for `'a`: the
            // caller lends it to the run, which is the only user while it writes (the GIL
            // is released, so like every extension releasing it, this assumes no other thread
            // touches the array meanwhile).
            let s: &'a mut [$t] = unsafe { a.as_slice_mut() }.ok()?;
            if s.is_empty() || s.as_ptr().align_offset(std::mem::align_of::<$t>()) != 0 {
                return None;
            }
            ColumnMut::with_scalar(s, scalar)
        }};
    }
    Some(by_scalar!(scalar, view))
}

/// Whether numpy lets `arr`'s memory be written (its `flags.writeable`, read from the array
/// object itself: a per-call `getattr` would cost two attribute lookups and a flags object).
fn writeable(arr: &Bound<'_, PyUntypedArray>) -> bool {
    // SAFETY: `arr` is a numpy array (the cast checked it), so its object holds the fields.
    unsafe {
        (*numpy::npyffi::_PyArray_GET_ITEM_DATA(arr.as_array_ptr())).flags & numpy::npyffi::NPY_ARRAY_WRITEABLE != 0
    }
}

/// The buffer of `obj`, a C-contiguous, aligned numpy array of `scalar` (checked by the
/// caller against the parameter's dtype and shape), viewed in place; `None` for other layouts.
fn view<'a>(obj: &'a Bound<'_, PyAny>, scalar: Scalar) -> Option<ColumnRef<'a>> {
    let arr = obj.cast::<PyUntypedArray>().ok()?;
    if !arr.is_c_contiguous() {
        return None;
    }
    macro_rules! view {
        ($t:ty) => {{
            let a = obj.cast::<PyArrayDyn<$t>>().ok()?;
            // SAFETY: the array is C-contiguous and its dtype is `$t` (the cast checks it), so
            // its buffer is `len` aligned values; `obj` is borrowed for `'a`, which keeps the
            // array and its buffer alive, and nothing in the run writes it (native code reads
            // parameters it does not write through `const` pointers; written ones are copies).
            // Like every reader of a numpy buffer, this assumes no other thread resizes or
            // writes the array meanwhile.
            let s: &'a [$t] = unsafe { a.as_slice() }.ok()?;
            if s.is_empty() || s.as_ptr().align_offset(std::mem::align_of::<$t>()) != 0 {
                return None;
            }
            ColumnRef::with_scalar(s, scalar)
        }};
    }
    Some(by_scalar!(scalar, view))
}

/// A numpy array's elements in row-major order: one copy of the block where it is C-contiguous
/// (an element-by-element walk over a dynamic-rank view costs ~15x a copy), else in its strides
/// (`as_slice` alone would also give a Fortran-ordered block, in the wrong order).
pub(crate) fn elements<T: numpy::Element + Copy>(a: &numpy::PyReadonlyArrayDyn<'_, T>) -> Vec<T> {
    use numpy::PyUntypedArrayMethods;
    match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => s.to_vec(),
        _ => a.as_array().iter().copied().collect(),
    }
}

/// The elements of `obj` (a numpy array of `scalar`'s dtype and shape `shape`) copied into a
/// column, in row-major order (checking dtype and shape).
fn column(obj: &Bound<'_, PyAny>, what: &str, scalar: Scalar, shape: &[usize]) -> PyResult<Column> {
    let arr = column_checks(obj, what, scalar, shape)?;
    macro_rules! read {
        ($t:ty, $v:ident) => {{
            Column::$v(elements(&arr.cast::<PyArrayDyn<$t>>()?.readonly()))
        }};
    }
    Ok(match scalar {
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
    })
}

/// `obj` as a numpy array of `scalar`'s dtype and shape `shape`, or an error naming `what`.
fn column_checks<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    what: &str,
    scalar: Scalar,
    shape: &[usize],
) -> PyResult<&'a Bound<'py, PyUntypedArray>> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        ArgumentError::new_err(format!("argument `{what}`: expected a numpy array, found `{}`", type_name(obj)))
    })?;
    let found = scalar_of(&arr.dtype());
    let want = if scalar == Scalar::Index { Scalar::I64 } else { scalar };
    if found != Some(want) {
        let d = arr.dtype().to_string();
        return Err(ArgumentError::new_err(format!(
            "argument `{what}`: dtype {d}, but the parameter holds {} (convert with `.astype(numpy.{})`)",
            dtype_name(scalar),
            dtype_name(want)
        )));
    }
    if arr.shape() != shape {
        return Err(ArgumentError::new_err(format!(
            "argument `{what}`: shape {:?}, but the parameter's type has shape {shape:?}",
            arr.shape()
        )));
    }
    Ok(arr)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// Non-negative integers from an integer array.
fn indices(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<usize>> {
    let arr = obj
        .cast::<PyArray1<i64>>()
        .map_err(|_| ArgumentError::new_err(format!("`{what}`: expected a 1-d int64 array")))?
        .readonly();
    arr.as_array()
        .iter()
        .map(|&x| usize::try_from(x).map_err(|_| ArgumentError::new_err(format!("`{what}`: negative entry {x}"))))
        .collect()
}

/// The data of a tuple element from a tuple of arrays (one per field, nested tuples nested).
fn tuple_data(obj: &Bound<'_, PyAny>, what: &str, fields: &[ElemType], shape: &[usize]) -> PyResult<Data> {
    let t = obj.cast::<PyTuple>().map_err(|_| {
        ArgumentError::new_err(format!(
            "argument `{what}`: the parameter holds tuples of {} fields: pass a tuple of arrays, one per field",
            fields.len()
        ))
    })?;
    if t.len() != fields.len() {
        return Err(ArgumentError::new_err(format!(
            "argument `{what}`: {} arrays, but the tuples have {} fields",
            t.len(),
            fields.len()
        )));
    }
    let mut parts = Vec::with_capacity(fields.len());
    for (k, (f, item)) in fields.iter().zip(t.iter()).enumerate() {
        let field = format!("{what}[{k}]");
        parts.push(match f {
            ElemType::Scalar(s) => Data::Scalars(column(&item, &field, *s, shape)?),
            ElemType::Tuple(inner) => tuple_data(&item, &field, inner, shape)?,
            ElemType::Tensor(_) => {
                return Err(ArgumentError::new_err(format!(
                    "argument `{what}`: tuples holding tensors are not supported"
                )))
            }
        });
    }
    Ok(Data::Tuple(parts))
}

/// The argument for parameter `what` of type `ty` from `obj`: a dense tensor of scalars from a
/// C-contiguous array is its buffer viewed in place ([`NumpyArg`]), and for an `out`
/// parameter (`out`) of a writeable one lent for writing in place; anything else a value.
pub fn to_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str, ty: &'a ValueType, out: bool) -> PyResult<Arg<'a>> {
    if ty.levels.iter().any(|l| !l.format.is_dense_like()) {
        return stored(obj, what, ty).map(|s| Arg::Value(Value::Stored(s)));
    }
    let shape = ty.shape();
    if let (ElemType::Scalar(s), true) = (&ty.element, shape.is_empty()) {
        if let Some(v) = python_number(obj, what, *s)? {
            let data = Data::Scalars(Column::from_fn(*s, 1, |_| v));
            return Ok(Arg::Value(Value::Tensor(Tensor { ty: ty.clone(), data, present: None })));
        }
    }
    let data = match &ty.element {
        ElemType::Scalar(s) => {
            // Checks dtype and shape (and copies) unless the buffer can be viewed.
            column_checks(obj, what, *s, &shape)?;
            if let Some(v) = view(obj, *s) {
                let lent = if out { view_mut(obj, *s) } else { None };
                return Ok(Arg::Numpy(NumpyArg { ty, view: v, lent, whole: Default::default() }));
            }
            Data::Scalars(column(obj, what, *s, &shape)?)
        }
        ElemType::Tuple(fields) => tuple_data(obj, what, fields, &shape)?,
        ElemType::Tensor(_) => {
            let (full, s) = strata_runtime::npy::nested_shape(ty).ok_or_else(|| {
                ArgumentError::new_err(format!("argument `{what}`: tensor elements that are sparse, ragged or tuples"))
            })?;
            let col = column(obj, what, s, &full)?;
            return Ok(Arg::Value(Value::Tensor(strata_runtime::npy::nest(ty, &col, 0))));
        }
    };
    Ok(Arg::Value(Value::Tensor(Tensor { ty: ty.clone(), data, present: None })))
}

/// A Python number (`bool`, `int`, `float`) as a value of a 0-d parameter of type `s`: an
/// `int` fits any numeric type whose range holds it, a `float` only a float type, a `bool`
/// only `bool`. `None` for any other object (a numpy array or scalar goes the array way).
fn python_number(obj: &Bound<'_, PyAny>, what: &str, s: Scalar) -> PyResult<Option<strata_runtime::Sv>> {
    use pyo3::types::{PyBool, PyFloat, PyInt};
    use strata_runtime::Sv;
    let refused = |kind: &str| {
        ArgumentError::new_err(format!(
            "argument `{what}`: a Python {kind} for a parameter of type {} ({})",
            s,
            dtype_name(s)
        ))
    };
    if obj.is_exact_instance_of::<PyBool>() {
        return match s {
            Scalar::Bool => Ok(Some(Sv::from_i128(s, obj.is_truthy()? as i128))),
            _ => Err(refused("bool")),
        };
    }
    if obj.is_exact_instance_of::<PyInt>() {
        if s == Scalar::Bool {
            return Err(refused("int"));
        }
        let v: i128 = obj.extract()?;
        if let Some((lo, hi)) = strata_ir::algebra::int_range(if s == Scalar::Index { Scalar::I64 } else { s }) {
            if v < lo || v > hi {
                return Err(ArgumentError::new_err(format!("argument `{what}`: {v} is out of the range of {s}")));
            }
            return Ok(Some(Sv::from_i128(s, v)));
        }
        return Ok(Some(Sv::from_f64(s, v as f64)));
    }
    if obj.is_exact_instance_of::<PyFloat>() {
        if !s.is_inexact() {
            return Err(refused("float"));
        }
        return Ok(Some(Sv::from_f64(s, obj.extract()?)));
    }
    if let Ok(c) = obj.cast_exact::<pyo3::types::PyComplex>() {
        if !s.is_complex() {
            return Err(refused("complex"));
        }
        return Ok(Some(Sv::C128(num_complex::Complex64::new(c.real(), c.imag())).cast(s)));
    }
    Ok(None)
}

/// A sparse or ragged value from the dict the Python side unpacks a SciPy matrix or a ragged
/// tensor into.
fn stored(obj: &Bound<'_, PyAny>, what: &str, ty: &ValueType) -> PyResult<Stored> {
    let scalar = ty.element.scalar().ok_or_else(|| {
        ArgumentError::new_err(format!("argument `{what}`: sparse tensors of tuples or tensors are not supported"))
    })?;
    let d = obj.cast::<PyDict>().map_err(|_| {
        ArgumentError::new_err(format!(
            "argument `{what}`: the parameter is sparse or ragged: pass a SciPy sparse matrix or a `strata.Ragged`, \
             not `{}`",
            type_name(obj)
        ))
    })?;
    let item = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        d.get_item(k)?.ok_or_else(|| ArgumentError::new_err(format!("argument `{what}`: no `{k}`")))
    };
    let kind: String = item("kind")?.extract()?;
    let fail = |m: String| ArgumentError::new_err(format!("argument `{what}`: {m}"));
    match kind.as_str() {
        "coo" => {
            let shape: Vec<usize> = item("shape")?.extract()?;
            let want = ty.shape();
            let same = shape == want || (want.len() == 1 && shape == [1, want[0]]);
            if !same {
                return Err(fail(format!("a sparse matrix of shape {shape:?}, but the parameter has shape {want:?}")));
            }
            let (row, col) = (indices(&item("row")?, what)?, indices(&item("col")?, what)?);
            let data = column(&item("data")?, what, scalar, &[col.len()])?;
            strata_runtime::sparse_io::stored_from_entries(ty, row, col, data).map_err(fail)
        }
        "ragged" => {
            let values = item("values")?;
            let n = values.cast::<PyUntypedArray>().map(|a| a.len()).unwrap_or(0);
            let values = column(&values, what, scalar, &[n])?;
            let mut bad = None;
            let got = strata_runtime::sparse_io::stored_from_ragged(
                ty,
                |name| match d.get_item(name).ok().flatten().map(|o| indices(&o, name)) {
                    Some(Ok(v)) => Some(v),
                    Some(Err(e)) => {
                        bad = Some(e);
                        None
                    }
                    None => None,
                },
                values,
            );
            if let Some(e) = bad {
                return Err(e);
            }
            got.map_err(fail)
        }
        other => Err(fail(format!("unknown kind `{other}`"))),
    }
}

/// The owner of a result's buffer that a numpy array took over (its base object): when numpy
/// lets go of the array, the buffer goes back to the native backend's pool for a later run's
/// outputs ([`strata_engine::recycle_column`]), which then writes into it without zeroing or
/// page-faulting fresh memory, as numpy's own arrays reuse the blocks malloc kept. (Without
/// it, a `strata.fields` laplacian on 256 × 256 × 64 spent a quarter of each call zeroing its
/// 33 MB result.)
#[pyclass(module = "strata._strata", name = "ResultBuffer", frozen)]
struct ResultBuffer(Option<Column>);

impl Drop for ResultBuffer {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            strata_engine::recycle_column(c);
        }
    }
}

/// A column as a numpy array of `shape`, taking over its buffer (see [`ResultBuffer`]).
fn array(py: Python<'_>, col: Column, shape: &[usize]) -> PyResult<Py<PyAny>> {
    let owner = Bound::new(py, ResultBuffer(Some(col)))?;
    let Some(col) = &owner.get().0 else { unreachable!("made with its column") };
    macro_rules! arr {
        ($v:expr) => {{
            let view = numpy::ndarray::ArrayViewD::from_shape(shape, &$v[..])
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("a result of shape {shape:?}: {e}")))?;
            // SAFETY: the base object `owner` holds the column, so its buffer stays allocated and
            // unmoved while the array lives; nothing in Rust reads or writes it until the base
            // object is dropped, after the array.
            unsafe { numpy::PyArray::borrow_from_array(&view, owner.clone().into_any()) }.into_any().unbind()
        }};
    }
    Ok(match col {
        Column::Bool(v) => arr!(v),
        Column::I8(v) => arr!(v),
        Column::I16(v) => arr!(v),
        Column::I32(v) => arr!(v),
        Column::I64(v) | Column::Index(v) => arr!(v),
        Column::U8(v) => arr!(v),
        Column::U16(v) => arr!(v),
        Column::U32(v) => arr!(v),
        Column::U64(v) => arr!(v),
        Column::F32(v) => arr!(v),
        Column::F64(v) => arr!(v),
        Column::C64(v) => arr!(v),
        Column::C128(v) => arr!(v),
    })
}

fn ints(py: Python<'_>, v: &[usize]) -> Py<PyAny> {
    PyArray1::from_vec(py, v.iter().map(|&x| x as i64).collect::<Vec<i64>>()).into_any().unbind()
}

/// A result as Python sees it (see the module docs).
pub fn to_python(py: Python<'_>, what: &str, v: Value) -> PyResult<Py<PyAny>> {
    match v {
        // One Python type per value kind, whatever the backend: a sparse or ragged result the
        // backend returned logically is stored first, as the other backend returns it.
        Value::Tensor(t)
            if t.ty.levels.iter().any(|l| !l.format.is_dense_like()) && matches!(t.data, Data::Scalars(_)) =>
        {
            stored_out(py, Stored::from_tensor(&t))
        }
        Value::Tensor(t) => tensor(py, what, t),
        Value::Stored(s) => stored_out(py, s),
    }
}

/// A dense result: absent elements (neighbor-table skips) as zeros, as `strata run` writes
/// them — the native backend does not return which elements are absent, so neither does the
/// interpreter here (a program that needs the mask computes it with `can_deref`).
fn tensor(py: Python<'_>, what: &str, mut t: Tensor) -> PyResult<Py<PyAny>> {
    let shape = t.ty.shape();
    if let Some(present) = t.present.take() {
        zero_absent(&mut t.data, &present);
    }
    match t.data {
        Data::Scalars(col) => array(py, col, &shape),
        Data::Tuple(fields) => {
            let ElemType::Tuple(types) = &t.ty.element else { unreachable!("tuple data has a tuple type") };
            let mut items = Vec::with_capacity(fields.len());
            for (d, e) in fields.into_iter().zip(types) {
                let field = Tensor { ty: ValueType { element: e.clone(), ..t.ty.clone() }, data: d, present: None };
                items.push(tensor(py, what, field)?);
            }
            Ok(PyTuple::new(py, items)?.into_any().unbind())
        }
        Data::Tensors(_) => {
            let (full, scalar) = strata_runtime::npy::nested_shape(&t.ty).ok_or_else(|| {
                crate::errors::RunError::new_err(format!("`{what}`: tensor elements that are not dense"))
            })?;
            let mut values = Vec::with_capacity(full.iter().product());
            if !strata_runtime::npy::flatten(&t, &mut values) {
                return Err(crate::errors::RunError::new_err(format!("`{what}`: tensor elements holding tuples")));
            }
            array(py, Column::from_fn(scalar, values.len(), |i| values[i]), &full)
        }
    }
}

/// Sets the absent elements of `data` to zero (every field of a tuple).
fn zero_absent(data: &mut Data, present: &[bool]) {
    match data {
        Data::Scalars(c) => {
            let zero = strata_runtime::Sv::zero(c.scalar());
            for (i, _) in present.iter().enumerate().filter(|(_, p)| !**p) {
                c.set(i, zero);
            }
        }
        Data::Tuple(fields) => fields.iter_mut().for_each(|f| zero_absent(f, present)),
        Data::Tensors(tiles) => {
            for (tile, _) in tiles.iter_mut().zip(present).filter(|(_, p)| !**p) {
                *tile = Tensor::zeros(&tile.ty);
            }
        }
    }
}

fn stored_out(py: Python<'_>, s: Stored) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    let shape = s.ty.shape();
    let formats: Vec<LevelFormat> = s.ty.levels.iter().map(|l| l.format).collect();
    if strata_runtime::storage::has_ragged(&s.ty.levels) {
        d.set_item("kind", "ragged")?;
        let mut k = 0;
        for lb in &s.storage.levels {
            if let LevelBuffers::Ragged { offsets } = lb {
                d.set_item(if k == 0 { "offsets".to_string() } else { format!("offsets_{k}") }, ints(py, offsets))?;
                k += 1;
            }
        }
        let n = s.storage.values.len();
        d.set_item("values", array(py, s.storage.values, &[n])?)?;
        d.set_item("shape", shape)?;
        return Ok(d.into_any().unbind());
    }
    if let (
        [_, LevelFormat::Compressed { .. }],
        [LevelBuffers::Dense { .. }, LevelBuffers::Compressed { positions, coordinates }],
    ) = (formats.as_slice(), s.storage.levels.as_slice())
    {
        d.set_item("kind", "csr")?;
        d.set_item("indptr", ints(py, positions))?;
        d.set_item("indices", ints(py, coordinates))?;
        let n = s.storage.values.len();
        d.set_item("data", array(py, s.storage.values, &[n])?)?;
        d.set_item("shape", shape.clone())?;
        return Ok(d.into_any().unbind());
    }
    let e = entries(&s.storage);
    let n = e.len();
    if e.rank == 1 {
        // A vector: SciPy's 1-D `coo_array` (shape `(n,)`).
        d.set_item("kind", "coo1")?;
        d.set_item("col", ints(py, &e.coords))?;
        d.set_item("data", array(py, e.values, &[n])?)?;
        d.set_item("shape", shape)?;
        return Ok(d.into_any().unbind());
    }
    let (row, col): (Vec<usize>, Vec<usize>) = (0..n).map(|k| (e.coords[2 * k], e.coords[2 * k + 1])).unzip();
    d.set_item("kind", "coo")?;
    d.set_item("row", ints(py, &row))?;
    d.set_item("col", ints(py, &col))?;
    d.set_item("data", array(py, e.values, &[n])?)?;
    d.set_item("shape", shape.clone())?;
    Ok(d.into_any().unbind())
}
