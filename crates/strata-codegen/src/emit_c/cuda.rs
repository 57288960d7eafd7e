//! CUDA for a [`KernelProgram`] lowered for a GPU ([`crate::LowerOptions::gpu`]): one
//! `__global__` function per kernel, mapped onto threads as its GPU schedule says
//! ([`crate::schedule::Gpu`]), with the C printer's expressions, loads and stores — CUDA C++
//! accepts them with the CUDA prelude (`prelude.cu`), so a value is printed by one printer for
//! both targets. Each kernel takes the program's buffer table (device pointers, then the
//! extents array: the same layout as the C entry's `buf`) and a status word the threads raise to
//! the first error code they meet. Like the C, the text names no size: the extents are read
//! from the table, and the launch ([`launches`]) is sized at run time.

use super::*;
use crate::schedule::Gpu;

/// The CUDA prelude: the C prelude's types and helpers for device code.
const PRELUDE_CUDA: &str = include_str!("prelude.cu");

/// Why a program has no CUDA.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("kernel {kernel} of `@{entry}` ({comment}) does not run on a GPU yet: {why}")]
pub struct NotOnGpu {
    /// The entry.
    pub entry: String,
    /// Which kernel.
    pub kernel: usize,
    /// What it computes.
    pub comment: String,
    /// What the CUDA back end lacks.
    pub why: String,
}

/// One kernel's launch: its function's name, grid and block (x, y).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The `__global__` function.
    pub function: String,
    /// Blocks along x and y.
    pub grid: [u32; 2],
    /// Threads per block along x and y.
    pub block: [u32; 2],
}

/// `strata_kernel0<<<grid x, grid y, block x, block y>>>` as CUDA writes a launch.
impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ([gx, gy], [bx, by]) = (self.grid, self.block);
        write!(f, "{}<<<{gx}x{gy}, {bx}x{by}>>>", self.function)
    }
}

/// The GPU schedule of kernel `k` of a program lowered for a GPU ([`emit_cuda`] checks that it
/// was).
fn gpu_schedule(k: &Kernel) -> Gpu {
    schedule_of(k).gpu.expect("a program lowered for a GPU")
}

/// The launches running `program` (lowered for a GPU) at its sizes, in order: one per kernel, three for a
/// [`Gpu::Split`] sum (partial sums, their groups, the result).
pub fn launches(program: &KernelProgram) -> Vec<Launch> {
    use crate::schedule::{GPU_COMBINE, GPU_PARTS};
    let mut out = Vec::new();
    for (ki, k) in program.kernels.iter().enumerate() {
        let g = gpu_schedule(k);
        let function = format!("strata_kernel{ki}");
        if g == Gpu::Split {
            let block = 256;
            out.push(Launch { function: format!("{function}_parts"), grid: [GPU_PARTS / block, 1], block: [block, 1] });
            out.push(Launch { function: format!("{function}_combine"), grid: [1, 1], block: [GPU_COMBINE, 1] });
        }
        out.push(Launch { function, grid: g.grid(&k.domain), block: g.block() });
    }
    out
}

/// Whether `e` computes with complex scalars.
fn complex(e: &Rc<SExpr>) -> bool {
    fn part(p: crate::sym::Part, found: &mut bool) {
        if let crate::sym::Part::Expr(e) = p {
            *found |= match &**e {
                SExpr::Unary(_, _, s) | SExpr::Binary(_, _, _, s) | SExpr::Absent(s) => s.is_complex(),
                SExpr::Cast(_, from, to) => from.is_complex() || to.is_complex(),
                SExpr::Const(v) => v.scalar().is_complex(),
                SExpr::Reduce { scalar, .. } => scalar.is_complex(),
                _ => false,
            };
            crate::sym::for_each_part(e, &mut |q| part(q, found));
        }
    }
    let mut found = false;
    part(crate::sym::Part::Expr(e), &mut found);
    found
}

/// Whether kernel `k` of `program` has a CUDA form; why not, if not.
fn supported(program: &KernelProgram, k: &Kernel) -> Result<(), String> {
    // Every kernel declares every buffer.
    if program.buffers.iter().any(|b| b.scalar.is_complex()) || k.exprs().any(complex) {
        return Err("complex numbers".into());
    }
    // A fold over stored coordinates is a loop inside a thread; a domain level visiting them
    // would need its positions mapped onto the grid.
    if k.domain.iter().any(|l| k.sets.iter().any(|c| c.var == l.name)) {
        return Err("a domain level that visits stored sparse coordinates".into());
    }
    match &k.kind {
        KernelKind::Nest(n) if n.compressed.is_some() => Err("a sparse result written as storage".into()),
        KernelKind::Nest(n) if !n.windows.is_empty() => Err("rolling windows".into()),
        KernelKind::Nest(_) | KernelKind::Gemm(_) => Ok(()),
        KernelKind::Scan(s) if !s.chain.is_empty() || !s.local.is_empty() => Err("fused scans".into()),
        KernelKind::Scan(_) => Ok(()),
        KernelKind::Scatter(_) => Err("stores at data-dependent positions (scatter, compaction)".into()),
    }
}

/// The CUDA translation unit of `program` and the extents a run at its sizes passes.
///
/// # Errors
/// [`NotOnGpu`]: a kernel the CUDA back end cannot print yet.
pub fn emit_cuda(program: &KernelProgram) -> Result<(String, Vec<i64>), NotOnGpu> {
    for (ki, k) in program.kernels.iter().enumerate() {
        if program.gpu.is_none() || schedule_of(k).gpu.is_none() {
            return Err(NotOnGpu {
                entry: program.entry.clone(),
                kernel: ki,
                comment: k.comment.clone(),
                why: "the program was not lowered for a GPU (`LowerOptions::gpu`)".into(),
            });
        }
        supported(program, k).map_err(|why| NotOnGpu {
            entry: program.entry.clone(),
            kernel: ki,
            comment: k.comment.clone(),
            why,
        })?;
    }
    let mut out = format!("/* Generated by Strata from `@{}`, for a CUDA GPU. */\n", program.entry);
    out.push_str(PRELUDE_CUDA);
    let ((), extents) = Slots::scope(program.extents_per_site, || emit_kernels(&mut out, program));
    Ok((out, extents))
}

fn emit_kernels(out: &mut String, program: &KernelProgram) {
    buffers_comment(out, &format!("`@{}`", program.entry), program);
    // No reassociation: each thread folds in the interpreter's order (a split sum is
    // reassociated by its stages, not inside a thread).
    let schedule = Schedule::default();
    for (ki, k) in program.kernels.iter().enumerate() {
        let gpu = gpu_schedule(k);
        let em = Emitter {
            program,
            schedule: &schedule,
            local: None,
            sets: &k.sets,
            windows: &[],
            entries: Vec::new(),
            next_entry: Rc::default(),
            conditional_reads: Rc::default(),
        };
        let _ = writeln!(out, "\n/* kernel {ki}: {} — {gpu} */", k.comment);
        if let (Gpu::Split, Some(folds)) = (gpu, crate::schedule::gpu_split_folds(k)) {
            emit_split(out, &em, ki, k, &folds);
            continue;
        }
        function(out, &em, &format!("strata_kernel{ki}"), |body| {
            let mut indent = String::from("  ");
            let braces = open_grid(body, &k.domain, gpu, &mut indent);
            match &k.kind {
                KernelKind::Scan(sk) => {
                    // Arg-best folds run as their plain sequential updates (the C runs them in
                    // vector lanes): the same result.
                    let scan = ScanLoop { arg_best: None, ..sk.scan.clone() };
                    scan::emit_scan_stage(body, &em, &scan, &k.stores, None, &mut indent);
                }
                // A GEMM's stores are its meaning: each thread computes its points' dot products.
                _ => emit_stores(body, &em, &k.stores, &indent),
            }
            close_loops(body, &mut indent, braces);
        });
    }
}

/// One `__global__` function `name` over the program's buffer table: the extents it reads,
/// each thread's error flag (raised into the status word at the end), the buffer pointers,
/// then what `emit` prints.
fn function(out: &mut String, em: &Emitter, name: &str, emit: impl FnOnce(&mut String)) {
    let first_slot = Slots::count();
    let mut body = String::new();
    let _ = writeln!(body, "  int e_ = 0; int *err = &e_; (void)err;");
    buffer_pointers(&mut body, em);
    emit(&mut body);
    let _ = writeln!(body, "  if (e_) atomicMax(status_, e_);\n}}");
    let _ = writeln!(out, "extern \"C\" __global__ void {name}(void *const *buf, int *status_) {{");
    out.push_str(&extents::declarations(first_slot, em.program.buffers.len()));
    out.push_str(&body);
}

/// A [`Gpu::Split`] kernel: `strata_kernel{ki}_parts` computes each fold's partial sums over
/// the steps `p, p + GPU_PARTS, …` of its variables in row-major order (each thread steps its
/// coordinates by the digits of `GPU_PARTS`: no division per step), `…_combine` adds them in
/// `GPU_COMBINE` fixed groups, and `strata_kernel{ki}` adds the groups to each fold's initial
/// value in one thread and stores.
fn emit_split(out: &mut String, em: &Emitter, ki: usize, k: &Kernel, folds: &[Rc<SExpr>]) {
    use crate::schedule::{GPU_COMBINE, GPU_PARTS};
    let parts = |id: u32| format!("strata_parts{ki}_{id}");
    let groups = |id: u32| format!("strata_groups{ki}_{id}");
    for f in folds {
        let SExpr::Reduce { id, scalar, .. } = &**f else { unreachable!("hoisted folds") };
        let t = c_type(*scalar);
        let _ = writeln!(out, "static __device__ {t} {}[{GPU_PARTS}];", parts(*id));
        let _ = writeln!(out, "static __device__ {t} {}[{GPU_COMBINE}];", groups(*id));
    }
    function(out, em, &format!("strata_kernel{ki}_parts"), |body| {
        let _ = writeln!(
            body,
            "  for (int64_t p_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p_ < {GPU_PARTS}; p_ += (int64_t)gridDim.x * blockDim.x) {{"
        );
        for f in folds {
            let SExpr::Reduce { id, vars, scalar, body: step, .. } = &**f else { unreachable!("hoisted folds") };
            let lens: Vec<String> = vars.iter().map(|(_, iv)| ext(iv.len() as i64)).collect();
            let n = vars.len() - 1;
            let _ = writeln!(body, "    {} acc{id} = {};", c_type(*scalar), literal(Sv::zero(*scalar)));
            let _ = writeln!(body, "    const int64_t n{id}_ = {};", lens.join(" * "));
            let _ = writeln!(body, "    if (p_ < n{id}_) {{");
            // The coordinates of step p_, and the digits of GPU_PARTS, innermost first.
            let _ = writeln!(body, "      int64_t r_ = p_, s_ = {GPU_PARTS};");
            for i in (0..=n).rev() {
                match i {
                    0 => {
                        let _ = writeln!(body, "      int64_t c{i}_{id} = r_, s{i}_{id} = s_;");
                    }
                    _ => {
                        let l = &lens[i];
                        let _ = writeln!(
                            body,
                            "      int64_t c{i}_{id} = r_ % {l}, s{i}_{id} = s_ % {l}; r_ /= {l}; s_ /= {l};"
                        );
                    }
                }
            }
            let _ = writeln!(body, "      for (int64_t t_ = p_; t_ < n{id}_; t_ += {GPU_PARTS}) {{");
            for (i, (v, iv)) in vars.iter().enumerate() {
                let _ = writeln!(
                    body,
                    "        const int64_t {} = {};",
                    var(v.as_str()),
                    offset(&ext(iv.start), &format!("c{i}_{id}"))
                );
            }
            let _ = writeln!(body, "        {{ {} }}", em.fold_step(*id, step));
            // The next step, GPU_PARTS on: add the digits with carries (each digit stays
            // below its length, so a carry is 0 or 1).
            let _ = write!(body, "        int64_t k_ = 0;");
            for i in (1..=n).rev() {
                let l = &lens[i];
                let _ = write!(body, " c{i}_{id} += s{i}_{id} + k_; k_ = c{i}_{id} >= {l}; c{i}_{id} -= k_ * {l};");
            }
            let _ = writeln!(body, " c0_{id} += s0_{id} + k_;");
            let _ = writeln!(body, "      }}\n    }}\n    {}[p_] = acc{id};", parts(*id));
        }
        let _ = writeln!(body, "  }}");
    });
    function(out, em, &format!("strata_kernel{ki}_combine"), |body| {
        let _ = writeln!(
            body,
            "  for (int64_t g_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g_ < {GPU_COMBINE}; g_ += (int64_t)gridDim.x * blockDim.x) {{"
        );
        for f in folds {
            let SExpr::Reduce { id, scalar, .. } = &**f else { unreachable!("hoisted folds") };
            let sum = em.binary(BinaryOp::Plus, "a_", &format!("{}[g_ + {GPU_COMBINE} * r_]", parts(*id)), *scalar);
            let _ = writeln!(
                body,
                "    {{ {} a_ = {}[g_]; for (int64_t r_ = 1; r_ < {}; ++r_) a_ = {sum}; {}[g_] = a_; }}",
                c_type(*scalar),
                parts(*id),
                GPU_PARTS / GPU_COMBINE,
                groups(*id)
            );
        }
        let _ = writeln!(body, "  }}");
    });
    function(out, em, &format!("strata_kernel{ki}"), |body| {
        let mut indent = String::from("  ");
        let braces = open_grid(body, &[], Gpu::Single, &mut indent);
        let mut hoisted = Vec::new();
        let stores = hoisted_stores(k, &mut hoisted);
        for f in folds {
            let SExpr::Reduce { id, scalar, init, .. } = &**f else { unreachable!("hoisted folds") };
            let sum = em.binary(BinaryOp::Plus, &format!("acc{id}"), &format!("{}[g_]", groups(*id)), *scalar);
            let _ = writeln!(
                body,
                "{indent}{} acc{id} = {}; for (int64_t g_ = 0; g_ < {GPU_COMBINE}; ++g_) acc{id} = {sum};",
                c_type(*scalar),
                em.value(init)
            );
        }
        emit_stores(body, em, &stores, &indent);
        close_loops(body, &mut indent, braces);
    });
}

/// Opens the loops giving each thread its points of `domain` as `gpu` maps them (grid-stride
/// loops: x over the innermost level, y over the outer levels' points in row-major order,
/// decomposed into their coordinates); returns the braces to close.
fn open_grid(out: &mut String, domain: &[strata_ir::Level], gpu: Gpu, indent: &mut String) -> usize {
    let Some((inner, outer)) = domain.split_last() else {
        let _ =
            writeln!(out, "{indent}if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {{");
        indent.push_str("  ");
        return 1;
    };
    debug_assert!(!matches!(gpu, Gpu::Single));
    let mut braces = 0;
    if !outer.is_empty() {
        let lens: Vec<String> = outer.iter().map(|l| ext(l.interval.len() as i64)).collect();
        let _ = writeln!(out, "{indent}const int64_t rows_ = {};", lens.join(" * "));
        let _ = writeln!(
            out,
            "{indent}for (int64_t row_ = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; row_ < rows_; row_ += (int64_t)gridDim.y * blockDim.y) {{"
        );
        indent.push_str("  ");
        braces += 1;
        let _ = writeln!(out, "{indent}int64_t r_ = row_;");
        for (i, l) in outer.iter().enumerate().rev() {
            let d = var(l.name.as_str());
            let start = ext(l.interval.start);
            if i == 0 {
                let _ = writeln!(out, "{indent}const int64_t {d} = {};  /* {} */", offset(&start, "r_"), l.name);
            } else {
                let len = ext(l.interval.len() as i64);
                let _ = writeln!(
                    out,
                    "{indent}const int64_t {d} = {}; r_ /= {len};  /* {} */",
                    offset(&start, &format!("r_ % {len}")),
                    l.name
                );
            }
        }
    } else {
        let _ = writeln!(out, "{indent}if (blockIdx.y == 0 && threadIdx.y == 0) {{");
        indent.push_str("  ");
        braces += 1;
    }
    let d = var(inner.name.as_str());
    let _ = writeln!(
        out,
        "{indent}for (int64_t {d} = {}; {d} < {}; {d} += (int64_t)gridDim.x * blockDim.x) {{  /* {} */",
        offset(&ext(inner.interval.start), "(int64_t)blockIdx.x * blockDim.x + threadIdx.x"),
        ext(inner.interval.stop),
        inner.name
    );
    indent.push_str("  ");
    braces + 1
}

/// `start + at` (C text), `at` alone where the start prints as `0`.
fn offset(start: &str, at: &str) -> String {
    match start {
        "0" => at.to_string(),
        s => format!("{s} + {at}"),
    }
}
