//! Running one entry on argument values, the way every front end does it: natively where the
//! entry compiles, else in the reference interpreter; a failed native run is run again in the
//! interpreter for a located diagnostic (or reported as a native backend bug when the
//! interpreter succeeds). Used by `strata run`, each rank of a distributed run, and the Python
//! package.

use strata_entity::Handle;
use strata_ir::{Diagnostic, Function, Module, TypeArena};
use strata_runtime::{storage, Argument, Value};

use crate::{run_native, NativeError, RunOptions, Timings};

/// Which backend runs an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Native where the entry compiles, else the interpreter (the default).
    Auto,
    /// The reference interpreter.
    Interp,
    /// The native backend only.
    Native,
}

impl Backend {
    /// `auto` (or empty), `interp` or `native`.
    ///
    /// # Errors
    /// Any other name, in a message listing the choices.
    pub fn parse(name: &str) -> Result<Backend, String> {
        match name {
            "auto" | "" => Ok(Backend::Auto),
            "interp" => Ok(Backend::Interp),
            "native" => Ok(Backend::Native),
            other => Err(format!("unknown backend `{other}` (expected `auto`, `interp` or `native`)")),
        }
    }
}

/// A finished run.
#[derive(Debug)]
pub struct Executed {
    /// The results by name (`result`, or the `out` parameters').
    pub values: Vec<(String, Value)>,
    /// The native run's timings (`None`: the interpreter ran).
    pub timings: Option<Timings>,
    /// Why the interpreter ran although the native backend was allowed.
    pub note: Option<String>,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    /// The program failed at run time: the interpreter's located diagnostic.
    #[error("{}", .0.message)]
    Program(Box<Diagnostic>),
    /// The native backend failed (`backend = native`, or compiling or loading failed).
    #[error("{0}")]
    Native(String),
    /// The native run failed where the interpreter succeeds: a native backend bug.
    #[error("{0}\nnote: the reference interpreter runs this entry: this is a native backend bug (`--backend interp` avoids it)")]
    NativeBug(String),
    /// A result that cannot be held in memory.
    #[error("cannot hold `{name}` of `@{func}`: {message}")]
    Result {
        /// The result's name.
        name: String,
        /// The entry.
        func: String,
        /// Why.
        message: String,
    },
    /// An argument the interpreter cannot hold (a stored value too large for a dense view).
    #[error("the interpreter cannot take `%{name}` of `@{func}`: {message}")]
    Argument {
        /// The parameter.
        name: String,
        /// The entry.
        func: String,
        /// Why.
        message: String,
    },
}

/// Runs `entry` of `module` (verified; `types` its arena) on `args` (one per parameter; native
/// code reads them in place) with `backend`; `opts` gives the native threads and repetitions.
///
/// # Errors
/// See [`ExecuteError`].
pub fn execute(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    args: &[Value],
    backend: Backend,
    opts: &RunOptions,
) -> Result<Executed, ExecuteError> {
    let f = &module.functions[entry];
    for (name, &ty) in f.result_names().iter().zip(&f.results) {
        let vt = strata_runtime::ValueType::from_ir(types, ty);
        if vt.levels.iter().all(|l| l.format.is_dense_like()) {
            vt.check_allocatable().map_err(|message| ExecuteError::Result {
                name: name.clone(),
                func: f.name.clone(),
                message,
            })?;
        }
    }
    let mut executed = run(module, types, entry, args, backend, opts)?;
    // A ragged result holding exactly a ragged argument's elements keeps that argument's runs
    // (its empty rows inside a group too), on every backend.
    for (_, v) in &mut executed.values {
        if let Value::Tensor(t) = v {
            let like = args.iter().filter_map(Argument::stored).find_map(|a| storage::with_runs_of(t, a));
            if let Some(s) = like {
                *v = Value::Stored(s);
            }
        }
    }
    Ok(executed)
}

fn run(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    args: &[Value],
    backend: Backend,
    opts: &RunOptions,
) -> Result<Executed, ExecuteError> {
    let native = match backend {
        Backend::Interp => None,
        _ => Some(run_native(module, types, entry, args, opts)),
    };
    let (note, native_failure) = match native {
        Some(Ok((values, timings))) => return Ok(Executed { values, timings: Some(timings), note: None }),
        Some(Err(e)) if backend == Backend::Native => return Err(ExecuteError::Native(e.to_string())),
        Some(Err(NativeError::NotCompiled(e))) => {
            (Some(format!("{}; running the reference interpreter", e.reason())), None)
        }
        Some(Err(failure)) => (None, Some(failure)),
        None => (None, None),
    };
    // The interpreter holds every value logically (its own copy): stored arguments get a
    // dense view.
    let f = &module.functions[entry];
    let mut tensors = Vec::with_capacity(args.len());
    for (a, &p) in args.iter().zip(&f.params) {
        let t = a.clone().into_tensor().map_err(|e| ExecuteError::Argument {
            name: f.exprs[p].name.clone(),
            func: f.name.clone(),
            message: e.to_string(),
        })?;
        tensors.push(t);
    }
    let interp = strata_interp::Interpreter::new(module, types);
    match (interp.run(entry, tensors), native_failure) {
        (Ok(o), None) => Ok(Executed {
            values: o.values.into_iter().map(|(n, t)| (n, Value::Tensor(t))).collect(),
            timings: None,
            note,
        }),
        (Ok(_), Some(failure)) => Err(ExecuteError::NativeBug(failure.to_string())),
        (Err(e), _) => Err(ExecuteError::Program(Box::new(e.to_diagnostic()))),
    }
}
