//! The allocator Strata's binaries and Python extension use: mimalloc for small blocks, the
//! system allocator for large ones, every large block aligned to a cache line, and a pool for
//! the large workspaces of runtime kernels called in loops ([`pooled`]).
//!
//! - **Small blocks** (below [`LARGE`]) come from mimalloc: the traced nodes, walks and tables
//!   of an evaluation are many small allocations, which mimalloc serves faster than glibc
//!   (measured: the 8-element add of the array API 0.2–0.4 µs less per call).
//! - **Large blocks** (tensor columns) come from the system allocator: below 32 MiB from glibc's
//!   heap, whose freed blocks the next evaluation reuses without page faults ([`start`]); above,
//!   mapped fresh and returned to the kernel when freed, so a rank's resident memory is its data
//!   (mimalloc's segments, backed by transparent huge pages, held up to 2 MiB more per block,
//!   which at test sizes is an eighth of a block).
//! - **Aligned to a cache line.** The system allocator places large blocks 16 bytes past a page
//!   boundary (glibc serves them by `mmap` behind a 16-byte header); every 64-byte vector load
//!   of such a column then spans two cache lines: measured on the laplacian of laplacian
//!   (AVX-512), kernels ran 20–25 % slower on 16-byte-offset buffers than on aligned ones.
//!   Large blocks are therefore taken [`LINE`] bytes longer and handed out from the first
//!   cache-line boundary past the start, the block's start and owner stored just before it.
//!   Asking the system for an over-aligned block instead would lose `calloc`'s lazily zeroed
//!   pages (glibc zeroes such blocks with `memset`, touching every page at once: a zeroed
//!   32 MiB output then costs 40 ms of page faults).
//! - **Pooled.** A kernel that allocates and frees the same large workspaces on every call (a
//!   factorization's copy of its matrix, its factors and scratch) page-faults all of them afresh
//!   each time on the system allocator: `linalg.solve` of a 1024² matrix spent ~30 % of its
//!   time so. Inside [`pooled`], a thread's large blocks come from mimalloc, which keeps freed
//!   memory for the next allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use mimalloc::MiMalloc;

/// Blocks of at least this many bytes are aligned to [`LINE`] and taken from the system
/// allocator (or, inside [`pooled`], from mimalloc's pool).
pub const LARGE: usize = 1 << 16;

/// A cache line (and an AVX-512 vector).
pub const LINE: usize = 64;

/// mimalloc for small blocks, the system allocator for large ones (see the module docs).
pub struct CacheLineAligned;

thread_local! {
    /// Whether this thread's large blocks come from mimalloc's pool (inside [`pooled`]).
    static POOLED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's large blocks taken from mimalloc's pool, which keeps freed
/// memory for the next allocation: for runtime kernels that allocate and free the same large
/// workspaces on every call. Blocks allocated inside may be freed anywhere.
pub fn pooled<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the thread's setting when `f` returns or unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = POOLED.try_with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(POOLED.try_with(|p| p.replace(true)).unwrap_or(false));
    f()
}

/// From now on, this thread's large blocks come from mimalloc's pool: for the worker threads
/// of runtime kernels ([`pooled`] for a call).
pub fn pool_this_thread() {
    let _ = POOLED.try_with(|p| p.set(true));
}

/// Sets up the allocator for a process; called once at the start of a binary or the extension.
///
/// - mimalloc hands freed memory back lazily (`MADV_FREE`: the kernel takes the pages when it
///   needs them) instead of at once (`MADV_DONTNEED`, after 10 ms), so a pooled kernel called in
///   a loop finds its workspaces still mapped: measured, `linalg.eigh` of 1024² 0.80× → 0.90×
///   numpy's speed; without it the pool page-faults them afresh on calls longer than 10 ms.
/// - glibc serves large blocks below [`MMAP_THRESHOLD`] from its heap and keeps up to
///   [`TRIM_THRESHOLD`] of freed memory at the heap's top (`keep_freed_blocks`).
pub fn start() {
    /// `mi_option_purge_decommits` (mimalloc 2's `mimalloc.h`; the `v2` feature pins it).
    const PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;
    // SAFETY: sets an option mimalloc reads at each purge; any value is valid.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DECOMMITS, 0) };
    keep_freed_blocks();
}

/// Blocks of at least this many bytes are mapped fresh by glibc and unmapped when freed
/// (glibc's own ceiling for its sliding threshold on 64-bit machines).
pub const MMAP_THRESHOLD: usize = 32 << 20;

/// glibc hands the heap's top back to the kernel once this many bytes are free there (twice
/// [`MMAP_THRESHOLD`], as glibc's sliding rule sets it).
pub const TRIM_THRESHOLD: usize = 64 << 20;

/// Fixes glibc's thresholds at the values its sliding rule reaches after the first 32 MiB block
/// is freed. Left sliding, the thresholds follow the largest block freed so far: after freeing
/// 800 KB columns the heap is trimmed whenever 1.6 MB lie free at its top, which an evaluation
/// (its result, then the copy handed to numpy) does on every call, and every call page-faults
/// its outputs afresh: measured, `(a + 1.0).to_numpy()` on 2,000×50 float64 took 780 µs a call
/// in a loop (numpy: 18 µs), 46 µs with the thresholds fixed. Larger blocks are still mapped
/// fresh and unmapped when freed (the resident memory of big arrays stays their data; their
/// outputs are kept by the codegen's own pool and advised huge pages). A no-op off glibc.
fn keep_freed_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` sets a parameter glibc reads at its next allocation or free; these two
    // accept any non-negative value.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int);
    }
}

/// Makes rayon's global pool, whose threads run the parallel parts of runtime kernels (faer's
/// factorizations), with their large blocks pooled ([`pool_this_thread`]); a pool already made
/// is left as it is. Called by such kernels before their first parallel call, not at start:
/// measured, idle rayon threads made at import slowed the OpenMP kernels of a process at 2
/// threads ~2× (laplacian of laplacian 7 → 16 ms).
pub fn pool_workers() {
    static MADE: std::sync::Once = std::sync::Once::new();
    MADE.call_once(|| {
        let _ = rayon::ThreadPoolBuilder::new().start_handler(|_| pool_this_thread()).build_global();
    });
}

/// Whether a block of this layout is placed by the cache-line rule.
fn large(layout: Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= LINE
}

/// Who owns a large block: the word before its start pointer says.
const SYSTEM: usize = 0;
const POOL: usize = 1;

/// The block asked of its owner for a large `layout`: `LINE` bytes longer, aligned to 16 bytes
/// for the system allocator and to a cache line for the pool.
fn outer(layout: Layout, owner: usize) -> Layout {
    let align = if owner == POOL { LINE } else { 16 };
    // Cannot fail: the size is far below isize::MAX for any block the caller could ask for
    // (`Layout` already bounds it), and the alignment is a power of two.
    Layout::from_size_align(layout.size() + LINE, align).unwrap_or(layout)
}

/// The cache-line-aligned pointer inside the owner's block `base` (at least 16 bytes past it,
/// as `base` is 16-byte aligned), with `base` stored in the 8 bytes before it and the owner in
/// the 8 before those.
unsafe fn inner(base: *mut u8, owner: usize) -> *mut u8 {
    if base.is_null() {
        return base;
    }
    let aligned = base.add(LINE - (base as usize % LINE));
    aligned.cast::<*mut u8>().sub(1).write(base);
    aligned.cast::<usize>().sub(2).write(owner);
    aligned
}

/// The owner's block behind a pointer [`inner`] returned, and the owner.
unsafe fn base_of(ptr: *mut u8) -> (*mut u8, usize) {
    (ptr.cast::<*mut u8>().sub(1).read(), ptr.cast::<usize>().sub(2).read())
}

/// Who serves this thread's next large block.
fn owner() -> usize {
    if POOLED.try_with(Cell::get).unwrap_or(false) {
        POOL
    } else {
        SYSTEM
    }
}

// SAFETY: small blocks go to mimalloc unchanged. A large block is a block of its owner's `LINE`
// bytes longer than asked, of which the caller gets the `size` bytes from the first cache-line
// boundary strictly past its start (16 to 64 bytes in, so they fit along with the two header
// words); the header holds the owner's pointer and which owner, so `dealloc` frees it with the
// owner and the outer layout it was allocated with, since `large` and `outer` depend only on the
// size and alignment the caller passes back and on the owner.
unsafe impl GlobalAlloc for CacheLineAligned {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if large(layout) {
            match owner() {
                POOL => inner(MiMalloc.alloc(outer(layout, POOL)), POOL),
                _ => inner(System.alloc(outer(layout, SYSTEM)), SYSTEM),
            }
        } else {
            MiMalloc.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if large(layout) {
            match owner() {
                POOL => inner(MiMalloc.alloc_zeroed(outer(layout, POOL)), POOL),
                _ => inner(System.alloc_zeroed(outer(layout, SYSTEM)), SYSTEM),
            }
        } else {
            MiMalloc.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if large(layout) {
            match base_of(ptr) {
                (base, POOL) => MiMalloc.dealloc(base, outer(layout, POOL)),
                (base, _) => System.dealloc(base, outer(layout, SYSTEM)),
            }
        } else {
            MiMalloc.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(wanted) = Layout::from_size_align(new_size, layout.align()) else { return std::ptr::null_mut() };
        if !large(layout) && !large(wanted) {
            return MiMalloc.realloc(ptr, layout, new_size);
        }
        let fresh = self.alloc(wanted);
        if !fresh.is_null() {
            std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_blocks_are_aligned_and_resizing_keeps_the_content() {
        let a = CacheLineAligned;
        unsafe {
            let small = Layout::from_size_align(100, 8).unwrap();
            let p = a.alloc(small);
            p.write(7);
            // Growing past LARGE moves the block to an aligned one.
            let q = a.realloc(p, small, LARGE * 2);
            assert_eq!(q as usize % LINE, 0);
            assert_eq!(q.read(), 7);
            let big = Layout::from_size_align(LARGE * 2, 8).unwrap();
            let r = a.realloc(q, big, 50);
            assert_eq!(r.read(), 7);
            a.dealloc(r, Layout::from_size_align(50, 8).unwrap());
            let z = a.alloc_zeroed(big);
            assert_eq!(z as usize % LINE, 0);
            assert_eq!(z.add(LARGE).read(), 0);
            a.dealloc(z, big);
        }
    }

    #[test]
    fn pooled_blocks_are_aligned_zeroed_and_freed_by_their_owner_anywhere() {
        let a = CacheLineAligned;
        let big = Layout::from_size_align(LARGE * 4, 8).unwrap();
        unsafe {
            // A pooled block written, freed and asked for zeroed again reads zero.
            let w = pooled(|| a.alloc(big));
            assert_eq!(base_of(w).1, POOL);
            w.write_bytes(0xab, big.size());
            a.dealloc(w, big);
            let z = pooled(|| a.alloc_zeroed(big));
            assert_eq!(z as usize % LINE, 0);
            assert!((0..big.size()).all(|i| z.add(i).read() == 0));
            // Grown outside the pool: the content moves to a system block.
            z.write(9);
            let g = a.realloc(z, big, big.size() * 2);
            assert_eq!((g.read(), base_of(g).1), (9, SYSTEM));
            a.dealloc(g, Layout::from_size_align(big.size() * 2, 8).unwrap());
        }
        // The setting ends with the call, even when it unwinds.
        assert!(std::panic::catch_unwind(|| pooled(|| panic!("inside"))).is_err());
        assert_eq!(owner(), SYSTEM);
    }
}
