//! Shifts through neighbor tables and neighbor reductions.

use super::*;

impl Lowerer<'_> {
    /// `ShiftInit` (dispatched by `op_value`).
    pub(super) fn neighbor_shift(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let unsupported = || LowerError::Unsupported { op: op.name().to_string(), func: func.name.clone() };
        let (Op::ShiftInit { arg: a, table } | Op::UnstructuredShift { arg: a, table, .. }) = op else {
            unreachable!("dispatched by `op_value`")
        };
        Ok({
            let neighbor = match op {
                Op::UnstructuredShift { neighbor, .. } => Coord::Const(*neighbor),
                _ => {
                    let (levels, _) = split(self.types, e.ty);
                    let k = levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max().expect("verified");
                    Coord::Var { dim: DimName::neighbor_counter(k), offset: 0 }
                }
            };
            let Sym::Scalar(t) = arg(table) else { return Err(unsupported()) };
            // A computed table (masked, composed) is materialized first: its entries are
            // loaded once per neighbor reference.
            let t = match &*t {
                SExpr::Load(_) => t,
                _ => self.materialize_table(func, &func.exprs[*table], t, op.name())?,
            };
            let SExpr::Load(tl) = &*t else { unreachable!("a table load") };
            let table_levels = &self.buffers[tl.buffer].levels;
            let tag = table_levels.iter().find(|l| l.name.table_source().is_some()).expect("verified table");
            let src = tag.name.table_source().expect("tag");
            let coords: Vec<Coord> = table_levels
                .iter()
                .zip(&tl.coords)
                .map(|(l, c)| if l.name == tag.name { neighbor.clone() } else { c.clone() })
                .collect();
            let load = Rc::new(Load { buffer: tl.buffer, coords });
            let (x_levels, _) = split(self.types, func.exprs[*a].ty);
            let source = x_levels.iter().find(|l| l.name == src).expect("verified source").interval;
            let with = Coord::Table { table: load.clone(), source, offset: 0 };
            let operand = self.extract_temporary(&func.exprs[*a], arg(a));
            operand.map(&mut |x| {
                // A skipped neighbor makes the shifted value absent. Reading the table
                // where the value reads its source coordinate carries the skip when the
                // value's existence depends on that read; otherwise (a value constant along
                // the source, a reduction's result, a select that may take the other
                // branch) the value is guarded by the entry explicitly.
                let shifted = substitute(x, &src, &with);
                if crate::sym::presence_reads(x, &src) {
                    shifted
                } else {
                    Rc::new(SExpr::Guard { table: load.clone(), source, value: shifted })
                }
            })
        })
    }

    /// `Reduce` (dispatched by `op_value`).
    pub(super) fn neighbor_reduce(
        &mut self,
        func: &Function,
        env: &[Option<Sym>],
        v: Value,
    ) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &func.exprs[v].kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let Op::Reduce { func: f, args, init } = op else { unreachable!("dispatched by `op_value`") };
        Ok({
            let k = args
                .iter()
                .filter_map(|x| {
                    split(self.types, func.exprs[*x].ty).0.iter().filter_map(|l| l.name.neighbor_counter_index()).max()
                })
                .max()
                .expect("verified");
            let counter = DimName::neighbor_counter(k);
            // Broadcasting by name intersects the operands' neighbor intervals: the fold
            // visits the neighbors every operand has (none when they do not overlap).
            let range = args
                .iter()
                .filter_map(|x| split(self.types, func.exprs[*x].ty).0.into_iter().find(|l| l.name == counter))
                .map(|l| l.interval)
                .reduce(strata_ir::Interval::intersect)
                .expect("verified");
            // A tuple accumulator (e.g. the smallest neighbor and which it is): a fold kernel
            // of its own, skipping absent neighbors as the scalar fold does.
            let element = split(self.types, e.ty).1;
            // The fold binds a variable of its own, never the user's `NB_k`: a reduction
            // nested in another's operand (V2E of an E2V sum) reads the outer counter
            // through its table while looping over its own, so the two must not share a
            // name. It is named by the fold's height (one more than the folds nested in its
            // operands): a fold is always higher than every fold inside it, so no
            // substitution captures, and equal sibling folds (the nabla's two components)
            // keep equal loops, which the emitter shares.
            let height = args.iter().flat_map(|a| arg(a).leaves()).map(|x| crate::sym::fold_height(&x)).max();
            let var = crate::sym::fresh("n", height.unwrap_or(0) + 1, 0);
            let bound = Coord::Var { dim: var.clone(), offset: 0 };
            let operand = |a: &Value| arg(a).map(&mut |x| substitute(x, &counter, &bound));
            if matches!(self.types[element], Type::Tuple(_)) {
                let init = self.literal_sym(init, element, func)?;
                let elems = args.iter().map(operand).collect();
                return self.tuple_fold(func, e, *f, &init, vec![(var, range)], elems);
            }
            let scalar = self.element_scalar(e.ty);
            let Some(init) = Sv::from_literal(init, scalar) else {
                return Err(self.unsupported_type("this reduction's initial value", func));
            };
            let id = self.fresh_id();
            let operands: Vec<Rc<SExpr>> = args.iter().flat_map(|a| operand(a).leaves()).collect();
            let mut call_args = vec![Sym::Scalar(Rc::new(SExpr::Acc(id)))];
            call_args.extend(args.iter().map(operand));
            let body = self.inline(*f, call_args)?.scalar();
            // A skipped neighbor is skipped for the whole step, whatever the payload reads.
            let body = crate::fill::only_where(&operands, body, scalar, &self.sparse);
            Sym::Scalar(Rc::new(SExpr::Reduce {
                id,
                vars: vec![(var, range)],
                init: Rc::new(SExpr::Const(init)),
                scalar,
                body,
            }))
        })
    }
}
