//! Data in and out: Rust vectors, `ndarray` arrays and `.npy` files.

use std::path::Path;
use std::rc::Rc;

use strata_ir::Interval;
use strata_runtime::{Column, Data, Tensor};

use crate::array::{value_type, Array, Place};
use crate::dtype::DType;
use crate::error::{ArrayError, Result};

/// A Rust element type an array can hold.
pub trait Element: Copy + 'static {
    /// The array dtype.
    const DTYPE: DType;
    /// A column holding `v`.
    fn column(v: Vec<Self>) -> Column;
    /// The values of a column of this type.
    fn values(c: &Column) -> Option<&[Self]>;
}

macro_rules! element {
    ($t:ty, $s:ident) => {
        impl Element for $t {
            const DTYPE: DType = strata_ir::Scalar::$s;
            fn column(v: Vec<Self>) -> Column {
                Column::$s(v)
            }
            fn values(c: &Column) -> Option<&[Self]> {
                match c {
                    Column::$s(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
element!(bool, Bool);
element!(i8, I8);
element!(i16, I16);
element!(i32, I32);
element!(i64, I64);
element!(u8, U8);
element!(u16, U16);
element!(u32, U32);
element!(u64, U64);
element!(f32, F32);
element!(f64, F64);
element!(num_complex::Complex32, C64);
element!(num_complex::Complex64, C128);

impl Array {
    /// An array of `shape` holding `data` in row-major (C) order, on the host.
    pub fn from_vec<T: Element>(shape: &[usize], data: Vec<T>) -> Result<Array> {
        let n: usize = shape.iter().product();
        if data.len() != n {
            return Err(ArrayError::Data(format!(
                "from_vec: shape {shape:?} holds {n} elements, but {} were given",
                data.len()
            )));
        }
        Array::from_column(shape, T::column(data), Place::host())
    }

    /// An array of `shape` at `place` from this rank's part of it, row-major: its block
    /// ([`crate::spmd::block_rows`]) for a team of a joined job, else the whole array.
    pub fn from_block_vec<T: Element>(shape: &[usize], block: Vec<T>, place: &Place) -> Result<Array> {
        let Some(rows) = crate::spmd::block_rows(place, shape) else {
            let n: usize = shape.iter().product();
            if block.len() != n {
                return Err(ArrayError::Data(format!(
                    "from_block_vec: shape {shape:?} holds {n} elements, but {} were given",
                    block.len()
                )));
            }
            return Array::from_column(shape, T::column(block), place.clone());
        };
        let row: usize = shape[1..].iter().product();
        if block.len() != rows.len() * row {
            return Err(ArrayError::Data(format!(
                "from_block_vec: rows {}..{} of shape {shape:?} hold {} elements, but {} were given",
                rows.start,
                rows.end,
                rows.len() * row,
                block.len()
            )));
        }
        let mut ty = value_type(shape, T::DTYPE, place);
        ty.levels[0].interval = Interval::new(rows.start as i64, rows.end as i64);
        Ok(Array::from_block(Tensor { ty, data: Data::Scalars(T::column(block)), present: None }, shape, place.clone()))
    }

    /// A 0-d array.
    pub fn scalar<T: Element>(v: T) -> Array {
        Array::from_vec(&[], vec![v]).expect("one element for shape []")
    }

    pub(crate) fn from_column(shape: &[usize], col: Column, place: Place) -> Result<Array> {
        let ty = value_type(shape, col.scalar(), &place);
        Array::from_tensor(Tensor { ty, data: Data::Scalars(col), present: None }, place)
    }

    /// Copies an `ndarray` array (any layout) onto the host.
    pub fn from_ndarray<T: Element, S: ndarray::Data<Elem = T>, D: ndarray::Dimension>(
        a: &ndarray::ArrayBase<S, D>,
    ) -> Array {
        // One copy of a standard-layout block; an element walk only for other strides.
        let data: Vec<T> = a.as_slice().map_or_else(|| a.iter().copied().collect(), <[T]>::to_vec);
        Array::from_vec(a.shape(), data).expect("an ndarray's length matches its shape")
    }

    /// Evaluates the array and copies it into an `ndarray` array; the dtype must be `T`'s.
    pub fn to_ndarray<T: Element>(&self) -> Result<ndarray::ArrayD<T>> {
        let v = self.to_vec::<T>()?;
        Ok(ndarray::ArrayD::from_shape_vec(self.shape().to_vec(), v).expect("the value matches the shape"))
    }

    /// Evaluates the array and returns its elements in row-major order; the dtype must be
    /// `T`'s. Under [`crate::spmd`], a team array is gathered on every rank (a collective call).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let t = self.eval_whole()?;
        column_values(self, &t)
    }

    /// This rank's block of a team array under [`crate::spmd`] (its rows
    /// [`Array::local_rows`] of the first axis, row-major), else the whole array.
    pub fn local_vec<T: Element>(&self) -> Result<Vec<T>> {
        let t = self.eval()?;
        column_values(self, &t)
    }

    /// The rows of the first axis this rank holds: a team array's block under
    /// [`crate::spmd`], else every row.
    pub fn local_rows(&self) -> std::ops::Range<usize> {
        match crate::spmd::owned(self) {
            Some(iv) => iv.start as usize..iv.stop as usize,
            None => 0..self.shape().first().copied().unwrap_or(1),
        }
    }

    /// The whole value (gathered from the ranks for a team array under [`crate::spmd`]: a
    /// collective call), shared with the array: values never change once computed.
    pub fn eval_whole(&self) -> Result<Rc<Tensor>> {
        let t = self.eval()?;
        match crate::spmd::owned(self) {
            Some(_) => Ok(Rc::new(crate::spmd::gather_whole(self, &t)?)),
            None => Ok(t),
        }
    }
}

/// The elements of `t` (the value of `x`) as `T`s.
fn column_values<T: Element>(x: &Array, t: &Tensor) -> Result<Vec<T>> {
    let Data::Scalars(c) = &t.data else { unreachable!("arrays hold scalars") };
    T::values(c).map(<[T]>::to_vec).ok_or_else(|| {
        ArrayError::Data(format!(
            "to_vec: the array's dtype is {}, not {}",
            x.dtype().numpy_name(),
            T::DTYPE.numpy_name()
        ))
    })
}

impl Array {
    /// Reads a `.npy` file (any dtype Strata has, C or Fortran order) onto the host.
    pub fn from_npy(path: &Path) -> Result<Array> {
        Array::from_npy_on(path, &Place::host())
    }

    /// Reads a `.npy` file into an array living at `place`. On a team it is block-partitioned
    /// along its first axis; under [`crate::spmd`] each rank reads only its rows, at their byte
    /// offset in the file (C order).
    pub fn from_npy_on(path: &Path, place: &Place) -> Result<Array> {
        let file = std::fs::File::open(path)
            .map_err(|e| ArrayError::Data(format!("cannot read `{}`: {e}", path.display())))?;
        let npy = npyz::NpyFile::new(std::io::BufReader::new(file))
            .map_err(|e| ArrayError::Data(format!("`{}` is not a .npy file: {e}", path.display())))?;
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let descr = npy.dtype().descr();
        let Some(dtype) = strata_runtime::npy::scalar_of_descr(descr.trim_matches(['\'', '"'])) else {
            return Err(ArrayError::Data(format!(
                "`{}` holds dtype `{descr}`, which Strata arrays do not support",
                path.display()
            )));
        };
        if place.team.is_some() && shape.is_empty() {
            return Err(ArrayError::Data(format!(
                "`{}` holds a 0-d array, which is not partitioned over a team (read it onto the host)",
                path.display()
            )));
        }
        let ty = value_type(&shape, dtype, place);
        if let Some(rows) = crate::spmd::block(place, &shape) {
            let t = crate::spmd::read_rows(path, &ty, rows)?;
            return Ok(Array::from_block(t, &shape, place.clone()));
        }
        let t = strata_runtime::npy::read_value(path, "array", &ty).map_err(|e| ArrayError::Data(e.to_string()))?;
        Array::from_tensor(t, place.clone())
    }

    /// Evaluates the array and writes it as a `.npy` file (through a temporary file, so a
    /// failure leaves any existing file as it was).
    /// Under [`crate::spmd`] every rank calls it: a team array's ranks write their blocks into
    /// the one file (renamed into place when all have), a host array is written by rank 0.
    pub fn to_npy(&self, path: &Path) -> Result<()> {
        let t = self.eval()?;
        if crate::spmd::comm().is_some() {
            return crate::spmd::write_npy(self, &t, path);
        }
        strata_runtime::npy::write_value(path, "array", &t).map_err(|e| ArrayError::Data(e.to_string()))
    }

    /// Evaluates the array: traces the program computing it, compiles it (or finds it in the
    /// cache) and runs it. The value is kept, so evaluating again is free and later programs
    /// read it as an input.
    pub fn eval(&self) -> Result<Rc<Tensor>> {
        if let Some(t) = self.0.value.borrow().as_ref() {
            return Ok(t.clone());
        }
        let walk = crate::trace::walk(self);
        let kept = walk.kept.clone();
        let mut values = crate::engine::run(walk)?.into_iter();
        let mut t = values.next().expect("the root's value");
        t.ty = value_type(self.shape(), self.dtype(), self.place());
        if let Some(rows) = crate::spmd::owned(self) {
            t.ty.levels[0].interval = rows;
        }
        let t = Rc::new(t);
        *self.0.value.borrow_mut() = Some(t.clone());
        for (a, mut v) in kept.iter().zip(values) {
            v.ty = value_type(a.shape(), a.dtype(), a.place());
            *a.0.value.borrow_mut() = Some(Rc::new(v));
            a.forget_operation();
        }
        self.forget_operation();
        Ok(t)
    }

    /// The Strata program that computes the array (for inspection).
    ///
    /// # Errors
    /// As [`Array::eval`], when the front end traced an op the IR refuses; `Invalid` where the
    /// array holds its values already (no program computes it).
    pub fn program_text(&self) -> Result<String> {
        let walk = crate::trace::walk(self);
        if walk.is_empty() {
            let message = "the array holds its values: no program computes it".into();
            return Err(crate::ArrayError::Invalid { op: "program_text", message });
        }
        Ok(walk.build()?.module.to_string())
    }
}
