//! Shared by the native-backend tests (each uses part of it).

#![allow(dead_code)]

use std::path::PathBuf;

use strata_ir::LevelFormat;
use strata_runtime::random::XorShift;
use strata_runtime::{Column, Data, Sv, Tensor, ValueType};

/// Payloads over two operands the random-program tests share: multiply-add (annihilated by a
/// zero operand), a sum that ignores `a`, and a sum of both (a union).
pub const BINARY_PAYLOADS: &str = "func @mac(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = multiplies(%a, %b) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
func @take_b(%acc: f64, %a: f64, %b: f64) -> f64 {
  %s = plus(%acc, %b) : f64
  return %s
}
func @both(%acc: f64, %a: f64, %b: f64) -> f64 {
  %p = plus(%a, %b) : f64
  %s = plus(%acc, %p) : f64
  return %s
}
";

/// Gives a sparse or ragged value a random pattern: compressed levels store each element with
/// probability `density` (the others become the fill value, zero, present); a ragged row keeps
/// a prefix of random length (some rows empty, some full), the rest skipped (absent). Dense
/// values are left alone.
pub fn sparsify(t: &mut Tensor, rng: &mut XorShift, density: f64) {
    let shape = t.ty.shape();
    let ragged = t.ty.levels.iter().position(|l| matches!(l.format, LevelFormat::Ragged { .. }));
    if let Some(k) = ragged {
        let row: usize = shape[k..].iter().product();
        let lengths: Vec<usize> = (0..t.len() / row.max(1)).map(|_| rng.below(shape[k] as u64 + 1) as usize).collect();
        t.present = Some((0..t.len()).map(|i| (i % row) < lengths[i / row]).collect());
    } else if t.ty.levels.iter().any(|l| l.format.is_sparse()) {
        let unstored: Vec<bool> = (0..t.len()).map(|_| rng.unit() >= density).collect();
        t.present = Some(unstored.iter().map(|&u| !u).collect());
        t.clear_absent();
        t.present = None;
        return;
    }
    t.clear_absent();
}

/// A compilation cache of this test process's own (`$STRATA_CACHE_DIR`), so that a test
/// compiles its programs afresh; the caller removes it at the end.
pub fn private_cache(tag: &str) -> PathBuf {
    let cache = std::env::temp_dir().join(format!("strata-{tag}-{}", std::process::id()));
    std::env::set_var("STRATA_CACHE_DIR", &cache);
    cache
}

/// The type the verifier infers for `stmt` (`%name = op(…)`) after `body` in a function with
/// `params` (payload functions `prelude` defined first), or `None` if the statement does not
/// verify: generators ask for it by declaring a wrong type and reading the suggested one, so
/// they do not restate the typing rules.
#[allow(dead_code)]
pub fn infer(prelude: &str, params: &str, body: &[String], stmt: &str, name: &str) -> Option<String> {
    let lines: String = body.iter().map(|l| format!("  {l}\n")).collect();
    let text = format!("{prelude}func @probe({params}) -> f64 {{\n{lines}  {stmt} : f64\n  return %{name}\n}}\n");
    let module = strata_verify::parse(&text).ok()?;
    let errors = strata_verify::verify(&module).err()?;
    let mine = format!("`%{name}` is declared as");
    let d = errors.iter().find(|d| d.code == "strata::verify::type_mismatch" && d.message.starts_with(&mine))?;
    // Any other error in the statement makes it invalid.
    if errors.iter().any(|e| e.code != "strata::verify::type_mismatch") {
        return None;
    }
    d.help.as_deref()?.strip_prefix("declare `: ")?.strip_suffix('`').map(str::to_string)
}

/// Lowers the entry `name` of `module` for each `(name, text)` of `programs`, panicking with the
/// error and the program's `text` where one cannot be lowered.
pub fn lower_entries(
    module: &strata_ir::Module,
    types: &strata_ir::TypeArena,
    programs: &[(&str, &str)],
) -> Vec<strata_codegen::KernelProgram> {
    programs
        .iter()
        .map(|(name, text)| {
            let h = module.function_by_name(name).expect("entry");
            strata_codegen::lower(module, types, h).unwrap_or_else(|e| panic!("{e}\n{text}"))
        })
        .collect()
}

/// One C translation unit with each `(name, program)` as the entry point `entry_{name}`.
pub fn emit_entries<'a>(entries: impl IntoIterator<Item = (String, &'a strata_codegen::KernelProgram)>) -> String {
    let named: Vec<(String, &strata_codegen::KernelProgram)> =
        entries.into_iter().map(|(n, p)| (format!("entry_{n}"), p)).collect();
    let refs: Vec<(&str, &strata_codegen::KernelProgram)> = named.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    strata_codegen::emit_c::emit_many(&refs)
}

/// Emits `lowered[k]` as `entry_{k}` in translation units of `unit` entries and compiles them
/// two at a time (one per core); entry `k` is in the returned library `k / unit`.
pub fn build_units(lowered: &[strata_codegen::KernelProgram], unit: usize) -> Vec<PathBuf> {
    let sources: Vec<String> = (0..lowered.len())
        .collect::<Vec<_>>()
        .chunks(unit)
        .map(|c| emit_entries(c.iter().map(|&k| (k.to_string(), &lowered[k]))))
        .collect();
    std::thread::scope(|s| {
        let mut out = Vec::new();
        for pair in sources.chunks(2) {
            let hs: Vec<_> = pair
                .iter()
                .map(|src| s.spawn(move || strata_codegen::compile::build(src).expect("compiles").0))
                .collect();
            out.extend(hs.into_iter().map(|h| h.join().expect("build thread")));
        }
        out
    })
}

/// A random argument of type `ty` (seeded): values in [-2, 2), integers in 0..7, a table's
/// entries inside its source (`table_source` long) with one in five skipped, sparse and ragged
/// values with random patterns ([`sparsify`]).
pub fn fill(ty: &ValueType, seed: u64, table_source: Option<i64>) -> Tensor {
    let mut rng = strata_runtime::random::XorShift::new(seed);
    let mut next = move || rng.next_u64();
    let mut t = Tensor::zeros(ty);
    fill_data(&mut t.data, ty.levels.is_empty(), table_source, &mut next);
    sparsify(&mut t, &mut strata_runtime::random::XorShift::new(seed), 0.01);
    t
}

/// Random values for every scalar of `data` (tensor elements included).
pub fn fill_data(data: &mut Data, zero_d: bool, table_source: Option<i64>, next: &mut impl FnMut() -> u64) {
    match data {
        Data::Scalars(c) => {
            let s = c.scalar();
            *c = Column::from_fn(s, c.len(), |_| {
                let r = next();
                match (table_source, s.is_float()) {
                    // Scalar indices (`get`, `set`): a position inside every example's intervals.
                    (None, false) if zero_d && s == strata_ir::Scalar::Index => Sv::Index(1),
                    // A neighbor table: entries in the source interval, about one in five skipped.
                    (Some(n), _) => Sv::from_i128(s, if r.is_multiple_of(5) { -1 } else { (r % n as u64) as i128 }),
                    (None, true) => Sv::from_f64(s, (r >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0),
                    (None, false) => Sv::from_i128(s, (r % 7) as i128),
                }
            });
        }
        Data::Tuple(fs) => fs.iter_mut().for_each(|f| fill_data(f, zero_d, table_source, next)),
        Data::Tensors(ts) => ts.iter_mut().for_each(|t| fill_data(&mut t.data, false, None, next)),
    }
}

/// Equal bits (`exact`), or equal up to rounding relative to the largest magnitude.
pub fn same(a: &Data, b: &Data, exact: bool) -> bool {
    fn close(x: &[f64], y: &[f64], exact: bool, rel: f64) -> bool {
        let scale = x.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
        x.len() == y.len()
            && x.iter().zip(y).all(|(p, q)| {
                (exact && p.to_bits() == q.to_bits())
                    || (p.is_nan() && q.is_nan())
                    || (!exact && (p == q || (p - q).abs() <= rel * scale))
            })
    }
    match (a, b) {
        (Data::Scalars(Column::F64(x)), Data::Scalars(Column::F64(y))) => close(x, y, exact, 1e-12),
        (Data::Scalars(Column::F32(x)), Data::Scalars(Column::F32(y))) => {
            let wide = |v: &[f32]| v.iter().map(|&f| f as f64).collect::<Vec<_>>();
            if exact {
                x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()))
            } else {
                close(&wide(x), &wide(y), false, 1e-4)
            }
        }
        (Data::Tuple(x), Data::Tuple(y)) => x.iter().zip(y).all(|(p, q)| same(p, q, exact)),
        (Data::Tensors(x), Data::Tensors(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(&p.data, &q.data, exact))
        }
        _ => a == b,
    }
}

/// The length of the source interval whose coordinates neighbor table `vt` (a parameter of `f`)
/// holds: the interval of the table's source dimension in the parameter that has it.
pub fn table_source_len(types: &strata_ir::TypeArena, f: &strata_ir::Function, vt: &ValueType) -> Option<i64> {
    let src = vt.levels.iter().find_map(|l| l.name.table_source())?;
    f.params.iter().find_map(|&q| {
        ValueType::from_ir(types, f.exprs[q].ty).levels.iter().find(|l| l.name == src).map(|l| l.interval.len() as i64)
    })
}

/// Random arguments for every parameter of `f` ([`fill`], parameter `i` seeded `i + 1`), each
/// neighbor table's entries inside its source dimension.
pub fn entry_args(types: &strata_ir::TypeArena, f: &strata_ir::Function) -> Vec<Tensor> {
    f.params
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let vt = ValueType::from_ir(types, f.exprs[p].ty);
            fill(&vt, i as u64 + 1, table_source_len(types, f, &vt))
        })
        .collect()
}

/// The project's Python with numpy and SciPy (`scripts/python-env` sets it up on first use).
pub fn python() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(root.join("scripts/python-env")).output().expect("scripts/python-env runs");
    assert!(out.status.success(), "cannot set up Python:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8").trim().to_string()
}
pub mod toggle;
