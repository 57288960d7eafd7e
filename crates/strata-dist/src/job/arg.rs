//! A local program's argument on a rank: a value the run holds, or a block the caller keeps
//! (a resident array's rows, an earlier stage's result) lent for the run and read in place as
//! the local parameter's type — a time loop's state is not copied to be run.

use std::sync::OnceLock;

use strata_runtime::{Argument, ColumnRef, Data, Stored, Tensor, Value, ValueType};

/// One argument of a rank's local program.
#[derive(Debug)]
pub enum Arg<'a> {
    /// A value the run holds (read from a file, made, received, or copied).
    Value(Value),
    /// Dense scalars the caller keeps, read as `ty` (the same layout, at the parameter's
    /// coordinates); the interpreter gets a copy, made once.
    Lent {
        /// The parameter's type on this rank.
        ty: ValueType,
        /// The caller's values.
        data: &'a Data,
        /// The copy the interpreter reads.
        copy: OnceLock<Tensor>,
        /// Set when the caller's values never change while they exist: a number naming them
        /// among every value the process lends ([`Arg::stamped`]).
        stamp: Option<u64>,
    },
    /// An `out` parameter that starts as zeros, made only if something reads them: native code
    /// writing the whole output takes a buffer of its own (a recycled one: no page faults).
    Zeros {
        /// The parameter's type on this rank.
        ty: ValueType,
        /// The zeros, once made.
        made: OnceLock<Tensor>,
    },
}

impl<'a> Arg<'a> {
    /// `data` lent as a value of type `ty`, when it is dense scalars of `ty`'s length.
    pub fn lend(ty: &ValueType, data: &'a Data) -> Option<Arg<'a>> {
        let Data::Scalars(c) = data else { return None };
        let fits = ty.element.scalar() == Some(c.scalar()) && c.len() == ty.len() && ty.is_tensor;
        fits.then(|| Arg::Lent { ty: ty.clone(), data, copy: OnceLock::new(), stamp: None })
    }

    /// The argument, if lent, marked with `stamp`: the caller promises that its values never
    /// change while they exist and that no other values it lends carry the same stamp (so the
    /// inspector recognizes unchanged tables by their stamps instead of hashing them).
    pub fn stamped(self, stamp: u64) -> Arg<'a> {
        match self {
            Arg::Lent { ty, data, copy, .. } => Arg::Lent { ty, data, copy, stamp: Some(stamp) },
            other => other,
        }
    }

    /// The stamp of a lent argument ([`Arg::stamped`]).
    pub fn stamp(&self) -> Option<u64> {
        match self {
            Arg::Lent { stamp, .. } => *stamp,
            _ => None,
        }
    }

    /// Zeros of type `ty`, made when first read ([`Arg::Zeros`]).
    pub fn zeros(ty: &ValueType) -> Arg<'a> {
        Arg::Zeros { ty: ty.clone(), made: OnceLock::new() }
    }

    /// The type and values of a tensor argument (lent, or a value's; a presence mask aside).
    pub fn rows(&self) -> Option<(&ValueType, &Data)> {
        match self {
            Arg::Value(Value::Tensor(t)) => Some((&t.ty, &t.data)),
            Arg::Value(_) => None,
            Arg::Lent { ty, data, .. } => Some((ty, data)),
            Arg::Zeros { ty, made } => Some((ty, &made.get_or_init(|| Tensor::zeros(ty)).data)),
        }
    }

    /// [`Arg::rows`] of a dense argument (no presence mask).
    pub fn dense(&self) -> Option<(&ValueType, &Data)> {
        match self {
            Arg::Value(Value::Tensor(t)) if t.present.is_some() => None,
            _ => self.rows(),
        }
    }

    /// Moves the argument out, leaving a stand-in (a 0-d `bool`).
    pub fn take(&mut self) -> Arg<'a> {
        std::mem::replace(self, Arg::Value(placeholder()))
    }

    /// The argument as a value of its own (a lent block copied).
    pub fn into_value(self) -> Value {
        match self {
            Arg::Value(v) => v,
            Arg::Lent { ty, data, copy, .. } => Value::Tensor(copy.into_inner().unwrap_or_else(|| copied(ty, data))),
            Arg::Zeros { ty, made } => Value::Tensor(made.into_inner().unwrap_or_else(|| Tensor::zeros(&ty))),
        }
    }

    /// The value the run held, if it is one of its own (not lent): what can be kept for later
    /// runs.
    pub fn into_owned(self) -> Option<Value> {
        match self {
            Arg::Value(v) => Some(v),
            Arg::Lent { .. } => None,
            Arg::Zeros { made, .. } => made.into_inner().map(Value::Tensor),
        }
    }

    /// The argument as a value this run may change (a lent block copied first).
    pub fn to_mut(&mut self) -> &mut Value {
        if !matches!(self, Arg::Value(_)) {
            *self = Arg::Value(self.take().into_value());
        }
        match self {
            Arg::Value(v) => v,
            _ => unreachable!("made a value above"),
        }
    }
}

fn copied(ty: ValueType, data: &Data) -> Tensor {
    Tensor { ty, data: data.clone(), present: None }
}

/// A value standing in for one moved elsewhere (a 0-d `bool`).
pub(super) fn placeholder() -> Value {
    let ty = ValueType {
        levels: Vec::new(),
        placement: strata_ir::Placement::HOST,
        element: strata_runtime::ElemType::Scalar(strata_ir::Scalar::Bool),
        is_tensor: false,
    };
    Value::Tensor(Tensor::zeros(&ty))
}

impl From<Value> for Arg<'_> {
    fn from(v: Value) -> Self {
        Arg::Value(v)
    }
}

impl Argument for Arg<'_> {
    fn value_type(&self) -> &ValueType {
        match self {
            Arg::Value(v) => v.value_type(),
            Arg::Lent { ty, .. } | Arg::Zeros { ty, .. } => ty,
        }
    }
    fn tensor(&self) -> Option<&Tensor> {
        match self {
            Arg::Value(v) => v.tensor(),
            Arg::Lent { ty, data, copy, .. } => Some(copy.get_or_init(|| copied(ty.clone(), data))),
            Arg::Zeros { ty, made } => Some(made.get_or_init(|| Tensor::zeros(ty))),
        }
    }
    fn stored(&self) -> Option<&Stored> {
        match self {
            Arg::Value(v) => v.stored(),
            Arg::Lent { .. } | Arg::Zeros { .. } => None,
        }
    }
    fn column(&self) -> Option<ColumnRef<'_>> {
        match self {
            Arg::Value(v) => v.column(),
            Arg::Lent { data: Data::Scalars(c), .. } => Some(ColumnRef::of(c)),
            Arg::Lent { .. } => None,
            Arg::Zeros { ty, made } => match &made.get_or_init(|| Tensor::zeros(ty)).data {
                Data::Scalars(c) => Some(ColumnRef::of(c)),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_ir::{Interval, Level, LevelFormat, Scalar};
    use strata_runtime::{Column, ElemType};

    fn vector(start: i64, values: Vec<f64>) -> Tensor {
        let n = values.len() as i64;
        let ty = ValueType {
            levels: vec![Level {
                name: strata_ir::DimName::new("I"),
                interval: Interval::new(start, start + n),
                format: LevelFormat::Dense,
            }],
            placement: strata_ir::Placement::HOST,
            element: ElemType::Scalar(Scalar::F64),
            is_tensor: true,
        };
        Tensor { ty, data: Data::Scalars(Column::F64(values)), present: None }
    }

    #[test]
    fn a_lent_block_is_read_in_place_at_the_parameters_coordinates() {
        let block = vector(0, vec![1.0, 2.0, 3.0]);
        let at = vector(5, vec![0.0; 3]).ty;
        let arg = Arg::lend(&at, &block.data).expect("same layout");
        assert_eq!(arg.value_type().levels[0].interval, Interval::new(5, 8));
        let Data::Scalars(c) = &block.data else { unreachable!("scalars") };
        assert_eq!(arg.column().map(|v| v.as_ptr()), Some(c.as_ptr()));
        // The interpreter's copy and an owned value carry the parameter's type.
        assert_eq!(arg.tensor().map(|t| t.ty.levels[0].interval), Some(Interval::new(5, 8)));
        let mut arg = arg;
        let Value::Tensor(t) = arg.to_mut() else { panic!("a tensor") };
        assert_eq!((t.ty.levels[0].interval, t.data.clone()), (Interval::new(5, 8), block.data.clone()));
    }

    #[test]
    fn a_block_of_another_length_or_dtype_is_not_lent() {
        let block = vector(0, vec![1.0, 2.0, 3.0]);
        assert!(Arg::lend(&vector(0, vec![0.0; 4]).ty, &block.data).is_none());
        let mut ints = vector(0, vec![0.0; 3]).ty;
        ints.element = ElemType::Scalar(Scalar::I64);
        assert!(Arg::lend(&ints, &block.data).is_none());
    }
}
