"""Libraries nobody here wrote, called unchanged on `strata.array_api` arrays: scikit-learn with
`array_api_dispatch=True`, einops' array-API functions and array-api-extra. Each result is a
Strata array and equals the same call on numpy arrays; a second data size compiles no new kernel
library. (bench/clients.py times these calls at two sizes.)

The calls run in a child process (this file run as a script) with SCIPY_ARRAY_API=1 set before
anything imports scipy, as scikit-learn's users set it: the flag changes scipy for the whole
process (GT4Py's `gamma` is then no longer a function GT4Py can fingerprint), so the rest of the
suite runs without it."""

import json
import os
import subprocess
import sys
import traceback
import types

import numpy as np
import pytest


def data(n, m=10):
    """X (n x m) with columns of different scales and means, 3 class labels, a regression target."""
    r = np.random.default_rng(n)
    X = r.standard_normal((n, m)) * np.linspace(0.5, 3.0, m) + np.arange(m)
    labels = (X[:, 0] + 0.5 * X[:, 1] > 0.5).astype(np.int64) + (X[:, 2] > 3)
    target = X @ np.linspace(-1.0, 1.0, m) + 0.1 * r.standard_normal(n)
    return X, labels, target


# Class sizes 124/147/29, then 97/119/17: no extent equal to another by chance (a class of 3
# samples beside 3 classes shares a slot in the C, and a size without that coincidence makes a
# second variant: docs/design.md, "Extents are arguments").
SIZES = [300, 233]

# The calls whose second size is allowed a new library: lowering choices that depend on sizes
# make a second variant at a threshold (never one per size). LDA's within-class scatter reads
# each class mean once per row of its class: with 29 rows in the third class the reuse rule
# keeps that mean in a temporary, with 17 it recomputes it (strata-codegen extract.rs,
# RECOMPUTE_IN_CACHE).
SIZE_VARIANTS = {"LDA fit predict"}


def clients():
    """The clients' functions, imported where the calls run (the child process)."""
    import array_api_extra as xpx
    import einops.array_api as ea
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.metrics.pairwise import euclidean_distances
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    return types.SimpleNamespace(
        xpx=xpx, ea=ea, PCA=PCA, LDA=LinearDiscriminantAnalysis, Ridge=Ridge,
        euclidean_distances=euclidean_distances, MinMaxScaler=MinMaxScaler, StandardScaler=StandardScaler,
    )


# name -> (call(clients, X, labels, target), comparison): "abs" compares magnitudes (a PCA
# component's sign is a convention), "dist" allows the cancellation sklearn's distance formula
# has on the diagonal (|x|² - 2 x·x + |x|², in both libraries).
CASES = {
    "PCA fit_transform": (lambda m, X, c, t: m.PCA(n_components=3, svd_solver="full").fit_transform(X), "abs"),
    "LDA fit predict": (lambda m, X, c, t: m.LDA().fit(X, c).predict(X), "close"),
    "LDA decision_function": (lambda m, X, c, t: m.LDA().fit(X, c).decision_function(X), "close"),
    "Ridge fit predict": (lambda m, X, c, t: m.Ridge(alpha=0.5, solver="svd").fit(X, t).predict(X), "close"),
    "StandardScaler": (lambda m, X, c, t: m.StandardScaler().fit(X).transform(X), "close"),
    "MinMaxScaler": (lambda m, X, c, t: m.MinMaxScaler().fit(X).transform(X), "close"),
    "euclidean_distances": (lambda m, X, c, t: m.euclidean_distances(X[:20], X), "dist"),
    "einops rearrange reduce": (
        lambda m, X, c, t: m.ea.reduce(m.ea.rearrange(X, "n (g k) -> n g k", g=5), "n g k -> n g", "max"),
        "close",
    ),
    "einops repeat": (lambda m, X, c, t: m.ea.repeat(X[:4], "n m -> n m r", r=3), "close"),
    "array-api-extra cov": (lambda m, X, c, t: m.xpx.cov(X.T), "close"),
    "array-api-extra pad": (lambda m, X, c, t: m.xpx.pad(X, 2), "close"),
    "array-api-extra kron": (lambda m, X, c, t: m.xpx.kron(X[:3, :4], X[3:5, :2]), "close"),
}


def run_case(name, m, call, how):
    """Runs `call` on strata arrays and on numpy arrays at both sizes; raises if they differ or
    the second size compiled where it should not."""
    import sklearn

    import strata.array_api as xp

    with sklearn.config_context(array_api_dispatch=True):
        for i, n in enumerate(SIZES):
            X, c, t = data(n)
            before = xp.cache_stats()["libraries"]
            got = call(m, xp.asarray(X), xp.asarray(c), xp.asarray(t))
            assert isinstance(got, xp.Array), f"{name} returned {type(got).__name__}, not a Strata array"
            new_libraries = xp.cache_stats()["libraries"] - before
            want = call(m, X, c, t)
            got, want = np.asarray(got), np.asarray(want)
            assert got.shape == want.shape, f"{name}: shape {got.shape}, numpy {want.shape}"
            if how == "abs":
                got, want = np.abs(got), np.abs(want)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-6 if how == "dist" else 1e-10, err_msg=f"{name} at {n} rows")
            if i == 1 and name not in SIZE_VARIANTS:
                assert new_libraries == 0, f"{name} compiled {new_libraries} new libraries for {n} rows after {SIZES[0]}"


def main():
    """The child: every case, its outcome as JSON (name -> "" or the failure)."""
    results = {}
    m = clients()
    for name, (call, how) in CASES.items():
        try:
            run_case(name, m, call, how)
            results[name] = ""
        except Exception:  # noqa: BLE001 - the parent test reports it
            results[name] = traceback.format_exc()
    print(json.dumps(results))


@pytest.fixture(scope="module")
def outcomes():
    for client in ("sklearn", "einops", "array_api_extra"):
        pytest.importorskip(client)
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    p = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", CASES)
def test_a_client_call_on_strata_arrays_equals_it_on_numpy_at_two_sizes(outcomes, name):
    assert outcomes[name] == "", outcomes[name]


if __name__ == "__main__":
    main()
