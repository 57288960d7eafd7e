//! Recognizing matrix products among the lowered kernels, to run them through the runtime's
//! blocked GEMM (see [`crate::runtime`]) instead of generated loops.
//!
//! A kernel qualifies when its one store is a `(+, ×)` contraction of two dense loads over
//! `f32`/`f64` — whatever op wrote it: `map_reduce` in Einstein notation or with affine maps,
//! `dot_general`, `product_2d`, or a tile payload of a tensor of tensors (nested reductions
//! whose inner sums start from zero merge into one). Every coordinate must be affine in the
//! loop variables and provably inside its level, so the product can be described by strides:
//! each loop variable is an `m` row (in the output and the left operand), an `n` column (output
//! and right), the contracted `k` (both operands), or a batch loop around the call. Adjacent
//! variables of one role whose strides nest (a tile index and the index within the tile)
//! collapse into one.
//!
//! The GEMM sums in a blocked order, so results equal the interpreter's up to floating-point
//! reassociation (not bit for bit); small products (under [`MIN_MACS`] multiply-adds per call)
//! keep the generated loops and their exact order, and so do matrix–vector products (`m` or
//! `n` of 1): a vectorized sum per contiguous row streams the matrix once, where a GEMM would
//! pack it for one column (measured: a 512² power iteration 15.8 → 8.9 ms).

use std::rc::Rc;

use strata_ir::{BinaryOp, DimName, Interval, Scalar};
use strata_runtime::Sv;

use crate::kernel::{Buffer, Kernel};
use crate::sym::{Coord, Load, SExpr};

/// The smallest product (multiply-adds per GEMM call) worth a library call.
pub const MIN_MACS: i64 = 1 << 15;

/// Whether an `m × k` by `k × n` product runs as a GEMM: at least [`MIN_MACS`] multiply-adds
/// and more than one row and column. A matrix–vector product stays a loop nest: each output
/// is one vectorized sum along a contiguous row (or strips of columns), streaming the matrix
/// once without packing it.
pub(crate) fn gemm_pays(m: i64, n: i64, k: i64) -> bool {
    m.saturating_mul(n).saturating_mul(k) >= MIN_MACS && m > 1 && n > 1
}

/// One loop of a matrix product: its extent and its stride in the output, the left and the
/// right operand (0 where the operand does not depend on it).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The loop variables it stands for, outermost first (for comments).
    pub names: Vec<DimName>,
    /// Iterations.
    pub extent: i64,
    /// Element strides in `[out, lhs, rhs]`.
    pub strides: [i64; 3],
}

/// A kernel computed as `out[m, n] (+)= Σ_k lhs[m, k] · rhs[k, n]` for every batch point.
#[derive(Clone, Debug, PartialEq)]
pub struct MatMul {
    /// `f32` or `f64`.
    pub scalar: Scalar,
    /// Buffers `[out, lhs, rhs]`.
    pub buffers: [usize; 3],
    /// Element offset of the first point in each buffer.
    pub offsets: [i64; 3],
    /// Rows, columns and the contracted dimension.
    pub m: Axis,
    /// Columns.
    pub n: Axis,
    /// The contracted dimension.
    pub k: Axis,
    /// Loops around the call.
    pub batch: Vec<Axis>,
    /// The initial value stored before accumulating (`None`: the sums start from zero).
    pub init: Option<Rc<SExpr>>,
    /// Elementwise work on the product, applied in place after the GEMM: the stored value with
    /// the product read back from the output at the current point.
    pub epilogue: Option<Rc<SExpr>>,
}

/// An affine form `Σ coef · var + constant` over loop variables.
#[derive(Clone, Debug, Default, PartialEq)]
struct Affine {
    terms: Vec<(DimName, i64)>,
    constant: i64,
}

impl Affine {
    fn var(d: &DimName, offset: i64) -> Affine {
        Affine { terms: vec![(d.clone(), 1)], constant: offset }
    }

    fn constant(c: i64) -> Affine {
        Affine { terms: Vec::new(), constant: c }
    }

    fn scaled_add(mut self, other: &Affine, k: i64) -> Affine {
        for (d, c) in &other.terms {
            match self.terms.iter_mut().find(|(e, _)| e == d) {
                Some((_, x)) => *x += c * k,
                None => self.terms.push((d.clone(), c * k)),
            }
        }
        self.constant += other.constant * k;
        self.terms.retain(|(_, c)| *c != 0);
        self
    }

    fn coef(&self, d: &DimName) -> i64 {
        self.terms.iter().find(|(e, _)| e == d).map_or(0, |(_, c)| *c)
    }

    /// The smallest and largest values over the variables' ranges (`None` for an unknown
    /// variable).
    fn range(&self, vars: &[(DimName, Interval)]) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (d, c) in &self.terms {
            let iv = vars.iter().find(|(e, _)| e == d)?.1;
            let (a, b) = (c * iv.start, c * (iv.stop - 1));
            lo += a.min(b);
            hi += a.max(b);
        }
        Some((lo, hi))
    }
}

/// An index-valued expression as an affine form.
fn affine_expr(e: &SExpr) -> Option<Affine> {
    match e {
        SExpr::Const(Sv::Index(k)) => Some(Affine::constant(*k)),
        SExpr::Index(c) => affine_coord(c),
        SExpr::Binary(BinaryOp::Plus, a, b, Scalar::Index) => Some(affine_expr(a)?.scaled_add(&affine_expr(b)?, 1)),
        SExpr::Binary(BinaryOp::Minus, a, b, Scalar::Index) => Some(affine_expr(a)?.scaled_add(&affine_expr(b)?, -1)),
        SExpr::Binary(BinaryOp::Multiplies, a, b, Scalar::Index) => {
            let (a, b) = (affine_expr(a)?, affine_expr(b)?);
            match (a.terms.is_empty(), b.terms.is_empty()) {
                (_, true) => Some(Affine::default().scaled_add(&a, b.constant)),
                (true, false) => Some(Affine::default().scaled_add(&b, a.constant)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A coordinate as an affine form (neighbor-table coordinates are not affine).
fn affine_coord(c: &Coord) -> Option<Affine> {
    match c {
        Coord::Var { dim, offset } => Some(Affine::var(dim, *offset)),
        Coord::Const(k) => Some(Affine::constant(*k)),
        Coord::Computed { value, offset, .. } => Some(affine_expr(value)?.scaled_add(&Affine::constant(*offset), 1)),
        Coord::Table { .. } => None,
    }
}

/// The element offset of a load as an affine form, if every coordinate is affine and stays
/// inside its level over `vars`.
fn address(buffer: &Buffer, coords: &[Coord], vars: &[(DimName, Interval)]) -> Option<Affine> {
    let mut addr = Affine::default();
    let mut stride = 1i64;
    for (level, c) in buffer.levels.iter().zip(coords).rev() {
        let a = affine_coord(c)?;
        let (lo, hi) = a.range(vars)?;
        if lo < level.interval.start || hi >= level.interval.stop {
            return None;
        }
        addr = addr.scaled_add(&a.scaled_add(&Affine::constant(-level.interval.start), 1), stride);
        stride *= level.interval.len() as i64;
    }
    Some(addr)
}

/// Contracted loop variables with their ranges, and the two loads multiplied.
type ProductSum = (Vec<(DimName, Interval)>, Rc<Load>, Rc<Load>);

/// The contracted variables and the two loads of `body`, the body of reduction `id`, when it
/// is `acc + a·b` or `acc + Σ(a·b)` (a nested sum from zero).
fn product_sum(body: &SExpr, id: u32, scalar: Scalar) -> Option<ProductSum> {
    let SExpr::Binary(BinaryOp::Plus, x, y, s) = body else { return None };
    if *s != scalar {
        return None;
    }
    let term = match (&**x, &**y) {
        (SExpr::Acc(a), t) | (t, SExpr::Acc(a)) if *a == id => t,
        _ => return None,
    };
    match term {
        SExpr::Binary(BinaryOp::Multiplies, a, b, s) if *s == scalar => match (&**a, &**b) {
            (SExpr::Load(a), SExpr::Load(b)) => Some((Vec::new(), a.clone(), b.clone())),
            _ => None,
        },
        SExpr::Reduce { id: inner, vars, init, scalar: s, body } if *s == scalar && is_zero(init) => {
            let (mut more, a, b) = product_sum(body, *inner, scalar)?;
            let mut all = vars.clone();
            all.append(&mut more);
            Some((all, a, b))
        }
        _ => None,
    }
}

fn is_zero(e: &SExpr) -> bool {
    matches!(e, SExpr::Const(Sv::F32(x)) if *x == 0.0 && x.is_sign_positive())
        || matches!(e, SExpr::Const(Sv::F64(x)) if *x == 0.0 && x.is_sign_positive())
}

/// Merges pairs of axes whose strides nest (`outer = extent(inner) · inner` in every buffer).
fn collapse(mut axes: Vec<Axis>) -> Vec<Axis> {
    'again: loop {
        for i in 0..axes.len() {
            for j in 0..axes.len() {
                let (o, n) = (&axes[i], &axes[j]);
                if i != j && (0..3).all(|b| o.strides[b] == n.extent * n.strides[b]) {
                    let inner = axes.remove(j);
                    let outer = &mut axes[if j < i { i - 1 } else { i }];
                    outer.extent *= inner.extent;
                    outer.strides = inner.strides;
                    outer.names.extend(inner.names);
                    continue 'again;
                }
            }
        }
        return axes;
    }
}

/// The matrix product `kernel` computes, if it is one worth a GEMM call (see the module docs).
pub fn recognize(kernel: &Kernel, buffers: &[Buffer]) -> Option<MatMul> {
    // Only plain loop nests (a sparse result is written as storage by its own loops). Sparse
    // operands are iterated by their stored coordinates, never by the dense GEMM.
    if kernel.as_nest().is_none_or(|n| n.compressed.is_some())
        || kernel.stores.len() != 1
        || kernel.exprs().any(crate::sparse::reads_sparse)
    {
        return None;
    }
    let store = &kernel.stores[0];
    let (reduce, epilogue) = split_epilogue(&store.value, store.buffer, buffers)?;
    let SExpr::Reduce { id, vars, init, scalar, body } = &*reduce else { return None };
    if !matches!(scalar, Scalar::F32 | Scalar::F64) || buffers[store.buffer].scalar != *scalar {
        return None;
    }
    let (more, lhs, rhs) = product_sum(body, *id, *scalar)?;
    let reduced: Vec<(DimName, Interval)> = vars.iter().cloned().chain(more).collect();
    let out = store.buffer;
    if lhs.buffer == out || rhs.buffer == out || [lhs.buffer, rhs.buffer].iter().any(|&b| buffers[b].scalar != *scalar)
    {
        return None;
    }
    let domain: Vec<(DimName, Interval)> = kernel.domain.iter().map(|l| (l.name.clone(), l.interval)).collect();
    let all: Vec<(DimName, Interval)> = domain.iter().chain(&reduced).cloned().collect();
    let out_coords = crate::sym::level_vars(&buffers[out].levels);
    let addrs = [
        address(&buffers[out], &out_coords, &all)?,
        address(&buffers[lhs.buffer], &lhs.coords, &all)?,
        address(&buffers[rhs.buffer], &rhs.coords, &all)?,
    ];
    let axis = |(d, iv): &(DimName, Interval)| Axis {
        names: vec![d.clone()],
        extent: iv.len() as i64,
        strides: [addrs[0].coef(d), addrs[1].coef(d), addrs[2].coef(d)],
    };
    let (mut ms, mut ns, mut batch) = (Vec::new(), Vec::new(), Vec::new());
    for v in &domain {
        let a = axis(v);
        match (a.strides[1] != 0, a.strides[2] != 0) {
            (true, false) => ms.push(a),
            (false, true) => ns.push(a),
            _ => batch.push(a),
        }
    }
    let ks: Vec<Axis> = reduced.iter().map(axis).collect();
    if ks.iter().any(|a| a.strides[0] != 0 || a.strides[1] == 0 || a.strides[2] == 0) {
        return None;
    }
    let [k] = <[Axis; 1]>::try_from(collapse(ks)).ok()?;
    // Of several candidate rows (columns), the one with the smallest stride in its operand:
    // the GEMM packs operand panels along it.
    let pick = |mut cands: Vec<Axis>, batch: &mut Vec<Axis>, operand: usize| {
        let best = (0..cands.len()).min_by_key(|&i| (cands[i].strides[operand].abs(), -cands[i].extent, i));
        let chosen = best.map(|i| cands.remove(i));
        batch.extend(cands);
        chosen.unwrap_or(Axis { names: Vec::new(), extent: 1, strides: [0; 3] })
    };
    let m = pick(collapse(ms), &mut batch, 1);
    let n = pick(collapse(ns), &mut batch, 2);
    if !gemm_pays(m.extent, n.extent, k.extent) {
        return None;
    }
    let first = |a: &Affine| {
        a.terms
            .iter()
            .fold(a.constant, |acc, (d, c)| acc + c * all.iter().find(|(e, _)| e == d).map_or(0, |v| v.1.start))
    };
    Some(MatMul {
        scalar: *scalar,
        buffers: [out, lhs.buffer, rhs.buffer],
        offsets: [first(&addrs[0]), first(&addrs[1]), first(&addrs[2])],
        m,
        n,
        k,
        batch,
        init: (!is_zero(init)).then(|| init.clone()),
        epilogue,
    })
}

/// The product and its epilogue in a stored value: the value itself when it is a fold, else
/// its one always-evaluated fold (not under a select branch) with the rest elementwise — the
/// epilogue, rewritten to read the product from `out` at the current point (e.g. `relu(A·B +
/// bias)` becomes `maximum(out + bias, 0)`), applied in place after the GEMM. `None` when the
/// value has no such fold, several, or reads `out` itself.
fn split_epilogue(value: &Rc<SExpr>, out: usize, buffers: &[Buffer]) -> Option<(Rc<SExpr>, Option<Rc<SExpr>>)> {
    if matches!(&**value, SExpr::Reduce { .. }) {
        return Some((value.clone(), None));
    }
    let mut folds = Vec::new();
    collect_folds(value, &mut folds);
    let [fold] = <[Rc<SExpr>; 1]>::try_from(folds).ok()?;
    if crate::sym::reads(value, out) {
        return None;
    }
    let here = crate::sym::level_vars(&buffers[out].levels);
    let product = Rc::new(SExpr::Load(Rc::new(Load { buffer: out, coords: here })));
    let epilogue = replace_fold(value, &fold, &product)?;
    Some((fold, Some(epilogue)))
}

/// The folds `e` always evaluates (through arithmetic, casts and select conditions, not into
/// select branches, short-circuit operators or other folds).
fn collect_folds(e: &Rc<SExpr>, out: &mut Vec<Rc<SExpr>>) {
    match &**e {
        SExpr::Reduce { .. } => out.push(e.clone()),
        SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) => collect_folds(a, out),
        SExpr::Binary(op, a, b, _) if !matches!(op, BinaryOp::And | BinaryOp::Or) => {
            collect_folds(a, out);
            collect_folds(b, out);
        }
        SExpr::Select(c, _, _) => collect_folds(c, out),
        _ => {}
    }
}

/// `e` with the fold `fold` (on an always-evaluated path) replaced by `by`; `None` if a fold
/// occurs anywhere else (e.g. under a select branch).
fn replace_fold(e: &Rc<SExpr>, fold: &Rc<SExpr>, by: &Rc<SExpr>) -> Option<Rc<SExpr>> {
    if Rc::ptr_eq(e, fold) {
        return Some(by.clone());
    }
    let go = |x: &Rc<SExpr>| replace_fold(x, fold, by);
    Some(Rc::new(match &**e {
        SExpr::Unary(op, a, s) => SExpr::Unary(*op, go(a)?, *s),
        SExpr::Cast(a, from, to) => SExpr::Cast(go(a)?, *from, *to),
        SExpr::Binary(op, a, b, s) => SExpr::Binary(*op, go(a)?, go(b)?, *s),
        SExpr::Select(c, t, f) => SExpr::Select(go(c)?, no_fold(t)?, no_fold(f)?),
        _ => return no_fold(e),
    }))
}

/// `e` itself if it contains no fold.
fn no_fold(e: &Rc<SExpr>) -> Option<Rc<SExpr>> {
    let mut any = matches!(&**e, SExpr::Reduce { .. });
    crate::sym::for_each_part(e, &mut |p| {
        if let crate::sym::Part::Expr(x) = p {
            any |= no_fold(x).is_none();
        }
    });
    (!any).then(|| e.clone())
}

impl std::fmt::Display for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.names.iter().map(DimName::as_str).collect();
        let names = if names.is_empty() { "-".to_string() } else { names.join("·") };
        write!(f, "{names} x{} strides {:?}", self.extent, self.strides)
    }
}

impl std::fmt::Display for MatMul {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "m = {}, n = {}, k = {}", self.m, self.n, self.k)?;
        for b in &self.batch {
            write!(f, ", batch {b}")?;
        }
        if self.init.is_some() {
            write!(f, ", accumulating onto the initial value")?;
        }
        if let Some(e) = &self.epilogue {
            write!(f, ", then in place: {}", crate::sym::show(e))?;
        }
        Ok(())
    }
}
