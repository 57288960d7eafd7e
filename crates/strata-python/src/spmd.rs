//! SPMD under `mpirun` for Python (`strata.world`, `python/strata/placement.py`): joining the
//! job, this rank's block of a team array, writing a team array into one `.npy`, ending a job
//! whose rank failed alone. Team arrays themselves are the array front end's
//! (`strata_array::spmd`).

use std::cell::RefCell;

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use strata_array::{self as sa, spmd, Place};

use crate::array_api::{err, numpy_values, PyArr};
use crate::errors::RunError;

thread_local! {
    /// The job this process joined (dropped by `finalize`: MPI ends).
    static JOB: RefCell<Option<spmd::Job>> = const { RefCell::new(None) };
}

/// Joins the job this process was started in and returns `(rank, size)`: under an MPI launcher
/// MPI starts (once); otherwise the process is a job of one rank and MPI is not needed.
#[pyfunction]
fn join() -> PyResult<(usize, usize)> {
    if let Some(rs) = spmd::joined() {
        return Ok(rs);
    }
    if !spmd::launched() {
        return Ok((0, 1));
    }
    let job = spmd::init().map_err(|e| RunError::new_err(e.to_string()))?;
    let rs = (job.rank(), job.size());
    JOB.with(|j| *j.borrow_mut() = Some(job));
    Ok(rs)
}

/// Whether this process joined an MPI job.
#[pyfunction]
fn joined() -> bool {
    spmd::joined().is_some()
}

/// Ends MPI on this rank (after the last team operation; at interpreter exit).
#[pyfunction]
fn finalize() {
    JOB.with(|j| j.borrow_mut().take());
}

/// Waits for every rank.
#[pyfunction]
fn barrier() -> PyResult<()> {
    JOB.with(|j| match &*j.borrow() {
        Some(job) => job.barrier().map_err(err),
        None => Ok(()),
    })
}

/// Ends every rank of the job with exit status `code` (an uncaught exception on one rank).
#[pyfunction]
fn abort(code: i32) {
    JOB.with(|j| {
        if let Some(job) = &*j.borrow() {
            job.abort(code);
        }
    });
}

/// The rows `(start, stop)` of the first axis this rank holds of `x` (every row unless it is a
/// team array of a joined job).
#[pyfunction]
fn local_rows(x: &PyArr) -> (usize, usize) {
    let r = x.0.local_rows();
    (r.start, r.end)
}

/// The rows of the first axis this rank would hold of an array of `shape` on a team of
/// `ranks` (`0`: every rank), or `None` when it holds the whole array (no job joined).
#[pyfunction]
fn block_rows(shape: Vec<usize>, ranks: u32) -> Option<(usize, usize)> {
    spmd::block_rows(&Place::team(ranks), &shape).map(|r| (r.start, r.end))
}

/// A team array of `shape` on `(device, ranks)` from `block`, this rank's rows of it (the whole
/// array when no job is joined).
#[pyfunction]
fn from_block(block: &Bound<'_, PyAny>, shape: Vec<usize>, device: String, ranks: u32) -> PyResult<PyArr> {
    let arr = block.cast::<PyUntypedArray>().map_err(|_| PyTypeError::new_err("expected a numpy array"))?;
    let place = Place { device, team: Some(ranks) };
    let made = numpy_values!(arr, |v| sa::Array::from_block_vec(&shape, v, &place));
    made.map(PyArr).map_err(err)
}

/// Evaluates `x` where it lives (a team array: each rank its block; nothing is gathered).
#[pyfunction]
fn evaluate(x: &PyArr) -> PyResult<()> {
    x.0.eval().map(drop).map_err(err)
}

/// Writes `x` into the `.npy` file `path`: a team array's ranks each write their block (a
/// collective call), a host array is written by rank 0.
#[pyfunction]
fn save(x: &PyArr, path: std::path::PathBuf) -> PyResult<()> {
    x.0.to_npy(&path).map_err(err)
}

/// Reads the `.npy` file `path` onto `(device, ranks)`: each rank reads only its rows.
#[pyfunction]
fn load(path: std::path::PathBuf, device: String, ranks: u32) -> PyResult<PyArr> {
    sa::Array::from_npy_on(&path, &Place { device, team: Some(ranks) }).map(PyArr).map_err(err)
}

/// This rank's distributed runs so far: `{"runs", "exchange_s", "halo_bytes", "overlap_s",
/// "wait_s", "read_s", "combine_s", "gathered_bytes"}` (seconds and bytes summed over the runs; a loop's share is a difference), and
/// `"prepared"`: the programs this process has prepared (compiled, or loaded from the cache),
/// which a loop that plans and compiles once does not increase after its first step.
#[pyfunction]
fn totals(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let t = spmd::totals();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("runs", t.runs)?;
    d.set_item("exchange_s", t.exchange_s)?;
    d.set_item("halo_bytes", t.halo_bytes)?;
    d.set_item("overlap_s", t.overlap_s)?;
    d.set_item("wait_s", t.wait_s)?;
    d.set_item("read_s", t.read_s)?;
    d.set_item("combine_s", t.combine_s)?;
    d.set_item("gathered_bytes", t.gathered_bytes)?;
    d.set_item("prepared", strata_engine::prepared_count())?;
    Ok(d)
}

/// Registers the submodule `spmd`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "spmd")?;
    for f in [
        wrap_pyfunction!(join, &m)?,
        wrap_pyfunction!(joined, &m)?,
        wrap_pyfunction!(finalize, &m)?,
        wrap_pyfunction!(barrier, &m)?,
        wrap_pyfunction!(abort, &m)?,
        wrap_pyfunction!(local_rows, &m)?,
        wrap_pyfunction!(block_rows, &m)?,
        wrap_pyfunction!(from_block, &m)?,
        wrap_pyfunction!(evaluate, &m)?,
        wrap_pyfunction!(save, &m)?,
        wrap_pyfunction!(load, &m)?,
        wrap_pyfunction!(totals, &m)?,
    ] {
        m.add_function(f)?;
    }
    parent.add_submodule(&m)?;
    Ok(())
}
