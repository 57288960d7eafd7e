//! Runtime GEMM calls for matrix-product kernels, and other contractions.

use super::*;

/// A matrix-product kernel: the initial value stored first (when not zero), then one runtime
/// GEMM call per batch point, each parallel over the entry's threads.
pub(super) fn emit_matmul(out: &mut String, em: &Emitter, k: &Kernel, mm: &MatMul) {
    if let Some(init) = &mm.init {
        let _ = writeln!(out, "  /* the initial value, accumulated onto below */");
        emit_loops(out, em, &k.elementwise(mm.buffers[0], init.clone()));
    }
    let axes: Vec<String> = [("m", &mm.m), ("n", &mm.n), ("k", &mm.k)]
        .iter()
        .map(|(what, a)| format!("{what} = {}", a.names.iter().map(|d| d.as_str()).collect::<Vec<_>>().join("·")))
        .collect();
    let _ = writeln!(out, "  /* a matrix product ({}): the runtime GEMM */", axes.join(", "));
    let _ = writeln!(out, "  const int nthreads = threads > 0 ? threads : omp_get_max_threads();");
    // Threads share the outermost batch loop when it has work for each (every product then
    // runs on one thread); otherwise each product is parallel inside.
    let by_batch = mm.batch.first().map(|b| b.extent);
    match by_batch {
        Some(n) => {
            let _ = writeln!(out, "  const int by_batch = {} >= 4 * nthreads;", ext(n));
            let _ = writeln!(out, "  const int gemm_threads = by_batch ? 1 : nthreads;");
        }
        None => {
            let _ = writeln!(out, "  const int gemm_threads = nthreads;");
        }
    }
    let mut indent = String::from("  ");
    let mut at = mm.offsets.map(ext);
    for (i, b) in mm.batch.iter().enumerate() {
        let v = format!("bt{i}");
        if i == 0 {
            let _ = writeln!(out, "{indent}#pragma omp parallel for schedule(static) if(by_batch)");
        }
        let names: Vec<&str> = b.names.iter().map(|d| d.as_str()).collect();
        let _ = writeln!(
            out,
            "{indent}for (int64_t {v} = 0; {v} < {}; ++{v}) {{  /* batch {} */",
            ext(b.extent),
            names.join("·")
        );
        indent.push_str("  ");
        for (a, s) in at.iter_mut().zip(b.strides) {
            if s != 0 {
                *a = format!("{a} + {v} * {}", ext(s));
            }
        }
    }
    let [o, l, r] = mm.buffers.map(|b| em.name(b));
    let f = if mm.scalar == Scalar::F32 { "gemm_f32" } else { "gemm_f64" };
    let (m, n, kk) = (&mm.m, &mm.n, &mm.k);
    let _ = writeln!(
        out,
        "{indent}rt->{f}({}, {}, {}, {o} + {}, {}, {}, {}, {l} + {}, {}, {}, {r} + {}, {}, {}, gemm_threads, strata_parallel_for);",
        ext(m.extent),
        ext(n.extent),
        ext(kk.extent),
        at[0],
        ext(m.strides[0]),
        ext(n.strides[0]),
        i32::from(mm.init.is_some()),
        at[1],
        ext(m.strides[1]),
        ext(kk.strides[1]),
        at[2],
        ext(kk.strides[2]),
        ext(n.strides[2]),
    );
    for _ in &mm.batch {
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
    }
    if let Some(epilogue) = &mm.epilogue {
        let _ = writeln!(out, "  /* the epilogue, in place */");
        emit_loops(out, em, &k.elementwise(mm.buffers[0], epilogue.clone()));
    }
}

/// The loop nest of a contraction kernel (see [`hoist_reductions`]): outer loops, then strips
/// of the innermost dimension holding one accumulator row per reduction. With `share` (folds
/// reading crosswise, [`crate::fold_strips`]) sibling folds ([`sibling_groups`]) step in one
/// loop, reading their neighbor-table entries once per step.
pub(super) fn emit_contraction(
    out: &mut String,
    em: &Emitter,
    k: &Kernel,
    reductions: &[Rc<SExpr>],
    stores: &[Rc<SExpr>],
    share: bool,
) {
    let (inner, outer) = k.domain.split_last().expect("a non-empty domain");
    let mut indent = String::from("  ");
    open_domain_loops(out, em, outer, &mut indent);
    // Its schedule's strip (contractions: `STRIP`; longer where folds read crosswise).
    let strip_len = if em.schedule.strip > 0 { em.schedule.strip } else { STRIP };
    let j = open_strip(out, inner, outer.is_empty(), strip_len, &mut indent);
    let strip = format!("for (int64_t {j} = jb; {j} < je; ++{j})");
    let groups = if share { sibling_groups(reductions) } else { reductions.iter().map(|r| vec![r]).collect() };
    for g in groups {
        let parts: Vec<(u32, &'static str, &Rc<SExpr>)> = g
            .iter()
            .map(|r| match &***r {
                SExpr::Reduce { id, scalar, body, .. } => (*id, c_type(*scalar), body),
                _ => unreachable!("hoisted reductions"),
            })
            .collect();
        // Hoisted invariants the folds read, from their rows (each once).
        let mut deps = String::new();
        for h in reductions {
            let SExpr::Reduce { id: h, scalar: ht, .. } = &**h else { continue };
            if !g.iter().any(|r| matches!(&***r, SExpr::Reduce { id, .. } if id == h))
                && parts.iter().any(|(_, _, body)| crate::sym::reads_acc(body, *h))
            {
                let _ = write!(deps, "{} acc{h} = row{h}[{j} - jb]; ", c_type(*ht));
            }
        }
        let (mut load, mut save) = (String::new(), String::new());
        for (r, (id, t, _)) in g.iter().zip(&parts) {
            let SExpr::Reduce { init, .. } = &***r else { unreachable!("hoisted reductions") };
            let _ = writeln!(out, "{indent}{t} row{id}[{strip_len}];");
            let _ = writeln!(out, "{indent}{strip} row{id}[{j} - jb] = {};", em.value(init));
            let _ = write!(load, "{t} acc{id} = row{id}[{j} - jb]; ");
            let _ = write!(save, " row{id}[{j} - jb] = acc{id};");
        }
        let bodies: Vec<&Rc<SExpr>> = parts.iter().map(|(_, _, body)| *body).collect();
        let (decls, step_em) = em.bind_tables(&bodies);
        let steps: Vec<String> = parts.iter().map(|(id, _, body)| step_em.fold_step(*id, body)).collect();
        let loops = em.fold_loops(fold_vars(g[0]).expect("a fold"), &[]);
        let _ = writeln!(out, "{indent}{loops}{{");
        let _ = writeln!(out, "{indent}  {strip} {{ {deps}{load}{decls}{}{save} }}", steps.join(" "));
        let _ = writeln!(out, "{indent}}}");
    }
    let _ = writeln!(out, "{indent}{strip} {{");
    for r in reductions {
        let SExpr::Reduce { id, scalar, .. } = &**r else { unreachable!("hoisted reductions") };
        let _ = writeln!(out, "{indent}  {} acc{id} = row{id}[{j} - jb];", c_type(*scalar));
    }
    for (st, value) in k.stores.iter().zip(stores) {
        let b = &em.program.buffers[st.buffer];
        let coords = crate::sym::level_vars(&b.levels);
        let target = em.load(&Load { buffer: st.buffer, coords });
        let _ = writeln!(out, "{indent}  {target} = {};", em.value(value));
    }
    let _ = writeln!(out, "{indent}}}");
    for _ in 0..=outer.len() {
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
    }
}
