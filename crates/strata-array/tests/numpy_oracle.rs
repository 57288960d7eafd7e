//! Every array-API operation against numpy: tests/oracles/array_api_cases.py writes ~1,300
//! cases (inputs, numpy's outputs or numpy's refusal, edge cases included); each runs through
//! the Rust front end on the reference interpreter and on the native backend, and once more
//! with every input array distributed over a team of 3, and must match.

mod common;

use std::path::Path;
use std::process::Command;

use common::{python, root};

use serde_json::Value;
use strata_array::*;
use strata_runtime::{Data, Sv};

thread_local! {
    /// The team every input array of a case is distributed over (`None`: host arrays).
    static TEAM: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

/// A case's arguments, read by name.
struct Args<'a> {
    dir: &'a Path,
    map: &'a serde_json::Map<String, Value>,
}

impl Args<'_> {
    fn get(&self, k: &str) -> &Value {
        self.map.get(k).unwrap_or(&Value::Null)
    }
    fn array_of(&self, v: &Value) -> Array {
        let file = v["array"].as_str().unwrap_or_else(|| panic!("not an array: {v}"));
        let a = Array::from_npy(&self.dir.join(file)).expect("reads the oracle's input");
        match TEAM.get() {
            Some(ranks) if a.ndim() > 0 => distribute(&a, ranks).expect("distributes an input"),
            _ => a,
        }
    }
    fn array(&self, k: &str) -> Array {
        self.array_of(self.get(k))
    }
    fn arrays(&self, k: &str) -> Vec<Array> {
        self.get(k).as_array().expect("a list").iter().map(|v| self.array_of(v)).collect()
    }
    fn weak_of(v: &Value) -> Option<Weak> {
        if let Some(b) = v.get("bool") {
            return Some(Weak::Bool(b.as_bool()?));
        }
        if let Some(i) = v.get("int") {
            return Some(Weak::Int(i.as_i64()?));
        }
        let float = |f: &Value| -> f64 { f.as_str().expect("float as text").parse().expect("a float") };
        if let Some(c) = v.get("complex") {
            return Some(Weak::Complex(float(&c[0]), float(&c[1])));
        }
        v.get("float").map(|f| Weak::Float(float(f)))
    }
    fn weak(&self, k: &str) -> Weak {
        Args::weak_of(self.get(k)).unwrap_or_else(|| panic!("`{k}` is not a scalar"))
    }
    fn operand(&self, k: &str) -> Operand<'static> {
        let v = self.get(k);
        match Args::weak_of(v) {
            Some(w) => Operand::Scalar(w),
            None => Operand::Array(Box::leak(Box::new(self.array_of(v)))),
        }
    }
    fn int(&self, k: &str) -> i64 {
        self.get(k).as_i64().unwrap_or_else(|| panic!("`{k}` is not an integer"))
    }
    fn opt_int(&self, k: &str) -> Option<i64> {
        self.get(k).as_i64()
    }
    fn float(&self, k: &str) -> f64 {
        self.get(k).as_f64().unwrap_or_else(|| panic!("`{k}` is not a number"))
    }
    fn boolean(&self, k: &str, default: bool) -> bool {
        self.get(k).as_bool().unwrap_or(default)
    }
    fn ints(&self, k: &str) -> Vec<i64> {
        self.get(k).as_array().expect("a list").iter().map(|v| v.as_i64().expect("an integer")).collect()
    }
    /// `null`, an integer or a list of integers.
    fn axes(&self, k: &str) -> Option<Vec<isize>> {
        match self.get(k) {
            Value::Null => None,
            Value::Array(v) => Some(v.iter().map(|x| x.as_i64().expect("an axis") as isize).collect()),
            v => Some(vec![v.as_i64().expect("an axis") as isize]),
        }
    }
    fn dtype(&self, k: &str) -> Option<DType> {
        self.get(k).as_str().map(|s| dtype::from_name(s).unwrap_or_else(|| panic!("unknown dtype {s}")))
    }
    fn shape(&self, k: &str) -> Vec<usize> {
        self.ints(k).into_iter().map(|n| n as usize).collect()
    }
}

fn one(r: Result<Array>) -> Result<Vec<Array>> {
    r.map(|a| vec![a])
}

/// Runs one operation by name.
fn call(op: &str, a: &Args) -> Result<Vec<Array>> {
    let host = Place::host();
    macro_rules! binary {
        ($f:path) => {
            one($f(a.operand("x1"), a.operand("x2")))
        };
    }
    match op {
        "add" => binary!(add),
        "subtract" => binary!(subtract),
        "multiply" => binary!(multiply),
        "divide" => binary!(divide),
        "floor_divide" => binary!(floor_divide),
        "remainder" => binary!(remainder),
        "pow" => binary!(pow),
        "maximum" => binary!(maximum),
        "minimum" => binary!(minimum),
        "atan2" => binary!(atan2),
        "hypot" => binary!(hypot),
        "copysign" => binary!(copysign),
        "logaddexp" => binary!(logaddexp),
        "nextafter" => binary!(nextafter),
        "equal" => binary!(equal),
        "not_equal" => binary!(not_equal),
        "less" => binary!(less),
        "less_equal" => binary!(less_equal),
        "greater" => binary!(greater),
        "greater_equal" => binary!(greater_equal),
        "bitwise_and" => binary!(bitwise_and),
        "bitwise_or" => binary!(bitwise_or),
        "bitwise_xor" => binary!(bitwise_xor),
        "bitwise_left_shift" => binary!(bitwise_left_shift),
        "bitwise_right_shift" => binary!(bitwise_right_shift),
        "logical_and" => binary!(logical_and),
        "logical_or" => binary!(logical_or),
        "logical_xor" => binary!(logical_xor),
        "where" => one(where_(&a.array("condition"), a.operand("x1"), a.operand("x2"))),
        "clip" => {
            let bound = |k: &str| if a.get(k).is_null() { None } else { Some(a.operand(k)) };
            one(clip(&a.array("x"), bound("min"), bound("max")))
        }
        "astype" => one(astype(&a.array("x"), a.dtype("dtype").expect("a dtype"))),
        "result_type" => {
            let d = dtype::result_type("result_type", &[a.dtype("a").unwrap(), a.dtype("b").unwrap()])?;
            // The promoted dtype's name, as numpy's oracle writes it: a 0-d array of bytes is
            // awkward, so compare through a zero of that dtype.
            one(zeros(&[], Some(d), &host))
        }
        "arange" => one(arange(a.weak("start"), Some(a.weak("stop")), a.weak("step"), a.dtype("dtype"), &host)),
        "full" => one(full(&a.shape("shape"), a.weak("fill_value"), a.dtype("dtype"), &host)),
        "zeros" => one(zeros(&a.shape("shape"), a.dtype("dtype"), &host)),
        "ones" => one(ones(&a.shape("shape"), a.dtype("dtype"), &host)),
        "empty" => one(empty(&a.shape("shape"), a.dtype("dtype"), &host)),
        "full_like" => one(full_like(&a.array("x"), a.weak("fill_value"), a.dtype("dtype"))),
        "zeros_like" => one(zeros_like(&a.array("x"))),
        "ones_like" => one(ones_like(&a.array("x"))),
        "empty_like" => one(empty_like(&a.array("x"))),
        "eye" => one(eye(a.int("n_rows") as usize, a.opt_int("n_cols").map(|m| m as usize), a.int("k"), None, &host)),
        "linspace" => one(linspace(
            a.float("start"),
            a.float("stop"),
            a.int("num") as usize,
            a.boolean("endpoint", true),
            None,
            &host,
        )),
        "meshgrid" => {
            let xs = a.arrays("arrays");
            meshgrid(&xs.iter().collect::<Vec<_>>(), a.get("indexing").as_str().unwrap())
        }
        "tril" => one(tril(&a.array("x"), a.int("k"))),
        "triu" => one(triu(&a.array("x"), a.int("k"))),
        "index" => {
            let idx: Vec<Index> = a
                .get("index")
                .as_array()
                .unwrap()
                .iter()
                .map(|v| match v {
                    Value::String(s) if s == "newaxis" => Index::NewAxis,
                    Value::String(s) if s == "ellipsis" => Index::Ellipsis,
                    Value::Object(o) => {
                        let s = o["slice"].as_array().unwrap();
                        Index::Slice(s[0].as_i64(), s[1].as_i64(), s[2].as_i64())
                    }
                    v => Index::At(v.as_i64().unwrap()),
                })
                .collect();
            one(index(&a.array("x"), &idx))
        }
        "mask" => one(mask(&a.array("x"), &a.array("mask"))),
        "take" => one(take(&a.array("x"), &a.array("indices"), a.opt_int("axis").map(|x| x as isize))),
        "concat" => {
            let xs = a.arrays("arrays");
            one(concat(&xs.iter().collect::<Vec<_>>(), a.opt_int("axis").map(|x| x as isize)))
        }
        "stack" => {
            let xs = a.arrays("arrays");
            one(stack(&xs.iter().collect::<Vec<_>>(), a.int("axis") as isize))
        }
        "expand_dims" => one(expand_dims(&a.array("x"), a.int("axis") as isize)),
        "flip" => one(flip(&a.array("x"), a.axes("axis").as_deref())),
        "permute_dims" => {
            one(permute_dims(&a.array("x"), &a.ints("axes").iter().map(|&x| x as isize).collect::<Vec<_>>()))
        }
        "matrix_transpose" => one(matrix_transpose(&a.array("x"))),
        "reshape" => {
            one(reshape(&a.array("x"), &a.ints("shape").iter().map(|&x| x as isize).collect::<Vec<_>>(), None))
        }
        "roll" => one(roll(&a.array("x"), &a.ints("shift"), a.axes("axis").as_deref())),
        "squeeze" => one(squeeze(&a.array("x"), &a.axes("axis").unwrap())),
        "broadcast_to" => one(broadcast_to(&a.array("x"), &a.shape("shape"))),
        "broadcast_arrays" => {
            let xs = a.arrays("arrays");
            broadcast_arrays(&xs.iter().collect::<Vec<_>>())
        }
        "moveaxis" => {
            let (s, d): (Vec<isize>, Vec<isize>) = (
                a.ints("source").iter().map(|&x| x as isize).collect(),
                a.ints("destination").iter().map(|&x| x as isize).collect(),
            );
            one(moveaxis(&a.array("x"), &s, &d))
        }
        "repeat" => {
            let x = a.array("x");
            let axis = a.opt_int("axis").map(|x| x as isize);
            match a.get("repeats") {
                Value::Number(n) => one(repeat(&x, Repeats::Count(n.as_u64().unwrap() as usize), axis)),
                _ => one(repeat(&x, Repeats::Each(&a.array("repeats")), axis)),
            }
        }
        "tile" => one(tile(&a.array("x"), &a.shape("reps"))),
        "unstack" => unstack(&a.array("x"), a.int("axis") as isize),
        "searchsorted" => one(searchsorted(&a.array("x1"), &a.array("x2"), a.get("side").as_str() == Some("right"))),
        "can_cast" => one(Ok(Array::scalar(dtype::can_cast(a.dtype("a").unwrap(), a.dtype("b").unwrap())))),
        "isdtype" => {
            let kind = dtype::Kind::from_name(a.get("kind").as_str().unwrap()).expect("a kind");
            one(Ok(Array::scalar(dtype::isdtype(a.dtype("dtype").unwrap(), &[kind]))))
        }
        "finfo" => {
            let i = dtype::finfo(a.dtype("dtype").unwrap())?;
            one(Array::from_vec(&[5], vec![i.bits as f64, i.eps, i.max, i.min, i.smallest_normal]))
        }
        "iinfo" => {
            let i = dtype::iinfo(a.dtype("dtype").unwrap())?;
            one(Array::from_vec(&[3], vec![i.bits as f64, i.max as f64, i.min as f64]))
        }
        "conj" => one(conj(&a.array("x"))),
        "real" => one(real(&a.array("x"))),
        "imag" => one(imag(&a.array("x"))),
        "matmul" => one(matmul(&a.array("x1"), &a.array("x2"))),
        "vecdot" => one(vecdot(&a.array("x1"), &a.array("x2"), a.int("axis") as isize)),
        "tensordot" => {
            let axes = match a.get("axes") {
                Value::Array(p) => Axes::Pairs(
                    p[0].as_array().unwrap().iter().map(|x| x.as_i64().unwrap() as isize).collect(),
                    p[1].as_array().unwrap().iter().map(|x| x.as_i64().unwrap() as isize).collect(),
                ),
                v => Axes::Count(v.as_u64().unwrap() as usize),
            };
            one(tensordot(&a.array("x1"), &a.array("x2"), axes))
        }
        "argmax" => one(argmax(&a.array("x"), a.opt_int("axis").map(|x| x as isize), a.boolean("keepdims", false))),
        "argmin" => one(argmin(&a.array("x"), a.opt_int("axis").map(|x| x as isize), a.boolean("keepdims", false))),
        "nonzero" => nonzero(&a.array("x")),
        "unique_values" => one(unique_values(&a.array("x"))),
        "unique_counts" => unique_counts(&a.array("x")).map(|(v, c)| vec![v, c]),
        "unique_inverse" => unique_inverse(&a.array("x")).map(|(v, i)| vec![v, i]),
        "unique_all" => unique_all(&a.array("x")).map(|u| vec![u.values, u.indices, u.inverse_indices, u.counts]),
        "sort" => {
            one(sort(&a.array("x"), a.int("axis") as isize, a.boolean("descending", false), a.boolean("stable", true)))
        }
        "argsort" => one(argsort(
            &a.array("x"),
            a.int("axis") as isize,
            a.boolean("descending", false),
            a.boolean("stable", true),
        )),
        "sum" | "prod" | "max" | "min" | "mean" | "any" | "all" | "var" | "std" => {
            let x = a.array("x");
            let axes = a.axes("axis");
            let (ax, kd) = (axes.as_deref(), a.boolean("keepdims", false));
            one(match op {
                "sum" => sum(&x, ax, None, kd),
                "prod" => prod(&x, ax, None, kd),
                "max" => max(&x, ax, kd),
                "min" => min(&x, ax, kd),
                "mean" => mean(&x, ax, kd),
                "any" => any(&x, ax, kd),
                "all" => all(&x, ax, kd),
                "var" => var(&x, ax, a.float("correction"), kd),
                _ => std(&x, ax, a.float("correction"), kd),
            })
        }
        "cumulative_sum" => one(cumulative_sum(
            &a.array("x"),
            a.opt_int("axis").map(|x| x as isize),
            None,
            a.boolean("include_initial", false),
        )),
        "cumulative_prod" => one(cumulative_prod(
            &a.array("x"),
            a.opt_int("axis").map(|x| x as isize),
            None,
            a.boolean("include_initial", false),
        )),
        "abs" => one(abs(&a.array("x"))),
        "negative" => one(negative(&a.array("x"))),
        "positive" => one(positive(&a.array("x"))),
        "square" => one(square(&a.array("x"))),
        "sign" => one(sign(&a.array("x"))),
        "floor" => one(floor(&a.array("x"))),
        "ceil" => one(ceil(&a.array("x"))),
        "trunc" => one(trunc(&a.array("x"))),
        "round" => one(round(&a.array("x"))),
        "isnan" => one(isnan(&a.array("x"))),
        "isinf" => one(isinf(&a.array("x"))),
        "isfinite" => one(isfinite(&a.array("x"))),
        "signbit" => one(signbit(&a.array("x"))),
        "bitwise_invert" => one(bitwise_invert(&a.array("x"))),
        "logical_not" => one(logical_not(&a.array("x"))),
        "sqrt" => one(sqrt(&a.array("x"))),
        "exp" => one(exp(&a.array("x"))),
        "expm1" => one(expm1(&a.array("x"))),
        "log" => one(log(&a.array("x"))),
        "log1p" => one(log1p(&a.array("x"))),
        "log2" => one(log2(&a.array("x"))),
        "log10" => one(log10(&a.array("x"))),
        "sin" => one(sin(&a.array("x"))),
        "cos" => one(cos(&a.array("x"))),
        "tan" => one(tan(&a.array("x"))),
        "asin" => one(asin(&a.array("x"))),
        "acos" => one(acos(&a.array("x"))),
        "atan" => one(atan(&a.array("x"))),
        "sinh" => one(sinh(&a.array("x"))),
        "cosh" => one(cosh(&a.array("x"))),
        "tanh" => one(tanh(&a.array("x"))),
        "asinh" => one(asinh(&a.array("x"))),
        "acosh" => one(acosh(&a.array("x"))),
        "atanh" => one(atanh(&a.array("x"))),
        other => panic!("the oracle names an operation the test does not know: {other}"),
    }
}

/// Units in the last place between two floats of `bits` mantissa precision.
fn ulps(a: f64, b: f64, f32: bool) -> f64 {
    let scale = if f32 { f32::EPSILON as f64 } else { f64::EPSILON };
    let m = b.abs().max(if f32 { f32::MIN_POSITIVE as f64 } else { f64::MIN_POSITIVE });
    (a - b).abs() / (m * scale)
}

/// Compares one output; `None` when equal.
fn compare(got: &Array, want_file: &Path, tol: &str) -> Option<String> {
    let want = Array::from_npy(want_file).expect("reads numpy's output");
    if got.dtype() != want.dtype() {
        return Some(format!("dtype {} ≠ numpy's {}", got.dtype().numpy_name(), want.dtype().numpy_name()));
    }
    if got.shape() != want.shape() {
        return Some(format!("shape {:?} ≠ numpy's {:?}", got.shape(), want.shape()));
    }
    let (g, w) = match (got.eval(), want.eval()) {
        (Ok(g), Ok(w)) => (g, w),
        (Err(e), _) => return Some(format!("evaluation failed: {e}")),
        _ => unreachable!(),
    };
    let (Data::Scalars(gc), Data::Scalars(wc)) = (&g.data, &w.data) else { unreachable!() };
    let is_f32 = got.dtype().real_part() == strata_ir::Scalar::F32;
    let maxabs = (0..wc.len()).map(|i| wc.get(i).as_c128().norm()).filter(|x| x.is_finite()).fold(0.0, f64::max);
    let eps = if is_f32 { f32::EPSILON as f64 } else { f64::EPSILON };
    for i in 0..wc.len() {
        let (x, y) = (gc.get(i), wc.get(i));
        let ok = match (x, y) {
            (Sv::C64(_) | Sv::C128(_), _) if tol == "special" => {
                // Which parts are NaN, infinite or finite (signs of NaN and zero parts, and the
                // digits, differ among correct implementations of Annex G).
                let class = |v: f64| (v.is_nan(), v.is_infinite());
                let (a, b) = (x.as_c128(), y.as_c128());
                let finite = a.re.is_finite() && a.im.is_finite() && b.re.is_finite() && b.im.is_finite();
                (class(a.re), class(a.im)) == (class(b.re), class(b.im))
                    && (!finite || (a - b).norm() <= 8.0 * eps * b.norm().max(1.0))
            }
            (Sv::C64(_) | Sv::C128(_), _) if tol == "cplx" => {
                let (a, b) = (x.as_c128(), y.as_c128());
                (a - b).norm() <= 8.0 * eps * b.norm()
            }
            (Sv::C64(_) | Sv::C128(_), _) => {
                let (a, b) = (x.as_c128(), y.as_c128());
                part_ok(a.re, b.re, tol, is_f32, maxabs) && part_ok(a.im, b.im, tol, is_f32, maxabs)
            }
            (Sv::F32(_) | Sv::F64(_), _) => part_ok(x.as_f64(), y.as_f64(), tol, is_f32, maxabs),
            _ => x == y,
        };
        if !ok {
            return Some(format!("element {i}: {x} ≠ numpy's {y} (tolerance {tol})"));
        }
    }
    None
}

/// Whether the float `a` is numpy's `b` under tolerance `tol` (see the oracle's docs).
fn part_ok(a: f64, b: f64, tol: &str, is_f32: bool, maxabs: f64) -> bool {
    if tol == "zero" && a == 0.0 && b == 0.0 {
        true
    } else if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() || tol == "exact" || tol == "zero" {
        a == b && a.is_sign_negative() == b.is_sign_negative() || (a.is_nan() && b.is_nan())
    } else if tol == "ulp" {
        a == b || ulps(a, b, is_f32) <= 4.0
    } else {
        (a - b).abs() <= maxabs * if is_f32 { 1e-5 } else { 1e-12 }
    }
}

fn run_case(dir: &Path, case: &Value) -> Option<String> {
    let op = case["op"].as_str().unwrap();
    let args = Args { dir, map: case["args"].as_object().unwrap() };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        call(op, &args).and_then(|outs| {
            // Team results are collected (compute follows data: an operation on team arrays
            // leaves its result on the team unless it is 0-d); evaluate everything, so run-time
            // errors count as errors.
            let outs: Vec<Array> = outs
                .iter()
                .map(|o| if o.place().team.is_some() { collect(o) } else { Ok(o.clone()) })
                .collect::<Result<_>>()?;
            for o in &outs {
                o.eval()?;
            }
            Ok(outs)
        })
    }));
    let result = match result {
        Ok(r) => r,
        Err(_) => return Some("panicked".into()),
    };
    if case.get("error").and_then(Value::as_bool) == Some(true) {
        return match result {
            Err(e) if !e.to_string().is_empty() => None,
            Err(_) => Some("an empty error message".into()),
            Ok(_) => Some("succeeded where numpy refuses".into()),
        };
    }
    let outs = match result {
        Ok(o) => o,
        Err(e) => return Some(format!("failed where numpy succeeds: {e}")),
    };
    let files = case["outputs"].as_array().unwrap();
    if op == "result_type" {
        let want = std::fs::read(dir.join(files[0].as_str().unwrap())).expect("reads");
        let name = outs[0].dtype().numpy_name();
        // The .npy of a 0-d string array ends with the UTF-32 / byte text of the name.
        let text: String =
            want.iter().rev().take(64).rev().filter(|b| b.is_ascii_alphanumeric()).map(|&b| b as char).collect();
        return if text.ends_with(name) {
            None
        } else {
            Some(format!("result_type {name}, numpy's file ends {text:?}"))
        };
    }
    if outs.len() != files.len() {
        return Some(format!("{} outputs, numpy has {}", outs.len(), files.len()));
    }
    let tol = case["tol"].as_str().unwrap_or("exact");
    for (o, f) in outs.iter().zip(files) {
        if let Some(m) = compare(o, &dir.join(f.as_str().unwrap()), tol) {
            return Some(m);
        }
    }
    None
}

#[test]
fn every_operation_matches_numpy_on_both_backends() {
    let dir = std::env::temp_dir().join(format!("strata-array-oracle-{}", std::process::id()));
    let out = Command::new(python())
        .arg(root().join("tests/oracles/array_api_cases.py"))
        .arg(&dir)
        .output()
        .expect("python runs");
    assert!(out.status.success(), "the oracle generator failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let cases: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    assert!(cases.len() > 900, "the oracle lists every operation with its edge cases");
    // Two threads, each with its own compiled-program cache; each case runs on both backends.
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let (cases, dir) = (&cases, &dir);
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for case in cases.iter().skip(t).step_by(2) {
                        let name = case["name"].as_str().unwrap();
                        let mut runs = [0, 0];
                        // Host arrays on both backends (native code itself: under `Auto` the small
                        // cases here would run in the interpreter while they compile, as tiered
                        // execution does), then every input array on a team of 3.
                        let modes = [(Backend::Interp, None), (Backend::Native, None), (Backend::Auto, Some(3))];
                        for (k, (b, team)) in modes.into_iter().enumerate() {
                            set_backend(b);
                            TEAM.set(team);
                            let before = cache_stats();
                            if let Some(m) = run_case(dir, case) {
                                let on = if team.is_some() { ", inputs on a team of 3" } else { "" };
                                failed.push(format!("{name} [{b:?}{on}]: {m}"));
                            }
                            if k == 2 {
                                continue;
                            }
                            let after = cache_stats();
                            runs[k] = (after.native_runs + after.interpreted_runs)
                                - (before.native_runs + before.interpreted_runs);
                            if b == Backend::Native && after.interpreted_runs != before.interpreted_runs {
                                // Every case this oracle lists compiles natively.
                                failed.push(format!("{name}: a program ran in the interpreter"));
                            }
                        }
                        if runs[0] != runs[1] {
                            failed.push(format!(
                                "{name}: {} programs on the interpreter but {} native",
                                runs[0], runs[1]
                            ));
                        }
                    }
                    failed
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} case runs differ from numpy:\n{}",
        failures.len(),
        3 * cases.len(),
        failures.join("\n")
    );
}
