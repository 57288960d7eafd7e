//! Which kernels the native backend hands to the runtime GEMM, and with what shape: the plain
//! and the tensor-of-tensors GEMM of seed 001 must become the same single product (the tile
//! index and the index within a tile collapse into one contracted axis).

use std::path::Path;

use strata_codegen::{lower, matmul::MatMul};

fn matmuls(file: &str, entry: &str) -> Vec<Option<MatMul>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(file);
    let module = strata_verify::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let (h, _) = module.functions.iter().find(|(_, f)| f.name == entry).unwrap();
    lower(&module, &info.types, h).unwrap().kernels.into_iter().map(|k| k.matmul().cloned()).collect()
}

#[test]
fn plain_and_tiled_gemm_become_one_runtime_product() {
    // 256x1024 times a 1024x1024 constant, accumulating onto a zero-filled destination.
    let plain = matmuls("nested/gemm_2d.strata", "entry_einsum");
    let mm = plain[0].as_ref().expect("a GEMM");
    assert_eq!((mm.m.extent, mm.n.extent, mm.k.extent), (256, 1024, 1024));
    assert_eq!((mm.m.strides, mm.n.strides, mm.k.strides), ([1024, 1024, 0], [1, 0, 1], [0, 1, 1024]));
    assert!(mm.batch.is_empty() && mm.init.is_none());

    // 128x256 times 256x256 in 32x32 tiles: pack, tile products, unpack fuse into one GEMM.
    let tiled = matmuls("nested/gemm_tensor_of_tensors.strata", "packed_gemm");
    let mms: Vec<&MatMul> = tiled.iter().flatten().collect();
    assert_eq!(mms.len(), 1, "{tiled:?}");
    let mm = mms[0];
    assert_eq!((mm.m.extent, mm.n.extent, mm.k.extent), (128, 256, 256));
    assert_eq!(mm.k.names.len(), 2, "tile index and index within the tile: {mm}");
    assert_eq!(mm.k.strides, [0, 1, 256]);
}

#[test]
fn small_products_keep_the_exact_loops() {
    // A 4x8 by 8x5 product is far below the GEMM threshold.
    assert!(matmuls("structured/dot_product.strata", "named").iter().all(Option::is_none));
}

#[test]
fn an_elementwise_epilogue_runs_in_place_after_the_gemm() {
    // relu(A·B + bias): the product goes to the GEMM, the rest reads it back from the output.
    let text = include_str!("../../../tests/programs/gemm_relu_epilogue.strata");
    let module = strata_verify::parse(text).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let (h, _) = module.functions.iter().find(|(_, f)| f.name == "f").unwrap();
    let program = lower(&module, &info.types, h).unwrap();
    let mm = program.kernels[0].matmul().expect("a GEMM");
    let epilogue = strata_codegen::sym::show(mm.epilogue.as_ref().expect("an epilogue"));
    assert_eq!(epilogue, "maximum(plus(b3[I, J], b2[J]), 0)");
}
