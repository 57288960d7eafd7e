//! The typing rules, one module per op family. Each rule takes the operands' (already
//! verified) types and returns the result type or one diagnostic.

pub(crate) mod domain;
pub(crate) mod elementwise;
pub(crate) mod entries;
pub(crate) mod nested;
pub(crate) mod placement;
pub(crate) mod reshape;
pub(crate) mod shifts;
pub(crate) mod structured;

use strata_entity::Handle;
use strata_ir::{Op, Type};

use crate::context::{Cx, RuleResult};

/// Infers the result type of `op`; `declared` is the type written in the text, used by the few
/// ops whose type is declared rather than inferred.
pub(crate) fn infer(cx: &mut Cx, op: &Op, declared: Handle<Type>) -> RuleResult {
    match op {
        Op::Constant { value } => elementwise::constant(cx, value, declared),
        Op::Unary { op, arg } => elementwise::unary(cx, *op, *arg),
        Op::Binary { op, lhs, rhs } => elementwise::binary(cx, *op, *lhs, *rhs),
        Op::Select { cond, on_true, on_false } => elementwise::select(cx, *cond, *on_true, *on_false),
        Op::Cast { arg, to } => elementwise::cast(cx, *arg, *to),
        Op::MakeTuple { fields } => elementwise::make_tuple(cx, fields),
        Op::TupleGet { tuple, index } => elementwise::tuple_get(cx, *tuple, *index),
        Op::Call { func, args, result } => elementwise::check_call(cx, *func, args, *result as usize),
        Op::CartesianShift { arg, dim, offset } => shifts::cartesian_shift(cx, *arg, dim, *offset),
        Op::ShiftInit { arg, table } => shifts::shift_init(cx, *arg, *table),
        Op::ShiftApply { arg, neighbor } => shifts::shift_apply(cx, *arg, *neighbor),
        Op::UnstructuredShift { arg, table, neighbor } => shifts::unstructured_shift(cx, *arg, *table, *neighbor),
        Op::CanDeref { arg } => shifts::can_deref(cx, *arg),
        Op::Reduce { func, args, init } => shifts::reduce(cx, *func, args, init),
        Op::Scan { func, args, dim, forward: _, init } => shifts::scan(cx, *func, args, dim, init),
        Op::Subset { arg, domain } => domain::subset(cx, *arg, domain),
        Op::Concat { args, dim, mode: _ } => domain::concat(cx, args, dim),
        Op::Pos { arg, dim } => domain::pos(cx, *arg, dim),
        Op::AddDim { arg, dim, interval } => domain::add_dim(cx, *arg, dim, *interval),
        Op::DropDim { arg, dim } => domain::drop_dim(cx, *arg, dim),
        Op::MapReduce { func, args, init, subscripts } => structured::map_reduce(cx, *func, args, init, subscripts),
        Op::MapReduceAff { func, args, init, domain, outputs, shape, out_map, maps, padding } => {
            structured::map_reduce_aff(cx, *func, args, init, domain, *outputs, shape, out_map, maps, padding.as_ref())
        }
        Op::DotGeneral { lhs, rhs, ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            structured::dot_general(cx, *lhs, *rhs, *ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch)
        }
        Op::Product2d { lhs, rhs, ring } => structured::product_2d(cx, *lhs, *rhs, *ring),
        Op::Transpose { arg, perm, kind } => structured::transpose(cx, *arg, perm, *kind),
        Op::Broadcast { arg, shape } => structured::broadcast_op(cx, *arg, shape),
        Op::BroadcastInDim { arg, shape, dims } => structured::broadcast_in_dim(cx, *arg, shape, dims),
        Op::Map { kind, func, args } => structured::map(cx, *kind, *func, args),
        Op::Get { arg, indices } => structured::get(cx, *arg, indices),
        Op::Set { arg, indices, value } => structured::set(cx, *arg, indices, *value),
        Op::Pack { arg, tile, layout, padding } => nested::pack(cx, *arg, tile, layout, padding.as_ref()),
        Op::Unpack { arg, layout, shape } => nested::unpack(cx, *arg, layout, shape),
        Op::Gather { source, indices, coordinates, mode } => reshape::gather(cx, *source, *indices, coordinates, *mode),
        Op::Scatter { source, dest, indices, coordinates, mode } => {
            reshape::scatter(cx, *source, *dest, *indices, coordinates, *mode)
        }
        Op::CollapseShape { arg, groups, mode: _ } => reshape::collapse_shape(cx, *arg, groups),
        Op::ExpandShape { arg, groups, shape, mode: _ } => reshape::expand_shape(cx, *arg, groups, shape),
        Op::Convert { arg, mode } => reshape::convert(cx, *arg, *mode, declared),
        Op::Coordinates { arg, dim } => entries::entries(cx, *arg, dim, declared, true),
        Op::Nonzeros { arg, dim } => entries::entries(cx, *arg, dim, declared, false),
        Op::Assemble { coordinates, values, dim } => entries::assemble(cx, *coordinates, *values, dim, declared),
        Op::ToDevice { arg, device } => placement::to_device(cx, *arg, device),
        Op::Distribute { arg, ranks, dim } => placement::distribute(cx, *arg, *ranks, dim),
        Op::Collect { arg } => placement::collect(cx, *arg),
    }
}
