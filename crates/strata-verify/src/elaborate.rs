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
//! A `func` may leave its result type out (`func @f(%x: T) {`): it is the returned value's.
//!
//! A `func` that leaves a parameter's type out (`func @lap(%x) { … }`) is *generic*: it is not
//! typed by itself but instantiated at the argument types of each call (or, as a payload, at
//! the element types the operation applies it to; as a ring's `add`/`mul`, at the ring's
//! element type). Each instance is a typed copy appended to the module (`instance_of` names
//! the generic function, which the printer writes instead) and verified like any function; an
//! error inside it names the use that instantiated it. A generic function nothing uses is
//! never typed.
//!
//! Preserves: everything but the `untyped` values' types (the list itself stays, so the
//! printer leaves them out again), the inferred results, and the function references
//! retargeted to instances.

use strata_entity::Handle;
use strata_ir::{Diagnostic, ExprKind, Function, Item, Module, Op, Scalar, Type, Value};

use crate::context::Cx;
use crate::specialize::{retype, Retype, Specializer};

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

/// Fills in the types of every function's `untyped` values and inferred results, and
/// instantiates generic functions at their uses (see the module docs).
///
/// # Errors
/// A statement whose type cannot be inferred (its operands do not type, or the operation needs
/// a declared type): the verifier's diagnostic, located at the statement. Later statements of
/// the same function are not elaborated then.
pub fn elaborate(module: &mut Module) -> Result<(), Vec<Diagnostic>> {
    if module.functions.iter().all(|(_, f)| f.untyped.is_empty() && !f.result_inferred) {
        return Ok(());
    }
    let handle_errors = crate::validate_handles(module);
    if !handle_errors.is_empty() {
        return Err(handle_errors);
    }
    let mut errors = Vec::new();
    let mut types = module.types.clone();
    let mut sp = Specializer::new(module, Retype::Untyped);
    let functions: Vec<_> =
        module.items.iter().filter_map(|i| if let Item::Function(h) = i { Some(*h) } else { None }).collect();
    for h in functions {
        // A generic function is typed per instance, at its uses.
        if module.functions[h].is_generic() {
            continue;
        }
        match retype(module, &mut types, &mut sp, h, None) {
            Ok(f) => module.functions[h] = f,
            Err(d) => errors.push(*d),
        }
    }
    // A generic `add` or `mul` of a ring is instantiated at the ring's element type.
    let rings: Vec<_> = module.rings.handles().collect();
    for r in rings {
        let ring = &module.rings[r];
        let t = types.insert(Type::Scalar(ring.element));
        let span = module.rings.meta(r).span;
        for (role, f) in [(0, ring.add), (1, ring.mul)] {
            if !module.functions[f].is_generic() {
                continue;
            }
            let mut cx = Cx {
                module: &*module,
                types: &mut types,
                func: &module.functions[f],
                expr_types: Vec::new(),
                span,
                errors: &mut errors,
                spec: Some(&mut sp),
            };
            if let Err(d) = crate::specialize::instantiate(&mut cx, f, vec![t, t], Some(t), None) {
                cx.errors.push(*d);
                continue;
            }
            let made = sp.replaced_last().expect("instantiated");
            let ring = &mut module.rings[r];
            if role == 0 {
                ring.add = made;
            } else {
                ring.mul = made;
            }
        }
    }
    module.types = types;
    sp.append_to(module);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The types of the literal operands of `op` (see [`literal_type`]).
pub(crate) fn type_literal_operands(cx: &mut Cx, op: &Op) -> Result<Vec<(Value, Handle<Type>)>, Box<Diagnostic>> {
    let mut typed = Vec::new();
    for (position, lit) in op.operands().into_iter().enumerate() {
        if !is_literal_operand(cx.func, lit) {
            continue;
        }
        cx.span = *cx.func.exprs.meta(lit);
        let t = literal_type(cx, op, position)?;
        cx.expr_types[lit.index()] = t;
        typed.push((lit, t));
    }
    Ok(typed)
}

/// A literal written as an operand (`multiplies(%a, 2.0)`): a `constant` its user types.
pub(crate) fn is_literal_operand(func: &Function, v: Value) -> bool {
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
        Op::Call { func: f, .. } => {
            let callee = &cx.module.functions[*f];
            // A generic parameter takes the type of the other operands' elements.
            if let Some(&p) = callee.params.get(position).filter(|p| !callee.untyped.contains(p)) {
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
                let element = if callee.untyped.contains(&p) { cx.element(peer) } else { callee.exprs[p].ty };
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
