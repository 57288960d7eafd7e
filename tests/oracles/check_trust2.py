"""Issue 49's wrong results, against numpy and SciPy, and generators of the programs users write.

Usage: python check_trust2.py STRATA_BINARY WORKDIR [NAME_FILTER] [--count N]

Every case runs on both backends (`--backend interp` and `--backend native`) and must give the
numpy/SciPy answer. The fixed cases would each have failed before their fix (S1/S2: sibling
folds given one co-iteration set by `unify-fold-vars`; A1: GCC 12.2's masked loads of an
if-converted select; C1: a concatenation read through an affine map refused by the kernel
verifier; C2: a reduction materialized outside the select branch that guarded it). The
generators write what users write: several outputs sharing one sparse operand in every storage
format (CSR, DCSR, CSC, COO, with empty rows and negative entries) whose folds fill
differently (sum, max and min, counts that ignore the operand, exp-sums, products, sums of
squares, `A·x + B·x`); `where` over every small 2-d shape; zero padding by `concat` feeding a
1-d and a 2-d convolution. `--count N` sets the number of generated sparse programs (CI: 40).
"""

import sys

import numpy as np
import scipy.sparse as sp

from check_sparse import case_list, main_with, take_flag

CASES = case_list()
case = CASES.add
argv = list(sys.argv)
COUNT = int(take_flag(argv, "--count", 40))
rng = np.random.default_rng(49)

# ---- S1 / S2: sibling folds over one sparse operand ---------------------------------------------
S1 = """
!SV = tensor<f64, _0[0:10] compressed>
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  return plus(%acc, multiplies(%a, %b))
}
func @one(%acc: i64, %a: f64, %b: f64) -> i64 {
  return plus(%acc, 1)
}
program @dot(%dot: out tensor<f64>, %count_all: out tensor<i64>, %a: !SV, %b: !SV) {
  %dot <- map_reduce(@mac, %a, %b, init = 0.0, einsum = "i,i->")
  %count_all <- map_reduce(@one, %a, %b, init = 0, einsum = "i,i->")
}
"""
a = np.zeros(10)
a[[1, 3, 5]] = [1.0, 2.0, 3.0]
b = np.zeros(10)
b[[3, 5, 7]] = [4.0, 5.0, 6.0]
case("s1_dot_and_count", S1, {"a": sp.csr_array(a.reshape(1, -1)), "b": sp.csr_array(b.reshape(1, -1))},
     {"dot": np.array(a @ b), "count_all": np.array(10)}, "dot")

S2 = """
!A = tensor<f64, I[0:4], J[0:5] compressed>
!V = tensor<f64, I[0:4]>
func @add(%acc: f64, %a: f64) -> f64 { return plus(%acc, %a) }
func @max(%acc: f64, %a: f64) -> f64 { return maximum(%acc, %a) }
program @rows(%rowsum: out !V, %rowmax: out !V, %a: !A) {
  %rowsum <- map_reduce(@add, %a, init = 0.0, einsum = "ij->i")
  %rowmax <- map_reduce(@max, %a, init = -1000.0, einsum = "ij->i")
}
"""
A = np.array([[-1.0, 0, 2, 0, 0], [0, 0, 0, 0, 0], [-3.0, -4, 0, 0, 0], [0, 0, 0, 0, 5]])
case("s2_rowsum_rowmax", S2, {"a": sp.csr_array(A)}, {"rowsum": A.sum(1), "rowmax": sp.csr_array(A).max(axis=1).toarray().ravel()}, "rows")

# ---- generated: several outputs sharing one sparse operand --------------------------------------
# (what a fold over a row computes, its payload, its initial value, numpy's answer on the dense rows)
FOLDS = {
    "sum": ("plus(%acc, %a)", "0.0", lambda d: d.sum(1)),
    "max": ("maximum(%acc, %a)", "-1000.0", lambda d: np.maximum(d.max(1, initial=-np.inf), -1000.0)),
    "min": ("minimum(%acc, %a)", "1000.0", lambda d: np.minimum(d.min(1, initial=np.inf), 1000.0)),
    "count": ("plus(%acc, 1.0)", "0.0", lambda d: np.full(d.shape[0], float(d.shape[1]))),
    "expsum": ("plus(%acc, exp(%a))", "0.0", lambda d: np.exp(d).sum(1)),
    "prod": ("multiplies(%acc, %a)", "1.0", lambda d: d.prod(1)),
    "sumsq": ("plus(%acc, multiplies(%a, %a))", "0.0", lambda d: (d * d).sum(1)),
    "shifted": ("plus(%acc, plus(%a, 1.0))", "0.0", lambda d: (d + 1.0).sum(1)),
}
# Input formats: (levels of an m x n matrix over I, J; how the file holds it).
FORMATS = {
    "csr": ("I[0:{m}], J[0:{n}] compressed", lambda d: sp.csr_matrix(d)),
    "dcsr": ("I[0:{m}] compressed, J[0:{n}] compressed", lambda d: sp.csr_matrix(d)),
    "coo": ("I[0:{m}] compressed(nonunique), J[0:{n}] singleton", lambda d: sp.coo_matrix(d)),
    "csc": ("J[0:{n}], I[0:{m}] compressed", lambda d: sp.csr_matrix(d.T)),
}


def sparse_dense(m, n, density):
    d = np.round(rng.standard_normal((m, n)) * 2, 2)
    d[rng.random((m, n)) >= density] = 0.0
    if m > 2:
        d[rng.integers(m)] = 0.0  # an empty row
    return d


def generated_sparse(k):
    m, n = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    fmt = list(FORMATS)[k % len(FORMATS)]
    levels, stored = FORMATS[fmt]
    names = list(rng.choice(list(FOLDS), size=int(rng.integers(2, 4)), replace=False))
    if "sum" not in names:
        names[0] = "sum"  # a sum (annihilated by zero) beside folds that are not
    d = sparse_dense(m, n, float(rng.choice([0.0, 0.3, 0.7, 1.0])))
    e = sparse_dense(m, n, 0.5)
    x = np.round(rng.standard_normal(n), 2)
    ty = "tensor<f64, " + levels.format(m=m, n=n) + ">"
    # Einsum letters name the operand's levels in its order: CSC's are (J, I).
    ij = "ji" if fmt == "csc" else "ij"
    funcs = "".join(f"func @{f}(%acc: f64, %a: f64) -> f64 {{ return {FOLDS[f][0]} }}\n" for f in names)
    outs = ", ".join(f"%{f}: out tensor<f64, I[0:{m}]>" for f in names)
    body = "".join(f'  %{f} <- map_reduce(@{f}, %a, init = {FOLDS[f][1]}, einsum = "{ij}->i")\n' for f in names)
    # y = A·x + B·x next to the row folds (two einsums over one operand, one result).
    prog = (
        funcs
        + "func @mac(%acc: f64, %a: f64, %x: f64) -> f64 { return plus(%acc, multiplies(%a, %x)) }\n"
        + f"program @rows({outs}, %y: out tensor<f64, I[0:{m}]>, %a: {ty}, %b: {ty}, %x: tensor<f64, J[0:{n}]>) {{\n"
        + body
        + f'  %y <- plus(map_reduce(@mac, %a, %x, init = 0.0, einsum = "{ij},j->i"), map_reduce(@mac, %b, %x, init = 0.0, einsum = "{ij},j->i"))\n'
        + "}\n"
    )
    expected = {f: FOLDS[f][2](d) for f in names}
    expected["y"] = d @ x + e @ x
    case(f"gen_sparse_{k}_{fmt}_{'_'.join(names)}", prog, {"a": stored(d), "b": stored(e), "x": x}, expected, "rows")


for k in range(COUNT):
    generated_sparse(k)

# ---- A1: where over every small 2-d shape, one program ------------------------------------------
SHAPES = [(r, c) for r in range(1, 9) for c in range(1, 9)] + [(16, 16), (7, 13), (13, 7)]
funcs, outs, body, inputs, expected = [], [], [], {}, {}
for r, c in SHAPES:
    t = f"tensor<{r}x{c}xf64>"
    outs.append(f"%w{r}_{c}: out {t}")
    outs_in = f"%a{r}_{c}: {t}, %y{r}_{c}: {t}, %z{r}_{c}: {t}"
    funcs.append(outs_in)
    body.append(f"  %w{r}_{c} <- select(greater(%a{r}_{c}, constant(value = 0.0) : {t}), %y{r}_{c}, %z{r}_{c})\n")
    av = rng.standard_normal((r, c))
    yv, zv = rng.standard_normal((r, c)), rng.standard_normal((r, c))
    inputs.update({f"a{r}_{c}": av, f"y{r}_{c}": yv, f"z{r}_{c}": zv})
    expected[f"w{r}_{c}"] = np.where(av > 0, yv, zv)
WHERE = f"program @where({', '.join(outs)}, {', '.join(funcs)}) {{\n{''.join(body)}}}\n"
case("a1_where_every_small_shape", WHERE, inputs, expected, "where")

# ---- C1: zero padding by concat feeding an affine contraction (1-d, 2-d, an op between) ---------
CONV = """
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 { return plus(%acc, multiplies(%a, %b)) }
func @conv(%x: tensor<6xf64>, %w: tensor<3xf64>) -> tensor<6xf64> {
  %z = constant(value = 0.0) : tensor<1xf64>
  %x0 = concat(%z, %x, dim = _0, mode = copy) : tensor<7xf64>
  %xp = concat(%x0, %z, dim = _0, mode = copy) : tensor<8xf64>
  %r = map_reduce_aff(@mac, %xp, %w, init = 0.0, domain = [6, 3], outputs = 1, shape = [6], out_map = (d0, d1) -> (d0), maps = [(d0, d1) -> (d0 + d1), (d0, d1) -> (d1)]) : tensor<6xf64>
  return %r
}
func @conv_exp(%x: tensor<6xf64>, %w: tensor<3xf64>) -> tensor<6xf64> {
  %z = constant(value = 0.0) : tensor<1xf64>
  %x0 = concat(%z, %x, dim = _0, mode = copy) : tensor<7xf64>
  %xp = exp(concat(%x0, %z, dim = _0, mode = copy) : tensor<8xf64>)
  %r = map_reduce_aff(@mac, %xp, %w, init = 0.0, domain = [6, 3], outputs = 1, shape = [6], out_map = (d0, d1) -> (d0), maps = [(d0, d1) -> (d0 + d1), (d0, d1) -> (d1)]) : tensor<6xf64>
  return %r
}
func @conv2d(%x: tensor<4x5xf64>, %w: tensor<3x3xf64>) -> tensor<4x5xf64> {
  %zr = constant(value = 0.0) : tensor<1x5xf64>
  %rows = concat(%zr, concat(%x, %zr, dim = _0, mode = copy) : tensor<5x5xf64>, dim = _0, mode = copy) : tensor<6x5xf64>
  %zc = constant(value = 0.0) : tensor<6x1xf64>
  %xp = concat(%zc, concat(%rows, %zc, dim = _1, mode = copy) : tensor<6x6xf64>, dim = _1, mode = copy) : tensor<6x7xf64>
  %r = map_reduce_aff(@mac, %xp, %w, init = 0.0, domain = [4, 5, 3, 3], outputs = 2, shape = [4, 5], out_map = (d0, d1, d2, d3) -> (d0, d1), maps = [(d0, d1, d2, d3) -> (d0 + d2, d1 + d3), (d0, d1, d2, d3) -> (d2, d3)]) : tensor<4x5xf64>
  return %r
}
"""


def conv_padded(xp, w):
    return np.array([sum(xp[i + k] * w[k] for k in range(3)) for i in range(len(xp) - 2)])


def conv1(x, w):
    return conv_padded(np.concatenate([[0.0], x, [0.0]]), w)


def conv2(x, w):
    xp = np.pad(x, 1)
    return np.array([[(xp[i:i + 3, j:j + 3] * w).sum() for j in range(x.shape[1])] for i in range(x.shape[0])])


x6, w3 = rng.standard_normal(6), rng.standard_normal(3)
case("c1_concat_conv", CONV, {"x": np.arange(1.0, 7.0), "w": np.array([1.0, 10.0, 100.0])}, {"result": np.array([210.0, 321, 432, 543, 654, 65])}, "conv")
case("c1_concat_conv_random", CONV, {"x": x6, "w": w3}, {"result": conv1(x6, w3)}, "conv")
case("c1_concat_exp_conv", CONV, {"x": x6, "w": w3}, {"result": conv_padded(np.concatenate([[1.0], np.exp(x6), [1.0]]), w3)}, "conv_exp")
x45, w33 = rng.standard_normal((4, 5)), rng.standard_normal((3, 3))
case("c1_concat_conv2d", CONV, {"x": x45, "w": w33}, {"result": conv2(x45, w33)}, "conv2d")

# ---- C2: an extent-1 matmul, collapse, concat, row sum ------------------------------------------
C2 = """
func @plus(%p0: f64, %p1: f64) -> f64 {
  return plus(%p0, %p1)
}
func @mac(%acc: f64, %a: f64, %b: f64) -> f64 { return plus(%acc, multiplies(%a, %b)) }
func @main(%p0: tensor<1x2xf64>, %p1: tensor<2x2xf64>) -> tensor<1xf64> {
  %v3 = map_reduce(@mac, %p0, %p1, init = 0.0, einsum = "ik,kj->ij")
  %v4 = collapse_shape(%v3, groups = [[0, 1]], mode = view) : tensor<2xf64>
  %v5 = concat(%v4, %v4, dim = _0) : tensor<4xf64>
  %v6 = broadcast_in_dim(%v5, shape = [1, 4], dims = [1]) : tensor<1x4xf64>
  return map_reduce(@plus, %v6, init = 0.0, einsum = "ab->a")
}
"""
p0, p1 = np.array([[1.0, 2.0]]), np.array([[1.0, 2.0], [3.0, 4.0]])
case("c2_matmul_concat_rowsum", C2, {"p0": p0, "p1": p1}, {"result": np.sum(np.expand_dims(np.concatenate([(p0 @ p1).ravel()] * 2), 0), axis=1)}, "main")
p0r, p1r = rng.standard_normal((1, 2)), rng.standard_normal((2, 2))
case("c2_matmul_concat_rowsum_random", C2, {"p0": p0r, "p1": p1r}, {"result": np.sum(np.expand_dims(np.concatenate([(p0r @ p1r).ravel()] * 2), 0), axis=1)}, "main")

if __name__ == "__main__":
    main_with(CASES, argv)
