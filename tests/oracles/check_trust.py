"""Issue 31's wrong results, crashes and disagreements, against numpy and hand-derived values.

Usage: python check_trust.py STRATA_BINARY WORKDIR [NAME_FILTER]

Every case runs on both backends (`--backend interp` and `--backend native`) and must give the
numpy answer or the documented error; each would have failed before its fix (nested neighbor
reductions sharing one fold variable, folds over a wider neighbor interval than an operand has,
an empty neighbor interval, unchecked ragged runs and CSR pointers, element counts overflowing,
tables into an empty source or holding unsigned 2^64-1, GEMM on infinities). Random meshes
with skipped neighbors everywhere check the nested reductions with counting, non-annihilating
and summing payloads, through calls too. The harness (saving inputs, comparing outputs) is
check_sparse.py's.
"""

import sys

import numpy as np
import scipy.sparse as sp

from check_sparse import main_with, case_list, ragged_of, ragged2_of

CASES = case_list()
case = CASES.add
rng = np.random.default_rng(31)


# ---- nested neighbor reductions (V2E of an E2V reduction), skips everywhere ------------------
def nested_program(nv, ne, nbv, nbe):
    return f"""
!V = tensor<f64, Vertex[0:{nv}]>
func @add(%acc: f64, %x: f64) -> f64 {{
  return plus(%acc, %x)
}}
func @count(%acc: f64, %x: f64) -> f64 {{
  return plus(%acc, 1.0)
}}
func @biggest(%acc: f64, %x: f64) -> f64 {{
  return maximum(%acc, %x)
}}
func @edge_sum(%vf: !V, %e2v: tensor<i32, Edge[0:{ne}], NB_Vertex[0:{nbv}]>) -> tensor<f64, Edge[0:{ne}]> {{
  return reduce(@add, shift_init(%vf, %e2v), init = 0.0)
}}
program @nested(%sum: out !V, %cnt: out !V, %max: out !V, %called: out !V, %scaled: out !V, %vf: !V, %e2v: tensor<i32, Edge[0:{ne}], NB_Vertex[0:{nbv}]>, %v2e: tensor<i32, Vertex[0:{nv}], NB_Edge[0:{nbe}]>) {{
  %te = reduce(@add, shift_init(%vf, %e2v), init = 0.0)
  %sum <- reduce(@add, shift_init(%te, %v2e), init = 0.0)
  %cnt <- reduce(@count, shift_init(%te, %v2e), init = 0.0)
  %max <- reduce(@biggest, shift_init(%te, %v2e), init = -1000.0)
  %called <- reduce(@add, shift_init(call(@edge_sum, %vf, %e2v), %v2e), init = 0.0)
  %scaled <- reduce(@add, shift_init(multiplies(%te, 2.0), %v2e), init = 0.0)
}}
"""


def nested_oracle(vf, e2v, v2e):
    te = np.where(e2v >= 0, vf[np.maximum(e2v, 0)], 0.0).sum(1)
    skip = v2e < 0
    g = te[np.maximum(v2e, 0)]
    return {
        "sum": np.where(skip, 0.0, g).sum(1),
        "cnt": (~skip).sum(1).astype(np.float64),
        "max": np.where(skip, -1000.0, g).max(1, initial=-1000.0),
        "called": np.where(skip, 0.0, g).sum(1),
        "scaled": np.where(skip, 0.0, 2 * g).sum(1),
    }


vf = np.array([1.0, 10.0, 100.0])
e2v = np.array([[0, 1], [1, 2]], dtype=np.int32)
v2e = np.array([[0, 1], [1, 0], [0, 0]], dtype=np.int32)
expected = nested_oracle(vf, e2v, v2e)
assert expected["sum"].tolist() == [121.0, 121.0, 22.0]  # the hand-derived answer
case("n1_nested_reduce", nested_program(3, 2, 2, 2), {"vf": vf, "e2v": e2v, "v2e": v2e}, expected, "nested")
for seed in range(6):
    r = np.random.default_rng(seed)
    nv, ne, nbv, nbe = int(r.integers(1, 9)), int(r.integers(1, 9)), int(r.integers(1, 4)), int(r.integers(1, 5))
    vf = np.round(r.standard_normal(nv) * 10, 1)
    e2v = r.integers(-1, nv, (ne, nbv)).astype(np.int32)
    v2e = r.integers(-1, ne, (nv, nbe)).astype(np.int32)
    if seed == 0:
        v2e[:] = -1  # every neighbor skipped
    case(f"nested_random_{seed}", nested_program(nv, ne, nbv, nbe), {"vf": vf, "e2v": e2v, "v2e": v2e},
         nested_oracle(vf, e2v, v2e), "nested")

# ---- a fold over the neighbors every operand has ---------------------------------------------
MAC = """
func @mac(%acc: f64, %a: f64, %c: f64) -> f64 {
  return plus(%acc, multiplies(%a, %c))
}
func @add(%acc: f64, %a: f64) -> f64 {
  return plus(%acc, %a)
}
func @narrow(%x: tensor<f64, Edge[0:4]>, %sign: tensor<f64, Vertex[0:2], NB_0[0:3]>, %v2e: tensor<i32, Vertex[0:2], NB_Edge[0:4]>) -> tensor<f64, Vertex[0:2]> {
  return reduce(@mac, shift_init(%x, %v2e), %sign, init = 0.0)
}
func @inner(%x: tensor<f64, Edge[0:4]>, %v2e: tensor<i32, Vertex[0:2], NB_Edge[0:4]>, %w: tensor<f64, NB_0[1:3]>) -> tensor<f64, Vertex[0:2]> {
  return reduce(@mac, shift_init(%x, %v2e), %w, init = 0.0)
}
func @subset(%x: tensor<f64, Edge[0:4]>, %v2e: tensor<i32, Vertex[0:2], NB_Edge[0:4]>) -> tensor<f64, Vertex[0:2]> {
  return reduce(@add, subset(shift_init(%x, %v2e), domain = [NB_0[1:3]]), init = 0.0)
}
func @empty(%x: tensor<f64, Edge[0:4]>, %sign: tensor<f64, Vertex[0:2], NB_0[2:2]>, %v2e: tensor<i32, Vertex[0:2], NB_Edge[0:4]>) -> tensor<f64, Vertex[0:2]> {
  return reduce(@mac, shift_init(%x, %v2e), %sign, init = 0.0)
}
"""
x4 = np.array([1.0, 10.0, 100.0, 1000.0])
t4 = np.array([[0, 1, 2, 3], [3, -1, 2, 1]], dtype=np.int32)
sign = np.array([[1.0, 2.0, 3.0], [-1.0, 1.0, 2.0]])
g = np.where(t4 >= 0, x4[np.maximum(t4, 0)], 0.0)
case("r1_fold_intersection", MAC, {"x": x4, "sign": sign, "v2e": t4}, {"result": (g[:, :3] * sign).sum(1)}, "narrow")
w13 = np.array([5.0, 7.0])
case("r1c_weight_inner", MAC, {"x": x4, "v2e": t4, "w": w13}, {"result": (g[:, 1:3] * w13).sum(1)}, "inner")
case("r1c_subset", MAC, {"x": x4, "v2e": t4}, {"result": g[:, 1:3].sum(1)}, "subset")
case("r1d_empty_neighbors", MAC, {"x": x4, "sign": np.zeros((2, 0)), "v2e": t4}, {"result": np.zeros(2)}, "empty")

WIDE = """
func @mac(%acc: f64, %a: f64, %c: f64) -> f64 {
  return plus(%acc, multiplies(%a, %c))
}
func @f(%x: tensor<f64, Edge[0:4]>, %sign: tensor<f64, Vertex[0:1], NB_0[0:1]>, %v2e: tensor<i32, Vertex[0:1], NB_Edge[0:400000]>) -> tensor<f64, Vertex[0:1]> {
  return reduce(@mac, shift_init(%x, %v2e), %sign, init = 0.0)
}
"""
case("r1b_wide_table", WIDE, {"x": np.array([3.0, 1, 1, 1]), "sign": np.full((1, 1), 2.0), "v2e": np.zeros((1, 400000), np.int32)},
     {"result": np.array([6.0])}, "f")

# ---- tables: an empty source, unsigned entries never the skip value --------------------------
TABLES = """
func @add(%acc: f64, %a: f64) -> f64 {
  return plus(%acc, %a)
}
func @into_empty(%x: tensor<f64, Edge[0:0]>, %v2e: tensor<i32, Vertex[0:2], NB_Edge[0:3]>) -> tensor<f64, Vertex[0:2]> {
  return reduce(@add, shift_init(%x, %v2e), init = 0.0)
}
func @unsigned(%x: tensor<f64, Edge[0:4]>, %v2e: tensor<u64, Vertex[0:2], NB_Edge[0:3]>) -> tensor<f64, Vertex[0:2]> {
  return reduce(@add, shift_init(%x, %v2e), init = 0.0)
}
"""
case("r5_table_into_empty", TABLES, {"x": np.zeros(0), "v2e": np.zeros((2, 3), np.int32)},
     {"error": "outside `Edge[0:0]`"}, "into_empty")
case("r5_all_skipped_into_empty", TABLES, {"x": np.zeros(0), "v2e": -np.ones((2, 3), np.int32)},
     {"result": np.zeros(2)}, "into_empty")
# A bad entry in a row the result never uses is an error on both backends (the whole table of
# a shift is checked, not only the entries a kernel reads).
UNUSED_ROW = """
func @add(%acc: f64, %a: f64) -> f64 {
  return plus(%acc, %a)
}
func @first(%x: tensor<f64, Edge[0:4]>, %v2e: tensor<i32, Vertex[0:2], NB_Edge[0:3]>) -> tensor<f64, Vertex[0:1]> {
  return subset(reduce(@add, shift_init(%x, %v2e), init = 0.0), domain = [Vertex[0:1]])
}
"""
case("table_entry_unused_but_bad", UNUSED_ROW, {"x": x4, "v2e": np.array([[0, 1, -1], [2, 9, 0]], np.int32)},
     {"error": "outside `Edge[0:4]`"}, "first")
case("table_entry_unused_and_good", UNUSED_ROW, {"x": x4, "v2e": np.array([[0, 1, -1], [2, 3, 0]], np.int32)},
     {"result": np.array([11.0])}, "first")
tu = np.array([[0, 1, 2**64 - 1], [2, 3, 0]], dtype=np.uint64)
case("r5_unsigned_all_ones", TABLES, {"x": x4, "v2e": tu}, {"error": "is outside `Edge[0:4]`"}, "unsigned")
tu_ok = np.array([[0, 1, 3], [2, 3, 0]], dtype=np.uint64)
case("r5_unsigned", TABLES, {"x": x4, "v2e": tu_ok}, {"result": x4[tu_ok.astype(np.int64)].sum(1)}, "unsigned")

# ---- storage validated once, for both backends -----------------------------------------------
RAGGED = """
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  return plus(%acc, multiplies(%a, %b))
}
func @scaled(%x: tensor<f64, G[0:2], R[0:8] ragged>) -> tensor<f64, G[0:2], R[0:8] ragged> {
  return multiplies(%x, 2.0)
}
func @spmv(%a: tensor<f64, R[0:3], C[0:3] compressed>, %x: tensor<f64, C[0:3]>) -> tensor<f64, R[0:3]> {
  return map_reduce(@mac, %a, %x, init = 0.0, einsum = "ij,j->i")
}
"""
long = ("ragged", ragged_of([np.ones(3000), np.ones(2)]))
case("r2_ragged_overlong", RAGGED, {"x": long}, {"error": "a run of 3000 exceeds the bound 8"}, "scaled")
ROW_SUM = """
func @add(%acc: f32, %a: f32) -> f32 {
  return plus(%acc, %a)
}
func @row_sum(%x: tensor<f32, Row[0:1000], Col[0:64] ragged>) -> tensor<f32, Row[0:1000]> {
  return map_reduce(@add, %x, init = 0.0, einsum = "ij->i")
}
"""
lens = np.full(1000, 2)
lens[4] = 65
case("r2_row_65_of_64", ROW_SUM, {"x": ("ragged", ragged_of([np.ones(n, np.float32) for n in lens], np.float32))},
     {"error": "a run of 65 exceeds the bound 64"}, "row_sum")
lens[4] = 64
case("r2_row_64_of_64", ROW_SUM, {"x": ("ragged", ragged_of([np.ones(n, np.float32) for n in lens], np.float32))},
     {"result": lens.astype(np.float32)}, "row_sum")
full = [np.arange(8.0), np.arange(3.0)]
case("r2_ragged_full", RAGGED, {"x": ("ragged", ragged_of(full))},
     {"result": ("ragged", ragged_of([2 * r for r in full]))}, "scaled")


class BadCsr:
    """A CSR `.npz` with `indptr[0] = 1` (SciPy refuses to build it, so it is written by hand)."""

    def save(self, path):
        np.savez(path, format=np.array(b"csr"), shape=np.array([3, 3]), data=np.array([1.0, 2.0, 3.0]),
                 indices=np.array([0, 1, 2], dtype=np.int32), indptr=np.array([1, 1, 2, 3], dtype=np.int32))


class Trailing:
    """A `.npy` with bytes after the data its header describes."""

    suffix = ".npy"

    def __init__(self, a):
        self.a = a

    def save(self, path):
        import io
        buf = io.BytesIO()
        np.save(buf, self.a)
        with open(path, "wb") as f:
            f.write(buf.getvalue() + b"junk")


case("npy_with_trailing_bytes", "func @f(%x: tensor<3xf64>) -> tensor<3xf64> {\n  return %x\n}\n",
     {"x": Trailing(np.arange(3.0))}, {"error": "bytes after the data"}, "f")
case("r7_csr_indptr_from_one", RAGGED, {"a": BadCsr(), "x": np.ones(3)}, {"error": "index pointer"}, "spmv")
good = sp.csr_matrix(np.array([[1.0, 0, 2], [0, 0, 0], [0, 3, 0]]))
case("r7_csr", RAGGED, {"a": good, "x": np.arange(3.0)}, {"result": good @ np.arange(3.0)}, "spmv")

# ---- sparse and ragged values written through `out` parameters, several ragged results ------
OUTS = """
!R = tensor<f64, Row[0:3], Col[0:4] ragged>
!S = tensor<f64, Row[0:3], Col[0:4] compressed>
program @ragged_out(%o: out !R, %x: !R) {
  %o <- multiplies(%x, 2.0)
}
program @sparse_out(%o: out !S, %x: !S) {
  %o <- multiplies(%x, 2.0)
}
program @dense_out_from_sparse(%o: out tensor<f64, Row[0:3], Col[0:4]>, %x: !S) {
  %o <- multiplies(%x, 2.0)
}
func @two(%x: !R) -> !R, !R {
  return multiplies(%x, 2.0), plus(%x, 1.0)
}
"""
runs = [np.array([1.0, 2.0]), np.array([]), np.array([3.0, 4.0, 5.0, 6.0])]
rx = ("ragged", ragged_of(runs))
case("ragged_out_parameter", OUTS, {"x": rx}, {"o": ("ragged", ragged_of([2 * r for r in runs]))}, "ragged_out")
case("two_ragged_results", OUTS, {"x": rx},
     {"result.0": ("ragged", ragged_of([2 * r for r in runs])), "result.1": ("ragged", ragged_of([r + 1 for r in runs]))}, "two")
sx = sp.csr_matrix(np.array([[1.0, 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, 4]]))
case("sparse_out_parameter", OUTS, {"x": sx}, {"o": ("sparse", 2 * sx, False)}, "sparse_out")
# The caller's data in an `out` parameter is overwritten everywhere the program assigns, also
# where the sparse operand stores nothing.
case("dense_out_over_initial_data", OUTS, {"x": sx, "o": np.ones((3, 4))}, {"o": 2 * sx.toarray()}, "dense_out_from_sparse")

# A scan with a tuple state along a ragged level (running sum and running maximum per row).
TUPLE_SCAN = """
!R = tensor<f64, Row[0:3], Col[0:4] ragged>
func @step(%s: (f64, f64), %x: f64) -> (f64, f64) {
  %a = tuple_get(%s, index = 0)
  %b = tuple_get(%s, index = 1)
  return make_tuple(plus(%a, %x), maximum(%b, %x))
}
func @sum_and_max(%x: !R) -> !R {
  %s = scan(@step, %x, dim = Col, forward = true, init = (0.0, -100.0))
  return plus(tuple_get(%s, index = 0), tuple_get(%s, index = 1))
}
"""
runs = [np.array([1.0, -2.0]), np.array([]), np.array([3.0, 4.0, -5.0, 6.0])]
case("tuple_scan_over_ragged_rows", TUPLE_SCAN, {"x": ("ragged", ragged_of(runs))},
     {"result": ("ragged", ragged_of([np.cumsum(r) + np.maximum.accumulate(r) for r in runs]))}, "sum_and_max")

# ---- random runs of runs: empty rows anywhere in a group (at its end too), empty groups ------
RAGGED2 = """
!T = tensor<f64, G[0:4], R[0:3] ragged, V[0:4] ragged>
func @add(%s: tensor<f64, G[0:4], R[0:3] ragged>, %x: tensor<f64, G[0:4], R[0:3] ragged>) -> tensor<f64, G[0:4], R[0:3] ragged> {
  return plus(%s, %x)
}
func @count(%s: tensor<f64, G[0:4], R[0:3] ragged>, %x: tensor<f64, G[0:4], R[0:3] ragged>) -> tensor<f64, G[0:4], R[0:3] ragged> {
  return plus(%s, 1.0)
}
func @sum(%acc: f64, %x: f64) -> f64 {
  return plus(%acc, %x)
}
func @same(%y: !T) -> !T {
  return %y
}
func @shifted(%y: !T) -> !T {
  return plus(multiplies(%y, 2.0), 1.0)
}
func @cumsum(%y: !T) -> !T {
  return scan(@add, %y, dim = V, forward = true, init = 0.0)
}
func @rank(%y: !T) -> !T {
  return scan(@count, %y, dim = V, forward = false, init = 0.0)
}
func @row_sums(%y: !T) -> tensor<f64, G[0:4], R[0:3]> {
  return map_reduce(@sum, %y, init = 0.0, einsum = "grv->gr")
}
"""
rr = np.random.default_rng(314)
for i in range(12):
    groups = [[np.round(rr.standard_normal(int(rr.integers(0, 5))), 2) for _ in range(int(rr.integers(0, 4)))]
              for _ in range(4)]
    if i % 3 == 0:
        groups[int(rr.integers(0, 4))].append(np.zeros(0))  # an empty row at a group's end
    groups = [g[:3] for g in groups]
    y = ("ragged", ragged2_of(groups))
    case(f"ragged2_random_{i}_same", RAGGED2, {"y": y}, {"result": y}, "same")
    case(f"ragged2_random_{i}_shifted", RAGGED2, {"y": y},
         {"result": ("ragged", ragged2_of([[2 * r + 1 for r in g] for g in groups]))}, "shifted")
    case(f"ragged2_random_{i}_cumsum", RAGGED2, {"y": y},
         {"result": ("ragged", ragged2_of([[np.cumsum(r) for r in g] for g in groups]))}, "cumsum")
    case(f"ragged2_random_{i}_rank", RAGGED2, {"y": y},
         {"result": ("ragged", ragged2_of([[np.arange(len(r), 0, -1, dtype=np.float64) for r in g] for g in groups]))}, "rank")
    sums = np.zeros((4, 3))
    for gi, g in enumerate(groups):
        for ri, r in enumerate(g):
            sums[gi, ri] = r.sum()
    case(f"ragged2_random_{i}_row_sums", RAGGED2, {"y": y}, {"result": sums}, "row_sums")

# ---- element counts that do not fit --------------------------------------------------------
case("r4_size_overflow", """
program @fill(%out: out tensor<f64, I[0:4294967296], J[0:4294967296]>) {
  %out <- constant(value = 1.0) : tensor<f64, I[0:4294967296], J[0:4294967296]>
}
""", {}, {"error": "has more elements than fit in 64 bits"}, "fill")

# Counts that fit but memory that does not (3.2 TB): a clear error, no abort.
case("r4_too_large_output", """
program @fill(%out: out tensor<f64, I[0:400000000000]>) {
  %out <- constant(value = 1.0) : tensor<f64, I[0:400000000000]>
}
""", {}, {"error": "more than can be allocated here"}, "fill")
case("r4_too_large_result", """
func @f(%x: tensor<f64>) -> tensor<f64, I[0:400000000000]> {
  return add_dim(%x, dim = I[0:400000000000])
}
""", {"x": np.array(1.0)}, {"error": "more than can be allocated here"}, "f")

# ---- GEMM: IEEE in the fold's order where infinities arise ------------------------------------
GEMM = """
func @mm(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>) -> tensor<32x32xf32> {
  return product_2d(%a, %b, ring = plus_times)
}
func @mm64(%a: tensor<40x40xf64>, %b: tensor<40x40xf64>) -> tensor<40x40xf64> {
  return product_2d(%a, %b, ring = plus_times)
}
"""


def in_fold_order(a, b):
    """`acc = 0; acc = acc + a[i, k] * b[k, j]` for k ascending, in a's precision."""
    t = a.dtype.type
    out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    with np.errstate(all="ignore"):
        for k in range(a.shape[1]):
            out = (out + (a[:, k:k + 1] * b[k:k + 1, :]).astype(t)).astype(t)
    return out


a = np.ones((32, 32), np.float32)
a[0, 0], a[0, 1] = -np.inf, 1e38
b = np.zeros((32, 32), np.float32)
b[0, 0], b[1, 0] = 1.0, 10.0
b[2:, 1:] = 1.0
case("r3_gemm_inf_f32", GEMM, {"a": a, "b": b}, {"result": ("ieee", in_fold_order(a, b))}, "mm")
a64 = rng.standard_normal((40, 40))
b64 = rng.standard_normal((40, 40))
a64[3, 5], b64[5, 7] = 1e300, 1e300  # one product overflows: inf where the fold meets it
a64[3, 6], b64[6, 7] = -1e300, 1e300  # and its negative: inf - inf = NaN in the fold's order
case("r3_gemm_overflow_f64", GEMM, {"a": a64, "b": b64}, {"result": ("ieee", in_fold_order(a64, b64))}, "mm64")
# Partial sums that overflow where no product does: 1e308 + ... + 1e308 is inf in the fold's
# order, and stays inf after the -1e308 (a blocked order summing the last two first: 1e308).
GEMM_LONG = """
func @mm_long(%a: tensor<64x4096xf64>, %b: tensor<4096x64xf64>) -> tensor<64x64xf64> {
  return product_2d(%a, %b, ring = plus_times)
}
"""
al = rng.standard_normal((64, 4096))
bl = 0.1 * rng.standard_normal((4096, 64))  # every product below the largest finite value
al[2, 0], al[2, 3000], al[2, 3001] = 1e308, 1e308, -1e308
bl[0, :], bl[3000, :], bl[3001, :] = 1.0, 1.0, 1.0
case("r3_gemm_partial_sum_overflow_f64", GEMM_LONG, {"a": al, "b": bl}, {"result": ("ieee", in_fold_order(al, bl))}, "mm_long")
n64 = rng.standard_normal((40, 40))
n64[9, 1] = np.nan
case("r3_gemm_nan_f64", GEMM, {"a": n64, "b": b64}, {"result": ("ieee", in_fold_order(n64, b64))}, "mm64")
case("r3_gemm_finite_f64", GEMM, {"a": n64 * 0 + 1.5, "b": b64}, {"result": ("ieee", in_fold_order(n64 * 0 + 1.5, b64))}, "mm64")

if __name__ == "__main__":
    main_with(CASES, sys.argv)
