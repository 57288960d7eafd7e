//! Differential testing: randomly generated well-typed programs run natively and in the
//! reference interpreter must give the same bits. Programs are written as text, with their
//! result types computed here independently of the verifier (which then re-checks them), and
//! compiled in batches (one C translation unit per batch) so that thousands fit in CI.

mod common;

use std::fmt::Write;

use strata_codegen::{compile, emit_c, exec};
use strata_runtime::{Column, Data, Sv, Tensor, ValueType};

/// The shared deterministic generator, with the helpers the generator uses.
struct Rng(strata_runtime::random::XorShift);
impl Rng {
    fn seeded(seed: u64) -> Rng {
        Rng(strata_runtime::random::XorShift::new(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        self.0.range(lo, hi)
    }
}

/// A value of the generated program: name, dims (name, start, stop), element type.
#[derive(Clone)]
struct V {
    name: String,
    dims: Vec<(char, i64, i64)>,
    scalar: &'static str,
    tuple: bool,
}

fn ty(v: &V) -> String {
    let el = if v.tuple { format!("({0}, {0})", v.scalar) } else { v.scalar.to_string() };
    let dims: Vec<String> = v.dims.iter().map(|(d, s, e)| format!("{d}[{s}:{e}]")).collect();
    if dims.is_empty() {
        format!("tensor<{el}>")
    } else {
        format!("tensor<{el}, {}>", dims.join(", "))
    }
}

/// Name-based broadcast of `vs`' dimensions (union, intersection), or `None` if an intersection
/// is empty.
fn bcast(vs: &[&V]) -> Option<Vec<(char, i64, i64)>> {
    let mut out: Vec<(char, i64, i64)> = Vec::new();
    for v in vs {
        for &(d, s, e) in &v.dims {
            match out.iter_mut().find(|x| x.0 == d) {
                Some(x) => {
                    x.1 = x.1.max(s);
                    x.2 = x.2.min(e);
                    if x.1 >= x.2 {
                        return None;
                    }
                }
                None => out.push((d, s, e)),
            }
        }
    }
    Some(out)
}

struct Program {
    text: String,
    entry: String,
    /// Neighbor-table parameters and the source interval their entries index.
    tables: Vec<(String, i64, i64)>,
    /// The program in numpy (tests/oracles/named.py): the body of a Python function of the
    /// parameters by name, returning the result's array; `None` where one is not generated
    /// (vector math, whose last bits are the library's, and semi-affine windows).
    numpy: Option<String>,
}

/// A named value in the numpy translation: `NV([("I", s, e), …], array)`.
fn nv(name: &str, dims: &[(char, i64, i64)]) -> String {
    let ds: Vec<String> = dims.iter().map(|(d, s, e)| format!("(\"{d}\", {s}, {e})")).collect();
    format!("NV([{}], inputs[\"{name}\"])", ds.join(", "))
}

fn generate(rng: &mut Rng, id: usize) -> Program {
    let scalar = if rng.below(3) == 0 { "i64" } else { "f64" };
    let mut py: Vec<String> = Vec::new();
    let mut numpy = true;
    let mut vals: Vec<V> = Vec::new();
    let mut params = Vec::new();
    for p in 0..2 + rng.below(2) {
        let mut dims = Vec::new();
        for d in ['I', 'J', 'K'] {
            if rng.below(3) > 0 || (dims.is_empty() && d == 'K') {
                let s = rng.range(-3, 2);
                dims.push((d, s, s + rng.range(3, 7)));
            }
        }
        let v = V { name: format!("p{p}"), dims, scalar, tuple: false };
        params.push(format!("%{}: {}", v.name, ty(&v)));
        py.push(format!("    {} = {}", v.name, nv(&v.name, &v.dims)));
        vals.push(v);
    }
    let mut body = String::new();
    let mut helpers = String::new();
    let mut tables = Vec::new();
    let mut n = 0;
    let steps = 2 + rng.below(7);
    let mut guard = 0;
    while n < steps && guard < 100 {
        guard += 1;
        let a = vals[rng.below(vals.len())].clone();
        let b = vals[rng.below(vals.len())].clone();
        let name = format!("v{n}");
        // The statement's numpy translation (set by every arm that makes a value).
        let np_expr: String;
        let (op, out): (String, Option<V>) = match rng.below(13) {
            0..=3 if a.scalar == b.scalar && !a.tuple && !b.tuple && a.scalar != "bool" => {
                let ops = if a.scalar == "f64" {
                    &["plus", "minus", "multiplies", "divides", "maximum", "minimum"][..]
                } else {
                    &["plus", "minus", "multiplies", "maximum", "minimum"][..]
                };
                let o = ops[rng.below(ops.len())];
                np_expr = format!("binary(\"{o}\", {}, {})", a.name, b.name);
                (
                    format!("{o}(%{}, %{})", a.name, b.name),
                    bcast(&[&a, &b]).map(|d| V { name: name.clone(), dims: d, scalar: a.scalar, tuple: false }),
                )
            }
            4 if a.scalar == b.scalar && !a.tuple && !b.tuple && a.scalar != "bool" => {
                let o = ["less", "greater", "eq", "ne"][rng.below(4)];
                np_expr = format!("binary(\"{o}\", {}, {})", a.name, b.name);
                (
                    format!("{o}(%{}, %{})", a.name, b.name),
                    bcast(&[&a, &b]).map(|d| V { name: name.clone(), dims: d, scalar: "bool", tuple: false }),
                )
            }
            5 if a.scalar == "bool" && !a.tuple => {
                let others: Vec<&V> = vals.iter().filter(|v| v.scalar != "bool" && !v.tuple).collect();
                if others.len() < 2 {
                    continue;
                }
                let (t, f) = (others[rng.below(others.len())].clone(), others[rng.below(others.len())].clone());
                if t.scalar != f.scalar {
                    continue;
                }
                np_expr = format!("select({}, {}, {})", a.name, t.name, f.name);
                (
                    format!("select(%{}, %{}, %{})", a.name, t.name, f.name),
                    bcast(&[&a, &t, &f]).map(|d| V { name: name.clone(), dims: d, scalar: t.scalar, tuple: false }),
                )
            }
            6 if !a.tuple && a.scalar != "bool" => {
                let u = if a.scalar == "f64" {
                    ["neg", "abs", "sqrt", "exp", "sin", "floor"][rng.below(6)]
                } else {
                    ["neg", "abs"][rng.below(2)]
                };
                numpy &= !matches!(u, "exp" | "sin");
                np_expr = format!("unary(\"{u}\", {})", a.name);
                (format!("{u}(%{})", a.name), Some(V { name: name.clone(), ..a.clone() }))
            }
            7 if !a.tuple && a.scalar != "bool" => {
                let to = if a.scalar == "f64" { "i64" } else { "f64" };
                np_expr = format!("cast({}, \"{to}\")", a.name);
                (format!("cast(%{}, to = {to})", a.name), Some(V { name: name.clone(), scalar: to, ..a.clone() }))
            }
            8 if !a.dims.is_empty() => {
                let k = rng.below(a.dims.len());
                let off = rng.range(-2, 2);
                let mut dims = a.dims.clone();
                dims[k].1 -= off;
                dims[k].2 -= off;
                np_expr = format!("shift({}, \"{}\", {off})", a.name, a.dims[k].0);
                (
                    format!("cartesian_shift(%{}, dim = {}, offset = {off})", a.name, a.dims[k].0),
                    Some(V { name: name.clone(), dims, ..a.clone() }),
                )
            }
            9 if !a.tuple && !b.tuple => {
                let Some(d) = bcast(&[&a, &b]) else { continue };
                if a.scalar != b.scalar {
                    continue;
                }
                // A tuple, projected right away (both fields are checked through the result).
                let t = V { name: format!("t{n}"), dims: d.clone(), scalar: a.scalar, tuple: true };
                let _ = writeln!(body, "  %t{n} = make_tuple(%{}, %{}) : {}", a.name, b.name, ty(&t));
                let k = rng.below(2);
                np_expr = format!("pick({k}, {}, {})", a.name, b.name);
                (
                    format!("tuple_get(%t{n}, index = {k})"),
                    Some(V { name: name.clone(), dims: d, scalar: a.scalar, tuple: false }),
                )
            }
            10 if !a.tuple
                && a.scalar != "bool"
                && a.dims.iter().any(|x| x.0 == 'I')
                && !a.dims.iter().any(|x| x.0 == 'C') =>
            {
                // A neighbor reduction: C -> I through a table with skip values.
                let (_, lo, hi) = *a.dims.iter().find(|x| x.0 == 'I').expect("I");
                let (cn, m) = (rng.range(2, 5), rng.range(1, 4));
                let tb = format!("tb{n}");
                params.push(format!("%{tb}: tensor<i32, C[0:{cn}], NB_I[0:{m}]>"));
                tables.push((tb.clone(), lo, hi));
                let mut sdims: Vec<(char, i64, i64)> =
                    a.dims.iter().map(|&x| if x.0 == 'I' { ('C', 0, cn) } else { x }).collect();
                let red = V { name: name.clone(), dims: sdims.clone(), scalar: a.scalar, tuple: false };
                sdims.push(('N', 0, m));
                let shown: Vec<String> = sdims
                    .iter()
                    .map(|(d, s, e)| if *d == 'N' { format!("NB_0[{s}:{e}]") } else { format!("{d}[{s}:{e}]") })
                    .collect();
                let _ = writeln!(
                    body,
                    "  %sh{n} = shift_init(%{}, %{tb}) : tensor<{}, {}>",
                    a.name,
                    a.scalar,
                    shown.join(", ")
                );
                let rt = ty(&red);
                let float = a.scalar == "f64";
                // Sums; counts that ignore the neighbor value (a skipped neighbor must not
                // count); maxima, which the neighbor's skips must not reach either.
                let kind = rng.below(4);
                let step = match kind {
                    0 => "%s = plus(%acc, %x)".to_string(),
                    1 => {
                        let one = if float { "1.0" } else { "1" };
                        format!("%one = constant(value = {one}) : {}\n  %s = plus(%acc, %one)", a.scalar)
                    }
                    // The same count with a literal operand.
                    2 => format!("%s = plus(%acc, {})", if float { "1.0" } else { "1" }),
                    _ => "%s = maximum(%acc, %x)".to_string(),
                };
                let np_step = ["sum", "count", "count", "max"][kind];
                np_expr = format!(
                    "reduce_table({}, \"I\", (\"C\", 0, {cn}), inputs[\"{tb}\"], \"{np_step}\", {})",
                    a.name,
                    if float { "0.0" } else { "0" }
                );
                let _ = writeln!(
                    helpers,
                    "func @sum{id}_{n}(%acc: {rt}, %x: {rt}) -> {rt} {{\n  {step} : {rt}\n  return %s\n}}\n"
                );
                let init = if float { "0.0" } else { "0" };
                (format!("reduce(@sum{id}_{n}, %sh{n}, init = {init})"), Some(red))
            }
            11 if !a.tuple
                && a.scalar != "bool"
                && a.dims.iter().any(|x| x.0 == 'C')
                && !a.dims.iter().any(|x| x.0 == 'I') =>
            {
                // The way back: I -> C through a second table, so a value reduced from I to C
                // (arm 10) is reduced again (V2E of an E2V sum: both folds count neighbors in
                // `NB_0`). Sometimes with a per-neighbor weight on a narrower or shifted
                // neighbor interval than the table's (the fold visits the intersection).
                let (_, lo, hi) = *a.dims.iter().find(|x| x.0 == 'C').expect("C");
                let (is, m) = (rng.range(-2, 2), rng.range(1, 5));
                let ie = is + rng.range(2, 6);
                let tb = format!("tb{n}");
                params.push(format!("%{tb}: tensor<i32, I[{is}:{ie}], NB_C[0:{m}]>"));
                tables.push((tb.clone(), lo, hi));
                let mut sdims: Vec<(char, i64, i64)> =
                    a.dims.iter().map(|&x| if x.0 == 'C' { ('I', is, ie) } else { x }).collect();
                let red = V { name: name.clone(), dims: sdims.clone(), scalar: a.scalar, tuple: false };
                sdims.push(('N', 0, m));
                let shown = |dims: &[(char, i64, i64)]| {
                    dims.iter()
                        .map(|(d, s, e)| if *d == 'N' { format!("NB_0[{s}:{e}]") } else { format!("{d}[{s}:{e}]") })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = writeln!(
                    body,
                    "  %sh{n} = shift_init(%{}, %{tb}) : tensor<{}, {}>",
                    a.name,
                    a.scalar,
                    shown(&sdims)
                );
                let rt = ty(&red);
                let st = a.scalar;
                let float = st == "f64";
                if rng.below(2) == 0 {
                    // `range` is inclusive: a start among the table's neighbors, an end up to
                    // one past them.
                    let ws = rng.range(0, m - 1);
                    let we = ws + rng.range(1, m + 1 - ws);
                    let w = format!("w{n}");
                    params.push(format!("%{w}: tensor<{st}, NB_0[{ws}:{we}]>"));
                    let _ = writeln!(
                        helpers,
                        "func @mac{id}_{n}(%acc: {rt}, %x: {rt}, %w: tensor<{st}>) -> {rt} {{\n  return plus(%acc, multiplies(%x, %w))\n}}\n"
                    );
                    let init = if float { "0.5" } else { "2" };
                    np_expr = format!(
                        "reduce_table({}, \"C\", (\"I\", {is}, {ie}), inputs[\"{tb}\"], \"mac\", {init}, (inputs[\"{w}\"], {ws}))",
                        a.name
                    );
                    (format!("reduce(@mac{id}_{n}, %sh{n}, %{w}, init = {init})"), Some(red))
                } else {
                    let kind = rng.below(3);
                    let step = match kind {
                        0 => "plus(%acc, %x)".to_string(),
                        1 => format!("plus(%acc, {})", if float { "1.0" } else { "1" }),
                        _ => "minimum(%acc, %x)".to_string(),
                    };
                    let _ =
                        writeln!(helpers, "func @back{id}_{n}(%acc: {rt}, %x: {rt}) -> {rt} {{\n  return {step}\n}}\n");
                    let init = if float { "100.0" } else { "100" };
                    np_expr = format!(
                        "reduce_table({}, \"C\", (\"I\", {is}, {ie}), inputs[\"{tb}\"], \"{}\", {init})",
                        a.name,
                        ["sum", "count", "min"][kind]
                    );
                    (format!("reduce(@back{id}_{n}, %sh{n}, init = {init})"), Some(red))
                }
            }
            10 if !a.tuple && a.scalar != "bool" && a.dims.iter().any(|x| x.0 == 'K') => {
                // A scan along K, forward or backward.
                let col = V {
                    name: String::new(),
                    dims: a.dims.iter().copied().filter(|x| x.0 != 'K').collect(),
                    ..a.clone()
                };
                let ct = ty(&col);
                let op = ["plus", "maximum", "minus"][rng.below(3)];
                let _ = writeln!(
                    helpers,
                    "func @step{id}_{n}(%s: {ct}, %x: {ct}) -> {ct} {{\n  %r = {op}(%x, %s) : {ct}\n  return %r\n}}\n"
                );
                let init = if a.scalar == "f64" { "0.5" } else { "1" };
                let fw = rng.below(2) == 0;
                np_expr = format!("scan({}, \"K\", \"{op}\", {init}, {})", a.name, if fw { "True" } else { "False" });
                (
                    format!("scan(@step{id}_{n}, %{}, dim = K, forward = {fw}, init = {init})", a.name),
                    Some(V { name: name.clone(), ..a.clone() }),
                )
            }
            _ if !a.dims.is_empty() && a.dims.iter().any(|x| x.2 - x.1 > 1) => {
                let k = (0..a.dims.len()).find(|&k| a.dims[k].2 - a.dims[k].1 > 1).expect("some");
                let mut dims = a.dims.clone();
                dims[k].1 += 1;
                np_expr = format!("subset({}, \"{}\", {}, {})", a.name, a.dims[k].0, dims[k].1, dims[k].2);
                (
                    format!("subset(%{}, domain = [{}[{}:{}]])", a.name, a.dims[k].0, dims[k].1, dims[k].2),
                    Some(V { name: name.clone(), dims, ..a.clone() }),
                )
            }
            _ => continue,
        };
        let Some(out) = out else { continue };
        py.push(format!("    {name} = {np_expr}"));
        // Half the statements leave their type to inference.
        if rng.below(2) == 0 {
            let _ = writeln!(body, "  %{name} = {op}");
        } else {
            let _ = writeln!(body, "  %{name} = {op} : {}", ty(&out));
        }
        vals.push(out);
        n += 1;
    }
    let mut last = vals.last().expect("values").name.clone();
    let mut rty = ty(vals.last().expect("values"));
    let a = vals.last().expect("values").clone();
    if rng.below(3) == 0 && !a.tuple && a.scalar != "bool" && !a.dims.is_empty() {
        // A window over the last value with semi-affine reads (floordiv, mod) that may leave it:
        // the padding value is read there.
        let (w, r) = (rng.range(1, 4), a.dims.len());
        let ext: Vec<i64> = a.dims.iter().map(|x| x.2 - x.1).collect();
        let loops: Vec<String> = (0..=r).map(|k| format!("d{k}")).collect();
        let coords: Vec<String> = (0..r)
            .map(|k| match rng.below(4) {
                0 => format!("d{k} + d{r} - {}", rng.range(0, w)),
                1 => format!("(d{k} + {}) mod {}", rng.range(0, 7), ext[k]),
                2 => format!("(2*d{k} + d{r}) floordiv 2"),
                _ => format!("d{k} floordiv {} - d{r}", rng.range(1, 4)),
            })
            .collect();
        let float = a.scalar == "f64";
        let st = a.scalar;
        let step = match rng.below(3) {
            0 => "plus(%acc, %x)".to_string(),
            1 => format!("plus(%acc, {})", if float { "1.0" } else { "1" }),
            _ => "maximum(%acc, %x)".to_string(),
        };
        let _ = writeln!(helpers, "func @win{id}(%acc: {st}, %x: {st}) -> {st} {{\n  return {step}\n}}\n");
        let (pad, init) = if float { ("-0.5", "0.25") } else { ("-7", "3") };
        let shape: Vec<String> = ext.iter().map(|e| e.to_string()).collect();
        let dims = format!("{}, {w}", shape.join(", "));
        let _ = writeln!(
            body,
            "  %win = map_reduce_aff(@win{id}, %{last}, init = {init}, domain = [{dims}], outputs = {r}, shape = [{}], out_map = ({}) -> ({}), maps = [({}) -> ({})], padding = {pad})",
            shape.join(", "),
            loops.join(", "),
            loops[..r].join(", "),
            loops.join(", "),
            coords.join(", ")
        );
        last = "win".to_string();
        numpy = false;
        rty = format!("tensor<{}x{st}>", shape.join("x"));
    }
    let entry = format!("g{id}");
    let text = format!("{helpers}func @{entry}({}) -> {rty} {{\n{body}  return %{last}\n}}\n", params.join(", "));
    py.push(format!("    return {last}.a"));
    Program { text, entry, tables, numpy: numpy.then(|| py.join("\n")) }
}

/// Equal bits (`exact`), or — for programs calling vector math — equal within 1e-12 of the
/// output's largest magnitude.
fn same(a: &Column, b: &Column, exact: bool) -> bool {
    match (a, b) {
        (Column::F64(x), Column::F64(y)) => {
            let scale = x.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
            x.iter().zip(y).all(|(p, q)| {
                p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()) || (!exact && (p - q).abs() <= 1e-12 * scale)
            })
        }
        _ => a == b,
    }
}

#[test]
fn thousand_random_programs_native_equals_interpreter() {
    random_programs(1000, 0xD1FF_5EED_0000_0001);
}

/// The same generator's programs with each optional pass disabled in turn equal the whole
/// pipeline's results (`common::toggle`): 100 in CI, 2,000 in the ignored long run.
#[test]
fn generated_programs_are_unchanged_by_each_pass() {
    toggled_programs(100, 0x7066_1e00_0000_0001);
}

/// The long run of [`generated_programs_are_unchanged_by_each_pass`].
#[test]
#[ignore = "the long run: 2,000 random programs, each with every optional pass disabled in turn"]
fn two_thousand_programs_are_unchanged_by_each_pass() {
    toggled_programs(2000, 0x7066_1e00_0000_2000);
}

/// The tests of this file one at a time: `random_programs` points `$STRATA_CACHE_DIR` (process
/// wide) at a private cache and removes it at its end, under another test's compiles.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn toggled_programs(total: usize, seed: u64) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng::seeded(seed);
    let mut cases = Vec::new();
    for i in 0..total {
        let p = generate(&mut rng, i);
        let module = strata_verify::parse(&p.text).unwrap_or_else(|d| panic!("{d:?}\n{}", p.text));
        let info = strata_verify::verify(&module).unwrap_or_else(|d| panic!("{:?}\n{}", d[0], p.text));
        let h = module.function_by_name(&p.entry).expect("entry");
        let f = &module.functions[h];
        let args = f
            .params
            .iter()
            .enumerate()
            .map(|(k, &q)| {
                let vt = ValueType::from_ir(&info.types, f.exprs[q].ty);
                let table = p.tables.iter().find(|t| t.0 == f.exprs[q].name).map(|t| (t.1, t.2));
                random_fill(&vt, (i * 7 + k) as u64, table)
            })
            .collect();
        cases.push(common::toggle::Case { name: p.text.clone(), module, types: info.types, entry: h, args });
    }
    let compared = common::toggle::same_with_each_pass_disabled(&cases);
    eprintln!("{total} programs: {compared} runs with one optional pass disabled equal the whole pipeline's");
    assert!(compared >= total * 10, "{compared}");
}

/// The long run: `cargo test --release -p strata-codegen --test differential -- --ignored`.
#[test]
#[ignore = "the long run: 5,000 random programs"]
fn five_thousand_random_programs_native_equals_interpreter() {
    random_programs(5000, 0xD1FF_5EED_0000_5000);
}

fn random_programs(total: usize, seed: u64) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cache = common::private_cache(&format!("difftest-{seed:x}"));
    let oracle_dir = cache.with_extension("numpy");
    let _ = std::fs::remove_dir_all(&oracle_dir);
    std::fs::create_dir_all(&oracle_dir).expect("scratch folder");
    let named = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/oracles");
    let mut script = format!(
        "import sys, numpy as np\nsys.path.insert(0, {:?})\nfrom named import *\nnp.seterr(all='ignore')\n\n\
         def run(d, f, names):\n    inputs = {{n: np.load(f'{{d}}/{{n}}.npy') for n in names}}\n    np.save(f'{{d}}/result.npy', np.ascontiguousarray(f(inputs)))\n\n",
        named.display().to_string()
    );
    let mut oracle: Vec<(String, std::path::PathBuf, ValueType, Column)> = Vec::new();
    let mut rng = Rng::seeded(seed);
    let batch = 125;
    let mut checked = 0;
    let mut exact_count = 0;
    // Generate and lower every batch first, then compile the batches on all cores at once.
    struct Batch {
        programs: Vec<Program>,
        module: strata_ir::Module,
        info: strata_verify::ModuleInfo,
        lowered: Vec<strata_codegen::KernelProgram>,
        source: String,
    }
    let mut batches = Vec::new();
    for start in (0..total).step_by(batch) {
        let programs: Vec<Program> = (start..start + batch).map(|i| generate(&mut rng, i)).collect();
        let text: String = programs.iter().map(|p| p.text.clone()).collect();
        let module =
            strata_verify::parse(&text).unwrap_or_else(|d| panic!("generated text does not parse: {d:?}\n{text}"));
        let info =
            strata_verify::verify(&module).unwrap_or_else(|d| panic!("generated program does not verify: {:?}", d[0]));
        let entries: Vec<(&str, &str)> = programs.iter().map(|p| (p.entry.as_str(), p.text.as_str())).collect();
        let lowered = common::lower_entries(&module, &info.types, &entries);
        let source = common::emit_entries(programs.iter().zip(&lowered).map(|(p, l)| (p.entry.clone(), l)));
        batches.push(Batch { programs, module, info, lowered, source });
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let sources: Vec<String> = batches.iter().map(|b| b.source.clone()).collect();
    let sos: Vec<std::path::PathBuf> = std::thread::scope(|scope| {
        let chunks: Vec<Vec<&String>> = (0..cores).map(|c| sources.iter().skip(c).step_by(cores).collect()).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk.into_iter().map(|src| compile::build(src).expect("compiles").0).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut per_core: Vec<std::vec::IntoIter<std::path::PathBuf>> =
            handles.into_iter().map(|h| h.join().expect("build thread").into_iter()).collect();
        (0..batches.len()).map(|i| per_core[i % cores].next().expect("built")).collect()
    });
    for (b, so) in batches.iter().zip(&sos) {
        let (module, info) = (&b.module, &b.info);
        let interp = strata_interp::Interpreter::new(module, &info.types);
        for (p, kp) in b.programs.iter().zip(&b.lowered) {
            let symbol = format!("entry_{}", p.entry);
            let h = module.function_by_name(&p.entry).expect("entry");
            let f = &module.functions[h];
            let args: Vec<Tensor> = f
                .params
                .iter()
                .enumerate()
                .map(|(i, &q)| {
                    let vt = ValueType::from_ir(&info.types, f.exprs[q].ty);
                    let table = p.tables.iter().find(|t| t.0 == f.exprs[q].name).map(|t| (t.1, t.2));
                    random_fill(&vt, (checked * 7 + i) as u64, table)
                })
                .collect();
            let want = interp.run(h, args.clone()).unwrap_or_else(|e| panic!("interpreter: {e}\n{}", p.text));
            let lib = compile::Loaded::open_symbol(so, &symbol).expect("loads");
            let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
            let rty = ValueType::from_ir(&info.types, f.result().expect("func"));
            let got = exec::run_threads(kp, &lib, &args, &names, Some(&rty), 1)
                .unwrap_or_else(|e| panic!("native: {e}\n{}", p.text));
            let (Data::Scalars(w), Data::Scalars(g)) = (&want.values[0].1.data, &got[0].1.data) else {
                panic!("scalar results")
            };
            let exact = emit_c::bit_exact(kp);
            assert!(same(w, g, exact), "native != interpreter for\n{}\ninterp {:?}\nnative {:?}", p.text, w, g);
            checked += 1;
            exact_count += usize::from(exact);
            // The numpy translation gets the same arguments.
            if let Some(body) = &p.numpy {
                let dir = oracle_dir.join(&p.entry);
                std::fs::create_dir_all(&dir).expect("scratch folder");
                for (name, a) in names.iter().zip(&args) {
                    strata_runtime::npy::write_value(&dir.join(format!("{name}.npy")), name, a).expect("writes");
                }
                let _ = writeln!(
                    script,
                    "def {}(inputs):\n{body}\n\nrun({:?}, {}, {:?})\n",
                    p.entry,
                    dir.display().to_string(),
                    p.entry,
                    names
                );
                oracle.push((p.text.clone(), dir, rty.clone(), w.clone()));
            }
        }
    }
    // Every translated program against numpy: the same values (NaN where NaN, and zeros of
    // either sign equal: numpy's maximum and minimum choose between equal zeros their own way).
    let script_path = oracle_dir.join("programs.py");
    std::fs::write(&script_path, &script).expect("writes the script");
    let out = std::process::Command::new(common::python()).arg(&script_path).output().expect("python runs");
    assert!(out.status.success(), "numpy translation failed:\n{}", String::from_utf8_lossy(&out.stderr));
    for (text, dir, rty, want) in &oracle {
        let got = strata_runtime::npy::read_npy(&dir.join("result.npy"), "result", rty).expect("numpy's result");
        let Data::Scalars(g) = &got.data else { panic!("scalar results") };
        assert!(same_value(want, g), "interpreter != numpy for\n{text}\ninterp {want:?}\nnumpy {g:?}");
    }
    assert!(oracle.len() > total / 2, "only {} of {total} programs were translated to numpy", oracle.len());
    eprintln!("{total} programs: native = interpreter; {} of them also = numpy", oracle.len());
    let _ = std::fs::remove_dir_all(&oracle_dir);
    let _ = std::fs::remove_dir_all(&cache);
    assert_eq!(checked, total);
    // Programs without transcendental functions (most of them) compare bit for bit.
    assert!(exact_count > total / 2, "only {exact_count} of {total} programs compared bit for bit");
}

/// Equal values: NaN where NaN, zeros of either sign equal.
fn same_value(a: &Column, b: &Column) -> bool {
    match (a, b) {
        (Column::F64(x), Column::F64(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        }
        _ => a == b,
    }
}

fn random_fill(ty: &ValueType, seed: u64, table: Option<(i64, i64)>) -> Tensor {
    let mut rng = Rng::seeded(seed);
    let mut t = Tensor::zeros(ty);
    if let Data::Scalars(c) = &mut t.data {
        let s = c.scalar();
        *c = Column::from_fn(s, c.len(), |_| {
            let r = rng.next();
            if let Some((lo, hi)) = table {
                // Entries in the source interval, about one in four skipped (every one in some
                // tables).
                let skip = r.is_multiple_of(4) || seed.is_multiple_of(6);
                Sv::from_i128(s, if skip { -1 } else { (lo + (r % (hi - lo) as u64) as i64) as i128 })
            } else if s.is_float() {
                Sv::from_f64(s, ((r >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0)
            } else {
                Sv::from_i128(s, (r % 2001) as i128 - 1000)
            }
        });
    }
    t
}

#[test]
#[ignore = "prints generated programs"]
fn show_generated() {
    let mut rng = Rng::seeded(0xD1FF_5EED_0000_0001);
    for i in 0..3 {
        println!("{}", generate(&mut rng, i).text);
    }
}
