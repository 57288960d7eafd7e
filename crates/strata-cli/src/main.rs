//! `strata`: the command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Large tensor columns aligned to a cache line (`strata_runtime::aligned`).
#[global_allocator]
static ALLOCATOR: strata_runtime::aligned::CacheLineAligned = strata_runtime::aligned::CacheLineAligned;

/// Strata: a typed tensor IR over named dimensions — dense, nested, ragged, sparse and
/// distributed tensors in one language.
#[derive(Parser)]
#[command(
    name = "strata",
    version,
    after_help = "Examples:\n  strata check examples/stencil/laplacian.strata\n  strata check examples/*        (folders are searched for .strata files)\n  strata run examples/stencil/laplacian.strata --arg inp=random:1\n  strata run --ranks 3 examples/distributed/laplacian.strata --arg inp=random:1\n  strata sig --json examples/stencil/nabla.strata\n  strata lower examples/stencil/laplacian.strata --to c\n  strata launch --ranks 2 python3 examples/python/diffusion.py\n  strata fmt --check examples/*"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and verify programs; exit 0 when clean, 1 on diagnostics, 2 on unreadable files.
    #[command(
        after_help = "Example:\n  strata check examples/stencil/laplacian.strata examples/sparse/spmv_csr.strata"
    )]
    Check {
        /// `.strata` files, or folders to search for them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run an entry of a program: natively where it compiles, else in the reference interpreter
    /// (`--backend`), on one process or MPI ranks (`--ranks`).
    #[command(
        after_help = "Examples:\n  strata run examples/stencil/laplacian.strata --arg inp=random:1\n  strata run prog.strata --entry lap --arg inp=in.npy --out result=out.npy --time\n\nArguments come from .npy files (.npz with arrays f0, f1, ... for tuple elements), or\nrandom:SEED, zeros, ones. Results not written with --out are printed."
    )]
    Run {
        /// The `.strata` file.
        file: PathBuf,
        /// The function or program to run (default: the last program, else the last function).
        #[arg(long)]
        entry: Option<String>,
        /// `NAME=PATH.npy`, `NAME=random:SEED`, `NAME=zeros` or `NAME=ones`.
        #[arg(long = "arg", value_name = "NAME=SPEC")]
        args: Vec<String>,
        /// `NAME=PATH.npy` (or `.npz` for tuple elements); a function's result is named `result`.
        #[arg(long = "out", value_name = "NAME=PATH")]
        outs: Vec<String>,
        /// `auto` (native code where the backend compiles the entry, else the reference
        /// interpreter, with a note), `interp` or `native` (native only, an error otherwise).
        #[arg(long, default_value = "auto")]
        backend: String,
        /// Print how long the run took.
        #[arg(long)]
        time: bool,
        /// Threads for the native backend (default: `$STRATA_NUM_THREADS`, else all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Native backend: run N more times (on preallocated, then on fresh output buffers)
        /// and report medians with `--time` / `--timings`.
        #[arg(long, default_value_t = 0, value_name = "N")]
        repeat: usize,
        /// Native backend: write the timings as JSON to PATH ({"compile_s", "cached",
        /// "first_s", "preallocated_s": [..], "allocating_s": [..]}).
        #[arg(long, value_name = "PATH")]
        timings: Option<PathBuf>,
        /// Run on N processes with MPI: starts `mpirun -n N` (tensors with a `block` level are
        /// partitioned over the ranks; see docs/runtime.md). Under `mpirun`, N must be its size.
        #[arg(long, value_name = "N")]
        ranks: Option<usize>,
        /// Do not run the optional native pass NAME (repeatable, or comma-separated; see
        /// `strata lower --passes`): for finding a pass that changes a result.
        #[arg(long = "disable-pass", value_name = "NAME", value_delimiter = ',')]
        disable_pass: Vec<String>,
        /// `gpuN`: read the arguments to CUDA GPU N, so the entry computes there (compute
        /// follows data) and its results are copied back; `--repeat` then times the kernels on
        /// the resident data. Needs the CUDA driver and NVRTC ($STRATA_CUDA_LIBS: its folder).
        #[arg(long, value_name = "DEVICE")]
        device: Option<String>,
    },
    /// Print an entry's lowered forms: fused loop kernels, the generated C, or its distribution
    /// over ranks (`--to dist`).
    #[command(
        after_help = "Examples:\n  strata lower examples/stencil/laplacian.strata --to c\n  strata lower examples/distributed/laplacian.strata --to dist --ranks 3\n  strata lower examples/distributed/laplacian.strata --ranks 3 --rank 0 --to c\n  strata lower prog.strata --disable-pass coiterate,unify-fold-vars\n  strata lower prog.strata --bisect --arg a=a.npz"
    )]
    Lower {
        /// The `.strata` file (not needed with `--passes`).
        #[arg(required_unless_present = "passes")]
        file: Option<PathBuf>,
        /// The function or program (default: the last program, else the last function).
        #[arg(long)]
        entry: Option<String>,
        /// `loops` (fused loop kernels), `c` (the generated C), `cuda` (the generated CUDA, for
        /// GPU 0 unless the entry names its GPU) or `dist` (the distribution over
        /// `--ranks` ranks: blocks, halos and the exchange's messages).
        #[arg(long, default_value = "loops", value_parser = ["loops", "c", "cuda", "dist"])]
        to: String,
        /// Ranks for `--to dist` and `--rank`.
        #[arg(long, value_name = "N", default_value_t = 2)]
        ranks: usize,
        /// With `--to loops` or `c`: the local program rank K of `--ranks` runs, stage by stage,
        /// lowered as a rank lowers it (every extent its own slot: one text on every rank).
        #[arg(long, value_name = "K")]
        rank: Option<usize>,
        /// List the passes over the loop-level IR, in the order they run, and exit.
        #[arg(long)]
        passes: bool,
        /// Print the loop kernels after lowering (`lower`) or after the pass NAME (see `--passes`)
        /// instead of the final ones.
        #[arg(long, value_name = "NAME", conflicts_with = "to")]
        print_after: Option<String>,
        /// Do not run the optional pass NAME (repeatable, or comma-separated; also
        /// `$STRATA_DISABLE_PASSES` for every front end). Values never change without it.
        #[arg(long = "disable-pass", value_name = "NAME", value_delimiter = ',')]
        disable_pass: Vec<String>,
        /// Run the entry (on `--arg` data) in the interpreter and natively with the first k
        /// optional passes for k = 0, 1, …: name the first pass that changes its result.
        #[arg(long, conflicts_with_all = ["to", "print_after"])]
        bisect: bool,
        /// `NAME=SPEC` arguments for `--bisect` (as `strata run --arg`; missing ones are an error).
        #[arg(long = "arg", value_name = "NAME=SPEC", requires = "bisect")]
        args: Vec<String>,
    },
    /// Print each entry's parameters and results with their full types.
    #[command(after_help = "Example:\n  strata sig --json examples/stencil/nabla.strata")]
    Sig {
        /// The `.strata` file.
        file: PathBuf,
        /// JSON: `{"entries": [{"name", "kind", "params", "results"}]}`, each parameter and result
        /// with its name, type, dtype, shape, format and dims.
        #[arg(long)]
        json: bool,
    },
    /// Run a command on N MPI ranks (SPMD: a Python script using `strata.world`, say), naming a
    /// rank killed by a signal; exit 0 when every rank succeeded, else 1.
    #[command(after_help = "Example:\n  strata launch --ranks 2 python3 examples/python/diffusion.py")]
    Launch {
        /// The number of ranks (processes).
        #[arg(long)]
        ranks: usize,
        /// The command and its arguments (after `--` if they start with `-`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Rewrite programs in canonical form (idempotent; comments are kept).
    #[command(after_help = "Examples:\n  strata fmt program.strata\n  strata fmt --check examples/*.strata")]
    Fmt {
        /// Report files that are not formatted instead of rewriting them (exit 1 if any).
        #[arg(long)]
        check: bool,
        /// Write every statement's type, inferring those the text leaves out (the fully typed,
        /// canonical form); without it, the types the author left out stay out.
        #[arg(long)]
        types: bool,
        /// Write every literal operand and nested call as a named statement of its own (the
        /// types the author left out stay out; `--types` implies it).
        #[arg(long)]
        flat: bool,
        /// `.strata` files, or folders to search for them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() {
    strata_runtime::aligned::start();
    // Output piped into a reader that stops early (`strata run … | head`) ends the process
    // quietly, as for other command-line tools, instead of a panic on the failed write.
    // Not in MPI ranks, whose sockets the MPI library handles.
    if !strata_dist::launched_by_mpi() {
        // SAFETY: restoring a signal's default disposition before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let cli = Cli::parse();
    let status = match cli.command {
        Command::Check { files } => strata_cli::cmd_check(&files),
        Command::Fmt { check, types, flat, files } => {
            let style = match (types, flat) {
                (true, _) => strata_cli::FmtStyle::Types,
                (false, true) => strata_cli::FmtStyle::Flat,
                (false, false) => strata_cli::FmtStyle::AsWritten,
            };
            strata_cli::cmd_fmt(&files, check, style)
        }
        Command::Run {
            file,
            entry,
            args,
            outs,
            backend,
            time,
            threads,
            repeat,
            timings,
            ranks,
            disable_pass,
            device,
        } => {
            if let Err(status) = strata_cli::disable_passes(&disable_pass) {
                std::process::exit(status);
            }
            strata_cli::cmd_run(
                &file,
                &strata_cli::RunOptions { entry, args, outs, backend, time, threads, repeat, timings, ranks, device },
            )
        }
        Command::Sig { file, json } => strata_cli::cmd_sig(&file, json),
        Command::Launch { ranks, command } => strata_cli::cmd_launch(ranks, &command),
        Command::Lower { passes: true, .. } => strata_cli::cmd_passes(),
        Command::Lower { file, entry, to, ranks, rank, print_after, disable_pass, bisect, args, .. } => {
            let file = file.expect("clap requires FILE without --passes");
            if let Err(status) = strata_cli::disable_passes(&disable_pass) {
                std::process::exit(status);
            }
            if bisect {
                strata_cli::bisect::cmd_bisect(&file, entry.as_deref(), &args)
            } else {
                let dist = strata_cli::Ranks { ranks, rank };
                strata_cli::cmd_lower(&file, entry.as_deref(), &to, dist, print_after.as_deref())
            }
        }
    };
    std::process::exit(status);
}
