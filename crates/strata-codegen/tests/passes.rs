//! What the lowering passes decide on the seed's stencils (their results are checked against
//! the interpreter in examples.rs; here, the shape of the kernels).

use std::path::Path;

use strata_codegen::{lower, KernelProgram};

fn lowered(file: &str, entry: &str) -> KernelProgram {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(file);
    let module = strata_verify::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let (h, _) = module.functions.iter().find(|(_, f)| f.name == entry).unwrap();
    lower(&module, &info.types, h).unwrap()
}

#[test]
fn nabla_extracts_each_flux_once_with_one_shared_presence_column() {
    let p = lowered("stencil/nabla.strata", "nabla");
    let temps: Vec<&str> = p.buffers.iter().filter(|b| b.temp).map(|b| b.name.as_str()).collect();
    assert_eq!(temps, ["tmp0.0", "tmp0.0.present", "tmp1.0"], "{p}");
    // Both fluxes in one edge loop, then one vertex loop.
    assert_eq!(p.kernels.len(), 2, "{p}");
    assert_eq!(p.kernels[0].stores.len(), 3, "{p}");
}

#[test]
fn tridiagonal_sweeps_fuse_with_the_forward_results_strip_local() {
    let p = lowered("stencil/tridiagonal.strata", "solve_tridiag");
    assert_eq!(p.kernels.len(), 1, "{p}");
    let k = &p.kernels[0];
    assert_eq!(k.chain.len(), 1, "the backward sweep runs after the forward one: {p}");
    let local: Vec<&str> = k.local.iter().map(|&b| p.buffers[b].name.as_str()).collect();
    assert_eq!(local, ["scan0.f0", "scan0.f1"], "{p}");
    // The backward sweep writes the out parameter directly (no copy kernel).
    assert_eq!(p.buffers[k.chain[0].stores[0].buffer].name, "x", "{p}");
}

const COLUMN_CENTERED_ROW_SUMS: &str = r#"
func @add(%acc: f64, %x: f64) -> f64 {
  %s = plus(%acc, %x) : f64
  return %s
}

func @f(%x: tensor<f64, I[0:8], J[0:6]>) -> tensor<f64, I[0:8]> {
  %m = map_reduce(@add, %x, init = 0.0, einsum = "kj->j") : tensor<f64, J[0:6]>
  %d = minus(%x, %m) : tensor<f64, I[0:8], J[0:6]>
  %r = map_reduce(@add, %d, init = 0.0, einsum = "ij->i") : tensor<f64, I[0:8]>
  return %r
}
"#;

#[test]
fn a_column_reduction_inside_a_row_fold_is_computed_once_per_column() {
    let module = strata_verify::parse(COLUMN_CENTERED_ROW_SUMS).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let h = module.function_by_name("f").unwrap();
    let p = lower(&module, &info.types, h).unwrap();
    // Without the pass, the column sum is recomputed for every row: one kernel, O(I·J·K).
    assert_eq!(p.kernels.len(), 2, "{p}");
    let temps: Vec<&strata_codegen::kernel::Buffer> = p.buffers.iter().filter(|b| b.temp).collect();
    assert_eq!(temps.len(), 1, "{p}");
    assert_eq!(temps[0].levels.len(), 1, "one value per column: {p}");
    assert_eq!(temps[0].levels[0].interval.len(), 6, "{p}");
    // And the result is the interpreter's.
    use strata_codegen::{compile, emit_c, exec};
    use strata_runtime::{Column, Data, Tensor};
    let (so, _) = compile::build(&emit_c::emit(&p)).unwrap();
    let lib = compile::Loaded::open(&so).unwrap();
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let f = &module.functions[h];
    let ty = interp.value_type(f.exprs[f.params[0]].ty);
    let x =
        Tensor { ty, data: Data::Scalars(Column::F64((0..48).map(|v| (v * v % 17) as f64).collect())), present: None };
    let want = interp.run(h, vec![x.clone()]).unwrap().values;
    let got = exec::run(&p, &lib, &[x], &["x".to_string()], Some(&interp.value_type(f.result().unwrap()))).unwrap();
    assert_eq!(got[0].1.data, want[0].1.data);
}
