//! The array-API front end against numpy on the same data, in one run:
//!
//! ```text
//! cargo run --release -p strata-array --example array_frontend
//! ```
//!
//! - `standardize`: `sum(clip((x - mean(x, 0)) / std(x, 0), -3, 3)², 1)` over a 4096×4096 `f32`
//!   matrix — reductions, broadcasting and an elementwise chain through the lazy front end;
//!   the fraction of the machine's read bandwidth (bench/probes/stream.c) counts the
//!   compulsory traffic (the matrix read once).
//! - `small op`: `a + b` on 1,000 elements and reading the result: the per-evaluation overhead
//!   (tracing, cache lookup, argument copies, the call).
//!
//! Strata times exclude the first (compiling) evaluation, which is reported on its own;
//! numpy runs in the project's Python (scripts/python-env). Medians of several runs.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use strata_array::*;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn standardize(x: &Array) -> Result<Array> {
    let m = mean(x, Some(&[0]), true)?;
    let s = std(x, Some(&[0]), 0.0, true)?;
    let z = clip(&divide(&subtract(x, &m)?, &s)?, Some((-3.0).into()), Some(3.0.into()))?;
    sum(&multiply(&z, &z)?, Some(&[1]), None, false)
}

fn main() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("strata-array-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| ArrayError::Data(e.to_string()))?;
    let n = 4096;
    let mut state = 0x2545f4914f6cdd1du64;
    let data: Vec<f32> = (0..n * n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    let x = Array::from_vec(&[n, n], data)?;
    x.to_npy(&dir.join("x.npy"))?;

    let t = Instant::now();
    let first = standardize(&x)?.to_vec::<f32>()?;
    let cold = t.elapsed().as_secs_f64();
    let mut times = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        let r = standardize(&x)?.eval()?;
        times.push(t.elapsed().as_secs_f64());
        drop(r);
    }
    let strata_big = median(times);

    let a = Array::from_vec(&[1000], vec![1.0f64; 1000])?;
    let b = Array::from_vec(&[1000], vec![2.0f64; 1000])?;
    add(&a, &b)?.eval()?;
    let mut small = Vec::new();
    for _ in 0..201 {
        let t = Instant::now();
        add(&a, &b)?.eval()?;
        small.push(t.elapsed().as_secs_f64());
    }
    let strata_small = median(small);

    let py = Command::new(root.join("scripts/python-env")).output().map_err(|e| ArrayError::Data(e.to_string()))?;
    let python = String::from_utf8_lossy(&py.stdout).trim().to_string();
    let script = r#"
import sys, time, numpy as np
x = np.load(sys.argv[1]); want = np.load(sys.argv[2])
def standardize(x):
    z = np.clip((x - x.mean(axis=0, keepdims=True)) / x.std(axis=0, keepdims=True), -3, 3)
    return (z * z).sum(axis=1)
r = standardize(x)
assert np.allclose(r, want, rtol=1e-3), np.abs(r - want).max()
ts = []
for _ in range(7):
    t = time.perf_counter(); standardize(x); ts.append(time.perf_counter() - t)
a, b = np.ones(1000), np.full(1000, 2.0)
ss = []
for _ in range(201):
    t = time.perf_counter(); a + b; ss.append(time.perf_counter() - t)
print(sorted(ts)[3], sorted(ss)[100])
"#;
    Array::from_vec(&[n], first)?.to_npy(&dir.join("strata.npy"))?;
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(dir.join("x.npy"))
        .arg(dir.join("strata.npy"))
        .output()
        .map_err(|e| ArrayError::Data(e.to_string()))?;
    if !out.status.success() {
        return Err(ArrayError::Data(format!("numpy peer failed: {}", String::from_utf8_lossy(&out.stderr))));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text.split_whitespace().map(|s| s.parse().unwrap_or(f64::NAN)).collect();
    let (numpy_big, numpy_small) = (v[0], v[1]);

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let exe = dir.join("stream");
    let built = Command::new(cc)
        .args(["-O3", "-march=native", "-fopenmp"])
        .arg(root.join("bench/probes/stream.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .is_ok_and(|s| s.success());
    let read_gbps = if built {
        let o = Command::new(&exe).output().map_err(|e| ArrayError::Data(e.to_string()))?;
        let s = String::from_utf8_lossy(&o.stdout).to_string();
        s.split("\"read_gbps\":").nth(1).and_then(|r| r.trim().split([',', '}']).next()?.trim().parse::<f64>().ok())
    } else {
        None
    };
    let _ = std::fs::remove_dir_all(&dir);

    let gbps = (n * n * 4) as f64 / strata_big / 1e9;
    println!("array-API front end vs numpy (median of 7; small op: median of 201)");
    println!(
        "{:<12} {:>12} {:>12} {:>14} {:>8} {:>18}",
        "workload", "strata", "numpy", "numpy/strata", "GB/s", "of read bandwidth"
    );
    let frac = read_gbps.map_or("n/a".to_string(), |r| format!("{:.0} % of {r:.1}", 100.0 * gbps / r));
    println!(
        "{:<12} {:>9.1} ms {:>9.1} ms {:>13.2}x {:>8.1} {:>18}",
        "standardize",
        strata_big * 1e3,
        numpy_big * 1e3,
        numpy_big / strata_big,
        gbps,
        frac
    );
    println!(
        "{:<12} {:>9.1} µs {:>9.1} µs {:>13.2}x {:>8} {:>18}",
        "small op",
        strata_small * 1e6,
        numpy_small * 1e6,
        numpy_small / strata_small,
        "-",
        "-"
    );
    println!("first evaluation of standardize (tracing, verifying, compiling or loading from the disk cache, running): {:.0} ms", cold * 1e3);
    Ok(())
}
