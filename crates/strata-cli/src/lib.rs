//! The `strata` command's library half: reading files, running the front end and verifier,
//! rendering diagnostics, and the `check` and `fmt` commands. `main.rs` only parses arguments.

#![deny(missing_docs)]

mod dist_run;
pub mod execute;
pub mod run;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use miette::{GraphicalReportHandler, GraphicalTheme, NamedSource};
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

/// Renders diagnostics for `source` (named `name`) as text: `name:line:col`, the source line
/// with the labelled span underlined, the message, and help.
pub fn render(name: &str, source: &str, diagnostics: &[Diagnostic], color: bool) -> String {
    let theme = if color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100).with_context_lines(1);
    let mut out = String::new();
    for d in diagnostics {
        let (line, col) = d.primary.span.line_col(source);
        let report = miette::Report::new(d.clone()).with_source_code(NamedSource::new(name, source.to_string()));
        let _ = writeln!(out, "{name}:{line}:{col}: error: {}", d.message);
        if handler.render_report(&mut out, report.as_ref()).is_err() {
            let _ = writeln!(out, "  [{}] {}", d.code, d.message);
        }
    }
    out
}

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
}

/// How long a native run took, in seconds.
#[derive(Debug, Default)]
pub struct Timings {
    /// Lowering, emitting and compiling (or finding in the cache) and loading.
    pub compile_s: f64,
    /// Whether the shared object came from the cache.
    pub cached: bool,
    /// The first run (buffers allocated just before).
    pub first_s: f64,
    /// Each repeated run on the same, preallocated buffers.
    pub preallocated_s: Vec<f64>,
    /// Each repeated run allocating its written buffers afresh (as an allocating API would).
    pub allocating_s: Vec<f64>,
}

impl Timings {
    /// `{"compile_s", "cached", "first_s", "preallocated_s": [..], "allocating_s": [..]}`.
    pub fn to_json(&self) -> String {
        let list = |v: &[f64]| v.iter().map(|x| format!("{x:e}")).collect::<Vec<_>>().join(", ");
        format!(
            "{{\"compile_s\": {:e}, \"cached\": {}, \"first_s\": {:e}, \"preallocated_s\": [{}], \"allocating_s\": [{}]}}\n",
            self.compile_s,
            self.cached,
            self.first_s,
            list(&self.preallocated_s),
            list(&self.allocating_s)
        )
    }

    /// Human-readable lines for `--time`.
    fn report(&self) -> String {
        let how = if self.cached { "cached" } else { "cold" };
        let mut s = format!("time: compile {:.3} ms ({how}), run {:.3} ms\n", self.compile_s * 1e3, self.first_s * 1e3);
        for (what, v) in [("preallocated outputs", &self.preallocated_s), ("allocating outputs", &self.allocating_s)] {
            if let Some(m) = median(v) {
                let min = v.iter().copied().fold(f64::INFINITY, f64::min);
                let max = v.iter().copied().fold(0.0, f64::max);
                s += &format!(
                    "time: {} runs, {what}: median {:.3} ms (min {:.3}, max {:.3})\n",
                    v.len(),
                    m * 1e3,
                    min * 1e3,
                    max * 1e3
                );
            }
        }
        s
    }
}

/// The median of `v` (`None` when empty).
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[n / 2]),
        n => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

/// `strata run`: exit 0 on success, 1 on any failure — diagnostics, bad or unreadable data,
/// missing arguments, run-time errors (clap itself exits 2 on malformed command lines).
pub fn cmd_run(file: &Path, opts: &RunOptions) -> i32 {
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
    let backend = match execute::Backend::parse(&opts.backend) {
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
    let ran = match execute::execute(&module, &info.types, entry, &args, backend, opts) {
        Ok(r) => r,
        Err(execute::ExecuteError::Program(d)) => {
            let _ = write!(stderr, "{}", render(&name, &source, &[*d], color));
            return 1;
        }
        Err(e) => return usage(&mut stderr, e.to_string()),
    };
    if let Some(n) = &ran.note {
        let _ = writeln!(stderr, "note: {n}");
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

/// Why a native run did not produce values.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NativeError {
    /// The entry uses something the native backend does not compile yet.
    #[error(transparent)]
    NotCompiled(strata_codegen::LowerError),
    /// Compiling, loading or running failed.
    #[error("{0}")]
    Failed(String),
}

/// Lowers, compiles (or finds in the cache) and runs `entry` natively; with `opts.repeat`,
/// runs it that many more times on preallocated and on fresh output buffers, for timings.
pub(crate) fn run_native(
    module: &strata_ir::Module,
    types: &strata_ir::TypeArena,
    entry: strata_entity::Handle<strata_ir::Function>,
    args: &[strata_runtime::Value],
    opts: &RunOptions,
) -> Result<(Vec<(String, strata_runtime::Value)>, Timings), NativeError> {
    use strata_codegen::{compile, exec};
    let t0 = std::time::Instant::now();
    let program = strata_codegen::lower(module, types, entry).map_err(NativeError::NotCompiled)?;
    let source = strata_codegen::emit_c::emit(&program);
    let (so, state) = compile::build(&source).map_err(|e| NativeError::Failed(e.to_string()))?;
    let lib = compile::Loaded::open(&so).map_err(|e| NativeError::Failed(e.to_string()))?;
    let f = &module.functions[entry];
    let failed = |e: exec::ExecError| NativeError::Failed(format!("native run of `@{}` failed: {e}", f.name));
    let threads = opts.threads.unwrap_or_else(exec::threads_from_env);
    let mut timings = Timings {
        compile_s: t0.elapsed().as_secs_f64(),
        cached: state == compile::CacheState::Warm,
        ..Timings::default()
    };
    let t1 = std::time::Instant::now();
    let mut buffers = exec::Buffers::new(&program, args).map_err(failed)?;
    buffers.call(&lib, threads).map_err(failed)?;
    timings.first_s = t1.elapsed().as_secs_f64();
    // Alternating the two kinds of runs exposes both to the same machine state.
    for _ in 0..opts.repeat {
        let t = std::time::Instant::now();
        buffers.call(&lib, threads).map_err(failed)?;
        timings.preallocated_s.push(t.elapsed().as_secs_f64());
        let t = std::time::Instant::now();
        buffers.renew_written(&program, args);
        buffers.call(&lib, threads).map_err(failed)?;
        timings.allocating_s.push(t.elapsed().as_secs_f64());
    }
    let names: Vec<String> = f.params.iter().map(|&p| f.exprs[p].name.clone()).collect();
    let result_ty = f.result().map(|r| strata_runtime::ValueType::from_ir(types, r));
    Ok((buffers.into_values(&program, args, &names, result_ty.as_ref()), timings))
}

/// `strata lower`: prints an entry's loop kernels or generated C.
pub fn cmd_lower(file: &Path, entry: Option<&str>, to: &str, ranks: usize) -> i32 {
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
    match strata_codegen::lower(&module, &info.types, entry) {
        Ok(p) => {
            match to {
                "loops" => print!("{p}"),
                _ => print!("{}", strata_codegen::emit_c::emit(&p)),
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
