//! Sums of squared deviations in one pass over memory.
//!
//! A variance written the usual way — `c = f(Σ x)` (the mean), then `Σ (x - c)²` — is two folds
//! over the same row: the second cannot start before the first ends, so the row is read twice
//! (from memory, then from cache). [`recognize`] finds such a fold: a floating-point sum of
//! `(X - c)²` (or `(c - X)²`) along one loop variable, where `c` does not depend on that
//! variable and reads an invariant fold that is the plain sum of the same `X` over the same
//! range. [`Emitter::moments`] then computes, in one vectorized pass, the count `n`, the sum
//! `S` and the sum of squared deviations `M2` of `y = X - p`, where the shift `p` is the fold's
//! first value (so that `y` is small next to `X` when the data sit far from zero, the classic
//! remedy for cancellation): each lane folds chunks of 4 values with Chan, Golub and LeVeque's
//! pairwise update `M2 += M2_chunk + (S_chunk / 4 - S / n)² · 4n / (n + 4)`, the lanes combine
//! pairwise (`M2 = M2a + M2b + (Sa - Sb)² / 2n`, equal counts), and the remaining values join
//! one by one (`M2 += (y - S/n)² · n / (n + 1)`). The plain sum `Σ X = n·p + S` gives the
//! invariant fold's accumulator, hence `c` as the program computes it, and the result is
//! `init + M2 + n · (S/n - (c - p))²`, which equals `Σ (X - c)²` in exact arithmetic for that
//! `c` (the deviation of `c` from the mean is not lost).
//! Rounding differs from the interpreter's two sequential folds as a reassociated sum's does
//! (see `docs/runtime.md`, "Exactness").

use std::fmt::Write;
use std::rc::Rc;

use strata_ir::{BinaryOp, DimName, Interval, Scalar};

use super::{c_type, var, Emitter};
use crate::sym::{Coord, SExpr};

/// Values per lane in one chunk of the pass.
const CHUNK: i64 = 4;

/// A sum of squared deviations [`Emitter::moments`] computes in one pass.
pub(super) struct Moments<'e> {
    /// The fold's accumulator, loop variable and range, initial value and type.
    id: u32,
    var: &'e DimName,
    range: Interval,
    init: &'e Rc<SExpr>,
    scalar: Scalar,
    /// The value whose deviations are summed, over `var`.
    x: &'e Rc<SExpr>,
    /// The centre `c`.
    centre: &'e Rc<SExpr>,
    /// The invariant folds that are plain sums of `x` (their accumulators and initial values).
    sums: Vec<(u32, Rc<SExpr>)>,
}

/// Recognizes fold `id` over `vars` with (hoisted) `body` and the invariant folds hoisted out
/// of it, `invariants`: see the module documentation. `long` says whether the fold may be
/// reassociated at all ([`crate::schedule::reassociable`]).
pub(super) fn recognize<'e>(
    id: u32,
    vars: &'e [(DimName, Interval)],
    init: &'e Rc<SExpr>,
    scalar: Scalar,
    body: &'e Rc<SExpr>,
    invariants: &'e [Rc<SExpr>],
    long: bool,
) -> Option<Moments<'e>> {
    let [(v, range)] = vars else { return None };
    let (term, _) = crate::schedule::sum_term(body, id)?;
    let SExpr::Binary(BinaryOp::Multiplies, d, d2, _) = &**term else { return None };
    let SExpr::Binary(BinaryOp::Minus, a, b, s) = &**d else { return None };
    if d != d2 || *s != scalar || !long {
        return None;
    }
    let depends = |e: &Rc<SExpr>| crate::sym::free_vars(e).contains(v);
    let (x, centre) = match (depends(a), depends(b)) {
        (true, false) => (a, b),
        (false, true) => (b, a),
        _ => return None,
    };
    if reads_any_acc(x) || !super::contiguous_along(x, v) {
        return None;
    }
    let sums: Vec<(u32, Rc<SExpr>)> = invariants
        .iter()
        .filter_map(|r| {
            let SExpr::Reduce { id: h, vars: hv, init, scalar: t, body } = &**r else { return None };
            let [(w, wr)] = &hv[..] else { return None };
            let (y, _) = crate::schedule::sum_term(body, *h)?;
            let renamed = crate::sym::substitute(y, w, &Coord::Var { dim: v.clone(), offset: 0 });
            (wr == range && *t == scalar && renamed == *x && crate::sym::reads_acc(centre, *h))
                .then(|| (*h, init.clone()))
        })
        .collect();
    (!sums.is_empty()).then_some(Moments { id, var: v, range: *range, init, scalar, x, centre, sums })
}

/// `a + b + …` as a balanced tree of additions (short dependency chains).
fn tree_sum(terms: &[String]) -> String {
    match terms {
        [one] => one.clone(),
        _ => {
            let (l, r) = terms.split_at(terms.len() / 2);
            format!("({} + {})", tree_sum(l), tree_sum(r))
        }
    }
}

/// Whether `e` reads any accumulator.
fn reads_any_acc(e: &Rc<SExpr>) -> bool {
    fn part(p: crate::sym::Part, found: &mut bool) {
        match p {
            crate::sym::Part::Expr(e) => {
                *found |= matches!(&**e, SExpr::Acc(_));
                crate::sym::for_each_part(e, &mut |q| part(q, found));
            }
            crate::sym::Part::Coord(c) => crate::sym::for_each_coord_part(c, &mut |q| part(q, found)),
        }
    }
    let mut found = false;
    part(crate::sym::Part::Expr(e), &mut found);
    found
}

impl Emitter<'_> {
    /// The C statement expression computing `m`'s fold in one pass (see the module
    /// documentation). `invariants` are the folds hoisted out of its body: the sums of `x`
    /// come from the pass, the others are evaluated after it, in order (they may read those
    /// sums; `x` reads no accumulator).
    pub(super) fn moments(&self, m: &Moments, invariants: &[Rc<SExpr>]) -> String {
        let t = c_type(m.scalar);
        let lanes = 64 / m.scalar.size_bytes() as i64;
        let chunk = lanes * CHUNK;
        let d = var(m.var.as_str());
        let (a, b) = (super::extents::ext(m.range.start), super::extents::ext(m.range.stop));
        let x = self.value(m.x);
        let at = |j: &str| format!("({{ const int64_t {d} = {j}; {x}; }})");
        let mut s = String::new();
        let sums: Vec<String> = m.sums.iter().map(|(h, _)| format!("acc{h}")).collect();
        let _ = write!(
            s,
            "({{ {t} {}, acc{}; {{ /* Σ (x - c)² in one pass: shifted by the first value, chunks and lanes \
             combined pairwise (Chan, Golub, LeVeque) */ \
             typedef {t} mv_ __attribute__((vector_size({lanes} * sizeof({t})))); \
             const {t} mp_ = {}; mv_ msy_ = {{0}}, mm2_ = {{0}}; int64_t mjb_ = {a}, mt_ = 0; \
             for (; mjb_ + {chunk} <= {b}; mjb_ += {chunk}, ++mt_) {{ ",
            sums.join(", "),
            m.id,
            at(&a)
        );
        // A value read straight from its buffer loads as vectors; any other is computed into a
        // block first.
        let direct = matches!(&**m.x, SExpr::Load(l) if !self.in_scratch(l.buffer));
        if !direct {
            let _ = write!(
                s,
                "{t} mxs_[{chunk}]; _Pragma(\"omp simd\") for (int l = 0; l < {chunk}; ++l) mxs_[l] = {}; ",
                at("mjb_ + l")
            );
        }
        let mut ys = Vec::new();
        for u in 0..CHUNK {
            let load = if direct {
                format!(
                    "{{ const int64_t {d} = mjb_ + {}; memcpy(&mx{u}, &{x}, sizeof mx{u}); {} }}",
                    u * lanes,
                    super::prefetch_ahead(&x)
                )
            } else {
                format!("memcpy(&mx{u}, mxs_ + {}, sizeof mx{u});", u * lanes)
            };
            let _ = write!(s, "mv_ mx{u}; {load} const mv_ my{u} = mx{u} - mp_; ");
            ys.push(format!("my{u}"));
        }
        let sq: Vec<String> = (0..CHUNK).map(|u| format!("{{ const mv_ q = my{u} - mc_; mq_ += q * q; }}")).collect();
        let _ = write!(
            s,
            "const mv_ ms_ = {}; const mv_ mc_ = ms_ * ({t}){}; mv_ mq_ = {{0}}; {} \
             if (mt_ == 0) {{ msy_ = ms_; mm2_ = mq_; }} else {{ \
             const {t} mw_ = ({t})1 / ({t})({CHUNK} * mt_), mf_ = ({t})({CHUNK} * mt_) / ({t})(mt_ + 1); \
             const mv_ md_ = mc_ - msy_ * mw_; msy_ += ms_; mm2_ += mq_ + md_ * md_ * mf_; }} }} ",
            tree_sum(&ys),
            super::literal(strata_runtime::Sv::from_f64(m.scalar, 1.0 / CHUNK as f64)),
            sq.join(" ")
        );
        // The lanes, pairwise (equal counts), then the rest one by one.
        let _ = write!(
            s,
            "{t} sy_[{lanes}], s2_[{lanes}]; memcpy(sy_, &msy_, sizeof sy_); \
             memcpy(s2_, &mm2_, sizeof s2_); {t} mn_ = ({t})({CHUNK} * mt_); \
             for (int h = {lanes} / 2; h >= 1; h /= 2, mn_ *= 2) for (int l = 0; l < h; ++l) {{ \
             const {t} q = sy_[l] - sy_[l + h]; s2_[l] += s2_[l + h] + q * q / (2 * mn_); sy_[l] += sy_[l + h]; }} \
             {t} mS_ = sy_[0], mM2_ = s2_[0]; \
             for (int64_t {d} = mjb_; {d} < {b}; ++{d}) {{ const {t} y_ = {x} - mp_, q = y_ - mS_ / mn_; \
             mM2_ += q * q * (mn_ / (mn_ + 1)); mS_ += y_; mn_ += 1; }} "
        );
        for (h, init) in &m.sums {
            let _ = write!(s, "acc{h} = ({}) + (mn_ * mp_ + mS_); ", self.value(init));
        }
        for r in invariants {
            let SExpr::Reduce { id: h, scalar: ht, .. } = &**r else { unreachable!("hoisted reductions") };
            if !m.sums.iter().any(|(k, _)| k == h) {
                let _ = write!(s, "{} acc{h} = {}; ", c_type(*ht), self.value(r));
            }
        }
        let _ = write!(
            s,
            "const {t} me_ = mS_ / mn_ - (({}) - mp_); acc{} = ({}) + (mM2_ + mn_ * me_ * me_); }} acc{}; }})",
            self.value(m.centre),
            m.id,
            self.value(m.init),
            m.id
        );
        s
    }
}
