//! Printing operations: `name(positional operands, key = attribute, …)`.
//!
//! Value operands and function references are positional; every other parameter is a keyword
//! attribute, always printed in the order listed here.

use std::fmt::{self, Display};

use crate::module::{ExprKind, Function, Module};
use crate::op::{Init, Mode, Op, PackLayout, RingRef, Value};
use crate::types::{DimName, Interval};

use super::types::is_identifier;

/// Accumulates the parts of an op call.
struct Call<'a> {
    module: &'a Module,
    func: &'a Function,
    parts: Vec<String>,
}

impl<'a> Call<'a> {
    fn value(&mut self, v: Value) -> &mut Self {
        let text = operand(self.module, self.func, v);
        self.parts.push(text);
        self
    }

    fn values(&mut self, vs: &[Value]) -> &mut Self {
        for &v in vs {
            self.value(v);
        }
        self
    }

    fn function(&mut self, h: strata_entity::Handle<Function>) -> &mut Self {
        let name = if self.module.functions.try_get(h).is_some() { self.module.source_name(h) } else { "<invalid>" };
        self.parts.push(format!("@{name}"));
        self
    }

    fn kw(&mut self, key: &str, value: impl Display) -> &mut Self {
        self.parts.push(format!("{key} = {value}"));
        self
    }

    /// `mode = view`; `copy`, the default, is left out.
    fn mode(&mut self, mode: Mode) -> &mut Self {
        if mode == Mode::View {
            self.kw("mode", mode.keyword());
        }
        self
    }

    /// `pack`/`unpack`'s optional layout attributes, written only when given.
    fn pack_layout(&mut self, layout: &PackLayout) -> &mut Self {
        if !layout.inner_dims_pos.is_empty() {
            self.kw("inner_dims_pos", list(&layout.inner_dims_pos));
        }
        if !layout.outer_dims_perm.is_empty() {
            self.kw("outer_dims_perm", list(&layout.outer_dims_perm));
        }
        self
    }

    fn ring(&mut self, ring: RingRef) -> &mut Self {
        let text = match ring {
            RingRef::Builtin(b) => b.keyword().to_string(),
            RingRef::User(h) => format!("@{}", self.module.rings.try_get(h).map_or("<invalid>", |r| r.name.as_str())),
        };
        self.kw("ring", text)
    }

    fn init(&mut self, init: &Init) -> &mut Self {
        match init {
            Init::Literal(l) => self.kw("init", l),
            Init::Value(v) => {
                let text = operand(self.module, self.func, *v);
                self.kw("init", text)
            }
        }
    }
}

/// An operand as written: `%name`, or the literal or call of a value written in place
/// ([`Function::inline`]).
pub(super) fn operand(module: &Module, func: &Function, v: Value) -> String {
    let Some(e) = func.exprs.try_get(v) else { return "%<invalid>".to_string() };
    match &e.kind {
        ExprKind::Op(Op::Constant { value }) if func.inline.contains(&v) && func.untyped.contains(&v) => {
            value.to_string()
        }
        ExprKind::Op(op) if func.inline.contains(&v) => {
            struct InPlace<'a>(&'a Module, &'a Function, &'a Op);
            impl Display for InPlace<'_> {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    write_op(f, self.0, self.1, self.2)
                }
            }
            let call = InPlace(module, func, op).to_string();
            if func.untyped.contains(&v) {
                call
            } else {
                format!("{call} : {}", super::TypeDisplay::new(module, e.ty))
            }
        }
        _ => format!("%{}", e.name),
    }
}

fn list<T: Display>(items: &[T]) -> String {
    let inner: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    format!("[{}]", inner.join(", "))
}

fn nested_list(groups: &[Vec<u32>]) -> String {
    let inner: Vec<String> = groups.iter().map(|g| list(g)).collect();
    format!("[{}]", inner.join(", "))
}

fn domain(d: &[(DimName, Interval)]) -> String {
    let inner: Vec<String> = d.iter().map(|(n, i)| format!("{n}{i}")).collect();
    format!("[{}]", inner.join(", "))
}

/// Writes `op` as `name(args…)`.
pub(super) fn write_op(f: &mut fmt::Formatter<'_>, module: &Module, func: &Function, op: &Op) -> fmt::Result {
    let mut c = Call { module, func, parts: Vec::new() };
    let name = op.name();
    match op {
        Op::Constant { value } => {
            c.kw("value", value);
        }
        Op::Unary { op: _, arg } | Op::CanDeref { arg } | Op::Collect { arg } => {
            c.value(*arg);
        }
        Op::Convert { arg, mode } => {
            c.value(*arg).mode(*mode);
        }
        Op::Binary { op: _, lhs, rhs } => {
            c.value(*lhs).value(*rhs);
        }
        Op::Select { cond, on_true, on_false } => {
            c.value(*cond).value(*on_true).value(*on_false);
        }
        Op::Cast { arg, to } => {
            c.value(*arg).kw("to", to);
        }
        Op::MakeTuple { fields } => {
            c.values(fields);
        }
        Op::TupleGet { tuple, index } => {
            c.value(*tuple).kw("index", index);
        }
        Op::Call { func, args, result: _ } => {
            c.function(*func).values(args);
        }
        Op::CartesianShift { arg, dim, offset } => {
            c.value(*arg).kw("dim", dim).kw("offset", offset);
        }
        Op::ShiftInit { arg, table } => {
            c.value(*arg).value(*table);
        }
        Op::ShiftApply { arg, neighbor } => {
            c.value(*arg).kw("neighbor", neighbor);
        }
        Op::UnstructuredShift { arg, table, neighbor } => {
            c.value(*arg).value(*table).kw("neighbor", neighbor);
        }
        Op::Reduce { func, args, init } => {
            c.function(*func).values(args).kw("init", init);
        }
        Op::Scan { func, args, dim, forward, init } => {
            c.function(*func).values(args).kw("dim", dim).kw("forward", forward).init(init);
        }
        Op::Subset { arg, domain: d } => {
            c.value(*arg).kw("domain", domain(d));
        }
        Op::Concat { args, dim, mode } => {
            c.values(args).kw("dim", dim).mode(*mode);
        }
        Op::Pos { arg, dim } | Op::Coordinates { arg, dim } | Op::Nonzeros { arg, dim } => {
            c.value(*arg).kw("dim", dim);
        }
        Op::Assemble { coordinates, values, dim } => {
            c.value(*coordinates).value(*values).kw("dim", dim);
        }
        Op::DropDim { arg, dim } => {
            c.value(*arg).kw("dim", dim);
        }
        Op::AddDim { arg, dim, interval } => {
            c.value(*arg).kw("dim", format!("{dim}{interval}"));
        }
        Op::MapReduce { func, args, init, subscripts } => {
            c.function(*func).values(args).init(init).kw("einsum", format!("\"{subscripts}\""));
        }
        Op::MapReduceAff { func, args, init, domain, outputs, shape, out_map, maps, padding } => {
            c.function(*func)
                .values(args)
                .init(init)
                .kw("domain", list(domain))
                .kw("outputs", outputs)
                .kw("shape", list(shape))
                .kw("out_map", out_map)
                .kw("maps", list(maps));
            if let Some(p) = padding {
                c.kw("padding", p);
            }
        }
        Op::DotGeneral { lhs, rhs, ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            c.value(*lhs)
                .value(*rhs)
                .ring(*ring)
                .kw("lhs_contract", list(lhs_contract))
                .kw("rhs_contract", list(rhs_contract))
                .kw("lhs_batch", list(lhs_batch))
                .kw("rhs_batch", list(rhs_batch));
        }
        Op::Product2d { lhs, rhs, ring } => {
            c.value(*lhs).value(*rhs).ring(*ring);
        }
        Op::Transpose { arg, perm, kind } => {
            c.value(*arg).kw("perm", list(perm));
            if *kind == crate::PermKind::Scatter {
                c.kw("perm_kind", kind.keyword());
            }
        }
        Op::Broadcast { arg, shape } => {
            c.value(*arg).kw("shape", list(shape));
        }
        Op::BroadcastInDim { arg, shape, dims } => {
            c.value(*arg).kw("shape", list(shape)).kw("dims", list(dims));
        }
        Op::Map { kind: _, func, args } => {
            c.function(*func).values(args);
        }
        Op::Get { arg, indices } => {
            c.value(*arg).values(indices);
        }
        Op::Set { arg, indices, value } => {
            c.value(*arg).values(indices).value(*value);
        }
        Op::Pack { arg, tile, layout, padding } => {
            c.value(*arg).kw("tile", list(tile)).pack_layout(layout);
            if let Some(p) = padding {
                c.kw("padding", p);
            }
        }
        Op::Unpack { arg, layout, shape } => {
            c.value(*arg).pack_layout(layout);
            if !shape.is_empty() {
                c.kw("shape", list(shape));
            }
        }
        Op::Gather { source, indices, coordinates, mode } => {
            c.value(*source).value(*indices).kw("coordinates", list(coordinates)).mode(*mode);
        }
        Op::Scatter { source, dest, indices, coordinates, mode } => {
            c.value(*source).value(*dest).value(*indices).kw("coordinates", list(coordinates)).mode(*mode);
        }
        Op::CollapseShape { arg, groups, mode } => {
            c.value(*arg).kw("groups", nested_list(groups)).mode(*mode);
        }
        Op::ExpandShape { arg, groups, shape, mode } => {
            c.value(*arg).kw("groups", nested_list(groups)).kw("shape", list(shape)).mode(*mode);
        }
        Op::ToDevice { arg, device } => {
            let d = device.to_string();
            c.value(*arg).kw("device", if is_identifier(&d) { d } else { format!("{d:?}") });
        }
        Op::Distribute { arg, ranks, dim } => {
            c.value(*arg).kw("ranks", crate::Team { ranks: *ranks }).kw("dim", dim);
        }
    }
    write!(f, "{name}({})", c.parts.join(", "))
}
