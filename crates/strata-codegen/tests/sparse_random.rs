//! Random sparse and ragged programs: native code equals the interpreter.
//!
//! Each program takes a sparse or ragged tensor in a random format (CSR, CSC, DCSR, COO, block
//! rows, jagged rows, runs of runs (two ragged levels), a sparse vector) over random intervals (some starting below or above
//! zero), applies up to three random operations (elementwise with a second sparse tensor or a
//! dense one, `can_deref` + `select`, storage conversions) and ends in a random `map_reduce`
//! (sums, maxima, SpMV, SpMM over any letters) or returns the value itself. Statement types are
//! the verifier's inference (asked for by declaring a wrong type and reading the suggested
//! one), so the generator does not restate the typing rules. Inputs get random patterns
//! (empty to full); values must agree (bit for bit where `emit_c::bit_exact` says so) and so
//! must the stored elements of sparse results.

mod common;

use strata_codegen::{compile, emit_c, exec, lower};
use strata_runtime::random::XorShift;
use strata_runtime::{Column, Data, Sv, Tensor, ValueType};

const PAYLOADS: &str = "func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = multiplies(%a, %b) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
func @add(%acc: f64, %x: f64) -> f64 {
  %s = plus(%acc, %x) : f64
  return %s
}
func @big(%acc: f64, %x: f64) -> f64 {
  %m = maximum(%acc, %x) : f64
  return %m
}
";

fn pick<'a, T>(rng: &mut XorShift, xs: &'a [T]) -> &'a T {
    &xs[rng.below(xs.len() as u64) as usize]
}

/// The level names of a tensor type's text, in level order.
fn level_names(ty: &str) -> Vec<String> {
    let inner = ty.trim_start_matches("tensor<").trim_end_matches('>');
    inner.split(", ").skip(1).map(|l| l.split('[').next().unwrap_or("").to_string()).collect()
}

fn infer(params: &str, body: &[String], stmt: &str, name: &str) -> Option<String> {
    common::infer(PAYLOADS, params, body, stmt, name)
}

/// One random program `@p{id}` (its text), or `None` when the drawn operations do not verify.
fn generate(rng: &mut XorShift, id: usize) -> Option<String> {
    let (a, b) = (*pick(rng, &[0i64, -2, 3]), *pick(rng, &[0i64, 1]));
    let (ni, nj, nk) = (1 + rng.below(7) as i64, 1 + rng.below(7) as i64, 1 + rng.below(3) as i64);
    let (i, j, k) = (format!("I[{a}:{}]", a + ni), format!("J[{b}:{}]", b + nj), format!("K[0:{nk}]"));
    let formats = [
        format!("{i}, {j} compressed"),
        format!("{j}, {i} compressed"),
        format!("{i} compressed, {j} compressed"),
        format!("{i} compressed(nonunique), {j} singleton"),
        format!("{i} compressed, {j}"),
        format!("{i}, {j} ragged"),
        // Two ragged levels: runs of runs per position of K.
        format!("{k}, {i} ragged, {j} ragged"),
        format!("{i} compressed"),
    ];
    let vector = rng.below(8) == 7;
    let sparse = if vector { formats[7].clone() } else { pick(rng, &formats[..7]).clone() };
    let s_ty = format!("tensor<f64, {sparse}>");
    let dense_ty = if vector { format!("tensor<f64, {i}>") } else { format!("tensor<f64, {i}, {j}>") };
    let params = format!(
        "%s: {s_ty}, %t: {s_ty}, %d: {dense_ty}, %x: tensor<f64, {j}>, %y: tensor<f64, {i}>, %w: tensor<f64, {j}, {k}>"
    );
    let mut body = vec!["%half = constant(value = 0.5) : f64".to_string()];
    let (mut cur, mut cur_ty) = ("%s".to_string(), s_ty.clone());
    for step in 0..rng.below(4) {
        let v = format!("v{step}");
        let (stmt, declared) = match rng.below(6) {
            0 => (format!("%{v} = {}({cur}, %t)", pick(rng, &["multiplies", "plus", "maximum"])), None),
            1 => (format!("%{v} = {}({cur}, %d)", pick(rng, &["multiplies", "plus", "minus"])), None),
            2 => {
                let c = format!("c{step}");
                let probe = format!("%{c} = can_deref({cur})");
                let Some(t) = infer(&params, &body, &probe, &c) else { continue };
                body.push(format!("{probe} : {t}"));
                (format!("%{v} = select(%{c}, {cur}, %half)"), None)
            }
            3 => (format!("%{v} = convert({cur}, mode = copy)"), Some(dense_ty.clone())),
            4 => (format!("%{v} = convert({cur}, mode = copy)"), Some(s_ty.clone())),
            _ => (format!("%{v} = multiplies({cur}, %half)"), None),
        };
        // A conversion declares its type; it must keep the dimensions (in any order).
        let ty = match declared {
            Some(t) => {
                let mut names = level_names(&t);
                let mut have = level_names(&cur_ty);
                names.sort();
                have.sort();
                if names != have {
                    continue;
                }
                t
            }
            None => match infer(&params, &body, &stmt, &v) {
                Some(t) => t,
                None => continue,
            },
        };
        body.push(format!("{stmt} : {ty}"));
        (cur, cur_ty) = (format!("%{v}"), ty);
    }
    if cur_ty.starts_with("tensor<bool") {
        return None;
    }
    // The end: return the value, or fold it.
    let letters: String = level_names(&cur_ty).iter().map(|n| n.to_lowercase().chars().next().unwrap_or('?')).collect();
    let end = match rng.below(5) {
        0 => None,
        1 => Some(format!("map_reduce(@add, {cur}, init = 0.0, einsum = \"{letters}->\")")),
        2 => {
            let keep: String = letters.chars().filter(|_| rng.below(2) == 0).collect();
            let (f, init) = *pick(rng, &[("@add", "0.0"), ("@big", "-100.0")]);
            Some(format!("map_reduce({f}, {cur}, init = {init}, einsum = \"{letters}->{keep}\")"))
        }
        3 if letters.contains('j') => {
            Some(format!("map_reduce(@mac, {cur}, %x, init = 0.0, einsum = \"{letters},j->i\")"))
        }
        _ if letters.contains('j') => {
            Some(format!("map_reduce(@mac, {cur}, %w, init = 0.0, einsum = \"{letters},jk->ik\")"))
        }
        _ => None,
    };
    let (result, result_ty) = match end {
        None => (cur, cur_ty),
        Some(op) => {
            let stmt = format!("%r = {op}");
            let ty = infer(&params, &body, &stmt, "r")?;
            body.push(format!("{stmt} : {ty}"));
            ("%r".to_string(), ty)
        }
    };
    let lines: String = body.iter().map(|l| format!("  {l}\n")).collect();
    Some(format!("func @p{id}({params}) -> {result_ty} {{\n{lines}  return {result}\n}}\n"))
}

/// Random data for parameter type `ty`: values in [-2, 2) (a quarter of them zero, so
/// conversions drop some) and, for sparse and ragged types, a random pattern.
fn random(ty: &ValueType, rng: &mut XorShift, density: f64) -> Tensor {
    let mut t = Tensor::zeros(ty);
    if let Data::Scalars(c) = &mut t.data {
        *c = Column::from_fn(c.scalar(), c.len(), |_| {
            if rng.below(4) == 0 {
                Sv::F64(0.0)
            } else {
                Sv::F64(rng.unit() * 4.0 - 2.0)
            }
        });
    }
    common::sparsify(&mut t, rng, density);
    t
}

#[test]
fn random_sparse_programs_native_equals_interpreter() {
    let cache = common::private_cache("sparse-random");
    let mut rng = XorShift::new(0x5EED_5A4E);
    let total = 300;
    let mut texts = Vec::new();
    let mut attempts = 0;
    while texts.len() < total {
        attempts += 1;
        if let Some(t) = generate(&mut rng, texts.len()) {
            texts.push(t);
        }
    }
    // Most draws verify: the generator is not mostly producing nothing.
    assert!(attempts < 2 * total, "{attempts} attempts for {total} programs");
    let text = format!("{PAYLOADS}{}", texts.concat());
    let module = strata_verify::parse(&text).unwrap_or_else(|d| panic!("{d:?}"));
    let info = strata_verify::verify(&module).unwrap_or_else(|d| panic!("{:?}", d[0]));
    let entries: Vec<_> = (0..total).map(|i| module.function_by_name(&format!("p{i}")).expect("entry")).collect();
    let lowered: Vec<_> = entries
        .iter()
        .zip(&texts)
        .map(|(&h, t)| lower(&module, &info.types, h).unwrap_or_else(|e| panic!("{e}\n{t}")))
        .collect();
    // Two translation units, compiled on two threads.
    let unit = total.div_ceil(2);
    let sos = common::build_units(&lowered, unit);
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let (mut sets, mut sparse_results) = (0, 0);
    for (n, (&h, kp)) in entries.iter().zip(&lowered).enumerate() {
        let f = &module.functions[h];
        let lib = compile::Loaded::open_symbol(&sos[n / unit], &format!("entry_{n}")).expect("loads");
        let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
        let rty = ValueType::from_ir(&info.types, f.result().expect("func"));
        let exact = emit_c::bit_exact(kp);
        sets += usize::from(kp.kernels.iter().any(|k| !k.sets.is_empty()));
        for density in [0.0, 0.3, 1.0] {
            let args: Vec<Tensor> = f
                .params
                .iter()
                .map(|&q| random(&ValueType::from_ir(&info.types, f.exprs[q].ty), &mut rng, density))
                .collect();
            let want = interp.run(h, args.clone()).unwrap_or_else(|e| panic!("interpreter: {e:?}\n{}", texts[n]));
            let got = exec::run_threads(kp, &lib, &args, &names, Some(&rty), 1)
                .unwrap_or_else(|e| panic!("native: {e}\n{}", texts[n]));
            let (w, g) = (&want.values[0].1, &got[0].1);
            let values = |t: &Tensor| match &t.data {
                Data::Scalars(c) => (0..c.len()).map(|i| c.get(i).as_f64()).collect::<Vec<_>>(),
                _ => panic!("scalar results"),
            };
            let (wv, gv) = (values(w), values(g));
            let scale = wv.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            let same = wv.len() == gv.len()
                && wv
                    .iter()
                    .zip(&gv)
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (!exact && (p - q).abs() <= 1e-12 * scale));
            assert!(same, "native != interpreter (density {density})\n{}\ninterp {wv:?}\nnative {gv:?}", texts[n]);
            if rty.levels.iter().any(|l| !l.format.is_dense_like()) {
                let stored = |t: &Tensor| {
                    (0..t.len())
                        .map(|i| (t.is_present(i), strata_runtime::storage::is_stored(t, i)))
                        .collect::<Vec<_>>()
                };
                assert_eq!(stored(w), stored(g), "stored elements differ (density {density})\n{}", texts[n]);
                sparse_results += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    // The programs exercise both set loops and sparse results.
    assert!(sets > total / 3, "only {sets} of {total} programs iterate stored sets");
    assert!(sparse_results > 0, "no program returned a sparse value");
}
