//! Entries with several results, run as programs.

use strata_entity::{Arena, Handle};
use strata_ir::{Expr, ExprKind, Function, FunctionKind, Module, ParamMode, Span, Statement};

/// `entry` of `module`, a `func` with several results, as a `program` writing them to `out`
/// parameters `%result.0`, `%result.1`, … (after its own parameters): the form in which the
/// native and distributed backends run it, since they run programs' outputs. Any other entry
/// is returned unchanged. The interpreter names a function's results the same way.
pub fn results_as_outputs(module: &Module, entry: Handle<Function>) -> (Module, Handle<Function>) {
    let mut out = module.clone();
    let f = &mut out.functions[entry];
    if f.kind != FunctionKind::Func || f.results.len() < 2 {
        return (out, entry);
    }
    let outputs: Vec<_> = std::mem::take(&mut f.results)
        .into_iter()
        .enumerate()
        .map(|(i, ty)| {
            let e = Expr { name: format!("result.{i}"), ty, kind: ExprKind::Param(ParamMode::Out) };
            f.exprs.append(e, Span::UNKNOWN)
        })
        .collect();
    f.params.extend(&outputs);
    f.kind = FunctionKind::Program;
    f.result_inferred = false;
    let mut body = Arena::new();
    for (s, stmt) in f.body.iter() {
        let meta = f.body.meta(s).clone();
        match stmt {
            Statement::Return(values) => {
                for (&target, &value) in outputs.iter().zip(values) {
                    body.append(Statement::Assign { target, domain: None, value }, meta.clone());
                }
            }
            other => {
                body.append(other.clone(), meta);
            }
        }
    }
    f.body = body;
    (out, entry)
}
