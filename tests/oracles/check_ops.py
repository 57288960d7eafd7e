"""Every interpreted operation against numpy, on small programs written inline.

Usage: python check_ops.py STRATA_BINARY WORKDIR [--backend native]
With `--backend native`, cases the native backend does not compile yet are skipped (and
counted); every other case must match numpy exactly as with the interpreter.
Each case is a Strata program, its inputs (numpy arrays), and a numpy function computing the
expected outputs. Integers must match exactly; floats within rtol=atol=1e-12.
"""

import math
import os
import subprocess
import sys

import numpy as np

RTOL = ATOL = 1e-12
rng = np.random.default_rng(7)
CASES = []


def case(name, program, inputs, expected, entry=None, ulps=None, rtol=None):
    """`ulps`: compare floats in units in the last place of the result's type against a
    float64 `expected` (for functions that are not correctly rounded); `rtol`: compare floats
    within this relative tolerance instead of 1e-12 (single-precision sums, whose rounding
    depends on the order)."""
    CASES.append((name, program, inputs, expected, entry, ulps, rtol))


def randn(*shape):
    return rng.standard_normal(shape)


def randi(lo, hi, *shape, dtype=np.int32):
    return rng.integers(lo, hi, shape).astype(dtype)


# ---- seed 000: elementwise builtins with name-based broadcasting ----------------------------
a, b = randn(4, 3), randn(3)
case(
    "binary_broadcast_by_name",
    """
func @f(%a: tensor<f64, I[0:4], J[0:3]>, %b: tensor<f64, J[0:3]>) -> tensor<(f64, f64, f64, f64, bool), I[0:4], J[0:3]> {
  %p = plus(%a, %b) : tensor<f64, I[0:4], J[0:3]>
  %m = multiplies(%a, %b) : tensor<f64, I[0:4], J[0:3]>
  %d = divides(%a, %b) : tensor<f64, I[0:4], J[0:3]>
  %x = maximum(%a, %b) : tensor<f64, I[0:4], J[0:3]>
  %l = less(%a, %b) : tensor<bool, I[0:4], J[0:3]>
  %t = make_tuple(%p, %m, %d, %x, %l) : tensor<(f64, f64, f64, f64, bool), I[0:4], J[0:3]>
  return %t
}""",
    {"a": a, "b": b},
    lambda a, b: {"f0": a + b, "f1": a * b, "f2": a / b, "f3": np.maximum(a, b), "f4": a < b},
)

x = np.abs(randn(10)) + 0.1
case(
    "unary_math",
    """
func @f(%x: tensor<f64, I[0:10]>) -> tensor<(f64, f64, f64, f64, f64, f64, f64, f64), I[0:10]> {
  %a = sqrt(%x) : tensor<f64, I[0:10]>
  %b = exp(%x) : tensor<f64, I[0:10]>
  %c = log(%x) : tensor<f64, I[0:10]>
  %d = sin(%x) : tensor<f64, I[0:10]>
  %e = cos(%x) : tensor<f64, I[0:10]>
  %f = tanh(%x) : tensor<f64, I[0:10]>
  %g = floor(%x) : tensor<f64, I[0:10]>
  %h = neg(%x) : tensor<f64, I[0:10]>
  %t = make_tuple(%a, %b, %c, %d, %e, %f, %g, %h) : tensor<(f64, f64, f64, f64, f64, f64, f64, f64), I[0:10]>
  return %t
}""",
    {"x": x},
    lambda x: {f"f{i}": v for i, v in enumerate([np.sqrt(x), np.exp(x), np.log(x), np.sin(x), np.cos(x), np.tanh(x), np.floor(x), -x])},
)

# Intervals intersect: x on I[0:8], y on I[3:10] -> I[3:8].
case(
    "interval_intersection",
    """
func @f(%x: tensor<i64, I[0:8]>, %y: tensor<i64, I[3:10]>) -> tensor<i64, I[3:8]> {
  %s = minus(%x, %y) : tensor<i64, I[3:8]>
  return %s
}""",
    {"x": randi(-50, 50, 8, dtype=np.int64), "y": randi(-50, 50, 7, dtype=np.int64)},
    lambda x, y: {"result": x[3:8] - y[0:5]},
)

ia, ib = randi(-100, 100, 6), randi(1, 9, 6)
case(
    "integer_rules",
    """
func @f(%a: tensor<i32, I[0:6]>, %b: tensor<i32, I[0:6]>) -> tensor<(i32, i32, u8, i32, bool), I[0:6]> {
  %q = divides(%a, %b) : tensor<i32, I[0:6]>
  %r = modulo(%a, %b) : tensor<i32, I[0:6]>
  %c = cast(%a, to = u8) : tensor<u8, I[0:6]>
  %big = constant(value = 2147483647) : i32
  %w = plus(%big, %b) : tensor<i32, I[0:6]>
  %e = eq(%a, %b) : tensor<bool, I[0:6]>
  %t = make_tuple(%q, %r, %c, %w, %e) : tensor<(i32, i32, u8, i32, bool), I[0:6]>
  return %t
}""",
    {"a": ia, "b": ib},
    lambda a, b: {
        "f0": (np.trunc(a / b)).astype(np.int32),
        "f1": np.fmod(a, b).astype(np.int32),
        "f2": a.astype(np.uint8),
        "f3": (np.int64(2147483647) + b.astype(np.int64)).astype(np.int32),
        "f4": a == b,
    },
)

c, t, f = rng.random(5) < 0.5, randn(5), randn(5)
case(
    "select_cast",
    """
func @f(%c: tensor<bool, I[0:5]>, %t: tensor<f64, I[0:5]>, %f: tensor<f64, I[0:5]>) -> tensor<(f64, i64), I[0:5]> {
  %s = select(%c, %t, %f) : tensor<f64, I[0:5]>
  %i = cast(%t, to = i64) : tensor<i64, I[0:5]>
  %r = make_tuple(%s, %i) : tensor<(f64, i64), I[0:5]>
  return %r
}""",
    {"c": c, "t": t, "f": f},
    lambda c, t, f: {"f0": np.where(c, t, f), "f1": np.trunc(t).astype(np.int64)},
)

# Transcendental functions over wide f32 ranges, in ulp against float64: the interpreter's libm
# is correctly rounded here; native loops use glibc's vector math (documented: at most 4 ulp).
x = rng.uniform(-80, 80, 8192).astype(np.float32)
p = np.exp(rng.uniform(-80, 80, 8192)).astype(np.float32)
case(
    "transcendentals_f32_within_4_ulp",
    """
func @f(%x: tensor<f32, I[0:8192]>, %p: tensor<f32, I[0:8192]>) -> tensor<(f32, f32, f32, f32, f32, f32), I[0:8192]> {
  %a = exp(%x) : tensor<f32, I[0:8192]>
  %b = log(%p) : tensor<f32, I[0:8192]>
  %c = sin(%x) : tensor<f32, I[0:8192]>
  %d = cos(%x) : tensor<f32, I[0:8192]>
  %e = tan(%x) : tensor<f32, I[0:8192]>
  %g = tanh(%x) : tensor<f32, I[0:8192]>
  %t = make_tuple(%a, %b, %c, %d, %e, %g) : tensor<(f32, f32, f32, f32, f32, f32), I[0:8192]>
  return %t
}""",
    {"x": x, "p": p},
    lambda x, p: dict(zip(["f0", "f1", "f2", "f3", "f4", "f5"], [f(v.astype(np.float64)) for f, v in
                      ((np.exp, x), (np.log, p), (np.sin, x), (np.cos, x), (np.tan, x), (np.tanh, x))])),
    ulps=4,
)

# cbrt (negative values too) and gamma (C's tgamma: poles ±inf at ±0, NaN at negative
# integers, overflow to inf), against numpy's cbrt and Python's math.gamma, in ulp.
def gamma_exact(v):
    def one(x):
        if x == 0.0:
            return math.copysign(math.inf, x)
        if x < 0 and x == math.floor(x):
            return math.nan
        try:
            return math.gamma(x)
        except OverflowError:
            return math.inf
    return np.array([one(float(x)) for x in v])


for t, n in (("f64", np.float64), ("f32", np.float32)):
    g = np.concatenate([rng.uniform(-30, 30, 250), [0.0, -0.0, -3.0, 0.5, 1.0, 180.0, 1e-300]]).astype(n)
    r = np.concatenate([rng.uniform(-1e6, 1e6, 250), [-27.0, 0.0, -0.0, 1e-30, -8.0, 1e30, 2.0]]).astype(n)
    case(
        f"cbrt_gamma_{t}",
        f"""
func @f(%g: tensor<{t}, I[0:257]>, %r: tensor<{t}, I[0:257]>) -> tensor<({t}, {t}), I[0:257]> {{
  %a = gamma(%g) : tensor<{t}, I[0:257]>
  %b = cbrt(%r) : tensor<{t}, I[0:257]>
  %t = make_tuple(%a, %b) : tensor<({t}, {t}), I[0:257]>
  return %t
}}""",
        {"g": g, "r": r},
        lambda g, r: {"f0": gamma_exact(g), "f1": np.cbrt(r.astype(np.float64))},
        ulps=8,
    )

# ---- seed 000: domain builtins --------------------------------------------------------------
case(
    "subset_concat_pos_add_dim",
    """
func @f(%x: tensor<f64, I[-2:4]>, %y: tensor<f64, I[4:7]>) -> tensor<(f64, index), K[0:2], I[-1:6]> {
  %c = concat(%x, %y, dim = I, mode = copy) : tensor<f64, I[-2:7]>
  %s = subset(%c, domain = [I[-1:6]]) : tensor<f64, I[-1:6]>
  %p = pos(%s, dim = I) : tensor<index, I[-1:6]>
  %a = add_dim(%s, dim = K[0:2]) : tensor<f64, K[0:2], I[-1:6]>
  %t = make_tuple(%a, %p) : tensor<(f64, index), K[0:2], I[-1:6]>
  return %t
}""",
    {"x": randn(6), "y": randn(3)},
    lambda x, y: {"f0": np.tile(np.concatenate([x, y])[1:8], (2, 1)), "f1": np.tile(np.arange(-1, 6), (2, 1))},
)

case(
    "concat_positional",
    """
func @f(%a: tensor<3x4xi32>, %b: tensor<3x2xi32>) -> tensor<3x6xi32> {
  %c = concat(%a, %b, dim = _1, mode = copy) : tensor<3x6xi32>
  return %c
}""",
    {"a": randi(0, 9, 3, 4), "b": randi(0, 9, 3, 2)},
    lambda a, b: {"result": np.concatenate([a, b], axis=1)},
)

# ---- seed 000: neighbor tables with skip values, reduce, scan -------------------------------
table = np.array([[0, 2, -1], [1, -1, -1], [3, 0, 2], [-1, -1, -1]], dtype=np.int32)  # C2V
vals = randn(4)
case(
    "neighbors_skip_values",
    """
func @add(%acc: tensor<f64, C[0:4]>, %x: tensor<f64, C[0:4]>) -> tensor<f64, C[0:4]> {
  %s = plus(%acc, %x) : tensor<f64, C[0:4]>
  return %s
}
func @f(%v: tensor<f64, V[0:4]>, %c2v: tensor<i32, C[0:4], NB_V[0:3]>) -> tensor<(f64, f64, bool, f64), C[0:4]> {
  %n = shift_init(%v, %c2v) : tensor<f64, C[0:4], NB_0[0:3]>
  %s = reduce(@add, %n, init = 0.0) : tensor<f64, C[0:4]>
  %first = shift_apply(%n, neighbor = 0) : tensor<f64, C[0:4]>
  %second = unstructured_shift(%v, %c2v, neighbor = 1) : tensor<f64, C[0:4]>
  %ok = can_deref(%second) : tensor<bool, C[0:4]>
  %zero = constant(value = 0.0) : f64
  %has_first = can_deref(%first) : tensor<bool, C[0:4]>
  %first_or_0 = select(%has_first, %first, %zero) : tensor<f64, C[0:4]>
  %second_or_0 = select(%ok, %second, %zero) : tensor<f64, C[0:4]>
  %t = make_tuple(%s, %first_or_0, %ok, %second_or_0) : tensor<(f64, f64, bool, f64), C[0:4]>
  return %t
}""",
    {"v": vals, "c2v": table},
    lambda v, c2v: {
        "f0": np.where(c2v >= 0, v[np.maximum(c2v, 0)], 0.0).sum(axis=1),
        "f1": np.where(c2v[:, 0] >= 0, v[np.maximum(c2v[:, 0], 0)], 0.0),
        "f2": c2v[:, 1] >= 0,
        "f3": np.where(c2v[:, 1] >= 0, v[np.maximum(c2v[:, 1], 0)], 0.0),
    },
)

case(
    "scan_both_directions",
    """
func @step(%s: tensor<f64, I[0:3]>, %x: tensor<f64, I[0:3]>) -> tensor<f64, I[0:3]> {
  %n = plus(%s, %x) : tensor<f64, I[0:3]>
  return %n
}
func @f(%x: tensor<f64, I[0:3], K[0:6]>) -> tensor<(f64, f64), I[0:3], K[0:6]> {
  %fw = scan(@step, %x, dim = K, forward = true, init = 1.0) : tensor<f64, I[0:3], K[0:6]>
  %bw = scan(@step, %x, dim = K, forward = false, init = 0.0) : tensor<f64, I[0:3], K[0:6]>
  %t = make_tuple(%fw, %bw) : tensor<(f64, f64), I[0:3], K[0:6]>
  return %t
}""",
    {"x": randn(3, 6)},
    lambda x: {"f0": 1.0 + np.cumsum(x, axis=1), "f1": np.cumsum(x[:, ::-1], axis=1)[:, ::-1]},
)

# ---- seed 002: structured core --------------------------------------------------------------
MAC = """
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = multiplies(%a, %b) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
"""
A, B, C0 = randn(4, 5), randn(5, 3), randn(4, 3)
case(
    "map_reduce_einsum_and_init",
    MAC
    + """
func @f(%a: tensor<4x5xf64>, %b: tensor<5x3xf64>, %c: tensor<4x3xf64>) -> tensor<(f64, f64), _0[0:4], _1[0:3]> {
  %p = map_reduce(@mac, %a, %b, init = 0.0, einsum = "ik,kj->ij") : tensor<4x3xf64>
  %q = map_reduce(@mac, %a, %b, init = %c, einsum = "ik,kj->ij") : tensor<4x3xf64>
  %t = make_tuple(%p, %q) : tensor<(f64, f64), _0[0:4], _1[0:3]>
  return %t
}""",
    {"a": A, "b": B, "c": C0},
    lambda a, b, c: {"f0": a @ b, "f1": c + a @ b},
)

S = randn(4, 4)
case(
    "map_reduce_trace_and_rowsum",
    """
func @add(%acc: f64, %x: f64) -> f64 {
  %s = plus(%acc, %x) : f64
  return %s
}
func @f(%s: tensor<4x4xf64>) -> tensor<(f64, f64), _0[0:4]> {
  %tr = map_reduce(@add, %s, init = 0.0, einsum = "ii->") : tensor<f64>
  %rs = map_reduce(@add, %s, init = 0.0, einsum = "ij->i") : tensor<4xf64>
  %t = make_tuple(%rs, %tr) : tensor<(f64, f64), _0[0:4]>
  return %t
}""",
    {"s": S},
    lambda s: {"f0": s.sum(axis=1), "f1": np.full(4, np.trace(s))},
)

case(
    "map_reduce_aff_window_and_transpose",
    """
func @add(%acc: f64, %x: f64) -> f64 {
  %s = plus(%acc, %x) : f64
  return %s
}
func @f(%x: tensor<10xf64>, %m: tensor<3x5xf64>) -> tensor<(f64, f64), _0[0:8]> {
  %w = map_reduce_aff(@add, %x, init = 0.0, domain = [8, 3], outputs = 1, shape = [8], out_map = (d0, d1) -> (d0), maps = [(d0, d1) -> (d0 + d1)]) : tensor<8xf64>
  %t = map_reduce_aff(@add, %m, init = 0.0, domain = [3, 5], outputs = 2, shape = [5, 3], out_map = (d0, d1) -> (d1, d0), maps = [(d0, d1) -> (d0, d1)]) : tensor<5x3xf64>
  %c = collapse_shape(%t, groups = [[0, 1]], mode = copy) : tensor<15xf64>
  %h = subset(%c, domain = [_0[0:8]]) : tensor<8xf64>
  %r = make_tuple(%w, %h) : tensor<(f64, f64), _0[0:8]>
  return %r
}""",
    {"x": randn(10), "m": randn(3, 5)},
    lambda x, m: {"f0": np.convolve(x, np.ones(3), "valid"), "f1": m.T.ravel()[:8]},
)

P, Q = randn(2, 3, 4), randn(2, 4, 5)
case(
    "dot_general_batched",
    """
func @f(%p: tensor<2x3x4xf64>, %q: tensor<2x4x5xf64>) -> tensor<2x3x5xf64> {
  %r = dot_general(%p, %q, ring = plus_times, lhs_contract = [2], rhs_contract = [1], lhs_batch = [0], rhs_batch = [0]) : tensor<2x3x5xf64>
  return %r
}""",
    {"p": P, "q": Q},
    lambda p, q: {"result": np.einsum("bij,bjk->bik", p, q)},
)

D = np.abs(randn(5, 5))
case(
    "product_2d_rings",
    """
func @fmax(%a: f64, %b: f64) -> f64 {
  %m = maximum(%a, %b) : f64
  return %m
}
func @fmul(%a: f64, %b: f64) -> f64 {
  %m = multiplies(%a, %b) : f64
  return %m
}
ring @viterbi<f64>(zero = 0.0, add = @fmax, mul = @fmul)
func @f(%d: tensor<5x5xf64>, %r: tensor<5x5xbool>) -> tensor<(f64, f64, f64, bool), _0[0:5], _1[0:5]> {
  %mp = product_2d(%d, %d, ring = min_plus) : tensor<5x5xf64>
  %xp = product_2d(%d, %d, ring = max_plus) : tensor<5x5xf64>
  %vi = product_2d(%d, %d, ring = @viterbi) : tensor<5x5xf64>
  %re = product_2d(%r, %r, ring = or_and) : tensor<5x5xbool>
  %t = make_tuple(%mp, %xp, %vi, %re) : tensor<(f64, f64, f64, bool), _0[0:5], _1[0:5]>
  return %t
}""",
    {"d": D, "r": rng.random((5, 5)) < 0.3},
    lambda d, r: {
        "f0": (d[:, :, None] + d[None, :, :]).min(axis=1),
        "f1": (d[:, :, None] + d[None, :, :]).max(axis=1),
        "f2": (d[:, :, None] * d[None, :, :]).max(axis=1),
        "f3": (r.astype(int) @ r.astype(int)) > 0,
    },
)

case(
    "transpose_broadcast_map_get_set",
    """
func @axpy(%a: f64, %x: f64, %y: f64) -> f64 {
  %ax = multiplies(%a, %x) : f64
  %r = plus(%ax, %y) : f64
  return %r
}
func @f(%x: tensor<2x3x4xf64>, %row: tensor<1x4xf64>, %v: tensor<3xf64>, %m: tensor<3x4xf64>, %i: index, %j: index) -> tensor<(f64, f64), _0[0:3], _1[0:4]> {
  %t = transpose(%x, perm = [1, 2, 0]) : tensor<3x4x2xf64>
  %rb = broadcast(%row, shape = [3, 4]) : tensor<3x4xf64>
  %vb = broadcast_in_dim(%v, shape = [3, 4], dims = [0]) : tensor<3x4xf64>
  %y = map(@axpy, %rb, %vb, %m) : tensor<3x4xf64>
  %e = get(%y, %i, %j) : f64
  %two = constant(value = 2.0) : f64
  %e2 = multiplies(%e, %two) : f64
  %z = set(%y, %i, %j, %e2) : tensor<3x4xf64>
  %s = subset(%t, domain = [_0[0:3], _1[0:4]]) : tensor<3x4x2xf64>
  %g = unpack(%p) : tensor<3x4xf64>
  %r = make_tuple(%z, %z) : tensor<(f64, f64), _0[0:3], _1[0:4]>
  return %r
}""",
    None,
    None,
)

CASES.pop()  # the case above is replaced by the two below (kept short for readability)

X3, ROW, V3, M3 = randn(2, 3, 4), randn(1, 4), randn(3), randn(3, 4)
case(
    "transpose_broadcast_map",
    """
func @axpy(%a: f64, %x: f64, %y: f64) -> f64 {
  %ax = multiplies(%a, %x) : f64
  %r = plus(%ax, %y) : f64
  return %r
}
func @f(%x: tensor<2x3x4xf64>, %row: tensor<1x4xf64>, %v: tensor<3xf64>, %m: tensor<3x4xf64>) -> tensor<(f64, f64), _0[0:3], _1[0:4], _2[0:2]> {
  %t = transpose(%x, perm = [1, 2, 0]) : tensor<3x4x2xf64>
  %rb = broadcast(%row, shape = [3, 4]) : tensor<3x4xf64>
  %vb = broadcast_in_dim(%v, shape = [3, 4], dims = [0]) : tensor<3x4xf64>
  %y = map(@axpy, %rb, %vb, %m) : tensor<3x4xf64>
  %y3 = broadcast_in_dim(%y, shape = [3, 4, 2], dims = [0, 1]) : tensor<3x4x2xf64>
  %r = make_tuple(%t, %y3) : tensor<(f64, f64), _0[0:3], _1[0:4], _2[0:2]>
  return %r
}""",
    {"x": X3, "row": ROW, "v": V3, "m": M3},
    lambda x, row, v, m: {"f0": x.transpose(1, 2, 0), "f1": np.repeat((row * v[:, None] + m)[:, :, None], 2, axis=2)},
)

G = randn(3, 4)
case(
    "get_set",
    """
func @f(%g: tensor<3x4xf64>) -> tensor<3x4xf64> {
  %i = constant(value = 2) : index
  %j = constant(value = 1) : index
  %e = get(%g, %i, %j) : f64
  %two = constant(value = 2.0) : f64
  %e2 = multiplies(%e, %two) : f64
  %z = set(%g, %j, %i, %e2) : tensor<3x4xf64>
  return %z
}""",
    {"g": G},
    lambda g: {"result": (lambda z: (z.__setitem__((1, 2), 2 * g[2, 1]), z)[1])(g.copy())},
)

# Products large enough for the native backend's runtime GEMM (>= 2^15 multiply-adds per call):
# a batch loop with a transposed left operand, a transposed contraction, and accumulation onto
# a destination (`init = %c`); then row statistics whose sums vectorize.
x, y = randn(8, 64, 16), randn(64, 32)
case(
    "gemm_batched_strided",
    """
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = multiplies(%a, %b) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
func @f(%x: tensor<8x64x16xf64>, %y: tensor<64x32xf64>) -> tensor<8x16x32xf64> {
  %r = map_reduce(@mac, %x, %y, init = 0.0, einsum = "ijk,jl->ikl") : tensor<8x16x32xf64>
  return %r
}""",
    {"x": x, "y": y},
    lambda x, y: {"result": np.einsum("ijk,jl->ikl", x, y)},
    entry="f",
)

a, b, c = randn(64, 32), randn(64, 48), randn(32, 48)
case(
    "gemm_transposed_accumulating",
    """
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = multiplies(%a, %b) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
func @f(%a: tensor<64x32xf64>, %b: tensor<64x48xf64>, %c: tensor<32x48xf64>) -> tensor<32x48xf64> {
  %r = map_reduce_aff(@mac, %a, %b, init = %c, domain = [32, 48, 64], outputs = 2, shape = [32, 48], out_map = (d0, d1, d2) -> (d0, d1), maps = [(d0, d1, d2) -> (d2, d0), (d0, d1, d2) -> (d2, d1)]) : tensor<32x48xf64>
  return %r
}""",
    {"a": a, "b": b, "c": c},
    lambda a, b, c: {"result": c + a.T @ b},
    entry="f",
)

a, b, bias = randn(64, 48), randn(48, 40), randn(40)
case(
    "gemm_with_fused_epilogue",
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs", "gemm_relu_epilogue.strata")).read(),
    {"a": a, "b": b, "bias": bias},
    lambda a, b, bias: {"result": np.maximum(a @ b + bias, 0.0)},
    entry="f",
)

# A row sum and the sum of squared deviations from a centre `%m`.
SUM_AND_SQDEV = """
func @add(%acc: f64, %x: f64) -> f64 {
  %s = plus(%acc, %x) : f64
  return %s
}
func @sqdev(%acc: f64, %x: f64, %m: f64) -> f64 {
  %d = minus(%x, %m) : f64
  %q = multiplies(%d, %d) : f64
  %s = plus(%acc, %q) : f64
  return %s
}
"""

x = randn(16, 128)
case(
    "row_mean_and_variance",
    SUM_AND_SQDEV + """func @f(%x: tensor<f64, R[0:16], C[0:128]>) -> tensor<(f64, f64), R[0:16]> {
  %s = map_reduce(@add, %x, init = 0.0, einsum = "ij->i") : tensor<f64, R[0:16]>
  %n = constant(value = 128.0) : f64
  %m = divides(%s, %n) : tensor<f64, R[0:16]>
  %ss = map_reduce(@sqdev, %x, %m, init = 0.0, einsum = "ij,i->i") : tensor<f64, R[0:16]>
  %v = divides(%ss, %n) : tensor<f64, R[0:16]>
  %t = make_tuple(%m, %v) : tensor<(f64, f64), R[0:16]>
  return %t
}""",
    {"x": x},
    lambda x: {"f0": x.mean(axis=1), "f1": x.var(axis=1)},
    entry="f",
)

# A fold with a tuple accumulator: argmax as (best value, its index), ties keep the first index
# (numpy's rule); values drawn from a few levels so ties occur.
x = rng.integers(0, 5, (6, 40)).astype(np.float32)
case(
    "argmax_tuple_accumulator",
    """
func @step(%acc: (f32, index), %x: f32, %j: index) -> (f32, index) {
  %best = tuple_get(%acc, index = 0) : f32
  %bi = tuple_get(%acc, index = 1) : index
  %gt = greater(%x, %best) : bool
  %v = select(%gt, %x, %best) : f32
  %i = select(%gt, %j, %bi) : index
  %t = make_tuple(%v, %i) : (f32, index)
  return %t
}
func @f(%x: tensor<f32, R[0:6], C[0:40]>) -> tensor<(f32, index), R[0:6]> {
  %j = pos(%x, dim = C) : tensor<index, C[0:40]>
  %r = map_reduce(@step, %x, %j, init = (-inf, 0), einsum = "ij,j->i") : tensor<(f32, index), R[0:6]>
  return %r
}""",
    {"x": x},
    lambda x: {"f0": x.max(axis=1), "f1": x.argmax(axis=1)},
    entry="f",
)

# The same fold with NaNs: `greater` is false for NaN, so NaNs are never chosen (unlike
# np.argmax, which returns the first NaN): the oracle is the argmax with NaNs replaced by -inf.
x = rng.integers(0, 5, (6, 40)).astype(np.float32)
x[rng.random(x.shape) < 0.2] = np.nan
case(
    "argmax_tuple_accumulator_skips_nan",
    CASES[-1][1],
    {"x": x},
    lambda x: {"f0": np.nanmax(x, axis=1), "f1": np.where(np.isnan(x), -np.inf, x).argmax(axis=1)},
    entry="f",
)

# Rows longer than the native backend's vector blocks (64 steps in 4 vectors of 16 lanes, then
# a tail of 9): ties across lanes and blocks, NaNs, a row never beating the initial state, a
# maximum in the tail; argmin of a computed value (|x - 2|, not a plain load); int32 values.
x = rng.integers(0, 7, (6, 201)).astype(np.float32)
x[1, :] = -np.inf
x[2, rng.random(201) < 0.3] = np.nan
x[3, 195] = 100.0
x[4, [17, 80, 150]] = 50.0
case(
    "argmax_vector_blocks_and_tail",
    CASES[-1][1].replace("C[0:40]", "C[0:201]").replace("R[0:6]", "R[0:6]"),
    {"x": x},
    lambda x: {"f0": np.nanmax(np.where(np.isneginf(x), -np.inf, x), axis=1),
               "f1": np.where(np.isnan(x), -np.inf, x).argmax(axis=1)},
    entry="f",
)
xi = rng.integers(-3, 4, (5, 130)).astype(np.int32)
case(
    "argmin_of_a_computed_value_int32",
    """
func @step(%acc: (i32, index), %x: i32, %j: index) -> (i32, index) {
  %best = tuple_get(%acc, index = 0) : i32
  %bi = tuple_get(%acc, index = 1) : index
  %lt = less(%x, %best) : bool
  %v = select(%lt, %x, %best) : i32
  %i = select(%lt, %j, %bi) : index
  %t = make_tuple(%v, %i) : (i32, index)
  return %t
}
func @f(%x: tensor<i32, R[0:5], C[0:130]>) -> tensor<(i32, index), R[0:5]> {
  %j = pos(%x, dim = C) : tensor<index, C[0:130]>
  %d = abs(minus(%x, 2))
  %r = map_reduce(@step, %d, %j, init = (1000, 0), einsum = "ij,j->i") : tensor<(i32, index), R[0:5]>
  return %r
}""",
    {"x": xi},
    lambda x: {"f0": np.abs(x - 2).min(axis=1).astype(np.int32), "f1": np.abs(x - 2).argmin(axis=1)},
    entry="f",
)

# Sums of squared deviations from a row's own mean: the native backend reads each row once
# (emit_c/moments.rs). Rows far from zero (1e8 + noise: the one-pass shift keeps them exact),
# constant, with NaN and with inf; 1000 columns leave a tail after the vector chunks.
VAR_PROGRAM = SUM_AND_SQDEV + """func @f(%x: tensor<f64, R[0:6], C[0:1000]>) -> tensor<f64, R[0:6]> {
  %s = map_reduce(@add, %x, init = 0.0, einsum = "ij->i") : tensor<f64, R[0:6]>
  %m = divides(%s, 1000.0) : tensor<f64, R[0:6]>
  %ss = map_reduce(@sqdev, %x, %m, init = 0.0, einsum = "ij,i->i") : tensor<f64, R[0:6]>
  %v = divides(%ss, 1000.0) : tensor<f64, R[0:6]>
  return %v
}"""
xv = randn(6, 1000)
xv[1] = 1e8 + randn(1000)
xv[2] = 3.25
xv[3, 500] = np.nan
xv[4, 999] = np.inf
xv[5, 0] = -np.inf
case("variance_in_one_pass_f64", VAR_PROGRAM, {"x": xv}, lambda x: {"result": np.var(x, axis=1) if np.isfinite(x).all() else np.array([r.var() if np.isfinite(r).all() else np.nan for r in x])})
# The deviation of a computed value (2x + 1), centred on the mean plus one, written (c - x)²:
# the one-pass form keeps n·(mean - c)².
case(
    "squared_deviations_of_a_computed_value_about_another_centre",
    SUM_AND_SQDEV.replace("minus(%x, %m)", "minus(%m, %x)") + """func @f(%x: tensor<f64, R[0:4], C[0:333]>) -> tensor<f64, R[0:4]> {
  %y = plus(multiplies(%x, 2.0), 1.0) : tensor<f64, R[0:4], C[0:333]>
  %s = map_reduce(@add, %y, init = 0.0, einsum = "ij->i") : tensor<f64, R[0:4]>
  %m = plus(divides(%s, 333.0), 1.0) : tensor<f64, R[0:4]>
  %ss = map_reduce(@sqdev, %y, %m, init = 0.0, einsum = "ij,i->i") : tensor<f64, R[0:4]>
  return %ss
}""",
    {"x": randn(4, 333) + 50.0},
    lambda x: {"result": (((2 * x + 1) - ((2 * x + 1).mean(axis=1, keepdims=True) + 1)) ** 2).sum(axis=1)},
)
# f32 rows of 4096 (whole vector chunks, no tail) against float64 numpy.
case(
    "variance_in_one_pass_f32",
    VAR_PROGRAM.replace("f64", "f32").replace("C[0:1000]", "C[0:4096]").replace("1000.0", "4096.0"),
    {"x": (randn(6, 4096) * 0.5 + 1e3).astype(np.float32)},
    lambda x: {"result": x.astype(np.float64).var(axis=1)},
    rtol=1e-4,
)

# ---- seed 001: nested tensors ----------------------------------------------------------------
PA, PB = randn(8, 12), randn(12, 8)
case(
    "pack_product_unpack",
    """
func @tile_mac(%acc: tensor<4x4xf64>, %a: tensor<4x4xf64>, %b: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %p = product_2d(%a, %b, ring = plus_times) : tensor<4x4xf64>
  %s = plus(%acc, %p) : tensor<4x4xf64>
  return %s
}
func @f(%a: tensor<8x12xf64>, %b: tensor<12x8xf64>) -> tensor<8x8xf64> {
  %pa = pack(%a, tile = [4, 4]) : tensor<2x3x tensor<4x4xf64>>
  %pb = pack(%b, tile = [4, 4]) : tensor<3x2x tensor<4x4xf64>>
  %acc = constant(value = 0.0) : tensor<2x2x tensor<4x4xf64>>
  %pc = map_reduce_aff(@tile_mac, %pa, %pb, init = %acc, domain = [2, 2, 3], outputs = 2, shape = [2, 2], out_map = (d0, d1, d2) -> (d0, d1), maps = [(d0, d1, d2) -> (d0, d2), (d0, d1, d2) -> (d2, d1)]) : tensor<2x2x tensor<4x4xf64>>
  %c = unpack(%pc) : tensor<8x8xf64>
  return %c
}""",
    {"a": PA, "b": PB},
    lambda a, b: {"result": a @ b},
)

PT = randn(8, 12)


def tile_transpose_oracle(a):
    t = a.T.copy()
    t[0:4, 0:4] = t[8:12, 4:8]
    return {"result": t}


case(
    "tile_map_transpose_get_set",
    """
func @tile_t(%t: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %r = transpose(%t, perm = [1, 0]) : tensor<4x4xf64>
  return %r
}
func @f(%a: tensor<8x12xf64>) -> tensor<12x8xf64> {
  %pa = pack(%a, tile = [4, 4]) : tensor<2x3x tensor<4x4xf64>>
  %mt = map(@tile_t, %pa) : tensor<2x3x tensor<4x4xf64>>
  %tt = transpose(%mt, perm = [1, 0]) : tensor<3x2x tensor<4x4xf64>>
  %i = constant(value = 2) : index
  %j = constant(value = 1) : index
  %k = constant(value = 0) : index
  %g = get(%tt, %i, %j) : tensor<4x4xf64>
  %z = set(%tt, %k, %k, %g) : tensor<3x2x tensor<4x4xf64>>
  %c = unpack(%z) : tensor<12x8xf64>
  return %c
}""",
    {"a": PT},
    tile_transpose_oracle,
)

# ---- seed 004: beyond rectangular ------------------------------------------------------------
GM, GI = randn(6, 5), np.array([[4], [0], [4], [2]], dtype=np.int64)
case(
    "gather_scatter_reshape",
    """
func @f(%m: tensor<6x5xf64>, %idx: tensor<4x1xindex>) -> tensor<(f64, f64), _0[0:6], _1[0:5]> {
  %g = gather(%m, %idx, coordinates = [0], mode = copy) : tensor<4x5xf64>
  %n = neg(%g) : tensor<4x5xf64>
  %s = scatter(%n, %m, %idx, coordinates = [0], mode = copy) : tensor<6x5xf64>
  %c = collapse_shape(%m, groups = [[0, 1]], mode = view) : tensor<30xf64>
  %e = expand_shape(%c, groups = [[0, 1]], shape = [6, 5], mode = view) : tensor<6x5xf64>
  %t = make_tuple(%s, %e) : tensor<(f64, f64), _0[0:6], _1[0:5]>
  return %t
}""",
    {"m": GM, "idx": GI},
    lambda m, idx: {"f0": (lambda s: (s.__setitem__(idx[:, 0], -m[idx[:, 0]]), s)[1])(m.copy()), "f1": m},
)

case(
    "convert_reorders_levels",
    """
func @f(%a: tensor<f64, Row[0:3], Col[0:4]>) -> tensor<f64, Col[0:4], Row[0:3]> {
  %c = convert(%a, mode = copy) : tensor<f64, Col[0:4], Row[0:3]>
  return %c
}""",
    {"a": randn(3, 4)},
    lambda a: {"result": a.T},
)

case(
    "distribute_collect",
    """
func @f(%x: tensor<f64, I[0:10]>) -> tensor<f64, I[0:10]> {
  %d = distribute(%x, ranks = 3, dim = I) : tensor<f64, I[0:10] block, team = 3>
  %s = plus(%d, %d) : tensor<f64, I[0:10] block, team = 3>
  %c = collect(%s) : tensor<f64, I[0:10]>
  return %c
}""",
    {"x": randn(10)},
    lambda x: {"result": 2 * x},
)

# ---- data exchange edge cases ---------------------------------------------------------------
case(
    "empty_interval",
    """
func @f(%x: tensor<f64, I[3:3], J[0:2]>) -> tensor<f64, I[3:3], J[0:2]> {
  %y = exp(%x) : tensor<f64, I[3:3], J[0:2]>
  return %y
}""",
    {"x": np.zeros((0, 2))},
    lambda x: {"result": np.exp(x)},
)

FO = np.asfortranarray(randn(3, 4))
case(
    "fortran_order_input",
    """
func @f(%x: tensor<f64, I[0:3], J[0:4]>) -> tensor<f64, I[0:3], J[0:4]> {
  %two = constant(value = 2.0) : f64
  %y = multiplies(%two, %x) : tensor<f64, I[0:3], J[0:4]>
  return %y
}""",
    {"x": FO},
    lambda x: {"result": 2.0 * np.ascontiguousarray(x)},
)

case(
    "big_endian_input",
    """
func @f(%x: tensor<i32, I[0:5]>) -> tensor<i32, I[0:5]> {
  %y = plus(%x, %x) : tensor<i32, I[0:5]>
  return %y
}""",
    {"x": randi(-1000, 1000, 5).astype(">i4")},
    lambda x: {"result": (2 * x).astype(np.int32)},
)

for dt, strata_ty in [("bool", "bool"), ("int8", "i8"), ("int16", "i16"), ("int64", "i64"), ("uint8", "u8"),
                      ("uint16", "u16"), ("uint32", "u32"), ("uint64", "u64"), ("float32", "f32"), ("int64", "index")]:
    arr = (rng.random(6) < 0.5) if dt == "bool" else rng.integers(0, 100, 6).astype(dt)
    case(
        f"dtype_round_trip_{strata_ty}",
        f"""
func @f(%x: tensor<{strata_ty}, I[0:2], J[-1:2]>) -> tensor<{strata_ty}, I[0:2], J[-1:2]> {{
  return %x
}}""",
        {"x": arr.reshape(2, 3)},
        lambda x: {"result": x},
    )


BACKEND = "interp"
SKIPPED = []


def ulp_error(got, exact):
    """|got - exact| in units in the last place of got's type (at the rounded exact value)."""
    exact = np.asarray(exact, dtype=np.float64)
    rounded = exact.astype(got.dtype)
    finite = np.isfinite(rounded)
    if not np.array_equal(np.isfinite(got), finite) or not np.array_equal(np.isnan(got), np.isnan(rounded)):
        return np.inf
    spacing = np.spacing(np.abs(rounded[finite])).astype(np.float64)
    return float((np.abs(got[finite].astype(np.float64) - exact[finite]) / spacing).max(initial=0.0))


def run_case(strata, work, name, program, inputs, expected, entry, ulps, rtol):
    path = os.path.join(work, f"{name}.strata")
    with open(path, "w") as fh:
        fh.write(program.strip() + "\n")
    cmd = [strata, "run", path, "--entry", entry or "f", "--backend", BACKEND]
    for n, arr in inputs.items():
        p = os.path.join(work, f"{name}_{n}.npy")
        np.save(p, arr)
        cmd += ["--arg", f"{n}={p}"]
    want = expected(**inputs)
    tuple_out = set(want) != {"result"}
    out = os.path.join(work, f"{name}_out" + (".npz" if tuple_out else ".npy"))
    cmd += ["--out", f"result={out}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 and BACKEND == "native" and ("does not compile" in proc.stderr or "does not handle" in proc.stderr):
        SKIPPED.append(name)
        return None
    if proc.returncode != 0:
        return f"{name}: strata run failed:\n{proc.stderr}"
    got = np.load(out)
    for field, w in want.items():
        g = got[field] if tuple_out else got
        w = np.asarray(w)
        if g.shape != w.shape:
            return f"{name}.{field}: shape {g.shape}, expected {w.shape}"
        if ulps is not None:
            err = ulp_error(g, w)
            if err > ulps:
                return f"{name}.{field}: {err:.2f} ulp from the exact result (at most {ulps} allowed)"
            continue
        tol = dict(rtol=rtol, atol=0.0) if rtol is not None else dict(rtol=RTOL, atol=ATOL)
        ok = np.array_equal(g, w) if w.dtype.kind in "biu" else np.allclose(g, w, equal_nan=True, **tol)
        if not ok:
            return f"{name}.{field}: mismatch\n got {g.ravel()[:10]}\nwant {w.ravel()[:10]}"
    return None


def main():
    global BACKEND
    strata, work = sys.argv[1], sys.argv[2]
    if "--backend" in sys.argv:
        BACKEND = sys.argv[sys.argv.index("--backend") + 1]
    os.makedirs(work, exist_ok=True)
    failed = 0
    for name, program, inputs, expected, entry, ulps, rtol in CASES:
        err = run_case(strata, work, name, program, inputs, expected, entry, ulps, rtol)
        if err:
            failed += 1
            print("FAIL", err)
        elif name in SKIPPED:
            print("skip", name, f"(not compiled by the {BACKEND} backend yet)")
        else:
            print("ok", name)
    print(f"{len(CASES) - failed - len(SKIPPED)} passed, {failed} failed, {len(SKIPPED)} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
