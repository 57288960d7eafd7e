//! Elementwise evaluation over dense scalar columns by strides: an operand read at the
//! result's named coordinates (shifted, broadcast or the same levels) is an affine offset of
//! them, so a row of the result reads each operand at a constant stride — no index vector per
//! element, and typed loops for IEEE arithmetic.

use strata_ir::{BinaryOp, Level};
use strata_runtime::{strides, Column, Data, Tensor, ValueType};

/// Where an operand's elements lie for the result's coordinates: `base` plus, per result
/// dimension, the coordinate's distance from the result interval's start times `strides[d]`
/// (0 where the operand lacks the dimension: broadcast).
pub(crate) struct Access {
    base: usize,
    strides: Vec<usize>,
}

impl Access {
    /// The access of `operand` from the result's `levels`, or `None` when it is not affine in
    /// them: a level the result lacks, or a result interval the operand does not cover (the
    /// general path then applies, and reports it).
    pub(crate) fn of(levels: &[Level], operand: &ValueType) -> Option<Access> {
        let ostrides = strides(&operand.shape());
        let mut base = 0usize;
        let mut per_dim = vec![0usize; levels.len()];
        for (k, ol) in operand.levels.iter().enumerate() {
            let d = levels.iter().position(|r| r.name == ol.name)?;
            let r = levels[d].interval;
            if !r.is_empty() && (r.start < ol.interval.start || r.stop > ol.interval.stop) {
                return None;
            }
            base += usize::try_from(r.start - ol.interval.start).unwrap_or(0) * ostrides[k];
            per_dim[d] = ostrides[k];
        }
        Some(Access { base, strides: per_dim })
    }
}

/// Calls `row(out, offsets, steps, len)` for every row of the result (its last dimension,
/// row-major): the row starts at element `out` of the result and at `offsets[k]` of operand
/// `k`, whose next elements are `steps[k]` apart. A 0-d result is one row of one element.
pub(crate) fn for_each_row(levels: &[Level], access: &[Access], mut row: impl FnMut(usize, &[usize], &[usize], usize)) {
    let shape: Vec<usize> = levels.iter().map(|l| l.interval.len() as usize).collect();
    if shape.contains(&0) {
        return;
    }
    let Some((&len, outer)) = shape.split_last() else {
        let at: Vec<usize> = access.iter().map(|a| a.base).collect();
        return row(0, &at, &vec![0; access.len()], 1);
    };
    let last = outer.len();
    let steps: Vec<usize> = access.iter().map(|a| a.strides[last]).collect();
    let mut coord = vec![0usize; outer.len()];
    let mut at: Vec<usize> = access.iter().map(|a| a.base).collect();
    let rows: usize = outer.iter().product();
    for r in 0..rows {
        row(r * len, &at, &steps, len);
        // The next row: advance the outer coordinates like an odometer, moving the offsets.
        for d in (0..outer.len()).rev() {
            coord[d] += 1;
            if coord[d] < outer[d] {
                for (o, a) in at.iter_mut().zip(access) {
                    *o += a.strides[d];
                }
                break;
            }
            for (o, a) in at.iter_mut().zip(access) {
                *o -= a.strides[d] * (outer[d] - 1);
            }
            coord[d] = 0;
        }
    }
}

/// `a op b` over the result type `ty` where both operands are dense `f64` (or both `f32`)
/// columns and `op` is `+`, `-`, `*` or `/`: the same IEEE operations the scalar path applies,
/// in typed loops. `None` where that does not hold.
pub(crate) fn float_arithmetic(ty: &ValueType, op: BinaryOp, a: &Tensor, b: &Tensor) -> Option<Tensor> {
    if a.present.is_some() || b.present.is_some() {
        return None;
    }
    let access = [Access::of(&ty.levels, &a.ty)?, Access::of(&ty.levels, &b.ty)?];
    let mut out = Tensor::zeros(ty);
    macro_rules! typed {
        ($x:expr, $y:expr, $o:expr) => {{
            let (x, y, o) = ($x, $y, $o);
            match op {
                BinaryOp::Plus => rows(&ty.levels, &access, x, y, o, |p, q| p + q),
                BinaryOp::Minus => rows(&ty.levels, &access, x, y, o, |p, q| p - q),
                BinaryOp::Multiplies => rows(&ty.levels, &access, x, y, o, |p, q| p * q),
                BinaryOp::Divides => rows(&ty.levels, &access, x, y, o, |p, q| p / q),
                _ => return None,
            }
        }};
    }
    match (&a.data, &b.data, &mut out.data) {
        (Data::Scalars(Column::F64(x)), Data::Scalars(Column::F64(y)), Data::Scalars(Column::F64(o))) => {
            typed!(x, y, o)
        }
        (Data::Scalars(Column::F32(x)), Data::Scalars(Column::F32(y)), Data::Scalars(Column::F32(o))) => {
            typed!(x, y, o)
        }
        _ => return None,
    }
    Some(out)
}

/// `o = f(x, y)` over every row of the result.
fn rows<T: Copy>(levels: &[Level], access: &[Access; 2], x: &[T], y: &[T], o: &mut [T], f: impl Fn(T, T) -> T) {
    for_each_row(levels, access, |start, at, steps, len| {
        let o = &mut o[start..start + len];
        match (steps[0], steps[1]) {
            (1, 1) => {
                for ((o, &p), &q) in o.iter_mut().zip(&x[at[0]..at[0] + len]).zip(&y[at[1]..at[1] + len]) {
                    *o = f(p, q);
                }
            }
            (1, 0) => {
                let q = y[at[1]];
                for (o, &p) in o.iter_mut().zip(&x[at[0]..at[0] + len]) {
                    *o = f(p, q);
                }
            }
            (0, 1) => {
                let p = x[at[0]];
                for (o, &q) in o.iter_mut().zip(&y[at[1]..at[1] + len]) {
                    *o = f(p, q);
                }
            }
            (sx, sy) => {
                for (i, o) in o.iter_mut().enumerate() {
                    *o = f(x[at[0] + i * sx], y[at[1] + i * sy]);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_ir::{DimName, Interval, Placement, Scalar};
    use strata_runtime::ElemType;

    /// A dense `f64` tensor over `levels` (name, start, stop) whose element at coordinates `c`
    /// is `value(c)`.
    fn tensor(levels: &[(&str, i64, i64)], value: impl Fn(&[i64]) -> f64) -> Tensor {
        let ty = ValueType {
            levels: levels.iter().map(|&(n, a, b)| Level::dense(DimName::new(n), Interval::new(a, b))).collect(),
            placement: Placement::HOST,
            element: ElemType::Scalar(Scalar::F64),
            is_tensor: true,
        };
        let mut values = Vec::new();
        coords(&ty.levels, &mut |c| values.push(value(c)));
        Tensor { ty, data: Data::Scalars(Column::F64(values)), present: None }
    }

    /// Every coordinate vector of `levels`, row-major.
    fn coords(levels: &[Level], f: &mut dyn FnMut(&[i64])) {
        fn go(levels: &[Level], c: &mut Vec<i64>, f: &mut dyn FnMut(&[i64])) {
            match levels.split_first() {
                None => f(c),
                Some((l, rest)) => {
                    for x in l.interval.start..l.interval.stop {
                        c.push(x);
                        go(rest, c, f);
                        c.pop();
                    }
                }
            }
        }
        go(levels, &mut Vec::new(), f)
    }

    fn f64s(t: &Tensor) -> &[f64] {
        let Data::Scalars(Column::F64(v)) = &t.data else { panic!("f64 values") };
        v
    }

    #[test]
    fn shifted_and_broadcast_operands_read_the_elements_at_the_results_coordinates() {
        // a(I, J) over a halo, b(J) along the last dimension, c(I) along the first, d 0-d.
        let a = tensor(&[("I", -1, 6), ("J", -2, 5)], |c| (10 * c[0] + c[1]) as f64);
        let b = tensor(&[("J", 0, 3)], |c| 0.5 + c[0] as f64);
        let c = tensor(&[("I", 1, 4)], |c| -(c[0] as f64) * 0.25);
        let d = tensor(&[], |_| 3.0);
        let result = tensor(&[("I", 1, 4), ("J", 0, 3)], |_| 0.0).ty;
        // Each case: operands, operation, the operation on values, the operands' values at a
        // coordinate.
        type Case<'t> = (&'t Tensor, &'t Tensor, BinaryOp, fn(f64, f64) -> f64, fn(&[i64]) -> (f64, f64));
        let cases: [Case; 5] = [
            // The same values the operands hold at the result's coordinates, by definition.
            (&a, &b, BinaryOp::Minus, |x, y| x - y, |c| ((10 * c[0] + c[1]) as f64, 0.5 + c[1] as f64)),
            (&b, &a, BinaryOp::Divides, |x, y| x / y, |c| (0.5 + c[1] as f64, (10 * c[0] + c[1]) as f64)),
            (&c, &b, BinaryOp::Multiplies, |x, y| x * y, |c| (-(c[0] as f64) * 0.25, 0.5 + c[1] as f64)),
            (&d, &a, BinaryOp::Plus, |x, y| x + y, |c| (3.0, (10 * c[0] + c[1]) as f64)),
            (&a, &a, BinaryOp::Divides, |x, y| x / y, |c| ((10 * c[0] + c[1]) as f64, (10 * c[0] + c[1]) as f64)),
        ];
        for (x, y, op, f, at) in cases {
            let got = float_arithmetic(&result, op, x, y).expect("dense f64 operands");
            let mut want = Vec::new();
            coords(&result.levels, &mut |c| {
                let (p, q) = at(c);
                want.push(f(p, q));
            });
            // Bit for bit (a / a at 0 is NaN on both sides).
            let same =
                f64s(&got).iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
            assert!(same && got.len() == want.len(), "{op:?}: {:?} against {want:?}", f64s(&got));
        }
    }

    #[test]
    fn three_dimensional_rows_wrap_their_outer_coordinates() {
        // a(I, J, K) shifted in every dimension; b(I, K) broadcast along the middle one.
        let a = tensor(&[("I", -1, 5), ("J", 2, 6), ("K", -3, 7)], |c| (100 * c[0] + 10 * c[1] + c[2]) as f64);
        let b = tensor(&[("I", 0, 3), ("K", 0, 4)], |c| (1 + c[0] * 7 + c[1]) as f64);
        let result = tensor(&[("I", 0, 3), ("J", 3, 5), ("K", 0, 4)], |_| 0.0).ty;
        let got = float_arithmetic(&result, BinaryOp::Divides, &a, &b).expect("dense f64 operands");
        let mut want = Vec::new();
        coords(&result.levels, &mut |c| {
            want.push((100 * c[0] + 10 * c[1] + c[2]) as f64 / (1 + c[0] * 7 + c[2]) as f64)
        });
        assert_eq!(f64s(&got), &want[..]);
    }

    #[test]
    fn empty_and_zero_dimensional_results_and_operands_it_cannot_stride_are_handled() {
        let d = tensor(&[], |_| 2.0);
        let e = tensor(&[], |_| -0.5);
        let got = float_arithmetic(&d.ty, BinaryOp::Multiplies, &d, &e).expect("0-d");
        assert_eq!(f64s(&got), [-1.0]);
        let empty = tensor(&[("I", 0, 0), ("J", 0, 3)], |_| 1.0);
        assert_eq!(float_arithmetic(&empty.ty, BinaryOp::Plus, &empty, &empty).expect("empty").len(), 0);
        // An operand that does not cover the result, or has a dimension the result lacks: the
        // general path's business.
        let short = tensor(&[("I", 0, 2)], |_| 1.0);
        let result = tensor(&[("I", 0, 3)], |_| 0.0).ty;
        assert!(float_arithmetic(&result, BinaryOp::Plus, &short, &short).is_none());
        let wide = tensor(&[("I", 0, 3), ("K", 0, 2)], |_| 1.0);
        assert!(float_arithmetic(&result, BinaryOp::Plus, &wide, &wide).is_none());
        // Operations other than the four, and absent elements, are left to the general path.
        let full = tensor(&[("I", 0, 3)], |c| c[0] as f64);
        assert!(float_arithmetic(&result, BinaryOp::Maximum, &full, &full).is_none());
        let mut holes = full.clone();
        holes.present = Some(vec![true, false, true]);
        assert!(float_arithmetic(&result, BinaryOp::Plus, &holes, &full).is_none());
    }
}
