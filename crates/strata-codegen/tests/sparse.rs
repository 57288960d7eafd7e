//! Sparse and ragged values natively: every entry of `tests/programs/sparse_native.strata` runs
//! on random sparsity patterns (empty, 10 %, 50 %, full; jagged rows of random lengths) in
//! the native backend and in the interpreter, which must agree on the values (bit for bit
//! where `emit_c::bit_exact` says so) and on which elements a sparse result stores. The
//! entries meant to iterate stored coordinates must do so (a kernel with set loops), and what
//! the backend refuses is refused by name. COO arguments and dense levels below compressed ones
//! are read through compressed storage of the same entries (`sparse::storage_formats`).

mod common;

use std::path::Path;

use strata_codegen::{compile, emit_c, exec, lower};
use strata_runtime::random::XorShift;
use strata_runtime::{Column, Data, Sv, Tensor, ValueType};

/// A random value of type `ty`: sparse levels store each element with probability `density`,
/// a ragged row stores a random-length prefix, dense values are zero one time in four (so
/// converting to sparse drops some).
fn random(ty: &ValueType, rng: &mut XorShift, density: f64) -> Tensor {
    let mut t = Tensor::zeros(ty);
    if let Data::Scalars(c) = &mut t.data {
        let s = c.scalar();
        *c = Column::from_fn(s, c.len(), |_| {
            if rng.below(4) == 0 {
                Sv::zero(s)
            } else {
                Sv::from_f64(s, rng.unit() * 4.0 - 2.0)
            }
        });
    }
    common::sparsify(&mut t, rng, density);
    t
}

fn close(a: &Data, b: &Data, exact: bool) -> bool {
    match (a, b) {
        (Data::Scalars(x), Data::Scalars(y)) => {
            let (x, y): (Vec<f64>, Vec<f64>) =
                ((0..x.len()).map(|i| x.get(i).as_f64()).collect(), (0..y.len()).map(|i| y.get(i).as_f64()).collect());
            let scale = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            x.len() == y.len()
                && x.iter()
                    .zip(&y)
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (!exact && (p - q).abs() <= 1e-6 * scale))
        }
        _ => a == b,
    }
}

/// Entries whose kernels must visit stored coordinates rather than whole intervals.
const SET_ITERATED: &[&str] = &[
    "spmv_csr",
    "spmm",
    "dcsr_row_sums",
    "sparse_dot",
    "dot3",
    "hadamard",
    "union_add",
    "to_dense",
    "fill",
    "csr_add",
    "union_sum",
    "row_nonzeros",
    "ragged_lengths",
    "sampled",
    "csr_to_dcsr",
    "ragged_sums",
    "ragged_scale",
    "spmv_coo",
    "block_row_sums",
];

#[test]
fn sparse_programs_native_equal_the_interpreter() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs/sparse_native.strata");
    let text = std::fs::read_to_string(path).unwrap();
    let module = strata_verify::parse(&text).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let cache = common::private_cache("sparse");
    let mut checked = Vec::new();
    for (h, f) in module.functions.iter() {
        if f.params.iter().all(|&p| ValueType::from_ir(&info.types, f.exprs[p].ty).levels.is_empty()) {
            continue; // payload functions
        }
        let program = lower(&module, &info.types, h).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        let sets = program.kernels.iter().any(|k| !k.sets.is_empty());
        assert_eq!(sets, SET_ITERATED.contains(&f.name.as_str()), "@{}: set iteration\n{program}", f.name);
        // Intersections of compressed levels in folds are merged, and so are unions.
        let merged = program.kernels.iter().any(|k| k.sets.iter().any(|c| c.merge));
        let merges = ["sparse_dot", "dot3", "union_add", "csr_add", "union_sum"];
        assert_eq!(merged, merges.contains(&f.name.as_str()), "@{}: merge\n{program}", f.name);
        let union = program.kernels.iter().any(|k| k.sets.iter().any(|c| c.is_union()));
        assert_eq!(union, merges[2..].contains(&f.name.as_str()), "@{}: union\n{program}", f.name);
        let (so, _) = compile::build(&emit_c::emit(&program)).expect("compiles");
        let lib = compile::Loaded::open(&so).expect("loads");
        let exact = emit_c::bit_exact(&program);
        let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
        let rty = f.result().map(|r| ValueType::from_ir(&info.types, r));
        let sparse_result = rty.as_ref().is_some_and(|t| t.levels.iter().any(|l| !l.format.is_dense_like()));
        let mut rng = XorShift::new(7);
        for density in [0.0, 0.1, 0.5, 1.0] {
            for _ in 0..3 {
                let args: Vec<Tensor> = f
                    .params
                    .iter()
                    .map(|&p| random(&ValueType::from_ir(&info.types, f.exprs[p].ty), &mut rng, density))
                    .collect();
                let want = interp.run(h, args.clone()).unwrap_or_else(|e| panic!("@{}: {e:?}", f.name));
                for threads in [1, 2] {
                    let got = exec::run_threads(&program, &lib, &args, &names, rty.as_ref(), threads)
                        .unwrap_or_else(|e| panic!("@{}: {e}", f.name));
                    let (w, g) = (&want.values[0].1, &got[0].1);
                    assert!(close(&w.data, &g.data, exact), "@{} (density {density}): values differ", f.name);
                    if sparse_result {
                        let stored = |t: &Tensor| {
                            (0..t.len())
                                .map(|i| (t.is_present(i), strata_runtime::storage::is_stored(t, i)))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(stored(w), stored(g), "@{} (density {density}): stored elements differ", f.name);
                    }
                }
            }
        }
        checked.push(f.name.clone());
    }
    let _ = std::fs::remove_dir_all(&cache);
    assert_eq!(checked.len(), 25, "entries checked: {checked:?}");
}

fn lower_text(text: &str) -> Result<strata_codegen::KernelProgram, strata_codegen::LowerError> {
    let module = strata_verify::parse(text).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let entry = module.functions.iter().last().unwrap().0;
    lower(&module, &info.types, entry)
}

/// The last function of a program, lowered and compiled, with its first parameter's type and
/// its result type.
struct Compiled {
    program: strata_codegen::KernelProgram,
    lib: compile::Loaded,
    param: ValueType,
    result: Option<ValueType>,
}

fn compiled(text: &str) -> Compiled {
    let program = lower_text(text).unwrap();
    let (so, _) = compile::build(&emit_c::emit(&program)).expect("compiles");
    let lib = compile::Loaded::open(&so).expect("loads");
    let module = strata_verify::parse(text).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let (_, f) = module.functions.iter().last().unwrap();
    let param = ValueType::from_ir(&info.types, f.exprs[f.params[0]].ty);
    let result = f.result().map(|r| ValueType::from_ir(&info.types, r));
    Compiled { program, lib, param, result }
}

#[test]
fn sparse_tensors_of_tuples_are_refused_by_name() {
    let text = "func @f(%a: tensor<(f64, f64), I[0:3] compressed>) -> tensor<f64, I[0:3]> {\n  \
                %x = tuple_get(%a, index = 0) : tensor<f64, I[0:3] compressed>\n  \
                %d = convert(%x, mode = copy) : tensor<f64, I[0:3]>\n  return %d\n}\n";
    let e = lower_text(text).unwrap_err().to_string();
    assert!(e.contains("sparse or ragged tensors of tuples or tensors (`%a`)"), "{e}");
}

#[test]
fn a_ragged_row_with_a_gap_is_an_error_not_a_wrong_answer() {
    let text = "func @add(%acc: f32, %x: f32) -> f32 {\n  %s = plus(%acc, %x) : f32\n  return %s\n}\n\
                func @f(%x: tensor<f32, R[0:2], C[0:3] ragged>) -> tensor<f32, R[0:2]> {\n  \
                %s = map_reduce(@add, %x, init = 0.0, einsum = \"ij->i\") : tensor<f32, R[0:2]>\n  return %s\n}\n";
    let Compiled { program, lib, param, result } = compiled(text);
    let mut x = Tensor::zeros(&param);
    // Row 0 stores columns 0 and 2 but not 1: not a run.
    x.present = Some(vec![true, false, true, true, true, false]);
    let e = exec::run(&program, &lib, &[x], &["x".into()], result.as_ref()).unwrap_err();
    assert!(e.to_string().contains("`%x` has absent elements inside a ragged row"), "{e}");
}

#[test]
fn an_intersection_visits_only_the_coordinates_every_operand_stores() {
    // The product of two CSR matrices runs over `a`'s stored entries and locates `b`'s; where
    // either is unstored the entry is the fill value times the other, zero by the ring axiom
    // (docs/runtime.md) whatever the other holds — NaN or infinity included, on either side.
    let text = "!M = tensor<f64, R[0:2], C[0:3] compressed>\n\
                func @f(%a: !M, %b: !M) -> !M {\n  %c = multiplies(%a, %b) : !M\n  return %c\n}\n";
    let Compiled { program, lib, param, result } = compiled(text);
    let matrix = |v: [f64; 6]| {
        let mut t = Tensor::zeros(&param);
        t.data = Data::Scalars(Column::F64(v.to_vec()));
        t
    };
    let a = matrix([1.0, 0.0, 3.0, 0.0, f64::NAN, 0.0]);
    let b = matrix([0.0, f64::INFINITY, 4.0, 0.0, 0.0, 2.0]);
    let got = exec::run(&program, &lib, &[a, b], &["a".into(), "b".into()], result.as_ref()).unwrap();
    let c = &got[0].1;
    assert_eq!(c.data, Data::Scalars(Column::F64(vec![0.0, 0.0, 12.0, 0.0, 0.0, 0.0])));
    let stored: Vec<bool> = (0..c.len()).map(|i| strata_runtime::storage::is_stored(c, i)).collect();
    assert_eq!(stored, [false, false, true, false, false, false]);
}

#[test]
fn a_repeated_run_writes_its_sparse_result_into_the_last_results_memory() {
    // A run allocates a sparse result's coordinates and values itself (their count is known
    // only once the rows are bounded). Run again on the same buffers, as a time loop or
    // `strata run --repeat` does, it must find the previous result's memory in the pool rather
    // than map fresh pages (a page fault each: 3-15x the run on 10 M entries). Sizes no other
    // test uses, so that no other test takes these buffers from the shared pool.
    let (rows, cols) = (515usize, 509usize);
    let text = format!(
        "!M = tensor<f64, R[0:{rows}], C[0:{cols}] compressed>\n\
         func @f(%a: !M, %b: !M) -> !M {{\n  %c = plus(%a, %b) : !M\n  return %c\n}}\n"
    );
    let Compiled { program, lib, param, result } = compiled(&text);
    let mut rng = XorShift::new(11);
    let mut matrix = || {
        let mut t = Tensor::zeros(&param);
        let v = (0..rows * cols).map(|_| if rng.below(2) == 0 { 0.0 } else { rng.unit() + 0.5 }).collect();
        t.data = Data::Scalars(Column::F64(v));
        t
    };
    let (a, b) = (matrix(), matrix());
    let want: Vec<f64> = match (&a.data, &b.data) {
        (Data::Scalars(Column::F64(x)), Data::Scalars(Column::F64(y))) => x.iter().zip(y).map(|(p, q)| p + q).collect(),
        _ => unreachable!(),
    };
    let args = [a, b];
    let mut buffers = exec::Buffers::new(&program, &args).unwrap();
    buffers.call(&lib, 1).unwrap();
    let first: Vec<*mut u8> = buffers.memory().0.iter().map(|&(p, _)| p).collect();
    for _ in 0..3 {
        buffers.call(&lib, 1).unwrap();
        let again: Vec<*mut u8> = buffers.memory().0.iter().map(|&(p, _)| p).collect();
        assert_eq!(again, first, "every buffer of the repeated run in the first run's memory");
    }
    // The phases of a split run give nothing back (a later phase may read what an earlier
    // one allocated); a whole run after them allocates afresh and is as right.
    let all = vec![true; program.kernels.len()];
    buffers.call_some(&lib, 1, &all).unwrap();
    buffers.call_some(&lib, 1, &all).unwrap();
    buffers.call(&lib, 1).unwrap();
    let values = buffers.into_values(&program, &args, &["a".into(), "b".into()], result.as_ref());
    let c = match &values[0].1 {
        strata_runtime::Value::Tensor(t) => t.clone(),
        strata_runtime::Value::Stored(s) => s.to_tensor().unwrap(),
    };
    assert_eq!(c.data, Data::Scalars(Column::F64(want.clone())));
    let stored = (0..c.len()).filter(|&i| strata_runtime::storage::is_stored(&c, i)).count();
    assert_eq!(stored, want.iter().filter(|&&v| v != 0.0).count());
}
