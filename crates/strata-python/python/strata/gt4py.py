"""GT4Py programs on Strata: `strata.gt4py.backend`, a `gt4py.next` backend.

    import gt4py.next as gtx, strata.gt4py
    @gtx.field_operator(backend=strata.gt4py.backend)
    def lap(f: gtx.Field[[I, J], gtx.float64]) -> gtx.Field[[I, J], gtx.float64]:
        return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)

GT4Py lowers the program to GTIR and runs its own field-view transforms (domain inference gives
every `as_fieldop` its domain). At the first call with given argument domains, dtypes and
structural scalars (integers and booleans, which may size domains or choose branches), the
GTIR is lowered to a Strata program through the IR builder — the same values
`strata.fields` builds, each typed by the verifier's rules, the domains becoming interval
types — compiled once and kept; later calls with the same structure run the compiled program on
the fields' arrays in place. Float scalars are parameters: a new value each call is the same
program.

Supported GTIR (tested with gt4py 1.1.12): `as_fieldop` with stencil lambdas over cartesian
and unstructured shifts, `deref`, `neighbors` and `reduce` (skipped neighbors take no part),
`scan` along the vertical axis (tuple states), the arithmetic, comparison, logical and math
builtins, `if_`, `cast_`, `make_tuple` / `tuple_get` (tuple returns), literals and scalar
arguments, several `SetAt`s, temporaries, and `IfStmt` on structural scalars. Anything else raises `GTIRError` naming the
construct and, where GT4Py recorded it, the user's source line — never a wrong result.
"""

from __future__ import annotations

import dataclasses
import re
import time
import weakref
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple

import numpy as np

from gt4py.next import backend as _next_backend
from gt4py.next import common as _common
from gt4py.next import constructors as _constructors
from gt4py.next.embedded import nd_array_field as _nd_array_field
from gt4py.next.instrumentation import metrics as _metrics
from gt4py.next import custom_layout_allocators as _allocators
from gt4py.next.iterator import ir as _itir
from gt4py.next.iterator.ir_utils import domain_utils as _domain_utils
from gt4py.next.iterator import transforms as _itir_transforms
from gt4py.next.otf import workflow as _workflow
from gt4py.next.type_system import type_specifications as _ts

from . import _strata
from . import placement as _placement
from ._strata import Error, VerifyError
from .fields import _DTYPES, Field

__all__ = ["GTIRError", "as_field", "backend", "empty", "full", "ones", "zeros"]


class GTIRError(Error):
    """A GTIR construct the Strata backend does not lower (yet), or a program it cannot type."""


_KINDS = {
    _ts.ScalarKind.FLOAT64: np.dtype(np.float64),
    _ts.ScalarKind.FLOAT32: np.dtype(np.float32),
    _ts.ScalarKind.INT64: np.dtype(np.int64),
    _ts.ScalarKind.INT32: np.dtype(np.int32),
    _ts.ScalarKind.BOOL: np.dtype(np.bool_),
}

# GTIR builtins on values → the IR's elementwise builtins.
_BUILTINS = {
    "plus": "plus", "minus": "minus", "multiplies": "multiplies", "divides": "divides",
    "floordiv": "floor_divide", "mod": "remainder", "power": "power", "minimum": "minimum",
    "maximum": "maximum", "less": "less", "less_equal": "less_equal", "greater": "greater",
    "greater_equal": "greater_equal", "eq": "eq", "not_eq": "ne", "and_": "and", "or_": "or",
    "xor_": "xor", "neg": "neg", "abs": "abs", "not_": "not", "sqrt": "sqrt", "exp": "exp",
    "log": "log", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "arcsin": "asin",
    "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "arcsinh": "asinh",
    "arccosh": "acosh", "arctanh": "atanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "arctan2": "atan2",
    "fmod": "modulo", "gamma": "gamma", "cbrt": "cbrt", "exp2": None, "log2": "log2", "log10": "log10",
    "round": "round", "sign": "sign",
}

_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "eq", "not_eq"}


def _where(node: Any) -> str:
    """`file:line: ` of the user's source `node` comes from: GT4Py keeps the locations of the
    names and literals it lowered, not always of the calls its transforms made, so the first
    located node inside `node` stands for it."""
    nodes = node.pre_walk_values().if_isinstance(_itir.Node) if _is(node, _itir.Node) else ()
    for n in nodes:
        loc = getattr(n, "location", None)
        if loc is not None and getattr(loc, "filename", None):
            return f"{loc.filename}:{loc.line}: "
    return ""


def _relocated(err: GTIRError, *nodes: Any) -> NoReturn:
    """Raises `err`, located at the first of `nodes` with a location when it names no place
    yet."""
    where = next((w for w in map(_where, nodes) if w), "")
    if where and not re.match(r"\S+:\d+: ", str(err)):
        raise GTIRError(f"{where}{err}") from None
    raise err


def _unsupported(node: Any, what: str) -> GTIRError:
    return GTIRError(f"{_where(node)}the Strata backend does not support {what} yet (GTIR: {str(node)[:120]})")


def _dtype_of(t: Any, node: Any) -> np.dtype:
    if isinstance(t, _ts.ScalarType) and t.kind in _KINDS:
        return _KINDS[t.kind]
    raise _unsupported(node, f"the type `{t}`")


# ---- the executor: GT4Py's transforms in the compile step, lowering at the first call ----


@dataclasses.dataclass(frozen=True)
class _Artifact:
    """The transformed GTIR program (picklable: GT4Py may compile in a worker process)."""

    program: _itir.Program

    def load(self) -> "_Executable":
        return _Executable(self.program)


@dataclasses.dataclass(frozen=True)
class _Executor(_workflow.Workflow):
    def __call__(self, inp: Any) -> _Artifact:
        ir = _itir_transforms.apply_fieldview_transforms(inp.data, offset_provider=inp.args.offset_provider)
        return _Artifact(ir)


class _Executable:
    """The program GT4Py calls: lowered and compiled once per argument structure."""

    def __init__(self, program: _itir.Program):
        self.program = program
        self._compiled: Dict[tuple, Any] = {}
        self._tables: Dict[Tuple[int, Any], Tuple[np.ndarray, np.ndarray]] = {}
        self._fields: Dict[int, Tuple[weakref.ref, Tuple[Any, np.ndarray, np.ndarray]]] = {}
        # Storage arrays that are copies of their fields (by id), see `_field`.
        self._copies: Dict[int, np.ndarray] = {}
        # Field structures met, each with the token keys use for it (see `_field`).
        self._structures: Dict[tuple, tuple] = {}
        # Recent calls' plans by their arguments' identities (`_Plan`): a time loop passes the
        # same fields, tables and integers again and again.
        self._recent: Dict[tuple, "_Plan"] = {}
        # The program's domain bounds as closures (`_int_closure`), by node identity: a new
        # domain size lowers the program again and evaluates every bound again.
        self._bounds: Dict[int, Tuple[Any, Any]] = {}

    def _table(self, a: np.ndarray, rows: Optional[Tuple[int, int]] = None, row_major: bool = False) -> Tuple[np.ndarray, bool]:
        """A connectivity's table (its `rows`, if given) as the program reads it, and whether
        that is a copy: its levels in memory order (`_table_levels`), read in place where that
        view is contiguous (a whole table, unpadded). A padded table or a window of rows in
        GT4Py's neighbor-outermost layout is copied, in memory order (no transposition), into a
        buffer kept per table array and rows and refreshed on every call: a connectivity may be
        changed in place between calls. A team program's tables are read `row_major`."""
        part = a if rows is None else a[rows[0]:rows[1]]
        if not row_major:
            part = _in_memory_order(part)
        if part.flags.c_contiguous:
            return part, False
        key = (id(a), rows, row_major)
        kept = self._tables.get(key)
        if kept is None or kept[0] is not a:
            kept = self._tables[key] = (a, np.ascontiguousarray(part))
        else:
            np.copyto(kept[1], part)
        return kept[1], True

    def _field(self, a: Any) -> Tuple[Any, np.ndarray, np.ndarray]:
        """A field's structure, its array in memory order, and the storage the program reads
        and writes (see `_storage`): kept per field object, weakly, for the next calls (a GT4Py
        field's domain and buffer never change), so a time loop swapping its fields pays for
        neither again."""
        hit = self._fields.get(id(a))
        if hit is not None and hit[0]() is a:
            return hit[1]
        view = _in_memory_order(a.ndarray)
        storage, extent = _storage(view)
        structure = ("field", _levels(a), _memory_order(a.ndarray), extent, a.dtype.scalar_type)
        # A small token stands for the structure in call keys (hashed on every call).
        token = self._structures.setdefault(structure, ("field", len(self._structures)))
        described = (token, view, storage)
        if not np.may_share_memory(storage, view):
            # A copy (a strided slice): refreshed from the field before every run, written back
            # after it, never kept stale.
            self._copies[id(storage)] = storage
        fields, copies, recent, key, sid = self._fields, self._copies, self._recent, id(a), id(storage)
        # Forgotten when the field goes (the views hold its buffer), with the plans of recent
        # calls (which hold them too).
        fields[key] = (
            weakref.ref(a, lambda _: (fields.pop(key, None), copies.pop(sid, None), recent.clear())),
            described,
        )
        return described

    def _structure(self, a: Any) -> Any:
        """What the compiled program depends on: a field's dimensions, intervals, layout and
        dtype; a scalar's dtype, and its value if it is an integer or a boolean (it may size a
        domain or choose a branch); a tuple's members'."""
        t = type(a)
        if t is float:
            return _FLOAT
        if t is tuple:
            return tuple(self._structure(x) for x in a)
        hit = self._fields.get(id(a))
        if hit is not None and hit[0]() is a:
            return hit[1][0]
        if t is _TeamField:
            return ("team", _levels(a), a.dtype.scalar_type)
        # Numbers first: `isinstance(x, Field)` checks a runtime protocol (~0.1 ms a call).
        if not isinstance(a, (np.generic, int, bool, complex)) and isinstance(a, _common.Field):
            return self._field(a)[0]
        d = _NUMBER_DTYPES.get(t)
        if d is None:
            d = np.asarray(a).dtype
        if d.kind in "iub":
            return ("int", d.str, int(a))
        return ("float", d.str)

    def __call__(self, *args: Any, offset_provider: Any = None, out: Any = None, column_axis: Any = None, **kwargs: Any):
        if out is not None:
            args = (*args, out)
        offset_provider = offset_provider or {}
        token = _call_token(args, offset_provider)
        plan = self._recent.get(token) if token is not None else None
        if plan is not None and plan.holds(args, offset_provider):
            return plan.run(self, args, offset_provider)
        structure = self._structure
        key = tuple([structure(a) for a in args])
        if offset_provider:
            key += tuple((name, _table_structure(c)) for name, c in sorted(offset_provider.items()))
        c = self._compiled.get(key)
        if c is None:
            program, runner, targets, sources, checked = _Lowering(self.program, args, offset_provider, self._bounds).compile()
            c = self._compiled[key] = (program, runner, targets, _source_kinds(sources), checked)
        runner, targets, sources, checked_while_running = c[1:]
        plan = _Plan(runner, checked_while_running)
        values = plan.values
        for kind, path, scalar in sources:
            if kind == _TABLE or kind == _TABLE_ROWS:
                name, rows, row_major = (path, None, scalar) if kind == _TABLE else (path[0], path[1:], scalar)
                table, copied = self._table(np.asarray(offset_provider[name].ndarray), rows, row_major)
                if copied:
                    plan.tables.append((len(values), name, rows, row_major))
                values.append(table)
            else:
                a = args[path[0]] if len(path) == 1 else _select(args, path)
                if scalar is not None:
                    if len(path) == 1:
                        plan.scalars.append((len(values), path[0], scalar))
                    else:
                        token = None  # a number inside a tuple: no plan
                    values.append(np.asarray(a, dtype=scalar))
                elif type(a) is _TeamField:
                    token = None
                    values.append(a.ndarray._x)
                else:
                    _, view, storage = self._field(a)
                    if self._copies and id(storage) in self._copies:
                        np.copyto(storage, view)
                        plan.copies.append((storage, view))
                    values.append(storage)
        fields = [_select(args, path) for path in targets]
        if any(type(f) is _TeamField for f in fields):
            # A distributed run (every rank calls it): each output's new value replaces the
            # field's team array (its rows stay on their ranks).
            written = _timed(runner, *(f.ndarray._x for f in fields), *values)
            for (_, w), f in zip(written, fields):
                f.ndarray._x = w
            return
        outs = [self._field(f) for f in fields]
        copies = self._copies
        for _, v, b in outs:
            copied = bool(copies) and id(b) in copies
            if copied:  # the output starts as the field's values
                np.copyto(b, v)
            plan.outs.append((v, b, copied))
        plan.ready()
        if token is not None and plan.refer_to(args, token, offset_provider):
            if len(self._recent) >= _RECENT:
                self._recent.clear()
            self._recent[token] = plan
        plan.call(values)


_FLOAT = ("float", np.dtype(np.float64).str)

# How many recent calls' plans an executable keeps (a time loop alternates two or three sets of
# fields).
_RECENT = 8


class _Plan:
    """What a call did, for the next call with the same argument objects (`_call_token`): the
    parameter values in order with the numbers' slots to fill, the tables kept as copies and the
    strided fields' copies to refresh, and the outputs to write back where the run did not
    write in place."""

    def __init__(self, runner: Any, checked: bool):
        self.runner, self.checked = runner, checked
        self.values: List[Any] = []
        # (slot, argument index, dtype)
        self.scalars: List[Tuple[int, int, np.dtype]] = []
        # (slot, connectivity name, rows, row-major)
        self.tables: List[Tuple[int, str, Any, bool]] = []
        # (copy, field view) refreshed before the run
        self.copies: List[Tuple[np.ndarray, np.ndarray]] = []
        # (field view, storage, whether the storage is a copy)
        self.outs: List[Tuple[np.ndarray, np.ndarray, bool]] = []
        # (argument index, weak reference) of each argument that is not a number
        self.refs: List[Tuple[int, Any]] = []
        # Weak references to the offset provider's entries, in order
        self.providers: List[Any] = []
        # Set by `ready`: the outputs' storage in order, and whether a run refreshes anything
        # before it (a copied table, field or output).
        self.buffers: List[np.ndarray] = []
        self.refreshes = True

    def refer_to(self, args: Tuple[Any, ...], token: tuple, offset_provider: Any) -> bool:
        """Refers to the arguments that are not numbers (`token`'s integer parts) and to the
        offset provider's entries, weakly; `False` where one cannot be referred to so."""
        try:
            self.refs = [(i, weakref.ref(a)) for i, a in enumerate(args) if not isinstance(token[0][i], tuple)]
            self.providers = [weakref.ref(c) for c in offset_provider.values()]
        except TypeError:
            return False
        return True

    def holds(self, args: Tuple[Any, ...], offset_provider: Any) -> bool:
        """Whether `args` and the offset provider's entries are the objects this plan was made
        for (the call token holds their ids, which Python may reuse)."""
        for i, r in self.refs:
            if r() is not args[i]:
                return False
        if self.providers:
            for r, c in zip(self.providers, offset_provider.values()):
                if r() is not c:
                    return False
        return True

    def run(self, executable: "_Executable", args: Tuple[Any, ...], offset_provider: Any) -> None:
        values = self.values.copy()
        for slot, i, dtype in self.scalars:
            a = args[i]
            values[slot] = a if type(a) is float and dtype is _F64 else np.asarray(a, dtype=dtype)
        if self.refreshes:
            for slot, name, rows, row_major in self.tables:
                values[slot] = executable._table(np.asarray(offset_provider[name].ndarray), rows, row_major)[0]
            for storage, view in self.copies:
                np.copyto(storage, view)
            for v, b, copied in self.outs:
                if copied:
                    np.copyto(b, v)
        self.call(values)

    def ready(self) -> None:
        """Records, once the plan is complete, what every run of it uses: the outputs' storage
        in order, and whether a run refreshes anything before it."""
        self.buffers = [b for _, b, _ in self.outs]
        self.refreshes = bool(self.tables or self.copies or any(c for _, _, c in self.outs))

    def call(self, values: List[Any]) -> None:
        """Runs the program on the outputs' storage and `values`: a program checking computed
        table entries as it runs writes copies, kept only when it succeeds (an error leaves the
        user's outputs as they were); outputs not written in place get the values."""
        buffers = [np.array(b) for b in self.buffers] if self.checked else self.buffers
        written = _timed(self.runner, *buffers, *values)
        for (_, w), (v, b, copied) in zip(written, self.outs):
            # Not written in place (the interpreter, an output numpy copied), or in place into a
            # copy of a strided field: the field gets the values.
            if w is not b or copied:
                np.copyto(v, w[..., : v.shape[-1]] if w.shape != v.shape else w)


_F64 = np.dtype(np.float64)

# Numbers a call key holds by value (integers and booleans may size a domain or choose a
# branch); other numbers by type.
_BY_VALUE = frozenset({int, bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                       np.bool_})


def _call_token(args: Tuple[Any, ...], offset_provider: Any) -> Optional[tuple]:
    """A call's arguments as `_Executable._recent` keys them: fields by identity, integers and
    booleans by type and value, other numbers by type, and the offset provider's entries by
    name and identity; `None` (no plan) for a tuple argument."""
    parts = []
    for a in args:
        t = type(a)
        if t is float:
            parts.append(_FLOAT)
        elif t in _BY_VALUE:
            parts.append((t, a))
        elif t in _NUMBER_DTYPES:
            parts.append((t,))
        elif t is tuple:
            return None
        else:
            parts.append(id(a))
    if not offset_provider:
        return (tuple(parts),)
    return (tuple(parts), tuple(offset_provider), tuple(map(id, offset_provider.values())))



# The dtypes numbers of these types have (`np.asarray(x).dtype`), without making an array.
_NUMBER_DTYPES = {t: np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                           np.uint64, np.bool_, np.float32, np.float64)}
_NUMBER_DTYPES.update({int: np.dtype(np.int64), bool: np.dtype(np.bool_)})


# What a program parameter is read from (`_source_kinds`).
_TABLE, _TABLE_ROWS, _ARGUMENT = 0, 1, 2


def _source_kinds(sources: List[Tuple[Any, Any]]) -> List[Tuple[int, Any, Any]]:
    """The lowering's parameter sources `(path, scalar)` with their kind told once: a
    connectivity's table (its name), rows `lo:hi` of one (`(name, lo, hi)`), or an argument
    (a path of indices). A table's `scalar` says whether it is read row-major; an argument's
    is its dtype if it is a number (else `False`)."""
    def kind(path: Any) -> int:
        if not _is_table(path):
            return _ARGUMENT
        return _TABLE if isinstance(path, str) else _TABLE_ROWS

    return [(kind(path), path, scalar) for path, scalar in sources]


def _is_table(path: Any) -> bool:
    """Whether a parameter's source path names a connectivity's table (or rows of one)."""
    return isinstance(path, str) or isinstance(path[0], str)


def _timed(runner: Any, *args: Any) -> Any:
    """`runner(*args)`; at GT4Py's `PERFORMANCE` metrics level its time in seconds is also GT4Py's
    `compute` metric of the call (GT4Py measures `total` itself)."""
    if not _metrics.is_level_enabled(_metrics.PERFORMANCE):
        return runner(*args)
    start = time.perf_counter()
    written = runner(*args)
    _metrics.add_sample_to_current_source(_metrics.COMPUTE_METRIC, time.perf_counter() - start)
    return written


def _table_structure(c: Any) -> Any:
    """What the compiled program depends on of an offset provider: a dimension's name, or a
    connectivity's dimensions, shape and dtype (its entries are an argument of each run)."""
    if isinstance(c, _common.Dimension):
        return ("dimension", c.value)
    a = np.asarray(c.ndarray)
    return ("table", tuple(d.value for d in c.domain.dims), c.codomain.value, a.shape, a.dtype.str, _memory_order(a))


def _table_levels(a: Optional[np.ndarray], rows: Tuple[str, int, int], neighbors: Tuple[str, int, int]) -> List[Tuple[str, int, int]]:
    """A table parameter's levels in the memory order of its array `a` (`_Executable._table`),
    row-major without one: GT4Py allocates connectivities neighbor-outermost, a table built
    from a C-ordered numpy array is row-major. A format is storage: the shifts read either
    alike."""
    return [rows, neighbors] if a is None or _memory_order(a) == (0, 1) else [neighbors, rows]


def _memory_order(a: np.ndarray) -> Tuple[int, ...]:
    """The array's dimensions from the largest stride to the smallest (its memory order; GT4Py's
    default allocator puts horizontal dimensions innermost)."""
    return tuple(sorted(range(a.ndim), key=lambda i: -abs(a.strides[i])))


def _in_memory_order(a: np.ndarray) -> np.ndarray:
    order = _memory_order(a)
    return a if order == tuple(range(a.ndim)) else np.transpose(a, order)


def _storage(a: np.ndarray) -> Tuple[np.ndarray, Optional[int]]:
    """The array as the program reads or writes it: its levels in memory order, contiguous, and
    the innermost extent of that storage when it is wider than the field (the padding GT4Py's
    allocator puts at the end of each innermost row, 64-byte aligned).

    A padded array is read and written in place through a view over whole padded rows (the
    parameter's innermost interval widened to the row pitch, the program restricting it to the
    field's domain at once); the padding is never read for a value nor written. Only an array
    laid out otherwise (strided, or not writeable) is copied, with `None` as its extent."""
    v = _in_memory_order(a)
    if v.flags.c_contiguous:
        return v, None
    item = v.itemsize
    if v.ndim >= 2 and v.strides[-1] == item and v.strides[-2] % item == 0 and v.size:
        pitch = v.strides[-2] // item
        shape = (*v.shape[:-1], pitch)
        expected = item
        for n, st in zip(reversed(shape), reversed(v.strides)):
            if st != expected:
                break
            expected *= n
        else:
            root = v
            while isinstance(root.base, np.ndarray):
                root = root.base
            lo, hi = np.lib.array_utils.byte_bounds(root)
            start = v.__array_interface__["data"][0]
            if lo <= start and start + int(np.prod(shape)) * item <= hi:
                return np.lib.stride_tricks.as_strided(v, shape, v.strides, writeable=v.flags.writeable), pitch
    return np.ascontiguousarray(v), None


def _stored(levels: List[Tuple[str, int, int]], a: np.ndarray) -> List[Tuple[str, int, int]]:
    """The parameter's levels (in memory order) over the array's storage: the innermost one
    widened to the padded row (see `_storage`)."""
    extent = _storage(a)[1]
    if extent is None:
        return levels
    name, start, _ = levels[-1]
    return [*levels[:-1], (name, start, start + extent)]


def _flat(args: Sequence[Any]) -> List[Any]:
    """The arguments with tuples unpacked."""
    return [x for a in args for x in (_flat(a) if isinstance(a, tuple) else (a,))]


def _select(args: Sequence[Any], path: Tuple[int, ...]) -> Any:
    a = args[path[0]]
    for k in path[1:]:
        a = a[k]
    return a


def _row_major(dims: Sequence[Any]) -> Tuple[int, ...]:
    """The layout map of a row-major buffer (the last dimension innermost)."""
    return tuple(range(len(dims)))


def _levels(a: Any) -> Tuple[Tuple[str, int, int], ...]:
    """A field's dimensions with their ranges, in the domain's order."""
    return tuple((d.value, r.start, r.stop) for d, r in zip(a.domain.dims, a.domain.ranges))


@dataclasses.dataclass(frozen=True, eq=False)
class _TeamField(_nd_array_field.NumPyArrayField):
    """A field resident on a team under `mpirun` (`device=strata.world` in this module's
    constructors): its array is a `strata.array_api` team array, so each rank holds the block
    of the first dimension's rows it owns. Programs on `strata.gt4py.backend` run on the blocks
    as distributed jobs (halo exchanges from the shifts); `asnumpy()` and `np.asarray` gather
    the whole field on every rank (call them on every rank)."""

    def __repr__(self) -> str:
        return f"<strata team field {self.domain} of {self.dtype.scalar_type.__name__} on strata.world>"


def _team(device: Any) -> bool:
    """Whether `device` places a field on a team of a joined job (a team of one without a
    launcher is the host: the field is a numpy one)."""
    p = _placement.place_of(device)
    if p is None or p.team is None:
        return False
    if p.device != "cpu":
        raise ValueError(f"device {p.device!r}: Strata's fields live on the host (`cpu`)")
    return _placement._distributed()


def _team_field(domain: Any, array: Any) -> "_TeamField":
    from . import array_api as xp

    domain = _common.domain(domain)
    if len(domain) == 0 or tuple(len(r) for r in domain.ranges) != tuple(array.shape):
        raise ValueError(f"data of shape {tuple(array.shape)} for a field over {domain} (shape "
                         f"{tuple(len(r) for r in domain.ranges)})")
    if domain.dims[0].kind == _common.DimensionKind.LOCAL:
        raise ValueError(f"a team field is distributed along its first dimension, but {domain.dims[0].value} is local")
    return _TeamField(domain, xp.asarray(array, device=_placement.world))


def as_field(domain: Any, data: Any, dtype: Any = None, *, device: Any = None) -> Any:
    """`gtx.as_field(domain, data, dtype)` for this backend: a row-major field read and written
    in place; with `device=strata.world` under `mpirun`, a team field each rank holding only
    its block of rows of the first dimension (every rank passes the same `data`, or a
    `strata.array_api` team array). Without a launcher the team is this process: a numpy field."""
    if not _team(device):
        return _constructors.as_field(domain, np.asarray(data), dtype, allocator=allocator)
    from . import array_api as xp

    a = data if isinstance(data, xp.Array) else np.asarray(data, dtype=dtype)
    if dtype is not None and np.dtype(a.dtype) != np.dtype(dtype):
        a = xp.astype(xp.asarray(a, device=_placement.world), np.dtype(dtype))
    return _team_field(domain, a)


def full(domain: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> Any:
    """`gtx.full` for this backend (`device=strata.world`: see `as_field`); a team field is
    made on each rank's block, never whole."""
    if not _team(device):
        return _constructors.full(domain, fill_value, dtype, allocator=allocator)
    from . import array_api as xp

    domain = _common.domain(domain)
    d = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    shape = tuple(len(r) for r in domain.ranges)
    return _team_field(domain, xp.full(shape, fill_value, dtype=d, device=_placement.world))


def zeros(domain: Any, dtype: Any = np.float64, *, device: Any = None) -> Any:
    """`gtx.zeros` for this backend (`device=strata.world`: see `as_field`)."""
    return full(domain, 0, np.dtype(dtype), device=device)


def ones(domain: Any, dtype: Any = np.float64, *, device: Any = None) -> Any:
    """`gtx.ones` for this backend (`device=strata.world`: see `as_field`)."""
    return full(domain, 1, np.dtype(dtype), device=device)


def empty(domain: Any, dtype: Any = np.float64, *, device: Any = None) -> Any:
    """`gtx.empty` for this backend: zeros (`device=strata.world`: see `as_field`)."""
    return full(domain, 0, np.dtype(dtype), device=device)


#: Fields allocated for this backend (`gtx.zeros(domain, allocator=strata.gt4py.backend)`) are
#: row-major and unpadded: read and written in place. Others (GT4Py's default layout) are read
#: in their memory order, in place where they are not padded.
allocator = _allocators.BaseFieldBufferAllocator(
    device_type=_allocators.core_defs.DeviceType.CPU,
    array_utils=_allocators.core_allocators.numpy_array_utils,
    layout_mapper=_row_major,
    byte_alignment=1,
)

backend = _next_backend.Backend(
    name="strata",
    executor=_Executor(),
    allocator=allocator,
    transforms=_next_backend.DEFAULT_TRANSFORMS,
)


# ---- GTIR → Strata IR ----


@dataclasses.dataclass(frozen=True)
class _Iterator:
    """A stencil's iterator: a field and the shifts applied to it so far, each a cartesian
    `(dim, offset)` or a neighbor `(table, k)` (a neighbor table's leaf, the neighbor taken)."""

    field: Field
    shifts: Tuple[Tuple[Any, int], ...] = ()

    def deref(self) -> Field:
        f = self.field
        moved = [(t, k) for t, k in self.shifts if isinstance(k, Field)]
        if moved:
            # Shifts by fields (`as_offset`) read their offsets at the stencil's point, while a
            # table composed after another shift would be read at the shifted point. Cartesian
            # shifts add up, so the other dimensions' shifts go first and every offset along
            # the one moved dimension makes a single table, read at the point itself.
            dim = moved[0][0]
            for target, k in self.shifts:
                if target != dim:
                    f = _build(_strata.field_shift, f, target, k)
            total = moved[0][1]
            for _, k in moved[1:]:
                total = total + k
            const = sum(k for t, k in self.shifts if t == dim and not isinstance(k, Field))
            return _build(_strata.field_neighbor, f, _offset_table(total + const if const else total, dim, f), 0)
        # Through tables the order matters: `shift(E2V, 0)(shift(C2E, 0)(it))` moves the
        # iterator from a cell to its edge, then to that edge's vertex, so as fields the
        # vertex field goes through E2V first (a field over edges), then through C2E. The
        # shifts apply from the outermost; cartesian ones commute with them.
        for j in reversed(range(len(self.shifts))):
            target, k = self.shifts[j]
            if isinstance(target, _TableRef):
                # Read at the stencil's point when no earlier shift moved along its rows.
                earlier = self.shifts[:j]
                at_point = all(not isinstance(t, _TableRef) and t != target.dst for t, _ in earlier)
                f = _build(_strata.field_neighbor, f, target.leaf(at_point), k)
            else:
                f = _build(_strata.field_shift, f, target, k)
        return f


@dataclasses.dataclass(frozen=True)
class _TableRef:
    """A shift's connectivity `name` (destination dimension `dst`), its table made when the
    shift is read (`_Lowering._table`)."""

    lowering: Any
    node: Any
    name: str
    dst: str

    def leaf(self, at_point: bool) -> Field:
        return self.lowering._table(self.node, self.name, at_point)


def _offset_table(offset: Field, dim: str, source: Field) -> Field:
    """GT4Py's `as_offset(Doff, offset)` as a neighbor table into `source`: at each point of
    `offset`'s domain, the `dim` coordinate `pos(dim) + offset` (see `_coordinate_table`: an
    entry outside `source` is a run-time error naming the point, not a wrong value)."""
    start, stop = next((r.start, r.stop) for r in source.domain if r.name == dim)
    if start <= -1 < stop:
        raise GTIRError(f"`as_offset` along `{dim}` into a field defined at {dim} = -1 ({dim}[{start}:{stop}]): "
                        "the Strata backend's neighbor tables take -1 for a skipped neighbor")
    return _coordinate_table(_build(_strata.field_pos, offset, dim).astype(offset.dtype) + offset, dim)


def _coordinate_table(coords: Field, dim: str) -> Field:
    """Integer field `coords` as a neighbor table along `dim`: one neighbor (`NB_<dim>[0:1]`),
    read at the same point along the dimensions it shares with the field read, so an entry
    outside that field's `dim` interval is a run-time error naming the point. Coordinate -1
    would read as a table's skip value, so it becomes the dtype's minimum (as far out of
    range)."""
    coords = _build(_strata.field_builtin, "select",
                    [coords == -1, _constant(None, np.iinfo(coords.dtype).min, coords.dtype), coords])
    return _build(_strata.field_add_dim, coords, f"NB_{dim}", 0, 1)


@dataclasses.dataclass(frozen=True)
class _Neighbors:
    """`neighbors(offset, it)`: the field with every neighbor through a table, as a new
    neighbor dimension (a GT4Py list), to be reduced."""

    field: Field


def _build(make: Any, *args: Any) -> Any:
    """The field of `make(*args)` (a builder call over field values)."""
    vals = [
        a._v if isinstance(a, Field) else [x._v if isinstance(x, Field) else x for x in a] if isinstance(a, list) else a
        for a in args
    ]
    return Field(make(*vals))


class _Lowering:
    def __init__(self, program: _itir.Program, args: Sequence[Any], offset_provider: Any, bounds: Optional[Dict[int, Tuple[Any, Any]]] = None):
        self.program, self.args, self.offset_provider = program, args, offset_provider
        # Domain bounds compiled to closures, kept by the executable across lowerings.
        self.bounds: Dict[int, Tuple[Any, Any]] = {} if bounds is None else bounds
        # Whether some field lives on a team (`device=strata.world`): a distributed program.
        self.team = any(type(a) is _TeamField for a in _flat(args))
        self.env: Dict[str, Any] = {}
        self.assignments: List[Tuple[Field, Field, Any]] = []
        self.targets: List[Tuple[int, ...]] = []
        self.tables: Dict[Tuple[str, int, int], Field] = {}
        # Whether the program reads through a table it computes (`as_offset`): its entries are
        # checked while it runs, after outputs may have been written.
        self.checked_while_running = False
        # The domains of the `as_fieldop`s being lowered, innermost last (`None`: none given).
        self.fieldop_domains: List[Optional[List[Tuple[str, int, int]]]] = []

    def compile(self):
        for k, (p, a) in enumerate(zip(self.program.params, self.args)):
            try:
                self.env[str(p.id)] = self._param(a, (k,), getattr(p, "type", None))
            except GTIRError as e:
                raise GTIRError(f"{_where(p)}parameter `{p.id}`: {e}") from None
        for stmt in self.program.body:
            self._stmt(stmt)
        if not self.assignments:
            raise GTIRError("the program writes no field")
        try:
            program, payloads = _strata.field_assignments(
                [(v._v, o._v, [tuple(d) for d in dom]) for v, o, dom in self.assignments]
            )
        except VerifyError as e:
            raise GTIRError(f"the program does not type: {e}") from None
        # A table's path is its name (or `(name, lo, hi)`); in place of a dtype, whether it is
        # read row-major.
        sources = [(p.path, p.row_major if _is_table(p.path) else p.scalar) for p in payloads]
        return program, program.bind("fields", "auto"), self.targets, sources, self.checked_while_running

    # -- parameters: every field a leaf standing for its argument; scalars by kind --

    def _param(self, a: Any, path: Tuple[int, ...], declared: Any = None) -> Any:
        """The value standing for argument `a` (at `path`), of the type GT4Py declared for it
        (`declared`, when known: a Python `3` passed for an `int32` parameter is an `int32`)."""
        if isinstance(a, tuple):
            members = declared.types if isinstance(declared, _ts.TupleType) else [None] * len(a)
            return tuple(self._param(x, (*path, k), t) for k, (x, t) in enumerate(zip(a, members)))
        if type(a) is _TeamField:
            # Distributed in blocks of its first dimension over the job's ranks: the program's
            # shifts along it become halo exchanges.
            dtype = np.dtype(a.dtype.scalar_type)
            leaf = Field(_strata.field_param(_DTYPES[dtype], list(_levels(a)), _GTArg(path), True))
            leaf._gt_path, leaf._gt_leaf = path, leaf
            return leaf
        if isinstance(a, _common.Field):
            dtype = np.dtype(a.dtype.scalar_type)
            if dtype not in _DTYPES:
                raise GTIRError(f"fields of dtype {dtype} are not supported (only {', '.join(map(str, _DTYPES))})")
            # A local dimension (a field given per neighbor, as the nabla's signs over V2E) is the
            # neighbor dimension a shift through a table adds: `NB_0`.
            local = [d for d in a.domain.dims if d.kind == _common.DimensionKind.LOCAL]
            if len(local) > 1:
                raise GTIRError(f"a field with {len(local)} local dimensions ({', '.join(d.value for d in local)})")
            names = ["NB_0" if d.kind == _common.DimensionKind.LOCAL else d.value for d in a.domain.dims]
            levels = [(n, r.start, r.stop) for n, r in zip(names, a.domain.ranges)]
            # Levels in the array's memory order: a format is storage, never meaning (names
            # decide), so the program reads GT4Py's layout in place.
            levels = [levels[i] for i in _memory_order(a.ndarray)]
            leaf = Field(_strata.field_param(_DTYPES[dtype], _stored(levels, a.ndarray), _GTArg(path)))
            field = _build(_strata.field_subset, leaf, levels) if _storage(a.ndarray)[1] else leaf
            field._gt_path, field._gt_leaf = path, leaf
            return field
        d = _KINDS.get(declared.kind) if isinstance(declared, _ts.ScalarType) else None
        if d is None:
            d = np.asarray(a).dtype
        if d.kind in "iub":
            # Integers and booleans are structure (domain bounds, `if` conditions), typed as
            # GT4Py typed them.
            return d.type(a)
        if d not in _DTYPES:
            raise GTIRError(f"scalar arguments of dtype {d} are not supported")
        return Field(_strata.field_param(_DTYPES[d], [], _GTArg(path, d)))

    # -- statements --

    def _stmt(self, stmt: Any) -> None:
        try:
            self._lower_stmt(stmt)
        except GTIRError as e:
            # Located at the statement (the field operator's call in the program) when the
            # construct itself carries no location.
            _relocated(e, stmt)

    def _lower_stmt(self, stmt: Any) -> None:
        if _is(stmt, _itir.SetAt):
            value = self._expr(stmt.expr)
            domain = self._domain(stmt.domain)
            self._assign(stmt, stmt.target, value, domain)
        elif _is(stmt, _itir.IfStmt):
            cond = self._expr(stmt.cond)
            if not isinstance(cond, (bool, np.bool_)):
                raise _unsupported(stmt, "`if` on a value only known when the program runs")
            for s in stmt.true_branch if cond else stmt.false_branch:
                self._stmt(s)
        else:
            raise _unsupported(stmt, f"the statement `{type(stmt).__name__}`")

    def _assign(self, stmt: Any, target: Any, value: Any, domain: Any) -> None:
        if _is(target, _itir.FunCall) and _name(target.fun) == "make_tuple":
            if not isinstance(value, tuple):
                value = tuple(_tuple_get(k, value) for k in range(len(target.args)))
            domains = domain if isinstance(domain, tuple) else (domain,) * len(target.args)
            for t, v, d in zip(target.args, value, domains):
                self._assign(stmt, t, v, d)
            return
        name = _name(target)
        if name is None:
            raise _unsupported(stmt, "this assignment target")
        if name in {str(t.id) for t in self.program.declarations}:
            # A temporary: its value on the domain written, read by later statements.
            self.env[name] = _build(_strata.field_subset, value, [tuple(d) for d in domain])
            return
        self._write(stmt, name, self.env.get(name), value, domain)

    def _write(self, stmt: Any, name: str, out: Any, value: Any, domain: Any) -> None:
        """`value` written into the argument `out` (a field, or a tuple of them: a tuple
        parameter written whole) over `domain`."""
        if isinstance(out, tuple):
            if not isinstance(value, tuple):
                value = tuple(_tuple_get(k, value) for k in range(len(out)))
            domains = domain if isinstance(domain, tuple) else (domain,) * len(out)
            for k, (o, v, d) in enumerate(zip(out, value, domains)):
                self._write(stmt, f"{name}[{k}]", o, v, d)
            return
        if not isinstance(out, Field) or not hasattr(out, "_gt_path"):
            raise _unsupported(stmt, f"writing `{name}`")
        if not isinstance(value, Field):
            raise _unsupported(stmt, "writing a scalar into a field")
        # Writes into one field are one output of the program (each sees the earlier ones):
        # its buffer is passed once.
        if not any(o is out._gt_leaf for _, o, _ in self.assignments):
            self.targets.append(out._gt_path)
        self.assignments.append((value, out._gt_leaf, domain))

    # -- domains: concrete at lowering time --

    def _domain(self, e: Any) -> Any:
        """The intervals `(dim, start, stop)` of a domain (a tuple of those for a tuple of
        domains)."""
        if _is(e, _itir.FunCall) and _name(e.fun) == "make_tuple":
            return tuple(self._domain(d) for d in e.args)
        if _is(e, _itir.SymRef) and isinstance(self.env.get(str(e.id)), list):
            return self.env[str(e.id)]  # a domain bound by a `let` (passed to a function)
        if _is(e, _itir.FunCall) and _name(e.fun) in ("cartesian_domain", "unstructured_domain"):
            out = []
            for r in e.args:
                if not (_is(r, _itir.FunCall) and _name(r.fun) == "named_range"):
                    raise _unsupported(e, "this domain")
                axis, start, stop = r.args
                out.append((axis.value, self._bound(start), self._bound(stop)))
            return out
        raise _unsupported(e, "this domain")

    def _bound(self, e: Any) -> Optional[int]:
        """A domain bound: an integer, or `None` for ±∞ (a `concat_where` condition's open side)."""
        if _is(e, _itir.InfinityLiteral):
            return None
        return self._int(e)

    def _int(self, e: Any) -> int:
        hit = self.bounds.get(id(e))
        if hit is None or hit[0] is not e:
            hit = self.bounds[id(e)] = (e, _int_closure(e))
        v = hit[1](self)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise _unsupported(e, "a domain bound only known when the program runs")
        return int(v)

    # -- expressions (field level) --

    def _expr(self, e: Any) -> Any:
        if _is(e, _itir.SymRef):
            name = str(e.id)
            if name in self.env:
                return self.env[name]
            raise _unsupported(e, f"the symbol `{name}`")
        if _is(e, _itir.Literal):
            return _literal(e)
        if _is(e, _itir.AxisLiteral):
            return e
        if _is(e, _itir.FunCall):
            fun = e.fun
            if _is(fun, _itir.FunCall) and _name(fun.fun) == "as_fieldop":
                return self._as_fieldop(e, fun)
            if _is(fun, _itir.Lambda):
                # A let: the body with the parameters bound to the arguments' values.
                values = [self._expr(a) for a in e.args]
                saved = dict(self.env)
                self.env.update(zip((str(p.id) for p in fun.params), values))
                try:
                    return self._expr(fun.expr)
                finally:
                    self.env = saved
            name = _name(fun)
            if name == "get_domain_range":
                field, axis = self._expr(e.args[0]), e.args[1]
                for l in field.levels:
                    if l.name == axis.value:
                        return (l.start, l.stop)
                raise _unsupported(e, f"the domain of a field without `{axis.value}`")
            if name == "tuple_get":
                return _tuple_get(self._expr(e.args[0]), self._expr(e.args[1]))
            if name == "make_tuple":
                return tuple(self._expr(a) for a in e.args)
            if name == "concat_where":
                return self._concat_where(e)
            if name in ("cartesian_domain", "unstructured_domain"):
                return self._domain(e)  # a domain as a value: its intervals
            if name == "index":
                return _Index(str(e.args[0].value))
            if name not in _BUILTINS and name not in ("if_", "cast_") and name not in _SCALAR_OPS:
                raise _unsupported(e, f"`{name}`")
            args = [self._expr(a) for a in (e.args[:1] if name == "cast_" else e.args)]
            if all(isinstance(a, (int, float, bool, np.generic)) for a in args) and name in _SCALAR_OPS:
                return _SCALAR_OPS[name](*args)
            if name in _BUILTINS or name in ("if_", "cast_"):
                return self._value_op(e, name, args)
            raise _unsupported(e, f"`{name}` outside a stencil")
        raise _unsupported(e, f"`{type(e).__name__}`")

    def _concat_where(self, e: Any) -> Any:
        """`concat_where(D < c, t, f)` (GT4Py's canonical form: one dimension, one side open):
        `t` below `c` and `f` from `c` on, over the domain GT4Py's inference gave the
        expression — a `concat` of the two pieces along `D` (one piece when the other is empty;
        a scalar branch is constant over its piece)."""
        cond, on_true, on_false = e.args
        split = self._domain(cond)
        if len(split) != 1:
            raise _unsupported(e, "`concat_where` on a domain over several dimensions")
        dim, lo, hi = split[0]
        if (lo is None) == (hi is None):
            raise _unsupported(e, "`concat_where` on a domain bounded on both sides")
        domain = self._inferred(e)
        whole = dict((d, (a, b)) for d, a, b in domain)
        if dim not in whole:
            raise _unsupported(e, f"`concat_where` on `{dim}`, not a dimension of its domain")
        a, b = whole[dim]
        cut = min(max(hi if lo is None else lo, a), b)
        below, above = (on_true, on_false) if lo is None else (on_false, on_true)
        values = [self._expr(below), self._expr(above)]
        # Every piece's levels in one order (a field branch's: its memory order).
        order = next((v.dims for v in values if isinstance(v, Field) and set(v.dims) == set(whole)), None)
        if order is not None:
            domain = [(d, *whole[d]) for d in order]
        pieces = []
        for value, (start, stop) in zip(values, ((a, cut), (cut, b))):
            if start < stop:
                piece = [(d, start, stop) if d == dim else (d, x, y) for d, x, y in domain]
                pieces.append(self._over(e, value, piece))
        if not pieces:
            raise _unsupported(e, "`concat_where` over an empty domain")
        if len(pieces) == 1:
            return pieces[0]
        # A branch broadcast to the domain (`concat_where(K == 0, profile, field)`) gets its
        # added dimensions outermost: stored in the other piece's order to be joined.
        order = next((p.dims for p, v in zip(pieces, values) if isinstance(v, Field) and set(v.dims) == set(whole)), pieces[0].dims)
        pieces = [p if p.dims == order else _build(_strata.field_transpose, p, list(order)) for p in pieces]
        # Along the other dimensions, where every piece is defined (GT4Py's inferred domain is
        # a hull: a branch defined on less, as an interior field inside its boundary, limits
        # the result there; a use beyond it fails to type where it is made).
        spans = [{r.name: (r.start, r.stop) for r in p.domain} for p in pieces]
        common = {d: (max(s[d][0] for s in spans), min(s[d][1] for s in spans)) for d in order if d != dim}
        if any(s[d] != common[d] for s in spans for d in common) and all(a < b for a, b in common.values()):
            pieces = [
                _build(_strata.field_subset, p, [(d, *common[d]) if d in common else (d, *s[d]) for d in order])
                for p, s in zip(pieces, spans)
            ]
        try:
            return _build(_strata.field_concat, pieces, dim)
        except VerifyError as err:
            raise GTIRError(f"{_where(e)}`concat_where`: {err}") from None

    def _inferred(self, e: Any) -> List[Tuple[str, int, int]]:
        """The domain GT4Py's domain inference gave the expression `e`."""
        d = getattr(e.annex, "domain", None)
        if not isinstance(d, _domain_utils.SymbolicDomain):
            raise _unsupported(e, "an expression without an inferred domain")
        return self._domain(_domain_utils.SymbolicDomain.as_expr(d))

    def _along(self, e: Any, value: Field, axis: str, domain: List[Tuple[str, int, int]]) -> Field:
        """`value` restricted to `domain`'s range of the column `axis` only: a scan starts from its
        initial state at the domain's first level (forward) or last (backward), whatever the
        field holds beyond it; its other dimensions stay as they are (the step may shift them)."""
        lo, hi = next((a, b) for d, a, b in domain if d == axis)
        have = {l.name: (l.start, l.stop) for l in value.levels}
        if have[axis] == (lo, hi):
            return value
        levels = [(n, *((_clip(lo, hi, *have[n])) if n == axis else have[n])) for n in value.dims]
        try:
            return _build(_strata.field_subset, value, levels)
        except VerifyError as err:
            raise GTIRError(f"{_where(e)}{err}") from None

    def _over(self, e: Any, value: Any, domain: List[Tuple[str, int, int]]) -> Field:
        """`value` (a field, a scalar, an index) as a field over exactly `domain`: restricted to
        it, with the dimensions it lacks added (constant along them: GT4Py's `broadcast`)."""
        if isinstance(value, tuple):
            raise _unsupported(e, "a tuple where a field is expected")
        if isinstance(value, _Index):
            value = value.over(e, domain)
        if not isinstance(value, Field):
            value = _constant(e, value, None)
        have = set(value.dims)
        # A neighbor dimension (a GT4Py list, reduced later) is not in the domain.
        extra = [n for n in have if n not in {d for d, _, _ in domain} and not n.startswith("NB_")]
        if extra:
            raise _unsupported(e, f"a field over {', '.join(extra)} written on a domain without them")
        # GT4Py's inferred domains are hulls of every use, and may reach past what the operands
        # define (a shift's value at the boundary a `concat_where` never takes): the value is
        # kept where it is defined; a use beyond that fails to type where it is made.
        have_at = {l.name: (l.start, l.stop) for l in value.levels}
        clipped = [(d, *_clip(a, b, *have_at[d])) if d in have_at else (d, a, b) for d, a, b in domain]
        try:
            for d, a, b in reversed(clipped):
                if d not in have:
                    value = _build(_strata.field_add_dim, value, d, a, b)
            return _build(_strata.field_subset, value, clipped)
        except VerifyError as err:
            raise GTIRError(f"{_where(e)}{err}") from None

    def _as_fieldop(self, e: Any, fun: Any) -> Field:
        try:
            return self._lower_as_fieldop(e, fun)
        except GTIRError as err:
            # Located at the applied stencil's arguments (the user's names; its domain names
            # the program's outputs) when the construct inside the stencil carries no location.
            return _relocated(err, *e.args, fun)

    def _lower_as_fieldop(self, e: Any, fun: Any) -> Field:
        stencil = fun.args[0]
        domain = self._domain(fun.args[1]) if len(fun.args) > 1 else None
        args = [self._expr(a) for a in e.args]
        if domain is not None:
            # `index(D)` read by a stencil: the indices over the domain, widened by the
            # stencil's shifts along `D`.
            args = [a.over(e, self._widened(domain, stencil, a.dim)) if isinstance(a, _Index) else a for a in args]
        its = [_Iterator(a) if isinstance(a, Field) else a for a in args]
        if _is(stencil, _itir.Lambda):
            self.fieldop_domains.append(domain)
            try:
                value = self._stencil(stencil.expr, dict(zip((str(p.id) for p in stencil.params), its)))
            finally:
                self.fieldop_domains.pop()
        elif _name(stencil) == "deref":
            value = its[0].deref() if isinstance(its[0], _Iterator) else its[0]  # a scalar broadcast
        elif _is(stencil, _itir.FunCall) and _name(stencil.fun) == "scan":
            value = self._scan(e, stencil, args, domain)
        elif _is(stencil, _itir.FunCall) and _name(stencil.fun):
            raise _unsupported(stencil, f"the stencil `{_name(stencil.fun)}`")
        else:
            raise _unsupported(stencil, "this stencil")
        if isinstance(value, tuple) and any(isinstance(v, tuple) for v in value):
            # Nested tuples stay Python tuples of fields (written member by member).
            if domain is None or isinstance(domain, tuple):
                raise _unsupported(e, "a nested tuple without one domain")
            return _tree_build(_tree_shape(value), [self._over(e, v, domain) for v in _tree_leaves(value)])
        if isinstance(value, tuple):
            from . import fields as _fields

            value = _fields.make_tuple(*value)
        if isinstance(value, _Neighbors):
            value = value.field
        if domain is not None:
            return self._over(e, value, domain)
        if not isinstance(value, Field):
            raise _unsupported(e, "a stencil returning a constant without a domain")
        return value

    def _widened(self, domain: List[Tuple[str, int, int]], stencil: Any, dim: str) -> List[Tuple[str, int, int]]:
        reach = sum(
            abs(int(n.args[k + 1].value))
            for n in stencil.pre_walk_values().if_isinstance(_itir.FunCall)
            if _name(n.fun) == "shift"
            for k in range(0, len(n.args) - 1, 2)
            if _is(n.args[k], _itir.CartesianOffset) and n.args[k].domain.value == dim
            and _is(n.args[k + 1], _itir.OffsetLiteral) and isinstance(n.args[k + 1].value, int)
        )
        return [(d, a - reach, b + reach) if d == dim else (d, a, b) for d, a, b in domain]

    # -- expressions inside a stencil: iterators and values --

    def _stencil(self, e: Any, scope: Dict[str, Any]) -> Any:
        if _is(e, _itir.SymRef):
            name = str(e.id)
            if name in scope:
                return scope[name]
            if name in self.env:
                return self.env[name]
            raise _unsupported(e, f"the symbol `{name}` in a stencil")
        if _is(e, _itir.Literal):
            return _literal(e)
        if _is(e, _OFFSET_NODES):
            return e
        if _is(e, _itir.Lambda):
            return (e, scope)
        if not _is(e, _itir.FunCall):
            raise _unsupported(e, f"`{type(e).__name__}` in a stencil")
        fun = e.fun
        if _is(fun, _itir.Lambda):
            inner = dict(scope)
            inner.update(zip((str(p.id) for p in fun.params), (self._stencil(a, scope) for a in e.args)))
            return self._stencil(fun.expr, inner)
        if _is(fun, _itir.FunCall) and _name(fun.fun) == "shift":
            it = self._stencil(e.args[0], scope)
            if not isinstance(it, _Iterator):
                raise _unsupported(e, "a shift of a value that is not an iterator")
            shifts = it.shifts + self._shifts(fun, scope, e)
            moved = {t for t, k in shifts if isinstance(k, Field)}
            if len(moved) > 1 or (moved and not all(isinstance(t, str) for t, _ in shifts)):
                # See `_Iterator.deref`: one table reads every offset at the stencil's point.
                raise _unsupported(e, "shifts by fields along several dimensions, or with neighbor tables, of one iterator")
            return _Iterator(it.field, shifts)
        if _is(fun, _itir.FunCall) and _name(fun.fun) == "reduce":
            return self._reduce(e, fun, scope)
        if _is(fun, _itir.FunCall) and _name(fun.fun) == "scan":
            # A scan applied inside a stencil: over the reading `as_fieldop`'s domain, of the
            # values its iterators read (shifted ones included).
            domain = self.fieldop_domains[-1] if self.fieldop_domains else None
            values = [self._stencil(a, scope) for a in e.args]
            return self._scan(e, fun, [v.deref() if isinstance(v, _Iterator) else v for v in values], domain)
        if _is(fun, _itir.FunCall) and _name(fun.fun) == "lift":
            return self._lift(e, fun.args[0], [self._stencil(a, scope) for a in e.args], scope)
        if _is(fun, _itir.FunCall) and _name(fun.fun) == "map_list":
            # An operation on lists of neighbors, neighbor by neighbor: the builtin on fields
            # with the neighbor dimension (broadcast by name).
            op = fun.args[0]
            lists = [self._stencil(a, scope) for a in e.args]
            lists = [x.field if isinstance(x, _Neighbors) else x for x in lists]
            if _is(op, _itir.Lambda) and len(op.params) == len(lists):
                # A lambda neighbor by neighbor: its body on the lists as fields.
                return _Neighbors(self._stencil(op.expr, {**scope, **dict(zip((str(p.id) for p in op.params), lists))}))
            if _name(op) not in _BUILTINS and _name(op) != "if_":
                raise _unsupported(e, f"`map_list` of `{_name(op) or op}`")
            return _Neighbors(self._value_op(e, _name(op), lists))
        name = _name(fun)
        if name == "deref":
            it = self._stencil(e.args[0], scope)
            if isinstance(it, _Iterator):
                return it.deref()
            return it  # a scalar argument of the stencil
        if name == "neighbors":
            tag, it = e.args[0], self._stencil(e.args[1], scope)
            if not (_is(tag, _itir.OffsetLiteral) and isinstance(it, _Iterator)):
                raise _unsupported(e, "`neighbors` of this value")
            table = self._table(e, str(tag.value), at_point=True)
            return _Neighbors(_build(_strata.field_neighbor, it.deref(), table, None))
        if name == "list_get":
            # Neighbor `k` of a list (the last neighbor dimension of its field).
            k = self._stencil(e.args[0], scope)
            k = k.value if _is(k, _itir.OffsetLiteral) else k
            lst = self._stencil(e.args[1], scope)
            lst = lst.field if isinstance(lst, _Neighbors) else lst
            if not isinstance(k, (int, np.integer)) or not isinstance(lst, Field):
                raise _unsupported(e, "`list_get` of a position only known when the program runs")
            try:
                return _build(_strata.field_neighbor_get, lst, int(k))
            except VerifyError as err:
                raise GTIRError(f"{_where(e)}`list_get`: {err}") from None
        if name == "make_const_list":
            # The same value for every neighbor: the value itself, broadcast by name against
            # the lists it is combined with (`map_list`).
            v = self._stencil(e.args[0], scope)
            return _Neighbors(v.field if isinstance(v, _Neighbors) else v)
        if name == "can_deref":
            it = self._stencil(e.args[0], scope)
            if not isinstance(it, _Iterator):
                raise _unsupported(e, "`can_deref` of a value that is not an iterator")
            if not any(isinstance(target, _TableRef) for target, _ in it.shifts):
                return np.bool_(True)  # cartesian shifts always reach a value in the domain
            return _build(_strata.field_can_deref, it.deref())
        if name == "tuple_get":
            return _tuple_get(self._stencil(e.args[0], scope), self._stencil(e.args[1], scope))
        if name == "make_tuple":
            return tuple(self._stencil(a, scope) for a in e.args)
        if name == "cast_":
            return self._value_op(e, name, [self._stencil(e.args[0], scope)])
        if name in _BUILTINS or name == "if_":
            return self._value_op(e, name, [self._stencil(a, scope) for a in e.args])
        raise _unsupported(e, f"`{name}` in a stencil")

    def _lift(self, e: Any, stencil: Any, its: List[Any], scope: Dict[str, Any]) -> Any:
        """`(↑stencil)(its…)`: an iterator over the stencil's values. Reading it after a shift
        is the stencil at the shifted point (`deref(shift(s)(↑f(it))) = f(shift(s)(it))`), so
        the lifted iterator is the stencil's value as a field, over the points where it is
        defined, shifted like any other. Its tables are read whole: a later shift reads the
        value at points beyond the reading `as_fieldop`'s domain."""
        self.fieldop_domains.append(None)
        try:
            if _is(stencil, _itir.Lambda):
                value = self._stencil(stencil.expr, {**scope, **dict(zip((str(p.id) for p in stencil.params), its))})
            elif _name(stencil) == "deref" and len(its) == 1:
                value = its[0].deref() if isinstance(its[0], _Iterator) else its[0]
            else:
                raise _unsupported(e, "this lifted stencil")
        finally:
            self.fieldop_domains.pop()
        if isinstance(value, tuple) and any(isinstance(v, tuple) for v in value):
            # One field of flat tuples would renumber the members `tuple_get` reads.
            raise _unsupported(e, "a lifted stencil returning nested tuples")
        if isinstance(value, tuple) and all(isinstance(v, Field) for v in value):
            from . import fields as _fields

            value = _fields.make_tuple(*value)
        if isinstance(value, Field):
            return _Iterator(value)
        if isinstance(value, _Neighbors):
            return _Iterator(value.field)
        return value  # a scalar: the same at every point, wherever it is read

    def _table(self, node: Any, name: str, at_point: bool = False) -> Field:
        """The neighbor table of the connectivity `name`: a leaf over its (destination,
        neighbor) dimensions mapping into its codomain (`NB_<codomain>`), skips `-1`. A table
        read `at_point` (at the stencil's own point, not after another shift) covers only the
        rows of the `as_fieldop`'s domain: every entry of a table is checked, and rows outside
        the domain (an output slice's complement) may point outside the fields given."""
        c, a = self._connectivity(node, name)
        dst = c.domain.dims[0].value
        lo, hi = 0, a.shape[0]
        domain = self.fieldop_domains[-1] if at_point and self.fieldop_domains else None
        rows = next(((x, y) for d, x, y in domain if d == dst), None) if isinstance(domain, list) else None
        if rows is not None:
            lo, hi = _clip(*rows, lo, hi)
        key = (name, lo, hi)
        if key in self.tables:
            return self.tables[key]
        row_major = self.team  # a team program's ranks take rows of the first level
        levels = _table_levels(a if not row_major else None, (dst, lo, hi), (f"NB_{c.codomain.value}", 0, a.shape[1]))
        path = name if (lo, hi) == (0, a.shape[0]) else (name, lo, hi)
        # A program over team fields reads its tables on the team too: each rank the rows of
        # its own elements (every rank holds the connectivity; the run takes its rows).
        leaf = Field(_strata.field_param(_DTYPES[a.dtype], levels, _GTArg(path, row_major=row_major), self.team))
        self.tables[key] = leaf
        return leaf

    def _connectivity(self, node: Any, name: str) -> Tuple[Any, np.ndarray]:
        """The connectivity `name` of `offset_provider` and its table, if Strata can read it
        (int32/int64, two dimensions, skip value -1 or none); else an error located at
        `node`."""
        c = self.offset_provider.get(name)
        if c is None or isinstance(c, _common.Dimension) or not hasattr(c, "ndarray"):
            raise _unsupported(node, f"the offset `{name}` (no connectivity table in `offset_provider`)")
        a = np.asarray(c.ndarray)
        skip = getattr(c, "skip_value", None)
        if skip not in (None, -1):
            raise _unsupported(node, f"the connectivity `{name}` with skip value {skip} (Strata's is -1)")
        if a.dtype not in (np.dtype(np.int32), np.dtype(np.int64)) or a.ndim != 2:
            raise _unsupported(node, f"the connectivity `{name}` of dtype {a.dtype} and shape {a.shape}")
        return c, a

    def _reduce(self, e: Any, fun: Any, scope: Dict[str, Any]) -> Field:
        """`reduce(op, init)(lists…)`: the fold over the neighbor dimension, skipped neighbors
        taking no part. `op` is a builtin of one list, or a lambda `λ(acc, x…) → acc ⊕ g(x…)`
        with `⊕` an associative builtin and `g` free of `acc` (GT4Py's sums of products, or of
        one of several lists): `g` neighbor by neighbor, then the fold by `⊕`."""
        op, init = fun.args
        lists = [self._stencil(a, scope) for a in e.args]
        # A list made in this stencil, or one an earlier `as_fieldop` made (read by `deref`).
        lists = [x.field if isinstance(x, _Neighbors) else x for x in lists]
        if not all(isinstance(x, Field) for x in lists):
            raise _unsupported(e, "this `reduce` (of values that are not lists of neighbors)")
        if _name(op) in _BUILTINS and len(lists) == 1:
            folded, kind = lists[0], _name(op)
        elif _is(op, _itir.Lambda) and len(op.params) == len(lists) + 1:
            kind, g = _fold_parts(op)
            if kind is None:
                raise _unsupported(e, "this `reduce` (its lambda is not `acc ⊕ g(neighbors)`)")
            inner = {**scope, **dict(zip((str(p.id) for p in op.params[1:]), lists))}
            folded = self._stencil(g, inner)
            if not isinstance(folded, Field):
                raise _unsupported(e, "this `reduce` (its lambda is the same for every neighbor)")
        else:
            raise _unsupported(e, "this `reduce` (one list of neighbors, a builtin operation)")
        init = self._stencil(init, scope)
        value = init.item() if isinstance(init, np.generic) else init
        try:
            return _build(_strata.field_neighbor_fold, folded, _BUILTINS[kind], value)
        except VerifyError as err:
            raise GTIRError(f"{_where(e)}`reduce`: {err}") from None

    def _scan(self, e: Any, stencil: Any, args: List[Any], domain: Any) -> Field:
        """`as_fieldop(scan(λ(state, its…) → …, forward, init), domain)(args…)`:
        `strata.fields.scan` along the column axis (the domain's vertical dimension). Integer
        and boolean arguments are constants of the step; float scalars are broadcast over the
        domain and scanned like fields; a scan of no field scans a placeholder over the
        domain."""
        from . import fields as _fields

        step, forward, init = stencil.args
        if not _is(step, _itir.Lambda):
            raise _unsupported(stencil, "a scan whose step is not a lambda")
        if domain is None or isinstance(domain, tuple):
            raise _unsupported(e, "a scan without its domain")
        axis = self._column_axis(e, [d for d, _, _ in domain])
        forward = bool(self._stencil(forward, {}))
        init = self._stencil(init, {})
        # A nested tuple state is scanned flat, and seen nested by the step and the result.
        shape, init = _tree_shape(init), _tree_leaves(init)
        init = init[0] if shape is None else tuple(init)
        dtype = np.asarray(init[0] if isinstance(init, tuple) else init).dtype
        # A tuple state keeps its members' numpy types: each member is scanned in its own dtype.
        init = init if isinstance(init, tuple) else init.item() if isinstance(init, np.generic) else init
        names = [str(p.id) for p in step.params]
        constants: Dict[str, Any] = {}
        scanned: List[Tuple[str, Field]] = []
        for n, a in zip(names[1:], args):
            if isinstance(a, np.generic):
                constants[n] = a
            elif isinstance(a, Field):
                scanned.append((n, self._along(e, a, axis, domain) if axis in a.dims else self._over(e, a, domain)))
            else:
                raise _unsupported(e, f"a scan over the argument `{n}`")
        if not scanned or scanned[0][1].dtype != dtype:
            # The scan's state takes its type from its first value.
            scanned.insert(0, ("", self._over(e, _constant(e, 0, dtype), domain)))

        def nested(state: Field) -> Any:
            return state if shape is None else _tree_build(shape, [_tuple_get(k, state) for k in range(len(init))])

        def body(state: Field, *values: Field) -> Field:
            scope = {names[0]: nested(state), **constants, **{n: _Iterator(v) for (n, _), v in zip(scanned, values) if n}}
            r = self._stencil(step.expr, scope)
            return _fields.make_tuple(*_tree_leaves(r)) if isinstance(r, tuple) else r

        try:
            return nested(_fields.scan(body, *(f for _, f in scanned), dim=_fields.Dim(axis), init=init, forward=forward))
        except _fields.FieldError as err:
            raise GTIRError(f"{_where(e)}`scan`: {err}") from None

    def _column_axis(self, e: Any, dims: List[str]) -> str:
        def fields_of(a: Any) -> Any:
            if isinstance(a, tuple):
                for x in a:
                    yield from fields_of(x)
            elif isinstance(a, _common.Field):
                yield a

        vertical = {
            d.value
            for a in fields_of(tuple(self.args))
            for d in a.domain.dims
            if d.kind == _common.DimensionKind.VERTICAL
        }
        found = [n for n in dims if n in vertical]
        if len(found) != 1:
            raise _unsupported(e, "a scan without one vertical dimension")
        return found[0]

    def _shifts(self, fun: Any, scope: Dict[str, Any], node: Any) -> Tuple[Tuple[Any, Any], ...]:
        """The shifts of `shift(tag, index, …)`: `(dim, offset)` for a cartesian offset (the
        offset a number, or an integer field: GT4Py's `as_offset`), `(table, k)` for a
        connectivity. Errors are located at `node`, the shift applied (GT4Py locates the
        shifted name, not the offset)."""
        out = []
        parts = list(fun.args)
        while parts:
            tag, index = parts[0], parts[1]
            parts = parts[2:]
            if _is(tag, _itir.CartesianOffset):
                if tag.domain.value != tag.codomain.value:
                    raise _unsupported(node, "a cartesian shift between two dimensions")
                target: Any = tag.domain.value
            elif _is(tag, _itir.OffsetLiteral) and isinstance(tag.value, str):
                provider = self.offset_provider.get(tag.value)
                if isinstance(provider, _common.Dimension):
                    target = provider.value
                else:
                    c, _ = self._connectivity(node, tag.value)  # its errors where the shift is written
                    target = _TableRef(self, node, tag.value, c.domain.dims[0].value)
            else:
                raise _unsupported(node, "this shift")
            if _is(index, _itir.OffsetLiteral) and isinstance(index.value, int):
                out.append((target, int(index.value)))
                continue
            offset = self._stencil(index, scope)
            if isinstance(offset, np.integer):
                out.append((target, int(offset)))
            elif isinstance(offset, Field) and offset.dtype.kind == "i" and isinstance(target, str) and target in offset.dims:
                # Read where the stencil is evaluated only: GT4Py's domains are hulls, and an
                # entry elsewhere may lie outside the field (an error, though never read).
                domain = self.fieldop_domains[-1] if self.fieldop_domains else None
                if domain is not None:
                    have = {r.name: (r.start, r.stop) for r in offset.domain}
                    offset = _build(_strata.field_subset, offset, [(d, *_clip(a, b, *have[d])) for d, a, b in domain if d in have])
                out.append((target, offset))
                self.checked_while_running = True
            else:
                raise _unsupported(node, "a shift by a value only known when the program runs, other than an integer field over the cartesian dimension it shifts along")
        return tuple(out)

    def _lazy_branch(self, cond: Field, branch: Field, taken: bool) -> Field:
        """`branch` of an `if_` on `cond` widened to `cond`'s intervals where it is defined on
        less: read through a table holding each point's own coordinate where the branch is
        taken (`cond == taken`), so a taken point outside the branch is a run-time error
        naming it (GT4Py reads out of bounds there), and a clamped coordinate inside the
        branch where it is not (a value the select discards). Only within the reading
        `as_fieldop`'s domain: a branch that covers it is read as it is."""
        domain = self.fieldop_domains[-1] if self.fieldop_domains else None
        if not isinstance(domain, list):
            return branch
        bounds = {d: (a, b) for d, a, b in domain}
        want = {r.name: _clip(r.start, r.stop, *bounds.get(r.name, (r.start, r.stop))) for r in cond.domain}
        for r in list(branch.domain):
            lo, hi = want.get(r.name, (r.start, r.stop))  # a dimension the condition lacks: as it is
            if (r.start <= lo and hi <= r.stop) or r.start >= r.stop:
                continue
            # Over the condition's intervals along this dimension, the branch's elsewhere.
            have = {x.name: (x.start, x.stop) for x in branch.domain}
            over = _build(_strata.field_subset, cond, [(d, *(want[d] if d == r.name else _clip(*want[d], *have.get(d, want[d]))))
                                                       for d in cond.dims])
            at = _build(_strata.field_pos, over, r.name).astype(np.int64)
            inside = _build(_strata.field_builtin, "minimum", [
                _build(_strata.field_builtin, "maximum", [at, _constant(None, r.start, np.dtype(np.int64))]),
                _constant(None, r.stop - 1, np.dtype(np.int64))])
            chosen = over if taken else _build(_strata.field_builtin, "not", [over])
            coords = _build(_strata.field_builtin, "select", [chosen, at, inside])
            table = _coordinate_table(coords, r.name)
            branch = _build(_strata.field_neighbor, branch, table, 0)
            self.checked_while_running = True
        return branch

    def _value_op(self, e: Any, name: str, args: List[Any]) -> Any:
        if name == "if_" and isinstance(args[0], (bool, np.bool_)):
            return args[1] if args[0] else args[2]  # a condition on structure: the branch taken
        if name == "if_" and isinstance(args[1], tuple) and isinstance(args[2], tuple) and len(args[1]) == len(args[2]):
            return tuple(self._value_op(e, name, [args[0], t, f]) for t, f in zip(args[1], args[2]))
        if any(isinstance(a, tuple) for a in args):
            raise _unsupported(e, f"`{name}` of tuples")
        if name == "cast_":
            target = _name(e.args[1])
            dtype = {"float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}.get(target)
            if dtype is None:
                raise _unsupported(e, f"a cast to `{target}`")
            x = args[0]
            if not isinstance(x, Field):
                return np.dtype(dtype).type(x)
            return x.astype(dtype)
        if all(not isinstance(a, Field) for a in args) and name in _SCALAR_OPS:
            return _SCALAR_OPS[name](*args)
        kw = "select" if name == "if_" else _BUILTINS[name]
        if kw is None:
            raise _unsupported(e, f"the builtin `{name}`")
        dtype = next((a.dtype for a in args[1 if name == "if_" else 0:] if isinstance(a, Field)), None)
        operands = [a if isinstance(a, Field) else _constant(e, a, dtype) for a in args]
        if name in _COMPARISONS and operands[0].dtype != operands[1].dtype:
            # GT4Py types a comparison of any two scalar types (`i32 > i64`); its embedded
            # execution compares as numpy does, in the promoted type.
            common = np.result_type(operands[0].dtype, operands[1].dtype)
            operands = [x if x.dtype == common else x.astype(common) for x in operands]
        elif name == "if_" and operands[1].dtype != operands[2].dtype:
            # GT4Py's `if_` has its true branch's type (the other branch is not checked).
            operands[2] = operands[2].astype(operands[1].dtype)
        if name == "if_" and isinstance(args[0], Field):
            # GT4Py's `if_` evaluates only the branch it takes: a branch defined on less than
            # the condition (a shifted read past the column's end, taken only inside it) is
            # read lazily where it is short.
            operands[1] = self._lazy_branch(operands[0], operands[1], True)
            operands[2] = self._lazy_branch(operands[0], operands[2], False)
        try:
            return _build(_strata.field_builtin, kw, operands)
        except VerifyError as err:
            raise GTIRError(f"{_where(e)}`{name}`: {err}") from None


@dataclasses.dataclass(frozen=True)
class _Index:
    """`index(D)`: the field of `D`'s indices, made over the domain that reads it."""

    dim: str

    def over(self, e: Any, domain: List[Tuple[str, int, int]]) -> Field:
        start, stop = next(((a, b) for d, a, b in domain if d == self.dim), (None, None))
        if start is None:
            raise _unsupported(e, f"`index({self.dim})` read on a domain without `{self.dim}`")
        base = _build(_strata.field_add_dim, _constant(e, 0, np.dtype(np.int32)), self.dim, start, stop)
        return _build(_strata.field_pos, base, self.dim).astype(np.int32)  # GT4Py's index type


class _GTArg:
    """What a parameter of the lowered program stands for: the argument at `path` (`args[i]`,
    or a field inside a tuple argument, `args[i][j]…`; a neighbor table's connectivity name);
    a number converted to `scalar`; a table read `row_major` rather than in its memory order
    (a team program's: its ranks take rows of the first level)."""

    def __init__(self, path: Any, scalar: Optional[np.dtype] = None, row_major: bool = False):
        self.path, self.scalar, self.row_major = path, scalar, row_major


def _fold_parts(op: Any) -> Tuple[Optional[str], Any]:
    """A reduction lambda `λ(acc, x…) → acc ⊕ g` (or `g ⊕ acc`) with `⊕` associative and
    commutative and `acc` not in `g`: `(⊕, g)`, else `(None, None)`."""
    acc = str(op.params[0].id)
    body = op.expr
    if not (_is(body, _itir.FunCall) and _name(body.fun) in ("plus", "multiplies", "minimum", "maximum", "and_", "or_")
            and len(body.args) == 2):
        return None, None
    uses = [any(_is(n, _itir.SymRef) and str(n.id) == acc for n in a.pre_walk_values()) for a in body.args]
    for k in (0, 1):
        if _is(body.args[k], _itir.SymRef) and str(body.args[k].id) == acc and not uses[1 - k]:
            return _name(body.fun), body.args[1 - k]
    return None, None


def _clip(start: int, stop: int, lo: int, hi: int) -> Tuple[int, int]:
    """`[start, stop)` within `[lo, hi)`: the intersection, empty at its start when they do
    not meet."""
    start = max(start, lo)
    return start, max(start, min(stop, hi))


def _tree_shape(t: Any) -> Any:
    """The nesting of a tuple tree (`None` for a leaf; a tuple of the members' shapes)."""
    return tuple(_tree_shape(x) for x in t) if isinstance(t, tuple) else None


def _tree_leaves(t: Any) -> List[Any]:
    """A tuple tree's leaves, depth first."""
    return [y for x in t for y in _tree_leaves(x)] if isinstance(t, tuple) else [t]


def _tree_build(shape: Any, leaves: List[Any]) -> Any:
    """The tuple tree of `shape` over `leaves` (depth first)."""
    it = iter(leaves)

    def build(s: Any) -> Any:
        return tuple(build(x) for x in s) if s is not None else next(it)

    return build(shape)


def _int_closure(e: Any) -> Any:
    """`e` (a domain bound: integers, symbols, `tuple_get`, `get_domain_range` and scalar
    operations) as a function of the lowering evaluating it as `_Lowering._expr` does, walked
    once per program instead of once per lowering (GT4Py annotates every `as_fieldop` with its
    domain, so one program evaluates the same bounds many times, and again for every new domain
    size); any other node is left to `_expr`."""
    if _is(e, _itir.Literal):
        value = _literal(e)
        return lambda low: value
    if _is(e, _itir.SymRef):
        name = str(e.id)
        return lambda low: low.env[name] if name in low.env else low._expr(e)
    if _is(e, _itir.FunCall) and _is(e.fun, _itir.SymRef):
        name = str(e.fun.id)
        if name == "get_domain_range" and len(e.args) == 2 and _is(e.args[1], _itir.AxisLiteral):
            field, axis = _int_closure(e.args[0]), str(e.args[1].value)

            def domain_range(low: Any) -> Any:
                f = field(low)
                for l in getattr(f, "levels", ()):
                    if l.name == axis:
                        return (l.start, l.stop)
                return low._expr(e)

            return domain_range
        if name == "tuple_get" and len(e.args) == 2:
            idx, tup = _int_closure(e.args[0]), _int_closure(e.args[1])
            return lambda low: _tuple_get(idx(low), tup(low))
        op = _SCALAR_OPS.get(name)
        if op is not None:
            args = [_int_closure(a) for a in e.args]

            def scalar(low: Any) -> Any:
                values = [a(low) for a in args]
                if all(isinstance(v, (int, float, bool, np.generic)) for v in values):
                    return op(*values)
                return low._expr(e)

            return scalar
    return lambda low: low._expr(e)


def _tuple_get(idx: Any, t: Any) -> Any:
    """Member `idx` of a tuple: of a Python tuple of values, or of a field of tuples."""
    if isinstance(t, tuple):
        return t[int(idx)]
    return _build(_strata.field_tuple_get, t, int(idx))


_SUBCLASS: Dict[Tuple[int, int], bool] = {}

# Offsets and axes inside a stencil (one tuple object: `_is` keys classes by id).
_OFFSET_NODES = (_itir.OffsetLiteral, _itir.CartesianOffset, _itir.AxisLiteral)


def _is(e: Any, cls: Any) -> bool:
    """`isinstance(e, cls)` for GT4Py's IR node classes, whose metaclass (a runtime protocol's)
    makes every `isinstance` and every hash of the class cost microseconds: answered once per
    node type, keyed by the classes' ids (classes live as long as the process; a tuple of them
    must be a module constant, as `_OFFSET_NODES`)."""
    key = (id(type(e)), id(cls))
    hit = _SUBCLASS.get(key)
    if hit is None:
        hit = _SUBCLASS[key] = issubclass(type(e), cls)
    return hit


def _name(e: Any) -> Optional[str]:
    return str(e.id) if _is(e, _itir.SymRef) else None


def _literal(e: Any) -> Any:
    dtype = _dtype_of(e.type, e)
    if dtype.kind == "b":
        return np.bool_(e.value in ("True", "true", "1"))
    if dtype.kind in "iu":
        return dtype.type(int(e.value))
    return dtype.type(float(e.value))


def _constant(e: Any, value: Any, dtype: Optional[np.dtype]) -> Field:
    """A scalar of the value's own dtype (GT4Py types its literals), as a constant operand."""
    d = np.asarray(value).dtype if isinstance(value, np.generic) else dtype
    if d is None:
        d = np.dtype(np.bool_) if isinstance(value, bool) else np.dtype(np.float64) if isinstance(value, float) else np.dtype(np.int64)
    v = value.item() if isinstance(value, np.generic) else value
    return Field(_strata.field_constant(v, _DTYPES[np.dtype(d)]))


_SCALAR_OPS = {
    "plus": lambda a, b: a + b,
    "minus": lambda a, b: a - b,
    "multiplies": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "neg": lambda a: -a,
    "eq": lambda a, b: a == b,
    "not_eq": lambda a, b: a != b,
    "less": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
    "and_": lambda a, b: a and b,
    "or_": lambda a, b: a or b,
    "not_": lambda a: not a,
    "minimum": min,
    "maximum": max,
}
