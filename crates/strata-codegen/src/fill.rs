//! Fill values and skips in the loop-level IR: the algebra that decides where set-based
//! iteration may replace a dense loop without changing a single value.
//!
//! Two different things are "not stored" (docs/runtime.md). An entry a compressed level does
//! not list is the tensor's **fill value**, zero: a value like any other, so a loop may skip it
//! only where the computation would not change with it — a fold whose step leaves the
//! accumulator unchanged when the read is zero ([`unchanged_at_fill`], TACO's annihilation
//! rule: `acc + a·b` with `a = 0`), or a store whose value is zero there ([`zero_at_fill`]), as
//! the output starts as zeros. Several reads that must all be zero before the step is a no-op
//! give a union (`acc + a + b`); reads each of which alone makes it a no-op give an
//! intersection. An element past the end of a ragged run, or a neighbor reached through a skip
//! value, is **skipped**: it has no value, and a fold step over it is skipped whatever the
//! payload reads ([`only_where`] makes the step absent wherever an operand is).
//!
//! The substitution treats zero as annihilating multiplication (`0 · x = 0`), the ring axiom
//! every sparse library relies on; for floats it differs from IEEE only where `x` is infinite
//! or NaN (docs/runtime.md states this).

use std::rc::Rc;

use strata_ir::{BinaryOp, Scalar};
use strata_runtime::Sv;

use crate::sparse::{LevelStorage, SparseTensor};
use crate::sym::{for_each_coord_part, for_each_part, map_children, Coord, Part, SExpr, SparseRead};

/// Whether `e` may be absent (skipped) at some point: it reads through a neighbor table, a
/// ragged level, or an explicitly absent value.
pub fn may_skip(e: &Rc<SExpr>, sparse: &[SparseTensor]) -> bool {
    fn part(p: Part, sparse: &[SparseTensor], found: &mut bool) {
        match p {
            Part::Expr(e) => {
                *found |= match &**e {
                    SExpr::Sparse(r) => {
                        sparse[r.tensor].storage.iter().any(|s| matches!(s, LevelStorage::Ragged { .. }))
                    }
                    SExpr::Absent(_) | SExpr::Guard { .. } => true,
                    // A fold exists everywhere; `can_deref` is a value.
                    SExpr::Reduce { init, .. } => {
                        part(Part::Expr(init), sparse, found);
                        return;
                    }
                    SExpr::Present(_) => return,
                    _ => false,
                };
                for_each_part(e, &mut |q| part(q, sparse, found));
            }
            Part::Coord(c) => {
                *found |= matches!(c, Coord::Table { .. });
                for_each_coord_part(c, &mut |q| part(q, sparse, found));
            }
        }
    }
    let mut found = false;
    part(Part::Expr(e), sparse, &mut found);
    found
}

/// Whether any leaf of `s` [`may_skip`].
pub fn may_skip_sym(s: &crate::sym::Sym, sparse: &[SparseTensor]) -> bool {
    s.leaves().iter().any(|e| may_skip(e, sparse))
}

/// `value` where every operand exists, absent elsewhere: a fold step is skipped where an
/// operand element is skipped, whether or not the payload reads it (counting neighbors must
/// not count a skipped one). Operands that cannot be skipped add no test.
pub fn only_where(operands: &[Rc<SExpr>], value: Rc<SExpr>, scalar: Scalar, sparse: &[SparseTensor]) -> Rc<SExpr> {
    let mut cond: Option<Rc<SExpr>> = None;
    for o in operands.iter().filter(|o| may_skip(o, sparse)) {
        let here = Rc::new(SExpr::Present(o.clone()));
        cond = Some(match cond {
            None => here,
            Some(c) => Rc::new(SExpr::Binary(BinaryOp::And, c, here, Scalar::Bool)),
        });
    }
    match cond {
        None => value,
        Some(c) => Rc::new(SExpr::Select(c, value, Rc::new(SExpr::Absent(scalar)))),
    }
}

/// `e` with each of `reads` replaced by its fill value (zero of its tensor's scalar type),
/// then simplified (constants folded, `x + 0 → x`, `0 · x → 0`, `false ∧ x → false`, a select
/// on a constant condition, a fold whose step becomes the identity → its initial value).
pub fn at_fill(e: &Rc<SExpr>, reads: &[Rc<SparseRead>], scalar_of: &dyn Fn(usize) -> Scalar) -> Rc<SExpr> {
    let e = match &**e {
        SExpr::Sparse(r) if reads.contains(r) => return Rc::new(SExpr::Const(Sv::zero(scalar_of(r.tensor)))),
        _ => map_children(e, &|x| at_fill(x, reads, scalar_of), &|c| c.clone()),
    };
    fold_constants(&e)
}

/// Whether a fold step `body` (accumulator `Acc(id)`) leaves the accumulator unchanged (or is
/// skipped) wherever every one of `reads` is its fill value.
pub fn unchanged_at_fill(
    body: &Rc<SExpr>,
    id: u32,
    reads: &[Rc<SparseRead>],
    scalar_of: &dyn Fn(usize) -> Scalar,
) -> bool {
    match &*at_fill(body, reads, scalar_of) {
        SExpr::Acc(a) => *a == id,
        SExpr::Absent(_) => true,
        _ => false,
    }
}

/// Whether a stored value is zero wherever every one of `reads` is its fill value.
pub fn zero_at_fill(value: &Rc<SExpr>, reads: &[Rc<SparseRead>], scalar_of: &dyn Fn(usize) -> Scalar) -> bool {
    matches!(&*at_fill(value, reads, scalar_of), SExpr::Const(v) if v.is_zero() && !is_negative_zero(*v))
}

fn is_negative_zero(v: Sv) -> bool {
    match v {
        Sv::F32(x) => x.is_sign_negative(),
        Sv::F64(x) => x.is_sign_negative(),
        _ => false,
    }
}

fn constant(e: &SExpr) -> Option<Sv> {
    match e {
        SExpr::Const(v) => Some(*v),
        _ => None,
    }
}

/// One bottom-up simplification step at the root of `e` (its children are simplified).
fn fold_constants(e: &Rc<SExpr>) -> Rc<SExpr> {
    use BinaryOp::*;
    let zero = |v: Option<Sv>| v.is_some_and(|v| v.is_zero());
    match &**e {
        SExpr::Unary(op, a, _) => match constant(a) {
            Some(v) => Rc::new(SExpr::Const(v.unary(*op))),
            None => e.clone(),
        },
        SExpr::Cast(a, _, to) => match constant(a) {
            Some(v) => Rc::new(SExpr::Const(v.cast(*to))),
            None => e.clone(),
        },
        SExpr::Binary(op, a, b, s) => {
            let (ca, cb) = (constant(a), constant(b));
            if let (Some(x), Some(y)) = (ca, cb) {
                if let Ok(v) = x.binary(*op, y) {
                    return Rc::new(SExpr::Const(v));
                }
            }
            match op {
                Plus | Or | Xor | BitOr | BitXor if zero(cb) => a.clone(),
                Plus | Or | Xor | BitOr | BitXor if zero(ca) => b.clone(),
                Minus if zero(cb) => a.clone(),
                Multiplies | And | BitAnd if zero(ca) || zero(cb) => Rc::new(SExpr::Const(Sv::zero(*s))),
                _ => e.clone(),
            }
        }
        SExpr::Select(c, t, f) => match constant(c).and_then(Sv::as_bool) {
            Some(true) => t.clone(),
            Some(false) => f.clone(),
            None if t == f => t.clone(),
            None => e.clone(),
        },
        SExpr::Present(a) if matches!(&**a, SExpr::Const(_)) => Rc::new(SExpr::Const(Sv::Bool(true))),
        SExpr::Reduce { id, init, body, .. } if matches!(&**body, SExpr::Acc(a) if a == id) => init.clone(),
        _ => e.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_ir::DimName;

    fn read(t: usize) -> Rc<SparseRead> {
        Rc::new(SparseRead { tensor: t, coords: vec![Coord::Var { dim: DimName::new("I"), offset: 0 }] })
    }

    fn sp(r: &Rc<SparseRead>) -> Rc<SExpr> {
        Rc::new(SExpr::Sparse(r.clone()))
    }

    fn bin(op: BinaryOp, a: Rc<SExpr>, b: Rc<SExpr>) -> Rc<SExpr> {
        Rc::new(SExpr::Binary(op, a, b, Scalar::F64))
    }

    #[test]
    fn products_annihilate_sums_need_every_operand() {
        let (a, b) = (read(0), read(1));
        let f64s = |_| Scalar::F64;
        let acc = Rc::new(SExpr::Acc(7));
        let mac = bin(BinaryOp::Plus, acc.clone(), bin(BinaryOp::Multiplies, sp(&a), sp(&b)));
        assert!(unchanged_at_fill(&mac, 7, std::slice::from_ref(&a), &f64s));
        assert!(unchanged_at_fill(&mac, 7, std::slice::from_ref(&b), &f64s));
        let sum = bin(BinaryOp::Plus, acc.clone(), bin(BinaryOp::Plus, sp(&a), sp(&b)));
        assert!(!unchanged_at_fill(&sum, 7, std::slice::from_ref(&a), &f64s));
        assert!(unchanged_at_fill(&sum, 7, &[a.clone(), b.clone()], &f64s));
        // A payload that ignores the operand, or is not annihilated by zero: never.
        let count = bin(BinaryOp::Plus, acc.clone(), Rc::new(SExpr::Const(Sv::F64(1.0))));
        assert!(!unchanged_at_fill(&count, 7, std::slice::from_ref(&a), &f64s));
        let max = bin(BinaryOp::Maximum, acc.clone(), sp(&a));
        assert!(!unchanged_at_fill(&max, 7, std::slice::from_ref(&a), &f64s));
        let exp = bin(BinaryOp::Plus, acc, Rc::new(SExpr::Unary(strata_ir::UnaryOp::Exp, sp(&a), Scalar::F64)));
        assert!(!unchanged_at_fill(&exp, 7, std::slice::from_ref(&a), &f64s));
        // Stores: a product is zero where a factor is; a sum where both are.
        assert!(zero_at_fill(&bin(BinaryOp::Multiplies, sp(&a), sp(&b)), std::slice::from_ref(&b), &f64s));
        assert!(!zero_at_fill(&bin(BinaryOp::Minus, sp(&a), sp(&b)), std::slice::from_ref(&b), &f64s));
        assert!(zero_at_fill(&bin(BinaryOp::Minus, sp(&a), sp(&b)), &[a, b], &f64s));
    }
}
