"""Arrays on a GPU from Python (`strata.gpu(n)`): placement is explicit and typed, mixing
devices is refused, and evaluating computes on the GPU — or, on a machine without an NVIDIA
driver (as in CI), fails naming the driver, never computing on the host in its stead. On a
machine with a GPU the values equal numpy's (scripts/gpu-check runs this file there too)."""

import os
import shutil

import numpy as np
import pytest

import strata
import strata.array_api as xp

HAS_GPU = shutil.which("nvidia-smi") is not None or os.environ.get("STRATA_REQUIRE_GPU") == "1"


def test_gpu_names_a_device():
    assert strata.gpu(0) == "gpu0" and strata.gpu(3).device == "gpu3"
    assert strata.gpu() == strata.Place("gpu0")
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="a GPU's number"):
            strata.gpu(bad)


def test_arrays_are_placed_explicitly_and_compute_follows_data():
    a = xp.asarray(np.arange(12.0).reshape(3, 4), device=strata.gpu(0))
    assert a.device == "gpu0"
    b = xp.sin(a) * 2.0 + xp.sum(a, axis=1, keepdims=True)
    assert b.device == strata.gpu(0)
    host = xp.asarray(np.ones((3, 4)))
    with pytest.raises(ValueError, match="different places"):
        _ = a + host
    # Moving is explicit, both ways.
    assert (host.to_device(strata.gpu(0)) + a).device == "gpu0"
    assert b.to_device("cpu").device == "cpu"
    assert xp.zeros((2, 2), device=strata.gpu(1)).device == "gpu1"
    with pytest.raises(ValueError, match="team arrays live on the host"):
        a.to_device(strata.Place("gpu0", strata.world))
    with pytest.raises(ValueError, match="team arrays live on the host"):
        xp.asarray(np.ones(4), device=strata.Place("gpu0", strata.world))


def test_evaluating_runs_on_the_gpu_or_names_the_driver():
    x = np.random.default_rng(0).standard_normal((64, 48))
    a = xp.asarray(x, device=strata.gpu(0))
    b = (xp.exp(a) - a * 3.0) / (1.0 + xp.abs(a))
    if HAS_GPU:
        np.testing.assert_allclose(np.asarray(b), (np.exp(x) - x * 3.0) / (1.0 + np.abs(x)), rtol=1e-13)
        np.testing.assert_allclose(float(xp.sum(a)), x.sum(), rtol=1e-12)
    else:
        with pytest.raises(strata.RunError, match=r"CUDA driver \(libcuda.so.1\) was not found"):
            np.asarray(b)


def test_programs_fields_and_stencils_take_a_device():
    m = strata.compile(
        """func @axpy(%a: f64, %x: tensor<f64, I[0:100]>, %y: tensor<f64, I[0:100]>) -> tensor<f64, I[0:100]> {
  return plus(multiplies(%a, %x), %y)
}"""
    )
    x, y = np.linspace(0, 1, 100), np.linspace(2, 3, 100)
    np.testing.assert_array_equal(m.axpy(np.float64(2.0), x, y, device="cpu"), 2.0 * x + y)
    with pytest.raises(strata.ArgumentError, match="a GPU"):
        m.axpy(np.float64(2.0), x, y, device="tpu0")
    I, J = strata.dims("I J")
    u = strata.field(np.arange(30.0).reshape(5, 6), I[0:5], J[0:6])
    lap = u.shift(I, 1) + u.shift(I, -1) - 2.0 * u
    step = strata.stencil(lambda f: f.shift(J, 1) - f)
    if HAS_GPU:
        np.testing.assert_array_equal(m.axpy(np.float64(2.0), x, y, device=strata.gpu(0)), 2.0 * x + y)
        np.testing.assert_array_equal(lap.numpy(device=strata.gpu(0)), lap.numpy())
        np.testing.assert_array_equal(step(u, device=strata.gpu(0)), step(u))
    else:
        for run in (lambda: m.axpy(np.float64(2.0), x, y, device=strata.gpu(0)),
                    lambda: lap.numpy(device=strata.gpu(0)),
                    lambda: step(u, device=strata.gpu(0))):
            with pytest.raises(strata.RunError, match=r"CUDA driver \(libcuda.so.1\) was not found"):
                run()
