//! The `fft` extension's transforms: runtime kernels (rustfft) on evaluated arrays, along one
//! axis at a time (`fftn` and friends apply them axis after axis; `fftfreq`, `fftshift` are
//! traced compositions in the Python namespace).
//!
//! - `complex128` (and `float64` for the real transforms) computes in `f64`, `complex64`
//!   (`float32`) in `f32`, as numpy's pocketfft does.
//! - `n` zero-pads or truncates the input along the axis before the transform.
//! - `norm`: `"backward"` scales the inverse by `1/n`, `"ortho"` both directions by `1/√n`,
//!   `"forward"` the forward transform by `1/n`.
//! - `irfft` reads the first `n/2 + 1` entries of the Hermitian half-spectrum; the imaginary
//!   parts of the zero-frequency entry (and of the Nyquist one for even `n`) do not contribute.
//! - Plans are kept per thread and length (rustfft's planner), so a loop of equal-length
//!   transforms plans once.

use std::cell::RefCell;
use std::sync::Arc;

use num_complex::Complex;
use rustfft::{Fft, FftNum, FftPlanner};
use strata_ir::Scalar;
use strata_runtime::{Column, Data};

use crate::array::{Array, Place};
use crate::error::{dtype_error, invalid, Result};

/// How a transform is scaled (the standard's `norm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    /// No scaling forward, `1/n` inverse (the default).
    Backward,
    /// `1/√n` both ways.
    Ortho,
    /// `1/n` forward, none inverse.
    Forward,
}

impl Norm {
    /// The norm named as the standard names it.
    pub fn from_name(s: &str) -> Option<Norm> {
        Some(match s {
            "backward" => Norm::Backward,
            "ortho" => Norm::Ortho,
            "forward" => Norm::Forward,
            _ => return None,
        })
    }

    fn factor(self, n: usize, inverse: bool) -> f64 {
        match (self, inverse) {
            (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
            (Norm::Backward, true) | (Norm::Forward, false) => 1.0 / n as f64,
            _ => 1.0,
        }
    }
}

thread_local! {
    static PLANS64: RefCell<FftPlanner<f64>> = RefCell::new(FftPlanner::new());
    static PLANS32: RefCell<FftPlanner<f32>> = RefCell::new(FftPlanner::new());
}

/// A precision rustfft computes in, with its complex column.
trait Precision: FftNum + num_complex::ComplexFloat<Real = Self> {
    fn plan(n: usize, inverse: bool) -> Arc<dyn Fft<Self>>;
    /// The column's values as complex numbers of this precision: borrowed when the column holds
    /// them already, else converted once (a real input, or the other precision).
    fn complex_values(c: &Column) -> std::borrow::Cow<'_, [Complex<Self>]>;
    fn complex_column(v: Vec<Complex<Self>>) -> Column;
    fn real_column(v: Vec<Self>) -> Column;
    fn of_f64(x: f64) -> Self;
}

macro_rules! precision {
    ($t:ty, $plans:ident, $cv:ident, $rv:ident) => {
        impl Precision for $t {
            fn plan(n: usize, inverse: bool) -> Arc<dyn Fft<$t>> {
                $plans.with(|p| {
                    let mut p = p.borrow_mut();
                    if inverse {
                        p.plan_fft_inverse(n)
                    } else {
                        p.plan_fft_forward(n)
                    }
                })
            }
            fn complex_values(c: &Column) -> std::borrow::Cow<'_, [Complex<$t>]> {
                match c {
                    Column::$cv(v) => std::borrow::Cow::Borrowed(v),
                    _ => (0..c.len())
                        .map(|i| {
                            let z = c.get(i).as_c128();
                            Complex::new(z.re as $t, z.im as $t)
                        })
                        .collect(),
                }
            }
            fn complex_column(v: Vec<Complex<$t>>) -> Column {
                Column::$cv(v)
            }
            fn real_column(v: Vec<$t>) -> Column {
                Column::$rv(v)
            }
            fn of_f64(x: f64) -> $t {
                x as $t
            }
        }
    };
}
precision!(f64, PLANS64, C128, F64);
precision!(f32, PLANS32, C64, F32);

/// The kind of transform along the axis.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Complex to complex.
    Complex { inverse: bool },
    /// Real to the half-spectrum (`n/2 + 1` outputs).
    Real,
    /// Half-spectrum to real (`n` outputs).
    InverseReal,
}

/// Transforms every lane of `x` along `axis`: `n` points (inputs padded or cut to it), outputs
/// of length `out_len`.
fn lanes<T: Precision>(x: &Array, axis: usize, n: usize, kind: Kind, norm: Norm) -> Result<Array> {
    // The lane buffer, the scratch and the result are the same sizes on every call of a loop:
    // pooled, they are not page-faulted afresh each time (`strata_runtime::aligned::pooled`).
    strata_runtime::aligned::pooled(|| pooled_lanes::<T>(x, axis, n, kind, norm))
}

fn pooled_lanes<T: Precision>(x: &Array, axis: usize, n: usize, kind: Kind, norm: Norm) -> Result<Array> {
    let shape = x.shape().to_vec();
    let t = x.eval_whole()?;
    let Data::Scalars(col) = &t.data else { unreachable!("arrays hold scalars") };
    let input = T::complex_values(col);
    let (outer, len_in, inner) =
        (shape[..axis].iter().product::<usize>(), shape[axis], shape[axis + 1..].iter().product::<usize>());
    let out_len = match kind {
        Kind::Real => n / 2 + 1,
        _ => n,
    };
    let inverse = matches!(kind, Kind::Complex { inverse: true } | Kind::InverseReal);
    let plan = T::plan(n, inverse);
    let scale = T::of_f64(norm.factor(n, inverse));
    let lanes = outer * inner;
    let mut complex_out = Vec::new();
    let mut real_out = Vec::new();
    if kind == Kind::InverseReal {
        real_out = vec![T::zero(); lanes * out_len];
    } else {
        complex_out = vec![Complex::new(T::zero(), T::zero()); lanes * out_len];
    }
    let mut buf = vec![Complex::new(T::zero(), T::zero()); n];
    let mut scratch = vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
    let at = |o: usize, i: usize, r: usize, len: usize| (o * len + i) * inner + r;
    for o in 0..outer {
        for r in 0..inner {
            buf.iter_mut().for_each(|z| *z = Complex::new(T::zero(), T::zero()));
            match kind {
                Kind::InverseReal => {
                    // The Hermitian spectrum from its first n/2 + 1 entries.
                    let half = (n / 2 + 1).min(len_in);
                    for (k, slot) in buf.iter_mut().enumerate().take(half) {
                        *slot = input[at(o, k, r, len_in)];
                    }
                    for k in 1..n.div_ceil(2) {
                        if k < half {
                            buf[n - k] = buf[k].conj();
                        }
                    }
                }
                _ => {
                    for (k, slot) in buf.iter_mut().enumerate().take(n.min(len_in)) {
                        *slot = input[at(o, k, r, len_in)];
                    }
                }
            }
            plan.process_with_scratch(&mut buf, &mut scratch);
            for k in 0..out_len {
                let v = buf[k] * scale;
                if kind == Kind::InverseReal {
                    real_out[at(o, k, r, out_len)] = v.re;
                } else {
                    complex_out[at(o, k, r, out_len)] = v;
                }
            }
        }
    }
    let mut out_shape = shape;
    out_shape[axis] = out_len;
    let col = if kind == Kind::InverseReal { T::real_column(real_out) } else { T::complex_column(complex_out) };
    Array::from_column(&out_shape, col, Place::host())
}

/// Checks the axis and the dtype family; returns the axis, the number of points and whether
/// the transform computes in `f32`.
fn setup(
    op: &'static str,
    x: &Array,
    n: Option<usize>,
    axis: isize,
    complex_input: bool,
) -> Result<(usize, usize, bool)> {
    if x.ndim() == 0 {
        return Err(invalid(op, "needs an array of at least one dimension"));
    }
    let d = x.dtype();
    let ok = if complex_input { d.is_inexact() } else { d.is_float() };
    if !ok {
        let what = if complex_input { "floating-point dtypes" } else { "real floating-point dtypes" };
        return Err(dtype_error(op, format!("defined on {what}, not on {}", d.numpy_name())));
    }
    let ax = Array::axis(op, axis, x.ndim())?;
    Ok((ax, n.unwrap_or(x.shape()[ax]), d.real_part() == Scalar::F32))
}

fn points(op: &'static str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(invalid(op, "the number of points must be at least 1"));
    }
    Ok(())
}

/// The discrete Fourier transform (`inverse`: its inverse) of `x` along `axis` over `n` points
/// (a real `x` is transformed as complex).
pub fn fft(x: &Array, n: Option<usize>, axis: isize, norm: Norm, inverse: bool) -> Result<Array> {
    let op = if inverse { "ifft" } else { "fft" };
    let (ax, n, single) = setup(op, x, n, axis, true)?;
    points(op, n)?;
    let kind = Kind::Complex { inverse };
    if single {
        lanes::<f32>(x, ax, n, kind, norm)
    } else {
        lanes::<f64>(x, ax, n, kind, norm)
    }
}

/// The transform of a real `x` along `axis`: the `n/2 + 1` non-negative frequencies.
pub fn rfft(x: &Array, n: Option<usize>, axis: isize, norm: Norm) -> Result<Array> {
    let (ax, n, single) = setup("rfft", x, n, axis, false)?;
    points("rfft", n)?;
    if single {
        lanes::<f32>(x, ax, n, Kind::Real, norm)
    } else {
        lanes::<f64>(x, ax, n, Kind::Real, norm)
    }
}

/// The inverse of [`rfft`]: `n` real points (default `2 (m - 1)` for `m` inputs) from the
/// half-spectrum along `axis`.
pub fn irfft(x: &Array, n: Option<usize>, axis: isize, norm: Norm) -> Result<Array> {
    let (ax, _, single) = setup("irfft", x, n, axis, true)?;
    let n = n.unwrap_or(2 * x.shape()[ax].saturating_sub(1));
    points("irfft", n)?;
    if single {
        lanes::<f32>(x, ax, n, Kind::InverseReal, norm)
    } else {
        lanes::<f64>(x, ax, n, Kind::InverseReal, norm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    #[test]
    fn hand_derived_transforms() {
        // fft([1, 2, 3, 4]) = [10, -2+2j, -2, -2-2j]
        let x = Array::from_vec(&[4], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        let f = fft(&x, None, -1, Norm::Backward, false).unwrap().to_vec::<Complex64>().unwrap();
        let want = [
            Complex64::new(10.0, 0.0),
            Complex64::new(-2.0, 2.0),
            Complex64::new(-2.0, 0.0),
            Complex64::new(-2.0, -2.0),
        ];
        assert!(f.iter().zip(want).all(|(a, b)| (a - b).norm() < 1e-12), "{f:?}");
        let r = rfft(&x, None, 0, Norm::Backward).unwrap().to_vec::<Complex64>().unwrap();
        assert_eq!(r.len(), 3);
        let back = irfft(&rfft(&x, None, 0, Norm::Backward).unwrap(), Some(4), 0, Norm::Backward).unwrap();
        let back = back.to_vec::<f64>().unwrap();
        assert!(back.iter().zip([1.0, 2.0, 3.0, 4.0]).all(|(a, b)| (a - b).abs() < 1e-12), "{back:?}");
        let o = fft(&x, Some(2), 0, Norm::Ortho, false).unwrap().to_vec::<Complex64>().unwrap();
        assert!((o[0].re - 3.0 / 2f64.sqrt()).abs() < 1e-12 && (o[1].re + 1.0 / 2f64.sqrt()).abs() < 1e-12);
        assert!(fft(&Array::from_vec(&[2], vec![1i64, 2]).unwrap(), None, 0, Norm::Backward, false).is_err());
    }
}
