//! `strata run` on many processes: launching the job (`--ranks N` starts `mpirun`), and each
//! rank's run under MPI — the stages run by [`strata_dist::job`] with inputs from the command
//! line (each rank's block of a file read at its offset) and local programs run natively where
//! they compile, and each rank's block of every output written into one file.
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

use strata_dist::comm::{ReduceOp, ReduceType};
use strata_dist::job::{self, Clock, Failed, RankError};
use strata_dist::{slab, Comm};
use strata_entity::Handle;
use strata_ir::{ExprKind, Function, Interval, Module, ParamMode};
use strata_runtime::{Tensor, Value, ValueType};

use crate::run::{self, ArgSource};
use crate::RunOptions;

/// `strata run --ranks N` outside MPI: starts `mpirun -n N` on this same command line (without
/// `--ranks`), with the flags Open MPI needs as root and on fewer cores than ranks.
///
/// A rank that dies (a signal: the out-of-memory killer's SIGKILL, a crash) ends the job with a
/// message naming the rank and the signal, read from the launcher's notice (Open MPI's own
/// notices are not repeated), and the temporary files of `--out` left by the ranks are removed:
/// each output's temporary carries this job's token (`STRATA_JOB_TOKEN`).
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
    let token = job_token();
    let status = launch_command(ranks, exe.as_os_str(), &args, &token, true);
    if status != 0 {
        remove_temporaries(&args, &token);
    }
    status
}

/// `strata launch --ranks N COMMAND…`: runs any command (a Python script using `strata.world`,
/// say) on `N` ranks under `mpirun`, with the flags Open MPI needs as root and on fewer cores
/// than ranks; a rank killed by a signal ends the job with a message naming it, as for
/// `strata run --ranks`. Exit 0 when every rank succeeded, else 1.
pub fn launch_program(ranks: usize, command: &[String]) -> i32 {
    let Some((program, args)) = command.split_first() else {
        eprintln!("error: `strata launch` needs a command to run (e.g. `strata launch --ranks 2 python3 sim.py`)");
        return 1;
    };
    if ranks == 0 {
        eprintln!("error: --ranks needs at least one rank");
        return 1;
    }
    let found = match program.contains('/') {
        true => Path::new(program).is_file(),
        false => std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file())),
    };
    if !found {
        eprintln!("error: cannot find the command `{program}` to launch (not a file, nor on $PATH)");
        return 1;
    }
    launch_command(ranks, program.as_ref(), args, &job_token(), false)
}

/// Starts `program args…` on `ranks` ranks under `mpirun` and waits; on failure, reports a rank
/// killed by a signal. Exit status: 0, or 1.
/// `own`: the command is `strata run` itself (whose outputs are cleaned up).
fn launch_command(ranks: usize, program: &std::ffi::OsStr, args: &[String], token: &str, own: bool) -> i32 {
    let mpirun = std::env::var("STRATA_MPIRUN").unwrap_or_else(|_| "mpirun".into());
    let mut cmd = Command::new(&mpirun);
    cmd.arg("-n").arg(ranks.to_string());
    let open_mpi = Command::new(&mpirun)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("Open MPI"));
    // Open MPI 4 keeps a session folder per node and user under its temporary base, and two
    // launches starting at once race to create it ("mkdir … File exists", orte_init fails):
    // each launch gets a base of its own, removed after, unless the user chose one.
    let mut session_base = None;
    if open_mpi {
        // Not `--quiet`: its notice of a rank killed by a signal is the only place that names
        // the rank; the launcher's notices are filtered out of the ranks' stderr below.
        cmd.arg("--oversubscribe");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.arg("--allow-run-as-root");
        }
        if std::env::var_os("OMPI_MCA_orte_tmpdir_base").is_none() {
            let base = std::env::temp_dir().join(format!("strata-mpi-{token}"));
            if std::fs::create_dir_all(&base).is_ok() {
                cmd.env("OMPI_MCA_orte_tmpdir_base", &base);
                session_base = Some(base);
            }
        }
    }
    cmd.arg(program)
        .args(args)
        .env("STRATA_LAUNCHED_RANKS", ranks.to_string())
        .env("STRATA_JOB_TOKEN", token)
        .stderr(std::process::Stdio::piped());
    let status = run_launcher(cmd, &mpirun, own);
    if let Some(base) = session_base {
        let _ = std::fs::remove_dir_all(base);
    }
    status
}

/// Runs the launcher `cmd` (`mpirun`) to its end, forwarding the ranks' stderr; 0, or 1 after
/// reporting a rank killed by a signal.
fn run_launcher(mut cmd: Command, mpirun: &str, own: bool) -> i32 {
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "error: cannot start `{mpirun}`: {e} (install Open MPI with `scripts/mpi-env`, or set $STRATA_MPIRUN)"
            );
            return 1;
        }
    };
    let notices = child.stderr.take().map(forward_rank_stderr).unwrap_or_default();
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: waiting for `{mpirun}`: {e}");
            return 1;
        }
    };
    if status.success() {
        return 0;
    }
    let died = notices.iter().find_map(|n| killed_rank(n));
    let message = if own { killed_message } else { killed_program_message };
    let code = status.code().unwrap_or(1);
    match died {
        Some((rank, signal)) => eprintln!("error: {}", message(&format!("rank {rank}"), &signal)),
        // Another launcher (its notice unparsed): its exit status tells the signal, not the rank.
        None if code > 128 => eprintln!("error: {}", message("a rank", &format!("{}", code - 128))),
        None => {}
    }
    1
}

/// A token naming this job's temporary files: the launcher's pid and the time.
fn job_token() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}

/// Forwards the ranks' stderr (which `mpirun` relays) line by line as it comes, keeping back
/// Open MPI's own notices (the blocks between lines of dashes that speak of `mpirun`, the
/// primary job or a process name): returned for [`killed_rank`].
fn forward_rank_stderr(pipe: std::process::ChildStderr) -> Vec<String> {
    use std::io::BufRead as _;
    let mut notices = Vec::new();
    let mut block: Option<Vec<String>> = None;
    let mut err = std::io::stderr();
    for line in std::io::BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        let rule = line.len() >= 20 && line.bytes().all(|b| b == b'-');
        match (&mut block, rule) {
            (None, true) => block = Some(Vec::new()),
            (Some(lines), true) => {
                let text = lines.join("\n");
                let launcher =
                    ["mpirun", "Primary job", "Process name:", "MPI_ABORT", "prterun"].iter().any(|k| text.contains(k));
                if !launcher {
                    let _ = writeln!(err, "{line}\n{text}\n{line}");
                }
                notices.push(text);
                block = None;
            }
            (Some(lines), false) => lines.push(line),
            (None, false) => {
                let _ = writeln!(err, "{line}");
            }
        }
    }
    if let Some(lines) = block {
        let _ = writeln!(err, "{}", lines.join("\n"));
    }
    notices
}

/// From Open MPI's notice `mpirun noticed that process rank R with PID P on node N exited on
/// signal S (Name).`: the rank and `S (Name)`.
fn killed_rank(notice: &str) -> Option<(usize, String)> {
    let flat = notice.split_whitespace().collect::<Vec<_>>().join(" ");
    let rest = &flat[flat.find("process rank ")? + "process rank ".len()..];
    let rank: usize = rest.split(' ').next()?.parse().ok()?;
    let signal = &rest[rest.find("exited on signal ")? + "exited on signal ".len()..];
    Some((rank, signal.trim_end_matches('.').to_string()))
}

/// The message for a rank ended by `signal` (`9 (Killed)`), with what SIGKILL usually means.
fn killed_message(who: &str, signal: &str) -> String {
    let hint = if signal.starts_with("9 ") || signal == "9" {
        ": SIGKILL, which the kernel's out-of-memory killer sends when memory runs out (`dmesg` says)"
    } else {
        ""
    };
    format!("{who} was killed by signal {signal}{hint}; the job was stopped, and no output was written")
}

/// [`killed_message`] for `strata launch`, whose command's files Strata does not know: a file
/// `strata.save` was writing keeps its old content (it is replaced only once every rank wrote).
fn killed_program_message(who: &str, signal: &str) -> String {
    killed_message(who, signal).replace(
        "and no output was written",
        "and no file strata.save was writing was replaced (each is renamed into place once complete)",
    )
}

/// Removes what ranks killed mid-write leave: the temporary of each `--out NAME=PATH` (see
/// `strata_dist::job::write_output`), named with this job's token.
fn remove_temporaries(args: &[String], token: &str) {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let spec = if a == "--out" { it.next().cloned() } else { a.strip_prefix("--out=").map(str::to_string) };
        let Some((_, path)) = spec.and_then(|s| run::split_assignment(&s).ok()) else { continue };
        let path = PathBuf::from(path);
        let _ = std::fs::remove_file(strata_dist::job::temporary_of(&path, token));
    }
}

/// The value of a phase every rank agreed succeeded; else ends the job: a failed rank prints
/// its message (one write, so the lines of ranks failing together do not interleave), every
/// rank finalizes MPI and exits with status 1.
fn or_exit<T>(comm: &Comm, r: Result<T, Failed>) -> T {
    match r {
        Ok(v) => v,
        Err(f) => {
            if let Failed::Here(m) = f {
                let _ = std::io::stderr().write_all(format!("error: rank {}: {m}\n", comm.rank).as_bytes());
            }
            let _ = comm.finalize();
            std::process::exit(1)
        }
    }
}

/// The command's side of a rank's run: inputs from `--arg` (a file read at the rank's offset,
/// or made), local programs run natively where they compile (else in the interpreter).
struct CliRank<'a> {
    sources: &'a [(String, ArgSource)],
    opts: &'a RunOptions,
    /// The last native run's timings (the final stage's, reported by `--time`).
    timings: crate::Timings,
}

impl job::Rank<'static> for CliRank<'_> {
    fn input(&mut self, input: job::Input<'_>) -> job::Step<job::Arg<'static>> {
        let src = self.sources.iter().find(|(n, _)| *n == input.name).map(|(_, s)| s.clone());
        owned_arg(&input, src).map(job::Arg::Value)
    }

    fn execute(&mut self, local: job::Local<'_>, args: &[job::Arg<'_>]) -> job::Step<Vec<(String, Value)>> {
        let (values, timings) = execute(local.module, local.types(), local.entry, args, self.opts)?;
        self.timings = timings;
        Ok(values)
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
        let ran = self.prepared(local)?.run_overlapped(args, late, &mut arrive).map_err(|e| match e {
            strata_engine::ExecuteError::Arrival(e) => RankError::unbox(e),
            e => RankError::Run(e.to_string()),
        })?;
        self.timings = ran.timings.unwrap_or_default();
        Ok(ran.values)
    }
}

impl CliRank<'_> {
    /// A local program prepared as [`execute`] prepares it (extents per site: every rank's
    /// kernel is one text, whatever its block).
    fn prepared(&self, local: job::Local<'_>) -> job::Step<std::sync::Arc<strata_engine::Prepared>> {
        let backend = strata_engine::Backend::parse(&self.opts.backend).map_err(RankError::Run)?;
        crate::prepare(local.module, local.types(), local.entry, (backend, true), self.opts)
            .map_err(|e| RankError::Run(e.to_string()))
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

/// Native threads per rank: `--threads`, else [`strata_dist::comm::threads_per_rank`].
fn threads_per_rank(opts: &RunOptions) -> usize {
    opts.threads.unwrap_or_else(strata_dist::comm::threads_per_rank)
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
    let (module, info) = match strata_verify::parse(&source).and_then(|m| strata_verify::verify(&m).map(|i| (m, i))) {
        Ok(x) => x,
        Err(d) => return fail_alike(&comm, &crate::render(&name, &source, &d, crate::stderr_color())),
    };
    let (module, entry) = match run::runnable_entry(&module, opts.entry.as_deref()) {
        Ok(e) => e,
        Err(m) => return fail_alike(&comm, &format!("error: {m}")),
    };
    // The entry split at its reductions over block levels; every stage verified and planned
    // before any rank runs, so these errors are reported once.
    let planned = match strata_dist::Distribution::new(&module, &info.types, entry, size) {
        Ok(d) => d,
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
    let mut rank_io = CliRank { sources: &sources, opts: &run_opts, timings: crate::Timings::default() };
    let results = or_exit(&comm, job::run(&comm, &planned, &mut rank_io, opts.repeat, &mut clock));
    let t_run = comm.wtime();
    for (n, path) in &outs {
        let Some(r) = results.iter().find(|r| r.name == *n) else {
            let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
            return fail_alike(&comm, &format!("error: no result named `{n}` (results: {})", names.join(", ")));
        };
        or_exit(&comm, job::write_output(&comm, n, path, &r.value, r.block.as_ref()));
    }
    for r in &results {
        if outs.iter().any(|(o, _)| *o == r.name) {
            continue;
        }
        let shown = match &r.block {
            Some((level, owned, g)) => {
                or_exit(&comm, job::agree(&comm, job::gather_value(&comm, &r.value, *level, *owned, g)))
            }
            None => Some(r.value.clone()),
        };
        if let (0, Some(v)) = (rank, shown) {
            println!("{} =\n{}", r.name, run::show_result(&v));
        }
    }
    let timings = rank_io.timings;
    let t_end = comm.wtime();
    let med = |v: &[f64]| strata_engine::median(v).unwrap_or(0.0);
    let run_s = if timings.preallocated_s.is_empty() { timings.first_s } else { med(&timings.preallocated_s) };
    let exchange_s = med(&clock.exchange_s);
    // The slowest rank's medians (every rank takes part): a step of the job takes as long as
    // its slowest rank, as an mpi4py program timing `MPI.Wtime` on every rank reports.
    let mut slowest = [exchange_s, run_s, exchange_s + run_s, peak_rss_bytes() as f64].map(f64::to_ne_bytes).concat();
    if opts.time || opts.timings.is_some() {
        or_exit(
            &comm,
            job::agree(&comm, comm.allreduce(&mut slowest, ReduceType::F64, ReduceOp::Max).map_err(RankError::from)),
        );
    }
    let slowest: Vec<f64> =
        slowest.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().expect("8 bytes"))).collect();
    if rank == 0 && (opts.time || opts.timings.is_some()) {
        let report = serde_json::json!({
            "ranks": size,
            "threads_per_rank": threads,
            "stages": planned.0.len(),
            "read_s": clock.read_s,
            "exchange_s": exchange_s,
            "halo_bytes": clock.halo_bytes,
            "combine_s": clock.combine_s,
            "run_s": run_s,
            "first_run_s": t_run - t0 - clock.read_s,
            "write_s": t_end - t_run,
            "compile_s": timings.compile_s,
            "cached": timings.cached,
            "slowest_exchange_s": slowest[0],
            "slowest_run_s": slowest[1],
            "slowest_step_s": slowest[2],
            "peak_rss_bytes": slowest[3] as u64,
        });
        let report = format!("{report}\n");
        if opts.time {
            eprintln!(
                "time: {size} ranks × {threads} threads: read {:.3} ms, halo exchange {:.3} ms ({} bytes received on \
                 rank 0), combining partials {:.3} ms, run {:.3} ms, write {:.3} ms; the slowest rank's exchange + run \
                 {:.3} ms",
                clock.read_s * 1e3,
                exchange_s * 1e3,
                clock.halo_bytes,
                clock.combine_s * 1e3,
                run_s * 1e3,
                (t_end - t_run) * 1e3,
                slowest[2] * 1e3
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

/// This process's peak resident memory so far (`VmHWM` of /proc/self/status; 0 where there is
/// none): the timings report the largest over the ranks.
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().strip_suffix("kB"));
    kb.and_then(|v| v.trim().parse::<u64>().ok()).map_or(0, |k| k * 1024)
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

/// This rank's value of a parameter: a distributed input at its held rows with the owned
/// block filled (read at its offset in the file, or made whole and cut; the halo rows are the
/// exchange's), zeros for an output, the whole value otherwise.
fn owned_arg(input: &job::Input<'_>, source: Option<ArgSource>) -> job::Step<Value> {
    let (name, local, rank) = (input.name, input.held, input.rank);
    match (input.block, source) {
        (Some(b), _) if input.output => Ok(Value::Tensor(Tensor::zeros(&with_interval(local, b.level, b.owned[rank])))),
        // A sparse or ragged input: the rank's rows of the `.npz`, as storage (the plan keeps
        // every rank to its own rows of it).
        (Some(_), Some(ArgSource::File(path))) if input.global.levels.iter().any(|l| !l.format.is_dense_like()) => {
            strata_runtime::sparse_rows::read_stored_rows(&path, name, input.global, local)
                .map(Value::Stored)
                .map_err(|e| RankError::Data(e.to_string()))
        }
        // Tuple elements come in an `.npz` (one array per field): read whole, cut below.
        (Some(b), Some(ArgSource::File(path))) if input.global.element.scalar().is_some() => {
            let mut held = Tensor::zeros(local);
            slab::read_rows(&path, name, input.global, b.level, b.owned[rank], &mut held).map_err(RankError::Data)?;
            Ok(Value::Tensor(held))
        }
        // `random:`, `zeros`, `ones`: made for the owned rows only (the values the whole
        // value has there).
        (Some(b), Some(src)) => {
            let mine = run::make_rows(name, &with_interval(local, b.level, b.global), b.level, b.owned[rank], &src)
                .map_err(|e| RankError::input(name, e))?;
            input.held_from_made(mine)
        }
        (None, Some(src)) => run::make_arg(name, local, &src).map_err(|e| RankError::input(name, e)),
        (Some(b), None) => Ok(Value::Tensor(Tensor::zeros(&with_interval(local, b.level, b.owned[rank])))),
        (None, None) => Ok(Value::Tensor(Tensor::zeros(local))),
    }
}

fn with_interval(t: &ValueType, level: usize, iv: Interval) -> ValueType {
    let mut t = t.clone();
    t.levels[level].interval = iv;
    t
}

/// Runs the local program: natively where it compiles (else the interpreter, as `strata run`).
fn execute(
    module: &Module,
    types: &strata_ir::TypeArena,
    entry: Handle<Function>,
    args: &[job::Arg<'_>],
    opts: &RunOptions,
) -> job::Step<(Vec<(String, Value)>, crate::Timings)> {
    let backend = strata_engine::Backend::parse(&opts.backend).map_err(RankError::Run)?;
    // Relocated: ranks whose blocks differ only in where they lie share one kernel.
    match crate::execute(module, types, entry, args, (backend, true), opts) {
        Ok(r) => Ok((r.values, r.timings.unwrap_or_default())),
        Err(e) => Err(RankError::Run(e.to_string())),
    }
}
