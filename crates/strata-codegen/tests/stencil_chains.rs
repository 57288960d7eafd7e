//! Random chains of cartesian stencils (each stage a combination of shifted earlier stages and
//! inputs, as in a laplacian of laplacian or a horizontal diffusion) run natively — where the
//! pass `stage_windows` computes repeated inner stages once into rolling windows — and in the
//! reference interpreter, on one thread and on three (whose blocks of planes each warm their
//! windows up): the results must be equal bit for bit (staging evaluates the same expressions).
//! The generator also makes chains the pass must leave alone (integer stages, planes too small
//! to vectorize) and odd ones (a stage that ignores the previous one, limiters, maxima).

mod common;

use std::fmt::Write;

use strata_codegen::{compile, exec, lower};
use strata_runtime::random::XorShift;
use strata_runtime::{Column, Data, Sv, Tensor, ValueType};

struct Chain {
    text: String,
    entry: String,
}

/// A term: a value shifted along I and J.
fn term(rng: &mut XorShift, body: &mut String, tmp: &mut usize, v: &str) -> String {
    let mut cur = v.to_string();
    for dim in ["I", "J"] {
        let o = rng.range(-2, 2);
        if o != 0 {
            *tmp += 1;
            let _ = writeln!(body, "  %t{tmp} = cartesian_shift(%{cur}, dim = {dim}, offset = {o})");
            cur = format!("t{tmp}");
        }
    }
    cur
}

fn generate(rng: &mut XorShift, id: usize) -> Chain {
    let scalar = ["f64", "f64", "f64", "f32", "i64"][rng.below(5) as usize];
    let float = scalar != "i64";
    let stages = 1 + rng.below(4) as i64;
    let halo = 2 * stages;
    let (ni, nj) = (3 + rng.below(7) as i64, 8 + rng.below(13) as i64);
    // Mostly planes of at least 64 points (staged), sometimes smaller (left alone), sometimes
    // no K at all but a long J.
    // Sometimes stored as GT4Py stores fields, K outermost and unshifted, on a plane so large
    // that a rolling window along K (a whole plane of I and J) fits the windows' budget once
    // or not at all: the pass stages some of the values read at several offsets, or none.
    let columns = rng.below(8) == 0;
    let (ni, nj, k) = match rng.below(4) {
        _ if columns => (250 + rng.below(20) as i64, 250 + rng.below(20) as i64, Some(2)),
        0 => (ni, nj, Some(8)),
        1 => (ni, 64 + rng.below(9) as i64, None),
        _ => (ni, nj, Some([16, 17, 24][rng.below(3) as usize])),
    };
    let dims = |lo: i64, hi_i: i64, hi_j: i64| match k {
        Some(n) if columns => format!("tensor<{scalar}, K[0:{n}], I[{lo}:{hi_i}], J[{lo}:{hi_j}]>"),
        _ => {
            let kk = k.map(|n| format!(", K[0:{n}]")).unwrap_or_default();
            format!("tensor<{scalar}, I[{lo}:{hi_i}], J[{lo}:{hi_j}]{kk}>")
        }
    };
    let out_ty = dims(0, ni, nj);
    let in_ty = dims(-halo, ni + halo, nj + halo);
    let lit = |x: f64| if float { format!("{x:?}") } else { format!("{}", x as i64) };
    let mut body = String::new();
    let mut tmp = 0;
    let mut prev = "inp".to_string();
    for s in 0..stages {
        let n = 2 + rng.below(4) as usize;
        let srcs: Vec<String> = (0..n)
            .map(|_| {
                // Mostly the previous stage; sometimes an input (a stage may ignore its
                // predecessor entirely).
                let src = match rng.below(6) {
                    0 => "inp".to_string(),
                    1 => "c".to_string(),
                    _ => prev.clone(),
                };
                term(rng, &mut body, &mut tmp, &src)
            })
            .collect();
        let name = format!("s{s}");
        let sum = srcs[1..].iter().fold(format!("%{}", srcs[0]), |acc, t| format!("plus({acc}, %{t})"));
        let value = match rng.below(6) {
            0 => format!("minus({sum}, multiplies({}, %{}))", lit(4.0), srcs[0]),
            // A flux limiter (GT4Py's horizontal diffusion): zero where the flux and the
            // input's difference have the same sign.
            1 if float => format!(
                "select(greater(multiplies(%{a}, minus(%{b}, %inp)), {z}), {z}, %{a})",
                a = srcs[0],
                b = srcs[1],
                z = lit(0.0)
            ),
            2 => format!("maximum(%{}, minus(%{}, %c))", srcs[0], srcs[1]),
            3 if float => format!("divides({sum}, {})", lit(3.0)),
            3 => format!("divides({sum}, 3)"),
            4 => format!("plus(multiplies({}, %{}), multiplies({}, {sum}))", lit(0.5), srcs[0], lit(0.25)),
            _ => sum,
        };
        let _ = writeln!(body, "  %{name} = {value}");
        prev = name;
    }
    let entry = format!("chain{id}");
    let text =
        format!("program @{entry}(%out: out {out_ty}, %inp: {in_ty}, %c: {in_ty}) {{\n{body}  %out <- %{prev}\n}}\n");
    Chain { text, entry }
}

fn random_fill(ty: &ValueType, seed: u64) -> Tensor {
    let mut rng = XorShift::new(seed);
    let mut t = Tensor::zeros(ty);
    if let Data::Scalars(c) = &mut t.data {
        let s = c.scalar();
        *c = Column::from_fn(s, c.len(), |_| {
            if s.is_float() {
                Sv::from_f64(s, rng.unit() * 8.0 - 4.0)
            } else {
                Sv::from_i128(s, rng.below(2001) as i128 - 1000)
            }
        });
    }
    t
}

#[test]
fn random_stencil_chains_native_equals_interpreter_on_one_and_three_threads() {
    let cache = common::private_cache("stencil-chains");
    let mut rng = XorShift::new(0x57E9_C11A_1115_0001);
    let total = 60;
    let chains: Vec<Chain> = (0..total).map(|i| generate(&mut rng, i)).collect();
    let text: String = chains.iter().map(|c| c.text.clone()).collect();
    let module = strata_verify::parse(&text).unwrap_or_else(|d| panic!("generated text does not parse: {d:?}\n{text}"));
    let info = strata_verify::verify(&module).unwrap_or_else(|d| {
        let at = d[0].primary.span.start as usize;
        let start = text[..at].rfind("program").unwrap_or(0);
        panic!("generated chains do not verify: {:?}\n{}", d[0], &text[start..at + 20])
    });
    let entries: Vec<(&str, &str)> = chains.iter().map(|c| (c.entry.as_str(), c.text.as_str())).collect();
    let lowered = common::lower_entries(&module, &info.types, &entries);
    let source = common::emit_entries(chains.iter().zip(&lowered).map(|(c, l)| (c.entry.clone(), l)));
    let so = compile::build(&source).expect("compiles").0;
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let mut staged = 0;
    for (i, (c, kp)) in chains.iter().zip(&lowered).enumerate() {
        staged += usize::from(kp.kernels.iter().any(|k| !k.windows().is_empty()));
        let h = module.function_by_name(&c.entry).expect("entry");
        let f = &module.functions[h];
        let args: Vec<Tensor> = f
            .params
            .iter()
            .enumerate()
            .map(|(p, &q)| random_fill(&ValueType::from_ir(&info.types, f.exprs[q].ty), (i * 3 + p) as u64))
            .collect();
        let want = interp.run(h, args.clone()).unwrap_or_else(|e| panic!("interpreter: {e}\n{}", c.text));
        let (Data::Scalars(w), _) = (&want.values[0].1.data, ()) else { panic!("scalar results") };
        let lib = compile::Loaded::open_symbol(&so, &format!("entry_{}", c.entry)).expect("loads");
        let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
        for threads in [1, 3] {
            let got = exec::run_threads(kp, &lib, &args, &names, None, threads)
                .unwrap_or_else(|e| panic!("native: {e}\n{}", c.text));
            let Data::Scalars(g) = &got[0].1.data else { panic!("scalar results") };
            let same = match (w, g) {
                (Column::F64(x), Column::F64(y)) => x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits()),
                (Column::F32(x), Column::F32(y)) => x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits()),
                _ => w == g,
            };
            assert!(same, "native ({threads} threads) != interpreter for\n{}\n{kp}", c.text);
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    // Most float chains of two stages or more stage something.
    assert!(staged >= total / 4, "only {staged} of {total} chains were staged");
}

#[test]
#[ignore = "prints generated chains with their loops"]
fn show_generated() {
    let mut rng = XorShift::new(0x57E9_C11A_1115_0001);
    for i in 0..4 {
        let c = generate(&mut rng, i);
        let module = strata_verify::parse(&c.text).expect("parses");
        let info = strata_verify::verify(&module).expect("verifies");
        let h = module.function_by_name(&c.entry).expect("entry");
        println!("{}\n{}", c.text, lower(&module, &info.types, h).expect("lowers"));
    }
}
