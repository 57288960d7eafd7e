//! The C for kernels that stage values in rolling windows ([`crate::stage`]): threads take
//! contiguous blocks of the outermost level; each keeps, per window, a ring of planes in a
//! scratch array of its own, computes the window's plane `p + ahead` and then the stores' plane
//! `p`, for `p` from its block's start minus the warm-up to its end.

use std::fmt::Write;

use crate::kernel::{Kernel, Store, Window};
use crate::sym::{Coord, Load};

use super::extents::{ext, interval};
use super::{c_type, close_loops, emit_stores, open_loops, var, Emitter};

impl Emitter<'_> {
    /// A read of window `w` (its outermost coordinate picks the ring's plane).
    pub(super) fn window_load(&self, w: &Window, l: &Load) -> String {
        let levels = &self.buffer(w.buffer).levels;
        let Some(Coord::Var { .. }) = l.coords.first() else { unreachable!("windows are read at loop variables") };
        let plane = super::row_major(&levels[1..], |i, _| self.coord(&l.coords[i + 1]));
        let size: i64 = levels[1..].iter().map(|lv| lv.interval.len() as i64).product();
        format!(
            "win{}[(({} - ({})) % {}) * {} + {plane}]",
            w.buffer,
            self.coord(&l.coords[0]),
            ext(levels[0].interval.start),
            w.depth(),
            ext(size)
        )
    }
}

/// A kernel with windows: see the module documentation.
pub(super) fn emit_windowed(out: &mut String, em: &Emitter, k: &Kernel) {
    let (outer, inner) = k.domain.split_first().expect("windowed kernels have two levels or more");
    let (start, len) = (ext(outer.interval.start), ext(outer.interval.len() as i64));
    let warm_up = k.windows().iter().map(|w| w.behind - w.ahead).min().unwrap_or(0);
    let p = var(outer.name.as_str());
    let _ = writeln!(out, "  #pragma omp parallel reduction(max:e_) if(par_)");
    let _ = writeln!(out, "  {{");
    let _ = writeln!(out, "    int *err = &e_; (void)err;");
    let _ = writeln!(out, "    const int64_t nt_ = omp_get_num_threads(), t_ = omp_get_thread_num();");
    let _ = writeln!(
        out,
        "    const int64_t c0_ = {start} + {len} * t_ / nt_, c1_ = {start} + {len} * (t_ + 1) / nt_;  /* this thread's planes of {} */",
        outer.name
    );
    let mut allocated = Vec::new();
    for w in k.windows() {
        let b = em.buffer(w.buffer);
        let t = c_type(b.scalar);
        let size: i64 = b.levels[1..].iter().map(|lv| lv.interval.len() as i64).product::<i64>() * w.depth();
        let _ = writeln!(
            out,
            "    {t} *restrict win{} = ({t} *)aligned_alloc(64, (sizeof({t}) * {} + 63) / 64 * 64);  /* {} planes of %{} */",
            w.buffer,
            ext(size),
            w.depth(),
            b.name
        );
        allocated.push(format!("win{}", w.buffer));
    }
    let _ = writeln!(out, "    if (!({})) e_ = 5;", allocated.join(" && "));
    let _ = writeln!(out, "    else if (c0_ < c1_)");
    let _ = writeln!(out, "    for (int64_t p_ = c0_ + ({warm_up}); p_ < c1_; ++p_) {{");
    let newest = newest_plane(em, k, &outer.name);
    for (wi, w) in k.windows().iter().enumerate() {
        let b = em.buffer(w.buffer);
        let _ = writeln!(
            out,
            "      if (p_ + ({}) >= c0_ + ({})) {{  /* plane p + {} of %{} */",
            w.ahead, w.behind, w.ahead, b.name
        );
        let _ = writeln!(out, "        const int64_t {p} = p_ + ({});", w.ahead);
        let mut indent = String::from("        ");
        let levels = &b.levels[1..];
        let (rows, last) = levels.split_at(levels.len() - 1);
        let mut braces = open_loops(out, em, rows, &mut indent, None);
        // The first window reading the newest input plane asks for its rows ahead.
        if let Some((_, loads)) = newest.as_ref().filter(|(first, _)| *first == wi) {
            for l in rows_to_request(loads, &last[0]) {
                let _ = writeln!(out, "{indent}{}", prefetch_rows(em, l, &last[0]));
            }
        }
        let (d, range) = (var(last[0].name.as_str()), last[0].interval);
        let _ = writeln!(
            out,
            "{indent}for (int64_t {d} = {}; {d} < {}; ++{d}) {{  /* {}{} */",
            ext(range.start),
            ext(range.stop),
            last[0].name,
            interval(range)
        );
        indent.push_str("  ");
        braces += 1;
        let store = Store { buffer: w.buffer, value: w.value.clone() };
        emit_stores(out, em, std::slice::from_ref(&store), &indent);
        close_loops(out, &mut indent, braces);
        let _ = writeln!(out, "      }}");
    }
    let _ = writeln!(out, "      if (p_ >= c0_) {{  /* the stores' plane */");
    let _ = writeln!(out, "        const int64_t {p} = p_;");
    let mut indent = String::from("        ");
    let streamed = em.schedule.stream;
    if streamed {
        let (row_loops, last) = inner.split_at(inner.len() - 1);
        let braces = open_loops(out, em, row_loops, &mut indent, None);
        emit_row_stores(out, em, &k.stores, &last[0], &indent);
        close_loops(out, &mut indent, braces);
    } else {
        let braces = open_loops(out, em, inner, &mut indent, None);
        emit_stores(out, em, &k.stores, &indent);
        close_loops(out, &mut indent, braces);
    }
    let _ = writeln!(out, "      }}");
    let _ = writeln!(out, "    }}");
    if streamed {
        let _ = writeln!(out, "    strata_stream_fence();");
    }
    for w in &allocated {
        let _ = writeln!(out, "    free({w});");
    }
    let _ = writeln!(out, "  }}");
}

/// The stores at every point of the innermost level `last`, computed into rows in cache (a
/// vector loop) and then streamed to their buffers (`strata_stream`).
fn emit_row_stores(out: &mut String, em: &Emitter, stores: &[Store], last: &strata_ir::Level, indent: &str) {
    let d = var(last.name.as_str());
    let (a, b) = (last.interval.start, last.interval.stop);
    let n = last.interval.len();
    let mut rows = Vec::new();
    let mut computed = Vec::new();
    let mut streamed = Vec::new();
    for (i, st) in stores.iter().enumerate() {
        let buffer = em.buffer(st.buffer);
        let t = c_type(buffer.scalar);
        rows.push(format!("{t} row{i}_[{n}] __attribute__((aligned(64)));"));
        computed.push(format!("row{i}_[{d} - ({a})] = {};", em.value(&st.value)));
        let mut coords = crate::sym::level_vars(&buffer.levels);
        *coords.last_mut().expect("a row") = Coord::Const(a);
        let start = em.load(&Load { buffer: st.buffer, coords });
        streamed.push(format!("strata_stream(&{start}, row{i}_, sizeof row{i}_);"));
    }
    let _ = writeln!(out, "{indent}{{  /* {}{}: rows computed in cache, then streamed */", last.name, last.interval);
    let _ = writeln!(out, "{indent}  {}", rows.join(" "));
    let _ = writeln!(
        out,
        "{indent}  _Pragma(\"omp simd\") for (int64_t {d} = {a}; {d} < {b}; ++{d}) {{ {} }}",
        computed.join(" ")
    );
    let _ = writeln!(out, "{indent}  {}", streamed.join(" "));
    let _ = writeln!(out, "{indent}}}");
}

/// How far ahead, in bytes of whole rows, a windowed kernel asks for the rows of the newest
/// input plane (measured on the laplacian of laplacian, one thread: 2.4 -> 2.15 ms at 2-4 KiB,
/// about the same at 1 KiB and 8 KiB).
const PREFETCH_ROWS_BYTES: i64 = 4096;

/// The input loads (buffers outside the kernel's scratch, at loop variables plus constants,
/// the outermost being `outer`) of `e`, with their offsets along `outer`, without repeats.
fn input_loads(em: &Emitter, e: &std::rc::Rc<crate::sym::SExpr>, outer: &strata_ir::DimName) -> Vec<(Load, i64)> {
    fn visit(p: crate::sym::Part, em: &Emitter, outer: &strata_ir::DimName, out: &mut Vec<(Load, i64)>) {
        if let crate::sym::Part::Expr(e) = p {
            if let crate::sym::SExpr::Load(l) = &**e {
                let plain = l.coords.iter().all(|c| matches!(c, Coord::Var { .. }));
                if let (true, Some(Coord::Var { dim, offset })) = (plain && !em.in_scratch(l.buffer), l.coords.first())
                {
                    if dim == outer && !out.iter().any(|(m, _)| m == &**l) {
                        out.push(((**l).clone(), *offset));
                    }
                }
            }
            crate::sym::for_each_part(e, &mut |q| visit(q, em, outer, out));
        }
    }
    let mut out = Vec::new();
    visit(crate::sym::Part::Expr(e), em, outer, &mut out);
    out
}

/// The newest input plane a step of the kernel reads (a window computed `ahead` planes ahead
/// of the stores reads plane `ahead + o` through a load at outermost offset `o`): what no
/// earlier step has touched, so the hardware prefetcher alone meets it late. Returns the first
/// window reading it, and the loads reading it in the windows computed at the same plane (so
/// that their coordinates hold in that window's loops).
fn newest_plane(em: &Emitter, k: &Kernel, outer: &strata_ir::DimName) -> Option<(usize, Vec<Load>)> {
    let windows = k.windows();
    let reads: Vec<(usize, i64, Load)> = windows
        .iter()
        .enumerate()
        .flat_map(|(i, w)| input_loads(em, &w.value, outer).into_iter().map(move |(l, o)| (i, w.ahead + o, l)))
        .collect();
    let plane = reads.iter().map(|(_, p, _)| *p).max()?;
    let first = reads.iter().find(|(_, p, _)| *p == plane)?.0;
    let ahead = windows[first].ahead;
    let loads = reads.into_iter().filter(|(i, p, _)| *p == plane && windows[*i].ahead == ahead).map(|(_, _, l)| l);
    Some((first, loads.collect()))
}

/// The loads among `loads` that are contiguous along `last`, one per buffer: the loads of a
/// plane at several rows (J - 1, J, J + 1) read the same rows one step apart, and the furthest
/// ahead stands for them.
fn rows_to_request<'l>(loads: &'l [Load], last: &strata_ir::Level) -> Vec<&'l Load> {
    let along = |l: &Load| matches!(l.coords.last(), Some(Coord::Var { dim, .. }) if *dim == last.name);
    let row = |l: &Load| match l.coords.iter().rev().nth(1) {
        Some(Coord::Var { offset, .. }) => *offset,
        _ => 0,
    };
    let mut chosen: Vec<&Load> = Vec::new();
    for l in loads.iter().filter(|l| along(l)) {
        match chosen.iter_mut().find(|c| c.buffer == l.buffer) {
            Some(c) if row(l) > row(c) => *c = l,
            Some(_) => {}
            None => chosen.push(l),
        }
    }
    chosen
}

/// Requests for the row `PREFETCH_ROWS_BYTES` ahead of the one load `l` reads at the current
/// row, every 64-byte line of it; `last` is the innermost loop, along which `l` is contiguous.
/// Integer arithmetic: the address may lie past the buffer, and a prefetch never faults.
fn prefetch_rows(em: &Emitter, l: &Load, last: &strata_ir::Level) -> String {
    let b = em.buffer(l.buffer);
    let row_bytes = b.levels.last().map_or(0, |lv| lv.interval.len() as i64) * b.scalar.size_bytes() as i64;
    let ahead = (PREFETCH_ROWS_BYTES / row_bytes.max(1)).max(1) * row_bytes;
    let at_start = crate::sym::substitute(
        &std::rc::Rc::new(crate::sym::SExpr::Load(std::rc::Rc::new(l.clone()))),
        &last.name,
        &Coord::Const(last.interval.start),
    );
    let crate::sym::SExpr::Load(first) = &*at_start else { unreachable!("a load stays a load") };
    format!(
        "for (int64_t q_ = 0; q_ < {}; q_ += 64) __builtin_prefetch((const void *)((uintptr_t)&{} + {} + q_));",
        ext(row_bytes),
        em.load(first),
        ext(ahead)
    )
}
