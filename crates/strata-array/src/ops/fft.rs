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
//! - Plans are kept per thread and length (rustfft's and realfft's planners), so a loop of
//!   equal-length transforms plans once.
//! - Real transforms run as realfft's half-length complex transforms. Contiguous lanes (the
//!   last axis) are transformed in the result itself, all at once for complex ones; lanes of
//!   an inner axis are gathered in batches of neighbouring lanes (`BATCH_LANES`, at most
//!   `BATCH_BYTES`), so a strided axis is read and written in runs.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
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
    static REAL_PLANS64: RefCell<RealFftPlanner<f64>> = RefCell::new(RealFftPlanner::new());
    static REAL_PLANS32: RefCell<RealFftPlanner<f32>> = RefCell::new(RealFftPlanner::new());
}

/// A precision rustfft computes in, with its complex column.
trait Precision: FftNum + num_complex::ComplexFloat<Real = Self> {
    fn plan(n: usize, inverse: bool) -> Arc<dyn Fft<Self>>;
    fn plan_real(n: usize) -> Arc<dyn RealToComplex<Self>>;
    fn plan_real_inverse(n: usize) -> Arc<dyn ComplexToReal<Self>>;
    /// The column's values as complex numbers of this precision: borrowed when the column holds
    /// them already, else converted once (a real input, or the other precision).
    fn complex_values(c: &Column) -> Cow<'_, [Complex<Self>]>;
    /// The column's (real) values in this precision: borrowed when the column holds them
    /// already, else converted once.
    fn real_values(c: &Column) -> Cow<'_, [Self]>;
    fn complex_column(v: Vec<Complex<Self>>) -> Column;
    fn real_column(v: Vec<Self>) -> Column;
    fn of_f64(x: f64) -> Self;
}

macro_rules! precision {
    ($t:ty, $plans:ident, $real_plans:ident, $cv:ident, $rv:ident) => {
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
            fn plan_real(n: usize) -> Arc<dyn RealToComplex<$t>> {
                $real_plans.with(|p| p.borrow_mut().plan_fft_forward(n))
            }
            fn plan_real_inverse(n: usize) -> Arc<dyn ComplexToReal<$t>> {
                $real_plans.with(|p| p.borrow_mut().plan_fft_inverse(n))
            }
            fn complex_values(c: &Column) -> Cow<'_, [Complex<$t>]> {
                match c {
                    Column::$cv(v) => Cow::Borrowed(v),
                    _ => (0..c.len())
                        .map(|i| {
                            let z = c.get(i).as_c128();
                            Complex::new(z.re as $t, z.im as $t)
                        })
                        .collect(),
                }
            }
            fn real_values(c: &Column) -> Cow<'_, [$t]> {
                match c {
                    Column::$rv(v) => Cow::Borrowed(v),
                    _ => (0..c.len()).map(|i| c.get(i).as_f64() as $t).collect(),
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
precision!(f64, PLANS64, REAL_PLANS64, C128, F64);
precision!(f32, PLANS32, REAL_PLANS32, C64, F32);

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

/// Bytes of lanes gathered into one batch: neighbouring lanes of an inner axis are read and
/// written in runs (a strided axis otherwise touches a cache line per element), and rustfft
/// transforms the batch in one call.
const BATCH_BYTES: usize = 1 << 20;
/// Lanes in a batch at most (two cache lines of `f64`).
const BATCH_LANES: usize = 16;

/// Where the lanes of an array of shape `outer × len × inner` lie: lane `(o, r)`, entry `k` at
/// `(o·len + k)·inner + r`.
#[derive(Clone, Copy)]
struct Lanes {
    outer: usize,
    inner: usize,
}

impl Lanes {
    /// The batches: `(o, r, w)` for the `w` lanes `(o, r)…(o, r + w − 1)`, each batch of
    /// `w · per_lane` bytes at most `BATCH_BYTES` where more than one lane.
    fn batches(self, per_lane: usize) -> impl Iterator<Item = (usize, usize, usize)> {
        let width = (BATCH_BYTES / per_lane.max(1)).clamp(1, BATCH_LANES).min(self.inner);
        let inner = self.inner;
        (0..self.outer).flat_map(move |o| (0..inner).step_by(width).map(move |r| (o, r, width.min(inner - r))))
    }

    /// Copies entries `0..len.min(to)` of lanes `(o, r..r + w)` of `from` (lanes of length
    /// `len`) into `dst`, lane by lane (`to` entries each), zeros after them.
    fn gather<E: Copy>(
        self,
        from: &[E],
        len: usize,
        (o, r, w): (usize, usize, usize),
        dst: &mut [E],
        to: usize,
        zero: E,
    ) {
        let copied = len.min(to);
        for b in 0..w {
            dst[b * to + copied..(b + 1) * to].fill(zero);
        }
        if self.inner == 1 {
            dst[..copied].copy_from_slice(&from[o * len..][..copied]);
            return;
        }
        for k in 0..copied {
            let row = &from[(o * len + k) * self.inner + r..][..w];
            for (b, &v) in row.iter().enumerate() {
                dst[b * to + k] = v;
            }
        }
    }

    /// Writes lanes `(o, r..r + w)` of `to` (lanes of length `len`) from `src` (`len` entries
    /// a lane, lane by lane), each entry through `f`.
    fn scatter<E: Copy, F: Copy>(
        self,
        src: &[E],
        len: usize,
        (o, r, w): (usize, usize, usize),
        to: &mut [F],
        f: impl Fn(E) -> F,
    ) {
        if self.inner == 1 {
            to[o * len..][..len].iter_mut().zip(src).for_each(|(v, &e)| *v = f(e));
            return;
        }
        for k in 0..len {
            let row = &mut to[(o * len + k) * self.inner + r..][..w];
            for (b, v) in row.iter_mut().enumerate() {
                *v = f(src[b * len + k]);
            }
        }
    }
}

/// Transforms every lane of `x` along `axis`: `n` points (inputs padded or cut to it), outputs
/// of length `out_len`.
fn lanes<T: Precision>(x: &Array, axis: usize, n: usize, kind: Kind, norm: Norm) -> Result<Array> {
    // The lane buffers, the scratch and the result are the same sizes on every call of a loop:
    // pooled, they are not page-faulted afresh each time (`strata_runtime::aligned::pooled`).
    strata_runtime::aligned::pooled(|| pooled_lanes::<T>(x, axis, n, kind, norm))
}

fn pooled_lanes<T: Precision>(x: &Array, axis: usize, n: usize, kind: Kind, norm: Norm) -> Result<Array> {
    let shape = x.shape().to_vec();
    let t = x.eval_whole()?;
    let Data::Scalars(col) = &t.data else { unreachable!("arrays hold scalars") };
    let (outer, len_in, inner) =
        (shape[..axis].iter().product::<usize>(), shape[axis], shape[axis + 1..].iter().product::<usize>());
    let lanes = Lanes { outer, inner };
    let inverse = matches!(kind, Kind::Complex { inverse: true } | Kind::InverseReal);
    let scale = T::of_f64(norm.factor(n, inverse));
    let half = n / 2 + 1;
    let zero = Complex::new(T::zero(), T::zero());
    let (out_len, col) = match kind {
        Kind::Complex { inverse } => {
            let input = T::complex_values(col);
            let plan = T::plan(n, inverse);
            let mut scratch = vec![zero; plan.get_inplace_scratch_len()];
            let out = if inner == 1 {
                // Contiguous lanes: copied into the result (padded or cut) and transformed
                // there, all lanes in one call.
                let out = if n == len_in {
                    input.into_owned()
                } else {
                    let mut out = vec![zero; outer * n];
                    for (o, lane) in out.chunks_exact_mut(n).enumerate() {
                        lanes.gather(&input, len_in, (o, 0, 1), lane, n, zero);
                    }
                    out
                };
                let mut out = out;
                plan.process_with_scratch(&mut out, &mut scratch);
                if scale != T::one() {
                    out.iter_mut().for_each(|z| *z = *z * scale);
                }
                out
            } else {
                let mut out = vec![zero; outer * n * inner];
                let mut buf = vec![zero; BATCH_LANES.min(inner) * n];
                for batch in lanes.batches(n * std::mem::size_of::<Complex<T>>()) {
                    let buf = &mut buf[..batch.2 * n];
                    lanes.gather(&input, len_in, batch, buf, n, zero);
                    plan.process_with_scratch(buf, &mut scratch);
                    lanes.scatter(buf, n, batch, &mut out, |z| z * scale);
                }
                out
            };
            (n, T::complex_column(out))
        }
        Kind::Real => {
            let input = T::real_values(col);
            let plan = T::plan_real(n);
            let mut scratch = vec![zero; plan.get_scratch_len()];
            let width = BATCH_LANES.min(inner);
            let (mut buf, mut spectra) = (vec![T::zero(); width * n], vec![zero; width * half]);
            let mut out = Vec::with_capacity(outer * half * inner);
            if inner == 1 {
                // Contiguous lanes: each spectrum appended to the result (no zero fill first).
                for o in 0..outer {
                    lanes.gather(&input, len_in, (o, 0, 1), &mut buf[..n], n, T::zero());
                    plan.process_with_scratch(&mut buf[..n], &mut spectra[..half], &mut scratch)
                        .expect("the plan's lengths");
                    out.extend(spectra[..half].iter().map(|&z| z * scale));
                }
            } else {
                out.resize(outer * half * inner, zero);
                for batch in lanes.batches(n * std::mem::size_of::<T>()) {
                    let w = batch.2;
                    lanes.gather(&input, len_in, batch, &mut buf[..w * n], n, T::zero());
                    for (lane, spectrum) in buf.chunks_exact_mut(n).zip(spectra.chunks_exact_mut(half)).take(w) {
                        plan.process_with_scratch(lane, spectrum, &mut scratch).expect("the plan's lengths");
                    }
                    lanes.scatter(&spectra[..w * half], half, batch, &mut out, |z| z * scale);
                }
            }
            (half, T::complex_column(out))
        }
        Kind::InverseReal => {
            let input = T::complex_values(col);
            let plan = T::plan_real_inverse(n);
            let mut scratch = vec![zero; plan.get_scratch_len()];
            let width = BATCH_LANES.min(inner);
            let (mut spectra, mut buf) = (vec![zero; width * half], vec![T::zero(); width * n]);
            let mut out = vec![T::zero(); outer * n * inner];
            for batch in lanes.batches(n * std::mem::size_of::<T>()) {
                let w = batch.2;
                // The Hermitian spectrum from its first n/2 + 1 entries; the imaginary parts
                // of the zero frequency (and of the Nyquist one for even n) do not contribute.
                lanes.gather(&input, len_in, batch, &mut spectra[..w * half], half, zero);
                for (spectrum, lane) in spectra.chunks_exact_mut(half).zip(buf.chunks_exact_mut(n)).take(w) {
                    spectrum[0].im = T::zero();
                    if n.is_multiple_of(2) {
                        spectrum[half - 1].im = T::zero();
                    }
                    plan.process_with_scratch(spectrum, lane, &mut scratch).expect("the plan's lengths");
                }
                lanes.scatter(&buf[..w * n], n, batch, &mut out, |v| v * scale);
            }
            (n, T::real_column(out))
        }
    };
    let mut out_shape = shape;
    out_shape[axis] = out_len;
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
