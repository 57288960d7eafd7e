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
    /// Lets MPI progress the exchanges under way ([`set_poll`]; nothing until one is set).
    /// Kernels lowered with [`crate::LowerOptions::polls`] call it from their outermost loop,
    /// on any of their threads.
    pub poll: unsafe extern "C" fn(),
}

/// The table compiled code is called with.
pub static RUNTIME: Runtime = Runtime { gemm_f32: gemm::<f32>, gemm_f64: gemm::<f64>, alloc, poll };

/// The function [`Runtime::poll`] calls (0: none).
static POLL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Sets what kernels' polls call: the distributed runtime's MPI progress (`strata_mpi_poll`),
/// which must be callable from any thread at any time and return at once when it has nothing
/// to do.
pub fn set_poll(f: unsafe extern "C" fn()) {
    POLL.store(f as usize, std::sync::atomic::Ordering::Release);
}

/// `strata_rt.poll`.
unsafe extern "C" fn poll() {
    let f = POLL.load(std::sync::atomic::Ordering::Acquire);
    if f != 0 {
        // SAFETY: only `set_poll` stores here, and it stores such a function.
        let f: unsafe extern "C" fn() = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn()>(f) };
        // SAFETY: `set_poll`'s contract.
        unsafe { f() }
    }
}

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

unsafe extern "C" fn gemm<T: GemmScalar>(
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
    let (mu, nu, ku) = (m.max(0) as usize, n.max(0) as usize, k.max(0) as usize);
    let at = |p: *const T, rs: i64, cs: i64, i: usize, j: usize| {
        // SAFETY: in bounds for i < rows, j < cols (the caller's contract below).
        unsafe { *p.offset(i as isize * rs as isize + j as isize * cs as isize) }
    };
    let dst_at =
        |i: usize, j: usize| unsafe { dst.offset(i as isize * dst_rs as isize + j as isize * dst_cs as isize) };
    // The fold's meaning is IEEE arithmetic in its order: `acc = init; acc = acc + a·b` for k
    // ascending. The blocked GEMM reassociates and fuses multiply-adds, which changes only the
    // rounding of finite results; where infinities or NaN can arise (an operand or initial
    // value that is not finite, a product that may overflow) the whole product runs in the
    // fold's order (also where partial sums could overflow), and any entry the GEMM leaves
    // non-finite is recomputed in that order.
    // SAFETY (the scans): the same elements the product reads and writes.
    let (lhs_max, lhs_finite) = unsafe { scan(lhs, mu, ku, lhs_rs, lhs_cs) };
    let (rhs_max, rhs_finite) = unsafe { scan(rhs, ku, nu, rhs_rs, rhs_cs) };
    let (init_max, init_finite) =
        if accumulate == 0 { (0.0, true) } else { unsafe { scan(dst, mu, nu, dst_rs, dst_cs) } };
    let exact = |i: usize, j: usize, init: T| {
        (0..ku).fold(init, |acc, kk| acc.add(at(lhs, lhs_rs, lhs_cs, i, kk).mul(at(rhs, rhs_rs, rhs_cs, kk, j))))
    };
    // No partial sum can overflow in any order when the initial value plus `k` of the largest
    // products stays finite: the blocked order then meets infinities exactly where the fold's
    // does (a partial sum overflowing in one order and cancelling in another — `1e308 + 1e308
    // - 1e308` — would otherwise pass the final check as a finite result).
    if !(lhs_finite && rhs_finite && init_finite) || init_max + lhs_max * rhs_max * ku as f64 > T::MAX_F64 {
        for i in 0..mu {
            for j in 0..nu {
                let init = if accumulate != 0 { unsafe { *dst_at(i, j) } } else { T::ZERO };
                unsafe { *dst_at(i, j) = exact(i, j, init) };
            }
        }
        return;
    }
    // Initial values, kept only to recompute an entry the blocked product makes non-finite.
    let inits: Vec<T> = if accumulate != 0 {
        (0..mu).flat_map(|i| (0..nu).map(move |j| (i, j))).map(|(i, j)| unsafe { *dst_at(i, j) }).collect()
    } else {
        Vec::new()
    };
    // SAFETY: the generated code passes pointers and strides that address `m×k`, `k×n` and
    // `m×n` elements inside buffers of the program (checked when the kernel was recognized);
    // `dst` does not overlap the operands.
    unsafe {
        blocked(
            Product { m: mu, n: nu, k: ku, dst, dst_rs, dst_cs, lhs, lhs_rs, lhs_cs, rhs, rhs_rs, rhs_cs },
            accumulate != 0,
            threads.max(1) as usize,
        )
    };
    if unsafe { scan(dst, mu, nu, dst_rs, dst_cs) }.1 {
        return;
    }
    for i in 0..mu {
        for j in 0..nu {
            let p = dst_at(i, j);
            if !unsafe { *p }.is_finite() {
                let init = if accumulate != 0 { inits[i * nu + j] } else { T::ZERO };
                unsafe { *p = exact(i, j, init) };
            }
        }
    }
}

/// Products whose result has fewer entries than this do not share its tiles among threads:
/// the gemm crate divides only the result, and small results divide badly. Measured on 2 threads
/// (AVX-512), 1 thread against 2: 50×2000·2000×50 0.37 against 0.59 ms, 100×2000·2000×100 0.99
/// against 1.12 ms, 128³ even, 200³ 0.34 against 0.24 ms.
pub const THREADED_RESULT_MIN: usize = 128 * 128;

/// A product with a smaller result but at least this many multiply-adds splits its
/// contraction among the threads instead (each thread a slice of `k`, into its own partial
/// result, added up at the end): the shape of `X.T @ X` for tall `X`.
pub const SPLIT_K_MIN_MACS: usize = 1 << 20;

/// The shortest slice of the contraction one thread of a split product takes.
const SPLIT_K_MIN_DEPTH: usize = 256;

/// One `m×k · k×n → m×n` product's pointers and strides (rows, columns).
#[derive(Clone, Copy)]
struct Product<T> {
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: i64,
    dst_cs: i64,
    lhs: *const T,
    lhs_rs: i64,
    lhs_cs: i64,
    rhs: *const T,
    rhs_rs: i64,
    rhs_cs: i64,
}

// SAFETY: a `Product` is handed to the threads of one call, which read the operands and write
// disjoint results (each split slice its own partial block) before the call returns.
unsafe impl<T> Send for Product<T> {}

/// `dst = (accumulate ? dst : 0) + lhs · rhs` by the blocked GEMM, on `threads` threads where
/// the shape pays for them ([`THREADED_RESULT_MIN`], [`SPLIT_K_MIN_MACS`]).
///
/// # Safety
/// The pointers and strides of `p` address its matrices; `dst` overlaps neither operand.
unsafe fn blocked<T: GemmScalar>(p: Product<T>, accumulate: bool, threads: usize) {
    let one = |p: Product<T>, accumulate: bool, parallelism: gemm::Parallelism| unsafe {
        gemm::gemm(
            p.m,
            p.n,
            p.k,
            p.dst,
            p.dst_cs as isize,
            p.dst_rs as isize,
            accumulate,
            p.lhs,
            p.lhs_cs as isize,
            p.lhs_rs as isize,
            p.rhs,
            p.rhs_cs as isize,
            p.rhs_rs as isize,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            parallelism,
        )
    };
    let result = p.m * p.n;
    let parts = threads.min(p.k / SPLIT_K_MIN_DEPTH);
    if threads == 1 || result >= THREADED_RESULT_MIN || result * p.k < SPLIT_K_MIN_MACS || parts < 2 {
        let threaded = threads > 1 && result >= THREADED_RESULT_MIN;
        one(p, accumulate, if threaded { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None });
        return;
    }
    // Split-K: slice `s` of the contraction into partial block `s - 1` (row-major), slice 0
    // into `dst` itself; the blocks are added to `dst` once all are done.
    let depth = p.k.div_ceil(parts);
    let mut partial = vec![T::ZERO; (parts - 1) * result];
    let blocks = partial.as_mut_ptr();
    let slice = |s: usize| {
        let k0 = s * depth;
        let mut q = p;
        q.k = depth.min(p.k - k0);
        // SAFETY: `k0 < k`, so both offsets stay inside the operands.
        q.lhs = unsafe { p.lhs.offset(k0 as isize * p.lhs_cs as isize) };
        q.rhs = unsafe { p.rhs.offset(k0 as isize * p.rhs_rs as isize) };
        if s > 0 {
            // SAFETY: block `s - 1` of `parts - 1` blocks of `result` elements.
            q.dst = unsafe { blocks.add((s - 1) * result) };
            (q.dst_rs, q.dst_cs) = (p.n as i64, 1);
        }
        q
    };
    let slices: Vec<Product<T>> = (0..parts).map(slice).collect();
    rayon::in_place_scope(|scope| {
        for &q in &slices[1..] {
            scope.spawn(move |_| one(q, false, gemm::Parallelism::None));
        }
        one(slices[0], accumulate, gemm::Parallelism::None);
    });
    for b in partial.chunks_exact(result) {
        for i in 0..p.m {
            for j in 0..p.n {
                // SAFETY: entry (i, j) of `dst`, per the caller.
                let d = unsafe { p.dst.offset(i as isize * p.dst_rs as isize + j as isize * p.dst_cs as isize) };
                unsafe { *d = (*d).add(b[i * p.n + j]) };
            }
        }
    }
}

/// The largest magnitude of the `rows × cols` matrix at `p` (row and column strides `rs`, `cs`)
/// as `f64`, and whether every element is finite: one pass, over contiguous rows or columns
/// where the strides allow (`x - x` is NaN exactly for infinities and NaN, so a running sum of
/// it flags them without a branch).
///
/// # Safety
/// `p` with the strides must address `rows × cols` readable elements.
// `x - x` is deliberate: zero for every finite `x`, NaN for infinities and NaN.
#[allow(clippy::eq_op)]
unsafe fn scan<T: GemmScalar>(p: *const T, rows: usize, cols: usize, rs: i64, cs: i64) -> (f64, bool) {
    let (mut max, mut poison) = (0.0f64, 0.0f64);
    let mut line = |start: *const T, len: usize, step: i64| {
        if step == 1 {
            // SAFETY: `len` contiguous elements from `start`, per the caller.
            let row = unsafe { std::slice::from_raw_parts(start, len) };
            // Eight independent lanes, so the loop vectorizes.
            let (mut lane_max, mut lane_poison) = ([0.0f64; 8], [0.0f64; 8]);
            let chunks = row.chunks_exact(8);
            for &x in chunks.remainder() {
                let x = x.to_f64();
                poison += x - x;
                max = max.max(x.abs());
            }
            for c in chunks {
                for k in 0..8 {
                    let x = c[k].to_f64();
                    lane_poison[k] += x - x;
                    lane_max[k] = lane_max[k].max(x.abs());
                }
            }
            for k in 0..8 {
                poison += lane_poison[k];
                max = max.max(lane_max[k]);
            }
        } else {
            for k in 0..len {
                // SAFETY: inside the matrix, per the caller.
                let x = unsafe { *start.offset(k as isize * step as isize) }.to_f64();
                poison += x - x;
                max = max.max(x.abs());
            }
        }
    };
    if cs == 1 || rs != 1 {
        for i in 0..rows {
            line(unsafe { p.offset(i as isize * rs as isize) }, cols, cs);
        }
    } else {
        for j in 0..cols {
            line(unsafe { p.offset(j as isize * cs as isize) }, rows, rs);
        }
    }
    (max, poison == 0.0)
}

/// The element types the GEMM serves.
pub trait GemmScalar: Copy + 'static {
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// The largest finite value, as `f64`.
    const MAX_F64: f64;
    /// `self + other`, rounded once (never fused).
    fn add(self, other: Self) -> Self;
    /// `self · other`, rounded once (never fused).
    fn mul(self, other: Self) -> Self;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// The value as `f64`.
    fn to_f64(self) -> f64;
}

macro_rules! gemm_scalar {
    ($t:ty) => {
        impl GemmScalar for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const MAX_F64: f64 = <$t>::MAX as f64;
            fn add(self, other: $t) -> $t {
                self + other
            }
            fn mul(self, other: $t) -> $t {
                self * other
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    };
}

gemm_scalar!(f32);
gemm_scalar!(f64);

#[cfg(test)]
mod tests {
    use super::*;

    /// `m×k · k×n` of small integers (every order sums them exactly) through the runtime GEMM
    /// on `threads` threads, into a destination with a row stride of `n + 3` holding 1s
    /// (`accumulate`: added to), against the plain loops.
    fn product(
        m: usize,
        n: usize,
        k: usize,
        threads: i32,
        accumulate: bool,
        poison: Option<f64>,
    ) -> (Vec<f64>, Vec<f64>) {
        let lhs: Vec<f64> = (0..m * k).map(|i| ((i * 7 + 3) % 7) as f64 - 3.0).collect();
        let mut rhs: Vec<f64> = (0..k * n).map(|i| ((i * 5 + 1) % 5) as f64 - 2.0).collect();
        if let Some(p) = poison {
            rhs[k / 2 * n] = p; // row k/2, column 0: in the second slice of a split product
        }
        let ld = n + 3;
        let mut dst = vec![1.0; m * ld];
        // SAFETY: the strides address the vectors above.
        unsafe {
            gemm::<f64>(
                m as i64,
                n as i64,
                k as i64,
                dst.as_mut_ptr(),
                ld as i64,
                1,
                accumulate as i32,
                lhs.as_ptr(),
                k as i64,
                1,
                rhs.as_ptr(),
                n as i64,
                1,
                threads,
            )
        };
        let mut want = vec![1.0; m * ld];
        for i in 0..m {
            for j in 0..n {
                let init = if accumulate { 1.0 } else { 0.0 };
                want[i * ld + j] = (0..k).fold(init, |acc, kk| acc + lhs[i * k + kk] * rhs[kk * n + j]);
            }
        }
        (dst, want)
    }

    #[test]
    fn split_and_threaded_products_equal_the_fold() {
        // Split-K (a small result, 2^20 multiply-adds or more), the threaded GEMM (a large
        // result), and one thread; accumulating and not.
        for (m, n, k) in [(8, 8, 40_000), (3, 5, 100_000), (130, 130, 64), (50, 50, 2000)] {
            assert!(m * n < THREADED_RESULT_MIN || m * n * k < SPLIT_K_MIN_MACS || (m, n) == (130, 130));
            for threads in [1, 2, 3] {
                for accumulate in [false, true] {
                    let (got, want) = product(m, n, k, threads, accumulate, None);
                    assert_eq!(got, want, "{m}x{k}.{k}x{n}, {threads} threads, accumulate {accumulate}");
                }
            }
        }
    }

    #[test]
    fn a_split_product_meeting_infinity_or_nan_runs_in_the_fold_s_order() {
        for p in [f64::INFINITY, f64::NAN] {
            let (got, want) = product(8, 8, 40_000, 2, true, Some(p));
            let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
            assert!(got.iter().zip(&want).all(|(&a, &b)| same(a, b)), "{p}");
        }
    }
}
