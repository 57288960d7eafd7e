//! A level format is storage, never meaning: random programs give the same values whatever
//! formats their operands are stored in.
//!
//! Each random program is drawn once as a chain of operations over matrices `%s`, `%t`
//! (dimensions `I`, `J`) and a vector `%u` (`J`) — elementwise ops with each other, with a
//! dense matrix or a constant, unary maps, and a final `map_reduce` with a random payload
//! (multiply-add, sum, maximum, `exp` sums, counts that ignore their operand, non-zero
//! counts, a payload that reads only a dense operand) over random kept dimensions — and then
//! rendered with several format assignments: all dense (the reference), and random ones from
//! dense, CSR, CSC (levels in `J, I` order, einsum letters following), DCSR, COO and ragged
//! (rows kept whole, as a ragged tensor only equals a dense one then). Data is the same dense
//! matrices (a quarter of the entries zero, some rows empty) in every rendering. Each rendering
//! runs in the interpreter and natively; both must give the reference's values (compared by
//! dimension name, up to the rounding of reassociated sums).

mod common;

use strata_codegen::{compile, exec, lower};
use strata_runtime::random::XorShift;
use strata_runtime::{Column, Data, Tensor, ValueType};

const OWN_PAYLOADS: &str = "func @add(%acc: f64, %a: f64) -> f64 {
  %s = plus(%acc, %a) : f64
  return %s
}
func @big(%acc: f64, %a: f64) -> f64 {
  %s = maximum(%acc, %a) : f64
  return %s
}
func @exps(%acc: f64, %a: f64) -> f64 {
  %e = exp(%a) : f64
  %s = plus(%acc, %e) : f64
  return %s
}
func @count(%acc: f64, %a: f64) -> f64 {
  %one = constant(value = 1.0) : f64
  %s = plus(%acc, %one) : f64
  return %s
}
func @nonzero(%acc: f64, %a: f64) -> f64 {
  %zero = constant(value = 0.0) : f64
  %nz = ne(%a, %zero) : bool
  %one = cast(%nz, to = f64) : f64
  %s = plus(%acc, %one) : f64
  return %s
}
";

/// The payloads the programs call: the shared ones and this test's own.
static PAYLOADS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("{}{OWN_PAYLOADS}", common::BINARY_PAYLOADS));

/// How an operand is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Dense,
    Csr,
    Csc,
    Dcsr,
    Coo,
    Ragged,
}

const MATRIX_FORMATS: [Format; 6] =
    [Format::Dense, Format::Csr, Format::Csc, Format::Dcsr, Format::Coo, Format::Ragged];

/// A matrix type over `i` and `j` (interval texts) in `f`, and its level names in order.
fn matrix(f: Format, i: &str, j: &str) -> (String, Vec<char>) {
    let (levels, order) = match f {
        Format::Dense => (format!("{i}, {j}"), vec!['I', 'J']),
        Format::Csr => (format!("{i}, {j} compressed"), vec!['I', 'J']),
        Format::Csc => (format!("{j}, {i} compressed"), vec!['J', 'I']),
        Format::Dcsr => (format!("{i} compressed, {j} compressed"), vec!['I', 'J']),
        Format::Coo => (format!("{i} compressed(nonunique), {j} singleton"), vec!['I', 'J']),
        Format::Ragged => (format!("{i}, {j} ragged"), vec!['I', 'J']),
    };
    (format!("tensor<f64, {levels}>"), order)
}

/// One step of a drawn program, rendered per format assignment.
#[derive(Clone, Debug)]
enum Step {
    /// `op(cur, other)`; other is `%t`, `%d`, `%u` or the constant `%half`.
    Binary(&'static str, &'static str),
    /// `op(cur)`.
    Unary(&'static str),
}

/// The final fold: payload, second operand (none, `%u`, `%x` over J, or `%d`), kept dimensions.
#[derive(Clone, Debug)]
struct End {
    payload: &'static str,
    second: Option<&'static str>,
    keep: Vec<char>,
}

/// A rendering of a drawn program: its entry's index and the formats of `%s`, `%t`, `%u`.
type Rendering = (usize, [Format; 3]);

#[derive(Clone, Debug)]
struct Drawn {
    i: (i64, i64),
    j: (i64, i64),
    steps: Vec<Step>,
    end: Option<End>,
}

fn pick<T: Copy>(rng: &mut XorShift, xs: &[T]) -> T {
    xs[rng.below(xs.len() as u64) as usize]
}

fn draw(rng: &mut XorShift) -> Drawn {
    let a = pick(rng, &[0i64, -2, 3]);
    let b = pick(rng, &[0i64, 1]);
    let (ni, nj) = (1 + rng.below(6) as i64, 1 + rng.below(6) as i64);
    let mut steps = Vec::new();
    for _ in 0..rng.below(3) {
        steps.push(match rng.below(4) {
            0 => Step::Unary(pick(rng, &["exp", "neg", "abs"])),
            _ => Step::Binary(
                pick(rng, &["plus", "minus", "multiplies", "maximum"]),
                pick(rng, &["%t", "%d", "%u", "%half"]),
            ),
        });
    }
    let end = (rng.below(5) != 0).then(|| {
        let (payload, second) = pick(
            rng,
            &[
                ("@mac", Some("%x")),
                ("@mac", Some("%u")),
                ("@mac", Some("%t")),
                ("@add", None),
                ("@big", None),
                ("@exps", None),
                ("@count", None),
                ("@nonzero", None),
                ("@take_b", Some("%d")),
                ("@both", Some("%t")),
                ("@both", Some("%u")),
            ],
        );
        let keep = ['I', 'J'].into_iter().filter(|_| rng.below(2) == 0).collect();
        End { payload, second, keep }
    });
    Drawn { i: (a, a + ni), j: (b, b + nj), steps, end }
}

fn infer(params: &str, body: &[String], stmt: &str, name: &str) -> Option<String> {
    common::infer(&PAYLOADS, params, body, stmt, name)
}

/// The level names of a tensor type's text, in level order.
fn level_order(ty: &str) -> Vec<char> {
    let inner = ty.trim_start_matches("tensor<").trim_end_matches('>');
    inner.split(", ").skip(1).filter_map(|l| l.chars().next()).collect()
}

/// `d` rendered with formats `(s, t, u)` as function `@{name}`; `None` if a statement does
/// not verify under these formats.
fn render(d: &Drawn, formats: [Format; 3], name: &str) -> Option<String> {
    let i = format!("I[{}:{}]", d.i.0, d.i.1);
    let j = format!("J[{}:{}]", d.j.0, d.j.1);
    let (s_ty, _) = matrix(formats[0], &i, &j);
    let (t_ty, _) = matrix(formats[1], &i, &j);
    let u_ty =
        if formats[2] == Format::Dense { format!("tensor<f64, {j}>") } else { format!("tensor<f64, {j} compressed>") };
    let params = format!("%s: {s_ty}, %t: {t_ty}, %u: {u_ty}, %d: tensor<f64, {i}, {j}>, %x: tensor<f64, {j}>");
    let mut body = vec!["%half = constant(value = 0.5) : f64".to_string()];
    let (mut cur, mut cur_ty) = ("%s".to_string(), s_ty.clone());
    for (k, step) in d.steps.iter().enumerate() {
        let stmt = match step {
            Step::Binary(op, other) => format!("%v{k} = {op}({cur}, {other})"),
            Step::Unary(op) => format!("%v{k} = {op}({cur})"),
        };
        let ty = infer(&params, &body, &stmt, &format!("v{k}"))?;
        body.push(format!("{stmt} : {ty}"));
        (cur, cur_ty) = (format!("%v{k}"), ty);
    }
    let (result, result_ty) = match &d.end {
        None => (cur, cur_ty),
        Some(end) => {
            let letters = |ty: &str| -> String { level_order(ty).iter().map(|c| c.to_ascii_lowercase()).collect() };
            let mut args = vec![cur.clone()];
            let mut subs = vec![letters(&cur_ty)];
            if let Some(second) = end.second {
                let ty = match second {
                    "%t" => t_ty.clone(),
                    "%u" => u_ty.clone(),
                    "%x" => format!("tensor<f64, {j}>"),
                    _ => format!("tensor<f64, {i}, {j}>"),
                };
                args.push(second.to_string());
                subs.push(letters(&ty));
            }
            let out: String =
                end.keep.iter().map(|c| c.to_ascii_lowercase()).filter(|c| subs[0].contains(*c)).collect();
            let stmt = format!(
                "%r = map_reduce({}, {}, init = 0.0, einsum = \"{}->{out}\")",
                end.payload,
                args.join(", "),
                subs.join(",")
            );
            let ty = infer(&params, &body, &stmt, "r")?;
            body.push(format!("{stmt} : {ty}"));
            ("%r".to_string(), ty)
        }
    };
    let lines: String = body.iter().map(|l| format!("  {l}\n")).collect();
    let text = format!("func @{name}({params}) -> {result_ty} {{\n{lines}  return {result}\n}}\n");
    // The inferred types must themselves be well-formed (the verifier infers an ill-formed COO
    // type for some operand orders: see the note in docs/design.md).
    let module = strata_verify::parse(&format!("{}{text}", *PAYLOADS)).ok()?;
    strata_verify::verify(&module).ok()?;
    Some(text)
}

/// The dense data of one program's parameters, row-major over (I, J) (vectors over J).
struct DenseData {
    s: Vec<f64>,
    t: Vec<f64>,
    u: Vec<f64>,
    d: Vec<f64>,
    x: Vec<f64>,
    nj: usize,
}

fn draw_data(rng: &mut XorShift, ni: usize, nj: usize) -> DenseData {
    let mut vals = |n: usize, rows: usize| -> Vec<f64> {
        let empty_row = if rng.below(3) == 0 { Some(rng.below(rows.max(1) as u64) as usize) } else { None };
        let per_row = n / rows.max(1);
        (0..n)
            .map(|k| {
                let zero = rng.below(4) == 0 || Some(k / per_row.max(1)) == empty_row;
                let v = rng.unit() * 4.0 - 2.0;
                if zero {
                    0.0
                } else {
                    v
                }
            })
            .collect()
    };
    DenseData { s: vals(ni * nj, ni), t: vals(ni * nj, ni), u: vals(nj, 1), d: vals(ni * nj, ni), x: vals(nj, 1), nj }
}

/// A value of type `ty` (levels named `I`/`J` in any order) holding the dense matrix `m` over
/// (I, J) or vector `m` over J.
fn tensor(ty: &ValueType, m: &[f64], nj: usize) -> Tensor {
    let mut t = Tensor::zeros(ty);
    let shape = ty.shape();
    let names: Vec<char> = ty.levels.iter().map(|l| l.name.as_str().chars().next().unwrap_or('?')).collect();
    let values: Vec<f64> = (0..t.len())
        .map(|lin| {
            let (mut i, mut j, mut rest) = (0, 0, lin);
            for (k, &n) in shape.iter().enumerate().rev() {
                let c = rest % n.max(1);
                rest /= n.max(1);
                if names[k] == 'I' {
                    i = c;
                } else {
                    j = c;
                }
            }
            if names.contains(&'I') {
                m[i * nj + j]
            } else {
                m[j]
            }
        })
        .collect();
    t.data = Data::Scalars(Column::F64(values));
    t
}

/// A result's values by name: over (I, J) in that order, whatever its level order.
fn by_name(t: &Tensor) -> Vec<f64> {
    let shape = t.ty.shape();
    let names: Vec<char> = t.ty.levels.iter().map(|l| l.name.as_str().chars().next().unwrap_or('?')).collect();
    let Data::Scalars(c) = &t.data else { panic!("scalar results") };
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&k| names[k]);
    let strides = strata_runtime::strides(&shape);
    let sorted_shape: Vec<usize> = order.iter().map(|&k| shape[k]).collect();
    let n: usize = shape.iter().product();
    (0..n)
        .map(|lin| {
            let (mut rest, mut off) = (lin, 0);
            for (pos, &k) in order.iter().enumerate().rev() {
                let ext = sorted_shape[pos].max(1);
                off += (rest % ext) * strides[k];
                rest /= ext;
            }
            if t.is_present(off) {
                c.get(off).as_f64()
            } else {
                f64::NAN
            }
        })
        .collect()
}

#[test]
fn a_thousand_random_programs_compute_the_same_values_in_every_format() {
    let cache = common::private_cache("format-independence");
    let mut rng = XorShift::new(0xF0_12A7);
    let (programs, variants) = (1000, 2);
    // Each program: the all-dense reference and `variants` random format assignments.
    let mut texts: Vec<String> = Vec::new();
    let mut groups: Vec<(Drawn, Vec<Rendering>)> = Vec::new();
    let mut attempts = 0;
    while groups.len() < programs {
        attempts += 1;
        let d = draw(&mut rng);
        let dense = [Format::Dense; 3];
        let Some(reference) = render(&d, dense, &format!("p{}", texts.len())) else { continue };
        let mut members = vec![(texts.len(), dense)];
        texts.push(reference);
        let mut tries = 0;
        while members.len() <= variants && tries < 20 {
            tries += 1;
            let f = [
                pick(&mut rng, &MATRIX_FORMATS),
                pick(&mut rng, &MATRIX_FORMATS),
                pick(&mut rng, &[Format::Dense, Format::Csr]),
            ];
            if let Some(text) = render(&d, f, &format!("p{}", texts.len())) {
                members.push((texts.len(), f));
                texts.push(text);
            }
        }
        groups.push((d, members));
    }
    assert!(attempts < 3 * programs, "{attempts} draws for {programs} programs");
    let module = strata_verify::parse(&format!("{}{}", *PAYLOADS, texts.concat())).unwrap_or_else(|d| panic!("{d:?}"));
    let info = strata_verify::verify(&module).unwrap_or_else(|d| panic!("{:?}", d[0]));
    let entries: Vec<_> = (0..texts.len()).map(|k| module.function_by_name(&format!("p{k}")).expect("entry")).collect();
    let lowered: Vec<_> = entries
        .iter()
        .zip(&texts)
        .map(|(&h, t)| lower(&module, &info.types, h).unwrap_or_else(|e| panic!("{e}\n{t}")))
        .collect();
    // Translation units of 400 entries, compiled on two threads.
    let sos = common::build_units(&lowered, 400);
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let (mut compared, mut sparse_runs) = (0, 0);
    for (d, members) in &groups {
        let (ni, nj) = ((d.i.1 - d.i.0) as usize, (d.j.1 - d.j.0) as usize);
        let data = draw_data(&mut rng, ni, nj);
        let mut reference: Option<Vec<f64>> = None;
        for &(k, formats) in members {
            let f = &module.functions[entries[k]];
            let types: Vec<ValueType> =
                f.params.iter().map(|&q| ValueType::from_ir(&info.types, f.exprs[q].ty)).collect();
            let args: Vec<Tensor> = [&data.s, &data.t, &data.u, &data.d, &data.x]
                .iter()
                .zip(&types)
                .map(|(m, ty)| tensor(ty, m, data.nj))
                .collect();
            let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
            let rty = ValueType::from_ir(&info.types, f.result().expect("func"));
            let want =
                interp.run(entries[k], args.clone()).unwrap_or_else(|e| panic!("interpreter: {e:?}\n{}", texts[k]));
            let lib = compile::Loaded::open_symbol(&sos[k / 400], &format!("entry_{k}")).expect("loads");
            let got = exec::run_threads(&lowered[k], &lib, &args, &names, Some(&rty), 1)
                .unwrap_or_else(|e| panic!("native: {e}\n{}", texts[k]));
            let (wi, gn) = (by_name(&want.values[0].1), by_name(&got[0].1));
            let Some(r) = &reference else {
                reference = Some(wi.clone());
                continue;
            };
            let scale = r.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
            let same = |v: &[f64]| {
                v.len() == r.len()
                    && v.iter().zip(r).all(|(p, q)| p.to_bits() == q.to_bits() || (p - q).abs() <= 1e-10 * scale)
            };
            let dense_text = &texts[members[0].0];
            assert!(same(&wi), "interpreter, formats {formats:?}: {wi:?} != dense {r:?}\n{}\n{dense_text}", texts[k]);
            assert!(same(&gn), "native, formats {formats:?}: {gn:?} != dense {r:?}\n{}\n{dense_text}", texts[k]);
            compared += 1;
            sparse_runs += usize::from(formats.iter().any(|&f| f != Format::Dense));
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    assert_eq!(groups.len(), programs);
    // Most programs render in at least one stored format besides dense.
    assert!(compared >= programs, "only {compared} renderings compared");
    assert!(sparse_runs * 10 >= compared * 9, "{sparse_runs} of {compared} renderings use sparse or ragged storage");
}
