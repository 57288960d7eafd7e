//! Extraction of temporaries (seed 000): values kept by reuse or because they are read through a neighbor table, and the kernels that materialize them.

use super::*;

impl Lowerer<'_> {
    /// Seed 000's extraction of temporaries, for values read through a neighbor table: when
    /// such a value itself reads through a neighbor table (the FVM flux on edges, read per
    /// vertex), substituting it would recompute it, with a second level of indirect loads, at
    /// every neighbor reference. Instead one kernel computes it once over its own domain into a
    /// temporary, with a presence column (0, or the skip value -1 where the value is absent)
    /// read back through the same guard as a neighbor-table skip; the result reads those. A
    /// value present everywhere needs no presence column; values absent at the same points
    /// ([`crate::sym::skip_conditions`]) share one.
    /// Other values (and values depending on loop variables outside their own domain) are
    /// returned unchanged.
    pub(super) fn extract_temporary(&mut self, e: &Expr, value: Sym) -> Sym {
        let Some(t) = self.temporary_candidate(e, &value) else { return value };
        if !crate::extract::worth_extracting(&t.parts, &t.levels) {
            return value;
        }
        self.keep(e, value, t, "it is read through a neighbor table")
    }

    /// Extraction of temporaries by reuse ([`crate::extract`]'s reuse rule): value `v` of
    /// `func` (the function being lowered or inlined, the innermost frame) is computed once
    /// into a temporary when recomputing it at each of its evaluations would cost more than the
    /// temporary's trip through the cache or memory, or would make the code grow with the
    /// reuse (a value reused at every level of a chain).
    pub(super) fn keep_reused(&mut self, func: &Function, v: Value, value: Sym) -> Sym {
        let Some((counts, scale)) = self.frames.last() else { return value };
        let evaluations = counts.evaluations[v.index()] * scale;
        let e = &func.exprs[v];
        if evaluations <= 1.0 || counts.reads[v.index()] <= 1.0 {
            return value;
        }
        let Some(t) = self.temporary_candidate(e, &value) else { return value };
        if t.levels.is_empty() || !t.levels.iter().all(|l| l.format.is_dense_like()) {
            return value;
        }
        let points: f64 = t.levels.iter().map(|l| l.interval.len() as f64).product();
        let bytes = points * t.scalars.iter().map(|s| s.size_bytes() as f64).sum::<f64>();
        let work = crate::extract::work(&t.parts);
        let why = if crate::extract::worth_keeping(evaluations, work, bytes, self.cache_bytes) {
            format!("computed {evaluations:.0} times per point if inlined")
        } else if counts.multiplied[v.index()] && crate::extract::worth_keeping_for_gemm(evaluations, work) {
            format!("an operand of a product read {evaluations:.0} times per point (kept, the product runs as a GEMM)")
        } else {
            return value;
        };
        self.keep(e, value, t, &why)
    }

    /// The scalar leaves of `value` (of expression `e`) and its levels, when it can be computed
    /// into temporaries over its own domain: scalar leaves (no tensor elements), reading loop
    /// variables of its own levels only.
    pub(super) fn temporary_candidate(&self, e: &Expr, value: &Sym) -> Option<Candidate> {
        let parts = value.leaves();
        let (levels, element) = split(self.types, e.ty);
        let mut typed = Vec::new();
        // Tensor elements have no scalar leaf list: nothing is extracted then.
        leaves(self.types, element, Vec::new(), &mut typed).ok()?;
        let scalars: Vec<Scalar> = typed.into_iter().map(|(_, s)| s).collect();
        let own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        let local = depends_only_on(parts.iter().cloned(), &own);
        (local && scalars.len() == parts.len()).then_some(Candidate { levels, element, parts, scalars })
    }

    /// Computes candidate `t` of `value` (expression `e`) into temporaries, once per equal
    /// value; returns how to read them.
    pub(super) fn keep(&mut self, e: &Expr, value: Sym, t: Candidate, why: &str) -> Sym {
        if let Some((_, read)) = self.temporaries.iter().find(|(v, _)| *v == value) {
            return read.clone();
        }
        let comment = format!("%tmp{} = %{}", self.kernels.len(), e.name);
        let reads = self.materialize(t.levels, &t.parts, &t.scalars, comment);
        if let Some(k) = self.kernels.last_mut() {
            k.detail = format!("a temporary: {why}");
        }
        let read = assemble(self.types, t.element, &mut reads.into_iter());
        self.temporaries.push((value, read.clone()));
        read
    }

    /// One kernel computing `parts` (the scalar leaves of a value over `levels`, of types
    /// `scalars`) into temporaries; returns their reads. A leaf that can be absent (a skipped
    /// neighbor, a position past a ragged run) gets a presence column too — 0, or the skip value
    /// −1 where absent, read back through the same guard as a neighbor-table skip; values
    /// absent at the same points ([`crate::sym::skip_conditions`]) share one.
    pub(super) fn materialize(
        &mut self,
        levels: Vec<Level>,
        parts: &[Rc<SExpr>],
        scalars: &[Scalar],
        comment: String,
    ) -> Vec<Rc<SExpr>> {
        let name = format!("tmp{}", self.kernels.len());
        let levels = in_source_order(levels, parts, &self.buffers);
        let coords = level_vars(&levels);
        let mut stores = Vec::new();
        let mut reads = Vec::new();
        for (i, (leaf, &scalar)) in parts.iter().zip(scalars).enumerate() {
            let mut temp = |suffix: &str, scalar: Scalar| {
                self.buffers.push(Buffer::temporary(format!("{name}.{i}{suffix}"), scalar, levels.clone(), vec![i]));
                self.buffers.len() - 1
            };
            let vb = temp("", scalar);
            stores.push(Store { buffer: vb, value: leaf.clone() });
            let read_value = Rc::new(SExpr::Load(Rc::new(Load { buffer: vb, coords: coords.clone() })));
            if !crate::fill::may_skip(leaf, &self.sparse) {
                reads.push(read_value);
                continue;
            }
            let skips = crate::sym::skip_conditions(leaf);
            let shared = skips.as_ref().and_then(|c| {
                self.presence
                    .iter()
                    .find(|(l, k, _)| *l == levels && k.len() == c.len() && c.iter().all(|x| k.contains(x)))
            });
            let pb = match shared {
                Some((_, _, pb)) => *pb,
                None => {
                    let pb = temp(".present", Scalar::I8);
                    let present = Rc::new(SExpr::Select(
                        Rc::new(SExpr::Present(leaf.clone())),
                        Rc::new(SExpr::Const(Sv::I8(0))),
                        Rc::new(SExpr::Const(Sv::I8(-1))),
                    ));
                    stores.push(Store { buffer: pb, value: present });
                    if let Some(c) = skips {
                        self.presence.push((levels.clone(), c, pb));
                    }
                    pb
                }
            };
            reads.push(Rc::new(SExpr::Guard {
                table: Rc::new(Load { buffer: pb, coords: coords.clone() }),
                source: strata_ir::Interval::new(0, 1),
                value: read_value,
            }));
        }
        self.kernels.push(Kernel::nest(comment, levels, stores));
        reads
    }

    /// A neighbor table computed by the program (`e`, value `t`): one kernel stores it into a
    /// temporary over its own levels, absent entries as the skip value `-1` (an absent table
    /// entry is a missing neighbor, as in the interpreter); returns the load of it.
    pub(super) fn materialize_table(
        &mut self,
        func: &Function,
        e: &Expr,
        t: Rc<SExpr>,
        op: &str,
    ) -> Result<Rc<SExpr>, LowerError> {
        let levels = split(self.types, e.ty).0;
        let own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        if !depends_only_on([t.clone()], &own) {
            return Err(LowerError::Unsupported {
                op: format!("{op} through a neighbor table computed inside a loop over other dimensions"),
                func: func.name.clone(),
            });
        }
        let scalar = self.element_scalar(e.ty);
        self.buffers.push(Buffer::temporary(
            format!("table{}.{}", self.kernels.len(), e.name),
            scalar,
            levels.clone(),
            Vec::new(),
        ));
        let b = self.buffers.len() - 1;
        let skip = Rc::new(SExpr::Const(Sv::from_i128(scalar, -1)));
        let value = Rc::new(SExpr::Select(Rc::new(SExpr::Present(t.clone())), t, skip));
        self.kernels.push(Kernel::nest(
            format!("%{} (a computed neighbor table, materialized)", e.name),
            levels.clone(),
            vec![Store { buffer: b, value }],
        ));
        let coords = level_vars(&levels);
        Ok(Rc::new(SExpr::Load(Rc::new(Load { buffer: b, coords }))))
    }
}

/// `levels` (a temporary's, in its value's order) reordered as the largest buffer its `parts`
/// read at every level's variable stores them, levels of one point first: a temporary of a
/// transposed value (a centered `x.T`) is then written as its source is read, both
/// contiguously, instead of reading the source with a stride of a whole row per point, and a
/// `keepdims` mean over rows (`mean(x.T, axis=1, keepdims=True)`, levels `[columns, 1]`) folds
/// whole rows of `x` into a strip of accumulators instead of walking one column at a time. The
/// reads of the temporary name its levels, so its users are unchanged (a product reading it
/// takes its strides).
fn in_source_order(levels: Vec<Level>, parts: &[Rc<SExpr>], buffers: &[Buffer]) -> Vec<Level> {
    let wide: Vec<usize> = (0..levels.len()).filter(|&i| levels[i].interval.len() != 1).collect();
    let mut best: Option<(usize, Vec<usize>)> = None;
    let mut visit = |l: &Load| {
        // The temporary's levels in the order this load's coordinates name them.
        let order: Vec<usize> = l
            .coords
            .iter()
            .filter_map(|c| match c {
                Coord::Var { dim, .. } => levels.iter().position(|lv| &lv.name == dim),
                _ => None,
            })
            .collect();
        let mut named = order.clone();
        named.sort_unstable();
        named.dedup();
        let len = buffers[l.buffer].len();
        if named.len() == order.len() && named == wide && best.as_ref().is_none_or(|(n, _)| len > *n) {
            best = Some((len, order));
        }
    };
    for p in parts {
        crate::sym::for_each_load(p, &mut visit);
    }
    match best {
        Some((_, order)) if !wide.is_empty() => {
            let ones = (0..levels.len()).filter(|i| !wide.contains(i));
            ones.chain(order).map(|i| levels[i].clone()).collect()
        }
        _ => levels,
    }
}
