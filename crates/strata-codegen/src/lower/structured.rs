//! Structured ops: `map_reduce`, `map_reduce_aff`, contractions and `dot_general`.

use super::*;

impl Lowerer<'_> {
    /// A fold of payload `f` over `red` from `init`, with `elems` the operand elements.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn contraction(
        &mut self,
        func: &Function,
        e: &Expr,
        f: Handle<Function>,
        init: &strata_ir::Init,
        env: &[Option<Sym>],
        id: u32,
        red: Vec<(DimName, strata_ir::Interval)>,
        elems: Vec<Sym>,
    ) -> Result<Sym, LowerError> {
        let (_, leaf) = flat(self.types, e.ty).map_err(|w| self.unsupported_type(w, func))?;
        let Type::Scalar(scalar) = self.types[leaf] else {
            let init = match init {
                strata_ir::Init::Literal(l) => self.literal_sym(l, leaf, func)?,
                strata_ir::Init::Value(v) => env[v.index()].clone().expect("defined"),
            };
            return self.tuple_fold(func, e, f, &init, red, elems);
        };
        let inner = element_levels(self.types, e.ty);
        let init = match init {
            strata_ir::Init::Literal(l) => {
                Rc::new(SExpr::Const(Sv::from_literal(l, scalar).unwrap_or(Sv::zero(scalar))))
            }
            strata_ir::Init::Value(v) => env[v.index()].clone().expect("defined").scalar(),
        };
        let operands: Vec<Rc<SExpr>> = elems.iter().flat_map(Sym::leaves).collect();
        if inner.is_empty() {
            let mut call_args = vec![Sym::Scalar(Rc::new(SExpr::Acc(id)))];
            call_args.extend(elems);
            let body = self.inline(f, call_args)?.scalar();
            let body = crate::fill::only_where(&operands, body, scalar, &self.sparse);
            return Ok(Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: red, init, scalar, body })));
        }
        // Tensor elements: the fold runs per element position, which is exact when the payload
        // reads its accumulator at that same position only (e.g. `plus(%acc, product_2d(…))`).
        let at: Vec<Coord> = (0..inner.len()).map(|k| Coord::Var { dim: element_var(k), offset: 0 }).collect();
        let placeholder = acc_placeholder(id);
        let acc = Rc::new(SExpr::Load(Rc::new(Load { buffer: placeholder, coords: at.clone() })));
        let mut call_args = vec![Sym::Scalar(acc)];
        call_args.extend(elems);
        let body = self.inline_on_elements(f, call_args)?.scalar();
        let body = crate::sym::replace_loads(&body, &|l| {
            (l.buffer == placeholder && l.coords == at).then(|| Rc::new(SExpr::Acc(id)))
        });
        if reads(&body, placeholder) {
            return Err(LowerError::Unsupported {
                op: format!(
                    "@{} as a tile payload that reads its accumulator at other positions",
                    self.module.functions[f].name
                ),
                func: func.name.clone(),
            });
        }
        let body = crate::fill::only_where(&operands, body, scalar, &self.sparse);
        Ok(Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: red, init, scalar, body })))
    }

    /// `dot_general` over a ring, as a fold over the contracting dimensions.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dot(
        &mut self,
        func: &Function,
        e: &Expr,
        env: &[Option<Sym>],
        lhs: Value,
        rhs: Value,
        ring: strata_ir::RingRef,
        lc: &[u32],
        rc: &[u32],
        lb: &[u32],
        rb: &[u32],
    ) -> Result<Sym, LowerError> {
        use strata_ir::RingRef;
        let result = split(self.types, e.ty).0;
        let scalar = self.element_scalar(e.ty);
        let id = self.fresh_id();
        let (la, lr) = (split(self.types, func.exprs[lhs].ty).0, split(self.types, func.exprs[rhs].ty).0);
        let red: Vec<(DimName, strata_ir::Interval)> = lc
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                (crate::sym::fresh("c", id, k), strata_ir::Interval::from_len(la[i as usize].interval.len()))
            })
            .collect();
        let a_free: Vec<usize> =
            (0..la.len()).filter(|i| !lc.contains(&(*i as u32)) && !lb.contains(&(*i as u32))).collect();
        let b_free: Vec<usize> =
            (0..lr.len()).filter(|i| !rc.contains(&(*i as u32)) && !rb.contains(&(*i as u32))).collect();
        let target = |levels: &[Level],
                      contract: &[u32],
                      batch: &[u32],
                      free: &[usize],
                      free_base: usize|
         -> Vec<Coord> {
            (0..levels.len())
                .map(|i| {
                    let l = &levels[i];
                    if let Some(k) = contract.iter().position(|&c| c as usize == i) {
                        Coord::Var { dim: red[k].0.clone(), offset: l.interval.start }
                    } else if let Some(k) = batch.iter().position(|&c| c as usize == i) {
                        Coord::Var { dim: result[k].name.clone(), offset: l.interval.start - result[k].interval.start }
                    } else {
                        let k = free_base + free.iter().position(|&f| f == i).expect("free");
                        Coord::Var { dim: result[k].name.clone(), offset: l.interval.start - result[k].interval.start }
                    }
                })
                .collect()
        };
        let ta = target(&la, lc, lb, &a_free, lb.len());
        let tb = target(&lr, rc, rb, &b_free, lb.len() + a_free.len());
        let a = self.rename_sym(&env[lhs.index()].clone().expect("defined"), &la, &ta).scalar();
        let b = self.rename_sym(&env[rhs.index()].clone().expect("defined"), &lr, &tb).scalar();
        let acc = Rc::new(SExpr::Acc(id));
        let (zero, body) = match ring {
            RingRef::Builtin(r) => {
                let (add, mul, zero) = (r.add(), r.mul(), Sv::from_constant(scalar, r.zero(scalar)));
                let prod = Rc::new(SExpr::Binary(mul, a, b, scalar));
                (zero, Rc::new(SExpr::Binary(add, acc, prod, scalar)))
            }
            RingRef::User(h) => {
                let r = &self.module.rings[h];
                let zero = Sv::from_literal(&r.zero, scalar).unwrap_or(Sv::zero(scalar));
                let (add, mul) = (r.add, r.mul);
                let prod = self.inline(mul, vec![Sym::Scalar(a), Sym::Scalar(b)])?;
                (zero, self.inline(add, vec![Sym::Scalar(acc), prod])?.scalar())
            }
        };
        Ok(Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: red, init: Rc::new(SExpr::Const(zero)), scalar, body })))
    }

    /// `MapReduce` (dispatched by `op_value`).
    pub(super) fn map_reduce(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::MapReduce { func: f, args, init, subscripts } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let result = split(self.types, e.ty).0;
            let letters = subscripts.loop_letters();
            let n_out = subscripts.output.len();
            let id = self.fresh_id();
            // Each letter's loop variable and range (positional offsets for reductions).
            let mut extent = vec![0u64; letters.len()];
            for (subs, x) in subscripts.inputs.iter().zip(args) {
                for (c, l) in subs.iter().zip(split(self.types, func.exprs[*x].ty).0) {
                    extent[letters.iter().position(|y| y == c).expect("letter")] = l.interval.len();
                }
            }
            let red: Vec<(DimName, strata_ir::Interval)> = (n_out..letters.len())
                .map(|k| (crate::sym::fresh("r", id, k), strata_ir::Interval::from_len(extent[k])))
                .collect();
            let mut elems = Vec::new();
            for (subs, x) in subscripts.inputs.iter().zip(args) {
                let levels = split(self.types, func.exprs[*x].ty).0;
                let to: Vec<Coord> = subs
                    .iter()
                    .zip(&levels)
                    .map(|(c, l)| {
                        let k = letters.iter().position(|y| y == c).expect("letter");
                        if k < n_out {
                            Coord::Var {
                                dim: result[k].name.clone(),
                                offset: l.interval.start - result[k].interval.start,
                            }
                        } else {
                            Coord::Var { dim: red[k - n_out].0.clone(), offset: l.interval.start }
                        }
                    })
                    .collect();
                elems.push(self.rename_sym(&Sym::Scalar(arg(x).scalar()), &levels, &to));
            }
            self.contraction(func, e, *f, init, env, id, red, elems)?
        })
    }

    /// `MapReduceAff` (dispatched by `op_value`).
    pub(super) fn map_reduce_aff(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::MapReduceAff { func: f, args, init, domain, outputs, shape, out_map, maps, padding } = op else {
            unreachable!("dispatched by `op_value`")
        };
        Ok({
            let ro = *outputs as usize;
            let result = split(self.types, e.ty).0;
            let unsupported_map = || LowerError::Unsupported {
                op: "map_reduce_aff with this access map".into(),
                func: func.name.clone(),
            };
            // The write map must send each output loop to one result dimension, covering it.
            let mut loop_of_result = vec![usize::MAX; ro];
            for (r, ex) in out_map.results.iter().enumerate() {
                match ex.terms.as_slice() {
                    [(d, 1)]
                        if ex.constant == 0
                            && ex.is_linear()
                            && (*d as usize) < ro
                            && domain[*d as usize] == shape[r] =>
                    {
                        loop_of_result[r] = *d as usize
                    }
                    _ => return Err(unsupported_map()),
                }
            }
            let id = self.fresh_id();
            let red: Vec<(DimName, strata_ir::Interval)> = (ro..domain.len())
                .map(|d| (crate::sym::fresh("a", id, d), strata_ir::Interval::from_len(domain[d])))
                .collect();
            // Loop d's value, counted from 0.
            let var = |d: u32| -> Result<Rc<SExpr>, LowerError> {
                let d = d as usize;
                if d < ro {
                    let r = loop_of_result.iter().position(|&x| x == d).ok_or_else(unsupported_map)?;
                    Ok(sub(index(Coord::Var { dim: result[r].name.clone(), offset: 0 }), ix(result[r].interval.start)))
                } else {
                    Ok(index(Coord::Var { dim: red[d - ro].0.clone(), offset: 0 }))
                }
            };
            let mut elems = Vec::new();
            for (m, x) in maps.iter().zip(args) {
                let levels = split(self.types, func.exprs[*x].ty).0;
                let mut to = Vec::new();
                let mut inside = None;
                for (ex, l) in m.results.iter().zip(&levels) {
                    if padding.is_some() {
                        // Reads may leave the operand: clamp them in, select the padding.
                        let (here, clamped) =
                            crate::affine::inside_and_clamped(crate::affine::affine_value(ex, &var)?, l.interval.len());
                        inside = Some(crate::affine::and(inside, here));
                        to.push(Coord::Computed {
                            value: clamped,
                            source: strata_ir::Interval::from_len(l.interval.len()),
                            offset: l.interval.start,
                        });
                        continue;
                    }
                    to.push(match ex.terms.as_slice() {
                        [] if ex.is_linear() => Coord::Const(l.interval.start + ex.constant),
                        [(d, 1)] if ex.is_linear() && (*d as usize) < ro => {
                            let r =
                                loop_of_result.iter().position(|&x| x == *d as usize).ok_or_else(unsupported_map)?;
                            Coord::Var {
                                dim: result[r].name.clone(),
                                offset: l.interval.start + ex.constant - result[r].interval.start,
                            }
                        }
                        [(d, 1)] if ex.is_linear() => {
                            Coord::Var { dim: red[*d as usize - ro].0.clone(), offset: l.interval.start + ex.constant }
                        }
                        // A general access (linear, or with floordiv / mod): computed (and
                        // checked) per point.
                        _ => Coord::Computed {
                            value: add(crate::affine::affine_value(ex, &var)?, ix(l.interval.start)),
                            source: l.interval,
                            offset: 0,
                        },
                    });
                }
                let read = self.rename_sym(&Sym::Scalar(arg(x).scalar()), &levels, &to);
                elems.push(match (inside, padding) {
                    (Some(inside), Some(p)) => {
                        let s = self.element_scalar(func.exprs[*x].ty);
                        Sym::Scalar(
                            crate::affine::padded(inside, read.scalar(), p, s)
                                .ok_or_else(|| self.unsupported_type("padding of tuple elements", func))?,
                        )
                    }
                    _ => read,
                });
            }
            self.contraction(func, e, *f, init, env, id, red, elems)?
        })
    }
}
