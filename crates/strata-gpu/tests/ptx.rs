//! Every entry of the bundled examples, benchmarks and test programs, lowered for a GPU:
//! printed as CUDA (or refused with the back end's reason — never a panic), compiled to PTX for
//! `sm_90` by NVRTC and the PTX assembled by `ptxas`, and compiled to `sm_90` machine code (what
//! a run loads). No GPU is needed: NVRTC and ptxas come from NVIDIA's pip wheels, which the
//! project's Python environment holds (`scripts/python-env` installs them with the test
//! oracles); `$STRATA_CUDA_LIBS` and `$STRATA_PTXAS` name others.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn strata_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            strata_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "strata") {
            out.push(p);
        }
    }
}

/// What the CUDA back end made of one entry.
enum Outcome {
    Cuda(String),
    Refused(String),
}

fn lower_all() -> Vec<(String, Outcome)> {
    let mut files = Vec::new();
    strata_files(&root().join("examples"), &mut files);
    strata_files(&root().join("bench/workloads"), &mut files);
    strata_files(&root().join("tests/programs"), &mut files);
    let mut out = Vec::new();
    for f in files {
        let source = std::fs::read_to_string(&f).unwrap();
        let Ok(module) = strata_verify::parse(&source) else { continue };
        let Ok(info) = strata_verify::verify(&module) else { continue };
        for (h, func) in module.entries() {
            let name = format!("{}@{}", f.strip_prefix(root()).unwrap_or(&f).display(), func.name);
            let m = strata_verify::results_as_outputs(&module, h);
            let options =
                strata_codegen::LowerOptions { gpu: Some(0), ..strata_codegen::LowerOptions::for_this_machine() };
            let program = match strata_codegen::lower_with(&m, &info.types, h, &options) {
                Ok(p) => p,
                // Entries the native back end does not lower (the CPU path says so too).
                Err(e) => {
                    out.push((name, Outcome::Refused(e.to_string())));
                    continue;
                }
            };
            match strata_codegen::emit_c::cuda::emit_cuda(&program) {
                Ok((cuda, _)) => out.push((name, Outcome::Cuda(cuda))),
                Err(e) => out.push((name, Outcome::Refused(e.to_string()))),
            }
        }
    }
    out
}

/// NVRTC's folder and ptxas: `$STRATA_CUDA_LIBS` and `$STRATA_PTXAS` where set, else the
/// wheels in the project's Python environment.
fn cuda_tools() -> (String, PathBuf) {
    if let (Ok(libs), Ok(ptxas)) = (std::env::var("STRATA_CUDA_LIBS"), std::env::var("STRATA_PTXAS")) {
        return (libs, PathBuf::from(ptxas));
    }
    let env = std::process::Command::new(root().join("scripts/python-env")).output().expect("scripts/python-env runs");
    assert!(env.status.success(), "scripts/python-env: {}", String::from_utf8_lossy(&env.stderr));
    let python = String::from_utf8(env.stdout).unwrap().trim().to_string();
    let where_ = std::process::Command::new(&python)
        .args([
            "-c",
            "import nvidia.cuda_nvrtc as r, nvidia.cuda_nvcc as c; print(r.__path__[0]); print(c.__path__[0])",
        ])
        .output()
        .expect("python runs");
    assert!(where_.status.success(), "NVIDIA's wheels: {}", String::from_utf8_lossy(&where_.stderr));
    let text = String::from_utf8(where_.stdout).unwrap();
    let mut lines = text.lines();
    let nvrtc = Path::new(lines.next().unwrap()).join("lib");
    let ptxas = Path::new(lines.next().unwrap()).join("bin/ptxas");
    (nvrtc.display().to_string(), ptxas)
}

#[test]
fn every_example_entry_compiles_to_ptx_for_sm_90() {
    let (libs, ptxas) = cuda_tools();
    // Read once, when NVRTC is first loaded (this test binary's only test that loads it).
    std::env::set_var("STRATA_CUDA_LIBS", &libs);
    std::env::set_var(
        "STRATA_CACHE_DIR",
        std::env::temp_dir().join(format!("strata-ptx-cache-{}", std::process::id())),
    );
    assert!(strata_gpu::nvrtc_available(), "NVRTC was not found in {libs}");
    let (major, minor) = strata_gpu::nvrtc_version().unwrap();
    eprintln!("NVRTC {major}.{minor} from {libs}; ptxas {}", ptxas.display());
    let dir = std::env::temp_dir().join(format!("strata-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut compiled, mut refused) = (0, Vec::new());
    for (i, (name, outcome)) in lower_all().into_iter().enumerate() {
        let cuda = match outcome {
            Outcome::Cuda(c) => c,
            Outcome::Refused(why) => {
                refused.push(format!("{name}: {why}"));
                continue;
            }
        };
        let ptx = strata_gpu::compile_for(&cuda, "sm_90").unwrap_or_else(|e| panic!("{name}: {e}\n{cuda}"));
        assert!(ptx.contains(".entry strata_kernel0"), "{name}: no kernel in the PTX");
        // What a run loads: the device's machine code, an ELF image.
        let cubin = strata_gpu::cubin_for(&cuda, "sm_90").unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(cubin.starts_with(b"\x7fELF"), "{name}: NVRTC's cubin is no ELF image");
        let file = dir.join(format!("k{i}.ptx"));
        std::fs::write(&file, &ptx).unwrap();
        let run =
            std::process::Command::new(&ptxas).args(["-arch=sm_90", "-o", "/dev/null"]).arg(&file).output().unwrap();
        assert!(run.status.success(), "{name}: ptxas refused the PTX: {}", String::from_utf8_lossy(&run.stderr));
        compiled += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(std::env::var("STRATA_CACHE_DIR").unwrap());
    eprintln!("{compiled} entries compiled to PTX and assembled by ptxas; not on a GPU yet:");
    for r in &refused {
        eprintln!("  {r}");
    }
    // The stencils, reductions, scans and contractions all print: what is refused is named.
    assert!(compiled >= 100, "only {compiled} entries compiled");
}

#[test]
fn entries_the_back_end_cannot_print_are_refused_with_the_reason() {
    for (name, outcome) in lower_all() {
        if let Outcome::Refused(why) = outcome {
            assert!(!why.is_empty(), "{name}");
        }
    }
}
