//! The lazy front end itself: laziness, the compiled-program cache, placement (compute follows
//! data), data interop (`ndarray`, `.npy`) and error messages. Values are checked against
//! hand-derived results; tests/numpy_oracle.rs checks every operation against numpy.

use strata_array::*;

fn host() -> Place {
    Place::host()
}

#[test]
fn arrays_are_lazy_and_keep_their_value_once_evaluated() {
    let x = Array::from_vec(&[2, 2], vec![1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let y = add(&multiply(&x, 2.0).unwrap(), 1.0).unwrap();
    assert!(!y.is_evaluated(), "building an expression computes nothing");
    let text = y.program_text().unwrap();
    assert!(text.contains("multiplies(") && text.contains("plus("), "{text}");
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![3.0, 5.0, 7.0, 9.0]);
    assert!(y.is_evaluated());
    // A later program starts from the evaluated value: it is an input, not recomputed.
    let z = subtract(&y, 1.0).unwrap();
    let text = z.program_text().unwrap();
    assert!(!text.contains("multiplies("), "{text}");
    assert_eq!(z.to_vec::<f64>().unwrap(), vec![2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn programs_are_cached_by_structure_and_shapes() {
    let run = |data: Vec<f32>, n: usize| {
        let x = Array::from_vec(&[n], data).unwrap();
        let s = sum(&sqrt(&x).unwrap(), None, None, false).unwrap();
        s.to_vec::<f32>().unwrap()[0]
    };
    let before = cache_stats();
    assert_eq!(run(vec![4.0, 9.0, 16.0], 3), 9.0);
    let after_first = cache_stats();
    assert_eq!(after_first.misses, before.misses + 1);
    // Other data, same structure and shape: found in the cache.
    assert_eq!(run(vec![1.0, 1.0, 1.0], 3), 3.0);
    let after_second = cache_stats();
    assert_eq!(after_second.hits, after_first.hits + 1);
    assert_eq!(after_second.misses, after_first.misses);
    // Another shape is another program.
    assert_eq!(run(vec![1.0, 4.0], 2), 3.0);
    assert_eq!(cache_stats().misses, after_second.misses + 1);
}

/// The caches are bounded: a thread meeting ever new sizes holds at most [`CAPACITY`]
/// programs (a full cache starts empty again); the oldest is built again when met again, with
/// the same values.
#[test]
fn the_program_caches_are_bounded() {
    set_backend(Backend::Interp);
    let run = |n: usize| {
        let x = Array::from_vec(&[n], (0..n).map(|i| i as f64).collect()).unwrap();
        sum(&multiply(&x, 2.0).unwrap(), None, None, false).unwrap().to_vec::<f64>().unwrap()[0]
    };
    let expect = |n: usize| (n * (n - 1)) as f64;
    assert_eq!(run(1), expect(1));
    for n in 2..=CAPACITY + 1 {
        assert_eq!(run(n), expect(n));
    }
    let before = cache_stats();
    assert_eq!(run(CAPACITY + 1), expect(CAPACITY + 1));
    let after = cache_stats();
    assert_eq!((after.hits, after.built), (before.hits + 1, before.built), "the most recent size is found");
    assert_eq!(run(1), expect(1));
    assert_eq!(cache_stats().built, after.built + 1, "the oldest size is no longer held and is built again");
    set_backend(Backend::Auto);
}

#[test]
fn compute_follows_data() {
    let gpu = Place::device("gpu0");
    let a = ones(&[4], None, &gpu).unwrap();
    let b = ones(&[4], None, &host()).unwrap();
    let err = add(&a, &b).unwrap_err();
    assert!(matches!(err, ArrayError::Placement { op: "add", .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("device gpu0") && msg.contains("device cpu"), "{msg}");
    // Results live where their operands do, and the traced types say so.
    let c = add(&a, 1.0).unwrap();
    assert_eq!(c.device(), "gpu0");
    assert!(c.program_text().unwrap().contains("device = gpu0"), "{}", c.program_text().unwrap());
    // A team: distributed arrays combine with arrays on the same team only.
    let t = arange(Weak::Int(0), Some(Weak::Int(10)), Weak::Int(1), None, &Place::team(2)).unwrap();
    assert!(matches!(add(&t, &b), Err(ArrayError::Placement { .. })));
    let s = multiply(&t, 2i64).unwrap();
    assert_eq!(s.place().team, Some(2));
    assert!(s.program_text().unwrap().contains("block, team = 2"), "{}", s.program_text().unwrap());
    assert_eq!(s.to_vec::<i64>().unwrap(), (0..10).map(|i| 2 * i).collect::<Vec<i64>>());
    assert!(matches!(full(&[], Weak::Int(1), None, &Place::team(2)), Err(ArrayError::Invalid { .. })));
}

#[test]
fn team_arrays_run_every_operation() {
    // Issue 13's repro: a strided slice of a team array (its values are numpy's
    // `np.arange(110, dtype=np.float32)[34:82:2]`).
    let a = arange(Weak::Int(0), Some(Weak::Int(110)), Weak::Int(1), Some(DType::F32), &Place::team(4)).unwrap();
    let s = index(&a, &[Index::Slice(Some(34), Some(82), Some(2))]).unwrap();
    assert_eq!(s.place().team, Some(4), "compute follows data: the slice stays on the team");
    assert_eq!(s.to_vec::<f32>().unwrap(), (34..82).step_by(2).map(|i| i as f32).collect::<Vec<_>>());
    // A 2-D team array: the operations the issue lists, against hand-derived values.
    let x = reshape(
        &arange(Weak::Int(0), Some(Weak::Int(12)), Weak::Int(1), Some(DType::F64), &host()).unwrap(),
        &[3, 4],
        None,
    )
    .unwrap();
    let t = distribute(&x, 2).unwrap();
    assert_eq!(t.place().team, Some(2));
    assert!(t.program_text().unwrap().contains("distribute("), "{}", t.program_text().unwrap());
    assert_eq!(flip(&t, None).unwrap().to_vec::<f64>().unwrap(), (0..12).rev().map(f64::from).collect::<Vec<_>>());
    assert_eq!(sum(&t, Some(&[1]), None, false).unwrap().to_vec::<f64>().unwrap(), vec![6.0, 22.0, 38.0]);
    assert_eq!(argmax(&t, Some(1), false).unwrap().to_vec::<i64>().unwrap(), vec![3, 3, 3]);
    let tt = matrix_transpose(&t).unwrap();
    assert_eq!(tt.shape(), &[4, 3]);
    assert_eq!(tt.place().team, Some(2));
    let g = matmul(&t, &tt).unwrap();
    // Row i of x times row j: Σ_k (4i + k)(4j + k).
    let want: Vec<f64> =
        (0..3).flat_map(|i| (0..3).map(move |j| (0..4).map(|k| f64::from((4 * i + k) * (4 * j + k))).sum())).collect();
    assert_eq!(g.to_vec::<f64>().unwrap(), want);
    assert_eq!(cumulative_sum(&t, Some(1), None, false).unwrap().to_vec::<f64>().unwrap()[..4], [0.0, 1.0, 3.0, 6.0]);
    assert_eq!(roll(&t, &[1], Some(&[0])).unwrap().to_vec::<f64>().unwrap()[..4], [8.0, 9.0, 10.0, 11.0]);
    // A reduction to 0-d is replicated: it combines with the team array it came from.
    let centered = subtract(&t, &mean(&t, None, false).unwrap()).unwrap();
    assert_eq!(centered.place().team, Some(2));
    assert_eq!(centered.to_vec::<f64>().unwrap()[0], -5.5);
    // collect, to_device, and clear errors at the call.
    let back = collect(&centered).unwrap();
    assert_eq!(back.place().team, None);
    assert_eq!(to_device(&t, "gpu0").unwrap().device(), "gpu0");
    let msg = collect(&x).unwrap_err().to_string();
    assert!(msg.starts_with("collect:") && msg.contains("not on a team"), "{msg}");
    let msg = distribute(&t, 2).unwrap_err().to_string();
    assert!(msg.starts_with("distribute:") && msg.contains("already on a team"), "{msg}");
    let msg = distribute(&Array::scalar(1.0f64), 2).unwrap_err().to_string();
    assert!(msg.starts_with("distribute:") && msg.contains("0-d"), "{msg}");
    let msg = add(&t, &distribute(&x, 3).unwrap()).unwrap_err().to_string();
    assert!(msg.starts_with("add:") && msg.contains("team of 2") && msg.contains("team of 3"), "{msg}");
}

#[test]
fn ndarray_and_npy_round_trip() {
    let a = ndarray::Array2::from_shape_fn((3, 4), |(i, j)| (10 * i + j) as i32);
    let x = Array::from_ndarray(&a);
    assert_eq!(x.shape(), &[3, 4]);
    assert_eq!(x.dtype(), strata_ir::Scalar::I32);
    // A transposed (non-contiguous) view is copied in logical order.
    let t = Array::from_ndarray(&a.t());
    assert_eq!(t.to_ndarray::<i32>().unwrap(), a.t().into_dyn());
    let y = add(&x, 1i64).unwrap();
    let back = y.to_ndarray::<i32>().unwrap();
    assert_eq!(back, (&a + 1).into_dyn());
    assert!(matches!(y.to_ndarray::<f64>(), Err(ArrayError::Data(_))));
    let dir = std::env::temp_dir().join(format!("strata-array-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("y.npy");
    y.to_npy(&path).unwrap();
    let z = Array::from_npy(&path).unwrap();
    assert_eq!(z.shape(), &[3, 4]);
    assert_eq!(z.to_vec::<i32>().unwrap(), y.to_vec::<i32>().unwrap());
    let missing = Array::from_npy(&dir.join("missing.npy")).unwrap_err().to_string();
    assert!(missing.contains("missing.npy"), "{missing}");
    std::fs::write(dir.join("bad.npy"), b"not an npy file").unwrap();
    let bad = Array::from_npy(&dir.join("bad.npy")).unwrap_err().to_string();
    assert!(bad.contains("bad.npy"), "{bad}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_name_the_operation_and_the_cause() {
    let a = zeros(&[2, 3], None, &host()).unwrap();
    let b = zeros(&[4], None, &host()).unwrap();
    let msg = add(&a, &b).unwrap_err().to_string();
    assert!(msg.starts_with("add:") && msg.contains("[2, 3]") && msg.contains("[4]"), "{msg}");
    let msg = sum(&a, Some(&[2]), None, false).unwrap_err().to_string();
    assert!(msg.starts_with("sum:") && msg.contains("axis 2"), "{msg}");
    let msg = matmul(&a, &a).unwrap_err().to_string();
    assert!(msg.starts_with("matmul:") && msg.contains("3 ≠ 2"), "{msg}");
    let msg = bitwise_and(&a, &a).unwrap_err().to_string();
    assert!(msg.starts_with("bitwise_and:") && msg.contains("float64"), "{msg}");
    let msg = reshape(&a, &[4, 2], None).unwrap_err().to_string();
    assert!(msg.contains("(6 elements)"), "{msg}");
    // Run-time failures surface at evaluation, with the runtime's message.
    let i = Array::from_vec(&[2], vec![2i32, 3]).unwrap();
    let e = Array::from_vec(&[2], vec![1i32, -1]).unwrap();
    let msg = pow(&i, &e).unwrap().eval().unwrap_err().to_string();
    assert!(msg.contains("negative integer exponent"), "{msg}");
    let idx = Array::from_vec(&[1], vec![7i64]).unwrap();
    let msg = take(&b, &idx, None).unwrap_err().to_string();
    assert!(msg.contains("index 7 is out of bounds for axis 0 with size 4"), "{msg}");
}

#[test]
fn both_backends_agree_and_native_is_used_when_it_compiles() {
    // Data leaves are distinct arrays, so each backend evaluates its own program.
    let samples = || Array::from_vec(&[101], (0..101).map(|i| i as f64 / 100.0).collect()).unwrap();
    set_backend(Backend::Interp);
    let interp = var(&sin(&samples()).unwrap(), None, 1.0, false).unwrap().to_vec::<f64>().unwrap()[0];
    set_backend(Backend::Native);
    let before = cache_stats().native_runs;
    let native = var(&sin(&samples()).unwrap(), None, 1.0, false).unwrap().to_vec::<f64>().unwrap()[0];
    assert_eq!(cache_stats().native_runs, before + 1);
    set_backend(Backend::Auto);
    assert!((interp - native).abs() <= 1e-12 * interp.abs(), "{interp} vs {native}");
    // Hand-derived: var(sin(x)) for x uniform on [0, 1] is (1 - sin 2 / 2) / 2 - (1 - cos 1)²
    // = 0.0614; 101 samples with one degree of freedom removed give 0.0631.
    assert!((interp - 0.0631).abs() < 1e-3, "{interp}");
}

#[test]
fn the_same_operation_on_the_same_operands_is_traced_once() {
    let x = Array::from_vec(&[3, 4], (0..12).map(f64::from).collect()).unwrap();
    let m = mean(&x, Some(&[0]), true).unwrap();
    let s = std(&x, Some(&[0]), 0.0, true).unwrap();
    let text = add(&m, &s).unwrap().program_text().unwrap();
    // The column sum inside `std` is the one of `mean`: two folds, not three.
    assert_eq!(text.matches("map_reduce(").count(), 2, "{text}");
    let z = divide(&subtract(&x, &m).unwrap(), &s).unwrap();
    // Column 0 is 0, 4, 8: mean 4, population std sqrt(32/3).
    let v = z.to_vec::<f64>().unwrap();
    assert!((v[0] + 4.0 / (32.0f64 / 3.0).sqrt()).abs() < 1e-12, "{v:?}");
}

#[test]
fn a_deep_product_split_across_threads_equals_the_exact_sum() {
    // `(2X).T @ X + 1` of a 4096 x 16 X of small integers, whose sums every order computes
    // exactly. With two or more threads the runtime GEMM splits the contraction into slices
    // run on the kernels' OpenMP threads, right after the elementwise kernel doubling X.
    set_backend(Backend::Native);
    let (k, m) = (4096usize, 16usize);
    let data: Vec<f64> = (0..k * m).map(|i| ((i * 7 + 3) % 11) as f64 - 5.0).collect();
    let x = Array::from_vec(&[k, m], data.clone()).unwrap();
    let doubled = multiply(&x, 2.0).unwrap();
    let g = add(&matmul(&matrix_transpose(&doubled).unwrap(), &x).unwrap(), 1.0).unwrap();
    let got = g.to_vec::<f64>().unwrap();
    set_backend(Backend::Auto);
    for i in 0..m {
        for j in 0..m {
            let want = 1.0 + (0..k).map(|r| 2.0 * data[r * m + i] * data[r * m + j]).sum::<f64>();
            assert_eq!(got[i * m + j], want, "({i}, {j})");
        }
    }
}
