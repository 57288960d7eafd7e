//! Evaluation: verify, compile (or find in the cache) and run a traced program.
//!
//! The native backend runs what it compiles; the reference interpreter runs the rest
//! ([`Backend::Auto`], the default). Compiled programs are cached per thread by their text
//! (structure and shapes), on top of the native backend's on-disk cache of shared objects.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use strata_codegen::{compile, exec, KernelProgram};
use strata_entity::Handle;
use strata_ir::{Function, Module, TypeArena};
use strata_runtime::{Tensor, ValueType};

use crate::error::{ArrayError, Result};
use crate::trace::Program;

/// Which backend evaluates arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Native code where the program compiles, else the interpreter.
    Auto,
    /// The reference interpreter only.
    Interp,
    /// Native code only: programs it does not compile are an error.
    Native,
}

/// Cache counters: compiled programs found (`hits`) and built (`misses`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Programs found in the cache.
    pub hits: u64,
    /// Programs verified and compiled.
    pub misses: u64,
    /// Runs on native code.
    pub native_runs: u64,
    /// Runs on the interpreter.
    pub interpreted_runs: u64,
    /// Runs as distributed jobs under [`crate::spmd`] (each stage's local program native
    /// where it compiles, else interpreted).
    pub distributed_runs: u64,
}

struct Compiled {
    module: Module,
    types: TypeArena,
    entry: Handle<Function>,
    result_ty: ValueType,
    /// The native program, or why there is none (built on first use).
    native: std::cell::OnceCell<std::result::Result<(KernelProgram, compile::Loaded), String>>,
    /// Its distribution over the job's ranks (under [`crate::spmd`], planned on first use).
    dist: std::cell::OnceCell<std::result::Result<strata_dist::Distribution, String>>,
}

thread_local! {
    static BACKEND: Cell<Backend> = const { Cell::new(Backend::Auto) };
    static CACHE: RefCell<HashMap<String, Rc<Compiled>>> = RefCell::new(HashMap::new());
    static STATS: Cell<CacheStats> = Cell::new(CacheStats::default());
}

/// Chooses the backend for this thread's evaluations.
pub fn set_backend(b: Backend) {
    BACKEND.with(|c| c.set(b));
}

/// The backend of this thread's evaluations.
pub fn backend() -> Backend {
    BACKEND.with(|c| c.get())
}

/// This thread's cache counters.
pub fn cache_stats() -> CacheStats {
    STATS.with(|s| s.get())
}

fn bump(f: impl FnOnce(&mut CacheStats)) {
    STATS.with(|s| {
        let mut v = s.get();
        f(&mut v);
        s.set(v);
    });
}

fn prepare(text: &str) -> Result<Rc<Compiled>> {
    if let Some(c) = CACHE.with(|c| c.borrow().get(text).cloned()) {
        bump(|s| s.hits += 1);
        return Ok(c);
    }
    bump(|s| s.misses += 1);
    let internal = |d: Vec<strata_ir::Diagnostic>| ArrayError::Internal {
        message: d.first().map(|d| d.message.clone()).unwrap_or_default(),
        program: text.to_string(),
    };
    let module = strata_syntax::parse(text).map_err(internal)?;
    let info = strata_verify::verify(&module).map_err(internal)?;
    let entry = module.function_by_name("main").expect("the traced program defines @main");
    let result = module.functions[entry].result().expect("@main returns");
    let result_ty = ValueType::from_ir(&info.types, result);
    let c = Rc::new(Compiled {
        module,
        types: info.types,
        entry,
        result_ty,
        native: std::cell::OnceCell::new(),
        dist: std::cell::OnceCell::new(),
    });
    CACHE.with(|cache| cache.borrow_mut().insert(text.to_string(), c.clone()));
    Ok(c)
}

pub(crate) fn build_native(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
) -> std::result::Result<(KernelProgram, compile::Loaded), String> {
    let program = strata_codegen::lower(module, types, entry).map_err(|e| e.reason())?;
    let source = strata_codegen::emit_c::emit(&program);
    let (so, _) = compile::build(&source).map_err(|e| e.to_string())?;
    let lib = compile::Loaded::open(&so).map_err(|e| e.to_string())?;
    Ok((program, lib))
}

/// Runs a traced program and returns its result.
pub(crate) fn run(p: Program) -> Result<Tensor> {
    let b = backend();
    let c = prepare(&p.text)?;
    if crate::spmd::distributed(&p.text) {
        let size = crate::spmd::comm().map_or(1, |c| c.size);
        let dist = c.dist.get_or_init(|| {
            strata_dist::Distribution::new(&c.module, &c.types, c.entry, size).map_err(|e| e.to_string())
        });
        let dist = dist.as_ref().map_err(|e| ArrayError::Run(format!("the program cannot run distributed: {e}")))?;
        bump(|s| s.distributed_runs += 1);
        return crate::spmd::run(dist, &p.inputs, b);
    }
    let native = if b == Backend::Interp {
        None
    } else {
        Some(c.native.get_or_init(|| build_native(&c.module, &c.types, c.entry)))
    };
    match (native, b) {
        (None, _) => interpret(&c, p),
        (Some(Ok((program, lib))), _) => {
            bump(|s| s.native_runs += 1);
            let names: Vec<String> = (0..p.inputs.len()).map(|i| format!("in{i}")).collect();
            let threads = exec::threads_from_env();
            let mut values = exec::run_threads(program, lib, &p.inputs, &names, Some(&c.result_ty), threads)
                .map_err(|e| ArrayError::Run(e.to_string()))?;
            Ok(values.pop().map(|(_, t)| t).expect("one result"))
        }
        (Some(Err(why)), Backend::Native) => {
            Err(ArrayError::Run(format!("the native backend does not compile this program: {why}")))
        }
        (Some(Err(_)), _) => interpret(&c, p),
    }
}

fn interpret(c: &Compiled, p: Program) -> Result<Tensor> {
    bump(|s| s.interpreted_runs += 1);
    let interp = strata_interp::Interpreter::new(&c.module, &c.types);
    let inputs = p.inputs.iter().map(|t| (**t).clone()).collect();
    let mut out = interp.run(c.entry, inputs).map_err(|e| ArrayError::Run(e.message))?;
    Ok(out.values.pop().map(|(_, t)| t).expect("one result"))
}
