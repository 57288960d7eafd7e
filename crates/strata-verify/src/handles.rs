//! Handle validation: every reference points at an existing entity, a value at an earlier one,
//! and no function calls itself, directly or through others. Parsed modules satisfy this by
//! construction (a function only refers to earlier ones); modules built by passes — whose
//! instances of generic functions come after their users — are checked here before anything
//! else indexes them.

use strata_entity::Handle;
use strata_ir::{Diagnostic, ExprKind, Function, Item, Module, RingRef, Statement};

/// Returns one diagnostic per dangling or forward reference, and per recursive function.
pub fn validate_handles(module: &Module) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let bad = |what: String| {
        Diagnostic::new("strata::verify::invalid_handle", what, strata_ir::Span::UNKNOWN, "invalid reference")
    };
    for item in &module.items {
        let ok = match *item {
            Item::Alias(h) => module.aliases.try_get(h).is_some(),
            Item::Ring(h) => module.rings.try_get(h).is_some(),
            Item::Function(h) => module.functions.try_get(h).is_some(),
        };
        if !ok {
            out.push(bad(format!("item {item:?} does not exist")));
        }
    }
    for (_, a) in module.aliases.iter() {
        if module.types.try_get(a.ty).is_none() {
            out.push(bad(format!("alias `!{}` names a missing type", a.name)));
        }
    }
    for (rh, r) in module.rings.iter() {
        let _ = rh;
        for f in [r.add, r.mul] {
            if module.functions.try_get(f).is_none() {
                out.push(bad(format!("ring `@{}` refers to a missing function", r.name)));
            }
        }
    }
    for (_, f) in module.functions.iter() {
        if f.results.iter().any(|&r| module.types.try_get(r).is_none()) {
            out.push(bad(format!("`@{}` has a missing result type", f.name)));
        }
        for (e, expr) in f.exprs.iter() {
            if module.types.try_get(expr.ty).is_none() {
                out.push(bad(format!("`%{}` in `@{}` has a missing type", expr.name, f.name)));
            }
            let ExprKind::Op(op) = &expr.kind else { continue };
            for operand in op.operands() {
                if operand >= e {
                    out.push(bad(format!("`%{}` in `@{}` uses a value defined after it", expr.name, f.name)));
                }
            }
            for callee in op.functions() {
                if module.functions.try_get(callee).is_none() {
                    out.push(bad(format!("`%{}` in `@{}` refers to a missing function", expr.name, f.name)));
                }
            }
            let rings = match op {
                strata_ir::Op::DotGeneral { ring, .. } | strata_ir::Op::Product2d { ring, .. } => vec![*ring],
                _ => vec![],
            };
            for r in rings {
                if let RingRef::User(h) = r {
                    if module.rings.try_get(h).is_none() {
                        out.push(bad(format!("`%{}` in `@{}` uses a missing ring", expr.name, f.name)));
                    }
                }
            }
        }
        for (_, s) in f.body.iter() {
            let used = match s {
                Statement::Let(v) => vec![*v],
                Statement::Return(vs) => vs.clone(),
                Statement::Assign { target, domain: _, value } => vec![*target, *value],
            };
            if used.iter().any(|v| f.exprs.try_get(*v).is_none()) {
                out.push(bad(format!("a statement of `@{}` refers to a missing value", f.name)));
            }
        }
        for &p in &f.params {
            if !matches!(f.exprs.try_get(p).map(|e| &e.kind), Some(ExprKind::Param(_))) {
                out.push(bad(format!("a parameter of `@{}` is not a parameter expression", f.name)));
            }
        }
    }
    if out.is_empty() {
        out.extend(recursive(module).map(|name| bad(format!("`@{name}` calls itself, directly or through others"))));
    }
    out
}

/// The name of a function on a cycle of calls, if any (depth-first search over the call graph).
fn recursive(module: &Module) -> Option<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let callees = |h: Handle<Function>| -> Vec<Handle<Function>> {
        let f = &module.functions[h];
        f.exprs
            .iter()
            .filter_map(|(_, e)| if let ExprKind::Op(op) = &e.kind { Some(op.functions()) } else { None })
            .flatten()
            .collect()
    };
    let mut mark = vec![Mark::New; module.functions.len()];
    for root in module.functions.handles() {
        if mark[root.index()] != Mark::New {
            continue;
        }
        // Each frame: a function and the callees still to visit.
        let mut stack = vec![(root, callees(root))];
        mark[root.index()] = Mark::Open;
        while let Some((h, rest)) = stack.last_mut() {
            match rest.pop() {
                Some(c) if mark[c.index()] == Mark::Open => return Some(module.functions[c].name.clone()),
                Some(c) if mark[c.index()] == Mark::New => {
                    mark[c.index()] = Mark::Open;
                    stack.push((c, callees(c)));
                }
                Some(_) => {}
                None => {
                    mark[h.index()] = Mark::Done;
                    stack.pop();
                }
            }
        }
    }
    None
}
