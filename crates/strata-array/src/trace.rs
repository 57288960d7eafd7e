//! Traced arrays → one Strata function, built through the IR builder.
//!
//! The program computing an array is the function `@main` whose parameters are the evaluated
//! arrays (and data) it reads and whose statements are the traced operations, in dependency
//! order, each typed by the verifier's rules as it is added. Payload functions live in a
//! per-thread library ([`payload`]) and are imported into each program that applies them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use strata_entity::Handle;
use strata_ir::{BinaryOp, Function, FunctionKind, Module, Op, ParamMode, Scalar, UnaryOp, Value};
use strata_runtime::Tensor;
use strata_verify::build::{BuildError, ModuleBuilder};

use crate::array::{ir_type, Array, Kind, Node, Place};
use crate::error::{ArrayError, Result};

/// A traced program ready to run.
pub struct Program {
    /// The module (`@main` and the payloads it applies).
    pub module: Module,
    /// `@main`.
    pub entry: Handle<Function>,
    /// The values of `@main`'s parameters, in order (shared with their arrays).
    pub inputs: Vec<Rc<Tensor>>,
}

thread_local! {
    /// The payload functions traced ops apply, each built once (equal ones are one function).
    static PAYLOADS: RefCell<ModuleBuilder> = RefCell::new(ModuleBuilder::new());
    /// Each payload made so far, by what it was made from: a reduction asks for its payload on
    /// every call, and building it again (to find the equal one in the library) cost ~13 % of
    /// a 50-element `sum` evaluated.
    static MADE: RefCell<FxHashMap<PayloadKey, Handle<Function>>> = RefCell::new(FxHashMap::default());
}

/// What a payload function is made from (its builder's arguments).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PayloadKey {
    /// [`fold_payload`].
    Fold(Scalar, Option<BinaryOp>),
    /// [`running_fold_payload`].
    RunningFold(BinaryOp, Vec<usize>, Scalar, Place),
    /// [`arg_extreme_payload`].
    ArgExtreme(Scalar, bool),
}

/// The payload function `key` names: built by `build` in this thread's library the first time
/// (the existing one if an equal function is there), for a traced op to apply.
pub(crate) fn payload(
    key: PayloadKey,
    build: impl FnOnce(&mut ModuleBuilder) -> std::result::Result<Handle<Function>, BuildError>,
) -> Handle<Function> {
    if let Some(h) = MADE.with(|m| m.borrow().get(&key).copied()) {
        return h;
    }
    let h = PAYLOADS
        .with(|lib| build(&mut lib.borrow_mut()))
        .unwrap_or_else(|e| panic!("a payload of the array front end: {e}"));
    MADE.with(|m| m.borrow_mut().insert(key, h));
    h
}

/// `(acc: T, x: T) -> T` returning `op(acc, x)`, or `x` itself when `op` is `None` (the
/// payload of a view that only reads).
pub(crate) fn fold_payload(t: Scalar, op: Option<BinaryOp>) -> Handle<Function> {
    payload(PayloadKey::Fold(t, op), |lib| match op {
        Some(op) => lib.binary_function(op, t),
        None => {
            let ty = lib.scalar(t);
            let mut f = lib.function("read", FunctionKind::Func);
            f.param(ty, ParamMode::In);
            let x = f.param(ty, ParamMode::In);
            Ok(f.finish_returning(&[x]))
        }
    })
}

/// `(s: S, x: S) -> S` returning `op(s, x)` over slices of `shape` (the step of a running sum
/// or product).
pub(crate) fn running_fold_payload(op: BinaryOp, shape: &[usize], t: Scalar, place: &Place) -> Handle<Function> {
    payload(PayloadKey::RunningFold(op, shape.to_vec(), t, place.clone()), |lib| {
        let ty = ir_type(lib, shape, t, place);
        let name = if op == BinaryOp::Multiplies { "running_product" } else { "running_sum" };
        let mut f = lib.function(name, FunctionKind::Func);
        let s = f.param(ty, ParamMode::In);
        let x = f.param(ty, ParamMode::In);
        let r = f.op(Op::Binary { op, lhs: s, rhs: x })?;
        Ok(f.finish_returning(&[r]))
    })
}

/// `(acc: (T, index), x: T, j: index) -> (T, index)` keeping the best value and its position:
/// strictly better wins, so ties keep the first; the first NaN wins and stays (numpy).
pub(crate) fn arg_extreme_payload(t: Scalar, largest: bool) -> Handle<Function> {
    payload(PayloadKey::ArgExtreme(t, largest), |lib| {
        let ty = lib.scalar(t);
        let index = lib.scalar(Scalar::Index);
        let acc_t = lib.tuple(vec![ty, index]);
        let mut f = lib.function(if largest { "argmax" } else { "argmin" }, FunctionKind::Func);
        let acc = f.param(acc_t, ParamMode::In);
        let x = f.param(ty, ParamMode::In);
        let j = f.param(index, ParamMode::In);
        let best = f.op(Op::TupleGet { tuple: acc, index: 0 })?;
        let bi = f.op(Op::TupleGet { tuple: acc, index: 1 })?;
        let cmp = if largest { BinaryOp::Greater } else { BinaryOp::Less };
        let mut take = f.op(Op::Binary { op: cmp, lhs: x, rhs: best })?;
        if t.is_float() {
            let xn = f.op(Op::Unary { op: UnaryOp::IsNan, arg: x })?;
            let bn = f.op(Op::Unary { op: UnaryOp::IsNan, arg: best })?;
            let bok = f.op(Op::Unary { op: UnaryOp::Not, arg: bn })?;
            let first_nan = f.op(Op::Binary { op: BinaryOp::And, lhs: xn, rhs: bok })?;
            take = f.op(Op::Binary { op: BinaryOp::Or, lhs: take, rhs: first_nan })?;
        }
        let v = f.op(Op::Select { cond: take, on_true: x, on_false: best })?;
        let i = f.op(Op::Select { cond: take, on_true: j, on_false: bi })?;
        let r = f.op(Op::MakeTuple { fields: vec![v, i] })?;
        Ok(f.finish_returning(&[r]))
    })
}

/// The traced operations an array's program runs, found by walking back from it: what
/// [`Walk::key`] identifies and [`Walk::build`] makes a program of.
pub(crate) struct Walk {
    /// The operations, in dependency order, the root last.
    order: Vec<Array>,
    /// The arrays read as data, in parameter order.
    input_nodes: Vec<Array>,
    /// Their values.
    pub inputs: Vec<Rc<Tensor>>,
    /// Intermediate arrays the program also returns, after the root: those something outside
    /// the program still refers to (a Python variable, a later operation), which would
    /// otherwise be computed again by the next program that reads them.
    pub kept: Vec<Array>,
    /// Whether some value lives on a team (a distributed run under [`crate::spmd`]).
    pub on_team: bool,
}

/// What makes two walks the same program, exactly: each operation (its op with its payloads,
/// which equal payloads share in the thread's library), what it reads (earlier operations and
/// parameters by position), its shape, dtype, place and kind, and whether it is returned too;
/// each parameter's shape, dtype and place. A loop's later steps find their program by this key
/// without building it again.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct TraceKey(Vec<Part>);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Part {
    Input {
        shape: Vec<usize>,
        dtype: crate::dtype::DType,
        place: Place,
    },
    Op {
        op: Box<Op>,
        args: Vec<u32>,
        shape: Vec<usize>,
        dtype: crate::dtype::DType,
        place: Place,
        kind: Kind,
        kept: bool,
    },
}

/// The walk of the operations computing `root` (not yet evaluated).
pub(crate) fn walk(root: &Array) -> Walk {
    let mut seen: FxHashMap<*const Node, Option<usize>> = FxHashMap::default();
    let mut inputs = Vec::new();
    let mut input_nodes: Vec<Array> = Vec::new();
    // References to each traced node from the traced operations (the root: one, its caller's).
    let mut refs: FxHashMap<*const Node, usize> = FxHashMap::default();
    refs.insert(Rc::as_ptr(&root.0), 1);
    let mut order: Vec<Array> = Vec::new();
    // Iterative post-order: long chains of operations must not overflow the stack.
    let mut stack: Vec<(Array, bool)> = vec![(root.clone(), false)];
    while let Some((a, expanded)) = stack.pop() {
        let key = Rc::as_ptr(&a.0);
        if seen.contains_key(&key) {
            continue;
        }
        let value = a.0.value.borrow();
        let traced = a.0.op.borrow();
        let op = match (&*value, &*traced) {
            (Some(t), _) => {
                seen.insert(key, Some(inputs.len()));
                inputs.push(t.clone());
                drop(traced);
                drop(value);
                input_nodes.push(a);
                continue;
            }
            (None, Some(op)) => op,
            (None, None) => unreachable!("an array is data or an operation"),
        };
        if !expanded {
            stack.push((a.clone(), true));
            for arg in op.args.iter().rev() {
                *refs.entry(Rc::as_ptr(&arg.0)).or_default() += 1;
                stack.push((arg.clone(), false));
            }
            continue;
        }
        seen.insert(key, None);
        drop(traced);
        drop(value);
        order.push(a);
    }
    // Operations referred to from outside the program are returned too (not on teams, whose
    // distributed runs return one value), except those reading no array (constants, ranges):
    // a program that reads one later computes it where it reads it, which costs no more than
    // writing it out here (`x = full(…); x[1:-1] = y` would otherwise write the whole constant
    // array beside the result, for an array nobody reads again).
    let on_team = order.iter().chain(&input_nodes).any(|a| a.0.place.team.is_some());
    let kept: Vec<Array> = order
        .iter()
        .filter(|a| {
            let p = Rc::as_ptr(&a.0);
            let reads_arrays = a.0.op.borrow().as_ref().is_some_and(|op| !op.args.is_empty());
            // `order` holds one reference of its own.
            !on_team
                && p != Rc::as_ptr(&root.0)
                && a.0.kind == Kind::Array
                && reads_arrays
                && Rc::strong_count(&a.0) > refs[&p] + 1
        })
        .cloned()
        .collect();
    Walk { order, input_nodes, inputs, kept, on_team }
}

impl Walk {
    /// The program's [`TraceKey`].
    pub(crate) fn key(&self) -> TraceKey {
        let mut at: FxHashMap<*const Node, u32> = FxHashMap::default();
        at.reserve(self.order.len() + self.input_nodes.len());
        let mut parts = Vec::with_capacity(self.order.len() + self.input_nodes.len());
        for a in &self.input_nodes {
            at.insert(Rc::as_ptr(&a.0), parts.len() as u32);
            parts.push(Part::Input { shape: a.0.shape.clone(), dtype: a.0.dtype, place: a.0.place.clone() });
        }
        let kept: Vec<*const Node> = self.kept.iter().map(|a| Rc::as_ptr(&a.0)).collect();
        for a in &self.order {
            let traced = a.0.op.borrow();
            let traced = traced.as_ref().expect("traced");
            let p = Rc::as_ptr(&a.0);
            parts.push(Part::Op {
                op: Box::new(traced.op.clone()),
                args: traced.args.iter().map(|x| at[&Rc::as_ptr(&x.0)]).collect(),
                shape: a.0.shape.clone(),
                dtype: a.0.dtype,
                place: a.0.place.clone(),
                kind: a.0.kind,
                kept: kept.contains(&p),
            });
            at.insert(p, parts.len() as u32 - 1);
        }
        TraceKey(parts)
    }

    /// Whether no operation is traced (the root holds its values).
    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The program: `@main` built through the IR builder, each operation typed as it is added.
    ///
    /// # Errors
    /// [`ArrayError::Internal`] where the IR refuses an operation or types it other than the
    /// front end expects.
    pub(crate) fn build(self) -> Result<Program> {
        let Walk { order, input_nodes, inputs, kept, on_team: _ } = self;
        let root = order.last().expect("a traced operation").clone();
        let root = &root;
        let mut mb = ModuleBuilder::new();
        let mut payloads = HashMap::new();
        let internal = |e: BuildError, so_far: &ModuleBuilder| ArrayError::Internal {
            message: e.to_string(),
            program: so_far.module().to_string(),
        };
        let param_types: Vec<_> =
            input_nodes.iter().map(|a| ir_type(&mut mb, &a.0.shape, a.0.dtype, &a.0.place)).collect();
        let expected: Vec<_> = order
            .iter()
            .map(|a| match a.0.kind {
                Kind::Array => Some(ir_type(&mut mb, &a.0.shape, a.0.dtype, &a.0.place)),
                Kind::Scalar => Some(mb.scalar(a.0.dtype)),
                Kind::Operand => None,
            })
            .collect();
        // Payloads first: `@main` applies them.
        PAYLOADS.with(|lib| {
            let lib = lib.borrow();
            for a in &order {
                for f in a.0.op.borrow().as_ref().expect("traced").op.functions() {
                    payloads.entry(f).or_insert_with(|| mb.import(lib.module(), f));
                }
            }
        });
        let mut f = mb.function("main", FunctionKind::Func);
        let mut values: HashMap<*const Node, Value> = HashMap::new();
        for (a, &ty) in input_nodes.iter().zip(&param_types) {
            values.insert(Rc::as_ptr(&a.0), f.param(ty, ParamMode::In));
        }
        for (a, want) in order.iter().zip(&expected) {
            let traced = a.0.op.borrow();
            let traced = traced.as_ref().expect("traced");
            let mut op = traced.op.clone();
            for v in op.operands_mut() {
                *v = values[&Rc::as_ptr(&traced.args[v.index()].0)];
            }
            if let Some(g) = op.function_mut() {
                *g = payloads[g];
            }
            let built = match want {
                Some(ty) if op.has_declared_type() => f.op_as(op, *ty),
                _ => f.op(op),
            };
            let v = match built {
                Ok(v) => v,
                Err(e) => {
                    drop(f);
                    return Err(internal(e, &mb));
                }
            };
            if let Some(ty) = want.filter(|&ty| f.ty(v) != ty) {
                let e = format!("the front end expected `{}`, the IR gives `{}`", f.show(ty), f.show(f.ty(v)));
                drop(f);
                return Err(ArrayError::Internal { message: e, program: mb.module().to_string() });
            }
            values.insert(Rc::as_ptr(&a.0), v);
        }
        let results: Vec<Value> = std::iter::once(root).chain(&kept).map(|a| values[&Rc::as_ptr(&a.0)]).collect();
        let entry = f.finish_returning(&results);
        Ok(Program { module: mb.into_module(), entry, inputs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload asked for again is the function its builder would make (the library's equal
    /// function), and payloads made from different arguments stay different functions.
    #[test]
    fn a_payload_asked_for_again_is_the_one_its_builder_makes() {
        let add = fold_payload(Scalar::F64, Some(BinaryOp::Plus));
        assert_eq!(fold_payload(Scalar::F64, Some(BinaryOp::Plus)), add);
        let built = PAYLOADS.with(|lib| lib.borrow_mut().binary_function(BinaryOp::Plus, Scalar::F64)).unwrap();
        assert_eq!(built, add, "the memo and the builder agree");
        let others = [
            fold_payload(Scalar::F32, Some(BinaryOp::Plus)),
            fold_payload(Scalar::F64, Some(BinaryOp::Maximum)),
            fold_payload(Scalar::F64, None),
            arg_extreme_payload(Scalar::F64, true),
            arg_extreme_payload(Scalar::F64, false),
            running_fold_payload(BinaryOp::Plus, &[3], Scalar::F64, &Place::default()),
            running_fold_payload(BinaryOp::Plus, &[4], Scalar::F64, &Place::default()),
        ];
        let mut all = vec![add];
        all.extend(others);
        for (i, a) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|b| b != a), "payload {i} is one of its own");
        }
        assert_eq!(arg_extreme_payload(Scalar::F64, true), all[4]);
        assert_eq!(running_fold_payload(BinaryOp::Plus, &[4], Scalar::F64, &Place::default()), all[7]);
    }
}
