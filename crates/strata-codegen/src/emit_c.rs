//! C code for a [`KernelProgram`]: one function per kernel, named loops over the domain, the
//! fused expression per store, and `strata_entry(void **buffers)` running the kernels in order.
//!
//! Semantics match the reference interpreter bit for bit: integer arithmetic wraps (computed in
//! unsigned types), integer division by zero and neighbor-table entries outside their source
//! interval return an error code, float casts saturate, `maximum`/`minimum` propagate NaN, and
//! the code is compiled without floating-point contraction (no fused multiply-add). A point
//! whose value is absent (a skipped neighbor) stores zero; only present values are computed.

use std::fmt::Write;
use std::rc::Rc;

use strata_ir::{BinaryOp, Scalar, UnaryOp};
use strata_runtime::Sv;

use crate::kernel::{Buffer, CompressedOut, Kernel, KernelKind, KernelProgram, ScanLoop, Scatter, Store, Window};
use crate::matmul::MatMul;
use crate::schedule::{Layout, Schedule};
use crate::sparse::CoIteration;

mod compressed;
mod contraction;
pub mod cuda;
mod expr;
mod extents;
mod jam;
mod moments;
#[cfg(test)]
mod prelude_tests;
mod scan;
mod sparse;
mod tables;
mod window;

use crate::folds::{fold_vars, hoist_reductions, hoisted_stores, invariant, loads_along, sibling_groups};
use crate::sym::{Coord, Load, SExpr};
use compressed::{emit_compressed, emit_scatter};
use contraction::{emit_contraction, emit_matmul};
use expr::{literal, var, Emitter, Local};
use extents::{ext, Slots};
use scan::{contiguous_along, emit_scan, prefetch_ahead};
use sparse::SetBounds;

/// The C type of a scalar.
pub fn c_type(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool | Scalar::U8 => "uint8_t",
        Scalar::I8 => "int8_t",
        Scalar::I16 => "int16_t",
        Scalar::I32 => "int32_t",
        Scalar::I64 | Scalar::Index => "int64_t",
        Scalar::U16 => "uint16_t",
        Scalar::U32 => "uint32_t",
        Scalar::U64 => "uint64_t",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
        Scalar::C64 => "float _Complex",
        Scalar::C128 => "double _Complex",
    }
}

fn unsigned_of(s: Scalar) -> &'static str {
    match s {
        Scalar::I8 | Scalar::U8 | Scalar::Bool => "uint8_t",
        Scalar::I16 | Scalar::U16 => "uint16_t",
        Scalar::I32 | Scalar::U32 => "uint32_t",
        _ => "uint64_t",
    }
}

const PRELUDE: &str = include_str!("emit_c/prelude.c");

/// The prelude's complex scalars (`<complex.h>` and the helpers numpy's semantics need),
/// included only by a translation unit whose kernels use them: most kernels have none, and
/// the header and helpers are a measurable part of a small kernel's compile.
const PRELUDE_COMPLEX: &str = include_str!("emit_c/prelude_complex.c");

/// A translation unit: its `title` comment, the prelude, `<math.h>` where the body may use it,
/// the complex section where the body uses complex scalars, and the body `emit` appends. The
/// body is emitted after the prelude into the one growing string (the sections it needs are
/// inserted before it after), as the whole unit was before sections were chosen.
fn translation_unit(title: &str, emit: impl FnOnce(&mut String)) -> String {
    let mut out = String::new();
    out.push_str(title);
    out.push_str(PRELUDE);
    let at = out.len();
    emit(&mut out);
    let body = &out[at..];
    let complex = body.contains("_Complex");
    if complex {
        out.insert_str(at, PRELUDE_COMPLEX);
    } else if uses_math_header(body) {
        out.insert_str(at, "#include <math.h>\n");
    }
    out
}

/// Whether generated `body` may need `<math.h>`: it calls a function that is neither one of
/// Strata's (`strata_…`, the prelude's and the kernels' own), OpenMP's, a compiler builtin nor
/// one the prelude declares, or names one of the header's constants. Conservative: an
/// unknown name includes the header (7 ms of compile), so a miss costs time, never a
/// declaration.
fn uses_math_header(body: &str) -> bool {
    const DECLARED: &[&str] = &[
        "if",
        "for",
        "while",
        "switch",
        "return",
        "sizeof",
        "_Pragma",
        "__attribute__",
        "__typeof__",
        "malloc",
        "calloc",
        "aligned_alloc",
        "free",
        "memcpy",
        "memmove",
        "INT64_C",
        "UINT64_C",
        // attributes
        "aligned",
        "vector_size",
        "may_alias",
        "noinline",
        "cold",
        "pure",
        "unused",
        "optimize",
    ];
    const CONSTANTS: &[&str] = &["NAN", "INFINITY", "HUGE_VAL"];
    if CONSTANTS.iter().any(|c| body.contains(c)) {
        return true;
    }
    let b = body.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // Every call site: a name before a `(` (a memchr scan; a new size emits its C again, so
    // this runs on every new size, not only on compiles).
    for (paren, _) in body.match_indices('(') {
        let mut end = paren;
        while end > 0 && b[end - 1] == b' ' {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && word(b[start - 1]) {
            start -= 1;
        }
        let name = &body[start..end];
        if name.is_empty() || !(b[start].is_ascii_alphabetic() || b[start] == b'_') {
            continue;
        }
        let member = b[..start].ends_with(b".") || b[..start].ends_with(b"->");
        if member || DECLARED.contains(&name) || ["strata_", "omp_", "__builtin_"].iter().any(|p| name.starts_with(p)) {
            continue;
        }
        // Words in comments, preprocessor lines (`#pragma omp … reduction(…)`) and string
        // literals (`_Pragma`'s) call nothing.
        let before = &body[..start];
        let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
        let in_block_comment =
            before.rfind("/*").is_some_and(|open| before.rfind("*/").is_none_or(|close| close < open));
        if in_block_comment
            || line.trim_start().starts_with('#')
            || line.contains("//")
            || line.matches('"').count() % 2 == 1
        {
            continue;
        }
        return true;
    }
    false
}

/// The pragma sharing a kernel's outermost loop among threads (error flags combined by max),
/// when its schedule says it has enough work (`par_`, see [`crate::schedule::PARALLEL_MIN`]).
const PARALLEL_FOR: &str = "#pragma omp parallel for schedule(static) reduction(max:e_) if(par_)";

/// Opens one loop per level of `domain` (the outermost shared among threads, each thread with
/// its own error pointer), indenting `indent`; a level that visits stored coordinates
/// (`Kernel::sets`) loops over their positions. Returns the number of braces to close.
fn open_domain_loops(out: &mut String, em: &Emitter, domain: &[strata_ir::Level], indent: &mut String) -> usize {
    open_loops(out, em, domain, indent, Some(PARALLEL_FOR))
}

/// [`open_domain_loops`], the outermost loop shared among threads by `pragma`, if any.
fn open_loops(
    out: &mut String,
    em: &Emitter,
    domain: &[strata_ir::Level],
    indent: &mut String,
    pragma: Option<&str>,
) -> usize {
    let mut braces = 0;
    for (depth, l) in domain.iter().enumerate() {
        let d = var(l.name.as_str());
        if let Some(c) = em.set_of(&l.name) {
            // The positions' bounds first: OpenMP wants a plain counted loop.
            let _ = writeln!(out, "{indent}{{  /* {} in {} */", l.name, c.set);
            indent.push_str("  ");
            let Some(SetBounds { v, parent, first, last, coordinate, range }) = em.set_bounds(c) else {
                // A union: a sequential merge of the members' positions.
                let _ = writeln!(out, "{indent}{} {{", em.union_loop(c));
                indent.push_str("  ");
                if depth == 0 {
                    let _ = writeln!(out, "{indent}int *err = &e_;");
                }
                braces += 2;
                continue;
            };
            let _ = writeln!(out, "{indent}const int64_t pp_{v} = {parent};");
            let _ = writeln!(
                out,
                "{indent}const int64_t q0_{v} = pp_{v} < 0 ? 0 : {first}, qe_{v} = pp_{v} < 0 ? 0 : {last};"
            );
            if let (0, Some(pragma)) = (depth, pragma) {
                let _ = writeln!(out, "{indent}{pragma}");
            }
            let _ = writeln!(out, "{indent}for (int64_t q_{v} = q0_{v}; q_{v} < qe_{v}; ++q_{v}) {{");
            indent.push_str("  ");
            if depth == 0 {
                let _ = writeln!(out, "{indent}int *err = &e_;");
            }
            let _ = writeln!(out, "{indent}const int64_t {v} = {coordinate};");
            if let Some((lo, hi)) = range {
                let _ = writeln!(out, "{indent}if ({v} < {} || {v} >= {}) continue;", ext(lo), ext(hi));
            }
            let located = em.located_members_stored(c);
            if !located.is_empty() {
                let _ = writeln!(out, "{indent}if (!({})) continue;  /* not in every member */", located.join(" && "));
            }
            braces += 2;
            continue;
        }
        if let (0, Some(pragma)) = (depth, pragma) {
            let _ = writeln!(out, "{indent}{pragma}");
        }
        let _ = writeln!(
            out,
            "{indent}for (int64_t {d} = {}; {d} < {}; ++{d}) {{  /* {}{} */",
            ext(l.interval.start),
            ext(l.interval.stop),
            l.name,
            extents::interval(l.interval)
        );
        indent.push_str("  ");
        if depth == 0 {
            let _ = writeln!(out, "{indent}int *err = &e_;");
            if em.program.polls && domain.len() > 1 {
                // Every 8 rows: cheap beside a row's inner loops, often enough for MPI.
                let _ = writeln!(out, "{indent}if (({d} & 7) == 0) rt->poll();  /* MPI progress */");
            }
        }
        braces += 1;
    }
    braces
}

/// Opens the loop over strips `[jb, jb + strip)` of level `inner` (shared among threads when it
/// is the outermost loop); returns the level's C variable, which the caller loops over inside.
fn open_strip(out: &mut String, inner: &strata_ir::Level, outermost: bool, strip: i64, indent: &mut String) -> String {
    let (start, stop) = (ext(inner.interval.start), ext(inner.interval.stop));
    if outermost {
        let _ = writeln!(out, "{indent}{PARALLEL_FOR}");
    }
    let _ = writeln!(
        out,
        "{indent}for (int64_t jb = {start}; jb < {stop}; jb += {strip}) {{  /* strips of {}{} */",
        inner.name,
        extents::interval(inner.interval)
    );
    indent.push_str("  ");
    if outermost {
        let _ = writeln!(out, "{indent}int *err = &e_;");
    }
    let _ = writeln!(out, "{indent}const int64_t je = jb + {strip} < {stop} ? jb + {strip} : {stop};");
    var(inner.name.as_str())
}

/// Strip length of the innermost loop in contraction kernels (accumulator rows on the stack).
pub const STRIP: i64 = 256;

/// Whether the generated code computes exactly what the interpreter does, bit for bit. Not so
/// when it sums in another order (a runtime GEMM, a reassociable fold) or calls vector math
/// (transcendental functions, within 4 ulp): floating-point results then agree
/// up to rounding.
pub fn bit_exact(program: &KernelProgram) -> bool {
    fn any(p: crate::sym::Part, found: &mut bool) {
        if let crate::sym::Part::Expr(e) = p {
            *found |= matches!(
                &**e,
                SExpr::Unary(op, ..) if vector_math(*op)
            ) || matches!(
                &**e,
                SExpr::Binary(BinaryOp::Atan2 | BinaryOp::Hypot | BinaryOp::LogAddExp | BinaryOp::Power, _, _, s) if s.is_float()
            );
            crate::sym::for_each_part(e, &mut |q| any(q, found));
        }
    }
    let mut found = program.kernels.iter().any(|k| k.matmul().is_some() || !schedule_of(k).reassociate.is_empty());
    for e in program.kernels.iter().flat_map(Kernel::exprs) {
        any(crate::sym::Part::Expr(e), &mut found);
    }
    !found
}

/// Whether the op calls a math library routine whose vector variant (libmvec) may round
/// differently from the scalar one the interpreter calls.
fn vector_math(op: UnaryOp) -> bool {
    !matches!(
        op,
        UnaryOp::Not
            | UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sqrt
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc
            | UnaryOp::Sign
            | UnaryOp::IsNan
            | UnaryOp::IsInf
            | UnaryOp::IsFinite
            | UnaryOp::SignBit
            | UnaryOp::BitNot
    )
}

/// The schedule of kernel `k`, as the `schedule` pass decided it: the printers print what it
/// says and decide nothing (every lowered program has run the pass, which is not optional).
fn schedule_of(k: &Kernel) -> &Schedule {
    k.schedule.as_ref().expect("the schedule pass decides every kernel's schedule")
}

/// Whether `e` always exists at a point of kernel `k` (no skip, no unstored entry).
pub(crate) fn always_present(program: &KernelProgram, k: &Kernel, e: &SExpr) -> bool {
    analysis(program, k).presence(e).is_none()
}

/// Whether `values` read neighbor tables, whose entries are bound per point.
pub(crate) fn reads_tables(program: &KernelProgram, k: &Kernel, values: &[&Rc<SExpr>]) -> bool {
    !analysis(program, k).bind_tables(values).0.is_empty()
}

/// An emitter for kernel `k`, asked about values rather than printing them.
fn analysis<'p>(program: &'p KernelProgram, k: &'p Kernel) -> Emitter<'p> {
    static DEFAULT: std::sync::OnceLock<Schedule> = std::sync::OnceLock::new();
    Emitter {
        program,
        schedule: DEFAULT.get_or_init(Schedule::default),
        local: None,
        sets: &k.sets,
        windows: k.windows(),
        entries: Vec::new(),
        next_entry: Rc::default(),
        prechecked: Rc::from([]),
        conditional_reads: Rc::default(),
    }
}

/// The C translation unit for `program`, exporting `strata_entry`; its extents are
/// [`extents`]`(program)`.
pub fn emit(program: &KernelProgram) -> String {
    emit_many(&[("strata_entry", program)])
}

/// [`emit`] and the program's extents, which every run passes after the buffers
/// (see `extents`): the same text serves every size that prints it.
pub fn emit_with_extents(program: &KernelProgram) -> (String, Vec<i64>) {
    let (source, mut extents) = emit_many_with_extents(&[("strata_entry", program)]);
    (source, extents.pop().unwrap_or_default())
}

/// The C translation unit for `program` with its sizes as literals: code for this size only,
/// which the C compiler can specialize (constant strides and trip counts), compiled where a
/// size runs long enough to pay for it (`strata_engine`'s specialization). Its library takes
/// the same arguments and ignores the extents.
pub fn emit_baked(program: &KernelProgram) -> String {
    let title = format!("/* Generated by Strata from `@{}`, for one size. */\n", program.entry);
    translation_unit(&title, |out| Slots::baked(|| emit_program(out, "strata_entry", program)).0)
}

/// The extents a run of `program`'s generated code takes after its buffers: interval bounds,
/// extents and strides, in the order its C reads them.
pub fn extents(program: &KernelProgram) -> Vec<i64> {
    let mut sink = String::new();
    Slots::scope(program.extents_per_site, || emit_program(&mut sink, "strata_entry", program)).1
}

/// One translation unit holding several programs, each exported under its own symbol (used to
/// compile many programs with one compiler run).
pub fn emit_many(programs: &[(&str, &KernelProgram)]) -> String {
    emit_many_with_extents(programs).0
}

/// [`emit_many`] and each program's extents.
pub fn emit_many_with_extents(programs: &[(&str, &KernelProgram)]) -> (String, Vec<Vec<i64>>) {
    let names: Vec<String> = programs.iter().map(|(_, p)| format!("`@{}`", p.entry)).collect();
    let mut extents = Vec::new();
    let source = translation_unit(&format!("/* Generated by Strata from {}. */\n", names.join(", ")), |out| {
        for (symbol, program) in programs {
            extents.push(Slots::scope(program.extents_per_site, || emit_program(out, symbol, program)).1);
        }
    });
    (source, extents)
}

/// The comment listing `program`'s buffers, after `heading`.
fn buffers_comment(out: &mut String, heading: &str, program: &KernelProgram) {
    let _ = writeln!(out, "\n/* {heading}. Buffers (row-major over their intervals):");
    for (i, b) in program.buffers.iter().enumerate() {
        let dims: Vec<String> =
            b.levels.iter().map(|l| format!("{}{}", l.name, extents::interval(l.interval))).collect();
        let _ = writeln!(
            out,
            "   b{i}: %{} {} [{}]{}",
            b.name,
            c_type(b.scalar),
            dims.join(", "),
            if b.written { " (written)" } else { "" }
        );
    }
    out.push_str("*/\n");
}

/// A kernel function's pointer to each buffer, from the buffer table `buf` (`const` where no
/// kernel writes it).
fn buffer_pointers(body: &mut String, em: &Emitter) {
    for (i, b) in em.program.buffers.iter().enumerate() {
        let c = if b.written { "" } else { "const " };
        let t = c_type(b.scalar);
        let _ = writeln!(body, "  {c}{t} *restrict {} = ({c}{t} *)buf[{i}];", em.name(i));
    }
}

fn emit_program(out: &mut String, symbol: &str, program: &KernelProgram) {
    buffers_comment(out, &format!("`@{}` -> {symbol}", program.entry), program);
    let prechecked: Rc<[(usize, strata_ir::Interval)]> = program.input_tables().into();
    for (ki, k) in program.kernels.iter().enumerate() {
        let em = Emitter {
            program,
            schedule: schedule_of(k),
            local: None,
            sets: &k.sets,
            windows: k.windows(),
            entries: Vec::new(),
            next_entry: Rc::default(),
            prechecked: prechecked.clone(),
            conditional_reads: Rc::default(),
        };
        let mut body = String::new();
        let first_slot = Slots::count();
        // Threads share the outermost loop; each has its own error flag, combined at the end.
        let parallel = !k.domain.is_empty();
        if parallel {
            let _ = writeln!(body, "  int e_ = 0;");
        } else {
            let _ = writeln!(body, "  int e_ = 0; int *err = &e_;");
        }
        let _ = writeln!(
            body,
            "  const int par_ = {} >= {}; (void)par_;  /* enough work for threads */",
            ext(em.schedule.work),
            crate::schedule::PARALLEL_MIN
        );
        buffer_pointers(&mut body, &em);
        match &k.kind {
            KernelKind::Scatter(sc) => emit_scatter(&mut body, &em, k, sc),
            KernelKind::Gemm(mm) => emit_matmul(&mut body, &em, k, mm),
            KernelKind::Scan(sk) => emit_scan(&mut body, &em, k, &sk.scan),
            KernelKind::Nest(n) => emit_nest(&mut body, &em, k, n),
        }
        let _ = writeln!(body, "  return e_;\n}}");
        // GCC 12.2's vectorizer gives the masked loads of an if-converted select the mask of
        // its first vector only (wrong values for `where(a > 0, y, z)` on a 4×5 array): a kernel
        // reading memory under a condition is compiled without loop if-conversion.
        let attribute = if em.conditional_reads.get() { "STRATA_NO_IFCVT " } else { "" };
        let _ = writeln!(out, "\n/* kernel {ki}: {} */", k.comment);
        let _ =
            writeln!(out, "static {attribute}int {symbol}_kernel{ki}(void **buf, const strata_rt *rt, int threads) {{");
        out.push_str(&extents::declarations(first_slot, program.buffers.len()));
        out.push_str(&body);
    }
    let _ = writeln!(
        out,
        "\nint {symbol}(void **buf, int threads, const strata_rt *rt) {{\n  int e;\n  strata_bad[4] = 0;\n  if (threads > 0) omp_set_num_threads(threads);"
    );
    for ki in 0..program.kernels.len() {
        let _ = writeln!(out, "  if ((e = {symbol}_kernel{ki}(buf, rt, threads))) return e;");
    }
    let _ = writeln!(out, "  return 0;\n}}");
    // The kernels `run` marks, in order: one phase of a run split around late inputs
    // (`crate::phases`).
    let _ = writeln!(
        out,
        "\nint {symbol}_some(void **buf, int threads, const strata_rt *rt, const unsigned char *run) {{\n  int e;\n  strata_bad[4] = 0;\n  if (threads > 0) omp_set_num_threads(threads);"
    );
    for ki in 0..program.kernels.len() {
        let _ = writeln!(out, "  if (run[{ki}] && (e = {symbol}_kernel{ki}(buf, rt, threads))) return e;");
    }
    let _ = writeln!(out, "  return 0;\n}}");
}

/// The loop nest of a [`KernelKind::Nest`] kernel: a sparse result's two passes, a windowed
/// nest, a nest over stored coordinates, a contraction's strips, or plain loops.
fn emit_nest(out: &mut String, em: &Emitter, k: &Kernel, n: &crate::kernel::Nest) {
    if let Some(c) = &n.compressed {
        return emit_compressed(out, em, k, c);
    }
    if !n.windows.is_empty() {
        return window::emit_windowed(out, em, k);
    }
    // Points in groups: their folds' loops open inside every domain loop, so a set walked by
    // a fold stays inside the loops its parent position depends on (`jam-rows` groups such
    // points only where the set does not depend on the grouped level).
    if em.schedule.layout == Layout::JammedRows {
        return jam::emit_jammed(out, em, k);
    }
    // Loops over stored coordinates: plain loop nests, folds evaluated per point (strips
    // and shared fold loops would hoist a set's loop out of the loops its parent
    // position depends on).
    if !k.sets.is_empty() {
        return emit_loops(out, em, k);
    }
    // Contraction kernels: the innermost dimension is strip-mined and each always-evaluated
    // reduction keeps a row of accumulators (see `schedule::Layout::Strips`).
    if em.schedule.layout == Layout::Strips {
        let mut hoisted = Vec::new();
        let hoisted_stores: Vec<Rc<SExpr>> =
            k.stores.iter().map(|st| hoist_reductions(&st.value, &mut hoisted, &|_| true)).collect();
        return emit_contraction(out, em, k, &hoisted, &hoisted_stores, n.fold_strips);
    }
    emit_loops(out, em, k);
}

/// A plain loop nest: one loop per domain level (the outermost shared among threads), the
/// stores at each point.
fn emit_loops(out: &mut String, em: &Emitter, k: &Kernel) {
    let mut indent = String::from("  ");
    let braces = open_domain_loops(out, em, &k.domain, &mut indent);
    // Folds over the same loop variables (the x and y sums of the nabla over one neighbor
    // table) share one loop: their table reads and checks happen once per step.
    let mut folds = Vec::new();
    let hoisted = hoisted_stores(k, &mut folds);
    if em.schedule.layout == Layout::SharedFolds {
        emit_sibling_folds(out, em, &folds, &indent);
        emit_stores(out, em, &hoisted, &indent);
    } else {
        emit_stores(out, em, &k.stores, &indent);
    }
    close_loops(out, &mut indent, braces);
}

/// Hoisted folds (in dependency order) as accumulator registers at the current point; runs of
/// consecutive folds over the same variables that do not read each other share one loop, each
/// stepping in its own order (results unchanged).
fn emit_sibling_folds(out: &mut String, em: &Emitter, folds: &[Rc<SExpr>], indent: &str) {
    for g in sibling_groups(folds) {
        if let [one] = g[..] {
            let SExpr::Reduce { id, scalar, .. } = &**one else { unreachable!("hoisted folds") };
            let _ = writeln!(out, "{indent}{} acc{id} = {};", c_type(*scalar), em.value(one));
            continue;
        }
        let mut steps = Vec::new();
        let mut sums = Vec::new();
        let bodies: Vec<&Rc<SExpr>> =
            g.iter().filter_map(|f| if let SExpr::Reduce { body, .. } = &***f { Some(body) } else { None }).collect();
        let (decls, step_em) = em.bind_tables(&bodies);
        steps.push(decls);
        for f in &g {
            let SExpr::Reduce { id, init, scalar, body, .. } = &***f else { unreachable!("hoisted folds") };
            let _ = writeln!(out, "{indent}{} acc{id} = {};", c_type(*scalar), em.value(init));
            steps.push(step_em.fold_step(*id, body));
            sums.push(format!("acc{id}"));
        }
        let simd = if g.iter().all(|f| em.reassociates(f)) { sums } else { Vec::new() };
        let loops = em.fold_loops(fold_vars(g[0]).expect("a fold"), &simd);
        let _ = writeln!(out, "{indent}{loops}{{ {} }}", steps.join(" "));
    }
}

/// One store per point: `target = value`, or zero where the value is absent.
fn emit_stores(out: &mut String, em: &Emitter, stores: &[Store], indent: &str) {
    emit_stores_at(out, em, stores, indent, &|c| c);
}

/// [`emit_stores`] at the point whose target coordinates are `at` of the loop variables'.
fn emit_stores_at(out: &mut String, em: &Emitter, stores: &[Store], indent: &str, at: &dyn Fn(Coord) -> Coord) {
    let values: Vec<&Rc<SExpr>> = stores.iter().map(|s| &s.value).collect();
    let (decls, em) = em.bind_tables(&values);
    if !decls.is_empty() {
        let _ = writeln!(out, "{indent}{}", decls.trim_end());
    }
    for s in stores {
        let b = &em.program.buffers[s.buffer];
        let coords = crate::sym::level_vars(&b.levels).into_iter().map(at).collect();
        let target = em.load(&Load { buffer: s.buffer, coords });
        let v = em.value(&s.value);
        match em.presence(&s.value) {
            None => {
                let _ = writeln!(out, "{indent}{target} = {v};");
            }
            Some(p) => {
                let _ = writeln!(out, "{indent}{target} = {p} ? {v} : ({})0;", c_type(b.scalar));
            }
        }
    }
}

/// The row-major offset (a C expression) of the point whose coordinate along `levels[i]` is
/// the C expression `coordinate(i, level)`.
fn row_major(levels: &[strata_ir::Level], coordinate: impl Fn(usize, &strata_ir::Level) -> String) -> String {
    levels.iter().enumerate().fold(String::from("0"), |at, (i, l)| {
        format!("({at}) * {} + ({} - ({}))", ext(l.interval.len() as i64), coordinate(i, l), ext(l.interval.start))
    })
}

/// Closes `n` loops opened at `indent`.
fn close_loops(out: &mut String, indent: &mut String, n: usize) {
    for _ in 0..n {
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
    }
}
