//! Complex arithmetic for `c64` and `c128`, with the semantics the native backend compiles.
//!
//! - `*` is the textbook product and `/` Smith's quotient, exactly as numpy computes them (the
//!   array-API standard leaves non-finite operands implementation-defined; C's Annex G recovery
//!   of infinities is not applied). The C prelude spells the same formulas (`st_cmul*`,
//!   `st_cdiv*`), so both backends agree bit for bit.
//! - The transcendental functions are the C library's (`cexp`, `clog`, `csqrt`, …: C99 Annex G
//!   special cases, which the standard's tables follow), called through FFI: `Complex<f64>` is
//!   `#[repr(C)]` and passed as C's `double _Complex` on the targets Strata builds for.
//!   `expm1`, `log1p`, `log2` and `log10` have no C function; they are numpy's formulas.
//! - `sign(z)` is `z / |z|` (0 for 0), `round` rounds both parts, `isnan`/`isinf` look at either
//!   part and `isfinite` at both.

use num_complex::{Complex32, Complex64};
use strata_ir::UnaryOp;

/// The complex functions of the C math library (glibc's `libm`, which std links).
mod c {
    use num_complex::{Complex32, Complex64};
    extern "C" {
        pub fn cexp(z: Complex64) -> Complex64;
        pub fn clog(z: Complex64) -> Complex64;
        pub fn csqrt(z: Complex64) -> Complex64;
        pub fn csin(z: Complex64) -> Complex64;
        pub fn ccos(z: Complex64) -> Complex64;
        pub fn ctan(z: Complex64) -> Complex64;
        pub fn csinh(z: Complex64) -> Complex64;
        pub fn ccosh(z: Complex64) -> Complex64;
        pub fn ctanh(z: Complex64) -> Complex64;
        pub fn casin(z: Complex64) -> Complex64;
        pub fn cacos(z: Complex64) -> Complex64;
        pub fn catan(z: Complex64) -> Complex64;
        pub fn casinh(z: Complex64) -> Complex64;
        pub fn cacosh(z: Complex64) -> Complex64;
        pub fn catanh(z: Complex64) -> Complex64;
        pub fn cpow(a: Complex64, b: Complex64) -> Complex64;
        pub fn cexpf(z: Complex32) -> Complex32;
        pub fn clogf(z: Complex32) -> Complex32;
        pub fn csqrtf(z: Complex32) -> Complex32;
        pub fn csinf(z: Complex32) -> Complex32;
        pub fn ccosf(z: Complex32) -> Complex32;
        pub fn ctanf(z: Complex32) -> Complex32;
        pub fn csinhf(z: Complex32) -> Complex32;
        pub fn ccoshf(z: Complex32) -> Complex32;
        pub fn ctanhf(z: Complex32) -> Complex32;
        pub fn casinf(z: Complex32) -> Complex32;
        pub fn cacosf(z: Complex32) -> Complex32;
        pub fn catanf(z: Complex32) -> Complex32;
        pub fn casinhf(z: Complex32) -> Complex32;
        pub fn cacoshf(z: Complex32) -> Complex32;
        pub fn catanhf(z: Complex32) -> Complex32;
        pub fn cpowf(a: Complex32, b: Complex32) -> Complex32;
    }
}

macro_rules! complex_family {
    ($t:ty, $c:ident, $mul:ident, $div:ident, $pow:ident, $unary:ident,
     [$exp:ident, $log:ident, $sqrt:ident, $sin:ident, $cos:ident, $tan:ident, $sinh:ident, $cosh:ident,
      $tanh:ident, $asin:ident, $acos:ident, $atan:ident, $asinh:ident, $acosh:ident, $atanh:ident, $cpow:ident]) => {
        /// The textbook product (numpy's).
        pub fn $mul(a: $c, b: $c) -> $c {
            <$c>::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
        }

        /// Smith's quotient, as numpy's complex division computes it (a zero divisor gives the
        /// parts divided by zero: infinities or NaN).
        pub fn $div(a: $c, b: $c) -> $c {
            let (br, bi) = (b.re.abs(), b.im.abs());
            if br >= bi {
                if br == 0.0 && bi == 0.0 {
                    <$c>::new(a.re / br, a.im / br)
                } else {
                    let rat = b.im / b.re;
                    let scl = 1.0 / (b.re + b.im * rat);
                    <$c>::new((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl)
                }
            } else {
                let rat = b.re / b.im;
                let scl = 1.0 / (b.im + b.re * rat);
                <$c>::new((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl)
            }
        }

        /// `a ** b` as numpy computes it: `a ** 0` is 1, `0 ** b` is 0 when `b`'s real part is
        /// positive and NaN otherwise, else C's `cpow` (which gives NaN for `0 ** 0`).
        pub fn $pow(a: $c, b: $c) -> $c {
            if b.re == 0.0 && b.im == 0.0 {
                return <$c>::new(1.0, 0.0);
            }
            if a.re == 0.0 && a.im == 0.0 {
                return if b.re > 0.0 { <$c>::new(0.0, 0.0) } else { <$c>::new(f64::NAN as _, f64::NAN as _) };
            }
            // SAFETY: a pure C library function on values.
            unsafe { c::$cpow(a, b) }
        }

        /// A unary builtin on a complex value: a complex result, or (`abs`, `real`, `imag`) a real
        /// one in the real part, or (the tests) 1.0/0.0 in the real part. The caller knows which
        /// from [`UnaryOp::result`].
        pub fn $unary(op: UnaryOp, z: $c) -> $c {
            let re = |x: $t| <$c>::new(x, 0.0);
            let flag = |b: bool| re(if b { 1.0 } else { 0.0 });
            // SAFETY (every `c::` call): pure C library functions on values.
            unsafe {
                match op {
                    UnaryOp::Neg => -z,
                    UnaryOp::Conj => z.conj(),
                    UnaryOp::Real => re(z.re),
                    UnaryOp::Imag => re(z.im),
                    UnaryOp::Abs => re(z.re.hypot(z.im)),
                    UnaryOp::IsNan => flag(z.re.is_nan() || z.im.is_nan()),
                    UnaryOp::IsInf => flag(z.re.is_infinite() || z.im.is_infinite()),
                    UnaryOp::IsFinite => flag(z.re.is_finite() && z.im.is_finite()),
                    UnaryOp::Round => <$c>::new(z.re.round_ties_even(), z.im.round_ties_even()),
                    UnaryOp::Sign => {
                        let m = z.re.hypot(z.im);
                        if z.re.is_nan() || z.im.is_nan() {
                            <$c>::new(<$t>::NAN, <$t>::NAN)
                        } else if m == 0.0 {
                            <$c>::new(0.0, 0.0)
                        } else if z.re.is_infinite() && z.im.is_infinite() {
                            // `z / |z|` is ∞/∞ in both parts (numpy's result).
                            <$c>::new(<$t>::NAN, <$t>::NAN)
                        } else if m.is_infinite() {
                            // The direction of the infinite part (numpy's result).
                            let fix = |x: $t| if x.is_infinite() { x.signum() } else { 0.0 };
                            let d = <$c>::new(fix(z.re), fix(z.im));
                            let n = d.re.hypot(d.im);
                            <$c>::new(d.re / n, d.im / n)
                        } else {
                            <$c>::new(z.re / m, z.im / m)
                        }
                    }
                    UnaryOp::Sqrt => c::$sqrt(z),
                    UnaryOp::Exp => c::$exp(z),
                    UnaryOp::Log => c::$log(z),
                    UnaryOp::Sin => c::$sin(z),
                    UnaryOp::Cos => c::$cos(z),
                    UnaryOp::Tan => c::$tan(z),
                    UnaryOp::Sinh => c::$sinh(z),
                    UnaryOp::Cosh => c::$cosh(z),
                    // The array API's special case (C leaves the zero's sign to `sin(2y)`):
                    // tanh(±∞ + iy) for finite y is ±1 with a zero of y's sign.
                    UnaryOp::Tanh if z.re.is_infinite() && z.im.is_finite() => {
                        <$c>::new((1.0 as $t).copysign(z.re), (0.0 as $t).copysign(z.im))
                    }
                    UnaryOp::Tanh => c::$tanh(z),
                    UnaryOp::Asin => c::$asin(z),
                    UnaryOp::Acos => c::$acos(z),
                    UnaryOp::Atan => c::$atan(z),
                    UnaryOp::Asinh => c::$asinh(z),
                    UnaryOp::Acosh => c::$acosh(z),
                    UnaryOp::Atanh => c::$atanh(z),
                    UnaryOp::Log2 => {
                        let l = c::$log(z);
                        <$c>::new(l.re / std::f64::consts::LN_2 as $t, l.im / std::f64::consts::LN_2 as $t)
                    }
                    UnaryOp::Log10 => {
                        let l = c::$log(z);
                        <$c>::new(l.re / std::f64::consts::LN_10 as $t, l.im / std::f64::consts::LN_10 as $t)
                    }
                    // Non-finite parts: `cexp(z) - 1`, whose special cases (C99 Annex G) are
                    // the array API's for `expm1`; finite ones numpy's `nc_expm1`.
                    UnaryOp::Expm1 if !z.re.is_finite() || !z.im.is_finite() => {
                        let e = c::$exp(z);
                        <$c>::new(e.re - 1.0, e.im)
                    }
                    // numpy's `nc_expm1` and `nc_log1p`; `+ 0.0` makes the real part of
                    // expm1(-0 ± 0j) +0, as the array API requires (the formula gives -0).
                    UnaryOp::Expm1 => {
                        let a = (z.im / 2.0).sin();
                        <$c>::new((z.re.exp_m1() * z.im.cos() - 2.0 * a * a) + 0.0, z.re.exp() * z.im.sin())
                    }
                    UnaryOp::Log1p => {
                        let l = (z.re + 1.0).hypot(z.im);
                        <$c>::new(l.ln(), z.im.atan2(z.re + 1.0))
                    }
                    // Refused on complex operands by the verifier.
                    UnaryOp::Not
                    | UnaryOp::Floor
                    | UnaryOp::Ceil
                    | UnaryOp::Trunc
                    | UnaryOp::Cbrt
                    | UnaryOp::Gamma
                    | UnaryOp::SignBit
                    | UnaryOp::BitNot => z,
                }
            }
        }
    };
}

complex_family!(
    f32,
    Complex32,
    mul32,
    div32,
    pow32,
    unary32,
    [
        cexpf, clogf, csqrtf, csinf, ccosf, ctanf, csinhf, ccoshf, ctanhf, casinf, cacosf, catanf, casinhf, cacoshf,
        catanhf, cpowf
    ]
);
complex_family!(
    f64,
    Complex64,
    mul64,
    div64,
    pow64,
    unary64,
    [cexp, clog, csqrt, csin, ccos, ctan, csinh, ccosh, ctanh, casin, cacos, catan, casinh, cacosh, catanh, cpow]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_and_to_zero_are_numpys() {
        let c = Complex64::new;
        assert_eq!(pow64(c(0.0, 0.0), c(0.0, 0.0)), c(1.0, 0.0));
        assert_eq!(pow64(c(f64::NAN, 1.0), c(0.0, 0.0)), c(1.0, 0.0));
        assert_eq!(pow64(c(0.0, 0.0), c(2.0, 1.0)), c(0.0, 0.0));
        assert!(pow64(c(0.0, 0.0), c(-1.0, 0.0)).re.is_nan() && pow64(c(0.0, 0.0), c(0.0, -1.0)).im.is_nan());
        let z = pow32(Complex32::new(0.0, 0.0), Complex32::new(0.0, 0.0));
        assert_eq!(z, Complex32::new(1.0, 0.0));
        assert!((pow64(c(0.0, 2.0), c(2.0, 0.0)) - c(-4.0, 0.0)).norm() < 1e-12);
    }

    #[test]
    fn products_and_quotients_are_numpys() {
        let (a, b) = (Complex64::new(1.0, 2.0), Complex64::new(3.0, -4.0));
        assert_eq!(mul64(a, b), Complex64::new(11.0, 2.0));
        assert_eq!(div64(a, b), Complex64::new(-0.2, 0.4));
        let q = div64(Complex64::new(1.0, 1.0), Complex64::new(0.0, 0.0));
        assert!(q.re.is_infinite() && q.im.is_infinite());
    }

    #[test]
    fn library_functions_follow_annex_g() {
        // exp(+0 + 0j) = 1 + 0j; sqrt(-4) = 2j; log(-1) = πj
        assert_eq!(unary64(UnaryOp::Exp, Complex64::new(0.0, 0.0)), Complex64::new(1.0, 0.0));
        assert_eq!(unary64(UnaryOp::Sqrt, Complex64::new(-4.0, 0.0)), Complex64::new(0.0, 2.0));
        assert_eq!(unary64(UnaryOp::Log, Complex64::new(-1.0, 0.0)), Complex64::new(0.0, std::f64::consts::PI));
        // sqrt(x + ∞j) = +∞ + ∞j even for a NaN real part.
        let r = unary64(UnaryOp::Sqrt, Complex64::new(f64::NAN, f64::INFINITY));
        assert_eq!((r.re, r.im), (f64::INFINITY, f64::INFINITY));
        assert_eq!(unary32(UnaryOp::Abs, Complex32::new(3.0, 4.0)).re, 5.0);
        assert_eq!(unary64(UnaryOp::Sign, Complex64::new(0.0, -2.0)), Complex64::new(0.0, -1.0));
    }

    #[test]
    fn expm1_of_a_signed_zero_has_a_positive_zero_real_part() {
        // The array API: real(x) ±0 and imag(x) +0 give 0 + 0j (the formula alone gives -0).
        for (re, im) in [(-0.0, 0.0), (0.0, 0.0), (-0.0, -0.0)] {
            let r = unary64(UnaryOp::Expm1, Complex64::new(re, im));
            assert!(r.re == 0.0 && r.re.is_sign_positive() && r.im == 0.0, "{re} {im}: {r}");
            assert!(unary32(UnaryOp::Expm1, Complex32::new(re as f32, im as f32)).re.is_sign_positive());
        }
        assert!(unary64(UnaryOp::Expm1, Complex64::new(-0.0, 0.0)).im.is_sign_positive());
        let r = unary64(UnaryOp::Expm1, Complex64::new(1e-3, 0.5));
        let want = Complex64::new(1e-3, 0.5).exp() - 1.0;
        assert!((r - want).norm() < 1e-15, "{r} {want}");
    }
}
