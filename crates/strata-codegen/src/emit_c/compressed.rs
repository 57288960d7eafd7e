//! Kernels writing sparse results as storage, and scatters.

use super::*;
use crate::sparse::{IterSet, LevelStorage};

/// A kernel writing a sparse result as storage ([`CompressedOut`]), in two passes over the
/// rows, which threads share in static blocks (so each thread's rows are consecutive, in
/// thread order). The first bounds each row's entries — the iterations of its loop over stored
/// coordinates (a Gustavson row: the stored entries of the `B` rows it visits), or, for a
/// loop over the whole interval, the exact count of non-zero values. The run allocates the
/// coordinates and values for the bound's total (`rt->alloc`; pages never written cost no
/// memory), and the second pass computes the values once, each thread writing its rows' non-zeros
/// one after the other from its first row's bounded start and counting them into the
/// positions. A prefix sum makes the counts row starts, and each thread's entries move down to
/// theirs (nothing moves when the bound was exact). Within a row the innermost loop runs in
/// order, so coordinates are sorted; a Gustavson row puts the columns it touched in order.
pub(super) fn emit_compressed(out: &mut String, em: &Emitter, k: &Kernel, c: &CompressedOut) {
    let Some((inner, outer)) = k.domain.split_last() else { unreachable!("a compressed result has a level") };
    let [store] = &k.stores[..] else { unreachable!("one store: the values") };
    let (pos, crd, val) = (em.name(c.positions), em.name(c.coordinates), em.name(store.buffer));
    let t = c_type(em.program.buffers[store.buffer].scalar);
    // The row: the outer coordinates, row-major.
    let row = row_major(outer, |_, l| var(l.name.as_str()));
    let rows_n: u64 = outer.iter().map(|l| l.interval.len()).product();
    let rows = ext(rows_n as i64);
    let j = var(inner.name.as_str());
    let start = ext(inner.interval.start);
    let width_n = inner.interval.len();
    let width = ext(width_n as i64);
    // The workspace's bitmaps: one bit per column, one bit per word of those.
    let words1_n = width_n.div_ceil(64);
    let (words1, words0) = (ext(words1_n as i64), ext(words1_n.div_ceil(64) as i64));
    let ws = c.workspace.as_ref().map(|w| {
        let SExpr::Reduce { id, vars, init, scalar, body } = &*w.fold else { unreachable!("a workspace runs a fold") };
        (w, *id, vars, init, c_type(*scalar), body)
    });
    // A merge (union) visits rows sequentially: no loop to share, so one thread runs it.
    let shared = outer.first().is_some_and(|l| !em.set_of(&l.name).is_some_and(|c| c.is_union()));
    let pragma = shared.then_some("#pragma omp for schedule(static)");
    let mut indent = String::from("  ");
    let _ = writeln!(out, "{indent}{{");
    indent.push_str("  ");
    let _ = writeln!(out, "{indent}const int nt_ = (par_ && {}) ? omp_get_max_threads() : 1;", shared as i32);
    let _ = writeln!(out, "{indent}int64_t tn_[nt_], ts_[nt_], at_[nt_ + 1];");
    let _ = writeln!(out, "{indent}for (int i_ = 0; i_ < nt_; ++i_) {{ tn_[i_] = 0; ts_[i_] = 0; }}");
    let _ = writeln!(out, "{indent}int64_t *st_ = calloc({rows} + 1, sizeof(int64_t));  /* bounded row starts */");
    let _ = writeln!(out, "{indent}if (!st_) return 5;");
    let _ = writeln!(out, "{indent}st_[0] = 0;");
    for phase in 0..2 {
        let _ = writeln!(
            out,
            "{indent}/* {} */",
            if phase == 0 { "bound each row's entries" } else { "write each row's non-zeros" }
        );
        let _ = writeln!(out, "{indent}#pragma omp parallel num_threads(nt_) reduction(max:e_)");
        let _ = writeln!(out, "{indent}{{");
        indent.push_str("  ");
        if phase == 1 {
            let _ = writeln!(out, "{indent}const int t_ = omp_get_thread_num();");
            let _ = writeln!(out, "{indent}int64_t n_ = -1, s_ = 0;");
            if let Some((_, _, _, _, wt, _)) = &ws {
                let _ = writeln!(
                    out,
                    "{indent}/* the row's workspace (Gustavson): accumulators, the touched columns, and a bitmap of them with a bitmap of its non-zero words */"
                );
                // One more element each: `malloc(0)` may return NULL.
                let _ = writeln!(out, "{indent}{wt} *w_ = malloc(({width} + 1) * sizeof({wt}));");
                let _ = writeln!(out, "{indent}int64_t *ls_ = malloc(({width} + 1) * sizeof(int64_t));");
                let _ = writeln!(
                    out,
                    "{indent}uint64_t *bm1_ = calloc({words1} + 1, sizeof(uint64_t)), *bm0_ = calloc({words0} + 1, sizeof(uint64_t));"
                );
                let _ = writeln!(out, "{indent}if (!w_ || !ls_ || !bm1_ || !bm0_) e_ = 5;");
            }
        }
        let braces = open_loops(out, em, outer, &mut indent, pragma);
        let _ = writeln!(out, "{indent}if (e_ != 5) {{");
        indent.push_str("  ");
        let _ = writeln!(out, "{indent}const int64_t r_ = {row};");
        if phase == 0 {
            let _ = writeln!(out, "{indent}int64_t n_ = 0;");
        } else {
            let _ = writeln!(out, "{indent}if (n_ < 0) {{ n_ = s_ = ts_[t_] = st_[r_]; }}");
            let _ = writeln!(out, "{indent}const int64_t n0_ = n_;");
        }
        let append = format!("if (v_ != 0) {{ {crd}[n_] = {j} - ({start}); {val}[n_] = v_; ++n_; }}");
        match (&ws, phase) {
            (None, _) => {
                let bound = em.set_of(&inner.name).and_then(|c| em.set_bound(&c.set));
                match (bound, phase) {
                    // The bound from the positions alone.
                    (Some(bound), 0) => {
                        let _ = writeln!(out, "{indent}n_ = {bound};");
                    }
                    _ => {
                        let (p, v) = (em.present(&store.value), em.value(&store.value));
                        let action = if phase == 0 { "n_ += v_ != 0;" } else { &append };
                        let inner_braces = open_loops(out, em, std::slice::from_ref(inner), &mut indent, None);
                        let _ = writeln!(out, "{indent}if ({p}) {{ const {t} v_ = {v}; {action} }}");
                        close_loops(out, &mut indent, inner_braces);
                    }
                }
            }
            // The bound: the lengths of the `B` rows the fold visits.
            (Some((_, _, vars, ..)), 0) => {
                let cj = em.set_of(&inner.name);
                let bound = cj.and_then(|cj| em.set_bound(&cj.set));
                let Some(bound) = bound else { unreachable!("the workspace pass adds a compressed column loop") };
                let _ = writeln!(out, "{indent}{}n_ += {bound};", gustavson_loops(em, vars, cj, false));
                let _ = writeln!(out, "{indent}if (n_ > {width}) n_ = {width};");
            }
            (Some((w, id, vars, init, wt, body)), _) => {
                let Some(cj) = em.set_of(&inner.name) else { unreachable!("the workspace pass adds the column loop") };
                let _ = writeln!(out, "{indent}int64_t nl_ = 0;");
                let _ = writeln!(out, "{indent}{}{}{{", gustavson_loops(em, vars, Some(cj), true), em.set_loop(cj));
                let _ = writeln!(out, "{indent}  const int64_t t_ = {j} - ({start});");
                let _ = writeln!(
                    out,
                    "{indent}  uint64_t *wd_ = &bm1_[t_ >> 6]; const uint64_t bit_ = UINT64_C(1) << (t_ & 63);"
                );
                let _ = writeln!(
                    out,
                    "{indent}  if (!(*wd_ & bit_)) {{ *wd_ |= bit_; bm0_[t_ >> 12] |= UINT64_C(1) << ((t_ >> 6) & 63); ls_[nl_++] = t_; w_[t_] = {}; }}",
                    em.value(init)
                );
                let _ = writeln!(out, "{indent}  {wt} acc{id} = w_[t_]; {} w_[t_] = acc{id};", em.fold_step(*id, body));
                let _ = writeln!(out, "{indent}}}");
                let _ = writeln!(
                    out,
                    "{indent}/* the touched columns in order (the bitmaps cleared): a few sorted, more read off the bitmaps */"
                );
                let _ = writeln!(
                    out,
                    "{indent}if (nl_ <= 32) {{ strata_sort_i64(ls_, nl_); for (int64_t l_ = 0; l_ < nl_; ++l_) {{ bm1_[ls_[l_] >> 6] = 0; bm0_[ls_[l_] >> 12] = 0; }} }}"
                );
                let _ = writeln!(
                    out,
                    "{indent}else {{ nl_ = 0; for (int64_t u_ = 0; u_ < {words0}; ++u_) {{ uint64_t x_ = bm0_[u_]; bm0_[u_] = 0; \
                     while (x_) {{ const int64_t wi_ = u_ * 64 + __builtin_ctzll(x_); x_ &= x_ - 1; uint64_t y_ = bm1_[wi_]; bm1_[wi_] = 0; \
                     while (y_) {{ ls_[nl_++] = wi_ * 64 + __builtin_ctzll(y_); y_ &= y_ - 1; }} }} }} }}"
                );
                let (p, v) = (em.present(&w.value), em.value(&w.value));
                let _ = writeln!(out, "{indent}for (int64_t l_ = 0; l_ < nl_; ++l_) {{");
                let _ = writeln!(
                    out,
                    "{indent}  const int64_t {j} = ls_[l_] + ({start}); const {wt} acc{id} = w_[ls_[l_]]; (void){j}; (void)acc{id};"
                );
                let _ = writeln!(out, "{indent}  if ({p}) {{ const {t} v_ = {v}; {append} }}");
                let _ = writeln!(out, "{indent}}}");
            }
        }
        if phase == 0 {
            let _ = writeln!(out, "{indent}st_[r_ + 1] = n_;");
        } else {
            let _ = writeln!(out, "{indent}{pos}[r_ + 1] = n_ - n0_;");
        }
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
        close_loops(out, &mut indent, braces);
        if phase == 1 {
            let _ = writeln!(out, "{indent}tn_[t_] = n_ < 0 ? 0 : n_ - s_;");
            if ws.is_some() {
                let _ = writeln!(out, "{indent}free(w_); free(ls_); free(bm1_); free(bm0_);");
            }
        }
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
        if phase == 0 {
            let _ = writeln!(out, "{indent}/* bounded row starts; allocate for their total */");
            let _ = writeln!(out, "{indent}for (int64_t r_ = 0; r_ < {rows}; ++r_) st_[r_ + 1] += st_[r_];");
            let _ = writeln!(out, "{indent}if (e_ != 5) {{");
            for b in [c.coordinates, store.buffer] {
                let bt = c_type(em.program.buffers[b].scalar);
                let _ = writeln!(out, "{indent}  {} = ({bt} *)(buf[{b}] = rt->alloc({b}, st_[{rows}]));", em.name(b));
                let _ = writeln!(out, "{indent}  if (!{}) e_ = 5;", em.name(b));
            }
            let _ = writeln!(out, "{indent}}}");
            let _ = writeln!(out, "{indent}if (e_ == 5) {{ free(st_); return 5; }}");
        }
    }
    let _ = writeln!(out, "{indent}/* row starts; each thread's entries move down to theirs */");
    let _ = writeln!(out, "{indent}{pos}[0] = 0;");
    let _ = writeln!(out, "{indent}for (int64_t r_ = 0; r_ < {rows}; ++r_) {pos}[r_ + 1] += {pos}[r_];");
    let _ = writeln!(out, "{indent}at_[0] = 0;");
    let _ = writeln!(out, "{indent}for (int i_ = 0; i_ < nt_; ++i_) {{");
    let _ = writeln!(out, "{indent}  at_[i_ + 1] = at_[i_] + tn_[i_];");
    let _ = writeln!(out, "{indent}  if (tn_[i_] > 0 && ts_[i_] != at_[i_]) {{");
    let ct = c_type(em.program.buffers[c.coordinates].scalar);
    let _ = writeln!(out, "{indent}    memmove({crd} + at_[i_], {crd} + ts_[i_], tn_[i_] * sizeof({ct}));");
    let _ = writeln!(out, "{indent}    memmove({val} + at_[i_], {val} + ts_[i_], tn_[i_] * sizeof({t}));");
    let _ = writeln!(out, "{indent}  }}");
    let _ = writeln!(out, "{indent}}}");
    let _ = writeln!(out, "{indent}free(st_);");
    let _ = writeln!(out, "{indent}if (e_ == 5) return 5;");
    indent.truncate(indent.len() - 2);
    let _ = writeln!(out, "{indent}}}");
}

/// How far ahead in `A`'s stored coordinates a Gustavson row prefetches `B`'s row positions,
/// and `B`'s row itself (its position known by then).
const PREFETCH_POSITIONS: i64 = 16;
const PREFETCH_ROW: i64 = 6;

/// The fold loops of a Gustavson row (`vars`, over `A`'s stored columns `k`), prefetching
/// where both operands are CSR-like (a dense level over one compressed level, `B`'s rows
/// indexed by the fold variable): as each `k` is bound, `B`'s row positions for the entry
/// [`PREFETCH_POSITIONS`] ahead in `A`'s coordinates, and with `rows` the start of `B`'s row
/// (coordinates and values) for the entry [`PREFETCH_ROW`] ahead — across `A`'s rows, which
/// follow each other in memory. The rows of `B` are visited in `A`'s column order, so in a
/// matrix larger than the cache each one is a miss without them (a random 2^17-row `A·A`:
/// 620 -> 300 ms a product on one core, measured on the generated C).
fn gustavson_loops(
    em: &Emitter,
    vars: &[(strata_ir::DimName, strata_ir::Interval)],
    cj: Option<&CoIteration>,
    rows: bool,
) -> String {
    let prefetch = || -> Option<String> {
        let [(k, _)] = vars else { return None };
        let (ck, cj) = (em.set_of(k)?, cj?);
        let (IterSet::Stored { read: ra, level: 1 }, IterSet::Stored { read: rb, level: 1 }) = (&ck.set, &cj.set)
        else {
            return None;
        };
        let (a, b) = (&em.program.sparse[ra.tensor], &em.program.sparse[rb.tensor]);
        let csr = |t: &crate::sparse::SparseTensor| match t.storage[..] {
            [LevelStorage::Dense { size }, LevelStorage::Compressed { positions, coordinates }] => {
                Some((size, positions, coordinates))
            }
            _ => None,
        };
        let ((rows_a, pa, crd_a), (_, pb, crd_b)) = (csr(a)?, csr(b)?);
        let Coord::Var { dim, offset } = &rb.coords[0] else { return None };
        if dim != k || ck.merge {
            return None;
        }
        // `B`'s row for `A`'s stored coordinate at position q: crd_a[q] + start of A's columns
        // + the read's offset - start of B's rows.
        let shift = ext(a.levels[1].interval.start + offset - b.levels[0].interval.start);
        let q = format!("q_{}", var(k.as_str()));
        let (pa, crd_a, pb) = (em.name(pa), em.name(crd_a), em.name(pb));
        let mut stmt = format!(
            "if ({q} + {PREFETCH_POSITIONS} < {pa}[{}]) {{ __builtin_prefetch(&{pb}[{crd_a}[{q} + {PREFETCH_POSITIONS}] + {shift}]);",
            ext(rows_a as i64)
        );
        if rows {
            let (crd_b, vb) = (em.name(crd_b), em.name(b.values));
            let _ = write!(
                stmt,
                " const int64_t kn_ = {pb}[{crd_a}[{q} + {PREFETCH_ROW}] + {shift}]; __builtin_prefetch(&{crd_b}[kn_]); __builtin_prefetch(&{vb}[kn_]);"
            );
        }
        stmt.push_str(" }");
        Some(em.set_loop_with(ck, Some(&stmt)))
    };
    prefetch().unwrap_or_else(|| em.fold_loops(vars, &[]))
}

/// A kernel storing at data-dependent positions ([`Scatter`]). A compaction runs a
/// sequential loop over its dimension per domain point (over the stored coordinates where the
/// lowering found a set), counting the listed entries and marking the rest of the run absent;
/// an addition at coordinates checks each coordinate against its interval (error 4) and that
/// coordinates and values exist together (error 6). Threads share the outermost loop only
/// where distinct points write distinct rows.
pub(super) fn emit_scatter(out: &mut String, em: &Emitter, k: &Kernel, sc: &Scatter) {
    let mut indent = String::from("  ");
    match sc {
        Scatter::Compact { dim, value, element, coordinates, buffer, presence } => {
            let row = row_major(&k.domain, |_, l| var(l.name.as_str()));
            let run = ext(dim.interval.len() as i64);
            let (buf, pres) = (em.name(*buffer), em.name(*presence));
            let t = c_type(em.program.buffers[*buffer].scalar);
            let braces = open_domain_loops(out, em, &k.domain, &mut indent);
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}  const int64_t b_ = ({row}) * {run};");
            let _ = writeln!(out, "{indent}  int64_t n_ = 0;");
            let d = var(dim.name.as_str());
            let header = match em.set_of(&dim.name) {
                Some(c) => em.set_loop(c),
                None => {
                    format!("for (int64_t {d} = {}; {d} < {}; ++{d}) ", ext(dim.interval.start), ext(dim.interval.stop))
                }
            };
            let (p, v) = (em.present(value), em.value(value));
            let listed = if *coordinates { format!("({t}){d}") } else { "v_".to_string() };
            let _ = writeln!(
                out,
                "{indent}  {header}{{ if ({p}) {{ const {} v_ = {v}; if (v_ != 0) {{ {buf}[b_ + n_] = {listed}; {pres}[b_ + n_] = 0; ++n_; }} }} }}",
                c_type(*element)
            );
            let _ = writeln!(out, "{indent}  for (; n_ < {run}; ++n_) {{ {buf}[b_ + n_] = 0; {pres}[b_ + n_] = -1; }}");
            let _ = writeln!(out, "{indent}}}");
            close_loops(out, &mut indent, braces);
        }
        Scatter::AddAt { coordinate, value, buffer, target } => {
            let levels = &em.program.buffers[*buffer].levels;
            let shared = k.domain.first().is_some_and(|l| levels.iter().any(|b| b.name == l.name));
            let braces = open_loops(out, em, &k.domain, &mut indent, shared.then_some(PARALLEL_FOR));
            let at = row_major(levels, |i, l| if i == *target { "x_".to_string() } else { var(l.name.as_str()) });
            let span = levels[*target].interval;
            let (pc, c) = (em.present(coordinate), em.value(coordinate));
            let (pv, v) = (em.present(value), em.value(value));
            let buf = em.name(*buffer);
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}  const int pc_ = {pc}, pv_ = {pv};");
            let _ = writeln!(
                out,
                "{indent}  if (pc_ && pv_) {{ const int64_t x_ = (int64_t)({c}); if (x_ < {} || x_ >= {}) *err = 4; else {buf}[{at}] += {v}; }}",
                ext(span.start),
                ext(span.stop)
            );
            let _ = writeln!(out, "{indent}  else if (pc_ != pv_) *err = 6;");
            let _ = writeln!(out, "{indent}}}");
            close_loops(out, &mut indent, braces);
        }
    }
}
