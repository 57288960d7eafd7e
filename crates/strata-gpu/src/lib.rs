//! Strata's GPU runtime: runs a kernel program lowered for a GPU
//! ([`strata_codegen::LowerOptions::gpu`]) on an NVIDIA GPU. NVRTC compiles the CUDA that
//! `strata_codegen::emit_c::cuda` prints to the device's machine code ([`cubin_for`]; PTX with
//! [`compile_for`]), cached on disk like C kernels;
//! the CUDA driver loads it and launches each kernel as its GPU schedule says
//! ([`Program::run`]), with the program's buffers in device memory ([`Resident`]).
//!
//! Both libraries are loaded when first needed ([`nvrtc_available`], [`driver_available`]),
//! never linked: building Strata needs no CUDA, and a machine without it gets an error naming
//! what is missing.

mod compile;
mod device;
mod libraries;

pub use compile::{compile, compile_for, cubin_for, nvrtc_version};
pub use device::{Gpu, HostBuffer, Program, Resident};
pub use libraries::{driver_available, nvrtc_available};

/// Why a GPU run could not happen.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// NVRTC could not be loaded.
    #[error("NVRTC (CUDA's run-time compiler, libnvrtc.so.13 or .12) was not found; searched {searched}: install it (the CUDA toolkit, or `pip install nvidia-cuda-nvrtc-cu12`) and name its folder in $STRATA_CUDA_LIBS")]
    NoNvrtc {
        /// Where it was looked for.
        searched: String,
    },
    /// The CUDA driver could not be loaded.
    #[error("the CUDA driver (libcuda.so.1) was not found: this machine has no NVIDIA GPU driver, and a program placed on a GPU (`device = gpuN`) needs one")]
    NoDriver,
    /// No such device.
    #[error("there is no GPU {ordinal}: this machine has {count}")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: u32,
        /// How many there are.
        count: i32,
    },
    /// NVRTC refused the generated CUDA (a back-end bug).
    #[error("NVRTC could not compile the generated CUDA (a Strata bug): {log}")]
    Compile {
        /// NVRTC's log.
        log: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA {what}: {message}")]
    Driver {
        /// What was being done.
        what: &'static str,
        /// The driver's message.
        message: String,
    },
}

impl GpuError {
    fn driver(what: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError {
        move |e| GpuError::Driver { what, message: e.to_string() }
    }
}
