//! `strata.fields`' expressions as IR values.
//!
//! Every field operation of `python/strata/fields.py` makes a [`FieldValue`]: an IR op over
//! earlier values, typed by the verifier's rules the moment it is made (through
//! `strata_verify::build`), so the Python side never computes an interval, a broadcast or a
//! shift itself, and a wrong operation raises at the line that wrote it. Evaluating one builds
//! the module of the values it reaches ([`field_program`]): its leaves (arrays, tables, scalar
//! arguments) become parameters in the order first reached, and the payload each leaf carries
//! (the array, or the stencil argument it stands for) is handed back so the caller can pass the
//! right value to each. Programs are cached by IR structure, so the same expression over the
//! same types is verified and compiled once.
//!
//! Payload functions (folds, scan steps) and every type live in one library per thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::thread::ThreadId;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};

use strata_entity::Handle;
use strata_ir::{
    algebra, BinaryOp, Device, DimName, Einsum, Function, FunctionKind, Init, Interval, Level, LevelFormat, Literal,
    Mode, Module, Op, ParamMode, PermKind, Placement, Scalar, Team, Type, TypeArena, UnaryOp, Value,
};
use strata_verify::build::{BuildError, FunctionBuilder, ModuleBuilder};

use crate::errors::VerifyError;
use crate::program::Program;

thread_local! {
    /// Types and payload functions of this thread's field values.
    static LIB: RefCell<ModuleBuilder> = RefCell::new(ModuleBuilder::new());
    /// Programs by IR structure (at most [`strata_engine::MEMO_CAPACITY`], as the engine's
    /// memo: a loop over ever new grid sizes holds a bounded set).
    static PROGRAMS: RefCell<strata_engine::Bounded<strata_engine::StructureKey, Py<Program>>> = RefCell::default();
    /// How many programs were built into `PROGRAMS` ([`field_programs`]).
    static BUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[derive(Debug)]
struct Node {
    /// The op (operand `k` written as the handle of index `k`); `None` for a leaf.
    op: Option<Op>,
    args: Vec<Rc<Node>>,
    /// The type, in [`LIB`]'s arena.
    ty: Handle<Type>,
    /// What a leaf stands for (given back by [`field_program`]).
    payload: Option<Py<PyAny>>,
    /// The thread whose [`LIB`] holds `ty` (and its operands' types).
    thread: ThreadId,
}

/// A field expression's IR value: its type inferred, its operands kept.
///
/// Python may drop one on any thread (its garbage collector runs where memory is allocated:
/// GT4Py compiles in worker threads). Every access and drop holds the GIL, so the reference
/// counts are never touched at once; a value used on a thread other than its own is refused
/// ([`on_this_thread`]), since its types live in its thread's [`LIB`].
#[pyclass(module = "strata._strata")]
pub struct FieldValue(Rc<Node>);

// SAFETY: see `FieldValue`: all access is under the GIL (this extension is built for
// GIL-holding interpreters: abi3), and nodes are only read on the thread that made them.
unsafe impl Send for FieldValue {}
unsafe impl Sync for FieldValue {}

/// Refuses nodes made on another thread (their types are in that thread's [`LIB`]).
fn on_this_thread<'a>(nodes: impl IntoIterator<Item = &'a Rc<Node>>) -> PyResult<()> {
    let here = std::thread::current().id();
    if nodes.into_iter().any(|n| n.thread != here) {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a field expression is used on a thread other than the one that built it",
        ));
    }
    Ok(())
}

#[pymethods]
impl FieldValue {
    /// The dimensions as `(name, start, stop)`, in order (none for a scalar).
    #[getter]
    fn dims(&self) -> PyResult<Vec<(String, i64, i64)>> {
        on_this_thread([&self.0])?;
        Ok(LIB.with(|lib| match &lib.borrow().module().types[self.0.ty] {
            Type::Tensor(t) => {
                t.levels.iter().map(|l| (l.name.as_str().to_string(), l.interval.start, l.interval.stop)).collect()
            }
            _ => Vec::new(),
        }))
    }

    /// The element type: a scalar's name (`"f64"`), or a tuple of them.
    #[getter]
    fn element<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        on_this_thread([&self.0])?;
        LIB.with(|lib| {
            let lib = lib.borrow();
            let types = &lib.module().types;
            element_of(py, types, strata_ir::element_of(types, self.0.ty))
        })
    }

    /// Whether the value is a leaf (a parameter of the programs that read it).
    #[getter]
    fn is_leaf(&self) -> bool {
        self.0.op.is_none()
    }

    /// What the leaf stands for, as given to [`field_param`].
    #[getter]
    fn payload(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.0.payload.as_ref().map(|p| p.clone_ref(py))
    }
}

fn element_of<'py>(py: Python<'py>, types: &strata_ir::TypeArena, ty: Handle<Type>) -> PyResult<Bound<'py, PyAny>> {
    match &types[ty] {
        Type::Scalar(s) => Ok(s.name().into_pyobject(py)?.into_any()),
        Type::Tuple(fields) => {
            let items = fields.iter().map(|&f| element_of(py, types, f)).collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, items)?.into_any())
        }
        Type::Tensor(t) => element_of(py, types, t.element),
        other => Err(PyTypeError::new_err(format!("a field value of type {other:?}"))),
    }
}

fn refused(e: BuildError) -> PyErr {
    VerifyError::new_err(e.to_string())
}

fn scalar(name: &str) -> PyResult<Scalar> {
    Scalar::from_name(name).ok_or_else(|| PyTypeError::new_err(format!("`{name}` is not a Strata scalar type")))
}

/// The element type named by `element`: a scalar's name or a tuple of them.
fn element_type(lib: &mut ModuleBuilder, element: &Bound<'_, PyAny>) -> PyResult<Handle<Type>> {
    if let Ok(t) = element.cast::<PyTuple>() {
        let fields = t.iter().map(|e| element_type(lib, &e)).collect::<PyResult<Vec<_>>>()?;
        return Ok(lib.tuple(fields));
    }
    Ok(lib.scalar(scalar(&element.extract::<String>()?)?))
}

/// A Python number as a literal of type `s`.
fn literal(value: &Bound<'_, PyAny>, s: Scalar) -> PyResult<Literal> {
    if let Ok(t) = value.cast::<PyTuple>() {
        return Ok(Literal::Tuple(t.iter().map(|v| literal(&v, s)).collect::<PyResult<_>>()?));
    }
    Ok(match s {
        Scalar::Bool => Literal::Bool(value.is_truthy()?),
        s if s.is_inexact() => Literal::Float(value.extract::<f64>()?),
        _ if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyInt>() => Literal::Int(value.extract()?),
        _ if value.is_instance_of::<PyFloat>() => {
            let x: f64 = value.extract()?;
            if x.fract() != 0.0 || !x.is_finite() {
                return Err(PyTypeError::new_err(format!("{x} is not a value of an integer field ({s})")));
            }
            Literal::Int(x as i64)
        }
        _ => Literal::Int(value.extract()?),
    })
}

/// `value` as a literal of element type `ty` (a tuple member by member; `None` or a type
/// without a scalar: `f64`).
fn typed_literal(value: &Bound<'_, PyAny>, types: &TypeArena, ty: Option<Handle<Type>>) -> PyResult<Literal> {
    if let (Ok(t), Some(Type::Tuple(members))) = (value.cast::<PyTuple>(), ty.map(|ty| &types[ty])) {
        if t.len() == members.len() {
            return Ok(Literal::Tuple(
                t.iter().zip(members).map(|(v, &m)| typed_literal(&v, types, Some(m))).collect::<PyResult<_>>()?,
            ));
        }
    }
    literal(value, ty.and_then(|ty| strata_ir::element_scalar(types, ty)).unwrap_or(Scalar::F64))
}

/// Makes the value of `op` over `args`: a scratch function with one parameter per operand
/// types it (nothing is added to the library).
fn make(op: Op, args: Vec<Rc<Node>>, declared: Option<Handle<Type>>) -> PyResult<FieldValue> {
    on_this_thread(&args)?;
    let ty = LIB.with(|lib| {
        let mut lib = lib.borrow_mut();
        let mut f = lib.function("_", FunctionKind::Func);
        // Named as the user would say it: the field, or the left and right operands.
        let names: &[&str] = match args.len() {
            1 => &["field"],
            2 => &["lhs", "rhs"],
            _ => &[],
        };
        let params: Vec<Value> = args
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let name = names.get(k).map_or_else(|| format!("operand{k}"), |n| n.to_string());
                f.named_param(name, a.ty, ParamMode::In)
            })
            .collect();
        let mut probe = op.clone();
        for v in probe.operands_mut() {
            *v = params[v.index()];
        }
        let v = match declared {
            Some(t) => f.op_as(probe, t),
            None => f.op(probe),
        }
        .map_err(refused)?;
        Ok::<_, PyErr>(f.ty(v))
    })?;
    Ok(FieldValue(Rc::new(Node { op: Some(op), args, ty, payload: None, thread: std::thread::current().id() })))
}

fn operand(k: usize) -> Value {
    Value::from_index(k)
}

/// A leaf: a parameter of element `element` over `dims` (`(name, start, stop)`), standing for
/// `payload`; with `team`, distributed in blocks of its first dimension over every rank of the
/// job (`team = world`: a GT4Py field on `strata.world`).
#[pyfunction]
#[pyo3(signature = (element, dims, payload, team = false))]
pub fn field_param(
    element: &Bound<'_, PyAny>,
    dims: Vec<(String, i64, i64)>,
    payload: Option<Py<PyAny>>,
    team: bool,
) -> PyResult<FieldValue> {
    let ty = LIB.with(|lib| {
        let mut lib = lib.borrow_mut();
        let e = element_type(&mut lib, element)?;
        let dims: Vec<(DimName, Interval)> =
            dims.into_iter().map(|(n, a, b)| (DimName::new(n), Interval::new(a, b))).collect();
        if !team || dims.is_empty() {
            return Ok::<_, PyErr>(lib.dense(e, &dims));
        }
        let levels = dims
            .iter()
            .enumerate()
            .map(|(k, (n, iv))| {
                let format = if k == 0 { LevelFormat::Block } else { LevelFormat::Dense };
                Level { name: n.clone(), interval: *iv, format }
            })
            .collect();
        let placement = Placement { device: Device::Cpu, team: Some(Team { ranks: Team::WORLD }) };
        Ok(lib.tensor(e, levels, placement))
    })?;
    Ok(FieldValue(Rc::new(Node { op: None, args: Vec::new(), ty, payload, thread: std::thread::current().id() })))
}

/// A scalar constant `value` of type `element`.
#[pyfunction]
pub fn field_constant(value: &Bound<'_, PyAny>, element: &str) -> PyResult<FieldValue> {
    let s = scalar(element)?;
    let ty = LIB.with(|lib| lib.borrow_mut().scalar(s));
    make(Op::Constant { value: literal(value, s)? }, Vec::new(), Some(ty))
}

/// The elementwise builtin `name` (`plus`, `neg`, `select`, … as the IR names them).
#[pyfunction]
pub fn field_builtin(name: &str, operands: Vec<PyRef<'_, FieldValue>>) -> PyResult<FieldValue> {
    let args: Vec<Rc<Node>> = operands.iter().map(|o| o.0.clone()).collect();
    let op = match (UnaryOp::from_keyword(name), BinaryOp::from_keyword(name), args.len()) {
        (Some(op), _, 1) => Op::Unary { op, arg: operand(0) },
        (_, Some(op), 2) => Op::Binary { op, lhs: operand(0), rhs: operand(1) },
        _ if name == "select" && args.len() == 3 => {
            Op::Select { cond: operand(0), on_true: operand(1), on_false: operand(2) }
        }
        _ => return Err(PyTypeError::new_err(format!("no builtin `{name}` of {} operands", args.len()))),
    };
    make(op, args, None)
}

/// `x` converted to `to`.
#[pyfunction]
pub fn field_cast(x: PyRef<'_, FieldValue>, to: &str) -> PyResult<FieldValue> {
    make(Op::Cast { arg: operand(0), to: scalar(to)? }, vec![x.0.clone()], None)
}

/// `x` read at `p + offset` along `dim`.
#[pyfunction]
pub fn field_shift(x: PyRef<'_, FieldValue>, dim: &str, offset: i64) -> PyResult<FieldValue> {
    make(Op::CartesianShift { arg: operand(0), dim: DimName::new(dim), offset }, vec![x.0.clone()], None)
}

/// `x` through the neighbor table `table`: neighbor `k`, or every neighbor (a new neighbor
/// dimension) when `k` is `None`.
#[pyfunction]
#[pyo3(signature = (x, table, k = None))]
pub fn field_neighbor(x: PyRef<'_, FieldValue>, table: PyRef<'_, FieldValue>, k: Option<i64>) -> PyResult<FieldValue> {
    let op = match k {
        Some(neighbor) => Op::UnstructuredShift { arg: operand(0), table: operand(1), neighbor },
        None => Op::ShiftInit { arg: operand(0), table: operand(1) },
    };
    make(op, vec![x.0.clone(), table.0.clone()], None)
}

/// Neighbor `k` of `x`'s last neighbor dimension, which it drops (GT4Py's `list_get`): a
/// skipped neighbor stays skipped.
#[pyfunction]
pub fn field_neighbor_get(x: PyRef<'_, FieldValue>, k: i64) -> PyResult<FieldValue> {
    make(Op::ShiftApply { arg: operand(0), neighbor: k }, vec![x.0.clone()], None)
}

/// The fold of `x` by `op` (`plus`, `maximum`, `minimum`, …) over its last neighbor
/// dimension, from `init` (a number; by default the fold's identity). Skipped neighbors take
/// no part.
#[pyfunction]
#[pyo3(signature = (x, op, init = None))]
pub fn field_neighbor_fold(
    x: PyRef<'_, FieldValue>,
    op: &str,
    init: Option<&Bound<'_, PyAny>>,
) -> PyResult<FieldValue> {
    let op = BinaryOp::from_keyword(op).ok_or_else(|| PyTypeError::new_err(format!("no fold `{op}`")))?;
    on_this_thread([&x.0])?;
    let (dims, element) = LIB.with(|lib| {
        let lib = lib.borrow();
        let types = &lib.module().types;
        let dims: Vec<DimName> = match &types[x.0.ty] {
            Type::Tensor(t) => t.levels.iter().map(|l| l.name.clone()).collect(),
            _ => Vec::new(),
        };
        (dims, strata_ir::element_scalar(types, x.0.ty))
    });
    let last = dims.iter().filter_map(DimName::neighbor_counter_index).max();
    let (Some(last), Some(element)) = (last, element) else {
        return Err(VerifyError::new_err(
            "a neighbor reduction needs a field of numbers shifted through a connectivity (`x(E2V)`)",
        ));
    };
    let init = match init {
        Some(v) => literal(v, element)?,
        None => match algebra::identity(op, element)
            .ok_or_else(|| VerifyError::new_err(format!("`{}` has no identity on {element}", op.keyword())))?
        {
            algebra::Constant::Float(v) => Literal::Float(v),
            algebra::Constant::Int(v) => Literal::Int(v as i64),
            algebra::Constant::Bool(v) => Literal::Bool(v),
        },
    };
    let func = LIB.with(|lib| lib.borrow_mut().binary_function(op, element)).map_err(refused)?;
    let letters: Vec<char> = (0..dims.len()).map(|i| (b'a' + i as u8) as char).collect();
    let output =
        dims.iter().zip(&letters).filter(|(d, _)| d.neighbor_counter_index() != Some(last)).map(|(_, &c)| c).collect();
    let subscripts = Einsum { inputs: vec![letters], output };
    make(Op::MapReduce { func, args: vec![operand(0)], init: Init::Literal(init), subscripts }, vec![x.0.clone()], None)
}

/// The fields as one field of tuples.
#[pyfunction]
pub fn field_make_tuple(fields: Vec<PyRef<'_, FieldValue>>) -> PyResult<FieldValue> {
    let args: Vec<Rc<Node>> = fields.iter().map(|f| f.0.clone()).collect();
    make(Op::MakeTuple { fields: (0..args.len()).map(operand).collect() }, args, None)
}

/// Field `index` of a field of tuples.
#[pyfunction]
pub fn field_tuple_get(x: PyRef<'_, FieldValue>, index: u32) -> PyResult<FieldValue> {
    make(Op::TupleGet { tuple: operand(0), index }, vec![x.0.clone()], None)
}

/// A function of the library (a scan's step), made by [`field_function`].
#[pyclass(module = "strata._strata")]
pub struct FieldFunction(Handle<Function>, ThreadId);

/// The function of `params` (leaves) returning `result`: every leaf `result` reaches must be
/// one of `params`.
#[pyfunction]
pub fn field_function(params: Vec<PyRef<'_, FieldValue>>, result: PyRef<'_, FieldValue>) -> PyResult<FieldFunction> {
    on_this_thread(params.iter().map(|p| &p.0).chain([&result.0]))?;
    LIB.with(|lib| {
        let mut lib = lib.borrow_mut();
        let mut f = lib.function("step", FunctionKind::Func);
        let mut values: HashMap<*const Node, Value> = HashMap::new();
        for p in &params {
            values.insert(Rc::as_ptr(&p.0), f.param(p.0.ty, ParamMode::In));
        }
        let mut leaf = |_: &mut FunctionBuilder<'_>, _: &Rc<Node>| {
            Err(VerifyError::new_err("a scan step reads a field that is not one of its arguments"))
        };
        let r = build(&mut f, &result.0, &mut values, &mut leaf, &|_, t| t, &|g| g)?;
        Ok(FieldFunction(f.finish_returning(&[r]), std::thread::current().id()))
    })
}

/// The running `state = step(state, *xs)` along `dim` from `init` (a number or a tuple).
#[pyfunction]
pub fn field_scan(
    step: PyRef<'_, FieldFunction>,
    xs: Vec<PyRef<'_, FieldValue>>,
    dim: &str,
    forward: bool,
    init: &Bound<'_, PyAny>,
) -> PyResult<FieldValue> {
    if step.1 != std::thread::current().id() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a scan step is used on a thread other than the one that built it",
        ));
    }
    // The state's element type, a tuple's member by member (a state may mix dtypes: a float
    // sum beside a boolean flag).
    let init = LIB.with(|lib| {
        let lib = lib.borrow();
        let f = &lib.module().functions[step.0];
        let types = &lib.module().types;
        let state = f.result().map(|r| strata_ir::element_of(types, r));
        typed_literal(init, types, state)
    })?;
    let args: Vec<Rc<Node>> = xs.iter().map(|x| x.0.clone()).collect();
    let op = Op::Scan {
        func: step.0,
        args: (0..args.len()).map(operand).collect(),
        dim: DimName::new(dim),
        forward,
        init: Init::Literal(init),
    };
    make(op, args, None)
}

/// How [`build`] maps the library's types and functions into the function being built: as
/// they are (a function of the library), or imported into another module.
type Retype<'a> = &'a dyn Fn(&mut FunctionBuilder<'_>, Handle<Type>) -> Handle<Type>;
type Refunc<'a> = &'a dyn Fn(Handle<Function>) -> Handle<Function>;

/// Adds the ops computing `node` to `f` (post-order, each once); a leaf not in `values` is
/// asked of `leaf`.
fn build(
    f: &mut FunctionBuilder<'_>,
    node: &Rc<Node>,
    values: &mut HashMap<*const Node, Value>,
    leaf: &mut dyn FnMut(&mut FunctionBuilder<'_>, &Rc<Node>) -> PyResult<Value>,
    retype: Retype<'_>,
    refunc: Refunc<'_>,
) -> PyResult<Value> {
    let mut stack: Vec<(Rc<Node>, bool)> = vec![(node.clone(), false)];
    while let Some((n, expanded)) = stack.pop() {
        let key = Rc::as_ptr(&n);
        if values.contains_key(&key) {
            continue;
        }
        let Some(op) = &n.op else {
            let v = leaf(f, &n)?;
            values.insert(key, v);
            continue;
        };
        if !expanded {
            stack.push((n.clone(), true));
            stack.extend(n.args.iter().rev().map(|a| (a.clone(), false)));
            continue;
        }
        let mut op = op.clone();
        for v in op.operands_mut() {
            *v = values[&Rc::as_ptr(&n.args[v.index()])];
        }
        if let Some(g) = op.function_mut() {
            *g = refunc(*g);
        }
        let v = if op.has_declared_type() {
            let ty = retype(f, n.ty);
            f.op_as(op, ty)
        } else {
            f.op(op)
        }
        .map_err(refused)?;
        values.insert(key, v);
    }
    Ok(values[&Rc::as_ptr(node)])
}

/// Intervals as Python gives them: `(dim, start, stop)`.
type Intervals = Vec<(String, i64, i64)>;

/// What each parameter `p0`, `p1`, … of a built program stands for.
type Payloads = Vec<Option<Py<PyAny>>>;

/// The program computing `result`: `@fields` returning it, or — with `out` (a leaf) — the
/// program `@fields(%out: out …, …)` writing it into `out`, over `result`'s domain when
/// `over_result` (`out` must hold it), else over all of `out` (`result` must cover it).
/// Returns the compiled program (cached by structure) and the payloads of its other
/// parameters, `p0`, `p1`, … in order.
#[pyfunction]
#[pyo3(signature = (result, out = None, over_result = true))]
pub fn field_program(
    py: Python<'_>,
    result: PyRef<'_, FieldValue>,
    out: Option<PyRef<'_, FieldValue>>,
    over_result: bool,
) -> PyResult<(Py<Program>, Payloads)> {
    let body = match out {
        None => Body::Returns(result.0.clone()),
        Some(o) => {
            let write = if over_result { Write::ValueDomain } else { Write::Whole };
            Body::Writes(vec![Assignment { out: o.0.clone(), name: "out".into(), value: result.0.clone(), write }])
        }
    };
    program_of(py, body)
}

/// The program `@fields(%out0: out …, %out1: out …, …, %p0, …)` that writes each value into
/// its output in order: `assignments` are `(value, out, domain)`, `out` a leaf, `domain` the
/// `(dim, start, stop)` intervals written (`None`: the value's whole domain). Outputs are
/// named `out0`, `out1`, … (one per assignment, in order); later values may read earlier
/// outputs' leaves and see what was written. Returns the compiled program (cached by
/// structure) and the payloads of its inputs `p0`, `p1`, … in order.
#[pyfunction]
pub fn field_assignments(
    py: Python<'_>,
    assignments: Vec<(PyRef<'_, FieldValue>, PyRef<'_, FieldValue>, Option<Intervals>)>,
) -> PyResult<(Py<Program>, Payloads)> {
    let writes = assignments
        .into_iter()
        .enumerate()
        .map(|(k, (value, out, domain))| Assignment {
            out: out.0.clone(),
            name: format!("out{k}"),
            value: value.0.clone(),
            write: match domain {
                None => Write::ValueDomain,
                Some(d) => {
                    Write::Domain(d.into_iter().map(|(n, a, b)| (DimName::new(n), Interval::new(a, b))).collect())
                }
            },
        })
        .collect();
    program_of(py, Body::Writes(writes))
}

/// What a built program does.
enum Body {
    /// Returns the value (a `func`).
    Returns(Rc<Node>),
    /// Writes each value into its output (a `program`).
    Writes(Vec<Assignment>),
}

/// `out[domain] <- value`.
struct Assignment {
    out: Rc<Node>,
    name: String,
    value: Rc<Node>,
    write: Write,
}

/// Which part of its output an assignment writes.
enum Write {
    /// The value's domain.
    ValueDomain,
    /// All of the output.
    Whole,
    /// These intervals.
    Domain(Vec<(DimName, Interval)>),
}

/// Builds, verifies and compiles (once per structure) the program `@fields` of `body`.
fn program_of(py: Python<'_>, body: Body) -> PyResult<(Py<Program>, Payloads)> {
    match &body {
        Body::Returns(v) => on_this_thread([v])?,
        Body::Writes(ws) => on_this_thread(ws.iter().flat_map(|w| [&w.value, &w.out]))?,
    }
    let mut payloads: Payloads = Vec::new();
    let module = LIB.with(|lib| {
        let lib = lib.borrow();
        let mut mb = ModuleBuilder::new();
        let mut imported = HashMap::new();
        let mut functions = Vec::new();
        match &body {
            Body::Returns(v) => collect_functions(v, &mut functions),
            Body::Writes(ws) => ws.iter().for_each(|w| collect_functions(&w.value, &mut functions)),
        }
        for g in functions {
            imported.entry(g).or_insert_with(|| mb.import(lib.module(), g));
        }
        let kind = if matches!(body, Body::Writes(_)) { FunctionKind::Program } else { FunctionKind::Func };
        let mut f = mb.function("fields", kind);
        let retype = |f: &mut FunctionBuilder<'_>, t| f.module().import_type(lib.module(), t);
        let mut values = HashMap::new();
        // Outputs first: a value reading an output's leaf reads the output (what earlier
        // assignments wrote). Assignments to one output (a boundary, then the interior) write
        // one parameter, so each sees the others' writes.
        let mut outs = Vec::new();
        if let Body::Writes(ws) = &body {
            for w in ws {
                let o = match values.get(&Rc::as_ptr(&w.out)) {
                    Some(&o) => o,
                    None => {
                        let ty = retype(&mut f, w.out.ty);
                        let o = f.named_param(w.name.as_str(), ty, ParamMode::Out);
                        values.insert(Rc::as_ptr(&w.out), o);
                        o
                    }
                };
                outs.push(o);
            }
        }
        let mut leaf = |f: &mut FunctionBuilder<'_>, n: &Rc<Node>| {
            let ty = retype(f, n.ty);
            let v = f.named_param(format!("p{}", payloads.len()), ty, ParamMode::In);
            payloads.push(n.payload.as_ref().map(|p| p.clone_ref(py)));
            Ok(v)
        };
        match &body {
            Body::Returns(v) => {
                let r = build(&mut f, v, &mut values, &mut leaf, &retype, &|g| imported[&g])?;
                if v.op.is_some() {
                    f.rename(r, "value");
                }
                f.finish_returning(&[r]);
            }
            Body::Writes(ws) => {
                for (w, &o) in ws.iter().zip(&outs) {
                    let r = build(&mut f, &w.value, &mut values, &mut leaf, &retype, &|g| imported[&g])?;
                    if w.value.op.is_some() && ws.len() == 1 {
                        f.rename(r, "value");
                    }
                    let domain = match &w.write {
                        Write::Whole => None,
                        Write::Domain(d) => Some(d.clone()),
                        Write::ValueDomain => match &f.types()[f.ty(r)] {
                            Type::Tensor(t) => Some(t.levels.iter().map(|l| (l.name.clone(), l.interval)).collect()),
                            _ => None,
                        },
                    };
                    f.assign(o, domain, r).map_err(refused)?;
                }
                f.finish();
            }
        }
        Ok::<Module, PyErr>(mb.into_module())
    })?;
    let entry = module.function_by_name("fields").expect("built");
    let key = strata_engine::structure_key(&module, &module.types, entry);
    if let Some(p) = PROGRAMS.with(|c| c.borrow().get(&key).map(|p| p.clone_ref(py))) {
        return Ok((p, payloads));
    }
    let program = Py::new(py, Program::from_module(module, "<fields>")?)?;
    PROGRAMS.with(|c| c.borrow_mut().insert(key, program.clone_ref(py)));
    BUILT.with(|b| b.set(b.get() + 1));
    Ok((program, payloads))
}

/// `x` restricted to the intervals `domain` (`(dim, start, stop)`; other dimensions keep
/// theirs).
#[pyfunction]
pub fn field_subset(x: PyRef<'_, FieldValue>, domain: Vec<(String, i64, i64)>) -> PyResult<FieldValue> {
    let domain = domain.into_iter().map(|(n, a, b)| (DimName::new(n), Interval::new(a, b))).collect();
    make(Op::Subset { arg: operand(0), domain }, vec![x.0.clone()], None)
}

/// The pieces joined along `dim`, each over its own sub-interval (adjacent, in order); every
/// other dimension alike.
#[pyfunction]
pub fn field_concat(pieces: Vec<PyRef<'_, FieldValue>>, dim: &str) -> PyResult<FieldValue> {
    let args: Vec<Rc<Node>> = pieces.iter().map(|p| p.0.clone()).collect();
    let op = Op::Concat { args: (0..args.len()).map(operand).collect(), dim: DimName::new(dim), mode: Mode::Copy };
    make(op, args, None)
}

/// Whether each value of `x` exists (is not a skipped neighbor): a `bool` field.
#[pyfunction]
pub fn field_can_deref(x: PyRef<'_, FieldValue>) -> PyResult<FieldValue> {
    make(Op::CanDeref { arg: operand(0) }, vec![x.0.clone()], None)
}

/// `x` with the new dimension `dim` over `[start, stop)`, constant along it.
#[pyfunction]
pub fn field_add_dim(x: PyRef<'_, FieldValue>, dim: &str, start: i64, stop: i64) -> PyResult<FieldValue> {
    let op = Op::AddDim { arg: operand(0), dim: DimName::new(dim), interval: Interval::new(start, stop) };
    make(op, vec![x.0.clone()], None)
}

/// `x` with its dimensions stored in the order `dims` (the same names): a layout, never a
/// change of values.
#[pyfunction]
pub fn field_transpose(x: PyRef<'_, FieldValue>, dims: Vec<String>) -> PyResult<FieldValue> {
    let have: Vec<String> = x.dims()?.into_iter().map(|(name, _, _)| name).collect();
    let perm = dims
        .iter()
        .map(|d| have.iter().position(|h| h == d).map(|k| k as u32))
        .collect::<Option<Vec<u32>>>()
        .filter(|p| p.len() == have.len())
        .ok_or_else(|| VerifyError::new_err(format!("cannot order the dimensions {have:?} as {dims:?}")))?;
    make(Op::Transpose { arg: operand(0), perm, kind: PermKind::Gather }, vec![x.0.clone()], None)
}

/// The indices of `x`'s dimension `dim` (an `index` field over that dimension alone).
#[pyfunction]
pub fn field_pos(x: PyRef<'_, FieldValue>, dim: &str) -> PyResult<FieldValue> {
    make(Op::Pos { arg: operand(0), dim: DimName::new(dim) }, vec![x.0.clone()], None)
}

/// The library functions `node`'s ops apply, callees of those first.
fn collect_functions(node: &Rc<Node>, out: &mut Vec<Handle<Function>>) {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![node.clone()];
    while let Some(n) = stack.pop() {
        if !seen.insert(Rc::as_ptr(&n)) {
            continue;
        }
        if let Some(op) = &n.op {
            out.extend(op.functions());
        }
        stack.extend(n.args.iter().cloned());
    }
}

/// How many programs field expressions have built in this thread (one met again while it is
/// held is not built again).
#[pyfunction]
pub fn field_programs() -> usize {
    BUILT.with(|b| b.get())
}

/// Registers the field functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FieldValue>()?;
    m.add_class::<FieldFunction>()?;
    m.add_function(wrap_pyfunction!(field_param, m)?)?;
    m.add_function(wrap_pyfunction!(field_constant, m)?)?;
    m.add_function(wrap_pyfunction!(field_builtin, m)?)?;
    m.add_function(wrap_pyfunction!(field_cast, m)?)?;
    m.add_function(wrap_pyfunction!(field_shift, m)?)?;
    m.add_function(wrap_pyfunction!(field_neighbor, m)?)?;
    m.add_function(wrap_pyfunction!(field_neighbor_fold, m)?)?;
    m.add_function(wrap_pyfunction!(field_neighbor_get, m)?)?;
    m.add_function(wrap_pyfunction!(field_make_tuple, m)?)?;
    m.add_function(wrap_pyfunction!(field_tuple_get, m)?)?;
    m.add_function(wrap_pyfunction!(field_function, m)?)?;
    m.add_function(wrap_pyfunction!(field_scan, m)?)?;
    m.add_function(wrap_pyfunction!(field_program, m)?)?;
    m.add_function(wrap_pyfunction!(field_assignments, m)?)?;
    m.add_function(wrap_pyfunction!(field_subset, m)?)?;
    m.add_function(wrap_pyfunction!(field_programs, m)?)?;
    m.add_function(wrap_pyfunction!(field_concat, m)?)?;
    m.add_function(wrap_pyfunction!(field_can_deref, m)?)?;
    m.add_function(wrap_pyfunction!(field_add_dim, m)?)?;
    m.add_function(wrap_pyfunction!(field_transpose, m)?)?;
    m.add_function(wrap_pyfunction!(field_pos, m)?)?;
    Ok(())
}
