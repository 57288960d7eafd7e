//! Literal values: the constants that parametrize operations (seed 000's "literal types").

use std::fmt;
use std::hash::{Hash, Hasher};

/// A literal: a scalar or a (nested) tuple of scalars. Literals carry no type of their own; the
/// verifier checks each against the type its position expects (an integer literal fits any
/// integer or float type, a float literal only float types).
#[derive(Clone, Debug)]
pub enum Literal {
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float, including `inf`, `-inf` and `nan`.
    Float(f64),
    /// A tuple `(a, b, …)`.
    Tuple(Vec<Literal>),
}

/// Floats compare by bit pattern, so `nan` equals itself and a module round-trips exactly.
impl PartialEq for Literal {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Literal::Bool(a), Literal::Bool(b)) => a == b,
            (Literal::Int(a), Literal::Int(b)) => a == b,
            (Literal::Float(a), Literal::Float(b)) => a.to_bits() == b.to_bits(),
            (Literal::Tuple(a), Literal::Tuple(b)) => a == b,
            _ => false,
        }
    }
}
impl Eq for Literal {}

impl Hash for Literal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Literal::Bool(b) => b.hash(state),
            Literal::Int(i) => i.hash(state),
            Literal::Float(f) => f.to_bits().hash(state),
            Literal::Tuple(t) => t.hash(state),
        }
    }
}

/// Prints in the text format: floats always with a `.`, an exponent or a keyword, so they
/// re-parse as floats.
impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) => {
                if x.is_nan() {
                    f.write_str("nan")
                } else if x.is_infinite() {
                    f.write_str(if *x > 0.0 { "inf" } else { "-inf" })
                } else {
                    write!(f, "{x:?}")
                }
            }
            Literal::Tuple(items) => {
                f.write_str("(")?;
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{it}")?;
                }
                f.write_str(")")
            }
        }
    }
}
