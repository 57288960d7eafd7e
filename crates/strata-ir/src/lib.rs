//! The Strata tensor IR.
//!
//! - [`types`]: tensors as stacks of levels (name, interval, storage format) over an element
//!   type that may be a scalar, a tuple or another tensor, with a placement (device, team);
//! - [`op`]: the closed set of operations (seeds 000–004);
//! - [`module`]: modules of aliases, rings, functions and programs, with values in arenas;
//! - [`mod@print`]: the canonical text printer (`Display` of a module is its source text);
//! - [`diagnostic`]: errors as data, rendered only by the CLI.
//!
//! Invariants that hold for every verified module: every operand refers to an earlier
//! expression of the same function; every function refers only to earlier functions; every
//! expression's declared type equals the type inferred for it.

#![deny(missing_docs)]

pub mod affine;
pub mod algebra;
pub mod diagnostic;
pub mod literal;
pub mod module;
pub mod op;
pub mod print;
pub mod span;
pub mod types;

pub use affine::{AffineExpr, AffineMap, Einsum, Quotient, QuotientOp};
pub use diagnostic::{Diagnostic, Label};
pub use literal::Literal;
pub use module::{Expr, ExprKind, Function, FunctionKind, Item, Module, ParamMode, Ring, Statement, TypeAlias};
pub use op::{
    BinaryClass, BinaryOp, BuiltinRing, Init, MapKind, Mode, Op, PackLayout, PermKind, RingRef, UnaryDomain, UnaryOp,
    Value,
};
pub use span::{SourceInfo, Span};
pub use types::{
    element_of, element_scalar, Device, DimName, Extent, Interval, Level, LevelFormat, Placement, Scalar, Team,
    TensorType, Type, TypeArena,
};
