//! The C for sparse and ragged reads and for loops over stored coordinates (see
//! [`crate::sparse`]): locating a read's position level by level, the loop headers that visit
//! a set (one stored level, or a merge of several), and which positions those loops know.

use super::extents::ext;
use std::rc::Rc;

use crate::sparse::{CoIteration, IterSet, LevelStorage};
use crate::sym::SparseRead;

use super::{var, Emitter};

impl Emitter<'_> {
    /// The loop that visits the stored coordinates for variable `v`, if it is one.
    pub(super) fn set_of(&self, v: &strata_ir::DimName) -> Option<&CoIteration> {
        self.sets.iter().find(|c| &c.var == v)
    }

    /// The C variable holding read `r`'s position at level `k`, when an enclosing loop visits
    /// exactly that level's stored coordinates below the same earlier coordinates, and whether
    /// it may be [`UNSTORED`] (a union visits coordinates some members do not store).
    fn known_position(&self, r: &SparseRead, k: usize) -> Option<(String, bool)> {
        self.sets.iter().find_map(|c| {
            c.walked().into_iter().enumerate().find_map(|(i, (walked, level))| {
                (level == k && walked.tensor == r.tensor && walked.coords[..=k] == r.coords[..=k]).then(|| {
                    let v = var(c.var.as_str());
                    if c.is_union() {
                        (format!("h{i}_{v}"), true)
                    } else {
                        (position_var(i, &v), false)
                    }
                })
            })
        })
    }

    /// The C position of read `r` after its first `upto` levels (`0`, the root, for none):
    /// non-negative where the entry is stored, [`UNSTORED`] where a compressed level does not
    /// list it (the fill value), [`SKIPPED`] past a ragged run's end (no value). Starts from the
    /// deepest position an enclosing set loop knows, then locates level by level: dense levels
    /// by arithmetic, compressed ones by binary search, ragged ones by a bound check (an
    /// unstored parent has an empty run).
    pub(super) fn sparse_position(&self, r: &SparseRead, upto: usize) -> Located {
        let t = &self.program.sparse[r.tensor];
        let (mut p, from, mut unstored) = (0..upto)
            .rev()
            .find_map(|k| self.known_position(r, k).map(|(q, unstored)| (q, k + 1, unstored)))
            .unwrap_or_else(|| ("INT64_C(0)".to_string(), 0, false));
        let mut skipped = false;
        for k in from..upto {
            let c = super::extents::relative(self.coord(&r.coords[k]), t.levels[k].interval.start);
            let pk = format!("p{k}_");
            let may_be_negative = unstored || skipped;
            let next = match &t.storage[k] {
                LevelStorage::Dense { size } => format!("{pk} * {} + {c}", ext(*size as i64)),
                LevelStorage::Compressed { positions, coordinates } => {
                    let (pos, crd) = (self.name(*positions), self.name(*coordinates));
                    unstored = true;
                    let find = match self.program.buffers[*coordinates].scalar {
                        strata_ir::Scalar::I32 => "strata_find32",
                        _ => "strata_find",
                    };
                    format!("{find}({crd}, {pos}[{pk}], {pos}[{pk} + 1], {c})")
                }
                LevelStorage::Ragged { offsets } => {
                    let off = self.name(*offsets);
                    skipped = true;
                    let run = format!("({c}) < {off}[{pk} + 1] - {off}[{pk}] ? {off}[{pk}] + ({c}) : {SKIPPED}");
                    let guarded = if may_be_negative { format!("{pk} < 0 ? {SKIPPED} : {run}") } else { run };
                    p = self.block(&format!("const int64_t {pk} = {p};"), &guarded);
                    continue;
                }
            };
            let guarded = if may_be_negative { format!("{pk} < 0 ? {pk} : {next}") } else { next };
            p = self.block(&format!("const int64_t {pk} = {p};"), &guarded);
        }
        Located { position: p, unstored, skipped }
    }

    /// How a loop visits set `c` (see [`crate::sparse`]): over the positions of the lead
    /// read's level below its parent position, binding the variable to each stored coordinate
    /// (and skipping those outside the variable's range). The other reads of an intersection
    /// are located in the body. `None` for a union ([`Self::union_loop`] walks those).
    pub(super) fn set_bounds(&self, c: &CoIteration) -> Option<SetBounds> {
        let (r, k) = c.set.lead()?;
        let t = &self.program.sparse[r.tensor];
        let v = var(c.var.as_str());
        let level = t.levels[k].interval;
        let (first, last, offset) = match &t.storage[k] {
            LevelStorage::Compressed { positions, coordinates } => {
                let pos = self.name(*positions);
                (format!("{pos}[pp_{v}]"), format!("{pos}[pp_{v} + 1]"), format!("{}[q_{v}]", self.name(*coordinates)))
            }
            LevelStorage::Ragged { offsets } => {
                let off = self.name(*offsets);
                (format!("{off}[pp_{v}]"), format!("{off}[pp_{v} + 1]"), format!("q_{v} - {off}[pp_{v}]"))
            }
            LevelStorage::Dense { .. } => unreachable!("sets visit stored levels"),
        };
        Some(SetBounds {
            parent: self.sparse_position(r, k).position,
            first,
            last,
            coordinate: format!("{offset} + {}", ext(level.start)),
            range: range_outside(c, level),
            v,
        })
    }

    /// The conditions (C) that every member of intersection `c` the loop locates rather than
    /// walks stores the visited coordinate: the body runs only where all do, as the set means
    /// (a fold step is the identity, a store zero, wherever one of them is at its fill value or
    /// skipped). Without them a product would still read the walked operand's value where a
    /// located one is unstored, only to store or add zero. Empty for other sets.
    pub(super) fn located_members_stored(&self, c: &CoIteration) -> Vec<String> {
        fn stored<'s>(set: &'s IterSet, out: &mut Vec<(&'s Rc<SparseRead>, usize)>) {
            match set {
                IterSet::Stored { read, level } => out.push((read, *level)),
                IterSet::Intersection(sets) => sets.iter().for_each(|s| stored(s, out)),
                IterSet::Union(_) => {}
            }
        }
        if c.merge || !matches!(c.set, IterSet::Intersection(_)) {
            return Vec::new();
        }
        let walked = c.walked();
        let mut members = Vec::new();
        stored(&c.set, &mut members);
        members
            .into_iter()
            .filter(|(r, k)| !walked.iter().any(|(w, l)| Rc::ptr_eq(w, r) && l == k))
            .map(|(r, k)| format!("{} >= 0", self.sparse_position(r, k + 1).position))
            .collect()
    }

    /// The C loop header of set `c` inside a fold (one line, so it composes with the
    /// statement expressions folds are written as).
    pub(super) fn set_loop(&self, c: &CoIteration) -> String {
        self.set_loop_with(c, None)
    }

    /// [`Self::set_loop`], running the C statement `on_bind` (if any) as each stored coordinate
    /// of a single set's loop is bound, before the body.
    pub(super) fn set_loop_with(&self, c: &CoIteration, on_bind: Option<&str>) -> String {
        if c.is_union() {
            return self.union_loop(c);
        }
        if c.merge {
            return self.merge_loop(c);
        }
        let Some(b) = self.set_bounds(c) else { unreachable!("only unions have no lead") };
        let SetBounds { v, parent, first, last, mut coordinate, range } = b;
        if let Some(stmt) = on_bind {
            coordinate = format!("(({{ {stmt} }}), {coordinate})");
        }
        let located = self.located_members_stored(c);
        let check = if located.is_empty() {
            range_check(&v, range)
        } else {
            format!("{}if ({}) ", range_check(&v, range), located.join(" && "))
        };
        format!(
            "for (int64_t pp_{v} = {parent}, q_{v} = pp_{v} < 0 ? 0 : {first}, qe_{v} = pp_{v} < 0 ? 0 : {last}; \
             q_{v} < qe_{v}; ++q_{v}) for (int64_t {v} = {coordinate}, o_{v} = 1; o_{v}; o_{v} = 0) {check}"
        )
    }

    /// The loop header walking the compressed levels of an intersection together: while every
    /// position is inside its segment, advance those whose coordinate is behind the largest,
    /// and where all coordinates agree, bind the variable and run the body once (advancing all).
    fn merge_loop(&self, c: &CoIteration) -> String {
        let v = var(c.var.as_str());
        let cursors = self.cursors(c, &v);
        let crds: Vec<(String, &str)> = cursors.iter().map(|k| (k.coordinate.clone(), k.q.as_str())).collect();
        let agree: Vec<String> = crds.windows(2).map(|w| format!("{} == {}", w[0].0, w[1].0)).collect();
        // A conditional move, not a branch: which cursor is behind is a coin toss per step, and
        // GCC turned `if (x > m_) m_ = x;` into a jump that mispredicted half of them (a sparse
        // dot of 168 K coordinates each: 1.87 -> 1.33 ms in a standalone loop).
        let largest: String = crds[1..].iter().map(|(x, _)| format!("m_ = strata_max_i64(m_, {x}); ")).collect();
        let advance: String = crds.iter().map(|(x, q)| format!("{q} += {x} < m_; ")).collect();
        let step: String = crds.iter().map(|(_, q)| format!(", ++{q}")).collect();
        let level = self.lead_interval(c);
        let start = ext(level.start);
        let check = range_check(&v, range_outside(c, level));
        format!(
            "for (int64_t {}; {}; ) if (!({})) {{ int64_t m_ = {}; {largest}{advance}}} \
             else for (int64_t {v} = {} + {start}, o_{v} = 1; o_{v}; o_{v} = 0{step}) {check}",
            cursors.iter().map(|k| k.init.as_str()).collect::<Vec<_>>().join(", "),
            cursors.iter().map(|k| k.inside()).collect::<Vec<_>>().join(" && "),
            agree.join(" && "),
            crds[0].0,
            crds[0].0,
        )
    }

    /// The loop header walking the compressed levels of a union together (one line): while
    /// any position is inside its segment, visit the smallest coordinate any of them is at;
    /// there read `i`'s position `h{i}_v` is its cursor where it stores that coordinate and
    /// [`UNSTORED`] elsewhere, and the cursors that stored it advance after the body.
    pub(super) fn union_loop(&self, c: &CoIteration) -> String {
        let v = var(c.var.as_str());
        let cursors = self.cursors(c, &v);
        let at: Vec<String> =
            cursors.iter().map(|k| format!("({} ? {} : INT64_MAX)", k.inside(), k.coordinate)).collect();
        let smallest = at.iter().skip(1).fold(at[0].clone(), |m, x| format!("strata_min_i64({m}, {x})"));
        let (mut hits, mut step) = (Vec::new(), Vec::new());
        for (i, k) in cursors.iter().enumerate() {
            let h = format!("h{i}_{v}");
            hits.push(format!("{h} = {} && {} == m_{v} ? {} : {UNSTORED}", k.inside(), k.coordinate, k.q));
            step.push(format!("{} += {h} >= 0", k.q));
        }
        let level = self.lead_interval(c);
        let check = range_check(&v, range_outside(c, level));
        format!(
            "for (int64_t {}; {}; ) for (int64_t m_{v} = {smallest}, {}, {v} = m_{v} + {}, o_{v} = 1; o_{v}; o_{v} = 0, {}) {check}",
            cursors.iter().map(|k| k.init.as_str()).collect::<Vec<_>>().join(", "),
            cursors.iter().map(Cursor::inside).collect::<Vec<_>>().join(" || "),
            hits.join(", "),
            ext(level.start),
            step.join(", "),
        )
    }

    /// One cursor per compressed level a merge or union over `c` walks: its position `q`
    /// starts at its segment below the parent position and ends at `qe`.
    fn cursors(&self, c: &CoIteration, v: &str) -> Vec<Cursor> {
        c.walked()
            .into_iter()
            .enumerate()
            .map(|(i, (r, k))| {
                let LevelStorage::Compressed { positions, coordinates } = &self.program.sparse[r.tensor].storage[k]
                else {
                    unreachable!("merges and unions walk compressed levels")
                };
                let (pos, crd) = (self.name(*positions), self.name(*coordinates));
                let (q, pp, qe) = (position_var(i, v), format!("pp{i}_{v}"), format!("qe{i}_{v}"));
                let parent = self.sparse_position(r, k).position;
                Cursor {
                    init: format!(
                        "{pp} = {parent}, {q} = {pp} < 0 ? 0 : {pos}[{pp}], {qe} = {pp} < 0 ? 0 : {pos}[{pp} + 1]"
                    ),
                    coordinate: format!("{crd}[{q}]"),
                    q,
                    qe,
                }
            })
            .collect()
    }

    /// A C expression bounding how many coordinates `set` visits below the current parent
    /// positions, from the positions alone (no coordinate is read): a stored level's segment
    /// length, the smallest bound of an intersection's members, the sum of a union's.
    pub(super) fn set_bound(&self, set: &crate::sparse::IterSet) -> Option<String> {
        use crate::sparse::IterSet;
        match set {
            IterSet::Stored { read, level } => {
                let pos = match &self.program.sparse[read.tensor].storage[*level] {
                    LevelStorage::Compressed { positions, .. } => self.name(*positions),
                    LevelStorage::Ragged { offsets } => self.name(*offsets),
                    LevelStorage::Dense { .. } => return None,
                };
                let parent = self.sparse_position(read, *level).position;
                Some(format!("({{ const int64_t pb_ = {parent}; pb_ < 0 ? 0 : {pos}[pb_ + 1] - {pos}[pb_]; }})"))
            }
            IterSet::Intersection(sets) => {
                sets.iter().filter_map(|s| self.set_bound(s)).reduce(|a, b| format!("strata_min_i64({a}, {b})"))
            }
            IterSet::Union(sets) => {
                let bounds: Option<Vec<String>> = sets.iter().map(|s| self.set_bound(s)).collect();
                bounds.map(|b| format!("({})", b.join(" + ")))
            }
        }
    }

    /// The interval of the level the first walked read of `c` iterates.
    fn lead_interval(&self, c: &CoIteration) -> strata_ir::Interval {
        let (lead, k) = c.walked()[0];
        self.program.sparse[lead.tensor].levels[k].interval
    }
}

/// A position walking one compressed level in a merge or union loop.
struct Cursor {
    /// The C declarators starting it (parent position `pp`, `q`, `qe`).
    init: String,
    /// The position variable.
    q: String,
    /// One past its last position.
    qe: String,
    /// The coordinate at `q`.
    coordinate: String,
}

impl Cursor {
    /// Whether the cursor is inside its segment.
    fn inside(&self) -> String {
        format!("{} < {}", self.q, self.qe)
    }
}

/// The position of a stored entry that a compressed level does not list: the entry is the
/// tensor's fill value, zero.
pub(super) const UNSTORED: i64 = -1;
/// The position of an element past the end of a ragged run: it does not exist (a skip).
pub(super) const SKIPPED: i64 = -2;

/// Where a sparse read's entry is ([`Emitter::sparse_position`]).
pub(super) struct Located {
    /// The C expression of the position.
    pub(super) position: String,
    /// Whether it may be [`UNSTORED`].
    pub(super) unstored: bool,
    /// Whether it may be [`SKIPPED`].
    pub(super) skipped: bool,
}

/// The range of `c`'s variable when stored coordinates of `level` may fall outside it.
fn range_outside(c: &CoIteration, level: strata_ir::Interval) -> Option<(i64, i64)> {
    let inside = c.range.start <= level.start && level.stop <= c.range.stop;
    (!inside).then_some((c.range.start, c.range.stop))
}

/// The test (a C `if` prefix) skipping coordinates of `v` outside `range`, if there is one.
fn range_check(v: &str, range: Option<(i64, i64)>) -> String {
    range.map(|(lo, hi)| format!("if ({v} >= {} && {v} < {}) ", ext(lo), ext(hi))).unwrap_or_default()
}

/// The C variable of the position of the `i`-th walked read of the loop over `v` (`q_v` for
/// the lead).
fn position_var(i: usize, v: &str) -> String {
    if i == 0 {
        format!("q_{v}")
    } else {
        format!("q{i}_{v}")
    }
}

/// The parts of a loop over a set's positions ([`Emitter::set_bounds`]): the variable, the
/// parent position, the first and last position (given `pp_v`), the coordinate at position
/// `q_v`, and the variable's range when stored coordinates may fall outside it.
pub(super) struct SetBounds {
    pub(super) v: String,
    pub(super) parent: String,
    pub(super) first: String,
    pub(super) last: String,
    pub(super) coordinate: String,
    pub(super) range: Option<(i64, i64)>,
}
