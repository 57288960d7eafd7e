"""numpy's answer for examples/array/climate.rs.

Usage: python check_array_example.py INPUT.npy OUTDIR
Compares OUTDIR/{anomalies,summary,ranking}.npy with numpy; prints "ok" or the differences.
"""

import sys

import numpy as np

temps = np.load(sys.argv[1])
out = sys.argv[2]
mean = temps.mean(axis=1, keepdims=True)
std = temps.std(axis=1, ddof=1, keepdims=True)
anomalies = np.clip((temps - mean) / std, -3.0, 3.0)
summary = np.stack([mean[:, 0], std[:, 0], temps.min(axis=1), temps.max(axis=1), temps.argmax(axis=1).astype(float)], axis=1)
ranking = np.argsort(-mean[:, 0], stable=True)

errors = []
for name, want, exact in [("anomalies", anomalies, False), ("summary", summary, False), ("ranking", ranking, True)]:
    got = np.load(f"{out}/{name}.npy")
    if got.dtype != want.dtype or got.shape != want.shape:
        errors.append(f"{name}: {got.dtype}{got.shape} vs numpy's {want.dtype}{want.shape}")
    elif exact and not np.array_equal(got, want):
        errors.append(f"{name}: {got} vs numpy's {want}")
    elif not exact and not np.allclose(got, want, rtol=1e-12, atol=1e-12):
        errors.append(f"{name}: max difference {np.max(np.abs(got - want))}")
print("\n".join(errors) if errors else "ok")
sys.exit(1 if errors else 0)
