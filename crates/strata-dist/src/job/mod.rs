//! One rank's part of a distributed run: every stage of a [`Distribution`] run in turn — its
//! local program, this rank's block of every input, the halo exchange (or, for neighbor shifts
//! of distributed sources, the inspector and fetch), the run, the combination of the stage's
//! collective — and the results as this rank's blocks ([`Output`]).
//!
//! Where inputs come from and how a local program runs are the caller's ([`Rank`]): the
//! `strata` command reads files and runs native code with an interpreter fallback; the array
//! front end passes the blocks it holds. Failures are agreed on ([`agree`]): after each phase
//! where ranks can fail on their own, every rank learns whether any failed, so no rank waits
//! for one that has given up.

use strata_entity::Handle;
use strata_ir::{ExprKind, Function, Interval, LevelFormat, Module, ParamMode, TypeArena};
use strata_runtime::{Tensor, Value, ValueType};

use crate::exchange::FetchPlan;
use crate::{slab, BlockParam, Collective, Comm, Distribution, PartialStart, Plan, PlannedStage};

mod arg;
mod error;
mod inspect;
mod memo;

pub use arg::Arg;
pub use error::{Cause, JobError, RankError, Step};
pub use inspect::InspectorCache;
pub use memo::Memo;
mod output;
mod spare;
mod stored;

pub use output::{allgather, dense, gather, gathered_bytes, owned_rows, temporary_of, write_output};
pub use stored::{gather_stored, gather_value, is_stored};

/// A phase that failed somewhere, once the ranks agreed on it.
#[derive(Clone, Debug)]
pub enum Failed {
    /// This rank failed, for this reason.
    Here(RankError),
    /// Another rank failed (it reports its own reason).
    Elsewhere,
}

/// Agrees across ranks on whether a phase succeeded: `Ok` on every rank only if it succeeded
/// on every rank (a collective call).
///
/// # Errors
/// This rank's failure ([`Failed::Here`]) or another's ([`Failed::Elsewhere`]); an MPI failure
/// while agreeing counts as this rank's.
pub fn agree<T>(comm: &Comm, step: Step<T>) -> Result<T, Failed> {
    let any = comm.max_i64(i64::from(step.is_err())).map_err(|e| Failed::Here(e.into()))?;
    match step {
        Ok(v) if any == 0 => Ok(v),
        Ok(_) => Err(Failed::Elsewhere),
        Err(e) => Err(Failed::Here(e)),
    }
}

/// The failure of the lowest failed rank — its rank, cause and message — on every rank (a
/// collective call, made by every rank with the [`Failed`] the same [`agree`] gave it). A
/// library caller reports it on every rank, so the reason is printed even when the launcher
/// kills the failed rank early.
pub fn shared_failure(comm: &Comm, f: &Failed) -> JobError {
    let (size, rank) = (comm.size as i64, comm.rank as i64);
    let mine = match f {
        Failed::Here(e) => Some((e.cause(), e.to_string())),
        Failed::Elsewhere => None,
    };
    let unknown = || JobError { rank: None, cause: Cause::Unknown, message: "another rank failed".into() };
    let Ok(first) = comm.max_i64(if mine.is_some() { size - rank } else { 0 }) else {
        return match mine {
            Some((cause, message)) => JobError { rank: Some(comm.rank), cause, message },
            None => unknown(),
        };
    };
    let from = (size - first).clamp(0, size - 1) as usize;
    // The cause's byte, then the message.
    let text = mine.map(|(c, m)| [&[c.byte()], m.as_bytes()].concat()).unwrap_or_default();
    let mut len = (text.len() as u64).to_ne_bytes();
    if comm.bcast(&mut len, from).is_err() {
        return unknown();
    }
    let mut text = if comm.rank == from { text } else { vec![0; u64::from_ne_bytes(len) as usize] };
    if comm.bcast(&mut text, from).is_err() {
        return JobError { rank: Some(from), cause: Cause::Unknown, message: "failed".into() };
    }
    let cause = text.first().map_or(Cause::Unknown, |&b| Cause::from_byte(b));
    let message = String::from_utf8_lossy(text.get(1..).unwrap_or_default()).into_owned();
    JobError { rank: Some(from), cause, message }
}

/// What the caller supplies to a rank's run: inputs (values it holds for `'a`, lent to the run
/// where they have the local parameter's layout) and the execution of local programs.
pub trait Rank<'a> {
    /// This rank's value of an entry parameter ([`Input`]) that no earlier stage computed.
    fn input(&mut self, input: Input<'_>) -> Step<Arg<'a>>;

    /// Runs a local program on its arguments and returns its results by name; `memo` stays
    /// with the program for its next runs (the caller may keep its prepared code there).
    fn execute(&mut self, program: Local<'_>, args: &[Arg<'_>]) -> Step<Vec<(String, Value)>>;

    /// Readies a local program to run (compiles it), before the exchanges it overlaps with
    /// start; the default does nothing ([`Rank::execute`] readies it then).
    fn prepare(&mut self, program: Local<'_>) -> Step<()> {
        let _ = program;
        Ok(())
    }

    /// [`Rank::execute`] with the local parameters `late` not holding their values yet (halo
    /// strips being received): what needs none of them may run first; `arrive` fills them and
    /// must be called once before anything reads them (a run that fails before that may skip
    /// it: the exchanges then complete when the stage ends). The default calls it first.
    fn execute_overlapped(
        &mut self,
        program: Local<'_>,
        args: &[Arg<'_>],
        late: &[usize],
        arrive: &mut dyn FnMut() -> Step<()>,
    ) -> Step<Vec<(String, Value)>> {
        let _ = late;
        arrive()?;
        self.execute(program, args)
    }
}

/// A rank's local program, as [`Rank::execute`] runs it.
#[derive(Clone, Copy)]
pub struct Local<'a> {
    /// The module.
    pub module: &'a Module,
    /// Its entry.
    pub entry: Handle<Function>,
    /// What the caller keeps with it between runs.
    pub memo: &'a Memo,
}

impl Local<'_> {
    /// The module's types.
    pub fn types(&self) -> &TypeArena {
        &self.module.types
    }
}

/// One parameter of a stage, as [`Rank::input`] is asked for it.
pub struct Input<'a> {
    /// Its position in the entry.
    pub index: usize,
    /// Its name.
    pub name: &'a str,
    /// Its type in the program.
    pub global: &'a ValueType,
    /// The type this rank holds (the block level at its held rows).
    pub held: &'a ValueType,
    /// Its block level's partition, if it is distributed.
    pub block: Option<&'a BlockParam>,
    /// An `out` parameter (written by the program, not read).
    pub output: bool,
    /// This rank.
    pub rank: usize,
}

impl Input<'_> {
    /// This rank's argument from `mine` (which holds at least its owned rows): `mine` itself,
    /// lent, where it has the local parameter's layout (a block held without halo, or as
    /// [`crate::Strips`]); else a held buffer with the owned rows copied in (the halo rows are
    /// zeros until the exchange fills them).
    pub fn held_from_owned<'m>(&self, mine: &'m Tensor) -> Step<Arg<'m>> {
        self.held_from(&mine.ty, mine)
    }

    /// [`Input::held_from_owned`] from `mine` read as a value of type `ty` (its layout at the
    /// parameter's coordinates: a front end's array, not copied to be retyped).
    pub fn held_from<'m>(&self, ty: &ValueType, mine: &'m Tensor) -> Step<Arg<'m>> {
        if let Some(b) = self.block {
            let have = ty.levels.get(b.level).map(|l| l.interval);
            if have.is_none_or(|h| !h.contains(b.owned[self.rank])) {
                let reason = format!("this rank's value does not hold its block {}", b.owned[self.rank]);
                return Err(RankError::input(self.name, reason));
            }
        }
        if self.same_rows(ty) && mine.present.is_none() {
            if let Some(lent) = Arg::lend(self.held, &mine.data) {
                return Ok(lent);
            }
        }
        Ok(Arg::Value(Value::Tensor(self.copied(ty, mine))))
    }

    /// [`Input::held_from_owned`] of a value this rank made for the run: kept (retyped) where
    /// it has the local parameter's layout, else copied into a held buffer.
    pub fn held_from_made(&self, mine: Tensor) -> Step<Value> {
        if self.same_rows(&mine.ty) && mine.ty.element == self.held.element && mine.present.is_none() {
            return Ok(Value::Tensor(Tensor { ty: self.held.clone(), ..mine }));
        }
        self.held_from_owned(&mine).map(Arg::into_value)
    }

    /// Whether a value of type `ty` holds exactly the held rows (of the block level, if any),
    /// laid out as the held type.
    fn same_rows(&self, ty: &ValueType) -> bool {
        let rows = |t: &ValueType| self.block.map(|b| t.levels.get(b.level).map(|l| l.interval));
        same_layout(ty, self.held) && rows(ty) == rows(self.held)
    }

    /// `mine` (read as `ty`) copied into a buffer of the held type: its owned rows, or all of
    /// it for a replicated value.
    fn copied(&self, ty: &ValueType, mine: &Tensor) -> Tensor {
        let Some(b) = self.block else {
            return Tensor { ty: ty.clone(), data: mine.data.clone(), present: mine.present.clone() };
        };
        let rows = b.owned[self.rank];
        // A buffer an earlier run held (every row is overwritten: the owned ones here, the
        // others by the halo exchange that follows).
        if let Some(mut held) = spare::take(self.held).filter(|_| mine.present.is_none()) {
            slab::copy_rows_as(ty, &mine.data, &mut held, b.level, rows);
            return held;
        }
        let mut held = Tensor::zeros(self.held);
        slab::copy_rows_as(ty, &mine.data, &mut held, b.level, rows);
        held
    }
}

/// Whether values of type `a` are laid out as values of type `b`: dense (or block) levels of the
/// same extents, level by level (the intervals may differ: the same rows at other coordinates).
fn same_layout(a: &ValueType, b: &ValueType) -> bool {
    a.levels.len() == b.levels.len()
        && a.levels
            .iter()
            .zip(&b.levels)
            .all(|(x, y)| x.interval.len() == y.interval.len() && x.format.is_dense_like() && y.format.is_dense_like())
        && a.is_tensor == b.is_tensor
}

/// Where a rank's time goes, summed over the stages.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Reading (or making) the inputs.
    pub read_s: f64,
    /// Each halo exchange (every repetition of every stage's).
    pub exchange_s: Vec<f64>,
    /// Halo bytes this rank received (once per stage).
    pub halo_bytes: usize,
    /// Seconds of computation that ran while halo exchanges were under way (the interior of
    /// each overlapped stage, from the exchange's start to the wait for it).
    pub overlap_s: f64,
    /// Seconds completing those exchanges after that computation: waiting for the messages
    /// still under way and placing the rows received (part of `exchange_s`; with MPI moving
    /// the bytes during the computation, little more than the placing).
    pub wait_s: f64,
    /// Combining the collectives' partials and gathering collected values.
    pub combine_s: f64,
    /// Bytes of other ranks' blocks that gathers brought to this rank (a `collect` read inside
    /// the program: every rank then holds the whole value).
    pub gathered_bytes: usize,
}

/// A result of the entry on this rank.
#[derive(Clone, Debug)]
pub struct Output {
    /// Its name (an `out` parameter's, or `result`).
    pub name: String,
    /// This rank's value: its held block of a distributed result, else the whole value.
    pub value: Value,
    /// A distributed result's block level, this rank's block, and the result's global type.
    pub block: Option<(usize, Interval, ValueType)>,
}

/// Runs every stage of `dist` on this rank; `repeat` more halo exchanges are timed per stage.
///
/// # Errors
/// A phase that failed on any rank (every rank returns an error).
pub fn run<'a>(
    comm: &Comm,
    dist: &Distribution,
    rank_io: &mut dyn Rank<'a>,
    repeat: usize,
    clock: &mut Clock,
) -> Result<Vec<Output>, Failed> {
    let (rank, size) = (comm.rank, comm.size);
    // The setting is read once per process, so the ranks compare it at their first run with a
    // reduction only (every rank runs the same programs in the same order).
    static ORDER_AGREED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let reduces = dist.0.iter().any(|ps| matches!(ps.stage.collective, Some(Collective::Reduce { .. })));
    if reduces && !ORDER_AGREED.load(std::sync::atomic::Ordering::Relaxed) {
        agree(comm, same_reduction_order(comm))?;
        ORDER_AGREED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    // The values of the stages' collectives, by name: parameters of the later stages.
    let mut carried: Vec<(String, Value)> = Vec::new();
    let mut last = None;
    for ps in &dist.0 {
        let values = run_stage(comm, ps, &carried, rank_io, repeat, clock)?;
        let Some(c) = &ps.stage.collective else {
            last = Some(values);
            continue;
        };
        let v = match values.into_iter().next() {
            Some((_, Value::Tensor(t))) => t,
            _ => return Err(Failed::Here(RankError::internal("a stage returns no tensor"))),
        };
        let t = comm.wtime();
        let v = match c {
            Collective::Reduce { combine, .. } => match &ps.plan.partial {
                Some(crate::Partial { start: PartialStart::Rows { init, .. }, owned, .. }) => {
                    let blocks = owned.first().map(|(_, _, b)| b.as_slice()).unwrap_or_default();
                    agree(comm, crate::combine::rows_tree(comm, &v, blocks, *combine, init))?
                }
                _ => {
                    let mut v = v;
                    agree(comm, crate::combine::combine(comm, &mut v, *combine))?;
                    v
                }
            },
            Collective::Carry { .. } => v,
            Collective::Gather { ty, .. } => {
                let (level, owned, global) = result_block(ps, rank, size)
                    .ok_or_else(|| Failed::Here(RankError::internal("a gather of no distributed tensor")))?;
                let mut whole = agree(comm, allgather(comm, &v, level, owned, &global))?;
                clock.gathered_bytes += gathered_bytes(&whole, &v);
                whole.ty = ty.clone();
                whole
            }
        };
        clock.combine_s += comm.wtime() - t;
        carried.push((c.name().to_string(), Value::Tensor(v)));
    }
    let values = last.ok_or_else(|| Failed::Here(RankError::internal("no final stage")))?;
    let last = dist.0.last().expect("a final stage");
    let PlannedStage { stage, types, plan, .. } = last;
    let f = &stage.module.functions[stage.entry];
    let global = |p: usize| ValueType::from_ir(types, f.exprs[f.params[p]].ty);
    Ok(values
        .into_iter()
        .map(|(name, value)| {
            let block = match f.params.iter().position(|&p| f.exprs[p].name == name) {
                Some(p) => plan.params.iter().find(|b| b.index == p).map(|b| (b.level, b.owned[rank], global(p))),
                None => result_block(last, rank, size),
            };
            Output { name, value, block }
        })
        .collect())
}

/// Whether every rank combines reductions in the same order ([`crate::plan::reproducible`]
/// read on each rank): ranks that differ would make different collective calls and wait for
/// each other forever.
fn same_reduction_order(comm: &Comm) -> Step<()> {
    match comm.same_on_every_rank(u64::from(crate::plan::reproducible()))? {
        true => Ok(()),
        false => Err(RankError::SettingDiffers { variable: "STRATA_REPRODUCIBLE" }),
    }
}

/// A stage's distributed result on this rank: its block level, the block this rank owns, and
/// the result's type (`None` for a replicated result).
fn result_block(ps: &PlannedStage, rank: usize, size: usize) -> Option<(usize, Interval, ValueType)> {
    let f = &ps.stage.module.functions[ps.stage.entry];
    let g = ValueType::from_ir(&ps.types, f.result()?);
    let level = g.levels.iter().position(|l| l.format == LevelFormat::Block)?;
    let owned = strata_runtime::dist::block_partition(g.levels[level].interval, size as u32)[rank];
    Some((level, owned, g))
}

/// Runs one stage on this rank: its local program, its block of every input (supplied, or a
/// collective's value from an earlier stage), the halo exchange, the run.
fn run_stage<'a>(
    comm: &Comm,
    ps: &PlannedStage,
    carried: &[(String, Value)],
    rank_io: &mut dyn Rank<'a>,
    repeat: usize,
    clock: &mut Clock,
) -> Result<Vec<(String, Value)>, Failed> {
    let rank = comm.rank;
    let PlannedStage { stage, types, plan, .. } = ps;
    let (module, entry) = (&stage.module, stage.entry);
    let f = &module.functions[entry];
    let t = comm.wtime();
    // The local program (made once) and the inputs, agreed on together.
    let made = ps.local_program(rank);
    let strips = plan.strips(rank, f.params.len());
    let owned_args = match &made {
        Ok(local) => stage_inputs(ps, local, carried, &strips, rank_io, rank),
        Err(e) => Err(RankError::Plan(e.clone())),
    };
    let owned_args = agree(comm, owned_args)?;
    let made = made.map_err(|e| Failed::Here(e.into()))?;
    let (local, local_entry) = (&made.0, made.1);
    // Kept with the stage's program (a program made for another rank than the process's keeps
    // nothing).
    let scratch = Memo::default();
    let memo = match &made {
        std::borrow::Cow::Borrowed(_) => &ps.memo,
        std::borrow::Cow::Owned(_) => &scratch,
    };
    clock.read_s += comm.wtime() - t;
    if !plan.indirect.is_empty() {
        // Neighbor shifts of distributed sources: the rows to hold come from the tables.
        let (found, args) =
            inspect::prepare(comm, &ps.inspected, module, types, entry, plan, owned_args, repeat, clock)?;
        return finish(comm, plan, f, found.local(), args, rank_io);
    }
    let local = Local { module: local, entry: local_entry, memo };
    let carries = matches!(&plan.partial, Some(crate::Partial { start: PartialStart::Carry { .. }, .. }));
    // Every rank takes the same path (they make the same collective calls), strips or not.
    if repeat == 0 && !carries {
        return overlapped(comm, plan, local, owned_args, &strips, rank_io, clock);
    }
    // The halo exchange: every held row another rank owns, into the input's strips (its block
    // stays where it is) or into its held buffer.
    let mut args = owned_args;
    let mut received: Vec<Arg<'_>> = Vec::new();
    for b in plan.params.iter().filter(|b| !b.output) {
        let halo = FetchPlan::halo(b, comm.rank);
        let tag = halo_tag(b.index);
        match strips.iter().find(|s| s.index == b.index) {
            Some(s) => {
                let mut pieces = strip_pieces(local, s);
                let block = args[b.index].dense().expect("checked with the inputs");
                timed_exchange(comm, repeat, clock, || halo.run_into_pieces(comm, block, &mut pieces, tag))?;
                received.extend(pieces.into_iter().map(|t| Arg::Value(Value::Tensor(t))));
            }
            // Receiving nothing (the rank's block is all it reads): its rows are served from
            // where they are, lent or not.
            None if halo.recv.is_empty() && args[b.index].dense().is_some() => {
                let block = args[b.index].dense().expect("dense");
                timed_exchange(comm, repeat, clock, || halo.run_into_pieces(comm, block, &mut [], tag))?;
            }
            None => {
                if let Value::Tensor(held) = args[b.index].to_mut() {
                    timed_exchange(comm, repeat, clock, || halo.run(comm, held, tag))?;
                }
            }
        }
    }
    args.extend(received);
    finish(comm, plan, f, local, args, rank_io)
}

/// Zeros for each strip of input `s`, typed as the local program's strip parameters.
fn strip_pieces(local: Local<'_>, s: &crate::Strips) -> Vec<Tensor> {
    let lf = &local.module.functions[local.entry];
    s.strips()
        .map(|strip| Tensor::zeros(&ValueType::from_ir(local.types(), lf.exprs[lf.params[strip.param]].ty)))
        .collect()
}

/// Runs a stage whose inputs read beyond the block are held as strips, the halo exchange
/// overlapped with the run: every exchange is started (non-blocking sends and receives), the
/// kernels that read no strip (the interior) run, the exchanges complete into the strips, and
/// the kernels reading them (the boundary) run ([`Rank::execute_overlapped`]). Inputs held
/// otherwise (a held buffer) are exchanged first, as without overlap.
#[allow(clippy::too_many_arguments)]
fn overlapped<'a>(
    comm: &Comm,
    plan: &Plan,
    local: Local<'_>,
    mut args: Vec<Arg<'_>>,
    strips: &[crate::Strips],
    rank_io: &mut dyn Rank<'a>,
    clock: &mut Clock,
) -> Result<Vec<(String, Value)>, Failed> {
    // Every strip's buffer, in the order of the local program's strip parameters.
    let mut pieces: Vec<Tensor> = Vec::new();
    let mut late = Vec::new();
    let mut started = Vec::new();
    // A failure is agreed on after the run (every rank gets there), not here: ranks differ in
    // which inputs they hold as strips. The exchanges start in parameter order on every rank,
    // so a rank that completes one at once (into a held buffer) waits only for messages every
    // other rank posts without waiting.
    let mut failed: Option<RankError> = rank_io.prepare(local).err();
    let t = comm.wtime();
    let mut bytes = 0;
    for b in plan.params.iter().filter(|b| !b.output) {
        let halo = FetchPlan::halo(b, comm.rank);
        let tag = halo_tag(b.index);
        let into = match strips.iter().find(|s| s.index == b.index) {
            Some(s) => {
                let at = pieces.len();
                pieces.extend(strip_pieces(local, s));
                late.extend(s.strips().map(|strip| strip.param));
                // SAFETY: the pieces' values stay where they are (in `pieces`) until the run
                // ends; the run reads no strip before `arrive` has written them, and nothing
                // else touches them.
                pieces[at..].iter_mut().map(|t| unsafe { crate::exchange::RawRows::new(t) }).collect()
            }
            None if halo.recv.is_empty() && args[b.index].dense().is_some() => Vec::new(),
            None => {
                if let Value::Tensor(held) = args[b.index].to_mut() {
                    match halo.run(comm, held, tag) {
                        Ok(n) => bytes += n,
                        Err(e) => failed = failed.or(Some(e.into())),
                    }
                }
                continue;
            }
        };
        if halo.send.is_empty() && halo.recv.is_empty() {
            continue;
        }
        let block = args[b.index].dense().expect("checked with the inputs");
        match halo.start(comm, block, &into, tag) {
            Ok(x) => started.push((x, into)),
            Err(e) => failed = failed.or(Some(e.into())),
        }
    }
    let mut waited = comm.wtime() - t;
    // The arguments, now borrowing the pieces too.
    let mut args: Vec<Arg<'_>> = args;
    args.extend(pieces.iter().map(|t| Arg::lend(&t.ty, &t.data).expect("a dense strip")));
    let mut overlap = 0.0;
    let mut completing = 0.0;
    let t_started = comm.wtime();
    let exchanging = !started.is_empty();
    let mut arrive = || -> Step<()> {
        let t = comm.wtime();
        if exchanging {
            overlap = t - t_started;
        }
        let mut result = failed.take().map_or(Ok(()), Err);
        for (x, mut raw) in started.drain(..) {
            match x.finish(&mut raw) {
                Ok(n) => bytes += n,
                Err(e) => result = result.and(Err(e.into())),
            }
        }
        waited += comm.wtime() - t;
        completing = comm.wtime() - t;
        result
    };
    let ran = rank_io.execute_overlapped(local, &args, &late, &mut arrive);
    clock.exchange_s.push(waited);
    clock.halo_bytes += bytes;
    clock.overlap_s += overlap;
    if exchanging {
        clock.wait_s += completing;
    }
    spare::keep(args.into_iter().filter_map(Arg::into_owned));
    agree(comm, ran)
}

/// This rank's argument for every parameter of a stage's entry, its `local` program given:
/// supplied by the caller, or carried from an earlier stage. An input held as `strips` must
/// be a dense block.
fn stage_inputs<'x, 'a: 'x>(
    ps: &PlannedStage,
    (local, local_entry): &(Module, Handle<Function>),
    carried: &'x [(String, Value)],
    strips: &[crate::Strips],
    rank_io: &mut dyn Rank<'a>,
    rank: usize,
) -> Step<Vec<Arg<'x>>> {
    let PlannedStage { stage, types, plan, .. } = ps;
    let f = &stage.module.functions[stage.entry];
    let lf = &local.functions[*local_entry];
    let args = (0..f.params.len())
        .map(|p| {
            let e = &f.exprs[f.params[p]];
            let global = ValueType::from_ir(types, e.ty);
            let held = ValueType::from_ir(&local.types, lf.exprs[lf.params[p]].ty);
            let input = Input {
                index: p,
                name: &e.name,
                global: &global,
                held: &held,
                block: plan.params.iter().find(|b| b.index == p),
                output: e.kind == ExprKind::Param(ParamMode::Out),
                rank,
            };
            match carried.iter().find(|(n, _)| *n == e.name) {
                // A distributed value of an earlier stage: its owned rows, in the held ones.
                Some((_, Value::Tensor(mine))) => input.held_from_owned(mine),
                Some((_, v)) => Ok(Arg::Value(v.clone())),
                None => rank_io.input(input),
            }
        })
        .collect::<Step<Vec<_>>>()?;
    match strips.iter().find(|s| args[s.index].dense().is_none()) {
        Some(s) => {
            let name = &f.exprs[f.params[s.index]].name;
            Err(RankError::internal(format!("`{name}` is held as strips but is not a dense block")))
        }
        None => Ok(args),
    }
}

/// Runs a stage's local program on this rank's arguments (a scan's stage in the chain of ranks).
fn finish<'a>(
    comm: &Comm,
    plan: &Plan,
    f: &Function,
    local: Local<'_>,
    mut args: Vec<Arg<'_>>,
    rank_io: &mut dyn Rank<'a>,
) -> Result<Vec<(String, Value)>, Failed> {
    let ran = match &plan.partial {
        Some(p @ crate::Partial { start: PartialStart::Carry { .. }, .. }) => {
            carried_scan(comm, p, f, &mut args, |args| rank_io.execute(local, args))
        }
        _ => rank_io.execute(local, &args),
    };
    spare::keep(args.into_iter().filter_map(Arg::into_owned));
    agree(comm, ran)
}

/// Runs a stage ending in a scan along a block level on this rank, in the chain of ranks
/// holding rows (in the scan's direction): receives the carry from the rank before, runs,
/// passes its last state to the rank after. A rank whose run failed still passes a state on,
/// so no rank waits forever; the failure is reported when the ranks agree afterwards.
fn carried_scan(
    comm: &Comm,
    p: &crate::Partial,
    f: &Function,
    args: &mut [Arg<'_>],
    run: impl FnOnce(&[Arg<'_>]) -> Step<Vec<(String, Value)>>,
) -> Step<Vec<(String, Value)>> {
    let rank = comm.rank;
    let (PartialStart::Carry { param, chain, forward, monoid }, Some((_, dim, owned))) = (&p.start, p.owned.first())
    else {
        return run(args);
    };
    if let Some((op, identity)) = monoid {
        return concurrent_scan(comm, (*op, identity), chain, (dim, owned, *forward), (f, *param), args, run);
    }
    let Some(at) = chain.iter().position(|&r| r == rank) else { return run(args) };
    let state = carry_state(f, *param, args)?;
    let size = slab::all_bytes(state).len();
    let tag = CARRY_TAG;
    if at > 0 {
        let mut buf = vec![0u8; size];
        comm.exchange(&[], &mut [(chain[at - 1], buf.as_mut_slice())], tag)?;
        slab::set_all_bytes(state, &buf);
    }
    let ran = run(args);
    if let Some(&next) = chain.get(at + 1) {
        let last = ran.as_ref().ok().and_then(|values| last_state(values, dim, owned[rank], *forward));
        let bytes = last.unwrap_or_else(|| vec![0u8; size]);
        comm.exchange(&[(next, bytes.as_slice())], &mut [], tag)?;
    }
    ran
}

/// The scan's carry (parameter `param` of the stage's entry `f`) among this rank's `args`.
fn carry_state<'x>(f: &Function, param: strata_ir::Value, args: &'x mut [Arg<'_>]) -> Step<&'x mut Tensor> {
    let k = f
        .params
        .iter()
        .position(|&q| q == param)
        .ok_or_else(|| RankError::internal("the scan's carry parameter is missing"))?;
    match args[k].to_mut() {
        Value::Tensor(state) => Ok(state),
        _ => Err(RankError::internal("the scan's state is not a dense tensor")),
    }
}

/// Runs a stage ending in a scan `acc ⊕ x` along a block level with an exact `⊕`
/// ([`PartialStart::Carry`]'s `monoid`): every rank of the `chain` scans its rows at once, from
/// the identity (the first from the scan's own initial value); each rank's carry `c`, the last
/// states of the ranks before it combined, comes from one `MPI_Exscan` (where MPI has `⊕`:
/// [`crate::combine::mpi_op`]; else every rank's last state is gathered on every rank and
/// folded in chain order); each rank then makes each of its rows `c ⊕ row`. Exact `⊕`
/// (integers, booleans) make this the single-process result bit for bit. Every rank takes part
/// in the collective; a rank without rows or whose run failed adds the identity to the
/// `MPI_Exscan` and is passed over in the gathered fold (a failure is agreed on afterwards).
fn concurrent_scan(
    comm: &Comm,
    (op, identity): (strata_ir::BinaryOp, &strata_ir::Literal),
    chain: &[usize],
    (dim, owned, forward): (&strata_ir::DimName, &[Interval], bool),
    (f, param): (&Function, strata_ir::Value),
    args: &mut [Arg<'_>],
    run: impl FnOnce(&[Arg<'_>]) -> Step<Vec<(String, Value)>>,
) -> Step<Vec<(String, Value)>> {
    let rank = comm.rank;
    let state = carry_state(f, param, args)?;
    let mut carry = state.clone();
    let Some(scalar) = (match &carry.ty.element {
        strata_runtime::ElemType::Scalar(s) => Some(*s),
        _ => None,
    }) else {
        return Err(RankError::internal("a concurrent scan's state holds scalars"));
    };
    let unit = strata_runtime::Sv::from_literal(identity, scalar)
        .ok_or_else(|| RankError::Combine("the fold's identity does not fit its type".into()))?;
    let fill = |t: &mut Tensor| {
        if let strata_runtime::Data::Scalars(c) = &mut t.data {
            (0..c.len()).for_each(|i| c.set(i, unit));
        }
    };
    // Ranks after the chain's first start from the identity (the first, from the scan's own
    // initial value, which its program reads instead of the parameter).
    fill(state);
    let at = chain.iter().position(|&r| r == rank);
    let mut ran = run(args);
    let size = slab::all_bytes(&carry).len();
    let last = match (&ran, at) {
        (Ok(values), Some(_)) => last_state(values, dim, owned[rank], forward),
        _ => None,
    };
    fill(&mut carry);
    match crate::combine::mpi_op(op, scalar) {
        // The carry by `MPI_Exscan` (over the ranks in reverse for a backward scan): a rank
        // holding no rows (or whose run failed) adds the identity.
        Some((ty, mpi)) => {
            let mine = last.filter(|b| b.len() == size).unwrap_or_else(|| slab::all_bytes(&carry));
            let before = comm.exscan(&mine, ty, mpi, !forward)?;
            if let Some(bytes) = before {
                slab::set_all_bytes(&mut carry, &bytes);
            }
        }
        // Every rank's last state on every rank, folded in chain order.
        None => {
            let mine = last.filter(|b| b.len() == size).unwrap_or_else(|| vec![0u8; size]);
            let mut all = comm.gatherv(&mine, &vec![size; comm.size], 0)?.unwrap_or_default();
            all.resize(size * comm.size, 0);
            comm.bcast(&mut all, 0)?;
            let mut theirs = carry.clone();
            for &r in &chain[..at.unwrap_or(0)] {
                slab::set_all_bytes(&mut theirs, &all[r * size..(r + 1) * size]);
                crate::combine::fold_into(&mut carry, &theirs, op)?;
            }
        }
    }
    let (Some(at), Ok(values)) = (at, &mut ran) else { return ran };
    if at == 0 {
        return ran;
    }
    let Some((_, Value::Tensor(t))) = values.first_mut() else {
        return Err(RankError::internal("a scan's result is not a dense tensor"));
    };
    let level =
        t.ty.levels
            .iter()
            .position(|l| l.name == *dim)
            .ok_or_else(|| RankError::internal("the scan's level is missing"))?;
    add_carry(t, level, &carry, op)?;
    ran
}

/// The last row in a scan's direction of its result (the first of a stage's `values`) on
/// this rank's `rows`: a cross-section, laid out as the scan's carry.
fn last_state(values: &[(String, Value)], dim: &strata_ir::DimName, rows: Interval, forward: bool) -> Option<Vec<u8>> {
    let Some((_, Value::Tensor(t))) = values.first() else { return None };
    let level = t.ty.levels.iter().position(|l| l.name == *dim)?;
    let row = if forward { rows.stop - 1 } else { rows.start };
    Some(slab::pack(t, level, Interval::new(row, row + 1)))
}

/// Each element `y` of `t` becomes `c ⊕ y`, `c` the element of `carry` (a cross-section of `t`
/// along `level`, laid out without it) at its position.
fn add_carry(t: &mut Tensor, level: usize, carry: &Tensor, op: strata_ir::BinaryOp) -> Step<()> {
    let extents: Vec<usize> = t.ty.levels.iter().map(|l| l.interval.len() as usize).collect();
    let inner: usize = extents[level + 1..].iter().product();
    let along = extents[level];
    let (strata_runtime::Data::Scalars(y), strata_runtime::Data::Scalars(c)) = (&mut t.data, &carry.data) else {
        return Err(RankError::internal("a scan's result holds scalars"));
    };
    for i in 0..y.len() {
        let (outer, within) = (i / (along * inner), i % inner);
        let v = c.get(outer * inner + within).binary(op, y.get(i)).map_err(|e| RankError::Combine(e.to_string()))?;
        y.set(i, v);
    }
    Ok(())
}

/// The tag of a scan's carry, passed rank to rank: MPI guarantees tags up to 32767 only
/// (`MPI_TAG_UB`), and each message completes before the next starts, so tags need not be
/// unique across exchanges.
const CARRY_TAG: i32 = 32767;

/// The tag of buffer `index`'s halo exchange, within the guaranteed range (see [`CARRY_TAG`]).
fn halo_tag(index: usize) -> i32 {
    (index % CARRY_TAG as usize) as i32
}

/// Runs an exchange (`run`, returning the bytes received) `repeat + 1` times, timing each; the
/// first run's bytes count as this rank's received halo.
pub(crate) fn timed_exchange(
    comm: &Comm,
    repeat: usize,
    clock: &mut Clock,
    mut run: impl FnMut() -> Result<usize, crate::CommError>,
) -> Result<(), Failed> {
    for k in 0..=repeat {
        let t = comm.wtime();
        let bytes = agree(comm, run().map_err(RankError::from))?;
        clock.exchange_s.push(comm.wtime() - t);
        if k == 0 {
            clock.halo_bytes += bytes;
        }
    }
    Ok(())
}
