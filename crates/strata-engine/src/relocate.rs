//! Relocation: an entry moved to coordinates that start at 0, so that programs differing only
//! in where their intervals lie compile to one native kernel.
//!
//! The ranks of a distributed run hold blocks at different rows of the same dimension: rank 1
//! of a laplacian reads `I[15:33]`, rank 2 `I[31:49]`. Their local programs are translates of
//! each other, but native code bakes intervals in, so each would compile its own kernel.
//! [`relocated`] moves every dimension the entry's parameters name by minus its lowest start
//! among them (`I[15:33]` and `I[31:49]` both become `I[0:18]`), everywhere in the module:
//! every type, every `subset` and `add_dim` interval, every assigned region. Buffers carry no
//! coordinates, so the relocated entry runs on the same arguments and writes the same
//! results, laid out alike; the caller keeps the original types for them.
//!
//! Named dimensions make a program translation-invariant unless an operation reads
//! coordinates as values (`pos`, `get`/`set` indices, neighbor tables, `gather`/`scatter`,
//! sparse coordinates) or places named levels by shape (`pack`, reshapes, affine maps,
//! `dot_general`): an entry that reaches any of those, or any level that is not dense, is left
//! where it is (`broadcast` is moved: it makes positional levels, which combine by extent).
//! The translation is then checked, not assumed: the relocated entry is typed again from its
//! moved parameters, and every one of its values must have the moved type of the original
//! value (a positional level the same extent anywhere).

use std::collections::BTreeMap;

use strata_entity::Handle;
use strata_ir::{DimName, ExprKind, Function, Interval, Module, Op, Statement, Type, TypeArena};

/// An entry moved to coordinates starting at 0, with the module holding it.
#[derive(Debug)]
pub struct Relocated {
    /// The module, its types in [`Module::types`].
    pub module: Module,
    /// The relocated entry.
    pub entry: Handle<Function>,
    /// How far each dimension moved (`I` by −15: rank 1's block starts at 0).
    pub moved: BTreeMap<DimName, i64>,
    /// The entry's own name (the relocated instance's is the verifier's `@name.N`).
    pub name: String,
}

impl Relocated {
    /// The relocated entry lowered, named as the entry it moved: the C names its entry, and a
    /// rank whose block already starts at 0 (not relocated) must compile the same text.
    ///
    /// # Errors
    /// What [`strata_codegen::lower_with`] returns.
    pub fn lower(
        &self,
        options: &strata_codegen::LowerOptions,
    ) -> Result<strata_codegen::KernelProgram, strata_codegen::LowerError> {
        let mut program = strata_codegen::lower_with(&self.module, &self.module.types, self.entry, options)?;
        program.entry = self.name.clone();
        Ok(program)
    }
}

/// `entry` of `module` (verified; `types` its arena) moved to coordinates starting at 0 along
/// every dimension its parameters name, or `None` where it already starts there or reads
/// coordinates (see the module documentation).
pub fn relocated(module: &Module, types: &TypeArena, entry: Handle<Function>) -> Option<Relocated> {
    let reached = module.reachable(entry);
    if !reached.iter().all(|&h| module.functions[h].exprs.iter().all(|(_, e)| translation_invariant(&e.kind))) {
        return None;
    }
    let f = &module.functions[entry];
    let mut lowest: BTreeMap<DimName, i64> = BTreeMap::new();
    for &p in &f.params {
        let Type::Tensor(t) = &types[f.exprs[p].ty] else { continue };
        for l in &t.levels {
            let low = lowest.entry(l.name.clone()).or_insert(l.interval.start);
            *low = (*low).min(l.interval.start);
        }
    }
    let moved: BTreeMap<DimName, i64> =
        lowest.into_iter().filter(|&(_, low)| low != 0).map(|(d, low)| (d, low.checked_neg().unwrap_or(0))).collect();
    if moved.is_empty() {
        return None;
    }
    let mut mover = Mover { types: types.clone(), moved: &moved, done: BTreeMap::new() };
    let mut m = module.clone();
    for h in reached {
        mover.move_function(&mut m.functions[h])?;
    }
    let params: Vec<Handle<Type>> = m.functions[entry].params.iter().map(|&p| m.functions[entry].exprs[p].ty).collect();
    let (out, at) = strata_verify::specialize(&m, &mover.types, entry, &params).ok()?;
    // Typed again from the moved parameters, every value has the moved type of its original.
    let (g, moved_f) = (&out.functions[at], &m.functions[entry]);
    if g.exprs.len() != moved_f.exprs.len() {
        return None;
    }
    let agree = |a: Handle<Type>, b: Handle<Type>| agrees(&out.types, a, &mover.types, b);
    let same = g.exprs.iter().zip(moved_f.exprs.iter()).all(|((_, a), (_, b))| agree(a.ty, b.ty));
    let results =
        g.results.len() == moved_f.results.len() && g.results.iter().zip(&moved_f.results).all(|(&a, &b)| agree(a, b));
    let name = module.functions[entry].name.clone();
    (same && results).then_some(Relocated { module: out, entry: at, moved, name })
}

/// Whether type `a` (of arena `ta`) is type `b` (of `tb`), but that a positional level (`_0`,
/// …: combined by extent, not by interval) may lie elsewhere with the same extent (a
/// `broadcast` makes its levels at 0 wherever its operands lie).
fn agrees(ta: &TypeArena, a: Handle<Type>, tb: &TypeArena, b: Handle<Type>) -> bool {
    match (&ta[a], &tb[b]) {
        (Type::Scalar(x), Type::Scalar(y)) => x == y,
        (Type::Tuple(xs), Type::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(&x, &y)| agrees(ta, x, tb, y))
        }
        (Type::Tensor(x), Type::Tensor(y)) => {
            x.placement == y.placement
                && agrees(ta, x.element, tb, y.element)
                && x.levels.len() == y.levels.len()
                && x.levels.iter().zip(&y.levels).all(|(l, m)| {
                    let placed = l.interval == m.interval
                        || (l.name.position().is_some() && l.interval.len() == m.interval.len());
                    l.name == m.name && l.format == m.format && placed
                })
        }
        (Type::Function { params: xp, result: xr }, Type::Function { params: yp, result: yr }) => {
            xp.len() == yp.len() && xp.iter().zip(yp).all(|(&x, &y)| agrees(ta, x, tb, y)) && agrees(ta, *xr, tb, *yr)
        }
        _ => false,
    }
}

/// Whether `kind` means the same after its operands and intervals move (it reads no coordinate
/// as a value and makes no interval from a shape): the operations [`relocated`] moves.
fn translation_invariant(kind: &ExprKind) -> bool {
    let ExprKind::Op(op) = kind else { return true };
    match op {
        Op::Constant { value: _ }
        | Op::Unary { op: _, arg: _ }
        | Op::Binary { op: _, lhs: _, rhs: _ }
        | Op::Select { cond: _, on_true: _, on_false: _ }
        | Op::Cast { arg: _, to: _ }
        | Op::MakeTuple { fields: _ }
        | Op::TupleGet { tuple: _, index: _ }
        | Op::Call { func: _, args: _, result: _ }
        | Op::CartesianShift { arg: _, dim: _, offset: _ }
        | Op::Scan { func: _, args: _, dim: _, forward: _, init: _ }
        | Op::Subset { arg: _, domain: _ }
        | Op::Concat { args: _, dim: _, mode: _ }
        | Op::DropDim { arg: _, dim: _ }
        | Op::AddDim { arg: _, dim: _, interval: _ }
        | Op::MapReduce { func: _, args: _, init: _, subscripts: _ }
        | Op::Map { kind: _, func: _, args: _ }
        // Positional levels from a shape, combined with others by extent.
        | Op::Broadcast { arg: _, shape: _ }
        | Op::BroadcastInDim { arg: _, shape: _, dims: _ }
        // On one process (a rank's local program), a copy.
        | Op::Collect { arg: _ } => true,
        _ => false,
    }
}

/// Moves types, intervals and regions by [`Relocated::moved`].
struct Mover<'a> {
    types: TypeArena,
    moved: &'a BTreeMap<DimName, i64>,
    /// Types already moved.
    done: BTreeMap<Handle<Type>, Handle<Type>>,
}

impl Mover<'_> {
    /// `iv` of dimension `dim`, moved (`None` if a bound would leave the 64-bit range).
    fn interval(&self, dim: &DimName, iv: Interval) -> Option<Interval> {
        match self.moved.get(dim) {
            Some(&by) => iv.shifted(by),
            None => Some(iv),
        }
    }

    /// `ty` with every level moved, element and tuple types included; `None` for a level that
    /// is not dense (sparse and ragged storage holds coordinates) or a bound out of range.
    fn ty(&mut self, ty: Handle<Type>) -> Option<Handle<Type>> {
        if let Some(&t) = self.done.get(&ty) {
            return Some(t);
        }
        let moved = match self.types[ty].clone() {
            Type::Scalar(_) => return Some(ty),
            Type::Tuple(fields) => Type::Tuple(fields.into_iter().map(|t| self.ty(t)).collect::<Option<_>>()?),
            Type::Function { params, result } => Type::Function {
                params: params.into_iter().map(|t| self.ty(t)).collect::<Option<_>>()?,
                result: self.ty(result)?,
            },
            Type::Tensor(mut t) => {
                t.element = self.ty(t.element)?;
                for l in &mut t.levels {
                    if !l.format.is_dense_like() {
                        return None;
                    }
                    l.interval = self.interval(&l.name, l.interval)?;
                }
                Type::Tensor(t)
            }
        };
        let h = self.types.insert(moved);
        self.done.insert(ty, h);
        Some(h)
    }

    /// `domain` moved.
    fn domain(&self, domain: &mut [(DimName, Interval)]) -> Option<()> {
        for (d, iv) in domain {
            *iv = self.interval(d, *iv)?;
        }
        Some(())
    }

    /// Every type, interval and region of `f` moved.
    fn move_function(&mut self, f: &mut Function) -> Option<()> {
        for r in &mut f.results {
            *r = self.ty(*r)?;
        }
        let values: Vec<_> = f.exprs.iter().map(|(v, _)| v).collect();
        for v in values {
            let e = &mut f.exprs[v];
            e.ty = self.ty(e.ty)?;
            match &mut e.kind {
                ExprKind::Op(Op::Subset { arg: _, domain }) => self.domain(domain)?,
                ExprKind::Op(Op::AddDim { arg: _, dim, interval }) => *interval = self.interval(dim, *interval)?,
                _ => {}
            }
        }
        let statements: Vec<_> = f.body.iter().map(|(s, _)| s).collect();
        for s in statements {
            if let Statement::Assign { target: _, domain: Some(domain), value: _ } = &mut f.body[s] {
                self.domain(domain)?;
            }
        }
        Some(())
    }
}
