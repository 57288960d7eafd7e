"""Sparse, ragged and skip semantics against numpy / SciPy and hand-derived values.

Usage: python check_sparse.py STRATA_BINARY WORKDIR [NAME_FILTER]

Every case runs on both backends (`--backend interp` and `--backend native`) and must match an
independent oracle: numpy on the dense matrix (a level format is storage, never meaning: a
sparse tensor's unstored entries are zeros), SciPy's own sparse operations for sparse results
(values and stored pattern: Strata stores exactly the non-zero entries, SciPy's canonical form,
which its `+`, `.multiply` and `@` produce), or values derived by hand (issue 12's programs).
Sparse inputs are given in every format the type allows (CSR, CSC, DCSR, COO; the file is read
into any sparse type), so each case also checks that the format does not change the answer.
"""

import os
import subprocess
import sys

import numpy as np
import scipy.sparse as sp

rng = np.random.default_rng(12)
BACKENDS = ["interp", "native"]


class CaseList(list):
    """The cases of one oracle script (check_trust.py keeps its own)."""

    def add(self, name, program, inputs, expected, entry=None, backends=None):
        """`inputs`: name -> numpy array, SciPy matrix, ("ragged", arrays) or an object with
        `save(path)` writing the file (an `.npz`, or its `suffix`); `expected`: name -> numpy array (dense result),
        ("ieee", array) (NaN and infinities where the array has them, finite values close),
        ("sparse", …) / ("ragged", …) results, or {"error": text}; `backends`: where the
        program runs (default: the interpreter and native code)."""
        self.append((name, program, inputs, expected, entry, backends or BACKENDS))


def case_list():
    return CaseList()


CASES = case_list()
case = CASES.add


def sparse_matrix(m, n, density, seed):
    r = np.random.default_rng(seed)
    a = sp.random(m, n, density=density, random_state=r, format="csr")
    a.data = np.round(a.data * 8 - 4, 2)
    a.data[a.data == 0] = 1.0
    return a


# ---- issue 12 (a): reduce skips a skipped neighbor whatever the payload reads ----------------
NEIGHBORS = """
!V = tensor<f64, V[0:3]>
!VI = tensor<i32, V[0:3]>
func @count(%acc: !VI, %x: !V) -> !VI {
  %one = constant(value = 1) : i32
  %s = plus(%acc, %one) : !VI
  return %s
}
func @weigh(%acc: !V, %x: !V, %w: !V) -> !V {
  %s = plus(%acc, %w) : !V
  return %s
}
program @p(%n: out !VI, %e: tensor<f64, E[0:4]>, %v2e: tensor<i32, V[0:3], NB_E[0:3]>) {
  %nb = shift_init(%e, %v2e) : tensor<f64, V[0:3], NB_0[0:3]>
  %c = reduce(@count, %nb, init = 0) : !VI
  %n <- %c
}
program @q(%s: out !V, %e: tensor<f64, E[0:4]>, %v2e: tensor<i32, V[0:3], NB_E[0:3]>, %w: tensor<f64, V[0:3], NB_0[0:3]>) {
  %nb = shift_init(%e, %v2e) : tensor<f64, V[0:3], NB_0[0:3]>
  %c = reduce(@weigh, %nb, %w, init = 0.0) : !V
  %s <- %c
}
"""
v2e = np.array([[0, 1, -1], [2, -1, -1], [0, 1, 3]], dtype=np.int32)
e = np.arange(4.0)
case("issue12_neighbor_count", NEIGHBORS, {"e": e, "v2e": v2e}, {"n": np.array([2, 1, 3], dtype=np.int32)}, "p")
ones = np.ones((3, 3))
case("issue12_neighbor_weights", NEIGHBORS, {"e": e, "v2e": v2e, "w": ones}, {"s": np.array([2.0, 1.0, 3.0])}, "q")
w = rng.standard_normal((3, 3))
case("issue12_neighbor_weights_random", NEIGHBORS, {"e": e, "v2e": v2e, "w": w}, {"s": np.where(v2e >= 0, w, 0).sum(1)}, "q")

# ---- issue 12 (b): payloads that ignore their operand -----------------------------------------
COUNTS = """
func @count(%acc: i64, %a: f64) -> i64 {
  %one = constant(value = 1) : i64
  %s = plus(%acc, %one) : i64
  return %s
}
func @count_nonzero(%acc: i64, %a: f64) -> i64 {
  %zero = constant(value = 0.0) : f64
  %nz = ne(%a, %zero) : bool
  %one = cast(%nz, to = i64) : i64
  %s = plus(%acc, %one) : i64
  return %s
}
func @take_b(%acc: f64, %a: f64, %b: f64) -> f64 {
  %s = plus(%acc, %b) : f64
  return %s
}
func @row_entries(%a: tensor<f64, Row[0:3], Col[0:4] compressed>) -> tensor<i64, Row[0:3]> {
  %n = map_reduce(@count, %a, init = 0, einsum = "ij->i") : tensor<i64, Row[0:3]>
  return %n
}
func @row_nnz(%a: tensor<f64, Row[0:3], Col[0:4] compressed>) -> tensor<i64, Row[0:3]> {
  %n = map_reduce(@count_nonzero, %a, init = 0, einsum = "ij->i") : tensor<i64, Row[0:3]>
  return %n
}
func @masked_sum(%a: tensor<f64, I[0:6] compressed>, %b: tensor<f64, I[0:6]>) -> tensor<f64> {
  %s = map_reduce(@take_b, %a, %b, init = 0.0, einsum = "i,i->") : tensor<f64>
  return %s
}
func @masked_row_sum(%a: tensor<f64, Row[0:3], Col[0:4] compressed>, %b: tensor<f64, Row[0:3], Col[0:4]>) -> tensor<f64, Row[0:3]> {
  %s = map_reduce(@take_b, %a, %b, init = 0.0, einsum = "ij,ij->i") : tensor<f64, Row[0:3]>
  return %s
}
func @ragged_lengths(%a: tensor<f64, Row[0:3], Col[0:4] ragged>) -> tensor<i64, Row[0:3]> {
  %n = map_reduce(@count, %a, init = 0, einsum = "ij->i") : tensor<i64, Row[0:3]>
  return %n
}
"""
csr = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([0, 2, 1]), np.array([0, 2, 2, 3])), shape=(3, 4))
# The dense meaning: a payload that ignores the value counts every entry, stored or not.
case("issue12_row_entries", COUNTS, {"a": csr}, {"result": np.array([4, 4, 4])}, "row_entries")
case("issue12_row_nnz", COUNTS, {"a": csr}, {"result": np.array([2, 0, 1])}, "row_nnz")
mask = sp.coo_matrix(np.array([[0, 1.0, 0, 0, 2.0, 0]]))
b6 = rng.standard_normal(6)
case("issue12_masked_sum", COUNTS, {"a": mask, "b": b6}, {"result": np.array(b6.sum())}, "masked_sum")
b34 = rng.standard_normal((3, 4))
case("issue12_masked_row_sum", COUNTS, {"a": csr, "b": b34}, {"result": b34.sum(1)}, "masked_row_sum")
# Ragged rows: positions past a run are skipped (no value), so counting gives the lengths.
ragged = {"offsets": np.array([0, 2, 2, 6], dtype=np.int64), "values": np.array([0.0, 0.0, 1.0, 0.0, 2.0, 0.0])}
case("issue12_ragged_lengths", COUNTS, {"a": ("ragged", ragged)}, {"result": np.array([2, 0, 4])}, "ragged_lengths")

# ---- segmented scans along ragged levels, and ragged .npz with two ragged levels --------------
RAGGED_SCANS = """
!G = tensor<f64, G[0:4]>
!GR = tensor<f64, G[0:4], R[0:5] ragged>
!GI = tensor<i64, G[0:4]>
!GRV = tensor<f64, G[0:3], R[0:4] ragged, V[0:5] ragged>
!GRd = tensor<f64, G[0:3], R[0:4] ragged>
func @add(%s: !G, %x: !G) -> !G {
  %t = plus(%s, %x) : !G
  return %t
}
func @count(%s: !GI, %x: !G) -> !GI {
  %one = constant(value = 1) : i64
  %t = plus(%s, %one) : !GI
  return %t
}
func @add2(%s: !GRd, %x: !GRd) -> !GRd {
  %t = plus(%s, %x) : !GRd
  return %t
}
func @cumsum(%a: !GR) -> !GR {
  %c = scan(@add, %a, dim = R, forward = true, init = 0.0) : !GR
  return %c
}
func @rcumsum(%a: !GR) -> !GR {
  %c = scan(@add, %a, dim = R, forward = false, init = 0.0) : !GR
  return %c
}
func @rank(%a: !GR) -> tensor<i64, G[0:4], R[0:5] ragged> {
  %c = scan(@count, %a, dim = R, forward = true, init = 0) : tensor<i64, G[0:4], R[0:5] ragged>
  return %c
}
func @cumsum_inner(%a: !GRV) -> !GRV {
  %c = scan(@add2, %a, dim = V, forward = true, init = 0.0) : !GRV
  return %c
}
func @copy2(%a: !GRV) -> !GRV {
  return %a
}
"""
# Rows of lengths 3, 0, 5, 1 (an empty row and a full one).
rows = [rng.standard_normal(n) for n in (3, 0, 5, 1)]


def ragged_of(runs, dtype=np.float64):
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in runs])]).astype(np.int64)
    values = np.concatenate([np.asarray(r, dtype=dtype) for r in runs]) if runs else np.zeros(0, dtype)
    return {"offsets": offsets, "values": values}


rg = ("ragged", ragged_of(rows))
case("ragged_cumsum", RAGGED_SCANS, {"a": rg}, {"result": ("ragged", ragged_of([np.cumsum(r) for r in rows]))}, "cumsum")
case("ragged_rcumsum", RAGGED_SCANS, {"a": rg},
     {"result": ("ragged", ragged_of([np.cumsum(r[::-1])[::-1] for r in rows]))}, "rcumsum")
# A payload that ignores the value still has no step past a run's end: ranks 1..len per row.
case("ragged_rank", RAGGED_SCANS, {"a": rg},
     {"result": ("ragged", ragged_of([np.arange(1, len(r) + 1) for r in rows], np.int64))}, "rank")
# Two ragged levels: groups of runs of runs (3 groups; 2, 0 and 3 runs; run lengths below).
inner = [[rng.standard_normal(n) for n in lens] for lens in ([2, 5], [], [0, 1, 4])]


def ragged2_of(groups):
    runs = [r for g in groups for r in g]
    outer = np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64)
    inner_offsets = np.concatenate([[0], np.cumsum([len(r) for r in runs])]).astype(np.int64)
    return {"offsets": outer, "offsets_1": inner_offsets, "values": np.concatenate(runs)}


rg2 = ("ragged", ragged2_of(inner))
case("ragged2_roundtrip", RAGGED_SCANS, {"a": rg2}, {"result": rg2}, "copy2")
case("ragged2_cumsum", RAGGED_SCANS, {"a": rg2},
     {"result": ("ragged", ragged2_of([[np.cumsum(r) for r in g] for g in inner]))}, "cumsum_inner")

# Scans over sparse values and over dense values computed from them (natively: the operand is
# computed into a dense temporary first).
SPARSE_SCANS = """
!R = tensor<f64, Row[0:30]>
!C = tensor<f64, Col[0:20]>
!Cs = tensor<f64, Col[0:20] compressed>
!D = tensor<f64, Row[0:30], Col[0:20]>
func @add_r(%s: !R, %x: !R) -> !R {
  %t = plus(%s, %x) : !R
  return %t
}
func @add_c(%s: !Cs, %x: !Cs) -> !Cs {
  %t = plus(%s, %x) : !Cs
  return %t
}
func @add_0(%s: tensor<f64>, %x: tensor<f64>) -> tensor<f64> {
  %t = plus(%s, %x) : tensor<f64>
  return %t
}
func @mac(%acc: f64, %a: f64, %x: f64) -> f64 {
  %p = multiplies(%a, %x) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
func @row_cumsum(%a: tensor<f64, Row[0:30], Col[0:20] compressed>) -> !D {
  %d = convert(%a, mode = copy) : !D
  %c = scan(@add_r, %d, dim = Col, forward = true, init = 0.0) : !D
  return %c
}
func @col_cumsum(%a: tensor<f64, Row[0:30], Col[0:20] compressed>) -> tensor<f64, Row[0:30], Col[0:20] compressed> {
  %c = scan(@add_c, %a, dim = Row, forward = true, init = 0.0) : tensor<f64, Row[0:30], Col[0:20] compressed>
  return %c
}
func @spmv_cumsum(%a: tensor<f64, Row[0:30], Col[0:20] compressed>, %x: !C) -> !R {
  %y = map_reduce(@mac, %a, %x, init = 0.0, einsum = "ij,j->i") : !R
  %c = scan(@add_0, %y, dim = Row, forward = false, init = 0.0) : !R
  return %c
}
"""

# ---- format independence: non-annihilating payloads equal numpy on the dense matrix ----------
FORMATS = {
    "csr": "Row[0:30], Col[0:20] compressed",
    "dcsr": "Row[0:30] compressed, Col[0:20] compressed",
    "coo": "Row[0:30] compressed(nonunique), Col[0:20] singleton",
    "blocks": "Row[0:30] compressed, Col[0:20]",
}
PAYLOADS = """
func @biggest(%acc: f64, %a: f64) -> f64 {
  %m = maximum(%acc, %a) : f64
  return %m
}
func @exp_sum(%acc: f64, %a: f64) -> f64 {
  %x = exp(%a) : f64
  %s = plus(%acc, %x) : f64
  return %s
}
func @plus_dense(%acc: f64, %a: f64, %d: f64) -> f64 {
  %x = plus(%a, %d) : f64
  %s = plus(%acc, %x) : f64
  return %s
}
func @mac(%acc: f64, %a: f64, %x: f64) -> f64 {
  %p = multiplies(%a, %x) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
"""
A = sparse_matrix(30, 20, 0.15, 1).tolil()
A[4, :] = 0  # an empty row
A = A.tocsr()
A.eliminate_zeros()
Ad = A.toarray()
D = rng.standard_normal((30, 20))
X = rng.standard_normal(20)
for fmt, levels in FORMATS.items():
    ty = f"tensor<f64, {levels}>"
    prog = PAYLOADS + f"""
func @row_max(%a: {ty}) -> tensor<f64, Row[0:30]> {{
  %m = map_reduce(@biggest, %a, init = -1000.0, einsum = "ij->i") : tensor<f64, Row[0:30]>
  return %m
}}
func @row_exp(%a: {ty}) -> tensor<f64, Row[0:30]> {{
  %m = map_reduce(@exp_sum, %a, init = 0.0, einsum = "ij->i") : tensor<f64, Row[0:30]>
  return %m
}}
func @with_dense(%a: {ty}, %d: tensor<f64, Row[0:30], Col[0:20]>) -> tensor<f64, Col[0:20]> {{
  %m = map_reduce(@plus_dense, %a, %d, init = 0.0, einsum = "ij,ij->j") : tensor<f64, Col[0:20]>
  return %m
}}
func @spmv(%a: {ty}, %x: tensor<f64, Col[0:20]>) -> tensor<f64, Row[0:30]> {{
  %y = map_reduce(@mac, %a, %x, init = 0.0, einsum = "ij,j->i") : tensor<f64, Row[0:30]>
  return %y
}}
"""
    for src in ["csr", "csc", "coo"]:
        given = A.asformat(src)
        case(f"{fmt}_from_{src}_row_max", prog, {"a": given}, {"result": np.maximum(-1000.0, Ad).max(1)}, "row_max")
        case(f"{fmt}_from_{src}_row_exp", prog, {"a": given}, {"result": np.exp(Ad).sum(1)}, "row_exp")
        case(f"{fmt}_from_{src}_with_dense", prog, {"a": given, "d": D}, {"result": (Ad + D).sum(0)}, "with_dense")
        case(f"{fmt}_from_{src}_spmv", prog, {"a": given, "x": X}, {"result": Ad @ X}, "spmv")

case("csr_row_cumsum", SPARSE_SCANS, {"a": A}, {"result": np.cumsum(Ad, axis=1)}, "row_cumsum")
case("csr_col_cumsum", SPARSE_SCANS, {"a": A.tocsc()}, {"result": ("sparse", sp.csr_matrix(np.cumsum(Ad, axis=0)), False)}, "col_cumsum")
case("csr_spmv_cumsum", SPARSE_SCANS, {"a": A, "x": X}, {"result": np.cumsum((Ad @ X)[::-1])[::-1]}, "spmv_cumsum")

# ---- sparse results: union, intersection, products (values and stored pattern = SciPy's) -----
B = sparse_matrix(30, 20, 0.2, 2).tolil()
# Entries that cancel: A + B is zero there and SciPy does not store it.
B[0, :] = -A[0, :].toarray()
B = B.tocsr()
B.eliminate_zeros()
C = sparse_matrix(20, 25, 0.15, 3)
MAC = """
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = multiplies(%a, %b) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
"""
# Per result format: the levels of an (m x n) matrix over dimensions (R, C), and whether its
# level order is (C, R) — a CSC tensor's file holds the transpose (rows = level 0).
RESULT_FORMATS = {
    "csr": ("{R}[0:{m}], {C}[0:{n}] compressed", False),
    "dcsr": ("{R}[0:{m}] compressed, {C}[0:{n}] compressed", False),
    "csc": ("{C}[0:{n}], {R}[0:{m}] compressed", True),
}
for fmt, (levels, transposed) in RESULT_FORMATS.items():
    def ty(r, c, m, n):
        return "tensor<f64, " + levels.format(R=r, C=c, m=m, n=n) + ">"

    def given(mat):
        return mat.T.tocsr() if transposed else mat

    t = ty("Row", "Col", 30, 20)
    prog = MAC + f"""
func @add(%a: {t}, %b: {t}) -> {t} {{
  %c = plus(%a, %b) : {t}
  return %c
}}
func @sub(%a: {t}, %b: {t}) -> {t} {{
  %c = minus(%a, %b) : {t}
  return %c
}}
func @mul(%a: {t}, %b: {t}) -> {t} {{
  %c = multiplies(%a, %b) : {t}
  return %c
}}
func @to_sparse(%d: tensor<f64, Row[0:30], Col[0:20]>) -> {t} {{
  %c = convert(%d, mode = copy) : {t}
  return %c
}}
func @spgemm(%a: {ty("Row", "K", 30, 20)}, %b: {ty("K", "Col", 20, 25)}) -> {ty("Row", "Col", 30, 25)} {{
  %c = map_reduce(@mac, %a, %b, init = 0.0, einsum = "{'ki,jk->ji' if transposed else 'ik,kj->ij'}") : {ty("Row", "Col", 30, 25)}
  return %c
}}
"""
    pair = {"a": given(A), "b": given(B)}
    case(f"{fmt}_union_add", prog, pair, {"result": ("sparse", A + B, transposed)}, "add")
    case(f"{fmt}_union_sub", prog, pair, {"result": ("sparse", A - B, transposed)}, "sub")
    case(f"{fmt}_intersection_mul", prog, pair, {"result": ("sparse", A.multiply(B).tocsr(), transposed)}, "mul")
    Dz = np.where(rng.random((30, 20)) < 0.3, D, 0.0)
    case(f"{fmt}_convert_dense", prog, {"d": Dz}, {"result": ("sparse", sp.csr_matrix(Dz), transposed)}, "to_sparse")
    case(f"{fmt}_spgemm", prog, {"a": given(A), "b": given(C)}, {"result": ("sparse", (A @ C).tocsr(), transposed)}, "spgemm")
# AᵀA, TACO's known-bad case, with a CSR input: (ki,kj->ij).
ATA = MAC + """
func @ata(%a: tensor<f64, K[0:30], I[0:20] compressed>, %b: tensor<f64, K[0:30], J[0:20] compressed>) -> tensor<f64, I[0:20], J[0:20] compressed> {
  %c = map_reduce(@mac, %a, %b, init = 0.0, einsum = "ki,kj->ij") : tensor<f64, I[0:20], J[0:20] compressed>
  return %c
}
"""
case("csr_ata", ATA, {"a": A, "b": A}, {"result": ("sparse", (A.T @ A).tocsr(), False)}, "ata")


# SpGEMM rows of every shape Gustavson's workspace meets: empty rows, rows whose touched columns
# are sorted by insertion sort (few), by quicksort (tens) or found by scanning the row (over a
# sixteenth of the width), and products that cancel to an exact zero (not stored, as SciPy).
def spgemm_program(m, k, n):
    t = lambda r, c, a, b: f"tensor<f64, {r}[0:{a}], {c}[0:{b}] compressed>"
    return MAC + f"""
func @spgemm(%a: {t("Row", "K", m, k)}, %b: {t("K", "Col", k, n)}) -> {t("Row", "Col", m, n)} {{
  %c = map_reduce(@mac, %a, %b, init = 0.0, einsum = "ik,kj->ij") : {t("Row", "Col", m, n)}
  return %c
}}
"""


for label, (m, k, n, da, db) in {"few": (40, 300, 3000, 0.01, 0.003), "tens": (40, 300, 3000, 0.03, 0.01),
                                 "dense_rows": (20, 100, 400, 0.3, 0.2)}.items():
    GA = sparse_matrix(m, k, da, 40 + m).tolil()
    GA[3, :] = 0  # an empty row
    GA = GA.tocsr()
    GA.eliminate_zeros()
    GB = sparse_matrix(k, n, db, 50 + n)
    case(f"spgemm_{label}", spgemm_program(m, k, n), {"a": GA, "b": GB}, {"result": ("sparse", (GA @ GB).tocsr(), False)}, "spgemm")
# ---- coordinates and values as data: coordinates / nonzeros / assemble ------------------------
ENTRIES = """
!CSR = tensor<f64, Row[0:30], Col[0:20] compressed>
func @count_step(%acc: tensor<index, Row[0:30]>, %c: tensor<index, Row[0:30]>) -> tensor<index, Row[0:30]> {
  %one = constant(value = 1) : index
  %s = plus(%acc, %one) : tensor<index, Row[0:30]>
  return %s
}
func @crd(%a: !CSR) -> tensor<index, Row[0:30], E[0:20] ragged> {
  %c = coordinates(%a, dim = Col) : tensor<index, Row[0:30], E[0:20] ragged>
  return %c
}
func @nz(%a: !CSR) -> tensor<f64, Row[0:30], E[0:20] ragged> {
  %v = nonzeros(%a, dim = Col) : tensor<f64, Row[0:30], E[0:20] ragged>
  return %v
}
func @crd_by_column(%a: !CSR) -> tensor<index, Col[0:20], E[0:30] ragged> {
  %c = coordinates(%a, dim = Row) : tensor<index, Col[0:20], E[0:30] ragged>
  return %c
}
func @roundtrip_csc(%a: !CSR) -> tensor<f64, Col[0:20], Row[0:30] compressed> {
  %c = coordinates(%a, dim = Col) : tensor<index, Row[0:30], E[0:20] ragged>
  %v = nonzeros(%a, dim = Col) : tensor<f64, Row[0:30], E[0:20] ragged>
  %b = assemble(%c, %v, dim = Col) : tensor<f64, Col[0:20], Row[0:30] compressed>
  return %b
}
func @nonzero(%x: tensor<f64, I[0:12]>) -> tensor<index, E[0:12] ragged> {
  %c = coordinates(%x, dim = I) : tensor<index, E[0:12] ragged>
  return %c
}
func @compact(%x: tensor<f64, I[0:12]>) -> tensor<f64, E[0:12] ragged> {
  %v = nonzeros(%x, dim = I) : tensor<f64, E[0:12] ragged>
  return %v
}
func @nz_of_product(%a: !CSR, %b: !CSR) -> tensor<f64, Row[0:30], E[0:20] ragged> {
  %p = multiplies(%a, %b) : !CSR
  %v = nonzeros(%p, dim = Col) : tensor<f64, Row[0:30], E[0:20] ragged>
  return %v
}
func @rank_of_entries(%a: !CSR) -> tensor<index, Row[0:30], E[0:20] ragged> {
  %c = coordinates(%a, dim = Col) : tensor<index, Row[0:30], E[0:20] ragged>
  %r = scan(@count_step, %c, dim = E, forward = true, init = 0) : tensor<index, Row[0:30], E[0:20] ragged>
  return %r
}
func @nz_ragged(%r: tensor<f64, Row[0:4], R[0:6] ragged>) -> tensor<f64, Row[0:4], E[0:6] ragged> {
  %v = nonzeros(%r, dim = R) : tensor<f64, Row[0:4], E[0:6] ragged>
  return %v
}
func @crd_csc(%a: tensor<f64, Col[0:20], Row[0:30] compressed>) -> tensor<index, Row[0:30], E[0:20] ragged> {
  %c = coordinates(%a, dim = Col) : tensor<index, Row[0:30], E[0:20] ragged>
  return %c
}
func @build(%c: tensor<i64, Row[0:4], E[0:6] ragged>, %v: tensor<f64, Row[0:4], E[0:6] ragged>) -> tensor<f64, Row[0:4], Col[3:9] compressed> {
  %b = assemble(%c, %v, dim = Col) : tensor<f64, Row[0:4], Col[3:9] compressed>
  return %b
}
"""
case("entries_csr_coordinates", ENTRIES, {"a": A},
     {"result": ("ragged", {"offsets": A.indptr.astype(np.int64), "values": A.indices.astype(np.int64)})}, "crd")
case("entries_csr_nonzeros", ENTRIES, {"a": A}, {"result": ("ragged", {"offsets": A.indptr.astype(np.int64), "values": A.data})}, "nz")
AC = A.tocsc()
AC.sort_indices()
case("entries_by_column", ENTRIES, {"a": A},
     {"result": ("ragged", {"offsets": AC.indptr.astype(np.int64), "values": AC.indices.astype(np.int64)})}, "crd_by_column")
case("entries_roundtrip_csc", ENTRIES, {"a": A}, {"result": ("sparse", A, True)}, "roundtrip_csc")
X = np.array([0.0, 1.5, -0.0, 0.0, -2.0, 0.0, 7.0, 0.0, 0.0, 1e-300, 0.0, 3.0])
case("entries_nonzero", ENTRIES, {"x": X}, {"result": ("ragged", {"offsets": np.array([0, np.count_nonzero(X)]), "values": np.nonzero(X)[0].astype(np.int64)})}, "nonzero")
case("entries_compact", ENTRIES, {"x": X}, {"result": ("ragged", {"offsets": np.array([0, np.count_nonzero(X)]), "values": X[X != 0]})}, "compact")
# assemble: unsorted and repeated coordinates (summed, as SciPy's COO -> CSR), an empty row, a
# coordinate interval that does not start at 0.
runs_c = [[8, 3, 8], [], [5, 4, 3, 7, 6, 5], [6]]
runs_v = [[1.0, 2.0, 0.5], [], [1.0, 2.0, 3.0, 4.0, 5.0, -1.0], [9.0]]
rows_idx = np.repeat(np.arange(4), [len(r) for r in runs_c])
want_build = sp.coo_matrix((np.concatenate(runs_v), (rows_idx, np.concatenate(runs_c) - 3)), shape=(4, 6)).tocsr()
want_build.sum_duplicates()
build_in = {"c": ("ragged", ragged_of(runs_c, np.int64)), "v": ("ragged", ragged_of(runs_v))}
case("entries_assemble", ENTRIES, build_in, {"result": ("sparse", want_build, False)}, "build")
runs_r = [[0.0, 1.5, 0.0, -2.0], [], [3.0], [0.0, 0.0, 4.0, 5.0, 0.0, 6.0]]
case("entries_ragged", ENTRIES, {"r": ("ragged", ragged_of(runs_r))},
     {"result": ("ragged", ragged_of([[x for x in r if x != 0] for r in runs_r]))}, "nz_ragged")
case("entries_from_csc", ENTRIES, {"a": A.T.tocsc()},
     {"result": ("ragged", {"offsets": A.indptr.astype(np.int64), "values": A.indices.astype(np.int64)})}, "crd_csc")
P = A.multiply(B).tocsr()
P.eliminate_zeros()
P.sort_indices()
case("entries_of_product", ENTRIES, {"a": A, "b": B}, {"result": ("ragged", {"offsets": P.indptr.astype(np.int64), "values": P.data})}, "nz_of_product")
case("entries_ranks", ENTRIES, {"a": A},
     {"result": ("ragged", ragged_of([np.arange(1, n + 1) for n in np.diff(A.indptr)], np.int64))}, "rank_of_entries")
uneven = {"c": ("ragged", ragged_of([[4, 5], [], [6], []], np.int64)), "v": ("ragged", ragged_of([[1.0], [], [3.0], []]))}
case("entries_assemble_uneven", ENTRIES, uneven,
     {"error": {"interp": "at Row = 0 entry 1, there is a coordinate or a value but not both",
                "native": "the coordinates and the values differ in length"}}, "build")
bad = {"c": ("ragged", ragged_of([[8, 3], [], [9], []], np.int64)), "v": ("ragged", ragged_of([[1.0, 2.0], [], [3.0], []]))}
case("entries_assemble_out_of_interval", ENTRIES, bad, {"error": {"interp": "coordinate 9 (at Row = 2 entry 0) is outside `Col[3:9]`", "native": "an index is outside its dimension's interval"}}, "build")

# ---- sparse times dense: the points of a row share its walk (`jam-rows`) ----------------------
# The result's columns in groups of four step one walk of the row's stored entries, each with its
# own accumulator, then the columns left over one by one: widths below a group, exactly one, one
# with a remainder and several; a column-major dense operand (not grouped); a union of two
# matrices walked once per group; a fold `max(0·x)` changes, so it visits every column; an
# integer product (exact); empty rows throughout.
def spmm_program(m, n, k, dtype="f64", b_cols_first=False):
    b = f"tensor<{dtype}, K[0:{k}], Col[0:{n}]>" if b_cols_first else f"tensor<{dtype}, Col[0:{n}], K[0:{k}]>"
    spec = "ij,kj->ik" if b_cols_first else "ij,jk->ik"
    out = f"tensor<{dtype}, Row[0:{m}], K[0:{k}]>"
    zero = "0" if dtype == "i64" else "0.0"
    return f"""
func @mac(%acc: {dtype}, %a: {dtype}, %b: {dtype}) -> {dtype} {{
  %p = multiplies(%a, %b) : {dtype}
  %s = plus(%acc, %p) : {dtype}
  return %s
}}
func @mac2(%acc: {dtype}, %a: {dtype}, %c: {dtype}, %b: {dtype}) -> {dtype} {{
  %ac = plus(%a, %c) : {dtype}
  %p = multiplies(%ac, %b) : {dtype}
  %s = plus(%acc, %p) : {dtype}
  return %s
}}
func @maxprod(%acc: {dtype}, %a: {dtype}, %b: {dtype}) -> {dtype} {{
  %p = multiplies(%a, %b) : {dtype}
  %s = maximum(%acc, %p) : {dtype}
  return %s
}}
func @spmm(%a: tensor<{dtype}, Row[0:{m}], Col[0:{n}] compressed>, %b: {b}) -> {out} {{
  %c = map_reduce(@mac, %a, %b, init = {zero}, einsum = "{spec}") : {out}
  return %c
}}
func @spmm_sum(%a: tensor<{dtype}, Row[0:{m}], Col[0:{n}] compressed>, %c: tensor<{dtype}, Row[0:{m}], Col[0:{n}] compressed>, %b: {b}) -> {out} {{
  %r = map_reduce(@mac2, %a, %c, %b, init = {zero}, einsum = "{spec.replace(',', ',ij,', 1)}") : {out}
  return %r
}}
func @spmm_max(%a: tensor<{dtype}, Row[0:{m}], Col[0:{n}] compressed>, %b: {b}) -> {out} {{
  %c = map_reduce(@maxprod, %a, %b, init = -1000{".0" if dtype != "i64" else ""}, einsum = "{spec}") : {out}
  return %c
}}
"""


for k in (1, 3, 4, 5, 8, 13):
    SA = sparse_matrix(23, 31, 0.12, 60 + k).tolil()
    SA[[0, 7, 22], :] = 0  # empty rows, the first and the last among them
    SA = SA.tocsr()
    SA.eliminate_zeros()
    SC = sparse_matrix(23, 31, 0.1, 70 + k)
    XB = np.round(rng.standard_normal((31, k)) * 4, 2)
    case(f"spmm_k{k}", spmm_program(23, 31, k), {"a": SA, "b": XB}, {"result": SA.toarray() @ XB}, "spmm")
    case(f"spmm_sum_k{k}", spmm_program(23, 31, k), {"a": SA, "c": SC, "b": XB},
         {"result": (SA + SC).toarray() @ XB}, "spmm_sum")
    case(f"spmm_max_k{k}", spmm_program(23, 31, k), {"a": SA, "b": XB},
         {"result": np.maximum(-1000.0, (SA.toarray()[:, :, None] * XB[None, :, :]).max(axis=1))}, "spmm_max")
    case(f"spmm_columns_first_k{k}", spmm_program(23, 31, k, b_cols_first=True), {"a": SA, "b": np.ascontiguousarray(XB.T)},
         {"result": SA.toarray() @ XB}, "spmm")
    IA = SA.copy()
    IA.data = np.round(IA.data * 3).astype(np.int64)
    IA.data[IA.data == 0] = 5
    XI = rng.integers(-1000, 1000, size=(31, k)).astype(np.int64)
    case(f"spmm_int_k{k}", spmm_program(23, 31, k, "i64"), {"a": IA, "b": XI}, {"result": IA.toarray() @ XI}, "spmm")
CA = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 0.0]]))
CB = sp.csr_matrix(np.array([[1.0, 2.0], [-1.0, 3.0], [2.0, -6.0]]))
case("spgemm_cancelling", spgemm_program(3, 3, 2), {"a": CA, "b": CB}, {"result": ("sparse", (CA @ CB).tocsr(), False)}, "spgemm")


def save(work, name, value):
    if hasattr(value, "save") and not isinstance(value, np.ndarray):
        path = os.path.join(work, name + getattr(value, "suffix", ".npz"))
        value.save(path)
        return path
    if isinstance(value, tuple) and value[0] == "ragged":
        path = os.path.join(work, name + ".npz")
        np.savez(path, **value[1])
        return path
    if sp.issparse(value):
        path = os.path.join(work, name + ".npz")
        sp.save_npz(path, value, compressed=False)
        return path
    path = os.path.join(work, name + ".npy")
    np.save(path, np.asarray(value))
    return path


def compare(got_path, want):
    if isinstance(want, tuple) and want[0] == "ieee":
        got, want = np.load(got_path), want[1]
        if got.shape != want.shape or got.dtype != want.dtype:
            return f"{got.dtype} {got.shape}, expected {want.dtype} {want.shape}"
        finite = np.isfinite(want)
        if not (np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[np.isinf(want)], want[np.isinf(want)])):
            return f"non-finite entries differ: got {got[~finite]}, expected {want[~finite]}"
        scale = max(np.abs(want[finite]).max(initial=0.0), 1.0)
        tol = 1e-5 if want.dtype == np.float32 else 1e-12
        if not np.all(np.isfinite(got[finite])) or np.abs(got[finite] - want[finite]).max(initial=0.0) > tol * scale:
            return "finite entries differ"
        return None
    if isinstance(want, tuple) and want[0] == "ragged":
        got = np.load(got_path)
        if sorted(got.files) != sorted(want[1]):
            return f"arrays {sorted(got.files)}, expected {sorted(want[1])}"
        for k, w in want[1].items():
            g = got[k]
            same = g.shape == w.shape and (np.array_equal(g, w) if w.dtype.kind in "iub" else np.allclose(g, w, rtol=1e-12, atol=1e-12))
            if not same:
                return f"`{k}` is {g}, expected {w}"
        return None
    if isinstance(want, tuple) and want[0] == "sparse":
        _, m, transposed = want
        raw = sp.load_npz(got_path)
        if raw.format in ("csr", "csc") and not raw.has_sorted_indices:
            return "stored coordinates are not sorted within their rows"
        got = raw.tocsr()
        want_m = (m.T if transposed else m).tocsr()
        want_m.eliminate_zeros()
        want_m.sort_indices()
        got.sort_indices()
        if got.shape != want_m.shape:
            return f"shape {got.shape}, expected {want_m.shape}"
        if not (np.array_equal(got.indptr, want_m.indptr) and np.array_equal(got.indices, want_m.indices)):
            return f"stored pattern differs: {got.nnz} entries, SciPy {want_m.nnz}"
        if not np.allclose(got.data, want_m.data, rtol=1e-12, atol=1e-12):
            return f"values differ: max error {np.abs(got.data - want_m.data).max()}"
        return None
    got = np.load(got_path)
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "iub":
        ok = np.array_equal(got, want)
    else:
        ok = np.allclose(got, want, rtol=1e-12, atol=1e-12)
    return None if ok else f"got {got}, expected {want}"


def take_flag(argv, name, default):
    """The value after `name` in `argv` (removed from it, with the flag), else `default`."""
    if name in argv:
        i = argv.index(name)
        value = argv[i + 1]
        del argv[i : i + 2]
        return value
    return default


def optional_passes(strata):
    """The optimizing passes `--disable-pass` can switch off (all but lowering and `schedule`)."""
    out = subprocess.run([strata, "lower", "--passes"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip() and line.split()[0] not in ("lower", "schedule")]


def run_case(strata, work, backend, name, program, inputs, expected, entry, disabled=None):
    src = os.path.join(work, name + ".strata")
    with open(src, "w") as f:
        f.write(program)
    cmd = [strata, "run", src, "--backend", backend]
    # How messages and output files name this run.
    label, tag = backend, backend
    if disabled:
        cmd += ["--disable-pass", disabled]
        label, tag = f"{backend}, {disabled} disabled", f"{backend}_without_{disabled}"
    if entry:
        cmd += ["--entry", entry]
    for k, v in inputs.items():
        cmd += ["--arg", f"{k}={save(work, f'{name}_{k}', v)}"]
    if "error" in expected:
        # Bad input: a clear error naming the cause, a non-zero exit, no panic (the text per
        # backend, or one for both).
        r = subprocess.run(cmd, capture_output=True, text=True)
        text = expected["error"]
        text = text[backend] if isinstance(text, dict) else text
        if r.returncode == 0 or text not in r.stderr or "panicked" in r.stderr:
            return f"{name} ({label}): expected an error containing {text!r}, got exit {r.returncode}: {r.stderr.strip()}"
        return None
    outs = {}
    for k, want in expected.items():
        ext = ".npz" if isinstance(want, tuple) and want[0] != "ieee" else ".npy"
        outs[k] = os.path.join(work, f"{name}_{tag}_out_{k}{ext}")
        cmd += ["--out", f"{k}={outs[k]}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return f"{name} ({label}): exit {r.returncode}: {r.stderr.strip()}"
    for k, want in expected.items():
        err = compare(outs[k], want)
        if err:
            return f"{name} ({label}) `{k}`: {err}"
    return None


def main_with(cases, argv):
    """Runs `cases` on their backends; with `--toggle`, native code also runs with each optional
    pass disabled in turn (`strata run --disable-pass`), every run against the same oracle."""
    argv = list(argv)
    toggle = "--toggle" in argv
    if toggle:
        argv.remove("--toggle")
    strata, work = argv[1], argv[2]
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    only = argv[3] if len(argv) > 3 else ""
    passes = optional_passes(strata) if toggle else []
    for name, program, inputs, expected, entry, backends in cases:
        if only not in name:
            continue
        runs = [(b, None) for b in backends]
        runs += [("native", p) for p in passes if "native" in backends and "error" not in expected]
        for backend, disabled in runs:
            err = run_case(strata, work, backend, name, program, inputs, expected, entry, disabled)
            if err:
                failed += 1
                print("FAIL", err)
            else:
                passed += 1
                print("ok", name, backend if disabled is None else f"{backend} without {disabled}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main_with(CASES, sys.argv)
