//! `coordinates`, `nonzeros` and `assemble`: a tensor's non-zero entries along one dimension
//! as ragged data, and a tensor built back from such data. The meaning is the values': an
//! entry is listed where it exists and differs from zero (the fill value), whatever the
//! operand's storage lists.

use strata_ir::{BinaryOp, DimName, Value};
use strata_runtime::{Column, Data, Elem, Sv, Tensor};

use crate::ops::OpCx;
use crate::RunError;

type R<T> = Result<T, RunError>;

/// For each point of `arg`'s levels other than `dim` (row-major), the listed entries along `dim`
/// in ascending order: their coordinates (`coordinates`) or values (`nonzeros`), as the first
/// elements of the result's ragged run.
pub(crate) fn entries(cx: &OpCx, arg: Value, dim: &DimName, coordinates: bool) -> R<Tensor> {
    let a = cx.arg(arg);
    let d = a.ty.levels.iter().position(|l| &l.name == dim).expect("verified dimension");
    let shape = a.ty.shape();
    let strides = a.strides();
    let (n, start) = (shape[d], a.ty.levels[d].interval.start);
    let others: Vec<usize> = (0..shape.len()).filter(|&k| k != d).collect();
    let points: usize = others.iter().map(|&k| shape[k]).product();
    let scalar = cx.ty.element.scalar().expect("verified scalar element");
    let mut data = Column::zeros(scalar, points * n);
    let mut present = vec![false; points * n];
    let mut index = vec![0usize; others.len()];
    for p in 0..points {
        let base: usize = others.iter().zip(&index).map(|(&k, &i)| i * strides[k]).sum();
        let mut run = 0;
        for c in 0..n {
            let at = base + c * strides[d];
            let v = a.scalar_at(at);
            if a.is_present(at) && !v.is_zero() {
                let listed = if coordinates { Sv::Index(start + c as i64) } else { v };
                data.set(p * n + run, listed);
                present[p * n + run] = true;
                run += 1;
            }
        }
        // The next point of the other levels, row-major.
        for (i, &k) in index.iter_mut().zip(&others).rev() {
            *i += 1;
            if *i < shape[k] {
                break;
            }
            *i = 0;
        }
    }
    let mut out = Tensor { ty: cx.ty.clone(), data: Data::Scalars(data), present: Some(present) };
    out.normalize_presence();
    Ok(out)
}

/// The declared tensor with `values` added at `coordinates` along `dim` (zero elsewhere). A
/// coordinate outside `dim`'s interval, or a coordinate without a value (or the reverse), is an
/// error naming the element.
pub(crate) fn assemble(cx: &OpCx, crd: Value, vals: Value, dim: &DimName) -> R<Tensor> {
    let (c, v) = (cx.arg(crd), cx.arg(vals));
    let mut out = Tensor::zeros(cx.ty);
    let out_strides = out.strides();
    let target = cx.ty.levels.iter().position(|l| &l.name == dim).expect("verified dimension");
    let interval = cx.ty.levels[target].interval;
    // Where each of the operands' outer levels lands in the result.
    let outer = &c.ty.levels[..c.ty.levels.len() - 1];
    let places: Vec<usize> =
        outer.iter().map(|l| cx.ty.levels.iter().position(|m| m.name == l.name).expect("verified levels")).collect();
    let shape = c.ty.shape();
    let run = *shape.last().expect("a ragged level");
    let mut index = vec![0usize; outer.len()];
    let points: usize = shape[..outer.len()].iter().product();
    for p in 0..points {
        let base: usize = places.iter().zip(&index).map(|(&k, &i)| i * out_strides[k]).sum();
        let here = || {
            outer
                .iter()
                .zip(&index)
                .map(|(l, &i)| format!("{} = {}", l.name, l.interval.start + i as i64))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for e in 0..run {
            let at = p * run + e;
            match (c.is_present(at), v.is_present(at)) {
                (false, false) => continue,
                (true, true) => {}
                _ => {
                    return Err(cx.err(
                        "strata::run::assemble_mismatch",
                        format!("`assemble`: at {} entry {e}, there is a coordinate or a value but not both", here()),
                    ))
                }
            }
            let x = c.scalar_at(at).as_i128();
            if x < interval.start as i128 || x >= interval.stop as i128 {
                return Err(cx.err(
                    "strata::run::index_out_of_interval",
                    format!("`assemble`: coordinate {x} (at {} entry {e}) is outside `{dim}{interval}`", here()),
                ));
            }
            let o = base + (x - interval.start as i128) as usize * out_strides[target];
            let (Elem::Scalar(old), Elem::Scalar(add)) = (out.get(o), v.get(at)) else {
                unreachable!("verified scalar elements")
            };
            let sum = old.binary(BinaryOp::Plus, add).map_err(|e| cx.err("strata::run::arithmetic", e.to_string()))?;
            out.data.set(o, Elem::Scalar(sum));
        }
        for (i, &k) in index.iter_mut().zip(shape[..outer.len()].iter()).rev() {
            *i += 1;
            if *i < k {
                break;
            }
            *i = 0;
        }
    }
    Ok(out)
}
