//! Sparse and ragged tensors in the loop-level IR: their storage as the kernels see it, and
//! seed 004's *set-based iteration* — a loop that visits only the coordinates some operands
//! store instead of a whole interval.
//!
//! A sparse or ragged input is bound as its storage buffers (`strata_runtime::storage`: per
//! level positions and coordinates, or offsets; values at the leaves) and read through
//! [`SExpr::Sparse`]: an element at logical coordinates, absent where it is not stored. That
//! read is always correct on its own (the emitter locates the position level by level). The
//! pass [`coiterate`] then turns loops into iterations over stored coordinates where that
//! cannot change the result: a fold skips absent steps, and a kernel stores zero at absent
//! points, so a loop whose every step needs a read of a stored coordinate may visit exactly
//! the stored ones ([`IterSet::Stored`]); inside it, that read's position is the loop's
//! own. Several such reads make an [`IterSet::Intersection`]: a fold merges compressed levels
//! (walks their positions together, [`CoIteration::merge`]); a kernel's domain level iterates
//! the first set, in a loop threads can share, and locates the others. [`IterSet::Union`] is the construct for operations defined where *any*
//! operand exists; no Strata operation has that meaning yet (elementwise results exist where
//! every operand does), so lowering never builds one and the emitter refuses it by name.

use std::rc::Rc;

use strata_ir::{DimName, Interval, Level, LevelFormat};

use crate::kernel::{Kernel, KernelProgram};
use crate::sym::{for_each_coord_part, for_each_part, Coord, Part, SExpr, SparseRead};

/// A sparse or ragged value as its storage buffers.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseTensor {
    /// The parameter's name.
    pub name: String,
    /// Its levels (names, intervals, formats).
    pub levels: Vec<Level>,
    /// How each level is stored.
    pub storage: Vec<LevelStorage>,
    /// The buffer of the stored values, in leaf order.
    pub values: usize,
}

/// The storage of one level (buffer indices into the program's buffers, `int64` each).
#[derive(Clone, Debug, PartialEq)]
pub enum LevelStorage {
    /// Every coordinate of the interval: position `parent · size + offset`.
    Dense {
        /// Interval length.
        size: u64,
    },
    /// Parent `p` stores `coordinates[positions[p]..positions[p + 1]]` (sorted, unique).
    Compressed {
        /// Buffer of positions (parents + 1).
        positions: usize,
        /// Buffer of coordinates (offsets within the interval).
        coordinates: usize,
    },
    /// Parent `p` stores coordinates `0 … offsets[p + 1] − offsets[p] − 1`, from position
    /// `offsets[p]`.
    Ragged {
        /// Buffer of offsets (parents + 1).
        offsets: usize,
    },
}

/// The storage the native backend reads a sparse or ragged argument in: the type's formats,
/// except that every level below a stored (compressed or ragged) one is compressed, and COO's
/// non-unique compressed and singleton levels are compressed (unique). The stored entries are
/// the same — exactly the present elements, as the runtime holds them (COO duplicates are
/// summed when the file is read) — and in the same row-major order, so folds visit them in the
/// interpreter's order; a ragged level is kept only below dense ones, where its runs are
/// prefixes.
pub fn storage_formats(levels: &[Level]) -> Vec<LevelFormat> {
    let mut below_stored = false;
    levels
        .iter()
        .map(|l| {
            let f = match l.format {
                LevelFormat::Dense | LevelFormat::Block if !below_stored => l.format,
                LevelFormat::Ragged { .. } if !below_stored => l.format,
                _ => LevelFormat::COMPRESSED,
            };
            below_stored |= !f.is_dense_like();
            f
        })
        .collect()
}

/// The level formats of a bound sparse tensor's storage (as [`storage_formats`] chose them).
pub fn formats_of(t: &SparseTensor) -> Vec<LevelFormat> {
    t.storage
        .iter()
        .map(|s| match s {
            LevelStorage::Dense { .. } => LevelFormat::Dense,
            LevelStorage::Compressed { .. } => LevelFormat::COMPRESSED,
            LevelStorage::Ragged { .. } => LevelFormat::Ragged { total: strata_ir::Extent::Dynamic },
        })
        .collect()
}

/// A set of coordinates a loop visits.
#[derive(Clone, Debug, PartialEq)]
pub enum IterSet {
    /// The coordinates `read` stores at `level`, below the position its earlier coordinates
    /// locate.
    Stored {
        /// The read whose stored coordinates are visited.
        read: Rc<SparseRead>,
        /// Its level iterated by the loop.
        level: usize,
    },
    /// Coordinates in every set (merged, or run as: iterate the first, locate in the others;
    /// see [`CoIteration::merge`]).
    Intersection(Vec<IterSet>),
    /// Coordinates in any set (not produced by lowering yet; see the module documentation).
    Union(Vec<IterSet>),
}

impl IterSet {
    /// The set a loop runs over (the first of an intersection); `None` for a union.
    pub fn lead(&self) -> Option<(&Rc<SparseRead>, usize)> {
        match self {
            IterSet::Stored { read, level } => Some((read, *level)),
            IterSet::Intersection(sets) => sets.first().and_then(IterSet::lead),
            IterSet::Union(_) => None,
        }
    }
}

impl std::fmt::Display for IterSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |f: &mut std::fmt::Formatter<'_>, sets: &[IterSet], op: &str| {
            let parts: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            write!(f, "({})", parts.join(op))
        };
        match self {
            IterSet::Stored { read, level } => write!(f, "stored({}, level {level})", crate::sym::show_sparse(read)),
            IterSet::Intersection(sets) => join(f, sets, " ∩ "),
            IterSet::Union(sets) => join(f, sets, " ∪ "),
        }
    }
}

/// A loop of a kernel (a domain level or a fold variable) that visits a set of stored
/// coordinates instead of its whole range.
#[derive(Clone, Debug, PartialEq)]
pub struct CoIteration {
    /// The loop variable.
    pub var: DimName,
    /// Its range (points outside it are skipped).
    pub range: Interval,
    /// The coordinates visited.
    pub set: IterSet,
    /// Walk every member of an intersection of compressed levels together (a merge: advance
    /// the positions whose coordinate is behind, visit where all agree) instead of iterating
    /// the first and locating the others. Set for fold variables; a kernel's domain levels
    /// keep a counted loop over the first set's positions, which threads can share.
    pub merge: bool,
}

impl CoIteration {
    /// The reads whose positions the loop walks, with their levels: every member when merging,
    /// else the lead.
    pub fn walked(&self) -> Vec<(&Rc<SparseRead>, usize)> {
        match (&self.set, self.merge) {
            (IterSet::Intersection(sets), true) => sets.iter().filter_map(IterSet::lead).collect(),
            _ => self.set.lead().into_iter().collect(),
        }
    }
}

/// The sparse reads without which `e` is absent: reads it needs whatever the data (not under
/// one branch of a select only, not inside `can_deref`, not inside a fold, which is always
/// present).
pub fn required_reads(e: &Rc<SExpr>) -> Vec<Rc<SparseRead>> {
    fn coord(c: &Coord, out: &mut Vec<Rc<SparseRead>>) {
        if let Coord::Computed { value, .. } = c {
            expr(value, out);
        }
        // Table coordinates are present or skipped by their table, not by sparse storage.
    }
    fn expr(e: &Rc<SExpr>, out: &mut Vec<Rc<SparseRead>>) {
        match &**e {
            SExpr::Sparse(r) => {
                if !out.contains(r) {
                    out.push(r.clone());
                }
                r.coords.iter().for_each(|c| coord(c, out));
            }
            SExpr::Load(l) => l.coords.iter().for_each(|c| coord(c, out)),
            SExpr::Index(c) => coord(c, out),
            SExpr::Guard { value, .. } | SExpr::Unary(_, value, _) | SExpr::Cast(value, _, _) => expr(value, out),
            SExpr::Binary(_, a, b, _) => {
                expr(a, out);
                expr(b, out);
            }
            SExpr::Select(c, t, f) => {
                expr(c, out);
                let (mut rt, mut rf) = (Vec::new(), Vec::new());
                expr(t, &mut rt);
                expr(f, &mut rf);
                out.extend(rt.into_iter().filter(|r| rf.contains(r)));
            }
            SExpr::Const(_) | SExpr::Acc(_) | SExpr::Absent(_) | SExpr::Present(_) | SExpr::Reduce { .. } => {}
        }
    }
    let mut out = Vec::new();
    expr(e, &mut out);
    out
}

/// Whether `e` reads a sparse or ragged tensor.
pub fn reads_sparse(e: &Rc<SExpr>) -> bool {
    fn part(p: Part, found: &mut bool) {
        match p {
            Part::Expr(e) => {
                *found |= matches!(&**e, SExpr::Sparse(_));
                for_each_part(e, &mut |q| part(q, found));
            }
            Part::Coord(c) => for_each_coord_part(c, &mut |q| part(q, found)),
        }
    }
    let mut found = false;
    part(Part::Expr(e), &mut found);
    found
}

/// The set a loop over `var` may visit instead of its range, given the reads every step
/// needs: each read whose coordinate at a stored (compressed or ragged) level is exactly
/// `var`, with the earlier levels' coordinates computable outside the loop (reading only
/// `outer` variables).
fn set_for(program: &KernelProgram, var: &DimName, needed: &[Rc<SparseRead>], outer: &[DimName]) -> Option<IterSet> {
    let mut sets = Vec::new();
    for r in needed {
        let t = &program.sparse[r.tensor];
        let Some(level) = r.coords.iter().position(|c| matches!(c, Coord::Var { dim, offset: 0 } if dim == var)) else {
            continue;
        };
        let stored = !matches!(t.storage[level], LevelStorage::Dense { .. });
        let prefix_outside = r.coords[..level].iter().all(|c| coord_vars(c).iter().all(|v| outer.contains(v)));
        if stored && prefix_outside {
            sets.push(IterSet::Stored { read: r.clone(), level });
        }
    }
    match sets.len() {
        0 => None,
        1 => sets.pop(),
        _ => Some(IterSet::Intersection(sets)),
    }
}

/// Whether `set` is an intersection of compressed levels only (which a merge walks).
fn mergeable(program: &KernelProgram, set: &IterSet) -> bool {
    let IterSet::Intersection(sets) = set else { return false };
    sets.iter().all(|s| {
        matches!(s, IterSet::Stored { read, level }
            if matches!(program.sparse[read.tensor].storage[*level], LevelStorage::Compressed { .. }))
    })
}

/// The loop variables a coordinate reads.
fn coord_vars(c: &Coord) -> Vec<DimName> {
    let probe = Rc::new(SExpr::Index(c.clone()));
    crate::sym::free_vars(&probe)
}

/// The pass: finds the loops of every plain kernel — domain levels and fold variables — that
/// may visit stored coordinates only (see the module documentation), recorded in
/// [`Kernel::sets`]. A kernel whose domain loops visit sets stores only there, so its outputs
/// must start as zeros: they are marked as not overwritten.
pub fn coiterate(program: &mut KernelProgram) {
    if program.sparse.is_empty() {
        return;
    }
    let mut kernels = std::mem::take(&mut program.kernels);
    for k in &mut kernels {
        if !k.plain() {
            continue;
        }
        k.sets = kernel_sets(program, k);
        let domain_vars: Vec<&DimName> = k.domain.iter().map(|l| &l.name).collect();
        if k.sets.iter().any(|s| domain_vars.contains(&&s.var)) {
            for st in &k.stores {
                program.buffers[st.buffer].overwritten = false;
            }
        }
    }
    program.kernels = kernels;
}

/// The co-iterations of one kernel: its domain levels (where every store is zero outside a
/// read's stored coordinates) and the variables of every fold it evaluates.
fn kernel_sets(program: &KernelProgram, k: &Kernel) -> Vec<CoIteration> {
    let mut out = Vec::new();
    // A store is zero where its value is absent, and a presence store (`can_deref(x)`) where
    // `x` is: the reads each needs, and those all stores need.
    let mut needed: Option<Vec<Rc<SparseRead>>> = None;
    for st in &k.stores {
        let own = match &*st.value {
            SExpr::Present(x) => required_reads(x),
            _ => required_reads(&st.value),
        };
        needed = Some(match needed {
            None => own,
            Some(prev) => prev.into_iter().filter(|r| own.contains(r)).collect(),
        });
    }
    let needed = needed.unwrap_or_default();
    let mut outer: Vec<DimName> = Vec::new();
    for l in &k.domain {
        if let Some(set) = set_for(program, &l.name, &needed, &outer) {
            out.push(CoIteration { var: l.name.clone(), range: l.interval, set, merge: false });
        }
        outer.push(l.name.clone());
    }
    for st in &k.stores {
        fold_sets(program, &st.value, &outer, &mut out);
    }
    out
}

/// The co-iterations of the folds inside `e`, evaluated where the variables `outer` are
/// bound.
fn fold_sets(program: &KernelProgram, e: &Rc<SExpr>, outer: &[DimName], out: &mut Vec<CoIteration>) {
    if let SExpr::Reduce { vars, init, body, .. } = &**e {
        fold_sets(program, init, outer, out);
        let needed = required_reads(body);
        let mut bound = outer.to_vec();
        for (v, range) in vars {
            if let Some(set) = set_for(program, v, &needed, &bound) {
                if !out.iter().any(|c| &c.var == v) {
                    let merge = mergeable(program, &set);
                    out.push(CoIteration { var: v.clone(), range: *range, set, merge });
                }
            }
            bound.push(v.clone());
        }
        fold_sets(program, body, &bound, out);
        return;
    }
    let mut parts = Vec::new();
    for_each_part(e, &mut |p| parts.push(part_expr(p)));
    for x in parts.into_iter().flatten() {
        fold_sets(program, &x, outer, out);
    }
}

/// The expressions directly below a part (a coordinate's computed value or table coordinates
/// are expressions too).
fn part_expr(p: Part) -> Vec<Rc<SExpr>> {
    match p {
        Part::Expr(e) => vec![e.clone()],
        Part::Coord(c) => {
            let mut v = Vec::new();
            for_each_coord_part(c, &mut |q| v.extend(part_expr(q)));
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_ir::{BinaryOp, Scalar};

    fn var(d: &str) -> Coord {
        Coord::Var { dim: DimName::new(d), offset: 0 }
    }

    fn read(t: usize, cs: &[&str]) -> Rc<SExpr> {
        Rc::new(SExpr::Sparse(Rc::new(SparseRead { tensor: t, coords: cs.iter().map(|c| var(c)).collect() })))
    }

    #[test]
    fn a_select_needs_only_what_both_branches_need() {
        let (a, b) = (read(0, &["I"]), read(1, &["I"]));
        let both = Rc::new(SExpr::Binary(BinaryOp::Multiplies, a.clone(), b.clone(), Scalar::F64));
        assert_eq!(required_reads(&both).len(), 2);
        let cond = Rc::new(SExpr::Const(strata_runtime::Sv::Bool(true)));
        let sel = Rc::new(SExpr::Select(cond, both, a.clone()));
        let SExpr::Sparse(ra) = &*a else { unreachable!() };
        assert_eq!(required_reads(&sel), vec![ra.clone()]);
        assert!(required_reads(&Rc::new(SExpr::Present(b))).is_empty());
    }
}
