//! `strata`: the command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Strata: a typed tensor IR over named dimensions — dense, nested, ragged, sparse and
/// distributed tensors in one language.
#[derive(Parser)]
#[command(
    name = "strata",
    version,
    after_help = "Examples:\n  strata check examples/stencil/laplacian.strata\n  strata check examples/*        (folders are searched for .strata files)\n  strata fmt --check examples/*\n  strata fmt my_program.strata"
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
    /// Rewrite programs in canonical form (idempotent; comments are kept).
    #[command(after_help = "Examples:\n  strata fmt program.strata\n  strata fmt --check examples/*.strata")]
    Fmt {
        /// Report files that are not formatted instead of rewriting them (exit 1 if any).
        #[arg(long)]
        check: bool,
        /// `.strata` files, or folders to search for them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() {
    let cli = Cli::parse();
    let status = match cli.command {
        Command::Check { files } => strata_cli::cmd_check(&files),
        Command::Fmt { check, files } => strata_cli::cmd_fmt(&files, check),
    };
    std::process::exit(status);
}
