//! The small syntax tree of op calls and attribute values, before lowering into [`strata_ir::Op`].

use strata_entity::Handle;
use strata_ir::{AffineMap, Interval, Span, Type};

/// A node with its source range.
#[derive(Clone, Debug)]
pub struct Spanned<T> {
    /// The node.
    pub node: T,
    /// Where.
    pub span: Span,
}

/// An attribute value or positional argument as written.
#[derive(Clone, Debug)]
pub enum AttrValue {
    /// An integer (sign included).
    Int(i64),
    /// A float, `inf`, `-inf` or `nan`.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A bare word: a dimension name or a keyword such as `plus_times`, `view`, `f32`.
    Word(String),
    /// `Name[start:stop]`.
    Interval(String, Interval),
    /// `%name`.
    Value(String),
    /// `@name`.
    Global(String),
    /// `"text"`.
    Str(String),
    /// `[a, b, …]`.
    List(Vec<Spanned<AttrValue>>),
    /// `(a, b, …)`.
    Tuple(Vec<Spanned<AttrValue>>),
    /// `(d0, …) -> (e, …)`.
    Map(AffineMap),
    /// `op(…)` as an operand: a nested call.
    Call(Box<CallAst>),
}

impl AttrValue {
    /// A short description for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            AttrValue::Int(_) => "an integer",
            AttrValue::Float(_) => "a float",
            AttrValue::Bool(_) => "a boolean",
            AttrValue::Word(_) => "a name",
            AttrValue::Interval(..) => "an interval",
            AttrValue::Value(_) => "a value",
            AttrValue::Global(_) => "a function or ring",
            AttrValue::Str(_) => "a string",
            AttrValue::List(_) => "a list",
            AttrValue::Tuple(_) => "a tuple",
            AttrValue::Map(_) => "an affine map",
            AttrValue::Call(_) => "an operation",
        }
    }

    /// Whether this may stand where a value operand goes, written in place: a literal number
    /// or boolean, or a nested call.
    pub fn is_in_place_operand(&self) -> bool {
        matches!(self, AttrValue::Int(_) | AttrValue::Float(_) | AttrValue::Bool(_) | AttrValue::Call(_))
    }
}

/// `key = value` in an op call.
#[derive(Clone, Debug)]
pub struct Keyword {
    /// The key.
    pub key: String,
    /// The key's span.
    pub key_span: Span,
    /// The value.
    pub value: Spanned<AttrValue>,
}

/// `name(positional…, key = value…)`.
#[derive(Clone, Debug)]
pub struct CallAst {
    /// The op name.
    pub name: String,
    /// The name's span.
    pub name_span: Span,
    /// Positional arguments.
    pub positional: Vec<Spanned<AttrValue>>,
    /// Keyword arguments.
    pub keywords: Vec<Keyword>,
    /// The whole call.
    pub span: Span,
    /// `: type` after a call written in place (the statement's own type is parsed apart).
    pub ty: Option<Handle<Type>>,
}
