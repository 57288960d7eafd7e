//! The Strata text front end.
//!
//! [`parse`] turns `.strata` source into a [`strata_ir::Module`] (lexer → parser → lowering of
//! op calls), reporting every error it can find with its span. The printer lives with the IR
//! (`module.to_string()`), so `fmt` is `parse` followed by printing.

#![deny(missing_docs)]

pub mod ast;
mod comments;
pub mod lexer;
mod lower;
mod parser;

pub use lower::{op_names, parse_einsum};
pub use parser::parse;
