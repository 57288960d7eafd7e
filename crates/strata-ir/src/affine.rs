//! Affine access maps for `map_reduce_aff` (seed 002).

use std::fmt;

/// `Σ coefficient·d_dim + constant` over the loop dimensions `d0, d1, …`.
///
/// Terms are kept sorted by dimension with non-zero coefficients, so equal expressions compare
/// equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct AffineExpr {
    /// `(dimension, coefficient)` pairs, sorted by dimension, no zero coefficient.
    pub terms: Vec<(u32, i64)>,
    /// The constant term.
    pub constant: i64,
}

impl AffineExpr {
    /// The expression `d_dim`.
    pub fn dim(dim: u32) -> AffineExpr {
        AffineExpr { terms: vec![(dim, 1)], constant: 0 }
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

    /// The highest dimension used, if any.
    pub fn max_dim(&self) -> Option<u32> {
        self.terms.last().map(|t| t.0)
    }

    /// The smallest and largest value over the box `0 <= d_i < bounds[i]` (bounds ≥ 1), or
    /// `None` if some bound is 0 (the box is empty). Computed in 128 bits, so it cannot overflow
    /// for 64-bit coefficients and bounds.
    pub fn range(&self, bounds: &[u64]) -> Option<(i128, i128)> {
        let (mut lo, mut hi) = (self.constant as i128, self.constant as i128);
        for &(d, c) in &self.terms {
            let b = *bounds.get(d as usize)?;
            if b == 0 {
                return None;
            }
            let extreme = c as i128 * (b as i128 - 1);
            if extreme < 0 {
                lo += extreme;
            } else {
                hi += extreme;
            }
        }
        Some((lo, hi))
    }
}

impl fmt::Display for AffineExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for &(d, c) in &self.terms {
            let (sign, mag) = if c < 0 { ("-", c.unsigned_abs()) } else { ("+", c.unsigned_abs()) };
            if first {
                if sign == "-" {
                    f.write_str("-")?;
                }
            } else {
                write!(f, " {sign} ")?;
            }
            if mag == 1 {
                write!(f, "d{d}")?;
            } else {
                write!(f, "{mag}*d{d}")?;
            }
            first = false;
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
