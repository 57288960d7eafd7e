//! Handle validation on modules built by code (as passes build them), which the parser cannot
//! produce: forward references and dangling handles are reported, never indexed.

use strata_entity::{Arena, Handle};
use strata_ir::*;

fn module_with(op_of: impl FnOnce(Value) -> Op) -> Module {
    let mut m = Module::default();
    let f64t = m.types.insert(Type::Scalar(Scalar::F64));
    let mut exprs = Arena::new();
    let p = exprs.append(Expr { name: "a".into(), ty: f64t, kind: ExprKind::Param(ParamMode::In) }, Span::UNKNOWN);
    // Refers to the expression after it (or to one that does not exist).
    let later: Value = Handle::from_index(5);
    let e = exprs.append(Expr { name: "b".into(), ty: f64t, kind: ExprKind::Op(op_of(later)) }, Span::UNKNOWN);
    let mut body = Arena::new();
    body.append(Statement::Let(e), SourceInfo::default());
    body.append(Statement::Return(vec![e]), SourceInfo::default());
    let f = Function {
        name: "f".into(),
        kind: FunctionKind::Func,
        params: vec![p],
        results: vec![f64t],
        exprs,
        body,
        closing_comments: vec![],
        untyped: Default::default(),
        inline: Default::default(),
        result_inferred: false,
        instance_of: None,
    };
    let h = m.functions.append(f, SourceInfo::default());
    m.items.push(Item::Function(h));
    m
}

#[test]
fn forward_and_dangling_operands_are_reported() {
    let m = module_with(|later| Op::Unary { op: UnaryOp::Neg, arg: later });
    let errs = strata_verify::verify(&m).expect_err("dangling operand");
    assert!(errs.iter().all(|d| d.code == "strata::verify::invalid_handle"), "{errs:?}");
    assert!(errs[0].message.contains("uses a value defined after it"), "{}", errs[0].message);
}

#[test]
fn dangling_function_is_reported() {
    let m = module_with(|_| Op::Call { func: Handle::from_index(3), args: vec![], result: 0 });
    let errs = strata_verify::verify(&m).expect_err("dangling function");
    assert!(errs[0].message.contains("refers to a missing function"), "{}", errs[0].message);
}

#[test]
fn recursion_is_reported() {
    // `@f` (function 0) calls itself.
    let m = module_with(|_| Op::Call { func: Handle::from_index(0), args: vec![], result: 0 });
    let errs = strata_verify::verify(&m).expect_err("recursive function");
    assert!(errs[0].message.contains("`@f` calls itself"), "{}", errs[0].message);
}

#[test]
fn a_valid_built_module_verifies() {
    let mut m = module_with(|_| Op::Constant { value: Literal::Float(1.5) });
    // Replace nothing: the constant has no operands, so the module is valid.
    assert!(strata_verify::verify(&m).is_ok());
    m.items.push(Item::Alias(Handle::from_index(0)));
    let errs = strata_verify::verify(&m).expect_err("missing alias item");
    assert_eq!(errs[0].code, "strata::verify::invalid_handle");
}
