//! The communicator: Strata's MPI layer (`mpi_layer.c`), compiled with `mpicc` at first use,
//! cached beside the kernels, and loaded with `RTLD_GLOBAL` (Open MPI's plugins resolve symbols
//! of `libmpi` through the global namespace).
//!
//! Building the layer at run time keeps MPI optional: `strata` builds and runs everything
//! single-process without MPI installed, and a distributed run that finds no `mpicc` says so.
//! docs/design.md records why this route was chosen over the `mpi` crate.

use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::process::Command;

/// The layer's C source.
const SOURCE: &str = include_str!("mpi_layer.c");

/// Why the MPI layer could not be used.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CommError {
    /// `mpicc` is missing or failed.
    #[error(
        "cannot build the MPI layer with `{compiler}`: {why} (install Open MPI: `scripts/mpi-env`, or set $STRATA_MPICC)"
    )]
    Build {
        /// The compiler command.
        compiler: String,
        /// What went wrong.
        why: String,
    },
    /// The built layer could not be loaded.
    #[error("cannot load the MPI layer {}: {why}", path.display())]
    Load {
        /// The shared object.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// An MPI call returned an error.
    #[error("MPI `{call}` failed: {text}")]
    Call {
        /// The call.
        call: &'static str,
        /// MPI's text for the error code.
        text: String,
    },
    /// Rows received that no held buffer holds (a plan that does not match the buffers).
    #[error("internal: rows {rows} received from rank {from} fit no held buffer")]
    Unplaced {
        /// The rows.
        rows: strata_ir::Interval,
        /// The sender.
        from: usize,
    },
}

/// Whether this process was started by an MPI launcher (`mpirun`, `mpiexec`, `srun`).
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"].iter().any(|v| std::env::var_os(v).is_some())
}

/// Native threads for each rank: `$STRATA_NUM_THREADS`, else this node's cores shared among
/// the job's ranks on it (Open MPI's `OMPI_COMM_WORLD_LOCAL_SIZE`), at least one.
pub fn threads_per_rank() -> usize {
    let env = strata_codegen::exec::threads_from_env();
    if env > 0 {
        return env;
    }
    // Read once: `available_parallelism` reads the cgroup's quota files (tens of µs, every
    // run of a time loop).
    static SHARE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SHARE.get_or_init(|| {
        let local = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (cores / local.max(1)).max(1)
    })
}

/// The MPI layer's progress thread's interval in microseconds (0: no thread): the thread tests
/// the exchanges a rank started while the rank computes, so that the bytes cross meanwhile
/// (Open MPI moves a message over its eager limit only inside MPI calls).
/// `$STRATA_MPI_PROGRESS_US` sets it (0 turns the thread off); by default it is 20 where this
/// node has a core to spare for the thread (its ranks times [`threads_per_rank`] below the
/// cores), else 0: on a node whose cores all compute, each of the thread's wake-ups takes a core
/// from a rank, which on a 2-core machine cost more per step than the wait it saved
/// (docs/runtime.md, "Progress").
pub fn progress_interval_us() -> i64 {
    if let Some(v) = std::env::var("STRATA_MPI_PROGRESS_US").ok().and_then(|v| v.trim().parse::<i64>().ok()) {
        return v.clamp(0, 1_000_000);
    }
    let local = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if local.max(1) * threads_per_rank() < cores {
        20
    } else {
        0
    }
}

/// The MPI C compiler: `$STRATA_MPICC`, else `mpicc`.
pub fn mpicc() -> String {
    std::env::var("STRATA_MPICC").ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "mpicc".into())
}

type InitFn = unsafe extern "C" fn(*mut c_int, *mut c_int, std::ffi::c_long) -> c_int;
type VoidFn = unsafe extern "C" fn() -> c_int;
type AbortFn = unsafe extern "C" fn(c_int) -> c_int;
type WtimeFn = unsafe extern "C" fn() -> f64;
type StartFn = unsafe extern "C" fn(
    c_int,
    *const c_int,
    *const *mut c_void,
    *const i64,
    c_int,
    *const c_int,
    *const *mut c_void,
    *const i64,
    c_int,
    *mut *mut c_void,
) -> c_int;
type WaitFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type GathervFn = unsafe extern "C" fn(*const c_void, i64, *mut c_void, *const i64, *const i64, c_int, c_int) -> c_int;
type AllreduceFn = unsafe extern "C" fn(*mut c_void, i64, c_int, c_int) -> c_int;
type ExscanFn = unsafe extern "C" fn(*const c_void, *mut c_void, i64, c_int, c_int, c_int) -> c_int;
type BcastFn = unsafe extern "C" fn(*mut c_void, i64, c_int) -> c_int;
type AlltoallvFn = unsafe extern "C" fn(*const c_void, *const i64, *mut c_void, *const i64, c_int) -> c_int;
type AlltoallCountsFn = unsafe extern "C" fn(*const i64, *mut i64) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int, *mut c_char, c_int);

/// The world communicator of this job: this process's rank and the number of ranks.
pub struct Comm {
    /// This process's rank, `0..size`.
    pub rank: usize,
    /// The number of ranks.
    pub size: usize,
    finalize: VoidFn,
    barrier: VoidFn,
    abort: AbortFn,
    wtime: WtimeFn,
    start: StartFn,
    wait: WaitFn,
    gatherv: GathervFn,
    allreduce: AllreduceFn,
    exscan: ExscanFn,
    bcast: BcastFn,
    alltoallv: AlltoallvFn,
    alltoall_counts: AlltoallCountsFn,
    error_string: ErrorStringFn,
}

/// Element types an allreduce combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceType {
    /// `f64`
    F64 = 0,
    /// `f32`
    F32 = 1,
    /// `i64` (and `index`)
    I64 = 2,
    /// `i32`
    I32 = 3,
    /// `u64`
    U64 = 4,
    /// `u32`
    U32 = 5,
    /// `i16`
    I16 = 6,
    /// `u16`
    U16 = 7,
    /// `i8`
    I8 = 8,
    /// `u8` (and `bool`)
    U8 = 9,
}

impl ReduceType {
    /// Bytes per value.
    pub fn width(self) -> usize {
        match self {
            ReduceType::F64 | ReduceType::I64 | ReduceType::U64 => 8,
            ReduceType::F32 | ReduceType::I32 | ReduceType::U32 => 4,
            ReduceType::I16 | ReduceType::U16 => 2,
            ReduceType::I8 | ReduceType::U8 => 1,
        }
    }
}

/// How an allreduce combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum.
    Sum = 0,
    /// Maximum.
    Max = 1,
    /// Minimum.
    Min = 2,
    /// Product.
    Prod = 3,
    /// Logical or.
    LOr = 4,
    /// Logical and.
    LAnd = 5,
    /// Logical exclusive or.
    LXor = 6,
    /// Bitwise and.
    BAnd = 7,
    /// Bitwise or.
    BOr = 8,
    /// Bitwise exclusive or.
    BXor = 9,
}

/// Builds the layer with `mpicc` (or finds it in the kernel cache; the MPI version is part of
/// the key).
fn build() -> Result<PathBuf, CommError> {
    let cc = mpicc();
    let berr = |why: String| CommError::Build { compiler: cc.clone(), why };
    let version = Command::new(&cc).arg("--showme:version").output().map_err(|e| berr(e.to_string()))?;
    let mpi = String::from_utf8_lossy(if version.stdout.is_empty() { &version.stderr } else { &version.stdout });
    let source = format!("/* {} */\n{SOURCE}", mpi.trim().replace("*/", ""));
    strata_codegen::compile::build_with(&cc, &["-O2", "-fPIC", "-shared"], &[], "mpi", &source)
        .map(|(so, _)| so)
        .map_err(|e| berr(e.to_string()))
}

impl Comm {
    /// Builds and loads the MPI layer and initializes MPI (once per process).
    pub fn init() -> Result<Comm, CommError> {
        let path = build()?;
        let lerr = |why: String| CommError::Load { path: path.clone(), why };
        // SAFETY: the library is the layer built above from `mpi_layer.c`; loading it runs
        // Open MPI's constructors, which is what linking against it would do.
        let lib = unsafe {
            libloading::os::unix::Library::open(Some(&path), libc::RTLD_NOW | libc::RTLD_GLOBAL)
                .map_err(|e| lerr(e.to_string()))?
        };
        // The layer stays loaded for the life of the process (MPI cannot be unloaded).
        let lib: &'static libloading::os::unix::Library = Box::leak(Box::new(lib));
        macro_rules! sym {
            ($name:literal, $t:ty) => {
                // SAFETY: each symbol has exactly this signature in `mpi_layer.c`.
                *unsafe { lib.get::<$t>(concat!($name, "\0").as_bytes()) }.map_err(|e| lerr(e.to_string()))?
            };
        }
        let init: InitFn = sym!("strata_mpi_init", InitFn);
        let mut comm = Comm {
            rank: 0,
            size: 1,
            finalize: sym!("strata_mpi_finalize", VoidFn),
            barrier: sym!("strata_mpi_barrier", VoidFn),
            abort: sym!("strata_mpi_abort", AbortFn),
            wtime: sym!("strata_mpi_wtime", WtimeFn),
            start: sym!("strata_mpi_start", StartFn),
            wait: sym!("strata_mpi_wait", WaitFn),
            gatherv: sym!("strata_mpi_gatherv", GathervFn),
            allreduce: sym!("strata_mpi_allreduce", AllreduceFn),
            exscan: sym!("strata_mpi_exscan", ExscanFn),
            bcast: sym!("strata_mpi_bcast", BcastFn),
            alltoallv: sym!("strata_mpi_alltoallv", AlltoallvFn),
            alltoall_counts: sym!("strata_mpi_alltoall_counts", AlltoallCountsFn),
            error_string: sym!("strata_mpi_error_string", ErrorStringFn),
        };
        let (mut rank, mut size) = (0, 0);
        // SAFETY: two out-pointers to live integers.
        let rc = unsafe { init(&mut rank, &mut size, progress_interval_us() as std::ffi::c_long) };
        comm.check("MPI_Init", rc)?;
        // Kernels of local programs (lowered with `polls`) let MPI progress the exchanges under
        // way: `strata_mpi_poll` returns at once when none is, and may run on any thread.
        // `$STRATA_MPI_POLL=0` leaves their polls empty.
        let poll: unsafe extern "C" fn() = sym!("strata_mpi_poll", unsafe extern "C" fn());
        if std::env::var("STRATA_MPI_POLL").map_or(true, |v| v.trim() != "0") {
            strata_codegen::runtime::set_poll(poll);
        }
        comm.rank = rank as usize;
        comm.size = size as usize;
        Ok(comm)
    }

    fn check(&self, call: &'static str, rc: c_int) -> Result<(), CommError> {
        if rc == 0 {
            return Ok(());
        }
        let mut buf = vec![0 as c_char; 1024];
        // SAFETY: a buffer of the capacity passed (at least MPI_MAX_ERROR_STRING).
        unsafe { (self.error_string)(rc, buf.as_mut_ptr(), buf.len() as c_int) };
        // SAFETY: the layer writes a NUL-terminated string (or an empty one).
        let text = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
        Err(CommError::Call { call, text: if text.is_empty() { format!("error code {rc}") } else { text } })
    }

    /// Waits for every rank.
    pub fn barrier(&self) -> Result<(), CommError> {
        // SAFETY: no arguments.
        self.check("MPI_Barrier", unsafe { (self.barrier)() })
    }

    /// Ends every rank of the job with exit status `code` (`MPI_Abort`): what a rank that
    /// failed alone calls, since the others would wait for it in their next collective.
    pub fn abort(&self, code: i32) {
        // SAFETY: an integer argument; MPI_Abort does not return on success.
        unsafe { (self.abort)(code) };
    }

    /// Seconds on MPI's wall clock.
    pub fn wtime(&self) -> f64 {
        // SAFETY: no arguments.
        unsafe { (self.wtime)() }
    }

    /// Shuts MPI down (after the last communication).
    pub fn finalize(&self) -> Result<(), CommError> {
        // SAFETY: no arguments.
        self.check("MPI_Finalize", unsafe { (self.finalize)() })
    }

    /// Point-to-point exchange: sends each `(rank, bytes)` of `sends` and receives into each
    /// `(rank, buffer)` of `recvs` (the buffer's length is the message's), all at once.
    pub fn exchange(
        &self,
        sends: &[(usize, &[u8])],
        recvs: &mut [(usize, &mut [u8])],
        tag: i32,
    ) -> Result<(), CommError> {
        let m = Messages::new(sends.iter().map(|(r, b)| (*r, *b)), recvs.iter_mut().map(|(r, b)| (*r, &mut **b)));
        let mut pending = std::ptr::null_mut();
        // SAFETY: every pointer addresses a live buffer of the length passed beside it, not
        // touched by Rust until the wait below returns; send buffers are only read.
        let rc = unsafe { self.post(&m, tag, &mut pending) };
        // SAFETY: the handle just started (null if nothing was), waited for once.
        let done = unsafe { (self.wait)(pending) };
        let rc = if rc != 0 { rc } else { done };
        self.check("MPI_Isend/MPI_Irecv", rc)
    }

    /// Starts a point-to-point exchange and returns at once: sends each `(rank, bytes)` of
    /// `sends` and receives each `(rank, buffer)` of `recvs` (the buffer's length is the
    /// message's). The exchange owns the buffers until [`Started::wait`] gives the received
    /// ones back; in between the caller computes (a halo exchange overlapped with the
    /// interior).
    pub fn start(
        &self,
        sends: Vec<(usize, Vec<u8>)>,
        mut recvs: Vec<(usize, Vec<u8>)>,
        tag: i32,
    ) -> Result<Started<'_>, CommError> {
        let m = Messages::new(
            sends.iter().map(|(r, b)| (*r, b.as_slice())),
            recvs.iter_mut().map(|(r, b)| (*r, b.as_mut_slice())),
        );
        let mut pending = std::ptr::null_mut();
        // SAFETY: every pointer addresses a live buffer of the length passed beside it, owned
        // by the `Started` returned (a `Vec`'s heap block does not move when the `Vec` does)
        // and neither read nor written by Rust until its requests complete; send buffers are
        // only read.
        let rc = unsafe { self.post(&m, tag, &mut pending) };
        let started = Started { comm: self, pending, sends, recvs };
        match self.check("MPI_Isend/MPI_Irecv", rc) {
            Ok(()) => Ok(started),
            Err(e) => {
                drop(started);
                Err(e)
            }
        }
    }

    /// Posts the messages of `m` (`strata_mpi_start`): `*pending` is the handle to wait for.
    ///
    /// # Safety
    /// Every buffer of `m` must stay alive, and its receive buffers untouched, until the
    /// handle is waited for.
    unsafe fn post(&self, m: &Messages, tag: i32, pending: &mut *mut c_void) -> c_int {
        // SAFETY: guaranteed by the caller; the arrays of `m` have the lengths passed.
        unsafe {
            (self.start)(
                m.sends(),
                m.to.as_ptr(),
                m.sbuf.as_ptr(),
                m.sbytes.as_ptr(),
                m.recvs(),
                m.from.as_ptr(),
                m.rbuf.as_ptr(),
                m.rbytes.as_ptr(),
                tag,
                pending,
            )
        }
    }

    /// Gathers every rank's `bytes` on `root`, in rank order (`None` on other ranks);
    /// `counts[k]` is rank k's length.
    pub fn gatherv(&self, bytes: &[u8], counts: &[usize], root: usize) -> Result<Option<Vec<u8>>, CommError> {
        let mut displs = Vec::with_capacity(counts.len());
        let mut total = 0i64;
        for &c in counts {
            displs.push(total);
            total += c as i64;
        }
        let counts: Vec<i64> = counts.iter().map(|&c| c as i64).collect();
        // A spare byte: an empty buffer's pointer is 1, which Open MPI reads as MPI_IN_PLACE.
        let mut out = vec![0u8; if self.rank == root { total as usize + 1 } else { 1 }];
        let spare = [0u8; 1];
        let send = if bytes.is_empty() { &spare[..] } else { bytes };
        // SAFETY: `send` is read (`bytes.len()` bytes); `out` holds the sum of `counts` on the root.
        let rc = unsafe {
            (self.gatherv)(
                send.as_ptr().cast(),
                bytes.len() as i64,
                out.as_mut_ptr().cast(),
                counts.as_ptr(),
                displs.as_ptr(),
                self.size as c_int,
                root as c_int,
            )
        };
        self.check("MPI_Gatherv", rc)?;
        out.truncate(total as usize);
        Ok((self.rank == root).then_some(out))
    }

    /// Combines `buf` (raw values of `ty`) over all ranks with `op`, in place.
    pub fn allreduce(&self, buf: &mut [u8], ty: ReduceType, op: ReduceOp) -> Result<(), CommError> {
        let count = (buf.len() / ty.width()) as i64;
        // SAFETY: `buf` holds `count` values of `ty`.
        let rc = unsafe { (self.allreduce)(buf.as_mut_ptr().cast(), count, ty as c_int, op as c_int) };
        self.check("MPI_Allreduce", rc)
    }

    /// The exclusive scan of `values` (raw values of `ty`) over the ranks by `op`, elementwise
    /// (`MPI_Exscan`): on each rank, the values of the ranks before it combined (after it, with
    /// `reverse`); `None` on the first rank (the last with `reverse`), which has none. `op`
    /// must be exact and commutative, so that the order the library combines in does not show.
    pub fn exscan(
        &self,
        values: &[u8],
        ty: ReduceType,
        op: ReduceOp,
        reverse: bool,
    ) -> Result<Option<Vec<u8>>, CommError> {
        let count = (values.len() / ty.width()) as i64;
        let mut out = values.to_vec();
        // SAFETY: both buffers hold `count` values of `ty`.
        let rc = unsafe {
            (self.exscan)(
                values.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                count,
                ty as c_int,
                op as c_int,
                c_int::from(reverse),
            )
        };
        self.check("MPI_Exscan", rc)?;
        let first = if reverse { self.size - 1 } else { 0 };
        Ok((self.rank != first).then_some(out))
    }

    /// Whether every rank passed the same `v` (a collective call): one all-reduce of `v` and its
    /// complement, whose maxima are this rank's own exactly when all are equal.
    pub fn same_on_every_rank(&self, v: u64) -> Result<bool, CommError> {
        let mine = [v, !v].map(u64::to_ne_bytes).concat();
        let mut both = mine.clone();
        self.allreduce(&mut both, ReduceType::U64, ReduceOp::Max)?;
        Ok(both == mine)
    }

    /// The largest of every rank's `v` (agreeing on a status).
    pub fn max_i64(&self, v: i64) -> Result<i64, CommError> {
        let mut b = v.to_ne_bytes();
        self.allreduce(&mut b, ReduceType::I64, ReduceOp::Max)?;
        Ok(i64::from_ne_bytes(b))
    }

    /// Broadcasts `buf` from `root`.
    pub fn bcast(&self, buf: &mut [u8], root: usize) -> Result<(), CommError> {
        // SAFETY: `buf` is a live buffer of its length on every rank.
        let rc = unsafe { (self.bcast)(buf.as_mut_ptr().cast(), buf.len() as i64, root as c_int) };
        self.check("MPI_Bcast", rc)
    }

    /// Personalized all-to-all: sends `sends[k]` to rank k and returns what each rank sent
    /// this one, in rank order (`MPI_Alltoall` of the lengths, then `MPI_Alltoallv`).
    pub fn alltoallv(&self, sends: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, CommError> {
        assert_eq!(sends.len(), self.size, "one message per rank");
        let scounts: Vec<i64> = sends.iter().map(|s| s.len() as i64).collect();
        let mut rcounts = vec![0i64; self.size];
        // SAFETY: both arrays hold one count per rank.
        let rc = unsafe { (self.alltoall_counts)(scounts.as_ptr(), rcounts.as_mut_ptr()) };
        self.check("MPI_Alltoall", rc)?;
        // One spare byte each: an empty Vec's pointer is 1, which Open MPI reads as MPI_IN_PLACE.
        let mut sbuf: Vec<u8> = sends.concat();
        sbuf.push(0);
        let mut rbuf = vec![0u8; rcounts.iter().sum::<i64>() as usize + 1];
        // SAFETY: `sbuf` holds the sum of `scounts`, `rbuf` the sum of `rcounts`.
        let rc = unsafe {
            (self.alltoallv)(
                sbuf.as_ptr().cast(),
                scounts.as_ptr(),
                rbuf.as_mut_ptr().cast(),
                rcounts.as_ptr(),
                self.size as c_int,
            )
        };
        self.check("MPI_Alltoallv", rc)?;
        let mut out = Vec::with_capacity(self.size);
        let mut at = 0usize;
        for c in rcounts {
            out.push(rbuf[at..at + c as usize].to_vec());
            at += c as usize;
        }
        Ok(out)
    }
}

/// Point-to-point messages as the MPI layer takes them: peers, buffers and lengths, sends and
/// receives apart.
struct Messages {
    to: Vec<c_int>,
    sbuf: Vec<*mut c_void>,
    sbytes: Vec<i64>,
    from: Vec<c_int>,
    rbuf: Vec<*mut c_void>,
    rbytes: Vec<i64>,
}

impl Messages {
    fn new<'b>(
        sends: impl Iterator<Item = (usize, &'b [u8])>,
        recvs: impl Iterator<Item = (usize, &'b mut [u8])>,
    ) -> Messages {
        let mut m = Messages { to: vec![], sbuf: vec![], sbytes: vec![], from: vec![], rbuf: vec![], rbytes: vec![] };
        for (rank, b) in sends {
            m.to.push(rank as c_int);
            m.sbuf.push(b.as_ptr() as *mut c_void);
            m.sbytes.push(b.len() as i64);
        }
        for (rank, b) in recvs {
            m.from.push(rank as c_int);
            m.rbuf.push(b.as_mut_ptr().cast());
            m.rbytes.push(b.len() as i64);
        }
        m
    }

    fn sends(&self) -> c_int {
        self.to.len() as c_int
    }

    fn recvs(&self) -> c_int {
        self.from.len() as c_int
    }
}

/// An exchange [`Comm::start`] started: it owns the messages' buffers until its requests
/// complete ([`Started::wait`]; dropping it waits too, so no buffer is freed under MPI).
pub struct Started<'c> {
    comm: &'c Comm,
    pending: *mut c_void,
    #[allow(dead_code)] // read by MPI until the requests complete
    sends: Vec<(usize, Vec<u8>)>,
    recvs: Vec<(usize, Vec<u8>)>,
}

impl Started<'_> {
    /// Waits for every message; returns the received ones, `(rank, bytes)` as they were given.
    ///
    /// # Errors
    /// An MPI failure.
    pub fn wait(mut self) -> Result<Vec<(usize, Vec<u8>)>, CommError> {
        let pending = std::mem::replace(&mut self.pending, std::ptr::null_mut());
        // SAFETY: the handle `strata_mpi_start` returned, waited for once (the field is now null).
        let rc = unsafe { (self.comm.wait)(pending) };
        self.comm.check("MPI_Waitall", rc)?;
        Ok(std::mem::take(&mut self.recvs))
    }
}

impl Drop for Started<'_> {
    fn drop(&mut self) {
        if !self.pending.is_null() {
            // SAFETY: as in `wait`; the buffers are freed only after this returns.
            unsafe { (self.comm.wait)(self.pending) };
        }
    }
}
