//! Functions the generated code calls back into: the table every compiled entry receives.
//!
//! The table holds the blocked GEMM used for matrix-product kernels ([`crate::matmul`]): the
//! `gemm` crate's AVX-512/AVX2 micro-kernels with cache blocking and packing, parallel over
//! `threads` workers (the crate's rayon workers over a large result; the kernels' own OpenMP
//! threads over the slices of a split contraction, [`ParallelFor`]); and the allocator of
//! buffers whose length only the run knows (a sparse result's coordinates and values,
//! [`crate::kernel::CompressedOut`]). The C side declares the same layout as `strata_rt` (see
//! `emit_c`'s prelude); both must change together.

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
    parallel: Option<ParallelFor>,
);

/// Runs `f(ctx, 0) … f(ctx, n - 1)`, each once, on up to `n` threads, returning when all are
/// done: the C prelude's `strata_parallel_for`, which runs them on the OpenMP threads the
/// program's kernels run on. A split product ([`SPLIT_K_MIN_MACS`]) runs its slices there
/// rather than on rayon's threads: after a kernel, OpenMP's idle workers spin on the cores for
/// a while (GCC's default wait policy), and rayon's workers then share the cores with them
/// (`X.T @ X` of a 2,000 × 50 `X` after an elementwise kernel, 2 threads: 319 µs against 214 µs
/// with OpenMP's spinning cut short).
pub type ParallelFor =
    unsafe extern "C" fn(n: i64, f: unsafe extern "C" fn(*mut std::ffi::c_void, i64), ctx: *mut std::ffi::c_void);

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
    parallel: Option<ParallelFor>,
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
    // `X.T @ X` (and `X @ X.T`): the right operand is the left one transposed, scanned already.
    let transposed = std::ptr::eq(lhs, rhs) && mu == nu && (lhs_rs, lhs_cs) == (rhs_cs, rhs_rs);
    let (rhs_max, rhs_finite) =
        if transposed { (lhs_max, lhs_finite) } else { unsafe { scan(rhs, ku, nu, rhs_rs, rhs_cs) } };
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
            parallel,
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

/// A product whose contraction is at least this many times its result's longer side splits
/// the contraction too, whatever its result's size (`X.T @ X` of a 2,000×200 `X`): the gemm
/// crate's own threads divide the result, which for such shapes gained nothing. Measured on 2
/// threads (AVX-512, alone in the process), split against the crate's threads:
/// 200×2000·2000×200 1.69 against 3.91 ms, 400×2000·2000×400 7.0 against 10.1 ms.
const SPLIT_K_DEPTH_RATIO: usize = 4;

/// The most elements the partial results of a split product may hold together (32 MiB of
/// `f64`); a deeper split of a larger result leaves the threading to the gemm crate.
const SPLIT_K_MAX_PARTIAL: usize = 1 << 22;

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

/// `dst = (accumulate ? dst : 0) + p.lhs · p.rhs` by the gemm crate (`parallelism`: its own
/// threads over the result).
///
/// # Safety
/// As [`blocked`].
unsafe fn one<T: GemmScalar>(p: Product<T>, accumulate: bool, parallelism: gemm::Parallelism) {
    unsafe {
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
    }
}

/// The slices of a split product, for [`run_slice`].
struct Split<T> {
    slices: Vec<Product<T>>,
    accumulate: bool,
}

/// Slice `s` of the split product at `ctx` (a [`Split`]): slice 0 into `dst` (added to it when
/// accumulating), the others into their partial blocks.
unsafe extern "C" fn run_slice<T: GemmScalar>(ctx: *mut std::ffi::c_void, s: i64) {
    // SAFETY: `blocked` passes its `Split`, alive until every slice has run.
    let split = unsafe { &*(ctx as *const Split<T>) };
    let s = s as usize;
    // SAFETY: the slices address the product's operands and disjoint results.
    unsafe { one(split.slices[s], s == 0 && split.accumulate, gemm::Parallelism::None) }
}

/// `dst = (accumulate ? dst : 0) + lhs · rhs` by the blocked GEMM, on `threads` threads where
/// the shape pays for them ([`THREADED_RESULT_MIN`], [`SPLIT_K_MIN_MACS`]); a split product's
/// slices run through `parallel` where the caller gives one, else on rayon's threads.
///
/// # Safety
/// The pointers and strides of `p` address its matrices; `dst` overlaps neither operand;
/// `parallel` runs each index once and returns when all have run.
unsafe fn blocked<T: GemmScalar>(p: Product<T>, accumulate: bool, threads: usize, parallel: Option<ParallelFor>) {
    let result = p.m * p.n;
    let parts = threads.min(p.k / SPLIT_K_MIN_DEPTH);
    let deep = p.k >= SPLIT_K_DEPTH_RATIO * p.m.max(p.n) && (parts.max(1) - 1) * result <= SPLIT_K_MAX_PARTIAL;
    if threads == 1 || (result >= THREADED_RESULT_MIN && !deep) || result * p.k < SPLIT_K_MIN_MACS || parts < 2 {
        let threaded = threads > 1 && result >= THREADED_RESULT_MIN;
        // SAFETY: the caller's.
        unsafe {
            one(p, accumulate, if threaded { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None })
        };
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
    let split = Split { slices: (0..parts).map(slice).collect(), accumulate };
    match parallel {
        // SAFETY: `split` outlives the call, which returns once every slice has run.
        Some(run) => unsafe { run(parts as i64, run_slice::<T>, &split as *const Split<T> as *mut std::ffi::c_void) },
        None => rayon::in_place_scope(|scope| {
            let ctx = &split as *const Split<T> as usize;
            for s in 1..parts {
                // SAFETY: as above; the scope ends before `split` does.
                scope.spawn(move |_| unsafe { run_slice::<T>(ctx as *mut std::ffi::c_void, s as i64) });
            }
            // SAFETY: as above.
            unsafe { run_slice::<T>(ctx as *mut std::ffi::c_void, 0) };
        }),
    }
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
/// as `f64`, and whether every element is finite: one pass, over the whole block where the
/// matrix is one contiguous run (a row-major or column-major operand, `X.T` of a contiguous
/// `X`), else over its contiguous rows or columns where the strides allow.
///
/// # Safety
/// `p` with the strides must address `rows × cols` readable elements.
unsafe fn scan<T: GemmScalar>(p: *const T, rows: usize, cols: usize, rs: i64, cs: i64) -> (f64, bool) {
    if rows == 0 || cols == 0 {
        return (0.0, true);
    }
    let run = |start: *const T, len: usize| {
        // SAFETY: `len` contiguous elements from `start`, per the caller.
        max_magnitude_bits(unsafe { std::slice::from_raw_parts(start, len) })
    };
    let whole = (cs == 1 && (rows == 1 || rs == cols as i64)) || (rs == 1 && (cols == 1 || cs == rows as i64));
    let bits = if whole {
        run(p, rows * cols)
    } else {
        // Lines along the unit stride where there is one, else along the rows element by element.
        let (lines, len, outer, inner) = if cs == 1 || rs != 1 { (rows, cols, rs, cs) } else { (cols, rows, cs, rs) };
        (0..lines).fold(0, |m, i| {
            // SAFETY: line `i` of the matrix, per the caller.
            let start = unsafe { p.offset(i as isize * outer as isize) };
            m.max(match inner {
                1 => run(start, len),
                _ => (0..len)
                    .fold(0, |m, k| m.max(unsafe { *start.offset(k as isize * inner as isize) }.magnitude_bits())),
            })
        })
    };
    (T::magnitude(bits), bits < T::INFINITY_BITS)
}

/// The largest of `v`'s [`GemmScalar::magnitude_bits`]: a plain integer maximum, which vectorizes
/// (AVX2 or AVX-512 where the CPU has them), where a float maximum would need NaN handling.
fn max_magnitude_bits<T: GemmScalar>(v: &[T]) -> u64 {
    #[inline(always)]
    fn fold<T: GemmScalar>(v: &[T]) -> u64 {
        v.iter().fold(0, |m, &x| m.max(x.magnitude_bits()))
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        unsafe fn fold_avx512<T: GemmScalar>(v: &[T]) -> u64 {
            fold(v)
        }
        #[target_feature(enable = "avx2")]
        unsafe fn fold_avx2<T: GemmScalar>(v: &[T]) -> u64 {
            fold(v)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { fold_avx512(v) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { fold_avx2(v) };
        }
    }
    fold(v)
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
    /// The bits of `|self|`: ordered as the magnitudes are, infinities and NaN above every
    /// finite value.
    fn magnitude_bits(self) -> u64;
    /// [`GemmScalar::magnitude_bits`] of infinity: a value is finite exactly below it.
    const INFINITY_BITS: u64;
    /// The magnitude whose bits are `bits`, as `f64`.
    fn magnitude(bits: u64) -> f64;
}

macro_rules! gemm_scalar {
    ($t:ty, $bits:ty) => {
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
            fn magnitude_bits(self) -> u64 {
                u64::from(self.to_bits() & !(1 << (<$bits>::BITS - 1)))
            }
            const INFINITY_BITS: u64 = <$t>::INFINITY.to_bits() as u64;
            fn magnitude(bits: u64) -> f64 {
                <$t>::from_bits(bits as $bits) as f64
            }
        }
    };
}

gemm_scalar!(f32, u32);
gemm_scalar!(f64, u64);

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
        parallel: Option<ParallelFor>,
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
                parallel,
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

    /// A [`ParallelFor`] as the C prelude's, on scoped threads: every index at once.
    unsafe extern "C" fn on_threads(
        n: i64,
        f: unsafe extern "C" fn(*mut std::ffi::c_void, i64),
        ctx: *mut std::ffi::c_void,
    ) {
        let ctx = ctx as usize;
        std::thread::scope(|scope| {
            for i in 0..n {
                // SAFETY: the runtime's contract: `f` may run its indices concurrently.
                scope.spawn(move || unsafe { f(ctx as *mut std::ffi::c_void, i) });
            }
        });
    }

    #[test]
    fn split_and_threaded_products_equal_the_fold() {
        // Split-K (a small result, 2^20 multiply-adds or more), the threaded GEMM (a large
        // result), and one thread; accumulating and not.
        // A large result with a deep contraction splits too: (130, 130, 600).
        for (m, n, k) in [(8, 8, 40_000), (3, 5, 100_000), (130, 130, 64), (50, 50, 2000), (130, 130, 600)] {
            assert!(m * n < THREADED_RESULT_MIN || m * n * k < SPLIT_K_MIN_MACS || (m, n) == (130, 130));
            for threads in [1, 2, 3] {
                for accumulate in [false, true] {
                    for parallel in [None, Some(on_threads as ParallelFor)] {
                        let (got, want) = product(m, n, k, threads, accumulate, None, parallel);
                        let how = if parallel.is_some() { "the caller's threads" } else { "rayon" };
                        assert_eq!(got, want, "{m}x{k}.{k}x{n}, {threads} threads ({how}), accumulate {accumulate}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_split_product_meeting_infinity_or_nan_runs_in_the_fold_s_order() {
        for (p, parallel) in [(f64::INFINITY, None), (f64::NAN, None), (f64::NAN, Some(on_threads as ParallelFor))] {
            let (got, want) = product(8, 8, 40_000, 2, true, Some(p), parallel);
            let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
            assert!(got.iter().zip(&want).all(|(&a, &b)| same(a, b)), "{p}");
        }
    }

    /// `scan` of an `r×c` view of `v` at strides `(rs, cs)` against the plain walk over its
    /// elements.
    fn scanned<T: GemmScalar + Into<f64>>(v: &[T], r: usize, c: usize, rs: i64, cs: i64) {
        let mut max = 0.0f64;
        let mut finite = true;
        for i in 0..r {
            for j in 0..c {
                let x: f64 = v[i * rs as usize + j * cs as usize].into();
                finite &= x.is_finite();
                max = max.max(x.abs());
            }
        }
        // SAFETY: the strides address elements of `v` (the callers' shapes).
        let (got_max, got_finite) = unsafe { scan(v.as_ptr(), r, c, rs, cs) };
        assert_eq!(got_finite, finite, "{r}x{c} at ({rs}, {cs})");
        if finite {
            assert_eq!(got_max, max, "{r}x{c} at ({rs}, {cs})");
        }
    }

    #[test]
    fn scans_find_the_largest_magnitude_and_any_non_finite_entry_in_every_layout() {
        let mut v: Vec<f64> = (0..37 * 11).map(|i| ((i * 7919) % 1001) as f64 / 7.0 - 71.0).collect();
        // The largest magnitude is negative.
        v[200] = -1e300;
        // Whole runs (row-major, column-major, a single row or column), lines (a submatrix),
        // element walks (no unit stride), and empty matrices.
        let views = [
            (37, 11, 11, 1),
            (11, 37, 1, 11),
            (1, 407, 407, 1),
            (407, 1, 1, 407),
            (10, 5, 11, 1),
            (5, 10, 1, 11),
            (6, 5, 22, 2),
            (0, 5, 5, 1),
            (5, 0, 1, 5),
        ];
        for (r, c, rs, cs) in views {
            scanned(&v, r, c, rs, cs);
        }
        for bad in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            for at in [0, 200, 37 * 11 - 1] {
                let mut w = v.clone();
                w[at] = bad;
                for (r, c, rs, cs) in views {
                    scanned(&w, r, c, rs, cs);
                }
            }
        }
        let f: Vec<f32> = v.iter().map(|&x| (x / 1e280) as f32).collect();
        scanned(&f, 37, 11, 11, 1);
        let mut g = f.clone();
        g[5] = f32::NAN;
        scanned(&g, 11, 37, 1, 11);
    }

    #[test]
    fn a_product_of_a_matrix_with_its_transpose_sees_its_non_finite_entries() {
        // `X.T @ X` passes one buffer as both operands; its one scan must stand for both.
        let (k, m) = (300, 4);
        let mut x: Vec<f64> = (0..k * m).map(|i| (i % 5) as f64 - 2.0).collect();
        x[k * m / 2] = f64::INFINITY;
        let mut dst = vec![0.0; m * m];
        // SAFETY: `x` is k×m row-major; the left operand is its transpose, m×k.
        unsafe {
            gemm::<f64>(
                m as i64,
                m as i64,
                k as i64,
                dst.as_mut_ptr(),
                m as i64,
                1,
                0,
                x.as_ptr(),
                1,
                m as i64,
                x.as_ptr(),
                m as i64,
                1,
                1,
                None,
            )
        };
        for i in 0..m {
            for j in 0..m {
                let want = (0..k).fold(0.0, |acc, kk| acc + x[kk * m + i] * x[kk * m + j]);
                assert!(dst[i * m + j] == want || (dst[i * m + j].is_nan() && want.is_nan()), "({i}, {j})");
            }
        }
    }
}
