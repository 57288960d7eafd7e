//! Printing types.

use std::fmt;

use strata_entity::Handle;

use crate::module::Module;
use crate::types::{Device, Extent, Level, LevelFormat, TensorType, Type, TypeArena};

/// Whether `s` can be written as a bare identifier.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Displays a type in the text format, writing `!Alias` for aliased types.
pub struct TypeDisplay<'a> {
    module: &'a Module,
    types: &'a TypeArena,
    ty: Handle<Type>,
    use_alias_at_top: bool,
}

impl<'a> TypeDisplay<'a> {
    /// The type as it appears in a statement or signature.
    pub fn new(module: &'a Module, ty: Handle<Type>) -> Self {
        TypeDisplay { module, types: &module.types, ty, use_alias_at_top: true }
    }

    /// The type's definition (the top level never abbreviated to an alias).
    pub fn expanded(module: &'a Module, ty: Handle<Type>) -> Self {
        TypeDisplay { module, types: &module.types, ty, use_alias_at_top: false }
    }

    /// A type from an extension of the module's type arena (as the verifier builds), printed
    /// with the module's aliases.
    pub fn in_arena(module: &'a Module, types: &'a TypeArena, ty: Handle<Type>) -> Self {
        TypeDisplay { module, types, ty, use_alias_at_top: true }
    }

    /// Prints the definition even if the type itself has an alias.
    pub fn without_top_alias(self) -> Self {
        TypeDisplay { use_alias_at_top: false, ..self }
    }
}

impl fmt::Display for TypeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = Printer { module: self.module, types: self.types };
        p.write_type(f, self.ty, self.use_alias_at_top)
    }
}

struct Printer<'a> {
    module: &'a Module,
    types: &'a TypeArena,
}

impl Printer<'_> {
    fn write_type(&self, f: &mut fmt::Formatter<'_>, ty: Handle<Type>, alias: bool) -> fmt::Result {
        if alias {
            if let Some(a) = self.module.alias_of(ty) {
                return write!(f, "!{}", a.name);
            }
        }
        match self.types.try_get(ty) {
            None => f.write_str("<invalid type>"),
            Some(Type::Scalar(s)) => write!(f, "{s}"),
            Some(Type::Tuple(fields)) => {
                f.write_str("(")?;
                for (i, t) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    self.write_type(f, *t, true)?;
                }
                if fields.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            Some(Type::Function { params, result }) => {
                f.write_str("(")?;
                for (i, t) in params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    self.write_type(f, *t, true)?;
                }
                f.write_str(") -> ")?;
                self.write_type(f, *result, true)
            }
            Some(Type::Tensor(t)) => self.write_tensor(f, t),
        }
    }

    fn write_tensor(&self, f: &mut fmt::Formatter<'_>, t: &TensorType) -> fmt::Result {
        f.write_str("tensor<")?;
        if is_shorthand(t) {
            for l in &t.levels {
                write!(f, "{}x", l.interval.stop)?;
            }
            if !t.levels.is_empty() && !matches!(self.types.try_get(t.element), Some(Type::Scalar(_))) {
                f.write_str(" ")?;
            }
            self.write_type(f, t.element, true)?;
        } else {
            self.write_type(f, t.element, true)?;
            for l in &t.levels {
                f.write_str(", ")?;
                write_level(f, l)?;
            }
        }
        if t.placement.device != Device::Cpu {
            match &t.placement.device {
                Device::Named(n) if is_identifier(n) => write!(f, ", device = {n}")?,
                Device::Named(n) => write!(f, ", device = {n:?}")?,
                Device::Cpu => {}
            }
        }
        if let Some(team) = t.placement.team {
            write!(f, ", team = {team}")?;
        }
        f.write_str(">")
    }
}

/// Whether the tensor can use the positional shorthand `tensor<4x8xT>`.
fn is_shorthand(t: &TensorType) -> bool {
    t.levels
        .iter()
        .enumerate()
        .all(|(i, l)| l.name.position() == Some(i) && l.interval.start == 0 && l.format == LevelFormat::Dense)
}

/// A level as the type syntax writes it (`Col[0:4] compressed(nonunique)`).
impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_level(f, self)
    }
}

fn write_level(f: &mut fmt::Formatter<'_>, l: &Level) -> fmt::Result {
    write!(f, "{}{}", l.name, l.interval)?;
    match l.format {
        LevelFormat::Dense => Ok(()),
        LevelFormat::Compressed { unique, ordered, nnz } => {
            let mut opts = Vec::new();
            if !unique {
                opts.push("nonunique".to_string());
            }
            if !ordered {
                opts.push("nonordered".to_string());
            }
            if let Extent::Static(n) = nnz {
                opts.push(format!("nnz = {n}"));
            }
            write_format(f, "compressed", &opts)
        }
        LevelFormat::Singleton { unique, ordered } => {
            let mut opts = Vec::new();
            if !unique {
                opts.push("nonunique".to_string());
            }
            if !ordered {
                opts.push("nonordered".to_string());
            }
            write_format(f, "singleton", &opts)
        }
        LevelFormat::Ragged { total } => {
            let opts = match total {
                Extent::Static(n) => vec![format!("total = {n}")],
                Extent::Dynamic => vec![],
            };
            write_format(f, "ragged", &opts)
        }
        LevelFormat::Block => f.write_str(" block"),
    }
}

fn write_format(f: &mut fmt::Formatter<'_>, kw: &str, opts: &[String]) -> fmt::Result {
    write!(f, " {kw}")?;
    if !opts.is_empty() {
        write!(f, "({})", opts.join(", "))?;
    }
    Ok(())
}
