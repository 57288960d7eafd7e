//! The cost rules of extraction of temporaries (seed 000, "Storing Intermediate Results into
//! Temporary Buffers"): whether a value is computed once over its own domain into a temporary
//! (`Lowerer::extract_temporary`) or recomputed at every reference.
//!
//! Two rules decide, both from facts the types give before any code exists:
//! - **Reuse** (`Evaluations`, `worth_keeping`): a global count of how many times each
//!   point of every value would be computed if everything were inlined (a value read by five
//!   shifts of a laplacian, itself read five times, is computed 25 times per point), against
//!   the work of one evaluation and the bytes the temporary would move through the cache or
//!   memory. It bounds the code: without it `y = y*y + y` repeated n times inlines 3^n copies.
//! - **Neighbor tables** (`worth_extracting`): a value read through a table that itself
//!   reads through a table is extracted unless it is cheap to recompute.

use std::collections::HashMap;
use std::rc::Rc;

use strata_entity::Handle;
use strata_ir::{Function, Level, Module, Op, Statement, Type, TypeArena};

use crate::sym::{Coord, Part, SExpr};

/// How many times each point of each value of a function is computed per point of its results
/// when every value is inlined at its uses; per function, memoized.
///
/// Counted backwards from the results (and assigned values), each once: an operand is computed
/// once per evaluation of its user at every point the user reads (a shift reads each point
/// once, so five shifts read each point five times), times the points the user adds to it
/// (broadcasting over a new dimension computes each operand point once per point of that
/// dimension); an argument of a call as often as the callee computes its parameter.
/// A contraction's operand (`dot_general`, `map_reduce`) is read once per point of the
/// contraction's loop nest it does not index. Operands of other ops (concatenations, payloads)
/// count once per use; a long reduction read several times per point counts as computed once.
///
/// Also counted: each value's *reads* per evaluation of its users (its fan-out), a result's
/// store (or return) counting as one. A value read once by one user (an operand of a formula)
/// is computed as often as that user and is kept only with it, never alone; a value that is a
/// result and also read by another value (`q = A @ p` returned beside `p · q`) is computed
/// once per use when inlined, so the reuse rule may keep it (in the result).
#[derive(Default)]
pub(crate) struct Evaluations {
    memo: HashMap<Handle<Function>, Rc<Counts>>,
}

/// Per expression of a function (indexed by `Value::index`): evaluations per point of the
/// function's results, and reads per evaluation of its users.
pub(crate) struct Counts {
    /// Evaluations per point when everything is inlined.
    pub evaluations: Vec<f64>,
    /// Reads by its users, each counted once per evaluation of the user.
    pub reads: Vec<f64>,
    /// Whether it is an operand of a (+, ×) product of `f32`/`f64` values large enough for the
    /// runtime GEMM ([`crate::matmul::gemm_pays`]), directly or through a transpose or a
    /// reshape: see [`worth_keeping_for_gemm`].
    pub multiplied: Vec<bool>,
}

impl Evaluations {
    /// The counts of every expression of `f`.
    pub(crate) fn of(&mut self, module: &Module, types: &TypeArena, f: Handle<Function>) -> Rc<Counts> {
        if let Some(e) = self.memo.get(&f) {
            return e.clone();
        }
        let func = &module.functions[f];
        let mut evals = vec![0.0f64; func.exprs.len()];
        let mut reads = vec![0.0f64; func.exprs.len()];
        let mut multiplied = vec![false; func.exprs.len()];
        // A result is read once per point by its store (or its caller), beside any reads by
        // other values: a value returned and also read by another one is computed twice when
        // inlined, and so is a candidate for keeping (into the result itself).
        for (_, stmt) in func.body.iter() {
            let results = match stmt {
                Statement::Return(vs) => vs.as_slice(),
                Statement::Assign { value, .. } => std::slice::from_ref(value),
                Statement::Let(_) => &[],
            };
            for v in results {
                evals[v.index()] += 1.0;
                reads[v.index()] += 1.0;
            }
        }
        let lets: Vec<_> =
            func.body.iter().filter_map(|(_, s)| if let Statement::Let(v) = s { Some(*v) } else { None }).collect();
        for v in lets.into_iter().rev() {
            let ev = evals[v.index()];
            if ev == 0.0 {
                continue;
            }
            let strata_ir::ExprKind::Op(op) = &func.exprs[v].kind else { continue };
            if let Op::Call { func: callee, args, .. } = op {
                let inner = self.of(module, types, *callee);
                let params = &module.functions[*callee].params;
                for (a, p) in args.iter().zip(params) {
                    evals[a.index()] += ev * inner.evaluations[p.index()];
                    reads[a.index()] += inner.evaluations[p.index()];
                }
                continue;
            }
            // Only broadcasting reads an operand point at several points of the result;
            // other ops with more points than an operand (concatenation, padding, scatter)
            // read each of its points once.
            let broadcasting = matches!(
                op,
                Op::Unary { .. }
                    | Op::Binary { .. }
                    | Op::Select { .. }
                    | Op::Cast { .. }
                    | Op::AddDim { .. }
                    | Op::Broadcast { .. }
                    | Op::BroadcastInDim { .. }
                    | Op::Map { .. }
            );
            let here = points(types, func.exprs[v].ty);
            let spreads = contraction_spreads(types, func, op, here);
            match op {
                // A layout change of a product's operand is one too.
                Op::Transpose { arg, .. } | Op::ExpandShape { arg, .. } | Op::CollapseShape { arg, .. }
                    if multiplied[v.index()] =>
                {
                    multiplied[arg.index()] = true;
                }
                Op::DotGeneral { lhs, rhs, .. } | Op::Product2d { lhs, rhs, .. } if gemm_sized(types, func, op) => {
                    multiplied[lhs.index()] = true;
                    multiplied[rhs.index()] = true;
                }
                _ => {}
            }
            for (i, a) in op.operands().into_iter().enumerate() {
                let there = points(types, func.exprs[a].ty);
                let spread = match &spreads {
                    _ if broadcasting => (here / there).max(1.0),
                    Some(s) => s.get(i).copied().unwrap_or(1.0),
                    None => 1.0,
                };
                // A reduction evaluated several times per point is computed once (kept, or
                // hoisted by `invariant`) when its folds are long: its operand is then
                // computed once per point of the reduction.
                let folds = there / here;
                let ev = if folds > 1.0 && (ev - 1.0) * folds > RECOMPUTE_IN_CACHE { 1.0 } else { ev };
                evals[a.index()] += ev * spread;
                reads[a.index()] += spread;
            }
        }
        let counts = Rc::new(Counts { evaluations: evals, reads, multiplied });
        self.memo.insert(f, counts.clone());
        counts
    }
}

/// How many times a contraction `op` (its result has `here` points) reads each point of each
/// operand: once per point of the result's loops the operand does not index (a matrix-vector
/// product reads the vector once per row). Loops of the fold an operand does not index do not
/// count: such an operand is invariant in the fold and evaluated once per result point (a row
/// mean inside a variance). `None` for other ops.
fn contraction_spreads(types: &TypeArena, func: &Function, op: &Op, here: f64) -> Option<Vec<f64>> {
    let extent = |v: strata_ir::Value, pos: usize| match &types[func.exprs[v].ty] {
        Type::Tensor(t) => t.levels.get(pos).map_or(1.0, |l| l.interval.len() as f64),
        _ => 1.0,
    };
    let points = |v: strata_ir::Value| points(types, func.exprs[v].ty);
    // An operand indexing every contracted loop: the result's points per operand point
    // outside the contraction.
    let spread = |v: strata_ir::Value, contract: f64| (here * contract / points(v)).max(1.0);
    match op {
        Op::DotGeneral { lhs, rhs, lhs_contract, .. } => {
            let contract = lhs_contract.iter().map(|&d| extent(*lhs, d as usize)).product::<f64>();
            Some(vec![spread(*lhs, contract), spread(*rhs, contract)])
        }
        Op::Product2d { lhs, rhs, .. } => {
            let contract = extent(*lhs, 1);
            Some(vec![spread(*lhs, contract), spread(*rhs, contract)])
        }
        Op::MapReduce { args, subscripts, .. } => {
            // Each output letter's extent, from the first input that names it.
            let out_extent = |c: &char| {
                args.iter()
                    .zip(&subscripts.inputs)
                    .find_map(|(a, letters)| letters.iter().position(|l| l == c).map(|p| extent(*a, p)))
                    .unwrap_or(1.0)
            };
            Some(
                subscripts
                    .inputs
                    .iter()
                    .map(|letters| {
                        subscripts.output.iter().filter(|c| !letters.contains(c)).map(out_extent).product::<f64>()
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Whether `op` is a (+, ×) product of `f32` or `f64` matrices the `recognize-matmul` pass
/// would run as a GEMM were its operands loads: no batch dimensions, and a size
/// [`crate::matmul::gemm_pays`] accepts.
fn gemm_sized(types: &TypeArena, func: &Function, op: &Op) -> bool {
    use strata_ir::{BuiltinRing, RingRef};
    let (lhs, rhs, ring, contract) = match op {
        Op::DotGeneral { lhs, rhs, ring, lhs_contract, lhs_batch, .. } if lhs_batch.is_empty() => {
            (*lhs, *rhs, ring, lhs_contract.clone())
        }
        Op::Product2d { lhs, rhs, ring } => (*lhs, *rhs, ring, vec![1]),
        _ => return false,
    };
    let Type::Tensor(t) = &types[func.exprs[lhs].ty] else { return false };
    let float = matches!(
        strata_ir::types::element_scalar(types, func.exprs[lhs].ty),
        Some(strata_ir::Scalar::F32 | strata_ir::Scalar::F64)
    );
    let k: f64 = contract.iter().filter_map(|&d| t.levels.get(d as usize)).map(|l| l.interval.len() as f64).product();
    let (m, n) = (points(types, func.exprs[lhs].ty) / k.max(1.0), points(types, func.exprs[rhs].ty) / k.max(1.0));
    float
        && matches!(ring, RingRef::Builtin(BuiltinRing::PlusTimes))
        && crate::matmul::gemm_pays(m as i64, n as i64, k as i64)
}

/// The points of a value of type `ty` (1 for a scalar or an unknown type).
fn points(types: &TypeArena, ty: Handle<Type>) -> f64 {
    match &types[ty] {
        Type::Tensor(t) => t.levels.iter().map(|l| l.interval.len() as f64).product::<f64>().max(1.0),
        _ => 1.0,
    }
}

/// Work (arithmetic operations and loads) of one evaluation of `parts`, counting shared
/// sub-expressions once per reference (what inlining them costs) without visiting them more
/// than once; a fold's body counts once per step.
pub(crate) fn work(parts: &[Rc<SExpr>]) -> f64 {
    fn visit(e: &Rc<SExpr>, memo: &mut HashMap<*const SExpr, f64>) -> f64 {
        if let Some(w) = memo.get(&Rc::as_ptr(e)) {
            return *w;
        }
        let trips = match &**e {
            SExpr::Reduce { vars, .. } => vars.iter().map(|(_, i)| i.len() as f64).product::<f64>(),
            _ => 1.0,
        };
        let mut w = 1.0;
        crate::sym::for_each_part(e, &mut |p| w += trips * part(p, memo));
        memo.insert(Rc::as_ptr(e), w);
        w
    }
    fn part(p: Part, memo: &mut HashMap<*const SExpr, f64>) -> f64 {
        match p {
            Part::Expr(e) => visit(e, memo),
            Part::Coord(c) => {
                let mut w = if matches!(c, Coord::Table { .. }) { 1.0 } else { 0.0 };
                crate::sym::for_each_coord_part(c, &mut |q| w += part(q, memo));
                w
            }
        }
    }
    let mut memo = HashMap::new();
    parts.iter().map(|p| visit(p, &mut memo)).sum()
}

/// Work of one evaluation, in operations, that recomputing a value for each extra evaluation may
/// cost before a temporary in cache is cheaper (one store, and one load per evaluation, in L2:
/// [`crate::stage`]'s rolling windows still share small recomputations within a kernel).
const RECOMPUTE_IN_CACHE: f64 = 256.0;

/// The same where the temporary does not fit the cache: each point then costs a write and reads
/// through memory (a DRAM line moves in the time of tens of operations).
const RECOMPUTE_IN_MEMORY: f64 = 2048.0;

/// The most operations of inlined copies of one value per point of its users: beyond this a
/// value is kept whatever the working set, so that code stays bounded in the program's size.
const MOST_INLINED: f64 = 16384.0;

/// The reuse rule: whether a value computed `evaluations` times per point when inlined, with
/// `work` operations per evaluation, is computed once into a temporary of `bytes` instead,
/// given a cache of `cache_bytes` (the temporary fits when it takes at most half of it).
pub(crate) fn worth_keeping(evaluations: f64, work: f64, bytes: f64, cache_bytes: i64) -> bool {
    // A value that is one load (a broadcast operand, a column of a matrix) costs what reading
    // its temporary would: nothing to save.
    if evaluations <= 1.0 || work <= 1.0 {
        return false;
    }
    let budget = if bytes <= cache_bytes as f64 / 2.0 { RECOMPUTE_IN_CACHE } else { RECOMPUTE_IN_MEMORY };
    (evaluations - 1.0) * work > budget || evaluations * work > MOST_INLINED
}

/// Reads per point of a product's operand from which it is computed once into a temporary
/// when it is not a plain load ([`worth_keeping_for_gemm`]).
const GEMM_REUSE: f64 = 8.0;

/// The GEMM rule: whether an operand of a product the runtime GEMM would compute
/// ([`Counts::multiplied`]), computed `evaluations` times per point when inlined with `work`
/// operations per evaluation, is computed once into a temporary so that the product reads
/// loads only and `recognize-matmul` hands it to the GEMM. Inlined, an operand such as a
/// centered matrix (`x - mean(x, 0)` in a covariance) makes the product a fold per output
/// element that reads the operand's columns with a stride, once per output row or column:
/// `cov(X.T)` of a 200,000 × 50 matrix took 150–190 ms so, where numpy (a centered copy, then
/// BLAS) takes 43 ms. The temporary costs one write and one read of the operand.
pub(crate) fn worth_keeping_for_gemm(evaluations: f64, work: f64) -> bool {
    work > 1.0 && evaluations >= GEMM_REUSE
}

/// Whether the value with scalar leaves `parts`, over dense-like `levels` and reading loop
/// variables of those levels only, is worth a temporary: it reads through a neighbor table
/// and is not [`cheap_to_recompute`].
pub(crate) fn worth_extracting(parts: &[Rc<SExpr>], levels: &[Level]) -> bool {
    parts.iter().any(reads_through_table)
        && levels.iter().all(|l| l.format.is_dense_like())
        && !cheap_to_recompute(parts)
}

/// Most loads (table entries included) of a value read through a neighbor table that
/// [`cheap_to_recompute`] lets be recomputed at every reference instead of extracted.
const RECOMPUTE_LOADS: u64 = 8;

/// The cost rule of extraction of temporaries: a value read through a neighbor table is
/// recomputed at each reference, not extracted, when evaluating it takes at most
/// [`RECOMPUTE_LOADS`] loads (table entries included; a load inside a fold counts once per
/// step, so GT4Py's `neighbor_sum` over an edge's two vertices is cheap) and no sparse lookup.
/// On a mesh numbered for locality the recomputation's loads hit the cache (the edges of
/// neighboring vertices are near each other), while a temporary costs a store and a gathered
/// reload from memory per point and leaf, plus a presence column where the value can be
/// skipped: measured on the nabla (docs/performance.md), recomputing the edge flux at each of
/// the ~2.3 vertex references per edge is 20 % faster than the temporary. A value with a long
/// fold, or one that itself reads an expensive value through a table (the inner laplacian of
/// a mesh laplacian of laplacian), is extracted.
fn cheap_to_recompute(parts: &[Rc<SExpr>]) -> bool {
    use crate::sym::Part;
    fn part(p: Part, trips: u64, loads: &mut u64, plain: &mut bool) {
        match p {
            Part::Expr(e) => {
                let mut inner = trips;
                match &**e {
                    SExpr::Load(_) | SExpr::Guard { .. } => *loads = loads.saturating_add(trips),
                    SExpr::Sparse(_) => *plain = false,
                    SExpr::Reduce { vars, .. } => {
                        inner = vars.iter().fold(trips, |t, (_, i)| t.saturating_mul(i.len()));
                    }
                    _ => {}
                }
                crate::sym::for_each_part(e, &mut |q| part(q, inner, loads, plain));
            }
            Part::Coord(c) => {
                if matches!(c, Coord::Table { .. }) {
                    *loads = loads.saturating_add(trips);
                }
                crate::sym::for_each_coord_part(c, &mut |q| part(q, trips, loads, plain));
            }
        }
    }
    let (mut loads, mut plain) = (0, true);
    for e in parts {
        part(Part::Expr(e), 1, &mut loads, &mut plain);
    }
    plain && loads <= RECOMPUTE_LOADS
}

/// Whether `e` loads through a neighbor table anywhere.
fn reads_through_table(e: &Rc<SExpr>) -> bool {
    fn part(p: crate::sym::Part, found: &mut bool) {
        use crate::sym::Part;
        match p {
            Part::Expr(e) => {
                *found |= matches!(&**e, SExpr::Guard { .. });
                crate::sym::for_each_part(e, &mut |q| part(q, found));
            }
            Part::Coord(c) => {
                *found |= matches!(c, Coord::Table { .. });
                crate::sym::for_each_coord_part(c, &mut |q| part(q, found));
            }
        }
    }
    let mut found = false;
    part(crate::sym::Part::Expr(e), &mut found);
    found
}
