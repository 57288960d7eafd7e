//! A GPU, a program loaded on it, and buffers resident in its memory.

use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use strata_codegen::emit_c::cuda::Launch;

use crate::GpuError;

/// A GPU opened by the process, by ordinal.
type Opened = (u32, Arc<Gpu>);

/// One GPU: its context and the stream Strata's work runs on, in order.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    arch: String,
    name: String,
}

impl Gpu {
    /// GPU `ordinal`, opened once per process.
    ///
    /// # Errors
    /// [`GpuError::NoDriver`], [`GpuError::NoDevice`], or the driver's error.
    pub fn open(ordinal: u32) -> Result<Arc<Gpu>, GpuError> {
        static OPEN: OnceLock<Mutex<Vec<Opened>>> = OnceLock::new();
        let mut open = OPEN.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, g)) = open.iter().find(|(k, _)| *k == ordinal) {
            return Ok(g.clone());
        }
        if !crate::driver_available() {
            return Err(GpuError::NoDriver);
        }
        let count = CudaContext::device_count().map_err(GpuError::driver("counting devices"))?;
        if i64::from(ordinal) >= i64::from(count) {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal as usize).map_err(GpuError::driver("opening the device"))?;
        let (major, minor) = ctx.compute_capability().map_err(GpuError::driver("reading the compute capability"))?;
        let name = ctx.name().map_err(GpuError::driver("reading the device's name"))?;
        let stream = ctx.default_stream();
        let g = Arc::new(Gpu { ctx, stream, arch: format!("sm_{major}{minor}"), name });
        open.push((ordinal, g.clone()));
        Ok(g)
    }

    /// Its compute capability as NVRTC names it (`sm_90`).
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Its name (`NVIDIA H100 80GB HBM3`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits for everything queued on it.
    ///
    /// # Errors
    /// The driver's error (a kernel that faulted reports here).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize().map_err(GpuError::driver("running the kernels"))
    }
}

/// A program's kernels, compiled for and loaded on one GPU.
pub struct Program {
    gpu: Arc<Gpu>,
    module: Arc<CudaModule>,
    functions: Vec<CudaFunction>,
    /// The scratch memory the launches need (the most any one needs), in bytes.
    scratch: u64,
}

/// One buffer of a run in host memory: where it is, its length in bytes, whether the run
/// reads what it holds (copied to the GPU) and whether it writes it (copied back).
pub struct HostBuffer {
    ptr: *mut u8,
    bytes: usize,
    upload: bool,
    download: bool,
}

impl HostBuffer {
    /// The `bytes` bytes at `ptr`: copied to the device before the kernels run when `upload`,
    /// copied back after when `download`.
    ///
    /// # Safety
    /// `ptr` addresses `bytes` bytes that stay valid while the `HostBuffer` is used, readable,
    /// and writable by this thread alone where `download`.
    pub unsafe fn new(ptr: *mut u8, bytes: usize, upload: bool, download: bool) -> HostBuffer {
        HostBuffer { ptr, bytes, upload, download }
    }
}

/// A program's buffers in device memory, with the table the kernels index (each buffer's
/// device pointer, then the extents', then the launches' scratch memory) and the status word they raise on an error: kept across
/// runs, so that a loop's data stays on the GPU.
pub struct Resident {
    buffers: Vec<CudaSlice<u8>>,
    _extents: CudaSlice<i64>,
    _scratch: CudaSlice<u8>,
    table: CudaSlice<u64>,
    status: CudaSlice<i32>,
}

impl Program {
    /// Compiles `source` (NVRTC, cached) for `gpu` and loads the function of each of
    /// `launches`, which [`Self::launch`] then runs in order.
    ///
    /// # Errors
    /// NVRTC's or the driver's.
    pub fn load(gpu: &Arc<Gpu>, source: &str, launches: &[Launch]) -> Result<Program, GpuError> {
        let cubin = crate::cubin_for(source, gpu.arch())?;
        let module = gpu
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(GpuError::driver("loading the compiled kernels"))?;
        let functions = launches
            .iter()
            .map(|l| module.load_function(&l.function).map_err(GpuError::driver("finding a kernel")))
            .collect::<Result<_, _>>()?;
        let scratch = launches.iter().map(|l| l.scratch).max().unwrap_or(0);
        Ok(Program { gpu: gpu.clone(), module, functions, scratch })
    }

    /// The GPU it runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Allocates the program's buffers on the GPU and copies in those a run reads.
    ///
    /// # Errors
    /// The driver's (out of device memory, …).
    pub fn upload(&self, host: &[HostBuffer], extents: &[i64]) -> Result<Resident, GpuError> {
        let s = &self.gpu.stream;
        let mut buffers = Vec::with_capacity(host.len());
        for h in host {
            // Every pointer addresses memory, an empty buffer's too (a checked access that
            // fails still addresses its interval's first element).
            let bytes = h.bytes.max(16);
            // SAFETY: the allocation is written below or by the kernels before it is read
            // (the kernel program reads no buffer it neither receives nor writes first).
            let mut d = unsafe { s.alloc::<u8>(bytes) }.map_err(GpuError::driver("allocating device memory"))?;
            if h.upload && h.bytes > 0 {
                // SAFETY: `ptr` addresses `bytes` readable bytes (`HostBuffer::new`).
                let src = unsafe { std::slice::from_raw_parts(h.ptr, h.bytes) };
                s.memcpy_htod(src, &mut d).map_err(GpuError::driver("copying to the device"))?;
            } else {
                s.memset_zeros(&mut d).map_err(GpuError::driver("clearing device memory"))?;
            }
            buffers.push(d);
        }
        let ext = s
            .clone_htod(if extents.is_empty() { &[0i64][..] } else { extents })
            .map_err(GpuError::driver("copying the extents"))?;
        // SAFETY: the launches write their scratch before reading it.
        let scratch = unsafe { s.alloc::<u8>(self.scratch.max(16) as usize) }
            .map_err(GpuError::driver("allocating scratch memory"))?;
        let mut table: Vec<u64> = buffers.iter().map(|b| b.device_ptr(s).0).collect();
        table.push(ext.device_ptr(s).0);
        table.push(scratch.device_ptr(s).0);
        let table = s.clone_htod(&table).map_err(GpuError::driver("copying the buffer table"))?;
        let status = s.alloc_zeros::<i32>(1).map_err(GpuError::driver("allocating the status word"))?;
        Ok(Resident { buffers, _extents: ext, _scratch: scratch, table, status })
    }

    /// Queues every kernel on the resident buffers, with the `launches` it was loaded for.
    ///
    /// # Errors
    /// The driver's.
    pub fn launch(&self, resident: &Resident, launches: &[Launch]) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        for (f, l) in self.functions.iter().zip(launches) {
            let cfg = LaunchConfig {
                grid_dim: (l.grid[0], l.grid[1], 1),
                block_dim: (l.block[0], l.block[1], 1),
                shared_mem_bytes: 0,
            };
            let mut b = s.launch_builder(f);
            b.arg(&resident.table).arg(&resident.status);
            // SAFETY: each kernel takes the buffer table and the status word, which `upload`
            // built for this program's buffers and extents.
            unsafe { b.launch(cfg) }.map_err(GpuError::driver("launching a kernel"))?;
        }
        Ok(())
    }

    /// Waits for the queued kernels; the first error code a thread raised (0: none).
    ///
    /// # Errors
    /// The driver's (a kernel that faulted).
    pub fn status(&self, resident: &mut Resident) -> Result<i32, GpuError> {
        let s = &self.gpu.stream;
        let mut code = [0i32];
        s.memcpy_dtoh(&resident.status, &mut code[..]).map_err(GpuError::driver("running the kernels"))?;
        s.synchronize().map_err(GpuError::driver("running the kernels"))?;
        if code[0] != 0 {
            s.memset_zeros(&mut resident.status).map_err(GpuError::driver("clearing the status word"))?;
        }
        Ok(code[0])
    }

    /// The first bad neighbor-table entry or computed index the kernels met since the last
    /// call (value, interval, table buffer or `None` for a computed index), cleared for the
    /// next run: what an error's message names.
    ///
    /// # Errors
    /// The driver's.
    pub fn bad_value(&self) -> Result<Option<strata_codegen::compile::BadValue>, GpuError> {
        let s = &self.gpu.stream;
        let mut global = self.module.get_global("strata_bad", s).map_err(GpuError::driver("reading the bad value"))?;
        let mut raw = [0u8; 40];
        s.memcpy_dtoh(&global, &mut raw[..]).map_err(GpuError::driver("reading the bad value"))?;
        s.memset_zeros(&mut global).map_err(GpuError::driver("clearing the bad value"))?;
        s.synchronize().map_err(GpuError::driver("reading the bad value"))?;
        let d: Vec<i64> = raw.chunks(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        Ok((d[4] != 0).then(|| strata_codegen::compile::BadValue {
            value: d[0],
            interval: strata_ir::Interval::new(d[1], d[2]),
            table: usize::try_from(d[3]).ok(),
        }))
    }

    /// Copies the buffers the kernels write back into host memory.
    ///
    /// # Errors
    /// The driver's.
    pub fn download(&self, resident: &Resident, host: &mut [HostBuffer]) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        for (h, d) in host.iter_mut().zip(&resident.buffers) {
            if h.download && h.bytes > 0 {
                // SAFETY: `ptr` addresses `bytes` writable bytes (`HostBuffer::new`).
                let dst = unsafe { std::slice::from_raw_parts_mut(h.ptr, h.bytes) };
                s.memcpy_dtoh(&d.slice(0..h.bytes), dst).map_err(GpuError::driver("copying from the device"))?;
            }
        }
        s.synchronize().map_err(GpuError::driver("copying from the device"))
    }

    /// One whole run: upload, launch, wait, download; the error code the kernels raised.
    ///
    /// # Errors
    /// As [`Self::upload`], [`Self::launch`], [`Self::download`].
    pub fn run(&self, host: &mut [HostBuffer], extents: &[i64], launches: &[Launch]) -> Result<i32, GpuError> {
        let mut resident = self.upload(host, extents)?;
        self.launch(&resident, launches)?;
        let code = self.status(&mut resident)?;
        if code == 0 {
            self.download(&resident, host)?;
        }
        Ok(code)
    }
}
