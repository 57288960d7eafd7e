"""The Python array API standard (2023.12) on Strata: `import strata.array_api as xp`.

Arrays are lazy: every operation is traced into Strata IR by the Rust front end
(`strata_array`), and reading an array (`to_numpy()`, `np.asarray`, `float(x)`, printing)
compiles the whole traced expression into one fused program — natively where the backend
compiles it, cached by structure and shapes — and runs it. Semantics are the standard's, numpy
2's where the standard leaves a choice (docs/array-api.md). dtypes are numpy dtype objects
(`xp.float64 == numpy.float64`).

    >>> import strata.array_api as xp
    >>> x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    >>> y = (x - xp.mean(x, axis=1, keepdims=True)) / xp.std(x, axis=1, keepdims=True)
    >>> y.to_numpy()

Under `mpirun`, `device=strata.world` distributes an array over the ranks along its first axis
(`strata.placement` says what runs where).

The `linalg` and `fft` extensions are `xp.linalg` and `xp.fft` (strata.array_api_linalg,
strata.array_api_fft): loop nests traced like the rest, factorizations and transforms as runtime
kernels.

Not here (docs/python.md): `__setitem__`
with steps, masks or index arrays (it assigns in numpy on the gathered array), indexing by
several integer arrays at once, devices other than the host.
"""

from __future__ import annotations

import builtins
import functools
import math
import sys
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import placement as _placement
from ._strata import array as _a
from ._strata import spmd as _spmd

__array_api_version__ = "2023.12"

bool = np.dtype("bool")  # noqa: A001 - the standard's name
int8, int16, int32, int64 = (np.dtype(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (np.dtype(n) for n in ("uint8", "uint16", "uint32", "uint64"))
float32, float64 = np.dtype("float32"), np.dtype("float64")
complex64, complex128 = np.dtype("complex64"), np.dtype("complex128")

e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None

cache_stats = _a.cache_stats
"""This thread's program cache counters (`hits`, `misses`: programs verified and prepared,
`built`: programs built from traced operations, none in a loop's later steps, `native_runs`,
`interpreted_runs`, `distributed_runs`): what a loop compiles, for tuning."""

_DTYPES = (bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, complex64, complex128)

# Each dtype by its name (the extension's arrays name theirs): `Array.dtype` is asked several
# times per traced operation, and a lookup here costs a tenth of `np.dtype(name)`.
_DTYPE_NAMED = {d.name: d for d in _DTYPES}

# The name of each dtype, by the dtype and by its scalar type (`xp.float64`, `np.float64`).
_NAME_OF_DTYPE = {**{d: d.name for d in _DTYPES}, **{d.type: d.name for d in _DTYPES}}


def _dt(dtype: Any) -> Optional[str]:
    if dtype is None:
        return None
    if isinstance(dtype, (np.dtype, type)):
        name = _NAME_OF_DTYPE.get(dtype)
        if name is not None:
            return name
    d = np.dtype(dtype)
    if d not in _DTYPES:
        raise TypeError(f"{d} is not an array-API dtype Strata has")
    return d.name


def _axes(axis: Union[None, int, Sequence[int]]) -> Optional[list]:
    if axis is None:
        return None
    if isinstance(axis, int):
        return [axis]
    return list(axis)


def _scalar(v: Any) -> Any:
    """A Python scalar from a Python or numpy scalar (arrays pass through)."""
    if isinstance(v, Array):
        return v._x
    if isinstance(v, (builtins.bool, int, float, complex)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    return asarray(v)._x


_object_new = object.__new__


def _wrap(x: Any) -> "Array":
    # Built in place (not through `Array._new`): every traced operation returns through here.
    a = _object_new(Array)
    a._x = x
    return a


def _dev(device: Any) -> Any:
    """A `device=` argument for the extension: `None`, `"cpu"`, a device name, `strata.world` or
    a `strata.Place` (docs of `strata.placement`)."""
    return _placement.device_arg(device)


def _moved(x: "Array", device: Any) -> "Array":
    """`x` at `device` (`None`: where it is): distributed onto a team or collected off it, or
    moved between the host and a GPU (`strata.gpu(n)`)."""
    p = _placement.place_of(device)
    if p is None or p == x.device:
        return x
    if p.team is not None and p.device != "cpu":
        raise ValueError(f"device {p!r}: team arrays live on the host (`cpu`) so far")
    if x._x.team is not None:
        x = _wrap(_a.collect(x._x))
    if p.device != x._x.device:
        return _wrap(_a.to_device(x._x, p.device))
    if p.team is not None and x.ndim > 0:
        _, ranks = _dev(p)  # joins the job first
        return _wrap(_a.distribute(x._x, ranks))
    return x


def _operator(name: str, f: Any, reflected: builtins.bool = False) -> Any:
    """The Python operator `name` applying the extension's `f` (its operands swapped where
    `reflected`): two arrays go straight to `f` (one Python frame per traced operation),
    anything else through `Array._bin` (Python scalars, numpy scalars, `NotImplemented`). A
    reflected operator meets an array on its left only when called by name: `_bin` serves it."""
    if reflected:
        def op(self, o):
            return self._bin(f, o, True)
    else:
        def op(self, o):
            if type(o) is Array:
                a = _object_new(Array)
                a._x = f(self._x, o._x)
                return a
            return self._bin(f, o)
    op.__name__ = op.__qualname__ = name
    return op


class Array:
    """A lazy array of the standard (see the module docs)."""

    __slots__ = ("_x",)
    __array_priority__ = 100

    def __init__(self, *args: Any, **kwargs: Any):
        raise TypeError("create arrays with strata.array_api functions (asarray, zeros, arange, ...)")

    @classmethod
    def _new(cls, x: Any) -> "Array":
        a = object.__new__(cls)
        a._x = x
        return a

    # ---- attributes ----

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._x.shape)

    @property
    def dtype(self) -> np.dtype:
        return _DTYPE_NAMED[self._x.dtype]

    @property
    def device(self) -> Any:
        """`"cpu"` (the host), or `strata.Place(device, team=strata.world)` for a team array."""
        if self._x.team is None:
            return self._x.device
        return _placement.Place(self._x.device, _placement.world)

    @property
    def ndim(self) -> int:
        return len(self._x.shape)

    @property
    def size(self) -> int:
        return math.prod(self._x.shape)

    @property
    def T(self) -> "Array":
        if self.ndim != 2:
            raise ValueError(f"`.T` is for 2-d arrays (this one has {self.ndim} dimensions); use `.mT` or permute_dims")
        return permute_dims(self, (1, 0))

    @property
    def mT(self) -> "Array":
        return matrix_transpose(self)

    def __array_namespace__(self, api_version: Optional[str] = None):
        if api_version not in (None, "2023.12", "2022.12", "2021.12"):
            raise ValueError(f"api_version {api_version!r} is not supported (2023.12)")
        return sys.modules[__name__]

    def to_device(self, device: Any, stream: Any = None) -> "Array":
        """The array at `device`: onto a team (`strata.world`: distributed along the first axis)
        or off it onto the host (`"cpu"`: gathered whole on every rank), or onto a GPU
        (`strata.gpu(n)`: what reads it computes there) and back."""
        return _moved(self, device)

    # ---- reading ----

    def to_numpy(self) -> np.ndarray:
        """Evaluates the array (one compiled program for everything it depends on) and returns
        its values in a new numpy array."""
        return self._x.to_numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """`np.asarray(x)`: a read-only view of the values, without a copy (Strata's arrays
        are values that never change, as JAX's); `copy=True` (`np.array(x)`) or another
        dtype makes a writable array of its own."""
        a = self.to_numpy() if copy else self._x.values_view()
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a
        if copy is False:
            raise ValueError(f"np.asarray(copy=False) cannot change the dtype {a.dtype} to {np.dtype(dtype)}")
        return a.astype(dtype)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None):
        return self.to_numpy().__dlpack__()

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (1, 0)  # kDLCPU

    def _one(self, what: str) -> Any:
        x = self._x
        if x.shape:
            raise TypeError(f"only 0-d arrays convert to Python {what} (this one has shape {self.shape})")
        return x.item()

    def __bool__(self) -> builtins.bool:
        return builtins.bool(self._one("bool"))

    def __float__(self) -> float:
        return float(self._one("float"))

    def __int__(self) -> int:
        return int(self._one("int"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays are indices, not {self.dtype}")
        return int(self._one("int"))

    def __complex__(self) -> complex:
        return complex(self._one("complex"))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        text = np.array2string(self.to_numpy(), separator=", ", prefix="Array(")
        return f"Array({text}, dtype={self.dtype.name})"

    __str__ = __repr__

    # ---- operators ----

    def _bin(self, f, other: Any, reflected: builtins.bool = False) -> "Array":
        if type(other) is Array:
            return _wrap(f(other._x, self._x) if reflected else f(self._x, other._x))
        try:
            o = _scalar(other)
        except TypeError:
            return NotImplemented
        if type(o) is int and self.dtype.kind in "iu":
            # A Python integer the array's dtype cannot hold is an error (numpy 2), not a wrap.
            info = np.iinfo(self.dtype)
            if not info.min <= o <= info.max:
                raise OverflowError(f"Python integer {o} out of bounds for {self.dtype}")
        return _wrap(f(o, self._x) if reflected else f(self._x, o))

    __add__ = _operator("__add__", _a.add)
    __radd__ = _operator("__radd__", _a.add, True)
    __sub__ = _operator("__sub__", _a.subtract)
    __rsub__ = _operator("__rsub__", _a.subtract, True)
    __mul__ = _operator("__mul__", _a.multiply)
    __rmul__ = _operator("__rmul__", _a.multiply, True)
    __truediv__ = _operator("__truediv__", _a.divide)
    __rtruediv__ = _operator("__rtruediv__", _a.divide, True)
    __floordiv__ = _operator("__floordiv__", _a.floor_divide)
    __rfloordiv__ = _operator("__rfloordiv__", _a.floor_divide, True)
    __mod__ = _operator("__mod__", _a.remainder)
    __rmod__ = _operator("__rmod__", _a.remainder, True)
    __pow__ = _operator("__pow__", _a.pow)
    __rpow__ = _operator("__rpow__", _a.pow, True)
    __and__ = _operator("__and__", _a.bitwise_and)
    __rand__ = _operator("__rand__", _a.bitwise_and, True)
    __or__ = _operator("__or__", _a.bitwise_or)
    __ror__ = _operator("__ror__", _a.bitwise_or, True)
    __xor__ = _operator("__xor__", _a.bitwise_xor)
    __rxor__ = _operator("__rxor__", _a.bitwise_xor, True)
    __lshift__ = _operator("__lshift__", _a.bitwise_left_shift)
    __rlshift__ = _operator("__rlshift__", _a.bitwise_left_shift, True)
    __rshift__ = _operator("__rshift__", _a.bitwise_right_shift)
    __rrshift__ = _operator("__rrshift__", _a.bitwise_right_shift, True)
    __lt__ = _operator("__lt__", _a.less)
    __le__ = _operator("__le__", _a.less_equal)
    __gt__ = _operator("__gt__", _a.greater)
    __ge__ = _operator("__ge__", _a.greater_equal)
    __eq__ = _operator("__eq__", _a.equal)  # type: ignore[override]
    __ne__ = _operator("__ne__", _a.not_equal)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]

    def __matmul__(self, o):
        return matmul(self, o) if isinstance(o, Array) else NotImplemented

    def __rmatmul__(self, o):
        return matmul(asarray(o), self)

    def __neg__(self): return _wrap(_a.negative(self._x))
    def __pos__(self): return _wrap(_a.positive(self._x))
    def __abs__(self): return _wrap(_a.abs(self._x))
    def __invert__(self): return _wrap(_a.bitwise_invert(self._x))

    def _inplace(self, f, o) -> "Array":
        r = self._bin(f, o)
        if r is NotImplemented:
            return r
        if r.dtype != self.dtype or r.shape != self.shape:
            raise TypeError(f"in-place operation would change {self.dtype}{self.shape} into {r.dtype}{r.shape}")
        self._x = r._x
        return self

    def __iadd__(self, o): return self._inplace(_a.add, o)
    def __isub__(self, o): return self._inplace(_a.subtract, o)
    def __imul__(self, o): return self._inplace(_a.multiply, o)
    def __itruediv__(self, o): return self._inplace(_a.divide, o)
    def __ifloordiv__(self, o): return self._inplace(_a.floor_divide, o)
    def __imod__(self, o): return self._inplace(_a.remainder, o)
    def __ipow__(self, o): return self._inplace(_a.pow, o)
    def __iand__(self, o): return self._inplace(_a.bitwise_and, o)
    def __ior__(self, o): return self._inplace(_a.bitwise_or, o)
    def __ixor__(self, o): return self._inplace(_a.bitwise_xor, o)
    def __ilshift__(self, o): return self._inplace(_a.bitwise_left_shift, o)
    def __irshift__(self, o): return self._inplace(_a.bitwise_right_shift, o)

    def __imatmul__(self, o):
        r = matmul(self, o)
        if r.shape != self.shape or r.dtype != self.dtype:
            raise TypeError("in-place matmul would change the array's shape or dtype")
        self._x = r._x
        return self

    # ---- indexing ----

    def __getitem__(self, key: Any) -> "Array":
        if isinstance(key, Array):
            if key.dtype == bool and key.ndim == 0:
                # A 0-d mask adds an axis of length 1 (True) or 0 (False), as numpy.
                return _wrap(_a.mask(expand_dims(self, axis=0)._x, reshape(key, (1,))._x))
            if key.dtype == bool:
                if key.ndim > self.ndim or builtins.any(k not in (n, 0) for n, k in zip(self.shape, key.shape)):
                    raise IndexError(f"a boolean index of shape {key.shape} does not match the array's shape {self.shape}")
                if key.size == 0:
                    # An empty mask selects nothing.
                    return zeros((0, *self.shape[key.ndim:]), dtype=self.dtype, device=self.device)
                return _wrap(_a.mask(self._x, key._x))
            if key.dtype.kind in "iu":
                return take(self, key, axis=0)
        if isinstance(key, (np.ndarray, list)):
            return self[asarray(key)]
        parts = key if isinstance(key, tuple) else (key,)
        arrays = [i for i, k in enumerate(parts) if _is_index_array(k)]
        if arrays:
            return self._take_with(parts, arrays)
        idx = []
        for k in parts:
            if k is None:
                idx.append(("new",))
            elif k is Ellipsis:
                idx.append(("ellipsis",))
            elif isinstance(k, slice):
                idx.append(("slice", _int(k.start), _int(k.stop), _int(k.step)))
            elif isinstance(k, (builtins.bool, np.bool_)):
                raise IndexError("boolean scalars as indices are not supported; use a boolean array")
            elif isinstance(k, (int, np.integer)) or (isinstance(k, Array) and k.ndim == 0):
                idx.append(("at", int(k)))
            else:
                raise IndexError(f"unsupported index {k!r} (integers, slices, `...`, None, a boolean or integer array)")
        return _wrap(_a.index(self._x, idx))

    def _take_with(self, parts: tuple, arrays: list) -> "Array":
        """`x[..., idx, ...]` with one integer array among slices, integers, `None` and `...`:
        the basic index with `:` in the array's place, then `take` along the axis it left
        (an N-d `idx` puts its shape there; negative entries count from the end)."""
        if len(arrays) > 1:
            raise IndexError("integer-array indexing takes one integer array (the others integers, slices, `...` or None)")
        pos = arrays[0]
        idx = asarray(parts[pos])
        consumed = builtins.sum(1 for k in parts if k is not None and k is not Ellipsis)
        if consumed > self.ndim:
            raise IndexError(f"too many indices for an array of {self.ndim} dimensions")
        # The axis of the basic-indexed array that the integer array's `:` stands for.
        axis = 0
        for k in parts[:pos]:
            if k is Ellipsis:
                axis += self.ndim - consumed
            elif k is None or isinstance(k, slice):
                axis += 1
        base = self[tuple(slice(None) if i == pos else k for i, k in enumerate(parts))]
        n = base.shape[axis]
        flat = reshape(idx, (-1,)) if idx.ndim != 1 else idx
        flat = where(flat < 0, flat + n, flat)
        out = take(base, flat, axis=axis)
        if idx.ndim != 1:
            out = reshape(out, base.shape[:axis] + idx.shape + base.shape[axis + 1:])
        # With integers, the array index is one of several advanced indices (numpy's rule):
        # separated by a slice, `...` or None, their dimensions come first.
        advanced = [i for i, k in enumerate(parts) if i == pos or isinstance(k, (int, np.integer)) and not isinstance(k, builtins.bool)]
        if advanced[-1] - advanced[0] != len(advanced) - 1 and axis != 0:
            out = moveaxis(out, tuple(range(axis, axis + idx.ndim)), tuple(range(idx.ndim)))
        return out

    def __setitem__(self, key: Any, value: Any) -> None:
        """`x[key] = value`: integers and slices of step 1 (and `...`) are traced — the array
        becomes a new value joining `value` and the rest of `x`, evaluated at once, on a team
        array by each rank for its rows; other keys assign in numpy (on the gathered array)."""
        parts = key if isinstance(key, tuple) else (key,)
        basic = builtins.all(
            k is Ellipsis
            or (isinstance(k, slice) and k.step in (None, 1))
            or (isinstance(k, (int, np.integer)) and not isinstance(k, (builtins.bool, np.bool_)))
            for k in parts
        )
        if basic:
            v = value if isinstance(value, Array) else asarray(value, dtype=self.dtype)
            idx = [("ellipsis",) if k is Ellipsis else ("at", int(k)) if not isinstance(k, slice)
                   else ("slice", _int(k.start), _int(k.stop), None) for k in parts]
            new = _a.set_index(self._x, idx, v._x)
            _spmd.evaluate(new)
            self._x = new
            return
        a = self.to_numpy()  # a new array of its own
        k = key.to_numpy() if isinstance(key, Array) else key
        a[k] = value.to_numpy() if isinstance(value, Array) else value
        self._x = asarray(a, device=self.device)._x


def _is_index_array(k: Any) -> builtins.bool:
    """Whether an index is an integer array (an `Array`, a numpy array or a list of integers)."""
    if isinstance(k, Array):
        return k.dtype.kind in "iu" and k.ndim > 0
    if isinstance(k, (np.ndarray, list)):
        a = np.asarray(k)
        return a.dtype.kind in "iu" and a.ndim > 0
    return False


def _int(v: Any) -> Optional[int]:
    return None if v is None else int(v)


# ---- creation ----


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Optional[builtins.bool] = None) -> Array:
    """An array from an array, a numpy array, a buffer, a (nested) list or a Python scalar."""
    if isinstance(obj, Array):
        if copy is False and dtype is not None and np.dtype(dtype) != obj.dtype:
            raise ValueError("asarray(copy=False) cannot change the dtype")
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            return _moved(astype(obj, dtype), device)
        # Values are immutable and in-place operators rebind an array to a new value, so a copy
        # is a new array holding the same value: nothing done to one is seen by the other.
        return _moved(_wrap(obj._x) if copy else obj, device)
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError("asarray(copy=False) needs an array it can share (the data is copied into Strata)")
    if isinstance(obj, (builtins.bool, int, float, complex)) and dtype is None:
        d = (bool if isinstance(obj, builtins.bool) else int64 if isinstance(obj, int)
             else float64 if isinstance(obj, float) else complex128)
        a = np.asarray(obj, dtype=d)
    else:
        a = np.asarray(obj, dtype=None if dtype is None else np.dtype(dtype))
        if a.dtype == np.float16:
            a = a.astype(np.float32)
        elif not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))  # big-endian data (from a file) in this machine's order
    if a.dtype.kind == "c" and a.dtype not in (complex64, complex128):
        raise TypeError(f"{a.dtype} is not an array-API dtype Strata has")
    p = _placement.place_of(device)
    if a.ndim == 0 and p is not None and p.team is not None:
        p = _placement.Place(p.device)  # a 0-d array is replicated on every rank, never partitioned
    dev = _dev(p)
    if isinstance(dev, tuple):
        # Only this rank's rows are copied into Strata (every row without a job).
        rows = _spmd.block_rows(list(a.shape), dev[1])
        block = a if rows is None else a[rows[0]:rows[1]]
        return _wrap(_spmd.from_block(np.ascontiguousarray(block), list(a.shape), *dev))
    return _wrap(_a.from_numpy(a, dev))


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Array:
    """An array from any object with `__dlpack__` (read through numpy, copied into Strata)."""
    return asarray(np.from_dlpack(x), device=device)


def full(shape, fill_value, *, dtype=None, device=None) -> Array:
    """A new array of `shape` filled with `fill_value` (dtype from `dtype`, else from the value: bool,
    int64 or float64)."""
    return _wrap(_a.full(list(_shape(shape)), _scalar(fill_value), _dt(dtype), _dev(device)))


def zeros(shape, *, dtype=None, device=None) -> Array:
    """A new array of `shape` filled with zeros (default dtype float64)."""
    return full(shape, 0.0 if dtype is None else 0, dtype=dtype if dtype is not None else float64, device=device)


def ones(shape, *, dtype=None, device=None) -> Array:
    """A new array of `shape` filled with ones (default dtype float64)."""
    return full(shape, 1.0 if dtype is None else 1, dtype=dtype if dtype is not None else float64, device=device)


def empty(shape, *, dtype=None, device=None) -> Array:
    """A new array of `shape`; Strata fills it with zeros (the standard leaves the contents
    unspecified)."""
    return zeros(shape, dtype=dtype, device=device)


def full_like(x: Array, /, fill_value, *, dtype=None, device=None) -> Array:
    """An array of `x`'s shape (and dtype, unless `dtype` is given) filled with `fill_value`."""
    return _moved(_wrap(_a.full_like(x._x, _scalar(fill_value), _dt(dtype))), device)


def zeros_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """An array of `x`'s shape (and dtype, unless `dtype` is given) filled with zeros."""
    return _moved(full_like(x, 0, dtype=dtype) if dtype is not None else _wrap(_a.zeros_like(x._x)), device)


def ones_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """An array of `x`'s shape (and dtype, unless `dtype` is given) filled with ones."""
    return _moved(full_like(x, 1, dtype=dtype) if dtype is not None else _wrap(_a.ones_like(x._x)), device)


def empty_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """An array of `x`'s shape and dtype; Strata fills it with zeros."""
    return zeros_like(x, dtype=dtype, device=device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Array:
    """Evenly spaced values in `[start, stop)` with spacing `step` (`arange(n)`: `0 … n-1`); integer
    dtype when every argument is an integer, else float64."""
    return _wrap(_a.arange(_scalar(start), None if stop is None else _scalar(stop), _scalar(step), _dt(dtype), _dev(device)))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None) -> Array:
    """A 2-D array with ones on the `k`-th diagonal and zeros elsewhere (`n_cols` defaults to
    `n_rows`); a `k` beyond the array gives all zeros."""
    cols = n_rows if n_cols is None else n_cols
    k = builtins.max(-n_rows, builtins.min(int(k), cols))  # a diagonal outside: all zeros
    return _wrap(_a.eye(n_rows, n_cols, k, _dt(dtype), _dev(device)))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True) -> Array:
    """`num` evenly spaced values from `start` to `stop` (`stop` included unless `endpoint=False`);
    complex bounds or a complex `dtype` space the real and imaginary parts alike."""
    d = None if dtype is None else np.dtype(dtype)
    if isinstance(start, complex) or isinstance(stop, complex) or (d is not None and d.kind == "c"):
        parts = None if d is None else (float32 if d == complex64 else float64)
        re = linspace(complex(start).real, complex(stop).real, num, dtype=parts, device=device, endpoint=endpoint)
        im = linspace(complex(start).imag, complex(stop).imag, num, dtype=parts, device=device, endpoint=endpoint)
        z = re + im * (1j)
        return z if d is None else astype(z, d)
    return _wrap(_a.linspace(float(start), float(stop), int(num), endpoint, _dt(dtype), _dev(device)))


def meshgrid(*arrays: Array, indexing: str = "xy") -> list:
    """Coordinate arrays from 1-D arrays: `indexing="xy"` (Cartesian, the first two axes swapped) or
    `"ij"` (matrix)."""
    return [_wrap(x) for x in _a.meshgrid([a._x for a in arrays], indexing)]


def tril(x: Array, /, *, k: int = 0) -> Array:
    """`x` with the elements above the `k`-th diagonal of its last two axes set to zero."""
    return _wrap(_a.tril(x._x, k))


def triu(x: Array, /, *, k: int = 0) -> Array:
    """`x` with the elements below the `k`-th diagonal of its last two axes set to zero."""
    return _wrap(_a.triu(x._x, k))


def _shape(shape) -> tuple:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


# ---- elementwise ----


def _unary(name: str):
    f = getattr(_a, name)

    def op(x: Array, /) -> Array:
        return _wrap(f(x._x))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`{name}(x)` of the array API, elementwise."
    return op


def _binary(name: str):
    f = getattr(_a, name)

    def op(x1: Any, x2: Any, /) -> Array:
        if not isinstance(x1, Array) and not isinstance(x2, Array):
            raise TypeError(f"{name}: at least one operand must be an array")
        return _wrap(f(_scalar(x1), _scalar(x2)))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`{name}(x1, x2)` of the array API, elementwise with broadcasting."
    return op


_UNARY = (
    "abs negative positive square sign isnan isinf isfinite signbit logical_not bitwise_invert conj real imag sqrt "
    "exp expm1 log log1p log2 log10 sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh floor ceil trunc round"
).split()
_BINARY = (
    "add subtract multiply divide pow floor_divide remainder maximum minimum atan2 hypot copysign logaddexp nextafter "
    "equal not_equal less less_equal greater greater_equal bitwise_and bitwise_or bitwise_xor bitwise_left_shift "
    "bitwise_right_shift logical_and logical_or logical_xor"
).split()
for _n in _UNARY:
    globals()[_n] = _unary(_n)
for _n in _BINARY:
    globals()[_n] = _binary(_n)
acos, acosh, asin, asinh, atan, atanh, atan2 = (globals()[n] for n in "acos acosh asin asinh atan atanh atan2".split())
bitwise_invert = globals()["bitwise_invert"]


def where(condition: Array, x1: Any, x2: Any, /) -> Array:
    """Elementwise `x1` where `condition` holds, else `x2` (broadcast together; Python scalars take the
    other operand's dtype)."""
    return _wrap(_a.where_(condition._x, _scalar(x1), _scalar(x2)))


def clip(x: Array, /, min: Any = None, max: Any = None) -> Array:  # noqa: A002 - the standard's names
    """`x` limited to `[min, max]` elementwise (either bound may be `None`; bounds may be arrays,
    broadcast against `x`); the result keeps `x`'s dtype."""
    return _wrap(_a.clip(x._x, None if min is None else _scalar(min), None if max is None else _scalar(max)))


def astype(x: Array, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Array:
    """`x` converted to `dtype` (floats to integers truncate toward zero; a value out of range follows
    numpy 2). With `copy=False` and the same dtype, `x` itself."""
    if not copy and np.dtype(dtype) == x.dtype:
        return x
    return _wrap(_a.astype(x._x, _dt(dtype)))


# ---- statistics, utility, searching, sorting, sets ----


def sum(x: Array, /, *, axis=None, dtype=None, keepdims=False) -> Array:  # noqa: A001
    """The sum over `axis` (all axes by default; `keepdims` keeps them as size 1). Integers accumulate
    in the default integer dtype, bools as int64, unless `dtype` is given."""
    return _wrap(_a.accumulate("sum", x._x, _axes(axis), _dt(dtype), keepdims))


def prod(x: Array, /, *, axis=None, dtype=None, keepdims=False) -> Array:
    """The product over `axis` (all axes by default), with `sum`'s dtype rules."""
    return _wrap(_a.accumulate("prod", x._x, _axes(axis), _dt(dtype), keepdims))


def _reduction(name: str):
    def op(x: Array, /, *, axis=None, keepdims=False) -> Array:
        return _wrap(_a.reduce(name, x._x, _axes(axis), keepdims))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"`{name}(x, axis, keepdims)` of the array API."
    return op


max, min, mean, any, all = (_reduction(n) for n in ("max", "min", "mean", "any", "all"))  # noqa: A001


def var(x: Array, /, *, axis=None, correction=0.0, keepdims=False) -> Array:
    """The variance over `axis`, divided by `N - correction` (`correction=1`: the sample variance)."""
    return _wrap(_a.spread("var", x._x, _axes(axis), float(correction), keepdims))


def std(x: Array, /, *, axis=None, correction=0.0, keepdims=False) -> Array:
    """The standard deviation over `axis`, `sqrt(var(x, correction=…))`."""
    return _wrap(_a.spread("std", x._x, _axes(axis), float(correction), keepdims))


def cumulative_sum(x: Array, /, *, axis=None, dtype=None, include_initial=False) -> Array:
    """Running sums along `axis` (may be omitted for 1-D arrays); `include_initial=True` puts a leading
    zero."""
    return _wrap(_a.cumulative_sum(x._x, axis, _dt(dtype), include_initial))


def cumulative_prod(x: Array, /, *, axis=None, dtype=None, include_initial=False) -> Array:
    """Running products along `axis` (may be omitted for 1-D arrays); `include_initial=True` puts a
    leading one. A forward `scan` with `multiplies`, in `prod`'s dtype unless `dtype` is given."""
    return _wrap(_a.cumulative_prod(x._x, axis, _dt(dtype), include_initial))


def argmax(x: Array, /, *, axis=None, keepdims=False) -> Array:
    """The index of the first largest value over `axis` (of the flattened array by default), as int64."""
    return _wrap(_a.arg_best("argmax", x._x, axis, keepdims))


def argmin(x: Array, /, *, axis=None, keepdims=False) -> Array:
    """The index of the first smallest value over `axis` (of the flattened array by default), as int64."""
    return _wrap(_a.arg_best("argmin", x._x, axis, keepdims))


def nonzero(x: Array, /) -> tuple:
    """A tuple of index arrays, one per axis, of the non-zero elements in row-major order (a data-
    dependent shape: evaluates `x`)."""
    return tuple(_wrap(i) for i in _a.nonzero(x._x))


def searchsorted(x1: Array, x2: Array, /, *, side="left", sorter=None) -> Array:
    """Indices at which to insert `x2` into the sorted 1-D `x1` to keep it sorted (`side="left"` or
    `"right"`; `sorter` sorts `x1` first)."""
    if sorter is not None:
        x1 = take(x1, sorter)
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', not {side!r}")
    return _wrap(_a.searchsorted(x1._x, asarray(x2)._x, side == "right"))


def sort(x: Array, /, *, axis=-1, descending=False, stable=True) -> Array:
    """`x` sorted along `axis` (ascending, or `descending=True`); the sort is stable."""
    return _wrap(_a.sorting("sort", x._x, axis, descending, stable))


def argsort(x: Array, /, *, axis=-1, descending=False, stable=True) -> Array:
    """The indices that sort `x` along `axis` (stable; `descending=True` keeps equal elements in their
    order)."""
    return _wrap(_a.sorting("argsort", x._x, axis, descending, stable))


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def unique_all(x: Array, /) -> UniqueAllResult:
    """The unique values of `x` (sorted), the first index of each, the inverse indices (in `x`'s shape)
    and the counts (evaluates `x`)."""
    return UniqueAllResult(*(_wrap(a) for a in _a.unique("all", x._x)))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """The unique values of `x` (sorted) and how often each occurs."""
    return UniqueCountsResult(*(_wrap(a) for a in _a.unique("counts", x._x)))


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """The unique values of `x` (sorted) and, for each element of `x`, the index of its value among
    them."""
    return UniqueInverseResult(*(_wrap(a) for a in _a.unique("inverse", x._x)))


def unique_values(x: Array, /) -> Array:
    """The unique values of `x`, sorted (evaluates `x`: the result's shape depends on its data)."""
    return _wrap(_a.unique("values", x._x)[0])


# ---- manipulation, indexing, linear algebra ----


def broadcast_arrays(*arrays: Array) -> list:
    """The arrays broadcast against each other (views, no data is copied)."""
    return [_wrap(a) for a in _a.broadcast_arrays([x._x for x in arrays])]


def broadcast_to(x: Array, /, shape) -> Array:
    """`x` broadcast to `shape` (size-1 and missing leading axes repeated)."""
    return _wrap(_a.broadcast_to(x._x, list(_shape(shape))))


def concat(arrays, /, *, axis: Optional[int] = 0) -> Array:
    """The arrays joined along an existing `axis` (`axis=None`: flattened first); dtypes promote."""
    return _wrap(_a.concat([x._x for x in arrays], axis))


def stack(arrays, /, *, axis: int = 0) -> Array:
    """The arrays (all one shape) joined along a new `axis`."""
    return _wrap(_a.stack([x._x for x in arrays], axis))


def expand_dims(x: Array, /, axis: int = 0) -> Array:
    """`x` with a new axis of size 1 at `axis` (negative: counted from the end of the result)."""
    return _wrap(_a.expand_dims(x._x, axis))


def flip(x: Array, /, *, axis=None) -> Array:
    """`x` with the order of elements reversed along `axis` (every axis by default)."""
    return _wrap(_a.flip(x._x, _axes(axis)))


def moveaxis(x: Array, source, destination, /) -> Array:
    """`x` with the axes `source` moved to the positions `destination`, the others in their order."""
    return _wrap(_a.moveaxis(x._x, _axes(source), _axes(destination)))


def permute_dims(x: Array, /, axes) -> Array:
    """`x` with its axes permuted: axis `i` of the result is axis `axes[i]` of `x`."""
    return _wrap(_a.permute_dims(x._x, list(axes)))


def repeat(x: Array, repeats, /, *, axis=None) -> Array:
    """Each element of `x` repeated `repeats` times (an int, or one count per element along `axis`; the
    flattened array when `axis` is None)."""
    r = repeats._x if isinstance(repeats, Array) else int(repeats)
    return _wrap(_a.repeat(x._x, r, axis))


def reshape(x: Array, /, shape, *, copy=None) -> Array:
    """`x` with a new `shape` (one `-1` is inferred), elements in row-major order. `copy=False` raises
    if a copy were needed."""
    return _wrap(_a.reshape(x._x, list(_shape(shape)), copy))


def roll(x: Array, /, shift, *, axis=None) -> Array:
    """`x` shifted by `shift` along `axis` (the flattened array if None), elements leaving one end
    coming in at the other."""
    return _wrap(_a.roll(x._x, [shift] if isinstance(shift, int) else list(shift), _axes(axis)))


def squeeze(x: Array, /, axis) -> Array:
    """`x` without the size-1 axes `axis` (a `ValueError` if one is not of size 1)."""
    return _wrap(_a.squeeze(x._x, _axes(axis)))


def tile(x: Array, repetitions, /) -> Array:
    """`x` repeated `repetitions` times along each axis (leading axes added as needed)."""
    return _wrap(_a.tile(x._x, list(repetitions)))


def unstack(x: Array, /, *, axis: int = 0) -> tuple:
    """The arrays along `axis` of `x`, as a tuple (the inverse of `stack`)."""
    return tuple(_wrap(a) for a in _a.unstack(x._x, axis))


def take(x: Array, indices: Array, /, *, axis=None) -> Array:
    """The elements of `x` at the integer `indices` along `axis` (may be omitted for 1-D `x`); an index
    out of range is an error when the array is read."""
    return _wrap(_a.take(x._x, asarray(indices)._x, axis))


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """The elements of `x` at `indices` along `axis`, position by position (`indices` has `x`'s
    number of dimensions; the others broadcast): the inverse of `argsort` along an axis.
    Negative indices count from the end. Traced as one `take` of the flattened array at the
    computed flat positions."""
    indices = asarray(indices)
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices have {indices.ndim} dimensions, the array {x.ndim}")
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < x.ndim:
        raise IndexError(f"take_along_axis: axis {axis} is out of range for {x.ndim} dimensions")
    shape = list(np.broadcast_shapes(tuple(1 if d == ax else n for d, n in enumerate(x.shape)),
                                     tuple(1 if d == ax else n for d, n in enumerate(indices.shape))))
    src = list(shape)
    src[ax] = x.shape[ax]
    shape[ax] = indices.shape[ax]
    xb = broadcast_to(x, tuple(src))
    idx = where(indices < 0, indices + x.shape[ax], indices)
    # The flat positions live where the indices do (a team's, under SPMD: compute follows data).
    flat = zeros(tuple(shape), dtype=int64, device=indices.device)
    stride = 1
    for d in reversed(range(x.ndim)):
        if d == ax:
            coord = broadcast_to(astype(idx, int64), tuple(shape))
        else:
            view = [1] * x.ndim
            view[d] = shape[d]
            coord = broadcast_to(reshape(arange(shape[d], dtype=int64, device=indices.device), tuple(view)), tuple(shape))
        flat = flat + coord * stride
        stride *= src[d]
    return reshape(take(reshape(xb, (-1,)), reshape(flat, (-1,))), tuple(shape))


def isin(x1: Any, x2: Any, /, *, invert: builtins.bool = False) -> Array:
    """Elementwise, whether each element of `x1` equals some element of `x2` (`invert=True`:
    equals none); `x1`'s shape. NaN is in nothing. One comparison against every element of
    `x2`, folded by `any`."""
    a, b = asarray(x1), reshape(asarray(x2), (-1,))
    hit = any(expand_dims(a, axis=-1) == b, axis=-1) if b.shape[0] else zeros(a.shape, dtype=bool)
    return logical_not(hit) if invert else hit


def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product (`@`): batched over leading axes as the standard broadcasts them; 1-D
    operands are promoted to matrices and their axis dropped afterwards. A Strata `map_reduce`
    over the contracted axis."""
    return _wrap(_a.matmul(x1._x, x2._x))


def matrix_transpose(x: Array, /) -> Array:
    """`x` with its last two axes swapped."""
    return _wrap(_a.matrix_transpose(x._x))


def tensordot(x1: Array, x2: Array, /, *, axes=2) -> Array:
    """The tensor contraction of `x1` and `x2` over `axes` (an int: the last `axes` of `x1` with the
    first of `x2`; or two sequences of axes)."""
    if not isinstance(axes, int):
        axes = (list(axes[0]), list(axes[1]))
    return _wrap(_a.tensordot(x1._x, x2._x, axes))


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The dot product of vectors along `axis` (`sum(conj(x1) * x2)`), broadcast over the other
    axes."""
    return _wrap(_a.vecdot(x1._x, x2._x, axis))


# ---- data types ----


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype the standard's promotion rules give for these arrays and dtypes (Python scalars are
    weak: they take the arrays' kind's dtype)."""
    names = [(a.dtype if isinstance(a, Array) else np.dtype(a)).name for a in arrays_and_dtypes
             if not isinstance(a, (builtins.bool, int, float, complex))]
    if not names:
        raise TypeError("result_type needs at least one array or dtype")
    return np.dtype(_a.result_type(names))


def can_cast(from_, to, /) -> builtins.bool:
    """Whether `from_` (a dtype or an array) can be cast to `to` under the standard's promotion rules
    (without changing kind or losing range)."""
    f = from_.dtype if isinstance(from_, Array) else np.dtype(from_)
    return _a.can_cast(f.name, np.dtype(to).name)


class finfo_object(NamedTuple):
    """Machine limits of a floating-point dtype, as the standard lists them (Python floats)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: Any


class iinfo_object(NamedTuple):
    """Machine limits of an integer dtype, as the standard lists them (Python ints)."""

    bits: int
    max: int
    min: int
    dtype: Any


def finfo(type, /) -> finfo_object:  # noqa: A002
    """The limits of a floating-point dtype (or of an array's dtype): `bits`, `eps`, `max`,
    `min`, `smallest_normal` as Python floats, and the `dtype`."""
    return _finfo(type.dtype if isinstance(type, Array) else np.dtype(type))


@functools.lru_cache(maxsize=None)
def _finfo(dtype: np.dtype) -> finfo_object:
    f = np.finfo(dtype)
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), f.dtype)


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """The limits of an integer dtype (or of an array's dtype): `bits`, `max`, `min` as Python
    ints, and the `dtype`."""
    i = np.iinfo(type.dtype if isinstance(type, Array) else type)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), i.dtype)


_KINDS = {
    "bool": (bool,),
    "signed integer": (int8, int16, int32, int64),
    "unsigned integer": (uint8, uint16, uint32, uint64),
    "integral": (int8, int16, int32, int64, uint8, uint16, uint32, uint64),
    "real floating": (float32, float64),
    "complex floating": (complex64, complex128),
    "numeric": (int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, complex64, complex128),
}


# Each kind's dtypes as a set, for `isdtype`'s membership test.
_KIND_SETS = {k: frozenset(np.dtype(d) for d in ds) for k, ds in _KINDS.items()}


def isdtype(dtype, kind) -> builtins.bool:
    """Whether `dtype` is of `kind`: a dtype, or one of "bool", "signed integer", "unsigned integer",
    "integral", "real floating", "complex floating", "numeric", or a tuple of those."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    d = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    return builtins.any(d in _KIND_SETS[k] if isinstance(k, str) else d == k for k in kinds)


class _Info:
    """`__array_namespace_info__()`: what this namespace supports."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        return {"real floating": float64, "complex floating": complex128, "integral": int64, "indexing": int64}

    def dtypes(self, *, device=None, kind=None):
        # A new dict per call (callers may change it), from one computed per kind.
        cached = kind is None or isinstance(kind, str) or (
            isinstance(kind, tuple) and builtins.all(isinstance(k, (str, np.dtype)) for k in kind)
        )
        made = _DTYPES_OF_KIND.get(kind) if cached else None
        if made is None:
            made = {np.dtype(d).name: d for d in _DTYPES if kind is None or isdtype(d, kind)}
            if cached:
                _DTYPES_OF_KIND[kind] = made
        return dict(made)


# `__array_namespace_info__().dtypes(kind=…)` by kind (scikit-learn asks several times a call).
_DTYPES_OF_KIND: dict = {}


def __array_namespace_info__():
    return _Info()


# ---- later revisions of the standard (2024.12), where they are compositions ----


def reciprocal(x: Array, /) -> Array:
    """`1 / x` (2024.12)."""
    return divide(1.0, x) if x.dtype.kind == "f" else divide(1, x)


def count_nonzero(x: Array, /, *, axis=None, keepdims=False) -> Array:
    """How many elements are not zero (2024.12)."""
    return sum(astype(not_equal(x, 0 if x.dtype != bool else False), int64), axis=axis, keepdims=keepdims)


def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Optional[Array] = None, append: Optional[Array] = None) -> Array:
    """The `n`-th forward difference along `axis` (2024.12)."""
    if x.ndim == 0:
        raise ValueError("diff needs an array of at least one dimension")
    ax = axis % x.ndim
    parts = [a for a in (prepend, x, append) if a is not None]
    y = concat(parts, axis=ax) if len(parts) > 1 else x
    for _ in range(n):
        lo = tuple(slice(1, None) if k == ax else slice(None) for k in range(y.ndim))
        hi = tuple(slice(None, -1) if k == ax else slice(None) for k in range(y.ndim))
        y = y[lo] - y[hi]
    return y


def broadcast_shapes(*shapes) -> Tuple[int, ...]:
    """The shape the given shapes broadcast to (2024.12)."""
    out: list = []
    for s in shapes:
        s = tuple(s)
        for k in range(1, len(s) + 1):
            n = s[-k]
            if k > len(out):
                out.insert(0, n)
            elif out[-k] == 1:
                out[-k] = n
            elif n not in (1, out[-k]):
                raise ValueError(f"shapes {shapes} cannot be broadcast together")
    return tuple(out)


# ---- extensions (imported last: they use this module's names) ----

from . import array_api_fft as fft  # noqa: E402
from . import array_api_linalg as linalg  # noqa: E402
