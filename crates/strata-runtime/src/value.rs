//! Values as programs receive and return them: a logical [`Tensor`], or a sparse or ragged
//! tensor held as its storage ([`Stored`]) — so a matrix with millions of rows reaches native
//! code, and comes back from it, without a dense view ever existing.

use crate::storage::{assemble, disassemble, Storage, StorageError};
use crate::tensor::{Tensor, ValueType};

/// The most elements a dense view of a stored value may have (8 GiB of `f64`): beyond it,
/// [`Stored::to_tensor`] is an error instead of an allocation failure.
pub const DENSE_VIEW_LIMIT: usize = 1 << 30;

/// A sparse or ragged tensor as its storage, in its type's own level formats (what
/// [`assemble`] gives for the same values).
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// The tensor's type.
    pub ty: ValueType,
    /// Its buffers, in the formats of `ty`.
    pub storage: Storage,
}

impl Stored {
    /// The storage of a logical tensor.
    pub fn from_tensor(t: &Tensor) -> Stored {
        Stored { ty: t.ty.clone(), storage: assemble(t) }
    }

    /// The logical (dense) view, refused beyond [`DENSE_VIEW_LIMIT`] elements.
    pub fn to_tensor(&self) -> Result<Tensor, StorageError> {
        let n = self.ty.shape().iter().try_fold(1usize, |a, &b| a.checked_mul(b));
        match n {
            Some(n) if n <= DENSE_VIEW_LIMIT => disassemble(&self.ty, &self.storage),
            _ => Err(StorageError(format!(
                "its dense view would hold {} elements (shape {:?}); only native code runs on values held as storage this large",
                n.map_or("more than 2^64".to_string(), |n| n.to_string()),
                self.ty.shape()
            ))),
        }
    }

    /// Number of stored values.
    pub fn stored_len(&self) -> usize {
        self.storage.values.len()
    }
}

/// A program's argument or result.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A logical tensor.
    Tensor(Tensor),
    /// A sparse or ragged tensor held as its storage.
    Stored(Stored),
}

impl Value {
    /// The value's type.
    pub fn ty(&self) -> &ValueType {
        match self {
            Value::Tensor(t) => &t.ty,
            Value::Stored(s) => &s.ty,
        }
    }

    /// Where the value contradicts a static extent of its type (`compressed(nnz = N)`,
    /// `ragged(total = N)`; see [`crate::storage::extent_mismatch`]).
    pub fn extent_mismatch(&self) -> Option<String> {
        if !crate::storage::has_static_extents(self.ty()) {
            return None;
        }
        match self {
            Value::Tensor(t) => crate::storage::extent_mismatch(&t.ty, &assemble(t)),
            Value::Stored(s) => crate::storage::extent_mismatch(&s.ty, &s.storage),
        }
    }

    /// The logical tensor (a stored value's dense view, see [`Stored::to_tensor`]).
    pub fn into_tensor(self) -> Result<Tensor, StorageError> {
        match self {
            Value::Tensor(t) => Ok(t),
            Value::Stored(s) => s.to_tensor(),
        }
    }
}

/// What native execution accepts as an argument: a logical tensor or a stored one.
pub trait Argument {
    /// The value's type.
    fn value_type(&self) -> &ValueType;
    /// The logical tensor, if the value is one.
    fn tensor(&self) -> Option<&Tensor>;
    /// The storage, if the value is held as storage.
    fn stored(&self) -> Option<&Stored>;
    /// The values of a dense tensor of scalars, read in place (native code borrows them).
    fn column(&self) -> Option<crate::ColumnRef<'_>> {
        match &self.tensor()?.data {
            crate::Data::Scalars(c) => Some(crate::ColumnRef::of(c)),
            _ => None,
        }
    }
    /// Memory the caller lends for an `out` parameter's values, written in place by a native
    /// run (its value is then not among the results); `None` (the default): the run writes a
    /// copy and returns it.
    fn column_mut(&self) -> Option<crate::ColumnMut<'_>> {
        None
    }
}

impl Argument for Tensor {
    fn value_type(&self) -> &ValueType {
        &self.ty
    }
    fn tensor(&self) -> Option<&Tensor> {
        Some(self)
    }
    fn stored(&self) -> Option<&Stored> {
        None
    }
}

impl Argument for Value {
    fn value_type(&self) -> &ValueType {
        self.ty()
    }
    fn tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            Value::Stored(_) => None,
        }
    }
    fn stored(&self) -> Option<&Stored> {
        match self {
            Value::Stored(s) => Some(s),
            Value::Tensor(_) => None,
        }
    }
}

/// References and shared pointers to arguments (`&Tensor`, `Rc<Tensor>`, …) are arguments.
impl<P: std::ops::Deref> Argument for P
where
    P::Target: Argument,
{
    fn value_type(&self) -> &ValueType {
        (**self).value_type()
    }
    fn tensor(&self) -> Option<&Tensor> {
        (**self).tensor()
    }
    fn stored(&self) -> Option<&Stored> {
        (**self).stored()
    }
    fn column(&self) -> Option<crate::ColumnRef<'_>> {
        (**self).column()
    }
    fn column_mut(&self) -> Option<crate::ColumnMut<'_>> {
        (**self).column_mut()
    }
}
