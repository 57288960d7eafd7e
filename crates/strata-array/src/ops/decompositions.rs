//! The `linalg` extension's factorizations: runtime kernels (faer) on evaluated arrays, as
//! [`super::kernels`] are. What is a loop nest (matmul, tensordot, vecdot, norms, trace,
//! diagonal, outer, cross) is traced into the IR elsewhere; these are the algorithms that are
//! not: LU (`det`, `slogdet`, `inv`, `solve`), Cholesky, Householder QR, the SVD (`svd`,
//! `svdvals`, `pinv`, `matrix_rank`) and the self-adjoint eigendecomposition (`eigh`,
//! `eigvalsh`).
//!
//! - Operands are stacks of matrices (`(..., M, N)`), each factorized on its own; the batch
//!   dimensions of `solve`'s operands broadcast.
//! - Real dtypes compute in `f64`, complex ones in `c128` (faer's `f64`/`c64`); `float32` and
//!   `complex64` results are rounded back, so their accuracy is at least numpy's.
//! - Floating-point dtypes only (the standard's rule); an integer matrix is a `TypeError`.
//! - `eigh` reads the lower triangle (numpy's default); eigenvalues ascend, singular values
//!   descend. Signs of eigenvectors, singular vectors and QR factors are faer's (the standard
//!   leaves them to the implementation; products reconstruct the operand).
//! - A Cholesky factorization of a matrix that is not positive definite is an error; singular
//!   matrices give infinities or NaN in `inv` and `solve` (no check), a zero `det`.
//! - Team operands are read whole (gathered on every rank); results are on the host of every
//!   rank (replicated).

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, Side};
use num_complex::{Complex32, Complex64};
use strata_ir::Scalar;
use strata_runtime::{Column, Data, Tensor};

use crate::array::{Array, Place};
use crate::dtype::DType;
use crate::error::{dtype_error, invalid, ArrayError, Result};

/// A matrix element faer computes in: `f64` for real dtypes, `c64` for complex ones.
trait Field: faer::traits::ComplexField<Real = f64> + Copy + 'static {
    /// A complex number as this type (the real part for `f64`: only real columns are read as
    /// `f64`).
    fn from_c(z: Complex64) -> Self;
    /// The value as a complex number.
    fn wide(self) -> Complex64;
    /// The complex conjugate.
    fn conjugate(self) -> Self;
    /// The modulus.
    fn modulus(self) -> f64;
    /// From a real number.
    fn real(x: f64) -> Self;
}

impl Field for f64 {
    fn from_c(z: Complex64) -> f64 {
        z.re
    }
    fn wide(self) -> Complex64 {
        Complex64::new(self, 0.0)
    }
    fn conjugate(self) -> f64 {
        self
    }
    fn modulus(self) -> f64 {
        self.abs()
    }
    fn real(x: f64) -> f64 {
        x
    }
}

impl Field for Complex64 {
    fn from_c(z: Complex64) -> Complex64 {
        z
    }
    fn wide(self) -> Complex64 {
        self
    }
    fn conjugate(self) -> Complex64 {
        self.conj()
    }
    fn modulus(self) -> f64 {
        self.norm()
    }
    fn real(x: f64) -> Complex64 {
        Complex64::new(x, 0.0)
    }
}

/// Values computed in `f64`/`c128` as a column of `dtype` (rounded to `f32`/`c64` parts).
fn column_of<T: Field>(values: Vec<T>, dtype: DType) -> Column {
    match dtype {
        Scalar::F64 => Column::F64(values.into_iter().map(|v| v.wide().re).collect()),
        Scalar::F32 => Column::F32(values.into_iter().map(|v| v.wide().re as f32).collect()),
        Scalar::C128 => Column::C128(values.into_iter().map(Field::wide).collect()),
        _ => Column::C64(
            values.into_iter().map(|v| v.wide()).map(|z| Complex32::new(z.re as f32, z.im as f32)).collect(),
        ),
    }
}

/// The matrices of an evaluated operand.
/// The smaller side from which an SVD runs on faer's threads. Measured on 2 cores (2026-12-07,
/// `xp.linalg.svd`, medians, threads / one thread): 2000×50 4.1 / 2.2 ms, 200² 8.0 / 7.0 ms,
/// 2000×200 40.5 / 24.1 ms, 500² 60 / 57 ms, 1000² 300 / 422 ms. A thin matrix (scikit-learn's
/// PCA, LDA and Ridge on 2,000 × 50 data) is faster on one.
const SVD_THREADS_MIN: usize = 640;

struct Stack {
    dtype: DType,
    batch: Vec<usize>,
    m: usize,
    n: usize,
    values: std::rc::Rc<Tensor>,
}

impl Stack {
    /// `x` as a stack of matrices (at least 2-d, a floating-point dtype; square if asked).
    fn of(op: &'static str, x: &Array, square: bool) -> Result<Stack> {
        if x.ndim() < 2 {
            return Err(invalid(op, format!("needs a stack of matrices (at least 2-d), not shape {:?}", x.shape())));
        }
        if !x.dtype().is_inexact() {
            return Err(dtype_error(
                op,
                format!("defined on floating-point dtypes, not on {}", x.dtype().numpy_name()),
            ));
        }
        let (m, n) = (x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]);
        if square && m != n {
            return Err(invalid(op, format!("needs square matrices, not {m}×{n}")));
        }
        // Measured at 1024² on 2 cores: the SVD and the eigensolver gain from faer's threads (the
        // rayon pool, the machine's cores); LU and Cholesky run faster on one. The SVD's threads
        // pay only on large matrices both ways ([`SVD_THREADS_MIN`]).
        let svd = matches!(op, "svd" | "svdvals" | "pinv" | "matrix_rank");
        let threads = (svd && m.min(n) >= SVD_THREADS_MIN) || matches!(op, "eigh" | "eigvalsh" | "qr" | "inv");
        faer::set_global_parallelism(if threads { faer::Par::rayon(0) } else { faer::Par::Seq });
        Ok(Stack { dtype: x.dtype(), batch: x.shape()[..x.ndim() - 2].to_vec(), m, n, values: x.eval_whole()? })
    }

    fn count(&self) -> usize {
        self.batch.iter().product()
    }

    fn column(&self) -> &Column {
        match &self.values.data {
            Data::Scalars(c) => c,
            _ => unreachable!("arrays hold scalars"),
        }
    }

    /// The elements of matrix `k`, row by row, widened to `T`.
    fn elements<T: Field>(&self, k: usize) -> Vec<T> {
        let r = k * self.m * self.n..(k + 1) * self.m * self.n;
        match self.column() {
            Column::F64(v) => v[r].iter().map(|&x| T::real(x)).collect(),
            Column::F32(v) => v[r].iter().map(|&x| T::real(x as f64)).collect(),
            Column::C128(v) => v[r].iter().map(|&z| T::from_c(z)).collect(),
            Column::C64(v) => v[r].iter().map(|z| T::from_c(Complex64::new(z.re as f64, z.im as f64))).collect(),
            _ => unreachable!("a floating-point stack"),
        }
    }

    /// The transpose of matrix `k` (`N × M`): the stack's rows are faer's columns, so this is a
    /// contiguous copy. The factorizations work on it where the transpose serves as well
    /// (LU, eigen- and singular value decompositions): a transposing copy of a 1024² matrix
    /// costs about as much as its LU factorization.
    fn transposed<T: Field>(&self, k: usize) -> Mat<T> {
        faer::MatRef::from_column_major_slice(&self.elements::<T>(k), self.n, self.m).to_owned()
    }

    /// [`Self::transposed`] divided by a power of two `c` (returned) that brings its largest
    /// modulus near 1, exactly: the SVD's iterations square entries, and huge or tiny ones
    /// (1e154) overflow or underflow where LAPACK scales them first. Singular values scale by
    /// `c`, singular vectors not at all.
    fn transposed_scaled<T: Field>(&self, k: usize) -> (Mat<T>, f64) {
        let mut a = self.transposed::<T>(k);
        let largest = (0..a.ncols())
            .flat_map(|j| (0..a.nrows()).map(move |i| (i, j)))
            .fold(0.0f64, |m, (i, j)| m.max(a[(i, j)].modulus()));
        if !largest.is_finite() || largest == 0.0 || (1e-100..=1e100).contains(&largest) {
            return (a, 1.0);
        }
        let c = 2f64.powi(largest.log2().round() as i32);
        let inv = T::real(1.0 / c);
        for j in 0..a.ncols() {
            for i in 0..a.nrows() {
                a[(i, j)] *= inv;
            }
        }
        (a, c)
    }

    /// Matrix `k` itself (`M × N`), transposed in blocks of [`BLOCK`] rows (each block's rows
    /// stay in cache while every column takes its part of them).
    fn matrix<T: Field>(&self, k: usize) -> Mat<T> {
        let rows = self.elements::<T>(k);
        let mut a = Mat::<T>::zeros(self.m, self.n);
        for i0 in (0..self.m).step_by(BLOCK) {
            let i1 = (i0 + BLOCK).min(self.m);
            for j in 0..self.n {
                let col = a.col_as_slice_mut(j);
                for i in i0..i1 {
                    col[i] = rows[i * self.n + j];
                }
            }
        }
        a
    }

    /// `shape` after the batch dimensions.
    fn shape(&self, tail: &[usize]) -> Vec<usize> {
        self.batch.iter().chain(tail).copied().collect()
    }
}

/// Rows per block of the transposing copies: a block of 16 rows of a 1024-column `c128` matrix
/// is 256 KiB, in the second-level cache while each column takes its 16 elements.
const BLOCK: usize = 16;

/// Appends `m` row by row (conjugated if `conj`), in blocks of rows.
fn push_rows<T: Field>(out: &mut Vec<T>, m: faer::MatRef<'_, T>, conj: bool) {
    let (rows, cols) = (m.nrows(), m.ncols());
    let start = out.len();
    out.resize(start + rows * cols, T::real(0.0));
    let dst = &mut out[start..];
    for i0 in (0..rows).step_by(BLOCK) {
        let i1 = (i0 + BLOCK).min(rows);
        for j in 0..cols {
            let col = m.col(j);
            for i in i0..i1 {
                let v = col[i];
                dst[i * cols + j] = if conj { v.conjugate() } else { v };
            }
        }
    }
}

/// Appends `m` column by column (conjugated if `conj`): `m`'s transpose (adjoint) row by row.
fn push_columns<T: Field>(out: &mut Vec<T>, m: faer::MatRef<'_, T>, conj: bool) {
    for j in 0..m.ncols() {
        let col = m.col(j);
        out.extend(col.iter().map(|&v| if conj { v.conjugate() } else { v }));
    }
}

fn result(shape: &[usize], col: Column) -> Result<Array> {
    Array::from_column(shape, col, Place::host())
}

/// Calls `$f::<f64>` or `$f::<Complex64>` by the stack's dtype, with the thread's large blocks
/// pooled (`strata_runtime::aligned::pooled`): faer's factors and scratch, and the copies in and
/// out, are the same sizes on every call of a loop, and the system allocator would page-fault
/// them afresh each time (~30 % of a 1024² `solve`).
macro_rules! by_field {
    ($s:expr, $f:ident($($a:expr),*)) => {
        {
            strata_runtime::aligned::pool_workers();
            strata_runtime::aligned::pooled(|| {
                if $s.dtype.is_complex() { $f::<Complex64>($($a),*) } else { $f::<f64>($($a),*) }
            })
        }
    };
}

/// The lower (or, `upper`, the upper) Cholesky factor of each Hermitian positive-definite
/// matrix (only the lower triangle is read).
pub fn cholesky(x: &Array, upper: bool) -> Result<Array> {
    fn imp<T: Field>(s: &Stack, upper: bool) -> Result<Array> {
        let mut out = Vec::with_capacity(s.count() * s.n * s.n);
        for k in 0..s.count() {
            // The transpose's upper triangle is the matrix's lower one, conjugated: its factor
            // is the conjugate of the matrix's.
            let llt = s
                .transposed::<T>(k)
                .llt(Side::Upper)
                .map_err(|_| invalid("cholesky", format!("matrix {k} of the stack is not positive definite")))?;
            let l = llt.L();
            let lower = Mat::from_fn(s.n, s.n, |i, j| if i >= j { l[(i, j)] } else { T::real(0.0) });
            if upper {
                push_columns(&mut out, lower.as_ref(), false);
            } else {
                push_rows(&mut out, lower.as_ref(), true);
            }
        }
        result(&s.shape(&[s.n, s.n]), column_of(out, s.dtype))
    }
    let s = Stack::of("cholesky", x, true)?;
    by_field!(s, imp(&s, upper))
}

/// The determinant of each matrix: the product of its LU factorization's pivots, with the sign of
/// the row permutation (numpy's LAPACK route), exactly 0 for a matrix with a zero pivot.
pub fn det(x: &Array) -> Result<Array> {
    fn imp<T: Field>(s: &Stack) -> Result<Array> {
        let out: Vec<T> = (0..s.count())
            .map(|k| {
                let lu = s.matrix::<T>(k).partial_piv_lu();
                let odd = odd_permutation(lu.P().arrays().0);
                let mut d = T::real(if odd { -1.0 } else { 1.0 });
                for i in 0..s.n {
                    let u = lu.U()[(i, i)];
                    // A zero pivot makes the matrix singular; the factors after it divide by it.
                    if u.modulus() == 0.0 {
                        return T::real(0.0);
                    }
                    d *= u;
                }
                d
            })
            .collect();
        result(&s.batch, column_of(out, s.dtype))
    }
    let s = Stack::of("det", x, true)?;
    by_field!(s, imp(&s))
}

/// Whether a permutation (each index's image) is odd: `n` minus its number of cycles.
fn odd_permutation(fwd: &[usize]) -> bool {
    let (mut seen, mut odd) = (vec![false; fwd.len()], false);
    for start in 0..fwd.len() {
        let (mut len, mut i) = (0, start);
        while !seen[i] {
            seen[i] = true;
            i = fwd[i];
            len += 1;
        }
        odd ^= len > 0 && len % 2 == 0;
    }
    odd
}

/// The LU factorization of matrix `k` (itself, not its transpose: the pivots numpy's LAPACK
/// `getrf` chooses, so a matrix is singular exactly where numpy says so), or
/// [`ArrayError::Singular`] when a pivot is exactly zero (`getrf`'s info > 0, where numpy
/// raises `LinAlgError`).
fn invertible_lu<T: Field>(op: &'static str, s: &Stack, k: usize) -> Result<faer::linalg::solvers::PartialPivLu<T>> {
    let lu = s.matrix::<T>(k).partial_piv_lu();
    if (0..s.n).any(|i| lu.U()[(i, i)].modulus() == 0.0) {
        return Err(ArrayError::Singular { op, index: k });
    }
    Ok(lu)
}

/// The sign (a unit complex number for complex matrices, 0 for a singular one) and the natural
/// logarithm of the absolute value of each determinant (−∞ for a singular matrix), from an LU
/// factorization with partial pivoting.
pub fn slogdet(x: &Array) -> Result<(Array, Array)> {
    fn imp<T: Field>(s: &Stack) -> Result<(Array, Array)> {
        let (mut signs, mut logs) = (Vec::new(), Vec::new());
        for k in 0..s.count() {
            let lu = s.matrix::<T>(k).partial_piv_lu();
            let odd = odd_permutation(lu.P().arrays().0);
            let (mut sign, mut log) = (Complex64::new(if odd { -1.0 } else { 1.0 }, 0.0), 0.0);
            for i in 0..s.n {
                let u = lu.U()[(i, i)];
                let m = u.modulus();
                if m == 0.0 {
                    (sign, log) = (Complex64::new(0.0, 0.0), f64::NEG_INFINITY);
                    break;
                }
                sign *= u.wide() / m;
                log += m.ln();
            }
            signs.push(sign);
            logs.push(log);
        }
        let sign = if s.dtype.is_complex() {
            column_of(signs, s.dtype)
        } else {
            column_of(signs.into_iter().map(|z| z.re).collect::<Vec<f64>>(), s.dtype)
        };
        Ok((result(&s.batch, sign)?, result(&s.batch, column_of(logs, s.dtype.real_part()))?))
    }
    let s = Stack::of("slogdet", x, true)?;
    by_field!(s, imp(&s))
}

/// The inverse of each matrix.
pub fn inv(x: &Array) -> Result<Array> {
    fn imp<T: Field>(s: &Stack) -> Result<Array> {
        let mut out = Vec::with_capacity(s.count() * s.n * s.n);
        for k in 0..s.count() {
            push_rows(&mut out, invertible_lu::<T>("inv", s, k)?.inverse().as_ref(), false);
        }
        result(&s.shape(&[s.n, s.n]), column_of(out, s.dtype))
    }
    let s = Stack::of("inv", x, true)?;
    by_field!(s, imp(&s))
}

/// The eigenvalues (ascending, of the real dtype) and, if asked, the eigenvectors (as columns)
/// of each Hermitian matrix, from its lower triangle.
pub fn eigh(x: &Array, vectors: bool) -> Result<(Array, Option<Array>)> {
    fn imp<T: Field>(s: &Stack, vectors: bool) -> Result<(Array, Option<Array>)> {
        let fail = |k: usize| invalid("eigh", format!("the eigensolver did not converge on matrix {k}"));
        let (mut values, mut vecs) = (Vec::with_capacity(s.count() * s.n), Vec::new());
        for k in 0..s.count() {
            // The transpose's upper triangle is the lower one conjugated: the same eigenvalues,
            // conjugated eigenvectors.
            let a = s.transposed::<T>(k);
            if vectors {
                let e = a.self_adjoint_eigen(Side::Upper).map_err(|_| fail(k))?;
                values.extend(e.S().column_vector().iter().map(|v| v.wide().re));
                push_rows(&mut vecs, e.U(), true);
            } else {
                values.extend(a.self_adjoint_eigenvalues(Side::Upper).map_err(|_| fail(k))?);
            }
        }
        let w = result(&s.shape(&[s.n]), column_of(values, s.dtype.real_part()))?;
        let v = vectors.then(|| result(&s.shape(&[s.n, s.n]), column_of(vecs, s.dtype))).transpose()?;
        Ok((w, v))
    }
    let s = Stack::of(if vectors { "eigh" } else { "eigvalsh" }, x, true)?;
    by_field!(s, imp(&s, vectors))
}

/// The QR factorization of each matrix: `Q` with orthonormal columns and upper-triangular `R`,
/// `(M, K)` and `(K, N)` with `K = min(M, N)` (`complete`: `(M, M)` and `(M, N)`).
pub fn qr(x: &Array, complete: bool) -> Result<(Array, Array)> {
    fn imp<T: Field>(s: &Stack, complete: bool) -> Result<(Array, Array)> {
        let kk = if complete { s.m } else { s.m.min(s.n) };
        let (mut q, mut r) = (Vec::new(), Vec::new());
        for k in 0..s.count() {
            let f = s.matrix::<T>(k).qr();
            let thin = f.thin_R();
            if complete {
                push_rows(&mut q, f.compute_Q().as_ref(), false);
                // `R` is `(M, N)`: the thin factor's rows, then zeros.
                let full = Mat::from_fn(s.m, s.n, |i, j| if i < thin.nrows() { thin[(i, j)] } else { T::real(0.0) });
                push_rows(&mut r, full.as_ref(), false);
            } else {
                push_rows(&mut q, f.compute_thin_Q().as_ref(), false);
                push_rows(&mut r, thin, false);
            }
        }
        let q = result(&s.shape(&[s.m, kk]), column_of(q, s.dtype))?;
        Ok((q, result(&s.shape(&[kk, s.n]), column_of(r, s.dtype))?))
    }
    let s = Stack::of("qr", x, false)?;
    by_field!(s, imp(&s, complete))
}

/// The singular value decomposition `x = U diag(S) Vh` of each matrix: `S` descending, of the
/// real dtype; `U` `(M, K)` and `Vh` `(K, N)` with `K = min(M, N)` (`full`: `(M, M)`, `(N, N)`).
/// Without `vectors`, only `S`.
pub fn svd(x: &Array, full: bool, vectors: bool) -> Result<(Option<Array>, Array, Option<Array>)> {
    fn imp<T: Field>(s: &Stack, full: bool, vectors: bool) -> Result<(Option<Array>, Array, Option<Array>)> {
        let kk = s.m.min(s.n);
        let fail = |k: usize| invalid("svd", format!("the SVD did not converge on matrix {k}"));
        let (mut u, mut sv, mut vh) = (Vec::new(), Vec::with_capacity(s.count() * kk), Vec::new());
        for k in 0..s.count() {
            // The transpose's decomposition U′ S V′ᴴ gives x = conj(V′) S conj(U′)ᴴ: `U` is V′
            // conjugated, row by row, and `Vh` is U′ column by column.
            let (a, c) = s.transposed_scaled::<T>(k);
            if !vectors {
                sv.extend(a.singular_values().map_err(|_| fail(k))?.into_iter().map(|v| v * c));
                continue;
            }
            let d = if full { a.svd() } else { a.thin_svd() }.map_err(|_| fail(k))?;
            push_rows(&mut u, d.V(), true);
            sv.extend(d.S().column_vector().iter().map(|v| v.wide().re * c));
            push_columns(&mut vh, d.U(), false);
        }
        let values = result(&s.shape(&[kk]), column_of(sv, s.dtype.real_part()))?;
        if !vectors {
            return Ok((None, values, None));
        }
        let (ku, kv) = if full { (s.m, s.n) } else { (kk, kk) };
        let u = result(&s.shape(&[s.m, ku]), column_of(u, s.dtype))?;
        let vh = result(&s.shape(&[kv, s.n]), column_of(vh, s.dtype))?;
        Ok((Some(u), values, Some(vh)))
    }
    let s = Stack::of(if vectors { "svd" } else { "svdvals" }, x, false)?;
    by_field!(s, imp(&s, full, vectors))
}

/// The cutoff below which singular values count as zero: `rtol` (default `max(M, N) · ε` of the
/// dtype) times the largest singular value.
fn cutoff(s: &Stack, rtol: Option<f64>, largest: f64) -> f64 {
    let eps = if s.dtype.real_part() == Scalar::F32 { f32::EPSILON as f64 } else { f64::EPSILON };
    rtol.unwrap_or(s.m.max(s.n) as f64 * eps) * largest
}

/// The number of singular values of each matrix above the cutoff (`int64`).
pub fn matrix_rank(x: &Array, rtol: Option<f64>) -> Result<Array> {
    fn imp<T: Field>(s: &Stack, rtol: Option<f64>) -> Result<Array> {
        let mut out = Vec::with_capacity(s.count());
        for k in 0..s.count() {
            // The cutoff is relative: the scaled matrix has the same rank.
            let sv = s
                .transposed_scaled::<T>(k)
                .0
                .singular_values()
                .map_err(|_| invalid("matrix_rank", "the SVD did not converge"))?;
            let tol = cutoff(s, rtol, sv.first().copied().unwrap_or(0.0));
            out.push(sv.iter().filter(|&&v| v > tol).count() as i64);
        }
        result(&s.batch, Column::I64(out))
    }
    let s = Stack::of("matrix_rank", x, false)?;
    by_field!(s, imp(&s, rtol))
}

/// The Moore–Penrose pseudo-inverse of each matrix (`(N, M)`), from its SVD with singular
/// values at or below the cutoff treated as zero.
pub fn pinv(x: &Array, rtol: Option<f64>) -> Result<Array> {
    fn imp<T: Field>(s: &Stack, rtol: Option<f64>) -> Result<Array> {
        let mut out = Vec::with_capacity(s.count() * s.m * s.n);
        for k in 0..s.count() {
            // pinv(xᵀ) = V′ · diag(1/s) · U′ᴴ from the transpose's decomposition, over the singular
            // values above the cutoff; its columns are pinv(x)'s rows.
            // x = c·b: pinv(x) = pinv(b) / c, the singular values of b times c.
            let (b, c) = s.transposed_scaled::<T>(k);
            let d = b.thin_svd().map_err(|_| invalid("pinv", "the SVD did not converge"))?;
            let sv: Vec<f64> = d.S().column_vector().iter().map(|v| v.wide().re * c).collect();
            let tol = cutoff(s, rtol, sv.first().copied().unwrap_or(0.0));
            let v = d.V();
            let scaled = Mat::from_fn(v.nrows(), v.ncols(), |i, l| {
                if sv[l] > tol {
                    v[(i, l)] * T::real(1.0 / sv[l])
                } else {
                    T::real(0.0)
                }
            });
            let p = scaled * d.U().adjoint();
            push_columns(&mut out, p.as_ref(), false);
        }
        result(&s.shape(&[s.n, s.m]), column_of(out, s.dtype))
    }
    let s = Stack::of("pinv", x, false)?;
    by_field!(s, imp(&s, rtol))
}

/// The solution `X` of `x1 · X = x2` for each square `x1`: `x2` of shape `(M,)` is one vector
/// (for every matrix of the stack), otherwise `(..., M, K)` with the batch dimensions of both
/// operands broadcast. Operands are promoted to a common floating-point dtype first.
pub fn solve(x1: &Array, x2: &Array) -> Result<Array> {
    let d = crate::dtype::promote("solve", x1.dtype(), x2.dtype())?;
    let (x1, x2) = (super::cast(x1, d), super::cast(x2, d));
    let a = Stack::of("solve", &x1, true)?;
    let vector = x2.ndim() == 1;
    let b = if vector {
        let v = super::manipulation::reshape(&x2, &[x2.shape()[0] as isize, 1], None)?;
        Stack::of("solve", &v, false)?
    } else {
        Stack::of("solve", &x2, false)?
    };
    if b.m != a.n {
        return Err(invalid("solve", format!("x2 has {} rows, the matrices of x1 are {}×{}", b.m, a.n, a.n)));
    }
    let batch = super::broadcast_shapes("solve", &[&a.batch, &b.batch])?;
    fn imp<T: Field>(a: &Stack, b: &Stack, batch: &[usize], vector: bool) -> Result<Array> {
        let count: usize = batch.iter().product();
        // The position of batch index `k` in an operand whose batch broadcasts to `batch`.
        let source = |s: &Stack, k: usize| {
            let (mut rest, mut pos, mut stride) = (k, 0, 1);
            for (i, &extent) in batch.iter().enumerate().rev() {
                let c = rest % extent.max(1);
                rest /= extent.max(1);
                let off = i as isize - (batch.len() as isize - s.batch.len() as isize);
                if off >= 0 {
                    let e = s.batch[off as usize];
                    pos += if e == 1 { 0 } else { c * stride };
                    stride *= e;
                }
            }
            pos
        };
        // Each matrix of `x1` is factorized once, however many right-hand sides broadcast
        // against it.
        let mut lus: Vec<Option<faer::linalg::solvers::PartialPivLu<T>>> = (0..a.count()).map(|_| None).collect();
        let mut out = Vec::with_capacity(count * a.n * b.n);
        for k in 0..count {
            let rhs = b.matrix::<T>(source(b, k));
            let at = source(a, k);
            if lus[at].is_none() {
                lus[at] = Some(invertible_lu::<T>("solve", a, at)?);
            }
            let lu = lus[at].as_ref().expect("factorized above");
            push_rows(&mut out, lu.solve(&rhs).as_ref(), false);
        }
        let tail: Vec<usize> = if vector { vec![a.n] } else { vec![a.n, b.n] };
        let shape: Vec<usize> = batch.iter().chain(&tail).copied().collect();
        result(&shape, column_of(out, a.dtype))
    }
    by_field!(a, imp(&a, &b, &batch, vector))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(rows: &[&[f64]]) -> Array {
        let n = rows[0].len();
        Array::from_vec(&[rows.len(), n], rows.iter().flat_map(|r| r.iter().copied()).collect()).unwrap()
    }

    fn values(a: &Array) -> Vec<f64> {
        a.to_vec::<f64>().unwrap()
    }

    #[test]
    fn hand_derived_factorizations() {
        let a = matrix(&[&[4.0, 2.0], &[2.0, 3.0]]);
        assert!((values(&det(&a).unwrap())[0] - 8.0).abs() < 1e-12);
        let l = values(&cholesky(&a, false).unwrap());
        assert!((l[0] - 2.0).abs() < 1e-12 && (l[2] - 1.0).abs() < 1e-12 && l[1] == 0.0);
        assert!((l[3] - 2f64.sqrt()).abs() < 1e-12);
        let (w, _) = eigh(&a, false).unwrap();
        let w = values(&w);
        let (lo, hi) = ((7.0 - 17f64.sqrt()) / 2.0, (7.0 + 17f64.sqrt()) / 2.0);
        assert!((w[0] - lo).abs() < 1e-12 && (w[1] - hi).abs() < 1e-12);
        let x = values(&solve(&a, &Array::from_vec(&[2], vec![2.0, 1.0]).unwrap()).unwrap());
        assert!((x[0] - 0.5).abs() < 1e-12 && x[1].abs() < 1e-12);
        let (sign, log) = slogdet(&matrix(&[&[0.0, 1.0], &[1.0, 0.0]])).unwrap();
        assert_eq!((values(&sign)[0], values(&log)[0]), (-1.0, 0.0));
        assert!(cholesky(&matrix(&[&[1.0, 2.0], &[2.0, 1.0]]), false).is_err());
        let r = matrix_rank(&matrix(&[&[1.0, 2.0], &[2.0, 4.0]]), None).unwrap();
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![1]);
    }

    /// Exactly singular matrices (issue 49's P1): the determinant is 0.0 as numpy's (faer's own
    /// divides by the zero pivot: NaN), and `inv`/`solve` name the singular matrix.
    #[test]
    fn singular_matrices() {
        let singular = [
            matrix(&[&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0]]),
            matrix(&[&[0.0, 0.0], &[0.0, 0.0]]),
            matrix(&[&[1.0, 0.0, 0.0], &[0.0, 0.0, 0.0], &[0.0, 0.0, 3.0]]),
            matrix(&[&[0.0, 0.0], &[0.0, 1.0]]),
        ];
        for m in &singular {
            assert_eq!(values(&det(m).unwrap()), vec![0.0]);
            assert!(matches!(inv(m), Err(ArrayError::Singular { op: "inv", index: 0 })));
            let rhs = Array::from_vec(&[m.shape()[0]], vec![1.0; m.shape()[0]]).unwrap();
            assert!(matches!(solve(m, &rhs), Err(ArrayError::Singular { op: "solve", index: 0 })));
        }
        // The permutation's sign: det of a swap is -1 (numpy), of a 3-cycle +1.
        assert_eq!(values(&det(&matrix(&[&[0.0, 1.0], &[1.0, 0.0]])).unwrap()), vec![-1.0]);
        let cycle = matrix(&[&[0.0, 1.0, 0.0], &[0.0, 0.0, 1.0], &[1.0, 0.0, 0.0]]);
        assert_eq!(values(&det(&cycle).unwrap()), vec![1.0]);
    }
}
