//! [`ColumnRef`]: a read-only view of a column's values — a [`Column`]'s, or memory another
//! owner keeps alive and unchanged (a numpy array's buffer, read in place by native code).
//! Unlike a `Vec` built over foreign memory it claims no ownership: nothing can grow, write or
//! free it.

use std::marker::PhantomData;

use strata_ir::Scalar;

use crate::{Column, Sv};

/// An element type a column holds (`i64` as `int64`; `index` columns are viewed with
/// [`ColumnRef::with_scalar`]).
pub trait ColumnElement: Copy + 'static {
    /// Its scalar type.
    const SCALAR: Scalar;
}

macro_rules! elements {
    ($($t:ty => $s:ident),*) => {
        $(impl ColumnElement for $t {
            const SCALAR: Scalar = Scalar::$s;
        })*
    };
}
elements!(bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32,
          u64 => U64, f32 => F32, f64 => F64, num_complex::Complex32 => C64, num_complex::Complex64 => C128);

/// A read-only view of `len` values of type `scalar` that stay valid and unchanged for `'a`.
#[derive(Clone, Copy, Debug)]
pub struct ColumnRef<'a> {
    scalar: Scalar,
    ptr: *const u8,
    len: usize,
    _values: PhantomData<&'a [u8]>,
}

// SAFETY: a `ColumnRef` is a shared slice (`&'a [T]`), which is `Send` and `Sync` for the
// `Copy` element types a column holds.
unsafe impl Send for ColumnRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for ColumnRef<'_> {}

impl<'a> ColumnRef<'a> {
    /// The values of `c`.
    pub fn of(c: &'a Column) -> ColumnRef<'a> {
        ColumnRef { scalar: c.scalar(), ptr: c.as_ptr().cast(), len: c.len(), _values: PhantomData }
    }

    /// The values of `s`.
    pub fn from_slice<T: ColumnElement>(s: &'a [T]) -> ColumnRef<'a> {
        ColumnRef::with_scalar(s, T::SCALAR)
    }

    /// The values of `s` as `scalar`, which must have `T`'s layout (`index` over `i64`).
    ///
    /// # Panics
    /// When `scalar` does not have `T`'s size.
    pub fn with_scalar<T: ColumnElement>(s: &'a [T], scalar: Scalar) -> ColumnRef<'a> {
        assert_eq!(scalar.size_bytes(), std::mem::size_of::<T>(), "{scalar} viewed over {}", T::SCALAR);
        ColumnRef { scalar, ptr: s.as_ptr().cast(), len: s.len(), _values: PhantomData }
    }

    /// The element type.
    pub fn scalar(&self) -> Scalar {
        self.scalar
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first value (for native code, which only reads it).
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        self.ptr.cast()
    }

    /// The values as a slice of `T`, when `T` is the element type.
    pub fn as_slice<T: ColumnElement>(&self) -> Option<&'a [T]> {
        let same = T::SCALAR == self.scalar || (T::SCALAR == Scalar::I64 && self.scalar == Scalar::Index);
        // SAFETY: the view was made from a `&'a [T]` of this element type and length.
        same.then(|| unsafe { std::slice::from_raw_parts(self.ptr.cast::<T>(), self.len) })
    }

    /// Value `i`.
    ///
    /// # Panics
    /// When `i` is out of range.
    pub fn get(&self, i: usize) -> Sv {
        macro_rules! at {
            ($t:ty, $v:ident) => {
                Sv::$v(self.as_slice::<$t>().expect("the element type")[i])
            };
        }
        match self.scalar {
            Scalar::Bool => at!(bool, Bool),
            Scalar::I8 => at!(i8, I8),
            Scalar::I16 => at!(i16, I16),
            Scalar::I32 => at!(i32, I32),
            Scalar::I64 => at!(i64, I64),
            Scalar::Index => at!(i64, Index),
            Scalar::U8 => at!(u8, U8),
            Scalar::U16 => at!(u16, U16),
            Scalar::U32 => at!(u32, U32),
            Scalar::U64 => at!(u64, U64),
            Scalar::F32 => at!(f32, F32),
            Scalar::F64 => at!(f64, F64),
            Scalar::C64 => at!(num_complex::Complex32, C64),
            Scalar::C128 => at!(num_complex::Complex64, C128),
        }
    }

    /// The values copied into a column.
    pub fn to_column(&self) -> Column {
        Column::from_fn(self.scalar, self.len, |i| self.get(i))
    }
}

/// A writable view of `len` values of type `scalar` that another owner lends for writing for
/// `'a` (a caller's array a program's `out` parameter writes in place). Like a raw pointer
/// with a lifetime, it may be copied: the lender guarantees that nothing else reads or writes
/// the memory while a run writes it.
#[derive(Clone, Copy, Debug)]
pub struct ColumnMut<'a> {
    /// The same memory, read-only (its pointer made from the `&'a mut` slice).
    view: ColumnRef<'a>,
}

impl<'a> ColumnMut<'a> {
    /// The values of `s`, lent for writing.
    pub fn from_slice<T: ColumnElement>(s: &'a mut [T]) -> ColumnMut<'a> {
        ColumnMut::with_scalar(s, T::SCALAR)
    }

    /// The values of `s` as `scalar`, which must have `T`'s layout (`index` over `i64`).
    ///
    /// # Panics
    /// When `scalar` does not have `T`'s size.
    pub fn with_scalar<T: ColumnElement>(s: &'a mut [T], scalar: Scalar) -> ColumnMut<'a> {
        assert_eq!(scalar.size_bytes(), std::mem::size_of::<T>(), "{scalar} viewed over {}", T::SCALAR);
        // The pointer keeps the `&mut` slice's provenance, so writing through it is allowed.
        ColumnMut { view: ColumnRef { scalar, ptr: s.as_mut_ptr().cast(), len: s.len(), _values: PhantomData } }
    }

    /// The address of the first value (for native code, which writes it).
    pub fn as_mut_ptr(&self) -> *mut std::ffi::c_void {
        self.view.as_ptr().cast_mut()
    }

    /// The values, read-only (element type and length included).
    pub fn as_ref(&self) -> ColumnRef<'a> {
        self.view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_reads_what_it_views_and_copies_it() {
        let v = [1.5f64, -2.0, 3.25];
        let r = ColumnRef::from_slice(&v);
        assert_eq!((r.scalar(), r.len()), (Scalar::F64, 3));
        assert_eq!(r.get(1), Sv::F64(-2.0));
        assert_eq!(r.as_slice::<f64>(), Some(&v[..]));
        assert_eq!(r.as_slice::<i64>(), None);
        assert_eq!(r.to_column(), Column::F64(v.to_vec()));
        let ix = [4i64, 5];
        let r = ColumnRef::with_scalar(&ix, Scalar::Index);
        assert_eq!((r.get(0), r.as_slice::<i64>()), (Sv::Index(4), Some(&ix[..])));
        let c = Column::I32(vec![7, 8]);
        assert_eq!(ColumnRef::of(&c).get(1), Sv::I32(8));
    }
}
