//! `strata lower --bisect`: which pass of the native pipeline first changes an entry's result
//! (LLVM's `opt-bisect-limit`, over Strata's named passes).
//!
//! The entry runs on the given arguments in the reference interpreter, then natively with only
//! the first `k` optional passes of [`strata_codegen::pipeline::PASSES`] for `k = 0, 1, …`
//! (the passes that are not optional always run). The first `k` whose result differs from the
//! interpreter's (or whose lowering fails verification) names pass `k`; a result that differs
//! already at `k = 0` is lowering's or emission's, not a pass's.

use std::io::Write;
use std::path::Path;

use strata_codegen::pipeline::{optional_names, PassSet};
use strata_engine::Backend;
use strata_runtime::{Data, Sv, Tensor, Value};

use crate::{read_source, render, run, stderr_color};

/// How far an `f64` result may be from the interpreter's, relative to the output's largest
/// finite magnitude, and still count as equal (sums the GEMM or vector lanes reassociate);
/// `f32` results get [`TOLERANCE_F32`], everything else must be equal.
pub const TOLERANCE: f64 = 1e-9;

/// [`TOLERANCE`] for `f32` results.
pub const TOLERANCE_F32: f64 = 1e-4;

/// `strata lower FILE --bisect --arg …`: exit 0 when every prefix of the pipeline gives the
/// interpreter's result, 1 when one does not (naming the first pass that changes it) or on any
/// error.
pub fn cmd_bisect(file: &Path, entry: Option<&str>, arg_specs: &[String]) -> i32 {
    let mut stderr = std::io::stderr().lock();
    let fail = |stderr: &mut dyn Write, m: String| {
        let _ = writeln!(stderr, "error: {m}");
        1
    };
    let source = match read_source(file) {
        Ok(s) => s,
        Err(e) => return fail(&mut stderr, e.to_string()),
    };
    let name = file.display().to_string();
    let (module, info) = match strata_verify::parse(&source).and_then(|m| strata_verify::verify(&m).map(|i| (m, i))) {
        Ok(x) => x,
        Err(d) => {
            let _ = write!(stderr, "{}", render(&name, &source, &d, stderr_color()));
            return 1;
        }
    };
    let (module, entry) = match run::runnable_entry(&module, entry) {
        Ok(e) => e,
        Err(m) => return fail(&mut stderr, m),
    };
    let mut sources = Vec::new();
    for a in arg_specs {
        match run::split_assignment(a).and_then(|(n, v)| Ok((n, run::ArgSource::parse(&v)?))) {
            Ok(p) => sources.push(p),
            Err(m) => return fail(&mut stderr, format!("--arg {m}")),
        }
    }
    let interp = strata_interp::Interpreter::new(&module, &info.types);
    let args = match run::prepare_args(&interp, &module, entry, &sources) {
        Ok(a) => a,
        Err(m) => return fail(&mut stderr, m),
    };
    let outcome = |backend: Backend, disabled: PassSet| -> Result<Vec<(String, Value)>, String> {
        let mut options = strata_engine::Options::with_backend(backend);
        options.lower.disabled = disabled;
        let prepared = strata_engine::prepare(&module, &info.types, entry, &options).map_err(|e| e.to_string())?;
        prepared.run(&args).map(|r| r.values).map_err(|e| e.to_string())
    };
    let reference = match outcome(Backend::Interp, PassSet::NONE) {
        Ok(v) => v,
        Err(m) => {
            return fail(&mut stderr, format!("the interpreter cannot run `@{}`: {m}", module.functions[entry].name))
        }
    };
    let passes = optional_names();
    println!(
        "bisecting `@{}` over {} optional passes against the interpreter",
        module.functions[entry].name,
        passes.len()
    );
    for k in 0..=passes.len() {
        let disabled = PassSet::from_names(passes[k..].iter().copied()).expect("optional pass names");
        let label = if k == 0 { "no optional pass".to_string() } else { format!("up to `{}`", passes[k - 1]) };
        let verdict = match outcome(Backend::Native, disabled) {
            Ok(values) => differs(&reference, &values),
            Err(m) => Some(m),
        };
        match verdict {
            None => println!("  {k:>2} {label}: same result"),
            Some(why) => {
                println!("  {k:>2} {label}: {why}");
                if k == 0 {
                    println!(
                        "the result differs with no optional pass: lowering or C emission is at fault, not a pass"
                    );
                } else {
                    println!("first pass that changes the result: `{}`", passes[k - 1]);
                }
                return 1;
            }
        }
    }
    println!("no pass changes the result");
    0
}

/// Why `got` is not `want` (each output's name and its first differing element), if it is not.
pub fn differs(want: &[(String, Value)], got: &[(String, Value)]) -> Option<String> {
    for ((name, w), (_, g)) in want.iter().zip(got) {
        let (w, g) = match (w.clone().into_tensor(), g.clone().into_tensor()) {
            (Ok(w), Ok(g)) => (w, g),
            (Err(e), _) | (_, Err(e)) => return Some(format!("`{name}`: {e}")),
        };
        if let Some(why) = tensors_differ(&w, &g) {
            return Some(format!("`{name}` differs: {why}"));
        }
    }
    (want.len() != got.len()).then(|| format!("{} outputs, not {}", got.len(), want.len()))
}

fn tensors_differ(w: &Tensor, g: &Tensor) -> Option<String> {
    let present = |t: &Tensor, i: usize| t.present.as_ref().is_none_or(|p| p[i]);
    let (wv, gv) = (scalars(&w.data), scalars(&g.data));
    if wv.len() != gv.len() {
        return Some(format!("{} elements, not {}", gv.len(), wv.len()));
    }
    let scale = wv.iter().filter_map(|v| float(*v)).fold(1.0f64, |m, x| if x.is_finite() { m.max(x.abs()) } else { m });
    let n = w.present.as_ref().map_or(wv.len(), Vec::len);
    for (i, (a, b)) in wv.iter().zip(&gv).enumerate() {
        let (pa, pb) = (present(w, i % n.max(1)), present(g, i % n.max(1)));
        if pa != pb {
            return Some(format!("element {i} is {} here, {} in the interpreter", absent(pb), absent(pa)));
        }
        if pa && !same(*a, *b, scale) {
            return Some(format!("element {i} is {b:?}, the interpreter's {a:?}"));
        }
    }
    None
}

fn absent(p: bool) -> &'static str {
    if p {
        "present"
    } else {
        "absent"
    }
}

/// Every scalar of `d`, tuple fields and element tensors flattened in order.
fn scalars(d: &Data) -> Vec<Sv> {
    match d {
        Data::Scalars(c) => (0..c.len()).map(|i| c.get(i)).collect(),
        Data::Tuple(fields) => fields.iter().flat_map(scalars).collect(),
        Data::Tensors(ts) => ts.iter().flat_map(|t| scalars(&t.data)).collect(),
    }
}

fn float(v: Sv) -> Option<f64> {
    match v {
        Sv::F32(x) => Some(x as f64),
        Sv::F64(x) => Some(x),
        _ => None,
    }
}

fn same(a: Sv, b: Sv, scale: f64) -> bool {
    match (float(a), float(b)) {
        (Some(x), Some(y)) => {
            let tolerance = if matches!(a, Sv::F32(_)) { TOLERANCE_F32 } else { TOLERANCE };
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) || (x - y).abs() <= tolerance * scale
        }
        _ => a == b || format!("{a:?}") == format!("{b:?}"),
    }
}
