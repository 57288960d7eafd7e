//! A verified program and the running of its entries.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use strata_array::spmd;
use strata_engine::{Backend, ExecuteError, Options, Prepared};
use strata_entity::Handle;
use strata_ir::{ExprKind, Function, Module, ParamMode, TypeArena};
use strata_runtime::ValueType;

use crate::convert::{self, Arg};
use crate::errors::{ArgumentError, ParseError, RunError, VerifyError};

/// A parsed and verified Strata module (`strata.compile`, `strata.load`).
#[pyclass(module = "strata._strata", frozen)]
pub struct Program {
    module: Module,
    types: TypeArena,
    source: String,
    name: String,
    /// Entries prepared by earlier calls, by entry, backend and threads: a call after the first
    /// runs the loaded code without lowering, emitting or hashing anything again.
    prepared: Mutex<HashMap<PreparedKey, Arc<Prepared>>>,
    /// Entries over teams planned for the joined MPI job, by entry (at their first call).
    planned: Mutex<HashMap<String, Arc<spmd::PlannedEntry>>>,
}

/// An entry's name, the backend, the thread count and the GPU it was prepared for.
type PreparedKey = (String, Backend, Option<usize>, Option<u32>);

/// Parses and verifies `text` (`name` is the file name diagnostics show).
///
/// Raises `ParseError` or `VerifyError` with the located diagnostic.
#[pyfunction]
#[pyo3(signature = (text, name = "<string>"))]
pub fn compile(text: &str, name: &str) -> PyResult<Program> {
    let module = strata_verify::parse(text)
        .map_err(|d| ParseError::new_err(strata_report::render(name, text, &d, false).trim_end().to_string()))?;
    let info = strata_verify::verify(&module)
        .map_err(|d| VerifyError::new_err(strata_report::render(name, text, &d, false).trim_end().to_string()))?;
    Ok(Program {
        module,
        types: info.types,
        source: text.to_string(),
        name: name.to_string(),
        prepared: Mutex::default(),
        planned: Mutex::default(),
    })
}

impl Program {
    /// A program of a built module (verified here); its text, for diagnostics, is the printed
    /// module.
    pub fn from_module(module: Module, name: &str) -> PyResult<Program> {
        let source = module.to_string();
        let info = strata_verify::verify(&module).map_err(|d| {
            VerifyError::new_err(strata_report::render(name, &source, &d, false).trim_end().to_string())
        })?;
        Ok(Program {
            module,
            types: info.types,
            source,
            name: name.to_string(),
            prepared: Mutex::default(),
            planned: Mutex::default(),
        })
    }

    fn entry(&self, name: &str) -> PyResult<Handle<Function>> {
        self.module.entry_by_name(name).map_err(ArgumentError::new_err)
    }

    fn param_type(&self, f: &Function, p: strata_ir::Value) -> ValueType {
        ValueType::from_ir(&self.types, f.exprs[p].ty)
    }

    /// The runtime types of a prepared entry's parameters, in order.
    fn param_types(&self, prepared: &Prepared) -> Vec<ValueType> {
        let f = &prepared.module().functions[prepared.entry()];
        f.params.iter().map(|&p| self.param_type(f, p)).collect()
    }

    /// `entry` prepared for `backend`, `threads` and `device` (`gpuN`: its arguments read to
    /// that GPU, so it computes there), by the first call that asked (which warns once when the
    /// interpreter runs it although native code was allowed).
    fn prepared(
        &self,
        py: Python<'_>,
        entry: &str,
        backend: Backend,
        threads: Option<usize>,
        device: Option<&str>,
    ) -> PyResult<Arc<Prepared>> {
        let gpu = gpu_of(device)?;
        let key = (entry.to_string(), backend, threads, gpu);
        if let Some(p) = self.prepared.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let h = self.entry(entry)?;
        // Tiered under `auto`: a small call of an entry not compiled yet runs in the interpreter
        // while its kernels compile in the background (`strata_engine::tier`).
        let mut options = Options { backend, threads, tiered: strata_engine::tiered_default(), ..Options::default() };
        options.lower.gpu = gpu;
        let (module, types) = (&self.module, &self.types);
        let p = py.detach(|| strata_engine::prepare(module, types, h, &options)).map_err(|e| self.run_error(e))?;
        if let Some(note) = p.note() {
            let warning = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
            PyErr::warn(py, &warning, &std::ffi::CString::new(note).unwrap_or_default(), 1)?;
        }
        self.prepared.lock().unwrap_or_else(|e| e.into_inner()).insert(key, p.clone());
        Ok(p)
    }

    /// Runs the prepared entry on `objects`, one per parameter in order (`None` for an `out`
    /// the program starts from zeros).
    fn run_objects(
        &self,
        py: Python<'_>,
        prepared: &Prepared,
        types: &[ValueType],
        objects: &[Option<Bound<'_, PyAny>>],
    ) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let (module, h) = (prepared.module(), prepared.entry());
        let f = &module.functions[h];
        check_arguments(f, objects)?;
        let mut values = Vec::with_capacity(objects.len());
        for ((&p, obj), ty) in f.params.iter().zip(objects).zip(types) {
            let e = &f.exprs[p];
            let out = e.kind == ExprKind::Param(ParamMode::Out);
            let arg = match obj {
                Some(obj) => convert::to_arg(obj, &e.name, ty, out)?,
                None => Arg::zeros(ty),
            };
            if let Some(m) = arg.extent_mismatch() {
                return Err(ArgumentError::new_err(format!("argument `{}`: {m}", e.name)));
            }
            values.push(arg);
        }
        convert::unlend_overlapping(&mut values);
        // The arguments borrow `objects` (which the caller keeps alive too) while the GIL is
        // released.
        let ran = py.detach(|| prepared.run(&values));
        let lent: Vec<bool> = values.iter().map(Arg::lent).collect();
        drop(values);
        let ran = ran.map_err(|e| self.run_error(e))?;
        if let Some(w) = &ran.warning {
            let warning = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
            PyErr::warn(py, &warning, &std::ffi::CString::new(w.as_str()).unwrap_or_default(), 1)?;
        }
        let mut out = Vec::with_capacity(ran.values.len());
        for (name, v) in ran.values {
            if let Some(m) = v.extent_mismatch() {
                return Err(RunError::new_err(format!("`{name}` of `@{}`: {m}", f.name)));
            }
            out.push((name.clone(), convert::to_python(py, &name, v)?));
        }
        // An `out` array written in place is its own result.
        for ((&p, obj), lent) in f.params.iter().zip(objects).zip(lent) {
            let name = &f.exprs[p].name;
            if let (true, Some(obj)) = (lent, obj) {
                if !out.iter().any(|(n, _)| n == name) {
                    out.push((name.clone(), obj.clone().unbind()));
                }
            }
        }
        Ok(out)
    }

    /// Whether a call of `entry` runs as a distributed job: a job was joined and the entry's
    /// parameters or results live on a team.
    fn runs_on_team(&self, entry: &str) -> bool {
        spmd::joined().is_some() && self.on_team(entry)
    }

    /// `entry` planned for the joined job, by its first call (kept for the next ones).
    fn planned(&self, entry: &str) -> PyResult<TeamEntry> {
        let h = self.entry(entry)?;
        let kept = self.planned.lock().unwrap_or_else(|e| e.into_inner()).get(entry).cloned();
        let planned = match kept {
            Some(p) => p,
            None => {
                let p = spmd::PlannedEntry::new(&self.module, &self.types, h);
                let p = Arc::new(p.map_err(|e| RunError::new_err(e.to_string()))?);
                self.planned.lock().unwrap_or_else(|e| e.into_inner()).insert(entry.to_string(), p.clone());
                p
            }
        };
        let f = &self.module.functions[h];
        let types = f.params.iter().map(|&p| self.param_type(f, p)).collect();
        Ok(TeamEntry { entry: h, planned, types })
    }

    /// Runs a planned entry as a distributed job on this rank (every rank calls it): a team
    /// array's block, or a value every rank holds, for each parameter on a team; results
    /// distributed along their first level come back as team arrays (`strata.array_api`),
    /// others whole. The plan is made at the first call and kept: a time loop plans and
    /// compiles once.
    fn run_on_team(
        &self,
        py: Python<'_>,
        team: &TeamEntry,
        backend: Backend,
        objects: &[Option<Bound<'_, PyAny>>],
    ) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let f = &self.module.functions[team.entry];
        check_arguments(f, objects)?;
        let mut args = Vec::with_capacity(f.params.len());
        for ((&p, obj), ty) in f.params.iter().zip(objects).zip(&team.types) {
            let e = &f.exprs[p];
            let arg = match obj {
                None => None,
                Some(obj) => Some(match obj.cast::<crate::array_api::PyArr>() {
                    Ok(a) => spmd::entry_argument(&a.borrow().0, &e.name, ty)
                        .map_err(|e| ArgumentError::new_err(e.to_string()))?,
                    Err(_) => spmd::EntryArg::Value(convert::to_arg(obj, &e.name, ty, false)?.into_value()),
                }),
            };
            args.push(arg);
        }
        let ran = team.planned.run(&args, backend).map_err(|e| RunError::new_err(e.to_string()))?;
        ran.into_iter()
            .map(|(name, r)| {
                let obj = match r {
                    spmd::EntryResult::Team(a) => Py::new(py, crate::array_api::PyArr(a))?.into_any(),
                    spmd::EntryResult::Whole(v) => convert::to_python(py, &name, v)?,
                };
                Ok((name, obj))
            })
            .collect()
    }

    fn run_error(&self, e: ExecuteError) -> PyErr {
        match e {
            ExecuteError::Program(d) => {
                RunError::new_err(strata_report::render(&self.name, &self.source, &[*d], false).trim_end().to_string())
            }
            other => RunError::new_err(other.to_string()),
        }
    }
}

/// Every parameter of `f` but an `out` one has an object, and there are no more objects than
/// parameters.
fn check_arguments(f: &Function, objects: &[Option<Bound<'_, PyAny>>]) -> PyResult<()> {
    let mut missing = Vec::new();
    for (&p, obj) in f.params.iter().zip(objects) {
        let e = &f.exprs[p];
        // An `out` parameter starts as the caller's `out=` array (the elements the
        // program does not write keep their values), else as zeros.
        if obj.is_none() && e.kind != ExprKind::Param(ParamMode::Out) {
            missing.push(format!("`{}`", e.name));
        }
    }
    if missing.is_empty() && objects.len() == f.params.len() {
        return Ok(());
    }
    if objects.len() > f.params.len() {
        return Err(ArgumentError::new_err(format!(
            "`@{}` takes {} arguments, got {}",
            f.name,
            f.params.len(),
            objects.len()
        )));
    }
    for &p in &f.params[objects.len().min(f.params.len())..] {
        missing.push(format!("`{}`", f.exprs[p].name));
    }
    Err(ArgumentError::new_err(format!("missing argument {} of `@{}`", missing.join(", "), f.name)))
}

#[pymethods]
impl Program {
    /// The program's text: as given to `compile`, or the printed module of a built program.
    #[getter]
    fn text(&self) -> &str {
        &self.source
    }

    /// The file name diagnostics show.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The names of the functions and programs, in source order.
    fn entries(&self) -> Vec<String> {
        self.module.entries().map(|(_, f)| f.name.clone()).collect()
    }

    /// Every entry's parameters and results as JSON (what `strata sig --json` prints).
    fn signatures_json(&self) -> String {
        strata_report::signature::signatures(&self.module, &self.types, true)
    }

    /// Where `entry` is written: `(file name, line)` of its `func` or `program` keyword.
    fn location(&self, entry: &str) -> PyResult<(String, usize)> {
        let h = self.entry(entry)?;
        let (line, _) = self.module.functions.meta(h).span.line_col(&self.source);
        Ok((self.name.clone(), line))
    }

    /// Why `name` is not an entry: it is generic (typed only where a caller is), or there is
    /// no such function (the entries are listed).
    fn why_not_entry(&self, name: &str) -> String {
        match self.module.entry_by_name(name) {
            Ok(_) => format!("`@{name}` is an entry"),
            Err(e) => e,
        }
    }

    /// Whether some parameter or result of `entry` lives on a team (under `mpirun` its calls
    /// run as distributed jobs).
    fn on_team(&self, entry: &str) -> bool {
        let Ok(h) = self.entry(entry) else { return false };
        let f = &self.module.functions[h];
        let on_team = |ty| ValueType::from_ir(&self.types, ty).placement.team.is_some();
        f.params.iter().any(|&p| on_team(f.exprs[p].ty)) || f.result().is_some_and(on_team)
    }

    /// The names of `entry`'s inputs (parameters that are not `out`), in order.
    fn inputs(&self, entry: &str) -> PyResult<Vec<String>> {
        let f = &self.module.functions[self.entry(entry)?];
        let is_in = |p: &strata_ir::Value| f.exprs[*p].kind != ExprKind::Param(ParamMode::Out);
        Ok(f.params.iter().filter(|p| is_in(p)).map(|&p| f.exprs[p].name.clone()).collect())
    }

    /// The names of `entry`'s results, in order: its `out` parameters, or `result` (`result.0`,
    /// `result.1`, … for several).
    fn outputs(&self, entry: &str) -> PyResult<Vec<String>> {
        let f = &self.module.functions[self.entry(entry)?];
        let mut names: Vec<String> = f
            .params
            .iter()
            .filter(|&&p| f.exprs[p].kind == ExprKind::Param(ParamMode::Out))
            .map(|&p| f.exprs[p].name.clone())
            .collect();
        names.extend(f.result_names());
        Ok(names)
    }

    /// Runs `entry` on the arguments in `args` (by parameter name) and returns its results as
    /// `(name, value)` pairs.
    #[pyo3(signature = (entry, args, backend = "auto", threads = None, device = None))]
    fn run(
        &self,
        py: Python<'_>,
        entry: &str,
        args: &Bound<'_, PyDict>,
        backend: &str,
        threads: Option<usize>,
        device: Option<&str>,
    ) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let backend = Backend::parse(backend).map_err(ArgumentError::new_err)?;
        // On a team, the entry as written runs distributed (`threads`: each rank's share of its
        // node's cores); else an entry with several results runs as the program writing them.
        let team = self.runs_on_team(entry);
        if team && gpu_of(device)?.is_some() {
            return Err(ArgumentError::new_err(
                "device: an entry on a team runs on the host (distributed runs on GPUs are not supported yet)",
            ));
        }
        let prepared = if team { None } else { Some(self.prepared(py, entry, backend, threads, device)?) };
        let f = match &prepared {
            Some(p) => &p.module().functions[p.entry()],
            None => &self.module.functions[self.entry(entry)?],
        };
        for key in args.keys() {
            let key: String = key.extract()?;
            let known = f.params.iter().any(|&p| f.exprs[p].name == key);
            if !known {
                let inputs = self.inputs(entry)?;
                return Err(ArgumentError::new_err(format!(
                    "`@{}` has no input `{key}` (inputs: {})",
                    f.name,
                    inputs.join(", ")
                )));
            }
        }
        let mut objects = Vec::with_capacity(f.params.len());
        for &p in &f.params {
            objects.push(args.get_item(&f.exprs[p].name)?);
        }
        match &prepared {
            Some(p) => self.run_objects(py, p, &self.param_types(p), &objects),
            None => self.run_on_team(py, &self.planned(entry)?, backend, &objects),
        }
    }

    /// `entry` prepared once for `backend` and `threads`, to be called with its arguments in
    /// parameter order (a time loop's call, with no lookup by name).
    #[pyo3(signature = (entry, backend = "auto", threads = None, device = None))]
    fn bind(
        slf: &Bound<'_, Self>,
        entry: &str,
        backend: &str,
        threads: Option<usize>,
        device: Option<&str>,
    ) -> PyResult<Runner> {
        let backend = Backend::parse(backend).map_err(ArgumentError::new_err)?;
        let program = slf.get();
        if program.runs_on_team(entry) {
            if gpu_of(device)?.is_some() {
                return Err(ArgumentError::new_err(
                    "device: an entry on a team runs on the host (distributed runs on GPUs are not supported yet)",
                ));
            }
            let f = &program.module.functions[program.entry(entry)?];
            let params = f.params.iter().map(|&p| f.exprs[p].name.clone()).collect();
            let call = Call::Team { team: program.planned(entry)?, backend };
            return Ok(Runner { program: slf.clone().unbind(), call, params });
        }
        let prepared = program.prepared(slf.py(), entry, backend, threads, device)?;
        let module = prepared.module();
        let f = &module.functions[prepared.entry()];
        let params = f.params.iter().map(|&p| f.exprs[p].name.clone()).collect();
        let types = program.param_types(&prepared);
        Ok(Runner { program: slf.clone().unbind(), call: Call::Local { prepared, types }, params })
    }
}

/// An entry of a [`Program`] prepared once and called with its arguments in parameter order
/// (`Program.bind`).
#[pyclass(module = "strata._strata", frozen)]
pub struct Runner {
    program: Py<Program>,
    call: Call,
    params: Vec<String>,
}

/// How a [`Runner`] runs its entry.
enum Call {
    /// In this process, prepared once.
    Local {
        prepared: Arc<Prepared>,
        /// The parameters' runtime types (made once, not per call).
        types: Vec<ValueType>,
    },
    /// As a distributed job over the joined job's ranks, planned once.
    Team { team: TeamEntry, backend: Backend },
}

/// An entry planned for the joined job's ranks, with its parameters' runtime types (made once,
/// not per call).
struct TeamEntry {
    entry: Handle<Function>,
    planned: Arc<spmd::PlannedEntry>,
    types: Vec<ValueType>,
}

#[pymethods]
impl Runner {
    /// The parameters' names, in the order the call takes them.
    #[getter]
    fn params(&self) -> Vec<String> {
        self.params.clone()
    }

    /// Runs the entry on `args`, one per parameter in order (`None` for an `out` that starts
    /// as zeros); returns its results as `(name, value)` pairs, as `Program.run` does.
    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let objects: Vec<Option<Bound<'_, PyAny>>> =
            args.iter().map(|a| if a.is_none() { None } else { Some(a) }).collect();
        let program = self.program.get();
        match &self.call {
            Call::Local { prepared, types } => program.run_objects(py, prepared, types, &objects),
            Call::Team { team, backend } => program.run_on_team(py, team, *backend, &objects),
        }
    }
}

/// The GPU a `device=` argument names: `None` for `"cpu"` or none, `Some(n)` for `gpuN`.
fn gpu_of(device: Option<&str>) -> PyResult<Option<u32>> {
    match device {
        None | Some("cpu") => Ok(None),
        Some(d) => strata_engine::gpu_ordinal(d)
            .map(Some)
            .ok_or_else(|| ArgumentError::new_err(format!("device {d:?}: \"cpu\" or a GPU (\"gpu0\", strata.gpu(0))"))),
    }
}
