"""Creation functions, asarray, save and load_array on the team of every rank: each rank holds
only its rows, and the gathered values equal numpy's. Prints one JSON line per rank.
    python creation.py OUT_DIR"""
import json
import os
import sys

import numpy as np

import strata
import strata.array_api as xp


def main():
    out = sys.argv[1]
    w = strata.world
    made = {
        "zeros": (xp.zeros((13, 4), device=w), np.zeros((13, 4))),
        "ones": (xp.ones((13, 4), dtype=xp.int32, device=w), np.ones((13, 4), dtype=np.int32)),
        "full": (xp.full((9,), 2.5, device=w), np.full((9,), 2.5)),
        "arange": (xp.arange(3, 40, 3, device=w), np.arange(3, 40, 3)),
        "linspace": (xp.linspace(0.0, 1.0, 11, device=w), np.linspace(0.0, 1.0, 11)),
        "asarray": (xp.asarray(np.arange(30.0).reshape(10, 3), device=w), np.arange(30.0).reshape(10, 3)),
        "zeros_like": (xp.zeros_like(xp.ones((7, 2), device=w)), np.zeros((7, 2))),
        "to_device": (xp.asarray(np.arange(8.0)).to_device(w), np.arange(8.0)),
    }
    report = {"rank": w.rank, "size": w.size, "wrong": [], "blocks": {}}
    for name, (a, want) in made.items():
        got = np.asarray(a)
        if got.dtype != want.dtype or not np.array_equal(got, want) or a.device != w:
            report["wrong"].append(name)
        report["blocks"][name] = strata._strata.spmd.local_rows(a._x)
    # Elementwise work and a reduction on a team array, then back on the host.
    x = made["asarray"][0]
    y = xp.sum(x * x + 1.0, axis=0)
    if not np.allclose(np.asarray(y), np.sum(made["asarray"][1] ** 2 + 1.0, axis=0)):
        report["wrong"].append("sum")
    host = x.to_device("cpu")
    if host.device != "cpu" or not np.array_equal(np.asarray(host), made["asarray"][1]):
        report["wrong"].append("to_host")
    # Assignment of a row and of a column block: each rank its rows.
    x[0, :] = 7.0
    x[3:8, 1:] = xp.ones((5, 2), device=w)
    want = made["asarray"][1].copy()
    want[0, :] = 7.0
    want[3:8, 1:] = 1.0
    if not np.array_equal(np.asarray(x), want):
        report["wrong"].append("setitem")
    # A parallel write, and a read of each rank's rows only.
    path = os.path.join(out, "x.npy")
    strata.save(path, x)
    w.barrier()
    if not np.array_equal(np.load(path), want):
        report["wrong"].append("save")
    back = strata.load_array(path, device=w)
    report["blocks"]["load_array"] = strata._strata.spmd.local_rows(back._x)
    if not np.array_equal(np.asarray(back), want):
        report["wrong"].append("load_array")
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
