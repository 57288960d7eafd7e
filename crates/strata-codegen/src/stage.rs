//! Pass `stage_windows`: a value a kernel reads at several offsets (the inner laplacian of a
//! laplacian of laplacian, read at five points per output) is computed once per point into a
//! rolling window of planes instead of once per offset — GridTools' and GT4Py's cache
//! blocking of extracted temporaries, chosen per kernel by a cost rule.
//!
//! Fusion inlines every value at its use (no intermediate tensor in memory), so a chain of
//! cartesian stencils recomputes each inner stage at every offset its reader shifts it by:
//! the laplacian of laplacian evaluates the inner laplacian five times per point and is
//! compute-bound on a machine with fast memory. Materializing the inner stage as a tensor would
//! trade that for a round trip through memory. A window keeps the trade local: along the
//! kernel's outermost level, each thread computes plane `q` of the staged value (over the other
//! levels, widened to every point the readers reach) into a ring of `depth` planes that stays
//! in cache, and runs the stores of plane `q - ahead` from it. Each staged point is computed
//! once per thread's block of planes, plus `depth - 1` planes of warm-up per block.
//!
//! **What is staged.** Subexpressions that occur at two or more translations of the loop
//! variables (`T(I+1, J)`, `T(I-1, J)`, …): grouped by their form with offsets normalized to
//! the smallest per dimension, greedily by the work saved, repeatedly (a staged value may read
//! earlier windows: a 3-stage horizontal diffusion stages the laplacian, then the limited
//! fluxes that read it). A candidate must be a float value, always present, reading dense
//! buffers through loop variables plus constants only, with no integer division (computing it
//! at the window's extra points — the corners of the widened box — then reads in bounds and
//! cannot fail, because every read's range is a box), and free of accumulators of enclosing
//! folds.
//!
//! **Which level rolls.** The outermost. A kernel whose outermost level no value reads at an
//! offset (GT4Py's layout puts K outermost; a horizontal stencil shifts I and J) is also staged
//! with the first level read at an offset moved outermost (the innermost stays innermost), and
//! the order that stages more windows is kept: along K a window is a whole J×I plane, of which
//! the budget holds few.
//!
//! **Cost rule** (per point, in units of one arithmetic operation or L1 access, see [`ops`]):
//! recomputing costs `k · w` for `k` distinct translations of a value of work `w`; staging
//! costs `w · (hull / domain)` (the widened box's points per output point) plus
//! `MEMORY_OPS · (k + 1)` (one window write, `k` window reads). Stage when that is less, the
//! kernel's plane holds at least [`MIN_PLANE`] points (so the plane loops vectorize) and every
//! window of the kernel fits [`WINDOW_BUDGET`] bytes together.
//!
//! Results are bit for bit those of recomputation: a staged point evaluates the same
//! expression, in the same order, as each of its inlined copies did.

use std::collections::HashMap;
use std::rc::Rc;

use strata_ir::{BinaryOp, DimName, Interval, Level, Scalar};

use crate::kernel::{Buffer, Kernel, KernelProgram, Role, Window};
use crate::sym::{for_each_part, map_children, show, substitute, Coord, Load, Part, SExpr};

/// The cost, in arithmetic operations, of one window write or read (in L1/L2).
const MEMORY_OPS: f64 = 2.0;

/// The least points of a plane (the levels inside the outermost) worth a rolling window: the
/// plane loops must vectorize.
pub const MIN_PLANE: i64 = 64;

/// The most bytes a kernel's windows hold per thread: half of a 2 MiB L2 cache.
pub const WINDOW_BUDGET: i64 = 1 << 20;

/// Runs the pass over every kernel that is a plain loop nest over dense levels (the last pass:
/// GEMM recognition and set iteration have already chosen their kernels).
pub fn stage_windows(program: &mut KernelProgram) {
    for k in 0..program.kernels.len() {
        let kernel = &program.kernels[k];
        let eligible = kernel.as_nest().is_some_and(|n| n.compressed.is_none())
            && kernel.sets.is_empty()
            && kernel.domain.len() >= 2
            && kernel.domain.iter().all(|l| l.format.is_dense_like());
        if !eligible {
            continue;
        }
        // Staged in its own loop order, and, where its outermost level is read at no offset,
        // with a level that is outermost instead: the order that stages more windows is kept
        // (GT4Py's horizontal diffusion, K outermost: one window of whole horizontal planes
        // fits the budget, three with J outermost; its laplacian of laplacian stages its one
        // window either way and keeps its order).
        let Some(reordered) = outermost_read_at_offsets(kernel) else {
            stage_all(&mut program.kernels[k], &mut program.buffers);
            continue;
        };
        let mut trial = (reordered, program.buffers.clone());
        stage_all(&mut trial.0, &mut trial.1);
        stage_all(&mut program.kernels[k], &mut program.buffers);
        if trial.0.windows().len() > program.kernels[k].windows().len() {
            (program.kernels[k], program.buffers) = trial;
        }
    }
}

/// Stages in kernel `k` every window the cost rule chooses along its outermost level, adding
/// the windows' buffers to `buffers` (none where its planes are too small to vectorize).
fn stage_all(k: &mut Kernel, buffers: &mut Vec<Buffer>) {
    if plane_points(k) >= MIN_PLANE {
        while let Some(found) = best_candidate(k, buffers) {
            stage(k, buffers, found);
        }
        order_windows(k, buffers);
    }
}

/// Points of a plane of `k` (every domain level inside the outermost).
fn plane_points(k: &Kernel) -> i64 {
    k.domain[1..].iter().map(|l| l.interval.len() as i64).product()
}

/// `k` with its loops reordered so that a level its stores read at an offset runs outermost,
/// when the outermost is read at none (GT4Py's padded layout puts K outermost, where a
/// horizontal stencil reads no neighbour): windows roll along the outermost level, and along
/// one read at no offset there is nothing to reuse, while the planes across it are as large as
/// the whole horizontal grid. The first such level moves outermost; the innermost stays
/// innermost (the vector loop over contiguous memory). `None` where nothing would change, or
/// where the order could matter: a kernel that reads a buffer it writes.
fn outermost_read_at_offsets(k: &Kernel) -> Option<Kernel> {
    let n = k.domain.len();
    if n < 3 {
        return None;
    }
    let reads_own = k.stores.iter().any(|st| k.stores.iter().any(|w| crate::sym::reads(&st.value, w.buffer)));
    if reads_own {
        return None;
    }
    let mut shifted: Vec<DimName> = Vec::new();
    for st in &k.stores {
        crate::sym::for_each_load(&st.value, &mut |l| {
            for c in &l.coords {
                if let Coord::Var { dim, offset } = c {
                    if *offset != 0 && !shifted.contains(dim) {
                        shifted.push(dim.clone());
                    }
                }
            }
        });
    }
    if shifted.contains(&k.domain[0].name) {
        return None;
    }
    let i = (1..n - 1).find(|&i| shifted.contains(&k.domain[i].name))?;
    let mut reordered = k.clone();
    let level = reordered.domain.remove(i);
    reordered.domain.insert(0, level);
    Some(reordered)
}

/// One class of translated occurrences: the normalized value, each distinct translation (per
/// domain level) in each container (`None`: the stores, `Some(w)`: window `w`'s value), and the
/// occurrences themselves (by address) with their translations.
struct Class {
    value: Rc<SExpr>,
    scalar: Scalar,
    at: Vec<(Option<usize>, Vec<i64>)>,
    nodes: HashMap<*const SExpr, Vec<i64>>,
    work: f64,
}

/// The most subexpressions a kernel's search visits (a guard on compile time).
const SEARCH_LIMIT: usize = 50_000;

/// The class saving the most work that the cost rule accepts.
fn best_candidate(k: &Kernel, buffers: &[Buffer]) -> Option<Class> {
    let dims: Vec<&DimName> = k.domain.iter().map(|l| &l.name).collect();
    let mut classes: HashMap<String, Class> = HashMap::new();
    let containers = k
        .stores
        .iter()
        .map(|st| (None, &st.value))
        .chain(k.windows().iter().enumerate().map(|(i, w)| (Some(i), &w.value)));
    let mut visited = 0;
    for (container, e) in containers {
        let mut seen = std::collections::HashSet::new();
        each_subexpression(e, &mut |t| {
            visited += 1;
            if !seen.insert(Rc::as_ptr(t)) || visited > SEARCH_LIMIT {
                return false;
            }
            let Some(scalar) = stageable(t, buffers, &dims) else { return true };
            let work = ops(t);
            if work < 3.0 {
                return true;
            }
            let m = base_offsets(t, &dims);
            let value = Rc::new(translate(t, &dims, &m.iter().map(|o| -o).collect::<Vec<_>>()));
            let class = classes.entry(show(&value)).or_insert_with(|| Class {
                value: value.clone(),
                scalar,
                at: Vec::new(),
                nodes: HashMap::new(),
                work,
            });
            if class.value == value {
                if !class.at.iter().any(|(c, o)| *c == container && *o == m) {
                    class.at.push((container, m.clone()));
                }
                class.nodes.insert(Rc::as_ptr(t), m);
            }
            true
        });
    }
    if visited > SEARCH_LIMIT {
        return None;
    }
    let window_bytes: i64 =
        k.windows().iter().map(|w| ring_bytes(k, &buffers[w.buffer].levels, buffers[w.buffer].scalar)).sum();
    classes
        .into_values()
        .filter(|c| c.at.len() >= 2)
        .filter(|c| {
            let levels = hull(k, buffers, c);
            let points = |ls: &[Level]| ls.iter().map(|l| l.interval.len() as f64).product::<f64>();
            let widened = points(&levels) / points(&k.domain);
            let n = c.at.len() as f64;
            let bytes = ring_bytes(k, &levels, c.scalar);
            n * c.work > c.work * widened + MEMORY_OPS * (n + 1.0) && window_bytes + bytes <= WINDOW_BUDGET
        })
        .max_by(|a, b| {
            let saved = |c: &Class| (c.at.len() as f64 - 1.0) * c.work;
            saved(a).total_cmp(&saved(b)).then_with(|| show(&b.value).cmp(&show(&a.value)))
        })
}

/// The bytes a window over `levels` keeps per thread: its ring of planes, as many as its
/// outermost level reaches beyond the kernel's.
fn ring_bytes(k: &Kernel, levels: &[Level], scalar: Scalar) -> i64 {
    let depth = levels[0].interval.len() as i64 - k.domain[0].interval.len() as i64 + 1;
    depth * levels[1..].iter().map(|l| l.interval.len() as i64).product::<i64>() * scalar.size_bytes() as i64
}

/// The box of points the occurrences of `c` read the staged value at: per domain level, the
/// union of its containers' ranges (the domain, or a window's levels) moved by each translation.
fn hull(k: &Kernel, buffers: &[Buffer], c: &Class) -> Vec<Level> {
    k.domain
        .iter()
        .enumerate()
        .map(|(d, l)| {
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            for (container, m) in &c.at {
                let range = match container {
                    None => l.interval,
                    Some(w) => buffers[k.windows()[*w].buffer].levels[d].interval,
                };
                lo = lo.min(range.start + m[d]);
                hi = hi.max(range.stop + m[d]);
            }
            Level::dense(l.name.clone(), Interval::new(lo, hi))
        })
        .collect()
}

/// Stages class `c`: a window buffer over its hull, every occurrence replaced by a read of it.
/// The staged value is centered on its translations (for readable loops: a laplacian read at
/// `I±1`, `J±1` and the point itself is staged at the point, read at `b2[I-1, J]`, …).
fn stage(k: &mut Kernel, buffers: &mut Vec<Buffer>, mut c: Class) {
    let center: Option<Vec<i64>> = (0..k.domain.len())
        .map(|d| {
            let lo = c.at.iter().map(|(_, m)| m[d]).min()?;
            let hi = c.at.iter().map(|(_, m)| m[d]).max()?;
            Some((lo + hi).div_euclid(2))
        })
        .collect();
    if let Some(r) = center {
        let dims: Vec<&DimName> = k.domain.iter().map(|l| &l.name).collect();
        c.value = Rc::new(translate(&c.value, &dims, &r));
        let rebase = |m: &mut Vec<i64>| m.iter_mut().zip(&r).for_each(|(o, ro)| *o -= ro);
        c.at.iter_mut().for_each(|(_, m)| rebase(m));
        c.nodes.values_mut().for_each(rebase);
    }
    let levels = hull(k, buffers, &c);
    let name = format!("stage{}", buffers.len());
    let mut buffer = Buffer::temporary(name, c.scalar, levels, Vec::new());
    buffer.role = Role::Window;
    buffers.push(buffer);
    let b = buffers.len() - 1;
    let dims: Vec<DimName> = k.domain.iter().map(|l| l.name.clone()).collect();
    let read = |m: &[i64]| {
        let coords = dims.iter().zip(m).map(|(d, o)| Coord::Var { dim: d.clone(), offset: *o }).collect();
        Rc::new(SExpr::Load(Rc::new(Load { buffer: b, coords })))
    };
    let replace_in = |e: &Rc<SExpr>| replace_nodes(e, &c.nodes, &read);
    for st in &mut k.stores {
        st.value = replace_in(&st.value);
    }
    let windows = windows_mut(k);
    for w in windows.iter_mut() {
        w.value = replace_in(&w.value);
    }
    windows.push(Window { buffer: b, value: c.value, ahead: 0, behind: 0 });
}

/// The windows of a loop nest (the only kind of kernel this pass stages in).
fn windows_mut(k: &mut Kernel) -> &mut Vec<Window> {
    &mut k.as_nest_mut().expect("staging runs on loop nests").windows
}

/// `e` with each of the occurrences `nodes` (by address) replaced by `read(translation)`.
fn replace_nodes(
    e: &Rc<SExpr>,
    nodes: &HashMap<*const SExpr, Vec<i64>>,
    read: &dyn Fn(&[i64]) -> Rc<SExpr>,
) -> Rc<SExpr> {
    match nodes.get(&Rc::as_ptr(e)) {
        Some(m) => read(m),
        None => map_children(e, &|x| replace_nodes(x, nodes, read), &Coord::clone),
    }
}

/// `value` moved by `m` (each domain variable `d` becomes `d + m[d]`).
fn translate(value: &Rc<SExpr>, dims: &[&DimName], m: &[i64]) -> SExpr {
    let mut v = value.clone();
    for (d, o) in dims.iter().zip(m) {
        if *o != 0 {
            v = substitute(&v, d, &Coord::Var { dim: (*d).clone(), offset: *o });
        }
    }
    (*v).clone()
}

/// Puts the windows in dependency order (each reads only earlier ones) and sets how far ahead
/// of and behind the stores' plane each is read: the stores read at their own plane, a window
/// read by another at offsets `o` reaches the reader's reach moved by `o`.
fn order_windows(k: &mut Kernel, buffers: &[Buffer]) {
    let mut ordered: Vec<Window> = Vec::new();
    let mut left = std::mem::take(windows_mut(k));
    while !left.is_empty() {
        let ready = left
            .iter()
            .position(|w| {
                !left.iter().any(|other| other.buffer != w.buffer && crate::sym::reads(&w.value, other.buffer))
            })
            .expect("windows read each other without a cycle");
        ordered.push(left.remove(ready));
    }
    // Readers come after what they read, so reaches propagate from the last window back.
    for i in (0..ordered.len()).rev() {
        let b = ordered[i].buffer;
        let (mut ahead, mut behind) = (i64::MIN, i64::MAX);
        let mut reader = |offsets: &[i64], reach: (i64, i64)| {
            for o in offsets {
                ahead = ahead.max(reach.0 + o);
                behind = behind.min(reach.1 + o);
            }
        };
        for st in &k.stores {
            reader(&outer_offsets(&st.value, b), (0, 0));
        }
        for w in &ordered[i + 1..] {
            reader(&outer_offsets(&w.value, b), (w.ahead, w.behind));
        }
        if ahead < behind {
            // Not read (cannot happen: staging only moves reads into windows).
            (ahead, behind) = (0, 0);
        }
        ordered[i].ahead = ahead;
        ordered[i].behind = behind;
        debug_assert_eq!(
            buffers[b].levels[0].interval,
            Interval::new(k.domain[0].interval.start + behind, k.domain[0].interval.stop + ahead),
            "a window's outermost range is its reach"
        );
    }
    *windows_mut(k) = ordered;
}

/// The offsets along the outermost level at which `e` reads buffer `b`.
fn outer_offsets(e: &Rc<SExpr>, b: usize) -> Vec<i64> {
    let mut out = Vec::new();
    each_subexpression(e, &mut |x| {
        if let SExpr::Load(l) = &**x {
            if let (true, Some(Coord::Var { offset, .. })) = (l.buffer == b, l.coords.first()) {
                out.push(*offset);
            }
        }
        true
    });
    out
}

/// Calls `f` on `e` and every subexpression (not inside coordinates), not below those where it
/// returns false.
fn each_subexpression(e: &Rc<SExpr>, f: &mut dyn FnMut(&Rc<SExpr>) -> bool) {
    if !f(e) {
        return;
    }
    for_each_part(e, &mut |p| {
        if let Part::Expr(x) = p {
            each_subexpression(x, f);
        }
    });
}

/// The smallest offset of each domain variable in `e`'s coordinates (0 where it has none).
fn base_offsets(e: &Rc<SExpr>, dims: &[&DimName]) -> Vec<i64> {
    let mut m: Vec<Option<i64>> = vec![None; dims.len()];
    fn visit(p: Part, dims: &[&DimName], m: &mut Vec<Option<i64>>) {
        match p {
            Part::Coord(Coord::Var { dim, offset }) => {
                if let Some(d) = dims.iter().position(|x| *x == dim) {
                    m[d] = Some(m[d].map_or(*offset, |o| o.min(*offset)));
                }
            }
            Part::Coord(c) => crate::sym::for_each_coord_part(c, &mut |q| visit(q, dims, m)),
            Part::Expr(x) => for_each_part(x, &mut |q| visit(q, dims, m)),
        }
    }
    visit(Part::Expr(e), dims, &mut m);
    m.into_iter().map(|o| o.unwrap_or(0)).collect()
}

/// The scalar type of `t` if it may be staged: a float value, always present, whose reads are
/// dense buffers at loop variables of the domain plus constants, with no operation that can
/// fail (integer division, an integer power) and no accumulator of an enclosing fold.
fn stageable(t: &Rc<SExpr>, buffers: &[Buffer], dims: &[&DimName]) -> Option<Scalar> {
    fn ok(p: Part, buffers: &[Buffer], dims: &[&DimName], bound: &mut Vec<DimName>, accs: &mut Vec<u32>) -> bool {
        match p {
            Part::Coord(Coord::Var { dim, .. }) => dims.contains(&dim) || bound.contains(dim),
            Part::Coord(Coord::Const(_)) => true,
            Part::Coord(_) => false,
            Part::Expr(e) => {
                let here = match &**e {
                    SExpr::Load(l) => matches!(buffers[l.buffer].role, Role::Elements | Role::Window),
                    SExpr::Const(_) | SExpr::Index(_) | SExpr::Unary(..) | SExpr::Select(..) | SExpr::Cast(..) => true,
                    SExpr::Binary(op, _, _, s) => s.is_float() || !may_fail(*op),
                    SExpr::Acc(id) => accs.contains(id),
                    SExpr::Reduce { id, vars, init, body, .. } => {
                        if !ok(Part::Expr(init), buffers, dims, bound, accs) {
                            return false;
                        }
                        let n = bound.len();
                        bound.extend(vars.iter().map(|(d, _)| d.clone()));
                        accs.push(*id);
                        let fine = ok(Part::Expr(body), buffers, dims, bound, accs);
                        accs.pop();
                        bound.truncate(n);
                        return fine;
                    }
                    SExpr::Sparse(_) | SExpr::Absent(_) | SExpr::Present(_) | SExpr::Guard { .. } => false,
                };
                let mut all = here;
                if here {
                    for_each_part(e, &mut |q| all = all && ok(q, buffers, dims, bound, accs));
                }
                all
            }
        }
    }
    let scalar = scalar_of(t, buffers)?;
    (scalar.is_float() && ok(Part::Expr(t), buffers, dims, &mut Vec::new(), &mut Vec::new())).then_some(scalar)
}

/// Whether integer `op` can fail at run time (division by zero, a negative exponent).
fn may_fail(op: BinaryOp) -> bool {
    matches!(op, BinaryOp::Divides | BinaryOp::Modulo | BinaryOp::FloorDivide | BinaryOp::Remainder | BinaryOp::Power)
}

/// The scalar type of `e`'s value, where it is simple to tell.
fn scalar_of(e: &SExpr, buffers: &[Buffer]) -> Option<Scalar> {
    Some(match e {
        SExpr::Load(l) => buffers[l.buffer].scalar,
        SExpr::Const(v) => v.scalar(),
        SExpr::Unary(op, _, s) => {
            if op.is_test() {
                Scalar::Bool
            } else {
                *s
            }
        }
        SExpr::Binary(op, _, _, s) => match op.class() {
            strata_ir::BinaryClass::Comparison => Scalar::Bool,
            _ => *s,
        },
        SExpr::Select(_, t, _) => scalar_of(t, buffers)?,
        SExpr::Cast(_, _, to) => *to,
        SExpr::Reduce { scalar, .. } => *scalar,
        _ => return None,
    })
}

/// The work of evaluating `e` once, in arithmetic operations: one per operation and per
/// buffer read, ten per transcendental function, a fold's steps times its body.
pub fn ops(e: &Rc<SExpr>) -> f64 {
    let own = match &**e {
        SExpr::Load(_) | SExpr::Binary(..) | SExpr::Select(..) | SExpr::Cast(..) => 1.0,
        SExpr::Unary(op, _, _) if op.float_only() => 10.0,
        SExpr::Unary(..) => 1.0,
        SExpr::Reduce { vars, init, body, .. } => {
            let steps: f64 = vars.iter().map(|(_, r)| r.len() as f64).product();
            return ops(init) + steps * ops(body);
        }
        _ => 0.0,
    };
    let mut total = own;
    for_each_part(e, &mut |p| {
        if let Part::Expr(x) = p {
            total += ops(x);
        }
    });
    total
}
