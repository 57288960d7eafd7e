//! `// test: loops` and `// test: c`: the last entry's loop kernels (`strata lower --to loops`)
//! or generated C (`--to c`), blessed below the program as `//# ` lines, so that "the generated
//! code is unchanged" is checked, not claimed. The machine facts lowering decides from are
//! pinned ([`PINNED`]), so a snapshot is the same on every machine.

use strata_codegen::LowerOptions;
use strata_ir::{Module, TypeArena};

/// The machine the snapshots are lowered for: a 32 MiB last-level cache.
pub const PINNED: LowerOptions = LowerOptions {
    cache_bytes: 32 << 20,
    disabled: strata_codegen::pipeline::PassSet::NONE,
    polls: false,
    extents_per_site: false,
    gpu: None,
};

/// The printed form `kind` (`loops`, `c` or `cuda`) of the last runnable entry of `module`.
/// `cuda` lowers it for GPU 0 (its GPU schedule, then the CUDA) and ends with the launches at
/// the program's sizes.
pub fn lowered(module: &Module, types: &TypeArena, kind: &str) -> Result<String, String> {
    let entry = module.entries().last().map(|(h, _)| h).ok_or("no entry to lower")?;
    let module = strata_verify::results_as_outputs(module, entry);
    let gpu = (kind == "cuda").then_some(0);
    let options = LowerOptions { gpu, ..PINNED };
    let program = strata_codegen::lower_with(&module, types, entry, &options).map_err(|e| e.to_string())?;
    Ok(match kind {
        "loops" => program.to_string(),
        "cuda" => {
            let (cuda, _) = strata_codegen::emit_c::cuda::emit_cuda(&program).map_err(|e| e.to_string())?;
            let launches: Vec<String> =
                strata_codegen::emit_c::cuda::launches(&program).iter().map(|l| l.to_string()).collect();
            format!("{program}{cuda}/* launches: {} */\n", launches.join(", "))
        }
        _ => strata_codegen::emit_c::emit(&program),
    })
}
