"""`strata.load` / `strata.compile` and calling entries, against numpy and SciPy as oracles.

Run by `cargo test` (tests/pytest.rs) with the extension it built first on PYTHONPATH."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import scipy.sparse as sp

import strata

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def example(path):
    return strata.load(os.path.join(ROOT, "examples", path))


def lap_np(x):
    return x[2:, 1:-1] + x[:-2, 1:-1] + (x[1:-1, 2:] + x[1:-1, :-2]) - 4.0 * x[1:-1, 1:-1]


# ---- programs: load, call, signature ----


def test_laplacian_program_matches_numpy():
    m = example("stencil/laplacian.strata")
    # `@lap` is generic: typed only where the program calls it, so not an entry.
    assert m.entries == ("laplacian",)
    a = np.random.default_rng(1).standard_normal((7, 9, 9))
    want = lap_np(a)
    for backend in ("auto", "native", "interp"):
        np.testing.assert_array_equal(m.laplacian(inp=a, backend=backend), want)
    # By position, and the program's one `out` parameter as the result.
    np.testing.assert_array_equal(m.laplacian(a), want)
    np.testing.assert_array_equal(m.laplacian(inp=a, threads=2), want)


def test_a_function_with_several_results_returns_them_in_order():
    m = example("structured/divmod.strata")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 4)) * 10, rng.random(4) + 0.5
    q = np.floor(a / b)
    for backend in ("native", "interp"):
        got_q, got_f = m.split(a, b, backend=backend)
        np.testing.assert_allclose(got_q, q)
        np.testing.assert_allclose(got_f, (a - q * b) / b)
    assert [r["name"] for r in m.split.signature["results"]] == ["result.0", "result.1"]


def test_signature_describes_parameters_and_results():
    sig = example("stencil/laplacian.strata").laplacian.signature
    assert sig["kind"] == "program"
    (inp,) = sig["params"]
    assert inp["name"] == "inp" and inp["dtype"] == "float64" and inp["shape"] == [7, 9, 9]
    assert [d["name"] for d in inp["dims"]] == ["I", "J", "K"] and inp["dims"][0]["start"] == -1
    assert sig["results"][0]["name"] == "out" and sig["results"][0]["shape"] == [5, 7, 9]


def test_strided_and_fortran_arrays_are_read_in_logical_order():
    m = example("stencil/laplacian.strata")
    a = np.random.default_rng(2).standard_normal((9, 9, 7)).transpose(2, 0, 1)  # not C-contiguous
    np.testing.assert_array_equal(m.laplacian(a), lap_np(a))
    np.testing.assert_array_equal(m.laplacian(np.asfortranarray(a)), lap_np(a))
    big = np.random.default_rng(3).standard_normal((14, 9, 9))
    np.testing.assert_array_equal(m.laplacian(big[::2]), lap_np(big[::2]))


def test_out_writes_into_the_callers_array():
    m = example("stencil/laplacian.strata")
    a = np.random.default_rng(4).standard_normal((7, 9, 9))
    out = np.empty((5, 7, 9))
    got = m.laplacian(a, out=out)
    assert got is out and np.shares_memory(got, out)
    np.testing.assert_array_equal(out, lap_np(a))
    got = m.laplacian(inp=a, out={"out": out})
    assert got is out
    with pytest.raises(strata.ArgumentError, match="shape"):
        m.laplacian(a, out=np.empty((5, 7)))
    with pytest.raises(strata.ArgumentError, match="dtype"):
        m.laplacian(a, out=np.empty((5, 7, 9), dtype=np.float32))


def test_out_keeps_what_the_program_does_not_write():
    """A program writing a subset of its `out` parameter: with `out=`, the other elements keep
    the caller's values; without, they are zeros (as `strata run` writes them)."""
    m = strata.compile(
        "program @p(%x: tensor<f64, I[1:3]>, %out: out tensor<f64, I[0:5]>) {\n  %out[I[1:3]] <- %x\n}\n"
    )
    x = np.array([7.0, 8.0])
    np.testing.assert_array_equal(m.p(x), [0.0, 7.0, 8.0, 0.0, 0.0])
    buf = np.full(5, -1.0)
    for backend in ("native", "interp"):
        buf[:] = -1.0
        got = m.p(x, out=buf, backend=backend)
        assert got is buf
        np.testing.assert_array_equal(buf, [-1.0, 7.0, 8.0, -1.0, -1.0])


def test_a_bound_entry_runs_by_position_without_lookups():
    """`Program.bind` prepares an entry once; calls pass arguments in parameter order (a time
    loop's path), `None` for an `out` that starts as zeros, and write an `out` in place."""
    m = strata.compile(
        "program @p(%x: tensor<f64, I[1:3]>, %out: out tensor<f64, I[0:5]>) {\n  %out[I[1:3]] <- %x\n}\n"
    )
    for backend in ("native", "interp"):
        run = m._program.bind("p", backend)
        assert run.params == ["x", "out"]
        buf = np.full(5, -1.0)
        ((name, got),) = run(np.array([7.0, 8.0]), buf)
        assert name == "out"
        np.testing.assert_array_equal(got, [-1.0, 7.0, 8.0, -1.0, -1.0])
        if backend == "native":
            assert got is buf
        ((_, fresh),) = run(np.array([1.0, 2.0]), None)
        np.testing.assert_array_equal(fresh, [0.0, 1.0, 2.0, 0.0, 0.0])
        with pytest.raises(strata.ArgumentError, match="missing argument `out`"):
            run(np.array([1.0, 2.0]))
        with pytest.raises(strata.ArgumentError, match="takes 2 arguments, got 3"):
            run(np.array([1.0, 2.0]), None, None)


def test_python_numbers_for_scalar_parameters():
    """A 0-d parameter takes a Python number directly: an int or a float for a float type, an
    int for an integer type (in its range), a bool for bool; anything else is refused, naming
    the argument."""
    m = strata.compile(
        "func @f(%x: tensor<f64, I[0:2]>, %s: f64, %k: i32) -> tensor<f64, I[0:2]> {\n"
        "  %c = cast(%k, to = f64)\n  %y = multiplies(%x, %s)\n  %r = plus(%y, %c)\n  return %r\n}\n"
    )
    run = m._program.bind("f", "auto")
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(run(x, 0.5, 3)[0][1], [3.5, 4.0])
    np.testing.assert_array_equal(run(x, 2, -1)[0][1], [1.0, 3.0])
    with pytest.raises(strata.ArgumentError, match="argument `k`: a Python float for a parameter of type i32"):
        run(x, 0.5, 1.5)
    with pytest.raises(strata.ArgumentError, match="argument `s`: a Python bool"):
        run(x, True, 1)
    with pytest.raises(strata.ArgumentError, match="out of the range of i32"):
        run(x, 1.0, 2**40)


def test_several_results_come_back_as_a_named_tuple():
    m = strata.compile(
        textwrap.dedent(
            """\
            program @p(%x: tensor<i64, I[0:4]>, %twice: out tensor<i64, I[0:4]>, %square: out tensor<i64, I[0:4]>) {
              %t = plus(%x, %x) : tensor<i64, I[0:4]>
              %s = multiplies(%x, %x) : tensor<i64, I[0:4]>
              %twice <- %t
              %square <- %s
            }
            """
        )
    )
    x = np.arange(4, dtype=np.int64)
    r = m.p(x)
    assert r._fields == ("twice", "square")
    np.testing.assert_array_equal(r.twice, 2 * x)
    np.testing.assert_array_equal(r.square, x * x)
    sq = np.zeros(4, dtype=np.int64)
    r = m.p(x, out={"square": sq})
    assert r.square is sq and (sq == x * x).all()


# ---- element types and formats ----


def test_tuples_in_and_out():
    text = textwrap.dedent(
        """\
        func @swap(%p: tensor<(f64, i32), I[0:3]>) -> tensor<(i32, f64), I[0:3]> {
          %a = tuple_get(%p, index = 0) : tensor<f64, I[0:3]>
          %b = tuple_get(%p, index = 1) : tensor<i32, I[0:3]>
          %t = make_tuple(%b, %a) : tensor<(i32, f64), I[0:3]>
          return %t
        }
        """
    )
    m = strata.compile(text)
    a, b = np.array([1.5, 2.5, 3.5]), np.array([7, 8, 9], dtype=np.int32)
    x, y = m.swap((a, b))
    np.testing.assert_array_equal(x, b)
    np.testing.assert_array_equal(y, a)
    assert x.dtype == np.int32 and y.dtype == np.float64
    with pytest.raises(strata.ArgumentError, match="2 fields"):
        m.swap(a)


def test_tensor_of_tensors_as_one_array():
    m = example("nested/gemm_tensor_of_tensors.strata")
    rng = np.random.default_rng(5)
    a4 = rng.standard_normal((4, 8, 32, 32)).astype(np.float32)
    b4 = rng.standard_normal((8, 8, 32, 32)).astype(np.float32)
    got = m.entry(a4, b4)
    want = np.einsum("ikab,kjbc->ijac", a4.astype(np.float64), b4.astype(np.float64))
    assert got.shape == (4, 8, 32, 32) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "csr_array"])
def test_scipy_sparse_arguments(fmt):
    m = example("sparse/spmv_csr.strata")
    rng = np.random.default_rng(6)
    a = sp.random(4096, 4096, density=0.002, format="csr", random_state=np.random.RandomState(1))
    x = rng.standard_normal(4096)
    arg = sp.csr_array(a) if fmt == "csr_array" else a.asformat(fmt)
    np.testing.assert_allclose(m.spmv(arg, x), a @ x, rtol=1e-12, atol=1e-12)


def test_sparse_results_are_scipy_arrays():
    m = example("sparse/spmv_csr.strata")
    a = sp.random(4096, 4096, density=0.001, format="csr", random_state=np.random.RandomState(2))
    got = m.formats(a)  # DCSR: written as COO
    assert sp.issparse(got) and got.shape == a.shape
    np.testing.assert_array_equal(got.toarray(), a.toarray())
    dup = sp.coo_matrix((np.array([1.0, 2.0]), (np.array([3, 3]), np.array([4, 4]))), shape=(4096, 4096))
    assert m.formats(dup).toarray()[3, 4] == 3.0  # duplicates add up, as in SciPy
    with pytest.raises(strata.ArgumentError, match="shape"):
        m.spmv(sp.random(10, 10, density=0.5, format="csr"), np.zeros(4096))


def test_ragged_arguments():
    m = example("sparse/ragged_row_sum.strata")
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 65, 1000)
    lengths[:3] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    values = rng.standard_normal(offsets[-1]).astype(np.float32)
    got = m.row_sum(strata.Ragged((offsets,), values))
    want = np.array([values[offsets[i] : offsets[i + 1]].sum(dtype=np.float32) for i in range(1000)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(strata.ArgumentError, match="offsets"):
        m.row_sum(strata.Ragged((offsets[:-1],), values))


def test_absent_elements_are_zeros_on_every_backend():
    m = strata.compile(
        "func @f(%x: tensor<f64, V[0:3]>, %t: tensor<i32, E[0:4], NB_V[0:1]>) -> tensor<f64, E[0:4]> {\n"
        "  %y = unstructured_shift(%x, %t, neighbor = 0) : tensor<f64, E[0:4]>\n  return %y\n}\n"
        "func @mask(%x: tensor<f64, V[0:3]>, %t: tensor<i32, E[0:4], NB_V[0:1]>) -> tensor<bool, E[0:4]> {\n"
        "  %y = unstructured_shift(%x, %t, neighbor = 0) : tensor<f64, E[0:4]>\n"
        "  %m = can_deref(%y) : tensor<bool, E[0:4]>\n  return %m\n}\n"
    )
    x = np.array([10.0, 20.0, 30.0])
    t = np.array([[2], [-1], [0], [-1]], dtype=np.int32)
    for backend in ("native", "interp"):
        np.testing.assert_array_equal(m.f(x, t, backend=backend), [30.0, 0.0, 10.0, 0.0])
        np.testing.assert_array_equal(m.mask(x, t, backend=backend), [True, False, True, False])
    with pytest.raises(strata.RunError, match="outside"):
        m.f(x, np.array([[2], [5], [0], [-1]], dtype=np.int32))


# ---- errors ----


def test_errors_are_located_and_typed():
    assert issubclass(strata.ParseError, strata.Error) and issubclass(strata.RunError, strata.Error)
    with pytest.raises(strata.ParseError) as e:
        strata.compile("func @f(", name="bad.strata")
    assert "bad.strata:1:" in str(e.value)
    with pytest.raises(strata.VerifyError) as e:
        strata.compile("func @f(%x: tensor<f64, I[0:3]>) -> tensor<f64, I[0:4]> {\n  return %x\n}\n")
    assert "strata::verify::return_type_mismatch" in str(e.value) and "╭─" in str(e.value)
    with pytest.raises(OSError):
        strata.load("/nonexistent/x.strata")


def test_argument_errors_name_the_argument():
    m = example("stencil/laplacian.strata")
    a = np.zeros((7, 9, 9))
    with pytest.raises(strata.ArgumentError, match="missing argument `inp`"):
        m.laplacian()
    with pytest.raises(strata.ArgumentError, match="no input `x`"):
        m.laplacian(x=a)
    with pytest.raises(strata.ArgumentError, match="dtype float32"):
        m.laplacian(a.astype(np.float32))
    with pytest.raises(strata.ArgumentError, match=r"shape \[7, 9\]"):
        m.laplacian(np.zeros((7, 9)))
    with pytest.raises(strata.ArgumentError, match="takes 1 inputs"):
        m.laplacian(a, a)
    with pytest.raises(strata.ArgumentError, match="unknown backend"):
        m.laplacian(a, backend="gpu")


def test_run_time_errors_are_run_errors_with_the_location():
    m = strata.compile(
        "func @f(%x: tensor<i64, I[0:3]>, %y: tensor<i64, I[0:3]>) -> tensor<i64, I[0:3]> {\n"
        "  %q = divides(%x, %y) : tensor<i64, I[0:3]>\n  return %q\n}\n",
        name="div.strata",
    )
    x = np.array([1, 2, 3], dtype=np.int64)
    np.testing.assert_array_equal(m.f(x, np.array([1, 1, 3], dtype=np.int64)), [1, 2, 1])
    for backend in ("auto", "interp"):
        with pytest.raises(strata.RunError) as e:
            m.f(x, np.array([1, 0, 1], dtype=np.int64), backend=backend)
        assert "div.strata:2:" in str(e.value) and "division by zero" in str(e.value)


# ---- memory and the GIL ----


def test_a_large_input_is_not_copied():
    """A 1 GiB C-contiguous input is read in place: peak memory grows by far less than 1 GiB."""
    code = textwrap.dedent(
        """\
        import resource, numpy as np, strata
        n = 1 << 27
        m = strata.compile('''
        func @add(%acc: f64, %x: f64) -> f64 {
          %s = plus(%acc, %x) : f64
          return %s
        }
        func @total(%x: tensor<f64, I[0:134217728]>) -> tensor<f64> {
          %s = map_reduce(@add, %x, init = 0.0, einsum = "i->") : tensor<f64>
          return %s
        }
        ''')
        x = np.ones(n)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        s = m.total(x, backend="native")
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert float(s) == n, s
        print((after - before) // 1024)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    grown_mib = int(out.stdout.strip())
    assert grown_mib < 100, f"peak memory grew by {grown_mib} MiB for a 1024 MiB input"


def test_the_gil_is_released_while_a_program_runs():
    m = strata.compile(
        textwrap.dedent(
            """\
            func @add(%acc: f64, %x: f64) -> f64 {
              %s = plus(%acc, %x) : f64
              return %s
            }
            func @total(%x: tensor<f64, I[0:2000000]>) -> tensor<f64> {
              %s = map_reduce(@add, %x, init = 0.0, einsum = "i->") : tensor<f64>
              return %s
            }
            """
        )
    )
    x = np.ones(2_000_000)
    ticks = 0
    t = threading.Thread(target=lambda: m.total(x, backend="interp"))
    t.start()
    while t.is_alive():
        ticks += 1
    t.join()
    assert ticks > 1000, f"the main thread ran only {ticks} times while the program ran"


def test_results_have_one_python_type_whatever_the_backend():
    """Issue 31: a sparse vector is SciPy's 1-D `coo_array`, a ragged result a `strata.Ragged`
    with the argument's runs (an empty row at the end of a group included), on both backends."""
    m = strata.compile(
        textwrap.dedent(
            """
            func @scale(%x: tensor<f64, I[0:6] compressed>) -> tensor<f64, I[0:6] compressed> {
              return multiplies(%x, 2.0)
            }
            func @same(%y: tensor<f64, G[0:2], R[0:3] ragged, V[0:2] ragged>) -> tensor<f64, G[0:2], R[0:3] ragged, V[0:2] ragged> {
              return plus(%y, 0.0)
            }
            """
        )
    )
    v = sp.coo_array((np.array([1.0, 2.0]), (np.array([1, 4]),)), shape=(6,))
    y = strata.Ragged((np.array([0, 2, 3]), np.array([0, 1, 1, 2])), np.array([5.0, 7.0]))
    for backend in ("native", "interp"):
        got = m.scale(v, backend=backend)
        assert isinstance(got, sp.coo_array) and got.shape == (6,), (backend, type(got), got.shape)
        np.testing.assert_array_equal(got.toarray(), 2 * v.toarray())
        r = m.same(y, backend=backend)
        assert isinstance(r, strata.Ragged), (backend, type(r))
        assert [o.tolist() for o in r.offsets] == [[0, 2, 3], [0, 1, 1, 2]], (backend, r.offsets)
        np.testing.assert_array_equal(r.values, [5.0, 7.0])


def test_entries_explain_themselves():
    """`strata.__version__`; an entry's `__signature__` names its inputs, its docstring gives
    types, shapes and where it is written; a generic function is not an entry and says why."""
    import inspect

    assert strata.__version__.count(".") == 2
    m = strata.load(os.path.join(ROOT, "examples/stencil/laplacian.strata"))
    sig = inspect.signature(m.laplacian)
    assert list(sig.parameters) == ["inp", "out", "backend", "threads", "device"]
    assert sig.parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
    doc = m.laplacian.__doc__
    assert "examples/stencil/laplacian.strata:13" in doc
    assert "inp: tensor<f64, I[-1:6], J[-1:8], K[0:9]>  (numpy float64, shape 7×9×9)" in doc
    assert m.laplacian.signature["params"][0]["shape"] == [7, 9, 9]
    with pytest.raises(AttributeError, match="`@lap` is generic"):
        m.lap
    with pytest.raises(AttributeError, match="no entry `nothing`"):
        m.nothing


def test_python_numbers_for_scalar_parameters():
    """A Python number is taken for a scalar parameter when its dtype holds it exactly; other
    numbers, and SciPy matrices where a dense array is expected, are `ArgumentError`s that say
    what to do."""
    import scipy.sparse as sp

    f = strata.compile("func @scale(%x: tensor<f64, I[0:4]>, %a: f64, %n: i32) -> tensor<f64, I[0:4]> {\n"
                       "  %c = cast(%n, to = f64) : f64\n  %y = multiplies(%x, %a) : tensor<f64, I[0:4]>\n"
                       "  return plus(%y, %c)\n}")
    np.testing.assert_array_equal(f.scale(np.ones(4), 2, 3), np.full(4, 5.0))
    np.testing.assert_array_equal(f.scale(np.ones(4), 0.5, n=-1), np.full(4, -0.5))
    with pytest.raises(strata.ArgumentError, match="the Python int 9007199254740993 is not exactly representable as float64"):
        f.scale(np.ones(4), 2**53 + 1, 0)
    with pytest.raises(strata.ArgumentError, match="the Python float 1.5 is not exactly representable as int32"):
        f.scale(np.ones(4), 1.0, 1.5)
    with pytest.raises(strata.ArgumentError, match="is not exactly representable as int32"):
        f.scale(np.ones(4), 1.0, 2**40)
    with pytest.raises(strata.ArgumentError, match=r"a SciPy sparse csr_matrix where the parameter is dense .*`x.toarray\(\)`"):
        f.scale(sp.csr_matrix(np.ones((1, 4))), 1.0, 0)
