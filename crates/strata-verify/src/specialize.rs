//! Re-typing a function's body: specialization at other parameter types, and instances of
//! generic functions.
//!
//! [`retype`] walks a function's statements with the verifier's own rules. What it infers
//! again depends on the [`Retype`] mode:
//! - [`Retype::All`] ([`specialize`]): every statement, since the entry has new parameter types.
//!   The distributed runtime uses this to give each rank its local program (block levels
//!   narrowed to the rank's block and halo); a halo too narrow for what the program writes is
//!   the verifier's usual coverage error.
//! - [`Retype::Untyped`] ([`crate::elaborate`]): only the types the text left out, literal
//!   operands, and statements that use a generic function (a written type stays as written, for
//!   verification to check).
//!
//! A function called or applied at types other than its own — a generic one always, any
//! function when specializing — is instantiated at them, recursively: the copy is appended to
//! the module under the name `<name>.<n>`, with `instance_of` naming a generic original.
//! Instantiation terminates: a function only refers to earlier ones (`validate_handles`).

use std::collections::HashMap;

use strata_entity::Handle;
use strata_ir::print::TypeDisplay;
use strata_ir::{Diagnostic, ExprKind, Function, Item, Module, Op, Statement, Type, TypeArena, Value};

use crate::context::{signature, Cx, RuleResult};
use crate::elaborate::{is_literal_operand, type_literal_operands};
use crate::rules::infer;

/// A function at parameter types.
type Instance = (Handle<Function>, Vec<Handle<Type>>);

/// What [`retype`] infers again (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retype {
    /// Every statement, and any function used at other types is instantiated.
    All,
    /// What the text left out; only generic functions are instantiated.
    Untyped,
}

/// The instances made while re-typing.
pub(crate) struct Specializer {
    /// Handle index of the first new function (the module's function count).
    base: usize,
    /// What is inferred again.
    pub mode: Retype,
    /// New functions, in the order they were finished (callees before callers).
    made: Vec<(Function, strata_ir::SourceInfo)>,
    /// `(function, parameter types)` → its instance.
    cache: HashMap<Instance, Handle<Function>>,
    /// Function references the statement being inferred had replaced.
    replaced: Vec<(Handle<Function>, Handle<Function>)>,
}

impl Specializer {
    /// A specializer for `module` (instances are appended after its functions).
    pub fn new(module: &Module, mode: Retype) -> Self {
        Specializer {
            base: module.functions.len(),
            mode,
            made: Vec::new(),
            cache: HashMap::new(),
            replaced: Vec::new(),
        }
    }

    /// The instance the last [`instantiate`] used.
    pub fn replaced_last(&self) -> Option<Handle<Function>> {
        self.replaced.last().map(|&(_, to)| to)
    }

    /// Appends the instances to `module`'s functions and items.
    pub fn append_to(self, module: &mut Module) {
        for (func, meta) in self.made {
            let h = module.functions.append(func, meta);
            module.items.push(Item::Function(h));
        }
    }
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
    let mut sp = Specializer::new(module, Retype::All);
    // The entry is re-typed even at its own parameter types: its statements may differ from
    // the module they were typed in (a rank's local program cuts its subsets to its rows).
    let f = instance(module, &mut types, &mut sp, entry, params.to_vec(), true).map_err(|d| vec![*d])?;
    let mut out = module.clone();
    out.types = types;
    sp.append_to(&mut out);
    Ok((out, f))
}

/// Whether a call or payload use of `func` from `cx` instantiates it: a generic function
/// always, any function at other types when specializing.
pub(crate) fn instantiates(cx: &Cx, func: Handle<Function>, at: &[Handle<Type>]) -> bool {
    cx.module.functions[func].is_generic() || (cx.specializing() && signature(cx.module, func).0 != at)
}

/// Instantiates `func` (called or applied from `cx`'s function) at `params`; with
/// `expected_result`, the instance must return it. Returns the type of the instance's result
/// `which`; a payload (`which` is `None`) must have exactly one.
pub(crate) fn instantiate(
    cx: &mut Cx,
    func: Handle<Function>,
    params: Vec<Handle<Type>>,
    expected_result: Option<Handle<Type>>,
    which: Option<usize>,
) -> RuleResult {
    let payload = which.is_none();
    let which = which.unwrap_or(0);
    let Cx { module, types, spec, span, .. } = cx;
    let name = &module.functions[func].name;
    let Some(sp) = spec.as_deref_mut() else {
        return Err(Box::new(Diagnostic::new(
            "strata::verify::generic_not_instantiated",
            format!("`@{name}` is generic: it is only typed at a call, when the module is elaborated"),
            *span,
            "used here",
        )));
    };
    let h = instance(module, types, sp, func, params, false).map_err(|d| {
        Box::new(if module.functions[func].is_generic() {
            d.with_label(*span, format!("in `@{name}` as instantiated here"))
        } else {
            *d
        })
    })?;
    let results = &fetch(module, sp, h).results;
    if payload && results.len() != 1 {
        return Err(Box::new(Diagnostic::new(
            "strata::verify::payload_results",
            format!("`@{name}` has {} results; a payload has one", results.len()),
            *span,
            "payload with several results",
        )));
    }
    let result = results.get(which).copied();
    sp.replaced.push((func, h));
    match (expected_result, result) {
        (Some(want), Some(got)) if want != got => Err(Box::new(Diagnostic::new(
            "strata::verify::function_signature_mismatch",
            format!(
                "`@{name}` instantiated at the operands' types returns `{}`, not `{}`",
                TypeDisplay::in_arena(module, types, got),
                TypeDisplay::in_arena(module, types, want)
            ),
            *span,
            "function used here",
        ))),
        (_, r) => r.ok_or_else(|| {
            Box::new(Diagnostic::new(
                "strata::verify::result_count_mismatch",
                format!("`@{name}` has no result {}", which + 1),
                *span,
                "no such result",
            ))
        }),
    }
}

fn fetch<'a>(module: &'a Module, sp: &'a Specializer, h: Handle<Function>) -> &'a Function {
    match h.index().checked_sub(sp.base) {
        Some(i) => &sp.made[i].0,
        None => &module.functions[h],
    }
}

/// The instance of `func` at `params`: itself when they are its own types (and it is not
/// generic, and not `always` re-typed), else a re-typed copy.
fn instance(
    module: &Module,
    types: &mut TypeArena,
    sp: &mut Specializer,
    func: Handle<Function>,
    params: Vec<Handle<Type>>,
    always: bool,
) -> Result<Handle<Function>, Box<Diagnostic>> {
    let generic = module.functions[func].is_generic();
    if !generic && !always && signature(module, func).0 == params {
        return Ok(func);
    }
    if let Some(&h) = sp.cache.get(&(func, params.clone())) {
        return Ok(h);
    }
    let mut f = retype(module, types, sp, func, Some(&params))?;
    f.name = format!("{}.{}", f.name, sp.made.len());
    if generic {
        f.instance_of = Some(func);
        // Its parameters now have types.
        let typed = f.params.clone();
        f.untyped.retain(|v| !typed.contains(&v));
    }
    let meta = module.functions.meta(func).clone();
    let h = Handle::from_index(sp.base + sp.made.len());
    sp.made.push((f, meta));
    sp.cache.insert((func, params), h);
    Ok(h)
}

/// A copy of function `h` re-typed as `sp.mode` says, with parameter types `params` (its own
/// when `None`).
pub(crate) fn retype(
    module: &Module,
    types: &mut TypeArena,
    sp: &mut Specializer,
    h: Handle<Function>,
    params: Option<&[Handle<Type>]>,
) -> Result<Function, Box<Diagnostic>> {
    let func = &module.functions[h];
    let mode = sp.mode;
    let mut out = func.clone();
    let mut expr_types: Vec<Handle<Type>> = func.exprs.iter().map(|(_, e)| e.ty).collect();
    if let Some(params) = params {
        if func.params.len() != params.len() {
            let span = module.functions.meta(h).span;
            return Err(Box::new(Diagnostic::new(
                "strata::verify::arity_mismatch",
                format!("`@{}` takes {} parameters, {} types given", func.name, func.params.len(), params.len()),
                span,
                "specialized here",
            )));
        }
        for (&p, &t) in func.params.iter().zip(params) {
            expr_types[p.index()] = t;
            out.exprs[p].ty = t;
        }
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
    let typed = |cx: &mut Cx, out: &mut Function, v: Value, t: Handle<Type>| {
        cx.expr_types[v.index()] = t;
        out.exprs[v].ty = t;
    };
    for (s, stmt) in func.body.iter() {
        cx.span = func.body.meta(s).span;
        match stmt {
            Statement::Let(v) => {
                let e = &func.exprs[*v];
                let ExprKind::Op(op) = &e.kind else { continue };
                if is_literal_operand(func, *v) {
                    // Typed by its user.
                    continue;
                }
                for (lit, t) in type_literal_operands(&mut cx, op)? {
                    typed(&mut cx, &mut out, lit, t);
                }
                let untyped = func.untyped.contains(v);
                let uses_generic = op.functions().iter().any(|&f| module.functions[f].is_generic());
                if mode == Retype::Untyped && !untyped && !uses_generic {
                    continue;
                }
                cx.span = *func.exprs.meta(*v);
                if untyped && op.has_declared_type() {
                    return Err(Box::new(
                        Diagnostic::new(
                            "strata::verify::type_required",
                            format!("`{}` declares its result type: write `: type` after it", op.name()),
                            cx.span,
                            "type left out",
                        )
                        .with_help("only the types the verifier infers may be left out"),
                    ));
                }
                if let Some(sp) = cx.spec.as_deref_mut() {
                    sp.replaced.clear();
                }
                let inferred = infer(&mut cx, op, e.ty)?;
                // A type the text wrote stays, for verification to compare.
                let t = if mode == Retype::Untyped && !untyped { e.ty } else { inferred };
                let mut op = op.clone();
                for &(from, to) in &cx.spec.as_deref().expect("re-typing").replaced {
                    retarget(&mut op, from, to);
                }
                out.exprs[*v].kind = ExprKind::Op(op);
                typed(&mut cx, &mut out, *v, t);
            }
            Statement::Assign { target, domain, value } => {
                // A literal assigned to a whole output takes the output's type.
                if domain.is_none() && is_literal_operand(func, *value) {
                    let t = cx.ty(*target);
                    typed(&mut cx, &mut out, *value, t);
                }
                if mode == Retype::All {
                    crate::function::check_assign(&cx, *target, domain.as_deref(), *value)?;
                }
            }
            Statement::Return(vs) => {
                // A literal returned takes the result's type.
                for (i, v) in vs.iter().enumerate().filter(|(_, v)| is_literal_operand(func, **v)) {
                    match func.results.get(i).filter(|_| !func.result_inferred) {
                        Some(&t) => typed(&mut cx, &mut out, *v, t),
                        None => {
                            return Err(Box::new(
                                cx.error(
                                    "strata::verify::literal_type_unknown",
                                    "the type of a returned literal cannot be inferred without a result type",
                                    "no type to take",
                                )
                                .with_help("write the result type: `-> f64`"),
                            ))
                        }
                    }
                }
                if mode == Retype::All || func.result_inferred {
                    out.results = vs.iter().map(|&v| cx.ty(v)).collect();
                }
            }
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
