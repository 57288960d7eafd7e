//! Elaboration: the types a program's text leaves out, filled in by the verifier's own rules.
//!
//! `%l = plus(%a, %b)` without `: type` is parsed with the placeholder type `()` and listed in
//! its function's `untyped` values. [`elaborate`] infers each of them in statement order, from
//! the operands' types (declared, or inferred just before), exactly as verification infers
//! every statement, and writes the type into the module; [`crate::verify`] then checks the
//! module as if the author had written them. Operations whose type is declared rather than
//! inferred (`constant`, `convert`, `coordinates`, `nonzeros`, `assemble`, `array.*`) must
//! keep their `: type` (an error naming the operation otherwise).
//!
//! Preserves: everything but the `untyped` values' types (the list itself stays, so the
//! printer leaves them out again).

use strata_ir::{Diagnostic, ExprKind, Item, Module, Op, Statement};

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
                let Statement::Let(v) = stmt else { continue };
                if !func.untyped.contains(v) {
                    continue;
                }
                let ExprKind::Op(op) = &func.exprs[*v].kind else { continue };
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

/// The name of an operation whose result type is declared, not inferred.
fn declared_op(op: &Op) -> Option<&'static str> {
    match op {
        Op::Constant { .. }
        | Op::Convert { .. }
        | Op::Coordinates { .. }
        | Op::Nonzeros { .. }
        | Op::Assemble { .. }
        | Op::ArrayApi { .. } => Some(op.name()),
        _ => None,
    }
}
