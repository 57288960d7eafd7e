//! Relocation: entries that differ only in where their intervals lie compile to the same C,
//! and a relocated entry computes what the entry computes where it is (checked against direct
//! loops); entries that read coordinates stay where they are.

use strata_engine::relocate::relocated;
use strata_engine::{prepare, Backend, Options};
use strata_runtime::{Column, Data, Tensor, Value, ValueType};

/// A 3-point stencil over a block of rows `I[lo:lo+18]` (the rows a rank of a distributed run
/// holds), written over its inner rows but the last, with a scaled copy of one row added.
fn stencil(lo: i64) -> String {
    let (a, b) = (lo, lo + 18);
    format!(
        "program @p(%out: out tensor<f64, I[{o0}:{o1}], J[0:8]>, %a: tensor<f64, I[{a}:{b}], J[0:8]>) {{
  %ip = cartesian_shift(%a, dim = I, offset = 1)
  %im = cartesian_shift(%a, dim = I, offset = -1)
  %s = plus(%ip, %im)
  %r = subset(%a, domain = [I[{r0}:{r1}]])
  %row = drop_dim(%r, dim = I)
  %wide = add_dim(%row, dim = I[{o0}:{o1}])
  %t = plus(%s, multiplies(%wide, 0.5))
  %u = subset(%t, domain = [I[{o0}:{u1}]])
  %out[I[{o0}:{u1}]] <- %u
}}
",
        o0 = a + 1,
        o1 = b - 1,
        u1 = b - 2,
        r0 = a + 3,
        r1 = a + 4,
    )
}

fn module(text: &str) -> (strata_ir::Module, strata_ir::TypeArena, strata_entity::Handle<strata_ir::Function>) {
    let module = strata_verify::parse(text).expect("parses");
    let info = strata_verify::verify(&module).expect("verifies");
    let h = module.function_by_name("p").expect("the entry");
    (module, info.types, h)
}

/// The C the native backend compiles for `text`'s entry, relocated.
fn relocated_c(text: &str) -> String {
    let (module, types, entry) = module(text);
    let r = relocated(&module, &types, entry).expect("relocated");
    let program = r.lower(&strata_codegen::LowerOptions::for_this_machine()).expect("lowers");
    strata_codegen::emit_c::emit(&program)
}

#[test]
fn translated_entries_compile_to_the_same_c() {
    let (c15, c31) = (relocated_c(&stencil(15)), relocated_c(&stencil(31)));
    assert_eq!(c15, c31);
    // A block already at 0 (rank 0's, not relocated) compiles that text too: a relocated
    // entry is lowered under the entry's name, which the C names.
    let (m0, types0, e0) = module(&stencil(0));
    assert!(relocated(&m0, &types0, e0).is_none());
    let c0 = strata_codegen::lower_with(&m0, &types0, e0, &strata_codegen::LowerOptions::for_this_machine()).unwrap();
    assert_eq!(strata_codegen::emit_c::emit(&c0), c15);
    // Where they are, their C is the same too (extents are arguments), with other extents.
    let plain = |text: &str| {
        let (m, types, e) = module(text);
        let program =
            strata_codegen::lower_with(&m, &types, e, &strata_codegen::LowerOptions::for_this_machine()).unwrap();
        strata_codegen::emit_c::emit_with_extents(&program)
    };
    let ((s15, x15), (s31, x31)) = (plain(&stencil(15)), plain(&stencil(31)));
    assert_eq!(s15, s31);
    assert_ne!(x15, x31);
    let (m, types, e) = module(&stencil(31));
    assert_eq!(
        relocated(&m, &types, e).unwrap().moved.into_iter().collect::<Vec<_>>(),
        [(strata_ir::DimName::new("I"), -31)]
    );
}

#[test]
fn a_relocated_entry_writes_what_direct_loops_compute_at_its_own_coordinates() {
    let lo = 31;
    let (m, types, e) = module(&stencil(lo));
    let options = Options { backend: Backend::Native, relocate: true, ..Options::default() };
    let p = prepare(&m, &types, e, &options).expect("prepares");
    let f = &m.functions[e];
    let ty = |i: usize| ValueType::from_ir(&types, f.exprs[f.params[i]].ty);
    let a: Vec<f64> = (0..18 * 8).map(|k| (k as f64 * 0.37).sin()).collect();
    let mut arg = Tensor::zeros(&ty(1));
    arg.data = Data::Scalars(Column::F64(a.clone()));
    let ran = p.run(&[Value::Tensor(Tensor::zeros(&ty(0))), Value::Tensor(arg)]).expect("runs");
    let (name, Value::Tensor(out)) = &ran.values[0] else { panic!("a tensor") };
    assert_eq!(name, "out");
    // The result keeps the entry's coordinates.
    assert_eq!(out.ty, ty(0));
    let Data::Scalars(Column::F64(got)) = &out.data else { panic!("f64") };
    // Rows of `out` are I[lo+1:lo+17]; each row i (local k = i - lo) but the last is
    // a[k+1] + a[k-1] + 0.5 * a[3] (the row at I = lo + 3); the last row keeps its zero.
    for (r, row) in got.chunks(8).enumerate() {
        let k = r + 1;
        for (j, &v) in row.iter().enumerate() {
            let want = if r == 15 { 0.0 } else { (a[(k + 1) * 8 + j] + a[(k - 1) * 8 + j]) + a[3 * 8 + j] * 0.5 };
            assert_eq!(v, want, "row {r}, column {j}");
        }
    }
}

#[test]
fn entries_reading_coordinates_or_already_at_zero_stay_where_they_are() {
    let pos = "program @p(%out: out tensor<index, I[5:9]>, %a: tensor<f64, I[5:9]>) {
  %c = pos(%a, dim = I)
  %out <- %c
}
";
    let (m, types, e) = module(pos);
    assert!(relocated(&m, &types, e).is_none());
    // Run with relocation asked for, it still reads its own coordinates.
    let options = Options { backend: Backend::Native, relocate: true, ..Options::default() };
    let p = prepare(&m, &types, e, &options).expect("prepares");
    let f = &m.functions[e];
    let ty = |i: usize| ValueType::from_ir(&types, f.exprs[f.params[i]].ty);
    let ran = p.run(&[Value::Tensor(Tensor::zeros(&ty(0))), Value::Tensor(Tensor::zeros(&ty(1)))]).expect("runs");
    let Value::Tensor(out) = &ran.values[0].1 else { panic!("a tensor") };
    let Data::Scalars(Column::Index(got)) = &out.data else { panic!("index values: {:?}", out.data) };
    assert_eq!(got, &[5, 6, 7, 8]);
    // The input's rows start at 0 (the output's at 1): nothing to move.
    let (m, types, e) = module(&stencil(0));
    assert!(relocated(&m, &types, e).is_none());
}
