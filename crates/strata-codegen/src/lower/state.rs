//! State kernels: scans and tuple-accumulator folds, sequential loops writing temporaries.

use super::*;

impl Lowerer<'_> {
    /// A scan: materialized into a temporary by its own kernel (a sequential loop along `dim`
    /// carrying the state in registers), read back by the consumers.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan(
        &mut self,
        func: &Function,
        e: &Expr,
        env: &[Option<Sym>],
        f: Handle<Function>,
        args: &[Value],
        dim: &DimName,
        forward: bool,
        init: &strata_ir::Init,
    ) -> Result<Sym, LowerError> {
        let levels = split(self.types, e.ty).0;
        let unsupported = |what: &str| LowerError::Unsupported { op: format!("scan {what}"), func: func.name.clone() };
        let arg_syms: Vec<Sym> = args.iter().map(|a| env[a.index()].clone().expect("defined")).collect();
        // The scan is computed once for its whole domain, so its operands may depend on its own
        // dimensions only.
        let own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        if !depends_only_on(arg_syms.iter().flat_map(Sym::leaves), &own) {
            return Err(unsupported("inside a loop over other dimensions"));
        }
        // Operands reading sparse or ragged storage are computed into dense temporaries first
        // (with presence where a ragged run ends): the scan reads each point once, in order.
        let mut operands = Vec::new();
        for (a, sym) in args.iter().zip(arg_syms) {
            let parts = sym.leaves();
            if !parts.iter().any(crate::sparse::reads_sparse) {
                operands.push(sym);
                continue;
            }
            let ae = &func.exprs[*a];
            let (alevels, element) = split(self.types, ae.ty);
            let scalars: Vec<Scalar> = parts.iter().map(|_| self.element_scalar(ae.ty)).collect();
            let comment = format!("%{} (read by a scan; computed once, densely)", ae.name);
            let reads = self.materialize(dense_levels(&alevels), &parts, &scalars, comment);
            operands.push(assemble(self.types, element, &mut reads.into_iter()));
        }
        let leaves: Vec<Rc<SExpr>> = operands.iter().flat_map(Sym::leaves).collect();
        let element = split(self.types, e.ty).1;
        let (states, state) = match init {
            strata_ir::Init::Literal(l) => self.state_registers(l, element, func)?,
            // A state tensor (over the other dimensions), read at the point of each column.
            strata_ir::Init::Value(v) => {
                let sym = env[v.index()].clone().expect("defined");
                if !depends_only_on(sym.leaves(), &own) {
                    return Err(unsupported("with an initial state computed inside a loop"));
                }
                self.state_registers_from(&sym, element)
            }
        };
        // A position past a ragged run skips the step (a segmented scan); the result is
        // absent there too (below).
        let updates = self.guarded_steps(f, state, operands, &states)?;
        if updates
            .iter()
            .any(|u| matches!(&**u, SExpr::Load(l) if l.coords.iter().any(|c| matches!(c, Coord::Table { .. }))))
        {
            return Err(unsupported("through neighbor tables"));
        }
        let dim_level = levels.iter().find(|l| &l.name == dim).expect("verified").clone();
        let outer: Vec<Level> = levels.iter().filter(|l| &l.name != dim).cloned().collect();
        let comment =
            format!("%{} = scan(@{}, dim = {dim}, forward = {forward})", e.name, self.module.functions[f].name);
        let scan = ScanLoop { dim: dim_level, forward, states, updates, last_only: false, arg_best: None };
        let scalars: Vec<Scalar> = scan.states.iter().map(|st| st.1).collect();
        let result = self.push_state_kernel("scan", e, func, comment, outer, scan)?;
        // Where a step was skipped the result is absent, like the operand there.
        let mut reads = result
            .leaves()
            .into_iter()
            .zip(scalars)
            .map(|(r, scalar)| crate::fill::only_where(&leaves, r, scalar, &self.sparse));
        Ok(assemble(self.types, split(self.types, e.ty).1, &mut reads))
    }

    /// The next value of each state register of `states` (current values `state`) after one
    /// step of payload `f` on `operands`: absent, so the step is skipped and the state kept,
    /// wherever an operand is absent, whatever the payload reads ([`crate::fill::only_where`]).
    pub(super) fn guarded_steps(
        &mut self,
        f: Handle<Function>,
        state: Sym,
        operands: Vec<Sym>,
        states: &[StateRegister],
    ) -> Result<Vec<Rc<SExpr>>, LowerError> {
        let leaves: Vec<Rc<SExpr>> = operands.iter().flat_map(Sym::leaves).collect();
        let mut call_args = vec![state];
        call_args.extend(operands);
        let steps = self.inline(f, call_args)?.leaves();
        Ok(steps
            .into_iter()
            .zip(states)
            .map(|(u, st)| crate::fill::only_where(&leaves, u, st.1, &self.sparse))
            .collect())
    }

    /// Pushes a kernel running `scan` over `domain` whose stores write each state register
    /// into its own buffer of `e`'s value (at every step, or the final state for
    /// `last_only`); returns the value reading those buffers.
    pub(super) fn push_state_kernel(
        &mut self,
        prefix: &str,
        e: &Expr,
        func: &Function,
        comment: String,
        domain: Vec<Level>,
        scan: ScanLoop,
    ) -> Result<Sym, LowerError> {
        let name = format!("{prefix}{}", self.kernels.len());
        let (sym, ids) = self.bind(&name, e.ty, None, true, func)?;
        let stores = ids
            .iter()
            .zip(&scan.states)
            .map(|(&buffer, (id, _, _))| Store { buffer, value: Rc::new(SExpr::Acc(*id)) })
            .collect();
        self.kernels.push(Kernel {
            comment,
            detail: String::new(),
            domain,
            stores,
            sets: Vec::new(),
            kind: KernelKind::Scan(ScanKernel { scan, chain: Vec::new(), local: Vec::new() }),
            schedule: None,
        });
        Ok(sym)
    }

    /// One state register per scalar leaf of `element`, initialized from `init`, and the state
    /// as a value reading them (scans and tuple folds).
    pub(super) fn state_registers(
        &mut self,
        init: &Literal,
        element: Handle<Type>,
        func: &Function,
    ) -> Result<(Vec<StateRegister>, Sym), LowerError> {
        let init_sym = self.literal_sym(init, element, func)?;
        Ok(self.state_registers_from(&init_sym, element))
    }

    /// [`Self::state_registers`] starting from a value (a fold's `init` tensor at the point).
    pub(super) fn state_registers_from(&mut self, init: &Sym, element: Handle<Type>) -> (Vec<StateRegister>, Sym) {
        let mut typed = Vec::new();
        leaves(self.types, element, Vec::new(), &mut typed).expect("scalar leaves");
        let mut states = Vec::new();
        let mut acc_exprs = Vec::new();
        for (leaf, (_, scalar)) in init.leaves().into_iter().zip(typed) {
            let id = self.fresh_id();
            states.push((id, scalar, leaf));
            acc_exprs.push(Rc::new(SExpr::Acc(id)));
        }
        (states, assemble(self.types, element, &mut acc_exprs.into_iter()))
    }

    /// A fold whose accumulator is a tuple (e.g. an argmax's `(value, index)`): a kernel of its
    /// own that runs the reduced dimension sequentially with one state register per field —
    /// the scan machinery, keeping only the final state — into temporaries the result reads.
    /// Several reduced dimensions run as one sequential loop over their row-major product. The
    /// operands and `init` (a constant, or a tensor read at the result's point) may depend on
    /// the result's and the reduced dimensions only.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tuple_fold(
        &mut self,
        func: &Function,
        e: &Expr,
        f: Handle<Function>,
        init: &Sym,
        red: Vec<(DimName, strata_ir::Interval)>,
        elems: Vec<Sym>,
    ) -> Result<Sym, LowerError> {
        let refuse = |why: &str| LowerError::Unsupported {
            op: format!("a fold with a tuple accumulator {why}"),
            func: func.name.clone(),
        };
        let (dim, interval, elems) = match red.as_slice() {
            [(d, iv)] => (d.clone(), *iv, elems),
            // Several reduced dimensions: one sequential loop over their row-major product,
            // each coordinate computed from it (the interpreter's order).
            _ => {
                let t = crate::sym::fresh("f", self.fresh_id(), 0);
                let total: u64 = red.iter().map(|(_, iv)| iv.len()).product();
                let mut stride = total;
                let mut elems = elems;
                for (d, iv) in &red {
                    stride /= iv.len().max(1);
                    let at = index(Coord::Var { dim: t.clone(), offset: 0 });
                    let local = bin(
                        BinaryOp::Modulo,
                        bin(BinaryOp::Divides, at, ix(stride as i64)),
                        ix(iv.len().max(1) as i64),
                    );
                    let c = Coord::Computed {
                        value: local,
                        source: strata_ir::Interval::from_len(iv.len()),
                        offset: iv.start,
                    };
                    elems = elems.iter().map(|x| x.map(&mut |leaf| substitute(leaf, d, &c))).collect();
                }
                (t, strata_ir::Interval::from_len(total), elems)
            }
        };
        let (levels, element) = split(self.types, e.ty);
        let mut own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        if !depends_only_on(init.leaves(), &own) {
            return Err(refuse("inside a loop over other dimensions"));
        }
        own.push(&dim);
        if !depends_only_on(elems.iter().flat_map(Sym::leaves), &own) {
            return Err(refuse("inside a loop over other dimensions"));
        }
        let (states, state) = self.state_registers_from(init, element);
        let updates = self.guarded_steps(f, state, elems, &states)?;
        if updates.iter().any(crate::sparse::reads_sparse) {
            return Err(refuse("over sparse or ragged values"));
        }
        // The vector lanes number their blocks (at least 8 steps: 4 vectors of 2 lanes) in 32 bits.
        let arg_best = arg_best(&states, &updates, &dim).filter(|_| interval.len() < 1 << 34);
        let comment = format!("%{} = fold of @{} with a tuple accumulator", e.name, self.module.functions[f].name);
        let dim = Level::dense(dim, interval);
        let scan = ScanLoop { arg_best, dim, forward: true, states, updates, last_only: true };
        self.push_state_kernel("fold", e, func, comment, levels, scan)
    }
}
