//! Verifying one function or program: parameters, statements, assignments and returns.

use strata_ir::{Diagnostic, ExprKind, Function, FunctionKind, Interval, Module, ParamMode, Statement, TypeArena};

use crate::context::Cx;
use crate::rules::infer;
use crate::wellformed::TypeChecker;

pub(crate) fn verify_function(
    module: &Module,
    types: &mut TypeArena,
    checker: &mut TypeChecker,
    func: &Function,
    info_span: strata_ir::Span,
    errors: &mut Vec<Diagnostic>,
) {
    for &p in &func.params {
        checker.check(module, types, func.exprs[p].ty, *func.exprs.meta(p), errors);
    }
    for &r in &func.results {
        checker.check(module, types, r, info_span, errors);
    }
    let expr_types = func.exprs.iter().map(|(_, e)| e.ty).collect();
    let mut cx = Cx { module, types, func, expr_types, span: info_span, errors, spec: None };
    let mut returned = false;
    let mut written = Vec::new();
    for (s, stmt) in func.body.iter() {
        let span = func.body.meta(s).span;
        cx.span = span;
        if returned {
            cx.errors.push(Diagnostic::new(
                "strata::verify::unreachable_statement",
                "statement after `return`",
                span,
                "never executed",
            ));
            break;
        }
        match stmt {
            Statement::Let(v) => {
                let e = &func.exprs[*v];
                cx.span = *func.exprs.meta(*v);
                checker.check(module, cx.types, e.ty, span, cx.errors);
                let ExprKind::Op(op) = &e.kind else { continue };
                match infer(&mut cx, op, e.ty) {
                    Ok(t) if t == e.ty || declares_storage(cx.types, op, t, e.ty) => {}
                    Ok(t) => {
                        let d = Diagnostic::new(
                            "strata::verify::type_mismatch",
                            format!(
                                "`%{}` is declared as `{}` but `{}` produces `{}`",
                                e.name,
                                cx.show(e.ty),
                                op.name(),
                                cx.show(t)
                            ),
                            span,
                            "declared type differs from the inferred one",
                        )
                        .with_help(format!("declare `: {}`", cx.show(t)));
                        cx.errors.push(d);
                    }
                    Err(d) => cx.errors.push(*d),
                }
            }
            Statement::Assign { target, domain, value } => {
                written.push(*target);
                if let Err(d) = check_assign(&cx, *target, domain.as_deref(), *value) {
                    cx.errors.push(*d);
                }
            }
            Statement::Return(vs) => {
                returned = true;
                if vs.len() != func.results.len() {
                    cx.errors.push(Diagnostic::new(
                        "strata::verify::result_count_mismatch",
                        format!("`@{}` has {} results, but `return` gives {}", func.name, func.results.len(), vs.len()),
                        span,
                        "one value per result",
                    ));
                }
                let wrong: Vec<_> = vs.iter().zip(&func.results).filter(|(v, want)| cx.ty(**v) != **want).collect();
                for (v, &want) in wrong {
                    let d = cx.error(
                        "strata::verify::return_type_mismatch",
                        format!(
                            "`@{}` returns `{}`, but `%{}` has type `{}`",
                            func.name,
                            cx.show(want),
                            func.exprs[*v].name,
                            cx.show(cx.ty(*v))
                        ),
                        "wrong type returned",
                    );
                    cx.errors.push(*d);
                }
            }
        }
    }
    match func.kind {
        FunctionKind::Func if !returned => cx.errors.push(
            Diagnostic::new(
                "strata::verify::missing_return",
                format!("`@{}` never returns a value", func.name),
                info_span,
                "no `return`",
            )
            .with_help("end the body with `return %value`"),
        ),
        FunctionKind::Program => {
            for &p in &func.params {
                let e = &func.exprs[p];
                if e.kind == ExprKind::Param(ParamMode::Out) && !written.contains(&p) {
                    cx.errors.push(
                        Diagnostic::new(
                            "strata::verify::output_never_written",
                            format!("output `%{}` of `@{}` is never written", e.name, func.name),
                            *func.exprs.meta(p),
                            "declared `out` here",
                        )
                        .with_help(format!("assign it with `%{} <- %value`, or make it an input", e.name)),
                    );
                }
            }
        }
        FunctionKind::Func => {}
    }
}

pub(crate) fn check_assign(
    cx: &Cx,
    target: strata_ir::Value,
    domain: Option<&[(strata_ir::DimName, Interval)]>,
    value: strata_ir::Value,
) -> Result<(), Box<Diagnostic>> {
    let t = cx.expr(target);
    if t.kind != ExprKind::Param(ParamMode::Out) {
        let d = cx.error(
            "strata::verify::assign_to_input",
            format!("`%{}` is not an `out` parameter and cannot be assigned", t.name),
            "assigned here",
        );
        return Err(Box::new(d.with_label(*cx.func.exprs.meta(target), "declared here").with_help("declare it `out`")));
    }
    let tv = cx.view(target);
    let mut written = tv.levels.clone();
    for (name, iv) in domain.unwrap_or(&[]) {
        let Some(l) = written.iter_mut().find(|l| &l.name == name) else {
            return Err(crate::rules::shifts::unknown_dim(cx, target, name, "assignment"));
        };
        if !l.interval.contains(*iv) {
            let d = cx.error(
                "strata::verify::subset_not_contained",
                format!("`{name}{iv}` is not inside `%{}`'s `{name}{}`", t.name, l.interval),
                "outside the output",
            );
            return Err(cx.with_operand(d, target));
        }
        l.interval = *iv;
    }
    let v = cx.view(value);
    if v.element != tv.element {
        let d = cx.error(
            "strata::verify::element_type_mismatch",
            format!(
                "`%{}` holds `{}` but the value has elements of type `{}`",
                t.name,
                cx.show(tv.element),
                cx.show(v.element)
            ),
            "element types differ",
        );
        return Err(cx.with_operand(d, value));
    }
    if v.is_tensor && v.placement != tv.placement {
        let d = cx.error(
            "strata::verify::placement_mismatch",
            format!("the value lives on {} but `%{}` on {}", v.placement, t.name, tv.placement),
            "compute follows data",
        );
        return Err(cx.with_operand(d, value));
    }
    for l in &v.levels {
        if !written.iter().any(|w| w.name == l.name) {
            let d = cx.error(
                "strata::verify::assign_extra_dimension",
                format!("the value has dimension `{}`, which `%{}` does not have", l.name, t.name),
                "extra dimension",
            );
            return Err(Box::new(cx.with_operand(d, value).with_help("reduce over it first")));
        }
    }
    for w in &written {
        if let Some(l) = v.level(&w.name) {
            if !l.interval.contains(w.interval) {
                let what = if cx.func.inline.contains(&value) {
                    "the value".to_string()
                } else {
                    format!("`%{}`", cx.expr(value).name)
                };
                let d = cx.error(
                    "strata::verify::interval_not_covered",
                    format!(
                        "{} is computed on `{}{}` but `%{}` is written on `{}{}`",
                        what, w.name, l.interval, t.name, w.name, w.interval
                    ),
                    "the output is not covered",
                );
                let sub = Interval::new(w.interval.start.max(l.interval.start), w.interval.stop.min(l.interval.stop));
                let d = cx.with_operand(d, value);
                // Pasteable: the user's name for the value, or (a value written in place has only
                // a generated name) the target to put in front of the value as written.
                let help = if cx.func.inline.contains(&value) {
                    format!(
                        "give the inputs a wider halo, or write the covered part only: `%{}[{}{}] <- ` followed by \
                         the value as written here",
                        t.name, w.name, sub
                    )
                } else {
                    format!(
                        "give the inputs a wider halo, or assign a subset: `%{}[{}{}] <- %{}`",
                        t.name,
                        w.name,
                        sub,
                        cx.expr(value).name
                    )
                };
                return Err(Box::new(d.with_help(help)));
            }
        }
    }
    Ok(())
}

/// Whether `declared` only chooses the storage of a contraction's result: the inferred type
/// with some levels compressed or singleton instead of dense (a sparse result, e.g. SpGEMM's
/// `tensor<f64, I[0:m], J[0:n] compressed>`). A format is storage, never meaning, so the values
/// are the same; the result stores its non-zero entries (docs/language.md).
fn declares_storage(
    types: &TypeArena,
    op: &strata_ir::Op,
    inferred: strata_ir::op::TypeHandle,
    declared: strata_ir::op::TypeHandle,
) -> bool {
    use strata_ir::{LevelFormat, Op, Type};
    if !matches!(op, Op::MapReduce { .. } | Op::MapReduceAff { .. } | Op::DotGeneral { .. } | Op::Product2d { .. }) {
        return false;
    }
    let (Type::Tensor(i), Type::Tensor(d)) = (&types[inferred], &types[declared]) else { return false };
    i.element == d.element
        && i.placement == d.placement
        && i.levels.len() == d.levels.len()
        && i.levels.iter().zip(&d.levels).all(|(a, b)| {
            a.name == b.name
                && a.interval == b.interval
                && a.format == LevelFormat::Dense
                && matches!(
                    b.format,
                    LevelFormat::Dense | LevelFormat::Compressed { .. } | LevelFormat::Singleton { .. }
                )
        })
}
