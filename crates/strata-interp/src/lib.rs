//! The Strata reference interpreter.
//!
//! It gives every operation its simplest obviously-correct meaning — no fusion, no cleverness —
//! so that it can serve as the oracle for the native backend and for every transformation.
//! It runs verified modules only: types are trusted, and each expression's declared type is its
//! exact result type. Semantics that the seeds leave open are fixed in docs/runtime.md:
//! fill values (a sparse tensor's unstored entries are zeros) versus skipped elements (absent:
//! skip values in neighbor tables, positions past a ragged run), wrapping integer arithmetic, integer
//! division by zero as an error, IEEE floats, and a clear error for any run-time index outside a
//! tensor's interval.

#![deny(missing_docs)]

mod dense;
mod entries;
mod index;
mod nested;
mod ops;
mod structured;

use strata_entity::Handle;
use strata_ir::{Diagnostic, ExprKind, Function, FunctionKind, Module, Op, ParamMode, Span, Statement, TypeArena};
use strata_runtime::{Tensor, ValueType};

/// A run-time failure, located at the operation that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    /// Code naming the failure, e.g. `strata::run::division_by_zero`.
    pub code: &'static str,
    /// What happened.
    pub message: String,
    /// Where.
    pub span: Span,
}

impl RunError {
    /// The error as a diagnostic.
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::new(self.code, self.message.clone(), self.span, "failed here")
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}

/// What running an entry produced: a function's result, or a program's `out` parameters.
#[derive(Debug)]
pub struct Outcome {
    /// `(name, value)` pairs: `result` for a function, the parameter names for a program.
    pub values: Vec<(String, Tensor)>,
}

/// Runs verified modules.
pub struct Interpreter<'m> {
    module: &'m Module,
    types: &'m TypeArena,
}

impl<'m> Interpreter<'m> {
    /// An interpreter for `module`, whose verification produced `types`
    /// (`strata_verify::ModuleInfo::types`).
    pub fn new(module: &'m Module, types: &'m TypeArena) -> Self {
        Interpreter { module, types }
    }

    /// The runtime type of a parameter or result.
    pub fn value_type(&self, ty: strata_ir::op::TypeHandle) -> ValueType {
        ValueType::from_ir(self.types, ty)
    }

    /// Runs `entry` with one value per parameter (for programs, `out` parameters give the
    /// initial contents of the outputs).
    pub fn run(&self, entry: Handle<Function>, args: Vec<Tensor>) -> Result<Outcome, RunError> {
        let f = &self.module.functions[entry];
        let mut args = args;
        args.iter_mut().for_each(strata_runtime::storage::canonical_fill);
        let (env, results) = self.call_env(entry, args)?;
        let values = match f.kind {
            FunctionKind::Func => f.result_names().into_iter().zip(results).collect(),
            FunctionKind::Program => f
                .params
                .iter()
                .filter(|&&p| f.exprs[p].kind == ExprKind::Param(ParamMode::Out))
                .map(|&p| (f.exprs[p].name.clone(), env[p.index()].clone().expect("parameter bound")))
                .collect(),
        };
        Ok(Outcome { values })
    }

    /// Calls a function and returns its result (its first, for a payload).
    pub(crate) fn call(&self, func: Handle<Function>, args: Vec<Tensor>) -> Result<Tensor, RunError> {
        self.call_result(func, args, 0)
    }

    /// Calls a function and returns its result `which`.
    pub(crate) fn call_result(
        &self,
        func: Handle<Function>,
        args: Vec<Tensor>,
        which: usize,
    ) -> Result<Tensor, RunError> {
        let (_, mut results) = self.call_env(func, args)?;
        Ok(results.swap_remove(which))
    }

    fn call_env(
        &self,
        func: Handle<Function>,
        args: Vec<Tensor>,
    ) -> Result<(Vec<Option<Tensor>>, Vec<Tensor>), RunError> {
        let f = &self.module.functions[func];
        let mut env: Vec<Option<Tensor>> = vec![None; f.exprs.len()];
        for (&p, a) in f.params.iter().zip(args) {
            env[p.index()] = Some(a);
        }
        for (_, stmt) in f.body.iter() {
            match stmt {
                Statement::Let(v) => {
                    // A further result of a multi-result call, bound with the first below.
                    if env[v.index()].is_some() {
                        continue;
                    }
                    let e = &f.exprs[*v];
                    let ExprKind::Op(op) = &e.kind else { continue };
                    // A multi-result call runs once and binds every value of its statement.
                    if let Op::Call { func: callee, args, result: 0 } = op {
                        if self.module.functions[*callee].results.len() > 1 {
                            let args =
                                args.iter().map(|a| env[a.index()].clone().expect("defined before use")).collect();
                            let (_, results) = self.call_env(*callee, args)?;
                            for (b, mut r) in f.call_results(*v).into_iter().zip(results) {
                                strata_runtime::storage::canonical_fill(&mut r);
                                env[b.index()] = Some(r);
                            }
                            continue;
                        }
                    }
                    let ty = self.value_type(e.ty);
                    let cx = ops::OpCx { interp: self, env: &env, span: *f.exprs.meta(*v), ty: &ty };
                    let mut value = ops::eval(&cx, op)?;
                    strata_runtime::storage::canonical_fill(&mut value);
                    env[v.index()] = Some(value);
                }
                Statement::Assign { target, domain, value } => {
                    let span = f.exprs.meta(*value);
                    let v = env[value.index()].clone().expect("defined before use");
                    let t = env[target.index()].as_mut().expect("parameter bound");
                    ops::assign(t, domain.as_deref(), &v).map_err(|m| RunError {
                        code: "strata::run::assign",
                        message: m,
                        span: *span,
                    })?;
                }
                Statement::Return(vs) => {
                    let results = vs.iter().map(|v| env[v.index()].clone().expect("defined before use")).collect();
                    return Ok((env, results));
                }
            }
        }
        Ok((env, Vec::new()))
    }
}
