//! The engine against values derived by hand (direct loops in Rust, in the program's order of
//! operations, so results are compared bit for bit): a prepared program is memoized and runs
//! many times; reuse chains compile to code bounded in the program's size, whatever the reuse.

use std::sync::Arc;

use strata_engine::{prepare, Backend, Options, Prepared};
use strata_runtime::{Column, Data, Tensor, Value, ValueType};

fn prepared(text: &str, entry: &str, backend: Backend) -> Arc<Prepared> {
    let module = strata_verify::parse(text).expect("parses");
    let info = strata_verify::verify(&module).expect("verifies");
    let h = module.function_by_name(entry).expect("the entry");
    prepare(&module, &info.types, h, &Options::with_backend(backend)).expect("prepares")
}

fn f64s(t: &Value) -> Vec<f64> {
    let Value::Tensor(Tensor { data: Data::Scalars(Column::F64(v)), .. }) = t else { panic!("an f64 tensor") };
    v.clone()
}

fn tensor(ty: ValueType, values: Vec<f64>) -> Value {
    let mut t = Tensor::zeros(&ty);
    t.data = Data::Scalars(Column::F64(values));
    Value::Tensor(t)
}

fn arg_type(p: &Prepared, i: usize) -> ValueType {
    let f = &p.module().functions[p.entry()];
    ValueType::from_ir(p.types(), f.exprs[f.params[i]].ty)
}

/// Deterministic values in [lo, hi).
fn values(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut rng = strata_runtime::random::XorShift::new(seed);
    (0..n).map(|_| lo + (hi - lo) * rng.unit()).collect()
}

fn chain(levels: usize) -> String {
    let mut s = String::from("func @chain(%y0: tensor<64xf64>) -> tensor<64xf64> {\n");
    for i in 1..=levels {
        s += &format!("  %y{i} = plus(multiplies(%y{p}, %y{p}), %y{p})\n", p = i - 1);
    }
    s + &format!("  return %y{levels}\n}}\n")
}

#[test]
fn a_reuse_chain_compiles_to_code_linear_in_its_length_and_matches_direct_evaluation() {
    // Inlined, `y = y*y + y` repeated 50 times would be 3^50 copies of the input read.
    for levels in [5, 10, 50] {
        let p = prepared(&chain(levels), "chain", Backend::Native);
        let kernels = p.kernels().expect("native");
        assert!(kernels.len() < 600 * levels, "{levels} levels: {} bytes of loop kernels", kernels.len());
        let x = values(64, 7, 0.0, 1e-3);
        let out = p.run(&[tensor(arg_type(&p, 0), x.clone())]).expect("runs");
        let want: Vec<f64> = x
            .iter()
            .map(|&v| {
                let mut y = v;
                for _ in 0..levels {
                    y = y * y + y;
                }
                y
            })
            .collect();
        assert_eq!(f64s(&out.values[0].1), want, "{levels} levels");
    }
}

const LAP5: &str = "
func @lap(%x) {
  %i = plus(cartesian_shift(%x, dim = I, offset = 1), cartesian_shift(%x, dim = I, offset = -1))
  %j = plus(cartesian_shift(%x, dim = J, offset = 1), cartesian_shift(%x, dim = J, offset = -1))
  return minus(plus(%i, %j), multiplies(4.0, %x))
}
program @lap5(%out: out tensor<f64, I[5:21], J[5:23], K[0:3]>, %inp: tensor<f64, I[0:26], J[0:28], K[0:3]>) {
  %out <- call(@lap, call(@lap, call(@lap, call(@lap, call(@lap, %inp)))))
}
";

/// The laplacian applied `times` times to `x` (`ni × nj × nk`, row-major), by direct loops.
fn lap_direct(x: &[f64], ni: usize, nj: usize, nk: usize, times: usize) -> Vec<f64> {
    let mut cur = x.to_vec();
    let at = |i: usize, j: usize, k: usize| (i * nj + j) * nk + k;
    for _ in 0..times {
        let mut next = vec![f64::NAN; cur.len()];
        for i in 1..ni - 1 {
            for j in 1..nj - 1 {
                for k in 0..nk {
                    let c = &cur;
                    let ii = c[at(i + 1, j, k)] + c[at(i - 1, j, k)];
                    let jj = c[at(i, j + 1, k)] + c[at(i, j - 1, k)];
                    next[at(i, j, k)] = (ii + jj) - 4.0 * c[at(i, j, k)];
                }
            }
        }
        cur = next;
    }
    cur
}

#[test]
fn the_fifth_power_of_the_laplacian_keeps_its_inner_stages_and_matches_direct_loops() {
    let (ni, nj, nk) = (26, 28, 3);
    let x = values(ni * nj * nk, 3, -1.0, 1.0);
    let want = lap_direct(&x, ni, nj, nk, 5);
    for backend in [Backend::Native, Backend::Interp] {
        let p = prepared(LAP5, "lap5", backend);
        let args = [tensor(arg_type(&p, 0), vec![0.0; 16 * 18 * 3]), tensor(arg_type(&p, 1), x.clone())];
        let out = f64s(&p.run(&args).expect("runs").values[0].1);
        let mut expect = Vec::new();
        for i in 5..21 {
            for j in 5..23 {
                for k in 0..3 {
                    expect.push(want[(i * nj + j) * nk + k]);
                }
            }
        }
        assert_eq!(out, expect, "{backend}");
        if backend == Backend::Native {
            // 5^5 inlined reads of the input would be over 3,000 loads per point.
            let k = p.kernels().expect("native");
            assert!(k.contains("a temporary: computed"), "{k}");
        }
    }
}

#[test]
fn a_prepared_program_is_memoized_and_runs_many_times() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/stencil/laplacian.strata"))
        .expect("the example");
    let a = prepared(&text, "laplacian", Backend::Auto);
    let b = prepared(&text, "laplacian", Backend::Auto);
    assert!(Arc::ptr_eq(&a, &b), "the second prepare finds the first");
    let c = prepared(&text, "laplacian", Backend::Interp);
    assert!(!Arc::ptr_eq(&a, &c), "another backend is another program");
    assert!(a.is_native() && !c.is_native());
    for step in 0..200 {
        let x = values(7 * 9 * 9, step, -1.0, 1.0);
        let args = [tensor(arg_type(&a, 0), vec![0.0; 5 * 7 * 9]), tensor(arg_type(&a, 1), x.clone())];
        let want = lap_direct(&x, 7, 9, 9, 1);
        let mut expect = Vec::new();
        for i in 1..6 {
            for j in 1..8 {
                for k in 0..9 {
                    expect.push(want[(i * 9 + j) * 9 + k]);
                }
            }
        }
        for p in [&a, &c] {
            assert_eq!(f64s(&p.run(&args).expect("runs").values[0].1), expect, "step {step}");
        }
    }
}

/// The laplacian program of `examples/stencil/laplacian.strata` on an `ni × nj × nk` interior.
fn laplacian_of_size(ni: usize, nj: usize, nk: usize) -> String {
    format!(
        "func @lap(%inp) {{
  %i = plus(cartesian_shift(%inp, dim = I, offset = 1), cartesian_shift(%inp, dim = I, offset = -1))
  %j = plus(cartesian_shift(%inp, dim = J, offset = 1), cartesian_shift(%inp, dim = J, offset = -1))
  return minus(plus(%i, %j), multiplies(4.0, %inp))
}}
program @laplacian(%out: out tensor<f64, I[0:{ni}], J[0:{nj}], K[0:{nk}]>, %inp: tensor<f64, I[-1:{}], J[-1:{}], K[0:{nk}]>) {{
  %out <- call(@lap, %inp)
}}
",
        ni + 1,
        nj + 1
    )
}

#[test]
fn one_compiled_library_serves_every_size_of_a_program() {
    // Kernels take their extents as arguments: a new size prepares (verifies, lowers, emits)
    // but prints the same C, found compiled. Each size's values against direct loops. The
    // text records which extents are equal (the slots are given by value), so the sizes of the
    // shared library are chosen without coincidences; the last ones have some (every extent 1,
    // the interior's rows equal to the halo's columns) and may compile their own.
    let mut libraries = Vec::new();
    let sizes = [(13, 29, 5), (31, 17, 4), (37, 23, 7), (50, 41, 3), (101, 11, 6), (1, 1, 1), (2, 3, 1), (9, 7, 9)];
    for (ni, nj, nk) in sizes {
        let p = prepared(&laplacian_of_size(ni, nj, nk), "laplacian", Backend::Native);
        let (hi, hj) = (ni + 2, nj + 2);
        let x = values(hi * hj * nk, (ni * 1000 + nj) as u64, -1.0, 1.0);
        let args = [tensor(arg_type(&p, 0), vec![0.0; ni * nj * nk]), tensor(arg_type(&p, 1), x.clone())];
        let want = lap_direct(&x, hi, hj, nk, 1);
        let mut expect = Vec::new();
        for i in 1..=ni {
            for j in 1..=nj {
                for k in 0..nk {
                    expect.push(want[(i * hj + j) * nk + k]);
                }
            }
        }
        assert_eq!(f64s(&p.run(&args).expect("runs").values[0].1), expect, "{ni}x{nj}x{nk}");
        libraries.push(p.library().expect("native").to_path_buf());
    }
    assert!(libraries[1..5].iter().all(|l| *l == libraries[0]), "{libraries:#?}");
}

#[test]
fn a_size_run_long_enough_switches_to_its_specialized_library_with_the_same_values() {
    // Specialization is a decision: the generic library runs at once; once a size has run
    // `specialize_after` (here at once), its kernels are compiled with the sizes as literals in
    // the background and later runs use them. Every run's values against direct loops.
    let (ni, nj, nk) = (23, 19, 5);
    let module = strata_verify::parse(&laplacian_of_size(ni, nj, nk)).expect("parses");
    let info = strata_verify::verify(&module).expect("verifies");
    let entry = module.function_by_name("laplacian").expect("the entry");
    let options =
        Options { backend: Backend::Native, specialize_after: Some(std::time::Duration::ZERO), ..Options::default() };
    let p = prepare(&module, &info.types, entry, &options).expect("prepares");
    let (hi, hj) = (ni + 2, nj + 2);
    let x = values(hi * hj * nk, 5, -1.0, 1.0);
    let args = [tensor(arg_type(&p, 0), vec![0.0; ni * nj * nk]), tensor(arg_type(&p, 1), x.clone())];
    let want = lap_direct(&x, hi, hj, nk, 1);
    let expect: Vec<f64> = (1..=ni)
        .flat_map(|i| (1..=nj).flat_map(move |j| (0..nk).map(move |k| (i, j, k))))
        .map(|(i, j, k)| want[(i * hj + j) * nk + k])
        .collect();
    let start = std::time::Instant::now();
    let mut generic_runs = 0;
    while !p.specialized() && start.elapsed() < std::time::Duration::from_secs(120) {
        assert_eq!(f64s(&p.run(&args).expect("runs").values[0].1), expect, "generic");
        generic_runs += 1;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(p.specialized(), "no specialized library after {generic_runs} runs");
    for _ in 0..3 {
        assert_eq!(f64s(&p.run(&args).expect("runs").values[0].1), expect, "specialized");
    }
}

/// A vertex's sum over its edges of each edge's two vertices' values, through two tables
/// stored as GT4Py stores them (neighbor dimension outermost): the edges' table is read at
/// coordinates the vertices' table gives.
const GATHERS: &str = "
func @add(%acc: tensor<f64, Vertex[0:6]>, %a: tensor<f64, Vertex[0:6]>) -> tensor<f64, Vertex[0:6]> {
  %s = plus(%acc, %a) : tensor<f64, Vertex[0:6]>
  return %s
}

program @gathers(%out: out tensor<f64, Vertex[0:6]>, %x: tensor<f64, Vertex[0:6]>,
                 %e2v: tensor<i32, NB_Vertex[0:2], Edge[0:5]>, %v2e: tensor<i32, NB_Edge[0:3], Vertex[0:6]>) {
  %a = unstructured_shift(%x, %e2v, neighbor = 0) : tensor<f64, Edge[0:5]>
  %b = unstructured_shift(%x, %e2v, neighbor = 1) : tensor<f64, Edge[0:5]>
  %f = plus(%a, %b) : tensor<f64, Edge[0:5]>
  %n = shift_init(%f, %v2e) : tensor<f64, Vertex[0:6], NB_0[0:3]>
  %out <- reduce(@add, %n, init = 0.0)
}
";

fn i32_tensor(ty: ValueType, values: Vec<i32>) -> Value {
    let mut t = Tensor::zeros(&ty);
    t.data = Data::Scalars(Column::I32(values));
    Value::Tensor(t)
}

#[test]
fn input_tables_are_checked_whole_before_the_kernels_which_read_them_unchecked() {
    let p = prepared(GATHERS, "gathers", Backend::Native);
    // The kernels bind both tables' entries without an interval check of their own.
    let module = strata_verify::parse(GATHERS).expect("parses");
    let info = strata_verify::verify(&module).expect("verifies");
    let lowered = strata_codegen::lower(&module, &info.types, module.function_by_name("gathers").expect("entry"));
    let c = strata_codegen::emit_c::emit(&lowered.expect("lowers"));
    assert!(c.matches("strata_nb_prechecked(").count() >= 2 && !c.contains("strata_nb(t"), "{c}");
    let x: Vec<f64> = (0..6).map(|v| 10f64.powi(v)).collect();
    // Edge e joins vertices e and e + 1 (row 0: first vertices, row 1: second ones).
    let e2v = vec![0, 1, 2, 3, 4, 1, 2, 3, 4, 5];
    // Vertex v's edges v - 1 and v (-1: none), the third neighbor skipped.
    let mut v2e = vec![-1; 18];
    for v in 0..6i32 {
        v2e[v as usize] = if v >= 1 { v - 1 } else { -1 };
        v2e[6 + v as usize] = if v < 5 { v } else { -1 };
    }
    let args = |e2v: Vec<i32>| {
        vec![
            tensor(arg_type(&p, 0), vec![0.0; 6]),
            tensor(arg_type(&p, 1), x.clone()),
            i32_tensor(arg_type(&p, 2), e2v),
            i32_tensor(arg_type(&p, 3), v2e.clone()),
        ]
    };
    let out = p.run(&args(e2v.clone())).expect("runs");
    let edge = |e: usize| x[e] + x[e + 1];
    let want: Vec<f64> =
        (0..6).map(|v| if v >= 1 { edge(v - 1) } else { 0.0 } + if v < 5 { edge(v) } else { 0.0 }).collect();
    assert_eq!(f64s(&out.values[0].1), want);
    // A bad entry is the run's error before any kernel runs: where the kernels read it, and
    // also in a row they never read (edge 4's second vertex is read; a -1 in v2e hides none).
    for (at, bad) in [(6, 7), (9, -2), (4, 100)] {
        let mut t = e2v.clone();
        t[at] = bad;
        let e = p.run(&args(t)).expect_err("a bad table entry");
        let m = e.to_string();
        assert!(m.contains("neighbor table entry") && m.contains(&bad.to_string()) && m.contains("e2v"), "{m}");
    }
}

/// Folds whose payload is one binary operation, in both operand orders, on both backends.
const ONE_OPERATION_FOLDS: &str = "
func @sub_acc_first(%acc: f64, %a: f64) -> f64 {
  %r = minus(%acc, %a) : f64
  return %r
}
func @sub_acc_second(%acc: f64, %a: f64) -> f64 {
  %r = minus(%a, %acc) : f64
  return %r
}
func @biggest(%acc: f64, %a: f64) -> f64 {
  %r = maximum(%a, %acc) : f64
  return %r
}
func @first(%x: tensor<4x3xf64>) -> tensor<3xf64> {
  %s = map_reduce(@sub_acc_first, %x, init = 100.0, einsum = \"ab->b\") : tensor<3xf64>
  return %s
}
func @second(%x: tensor<4x3xf64>) -> tensor<3xf64> {
  %t = map_reduce(@sub_acc_second, %x, init = 100.0, einsum = \"ab->b\") : tensor<3xf64>
  return %t
}
func @largest(%x: tensor<4x3xf64>) -> tensor<3xf64> {
  %m = map_reduce(@biggest, %x, init = -1000.0, einsum = \"ab->b\") : tensor<3xf64>
  return %m
}
func @idiv(%acc: i64, %a: i64) -> i64 {
  %r = floor_divide(%acc, %a) : i64
  return %r
}
func @quotients(%x: tensor<3xi64>) -> tensor<i64> {
  %q = map_reduce(@idiv, %x, init = 1000, einsum = \"a->\") : tensor<i64>
  return %q
}
";

#[test]
fn folds_of_one_operation_keep_the_operand_order_on_both_backends() {
    // Row-major order within each column: a fold is a left fold over rows 0..4.
    let x = [1.0, 2.0, 3.0, 4.0, f64::NAN, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, -12.0];
    let col = |j: usize| (0..4).map(move |i| x[i * 3 + j]);
    type Fold = fn(f64, f64) -> f64;
    let folds: [(&str, f64, Fold); 3] = [
        ("first", 100.0, |acc, a| acc - a),
        ("second", 100.0, |acc, a| a - acc),
        // `maximum` propagates NaN (docs/runtime.md): column 1 holds one.
        ("largest", -1000.0, |acc, a| if a.is_nan() || acc.is_nan() { f64::NAN } else { a.max(acc) }),
    ];
    for (entry, init, f) in folds {
        let want: Vec<f64> = (0..3).map(|j| col(j).fold(init, f)).collect();
        for backend in [Backend::Interp, Backend::Native] {
            let p = prepared(ONE_OPERATION_FOLDS, entry, backend);
            let out = p.run(&[tensor(arg_type(&p, 0), x.to_vec())]).expect("runs");
            let got = f64s(&out.values[0].1);
            let same = got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
            assert!(same && got.len() == 3, "{entry} on {backend:?}: {got:?} against {want:?}");
        }
    }
    // Integer folds, as numpy divides: floor(1000 / 3) = 333, floor(333 / -7) = -48,
    // floor(-48 / 2) = -24; a division by zero gives 0 (docs/runtime.md), 0 / 2 = 0.
    for backend in [Backend::Interp, Backend::Native] {
        let p = prepared(ONE_OPERATION_FOLDS, "quotients", backend);
        let ty = arg_type(&p, 0);
        for (x, want) in [(vec![3, -7, 2], -24), (vec![3, 0, 2], 0)] {
            let mut t = Tensor::zeros(&ty);
            t.data = Data::Scalars(Column::I64(x));
            let out = p.run(&[Value::Tensor(t)]).expect("runs");
            let Value::Tensor(Tensor { data: Data::Scalars(Column::I64(q)), .. }) = &out.values[0].1 else {
                panic!("an i64 result")
            };
            assert_eq!(q[..], [want], "{backend:?}");
        }
    }
}
