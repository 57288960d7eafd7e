//! CUDA for a [`KernelProgram`] lowered for a GPU ([`crate::LowerOptions::gpu`]): one
//! `__global__` function per kernel, mapped onto threads as its GPU schedule says
//! ([`crate::schedule::Gpu`]), with the C printer's expressions, loads and stores — CUDA C++
//! accepts them with the CUDA prelude (`prelude.cu`), so a value is printed by one printer for
//! both targets. Each kernel takes the program's buffer table (device pointers, then the
//! extents array: the same layout as the C entry's `buf`) and a status word the threads raise to
//! the first error code they meet. Like the C, the text names no size: the extents are read
//! from the table, and the launch ([`launches`]) is sized at run time.

use super::*;
use crate::folds::hoisted_folds;
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
    /// Scratch memory the launch uses, in bytes: the buffer table's entry after the extents
    /// (the run allocates the largest any launch needs).
    pub scratch: u64,
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
    use crate::schedule::{GPU_COMBINE, GPU_LANES, GPU_PARTS};
    let mut out = Vec::new();
    for (ki, k) in program.kernels.iter().enumerate() {
        let g = gpu_schedule(k);
        let function = format!("strata_kernel{ki}");
        let launch =
            |function: String, grid: [u32; 2], block: [u32; 2], scratch: u64| Launch { function, grid, block, scratch };
        match g {
            Gpu::Split => {
                out.push(launch(format!("{function}_parts"), [GPU_PARTS / 256, 1], [256, 1], 0));
                out.push(launch(format!("{function}_combine"), [1, 1], [GPU_COMBINE, 1], 0));
            }
            Gpu::Lanes { .. } => {
                let scratch = lanes_scratch(&k.domain, hoisted_folds(k).len());
                let threads = k.domain.iter().map(|l| l.interval.len()).product::<u64>() * u64::from(GPU_LANES);
                let grid = threads.div_ceil(256).clamp(1, (1 << 31) - 1) as u32;
                out.push(launch(format!("{function}_lanes"), [grid, 1], [256, 1], scratch));
                out.push(launch(function, g.grid(&k.domain), g.block(), scratch));
                continue;
            }
            _ => {}
        }
        out.push(launch(function, g.grid(&k.domain), g.block(), 0));
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
            // A GPU kernel checks every entry it reads itself.
            prechecked: Rc::from([]),
            conditional_reads: Rc::default(),
        };
        let _ = writeln!(out, "\n/* kernel {ki}: {} — {gpu} */", k.comment);
        // The `gpu-sums` pass chose these schedules for kernels whose folds are all sums.
        match gpu {
            Gpu::Split => {
                emit_split(out, &em, ki, k, &hoisted_folds(k));
                continue;
            }
            Gpu::Lanes { .. } => {
                emit_lanes(out, &em, ki, k, &hoisted_folds(k), gpu);
                continue;
            }
            _ => {}
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

/// Fold `f` (a sum) over the steps `part, part + stride, …` of its variables in row-major
/// order into `acc{id}` (from zero), at `indent`: each thread steps its coordinates by the
/// digits of `stride` in the radix of the variables' lengths (no division per step).
fn strided_fold(body: &mut String, em: &Emitter, f: &Rc<SExpr>, part: &str, stride: u32, indent: &str) {
    let SExpr::Reduce { id, vars, scalar, body: step, .. } = &**f else { unreachable!("hoisted folds") };
    let lens: Vec<String> = vars.iter().map(|(_, iv)| ext(iv.len() as i64)).collect();
    let n = vars.len() - 1;
    let _ = writeln!(body, "{indent}{} acc{id} = {};", c_type(*scalar), literal(Sv::zero(*scalar)));
    let _ = writeln!(body, "{indent}const int64_t n{id}_ = {};", lens.join(" * "));
    let _ = writeln!(body, "{indent}if ({part} < n{id}_) {{");
    // The coordinates of step `part`, and the digits of the stride, innermost first.
    let _ = writeln!(body, "{indent}  int64_t r_ = {part}, s_ = {stride};");
    for i in (0..=n).rev() {
        let _ = match i {
            0 => writeln!(body, "{indent}  int64_t c{i}_{id} = r_, s{i}_{id} = s_;"),
            _ => {
                let l = &lens[i];
                writeln!(body, "{indent}  int64_t c{i}_{id} = r_ % {l}, s{i}_{id} = s_ % {l}; r_ /= {l}; s_ /= {l};")
            }
        };
    }
    let _ = writeln!(body, "{indent}  for (int64_t t_ = {part}; t_ < n{id}_; t_ += {stride}) {{");
    for (i, (v, iv)) in vars.iter().enumerate() {
        let at = offset(&ext(iv.start), &format!("c{i}_{id}"));
        let _ = writeln!(body, "{indent}    const int64_t {} = {at};", var(v.as_str()));
    }
    let _ = writeln!(body, "{indent}    {{ {} }}", em.fold_step(*id, step));
    // The next step: add the stride's digits with carries (each digit stays below its
    // length, so a carry is 0 or 1).
    let _ = write!(body, "{indent}    int64_t k_ = 0;");
    for i in (1..=n).rev() {
        let l = &lens[i];
        let _ = write!(body, " c{i}_{id} += s{i}_{id} + k_; k_ = c{i}_{id} >= {l}; c{i}_{id} -= k_ * {l};");
    }
    let _ = writeln!(body, " c0_{id} += s0_{id} + k_;");
    let _ = writeln!(body, "{indent}  }}\n{indent}}}");
}

/// The type, id and initial value of hoisted fold `f`.
fn fold_parts(f: &Rc<SExpr>) -> (Scalar, u32, &Rc<SExpr>) {
    let SExpr::Reduce { id, scalar, init, .. } = &**f else { unreachable!("hoisted folds") };
    (*scalar, *id, init)
}

/// A [`Gpu::Split`] kernel: `strata_kernel{ki}_parts` computes each fold's partial sums over
/// the steps `p, p + GPU_PARTS, …` ([`strided_fold`]), `…_combine` adds them in
/// `GPU_COMBINE` fixed groups, and `strata_kernel{ki}` adds the groups to each fold's initial
/// value in one thread and stores.
fn emit_split(out: &mut String, em: &Emitter, ki: usize, k: &Kernel, folds: &[Rc<SExpr>]) {
    use crate::schedule::{GPU_COMBINE, GPU_PARTS};
    let parts = |id: u32| format!("strata_parts{ki}_{id}");
    let groups = |id: u32| format!("strata_groups{ki}_{id}");
    for f in folds {
        let (scalar, id, _) = fold_parts(f);
        let t = c_type(scalar);
        let _ = writeln!(out, "static __device__ {t} {}[{GPU_PARTS}];", parts(id));
        let _ = writeln!(out, "static __device__ {t} {}[{GPU_COMBINE}];", groups(id));
    }
    function(out, em, &format!("strata_kernel{ki}_parts"), |body| {
        let _ = writeln!(
            body,
            "  for (int64_t p_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p_ < {GPU_PARTS}; p_ += (int64_t)gridDim.x * blockDim.x) {{"
        );
        for f in folds {
            strided_fold(body, em, f, "p_", GPU_PARTS, "    ");
            let (_, id, _) = fold_parts(f);
            let _ = writeln!(body, "    {}[p_] = acc{id};", parts(id));
        }
        let _ = writeln!(body, "  }}");
    });
    function(out, em, &format!("strata_kernel{ki}_combine"), |body| {
        let _ = writeln!(
            body,
            "  for (int64_t g_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g_ < {GPU_COMBINE}; g_ += (int64_t)gridDim.x * blockDim.x) {{"
        );
        for f in folds {
            let (scalar, id, _) = fold_parts(f);
            let sum = em.binary(BinaryOp::Plus, "a_", &format!("{}[g_ + {GPU_COMBINE} * r_]", parts(id)), scalar);
            let _ = writeln!(
                body,
                "    {{ {} a_ = {}[g_]; for (int64_t r_ = 1; r_ < {}; ++r_) a_ = {sum}; {}[g_] = a_; }}",
                c_type(scalar),
                parts(id),
                GPU_PARTS / GPU_COMBINE,
                groups(id)
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
            let (scalar, id, init) = fold_parts(f);
            let sum = em.binary(BinaryOp::Plus, &format!("acc{id}"), &format!("{}[g_]", groups(id)), scalar);
            let _ = writeln!(
                body,
                "{indent}{} acc{id} = {}; for (int64_t g_ = 0; g_ < {GPU_COMBINE}; ++g_) acc{id} = {sum};",
                c_type(scalar),
                em.value(init)
            );
        }
        emit_stores(body, em, &stores, &indent);
        close_loops(body, &mut indent, braces);
    });
}

/// The scratch memory a [`Gpu::Lanes`] kernel over `domain` with `folds` folds needs: 8 bytes
/// per lane, point and fold.
fn lanes_scratch(domain: &[strata_ir::Level], folds: usize) -> u64 {
    let points: u64 = domain.iter().map(|l| l.interval.len()).product();
    points * u64::from(crate::schedule::GPU_LANES) * folds as u64 * 8
}

/// A [`Gpu::Lanes`] kernel: `strata_kernel{ki}_lanes` runs [`GPU_LANES`] threads per point,
/// lane `l` summing each fold's steps `l, l + GPU_LANES, …` ([`strided_fold`]) into the
/// scratch memory (the buffer table's entry after the extents: fold `j`'s sums at
/// `[j][point][lane]`); `strata_kernel{ki}` then adds, per point, its lanes' sums in lane
/// order to each fold's initial value and stores.
///
/// [`GPU_LANES`]: crate::schedule::GPU_LANES
fn emit_lanes(out: &mut String, em: &Emitter, ki: usize, k: &Kernel, folds: &[Rc<SExpr>], gpu: Gpu) {
    use crate::schedule::GPU_LANES;
    let scratch = format!("unsigned char *scratch_ = (unsigned char *)buf[{}];", em.program.buffers.len() + 1);
    let lens: Vec<String> = k.domain.iter().map(|l| ext(l.interval.len() as i64)).collect();
    let points = format!("const int64_t points_ = {};", lens.join(" * "));
    let slot = |j: usize, t: &str, lane: &str| {
        format!("(({t} *)(scratch_ + (int64_t){j} * points_ * {GPU_LANES} * 8))[pt_ * {GPU_LANES} + {lane}]")
    };
    function(out, em, &format!("strata_kernel{ki}_lanes"), |body| {
        let _ = writeln!(body, "  {scratch}\n  {points}");
        let _ = writeln!(
            body,
            "  for (int64_t g_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g_ < points_ * {GPU_LANES}; g_ += (int64_t)gridDim.x * blockDim.x) {{"
        );
        let _ = writeln!(
            body,
            "    const int64_t lane_ = g_ % {GPU_LANES}, pt_ = g_ / {GPU_LANES};\n    int64_t q_ = pt_;"
        );
        for (i, l) in k.domain.iter().enumerate().rev() {
            let d = var(l.name.as_str());
            let start = ext(l.interval.start);
            let _ = match i {
                0 => writeln!(body, "    const int64_t {d} = {};  /* {} */", offset(&start, "q_"), l.name),
                _ => writeln!(
                    body,
                    "    const int64_t {d} = {}; q_ /= {};  /* {} */",
                    offset(&start, &format!("q_ % {}", lens[i])),
                    lens[i],
                    l.name
                ),
            };
        }
        for (j, f) in folds.iter().enumerate() {
            strided_fold(body, em, f, "lane_", GPU_LANES, "    ");
            let (scalar, id, _) = fold_parts(f);
            let _ = writeln!(body, "    {} = acc{id};", slot(j, c_type(scalar), "lane_"));
        }
        let _ = writeln!(body, "  }}");
    });
    function(out, em, &format!("strata_kernel{ki}"), |body| {
        let _ = writeln!(body, "  {scratch}\n  {points}");
        let mut indent = String::from("  ");
        let braces = open_grid(body, &k.domain, gpu, &mut indent);
        // The point's row-major number among the domain's points.
        let pt = row_major(&k.domain, |_, l| var(l.name.as_str()));
        let _ = writeln!(body, "{indent}const int64_t pt_ = {pt};");
        let mut hoisted = Vec::new();
        let stores = hoisted_stores(k, &mut hoisted);
        for (j, f) in folds.iter().enumerate() {
            let (scalar, id, init) = fold_parts(f);
            let t = c_type(scalar);
            let sum = em.binary(BinaryOp::Plus, &format!("acc{id}"), &slot(j, t, "l_"), scalar);
            let _ = writeln!(
                body,
                "{indent}{t} acc{id} = {}; for (int64_t l_ = 0; l_ < {GPU_LANES}; ++l_) acc{id} = {sum};",
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
