//! The allocator Strata's binaries use: the system allocator, with every large block aligned to
//! a cache line.
//!
//! Tensor columns are `Vec`s, which the system allocator places 16 bytes past a page boundary
//! once they are large (glibc serves them by `mmap` behind a 16-byte header). Every 64-byte
//! vector load of such a column then spans two cache lines: measured on the laplacian of
//! laplacian (AVX-512), kernels ran 20–25 % slower on 16-byte-offset buffers than on aligned
//! ones. Raising the alignment of blocks of [`LARGE`] bytes or more to 64 costs nothing
//! measurable and needs no change to the columns. The rule depends only on the size, which
//! `dealloc` and `realloc` receive with the pointer, so every block is freed with the layout
//! it was allocated with.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of at least this many bytes are aligned to [`LINE`].
pub const LARGE: usize = 1 << 16;

/// A cache line (and an AVX-512 vector).
pub const LINE: usize = 64;

/// The system allocator with large blocks aligned to a cache line (see the module docs).
pub struct CacheLineAligned;

fn adjusted(layout: Layout) -> Layout {
    if layout.size() >= LARGE && layout.align() < LINE {
        // Cannot fail: LINE is a power of two and the size is unchanged.
        Layout::from_size_align(layout.size(), LINE).unwrap_or(layout)
    } else {
        layout
    }
}

// SAFETY: every method forwards to `System` with the layout `adjusted` gives, which depends only
// on the size and alignment the caller passes and is at least as strict as the caller's; a block
// is therefore always freed or resized with the layout it was allocated with.
unsafe impl GlobalAlloc for CacheLineAligned {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        System.alloc(adjusted(layout))
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        System.alloc_zeroed(adjusted(layout))
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, adjusted(layout))
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = adjusted(layout);
        let Ok(wanted) = Layout::from_size_align(new_size, layout.align()) else { return std::ptr::null_mut() };
        let new = adjusted(wanted);
        if old.align() == new.align() {
            return System.realloc(ptr, old, new_size);
        }
        // The alignment changes with the size: move the block.
        let fresh = System.alloc(new);
        if !fresh.is_null() {
            std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
            System.dealloc(ptr, old);
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
