//! The `schedule` pass: how each kernel's loops run, decided once per kernel and recorded as
//! data ([`Schedule`] in `Kernel::schedule`), after every rewrite of the kernel program. C
//! emission prints what the schedule says and decides nothing itself; `strata lower
//! --print-after schedule` shows the decisions.
//!
//! The decisions: whether the outermost loop is shared among threads (enough work to pay for
//! a parallel region), which floating-point folds may sum in any order (partial sums in vector
//! lanes), how a plain nest is laid out (per point, sibling folds sharing a loop, or strips of
//! the innermost level with a row of accumulators per fold), and whether a windowed kernel's
//! rows go to memory as streaming stores.

use std::rc::Rc;

use strata_ir::{BinaryOp, Scalar};

use crate::kernel::{Kernel, KernelKind, KernelProgram};
use crate::sym::{Part, SExpr};

/// The least work (points times the longest fold's steps) worth starting threads for: a
/// parallel region costs microseconds, which a small elementwise kernel does not amortize.
pub const PARALLEL_MIN: i64 = 1 << 15;

/// The shortest fold (all its variables' steps together) whose floating-point sum may be
/// reassociated.
pub const REASSOCIATE_MIN: i64 = 64;

/// The shortest innermost loop that keeps a reassociated sum in vector lanes: each pass of it
/// starts and ends its partial sums, which shorter rows do not amortize (measured, a sum of
/// 10^5 doubles in rows of 8 ran at the sequential sum's speed, in rows of 16 twice as fast,
/// in rows of 50 six times).
pub const REASSOCIATE_ROW_MIN: i64 = 16;

/// Folds shorter than this run per point rather than in strips.
const SHORT_FOLD: i64 = 16;

/// Longest row of one store a windowed kernel computes in cache before streaming it out.
pub const STREAM_ROW_BYTES: i64 = 4096;

/// A kernel's schedule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    /// The kernel's work estimate (points times the longest fold's steps): the outermost loop
    /// is shared among threads when it reaches [`PARALLEL_MIN`] ([`Self::parallel`]). The
    /// generated code compares it at run time, as an extent, so one compiled kernel serves
    /// small and large sizes.
    pub work: i64,
    /// Folds (by accumulator id) whose floating-point sums may run in any order: the C
    /// compiler keeps partial sums in vector lanes (see [`reassociable`]).
    pub reassociate: Vec<u32>,
    /// How a plain nest's loops are laid out.
    pub layout: Layout,
    /// A windowed kernel writes its rows as streaming stores: rows that fit whole 64-byte
    /// lines of at most [`STREAM_ROW_BYTES`], results at least the size of the cache.
    pub stream: bool,
    /// Points per strip of the innermost level under [`Layout::Strips`] (0: none).
    pub strip: i64,
    /// How the kernel runs on a GPU, for a program lowered for one
    /// ([`crate::LowerOptions::gpu`]); the CPU fields above then do not apply.
    pub gpu: Option<Gpu>,
}

/// How a kernel maps onto a GPU's threads: what the CUDA printer (`emit_c::cuda`) follows and
/// the run launches. Each thread computes whole points — every fold at a point runs in one
/// thread in the interpreter's order, so results are the CPU's bit for bit except where the
/// GPU's math library rounds differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gpu {
    /// Thread blocks of `block[0]` × `block[1]` threads: threads along x step the innermost
    /// domain level (neighboring threads, neighboring addresses: coalesced), threads along y
    /// the points of the outer levels (row-major); grid-stride loops cover any size.
    Grid {
        /// Threads along x and along y per block.
        block: [u32; 2],
    },
    /// A scan: one thread per point of the domain (grid as [`Gpu::Grid`]), running the scanned
    /// dimension sequentially.
    Columns {
        /// Threads along x and along y per block.
        block: [u32; 2],
    },
    /// A kernel whose points each fold long rows contiguous in memory (row sums, a dense
    /// matrix–vector product; [`gpu_lane_folds`]): each point's folds first run as
    /// [`GPU_LANES`] partial sums by neighbouring threads (lane `l` steps `l, l + 32, …`: a
    /// warp reads neighbouring elements of the row) into scratch memory, then a thread per
    /// point (blocks as [`Gpu::Grid`]) adds its lanes' sums, in lane order, to each fold's
    /// initial value and stores. The grouping is fixed, so every run gives the same bits;
    /// float sums are reassociated (the schedule's `reassociate` names them).
    Lanes {
        /// Threads along x and along y per block of the per-point stage.
        block: [u32; 2],
    },
    /// One thread: a kernel without domain levels (a whole reduction, a scalar).
    Single,
    /// A kernel without domain levels whose folds are long sums ([`gpu_split_folds`]): each
    /// fold runs as [`GPU_PARTS`] partial sums over the fold's steps `p, p + GPU_PARTS, …`
    /// (neighbouring threads, neighbouring steps), [`GPU_COMBINE`] threads then add those in
    /// fixed groups, and one thread adds their results to the fold's initial value and stores.
    /// The grouping is fixed, so every run gives the same bits; float sums are reassociated
    /// (the schedule's `reassociate` names them).
    Split,
}

/// Lanes per point of a [`Gpu::Lanes`] kernel: one warp.
pub const GPU_LANES: u32 = 32;

/// The fewest steps of a fold worth [`Gpu::Lanes`].
pub const GPU_LANES_MIN: i64 = 256;

/// The folds of a kernel with domain levels that a GPU runs as [`Gpu::Lanes`]: every fold its
/// stores always evaluate, when each is a sum (`acc + x`, of its own type) of at least
/// [`GPU_LANES_MIN`] steps along rows contiguous in memory (`folds::contiguous_fold`) that
/// reads no other fold's accumulator; `None` when any is not.
pub fn gpu_lane_folds(k: &Kernel) -> Option<Vec<Rc<SExpr>>> {
    if k.domain.is_empty() {
        return None;
    }
    gpu_sums(k, GPU_LANES_MIN, &|f| crate::folds::contiguous_fold(f))
}

/// Every fold kernel `k`'s stores always evaluate, when the kernel is a plain nest and each
/// fold is a sum (`acc + x`, of its own type) of at least `min` steps that reads no other
/// fold's accumulator and meets `also`; `None` when any is not.
fn gpu_sums(k: &Kernel, min: i64, also: &dyn Fn(&Rc<SExpr>) -> bool) -> Option<Vec<Rc<SExpr>>> {
    if !k.sets.is_empty() || !matches!(k.kind, KernelKind::Nest(_)) {
        return None;
    }
    let folds = crate::folds::hoisted_folds(k);
    let ids: Vec<u32> =
        folds.iter().filter_map(|f| if let SExpr::Reduce { id, .. } = &**f { Some(*id) } else { None }).collect();
    let sums = |f: &Rc<SExpr>| {
        let SExpr::Reduce { id, vars, scalar, body, .. } = &**f else { return false };
        let steps: i64 = vars.iter().map(|(_, i)| i.len() as i64).product();
        let others = ids.iter().any(|&o| o != *id && crate::sym::reads_acc(body, o));
        !vars.is_empty() && !others && steps >= min && sum_term(body, *id).is_some_and(|(_, s)| s == *scalar) && also(f)
    };
    (!folds.is_empty() && folds.iter().all(sums)).then_some(folds)
}

/// Partial sums of a [`Gpu::Split`] fold: enough threads in flight to stream memory.
pub const GPU_PARTS: u32 = 1 << 16;

/// Threads combining a [`Gpu::Split`] fold's partial sums, each [`GPU_PARTS`] / this many.
pub const GPU_COMBINE: u32 = 256;

/// The fewest steps of a fold worth a [`Gpu::Split`].
pub const GPU_SPLIT_MIN: i64 = 1 << 14;

/// The folds of a kernel without domain levels that a GPU runs as [`Gpu::Split`] sums: every
/// fold its stores always evaluate, when each is a sum (`acc + x`, of its own type) of at
/// least [`GPU_SPLIT_MIN`] steps that reads no other fold's accumulator; `None` when any is
/// not.
pub fn gpu_split_folds(k: &Kernel) -> Option<Vec<Rc<SExpr>>> {
    if !k.domain.is_empty() {
        return None;
    }
    gpu_sums(k, GPU_SPLIT_MIN, &|_| true)
}

/// Threads per GPU block: 256, a multiple of the 32-thread warp that leaves several blocks
/// resident per multiprocessor.
pub const GPU_BLOCK: u32 = 256;

impl Gpu {
    /// Threads per block along x and y.
    pub fn block(self) -> [u32; 2] {
        match self {
            Gpu::Grid { block } | Gpu::Columns { block } | Gpu::Lanes { block } => block,
            Gpu::Single | Gpu::Split => [1, 1],
        }
    }

    /// The grid for `domain` (extents at this run's size): blocks along x cover the innermost
    /// level, along y the outer levels' points (at most 65,535: threads then stride).
    pub fn grid(self, domain: &[strata_ir::Level]) -> [u32; 2] {
        let [bx, by] = self.block();
        let Some((inner, outer)) = domain.split_last() else { return [1, 1] };
        let rows: u64 = outer.iter().map(|l| l.interval.len()).product();
        let x = inner.interval.len().div_ceil(u64::from(bx)).clamp(1, (1 << 31) - 1);
        let y = rows.div_ceil(u64::from(by)).clamp(1, 65_535);
        [x as u32, y as u32]
    }
}

impl std::fmt::Display for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gpu::Grid { block: [x, y] } => {
                write!(f, "gpu: blocks of {x}x{y} threads, x along the innermost level, y over the outer points")
            }
            Gpu::Columns { block: [x, y] } => {
                write!(f, "gpu: one thread per column ({x}x{y} per block), the scanned dimension in order")
            }
            Gpu::Lanes { block: [x, y] } => write!(
                f,
                "gpu: each point's sums as {GPU_LANES} lanes' partial sums, then a thread per point ({x}x{y} per block) adds them"
            ),
            Gpu::Single => write!(f, "gpu: one thread"),
            Gpu::Split => write!(
                f,
                "gpu: each sum as {GPU_PARTS} partial sums, added in {GPU_COMBINE} groups, then by one thread"
            ),
        }
    }
}

/// The GPU schedule of kernel `k`: a block as wide as the innermost level (a power of two from
/// one warp to [`GPU_BLOCK`]; all of it for a single level), as tall as the rest of
/// [`GPU_BLOCK`] threads.
fn decide_gpu(k: &Kernel) -> Gpu {
    let Some(inner) = k.domain.last() else { return Gpu::Single };
    // A single level has no outer points: the whole block runs along it.
    let x = match k.domain.len() {
        1 => GPU_BLOCK,
        _ => (inner.interval.len().max(1).next_power_of_two() as u32).clamp(32, GPU_BLOCK),
    };
    let block = [x, GPU_BLOCK / x];
    match k.kind {
        KernelKind::Scan(_) => Gpu::Columns { block },
        _ => Gpu::Grid { block },
    }
}

/// The `gpu-sums` pass (after `schedule`, GPU programs only): a kernel without domain levels
/// whose folds are long sums runs them split ([`Gpu::Split`]), a nest whose points fold long
/// contiguous rows runs them in lanes ([`Gpu::Lanes`]); their float sums are then reassociated.
/// Without it each fold runs in one thread in the interpreter's order.
pub fn gpu_sums_pass(p: &mut KernelProgram) {
    if p.gpu.is_none() {
        return;
    }
    for k in &mut p.kernels {
        let (gpu, folds) = match k.schedule.as_ref().and_then(|s| s.gpu) {
            Some(Gpu::Single) => (Gpu::Split, gpu_split_folds(k)),
            Some(Gpu::Grid { block }) => (Gpu::Lanes { block }, gpu_lane_folds(k)),
            _ => continue,
        };
        let (Some(folds), Some(s)) = (folds, k.schedule.as_mut()) else { continue };
        s.gpu = Some(gpu);
        s.reassociate = folds
            .iter()
            .filter_map(|f| match &**f {
                SExpr::Reduce { id, scalar, .. } if scalar.is_float() => Some(*id),
                _ => None,
            })
            .collect();
    }
}

/// The loop layout of a nest without sets, windows or a sparse result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// One loop per domain level, every fold evaluated at each point.
    #[default]
    PerPoint,
    /// As `PerPoint`, and folds over the same variables (the x and y sums of a nabla over one
    /// neighbor table) share one loop: their table reads and checks happen once per step.
    SharedFolds,
    /// The innermost level strip-mined: each always-evaluated fold keeps a row of
    /// accumulators, so the fold loops run outside the innermost loop, which vectorizes; every
    /// point still folds in the same order (contractions, and folds reading crosswise: see
    /// [`crate::fold_strips`], whose sibling folds share each strip's loop).
    Strips,
    /// As `PerPoint`, with the innermost level's points in groups of [`JAM`]: one fold loop
    /// steps the folds of the group's points together, each with its own accumulators. For
    /// folds that sum contiguous rows in vector lanes (a matrix–vector product, row sums),
    /// [`JAM`] rows stream from memory at once and an operand the rows share (the vector) is
    /// loaded once per step; for folds over a sparse row the points share (a CSR matrix times
    /// a dense one), the row's stored entries are walked once per group. Each point folds
    /// exactly as alone. Chosen by the `jam-rows` pass ([`crate::jam_rows`]).
    JammedRows,
}

/// Points of the innermost level whose folds step together under [`Layout::JammedRows`]:
/// four rows streamed at once reach 1.8x the bandwidth of one (a 4096^2 matrix–vector product
/// on this machine, one thread and two, standalone C).
pub const JAM: i64 = 4;

impl Schedule {
    /// Whether the outermost loop is shared among threads at this size.
    pub fn parallel(&self) -> bool {
        self.work >= PARALLEL_MIN
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(g) = &self.gpu {
            return write!(f, "{g}");
        }
        write!(f, "{}", if self.parallel() { "parallel" } else { "one thread" })?;
        match self.layout {
            Layout::PerPoint => {}
            Layout::SharedFolds => write!(f, ", sibling folds share loops")?,
            Layout::Strips if self.strip == crate::emit_c::STRIP => write!(f, ", strips of the innermost level")?,
            Layout::Strips => write!(f, ", strips of {} points of the innermost level", self.strip)?,
            Layout::JammedRows => write!(f, ", innermost points in groups of {JAM}")?,
        }
        if !self.reassociate.is_empty() {
            let ids: Vec<String> = self.reassociate.iter().map(|id| format!("acc{id}")).collect();
            write!(f, ", reassociates {}", ids.join(" "))?;
        }
        if self.stream {
            write!(f, ", streams its rows")?;
        }
        Ok(())
    }
}

/// The pass: every kernel's schedule.
pub fn schedule(p: &mut KernelProgram) {
    let schedules: Vec<Schedule> = p.kernels.iter().map(|k| decide(p, k)).collect();
    for (k, s) in p.kernels.iter_mut().zip(schedules) {
        k.schedule = Some(s);
    }
}

/// The schedule of kernel `k` of `p`.
pub fn decide(p: &KernelProgram, k: &Kernel) -> Schedule {
    if p.gpu.is_some() {
        // Each thread folds in the interpreter's order (`gpu-sums` may split long sums after).
        return Schedule { work: work(k), gpu: Some(decide_gpu(k)), ..Schedule::default() };
    }
    let mut reassociate = Vec::new();
    for e in k.exprs() {
        collect_reassociable(e, &mut reassociate);
    }
    reassociate.sort_unstable();
    reassociate.dedup();
    let mut s = Schedule { work: work(k), reassociate, ..Schedule::default() };
    // A sparse result's two passes and loops over stored coordinates have a fixed shape;
    // windowed nests may stream; plain nests choose a layout.
    if let KernelKind::Nest(n) = &k.kind {
        match (n.compressed.is_some(), !n.windows.is_empty(), !k.sets.is_empty()) {
            (false, true, _) => s.stream = streams(p, k),
            (false, false, false) => {
                s.layout = layout(p, k, &s);
                if s.layout == Layout::Strips {
                    s.strip = strip_length(k, n.fold_strips);
                }
            }
            _ => {}
        }
    }
    s
}

fn collect_reassociable(e: &Rc<SExpr>, out: &mut Vec<u32>) {
    if let SExpr::Reduce { id, .. } = &**e {
        if reassociable(e) {
            out.push(*id);
        }
    }
    crate::sym::for_each_part(e, &mut |q| {
        if let Part::Expr(x) = q {
            collect_reassociable(x, out);
        }
    });
}

/// What interpreting a program costs, roughly, in units of about 40 ns (measured on an
/// elementwise chain): each kernel's work (points times the steps of its longest fold or scan)
/// times its distinct expression nodes, summed — the interpreter evaluates operation by
/// operation, each over every point. What deciding whether a run is small enough to
/// interpret needs.
pub fn interpret_cost(program: &KernelProgram) -> i64 {
    program.kernels.iter().fold(0i64, |sum, k| sum.saturating_add(work(k).saturating_mul(nodes(k))))
}

/// The distinct expression nodes of kernel `k` (shared subexpressions once), at least 1.
fn nodes(k: &Kernel) -> i64 {
    fn visit(p: Part, seen: &mut std::collections::HashSet<*const SExpr>) {
        match p {
            Part::Expr(e) => {
                if seen.insert(Rc::as_ptr(e)) {
                    crate::sym::for_each_part(e, &mut |q| visit(q, seen));
                }
            }
            Part::Coord(c) => crate::sym::for_each_coord_part(c, &mut |q| visit(q, seen)),
        }
    }
    let mut seen = std::collections::HashSet::new();
    for e in k.exprs() {
        visit(Part::Expr(e), &mut seen);
    }
    (seen.len() as i64).max(1)
}

/// A kernel's work estimate: its points times the steps of its longest fold or scan.
fn work(k: &Kernel) -> i64 {
    fn longest(p: Part, best: &mut i64) {
        if let Part::Expr(e) = p {
            if let SExpr::Reduce { vars, .. } = &**e {
                *best = (*best).max(vars.iter().map(|(_, i)| i.len() as i64).product());
            }
            crate::sym::for_each_part(e, &mut |q| longest(q, best));
        }
    }
    let mut steps = k.scan().map_or(1, |sc| sc.dim.interval.len() as i64);
    for e in k.exprs() {
        longest(Part::Expr(e), &mut steps);
    }
    let points: i64 = k.domain.iter().map(|l| l.interval.len() as i64).product();
    points.saturating_mul(steps.max(1))
}

/// Whether fold `r` may sum in any order: a floating-point `acc + x` (`x` free of the
/// accumulator, so the fold is a plain sum) of at least [`REASSOCIATE_MIN`] steps whose
/// innermost loop runs at least [`REASSOCIATE_ROW_MIN`] times (a whole-array sum of 2,000×50
/// qualifies by its 100,000 steps in rows of 50). The C compiler then keeps partial sums in
/// vector lanes; the result equals the interpreter's sequential sum up to rounding (as numpy's
/// pairwise sums or a BLAS would), not bit for bit. Every other fold keeps the sequential order
/// exactly.
pub fn reassociable(r: &SExpr) -> bool {
    let SExpr::Reduce { id, vars, scalar, body, .. } = r else { return false };
    let Some((_, inner)) = vars.last() else { return false };
    let Some((_, s)) = sum_term(body, *id) else { return false };
    let steps: i64 = vars.iter().map(|(_, i)| i.len() as i64).product();
    scalar.is_float() && s == *scalar && inner.len() as i64 >= REASSOCIATE_ROW_MIN && steps >= REASSOCIATE_MIN
}

/// The term `x` of a fold body `acc + x` or `x + acc` over accumulator `id`, `x` free of the
/// accumulator (the fold is a plain sum), and the addition's type.
pub fn sum_term(body: &Rc<SExpr>, id: u32) -> Option<(&Rc<SExpr>, Scalar)> {
    let SExpr::Binary(BinaryOp::Plus, a, b, s) = &**body else { return None };
    let term = match (&**a, &**b) {
        (SExpr::Acc(x), _) if *x == id => b,
        (_, SExpr::Acc(x)) if *x == id => a,
        _ => return None,
    };
    (!crate::sym::reads_acc(term, id)).then_some((term, *s))
}

/// The layout of a plain nest (see [`Layout`]).
fn layout(p: &KernelProgram, k: &Kernel, s: &Schedule) -> Layout {
    let always = k.stores.iter().all(|st| crate::emit_c::always_present(p, k, &st.value));
    // Contractions: strips, unless every long fold sums along rows contiguous in memory (those
    // run per point as vector reductions; strips would read them with a stride). Short folds
    // (neighbor reductions) also stay per point: their few steps read one table row, which
    // strips would read with a stride.
    let hoisted = if !k.domain.is_empty() && always { crate::folds::hoisted_folds(k) } else { Vec::new() };
    // Folds reading crosswise (`fold_strips`): strips stream their operands.
    let crosswise = matches!(&k.kind, KernelKind::Nest(n) if n.fold_strips);
    if crosswise && !hoisted.is_empty() {
        return Layout::Strips;
    }
    let long = |r: &Rc<SExpr>| matches!(&**r, SExpr::Reduce { vars, .. } if vars.iter().map(|(_, i)| i.len() as i64).product::<i64>() >= SHORT_FOLD);
    let reassociated = |r: &Rc<SExpr>| matches!(&**r, SExpr::Reduce { id, .. } if s.reassociate.contains(id));
    if !hoisted.is_empty()
        && hoisted.iter().any(long)
        && !hoisted.iter().all(|r| reassociated(r) && crate::folds::contiguous_fold(r))
    {
        return Layout::Strips;
    }
    let folds = crate::folds::hoisted_folds(k);
    let shared = folds.windows(2).any(|w| crate::folds::fold_vars(&w[0]) == crate::folds::fold_vars(&w[1]));
    if shared && always {
        Layout::SharedFolds
    } else {
        Layout::PerPoint
    }
}

/// The most bytes of accumulator rows a kernel reading crosswise keeps per strip: rows of 2,048
/// points for the nabla's two f64 folds. Longer strips read longer runs of each operand per
/// fold step (measured on the 336 k-vertex nabla over GT4Py's layout, one thread: 12 ms at 256
/// points, 9 at 1,024, 8 at 2,048, as fast as per point over row-major operands); the rows stay
/// within the L1 data cache.
const CROSSWISE_ROW_BYTES: i64 = 32 * 1024;

/// Points per strip of a kernel laid out in strips: [`crate::emit_c::STRIP`] for contractions;
/// for folds reading crosswise, as many as keep every fold's accumulator row within
/// [`CROSSWISE_ROW_BYTES`] (a power of two, 256 to 2,048).
fn strip_length(k: &Kernel, crosswise: bool) -> i64 {
    if !crosswise {
        return crate::emit_c::STRIP;
    }
    let row: i64 = crate::folds::hoisted_folds(k)
        .iter()
        .filter_map(|f| match &**f {
            SExpr::Reduce { scalar, .. } => Some(scalar.size_bytes() as i64),
            _ => None,
        })
        .sum::<i64>()
        .max(1);
    let fit = CROSSWISE_ROW_BYTES / row;
    let mut strip = crate::emit_c::STRIP;
    while strip * 2 <= fit.min(2048) {
        strip *= 2;
    }
    strip
}

/// Whether a windowed kernel's stores go to memory as streaming stores, row by row: each
/// writes a result present everywhere, over exactly the kernel's domain, whose innermost level
/// holds whole 64-byte lines of at most [`STREAM_ROW_BYTES`], and together they are at least
/// as large as the last-level cache one core shares (`KernelProgram::cache_bytes`), so that no
/// later reader would find them there. Values reading neighbor tables bind their entries per
/// point, outside the row's vector loop: those keep the plain stores.
fn streams(p: &KernelProgram, k: &Kernel) -> bool {
    let Some(last) = k.domain.last() else { return false };
    let mut bytes = 0i64;
    for st in &k.stores {
        let b = &p.buffers[st.buffer];
        let row = last.interval.len() as i64 * b.scalar.size_bytes() as i64;
        let fits = b.levels == k.domain
            && row % 64 == 0
            && row <= STREAM_ROW_BYTES
            && crate::emit_c::always_present(p, k, &st.value);
        if !fits || k.windows().iter().any(|w| w.buffer == st.buffer) {
            return false;
        }
        bytes += (b.len() * b.scalar.size_bytes()) as i64;
    }
    let values: Vec<&Rc<SExpr>> = k.stores.iter().map(|s| &s.value).collect();
    !k.stores.is_empty() && !crate::emit_c::reads_tables(p, k, &values) && bytes >= p.cache_bytes
}
