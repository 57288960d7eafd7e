"""Strata from Python: typed tensor programs run on numpy and SciPy data.

    >>> import numpy as np, strata
    >>> m = strata.load("examples/stencil/laplacian.strata")
    >>> out = m.laplacian(inp=np.random.rand(7, 9, 9))     # a program's `out` parameter
    >>> m.laplacian.signature                                # what `strata sig --json` prints
    >>> help(m.laplacian)                                    # its parameters, types and source line

A module's entries (its functions and programs) are attributes; calling one verifies the
arguments against the entry's parameter types, runs it natively where it compiles (else in the
reference interpreter) with the GIL released, and returns its result — or, for a program with
several `out` parameters, a named tuple of them.

Arguments, by parameter type:

- dense tensor of scalars: a numpy array of the parameter's dtype and shape (C-contiguous
  arrays are read in one block; other strides are gathered; a different dtype is an
  `ArgumentError`, never a silent cast);
- tuple elements: a tuple of arrays, one per field;
- tensor elements (`tensor<4x8 x tensor<32x32xf32>>`): one array of shape (4, 8, 32, 32);
- sparse (compressed/singleton levels): any SciPy sparse matrix or array (its stored entries;
  duplicates add up, as in SciPy);
- ragged: a `strata.Ragged` (offsets per ragged level, and the values).

Results come back as numpy arrays that own the result's memory (no copy), absent elements
(neighbor-table skips) as zeros, as `strata run` writes them (a program that needs the mask
computes it with `can_deref`); sparse results as `scipy.sparse.csr_array` (`[dense,
compressed]` types) or `coo_array`; ragged ones as `strata.Ragged`.

Errors raise subclasses of `strata.Error` whose text is the located diagnostic the `strata`
command prints: `ParseError`, `VerifyError`, `RunError`, `ArgumentError`.
"""

from __future__ import annotations

import collections
import json
import os
from typing import Any, Dict, NamedTuple, Optional, Tuple

import numpy as np

# OpenMP's idle workers (the kernels' threads, libgomp) spin for up to 300,000 rounds (several
# milliseconds) after every parallel loop unless told otherwise, so a caller running kernels
# now and then keeps every core busy, and the kernels the tiered engine compiles in the
# background at the lowest priority never finish (scikit-learn's LDA on 2 cores: none of 9
# compiled in 250 calls). A bounded spin (~0.1-0.5 ms) keeps a tight loop's hand-off without
# starving them; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left as it is. libgomp reads
# it when the first kernel library loads it, after this import (docs/python.md, "Threads").
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "10000"

from ._strata import ArgumentError, AxisError, Error, LinAlgError, ParseError, Program, RunError, VerifyError
from ._strata import __version__
from ._strata import compile as _compile
from ._strata import array as _array_ext
from . import fields as _fields
from . import placement as _placement
from .placement import Place, Team, gpu, load_array, save, world
from .fields import *  # noqa: F401,F403 - fields over named dimensions are part of the package's API

__all__ = [
    "ArgumentError",
    "AxisError",
    "Entry",
    "Error",
    "LinAlgError",
    "Module",
    "ParseError",
    "Place",
    "Ragged",
    "RunError",
    "Team",
    "VerifyError",
    "compile",
    "gpu",
    "load",
    "load_array",
    "save",
    "world",
] + _fields.__all__


class Ragged(NamedTuple):
    """A ragged tensor as its storage: `offsets` (one array per ragged level, outermost first:
    entry p..p+1 bound the run of position p of the levels above) and `values` (every element
    inside the runs, in row-major order) — the layout of Strata's ragged `.npz` files."""

    offsets: Tuple[np.ndarray, ...]
    values: np.ndarray


_CALL_DOC = """Inputs are passed by name or by position, in the order the entry declares them. `out=`
takes an array (one result) or a dict of arrays by result name to write the results into
(their dtype and shape must match). `backend=` is `"auto"` (native where the entry compiles,
else the interpreter), `"native"` or `"interp"`; `threads=` the native threads (default:
`$STRATA_NUM_THREADS`, else every core)."""


def _device_name(device: Any) -> Optional[str]:
    """The device name a `device=` argument of a call names: `None`, `"cpu"` or `"gpuN"`."""
    if device is None:
        return None
    p = _placement.place_of(device)
    if p.team is not None:
        raise ArgumentError(f"device {device!r}: a call's `device` is `\"cpu\"` or a GPU (strata.gpu(n))")
    return p.device


class Entry:
    """A function or program of a module, callable with numpy arrays.

    Its `__signature__` names its inputs (then `out`, `backend`, `threads`, `device`: `"cpu"` or
    `strata.gpu(n)`, where the arguments are read to, so the entry computes there), and its docstring
    gives each parameter's and result's type, dtype and shape, and where the entry is written
    (`help(m.laplacian)`).
    """

    def __init__(self, program: Program, name: str):
        import inspect

        self._program = program
        self.__name__ = self.__qualname__ = name
        self._inputs = program.inputs(name)
        self._outputs = program.outputs(name)
        self._params = set(self._outputs) - {"result"}
        self._results = collections.namedtuple(f"{name}_results", self._outputs, rename=True)
        kw = inspect.Parameter.KEYWORD_ONLY
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=np.ndarray) for n in self._inputs]
            + [inspect.Parameter("out", kw, default=None), inspect.Parameter("backend", kw, default="auto"),
               inspect.Parameter("threads", kw, default=None), inspect.Parameter("device", kw, default=None)]
        )
        self._param_info = {p["name"]: p for p in self.signature["params"]}
        self._on_team = program.on_team(name)
        # Results distributed along their first dimension (team arrays when the call is on a team).
        self._team_results = {p["name"] for p in self.signature["results"] if (p.get("dims") or [{}])[0].get("format") == "block"}
        file, line = program.location(name)
        self.__doc__ = self._describe(file, line)

    def _describe(self, file: str, line: int) -> str:
        sig = self.signature

        def one(p: Dict[str, Any]) -> str:
            shape = "×".join(map(str, p.get("shape") or [])) or "scalar"
            return f"    {p['name']}: {p['type']}  (numpy {p.get('dtype', '?')}, shape {shape})"

        lines = [f"{self.__name__}{self.__signature__}", "",
                 f"@{self.__name__}: a Strata {sig.get('kind', 'entry')} written at {file}:{line}.", "", "Parameters:"]
        lines += [one(p) for p in sig["params"]] or ["    (none)"]
        lines += ["", "Results:"] + ([one(p) for p in sig["results"]] or ["    (none)"])
        return "\n".join(lines + ["", _CALL_DOC])

    @property
    def signature(self) -> Dict[str, Any]:
        """The entry's parameters and results: name, full type, dtype and shape of each (what
        `strata sig --json` prints for it)."""
        entries = json.loads(self._program.signatures_json())["entries"]
        return next(e for e in entries if e["name"] == self.__name__)

    def __call__(self, *args: Any, out: Any = None, backend: str = "auto", threads: Optional[int] = None,
                 device: Any = None, **kwargs: Any):
        if len(args) > len(self._inputs):
            raise ArgumentError(f"`@{self.__name__}` takes {len(self._inputs)} inputs ({', '.join(self._inputs)}), got {len(args)}")
        given = dict(zip(self._inputs, args))
        for k, v in kwargs.items():
            if k in given:
                raise ArgumentError(f"argument `{k}` of `@{self.__name__}` given twice")
            given[k] = v
        team_args = False
        if self._on_team:
            if _placement._distributed():  # under a launcher, the team's calls run distributed
                return self._call_on_team(given, backend, threads, out)
            # A team of one (no launcher): the call runs here; its distributed results are team
            # arrays all the same when it was given some, so a script runs alike on 1 and P ranks.
            team_args = any(getattr(getattr(v, "device", None), "team", None) is not None for v in given.values())
        values = {k: _unwrap(self._argument(k, v)) for k, v in given.items()}
        targets = _out_targets(self.__name__, self._outputs, out)
        # A program's `out` parameters start as the caller's arrays: what it does not write
        # keeps its value.
        values.update({n: t for n, t in targets.items() if n in self._params})
        results = dict(self._program.run(self.__name__, values, backend, threads, _device_name(device)))
        ordered = [_wrap(results[n]) for n in self._outputs]
        if targets:
            ordered = _write_out(self.__name__, self._outputs, ordered, targets)
        if team_args:
            from .array_api import asarray

            ordered = [asarray(r, device=world) if n in self._team_results else r for n, r in zip(self._outputs, ordered)]
        if len(ordered) == 1:
            return ordered[0]
        return self._results(*ordered)

    def _call_on_team(self, given: Dict[str, Any], backend: str, threads: Optional[int], out: Any) -> Any:
        """A call under a launcher of an entry whose values live on a team: a distributed run
        (every rank calls it). A `strata.array_api` team array passes its block (nothing is
        gathered); a numpy array every rank holds passes its rows. Results distributed along
        their first level come back as team arrays; the others whole, as numpy arrays."""
        from .array_api import Array, _wrap as _wrap_array

        if out is not None:
            raise ArgumentError(
                f"`@{self.__name__}` runs on a team: its results come back as team arrays, so `out=` (writing numpy "
                f"arrays in place) does not apply; pass an out parameter's initial value by name (`{self._outputs[0]}=…`)"
            )
        values = {k: v._x if isinstance(v, Array) else _unwrap(self._argument(k, v)) for k, v in given.items()}
        results = dict(self._program.run(self.__name__, values, backend, threads))
        ordered = [_wrap_array(r) if isinstance(r, _array_ext.Array) else _wrap(r) for r in (results[n] for n in self._outputs)]
        if len(ordered) == 1:
            return ordered[0]
        return self._results(*ordered)

    def _argument(self, name: str, v: Any) -> Any:
        """A Python number as the parameter's dtype when it holds it exactly (`2` for an f64
        scalar); a SciPy sparse matrix for a dense parameter refused with the fix."""
        p = self._param_info.get(name)
        if p is None:
            return v
        if isinstance(v, (bool, int, float)) and not p.get("shape") and p.get("dtype"):
            d = np.dtype(p["dtype"])
            try:
                converted = np.asarray(v, dtype=d) if d.kind in "fb" or isinstance(v, (bool, int)) else None
            except OverflowError:  # an integer out of the dtype's range
                converted = None
            if converted is not None and (d.kind == "b") == isinstance(v, bool) and converted.item() == v:
                return converted
            raise ArgumentError(
                f"argument `{name}` of `@{self.__name__}`: the Python {type(v).__name__} {v!r} is not exactly representable as "
                f"{d.name} (the parameter is `{p['type']}`)"
            )
        if hasattr(v, "tocoo") and hasattr(v, "nnz") and p.get("format") == "dense":
            raise ArgumentError(
                f"argument `{name}` of `@{self.__name__}`: a SciPy sparse {type(v).__name__} where the parameter is dense "
                f"(`{p['type']}`): pass `{name}.toarray()`"
            )
        return v

    def __repr__(self) -> str:
        return f"<strata entry @{self.__name__}({', '.join(self._inputs)}) -> {', '.join(self._outputs)}>"


class Module:
    """A verified Strata module: its entries are attributes (`m.lap`), `m.entries` their names."""

    def __init__(self, program: Program):
        self._program = program
        self.entries = tuple(program.entries())
        for name in self.entries:
            setattr(self, name, Entry(program, name))

    @property
    def name(self) -> str:
        """The file name its diagnostics show."""
        return self._program.name

    def __getattr__(self, name: str) -> Any:
        # Only for names that are not entries: say why (a generic function runs only where a
        # typed caller gives it types; else the entries there are).
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"module {self.name!r} has no entry `{name}`: {self._program.why_not_entry(name)}")

    def __repr__(self) -> str:
        return f"<strata module {self.name!r}: {', '.join('@' + e for e in self.entries)}>"


def compile(text: str, name: str = "<string>") -> Module:  # noqa: A001 - the package's verb
    """Parses and verifies Strata program text; raises `ParseError` / `VerifyError`."""
    return Module(_compile(text, name))


def load(path: "os.PathLike[str] | str") -> Module:
    """Reads, parses and verifies a `.strata` file; raises `ParseError` / `VerifyError`
    (located in the file) or `OSError`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return Module(_compile(text, os.fspath(path)))


def _unwrap(v: Any) -> Any:
    """An argument as the extension takes it (SciPy matrices and `Ragged` unpacked)."""
    if isinstance(v, Ragged):
        d: Dict[str, Any] = {"kind": "ragged", "values": np.asarray(v.values)}
        for k, o in enumerate(v.offsets):
            d["offsets" if k == 0 else f"offsets_{k}"] = np.asarray(o, dtype=np.int64)
        return d
    if hasattr(v, "tocoo") and hasattr(v, "nnz"):  # any scipy.sparse matrix or array
        c = v.tocoo()
        return {
            "kind": "coo",
            "row": np.asarray(c.row, dtype=np.int64) if c.ndim == 2 else np.zeros(c.nnz, dtype=np.int64),
            "col": np.asarray(c.col if c.ndim == 2 else c.coords[0], dtype=np.int64),
            "data": np.asarray(c.data),
            "shape": tuple(int(s) for s in c.shape),
        }
    if isinstance(v, tuple):
        return tuple(_unwrap(x) for x in v)
    if isinstance(v, np.ndarray):
        return v
    return np.asarray(v)


def _wrap(v: Any) -> Any:
    """A result as users see it (sparse and ragged results wrapped)."""
    if isinstance(v, tuple):
        return tuple(_wrap(x) for x in v)
    if not isinstance(v, dict):
        return v
    kind = v["kind"]
    if kind == "ragged":
        offsets = []
        k = 0
        while ("offsets" if k == 0 else f"offsets_{k}") in v:
            offsets.append(v["offsets" if k == 0 else f"offsets_{k}"])
            k += 1
        return Ragged(tuple(offsets), v["values"])
    import scipy.sparse as sp

    if kind == "csr":
        return sp.csr_array((v["data"], v["indices"], v["indptr"]), shape=tuple(v["shape"]))
    if kind == "coo1":
        return sp.coo_array((v["data"], (v["col"],)), shape=tuple(v["shape"]))
    return sp.coo_array((v["data"], (v["row"], v["col"])), shape=tuple(v["shape"]))


def _out_targets(entry: str, names: list, out: Any) -> Dict[str, np.ndarray]:
    """The caller's arrays to write results into, by result name (`out`: one array, a sequence
    or a dict by name)."""
    if out is None:
        return {}
    if isinstance(out, dict):
        targets = dict(out)
    elif isinstance(out, (list, tuple)):
        targets = dict(zip(names, out))
    else:
        if len(names) != 1:
            raise ArgumentError(f"`@{entry}` has {len(names)} results ({', '.join(names)}): pass `out` as a dict by name")
        targets = {names[0]: out}
    unknown = set(targets) - set(names)
    if unknown:
        raise ArgumentError(f"`@{entry}` has no result {', '.join(sorted(unknown))} (results: {', '.join(names)})")
    for n, t in targets.items():
        if not isinstance(t, np.ndarray):
            raise ArgumentError(f"out `{n}` of `@{entry}`: needs a numpy array, got {type(t).__name__}")
    return targets


def _write_out(entry: str, names: list, results: list, targets: Dict[str, np.ndarray]) -> list:
    """Copies `results` into the caller's arrays and returns those arrays in their place."""
    written = []
    for n, r in zip(names, results):
        t = targets.get(n)
        if t is None or r is t:  # `r is t`: the run wrote the caller's array in place
            written.append(r)
            continue
        if t.shape != np.shape(r) or t.dtype != np.asarray(r).dtype:
            raise ArgumentError(
                f"out `{n}` of `@{entry}`: needs an array of shape {np.shape(r)} and dtype {np.asarray(r).dtype}, "
                f"got {t.shape} {t.dtype}"
            )
        np.copyto(t, np.asarray(r))
        written.append(t)
    return written
