//! Functions the generated code calls back into: the table every compiled entry receives.
//!
//! The table holds the blocked GEMM used for matrix-product kernels ([`crate::matmul`]): the
//! `gemm` crate's AVX-512/AVX2 micro-kernels with cache blocking and packing, parallel over
//! `threads` rayon workers; and the allocator of buffers whose length only the run knows (a
//! sparse result's coordinates and values, [`crate::kernel::CompressedOut`]). The C side
//! declares the same layout as `strata_rt` (see `emit_c`'s prelude); both must change together.

/// `dst[m×n] (+)= lhs[m×k] · rhs[k×n]` on strided matrices (row stride, column stride, in
/// elements); `accumulate = 0` overwrites `dst`.
pub type Gemm<T> = unsafe extern "C" fn(
    m: i64,
    n: i64,
    k: i64,
    dst: *mut T,
    dst_rs: i64,
    dst_cs: i64,
    accumulate: i32,
    lhs: *const T,
    lhs_rs: i64,
    lhs_cs: i64,
    rhs: *const T,
    rhs_rs: i64,
    rhs_cs: i64,
    threads: i32,
);

/// The runtime table passed to every compiled entry (C: `strata_rt`).
#[repr(C)]
pub struct Runtime {
    /// `f32` GEMM.
    pub gemm_f32: Gemm<f32>,
    /// `f64` GEMM.
    pub gemm_f64: Gemm<f64>,
    /// A buffer of `len` elements for program buffer `buffer` ([`allocations`]), content
    /// arbitrary: a large one freed by an earlier run when one of that length is kept, else
    /// fresh (on huge pages when large).
    pub alloc: unsafe extern "C" fn(buffer: i64, len: i64) -> *mut std::ffi::c_void,
}

/// The table compiled code is called with.
pub static RUNTIME: Runtime = Runtime { gemm_f32: gemm::<f32>, gemm_f64: gemm::<f64>, alloc };

/// Buffers allocated by running code, by buffer.
type Allocated = Vec<(usize, strata_runtime::Column)>;

thread_local! {
    /// The element type of every buffer of the program running on this thread, and the
    /// buffers its code allocated so far.
    static ALLOCATIONS: std::cell::RefCell<(Vec<strata_ir::Scalar>, Allocated)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Runs `call` (a compiled entry, on this thread) with `scalars` as its buffers' element types;
/// returns its result and the buffers it allocated through `strata_rt.alloc`, by buffer.
pub fn allocations<R>(
    scalars: Vec<strata_ir::Scalar>,
    call: impl FnOnce() -> R,
) -> (R, Vec<(usize, strata_runtime::Column)>) {
    ALLOCATIONS.with(|a| *a.borrow_mut() = (scalars, Vec::new()));
    let r = call();
    let made = ALLOCATIONS.with(|a| std::mem::take(&mut a.borrow_mut().1));
    (r, made)
}

/// `strata_rt.alloc`: called by the thread running the entry, outside parallel regions.
unsafe extern "C" fn alloc(buffer: i64, len: i64) -> *mut std::ffi::c_void {
    ALLOCATIONS.with(|a| {
        let mut a = a.borrow_mut();
        let (Ok(b), Ok(n)) = (usize::try_from(buffer), usize::try_from(len)) else { return std::ptr::null_mut() };
        let Some(&scalar) = a.0.get(b) else { return std::ptr::null_mut() };
        let mut c = crate::exec::reusable_column(scalar, n);
        let p = c.as_mut_ptr();
        a.1.push((b, c));
        p
    })
}

unsafe extern "C" fn gemm<T: One>(
    m: i64,
    n: i64,
    k: i64,
    dst: *mut T,
    dst_rs: i64,
    dst_cs: i64,
    accumulate: i32,
    lhs: *const T,
    lhs_rs: i64,
    lhs_cs: i64,
    rhs: *const T,
    rhs_rs: i64,
    rhs_cs: i64,
    threads: i32,
) {
    let parallelism = if threads > 1 { gemm::Parallelism::Rayon(threads as usize) } else { gemm::Parallelism::None };
    // SAFETY: the generated code passes pointers and strides that address `m×k`, `k×n` and
    // `m×n` elements inside buffers of the program (checked when the kernel was recognized);
    // `dst` does not overlap the operands.
    unsafe {
        gemm::gemm(
            m as usize,
            n as usize,
            k as usize,
            dst,
            dst_cs as isize,
            dst_rs as isize,
            accumulate != 0,
            lhs,
            lhs_cs as isize,
            lhs_rs as isize,
            rhs,
            rhs_cs as isize,
            rhs_rs as isize,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            parallelism,
        )
    }
}

/// The element types the GEMM serves, with their one.
pub trait One: Copy + 'static {
    /// `1`.
    const ONE: Self;
}

impl One for f32 {
    const ONE: f32 = 1.0;
}

impl One for f64 {
    const ONE: f64 = 1.0;
}
