//! Native code checks every computed index, as the interpreter does, also where the value read
//! does not depend on it.

use strata_codegen::{compile, emit_c, exec, lower};
use strata_runtime::{Column, Data, Tensor};

const GATHER_FROM_CONSTANT: &str = r#"
func @p(%i: tensor<i64, _0[0:1]>) -> tensor<f64, _0[0:1]> {
  %x = constant(value = 2.5) : tensor<f64, _0[0:4]>
  %j = expand_shape(%i, groups = [[0, 1]], shape = [1, 1], mode = view) : tensor<i64, _0[0:1], _1[0:1]>
  %g = gather(%x, %j, coordinates = [0], mode = copy) : tensor<f64, _0[0:1]>
  return %g
}
"#;

fn run(index: i64) -> Result<Vec<(String, Tensor)>, exec::ExecError> {
    let module = strata_verify::parse(GATHER_FROM_CONSTANT).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let (h, f) = module.functions.iter().next().unwrap();
    let program = lower(&module, &info.types, h).unwrap();
    let (so, _) = compile::build(&emit_c::emit(&program)).unwrap();
    let lib = compile::Loaded::open(&so).unwrap();
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let ty = interp.value_type(module.functions[h].exprs[f.params[0]].ty);
    let arg = Tensor { ty, data: Data::Scalars(Column::I64(vec![index])), present: None };
    let result_ty = interp.value_type(f.result().unwrap());
    exec::run(&program, &lib, &[arg], &["i".to_string()], Some(&result_ty))
}

#[test]
fn gather_from_a_constant_checks_its_index() {
    let ok = run(3).expect("index 3 is inside [0:4]");
    assert_eq!(ok[0].1.data, Data::Scalars(Column::F64(vec![2.5])));
    assert!(matches!(run(7), Err(exec::ExecError::IndexOutOfInterval(_))));
    assert!(matches!(run(-1), Err(exec::ExecError::IndexOutOfInterval(_))));
}
