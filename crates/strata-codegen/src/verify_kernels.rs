//! The loop-IR verifier: checks a [`crate::kernel::KernelProgram`] between lowering and C, as Cranelift's
//! verifier checks its IR after every pass (`verify_if`).
//!
//! What it guarantees, for every expression a kernel evaluates (stores, scan updates, scattered
//! and staged values, a Gustavson workspace's fold):
//! - every buffer a load, a table entry or a store names exists and is indexed by one
//!   coordinate per level;
//! - every loop variable a coordinate reads is bound: a domain level, the scan's or compaction's
//!   sequential loop, a window's plane variables, or an enclosing fold's variable; no fold binds
//!   a variable already bound around it (a shadowed name is how a nested neighbor reduction
//!   once read the outer fold's counter), and every accumulator read belongs to an enclosing
//!   fold or a state register;
//! - a computed coordinate's value has an integer type;
//! - every read of a buffer holding elements is in bounds *by construction*: a coordinate
//!   `v + o` ranges over `range(v) + o`, which must lie in the level's interval (an empty range
//!   reads nothing); a constant must lie in it; a table entry or a computed coordinate is
//!   checked at run time against its `source` interval, which must lie in the level's interval.
//!
//! Storage arrays (run-time lengths) are read through the sparse-read machinery, never by a
//! [`Load`], so they are not checked here; the run validates them before a kernel starts
//! (`strata_runtime::storage`).

use std::collections::HashSet;
use std::rc::Rc;

use strata_ir::{DimName, Interval, Scalar};

use crate::kernel::{Buffer, Kernel, KernelKind, KernelProgram, Role, Scatter};
use crate::sym::{show, Coord, Load, SExpr};

/// What a condition bounds: a loop variable, or a computed coordinate's value (an affine map's
/// `d0 + d1` reading a concatenation).
#[derive(Clone, Debug, PartialEq)]
enum Subject {
    Var(DimName),
    Value(Rc<SExpr>),
}

/// For a condition `v + o < k` (or `<=`, `>`, `>=`, either side) on a bound loop variable or a
/// computed coordinate's value: its range where the condition holds and where it does not.
fn narrowed(c: &SExpr, scope: &Scope) -> Option<((Subject, Interval), (Subject, Interval))> {
    use strata_ir::BinaryOp::{Greater, GreaterEqual, Less, LessEqual};
    let SExpr::Binary(op, a, b, _) = c else { return None };
    let constant = |x: &SExpr| match x {
        SExpr::Const(v) => i64::try_from(v.as_i128()).ok(),
        SExpr::Index(Coord::Const(k)) => Some(*k),
        _ => None,
    };
    let subject = |x: &SExpr| match x {
        SExpr::Index(Coord::Var { dim, offset }) => Some((Subject::Var(dim.clone()), *offset)),
        SExpr::Index(Coord::Computed { value, offset, .. }) => Some((Subject::Value(value.clone()), *offset)),
        _ => None,
    };
    // Normalized to `v + o  op  k`.
    let (op, (v, o), k) = match (subject(a), constant(b), constant(a), subject(b)) {
        (Some(vo), Some(k), _, _) => (*op, vo, k),
        (_, _, Some(k), Some(vo)) => match op {
            Less => (Greater, vo, k),
            LessEqual => (GreaterEqual, vo, k),
            Greater => (Less, vo, k),
            GreaterEqual => (LessEqual, vo, k),
            _ => return None,
        },
        _ => return None,
    };
    let range = match &v {
        Subject::Var(d) => scope.vars.iter().rev().find(|(x, _)| x == d)?.1,
        Subject::Value(value) => {
            let source = [a, b].into_iter().find_map(|x| match &**x {
                SExpr::Index(Coord::Computed { source, .. }) => Some(*source),
                _ => None,
            })?;
            scope.value_range(value, source)
        }
    };
    // The first value of `v` for which `v + o < k` fails, for each form.
    let split = match op {
        Less => k.checked_sub(o)?,
        LessEqual => k.checked_sub(o)?.checked_add(1)?,
        Greater => k.checked_sub(o)?.checked_add(1)?,
        GreaterEqual => k.checked_sub(o)?,
        _ => return None,
    };
    let below = Interval::new(range.start, split.clamp(range.start, range.stop.max(range.start)));
    let above = Interval::new(split.clamp(range.start, range.stop.max(range.start)), range.stop);
    Some(match op {
        Less | LessEqual => ((v.clone(), below), (v, above)),
        _ => ((v.clone(), above), (v, below)),
    })
}

/// A broken invariant of the loop IR: a bug in lowering or in a kernel pass, never the user's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "after `{pass}`{}, kernel {kernel} ({comment}): {message}",
    if *.or_earlier { " or a pass before it ($STRATA_VERIFY_EACH=1 names which)" } else { "" }
)]
pub struct KernelVerifyError {
    /// The pass after which the check failed.
    pub pass: String,
    /// The check ran after several passes (a release build's pipeline), so an earlier one may
    /// have broken the program.
    pub or_earlier: bool,
    /// The kernel's number in the program.
    pub kernel: usize,
    /// The kernel's comment (what it computes).
    pub comment: String,
    /// What is wrong, with the offending expression.
    pub message: String,
}

/// Checks every kernel of a program (its buffers and kernels, see the module docs) after the
/// pass named `after`; the first violation found.
pub fn verify_kernels(program: &KernelProgram, after: &str) -> Result<(), KernelVerifyError> {
    for (k, kernel) in program.kernels.iter().enumerate() {
        verify_kernel(&program.buffers, kernel)
            .and_then(|()| crate::verify_sets::verify_sets(program, kernel))
            .map_err(|message| KernelVerifyError {
                pass: after.to_string(),
                or_earlier: false,
                kernel: k,
                comment: kernel.comment.clone(),
                message,
            })?;
    }
    Ok(())
}

/// The variables bound at a point, innermost last, and the accumulators readable there.
struct Scope {
    vars: Vec<(DimName, Interval)>,
    accs: Vec<u32>,
    /// Ranges the enclosing `select` conditions prove for computed coordinates' values,
    /// innermost last.
    facts: Vec<(Rc<SExpr>, Interval)>,
}

impl Scope {
    /// The range of a computed coordinate's value: its `source` interval (checked at run
    /// time), narrowed by what enclosing conditions prove about the same value.
    fn value_range(&self, value: &Rc<SExpr>, source: Interval) -> Interval {
        self.facts.iter().filter(|(v, _)| **v == **value).fold(source, |r, (_, f)| r.intersect(*f))
    }
}

fn verify_kernel(buffers: &[Buffer], kernel: &Kernel) -> Result<(), String> {
    let mut outer: Vec<(DimName, Interval)> = kernel.domain.iter().map(|l| (l.name.clone(), l.interval)).collect();
    let mut accs = Vec::new();
    let scans = kernel.scan().into_iter().chain(kernel.chain().iter().map(|st| &st.scan));
    for sc in scans {
        if !outer.iter().any(|(v, _)| v == &sc.dim.name) {
            outer.push((sc.dim.name.clone(), sc.dim.interval));
        }
        accs.extend(sc.states.iter().map(|(id, _, _)| *id));
    }
    if let Some(Scatter::Compact { dim, .. }) = kernel.scatter() {
        outer.push((dim.name.clone(), dim.interval));
    }
    let distinct: HashSet<&DimName> = outer.iter().map(|(v, _)| v).collect();
    if distinct.len() != outer.len() {
        return Err("a loop variable is bound twice by the kernel's loops".into());
    }
    let mut checker = Checker { buffers, seen: HashSet::new() };
    let check = |checker: &mut Checker, vars: Vec<(DimName, Interval)>, e: &Rc<SExpr>| {
        let mut scope = Scope { vars, accs: accs.clone(), facts: Vec::new() };
        checker.expr(e, &mut scope)
    };
    // Stores write at the domain's own variables.
    for st in kernel.all_stores() {
        let buffer = checker.buffer(st.buffer)?;
        if matches!(buffer.role, Role::Elements | Role::Presence) && kernel.compressed().is_none() {
            checker.store_in_bounds(st.buffer, kernel, &outer)?;
        }
        check(&mut checker, outer.clone(), &st.value)?;
    }
    for sc in kernel.scan().into_iter().chain(kernel.chain().iter().map(|st| &st.scan)) {
        for (_, _, init) in &sc.states {
            // Initial values are evaluated before the sequential loop.
            let before: Vec<_> = outer.iter().filter(|(v, _)| v != &sc.dim.name).cloned().collect();
            check(&mut checker, before, init)?;
        }
        for u in &sc.updates {
            check(&mut checker, outer.clone(), u)?;
        }
    }
    if let Some(s) = kernel.scatter() {
        for e in s.exprs() {
            check(&mut checker, outer.clone(), e)?;
        }
    }
    for w in kernel.windows() {
        // A window's value is computed over its buffer's (widened) levels.
        let levels = &checker.buffer(w.buffer)?.levels;
        let vars = levels.iter().map(|l| (l.name.clone(), l.interval)).collect();
        check(&mut checker, vars, &w.value)?;
    }
    if let Some(ws) = kernel.compressed().and_then(|c| c.workspace.as_ref()) {
        check(&mut checker, outer.clone(), &ws.fold)?;
    }
    if let KernelKind::Gemm(mm) = &kernel.kind {
        for e in mm.init.iter().chain(&mm.epilogue) {
            check(&mut checker, outer.clone(), e)?;
        }
    }
    Ok(())
}

struct Checker<'p> {
    buffers: &'p [Buffer],
    /// Sub-expressions already checked in a scope of the same depth and innermost binder
    /// (shared sub-trees are visited once, so a value reused many times costs no more).
    seen: HashSet<(usize, usize, Option<DimName>)>,
}

impl<'p> Checker<'p> {
    fn buffer(&self, b: usize) -> Result<&'p Buffer, String> {
        self.buffers.get(b).ok_or_else(|| format!("buffer b{b} does not exist"))
    }

    fn store_in_bounds(&self, b: usize, kernel: &Kernel, outer: &[(DimName, Interval)]) -> Result<(), String> {
        let buffer = self.buffer(b)?;
        for level in &buffer.levels {
            let Some((_, range)) = outer.iter().find(|(v, _)| v == &level.name) else {
                return Err(format!("the store into b{b} has no loop over its level `{}`", level.name));
            };
            if !range.is_empty() && !level.interval.contains(*range) && kernel.scatter().is_none() {
                return Err(format!(
                    "the store into b{b} writes `{}` over {range}, outside the buffer's {}",
                    level.name, level.interval
                ));
            }
        }
        Ok(())
    }

    fn expr(&mut self, e: &Rc<SExpr>, scope: &mut Scope) -> Result<(), String> {
        let key = (
            Rc::as_ptr(e) as usize,
            scope.vars.len() + (scope.facts.len() << 32),
            scope.vars.last().map(|(v, _)| v.clone()),
        );
        if !self.seen.insert(key) {
            return Ok(());
        }
        match &**e {
            SExpr::Const(_) | SExpr::Absent(_) => Ok(()),
            SExpr::Acc(id) => {
                if scope.accs.contains(id) {
                    Ok(())
                } else {
                    Err(format!("accumulator acc{id} is read outside its fold"))
                }
            }
            SExpr::Load(l) => self.load(l, scope),
            SExpr::Sparse(r) => r.coords.iter().try_for_each(|c| self.coord(c, scope)),
            SExpr::Index(c) => self.coord(c, scope),
            SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) | SExpr::Present(a) => self.expr(a, scope),
            SExpr::Binary(_, a, b, _) => {
                self.expr(a, scope)?;
                self.expr(b, scope)
            }
            SExpr::Select(c, t, f) => {
                self.expr(c, scope)?;
                // Only the chosen branch is evaluated (C's `?:`): a condition bounding a loop
                // variable (a concatenation's pieces) narrows its range in each branch.
                let (on_true, on_false) = narrowed(c, scope).unzip();
                self.branch(t, scope, on_true)?;
                self.branch(f, scope, on_false)
            }
            SExpr::Guard { table, value, .. } => {
                self.load(table, scope)?;
                self.expr(value, scope)
            }
            SExpr::Reduce { id, vars, init, body, .. } => {
                self.expr(init, scope)?;
                for (v, _) in vars {
                    if scope.vars.iter().any(|(b, _)| b == v) {
                        return Err(format!("fold acc{id} binds `{v}`, already bound around it: {}", show(e)));
                    }
                }
                let depth = scope.vars.len();
                scope.vars.extend(vars.iter().cloned());
                scope.accs.push(*id);
                let r = self.expr(body, scope);
                scope.vars.truncate(depth);
                scope.accs.pop();
                r
            }
        }
    }

    fn branch(&mut self, e: &Rc<SExpr>, scope: &mut Scope, narrow: Option<(Subject, Interval)>) -> Result<(), String> {
        let (depth, facts) = (scope.vars.len(), scope.facts.len());
        match narrow {
            Some((Subject::Var(v), range)) => scope.vars.push((v, range)),
            Some((Subject::Value(value), range)) => scope.facts.push((value, range)),
            None => {}
        }
        let r = self.expr(e, scope);
        scope.vars.truncate(depth);
        scope.facts.truncate(facts);
        r
    }

    fn load(&mut self, l: &Load, scope: &mut Scope) -> Result<(), String> {
        let buffer = self.buffer(l.buffer)?;
        if buffer.levels.len() != l.coords.len() {
            return Err(format!(
                "b{} has {} levels but is read with {} coordinates",
                l.buffer,
                buffer.levels.len(),
                l.coords.len()
            ));
        }
        // Windows are widened to what their readers reach; storage arrays have run-time lengths.
        let checked = matches!(buffer.role, Role::Elements | Role::Presence);
        for (c, level) in l.coords.iter().zip(&buffer.levels) {
            self.coord(c, scope)?;
            if !checked {
                continue;
            }
            let (range, offset) = match c {
                Coord::Var { dim, offset } => {
                    (scope.vars.iter().rev().find(|(v, _)| v == dim).expect("checked bound").1, *offset)
                }
                Coord::Const(k) => (Interval::new(*k, k.saturating_add(1)), 0),
                Coord::Table { source, offset, .. } => (*source, *offset),
                Coord::Computed { value, source, offset } => (scope.value_range(value, *source), *offset),
            };
            if !range.is_empty() {
                let Some(reach) = range.shifted(offset) else {
                    return Err(format!(
                        "b{} is read at `{}` {range} + {offset}, which overflows",
                        l.buffer, level.name
                    ));
                };
                if !level.interval.contains(reach) {
                    return Err(format!(
                        "b{} (`%{}`) is read at `{}` over {reach}, outside its {}{}",
                        l.buffer, buffer.name, level.name, level.name, level.interval
                    ));
                }
            }
        }
        Ok(())
    }

    fn coord(&mut self, c: &Coord, scope: &mut Scope) -> Result<(), String> {
        match c {
            Coord::Var { dim, .. } => {
                if scope.vars.iter().any(|(v, _)| v == dim) {
                    Ok(())
                } else {
                    Err(format!("loop variable `{dim}` is read where no loop binds it"))
                }
            }
            Coord::Const(_) => Ok(()),
            Coord::Table { table, .. } => self.load(table, scope),
            Coord::Computed { value, .. } => {
                // An index computed from data or by index arithmetic is an integer.
                if let Some(t) = scalar_of(value).filter(|t| !t.is_integer() && *t != Scalar::Index) {
                    return Err(format!("a computed coordinate has type `{t}`, not an integer: {}", show(value)));
                }
                self.expr(value, scope)
            }
        }
    }
}

/// The scalar type of `e` where its form says it (`None` for a sparse read, whose type is its
/// tensor's, and an accumulator's, which is its fold's).
fn scalar_of(e: &SExpr) -> Option<Scalar> {
    use strata_ir::BinaryClass;
    Some(match e {
        SExpr::Const(v) => v.scalar(),
        SExpr::Absent(s) | SExpr::Cast(_, _, s) | SExpr::Reduce { scalar: s, .. } => *s,
        SExpr::Index(_) => Scalar::Index,
        SExpr::Unary(op, _, s) => {
            if op.is_test() {
                Scalar::Bool
            } else {
                *s
            }
        }
        SExpr::Binary(op, _, _, s) => {
            if op.class() == BinaryClass::Comparison {
                Scalar::Bool
            } else {
                *s
            }
        }
        SExpr::Present(_) => Scalar::Bool,
        SExpr::Select(_, t, _) => return scalar_of(t),
        SExpr::Guard { value, .. } => return scalar_of(value),
        SExpr::Load(_) | SExpr::Sparse(_) | SExpr::Acc(_) => return None,
    })
}
