//! Inlining calls and payloads (over scalars, or over tensor elements).

use super::*;

impl Lowerer<'_> {
    /// Inlines `func` applied to `args` (its first result: a payload's only one).
    pub(super) fn inline(&mut self, fh: Handle<Function>, args: Vec<Sym>) -> Result<Sym, LowerError> {
        self.inline_result(fh, args, 0)
    }

    /// Inlines `func` applied to `args`; its result `which`.
    pub(super) fn inline_result(
        &mut self,
        fh: Handle<Function>,
        args: Vec<Sym>,
        which: usize,
    ) -> Result<Sym, LowerError> {
        let scale = self.call_scale.take().unwrap_or(1.0);
        let evals = self.evaluations.of(self.module, self.types, fh);
        self.frames.push((evals, scale));
        let result = self.inline_body(fh, args, which);
        self.frames.pop();
        result
    }

    /// [`Self::inline_result`] in its frame.
    pub(super) fn inline_body(
        &mut self,
        fh: Handle<Function>,
        args: Vec<Sym>,
        which: usize,
    ) -> Result<Sym, LowerError> {
        let func = &self.module.functions[fh];
        let mut env: Vec<Option<Sym>> = vec![None; func.exprs.len()];
        for (&p, a) in func.params.iter().zip(args) {
            env[p.index()] = Some(a);
        }
        for (_, stmt) in func.body.iter() {
            match stmt {
                Statement::Let(v) => {
                    let s = self.op(func, &env, *v)?;
                    env[v.index()] = Some(self.keep_reused(func, *v, s));
                }
                Statement::Return(vs) => return Ok(env[vs[which].index()].clone().expect("defined")),
                Statement::Assign { .. } => {
                    return Err(LowerError::Unsupported { op: "assignment".into(), func: func.name.clone() })
                }
            }
        }
        Err(LowerError::Unsupported { op: "a function without return".into(), func: func.name.clone() })
    }

    /// Inlines payload `f` on single elements `args`. Tensor elements (expressions over the
    /// [`element_var`]s and the enclosing loop variables) are handed to the payload as values
    /// over its parameters' own dimensions, and its result is renamed back; the enclosing loop
    /// variables are renamed out of the way meanwhile, as the names may coincide (`_0`, `_1`).
    pub(super) fn inline_on_elements(&mut self, fh: Handle<Function>, args: Vec<Sym>) -> Result<Sym, LowerError> {
        let callee = &self.module.functions[fh];
        let types = self.types;
        let param_types: Vec<Handle<Type>> = callee.params.iter().map(|p| callee.exprs[*p].ty).collect();
        let result_type = callee.result();
        if param_types.iter().chain(&result_type).all(|&t| split(types, t).0.is_empty()) {
            return self.inline(fh, args);
        }
        let mut outer: Vec<DimName> = Vec::new();
        for x in args.iter().flat_map(Sym::leaves) {
            for v in crate::sym::free_vars(&x) {
                if !v.as_str().starts_with('$') && !outer.contains(&v) {
                    outer.push(v);
                }
            }
        }
        let uid = self.fresh_id();
        let temps: Vec<DimName> = (0..outer.len()).map(|i| crate::sym::fresh("o", uid, i)).collect();
        let var = |d: &DimName| Coord::Var { dim: d.clone(), offset: 0 };
        let mut passed = Vec::new();
        for (a, &pt) in args.iter().zip(&param_types) {
            let own = split(types, pt).0.iter().map(|l| var(&l.name)).collect();
            let (mut from, mut to) = element_exit(own, element_levels(types, pt).len());
            from.extend(outer.iter().cloned());
            to.extend(temps.iter().map(var));
            passed.push(self.rename_vars(a, &from, &to));
        }
        let r = self.inline(fh, passed)?;
        let (mut from, mut to) = match result_type {
            Some(rt) => {
                let names: Vec<DimName> = split(types, rt).0.iter().map(|l| l.name.clone()).collect();
                element_entry(&names, element_levels(types, rt).len())
            }
            None => (Vec::new(), Vec::new()),
        };
        from.extend(temps);
        to.extend(outer.iter().map(var));
        Ok(self.rename_vars(&r, &from, &to))
    }
}
