"""Fields over named dimensions (seed 000's typed stencils), written in Python.

    >>> I, J, K = strata.dims("I J K")
    >>> x = strata.field(a, I[-1:6], J[-1:8], K[0:9])       # a numpy array on those intervals
    >>> lap = -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)
    >>> lap.domain                                           # (I[0:5], J[0:7], K[0:9])
    >>> out = lap.numpy()                                    # compiled once per structure, run

Expressions are lazy: each operation is an IR op over the values it reads, built through
Strata's IR builder, which types it by the verifier's own rules the moment it is written
(broadcasting by name intersects intervals, a shift by `o` moves the interval by `-o`, a
neighbor shift replaces the source dimension by the table's destination). Evaluating one builds
the program computing it — the fields it reads and the float scalars it uses are its
parameters — compiled once per structure (the same expression over the same types, whatever
the scalars' values) and run natively on the fields' arrays.

Errors are raised where the expression is built or evaluated, in Python terms (`FieldError`, a
`strata.Error`, naming the line that wrote the operation and the verifier's reason): operands
of different dtypes, disjoint intervals, a shift through a table that does not map into the
field, an output the expression does not cover.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _strata
from ._strata import Error, VerifyError

__all__ = [
    "Connectivity",
    "Dim",
    "Field",
    "FieldError",
    "Range",
    "connectivity",
    "dims",
    "evaluate",
    "field",
    "make_tuple",
    "maximum",
    "minimum",
    "neighbor_max",
    "neighbor_min",
    "neighbor_sum",
    "scan",
    "stencil",
    "where",
]


class FieldError(Error):
    """A field expression that does not type: the message says which operation and why."""


_DTYPES = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.bool_): "bool",
}
_NUMPY = {**{v: k for k, v in _DTYPES.items()}, "index": np.dtype(np.int64)}


class Dim:
    """A named dimension: `I[a:b]` is an interval of it, `I + 1` / `I - 1` a shift along it."""

    def __init__(self, name: str):
        if not name.isidentifier() or name.startswith(("_", "NB_")):
            raise FieldError(f"`{name}` cannot name a dimension (an identifier not starting with `_` or `NB_`)")
        self.name = name

    def __getitem__(self, s: slice) -> "Range":
        if not isinstance(s, slice) or s.step is not None or s.start is None or s.stop is None:
            raise FieldError(f"an interval of `{self.name}` is written `{self.name}[start:stop]`")
        return Range(self.name, int(s.start), int(s.stop))

    def __add__(self, n: int) -> "Offset":
        return Offset(self.name, int(n))

    def __sub__(self, n: int) -> "Offset":
        return Offset(self.name, -int(n))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dim) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


class Range(tuple):
    """An interval of a dimension: `(name, start, stop)`, printed `I[0:5]`."""

    def __new__(cls, name: str, start: int, stop: int):
        return super().__new__(cls, (name, start, stop))

    name = property(lambda self: self[0])
    start = property(lambda self: self[1])
    stop = property(lambda self: self[2])

    def __len__(self) -> int:  # type: ignore[override]
        return max(0, self[2] - self[1])

    def __repr__(self) -> str:
        return f"{self[0]}[{self[1]}:{self[2]}]"


class Offset(tuple):
    """A cartesian shift `I + o`: reads the field at `p + o`."""

    def __new__(cls, name: str, offset: int):
        return super().__new__(cls, (name, offset))


def dims(names: str) -> Tuple[Dim, ...]:
    """`I, J, K = strata.dims("I J K")`."""
    return tuple(Dim(n) for n in names.split())


class Connectivity:
    """A neighbor table: for each position of `dst` (rows), the coordinates of its neighbors in
    the dimension `src` (columns; `-1` is a skip, "no neighbor"). `x(E2V[0])` reads `x` at each
    edge's first vertex; `x(E2V)` gives a field with a neighbor dimension, reduced by
    `neighbor_sum` / `neighbor_max` / `neighbor_min` (skips take no part)."""

    def __init__(self, table: np.ndarray, dst: Range, src: Dim):
        table = np.ascontiguousarray(table, dtype=np.int32)
        if table.ndim != 2 or table.shape[0] != len(dst):
            raise FieldError(f"a table over {dst!r} has shape ({len(dst)}, neighbors), not {table.shape}")
        self.table, self.dst, self.src = table, dst, src.name
        self.leaf = Field._leaf(table, [dst, Range(f"NB_{src.name}", 0, table.shape[1])])

    @property
    def neighbors(self) -> Range:
        """The neighbor dimension `x(self)` adds to a field without one (`NB_0`), with the
        table's width: the interval of a field given per neighbor, such as the nabla's signs
        (`strata.field(sign, V[0:nv], V2E.neighbors)`)."""
        return Range("NB_0", 0, self.table.shape[1])

    def __getitem__(self, k: int) -> "_Neighbor":
        if not 0 <= k < self.table.shape[1]:
            raise FieldError(f"neighbor {k} of a table with {self.table.shape[1]} neighbors")
        return _Neighbor(self, int(k))

    def __repr__(self) -> str:
        return f"<connectivity {self.dst!r} -> {self.src} ({self.table.shape[1]} neighbors)>"


class _Neighbor(tuple):
    def __new__(cls, conn: Connectivity, k: int):
        return super().__new__(cls, (conn, k))


def connectivity(table: np.ndarray, dst: Range, src: Dim) -> Connectivity:
    """A neighbor table (see `Connectivity`)."""
    return Connectivity(table, dst, src)


Levels = List[Range]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _where() -> str:
    """`file:line: ` of the user's code that called into this package."""
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _HERE:
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}: " if f is not None else ""


def _ir(make: Any, *args: Any) -> "Field":
    """The field of the IR value `make(*args)`: the builder types it, or its refusal is raised
    as a `FieldError` at the user's line."""
    try:
        return Field(make(*args))
    except VerifyError as e:
        raise FieldError(f"{_where()}{e}") from None


def _dtype_of(element: Any) -> Any:
    """The numpy dtype of an IR element type (a tuple of them for a tuple)."""
    if isinstance(element, tuple):
        return tuple(_dtype_of(e) for e in element)
    return _NUMPY[element]


class Field:
    """A field over named dimensions: a numpy array on intervals (`strata.field`), or a lazy
    expression of fields. `domain` is where it is defined; `numpy()` evaluates it."""

    __array_priority__ = 100  # numpy scalars on the left defer to Field's reflected operators

    def __init__(self, value: "_strata.FieldValue", array: Optional[np.ndarray] = None, team: Any = None):
        self._v = value
        self._array = array
        # A field on `strata.world` under a launcher: the `strata.array_api` team array holding
        # this rank's rows of its first dimension (`array` is then `None`).
        self._team = team
        self._structure: Optional[tuple] = None
        self._contiguous: Optional[bool] = None

    @staticmethod
    def _leaf(array: Any, levels: Levels, dtype: Any = None, team: bool = False) -> "Field":
        """A parameter over `levels` standing for `array` (a numpy array, a team array's block,
        or a stencil argument's `_Arg`); with `team`, distributed by blocks of its first
        dimension over the job's ranks."""
        dtype = np.dtype(dtype if dtype is not None else array.dtype)
        value = _strata.field_param(_DTYPES[dtype], [tuple(l) for l in levels], array, team)
        return Field(value, array if isinstance(array, np.ndarray) else None)

    def _key(self) -> tuple:
        """What a stencil's compiled program depends on: the intervals, the dtype and whether
        it lives on a team (kept, a field never changes)."""
        if self._structure is None:
            self._structure = ("field", tuple(self._v.dims), self._v.element, self._team is not None)
        return self._structure

    def _in_place(self) -> bool:
        """Whether a program can write this field's array in place (C-contiguous, writeable;
        kept)."""
        if self._contiguous is None:
            a = self._array
            self._contiguous = a is not None and a.flags.c_contiguous and a.flags.writeable
        return self._contiguous

    @property
    def levels(self) -> Levels:
        return [Range(*d) for d in self._v.dims]

    @property
    def dtype(self) -> Any:
        """The numpy dtype (a tuple of dtypes for a field of tuples)."""
        return _dtype_of(self._v.element)

    @property
    def array(self) -> Optional[np.ndarray]:
        """The array a field made with `strata.field` holds (`None` for an expression)."""
        return self._array

    @property
    def domain(self) -> Tuple[Range, ...]:
        """The intervals the field is defined on, one per dimension."""
        return tuple(self.levels)

    @property
    def dims(self) -> Tuple[str, ...]:
        return tuple(l.name for l in self.levels)

    def __repr__(self) -> str:
        what = "array" if self._v.is_leaf else "expression"
        return f"<field {what} {self.dtype} over {', '.join(map(repr, self.levels))}>"

    # ---- shifts ----

    def __call__(self, at: Any) -> "Field":
        """`x(I + 1)`: a cartesian shift; `x(E2V[k])`: the k-th neighbor through a table;
        `x(E2V)`: every neighbor, as a new neighbor dimension."""
        if isinstance(at, Offset):
            return self.shift(Dim(at[0]), at[1])
        if isinstance(at, _Neighbor):
            conn, k = at
            return _ir(_strata.field_neighbor, self._v, conn.leaf._v, k)
        if isinstance(at, Connectivity):
            return _ir(_strata.field_neighbor, self._v, at.leaf._v, None)
        raise FieldError(f"a field is shifted by `Dim + offset` or through a connectivity, not {at!r}")

    def shift(self, dim: Dim, offset: int) -> "Field":
        """The field read at `p + offset` along `dim`: its interval moves by `-offset`."""
        return _ir(_strata.field_shift, self._v, dim.name, int(offset))

    # ---- arithmetic ----

    def _binary(self, op: str, other: Any, reflected: bool = False, result: Optional[np.dtype] = None) -> "Field":
        other = _as_field(other, self.dtype)
        a, b = (other, self) if reflected else (self, other)
        return _ir(_strata.field_builtin, op, [a._v, b._v])

    def __add__(self, o): return self._binary("plus", o)
    def __radd__(self, o): return self._binary("plus", o, True)
    def __sub__(self, o): return self._binary("minus", o)
    def __rsub__(self, o): return self._binary("minus", o, True)
    def __mul__(self, o): return self._binary("multiplies", o)
    def __rmul__(self, o): return self._binary("multiplies", o, True)
    def __truediv__(self, o): return self._true_divide(o)
    def __rtruediv__(self, o): return self._true_divide(o, True)
    def __floordiv__(self, o): return self._binary("floor_divide", o)
    def __rfloordiv__(self, o): return self._binary("floor_divide", o, True)
    def __mod__(self, o): return self._binary("remainder", o)
    def __rmod__(self, o): return self._binary("remainder", o, True)
    def __eq__(self, o): return self._binary("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._binary("ne", o)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]  # like a numpy array: `==` compares per point

    def _true_divide(self, o: Any, reflected: bool = False) -> "Field":
        """`/` is true division, as in numpy and GT4Py: integer fields divide as float64."""
        if not isinstance(self.dtype, tuple) and self.dtype.kind in "iub":
            other = o.astype(np.float64) if isinstance(o, Field) and o.dtype.kind in "iub" else o
            return self.astype(np.float64)._binary("divides", other, reflected)
        return self._binary("divides", o, reflected)

    def __pow__(self, o): return self._binary("power", o)
    def __lt__(self, o): return self._binary("less", o)
    def __le__(self, o): return self._binary("less_equal", o)
    def __gt__(self, o): return self._binary("greater", o)
    def __ge__(self, o): return self._binary("greater_equal", o)
    def __and__(self, o): return self._binary("and", o)
    def __or__(self, o): return self._binary("or", o)
    def __neg__(self): return _ir(_strata.field_builtin, "neg", [self._v])
    def __abs__(self): return _ir(_strata.field_builtin, "abs", [self._v])
    def __invert__(self): return _ir(_strata.field_builtin, "not", [self._v])

    def astype(self, dtype: Any) -> "Field":
        """The field converted to `dtype` (float64, float32, int64, int32, bool)."""
        dtype = np.dtype(dtype)
        if dtype not in _DTYPES:
            raise FieldError(f"fields hold {', '.join(str(d) for d in _DTYPES)}, not {dtype}")
        return _ir(_strata.field_cast, self._v, _DTYPES[dtype])

    def __bool__(self):
        raise FieldError("a field has no truth value; use `strata.where` for a choice per point")

    def __getitem__(self, k: int) -> "Field":
        """The k-th field of a field of tuples."""
        return _ir(_strata.field_tuple_get, self._v, int(k))

    # ---- evaluation ----

    def numpy(self, backend: str = "auto", device: Any = None) -> np.ndarray:
        """Evaluates the field over its domain (an array indexed from each interval's start);
        a field on a team is gathered on every rank (call it on every rank). `device`
        (`strata.gpu(n)`) evaluates it on that GPU."""
        return np.asarray(evaluate(self, backend=backend, device=device))

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __array_function__(self, func, types, args, kwargs):
        """numpy functions other than ufuncs (`np.cumsum`, `np.where`, …) would evaluate the
        field silently: refused, naming the function (`strata.where`, `strata.scan` and
        `.numpy()` are the field ways)."""
        raise FieldError(f"`np.{func.__name__}` has no field operation; evaluate the field first with `.numpy()`")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy's math on fields stays a field (`np.sqrt(x)` is `sqrt` per point, compiled with
        the rest), never a silent evaluation; a ufunc Strata has no builtin for is an error."""
        name = ufunc.__name__
        if method != "__call__" or kwargs:
            raise FieldError(f"`np.{name}.{method}` with {sorted(kwargs) or 'these arguments'} is not a field operation; "
                             "evaluate the field first with `.numpy()`")
        if len(inputs) == 1 and name in _UFUNC_UNARY:
            return _ir(_strata.field_builtin, _UFUNC_UNARY[name], [inputs[0]._v])
        if len(inputs) == 2 and name in _UFUNC_BINARY:
            op = _UFUNC_BINARY[name]
            first = inputs[0] if isinstance(inputs[0], Field) else None
            if first is None:
                return inputs[1]._binary(op, inputs[0], True)
            if op == "divides":
                return first._true_divide(inputs[1])
            return first._binary(op, inputs[1])
        raise FieldError(f"`np.{name}` has no field operation; evaluate the field first with `.numpy()`")


# numpy ufuncs with a Strata builtin of the same meaning.
_UFUNC_UNARY = {
    "negative": "neg", "absolute": "abs", "fabs": "abs", "sqrt": "sqrt", "exp": "exp", "log": "log",
    "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "floor": "floor", "ceil": "ceil",
    "rint": "round", "trunc": "trunc", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "cosh": "cosh", "sinh": "sinh",
    "expm1": "expm1", "log1p": "log1p", "log2": "log2", "log10": "log10", "cbrt": "cbrt", "sign": "sign",
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "signbit": "signbit",
    "logical_not": "not",
}
_UFUNC_BINARY = {
    "add": "plus", "subtract": "minus", "multiply": "multiplies", "true_divide": "divides",
    "divide": "divides", "power": "power", "maximum": "maximum", "minimum": "minimum",
    "floor_divide": "floor_divide", "remainder": "remainder", "arctan2": "atan2", "hypot": "hypot",
    "copysign": "copysign", "logaddexp": "logaddexp", "equal": "eq", "not_equal": "ne", "less": "less",
    "less_equal": "less_equal", "greater": "greater", "greater_equal": "greater_equal",
    "logical_and": "and", "logical_or": "or",
}

# While a scan's step is traced, its parameters are fixed (the state and the values): float
# scalars it uses are constants there, not parameters.
_IN_STEP = [False]


def _as_field(x: Any, dtype: Any) -> Field:
    """`x` as an operand of `dtype`. A float scalar (a time step, a coefficient) is a scalar
    parameter of the program, read when it runs: a loop passing a new value each step runs one
    compiled program. Integers and booleans are constants (structure the C compiler folds)."""
    if isinstance(x, Field):
        return x
    if isinstance(x, _ScalarArg):
        return x._field(dtype)
    if isinstance(x, (bool, int, float, np.generic)):
        dtype = dtype if not isinstance(dtype, tuple) else np.dtype(np.float64)
        if dtype.kind == "f" and isinstance(x, (float, np.floating)) and not _IN_STEP[0]:
            return Field._leaf(np.asarray(x, dtype=dtype), [])
        return _ir(_strata.field_constant, x.item() if isinstance(x, np.generic) else x, _DTYPES[dtype])
    raise FieldError(f"cannot combine a field with `{type(x).__name__}`")


def field(array: Any, *domain: Range, device: Any = None) -> Field:
    """A numpy array as a field on the given intervals, one per array dimension, in order:
    `strata.field(a, I[-1:6], J[-1:8], K[0:9])` needs `a.shape == (7, 9, 9)`.

    `device=strata.world` under `mpirun` places the field on the team: each rank keeps only its
    block of rows of the first dimension (every rank passes the same array, or a
    `strata.array_api` team array), and expressions over it evaluate as distributed jobs,
    returning team arrays (`.numpy()` gathers). Without a launcher the team is this process."""
    team = _team_array(array, device)
    a = team if team is not None else np.asarray(array)
    dtype = np.dtype(a.dtype)
    if dtype not in _DTYPES:
        raise FieldError(f"fields hold {', '.join(str(d) for d in _DTYPES)}, not {dtype}")
    if len(domain) != len(a.shape) or any(not isinstance(r, Range) for r in domain):
        raise FieldError(f"an array of {len(a.shape)} dimensions needs {len(a.shape)} intervals (`I[a:b]`), got {domain!r}")
    shape = tuple(len(r) for r in domain)
    if tuple(a.shape) != shape:
        raise FieldError(f"the array has shape {tuple(a.shape)}, but {', '.join(map(repr, domain))} has shape {shape}")
    if len({r.name for r in domain}) != len(domain):
        raise FieldError(f"a dimension appears twice in {domain!r}")
    if team is None:
        return Field._leaf(a, list(domain))
    f = Field._leaf(team._x, list(domain), dtype, team=True)
    f._team = team
    return f


def _team_array(array: Any, device: Any) -> Any:
    """The `strata.array_api` team array a field on `device` holds, or `None` for a field on
    the host (no team, or no launcher: a team of one is this process)."""
    from . import array_api as xp
    from . import placement

    p = placement.place_of(device)
    on_team = isinstance(array, xp.Array) and array._x.team is not None
    if (p is None or p.team is None) and not on_team:
        return None
    if not placement._distributed():
        return None
    return array if on_team else xp.asarray(np.asarray(array), device=placement.world)


def where(condition: Field, a: Any, b: Any) -> Field:
    """`a` where `condition` holds, else `b` (broadcast by name)."""
    if not isinstance(condition, Field):
        raise FieldError("`where` chooses by a bool field (a comparison of fields)")
    dtype = next((x.dtype for x in (a, b) if isinstance(x, Field)), np.dtype(np.float64))
    a, b = _as_field(a, dtype), _as_field(b, dtype)
    return _ir(_strata.field_builtin, "select", [condition._v, a._v, b._v])


def maximum(a: Field, b: Any) -> Field:
    """The larger of `a` and `b` at each point."""
    return a._binary("maximum", b)


def minimum(a: Field, b: Any) -> Field:
    """The smaller of `a` and `b` at each point."""
    return a._binary("minimum", b)


def _neighbor_reduce(f: Field, axis: Connectivity, fold: str) -> Field:
    if not isinstance(f, Field) or not isinstance(axis, Connectivity):
        raise FieldError("a neighbor reduction needs a field shifted through a connectivity (`x(E2V)`)")
    nb = [l for l in f.levels if l.name.startswith("NB_") and l.name[3:].isdigit()]
    last = max(nb, key=lambda l: int(l.name[3:])) if nb else None
    # `axis` names the table whose neighbor dimension is reduced: its destination is a
    # dimension of the field and its width the last neighbor dimension's.
    if last is not None and (axis.dst.name not in f.dims or len(last) != axis.table.shape[1]):
        raise FieldError(
            f"`axis` is a table into `{axis.src}` from `{axis.dst.name}` with {axis.table.shape[1]} neighbors, "
            f"but the field's last neighbor dimension `{last.name}` has {len(last)} over {', '.join(map(repr, f.levels))}"
        )
    return _ir(_strata.field_neighbor_fold, f._v, fold)


def neighbor_sum(f: Field, axis: Connectivity) -> Field:
    """The sum over the neighbor dimension `x(E2V)` added (skipped neighbors take no part)."""
    return _neighbor_reduce(f, axis, "plus")


def neighbor_max(f: Field, axis: Connectivity) -> Field:
    """The maximum over the neighbor dimension (skipped neighbors take no part; none: -inf)."""
    return _neighbor_reduce(f, axis, "maximum")


def neighbor_min(f: Field, axis: Connectivity) -> Field:
    """The minimum over the neighbor dimension (skipped neighbors take no part; none: +inf)."""
    return _neighbor_reduce(f, axis, "minimum")


def make_tuple(*fields_: Field) -> Field:
    """The fields as one field of tuples (broadcast by name); `t[k]` is the k-th field again."""
    if not fields_ or not all(isinstance(f, Field) for f in fields_):
        raise FieldError("`make_tuple` takes fields")
    return _ir(_strata.field_make_tuple, [f._v for f in fields_])


def scan(step: Any, *xs: Field, dim: Dim, init: Any = 0.0, forward: bool = True) -> Field:
    """The running `state = step(state, *values)` along `dim` (forward, or backward from the
    end), starting from `init` (a number, or a tuple of numbers for a tuple state); the result
    has the fields' common domain. `step` is a Python function of fields over the other
    dimensions, traced once into a Strata function — seed 000's tridiagonal solve is a forward
    scan with a tuple state and a backward one."""
    if not xs or not all(isinstance(x, Field) and dim.name in x.dims for x in xs):
        raise FieldError(f"`scan` along `{dim.name}` takes fields that have `{dim.name}`")
    # The step's parameters: the state over the section (the other dimensions of the values),
    # one slice of each value.
    base = xs[0].dtype if not isinstance(xs[0].dtype, tuple) else np.dtype(np.float64)
    state_dtype = tuple(_init_dtype(v, base) for v in init) if isinstance(init, tuple) else base
    state = Field(_strata.field_param(_element(state_dtype), [tuple(l) for l in _step_section(xs, dim)], None))
    values = [
        Field(_strata.field_param(_element(x.dtype), [tuple(l) for l in x.levels if l.name != dim.name], None))
        for x in xs
    ]
    _IN_STEP[0], was = True, _IN_STEP[0]
    try:
        out = step(state, *values)
        out = _as_field(out, base)
    finally:
        _IN_STEP[0] = was
    try:
        fn = _strata.field_function([state._v, *(v._v for v in values)], out._v)
    except VerifyError as e:
        raise FieldError(f"{_where()}{e}") from None
    return _ir(_strata.field_scan, fn, [x._v for x in xs], dim.name, bool(forward), init)


def _init_dtype(v: Any, base: np.dtype) -> np.dtype:
    """The dtype of a tuple state's member starting at `v`: a numpy scalar's own, a Python
    bool's `bool`, else the first value's (`base`)."""
    if isinstance(v, np.generic):
        return v.dtype
    if isinstance(v, bool):
        return np.dtype(np.bool_)
    return base


def _step_section(xs: Sequence[Field], dim: Dim) -> Levels:
    """The state's intervals: the values' common domain without `dim` (as the scan types its
    result), taken from the IR of their tuple."""
    common = xs[0] if len(xs) == 1 else make_tuple(*xs)
    return [l for l in common.levels if l.name != dim.name]


def _element(dtype: Any) -> Any:
    """The IR element type of a dtype, or a tuple of them."""
    if isinstance(dtype, tuple):
        return tuple(_element(d) for d in dtype)
    return _DTYPES[np.dtype(dtype)]


# ---- programs ----

_MODULES: Dict[int, Any] = {}


def _program(f: Field, out: Optional[Field] = None) -> Tuple[Any, List[Any], bool]:
    """The compiled program of `f` (`@fields`: returning it, or writing it into `out`), the
    payloads of its parameters `p0, p1, …`, and whether it writes all of `out`. With `out`, the
    program writes `f`'s domain when `out` holds it (the rest of `out` keeps its values), else
    `out`'s whole domain, which `f` must cover."""
    try:
        if out is None:
            return (*_strata.field_program(f._v, None), False)
        try:
            program, payloads = _strata.field_program(f._v, out._v, True)
            return program, payloads, f.domain == out.domain
        except VerifyError:
            return (*_strata.field_program(f._v, out._v, False), True)
    except VerifyError as e:
        raise FieldError(f"{_where()}{e}") from None


def evaluate(f: Field, out: Optional[Field] = None, backend: str = "auto", device: Any = None) -> np.ndarray:
    """Evaluates `f`: over its domain (returning an array), or into `out` — a field made with
    `strata.field` on a numpy array — over `out`'s domain, which `f` must cover (an
    `out`-sized array is written in place and returned). `device` (`strata.gpu(n)`) computes
    it on that GPU: the arrays are copied there and the result back."""
    if not isinstance(f, Field):
        raise FieldError("`evaluate` takes a field expression")
    if out is not None:
        _out_array(out)
    if f._v.is_leaf and out is None and f.array is not None:
        return f.array
    if f._v.is_leaf and out is None and f._team is not None:
        return f._team
    program, payloads, whole = _program(f, out)
    if out is None and not f.levels and not payloads:
        raise FieldError("a constant has no domain to evaluate over; combine it with a field")
    from . import _device_name

    runner = program.bind("fields", backend, None, _device_name(device))
    if out is None:
        return _result(runner(*payloads)[0][1])
    return _run_into(lambda buffer: runner(buffer, *payloads)[0][1], out, whole)


def _run_into(run: Any, out: Field, whole: bool) -> np.ndarray:
    """Runs a program writing its `out` parameter (all of it when `whole`; `run(buffer)` runs it
    on `buffer` and returns what it wrote) into `out`'s array: in place when the array is
    contiguous, else through a contiguous buffer copied back (holding `out`'s values first
    unless the program writes them all)."""
    target = out._array
    if target.flags.c_contiguous and target.flags.writeable:
        buffer = target
    else:
        buffer = np.empty(target.shape, target.dtype) if whole else np.ascontiguousarray(target)
    written = run(buffer)
    if written is not target:  # a copy: not native, or through `buffer`
        np.copyto(target, written)
    return target


def _result(r: Any) -> Any:
    """A program's result as users see it: a team array's block wrapped as a
    `strata.array_api` team array, a numpy array as it is."""
    if isinstance(r, _strata.array.Array):
        from .array_api import _wrap

        return _wrap(r)
    return r


def _out_array(out: Any) -> np.ndarray:
    """The array of `out`, which must be a field made with `strata.field` on an array."""
    if isinstance(out, Field) and out._team is not None:
        raise FieldError("`out` on a team: a team field is not written in place; use the result (a team array)")
    if not isinstance(out, Field) or out.array is None:
        raise FieldError("`out` must be a field made with `strata.field` on an array")
    return out.array


# ---- stencils: field functions compiled once per argument structure ----


class _Arg:
    """What a parameter of a stencil's program stands for: argument `index` of each call (a
    field's array, or a number converted to `scalar`)."""

    def __init__(self, index: int, scalar: Optional[np.dtype] = None):
        self.index, self.scalar = index, scalar


class _ScalarArg:
    """A float argument of a stencil while it is traced: a parameter of the program, usable in
    field expressions (`dt * lap`, `dt / 2`), never a Python number (which would be traced as
    the first call's value)."""

    def __init__(self, index: int):
        self.index = index

    def _field(self, dtype: Any) -> Field:
        dtype = dtype if not isinstance(dtype, tuple) else np.float64
        return Field._leaf(_Arg(self.index, np.dtype(dtype)), [], dtype)

    def _op(self, op: str, other: Any, reflected: bool) -> Field:
        dtype = other.dtype if isinstance(other, Field) and not isinstance(other.dtype, tuple) else np.float64
        return self._field(dtype)._binary(op, other, reflected)

    def __add__(self, o): return self._op("plus", o, False)
    def __radd__(self, o): return self._op("plus", o, True)
    def __sub__(self, o): return self._op("minus", o, False)
    def __rsub__(self, o): return self._op("minus", o, True)
    def __mul__(self, o): return self._op("multiplies", o, False)
    def __rmul__(self, o): return self._op("multiplies", o, True)
    def __truediv__(self, o): return self._field(np.float64)._true_divide(o)
    def __rtruediv__(self, o): return self._field(np.float64)._true_divide(o, True)
    def __neg__(self): return -self._field(np.float64)

    def __float__(self):
        raise FieldError(
            "a stencil's scalar argument is a value of the compiled program: use it in field expressions "
            "(`dt * lap`), not as a Python number"
        )

    __int__ = __bool__ = __index__ = __float__


_FLOAT_KEY = ("float",)


class Stencil:
    """A field function compiled once per argument structure (`strata.stencil`)."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "stencil")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._compiled: Dict[Any, Any] = {}
        # The plans of the last calls (`_StencilPlan`, newest first): a time loop swapping two
        # fields alternates between two.
        self._plans: List[_StencilPlan] = []

    @staticmethod
    def _key(args: Sequence[Any]) -> tuple:
        key = []
        for a in args:
            if type(a) is float:
                key.append(_FLOAT_KEY)
            elif isinstance(a, Field):
                if a._array is None and a._team is None:
                    raise FieldError("a stencil's field arguments are fields made with `strata.field` on arrays")
                key.append(a._key())
            elif isinstance(a, (float, np.floating)) and not isinstance(a, bool):
                key.append(("float",))
            elif isinstance(a, (bool, int, np.integer)):
                key.append(("int", int(a)))  # structure: traced as a literal
            else:
                raise FieldError(f"a stencil takes fields and numbers, not `{type(a).__name__}`")
        return tuple(key)

    def _compile(self, key: tuple, args: Sequence[Any], out: Optional[Field], backend: str, device: Optional[str] = None):
        placeholders = []
        for i, (a, k) in enumerate(zip(args, key)):
            if k[0] == "field":
                placeholders.append(Field._leaf(_Arg(i), a.levels, a.dtype, a._team is not None))
            elif k[0] == "float":
                placeholders.append(_ScalarArg(i))
            else:
                placeholders.append(a)
        f = self.fn(*placeholders)
        if not isinstance(f, Field):
            raise FieldError(f"`{self.__name__}` must return a field expression")
        if f._v.is_leaf:
            f = f.astype(f.dtype)  # a program computes its result
        program, payloads, whole = _program(f, out)
        # Where each parameter's value comes from at a call, in the order the program takes
        # them (`out` first, if any): an argument (a scalar converted to the parameter's dtype),
        # or a value captured when the stencil was traced (a field it closes over, a float
        # constant of its body).
        sources = []
        for p in payloads:
            if isinstance(p, _Arg):
                sources.append((p.index, None, p.scalar))
            else:
                sources.append((None, p, None))
        return program, program.bind("fields", backend, None, device), sources, whole

    def __call__(self, *args: Any, out: Optional[Field] = None, backend: str = "auto", device: Any = None) -> np.ndarray:
        # The loop's path: the argument objects of a recent call (a float's value aside) repeat
        # its plan, about a microsecond of Python around the compiled program's run.
        for plan in self._plans:
            # `plan.out`: a weak reference to the call's `out`, `None` for a call without one (a
            # dead reference never stands for "no `out`": its program takes one).
            ref = plan.out
            if (
                plan.nargs == len(args)
                and plan.backend == backend
                and device is None
                and (ref is None if out is None else ref is not None and ref() is out)
            ):
                values = plan.values.copy()
                for i, r, slot in plan.fields:
                    f = r()
                    if f is None or f is not args[i]:
                        break
                    if slot is not None:
                        values[slot] = f._array
                else:
                    for slot, i in plan.floats:
                        a = values[slot] = args[i]
                        if type(a) is not float:
                            break
                    else:
                        if out is None:
                            return _result(plan.runner(*values)[0][1])
                        target = out._array
                        written = plan.runner(target, *values)[0][1]
                        if written is not target:  # not native: the run returned a copy
                            np.copyto(target, written)
                        return target
        # A field already seen has its structure kept; a float is a parameter.
        key = [a._structure if type(a) is Field else _FLOAT_KEY if type(a) is float else None for a in args]
        if None in key:
            key = list(self._key(args))
        in_place = False
        if out is not None:
            target = out._array if type(out) is Field else None
            if target is None:
                target = _out_array(out)
            in_place = out._in_place()
            key.append(("out", out._key(), in_place))
        key.append(backend)
        if device is not None:
            from . import _device_name

            device = _device_name(device)
            key.append(("device", device))
        key = tuple(key)
        c = self._compiled.get(key)
        if c is None:
            c = self._compiled[key] = self._compile(key, args, out, backend, device)
        _, runner, sources, whole = c
        if device is None and (out is None or in_place):
            self._remember(args, out, backend, runner, sources)
        values = []
        for i, captured, scalar in sources:
            if i is None:
                values.append(captured)
            elif scalar is None:
                a = args[i]
                values.append(a._array if a._team is None else a._team._x)
            else:
                a = args[i]
                # A Python float goes as it is (converted to the parameter's type when read).
                values.append(a if type(a) is float else np.asarray(a, dtype=scalar))
        if out is None:
            return _result(runner(*values)[0][1])
        if in_place:
            written = runner(target, *values)[0][1]
            if written is not target:  # not native: the run returned a copy
                np.copyto(target, written)
            return target
        return _run_into(lambda buffer: runner(buffer, *values)[0][1], out, whole)


    def _remember(self, args: Sequence[Any], out: Optional[Field], backend: str, runner: Any, sources: list) -> None:
        """Keeps this call's plan for the next calls with the same argument objects: every
        argument a field on an array or a Python float (a parameter, filled in per call), `out`
        none or written in place. Fields are referred to weakly and compared by identity (a
        field never changes); their arrays are taken from them per call, so a plan keeps no
        memory alive."""
        fields: Dict[int, Optional[int]] = {}
        floats, values = [], []
        for i, captured, scalar in sources:
            if i is None:
                values.append(captured)
                continue
            a = args[i]
            if type(a) is Field and a._team is None and a._array is not None and scalar is None:
                fields[i] = len(values)
            elif type(a) is float and scalar is not None:
                floats.append((len(values), i))
            else:
                return
            values.append(None)
        for i, a in enumerate(args):
            if type(a) is Field:
                fields.setdefault(i, None)
            elif type(a) is not float:
                return  # an int or a bool is part of the structure, by value
        try:
            refs = [(i, weakref.ref(args[i]), slot) for i, slot in fields.items()]
            out_ref = weakref.ref(out) if out is not None else None
        except TypeError:
            return
        self._plans = [_StencilPlan(out_ref, backend, len(args), refs, floats, values, runner)] + self._plans[:7]


class _StencilPlan:
    """A stencil call to repeat (`Stencil._remember`): the program's parameter values in order,
    with the slots of the fields' arrays and the floats to fill per call."""

    __slots__ = ("out", "backend", "nargs", "fields", "floats", "values", "runner")

    def __init__(self, out, backend, nargs, fields, floats, values, runner):
        self.out, self.backend, self.nargs = out, backend, nargs
        self.fields, self.floats, self.values = fields, floats, values
        self.runner = runner


def stencil(fn: Any) -> Stencil:
    """A field function compiled once per argument structure — GT4Py's field operator, JAX's
    `jit` — for time loops:

        @strata.stencil
        def step(u, dt):
            return u + dt * (u(I + 1) + u(I - 1) + u(J + 1) + u(J - 1) - 4.0 * u)

        for n in range(1000):
            step(strata.field(u, I[-1:65], J[-1:65]), dt, out=interior)

    Arguments are fields made with `strata.field` on arrays (their intervals and dtype are the
    structure) and numbers: a float is a parameter of the program (a new value each call is the
    same program; use it in field expressions, not as a Python number), an int or bool part of
    the structure. The first call with a structure traces `fn` and compiles it; later calls run
    the compiled program on the arguments' arrays directly (no tracing, no program text). The
    result is the expression over its domain, or written into `out`: a contiguous array that
    holds the expression's domain is written there in place by the program (its other
    elements keep their values); another `out` receives the expression over `out`'s domain, as
    with `evaluate`."""
    return Stencil(fn)
