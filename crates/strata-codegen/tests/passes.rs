//! What the lowering passes decide on the seed's stencils (their results are checked against
//! the interpreter in examples.rs; here, the shape of the kernels).

use std::path::Path;

use strata_codegen::{lower, KernelProgram};

fn lowered(file: &str, entry: &str) -> KernelProgram {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(file);
    lowered_source(&std::fs::read_to_string(path).unwrap(), entry)
}

fn lowered_source(source: &str, entry: &str) -> KernelProgram {
    let module = strata_verify::parse(source).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let (h, _) = module.functions.iter().find(|(_, f)| f.name == entry).unwrap();
    lower(&module, &info.types, h).unwrap()
}

#[test]
fn nabla_recomputes_each_cheap_flux_per_vertex_neighbor() {
    let p = lowered("stencil/nabla.strata", "nabla");
    // The flux (5 loads) costs less recomputed than a temporary: no edge loop, no temporary.
    assert!(p.buffers.iter().all(|b| !b.temp), "{p}");
    assert_eq!(p.kernels.len(), 1, "{p}");
}

#[test]
fn a_mesh_laplacian_read_through_a_table_is_extracted_once() {
    let p = lowered("stencil/mesh_laplacian.strata", "laplacian_of_laplacian");
    let temps: Vec<&strata_codegen::kernel::Buffer> = p.buffers.iter().filter(|b| b.temp).collect();
    // The inner laplacian (a 7-step neighbor loop) is computed once per vertex; reduced, it is
    // present everywhere, so it needs no presence column.
    assert_eq!(temps.len(), 1, "{p}");
    assert_eq!(temps[0].levels[0].name.as_str(), "Vertex", "{p}");
    assert_eq!(p.kernels.len(), 2, "{p}");
}

/// Edge fluxes too expensive to recompute (13 loads), over a table with skips: both are
/// extracted, absent where an edge's table entry is skipped, and share one presence column.
const COSTLY_FLUXES: &str = r#"
!V = tensor<f64, Vertex[0:4]>
!E = tensor<f64, Edge[0:5]>
!E2V = tensor<i32, Edge[0:5], NB_Vertex[0:2]>
!V2E = tensor<i32, Vertex[0:4], NB_Edge[0:3]>

func @add(%acc: f64, %x: f64) -> f64 {
  return plus(%acc, %x)
}

func @flux(%a: !V, %b: !V, %c: !V, %s: !E, %e2v: !E2V) -> !E {
  %ab = multiplies(plus(unstructured_shift(%a, %e2v, neighbor = 0), unstructured_shift(%a, %e2v, neighbor = 1)), plus(unstructured_shift(%b, %e2v, neighbor = 0), unstructured_shift(%b, %e2v, neighbor = 1)))
  return multiplies(%s, multiplies(%ab, plus(unstructured_shift(%c, %e2v, neighbor = 0), unstructured_shift(%c, %e2v, neighbor = 1))))
}

program @costly(%out: out tensor<(f64, f64), Vertex[0:4]>, %a: !V, %b: !V, %c: !V, %sx: !E, %sy: !E, %e2v: !E2V, %v2e: !V2E) {
  %fx = call(@flux, %a, %b, %c, %sx, %e2v)
  %fy = call(@flux, %a, %b, %c, %sy, %e2v)
  %out <- make_tuple(reduce(@add, shift_init(%fx, %v2e), init = 0.0), reduce(@add, shift_init(%fy, %v2e), init = 0.0))
}
"#;

#[test]
fn costly_fluxes_are_extracted_with_one_shared_presence_column_and_match_the_interpreter() {
    use strata_codegen::{compile, emit_c, exec};
    use strata_runtime::{Column, Data, Tensor};
    let module = strata_verify::parse(COSTLY_FLUXES).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let h = module.function_by_name("costly").unwrap();
    let p = lower(&module, &info.types, h).unwrap();
    let temps: Vec<&str> = p.buffers.iter().filter(|b| b.temp).map(|b| b.name.as_str()).collect();
    assert_eq!(temps, ["tmp0.0", "tmp0.0.present", "tmp1.0"], "{p}");
    assert_eq!(p.kernels.len(), 2, "both fluxes in one edge loop, then the vertex loop: {p}");
    // Edge 2 has a skipped end, vertex 3 no edges at all.
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let f = &module.functions[h];
    let data: [Data; 8] = [
        Data::Tuple(vec![Data::Scalars(Column::F64(vec![0.0; 4])), Data::Scalars(Column::F64(vec![0.0; 4]))]),
        Data::Scalars(Column::F64(vec![1.0, 2.0, 3.0, 4.0])),
        Data::Scalars(Column::F64(vec![0.5, -1.0, 2.0, 0.25])),
        Data::Scalars(Column::F64(vec![3.0, 1.0, -2.0, 5.0])),
        Data::Scalars(Column::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0])),
        Data::Scalars(Column::F64(vec![-1.0, 0.5, 7.0, 2.0, 1.5])),
        Data::Scalars(Column::I32(vec![0, 1, 1, 2, 2, -1, 0, 2, 1, 3])),
        Data::Scalars(Column::I32(vec![0, 3, -1, 0, 1, 2, 1, 2, 4, -1, -1, -1])),
    ];
    let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
    let args: Vec<Tensor> = f
        .params
        .iter()
        .zip(data)
        .map(|(&x, data)| Tensor { ty: interp.value_type(f.exprs[x].ty), data, present: None })
        .collect();
    let want = interp.run(h, args.clone()).unwrap().values;
    let (so, _) = compile::build(&emit_c::emit(&p)).unwrap();
    let lib = compile::Loaded::open(&so).unwrap();
    let got = exec::run(&p, &lib, &args, &names, None).unwrap();
    assert_eq!(got[0].1.data, want[0].1.data);
    assert_eq!(got[0].1.present, want[0].1.present);
}

#[test]
fn tridiagonal_sweeps_fuse_with_the_forward_results_strip_local() {
    let p = lowered("stencil/tridiagonal.strata", "solve_tridiag");
    assert_eq!(p.kernels.len(), 1, "{p}");
    let k = &p.kernels[0];
    assert_eq!(k.chain().len(), 1, "the backward sweep runs after the forward one: {p}");
    let local: Vec<&str> = k.local().iter().map(|&b| p.buffers[b].name.as_str()).collect();
    assert_eq!(local, ["scan0.f0", "scan0.f1"], "{p}");
    // The backward sweep writes the out parameter directly (no copy kernel).
    assert_eq!(p.buffers[k.chain()[0].stores[0].buffer].name, "x", "{p}");
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

/// `Σ (x - mean(y))²` for the row's own `x`, or for another tensor `y`.
const SQUARED_DEVIATIONS: &str = r#"
func @add(%acc: f32, %x: f32) -> f32 {
  %s = plus(%acc, %x) : f32
  return %s
}
func @sqdev(%acc: f32, %x: f32, %m: f32) -> f32 {
  %d = minus(%x, %m) : f32
  %q = multiplies(%d, %d) : f32
  %s = plus(%acc, %q) : f32
  return %s
}
func @f(%x: tensor<f32, R[0:8], C[0:256]>, %y: tensor<f32, R[0:8], C[0:256]>) -> tensor<f32, R[0:8]> {
  %s = map_reduce(@add, %y, init = 0.0, einsum = "ij->i") : tensor<f32, R[0:8]>
  %m = divides(%s, 256.0) : tensor<f32, R[0:8]>
  %ss = map_reduce(@sqdev, %x, %m, init = 0.0, einsum = "ij,i->i") : tensor<f32, R[0:8]>
  return %ss
}
"#;

#[test]
fn a_variance_reads_each_row_once_and_only_a_variance_does() {
    let c_of = |src: &str| strata_codegen::emit_c::emit(&lowered_source(src, "f"));
    const ONE_PASS: &str = "Σ (x - c)² in one pass";
    // Centred on the mean of the same rows: one pass computes the mean and the deviations.
    let own = SQUARED_DEVIATIONS.replace("map_reduce(@add, %y,", "map_reduce(@add, %x,");
    assert!(c_of(&own).contains(ONE_PASS));
    // Centred on another tensor's mean: that sum is its own pass, the deviations another.
    assert!(!c_of(SQUARED_DEVIATIONS).contains(ONE_PASS));
    // Too short to reassociate (fewer than 64 steps): the interpreter's order.
    let short = own.replace("C[0:256]", "C[0:40]").replace("256.0", "40.0");
    assert!(!c_of(&short).contains(ONE_PASS));
}

#[test]
fn a_windowed_stencil_asks_for_the_newest_input_plane_ahead_once() {
    let p = lowered("distributed/laplacian_of_laplacian.strata", "laplacian_of_laplacian");
    let c = strata_codegen::emit_c::emit(&p);
    let requests: Vec<&str> =
        c.lines().filter(|l| l.contains("__builtin_prefetch((const void *)((uintptr_t)&inp")).collect();
    // The inner laplacian's window is computed one plane ahead and reads the input one plane
    // further: plane I + 1 of the input is the only one no earlier step touched.
    assert_eq!(requests.len(), 1, "{c}");
    assert!(requests[0].contains("(d_I + 1)"), "{}", requests[0]);
}

/// The sum of every element of an `I × J` float64 tensor.
fn whole_sum(i: usize, j: usize) -> String {
    format!(
        r#"
func @add(%acc: f64, %x: f64) -> f64 {{
  %s = plus(%acc, %x) : f64
  return %s
}}
func @f(%x: tensor<f64, I[0:{i}], J[0:{j}]>) -> tensor<f64> {{
  %s = map_reduce(@add, %x, init = 0.0, einsum = "ij->") : tensor<f64>
  return %s
}}
"#
    )
}

#[test]
fn a_whole_array_sum_keeps_vector_partial_sums_in_rows_long_enough() {
    use strata_codegen::{compile, emit_c, exec};
    use strata_runtime::{Column, Data, Tensor};
    let simd = |i: usize, j: usize| emit_c::emit(&lowered_source(&whole_sum(i, j), "f")).contains("omp simd reduction");
    // 100,000 steps in rows of 50 (scikit-learn's finiteness check of a 2,000×50 array).
    assert!(simd(2000, 50));
    assert!(simd(100, 64));
    // Rows of 8: partial sums started and ended per row cost more than they save.
    assert!(!simd(12_500, 8));
    // 50 steps in all: too short to reassociate, the interpreter's order.
    assert!(!simd(1, 50));
    // The value against its closed form: the integers 0 … n-1 sum exactly in any order.
    let (i, j) = (2000, 50);
    let module = strata_verify::parse(&whole_sum(i, j)).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let h = module.function_by_name("f").unwrap();
    let p = lower(&module, &info.types, h).unwrap();
    let (so, _) = compile::build(&emit_c::emit(&p)).unwrap();
    let lib = compile::Loaded::open(&so).unwrap();
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let f = &module.functions[h];
    let n = i * j;
    let x = Tensor {
        ty: interp.value_type(f.exprs[f.params[0]].ty),
        data: Data::Scalars(Column::F64((0..n).map(|v| v as f64).collect())),
        present: None,
    };
    let got = exec::run(&p, &lib, &[x], &["x".to_string()], Some(&interp.value_type(f.result().unwrap()))).unwrap();
    assert_eq!(got[0].1.data, Data::Scalars(Column::F64(vec![(n * (n - 1) / 2) as f64])));
}

#[test]
fn selects_whose_branches_cannot_fail_are_computed_before_the_choice() {
    let c_of = |src: &str| strata_codegen::emit_c::emit(&lowered_source(src, "f"));
    const NO_IF_CONVERSION: &str = "STRATA_NO_IFCVT int";
    // Loads at the point (and shifted, as a flux limiter's): both branches are computed first,
    // so no read is under a condition and GCC keeps the loop's if-conversion (a vector blend).
    let plain = c_of(
        "func @f(%a: tensor<f64, I[0:64]>, %y: tensor<f64, I[-1:64]>, %z: tensor<f64, I[0:64]>) -> tensor<f64, I[0:64]> {
           return select(greater(%a, 0.0), minus(cartesian_shift(%y, dim = I, offset = -1), %z), 0.0)
         }",
    );
    assert!(plain.contains("sel_t_") && !plain.contains(NO_IF_CONVERSION), "{plain}");
    // An integer division by a tensor may fail where the condition rules it out: it stays
    // under the condition, and the kernel is compiled without if-conversion (GCC 12.2's
    // masked loads of an if-converted select take the first vector's mask).
    let division = c_of(
        "func @f(%a: tensor<i64, I[0:64]>, %b: tensor<i64, I[0:64]>) -> tensor<i64, I[0:64]> {
           return select(greater(%b, 0), divides(%a, %b), %a)
         }",
    );
    assert!(!division.contains("sel_t_") && division.contains(NO_IF_CONVERSION), "{division}");
    // So may an integer power with a negative exponent.
    let power = c_of(
        "func @f(%a: tensor<i64, I[0:64]>, %b: tensor<i64, I[0:64]>) -> tensor<i64, I[0:64]> {
           return select(greater_equal(%b, 0), power(%a, %b), %a)
         }",
    );
    assert!(!power.contains("sel_t_") && power.contains(NO_IF_CONVERSION), "{power}");
}

/// A covariance as array-api-extra writes it (`cov(x.T)`): the centered matrix feeds a product.
fn covariance(rows: usize, cols: usize) -> String {
    format!(
        "func @plus(%a: f64, %b: f64) -> f64 {{
  %s = plus(%a, %b) : f64
  return %s
}}

func @cov(%x: tensor<{rows}x{cols}xf64>) -> tensor<{cols}x{cols}xf64> {{
  %t = transpose(%x, perm = [1, 0]) : tensor<{cols}x{rows}xf64>
  %s = map_reduce(@plus, %t, init = 0.0, einsum = \"ab->a\") : tensor<{cols}xf64>
  %m = expand_shape(%s, groups = [[0, 1]], shape = [{cols}, 1], mode = view) : tensor<{cols}x1xf64>
  %n = constant(value = {rows}.0) : f64
  %mean = divides(%m, %n) : tensor<{cols}x1xf64>
  %b = broadcast_in_dim(%mean, shape = [{cols}, {rows}], dims = [0, 1]) : tensor<{cols}x{rows}xf64>
  %c = minus(%t, %b) : tensor<{cols}x{rows}xf64>
  %ct = transpose(%c, perm = [1, 0]) : tensor<{rows}x{cols}xf64>
  %p = dot_general(%c, %ct, ring = plus_times, lhs_contract = [1], rhs_contract = [0], lhs_batch = [], rhs_batch = []) : tensor<{cols}x{cols}xf64>
  return %p
}}
"
    )
}

#[test]
fn a_computed_operand_of_a_large_product_is_kept_so_the_product_runs_as_a_gemm() {
    use strata_codegen::kernel::KernelKind;
    // 40 MB of centered values against a 1 MiB cache: the reuse rule alone would recompute
    // them in the product's fold (three operations, read 100 times per point).
    let source = covariance(100_000, 50);
    let module = strata_verify::parse(&source).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let options =
        strata_codegen::LowerOptions { cache_bytes: 1 << 20, ..strata_codegen::LowerOptions::for_this_machine() };
    let p =
        strata_codegen::lower_with(&module, &info.types, module.function_by_name("cov").unwrap(), &options).unwrap();
    // The centered matrix is kept, stored in its source's order (rows outermost, as `x` is),
    // and the product reads loads only: the runtime GEMM computes it.
    let centered: Vec<&strata_codegen::kernel::Buffer> =
        p.buffers.iter().filter(|b| b.temp && b.len() == 100_000 * 50).collect();
    assert_eq!(centered.len(), 1, "{p}");
    assert_eq!(centered[0].levels[0].interval.len(), 100_000, "{p}");
    assert!(p.kernels.iter().any(|k| k.detail.contains("runs as a GEMM")), "{p}");
    assert!(matches!(p.kernels.last().unwrap().kind, KernelKind::Gemm(_)), "{p}");
    // Too small a product for the GEMM: nothing is kept for it, the product stays a fold.
    let small = lowered_source(&covariance(6, 5), "cov");
    assert!(!small.kernels.iter().any(|k| k.detail.contains("GEMM")), "{small}");
    assert!(!matches!(small.kernels.last().unwrap().kind, KernelKind::Gemm(_)), "{small}");
}

#[test]
fn a_computed_matrix_times_a_vector_is_not_kept() {
    // A matrix-vector product never runs as a GEMM: its computed matrix stays inlined.
    let p = lowered_source(
        "func @mv(%a: tensor<2000x300xf64>, %x: tensor<300xf64>) -> tensor<2000xf64> {
  %two = constant(value = 2.0) : f64
  %b = multiplies(%a, %two) : tensor<2000x300xf64>
  %y = dot_general(%b, %x, ring = plus_times, lhs_contract = [1], rhs_contract = [0], lhs_batch = [], rhs_batch = []) : tensor<2000xf64>
  return %y
}
",
        "mv",
    );
    assert!(p.buffers.iter().all(|b| !b.temp), "{p}");
}

#[test]
fn a_kept_product_that_is_also_a_result_is_written_into_the_result() {
    use strata_codegen::{compile, emit_c, exec};
    use strata_runtime::{Column, Data, Tensor};
    // A power-iteration step as the array API traces it: `y = A @ x` returned, and its norm.
    let (n, m) = (37, 29);
    let source = format!(
        "func @plus(%p0: f64, %p1: f64) -> f64 {{
  %v2 = plus(%p0, %p1) : f64
  return %v2
}}

program @main(%norm: out tensor<f64>, %out: out tensor<{n}xf64>, %a: tensor<{n}x{m}xf64>, %x: tensor<{m}xf64>) {{
  %y = dot_general(%a, %x, ring = plus_times, lhs_contract = [1], rhs_contract = [0], lhs_batch = [], rhs_batch = []) : tensor<{n}xf64>
  %yy = multiplies(%y, %y) : tensor<{n}xf64>
  %s = map_reduce(@plus, %yy, init = 0.0, einsum = \"a->\") : tensor<f64>
  %norm <- sqrt(%s)
  %out <- %y
}}
"
    );
    let module = strata_verify::parse(&source).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let h = module.function_by_name("main").unwrap();
    let p = lower(&module, &info.types, h).unwrap();
    // The product is kept (its norm reads it three times per point), straight into the result
    // `%y`: no copy kernel, and the temporary is neither read nor zeroed.
    assert_eq!(p.kernels.len(), 2, "{p}");
    let result = p.buffers.iter().position(|b| b.name == "out").unwrap();
    assert!(p.kernels[0].writes(result), "{p}");
    for (b, buf) in p.buffers.iter().enumerate().filter(|(_, b)| b.temp) {
        assert!(p.kernels.iter().all(|k| !k.reads(b) && !k.writes(b)), "{p}");
        assert!(buf.overwritten, "{p}");
    }
    // Values against the product and the norm computed here.
    let a: Vec<f64> = (0..n * m).map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0).collect();
    let x: Vec<f64> = (0..m).map(|j| (j as f64 - 9.5) / 4.0).collect();
    let want_y: Vec<f64> = (0..n).map(|i| (0..m).map(|j| a[i * m + j] * x[j]).sum()).collect();
    let want_norm = want_y.iter().map(|v| v * v).sum::<f64>().sqrt();
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let f = &module.functions[h];
    let args: Vec<Tensor> = f
        .params
        .iter()
        .zip([Column::F64(vec![0.0]), Column::F64(vec![0.0; n]), Column::F64(a), Column::F64(x)])
        .map(|(&q, c)| Tensor { ty: interp.value_type(f.exprs[q].ty), data: Data::Scalars(c), present: None })
        .collect();
    let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
    let (so, _) = compile::build(&emit_c::emit(&p)).unwrap();
    let lib = compile::Loaded::open(&so).unwrap();
    let got = exec::run(&p, &lib, &args, &names, None).unwrap();
    let Data::Scalars(Column::F64(norm)) = &got[0].1.data else { panic!("{:?}", got[0]) };
    let Data::Scalars(Column::F64(y)) = &got[1].1.data else { panic!("{:?}", got[1]) };
    assert!((norm[0] - want_norm).abs() <= 1e-12 * want_norm, "{norm:?} against {want_norm}");
    for (g, w) in y.iter().zip(&want_y) {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{y:?} against {want_y:?}");
    }
}

/// `Σᵢ (Σₖ a[i, k]·x[k])`: the sum of a matrix-vector product (`sum(a @ x)`), over `rows × cols`.
fn sum_of_matvec(rows: usize, cols: usize) -> String {
    format!(
        r#"
func @add(%acc: f64, %x: f64) -> f64 {{
  %s = plus(%acc, %x) : f64
  return %s
}}
func @f(%a: tensor<{rows}x{cols}xf64>, %x: tensor<{cols}xf64>) -> tensor<f64> {{
  %y = dot_general(%a, %x, ring = plus_times, lhs_contract = [1], rhs_contract = [0], lhs_batch = [], rhs_batch = []) : tensor<{rows}xf64>
  %s = map_reduce(@add, %y, init = 0.0, einsum = "a->") : tensor<f64>
  return %s
}}
"#
    )
}

#[test]
fn a_long_fold_inside_a_fold_runs_as_a_kernel_of_its_own() {
    use strata_codegen::{compile, emit_c, exec};
    use strata_runtime::{Column, Data, Tensor};
    let (rows, cols) = (300, 200);
    let p = lowered_source(&sum_of_matvec(rows, cols), "f");
    // The product first, over its rows (in parallel, jammed), then the sum over them.
    assert_eq!(p.kernels.len(), 2, "{p}");
    let temps: Vec<&strata_codegen::kernel::Buffer> = p.buffers.iter().filter(|b| b.temp).collect();
    assert_eq!(temps.len(), 1, "{p}");
    assert_eq!(temps[0].len(), rows, "one value per row: {p}");
    let jammed = p.kernels[0].schedule.as_ref().map(|s| s.layout);
    assert_eq!(jammed, Some(strata_codegen::schedule::Layout::JammedRows), "{p}");
    // Folds of fewer than 64 steps stay nested (the temporary would cost more than it saves).
    assert_eq!(lowered_source(&sum_of_matvec(rows, 40), "f").kernels.len(), 1);
    // The value against its closed form: a[i, k] = i + k, x[k] = 1, all sums exact.
    let module = strata_verify::parse(&sum_of_matvec(rows, cols)).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let h = module.function_by_name("f").unwrap();
    let (so, _) = compile::build(&emit_c::emit(&p)).unwrap();
    let lib = compile::Loaded::open(&so).unwrap();
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let f = &module.functions[h];
    let arg = |i: usize, v: Vec<f64>| Tensor {
        ty: interp.value_type(f.exprs[f.params[i]].ty),
        data: Data::Scalars(Column::F64(v)),
        present: None,
    };
    let a = arg(0, (0..rows * cols).map(|n| (n / cols + n % cols) as f64).collect());
    let x = arg(1, vec![1.0; cols]);
    let names = ["a".to_string(), "x".to_string()];
    let got = exec::run(&p, &lib, &[a, x], &names, Some(&interp.value_type(f.result().unwrap()))).unwrap();
    let want = (cols * rows * (rows - 1) / 2 + rows * cols * (cols - 1) / 2) as f64;
    assert_eq!(got[0].1.data, Data::Scalars(Column::F64(vec![want])));
}

/// A CSR matrix times a dense one, with `payload` folding and the dense operand `dense` read as
/// `spec` says.
fn sparse_times_dense(payload: &str, dense: &str, spec: &str) -> String {
    format!(
        r#"
func @mac(%acc: f64, %a: f64, %x: f64) -> f64 {{
  %p = multiplies(%a, %x) : f64
  %s = {payload}(%acc, %p) : f64
  return %s
}}
func @spmm(%a: tensor<f64, Row[0:50], Col[0:40] compressed>, %x: tensor<f64, {dense}>) -> tensor<f64, Row[0:50], K[0:6]> {{
  %y = map_reduce(@mac, %a, %x, init = 0.0, einsum = "{spec}") : tensor<f64, Row[0:50], K[0:6]>
  return %y
}}
"#
    )
}

#[test]
fn the_columns_of_a_sparse_times_dense_product_share_their_rows_walk() {
    use strata_codegen::schedule::Layout;
    let layout = |p: &KernelProgram| p.kernels[0].schedule.as_ref().map(|s| s.layout);
    // The row's stored entries are walked once per group of four columns.
    let p = lowered_source(&sparse_times_dense("plus", "Col[0:40], K[0:6]", "ij,jk->ik"), "spmm");
    assert_eq!(layout(&p), Some(Layout::JammedRows), "{p}");
    let c = strata_codegen::emit_c::emit(&p);
    assert!(c.contains("+= 4) {  /* K in groups of 4 */"), "{c}");
    assert!(c.contains("(d_K + 3)") && !c.contains("(d_K + x"), "a group's offsets are literals: {c}");
    // A dense operand stored with the columns first: its four reads would not be adjacent.
    let p = lowered_source(&sparse_times_dense("plus", "K[0:6], Col[0:40]", "ij,kj->ik"), "spmm");
    assert_ne!(layout(&p), Some(Layout::JammedRows), "{p}");
    // `max(acc, 0·x)` changes the accumulator: the fold visits every column, no stored set.
    let p = lowered_source(&sparse_times_dense("maximum", "Col[0:40], K[0:6]", "ij,jk->ik"), "spmm");
    assert!(p.kernels[0].sets.is_empty(), "{p}");
    assert_ne!(layout(&p), Some(Layout::JammedRows), "{p}");
}

#[test]
fn a_fold_that_is_a_result_and_read_by_another_value_is_computed_once_into_the_result() {
    // A conjugate-gradient step as the array API traces it: `q = A @ p` returned, and `p · q`.
    let source = "func @plus(%p0: f64, %p1: f64) -> f64 {
  %v2 = plus(%p0, %p1) : f64
  return %v2
}
program @main(%pq: out tensor<f64>, %q: out tensor<300xf64>, %p: tensor<300xf64>, %a: tensor<300x300xf64>) {
  %y = dot_general(%a, %p, ring = plus_times, lhs_contract = [1], rhs_contract = [0], lhs_batch = [], rhs_batch = []) : tensor<300xf64>
  %py = multiplies(%p, %y) : tensor<300xf64>
  %s = map_reduce(@plus, %py, init = 0.0, einsum = \"a->\") : tensor<f64>
  %pq <- %s
  %q <- %y
}
";
    let p = lowered_source(source, "main");
    // One product, written into `%q`, which the dot product reads: not a second product (as a
    // nested fold's temporary, or inlined into the dot product's fold).
    assert_eq!(p.kernels.len(), 2, "{p}");
    let q = p.buffers.iter().position(|b| b.name == "q").unwrap();
    assert!(p.kernels[0].writes(q) && p.kernels[1].reads(q), "{p}");
    let folds =
        |k: &strata_codegen::kernel::Kernel| k.stores.iter().map(|s| strata_codegen::sym::fold_height(&s.value)).max();
    assert_eq!(folds(&p.kernels[1]), Some(1), "the dot product reads the product, no nested fold: {p}");
}

#[test]
fn a_stencil_stored_k_outermost_rolls_its_windows_along_j() {
    // GT4Py's layout: K outermost, read at no offset. Along K a window is a whole J×I plane and
    // one fits the budget; with J outermost all three staged values (the laplacian, both
    // fluxes) roll in rows of K×I. The innermost level stays innermost.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs/hdiff_columns.strata");
    let p = lowered_source(&std::fs::read_to_string(path).unwrap(), "hdiff");
    assert_eq!(p.kernels.len(), 1, "{p}");
    let k = &p.kernels[0];
    let order: Vec<&str> = k.domain.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(order, ["J", "K", "I"], "{p}");
    assert_eq!(k.windows().len(), 3, "{p}");
    // A laplacian of laplacian stored the same way stages its one window along K either way,
    // and keeps its order.
    let source = "!In = tensor<f64, K[0:3], J[-2:98], I[-2:98]>\n\
        !Out = tensor<f64, K[0:3], J[0:96], I[0:96]>\n\
        func @lap(%x) {\n\
          %i = plus(cartesian_shift(%x, dim = I, offset = 1), cartesian_shift(%x, dim = I, offset = -1))\n\
          %j = plus(cartesian_shift(%x, dim = J, offset = 1), cartesian_shift(%x, dim = J, offset = -1))\n\
          return minus(plus(%i, %j), multiplies(4.0, %x))\n\
        }\n\
        program @laplap(%out: out !Out, %inp: !In) {\n\
          %out <- call(@lap, call(@lap, %inp))\n\
        }\n";
    let p = lowered_source(source, "laplap");
    let order: Vec<&str> = p.kernels[0].domain.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(order, ["K", "J", "I"], "{p}");
    assert_eq!(p.kernels[0].windows().len(), 1, "{p}");
}
