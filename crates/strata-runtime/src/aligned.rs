//! The allocator Strata's binaries use: the system allocator, with every large block aligned to
//! a cache line.
//!
//! Tensor columns are `Vec`s, which the system allocator places 16 bytes past a page boundary
//! once they are large (glibc serves them by `mmap` behind a 16-byte header). Every 64-byte
//! vector load of such a column then spans two cache lines: measured on the laplacian of
//! laplacian (AVX-512), kernels ran 20–25 % slower on 16-byte-offset buffers than on aligned
//! ones. Blocks of [`LARGE`] bytes or more are therefore taken from the system allocator
//! [`LINE`] bytes longer and handed out from the first cache-line boundary past the start, the
//! system's pointer stored just before it. Asking the system for an over-aligned block instead
//! would lose `calloc`'s lazily zeroed pages (glibc zeroes such blocks with `memset`, touching
//! every page at once: a zeroed 32 MiB output then costs 40 ms of page faults).

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of at least this many bytes are aligned to [`LINE`].
pub const LARGE: usize = 1 << 16;

/// A cache line (and an AVX-512 vector).
pub const LINE: usize = 64;

/// The system allocator with large blocks aligned to a cache line (see the module docs).
pub struct CacheLineAligned;

/// Whether a block of this layout is placed by the cache-line rule.
fn large(layout: Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= LINE
}

/// The block asked of the system for a large `layout`: `LINE` bytes longer.
fn outer(layout: Layout) -> Layout {
    // Cannot fail: the size is far below isize::MAX for any block the caller could ask for
    // (`Layout` already bounds it), and 16 is a power of two.
    Layout::from_size_align(layout.size() + LINE, 16).unwrap_or(layout)
}

/// The cache-line-aligned pointer inside the system's block `base` (at least 16 bytes past it,
/// as `base` is 16-byte aligned), with `base` stored in the 8 bytes before it.
unsafe fn inner(base: *mut u8) -> *mut u8 {
    if base.is_null() {
        return base;
    }
    let aligned = base.add(LINE - (base as usize % LINE));
    aligned.cast::<*mut u8>().sub(1).write(base);
    aligned
}

/// The system's block behind a pointer [`inner`] returned.
unsafe fn base_of(ptr: *mut u8) -> *mut u8 {
    ptr.cast::<*mut u8>().sub(1).read()
}

// SAFETY: small blocks go to `System` unchanged. A large block is a `System` block `LINE` bytes
// longer than asked, of which the caller gets the `size` bytes from the first cache-line boundary
// strictly past its start (16 to 64 bytes in, so they fit); the 8 bytes before the returned
// pointer hold the system's pointer, which `dealloc` frees with the same outer layout, since
// `large` and `outer` depend only on the size and alignment the caller passes back.
unsafe impl GlobalAlloc for CacheLineAligned {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if large(layout) {
            inner(System.alloc(outer(layout)))
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if large(layout) {
            inner(System.alloc_zeroed(outer(layout)))
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if large(layout) {
            System.dealloc(base_of(ptr), outer(layout))
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(wanted) = Layout::from_size_align(new_size, layout.align()) else { return std::ptr::null_mut() };
        if !large(layout) && !large(wanted) {
            return System.realloc(ptr, layout, new_size);
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
}
