//! Every example entry (and every entry of tests/programs) the native backend compiles gives
//! the interpreter's result bit for bit (random inputs; neighbor tables get valid entries with
//! skip values; sparse and ragged values random patterns) — or, where the native code sums in
//! another order or uses vector math (`emit_c::bit_exact`), equal up to rounding: within 1e-4
//! (f32) or 1e-12 (f64) of the largest magnitude in the output.

mod common;

use std::path::Path;

use common::same;
use strata_codegen::{compile, emit_c, exec, lower};
use strata_runtime::{Tensor, ValueType};

#[test]
fn native_examples_equal_the_interpreter() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cache = common::private_cache("native-examples");
    let mut compiled = Vec::new();
    let mut reordered = Vec::new();
    // Every example folder, and the test programs (tests/programs).
    let dirs = std::fs::read_dir(root.join("examples")).unwrap().flatten().map(|d| d.path());
    for dir in dirs.chain([root.join("tests/programs")]) {
        for file in std::fs::read_dir(&dir).unwrap().flatten() {
            // examples/ also holds the array-API example (Rust) and its data.
            if file.path().extension().is_none_or(|x| x != "strata") {
                continue;
            }
            let text = std::fs::read_to_string(file.path()).unwrap();
            let module = strata_verify::parse(&text).unwrap();
            let info = strata_verify::verify(&module).unwrap();
            let interp = strata_interp::Interpreter::new(&module, &info.types);
            // Generic functions are typed only at their uses (their instances are lowered inline).
            for (h, f) in module.entries() {
                let Ok(program) = lower(&module, &info.types, h) else { continue };
                let (so, _) = compile::build(&emit_c::emit(&program)).expect("compiles");
                let lib = compile::Loaded::open(&so).expect("loads");
                let args = common::entry_args(&info.types, f);
                let want = interp.run(h, args.clone());
                let exact = emit_c::bit_exact(&program);
                let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
                let rty = f.result().map(|r| ValueType::from_ir(&info.types, r));
                // One thread and two threads: each point is computed by one thread, so the bits
                // do not depend on the thread count.
                for threads in [1, 2] {
                    let got = exec::run_threads(&program, &lib, &args, &names, rty.as_ref(), threads);
                    match (&want, got) {
                        (Ok(want), Ok(got)) => {
                            for ((wn, w), (gn, g)) in want.values.iter().zip(&got) {
                                assert_eq!(wn, gn);
                                // Sparse and ragged results: the same stored elements.
                                if w.ty.levels.iter().any(|l| !l.format.is_dense_like()) {
                                    let stored = |t: &Tensor| {
                                        (0..t.len())
                                            .map(|i| (t.is_present(i), strata_runtime::storage::is_stored(t, i)))
                                            .collect::<Vec<_>>()
                                    };
                                    assert!(
                                        stored(w) == stored(g),
                                        "@{}: `{wn}` stores other elements natively",
                                        f.name
                                    );
                                }
                                assert!(
                                    same(&w.data, &g.data, exact),
                                    "@{}: `{wn}` differs between native ({threads} threads) and interpreter \
                                     ({})",
                                    f.name,
                                    if exact { "bit for bit" } else { "beyond rounding" }
                                );
                            }
                        }
                        // Both reject the data (e.g. an index outside its interval).
                        (Err(_), Err(_)) => {}
                        (w, g) => panic!(
                            "@{}: interpreter {:?} but native {:?}",
                            f.name,
                            w.as_ref().map(|_| "ok"),
                            g.map(|_| "ok")
                        ),
                    }
                }
                compiled.push(format!("{}@{}", file.file_name().to_string_lossy(), f.name));
                if !exact {
                    reordered.push(format!("{}@{}", file.file_name().to_string_lossy(), f.name));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    // The large GEMM goes through the runtime GEMM (so the tolerance path is exercised).
    assert!(reordered.iter().any(|c| c == "gemm_2d.strata@entry"), "reordered: {reordered:?}");
    for must in [
        "laplacian.strata@laplacian",
        "nabla.strata@nabla",
        "gemm_2d.strata@entry",
        "gemm_packed_4d.strata@entry",
        "gemm_tensor_of_tensors.strata@entry",
        "gemm_tensor_of_tensors.strata@packed_gemm",
        "gemm_two_level.strata@blocked",
        "gemm_two_level.strata@block_mac",
        "gemm_two_level.strata@gemm",
        "matmul_gather_sub.strata@row_views",
        "dot_product.strata@batched_matmul",
        "product_2d.strata@most_likely",
        "distributed_axpy.strata@run",
        "spmv_csr.strata@spmv",
        "spmv_csr.strata@formats",
        "sparse_dot.strata@dot",
        "sparse_dot.strata@hadamard",
        "ragged_row_sum.strata@row_sum",
        "tuple_folds.strata@max_count",
        "tuple_folds.strata@blend_rows",
        "tuple_folds.strata@blend_all",
        "tuple_folds.strata@max_count_from",
        "tuple_folds.strata@blend_from",
        "neighbor_tuple_reduce.strata@lowest_neighbor",
        "scatter_view.strata@move_rows",
        "in_place_update.strata@two_sweeps",
        "computed_table.strata@masked_sum",
    ] {
        assert!(compiled.iter().any(|c| c == must), "{must} was not compiled natively; compiled: {compiled:?}");
    }
}
