//! Scalar values and typed columns.
//!
//! Arithmetic follows these rules (docs/runtime.md): integers wrap on overflow (two's
//! complement, like numpy); integer division and modulo by zero are run-time errors; floats follow
//! IEEE 754 (a comparison with NaN is false, except `ne`); `modulo` takes the sign of the
//! dividend; float-to-integer casts truncate toward zero and saturate (NaN becomes 0).

use std::fmt;

use num_complex::{Complex32, Complex64};
use strata_ir::{BinaryOp, Literal, Scalar, UnaryOp};

use crate::complex;

/// One scalar value with its type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sv {
    /// `bool`
    Bool(bool),
    /// `i8`
    I8(i8),
    /// `i16`
    I16(i16),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `u8`
    U8(u8),
    /// `u16`
    U16(u16),
    /// `u32`
    U32(u32),
    /// `u64`
    U64(u64),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
    /// `c64`
    C64(Complex32),
    /// `c128`
    C128(Complex64),
    /// `index`
    Index(i64),
}

/// Why a scalar operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScalarError {
    /// Integer division or modulo by zero.
    #[error("integer division by zero in `{0}`")]
    DivisionByZero(&'static str),
    /// A negative integer exponent.
    #[error("negative integer exponent in `power`")]
    NegativeExponent,
}

macro_rules! int_arith {
    ($op:expr, $a:expr, $b:expr, $name:literal) => {{
        let (a, b) = ($a, $b);
        match $op {
            BinaryOp::Plus => a.wrapping_add(b),
            BinaryOp::Minus => a.wrapping_sub(b),
            BinaryOp::Multiplies => a.wrapping_mul(b),
            BinaryOp::Divides => {
                if b == 0 {
                    return Err(ScalarError::DivisionByZero("divides"));
                }
                a.wrapping_div(b)
            }
            BinaryOp::Modulo => {
                if b == 0 {
                    return Err(ScalarError::DivisionByZero("modulo"));
                }
                a.wrapping_rem(b)
            }
            BinaryOp::Power => {
                let e: i128 = b as i128;
                if e < 0 {
                    return Err(ScalarError::NegativeExponent);
                }
                a.wrapping_pow(e.min(u32::MAX as i128) as u32)
            }
            BinaryOp::Maximum => a.max(b),
            BinaryOp::Minimum => a.min(b),
            _ => unreachable!("not arithmetic"),
        }
    }};
}

macro_rules! float_arith {
    ($op:expr, $a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        match $op {
            BinaryOp::Plus => a + b,
            BinaryOp::Minus => a - b,
            BinaryOp::Multiplies => a * b,
            BinaryOp::Divides => a / b,
            BinaryOp::Modulo => a % b,
            BinaryOp::Power => a.powf(b),
            // numpy's maximum / minimum: NaN propagates, and of equal values (±0) the second
            // operand is the result (`f64::max` leaves the sign of zero unspecified).
            BinaryOp::Maximum => {
                if a.is_nan() || b.is_nan() {
                    a + b
                } else if a > b {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Minimum => {
                if a.is_nan() || b.is_nan() {
                    a + b
                } else if a < b {
                    a
                } else {
                    b
                }
            }
            _ => unreachable!("not arithmetic"),
        }
    }};
}

impl Sv {
    /// The value's type.
    pub fn scalar(self) -> Scalar {
        match self {
            Sv::Bool(_) => Scalar::Bool,
            Sv::I8(_) => Scalar::I8,
            Sv::I16(_) => Scalar::I16,
            Sv::I32(_) => Scalar::I32,
            Sv::I64(_) => Scalar::I64,
            Sv::U8(_) => Scalar::U8,
            Sv::U16(_) => Scalar::U16,
            Sv::U32(_) => Scalar::U32,
            Sv::U64(_) => Scalar::U64,
            Sv::F32(_) => Scalar::F32,
            Sv::F64(_) => Scalar::F64,
            Sv::C64(_) => Scalar::C64,
            Sv::C128(_) => Scalar::C128,
            Sv::Index(_) => Scalar::Index,
        }
    }

    /// Zero (or `false`) of type `s`.
    pub fn zero(s: Scalar) -> Sv {
        Sv::from_i128(s, 0)
    }

    /// Whether the value equals zero (`false`; `-0.0` too, NaN not): a sparse tensor's fill
    /// value, which its storage does not list.
    pub fn is_zero(self) -> bool {
        match self {
            Sv::Bool(b) => !b,
            Sv::F32(x) => x == 0.0,
            Sv::F64(x) => x == 0.0,
            Sv::C64(z) => z.re == 0.0 && z.im == 0.0,
            Sv::C128(z) => z.re == 0.0 && z.im == 0.0,
            other => other.as_i128() == 0,
        }
    }

    /// The integer `v` converted to `s` (wrapping for integers).
    pub fn from_i128(s: Scalar, v: i128) -> Sv {
        match s {
            Scalar::Bool => Sv::Bool(v != 0),
            Scalar::I8 => Sv::I8(v as i8),
            Scalar::I16 => Sv::I16(v as i16),
            Scalar::I32 => Sv::I32(v as i32),
            Scalar::I64 => Sv::I64(v as i64),
            Scalar::U8 => Sv::U8(v as u8),
            Scalar::U16 => Sv::U16(v as u16),
            Scalar::U32 => Sv::U32(v as u32),
            Scalar::U64 => Sv::U64(v as u64),
            Scalar::F32 => Sv::F32(v as f32),
            Scalar::F64 => Sv::F64(v as f64),
            Scalar::C64 => Sv::C64(Complex32::new(v as f32, 0.0)),
            Scalar::C128 => Sv::C128(Complex64::new(v as f64, 0.0)),
            Scalar::Index => Sv::Index(v as i64),
        }
    }

    /// The constant `c` (`strata_ir::algebra`) as a value of `s`.
    pub fn from_constant(s: Scalar, c: strata_ir::algebra::Constant) -> Sv {
        use strata_ir::algebra::Constant;
        match c {
            Constant::Float(x) => Sv::from_f64(s, x),
            Constant::Int(i) => Sv::from_i128(s, i),
            Constant::Bool(b) => Sv::from_i128(s, b as i128),
        }
    }

    /// The float `v` converted to `s` (truncating and saturating for integers).
    pub fn from_f64(s: Scalar, v: f64) -> Sv {
        match s {
            Scalar::Bool => Sv::Bool(v != 0.0),
            Scalar::I8 => Sv::I8(v as i8),
            Scalar::I16 => Sv::I16(v as i16),
            Scalar::I32 => Sv::I32(v as i32),
            Scalar::I64 => Sv::I64(v as i64),
            Scalar::U8 => Sv::U8(v as u8),
            Scalar::U16 => Sv::U16(v as u16),
            Scalar::U32 => Sv::U32(v as u32),
            Scalar::U64 => Sv::U64(v as u64),
            Scalar::F32 => Sv::F32(v as f32),
            Scalar::F64 => Sv::F64(v),
            Scalar::C64 => Sv::C64(Complex32::new(v as f32, 0.0)),
            Scalar::C128 => Sv::C128(Complex64::new(v, 0.0)),
            Scalar::Index => Sv::Index(v as i64),
        }
    }

    /// A literal as a value of type `s`, if it fits (tuples never do).
    pub fn from_literal(lit: &Literal, s: Scalar) -> Option<Sv> {
        match (lit, s) {
            (Literal::Bool(b), Scalar::Bool) => Some(Sv::Bool(*b)),
            (Literal::Int(i), s) if s != Scalar::Bool => Some(Sv::from_i128(s, *i as i128)),
            (Literal::Float(x), s) if s.is_inexact() => Some(Sv::from_f64(s, *x)),
            _ => None,
        }
    }

    /// The value as a float (a complex value's real part).
    pub fn as_f64(self) -> f64 {
        match self {
            Sv::Bool(b) => b as u8 as f64,
            Sv::F32(x) => x as f64,
            Sv::F64(x) => x,
            Sv::C64(z) => z.re as f64,
            Sv::C128(z) => z.re,
            other => other.as_i128() as f64,
        }
    }

    /// The value as a complex number of `f64` parts (a real value's imaginary part is 0).
    pub fn as_c128(self) -> Complex64 {
        match self {
            Sv::C64(z) => Complex64::new(z.re as f64, z.im as f64),
            Sv::C128(z) => z,
            other => Complex64::new(other.as_f64(), 0.0),
        }
    }

    /// The value as a wide integer (floats truncate; a complex value's real part).
    pub fn as_i128(self) -> i128 {
        match self {
            Sv::Bool(b) => b as i128,
            Sv::I8(v) => v as i128,
            Sv::I16(v) => v as i128,
            Sv::I32(v) => v as i128,
            Sv::I64(v) | Sv::Index(v) => v as i128,
            Sv::U8(v) => v as i128,
            Sv::U16(v) => v as i128,
            Sv::U32(v) => v as i128,
            Sv::U64(v) => v as i128,
            Sv::F32(x) => x as i128,
            Sv::F64(x) => x as i128,
            Sv::C64(z) => z.re as i128,
            Sv::C128(z) => z.re as i128,
        }
    }

    /// Conversion to another scalar type (`cast`): to a complex type, the value with a zero
    /// imaginary part; from one, to `bool` whether it is nonzero (the verifier refuses other
    /// casts that drop an imaginary part; the real part is taken if one runs anyway).
    pub fn cast(self, to: Scalar) -> Sv {
        match self {
            _ if to == Scalar::C64 => {
                let z = self.as_c128();
                Sv::C64(Complex32::new(z.re as f32, z.im as f32))
            }
            _ if to == Scalar::C128 => Sv::C128(self.as_c128()),
            Sv::C64(_) | Sv::C128(_) if to == Scalar::Bool => Sv::Bool(!self.is_zero()),
            Sv::C64(_) | Sv::C128(_) => Sv::from_f64(to, self.as_f64()),
            Sv::F32(_) | Sv::F64(_) => Sv::from_f64(to, self.as_f64()),
            _ if to.is_float() => Sv::from_f64(to, self.as_f64()),
            _ => Sv::from_i128(to, self.as_i128()),
        }
    }

    /// `bool` value, if it is one.
    pub fn as_bool(self) -> Option<bool> {
        match self {
            Sv::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// Applies a unary builtin (operand type checked by the verifier).
    pub fn unary(self, op: UnaryOp) -> Sv {
        match (op, self) {
            (op, Sv::C64(z)) => {
                let r = complex::unary32(op, z);
                match op.result(Scalar::C64) {
                    Scalar::C64 => Sv::C64(r),
                    Scalar::Bool => Sv::Bool(r.re != 0.0),
                    _ => Sv::F32(r.re),
                }
            }
            (op, Sv::C128(z)) => {
                let r = complex::unary64(op, z);
                match op.result(Scalar::C128) {
                    Scalar::C128 => Sv::C128(r),
                    Scalar::Bool => Sv::Bool(r.re != 0.0),
                    _ => Sv::F64(r.re),
                }
            }
            (UnaryOp::Real | UnaryOp::Conj, v) => v,
            (UnaryOp::Imag, v) => Sv::zero(v.scalar()),
            (UnaryOp::Not, Sv::Bool(b)) => Sv::Bool(!b),
            (UnaryOp::Neg, Sv::F32(x)) => Sv::F32(-x),
            (UnaryOp::Neg, Sv::F64(x)) => Sv::F64(-x),
            (UnaryOp::Neg, v) => Sv::from_i128(v.scalar(), -v.as_i128()),
            (UnaryOp::Abs, Sv::F32(x)) => Sv::F32(x.abs()),
            (UnaryOp::Abs, Sv::F64(x)) => Sv::F64(x.abs()),
            (UnaryOp::Abs, v) => Sv::from_i128(v.scalar(), v.as_i128().abs()),
            (UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite | UnaryOp::SignBit, v) => {
                let x = v.as_f64();
                Sv::Bool(match op {
                    UnaryOp::IsNan => x.is_nan(),
                    UnaryOp::IsInf => x.is_infinite(),
                    UnaryOp::IsFinite => x.is_finite(),
                    _ => x.is_sign_negative(),
                })
            }
            (UnaryOp::Sign, v @ (Sv::F32(_) | Sv::F64(_))) => {
                let x = v.as_f64();
                let y = if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else if x == 0.0 {
                    0.0
                } else {
                    x
                };
                Sv::from_f64(v.scalar(), y)
            }
            (UnaryOp::Sign, v) => Sv::from_i128(v.scalar(), v.as_i128().signum()),
            (UnaryOp::BitNot, Sv::Bool(b)) => Sv::Bool(!b),
            (UnaryOp::BitNot, v) => Sv::from_i128(v.scalar(), !v.as_i128()),
            (op, Sv::F32(x)) => Sv::F32(float_unary(op, x as f64) as f32),
            (op, Sv::F64(x)) => Sv::F64(float_unary(op, x)),
            (_, v) => v,
        }
    }

    /// Applies a binary builtin to two values of the same type.
    pub fn binary(self, op: BinaryOp, other: Sv) -> Result<Sv, ScalarError> {
        use strata_ir::BinaryClass::*;
        match op.class() {
            Comparison if self.scalar().is_complex() => {
                let (a, b) = (self.as_c128(), other.as_c128());
                let eq = a.re == b.re && a.im == b.im;
                Ok(Sv::Bool(if op == BinaryOp::Ne { !eq } else { eq }))
            }
            Comparison => Ok(Sv::Bool(self.compare(op, other))),
            Logical => {
                let (a, b) = (self.as_bool().unwrap_or(false), other.as_bool().unwrap_or(false));
                Ok(Sv::Bool(match op {
                    BinaryOp::And => a && b,
                    BinaryOp::Or => a || b,
                    _ => a != b,
                }))
            }
            Bitwise => Ok(bitwise(op, self, other)),
            Arithmetic if matches!(op, BinaryOp::FloorDivide | BinaryOp::Remainder) => {
                Ok(floor_divmod(op, self, other))
            }
            Arithmetic if op.float_only() => Ok(match (self, other) {
                (Sv::F32(a), Sv::F32(b)) => Sv::F32(float_binary!(op, a, b, f32)),
                (Sv::F64(a), Sv::F64(b)) => Sv::F64(float_binary!(op, a, b, f64)),
                (a, _) => a,
            }),
            Arithmetic => Ok(match (self, other) {
                (Sv::C64(a), Sv::C64(b)) => Sv::C64(match op {
                    BinaryOp::Plus => a + b,
                    BinaryOp::Minus => a - b,
                    BinaryOp::Multiplies => complex::mul32(a, b),
                    BinaryOp::Divides => complex::div32(a, b),
                    _ => complex::pow32(a, b),
                }),
                (Sv::C128(a), Sv::C128(b)) => Sv::C128(match op {
                    BinaryOp::Plus => a + b,
                    BinaryOp::Minus => a - b,
                    BinaryOp::Multiplies => complex::mul64(a, b),
                    BinaryOp::Divides => complex::div64(a, b),
                    _ => complex::pow64(a, b),
                }),
                (Sv::F32(a), Sv::F32(b)) => Sv::F32(float_arith!(op, a, b)),
                (Sv::F64(a), Sv::F64(b)) => Sv::F64(float_arith!(op, a, b)),
                (Sv::I8(a), Sv::I8(b)) => Sv::I8(int_arith!(op, a, b, "i8")),
                (Sv::I16(a), Sv::I16(b)) => Sv::I16(int_arith!(op, a, b, "i16")),
                (Sv::I32(a), Sv::I32(b)) => Sv::I32(int_arith!(op, a, b, "i32")),
                (Sv::I64(a), Sv::I64(b)) => Sv::I64(int_arith!(op, a, b, "i64")),
                (Sv::Index(a), Sv::Index(b)) => Sv::Index(int_arith!(op, a, b, "index")),
                (Sv::U8(a), Sv::U8(b)) => Sv::U8(int_arith!(op, a, b, "u8")),
                (Sv::U16(a), Sv::U16(b)) => Sv::U16(int_arith!(op, a, b, "u16")),
                (Sv::U32(a), Sv::U32(b)) => Sv::U32(int_arith!(op, a, b, "u32")),
                (Sv::U64(a), Sv::U64(b)) => Sv::U64(int_arith!(op, a, b, "u64")),
                (a, _) => a,
            }),
        }
    }

    fn compare(self, op: BinaryOp, other: Sv) -> bool {
        let ord = match (self, other) {
            (Sv::F32(_) | Sv::F64(_), _) | (_, Sv::F32(_) | Sv::F64(_)) => self.as_f64().partial_cmp(&other.as_f64()),
            _ => Some(self.as_i128().cmp(&other.as_i128())),
        };
        use std::cmp::Ordering::*;
        match (op, ord) {
            (BinaryOp::Ne, None) => true,
            (_, None) => false,
            (BinaryOp::Eq, Some(o)) => o == Equal,
            (BinaryOp::Ne, Some(o)) => o != Equal,
            (BinaryOp::Less, Some(o)) => o == Less,
            (BinaryOp::LessEqual, Some(o)) => o != Greater,
            (BinaryOp::Greater, Some(o)) => o == Greater,
            (BinaryOp::GreaterEqual, Some(o)) => o != Less,
            _ => false,
        }
    }
}

/// The bitwise ops on integers (two's complement, wrapping to the type) and `bool`.
fn bitwise(op: BinaryOp, a: Sv, b: Sv) -> Sv {
    if let (Sv::Bool(x), Sv::Bool(y)) = (a, b) {
        return Sv::Bool(match op {
            BinaryOp::BitAnd => x & y,
            BinaryOp::BitOr => x | y,
            _ => x ^ y,
        });
    }
    let s = a.scalar();
    let bits = 8 * s.size_bytes() as i128;
    let (x, y) = (a.as_i128(), b.as_i128());
    let v = match op {
        BinaryOp::BitAnd => x & y,
        BinaryOp::BitOr => x | y,
        BinaryOp::BitXor => x ^ y,
        BinaryOp::ShiftLeft if (0..bits).contains(&y) => x << y,
        BinaryOp::ShiftLeft => 0,
        BinaryOp::ShiftRight if (0..bits).contains(&y) => x >> y,
        _ => {
            if x < 0 {
                -1
            } else {
                0
            }
        }
    };
    Sv::from_i128(s, v)
}

/// numpy's `floor_divide` and `remainder`: integer results round toward −∞ and a zero divisor
/// gives 0; float results follow numpy's `npy_divmod` bit for bit.
fn floor_divmod(op: BinaryOp, a: Sv, b: Sv) -> Sv {
    let quotient = op == BinaryOp::FloorDivide;
    match (a, b) {
        (Sv::F32(x), Sv::F32(y)) => {
            let (q, r) = divmod_f32(x, y);
            Sv::F32(if quotient { q } else { r })
        }
        (Sv::F64(x), Sv::F64(y)) => {
            let (q, r) = divmod_f64(x, y);
            Sv::F64(if quotient { q } else { r })
        }
        _ => {
            let (x, y) = (a.as_i128(), b.as_i128());
            let v = if y == 0 {
                0
            } else {
                let mut q = x / y;
                if x % y != 0 && ((x < 0) != (y < 0)) {
                    q -= 1;
                }
                if quotient {
                    q
                } else {
                    x - q * y
                }
            };
            Sv::from_i128(a.scalar(), v)
        }
    }
}

macro_rules! divmod_float {
    ($name:ident, $t:ty) => {
        /// `(floor_divide, remainder)` as numpy's `npy_divmod` computes them.
        fn $name(a: $t, b: $t) -> ($t, $t) {
            let mut m = a % b;
            if b == 0.0 {
                return (a / b, m);
            }
            let mut div = (a - m) / b;
            if m != 0.0 {
                if (b < 0.0) != (m < 0.0) {
                    m += b;
                    div -= 1.0;
                }
            } else {
                m = (0.0 as $t).copysign(b);
            }
            let q = if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (0.0 as $t).copysign(a / b)
            };
            (q, m)
        }
    };
}
divmod_float!(divmod_f32, f32);
divmod_float!(divmod_f64, f64);

macro_rules! float_binary {
    ($op:expr, $a:expr, $b:expr, $t:ty) => {{
        let (a, b): ($t, $t) = ($a, $b);
        match $op {
            BinaryOp::Atan2 => a.atan2(b),
            BinaryOp::Hypot => a.hypot(b),
            BinaryOp::CopySign => a.copysign(b),
            // numpy's `npy_logaddexp`.
            BinaryOp::LogAddExp => {
                if a == b {
                    a + std::f64::consts::LN_2 as $t
                } else {
                    let d = a - b;
                    if d > 0.0 {
                        a + (-d).exp().ln_1p()
                    } else if d <= 0.0 {
                        b + d.exp().ln_1p()
                    } else {
                        d
                    }
                }
            }
            _ => {
                // nextafter
                if a.is_nan() || b.is_nan() {
                    a + b
                } else if a == b {
                    b
                } else if a == 0.0 {
                    <$t>::from_bits(1).copysign(b)
                } else {
                    let bits = a.to_bits();
                    <$t>::from_bits(if (a < b) == (a > 0.0) { bits + 1 } else { bits - 1 })
                }
            }
        }
    }};
}
use float_binary;

fn float_unary(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Round => x.round_ties_even(),
        UnaryOp::Trunc => x.trunc(),
        UnaryOp::Acos => x.acos(),
        UnaryOp::Acosh => x.acosh(),
        UnaryOp::Asin => x.asin(),
        UnaryOp::Asinh => x.asinh(),
        UnaryOp::Atan => x.atan(),
        UnaryOp::Atanh => x.atanh(),
        UnaryOp::Cosh => x.cosh(),
        UnaryOp::Sinh => x.sinh(),
        UnaryOp::Expm1 => x.exp_m1(),
        UnaryOp::Log1p => x.ln_1p(),
        UnaryOp::Log2 => x.log2(),
        UnaryOp::Log10 => x.log10(),
        UnaryOp::Cbrt => x.cbrt(),
        UnaryOp::Gamma => libm::tgamma(x),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Tan => x.tan(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        // Handled by `Sv::unary` before it gets here (not float-to-float maps).
        UnaryOp::Not
        | UnaryOp::Sign
        | UnaryOp::IsNan
        | UnaryOp::IsInf
        | UnaryOp::IsFinite
        | UnaryOp::SignBit
        | UnaryOp::BitNot
        | UnaryOp::Real
        | UnaryOp::Imag
        | UnaryOp::Conj => x,
    }
}

impl fmt::Display for Sv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sv::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Sv::F32(x) => write!(f, "{x}"),
            Sv::F64(x) => write!(f, "{x}"),
            Sv::C64(z) => write!(f, "({}{:+}j)", z.re, z.im),
            Sv::C128(z) => write!(f, "({}{:+}j)", z.re, z.im),
            other => write!(f, "{}", other.as_i128()),
        }
    }
}

/// A typed, contiguous buffer of scalars.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// `bool`
    Bool(Vec<bool>),
    /// `i8`
    I8(Vec<i8>),
    /// `i16`
    I16(Vec<i16>),
    /// `i32`
    I32(Vec<i32>),
    /// `i64`
    I64(Vec<i64>),
    /// `u8`
    U8(Vec<u8>),
    /// `u16`
    U16(Vec<u16>),
    /// `u32`
    U32(Vec<u32>),
    /// `u64`
    U64(Vec<u64>),
    /// `f32`
    F32(Vec<f32>),
    /// `f64`
    F64(Vec<f64>),
    /// `c64`
    C64(Vec<Complex32>),
    /// `c128`
    C128(Vec<Complex64>),
    /// `index`
    Index(Vec<i64>),
}

macro_rules! column_dispatch {
    ($self:expr, $v:ident => $body:expr) => {
        match $self {
            Column::Bool($v) => $body,
            Column::I8($v) => $body,
            Column::I16($v) => $body,
            Column::I32($v) => $body,
            Column::I64($v) => $body,
            Column::U8($v) => $body,
            Column::U16($v) => $body,
            Column::U32($v) => $body,
            Column::U64($v) => $body,
            Column::F32($v) => $body,
            Column::F64($v) => $body,
            Column::C64($v) => $body,
            Column::C128($v) => $body,
            Column::Index($v) => $body,
        }
    };
}

/// `$body` (a `Vec` of the same element type, from the values `$v`) as a column of `$self`'s type.
macro_rules! column_map {
    ($self:expr, $v:ident => $body:expr) => {
        match $self {
            Column::Bool($v) => Column::Bool($body),
            Column::I8($v) => Column::I8($body),
            Column::I16($v) => Column::I16($body),
            Column::I32($v) => Column::I32($body),
            Column::I64($v) => Column::I64($body),
            Column::U8($v) => Column::U8($body),
            Column::U16($v) => Column::U16($body),
            Column::U32($v) => Column::U32($body),
            Column::U64($v) => Column::U64($body),
            Column::F32($v) => Column::F32($body),
            Column::F64($v) => Column::F64($body),
            Column::C64($v) => Column::C64($body),
            Column::C128($v) => Column::C128($body),
            Column::Index($v) => Column::Index($body),
        }
    };
}

impl Column {
    /// The address of the first element, untyped (for handing the buffer to native code).
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        column_dispatch!(self, v => v.as_ptr().cast())
    }

    /// The mutable address of the first element, untyped (for native code that writes it).
    pub fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
        column_dispatch!(self, v => v.as_mut_ptr().cast())
    }

    /// `n` zeros of type `s`.
    pub fn zeros(s: Scalar, n: usize) -> Column {
        match s {
            Scalar::Bool => Column::Bool(vec![false; n]),
            Scalar::I8 => Column::I8(vec![0; n]),
            Scalar::I16 => Column::I16(vec![0; n]),
            Scalar::I32 => Column::I32(vec![0; n]),
            Scalar::I64 => Column::I64(vec![0; n]),
            Scalar::U8 => Column::U8(vec![0; n]),
            Scalar::U16 => Column::U16(vec![0; n]),
            Scalar::U32 => Column::U32(vec![0; n]),
            Scalar::U64 => Column::U64(vec![0; n]),
            Scalar::F32 => Column::F32(vec![0.0; n]),
            Scalar::F64 => Column::F64(vec![0.0; n]),
            Scalar::C64 => Column::C64(vec![Complex32::new(0.0, 0.0); n]),
            Scalar::C128 => Column::C128(vec![Complex64::new(0.0, 0.0); n]),
            Scalar::Index => Column::Index(vec![0; n]),
        }
    }

    /// A column of type `s` with `n` values from `f`.
    pub fn from_fn(s: Scalar, n: usize, mut f: impl FnMut(usize) -> Sv) -> Column {
        let mut c = Column::zeros(s, n);
        for i in 0..n {
            c.set(i, f(i));
        }
        c
    }

    /// The element type.
    pub fn scalar(&self) -> Scalar {
        match self {
            Column::Bool(_) => Scalar::Bool,
            Column::I8(_) => Scalar::I8,
            Column::I16(_) => Scalar::I16,
            Column::I32(_) => Scalar::I32,
            Column::I64(_) => Scalar::I64,
            Column::U8(_) => Scalar::U8,
            Column::U16(_) => Scalar::U16,
            Column::U32(_) => Scalar::U32,
            Column::U64(_) => Scalar::U64,
            Column::F32(_) => Scalar::F32,
            Column::F64(_) => Scalar::F64,
            Column::C64(_) => Scalar::C64,
            Column::C128(_) => Scalar::C128,
            Column::Index(_) => Scalar::Index,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        column_dispatch!(self, v => v.len())
    }

    /// Keeps the first `n` values (all if there are fewer).
    pub fn truncate(&mut self, n: usize) {
        column_dispatch!(self, v => v.truncate(n))
    }

    /// Whether the column is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i`.
    pub fn get(&self, i: usize) -> Sv {
        match self {
            Column::Bool(v) => Sv::Bool(v[i]),
            Column::I8(v) => Sv::I8(v[i]),
            Column::I16(v) => Sv::I16(v[i]),
            Column::I32(v) => Sv::I32(v[i]),
            Column::I64(v) => Sv::I64(v[i]),
            Column::U8(v) => Sv::U8(v[i]),
            Column::U16(v) => Sv::U16(v[i]),
            Column::U32(v) => Sv::U32(v[i]),
            Column::U64(v) => Sv::U64(v[i]),
            Column::F32(v) => Sv::F32(v[i]),
            Column::F64(v) => Sv::F64(v[i]),
            Column::C64(v) => Sv::C64(v[i]),
            Column::C128(v) => Sv::C128(v[i]),
            Column::Index(v) => Sv::Index(v[i]),
        }
    }

    /// Sets value `i`, converting `x` to the column's type.
    pub fn set(&mut self, i: usize, x: Sv) {
        let x = if x.scalar() == self.scalar() { x } else { x.cast(self.scalar()) };
        match (self, x) {
            (Column::Bool(v), Sv::Bool(x)) => v[i] = x,
            (Column::I8(v), Sv::I8(x)) => v[i] = x,
            (Column::I16(v), Sv::I16(x)) => v[i] = x,
            (Column::I32(v), Sv::I32(x)) => v[i] = x,
            (Column::I64(v), Sv::I64(x)) => v[i] = x,
            (Column::U8(v), Sv::U8(x)) => v[i] = x,
            (Column::U16(v), Sv::U16(x)) => v[i] = x,
            (Column::U32(v), Sv::U32(x)) => v[i] = x,
            (Column::U64(v), Sv::U64(x)) => v[i] = x,
            (Column::F32(v), Sv::F32(x)) => v[i] = x,
            (Column::F64(v), Sv::F64(x)) => v[i] = x,
            (Column::C64(v), Sv::C64(x)) => v[i] = x,
            (Column::C128(v), Sv::C128(x)) => v[i] = x,
            (Column::Index(v), Sv::Index(x)) => v[i] = x,
            _ => unreachable!("cast to the column type"),
        }
    }

    /// The values at `positions`, in that order.
    pub fn select(&self, positions: &[usize]) -> Column {
        column_map!(self, v => positions.iter().map(|&p| v[p]).collect())
    }

    /// The runs of `len` values that start at `starts`, in that order (the rows a boolean mask
    /// keeps, copied a row at a time).
    pub fn select_runs(&self, starts: &[usize], len: usize) -> Column {
        column_map!(self, v => {
            let mut out = Vec::with_capacity(starts.len() * len);
            for &s in starts {
                out.extend_from_slice(&v[s..s + len]);
            }
            out
        })
    }

    /// Copies `src` (of the same type) into positions `at..at + src.len()`.
    pub fn copy_from(&mut self, at: usize, src: &Column) {
        match (self, src) {
            (Column::Bool(d), Column::Bool(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::I8(d), Column::I8(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::I16(d), Column::I16(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::I32(d), Column::I32(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::I64(d), Column::I64(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::U8(d), Column::U8(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::U16(d), Column::U16(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::U32(d), Column::U32(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::U64(d), Column::U64(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::F32(d), Column::F32(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::F64(d), Column::F64(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::C64(d), Column::C64(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::C128(d), Column::C128(s)) => d[at..at + s.len()].copy_from_slice(s),
            (Column::Index(d), Column::Index(s)) => d[at..at + s.len()].copy_from_slice(s),
            _ => panic!("copy_from between columns of different types"),
        }
    }

    /// The values in `range`.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Column {
        match self {
            Column::Bool(v) => Column::Bool(v[range].to_vec()),
            Column::I8(v) => Column::I8(v[range].to_vec()),
            Column::I16(v) => Column::I16(v[range].to_vec()),
            Column::I32(v) => Column::I32(v[range].to_vec()),
            Column::I64(v) => Column::I64(v[range].to_vec()),
            Column::U8(v) => Column::U8(v[range].to_vec()),
            Column::U16(v) => Column::U16(v[range].to_vec()),
            Column::U32(v) => Column::U32(v[range].to_vec()),
            Column::U64(v) => Column::U64(v[range].to_vec()),
            Column::F32(v) => Column::F32(v[range].to_vec()),
            Column::F64(v) => Column::F64(v[range].to_vec()),
            Column::C64(v) => Column::C64(v[range].to_vec()),
            Column::C128(v) => Column::C128(v[range].to_vec()),
            Column::Index(v) => Column::Index(v[range].to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_keep_the_type_and_the_order_asked() {
        let c = Column::C64((0..6).map(|i| Complex32::new(i as f32, -(i as f32))).collect());
        let picked = c.select(&[4, 0, 4]);
        let z = |i: f32| Complex32::new(i, -i);
        assert_eq!(picked, Column::C64(vec![z(4.0), z(0.0), z(4.0)]));
        // Rows 2 and 0 of a 3×2 array.
        assert_eq!(Column::U16(vec![1, 2, 3, 4, 5, 6]).select_runs(&[4, 0], 2), Column::U16(vec![5, 6, 1, 2]));
        assert_eq!(Column::Bool(vec![true]).select_runs(&[], 1), Column::Bool(vec![]));
    }

    #[test]
    fn integer_arithmetic_wraps_and_checks_division() {
        assert_eq!(Sv::I8(127).binary(BinaryOp::Plus, Sv::I8(1)), Ok(Sv::I8(-128)));
        assert_eq!(Sv::U8(0).binary(BinaryOp::Minus, Sv::U8(1)), Ok(Sv::U8(255)));
        assert_eq!(Sv::I32(7).binary(BinaryOp::Divides, Sv::I32(0)), Err(ScalarError::DivisionByZero("divides")));
        assert_eq!(Sv::I32(-7).binary(BinaryOp::Modulo, Sv::I32(3)), Ok(Sv::I32(-1)));
        assert_eq!(Sv::I64(i64::MIN).binary(BinaryOp::Divides, Sv::I64(-1)), Ok(Sv::I64(i64::MIN)));
    }

    #[test]
    fn float_rules_follow_ieee() {
        let nan = Sv::F64(f64::NAN);
        assert_eq!(nan.binary(BinaryOp::Eq, nan), Ok(Sv::Bool(false)));
        assert_eq!(nan.binary(BinaryOp::Ne, nan), Ok(Sv::Bool(true)));
        assert_eq!(nan.binary(BinaryOp::Less, Sv::F64(1.0)), Ok(Sv::Bool(false)));
        assert!(matches!(Sv::F64(1.0).binary(BinaryOp::Maximum, nan), Ok(Sv::F64(x)) if x.is_nan()));
        // numpy: of equal zeros, the second operand.
        let bits = |r: Result<Sv, ScalarError>| match r {
            Ok(Sv::F64(x)) => x.to_bits(),
            _ => panic!("a float"),
        };
        for op in [BinaryOp::Maximum, BinaryOp::Minimum] {
            assert_eq!(bits(Sv::F64(-0.0).binary(op, Sv::F64(0.0))), 0.0f64.to_bits());
            assert_eq!(bits(Sv::F64(0.0).binary(op, Sv::F64(-0.0))), (-0.0f64).to_bits());
        }
        assert_eq!(Sv::F64(1.0).binary(BinaryOp::Divides, Sv::F64(0.0)), Ok(Sv::F64(f64::INFINITY)));
    }

    #[test]
    fn casts_truncate_and_saturate() {
        assert_eq!(Sv::F64(-2.7).cast(Scalar::I32), Sv::I32(-2));
        assert_eq!(Sv::F64(1e20).cast(Scalar::I32), Sv::I32(i32::MAX));
        assert_eq!(Sv::F64(f64::NAN).cast(Scalar::I64), Sv::I64(0));
        assert_eq!(Sv::I32(300).cast(Scalar::U8), Sv::U8(44));
        assert_eq!(Sv::Bool(true).cast(Scalar::F32), Sv::F32(1.0));
    }

    #[test]
    fn columns_round_trip_values() {
        let mut c = Column::zeros(Scalar::U16, 3);
        c.set(1, Sv::U16(9));
        c.set(2, Sv::I64(70000));
        assert_eq!(c.get(1), Sv::U16(9));
        assert_eq!(c.get(2), Sv::U16(70000u32 as u16));
        assert_eq!(c.select(&[2, 1]).len(), 2);
    }
}
