//! NVRTC: the generated CUDA to PTX ([`compile_for`]: what CI assembles with ptxas) or to the
//! device's machine code ([`cubin_for`]: what a run loads — machine code loads on any driver
//! that knows the architecture, where PTX from a newer NVRTC than the driver would not JIT),
//! cached on disk in the kernel cache (`strata_codegen::compile::cache_dir`) under a hash of the
//! source, the target, the form and NVRTC's version, like the C kernels' shared objects.

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
    let ptx = cached(source, arch, "ptx", || nvrtc(source, &arch.replace("sm_", "compute_"), Form::Ptx))?;
    String::from_utf8(ptx).map_err(|e| GpuError::Compile { log: format!("NVRTC's PTX is not text: {e}") })
}

/// `source` compiled to machine code (a cubin) for the GPUs of compute capability `arch`, as
/// [`compile_for`] otherwise.
///
/// # Errors
/// As [`compile_for`].
pub fn cubin_for(source: &str, arch: &str) -> Result<Vec<u8>, GpuError> {
    cached(source, arch, "cubin", || nvrtc(source, arch, Form::Cubin))
}

/// What NVRTC hands back.
#[derive(Clone, Copy)]
enum Form {
    Ptx,
    Cubin,
}

/// The `form` of `source` from the kernel cache, else `make`'s (then cached). A cache that
/// cannot be written costs a compile next time, nothing else.
fn cached(
    source: &str,
    arch: &str,
    form: &str,
    make: impl FnOnce() -> Result<Vec<u8>, GpuError>,
) -> Result<Vec<u8>, GpuError> {
    let version = nvrtc_version()?;
    let key = strata_codegen::compile::hash(&[
        source.as_bytes(),
        arch.as_bytes(),
        form.as_bytes(),
        format!("{version:?}").as_bytes(),
    ]);
    let dir = strata_codegen::compile::cache_dir();
    let path = dir.join(format!("cuda-{key:016x}.{form}"));
    if let Ok(bytes) = std::fs::read(&path) {
        return Ok(bytes);
    }
    let bytes = make()?;
    if std::fs::create_dir_all(&dir).is_ok() {
        let tmp = dir.join(format!("cuda-{key:016x}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, &bytes).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok(bytes)
}

/// One NVRTC compile of `source` for `--gpu-architecture=arch`.
fn nvrtc(source: &str, arch: &str, form: Form) -> Result<Vec<u8>, GpuError> {
    use cudarc::nvrtc::{result, sys};
    let failed = |what: &str, e: result::NvrtcError| GpuError::Compile { log: format!("{what}: {e}") };
    let src = std::ffi::CString::new(source).map_err(|_| GpuError::Compile { log: "a NUL in the source".into() })?;
    let name = c"strata.cu";
    let prog = result::create_program(&src, Some(name)).map_err(|e| failed("creating the program", e))?;
    let options = [format!("--gpu-architecture={arch}"), "--fmad=false".into(), "--std=c++17".into()];
    // SAFETY: `prog` was created above and is destroyed once, below; the buffers NVRTC fills
    // are sized by its own size calls.
    let out = unsafe {
        let compiled = result::compile_program(prog, &options);
        let out = match compiled {
            Err(_) => {
                let log = result::get_program_log(prog).unwrap_or_default();
                let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                Err(GpuError::Compile { log: String::from_utf8_lossy(&log).into_owned() })
            }
            Ok(()) => match form {
                Form::Ptx => result::get_ptx(prog)
                    .map(|p| p.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect())
                    .map_err(|e| failed("reading the PTX", e)),
                Form::Cubin => {
                    let mut size = 0usize;
                    sys::nvrtcGetCUBINSize(prog, &mut size).result().map_err(|e| failed("sizing the cubin", e))?;
                    let mut cubin = vec![0u8; size];
                    sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
                        .result()
                        .map_err(|e| failed("reading the cubin", e))?;
                    Ok(cubin)
                }
            },
        };
        let _ = result::destroy_program(prog);
        out
    };
    out
}

/// [`compile_for`] the GPUs of Hopper's compute capability, `sm_90`.
///
/// # Errors
/// As [`compile_for`].
pub fn compile(source: &str) -> Result<String, GpuError> {
    compile_for(source, "sm_90")
}
