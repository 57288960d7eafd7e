//! Functions the generated code calls back into: the table every compiled entry receives.
//!
//! The table holds the blocked GEMM used for matrix-product kernels ([`crate::matmul`]): the
//! `gemm` crate's AVX-512/AVX2 micro-kernels with cache blocking and packing, parallel over
//! `threads` rayon workers; the allocator of buffers whose length only the run knows (a
//! sparse result's coordinates and values, [`crate::kernel::CompressedOut`]); and the size of
//! the last-level cache, above which results are written with streaming stores. The C side
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
    /// The bytes of the last-level cache one core shares ([`cache_bytes`]): results larger
    /// than this go to memory with streaming stores.
    pub cache_bytes: extern "C" fn() -> i64,
}

/// The table compiled code is called with.
pub static RUNTIME: Runtime = Runtime { gemm_f32: gemm::<f32>, gemm_f64: gemm::<f64>, alloc, cache_bytes };

/// `$STRATA_CACHE_BYTES` if set (0 streams every eligible result: the tests use it), else the
/// size of the largest data or unified cache of CPU 0 as Linux lists it in sysfs (the cache one
/// core shares: on CPUs built from several core complexes, `sysconf`'s `_SC_LEVEL3_CACHE_SIZE`
/// reports the whole socket's, eight or more times larger), else 32 MiB. Read once.
extern "C" fn cache_bytes() -> i64 {
    static BYTES: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        std::env::var("STRATA_CACHE_BYTES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .or_else(|| largest_cache("/sys/devices/system/cpu/cpu0/cache"))
            .unwrap_or(32 << 20)
    })
}

/// The largest-level data or unified cache under `dir` (sysfs `index*/{level,type,size}`).
fn largest_cache(dir: &str) -> Option<i64> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let mut best: Option<(u32, i64)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let (Some(level), Some(kind), Some(size)) =
            (read(path.join("level")), read(path.join("type")), read(path.join("size")))
        else {
            continue;
        };
        let (Ok(level), Some(digits)) = (level.parse::<u32>(), size.strip_suffix('K')) else { continue };
        let Ok(kib) = digits.parse::<i64>() else { continue };
        if kind != "Instruction" && best.is_none_or(|(l, _)| level > l) {
            best = Some((level, kib * 1024));
        }
    }
    best.map(|(_, bytes)| bytes)
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

#[cfg(test)]
mod tests {
    use super::largest_cache;

    #[test]
    fn the_largest_cache_is_the_highest_level_data_or_unified_one() {
        let dir = std::env::temp_dir().join(format!("strata-cache-{}", std::process::id()));
        for (i, (level, kind, size)) in
            [("1", "Data", "48K"), ("1", "Instruction", "32K"), ("2", "Unified", "1024K"), ("3", "Unified", "32768K")]
                .iter()
                .enumerate()
        {
            let index = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&index).unwrap();
            std::fs::write(index.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(index.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(index.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(largest_cache(dir.to_str().unwrap()), Some(32 << 20));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(largest_cache("/nonexistent/strata"), None);
    }
}
