//! Sparse results are storage too: random contractions and elementwise ops whose *declared
//! result* is sparse (CSR, CSC, DCSR) give the values of the same program with a dense result
//! and dense operands, in the interpreter and natively — where the native backend writes the
//! result as storage with run-time nnz, in Gustavson's workspace when the result's columns are
//! a union over the fold (SpGEMM).
//!
//! Each program is `%r = map_reduce(@payload, %a, %b, einsum = "ik,kj->ij")` (or `"ki,kj->ij"`,
//! AᵀB) over `%a` (I, K) and `%b` (K, J), or an elementwise op of `%a` and `%b` over (I, J),
//! followed by an optional elementwise step with a dense `%d`. Payloads include ones
//! Gustavson may run (multiply-add) and ones it must not (a sum that ignores `a`, a union
//! sum, a count, a maximum with a product): those keep the column loop dense, and the
//! result still stores exactly its non-zeros. Operands are drawn in dense, CSR, CSC, DCSR and
//! COO with a quarter of the entries zero and some rows empty.

mod common;

use strata_codegen::{compile, exec, lower};
use strata_runtime::random::XorShift;
use strata_runtime::{Column, Data, Tensor, ValueType};

const OWN_PAYLOADS: &str = "func @count(%acc: f64, %a: f64, %b: f64) -> f64 {
  %one = constant(value = 1.0) : f64
  %s = plus(%acc, %one) : f64
  return %s
}
func @maxprod(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = multiplies(%a, %b) : f64
  %s = maximum(%acc, %p) : f64
  return %s
}
";

/// The payloads the programs call: the shared ones and this test's own.
static PAYLOADS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("{}{OWN_PAYLOADS}", common::BINARY_PAYLOADS));

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Dense,
    Csr,
    Csc,
    Dcsr,
    Coo,
}

const FORMATS: [Format; 5] = [Format::Dense, Format::Csr, Format::Csc, Format::Dcsr, Format::Coo];

/// A matrix type over levels `x` and `y` (interval texts) in `f`, and its letters in order.
fn matrix(f: Format, x: &str, y: &str) -> (String, String) {
    let (xn, yn) = (&x[..1], &y[..1]);
    let (levels, order) = match f {
        Format::Dense => (format!("{x}, {y}"), format!("{xn}{yn}")),
        Format::Csr => (format!("{x}, {y} compressed"), format!("{xn}{yn}")),
        Format::Csc => (format!("{y}, {x} compressed"), format!("{yn}{xn}")),
        Format::Dcsr => (format!("{x} compressed, {y} compressed"), format!("{xn}{yn}")),
        Format::Coo => (format!("{x} compressed(nonunique), {y} singleton"), format!("{xn}{yn}")),
    };
    (format!("tensor<f64, {levels}>"), order.to_lowercase())
}

#[derive(Clone, Debug)]
struct Drawn {
    n: [i64; 3],
    /// A contraction payload and whether `%a` is transposed (over K, I), or an elementwise op.
    op: Result<(&'static str, bool), &'static str>,
    /// An elementwise step with the dense `%d` after it.
    then: Option<&'static str>,
}

fn pick<T: Copy>(rng: &mut XorShift, xs: &[T]) -> T {
    xs[rng.below(xs.len() as u64) as usize]
}

fn draw(rng: &mut XorShift) -> Drawn {
    let n = [1 + rng.below(7) as i64, 1 + rng.below(7) as i64, 1 + rng.below(7) as i64];
    let op = if rng.below(4) == 0 {
        Err(pick(rng, &["plus", "minus", "multiplies", "maximum"]))
    } else {
        Ok((pick(rng, &["@mac", "@mac", "@mac", "@take_b", "@both", "@count", "@maxprod"]), rng.below(3) == 0))
    };
    let then = (rng.below(3) == 0).then(|| pick(rng, &["multiplies", "plus"]));
    Drawn { n, op, then }
}

/// `d` with operand formats `fa`, `fb` and result format `fr` as `@{name}`; `None` if it does
/// not verify so.
fn render(d: &Drawn, fa: Format, fb: Format, fr: Format, name: &str) -> Option<String> {
    let (i, j, k) = (format!("I[0:{}]", d.n[0]), format!("J[0:{}]", d.n[1]), format!("K[0:{}]", d.n[2]));
    let ((a_ty, a_sub), (b_ty, b_sub)) = match d.op {
        Ok((_, false)) => (matrix(fa, &i, &k), matrix(fb, &k, &j)),
        Ok((_, true)) => (matrix(fa, &k, &i), matrix(fb, &k, &j)),
        Err(_) => (matrix(fa, &i, &j), matrix(fb, &i, &j)),
    };
    let (r_ty, _) = matrix(fr, &i, &j);
    let params = format!("%a: {a_ty}, %b: {b_ty}, %d: tensor<f64, {i}, {j}>");
    let mut body = Vec::new();
    match d.op {
        Ok((payload, _)) => body
            .push(format!("%r = map_reduce({payload}, %a, %b, init = 0.0, einsum = \"{a_sub},{b_sub}->ij\") : {r_ty}")),
        Err(op) => body.push(format!("%r = {op}(%a, %b) : {r_ty}")),
    }
    let result = match d.then {
        None => "%r",
        Some(op) => {
            let ty = common::infer(&PAYLOADS, &params, &body, &format!("%s = {op}(%r, %d)"), "s")?;
            body.push(format!("%s = {op}(%r, %d) : {ty}"));
            "%s"
        }
    };
    let result_ty = body.last().and_then(|l| l.rsplit_once(" : ")).map(|(_, t)| t.to_string())?;
    let lines: String = body.iter().map(|l| format!("  {l}\n")).collect();
    let text = format!("func @{name}({params}) -> {result_ty} {{\n{lines}  return {result}\n}}\n");
    let module = strata_verify::parse(&format!("{}{text}", *PAYLOADS)).ok()?;
    strata_verify::verify(&module).ok()?;
    Some(text)
}

/// A value of type `ty` (two levels named from `names` in any order) holding the dense matrix
/// `m`, row-major over `names`.
fn tensor(ty: &ValueType, m: &[f64], names: [char; 2], cols: usize) -> Tensor {
    let mut t = Tensor::zeros(ty);
    let shape = ty.shape();
    let order: Vec<char> = ty.levels.iter().map(|l| l.name.as_str().chars().next().unwrap_or('?')).collect();
    let values: Vec<f64> = (0..t.len())
        .map(|lin| {
            let (mut r, mut c, mut rest) = (0, 0, lin);
            for (k, &n) in shape.iter().enumerate().rev() {
                let x = rest % n.max(1);
                rest /= n.max(1);
                if order[k] == names[0] {
                    r = x;
                } else {
                    c = x;
                }
            }
            m[r * cols + c]
        })
        .collect();
    t.data = Data::Scalars(Column::F64(values));
    t
}

/// A result's values over (I, J), whatever its level order.
fn by_name(t: &Tensor) -> Vec<f64> {
    let shape = t.ty.shape();
    let Data::Scalars(c) = &t.data else { panic!("scalar results") };
    let i_first = t.ty.levels[0].name.as_str() == "I";
    let (ni, nj) = if i_first { (shape[0], shape[1]) } else { (shape[1], shape[0]) };
    (0..ni * nj)
        .map(|lin| {
            let (i, j) = (lin / nj.max(1), lin % nj.max(1));
            c.get(if i_first { i * nj + j } else { j * ni + i }).as_f64()
        })
        .collect()
}

fn data(rng: &mut XorShift, rows: usize, cols: usize) -> Vec<f64> {
    let empty = (rng.below(3) == 0).then(|| rng.below(rows as u64) as usize);
    (0..rows * cols)
        .map(|x| if rng.below(4) == 0 || Some(x / cols) == empty { 0.0 } else { rng.unit() * 4.0 - 2.0 })
        .collect()
}

/// A rendering of a drawn program: its entry's index and the formats of `%a`, `%b`, `%r`.
type Rendering = (usize, [Format; 3]);

/// Entries per translation unit.
const CHUNK: usize = 300;

#[test]
fn random_programs_with_sparse_results_compute_the_dense_values() {
    let cache = common::private_cache("sparse-results-random");
    let mut rng = XorShift::new(0x05EE_DC5E);
    let programs = 300;
    let mut texts: Vec<String> = Vec::new();
    let mut groups: Vec<(Drawn, Vec<Rendering>)> = Vec::new();
    while groups.len() < programs {
        let d = draw(&mut rng);
        let Some(reference) = render(&d, Format::Dense, Format::Dense, Format::Dense, &format!("p{}", texts.len()))
        else {
            continue;
        };
        let mut members = vec![(texts.len(), [Format::Dense; 3])];
        texts.push(reference);
        for _ in 0..10 {
            if members.len() > 3 {
                break;
            }
            let f = [pick(&mut rng, &FORMATS), pick(&mut rng, &FORMATS), pick(&mut rng, &FORMATS[1..4])];
            if let Some(text) = render(&d, f[0], f[1], f[2], &format!("p{}", texts.len())) {
                members.push((texts.len(), f));
                texts.push(text);
            }
        }
        groups.push((d, members));
    }
    let module = strata_verify::parse(&format!("{}{}", *PAYLOADS, texts.concat())).unwrap_or_else(|d| panic!("{d:?}"));
    let info = strata_verify::verify(&module).unwrap_or_else(|d| panic!("{:?}", d[0]));
    let entries: Vec<_> = (0..texts.len()).map(|k| module.function_by_name(&format!("p{k}")).expect("entry")).collect();
    let lowered: Vec<_> = entries
        .iter()
        .zip(&texts)
        .map(|(&h, t)| lower(&module, &info.types, h).unwrap_or_else(|e| panic!("{e}\n{t}")))
        .collect();
    let workspaces = lowered
        .iter()
        .filter(|p| p.kernels.iter().any(|k| k.compressed().is_some_and(|c| c.workspace.is_some())))
        .count();
    // Translation units of 300 entries, compiled on two threads.
    let sos = common::build_units(&lowered, CHUNK);
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let mut compared = 0;
    for (d, members) in &groups {
        let [ni, nj, nk] = d.n.map(|x| x as usize);
        let (a_rows, a_cols, a_names) = match d.op {
            Ok((_, false)) => (ni, nk, ['I', 'K']),
            Ok((_, true)) => (nk, ni, ['K', 'I']),
            Err(_) => (ni, nj, ['I', 'J']),
        };
        let (b_rows, b_names) = if d.op.is_ok() { (nk, ['K', 'J']) } else { (ni, ['I', 'J']) };
        let (ma, mb, md) = (data(&mut rng, a_rows, a_cols), data(&mut rng, b_rows, nj), data(&mut rng, ni, nj));
        let mut reference: Option<Vec<f64>> = None;
        for &(k, formats) in members {
            let f = &module.functions[entries[k]];
            let types: Vec<ValueType> =
                f.params.iter().map(|&q| ValueType::from_ir(&info.types, f.exprs[q].ty)).collect();
            let args = vec![
                tensor(&types[0], &ma, a_names, a_cols),
                tensor(&types[1], &mb, b_names, nj),
                tensor(&types[2], &md, ['I', 'J'], nj),
            ];
            let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
            let rty = ValueType::from_ir(&info.types, f.result().expect("func"));
            let want =
                interp.run(entries[k], args.clone()).unwrap_or_else(|e| panic!("interpreter: {e:?}\n{}", texts[k]));
            let lib = compile::Loaded::open_symbol(&sos[k / CHUNK], &format!("entry_{k}")).expect("loads");
            let got = exec::run_threads(&lowered[k], &lib, &args, &names, Some(&rty), 2)
                .unwrap_or_else(|e| panic!("native: {e}\n{}", texts[k]));
            let (wi, gn) = (by_name(&want.values[0].1), by_name(&got[0].1));
            let Some(r) = &reference else {
                reference = Some(wi);
                continue;
            };
            let scale = r.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
            let same = |v: &[f64]| v.len() == r.len() && v.iter().zip(r).all(|(p, q)| (p - q).abs() <= 1e-12 * scale);
            let dense = &texts[members[0].0];
            assert!(same(&wi), "interpreter, formats {formats:?}: {wi:?} != dense {r:?}\n{}\n{dense}", texts[k]);
            assert!(same(&gn), "native, formats {formats:?}: {gn:?} != dense {r:?}\n{}\n{dense}", texts[k]);
            compared += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    eprintln!("{compared} sparse renderings compared; {workspaces} of {} programs use a workspace", texts.len());
    assert!(compared >= 2 * programs, "only {compared} sparse renderings compared");
    // The workspace is exercised, and so are the payloads it must leave alone.
    assert!(
        workspaces >= programs / 4 && workspaces * 2 < texts.len(),
        "{workspaces} of {} use a workspace",
        texts.len()
    );
}
