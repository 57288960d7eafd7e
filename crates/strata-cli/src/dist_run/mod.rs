//! `strata run` on many processes: launching the job (`--ranks N` starts `mpirun`), and each
//! rank's run under MPI — plan, local program, its block of every input, the halo exchange,
//! the native (or interpreted) run, and its block of every output written into one file.
//!
//! Failures end the whole job with a non-zero exit and no rank waiting: phases every rank goes
//! through alike (parsing, verifying, planning) report once, from rank 0; after each phase
//! where ranks can fail on their own (their local program, their slice of a file, their
//! compiler, their run) the ranks agree on a status, and each failed rank reports its message.
//! An output is written to a temporary file beside its target and renamed only when every rank
//! has written its block.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use strata_dist::exchange::FetchPlan;
use strata_dist::{slab, Collective, Comm, PartialStart, Plan, PlannedStage};
use strata_entity::Handle;
use strata_ir::{ExprKind, Function, Interval, LevelFormat, Module, ParamMode};
use strata_runtime::{Tensor, Value, ValueType};

use crate::run::{self, ArgSource};
use crate::RunOptions;

mod indirect;

/// `strata run --ranks N` outside MPI: starts `mpirun -n N` on this same command line (without
/// `--ranks`), with the flags Open MPI needs as root and on fewer cores than ranks.
pub fn launch(ranks: usize) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the strata executable to launch: {e}");
            return 1;
        }
    };
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--ranks" {
            it.next();
        } else if !a.starts_with("--ranks=") {
            args.push(a);
        }
    }
    let mpirun = std::env::var("STRATA_MPIRUN").unwrap_or_else(|_| "mpirun".into());
    let mut cmd = Command::new(&mpirun);
    cmd.arg("-n").arg(ranks.to_string());
    let open_mpi = Command::new(&mpirun)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("Open MPI"));
    if open_mpi {
        cmd.arg("--oversubscribe").arg("--quiet");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.arg("--allow-run-as-root");
        }
    }
    cmd.arg(exe).args(&args).env("STRATA_LAUNCHED_RANKS", ranks.to_string());
    match cmd.status() {
        Ok(s) if s.success() => 0,
        Ok(_) => 1,
        Err(e) => {
            eprintln!(
                "error: cannot start `{mpirun}`: {e} (install Open MPI with `scripts/mpi-env`, or set $STRATA_MPIRUN)"
            );
            1
        }
    }
}

/// A distributed result's block level, this rank's block of it, and its global type.
type OutBlock = (usize, Interval, ValueType);

/// A rank's failure in a phase: its message, reported after the ranks agree.
type Step<T> = Result<T, String>;

/// Agrees across ranks on whether a phase succeeded: every failed rank prints its message; any
/// failure ends the job on every rank (exit 1).
fn agree<T>(comm: &Comm, step: Step<T>) -> T {
    let failed = i64::from(step.is_err());
    let any = comm.max_i64(failed).unwrap_or(1);
    match step {
        Ok(v) if any == 0 => v,
        Ok(_) => {
            let _ = comm.finalize();
            std::process::exit(1)
        }
        Err(m) => {
            // One write per message, so the lines of ranks failing together do not interleave.
            let _ = std::io::stderr().write_all(format!("error: rank {}: {m}\n", comm.rank).as_bytes());
            let _ = comm.finalize();
            std::process::exit(1)
        }
    }
}

/// Reports an error every rank has alike (from rank 0 only) and ends the job.
fn fail_alike(comm: &Comm, message: &str) -> i32 {
    if comm.rank == 0 {
        eprint!("{message}");
        if !message.ends_with('\n') {
            eprintln!();
        }
    }
    let _ = comm.finalize();
    1
}

/// Native threads per rank: `--threads`, else `$STRATA_NUM_THREADS`, else the cores shared
/// among the ranks on this node.
fn threads_per_rank(opts: &RunOptions) -> usize {
    if let Some(t) = opts.threads {
        return t;
    }
    let env = strata_codegen::exec::threads_from_env();
    if env > 0 {
        return env;
    }
    let local = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / local.max(1)).max(1)
}

/// `strata run` on one rank of an MPI job.
pub fn run_rank(file: &Path, opts: &RunOptions) -> i32 {
    let comm = match Comm::init() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let (rank, size) = (comm.rank, comm.size);
    if let Some(n) = opts.ranks.filter(|&n| n != size) {
        return fail_alike(&comm, &format!("error: --ranks {n}, but the job has {size} ranks"));
    }
    let source = match crate::read_source(file) {
        Ok(s) => s,
        Err(e) => return fail_alike(&comm, &format!("error: {e}")),
    };
    let name = file.display().to_string();
    let (module, info) = match strata_syntax::parse(&source).and_then(|m| strata_verify::verify(&m).map(|i| (m, i))) {
        Ok(x) => x,
        Err(d) => return fail_alike(&comm, &crate::render(&name, &source, &d, crate::stderr_color())),
    };
    let entry = match run::find_entry(&module, opts.entry.as_deref()) {
        Ok(e) => e,
        Err(m) => return fail_alike(&comm, &format!("error: {m}")),
    };
    // The entry split at its reductions over block levels; every stage verified and planned
    // before any rank runs, so these errors are reported once.
    let planned = match strata_dist::Distribution::new(&module, &info.types, entry, size) {
        Ok(d) => d.0,
        Err(e) => return fail_alike(&comm, &format!("error: {e}")),
    };
    let mut sources = Vec::new();
    for a in &opts.args {
        match run::split_assignment(a).and_then(|(n, v)| Ok((n, ArgSource::parse(&v)?))) {
            Ok(p) => sources.push(p),
            Err(m) => return fail_alike(&comm, &format!("error: --arg {m}")),
        }
    }
    let mut outs = Vec::new();
    for o in &opts.outs {
        match run::split_assignment(o) {
            Ok((n, p)) => outs.push((n, PathBuf::from(p))),
            Err(m) => return fail_alike(&comm, &format!("error: --out {m}")),
        }
    }
    if let Err(m) = check_sources(&module, entry, &sources, &outs) {
        return fail_alike(&comm, &format!("error: {m}"));
    }
    let threads = threads_per_rank(opts);
    let run_opts = RunOptions { threads: Some(threads), ..opts.clone() };
    let t0 = comm.wtime();
    let mut clock = Clock::default();
    // The values of the stages' collectives, by name: parameters of the later stages.
    let mut carried: Vec<(String, Value)> = Vec::new();
    let mut last = None;
    for ps in &planned {
        let ran = run_stage(&comm, ps, &sources, &carried, &run_opts, &mut clock);
        match &ps.stage.collective {
            Some(c) => {
                let mut v = match ran.values.into_iter().next() {
                    Some((_, Value::Tensor(t))) => t,
                    _ => return fail_alike(&comm, "error: internal: a stage returns no tensor"),
                };
                if let Collective::Reduce { combine, .. } = c {
                    let t = comm.wtime();
                    agree(&comm, strata_dist::combine::combine(&comm, &mut v, *combine));
                    clock.combine_s += comm.wtime() - t;
                }
                carried.push((c.name().to_string(), Value::Tensor(v)));
            }
            None => last = Some(ran),
        }
    }
    let Some(ran) = last else { return fail_alike(&comm, "error: internal: no final stage") };
    let PlannedStage { stage, types, plan } = planned.last().expect("a final stage");
    let t_run = comm.wtime();
    // Outputs: each rank's block of a distributed output, or rank 0's replicated one.
    let f = &stage.module.functions[stage.entry];
    let global = |p: usize| ValueType::from_ir(types, f.exprs[f.params[p]].ty);
    let mut results: Vec<(String, Value, Option<OutBlock>)> = Vec::new();
    for (n, v) in ran.values {
        let block = match f.params.iter().position(|&p| f.exprs[p].name == n) {
            Some(p) => plan.params.iter().find(|b| b.index == p).map(|b| (b.level, b.owned[rank], global(p))),
            None => f.result.and_then(|r| {
                let g = ValueType::from_ir(types, r);
                let level = g.levels.iter().position(|l| l.format == LevelFormat::Block)?;
                let owned = strata_runtime::dist::block_partition(g.levels[level].interval, size as u32)[rank];
                Some((level, owned, g))
            }),
        };
        results.push((n, v, block));
    }
    for (n, path) in &outs {
        let Some((_, v, block)) = results.iter().find(|r| r.0 == *n) else {
            let names: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
            return fail_alike(&comm, &format!("error: no result named `{n}` (results: {})", names.join(", ")));
        };
        write_output(&comm, n, path, v, block.as_ref());
    }
    for (n, v, block) in &results {
        if outs.iter().any(|(o, _)| o == n) {
            continue;
        }
        let shown = match block {
            Some((level, owned, g)) => agree(&comm, gather(&comm, v, *level, *owned, g)),
            None => Some(v.clone()),
        };
        if let (0, Some(v)) = (rank, shown) {
            println!("{n} =\n{}", run::show_result(&v));
        }
    }
    let timings = ran.timings;
    let t_end = comm.wtime();
    if rank == 0 && (opts.time || opts.timings.is_some()) {
        let med = |v: &[f64]| crate::median(v).unwrap_or(0.0);
        let run_s = if timings.preallocated_s.is_empty() { timings.first_s } else { med(&timings.preallocated_s) };
        let exchange_s = med(&clock.exchange_s);
        let report = format!(
            "{{\"ranks\": {size}, \"threads_per_rank\": {threads}, \"stages\": {}, \"read_s\": {:e}, \
             \"exchange_s\": {exchange_s:e}, \"halo_bytes\": {}, \"combine_s\": {:e}, \"run_s\": {run_s:e}, \
             \"first_run_s\": {:e}, \"write_s\": {:e}, \"compile_s\": {:e}, \"cached\": {}}}\n",
            planned.len(),
            clock.read_s,
            clock.halo_bytes,
            clock.combine_s,
            t_run - t0 - clock.read_s,
            t_end - t_run,
            timings.compile_s,
            timings.cached
        );
        if opts.time {
            eprintln!(
                "time: {size} ranks × {threads} threads: read {:.3} ms, halo exchange {:.3} ms ({} bytes received on \
                 rank 0), combining partials {:.3} ms, run {:.3} ms, write {:.3} ms",
                clock.read_s * 1e3,
                exchange_s * 1e3,
                clock.halo_bytes,
                clock.combine_s * 1e3,
                run_s * 1e3,
                (t_end - t_run) * 1e3
            );
        }
        if let Some(p) = &opts.timings {
            if let Err(e) = std::fs::write(p, report) {
                eprintln!("error: cannot write the timings to {}: {e}", p.display());
            }
        }
    }
    let _ = comm.finalize();
    0
}

/// Where a rank's time goes, summed over the stages.
#[derive(Default)]
struct Clock {
    /// Reading (or making) the inputs.
    read_s: f64,
    /// Each halo exchange (every repetition of every stage's).
    exchange_s: Vec<f64>,
    /// Halo bytes this rank received (once per stage).
    halo_bytes: usize,
    /// Combining the collectives' partials.
    combine_s: f64,
}

/// What one stage's run gave this rank.
struct StageRun {
    values: Vec<(String, Value)>,
    timings: crate::Timings,
}

/// Runs one stage on this rank: its local program, its block of every input (read, made, or a
/// collective's value from an earlier stage), the halo exchange, the run.
#[allow(clippy::too_many_arguments)]
fn run_stage(
    comm: &Comm,
    PlannedStage { stage, types, plan }: &PlannedStage,
    sources: &[(String, ArgSource)],
    carried: &[(String, Value)],
    opts: &RunOptions,
    clock: &mut Clock,
) -> StageRun {
    let rank = comm.rank;
    let (module, entry) = (&stage.module, stage.entry);
    let (local, local_entry) = agree(comm, plan.local_module(module, types, entry, rank).map_err(|e| e.to_string()));
    let local_types = local.types.clone();
    let f = &module.functions[entry];
    let lf = &local.functions[local_entry];
    let t = comm.wtime();
    // Each rank's block of every input: read at its offset, made and cut, or carried.
    let owned_args: Vec<Value> = agree(
        comm,
        (0..lf.params.len())
            .map(|p| {
                let e = &f.exprs[f.params[p]];
                if let Some((_, v)) = carried.iter().find(|(n, _)| *n == e.name) {
                    // A distributed value of an earlier stage: its owned rows, in the held ones.
                    let Some(b) = plan.params.iter().find(|b| b.index == p) else { return Ok(v.clone()) };
                    let Value::Tensor(mine) = v else { return Err(format!("`{}` is not a dense tensor", e.name)) };
                    let mut held = Tensor::zeros(&ValueType::from_ir(&local_types, lf.exprs[lf.params[p]].ty));
                    let rows = b.owned[rank];
                    slab::unpack(&mut held, b.level, rows, &slab::pack(mine, b.level, rows));
                    return Ok(Value::Tensor(held));
                }
                let src = sources.iter().find(|(n, _)| *n == e.name).map(|(_, s)| s.clone());
                owned_arg(
                    plan,
                    p,
                    &e.name,
                    &ValueType::from_ir(types, e.ty),
                    &ValueType::from_ir(&local_types, lf.exprs[lf.params[p]].ty),
                    e.kind == ExprKind::Param(ParamMode::Out),
                    src,
                    rank,
                )
            })
            .collect::<Step<Vec<Value>>>(),
    );
    clock.read_s += comm.wtime() - t;
    if !plan.indirect.is_empty() {
        // Neighbor shifts of distributed sources: the rows to hold come from the tables.
        let (local, local_entry, args) =
            indirect::prepare(comm, module, types, entry, plan, owned_args, opts.repeat, clock);
        return finish(comm, plan, f, &local, local_entry, args, opts);
    }
    // The halo exchange: every held row another rank owns.
    let mut args = Vec::with_capacity(owned_args.len());
    for (p, a) in owned_args.into_iter().enumerate() {
        match (plan.params.iter().find(|b| b.index == p && !b.output), a) {
            (Some(b), Value::Tensor(mut held)) => {
                let halo = FetchPlan::halo(b, comm.rank);
                timed_exchange(comm, &halo, None, &mut held, b.index as i32, opts.repeat, clock);
                args.push(Value::Tensor(held));
            }
            (_, a) => args.push(a),
        }
    }
    finish(comm, plan, f, &local, local_entry, args, opts)
}

/// Runs a stage's local program on this rank's arguments (a scan's stage in the chain of ranks).
fn finish(
    comm: &Comm,
    plan: &Plan,
    f: &Function,
    local: &Module,
    local_entry: Handle<Function>,
    mut args: Vec<Value>,
    opts: &RunOptions,
) -> StageRun {
    let local_types = &local.types;
    let ran = match &plan.partial {
        Some(p @ strata_dist::Partial { start: PartialStart::Carry { .. }, .. }) => {
            carried_scan(comm, p, f, &mut args, |args| execute(local, local_types, local_entry, args, opts))
        }
        _ => execute(local, local_types, local_entry, &args, opts),
    };
    let (values, timings) = agree(comm, ran);
    StageRun { values, timings }
}

/// Runs a stage ending in a scan along a block level on this rank, in the chain of ranks
/// holding rows (in the scan's direction): receives the carry from the rank before, runs,
/// passes its last state to the rank after. A rank whose run failed still passes a state on,
/// so no rank waits forever; the failure is reported when the ranks agree afterwards.
fn carried_scan(
    comm: &Comm,
    p: &strata_dist::Partial,
    f: &strata_ir::Function,
    args: &mut [Value],
    run: impl FnOnce(&[Value]) -> Step<(Vec<(String, Value)>, crate::Timings)>,
) -> Step<(Vec<(String, Value)>, crate::Timings)> {
    let rank = comm.rank;
    let (PartialStart::Carry { param, chain, forward }, Some((_, dim, owned))) = (&p.start, p.owned.first()) else {
        return run(args);
    };
    let Some(at) = chain.iter().position(|&r| r == rank) else { return run(args) };
    let k = f.params.iter().position(|q| q == param).ok_or("the scan's carry parameter is missing")?;
    let Value::Tensor(state) = &mut args[k] else { return Err("the scan's state is not a dense tensor".into()) };
    let size = slab::all_bytes(state).len();
    let tag = 1 << 20;
    if at > 0 {
        let mut buf = vec![0u8; size];
        comm.exchange(&[], &mut [(chain[at - 1], buf.as_mut_slice())], tag).map_err(|e| e.to_string())?;
        slab::set_all_bytes(state, &buf);
    }
    let ran = run(args);
    if let Some(&next) = chain.get(at + 1) {
        let last = ran.as_ref().ok().and_then(|(values, _)| {
            let Some((_, Value::Tensor(t))) = values.first() else { return None };
            let level = t.ty.levels.iter().position(|l| l.name == *dim)?;
            let rows = owned[rank];
            // The last row in the scan's direction: a cross-section, laid out as the carry.
            let k = if *forward { rows.stop - 1 } else { rows.start };
            Some(slab::pack(t, level, Interval::new(k, k + 1)))
        });
        let bytes = last.unwrap_or_else(|| vec![0u8; size]);
        comm.exchange(&[(next, bytes.as_slice())], &mut [], tag).map_err(|e| e.to_string())?;
    }
    ran
}

/// Sources name parameters, and no output overwrites an input.
fn check_sources(
    module: &Module,
    entry: Handle<Function>,
    sources: &[(String, ArgSource)],
    outs: &[(String, PathBuf)],
) -> Result<(), String> {
    let f = &module.functions[entry];
    for (n, _) in sources {
        if !f.params.iter().any(|&p| f.exprs[p].name == *n) {
            return Err(format!("`@{}` has no parameter `{n}`", f.name));
        }
    }
    let missing: Vec<String> = f
        .params
        .iter()
        .map(|&p| &f.exprs[p])
        .filter(|e| e.kind != ExprKind::Param(ParamMode::Out) && !sources.iter().any(|(n, _)| *n == e.name))
        .map(|e| format!("`{}`", e.name))
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing --arg for {} of `@{}` (see `strata sig`)", missing.join(", "), f.name));
    }
    for (n, p) in outs {
        if sources.iter().any(|(_, s)| matches!(s, ArgSource::File(f) if crate::same_file(f, p))) {
            return Err(format!("--out {n}={} would overwrite an input file", p.display()));
        }
    }
    Ok(())
}

/// This rank's value of parameter `p`: a distributed input at its held rows with the owned
/// block filled (read at its offset in the file, or made whole and cut; the halo rows are the
/// exchange's), zeros for an output, the whole value otherwise.
#[allow(clippy::too_many_arguments)]
fn owned_arg(
    plan: &Plan,
    p: usize,
    name: &str,
    global: &ValueType,
    local: &ValueType,
    output: bool,
    source: Option<ArgSource>,
    rank: usize,
) -> Step<Value> {
    let block = plan.params.iter().find(|b| b.index == p);
    match (block, source) {
        (Some(b), _) if output => Ok(Value::Tensor(Tensor::zeros(&with_interval(local, b.level, b.owned[rank])))),
        (Some(b), Some(ArgSource::File(path))) => {
            let mut held = Tensor::zeros(local);
            slab::read_rows(&path, name, global, b.level, b.owned[rank], &mut held)?;
            Ok(Value::Tensor(held))
        }
        (Some(b), Some(src)) => {
            let whole = run::make_arg(name, &with_interval(local, b.level, b.global), &src)?;
            let Value::Tensor(whole) = whole else { return Err(format!("`{name}`: a distributed argument is dense")) };
            let mut held = Tensor::zeros(local);
            let mine = b.owned[rank];
            slab::unpack(&mut held, b.level, mine, &slab::pack(&whole, b.level, mine));
            Ok(Value::Tensor(held))
        }
        (None, Some(src)) => run::make_arg(name, local, &src),
        (Some(b), None) => Ok(Value::Tensor(Tensor::zeros(&with_interval(local, b.level, b.owned[rank])))),
        (None, None) => Ok(Value::Tensor(Tensor::zeros(local))),
    }
}

fn with_interval(t: &ValueType, level: usize, iv: Interval) -> ValueType {
    let mut t = t.clone();
    t.levels[level].interval = iv;
    t
}

/// Runs `fetch` into `held` (serving rows of `from`, else of `held` itself) `repeat + 1` times,
/// timing each like the run; the first run's bytes count as this rank's received halo.
fn timed_exchange(
    comm: &Comm,
    fetch: &FetchPlan,
    from: Option<&Tensor>,
    held: &mut Tensor,
    tag: i32,
    repeat: usize,
    clock: &mut Clock,
) {
    for k in 0..=repeat {
        let t = comm.wtime();
        let ran = match from {
            Some(from) => fetch.run_into(comm, from, held, tag),
            None => fetch.run(comm, held, tag),
        };
        let bytes = agree(comm, ran.map_err(|e| e.to_string()));
        clock.exchange_s.push(comm.wtime() - t);
        if k == 0 {
            clock.halo_bytes += bytes;
        }
    }
}

/// Runs the local program: natively where it compiles (else the interpreter, as `strata run`).
fn execute(
    module: &Module,
    types: &strata_ir::TypeArena,
    entry: Handle<Function>,
    args: &[Value],
    opts: &RunOptions,
) -> Step<(Vec<(String, Value)>, crate::Timings)> {
    let native = match opts.backend.as_str() {
        "interp" => None,
        _ => Some(crate::run_native(module, types, entry, args, opts)),
    };
    let interpret = || -> Step<Vec<(String, Value)>> {
        let interp = strata_interp::Interpreter::new(module, types);
        let tensors =
            args.iter().cloned().map(|a| a.into_tensor().map_err(|e| e.to_string())).collect::<Step<Vec<_>>>()?;
        let out = interp.run(entry, tensors).map_err(|e| e.to_diagnostic().message.clone())?;
        Ok(out.values.into_iter().map(|(n, t)| (n, Value::Tensor(t))).collect())
    };
    match native {
        Some(Ok(v)) => Ok(v),
        Some(Err(crate::NativeError::NotCompiled(_))) | None if opts.backend != "native" => {
            Ok((interpret()?, crate::Timings::default()))
        }
        // A failed native run, re-run in the interpreter for a message naming the operation,
        // its operands and the position (as `strata run` does in one process).
        Some(Err(crate::NativeError::Failed(e))) if opts.backend != "native" => match interpret() {
            Err(m) => Err(m),
            Ok(_) => Err(format!(
                "{e}\nnote: the reference interpreter runs this rank's program: this is a native backend bug \
                 (`--backend interp` avoids it)"
            )),
        },
        Some(Err(e)) => Err(e.to_string()),
        None => unreachable!("the interpreter was chosen"),
    }
}

/// The owned rows of a local result, as a tensor of their own.
fn owned_rows(v: &Value, level: usize, owned: Interval) -> Step<Tensor> {
    let t = v.clone().into_tensor().map_err(|e| e.to_string())?;
    let have = t.ty.levels[level].interval;
    if !have.contains(owned) {
        return Err(format!("the local result covers {have}, not the owned block {owned}"));
    }
    Ok(slab::slice(&t, level, owned))
}

/// Gathers a distributed result on rank 0 (for printing).
fn gather(comm: &Comm, v: &Value, level: usize, owned: Interval, global: &ValueType) -> Step<Option<Value>> {
    let mine = owned_rows(v, level, owned)?;
    let g = with_interval(&mine.ty, level, global.levels[level].interval);
    let parts = strata_runtime::dist::block_partition(global.levels[level].interval, comm.size as u32);
    let geo = slab::Rows::of(&mine.ty, level).ok_or("a distributed result holds scalars")?;
    let counts: Vec<usize> = parts.iter().map(|p| geo.outer * geo.inner * geo.elem * p.len() as usize).collect();
    let all = comm.gatherv(slab::bytes(&mine), &counts, 0).map_err(|e| e.to_string())?;
    Ok(all.map(|bytes| {
        let mut whole = Tensor::zeros(&g);
        let mut at = 0;
        for (p, c) in parts.iter().zip(&counts) {
            slab::unpack(&mut whole, level, *p, &bytes[at..at + c]);
            at += c;
        }
        Value::Tensor(whole)
    }))
}

/// Writes a result to `path`: a distributed one by every rank at its block's offset in one
/// temporary file, renamed into place once all have written; a replicated one by rank 0.
fn write_output(comm: &Comm, name: &str, path: &Path, v: &Value, block: Option<&OutBlock>) {
    let Some((level, owned, global)) = block else {
        let step = if comm.rank == 0 {
            match v {
                Value::Tensor(t) => strata_runtime::npy::write_value(path, name, t),
                Value::Stored(s) => strata_runtime::sparse_io::write_stored(path, name, s),
            }
            .map_err(|e| e.to_string())
        } else {
            Ok(())
        };
        return agree(comm, step);
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let job = std::env::var("OMPI_COMM_WORLD_JOBID").or_else(|_| std::env::var("PMIX_NAMESPACE")).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.strata-tmp.{}", job.replace(['/', '@'], "_")));
    let mut g = global.clone();
    g.levels[*level].format = LevelFormat::Dense;
    let start = if comm.rank == 0 { slab::create_npy(&tmp, &g) } else { Ok(0) };
    let start = agree(comm, start);
    let mut buf = start.to_ne_bytes();
    agree(comm, comm.bcast(&mut buf, 0).map_err(|e| e.to_string()));
    let start = u64::from_ne_bytes(buf);
    let written = owned_rows(v, *level, *owned).and_then(|t| slab::write_rows(&tmp, start, &g, *level, &t, *owned));
    let failed = comm.max_i64(i64::from(written.is_err())).unwrap_or(1);
    if failed != 0 && comm.rank == 0 {
        let _ = std::fs::remove_file(&tmp);
    }
    agree(comm, written);
    let renamed = if comm.rank == 0 {
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write `{}`: {e}", path.display())
        })
    } else {
        Ok(())
    };
    agree(comm, renamed);
}
