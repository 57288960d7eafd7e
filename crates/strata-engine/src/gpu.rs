//! The GPU half of a prepared program: an entry whose values live on a GPU (compute follows
//! data, `strata_codegen::placement`) is lowered for it, printed as CUDA, compiled by NVRTC
//! and run there. Its arguments are copied to the device before the kernels run and its
//! results back after; repeated runs (`strata run --repeat`) keep the buffers on the device
//! and time the kernels alone.

use std::time::Instant;

use strata_codegen::emit_c::cuda::{self, Launch};
use strata_codegen::exec::{self, Buffers, Layout};
use strata_codegen::KernelProgram;
use strata_runtime::{Argument, Value, ValueType};

use crate::Timings;

/// Runs of the kernels per timed sample on resident buffers: the sample is their mean.
const LAUNCHES_PER_SAMPLE: usize = 10;

/// A program loaded on a GPU.
pub(crate) struct GpuNative {
    layout: Layout,
    program: strata_gpu::Program,
    launches: Vec<Launch>,
    /// For each buffer, whether a run copies it to the device (its content is read) and back
    /// (the kernels write it).
    transfers: Vec<(bool, bool)>,
}

/// Prints `program` (lowered for a GPU: `KernelProgram::gpu`) as CUDA, compiles it and loads
/// it on that GPU.
pub(crate) fn build(program: &KernelProgram) -> Result<GpuNative, String> {
    let (source, extents) = cuda::emit_cuda(program).map_err(|e| e.to_string())?;
    let gpu = strata_gpu::Gpu::open(program.gpu.expect("emit_cuda checked it")).map_err(|e| e.to_string())?;
    let launches = cuda::launches(program);
    let loaded = strata_gpu::Program::load(&gpu, &source, &launches).map_err(|e| e.to_string())?;
    let transfers = program.buffers.iter().map(|b| (!b.overwritten, b.written && !b.temp)).collect();
    Ok(GpuNative { layout: Layout::of(program, extents), program: loaded, launches, transfers })
}

impl GpuNative {
    /// One run on `args`, then `repeat` samples of each kind: the kernels alone on the
    /// resident buffers (`preallocated_s`, the mean of [`LAUNCHES_PER_SAMPLE`] queued runs) and
    /// a whole round trip (`allocating_s`: copies in, kernels, copies back). The values are the
    /// first run's.
    pub(crate) fn run<T: Argument>(
        &self,
        args: &[T],
        names: &[String],
        result_ty: Option<&ValueType>,
        repeat: usize,
        timings: &mut Timings,
    ) -> Result<Vec<(String, Value)>, String> {
        let failed = |e: strata_gpu::GpuError| format!("GPU run failed: {e}");
        let t0 = Instant::now();
        let mut buffers = Buffers::new(&self.layout, args).map_err(|e| e.to_string())?;
        let (memory, extents) = buffers.memory();
        let extents = extents.to_vec();
        let mut host: Vec<strata_gpu::HostBuffer> = memory
            .into_iter()
            .zip(&self.transfers)
            // SAFETY: the memory is the buffers' columns, alive until `into_values` below; the
            // written ones are owned or lent for writing (`Buffers`), read-only ones never
            // downloaded into.
            .map(|((ptr, bytes), &(upload, download))| unsafe {
                strata_gpu::HostBuffer::new(ptr, bytes, upload, download)
            })
            .collect();
        let mut resident = self.program.upload(&host, &extents).map_err(failed)?;
        self.program.launch(&resident, &self.launches).map_err(failed)?;
        let code = self.program.status(&mut resident).map_err(failed)?;
        if code != 0 {
            let bad = self.program.bad_value().map_err(failed)?;
            exec::code_error(code, || bad.clone().map(|b| buffers.describe(b))).map_err(|e| e.to_string())?;
        }
        self.program.download(&resident, &mut host).map_err(failed)?;
        timings.first_s = t0.elapsed().as_secs_f64();
        for _ in 0..repeat {
            // Kernels queue back to back, as a loop's steps do; waiting after each would time
            // the round trip to the device instead.
            let t = Instant::now();
            for _ in 0..LAUNCHES_PER_SAMPLE {
                self.program.launch(&resident, &self.launches).map_err(failed)?;
            }
            let code = self.program.status(&mut resident).map_err(failed)?;
            exec::code_error(code, || None).map_err(|e| e.to_string())?;
            timings.preallocated_s.push(t.elapsed().as_secs_f64() / LAUNCHES_PER_SAMPLE as f64);
            let t = Instant::now();
            let code = self.program.run(&mut host, &extents, &self.launches).map_err(failed)?;
            exec::code_error(code, || None).map_err(|e| e.to_string())?;
            timings.allocating_s.push(t.elapsed().as_secs_f64());
        }
        drop(resident);
        Ok(buffers.into_values(&self.layout, args, names, result_ty))
    }
}
