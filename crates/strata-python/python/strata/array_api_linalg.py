"""The array API's `linalg` extension (2023.12) for `strata.array_api`: `xp.linalg`.

What is a loop nest is traced into Strata IR and fused like every other array operation:
`matmul`, `matrix_transpose`, `tensordot`, `vecdot`, `outer`, `cross`, `diagonal`, `trace`,
`vector_norm`, `matrix_norm` (but its SVD-based orders), `matrix_power` (repeated squaring).
The factorizations (`cholesky`, `det`, `slogdet`, `inv`, `solve`, `eigh`, `eigvalsh`, `qr`,
`svd`, `svdvals`, `pinv`, `matrix_rank`) are runtime kernels (faer): they evaluate their operand
and factorize each matrix of the stack, real dtypes in float64 and complex ones in complex128
(float32/complex64 results are rounded back). Operands must have a floating-point dtype
(`TypeError` otherwise); matrices are the last two axes, batched over the leading ones.
"""

from __future__ import annotations

import builtins
import math

import numpy as np
from typing import Any, NamedTuple, Optional, Sequence, Union

from ._strata import LinAlgError
from ._strata import array as _a
from . import array_api as _xp

Array = _xp.Array


def _floating(op: str, x: Array) -> None:
    if x.dtype.kind not in "fc":
        raise TypeError(f"{op}: defined on floating-point dtypes, not on {x.dtype}")


class EighResult(NamedTuple):
    """`eigh`'s result: `eigenvalues` (ascending) and `eigenvectors` (as columns)."""

    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    """`qr`'s result: `Q` with orthonormal columns and upper-triangular `R`."""

    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    """`slogdet`'s result: the determinant's `sign` and the log of its absolute value."""

    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    """`svd`'s result: `x = U @ diag(S) @ Vh`."""

    U: Array
    S: Array
    Vh: Array


def _kernel(name: str, x: Array, flag: builtins.bool = False, rtol: Optional[float] = None) -> list:
    return [_xp._wrap(r) for r in _a.factorize(name, x._x, flag, rtol)]


def cholesky(x: Array, /, *, upper: builtins.bool = False) -> Array:
    """The Cholesky factor of each Hermitian positive-definite matrix: lower-triangular `L` with
    `x = L @ L^H`, or (`upper=True`) `U = L^H`. Reads the lower triangle; a matrix that is not
    positive definite is a `ValueError`."""
    return _kernel("cholesky", x, upper)[0]


def det(x: Array, /) -> Array:
    """The determinant of each square matrix: the product of the pivots of its LU factorization
    with partial pivoting (0.0 for an exactly singular matrix, as numpy)."""
    return _kernel("det", x)[0]


def slogdet(x: Array, /) -> SlogdetResult:
    """The sign (a unit complex number for complex matrices; 0 if singular) and the natural log of
    the absolute value (−∞ if singular) of each determinant."""
    return SlogdetResult(*_kernel("slogdet", x))


def inv(x: Array, /) -> Array:
    """The inverse of each square matrix; `LinAlgError` (a `ValueError`, as numpy's) names a
    singular one (an exactly zero pivot)."""
    return _kernel("inv", x)[0]


def solve(x1: Array, x2: Array, /) -> Array:
    """The solution `X` of `x1 @ X = x2` for square `x1`. `x2` of shape `(M,)` is one right-hand
    side for every matrix; otherwise `(..., M, K)`, batch dimensions broadcast with `x1`'s.
    `LinAlgError` (a `ValueError`) names a singular matrix of `x1`."""
    return _xp._wrap(_a.solve(x1._x, _xp.asarray(x2)._x))


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of each Hermitian matrix, from its
    lower triangle."""
    return EighResult(*_kernel("eigh", x))


def eigvalsh(x: Array, /) -> Array:
    """The eigenvalues (ascending, real) of each Hermitian matrix."""
    return _kernel("eigvalsh", x)[0]


def qr(x: Array, /, *, mode: str = "reduced") -> QRResult:
    """The QR factorization of each matrix: `mode="reduced"` gives `Q` `(M, K)` and `R` `(K, N)`
    with `K = min(M, N)`, `"complete"` `(M, M)` and `(M, N)`."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f'qr: mode {mode!r}: expected "reduced" or "complete"')
    return QRResult(*_kernel("qr", x, mode == "complete"))


def svd(x: Array, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """The singular value decomposition of each matrix: `U`, `S` (descending, real) and `Vh` with
    `x = U @ diag(S) @ Vh`; `full_matrices=False` gives the thin factors."""
    return SVDResult(*_kernel("svd", x, full_matrices))


def svdvals(x: Array, /) -> Array:
    """The singular values of each matrix, descending."""
    return _kernel("svdvals", x)[0]


def _per_matrix_rtol(name: str, x: Array, rtol: Any, tail: tuple, dtype: Any) -> Array:
    """`name` with an `rtol` array (one tolerance per matrix, broadcast against the batch
    dimensions, as the standard allows): each matrix factorized with its own tolerance."""
    batch = tuple(x.shape[:-2])
    tolerances = np.broadcast_to(np.asarray(_xp.asarray(rtol).to_numpy(), dtype=np.float64), batch)
    count = math.prod(batch)
    if count == 0:
        return _xp.zeros(batch + tail, dtype=dtype)
    flat = _xp.reshape(x, (count,) + tuple(x.shape[-2:]))
    parts = [_kernel(name, flat[k], rtol=float(t))[0] for k, t in enumerate(tolerances.reshape(-1))]
    return _xp.reshape(_xp.stack(parts), batch + tail)


def _scalar_rtol(rtol: Any) -> Any:
    """`rtol` as one float for every matrix, or `None` when it varies per matrix."""
    if rtol is None:
        return None
    if isinstance(rtol, Array):
        return float(rtol) if rtol.ndim == 0 else None
    return float(rtol)


def matrix_rank(x: Array, /, *, rtol: Optional[Union[float, Array]] = None) -> Array:
    """The number of singular values above `rtol` times the largest (default `rtol`:
    `max(M, N)` times the dtype's epsilon), as `int64`. `rtol` may be an array, one tolerance
    per matrix (broadcast against the batch dimensions)."""
    one = _scalar_rtol(rtol)
    if rtol is not None and one is None:
        return _per_matrix_rtol("matrix_rank", x, rtol, (), _xp.int64)
    return _kernel("matrix_rank", x, rtol=one)[0]


def pinv(x: Array, /, *, rtol: Optional[Union[float, Array]] = None) -> Array:
    """The Moore–Penrose pseudo-inverse of each matrix, singular values at or below `rtol` times
    the largest treated as zero (default as `matrix_rank`; an array: one per matrix)."""
    one = _scalar_rtol(rtol)
    if rtol is not None and one is None:
        return _per_matrix_rtol("pinv", x, rtol, (x.shape[-1], x.shape[-2]), x.dtype)
    return _kernel("pinv", x, rtol=one)[0]


# ---- loop nests, traced ----

matmul = _xp.matmul
matrix_transpose = _xp.matrix_transpose
tensordot = _xp.tensordot


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """`sum(conj(x1) * x2)` along `axis`, broadcast over the other axes."""
    return _xp.vecdot(x1, x2, axis=axis)


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two vectors: `(M,)` and `(N,)` give `(M, N)`."""
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: needs two vectors, not shapes {x1.shape} and {x2.shape}")
    return _xp.multiply(_xp.expand_dims(x1, axis=1), _xp.expand_dims(x2, axis=0))


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The cross product of 3-vectors along `axis` (broadcast over the other axes)."""
    if not (-x1.ndim <= axis < x1.ndim and -x2.ndim <= axis < x2.ndim):
        raise ValueError(f"cross: axis {axis} is out of range for shapes {x1.shape} and {x2.shape}")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} must have extent 3, not {x1.shape[axis]} and {x2.shape[axis]}")
    a = [_xp.take(x1, _xp.asarray([k]), axis=axis) for k in range(3)]
    b = [_xp.take(x2, _xp.asarray([k]), axis=axis) for k in range(3)]
    parts = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    out = _xp.concat(_xp.broadcast_arrays(*parts), axis=axis)
    return out


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonal of each matrix (`offset > 0`: above the main diagonal, `< 0`: below)."""
    if x.ndim < 2:
        raise ValueError(f"diagonal: needs a stack of matrices, not shape {x.shape}")
    m, n = x.shape[-2], x.shape[-1]
    start = offset if offset >= 0 else -offset * n
    k = max(0, min(m - max(0, -offset), n - max(0, offset)))
    flat = _xp.reshape(x, x.shape[:-2] + (m * n,))
    return _xp.take(flat, _xp.asarray([start + i * (n + 1) for i in range(k)], dtype=_xp.int64), axis=-1)


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of each matrix's diagonal at `offset` (integers summed in the default integer
    dtype of their signedness, as `sum`)."""
    return _xp.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def vector_norm(x: Array, /, *, axis: Union[None, int, Sequence[int]] = None, keepdims: builtins.bool = False,
                ord: Union[int, float] = 2) -> Array:  # noqa: A002 - the standard's name
    """The `ord`-norm over `axis` (all axes when `None`): `(sum |x|**ord)**(1/ord)`, the largest
    `|x|` for `inf`, the smallest for `-inf`, the count of nonzeros for 0. Of the real dtype."""
    _floating("vector_norm", x)
    a = _xp.abs(x)
    if axis is not None and not isinstance(axis, int):
        axis = tuple(axis)
    if ord == math.inf:
        return _xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _xp.astype(_xp.sum(_xp.astype(a != 0, a.dtype), axis=axis, keepdims=keepdims), a.dtype)
    if ord == 1:
        return _xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return _xp.sqrt(_xp.sum(a * a, axis=axis, keepdims=keepdims))
    p = float(ord)
    return _xp.sum(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def matrix_norm(x: Array, /, *, keepdims: builtins.bool = False,
                ord: Union[int, float, str, None] = "fro") -> Array:  # noqa: A002
    """The matrix norm of each matrix: `"fro"` (default), `"nuc"` (sum of singular values), 2/−2
    (largest/smallest singular value), 1/−1 (largest/smallest column sum of `|x|`), `inf`/`-inf`
    (largest/smallest row sum). Of the real dtype."""
    _floating("matrix_norm", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: needs a stack of matrices, not shape {x.shape}")
    a = _xp.abs(x)

    def keep(r):
        return _xp.expand_dims(_xp.expand_dims(r, axis=-1), axis=-1) if keepdims else r

    if ord in ("fro", None):
        return _xp.sqrt(_xp.sum(a * a, axis=(-2, -1), keepdims=keepdims))
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        r = _xp.sum(s, axis=-1) if ord == "nuc" else (_xp.max(s, axis=-1) if ord == 2 else _xp.min(s, axis=-1))
        return keep(r)
    if ord in (1, -1):
        c = _xp.sum(a, axis=-2)
        return keep(_xp.max(c, axis=-1) if ord == 1 else _xp.min(c, axis=-1))
    if ord in (math.inf, -math.inf):
        r = _xp.sum(a, axis=-1)
        return keep(_xp.max(r, axis=-1) if ord == math.inf else _xp.min(r, axis=-1))
    raise ValueError(f"matrix_norm: ord {ord!r} is not one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf")


def matrix_power(x: Array, n: int, /) -> Array:
    """`x` multiplied by itself `n` times (repeated squaring: traced matmuls); `n = 0` gives the
    identity, `n < 0` powers of `inv(x)`."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: needs square matrices, not shape {x.shape}")
    n = int(n)
    if n < 0:
        x, n = inv(x), -n
    m = x.shape[-1]
    result = _xp.broadcast_to(_xp.eye(m, dtype=x.dtype), x.shape)
    base, first = x, True
    while n:
        if n & 1:
            result = base if first else _xp.matmul(result, base)
            first = False
        n >>= 1
        if n:
            base = _xp.matmul(base, base)
    return result
