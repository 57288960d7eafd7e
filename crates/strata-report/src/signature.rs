//! Entry signatures (`strata sig`, Python's `signature`): every entry's parameters and results
//! with their types, dtypes, shapes, formats and dimensions, as text or JSON.

use std::fmt::Write as _;

use serde_json::{json, Value as Json};
use strata_ir::{ExprKind, FunctionKind, LevelFormat, Module, ParamMode, TypeArena};
use strata_runtime::{ElemType, ValueType};

/// The `format` of a type: `dense`, `distributed`, `ragged`, `csr`, `dcsr`, `coo`,
/// `sparse_vector` or `sparse`.
pub fn format_name(ty: &ValueType) -> &'static str {
    let f: Vec<LevelFormat> = ty.levels.iter().map(|l| l.format).collect();
    use LevelFormat::*;
    match f.as_slice() {
        _ if f.iter().all(|x| *x == Dense) => "dense",
        _ if f.contains(&Block) => "distributed",
        _ if f.iter().any(|x| matches!(x, Ragged { .. })) => "ragged",
        [Dense, Compressed { .. }] => "csr",
        [Compressed { .. }, Compressed { .. }] => "dcsr",
        [Compressed { unique: false, .. }, Singleton { .. }] => "coo",
        [Compressed { .. }] => "sparse_vector",
        _ => "sparse",
    }
}

fn dtype_json(t: &ElemType) -> Json {
    match t {
        ElemType::Scalar(s) => json!(s.numpy_name()),
        ElemType::Tuple(fs) => Json::Array(fs.iter().map(dtype_json).collect()),
        ElemType::Tensor(vt) => json!({ "tensor": dtype_json(&vt.element) }),
    }
}

/// One parameter or result as JSON.
fn param_json(name: &str, type_text: &str, ty: &ValueType) -> Json {
    let dense = ty.levels.iter().all(|l| l.format.is_dense_like());
    let shape = if dense { json!(ty.shape()) } else { Json::Null };
    let dims: Vec<Json> = ty
        .levels
        .iter()
        .map(|l| {
            json!({
                "name": l.name.as_str(),
                "start": l.interval.start,
                "stop": l.interval.stop,
                "format": l.format.keyword(),
            })
        })
        .collect();
    json!({
        "name": name,
        "type": type_text,
        "dtype": dtype_json(&ty.element),
        "shape": shape,
        "format": format_name(ty),
        "dims": dims,
    })
}

/// Every entry's parameters and results (`types`: the verified arena), as text (`json` false)
/// or as `{"entries": [{"name", "kind", "params": [..], "results": [..]}]}`.
pub fn signatures(module: &Module, types: &TypeArena, json: bool) -> String {
    let mut entries = Vec::new();
    let mut text = String::new();
    for (_, f) in module.entries() {
        let kind = if f.kind == FunctionKind::Program { "program" } else { "func" };
        let (mut params, mut results) = (Vec::new(), Vec::new());
        let _ = writeln!(text, "{kind} @{}", f.name);
        let mut show = |name: &str, ty: strata_ir::op::TypeHandle, out: bool| {
            let vt = ValueType::from_ir(types, ty);
            // The full type (no alias at the top), so scripts see dimensions and intervals.
            let full = strata_ir::print::TypeDisplay::in_arena(module, types, ty).without_top_alias().to_string();
            let j = param_json(name, &full, &vt);
            if out {
                results.push(j)
            } else {
                params.push(j)
            }
            let _ = writeln!(text, "  {} {name}: {full}", if out { "out" } else { "in " });
        };
        for &p in &f.params {
            let e = &f.exprs[p];
            show(&e.name, e.ty, e.kind == ExprKind::Param(ParamMode::Out));
        }
        for (name, &r) in f.result_names().iter().zip(&f.results) {
            show(name, r, true);
        }
        entries.push(json!({ "name": f.name, "kind": kind, "params": params, "results": results }));
    }
    if json {
        format!("{}\n", json!({ "entries": entries }))
    } else {
        text
    }
}
