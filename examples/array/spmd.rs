//! The array API under `mpirun` (SPMD, as sharpy runs it): every rank runs this program; the
//! team arrays hold one block of rows each, and each operation either runs on the blocks
//! (elementwise ops: no communication), with a halo or a combination of partials planned from
//! the types, or on the gathered whole (`collect` inside the program), distributed again.
//!
//!   cargo build --release -p strata-array --example spmd
//!   mpirun -n 3 target/release/examples/spmd x.npy OUT_DIR
//!
//! Reads `x.npy` (2-D, float64) onto the team of every rank — each rank reads only its rows —
//! and writes one `.npy` per operation into OUT_DIR (each rank its block of a team result).
//! Without `mpirun` it runs as one process. `tests/oracles/check_spmd.py` checks every file
//! against numpy.

use std::path::PathBuf;

use strata_array::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, out] = args.as_slice() else {
        return Err(ArrayError::Data("usage: spmd X.npy OUT_DIR".into()));
    };
    let job = spmd::init()?;
    let out = PathBuf::from(out);
    let world = Place::world();
    let x = Array::from_npy_on(input.as_ref(), &world)?;
    let rows = x.local_rows();
    eprintln!("rank {} of {}: rows {}..{} of {}", job.rank(), job.size(), rows.start, rows.end, x.shape()[0]);

    let save = |name: &str, a: &Array| a.to_npy(&out.join(format!("{name}.npy")));
    // Elementwise, on each rank's block.
    save("elementwise", &add(&multiply(&x, &x)?, &Array::scalar(1.0))?)?;
    save("where", &where_(&greater(&x, &Array::scalar(0.0))?, &x, &negative(&x)?)?)?;
    // Reductions: over the rows (partials combined across ranks) and within each row.
    save("sum_all", &sum(&x, None, None, false)?)?;
    save("sum_axis0", &sum(&x, Some(&[0]), None, false)?)?;
    save("sum_axis1", &sum(&x, Some(&[1]), None, false)?)?;
    save("mean_axis0", &mean(&x, Some(&[0]), false)?)?;
    save("max_all", &max(&x, None, false)?)?;
    save("argmax_axis1", &argmax(&x, Some(1), false)?)?;
    save("cumulative_sum_axis0", &cumulative_sum(&x, Some(0), None, false)?)?;
    // Moving rows between ranks: slices, flips, rolls, reshapes, transposes, products.
    save("slice", &index(&x, &[Index::Slice(Some(3), Some(30), Some(2))])?)?;
    save("flip", &flip(&x, None)?)?;
    save("roll", &roll(&x, &[3], Some(&[0]))?)?;
    save("matrix_transpose", &matrix_transpose(&x)?)?;
    let n = x.shape()[0] as isize;
    save("reshape", &reshape(&x, &[x.shape()[1] as isize, n], None)?)?;
    save("matmul", &matmul(&x, &matrix_transpose(&x)?)?)?;
    save("concat", &concat(&[&x, &x], Some(0))?)?;
    save("sort_axis0", &sort(&x, 0, false, true)?)?;
    // Creation on the team, and the first repro.
    let a = arange(Weak::Int(0), Some(Weak::Int(110)), Weak::Int(1), Some(DType::F32), &world)?;
    save("arange_slice", &index(&a, &[Index::Slice(Some(34), Some(82), Some(2))])?)?;
    // Placement: collect onto the host (every rank the whole), distribute again.
    let host = collect(&x)?;
    save("collect_distribute", &distribute(&multiply(&host, &Array::scalar(2.0))?, WORLD)?)?;
    // A read of a team array gathers it on every rank.
    let whole = x.to_vec::<f64>()?;
    let mine = x.local_vec::<f64>()?;
    let width = x.shape()[1];
    if whole[rows.start * width..rows.end * width] != mine[..] {
        return Err(ArrayError::Data(format!("rank {}: the gathered array differs from its block", job.rank())));
    }
    job.barrier()?;
    if job.rank() == 0 {
        println!("ok: {} ranks", job.size());
    }
    Ok(())
}
