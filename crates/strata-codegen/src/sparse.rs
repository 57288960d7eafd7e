//! Sparse and ragged tensors in the loop-level IR: their storage as the kernels see it, and
//! seed 004's *set-based iteration* — a loop that visits only the coordinates some operands
//! store instead of a whole interval.
//!
//! A sparse or ragged input is bound as its storage buffers (`strata_runtime::storage`: per
//! level positions and coordinates, or offsets; values at the leaves) and read through
//! [`SExpr::Sparse`]: an element at logical coordinates — the stored value, the fill value
//! (zero) where a compressed level does not list it, absent (skipped) past a ragged run's end.
//! That read is always correct on its own (the emitter locates the position level by level),
//! so a level format never changes a value. The pass [`coiterate`] then turns loops into
//! iterations over stored coordinates where the algebra proves that cannot change the result
//! ([`crate::fill`]): a fold may leave out the points where a read is its fill value if its step
//! leaves the accumulator unchanged there, and a kernel may leave out output points whose
//! value is zero there (outputs start as zeros); points where a ragged read is skipped are
//! left out by every fold and store. One such read gives [`IterSet::Stored`] (inside the loop,
//! the read's position is the loop's own); several give an [`IterSet::Intersection`], which a
//! fold walks as a merge of compressed levels ([`CoIteration::merge`]) and a kernel's domain
//! level runs as a loop over the first set (which threads can share) locating the others. Reads
//! that only together make a step the identity (`acc + a + b`, `a + b` into a sparse result)
//! give an [`IterSet::Union`], walked as a merge that visits every coordinate any of them
//! stores, the others reading their fill value there.

use std::rc::Rc;

use strata_ir::{BinaryOp, DimName, Interval, Level, LevelFormat};

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
/// except that every dense level below a stored (compressed or ragged) one is compressed, and
/// COO's non-unique compressed and singleton levels are compressed (unique). The stored
/// entries are the ones `strata_runtime::storage::assemble` stores for the type (COO
/// duplicates are summed when the file is read), in the same row-major order, so folds visit
/// them in the interpreter's order. Ragged levels stay ragged: their runs decide which
/// elements exist, which no other format says.
pub fn storage_formats(levels: &[Level]) -> Vec<LevelFormat> {
    let mut below_stored = false;
    levels
        .iter()
        .map(|l| {
            let f = match l.format {
                LevelFormat::Dense | LevelFormat::Block if !below_stored => l.format,
                LevelFormat::Ragged { .. } => l.format,
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
    /// Coordinates in any set (a merge of compressed levels; see the module documentation).
    Union(Vec<IterSet>),
}

impl IterSet {
    /// Every read the set names: each member of an intersection or a union.
    pub fn reads(&self) -> Vec<&Rc<SparseRead>> {
        match self {
            IterSet::Stored { read, .. } => vec![read],
            IterSet::Intersection(sets) | IterSet::Union(sets) => sets.iter().flat_map(IterSet::reads).collect(),
        }
    }

    /// The set a loop runs over (the first of an intersection); `None` for a union, which
    /// every member drives.
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
            (IterSet::Intersection(sets) | IterSet::Union(sets), true) => {
                sets.iter().filter_map(IterSet::lead).collect()
            }
            _ => self.set.lead().into_iter().collect(),
        }
    }

    /// Whether the loop visits a union (a walked read may not store the visited coordinate).
    pub fn is_union(&self) -> bool {
        matches!(self.set, IterSet::Union(_))
    }
}

/// The sparse reads without which `e` is absent (skipped): reads it needs whatever the data
/// (not under one branch of a select only, not inside a fold, which always exists), including
/// those a step guard (`select(present(x) ∧ …, v, absent)`, [`crate::fill::only_where`]) tests.
/// Only ragged reads can actually be skipped; callers filter.
pub fn required_reads(e: &Rc<SExpr>) -> Vec<Rc<SparseRead>> {
    fn coord(c: &Coord, out: &mut Vec<Rc<SparseRead>>) {
        if let Coord::Computed { value, .. } = c {
            expr(value, out);
        }
        // Table coordinates are present or skipped by their table, not by sparse storage.
    }
    fn push(out: &mut Vec<Rc<SparseRead>>, rs: impl IntoIterator<Item = Rc<SparseRead>>) {
        for r in rs {
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    /// The reads without which condition `c` is false (its presence tests' operands).
    fn truth(c: &Rc<SExpr>, out: &mut Vec<Rc<SparseRead>>) {
        match &**c {
            SExpr::Present(x) => expr(x, out),
            SExpr::Binary(BinaryOp::And, a, b, _) => {
                truth(a, out);
                truth(b, out);
            }
            _ => {}
        }
    }
    fn expr(e: &Rc<SExpr>, out: &mut Vec<Rc<SparseRead>>) {
        match &**e {
            SExpr::Sparse(r) => {
                push(out, [r.clone()]);
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
                if matches!(&**f, SExpr::Absent(_)) {
                    truth(c, out);
                    expr(t, out);
                    return;
                }
                let (mut rt, mut rf) = (Vec::new(), Vec::new());
                expr(t, &mut rt);
                expr(f, &mut rf);
                push(out, rt.into_iter().filter(|r| rf.contains(r)));
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
    !sparse_reads(e).is_empty()
}

/// Every sparse read in `e` (inside folds and coordinates too), once each.
pub(crate) fn sparse_reads(e: &Rc<SExpr>) -> Vec<Rc<SparseRead>> {
    fn part(p: Part, out: &mut Vec<Rc<SparseRead>>) {
        match p {
            Part::Expr(e) => {
                if let SExpr::Sparse(r) = &**e {
                    if !out.contains(r) {
                        out.push(r.clone());
                    }
                }
                for_each_part(e, &mut |q| part(q, out));
            }
            Part::Coord(c) => for_each_coord_part(c, &mut |q| part(q, out)),
        }
    }
    let mut out = Vec::new();
    part(Part::Expr(e), &mut out);
    out
}

/// The reads of `exprs` a loop over `var` could walk: each read whose coordinate at a stored
/// (compressed or ragged) level is exactly `var`, with the earlier levels' coordinates
/// computable outside the loop (reading only `outer` variables).
fn candidates(
    program: &KernelProgram,
    exprs: &[&Rc<SExpr>],
    var: &DimName,
    outer: &[DimName],
) -> Vec<(Rc<SparseRead>, usize)> {
    let mut out: Vec<(Rc<SparseRead>, usize)> = Vec::new();
    for r in exprs.iter().flat_map(|e| sparse_reads(e)) {
        let t = &program.sparse[r.tensor];
        let Some(level) = r.coords.iter().position(|c| matches!(c, Coord::Var { dim, offset: 0 } if dim == var)) else {
            continue;
        };
        let stored = !matches!(t.storage[level], LevelStorage::Dense { .. });
        let prefix_outside = r.coords[..level].iter().all(|c| coord_vars(c).iter().all(|v| outer.contains(v)));
        if stored && prefix_outside && !out.iter().any(|(o, _)| *o == r) {
            out.push((r, level));
        }
    }
    out
}

/// How a loop over `var` may visit stored coordinates, given its candidate reads: the reads
/// for which `alone` holds (each makes every left-out point a no-op) intersect; failing those,
/// the compressed candidates unite if `together` holds for all of them.
fn choose(
    program: &KernelProgram,
    cands: &[(Rc<SparseRead>, usize)],
    alone: &dyn Fn(&Rc<SparseRead>, bool) -> bool,
    together: &dyn Fn(&[Rc<SparseRead>]) -> bool,
) -> Option<IterSet> {
    let compressed = |r: &Rc<SparseRead>, level: usize| {
        matches!(program.sparse[r.tensor].storage[level], LevelStorage::Compressed { .. })
    };
    let mut singles: Vec<IterSet> = cands
        .iter()
        .filter(|(r, level)| alone(r, !compressed(r, *level)))
        .map(|(r, level)| IterSet::Stored { read: r.clone(), level: *level })
        .collect();
    match singles.len() {
        0 => {}
        1 => return singles.pop(),
        _ => return Some(IterSet::Intersection(singles)),
    }
    let members: Vec<&(Rc<SparseRead>, usize)> = cands.iter().filter(|(r, level)| compressed(r, *level)).collect();
    let reads: Vec<Rc<SparseRead>> = members.iter().map(|(r, _)| r.clone()).collect();
    (members.len() >= 2 && together(&reads)).then(|| {
        IterSet::Union(members.iter().map(|(r, level)| IterSet::Stored { read: r.clone(), level: *level }).collect())
    })
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
        if k.as_nest().is_none() {
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

/// The scalar type of sparse tensor `t`'s values.
fn scalar_of(program: &KernelProgram) -> impl Fn(usize) -> strata_ir::Scalar + '_ {
    |t| program.buffers[program.sparse[t].values].scalar
}

/// The co-iterations of one kernel: its domain levels (where every store is zero at the
/// left-out points, or skipped there) and the variables of every fold it evaluates.
fn kernel_sets(program: &KernelProgram, k: &Kernel) -> Vec<CoIteration> {
    let mut out = Vec::new();
    let scalar = scalar_of(program);
    let values: Vec<&Rc<SExpr>> = k.stores.iter().map(|st| &st.value).collect();
    // A store is zero where its value is skipped, and a presence store (`can_deref(x)`) where
    // `x` is.
    let skipped_by: Vec<Vec<Rc<SparseRead>>> = k
        .stores
        .iter()
        .map(|st| match &*st.value {
            SExpr::Present(x) => required_reads(x),
            _ => required_reads(&st.value),
        })
        .collect();
    let alone = |r: &Rc<SparseRead>, ragged: bool| {
        if ragged {
            skipped_by.iter().all(|rs| rs.contains(r))
        } else {
            values.iter().all(|v| crate::fill::zero_at_fill(v, std::slice::from_ref(r), &scalar))
        }
    };
    let together = |rs: &[Rc<SparseRead>]| values.iter().all(|v| crate::fill::zero_at_fill(v, rs, &scalar));
    // Left-out points keep the buffer's initial content: zeros for results and temporaries,
    // but the caller's data in an `out` parameter, which the assignment overwrites everywhere.
    let fresh = k.stores.iter().all(|st| program.buffers[st.buffer].param.is_none());
    // On a GPU a domain level stays dense: its points are the grid's, a thread each (the folds
    // inside a point still visit stored coordinates, in the thread's own loops).
    let domain_sets = fresh && program.gpu.is_none();
    let mut outer: Vec<DimName> = Vec::new();
    for l in &k.domain {
        let cands = if domain_sets { candidates(program, &values, &l.name, &outer) } else { Vec::new() };
        if let Some(set) = choose(program, &cands, &alone, &together) {
            let merge = matches!(set, IterSet::Union(_));
            out.push(CoIteration { var: l.name.clone(), range: l.interval, set, merge });
        }
        outer.push(l.name.clone());
    }
    // Folds sharing a variable name (equal sibling reductions keep equal names) share its set
    // only when each of them chose the same one; otherwise the variable iterates densely.
    let mut choices: Vec<(DimName, Option<CoIteration>)> = Vec::new();
    for st in &k.stores {
        fold_sets(program, &st.value, &outer, &mut choices);
    }
    for (v, choice) in &choices {
        let agreed = choices.iter().filter(|(w, _)| w == v).all(|(_, c)| c == choice);
        if let (true, Some(c)) = (agreed, choice) {
            if !out.iter().any(|o: &CoIteration| &o.var == v) {
                out.push(c.clone());
            }
        }
    }
    out
}

/// The co-iteration each fold inside `e` may use for each of its variables (`None`: dense),
/// evaluated where the variables `outer` are bound: a step may be left out where a read is its fill value if the step then leaves the
/// accumulator unchanged, and where a ragged read it needs is skipped.
fn fold_sets(program: &KernelProgram, e: &Rc<SExpr>, outer: &[DimName], out: &mut Vec<(DimName, Option<CoIteration>)>) {
    if let SExpr::Reduce { id, vars, init, body, .. } = &**e {
        fold_sets(program, init, outer, out);
        let scalar = scalar_of(program);
        let needed = required_reads(body);
        let alone = |r: &Rc<SparseRead>, ragged: bool| {
            if ragged {
                needed.contains(r)
            } else {
                crate::fill::unchanged_at_fill(body, *id, std::slice::from_ref(r), &scalar)
            }
        };
        let together = |rs: &[Rc<SparseRead>]| crate::fill::unchanged_at_fill(body, *id, rs, &scalar);
        let mut bound = outer.to_vec();
        for (v, range) in vars {
            let cands = candidates(program, &[body], v, &bound);
            let choice = choose(program, &cands, &alone, &together).map(|set| {
                let merge = matches!(set, IterSet::Union(_)) || mergeable(program, &set);
                CoIteration { var: v.clone(), range: *range, set, merge }
            });
            out.push((v.clone(), choice));
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
