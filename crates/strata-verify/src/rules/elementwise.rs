//! Seed 000's elementwise builtins: unary and binary math, select, cast, constants, tuples and
//! calls.

use strata_entity::Handle;
use strata_ir::{BinaryClass, BinaryOp, Function, FunctionKind, Literal, Scalar, Type, UnaryDomain, UnaryOp, Value};

use crate::broadcast::{broadcast, SparseMerge};
use crate::context::{signature, Cx, RuleResult};

fn scalar_element(cx: &Cx, v: Value, op: &str) -> Result<Scalar, Box<strata_ir::Diagnostic>> {
    cx.scalar_of(cx.element(v)).ok_or_else(|| {
        let d = cx.error(
            "strata::verify::expected_scalar_element",
            format!(
                "`{op}` needs scalar elements, but `%{}` has elements of type `{}`",
                cx.expr(v).name,
                cx.show(cx.element(v))
            ),
            "non-scalar elements",
        );
        let d = cx.with_operand(d, v);
        Box::new(d.with_help("use `map` with a function to apply an operation to tuple or tensor elements"))
    })
}

pub(crate) fn unary(cx: &mut Cx, op: UnaryOp, arg: Value) -> RuleResult {
    let s = scalar_element(cx, arg, op.keyword())?;
    let (ok, wanted) = match op.domain() {
        UnaryDomain::Bool => (s == Scalar::Bool, "`bool`"),
        UnaryDomain::Numeric => (s.is_numeric(), "a numeric type"),
        UnaryDomain::Inexact => (s.is_inexact(), "real and complex float types"),
        UnaryDomain::Float => (s.is_float(), "real float types"),
        UnaryDomain::Bits => (s == Scalar::Bool || s.is_integer(), "integer types and `bool`"),
    };
    if !ok {
        let code =
            if op.float_only() { "strata::verify::expected_float" } else { "strata::verify::element_type_mismatch" };
        let d = cx.error(
            code,
            format!("`{}` is defined on {wanted}, not on `{s}`", op.keyword()),
            format!("`{s}` operand"),
        );
        let d = cx.with_operand(d, arg);
        return Err(if op.float_only() && !s.is_complex() {
            Box::new(d.with_help("convert first, e.g. `cast(%x, to = f64)`"))
        } else {
            d
        });
    }
    let (levels, placement, any) = broadcast(cx, &[arg], SparseMerge::Intersect)?;
    let el = cx.scalar(op.result(s));
    Ok(cx.tensor_or_element(any, el, levels, placement))
}

pub(crate) fn binary(cx: &mut Cx, op: BinaryOp, lhs: Value, rhs: Value) -> RuleResult {
    let a = scalar_element(cx, lhs, op.keyword())?;
    let b = scalar_element(cx, rhs, op.keyword())?;
    if a != b {
        let d = cx.error(
            "strata::verify::element_type_mismatch",
            format!("`{}` operands have different element types `{a}` and `{b}`", op.keyword()),
            "mixed element types",
        );
        let d = cx.with_operand(cx.with_operand(d, lhs), rhs);
        return Err(Box::new(d.with_help("Strata never converts implicitly: insert a `cast`")));
    }
    let class = op.class();
    let (ok, wanted) = match class {
        _ if op.float_only() => (a.is_float(), "real float types"),
        _ if a.is_complex() && !op.takes_complex() => (false, "real numeric types"),
        BinaryClass::Arithmetic => (a.is_numeric(), "numeric types"),
        BinaryClass::Logical => (a == Scalar::Bool, "`bool`"),
        BinaryClass::Bitwise if op.integer_only() => (a.is_integer(), "integer types"),
        BinaryClass::Bitwise => (a.is_integer() || a == Scalar::Bool, "integer types and `bool`"),
        BinaryClass::Comparison => (true, ""),
    };
    if !ok {
        let d = cx.error(
            "strata::verify::element_type_mismatch",
            format!("`{}` is defined on {wanted}, not on `{a}`", op.keyword()),
            format!("`{a}` operands"),
        );
        return Err(cx.with_operand(d, lhs));
    }
    let merge =
        if matches!(op, BinaryOp::Multiplies | BinaryOp::And) { SparseMerge::Intersect } else { SparseMerge::Union };
    let (levels, placement, any) = broadcast(cx, &[lhs, rhs], merge)?;
    let el = if matches!(class, BinaryClass::Arithmetic | BinaryClass::Bitwise) {
        cx.element(lhs)
    } else {
        cx.scalar(Scalar::Bool)
    };
    Ok(cx.tensor_or_element(any, el, levels, placement))
}

pub(crate) fn select(cx: &mut Cx, cond: Value, on_true: Value, on_false: Value) -> RuleResult {
    if cx.scalar_of(cx.element(cond)) != Some(Scalar::Bool) {
        let d = cx.error(
            "strata::verify::expected_bool",
            format!("the condition of `select` must have `bool` elements, not `{}`", cx.show(cx.element(cond))),
            "not a condition",
        );
        return Err(cx.with_operand(d, cond));
    }
    if cx.element(on_true) != cx.element(on_false) {
        let d = cx.error(
            "strata::verify::element_type_mismatch",
            format!(
                "the branches of `select` have different element types `{}` and `{}`",
                cx.show(cx.element(on_true)),
                cx.show(cx.element(on_false))
            ),
            "mixed element types",
        );
        return Err(cx.with_operand(cx.with_operand(d, on_true), on_false));
    }
    let (levels, placement, any) = broadcast(cx, &[cond, on_true, on_false], SparseMerge::Union)?;
    let el = cx.element(on_true);
    Ok(cx.tensor_or_element(any, el, levels, placement))
}

pub(crate) fn cast(cx: &mut Cx, arg: Value, to: Scalar) -> RuleResult {
    let from = scalar_element(cx, arg, "cast")?;
    if from.is_complex() && !to.is_complex() && to != Scalar::Bool {
        let d = cx.error(
            "strata::verify::complex_to_real_cast",
            format!("`cast` from `{from}` to `{to}` would drop the imaginary part"),
            format!("`{from}` operand"),
        );
        let d = cx.with_operand(d, arg);
        return Err(Box::new(d.with_help("take the part you mean first: `real(%x)`, `imag(%x)` or `abs(%x)`")));
    }
    let (levels, placement, any) = broadcast(cx, &[arg], SparseMerge::Intersect)?;
    let el = cx.scalar(to);
    Ok(cx.tensor_or_element(any, el, levels, placement))
}

pub(crate) fn constant(cx: &mut Cx, value: &Literal, declared: Handle<Type>) -> RuleResult {
    if let Type::Tensor(t) = &cx.types[declared] {
        if !t.is_all_dense() {
            return Err(cx.error(
                "strata::verify::constant_not_dense",
                "a constant tensor must be dense",
                "sparse, ragged or distributed levels",
            ));
        }
    }
    if matches!(cx.types[declared], Type::Function { .. }) || !cx.literal_fits(value, declared) {
        return Err(cx.error(
            "strata::verify::literal_type_mismatch",
            format!("literal `{value}` is not a value of type `{}`", cx.show(declared)),
            "literal does not fit",
        ));
    }
    Ok(declared)
}

pub(crate) fn make_tuple(cx: &mut Cx, fields: &[Value]) -> RuleResult {
    if fields.is_empty() {
        return Err(cx.error("strata::verify::empty_tuple", "`make_tuple` needs at least one field", "no fields"));
    }
    let (levels, placement, any) = broadcast(cx, fields, SparseMerge::Union)?;
    let elems: Vec<Handle<Type>> = fields.iter().map(|&f| cx.element(f)).collect();
    let el = cx.intern(Type::Tuple(elems));
    Ok(cx.tensor_or_element(any, el, levels, placement))
}

pub(crate) fn tuple_get(cx: &mut Cx, tuple: Value, index: u32) -> RuleResult {
    let el = cx.element(tuple);
    let Type::Tuple(fields) = cx.types[el].clone() else {
        let d = cx.error(
            "strata::verify::expected_tuple",
            format!("`tuple_get` needs tuple elements, not `{}`", cx.show(el)),
            "not a tuple",
        );
        return Err(cx.with_operand(d, tuple));
    };
    let Some(&field) = fields.get(index as usize) else {
        let d = cx.error(
            "strata::verify::tuple_index_out_of_range",
            format!("tuple index {index} is out of range for a tuple of {} fields", fields.len()),
            "no such field",
        );
        return Err(cx.with_operand(d, tuple));
    };
    let v = cx.view(tuple);
    Ok(cx.tensor_or_element(v.is_tensor, field, v.levels, v.placement))
}

/// Checks `args` against a function's parameters; returns the type of its result `which`.
pub(crate) fn check_call(cx: &mut Cx, func: Handle<Function>, args: &[Value], which: usize) -> RuleResult {
    let f = &cx.module.functions[func];
    if f.kind == FunctionKind::Program {
        return Err(Box::new(
            cx.error(
                "strata::verify::call_program",
                format!("`@{}` is a program and cannot be called", f.name),
                "called here",
            )
            .with_help("programs are entry points; factor the computation into a `func`"),
        ));
    }
    let (params, _) = signature(cx.module, func);
    let arg_types: Vec<_> = args.iter().map(|&a| cx.ty(a)).collect();
    if params.len() == args.len() && crate::specialize::instantiates(cx, func, &arg_types) {
        return crate::specialize::instantiate(cx, func, arg_types, None, Some(which));
    }
    if params.len() != args.len() {
        return Err(cx.error(
            "strata::verify::arity_mismatch",
            format!("`@{}` takes {} arguments, {} given", f.name, params.len(), args.len()),
            "wrong number of arguments",
        ));
    }
    for (i, (&p, &a)) in params.iter().zip(args).enumerate() {
        if cx.ty(a) != p {
            let d = cx.error(
                "strata::verify::argument_type_mismatch",
                format!(
                    "argument {} of `@{}` must have type `{}`, found `{}`",
                    i + 1,
                    f.name,
                    cx.show(p),
                    cx.show(cx.ty(a))
                ),
                "mismatched argument",
            );
            return Err(cx.with_operand(d, a));
        }
    }
    f.results.get(which).copied().ok_or_else(|| {
        cx.error(
            "strata::verify::result_count_mismatch",
            format!("`@{}` has {} results, not {}", f.name, f.results.len(), which + 1),
            "no such result",
        )
    })
}

/// Checks that function `func` has exactly the parameter and result types `expected`; returns
/// its result type (a generic function's is its instance's).
pub(crate) fn check_signature(
    cx: &mut Cx,
    op: &str,
    func: Handle<Function>,
    expected_params: &[Handle<Type>],
    expected_result: Option<Handle<Type>>,
) -> RuleResult {
    let f = &cx.module.functions[func];
    if f.kind == FunctionKind::Program {
        return Err(cx.error(
            "strata::verify::call_program",
            format!("`@{}` is a program, not a function", f.name),
            "used here",
        ));
    }
    if !f.is_generic() && f.results.len() != 1 {
        return Err(several_results(cx, op, func));
    }
    let (params, result) = signature(cx.module, func);
    let result_ok = expected_result.is_none_or(|r| result == Some(r));
    let retyped = crate::specialize::instantiates(cx, func, expected_params) || (cx.specializing() && !result_ok);
    if params.len() == expected_params.len() && retyped {
        return crate::specialize::instantiate(cx, func, expected_params.to_vec(), expected_result, None);
    }
    let show_list = |cx: &Cx, ts: &[Handle<Type>]| ts.iter().map(|&t| cx.show(t)).collect::<Vec<_>>().join(", ");
    if params != expected_params || !result_ok {
        let want = format!(
            "({}) -> {}",
            show_list(cx, expected_params),
            expected_result.map_or_else(|| "…".to_string(), |r| cx.show(r))
        );
        let have =
            format!("({}) -> {}", show_list(cx, &params), result.map_or_else(|| "?".to_string(), |r| cx.show(r)));
        let span = cx.module.functions.meta(func).span;
        return Err(Box::new(
            cx.error(
                "strata::verify::function_signature_mismatch",
                format!("`{op}` needs `@{}` to have type `{want}`, but it has type `{have}`", f.name),
                "function used here",
            )
            .with_label(span, "defined here"),
        ));
    }
    Ok(result.expect("a func has a result type"))
}

/// The accumulator element type of payload `func` of `op`: its result type, or for a generic
/// payload the initial value's — an `init` tensor's element type, or the literal's type with
/// each number taking the type of the operands' elements `peer` (a float literal a float
/// element's, an integer literal a numeric one's; `f64` / `i64` otherwise; next to tuple
/// elements, a number takes the first field's type).
pub(crate) fn accumulator(
    cx: &mut Cx,
    op: &str,
    func: Handle<Function>,
    init: &strata_ir::Init,
    peer: Handle<Type>,
) -> RuleResult {
    let f = &cx.module.functions[func];
    if f.kind == FunctionKind::Program {
        return Err(cx.error(
            "strata::verify::call_program",
            format!("`{op}` needs a function, `@{}` is a program", f.name),
            "used here",
        ));
    }
    if !f.is_generic() {
        return f.result().ok_or_else(|| several_results(cx, op, func));
    }
    Ok(match init {
        strata_ir::Init::Value(v) => cx.element(*v),
        strata_ir::Init::Literal(l) => literal_like(cx, l, peer),
    })
}

/// The type of literal `l` next to elements of type `peer` (see [`accumulator`]).
fn literal_like(cx: &mut Cx, l: &strata_ir::Literal, peer: Handle<Type>) -> Handle<Type> {
    use strata_ir::Literal;
    // A number next to tuple elements takes the first field's type.
    let mut leaf = peer;
    while let Type::Tuple(fs) = &cx.types[leaf] {
        match fs.first() {
            Some(&f) => leaf = f,
            None => break,
        }
    }
    let scalar = cx.scalar_of(leaf);
    match l {
        Literal::Tuple(ls) => {
            let peers = match &cx.types[peer] {
                Type::Tuple(ps) if ps.len() == ls.len() => ps.clone(),
                _ => vec![peer; ls.len()],
            };
            let fields = ls.iter().zip(peers).map(|(l, p)| literal_like(cx, l, p)).collect();
            cx.intern(Type::Tuple(fields))
        }
        Literal::Bool(_) => cx.scalar(Scalar::Bool),
        Literal::Int(_) => cx.scalar(scalar.filter(|s| s.is_numeric()).unwrap_or(Scalar::I64)),
        Literal::Float(_) => cx.scalar(scalar.filter(|s| s.is_inexact()).unwrap_or(Scalar::F64)),
    }
}

/// `op` applies `func` as a payload, which needs exactly one result.
pub(crate) fn several_results(cx: &Cx, op: &str, func: Handle<Function>) -> Box<strata_ir::Diagnostic> {
    let f = &cx.module.functions[func];
    cx.error(
        "strata::verify::payload_results",
        format!("`{op}` applies `@{}`, which has {} results; a payload has one", f.name, f.results.len()),
        "payload with several results",
    )
}
