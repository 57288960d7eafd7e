"""The array API's `fft` extension (2023.12) for `strata.array_api`: `xp.fft`.

The transforms along one axis (`fft`, `ifft`, `rfft`, `irfft`) are runtime kernels (rustfft)
that evaluate their operand: complex128 (float64 input of the real transforms) computes in f64,
complex64 (float32) in f32, and plans are kept per length, so a loop plans once. The
n-dimensional transforms apply them axis after axis; `hfft`/`ihfft` are `irfft`/`rfft` of the
conjugate; `fftfreq`, `rfftfreq`, `fftshift` and `ifftshift` are traced array operations.
`norm` is `"backward"` (default: the inverse scaled by `1/n`), `"ortho"` or `"forward"`.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ._strata import array as _a
from . import array_api as _xp

Array = _xp.Array

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _one(name: str, x: Array, n: Optional[int], axis: int, norm: str) -> Array:
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"{name}: n must be a positive integer, not {n!r}")
    return _xp._wrap(_a.transform(name, x._x, n, axis, norm))


def fft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The one-dimensional discrete Fourier transform along `axis` over `n` points (the input cut
    or zero-padded to `n`)."""
    return _one("fft", x, n, axis, norm)


def ifft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of `fft` along `axis`."""
    return _one("ifft", x, n, axis, norm)


def rfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The transform of a real array along `axis`: the `n//2 + 1` non-negative frequencies."""
    return _one("rfft", x, n, axis, norm)


def irfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of `rfft`: `n` real points (default `2 * (m - 1)`) from a half-spectrum."""
    return _one("irfft", x, n, axis, norm)


def hfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The transform of a signal with Hermitian symmetry given by its half-spectrum: real,
    `n` points (default `2 * (m - 1)`)."""
    return irfft(_xp.conj(x), n=n, axis=axis, norm=_SWAP[norm])


def ihfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of `hfft`: the half-spectrum of a real signal."""
    return _xp.conj(rfft(x, n=n, axis=axis, norm=_SWAP[norm]))


def _axes(x: Array, s: Optional[Sequence[int]], axes: Optional[Sequence[int]]) -> list:
    if axes is None:
        axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    axes = list(axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"s {tuple(s)} and axes {tuple(axes)} must have the same length")
    sizes = [None] * len(axes) if s is None else [None if v == -1 else v for v in s]
    return list(zip(axes, sizes))


def fftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
         norm: str = "backward") -> Array:
    """The n-dimensional transform over `axes` (all by default), `s` points along each."""
    for ax, n in reversed(_axes(x, s, axes)):
        x = fft(x, n=n, axis=ax, norm=norm)
    return x


def ifftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: str = "backward") -> Array:
    """The inverse of `fftn`."""
    for ax, n in reversed(_axes(x, s, axes)):
        x = ifft(x, n=n, axis=ax, norm=norm)
    return x


def rfftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: str = "backward") -> Array:
    """The n-dimensional transform of a real array: `rfft` along the last of `axes`, `fft` along
    the others."""
    pairs = _axes(x, s, axes)
    (last, n), rest = pairs[-1], pairs[:-1]
    x = rfft(x, n=n, axis=last, norm=norm)
    for ax, m in reversed(rest):
        x = fft(x, n=m, axis=ax, norm=norm)
    return x


def irfftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
           norm: str = "backward") -> Array:
    """The inverse of `rfftn`: `ifft` along all but the last of `axes`, then `irfft`."""
    pairs = _axes(x, s, axes)
    (last, n), rest = pairs[-1], pairs[:-1]
    for ax, m in rest:
        x = ifft(x, n=m, axis=ax, norm=norm)
    return irfft(x, n=n, axis=last, norm=norm)


def _frequency_dtype(op: str, dtype: Any) -> Any:
    d = _xp.float64 if dtype is None else dtype
    if d not in (_xp.float32, _xp.float64):
        raise ValueError(f"{op}: dtype must be a real floating-point dtype, not {dtype!r}")
    return d


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of an `n`-point `fft`: `[0, 1, ..., n//2 - 1 (or n//2), -n//2, ..., -1]
    / (d * n)`, of `dtype` (a real floating-point dtype; default float64)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"fftfreq: n must be a positive integer, not {n!r}")
    out = _frequency_dtype("fftfreq", dtype)
    k = _xp.arange(n, dtype=_xp.int64, device=device)
    k = _xp.where(k < (n + 1) // 2, k, k - n)
    return _xp.astype(_xp.astype(k, _xp.float64) / (d * n), out)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of an `n`-point `rfft`: `[0, 1, ..., n//2] / (d * n)`, of `dtype` (a
    real floating-point dtype; default float64)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"rfftfreq: n must be a positive integer, not {n!r}")
    out = _frequency_dtype("rfftfreq", dtype)
    return _xp.astype(_xp.astype(_xp.arange(n // 2 + 1, dtype=_xp.int64, device=device), _xp.float64) / (d * n), out)


def _shift(x: Array, axes: Union[None, int, Sequence[int]], sign: int) -> Array:
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return _xp.roll(x, shifts, axis=tuple(axes))


def fftshift(x: Array, /, *, axes: Union[None, int, Sequence[int]] = None) -> Array:
    """The zero frequency moved to the center along `axes` (all by default)."""
    return _shift(x, axes, 1)


def ifftshift(x: Array, /, *, axes: Union[None, int, Sequence[int]] = None) -> Array:
    """The inverse of `fftshift`."""
    return _shift(x, axes, -1)
