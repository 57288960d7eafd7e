//! The engine's memo is bounded (`MEMO_CAPACITY`). A test binary of its own: filling the
//! process-wide memo empties it, which would race with the memoization checks of the engine's
//! other tests if they ran in the same process.

use std::sync::Arc;

use strata_engine::{prepare, Backend, Options, Prepared, MEMO_CAPACITY};
use strata_runtime::{Column, Data, Tensor, Value, ValueType};

/// `2 x` over `n` elements, prepared for the interpreter (no compile per size).
fn doubling(n: usize) -> Arc<Prepared> {
    let text = format!("func @double(%x: tensor<{n}xf64>) -> tensor<{n}xf64> {{\n  return multiplies(%x, 2.0)\n}}\n");
    let module = strata_verify::parse(&text).expect("parses");
    let info = strata_verify::verify(&module).expect("verifies");
    let h = module.function_by_name("double").expect("the entry");
    prepare(&module, &info.types, h, &Options::with_backend(Backend::Interp)).expect("prepares")
}

fn run(p: &Prepared, x: Vec<f64>) -> Vec<f64> {
    let f = &p.module().functions[p.entry()];
    let mut t = Tensor::zeros(&ValueType::from_ir(p.types(), f.exprs[f.params[0]].ty));
    t.data = Data::Scalars(Column::F64(x));
    let ran = p.run(&[Value::Tensor(t)]).expect("runs");
    let Value::Tensor(Tensor { data: Data::Scalars(Column::F64(v)), .. }) = &ran.values[0].1 else { panic!("f64") };
    v.clone()
}

/// A process meeting ever new sizes holds at most `MEMO_CAPACITY` programs (a full memo starts
/// empty again; a program met again is prepared again, with the same values), not one per size.
#[test]
fn the_memo_is_bounded() {
    let first = doubling(1);
    let mut last = first.clone();
    for n in 2..=MEMO_CAPACITY + 1 {
        last = doubling(n);
    }
    assert!(Arc::ptr_eq(&last, &doubling(MEMO_CAPACITY + 1)), "the most recent program is found");
    let again = doubling(1);
    assert!(!Arc::ptr_eq(&first, &again), "the oldest is no longer held and is prepared again");
    for p in [&first, &again] {
        assert_eq!(run(p, vec![1.5]), vec![3.0]);
    }
}
