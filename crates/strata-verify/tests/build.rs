//! The IR builder: types inferred by the verifier's rules as ops are added, refusals at the op
//! that is wrong, and a built module that prints, parses back equal and verifies.

use strata_ir::{BinaryOp, DimName, FunctionKind, Interval, Literal, Op, ParamMode, Scalar, Type};
use strata_verify::build::ModuleBuilder;

fn dim(n: &str) -> DimName {
    DimName::new(n)
}

/// The laplacian of seed 000, built op by op: every shift moves the interval, every `plus`
/// intersects them, and the result is defined on the interior only.
#[test]
fn a_built_laplacian_has_the_inferred_interior_and_round_trips_through_text() {
    let mut mb = ModuleBuilder::new();
    let f64t = mb.scalar(Scalar::F64);
    let field = mb.dense(f64t, &[(dim("I"), Interval::new(0, 10)), (dim("J"), Interval::new(0, 8))]);
    let mut f = mb.function("lap", FunctionKind::Func);
    let x = f.param(field, ParamMode::In);
    let mut sum = None;
    for (d, o) in [("I", 1), ("I", -1), ("J", 1), ("J", -1)] {
        let s = f.op(Op::CartesianShift { arg: x, dim: dim(d), offset: o }).unwrap();
        sum = Some(match sum {
            None => s,
            Some(acc) => f.op(Op::Binary { op: BinaryOp::Plus, lhs: acc, rhs: s }).unwrap(),
        });
    }
    let four = f.constant(Literal::Float(-4.0), Scalar::F64).unwrap();
    let centre = f.op(Op::Binary { op: BinaryOp::Multiplies, lhs: four, rhs: x }).unwrap();
    let lap = f.op(Op::Binary { op: BinaryOp::Plus, lhs: sum.unwrap(), rhs: centre }).unwrap();
    let ty = f.ty(lap);
    let Type::Tensor(t) = &f.types()[ty] else { panic!("a tensor") };
    let intervals: Vec<_> = t.levels.iter().map(|l| (l.name.as_str().to_string(), l.interval)).collect();
    assert_eq!(intervals, vec![("I".into(), Interval::new(1, 9)), ("J".into(), Interval::new(1, 7))]);
    f.finish_returning(&[lap]);
    let (module, _) = mb.finish().unwrap();
    let text = module.to_string();
    let parsed = strata_verify::parse(&text).unwrap();
    strata_verify::verify(&parsed).unwrap();
    assert_eq!(parsed.to_string(), text);
}

/// A wrong op is refused where it is added, with the verifier's diagnostic, and leaves the
/// function as it was.
#[test]
fn a_shift_along_a_missing_dimension_is_refused_at_the_op() {
    let mut mb = ModuleBuilder::new();
    let f64t = mb.scalar(Scalar::F64);
    let field = mb.dense(f64t, &[(dim("I"), Interval::new(0, 4))]);
    let other = mb.dense(f64t, &[(dim("I"), Interval::new(10, 14))]);
    let mut f = mb.function("bad", FunctionKind::Func);
    let x = f.param(field, ParamMode::In);
    let y = f.param(other, ParamMode::In);
    let e = f.op(Op::CartesianShift { arg: x, dim: dim("K"), offset: 1 }).unwrap_err();
    assert!(e.diagnostic.message.contains('K'), "{e}");
    let e = f.op(Op::Binary { op: BinaryOp::Plus, lhs: x, rhs: y }).unwrap_err().at("user.py:3");
    assert!(e.to_string().starts_with("user.py:3: "), "{e}");
    // The function is still usable.
    let s = f.op(Op::Unary { op: strata_ir::UnaryOp::Neg, arg: x }).unwrap();
    f.finish_returning(&[s]);
    mb.finish().unwrap();
}

/// A program writes its `out` over a sub-domain; an unwritten `out` is found by `finish`.
#[test]
fn programs_assign_outputs_and_an_unwritten_output_is_an_error_at_finish() {
    let mut mb = ModuleBuilder::new();
    let f64t = mb.scalar(Scalar::F64);
    let field = mb.dense(f64t, &[(dim("I"), Interval::new(0, 6))]);
    let mut p = mb.function("step", FunctionKind::Program);
    let out = p.param(field, ParamMode::Out);
    let x = p.param(field, ParamMode::In);
    let s = p.op(Op::CartesianShift { arg: x, dim: dim("I"), offset: 1 }).unwrap();
    let e = p.assign(out, None, s).unwrap_err();
    assert!(e.diagnostic.message.contains("written on"), "{e}");
    p.assign(out, Some(vec![(dim("I"), Interval::new(0, 5))]), s).unwrap();
    p.finish();
    let mut q = mb.function("never", FunctionKind::Program);
    q.param(field, ParamMode::Out);
    q.finish();
    let errors = mb.finish().unwrap_err();
    assert!(errors.iter().any(|d| d.code == "strata::verify::output_never_written"));
}

/// Payload functions are built like any function, referred to by handle, and imported into
/// another module once with their types.
#[test]
fn a_reduction_payload_is_built_once_and_imported_with_its_types() {
    let mut lib = ModuleBuilder::new();
    let f64t = lib.scalar(Scalar::F64);
    let mut p = lib.function("add", FunctionKind::Func);
    let a = p.param(f64t, ParamMode::In);
    let b = p.param(f64t, ParamMode::In);
    let r = p.op(Op::Binary { op: BinaryOp::Plus, lhs: a, rhs: b }).unwrap();
    let add = p.finish_returning(&[r]);

    let mut mb = ModuleBuilder::new();
    let f64t = mb.scalar(Scalar::F64);
    let add_here = mb.import(lib.module(), add);
    assert_eq!(mb.import(lib.module(), add), add_here, "imported once");
    let table = mb.dense(f64t, &[(dim("I"), Interval::new(0, 3)), (dim("J"), Interval::new(0, 5))]);
    let mut f = mb.function("rowsum", FunctionKind::Func);
    let x = f.param(table, ParamMode::In);
    let s = f
        .op(Op::MapReduce {
            func: add_here,
            args: vec![x],
            init: strata_ir::Init::Literal(Literal::Float(0.0)),
            subscripts: strata_ir::Einsum { inputs: vec![vec!['i', 'j']], output: vec!['i'] },
        })
        .unwrap();
    f.finish_returning(&[s]);
    let (module, _) = mb.finish().unwrap();
    assert!(module.to_string().contains("map_reduce(@add"), "{module}");
}

/// A function equal to one already built — under any name — is that function; one that differs
/// in an op, a parameter's type or its result is a function of its own, named apart.
#[test]
fn an_equal_function_is_built_once_whatever_its_name() {
    let mut lib = ModuleBuilder::new();
    let build = |lib: &mut ModuleBuilder, name: &str, op: BinaryOp, t: Scalar| {
        let ty = lib.scalar(t);
        let mut p = lib.function(name, FunctionKind::Func);
        let a = p.param(ty, ParamMode::In);
        let b = p.param(ty, ParamMode::In);
        let r = p.op(Op::Binary { op, lhs: a, rhs: b }).unwrap();
        p.finish_returning(&[r])
    };
    let add = build(&mut lib, "add", BinaryOp::Plus, Scalar::F64);
    assert_eq!(build(&mut lib, "plus", BinaryOp::Plus, Scalar::F64), add, "the same function under another name");
    assert_eq!(lib.binary_function(BinaryOp::Plus, Scalar::F64).unwrap(), add);
    let sub = build(&mut lib, "add", BinaryOp::Minus, Scalar::F64);
    let add32 = build(&mut lib, "add", BinaryOp::Plus, Scalar::F32);
    assert!(sub != add && add32 != add && add32 != sub);
    let names: Vec<&str> = [add, sub, add32].iter().map(|&h| lib.module().functions[h].name.as_str()).collect();
    assert_eq!(names, ["add", "add_1", "add_2"]);
    assert_eq!(lib.module().functions.len(), 3);
}
