//! Scalar and ring algebra shared by every backend and front end: integer ranges, the
//! identities of folding operations, and the builtin rings' operations and zeros. The
//! interpreter, the native backend, the distributed stages and the array front end read them
//! here, so they cannot disagree.

use crate::{BinaryOp, BuiltinRing, Scalar};

/// The smallest and largest value of an integer type (`index` is 64-bit); `None` for floats,
/// complex types and `bool`.
pub fn int_range(s: Scalar) -> Option<(i128, i128)> {
    Some(match s {
        Scalar::I8 => (i8::MIN.into(), i8::MAX.into()),
        Scalar::I16 => (i16::MIN.into(), i16::MAX.into()),
        Scalar::I32 => (i32::MIN.into(), i32::MAX.into()),
        Scalar::I64 | Scalar::Index => (i64::MIN.into(), i64::MAX.into()),
        Scalar::U8 => (0, u8::MAX.into()),
        Scalar::U16 => (0, u16::MAX.into()),
        Scalar::U32 => (0, u32::MAX.into()),
        Scalar::U64 => (0, u64::MAX.into()),
        Scalar::Bool | Scalar::F32 | Scalar::F64 | Scalar::C64 | Scalar::C128 => return None,
    })
}

/// A constant of some scalar type, by kind (converted to the type by each backend; a `Float`
/// of a complex type is its real part, with a zero imaginary part).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Constant {
    /// A float (±∞ included).
    Float(f64),
    /// An integer, inside the type's range.
    Int(i128),
    /// A boolean.
    Bool(bool),
}

/// The lowest value of `s` (−∞ for floats, `false` for `bool`): the identity of `maximum`.
pub fn lowest(s: Scalar) -> Constant {
    match (s.is_float(), int_range(s)) {
        (true, _) => Constant::Float(f64::NEG_INFINITY),
        (false, Some((lo, _))) => Constant::Int(lo),
        (false, None) => Constant::Bool(false),
    }
}

/// The highest value of `s` (+∞ for floats, `true` for `bool`): the identity of `minimum`.
pub fn highest(s: Scalar) -> Constant {
    match (s.is_float(), int_range(s)) {
        (true, _) => Constant::Float(f64::INFINITY),
        (false, Some((_, hi))) => Constant::Int(hi),
        (false, None) => Constant::Bool(true),
    }
}

/// The identity of the folding operation `op` on `s` (`x op identity = x` for every `x`), if
/// it has one there.
pub fn identity(op: BinaryOp, s: Scalar) -> Option<Constant> {
    if s.is_complex() && !matches!(op, BinaryOp::Plus | BinaryOp::Multiplies) {
        return None;
    }
    let zero = if s.is_inexact() {
        Constant::Float(0.0)
    } else if s == Scalar::Bool {
        Constant::Bool(false)
    } else {
        Constant::Int(0)
    };
    Some(match op {
        BinaryOp::Plus | BinaryOp::BitOr | BinaryOp::BitXor => zero,
        BinaryOp::Multiplies if s.is_inexact() => Constant::Float(1.0),
        BinaryOp::Multiplies if s == Scalar::Bool => return None,
        BinaryOp::Multiplies => Constant::Int(1),
        BinaryOp::Maximum => lowest(s),
        BinaryOp::Minimum => highest(s),
        BinaryOp::And => Constant::Bool(true),
        BinaryOp::Or | BinaryOp::Xor => Constant::Bool(false),
        BinaryOp::BitAnd if s == Scalar::Bool => Constant::Bool(true),
        BinaryOp::BitAnd if s.is_signed() => Constant::Int(-1),
        BinaryOp::BitAnd => Constant::Int(int_range(s)?.1),
        _ => return None,
    })
}

impl BuiltinRing {
    /// The ring's addition (its folding operation).
    pub fn add(self) -> BinaryOp {
        match self {
            BuiltinRing::PlusTimes => BinaryOp::Plus,
            BuiltinRing::MaxPlus => BinaryOp::Maximum,
            BuiltinRing::MinPlus => BinaryOp::Minimum,
            BuiltinRing::OrAnd => BinaryOp::Or,
        }
    }

    /// The ring's multiplication.
    pub fn mul(self) -> BinaryOp {
        match self {
            BuiltinRing::PlusTimes => BinaryOp::Multiplies,
            BuiltinRing::MaxPlus | BuiltinRing::MinPlus => BinaryOp::Plus,
            BuiltinRing::OrAnd => BinaryOp::And,
        }
    }

    /// The ring's zero on `s`: the identity of its addition (−∞ or the type's minimum for
    /// `(max, +)`, +∞ or its maximum for `(min, +)`).
    pub fn zero(self, s: Scalar) -> Constant {
        match (self, identity(self.add(), s)) {
            (_, Some(c)) => c,
            // `plus` on `bool` (or of a `(+, ×)` ring over `bool`) has `false` as its zero.
            (_, None) => Constant::Bool(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_leave_every_value_as_it_is() {
        assert_eq!(int_range(Scalar::U64), Some((0, u64::MAX as i128)));
        assert_eq!(int_range(Scalar::Index), int_range(Scalar::I64));
        assert_eq!(identity(BinaryOp::Maximum, Scalar::I8), Some(Constant::Int(-128)));
        assert_eq!(identity(BinaryOp::Minimum, Scalar::U16), Some(Constant::Int(65535)));
        assert_eq!(identity(BinaryOp::Minimum, Scalar::F32), Some(Constant::Float(f64::INFINITY)));
        assert_eq!(identity(BinaryOp::BitAnd, Scalar::U8), Some(Constant::Int(255)));
        assert_eq!(identity(BinaryOp::BitAnd, Scalar::I32), Some(Constant::Int(-1)));
        assert_eq!(identity(BinaryOp::Minus, Scalar::F64), None);
        assert_eq!(identity(BinaryOp::Multiplies, Scalar::C64), Some(Constant::Float(1.0)));
        assert_eq!(identity(BinaryOp::Maximum, Scalar::C128), None);
        assert_eq!(BuiltinRing::MaxPlus.zero(Scalar::F64), Constant::Float(f64::NEG_INFINITY));
        assert_eq!(BuiltinRing::MinPlus.zero(Scalar::I64), Constant::Int(i64::MAX as i128));
        assert_eq!(BuiltinRing::OrAnd.zero(Scalar::Bool), Constant::Bool(false));
        assert_eq!(BuiltinRing::PlusTimes.zero(Scalar::I32), Constant::Int(0));
        assert_eq!((BuiltinRing::MinPlus.add(), BuiltinRing::MinPlus.mul()), (BinaryOp::Minimum, BinaryOp::Plus));
    }
}
