//! Modules, functions, programs and their statements.
//!
//! A [`Module`] is an ordered list of items — type aliases, rings, functions and programs —
//! each stored in an arena. A function body is a sequence of [`Statement`]s over expressions in
//! the function's own arena; an expression may only use expressions defined before it, and a
//! function may only call functions defined before it (so there is no recursion and the item
//! order is a valid evaluation order).

use strata_entity::{Arena, Handle, HandleSet};

use crate::literal::Literal;
use crate::op::{Op, Value};
use crate::span::{SourceInfo, Span};
use crate::types::{DimName, Interval, Scalar, Type, TypeArena};

/// A whole `.strata` file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// Interned types.
    pub types: TypeArena,
    /// `!Name = type` aliases.
    pub aliases: Arena<TypeAlias, SourceInfo>,
    /// `ring @name …` items.
    pub rings: Arena<Ring, SourceInfo>,
    /// `func` and `program` items.
    pub functions: Arena<Function, SourceInfo>,
    /// Every item in source order.
    pub items: Vec<Item>,
    /// Comments after the last item, without the `//`.
    pub trailing_comments: Vec<String>,
}

impl Module {
    /// The function named `name`.
    pub fn function_by_name(&self, name: &str) -> Option<Handle<Function>> {
        self.functions.iter().find(|(_, f)| f.name == name).map(|(h, _)| h)
    }

    /// The functions `entry` reaches through calls and payloads, `entry` first.
    pub fn reachable(&self, entry: Handle<Function>) -> Vec<Handle<Function>> {
        let mut seen = vec![entry];
        let mut k = 0;
        while k < seen.len() {
            for (_, e) in self.functions[seen[k]].exprs.iter() {
                let ExprKind::Op(op) = &e.kind else { continue };
                for func in op.functions() {
                    if !seen.contains(&func) {
                        seen.push(func);
                    }
                }
            }
            k += 1;
        }
        seen
    }

    /// The functions and programs that can be run: neither generic nor instances of generic
    /// ones, in source order.
    pub fn entries(&self) -> impl Iterator<Item = (Handle<Function>, &Function)> {
        self.items.iter().filter_map(|i| match *i {
            Item::Function(h) if !self.functions[h].is_generic() && self.functions[h].instance_of.is_none() => {
                Some((h, &self.functions[h]))
            }
            _ => None,
        })
    }

    /// The entry named `name` (with or without its `@`); the error says why there is none.
    pub fn entry_by_name(&self, name: &str) -> Result<Handle<Function>, String> {
        let name = name.trim_start_matches('@');
        match self.entries().find(|(_, f)| f.name == name) {
            Some((h, _)) => Ok(h),
            None if self.function_by_name(name).is_some() => Err(format!(
                "`@{name}` is generic (a parameter's type is left out): it runs only where a typed function \
                 or program calls it"
            )),
            None => {
                let names: Vec<String> = self.entries().map(|(_, f)| format!("@{}", f.name)).collect();
                Err(format!("no entry `@{name}`; the file defines {}", names.join(", ")))
            }
        }
    }

    /// The name a function is written with: an instance's generic original's.
    pub fn source_name(&self, h: Handle<Function>) -> &str {
        let f = &self.functions[h];
        f.instance_of.map_or(&f.name, |g| &self.functions[g].name)
    }

    /// The alias that names `ty`, if any (the first one declared).
    pub fn alias_of(&self, ty: Handle<Type>) -> Option<&TypeAlias> {
        self.aliases.iter().map(|(_, a)| a).find(|a| a.ty == ty)
    }
}

/// One top-level item, in source order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A type alias.
    Alias(Handle<TypeAlias>),
    /// A ring.
    Ring(Handle<Ring>),
    /// A function or program.
    Function(Handle<Function>),
}

/// `!Name = type`: the printer writes `!Name` wherever the type occurs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeAlias {
    /// Name without the `!`.
    pub name: String,
    /// The type.
    pub ty: Handle<Type>,
}

/// A user ring (seed 002's `%tensor.Ring`): element type, zero, addition, multiplication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    /// Name without the `@`.
    pub name: String,
    /// Element type.
    pub element: Scalar,
    /// Additive identity.
    pub zero: Literal,
    /// `(T, T) -> T`.
    pub add: Handle<Function>,
    /// `(T, T) -> T`.
    pub mul: Handle<Function>,
}

/// Whether an item is a pure function or a procedural program (seed 000's "fencil").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// `func`: pure, ends in `return`.
    Func,
    /// `program`: writes its `out` parameters with assignments, returns nothing.
    Program,
}

/// Whether a parameter is read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamMode {
    /// Read only.
    In,
    /// Written by assignments (programs only); reading it sees the writes made so far.
    Out,
}

/// A function or program.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Name without the `@`.
    pub name: String,
    /// Function or program.
    pub kind: FunctionKind,
    /// Parameter expressions, in order (the first entries of `exprs` as parsed;
    /// `strata_verify::results_as_outputs` appends output parameters after the others).
    pub params: Vec<Value>,
    /// The result types of a `func` (`-> T`, or `-> T1, T2` for several); empty for a program.
    pub results: Vec<Handle<Type>>,
    /// Whether the text left the result type out (`func @f(%x: T) {`): elaboration infers it
    /// from the returned value and the printer leaves it out again.
    pub result_inferred: bool,
    /// Every value: parameters first, then op results.
    pub exprs: Arena<Expr, Span>,
    /// The statements in order.
    pub body: Arena<Statement, SourceInfo>,
    /// Comments after the last statement, before the closing `}`, without the `//`.
    pub closing_comments: Vec<String>,
    /// Values whose type the text left out (`%l = plus(%a, %b)`): the parser gives them the
    /// placeholder type `()`, `strata_verify::elaborate` the inferred one; the printer leaves
    /// them out again (`Module::with_all_types` writes them).
    pub untyped: HandleSet<Expr>,
    /// Values written inside another statement: literal operands (`multiplies(%a, 2.0)`, a
    /// `constant` whose type its user decides) and nested calls (`plus(cartesian_shift(…), …)`).
    /// Each has its own `Let` statement just before its user and a generated name (`_1`, …);
    /// the printer writes it back in place ([`Module::flattened`] writes it as a statement).
    pub inline: HandleSet<Expr>,
    /// For an instance of a generic function (made by `strata_verify::elaborate` at a call's
    /// argument types): the generic function. The printer writes neither the instance nor its
    /// name, only the generic original.
    pub instance_of: Option<Handle<Function>>,
}

impl Function {
    /// Whether `self` and `other` are the same function but for their names: every other field
    /// equal (the small fields first; the vectors and arenas compare their lengths first).
    pub fn same_but_name(&self, other: &Function) -> bool {
        // Destructured, so that a new field cannot be left out of the comparison.
        let Function {
            name: _,
            kind,
            params,
            results,
            result_inferred,
            exprs,
            body,
            closing_comments,
            untyped,
            inline,
            instance_of,
        } = self;
        *kind == other.kind
            && *results == other.results
            && *result_inferred == other.result_inferred
            && *instance_of == other.instance_of
            && *params == other.params
            && *exprs == other.exprs
            && *body == other.body
            && *untyped == other.untyped
            && *inline == other.inline
            && *closing_comments == other.closing_comments
    }

    /// The result type of a `func` with exactly one result.
    pub fn result(&self) -> Option<Handle<Type>> {
        match self.results.as_slice() {
            [r] => Some(*r),
            _ => None,
        }
    }

    /// The names a `func`'s results are written under when it runs as an entry: `result`, or
    /// `result.0`, `result.1`, … for several.
    pub fn result_names(&self) -> Vec<String> {
        match self.results.len() {
            1 => vec!["result".to_string()],
            n => (0..n).map(|i| format!("result.{i}")).collect(),
        }
    }

    /// The values `%a, %b, …` bound by the multi-result call statement defining `v` (a `call`
    /// taking result 0): `v` and the `Let`s right after it taking results 1, 2, … of the same
    /// call. Just `[v]` for any other value.
    pub fn call_results(&self, v: Value) -> Vec<Value> {
        let same_call = |w: Value, k: u32| match (&self.exprs[v].kind, &self.exprs[w].kind) {
            (
                ExprKind::Op(Op::Call { func, args, result: 0 }),
                ExprKind::Op(Op::Call { func: f, args: a, result: r }),
            ) => f == func && a == args && *r == k,
            _ => false,
        };
        let mut out = vec![v];
        let mut lets = self.body.iter().filter_map(|(_, s)| if let Statement::Let(w) = s { Some(*w) } else { None });
        if lets.by_ref().any(|w| w == v) {
            for w in lets {
                if !same_call(w, out.len() as u32) {
                    break;
                }
                out.push(w);
            }
        }
        out
    }

    /// Whether `v` is a further result of a multi-result call (a `call` taking result 1, 2, …),
    /// written in [`Self::call_results`]'s statement.
    pub fn is_further_result(&self, v: Value) -> bool {
        matches!(self.exprs[v].kind, ExprKind::Op(Op::Call { result: 1.., .. }))
    }

    /// Whether some parameter's type is left out (`func @lap(%x) { … }`): the function is a
    /// template, typed and verified per instance, at the argument types of each call.
    pub fn is_generic(&self) -> bool {
        self.params.iter().any(|p| self.untyped.contains(p))
    }
}

/// A named, typed value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    /// Name without the `%`.
    pub name: String,
    /// The declared type.
    pub ty: Handle<Type>,
    /// Parameter or operation.
    pub kind: ExprKind,
}

/// What defines an expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExprKind {
    /// A parameter.
    Param(ParamMode),
    /// The result of an operation.
    Op(Op),
}

/// A statement of a function body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Statement {
    /// `%x = op(…) : T`.
    Let(Value),
    /// `%out <- %v` or `%out[D[a:b], …] <- %v` (programs): writes `value` over the target's
    /// domain, or over the given sub-domain.
    Assign {
        /// An `out` parameter.
        target: Value,
        /// Sub-intervals written, if not the whole target.
        domain: Option<Vec<(DimName, Interval)>>,
        /// The value written; its domain must cover what is written.
        value: Value,
    },
    /// `return %x` or `return %x, %y` (functions): one value per result.
    Return(Vec<Value>),
}
