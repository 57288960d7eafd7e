//! `map_reduce_aff`'s access maps as index expressions: linear terms, `floordiv` and `mod`,
//! and the in-bounds test, clamp and select that a padding value needs (`map_reduce_aff`'s and
//! `pack`'s).

use std::rc::Rc;

use strata_ir::{AffineExpr, BinaryOp, Literal, QuotientOp, Scalar};
use strata_runtime::Sv;

use crate::sym::{add, bin, ix, mul, SExpr};

/// The value of `ex` at the current point, where `var(d)` is the value of loop `d` (counted
/// from 0). `floordiv` rounds toward −∞ and `mod` is non-negative, as the IR defines them.
pub fn affine_value<E>(ex: &AffineExpr, var: &dyn Fn(u32) -> Result<Rc<SExpr>, E>) -> Result<Rc<SExpr>, E> {
    let mut v = ix(ex.constant);
    for &(d, c) in &ex.terms {
        v = add(v, mul(ix(c), var(d)?));
    }
    for (q, c) in &ex.quotients {
        let op = match q.op {
            QuotientOp::FloorDiv => BinaryOp::FloorDivide,
            QuotientOp::Mod => BinaryOp::Remainder,
        };
        v = add(v, mul(ix(*c), bin(op, affine_value(&q.inner, var)?, ix(q.by))));
    }
    Ok(v)
}

/// For an offset `rel` that may fall outside `[0, n)`: whether it is inside, and the offset
/// clamped into the range (so that a read there is always valid and a select can replace it
/// by the padding value).
pub fn inside_and_clamped(rel: Rc<SExpr>, n: u64) -> (Rc<SExpr>, Rc<SExpr>) {
    let n = n as i64;
    let cmp = |op, a: Rc<SExpr>, b| Rc::new(SExpr::Binary(op, a, b, Scalar::Index));
    let inside = Rc::new(SExpr::Binary(
        BinaryOp::And,
        cmp(BinaryOp::GreaterEqual, rel.clone(), ix(0)),
        cmp(BinaryOp::Less, rel.clone(), ix(n)),
        Scalar::Bool,
    ));
    (inside, bin(BinaryOp::Maximum, bin(BinaryOp::Minimum, rel, ix(n - 1)), ix(0)))
}

/// `value` where `inside` holds, the padding literal elsewhere; `None` if the padding is no
/// scalar of type `scalar` (tuple elements).
pub fn padded(inside: Rc<SExpr>, value: Rc<SExpr>, pad: &Literal, scalar: Scalar) -> Option<Rc<SExpr>> {
    let pad = Sv::from_literal(pad, scalar)?;
    Some(Rc::new(SExpr::Select(inside, value, Rc::new(SExpr::Const(pad)))))
}

/// `a && b`, with `None` as true.
pub fn and(a: Option<Rc<SExpr>>, b: Rc<SExpr>) -> Rc<SExpr> {
    match a {
        None => b,
        Some(a) => Rc::new(SExpr::Binary(BinaryOp::And, a, b, Scalar::Bool)),
    }
}
