//! Tensors as runtime values.
//!
//! Every value is a [`Tensor`]: scalars and tuples are 0-d tensors. A tensor stores its
//! elements densely in row-major order over its levels' intervals, plus an optional *presence*
//! mask: an absent (*skipped*) element is one that does not exist — a neighbor reached through a
//! skip value (`-1`) or a position past the end of a ragged row. Absent elements read as zero and
//! propagate through elementwise operations; `can_deref` reports them and reductions skip them
//! (docs/runtime.md). An entry a sparse tensor does not store is *not* absent: it is the fill
//! value (zero), present like any other element — a level format is storage, never meaning.
//!
//! Element layout: scalars in one typed [`Column`]; tuple elements as one buffer per field
//! ([`Data::Tuple`], structure of arrays); tensor elements as a vector of tensors. Sparse and
//! ragged *storage* (positions, coordinates, offsets) is produced from and read into this
//! logical form by [`crate::storage`].

use strata_ir::{Level, Placement, Scalar, Type, TypeArena};

use crate::scalar::{Column, Sv};

/// The type of a runtime value, detached from any module.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueType {
    /// Levels (empty for scalars and tuples).
    pub levels: Vec<Level>,
    /// Placement.
    pub placement: Placement,
    /// Element type.
    pub element: ElemType,
    /// Whether the IR type is a tensor (as opposed to a bare scalar or tuple).
    pub is_tensor: bool,
}

/// The type of one element.
#[derive(Clone, Debug, PartialEq)]
pub enum ElemType {
    /// A scalar.
    Scalar(Scalar),
    /// A tuple.
    Tuple(Vec<ElemType>),
    /// A tensor element (seed 001).
    Tensor(Box<ValueType>),
}

impl ElemType {
    /// Bytes one element takes in memory (tuple fields and element tensors included), or
    /// `None` beyond `usize`.
    pub fn size_bytes(&self) -> Option<usize> {
        match self {
            ElemType::Scalar(s) => Some(s.size_bytes()),
            ElemType::Tuple(fs) => fs.iter().try_fold(0usize, |n, f| n.checked_add(f.size_bytes()?)),
            ElemType::Tensor(t) => t.size_bytes(),
        }
    }
}

impl ValueType {
    /// Bytes a dense value of this type takes, or `None` beyond `usize`.
    pub fn size_bytes(&self) -> Option<usize> {
        let n = self.levels.iter().try_fold(1usize, |n, l| n.checked_mul(usize::try_from(l.interval.len()).ok()?))?;
        n.checked_mul(self.element.size_bytes()?)
    }

    /// Checks that a dense value of this type can be allocated here (a clear error instead of
    /// an abort when the memory is not there; the system may still refuse it later).
    pub fn check_allocatable(&self) -> Result<(), String> {
        let bytes = self.size_bytes().ok_or_else(|| "more bytes than the address space holds".to_string())?;
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(bytes).map_err(|_| {
            format!("it needs {:.1} GiB, more than can be allocated here", bytes as f64 / (1u64 << 30) as f64)
        })
    }

    /// Converts an IR type.
    pub fn from_ir(types: &TypeArena, ty: strata_ir::op::TypeHandle) -> ValueType {
        match &types[ty] {
            Type::Tensor(t) => ValueType {
                levels: t.levels.clone(),
                placement: t.placement.clone(),
                element: ElemType::from_ir(types, t.element),
                is_tensor: true,
            },
            _ => ValueType {
                levels: Vec::new(),
                placement: Placement::HOST,
                element: ElemType::from_ir(types, ty),
                is_tensor: false,
            },
        }
    }

    /// Number of elements (the product of the interval lengths).
    pub fn len(&self) -> usize {
        self.levels.iter().map(|l| l.interval.len() as usize).product()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Interval lengths.
    pub fn shape(&self) -> Vec<usize> {
        self.levels.iter().map(|l| l.interval.len() as usize).collect()
    }
}

impl ElemType {
    /// Converts an IR element type.
    pub fn from_ir(types: &TypeArena, ty: strata_ir::op::TypeHandle) -> ElemType {
        match &types[ty] {
            Type::Scalar(s) => ElemType::Scalar(*s),
            Type::Tuple(fields) => ElemType::Tuple(fields.iter().map(|&f| ElemType::from_ir(types, f)).collect()),
            Type::Tensor(_) => ElemType::Tensor(Box::new(ValueType::from_ir(types, ty))),
            Type::Function { .. } => ElemType::Tuple(Vec::new()),
        }
    }

    /// The scalar, if this is a scalar element type.
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            ElemType::Scalar(s) => Some(*s),
            _ => None,
        }
    }
}

/// One element value.
#[derive(Clone, Debug, PartialEq)]
pub enum Elem {
    /// A scalar.
    Scalar(Sv),
    /// A tuple.
    Tuple(Vec<Elem>),
    /// A tensor element.
    Tensor(Tensor),
}

impl Elem {
    /// The zero of an element type.
    pub fn zero(t: &ElemType) -> Elem {
        match t {
            ElemType::Scalar(s) => Elem::Scalar(Sv::zero(*s)),
            ElemType::Tuple(fs) => Elem::Tuple(fs.iter().map(Elem::zero).collect()),
            ElemType::Tensor(vt) => Elem::Tensor(Tensor::zeros(vt)),
        }
    }

    /// The scalar, if this is one.
    pub fn scalar(&self) -> Option<Sv> {
        match self {
            Elem::Scalar(s) => Some(*s),
            _ => None,
        }
    }
}

/// Element storage of a tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// Scalar elements.
    Scalars(Column),
    /// Tuple elements, one buffer per field.
    Tuple(Vec<Data>),
    /// Tensor elements.
    Tensors(Vec<Tensor>),
}

impl Data {
    /// `n` zero elements of type `t`.
    pub fn zeros(t: &ElemType, n: usize) -> Data {
        match t {
            ElemType::Scalar(s) => Data::Scalars(Column::zeros(*s, n)),
            ElemType::Tuple(fs) => Data::Tuple(fs.iter().map(|f| Data::zeros(f, n)).collect()),
            ElemType::Tensor(vt) => Data::Tensors((0..n).map(|_| Tensor::zeros(vt)).collect()),
        }
    }

    /// Element `i`.
    pub fn get(&self, i: usize) -> Elem {
        match self {
            Data::Scalars(c) => Elem::Scalar(c.get(i)),
            Data::Tuple(fs) => Elem::Tuple(fs.iter().map(|f| f.get(i)).collect()),
            Data::Tensors(ts) => Elem::Tensor(ts[i].clone()),
        }
    }

    /// Sets element `i` (the element must have this storage's structure).
    pub fn set(&mut self, i: usize, e: Elem) {
        match (self, e) {
            (Data::Scalars(c), Elem::Scalar(s)) => c.set(i, s),
            (Data::Tuple(fs), Elem::Tuple(es)) => {
                for (f, e) in fs.iter_mut().zip(es) {
                    f.set(i, e);
                }
            }
            (Data::Tensors(ts), Elem::Tensor(t)) => ts[i] = t,
            _ => unreachable!("element structure matches the verified type"),
        }
    }

    /// The elements at `positions`, in that order.
    pub fn select(&self, positions: &[usize]) -> Data {
        match self {
            Data::Scalars(c) => Data::Scalars(c.select(positions)),
            Data::Tuple(fs) => Data::Tuple(fs.iter().map(|f| f.select(positions)).collect()),
            Data::Tensors(ts) => Data::Tensors(positions.iter().map(|&p| ts[p].clone()).collect()),
        }
    }
}

/// A runtime value: elements over levels, with presence.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// The value's type.
    pub ty: ValueType,
    /// Elements in row-major order over the levels' intervals.
    pub data: Data,
    /// Which elements exist (skips are absent; a sparse tensor's unstored entries are present
    /// zeros); `None` when all do.
    pub present: Option<Vec<bool>>,
}

impl Tensor {
    /// All-zero (all present) value of type `ty`.
    pub fn zeros(ty: &ValueType) -> Tensor {
        Tensor { data: Data::zeros(&ty.element, ty.len()), ty: ty.clone(), present: None }
    }

    /// A 0-d value holding one element.
    pub fn scalar(ty: ValueType, e: Elem) -> Tensor {
        let mut t = Tensor::zeros(&ty);
        if !t.ty.is_empty() {
            t.data.set(0, e);
        }
        t
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.ty.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether element `i` exists.
    pub fn is_present(&self, i: usize) -> bool {
        self.present.as_ref().is_none_or(|p| p[i])
    }

    /// Row-major strides of the levels.
    pub fn strides(&self) -> Vec<usize> {
        strides(&self.ty.shape())
    }

    /// Element `i` (zero if absent).
    pub fn get(&self, i: usize) -> Elem {
        self.data.get(i)
    }

    /// The scalar element `i`.
    pub fn scalar_at(&self, i: usize) -> Sv {
        match &self.data {
            Data::Scalars(c) => c.get(i),
            _ => panic!("scalar_at on a non-scalar tensor"),
        }
    }

    /// Sets every absent element to zero (the invariant: absent elements read as zero), then
    /// drops the mask if every element is present.
    pub fn clear_absent(&mut self) {
        if let Some(p) = &self.present {
            let zero = Elem::zero(&self.ty.element);
            for (i, here) in p.iter().enumerate() {
                if !here {
                    self.data.set(i, zero.clone());
                }
            }
        }
        self.normalize_presence();
    }

    /// Drops the mask if every element is present.
    pub fn normalize_presence(&mut self) {
        if self.present.as_ref().is_some_and(|p| p.iter().all(|&b| b)) {
            self.present = None;
        }
    }
}

/// Row-major strides for `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}
