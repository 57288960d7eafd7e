//! Elaboration: the types a program's text leaves out, filled in by the verifier's own rules.
//!
//! `%l = plus(%a, %b)` without `: type` is parsed with the placeholder type `()` and listed in
//! its function's `untyped` values. [`elaborate`] infers each of them in statement order, from
//! the operands' types (declared, or inferred just before), exactly as verification infers
//! every statement, and writes the type into the module; [`crate::verify`] then checks the
//! module as if the author had written them. Operations whose type is declared rather than
//! inferred (`constant`, `convert`, `coordinates`, `nonzeros`, `assemble`) must
//! keep their `: type` (an error naming the operation otherwise).
//!
//! A literal operand (`multiplies(%a, 2.0)`, listed in `inline`) is a `constant` whose type
//! its user decides: the element type of the user's other operands (a scalar, which broadcasts
//! by name), the parameter's type in a `call`, a splat over the other operands in a `map`,
//! `index` for `get`/`set` indices, the result or output type after `return` or `<-`.
//!
//! Preserves: everything but the `untyped` values' types (the list itself stays, so the
//! printer leaves them out again).

use strata_entity::Handle;
use strata_ir::{Diagnostic, ExprKind, Function, Item, Module, Op, Scalar, Statement, Type, Value};

use crate::context::Cx;
use crate::rules::infer;

/// Parses `source` and elaborates it: the front door for text whose statements may leave out
/// their types (`strata_syntax::parse` alone keeps the placeholders, for `strata fmt`).
///
/// # Errors
/// The parser's diagnostics, or elaboration's (see [`elaborate`]).
pub fn parse(source: &str) -> Result<Module, Vec<Diagnostic>> {
    let mut m = strata_syntax::parse(source)?;
    elaborate(&mut m)?;
    Ok(m)
}

/// Fills in the types of every function's `untyped` values (see the module docs).
///
/// # Errors
/// A statement whose type cannot be inferred (its operands do not type, or the operation needs
/// a declared type): the verifier's diagnostic, located at the statement. Later statements of
/// the same function are not elaborated then.
pub fn elaborate(module: &mut Module) -> Result<(), Vec<Diagnostic>> {
    if module.functions.iter().all(|(_, f)| f.untyped.is_empty()) {
        return Ok(());
    }
    let handle_errors = crate::validate_handles(module);
    if !handle_errors.is_empty() {
        return Err(handle_errors);
    }
    let mut errors = Vec::new();
    let functions: Vec<_> =
        module.items.iter().filter_map(|i| if let Item::Function(h) = i { Some(*h) } else { None }).collect();
    for h in functions {
        if module.functions[h].untyped.is_empty() {
            continue;
        }
        let func = module.functions[h].clone();
        let mut types = module.types.clone();
        let inferred = {
            let expr_types = func.exprs.iter().map(|(_, e)| e.ty).collect();
            let span = module.functions.meta(h).span;
            let mut cx =
                Cx { module, types: &mut types, func: &func, expr_types, span, errors: &mut errors, spec: None };
            let mut inferred = Vec::new();
            for (_, stmt) in func.body.iter() {
                // A literal returned or assigned takes the whole result's or output's type.
                let whole = match stmt {
                    Statement::Return(v) => func.result.map(|t| (*v, t)),
                    Statement::Assign { target, domain: None, value } => Some((*value, func.exprs[*target].ty)),
                    _ => None,
                };
                if let Some((v, t)) = whole.filter(|(v, _)| is_literal_operand(&func, *v)) {
                    cx.expr_types[v.index()] = t;
                    inferred.push((v, t));
                }
                let Statement::Let(v) = stmt else { continue };
                let ExprKind::Op(op) = &func.exprs[*v].kind else { continue };
                if is_literal_operand(&func, *v) {
                    // Typed by its user, below.
                    continue;
                }
                if let Err(d) = type_literal_operands(&mut cx, op, &mut inferred) {
                    cx.errors.push(*d);
                    break;
                }
                if !func.untyped.contains(v) {
                    continue;
                }
                cx.span = *func.exprs.meta(*v);
                if let Some(name) = declared_op(op) {
                    cx.errors.push(
                        Diagnostic::new(
                            "strata::verify::type_required",
                            format!("`{name}` declares its result type: write `: type` after it"),
                            cx.span,
                            "type left out",
                        )
                        .with_help("only the types the verifier infers may be left out"),
                    );
                    break;
                }
                match infer(&mut cx, op, func.exprs[*v].ty) {
                    Ok(t) => {
                        cx.expr_types[v.index()] = t;
                        inferred.push((*v, t));
                    }
                    Err(d) => {
                        cx.errors.push(*d);
                        break;
                    }
                }
            }
            inferred
        };
        module.types = types;
        for (v, t) in inferred {
            module.functions[h].exprs[v].ty = t;
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Types the literal operands of `op` (see [`literal_type`]), in `cx` and in `inferred`.
fn type_literal_operands(
    cx: &mut Cx,
    op: &Op,
    inferred: &mut Vec<(Value, Handle<Type>)>,
) -> Result<(), Box<Diagnostic>> {
    for (position, lit) in op.operands().into_iter().enumerate() {
        if !is_literal_operand(cx.func, lit) {
            continue;
        }
        cx.span = *cx.func.exprs.meta(lit);
        let t = literal_type(cx, op, position)?;
        cx.expr_types[lit.index()] = t;
        inferred.push((lit, t));
    }
    Ok(())
}

/// A literal written as an operand (`multiplies(%a, 2.0)`): a `constant` its user types.
fn is_literal_operand(func: &Function, v: Value) -> bool {
    func.inline.contains(&v)
        && func.untyped.contains(&v)
        && matches!(func.exprs[v].kind, ExprKind::Op(Op::Constant { .. }))
}

/// The type of the literal at operand `position` of `op`: the parameter's type for a call, the
/// index type for `get`/`set` indices, otherwise the element type of the operation's other
/// value operands (the branches of a `select`, not its condition) — a scalar, which broadcasts.
fn literal_type(cx: &mut Cx, op: &Op, position: usize) -> Result<Handle<Type>, Box<Diagnostic>> {
    let operands = op.operands();
    let func = cx.func;
    match op {
        Op::Call { func: f, args: _ } => {
            let callee = &cx.module.functions[*f];
            if let Some(&p) = callee.params.get(position) {
                return Ok(callee.exprs[p].ty);
            }
        }
        Op::Get { .. } | Op::Set { .. } if position > 0 && position <= index_count(op) => {
            return Ok(cx.scalar(Scalar::Index));
        }
        // `map` does not broadcast: the literal is a splat over the other operands' levels.
        Op::Map { kind: _, func: f, args } => {
            let callee = &cx.module.functions[*f];
            let peer = args.iter().find(|a| !is_literal_operand(func, **a));
            if let (Some(&p), Some(&peer)) = (callee.params.get(position), peer) {
                let element = callee.exprs[p].ty;
                let view = cx.view(peer);
                return Ok(cx.tensor(element, view.levels, view.placement));
            }
        }
        _ => {}
    }
    let peers: Vec<Value> = match op {
        Op::Select { cond: _, on_true, on_false } => vec![*on_true, *on_false],
        Op::Set { arg, .. } if position == operands.len() - 1 => vec![*arg],
        _ => operands.clone(),
    };
    if let Some(&peer) = peers.iter().find(|o| !is_literal_operand(func, **o) && **o != operands[position]) {
        return Ok(cx.element(peer));
    }
    Err(Box::new(
        cx.error(
            "strata::verify::literal_type_unknown",
            format!("the type of this literal cannot be inferred from `{}`", op.name()),
            "no operand to take the type from",
        )
        .with_help("write it as a `constant` with its type, e.g. `%c = constant(value = 2.0) : f64`"),
    ))
}

/// How many index operands a `get`/`set` has.
fn index_count(op: &Op) -> usize {
    match op {
        Op::Get { arg: _, indices } | Op::Set { arg: _, indices, value: _ } => indices.len(),
        _ => 0,
    }
}

/// The name of an operation whose result type is declared, not inferred.
fn declared_op(op: &Op) -> Option<&'static str> {
    match op {
        Op::Constant { .. }
        | Op::Convert { .. }
        | Op::Coordinates { .. }
        | Op::Nonzeros { .. }
        | Op::Assemble { .. } => Some(op.name()),
        _ => None,
    }
}
