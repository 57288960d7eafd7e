//! The front end under `mpirun` (SPMD, as sharpy runs the array API): every rank runs the same
//! Rust program; an array on a team holds only this rank's block of its first axis, and a
//! program over team arrays runs as a distributed job ([`strata_dist::job`]) — halos, gathers
//! and collectives planned from the types, as `strata run --ranks N` does.
//!
//! [`init`] joins the job (call it once, first, on every rank; without it, or outside `mpirun`,
//! team arrays are evaluated whole in one process). Host arrays are replicated: every rank
//! computes the same value. Reads ([`Array::to_vec`], [`Array::to_ndarray`]) of a team array
//! gather the whole array on every rank; [`Array::to_npy`] writes each rank's block into one
//! file; [`Array::from_npy_on`] reads only the rank's rows; [`Array::local_vec`] and
//! [`Array::local_rows`] give the block itself.
//!
//! ```no_run
//! use strata_array::*;
//! let job = spmd::init()?; // under `mpirun -n 3`
//! let x = Array::from_npy_on("x.npy".as_ref(), &Place::world())?; // each rank reads its rows
//! let y = add(&multiply(&x, &x)?, &Array::scalar(1.0))?; // runs on each rank's block
//! y.to_npy("y.npy".as_ref())?; // each rank writes its block into one file
//! println!("rank {} of {}: sum {:?}", job.rank(), job.size(), sum(&y, None, None, false)?.to_vec::<f64>()?);
//! # Ok::<(), ArrayError>(())
//! ```

use std::cell::RefCell;
use std::rc::Rc;

use strata_dist::job::{self, Failed, RankError};
use strata_dist::{Comm, Distribution};
use strata_entity::Handle;
use strata_ir::{Function, Interval, Module, TypeArena};
use strata_runtime::{Tensor, Value, ValueType};

use crate::array::{value_type, Array, Place};
use crate::engine::{self, Backend};
use crate::error::{ArrayError, Result};
use std::sync::Arc;
use strata_engine::{Options, Prepared};

thread_local! {
    static COMM: RefCell<Option<Rc<Comm>>> = const { RefCell::new(None) };
    static TOTALS: std::cell::Cell<Totals> = const { std::cell::Cell::new(Totals::ZERO) };
}

/// Where this rank's distributed runs spent their time, summed since the process started (a
/// loop's share is the difference of two readings).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    /// Distributed runs.
    pub runs: u64,
    /// Seconds in halo exchanges (and fetches of rows other ranks own).
    pub exchange_s: f64,
    /// Bytes this rank received in them.
    pub halo_bytes: u64,
    /// Seconds of computation that ran while those exchanges were under way (each step's
    /// interior, computed before waiting for the halo).
    pub overlap_s: f64,
    /// Seconds completing those exchanges after that computation (part of `exchange_s`).
    pub wait_s: f64,
    /// Seconds making each run's held blocks from the arrays' blocks.
    pub read_s: f64,
    /// Seconds combining collectives' partials (reductions, gathers).
    pub combine_s: f64,
    /// Bytes of other ranks' blocks gathered to this rank: by programs that read a team array
    /// whole, and by `np.asarray` of team arrays.
    pub gathered_bytes: u64,
}

impl Totals {
    const ZERO: Totals = Totals {
        runs: 0,
        exchange_s: 0.0,
        halo_bytes: 0,
        overlap_s: 0.0,
        wait_s: 0.0,
        read_s: 0.0,
        combine_s: 0.0,
        gathered_bytes: 0,
    };
}

/// This rank's [`Totals`] so far.
pub fn totals() -> Totals {
    TOTALS.with(|t| t.get())
}

/// This process's membership of an MPI job. Dropping it ends MPI on this rank (after the last
/// evaluation of a team array).
pub struct Job {
    comm: Rc<Comm>,
}

impl Job {
    /// This rank (0-based).
    pub fn rank(&self) -> usize {
        self.comm.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.comm.size
    }

    /// Ends every rank of the job with exit status `code` (a rank that failed alone: the
    /// others would wait for it in their next collective).
    pub fn abort(&self, code: i32) {
        self.comm.abort(code);
    }

    /// Waits for every rank.
    ///
    /// # Errors
    /// An MPI failure.
    pub fn barrier(&self) -> Result<()> {
        self.comm.barrier().map_err(|e| ArrayError::Run(e.to_string()))
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        COMM.with(|c| c.borrow_mut().take());
        let _ = self.comm.finalize();
    }
}

/// Joins the MPI job this process was started in (`mpirun -n N prog`; a single process counts
/// as a job of one rank): team arrays are distributed over its ranks from now on.
///
/// # Errors
/// `mpicc` is missing or the MPI layer does not build or load (`scripts/mpi-env` installs
/// Open MPI), MPI fails to start, or the job was already joined.
pub fn init() -> Result<Job> {
    if COMM.with(|c| c.borrow().is_some()) {
        return Err(ArrayError::Run("spmd::init: this process already joined the job".into()));
    }
    let comm = Rc::new(Comm::init().map_err(|e| ArrayError::Run(format!("spmd::init: {e}")))?);
    COMM.with(|c| *c.borrow_mut() = Some(comm.clone()));
    Ok(Job { comm })
}

/// Whether this process was started by an MPI launcher (`mpirun`, `mpiexec`, `srun`): where
/// [`init`] joins a job of several ranks.
pub fn launched() -> bool {
    strata_dist::launched_by_mpi()
}

/// This rank and the job's size, once joined.
pub fn joined() -> Option<(usize, usize)> {
    comm().map(|c| (c.rank, c.size))
}

/// The rows of the first axis this rank holds of an array of `shape` at `place`: its block when
/// `place` is a team of a joined job, `None` otherwise (the array is whole on every rank).
pub fn block_rows(place: &Place, shape: &[usize]) -> Option<std::ops::Range<usize>> {
    block(place, shape).map(|iv| iv.start as usize..iv.stop as usize)
}

/// The job, once joined.
pub(crate) fn comm() -> Option<Rc<Comm>> {
    COMM.with(|c| c.borrow().clone())
}

/// The rows of an array's first axis this rank holds, when it is a team array of a job.
pub(crate) fn owned(x: &Array) -> Option<Interval> {
    if !x.on_team() {
        return None;
    }
    block(x.place(), x.shape())
}

/// The rows of the first axis this rank holds of an array of `shape` at `place`, when the
/// place is a team of a joined job (and the array is not 0-d).
pub(crate) fn block(place: &Place, shape: &[usize]) -> Option<Interval> {
    let comm = comm()?;
    let rows = *shape.first()?;
    place.team?;
    Some(strata_runtime::dist::block_partition(Interval::new(0, rows as i64), comm.size as u32)[comm.rank])
}

/// Checks a team size given at a call (`op`): under a joined job it must be the job's size or
/// [`crate::WORLD`] (`hint` names the call's way to say the latter).
pub(crate) fn check_team(op: &'static str, ranks: u32, hint: &str) -> Result<()> {
    match comm() {
        Some(c) if ranks != crate::WORLD && ranks as usize != c.size => Err(crate::error::invalid(
            op,
            format!("a team of {ranks} ranks, but the job has {} (use {hint} to run at any rank count)", c.size),
        )),
        _ => Ok(()),
    }
}

/// Whether a traced program runs as a distributed job: a job was joined and it has team values.
pub(crate) fn distributed(on_team: bool) -> bool {
    comm().is_some() && on_team
}

/// Runs a compiled program over team arrays as a distributed job on this rank: `inputs` are
/// this rank's values of the parameters (a team array's block, a host array whole). Returns
/// this rank's block of a team result, the whole of a host one.
///
/// Every rank must run the same program (`fingerprint`, a digest of its structure): they are
/// compared first, so ranks that diverged (a team operation inside `if rank == 0:`, a shape
/// computed from the rank) get an error instead of waiting in mismatched collectives.
pub(crate) fn run(dist: &Distribution, inputs: &[Rc<Tensor>], backend: Backend, fingerprint: u64) -> Result<Tensor> {
    let outputs = run_job(dist, Given::Blocks(inputs), backend, fingerprint)?;
    let out = outputs.into_iter().next().ok_or_else(|| ArrayError::Run("the program has no result".into()))?;
    match out.block {
        Some((level, owned, _)) => owned_block(out.value, level, owned),
        None => out.value.into_tensor().map_err(|e| ArrayError::Run(e.to_string())),
    }
}

/// This rank's rows `owned` of a distributed result's held value: the value itself when it
/// holds exactly them (kept, not copied).
fn owned_block(value: Value, level: usize, owned: Interval) -> Result<Tensor> {
    match value {
        Value::Tensor(t) if t.ty.levels[level].interval == owned => Ok(t),
        v => job::dense(&v).and_then(|t| job::owned_rows(&t, level, owned)).map_err(|e| ArrayError::Run(e.to_string())),
    }
}

/// A result of [`PlannedEntry::run`] on this rank.
#[derive(Debug)]
pub enum EntryResult {
    /// A result distributed along its first level: a team array holding this rank's block.
    Team(Array),
    /// A replicated result (or one distributed along a later level, gathered): the whole value.
    Whole(Value),
}

/// An entry of a verified module planned for the joined job's ranks (as `strata run --ranks N`
/// plans it), to run on values this process holds, as many times as a loop calls it.
pub struct PlannedEntry {
    dist: Distribution,
    /// The entry's parameters' names, in order (a stage asks for its inputs by name).
    params: Vec<String>,
    /// A digest of the entry's structure: ranks running different entries get an error, not a
    /// hang.
    fingerprint: u64,
}

impl PlannedEntry {
    /// Plans `entry` of `module` (verified; `types` its arena) over the joined job's ranks.
    ///
    /// # Errors
    /// No job was joined, or the entry cannot run distributed (the planner's reason).
    pub fn new(module: &Module, types: &TypeArena, entry: Handle<Function>) -> Result<PlannedEntry> {
        let dist = Distribution::new(module, types, entry, joined_comm()?.size)
            .map_err(|e| ArrayError::Run(format!("`@{}` cannot run distributed: {e}", module.functions[entry].name)))?;
        let fingerprint = strata_engine::structure_key(module, types, entry).fingerprint();
        let f = &module.functions[entry];
        let params = f.params.iter().map(|&p| f.exprs[p].name.clone()).collect();
        Ok(PlannedEntry { dist, params, fingerprint })
    }

    /// Runs the entry on this rank: `args` are the parameters' values in order (see
    /// [`entry_argument`]; `None` for an `out` parameter that starts as zeros). Results by name.
    ///
    /// # Errors
    /// A rank failed (every rank gets the error).
    pub fn run(&self, args: &[Option<EntryArg>], backend: Backend) -> Result<Vec<(String, EntryResult)>> {
        let comm = joined_comm()?;
        let outputs =
            run_job(&self.dist, Given::Named { names: &self.params, values: args }, backend, self.fingerprint)?;
        let mut results = Vec::with_capacity(outputs.len());
        for out in outputs {
            let r = match out.block {
                Some((0, owned, global)) => {
                    let block = owned_block(out.value, 0, owned)?;
                    EntryResult::Team(Array::from_entry_block(block, &global)?)
                }
                Some((level, owned, global)) => {
                    let t = job::dense(&out.value).map_err(|e| ArrayError::Run(e.to_string()))?;
                    let whole = job::allgather(&comm, &t, level, owned, &global);
                    EntryResult::Whole(Value::Tensor(job::agree(&comm, whole).map_err(|f| failure(&comm, f))?))
                }
                None => EntryResult::Whole(out.value),
            };
            results.push((out.name, r));
        }
        Ok(results)
    }
}

/// The job, or an error saying none was joined.
fn joined_comm() -> Result<Rc<Comm>> {
    comm().ok_or_else(|| ArrayError::Run("no MPI job was joined (spmd::init)".into()))
}

/// The value of an entry parameter of type `ty` (its global type) from an array: a team
/// array's block (its rows at the parameter's coordinates) or a host array whole. The array's
/// shape must be the parameter's extents and its dtype the parameter's element.
///
/// # Errors
/// A shape or dtype that differs (`what` names the parameter), or an evaluation that fails.
pub fn entry_argument(x: &Array, what: &str, ty: &ValueType) -> Result<EntryArg> {
    let shape: Vec<usize> = ty.levels.iter().map(|l| l.interval.len() as usize).collect();
    let element = strata_runtime::ElemType::Scalar(x.dtype());
    if x.shape() != shape.as_slice() || ty.element != element || !ty.is_tensor {
        return Err(ArrayError::Data(format!(
            "argument `{what}`: an array of shape {:?} and dtype {}, but the parameter is {}",
            x.shape(),
            x.dtype(),
            describe(ty)
        )));
    }
    if x.on_team() && ty.levels.first().map(|l| l.format) != Some(strata_ir::LevelFormat::Block) {
        return Err(ArrayError::Data(format!(
            "argument `{what}`: a team array, but the parameter ({}) is not distributed along its first level \
             (declare that level `block` on a team, or pass the array gathered: np.asarray({what}))",
            describe(ty)
        )));
    }
    let block = x.eval()?;
    let mut levels = ty.levels.clone();
    for (l, have) in levels.iter_mut().zip(&block.ty.levels) {
        // The held rows, moved from the array's 0-based positions to the parameter's interval.
        l.interval = Interval::new(have.interval.start + l.interval.start, have.interval.stop + l.interval.start);
    }
    Ok(EntryArg::Array { block, ty: ValueType { levels, ..ty.clone() } })
}

/// An argument of [`PlannedEntry::run`].
#[derive(Debug)]
pub enum EntryArg {
    /// An array's value ([`entry_argument`]): a team array's block, or a host array whole, read
    /// as `ty` (the rows it holds at the parameter's coordinates) without a copy.
    Array {
        /// The array's value.
        block: Rc<Tensor>,
        /// Its type at the parameter's coordinates.
        ty: ValueType,
    },
    /// A value every rank holds whole (from Python: a numpy array, a number).
    Value(Value),
}

/// A parameter's type as its diagnostics show it: `I[-1:65] block, J[0:64] of f64`.
fn describe(ty: &ValueType) -> String {
    let levels: Vec<String> = ty
        .levels
        .iter()
        .map(|l| {
            let block = if l.format == strata_ir::LevelFormat::Block { " block" } else { "" };
            format!("{}{}{block}", l.name, l.interval)
        })
        .collect();
    match &ty.element {
        strata_runtime::ElemType::Scalar(s) if ty.is_tensor => format!("{} of {s}", levels.join(", ")),
        strata_runtime::ElemType::Scalar(s) => format!("a scalar {s}"),
        _ => "a tensor of tuples or tensors".to_string(),
    }
}

/// Runs `dist` on this rank with the parameters' values `given`, after checking that every rank
/// runs the same program (`fingerprint`).
fn run_job(dist: &Distribution, given: Given<'_>, backend: Backend, fingerprint: u64) -> Result<Vec<job::Output>> {
    let comm = comm().expect("a joined job");
    let same = comm.same_on_every_rank(fingerprint).map_err(RankError::from).and_then(|same| match same {
        true => Ok(()),
        false => Err(RankError::Diverged(
            "this rank's program over team arrays differs from another rank's: every rank must apply the same \
             operations to team arrays in the same order, with the same shapes and dtypes (a team operation under \
             `if strata.world.rank == …`, or a shape that depends on the rank, makes them differ)",
        )),
    });
    job::agree(&comm, same).map_err(|f| failure(&comm, f))?;
    // The same program on values every rank must hold alike: a Python number or a host array
    // that differs between ranks would make each rank compute a different program's part.
    let same =
        comm.same_on_every_rank(replicated_digest(&given)).map_err(RankError::from).and_then(|same| match same {
            true => Ok(()),
            false => Err(RankError::Diverged(
                "a value every rank holds whole (a Python number, an array not on the team) differs between ranks: \
                 the ranks would each compute part of a different program (make it the same on every rank, or a \
                 team array)",
            )),
        });
    job::agree(&comm, same).map_err(|f| failure(&comm, f))?;
    let mut rank_io = FrontEndRank { given, backend };
    let mut clock = job::Clock::default();
    let outputs = job::run(&comm, dist, &mut rank_io, 0, &mut clock).map_err(|f| failure(&comm, f))?;
    TOTALS.with(|t| {
        let mut v = t.get();
        v.runs += 1;
        v.exchange_s += clock.exchange_s.iter().sum::<f64>();
        v.halo_bytes += clock.halo_bytes as u64;
        v.overlap_s += clock.overlap_s;
        v.wait_s += clock.wait_s;
        v.read_s += clock.read_s;
        v.combine_s += clock.combine_s;
        v.gathered_bytes += clock.gathered_bytes as u64;
        t.set(v);
    });
    Ok(outputs)
}

/// The whole of a team array on every rank (a collective call).
pub(crate) fn gather_whole(x: &Array, block: &Rc<Tensor>) -> Result<Tensor> {
    let comm = comm().expect("a joined job");
    let owned = owned(x).expect("a team array");
    let global = value_type(x.shape(), x.dtype(), x.place());
    let whole = job::agree(&comm, job::allgather(&comm, block, 0, owned, &global)).map_err(|f| failure(&comm, f))?;
    TOTALS.with(|t| {
        let mut v = t.get();
        v.gathered_bytes += job::gathered_bytes(&whole, block) as u64;
        t.set(v);
    });
    Ok(whole)
}

/// Writes an array into one `.npy` file: a team array's blocks by their ranks, a replicated
/// one by rank 0 (a collective call).
pub(crate) fn write_npy(x: &Array, value: &Rc<Tensor>, path: &std::path::Path) -> Result<()> {
    let comm = comm().expect("a joined job");
    let block = owned(x).map(|iv| (0, iv, value_type(x.shape(), x.dtype(), x.place())));
    let v = Value::Tensor((**value).clone());
    job::write_output(&comm, "array", path, &v, block.as_ref()).map_err(|f| failure(&comm, f))
}

/// Reads this rank's rows of a `.npy` file holding an array of `ty` (the whole array's type).
pub(crate) fn read_rows(path: &std::path::Path, x_ty: &ValueType, rows: Interval) -> Result<Tensor> {
    let comm = comm().expect("a joined job");
    let mut held = strata_dist::slab::with_rows(x_ty, 0, rows);
    let read = strata_dist::slab::read_rows(path, "array", x_ty, 0, rows, &mut held).map_err(RankError::Data);
    job::agree(&comm, read).map_err(|f| ArrayError::Job(job::shared_failure(&comm, &f)))?;
    Ok(held)
}

/// A failed collective step as an error on every rank, naming the lowest failed rank and its
/// message (shared by all ranks, so whichever rank reports first tells the reason).
fn failure(comm: &Comm, f: Failed) -> ArrayError {
    ArrayError::Job(job::shared_failure(comm, &f))
}

thread_local! {
    /// The digests of replicated arrays' values ([`replicated_digest`]) by their [`stamp`]: an
    /// array's value never changes while it exists, so a loop hashes each one once.
    static DIGESTS: RefCell<rustc_hash::FxHashMap<u64, u64>> = RefCell::new(Default::default());
}

/// A digest (XXH3) of the values of `given` that are not distributed over the team — its
/// replicated inputs, which every rank must hold alike.
fn replicated_digest(given: &Given<'_>) -> u64 {
    fn team(ty: &ValueType) -> bool {
        ty.levels.iter().any(|l| l.format == strata_ir::LevelFormat::Block)
    }
    fn tensor(h: &mut xxhash_rust::xxh3::Xxh3Default, t: &Tensor) {
        fn data(h: &mut xxhash_rust::xxh3::Xxh3Default, d: &strata_runtime::Data) {
            match d {
                strata_runtime::Data::Scalars(c) => h.update(strata_dist::slab::column_bytes(c)),
                strata_runtime::Data::Tuple(fields) => fields.iter().for_each(|f| data(h, f)),
                strata_runtime::Data::Tensors(ts) => ts.iter().for_each(|t| tensor(h, t)),
            }
        }
        h.update(format!("{:?}", t.ty).as_bytes());
        data(h, &t.data);
        if let Some(p) = &t.present {
            h.update(&p.iter().map(|&b| b as u8).collect::<Vec<u8>>());
        }
    }
    let of = |t: &Rc<Tensor>| -> u64 {
        let k = stamp(t);
        if let Some(d) = DIGESTS.with(|m| m.borrow().get(&k).copied()) {
            return d;
        }
        let mut h = xxhash_rust::xxh3::Xxh3Default::new();
        tensor(&mut h, t);
        let d = h.digest();
        DIGESTS.with(|m| m.borrow_mut().insert(k, d));
        d
    };
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    match given {
        Given::Blocks(inputs) => {
            for t in inputs.iter().filter(|t| !team(&t.ty)) {
                h.update(&of(t).to_le_bytes());
            }
        }
        Given::Named { values, .. } => {
            for v in values.iter().flatten() {
                match v {
                    EntryArg::Array { block, ty } if !team(ty) => h.update(&of(block).to_le_bytes()),
                    EntryArg::Array { .. } => {}
                    EntryArg::Value(Value::Tensor(t)) => tensor(&mut h, t),
                    EntryArg::Value(v) => h.update(format!("{:?}", v.ty()).as_bytes()),
                }
            }
        }
    }
    h.digest()
}

/// The values a rank's run starts from: the blocks of a traced program's arrays (by position),
/// or an entry's arguments (by name: a stage takes some of the entry's parameters).
#[derive(Clone, Copy)]
enum Given<'a> {
    Blocks(&'a [Rc<Tensor>]),
    Named { names: &'a [String], values: &'a [Option<EntryArg>] },
}

thread_local! {
    /// The stamps given to arrays' values ([`stamp`]), by address, each with a weak reference
    /// that keeps the address from being reused while the entry exists.
    static STAMPS: RefCell<rustc_hash::FxHashMap<usize, (u64, std::rc::Weak<Tensor>)>> =
        RefCell::new(Default::default());
    static NEXT_STAMP: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

/// A number naming `value` among every array value this thread has lent to a distributed run
/// ([`job::Arg::stamped`]): an array's value never changes while it exists (operations make
/// new ones), so an unchanged stamp is unchanged values — the inspector then does not hash
/// the neighbor tables of a time loop every step.
fn stamp(value: &Rc<Tensor>) -> u64 {
    STAMPS.with(|s| {
        let mut s = s.borrow_mut();
        let at = Rc::as_ptr(value) as usize;
        if let Some((k, weak)) = s.get(&at) {
            if weak.upgrade().is_some_and(|v| Rc::ptr_eq(&v, value)) {
                return *k;
            }
        }
        // Entries of values freed since are dropped now and then (their weak references hold
        // only the small allocation of the reference counts).
        if s.len() >= 1024 {
            s.retain(|_, (_, w)| w.strong_count() > 0);
        }
        let k = NEXT_STAMP.with(|n| n.replace(n.get() + 1));
        s.insert(at, (k, Rc::downgrade(value)));
        k
    })
}

/// The front end's side of a rank's run: its arrays' values, and local programs run natively
/// where they compile (else in the interpreter), as the thread's [`Backend`] says.
struct FrontEndRank<'a> {
    given: Given<'a>,
    backend: Backend,
}

impl<'a> job::Rank<'a> for FrontEndRank<'a> {
    fn input(&mut self, input: job::Input<'_>) -> job::Step<job::Arg<'a>> {
        let missing = || RankError::input(input.name, "no value given");
        match self.given {
            Given::Blocks(blocks) => {
                let block = blocks.get(input.index).ok_or_else(missing)?;
                input.held_from_owned(block).map(|a| a.stamped(stamp(block)))
            }
            Given::Named { names, values } => {
                let k = names.iter().position(|n| n == input.name).ok_or_else(missing)?;
                match values.get(k).ok_or_else(missing)? {
                    Some(EntryArg::Array { block, ty }) => input.held_from(ty, block).map(|a| a.stamped(stamp(block))),
                    Some(EntryArg::Value(Value::Tensor(t))) => input.held_from_owned(t),
                    Some(EntryArg::Value(v)) if input.block.is_none() => Ok(job::Arg::Value(v.clone())),
                    Some(EntryArg::Value(_)) => {
                        Err(RankError::input(input.name, "a distributed parameter takes a dense value"))
                    }
                    None if input.output => Ok(job::Arg::zeros(input.held)),
                    None => Err(missing()),
                }
            }
        }
    }

    fn execute(&mut self, local: job::Local<'_>, args: &[job::Arg<'_>]) -> job::Step<Vec<(String, Value)>> {
        let ran = self.prepared(local)?.run(args).map_err(run_failed)?;
        Ok(ran.values)
    }

    fn prepare(&mut self, local: job::Local<'_>) -> job::Step<()> {
        self.prepared(local).map(drop)
    }

    fn execute_overlapped(
        &mut self,
        local: job::Local<'_>,
        args: &[job::Arg<'_>],
        late: &[usize],
        arrive: &mut dyn FnMut() -> job::Step<()>,
    ) -> job::Step<Vec<(String, Value)>> {
        let mut arrive = || arrive().map_err(RankError::boxed);
        let ran = self.prepared(local)?.run_overlapped(args, late, &mut arrive).map_err(run_failed)?;
        Ok(ran.values)
    }
}

/// A local program's failure on this rank: the arrival of its halo as the job's own error
/// ([`RankError::unbox`]), anything else as the array front end reports a failed run.
fn run_failed(e: strata_engine::ExecuteError) -> RankError {
    match e {
        strata_engine::ExecuteError::Arrival(e) => RankError::unbox(e),
        e => RankError::Run(match engine::run_error(e) {
            ArrayError::Run(message) => message,
            other => other.to_string(),
        }),
    }
}

impl FrontEndRank<'_> {
    /// The local program prepared (once per stage: a time loop's later steps skip the
    /// engine's lookup, which hashes the whole local program).
    fn prepared(&self, local: job::Local<'_>) -> job::Step<Arc<Prepared>> {
        let threads = Some(strata_dist::comm::threads_per_rank());
        // Extents per site: every rank prints one kernel whatever its block's size and place.
        // Polling: the kernels let MPI move the halo while the interior runs.
        let mut options = Options { backend: self.backend, threads, ..Options::default() };
        options.lower.polls = true;
        options.lower.extents_per_site = true;
        let kept = local.memo.get_or_try(
            |(o, _): &(Options, Arc<Prepared>)| *o == options,
            || {
                strata_engine::prepare(local.module, local.types(), local.entry, &options)
                    .map(|p| (options.clone(), p))
                    .map_err(run_failed)
            },
        )?;
        Ok(kept.1.clone())
    }
}
