//! Functions the generated code calls back into: the table every compiled entry receives.
//!
//! Today the table holds the blocked GEMM used for matrix-product kernels
//! ([`crate::matmul`]): the `gemm` crate's AVX-512/AVX2 micro-kernels with cache blocking and
//! packing, parallel over `threads` rayon workers. The C side declares the same layout as
//! `strata_rt` (see `emit_c`'s prelude); both must change together.

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
}

/// The table compiled code is called with.
pub static RUNTIME: Runtime = Runtime { gemm_f32: gemm::<f32>, gemm_f64: gemm::<f64> };

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
