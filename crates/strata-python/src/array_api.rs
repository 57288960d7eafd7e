//! The array-API front end (`strata_array`) for Python: the submodule `strata._strata.array`,
//! which `python/strata/array_api.py` wraps into the standard's namespace (operators, indexing,
//! scalar rules, dtypes as numpy dtypes).
//!
//! Arrays are the Rust front end's lazy arrays: every function records one operation, reading
//! (`to_numpy`) compiles the traced program once per structure and runs it. Errors map to the
//! exceptions the standard expects: dtype errors to `TypeError`, shapes, axes and values to
//! `ValueError`, a failed run to `strata.RunError`.

use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use strata_array::{self as sa, ArrayError, DType, Index, Operand, Place, Weak};

use crate::errors::{LinAlgError, RunError};

/// A lazy array of the array-API front end.
#[pyclass(module = "strata._strata", name = "Array", unsendable)]
#[derive(Clone)]
pub struct PyArr(pub sa::Array);

pub(crate) fn err(e: ArrayError) -> PyErr {
    match e {
        ArrayError::DType { .. } => PyTypeError::new_err(e.to_string()),
        ArrayError::Axis { .. } => crate::errors::axis_error(e.to_string()),
        ArrayError::Invalid { .. } | ArrayError::Broadcast { .. } | ArrayError::Placement { .. } => {
            PyValueError::new_err(e.to_string())
        }
        ArrayError::Data(_) => PyValueError::new_err(e.to_string()),
        ArrayError::Singular { .. } => LinAlgError::new_err(e.to_string()),
        ArrayError::Job(sa::JobError { cause: sa::JobCause::Input | sa::JobCause::Data, .. }) => {
            PyValueError::new_err(e.to_string())
        }
        ArrayError::Run(_) | ArrayError::Job(_) | ArrayError::Internal { .. } => RunError::new_err(e.to_string()),
    }
}

type R<T = PyArr> = PyResult<T>;

/// An evaluated array's values, the base object of the numpy arrays viewing them
/// ([`PyArr::values_view`]): a value is never written once computed (a later run writes into a
/// recycled buffer only when nothing else holds it), so the views always read what the array
/// computed.
///
/// numpy arrays travel between threads, and so does their base object, but the values' `Rc`
/// belongs to the thread that evaluated them: its count changes only there. Dropped on another
/// thread, the reference is handed back to its own thread ([`DEFERRED`]), which lets it go at
/// its next view ([`drop_deferred`]); the values stay alive until then.
#[pyclass(module = "strata._strata", name = "Values", frozen)]
struct Held {
    values: std::mem::ManuallyDrop<std::rc::Rc<strata_runtime::Tensor>>,
    owner: std::thread::ThreadId,
}

// SAFETY: other threads only hold a `Held` and read the values' memory, which never changes and
// stays allocated while the reference lives; the `Rc`'s count is changed only on `owner` (in
// `Drop`, directly there or through `DEFERRED`).
unsafe impl Send for Held {}
// SAFETY: as for `Send`: shared access reads nothing but the immutable values.
unsafe impl Sync for Held {}

/// References dropped away from their thread: the thread, and the reference as a raw pointer.
static DEFERRED: std::sync::Mutex<Vec<(std::thread::ThreadId, usize)>> = std::sync::Mutex::new(Vec::new());

impl Held {
    fn new(values: std::rc::Rc<strata_runtime::Tensor>) -> Held {
        Held { values: std::mem::ManuallyDrop::new(values), owner: std::thread::current().id() }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: `values` is taken once, here, and not used after.
        let values = unsafe { std::mem::ManuallyDrop::take(&mut self.values) };
        if std::thread::current().id() == self.owner {
            drop(values);
        } else {
            let raw = std::rc::Rc::into_raw(values) as usize;
            DEFERRED.lock().unwrap_or_else(|e| e.into_inner()).push((self.owner, raw));
        }
    }
}

/// Lets go of the references other threads dropped for this thread ([`Held`]).
fn drop_deferred() {
    let me = std::thread::current().id();
    let mine: Vec<usize> = {
        let mut deferred = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
        let (mine, others) = deferred.drain(..).partition(|(owner, _)| *owner == me);
        *deferred = others;
        mine.into_iter().map(|(_, raw)| raw).collect()
    };
    for raw in mine {
        // SAFETY: made by `Rc::into_raw` on this thread's reference in `Held::drop`, and taken
        // back once.
        drop(unsafe { std::rc::Rc::from_raw(raw as *const strata_runtime::Tensor) });
    }
}

fn wrap(r: sa::Result<sa::Array>) -> R {
    r.map(PyArr).map_err(err)
}

fn wrap_all(r: sa::Result<Vec<sa::Array>>) -> R<Vec<PyArr>> {
    r.map(|v| v.into_iter().map(PyArr).collect()).map_err(err)
}

fn dtype(name: Option<&str>) -> R<Option<DType>> {
    name.map(|n| sa::dtype::from_name(n).ok_or_else(|| PyTypeError::new_err(format!("unknown dtype `{n}`"))))
        .transpose()
}

/// A placement as the Python layer passes it: a device name, or `(device, ranks)` for a team
/// (`ranks` 0: every rank of the job, `strata.world`).
#[derive(FromPyObject)]
enum Dev {
    Name(String),
    Team(String, u32),
}

fn place(device: Option<Dev>) -> Place {
    match device {
        None => Place::host(),
        Some(Dev::Name(d)) => Place::device(&d),
        Some(Dev::Team(d, r)) => Place { device: d, team: Some(r) },
    }
}

/// A Python scalar (bool, int, float, complex) as a weak operand.
fn weak(v: &Bound<'_, PyAny>) -> R<Weak> {
    // A Python float first, read without a failed integer conversion (which raises and
    // formats a Python exception: ~2 µs, most of a traced `0.5 * x`).
    if let Ok(f) = v.cast_exact::<pyo3::types::PyFloat>() {
        return Ok(Weak::Float(f.value()));
    }
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Ok(Weak::Bool(b.is_true()));
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return match v.extract::<i64>() {
            Ok(i) => Ok(Weak::Int(i)),
            Err(_) => Err(PyValueError::new_err(format!("the integer {v} does not fit 64 bits"))),
        };
    }
    if let Ok(c) = v.cast::<pyo3::types::PyComplex>() {
        return Ok(Weak::Complex(c.real(), c.imag()));
    }
    v.extract::<f64>()
        .map(Weak::Float)
        .map_err(|_| PyTypeError::new_err(format!("expected an array or a Python scalar, got `{}`", v.get_type())))
}

/// An array or a Python scalar.
enum Opnd {
    A(sa::Array),
    S(Weak),
}

impl Opnd {
    fn of(v: &Bound<'_, PyAny>) -> R<Opnd> {
        match v.cast::<PyArr>() {
            Ok(a) => Ok(Opnd::A(a.borrow().0.clone())),
            Err(_) => weak(v).map(Opnd::S),
        }
    }

    fn operand(&self) -> Operand<'_> {
        match self {
            Opnd::A(a) => Operand::Array(a),
            Opnd::S(w) => Operand::Scalar(*w),
        }
    }
}

#[pymethods]
impl PyArr {
    /// The shape.
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.0.shape().to_vec()
    }

    /// numpy's name of the dtype (`float64`, `int32`, `bool`, …).
    #[getter]
    fn dtype(&self) -> &'static str {
        sa::dtype::name(self.0.dtype())
    }

    /// The device (`cpu`, or a named device).
    #[getter]
    fn device(&self) -> String {
        self.0.device().to_string()
    }

    /// The ranks of the team the array is distributed over (0: every rank of the job), or
    /// `None`.
    #[getter]
    fn team(&self) -> Option<u32> {
        self.0.place().team
    }

    /// The program computing the array, as Strata text.
    fn program_text(&self) -> R<String> {
        self.0.program_text().map_err(err)
    }

    /// Evaluates the array and returns its values as a read-only numpy array over Strata's
    /// own memory, without a copy (`np.asarray(x)`). Strata's arrays are values that never
    /// change, so the view cannot be written; it keeps the values alive after the array is
    /// gone (their buffer is then not reused for a later result).
    fn values_view<'py>(&self, py: Python<'py>) -> R<Bound<'py, PyAny>> {
        use strata_runtime::{Column, Data};
        let t = self.0.eval_whole().map_err(err)?;
        let shape = self.0.shape().to_vec();
        let Data::Scalars(c) = &t.data else { return self.to_numpy(py) };
        drop_deferred();
        let held = Bound::new(py, Held::new(t.clone()))?.into_any();
        macro_rules! view {
            ($v:expr) => {{
                let a = numpy::ndarray::ArrayViewD::from_shape(shape, &$v[..])
                    .map_err(|e| PyValueError::new_err(format!("values_view: {e}")))?;
                // SAFETY: `held` (the array's base object) keeps the tensor, and so the values'
                // buffer, alive and unmoved; nothing writes a computed value (see `Held`).
                let v = unsafe { numpy::PyArray::borrow_from_array(&a, held) };
                drop(v.readwrite().make_nonwriteable());
                v.into_any()
            }};
        }
        Ok(match c {
            Column::Bool(v) => view!(v),
            Column::I8(v) => view!(v),
            Column::I16(v) => view!(v),
            Column::I32(v) => view!(v),
            Column::I64(v) | Column::Index(v) => view!(v),
            Column::U8(v) => view!(v),
            Column::U16(v) => view!(v),
            Column::U32(v) => view!(v),
            Column::U64(v) => view!(v),
            Column::F32(v) => view!(v),
            Column::F64(v) => view!(v),
            Column::C64(v) => view!(v),
            Column::C128(v) => view!(v),
        })
    }

    /// Evaluates the array and returns its values as a numpy array (which owns them). The
    /// traced arrays are single-threaded (shared nodes), so the GIL is held while they run.
    /// The value of a 0-d array as a Python scalar (`bool`, `int`, `float` or `complex` by
    /// its dtype): `float(x)` and its kin, without a numpy array in between.
    fn item<'py>(&self, py: Python<'py>) -> R<Bound<'py, PyAny>> {
        use pyo3::IntoPyObjectExt;
        if self.0.ndim() != 0 {
            return Err(PyTypeError::new_err(format!(
                "only 0-d arrays convert to Python scalars (this one has shape {:?})",
                self.0.shape()
            )));
        }
        macro_rules! one {
            (num_complex::Complex32) => {{
                let v = self.0.to_vec::<num_complex::Complex32>().map_err(err)?[0];
                pyo3::types::PyComplex::from_doubles(py, v.re.into(), v.im.into()).into_any()
            }};
            (num_complex::Complex64) => {{
                let v = self.0.to_vec::<num_complex::Complex64>().map_err(err)?[0];
                pyo3::types::PyComplex::from_doubles(py, v.re, v.im).into_any()
            }};
            ($t:ty) => {
                self.0.to_vec::<$t>().map_err(err)?[0].into_bound_py_any(py)?
            };
        }
        Ok(crate::convert::by_scalar!(self.0.dtype(), one))
    }

    fn to_numpy<'py>(&self, py: Python<'py>) -> R<Bound<'py, PyAny>> {
        let shape = self.0.shape().to_vec();
        macro_rules! out {
            ($t:ty) => {{
                let v: Vec<$t> = self.0.to_vec::<$t>().map_err(err)?;
                PyArray1::from_vec(py, v).reshape(shape)?.into_any()
            }};
        }
        Ok(crate::convert::by_scalar!(self.0.dtype(), out))
    }
}

/// `$make(values)` with a numpy array's elements (any strides) as a `Vec` of its dtype (every
/// dtype Strata has), or a `TypeError` naming another dtype: `$make` is written once and
/// expanded per element type.
macro_rules! numpy_values {
    ($arr:expr, $make:expr) => {{
        let arr = $arr;
        macro_rules! read {
            ($t:ty) => {{
                $make($crate::convert::elements(&arr.cast::<PyArrayDyn<$t>>()?.readonly()))
            }};
        }
        // By kind and size (`convert::scalar_of`): `str(dtype)` runs numpy's Python code
        // (~8 µs, most of a small `asarray`).
        match $crate::convert::scalar_of(&arr.dtype()) {
            Some(s) => $crate::convert::by_scalar!(s, read),
            None => {
                let other = arr.dtype().to_string();
                return Err(PyTypeError::new_err(format!("dtype {other} is not an array-API dtype Strata has")));
            }
        }
    }};
}
pub(crate) use numpy_values;

/// A numpy array (any dtype Strata has, any strides) as an array on `device` (no team: team
/// arrays are made from this rank's rows by `spmd.from_block`).
#[pyfunction]
#[pyo3(signature = (a, device = None))]
fn from_numpy(a: &Bound<'_, PyAny>, device: Option<&str>) -> R {
    let arr = a.cast::<PyUntypedArray>().map_err(|_| PyTypeError::new_err("expected a numpy array"))?;
    let shape = arr.shape().to_vec();
    let made = numpy_values!(arr, |v| sa::Array::from_vec(&shape, v));
    let x = made.map_err(err)?;
    match device {
        Some(d) if d != "cpu" => wrap(sa::to_device(&x, d)),
        _ => Ok(PyArr(x)),
    }
}

macro_rules! unaries {
    ($($name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "(x)` of the array API.")]
            #[pyfunction]
            fn $name(x: &PyArr) -> R {
                wrap(sa::$name(&x.0))
            }
        )*
        fn add_unaries(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            Ok(())
        }
    };
}

unaries!(
    abs,
    negative,
    positive,
    square,
    sign,
    isnan,
    isinf,
    isfinite,
    signbit,
    logical_not,
    bitwise_invert,
    conj,
    real,
    imag,
    sqrt,
    exp,
    expm1,
    log,
    log1p,
    log2,
    log10,
    sin,
    cos,
    tan,
    asin,
    acos,
    atan,
    sinh,
    cosh,
    tanh,
    asinh,
    acosh,
    atanh,
    floor,
    ceil,
    trunc,
    round,
    matrix_transpose,
    zeros_like,
    ones_like,
    empty_like
);

macro_rules! binaries {
    ($($name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "(a, b)` of the array API (arrays or Python scalars).")]
            #[pyfunction]
            fn $name(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> R {
                let (a, b) = (Opnd::of(a)?, Opnd::of(b)?);
                wrap(sa::$name(a.operand(), b.operand()))
            }
        )*
        fn add_binaries(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            Ok(())
        }
    };
}

binaries!(
    add,
    subtract,
    multiply,
    divide,
    pow,
    floor_divide,
    remainder,
    maximum,
    minimum,
    atan2,
    hypot,
    copysign,
    logaddexp,
    nextafter,
    equal,
    not_equal,
    less,
    less_equal,
    greater,
    greater_equal,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    bitwise_left_shift,
    bitwise_right_shift,
    logical_and,
    logical_or,
    logical_xor,
);

/// `where(cond, a, b)`.
#[pyfunction]
fn where_(cond: &PyArr, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> R {
    let (a, b) = (Opnd::of(a)?, Opnd::of(b)?);
    wrap(sa::where_(&cond.0, a.operand(), b.operand()))
}

/// `clip(x, min, max)`.
#[pyfunction]
#[pyo3(signature = (x, min = None, max = None))]
fn clip(x: &PyArr, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> R {
    let lo = min.map(Opnd::of).transpose()?;
    let hi = max.map(Opnd::of).transpose()?;
    wrap(sa::clip(&x.0, lo.as_ref().map(Opnd::operand), hi.as_ref().map(Opnd::operand)))
}

/// `astype(x, dtype)`.
#[pyfunction]
fn astype(x: &PyArr, dtype_name: &str) -> R {
    wrap(sa::astype(&x.0, dtype(Some(dtype_name))?.expect("named")))
}

// ---- creation ----

/// `full(shape, value, dtype, device)`.
#[pyfunction]
#[pyo3(signature = (shape, value, dtype_name = None, device = None))]
fn full(shape: Vec<usize>, value: &Bound<'_, PyAny>, dtype_name: Option<&str>, device: Option<Dev>) -> R {
    wrap(sa::full(&shape, weak(value)?, dtype(dtype_name)?, &place(device)))
}

/// `full_like(x, value, dtype)`.
#[pyfunction]
#[pyo3(signature = (x, value, dtype_name = None))]
fn full_like(x: &PyArr, value: &Bound<'_, PyAny>, dtype_name: Option<&str>) -> R {
    wrap(sa::full_like(&x.0, weak(value)?, dtype(dtype_name)?))
}

/// `arange(start, stop, step, dtype, device)`.
#[pyfunction]
#[pyo3(signature = (start, stop = None, step = None, dtype_name = None, device = None))]
fn arange(
    start: &Bound<'_, PyAny>,
    stop: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype_name: Option<&str>,
    device: Option<Dev>,
) -> R {
    let step = step.map(weak).transpose()?.unwrap_or(Weak::Int(1));
    wrap(sa::arange(weak(start)?, stop.map(weak).transpose()?, step, dtype(dtype_name)?, &place(device)))
}

/// `eye(n, m, k, dtype, device)`.
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype_name = None, device = None))]
fn eye(n: usize, m: Option<usize>, k: i64, dtype_name: Option<&str>, device: Option<Dev>) -> R {
    wrap(sa::eye(n, m, k, dtype(dtype_name)?, &place(device)))
}

/// `linspace(start, stop, num, endpoint, dtype, device)`.
#[pyfunction]
#[pyo3(signature = (start, stop, num, endpoint = true, dtype_name = None, device = None))]
fn linspace(start: f64, stop: f64, num: usize, endpoint: bool, dtype_name: Option<&str>, device: Option<Dev>) -> R {
    wrap(sa::linspace(start, stop, num, endpoint, dtype(dtype_name)?, &place(device)))
}

/// `meshgrid(*arrays, indexing)`.
#[pyfunction]
fn meshgrid(arrays: Vec<PyRef<'_, PyArr>>, indexing: &str) -> R<Vec<PyArr>> {
    let refs: Vec<&sa::Array> = arrays.iter().map(|a| &a.0).collect();
    wrap_all(sa::meshgrid(&refs, indexing))
}

/// `tril(x, k)`.
#[pyfunction]
fn tril(x: &PyArr, k: i64) -> R {
    wrap(sa::tril(&x.0, k))
}

/// `triu(x, k)`.
#[pyfunction]
fn triu(x: &PyArr, k: i64) -> R {
    wrap(sa::triu(&x.0, k))
}

// ---- reductions and statistics ----

/// `sum` / `prod` (with `dtype`).
#[pyfunction]
#[pyo3(signature = (name, x, axis = None, dtype_name = None, keepdims = false))]
fn accumulate(name: &str, x: &PyArr, axis: Option<Vec<isize>>, dtype_name: Option<&str>, keepdims: bool) -> R {
    let dt = dtype(dtype_name)?;
    match name {
        "sum" => wrap(sa::sum(&x.0, axis.as_deref(), dt, keepdims)),
        _ => wrap(sa::prod(&x.0, axis.as_deref(), dt, keepdims)),
    }
}

/// `max`, `min`, `mean`, `any`, `all`.
#[pyfunction]
#[pyo3(signature = (name, x, axis = None, keepdims = false))]
fn reduce(name: &str, x: &PyArr, axis: Option<Vec<isize>>, keepdims: bool) -> R {
    let ax = axis.as_deref();
    wrap(match name {
        "max" => sa::max(&x.0, ax, keepdims),
        "min" => sa::min(&x.0, ax, keepdims),
        "mean" => sa::mean(&x.0, ax, keepdims),
        "any" => sa::any(&x.0, ax, keepdims),
        _ => sa::all(&x.0, ax, keepdims),
    })
}

/// `var` / `std` with `correction`.
#[pyfunction]
#[pyo3(signature = (name, x, axis = None, correction = 0.0, keepdims = false))]
fn spread(name: &str, x: &PyArr, axis: Option<Vec<isize>>, correction: f64, keepdims: bool) -> R {
    match name {
        "var" => wrap(sa::var(&x.0, axis.as_deref(), correction, keepdims)),
        _ => wrap(sa::std(&x.0, axis.as_deref(), correction, keepdims)),
    }
}

/// `argmax` / `argmin`.
#[pyfunction]
#[pyo3(signature = (name, x, axis = None, keepdims = false))]
fn arg_best(name: &str, x: &PyArr, axis: Option<isize>, keepdims: bool) -> R {
    match name {
        "argmax" => wrap(sa::argmax(&x.0, axis, keepdims)),
        _ => wrap(sa::argmin(&x.0, axis, keepdims)),
    }
}

/// `cumulative_sum(x, axis, dtype, include_initial)`.
#[pyfunction]
#[pyo3(signature = (x, axis = None, dtype_name = None, include_initial = false))]
fn cumulative_sum(x: &PyArr, axis: Option<isize>, dtype_name: Option<&str>, include_initial: bool) -> R {
    wrap(sa::cumulative_sum(&x.0, axis, dtype(dtype_name)?, include_initial))
}

/// `cumulative_prod(x, axis, dtype, include_initial)`.
#[pyfunction]
#[pyo3(signature = (x, axis = None, dtype_name = None, include_initial = false))]
fn cumulative_prod(x: &PyArr, axis: Option<isize>, dtype_name: Option<&str>, include_initial: bool) -> R {
    wrap(sa::cumulative_prod(&x.0, axis, dtype(dtype_name)?, include_initial))
}

// ---- manipulation ----

/// `broadcast_to(x, shape)`.
#[pyfunction]
fn broadcast_to(x: &PyArr, shape: Vec<usize>) -> R {
    wrap(sa::broadcast_to(&x.0, &shape))
}

/// `broadcast_arrays(*arrays)`.
#[pyfunction]
fn broadcast_arrays(arrays: Vec<PyRef<'_, PyArr>>) -> R<Vec<PyArr>> {
    let refs: Vec<&sa::Array> = arrays.iter().map(|a| &a.0).collect();
    wrap_all(sa::broadcast_arrays(&refs))
}

/// `permute_dims(x, axes)`.
#[pyfunction]
fn permute_dims(x: &PyArr, axes: Vec<isize>) -> R {
    wrap(sa::permute_dims(&x.0, &axes))
}

/// `expand_dims(x, axis)`.
#[pyfunction]
fn expand_dims(x: &PyArr, axis: isize) -> R {
    wrap(sa::expand_dims(&x.0, axis))
}

/// `squeeze(x, axis)`.
#[pyfunction]
fn squeeze(x: &PyArr, axis: Vec<isize>) -> R {
    wrap(sa::squeeze(&x.0, &axis))
}

/// `reshape(x, shape, copy)`.
#[pyfunction]
#[pyo3(signature = (x, shape, copy = None))]
fn reshape(x: &PyArr, shape: Vec<isize>, copy: Option<bool>) -> R {
    wrap(sa::reshape(&x.0, &shape, copy))
}

/// `flip(x, axis)`.
#[pyfunction]
#[pyo3(signature = (x, axis = None))]
fn flip(x: &PyArr, axis: Option<Vec<isize>>) -> R {
    wrap(sa::flip(&x.0, axis.as_deref()))
}

/// `roll(x, shift, axis)`.
#[pyfunction]
#[pyo3(signature = (x, shift, axis = None))]
fn roll(x: &PyArr, shift: Vec<i64>, axis: Option<Vec<isize>>) -> R {
    wrap(sa::roll(&x.0, &shift, axis.as_deref()))
}

/// `concat(arrays, axis)`.
#[pyfunction]
#[pyo3(signature = (arrays, axis = Some(0)))]
fn concat(arrays: Vec<PyRef<'_, PyArr>>, axis: Option<isize>) -> R {
    let refs: Vec<&sa::Array> = arrays.iter().map(|a| &a.0).collect();
    wrap(sa::concat(&refs, axis))
}

/// `stack(arrays, axis)`.
#[pyfunction]
#[pyo3(signature = (arrays, axis = 0))]
fn stack(arrays: Vec<PyRef<'_, PyArr>>, axis: isize) -> R {
    let refs: Vec<&sa::Array> = arrays.iter().map(|a| &a.0).collect();
    wrap(sa::stack(&refs, axis))
}

/// `moveaxis(x, source, destination)`.
#[pyfunction]
fn moveaxis(x: &PyArr, source: Vec<isize>, destination: Vec<isize>) -> R {
    wrap(sa::moveaxis(&x.0, &source, &destination))
}

/// `repeat(x, repeats, axis)`: `repeats` an int or an integer array.
#[pyfunction]
#[pyo3(signature = (x, repeats, axis = None))]
fn repeat(x: &PyArr, repeats: &Bound<'_, PyAny>, axis: Option<isize>) -> R {
    match repeats.cast::<PyArr>() {
        Ok(r) => wrap(sa::repeat(&x.0, sa::Repeats::Each(&r.borrow().0), axis)),
        Err(_) => wrap(sa::repeat(&x.0, sa::Repeats::Count(repeats.extract()?), axis)),
    }
}

/// `tile(x, reps)`.
#[pyfunction]
fn tile(x: &PyArr, reps: Vec<usize>) -> R {
    wrap(sa::tile(&x.0, &reps))
}

/// `unstack(x, axis)`.
#[pyfunction]
fn unstack(x: &PyArr, axis: isize) -> R<Vec<PyArr>> {
    wrap_all(sa::unstack(&x.0, axis))
}

// ---- indexing, searching, sorting, sets ----

/// Basic indexing: `key` a list of `("at", i)`, `("slice", start, stop, step)`, `("new",)` and
/// `("ellipsis",)`.
#[pyfunction]
fn index(x: &PyArr, key: Vec<Bound<'_, PyAny>>) -> R {
    wrap(sa::index(&x.0, &index_key(key)?))
}

/// `x` with the part `key` (as for [`index`]: integers, slices of step 1, `...`) replaced by
/// `value`, a new array (`x[key] = value`).
#[pyfunction]
fn set_index(x: &PyArr, key: Vec<Bound<'_, PyAny>>, value: &PyArr) -> R {
    wrap(sa::set_index(&x.0, &index_key(key)?, &value.0))
}

/// A basic index from its Python form.
fn index_key(key: Vec<Bound<'_, PyAny>>) -> R<Vec<Index>> {
    let mut idx = Vec::with_capacity(key.len());
    for k in key {
        let kind: String = k.get_item(0)?.extract()?;
        idx.push(match kind.as_str() {
            "at" => Index::At(k.get_item(1)?.extract()?),
            "slice" => Index::Slice(k.get_item(1)?.extract()?, k.get_item(2)?.extract()?, k.get_item(3)?.extract()?),
            "new" => Index::NewAxis,
            _ => Index::Ellipsis,
        });
    }
    Ok(idx)
}

/// `x` distributed over a team of `ranks` (0: every rank of the job) along its first axis.
#[pyfunction]
fn distribute(x: &PyArr, ranks: u32) -> R {
    wrap(sa::distribute(&x.0, ranks))
}

/// `x` gathered from its team into one array on its device.
#[pyfunction]
fn collect(x: &PyArr) -> R {
    wrap(sa::collect(&x.0))
}

/// `x` moved to `device` (`"cpu"`, `"gpu0"`, …): an explicit move; what reads the result
/// computes there (compute follows data).
#[pyfunction]
fn to_device(x: &PyArr, device: &str) -> R {
    wrap(sa::to_device(&x.0, device))
}

/// `take(x, indices, axis)`.
#[pyfunction]
#[pyo3(signature = (x, indices, axis = None))]
fn take(x: &PyArr, indices: &PyArr, axis: Option<isize>) -> R {
    wrap(sa::take(&x.0, &indices.0, axis))
}

/// Boolean-mask indexing `x[mask]`.
#[pyfunction]
fn mask(x: &PyArr, m: &PyArr) -> R {
    wrap(sa::mask(&x.0, &m.0))
}

/// `sort` / `argsort`.
#[pyfunction]
#[pyo3(signature = (name, x, axis = -1, descending = false, stable = true))]
fn sorting(name: &str, x: &PyArr, axis: isize, descending: bool, stable: bool) -> R {
    match name {
        "sort" => wrap(sa::sort(&x.0, axis, descending, stable)),
        _ => wrap(sa::argsort(&x.0, axis, descending, stable)),
    }
}

/// `unique_all` (values, indices, inverse_indices, counts), `unique_counts`,
/// `unique_inverse`, `unique_values`.
#[pyfunction]
fn unique(name: &str, x: &PyArr) -> R<Vec<PyArr>> {
    let u = |r: sa::Result<(sa::Array, sa::Array)>| r.map(|(a, b)| vec![PyArr(a), PyArr(b)]).map_err(err);
    match name {
        "all" => {
            let q = sa::unique_all(&x.0).map_err(err)?;
            Ok([q.values, q.indices, q.inverse_indices, q.counts].into_iter().map(PyArr).collect())
        }
        "counts" => u(sa::unique_counts(&x.0)),
        "inverse" => u(sa::unique_inverse(&x.0)),
        _ => wrap(sa::unique_values(&x.0)).map(|a| vec![a]),
    }
}

/// `nonzero(x)`.
#[pyfunction]
fn nonzero(x: &PyArr) -> R<Vec<PyArr>> {
    wrap_all(sa::nonzero(&x.0))
}

/// `searchsorted(x1, x2, side)`.
#[pyfunction]
fn searchsorted(x1: &PyArr, x2: &PyArr, right: bool) -> R {
    wrap(sa::searchsorted(&x1.0, &x2.0, right))
}

// ---- linear algebra ----

/// `matmul(a, b)`.
#[pyfunction]
fn matmul(a: &PyArr, b: &PyArr) -> R {
    wrap(sa::matmul(&a.0, &b.0))
}

/// `tensordot(a, b, axes)`: `axes` a count or two axis lists.
#[pyfunction]
fn tensordot(a: &PyArr, b: &PyArr, axes: &Bound<'_, PyAny>) -> R {
    let axes = match axes.extract::<usize>() {
        Ok(n) => sa::Axes::Count(n),
        Err(_) => {
            let (x, y): (Vec<isize>, Vec<isize>) = axes.extract()?;
            sa::Axes::Pairs(x, y)
        }
    };
    wrap(sa::tensordot(&a.0, &b.0, axes))
}

/// The `linalg` extension's factorizations by name (`cholesky`, `det`, `slogdet`, `inv`,
/// `eigh`, `eigvalsh`, `qr`, `svd`, `svdvals`, `matrix_rank`, `pinv`): one array, or a tuple
/// for the factorizations with several results. `flag` is `upper` (cholesky), `complete`
/// (qr) or `full_matrices` (svd); `rtol` the cutoff of `matrix_rank` and `pinv`.
#[pyfunction]
#[pyo3(signature = (name, x, flag = false, rtol = None))]
fn factorize(name: &str, x: &PyArr, flag: bool, rtol: Option<f64>) -> R<Vec<PyArr>> {
    let x = &x.0;
    let one = |r: sa::Result<sa::Array>| r.map(|a| vec![PyArr(a)]).map_err(err);
    let two = |r: sa::Result<(sa::Array, sa::Array)>| r.map(|(a, b)| vec![PyArr(a), PyArr(b)]).map_err(err);
    match name {
        "cholesky" => one(sa::cholesky(x, flag)),
        "det" => one(sa::det(x)),
        "slogdet" => two(sa::slogdet(x)),
        "inv" => one(sa::inv(x)),
        "eigh" => two(sa::eigh(x, true).map(|(w, v)| (w, v.expect("eigenvectors asked for")))),
        "eigvalsh" => one(sa::eigh(x, false).map(|(w, _)| w)),
        "qr" => two(sa::qr(x, flag)),
        "svd" => {
            let (u, s, vh) = sa::svd(x, flag, true).map_err(err)?;
            Ok(vec![PyArr(u.expect("vectors asked for")), PyArr(s), PyArr(vh.expect("vectors asked for"))])
        }
        "svdvals" => one(sa::svd(x, false, false).map(|(_, s, _)| s)),
        "matrix_rank" => one(sa::matrix_rank(x, rtol)),
        "pinv" => one(sa::pinv(x, rtol)),
        other => Err(PyValueError::new_err(format!("no factorization `{other}`"))),
    }
}

/// `linalg.solve(x1, x2)`.
#[pyfunction]
fn solve(x1: &PyArr, x2: &PyArr) -> R {
    wrap(sa::solve(&x1.0, &x2.0))
}

/// One-axis transforms of the `fft` extension: `fft`, `ifft`, `rfft`, `irfft` of `x` along
/// `axis` over `n` points with normalization `norm`.
#[pyfunction]
#[pyo3(signature = (name, x, n, axis, norm))]
fn transform(name: &str, x: &PyArr, n: Option<usize>, axis: isize, norm: &str) -> R {
    let norm = sa::fft::Norm::from_name(norm).ok_or_else(|| {
        PyValueError::new_err(format!("norm {norm:?}: expected \"backward\", \"ortho\" or \"forward\""))
    })?;
    match name {
        "fft" => wrap(sa::fft::fft(&x.0, n, axis, norm, false)),
        "ifft" => wrap(sa::fft::fft(&x.0, n, axis, norm, true)),
        "rfft" => wrap(sa::fft::rfft(&x.0, n, axis, norm)),
        _ => wrap(sa::fft::irfft(&x.0, n, axis, norm)),
    }
}

/// `vecdot(a, b, axis)`.
#[pyfunction]
fn vecdot(a: &PyArr, b: &PyArr, axis: isize) -> R {
    wrap(sa::vecdot(&a.0, &b.0, axis))
}

// ---- dtypes ----

/// The promoted dtype of `dtypes` (names), by the array API's rules (numpy 2's where silent).
#[pyfunction]
fn result_type(dtypes: Vec<String>) -> R<&'static str> {
    let ds: Vec<DType> = dtypes.iter().map(|n| dtype(Some(n)).map(|d| d.expect("named"))).collect::<R<_>>()?;
    sa::dtype::result_type("result_type", &ds).map(sa::dtype::name).map_err(err)
}

/// `can_cast(from, to)` (names).
#[pyfunction]
fn can_cast(from: &str, to: &str) -> R<bool> {
    Ok(sa::dtype::can_cast(dtype(Some(from))?.expect("named"), dtype(Some(to))?.expect("named")))
}

/// This thread's program cache counters: `{"hits", "misses", "built", "native_runs",
/// "interpreted_runs", "distributed_runs"}` (a miss verifies and prepares a new program; `built`
/// counts programs built from traced operations, which a loop's later steps do not), and the
/// process's `"libraries"`: the compiled kernel libraries loaded, which a new size of a program
/// already run does not increase (kernels take their extents as arguments), and `"compiling"`:
/// the background compiles queued or running (tiered execution, sizes' specializations).
#[pyfunction]
fn cache_stats(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let s = sa::cache_stats();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    d.set_item("built", s.built)?;
    d.set_item("native_runs", s.native_runs)?;
    d.set_item("interpreted_runs", s.interpreted_runs)?;
    d.set_item("distributed_runs", s.distributed_runs)?;
    d.set_item("libraries", strata_engine::libraries_loaded())?;
    d.set_item("compiling", strata_engine::tier::compiling())?;
    Ok(d)
}

/// Registers the submodule `array`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "array")?;
    m.add_class::<PyArr>()?;
    add_unaries(&m)?;
    add_binaries(&m)?;
    for f in [
        wrap_pyfunction!(from_numpy, &m)?,
        wrap_pyfunction!(where_, &m)?,
        wrap_pyfunction!(clip, &m)?,
        wrap_pyfunction!(astype, &m)?,
        wrap_pyfunction!(full, &m)?,
        wrap_pyfunction!(full_like, &m)?,
        wrap_pyfunction!(arange, &m)?,
        wrap_pyfunction!(eye, &m)?,
        wrap_pyfunction!(linspace, &m)?,
        wrap_pyfunction!(meshgrid, &m)?,
        wrap_pyfunction!(tril, &m)?,
        wrap_pyfunction!(triu, &m)?,
        wrap_pyfunction!(accumulate, &m)?,
        wrap_pyfunction!(reduce, &m)?,
        wrap_pyfunction!(spread, &m)?,
        wrap_pyfunction!(arg_best, &m)?,
        wrap_pyfunction!(cumulative_sum, &m)?,
        wrap_pyfunction!(cumulative_prod, &m)?,
        wrap_pyfunction!(broadcast_to, &m)?,
        wrap_pyfunction!(broadcast_arrays, &m)?,
        wrap_pyfunction!(permute_dims, &m)?,
        wrap_pyfunction!(expand_dims, &m)?,
        wrap_pyfunction!(squeeze, &m)?,
        wrap_pyfunction!(reshape, &m)?,
        wrap_pyfunction!(flip, &m)?,
        wrap_pyfunction!(roll, &m)?,
        wrap_pyfunction!(concat, &m)?,
        wrap_pyfunction!(stack, &m)?,
        wrap_pyfunction!(moveaxis, &m)?,
        wrap_pyfunction!(repeat, &m)?,
        wrap_pyfunction!(tile, &m)?,
        wrap_pyfunction!(unstack, &m)?,
        wrap_pyfunction!(index, &m)?,
        wrap_pyfunction!(set_index, &m)?,
        wrap_pyfunction!(distribute, &m)?,
        wrap_pyfunction!(collect, &m)?,
        wrap_pyfunction!(to_device, &m)?,
        wrap_pyfunction!(take, &m)?,
        wrap_pyfunction!(mask, &m)?,
        wrap_pyfunction!(sorting, &m)?,
        wrap_pyfunction!(unique, &m)?,
        wrap_pyfunction!(nonzero, &m)?,
        wrap_pyfunction!(searchsorted, &m)?,
        wrap_pyfunction!(matmul, &m)?,
        wrap_pyfunction!(tensordot, &m)?,
        wrap_pyfunction!(vecdot, &m)?,
        wrap_pyfunction!(factorize, &m)?,
        wrap_pyfunction!(solve, &m)?,
        wrap_pyfunction!(transform, &m)?,
        wrap_pyfunction!(result_type, &m)?,
        wrap_pyfunction!(can_cast, &m)?,
        wrap_pyfunction!(cache_stats, &m)?,
    ] {
        m.add_function(f)?;
    }
    parent.add_submodule(&m)?;
    Ok(())
}
