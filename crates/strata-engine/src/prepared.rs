//! Preparing an entry once ([`prepare`]) and running it many times ([`Prepared::run`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use strata_codegen::compile::{self, CompileError, Loaded};
use strata_codegen::exec::{self, Buffers, Layout, RunLayout};
use strata_codegen::{KernelProgram, LowerError, LowerOptions};
use strata_entity::Handle;
use strata_ir::{Function, Module, TypeArena};
use strata_runtime::{storage, Argument, Value, ValueType};

use crate::tier::Built;
use crate::{Backend, ExecuteError, Timings};

/// How an entry is prepared and run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Which backend runs it.
    pub backend: Backend,
    /// Native threads (`None`: `$STRATA_NUM_THREADS`, else all cores).
    pub threads: Option<usize>,
    /// The machine facts lowering decides from (read once: [`LowerOptions::for_this_machine`]).
    pub lower: LowerOptions,
    /// Native kernels take their extents as arguments, so one library serves every size;
    /// once this size has run this long (`None`: never), its kernels are compiled again with
    /// the sizes as literals (constant strides and trip counts), in the background, and later
    /// runs use that library. Default: `$STRATA_SPECIALIZE_AFTER_S` seconds, else 0.25 s (about
    /// a compile's cost: a specialization pays where it saves a tenth of a run that long).
    pub specialize_after: Option<std::time::Duration>,
    /// Tiered execution under `auto` ([`crate::tier`]): a run small enough to interpret
    /// cheaply, of a program whose library is not compiled yet, runs in the interpreter, and
    /// the library compiles in the background once the program has been interpreted long
    /// enough. For callers that run many programs of their own making (the array front end);
    /// off by default (`strata run` runs once and wants the native result). `$STRATA_TIERED=0`
    /// turns it off where a front end turns it on ([`tiered_default`]).
    pub tiered: bool,
}

/// Whether front ends that run programs in tiers do ([`Options::tiered`]): yes unless
/// `$STRATA_TIERED` is `0` or `off`.
pub fn tiered_default() -> bool {
    static TIERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TIERED.get_or_init(|| !matches!(std::env::var("STRATA_TIERED").as_deref().map(str::trim), Ok("0" | "off")))
}

/// [`Options::specialize_after`]'s default.
fn specialize_after_default() -> Option<std::time::Duration> {
    static AFTER: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    *AFTER.get_or_init(|| match std::env::var("STRATA_SPECIALIZE_AFTER_S") {
        Ok(v) if v.trim() == "never" => None,
        Ok(v) => Some(std::time::Duration::from_secs_f64(v.trim().parse::<f64>().unwrap_or(0.25).max(0.0))),
        Err(_) => Some(std::time::Duration::from_millis(250)),
    })
}

impl Default for Options {
    fn default() -> Options {
        Options {
            backend: Backend::Auto,
            threads: None,
            lower: LowerOptions::for_this_machine(),
            specialize_after: specialize_after_default(),
            tiered: false,
        }
    }
}

impl Options {
    /// The default options with `backend`.
    pub fn with_backend(backend: Backend) -> Options {
        Options { backend, ..Options::default() }
    }
}

/// An entry ready to run: lowered, compiled and loaded when it runs natively.
pub struct Prepared {
    module: Module,
    types: TypeArena,
    entry: Handle<Function>,
    threads: usize,
    backend: Backend,
    native: Option<Native>,
    /// The entry placed on a GPU, loaded there ([`crate::gpu`]).
    gpu: Option<crate::gpu::GpuNative>,
    /// Why the interpreter runs although native code was allowed.
    note: Option<String>,
    /// A native failure while preparing under `auto` (the compiler rejected the generated code,
    /// the cache cannot be written): the interpreter runs, and its success is a backend bug.
    native_failure: Option<String>,
    /// Whether a native backend bug was reported ([`Executed::warning`]).
    bug_reported: std::sync::atomic::AtomicBool,
    param_names: Vec<String>,
    /// The types of the outputs results-as-outputs appended after the entry's own parameters.
    appended: Vec<ValueType>,
    result_ty: Option<ValueType>,
    compile_s: f64,
    cached: bool,
    /// What specializing this size needs: the options it was lowered with.
    options: Options,
}

/// The native half of a prepared program.
struct Native {
    layout: Layout,
    /// The library generic in its extents, and the shared object it was loaded from (empty
    /// while it compiles in the background: `tier`).
    lib: std::sync::OnceLock<(Loaded, std::path::PathBuf)>,
    /// The library's background compile, when it was not compiled at once ([`crate::tier`]).
    tier: Option<Arc<crate::tier::Library>>,
    /// What interpreting a run costs ([`strata_codegen::schedule::interpret_cost`]), charged
    /// toward the background compile ([`crate::tier::charge`]).
    interpret_cost: i64,
    /// This size's specialized library, once compiled ([`Options::specialize_after`]).
    specialized: Arc<std::sync::OnceLock<Loaded>>,
    /// Native run time spent at this size so far, in nanoseconds.
    spent_ns: std::sync::atomic::AtomicU64,
    /// Whether the specialization has started.
    specializing: std::sync::atomic::AtomicBool,
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
    /// Under `auto`, a native failure where the interpreter succeeded (a native backend bug,
    /// whose result this is the interpreter's): the entry and the failure, reported once per
    /// prepared entry (`None` on later runs).
    pub warning: Option<String>,
}

/// How many prepared programs the memo holds at most: when full it starts empty again, and a
/// program met again is prepared again (verified, lowered and emitted again: its compiled
/// library stays loaded and cached). The bound costs a process that meets more programs than
/// this one re-preparation of each per that many new ones, and saves one that meets ever new
/// sizes of its programs memory that grows with every size (~30 KB each, measured).
pub const MEMO_CAPACITY: usize = 1024;

type Memo = Mutex<Bounded<(crate::key::StructureKey, Options), Arc<Prepared>>>;

fn memo() -> &'static Memo {
    static MEMO: std::sync::OnceLock<Memo> = std::sync::OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// A memo of at most [`MEMO_CAPACITY`] entries that starts empty again when full: a plain hash
/// map (an LRU list would add a node per entry, and `lru::LruCache::new` a table for every
/// entry up front), and the working set of a loop is back after one re-preparation of each
/// program per [`MEMO_CAPACITY`] new ones.
pub struct Bounded<K, V, S = std::collections::hash_map::RandomState> {
    map: HashMap<K, V, S>,
}

impl<K, V, S: Default> Default for Bounded<K, V, S> {
    fn default() -> Self {
        Bounded { map: HashMap::with_hasher(S::default()) }
    }
}

impl<K: std::hash::Hash + Eq, V, S: std::hash::BuildHasher> Bounded<K, V, S> {
    /// The value of `k`, if held.
    pub fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k)
    }

    /// Holds `v` for `k`, emptying the memo first when it is full.
    pub fn insert(&mut self, k: K, v: V) {
        if self.map.len() >= MEMO_CAPACITY && !self.map.contains_key(&k) {
            self.map.clear();
        }
        self.map.insert(k, v);
    }
}

/// Programs prepared so far in this process.
static PREPARED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many programs this process has prepared (each once while the memo keeps it, see
/// [`MEMO_CAPACITY`]: a loop that prepares again finds them; a count that grows with the
/// steps is a loop that compiles every step).
pub fn prepared_count() -> usize {
    PREPARED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Prepares `entry` of `module` (verified; `types` its arena) with `options`, or finds it
/// prepared: an entry with several results becomes the program writing them
/// ([`strata_verify::results_as_outputs`]; its arguments are then its parameters and those
/// outputs), the native backend lowers, compiles and loads it under `auto` and `native`.
/// Memoized for the process, keyed on the IR's structure and `options`.
///
/// # Errors
/// Under `native` only: [`ExecuteError::NotCompiled`] and [`ExecuteError::Compile`].
pub fn prepare(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    options: &Options,
) -> Result<Arc<Prepared>, ExecuteError> {
    prepare_keyed(module, types, entry, options, crate::key::structure(module, types, entry))
}

/// [`prepare`] for a front end that has computed the entry's structure key
/// ([`crate::structure_key`]) already: the key is not computed again.
///
/// # Errors
/// As [`prepare`].
pub fn prepare_keyed(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    options: &Options,
    structure: crate::key::StructureKey,
) -> Result<Arc<Prepared>, ExecuteError> {
    let key = (structure, options.clone());
    if let Some(p) = memo().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(p.clone());
    }
    let prepared = Arc::new(Prepared::new(module, types, entry, options)?);
    PREPARED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    memo().lock().unwrap_or_else(|e| e.into_inner()).insert(key, prepared.clone());
    Ok(prepared)
}

impl Prepared {
    fn new(
        module: &Module,
        types: &TypeArena,
        entry: Handle<Function>,
        options: &Options,
    ) -> Result<Prepared, ExecuteError> {
        let own_params = module.functions[entry].params.len();
        let module = strata_verify::results_as_outputs(module, entry).into_owned();
        check_results(&module, types, entry)?;
        let f = &module.functions[entry];
        let param_names = f.params.iter().map(|&p| f.exprs[p].name.clone()).collect();
        let appended = f.params[own_params..].iter().map(|&p| ValueType::from_ir(types, f.exprs[p].ty)).collect();
        let result_ty = f.result().map(|r| ValueType::from_ir(types, r));
        let mut p = Prepared {
            types: types.clone(),
            entry,
            threads: options.threads.unwrap_or_else(exec::threads_from_env),
            backend: options.backend,
            native: None,
            gpu: None,
            note: None,
            native_failure: None,
            bug_reported: Default::default(),
            param_names,
            appended,
            result_ty,
            compile_s: 0.0,
            cached: false,
            options: options.clone(),
            module,
        };
        if options.backend == Backend::Interp {
            return Ok(p);
        }
        // Compute follows data: an entry whose values live on a GPU runs there (under any
        // backend but the interpreter), and one that cannot is an error, never a CPU run.
        let placed = strata_codegen::placement::entry_gpu(&p.module, types, entry)
            .map_err(|e| ExecuteError::Gpu(e.to_string()))?
            .or(options.lower.gpu);
        if let Some(ordinal) = placed {
            let t0 = Instant::now();
            p.options.lower.gpu = Some(ordinal);
            let failed =
                |e: String| ExecuteError::Gpu(format!("`@{}` on gpu{ordinal}: {e}", p.module.functions[entry].name));
            let program = p.lowered().map_err(|e| failed(e.to_string()))?;
            p.gpu = Some(crate::gpu::build(&program).map_err(failed)?);
            p.compile_s = t0.elapsed().as_secs_f64();
            return Ok(p);
        }
        let t0 = Instant::now();
        let tiered = options.tiered && options.backend == Backend::Auto && p.all_dense();
        let built = build(p.lowered(), tiered);
        p.compile_s = t0.elapsed().as_secs_f64();
        match (built, options.backend) {
            (Ok((native, cached)), _) => {
                p.native = Some(native);
                p.cached = cached;
            }
            (Err(Failure::NotCompiled(e)), Backend::Native) => return Err(ExecuteError::NotCompiled(e.to_string())),
            (Err(Failure::Compile(e)), Backend::Native) => return Err(ExecuteError::Compile(e.to_string())),
            (Err(Failure::NotCompiled(e)), _) => {
                p.note = Some(format!("{}; running the reference interpreter", e.reason()))
            }
            (Err(Failure::Compile(e @ CompileError::NoCompiler { .. })), _) => {
                p.note = Some(format!("{e}; running the reference interpreter"));
            }
            (Err(Failure::Compile(e)), _) => p.native_failure = Some(e.to_string()),
        }
        Ok(p)
    }

    /// The module it runs (with an entry of several results as the program writing them).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The entry it runs.
    pub fn entry(&self) -> Handle<Function> {
        self.entry
    }

    /// The verified types of [`Self::module`].
    pub fn types(&self) -> &TypeArena {
        &self.types
    }

    /// Whether native code runs it (or will, once its library has compiled in the background:
    /// [`Options::tiered`]).
    pub fn is_native(&self) -> bool {
        self.native.is_some()
    }

    /// Whether its arguments and results are all dense (the interpreter holds values densely:
    /// a sparse operand interpreted could need far more memory than its stored entries).
    fn all_dense(&self) -> bool {
        let f = &self.module.functions[self.entry];
        let dense = |ty| ValueType::from_ir(&self.types, ty).levels.iter().all(|l| l.format.is_dense_like());
        f.params.iter().all(|&p| dense(f.exprs[p].ty)) && f.results.iter().all(|&r| dense(r))
    }

    /// Why the interpreter runs it although native code was allowed (`None` otherwise): what
    /// the native backend does not compile, or that no C compiler is installed.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The compiled library it runs (native only): the same for every size of one structure,
    /// since kernels take their extents as arguments.
    pub fn library(&self) -> Option<&std::path::Path> {
        self.native.as_ref().and_then(|n| n.lib.get()).map(|(_, so)| so.as_path())
    }

    /// Whether native runs use this size's specialized library ([`Options::specialize_after`]).
    pub fn specialized(&self) -> bool {
        self.native.as_ref().is_some_and(|n| n.specialized.get().is_some())
    }

    /// Counts a native run of `elapsed` at this size; the run that reaches
    /// [`Options::specialize_after`] queues the specialized library's compile with the
    /// background compilers (lowered again here: the loop-level IR is not `Send`). A failure to
    /// build it leaves the generic library running.
    fn count_run(&self, native: &Native, elapsed: std::time::Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(after) = self.options.specialize_after else { return };
        let spent = native.spent_ns.fetch_add(elapsed.as_nanos() as u64, Relaxed) + elapsed.as_nanos() as u64;
        if native.layout.extents().is_empty()
            || spent < after.as_nanos() as u64
            || native.specializing.swap(true, Relaxed)
        {
            return;
        }
        let Ok(program) = self.lowered() else { return };
        let source = strata_codegen::emit_c::emit_baked(&program);
        let cell = native.specialized.clone();
        crate::tier::in_background(move || {
            if let Ok(lib) = compile::build(&source).and_then(|(so, _)| Loaded::open(&so)) {
                let _ = cell.set(lib);
            }
        });
    }

    /// The loop kernels it runs, as `strata lower --to loops` prints them (native only;
    /// lowered again to print: a new size does not pay for printing what nobody reads).
    pub fn kernels(&self) -> Option<String> {
        self.native.as_ref()?;
        self.lowered().ok().map(|p| p.to_string())
    }

    /// Runs it on `args` (one per parameter of [`Self::module`]'s entry, or one per parameter
    /// of the entry as given to [`prepare`]: the outputs results-as-outputs appended then start
    /// as zeros; native code reads them in place).
    ///
    /// # Errors
    /// See [`ExecuteError`].
    pub fn run<T: Argument>(&self, args: &[T]) -> Result<Executed, ExecuteError> {
        self.run_timed(args, 0)
    }

    /// [`Self::run`], and natively `repeat` more times alternating preallocated and freshly
    /// allocated outputs, for the timings.
    ///
    /// # Errors
    /// See [`ExecuteError`].
    pub fn run_timed<T: Argument>(&self, args: &[T], repeat: usize) -> Result<Executed, ExecuteError> {
        let own = self.param_names.len() - self.appended.len();
        if args.len() == own && !self.appended.is_empty() {
            let mut all: Vec<Arg<'_, T>> = args.iter().map(Arg::Given).collect();
            all.extend(self.appended.iter().map(|ty| Arg::Zeros(ty, Default::default())));
            return self.run_all(&all, repeat);
        }
        self.run_all(args, repeat)
    }

    /// [`Self::run`] on `args` whose parameters `late` do not hold their values yet (a rank's
    /// halo strips, still being received): natively, the kernels that read none of them (nor
    /// anything computed from them) run first ([`Layout::early`]), then `arrive` fills them,
    /// then the other kernels run. `arrive` is called exactly once, before anything reads a
    /// late parameter — first, when nothing can run ahead — also when the run fails.
    ///
    /// # Errors
    /// See [`ExecuteError`]; `arrive`'s error as [`ExecuteError::Arrival`].
    pub fn run_overlapped<T: Argument>(
        &self,
        args: &[T],
        late: &[usize],
        arrive: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
    ) -> Result<Executed, ExecuteError> {
        let mut arrived = false;
        let mut once = || match std::mem::replace(&mut arrived, true) {
            true => Ok(()),
            false => arrive().map_err(ExecuteError::Arrival),
        };
        let phases = self.native.as_ref().filter(|_| args.len() == self.param_names.len()).and_then(|n| {
            let Tier::Ready(lib) = n.tier() else { return None };
            let first = n.layout.early(late)?;
            Some((n, lib, first))
        });
        let Some((native, lib, first)) = phases else {
            once()?;
            return self.run(args);
        };
        self.run_phases(args, native, lib, &first, late, &mut once).map(|e| keep_runs(args, e))
    }

    fn run_phases<T: Argument>(
        &self,
        args: &[T],
        native: &Native,
        lib: &Loaded,
        first: &[bool],
        late: &[usize],
        once: &mut dyn FnMut() -> Result<(), ExecuteError>,
    ) -> Result<Executed, ExecuteError> {
        let f = &self.module.functions[self.entry];
        let failed = |e: exec::ExecError| format!("native run of `@{}` failed: {e}", f.name);
        let second: Vec<bool> = first.iter().map(|&r| !r).collect();
        let mut buffers = match Buffers::new(&native.layout, args) {
            Ok(b) => b,
            Err(e) => {
                once()?;
                return self.fall_back(args, failed(e));
            }
        };
        // The run's time is both phases', without the wait between them.
        let t = Instant::now();
        let ahead = buffers.call_some(lib, self.threads, first);
        let mut first_s = t.elapsed().as_secs_f64();
        once()?;
        // A late table holds its entries only now: checked again before a kernel reads it.
        let arrived = ahead.and_then(|()| {
            let buffers_of = native.layout.buffers();
            buffers.check_tables(&native.layout, |b| buffers_of[b].param.is_some_and(|p| late.contains(&p)))
        });
        let t = Instant::now();
        let rest = arrived.and_then(|()| buffers.call_some(lib, self.threads, &second));
        first_s += t.elapsed().as_secs_f64();
        self.count_run(native, std::time::Duration::from_secs_f64(first_s));
        match rest {
            Ok(()) => {
                let values = buffers.into_values(&native.layout, args, &self.param_names, self.result_ty.as_ref());
                let timings = Timings { compile_s: self.compile_s, cached: self.cached, first_s, ..Timings::default() };
                Ok(Executed { values, timings: Some(timings), note: None, warning: None })
            }
            Err(e) => self.fall_back(args, failed(e)),
        }
    }

    /// After a native run failed (`failure`): the error under `native`, else the interpreter's
    /// run (whose success makes the failure a backend bug).
    fn fall_back<T: Argument>(&self, args: &[T], failure: String) -> Result<Executed, ExecuteError> {
        match self.backend {
            Backend::Native => Err(ExecuteError::Exec(failure)),
            _ => self.interpret(args, Some(failure)),
        }
    }

    fn run_all<T: Argument>(&self, args: &[T], repeat: usize) -> Result<Executed, ExecuteError> {
        self.run_backend(args, repeat).map(|e| keep_runs(args, e))
    }

    fn run_backend<T: Argument>(&self, args: &[T], repeat: usize) -> Result<Executed, ExecuteError> {
        if let Some(gpu) = &self.gpu {
            let mut timings = Timings { compile_s: self.compile_s, ..Timings::default() };
            let values = gpu
                .run(args, &self.param_names, self.result_ty.as_ref(), repeat, &mut timings)
                .map_err(|e| ExecuteError::Gpu(format!("`@{}`: {e}", self.module.functions[self.entry].name)))?;
            return Ok(Executed { values, timings: Some(timings), note: None, warning: None });
        }
        let Some(native) = &self.native else { return self.interpret(args, self.native_failure.clone()) };
        match native.tier() {
            Tier::Ready(lib) => match self.run_native(native, lib, args, repeat) {
                Ok((values, timings)) => Ok(Executed { values, timings: Some(timings), note: None, warning: None }),
                Err(e) => self.fall_back(args, e),
            },
            Tier::Compiling(tier) => {
                let t = Instant::now();
                let ran = self.interpret(args, None);
                tier.interpreted(crate::tier::charge(t.elapsed(), native.interpret_cost));
                ran
            }
            Tier::NoCompiler(why) => {
                let mut ran = self.interpret(args, None)?;
                ran.note = Some(format!("{why}; running the reference interpreter"));
                Ok(ran)
            }
            Tier::Failed(why) => self.interpret(args, Some(why)),
        }
    }

    /// Runs the reference interpreter; `native_failure` is why native code did not run it,
    /// which the interpreter's success makes a backend bug.
    fn interpret<T: Argument>(&self, args: &[T], native_failure: Option<String>) -> Result<Executed, ExecuteError> {
        // The interpreter holds every value logically (its own copy): stored arguments get a
        // dense view.
        let f = &self.module.functions[self.entry];
        let mut tensors = Vec::with_capacity(args.len());
        for (a, &p) in args.iter().zip(&f.params) {
            let whole = match (a.tensor(), a.stored()) {
                (Some(t), _) => Ok(t.clone()),
                (None, Some(s)) => Value::Stored(s.clone()).into_tensor(),
                (None, None) => unreachable!("an argument is a tensor or storage"),
            };
            let t = whole.map_err(|e| ExecuteError::Argument {
                name: f.exprs[p].name.clone(),
                func: f.name.clone(),
                message: e.to_string(),
            })?;
            tensors.push(t);
        }
        let interp = strata_interp::Interpreter::new(&self.module, &self.types);
        match (interp.run(self.entry, tensors), native_failure) {
            (Ok(o), failure) => {
                // `auto` never fails where the interpreter succeeds: a native failure is a
                // backend bug, reported once, and the interpreter's result is the answer.
                let first = failure.is_some() && !self.bug_reported.swap(true, std::sync::atomic::Ordering::Relaxed);
                let warning = failure.filter(|_| first).map(|failure| {
                    format!(
                        "the native backend failed on `@{}` where the reference interpreter succeeds ({failure}); \
                         the interpreter's result is returned (a native backend bug unless the C compiler itself \
                         is broken; `--backend native` shows the failure)",
                        f.name
                    )
                });
                Ok(Executed {
                    values: o.values.into_iter().map(|(n, t)| (n, Value::Tensor(t))).collect(),
                    timings: None,
                    note: self.note.clone(),
                    warning,
                })
            }
            (Err(e), _) => Err(ExecuteError::Program(Box::new(e.to_diagnostic()))),
        }
    }

    fn run_native<T: Argument>(
        &self,
        native: &Native,
        lib: &Loaded,
        args: &[T],
        repeat: usize,
    ) -> Result<(Vec<(String, Value)>, Timings), String> {
        let f = &self.module.functions[self.entry];
        let failed = |e: exec::ExecError| format!("native run of `@{}` failed: {e}", f.name);
        let mut timings = Timings { compile_s: self.compile_s, cached: self.cached, ..Timings::default() };
        let t1 = Instant::now();
        let mut buffers = Buffers::new(&native.layout, args).map_err(failed)?;
        buffers.call(lib, self.threads).map_err(failed)?;
        timings.first_s = t1.elapsed().as_secs_f64();
        self.count_run(native, t1.elapsed());
        // Alternating the two kinds of runs exposes both to the same machine state.
        for _ in 0..repeat {
            let t = Instant::now();
            buffers.call(lib, self.threads).map_err(failed)?;
            timings.preallocated_s.push(t.elapsed().as_secs_f64());
            self.count_run(native, t.elapsed());
            let t = Instant::now();
            buffers.renew_written(&native.layout, args);
            buffers.call(lib, self.threads).map_err(failed)?;
            timings.allocating_s.push(t.elapsed().as_secs_f64());
            self.count_run(native, t.elapsed());
        }
        let values = buffers.into_values(&native.layout, args, &self.param_names, self.result_ty.as_ref());
        Ok((values, timings))
    }
}

/// `executed` with each ragged result holding exactly a ragged argument's elements keeping that
/// argument's runs (its empty rows inside a group too), on every backend.
fn keep_runs<T: Argument>(args: &[T], mut executed: Executed) -> Executed {
    for (_, v) in &mut executed.values {
        if let Value::Tensor(t) = v {
            let like = args.iter().filter_map(Argument::stored).find_map(|a| storage::with_runs_of(t, a));
            if let Some(s) = like {
                *v = Value::Stored(s);
            }
        }
    }
    executed
}

/// An argument the caller gave, or the zeros an appended output starts as (made only if a
/// backend reads them: native code overwrites such outputs without reading them).
enum Arg<'a, T> {
    Given(&'a T),
    Zeros(&'a ValueType, std::sync::OnceLock<Value>),
}

impl<T> Arg<'_, T> {
    fn zeros<'m>(ty: &ValueType, made: &'m std::sync::OnceLock<Value>) -> &'m Value {
        made.get_or_init(|| Value::Tensor(strata_runtime::Tensor::zeros(ty)))
    }
}

impl<T: Argument> Argument for Arg<'_, T> {
    fn value_type(&self) -> &ValueType {
        match self {
            Arg::Given(a) => a.value_type(),
            Arg::Zeros(ty, _) => ty,
        }
    }
    fn tensor(&self) -> Option<&strata_runtime::Tensor> {
        match self {
            Arg::Given(a) => a.tensor(),
            Arg::Zeros(ty, made) => Self::zeros(ty, made).tensor(),
        }
    }
    fn stored(&self) -> Option<&strata_runtime::Stored> {
        match self {
            Arg::Given(a) => a.stored(),
            Arg::Zeros(..) => None,
        }
    }
}

/// Every dense result of `entry` must fit in memory: checked once, before anything runs.
fn check_results(module: &Module, types: &TypeArena, entry: Handle<Function>) -> Result<(), ExecuteError> {
    let f = &module.functions[entry];
    for (name, &ty) in f.result_names().iter().zip(&f.results) {
        let vt = ValueType::from_ir(types, ty);
        if vt.levels.iter().all(|l| l.format.is_dense_like()) {
            vt.check_allocatable().map_err(|message| ExecuteError::Result {
                name: name.clone(),
                func: f.name.clone(),
                message,
            })?;
        }
    }
    Ok(())
}

impl Prepared {
    /// The entry lowered to loops.
    fn lowered(&self) -> Result<KernelProgram, LowerError> {
        strata_codegen::lower_with(&self.module, &self.types, self.entry, &self.options.lower)
    }
}

/// Where a native program stands ([`Native::tier`]).
enum Tier<'n> {
    /// Its library runs: this size's specialized one once compiled, else the generic one.
    Ready(&'n Loaded),
    /// Its library is not compiled yet: the interpreter runs it meanwhile.
    Compiling(&'n Arc<crate::tier::Library>),
    /// No C compiler is installed (why).
    NoCompiler(&'n str),
    /// The background compile failed (why): a native backend bug.
    Failed(String),
}

impl Native {
    /// Which library runs it now, loading the one a background compile finished.
    fn tier(&self) -> Tier<'_> {
        let generic = match (self.lib.get(), &self.tier) {
            (Some((lib, _)), _) => lib,
            // `build` gives a native program its library or its background compile.
            (None, None) => return Tier::Failed("no native library".into()),
            (None, Some(tier)) => match tier.built() {
                None => return Tier::Compiling(tier),
                Some(Built::NoCompiler(why)) => return Tier::NoCompiler(why),
                Some(Built::Failed(why)) => return Tier::Failed(why.clone()),
                Some(Built::Library(so)) => match Loaded::open(so) {
                    Ok(lib) => &self.lib.get_or_init(|| (lib, so.clone())).0,
                    Err(e) => return Tier::Failed(e.to_string()),
                },
            },
        };
        Tier::Ready(self.specialized.get().unwrap_or(generic))
    }
}

/// Why native code could not be prepared.
enum Failure {
    NotCompiled(LowerError),
    Compile(CompileError),
}

/// Emits, compiles (or finds in the cache) and loads the lowered `program`; whether the shared
/// object came from the cache. `tiered`: a program small enough to interpret whose library is
/// not in the cache is not compiled now ([`crate::tier`]).
fn build(program: Result<KernelProgram, LowerError>, tiered: bool) -> Result<(Native, bool), Failure> {
    let program = program.map_err(Failure::NotCompiled)?;
    // The C takes the program's extents as arguments: another size printing the same text
    // finds it compiled (see `strata_codegen::emit_c::extents`).
    let (source, extents) = strata_codegen::emit_c::emit_with_extents(&program);
    let mut native = Native {
        layout: Layout::of(&program, extents),
        lib: Default::default(),
        tier: None,
        specialized: Default::default(),
        interpret_cost: 0,
        spent_ns: Default::default(),
        specializing: Default::default(),
    };
    let (so, state) = match tiered {
        true => match compile::lookup(&source) {
            compile::Lookup { object: Some(so), .. } => (so, compile::CacheState::Warm),
            compile::Lookup { key, object: None } => {
                let tier = crate::tier::Library::of(key, &source);
                native.interpret_cost = strata_codegen::schedule::interpret_cost(&program);
                let small = native.interpret_cost <= crate::tier::TIER_MAX_COST;
                if small || tier.built().is_some() {
                    // Runs load the library once compiled (by this size, another or a large run).
                    native.tier = Some(tier);
                    return Ok((native, false));
                }
                let built = compile::build(&source).map_err(Failure::Compile)?;
                tier.set_built(built.0.clone());
                built
            }
        },
        false => compile::build(&source).map_err(Failure::Compile)?,
    };
    let lib = Loaded::open(&so).map_err(Failure::Compile)?;
    let _ = native.lib.set((lib, so));
    Ok((native, state == compile::CacheState::Warm))
}
