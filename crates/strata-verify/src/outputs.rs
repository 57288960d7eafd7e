//! Entries with several results, run as programs.

use std::borrow::Cow;

use strata_entity::{Arena, Handle};
use strata_ir::{Expr, ExprKind, Function, FunctionKind, Module, ParamMode, Span, Statement};

/// `entry` of `module`, a `func` with several results, as a `program` writing them to `out`
/// parameters `%result.0`, `%result.1`, … (after its own parameters): the form in which the
/// native and distributed backends run it, since they run programs' outputs (the entry keeps
/// its handle). Any other entry leaves the module as it is, borrowed. The interpreter names a
/// function's results the same way ([`Function::result_names`]).
pub fn results_as_outputs(module: &Module, entry: Handle<Function>) -> Cow<'_, Module> {
    let g = &module.functions[entry];
    if g.kind != FunctionKind::Func || g.results.len() < 2 {
        return Cow::Borrowed(module);
    }
    let mut out = module.clone();
    let f = &mut out.functions[entry];
    let names = f.result_names();
    let outputs: Vec<_> = std::mem::take(&mut f.results)
        .into_iter()
        .zip(names)
        .map(|(ty, name)| f.exprs.append(Expr { name, ty, kind: ExprKind::Param(ParamMode::Out) }, Span::UNKNOWN))
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
    Cow::Owned(out)
}
