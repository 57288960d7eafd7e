//! The meaning of each operation.

use strata_ir::{BinaryOp, DimName, Function, Interval, Literal, Op, Scalar, Span, Value};
use strata_runtime::{Column, Data, Elem, ElemType, Sv, Tensor, ValueType};

use crate::index::{for_each_coord, index_map, offset_at};
use crate::nested;
use crate::structured as st;
use crate::{Interpreter, RunError};

/// What an op evaluation sees.
pub(crate) struct OpCx<'a, 'm> {
    pub interp: &'a Interpreter<'m>,
    pub env: &'a [Option<Tensor>],
    pub span: Span,
    /// The result type (the verified declared type).
    pub ty: &'a ValueType,
}

type R<T> = Result<T, RunError>;

impl OpCx<'_, '_> {
    pub(crate) fn arg(&self, v: Value) -> &Tensor {
        self.env[v.index()].as_ref().expect("operands are defined before use")
    }

    pub(crate) fn err(&self, code: &'static str, message: impl Into<String>) -> RunError {
        RunError { code, message: message.into(), span: self.span }
    }
}

/// Elementwise evaluation over the result type: `f` gets each operand's element (zero if
/// absent) and each operand's presence, and returns the result element or `None` for absent.
fn elementwise_with(cx: &OpCx, args: &[&Tensor], mut f: impl FnMut(&[Elem], &[bool]) -> R<Option<Elem>>) -> R<Tensor> {
    let maps: Vec<Vec<Option<usize>>> = args.iter().map(|a| index_map(&cx.ty.levels, &a.ty, &[])).collect();
    let n = cx.ty.len();
    let mut out = Tensor::zeros(cx.ty);
    let mut present = vec![true; n];
    let mut elems = Vec::with_capacity(args.len());
    let mut here = Vec::with_capacity(args.len());
    for i in 0..n {
        elems.clear();
        here.clear();
        for (a, m) in args.iter().zip(&maps) {
            let j = m[i].expect("verified broadcast");
            here.push(a.is_present(j));
            elems.push(a.get(j));
        }
        match f(&elems, &here)? {
            Some(e) => out.data.set(i, e),
            None => present[i] = false,
        }
    }
    out.present = Some(present);
    out.normalize_presence();
    Ok(out)
}

/// Elementwise evaluation where the result exists only where every operand does; `f` is not
/// called for absent elements (so, e.g., a division by an absent zero is no error).
fn elementwise(cx: &OpCx, args: &[&Tensor], mut f: impl FnMut(&[Elem]) -> R<Elem>) -> R<Tensor> {
    elementwise_with(cx, args, |e, here| if here.iter().all(|&h| h) { f(e).map(Some) } else { Ok(None) })
}

/// [`elementwise`] where every operand is a dense tensor of scalars (no absent elements): the
/// same values with no elements boxed and no presence tracked; an operand over the result's
/// own levels is read at the same position, others through their index map. `None` where an
/// operand holds tuples, tensors or absent elements (the general path applies).
fn dense_scalars(cx: &OpCx, args: &[&Tensor], mut f: impl FnMut(&[Sv]) -> R<Sv>) -> Option<R<Tensor>> {
    let columns = args.iter().map(|a| match (&a.data, &a.present) {
        (Data::Scalars(c), None) => Some(c),
        _ => None,
    });
    let columns: Vec<&Column> = columns.collect::<Option<_>>()?;
    let access: Vec<crate::dense::Access> =
        args.iter().map(|a| crate::dense::Access::of(&cx.ty.levels, &a.ty)).collect::<Option<_>>()?;
    let mut out = Tensor::zeros(cx.ty);
    let Data::Scalars(column) = &mut out.data else { return None };
    let mut values = Vec::with_capacity(args.len());
    let mut failed = None;
    crate::dense::for_each_row(&cx.ty.levels, &access, |start, at, steps, len| {
        for i in 0..len {
            if failed.is_some() {
                return;
            }
            values.clear();
            values.extend(columns.iter().zip(at.iter().zip(steps)).map(|(c, (&o, &s))| c.get(o + i * s)));
            match f(&values) {
                Ok(v) => column.set(start + i, v),
                Err(e) => failed = Some(e),
            }
        }
    });
    Some(failed.map_or(Ok(out), Err))
}

fn scalar(e: &Elem) -> Sv {
    e.scalar().expect("verified scalar element")
}

pub(crate) fn literal_elem(lit: &Literal, t: &ElemType) -> Elem {
    match (lit, t) {
        (Literal::Tuple(items), ElemType::Tuple(fs)) => {
            Elem::Tuple(items.iter().zip(fs).map(|(l, f)| literal_elem(l, f)).collect())
        }
        (l, ElemType::Scalar(s)) => Elem::Scalar(Sv::from_literal(l, *s).unwrap_or(Sv::zero(*s))),
        (l, ElemType::Tensor(vt)) => Elem::Tensor(filled(vt, &literal_elem(l, &vt.element))),
        (_, t) => Elem::zero(t),
    }
}

/// A tensor of type `ty` with every element `e`.
fn filled(ty: &ValueType, e: &Elem) -> Tensor {
    let mut t = Tensor::zeros(ty);
    for i in 0..t.len() {
        t.data.set(i, e.clone());
    }
    t
}

pub(crate) fn eval(cx: &OpCx, op: &Op) -> R<Tensor> {
    match op {
        Op::Constant { value } => Ok(filled(cx.ty, &literal_elem(value, &cx.ty.element))),
        Op::Unary { op, arg } => match dense_scalars(cx, &[cx.arg(*arg)], |v| Ok(v[0].unary(*op))) {
            Some(done) => done,
            None => elementwise(cx, &[cx.arg(*arg)], |e| Ok(Elem::Scalar(scalar(&e[0]).unary(*op)))),
        },
        Op::Binary { op, lhs, rhs } => {
            let apply = |a: Sv, b: Sv| binary(cx, *op, a, b);
            let args = [cx.arg(*lhs), cx.arg(*rhs)];
            if let Some(done) = crate::dense::float_arithmetic(cx.ty, *op, args[0], args[1]) {
                return Ok(done);
            }
            match dense_scalars(cx, &args, |v| apply(v[0], v[1])) {
                Some(done) => done,
                None => elementwise(cx, &args, |e| apply(scalar(&e[0]), scalar(&e[1])).map(Elem::Scalar)),
            }
        }
        // Only the chosen branch needs to exist: `select(can_deref(x), x, 0)` fills skipped
        // neighbors, as in GT4Py.
        Op::Select { cond, on_true, on_false } => {
            elementwise_with(cx, &[cx.arg(*cond), cx.arg(*on_true), cx.arg(*on_false)], |e, here| {
                if !here[0] {
                    return Ok(None);
                }
                let k = if scalar(&e[0]).as_bool() == Some(true) { 1 } else { 2 };
                Ok(here[k].then(|| e[k].clone()))
            })
        }
        Op::Cast { arg, to } => match dense_scalars(cx, &[cx.arg(*arg)], |v| Ok(v[0].cast(*to))) {
            Some(done) => done,
            None => elementwise(cx, &[cx.arg(*arg)], |e| Ok(Elem::Scalar(scalar(&e[0]).cast(*to)))),
        },
        Op::MakeTuple { fields } => {
            let args: Vec<&Tensor> = fields.iter().map(|&f| cx.arg(f)).collect();
            elementwise(cx, &args, |e| Ok(Elem::Tuple(e.to_vec())))
        }
        Op::TupleGet { tuple, index } => {
            let t = cx.arg(*tuple);
            let Data::Tuple(fields) = &t.data else { unreachable!("verified tuple") };
            Ok(Tensor { ty: cx.ty.clone(), data: fields[*index as usize].clone(), present: t.present.clone() })
        }
        Op::Call { func, args, result } => {
            let args: Vec<Tensor> = args.iter().map(|&a| cx.arg(a).clone()).collect();
            cx.interp.call_result(*func, args, *result as usize)
        }
        Op::CartesianShift { arg, .. } => {
            // The data does not move; only the intervals do.
            let t = cx.arg(*arg);
            Ok(Tensor { ty: cx.ty.clone(), data: t.data.clone(), present: t.present.clone() })
        }
        Op::ShiftInit { arg, table } => neighbors(cx, cx.arg(*arg), cx.arg(*table), None),
        Op::UnstructuredShift { arg, table, neighbor } => neighbors(cx, cx.arg(*arg), cx.arg(*table), Some(*neighbor)),
        Op::ShiftApply { arg, neighbor } => {
            let t = cx.arg(*arg);
            let nb = DimName::neighbor_counter(highest_counter(&t.ty));
            Ok(gather_by_map(cx.ty, t, &index_map(&cx.ty.levels, &t.ty, &[(nb, *neighbor)])))
        }
        Op::CanDeref { arg } => {
            let t = cx.arg(*arg);
            let col = Column::from_fn(Scalar::Bool, t.len(), |i| Sv::Bool(t.is_present(i)));
            Ok(Tensor { ty: cx.ty.clone(), data: Data::Scalars(col), present: None })
        }
        Op::Reduce { func, args, init } => reduce(cx, *func, args, init),
        Op::Scan { func, args, dim, forward, init } => scan(cx, *func, args, dim, *forward, init),
        Op::Subset { arg, .. } => {
            let t = cx.arg(*arg);
            Ok(gather_by_map(cx.ty, t, &index_map(&cx.ty.levels, &t.ty, &[])))
        }
        Op::AddDim { arg, .. } => {
            let t = cx.arg(*arg);
            Ok(gather_by_map(cx.ty, t, &index_map(&cx.ty.levels, &t.ty, &[])))
        }
        Op::Pos { dim, .. } => {
            let start = cx.ty.levels.iter().find(|l| &l.name == dim).map_or(0, |l| l.interval.start);
            let col = Column::from_fn(Scalar::Index, cx.ty.len(), |i| Sv::Index(start + i as i64));
            Ok(Tensor { ty: cx.ty.clone(), data: Data::Scalars(col), present: None })
        }
        Op::Concat { args, dim, mode: _ } => concat(cx, args, dim),
        Op::MapReduce { func, args, init, subscripts } => st::map_reduce(cx, *func, args, init, subscripts),
        Op::MapReduceAff { func, args, init, domain, outputs, shape: _, out_map, maps, padding } => {
            st::map_reduce_aff(cx, *func, args, init, domain, *outputs, out_map, maps, padding.as_ref())
        }
        Op::DotGeneral { lhs, rhs, ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            st::dot_general(cx, *lhs, *rhs, *ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch)
        }
        Op::Product2d { lhs, rhs, ring } => st::dot_general(cx, *lhs, *rhs, *ring, &[1], &[0], &[], &[]),
        Op::Transpose { arg, perm, kind } => st::transpose(cx, *arg, &kind.as_gather(perm)),
        Op::Broadcast { arg, shape } => st::broadcast_in_dim(cx, *arg, &(0..shape.len() as u32).collect::<Vec<_>>()),
        Op::BroadcastInDim { arg, shape: _, dims } => st::broadcast_in_dim(cx, *arg, dims),
        Op::Map { kind: _, func, args } => st::map(cx, *func, args),
        Op::Get { arg, indices } => st::get(cx, *arg, indices),
        Op::Set { arg, indices, value } => st::set(cx, *arg, indices, *value),
        Op::Pack { arg, tile, layout, padding } => nested::pack(cx, *arg, tile, layout, padding.as_ref()),
        Op::Unpack { arg, layout, shape: _ } => nested::unpack(cx, *arg, layout),
        Op::Gather { source, indices, coordinates, mode } => st::gather(cx, *source, *indices, coordinates, *mode),
        Op::Scatter { source, dest, indices, coordinates, mode } => {
            st::scatter(cx, *source, *dest, *indices, coordinates, *mode)
        }
        Op::CollapseShape { arg, .. } | Op::ExpandShape { arg, .. } => Ok(st::retype(cx, *arg)),
        Op::Convert { arg, mode: _ } if cx.arg(*arg).ty.element != cx.ty.element => nested::convert_nesting(cx, *arg),
        Op::Convert { arg, mode: _ } => st::convert(cx, *arg),
        Op::Coordinates { arg, dim } => crate::entries::entries(cx, *arg, dim, true),
        Op::Nonzeros { arg, dim } => crate::entries::entries(cx, *arg, dim, false),
        Op::Assemble { coordinates, values, dim } => crate::entries::assemble(cx, *coordinates, *values, dim),
        // Dropping an extent-1 dimension keeps the row-major order.
        Op::DropDim { arg, .. } | Op::ToDevice { arg, .. } | Op::Distribute { arg, .. } | Op::Collect { arg } => {
            Ok(st::retype(cx, *arg))
        }
    }
}

/// `a op b`, or the run's error naming the operands (an integer division by zero).
pub(crate) fn binary(cx: &OpCx, op: BinaryOp, a: Sv, b: Sv) -> R<Sv> {
    a.binary(op, b)
        .map_err(|err| cx.err("strata::run::division_by_zero", format!("{err} ({a} {} {b})", binary_symbol(op))))
}

fn binary_symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Divides => "/",
        BinaryOp::Modulo => "%",
        _ => op.keyword(),
    }
}

fn highest_counter(ty: &ValueType) -> u32 {
    ty.levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max().expect("verified neighbor dimension")
}

/// The result of type `ty` whose element `i` is `t`'s element `map[i]`.
fn gather_by_map(ty: &ValueType, t: &Tensor, map: &[Option<usize>]) -> Tensor {
    // An operand without elements (an empty interval) maps every point to absent.
    if t.is_empty() {
        let mut out = Tensor::zeros(ty);
        out.present = Some(vec![false; out.len()]);
        return out;
    }
    let positions: Vec<usize> = map.iter().map(|m| m.unwrap_or(0)).collect();
    let data = t.data.select(&positions);
    let present: Vec<bool> = map.iter().map(|m| m.is_some_and(|j| t.is_present(j))).collect();
    let mut out = Tensor { ty: ty.clone(), data, present: Some(present) };
    out.clear_absent();
    out
}

/// `shift_init` (`neighbor = None`) and `unstructured_shift`: looks up each destination's
/// neighbors through the table; the skip value `-1` makes the element absent.
fn neighbors(cx: &OpCx, x: &Tensor, table: &Tensor, neighbor: Option<i64>) -> R<Tensor> {
    let tag = table.ty.levels.iter().find(|l| l.name.table_source().is_some()).expect("verified table");
    let src = tag.name.table_source().expect("tag");
    let nb = if neighbor.is_none() { Some(DimName::neighbor_counter(highest_counter(cx.ty))) } else { None };
    let src_interval = x.ty.levels.iter().find(|l| l.name == src).expect("verified source").interval;
    let n = cx.ty.len();
    let mut positions = Vec::with_capacity(n);
    let mut present = Vec::with_capacity(n);
    let mut failure = None;
    for_each_coord(&cx.ty.levels, |_, coord| {
        if failure.is_some() {
            return;
        }
        let at = |name: &DimName| cx.ty.levels.iter().position(|l| &l.name == name).map(|p| coord[p]);
        let j = match (&nb, neighbor) {
            (Some(nb), _) => at(nb).expect("counter"),
            (None, Some(j)) => j,
            (None, None) => unreachable!(),
        };
        // The table's other dimensions (its destination, and any extra it shares with the
        // operand) are the result's: read the entry at the result's coordinates.
        let entry = offset_at(table, |name| if *name == tag.name { Some(j) } else { at(name) })
            .map(|o| (table.is_present(o), table.scalar_at(o).as_i128()));
        match entry {
            // -1 is the skip value; every other entry is a coordinate of the source interval
            // (negative ones included, for intervals that start below zero).
            Some((true, -1)) | Some((false, _)) => {
                positions.push(0);
                present.push(false);
            }
            Some((true, t)) => {
                // Compared wide: an unsigned entry beyond i64::MAX never aliases the skip value.
                if t < src_interval.start as i128 || t >= src_interval.stop as i128 {
                    let place: Vec<String> = table
                        .ty
                        .levels
                        .iter()
                        .map(|l| {
                            format!("{}={}", l.name, if l.name == tag.name { j } else { at(&l.name).unwrap_or(0) })
                        })
                        .collect();
                    failure = Some(cx.err(
                        "strata::run::index_out_of_interval",
                        format!("neighbor table entry {t} at {} is outside `{src}{src_interval}`", place.join(", ")),
                    ));
                    return;
                }
                let t = t as i64;
                let o = offset_at(x, |name| if *name == src { Some(t) } else { at(name) }).expect("verified dims");
                positions.push(o);
                present.push(x.is_present(o));
            }
            None => {
                positions.push(0);
                present.push(false);
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    // Every entry was the skip value if the source is empty (any other failed above).
    let data = if x.is_empty() { Data::zeros(&cx.ty.element, positions.len()) } else { x.data.select(&positions) };
    let mut out = Tensor { ty: cx.ty.clone(), data, present: Some(present) };
    out.clear_absent();
    Ok(out)
}

/// The slice of `t` at `dim = k` as a tensor of type `ty` (which lacks `dim`).
fn slice(t: &Tensor, ty: &ValueType, dim: &DimName, k: i64) -> Tensor {
    if !t.ty.levels.iter().any(|l| &l.name == dim) {
        return Tensor { ty: ty.clone(), ..t.clone() };
    }
    gather_by_map(ty, t, &index_map(&ty.levels, &t.ty, &[(dim.clone(), k)]))
}

fn param_types(cx: &OpCx, func: strata_entity::Handle<Function>) -> Vec<ValueType> {
    let f = &cx.interp.module.functions[func];
    f.params.iter().map(|&p| cx.interp.value_type(f.exprs[p].ty)).collect()
}

/// The cross-sections a `reduce` or `scan` step works on: the state (`result` without `dim`)
/// and each operand without `dim`, and whether the payload is written over elements (then
/// applied at every point of the cross-section, see [`step_per_element`]).
fn cross_sections(
    cx: &OpCx,
    func: strata_entity::Handle<Function>,
    tensors: &[&Tensor],
    result: &ValueType,
    dim: &DimName,
) -> (Vec<ValueType>, bool) {
    let params = param_types(cx, func);
    let state =
        ValueType { levels: result.levels.iter().filter(|l| &l.name != dim).cloned().collect(), ..result.clone() };
    if params[0] == state {
        return (params, false);
    }
    let mut types = vec![state];
    for t in tensors {
        let levels: Vec<_> = t.ty.levels.iter().filter(|l| &l.name != dim).cloned().collect();
        types.push(ValueType { is_tensor: t.ty.is_tensor, levels, ..t.ty.clone() });
    }
    (types, true)
}

/// One step of an element-wise payload: `func` applied at every point of the state, reading
/// each operand's cross-section through `maps`.
fn step_per_element(
    cx: &OpCx,
    func: strata_entity::Handle<Function>,
    state: &Tensor,
    operands: &[Tensor],
    maps: &[Vec<Option<usize>>],
) -> R<Tensor> {
    let mut next = Tensor::zeros(&state.ty);
    for i in 0..state.len() {
        let mut elems = vec![state.get(i)];
        for (a, m) in operands.iter().zip(maps) {
            elems.push(a.get(m[i].unwrap_or(0)));
        }
        next.data.set(i, st::call_elems(cx, func, elems)?);
    }
    Ok(next)
}

/// `reduce`: folds `func` over the highest neighbor dimension, skipping absent neighbors.
fn reduce(cx: &OpCx, func: strata_entity::Handle<Function>, args: &[Value], init: &Literal) -> R<Tensor> {
    let tensors: Vec<&Tensor> = args.iter().map(|&a| cx.arg(a)).collect();
    let k = tensors
        .iter()
        .filter_map(|t| t.ty.levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max())
        .max()
        .expect("verified");
    let nb = DimName::neighbor_counter(k);
    let interval = tensors.iter().find_map(|t| t.ty.levels.iter().find(|l| l.name == nb)).expect("nb").interval;
    let (params, per_element) = cross_sections(cx, func, &tensors, cx.ty, &nb);
    let mut acc = filled(cx.ty, &literal_elem(init, &cx.ty.element));
    // Where each accumulator element reads each argument's cross-section (the same for every
    // neighbor).
    let maps: Vec<Vec<Option<usize>>> = params[1..].iter().map(|p| index_map(&acc.ty.levels, p, &[])).collect();
    for j in interval.start..interval.stop {
        let mut call_args = vec![acc.clone()];
        for (t, pty) in tensors.iter().zip(&params[1..]) {
            call_args.push(slice(t, pty, &nb, j));
        }
        // A step exists where every argument does, whatever the function reads: a skipped
        // neighbor is skipped for the whole step (counting neighbors must not count it).
        let step: Vec<bool> = (0..acc.len())
            .map(|i| call_args[1..].iter().zip(&maps).all(|(a, m)| m[i].is_none_or(|k| a.is_present(k))))
            .collect();
        let next = if per_element {
            step_per_element(cx, func, &acc, &call_args[1..], &maps)?
        } else {
            cx.interp.call(func, call_args)?
        };
        // Keep the accumulator where the step is skipped (or its result is absent).
        for (i, _) in step.iter().enumerate().filter(|&(i, &here)| here && next.is_present(i)) {
            acc.data.set(i, next.get(i));
        }
    }
    Ok(acc)
}

/// `scan`: runs `func` along `dim` in the given direction, writing each state. A step exists
/// where every argument does: where one is absent (a skipped neighbor, a position past a ragged
/// run's end — a segmented scan restarts nothing, it just has no step there) the state is kept
/// and the result is absent, whatever the function reads.
fn scan(
    cx: &OpCx,
    func: strata_entity::Handle<Function>,
    args: &[Value],
    dim: &DimName,
    forward: bool,
    init: &strata_ir::Init,
) -> R<Tensor> {
    let tensors: Vec<&Tensor> = args.iter().map(|&a| cx.arg(a)).collect();
    let (params, per_element) = cross_sections(cx, func, &tensors, cx.ty, dim);
    let state_ty = &params[0];
    let interval = cx.ty.levels.iter().find(|l| &l.name == dim).expect("verified scan dim").interval;
    let mut state = match init {
        strata_ir::Init::Literal(l) => filled(state_ty, &literal_elem(l, &state_ty.element)),
        strata_ir::Init::Value(v) => Tensor { ty: state_ty.clone(), ..cx.arg(*v).clone() },
    };
    let mut out = Tensor::zeros(cx.ty);
    let mut present = vec![true; out.len()];
    let ks: Vec<i64> = if forward {
        (interval.start..interval.stop).collect()
    } else {
        (interval.start..interval.stop).rev().collect()
    };
    // Where each state element reads each argument's cross-section (the same at every step).
    let maps: Vec<Vec<Option<usize>>> = params[1..].iter().map(|p| index_map(&state.ty.levels, p, &[])).collect();
    for k in ks {
        let mut call_args = vec![state.clone()];
        for (t, pty) in tensors.iter().zip(&params[1..]) {
            call_args.push(slice(t, pty, dim, k));
        }
        let step: Vec<bool> = (0..state.len())
            .map(|i| call_args[1..].iter().zip(&maps).all(|(a, m)| m[i].is_none_or(|j| a.is_present(j))))
            .collect();
        let mut next = if per_element {
            step_per_element(cx, func, &state, &call_args[1..], &maps)?
        } else {
            cx.interp.call(func, call_args)?
        };
        if step.iter().any(|&here| !here) {
            let mut next_present: Vec<bool> = (0..next.len()).map(|i| next.is_present(i)).collect();
            for (i, _) in step.iter().enumerate().filter(|&(_, &here)| !here) {
                next.data.set(i, state.get(i));
                next_present[i] = state.is_present(i);
            }
            next.present = Some(next_present);
            next.normalize_presence();
        }
        state = next;
        // Write the state into the column at dim = k.
        let map = index_map(&state.ty.levels, &out.ty, &[(dim.clone(), k)]);
        for (i, o) in map.iter().enumerate() {
            let o = o.expect("column inside the result");
            out.data.set(o, state.get(i));
            present[o] = step[i] && state.is_present(i);
        }
    }
    out.present = Some(present);
    out.normalize_presence();
    Ok(out)
}

fn concat(cx: &OpCx, args: &[Value], dim: &DimName) -> R<Tensor> {
    let pieces: Vec<&Tensor> = args.iter().map(|&a| cx.arg(a)).collect();
    let pos = cx.ty.levels.iter().position(|l| &l.name == dim).expect("verified");
    let positional = dim.position().is_some();
    // Where each piece starts along `dim` in the result.
    let mut starts = Vec::new();
    let mut next = cx.ty.levels[pos].interval.start;
    for p in &pieces {
        let iv = p.ty.levels[pos].interval;
        starts.push(if positional { next } else { iv.start });
        next += iv.len() as i64;
    }
    let mut out = Tensor::zeros(cx.ty);
    let mut present = vec![true; out.len()];
    for_each_coord(&cx.ty.levels, |i, coord| {
        let c = coord[pos];
        let k = (0..pieces.len()).rev().find(|&k| c >= starts[k]).expect("inside the result");
        let p = pieces[k];
        let local = c - starts[k] + p.ty.levels[pos].interval.start;
        let o = offset_at(p, |name| {
            let r = cx.ty.levels.iter().position(|l| &l.name == name)?;
            Some(if r == pos { local } else { coord[r] })
        })
        .expect("verified pieces");
        out.data.set(i, p.get(o));
        present[i] = p.is_present(o);
    });
    out.present = Some(present);
    out.normalize_presence();
    Ok(out)
}

/// A program assignment: writes `value` over `target`'s domain (or a sub-domain).
pub(crate) fn assign(
    target: &mut Tensor,
    domain: Option<&[(DimName, Interval)]>,
    value: &Tensor,
) -> Result<(), String> {
    let mut written = target.ty.levels.clone();
    for (name, iv) in domain.unwrap_or(&[]) {
        if let Some(l) = written.iter_mut().find(|l| &l.name == name) {
            l.interval = *iv;
        }
    }
    let to_target = index_map(&written, &target.ty, &[]);
    let from_value = index_map(&written, &value.ty, &[]);
    let mut present = target.present.take().unwrap_or_else(|| vec![true; target.len()]);
    for (t, v) in to_target.iter().zip(&from_value) {
        let (Some(t), Some(v)) = (t, v) else {
            return Err("the assigned value does not cover the written domain".into());
        };
        target.data.set(*t, value.get(*v));
        present[*t] = value.is_present(*v);
    }
    target.present = Some(present);
    target.normalize_presence();
    Ok(())
}
