"""The `linalg` and `fft` extensions of strata.array_api against array_api_strict (numpy's LAPACK
and pocketfft underneath) on hypothesis-generated stacks, dtypes, sizes and options.

Factorizations whose factors are unique only up to signs or phases (eigenvectors, singular
vectors, QR) are checked by what defines them: reconstruction and orthonormality.
"""

import math

import array_api_strict as xs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strata.array_api as xp

SETTINGS = settings(max_examples=25, deadline=None)
DTYPES = ["float64", "float32", "complex128", "complex64"]


def tol(dtype):
    return 2e-3 if dtype in ("float32", "complex64") else 1e-9


@st.composite
def stacks(draw, square=True, dtypes=DTYPES):
    """A stack of matrices (batch of 0-2 dims) with random entries, well conditioned."""
    dtype = draw(st.sampled_from(dtypes))
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    m = draw(st.integers(1, 5))
    n = m if square else draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.standard_normal((*batch, m, n))
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal((*batch, m, n))
    if square:
        a = a + 3 * m * np.eye(m)  # diagonally dominant: far from singular
    return a.astype(dtype)


def close(got, want, dtype, scale=1.0):
    g, w = np.asarray(got.to_numpy()), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    t = tol(dtype) * max(1.0, scale)
    np.testing.assert_allclose(g, w, rtol=t, atol=t)


def agree(ours, theirs, dtype, scale=1.0):
    """`ours()` equals `theirs()`, or both raise `ValueError`."""
    try:
        want = np.asarray(theirs())
    except ValueError:
        with pytest.raises(ValueError):
            ours()
        return
    close(ours(), want, dtype, scale)


def hermitian(a):
    return a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(a.shape[-1], dtype=a.dtype)


@SETTINGS
@given(stacks(), st.sampled_from(["det", "inv", "eigvalsh", "svdvals", "cholesky", "slogdet", "pinv", "matrix_rank"]))
def test_factorizations_match_lapack(a, name):
    d = str(a.dtype)
    x = hermitian(a) if name in ("eigvalsh", "cholesky") else a
    got, want = getattr(xp.linalg, name)(xp.asarray(x)), getattr(xs.linalg, name)(xs.asarray(x))
    scale = float(np.abs(x).max()) ** x.shape[-1] if name == "det" else float(np.abs(x).max())
    if name == "slogdet":
        close(got.sign, np.asarray(want.sign), d)
        close(got.logabsdet, np.asarray(want.logabsdet), d, scale=abs(float(np.max(np.asarray(want.logabsdet)))))
    else:
        close(got, np.asarray(want), d, scale=scale)


@SETTINGS
@given(stacks(), st.booleans())
def test_solve_with_vectors_and_broadcast_batches(a, vector):
    rng = np.random.default_rng(1)
    n = a.shape[-1]
    b = rng.standard_normal((n,) if vector else (n, 2)).astype(a.dtype)
    close(xp.linalg.solve(xp.asarray(a), xp.asarray(b)), np.asarray(xs.linalg.solve(xs.asarray(a), xs.asarray(b))), str(a.dtype))


@SETTINGS
@given(stacks(square=False), st.booleans())
def test_svd_and_qr_reconstruct_with_orthonormal_factors(a, full):
    d, (m, n) = str(a.dtype), a.shape[-2:]
    u, s, vh = xp.linalg.svd(xp.asarray(a), full_matrices=full)
    k = min(m, n)
    assert u.shape == (*a.shape[:-2], m, m if full else k) and vh.shape == (*a.shape[:-2], n if full else k, n)
    un, sn, vhn = u.to_numpy(), s.to_numpy(), vh.to_numpy()
    close(s, np.linalg.svd(a, compute_uv=False), d)
    recon = (un[..., :, :k] * sn[..., None, :]) @ vhn[..., :k, :]
    np.testing.assert_allclose(recon, a, rtol=tol(d), atol=tol(d) * 10)
    q, r = xp.linalg.qr(xp.asarray(a), mode="complete" if full else "reduced")
    qn, rn = q.to_numpy(), r.to_numpy()
    np.testing.assert_allclose(qn @ rn, a, rtol=tol(d), atol=tol(d) * 10)
    eye = np.eye(qn.shape[-1])
    np.testing.assert_allclose(np.conj(np.swapaxes(qn, -1, -2)) @ qn, np.broadcast_to(eye, qn.shape[:-2] + eye.shape), atol=tol(d) * 10)
    assert np.allclose(np.tril(rn, -1), 0)


@pytest.mark.parametrize("shape", [(2000, 50), (50, 700), (700, 660)])
def test_svd_on_either_side_of_the_threads_threshold(shape):
    # A thin matrix runs faer's SVD on one thread, one whose smaller side is at least 640 on
    # its threads (ops/decompositions.rs, SVD_THREADS_MIN): both reconstruct and give numpy's
    # singular values.
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    u, s, vh = (x.to_numpy() for x in xp.linalg.svd(xp.asarray(a), full_matrices=False))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-10, atol=1e-10 * s[0])
    np.testing.assert_allclose((u * s) @ vh, a, rtol=1e-9, atol=1e-9 * s[0])
    np.testing.assert_allclose(xp.linalg.pinv(xp.asarray(a)).to_numpy(), np.linalg.pinv(a), rtol=1e-8, atol=1e-8)


@SETTINGS
@given(stacks(), st.booleans())
def test_hermitian_factorizations_read_the_lower_triangle_only(a, upper):
    # numpy (UPLO="L") and the standard read the lower triangle: whatever lies above it is not
    # part of the operand. Strata factorizes the transpose, whose upper triangle that is.
    d = str(a.dtype)
    h = hermitian(a)
    junk = np.triu(np.random.default_rng(3).standard_normal(h.shape) * 100, 1).astype(h.dtype)
    x = np.tril(h) + junk
    close(xp.linalg.eigvalsh(xp.asarray(x)), np.linalg.eigvalsh(x), d, scale=float(np.abs(h).max()))
    w, v = xp.linalg.eigh(xp.asarray(x))
    wn, vn = w.to_numpy(), v.to_numpy()
    recon = (vn * wn[..., None, :]) @ np.conj(np.swapaxes(vn, -1, -2))
    np.testing.assert_allclose(recon, h, rtol=tol(d), atol=tol(d) * float(np.abs(h).max()))
    lower = np.linalg.cholesky(x)
    want = np.conj(np.swapaxes(lower, -1, -2)) if upper else lower
    close(xp.linalg.cholesky(xp.asarray(x), upper=upper), want, d, scale=float(np.abs(h).max()))


@SETTINGS
@given(stacks())
def test_eigh_reconstructs(a):
    d = str(a.dtype)
    h = hermitian(a)
    w, v = xp.linalg.eigh(xp.asarray(h))
    wn, vn = w.to_numpy(), v.to_numpy()
    assert wn.dtype == np.finfo(a.dtype).dtype and np.all(np.diff(wn, axis=-1) >= -tol(d))
    recon = (vn * wn[..., None, :]) @ np.conj(np.swapaxes(vn, -1, -2))
    np.testing.assert_allclose(recon, h, rtol=tol(d), atol=tol(d) * float(np.abs(h).max()))


@SETTINGS
@given(stacks(square=False), st.data())
def test_traced_linear_algebra(a, data):
    d = str(a.dtype)
    x, s = xp.asarray(a), xs.asarray(a)
    offset = data.draw(st.integers(-2, 2))
    close(xp.linalg.trace(x, offset=offset), np.asarray(xs.linalg.trace(s, offset=offset)), d)
    close(xp.linalg.diagonal(x, offset=offset), np.asarray(xs.linalg.diagonal(s, offset=offset)), d)
    ordv = data.draw(st.sampled_from([2, 1, math.inf, -math.inf, 0, 3]))
    close(xp.linalg.vector_norm(x, axis=-1, ord=ordv), np.asarray(xs.linalg.vector_norm(s, axis=-1, ord=ordv)), d)
    ordm = data.draw(st.sampled_from(["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]))
    keep = data.draw(st.booleans())
    close(xp.linalg.matrix_norm(x, ord=ordm, keepdims=keep), np.asarray(xs.linalg.matrix_norm(s, ord=ordm, keepdims=keep)), d)
    v1, v2 = a.reshape(-1)[:4], a.reshape(-1)[-3:]
    close(xp.linalg.outer(xp.asarray(v1), xp.asarray(v2)), np.asarray(xs.linalg.outer(xs.asarray(v1), xs.asarray(v2))), d)
    if a.shape[-1] == a.shape[-2]:
        p = data.draw(st.integers(-2, 4))
        sq = a + 3 * a.shape[-1] * np.eye(a.shape[-1], dtype=a.dtype)
        got = xp.linalg.matrix_power(xp.asarray(sq), p)
        close(got, np.asarray(xs.linalg.matrix_power(xs.asarray(sq), p)), d, scale=float(np.abs(sq).max()) ** max(p, 0))


def test_cross_tensordot_vecdot_and_refusals():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    close(xp.linalg.cross(xp.asarray(a), xp.asarray(b)), np.cross(a, b), "float64")
    close(xp.linalg.cross(xp.asarray(a.T), xp.asarray(b.T), axis=0), np.cross(a.T, b.T, axis=0), "float64")
    close(xp.linalg.tensordot(xp.asarray(a), xp.asarray(b.T), axes=1), np.tensordot(a, b.T, axes=1), "float64")
    close(xp.linalg.vecdot(xp.asarray(a), xp.asarray(b)), np.vecdot(a, b), "float64")
    with pytest.raises(TypeError):
        xp.linalg.inv(xp.asarray(np.eye(2, dtype=np.int64)))
    with pytest.raises(ValueError):
        xp.linalg.det(xp.asarray(np.ones((2, 3))))
    with pytest.raises(ValueError):
        xp.linalg.cholesky(xp.asarray(np.array([[1.0, 2.0], [2.0, 1.0]])))
    with pytest.raises(ValueError):
        xp.linalg.inv(xp.asarray(np.ones(3)))
    with pytest.raises(ValueError):
        xp.linalg.qr(xp.asarray(np.eye(2)), mode="r")


@st.composite
def signals(draw, complex_input=True):
    dtype = draw(st.sampled_from(["complex128", "complex64"] if complex_input else ["float64", "float32"]))
    shape = draw(st.lists(st.integers(1, 7), min_size=1, max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(shape)
    if complex_input:
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


NORMS = st.sampled_from(["backward", "ortho", "forward"])


@SETTINGS
@given(signals(), st.data(), NORMS)
def test_complex_transforms(x, data, norm):
    d = str(x.dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.none() | st.integers(1, 9))
    for name in ("fft", "ifft"):
        close(getattr(xp.fft, name)(xp.asarray(x), n=n, axis=axis, norm=norm),
              np.asarray(getattr(xs.fft, name)(xs.asarray(x), n=n, axis=axis, norm=norm)), d, scale=x.shape[axis])
    for name in ("irfft", "hfft"):  # one input and no `n` is 0 points: an error for both
        agree(lambda: getattr(xp.fft, name)(xp.asarray(x), n=n, axis=axis, norm=norm),
              lambda: getattr(xs.fft, name)(xs.asarray(x), n=n, axis=axis, norm=norm), d, scale=x.shape[axis])
    axes = tuple(range(x.ndim))[-2:]
    for name in ("fftn", "ifftn"):
        close(getattr(xp.fft, name)(xp.asarray(x), axes=axes, norm=norm),
              np.asarray(getattr(xs.fft, name)(xs.asarray(x), axes=axes, norm=norm)), d, scale=x.size)
    close(xp.fft.fftshift(xp.asarray(x)), np.asarray(xs.fft.fftshift(xs.asarray(x))), d)
    close(xp.fft.ifftshift(xp.asarray(x), axes=axis), np.asarray(xs.fft.ifftshift(xs.asarray(x), axes=axis)), d)


@SETTINGS
@given(signals(complex_input=False), st.data(), NORMS)
def test_real_transforms(x, data, norm):
    d = str(x.dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.none() | st.integers(1, 9))
    for name in ("rfft", "ihfft"):
        close(getattr(xp.fft, name)(xp.asarray(x), n=n, axis=axis, norm=norm),
              np.asarray(getattr(xs.fft, name)(xs.asarray(x), n=n, axis=axis, norm=norm)), d, scale=x.shape[axis])
    axes = tuple(range(x.ndim))
    spectrum = xs.fft.rfftn(xs.asarray(x), axes=axes, norm=norm)
    close(xp.fft.rfftn(xp.asarray(x), axes=axes, norm=norm), np.asarray(spectrum), d, scale=x.size)
    s = x.shape
    back = xp.fft.irfftn(xp.asarray(np.asarray(spectrum)), s=s, axes=axes, norm=norm)
    close(back, np.asarray(xs.fft.irfftn(spectrum, s=s, axes=axes, norm=norm)), d, scale=x.size)


@pytest.mark.parametrize("shape, axis", [((3, 20000, 5), 1), ((5000, 40), 0), ((40, 3000), 1), ((1 << 16,), 0)])
def test_long_transforms_along_every_axis(shape, axis):
    """Lanes long enough that a batch holds fewer lanes than the inner axis has (and batches of
    16 lanes with a remainder), odd and even lengths, padded and cut, against numpy."""
    rng = np.random.default_rng(len(shape) + axis)
    x = rng.standard_normal(shape)
    z = x + 1j * rng.standard_normal(shape)
    m = shape[axis]
    for n in (None, m + 3, m - 1):
        tol = dict(rtol=1e-9, atol=1e-9 * m)
        np.testing.assert_allclose(xp.fft.fft(xp.asarray(z), n=n, axis=axis).to_numpy(), np.fft.fft(z, n=n, axis=axis), **tol)
        np.testing.assert_allclose(
            xp.fft.ifft(xp.asarray(z), n=n, axis=axis, norm="ortho").to_numpy(),
            np.fft.ifft(z, n=n, axis=axis, norm="ortho"), **tol)
        np.testing.assert_allclose(xp.fft.rfft(xp.asarray(x), n=n, axis=axis).to_numpy(), np.fft.rfft(x, n=n, axis=axis), **tol)
        np.testing.assert_allclose(
            xp.fft.irfft(xp.asarray(z), n=n, axis=axis, norm="forward").to_numpy(),
            np.fft.irfft(z, n=n, axis=axis, norm="forward"), **tol)


def test_frequencies_and_refusals():
    for n in (1, 2, 7, 8):
        for dd in (1.0, 0.25):
            close(xp.fft.fftfreq(n, d=dd), np.asarray(xs.fft.fftfreq(n, d=dd)), "float64")
            close(xp.fft.rfftfreq(n, d=dd), np.asarray(xs.fft.rfftfreq(n, d=dd)), "float64")
    with pytest.raises(TypeError):
        xp.fft.fft(xp.asarray([1, 2, 3]))
    with pytest.raises(TypeError):
        xp.fft.rfft(xp.asarray([1j, 2j]))
    with pytest.raises(ValueError):
        xp.fft.fft(xp.asarray([1.0j]), n=0)
    with pytest.raises(ValueError):
        xp.fft.fft(xp.asarray([1.0j]), norm="sideways")
    # A loop of equal-length transforms plans once: the same results every call.
    z = xp.asarray(np.exp(2j * np.pi * np.arange(16) / 16))
    first = xp.fft.fft(z).to_numpy()
    for _ in range(3):
        np.testing.assert_array_equal(xp.fft.fft(z).to_numpy(), first)
    assert abs(first[1] - 16) < 1e-12


@pytest.mark.parametrize(
    "m",
    [np.ones((3, 3)), np.zeros((2, 2)), np.diag([1.0, 0.0, 3.0]), np.array([[0.0, 0.0], [0.0, 1.0]]),
     np.array([[1.0, 2.0], [2.0, 4.0]])],
)
def test_singular_matrices_as_numpy(m):
    """Issue 49's P1: det of an exactly singular matrix is 0.0 (it was NaN); inv and solve raise
    `strata.LinAlgError`, a `ValueError` as numpy's `LinAlgError` is (they returned NaN/inf)."""
    import strata

    assert float(xp.linalg.det(xp.asarray(m))) == np.linalg.det(m) == 0.0
    sign, logabs = xp.linalg.slogdet(xp.asarray(m))
    assert float(sign) == 0.0 and float(logabs) == -math.inf
    for call in (lambda: xp.linalg.inv(xp.asarray(m)), lambda: xp.linalg.solve(xp.asarray(m), xp.asarray(np.ones(m.shape[0])))):
        with pytest.raises(strata.LinAlgError, match="singular") as e:
            call()
        assert isinstance(e.value, ValueError)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(m)
    # A stack: the singular matrix is named by its position.
    stack = np.stack([np.eye(m.shape[0]), m])
    with pytest.raises(strata.LinAlgError, match="matrix 1 of the stack"):
        xp.linalg.inv(xp.asarray(stack))
    np.testing.assert_array_equal(np.asarray(xp.linalg.det(xp.asarray(stack))), np.linalg.det(stack))


def _conditioned(rng, n, cond):
    """A random n×n matrix with singular values spread from 1 to 1/cond."""
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (u * np.geomspace(1.0, 1.0 / cond, n)) @ v.T


@pytest.mark.parametrize("seed", range(40))
def test_generated_singular_near_singular_and_ill_conditioned_matrices_as_numpy(seed):
    """Issue 49's generator for linalg: integer matrices with repeated rows or columns or zero
    lines (exactly singular: numpy raises in inv/solve, det 0), and random ones with condition
    numbers from 1 to 1e12 (results within cond·ε of numpy's)."""
    import strata

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    kind = seed % 3
    if kind == 0:
        m = rng.integers(-3, 4, (n, n)).astype(np.float64)
        i, j = rng.integers(n), rng.integers(n)
        if rng.random() < 0.5:
            m[i] = m[j] if i != j else 0.0
        else:
            m[:, i] = 2.0 * m[:, j] if i != j else 0.0
        cond = np.inf
    else:
        cond = 10.0 ** float(rng.uniform(0, 12 if kind == 1 else 4))
        m = _conditioned(rng, n, cond)
    b = rng.standard_normal(n)
    try:
        want_inv = np.linalg.inv(m)
    except np.linalg.LinAlgError:
        want_inv = None
    det = float(xp.linalg.det(xp.asarray(m)))
    want_det = float(np.linalg.det(m))
    scale = max(1.0, np.abs(m).max()) ** n
    assert abs(det - want_det) <= 1e-10 * scale * max(1.0, min(cond, 1e6)), (det, want_det, m)
    if want_inv is None:
        assert det == 0.0 or abs(det) <= 1e-12 * scale, (det, m)
        for call in (lambda: xp.linalg.inv(xp.asarray(m)), lambda: xp.linalg.solve(xp.asarray(m), xp.asarray(b))):
            with pytest.raises(strata.LinAlgError):
                call()
        return
    if not np.isfinite(cond):
        # Singular, but rounding left numpy's pivots non-zero: its inverse is rounding noise.
        return
    inv = np.asarray(xp.linalg.inv(xp.asarray(m)))
    x = np.asarray(xp.linalg.solve(xp.asarray(m), xp.asarray(b)))
    eps = np.finfo(np.float64).eps
    # Forward errors grow with the condition number; residuals a backward-stable solver keeps
    # small whatever it is.
    bound = 100 * n * eps * cond
    assert np.linalg.norm(m @ x - b) <= 100 * n * eps * np.linalg.norm(m) * np.linalg.norm(x) + 1e-300
    assert np.abs(inv - want_inv).max() <= bound * max(1.0, np.abs(want_inv).max())
    sign, logabs = xp.linalg.slogdet(xp.asarray(m))
    ws, wl = np.linalg.slogdet(m)
    assert float(sign) == ws and abs(float(logabs) - wl) <= bound
