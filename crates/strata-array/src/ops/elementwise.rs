//! Elementwise functions (array API "Element-wise Functions"), `astype`, `where` and `clip`:
//! all defined through the core IR's elementwise builtins (seed 000), with the operands
//! promoted to a common dtype and placed in the broadcast shape first.

use strata_ir::Scalar;

use super::{cast, elementwise, weak_operand};
use crate::array::Array;
use crate::dtype::{promote, DType, Weak};
use crate::error::{dtype_error, Result};

/// An operand of a binary function: an array, or a Python-style scalar (weakly typed).
#[derive(Clone, Debug)]
pub enum Operand<'a> {
    /// An array.
    Array(&'a Array),
    /// A scalar.
    Scalar(Weak),
}

impl<'a> From<&'a Array> for Operand<'a> {
    fn from(a: &'a Array) -> Self {
        Operand::Array(a)
    }
}

impl From<f64> for Operand<'_> {
    fn from(x: f64) -> Self {
        Operand::Scalar(Weak::Float(x))
    }
}

impl From<i64> for Operand<'_> {
    fn from(x: i64) -> Self {
        Operand::Scalar(Weak::Int(x))
    }
}

impl From<num_complex::Complex64> for Operand<'_> {
    fn from(z: num_complex::Complex64) -> Self {
        Operand::Scalar(Weak::Complex(z.re, z.im))
    }
}

impl From<bool> for Operand<'_> {
    fn from(x: bool) -> Self {
        Operand::Scalar(Weak::Bool(x))
    }
}

impl From<Weak> for Operand<'_> {
    fn from(x: Weak) -> Self {
        Operand::Scalar(x)
    }
}

/// Both operands as arrays of their promoted dtype.
fn promoted(op: &'static str, a: Operand, b: Operand) -> Result<(Array, Array, DType)> {
    let (x, y) = match (a, b) {
        (Operand::Array(x), Operand::Array(y)) => {
            let d = promote(op, x.dtype(), y.dtype())?;
            (cast(x, d), cast(y, d))
        }
        (Operand::Array(x), Operand::Scalar(w)) => {
            let d = w.promote_with(x.dtype());
            (cast(x, d), weak_operand(w, d, x.place()))
        }
        (Operand::Scalar(w), Operand::Array(y)) => {
            let d = w.promote_with(y.dtype());
            (weak_operand(w, d, y.place()), cast(y, d))
        }
        (Operand::Scalar(v), Operand::Scalar(w)) => {
            let d = w.promote_with(v.default_dtype());
            let place = crate::array::Place::host();
            (super::creation::full(&[], v, Some(d), &place)?, super::creation::full(&[], w, Some(d), &place)?)
        }
    };
    let d = x.dtype();
    Ok((x, y, d))
}

/// The float dtype a function defined on floats computes an integer dtype in (numpy's choice,
/// with `f32` where numpy would pick `f16`).
pub(crate) fn float_for(d: DType) -> DType {
    match d {
        Scalar::F32 | Scalar::F64 | Scalar::C64 | Scalar::C128 => d,
        _ if d.size_bytes() <= 2 => Scalar::F32,
        _ => Scalar::F64,
    }
}

fn need(op: &'static str, ok: bool, d: DType, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(dtype_error(op, format!("defined on {what}, not on {}", d.numpy_name())))
    }
}

fn numeric_binary(op: &'static str, kw: &str, a: Operand, b: Operand) -> Result<Array> {
    let (x, y, d) = promoted(op, a, b)?;
    need(op, d != Scalar::Bool, d, "numeric dtypes")?;
    elementwise(op, kw, &[&x, &y], d)
}

/// A binary function the standard defines on real numbers only (ordering, floor division).
fn real_binary(op: &'static str, kw: &str, a: Operand, b: Operand) -> Result<Array> {
    let (x, y, d) = promoted(op, a, b)?;
    need(op, d != Scalar::Bool && !d.is_complex(), d, "real-valued dtypes")?;
    elementwise(op, kw, &[&x, &y], d)
}

fn float_binary(op: &'static str, kw: &str, a: Operand, b: Operand) -> Result<Array> {
    let (x, y, d) = promoted(op, a, b)?;
    need(op, !d.is_complex(), d, "real-valued dtypes")?;
    let f = float_for(d);
    elementwise(op, kw, &[&cast(&x, f), &cast(&y, f)], f)
}

fn comparison(op: &'static str, kw: &str, a: Operand, b: Operand) -> Result<Array> {
    let (x, y, _) = promoted(op, a, b)?;
    elementwise(op, kw, &[&x, &y], Scalar::Bool)
}

/// `<`, `<=`, `>`, `>=`: complex numbers have no order.
fn ordering(op: &'static str, kw: &str, a: Operand, b: Operand) -> Result<Array> {
    let (x, y, d) = promoted(op, a, b)?;
    need(op, !d.is_complex(), d, "real-valued dtypes")?;
    elementwise(op, kw, &[&x, &y], Scalar::Bool)
}

fn bits_binary(op: &'static str, kw: &str, a: Operand, b: Operand, allow_bool: bool) -> Result<Array> {
    let (x, y, d) = promoted(op, a, b)?;
    let what = if allow_bool { "integer and boolean dtypes" } else { "integer dtypes" };
    need(op, d.is_integer() || (allow_bool && d == Scalar::Bool), d, what)?;
    elementwise(op, kw, &[&x, &y], d)
}

fn logical(op: &'static str, kw: &str, a: Operand, b: Operand) -> Result<Array> {
    let (x, y, _) = promoted(op, a, b)?;
    elementwise(op, kw, &[&truthy(&x), &truthy(&y)], Scalar::Bool)
}

/// `x != 0` as `bool` (the array itself if it is boolean).
pub(crate) fn truthy(x: &Array) -> Array {
    cast(x, Scalar::Bool)
}

fn unary(op: &'static str, kw: &str, x: &Array, dtype: DType) -> Result<Array> {
    elementwise(op, kw, &[x], dtype)
}

fn float_unary(op: &'static str, kw: &str, x: &Array) -> Result<Array> {
    let f = float_for(x.dtype());
    unary(op, kw, &cast(x, f), f)
}

fn numeric_unary(op: &'static str, kw: &str, x: &Array) -> Result<Array> {
    need(op, x.dtype() != Scalar::Bool, x.dtype(), "numeric dtypes")?;
    unary(op, kw, x, x.dtype())
}

macro_rules! binaries {
    ($($(#[$m:meta])* $name:ident => $how:ident($kw:literal $(, $extra:expr)?);)*) => {$(
        $(#[$m])*
        pub fn $name<'a>(a: impl Into<Operand<'a>>, b: impl Into<Operand<'a>>) -> Result<Array> {
            $how(stringify!($name), $kw, a.into(), b.into() $(, $extra)?)
        }
    )*};
}

binaries! {
    /// `a + b`.
    add => numeric_binary("plus");
    /// `a - b`.
    subtract => numeric_binary("minus");
    /// `a * b`.
    multiply => numeric_binary("multiplies");
    /// `floor(a / b)`; an integer divisor 0 gives 0 (numpy).
    floor_divide => real_binary("floor_divide");
    /// `a - floor_divide(a, b) * b`, with the sign of `b`; an integer divisor 0 gives 0.
    remainder => real_binary("remainder");
    /// The larger, NaN if either is.
    maximum => real_binary("maximum");
    /// The smaller, NaN if either is.
    minimum => real_binary("minimum");
    /// The angle of `(b, a)`.
    atan2 => float_binary("atan2");
    /// `sqrt(a² + b²)`.
    hypot => float_binary("hypot");
    /// `|a|` with the sign of `b`.
    copysign => float_binary("copysign");
    /// `log(exp(a) + exp(b))`.
    logaddexp => float_binary("logaddexp");
    /// The next float after `a` toward `b`.
    nextafter => float_binary("nextafter");
    /// `a == b`.
    equal => comparison("eq");
    /// `a != b`.
    not_equal => comparison("ne");
    /// `a < b`.
    less => ordering("less");
    /// `a <= b`.
    less_equal => ordering("less_equal");
    /// `a > b`.
    greater => ordering("greater");
    /// `a >= b`.
    greater_equal => ordering("greater_equal");
    /// Bitwise and.
    bitwise_and => bits_binary("bit_and", true);
    /// Bitwise or.
    bitwise_or => bits_binary("bit_or", true);
    /// Bitwise exclusive or.
    bitwise_xor => bits_binary("bit_xor", true);
    /// `a << b` (0 once `b` reaches the bit width).
    bitwise_left_shift => bits_binary("shift_left", false);
    /// `a >> b`, arithmetic for signed dtypes.
    bitwise_right_shift => bits_binary("shift_right", false);
    /// Logical and of the truth values.
    logical_and => logical("and");
    /// Logical or of the truth values.
    logical_or => logical("or");
    /// Logical exclusive or of the truth values.
    logical_xor => logical("xor");
}

/// `a / b`: true division; integer operands are divided as floats (`f64`, numpy's choice).
pub fn divide<'a>(a: impl Into<Operand<'a>>, b: impl Into<Operand<'a>>) -> Result<Array> {
    let (x, y, d) = promoted("divide", a.into(), b.into())?;
    let f = if d.is_inexact() { d } else { Scalar::F64 };
    elementwise("divide", "divides", &[&cast(&x, f), &cast(&y, f)], f)
}

/// `a ** b`; a negative integer exponent is an error.
pub fn pow<'a>(a: impl Into<Operand<'a>>, b: impl Into<Operand<'a>>) -> Result<Array> {
    numeric_binary("pow", "power", a.into(), b.into())
}

macro_rules! float_unaries {
    ($($(#[$m:meta])* $name:ident => $kw:literal;)*) => {$(
        $(#[$m])*
        pub fn $name(x: &Array) -> Result<Array> {
            float_unary(stringify!($name), $kw, x)
        }
    )*};
}

float_unaries! {
    /// Square root.
    sqrt => "sqrt";
    /// `e^x`.
    exp => "exp";
    /// `e^x - 1`.
    expm1 => "expm1";
    /// Natural logarithm.
    log => "log";
    /// `log(1 + x)`.
    log1p => "log1p";
    /// Base-2 logarithm.
    log2 => "log2";
    /// Base-10 logarithm.
    log10 => "log10";
    /// Sine.
    sin => "sin";
    /// Cosine.
    cos => "cos";
    /// Tangent.
    tan => "tan";
    /// Inverse sine.
    asin => "asin";
    /// Inverse cosine.
    acos => "acos";
    /// Inverse tangent.
    atan => "atan";
    /// Hyperbolic sine.
    sinh => "sinh";
    /// Hyperbolic cosine.
    cosh => "cosh";
    /// Hyperbolic tangent.
    tanh => "tanh";
    /// Inverse hyperbolic sine.
    asinh => "asinh";
    /// Inverse hyperbolic cosine.
    acosh => "acosh";
    /// Inverse hyperbolic tangent.
    atanh => "atanh";
}

macro_rules! roundings {
    ($($(#[$m:meta])* $name:ident => $kw:literal;)*) => {$(
        $(#[$m])*
        /// Integers are returned unchanged; complex numbers are refused.
        pub fn $name(x: &Array) -> Result<Array> {
            need(stringify!($name), !x.dtype().is_complex(), x.dtype(), "real-valued dtypes")?;
            if x.dtype().is_float() { unary(stringify!($name), $kw, x, x.dtype()) } else { Ok(x.clone()) }
        }
    )*};
}

roundings! {
    /// Rounds down.
    floor => "floor";
    /// Rounds up.
    ceil => "ceil";
    /// Rounds toward zero.
    trunc => "trunc";
}

/// Rounds to the nearest integer, ties to even (both parts of a complex number); integers are
/// returned unchanged.
pub fn round(x: &Array) -> Result<Array> {
    if x.dtype().is_inexact() {
        unary("round", "round", x, x.dtype())
    } else {
        Ok(x.clone())
    }
}

/// `|x|` (a complex number's modulus, of its parts' dtype).
pub fn abs(x: &Array) -> Result<Array> {
    need("abs", x.dtype() != Scalar::Bool, x.dtype(), "numeric dtypes")?;
    unary("abs", "abs", x, x.dtype().real_part())
}

/// `-x` (wrapping for integers).
pub fn negative(x: &Array) -> Result<Array> {
    numeric_unary("negative", "neg", x)
}

/// `+x`.
pub fn positive(x: &Array) -> Result<Array> {
    need("positive", x.dtype() != Scalar::Bool, x.dtype(), "numeric dtypes")?;
    Ok(x.clone())
}

/// `x * x`.
pub fn square(x: &Array) -> Result<Array> {
    multiply(x, x)
}

/// −1, 0 or 1 (NaN stays NaN); `z / |z|` for a complex `z` (0 for 0).
pub fn sign(x: &Array) -> Result<Array> {
    numeric_unary("sign", "sign", x)
}

/// Whether each element is NaN.
pub fn isnan(x: &Array) -> Result<Array> {
    unary("isnan", "isnan", &numeric_view(x), Scalar::Bool)
}

/// Whether each element is ±∞.
pub fn isinf(x: &Array) -> Result<Array> {
    unary("isinf", "isinf", &numeric_view(x), Scalar::Bool)
}

/// Whether each element is finite.
pub fn isfinite(x: &Array) -> Result<Array> {
    unary("isfinite", "isfinite", &numeric_view(x), Scalar::Bool)
}

/// Whether the sign bit is set (`x < 0` for integers).
pub fn signbit(x: &Array) -> Result<Array> {
    need("signbit", !x.dtype().is_complex(), x.dtype(), "real-valued dtypes")?;
    if x.dtype().is_float() {
        unary("signbit", "signbit", x, Scalar::Bool)
    } else {
        less(x, 0i64)
    }
}

fn numeric_view(x: &Array) -> Array {
    if x.dtype() == Scalar::Bool {
        cast(x, Scalar::U8)
    } else {
        x.clone()
    }
}

/// Logical not of the truth value.
pub fn logical_not(x: &Array) -> Result<Array> {
    unary("logical_not", "not", &truthy(x), Scalar::Bool)
}

/// Bitwise complement (logical not for `bool`).
pub fn bitwise_invert(x: &Array) -> Result<Array> {
    let d = x.dtype();
    need("bitwise_invert", d.is_integer() || d == Scalar::Bool, d, "integer and boolean dtypes")?;
    unary("bitwise_invert", "bit_not", x, d)
}

/// The complex conjugate (the value itself for real dtypes).
pub fn conj(x: &Array) -> Result<Array> {
    if x.dtype().is_complex() {
        unary("conj", "conj", x, x.dtype())
    } else {
        Ok(x.clone())
    }
}

/// The real part, of the parts' dtype (the value itself for real dtypes).
pub fn real(x: &Array) -> Result<Array> {
    if x.dtype().is_complex() {
        unary("real", "real", x, x.dtype().real_part())
    } else {
        Ok(x.clone())
    }
}

/// The imaginary part, of the parts' dtype (zeros for real dtypes).
pub fn imag(x: &Array) -> Result<Array> {
    if x.dtype().is_complex() {
        unary("imag", "imag", x, x.dtype().real_part())
    } else {
        super::creation::zeros_like(x)
    }
}

/// Converts to `dtype` (float → integer truncates toward zero and saturates; NaN gives 0; a
/// real value becomes a complex one with a zero imaginary part). A complex array converts only
/// to a complex dtype or `bool` (the standard: take `real`, `imag` or `abs` first).
pub fn astype(x: &Array, dtype: DType) -> Result<Array> {
    if dtype == Scalar::Index {
        return Err(dtype_error("astype", "`index` is not an array dtype"));
    }
    if x.dtype().is_complex() && !dtype.is_complex() && dtype != Scalar::Bool {
        return Err(dtype_error(
            "astype",
            format!(
                "a complex array does not convert to {}: take real(x), imag(x) or abs(x) first",
                dtype.numpy_name()
            ),
        ));
    }
    Ok(cast(x, dtype))
}

/// `cond ? a : b`, broadcast together; `a` and `b` are promoted.
pub fn where_<'a>(cond: &Array, a: impl Into<Operand<'a>>, b: impl Into<Operand<'a>>) -> Result<Array> {
    let (x, y, d) = promoted("where", a.into(), b.into())?;
    elementwise("where", "select", &[&truthy(cond), &x, &y], d)
}

/// `min(max(x, lo), hi)` where given; NaN stays NaN. The bounds take `x`'s dtype (array API).
pub fn clip(x: &Array, min: Option<Operand>, max: Option<Operand>) -> Result<Array> {
    need("clip", !x.dtype().is_complex(), x.dtype(), "real-valued dtypes")?;
    for o in [&min, &max].into_iter().flatten() {
        let complex = match o {
            Operand::Array(a) => a.dtype().is_complex(),
            Operand::Scalar(w) => matches!(w, Weak::Complex(..)),
        };
        if complex {
            return Err(dtype_error("clip", "the bounds must be real numbers, not complex ones"));
        }
    }
    let bound = |o: Operand| -> Array {
        match o {
            Operand::Array(a) => cast(a, x.dtype()),
            Operand::Scalar(w) => weak_operand(w, x.dtype(), x.place()),
        }
    };
    let mut r = x.clone();
    if let Some(lo) = min {
        r = elementwise("clip", "maximum", &[&r, &bound(lo)], x.dtype())?;
    }
    if let Some(hi) = max {
        r = elementwise("clip", "minimum", &[&r, &bound(hi)], x.dtype())?;
    }
    Ok(r)
}
