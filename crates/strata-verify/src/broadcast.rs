//! Name-based broadcasting (seed 000): the result has the union of the operands' dimensions and,
//! per dimension, the intersection of their intervals. Operands must share a placement
//! (compute follows data, seed 003).
//!
//! Positional dimensions (`_0`, `_1`, … from the `tensor<4x8xT>` shorthand) are matched by name
//! too, which equals numpy's right-aligned broadcasting only for equal ranks and equal extents;
//! anything else is an error asking for an explicit `broadcast` / `broadcast_in_dim`.

use strata_ir::{Level, LevelFormat, Placement, Value};

use crate::context::{Cx, View};

/// How sparse levels combine in an elementwise op.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SparseMerge {
    /// The result is zero wherever a sparse operand is (multiplication, `and`): sparse stays.
    Intersect,
    /// The result may be non-zero where any operand is: a sparse level mixed with dense densifies.
    Union,
}

/// The broadcast of `operands`: result levels, placement and whether any operand was a tensor.
pub(crate) fn broadcast(
    cx: &Cx,
    operands: &[Value],
    merge: SparseMerge,
) -> Result<(Vec<Level>, Placement, bool), Box<strata_ir::Diagnostic>> {
    let views: Vec<View> = operands.iter().map(|&v| cx.view(v)).collect();
    let placement = common_placement(cx, operands, &views)?;
    let mut levels: Vec<Level> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    // Positional ranks must agree among operands that have positional dimensions.
    let positional_rank = |v: &View| v.levels.iter().filter(|l| l.name.position().is_some()).count();
    let mut pos_rank: Option<(usize, usize)> = None;
    for (i, v) in views.iter().enumerate() {
        let r = positional_rank(v);
        if r == 0 {
            continue;
        }
        match pos_rank {
            None => pos_rank = Some((r, i)),
            Some((r0, i0)) if r0 != r => {
                let d = cx.error(
                    "strata::verify::positional_broadcast",
                    format!("name-based broadcast of positional tensors of rank {r0} and {r}"),
                    "positional dimensions would be matched from the left",
                );
                let d = cx.with_operand(cx.with_operand(d, operands[i0]), operands[i]);
                return Err(Box::new(
                    d.with_help("use `broadcast_in_dim` to place the lower-rank operand's dimensions explicitly"),
                ));
            }
            _ => {}
        }
    }
    for (i, v) in views.iter().enumerate() {
        for l in &v.levels {
            match levels.iter().position(|r| r.name == l.name) {
                None => {
                    levels.push(l.clone());
                    owner.push(i);
                }
                Some(k) => {
                    let r = &mut levels[k];
                    // A rank's local program (specializing) holds each operand's own rows: the
                    // entry verified that positional extents agree, and a block's rows of a
                    // slice may differ from another operand's (or both be empty).
                    if l.name.position().is_some() && r.interval != l.interval && !cx.specializing() {
                        let d = cx.error(
                            "strata::verify::positional_broadcast",
                            format!(
                                "positional dimension `{}` has extent {} in one operand and {} in another",
                                l.name,
                                r.interval.len(),
                                l.interval.len()
                            ),
                            "name-based broadcasting intersects intervals; it never stretches extent 1",
                        );
                        let d = cx.with_operand(cx.with_operand(d, operands[owner[k]]), operands[i]);
                        return Err(Box::new(d.with_help("use `broadcast` for numpy-style stretching")));
                    }
                    let mut inter = r.interval.intersect(l.interval);
                    // A rank's local program (specializing) may compute nothing where its
                    // operands' rows do not meet: an empty interval, not an error.
                    if inter.is_empty() && cx.specializing() {
                        inter = strata_ir::Interval::new(inter.start, inter.start);
                    }
                    if inter.is_empty() && !r.interval.is_empty() && !l.interval.is_empty() && !cx.specializing() {
                        let d = cx.error(
                            "strata::verify::disjoint_intervals",
                            format!(
                                "dimension `{}` has disjoint intervals {} and {}: the result would be empty",
                                l.name, r.interval, l.interval
                            ),
                            "broadcast intersects intervals",
                        );
                        return Err(cx.with_operand(cx.with_operand(d, operands[owner[k]]), operands[i]));
                    }
                    r.interval = inter;
                    r.format = match merge_format(r.format, l.format, merge) {
                        Some(f) => f,
                        None => {
                            let d = cx.error(
                                "strata::verify::format_mismatch",
                                format!(
                                    "dimension `{}` is stored as `{}` in one operand and as `{}` in another",
                                    l.name, r, l
                                ),
                                "elementwise operands must agree on sparse level formats",
                            );
                            let d = cx.with_operand(cx.with_operand(d, operands[owner[k]]), operands[i]);
                            return Err(Box::new(d.with_help("insert a `convert` to a common format")));
                        }
                    };
                }
            }
        }
    }
    Ok((levels, placement, views.iter().any(|v| v.is_tensor)))
}

fn merge_format(a: LevelFormat, b: LevelFormat, merge: SparseMerge) -> Option<LevelFormat> {
    use LevelFormat::*;
    match (a, b) {
        _ if a == b => Some(a),
        (Dense, x) | (x, Dense) => Some(match x {
            Compressed { .. } | Singleton { .. } if merge == SparseMerge::Union => Dense,
            other => other,
        }),
        (Compressed { unique, ordered, .. }, Compressed { unique: u2, ordered: o2, .. })
            if unique == u2 && ordered == o2 =>
        {
            Some(Compressed { unique, ordered, nnz: strata_ir::Extent::Dynamic })
        }
        (Ragged { .. }, Ragged { .. }) => Some(Ragged { total: strata_ir::Extent::Dynamic }),
        _ => None,
    }
}

/// The placement shared by every tensor operand.
pub(crate) fn common_placement(
    cx: &Cx,
    operands: &[Value],
    views: &[View],
) -> Result<Placement, Box<strata_ir::Diagnostic>> {
    let mut first: Option<(usize, &Placement)> = None;
    for (i, v) in views.iter().enumerate() {
        if !v.is_tensor {
            continue;
        }
        match first {
            None => first = Some((i, &v.placement)),
            Some((i0, p0)) if *p0 != v.placement => {
                let what = if p0.device != v.placement.device { "devices" } else { "teams" };
                let d = cx.error(
                    "strata::verify::placement_mismatch",
                    format!("operands live on different {what}: {p0} vs {}", v.placement),
                    "compute follows data: operands must share device and team",
                );
                let d = cx.with_operand(cx.with_operand(d, operands[i0]), operands[i]);
                return Err(Box::new(
                    d.with_help("move one operand with `to_device`, `distribute` or `collect` first"),
                ));
            }
            _ => {}
        }
    }
    Ok(first.map_or(Placement::HOST, |(_, p)| p.clone()))
}
