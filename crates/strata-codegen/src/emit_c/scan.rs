//! Sequential kernels: scans (chained, per strip), their stages, and arg-best folds.

use super::*;

/// A scan kernel, with its chained stages (`ScanKernel::chain`). Unless the scanned dimension is
/// the contiguous one of its reads, the innermost domain level is strip-mined and each strip
/// keeps a row of state registers, so each sequential loop runs outside a loop over
/// independent columns that vectorizes (every column still updates in order: results are
/// unchanged). Strip-local buffers (`ScanKernel::local`) live in scratch arrays per strip. A fold
/// with a tuple accumulator (`last_only`) stores its final state after the sequential loop.
pub(super) fn emit_scan(out: &mut String, em: &Emitter, k: &Kernel, sc: &ScanLoop) {
    let stages: Vec<(&ScanLoop, &[Store])> =
        std::iter::once((sc, &k.stores[..])).chain(k.chain().iter().map(|st| (&st.scan, &st.stores[..]))).collect();
    let along = stages.iter().all(|(s, _)| s.updates.iter().all(|u| contiguous_along(u, &s.dim.name)));
    let mut indent = String::from("  ");
    let (inner, outer) = match k.domain.split_last() {
        Some((i, o)) if !along => (Some(i), o),
        _ => (None, &k.domain[..]),
    };
    open_domain_loops(out, em, outer, &mut indent);
    let mut open = outer.len();
    let column = inner.map(|inner| {
        open += 1;
        open_strip(out, inner, outer.is_empty(), STRIP, &mut indent)
    });
    let local_em;
    let em = if k.local().is_empty() {
        em
    } else {
        let width = if column.is_some() { STRIP } else { 1 };
        for &b in k.local() {
            let t = c_type(em.program.buffers[b].scalar);
            let _ = writeln!(
                out,
                "{indent}{t} loc{b}[{}];  /* %{} for this strip, in cache */",
                sc.dim.interval.len() as i64 * width,
                em.program.buffers[b].name
            );
        }
        let scan = (var(sc.dim.name.as_str()), sc.dim.interval.start);
        local_em = Emitter {
            program: em.program,
            schedule: em.schedule,
            local: Some(Local { buffers: k.local().to_vec(), scan, column: column.clone() }),
            sets: em.sets,
            windows: em.windows,
            entries: em.entries.clone(),
            next_entry: em.next_entry.clone(),
            prechecked: em.prechecked.clone(),
            conditional_reads: em.conditional_reads.clone(),
        };
        &local_em
    };
    for (sc, stores) in stages {
        emit_scan_stage(out, em, sc, stores, column.as_deref(), &mut indent);
    }
    close_loops(out, &mut indent, open);
}

/// One sequential loop of a scan kernel, inside the domain loops (and the strip loop over
/// `column`, when strip-mined).
pub(super) fn emit_scan_stage(
    out: &mut String,
    em: &Emitter,
    sc: &ScanLoop,
    stores: &[Store],
    column: Option<&str>,
    indent: &mut String,
) {
    // A step whose update is absent (a skipped neighbor, a position past a ragged run) is
    // skipped, keeping the state, as the interpreter's folds and scans do.
    let guard: Vec<String> = sc.updates.iter().filter_map(|u| em.presence(u)).collect();
    // Inside a strip, each column reads its state from the row and writes it back.
    let strip = column.map(|j| {
        for (id, t, init) in &sc.states {
            let _ = writeln!(out, "{indent}{} st{id}[{STRIP}];  /* scan state per column */", c_type(*t));
            let _ =
                writeln!(out, "{indent}for (int64_t {j} = jb; {j} < je; ++{j}) st{id}[{j} - jb] = {};", em.value(init));
        }
        let load: Vec<String> =
            sc.states.iter().map(|(id, t, _)| format!("{} acc{id} = st{id}[{j} - jb];", c_type(*t))).collect();
        let save: Vec<String> = sc.states.iter().map(|(id, _, _)| format!("st{id}[{j} - jb] = acc{id};")).collect();
        (format!("for (int64_t {j} = jb; {j} < je; ++{j}) {{"), load.join(" "), save.join(" "))
    });
    if strip.is_none() {
        for (id, t, init) in &sc.states {
            let _ = writeln!(out, "{indent}{} acc{id} = {};  /* scan state */", c_type(*t), em.value(init));
        }
        if let Some(best) = sc.arg_best.as_ref().filter(|_| sc.last_only && sc.forward && guard.is_empty()) {
            emit_arg_best(out, em, sc, best, indent);
            emit_stores(out, em, stores, indent);
            return;
        }
    }
    let d = var(sc.dim.name.as_str());
    let (a, b) = (ext(sc.dim.interval.start), ext(sc.dim.interval.stop));
    let span = super::extents::interval(sc.dim.interval);
    if sc.forward {
        let _ =
            writeln!(out, "{indent}for (int64_t {d} = {a}; {d} < {b}; ++{d}) {{  /* {}{span} in order */", sc.dim.name);
    } else {
        let _ = writeln!(
            out,
            "{indent}for (int64_t {d} = {b} - 1; {d} >= {a}; --{d}) {{  /* {}{span} backward */",
            sc.dim.name
        );
    }
    indent.push_str("  ");
    let mut steps = 1;
    if let Some((head, load, _)) = &strip {
        let _ = writeln!(out, "{indent}{head}");
        indent.push_str("  ");
        steps += 1;
        let _ = writeln!(out, "{indent}{load}");
    }
    if !guard.is_empty() {
        let _ = writeln!(out, "{indent}if ({}) {{", guard.join(" && "));
        indent.push_str("  ");
    }
    for ((id, t, _), u) in sc.states.iter().zip(&sc.updates) {
        let _ = writeln!(out, "{indent}{} next{id} = {};", c_type(*t), em.value(u));
    }
    for (id, _, _) in &sc.states {
        let _ = writeln!(out, "{indent}acc{id} = next{id};");
    }
    if !guard.is_empty() {
        close_loops(out, indent, 1);
    }
    if !sc.last_only {
        emit_stores(out, em, stores, indent);
    }
    if let Some((_, _, save)) = &strip {
        let _ = writeln!(out, "{indent}{save}");
    }
    close_loops(out, indent, steps);
    if sc.last_only {
        match &strip {
            Some((head, load, _)) => {
                let _ = writeln!(out, "{indent}{head}  /* the final states */");
                indent.push_str("  ");
                let _ = writeln!(out, "{indent}{load}");
                emit_stores(out, em, stores, indent);
                close_loops(out, indent, 1);
            }
            None => emit_stores(out, em, stores, indent),
        }
    }
}

/// The independent vectors an argmax / argmin fold (see `kernel::ArgBest`) keeps, so that
/// consecutive steps do not wait on one compare-and-blend chain (measured on 4096² `f32` rows in
/// L2: 2.0 ms with one vector, 0.8 ms with four). Their lanes are the target's
/// (`STRATA_ARG_LANES` in the prelude, `lanes_` in the kernel): a vector wider than the
/// target's registers compiles to element-wise code.
pub(super) const VECTORS: i64 = 4;

/// An argmax / argmin fold as explicit vector code (GCC vector extensions, so it compiles for
/// any target): with `L` lanes a vector, lane `l` of vector `u` folds every element
/// `j ≡ Lu + l` (mod 4L) of each full block of `4L`, keeping its best value and the block it
/// came from in registers; a strictly better value replaces the lane's, so each lane keeps its
/// first best. The lanes combine
/// into the state registers by best value, then smallest index — the sequential fold's answer
/// (a lane that ever took a value holds one strictly better than the initial state) — and the
/// remaining elements fold in order after them. NaN is never better, as in the sequential
/// fold.
pub(super) fn emit_arg_best(
    out: &mut String,
    em: &Emitter,
    sc: &ScanLoop,
    best: &crate::kernel::ArgBest,
    indent: &str,
) {
    let [(v, vt, _), (i, it, _)] = &sc.states[..] else { unreachable!("two states") };
    let (vt, it) = (c_type(*vt), c_type(*it));
    let d = var(sc.dim.name.as_str());
    let (a, b) = (ext(sc.dim.interval.start), ext(sc.dim.interval.stop));
    let better = if best.less { "<" } else { ">" };
    let x = em.value(&best.value);
    // The lanes are the target's (`STRATA_ARG_LANES`): sizes in the text are C constants.
    let block = format!("({VECTORS} * lanes_)");
    let lanes = |u: &i64| if *u == 0 { "0".to_string() } else { format!("{u} * lanes_") };
    let _ = writeln!(
        out,
        "{indent}{{  /* arg{} over {}{} in {VECTORS} vectors of the target's lanes */",
        if best.less { "min" } else { "max" },
        sc.dim.name,
        super::extents::interval(sc.dim.interval)
    );
    let _ = writeln!(out, "{indent}  enum {{ lanes_ = STRATA_ARG_LANES({vt}) }};");
    let _ = writeln!(out, "{indent}  typedef {vt} vv_ __attribute__((vector_size(lanes_ * sizeof({vt}))));");
    let _ = writeln!(out, "{indent}  typedef int32_t vb_ __attribute__((vector_size(lanes_ * sizeof(int32_t))));");
    let vectors: Vec<i64> = (0..VECTORS).collect();
    let decls: Vec<String> =
        vectors.iter().map(|u| format!("vv_ bv{u} = (vv_){{0}} + acc{v}; vb_ bb{u} = (vb_){{0}} - 1;")).collect();
    let _ = writeln!(out, "{indent}  {}", decls.join(" "));
    // The block counter fits the lanes' 32-bit block numbers: `Lowerer` recognizes only folds
    // of fewer than 2^34 steps, and a block is at least 8 steps (4 vectors of 2 lanes).
    let _ = writeln!(out, "{indent}  int64_t jb = {a}; vb_ kv = {{0}};");
    let _ = writeln!(out, "{indent}  for (; jb + {block} <= {b}; jb += {block}, kv += 1) {{");
    // A value loaded contiguously along the fold is read as vectors straight from its buffer;
    // any other is computed into a block of lanes first.
    let direct = matches!(&*best.value, SExpr::Load(l) if !em.in_scratch(l.buffer))
        && contiguous_along(&best.value, &sc.dim.name);
    if !direct {
        let _ = writeln!(
            out,
            "{indent}    {vt} xs[{block}];\n{indent}    _Pragma(\"omp simd\") for (int l = 0; l < {block}; ++l) {{ const int64_t {d} = jb + l; xs[l] = {x}; }}"
        );
    }
    for u in &vectors {
        let source = if direct {
            format!("{{ const int64_t {d} = jb + {}; memcpy(&x, &{x}, sizeof x); {} }}", lanes(u), prefetch_ahead(&x))
        } else {
            format!("memcpy(&x, xs + {}, sizeof x);", lanes(u))
        };
        let _ = writeln!(
            out,
            "{indent}    {{ vv_ x; {source} const __typeof__(x > x) g = x {better} bv{u}; \
             bv{u} = (vv_)(((__typeof__(g))x & g) | ((__typeof__(g))bv{u} & ~g)); \
             const vb_ gb = __builtin_convertvector(g, vb_); bb{u} = (kv & gb) | (bb{u} & ~gb); }}"
        );
    }
    let _ = writeln!(out, "{indent}  }}");
    let stores: Vec<String> = vectors
        .iter()
        .map(|u| format!("memcpy(bvs + {0}, &bv{u}, sizeof bv{u}); memcpy(bbs + {0}, &bb{u}, sizeof bb{u});", lanes(u)))
        .collect();
    let _ = writeln!(out, "{indent}  {{ {vt} bvs[{block}]; int32_t bbs[{block}]; {}", stores.join(" "));
    let _ = writeln!(
        out,
        "{indent}    {vt} m = acc{v}; for (int l = 0; l < {block}; ++l) m = bvs[l] {better} m ? bvs[l] : m;"
    );
    let _ = writeln!(
        out,
        "{indent}    int64_t bi = INT64_MAX; for (int l = 0; l < {block}; ++l) {{ const int64_t i_ = {a} + (int64_t)bbs[l] * {block} + l; bi = (bbs[l] >= 0 && bvs[l] == m && i_ < bi) ? i_ : bi; }}"
    );
    let _ = writeln!(out, "{indent}    if (bi != INT64_MAX) {{ acc{v} = m; acc{i} = ({it})bi; }} }}");
    let _ = writeln!(
        out,
        "{indent}  for (int64_t {d} = jb; {d} < {b}; ++{d}) {{ {vt} x = {x}; if (x {better} acc{v}) {{ acc{v} = x; acc{i} = ({it}){d}; }} }}"
    );
    let _ = writeln!(out, "{indent}}}");
}

/// How far ahead of a vector loop's contiguous reads the loop asks for memory. The hardware
/// prefetcher alone kept a core's row stream of a 64 MiB matrix (partly in L3 between calls) at
/// about 45 GB/s on the AMD EPYC this was measured on; requests 8 KiB ahead raised it to about 60
/// (1–2 KiB gained less, 16 KiB no more), and cost nothing on rows that come from DRAM only.
pub(super) const PREFETCH_BYTES: i64 = 8192;

/// A request for the 64-byte line `PREFETCH_BYTES` after the element `load` (a C lvalue) reads
/// (integer arithmetic: the address may lie past the buffer; a prefetch never faults).
pub(super) fn prefetch_ahead(load: &str) -> String {
    format!("__builtin_prefetch((const void *)((uintptr_t)&{load} + {PREFETCH_BYTES}));")
}

/// Whether every load in `e` that depends on `dim` has it as its last (contiguous) coordinate.
pub(super) fn contiguous_along(e: &Rc<SExpr>, dim: &strata_ir::DimName) -> bool {
    loads_along(e, dim).0
}
