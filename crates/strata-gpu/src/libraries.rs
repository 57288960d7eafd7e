//! Finding CUDA's libraries. cudarc loads NVRTC and the driver by their sonames; NVRTC from a
//! pip wheel (`nvidia-cuda-nvrtc-cu12`) is not on the loader's path, so the folders named in
//! `$STRATA_CUDA_LIBS` (and the toolkit's usual one) are tried first by full path: once
//! loaded, the library answers cudarc's lookup by its soname.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The folders searched for NVRTC before the loader's path.
fn folders() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("STRATA_CUDA_LIBS").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs
}

/// Loads NVRTC from the first folder holding it (kept loaded for the process).
fn preload_nvrtc() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        for dir in folders() {
            for name in ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"] {
                let path = dir.join(name);
                if path.exists() {
                    // SAFETY: loading NVRTC runs its initializers only, which have no
                    // preconditions; the library stays loaded for the process.
                    if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
                        std::mem::forget(lib);
                        return;
                    }
                }
            }
        }
    });
}

/// Whether NVRTC can be loaded.
pub fn nvrtc_available() -> bool {
    preload_nvrtc();
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: probing only loads the library.
    *PRESENT.get_or_init(|| unsafe { cudarc::nvrtc::sys::is_culib_present() })
}

/// Whether the CUDA driver can be loaded.
pub fn driver_available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: probing only loads the library.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// [`nvrtc_available`], or the error saying where it was looked for.
pub(crate) fn need_nvrtc() -> Result<(), crate::GpuError> {
    if nvrtc_available() {
        return Ok(());
    }
    let mut searched: Vec<String> = folders().iter().map(|d| d.display().to_string()).collect();
    searched.push("the loader's path".into());
    Err(crate::GpuError::NoNvrtc { searched: searched.join(", ") })
}
