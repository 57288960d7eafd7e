//! Traced arrays → one Strata function.
//!
//! The program computing an array is the function `@main` whose parameters are the evaluated
//! arrays (and data) it reads and whose statements are the traced operations, in dependency
//! order. Its text holds shapes and dtypes but no data, so it is the key under which the
//! compiled program is cached: the same structure over the same shapes compiles once.

use std::collections::HashMap;
use std::rc::Rc;

use strata_runtime::Tensor;

use crate::array::{type_text, Array, Node};

/// A traced program ready to run.
pub struct Program {
    /// The module text.
    pub text: String,
    /// The values of `@main`'s parameters, in order (shared with their arrays).
    pub inputs: Vec<Rc<Tensor>>,
    /// Intermediate arrays the program also returns, after the root: those something outside
    /// the program still refers to (a Python variable, a later operation), which would
    /// otherwise be computed again by the next program that reads them.
    pub(crate) kept: Vec<Array>,
}

/// Traces the program computing `root`.
pub(crate) fn trace(root: &Array) -> Program {
    let mut names: HashMap<*const Node, String> = HashMap::new();
    let mut params = Vec::new();
    let mut inputs = Vec::new();
    let mut stmts = Vec::new();
    let mut funcs: Vec<String> = Vec::new();
    // References to each traced node from the traced operations (the root: one, its caller's).
    let mut refs: HashMap<*const Node, usize> = HashMap::from([(Rc::as_ptr(&root.0), 1)]);
    let mut order: Vec<Array> = Vec::new();
    // Iterative post-order: long chains of operations must not overflow the stack.
    let mut stack: Vec<(Array, bool)> = vec![(root.clone(), false)];
    while let Some((a, expanded)) = stack.pop() {
        let key = std::rc::Rc::as_ptr(&a.0);
        if names.contains_key(&key) {
            continue;
        }
        let ty = a.0.type_text();
        let value = a.0.value.borrow();
        let op = match (&*value, &a.0.op) {
            (Some(t), _) => {
                let name = format!("%in{}", params.len());
                params.push(format!("{name}: {ty}"));
                inputs.push(t.clone());
                names.insert(key, name);
                continue;
            }
            (None, Some(op)) => op,
            (None, None) => unreachable!("an array is data or an operation"),
        };
        if !expanded {
            stack.push((a.clone(), true));
            for arg in op.args.iter().rev() {
                *refs.entry(Rc::as_ptr(&arg.0)).or_default() += 1;
                stack.push((arg.clone(), false));
            }
            continue;
        }
        for f in &op.funcs {
            if !funcs.contains(f) {
                funcs.push(f.clone());
            }
        }
        let name = format!("%v{}", stmts.len());
        let call = substitute(
            &op.text,
            &op.args.iter().map(|x| names[&std::rc::Rc::as_ptr(&x.0)].as_str()).collect::<Vec<_>>(),
        );
        stmts.push(format!("  {name} = {call} : {ty}"));
        names.insert(key, name);
        drop(value);
        order.push(a);
    }
    // Operations referred to from outside the program are returned too (not on teams, whose
    // distributed runs return one value).
    let on_team = order.iter().any(|a| a.0.place.team.is_some());
    let kept: Vec<Array> = order
        .into_iter()
        .filter(|a| {
            let p = Rc::as_ptr(&a.0);
            // `order` holds one reference of its own.
            !on_team && p != Rc::as_ptr(&root.0) && a.0.special_type.is_none() && Rc::strong_count(&a.0) > refs[&p] + 1
        })
        .collect();
    let mut results = vec![names[&Rc::as_ptr(&root.0)].clone()];
    let mut ret_tys = vec![type_text(&root.0.shape, root.0.dtype, &root.0.place)];
    for a in &kept {
        results.push(names[&Rc::as_ptr(&a.0)].clone());
        ret_tys.push(type_text(&a.0.shape, a.0.dtype, &a.0.place));
    }
    let (result, ret_ty) = (results.join(", "), ret_tys.join(", "));
    let mut text = String::new();
    for f in &funcs {
        text.push_str(f);
        text.push_str("\n\n");
    }
    text.push_str(&format!("func @main({}) -> {ret_ty} {{\n", params.join(", ")));
    for s in &stmts {
        text.push_str(s);
        text.push('\n');
    }
    text.push_str(&format!("  return {result}\n}}\n"));
    Program { text, inputs, kept }
}

/// Replaces `$k` by the k-th operand name.
fn substitute(text: &str, operands: &[&str]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut k = 0usize;
        while let Some(&(_, d)) = chars.peek() {
            let Some(v) = d.to_digit(10) else { break };
            k = k * 10 + v as usize;
            chars.next();
        }
        out.push_str(operands[k]);
    }
    out
}

/// A payload function over scalars: `func @NAME(params) -> ret { body; return %r }`, named by
/// a hash of its text so equal payloads are defined once.
pub(crate) fn payload(params: &[(&str, String)], body: &[String], result: &str, ret: &str) -> (String, String) {
    use std::hash::{Hash, Hasher};
    let sig: Vec<String> = params.iter().map(|(n, t)| format!("%{n}: {t}")).collect();
    let inner: String = body.iter().map(|l| format!("  {l}\n")).collect();
    let text = format!("({}) -> {ret} {{\n{inner}  return {result}\n}}", sig.join(", "));
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let name = format!("@f{:016x}", h.finish());
    (name.clone(), format!("func {name}{text}"))
}
