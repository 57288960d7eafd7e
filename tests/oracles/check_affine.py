"""Generated affine contractions over rolled, padded and reshaped operands, against numpy.

Usage: python check_affine.py STRATA_BINARY WORKDIR [NAME_FILTER] [--count N] [--batch B]

What users write around convolutions and einsums, at random: a 1-d or 2-d operand of every
small extent (1 included) — given, or the extent-1 row of a matmul collapsed by
`collapse_shape` — rolled (two strided views joined by `concat`, as `xp.roll` traces), an
elementwise op, zero or constant padding by `concat` (or a `padding = v` attribute reading
outside the operand), then `map_reduce_aff` with random strides and dilations; beside it,
reductions of the same padded operand (a sum, a maximum, a dot product with itself) and an
einsum of the convolution's result. Several instances share one program (one compile), each
writing its own outputs. Every output is computed independently with numpy. `--count N` sets
the number of instances (CI: 48), `--batch B` the instances per program (CI: 8).
"""

import sys

import numpy as np

from check_sparse import case_list, main_with, take_flag

CASES = case_list()
argv = list(sys.argv)
COUNT = int(take_flag(argv, "--count", 48))
BATCH = int(take_flag(argv, "--batch", 8))
rng = np.random.default_rng(491)

FUNCS = """func @mac(%acc: f64, %a: f64, %b: f64) -> f64 { return plus(%acc, multiplies(%a, %b)) }
func @add(%acc: f64, %a: f64) -> f64 { return plus(%acc, %a) }
func @max(%acc: f64, %a: f64) -> f64 { return maximum(%acc, %a) }
"""

# Elementwise ops between the roll and the padding: IR text (on `{x}`) and numpy.
ELEMENTWISE = {
    "none": ("{x}", lambda a: a),
    "exp": ("exp(multiplies({x}, 0.5))", lambda a: np.exp(a * 0.5)),
    "neg": ("neg({x})", lambda a: -a),
    "abs": ("abs({x})", np.abs),
    "relu": ("maximum({x}, 0.0)", lambda a: np.maximum(a, 0.0)),
    "affine": ("plus(multiplies({x}, 2.0), 1.5)", lambda a: a * 2.0 + 1.5),
}


def ty(shape):
    return "tensor<" + "x".join(str(n) for n in shape) + "xf64>"


def dims(r):
    return ", ".join(f"d{k}" for k in range(r))


class Instance:
    """One generated instance: its parameters, statements, outputs and numpy values."""

    def __init__(self, j):
        self.j = j
        self.params, self.lines, self.outs = [], [], []
        self.inputs, self.expected = {}, {}
        self.counter = 0

    def let(self, expr):
        name = f"%v{self.j}_{self.counter}"
        self.counter += 1
        self.lines.append(f"  {name} = {expr}")
        return name

    def param(self, stem, value):
        name = f"{stem}{self.j}"
        self.params.append(f"%{name}: {ty(value.shape)}")
        self.inputs[name] = value
        return "%" + name

    def out(self, stem, value, expr):
        name = f"{stem}{self.j}"
        value = np.asarray(value)
        self.outs.append(f"%{name}: out {'tensor<f64>' if value.ndim == 0 else ty(value.shape)}")
        self.lines.append(f"  %{name} <- {expr}")
        self.expected[name] = value

    def view(self, x, shape, axis, start, length):
        """`x[start:start + length]` along `axis`: a strided view (`map_reduce_aff`, one point)."""
        r = len(shape)
        out = list(shape)
        out[axis] = length
        coords = ", ".join(f"d{k} + {start}" if k == axis else f"d{k}" for k in range(r))
        return self.let(
            f"map_reduce_aff(@add, {x}, init = 0.0, domain = {out}, outputs = {r}, shape = {out}, "
            f"out_map = ({dims(r)}) -> ({dims(r)}), maps = [({dims(r)}) -> ({coords})]) : {ty(out)}"
        ), out

    def concat(self, parts, axis):
        expr, joined = parts[0][0], list(parts[0][1])
        for name, s in parts[1:]:
            joined[axis] += s[axis]
            expr = f"concat({expr}, {name}, dim = _{axis}, mode = copy) : {ty(joined)}"
        return self.let(expr), joined


def source(inst, r):
    """The operand: given, or (sometimes) the extent-1 row of a matmul, collapsed for 1-d."""
    if rng.random() < 0.3:
        m, n = int(rng.integers(1, 5)), int(rng.integers(1, 8))
        p, q = np.round(rng.standard_normal((1, m)), 3), np.round(rng.standard_normal((m, n)), 3)
        prod = inst.let(f'map_reduce(@mac, {inst.param("p", p)}, {inst.param("q", q)}, init = 0.0, einsum = "ik,kj->ij")')
        if r == 1:
            return inst.let(f"collapse_shape({prod}, groups = [[0, 1]], mode = view) : {ty([n])}"), [n], (p @ q).ravel()
        return prod, [1, n], p @ q
    shape = [int(rng.integers(1, 8)) for _ in range(r)]
    x = np.round(rng.standard_normal(shape), 3)
    return inst.param("x", x), shape, x


def instance(j):
    inst = Instance(j)
    r = int(rng.integers(1, 3))
    x, shape, val = source(inst, r)
    # Roll along one axis: tail then head, as `xp.roll` traces it.
    if rng.random() < 0.4:
        axis = int(rng.integers(0, r))
        n = shape[axis]
        s = int(rng.integers(1, n)) if n > 1 else 0
        if s:
            tail = inst.view(x, shape, axis, n - s, s)
            head = inst.view(x, shape, axis, 0, n - s)
            x, shape = inst.concat([tail, head], axis)
            val = np.roll(val, s, axis=axis)
    op = str(rng.choice(list(ELEMENTWISE)))
    text, fn = ELEMENTWISE[op]
    if op != "none":
        x = inst.let(text.format(x=x))
        val = fn(val)
    # Padding by concat of constants, axis by axis.
    fill = float(rng.choice([0.0, 0.0, 1.0, -2.5]))
    for axis in range(r):
        lo, hi = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        parts = []
        for width in (lo, None, hi):
            if width is None:
                parts.append((x, shape))
            elif width:
                s = list(shape)
                s[axis] = width
                parts.append((inst.let(f"constant(value = {fill}) : {ty(s)}"), s))
        if len(parts) > 1:
            x, shape = inst.concat(parts, axis)
            pad = [(0, 0)] * r
            pad[axis] = (lo, hi)
            val = np.pad(val, pad, constant_values=fill)
    # The contraction: stride, dilation and kernel per axis; an offset read as `padding`.
    kernel = [int(rng.integers(1, 4)) for _ in range(r)]
    stride = [int(rng.integers(1, 3)) for _ in range(r)]
    dil = [int(rng.integers(1, 3)) for _ in range(r)]
    padded_attr = rng.random() < 0.3
    offset = [int(rng.integers(0, 2)) if padded_attr else 0 for _ in range(r)]
    attr_fill = float(rng.choice([0.0, 1.0])) if padded_attr else None
    outn = []
    for a in range(r):
        span = shape[a] + 2 * offset[a] - dil[a] * (kernel[a] - 1)
        if span < 1:  # the kernel does not fit: shrink it
            kernel[a], dil[a] = 1, 1
            span = shape[a] + 2 * offset[a]
        outn.append((span - 1) // stride[a] + 1)
    w = np.round(rng.standard_normal(kernel), 3)
    wp = inst.param("w", w)
    loops = r * 2
    d = [f"d{k}" for k in range(loops)]
    read = ", ".join(
        f"{stride[a]} * d{a} + {dil[a]} * d{r + a}" + (f" - {offset[a]}" if offset[a] else "") for a in range(r)
    )
    wmap = ", ".join(f"d{r + a}" for a in range(r))
    pad_attr = f", padding = {attr_fill}" if padded_attr else ""
    conv_expr = (
        f"map_reduce_aff(@mac, {x}, {wp}, init = 0.0, domain = {outn + kernel}, outputs = {r}, shape = {outn}, "
        f"out_map = ({', '.join(d)}) -> ({dims(r)}), maps = [({', '.join(d)}) -> ({read}), ({', '.join(d)}) -> ({wmap})]"
        f"{pad_attr}) : {ty(outn)}"
    )
    conv = inst.let(conv_expr)
    # numpy: the same sum, with the attribute's padding outside the operand.
    big = np.pad(val, [(o, o + s * n + dl * k) for o, s, n, dl, k in zip(offset, stride, outn, dil, kernel)],
                 constant_values=attr_fill if padded_attr else np.nan)
    want = np.zeros(outn)
    for idx in np.ndindex(*outn):
        for kk in np.ndindex(*kernel):
            at = tuple(stride[a] * idx[a] + dil[a] * kk[a] for a in range(r))
            want[idx] += big[at] * w[kk]
    inst.out("conv", want, conv)
    letters = "ij"[:r]
    # Reductions of the same padded operand, and an einsum of the result.
    inst.out("total", val.sum(), f'map_reduce(@add, {x}, init = 0.0, einsum = "{letters}->")')
    inst.out("peak", np.maximum(val.max(), -1000.0), f'map_reduce(@max, {x}, init = -1000.0, einsum = "{letters}->")')
    if rng.random() < 0.5:
        inst.out("self", (val * val).sum(), f'map_reduce(@mac, {x}, {x}, init = 0.0, einsum = "{letters},{letters}->")')
    if r == 2:
        inst.out("rows", want.sum(axis=1), f'map_reduce(@add, {conv}, init = 0.0, einsum = "ij->i")')
    name = f"j{j}_r{r}_{op}_k{'x'.join(map(str, kernel))}_s{''.join(map(str, stride))}_d{''.join(map(str, dil))}"
    return inst, name


def module(b, instances):
    params = [p for inst, _ in instances for p in inst.params]
    outs = [o for inst, _ in instances for o in inst.outs]
    # Each instance's lines after a comment saying how it was drawn.
    body = "\n".join(line for inst, name in instances for line in [f"  // {name}", *inst.lines])
    program = FUNCS + f"program @affine({', '.join(outs + params)}) {{\n{body}\n}}\n"
    inputs = {k: v for inst, _ in instances for k, v in inst.inputs.items()}
    expected = {k: v for inst, _ in instances for k, v in inst.expected.items()}
    CASES.add(f"affine_{b}", program, inputs, expected, "affine")


if __name__ == "__main__":
    made = [instance(j) for j in range(COUNT)]
    for b in range(0, COUNT, BATCH):
        module(b // BATCH, made[b : b + BATCH])
    print(f"{COUNT} generated instances in {len(CASES)} programs")
    main_with(CASES, argv)
