//! Each rank's local program: the entry specialized at the intervals the rank holds.

use strata_entity::Handle;
use strata_ir::{ExprKind, Function, Interval, LevelFormat, Module, Op, Statement, Type, TypeArena, Value};

use super::partial::partial_on;
use super::{block_level, tensor, Plan, PlanError};

impl Plan {
    /// The local program of `rank`: the module with the entry's instance at the rank's
    /// intervals (block levels dense, no team), and that instance.
    pub fn local_module(
        &self,
        module: &Module,
        types: &TypeArena,
        entry: Handle<Function>,
        rank: usize,
    ) -> Result<(Module, Handle<Function>), PlanError> {
        let mut m = module.clone();
        let mut local_types = types.clone();
        let (mut scatters, mut concats) = (Vec::new(), Vec::new());
        // `distribute` takes the rank's part of its replicated operand, `concat` along a block
        // level joins the operands the rank's rows reach; `collect` into an output keeps the
        // owned block (gathered after the run).
        for ((fh, v), needs) in &self.narrowed {
            let rows = needs[rank];
            let func = &mut m.functions[*fh];
            match &func.exprs[*v].kind {
                ExprKind::Op(Op::Distribute { arg, dim, .. }) => {
                    func.exprs[*v].kind = ExprKind::Op(Op::Subset { arg: *arg, domain: vec![(dim.clone(), rows)] });
                }
                ExprKind::Op(Op::Subset { arg, domain }) => {
                    let block = block_level(types, module.functions[*fh].exprs[*arg].ty).map(|(_, d, _)| d);
                    let domain = domain
                        .iter()
                        .map(|(d, cut)| (d.clone(), if Some(d) == block.as_ref() { cut_to(*cut, rows) } else { *cut }))
                        .collect();
                    func.exprs[*v].kind = ExprKind::Op(Op::Subset { arg: *arg, domain });
                }
                ExprKind::Op(Op::Concat { .. }) => concats.push((*fh, *v, rows)),
                ExprKind::Op(Op::Scatter { .. }) => scatters.push((*fh, *v, rows)),
                _ => {}
            }
        }
        // After the subsets are cut: a concatenation's operands may be.
        for (fh, v, rows) in concats {
            narrow_concat(&module.functions[fh], &mut m.functions[fh], types, v, rows);
        }
        for (fh, v, rows) in scatters {
            scatter_on_rows(&mut m.functions[fh], &mut local_types, v, rows);
        }
        let f = &module.functions[entry];
        self.cut_assignments(&mut m.functions[entry], types, rank);
        self.read_only_needed_rows(&mut m.functions[entry], rank);
        let strips = self.strips(rank, f.params.len());
        crate::strips::join_strips(&mut m.functions[entry], &strips);
        for (_, s) in f.body.iter() {
            if let Statement::Assign { target, value, .. } = s {
                if !self.collected.contains_key(&target.index()) {
                    continue;
                }
                let e = &mut m.functions[entry].exprs[*value];
                if let ExprKind::Op(Op::Collect { arg }) = &e.kind {
                    let scalar = strata_ir::element_scalar(types, f.exprs[*arg].ty);
                    if let Some(to) = scalar {
                        e.kind = ExprKind::Op(Op::Cast { arg: *arg, to });
                    }
                }
            }
        }
        // A `collect` of a value replicated on the team (a reduction's result, which every
        // rank holds whole) is that value on each rank.
        let replicated: Vec<(Value, Value)> = f
            .exprs
            .iter()
            .filter_map(|(v, e)| match &e.kind {
                ExprKind::Op(Op::Collect { arg }) if block_level(types, f.exprs[*arg].ty).is_none() => Some((v, *arg)),
                _ => None,
            })
            .collect();
        for (v, arg) in replicated {
            if let Some(to) = strata_ir::element_scalar(types, f.exprs[arg].ty) {
                m.functions[entry].exprs[v].kind = ExprKind::Op(Op::Cast { arg, to });
            }
        }
        if let Some(p) = &self.partial {
            partial_on(&mut m.functions[entry], p, rank);
        }
        // What no result reads is not run: its operands are held only as far as the results
        // need them (a dead shift through a table would read rows the rank does not hold).
        for fh in m.reachable(entry) {
            drop_dead(&mut m.functions[fh]);
        }
        let mut types = local_types;
        // Declared types (a `constant` on the team) are not inferred again: localized here.
        for fh in m.reachable(entry) {
            let f = &mut m.functions[fh];
            let constants: Vec<Value> = f
                .exprs
                .iter()
                .filter(|(_, e)| matches!(e.kind, ExprKind::Op(Op::Constant { .. })))
                .map(|(v, _)| v)
                .collect();
            for v in constants {
                f.exprs[v].ty = localize(&mut types, f.exprs[v].ty, None);
            }
        }
        // An input held as strips is its owned block; each strip is typed at its rows.
        let mut params: Vec<Handle<Type>> = f
            .params
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let held = match strips.iter().find(|s| s.index == i) {
                    Some(s) => Some((s.level, s.owned)),
                    None => self.params.iter().find(|b| b.index == i).map(|b| (b.level, b.held[rank])),
                };
                localize(&mut types, f.exprs[p].ty, held)
            })
            .collect();
        for s in &strips {
            for strip in s.strips() {
                params.push(localize(&mut types, f.exprs[f.params[s.index]].ty, Some((s.level, strip.rows))));
            }
        }
        strata_verify::specialize(&m, &types, entry, &params).map_err(|d| PlanError::Local {
            rank,
            message: d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "),
        })
    }

    /// Cuts the region of every assignment into a distributed output (`%out[I[1:63], J[1:63]]
    /// <- …`) to the rows `rank` owns: each rank writes its part of the region (an empty one
    /// where the region misses its rows).
    fn cut_assignments(&self, f: &mut Function, types: &TypeArena, rank: usize) {
        let params = f.params.clone();
        let mut cuts = Vec::new();
        for (h, s) in f.body.iter() {
            let Statement::Assign { target, domain: Some(domain), .. } = s else { continue };
            let Some(i) = params.iter().position(|p| p == target) else { continue };
            let Some(b) = self.params.iter().find(|b| b.index == i) else { continue };
            let Some((_, dim, _)) = block_level(types, f.exprs[*target].ty) else { continue };
            let owned = b.owned[rank];
            let cut: Vec<_> =
                domain.iter().map(|(d, iv)| (d.clone(), if *d == dim { cut_to(*iv, owned) } else { *iv })).collect();
            cuts.push((h, cut));
        }
        for (h, cut) in cuts {
            if let Statement::Assign { domain, .. } = &mut f.body[h] {
                *domain = Some(cut);
            }
        }
    }

    /// Reads of a parameter along a positional block level (the array front end's `_0`) cut to
    /// the rows `rank` reads of it: it holds its whole block too, and positional levels combine
    /// by extent, not by interval (`a[1:-1] + b` over blocks of 34 and 32 rows at 4 ranks: the
    /// rank reads 7 rows of its 8 of `b`). Named levels intersect by interval: left as they are.
    fn read_only_needed_rows(&self, f: &mut Function, rank: usize) {
        for b in &self.params {
            let (read, held) = (b.read[rank], b.held[rank]);
            if b.output || b.stored || b.dim.position().is_none() || read == held {
                continue;
            }
            let read = if read.is_empty() { Interval::new(held.start, held.start) } else { read };
            let p = f.params[b.index];
            let span = *f.exprs.meta(p);
            let e = strata_ir::Expr {
                name: format!("{}.read", f.exprs[p].name),
                ty: f.exprs[p].ty,
                kind: ExprKind::Op(Op::Subset { arg: p, domain: vec![(b.dim.clone(), read)] }),
            };
            let cut = f.exprs.append(e, span);
            crate::strips::redirect(f, p, cut);
            crate::strips::prepend(f, &[cut]);
        }
    }
}

/// The part of `iv` within `rows`; where they do not meet, an empty interval at a bound of
/// `rows` (a region or a subset of no rows on this rank, still a valid interval).
fn cut_to(iv: Interval, rows: Interval) -> Interval {
    let within = iv.intersect(rows);
    let start = within.start.clamp(rows.start, rows.stop.max(rows.start));
    Interval::new(start, within.stop.max(start))
}

/// A `concat` along a block level (`v` in `local`, the rank's copy of `global`) on a rank
/// needing its `rows`: the operands the rows reach are contiguous on the rank (each held as
/// far as the rows need it). The others stay, as subsets of no rows, where each is a subset
/// the rank needs none of (an assignment's untouched borders): every rank's local program
/// then joins the same operands and compiles to one kernel; an empty operand before the first
/// reached one sits at the rows' start (a positional level starts where its first operand
/// does). Otherwise they are left out.
fn narrow_concat(global: &Function, local: &mut Function, types: &TypeArena, v: Value, rows: Interval) {
    let ExprKind::Op(Op::Concat { args, dim, mode }) = &local.exprs[v].kind else { return };
    let (args, dim, mode) = (args.clone(), dim.clone(), *mode);
    let reached: Vec<bool> = args
        .iter()
        .map(|&a| {
            tensor(types, global.exprs[a].ty)
                .and_then(|t| t.level(&dim))
                .is_some_and(|l| !l.interval.intersect(rows).is_empty())
        })
        .collect();
    // Each missed operand's block level in a subset this rank needs none of (cut to no rows
    // already: no other reader needs any), if every missed operand is one.
    let missed: Option<Vec<(usize, Value, usize)>> = (args.iter().zip(&reached).enumerate())
        .filter(|&(_, (_, &r))| !r)
        .map(|(k, (&a, _))| match &local.exprs[a].kind {
            ExprKind::Op(Op::Subset { domain, .. }) => {
                domain.iter().position(|(d, iv)| *d == dim && iv.is_empty()).map(|i| (k, a, i))
            }
            _ => None,
        })
        .collect();
    let Some(missed) = missed else {
        let kept: Vec<Value> = args.iter().zip(&reached).filter(|&(_, &r)| r).map(|(&a, _)| a).collect();
        let args = if kept.is_empty() { args[..1].to_vec() } else { kept };
        local.exprs[v].kind = ExprKind::Op(Op::Concat { args, dim, mode });
        return;
    };
    let first = reached.iter().position(|&r| r).unwrap_or(args.len());
    for (k, a, i) in missed {
        let at = if k < first { rows.start } else { rows.stop };
        if let ExprKind::Op(Op::Subset { domain, .. }) = &mut local.exprs[a].kind {
            domain[i].1 = Interval::new(at, at);
        }
    }
}

/// Removes the statements of `f` whose values no result, output or later live statement reads.
fn drop_dead(f: &mut Function) {
    let live = crate::stages::dependencies(f, &crate::stages::result_values(f), &Default::default());
    let mut body = strata_entity::Arena::new();
    for (s, stmt) in f.body.iter() {
        if !matches!(stmt, Statement::Let(v) if !live.contains(v)) {
            body.append(stmt.clone(), f.body.meta(s).clone());
        }
    }
    f.body = body;
}

/// `ty` on one rank: the block level narrowed to `held` and dense, no team.
fn localize(types: &mut TypeArena, ty: Handle<Type>, held: Option<(usize, Interval)>) -> Handle<Type> {
    let Type::Tensor(t) = &types[ty] else { return ty };
    if t.placement.team.is_none() && held.is_none() {
        return ty;
    }
    let mut t = t.clone();
    t.placement.team = None;
    for (i, l) in t.levels.iter_mut().enumerate() {
        if l.format == LevelFormat::Block {
            l.format = LevelFormat::Dense;
        }
        if let Some((lvl, iv)) = held {
            if lvl == i {
                l.interval = iv;
            }
        }
    }
    types.insert(Type::Tensor(t))
}

/// A distributed scatter (`needs::scatter`) on the rank whose result holds `rows` of the
/// destination's block dimension: it writes the destination cut to `rows`, joined with one
/// scratch row (a row another rank holds, next to them); the indices of rows other ranks hold
/// are redirected to the scratch row, which is cut off after. Indices outside the
/// destination's interval are left as they are: the scatter reports them on every rank.
fn scatter_on_rows(f: &mut Function, types: &mut TypeArena, v: Value, rows: Interval) {
    let ExprKind::Op(Op::Scatter { source, dest, indices, coordinates, mode }) = f.exprs[v].kind.clone() else {
        return;
    };
    let Some((_, dim, global)) = block_level(types, f.exprs[dest].ty) else { return };
    if rows.is_empty() {
        // Nothing of the result on this rank: nothing to write.
        if global.start <= rows.start && rows.start <= global.stop {
            f.exprs[v].kind = ExprKind::Op(Op::Subset { arg: dest, domain: vec![(dim, rows)] });
        }
        return;
    }
    if rows.start <= global.start && global.stop <= rows.stop {
        // Every row: nothing to redirect.
        return;
    }
    // The scratch row is a row another rank holds (so no index outside the interval is
    // taken for it): after the rows, or before them when they end the interval.
    let at = if rows.stop < global.stop { rows.stop } else { rows.start - 1 };
    let span = *f.exprs.meta(v);
    let name = f.exprs[v].name.clone();
    let (dty, ity) = (f.exprs[dest].ty, f.exprs[indices].ty);
    let scalar = strata_ir::element_scalar(types, ity).expect("verified indices");
    let sty = types.insert(Type::Scalar(scalar));
    let mut added = Vec::new();
    // Types are inferred again when the local program is specialized, except a constant's.
    let mut add = |f: &mut Function, what: &str, ty: Handle<Type>, op: Op| {
        let e = strata_ir::Expr { name: format!("{name}.{what}"), ty, kind: ExprKind::Op(op) };
        let x = f.exprs.append(e, span);
        added.push(x);
        x
    };
    let cut = |r: Interval| vec![(dim.clone(), r)];
    let d0 = add(f, "rows", dty, Op::Subset { arg: dest, domain: cut(rows) });
    let first = add(f, "first", dty, Op::Subset { arg: dest, domain: cut(Interval::new(rows.start, rows.start + 1)) });
    let shift = Op::CartesianShift { arg: first, dim: dim.clone(), offset: rows.start - at };
    let scratch = add(f, "scratch", dty, shift);
    let pieces = if at == rows.stop { vec![d0, scratch] } else { vec![scratch, d0] };
    let ext = add(f, "ext", dty, Op::Concat { args: pieces, dim: dim.clone(), mode: strata_ir::Mode::Copy });
    let mut constant =
        |f: &mut Function, what: &str, c: i64| add(f, what, sty, Op::Constant { value: strata_ir::Literal::Int(c) });
    let (lo, hi) = (constant(f, "lo", rows.start), constant(f, "hi", rows.stop));
    let scratch_at = constant(f, "scratch_at", at);
    let (g_lo, g_hi) = (constant(f, "global_lo", global.start), constant(f, "global_hi", global.stop));
    let bin = |op, lhs, rhs| Op::Binary { op, lhs, rhs };
    use strata_ir::BinaryOp::{And, GreaterEqual, Less, Or};
    let below = add(f, "below", ity, bin(Less, indices, lo));
    let above = add(f, "above", ity, bin(GreaterEqual, indices, hi));
    let elsewhere = add(f, "elsewhere", ity, bin(Or, below, above));
    let from_start = add(f, "from_start", ity, bin(GreaterEqual, indices, g_lo));
    let to_stop = add(f, "to_stop", ity, bin(Less, indices, g_hi));
    let inside = add(f, "inside", ity, bin(And, from_start, to_stop));
    let theirs = add(f, "theirs", ity, bin(And, elsewhere, inside));
    let redirected = add(f, "indices", ity, Op::Select { cond: theirs, on_true: scratch_at, on_false: indices });
    f.exprs[v].kind = ExprKind::Op(Op::Scatter { source, dest: ext, indices: redirected, coordinates, mode });
    let e = strata_ir::Expr {
        name: format!("{name}.mine"),
        ty: dty,
        kind: ExprKind::Op(Op::Subset { arg: v, domain: cut(rows) }),
    };
    let mine = f.exprs.append(e, span);
    crate::strips::redirect(f, v, mine);
    let mut body = strata_entity::Arena::new();
    for (s, stmt) in f.body.iter() {
        let meta = f.body.meta(s).clone();
        if matches!(stmt, Statement::Let(x) if *x == v) {
            for &x in &added {
                body.append(Statement::Let(x), meta.clone());
            }
            body.append(stmt.clone(), meta.clone());
            body.append(Statement::Let(mine), meta);
        } else {
            body.append(stmt.clone(), meta);
        }
    }
    f.body = body;
}
