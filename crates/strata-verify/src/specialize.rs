//! Specialization: a function re-typed at other parameter types.
//!
//! [`specialize`] gives an entry new parameter types and infers every statement again by the
//! verifier's own rules, so each value gets the type those parameters imply. A function it calls
//! (or a payload it applies) at types other than its own is instantiated at them, recursively:
//! the copy is appended to the module under the name `<name>.<n>`. The distributed runtime uses
//! this to give each rank its local program (block levels narrowed to the rank's block and halo);
//! a halo too narrow for what the program writes is the verifier's usual coverage error.
//! Instantiation terminates: a function only refers to earlier ones (`validate_handles`).

use std::collections::HashMap;

use strata_entity::Handle;
use strata_ir::print::TypeDisplay;
use strata_ir::{Diagnostic, ExprKind, Function, Item, Module, Op, Statement, Type, TypeArena};

use crate::context::{signature, Cx, RuleResult};
use crate::rules::infer;

/// A function at parameter types.
type Instance = (Handle<Function>, Vec<Handle<Type>>);

/// The instances made while specializing one entry.
pub(crate) struct Specializer {
    /// Handle index of the first new function (the module's function count).
    base: usize,
    /// New functions, in the order they were finished (callees before callers).
    made: Vec<(Function, strata_ir::SourceInfo)>,
    /// `(function, parameter types)` → its instance.
    cache: HashMap<Instance, Handle<Function>>,
    /// Function references the statement being inferred had replaced.
    replaced: Vec<(Handle<Function>, Handle<Function>)>,
}

/// `entry` of `module` (verified, with `types` its extended type arena) re-typed with parameter
/// types `params`; returns the module with the instances appended and the entry's instance.
pub fn specialize(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    params: &[Handle<Type>],
) -> Result<(Module, Handle<Function>), Vec<Diagnostic>> {
    let mut types = types.clone();
    let mut sp =
        Specializer { base: module.functions.len(), made: Vec::new(), cache: HashMap::new(), replaced: Vec::new() };
    let f = instance(module, &mut types, &mut sp, entry, params.to_vec()).map_err(|d| vec![*d])?;
    let mut out = module.clone();
    out.types = types;
    for (func, meta) in sp.made {
        let h = out.functions.append(func, meta);
        out.items.push(Item::Function(h));
    }
    Ok((out, f))
}

/// Instantiates `func` (called or applied from `cx`'s function) at `params`; with
/// `expected_result`, the instance must return it. Returns the instance's result type.
pub(crate) fn instantiate(
    cx: &mut Cx,
    func: Handle<Function>,
    params: Vec<Handle<Type>>,
    expected_result: Option<Handle<Type>>,
) -> RuleResult {
    let Cx { module, types, spec, span, .. } = cx;
    let sp = spec.as_deref_mut().expect("instantiate runs while specializing");
    let h = instance(module, types, sp, func, params)?;
    let result = fetch(module, sp, h).result;
    sp.replaced.push((func, h));
    match (expected_result, result) {
        (Some(want), Some(got)) if want != got => Err(Box::new(Diagnostic::new(
            "strata::verify::function_signature_mismatch",
            format!(
                "`@{}` instantiated at the operands' types returns `{}`, not `{}`",
                module.functions[func].name,
                TypeDisplay::in_arena(module, types, got),
                TypeDisplay::in_arena(module, types, want)
            ),
            *span,
            "function used here",
        ))),
        (_, r) => r.ok_or_else(|| Box::new(Diagnostic::new("strata::verify::missing_return", "no result", *span, ""))),
    }
}

fn fetch<'a>(module: &'a Module, sp: &'a Specializer, h: Handle<Function>) -> &'a Function {
    match h.index().checked_sub(sp.base) {
        Some(i) => &sp.made[i].0,
        None => &module.functions[h],
    }
}

/// The instance of `func` at `params`: itself when they are its own types, else a re-typed copy.
fn instance(
    module: &Module,
    types: &mut TypeArena,
    sp: &mut Specializer,
    func: Handle<Function>,
    params: Vec<Handle<Type>>,
) -> Result<Handle<Function>, Box<Diagnostic>> {
    if signature(module, func).0 == params {
        return Ok(func);
    }
    if let Some(&h) = sp.cache.get(&(func, params.clone())) {
        return Ok(h);
    }
    let mut f = retype(module, types, sp, func, &params)?;
    f.name = format!("{}.{}", f.name, sp.made.len());
    let meta = module.functions.meta(func).clone();
    let h = Handle::from_index(sp.base + sp.made.len());
    sp.made.push((f, meta));
    sp.cache.insert((func, params), h);
    Ok(h)
}

/// A copy of `func` with parameter types `params` and every statement's type inferred again.
fn retype(
    module: &Module,
    types: &mut TypeArena,
    sp: &mut Specializer,
    h: Handle<Function>,
    params: &[Handle<Type>],
) -> Result<Function, Box<Diagnostic>> {
    let func = &module.functions[h];
    let mut out = func.clone();
    if func.params.len() != params.len() {
        let span = module.functions.meta(h).span;
        return Err(Box::new(Diagnostic::new(
            "strata::verify::arity_mismatch",
            format!("`@{}` takes {} parameters, {} types given", func.name, func.params.len(), params.len()),
            span,
            "specialized here",
        )));
    }
    let mut expr_types: Vec<Handle<Type>> = func.exprs.iter().map(|(_, e)| e.ty).collect();
    for (&p, &t) in func.params.iter().zip(params) {
        expr_types[p.index()] = t;
        out.exprs[p].ty = t;
    }
    let mut errors = Vec::new();
    let mut cx = Cx {
        module,
        types,
        func,
        expr_types,
        span: module.functions.meta(h).span,
        errors: &mut errors,
        spec: Some(sp),
    };
    for (s, stmt) in func.body.iter() {
        cx.span = func.body.meta(s).span;
        match stmt {
            Statement::Let(v) => {
                let e = &func.exprs[*v];
                let ExprKind::Op(op) = &e.kind else { continue };
                cx.span = *func.exprs.meta(*v);
                if let Some(sp) = cx.spec.as_deref_mut() {
                    sp.replaced.clear();
                }
                let t = infer(&mut cx, op, e.ty)?;
                cx.expr_types[v.index()] = t;
                let mut op = op.clone();
                for &(from, to) in &cx.spec.as_deref().expect("specializing").replaced {
                    retarget(&mut op, from, to);
                }
                out.exprs[*v] = strata_ir::Expr { ty: t, kind: ExprKind::Op(op), ..e.clone() };
            }
            Statement::Assign { target, domain, value } => {
                crate::function::check_assign(&cx, *target, domain.as_deref(), *value)?;
            }
            Statement::Return(v) => out.result = Some(cx.ty(*v)),
        }
    }
    if let Some(d) = errors.into_iter().next() {
        return Err(Box::new(d));
    }
    Ok(out)
}

/// Points `op`'s function reference `from` at `to`.
fn retarget(op: &mut Op, from: Handle<Function>, to: Handle<Function>) {
    if let Some(f) = op.function_mut().filter(|f| **f == from) {
        *f = to;
    }
}
