"""Fields over named dimensions (seed 000's typed stencils), written in Python.

    >>> I, J, K = strata.dims("I J K")
    >>> x = strata.field(a, I[-1:6], J[-1:8], K[0:9])       # a numpy array on those intervals
    >>> lap = -4.0 * x + x(I + 1) + x(I - 1) + x(J + 1) + x(J - 1)
    >>> lap.domain                                           # (I[0:5], J[0:7], K[0:9])
    >>> out = lap.numpy()                                    # compiled once per structure, run

Expressions are lazy: each operation records what it computes and the type of its result
(dimensions and intervals, by seed 000's rules — broadcasting by name intersects intervals, a
shift by `o` moves the interval by `-o`, a neighbor shift replaces the source dimension by the
table's destination). Evaluating one writes it as a Strata function whose parameters are the
fields it reads and the float scalars it uses, verifies and compiles it (cached by the
function's text: the same structure over the same types compiles once, whatever the scalars'
values) and runs it natively on the fields' arrays.

Errors are raised where the expression is built or evaluated, in Python terms (`FieldError`, a
`strata.Error`): operands of different dtypes, disjoint intervals, a shift through a table
that does not map into the field, an output the expression does not cover.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._strata import Error

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


class Field:
    """A field over named dimensions: a numpy array on intervals (`strata.field`), or a lazy
    expression of fields. `domain` is where it is defined; `numpy()` evaluates it."""

    __array_priority__ = 100  # numpy scalars on the left defer to Field's reflected operators

    def __init__(self, op: str, args: Sequence[Any], levels: Levels, dtype: np.dtype, attrs: str = ""):
        dtype = dtype if isinstance(dtype, tuple) else np.dtype(dtype)
        self.op, self.args, self.levels, self.dtype, self.attrs = op, tuple(args), list(levels), dtype, attrs

    @staticmethod
    def _leaf(array: np.ndarray, levels: Levels) -> "Field":
        f = Field("param", (), levels, array.dtype)
        f.array = array
        return f

    @property
    def domain(self) -> Tuple[Range, ...]:
        """The intervals the field is defined on, one per dimension."""
        return tuple(self.levels)

    @property
    def dims(self) -> Tuple[str, ...]:
        return tuple(l.name for l in self.levels)

    def __repr__(self) -> str:
        return f"<field {self.op} {self.dtype} over {', '.join(map(repr, self.levels))}>"

    # ---- shifts ----

    def __call__(self, at: Any) -> "Field":
        """`x(I + 1)`: a cartesian shift; `x(E2V[k])`: the k-th neighbor through a table;
        `x(E2V)`: every neighbor, as a new neighbor dimension."""
        if isinstance(at, Offset):
            return self.shift(Dim(at[0]), at[1])
        if isinstance(at, _Neighbor):
            conn, k = at
            return self._through(conn, k)
        if isinstance(at, Connectivity):
            return self._through(at, None)
        raise FieldError(f"a field is shifted by `Dim + offset` or through a connectivity, not {at!r}")

    def shift(self, dim: Dim, offset: int) -> "Field":
        """The field read at `p + offset` along `dim`: its interval moves by `-offset`."""
        levels = []
        for l in self.levels:
            levels.append(Range(l.name, l.start - offset, l.stop - offset) if l.name == dim.name else l)
        if dim.name not in self.dims:
            raise FieldError(f"shift along `{dim.name}`: the field has dimensions {', '.join(self.dims)}")
        return Field("cartesian_shift", (self,), levels, self.dtype, f"dim = {dim.name}, offset = {offset}")

    def _through(self, conn: Connectivity, k: Optional[int]) -> "Field":
        if conn.src not in self.dims:
            raise FieldError(f"the table maps into `{conn.src}`, but the field has dimensions {', '.join(self.dims)}")
        if conn.dst.name in self.dims:
            raise FieldError(f"the field already has the table's destination dimension `{conn.dst.name}`")
        levels = [conn.dst if l.name == conn.src else l for l in self.levels]
        if k is not None:
            return Field("unstructured_shift", (self, conn.leaf), levels, self.dtype, f"neighbor = {k}")
        counters = [int(l.name[3:]) for l in self.levels if l.name[3:].isdigit() and l.name.startswith("NB_")]
        levels.append(Range(f"NB_{max(counters) + 1 if counters else 0}", 0, conn.table.shape[1]))
        return Field("shift_init", (self, conn.leaf), levels, self.dtype)

    # ---- arithmetic ----

    def _binary(self, op: str, other: Any, reflected: bool = False, result: Optional[np.dtype] = None) -> "Field":
        other = _as_field(other, self.dtype)
        a, b = (other, self) if reflected else (self, other)
        return _broadcast(op, (a, b), result)

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
    def __eq__(self, o): return self._binary("eq", o, result=np.dtype(np.bool_))  # type: ignore[override]
    def __ne__(self, o): return self._binary("ne", o, result=np.dtype(np.bool_))  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]  # like a numpy array: `==` compares per point

    def _true_divide(self, o: Any, reflected: bool = False) -> "Field":
        """`/` is true division, as in numpy and GT4Py: integer fields divide as float64."""
        if not isinstance(self.dtype, tuple) and self.dtype.kind in "iub":
            other = o.astype(np.float64) if isinstance(o, Field) and o.dtype.kind in "iub" else o
            return self.astype(np.float64)._binary("divides", other, reflected)
        return self._binary("divides", o, reflected)
    def __pow__(self, o): return self._binary("power", o)
    def __lt__(self, o): return self._binary("less", o, result=np.dtype(np.bool_))
    def __le__(self, o): return self._binary("less_equal", o, result=np.dtype(np.bool_))
    def __gt__(self, o): return self._binary("greater", o, result=np.dtype(np.bool_))
    def __ge__(self, o): return self._binary("greater_equal", o, result=np.dtype(np.bool_))
    def __and__(self, o): return self._binary("and", o)
    def __or__(self, o): return self._binary("or", o)
    def __neg__(self): return Field("neg", (self,), self.levels, self.dtype)
    def __abs__(self): return Field("abs", (self,), self.levels, self.dtype)
    def __invert__(self): return Field("not", (self,), self.levels, self.dtype)

    def astype(self, dtype: Any) -> "Field":
        """The field converted to `dtype` (float64, float32, int64, int32, bool)."""
        dtype = np.dtype(dtype)
        if dtype not in _DTYPES:
            raise FieldError(f"fields hold {', '.join(str(d) for d in _DTYPES)}, not {dtype}")
        return Field("cast", (self,), self.levels, dtype, f"to = {_DTYPES[dtype]}")

    def __bool__(self):
        raise FieldError("a field has no truth value; use `strata.where` for a choice per point")

    def __getitem__(self, k: int) -> "Field":
        """The k-th field of a field of tuples."""
        if not isinstance(self.dtype, tuple):
            raise FieldError("only a field of tuples (`strata.make_tuple`) has fields to index")
        if not 0 <= k < len(self.dtype):
            raise FieldError(f"field {k} of tuples of {len(self.dtype)}")
        return Field("tuple_get", (self,), self.levels, self.dtype[k], f"index = {k}")

    # ---- evaluation ----

    def numpy(self, backend: str = "auto") -> np.ndarray:
        """Evaluates the field over its domain (an array indexed from each interval's start)."""
        return evaluate(self, backend=backend)

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
            return Field(_UFUNC_UNARY[name], inputs, inputs[0].levels, np.dtype(np.bool_) if name in _PREDICATES else inputs[0].dtype)
        if len(inputs) == 2 and name in _UFUNC_BINARY:
            op, result = _UFUNC_BINARY[name]
            first = inputs[0] if isinstance(inputs[0], Field) else None
            if first is None:
                return inputs[1]._binary(op, inputs[0], True, result=result)
            if op == "divides":
                return first._true_divide(inputs[1])
            return first._binary(op, inputs[1], result=result)
        raise FieldError(f"`np.{name}` has no field operation; evaluate the field first with `.numpy()`")


_BOOL = np.dtype(np.bool_)
_PREDICATES = {"isnan", "isinf", "isfinite", "signbit"}
# numpy ufuncs with a Strata builtin of the same meaning.
_UFUNC_UNARY = {
    "negative": "neg", "absolute": "abs", "fabs": "abs", "sqrt": "sqrt", "exp": "exp", "log": "log",
    "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "floor": "floor", "ceil": "ceil",
    "rint": "round", "trunc": "trunc", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "cosh": "cosh", "sinh": "sinh",
    "expm1": "expm1", "log1p": "log1p", "log2": "log2", "log10": "log10", "sign": "sign",
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "signbit": "signbit",
    "logical_not": "not",
}
_UFUNC_BINARY = {
    "add": ("plus", None), "subtract": ("minus", None), "multiply": ("multiplies", None),
    "true_divide": ("divides", None), "divide": ("divides", None), "power": ("power", None),
    "maximum": ("maximum", None), "minimum": ("minimum", None), "floor_divide": ("floor_divide", None),
    "remainder": ("remainder", None), "arctan2": ("atan2", None), "hypot": ("hypot", None),
    "copysign": ("copysign", None), "logaddexp": ("logaddexp", None),
    "equal": ("eq", _BOOL), "not_equal": ("ne", _BOOL), "less": ("less", _BOOL),
    "less_equal": ("less_equal", _BOOL), "greater": ("greater", _BOOL), "greater_equal": ("greater_equal", _BOOL),
    "logical_and": ("and", None), "logical_or": ("or", None),
}


def _literal(x: Any, dtype: np.dtype) -> str:
    """A Python number as a Strata literal of `dtype`."""
    if dtype == np.bool_:
        return "true" if x else "false"
    if dtype.kind == "f":
        return repr(float(x))
    if float(x) != int(x):
        raise FieldError(f"{x!r} is not a value of an integer field ({dtype})")
    return str(int(x))


def _as_field(x: Any, dtype: np.dtype) -> Field:
    """`x` as an operand of `dtype`. A float scalar (a time step, a coefficient) is a scalar
    parameter of the program, read when it runs: a loop passing a new value each step runs one
    compiled program. Integers and booleans are literals (structure the C compiler folds)."""
    if isinstance(x, Field):
        return x
    if isinstance(x, _ScalarArg):
        return x._field(dtype)
    if isinstance(x, (bool, int, float, np.generic)):
        if dtype.kind == "f" and isinstance(x, (float, np.floating)):
            return Field._leaf(np.asarray(x, dtype=dtype), [])
        return Field("constant", (), [], dtype, _literal(x, dtype))
    raise FieldError(f"cannot combine a field with `{type(x).__name__}`")


def _broadcast(op: str, operands: Sequence[Field], result: Optional[np.dtype] = None) -> Field:
    """Seed 000's broadcasting by name: the union of the dimensions in order of appearance,
    each interval the intersection of the operands'. The operands share one dtype (a Python
    number takes the fields'); the result has it, or `result`."""
    dtypes = {o.dtype for o in operands if o.op != "constant"}
    if len(dtypes) > 1:
        raise FieldError(f"`{op}` of fields of dtypes {', '.join(sorted(map(str, dtypes)))}: convert one with `.astype`")
    dtype = dtypes.pop() if dtypes else operands[0].dtype
    args = [Field("constant", (), [], dtype, o.attrs) if o.op == "constant" else o for o in operands]
    return Field(op, args, _common_levels(op, operands), result if result is not None else dtype)


def _common_levels(op: str, operands: Sequence[Field]) -> Levels:
    levels: Dict[str, Range] = {}
    for o in operands:
        for l in o.levels:
            if l.name in levels:
                m = levels[l.name]
                start, stop = max(m.start, l.start), min(m.stop, l.stop)
                if start >= stop:
                    raise FieldError(f"`{op}`: dimension `{l.name}` has disjoint intervals {m!r} and {l!r}")
                levels[l.name] = Range(l.name, start, stop)
            else:
                levels[l.name] = l
    return list(levels.values())


def field(array: Any, *domain: Range) -> Field:
    """A numpy array as a field on the given intervals, one per array dimension, in order:
    `strata.field(a, I[-1:6], J[-1:8], K[0:9])` needs `a.shape == (7, 9, 9)`."""
    a = np.asarray(array)
    if a.dtype not in _DTYPES:
        raise FieldError(f"fields hold {', '.join(str(d) for d in _DTYPES)}, not {a.dtype}")
    if len(domain) != a.ndim or any(not isinstance(r, Range) for r in domain):
        raise FieldError(f"an array of {a.ndim} dimensions needs {a.ndim} intervals (`I[a:b]`), got {domain!r}")
    shape = tuple(len(r) for r in domain)
    if a.shape != shape:
        raise FieldError(f"the array has shape {a.shape}, but {', '.join(map(repr, domain))} has shape {shape}")
    if len({r.name for r in domain}) != len(domain):
        raise FieldError(f"a dimension appears twice in {domain!r}")
    return Field._leaf(a, list(domain))


def where(condition: Field, a: Any, b: Any) -> Field:
    """`a` where `condition` holds, else `b` (broadcast by name)."""
    if not isinstance(condition, Field) or condition.dtype != np.bool_:
        raise FieldError("`where` chooses by a bool field (a comparison of fields)")
    dtype = next((x.dtype for x in (a, b) if isinstance(x, Field)), np.dtype(np.float64))
    a, b = _as_field(a, dtype), _as_field(b, dtype)
    chosen = _broadcast("select", (a, b))
    return Field("select", (condition, *chosen.args), _common_levels("where", (condition, a, b)), chosen.dtype)


def maximum(a: Field, b: Any) -> Field:
    """The larger of `a` and `b` at each point."""
    return a._binary("maximum", b)


def minimum(a: Field, b: Any) -> Field:
    """The smaller of `a` and `b` at each point."""
    return a._binary("minimum", b)


def _neighbor_reduce(f: Field, axis: Connectivity, fold: str, init: str) -> Field:
    nb = [l for l in f.levels if l.name.startswith("NB_") and l.name[3:].isdigit()]
    if not nb or not isinstance(axis, Connectivity):
        raise FieldError("a neighbor reduction needs a field shifted through a connectivity (`x(E2V)`)")
    last = max(nb, key=lambda l: int(l.name[3:]))
    # The neighbor dimension reduced is the one `axis` added: its destination is a dimension
    # of the field and its width the counter's.
    if axis.dst.name not in f.dims or len(last) != axis.table.shape[1]:
        raise FieldError(
            f"`axis` is a table into `{axis.src}` from `{axis.dst.name}` with {axis.table.shape[1]} neighbors, "
            f"but the field's last neighbor dimension `{last.name}` has {len(last)} over {', '.join(map(repr, f.levels))}"
        )
    levels = [l for l in f.levels if l.name != last.name]
    return Field("neighbor_reduce", (f,), levels, f.dtype, f"{fold}|{init}|{last.name}")


def neighbor_sum(f: Field, axis: Connectivity) -> Field:
    """The sum over the neighbor dimension `x(E2V)` added (skipped neighbors take no part)."""
    return _neighbor_reduce(f, axis, "plus", "0")


def neighbor_max(f: Field, axis: Connectivity) -> Field:
    """The maximum over the neighbor dimension (skipped neighbors take no part; none: -inf)."""
    return _neighbor_reduce(f, axis, "maximum", "-inf")


def neighbor_min(f: Field, axis: Connectivity) -> Field:
    """The minimum over the neighbor dimension (skipped neighbors take no part; none: +inf)."""
    return _neighbor_reduce(f, axis, "minimum", "inf")


def make_tuple(*fields_: Field) -> Field:
    """The fields as one field of tuples (broadcast by name); `t[k]` is the k-th field again."""
    if not fields_ or not all(isinstance(f, Field) for f in fields_):
        raise FieldError("`make_tuple` takes fields")
    return Field("make_tuple", fields_, _common_levels("make_tuple", fields_), tuple(f.dtype for f in fields_))


def scan(step: Any, *xs: Field, dim: Dim, init: Any = 0.0, forward: bool = True) -> Field:
    """The running `state = step(state, *values)` along `dim` (forward, or backward from the
    end), starting from `init` (a number, or a tuple of numbers for a tuple state); the result
    has the fields' common domain. `step` is a Python function of fields over the other
    dimensions, traced once into a Strata function — seed 000's tridiagonal solve is a forward
    scan with a tuple state and a backward one."""
    if not xs or not all(isinstance(x, Field) and dim.name in x.dims for x in xs):
        raise FieldError(f"`scan` along `{dim.name}` takes fields that have `{dim.name}`")
    levels = _common_levels("scan", xs)
    section = [l for l in levels if l.name != dim.name]
    base = xs[0].dtype if not isinstance(xs[0].dtype, tuple) else np.dtype(np.float64)
    state_dtype = tuple(base for _ in init) if isinstance(init, tuple) else base
    state = Field("param", (), section, state_dtype)
    values = [Field("param", (), [l for l in x.levels if l.name != dim.name], x.dtype) for x in xs]
    out = step(state, *values)
    out = _as_field(out, base) if not isinstance(out, Field) else out
    if not _same_dtype(out.dtype, state_dtype) or [l.name for l in out.levels] != [l.name for l in section]:
        raise FieldError(
            f"a scan step must return a {_elem(state_dtype)} field over {', '.join(map(repr, section))}, "
            f"not {_elem(out.dtype)} over {', '.join(map(repr, out.levels))}"
        )
    body = _Writer(params=[state, *values])
    result = body.value(out)
    f = Field("scan", xs, levels, state_dtype, f"dim = {dim.name}, forward = {str(bool(forward)).lower()}")
    f.step = (body, result, out)
    f.init = "(" + ", ".join(_literal(v, base) for v in init) + ")" if isinstance(init, tuple) else _literal(init, base)
    return f


# ---- writing the Strata function ----


def _same_dtype(a: Any, b: Any) -> bool:
    """Equal element types (a tuple of dtypes equals only a tuple of equal dtypes)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and all(map(_same_dtype, a, b))
    return np.dtype(a) == np.dtype(b)


def _elem(dtype: Any) -> str:
    """The Strata element type of a dtype, or of a tuple of dtypes."""
    if isinstance(dtype, tuple):
        return "(" + ", ".join(_elem(d) for d in dtype) + ")"
    return _DTYPES[np.dtype(dtype)]


def _type(dtype: Any, levels: Levels) -> str:
    t = _elem(dtype)
    if not levels:
        return t
    return f"tensor<{t}, {', '.join(f'{l.name}[{l.start}:{l.stop}]' for l in levels)}>"


class _Writer:
    """Writes a field expression as the statements of one Strata function: fields it reads
    from arrays become parameters, shared subexpressions are written once."""

    def __init__(self, params: Optional[List[Field]] = None):
        # A scan step's parameters are fixed (its state and values): the scalars it uses are
        # written as literals there.
        self.fixed = params is not None
        self.params: List[Field] = []
        self.names: Dict[int, str] = {}
        self.lines: List[str] = []
        self.helpers: Dict[str, str] = {}
        for p in params or []:
            self.names[id(p)] = f"%p{len(self.params)}"
            self.params.append(p)

    def value(self, f: Field) -> str:
        if id(f) in self.names:
            return self.names[id(f)]
        if f.op == "param" and self.fixed and not f.levels and getattr(f, "array", None) is not None:
            name = f"%v{len(self.lines)}"
            self.lines.append(f"  {name} = constant(value = {_literal(f.array.item(), f.dtype)}) : {_elem(f.dtype)}")
            self.names[id(f)] = name
            return name
        if f.op == "param":
            name = f"%p{len(self.params)}"
            self.params.append(f)
            self.names[id(f)] = name
            return name
        args = [self.value(a) for a in f.args]
        name = f"%v{len(self.lines)}"
        ty = _type(f.dtype, f.levels)
        if f.op == "constant":
            self.lines.append(f"  {name} = constant(value = {f.attrs}) : {ty}")
        elif f.op == "neighbor_reduce":
            fold, init, nb = f.attrs.split("|")
            el = _DTYPES[f.dtype]
            helper = f"@{fold}_{el}"
            self.helpers[helper] = (
                f"func {helper}(%acc: {el}, %x: {el}) -> {el} {{\n  %r = {fold}(%acc, %x) : {el}\n  return %r\n}}\n"
            )
            src = f.args[0].levels
            letters = dict(zip((l.name for l in src), "abcdefghijklmnopqrstuvwxyz"))
            spec = "".join(letters[l.name] for l in src) + "->" + "".join(letters[l.name] for l in f.levels)
            if el in ("f64", "f32"):
                init = {"0": "0.0", "-inf": "-inf", "inf": "inf"}[init]
            else:
                init = {"0": "0", "-inf": str(np.iinfo(f.dtype).min), "inf": str(np.iinfo(f.dtype).max)}[init]
            self.lines.append(f'  {name} = map_reduce({helper}, {args[0]}, init = {init}, einsum = "{spec}") : {ty}')
        elif f.op == "scan":
            body, result, out = f.step
            helper = f"@step{len(self.helpers)}"
            self.helpers.update(body.helpers)
            self.helpers[helper] = body.function(helper, result, out)
            self.lines.append(f"  {name} = scan({helper}, {', '.join(args)}, {f.attrs}, init = {f.init}) : {ty}")
        else:
            attrs = f", {f.attrs}" if f.attrs else ""
            self.lines.append(f"  {name} = {f.op}({', '.join(args)}{attrs}) : {ty}")
        self.names[id(f)] = name
        return name

    def function(self, name: str, result: str, f: Field) -> str:
        """The function `name` returning `result` (the value of `f`)."""
        params = ", ".join(f"%p{k}: {_type(p.dtype, p.levels)}" for k, p in enumerate(self.params))
        body = "\n".join(self.lines)
        return f"func {name}({params}) -> {_type(f.dtype, f.levels)} {{\n{body}\n  return {result}\n}}\n"

    def text(self, result: str, f: Field) -> str:
        return "".join(self.helpers.values()) + self.function("@fields", result, f)

    def program_text(self, result: str, f: Field, out: Field) -> str:
        """The program `@fields` writing `f` over its domain into `out` (an `out` parameter, so
        a native run writes the caller's array in place)."""
        params = ", ".join(f"%p{k}: {_type(p.dtype, p.levels)}" for k, p in enumerate(self.params))
        body = "\n".join(self.lines)
        domain = ", ".join(f"{l.name}[{l.start}:{l.stop}]" for l in f.levels)
        return "".join(self.helpers.values()) + (
            f"program @fields(%out: out {_type(out.dtype, out.levels)}{', ' if params else ''}{params}) {{\n"
            f"{body}\n  %out[{domain}] <- {result}\n}}\n"
        )


_CACHE: Dict[str, Any] = {}


def _module(text: str):
    from . import compile as _compile_module

    m = _CACHE.get(text)
    if m is None:
        m = _CACHE[text] = _compile_module(text, name="<fields>")
    return m


def evaluate(f: Field, out: Optional[Field] = None, backend: str = "auto") -> np.ndarray:
    """Evaluates `f`: over its domain (returning an array), or into `out` — a field made with
    `strata.field` on a numpy array — over `out`'s domain, which `f` must cover (an
    `out`-sized array is written in place and returned)."""
    if not isinstance(f, Field):
        raise FieldError("`evaluate` takes a field expression")
    if out is not None:
        _check_out(f, out)
    if f.op == "param" and out is None:
        return f.array
    w = _Writer()
    if f.op == "constant":
        raise FieldError("a constant has no domain to evaluate over; combine it with a field")
    if f.op == "param":
        if isinstance(f.dtype, tuple):
            return f.array
        f = Field("cast", (f,), f.levels, f.dtype, f"to = {_DTYPES[f.dtype]}")
    result = w.value(f)
    m = _module(w.text(result, f))
    arrays = [p.array for p in w.params]
    value = m.fields(*arrays, backend=backend)
    if out is None:
        return value
    return _write_into(out, f, value)


def _out_array(out: Any) -> np.ndarray:
    """The array of `out`, which must be a field made with `strata.field` on an array."""
    if not isinstance(out, Field) or out.op != "param" or getattr(out, "array", None) is None:
        raise FieldError("`out` must be a field made with `strata.field` on an array")
    return out.array


def _check_out(f: Field, out: Any) -> None:
    """Raises unless `f` can be written into `out` over `out`'s domain: the same dimensions,
    `f` defined on all of `out`'s domain, the same dtype."""
    _out_array(out)
    have = {l.name: l for l in f.levels}
    if set(have) != set(out.dims):
        raise FieldError(f"the expression has dimensions {', '.join(f.dims)}, `out` has {', '.join(out.dims)}")
    for l in out.levels:
        h = have[l.name]
        if not (h.start <= l.start and l.stop <= h.stop):
            raise FieldError(f"the expression is defined on {h!r}, which does not cover `out`'s {l!r}")
    if not _same_dtype(out.dtype, f.dtype):
        raise FieldError(f"the expression is {f.dtype}, `out` is {out.dtype}")


def _write_into(out: Field, f: Field, value: np.ndarray) -> np.ndarray:
    """Writes `value` (`f` over its domain) into `out` over `out`'s domain (checked by
    `_check_out`); returns its array."""
    have = {l.name: l for l in f.levels}
    # The part of the result over out's domain, in out's dimension order.
    order = [f.dims.index(n) for n in out.dims]
    value = np.transpose(value, order)
    cut = tuple(
        slice(l.start - have[l.name].start, l.stop - have[l.name].start) for l in out.levels
    )
    np.copyto(out.array, value[cut])
    return out.array


# ---- stencils: field functions compiled once per argument structure ----


class _ScalarArg:
    """A float argument of a stencil while it is traced: a parameter of the program, usable in
    field expressions (`dt * lap`, `dt / 2`), never a Python number (which would be traced as
    the first call's value)."""

    def __init__(self, index: int):
        self.index = index

    def _field(self, dtype: Any) -> Field:
        f = Field("param", (), [], np.dtype(dtype))
        f.array = None
        f.arg = self.index
        return f

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


class Stencil:
    """A field function compiled once per argument structure (`strata.stencil`)."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "stencil")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._compiled: Dict[Any, Any] = {}

    @staticmethod
    def _key(args: Sequence[Any]) -> tuple:
        key = []
        for a in args:
            if isinstance(a, Field):
                if a.op != "param" or getattr(a, "array", None) is None:
                    raise FieldError("a stencil's field arguments are fields made with `strata.field` on arrays")
                key.append(("field", tuple(a.levels), str(a.dtype)))
            elif isinstance(a, (float, np.floating)) and not isinstance(a, bool):
                key.append(("float",))
            elif isinstance(a, (bool, int, np.integer)):
                key.append(("int", int(a)))  # structure: traced as a literal
            else:
                raise FieldError(f"a stencil takes fields and numbers, not `{type(a).__name__}`")
        return tuple(key)

    @staticmethod
    def _in_place(f: Field, out: Optional[Field]) -> bool:
        """Whether `out` can be written in place by the program: an array that holds `f`'s
        domain, in the same dimension order, contiguous and writeable."""
        if out is None:
            return False
        a = out.array
        if not (a.flags.c_contiguous and a.flags.writeable) or not _same_dtype(out.dtype, f.dtype):
            return False
        if [l.name for l in out.levels] != [l.name for l in f.levels]:
            return False
        return all(o.start <= l.start and l.stop <= o.stop for o, l in zip(out.levels, f.levels))

    def _compile(self, key: tuple, args: Sequence[Any], out: Optional[Field] = None):
        placeholders = []
        for i, (a, k) in enumerate(zip(args, key)):
            if k[0] == "field":
                p = Field("param", (), a.levels, a.dtype)
                p.array = a.array
                p.arg = i
                placeholders.append(p)
            elif k[0] == "float":
                placeholders.append(_ScalarArg(i))
            else:
                placeholders.append(a)
        f = self.fn(*placeholders)
        if not isinstance(f, Field):
            raise FieldError(f"`{self.__name__}` must return a field expression")
        if f.op == "param":
            f = Field("cast", (f,), f.levels, f.dtype, f"to = {_DTYPES[f.dtype]}")
        w = _Writer()
        result = w.value(f)
        in_place = self._in_place(f, out)
        if out is not None and not in_place:
            _check_out(f, out)  # once per structure: `out`'s intervals and dtype are in the key
        m = _module(w.program_text(result, f, out) if in_place else w.text(result, f))
        # Where each parameter's value comes from at a call: an argument, or a value captured
        # when the stencil was traced (a field it closes over, a float constant of its body).
        sources = []
        for k, p in enumerate(w.params):
            i = getattr(p, "arg", None)
            if i is None:
                sources.append((f"p{k}", None, p.array, None))
            else:
                sources.append((f"p{k}", i, None, None if p.levels else np.dtype(p.dtype)))
        return m, sources, f, in_place

    def __call__(self, *args: Any, out: Optional[Field] = None, backend: str = "auto") -> np.ndarray:
        key = self._key(args)
        if out is not None:
            a = _out_array(out)
            key += (("out", tuple(out.levels), str(out.dtype), a.flags.c_contiguous and a.flags.writeable),)
        c = self._compiled.get(key)
        if c is None:
            c = self._compiled[key] = self._compile(key, args, out)
        m, sources, f, in_place = c
        values = {}
        for name, i, captured, scalar in sources:
            if i is None:
                values[name] = captured
            elif scalar is not None:
                values[name] = np.asarray(args[i], dtype=scalar)
            else:
                values[name] = args[i].array
        if in_place:
            values["out"] = out.array
            written = dict(m._program.run("fields", values, backend, None))["out"]
            if written is not out.array:  # not native: the run returned a copy
                np.copyto(out.array, written)
            return out.array
        value = dict(m._program.run("fields", values, backend, None))["result"]
        if out is None:
            return value
        return _write_into(out, f, value)


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
