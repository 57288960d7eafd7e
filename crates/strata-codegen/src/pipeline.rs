//! The pass pipeline over the loop-level IR: every pass has one signature (it rewrites a
//! [`KernelProgram`] in place), a name, and a line saying what it does; [`PASSES`] lists them in
//! the order they run after lowering. The kernel-IR verifier ([`verify_kernels`]) runs after
//! lowering and after every pass; `strata lower --passes` lists them and `--print-after NAME`
//! prints the kernel program after one.

use crate::kernel::{KernelKind, KernelProgram};
use crate::kernel_passes::{forward_scan_results, fuse_adjacent, fuse_scans, overwritten_first};
use crate::lower::LowerError;
use crate::verify_kernels::verify_kernels;

/// A pass over the loop-level IR.
pub struct Pass {
    /// Its name (`--print-after NAME`).
    pub name: &'static str,
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
        summary: "runs a kernel whose stores choose by comparing a loop variable with a constant (a concatenation's pieces) as one kernel per piece",
        run: |p| p.kernels = crate::split::split_pieces(std::mem::take(&mut p.kernels)),
    },
    Pass {
        name: "simplify",
        summary: "folds constants and drops select branches a kernel's loop ranges decide",
        run: simplify,
    },
    Pass {
        name: "materialize-invariant-reductions",
        summary: "computes a reduction recomputed along a loop it does not depend on once, in a kernel of its own",
        run: |p| {
            let kernels = std::mem::take(&mut p.kernels);
            p.kernels = crate::invariant::materialize_invariant_reductions(kernels, &mut p.buffers);
        },
    },
    Pass {
        name: "forward-scan-results",
        summary: "a scan whose result a program only copies into an `out` parameter writes it there",
        run: |p| p.kernels = forward_scan_results(std::mem::take(&mut p.kernels), &p.buffers),
    },
    Pass {
        name: "fuse-scans",
        summary: "runs a scan and the next one over the same dimension reading it pointwise per strip",
        run: |p| p.kernels = fuse_scans(std::mem::take(&mut p.kernels), &p.buffers),
    },
    Pass {
        name: "fuse-adjacent",
        summary: "consecutive kernels over one domain that do not read each other's outputs share a loop",
        run: |p| p.kernels = fuse_adjacent(std::mem::take(&mut p.kernels)),
    },
    Pass {
        name: "mark-overwritten",
        summary: "marks buffers written whole before any read (no copy of the caller's data)",
        run: |p| {
            for b in 0..p.buffers.len() {
                p.buffers[b].overwritten = overwritten_first(&p.kernels, b, &p.buffers[b].levels);
            }
        },
    },
    Pass {
        name: "recognize-matmul",
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
        summary: "loops over stored sparse coordinates where the fill algebra proves no value changes",
        run: crate::sparse::coiterate,
    },
    Pass {
        name: "gustavson",
        summary: "sparse results (SpGEMM) accumulate each row in a dense workspace",
        run: crate::workspace::gustavson,
    },
    Pass {
        name: "stage-windows",
        summary: "values read at several offsets are computed once into rolling windows of planes",
        run: crate::stage::stage_windows,
    },
    Pass {
        name: "unify-fold-vars",
        summary: "sibling folds over the same ranges bind the same loop variables (so they can share a loop)",
        run: crate::unify_folds::unify_fold_vars,
    },
    Pass {
        name: "schedule",
        summary: "decides how each kernel's loops run: threads, layout, reassociated sums, streamed stores",
        run: crate::schedule::schedule,
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

/// Runs every pass over `program` (as lowering left it), verifying the kernels after each;
/// `observe` sees the program after lowering (as [`LOWER`]) and after each pass.
///
/// # Errors
/// [`LowerError::Invalid`]: a pass broke an invariant of the loop IR (a compiler bug).
pub fn run(program: &mut KernelProgram, observe: &mut dyn FnMut(&str, &KernelProgram)) -> Result<(), LowerError> {
    verify_kernels(&program.buffers, &program.kernels, LOWER)?;
    observe(LOWER, program);
    for pass in PASSES {
        (pass.run)(program);
        verify_kernels(&program.buffers, &program.kernels, pass.name)?;
        observe(pass.name, program);
    }
    Ok(())
}

/// Whether `name` is [`LOWER`] or a pass of [`PASSES`].
pub fn is_stage(name: &str) -> bool {
    name == LOWER || PASSES.iter().any(|p| p.name == name)
}
