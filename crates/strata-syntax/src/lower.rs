//! Lowering an op call `name(args…)` into a typed [`Op`].
//!
//! Each op reads its operands and attributes through [`Args`], which reports missing, extra,
//! unknown and ill-kinded arguments with the argument's own span.

use std::collections::{HashMap, HashSet};

use strata_entity::Handle;
use strata_ir::{
    AffineMap, BinaryOp, BuiltinRing, Device, Diagnostic, DimName, Einsum, Function, Init, Interval, Literal, MapKind,
    Mode, Module, Op, PackLayout, PermKind, RingRef, Scalar, Span, UnaryOp, Value,
};

use crate::ast::{AttrValue, CallAst, Spanned};
use crate::parser::{Fail, PResult};

/// What op lowering may look up.
pub(crate) struct Scope<'a> {
    pub module: &'a Module,
    pub value: &'a dyn Fn(&str, Span) -> PResult<Value>,
    /// Makes a value of an operand written in place: a literal or a nested call.
    pub in_place: &'a dyn Fn(&Spanned<AttrValue>) -> PResult<Value>,
    pub declared_globals: &'a Globals,
}

/// The `@names` of a module being parsed: every one the file defines anywhere (for "used
/// before its definition"), and the functions and rings defined so far, by name (lookups in
/// constant time, so a file of many functions parses in linear time).
#[derive(Default)]
pub(crate) struct Globals {
    pub declared: HashSet<String>,
    pub functions: HashMap<String, Handle<Function>>,
    pub rings: HashSet<String>,
}

fn err(code: &'static str, message: impl Into<String>, span: Span, label: impl Into<String>) -> Fail {
    Fail::Report(Box::new(Diagnostic::new(code, message, span, label)))
}

fn wrong(key: &str, expected: &str, v: &Spanned<AttrValue>) -> Fail {
    err(
        "strata::parse::wrong_attribute",
        format!("`{key}` expects {expected}, found {}", v.node.describe()),
        v.span,
        format!("expected {expected}"),
    )
}

/// Converts a literal-shaped attribute (number, boolean, tuple) into a [`Literal`].
pub(crate) fn literal_of(v: &Spanned<AttrValue>) -> PResult<Literal> {
    match &v.node {
        AttrValue::Int(i) => Ok(Literal::Int(*i)),
        AttrValue::Float(x) => Ok(Literal::Float(*x)),
        AttrValue::Bool(b) => Ok(Literal::Bool(*b)),
        AttrValue::Tuple(items) => Ok(Literal::Tuple(items.iter().map(literal_of).collect::<PResult<_>>()?)),
        _ => Err(wrong("literal", "a number, boolean or tuple", v)),
    }
}

pub(crate) fn resolve_function(globals: &Globals, name: &str, span: Span) -> PResult<Handle<Function>> {
    if let Some(&h) = globals.functions.get(name) {
        return Ok(h);
    }
    if globals.declared.contains(name) && !globals.rings.contains(name) {
        return Err(Fail::Report(Box::new(
            Diagnostic::new(
                "strata::parse::use_before_definition",
                format!("function `@{name}` is used before its definition"),
                span,
                "defined further down",
            )
            .with_help("move the definition above its first use: functions may only call earlier functions"),
        )));
    }
    Err(err(
        "strata::parse::unknown_function",
        format!("no function named `@{name}`"),
        span,
        "not defined in this file",
    ))
}

/// Reads the arguments of one call.
struct Args<'c> {
    call: &'c CallAst,
    cx: &'c Scope<'c>,
    next_pos: usize,
    used: Vec<bool>,
}

impl<'c> Args<'c> {
    fn new(call: &'c CallAst, cx: &'c Scope<'c>) -> Self {
        Args { call, cx, next_pos: 0, used: vec![false; call.keywords.len()] }
    }

    fn op(&self) -> &str {
        &self.call.name
    }

    fn func(&mut self) -> PResult<Handle<Function>> {
        match self.call.positional.get(self.next_pos) {
            Some(Spanned { node: AttrValue::Global(name), span }) => {
                self.next_pos += 1;
                resolve_function(self.cx.declared_globals, name, *span)
            }
            Some(other) => Err(err(
                "strata::parse::missing_operand",
                format!(
                    "`{}` expects a function `@name` as its first argument, found {}",
                    self.op(),
                    other.node.describe()
                ),
                other.span,
                "expected a function",
            )),
            None => Err(err(
                "strata::parse::missing_operand",
                format!("`{}` expects a function `@name` as its first argument", self.op()),
                self.call.span,
                "function missing",
            )),
        }
    }

    fn value(&mut self) -> PResult<Value> {
        match self.call.positional.get(self.next_pos) {
            Some(Spanned { node: AttrValue::Value(name), span }) => {
                self.next_pos += 1;
                (self.cx.value)(name, *span)
            }
            Some(v) if v.node.is_in_place_operand() => {
                self.next_pos += 1;
                (self.cx.in_place)(v)
            }
            Some(other) => Err(Fail::Report(Box::new(
                Diagnostic::new(
                    "strata::parse::missing_operand",
                    format!(
                        "`{}` expects a value operand (`%name`, a literal or an operation) here, found {}",
                        self.op(),
                        other.node.describe()
                    ),
                    other.span,
                    "expected a value",
                )
                .with_help("attributes are written `key = value` after the operands"),
            ))),
            None => Err(err(
                "strata::parse::missing_operand",
                format!("`{}` expects another value operand", self.op()),
                self.call.span,
                "operand missing",
            )),
        }
    }

    fn values_rest(&mut self) -> PResult<Vec<Value>> {
        let mut out = Vec::new();
        while self.next_pos < self.call.positional.len() {
            out.push(self.value()?);
        }
        Ok(out)
    }

    fn kw_opt(&mut self, key: &str) -> Option<&'c Spanned<AttrValue>> {
        let i = self.call.keywords.iter().position(|k| k.key == key)?;
        self.used[i] = true;
        Some(&self.call.keywords[i].value)
    }

    fn kw(&mut self, key: &str) -> PResult<&'c Spanned<AttrValue>> {
        self.kw_opt(key).ok_or_else(|| {
            err(
                "strata::parse::missing_attribute",
                format!("`{}` needs the attribute `{key}`", self.call.name),
                self.call.span,
                format!("`{key} = …` missing"),
            )
        })
    }

    fn int(&mut self, key: &str) -> PResult<i64> {
        let v = self.kw(key)?;
        match v.node {
            AttrValue::Int(i) => Ok(i),
            _ => Err(wrong(key, "an integer", v)),
        }
    }

    fn uint_of(key: &str, v: &Spanned<AttrValue>) -> PResult<u64> {
        match v.node {
            AttrValue::Int(i) if i >= 0 => Ok(i as u64),
            _ => Err(wrong(key, "a non-negative integer", v)),
        }
    }

    fn u32_of(key: &str, v: &Spanned<AttrValue>) -> PResult<u32> {
        let x = Self::uint_of(key, v)?;
        u32::try_from(x).map_err(|_| wrong(key, "a small non-negative integer", v))
    }

    fn uint32(&mut self, key: &str) -> PResult<u32> {
        let v = self.kw(key)?;
        Self::u32_of(key, v)
    }

    fn boolean(&mut self, key: &str) -> PResult<bool> {
        let v = self.kw(key)?;
        match v.node {
            AttrValue::Bool(b) => Ok(b),
            _ => Err(wrong(key, "`true` or `false`", v)),
        }
    }

    fn dim(&mut self, key: &str) -> PResult<DimName> {
        let v = self.kw(key)?;
        match &v.node {
            AttrValue::Word(w) => Ok(DimName(w.clone())),
            _ => Err(wrong(key, "a dimension name", v)),
        }
    }

    fn dim_interval(&mut self, key: &str) -> PResult<(DimName, Interval)> {
        let v = self.kw(key)?;
        match &v.node {
            AttrValue::Interval(n, iv) => Ok((DimName(n.clone()), *iv)),
            _ => Err(wrong(key, "a dimension with an interval `Name[start:stop]`", v)),
        }
    }

    fn list_of<T>(
        key: &str,
        v: &'c Spanned<AttrValue>,
        f: impl Fn(&str, &'c Spanned<AttrValue>) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        match &v.node {
            AttrValue::List(items) => items.iter().map(|i| f(key, i)).collect(),
            _ => Err(wrong(key, "a list `[…]`", v)),
        }
    }

    fn u64_list(&mut self, key: &str) -> PResult<Vec<u64>> {
        let v = self.kw(key)?;
        Self::list_of(key, v, Self::uint_of)
    }

    fn u32_list(&mut self, key: &str) -> PResult<Vec<u32>> {
        let v = self.kw(key)?;
        Self::list_of(key, v, Self::u32_of)
    }

    fn u32_list_or_empty(&mut self, key: &str) -> PResult<Vec<u32>> {
        match self.kw_opt(key) {
            Some(v) => Self::list_of(key, v, Self::u32_of),
            None => Ok(Vec::new()),
        }
    }

    fn u64_list_or_empty(&mut self, key: &str) -> PResult<Vec<u64>> {
        match self.kw_opt(key) {
            Some(v) => Self::list_of(key, v, Self::uint_of),
            None => Ok(Vec::new()),
        }
    }

    fn pack_layout(&mut self) -> PResult<PackLayout> {
        Ok(PackLayout {
            inner_dims_pos: self.u32_list_or_empty("inner_dims_pos")?,
            outer_dims_perm: self.u32_list_or_empty("outer_dims_perm")?,
        })
    }

    fn groups(&mut self, key: &str) -> PResult<Vec<Vec<u32>>> {
        let v = self.kw(key)?;
        Self::list_of(key, v, |k, inner| Self::list_of(k, inner, Self::u32_of))
    }

    fn literal(&mut self, key: &str) -> PResult<Literal> {
        let v = self.kw(key)?;
        literal_of(v).map_err(|_| wrong(key, "a number, boolean or tuple literal", v))
    }

    fn literal_opt(&mut self, key: &str) -> PResult<Option<Literal>> {
        match self.kw_opt(key) {
            Some(v) => literal_of(v).map(Some).map_err(|_| wrong(key, "a number, boolean or tuple literal", v)),
            None => Ok(None),
        }
    }

    fn init(&mut self) -> PResult<Init> {
        let v = self.kw("init")?;
        match &v.node {
            AttrValue::Value(name) => Ok(Init::Value((self.cx.value)(name, v.span)?)),
            _ => literal_of(v).map(Init::Literal).map_err(|_| wrong("init", "a literal or a value `%init`", v)),
        }
    }

    fn ring(&mut self) -> PResult<RingRef> {
        let v = self.kw("ring")?;
        match &v.node {
            AttrValue::Word(w) => BuiltinRing::from_keyword(w).map(RingRef::Builtin).ok_or_else(|| {
                Fail::Report(Box::new(
                    Diagnostic::new(
                        "strata::parse::unknown_ring",
                        format!("no builtin ring `{w}`"),
                        v.span,
                        "unknown ring",
                    )
                    .with_help(
                        "builtin rings are plus_times, max_plus, min_plus and or_and; user rings are written `@name`",
                    ),
                ))
            }),
            AttrValue::Global(g) => match self.cx.module.rings.iter().find(|(_, r)| r.name == *g) {
                Some((h, _)) => Ok(RingRef::User(h)),
                None => Err(err(
                    "strata::parse::unknown_ring",
                    format!("no ring named `@{g}` is defined before this point"),
                    v.span,
                    "unknown ring",
                )),
            },
            _ => Err(wrong("ring", "a ring name", v)),
        }
    }

    fn mode(&mut self) -> PResult<Mode> {
        match self.kw_opt("mode") {
            None => Ok(Mode::Copy),
            Some(v) => match &v.node {
                AttrValue::Word(w) => Mode::from_keyword(w).ok_or_else(|| wrong("mode", "`copy` or `view`", v)),
                _ => Err(wrong("mode", "`copy` or `view`", v)),
            },
        }
    }

    fn perm_kind(&mut self) -> PResult<PermKind> {
        let expected = "`gather` or `scatter`";
        match self.kw_opt("perm_kind") {
            None => Ok(PermKind::Gather),
            Some(v) => match &v.node {
                AttrValue::Word(w) => PermKind::from_keyword(w).ok_or_else(|| wrong("perm_kind", expected, v)),
                _ => Err(wrong("perm_kind", expected, v)),
            },
        }
    }

    fn scalar(&mut self, key: &str) -> PResult<Scalar> {
        let v = self.kw(key)?;
        match &v.node {
            AttrValue::Word(w) => Scalar::from_name(w).ok_or_else(|| wrong(key, "a scalar type", v)),
            _ => Err(wrong(key, "a scalar type", v)),
        }
    }

    fn einsum(&mut self) -> PResult<Einsum> {
        let v = self.kw("einsum")?;
        let AttrValue::Str(s) = &v.node else {
            return Err(wrong("einsum", "a string such as \"ik,kj->ij\"", v));
        };
        parse_einsum(s).map_err(|why| {
            Fail::Report(Box::new(
                Diagnostic::new(
                    "strata::parse::invalid_einsum",
                    format!("invalid Einstein subscripts {s:?}: {why}"),
                    v.span,
                    "here",
                )
                .with_help("write one letter per dimension: \"ik,kj->ij\""),
            ))
        })
    }

    fn map(&mut self, key: &str) -> PResult<AffineMap> {
        let v = self.kw(key)?;
        match &v.node {
            AttrValue::Map(m) => Ok(m.clone()),
            _ => Err(wrong(key, "an affine map `(d0, …) -> (…)`", v)),
        }
    }

    fn maps(&mut self, key: &str) -> PResult<Vec<AffineMap>> {
        let v = self.kw(key)?;
        Self::list_of(key, v, |k, m| match &m.node {
            AttrValue::Map(m) => Ok(m.clone()),
            _ => Err(wrong(k, "a list of affine maps", m)),
        })
    }

    fn domain(&mut self, key: &str) -> PResult<Vec<(DimName, Interval)>> {
        let v = self.kw(key)?;
        Self::list_of(key, v, |k, d| match &d.node {
            AttrValue::Interval(n, iv) => Ok((DimName(n.clone()), *iv)),
            _ => Err(wrong(k, "a list of `Name[start:stop]`", d)),
        })
    }

    fn device(&mut self, key: &str) -> PResult<Device> {
        let v = self.kw(key)?;
        match &v.node {
            AttrValue::Word(w) | AttrValue::Str(w) => {
                Ok(if w == "cpu" { Device::Cpu } else { Device::Named(w.clone()) })
            }
            _ => Err(wrong(key, "a device name", v)),
        }
    }

    /// Reports the first argument nobody read.
    fn finish(self) -> PResult<()> {
        if let Some(extra) = self.call.positional.get(self.next_pos) {
            return Err(err(
                "strata::parse::unexpected_argument",
                format!("`{}` takes no further positional argument", self.call.name),
                extra.span,
                "unexpected argument",
            ));
        }
        if let Some(i) = self.used.iter().position(|u| !u) {
            let kw = &self.call.keywords[i];
            return Err(err(
                "strata::parse::unknown_attribute",
                format!("`{}` has no attribute `{}`", self.call.name, kw.key),
                kw.key_span,
                "unknown attribute",
            ));
        }
        Ok(())
    }
}

/// Parses `"ik,kj->ij"`.
pub fn parse_einsum(s: &str) -> Result<Einsum, String> {
    let (ins, out) = s.split_once("->").ok_or("missing `->` and the output subscripts")?;
    let letters = |part: &str| -> Result<Vec<char>, String> {
        part.trim()
            .chars()
            .map(|c| if c.is_ascii_alphabetic() { Ok(c) } else { Err(format!("`{c}` is not a subscript letter")) })
            .collect()
    };
    let inputs: Vec<Vec<char>> = ins.split(',').map(letters).collect::<Result<_, _>>()?;
    let output = letters(out)?;
    for (i, c) in output.iter().enumerate() {
        if output[..i].contains(c) {
            return Err(format!("output letter `{c}` appears twice"));
        }
    }
    Ok(Einsum { inputs, output })
}

/// Lowers one call into an op.
pub(crate) fn lower_op(call: &CallAst, cx: &Scope<'_>) -> PResult<Op> {
    let mut a = Args::new(call, cx);
    let name = call.name.as_str();
    let op = if let Some(u) = UnaryOp::from_keyword(name) {
        Op::Unary { op: u, arg: a.value()? }
    } else if let Some(b) = BinaryOp::from_keyword(name) {
        Op::Binary { op: b, lhs: a.value()?, rhs: a.value()? }
    } else if let Some(kind) = MapKind::from_keyword(name) {
        Op::Map { kind, func: a.func()?, args: a.values_rest()? }
    } else if let Some(f) = name.strip_prefix("array.") {
        return Err(Fail::Report(Box::new(
            Diagnostic::new(
                "strata::parse::unknown_op",
                format!("`array.{f}` is not an operation of the IR"),
                call.name_span,
                "array-API operation",
            )
            .with_help(
                "the array API is a front end (Rust `strata_array`, Python `strata.array`) that builds core \
                 ops; in a program write the core ops it defines (docs/array-api.md)",
            ),
        )));
    } else {
        match name {
            "constant" => Op::Constant { value: a.literal("value")? },
            "select" => Op::Select { cond: a.value()?, on_true: a.value()?, on_false: a.value()? },
            "cast" => Op::Cast { arg: a.value()?, to: a.scalar("to")? },
            "make_tuple" => Op::MakeTuple { fields: a.values_rest()? },
            "tuple_get" => Op::TupleGet { tuple: a.value()?, index: a.uint32("index")? },
            "call" => Op::Call { func: a.func()?, args: a.values_rest()?, result: 0 },
            "cartesian_shift" => Op::CartesianShift { arg: a.value()?, dim: a.dim("dim")?, offset: a.int("offset")? },
            "shift_init" => Op::ShiftInit { arg: a.value()?, table: a.value()? },
            "shift_apply" => Op::ShiftApply { arg: a.value()?, neighbor: a.int("neighbor")? },
            "unstructured_shift" => {
                Op::UnstructuredShift { arg: a.value()?, table: a.value()?, neighbor: a.int("neighbor")? }
            }
            "can_deref" => Op::CanDeref { arg: a.value()? },
            "reduce" => Op::Reduce { func: a.func()?, args: a.values_rest()?, init: a.literal("init")? },
            "scan" => Op::Scan {
                func: a.func()?,
                args: a.values_rest()?,
                dim: a.dim("dim")?,
                forward: a.boolean("forward")?,
                init: a.init()?,
            },
            "subset" => Op::Subset { arg: a.value()?, domain: a.domain("domain")? },
            "concat" => Op::Concat { args: a.values_rest()?, dim: a.dim("dim")?, mode: a.mode()? },
            "pos" => Op::Pos { arg: a.value()?, dim: a.dim("dim")? },
            "coordinates" => Op::Coordinates { arg: a.value()?, dim: a.dim("dim")? },
            "nonzeros" => Op::Nonzeros { arg: a.value()?, dim: a.dim("dim")? },
            "assemble" => Op::Assemble { coordinates: a.value()?, values: a.value()?, dim: a.dim("dim")? },
            "add_dim" => {
                let arg = a.value()?;
                let (dim, interval) = a.dim_interval("dim")?;
                Op::AddDim { arg, dim, interval }
            }
            "map_reduce" => {
                Op::MapReduce { func: a.func()?, args: a.values_rest()?, init: a.init()?, subscripts: a.einsum()? }
            }
            "map_reduce_aff" => Op::MapReduceAff {
                func: a.func()?,
                args: a.values_rest()?,
                init: a.init()?,
                domain: a.u64_list("domain")?,
                outputs: a.uint32("outputs")?,
                shape: a.u64_list("shape")?,
                out_map: a.map("out_map")?,
                maps: a.maps("maps")?,
                padding: a.literal_opt("padding")?,
            },
            "dot_general" => Op::DotGeneral {
                lhs: a.value()?,
                rhs: a.value()?,
                ring: a.ring()?,
                lhs_contract: a.u32_list("lhs_contract")?,
                rhs_contract: a.u32_list("rhs_contract")?,
                lhs_batch: a.u32_list_or_empty("lhs_batch")?,
                rhs_batch: a.u32_list_or_empty("rhs_batch")?,
            },
            "product_2d" => Op::Product2d { lhs: a.value()?, rhs: a.value()?, ring: a.ring()? },
            "drop_dim" => Op::DropDim { arg: a.value()?, dim: a.dim("dim")? },
            "transpose" => Op::Transpose { arg: a.value()?, perm: a.u32_list("perm")?, kind: a.perm_kind()? },
            "broadcast" => Op::Broadcast { arg: a.value()?, shape: a.u64_list("shape")? },
            "broadcast_in_dim" => {
                Op::BroadcastInDim { arg: a.value()?, shape: a.u64_list("shape")?, dims: a.u32_list("dims")? }
            }
            "get" => Op::Get { arg: a.value()?, indices: a.values_rest()? },
            "set" => {
                let arg = a.value()?;
                let mut rest = a.values_rest()?;
                let Some(value) = rest.pop() else {
                    return Err(err(
                        "strata::parse::missing_operand",
                        "`set` expects the tensor, its indices and the new element",
                        call.span,
                        "operands missing",
                    ));
                };
                Op::Set { arg, indices: rest, value }
            }
            "pack" => Op::Pack {
                arg: a.value()?,
                tile: a.u64_list("tile")?,
                layout: a.pack_layout()?,
                padding: a.literal_opt("padding")?,
            },
            "unpack" => Op::Unpack { arg: a.value()?, layout: a.pack_layout()?, shape: a.u64_list_or_empty("shape")? },
            "gather" => Op::Gather {
                source: a.value()?,
                indices: a.value()?,
                coordinates: a.u32_list("coordinates")?,
                mode: a.mode()?,
            },
            "scatter" => Op::Scatter {
                source: a.value()?,
                dest: a.value()?,
                indices: a.value()?,
                coordinates: a.u32_list("coordinates")?,
                mode: a.mode()?,
            },
            "collapse_shape" => Op::CollapseShape { arg: a.value()?, groups: a.groups("groups")?, mode: a.mode()? },
            "expand_shape" => Op::ExpandShape {
                arg: a.value()?,
                groups: a.groups("groups")?,
                shape: a.u64_list("shape")?,
                mode: a.mode()?,
            },
            "convert" => Op::Convert { arg: a.value()?, mode: a.mode()? },
            "to_device" => Op::ToDevice { arg: a.value()?, device: a.device("device")? },
            "distribute" => {
                let arg = a.value()?;
                let v = a.kw("ranks")?;
                let ranks = match v.node {
                    AttrValue::Int(n) if n >= 1 && n <= u32::MAX as i64 => n as u32,
                    AttrValue::Word(ref w) if w == "world" => strata_ir::Team::WORLD,
                    _ => return Err(wrong("ranks", "a positive team size or `world`", v)),
                };
                Op::Distribute { arg, ranks, dim: a.dim("dim")? }
            }
            "collect" => Op::Collect { arg: a.value()? },
            _ => {
                return Err(Fail::Report(Box::new(
                    Diagnostic::new(
                        "strata::parse::unknown_op",
                        format!("unknown operation `{name}`"),
                        call.name_span,
                        "not an operation",
                    )
                    .with_help(suggest(name)),
                )))
            }
        }
    };
    a.finish()?;
    Ok(op)
}

/// Every op name of the core IR (array-API ops excluded).
pub fn op_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = vec![
        "constant",
        "select",
        "cast",
        "make_tuple",
        "tuple_get",
        "call",
        "cartesian_shift",
        "shift_init",
        "shift_apply",
        "unstructured_shift",
        "can_deref",
        "reduce",
        "scan",
        "subset",
        "concat",
        "pos",
        "add_dim",
        "map_reduce",
        "map_reduce_aff",
        "dot_general",
        "product_2d",
        "transpose",
        "broadcast",
        "broadcast_in_dim",
        "get",
        "set",
        "pack",
        "unpack",
        "gather",
        "scatter",
        "collapse_shape",
        "expand_shape",
        "convert",
        "to_device",
        "distribute",
        "collect",
    ];
    v.extend(UnaryOp::ALL.iter().map(|u| u.keyword()));
    v.extend(BinaryOp::ALL.iter().map(|b| b.keyword()));
    v.extend(MapKind::ALL.iter().map(|m| m.keyword()));
    v
}

fn suggest(name: &str) -> String {
    let best = op_names().into_iter().min_by_key(|c| edit_distance(name, c));
    match best {
        Some(b) if edit_distance(name, b) <= 2.max(name.len() / 3) => {
            format!("did you mean `{b}`?")
        }
        _ => "see docs/language.md for the operations".to_string(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
