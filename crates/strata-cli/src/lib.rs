//! The `strata` command's library half: reading files, running the front end and verifier,
//! rendering diagnostics, and the `check` and `fmt` commands. `main.rs` only parses arguments.

#![deny(missing_docs)]

pub mod bisect;
mod dist_run;
pub mod run;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use strata_ir::{Diagnostic, Module};

/// Failures of the command itself (as opposed to diagnostics about a program).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not UTF-8.
    #[error("`{path}` is not UTF-8 text")]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// A file could not be written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

pub use strata_report::render;

/// Parses and verifies source text.
pub fn check_source(source: &str) -> Result<Module, Vec<Diagnostic>> {
    let module = strata_verify::parse(source)?;
    strata_verify::verify(&module)?;
    Ok(module)
}

/// Reads a file as UTF-8.
pub fn read_source(path: &Path) -> Result<String, CliError> {
    let bytes = std::fs::read(path).map_err(|source| CliError::Read { path: path.into(), source })?;
    String::from_utf8(bytes).map_err(|_| CliError::NotText { path: path.into() })
}

/// Whether to colour output written to stderr.
pub fn stderr_color() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// Expands directories into the `.strata` files below them (sorted); other paths are kept.
pub fn expand_inputs(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "strata") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out);
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// Runs `f` on the text of every input file (folders expanded) with stderr at hand; an
/// unreadable file is reported with status 2. Returns the worst status.
fn over_sources(files: &[PathBuf], mut f: impl FnMut(&Path, &str, &mut dyn std::io::Write) -> i32) -> i32 {
    let mut stderr = std::io::stderr().lock();
    let mut status = 0;
    for path in &expand_inputs(files) {
        let s = match read_source(path) {
            Ok(source) => f(path, &source, &mut stderr),
            Err(e) => {
                let _ = writeln!(stderr, "error: {e}");
                2
            }
        };
        status = status.max(s);
    }
    status
}

/// `strata check`: exit status 0 if every file verifies, 1 if any has diagnostics, 2 if a file
/// cannot be read. Directories are searched for `.strata` files.
pub fn cmd_check(files: &[PathBuf]) -> i32 {
    let color = stderr_color();
    over_sources(files, |path, source, stderr| match check_source(source) {
        Ok(_) => {
            println!("{}: ok", path.display());
            0
        }
        Err(diags) => {
            let _ = write!(stderr, "{}", render(&path.display().to_string(), source, &diags, color));
            let plural = if diags.len() == 1 { "" } else { "s" };
            let _ = writeln!(stderr, "{}: {} error{plural}", path.display(), diags.len());
            1
        }
    })
}

/// The canonical text of `source`, or its parse diagnostics: the types the text leaves out
/// stay out, unless `types` (then every statement's type is written, inferred where left out).
pub fn format_source(source: &str, style: FmtStyle) -> Result<String, Vec<Diagnostic>> {
    Ok(match style {
        FmtStyle::AsWritten => strata_syntax::parse(source)?.to_string(),
        FmtStyle::Flat => strata_verify::parse(source)?.flattened().to_string(),
        FmtStyle::Types => strata_verify::parse(source)?.with_all_types().to_string(),
    })
}

/// What `strata fmt` writes out beyond the canonical layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmtStyle {
    /// What the author wrote: omitted types stay out, literals and nested calls stay in place.
    AsWritten,
    /// Every literal operand and nested call as its own named statement (`--flat`).
    Flat,
    /// Flat, and every type written out: the canonical fully typed form (`--types`).
    Types,
}

/// Writes `text` to `path` through a temporary file in the same folder and a rename, so the
/// file is never left half-written.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    // Through a symbolic link: the file it points at is rewritten, the link stays a link.
    let target = std::fs::canonicalize(path).ok().filter(|_| path.is_symlink());
    let path = target.as_deref().unwrap_or(path);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.strata-fmt.{}", std::process::id()));
    let werr = |source| CliError::Write { path: path.into(), source };
    std::fs::write(&tmp, text).map_err(werr)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        werr(e)
    })
}

/// `strata fmt`: rewrites files in canonical form (or, with `check`, only reports the ones that
/// are not); with `types`, every statement's type written out. Files with syntax errors are
/// reported and left untouched. Directories are searched for `.strata` files.
pub fn cmd_fmt(files: &[PathBuf], check: bool, style: FmtStyle) -> i32 {
    let color = stderr_color();
    over_sources(files, |path, source, stderr| match format_source(source, style) {
        Err(diags) => {
            let _ = write!(stderr, "{}", render(&path.display().to_string(), source, &diags, color));
            1
        }
        Ok(text) if text == source => 0,
        Ok(_) if check => {
            let _ = writeln!(stderr, "{}: not formatted (run `strata fmt {}`)", path.display(), path.display());
            1
        }
        Ok(text) => match write_atomically(path, &text) {
            Ok(()) => {
                println!("formatted {}", path.display());
                0
            }
            Err(e) => {
                let _ = writeln!(stderr, "error: {e}");
                2
            }
        },
    })
}

/// Options of `strata run`.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The entry to run (default: the last program, else the last function).
    pub entry: Option<String>,
    /// `NAME=SPEC` arguments.
    pub args: Vec<String>,
    /// `NAME=PATH` outputs.
    pub outs: Vec<String>,
    /// `auto` (native where it compiles, else the interpreter), `interp` or `native`.
    pub backend: String,
    /// Print timings.
    pub time: bool,
    /// Native threads (`None`: `$STRATA_NUM_THREADS`, else all cores).
    pub threads: Option<usize>,
    /// Native runs to time after the first, each kind N times, alternating: on preallocated
    /// buffers and allocating the outputs afresh; 0 times nothing extra.
    pub repeat: usize,
    /// Where to write the native timings as JSON (see [`Timings::to_json`]).
    pub timings: Option<PathBuf>,
    /// Run on this many MPI ranks: outside MPI, `strata run` starts `mpirun -n N` on itself;
    /// under MPI it must equal the job's size.
    pub ranks: Option<usize>,
    /// `--device gpuN`: the arguments are read to GPU N, so the entry computes there
    /// (compute follows data) and its results are copied back; `None`: where the entry's
    /// types place its values.
    pub device: Option<String>,
}

pub use strata_engine::Timings;

/// `strata launch --ranks N COMMAND…`: the command on `N` MPI ranks under `mpirun`, a rank
/// killed by a signal named; exit 0 when every rank succeeded, else 1.
pub fn cmd_launch(ranks: usize, command: &[String]) -> i32 {
    dist_run::launch_program(ranks, command)
}

/// `strata run`: exit 0 on success, 1 on any failure — diagnostics, bad or unreadable data,
/// missing arguments, run-time errors (clap itself exits 2 on malformed command lines).
pub fn cmd_run(file: &Path, opts: &RunOptions) -> i32 {
    let on_gpu = opts.device.as_deref().is_some_and(|d| d != "cpu");
    if on_gpu && (opts.ranks.is_some() || strata_dist::launched_by_mpi()) {
        eprintln!(
            "error: --device with --ranks: distributed runs on GPUs are not supported yet (each rank runs on the host)"
        );
        return 1;
    }
    if strata_dist::launched_by_mpi() {
        return dist_run::run_rank(file, opts);
    }
    if let Some(n) = opts.ranks {
        if n == 0 {
            eprintln!("error: --ranks needs at least one rank");
            return 1;
        }
        return dist_run::launch(n);
    }
    let color = stderr_color();
    let mut stderr = std::io::stderr().lock();
    let usage = |stderr: &mut dyn std::io::Write, m: String| {
        let _ = writeln!(stderr, "error: {m}");
        1
    };
    let backend = match strata_engine::Backend::parse(&opts.backend) {
        Ok(b) => b,
        Err(m) => return usage(&mut stderr, m),
    };
    let source = match read_source(file) {
        Ok(s) => s,
        Err(e) => return usage(&mut stderr, e.to_string()),
    };
    let name = file.display().to_string();
    let module = match strata_verify::parse(&source) {
        Ok(m) => m,
        Err(d) => {
            let _ = write!(stderr, "{}", render(&name, &source, &d, color));
            return 1;
        }
    };
    let info = match strata_verify::verify(&module) {
        Ok(i) => i,
        Err(d) => {
            let _ = write!(stderr, "{}", render(&name, &source, &d, color));
            return 1;
        }
    };
    let mut sources = Vec::new();
    for a in &opts.args {
        match run::split_assignment(a).and_then(|(n, v)| Ok((n, run::ArgSource::parse(&v)?))) {
            Ok(p) => sources.push(p),
            Err(m) => return usage(&mut stderr, format!("--arg {m}")),
        }
    }
    let mut outs = Vec::new();
    for o in &opts.outs {
        match run::split_assignment(o) {
            Ok((n, p)) => outs.push((n, PathBuf::from(p))),
            Err(m) => return usage(&mut stderr, format!("--out {m}")),
        }
    }
    let (module, entry) = match run::runnable_entry(&module, opts.entry.as_deref()) {
        Ok(e) => e,
        Err(m) => return usage(&mut stderr, m),
    };
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let args = match run::prepare_args(&interp, &module, entry, &sources) {
        Ok(a) => a,
        Err(m) => return usage(&mut stderr, m),
    };
    // A static extent in a type (`nnz = N`, `total = N`) is a claim the data must keep.
    let params = &module.functions[entry].params;
    for (a, &p) in args.iter().zip(params) {
        if let Some(m) = a.extent_mismatch() {
            let name = &module.functions[entry].exprs[p].name;
            return usage(&mut stderr, format!("argument `{name}`: {m}"));
        }
    }
    // Every `--out` is checked before anything runs: a result of this entry, a path of its
    // own in an existing folder, never an input file.
    if let Err(m) = run::check_outputs(&module, entry, &outs) {
        return usage(&mut stderr, m);
    }
    for (n, p) in &outs {
        if sources.iter().any(|(_, s)| matches!(s, run::ArgSource::File(f) if same_file(f, p))) {
            return usage(&mut stderr, format!("--out {n}={} would overwrite an input file", p.display()));
        }
    }
    let start = std::time::Instant::now();
    let ran = match execute(&module, &info.types, entry, &args, (backend, false), opts) {
        Ok(r) => r,
        Err(strata_engine::ExecuteError::Program(d)) => {
            let _ = write!(stderr, "{}", render(&name, &source, &[*d], color));
            return 1;
        }
        Err(e) => return usage(&mut stderr, e.to_string()),
    };
    if let Some(n) = &ran.note {
        let _ = writeln!(stderr, "note: {n}");
    }
    if let Some(w) = &ran.warning {
        let _ = writeln!(stderr, "warning: {w}");
    }
    let ran_natively = ran.timings.is_some();
    if let Some(timings) = &ran.timings {
        if opts.time {
            let _ = write!(stderr, "{}", timings.report());
        }
        if let Some(path) = &opts.timings {
            if let Err(e) = std::fs::write(path, timings.to_json()) {
                return usage(&mut stderr, format!("cannot write the timings to {}: {e}", path.display()));
            }
        }
    }
    let values = ran.values;
    let elapsed = start.elapsed();
    for (n, v) in &values {
        if let Some(m) = v.extent_mismatch() {
            let _ = writeln!(stderr, "error: `{n}` of `@{}`: {m}; nothing was written", module.functions[entry].name);
            return 1;
        }
    }
    if let Err(m) = run::write_outputs(&values, &outs) {
        let _ = writeln!(stderr, "error: {m}");
        return 1;
    }
    for (n, t) in &values {
        if outs.iter().any(|(o, _)| o == n) {
            continue;
        }
        println!("{n} =\n{}", run::show_result(t));
    }
    if opts.time && !ran_natively {
        let _ = writeln!(stderr, "time: interpreter {:.3} ms", elapsed.as_secs_f64() * 1e3);
    }
    if !ran_natively && (opts.repeat > 0 || opts.timings.is_some()) {
        let _ = writeln!(stderr, "note: --repeat and --timings time native runs only; the interpreter ran once");
    }
    0
}

/// Prepares `entry` with `backend` and the threads of `opts` (`rank`: a rank's local program,
/// see [`prepare`]), and runs it on `args` (repeated `opts.repeat` more times natively, for
/// timings).
pub(crate) fn execute<T: strata_runtime::Argument>(
    module: &Module,
    types: &strata_ir::TypeArena,
    entry: strata_entity::Handle<strata_ir::Function>,
    args: &[T],
    (backend, rank): (strata_engine::Backend, bool),
    opts: &RunOptions,
) -> Result<strata_engine::Executed, strata_engine::ExecuteError> {
    prepare(module, types, entry, (backend, rank), opts)?.run_timed(args, opts.repeat)
}

/// `entry` prepared as `strata run` runs it ([`execute`]); `rank`: a rank's local program,
/// lowered with extents per site, so that every rank prints one kernel whatever its block.
pub(crate) fn prepare(
    module: &Module,
    types: &strata_ir::TypeArena,
    entry: strata_entity::Handle<strata_ir::Function>,
    (backend, rank): (strata_engine::Backend, bool),
    opts: &RunOptions,
) -> Result<std::sync::Arc<strata_engine::Prepared>, strata_engine::ExecuteError> {
    let mut options = strata_engine::Options { backend, threads: opts.threads, ..strata_engine::Options::default() };
    options.lower.extents_per_site = rank;
    if let Some(d) = &opts.device {
        options.lower.gpu = match d.as_str() {
            "cpu" => None,
            name => Some(strata_codegen::placement::gpu_ordinal(name).ok_or_else(|| {
                strata_engine::ExecuteError::Gpu(format!(
                    "--device {name}: expected `cpu` or `gpuN` (a CUDA GPU's number)"
                ))
            })?),
        };
    }
    strata_engine::prepare(module, types, entry, &options)
}

/// `--disable-pass NAME…`: checks that each names an optional pass and adds them to
/// `$STRATA_DISABLE_PASSES`, which every lowering in this process and the ranks it starts reads
/// (`LowerOptions::for_this_machine`); call before anything lowers. `Err`: the exit status,
/// the error printed.
pub fn disable_passes(names: &[String]) -> Result<(), i32> {
    if names.is_empty() {
        return Ok(());
    }
    if let Err(e) = strata_codegen::pipeline::PassSet::from_names(names.iter().map(String::as_str)) {
        eprintln!("error: --disable-pass: {e}");
        return Err(1);
    }
    let mut all: Vec<String> = std::env::var("STRATA_DISABLE_PASSES").map(|v| vec![v]).unwrap_or_default();
    all.extend(names.iter().cloned());
    // Set before any thread reads the environment (the CLI's first step).
    std::env::set_var("STRATA_DISABLE_PASSES", all.join(","));
    Ok(())
}

/// `strata lower --passes`: the passes over the loop-level IR, one per line with what it does.
pub fn cmd_passes() -> i32 {
    println!(
        "{:<34} the entry lowered to fused loop kernels (extraction of temporaries included)",
        strata_codegen::pipeline::LOWER
    );
    for p in strata_codegen::pipeline::PASSES {
        let required = if p.optional { "" } else { " (always runs)" };
        println!("{:<34} {}{required}", p.name, p.summary);
    }
    0
}

/// The ranks `strata lower` shows a distribution over, and the rank whose local program it
/// lowers (if any).
#[derive(Clone, Copy, Debug)]
pub struct Ranks {
    /// How many ranks.
    pub ranks: usize,
    /// The rank whose local program `--to loops` or `c` shows.
    pub rank: Option<usize>,
}

/// `strata lower`: prints an entry's loop kernels or generated C (of one rank's local programs
/// with `dist.rank`); with `print_after`, the loop kernels after lowering or after that pass.
pub fn cmd_lower(file: &Path, entry: Option<&str>, to: &str, dist: Ranks, print_after: Option<&str>) -> i32 {
    if let Some(name) = print_after.filter(|n| !strata_codegen::pipeline::is_stage(n)) {
        eprintln!("error: --print-after: no pass named `{name}` (`strata lower --passes` lists them)");
        return 1;
    }
    let color = stderr_color();
    let source = match read_source(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let name = file.display().to_string();
    let (module, info) = match strata_verify::parse(&source).and_then(|m| strata_verify::verify(&m).map(|i| (m, i))) {
        Ok(x) => x,
        Err(d) => {
            eprint!("{}", render(&name, &source, &d, color));
            return 1;
        }
    };
    let (module, entry) = match run::runnable_entry(&module, entry) {
        Ok(e) => e,
        Err(m) => {
            eprintln!("error: {m}");
            return 1;
        }
    };
    let ranks = dist.ranks;
    if let (Some(rank), false) = (dist.rank, to == "dist") {
        return lower_rank(&module, &info.types, entry, to, ranks, rank, print_after);
    }
    if to == "dist" {
        return match strata_dist::Distribution::new(&module, &info.types, entry, ranks.max(1)) {
            Ok(p) => {
                print!("{p}");
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        };
    }
    print_lowered(&module, &info.types, entry, to, &strata_codegen::LowerOptions::for_this_machine(), print_after)
}

/// `strata lower --rank K`: each stage's local program on rank `rank` of `ranks`, lowered as
/// the rank lowers it ([`prepare`] for a rank).
fn lower_rank(
    module: &Module,
    types: &strata_ir::TypeArena,
    entry: strata_entity::Handle<strata_ir::Function>,
    to: &str,
    ranks: usize,
    rank: usize,
    print_after: Option<&str>,
) -> i32 {
    let ranks = ranks.max(1);
    if rank >= ranks {
        eprintln!("error: --rank {rank}: the ranks are 0 to {} (--ranks {ranks})", ranks - 1);
        return 1;
    }
    let stages = match strata_dist::Distribution::new(module, types, entry, ranks) {
        Ok(d) => d.0,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let mut options = strata_codegen::LowerOptions::for_this_machine();
    options.extents_per_site = true;
    let n = stages.len();
    for (i, s) in stages.iter().enumerate() {
        if !s.plan.indirect.is_empty() {
            eprintln!("error: stage {} reads neighbors of distributed rows: its local program is made at run time, from the tables' entries", i + 1);
            return 1;
        }
        let (local, local_entry) = match s.plan.local_module(&s.stage.module, &s.types, s.stage.entry, rank) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: {e}");
                return 1;
            }
        };
        println!("// stage {} of {n}, rank {rank} of {ranks}", i + 1);
        let status = print_lowered(&local, &local.types, local_entry, to, &options, print_after);
        if status != 0 {
            return status;
        }
    }
    0
}

/// Prints `entry` lowered with `options`: its loop kernels (after `print_after`) or its C.
fn print_lowered(
    module: &Module,
    types: &strata_ir::TypeArena,
    entry: strata_entity::Handle<strata_ir::Function>,
    to: &str,
    options: &strata_codegen::LowerOptions,
    print_after: Option<&str>,
) -> i32 {
    // Compute follows data: an entry whose values live on a GPU is lowered for it, and
    // `--to cuda` lowers any entry as if its arguments were moved to GPU 0.
    let gpu = match strata_codegen::placement::entry_gpu(module, types, entry) {
        Ok(g) => g.or((to == "cuda").then_some(0)),
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let options = &strata_codegen::LowerOptions { gpu, ..options.clone() };
    let mut shown = None;
    let mut observe = |name: &str, p: &strata_codegen::KernelProgram| {
        if Some(name) == print_after {
            shown = Some(p.to_string());
        }
    };
    match strata_codegen::lower_observed(module, types, entry, options, &mut observe) {
        Ok(_) if print_after.is_some() => {
            print!("{}", shown.unwrap_or_default());
            0
        }
        Ok(p) => {
            match to {
                "loops" => print!("{p}"),
                "cuda" => match strata_codegen::emit_c::cuda::emit_cuda(&p) {
                    Ok((source, extents)) => {
                        print!("{source}");
                        let slots: Vec<String> =
                            extents.iter().enumerate().map(|(k, v)| format!("x{k} = {v}")).collect();
                        let launches: Vec<String> =
                            strata_codegen::emit_c::cuda::launches(&p).iter().map(|l| l.to_string()).collect();
                        println!("\n/* at these sizes: {}; extents {} */", launches.join(", "), slots.join(", "));
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        return 1;
                    }
                },
                _ => {
                    // The C names no size; the values a run passes for its extent slots follow
                    // it (they are not part of what is compiled).
                    let (source, extents) = strata_codegen::emit_c::emit_with_extents(&p);
                    print!("{source}");
                    let slots: Vec<String> = extents.iter().enumerate().map(|(k, v)| format!("x{k} = {v}")).collect();
                    if !slots.is_empty() {
                        println!("\n/* the extents a run at these sizes passes: {} */", slots.join(", "));
                    }
                }
            }
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// Whether two paths name one file (existing or not: see `file_key`).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    file_key(a) == file_key(b)
}

/// Where `path` is, comparable between spellings of one file (`F`, `./F`, a link to it)
/// whether it exists yet or not.
fn file_key(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.join(path.file_name().unwrap_or_default())
}

/// `strata sig`: prints every entry's parameters and results.
pub fn cmd_sig(file: &Path, json: bool) -> i32 {
    let color = stderr_color();
    let source = match read_source(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let name = file.display().to_string();
    let checked = strata_verify::parse(&source).and_then(|m| strata_verify::verify(&m).map(|i| (m, i)));
    match checked {
        Ok((m, info)) => {
            print!("{}", run::signatures(&m, &info.types, json));
            0
        }
        Err(d) => {
            eprint!("{}", render(&name, &source, &d, color));
            1
        }
    }
}
