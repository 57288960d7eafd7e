//! The array-API front end end to end: a year of daily temperatures per station in (`.npy`),
//! compiled array programs, `.npy` out.
//!
//! ```text
//! cargo run --release -p strata-array --example climate -- examples/array/temperatures.npy /tmp/climate
//! ```
//!
//! Writes `anomalies.npy` (each day's deviation from its station's mean in standard
//! deviations, clipped to ±3), `summary.npy` (per station: mean, std, min, max, warmest day)
//! and `ranking.npy` (stations from warmest to coldest mean), and prints the summary.
//! Every expression below only builds IR; the reads (`to_vec`, `to_npy`) compile and run it.

use std::path::Path;

use strata_array::*;

/// Computes the three outputs from `input` into the folder `out`.
pub fn run(input: &Path, out: &Path) -> Result<Vec<Vec<f64>>> {
    let temps = Array::from_npy(input)?; // stations × days
    let (stations, days) = (temps.shape()[0], temps.shape()[1]);

    let mean = statistics::mean(&temps, Some(&[1]), true)?; // stations × 1
    let std = statistics::std(&temps, Some(&[1]), 1.0, true)?;
    let z = divide(&subtract(&temps, &mean)?, &std)?;
    let anomalies = clip(&z, Some((-3.0).into()), Some(3.0.into()))?;

    let columns = [
        reshape(&mean, &[-1], None)?,
        reshape(&std, &[-1], None)?,
        statistics::min(&temps, Some(&[1]), false)?,
        statistics::max(&temps, Some(&[1]), false)?,
        astype(&argmax(&temps, Some(1), false)?, DType::F64)?,
    ];
    let summary = stack(&columns.iter().collect::<Vec<_>>(), 1)?; // stations × 5
    let ranking = argsort(&reshape(&mean, &[-1], None)?, -1, true, true)?;

    std::fs::create_dir_all(out).map_err(|e| ArrayError::Data(format!("cannot create {}: {e}", out.display())))?;
    anomalies.to_npy(&out.join("anomalies.npy"))?;
    summary.to_npy(&out.join("summary.npy"))?;
    ranking.to_npy(&out.join("ranking.npy"))?;

    let rows = summary.to_vec::<f64>()?;
    println!("{stations} stations × {days} days");
    println!("station    mean     std     min     max  warmest day");
    let table: Vec<Vec<f64>> = rows.chunks(5).map(<[f64]>::to_vec).collect();
    for (s, r) in table.iter().enumerate() {
        println!("{s:>7} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>12}", r[0], r[1], r[2], r[3], r[4] as usize);
    }
    println!("warmest to coldest: {:?}", ranking.to_vec::<i64>()?);
    Ok(table)
}

#[allow(dead_code)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let input = args.get(1).map(String::as_str).unwrap_or("examples/array/temperatures.npy");
    let out = args.get(2).map(String::as_str).unwrap_or("climate-out");
    if let Err(e) = run(Path::new(input), Path::new(out)) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
