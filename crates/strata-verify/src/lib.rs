//! The Strata verifier.
//!
//! [`verify`] checks, in order: handles (every reference points at an earlier entity), type
//! well-formedness (intervals, level formats, placements), ring items, and then every statement
//! of every function: it infers each operation's result type from its operands by the rules of
//! seeds 000–004 and compares it with the declared type. Independent errors are all reported;
//! after an error the declared type stands in for the inferred one, so later statements are
//! still checked.
//!
//! After a successful verification every expression's declared type equals its inferred type,
//! so passes may rely on `expr.ty`. Types the text leaves out are filled in before, by
//! [`elaborate`] ([`parse`] does both steps of reading text: parsing and elaborating).

#![deny(missing_docs)]

mod broadcast;
pub mod build;
mod context;
mod elaborate;
mod function;
mod handles;
mod outputs;
mod rules;
mod specialize;
mod wellformed;
pub use wellformed::element_count;

use strata_ir::{Diagnostic, Item, Module, Type, TypeArena};

pub use elaborate::{elaborate, parse};
pub use handles::validate_handles;
pub use outputs::results_as_outputs;
pub use specialize::specialize;

/// What verification learned about a module.
#[derive(Debug)]
pub struct ModuleInfo {
    /// The module's type arena extended with every type inference built.
    pub types: TypeArena,
}

/// Verifies a module; returns all diagnostics found, sorted by position.
pub fn verify(module: &Module) -> Result<ModuleInfo, Vec<Diagnostic>> {
    let handle_errors = validate_handles(module);
    if !handle_errors.is_empty() {
        return Err(handle_errors);
    }
    let mut types = module.types.clone();
    let mut errors = Vec::new();
    let mut checker = wellformed::TypeChecker::default();
    for item in &module.items {
        match *item {
            Item::Alias(h) => {
                let span = module.aliases.meta(h).span;
                checker.check(module, &types, module.aliases[h].ty, span, &mut errors);
            }
            Item::Ring(h) => verify_ring(module, &mut types, h, &mut errors),
            // A generic function is verified per instance.
            Item::Function(h) if module.functions[h].is_generic() => {}
            Item::Function(h) => {
                let span = module.functions.meta(h).span;
                function::verify_function(module, &mut types, &mut checker, &module.functions[h], span, &mut errors);
            }
        }
    }
    if errors.is_empty() {
        Ok(ModuleInfo { types })
    } else {
        errors.sort_by_key(|d| d.primary.span.start);
        errors.dedup();
        Err(errors)
    }
}

fn verify_ring(
    module: &Module,
    types: &mut TypeArena,
    h: strata_entity::Handle<strata_ir::Ring>,
    errors: &mut Vec<Diagnostic>,
) {
    let r = &module.rings[h];
    let span = module.rings.meta(h).span;
    let t = types.insert(Type::Scalar(r.element));
    for (role, f) in [("add", r.add), ("mul", r.mul)] {
        let func = &module.functions[f];
        let params: Vec<_> = func.params.iter().map(|&p| func.exprs[p].ty).collect();
        if params != [t, t] || func.results != [t] {
            errors.push(
                Diagnostic::new(
                    "strata::verify::ring_signature_mismatch",
                    format!("the `{role}` of ring `@{}` must have type `({e}, {e}) -> {e}`", r.name, e = r.element),
                    span,
                    format!("`@{}` does not", func.name),
                )
                .with_label(module.functions.meta(f).span, "defined here"),
            );
        }
    }
    let fits = match r.zero {
        strata_ir::Literal::Bool(_) => r.element == strata_ir::Scalar::Bool,
        strata_ir::Literal::Int(i) => r.element.is_numeric() && context::int_fits(r.element, i),
        strata_ir::Literal::Float(_) => r.element.is_inexact(),
        strata_ir::Literal::Tuple(_) => false,
    };
    if !fits {
        errors.push(Diagnostic::new(
            "strata::verify::literal_type_mismatch",
            format!("the zero `{}` of ring `@{}` is not a `{}`", r.zero, r.name, r.element),
            span,
            "zero does not fit",
        ));
    }
}
