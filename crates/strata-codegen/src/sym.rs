//! Symbolic values: what an SSA value computes at one point of a kernel's iteration space.
//!
//! Fusion works by *substitution*: every value is an expression over the kernel's loop
//! variables (one per named dimension). A cartesian shift rewrites coordinates `D` into
//! `D + o`; an unstructured shift rewrites the source coordinate into a neighbor-table load; a
//! call inlines the callee; a reduction becomes an inner loop over its neighbor dimension. No
//! intermediate buffer is ever written: each output is one loop nest over its domain.

use std::rc::Rc;

use strata_ir::{BinaryOp, DimName, Interval, Scalar, UnaryOp};
use strata_runtime::Sv;

/// A fresh loop-variable name (never a user dimension: `$` is not an identifier character).
pub fn fresh(tag: &str, id: u32, i: usize) -> DimName {
    DimName(format!("${tag}{id}_{i}"))
}

/// Renames several loop variables at once (`from[i]` becomes `to[i]` plus an offset), safe when
/// the sets overlap (e.g. swapping `I` and `J`).
pub fn rename(e: &Rc<SExpr>, from: &[DimName], to: &[Coord], uid: u32) -> Rc<SExpr> {
    let mut x = e.clone();
    let temps: Vec<DimName> = (0..from.len()).map(|i| fresh("t", uid, i)).collect();
    for (f, t) in from.iter().zip(&temps) {
        x = substitute(&x, f, &Coord::Var { dim: t.clone(), offset: 0 });
    }
    for (t, c) in temps.iter().zip(to) {
        x = substitute(&x, t, c);
    }
    x
}

// ---- index arithmetic (coordinates computed by reshapes and nesting) ----

/// The index constant `k`.
pub(crate) fn ix(k: i64) -> Rc<SExpr> {
    Rc::new(SExpr::Const(Sv::Index(k)))
}

/// The value of coordinate `c`.
pub(crate) fn index(c: Coord) -> Rc<SExpr> {
    Rc::new(SExpr::Index(c))
}

/// `a op b` on index values.
pub(crate) fn bin(op: strata_ir::BinaryOp, a: Rc<SExpr>, b: Rc<SExpr>) -> Rc<SExpr> {
    Rc::new(SExpr::Binary(op, a, b, Scalar::Index))
}

/// `a + b` on index values.
pub(crate) fn add(a: Rc<SExpr>, b: Rc<SExpr>) -> Rc<SExpr> {
    bin(strata_ir::BinaryOp::Plus, a, b)
}

/// `a - b` on index values.
pub(crate) fn sub(a: Rc<SExpr>, b: Rc<SExpr>) -> Rc<SExpr> {
    bin(strata_ir::BinaryOp::Minus, a, b)
}

/// `a * b` on index values.
pub(crate) fn mul(a: Rc<SExpr>, b: Rc<SExpr>) -> Rc<SExpr> {
    bin(strata_ir::BinaryOp::Multiplies, a, b)
}

/// A coordinate along one dimension of a buffer, in terms of loop variables.
#[derive(Clone, Debug, PartialEq)]
pub enum Coord {
    /// Loop variable `dim`, plus a constant.
    Var {
        /// The loop variable (a dimension name).
        dim: DimName,
        /// Added constant.
        offset: i64,
    },
    /// A constant coordinate.
    Const(i64),
    /// A coordinate computed from data (an index scalar, a gather index) or by index
    /// arithmetic (reshapes), plus a constant; outside `source` it is a run-time error.
    Computed {
        /// The index expression.
        value: Rc<SExpr>,
        /// The interval it must fall in.
        source: Interval,
        /// Added constant.
        offset: i64,
    },
    /// A neighbor-table entry plus a constant; the skip value `-1` makes the point absent.
    Table {
        /// The table read.
        table: Rc<Load>,
        /// The source interval the entry must fall in.
        source: Interval,
        /// Added constant.
        offset: i64,
    },
}

/// Each level's own loop variable, in level order: the coordinates of a buffer read or
/// written at the current point of a loop nest over its levels.
pub fn level_vars(levels: &[strata_ir::Level]) -> Vec<Coord> {
    levels.iter().map(|l| Coord::Var { dim: l.name.clone(), offset: 0 }).collect()
}

/// A read of one scalar from a buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Index into the kernel program's buffers.
    pub buffer: usize,
    /// One coordinate per buffer level, in level order.
    pub coords: Vec<Coord>,
}

/// A read of one element of a sparse or ragged tensor at logical coordinates: present where
/// the tensor stores that coordinate. How the position is found — known from an enclosing
/// loop over the stored coordinates ([`crate::sparse::IterSet`]) or located level by level
/// (binary search in a compressed level, a bound check in a ragged one) — is the emitter's
/// choice; the meaning is the interpreter's logical view.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseRead {
    /// Index into the kernel program's sparse tensors ([`crate::kernel::KernelProgram::sparse`]).
    pub tensor: usize,
    /// One coordinate per level, in level order.
    pub coords: Vec<Coord>,
}

/// A scalar expression at one iteration point.
#[derive(Clone, Debug, PartialEq)]
pub enum SExpr {
    /// A buffer element.
    Load(Rc<Load>),
    /// An element of a sparse or ragged tensor, absent where it is not stored.
    Sparse(Rc<SparseRead>),
    /// A constant.
    Const(Sv),
    /// No value: absent everywhere (reads as zero of its type). A select between a value and
    /// this one makes the value absent where the condition fails (converting dense storage to
    /// sparse drops zeros).
    Absent(Scalar),
    /// The value of a loop variable (`pos`).
    Index(Coord),
    /// A unary builtin on a value of type `Scalar`.
    Unary(UnaryOp, Rc<SExpr>, Scalar),
    /// A binary builtin on operands of type `Scalar`.
    Binary(BinaryOp, Rc<SExpr>, Rc<SExpr>, Scalar),
    /// `c ? t : f`.
    Select(Rc<SExpr>, Rc<SExpr>, Rc<SExpr>),
    /// A conversion.
    Cast(Rc<SExpr>, Scalar, Scalar),
    /// Whether a value exists (`can_deref`).
    Present(Rc<SExpr>),
    /// The accumulator of the innermost enclosing reduction.
    Acc(u32),
    /// `value`, existing only where a neighbor-table entry is not the skip value (and checked
    /// against its source interval): a shifted value that does not depend on the source
    /// dimension still inherits the table's skips.
    Guard {
        /// The table entry.
        table: Rc<Load>,
        /// Its source interval.
        source: Interval,
        /// The guarded value.
        value: Rc<SExpr>,
    },
    /// `acc = init; for vars in ranges (row-major): if present(body) acc = body; acc` — a
    /// neighbor reduction (one variable) or a contraction (`map_reduce`, `dot_general`).
    Reduce {
        /// Identifies the accumulator inside `body`.
        id: u32,
        /// The loop variables and their ranges, outermost first.
        vars: Vec<(DimName, Interval)>,
        /// Initial value (evaluated at the current point).
        init: Rc<SExpr>,
        /// The accumulator's type.
        scalar: Scalar,
        /// The next accumulator.
        body: Rc<SExpr>,
    },
}

/// A value: a scalar expression, or a tuple of values.
#[derive(Clone, Debug, PartialEq)]
pub enum Sym {
    /// A scalar.
    Scalar(Rc<SExpr>),
    /// A tuple.
    Tuple(Vec<Sym>),
}

impl Sym {
    /// The scalar expression (tuples have been projected by the verifier's types).
    pub fn scalar(&self) -> Rc<SExpr> {
        match self {
            Sym::Scalar(e) => e.clone(),
            Sym::Tuple(_) => panic!("tuple used as a scalar"),
        }
    }

    /// Applies `f` to every scalar leaf.
    pub fn map(&self, f: &mut impl FnMut(&Rc<SExpr>) -> Rc<SExpr>) -> Sym {
        match self {
            Sym::Scalar(e) => Sym::Scalar(f(e)),
            Sym::Tuple(fs) => Sym::Tuple(fs.iter().map(|x| x.map(f)).collect()),
        }
    }

    /// The scalar leaves in order.
    pub fn leaves(&self) -> Vec<Rc<SExpr>> {
        match self {
            Sym::Scalar(e) => vec![e.clone()],
            Sym::Tuple(fs) => fs.iter().flat_map(|x| x.leaves()).collect(),
        }
    }
}

/// Rebuilds `e` with each direct sub-expression passed through `expr` and each coordinate
/// (of loads, index values and guards' tables) through `coord`: the one structural traversal
/// the rewriting passes below share.
pub fn map_children(
    e: &Rc<SExpr>,
    expr: &dyn Fn(&Rc<SExpr>) -> Rc<SExpr>,
    coord: &dyn Fn(&Coord) -> Coord,
) -> Rc<SExpr> {
    let load = |l: &Rc<Load>| Rc::new(Load { buffer: l.buffer, coords: l.coords.iter().map(coord).collect() });
    Rc::new(match &**e {
        SExpr::Const(_) | SExpr::Acc(_) | SExpr::Absent(_) => return e.clone(),
        SExpr::Load(l) => SExpr::Load(load(l)),
        SExpr::Sparse(r) => {
            SExpr::Sparse(Rc::new(SparseRead { tensor: r.tensor, coords: r.coords.iter().map(coord).collect() }))
        }
        SExpr::Index(c) => SExpr::Index(coord(c)),
        SExpr::Unary(op, a, s) => SExpr::Unary(*op, expr(a), *s),
        SExpr::Binary(op, a, b, s) => SExpr::Binary(*op, expr(a), expr(b), *s),
        SExpr::Select(c, t, f) => SExpr::Select(expr(c), expr(t), expr(f)),
        SExpr::Cast(a, from, to) => SExpr::Cast(expr(a), *from, *to),
        SExpr::Present(a) => SExpr::Present(expr(a)),
        SExpr::Guard { table, source, value } => {
            SExpr::Guard { table: load(table), source: *source, value: expr(value) }
        }
        SExpr::Reduce { id, vars, init, scalar, body } => {
            SExpr::Reduce { id: *id, vars: vars.clone(), init: expr(init), scalar: *scalar, body: expr(body) }
        }
    })
}

/// Rebuilds a coordinate's parts: a computed value through `expr`, a table load's coordinates
/// through `coord`.
pub fn map_coord_parts(c: &Coord, expr: &dyn Fn(&Rc<SExpr>) -> Rc<SExpr>, coord: &dyn Fn(&Coord) -> Coord) -> Coord {
    match c {
        Coord::Table { table, source, offset } => Coord::Table {
            table: Rc::new(Load { buffer: table.buffer, coords: table.coords.iter().map(coord).collect() }),
            source: *source,
            offset: *offset,
        },
        Coord::Computed { value, source, offset } => {
            Coord::Computed { value: expr(value), source: *source, offset: *offset }
        }
        other => other.clone(),
    }
}

/// Calls `f` on every load in `e` (outside coordinates).
pub(crate) fn for_each_load(e: &Rc<SExpr>, f: &mut dyn FnMut(&Load)) {
    if let SExpr::Load(l) = &**e {
        f(l);
    }
    for_each_part(e, &mut |p| {
        if let Part::Expr(x) = p {
            for_each_load(x, f);
        }
    });
}

/// A direct part of an expression or coordinate, as [`for_each_part`] visits it.
pub enum Part<'a> {
    /// A sub-expression.
    Expr(&'a Rc<SExpr>),
    /// A coordinate (of a load, an index value or a guard's table).
    Coord(&'a Coord),
}

/// Visits the direct parts of `e` — the read-only twin of [`map_children`].
pub fn for_each_part(e: &Rc<SExpr>, f: &mut dyn FnMut(Part)) {
    match &**e {
        SExpr::Const(_) | SExpr::Acc(_) | SExpr::Absent(_) => {}
        SExpr::Load(l) => l.coords.iter().for_each(|c| f(Part::Coord(c))),
        SExpr::Sparse(r) => r.coords.iter().for_each(|c| f(Part::Coord(c))),
        SExpr::Guard { table, value, .. } => {
            table.coords.iter().for_each(|c| f(Part::Coord(c)));
            f(Part::Expr(value));
        }
        SExpr::Index(c) => f(Part::Coord(c)),
        SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) | SExpr::Present(a) => f(Part::Expr(a)),
        SExpr::Binary(_, a, b, _) => [a, b].into_iter().for_each(|x| f(Part::Expr(x))),
        SExpr::Select(c, t, e2) => [c, t, e2].into_iter().for_each(|x| f(Part::Expr(x))),
        SExpr::Reduce { init, body, .. } => [init, body].into_iter().for_each(|x| f(Part::Expr(x))),
    }
}

/// Visits the direct parts of a coordinate: a computed value, a table load's coordinates.
pub fn for_each_coord_part(c: &Coord, f: &mut dyn FnMut(Part)) {
    match c {
        Coord::Table { table, .. } => table.coords.iter().for_each(|c| f(Part::Coord(c))),
        Coord::Computed { value, .. } => f(Part::Expr(value)),
        Coord::Var { .. } | Coord::Const(_) => {}
    }
}

/// Rewrites every coordinate of `e` with `f` (which returns `None` to keep a coordinate).
pub fn rewrite(e: &Rc<SExpr>, f: &dyn Fn(&Coord) -> Option<Coord>) -> Rc<SExpr> {
    map_children(e, &|x| rewrite(x, f), &|c| rewrite_coord(c, f))
}

fn rewrite_coord(c: &Coord, f: &dyn Fn(&Coord) -> Option<Coord>) -> Coord {
    let inner = map_coord_parts(c, &|x| rewrite(x, f), &|c| rewrite_coord(c, f));
    f(&inner).unwrap_or(inner)
}

/// Replaces each load `l` (outside coordinates) for which `f(l)` is `Some`.
pub fn replace_loads(e: &Rc<SExpr>, f: &dyn Fn(&Load) -> Option<Rc<SExpr>>) -> Rc<SExpr> {
    match &**e {
        SExpr::Load(l) => f(l).unwrap_or_else(|| e.clone()),
        _ => map_children(e, &|x| replace_loads(x, f), &Coord::clone),
    }
}

/// Folds index arithmetic left by substitution, bottom-up: `x ± 0`, `x · 1`, `x / 1`, `x % 1`,
/// constant operations, `v % m` of a loop variable within `[0, m)` (with ranges known), and
/// `(p / b)·b + p % b` → `p` (an unpack read through a pack). Dropping the
/// checks of the inner computed coordinates is safe: the enclosing one still checks `p`.
pub fn simplify(e: &Rc<SExpr>) -> Rc<SExpr> {
    simplify_in(e, &[])
}

/// [`simplify`] knowing the ranges of the loop variables around `e` (a kernel's domain): a
/// computed coordinate that folds to a loop variable whose whole range lies inside the
/// coordinate's interval (a reshape's index arithmetic) becomes that variable, without a
/// run-time check, so the loop reads memory at a stride and vectorizes.
pub fn simplify_in(e: &Rc<SExpr>, ranges: &[(DimName, Interval)]) -> Rc<SExpr> {
    use BinaryOp::{Divides, Minus, Modulo, Multiplies, Plus};
    let s = |x: &Rc<SExpr>| simplify_in(x, ranges);
    let cix = |x: &SExpr| match x {
        SExpr::Const(Sv::Index(k)) | SExpr::Index(Coord::Const(k)) => Some(*k),
        _ => None,
    };
    // `Index(computed v)` as a value: `v` (its check is kept by the caller unless folded),
    // through nested computed coordinates (an unpack of an unpack).
    fn computed(x: &SExpr) -> Option<Rc<SExpr>> {
        match x {
            SExpr::Index(Coord::Computed { value, offset: 0, .. }) => computed(value).or_else(|| Some(value.clone())),
            _ => None,
        }
    }
    Rc::new(match &**e {
        SExpr::Binary(op, a, b, sc @ Scalar::Index) => {
            let (a, b) = (s(a), s(b));
            match (op, cix(&a), cix(&b)) {
                (Plus, Some(x), Some(y)) => SExpr::Const(Sv::Index(x.wrapping_add(y))),
                (Minus, Some(x), Some(y)) => SExpr::Const(Sv::Index(x.wrapping_sub(y))),
                (Multiplies, Some(x), Some(y)) => SExpr::Const(Sv::Index(x.wrapping_mul(y))),
                (Plus | Minus, _, Some(0)) | (Multiplies | Divides, _, Some(1)) => return a,
                (Plus, Some(0), _) | (Multiplies, Some(1), _) => return b,
                // `v % m` of a loop variable whose range lies in `[0, m)` (a collapsed shape's
                // row index): `v`.
                (Modulo, _, Some(m)) if m > 0 && var_within(&a, ranges, 0, m) => return a,
                // `x % 1` (a column index of a shape collapsed with an extent-1 axis): 0.
                (Modulo, _, Some(1)) => SExpr::Const(Sv::Index(0)),
                (Plus, _, _) => {
                    let recombined = (|| {
                        let SExpr::Binary(Multiplies, q, m, _) = &*a else { return None };
                        let size = cix(m)?;
                        let q = computed(q)?;
                        let r = computed(&b)?;
                        let (SExpr::Binary(Divides, p1, b1, _), SExpr::Binary(Modulo, p2, b2, _)) = (&*q, &*r) else {
                            return None;
                        };
                        (size > 0 && cix(b1) == Some(size) && cix(b2) == Some(size) && p1 == p2).then(|| p1.clone())
                    })();
                    match recombined {
                        Some(p) => return p,
                        None => SExpr::Binary(*op, a, b, *sc),
                    }
                }
                _ => SExpr::Binary(*op, a, b, *sc),
            }
        }
        // A choice the loop ranges decide (a concatenation's piece, in a kernel split into
        // pieces): the branch taken.
        SExpr::Select(c, t, f) => {
            let c = s(c);
            let decided = match (&*c, below(&c)) {
                (SExpr::Const(Sv::Bool(b)), _) => Some(*b),
                (_, Some((dim, cut))) => ranges.iter().rev().find(|(d, _)| d == dim).and_then(|(_, iv)| {
                    if iv.stop <= cut {
                        Some(true)
                    } else if iv.start >= cut {
                        Some(false)
                    } else {
                        None
                    }
                }),
                _ => None,
            };
            match decided {
                Some(true) => return s(t),
                Some(false) => return s(f),
                None => SExpr::Select(c, s(t), s(f)),
            }
        }
        SExpr::Reduce { id, vars, init, scalar, body } => {
            let inner: Vec<(DimName, Interval)> = ranges.iter().cloned().chain(vars.iter().cloned()).collect();
            SExpr::Reduce {
                id: *id,
                vars: vars.clone(),
                init: s(init),
                scalar: *scalar,
                body: simplify_in(body, &inner),
            }
        }
        _ => return map_children(e, &s, &|c| simplify_coord(c, ranges)),
    })
}

/// `(v, cut)` when `c` is `v + o < k` on loop variable `v` (a concatenation's piece test:
/// `v < cut` with `cut = k - o`).
pub fn below(c: &SExpr) -> Option<(&DimName, i64)> {
    below_parts(c).map(|(dim, k, offset)| (dim, k - offset))
}

/// `(v, k, o)` when `c` is `v + o < k` on loop variable `v`.
pub fn below_parts(c: &SExpr) -> Option<(&DimName, i64, i64)> {
    let SExpr::Binary(BinaryOp::Less, a, k, Scalar::Index) = c else { return None };
    let k = match &**k {
        SExpr::Const(Sv::Index(k)) | SExpr::Index(Coord::Const(k)) => *k,
        _ => return None,
    };
    match &**a {
        SExpr::Index(Coord::Var { dim, offset }) => Some((dim, k, *offset)),
        _ => None,
    }
}

/// Whether `x` is a loop variable (plus an offset) whose whole range lies in `[lo, hi)`.
fn var_within(x: &SExpr, ranges: &[(DimName, Interval)], lo: i64, hi: i64) -> bool {
    let SExpr::Index(Coord::Var { dim, offset }) = x else { return false };
    ranges.iter().rev().find(|(d, _)| d == dim).is_some_and(|(_, iv)| iv.start + offset >= lo && iv.stop + offset <= hi)
}

fn simplify_coord(c: &Coord, ranges: &[(DimName, Interval)]) -> Coord {
    let c = map_coord_parts(c, &|x| simplify_in(x, ranges), &|c2| simplify_coord(c2, ranges));
    let Coord::Computed { value, source, offset } = &c else { return c };
    match &**value {
        SExpr::Index(Coord::Var { dim, offset: o }) => {
            let inside = ranges
                .iter()
                .rev()
                .find(|(d, _)| d == dim)
                .is_some_and(|(_, iv)| iv.start + o >= source.start && iv.stop + o <= source.stop);
            if inside {
                return Coord::Var { dim: dim.clone(), offset: o + offset };
            }
        }
        SExpr::Index(Coord::Const(k)) | SExpr::Const(Sv::Index(k)) if (source.start..source.stop).contains(k) => {
            return Coord::Const(k + offset);
        }
        _ => {}
    }
    c
}

/// `shift(dim, o)`: every coordinate `dim + k` becomes `dim + k + o`.
pub fn shift(e: &Rc<SExpr>, dim: &DimName, o: i64) -> Rc<SExpr> {
    rewrite(e, &|c| match c {
        Coord::Var { dim: d, offset } if d == dim => Some(Coord::Var { dim: d.clone(), offset: offset + o }),
        _ => None,
    })
}

/// Replaces loop variable `dim` by `with` (plus the variable's offset).
pub fn substitute(e: &Rc<SExpr>, dim: &DimName, with: &Coord) -> Rc<SExpr> {
    rewrite(e, &|c| match c {
        Coord::Var { dim: d, offset } if d == dim => Some(match with {
            Coord::Var { dim: w, offset: o } => Coord::Var { dim: w.clone(), offset: o + offset },
            Coord::Const(k) => Coord::Const(k + offset),
            Coord::Table { table, source, offset: o } => {
                Coord::Table { table: table.clone(), source: *source, offset: o + offset }
            }
            Coord::Computed { value, source, offset: o } => {
                Coord::Computed { value: value.clone(), source: *source, offset: o + offset }
            }
        }),
        _ => None,
    })
}

fn show_coord(c: &Coord) -> String {
    match c {
        Coord::Var { dim, offset: 0 } => dim.to_string(),
        Coord::Var { dim, offset } if *offset > 0 => format!("{dim}+{offset}"),
        Coord::Var { dim, offset } => format!("{dim}{offset}"),
        Coord::Const(k) => k.to_string(),
        Coord::Table { table, offset, .. } => {
            let t = show_load(table);
            if *offset == 0 {
                t
            } else {
                format!("{t}+{offset}")
            }
        }
        Coord::Computed { value, offset, .. } => {
            if *offset == 0 {
                format!("({})", show(value))
            } else {
                format!("({})+{offset}", show(value))
            }
        }
    }
}

fn show_load(l: &Load) -> String {
    let cs: Vec<String> = l.coords.iter().map(show_coord).collect();
    format!("b{}[{}]", l.buffer, cs.join(", "))
}

/// `s0⟨i, j⟩`: sparse tensor 0 at coordinates `(i, j)`.
pub fn show_sparse(r: &SparseRead) -> String {
    let cs: Vec<String> = r.coords.iter().map(show_coord).collect();
    format!("s{}⟨{}⟩", r.tensor, cs.join(", "))
}

/// A readable one-line form of an expression (for `strata lower --to loops`).
pub fn show(e: &SExpr) -> String {
    match e {
        SExpr::Load(l) => show_load(l),
        SExpr::Sparse(r) => show_sparse(r),
        SExpr::Const(v) => v.to_string(),
        SExpr::Absent(_) => "absent".into(),
        SExpr::Index(c) => show_coord(c),
        SExpr::Unary(op, a, _) => format!("{}({})", op.keyword(), show(a)),
        SExpr::Binary(op, a, b, _) => format!("{}({}, {})", op.keyword(), show(a), show(b)),
        SExpr::Select(c, t, f) => format!("select({}, {}, {})", show(c), show(t), show(f)),
        SExpr::Cast(a, _, to) => format!("cast({}, {to})", show(a)),
        SExpr::Present(a) => format!("can_deref({})", show(a)),
        SExpr::Acc(id) => format!("acc{id}"),
        SExpr::Guard { table, value, .. } => format!("guard({}, {})", show_load(table), show(value)),
        SExpr::Reduce { id, vars, init, body, .. } => {
            let loops: Vec<String> = vars.iter().map(|(v, r)| format!("{v} in {r}")).collect();
            format!("reduce(acc{id} = {}; {}; {})", show(init), loops.join(", "), show(body))
        }
    }
}

/// Whether `e` reads buffer `b` (directly or through a table).
pub fn reads(e: &Rc<SExpr>, b: usize) -> bool {
    fn part(p: Part, b: usize, found: &mut bool) {
        match p {
            Part::Expr(e) => {
                *found |= matches!(&**e, SExpr::Load(l) if l.buffer == b)
                    || matches!(&**e, SExpr::Guard { table, .. } if table.buffer == b);
                for_each_part(e, &mut |q| part(q, b, found));
            }
            Part::Coord(c) => {
                *found |= matches!(c, Coord::Table { table, .. } if table.buffer == b);
                for_each_coord_part(c, &mut |q| part(q, b, found));
            }
        }
    }
    let mut found = false;
    part(Part::Expr(e), b, &mut found);
    found
}

/// The neighbor-table entries whose skip value makes `e` absent, when that is all that decides
/// it (`None` when a select makes presence depend on a condition). The structural twin of the
/// presence test the C emitter writes; equal lists mean equal presence.
pub fn skip_conditions(e: &SExpr) -> Option<Vec<Load>> {
    fn coord(c: &Coord, out: &mut Vec<Load>) -> Option<()> {
        match c {
            Coord::Table { table, .. } => {
                table.coords.iter().try_for_each(|c| coord(c, out))?;
                push(out, table);
            }
            Coord::Computed { value, .. } => expr(value, out)?,
            _ => {}
        }
        Some(())
    }
    fn push(out: &mut Vec<Load>, l: &Load) {
        if !out.contains(l) {
            out.push(l.clone());
        }
    }
    fn expr(e: &SExpr, out: &mut Vec<Load>) -> Option<()> {
        match e {
            SExpr::Load(l) => l.coords.iter().try_for_each(|c| coord(c, out))?,
            // Presence decided by what a sparse tensor stores, not by tables.
            SExpr::Sparse(_) | SExpr::Absent(_) => return None,
            SExpr::Const(_) | SExpr::Acc(_) | SExpr::Present(_) | SExpr::Reduce { .. } => {}
            SExpr::Guard { table, value, .. } => {
                table.coords.iter().try_for_each(|c| coord(c, out))?;
                push(out, table);
                expr(value, out)?;
            }
            SExpr::Index(c) => coord(c, out)?,
            SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) => expr(a, out)?,
            SExpr::Binary(_, a, b, _) => {
                expr(a, out)?;
                expr(b, out)?;
            }
            SExpr::Select(c, t, f) => {
                let (mut ct, mut cf) = (Vec::new(), Vec::new());
                expr(t, &mut ct)?;
                expr(f, &mut cf)?;
                if !ct.is_empty() || !cf.is_empty() {
                    return None;
                }
                expr(c, out)?;
            }
        }
        Some(())
    }
    let mut out = Vec::new();
    expr(e, &mut out)?;
    Some(out)
}

/// Whether `e` reads accumulator `id`.
pub fn reads_acc(e: &Rc<SExpr>, id: u32) -> bool {
    fn part(p: Part, id: u32, found: &mut bool) {
        match p {
            Part::Expr(e) => {
                *found |= matches!(&**e, SExpr::Acc(a) if *a == id);
                for_each_part(e, &mut |q| part(q, id, found));
            }
            Part::Coord(c) => for_each_coord_part(c, &mut |q| part(q, id, found)),
        }
    }
    let mut found = false;
    part(Part::Expr(e), id, &mut found);
    found
}

/// The loop variables an expression reads (not counting variables bound by its reductions).
pub fn free_vars(e: &Rc<SExpr>) -> Vec<DimName> {
    fn part(p: Part, out: &mut Vec<DimName>) {
        match p {
            Part::Coord(Coord::Var { dim, .. }) => out.push(dim.clone()),
            Part::Coord(c) => for_each_coord_part(c, &mut |q| part(q, out)),
            Part::Expr(e) => match &**e {
                SExpr::Reduce { vars, init, body, .. } => {
                    part(Part::Expr(init), out);
                    let mut inner = Vec::new();
                    part(Part::Expr(body), &mut inner);
                    out.extend(inner.into_iter().filter(|v| !vars.iter().any(|(b, _)| b == v)));
                }
                _ => for_each_part(e, &mut |q| part(q, out)),
            },
        }
    }
    let mut out = Vec::new();
    part(Part::Expr(e), &mut out);
    out.sort();
    out.dedup();
    out
}

/// How many folds deep `e` nests: 0 without folds, else one more than the deepest fold
/// inside the outermost one (coordinates included). Shared sub-expressions are visited once.
pub fn fold_height(e: &Rc<SExpr>) -> u32 {
    fn expr(e: &Rc<SExpr>, memo: &mut std::collections::HashMap<*const SExpr, u32>) -> u32 {
        if let Some(&h) = memo.get(&Rc::as_ptr(e)) {
            return h;
        }
        let mut inner = 0;
        for_each_part(e, &mut |p| inner = inner.max(part(p, memo)));
        let h = if matches!(**e, SExpr::Reduce { .. }) { inner + 1 } else { inner };
        memo.insert(Rc::as_ptr(e), h);
        h
    }
    fn part(p: Part, memo: &mut std::collections::HashMap<*const SExpr, u32>) -> u32 {
        match p {
            Part::Expr(e) => expr(e, memo),
            Part::Coord(c) => {
                let mut best = 0;
                for_each_coord_part(c, &mut |q| best = best.max(part(q, memo)));
                best
            }
        }
    }
    expr(e, &mut std::collections::HashMap::new())
}

/// Whether the existence of `e` at a point depends on a read at coordinate `dim` (a load, a
/// table entry or an index value at `dim`, in a part whose absence makes `e` absent): then
/// replacing `dim` by a neighbor-table entry makes `e` absent where the entry is the skip value,
/// as the shift means. Reductions and `can_deref` always exist, and a select exists where its
/// chosen branch does, so a read of `dim` inside them does not count.
pub fn presence_reads(e: &SExpr, dim: &DimName) -> bool {
    fn coord(c: &Coord, dim: &DimName) -> bool {
        match c {
            Coord::Var { dim: d, .. } => d == dim,
            Coord::Const(_) => false,
            Coord::Table { table, .. } => table.coords.iter().any(|c| coord(c, dim)),
            Coord::Computed { value, .. } => presence_reads(value, dim),
        }
    }
    match e {
        SExpr::Load(l) => l.coords.iter().any(|c| coord(c, dim)),
        SExpr::Sparse(r) => r.coords.iter().any(|c| coord(c, dim)),
        SExpr::Index(c) => coord(c, dim),
        SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) => presence_reads(a, dim),
        SExpr::Binary(_, a, b, _) => presence_reads(a, dim) || presence_reads(b, dim),
        SExpr::Guard { table, value, .. } => table.coords.iter().any(|c| coord(c, dim)) || presence_reads(value, dim),
        SExpr::Select(c, t, f) => presence_reads(c, dim) || (presence_reads(t, dim) && presence_reads(f, dim)),
        SExpr::Const(_) | SExpr::Acc(_) | SExpr::Absent(_) | SExpr::Present(_) | SExpr::Reduce { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ix(k: i64) -> Rc<SExpr> {
        Rc::new(SExpr::Const(Sv::Index(k)))
    }

    fn bin(op: BinaryOp, a: Rc<SExpr>, b: Rc<SExpr>) -> Rc<SExpr> {
        Rc::new(SExpr::Binary(op, a, b, Scalar::Index))
    }

    fn checked(value: Rc<SExpr>, len: u64) -> Rc<SExpr> {
        Rc::new(SExpr::Index(Coord::Computed { value, source: Interval::from_len(len), offset: 0 }))
    }

    #[test]
    fn simplify_folds_an_unpack_read_through_a_pack() {
        let p = Rc::new(SExpr::Index(Coord::Var { dim: DimName::new("I"), offset: 0 }));
        let parts = |b: i64, c: i64| {
            let q = checked(bin(BinaryOp::Divides, p.clone(), ix(b)), 4);
            let r = checked(bin(BinaryOp::Modulo, p.clone(), ix(c)), 32);
            bin(BinaryOp::Plus, bin(BinaryOp::Multiplies, q, ix(b)), r)
        };
        assert_eq!(simplify(&parts(32, 32)), p);
        // Different tile sizes are not a round trip and stay.
        assert_eq!(simplify(&parts(32, 16)), parts(32, 16));
        assert_eq!(simplify(&bin(BinaryOp::Minus, bin(BinaryOp::Multiplies, p.clone(), ix(1)), ix(0))), p);
        assert_eq!(simplify(&bin(BinaryOp::Plus, ix(3), bin(BinaryOp::Multiplies, ix(2), ix(5)))), ix(13));
    }

    #[test]
    fn a_computed_coordinate_within_its_loop_range_becomes_the_loop_variable() {
        let j = DimName::new("J");
        let var = Rc::new(SExpr::Index(Coord::Var { dim: j.clone(), offset: 0 }));
        // `0 · 64 + J`, checked against [0:64], read from a buffer.
        let value = bin(BinaryOp::Plus, bin(BinaryOp::Multiplies, Rc::new(SExpr::Index(Coord::Const(0))), ix(64)), var);
        let load = |c: Coord| Rc::new(SExpr::Load(Rc::new(Load { buffer: 0, coords: vec![c] })));
        let e = load(Coord::Computed { value: value.clone(), source: Interval::from_len(64), offset: 0 });
        let plain = load(Coord::Var { dim: j.clone(), offset: 0 });
        assert_eq!(simplify_in(&e, &[(j.clone(), Interval::from_len(64))]), plain);
        // A loop range reaching past the interval keeps the check (a gather by `pos`, say).
        let kept = simplify_in(&e, &[(j.clone(), Interval::from_len(65))]);
        assert!(matches!(&*kept, SExpr::Load(l) if matches!(l.coords[0], Coord::Computed { .. })), "{kept:?}");
        // Without a known range, too.
        assert!(matches!(&*simplify(&e), SExpr::Load(l) if matches!(l.coords[0], Coord::Computed { .. })));
    }
}
