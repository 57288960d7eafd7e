//! Block levels of types, and the team an entry runs on.

use strata_entity::Handle;
use strata_ir::{DimName, ExprKind, Function, Interval, LevelFormat, Module, Op, TensorType, Type, TypeArena};

use super::{BlockParam, IndirectShift, PlanError};

/// The tensor type `ty` is, if it is one.
pub(super) fn tensor(types: &TypeArena, ty: Handle<Type>) -> Option<&TensorType> {
    match &types[ty] {
        Type::Tensor(t) => Some(t),
        _ => None,
    }
}

/// A sparse or ragged parameter is held as storage (`Value::Stored`), which the halo exchange
/// and the inspector do not cut or fill: each rank holds exactly its own rows of it, read from
/// the file ([`strata_runtime::sparse_rows`]). So its block level must be its rows (the first
/// level) and no shift may reach beyond them. (A sparse or ragged result is gathered on rank 0
/// as storage: `job::gather_stored`.)
pub(super) fn check_stored_rows(
    types: &TypeArena,
    ty: Handle<Type>,
    p: &BlockParam,
    indirect: &[IndirectShift],
) -> Result<(), PlanError> {
    let Some(t) = tensor(types, ty) else { return Ok(()) };
    if t.levels.iter().all(|l| l.format.is_dense_like()) {
        return Ok(());
    }
    let fail = |reason| Err(PlanError::StoredRows { name: p.name.clone(), reason });
    if p.level != 0 {
        return fail("its block level must be its first (the rows)");
    }
    if p.held != p.owned || indirect.iter().any(|s| s.dim == p.dim) {
        return fail(
            "no shift along its block level may read other ranks' rows (shift a dense value computed from it instead)",
        );
    }
    Ok(())
}

/// The block level of a type: position, name, interval.
pub(crate) fn block_level(types: &TypeArena, ty: Handle<Type>) -> Option<(usize, DimName, Interval)> {
    let t = tensor(types, ty)?;
    t.levels
        .iter()
        .position(|l| l.format == LevelFormat::Block)
        .map(|i| (i, t.levels[i].name.clone(), t.levels[i].interval))
}

/// The name of level `pos` of a type when it is a block level.
pub(crate) fn block_level_named(types: &TypeArena, ty: Handle<Type>, pos: usize) -> Option<DimName> {
    let l = tensor(types, ty)?.levels.get(pos)?;
    (l.format == LevelFormat::Block).then(|| l.name.clone())
}

/// The team size every team type of the entry (and what it calls) agrees on (`None`: no
/// team; [`strata_ir::Team::WORLD`]: `team = world`).
pub fn team_of(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
) -> Result<Option<(u32, String)>, PlanError> {
    let mut found: Option<(u32, String)> = None;
    for fh in module.reachable(entry) {
        let f = &module.functions[fh];
        for (_, e) in f.exprs.iter() {
            let team = match &e.kind {
                ExprKind::Op(Op::Distribute { ranks, .. }) => Some(*ranks),
                _ => tensor(types, e.ty).and_then(|t| t.placement.team).map(|t| t.ranks),
            };
            let Some(team) = team else { continue };
            let show = |r: u32| strata_ir::Team { ranks: r }.to_string();
            match &found {
                Some((r, n)) if *r != team => {
                    return Err(PlanError::Teams {
                        a: format!("{} (`%{n}`)", show(*r)),
                        b: format!("{} (`%{}` in `@{}`)", show(team), e.name, f.name),
                    })
                }
                Some(_) => {}
                None => found = Some((team, e.name.clone())),
            }
        }
    }
    Ok(found)
}
