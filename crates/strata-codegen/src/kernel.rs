//! The loop-level IR: what lowering produces and the C emitter consumes. A
//! [`KernelProgram`] is a list of buffers (parameters' fields, results, temporaries, sparse
//! storage arrays) and of [`Kernel`]s run in order, each one fused loop nest over its domain
//! storing symbolic scalar expressions ([`crate::sym`]) — or a sequential scan, or a runtime
//! GEMM call — with the loops that visit stored sparse coordinates instead of whole ranges
//! ([`crate::sparse`]). `Display` is the form `strata lower --to loops` prints.

use std::rc::Rc;

use strata_ir::{BinaryOp, DimName, Level, Scalar};

use crate::sym::{reads, Coord, SExpr};

/// One scalar buffer: a parameter (or one tuple field of it), or a function result.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    /// `name` or `name.f0` for tuple fields.
    pub name: String,
    /// Element type.
    pub scalar: Scalar,
    /// Levels (names and intervals), outermost first.
    pub levels: Vec<Level>,
    /// Which parameter (`None` for a function's result).
    pub param: Option<usize>,
    /// Tuple field path within the parameter or result.
    pub field: Vec<usize>,
    /// Whether kernels write it.
    pub written: bool,
    /// A temporary between kernels (a materialized scan), neither argument nor result.
    pub temp: bool,
    /// Every point is written before anything reads it, so its initial content is never
    /// observed (an `out` parameter assigned whole needs no copy of the caller's data).
    pub overwritten: bool,
    /// What the buffer holds.
    pub role: Role,
}

impl Buffer {
    /// The number of elements over its levels.
    pub fn len(&self) -> usize {
        self.levels.iter().map(|l| l.interval.len() as usize).product()
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A temporary between kernels (tuple field `field` of a value), written before it is read.
    pub fn temporary(name: String, scalar: Scalar, levels: Vec<Level>, field: Vec<usize>) -> Buffer {
        Buffer {
            name,
            scalar,
            levels,
            param: None,
            field,
            written: true,
            temp: true,
            overwritten: false,
            role: Role::Elements,
        }
    }
}

/// What a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Elements in row-major order over `levels` (the flat layout of tensor elements).
    Elements,
    /// Whether each element of a sparse or ragged result exists (1) or not (0): such results
    /// are written in the runtime's logical form, values plus presence.
    Presence,
    /// One array of a sparse or ragged parameter's storage (`strata_runtime::storage`), which
    /// the run builds from the argument; its length is the data's.
    Storage(StoragePart),
    /// A value staged in a rolling window of planes ([`Window`]): it lives only inside the
    /// kernel computing it, per thread, and has no memory outside.
    Window,
}

/// One array of a sparse or ragged value's storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoragePart {
    /// A compressed level's positions.
    Positions(usize),
    /// A compressed level's coordinates.
    Coordinates(usize),
    /// A ragged level's offsets.
    Offsets(usize),
    /// The stored values, in leaf order.
    Values,
}

/// A write of one scalar expression per point of a kernel's domain.
#[derive(Clone, Debug, PartialEq)]
pub struct Store {
    /// The buffer written.
    pub buffer: usize,
    /// The value; absent points store zero.
    pub value: Rc<SExpr>,
}

/// One fused loop nest: a loop per level of `domain`, then what its [`KernelKind`] runs there.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// What it computes, for the generated code's comments.
    pub comment: String,
    /// Why it exists, where that depends on sizes (a temporary's evaluation count):
    /// `strata lower --to loops` shows it after the comment; the generated C leaves it out, so
    /// that one text serves every size (`emit_c::extents`).
    pub detail: String,
    /// The loop dimensions, outermost first (for a scan: the dimensions besides the scanned one).
    pub domain: Vec<Level>,
    /// The stores at each point (for a scan: inside the sequential loop, after the state
    /// update; for a GEMM: its meaning, which the runtime computes).
    pub stores: Vec<Store>,
    /// Loops (domain levels, fold variables or other inner loops, by name) that visit the coordinates sparse
    /// operands store instead of their whole range ([`crate::sparse::coiterate`]).
    pub sets: Vec<crate::sparse::CoIteration>,
    /// How the loop nest runs.
    pub kind: KernelKind,
    /// How its loops run (threads, layout, reassociation, streaming), set by the `schedule`
    /// pass, the last one; `None` before it.
    pub schedule: Option<crate::schedule::Schedule>,
}

/// The kinds of kernel, each with the parts only it has.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelKind {
    /// The stores at each point of the domain.
    Nest(Nest),
    /// A sequential innermost loop carrying state.
    Scan(ScanKernel),
    /// A matrix product the runtime GEMM computes (see [`crate::matmul`]).
    Gemm(crate::matmul::MatMul),
    /// Stores at positions the data decides ([`Scatter`]); the kernel has no `stores`.
    Scatter(Scatter),
}

/// The parts of a [`KernelKind::Nest`].
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Nest {
    /// Values the stores read at several offsets, each computed once per point into a rolling
    /// window of planes along the outermost domain level instead of at every offset
    /// ([`crate::stage`]); in dependency order (a window reads only earlier ones).
    pub windows: Vec<Window>,
    /// Set when the kernel writes a sparse result as storage ([`CompressedOut`]).
    pub compressed: Option<CompressedOut>,
    /// Its folds read operands crosswise (the fold's variable stored outside the innermost
    /// domain level): the schedule runs them in strips ([`crate::fold_strips`]).
    pub fold_strips: bool,
}

/// The parts of a [`KernelKind::Scan`].
#[derive(Clone, Debug, PartialEq)]
pub struct ScanKernel {
    /// The sequential loop.
    pub scan: ScanLoop,
    /// Further scans over the same domain and dimension, run after this kernel's scan for each
    /// strip of columns (see [`crate::kernel_passes::fuse_scans`]).
    pub chain: Vec<ScanStage>,
    /// Buffers only this kernel writes and reads, at the current point: kept per strip of
    /// columns in a small scratch array (in cache) instead of memory.
    pub local: Vec<usize>,
}

/// A value staged in a rolling window: `buffer` (levels: the kernel's domain levels, intervals
/// widened to every point its readers reach, role [`Role::Window`]) holds `value` at each of its
/// points, kept as a ring of `ahead - behind + 1` planes of the outermost level per thread.
/// While the kernel's stores run plane `p`, the window holds planes `p + behind ..= p + ahead`:
/// plane `p + ahead` is computed first, from the input planes and earlier windows.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// The staged buffer.
    pub buffer: usize,
    /// Its value at each point, over the buffer's level variables.
    pub value: Rc<SExpr>,
    /// How far (in planes of the outermost level) ahead of the stores' plane it is read.
    pub ahead: i64,
    /// How far behind (≤ `ahead`, may be negative).
    pub behind: i64,
}

impl Window {
    /// Planes kept per thread.
    pub fn depth(&self) -> i64 {
        self.ahead - self.behind + 1
    }
}

/// A kernel storing at data-dependent positions: seed 004's coordinates and values as data.
#[derive(Clone, Debug, PartialEq)]
pub enum Scatter {
    /// `coordinates` / `nonzeros`: at each domain point, a sequential loop over `dim` lists
    /// the entries where `value` exists and is not zero — their coordinate, or their value —
    /// at positions `0, 1, …` of the point's run: `buffer[domain…, n]` with
    /// `presence[domain…, n] = 0`; the rest of the run is absent (`presence = -1`).
    Compact {
        /// The dimension compacted (its loop variable is the dimension's name).
        dim: Level,
        /// The operand's element at the current point.
        value: Rc<SExpr>,
        /// Its type.
        element: strata_ir::Scalar,
        /// List coordinates (else values).
        coordinates: bool,
        /// The listed entries, over the domain's levels and then the run.
        buffer: usize,
        /// Which run positions hold an entry (`0`) or none (`-1`), like the buffer.
        presence: usize,
    },
    /// `assemble`: at each domain point where `coordinate` and `value` both exist,
    /// `buffer[…] += value`, the buffer's level `target` indexed by the coordinate (which must
    /// lie in its interval) and its other levels by the domain's variables of the same name.
    AddAt {
        /// The coordinate along the buffer's level `target`.
        coordinate: Rc<SExpr>,
        /// The value added.
        value: Rc<SExpr>,
        /// The result, zeros before the kernel.
        buffer: usize,
        /// The buffer level the coordinate indexes.
        target: usize,
    },
}

impl Scatter {
    /// The buffer the kernel writes (and a presence buffer).
    pub fn written(&self) -> Vec<usize> {
        match self {
            Scatter::Compact { buffer, presence, .. } => vec![*buffer, *presence],
            Scatter::AddAt { buffer, .. } => vec![*buffer],
        }
    }

    /// The expressions it evaluates.
    pub fn exprs(&self) -> Vec<&Rc<SExpr>> {
        match self {
            Scatter::Compact { value, .. } => vec![value],
            Scatter::AddAt { coordinate, value, .. } => vec![coordinate, value],
        }
    }
}

/// A sparse result written as storage: every domain level but the innermost dense, the
/// innermost compressed (CSR over the result's level order), storing the non-zero values only.
/// The kernel's one store gives the value and the values buffer. Each row's non-zeros are
/// appended to per-thread buffers and counted into `positions`; the run then allocates
/// `coordinates` and the values (`strata_rt.alloc`, run-time length) and copies them in.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressedOut {
    /// The positions buffer (one per row, plus one).
    pub positions: usize,
    /// The coordinates buffer (offsets within the innermost interval).
    pub coordinates: usize,
    /// Set when each row is computed in a Gustavson workspace ([`crate::workspace`]).
    pub workspace: Option<crate::workspace::Workspace>,
}

impl Kernel {
    /// Every store, the chained stages' included.
    pub fn all_stores(&self) -> impl Iterator<Item = &Store> {
        self.stores.iter().chain(self.chain().iter().flat_map(|st| &st.stores))
    }

    /// Every expression the kernel evaluates: stored values, scan updates of every stage,
    /// scattered and staged values.
    pub fn exprs(&self) -> impl Iterator<Item = &Rc<SExpr>> {
        let scans = self.scan().into_iter().chain(self.chain().iter().map(|st| &st.scan));
        let scattered = self.scatter().into_iter().flat_map(Scatter::exprs);
        let staged = self.windows().iter().map(|w| &w.value);
        self.all_stores().map(|st| &st.value).chain(scans.flat_map(|sc| &sc.updates)).chain(scattered).chain(staged)
    }

    /// Whether the kernel reads buffer `b` (directly or through a table).
    pub fn reads(&self, b: usize) -> bool {
        self.exprs().any(|e| reads(e, b))
    }

    /// Whether the kernel writes buffer `b`.
    pub fn writes(&self, b: usize) -> bool {
        self.all_stores().any(|st| st.buffer == b)
            || self.scatter().is_some_and(|s| s.written().contains(&b))
            || self.windows().iter().any(|w| w.buffer == b)
    }

    /// A plain loop nest over `domain` with `stores` at each point.
    pub fn nest(comment: String, domain: Vec<Level>, stores: Vec<Store>) -> Kernel {
        Kernel {
            comment,
            detail: String::new(),
            domain,
            stores,
            sets: Vec::new(),
            kind: KernelKind::Nest(Nest::default()),
            schedule: None,
        }
    }

    /// A plain loop nest over this kernel's domain storing `value` into `buffer` (a GEMM's
    /// initial value or epilogue).
    pub fn elementwise(&self, buffer: usize, value: Rc<SExpr>) -> Kernel {
        Kernel::nest(self.comment.clone(), self.domain.clone(), vec![Store { buffer, value }])
    }

    /// The loop nest's parts, when the kernel is one.
    pub fn as_nest(&self) -> Option<&Nest> {
        match &self.kind {
            KernelKind::Nest(n) => Some(n),
            _ => None,
        }
    }

    /// The loop nest's parts, mutably, when the kernel is one.
    pub fn as_nest_mut(&mut self) -> Option<&mut Nest> {
        match &mut self.kind {
            KernelKind::Nest(n) => Some(n),
            _ => None,
        }
    }

    /// The scan's parts, when the kernel is one.
    pub fn as_scan(&self) -> Option<&ScanKernel> {
        match &self.kind {
            KernelKind::Scan(s) => Some(s),
            _ => None,
        }
    }

    /// The sequential loop, when the kernel is a scan.
    pub fn scan(&self) -> Option<&ScanLoop> {
        self.as_scan().map(|s| &s.scan)
    }

    /// The scans chained after this one (none unless the kernel is a scan).
    pub fn chain(&self) -> &[ScanStage] {
        self.as_scan().map_or(&[], |s| &s.chain)
    }

    /// The strip-local buffers (none unless the kernel is a scan).
    pub fn local(&self) -> &[usize] {
        self.as_scan().map_or(&[], |s| &s.local)
    }

    /// The staged windows (none unless the kernel is a loop nest).
    pub fn windows(&self) -> &[Window] {
        self.as_nest().map_or(&[], |n| &n.windows)
    }

    /// The sparse result it writes as storage, if any.
    pub fn compressed(&self) -> Option<&CompressedOut> {
        self.as_nest().and_then(|n| n.compressed.as_ref())
    }

    /// The runtime GEMM computing it, if any.
    pub fn matmul(&self) -> Option<&crate::matmul::MatMul> {
        match &self.kind {
            KernelKind::Gemm(m) => Some(m),
            _ => None,
        }
    }

    /// Its data-dependent stores, if any.
    pub fn scatter(&self) -> Option<&Scatter> {
        match &self.kind {
            KernelKind::Scatter(s) => Some(s),
            _ => None,
        }
    }
}

/// A scan run after the kernel's own one, with its stores.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanStage {
    /// The sequential loop.
    pub scan: ScanLoop,
    /// The stores at each step.
    pub stores: Vec<Store>,
}

/// A state register of a scan: accumulator id, type, initial value.
pub type StateRegister = (u32, Scalar, Rc<SExpr>);

/// The sequential innermost loop of a scan kernel: state registers updated in order along
/// `dim`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanLoop {
    /// The scanned dimension.
    pub dim: Level,
    /// Increasing indices if true.
    pub forward: bool,
    /// State registers (accumulator ids), their types and initial values (constants, or a
    /// fold's `init` tensor read at the current point).
    pub states: Vec<StateRegister>,
    /// The next value of each state register, from the current ones.
    pub updates: Vec<Rc<SExpr>>,
    /// Store only the final state, after the sequential loop (a fold with a tuple
    /// accumulator), instead of the state at every step.
    pub last_only: bool,
    /// Set when the fold is an argmax / argmin (see [`ArgBest`]).
    pub arg_best: Option<ArgBest>,
}

/// A fold over `(best, index)` that replaces both where `value` is strictly greater (`less`:
/// smaller) than `best`, with the loop variable as the index — numpy's argmax / argmin rule
/// (first occurrence wins). Such a fold may run in vector lanes, each over every `lanes`-th
/// element, whose results combine by "better value, else smaller index": the same answer as
/// the sequential fold, NaNs never chosen in either.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgBest {
    /// The compared value at the current step (free of the accumulators).
    pub value: Rc<SExpr>,
    /// Argmin rather than argmax.
    pub less: bool,
}

/// Recognizes an [`ArgBest`] fold: states `(best, index)` with updates
/// `select(value > best, value, best)` and `select(value > best, dim, index)`.
pub(crate) fn arg_best(states: &[StateRegister], updates: &[Rc<SExpr>], dim: &DimName) -> Option<ArgBest> {
    let [(vb, _, _), (ib, it, _)] = states else { return None };
    let [uv, ui] = updates else { return None };
    let (SExpr::Select(c1, x, keep_v), SExpr::Select(c2, j, keep_i)) = (&**uv, &**ui) else { return None };
    if c1 != c2 || **keep_v != SExpr::Acc(*vb) || **keep_i != SExpr::Acc(*ib) || !it.is_integer() {
        return None;
    }
    let index = matches!(&**j, SExpr::Index(Coord::Var { dim: d, offset: 0 }) if d == dim)
        || matches!(&**j, SExpr::Cast(inner, _, _) if matches!(&**inner, SExpr::Index(Coord::Var { dim: d, offset: 0 }) if d == dim));
    let SExpr::Binary(op, a, b, _) = &**c1 else { return None };
    let less = match (op, &**b) {
        (BinaryOp::Greater, SExpr::Acc(v)) if *v == *vb && a == x => false,
        (BinaryOp::Less, SExpr::Acc(v)) if *v == *vb && a == x => true,
        _ => return None,
    };
    let free = |e: &Rc<SExpr>| !crate::sym::reads_acc(e, *vb) && !crate::sym::reads_acc(e, *ib);
    (index && free(x)).then(|| ArgBest { value: x.clone(), less })
}

/// A lowered entry: buffers and kernels run in order.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelProgram {
    /// The entry's name.
    pub entry: String,
    /// Every buffer: parameters' fields first, then results.
    pub buffers: Vec<Buffer>,
    /// The loop nests.
    pub kernels: Vec<Kernel>,
    /// Sparse and ragged parameters, as storage buffers ([`SExpr::Sparse`] reads them).
    pub sparse: Vec<crate::sparse::SparseTensor>,
    /// The machine fact the program was lowered for ([`crate::LowerOptions::cache_bytes`]):
    /// emission reads it from here, never from the machine, so the C is a function of the
    /// kernel program alone.
    pub cache_bytes: i64,
    /// Whether the kernels poll the runtime ([`crate::LowerOptions::polls`]).
    pub polls: bool,
    /// Whether every extent the C prints takes a slot of its own
    /// ([`crate::LowerOptions::extents_per_site`]).
    pub extents_per_site: bool,
    /// The CUDA GPU the program runs on ([`crate::LowerOptions::gpu`]); `None`: the host.
    pub gpu: Option<u32>,
}

impl KernelProgram {
    /// Every neighbor table the kernels read through (`Coord::Table`, guards) that is an input
    /// buffer, with the source interval its entries must lie in: each distinct pair once.
    pub fn input_tables(&self) -> Vec<(usize, strata_ir::Interval)> {
        use crate::sym::{for_each_coord_part, for_each_part, Part};
        fn visit(p: Part, out: &mut Vec<(usize, strata_ir::Interval)>) {
            let mut note = |t: &crate::sym::Load, source: strata_ir::Interval| {
                if !out.contains(&(t.buffer, source)) {
                    out.push((t.buffer, source));
                }
            };
            match p {
                Part::Coord(c) => {
                    if let Coord::Table { table, source, .. } = c {
                        note(table, *source);
                    }
                    for_each_coord_part(c, &mut |q| visit(q, out));
                }
                Part::Expr(e) => {
                    if let SExpr::Guard { table, source, .. } = &**e {
                        note(table, *source);
                    }
                    for_each_part(e, &mut |q| visit(q, out));
                }
            }
        }
        let mut out = Vec::new();
        for k in &self.kernels {
            for e in k.exprs() {
                visit(Part::Expr(e), &mut out);
            }
        }
        out.retain(|(b, _)| {
            let b = &self.buffers[*b];
            b.param.is_some() && !b.written && b.role == Role::Elements
        });
        out
    }
}

/// The loop-level form, as `strata lower --to loops` prints it.
impl std::fmt::Display for KernelProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "// loop kernels of @{}", self.entry)?;
        if self.extents_per_site {
            writeln!(f, "// extents per site: every extent its own slot, pieces by their place among the cuts")?;
        }
        if let Some(g) = self.gpu {
            writeln!(f, "// runs on gpu{g}")?;
        }
        for (i, b) in self.buffers.iter().enumerate() {
            let dims: Vec<String> = b.levels.iter().map(|l| format!("{}{}", l.name, l.interval)).collect();
            let role = match b.role {
                Role::Elements => String::new(),
                Role::Presence => " (which elements exist)".into(),
                Role::Storage(part) => format!(" (storage: {part:?}, run-time length)"),
                Role::Window => " (staged: a rolling window inside its kernel)".into(),
            };
            writeln!(
                f,
                "buffer b{i} %{}: {} [{}]{}{role}",
                b.name,
                b.scalar,
                dims.join(", "),
                if b.written { " written" } else { "" }
            )?;
        }
        for (i, t) in self.sparse.iter().enumerate() {
            let levels: Vec<String> = t
                .levels
                .iter()
                .zip(&t.storage)
                .map(|(l, st)| match st {
                    crate::sparse::LevelStorage::Dense { .. } => format!("{}{} dense", l.name, l.interval),
                    crate::sparse::LevelStorage::Compressed { positions, coordinates } => {
                        format!("{}{} compressed (b{positions}, b{coordinates})", l.name, l.interval)
                    }
                    crate::sparse::LevelStorage::Ragged { offsets } => {
                        format!("{}{} ragged (b{offsets})", l.name, l.interval)
                    }
                })
                .collect();
            writeln!(f, "sparse s{i} %{}: [{}], values b{}", t.name, levels.join(", "), t.values)?;
        }
        for (k, kernel) in self.kernels.iter().enumerate() {
            match kernel.detail.as_str() {
                "" => writeln!(f, "kernel {k}: {}", kernel.comment)?,
                detail => writeln!(f, "kernel {k}: {} ({detail})", kernel.comment)?,
            }
            if let Some(s) = &kernel.schedule {
                writeln!(f, "  schedule: {s}")?;
            }
            let set_of = |v: &DimName| kernel.sets.iter().find(|c| &c.var == v);
            let mut loops: Vec<String> = kernel
                .domain
                .iter()
                .map(|l| match set_of(&l.name) {
                    Some(c) => format!("{} in {} ∩ {}", l.name, c.set, l.interval),
                    None => format!("{} in {}", l.name, l.interval),
                })
                .collect();
            if let Some(sc) = kernel.scan() {
                loops.push(format!(
                    "{} in {} {}",
                    sc.dim.name,
                    sc.dim.interval,
                    if sc.forward { "sequentially" } else { "sequentially, backward" }
                ));
                for ((id, _, init), u) in sc.states.iter().zip(&sc.updates) {
                    writeln!(f, "  state acc{id} = {}; next: {}", crate::sym::show(init), crate::sym::show(u))?;
                }
            }
            writeln!(f, "  for {}:", loops.join(", "))?;
            let domain: Vec<&DimName> = kernel.domain.iter().map(|l| &l.name).collect();
            for c in kernel.sets.iter().filter(|c| !domain.contains(&&c.var)) {
                let how = if c.merge { ", merged" } else { "" };
                // A fold's variable, a Gustavson row's columns or a compaction's dimension.
                writeln!(f, "    (inner loop {} visits {} ∩ {}{how})", c.var, c.set, c.range)?;
            }
            match kernel.scatter() {
                Some(Scatter::Compact { dim, value, coordinates, buffer, presence, .. }) => writeln!(
                    f,
                    "    b{buffer}[.., n], b{presence}[.., n] = the {} of the non-zero {} over {}{} (n counting)",
                    if *coordinates { "coordinates" } else { "values" },
                    crate::sym::show(value),
                    dim.name,
                    dim.interval
                )?,
                Some(Scatter::AddAt { coordinate, value, buffer, target }) => writeln!(
                    f,
                    "    b{buffer}[level {target} at {}] += {}",
                    crate::sym::show(coordinate),
                    crate::sym::show(value)
                )?,
                None => {}
            }
            if let Some(mm) = kernel.matmul() {
                writeln!(f, "    (computed by the runtime GEMM: {mm})")?;
            }
            if let Some(c) = kernel.compressed() {
                writeln!(
                    f,
                    "    (stores the non-zeros only: row positions b{}, coordinates b{})",
                    c.positions, c.coordinates
                )?;
                if let Some(w) = &c.workspace {
                    writeln!(
                        f,
                        "    (each row in a workspace: the steps of {} per stored column, then {})",
                        crate::sym::show(&w.fold),
                        crate::sym::show(&w.value)
                    )?;
                }
            }
            for w in kernel.windows() {
                let outer = &self.buffers[w.buffer].levels[0].name;
                writeln!(
                    f,
                    "    stage b{} = {}  (rolling window of {} planes of {outer}, {}..={} from the stores' plane)",
                    w.buffer,
                    crate::sym::show(&w.value),
                    w.depth(),
                    w.behind,
                    w.ahead
                )?;
            }
            if !kernel.local().is_empty() {
                let names: Vec<String> = kernel.local().iter().map(|&b| format!("b{b}")).collect();
                writeln!(f, "    (per strip of columns, in cache: {})", names.join(", "))?;
            }
            let show_stores = |f: &mut std::fmt::Formatter<'_>, stores: &[Store]| -> std::fmt::Result {
                for s in stores {
                    let b = &self.buffers[s.buffer];
                    let idx: Vec<String> = b.levels.iter().map(|l| l.name.to_string()).collect();
                    writeln!(f, "    b{}[{}] = {}", s.buffer, idx.join(", "), crate::sym::show(&s.value))?;
                }
                Ok(())
            };
            show_stores(f, &kernel.stores)?;
            for st in kernel.chain() {
                let sc = &st.scan;
                let order = if sc.forward { "sequentially" } else { "sequentially, backward" };
                writeln!(f, "  then {} in {} {order}:", sc.dim.name, sc.dim.interval)?;
                for ((id, _, init), u) in sc.states.iter().zip(&sc.updates) {
                    writeln!(f, "  state acc{id} = {}; next: {}", crate::sym::show(init), crate::sym::show(u))?;
                }
                show_stores(f, &st.stores)?;
            }
        }
        Ok(())
    }
}
