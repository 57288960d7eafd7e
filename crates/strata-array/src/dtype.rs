//! Data types and the type-promotion rules.
//!
//! The array API's promotion table (2023.12) covers booleans, integers of one signedness
//! and floats among themselves. Where it is silent (mixed signed/unsigned of equal width,
//! integers with floats), Strata follows numpy 2 (NEP 50): `u64 ⊕ i64 → f64`, an integer of
//! at most 16 bits with `f32` stays `f32`, wider integers with `f32` give `f64`, and `bool`
//! with anything gives the other type. A complex dtype with another dtype gives the complex
//! dtype whose parts are the promotion of its parts' dtype with the other (`c64 ⊕ f64 → c128`,
//! `c64 ⊕ i16 → c64`, numpy's rule where the standard is silent). Python scalars are *weak*: `x + 1` keeps `x`'s dtype
//! (see [`Weak`]).

use strata_ir::Scalar;

use crate::error::{dtype_error, Result};

/// An array's element type: every Strata scalar type but `index`.
pub type DType = Scalar;

/// The default integer dtype (numpy's on 64-bit Linux).
pub const DEFAULT_INT: DType = Scalar::I64;
/// The default floating-point dtype.
pub const DEFAULT_FLOAT: DType = Scalar::F64;
/// The default complex dtype.
pub const DEFAULT_COMPLEX: DType = Scalar::C128;

/// A Python-style scalar operand: weakly typed, it takes the array's dtype where it fits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Weak {
    /// `True` / `False`.
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A complex literal: real and imaginary parts.
    Complex(f64, f64),
}

impl Weak {
    /// The value as a float (a complex value's real part).
    pub fn as_f64(self) -> f64 {
        match self {
            Weak::Bool(b) => b as u8 as f64,
            Weak::Int(i) => i as f64,
            Weak::Float(x) | Weak::Complex(x, _) => x,
        }
    }

    /// The value as a scalar of `dtype` (the imaginary part kept for a complex `dtype`).
    pub fn value(self, dtype: DType) -> strata_runtime::Sv {
        use strata_runtime::Sv;
        match self {
            Weak::Complex(re, im) => Sv::C128(num_complex::Complex64::new(re, im)).cast(dtype),
            Weak::Int(i) => Sv::from_i128(dtype, i as i128),
            other => Sv::from_f64(dtype, other.as_f64()),
        }
    }

    /// The dtype an operation with an array of dtype `array` computes in (NEP 50): the
    /// array's, unless the scalar is of a higher kind (a float with an integer array gives the
    /// default float, an integer with a `bool` array the default integer).
    pub fn promote_with(self, array: DType) -> DType {
        match self {
            Weak::Bool(_) => array,
            Weak::Int(_) if array == Scalar::Bool => DEFAULT_INT,
            Weak::Int(_) => array,
            Weak::Float(_) if !array.is_inexact() => DEFAULT_FLOAT,
            Weak::Float(_) => array,
            Weak::Complex(..) if array.is_complex() => array,
            Weak::Complex(..) if array == Scalar::F32 => Scalar::C64,
            Weak::Complex(..) => DEFAULT_COMPLEX,
        }
    }

    /// The dtype the scalar has on its own (`asarray(1.5)`).
    pub fn default_dtype(self) -> DType {
        match self {
            Weak::Bool(_) => Scalar::Bool,
            Weak::Int(_) => DEFAULT_INT,
            Weak::Float(_) => DEFAULT_FLOAT,
            Weak::Complex(..) => DEFAULT_COMPLEX,
        }
    }
}

fn width(s: DType) -> usize {
    s.size_bytes()
}

fn signed_of_width(bytes: usize) -> Option<DType> {
    match bytes {
        1 => Some(Scalar::I8),
        2 => Some(Scalar::I16),
        4 => Some(Scalar::I32),
        8 => Some(Scalar::I64),
        _ => None,
    }
}

/// The promoted dtype of two array dtypes (`result_type`).
pub fn promote(op: &'static str, a: DType, b: DType) -> Result<DType> {
    use Scalar::*;
    if a == Index || b == Index {
        return Err(dtype_error(op, "`index` is not an array dtype"));
    }
    Ok(match (a, b) {
        _ if a == b => a,
        (Bool, x) | (x, Bool) => x,
        (c, x) | (x, c) if c.is_complex() => {
            let parts = promote(op, c.real_part(), x.real_part())?;
            parts.complex_of().ok_or_else(|| dtype_error(op, "no complex dtype for these parts"))?
        }
        (F32, F64) | (F64, F32) => F64,
        (f, i) | (i, f) if f.is_float() && !i.is_float() => {
            if f == F32 && width(i) <= 2 {
                F32
            } else {
                F64
            }
        }
        _ if a.is_signed() == b.is_signed() => {
            if width(a) >= width(b) {
                a
            } else {
                b
            }
        }
        _ => {
            let (s, u) = if a.is_signed() { (a, b) } else { (b, a) };
            if width(u) < width(s) {
                s
            } else {
                signed_of_width(2 * width(u)).unwrap_or(F64)
            }
        }
    })
}

/// The promoted dtype of several dtypes, folded left to right (`result_type(*dtypes)`).
pub fn result_type(op: &'static str, dtypes: &[DType]) -> Result<DType> {
    let (first, rest) = dtypes.split_first().ok_or_else(|| dtype_error(op, "at least one dtype is required"))?;
    rest.iter().try_fold(*first, |acc, &d| promote(op, acc, d))
}

/// The dtype `sum` and `prod` accumulate in by default: integers widen to the default
/// integer of their signedness (`bool` → `i64`), floats keep theirs.
pub fn sum_dtype(d: DType) -> DType {
    match d {
        Scalar::Bool | Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => Scalar::I64,
        Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => Scalar::U64,
        other => other,
    }
}

/// numpy's name for a dtype (`float64`, `int32`, `bool`).
pub fn name(d: DType) -> &'static str {
    d.numpy_name()
}

/// The dtype named as numpy names it (`float32`, `int64`, `bool`, `uint8`, …).
pub fn from_name(name: &str) -> Option<DType> {
    Scalar::ALL.iter().copied().find(|s| *s != Scalar::Index && s.numpy_name() == name)
}

/// Whether `from` converts to `to` without changing kind or losing range under the promotion
/// rules (`can_cast`: `promote(from, to) == to`).
pub fn can_cast(from: DType, to: DType) -> bool {
    promote("can_cast", from, to).is_ok_and(|d| d == to)
}

/// Machine limits of a float dtype (`finfo`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatInfo {
    /// Bits of storage.
    pub bits: u32,
    /// The difference between 1.0 and the next representable value.
    pub eps: f64,
    /// The largest finite value.
    pub max: f64,
    /// The most negative finite value.
    pub min: f64,
    /// The smallest positive normal value.
    pub smallest_normal: f64,
    /// The dtype.
    pub dtype: DType,
}

/// Limits of an integer dtype (`iinfo`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntInfo {
    /// Bits of storage.
    pub bits: u32,
    /// The largest value.
    pub max: i128,
    /// The smallest value.
    pub min: i128,
    /// The dtype.
    pub dtype: DType,
}

/// `finfo(dtype)` for `f32` and `f64`; a complex dtype gives its parts' (the standard's
/// rule: `finfo(complex64).dtype` is `float32`).
pub fn finfo(d: DType) -> Result<FloatInfo> {
    match d.real_part() {
        Scalar::F32 => Ok(FloatInfo {
            bits: 32,
            eps: f32::EPSILON as f64,
            max: f32::MAX as f64,
            min: f32::MIN as f64,
            smallest_normal: f32::MIN_POSITIVE as f64,
            dtype: Scalar::F32,
        }),
        Scalar::F64 => Ok(FloatInfo {
            bits: 64,
            eps: f64::EPSILON,
            max: f64::MAX,
            min: f64::MIN,
            smallest_normal: f64::MIN_POSITIVE,
            dtype: Scalar::F64,
        }),
        _ => Err(dtype_error("finfo", format!("{} is not a floating-point dtype", d.numpy_name()))),
    }
}

/// `iinfo(dtype)` for the integer dtypes.
pub fn iinfo(d: DType) -> Result<IntInfo> {
    if !d.is_integer() || d == Scalar::Index {
        return Err(dtype_error("iinfo", format!("{} is not an integer dtype", d.numpy_name())));
    }
    let bits = 8 * d.size_bytes() as u32;
    let (min, max) = strata_ir::algebra::int_range(d).expect("an integer dtype");
    Ok(IntInfo { bits, max, min, dtype: d })
}

/// A kind of dtype for [`isdtype`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `bool`.
    Bool,
    /// Signed integers.
    SignedInteger,
    /// Unsigned integers.
    UnsignedInteger,
    /// All integers.
    Integral,
    /// `f32`, `f64`.
    RealFloating,
    /// `c64`, `c128`.
    ComplexFloating,
    /// Integers and floats.
    Numeric,
    /// Exactly this dtype.
    Exactly(DType),
}

impl Kind {
    /// The kind named as the standard names it (`"signed integer"`, `"real floating"`, …) or a
    /// dtype name.
    pub fn from_name(s: &str) -> Option<Kind> {
        Some(match s {
            "bool" => Kind::Bool,
            "signed integer" => Kind::SignedInteger,
            "unsigned integer" => Kind::UnsignedInteger,
            "integral" => Kind::Integral,
            "real floating" => Kind::RealFloating,
            "complex floating" => Kind::ComplexFloating,
            "numeric" => Kind::Numeric,
            other => Kind::Exactly(from_name(other)?),
        })
    }
}

/// Whether `d` is of any of `kinds` (`isdtype`).
pub fn isdtype(d: DType, kinds: &[Kind]) -> bool {
    kinds.iter().any(|k| match k {
        Kind::Bool => d == Scalar::Bool,
        Kind::SignedInteger => d.is_signed(),
        Kind::UnsignedInteger => d.is_integer() && !d.is_signed(),
        Kind::Integral => d.is_integer(),
        Kind::RealFloating => d.is_float(),
        Kind::ComplexFloating => d.is_complex(),
        Kind::Numeric => d != Scalar::Bool,
        Kind::Exactly(e) => d == *e,
    })
}
