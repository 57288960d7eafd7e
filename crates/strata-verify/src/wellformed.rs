//! Well-formedness of types: the rules a type must satisfy wherever it is written.

use std::collections::HashSet;

use strata_entity::Handle;
use strata_ir::{Diagnostic, LevelFormat, Module, Span, Type, TypeArena};

/// Checks types once each, reporting at the first place a bad type is written.
#[derive(Default)]
pub(crate) struct TypeChecker {
    seen: HashSet<Handle<Type>>,
}

impl TypeChecker {
    /// Checks `ty` (and its components) as written at `span`.
    pub fn check(
        &mut self,
        module: &Module,
        types: &TypeArena,
        ty: Handle<Type>,
        span: Span,
        out: &mut Vec<Diagnostic>,
    ) {
        if !self.seen.insert(ty) {
            return;
        }
        let show = || strata_ir::print::TypeDisplay::in_arena(module, types, ty).to_string();
        match &types[ty] {
            Type::Scalar(_) => {}
            Type::Tuple(fields) => {
                for &f in fields {
                    if matches!(types[f], Type::Function { .. }) {
                        out.push(Diagnostic::new(
                            "strata::verify::invalid_element_type",
                            "a tuple cannot hold a function",
                            span,
                            format!("in `{}`", show()),
                        ));
                    }
                    self.check(module, types, f, span, out);
                }
            }
            Type::Function { params, result } => {
                for &p in params {
                    self.check(module, types, p, span, out);
                }
                self.check(module, types, *result, span, out);
            }
            Type::Tensor(t) => {
                if matches!(types[t.element], Type::Function { .. }) {
                    out.push(Diagnostic::new(
                        "strata::verify::invalid_element_type",
                        "a tensor element cannot be a function",
                        span,
                        format!("in `{}`", show()),
                    ));
                }
                if let Type::Tensor(inner) = &types[t.element] {
                    if !inner.placement.is_host() {
                        out.push(
                            Diagnostic::new(
                                "strata::verify::nested_placement",
                                "an element tensor cannot carry its own device or team",
                                span,
                                format!("in `{}`", show()),
                            )
                            .with_help("place the outer tensor; its elements live with it"),
                        );
                    }
                }
                let mut blocks = 0;
                for (i, l) in t.levels.iter().enumerate() {
                    if t.levels[..i].iter().any(|o| o.name == l.name) {
                        out.push(Diagnostic::new(
                            "strata::verify::duplicate_dimension",
                            format!("dimension `{}` appears twice in a tensor type", l.name),
                            span,
                            format!("in `{}`", show()),
                        ));
                    }
                    if l.interval.stop < l.interval.start {
                        out.push(
                            Diagnostic::new(
                                "strata::verify::invalid_interval",
                                format!("interval `{}{}` ends before it starts", l.name, l.interval),
                                span,
                                "stop < start",
                            )
                            .with_help("intervals are half-open `[start:stop]` with start <= stop"),
                        );
                    }
                    if let Some(p) = l.name.position() {
                        if p != i {
                            out.push(
                                Diagnostic::new(
                                    "strata::verify::positional_name_mismatch",
                                    format!("positional dimension `{}` stands at position {i}", l.name),
                                    span,
                                    format!("in `{}`", show()),
                                )
                                .with_help(format!(
                                    "positional names match positions: call it `_{i}`, or give it a name"
                                )),
                            );
                        }
                    }
                    match l.format {
                        LevelFormat::Singleton { .. } => {
                            let parent_sparse = i > 0 && t.levels[i - 1].format.is_sparse();
                            if !parent_sparse {
                                out.push(
                                    Diagnostic::new(
                                        "strata::verify::singleton_without_parent",
                                        format!(
                                            "singleton level `{}` must follow a compressed or singleton level",
                                            l.name
                                        ),
                                        span,
                                        format!("in `{}`", show()),
                                    )
                                    .with_help("COO is `compressed(nonunique)` followed by `singleton` levels"),
                                );
                            }
                        }
                        LevelFormat::Block => {
                            blocks += 1;
                            if t.placement.team.is_none() {
                                out.push(
                                    Diagnostic::new(
                                        "strata::verify::block_without_team",
                                        format!("level `{}` is block-distributed but the tensor has no team", l.name),
                                        span,
                                        format!("in `{}`", show()),
                                    )
                                    .with_help("add `team = N` to the tensor type"),
                                );
                            }
                        }
                        _ => {}
                    }
                }
                if element_count(types, ty).is_none() {
                    out.push(
                        Diagnostic::new(
                            "strata::verify::size_overflow",
                            format!("`{}` has more elements than fit in 64 bits", show()),
                            span,
                            "too large",
                        )
                        .with_help("every tensor's element count (its extents' product) must be below 2^63"),
                    );
                }
                if blocks > 1 {
                    out.push(Diagnostic::new(
                        "strata::verify::multiple_block_levels",
                        "a tensor is block-distributed along one dimension at most",
                        span,
                        format!("in `{}`", show()),
                    ));
                }
                self.check(module, types, t.element, span, out);
            }
        }
    }
}

/// The number of scalars a value of `ty` holds (the product of every level's extent, nested
/// element tensors included), or `None` when it exceeds `i64::MAX`: coordinates, offsets and
/// sizes are 64-bit everywhere, so such a type cannot be indexed.
pub fn element_count(types: &TypeArena, ty: Handle<Type>) -> Option<u64> {
    let count = match &types[ty] {
        Type::Scalar(_) | Type::Function { .. } => 1,
        Type::Tuple(fields) => fields.iter().try_fold(0u64, |n, &f| n.checked_add(element_count(types, f)?))?.max(1),
        Type::Tensor(t) => {
            t.levels.iter().try_fold(element_count(types, t.element)?, |n, l| n.checked_mul(l.interval.len()))?
        }
    };
    (count <= i64::MAX as u64).then_some(count)
}
