//! `strata run` and `strata sig`: preparing arguments, running the interpreter, writing and
//! printing results, and describing entry signatures for scripts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use strata_entity::Handle;
use strata_interp::Interpreter;
use strata_ir::{ExprKind, Function, FunctionKind, Interval, Module, ParamMode, Scalar};
use strata_runtime::{Column, Data, ElemType, Sv, Tensor, Value, ValueType};

/// Where an argument's value comes from (`--arg NAME=SPEC`).
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSource {
    /// A `.npy` (or `.npz` for tuples) file.
    File(PathBuf),
    /// Pseudo-random values from a seed: floats in `[0, 1)`, integers in `[0, 10)`.
    Random(u64),
    /// All zeros.
    Zeros,
    /// All ones.
    Ones,
}

impl ArgSource {
    /// Parses `random:SEED`, `zeros`, `ones` or a path.
    pub fn parse(spec: &str) -> Result<ArgSource, String> {
        if let Some(seed) = spec.strip_prefix("random:") {
            return seed
                .parse()
                .map(ArgSource::Random)
                .map_err(|_| format!("`{spec}`: the seed must be a non-negative integer"));
        }
        Ok(match spec {
            "zeros" => ArgSource::Zeros,
            "ones" => ArgSource::Ones,
            _ => ArgSource::File(PathBuf::from(spec)),
        })
    }
}

/// Splits `NAME=VALUE`.
pub fn split_assignment(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.is_empty() && !v.is_empty() => Ok((n.trim_start_matches('%').to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not of the form NAME=VALUE")),
    }
}

/// The entry to run: `--entry NAME`, else the last program, else the last function.
pub fn find_entry(module: &Module, name: Option<&str>) -> Result<Handle<Function>, String> {
    if let Some(n) = name {
        return module.entry_by_name(n);
    }
    let last = |kind| module.entries().filter(|(_, f)| f.kind == kind).last().map(|(h, _)| h);
    last(FunctionKind::Program)
        .or_else(|| last(FunctionKind::Func))
        .ok_or_else(|| "the file defines no function or program with typed parameters".to_string())
}

/// [`find_entry`], with an entry of several results as the program writing them
/// ([`strata_verify::results_as_outputs`]): the module and entry every backend runs.
pub fn runnable_entry<'m>(
    module: &'m Module,
    name: Option<&str>,
) -> Result<(std::borrow::Cow<'m, Module>, Handle<Function>), String> {
    let entry = find_entry(module, name)?;
    Ok((strata_verify::results_as_outputs(module, entry), entry))
}

fn fill(ty: &ValueType, mut f: impl FnMut(Scalar) -> Sv) -> Result<Tensor, String> {
    let mut t = Tensor::zeros(ty);
    fn fill_data(d: &mut Data, f: &mut dyn FnMut(Scalar) -> Sv) -> Result<(), String> {
        match d {
            Data::Scalars(c) => {
                let s = c.scalar();
                *c = Column::from_fn(s, c.len(), |_| f(s));
                Ok(())
            }
            Data::Tuple(fs) => fs.iter_mut().try_for_each(|x| fill_data(x, f)),
            Data::Tensors(ts) => ts.iter_mut().try_for_each(|t| fill_data(&mut t.data, f)),
        }
    }
    fill_data(&mut t.data, &mut f)?;
    Ok(t)
}

/// Makes an argument value of type `ty`: a sparse or ragged file is read as its storage (no
/// dense view; the interpreter makes one when it runs).
pub fn make_arg(name: &str, ty: &ValueType, source: &ArgSource) -> Result<Value, String> {
    match source {
        ArgSource::File(path) if ty.levels.iter().any(|l| !l.format.is_dense_like()) => {
            strata_runtime::sparse_io::read_stored(path, name, ty).map(Value::Stored).map_err(|e| e.to_string())
        }
        other => make_tensor(name, ty, other).map(Value::Tensor),
    }
}

/// Makes an argument value of type `ty` in its logical form.
fn make_tensor(name: &str, ty: &ValueType, source: &ArgSource) -> Result<Tensor, String> {
    match source {
        ArgSource::File(path) => strata_runtime::npy::read_value(path, name, ty).map_err(|e| e.to_string()),
        ArgSource::Zeros => Ok(Tensor::zeros(ty)),
        ArgSource::Ones => fill(ty, |s| Sv::from_i128(s, 1)),
        ArgSource::Random(seed) => {
            let mut rng = strata_runtime::random::XorShift::new(*seed);
            fill(ty, |s| random_value(&mut rng, s))
        }
    }
}

/// The rows `rows` of level `level` of what `source` (`random:`, `zeros`, `ones`) makes for a
/// dense value of type `ty` (the whole value's type): the same values as [`make_arg`] makes
/// there, held for those rows only. `random:` draws the whole sequence in order and keeps the
/// rows' values, so memory is the rows' and the values do not depend on the rank count.
///
/// A file (of tuple elements: the scalar ones are read by rows) is read whole and cut.
///
/// # Errors
/// An unreadable file, or an element type `fill` refuses.
pub fn make_rows(
    name: &str,
    ty: &ValueType,
    level: usize,
    rows: Interval,
    source: &ArgSource,
) -> Result<Tensor, String> {
    let mut part = ty.clone();
    part.levels[level].interval = rows;
    let (ArgSource::Random(seed), Some(scalar)) = (source, ty.element.scalar()) else {
        return match source {
            ArgSource::Zeros | ArgSource::Ones => make_tensor(name, &part, source),
            // A file of tuple elements (an `.npz`), random tuple or tensor elements: made
            // whole and cut.
            _ => Ok(strata_dist::slab::slice(&make_tensor(name, ty, source)?, level, rows)),
        };
    };
    let extents: Vec<usize> = ty.levels.iter().map(|l| l.interval.len() as usize).collect();
    let (inner, along) = (extents[level + 1..].iter().product::<usize>(), extents[level]);
    let first = (rows.start - ty.levels[level].interval.start) as usize;
    let keep = first..first + rows.len() as usize;
    let total: usize = extents.iter().product();
    let mut rng = strata_runtime::random::XorShift::new(*seed);
    let mut held = Tensor::zeros(&part);
    let Data::Scalars(column) = &mut held.data else { unreachable!("a tensor of scalars") };
    let mut at = 0;
    for e in 0..total {
        let v = random_value(&mut rng, scalar);
        if keep.contains(&(e / inner % along)) {
            column.set(at, v);
            at += 1;
        }
    }
    Ok(held)
}

/// The next value of `random:` for an element of type `s`: uniform in [0, 1) for floats,
/// 0–9 for integers, either boolean.
fn random_value(rng: &mut strata_runtime::random::XorShift, s: Scalar) -> Sv {
    if s.is_float() {
        Sv::from_f64(s, rng.unit())
    } else if s.is_complex() {
        let (re, im) = (rng.unit(), rng.unit());
        Sv::C128(num_complex::Complex64::new(re, im)).cast(s)
    } else {
        Sv::from_i128(s, rng.below(if s == Scalar::Bool { 2 } else { 10 }) as i128)
    }
}

/// numpy-like text for a value: the full array when small, a summary when large (a value held
/// as storage: its stored entries).
pub fn show_result(v: &Value) -> String {
    const FULL: usize = 1000;
    match v {
        Value::Tensor(t) => show_value(t),
        // Only a small value gets a dense view (a large one would cost its dense size).
        Value::Stored(s) => match s.ty.shape().iter().try_fold(1usize, |a, &b| a.checked_mul(b)) {
            Some(n) if n <= FULL => s.to_tensor().map_or_else(|e| e.to_string(), |t| show_value(&t)),
            _ => format!("shape {:?}, {} stored entries", s.ty.shape(), s.stored_len()),
        },
    }
}

/// numpy-like text for a tensor: the full array when small, a summary when large.
pub fn show_value(t: &Tensor) -> String {
    const FULL: usize = 1000;
    let shape = t.ty.shape();
    let mut out = String::new();
    match &t.data {
        Data::Scalars(c) if t.len() <= FULL => nested(&mut out, c, &shape, 0, 0, t),
        Data::Scalars(c) => {
            let vals: Vec<f64> = (0..c.len()).filter(|&i| t.is_present(i)).map(|i| c.get(i).as_f64()).collect();
            let (mn, mx) = vals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
            let mean = vals.iter().sum::<f64>() / vals.len().max(1) as f64;
            let _ = write!(out, "shape {shape:?}, dtype {}, min {mn}, max {mx}, mean {mean}", c.scalar().numpy_name());
        }
        Data::Tuple(fields) => {
            for (i, f) in fields.iter().enumerate() {
                let ft = Tensor {
                    ty: ValueType { element: field_type(&t.ty.element, i), ..t.ty.clone() },
                    data: f.clone(),
                    present: t.present.clone(),
                };
                let _ = write!(out, "field {i}: {}", show_value(&ft));
                if i + 1 < fields.len() {
                    out.push('\n');
                }
            }
        }
        Data::Tensors(ts) => {
            let _ =
                write!(out, "shape {shape:?} of tensors; first: {}", ts.first().map(show_value).unwrap_or_default());
        }
    }
    out
}

fn field_type(t: &ElemType, i: usize) -> ElemType {
    match t {
        ElemType::Tuple(fs) => fs[i].clone(),
        other => other.clone(),
    }
}

fn nested(out: &mut String, c: &Column, shape: &[usize], d: usize, base: usize, t: &Tensor) {
    if d == shape.len() {
        if t.is_present(base) {
            let _ = write!(out, "{}", c.get(base));
        } else {
            out.push_str("--");
        }
        return;
    }
    let stride: usize = shape[d + 1..].iter().product();
    out.push('[');
    for i in 0..shape[d] {
        if i > 0 {
            out.push_str(if d + 1 == shape.len() { ", " } else { ",\n" });
            if d + 1 < shape.len() {
                out.push_str(&" ".repeat(d + 1));
            }
        }
        nested(out, c, shape, d + 1, base + i * stride, t);
    }
    out.push(']');
}

pub use strata_report::signature::{format_name, signatures};

/// Builds the argument list of `entry` from `--arg` sources; `out` parameters without a source
/// start as zeros.
pub fn prepare_args(
    interp: &Interpreter,
    module: &Module,
    entry: Handle<Function>,
    sources: &[(String, ArgSource)],
) -> Result<Vec<Value>, String> {
    let f = &module.functions[entry];
    for (n, _) in sources {
        if !f.params.iter().any(|&p| f.exprs[p].name == *n) {
            let names: Vec<String> = f.params.iter().map(|&p| format!("`{}`", f.exprs[p].name)).collect();
            return Err(format!("`@{}` has no parameter `{n}` (parameters: {})", f.name, names.join(", ")));
        }
    }
    let mut args = Vec::new();
    let mut missing = Vec::new();
    for &p in &f.params {
        let e = &f.exprs[p];
        let ty = interp.value_type(e.ty);
        let source = sources.iter().find(|(n, _)| *n == e.name);
        // A value made here (zeros, ones, random, an output) must fit in memory: an error,
        // not an abort.
        if !matches!(source, Some((_, ArgSource::File(_)))) {
            ty.check_allocatable().map_err(|m| format!("cannot hold `{}` (shape {:?}): {m}", e.name, ty.shape()))?;
        }
        match source {
            Some((_, src)) => args.push(make_arg(&e.name, &ty, src)?),
            None if e.kind == ExprKind::Param(ParamMode::Out) => args.push(Value::Tensor(Tensor::zeros(&ty))),
            None => {
                missing.push(e.name.clone());
                args.push(Value::Tensor(Tensor::zeros(&ty)));
            }
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "missing --arg for {} of `@{}` (see `strata sig`; use NAME=PATH.npy, NAME=random:SEED, NAME=zeros or NAME=ones)",
            missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
            f.name
        ));
    }
    Ok(args)
}

/// The names of the values an entry produces: a program's `out` parameters, a function's
/// results (`Function::result_names`).
pub fn output_names(module: &Module, entry: Handle<Function>) -> Vec<String> {
    let f = &module.functions[entry];
    match f.kind {
        FunctionKind::Program => f
            .params
            .iter()
            .filter(|&&p| f.exprs[p].kind == ExprKind::Param(ParamMode::Out))
            .map(|&p| f.exprs[p].name.clone())
            .collect(),
        FunctionKind::Func => f.result_names(),
    }
}

/// Checks every `--out` before the entry runs: it names one of the entry's results, once, and
/// a path of its own (not a folder) in an existing folder.
pub fn check_outputs(module: &Module, entry: Handle<Function>, outs: &[(String, PathBuf)]) -> Result<(), String> {
    let names = output_names(module, entry);
    for (i, (n, path)) in outs.iter().enumerate() {
        if !names.contains(n) {
            return Err(format!("--out {n}: no result named `{n}` (results: {})", names.join(", ")));
        }
        if outs[..i].iter().any(|(m, _)| m == n) {
            return Err(format!("--out {n} is given twice"));
        }
        if let Some((m, _)) = outs[..i].iter().find(|(_, p)| crate::same_file(p, path)) {
            return Err(format!("--out {n}={} and --out {m} name the same file", path.display()));
        }
        if path.is_dir() {
            return Err(format!("--out {n}={} is a folder; give a file path", path.display()));
        }
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(format!("--out {n}={}: the folder {} does not exist", path.display(), dir.display()));
        }
    }
    Ok(())
}

/// Writes results named in `outs` to their paths, all or none: each is written to a temporary
/// file beside its path first, and the temporaries replace the paths only when every one was
/// written (a failure removes them and leaves every path as it was).
pub fn write_outputs(values: &[(String, Value)], outs: &[(String, PathBuf)]) -> Result<(), String> {
    let mut written: Vec<(PathBuf, &Path)> = Vec::new();
    let discard = |written: &[(PathBuf, &Path)]| {
        for (tmp, _) in written {
            let _ = std::fs::remove_file(tmp);
        }
    };
    for (n, path) in outs {
        let Some((_, v)) = values.iter().find(|(v, _)| v == n) else {
            discard(&written);
            let names: Vec<&str> = values.iter().map(|(v, _)| v.as_str()).collect();
            return Err(format!("no result named `{n}` (results: {})", names.join(", ")));
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{file}.strata-out.{}", std::process::id()));
        let result = match v {
            Value::Tensor(t) => strata_runtime::npy::write_value(&tmp, n, t),
            Value::Stored(s) => strata_runtime::sparse_io::write_stored(&tmp, n, s),
        };
        if let Err(e) = result {
            discard(&written);
            let _ = std::fs::remove_file(&tmp);
            // The message names the temporary; the user knows the path.
            return Err(e.to_string().replace(&tmp.display().to_string(), &path.display().to_string()));
        }
        written.push((tmp, path));
    }
    for (k, (tmp, path)) in written.iter().enumerate() {
        if let Err(e) = std::fs::rename(tmp, path) {
            discard(&written[k..]);
            return Err(format!("cannot write {}: {e}", path.display()));
        }
    }
    Ok(())
}
