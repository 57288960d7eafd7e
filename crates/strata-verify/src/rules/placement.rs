//! Seed 003's placement ops and the array-API representation.

use strata_entity::Handle;
use strata_ir::{ArrayFunc, Device, DimName, LevelFormat, Team, Type, Value};

use crate::broadcast::common_placement;
use crate::context::{Cx, RuleResult, View};
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

/// Array-API ops have declared result types; the core verifier checks operand counts and that
/// the result lives where the operands do (compute follows data).
pub(crate) fn array_api(cx: &mut Cx, func: ArrayFunc, args: &[Value], declared: Handle<Type>) -> RuleResult {
    let creation = func.is_creation();
    if creation != args.is_empty() {
        let msg = if creation {
            format!("`array.{}` creates an array from attributes and takes no operands", func.keyword())
        } else {
            format!("`array.{}` needs at least one array operand", func.keyword())
        };
        return Err(cx.error("strata::verify::arity_mismatch", msg, "wrong number of operands"));
    }
    let views: Vec<View> = args.iter().map(|&a| cx.view(a)).collect();
    let placement = common_placement(cx, args, &views)?;
    let out = cx.view_of_type(declared);
    if !creation && out.is_tensor && out.placement != placement {
        return Err(Box::new(
            cx.error(
                "strata::verify::placement_mismatch",
                format!("the result is declared on {}, but the operands live on {placement}", out.placement),
                "compute follows data",
            )
            .with_help("move the result afterwards with `to_device`, `distribute` or `collect`"),
        ));
    }
    Ok(declared)
}
