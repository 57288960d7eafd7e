//! `strata` and the GPU back end on any machine: `lower --to cuda` prints an entry's GPU
//! kernels, and a run placed on a GPU (`--device gpuN`, or values typed `device = gpuN`) either
//! runs there or — without an NVIDIA driver, as in CI — fails with an error naming what is
//! missing and a non-zero exit, never a CPU run in its stead, a panic or a hang.

use std::path::{Path, PathBuf};
use std::process::Command;

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn lower_to_cuda_prints_the_kernels_their_schedule_and_launches() {
    let ex = workspace().join("examples/stencil/laplacian.strata");
    let out = strata().arg("lower").arg(&ex).args(["--to", "cuda"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("extern \"C\" __global__ void strata_kernel0(void *const *buf, int *status_)"), "{text}");
    assert!(text.contains("gpu: blocks of"), "{text}");
    assert!(text.contains("strata_kernel0<<<"), "{text}");
    // The loop form of an entry lowered for a GPU shows the GPU schedule.
    let placed = workspace().join("examples/placement/distributed_axpy.strata");
    let out = strata().arg("lower").arg(&placed).args(["--entry", "on_gpu"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("// runs on gpu0") && text.contains("schedule: gpu: blocks of 256x1"), "{text}");
}

#[test]
fn what_the_cuda_back_end_cannot_print_is_refused_with_the_reason() {
    let ex = workspace().join("examples/sparse/spgemm.strata");
    let out = strata().arg("lower").arg(&ex).args(["--entry", "spgemm", "--to", "cuda"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not run on a GPU yet: a sparse result written as storage"), "{err}");
}

/// A GPU run's outcome: the values, or (no driver here) the error naming the driver.
fn runs_on_the_gpu_or_names_the_driver(out: &std::process::Output) -> bool {
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return true;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the CUDA driver (libcuda.so.1) was not found") || err.contains("NVRTC"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    false
}

#[test]
fn a_run_placed_on_a_gpu_runs_there_or_says_what_is_missing() {
    let dir = std::env::temp_dir().join(format!("strata-cli-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ex = workspace().join("examples/stencil/laplacian.strata");
    let gpu = dir.join("gpu.npy");
    let out = strata()
        .arg("run")
        .arg(&ex)
        .args(["--arg", "inp=random:1", "--device", "gpu0", "--out"])
        .arg(format!("out={}", gpu.display()))
        .output()
        .unwrap();
    if runs_on_the_gpu_or_names_the_driver(&out) {
        let cpu = dir.join("cpu.npy");
        let out = strata()
            .arg("run")
            .arg(&ex)
            .args(["--arg", "inp=random:1", "--out"])
            .arg(format!("out={}", cpu.display()))
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(std::fs::read(&gpu).unwrap(), std::fs::read(&cpu).unwrap(), "the GPU's bits differ from the CPU's");
    } else {
        assert!(!gpu.exists(), "a failed GPU run wrote its output");
    }
    // Values typed on a GPU run there under `auto` and `native` too.
    let placed = workspace().join("examples/placement/distributed_axpy.strata");
    for backend in ["auto", "native"] {
        let out = strata()
            .arg("run")
            .arg(&placed)
            .args(["--entry", "on_gpu", "--arg", "x=random:1", "--arg", "y=random:2", "--backend", backend])
            .output()
            .unwrap();
        runs_on_the_gpu_or_names_the_driver(&out);
    }
    // The interpreter computes the same values anywhere (placement is not meaning).
    let out = strata()
        .arg("run")
        .arg(&placed)
        .args(["--entry", "on_gpu", "--arg", "x=random:1", "--arg", "y=random:2", "--backend", "interp"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_device_no_back_end_runs_is_an_error() {
    let ex = workspace().join("examples/stencil/laplacian.strata");
    let out = strata().arg("run").arg(&ex).args(["--arg", "inp=random:1", "--device", "tpu0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--device tpu0: expected `cpu` or `gpuN`"), "{err}");
    let text = "!T = tensor<f64, I[0:4], device = npu0>\nfunc @f(%x: tensor<f64, I[0:4]>) -> !T {\n  %y = to_device(%x, device = npu0) : !T\n  %z = plus(%y, %y) : !T\n  return %z\n}\n";
    let file = std::env::temp_dir().join(format!("strata-cli-npu-{}.strata", std::process::id()));
    std::fs::write(&file, text).unwrap();
    let out = strata().arg("run").arg(&file).args(["--arg", "x=random:1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no back end runs device `npu0`"), "{err}");
    let _ = std::fs::remove_file(&file);
    let out = strata().arg("run").arg(&ex).args(["--ranks", "2", "--device", "gpu0"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("distributed runs on GPUs are not supported yet"), "{err}");
}
