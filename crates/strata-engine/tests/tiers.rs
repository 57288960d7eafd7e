//! Tiered execution ([`strata_engine::tier`]) against values derived by hand: a small run of a
//! program not compiled yet is interpreted, its library compiles in the background once the
//! program has been interpreted long enough, and later runs (every size printing the same C)
//! run natively with the same values; a large run, a sparse operand or a library already in
//! the cache compile or load at once. One test in its own process: it needs a kernel cache of
//! its own, empty at the start.

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_engine::tier::{COMPILE_AFTER, TIER_MAX_COST};
use strata_engine::{prepare, Backend, Executed, Options, Prepared};
use strata_runtime::{Column, Data, Tensor, Value, ValueType};

fn tiered() -> Options {
    Options { tiered: true, ..Options::with_backend(Backend::Auto) }
}

fn prepared(text: &str, entry: &str, options: &Options) -> Arc<Prepared> {
    let module = strata_verify::parse(text).expect("parses");
    let info = strata_verify::verify(&module).expect("verifies");
    let h = module.function_by_name(entry).expect("the entry");
    prepare(&module, &info.types, h, options).expect("prepares")
}

/// `y = x * 3.5 + 1` over `n` values.
fn affine(n: usize) -> String {
    format!(
        "func @affine(%x: tensor<f64, I[0:{n}]>) -> tensor<f64, I[0:{n}]> {{
  return plus(multiplies(%x, 3.5), 1.0)
}}
"
    )
}

fn run(p: &Prepared, x: &[f64]) -> (Vec<f64>, Executed) {
    let out = p.run(&[value(p, x)]).expect("runs");
    let Value::Tensor(Tensor { data: Data::Scalars(Column::F64(v)), .. }) = &out.values[0].1 else {
        panic!("an f64 tensor")
    };
    (v.clone(), out)
}

fn expected(x: &[f64]) -> Vec<f64> {
    x.iter().map(|v| v * 3.5 + 1.0).collect()
}

#[test]
fn small_runs_are_interpreted_until_the_background_compile_is_ready_then_run_natively() {
    let cache = std::env::temp_dir().join(format!("strata-tiers-{}", std::process::id()));
    std::env::set_var("STRATA_CACHE_DIR", &cache);

    // A small run: interpreted at once, no library yet.
    let small = prepared(&affine(100), "affine", &tiered());
    let x: Vec<f64> = (0..100).map(|i| f64::from(i) * 0.25 - 7.0).collect();
    let (y, ran) = run(&small, &x);
    assert_eq!(y, expected(&x));
    assert!(ran.timings.is_none() && small.library().is_none(), "the first small run is interpreted");
    assert!(small.is_native(), "native once compiled");

    // Runs go on in the interpreter until they have spent COMPILE_AFTER in it, then the
    // library compiles in the background and a later run is native: same values throughout.
    let start = Instant::now();
    let mut interpreted = 1;
    loop {
        let (y, ran) = run(&small, &x);
        assert_eq!(y, expected(&x), "run {interpreted}");
        if ran.timings.is_some() {
            break;
        }
        interpreted += 1;
        assert!(start.elapsed() < Duration::from_secs(120), "no native run after {interpreted} runs");
    }
    assert!(small.library().is_some());
    eprintln!("{interpreted} interpreted runs (COMPILE_AFTER {COMPILE_AFTER:?}) before the native one");

    // Another size prints the same C: its first run finds the library compiled.
    let other = prepared(&affine(77), "affine", &tiered());
    let x: Vec<f64> = (0..77).map(|i| 1.0 / f64::from(i + 1)).collect();
    let (y, ran) = run(&other, &x);
    assert_eq!(y, expected(&x));
    assert!(ran.timings.is_some() && other.library() == small.library(), "another size runs the same library");

    // A run too large to interpret cheaply compiles at once (here: found in the cache).
    // (Its cost is its points times at least two expression nodes.)
    let n = usize::try_from(TIER_MAX_COST).expect("fits");
    let large = prepared(&affine(n), "affine", &tiered());
    let x: Vec<f64> = (0..n).map(|i| (i % 13) as f64).collect();
    let (y, ran) = run(&large, &x);
    assert_eq!(y, expected(&x));
    assert!(ran.timings.is_some(), "a large run is native at once");

    // A large run of a structure never compiled compiles at once, and small sizes of it then
    // run natively from their first run.
    let sum = |n: usize| {
        format!(
            "func @add(%s: f64, %x: f64) -> f64 {{
  return plus(%s, %x)
}}
func @total(%x: tensor<f64, I[0:{n}]>) -> tensor<f64> {{
  return map_reduce(@add, %x, init = 0.0, einsum = \"i->\")
}}
"
        )
    };
    let large = prepared(&sum(n), "total", &tiered());
    let x: Vec<f64> = (0..n).map(|i| (i % 5) as f64).collect();
    let Value::Tensor(t) = &large.run(&[value(&large, &x)]).expect("runs").values[0].1 else { panic!("a tensor") };
    assert_eq!(t.data, Data::Scalars(Column::F64(vec![x.iter().sum()])));
    let small = prepared(&sum(40_000), "total", &tiered());
    let ran = small.run(&[value(&small, &[1.0; 40_000])]).expect("runs");
    assert!(ran.timings.is_some(), "the library a large run compiled serves the small sizes");
    let Value::Tensor(t) = &ran.values[0].1 else { panic!("a tensor") };
    assert_eq!(t.data, Data::Scalars(Column::F64(vec![40_000.0])));

    // A sparse operand compiles at once: the interpreter holds values densely, which for a
    // sparse operand could take far more memory than its stored entries.
    let sparse = "func @add(%s: f64, %x: f64) -> f64 {
  return plus(%s, %x)
}
func @total(%x: tensor<f64, I[0:10], J[0:12] compressed>) -> tensor<f64> {
  return map_reduce(@add, %x, init = 0.0, einsum = \"ij->\")
}
";
    assert!(prepared(sparse, "total", &tiered()).library().is_some(), "a sparse operand compiles at once");

    // Without tiers (the default), a small run of a new structure compiles at once.
    let shifted = "func @shifted(%x: tensor<f64, I[0:40]>) -> tensor<f64, I[0:40]> {
  return minus(%x, 2.5)
}
";
    assert!(prepared(shifted, "shifted", &Options::with_backend(Backend::Auto)).library().is_some());
    let _ = std::fs::remove_dir_all(&cache);
}

fn value(p: &Prepared, x: &[f64]) -> Value {
    let f = &p.module().functions[p.entry()];
    let mut t = Tensor::zeros(&ValueType::from_ir(p.types(), f.exprs[f.params[0]].ty));
    t.data = Data::Scalars(Column::F64(x.to_vec()));
    Value::Tensor(t)
}
