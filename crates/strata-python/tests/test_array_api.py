"""`strata.array_api` against `array_api_strict` (the standard's reference namespace) and numpy,
on hypothesis-generated shapes, dtypes and values."""

import math

import array_api_strict as xs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import strata
import strata.array_api as xp

SETTINGS = settings(max_examples=25, deadline=None)
FLOATS = [np.float64, np.float32]
INTS = [np.int64, np.int32, np.int16, np.uint8]
REAL = FLOATS + INTS
COMPLEX = [np.complex128, np.complex64]


def values(dtype, shape):
    if np.dtype(dtype).kind == "f":
        elements = st.floats(-1e3, 1e3, allow_nan=False, width=np.dtype(dtype).itemsize * 8)
    elif np.dtype(dtype).kind == "c":
        elements = st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False, width=np.dtype(dtype).itemsize * 8)
    elif np.dtype(dtype).kind == "b":
        elements = st.booleans()
    else:
        info = np.iinfo(dtype)
        elements = st.integers(max(info.min, -100), min(info.max, 100))
    return hnp.arrays(dtype, shape, elements=elements)


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@st.composite
def one_array(draw, dtypes=REAL):
    dtype = draw(st.sampled_from(dtypes))
    return draw(values(dtype, draw(shapes)))


@st.composite
def two_arrays(draw, dtypes=REAL):
    """Two arrays of broadcastable shapes and dtypes that promote under the standard."""
    d1 = draw(st.sampled_from(dtypes))
    same_kind = [d for d in dtypes if np.dtype(d).kind == np.dtype(d1).kind or {np.dtype(d).kind, np.dtype(d1).kind} == {"i", "u"}]
    d2 = draw(st.sampled_from(same_kind))
    if {np.dtype(d1).kind, np.dtype(d2).kind} == {"i", "u"}:
        d2 = d1  # mixed signedness is numpy's choice, not the standard's
    s1, s2 = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)).input_shapes
    return draw(values(d1, s1)), draw(values(d2, s2))


def same(got, want, rtol=1e-6):
    g, w = np.asarray(got.to_numpy()), np.asarray(xs.asarray(want) if not hasattr(want, "__array_namespace__") else want)
    w = np.asarray(w)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    if g.dtype.kind in "fc":
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def both(a):
    return xp.asarray(a), xs.asarray(a)


@SETTINGS
@given(two_arrays(), st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum", "equal", "less", "greater_equal"]))
def test_binary_elementwise_with_broadcasting_and_promotion(arrays, name):
    (a, b) = arrays
    (pa, sa_), (pb, sb) = both(a), both(b)
    same(getattr(xp, name)(pa, pb), getattr(xs, name)(sa_, sb))


@SETTINGS
@given(two_arrays(FLOATS))
def test_division_and_power(arrays):
    a, b = arrays
    (pa, sa_), (pb, sb) = both(a), both(b)
    with np.errstate(all="ignore"):
        same(xp.divide(pa, pb), xs.divide(sa_, sb))
        same(pa / pb, sa_ / sb)


@SETTINGS
@given(one_array(FLOATS), st.sampled_from(["abs", "negative", "square", "floor", "ceil", "trunc", "round", "sign", "exp", "sin", "tanh", "isnan", "isfinite"]))
def test_unary_elementwise(a, name):
    pa, sa_ = both(a)
    with np.errstate(all="ignore"):
        same(getattr(xp, name)(pa), getattr(xs, name)(sa_), rtol=1e-5)


@SETTINGS
@given(one_array(), st.data())
def test_reductions_over_axes(a, data):
    pa, sa_ = both(a)
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1) if a.ndim else st.none()))
    keepdims = data.draw(st.booleans())
    for name in ("sum", "max", "min"):
        if name in ("max", "min") and (a.size == 0 or (axis is not None and a.shape[axis] == 0)):
            continue
        same(getattr(xp, name)(pa, axis=axis, keepdims=keepdims), getattr(xs, name)(sa_, axis=axis, keepdims=keepdims), rtol=1e-4)
    if a.dtype.kind == "f" and a.size:
        same(xp.mean(pa, axis=axis, keepdims=keepdims), xs.mean(sa_, axis=axis, keepdims=keepdims), rtol=1e-4)


@SETTINGS
@given(one_array(), st.data())
def test_manipulation(a, data):
    pa, sa_ = both(a)
    same(xp.flip(pa), xs.flip(sa_))
    same(xp.reshape(pa, (-1,)), xs.reshape(sa_, (-1,)))
    if a.ndim:
        perm = data.draw(st.permutations(range(a.ndim)))
        same(xp.permute_dims(pa, perm), xs.permute_dims(sa_, tuple(perm)))
        shift = data.draw(st.integers(-5, 5))
        same(xp.roll(pa, shift, axis=0), xs.roll(sa_, shift, axis=0))
        same(xp.concat([pa, pa], axis=0), xs.concat([sa_, sa_], axis=0))
    same(xp.stack([pa, pa]), xs.stack([sa_, sa_]))
    same(xp.expand_dims(pa, axis=0), xs.expand_dims(sa_, axis=0))


@SETTINGS
@given(one_array(), st.data())
def test_basic_indexing(a, data):
    pa, sa_ = both(a)  # noqa: F841
    key = []
    for n in a.shape:
        key.append(
            data.draw(
                st.one_of(
                    st.slices(max(n, 1)),
                    st.integers(-n, n - 1) if n else st.slices(1),
                )
            )
        )
    if data.draw(st.booleans()):
        key.insert(data.draw(st.integers(0, len(key))), None)
    key = tuple(key)
    # numpy as the oracle: the standard leaves out-of-bounds slice bounds unspecified (numpy
    # clamps them, as Strata does).
    same(pa[key], np.asarray(a)[key])
    same(pa[...], sa_[...])


@SETTINGS
@given(one_array(REAL + [np.bool_]))
def test_boolean_mask_indexing(a):
    pa, sa_ = both(a)
    m = np.asarray(a) > 0 if a.dtype != np.bool_ else np.asarray(a)
    same(pa[xp.asarray(m)], sa_[xs.asarray(m)])


@SETTINGS
@given(one_array(FLOATS + [np.int64, np.int32]), st.booleans())
def test_sorting_and_cumulative_sum(a, descending):
    if a.ndim == 0:
        return
    pa, sa_ = both(a)
    same(xp.sort(pa, descending=descending), xs.sort(sa_, descending=descending))
    same(xp.argsort(pa, descending=descending, stable=True), xs.argsort(sa_, descending=descending, stable=True))
    same(xp.cumulative_sum(pa, axis=0), xs.cumulative_sum(sa_, axis=0), rtol=1e-4)


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.sampled_from(FLOATS))
def test_matmul(n, k, m, dtype):
    rng = np.random.default_rng(n * 100 + k * 10 + m)
    a, b = rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((k, m)).astype(dtype)
    (pa, sa_), (pb, sb) = both(a), both(b)
    same(pa @ pb, sa_ @ sb, rtol=1e-4)
    same(xp.tensordot(pa, pb, axes=1), xs.tensordot(sa_, sb, axes=1), rtol=1e-4)
    same(pa.mT, sa_.mT)


def test_promotion_table_matches_the_standard():
    kinds = [xp.bool, xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16, xp.uint32, xp.uint64, xp.float32, xp.float64,
             xp.complex64, xp.complex128]
    strict = {d.name: getattr(xs, d.name) for d in kinds}
    for a in kinds:
        for b in kinds:
            try:
                want = xs.result_type(strict[a.name], strict[b.name])
            except TypeError:
                continue  # the standard leaves it out (Strata follows numpy 2 there)
            want_name = next(n for n, d in strict.items() if d == want)
            assert xp.result_type(a, b).name == want_name, (a, b)


def test_python_scalars_are_weak():
    x = xp.asarray([1, 2, 3], dtype=xp.int8)
    assert (x + 1).dtype == xp.int8 and (2 * x).dtype == xp.int8
    f = xp.asarray([1.5], dtype=xp.float32)
    assert (f * 2.0).dtype == xp.float32 and (f + 1).dtype == xp.float32
    b = xp.asarray([True, False])
    assert (b & True).dtype == xp.bool


def test_python_scalars_mix_with_arrays_by_kind():
    # Each kind of Python scalar (read without a numpy array in between) and numpy's scalars.
    x = xp.asarray([1.0, 2.0])
    same(0.5 * x, np.asarray([0.5, 1.0]))
    same(x - 2, np.asarray([-1.0, 0.0]))
    same(x * True, np.asarray([1.0, 2.0]))
    same(x * (1 + 1j), np.asarray([1 + 1j, 2 + 2j]))
    same(x * np.float64(0.25), np.asarray([0.25, 0.5]))
    same(x + np.int64(3), np.asarray([4.0, 5.0]))
    with pytest.raises(OverflowError):
        xp.asarray([1], dtype=xp.int64) + 2**70
    with pytest.raises(TypeError):
        x + "a"


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "complex64", "complex128"]
)
def test_zero_d_arrays_convert_to_the_python_scalar_numpy_gives(dtype):
    if dtype == "bool":
        v = np.asarray(True)
    elif dtype.startswith(("int", "uint")):
        v = np.asarray(np.iinfo(dtype).max, dtype=dtype)  # the largest value survives
    elif dtype.startswith("complex"):
        v = np.asarray(1.1 + 2.2j, dtype=dtype)
    else:
        v = np.asarray(1.1, dtype=dtype)  # float32: the rounded value, widened exactly
    a = xp.asarray(v)
    convert = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[v.dtype.kind]
    got, want = convert(a), convert(v.item())
    assert type(got) is type(want) and got == want, (dtype, got, want)
    assert float(xp.sum(xp.asarray(np.arange(4.0)) * 0.5)) == 3.0  # an evaluated 0-d result
    with pytest.raises(TypeError, match="0-d"):
        convert(xp.ones(3, dtype=dtype))


def test_special_values():
    x = xp.asarray([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0])
    s = xs.asarray(np.asarray([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0]))
    with np.errstate(all="ignore"):
        for name in ("isnan", "isinf", "isfinite", "signbit", "sign", "abs", "floor", "sqrt", "log"):
            same(getattr(xp, name)(x), getattr(xs, name)(s))
        same(x / 0.0, s / 0.0)
        same(xp.maximum(x, 0.5), xs.maximum(s, xs.asarray(0.5)))
        same(x == x, s == s)


def test_array_object_protocol():
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert x.__array_namespace__() is xp
    assert x.shape == (2, 2) and x.ndim == 2 and x.size == 4 and x.dtype == xp.float64 and x.device == "cpu"
    np.testing.assert_array_equal(x.T.to_numpy(), [[1.0, 3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(x), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.from_dlpack(x), [[1.0, 2.0], [3.0, 4.0]])
    assert x.__dlpack_device__() == (1, 0)
    assert float(xp.sum(x)) == 10.0 and int(xp.argmax(x)) == 3 and bool(xp.all(x > 0))
    assert [1, 2, 3][xp.asarray(1)] == 2  # __index__
    with pytest.raises(TypeError):
        float(x)
    assert repr(xp.asarray([1, 2])) == "Array([1, 2], dtype=int64)"
    y = xp.asarray([1.0, 2.0, 3.0])
    y += 1.0
    y[0] = 10.0
    np.testing.assert_array_equal(y.to_numpy(), [10.0, 3.0, 4.0])
    with pytest.raises(TypeError):
        i = xp.asarray([1, 2])
        i += 1.5
    np.testing.assert_array_equal(xp.from_dlpack(np.arange(3.0)).to_numpy(), [0.0, 1.0, 2.0])


def test_errors_are_the_standards_exceptions():
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(ValueError):
        x + xp.asarray([1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        xp.bitwise_and(x, x)
    with pytest.raises(ValueError):
        xp.sum(x, axis=3)
    with pytest.raises(TypeError):
        xp.less(xp.asarray([1j]), 1)  # complex numbers have no order
    with pytest.raises(TypeError):
        xp.asarray(np.array(["a"]))


def test_creation_functions():
    same(xp.arange(2, 11, 3), xs.arange(2, 11, 3))
    same(xp.linspace(0, 1, 7), xs.linspace(0, 1, 7))
    same(xp.eye(3, 4, k=1), xs.eye(3, 4, k=1))
    same(xp.full((2, 3), 7), xs.full((2, 3), 7))
    same(xp.zeros((2,), dtype=xp.int32), xs.zeros((2,), dtype=xs.int32))
    same(xp.ones_like(xp.asarray([1, 2])), xs.ones_like(xs.asarray([1, 2])))
    same(xp.tril(xp.ones((3, 3))), xs.tril(xs.ones((3, 3))))
    a, b = xp.meshgrid(xp.arange(3), xp.arange(2))
    c, d = xs.meshgrid(xs.arange(3), xs.arange(2))
    same(a, c)
    same(b, d)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, np.complex64])
def test_asarray_copies_every_layout_in_row_major_order(dtype):
    """A C-contiguous block is copied whole, any other layout (Fortran order, steps, reversed
    and transposed views, size-1 axes) element by element: each reads back as numpy has it."""
    base = np.arange(6 * 8 * 3).reshape(6, 8, 3) % 7
    a = (base > 3) if dtype is np.bool_ else base.astype(dtype)
    for v in (a, np.asfortranarray(a), a[::2, 1::3], a[::-1], a.transpose(2, 0, 1), a[:, :1], a[2:3, 5]):
        np.testing.assert_array_equal(np.asarray(xp.asarray(v)), v)
        assert xp.asarray(v).shape == v.shape


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64", "complex64", "complex128"])
def test_asarray_takes_every_dtype_in_either_byte_order(dtype):
    """Every dtype Strata has arrives with its dtype and values, in this machine's byte order
    and in the other one (data read from a big-endian file); others are refused by name."""
    a = (np.arange(-5, 7) % 3 == 0) if dtype == "bool" else (np.arange(12) * 7 % 11).astype(dtype)
    for v in (a, a.astype(a.dtype.newbyteorder("S"))):
        got = np.asarray(xp.asarray(v))
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, a)
    with pytest.raises(TypeError, match="datetime64"):
        xp.asarray(np.array(["2026-12-07"], dtype="datetime64[D]"))

def test_sets_and_searching():
    v = np.array([3, 1, 3, 2, 1, 3])
    pa, sa_ = both(v)
    u, su = xp.unique_counts(pa), xs.unique_counts(sa_)
    same(u.values, su.values)
    same(u.counts, su.counts)
    same(xp.unique_values(pa), xs.unique_values(sa_))
    same(xp.nonzero(pa > 2)[0], xs.nonzero(sa_ > 2)[0])
    same(xp.searchsorted(xp.sort(pa), xp.asarray([2, 3])), xs.searchsorted(xs.sort(sa_), xs.asarray([2, 3])))
    same(xp.where(pa > 2, pa, 0), xs.where(sa_ > 2, sa_, xs.asarray(0)))
    same(xp.take(pa, xp.asarray([0, 5])), xs.take(sa_, xs.asarray([0, 5])))


ALL_UNARY_FLOAT = (
    "abs negative positive square sign isnan isinf isfinite signbit sqrt exp expm1 log log1p log2 log10 sin cos tan "
    "asin acos atan sinh cosh tanh asinh acosh atanh floor ceil trunc round"
).split()


@SETTINGS
@given(one_array(FLOATS), st.sampled_from(ALL_UNARY_FLOAT))
def test_every_unary_float_function(a, name):
    pa, sa_ = both(a)
    with np.errstate(all="ignore"):
        same(getattr(xp, name)(pa), getattr(xs, name)(sa_), rtol=2e-5)


@SETTINGS
@given(two_arrays(FLOATS), st.sampled_from(["atan2", "hypot", "copysign", "logaddexp", "nextafter", "pow", "floor_divide", "remainder", "not_equal", "less_equal", "greater"]))
def test_every_binary_float_function(arrays, name):
    a, b = arrays
    if name in ("floor_divide", "remainder"):
        b = np.where(b == 0, 1, b).astype(b.dtype)
    if name == "pow":
        a = np.abs(a).astype(a.dtype)
    (pa, sa_), (pb, sb) = both(a), both(b)
    with np.errstate(all="ignore"):
        same(getattr(xp, name)(pa, pb), getattr(xs, name)(sa_, sb), rtol=2e-5)


@SETTINGS
@given(two_arrays([np.int64, np.int32, np.int16, np.uint8]), st.sampled_from(["bitwise_and", "bitwise_or", "bitwise_xor", "floor_divide", "remainder", "multiply"]))
def test_integer_functions(arrays, name):
    a, b = arrays
    if name in ("floor_divide", "remainder"):
        b = np.where(b == 0, 1, b).astype(b.dtype)
    (pa, sa_), (pb, sb) = both(a), both(b)
    same(getattr(xp, name)(pa, pb), getattr(xs, name)(sa_, sb))
    same(xp.bitwise_invert(pa), xs.bitwise_invert(sa_))


@SETTINGS
@given(two_arrays([np.bool_]), st.sampled_from(["logical_and", "logical_or", "logical_xor", "equal"]))
def test_logical_functions(arrays, name):
    a, b = arrays
    (pa, sa_), (pb, sb) = both(a), both(b)
    same(getattr(xp, name)(pa, pb), getattr(xs, name)(sa_, sb))
    same(xp.logical_not(pa), xs.logical_not(sa_))


@SETTINGS
@given(one_array(FLOATS), st.data())
def test_statistics(a, data):
    if a.ndim == 0 or a.size == 0:
        return
    pa, sa_ = both(a)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    correction = data.draw(st.sampled_from([0.0, 1.0])) if a.shape[axis] > 1 else 0.0
    same(xp.var(pa, axis=axis, correction=correction), xs.var(sa_, axis=axis, correction=correction), rtol=1e-3)
    same(xp.std(pa, axis=axis), xs.std(sa_, axis=axis), rtol=1e-3)
    same(xp.prod(xp.clip(pa, -1.5, 1.5), axis=axis), xs.prod(xs.clip(sa_, -1.5, 1.5), axis=axis), rtol=1e-3)
    same(xp.argmax(pa, axis=axis), xs.argmax(sa_, axis=axis))
    same(xp.argmin(pa, axis=axis, keepdims=True), xs.argmin(sa_, axis=axis, keepdims=True))
    same(xp.any(pa > 0, axis=axis), xs.any(sa_ > 0, axis=axis))
    same(xp.all(pa > 0), xs.all(sa_ > 0))


@SETTINGS
@given(one_array(), st.data())
def test_more_manipulation(a, data):
    pa, sa_ = both(a)
    same(xp.tile(pa, (2,) * max(a.ndim, 1)), xs.tile(sa_, (2,) * max(a.ndim, 1)))
    same(xp.broadcast_to(pa, (2,) + a.shape), xs.broadcast_to(sa_, (2,) + a.shape))
    if a.ndim:
        same(xp.repeat(pa, 2, axis=0), xs.repeat(sa_, 2, axis=0))
        src, dst = data.draw(st.integers(0, a.ndim - 1)), data.draw(st.integers(0, a.ndim - 1))
        same(xp.moveaxis(pa, src, dst), xs.moveaxis(sa_, src, dst))
        for p, s in zip(xp.unstack(pa, axis=0), xs.unstack(sa_, axis=0)):
            same(p, s)
        ones = tuple(i for i, n in enumerate(a.shape) if n == 1)
        if ones:
            same(xp.squeeze(pa, axis=ones), xs.squeeze(sa_, axis=ones))
        lo, hi = data.draw(st.integers(-5, 0)), data.draw(st.integers(0, 5))
        if a.dtype.kind in "fi":
            same(xp.clip(pa, lo, hi), xs.clip(sa_, lo, hi))
    same(xp.where(pa > 0, pa, pa * 2), xs.where(sa_ > 0, sa_, sa_ * 2))


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 5), st.sampled_from(FLOATS))
def test_vecdot(n, k, dtype):
    rng = np.random.default_rng(n * 10 + k)
    a, b = rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((k,)).astype(dtype)
    (pa, sa_), (pb, sb) = both(a), both(b)
    same(xp.vecdot(pa, pb), xs.vecdot(sa_, sb), rtol=1e-4)


# Names of the standard (up to the revision array_api_strict implements) this namespace does
# not have, each with its reason; docs/python.md lists the same.
MISSING: dict = {}
STRICT_ONLY = {"ArrayAPIStrictFlags", "Device", "ModuleType", "get_array_api_strict_flags",
               "reset_array_api_strict_flags", "set_array_api_strict_flags"}


def test_every_name_of_the_standard_is_here_or_listed_missing():
    names = sorted(n for n in dir(xs) if not n.startswith("_")) + ["__array_namespace_info__"]
    absent = [n for n in names if n not in STRICT_ONLY and not hasattr(xp, n)]
    assert sorted(absent) == sorted(MISSING), absent
    methods = {n for n in dir(type(xs.asarray([1.0]))) if n.startswith("__") or not n.startswith("_")}
    methods -= set(dir(object)) | {"__annotations__", "__slots__", "__weakref__", "__dict__", "__module__"}
    absent = sorted(m for m in methods if not hasattr(xp.Array, m))
    assert absent == ["__buffer__"], absent  # Python 3.12's buffer protocol: read through numpy


def test_later_revision_compositions():
    a = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 5.0]])
    pa, sa_ = both(a)
    same(xp.reciprocal(pa + 1.0), xs.reciprocal(sa_ + 1.0))
    same(xp.count_nonzero(pa, axis=1), xs.count_nonzero(sa_, axis=1))
    same(xp.diff(pa, axis=1), xs.diff(sa_, axis=1))
    same(xp.diff(pa, axis=0, n=1, prepend=xp.zeros((1, 3))), xs.diff(sa_, axis=0, n=1, prepend=xs.zeros((1, 3))))
    assert xp.broadcast_shapes((2, 1), (3,)) == xs.broadcast_shapes((2, 1), (3,))


@SETTINGS
@given(one_array([np.int64, np.int32, np.float64]))
def test_sets_searching_and_take_on_generated_arrays(a):
    pa, sa_ = both(a)
    flat_p, flat_s = xp.reshape(pa, (-1,)), xs.reshape(sa_, (-1,))
    same(xp.unique_values(pa), xs.unique_values(sa_))
    u, su = xp.unique_all(pa), xs.unique_all(sa_)
    for field in ("values", "indices", "counts"):
        same(getattr(u, field), getattr(su, field))
    same(u.inverse_indices, su.inverse_indices)
    if a.ndim == 0:
        with pytest.raises(ValueError):  # the standard: 0-d input must raise
            xp.nonzero(pa > 0)
    else:
        for p, s in zip(xp.nonzero(pa > 0), xs.nonzero(sa_ > 0)):
            same(p, s)
    if a.size:
        same(xp.take(flat_p, xp.asarray([0, a.size - 1])), xs.take(flat_s, xs.asarray([0, a.size - 1])))
        srt_p, srt_s = xp.sort(flat_p), xs.sort(flat_s)
        for side in ("left", "right"):
            same(xp.searchsorted(srt_p, flat_p, side=side), xs.searchsorted(srt_s, flat_s, side=side))


@SETTINGS
@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(1, 4), st.sampled_from([None, np.int32, np.float64]))
def test_creation_on_generated_arguments(start, stop, step, dtype):
    sd = None if dtype is None else getattr(xs, np.dtype(dtype).name)
    same(xp.arange(start, stop, step, dtype=dtype), xs.arange(start, stop, step, dtype=sd))
    same(xp.full((2, abs(stop) % 4), start, dtype=dtype), xs.full((2, abs(stop) % 4), start, dtype=sd))
    same(xp.linspace(start, stop, abs(step) + 1), xs.linspace(start, stop, abs(step) + 1))
    same(xp.eye(abs(start) % 5 + 1, k=step - 2, dtype=dtype), xs.eye(abs(start) % 5 + 1, k=step - 2, dtype=sd))


# ---- issue 31: no aliasing through copies, no silent wrap of Python integers ----


@pytest.mark.parametrize("op", ["__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__ipow__"])
def test_in_place_operators_never_write_through_a_copy(op):
    a = xp.asarray([1.0, 2.0])
    b = xp.asarray(a, copy=True)
    c = xp.asarray(a)  # copy=None: may share, and an in-place update of `c` is `a`'s too (the same array)
    getattr(b, op)(2.0)
    np.testing.assert_array_equal(a.to_numpy(), [1.0, 2.0])
    want = getattr(np.array([1.0, 2.0]), op)(2.0)
    np.testing.assert_array_equal(b.to_numpy(), want)
    assert c is a
    # Arrays from numpy data never write into the caller's buffer.
    raw = np.array([3.0, 4.0])
    d = xp.asarray(raw)
    getattr(d, op)(2.0)
    np.testing.assert_array_equal(raw, [3.0, 4.0])


def test_out_of_range_python_integers_raise_as_in_numpy_2():
    x = xp.asarray(np.array([1, 2], dtype=np.int8))
    for bad in (300, -129):
        with pytest.raises(OverflowError):
            x + bad
        with pytest.raises(OverflowError):
            bad * x
    np.testing.assert_array_equal((x + 127).to_numpy(), np.array([1, 2], np.int8) + np.int8(127))
    u = xp.asarray(np.array([1], dtype=np.uint8))
    with pytest.raises(OverflowError):
        u - (-1)


def test_info_functions_eye_expand_dims_and_copies_as_the_standard_says():
    """`finfo`/`iinfo` give Python numbers; `eye` with a diagonal beyond the array is all zeros;
    `expand_dims` takes its axis by position; `asarray(x, copy=True)` is a new array; every
    public function has a docstring. Against array-api-strict."""
    import inspect

    for d in (xp.float32, xp.float64):
        ours, theirs = xp.finfo(d), xs.finfo(getattr(xs, np.dtype(d).name))
        for field in ("bits", "eps", "max", "min", "smallest_normal"):
            assert type(getattr(ours, field)) is type(getattr(theirs, field)), field
            assert getattr(ours, field) == getattr(theirs, field), field
    ours, theirs = xp.iinfo(xp.int16), xs.iinfo(xs.int16)
    assert (type(ours.max), ours.max, ours.min, ours.bits) == (int, theirs.max, theirs.min, theirs.bits)
    for k in (10**20, -(10**20), 3, -2, 0):
        np.testing.assert_array_equal(xp.eye(3, 4, k=k).to_numpy(), np.eye(3, 4, k=max(-3, min(k, 4))))
    assert xp.expand_dims(xp.ones((2, 3)), 1).shape == (2, 1, 3)
    a = xp.asarray([1.0, 2.0])
    b = xp.asarray(a, copy=True)
    assert b is not a
    b[0] = 5.0
    np.testing.assert_array_equal(a.to_numpy(), [1.0, 2.0])
    undocumented = [
        n for n in dir(xp)
        if not n.startswith("_") and inspect.isfunction(getattr(xp, n)) and not (getattr(xp, n).__doc__ or "").strip()
    ]
    assert not undocumented


@pytest.mark.parametrize("key", [
    (slice(None), [2, 0]), ([1, 0],), (Ellipsis, np.array([3, -1])), (1, slice(None), [0, 0, 3]),
    (slice(None), np.array([[0, 1], [2, 2]])), (None, slice(None), [1]), (1, [0, 2]), ([0, 1], 2),
    (slice(None), 1, slice(None), np.array([[0], [4]])), (0, Ellipsis, [1, 1]), (slice(1, 2), [0, -1], 3),
])
def test_integer_array_indexing_matches_numpy(key):
    """One integer array among slices, integers, `...` and None, as numpy indexes (advanced
    dimensions in place when adjacent to the integers, first otherwise)."""
    a = np.arange(120.0).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(xp.asarray(a)[key].to_numpy(), a[key])
    x = xp.asarray(a)
    k = tuple(xp.asarray(p) if isinstance(p, (list, np.ndarray)) else p for p in key)
    np.testing.assert_array_equal(x[k].to_numpy(), a[key])


def test_take_along_axis_cumulative_prod_and_isin_match_numpy():
    rng = np.random.default_rng(40)
    a = rng.standard_normal((3, 4, 5))
    for ax in (0, 1, 2, -1):
        idx = np.argsort(a, axis=ax)
        np.testing.assert_array_equal(xp.take_along_axis(xp.asarray(a), xp.asarray(idx), axis=ax).to_numpy(),
                                      np.take_along_axis(a, idx, axis=ax))
    idx = rng.integers(-4, 4, (3, 1, 5))
    np.testing.assert_array_equal(xp.take_along_axis(xp.asarray(a), xp.asarray(idx), axis=1).to_numpy(),
                                  np.take_along_axis(a, idx, axis=1))
    ints = rng.integers(-3, 4, (4, 5)).astype(np.int32)
    for ax in (0, 1):
        got = xp.cumulative_prod(xp.asarray(ints), axis=ax).to_numpy()
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.cumprod(ints, axis=ax, dtype=np.int64))
        got = xp.cumulative_prod(xp.asarray(ints), axis=ax, include_initial=True).to_numpy()
        want = np.cumprod(ints, axis=ax, dtype=np.int64)
        np.testing.assert_array_equal(got, np.concatenate([np.ones_like(np.take(want, [0], axis=ax)), want], axis=ax))
    np.testing.assert_allclose(xp.cumulative_prod(xp.asarray(a[0, 0])).to_numpy(), np.cumprod(a[0, 0]), rtol=1e-15)
    x1, x2 = rng.integers(0, 10, (3, 4)), np.array([1, 5, 7])
    for invert in (False, True):
        np.testing.assert_array_equal(xp.isin(xp.asarray(x1), xp.asarray(x2), invert=invert).to_numpy(),
                                      np.isin(x1, x2, invert=invert))
    f = np.array([1.0, np.nan, 2.0])
    np.testing.assert_array_equal(xp.isin(xp.asarray(f), xp.asarray(np.array([np.nan, 2.0]))).to_numpy(), [False, False, True])
    np.testing.assert_array_equal(xp.isin(xp.asarray(f), xp.asarray(np.array([]))).to_numpy(), [False] * 3)


def _stencils(m, u):
    """Programs that read one computed view at several shifts (in `m`: numpy or the namespace)."""
    v = u[1:-1, 1:-1] * 2.0
    yield v[1:, :] + v[:-1, :]
    yield v[2:, 1:-1] - v[:-2, 1:-1] + v[1:-1, 2:] * v[1:-1, :-2]
    r = m.roll(u, 1, axis=0) * 3.0
    yield m.roll(r, 2, axis=1) + r
    w = (u[1:, :] + u[:-1, :])[:, 1:]
    yield w[1:, :] * w[:-1, :]


@pytest.mark.parametrize("device", [None, "world"])
def test_a_computed_view_read_at_several_shifts_matches_numpy(device):
    """Each shifted copy of an inlined view is its own value (the native code once shared one
    accumulator between the copies: `v[1:] + v[:-1]` read `v[1:]` twice)."""
    import strata

    a = np.random.default_rng(11).random((9, 8))
    u = xp.asarray(a, device=strata.world if device else None)
    for got, want in zip(_stencils(xp, u), _stencils(np, a)):
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("device", [None, "world"])
def test_assignments_of_parts_match_numpy(device):
    """`x[key] = value` for integers and slices of step 1, traced (pieces of a concatenation)."""
    import strata

    a = np.random.default_rng(12).random((7, 6))
    keys = [(slice(1, -1), slice(1, -1)), (0, slice(None)), (slice(None), -1), (Ellipsis, slice(2, 4)),
            (slice(2, 5),), (3, 2), (slice(0, 0), slice(None))]
    for key in keys:
        u = xp.asarray(a, device=strata.world if device else None)
        w = a.copy()
        value = np.arange(np.empty_like(w)[key].size, dtype=np.float64).reshape(np.empty_like(w)[key].shape)
        u[key] = xp.asarray(value)
        w[key] = value
        np.testing.assert_array_equal(np.asarray(u), w, err_msg=str(key))
        u[key] = 2.5
        w[key] = 2.5
        np.testing.assert_array_equal(np.asarray(u), w, err_msg=str(key))


# ---- complex dtypes ----

COMPLEX_UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
                 "acosh", "atanh", "expm1", "log1p", "log2", "log10", "abs", "sign", "conj", "real", "imag", "isnan",
                 "isinf", "isfinite", "round", "negative", "square"]


@SETTINGS
@given(one_array(COMPLEX), st.sampled_from(COMPLEX_UNARY))
def test_complex_unary_functions(a, name):
    x, s = both(a)
    rtol = 1e-4 if a.dtype == np.complex64 else 1e-9
    same(getattr(xp, name)(x), getattr(xs, name)(s), rtol=rtol)


@SETTINGS
@given(two_arrays(COMPLEX), st.sampled_from(["add", "subtract", "multiply", "divide", "equal", "not_equal", "pow"]))
def test_complex_binary_functions(arrays, name):
    (x1, s1), (x2, s2) = both(arrays[0]), both(arrays[1])
    rtol = 1e-3 if np.complex64 in (arrays[0].dtype, arrays[1].dtype) else 1e-9
    if name == "pow":
        # Far from overflow: moduli ≤ 2 raised to exponents ≤ 2.
        x1, s1 = both(np.asarray(arrays[0]) / max(1.0, float(np.abs(arrays[0]).max(initial=0))) * 2)
        x2, s2 = both(np.asarray(arrays[1]) / max(1.0, float(np.abs(arrays[1]).max(initial=0))) * 2)
    same(getattr(xp, name)(x1, x2), getattr(xs, name)(s1, s2), rtol=rtol)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_pow_of_and_to_zero_as_numpy(dtype):
    # C's cpow gives NaN for 0 ** 0 and infinities for 0 ** -1; numpy: x ** 0 is 1, 0 ** b is 0
    # for a positive real part of b and NaN otherwise.
    base = np.array([0, 0, 0, 0, 0, -0.0, 1 + 1j, 2, 0], dtype=dtype)
    expo = np.array([0, 1, 2 + 1j, -1, -1j, 0, 0, 0.5, 0.5 - 3j], dtype=dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.power(base, expo)
    got = xp.pow(xp.asarray(base), xp.asarray(expo)).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


@SETTINGS
@given(one_array(COMPLEX), st.data())
def test_complex_reductions_and_products(a, data):
    x, s = both(a)
    axis = data.draw(st.none() | st.integers(0, max(a.ndim - 1, 0))) if a.ndim else None
    for name in ("sum", "prod", "mean"):
        if (name == "mean" and a.size == 0) or (name == "prod" and a.size > 6):
            continue
        rtol = 1e-3 if a.dtype == np.complex64 else 1e-9
        same(getattr(xp, name)(x, axis=axis), getattr(xs, name)(s, axis=axis), rtol=rtol)
    if a.ndim >= 1 and a.shape[-1] > 0:
        same(xp.vecdot(x, x), xs.vecdot(s, s), rtol=1e-3)


def test_complex_scalars_promotion_and_refusals():
    f = xp.asarray([1.5, -2.0], dtype=xp.float32)
    assert (f + 1j).dtype == xp.complex64 and (f * (2 - 1j)).to_numpy().tolist() == [3 - 1.5j, -4 + 2j]
    i = xp.asarray([1, 2], dtype=xp.int16)
    assert (i * 1j).dtype == xp.complex128
    z = xp.asarray([1 + 2j, -3j])
    assert complex(z[0]) == 1 + 2j and xp.asarray(2j).dtype == xp.complex128
    assert xp.isdtype(xp.complex64, "complex floating") and xp.isdtype(xp.complex128, "numeric")
    assert not xp.isdtype(xp.complex64, "real floating")
    assert xp.__array_namespace_info__().default_dtypes()["complex floating"] == xp.complex128
    assert xp.finfo(xp.complex128).dtype == xp.float64 and xp.finfo(xp.complex64).bits == 32
    m = xp.asarray(np.array([[1 + 1j, 2], [3j, 4 - 1j]]))
    np.testing.assert_allclose((m @ m).to_numpy(), np.array([[1 + 1j, 2], [3j, 4 - 1j]]) @ np.array([[1 + 1j, 2], [3j, 4 - 1j]]))
    np.testing.assert_array_equal(xp.astype(z, xp.bool).to_numpy(), [True, True])
    for refused in (lambda: z < z, lambda: xp.maximum(z, z), lambda: xp.max(z), lambda: xp.sort(z), lambda: xp.floor(z),
                    lambda: xp.astype(z, xp.float64), lambda: xp.atan2(z, z), lambda: xp.clip(z, 0, 1)):
        with pytest.raises(TypeError):
            refused()


def test_complex_special_cases_of_the_standard():
    inf, nan = math.inf, math.nan
    z = xp.asarray(np.array([0j, complex(-0.0, -0.0), 3 + 4j, complex(inf, 1.0), complex(inf, inf), complex(inf, nan),
                             complex(nan, 0.0)]))
    s = xp.sign(z).to_numpy()
    assert s[0] == 0 and s[1] == 0 and s[2] == 0.6 + 0.8j and s[3] == 1 + 0j
    assert all(math.isnan(v.real) and math.isnan(v.imag) for v in s[4:])  # ∞/∞, and NaN parts
    e = xp.exp(xp.asarray(np.array([complex(0.0, 0.0), complex(-inf, 0.0), complex(inf, 0.0)]))).to_numpy()
    assert e[0] == 1 and e[1] == 0 and e[2].real == inf and e[2].imag == 0
    r = xp.sqrt(xp.asarray(np.array([complex(nan, inf), complex(-4.0, 0.0), complex(-inf, 1.0)]))).to_numpy()
    assert r[0] == complex(inf, inf) and r[1] == 2j and r[2].real == 0 and r[2].imag == inf
    l = xp.log(xp.asarray(np.array([complex(-0.0, 0.0), complex(-1.0, 0.0)]))).to_numpy()
    assert l[0].real == -inf and l[0].imag == math.pi and l[1] == complex(0.0, math.pi)
    a = xp.abs(xp.asarray(np.array([complex(inf, nan), complex(nan, -inf), complex(nan, 1.0)]))).to_numpy()
    assert a[0] == inf and a[1] == inf and math.isnan(a[2])
    assert xp.isinf(xp.asarray(complex(nan, inf))) and xp.isnan(xp.asarray(complex(1.0, nan)))
    assert not xp.isfinite(xp.asarray(complex(1.0, inf)))


def test_complex_arrays_through_every_family():
    """Creation, manipulation, indexing, sets, searching and statistics keep both parts (a fill
    value's imaginary part and `nonzero` of a purely imaginary number were once lost)."""
    z = xp.asarray(np.array([1 + 2j, -3j, 0j, 2.5 + 0j]))
    zn = z.to_numpy()
    m = [True, False, True, False]
    cases = {
        "full": (xp.full((2,), 1 + 2j), np.full((2,), 1 + 2j)),
        "full_like": (xp.full_like(z, 2j), np.full_like(zn, 2j)),
        "zeros": (xp.zeros(3, dtype=xp.complex64), np.zeros(3, dtype=np.complex64)),
        "eye": (xp.eye(3, k=1, dtype=xp.complex64), np.eye(3, k=1, dtype=np.complex64)),
        "linspace": (xp.linspace(0, 1 + 1j, 5), np.linspace(0, 1 + 1j, 5)),
        "linspace c64": (xp.linspace(1, 2, 4, dtype=xp.complex64), np.linspace(1, 2, 4, dtype=np.complex64)),
        "asarray": (xp.asarray([1 + 2j, 3]), np.asarray([1 + 2j, 3])),
        "concat": (xp.concat([z, z]), np.concatenate([zn, zn])),
        "stack": (xp.stack([z, z], axis=1), np.stack([zn, zn], axis=1)),
        "slice": (z[1:3], zn[1:3]),
        "mask": (z[xp.asarray(m)], zn[m]),
        "take": (xp.take(z, xp.asarray([3, 0])), zn[[3, 0]]),
        "where": (xp.where(xp.asarray(m), z, 0), np.where(m, zn, 0)),
        "cumulative_sum": (xp.cumulative_sum(z), np.cumsum(zn)),
        "cumulative_prod": (xp.cumulative_prod(z), np.cumprod(zn)),
        "unique_values": (xp.unique_values(xp.concat([z, z])), np.unique(np.concatenate([zn, zn]))),
        "nonzero": (xp.nonzero(z)[0], np.nonzero(zn)[0]),
        "any": (xp.any(z), np.any(zn)),
        "all": (xp.all(z), np.all(zn)),
        "count_nonzero": (xp.count_nonzero(z), np.count_nonzero(zn)),
        "isin": (xp.isin(z, xp.asarray([-3j])), np.isin(zn, [-3j])),
        "tril": (xp.tril(xp.reshape(z, (2, 2))), np.tril(zn.reshape(2, 2))),
        "roll": (xp.roll(z, 1), np.roll(zn, 1)),
        "flip": (xp.flip(z), np.flip(zn)),
        "repeat": (xp.repeat(z, 2), np.repeat(zn, 2)),
        "diff": (xp.diff(z), np.diff(zn)),
        "reciprocal": (xp.reciprocal(z + 1), np.reciprocal(zn + 1)),
    }
    for name, (got, want) in cases.items():
        g, w = got.to_numpy(), np.asarray(want)
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=name)
    with pytest.raises(TypeError):
        xp.full((2,), 1j, dtype=xp.float64)
    with pytest.raises(TypeError):
        xp.arange(1j)
    with pytest.raises(TypeError):
        xp.clip(xp.asarray([1.0, 2.0]), 1j)
    z[0] = 5j
    assert z.to_numpy()[0] == 5j


def test_min_and_argmin_of_uint64_reach_the_top_of_the_range():
    # The minimum's identity for uint64, 2^64 - 1, is no IR literal: min(x) is computed as
    # ~max(~x). Values above 2^63 and the top value itself, along each axis and over all.
    a = np.array([[5, 2**64 - 1, 2**63 + 7], [2**63, 3, 2**64 - 1], [2**64 - 1, 2**64 - 1, 2**64 - 1]], dtype=np.uint64)
    x = xp.asarray(a)
    for axis in (None, 0, 1):
        for f in ("min", "max", "argmin", "argmax"):
            got, want = np.asarray(getattr(xp, f)(x, axis=axis)), getattr(np, f)(a, axis=axis)
            assert np.array_equal(got, want) and got.dtype == np.asarray(want).dtype, (f, axis, got, want)
    assert np.asarray(xp.min(x, axis=1, keepdims=True)).shape == (3, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_argmax_and_argmin_of_rows_across_the_vector_blocks(dtype):
    # The native argmax/argmin of a row folds whole blocks of 4 vectors of the target's lanes
    # (16 float lanes with AVX-512, 8 with AVX2, ...), then the rest in order: rows shorter
    # than a block, one block, a block and one, several blocks and a tail. Ties (the first
    # index wins, in any lane and across blocks), -inf and the extreme values of the type.
    rng = np.random.default_rng(7)
    for n in (1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257, 1000):
        a = (rng.integers(-50, 50, size=(5, n)) if np.dtype(dtype).kind == "i" else rng.standard_normal((5, n))).astype(dtype)
        if n > 3:
            a[1, [n // 3, n - 1]] = a[1].max() + 1  # a tie between a block and the tail
            a[2, :] = a[2, 0]  # all equal: index 0
        info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
        a[3, n // 2] = info.max
        a[4, n // 2] = info.min
        if np.dtype(dtype).kind == "f":
            a[0, n - 1] = -np.inf
        x = xp.asarray(a)
        for f in ("argmax", "argmin"):
            got, want = np.asarray(getattr(xp, f)(x, axis=1)), getattr(np, f)(a, axis=1)
            assert np.array_equal(got, want), (dtype, n, f, got, want)

def test_an_axis_out_of_range_is_an_axis_error_both_index_and_value_error():
    x = xp.ones((2, 3))
    for call in (lambda: xp.expand_dims(x, axis=3), lambda: xp.expand_dims(x, axis=-4),
                 lambda: xp.sum(x, axis=2), lambda: xp.argmax(x, axis=-3)):
        with pytest.raises(strata.AxisError, match="out of range") as e:
            call()
        assert isinstance(e.value, IndexError) and isinstance(e.value, ValueError)
    assert np.asarray(xp.expand_dims(x, axis=2)).shape == (2, 3, 1)
    assert np.asarray(xp.expand_dims(x, axis=-3)).shape == (1, 2, 3)


def test_complex_expm1_of_signed_zeros_is_positive_zero():
    # The array API's special case: real(x) +0 or -0 with imag(x) +0 gives 0 + 0j.
    for dtype in (np.complex64, np.complex128):
        a = np.array([complex(-0.0, 0.0), complex(0.0, 0.0), complex(-0.0, -0.0), 1e-3 + 0.5j], dtype=dtype)
        got = np.asarray(xp.expm1(xp.asarray(a)))
        assert not np.signbit(got.real[:3]).any(), got
        assert np.allclose(got[3], np.expm1(1e-3) * np.cos(0.5) - 2 * np.sin(0.25) ** 2 + 1j * np.exp(1e-3) * np.sin(0.5))


def test_a_product_of_centered_matrices_equals_numpy():
    # A covariance as array-api-extra computes it: the centered matrix is kept in a temporary
    # (stored as x is, rows outermost) so that the product runs as a GEMM (strata-codegen
    # extract.rs, the GEMM rule); small and large, float64 and float32, against numpy.
    rng = np.random.default_rng(11)
    for rows, cols, dtype, rtol in ((3000, 40, np.float64, 1e-10), (7, 5, np.float64, 1e-12), (2500, 33, np.float32, 2e-4)):
        a = rng.standard_normal((rows, cols)).astype(dtype)
        x = xp.asarray(a)
        m = xp.mean(x.T, axis=1, keepdims=True)
        c = x.T - m
        got = np.asarray((c @ c.T) / (rows - 1))
        centered = a.T - a.T.mean(axis=1, keepdims=True)
        want = centered @ centered.T / (rows - 1)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("rows,inner", [(0, 70), (1, 64), (5, 63), (37, 64), (300, 65), (129, 200)])
def test_folds_of_products_against_numpy(rows, inner, dtype):
    # A fold over a matrix product's points (its sum, maximum, trace, a row's sums): the
    # product's fold runs first in a kernel of its own when it is long enough (64 steps, pass
    # `materialize-nested-folds`), nested otherwise; and where its temporary would outgrow the
    # operands (an outer product of two 64-column factors) it stays nested too.
    rng = np.random.default_rng(rows * 1000 + inner)
    if np.dtype(dtype).kind == "i":
        a = rng.integers(-9, 10, (rows, inner)).astype(dtype)
        x = rng.integers(-9, 10, inner).astype(dtype)
        b = rng.integers(-9, 10, (inner, 3)).astype(dtype)
    else:
        a = rng.standard_normal((rows, inner)).astype(dtype)
        x = rng.standard_normal(inner).astype(dtype)
        b = rng.standard_normal((inner, 3)).astype(dtype)
    tol = dict(rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-3 if dtype == np.float32 else 1e-9)
    A, X, B = xp.asarray(a), xp.asarray(x), xp.asarray(b)
    np.testing.assert_allclose(float(xp.sum(A @ X)), np.sum(a @ x), **tol)
    np.testing.assert_allclose(xp.sum(A @ B, axis=0).to_numpy(), np.sum(a @ b, axis=0), **tol)
    np.testing.assert_allclose(float(xp.sum(A @ B)), np.sum(a @ b), **tol)
    np.testing.assert_allclose(float(xp.vecdot(xp.sum(A @ B, axis=1), xp.sum(A @ B, axis=1))),
                               np.sum((a @ b).sum(axis=1) ** 2), **tol)
    if rows:
        # Maxima are not sums: an outer fold whose steps are not annihilated by zero.
        np.testing.assert_allclose(float(xp.max(A @ X)), np.max(a @ x), **tol)
        np.testing.assert_allclose(float(xp.min(A @ B)), np.min(a @ b), **tol)
        sq = a[: min(rows, inner)]
        np.testing.assert_allclose(float(xp.linalg.trace(xp.asarray(sq) @ xp.asarray(sq.T))), np.trace(sq @ sq.T), **tol)
        # The outer product of two long factors: a temporary larger than both stays nested.
        np.testing.assert_allclose(float(xp.sum(A @ A.T)), np.sum(a @ a.T), **tol)
