use strata_array::*;

#[test]
fn smoke() {
    let p = Place::host();
    let x = Array::from_vec(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let y = Array::from_vec(&[3], vec![10.0f64, 20.0, 30.0]).unwrap();
    let checks: Vec<(&str, Result<Array>)> = vec![
        ("add", add(&x, &y)),
        ("add1", add(&x, 1.0)),
        ("sum", sum(&x, Some(&[1]), None, false)),
        ("sumall", sum(&x, None, None, true)),
        ("mean", mean(&x, None, false)),
        ("var", var(&x, Some(&[0]), 1.0, false)),
        ("argmax", argmax(&x, Some(1), false)),
        ("argmax_all", argmax(&x, None, false)),
        ("matmul", matmul(&x, &permute_dims(&x, &[1, 0]).unwrap())),
        ("matvec", matmul(&x, &y)),
        ("arange", arange(Weak::Int(2), Some(Weak::Int(11)), Weak::Int(3), None, &p)),
        ("eye", eye(3, Some(4), 1, None, &p)),
        ("linspace", linspace(0.0, 1.0, 5, true, None, &p)),
        ("tril", tril(&x, 0)),
        ("slice", index(&x, &[Index::Slice(None, None, Some(-1)), Index::At(1)])),
        ("flip", flip(&x, None)),
        ("roll", roll(&x, &[1], Some(&[1]))),
        ("reshape", reshape(&x, &[3, -1], None)),
        ("concat", concat(&[&x, &x], Some(0))),
        ("stack", stack(&[&y, &y], 1)),
        ("take", take(&x, &Array::from_vec(&[2], vec![2i64, -3]).unwrap(), Some(1))),
        ("cumsum", cumulative_sum(&x, Some(1), None, true)),
        ("where", where_(&greater(&x, 3.0).unwrap(), &x, 0.0)),
        ("sort", sort(&y, -1, true, true)),
        ("expand", expand_dims(&y, 0)),
        ("tensordot", tensordot(&x, &x, Axes::Pairs(vec![0], vec![0]))),
        ("vecdot", vecdot(&x, &y, -1)),
        ("any", any(&x, None, false)),
        ("max", max(&x, Some(&[0]), true)),
        ("floordiv", floor_divide(&x, -4.0)),
        ("meshgrid", meshgrid(&[&y, &Array::from_vec(&[2], vec![1.0f64, 2.0]).unwrap()], "xy").map(|v| v[0].clone())),
    ];
    for (name, r) in checks {
        match r {
            Ok(a) => match a.eval() {
                Ok(t) => println!("{name}: shape {:?} {:?}", a.shape(), t.data),
                Err(e) => println!("{name}: EVAL ERROR {e}\n{}", a.program_text()),
            },
            Err(e) => println!("{name}: ERROR {e}"),
        }
    }
    println!("{:?}", cache_stats());
}
