//! Pieces that depend on a kernel's selects, not on where their cuts fall: the split of a
//! program whose C takes an extent slot per site (`LowerOptions::extents_per_site`).
//!
//! The ranks of a distributed run lower local programs that differ only in their blocks'
//! sizes and places. Split by value ([`super::split_pieces`]), a rank splits where its cuts
//! fall strictly inside its interval, merging equal ones: the first rank, whose block starts
//! where the assignment's region does, or the last, which has no strip above, would get
//! pieces of their own and so kernels of their own. Here every cut makes a piece (an empty
//! one where it falls at or beyond an end, or on another cut), and a piece takes the branches
//! its *place* among the cuts decides, so the pieces and their code are the same on every
//! rank whose cuts come in the same order.
//!
//! The order is the hard part: cuts of unrelated selects (where an assignment's region
//! starts, where a halo strip ends) fall in different orders on different ranks. So the
//! cuts are split in *groups*, one at a time: the selects on one level whose constants belong
//! to one chain (`select(v + o < s, below, select(v + o < e, block, above))` for every offset
//! `o` of a concatenation's reads: its seams `s`, `e`), whose order follows from the chain
//! alone. Each piece of a group is split again by the next group its code still has, so two
//! groups make pieces of each other's pieces rather than interleave. A piece's interval is its
//! group's cuts clamped into the interval it splits, so every piece is an interval, empty or
//! not; the pieces' sizes are run-time extents like any other.
//!
//! Exact for every rank's own values: a cut at or beyond an end decides the same branch for
//! every point of the interval, and a piece between two cuts lies below every cut after it.

use std::cell::Cell;
use std::rc::Rc;

use strata_ir::{Interval, Level};

use super::MAX_PIECES;
use crate::kernel::Kernel;
use crate::sym::{below_parts, for_each_part, map_children, Coord, Part, SExpr};

/// A `select(v + o < k, …)` on domain level `level` (`v`'s position).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Test {
    level: usize,
    k: i64,
    offset: i64,
}

impl Test {
    /// Where along its level the select changes branch.
    fn cut(&self) -> i64 {
        self.k - self.offset
    }
}

/// The test of `e` where it is a select on a domain level.
fn test_of(e: &SExpr, domain: &[Level]) -> Option<Test> {
    let SExpr::Select(c, _, _) = e else { return None };
    let (dim, k, offset) = below_parts(c)?;
    Some(Test { level: domain.iter().position(|l| &l.name == dim)?, k, offset })
}

/// `k` split into pieces by its selects' groups, one group at a time; `k` itself where it is
/// not a plain nest, has no such select, or would make more than [`MAX_PIECES`] pieces.
pub(super) fn split(k: Kernel) -> Vec<Kernel> {
    if !super::splittable(&k) {
        return vec![k];
    }
    let mut pieces = Vec::new();
    if !split_into(&k, &mut pieces) || pieces.len() <= 1 {
        return vec![k];
    }
    let n = pieces.len();
    for (i, p) in pieces.iter_mut().enumerate() {
        p.comment = format!("{} (piece {} of {n})", k.comment, i + 1);
    }
    pieces
}

/// Splits `k` by its first group and each piece again by its own, adding the pieces that
/// have no select left to `out`; `false` once `out` holds more than [`MAX_PIECES`].
fn split_into(k: &Kernel, out: &mut Vec<Kernel>) -> bool {
    let (tests, chains) = walk(k);
    let Some(group) = first_group(&tests, &chains) else {
        out.push(k.clone());
        return out.len() <= MAX_PIECES;
    };
    let tests: Vec<Test> = tests.into_iter().map(|(t, _)| t).collect();
    let level = tests[group[0]].level;
    // The group's cuts in order, equal ones in the stores' order; then clamped into the
    // interval (monotone: the order holds).
    let mut order = group;
    order.sort_by_key(|&t| tests[t].cut());
    let iv = k.domain[level].interval;
    let stop = iv.stop.max(iv.start);
    let mut bounds = vec![iv.start];
    bounds.extend(order.iter().map(|&t| tests[t].cut().clamp(iv.start, stop)));
    bounds.push(stop);
    // Where each test of the group lies among the cuts: piece `p` is below it when `p <= at`.
    let mut place = vec![None; tests.len()];
    for (at, &t) in order.iter().enumerate() {
        place[t] = Some(at);
    }
    for (p, w) in bounds.windows(2).enumerate() {
        let mut piece = k.clone();
        piece.domain[level].interval = Interval::new(w[0], w[1]);
        let next = Cell::new(0);
        let decided = |t: usize| place[t].map(|at| p <= at);
        for st in &mut piece.stores {
            st.value = decide(&st.value, &k.domain, &next, &decided);
        }
        if !split_into(&piece, out) {
            return false;
        }
    }
    true
}

/// A chain of selects on one level and offset, each nested in the previous one's `else`
/// branch: `select(v + o < s, below, select(v + o < e, block, above))`, a concatenation read
/// at offset `o`, or an assignment's region.
#[derive(Debug)]
struct Chain {
    level: usize,
    /// Its tests' constants, outermost first.
    constants: Vec<i64>,
    /// The buffers each of its branches reads, in order: what it chooses between.
    branches: Vec<Vec<usize>>,
}

impl Chain {
    /// Whether `other` chooses between the same branches at the same constants (the same
    /// concatenation read at another offset): its tests order with this one's.
    fn groups_with(&self, other: &Chain) -> bool {
        self.level == other.level && self.constants == other.constants && self.branches == other.branches
    }
}

/// The tests of `k`'s stores in walk order (each node before its parts, stores in order, as
/// [`decide`] numbers them), each with its chain, and the chains.
fn walk(k: &Kernel) -> (Vec<(Test, usize)>, Vec<Chain>) {
    let (mut tests, mut chains) = (Vec::new(), Vec::new());
    for st in &k.stores {
        visit(&st.value, &k.domain, None, &mut tests, &mut chains);
    }
    (tests, chains)
}

/// Whether test `next`, in the `else` branch of test `prev`, continues its chain: the same
/// level and offset, and a constant no smaller (a concatenation's stops do not decrease; a
/// smaller one starts a chain of its own: the untouched value an assignment's region keeps).
fn continues(prev: Test, next: Test) -> bool {
    prev.level == next.level && prev.offset == next.offset && prev.k <= next.k
}

/// Walks `e`, which continues chain `from` (the chain and its last test) where
/// [`continues`] says so.
fn visit(
    e: &Rc<SExpr>,
    domain: &[Level],
    from: Option<(usize, Test)>,
    tests: &mut Vec<(Test, usize)>,
    chains: &mut Vec<Chain>,
) {
    let Some(t) = test_of(e, domain) else {
        for_each_part(e, &mut |p| {
            if let Part::Expr(x) = p {
                visit(x, domain, None, tests, chains);
            }
        });
        return;
    };
    let chain = match from {
        Some((c, prev)) if continues(prev, t) => c,
        _ => {
            let c = Chain { level: t.level, constants: Vec::new(), branches: Vec::new() };
            chains.push(c);
            chains.len() - 1
        }
    };
    chains[chain].constants.push(t.k);
    tests.push((t, chain));
    let SExpr::Select(c, a, b) = &**e else { unreachable!("a test is a select") };
    visit(c, domain, None, tests, chains);
    chains[chain].branches.push(buffers(a));
    visit(a, domain, None, tests, chains);
    if !test_of(b, domain).is_some_and(|u| continues(t, u)) {
        chains[chain].branches.push(buffers(b));
    }
    visit(b, domain, Some((chain, t)), tests, chains);
}

/// The buffers `e` loads, sorted.
fn buffers(e: &Rc<SExpr>) -> Vec<usize> {
    fn add(e: &Rc<SExpr>, out: &mut Vec<usize>) {
        if let SExpr::Load(l) = &**e {
            out.push(l.buffer);
        }
        for_each_part(e, &mut |p| {
            if let Part::Expr(x) = p {
                add(x, out);
            }
        });
    }
    let mut out = Vec::new();
    add(e, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

/// The first chain's group (indices into `tests`): the tests of every chain that
/// [`Chain::groups_with`] it.
fn first_group(tests: &[(Test, usize)], chains: &[Chain]) -> Option<Vec<usize>> {
    let first = chains.first()?;
    Some((0..tests.len()).filter(|&t| chains[tests[t].1].groups_with(first)).collect())
}

/// `e` with each select whose test `decided` answers (`Some(below)`, tests numbered in walk
/// order by `next`) replaced by that branch.
fn decide(e: &Rc<SExpr>, domain: &[Level], next: &Cell<usize>, decided: &dyn Fn(usize) -> Option<bool>) -> Rc<SExpr> {
    if test_of(e, domain).is_some() {
        let SExpr::Select(c, a, b) = &**e else { unreachable!("a test is a select") };
        let t = next.get();
        next.set(t + 1);
        // The parts are walked (and numbered) whichever branch stays.
        let c = decide(c, domain, next, decided);
        let (a, b) = (decide(a, domain, next, decided), decide(b, domain, next, decided));
        return match decided(t) {
            Some(true) => a,
            Some(false) => b,
            None => Rc::new(SExpr::Select(c, a, b)),
        };
    }
    map_children(e, &|x| decide(x, domain, next, decided), &Coord::clone)
}
