//! Index arithmetic between tensors whose dimensions are matched by name.

use strata_ir::{DimName, Level};
use strata_runtime::{strides, Tensor, ValueType};

/// Iterates over every coordinate vector of `levels` in row-major order.
pub(crate) fn for_each_coord(levels: &[Level], mut f: impl FnMut(usize, &[i64])) {
    let n: usize = levels.iter().map(|l| l.interval.len() as usize).product();
    if n == 0 {
        return;
    }
    let mut coord: Vec<i64> = levels.iter().map(|l| l.interval.start).collect();
    for i in 0..n {
        f(i, &coord);
        for d in (0..levels.len()).rev() {
            coord[d] += 1;
            if coord[d] < levels[d].interval.stop {
                break;
            }
            coord[d] = levels[d].interval.start;
        }
    }
}

/// For each element of `result` (row-major), the linear index of the element of `operand` at
/// the same named coordinates. Dimensions the operand lacks are broadcast; `fixed` pins operand
/// dimensions that the result does not have. Returns `None` for a coordinate outside the
/// operand's interval (the verifier rules this out for well-typed programs).
pub(crate) fn index_map(result: &[Level], operand: &ValueType, fixed: &[(DimName, i64)]) -> Vec<Option<usize>> {
    let ostrides = strides(&operand.shape());
    // For every operand dimension: where its coordinate comes from.
    enum Src {
        Result(usize),
        Fixed(i64),
        Missing,
    }
    let sources: Vec<Src> = operand
        .levels
        .iter()
        .map(|ol| {
            if let Some(p) = result.iter().position(|r| r.name == ol.name) {
                Src::Result(p)
            } else if let Some((_, c)) = fixed.iter().find(|(n, _)| *n == ol.name) {
                Src::Fixed(*c)
            } else {
                Src::Missing
            }
        })
        .collect();
    let mut out = Vec::with_capacity(result.iter().map(|l| l.interval.len() as usize).product());
    for_each_coord(result, |_, coord| {
        let mut off = 0usize;
        let mut ok = true;
        for (k, (ol, src)) in operand.levels.iter().zip(&sources).enumerate() {
            let c = match src {
                Src::Result(p) => coord[*p],
                Src::Fixed(c) => *c,
                Src::Missing => {
                    ok = false;
                    0
                }
            };
            if c < ol.interval.start || c >= ol.interval.stop {
                ok = false;
                break;
            }
            off += (c - ol.interval.start) as usize * ostrides[k];
        }
        out.push(ok.then_some(off));
    });
    out
}

/// The linear index of `t`'s element at the named coordinates, or `None` outside its intervals.
pub(crate) fn offset_at(t: &Tensor, coord: impl Fn(&DimName) -> Option<i64>) -> Option<usize> {
    let s = t.strides();
    let mut off = 0;
    for (k, l) in t.ty.levels.iter().enumerate() {
        let c = coord(&l.name)?;
        if c < l.interval.start || c >= l.interval.stop {
            return None;
        }
        off += (c - l.interval.start) as usize * s[k];
    }
    Some(off)
}
