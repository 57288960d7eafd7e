"""Random neighbor-reduction programs against numpy, on both backends.

Usage: python check_random_meshes.py STRATA_BINARY WORKDIR [COUNT]

Each program is generated here together with its numpy formulation (an independent oracle, not
the interpreter): values on vertices and edges of a random mesh whose tables skip neighbors
(some tables skip every one), combined by chains of neighbor reductions in both directions —
so reductions nest (V2E of an E2V sum), through called functions too — with sums, counts that
ignore the neighbor's value, maxima and minima (non-annihilating), weighted sums whose weight
lives on a narrower neighbor interval than the table's, elementwise arithmetic and values
reused several times. The programs run with `--backend interp` and `--backend native`; every
output must equal numpy's within 1e-12 of its largest magnitude.
"""

import os
import sys

import numpy as np

from check_sparse import case_list, main_with

PAYLOADS = """func @add(%acc: f64, %x: f64) -> f64 {
  return plus(%acc, %x)
}
func @count(%acc: f64, %x: f64) -> f64 {
  return plus(%acc, 1.0)
}
func @biggest(%acc: f64, %x: f64) -> f64 {
  return maximum(%acc, %x)
}
func @smallest(%acc: f64, %x: f64) -> f64 {
  return minimum(%acc, %x)
}
func @mac(%acc: f64, %x: f64, %w: f64) -> f64 {
  return plus(%acc, multiplies(%x, %w))
}
"""

def in_order(g, ok, init, step):
    """The fold over each row's neighbors in order from `init`, skipping the absent ones."""
    acc = np.full(g.shape[0], init, dtype=np.float64)
    for k in range(g.shape[1]):
        acc = np.where(ok[:, k], step(acc, g[:, k]), acc)
    return acc


def generate(rng, index):
    nv, ne = int(rng.integers(1, 9)), int(rng.integers(1, 12))
    nbv, nbe = int(rng.integers(1, 4)), int(rng.integers(1, 6))
    skip = rng.random()
    e2v = np.where(rng.random((ne, nbv)) < skip * 0.6, -1, rng.integers(0, nv, (ne, nbv))).astype(np.int32)
    v2e = np.where(rng.random((nv, nbe)) < skip * 0.6, -1, rng.integers(0, ne, (nv, nbe))).astype(np.int32)
    if rng.random() < 0.1:
        v2e[:] = -1
    size = {"V": nv, "E": ne}
    inputs = {"e2v": e2v, "v2e": v2e}
    params = [f"%e2v: tensor<i32, E[0:{ne}], NB_V[0:{nbv}]>", f"%v2e: tensor<i32, V[0:{nv}], NB_E[0:{nbe}]>"]
    vals = []  # (name, dim, numpy value)
    for d in ("V", "E"):
        a = np.round(rng.standard_normal(size[d]) * 10, 2)
        inputs[f"x{d}"] = a
        params.append(f"%x{d}: tensor<f64, {d}[0:{size[d]}]>")
        vals.append((f"%x{d}", d, a))
    helpers, body = [], []
    for n in range(int(rng.integers(2, 7))):
        name = f"%v{n}"
        kind = rng.integers(0, 5)
        src_name, src_dim, src = vals[int(rng.integers(0, len(vals)))]
        if kind <= 2:
            # A neighbor reduction into the other dimension through its table.
            dst = "E" if src_dim == "V" else "V"
            table, width = ("%e2v", nbv) if dst == "E" else ("%v2e", nbe)
            t = e2v if dst == "E" else v2e
            ok = t >= 0
            g = src[np.maximum(t, 0)]
            fold = ["add", "count", "biggest", "smallest", "mac"][int(rng.integers(0, 5))]
            init = float(rng.choice([0.0, 1.5, -3.0]))
            def reduction(value, tab, weight):
                shifted = f"shift_init({value}, {tab})"
                if fold == "mac":
                    return f"reduce(@mac, {shifted}, {weight}, init = {init!r})"
                return f"reduce(@{fold}, {shifted}, init = {init!r})"

            if fold == "mac":
                lo = int(rng.integers(0, width))
                hi = lo + int(rng.integers(1, width - lo + 2))
                w = np.round(rng.standard_normal(hi - lo), 2)
                inputs[f"w{n}"] = w
                params.append(f"%w{n}: tensor<f64, NB_0[{lo}:{hi}]>")
                # `acc + x · w_k` over the neighbors both operands have: [lo, min(hi, width)).
                acc = np.full(g.shape[0], init)
                for k in range(lo, min(hi, width)):
                    acc = np.where(ok[:, k], acc + g[:, k] * w[k - lo], acc)
                want = acc
            else:
                step = {
                    "add": lambda acc, x: acc + x,
                    "count": lambda acc, x: acc + 1.0,
                    "biggest": lambda acc, x: np.maximum(acc, x),
                    "smallest": lambda acc, x: np.minimum(acc, x),
                }[fold]
                want = in_order(g, ok, init, step)
            expr = reduction(src_name, table, f"%w{n}")
            if rng.random() < 0.3:
                # The reduction inside a called function (inlined natively).
                h = f"@red{n}"
                ptype = f"tensor<f64, {src_dim}[0:{size[src_dim]}]>"
                ttype = params[0].split(": ", 1)[1] if dst == "E" else params[1].split(": ", 1)[1]
                wparam = f", %w: {params[-1].split(': ', 1)[1]}" if fold == "mac" else ""
                inner = reduction("%s", "%t", "%w")
                helpers.append(
                    f"func {h}(%s: {ptype}, %t: {ttype}{wparam}) -> tensor<f64, {dst}[0:{size[dst]}]> {{\n"
                    f"  return {inner}\n}}\n"
                )
                wargs = f", %w{n}" if fold == "mac" else ""
                expr = f"call({h}, {src_name}, {table}{wargs})"
            vals.append((name, dst, want))
        elif kind == 3:
            # Elementwise with another value of the same dimension (reuse).
            same = [v for v in vals if v[1] == src_dim]
            other_name, _, other = same[int(rng.integers(0, len(same)))]
            op = ["plus", "minus", "multiplies", "maximum", "minimum"][int(rng.integers(0, 5))]
            f = {"plus": np.add, "minus": np.subtract, "multiplies": np.multiply, "maximum": np.maximum,
                 "minimum": np.minimum}[op]
            expr = f"{op}({src_name}, {other_name})"
            vals.append((name, src_dim, f(src, other)))
        else:
            c = float(rng.choice([0.5, 2.0, -1.0]))
            op = ["plus", "multiplies", "maximum"][int(rng.integers(0, 3))]
            f = {"plus": np.add, "multiplies": np.multiply, "maximum": np.maximum}[op]
            expr = f"{op}({src_name}, {c!r})"
            vals.append((name, src_dim, f(src, c)))
        body.append(f"  {name} = {expr}")
    # Every value on each dimension is an output, so reused values are checked too.
    outs = {}
    for d in ("V", "E"):
        last = [v for v in vals if v[1] == d and v[0].startswith("%v")]
        if last:
            outs[d] = last[-1]
    out_params = [f"%out{d}: out tensor<f64, {d}[0:{size[d]}]>" for d in outs]
    assigns = [f"  %out{d} <- {v[0]}" for d, v in outs.items()]
    program = (
        PAYLOADS + "".join(helpers)
        + f"program @p({', '.join(out_params + params)}) {{\n" + "\n".join(body + assigns) + "\n}\n"
    )
    expected = {f"out{d}": v[2] for d, v in outs.items()}
    return program, inputs, expected


def main():
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 120
    rng = np.random.default_rng(3131)
    cases = case_list()
    for i in range(count):
        program, inputs, expected = generate(rng, i)
        if expected:
            cases.add(f"mesh{i}", program, inputs, expected, "p")
    main_with(cases, sys.argv[:3])


if __name__ == "__main__":
    with np.errstate(all="ignore"):
        main()
