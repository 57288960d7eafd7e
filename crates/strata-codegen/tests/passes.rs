//! What the lowering passes decide on the seed's stencils (their results are checked against
//! the interpreter in examples.rs; here, the shape of the kernels).

use std::path::Path;

use strata_codegen::{lower, KernelProgram};

fn lowered(file: &str, entry: &str) -> KernelProgram {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(file);
    let module = strata_syntax::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
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
