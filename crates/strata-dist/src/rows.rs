//! Which rows of a block level a rank needs: one interval (what the interval types give at
//! compile time) or a set of rows (what a neighbor table gives at run time).

use std::fmt;

use strata_ir::Interval;

/// The rows of one block dimension a rank needs.
pub trait Rows: Clone + fmt::Debug {
    /// Exactly the rows of `iv`.
    fn of(iv: Interval) -> Self;
    /// Adds `other`'s rows (an interval takes the hull).
    fn add(&mut self, other: &Self);
    /// The rows moved by `by`.
    fn shifted(&self, by: i64) -> Self;
    /// The smallest interval holding every row.
    fn hull(&self) -> Interval;
    /// The rows also in `iv`.
    fn within(&self, iv: Interval) -> Self;
}

/// The hull of two intervals (an empty one adds nothing).
pub fn hull(a: Interval, b: Interval) -> Interval {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    Interval::new(a.start.min(b.start), a.stop.max(b.stop))
}

impl Rows for Interval {
    fn of(iv: Interval) -> Self {
        iv
    }

    fn add(&mut self, other: &Self) {
        *self = hull(*self, *other);
    }

    fn shifted(&self, by: i64) -> Self {
        Interval::shifted(*self, by).unwrap_or(*self)
    }

    fn hull(&self) -> Interval {
        *self
    }

    fn within(&self, iv: Interval) -> Self {
        self.intersect(iv)
    }
}

/// A set of rows: sorted, disjoint, non-adjacent, non-empty intervals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowSet(Vec<Interval>);

impl RowSet {
    /// The set of `rows` (any order, repeats allowed).
    pub fn from_rows(mut rows: Vec<i64>) -> RowSet {
        rows.sort_unstable();
        rows.dedup();
        let mut runs: Vec<Interval> = Vec::new();
        for r in rows {
            match runs.last_mut() {
                Some(last) if last.stop == r => last.stop += 1,
                _ => runs.push(Interval::new(r, r + 1)),
            }
        }
        RowSet(runs)
    }

    /// The runs of consecutive rows, in increasing order.
    pub fn runs(&self) -> &[Interval] {
        &self.0
    }

    /// The rows also in `iv`.
    pub fn within(&self, iv: Interval) -> RowSet {
        RowSet(self.0.iter().map(|r| r.intersect(iv)).filter(|r| !r.is_empty()).collect())
    }

    /// The rows not in `iv`.
    pub fn outside(&self, iv: Interval) -> RowSet {
        let mut runs = Vec::new();
        for r in &self.0 {
            let below = Interval::new(r.start, r.stop.min(iv.start));
            let above = Interval::new(r.start.max(iv.stop), r.stop);
            runs.extend([below, above].into_iter().filter(|x| !x.is_empty()));
        }
        RowSet(runs)
    }

    /// The number of rows.
    pub fn len(&self) -> u64 {
        self.0.iter().map(|r| (r.stop - r.start) as u64).sum()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `row` is in the set.
    pub fn contains(&self, row: i64) -> bool {
        let k = self.0.partition_point(|r| r.stop <= row);
        self.0.get(k).is_some_and(|r| r.start <= row)
    }
}

impl Rows for RowSet {
    fn of(iv: Interval) -> Self {
        RowSet(if iv.is_empty() { Vec::new() } else { vec![iv] })
    }

    fn add(&mut self, other: &Self) {
        let mut all: Vec<Interval> = self.0.iter().chain(&other.0).copied().collect();
        all.sort_by_key(|r| r.start);
        let mut runs: Vec<Interval> = Vec::with_capacity(all.len());
        for r in all {
            match runs.last_mut() {
                Some(last) if r.start <= last.stop => last.stop = last.stop.max(r.stop),
                _ => runs.push(r),
            }
        }
        self.0 = runs;
    }

    fn shifted(&self, by: i64) -> Self {
        RowSet(self.0.iter().map(|r| Interval::shifted(*r, by).unwrap_or(*r)).collect())
    }

    fn hull(&self) -> Interval {
        match (self.0.first(), self.0.last()) {
            (Some(a), Some(b)) => Interval::new(a.start, b.stop),
            _ => Interval::new(0, 0),
        }
    }

    fn within(&self, iv: Interval) -> RowSet {
        RowSet::within(self, iv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_merge_runs_and_cut() {
        let mut s = RowSet::from_rows(vec![5, 3, 4, 9, 4, 10]);
        assert_eq!(s.runs(), &[Interval::new(3, 6), Interval::new(9, 11)]);
        s.add(&RowSet::of(Interval::new(6, 9)));
        assert_eq!(s.runs(), &[Interval::new(3, 11)]);
        let t = RowSet::from_rows(vec![1, 2, 7, 8, 12]);
        assert_eq!(
            t.outside(Interval::new(2, 8)).runs(),
            &[Interval::new(1, 2), Interval::new(8, 9), Interval::new(12, 13)]
        );
        assert_eq!(t.within(Interval::new(2, 8)).len(), 2);
        assert!(t.contains(7) && !t.contains(6) && !t.contains(13));
        assert_eq!(t.hull(), Interval::new(1, 13));
        assert_eq!(t.shifted(-1).runs()[0], Interval::new(0, 2));
    }
}
