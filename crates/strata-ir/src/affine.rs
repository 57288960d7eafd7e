//! Affine access maps for `map_reduce_aff` (seed 002).

use std::fmt;

/// `Σ coefficient·d_dim + Σ coefficient·(inner floordiv|mod k) + constant` over the loop
/// dimensions `d0, d1, …`: MLIR's affine expressions, with `floordiv` and `mod` by positive
/// constants (the semi-affine forms that tiled and strided accesses need).
///
/// Terms are kept sorted by dimension with non-zero coefficients, and equal quotients merged,
/// so equal expressions compare equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct AffineExpr {
    /// `(dimension, coefficient)` pairs, sorted by dimension, no zero coefficient.
    pub terms: Vec<(u32, i64)>,
    /// The constant term.
    pub constant: i64,
    /// `(quotient, coefficient)` pairs, no zero coefficient, no two equal quotients.
    pub quotients: Vec<(Quotient, i64)>,
}

/// `inner floordiv by` or `inner mod by` (`by` > 0; `mod` is non-negative, as in MLIR).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Quotient {
    /// The expression divided.
    pub inner: Box<AffineExpr>,
    /// `floordiv` or `mod`.
    pub op: QuotientOp,
    /// The positive divisor.
    pub by: i64,
}

/// The two semi-affine operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuotientOp {
    /// Division rounding toward −∞.
    FloorDiv,
    /// The remainder of `floordiv`, in `[0, by)`.
    Mod,
}

impl QuotientOp {
    /// The keyword in the text.
    pub fn keyword(self) -> &'static str {
        match self {
            QuotientOp::FloorDiv => "floordiv",
            QuotientOp::Mod => "mod",
        }
    }

    /// `x floordiv by` or `x mod by` (`by` > 0).
    pub fn apply(self, x: i64, by: i64) -> i64 {
        match self {
            QuotientOp::FloorDiv => x.div_euclid(by),
            QuotientOp::Mod => x.rem_euclid(by),
        }
    }
}

impl AffineExpr {
    /// The expression `d_dim`.
    pub fn dim(dim: u32) -> AffineExpr {
        AffineExpr { terms: vec![(dim, 1)], ..AffineExpr::default() }
    }

    /// The constant expression `c`.
    pub fn constant(c: i64) -> AffineExpr {
        AffineExpr { constant: c, ..AffineExpr::default() }
    }

    /// Whether the expression is a plain linear combination (no `floordiv`/`mod`).
    pub fn is_linear(&self) -> bool {
        self.quotients.is_empty()
    }

    /// The constant value, if the expression uses no dimension.
    pub fn as_constant(&self) -> Option<i64> {
        (self.terms.is_empty() && self.quotients.is_empty()).then_some(self.constant)
    }

    /// Adds `coefficient·d_dim`, keeping the canonical form; `false` (and no change) if the
    /// coefficient would overflow.
    pub fn add_term(&mut self, dim: u32, coefficient: i64) -> bool {
        match self.terms.binary_search_by_key(&dim, |t| t.0) {
            Ok(i) => {
                let Some(sum) = self.terms[i].1.checked_add(coefficient) else { return false };
                self.terms[i].1 = sum;
                if sum == 0 {
                    self.terms.remove(i);
                }
            }
            Err(i) if coefficient != 0 => self.terms.insert(i, (dim, coefficient)),
            Err(_) => {}
        }
        true
    }

    /// Adds `coefficient·q`, merging an equal quotient; `false` on overflow.
    pub fn add_quotient(&mut self, q: Quotient, coefficient: i64) -> bool {
        match self.quotients.iter().position(|(p, _)| *p == q) {
            Some(i) => {
                let Some(sum) = self.quotients[i].1.checked_add(coefficient) else { return false };
                self.quotients[i].1 = sum;
                if sum == 0 {
                    self.quotients.remove(i);
                }
            }
            None if coefficient != 0 => self.quotients.push((q, coefficient)),
            None => {}
        }
        true
    }

    /// Adds to the constant term; `false` (and no change) on overflow.
    pub fn add_constant(&mut self, c: i64) -> bool {
        match self.constant.checked_add(c) {
            Some(v) => {
                self.constant = v;
                true
            }
            None => false,
        }
    }

    /// `self + k·other`, or `None` on overflow.
    pub fn scaled_add(&self, other: &AffineExpr, k: i64) -> Option<AffineExpr> {
        let mut out = self.clone();
        for &(d, c) in &other.terms {
            out.add_term(d, c.checked_mul(k)?).then_some(())?;
        }
        for (q, c) in &other.quotients {
            out.add_quotient(q.clone(), c.checked_mul(k)?).then_some(())?;
        }
        out.add_constant(other.constant.checked_mul(k)?).then_some(())?;
        Some(out)
    }

    /// `self floordiv by` or `self mod by` (`by` > 0), folded when `self` is constant.
    pub fn quotient(self, op: QuotientOp, by: i64) -> AffineExpr {
        match self.as_constant() {
            Some(c) => AffineExpr::constant(op.apply(c, by)),
            None => {
                let mut out = AffineExpr::default();
                out.add_quotient(Quotient { inner: Box::new(self), op, by }, 1);
                out
            }
        }
    }

    /// The highest dimension used, if any.
    pub fn max_dim(&self) -> Option<u32> {
        let inner = self.quotients.iter().filter_map(|(q, _)| q.inner.max_dim());
        self.terms.last().map(|t| t.0).into_iter().chain(inner).max()
    }

    /// The value at loop point `point` (wrapping on overflow; the verifier's range check keeps
    /// accesses far from it).
    pub fn eval(&self, point: &[i64]) -> i64 {
        let mut v = self.constant;
        for &(d, c) in &self.terms {
            v = v.wrapping_add(c.wrapping_mul(point[d as usize]));
        }
        for (q, c) in &self.quotients {
            v = v.wrapping_add(c.wrapping_mul(q.op.apply(q.inner.eval(point), q.by)));
        }
        v
    }

    /// The smallest and largest value over the box `0 <= d_i < bounds[i]` (bounds ≥ 1), or
    /// `None` if some bound is 0 (the box is empty). Computed in 128 bits, so it cannot overflow
    /// for 64-bit coefficients and bounds. Exact for linear expressions; for quotients a bound
    /// that contains every value (a `mod` whose operand spans a whole period ranges over it).
    pub fn range(&self, bounds: &[u64]) -> Option<(i128, i128)> {
        let (mut lo, mut hi) = (self.constant as i128, self.constant as i128);
        let mut widen = |c: i128, (a, b): (i128, i128)| {
            let (x, y) = (c * a, c * b);
            lo += x.min(y);
            hi += x.max(y);
        };
        for &(d, c) in &self.terms {
            let b = *bounds.get(d as usize)?;
            if b == 0 {
                return None;
            }
            widen(c as i128, (0, b as i128 - 1));
        }
        for (q, c) in &self.quotients {
            let (a, b) = q.inner.range(bounds)?;
            let by = q.by as i128;
            let r = match q.op {
                QuotientOp::FloorDiv => (a.div_euclid(by), b.div_euclid(by)),
                QuotientOp::Mod if a.div_euclid(by) == b.div_euclid(by) => (a.rem_euclid(by), b.rem_euclid(by)),
                QuotientOp::Mod => (0, by - 1),
            };
            widen(*c as i128, r);
        }
        Some((lo, hi))
    }
}

impl fmt::Display for AffineExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut sign = |f: &mut fmt::Formatter<'_>, negative: bool| -> fmt::Result {
            let s = match (first, negative) {
                (true, true) => "-",
                (true, false) => "",
                (false, true) => " - ",
                (false, false) => " + ",
            };
            first = false;
            f.write_str(s)
        };
        for &(d, c) in &self.terms {
            sign(f, c < 0)?;
            match c.unsigned_abs() {
                1 => write!(f, "d{d}")?,
                mag => write!(f, "{mag}*d{d}")?,
            }
        }
        for (q, c) in &self.quotients {
            sign(f, *c < 0)?;
            // A lone dimension needs no parentheses: `d0 floordiv 4`.
            let inner = match q.inner.terms.as_slice() {
                [(_, 1)] if q.inner.constant == 0 && q.inner.is_linear() => q.inner.to_string(),
                _ => format!("({})", q.inner),
            };
            match c.unsigned_abs() {
                1 => write!(f, "{inner} {} {}", q.op.keyword(), q.by)?,
                mag => write!(f, "{mag}*({inner} {} {})", q.op.keyword(), q.by)?,
            }
        }
        if first {
            write!(f, "{}", self.constant)
        } else if self.constant > 0 {
            write!(f, " + {}", self.constant)
        } else if self.constant < 0 {
            write!(f, " - {}", self.constant.unsigned_abs())
        } else {
            Ok(())
        }
    }
}

/// `(d0, …, d{n-1}) -> (e0, e1, …)`: maps a loop iteration vector to coordinates.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AffineMap {
    /// Number of loop dimensions the map reads.
    pub num_dims: u32,
    /// One expression per result coordinate.
    pub results: Vec<AffineExpr>,
}

impl fmt::Display for AffineMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for d in 0..self.num_dims {
            if d > 0 {
                f.write_str(", ")?;
            }
            write!(f, "d{d}")?;
        }
        f.write_str(") -> (")?;
        for (i, e) in self.results.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{e}")?;
        }
        f.write_str(")")
    }
}

/// Einstein subscripts `"ik,kj->ij"` for `map_reduce` (seed 002's `subs` with named indices).
///
/// MimIR's numeric form follows: output letters are indices `0..Ro` in output order, the
/// remaining (reduction) letters are numbered after them in order of first appearance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Einsum {
    /// The subscript letters of each input.
    pub inputs: Vec<Vec<char>>,
    /// The subscript letters of the output.
    pub output: Vec<char>,
}

impl Einsum {
    /// Every distinct letter: the output's first, then reduction letters by first appearance.
    pub fn loop_letters(&self) -> Vec<char> {
        let mut all = self.output.clone();
        for c in self.inputs.iter().flatten() {
            if !all.contains(c) {
                all.push(*c);
            }
        }
        all
    }

    /// MimIR's numeric `subs`: for each input, the loop index of each of its dimensions.
    pub fn numeric_subscripts(&self) -> Vec<Vec<u32>> {
        let letters = self.loop_letters();
        self.inputs
            .iter()
            .map(|inp| inp.iter().map(|c| letters.iter().position(|l| l == c).unwrap_or(0) as u32).collect())
            .collect()
    }
}

impl fmt::Display for Einsum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ins: Vec<String> = self.inputs.iter().map(|i| i.iter().collect()).collect();
        let out: String = self.output.iter().collect();
        write!(f, "{}->{}", ins.join(","), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_expr_prints_canonically() {
        let mut e = AffineExpr::dim(2);
        e.add_term(0, 3);
        e.constant = -1;
        assert_eq!(e.to_string(), "3*d0 + d2 - 1");
        e.add_term(0, -3);
        assert_eq!(e.to_string(), "d2 - 1");
        assert_eq!(AffineExpr::default().to_string(), "0");
    }

    #[test]
    fn quotients_print_evaluate_and_bound() {
        // 2*d0 + (d1 + 3) floordiv 4 - 3*(d1 mod 2) + 1
        let mut e = AffineExpr::dim(0).scaled_add(&AffineExpr::dim(0), 1).unwrap();
        let mut inner = AffineExpr::dim(1);
        inner.add_constant(3);
        e = e.scaled_add(&inner.quotient(QuotientOp::FloorDiv, 4), 1).unwrap();
        e = e.scaled_add(&AffineExpr::dim(1).quotient(QuotientOp::Mod, 2), -3).unwrap();
        e.add_constant(1);
        assert_eq!(e.to_string(), "2*d0 + (d1 + 3) floordiv 4 - 3*(d1 mod 2) + 1");
        assert_eq!(e.eval(&[1, 6]), 2 + 2 + 1);
        assert_eq!(e.eval(&[0, 5]), 2 - 3 + 1);
        // Negative operands round toward −∞ and `mod` stays non-negative, as in MLIR.
        let mut neg = AffineExpr::dim(0);
        neg.add_constant(-5);
        assert_eq!(neg.clone().quotient(QuotientOp::FloorDiv, 4).eval(&[0]), -2);
        assert_eq!(neg.quotient(QuotientOp::Mod, 4).eval(&[0]), 3);
        // d0 in [0, 8), d1 in [0, 8): 2*d0 in [0, 14]; (d1 + 3) floordiv 4 in [0, 2]; -3*(d1 mod 2) in [-3, 0].
        assert_eq!(e.range(&[8, 8]), Some((1 - 3, 14 + 2 + 1)));
        // Constants fold.
        assert_eq!(AffineExpr::constant(-7).quotient(QuotientOp::Mod, 3), AffineExpr::constant(2));
    }

    #[test]
    fn affine_range_over_box() {
        let mut e = AffineExpr::dim(0);
        e.add_term(1, -2);
        e.constant = 5;
        // d0 in [0,4), d1 in [0,3): 5 + d0 - 2*d1 in [5-4, 5+3] = [1, 8]
        assert_eq!(e.range(&[4, 3]), Some((1, 8)));
        assert_eq!(e.range(&[0, 3]), None);
    }

    #[test]
    fn einsum_numeric_subscripts_follow_mimir() {
        let e = Einsum { inputs: vec![vec!['i', 'k'], vec!['k', 'j']], output: vec!['i', 'j'] };
        assert_eq!(e.numeric_subscripts(), vec![vec![0, 2], vec![2, 1]]);
        assert_eq!(e.to_string(), "ik,kj->ij");
    }
}
