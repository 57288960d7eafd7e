//! NVRTC: the generated CUDA to PTX, cached on disk in the kernel cache
//! (`strata_codegen::compile::cache_dir`) under a hash of the source, the target and NVRTC's
//! version, like the C kernels' shared objects.

use crate::GpuError;

/// NVRTC's version (major, minor).
///
/// # Errors
/// [`GpuError::NoNvrtc`].
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    crate::libraries::need_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (checked above); the call writes two ints.
    let status = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    status.result().map_err(|e| GpuError::Compile { log: e.to_string() })?;
    Ok((major, minor))
}

/// `source` compiled to PTX for the GPUs of compute capability `arch` (e.g. `sm_90`).
/// Floating-point contraction is off (`--fmad=false`), as the C is compiled without it: a
/// kernel computes what the CPU's computes.
///
/// # Errors
/// [`GpuError::NoNvrtc`], or [`GpuError::Compile`] with NVRTC's log.
pub fn compile_for(source: &str, arch: &str) -> Result<String, GpuError> {
    let version = nvrtc_version()?;
    let key = strata_codegen::compile::hash(&[source.as_bytes(), arch.as_bytes(), format!("{version:?}").as_bytes()]);
    let dir = strata_codegen::compile::cache_dir();
    let path = dir.join(format!("cuda-{key:016x}.ptx"));
    if let Ok(ptx) = std::fs::read_to_string(&path) {
        return Ok(ptx);
    }
    let options = cudarc::nvrtc::CompileOptions {
        fmad: Some(false),
        options: vec![format!("--gpu-architecture={}", arch.replace("sm_", "compute_")), "--std=c++17".into()],
        name: Some("strata.cu".into()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, options).map_err(|e| GpuError::Compile {
        log: match e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => other.to_string(),
        },
    })?;
    let text = ptx.to_src();
    // A cache that cannot be written costs a compile next time, nothing else.
    if std::fs::create_dir_all(&dir).is_ok() {
        let tmp = dir.join(format!("cuda-{key:016x}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, &text).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok(text)
}

/// [`compile_for`] the GPUs of Hopper's compute capability, `sm_90`.
///
/// # Errors
/// As [`compile_for`].
pub fn compile(source: &str) -> Result<String, GpuError> {
    compile_for(source, "sm_90")
}
