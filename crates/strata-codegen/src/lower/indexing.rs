//! Indexing: get, set, gather, scatter, and the compaction and assembly of sparse values.

use super::*;

impl Lowerer<'_> {
    /// The levels of a scatter kernel's operand (type `ty`) and of its result `e`'s temporary,
    /// both dense; the operand's values must depend on its own levels only (not on loops
    /// around the op).
    pub(super) fn scatter_levels(
        &self,
        func: &Function,
        e: &Expr,
        ty: Handle<Type>,
        values: impl IntoIterator<Item = Rc<SExpr>>,
        what: &str,
    ) -> Result<(Vec<Level>, Vec<Level>), LowerError> {
        let dense = |ty| dense_levels(&split(self.types, ty).0);
        let operand = dense(ty);
        let own: Vec<&DimName> = operand.iter().map(|l| &l.name).collect();
        if !depends_only_on(values, &own) {
            return Err(LowerError::Unsupported {
                op: format!("{what} inside a loop over other dimensions"),
                func: func.name.clone(),
            });
        }
        Ok((operand.clone(), dense(e.ty)))
    }

    /// `coordinates` / `nonzeros` of `value` (type `ty`) along `dim` into a temporary over the
    /// result's levels (a [`crate::kernel::Scatter::Compact`] kernel over the other levels),
    /// read back with its presence: the runs' ends are skips.
    pub(super) fn compact(
        &mut self,
        func: &Function,
        e: &Expr,
        value: Rc<SExpr>,
        ty: Handle<Type>,
        dim: &DimName,
        coordinates: bool,
    ) -> Result<Sym, LowerError> {
        let (operand, levels) = self.scatter_levels(func, e, ty, [value.clone()], "`coordinates` or `nonzeros`")?;
        let at = operand.iter().find(|l| &l.name == dim).expect("verified dimension");
        let name = format!("tmp{}", self.kernels.len());
        let scalar = self.element_scalar(e.ty);
        self.buffers.push(Buffer::temporary(format!("{name}.{}", e.name), scalar, levels.clone(), Vec::new()));
        let buffer = self.buffers.len() - 1;
        self.buffers.push(Buffer::temporary(format!("{name}.present"), Scalar::I8, levels.clone(), Vec::new()));
        let presence = self.buffers.len() - 1;
        let mut k = Kernel::nest(
            format!(
                "%{} = {} of the non-zeros along {dim}",
                e.name,
                if coordinates { "coordinates" } else { "values" }
            ),
            levels[..levels.len() - 1].to_vec(),
            Vec::new(),
        );
        // Over a sparse or ragged operand read directly, the loop visits its stored
        // coordinates along `dim` (unstored entries are zeros, never listed).
        if let SExpr::Sparse(r) = &*value {
            let level = r.coords.iter().position(|c| matches!(c, Coord::Var { dim: d, offset: 0 } if d == dim));
            let stored = level.filter(|&l| {
                !matches!(self.sparse[r.tensor].storage[l], crate::sparse::LevelStorage::Dense { .. })
                    && r.coords[..l].iter().all(|c| !matches!(c, Coord::Var { dim: d, .. } if d == dim))
            });
            if let Some(level) = stored {
                k.sets.push(crate::sparse::CoIteration {
                    var: dim.clone(),
                    range: at.interval,
                    set: crate::sparse::IterSet::Stored { read: r.clone(), level },
                    merge: false,
                });
            }
        }
        k.kind = KernelKind::Scatter(crate::kernel::Scatter::Compact {
            dim: Level::dense(dim.clone(), at.interval),
            value,
            element: self.element_scalar(ty),
            coordinates,
            buffer,
            presence,
        });
        self.kernels.push(k);
        let coords = level_vars(&levels);
        Ok(Sym::Scalar(Rc::new(SExpr::Guard {
            table: Rc::new(Load { buffer: presence, coords: coords.clone() }),
            source: strata_ir::Interval::new(0, 1),
            value: Rc::new(SExpr::Load(Rc::new(Load { buffer, coords }))),
        })))
    }

    /// `assemble` of `coordinates` and `values` (type `ty`, ragged) along `dim` into a zeroed
    /// temporary over the result's levels (a [`crate::kernel::Scatter::AddAt`] kernel over the
    /// operands' levels), read back as a dense value.
    pub(super) fn assemble(
        &mut self,
        func: &Function,
        e: &Expr,
        coordinate: Rc<SExpr>,
        value: Rc<SExpr>,
        ty: Handle<Type>,
        dim: &DimName,
    ) -> Result<Sym, LowerError> {
        let (operand, levels) = self.scatter_levels(func, e, ty, [coordinate.clone(), value.clone()], "`assemble`")?;
        let target = levels.iter().position(|l| &l.name == dim).expect("verified dimension");
        let scalar = self.element_scalar(e.ty);
        self.buffers.push(Buffer::temporary(
            format!("tmp{}.{}", self.kernels.len(), e.name),
            scalar,
            levels.clone(),
            Vec::new(),
        ));
        let buffer = self.buffers.len() - 1;
        let mut k = Kernel::nest(
            format!("%{} = the values added at their coordinates along {dim}", e.name),
            operand,
            Vec::new(),
        );
        k.kind = KernelKind::Scatter(crate::kernel::Scatter::AddAt { coordinate, value, buffer, target });
        self.kernels.push(k);
        Ok(Sym::Scalar(Rc::new(SExpr::Load(Rc::new(Load { buffer, coords: level_vars(&levels) })))))
    }

    /// `Get` (dispatched by `op_value`).
    pub(super) fn get(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Get { arg: a, indices } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let levels = split(self.types, func.exprs[*a].ty).0;
            let mut from: Vec<DimName> = levels.iter().map(|l| l.name.clone()).collect();
            let mut to: Vec<Coord> = levels
                .iter()
                .zip(indices)
                .map(|(l, i)| Coord::Computed { value: arg(i).scalar(), source: l.interval, offset: 0 })
                .collect();
            // A tensor element becomes a value over the result's own dimensions.
            let own = level_vars(&split(self.types, e.ty).0);
            let (ef, et) = element_exit(own, element_levels(self.types, e.ty).len());
            from.extend(ef);
            to.extend(et);
            self.rename_vars(&arg(a), &from, &to)
        })
    }

    /// `Set` (dispatched by `op_value`).
    pub(super) fn set(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Set { arg: a, indices, value } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let levels = split(self.types, func.exprs[*a].ty).0;
            // The element at the indices (checked against the intervals) is replaced.
            let mut hit = Rc::new(SExpr::Const(Sv::Bool(true)));
            for (l, i) in levels.iter().zip(indices) {
                let here = index(Coord::Var { dim: l.name.clone(), offset: 0 });
                let at = index(Coord::Computed { value: arg(i).scalar(), source: l.interval, offset: 0 });
                let eq = Rc::new(SExpr::Binary(strata_ir::BinaryOp::Eq, here, at, Scalar::Index));
                hit = Rc::new(SExpr::Binary(strata_ir::BinaryOp::And, hit, eq, Scalar::Bool));
            }
            // A tensor element is stored over the element variables.
            let vt = func.exprs[*value].ty;
            let names: Vec<DimName> = split(self.types, vt).0.iter().map(|l| l.name.clone()).collect();
            let (from, to) = element_entry(&names, element_levels(self.types, vt).len());
            let new_value = self.rename_vars(&arg(value), &from, &to);
            let (old, new) = (arg(a).leaves(), new_value.leaves());
            let mut sel = old.iter().zip(&new).map(|(o, n)| Rc::new(SExpr::Select(hit.clone(), n.clone(), o.clone())));
            assemble(self.types, split(self.types, e.ty).1, &mut sel)
        })
    }

    /// `Gather` (dispatched by `op_value`).
    pub(super) fn gather(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Gather { source, indices, coordinates, mode } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            // A copy's slice dimensions follow its batch dimensions; a view's slices are its
            // tensor elements (their dimensions are the element variables).
            let mut result = split(self.types, e.ty).0;
            if *mode == strata_ir::Mode::View {
                let inner = element_levels(self.types, e.ty);
                result.extend(inner.iter().enumerate().map(|(k, l)| Level { name: element_var(k), ..l.clone() }));
            }
            let (src, idx) =
                (split(self.types, func.exprs[*source].ty).0, split(self.types, func.exprs[*indices].ty).0);
            let nb = idx.len() - 1;
            // The index tensor read at (batch, k).
            let idx_at = |this: &mut Self, k: usize| -> Rc<SExpr> {
                let mut to: Vec<Coord> = idx[..nb]
                    .iter()
                    .zip(&result)
                    .map(|(l, r)| Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start })
                    .collect();
                to.push(Coord::Const(idx[nb].interval.start + k as i64));
                this.rename_sym(&arg(indices), &idx, &to).scalar()
            };
            let mut slice = nb;
            let mut to = Vec::new();
            for (d, l) in src.iter().enumerate() {
                match coordinates.iter().position(|&c| c as usize == d) {
                    Some(k) => to.push(Coord::Computed { value: idx_at(self, k), source: l.interval, offset: 0 }),
                    None => {
                        let r = &result[slice];
                        slice += 1;
                        to.push(Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start });
                    }
                }
            }
            let value = self.rename_sym(&arg(source), &src, &to);
            // Every index is checked, also where the source does not depend on it (a
            // constant or broadcast source reads no element at that coordinate): the
            // always-true `strata_ix(i) >= MIN` keeps the check's side effect.
            let checked = to
                .iter()
                .filter(|c| matches!(c, Coord::Computed { .. }))
                .map(|c| {
                    Rc::new(SExpr::Binary(
                        BinaryOp::GreaterEqual,
                        Rc::new(SExpr::Index(c.clone())),
                        Rc::new(SExpr::Const(Sv::Index(i64::MIN))),
                        Scalar::Index,
                    ))
                })
                .reduce(|a, b| Rc::new(SExpr::Binary(BinaryOp::And, a, b, Scalar::Bool)));
            match checked {
                Some(ok) => {
                    let mut leaves =
                        value.leaves().into_iter().map(|l| Rc::new(SExpr::Select(ok.clone(), l.clone(), l)));
                    assemble(self.types, split(self.types, e.ty).1, &mut leaves)
                }
                None => value,
            }
        })
    }

    /// `Scatter` (dispatched by `op_value`).
    pub(super) fn scatter(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Scatter { source, dest, indices, coordinates, mode: _ } = op else {
            unreachable!("dispatched by `op_value`")
        };
        Ok({
            let dst = split(self.types, func.exprs[*dest].ty).0;
            let src = flat(self.types, func.exprs[*source].ty).map_err(|w| self.unsupported_type(w, func))?.0;
            let idx = split(self.types, func.exprs[*indices].ty).0;
            let nb = idx.len() - 1;
            let id = self.fresh_id();
            let batch: Vec<(DimName, strata_ir::Interval)> = (0..nb)
                .map(|k| (crate::sym::fresh("s", id, k), strata_ir::Interval::from_len(idx[k].interval.len())))
                .collect();
            // Does batch entry `b` address this point of `dest`? (Every index is checked.)
            let mut hit = Rc::new(SExpr::Const(Sv::Bool(true)));
            for (k, &c) in coordinates.iter().enumerate() {
                let mut to: Vec<Coord> = idx[..nb]
                    .iter()
                    .zip(&batch)
                    .map(|(l, b)| Coord::Var { dim: b.0.clone(), offset: l.interval.start })
                    .collect();
                to.push(Coord::Const(idx[nb].interval.start + k as i64));
                let at = self.rename_sym(&arg(indices), &idx, &to).scalar();
                let l = &dst[c as usize];
                let at = index(Coord::Computed { value: at, source: l.interval, offset: 0 });
                let here = index(Coord::Var { dim: l.name.clone(), offset: 0 });
                let eq = Rc::new(SExpr::Binary(strata_ir::BinaryOp::Eq, here, at, Scalar::Index));
                hit = Rc::new(SExpr::Binary(strata_ir::BinaryOp::And, hit, eq, Scalar::Bool));
            }
            // The scattered value: batch dims from the batch loop, slice dims from the point.
            let slice_dims: Vec<&Level> =
                dst.iter().enumerate().filter(|(d, _)| !coordinates.contains(&(*d as u32))).map(|(_, l)| l).collect();
            let to: Vec<Coord> = src
                .iter()
                .enumerate()
                .map(|(d, l)| {
                    if d < nb {
                        Coord::Var { dim: batch[d].0.clone(), offset: l.interval.start }
                    } else {
                        let t = slice_dims[d - nb];
                        Coord::Var { dim: t.name.clone(), offset: l.interval.start - t.interval.start }
                    }
                })
                .collect();
            let val = self.rename_sym(&arg(source), &src, &to).scalar();
            let scalar = self.element_scalar(e.ty);
            let acc = Rc::new(SExpr::Acc(id));
            let body = Rc::new(SExpr::Select(hit, val, acc));
            let init = arg(dest).scalar();
            Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: batch, init, scalar, body }))
        })
    }
}
