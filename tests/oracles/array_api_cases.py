"""The numpy oracle for the array-API front end (crates/strata-array).

Usage: python array_api_cases.py OUTDIR
Writes OUTDIR/cases.json and one .npy file per input and expected output. Each case names an
operation, its arguments by name (arrays as .npy files, Python scalars as JSON), and either
the outputs numpy computes or `"error": true` when numpy (and so Strata) must refuse.
crates/strata-array/tests/numpy_oracle.rs runs every case through the Rust front end on the
interpreter and on the native backend and compares.

Comparison (`tol`): "exact" — equal values, NaN where NaN, same dtype and shape; "ulp" —
floats within 4 units in the last place (math functions that are not correctly rounded);
"sum" — floats within 1e-12 (f64) / 1e-5 (f32) of the largest magnitude (reductions summed
in another order than numpy's pairwise summation); "cplx" — complex values within 8 units of
the part type's epsilon times the modulus numpy gives (complex functions, whose parts may cancel),
non-finite parts equal. Complex numbers compare part by part under the other tolerances.
"""

import itertools
import json
import os
import sys

import warnings

import numpy as np

warnings.simplefilter("ignore", RuntimeWarning)

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(2026)
CASES = []
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


class Scalar:
    """A Python scalar argument (weakly typed)."""

    def __init__(self, v):
        self.v = v


def encode(name, key, v):
    if isinstance(v, np.ndarray):
        path = f"{name}.{key}.npy"
        np.save(os.path.join(OUT, path), v)
        return {"array": path}
    if isinstance(v, Scalar):
        x = v.v
        if isinstance(x, bool):
            return {"bool": x}
        if isinstance(x, int):
            return {"int": x}
        if isinstance(x, complex):
            return {"complex": [repr(x.real), repr(x.imag)]}
        return {"float": repr(float(x))}
    if isinstance(v, tuple):
        return [encode(name, f"{key}{i}", x) for i, x in enumerate(v)]
    if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
        return [encode(name, f"{key}{i}", x) for i, x in enumerate(v)]
    return v


def plain(v):
    if isinstance(v, Scalar):
        return v.v
    if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
        return v
    if isinstance(v, list) and key_is_tuple(v):
        return tuple(v)
    return v


def key_is_tuple(v):
    return all(isinstance(x, int) for x in v)


def case(op, fn, tol="exact", name=None, **args):
    name = name or f"{len(CASES):04d}_{op}"
    try:
        with np.errstate(all="ignore"):
            values = {k: plain(v) for k, v in args.items()}
            # numpy functions take their arguments positionally; the lambdas by name.
            out = fn(**values) if fn.__name__ == "<lambda>" else fn(*values.values())
    except (ValueError, TypeError, IndexError, np.exceptions.AxisError, OverflowError, ZeroDivisionError):
        CASES.append({"name": name, "op": op, "args": {k: encode(name, k, v) for k, v in args.items()}, "error": True})
        return
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    files = []
    for i, o in enumerate(outs):
        o = np.asarray(o)
        path = f"{name}.out{i}.npy"
        np.save(os.path.join(OUT, path), o)
        files.append(path)
    CASES.append({"name": name, "op": op, "args": {k: encode(name, k, v) for k, v in args.items()}, "outputs": files, "tol": tol})


def arr(shape, dtype="float64", lo=-5, hi=5):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(lo, info.min), min(hi, info.max) + 1, shape).astype(dtype)
    return (rng.standard_normal(shape) * (hi - lo) / 4).astype(dtype)


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.inf, -np.inf, np.nan, 1e300, -1e-300, 7.0, 1e-8])

# ---- elementwise: unary ------------------------------------------------------------------
UNARY_FLOAT = {
    "sqrt": np.sqrt, "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
}
for op, f in UNARY_FLOAT.items():
    for dt in ["float64", "float32"]:
        x = np.concatenate([SPECIAL, rng.uniform(-3, 3, 18)]).astype(dt).reshape(4, 8)
        case(op, lambda x, f=f: f(x), tol="ulp", x=x)
    case(op, lambda x, f=f: f(x), tol="ulp", x=arr((3, 4), "int32", 1, 9))
UNARY_EXACT = {
    "abs": np.abs, "negative": np.negative, "positive": np.positive, "square": np.square,
    "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
}
for op, f in UNARY_EXACT.items():
    for dt in ["float64", "float32", "int8", "int64", "uint16"]:
        if op in ("signbit",) and dt[0] in "iu":
            x = arr((5, 3), dt, -100, 100)
        elif dt[0] in "iu":
            x = arr((5, 3), dt, -128, 127)
        else:
            x = np.concatenate([SPECIAL, [2.5, -0.5, 4.5]]).astype(dt)[:15].reshape(5, 3)
        case(op, lambda x, f=f: f(x), x=x)
case("abs", np.abs, x=np.array([-128, 127, -1], dtype="int8"))  # wraps: abs(-128) == -128
case("negative", np.negative, x=np.array([-2**31, 5], dtype="int32"))
case("isnan", np.isnan, x=np.array([True, False]))
for dt in ["int16", "uint8", "int64", "bool"]:
    case("bitwise_invert", np.bitwise_invert, x=arr((7,), dt, -50, 50))
case("logical_not", np.logical_not, x=np.array([0.0, 1.5, np.nan, -0.0]))

# ---- elementwise: binary -----------------------------------------------------------------
for a, b in itertools.product(DTYPES, DTYPES):
    case("result_type", lambda a, b: np.dtype(np.result_type(a, b)).name, name=f"rt_{a}_{b}", a=a, b=b)
    x, y = arr((3, 1), a, 0, 5), arr((4,), b, 0, 5)
    if a == "bool" and b == "bool":
        case("logical_and", np.logical_and, name=f"and_{a}_{b}", x1=x, x2=y)
    else:
        case("add", np.add, name=f"add_{a}_{b}", x1=x, x2=y)
    case("less", np.less, name=f"less_{a}_{b}", x1=x, x2=y)

BINARY_EXACT = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "copysign": np.copysign, "nextafter": np.nextafter,
}
for op, f in BINARY_EXACT.items():
    for dt in ["float64", "float32", "int32", "uint8", "int64"]:
        if op in ("copysign", "nextafter") and dt[0] in "iu":
            continue
        if dt[0] in "iu":
            x1, x2 = arr((4, 5), dt, -100, 100), arr((5,), dt, -9, 9)
        else:
            x1 = np.concatenate([SPECIAL, rng.uniform(-9, 9, 6)]).astype(dt).reshape(4, 5)
            x2 = np.array([0.0, -0.0, 2.5, np.nan, -3.0]).astype(dt)
        case(op, f, x1=x1, x2=x2)
    case(op, f, x1=arr((2, 3), "float64"), x2=Scalar(2))
    case(op, f, x1=Scalar(3.5), x2=arr((3,), "float32"))
for op, f in {"atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp, "pow": np.pow}.items():
    for dt in ["float64", "float32"]:
        x1 = np.concatenate([SPECIAL, rng.uniform(-3, 3, 6)]).astype(dt).reshape(4, 5)
        x2 = np.array([0.0, -0.0, 2.0, np.nan, -1.5]).astype(dt)
        case(op, f, tol="ulp", x1=x1, x2=x2)
case("pow", np.pow, x1=arr((3, 4), "int64", -5, 5), x2=arr((4,), "int64", 0, 6))
case("pow", np.pow, x1=arr((3,), "int32", 1, 5), x2=np.array([2, -1, 3], dtype="int32"))  # error
case("floor_divide", np.floor_divide, x1=np.array([7, -7, 0, -128], dtype="int8"), x2=np.array([0, 0, 0, -1], dtype="int8"))
case("remainder", np.remainder, x1=np.array([7, -7, 5, -128], dtype="int8"), x2=np.array([0, 3, -3, -1], dtype="int8"))
case("add", np.add, x1=np.array([127, -128], dtype="int8"), x2=np.array([1, -1], dtype="int8"))
case("multiply", np.multiply, x1=np.array([2**31 - 1, 65536], dtype="int32"), x2=np.array([2, 65536], dtype="int32"))
case("add", np.add, x1=np.array([1, 2], dtype="uint8"), x2=Scalar(255))
case("add", np.add, x1=arr((2, 3)), x2=arr((4,)))  # broadcast error
case("multiply", np.multiply, x1=arr((2, 1, 3)), x2=arr((4, 1)))
case("add", np.add, x1=np.array(2.5), x2=np.array(1.5))
case("add", np.add, x1=np.array(2.5, dtype="float32"), x2=arr((0, 3), "float32"))
for dt in ["int16", "uint8", "int64", "bool"]:
    for op, f in {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}.items():
        case(op, f, x1=arr((6,), dt, -50, 50), x2=arr((6,), dt, -50, 50))
for dt in ["int8", "int32", "uint16", "int64"]:
    bits = np.dtype(dt).itemsize * 8
    x1 = arr((6,), dt, -100, 100)
    x2 = np.array([0, 1, 3, bits - 1, bits, bits + 5], dtype=dt)
    case("bitwise_left_shift", np.bitwise_left_shift, x1=x1, x2=x2)
    case("bitwise_right_shift", np.bitwise_right_shift, x1=x1, x2=x2)
for op, f in {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}.items():
    case(op, f, x1=arr((3, 4), "bool"), x2=arr((4,), "bool"))
case("where", np.where, condition=arr((3, 4), "bool"), x1=arr((3, 4)), x2=arr((4,), "float32"))
case("where", np.where, condition=arr((4,), "bool"), x1=arr((2, 1), "int16"), x2=Scalar(7))
case("clip", lambda x, min, max: np.clip(x, min, max), x=np.array([-3.0, 0.5, np.nan, 9.0]), min=Scalar(-1.0), max=Scalar(2.0))
case("clip", lambda x, min, max: np.clip(x, min, max), x=arr((3, 4), "int32", -20, 20), min=Scalar(-5), max=None)
for src, dst in [("float64", "int32"), ("float32", "float64"), ("int64", "uint8"), ("int32", "bool"), ("bool", "float32"), ("uint16", "int8")]:
    x = arr((3, 4), src, -300, 300) if src[0] in "iu" else np.array([0.0, -1.5, 2.7, 100.2, -0.0, 3.0]).astype(src)
    case("astype", lambda x, dtype: x.astype(dtype), x=x, dtype=dst)

# ---- creation ----------------------------------------------------------------------------
case("arange", lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype), start=Scalar(2), stop=Scalar(20), step=Scalar(3), dtype=None)
case("arange", lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype), start=Scalar(10), stop=Scalar(-3), step=Scalar(-4), dtype="int16")
case("arange", lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype), start=Scalar(0.5), stop=Scalar(3.0), step=Scalar(0.25), dtype=None)
case("arange", lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype), start=Scalar(5), stop=Scalar(5), step=Scalar(1), dtype=None)
case("arange", lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype), start=Scalar(0), stop=Scalar(1), step=Scalar(0), dtype=None)
for shape, fill, dt in [((2, 3), Scalar(1.5), None), ((4,), Scalar(7), "int8"), ((), Scalar(True), None), ((0, 2), Scalar(2), None), ((2, 2), Scalar(float("nan")), "float32")]:
    case("full", lambda shape, fill_value, dtype: np.full(shape, fill_value, dtype=dtype), shape=list(shape), fill_value=fill, dtype=dt)
case("zeros", lambda shape, dtype: np.zeros(shape, dtype=dtype), shape=[3, 2], dtype="int32")
case("ones", lambda shape, dtype: np.ones(shape, dtype=dtype), shape=[2, 0, 2], dtype=None)
case("empty", lambda shape, dtype: np.zeros(shape, dtype=dtype), shape=[2], dtype="uint8")
case("full_like", lambda x, fill_value, dtype: np.full_like(x, fill_value, dtype=dtype), x=arr((2, 3), "int16"), fill_value=Scalar(3), dtype=None)
case("zeros_like", np.zeros_like, x=arr((4,), "float32"))
case("ones_like", np.ones_like, x=arr((2, 2), "bool"))
case("empty_like", np.zeros_like, x=arr((3,), "int64"))
for n, m, k in [(3, None, 0), (3, 5, 1), (4, 2, -1), (2, 3, 7), (0, None, 0)]:
    case("eye", lambda n_rows, n_cols, k: np.eye(n_rows, n_cols, k), n_rows=n, n_cols=m, k=k)
for start, stop, num, endpoint in [(0.0, 1.0, 5, True), (2.0, -1.0, 7, False), (1.0, 2.0, 1, True), (0.0, 10.0, 0, True), (-3.0, 3.0, 11, True)]:
    case("linspace", lambda start, stop, num, endpoint: np.linspace(start, stop, num, endpoint=endpoint), start=start, stop=stop, num=num, endpoint=endpoint)
for indexing in ["xy", "ij"]:
    case("meshgrid", lambda arrays, indexing: np.meshgrid(*arrays, indexing=indexing), arrays=[arr((3,)), arr((4,)), arr((2,))], indexing=indexing)
    case("meshgrid", lambda arrays, indexing: np.meshgrid(*arrays, indexing=indexing), arrays=[arr((3,), "int32"), arr((2,), "float32")], indexing=indexing)
for k in [0, 1, -2]:
    case("tril", lambda x, k: np.tril(x, k), x=arr((4, 5)), k=k)
    case("triu", lambda x, k: np.triu(x, k), x=arr((2, 3, 4), "int32"), k=k)

# ---- indexing ----------------------------------------------------------------------------
x = arr((5, 6, 4))


def np_index(x, index):
    key = []
    for i in index:
        if isinstance(i, dict):
            key.append(slice(*i["slice"]))
        elif i == "newaxis":
            key.append(None)
        elif i == "ellipsis":
            key.append(Ellipsis)
        else:
            key.append(i)
    return x[tuple(key)]


for index in [
    [1], [-1, 2], [{"slice": [1, 4, None]}], [{"slice": [None, None, -1]}, 0],
    [{"slice": [4, 0, -2]}, {"slice": [-5, None, 2]}, {"slice": [None, 2, None]}],
    ["ellipsis", 3], [2, "newaxis", "ellipsis"], [{"slice": [10, 20, None]}], [1, 2, 3],
    [{"slice": [-100, 100, 3]}, "ellipsis", "newaxis"], [5], [1, 2, 3, 0],
]:
    case("index", np_index, x=x, index=index)
case("index", np_index, x=np.array(4.5), index=["ellipsis"])
case("mask", lambda x, mask: x[mask], x=arr((4, 3)), mask=arr((4, 3), "bool"))
case("mask", lambda x, mask: x[mask], x=arr((4, 3), "int32"), mask=arr((4,), "bool"))
case("mask", lambda x, mask: x[mask], x=arr((4, 3)), mask=np.zeros(4, bool))
case("mask", lambda x, mask: x[mask], x=arr((4, 3)), mask=arr((3,), "bool"))
case("take", lambda x, indices, axis: np.take(x, indices, axis=axis), x=arr((4, 5)), indices=np.array([3, 0, -1, 3]), axis=1)
case("take", lambda x, indices, axis: np.take(x, indices, axis=axis), x=arr((6,), "int16"), indices=np.array([5, -6], dtype="int32"), axis=None)
case("take", lambda x, indices, axis: np.take(x, indices, axis=axis), x=arr((2, 3, 4)), indices=np.array([1], dtype="int64"), axis=-3)

# ---- manipulation ------------------------------------------------------------------------
case("concat", lambda arrays, axis: np.concat(arrays, axis=axis), arrays=[arr((2, 3)), arr((4, 3), "float32"), arr((0, 3))], axis=0)
case("concat", lambda arrays, axis: np.concat(arrays, axis=axis), arrays=[arr((2, 3), "int8"), arr((2, 1), "uint8")], axis=-1)
case("concat", lambda arrays, axis: np.concat(arrays, axis=axis), arrays=[arr((2, 3)), arr((2,))], axis=None)
case("concat", lambda arrays, axis: np.concat(arrays, axis=axis), arrays=[arr((2, 3)), arr((3, 3))], axis=1)
case("stack", lambda arrays, axis: np.stack(arrays, axis=axis), arrays=[arr((2, 3)), arr((2, 3))], axis=1)
case("stack", lambda arrays, axis: np.stack(arrays, axis=axis), arrays=[arr((3,), "int32"), arr((3,), "int32"), arr((3,), "int32")], axis=-1)
for axis in [0, 2, -1, -3, 3]:
    case("expand_dims", lambda x, axis: np.expand_dims(x, axis), x=arr((2, 3)), axis=axis)
case("expand_dims", lambda x, axis: np.expand_dims(x, axis), x=np.array(1.5), axis=0)
for axis in [None, 0, [0, 2], -1]:
    case("flip", lambda x, axis: np.flip(x, axis=None if axis is None else tuple(axis) if isinstance(axis, list) else axis), x=arr((3, 4, 2)), axis=axis)
case("permute_dims", lambda x, axes: np.permute_dims(x, axes), x=arr((2, 3, 4)), axes=[2, 0, 1])
case("permute_dims", lambda x, axes: np.permute_dims(x, axes), x=arr((2, 3, 4)), axes=[0, 0, 1])
case("matrix_transpose", np.matrix_transpose, x=arr((2, 3, 4)))
for shape in [[3, 8], [-1], [2, -1, 3], [24, 1], [], [5, 5]]:
    case("reshape", lambda x, shape: np.reshape(x, shape), x=arr((4, 6)), shape=shape)
case("reshape", lambda x, shape: np.reshape(x, shape), x=np.array(3.0), shape=[1, 1])
case("reshape", lambda x, shape: np.reshape(x, shape), x=arr((0, 3)), shape=[3, 0])
for shift, axis in [([2], [1]), ([-1, 3], [0, 1]), ([7], None), ([1], [-1])]:
    case("roll", lambda x, shift, axis: np.roll(x, shift, axis=None if axis is None else tuple(axis)), x=arr((3, 4)), shift=shift, axis=axis)
case("squeeze", lambda x, axis: np.squeeze(x, axis=tuple(axis)), x=arr((1, 3, 1, 2)), axis=[0, 2])
case("squeeze", lambda x, axis: np.squeeze(x, axis=tuple(axis)), x=arr((1, 3, 1, 2)), axis=[1])
case("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), x=arr((3, 1)), shape=[2, 3, 4])
case("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), x=arr((3,)), shape=[4, 2])
case("broadcast_arrays", lambda arrays: np.broadcast_arrays(*arrays), arrays=[arr((3, 1)), arr((4,)), arr((1, 1, 1))])

for src, dst in [([0], [2]), ([0, 1], [-1, -3]), ([2], [0])]:
    case("moveaxis", lambda x, source, destination: np.moveaxis(x, source, destination), x=arr((2, 3, 4)), source=src, destination=dst)
case("moveaxis", lambda x, source, destination: np.moveaxis(x, source, destination), x=arr((2, 3)), source=[0], destination=[5])
for reps, axis in [(2, 1), (3, None), (0, 0)]:
    case("repeat", lambda x, repeats, axis: np.repeat(x, repeats, axis=axis), x=arr((2, 3), "int32"), repeats=reps, axis=axis)
case("repeat", lambda x, repeats, axis: np.repeat(x, repeats, axis=axis), x=arr((3, 2)), repeats=np.array([2, 0, 1]), axis=0)
case("repeat", lambda x, repeats, axis: np.repeat(x, repeats, axis=axis), x=arr((3, 2)), repeats=np.array([2]), axis=1)
case("repeat", lambda x, repeats, axis: np.repeat(x, repeats, axis=axis), x=arr((3, 2)), repeats=np.array([1, 2]), axis=0)
for reps in [[2], [2, 1], [1, 3, 2], [0, 2]]:
    case("tile", lambda x, reps: np.tile(x, reps), x=arr((2, 3), "uint8"), reps=reps)
case("unstack", lambda x, axis: np.unstack(x, axis=axis), x=arr((2, 3, 2)), axis=1)
case("unstack", lambda x, axis: np.unstack(x, axis=axis), x=arr((4,), "int16"), axis=-1)
sorted_x = np.array([-np.inf, -1.0, 0.0, 0.0, 2.5, 7.0, np.nan])
for side in ["left", "right"]:
    case("searchsorted", lambda x1, x2, side: np.searchsorted(x1, x2, side=side), x1=sorted_x, x2=np.array([[0.0, -5.0], [np.nan, 7.0], [9.0, -np.inf]]), side=side)
    case("searchsorted", lambda x1, x2, side: np.searchsorted(x1, x2, side=side), x1=np.array([1, 3, 3, 8], dtype="int32"), x2=np.array([0, 3, 8, 9], dtype="int64"), side=side)
for a, b in itertools.product(DTYPES, DTYPES):
    case("can_cast", lambda a, b: np.array(np.can_cast(a, b)), name=f"cast_{a}_{b}", a=a, b=b)
for d in DTYPES:
    for kind in ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric", "float32"]:
        case("isdtype", lambda dtype, kind: np.array(np.isdtype(np.dtype(dtype), kind if " " in kind or kind in ("bool", "integral", "numeric") else np.dtype(kind))), dtype=d, kind=kind)
    if d.startswith("float"):
        case("finfo", lambda dtype: np.array([(i := np.finfo(dtype)).bits, i.eps, i.max, i.min, i.smallest_normal], dtype="float64"), dtype=d)
    elif d != "bool":
        case("iinfo", lambda dtype: np.array([(i := np.iinfo(dtype)).bits, i.max, i.min], dtype="float64"), dtype=d)
for op, f in {"conj": np.conj, "real": np.real, "imag": np.imag}.items():
    case(op, f, x=arr((2, 3), "float32"))

# ---- linear algebra ----------------------------------------------------------------------
for a, b in [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((5,), (5,)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (5, 6)), ((0, 3), (3, 2)), ((2, 0), (0, 3))]:
    case("matmul", np.matmul, tol="sum", x1=arr(a), x2=arr(b))
case("matmul", np.matmul, x1=arr((3, 4), "int32"), x2=arr((4, 2), "int8"))
case("matmul", np.matmul, tol="sum", x1=arr((3, 4), "float32"), x2=arr((4, 2), "float32"))
case("vecdot", lambda x1, x2, axis: np.vecdot(x1, x2, axis=axis), tol="sum", x1=arr((3, 4)), x2=arr((4,)), axis=-1)
case("vecdot", lambda x1, x2, axis: np.vecdot(x1, x2, axis=axis), tol="sum", x1=arr((3, 4), "int32"), x2=arr((2, 3, 1), "int32"), axis=1)
case("vecdot", lambda x1, x2, axis: np.vecdot(x1, x2, axis=axis), x1=arr((3, 4), "int32"), x2=arr((2, 3, 1), "int32"), axis=-2)
for axes in [2, 0, [[1, 0], [0, 2]], [[2], [1]]]:
    case("tensordot", lambda x1, x2, axes: np.tensordot(x1, x2, axes=axes), tol="sum", x1=arr((3, 4, 5)), x2=arr((4, 5, 4)) if axes != [[2], [1]] else arr((2, 5)), axes=axes)

# ---- searching ---------------------------------------------------------------------------
nanny = np.array([[1.0, 5.0, 5.0, -np.inf], [np.nan, 2.0, np.nan, 9.0], [3.0, 3.0, 3.0, 3.0]])
for op, f in {"argmax": np.argmax, "argmin": np.argmin}.items():
    for axis, keepdims in [(None, False), (0, False), (1, True), (-1, False), (None, True)]:
        case(op, lambda x, axis, keepdims, f=f: f(x, axis=axis, keepdims=keepdims), x=nanny, axis=axis, keepdims=keepdims)
        case(op, lambda x, axis, keepdims, f=f: f(x, axis=axis, keepdims=keepdims), x=arr((3, 5), "int16", -3, 3), axis=axis, keepdims=keepdims)
    case(op, lambda x, axis, keepdims, f=f: f(x, axis=axis, keepdims=keepdims), x=arr((0, 3)), axis=0, keepdims=False)
    case(op, lambda x, axis, keepdims, f=f: f(x, axis=axis, keepdims=keepdims), x=arr((4,), "bool"), axis=None, keepdims=False)
case("nonzero", np.nonzero, x=np.array([[0, 1, 0], [2, 0, 3]]))
case("nonzero", np.nonzero, x=np.array([0.0, np.nan, -0.0, 1.0]))
case("nonzero", np.nonzero, x=np.zeros((2, 2)))

# ---- sets --------------------------------------------------------------------------------


def sorted_unique(result):
    """numpy's unique result reordered by ascending value (NaNs last), inverse indices mapped."""
    values = result[0]
    order = np.argsort(values, stable=True)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    out = [values[order]]
    for name, field in zip(result._fields[1:], result[1:]):
        out.append(rank[field] if name == "inverse_indices" else field[order])
    return out


for x in [np.array([3.0, np.nan, 1.0, np.nan, 3.0, -0.0, 0.0, np.inf]), arr((4, 5), "int32", 0, 6), np.array([], dtype="float32"), np.array([True, False, True])]:
    # The standard leaves the order of unique values unspecified (numpy 2.3+ hashes integers):
    # the oracle sorts, as Strata does. Which of -0.0 / 0.0 represents zero is unspecified too.
    case("unique_values", lambda x: np.sort(np.unique_values(x)), tol="zero", x=x)
    case("unique_counts", lambda x: sorted_unique(np.unique_counts(x)), tol="zero", x=x)
    case("unique_inverse", lambda x: sorted_unique(np.unique_inverse(x)), tol="zero", x=x)
    case("unique_all", lambda x: sorted_unique(np.unique_all(x)), tol="zero", x=x)

# ---- sorting -----------------------------------------------------------------------------


def np_sort(x, axis, descending, stable, arg=False):
    if not descending:
        order = np.argsort(x, axis=axis, stable=True)
    else:
        key = -x.astype("float64") if x.dtype.kind in "ub" else -x
        order = np.argsort(key, axis=axis, stable=True)
    return order if arg else np.take_along_axis(x, order, axis=axis)


for x in [np.array([3.0, np.nan, -1.0, 2.0, np.nan, -np.inf, 0.0, -0.0]), arr((3, 6), "int32", -4, 4), arr((4, 3), "uint8", 0, 5), arr((2, 3), "float32")]:
    for axis in [-1, 0]:
        for descending in [False, True]:
            case("sort", lambda x, axis, descending, stable: np_sort(x, axis, descending, stable), x=x, axis=axis, descending=descending, stable=True)
            case("argsort", lambda x, axis, descending, stable: np_sort(x, axis, descending, stable, True), x=x, axis=axis, descending=descending, stable=True)
case("sort", lambda x, axis, descending, stable: np.sort(x, axis), x=np.array(2.0), axis=-1, descending=False, stable=True)

# ---- statistics --------------------------------------------------------------------------
for x in [arr((3, 4, 5)), arr((3, 4, 5), "float32"), arr((3, 4, 5), "int16", -50, 50), arr((3, 4, 5), "uint8", 0, 200)]:
    for axis, keepdims in [(None, False), (1, False), ([0, 2], True), (-1, True), ([], False)]:
        ax = None if axis is None else tuple(axis) if isinstance(axis, list) else axis
        case("sum", lambda x, axis, keepdims, ax=ax: np.sum(x, axis=ax, keepdims=keepdims), tol="sum", x=x, axis=axis, keepdims=keepdims)
        case("prod", lambda x, axis, keepdims, ax=ax: np.prod(x, axis=ax, keepdims=keepdims), tol="sum", x=x, axis=axis, keepdims=keepdims)
        case("max", lambda x, axis, keepdims, ax=ax: np.max(x, axis=ax, keepdims=keepdims), x=x, axis=axis, keepdims=keepdims)
        case("min", lambda x, axis, keepdims, ax=ax: np.min(x, axis=ax, keepdims=keepdims), x=x, axis=axis, keepdims=keepdims)
        case("mean", lambda x, axis, keepdims, ax=ax: np.mean(x, axis=ax, keepdims=keepdims), tol="sum", x=x, axis=axis, keepdims=keepdims)
        for correction in [0.0, 1.0]:
            case("var", lambda x, axis, keepdims, correction, ax=ax: np.var(x, axis=ax, keepdims=keepdims, ddof=correction), tol="sum", x=x, axis=axis, keepdims=keepdims, correction=correction)
            case("std", lambda x, axis, keepdims, correction, ax=ax: np.std(x, axis=ax, keepdims=keepdims, ddof=correction), tol="sum", x=x, axis=axis, keepdims=keepdims, correction=correction)
        case("any", lambda x, axis, keepdims, ax=ax: np.any(x, axis=ax, keepdims=keepdims), x=x, axis=axis, keepdims=keepdims)
        case("all", lambda x, axis, keepdims, ax=ax: np.all(x, axis=ax, keepdims=keepdims), x=x, axis=axis, keepdims=keepdims)
case("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), x=np.array([True, True, False]), axis=None, keepdims=False)
case("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), x=np.array([2**62, 2**62, 2**62], dtype="int64"), axis=None, keepdims=False)
case("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), x=np.zeros((0, 3)), axis=0, keepdims=False)
case("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), x=np.array(2.5), axis=None, keepdims=False)
case("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), x=arr((2, 3)), axis=2, keepdims=False)
case("prod", lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims), x=np.zeros((2, 0)), axis=1, keepdims=False)
case("max", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims), x=nanny, axis=1, keepdims=False)
case("min", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims), x=nanny, axis=None, keepdims=False)
case("max", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims), x=np.zeros((0, 3)), axis=0, keepdims=False)
case("mean", lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims), x=np.zeros((0,)), axis=None, keepdims=False)
case("var", lambda x, axis, keepdims, correction: np.var(x, axis=axis, keepdims=keepdims, ddof=correction), x=arr((1, 3)), axis=0, keepdims=False, correction=1.0)
for x, axis, include_initial in [(arr((3, 4)), 1, False), (arr((3, 4), "int8", -100, 100), 0, True), (arr((5,), "uint16"), None, True), (arr((2, 3, 2), "float32"), -2, False), (np.zeros((0, 2)), 0, True)]:
    case("cumulative_sum", lambda x, axis, include_initial: np.cumulative_sum(x, axis=axis, include_initial=include_initial), tol="sum", x=x, axis=axis, include_initial=include_initial)
for x, axis, include_initial in [(arr((3, 4), "float64", -2, 2), 1, False), (arr((3, 4), "int8", -3, 3), 0, True), (arr((5,), "uint16", 0, 9), None, True), (arr((2, 3, 2), "float32", -1.5, 1.5), -2, False), (np.zeros((0, 2)), 0, True), (np.array([2.0, np.inf, 0.0, np.nan]), None, False)]:
    case("cumulative_prod", lambda x, axis, include_initial: np.cumulative_prod(x, axis=axis, include_initial=include_initial), tol="sum", x=x, axis=axis, include_initial=include_initial)

# ---- complex dtypes ------------------------------------------------------------------------
CSPECIAL = [0.0, -0.0, 1.0, -1.5, 2.5, np.inf, -np.inf, np.nan]


def carr(shape, dtype="complex128"):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def cgrid(dtype):
    """Every pair of special parts (the standard's special-case tables), then ordinary values."""
    z = np.array([complex(r, i) for r in CSPECIAL for i in CSPECIAL] + list(carr(16)), dtype="complex128")
    return z.astype(dtype).reshape(8, 10)


COMPLEX_UNARY = dict(UNARY_FLOAT)
for op, f in COMPLEX_UNARY.items():
    for dt in ["complex128", "complex64"]:
        case(op, lambda x, f=f: f(x), tol="cplx", x=carr((3, 5), dt))
# Special values: the parts C's Annex G and numpy agree on (NaN signs and the sign of a zero
# part may differ between implementations, so only finite-or-not and NaN-ness is compared).
for op, f in COMPLEX_UNARY.items():
    if op == "expm1":
        # The standard's special cases are `exp(z) - 1`'s where a part is not finite (numpy's
        # nc_expm1 gives expm1(inf + 0j) = inf + NaN j; the standard, and Strata, inf + 0j).
        f = lambda x: np.where(np.isfinite(x), np.expm1(x), np.exp(x) - 1)  # noqa: E731
    case(op, lambda x, f=f: f(x), tol="special", x=cgrid("complex128"))
# `sign` is checked on ordinary values: numpy's sign(inf + nan j) is 1, the standard's NaN + NaN j
# (crates/strata-python/tests/test_array_api.py checks the standard's special cases).
case("sign", np.sign, tol="ulp", x=np.concatenate([carr((12,)), [0j, -0.0 + 0j, 3 + 4j, complex(np.inf, 1.0)]]))
for op, f in {"abs": np.abs, "negative": np.negative, "positive": np.positive, "square": np.square,
              "round": np.round, "isnan": np.isnan, "isinf": np.isinf,
              "isfinite": np.isfinite, "conj": np.conj, "real": np.real, "imag": np.imag}.items():
    for dt in ["complex128", "complex64"]:
        case(op, lambda x, f=f: f(x), tol="ulp", x=cgrid(dt))
for op, f in {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
              "equal": np.equal, "not_equal": np.not_equal}.items():
    # numpy's loops may fuse a product's multiply-add (FMA), which moves a cancelling part by
    # more than an ulp of itself: "special"/"cplx" bound the error by the modulus instead.
    exact = op in ("equal", "not_equal")
    for dt in ["complex128", "complex64"]:
        case(op, f, tol="exact" if exact else "special", x1=cgrid(dt), x2=carr((10,), dt))
    tol = "exact" if exact else "cplx"
    case(op, f, tol=tol, x1=carr((2, 3)), x2=Scalar(2))
    case(op, f, tol=tol, x1=carr((2, 3), "complex64"), x2=Scalar(1.5 - 2j))
    case(op, f, tol=tol, x1=Scalar(0.5j), x2=arr((3,), "float32"))
    case(op, f, tol=tol, x1=arr((2, 3), "int16"), x2=Scalar(1 + 1j))
    case(op, f, tol=tol, x1=carr((4,), "complex64"), x2=arr((3, 1), "float64"))
case("pow", np.pow, tol="cplx", x1=carr((3, 4)), x2=carr((4,)))
case("pow", np.pow, tol="cplx", x1=carr((3, 4), "complex64"), x2=Scalar(2.0))
for a in ["complex64", "complex128"]:
    for b in DTYPES + ["complex64", "complex128"]:
        case("result_type", lambda a, b: np.dtype(np.result_type(a, b)).name, name=f"rt_{a}_{b}", a=a, b=b)
        x = carr((3, 1), a)
        y = carr((4,), b) if b.startswith("complex") else arr((4,), b, 0, 5)
        case("add", np.add, tol="cplx", name=f"add_{a}_{b}", x1=x, x2=y)
for src, dst in [("float64", "complex64"), ("float32", "complex128"), ("int32", "complex128"), ("bool", "complex64"), ("complex64", "complex128"), ("complex128", "complex64"), ("complex128", "bool")]:
    x = carr((3, 4), src) if src.startswith("complex") else arr((3, 4), src, -300, 300)
    case("astype", lambda x, dtype: x.astype(dtype), x=x, dtype=dst)
for ax in [None, 0, 1]:
    for dt in ["complex128", "complex64"]:
        x = carr((4, 6), dt)
        for op, f in {"sum": np.sum, "prod": np.prod, "mean": np.mean}.items():
            case(op, lambda x, axis, keepdims, ax=ax, f=f: f(x, axis=ax, keepdims=keepdims), tol="sum", x=x, axis=[ax] if isinstance(ax, int) else ax, keepdims=False)
for dt in ["complex128", "complex64"]:
    case("matmul", np.matmul, tol="sum", x1=carr((3, 4), dt), x2=carr((4, 5), dt))
    case("vecdot", lambda x1, x2, axis: np.vecdot(x1, x2, axis=axis), tol="sum", x1=carr((3, 4), dt), x2=carr((4,), dt), axis=-1)
case("matmul", np.matmul, tol="sum", x1=carr((2, 3)), x2=arr((3, 2), "float32"))
case("finfo", lambda dtype: np.array([np.finfo(dtype).bits, np.finfo(dtype).eps, np.finfo(dtype).max, np.finfo(dtype).min, np.finfo(dtype).smallest_normal]), dtype="complex64")

with open(os.path.join(OUT, "cases.json"), "w") as f:
    json.dump(CASES, f, indent=0)
print(f"{len(CASES)} cases")
