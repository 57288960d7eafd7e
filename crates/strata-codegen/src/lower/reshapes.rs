//! Reshapes: collapse and expand, concatenation, pack and unpack, transpose, broadcast, drop_dim.

use super::*;

impl Lowerer<'_> {
    /// `CollapseShape` (dispatched by `op_value`).
    pub(super) fn collapse_shape(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::CollapseShape { arg: a, groups, .. } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let (result, levels) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
            let mut to = vec![Coord::Const(0); levels.len()];
            for (gi, g) in groups.iter().enumerate() {
                let r = &result[gi];
                if let [m] = g.as_slice() {
                    let l = &levels[*m as usize];
                    to[*m as usize] = Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start };
                    continue;
                }
                // Position within the merged dimension, split back into the group's members.
                let p = sub(index(Coord::Var { dim: r.name.clone(), offset: 0 }), ix(r.interval.start));
                for (j, &m) in g.iter().enumerate() {
                    let l = &levels[m as usize];
                    let stride: i64 = g[j + 1..].iter().map(|&k| levels[k as usize].interval.len() as i64).product();
                    let len = l.interval.len() as i64;
                    let local = bin(
                        strata_ir::BinaryOp::Modulo,
                        bin(strata_ir::BinaryOp::Divides, p.clone(), ix(stride)),
                        ix(len.max(1)),
                    );
                    to[m as usize] = Coord::Computed {
                        value: local,
                        source: strata_ir::Interval::from_len(len as u64),
                        offset: l.interval.start,
                    };
                }
            }
            self.rename_sym(&arg(a), &levels, &to)
        })
    }

    /// `ExpandShape` (dispatched by `op_value`).
    pub(super) fn expand_shape(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::ExpandShape { arg: a, groups, .. } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let (result, levels) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
            let mut to = Vec::new();
            for (l, g) in levels.iter().zip(groups) {
                // One member, or all members but one of one point each (a `keepdims` axis): the
                // coordinate is that member's loop variable (so that later passes see a plain
                // load); a group of one-point members only, the level's one point.
                let members: Vec<&Level> = g.iter().map(|&r| &result[r as usize]).collect();
                let wide: Vec<&Level> = members.iter().copied().filter(|rl| rl.interval.len() != 1).collect();
                match (members.as_slice(), wide.as_slice()) {
                    ([r], _) | (_, [r]) => {
                        to.push(Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start });
                        continue;
                    }
                    (_, []) => {
                        to.push(Coord::Const(l.interval.start));
                        continue;
                    }
                    _ => {}
                }
                // Linearize the group's coordinates.
                let mut lin = ix(0);
                for (j, &r) in g.iter().enumerate() {
                    let rl = &result[r as usize];
                    let stride: i64 = g[j + 1..].iter().map(|&k| result[k as usize].interval.len() as i64).product();
                    let pos = sub(index(Coord::Var { dim: rl.name.clone(), offset: 0 }), ix(rl.interval.start));
                    lin = add(lin, mul(pos, ix(stride)));
                }
                to.push(Coord::Computed {
                    value: lin,
                    source: strata_ir::Interval::from_len(l.interval.len()),
                    offset: l.interval.start,
                });
            }
            self.rename_sym(&arg(a), &levels, &to)
        })
    }

    /// `Concat` (dispatched by `op_value`).
    pub(super) fn concat(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Concat { args, dim, .. } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let result = split(self.types, e.ty).0;
            let r = result.iter().find(|l| &l.name == dim).expect("verified").clone();
            let positional = dim.position().is_some();
            let mut pieces = Vec::new();
            let mut next = r.interval.start;
            for x in args {
                let levels = split(self.types, func.exprs[*x].ty).0;
                let pl = levels.iter().find(|l| &l.name == dim).expect("verified").interval;
                let start = if positional { next } else { pl.start };
                next = start + pl.len() as i64;
                let shifted = arg(x).map(&mut |v| shift(v, dim, pl.start - start));
                pieces.push((start + pl.len() as i64, shifted));
            }
            // The piece holding the coordinate, chosen lazily (untaken pieces are not read).
            let (_, mut out) = pieces.pop().expect("at least one piece");
            while let Some((stop, p)) = pieces.pop() {
                let cond = Rc::new(SExpr::Binary(
                    strata_ir::BinaryOp::Less,
                    index(Coord::Var { dim: dim.clone(), offset: 0 }),
                    ix(stop),
                    Scalar::Index,
                ));
                let (pl, ol) = (p.leaves(), out.leaves());
                let mut sel =
                    pl.iter().zip(&ol).map(|(a, b)| Rc::new(SExpr::Select(cond.clone(), a.clone(), b.clone())));
                out = assemble(self.types, split(self.types, e.ty).1, &mut sel);
            }
            out
        })
    }

    /// `Pack` (dispatched by `op_value`).
    pub(super) fn pack(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let scalar_of = |x: &Value| self.element_scalar(func.exprs[*x].ty);
        let Op::Pack { arg: a, tile, layout, padding } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let (result, levels) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
            let deeper = element_levels(self.types, func.exprs[*a].ty).len();
            let tile_levels = split(self.types, split(self.types, e.ty).1).0;
            let read = crate::nested::pack_read(&result, &tile_levels, &levels, deeper, tile, layout);
            let s = scalar_of(a);
            let x = self.rename_vars(&arg(a), &read.from, &read.to);
            match (read.inside, padding, x) {
                (None, _, x) => x,
                (Some(inside), Some(pad), Sym::Scalar(x)) => Sym::Scalar(
                    crate::affine::padded(inside, x, pad, s)
                        .ok_or_else(|| self.unsupported_type("padded tiles of tuples", func))?,
                ),
                _ => return Err(self.unsupported_type("padded tiles of tuples or tensors", func)),
            }
        })
    }

    /// `Unpack` (dispatched by `op_value`).
    pub(super) fn unpack(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Unpack { arg: a, layout, shape: _ } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let (levels, outer) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
            let tile = split(self.types, func.exprs[*a].ty).1;
            let tile_levels = split(self.types, tile).0;
            let deeper = element_levels(self.types, tile).len();
            let (from, to) = crate::nested::unpack_read(&levels, &outer, &tile_levels, deeper, layout);
            self.rename_vars(&arg(a), &from, &to)
        })
    }

    /// `Transpose` (dispatched by `op_value`).
    pub(super) fn transpose(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Transpose { arg: a, perm, kind } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let result = split(self.types, e.ty).0;
            let levels = split(self.types, func.exprs[*a].ty).0;
            let mut to = vec![Coord::Const(0); levels.len()];
            for (i, &p) in kind.as_gather(perm).iter().enumerate() {
                let p = p as usize;
                to[p] = Coord::Var {
                    dim: result[i].name.clone(),
                    offset: levels[p].interval.start - result[i].interval.start,
                };
            }
            self.rename_sym(&arg(a), &levels, &to)
        })
    }

    /// `Broadcast` (dispatched by `op_value`).
    pub(super) fn broadcast(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let (Op::Broadcast { arg: a, .. } | Op::BroadcastInDim { arg: a, .. }) = op else {
            unreachable!("dispatched by `op_value`")
        };
        Ok({
            let result = split(self.types, e.ty).0;
            let levels = split(self.types, func.exprs[*a].ty).0;
            let dims: Vec<usize> = match op {
                Op::BroadcastInDim { dims, .. } => dims.iter().map(|&d| d as usize).collect(),
                _ => (0..levels.len()).collect(),
            };
            let to: Vec<Coord> = levels
                .iter()
                .zip(&dims)
                .map(|(l, &d)| {
                    if l.interval.len() == 1 && result[d].interval.len() != 1 {
                        Coord::Const(l.interval.start)
                    } else {
                        Coord::Var { dim: result[d].name.clone(), offset: l.interval.start - result[d].interval.start }
                    }
                })
                .collect();
            self.rename_sym(&arg(a), &levels, &to)
        })
    }

    /// `DropDim` (dispatched by `op_value`).
    pub(super) fn drop_dim(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::DropDim { arg: a, dim } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let levels = split(self.types, func.exprs[*a].ty).0;
            // Kept levels keep their order under the result's names.
            let mut result = split(self.types, e.ty).0.into_iter();
            let to: Vec<Coord> = levels
                .iter()
                .map(|l| {
                    if &l.name == dim {
                        Coord::Const(l.interval.start)
                    } else {
                        Coord::Var { dim: result.next().expect("one per kept level").name, offset: 0 }
                    }
                })
                .collect();
            self.rename_sym(&arg(a), &levels, &to)
        })
    }
}
