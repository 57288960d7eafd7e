//! Evaluation: verify, compile (or find in the cache) and run a traced program.
//!
//! Programs run through `strata_engine` (native code where it compiles, else the reference
//! interpreter: [`Backend::Auto`], the default). Verified programs are cached per thread by
//! their IR structure (ops and types, so shapes too), each with its engine-prepared programs
//! per backend.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use strata_engine::{ExecuteError, Options, Prepared};
use strata_entity::Handle;
use strata_ir::{Function, Module, TypeArena};
use strata_runtime::Tensor;

use crate::error::{ArrayError, Result};
use crate::trace::{Program, TraceKey, Walk};

pub use strata_engine::Backend;

/// Cache counters: compiled programs found (`hits`) and built (`misses`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Programs found in the cache.
    pub hits: u64,
    /// Programs verified and compiled.
    pub misses: u64,
    /// Programs built from traced operations (a loop's later steps find theirs by the walk of
    /// their operations and build none).
    pub built: u64,
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
    /// The program prepared by the engine, per backend (on first use).
    prepared: RefCell<HashMap<Backend, Arc<Prepared>>>,
    /// A digest of its structure, the same on every rank that traced the same program (ranks
    /// compare it before a distributed run).
    fingerprint: u64,
    /// Its structure key ([`strata_engine::structure_key`]), computed once: the engine's memo
    /// takes it as it is.
    key: strata_engine::StructureKey,
    /// Its distribution over the job's ranks (under [`crate::spmd`], planned on first use).
    dist: std::cell::OnceCell<std::result::Result<strata_dist::Distribution, String>>,
}

/// How many programs each of this thread's caches holds at most (as the engine's memo,
/// [`strata_engine::MEMO_CAPACITY`]; a full cache starts empty again): a program no longer
/// held is built and prepared again when next met, and a loop over ever new sizes holds a
/// bounded set.
pub const CAPACITY: usize = strata_engine::MEMO_CAPACITY;

thread_local! {
    static BACKEND: Cell<Backend> = const { Cell::new(Backend::Auto) };
    static CACHE: RefCell<strata_engine::Bounded<strata_engine::StructureKey, Rc<Compiled>>> = RefCell::default();
    /// Compiled programs by the walk of the operations they were built from: a loop's later
    /// steps find theirs without building, verifying or printing the program again.
    static WALKED: RefCell<strata_engine::Bounded<TraceKey, Rc<Compiled>, rustc_hash::FxBuildHasher>> = RefCell::default();
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

fn prepare(p: Program) -> Result<Rc<Compiled>> {
    let key = strata_engine::structure_key(&p.module, &p.module.types, p.entry);
    if let Some(c) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        bump(|s| s.hits += 1);
        return Ok(c);
    }
    bump(|s| s.misses += 1);
    let info = strata_verify::verify(&p.module).map_err(|d| ArrayError::Internal {
        message: d.first().map(|d| d.message.clone()).unwrap_or_default(),
        program: p.module.to_string(),
    })?;
    let c = Rc::new(Compiled {
        fingerprint: key.fingerprint(),
        key,
        module: p.module,
        types: info.types,
        entry: p.entry,
        prepared: RefCell::default(),
        dist: std::cell::OnceCell::new(),
    });
    CACHE.with(|cache| cache.borrow_mut().insert(key, c.clone()));
    Ok(c)
}

/// `c` prepared by the engine for backend `b`.
fn prepared(c: &Compiled, b: Backend) -> Result<Arc<Prepared>> {
    if let Some(p) = c.prepared.borrow().get(&b) {
        return Ok(p.clone());
    }
    // Tiered: a small run of a program not compiled yet is interpreted while its library
    // compiles in the background (`strata_engine::tier`).
    let options = Options { tiered: strata_engine::tiered_default(), ..Options::with_backend(b) };
    let p = strata_engine::prepare_keyed(&c.module, &c.types, c.entry, &options, c.key).map_err(run_error)?;
    c.prepared.borrow_mut().insert(b, p.clone());
    Ok(p)
}

/// An engine error as the front end reports it.
pub(crate) fn run_error(e: ExecuteError) -> ArrayError {
    match e {
        ExecuteError::Program(d) => ArrayError::Run(d.message),
        ExecuteError::NotCompiled(why) => {
            ArrayError::Run(format!("the native backend does not compile this program: {why}"))
        }
        other => ArrayError::Run(other.to_string()),
    }
}

/// Runs the program of a walk and returns its result, then the values of the walk's `kept`
/// arrays.
pub(crate) fn run(w: Walk) -> Result<Vec<Tensor>> {
    let b = backend();
    let distributed = crate::spmd::distributed(w.on_team);
    let key = w.key();
    let (c, inputs) = match WALKED.with(|c| c.borrow().get(&key).cloned()) {
        Some(c) => {
            bump(|s| s.hits += 1);
            (c, w.inputs)
        }
        None => {
            bump(|s| s.built += 1);
            let p = w.build()?;
            let inputs = p.inputs;
            let c = prepare(Program { inputs: Vec::new(), ..p })?;
            WALKED.with(|w| w.borrow_mut().insert(key, c.clone()));
            (c, inputs)
        }
    };
    if distributed {
        let size = crate::spmd::comm().map_or(1, |c| c.size);
        let dist = c.dist.get_or_init(|| {
            strata_dist::Distribution::new(&c.module, &c.types, c.entry, size).map_err(|e| e.to_string())
        });
        let dist = dist.as_ref().map_err(|e| ArrayError::Run(format!("the program cannot run distributed: {e}")))?;
        bump(|s| s.distributed_runs += 1);
        return crate::spmd::run(dist, &inputs, b, c.fingerprint).map(|t| vec![t]);
    }
    let ran = prepared(&c, b)?.run(&inputs).map_err(run_error)?;
    if let Some(w) = &ran.warning {
        // The array front end has no caller to hand a warning to: stderr, once per program.
        eprintln!("strata: warning: {w}");
    }
    bump(|s| if ran.timings.is_some() { s.native_runs += 1 } else { s.interpreted_runs += 1 });
    ran.values.into_iter().map(|(_, v)| v.into_tensor().map_err(|e| ArrayError::Run(e.to_string()))).collect()
}
