//! Seed 002's structured core, seed 001's nested tensors and seed 004's operations beyond
//! rectangular arrays, interpreted with explicit loops over positions.
//!
//! Positional conventions: these operations address an operand's dimensions by level order and
//! iterate offsets `0..len` along each, so two dimensions of equal length but different interval
//! starts pair up position by position. `get`, `set`, `gather` and `scatter` take *coordinates*
//! within each dimension's interval (0-based for positional tensors) and fail with a clear error
//! outside it.

use strata_entity::Handle;
use strata_ir::{AffineMap, Function, Init, Mode, RingRef, Value};
use strata_runtime::{strides, Data, Elem, ElemType, Sv, Tensor};

use crate::ops::{literal_elem, OpCx};
use crate::RunError;

type R<T> = Result<T, RunError>;

/// Calls `func` on single elements (0-d values of its parameter types).
pub(crate) fn call_elems(cx: &OpCx, func: Handle<Function>, elems: Vec<Elem>) -> R<Elem> {
    let f = &cx.interp.module.functions[func];
    let args: Vec<Tensor> = f
        .params
        .iter()
        .zip(elems)
        .map(|(&p, e)| match e {
            Elem::Tensor(t) => t,
            e => Tensor::scalar(cx.interp.value_type(f.exprs[p].ty), e),
        })
        .collect();
    let r = cx.interp.call(func, args)?;
    Ok(if r.ty.is_tensor { Elem::Tensor(r) } else { r.get(0) })
}

/// Linear offset of positional offsets `pos` in a tensor with `shape`.
pub(crate) fn linear(strides: &[usize], pos: &[usize]) -> usize {
    pos.iter().zip(strides).map(|(p, s)| p * s).sum()
}

/// Iterates every offset vector of `shape` in row-major order.
pub(crate) fn for_each_pos(shape: &[usize], mut f: impl FnMut(&[usize]) -> R<()>) -> R<()> {
    if shape.contains(&0) {
        return Ok(());
    }
    let mut pos = vec![0; shape.len()];
    loop {
        f(&pos)?;
        let mut d = shape.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            pos[d] += 1;
            if pos[d] < shape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
}

fn initial(cx: &OpCx, init: &Init, out_index: usize) -> Elem {
    match init {
        Init::Literal(l) => literal_elem(l, &cx.ty.element),
        Init::Value(v) => cx.arg(*v).get(out_index),
    }
}

/// `map_reduce` in Einstein notation: the dense meaning. A sparse operand's unstored entries
/// are its fill value (zero) and take part like any other; only iteration points where an
/// operand element is *skipped* (absent: past a ragged run's end, a skipped neighbor) are left
/// out, whatever the payload reads. When an operand has skipped elements, its present entries
/// drive the loop (in row-major order).
pub(crate) fn map_reduce(
    cx: &OpCx,
    func: Handle<Function>,
    args: &[Value],
    init: &Init,
    e: &strata_ir::Einsum,
) -> R<Tensor> {
    let ts: Vec<&Tensor> = args.iter().map(|&a| cx.arg(a)).collect();
    let letters = e.loop_letters();
    let mut extent = vec![0usize; letters.len()];
    for (subs, t) in e.inputs.iter().zip(&ts) {
        for (c, l) in subs.iter().zip(&t.ty.levels) {
            extent[letters.iter().position(|x| x == c).expect("letter")] = l.interval.len() as usize;
        }
    }
    let n_out = e.output.len();
    let maps: Vec<Vec<usize>> = e
        .inputs
        .iter()
        .map(|subs| subs.iter().map(|c| letters.iter().position(|x| x == c).expect("letter")).collect())
        .collect();
    let in_strides: Vec<Vec<usize>> = ts.iter().map(|t| t.strides()).collect();
    let out_strides = strides(&extent[..n_out]);
    let mut out = Tensor::zeros(cx.ty);
    for oi in 0..out.len() {
        out.data.set(oi, initial(cx, init, oi));
    }
    // The driver: the first operand with unstored elements, if any.
    let driver = ts.iter().position(|t| t.present.is_some());
    let bound: Vec<bool> = (0..letters.len()).map(|l| driver.is_some_and(|d| maps[d].contains(&l))).collect();
    let free: Vec<usize> = (0..letters.len()).filter(|&l| !bound[l]).collect();
    let free_shape: Vec<usize> = free.iter().map(|&l| extent[l]).collect();
    let driver_points: Vec<Vec<usize>> = match driver {
        None => vec![Vec::new()],
        Some(d) => {
            let shape = ts[d].ty.shape();
            let st = &in_strides[d];
            (0..ts[d].len())
                .filter(|&i| ts[d].is_present(i))
                .map(|i| shape.iter().enumerate().map(|(k, &n)| (i / st[k]) % n.max(1)).collect())
                .filter(|pos: &Vec<usize>| {
                    // A letter repeated within the driver (a diagonal) must agree.
                    maps[d]
                        .iter()
                        .enumerate()
                        .all(|(k, &l)| maps[d].iter().enumerate().all(|(k2, &l2)| l != l2 || pos[k] == pos[k2]))
                })
                .collect()
        }
    };
    // Offset of each input as a linear function of the loop letters.
    let coef: Vec<Vec<usize>> = maps
        .iter()
        .zip(&in_strides)
        .map(|(m, st)| {
            let mut c = vec![0usize; letters.len()];
            for (&l, &s) in m.iter().zip(st) {
                c[l] += s;
            }
            c
        })
        .collect();
    let fast = is_multiply_add(cx, func) && ts.len() == 2 && ts.iter().all(|t| matches!(t.data, Data::Scalars(_)));
    let err = |e: strata_runtime::ScalarError| cx.err("strata::run::division_by_zero", e.to_string());
    if fast && driver.is_none() {
        // Dense operands: one typed multiply-add loop over the reduction letters per output.
        let k = |i: usize| -> Vec<i64> { coef[i].iter().map(|&c| c as i64).collect() };
        let (ka, kb) = (k(0), k(1));
        let red = &extent[n_out..];
        let mut all_typed = true;
        for_each_pos(&extent[..n_out], |opos| {
            let base = |kk: &[i64]| kk[..n_out].iter().zip(opos).map(|(c, &p)| c * p as i64).sum::<i64>();
            let oi = linear(&out_strides, opos);
            let acc = out.get(oi).scalar().expect("scalar accumulator");
            match typed_multiply_add(ts[0], ts[1], (base(&ka), base(&kb)), red, &ka[n_out..], &kb[n_out..], acc) {
                Some(v) => out.data.set(oi, Elem::Scalar(v)),
                None => all_typed = false,
            }
            Ok(())
        })?;
        if all_typed {
            return Ok(out);
        }
        for oi in 0..out.len() {
            out.data.set(oi, initial(cx, init, oi));
        }
    }
    // A payload that is one binary operation of the accumulator and the only operand (a sum,
    // product, max, min, …) is applied directly instead of being called once per point: the
    // same operation in the same order.
    let fold_op = if ts.len() == 1 && matches!(ts[0].data, Data::Scalars(_)) { one_operation(cx, func) } else { None };
    let mut full = vec![0usize; letters.len()];
    for dpos in &driver_points {
        if let Some(d) = driver {
            for (k, &l) in maps[d].iter().enumerate() {
                full[l] = dpos[k];
            }
        }
        for_each_pos(&free_shape, |fpos| {
            for (k, &l) in free.iter().enumerate() {
                full[l] = fpos[k];
            }
            let offset = |k: usize| coef[k].iter().zip(&full).map(|(c, f)| c * f).sum::<usize>();
            if ts.iter().enumerate().any(|(k, t)| !t.is_present(offset(k))) {
                return Ok(());
            }
            let oi = linear(&out_strides, &full[..n_out]);
            let acc = if fast {
                let (a, b) = (ts[0].scalar_at(offset(0)), ts[1].scalar_at(offset(1)));
                let acc = out.get(oi).scalar().expect("scalar accumulator");
                Elem::Scalar(
                    acc.binary(strata_ir::BinaryOp::Plus, a.binary(strata_ir::BinaryOp::Multiplies, b).map_err(err)?)
                        .map_err(err)?,
                )
            } else if let Some((op, acc_first)) = fold_op {
                let (acc, a) = (out.get(oi).scalar().expect("scalar accumulator"), ts[0].scalar_at(offset(0)));
                let (x, y) = if acc_first { (acc, a) } else { (a, acc) };
                Elem::Scalar(crate::ops::binary(cx, op, x, y)?)
            } else {
                let mut elems = Vec::with_capacity(ts.len() + 1);
                elems.push(out.get(oi));
                elems.extend(ts.iter().enumerate().map(|(k, t)| t.get(offset(k))));
                call_elems(cx, func, elems)?
            };
            out.data.set(oi, acc);
            Ok(())
        })?;
    }
    Ok(out)
}

/// Whether `func` is the multiply-add `acc + a * b` on scalars, which contractions then evaluate
/// directly instead of calling the function once per point (same arithmetic, same order).
fn is_multiply_add(cx: &OpCx, func: Handle<Function>) -> bool {
    use strata_ir::{BinaryOp, ExprKind, Op, Statement};
    let f = &cx.interp.module.functions[func];
    if f.params.len() != 3 || f.body.len() != 3 || !f.params.iter().all(|&p| bare_scalar(cx, f, p)) {
        return false;
    }
    let stmts: Vec<&Statement> = f.body.iter().map(|(_, s)| s).collect();
    let (Statement::Let(p), Statement::Let(s), Statement::Return(r)) = (stmts[0], stmts[1], stmts[2]) else {
        return false;
    };
    let (acc, a, b) = (f.params[0], f.params[1], f.params[2]);
    let is = |v: Value, op: BinaryOp, x: Value, y: Value| matches!(&f.exprs[v].kind, ExprKind::Op(Op::Binary { op: o, lhs, rhs }) if *o == op && ((*lhs == x && *rhs == y) || (*lhs == y && *rhs == x)));
    // Operand order is immaterial: IEEE and wrapping addition and multiplication commute.
    is(*p, BinaryOp::Multiplies, a, b) && is(*s, BinaryOp::Plus, acc, *p) && r[..] == [*s]
}

/// `Some((op, acc_first))` when `func` is `(acc, a) -> op(acc, a)` (`acc_first`) or
/// `op(a, acc)` on scalars: a fold's payload that one binary operation is.
fn one_operation(cx: &OpCx, func: Handle<Function>) -> Option<(strata_ir::BinaryOp, bool)> {
    use strata_ir::{ExprKind, Op, Statement};
    let f = &cx.interp.module.functions[func];
    if f.params.len() != 2 || f.body.len() != 2 || !f.params.iter().all(|&p| bare_scalar(cx, f, p)) {
        return None;
    }
    let stmts: Vec<&Statement> = f.body.iter().map(|(_, s)| s).collect();
    let (Statement::Let(v), Statement::Return(r)) = (stmts[0], stmts[1]) else {
        return None;
    };
    let ExprKind::Op(Op::Binary { op, lhs, rhs }) = &f.exprs[*v].kind else {
        return None;
    };
    let (acc, a) = (f.params[0], f.params[1]);
    let acc_first = match (*lhs, *rhs) {
        (l, r) if l == acc && r == a => true,
        (l, r) if l == a && r == acc => false,
        _ => return None,
    };
    (r[..] == [*v] && bare_scalar(cx, f, *v)).then_some((*op, acc_first))
}

/// Whether value `v` of payload `f` is one scalar (not a tensor, not a tuple).
fn bare_scalar(cx: &OpCx, f: &Function, v: Value) -> bool {
    let t = cx.interp.value_type(f.exprs[v].ty);
    t.element.scalar().is_some() && !t.is_tensor
}

/// The linear offset `constant + Σ coef[d] · loop[d]` of an affine access into a tensor with
/// `strides`.
fn affine_offsets(m: &AffineMap, strides: &[usize], loops: usize) -> (i64, Vec<i64>) {
    let mut constant = 0i64;
    let mut coef = vec![0i64; loops];
    for (e, &s) in m.results.iter().zip(strides) {
        constant += e.constant * s as i64;
        for &(d, c) in &e.terms {
            coef[d as usize] += c * s as i64;
        }
    }
    (constant, coef)
}

/// `acc + Σ a[oa] · b[ob]` over the box `extents`, where each loop step moves the offsets by
/// `ka[d]` and `kb[d]`: the multiply-add payload on typed buffers, in row-major loop order (the
/// order the generic path calls the payload in), without fused multiply-add.
fn multiply_add_box<T: Copy + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    (mut oa, mut ob): (i64, i64),
    extents: &[usize],
    ka: &[i64],
    kb: &[i64],
    mut acc: T,
) -> T {
    if extents.contains(&0) {
        return acc;
    }
    let n = extents.len();
    if n == 0 {
        return acc + a[oa as usize] * b[ob as usize];
    }
    let mut pos = vec![0usize; n];
    let last = n - 1;
    loop {
        // The innermost loop, stepping by constant strides.
        let (sa, sb) = (ka[last], kb[last]);
        let (mut ia, mut ib) = (oa, ob);
        for _ in 0..extents[last] {
            acc = acc + a[ia as usize] * b[ib as usize];
            ia += sa;
            ib += sb;
        }
        // Advance the outer loops.
        let mut d = last;
        loop {
            if d == 0 {
                return acc;
            }
            d -= 1;
            pos[d] += 1;
            oa += ka[d];
            ob += kb[d];
            if pos[d] < extents[d] {
                break;
            }
            oa -= ka[d] * extents[d] as i64;
            ob -= kb[d] * extents[d] as i64;
            pos[d] = 0;
        }
    }
}

/// Runs [`multiply_add_box`] when both operands and the accumulator are `f32` or `f64`
/// columns; `None` otherwise.
fn typed_multiply_add(
    a: &Tensor,
    b: &Tensor,
    start: (i64, i64),
    extents: &[usize],
    ka: &[i64],
    kb: &[i64],
    acc: Sv,
) -> Option<Sv> {
    match (&a.data, &b.data, acc) {
        (Data::Scalars(strata_runtime::Column::F64(x)), Data::Scalars(strata_runtime::Column::F64(y)), Sv::F64(s)) => {
            Some(Sv::F64(multiply_add_box(x, y, start, extents, ka, kb, s)))
        }
        (Data::Scalars(strata_runtime::Column::F32(x)), Data::Scalars(strata_runtime::Column::F32(y)), Sv::F32(s)) => {
            Some(Sv::F32(multiply_add_box(x, y, start, extents, ka, kb, s)))
        }
        _ => None,
    }
}

/// `map_reduce_aff`: the loop nest over `domain`, reading through affine maps.
#[allow(clippy::too_many_arguments)]
pub(crate) fn map_reduce_aff(
    cx: &OpCx,
    func: Handle<Function>,
    args: &[Value],
    init: &Init,
    domain: &[u64],
    outputs: u32,
    out_map: &AffineMap,
    maps: &[AffineMap],
    padding: Option<&strata_ir::Literal>,
) -> R<Tensor> {
    let ts: Vec<&Tensor> = args.iter().map(|&a| cx.arg(a)).collect();
    // Linear maps read at precomputed strides; `floordiv`/`mod` or a padding value need each
    // coordinate evaluated (and, with padding, checked) per point.
    let linear =
        padding.is_none() && out_map.results.iter().chain(maps.iter().flat_map(|m| &m.results)).all(|e| e.is_linear());
    let at = |m: &AffineMap, (shape, st): &(Vec<usize>, Vec<usize>), loops: &[usize]| -> Option<usize> {
        let point: Vec<i64> = loops.iter().map(|&l| l as i64).collect();
        let mut o = 0;
        for ((e, &n), &s) in m.results.iter().zip(shape).zip(st) {
            let c = e.eval(&point);
            if c < 0 || c >= n as i64 {
                return None;
            }
            o += c as usize * s;
        }
        Some(o)
    };
    let layout = |shape: Vec<usize>| {
        let st = strides(&shape);
        (shape, st)
    };
    let out_layout = layout(cx.ty.shape());
    let in_layouts: Vec<_> = ts.iter().map(|t| layout(t.ty.shape())).collect();
    let ro = outputs as usize;
    let dom: Vec<usize> = domain.iter().map(|&d| d as usize).collect();
    let access: Vec<(i64, Vec<i64>)> =
        ts.iter().zip(maps).map(|(t, m)| affine_offsets(m, &t.strides(), dom.len())).collect();
    let out_access = affine_offsets(out_map, &strides(&cx.ty.shape()), dom.len());
    let offset = |(c, coef): &(i64, Vec<i64>), loops: &[usize]| -> usize {
        (c + coef.iter().zip(loops).map(|(k, &l)| k * l as i64).sum::<i64>()) as usize
    };
    let fast = linear
        && is_multiply_add(cx, func)
        && ts.iter().all(|t| t.present.is_none() && matches!(t.data, Data::Scalars(_)));
    let mut out = Tensor::zeros(cx.ty);
    let mut written = vec![false; out.len()];
    let mut loops = vec![0usize; dom.len()];
    for_each_pos(&dom[..ro], |opos| {
        loops[..ro].copy_from_slice(opos);
        let oi = if linear {
            offset(&out_access, &loops)
        } else {
            at(out_map, &out_layout, &loops).expect("verified write")
        };
        let mut acc = if written[oi] { out.get(oi) } else { initial(cx, init, oi) };
        let typed = if fast {
            let base = |(c, coef): &(i64, Vec<i64>)| {
                c + coef[..ro].iter().zip(&loops[..ro]).map(|(k, &l)| k * l as i64).sum::<i64>()
            };
            let sum = acc.scalar().expect("scalar accumulator");
            typed_multiply_add(
                ts[0],
                ts[1],
                (base(&access[0]), base(&access[1])),
                &dom[ro..],
                &access[0].1[ro..],
                &access[1].1[ro..],
                sum,
            )
        } else {
            None
        };
        if let Some(sum) = typed {
            acc = Elem::Scalar(sum);
        } else if fast {
            let mut sum = acc.scalar().expect("scalar accumulator");
            let err = |e: strata_runtime::ScalarError| cx.err("strata::run::division_by_zero", e.to_string());
            for_each_pos(&dom[ro..], |rpos| {
                loops[ro..].copy_from_slice(rpos);
                let a = ts[0].scalar_at(offset(&access[0], &loops));
                let b = ts[1].scalar_at(offset(&access[1], &loops));
                sum = sum
                    .binary(strata_ir::BinaryOp::Plus, a.binary(strata_ir::BinaryOp::Multiplies, b).map_err(err)?)
                    .map_err(err)?;
                Ok(())
            })?;
            acc = Elem::Scalar(sum);
        } else {
            for_each_pos(&dom[ro..], |rpos| {
                loops[ro..].copy_from_slice(rpos);
                let mut elems = vec![acc.clone()];
                for (((t, acc_k), m), l) in ts.iter().zip(&access).zip(maps).zip(&in_layouts) {
                    let j = if linear { Some(offset(acc_k, &loops)) } else { at(m, l, &loops) };
                    match j {
                        Some(j) if !t.is_present(j) => return Ok(()),
                        Some(j) => elems.push(t.get(j)),
                        None => elems
                            .push(literal_elem(padding.expect("verified: reads outside need padding"), &t.ty.element)),
                    }
                }
                acc = call_elems(cx, func, elems)?;
                Ok(())
            })?;
        }
        out.data.set(oi, acc);
        written[oi] = true;
        Ok(())
    })?;
    Ok(out)
}

/// A ring's zero, addition and multiplication on scalars.
struct RingOps<'a, 'b, 'm> {
    cx: &'a OpCx<'b, 'm>,
    ring: RingRef,
    scalar: strata_ir::Scalar,
}

impl RingOps<'_, '_, '_> {
    fn zero(&self) -> Sv {
        let s = self.scalar;
        match self.ring {
            RingRef::Builtin(r) => Sv::from_constant(s, r.zero(s)),
            RingRef::User(h) => Sv::from_literal(&self.cx.interp.module.rings[h].zero, s).unwrap_or(Sv::zero(s)),
        }
    }

    fn combine(&self, add: bool, a: Sv, b: Sv) -> R<Sv> {
        let op = match self.ring {
            RingRef::User(h) => {
                let r = &self.cx.interp.module.rings[h];
                let f = if add { r.add } else { r.mul };
                return call_elems(self.cx, f, vec![Elem::Scalar(a), Elem::Scalar(b)])
                    .map(|e| e.scalar().expect("scalar ring"));
            }
            RingRef::Builtin(r) if add => r.add(),
            RingRef::Builtin(r) => r.mul(),
        };
        a.binary(op, b).map_err(|e| self.cx.err("strata::run::division_by_zero", e.to_string()))
    }
}

/// `dot_general` over a ring: result = batch dims, lhs free dims, rhs free dims.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dot_general(
    cx: &OpCx,
    lhs: Value,
    rhs: Value,
    ring: RingRef,
    lc: &[u32],
    rc: &[u32],
    lb: &[u32],
    rb: &[u32],
) -> R<Tensor> {
    let (a, b) = (cx.arg(lhs), cx.arg(rhs));
    let scalar = cx.ty.element.scalar().expect("scalar ring element");
    let ops = RingOps { cx, ring, scalar };
    let (ash, bsh) = (a.ty.shape(), b.ty.shape());
    let a_free: Vec<usize> =
        (0..ash.len()).filter(|i| !lc.contains(&(*i as u32)) && !lb.contains(&(*i as u32))).collect();
    let b_free: Vec<usize> =
        (0..bsh.len()).filter(|i| !rc.contains(&(*i as u32)) && !rb.contains(&(*i as u32))).collect();
    let con_shape: Vec<usize> = lc.iter().map(|&i| ash[i as usize]).collect();
    let (ast, bst) = (a.strides(), b.strides());
    let out_shape = cx.ty.shape();
    let out_strides = strides(&out_shape);
    let mut out = Tensor::zeros(cx.ty);
    let nb = lb.len();
    for_each_pos(&out_shape, |opos| {
        let mut apos = vec![0; ash.len()];
        let mut bpos = vec![0; bsh.len()];
        for (k, (&i, &j)) in lb.iter().zip(rb).enumerate() {
            apos[i as usize] = opos[k];
            bpos[j as usize] = opos[k];
        }
        for (k, &i) in a_free.iter().enumerate() {
            apos[i] = opos[nb + k];
        }
        for (k, &j) in b_free.iter().enumerate() {
            bpos[j] = opos[nb + a_free.len() + k];
        }
        let mut acc = ops.zero();
        for_each_pos(&con_shape, |cpos| {
            for (k, (&i, &j)) in lc.iter().zip(rc).enumerate() {
                apos[i as usize] = cpos[k];
                bpos[j as usize] = cpos[k];
            }
            let (ai, bi) = (linear(&ast, &apos), linear(&bst, &bpos));
            if a.is_present(ai) && b.is_present(bi) {
                let p = ops.combine(false, a.scalar_at(ai), b.scalar_at(bi))?;
                acc = ops.combine(true, acc, p)?;
            }
            Ok(())
        })?;
        out.data.set(linear(&out_strides, opos), Elem::Scalar(acc));
        Ok(())
    })?;
    Ok(out)
}

/// Builds a result whose element at each position comes from `source(pos)` (an operand offset).
fn remap(cx: &OpCx, t: &Tensor, mut source: impl FnMut(&[usize]) -> usize) -> R<Tensor> {
    let shape = cx.ty.shape();
    let mut positions = Vec::with_capacity(cx.ty.len());
    for_each_pos(&shape, |pos| {
        positions.push(source(pos));
        Ok(())
    })?;
    let present = t.present.as_ref().map(|p| positions.iter().map(|&j| p[j]).collect());
    Ok(Tensor { ty: cx.ty.clone(), data: t.data.select(&positions), present })
}

pub(crate) fn transpose(cx: &OpCx, arg: Value, perm: &[u32]) -> R<Tensor> {
    let t = cx.arg(arg);
    let st = t.strides();
    remap(cx, t, |pos| pos.iter().enumerate().map(|(i, &p)| p * st[perm[i] as usize]).sum())
}

pub(crate) fn broadcast_in_dim(cx: &OpCx, arg: Value, dims: &[u32]) -> R<Tensor> {
    let t = cx.arg(arg);
    let (st, sh) = (t.strides(), t.ty.shape());
    remap(cx, t, |pos| {
        dims.iter().enumerate().map(|(j, &d)| if sh[j] == 1 { 0 } else { pos[d as usize] * st[j] }).sum()
    })
}

pub(crate) fn map(cx: &OpCx, func: Handle<Function>, args: &[Value]) -> R<Tensor> {
    let ts: Vec<&Tensor> = args.iter().map(|&a| cx.arg(a)).collect();
    let mut out = Tensor::zeros(cx.ty);
    let mut present = vec![true; out.len()];
    for (i, here) in present.iter_mut().enumerate() {
        *here = ts.iter().all(|t| t.is_present(i));
        let e = call_elems(cx, func, ts.iter().map(|t| t.get(i)).collect())?;
        out.data.set(i, e);
    }
    out.present = Some(present);
    out.normalize_presence();
    Ok(out)
}

/// The offset of the element at interval coordinates given by `index` scalars.
fn element_offset(cx: &OpCx, t: &Tensor, indices: &[Value]) -> R<usize> {
    let st = t.strides();
    let mut off = 0;
    for ((l, &v), s) in t.ty.levels.iter().zip(indices).zip(&st) {
        let c = cx.arg(v).scalar_at(0).as_i128() as i64;
        if c < l.interval.start || c >= l.interval.stop {
            return Err(cx.err(
                "strata::run::index_out_of_interval",
                format!("index {c} is outside `{}{}`", l.name, l.interval),
            ));
        }
        off += (c - l.interval.start) as usize * s;
    }
    Ok(off)
}

pub(crate) fn get(cx: &OpCx, arg: Value, indices: &[Value]) -> R<Tensor> {
    let t = cx.arg(arg);
    let o = element_offset(cx, t, indices)?;
    let e = t.get(o);
    Ok(match e {
        Elem::Tensor(inner) => inner,
        e => Tensor::scalar(cx.ty.clone(), e),
    })
}

pub(crate) fn set(cx: &OpCx, arg: Value, indices: &[Value], value: Value) -> R<Tensor> {
    let mut t = cx.arg(arg).clone();
    let o = element_offset(cx, &t, indices)?;
    let v = cx.arg(value);
    let e =
        if v.ty.is_tensor && matches!(t.ty.element, ElemType::Tensor(_)) { Elem::Tensor(v.clone()) } else { v.get(0) };
    t.data.set(o, e);
    if let Some(p) = t.present.as_mut() {
        p[o] = true;
    }
    Ok(t)
}

/// Source offsets of every element of `gather(source, indices, coordinates)` (copy layout:
/// batch positions, then slice positions).
/// `op` (`gather` or `scatter`) names the operation in the error of an index outside its interval.
fn gather_positions(cx: &OpCx, op: &str, src: &Tensor, idx: &Tensor, coordinates: &[u32]) -> R<(Vec<usize>, usize)> {
    let ish = idx.ty.shape();
    let batch_shape = &ish[..ish.len() - 1];
    let n = *ish.last().expect("coordinate dimension");
    let sst = src.strides();
    let slice_dims: Vec<usize> = (0..src.ty.levels.len()).filter(|d| !coordinates.contains(&(*d as u32))).collect();
    let slice_shape: Vec<usize> = slice_dims.iter().map(|&d| src.ty.levels[d].interval.len() as usize).collect();
    let slice_len: usize = slice_shape.iter().product();
    let mut out = Vec::new();
    let mut bi = 0;
    for_each_pos(batch_shape, |_| {
        let mut base = 0;
        for (k, &coordinate) in coordinates.iter().enumerate().take(n) {
            let d = coordinate as usize;
            let l = &src.ty.levels[d];
            let c = idx.scalar_at(bi * n + k).as_i128() as i64;
            if c < l.interval.start || c >= l.interval.stop {
                return Err(cx.err(
                    "strata::run::index_out_of_interval",
                    format!("{op} index {c} is outside `{}{}`", l.name, l.interval),
                ));
            }
            base += (c - l.interval.start) as usize * sst[d];
        }
        for_each_pos(&slice_shape, |spos| {
            out.push(base + spos.iter().zip(&slice_dims).map(|(p, &d)| p * sst[d]).sum::<usize>());
            Ok(())
        })?;
        bi += 1;
        Ok(())
    })?;
    Ok((out, slice_len))
}

pub(crate) fn gather(cx: &OpCx, source: Value, indices: Value, coordinates: &[u32], mode: Mode) -> R<Tensor> {
    let (src, idx) = (cx.arg(source), cx.arg(indices));
    let (positions, slice_len) = gather_positions(cx, "gather", src, idx, coordinates)?;
    let flat_present = src.present.as_ref().map(|p| positions.iter().map(|&j| p[j]).collect::<Vec<_>>());
    match mode {
        Mode::Copy => Ok(Tensor { ty: cx.ty.clone(), data: src.data.select(&positions), present: flat_present }),
        Mode::View => {
            let ElemType::Tensor(inner) = &cx.ty.element else { unreachable!("verified nested result") };
            let tiles = positions
                .chunks(slice_len.max(1))
                .take(cx.ty.len())
                .map(|chunk| Tensor {
                    ty: (**inner).clone(),
                    data: src.data.select(chunk),
                    present: src.present.as_ref().map(|p| chunk.iter().map(|&j| p[j]).collect()),
                })
                .collect();
            Ok(Tensor { ty: cx.ty.clone(), data: Data::Tensors(tiles), present: None })
        }
    }
}

pub(crate) fn scatter(
    cx: &OpCx,
    source: Value,
    dest: Value,
    indices: Value,
    coordinates: &[u32],
    mode: Mode,
) -> R<Tensor> {
    let (vals, idx) = (cx.arg(source), cx.arg(indices));
    let mut out = cx.arg(dest).clone();
    let (positions, slice_len) = gather_positions(cx, "scatter", &out, idx, coordinates)?;
    let mut present = out.present.take().unwrap_or_else(|| vec![true; out.len()]);
    for (k, &p) in positions.iter().enumerate() {
        let (e, here) = match mode {
            Mode::Copy => (vals.get(k), vals.is_present(k)),
            Mode::View => match &vals.data {
                Data::Tensors(ts) => {
                    let t = &ts[k / slice_len.max(1)];
                    (t.get(k % slice_len.max(1)), t.is_present(k % slice_len.max(1)))
                }
                _ => unreachable!("verified nested values"),
            },
        };
        out.data.set(p, e);
        present[p] = here;
    }
    out.present = Some(present);
    out.normalize_presence();
    Ok(out)
}

/// Same elements in the same row-major order under another type (collapse/expand, placement).
pub(crate) fn retype(cx: &OpCx, arg: Value) -> Tensor {
    let t = cx.arg(arg);
    Tensor { ty: cx.ty.clone(), data: t.data.clone(), present: t.present.clone() }
}

/// `convert`: a change of storage, so the value is unchanged (levels may be reordered, CSR ->
/// CSC: mapped by name). A sparse tensor's unstored entries are its fill value already; the one
/// change is that a result without ragged levels has no runs to end, so elements skipped in
/// the operand (past a ragged run's end) become zeros.
pub(crate) fn convert(cx: &OpCx, arg: Value) -> R<Tensor> {
    let t = cx.arg(arg);
    let map = crate::index::index_map(&cx.ty.levels, &t.ty, &[]);
    let positions: Vec<usize> = map.iter().map(|m| m.expect("same dimensions")).collect();
    let mut data = t.data.select(&positions);
    let mut present: Vec<bool> = positions.iter().map(|&j| t.is_present(j)).collect();
    if !strata_runtime::storage::has_ragged(&cx.ty.levels) {
        if let Data::Scalars(c) = &mut data {
            for (i, p) in present.iter_mut().enumerate() {
                if !*p {
                    c.set(i, Sv::zero(c.scalar()));
                    *p = true;
                }
            }
        }
    }
    let mut out = Tensor { ty: cx.ty.clone(), data, present: Some(present) };
    out.normalize_presence();
    Ok(out)
}
