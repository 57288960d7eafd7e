"""A generator of GT4Py programs as GT4Py's users write them, run on `strata.gt4py.backend` and
on GT4Py's embedded execution: several statements per program writing sub-domains of one or
more outputs (a boundary, then the interior; overlapping writes, where the later one wins),
later statements reading what earlier ones wrote, shifted operands, `where`, inputs and
outputs passed as slices of larger fields, a vertical scan on a sub-domain, and every program
called twice with changed data."""

import atexit
import functools
import importlib.util
import os
import shutil
import tempfile

import numpy as np

import gt4py.next as gtx

I, J = gtx.Dimension("I"), gtx.Dimension("J")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

EXPRESSIONS = [
    "{a} + {b}",
    "{a} * 2.0 - {b}",
    "{a}(I + 1) - {a}",
    "{a}(J - 1) + {b}(J + 1)",
    "where({a} > {b}, {a}, {b} * 0.5)",
    "maximum({a}, {b})",
    "abs({a}) + 1.0",
]


def source(rng):
    """A module with 2–4 field operators and a program of 2–5 statements over fields on
    (I, J, K); returns (text, number of inputs, number of outputs)."""
    n_in, n_out = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    ops, lines = [], []
    for k in range(int(rng.integers(2, 5))):
        e = EXPRESSIONS[int(rng.integers(len(EXPRESSIONS)))].format(a="a", b="b")
        lines.append(f"@gtx.field_operator\ndef op{k}(a: F, b: F) -> F:\n    return {e}\n")
        ops.append(k)
    lines.append(
        "@gtx.scan_operator(axis=K, forward=True, init=0.0)\n"
        "def ksum(state: gtx.float64, x: gtx.float64) -> gtx.float64:\n    return state + x\n"
    )
    params = [f"x{i}: F" for i in range(n_in)] + [f"o{i}: F" for i in range(n_out)]
    body = []
    for s in range(int(rng.integers(2, 6))):
        readable = [f"x{i}" for i in range(n_in)] + [f"o{i}" for i in range(n_out)] * (s > 0)
        a, b = (readable[int(rng.integers(len(readable)))] for _ in range(2))
        out = f"o{int(rng.integers(n_out))}"
        # Sub-domains inside the one-point halo every shift above needs.
        i0, i1 = sorted(int(v) for v in rng.integers(1, 8, 2))
        j0, j1 = sorted(int(v) for v in rng.integers(1, 7, 2))
        k0, k1 = sorted(int(v) for v in rng.integers(0, 5, 2))
        i1, j1, k1 = max(i1, i0 + 1), max(j1, j0 + 1), max(k1, k0 + 1)
        if a == out or b == out:
            # Reading and writing one field in one statement is not a GT4Py program.
            a, b = "x0", "x0"
        if rng.random() < 0.25:
            body.append(f"    ksum({a}, out={out}, domain={{I: ({i0}, {i1}), J: ({j0}, {j1}), K: ({k0}, {k1})}})")
        else:
            op = ops[int(rng.integers(len(ops)))]
            body.append(f"    op{op}({a}, {b}, out={out}, domain={{I: ({i0}, {i1}), J: ({j0}, {j1}), K: ({k0}, {k1})}})")
    lines.append(f"@gtx.program\ndef prog({', '.join(params)}):\n" + "\n".join(body) + "\n")
    return "\n".join(lines), n_in, n_out


@functools.cache
def _folder():
    """This process' folder for the generated modules, removed when the process ends (GT4Py
    reads their sources while it runs)."""
    folder = os.path.join(tempfile.gettempdir(), f"strata-gt4py-programs-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def run(seed, backend):
    """Builds program `seed` and runs it with `backend` (None: embedded) twice, the inputs
    changed between the calls; inputs and outputs are sometimes slices of larger fields.
    Returns the text and the outputs after each call."""
    rng = np.random.default_rng(seed)
    text, n_in, n_out = source(rng)
    # GT4Py reads a field operator's source: the program is a module in a file of its own.
    header = (
        "import gt4py.next as gtx\nfrom gt4py.next import abs, where, maximum\n"
        "from gt4py_programs import I, J, K\nF = gtx.Field[gtx.Dims[I, J, K], gtx.float64]\n\n"
    )
    path = os.path.join(_folder(), f"generated_{seed}.py")
    with open(path, "w") as f:
        f.write(header + text)
    spec = importlib.util.spec_from_file_location(f"generated_{seed}_{backend is None}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    prog = module.prog.with_backend(backend)
    data = np.random.default_rng(seed + 1)
    shape = (9, 8, 5)
    big_in = [data.standard_normal((shape[0] + 1, shape[1], shape[2])) for _ in range(n_in)]
    sliced = data.random() < 0.5
    inputs = [gtx.as_field([I, J, K], a)[1:, :, :] if sliced else gtx.as_field([I, J, K], a[1:]) for a in big_in]
    if sliced:
        # A slice keeps its coordinates: shift them back to start at 0, as the outputs do.
        inputs = [gtx.as_field([I, J, K], np.array(f.asnumpy())) for f in inputs]
    outs = [gtx.as_field([I, J, K], np.full(shape, -1.0)) for _ in range(n_out)]
    results = []
    for call in range(2):
        prog(*inputs, *outs, offset_provider={})
        results.append([o.asnumpy().copy() for o in outs])
        for f in inputs:
            f.ndarray[...] = f.ndarray * -1.5 + 0.25
    return text, results
