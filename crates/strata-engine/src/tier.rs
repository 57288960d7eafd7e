//! Tiered execution: a small run of a program whose native library is not compiled yet runs in
//! the reference interpreter, and the library compiles in the background once the program has
//! spent [`COMPILE_AFTER`] interpreting — as a JIT interprets code until it is hot.
//!
//! A compile costs 0.1–0.3 s; interpreting a small run costs microseconds to milliseconds. A
//! program met once (a test drawing shapes, the first call of a library routine) then never
//! waits for a compiler, and one that runs often pays one compile, off the caller's thread:
//! its runs go on in the interpreter until the library is ready, then run natively. Runs too
//! large to interpret cheaply ([`TIER_MAX_COST`]) compile at once, as without tiers.
//!
//! Libraries are shared by source text: every size of a program prints the same C, so the
//! compile one size started serves the others, and the on-disk cache serves later processes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use strata_codegen::compile::{self, CompileError};

/// The largest cost ([`strata_codegen::schedule::interpret_cost`]: points times fold steps
/// times expression nodes) a run may have to be interpreted while its library is not
/// compiled: about 20 ms of interpreting (measured at about 40 ns per operation and point on
/// an elementwise chain), a tenth of a compile. Larger runs compile at once.
pub const TIER_MAX_COST: i64 = 1 << 19;

/// How long a library's programs run in the interpreter before it is compiled (in the
/// background): about a tenth of a compile, so a program met once costs no compile, and one
/// met often at most this much more than compiling it at once (the ski-rental bound). A run
/// is charged its time or its cost at the reference rate ([`charge`]), whichever is more.
pub const COMPILE_AFTER: Duration = Duration::from_millis(20);

/// What interpreting one unit of [`strata_codegen::schedule::interpret_cost`] took when
/// [`TIER_MAX_COST`] was set (an elementwise chain, one scalar at a time).
pub const NS_PER_COST: u64 = 40;

/// What an interpreted run of cost `cost` that took `elapsed` counts toward
/// [`COMPILE_AFTER`]: the larger of the two. The interpreter's typed loops run dense
/// arithmetic far faster than the reference rate, and a compile should not wait longer for
/// it: the work the program does, not how fast the interpreter happens to do it, says it is
/// hot (scikit-learn's StandardScaler at 2,000 × 50: its compiles queued within 3 calls by
/// time before those loops, and not within 13 after).
pub fn charge(elapsed: Duration, cost: i64) -> Duration {
    elapsed.max(Duration::from_nanos(u64::try_from(cost).unwrap_or(0).saturating_mul(NS_PER_COST)))
}

/// How a background compile ended.
#[derive(Clone, Debug)]
pub(crate) enum Built {
    /// The shared object.
    Library(PathBuf),
    /// No C compiler is installed: the interpreter goes on running (the message says so).
    NoCompiler(String),
    /// The compiler failed on the generated code (a native backend bug).
    Failed(String),
}

impl Built {
    fn of(r: Result<(PathBuf, compile::CacheState), CompileError>) -> Built {
        match r {
            Ok((so, _)) => Built::Library(so),
            Err(e @ CompileError::NoCompiler { .. }) => Built::NoCompiler(e.to_string()),
            Err(e) => Built::Failed(e.to_string()),
        }
    }
}

/// The native library of one generated source, compiled in the background once its programs
/// have been interpreted long enough.
pub(crate) struct Library {
    /// The C, until it is compiled.
    source: Mutex<Option<String>>,
    built: OnceLock<Built>,
    queued: AtomicBool,
    interpreted_ns: AtomicU64,
}

impl Library {
    /// The library of `source`, one per source text in the process, known by its kernel cache
    /// key `key` ([`compile::lookup`]), as the cache on disk knows it.
    pub(crate) fn of(key: u64, source: &str) -> Arc<Library> {
        type Registry = Mutex<HashMap<u64, Arc<Library>>>;
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        let mut libs = REGISTRY.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        libs.entry(key)
            .or_insert_with(|| {
                Arc::new(Library {
                    source: Mutex::new(Some(source.to_string())),
                    built: OnceLock::new(),
                    queued: AtomicBool::new(false),
                    interpreted_ns: AtomicU64::new(0),
                })
            })
            .clone()
    }

    /// How its compile ended (`None`: not compiled yet).
    pub(crate) fn built(&self) -> Option<&Built> {
        self.built.get()
    }

    /// Records that a compile elsewhere (a run too large to interpret) built its shared object.
    pub(crate) fn set_built(&self, so: PathBuf) {
        let _ = self.built.set(Built::Library(so));
        self.source.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Counts `elapsed` (see [`charge`]) of interpreting one of its programs; past
    /// [`COMPILE_AFTER`] in all, the compile is queued (once).
    pub(crate) fn interpreted(self: &Arc<Self>, elapsed: Duration) {
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let spent = self.interpreted_ns.fetch_add(ns, Relaxed).saturating_add(ns);
        if spent >= COMPILE_AFTER.as_nanos() as u64 && !self.queued.swap(true, Relaxed) {
            let lib = self.clone();
            in_background(move || lib.compile());
        }
    }

    fn compile(&self) {
        let source = self.source.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let (None, Some(source)) = (self.built.get(), source) {
            let _ = self.built.set(Built::of(compile::build(&source)));
        }
    }
}

/// Compiles queued or running in the background.
static QUEUED: AtomicU64 = AtomicU64::new(0);

/// How many background compiles (tiers' libraries, sizes' specializations) are queued or
/// running (0: every program that was interpreted long enough runs natively now).
pub fn compiling() -> u64 {
    QUEUED.load(Relaxed)
}

/// A compile for the background workers.
type Job = Box<dyn FnOnce() + Send>;

/// Hands compile `job` to the background compilers: `max(1, cores / 2)` threads, started on
/// first use, which leave the other cores to the caller (every background compile goes
/// through them, so no more compilers than that ever run at once). Compiles still queued when
/// the process ends are dropped (their libraries are compiled by a later process that needs
/// them).
pub(crate) fn in_background(job: impl FnOnce() + Send + 'static) {
    QUEUED.fetch_add(1, Relaxed);
    let job: Job = Box::new(move || {
        job();
        QUEUED.fetch_sub(1, Relaxed);
    });
    static QUEUE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let workers = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
        for k in 0..workers {
            let rx = rx.clone();
            let _ = std::thread::Builder::new().name(format!("strata-compile-{k}")).spawn(move || {
                yield_to_the_caller();
                loop {
                    let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    match next {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
        }
        Mutex::new(tx)
    });
    // A send fails only when every worker is gone (none could be started): compile here.
    if let Err(mpsc::SendError(job)) = sender.lock().unwrap_or_else(|e| e.into_inner()).send(job) {
        job();
    }
}

/// Gives the calling thread, and the compilers it starts (a child inherits its parent thread's
/// priority), the lowest priority (nice 19): a background compile then takes a core only when
/// the caller's threads leave one idle. At the same priority a compiler took cores from the
/// kernels' OpenMP threads, and a parallel loop waited at its barrier for a thread the
/// compiler had displaced: a 512² power iteration ran at 2.6–6.7 ms a call, not 2.3, while a
/// size's specialization compiled. Best effort: where priorities cannot be lowered nothing
/// changes. Linux keeps a priority per thread, so the caller's threads keep theirs.
fn yield_to_the_caller() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority and gettid read and write no memory of ours; the call changes only
    // this thread's scheduling priority.
    unsafe {
        let _ = libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, LOWEST_PRIORITY);
    }
}

/// The nice value of the background compilers' threads: the lowest priority.
#[cfg(target_os = "linux")]
const LOWEST_PRIORITY: libc::c_int = 19;

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests share the process's queue and count: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// Waits until no background job is queued or running.
    fn drained() -> u64 {
        let start = std::time::Instant::now();
        while compiling() > 0 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        compiling()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn background_compilers_run_at_the_lowest_priority_and_the_caller_keeps_its_own() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // What a compiler started by a background job sees: field 19 of /proc/self/stat.
        let (tx, rx) = mpsc::channel::<String>();
        in_background(move || {
            let out = std::process::Command::new("sh").args(["-c", "cut -d' ' -f19 /proc/self/stat"]).output();
            let _ = tx.send(out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default());
        });
        let child = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(child, LOWEST_PRIORITY.to_string());
        // SAFETY: as in `yield_to_the_caller`.
        let own = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
        assert_ne!(own, LOWEST_PRIORITY, "the calling thread keeps its priority");
        assert_eq!(drained(), 0);
    }

    #[test]
    fn an_interpreted_run_is_charged_its_time_or_its_work_whichever_is_more() {
        let ms = Duration::from_millis(1);
        assert_eq!(charge(ms, 0), ms);
        assert_eq!(charge(ms, 1000), ms);
        assert_eq!(charge(Duration::from_micros(1), 1000), Duration::from_micros(40));
        // A run at the largest interpretable cost is charged about COMPILE_AFTER.
        let most = charge(Duration::ZERO, TIER_MAX_COST);
        assert!(most >= COMPILE_AFTER && most < 2 * COMPILE_AFTER, "{most:?}");
    }

    #[test]
    fn a_background_compile_counts_until_it_ends() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (go, wait) = mpsc::channel::<()>();
        let (ended, done) = mpsc::channel::<()>();
        in_background(move || {
            let _ = wait.recv();
            let _ = ended.send(());
        });
        assert_eq!(compiling(), 1, "queued or running");
        go.send(()).unwrap();
        done.recv().unwrap();
        assert_eq!(drained(), 0, "ended");
    }
}
