//! The pass pipeline over the loop-level IR: every pass has one signature (it rewrites a
//! [`KernelProgram`] in place), a name, and a line saying what it does; [`PASSES`] lists them in
//! the order they run after lowering. The kernel-IR verifier ([`verify_kernels`]) runs after
//! lowering and after every pass (release builds: after the last, see [`verify_each`]);
//! `strata lower --passes` lists them and `--print-after NAME` prints the kernel program after
//! one.

use crate::kernel::{KernelKind, KernelProgram};
use crate::kernel_passes::{forward_results, fuse_adjacent, fuse_scans, overwritten_first};
use crate::lower::LowerError;
use crate::verify_kernels::{verify_kernels, KernelVerifyError};

/// A pass over the loop-level IR.
pub struct Pass {
    /// Its name (`--print-after NAME`, `--disable-pass NAME`).
    pub name: &'static str,
    /// Whether it may be switched off: every optional pass is an optimization, and a program
    /// computes the same values without it (the pass-toggle test runs the corpus so).
    pub optional: bool,
    /// What it does, in one line (`--passes`).
    pub summary: &'static str,
    /// Runs it.
    pub run: fn(&mut KernelProgram),
}

/// The name of lowering itself, the first stage `--print-after` can show.
pub const LOWER: &str = "lower";

/// Every pass, in the order they run after lowering.
pub const PASSES: &[Pass] = &[
    Pass {
        name: "split-pieces",
        optional: true,
        summary: "runs a kernel whose stores choose by comparing a loop variable with a constant (a concatenation's pieces) as one kernel per piece",
        run: |p| p.kernels = crate::split::split_pieces(std::mem::take(&mut p.kernels), p.extents_per_site),
    },
    Pass {
        name: "simplify",
        optional: true,
        summary: "folds constants and drops select branches a kernel's loop ranges decide",
        run: simplify,
    },
    Pass {
        name: "materialize-invariant-reductions",
        optional: true,
        summary: "computes a reduction recomputed along a loop it does not depend on once, in a kernel of its own",
        run: |p| {
            let kernels = std::mem::take(&mut p.kernels);
            p.kernels = crate::invariant::materialize_invariant_reductions(kernels, &mut p.buffers);
        },
    },
    Pass {
        name: "materialize-nested-folds",
        optional: true,
        summary: "computes a long fold inside another fold (the sum of a matrix-vector product) first, in a kernel of its own over the outer fold's points",
        run: |p| {
            let kernels = std::mem::take(&mut p.kernels);
            p.kernels = crate::invariant::materialize_nested_folds(kernels, &mut p.buffers);
        },
    },
    Pass {
        name: "forward-results",
        optional: true,
        summary: "a kernel whose temporary a later kernel only copies into an output writes it there",
        run: |p| p.kernels = forward_results(std::mem::take(&mut p.kernels), &p.buffers),
    },
    Pass {
        name: "fuse-scans",
        optional: true,
        summary: "runs a scan and the next one over the same dimension reading it pointwise per strip",
        run: |p| p.kernels = fuse_scans(std::mem::take(&mut p.kernels), &p.buffers),
    },
    Pass {
        name: "fuse-adjacent",
        optional: true,
        summary: "consecutive kernels over one domain that do not read each other's outputs share a loop",
        run: |p| p.kernels = fuse_adjacent(std::mem::take(&mut p.kernels)),
    },
    Pass {
        name: "mark-overwritten",
        optional: true,
        summary: "marks buffers written whole before any read, and temporaries nothing reads (no copy of the caller's data; a kept buffer where one is free)",
        run: |p| {
            for b in 0..p.buffers.len() {
                // A temporary nothing reads (its value forwarded to an output) is never seen.
                let unread = p.buffers[b].temp && !p.kernels.iter().any(|k| k.reads(b));
                p.buffers[b].overwritten = unread || overwritten_first(&p.kernels, b, &p.buffers[b].levels);
            }
        },
    },
    Pass {
        name: "recognize-matmul",
        optional: true,
        summary: "kernels that are (+, ×) contractions of dense f32/f64 loads become runtime GEMM calls",
        run: |p| {
            for k in 0..p.kernels.len() {
                if let Some(mm) = crate::matmul::recognize(&p.kernels[k], &p.buffers) {
                    p.kernels[k].kind = KernelKind::Gemm(mm);
                }
            }
        },
    },
    Pass {
        name: "coiterate",
        optional: true,
        summary: "loops over stored sparse coordinates where the fill algebra proves no value changes",
        run: crate::sparse::coiterate,
    },
    Pass {
        name: "gustavson",
        optional: true,
        summary: "sparse results (SpGEMM) accumulate each row in a dense workspace",
        run: crate::workspace::gustavson,
    },
    Pass {
        name: "stage-windows",
        optional: true,
        summary: "values read at several offsets are computed once into rolling windows of planes",
        run: crate::stage::stage_windows,
    },
    Pass {
        name: "unify-fold-vars",
        optional: true,
        summary: "sibling folds over the same ranges bind the same loop variables (so they can share a loop)",
        run: crate::unify_folds::unify_fold_vars,
    },
    Pass {
        name: "strip-crosswise-folds",
        optional: true,
        summary: "folds reading operands stored with the fold's dimension outermost (GT4Py's neighbor tables) run in strips of the innermost loop",
        run: crate::fold_strips::strip_crosswise_folds,
    },
    Pass {
        name: "schedule",
        optional: false,
        summary: "decides how each kernel's loops run: threads, layout, reassociated sums, streamed stores",
        run: crate::schedule::schedule,
    },
    Pass {
        name: "gpu-sums",
        optional: true,
        summary: "on a GPU, long sums run as fixed groups of partial sums: a whole sum split over many threads, a point's row sums over a warp's lanes",
        run: crate::schedule::gpu_sums_pass,
    },
    Pass {
        name: "jam-rows",
        optional: true,
        summary: "points that each sum a contiguous row in vector lanes (a matrix-vector product), or fold over a sparse row they share (CSR times dense), step their folds four at a time",
        run: crate::jam_rows::jam_rows,
    },
];

/// Simplifies every store and scan update within its kernel's loop ranges.
fn simplify(p: &mut KernelProgram) {
    for k in &mut p.kernels {
        let mut ranges: Vec<(strata_ir::DimName, strata_ir::Interval)> =
            k.domain.iter().map(|l| (l.name.clone(), l.interval)).collect();
        ranges.extend(k.scan().into_iter().map(|sc| (sc.dim.name.clone(), sc.dim.interval)));
        for st in &mut k.stores {
            st.value = crate::sym::simplify_in(&st.value, &ranges);
        }
        if let KernelKind::Scan(s) = &mut k.kind {
            s.scan.updates = s.scan.updates.iter().map(|u| crate::sym::simplify_in(u, &ranges)).collect();
        }
    }
}

/// A set of passes of [`PASSES`] (by index), e.g. those switched off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PassSet(u64);

/// A pass name that names no optional pass.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not an optional pass (optional passes: {})", optional_names().join(", "))]
pub struct UnknownPass {
    /// The name given.
    pub name: String,
}

/// The names of the passes that may be switched off, in pipeline order.
pub fn optional_names() -> Vec<&'static str> {
    PASSES.iter().filter(|p| p.optional).map(|p| p.name).collect()
}

impl PassSet {
    /// No pass.
    pub const NONE: PassSet = PassSet(0);

    /// The passes named (each an optional pass).
    ///
    /// # Errors
    /// [`UnknownPass`]: a name of no optional pass.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<PassSet, UnknownPass> {
        let mut set = PassSet::NONE;
        for name in names.into_iter().map(str::trim).filter(|n| !n.is_empty()) {
            let i = PASSES
                .iter()
                .position(|p| p.name == name && p.optional)
                .ok_or_else(|| UnknownPass { name: name.to_string() })?;
            set.0 |= 1 << i;
        }
        Ok(set)
    }

    /// The passes `$STRATA_DISABLE_PASSES` names (comma-separated). A name of no optional
    /// pass is reported on stderr once and ignored: the variable reaches every front end
    /// (Python, Rust), which must still run.
    pub fn from_env() -> PassSet {
        static FROM_ENV: std::sync::OnceLock<PassSet> = std::sync::OnceLock::new();
        *FROM_ENV.get_or_init(|| {
            let Ok(value) = std::env::var("STRATA_DISABLE_PASSES") else { return PassSet::NONE };
            let mut set = PassSet::NONE;
            for name in value.split(',') {
                match PassSet::from_names([name]) {
                    Ok(one) => set = set.union(one),
                    Err(e) => eprintln!("warning: $STRATA_DISABLE_PASSES: {e}"),
                }
            }
            set
        })
    }

    /// Both sets' passes.
    pub fn union(self, other: PassSet) -> PassSet {
        PassSet(self.0 | other.0)
    }

    /// Whether pass `i` of [`PASSES`] is in the set.
    pub fn contains(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }

    /// The names of the passes in the set, in pipeline order.
    pub fn names(self) -> Vec<&'static str> {
        PASSES.iter().enumerate().filter(|(i, _)| self.contains(*i)).map(|(_, p)| p.name).collect()
    }
}

/// The passes a GPU program skips: each shapes loops for a CPU (strips and windows sized to its
/// caches, folds stepped in vector lanes, a CPU GEMM library, per-strip scratch arrays, row
/// workspaces); on a GPU each thread computes whole points. (Co-iteration stays: a fold over
/// stored coordinates is a loop inside one thread — a CSR product runs a thread per row.)
pub fn gpu_skipped() -> PassSet {
    PassSet::from_names([
        "fuse-scans",
        "recognize-matmul",
        "gustavson",
        "stage-windows",
        "strip-crosswise-folds",
        "jam-rows",
    ])
    .expect("the GPU skips optional passes")
}

/// Runs every pass over `program` (as lowering left it), verifying the kernels after each;
/// `observe` sees the program after lowering (as [`LOWER`]) and after each pass.
///
/// # Errors
/// [`LowerError::Invalid`]: a pass broke an invariant of the loop IR (a compiler bug).
pub fn run(program: &mut KernelProgram, observe: &mut dyn FnMut(&str, &KernelProgram)) -> Result<(), LowerError> {
    run_with(program, PassSet::NONE, observe)
}

/// [`run`] without the passes in `disabled` (`observe` does not see them).
///
/// # Errors
/// [`LowerError::Invalid`]: a pass broke an invariant of the loop IR (a compiler bug).
pub fn run_with(
    program: &mut KernelProgram,
    disabled: PassSet,
    observe: &mut dyn FnMut(&str, &KernelProgram),
) -> Result<(), LowerError> {
    verify_kernels(program, LOWER)?;
    observe(LOWER, program);
    let each = verify_each();
    let mut last = LOWER;
    for (i, pass) in PASSES.iter().enumerate() {
        if disabled.contains(i) {
            continue;
        }
        (pass.run)(program);
        last = pass.name;
        if each {
            verify_kernels(program, pass.name)?;
        }
        observe(pass.name, program);
    }
    if !each && last != LOWER {
        verify_kernels(program, last).map_err(|e| KernelVerifyError { or_earlier: true, ..e })?;
    }
    Ok(())
}

/// Whether the kernels are verified after every pass (naming the pass that broke them) rather
/// than after lowering and after the last pass only: in debug builds (every test) and with
/// `$STRATA_VERIFY_EACH=1`. A release build verifies twice per program, not once per pass:
/// every new size of a program runs the pipeline, and the verifier after each of its passes
/// took a quarter of a new size's cost (issue 50, item 3).
pub fn verify_each() -> bool {
    static EACH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *EACH.get_or_init(|| cfg!(debug_assertions) || std::env::var("STRATA_VERIFY_EACH").is_ok_and(|v| v == "1"))
}

/// Whether `name` is [`LOWER`] or a pass of [`PASSES`].
pub fn is_stage(name: &str) -> bool {
    name == LOWER || PASSES.iter().any(|p| p.name == name)
}
