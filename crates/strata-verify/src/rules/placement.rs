//! Seed 003's placement ops and the array-API representation.

use strata_ir::{Device, DimName, LevelFormat, Team, Value};

use crate::context::{Cx, RuleResult};
use crate::rules::shifts::unknown_dim;

pub(crate) fn to_device(cx: &mut Cx, arg: Value, device: &Device) -> RuleResult {
    let mut v = cx.need_tensor(arg, "to_device")?;
    v.placement.device = device.clone();
    Ok(cx.tensor(v.element, v.levels, v.placement))
}

pub(crate) fn distribute(cx: &mut Cx, arg: Value, ranks: u32, dim: &DimName) -> RuleResult {
    let mut v = cx.need_tensor(arg, "distribute")?;
    if let Some(t) = v.placement.team {
        let d = cx.error(
            "strata::verify::already_distributed",
            format!("`%{}` is already distributed over a team of {} ranks", cx.expr(arg).name, t),
            "already on a team",
        );
        return Err(Box::new(cx.with_operand(d, arg).with_help("`collect` it first to redistribute")));
    }
    let Some(level) = v.levels.iter_mut().find(|l| &l.name == dim) else {
        return Err(unknown_dim(cx, arg, dim, "distribute"));
    };
    if level.format != LevelFormat::Dense {
        let d = cx.error(
            "strata::verify::format_not_supported",
            format!("`distribute` partitions a dense level, but `{dim}` is `{}`", level.format.keyword()),
            "not dense",
        );
        return Err(cx.with_operand(d, arg));
    }
    level.format = LevelFormat::Block;
    v.placement.team = Some(Team { ranks });
    Ok(cx.tensor(v.element, v.levels, v.placement))
}

pub(crate) fn collect(cx: &mut Cx, arg: Value) -> RuleResult {
    let mut v = cx.need_tensor(arg, "collect")?;
    if v.placement.team.is_none() {
        let d = cx.error(
            "strata::verify::not_distributed",
            format!("`%{}` is not distributed", cx.expr(arg).name),
            "no team",
        );
        return Err(cx.with_operand(d, arg));
    }
    for l in &mut v.levels {
        if l.format == LevelFormat::Block {
            l.format = LevelFormat::Dense;
        }
    }
    v.placement.team = None;
    Ok(cx.tensor(v.element, v.levels, v.placement))
}
