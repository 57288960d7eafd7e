//! An entry split at its collectives.
//!
//! A reduction over a block level — a `map_reduce` whose contracted index runs over a block
//! level of an operand — needs every rank's partial result before anything that reads it can
//! run: it is a *collective point*. [`split`] cuts the entry there. Stage `k` is a function of
//! the entry's inputs and the results of the collectives before it; it returns the `k`-th
//! collective's value, which each rank computes over the rows it owns (its *partial*,
//! [`crate::plan::Plan::local_module`]) and the ranks then combine ([`Collective`]). The last
//! stage is the entry itself with every collective's value a parameter. Each stage keeps only
//! the statements its result depends on.
//!
//! Combining: the payload must fold with an associative, commutative operation `⊕` as its
//! last step (`acc ⊕ term`, where `acc` is used nowhere else): sums, products, minima, maxima,
//! logical and bitwise and/or/xor. Rank 0 folds with the `map_reduce`'s own initial value,
//! every other rank from `⊕`'s identity, and the partials are combined in rank order,
//! `((p₀ ⊕ p₁) ⊕ p₂) ⊕ …`, on rank 0 and broadcast — every rank gets the same bits, and the
//! result differs from one process only by that reassociation of a floating-point sum.

use std::collections::HashSet;

use strata_entity::{Arena, Handle};
use strata_ir::{
    BinaryOp, ExprKind, Function, FunctionKind, Item, Literal, Module, Op, ParamMode, Scalar, Statement, TypeArena,
    Value,
};

use crate::plan::{block_level_named, Plan, PlanError};

/// How the ranks' parts of a collective's value come together.
#[derive(Clone, Debug, PartialEq)]
pub enum Collective {
    /// A reduction: the ranks' partials combine with `combine`.
    Reduce {
        /// The reduced value's name: a parameter of the later stages.
        name: String,
        /// The payload's folding operation (its identity, where ranks but 0 start, is the
        /// plan's [`crate::plan::PartialStart::Identity`]).
        combine: BinaryOp,
    },
    /// A scan along a block level: the ranks holding rows scan theirs one after another in
    /// the scan's direction, each starting from the state the one before ended with (the
    /// *carry*, the stage's parameter `carry`). The result stays distributed.
    Carry {
        /// The scan's name: a (distributed) parameter of the later stages.
        name: String,
        /// The scanned block level.
        dim: strata_ir::DimName,
        /// The scan's direction.
        forward: bool,
        /// The name of the stage's carry parameter.
        carry: String,
    },
    /// A `collect` read inside the program: the stage returns the collected value, each rank
    /// its owned block, and every rank then holds the whole value (gathered on rank 0 and
    /// broadcast). The later stages compute on it replicated.
    Gather {
        /// The collected value's name: a (replicated) parameter of the later stages.
        name: String,
        /// The collected value's type (the level dense, no team).
        ty: strata_runtime::ValueType,
    },
}

impl Collective {
    /// The name of the value the collective computes.
    pub fn name(&self) -> &str {
        match self {
            Collective::Reduce { name, .. } | Collective::Carry { name, .. } | Collective::Gather { name, .. } => name,
        }
    }
}

/// The block level a `scan` runs along, if it is one.
pub fn scanned_block(func: &Function, types: &TypeArena, op: &Op, v: Value) -> Option<strata_ir::DimName> {
    let Op::Scan { dim, .. } = op else { return None };
    let strata_ir::Type::Tensor(t) = &types[func.exprs[v].ty] else { return None };
    t.level(dim).filter(|l| l.format == strata_ir::LevelFormat::Block).map(|l| l.name.clone())
}

/// One stage of a split entry.
#[derive(Clone, Debug)]
pub struct Stage {
    /// The module with the stage's function appended.
    pub module: Module,
    /// The stage's function.
    pub entry: Handle<Function>,
    /// How its result combines across ranks (every stage but the last).
    pub collective: Option<Collective>,
}

/// The operands of `op` a `map_reduce` contracts over a block level: `(operand position,
/// level name, einsum letter)`.
pub fn contracted_blocks(func: &Function, types: &TypeArena, op: &Op) -> Vec<(usize, strata_ir::DimName, char)> {
    let Op::MapReduce { args, subscripts, .. } = op else { return Vec::new() };
    let mut out = Vec::new();
    for (k, (a, letters)) in args.iter().zip(&subscripts.inputs).enumerate() {
        for (pos, c) in letters.iter().enumerate() {
            if subscripts.output.contains(c) {
                continue;
            }
            if let Some(name) = block_level_named(types, func.exprs[*a].ty, pos) {
                out.push((k, name, *c));
            }
        }
    }
    out
}

/// Whether every operand of a `map_reduce` that reads a contracted block dimension (its letter)
/// has it as its block level: each rank then folds the rows it owns of every operand.
fn contracted_everywhere_as_block(func: &Function, types: &TypeArena, op: &Op) -> bool {
    let Op::MapReduce { args, subscripts, .. } = op else { return true };
    let letters: Vec<char> = contracted_blocks(func, types, op).into_iter().map(|(_, _, c)| c).collect();
    args.iter().zip(&subscripts.inputs).all(|(a, ls)| {
        ls.iter()
            .enumerate()
            .all(|(pos, c)| !letters.contains(c) || block_level_named(types, func.exprs[*a].ty, pos).is_some())
    })
}

/// `func`'s folding operation `⊕` (its result is `acc ⊕ term` or `term ⊕ acc`, `acc` read
/// nowhere else) and `⊕`'s identity on `scalar`.
pub fn folding_op(module: &Module, func: Handle<Function>, scalar: Scalar) -> Option<(BinaryOp, Literal)> {
    let f = &module.functions[func];
    let acc = *f.params.first()?;
    let ret = f.body.iter().find_map(|(_, s)| match s {
        Statement::Return(r) if r.len() == 1 => Some(r[0]),
        _ => None,
    })?;
    let ExprKind::Op(Op::Binary { op, lhs, rhs }) = &f.exprs[ret].kind else { return None };
    if (*lhs == acc) == (*rhs == acc) {
        return None;
    }
    let uses = f
        .exprs
        .iter()
        .filter_map(|(_, e)| match &e.kind {
            ExprKind::Op(o) => Some(o.operands().into_iter().filter(|v| *v == acc).count()),
            _ => None,
        })
        .sum::<usize>();
    if uses != 1 {
        return None;
    }
    let identity = match strata_ir::algebra::identity(*op, scalar)? {
        strata_ir::algebra::Constant::Float(x) => Literal::Float(x),
        strata_ir::algebra::Constant::Int(i) => Literal::Int(i64::try_from(i).ok()?),
        strata_ir::algebra::Constant::Bool(b) => Literal::Bool(b),
    };
    Some((*op, identity))
}

/// The collective points of `entry`, in order: its `map_reduce`s over a block level, its scans
/// along one, and the `collect`s of block values that it reads or returns (a `collect` only
/// written to an output is each rank writing its block: no collective).
fn collective_points(module: &Module, types: &TypeArena, entry: Handle<Function>) -> Vec<Value> {
    let f = &module.functions[entry];
    f.body
        .iter()
        .filter_map(|(_, s)| match s {
            Statement::Let(v) => match &f.exprs[*v].kind {
                ExprKind::Op(op)
                    if !contracted_blocks(f, types, op).is_empty()
                        || scanned_block(f, types, op, *v).is_some()
                        || gathers(f, types, *v) =>
                {
                    Some(*v)
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether `v` is a `collect` of a block value that `f` reads or returns.
fn gathers(f: &Function, types: &TypeArena, v: Value) -> bool {
    let ExprKind::Op(Op::Collect { arg }) = &f.exprs[v].kind else { return false };
    let read = f.exprs.iter().any(|(_, e)| matches!(&e.kind, ExprKind::Op(op) if op.operands().contains(&v)));
    let returned = f.body.iter().any(|(_, s)| matches!(s, Statement::Return(r) if r.contains(&v)));
    crate::plan::block_level(types, f.exprs[*arg].ty).is_some() && (read || returned)
}

/// The values `f`'s results are: what it returns and writes to its outputs.
pub(crate) fn result_values(f: &Function) -> Vec<Value> {
    f.body
        .iter()
        .flat_map(|(_, s)| match s {
            Statement::Let(_) => Vec::new(),
            Statement::Assign { value, .. } => vec![*value],
            Statement::Return(values) => values.clone(),
        })
        .collect()
}

/// The values `roots` depend on in `f` (themselves included), stopping at `cut`.
pub(crate) fn dependencies(f: &Function, roots: &[Value], cut: &HashSet<Value>) -> HashSet<Value> {
    let mut seen: HashSet<Value> = HashSet::new();
    let mut stack: Vec<Value> = roots.to_vec();
    while let Some(v) = stack.pop() {
        if !seen.insert(v) || cut.contains(&v) {
            continue;
        }
        if let ExprKind::Op(op) = &f.exprs[v].kind {
            // Operands include a tensor `init`.
            stack.extend(op.operands());
        }
    }
    seen
}

/// `entry` split at its collectives (one stage, the entry itself, when it has none).
///
/// # Errors
/// A collective whose payload has no associative folding operation.
pub fn split(module: &Module, types: &TypeArena, entry: Handle<Function>) -> Result<Vec<Stage>, PlanError> {
    let points = collective_points(module, types, entry);
    if points.is_empty() {
        return Ok(vec![Stage { module: module.clone(), entry, collective: None }]);
    }
    let f = &module.functions[entry];
    let mut stages = Vec::new();
    for k in 0..=points.len() {
        let last = k == points.len();
        let earlier: HashSet<Value> = points[..k].iter().copied().collect();
        let mut m = module.clone();
        let mut g = f.clone();
        g.name = if last { format!("{}.final", f.name) } else { format!("{}.stage{k}", f.name) };
        // Earlier collectives' values become parameters.
        for &c in &points[..k] {
            g.exprs[c].kind = ExprKind::Param(ParamMode::In);
            g.params.push(c);
        }
        let collective = if last {
            None
        } else if let ExprKind::Op(Op::Scan { dim, forward, .. }) = &f.exprs[points[k]].kind {
            // The carry: a parameter of the state's type (the scan's without `dim`).
            let c = points[k];
            let strata_ir::Type::Tensor(t) = &types[f.exprs[c].ty] else {
                unreachable!("a scan along a block level is a tensor")
            };
            let mut state = t.clone();
            state.levels.retain(|l| &l.name != dim);
            let ty = m.types.insert(strata_ir::Type::Tensor(state));
            let carry = format!("{}.carry", f.exprs[c].name);
            let span = *f.exprs.meta(c);
            let p =
                g.exprs.append(strata_ir::Expr { name: carry.clone(), ty, kind: ExprKind::Param(ParamMode::In) }, span);
            // The last parameter: the plan's carry ([`crate::plan::PartialStart::Carry`]).
            g.params.push(p);
            Some(Collective::Carry { name: f.exprs[c].name.clone(), dim: dim.clone(), forward: *forward, carry })
        } else if gathers(f, types, points[k]) {
            let c = points[k];
            let ty = strata_runtime::ValueType::from_ir(types, f.exprs[c].ty);
            Some(Collective::Gather { name: f.exprs[c].name.clone(), ty })
        } else {
            let c = points[k];
            let ExprKind::Op(op @ Op::MapReduce { func, .. }) = &f.exprs[c].kind else { unreachable!("a map_reduce") };
            let scalar = strata_ir::element_scalar(types, f.exprs[c].ty).unwrap_or(Scalar::F64);
            let (combine, _) = folding_op(module, *func, scalar).ok_or_else(|| PlanError::Unsupported {
                op: op.name().to_string(),
                name: f.exprs[c].name.clone(),
                func: f.name.clone(),
                hint: "a reduction over a block level combines the ranks' partials, so its payload must end in \
                       `acc ⊕ term` with ⊕ one of plus, multiplies, minimum, maximum, and, or, xor, bit_and, \
                       bit_or, bit_xor",
            })?;
            if !contracted_everywhere_as_block(f, types, op) {
                return Err(PlanError::Unsupported {
                    op: op.name().to_string(),
                    name: f.exprs[c].name.clone(),
                    func: f.name.clone(),
                    hint: "each rank folds its own rows of a contracted block level, so every operand that has that \
                           dimension must be distributed along it (`block`): distribute the operand holding it whole \
                           along it, or `collect` the distributed one (a matrix product of two row-distributed \
                           matrices is not distributed yet)",
                });
            }
            Some(Collective::Reduce { name: f.exprs[c].name.clone(), combine })
        };
        // What the stage returns: a collective's value; a gather's operand (each rank's block).
        let returned = points.get(k).map(|&c| match &f.exprs[c].kind {
            ExprKind::Op(Op::Collect { arg }) => *arg,
            _ => c,
        });
        // The statements the stage's result depends on.
        let roots: Vec<Value> = returned.map_or_else(|| result_values(f), |r| vec![r]);
        let live = dependencies(&g, &roots, &earlier);
        let mut body = Arena::new();
        for (s, stmt) in f.body.iter() {
            let keep = match stmt {
                Statement::Let(v) => live.contains(v) && !earlier.contains(v),
                Statement::Assign { .. } | Statement::Return(_) => last,
            };
            if keep {
                body.append(stmt.clone(), f.body.meta(s).clone());
            }
        }
        if let Some(returned) = returned {
            let anchor = f.body.iter().last().map(|(s, _)| f.body.meta(s).clone()).expect("a body");
            body.append(Statement::Return(vec![returned]), anchor);
            g.kind = FunctionKind::Func;
            g.params.retain(|p| g.exprs[*p].kind != ExprKind::Param(ParamMode::Out));
            g.results = vec![f.exprs[returned].ty];
        }
        g.body = body;
        let meta = module.functions.meta(entry).clone();
        let h = m.functions.append(g, meta);
        m.items.push(Item::Function(h));
        stages.push(Stage { module: m, entry: h, collective });
    }
    Ok(stages)
}

/// A stage with its verified types and its plan on a number of ranks.
#[derive(Clone, Debug)]
pub struct PlannedStage {
    /// The stage.
    pub stage: Stage,
    /// Its module's types, as the verifier extended them.
    pub types: TypeArena,
    /// Its distribution.
    pub plan: Plan,
    /// This process's rank and its local program, made on the first run: a rank's program
    /// does not change between runs of the stage (a time loop specializes it once).
    pub(crate) local: std::sync::OnceLock<(usize, LocalProgram)>,
    /// What the unstructured inspector found on the last run (reused while the tables are the
    /// same).
    pub(crate) inspected: crate::job::InspectorCache,
    /// What the caller keeps with this process's local program ([`crate::job::Memo`]).
    pub(crate) memo: crate::job::Memo,
}

/// A rank's local program and its entry, or why it could not be made.
pub(crate) type LocalProgram = Result<(Module, Handle<Function>), PlanError>;

impl PlannedStage {
    /// `rank`'s local program of the stage ([`Plan::local_module`]), made once per process.
    ///
    /// # Errors
    /// The local program does not verify.
    pub fn local_program(&self, rank: usize) -> Result<std::borrow::Cow<'_, (Module, Handle<Function>)>, PlanError> {
        let make = || self.plan.local_module(&self.stage.module, &self.types, self.stage.entry, rank);
        let (r, made) = self.local.get_or_init(|| (rank, make()));
        match *r == rank {
            true => made.as_ref().map(std::borrow::Cow::Borrowed).map_err(Clone::clone),
            false => make().map(std::borrow::Cow::Owned),
        }
    }
}

/// The distribution of an entry on a number of ranks: its stages, each planned. `Display` is
/// what `strata lower --to dist` prints.
#[derive(Clone, Debug)]
pub struct Distribution(pub Vec<PlannedStage>);

impl Distribution {
    /// Splits `entry` (of a verified module, `types` its extended arena) and plans every stage
    /// on `ranks` ranks.
    ///
    /// # Errors
    /// A reduction that cannot be split, or a stage the distributed runtime cannot run.
    pub fn new(
        module: &Module,
        types: &TypeArena,
        entry: Handle<Function>,
        ranks: usize,
    ) -> Result<Distribution, PlanError> {
        let mut planned = Vec::new();
        for stage in split(module, types, entry)? {
            let types = strata_verify::verify(&stage.module)
                .map_err(|d| PlanError::Stage {
                    name: stage.module.functions[stage.entry].name.clone(),
                    message: d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "),
                })?
                .types;
            let plan = Plan::new(&stage.module, &types, stage.entry, ranks)?;
            let (local, inspected) = (std::sync::OnceLock::new(), Default::default());
            let memo = Default::default();
            planned.push(PlannedStage { stage, types, plan, local, inspected, memo });
        }
        Ok(Distribution(planned))
    }
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.len();
        for (k, s) in self.0.iter().enumerate() {
            if n > 1 {
                let what = match &s.stage.collective {
                    Some(Collective::Reduce { name, combine, .. })
                        if matches!(
                            &s.plan.partial,
                            Some(crate::Partial { start: crate::PartialStart::Rows { .. }, .. })
                        ) =>
                    {
                        format!(
                            "returns each rank's rows of `%{name}`, each row folded alone, combined with `{}` in a \
                             fixed pairwise tree over the rows (the same bits at every rank count) and broadcast",
                            combine.keyword()
                        )
                    }
                    Some(Collective::Reduce { name, combine, .. }) => format!(
                        "returns each rank's partial of `%{name}`, combined with `{}` in a pairwise tree over the \
                         ranks and broadcast",
                        combine.keyword()
                    ),
                    Some(Collective::Carry { name, dim, forward, .. })
                        if matches!(
                            &s.plan.partial,
                            Some(crate::Partial { start: crate::PartialStart::Carry { monoid: Some(_), .. }, .. })
                        ) =>
                    {
                        format!(
                            "scans `%{name}` along `{dim}` on every rank at once ({}), then adds to each rank's rows \
                             the last states of the ranks before it",
                            if *forward { "increasing" } else { "decreasing" }
                        )
                    }
                    Some(Collective::Carry { name, dim, forward, carry }) => format!(
                        "scans `%{name}` along `{dim}` rank after rank ({}), each rank starting from the state \
                         the previous one ended with (`%{carry}`)",
                        if *forward { "increasing" } else { "decreasing" }
                    ),
                    Some(Collective::Gather { name, .. }) => format!(
                        "computes each rank's block of the operand of `%{name} = collect(…)`, gathered on rank 0 \
                         and broadcast: later stages compute on it replicated"
                    ),
                    None => "the rest of the entry, the collectives' values as parameters".to_string(),
                };
                writeln!(f, "stage {} of {n}: {what}", k + 1)?;
            }
            write!(f, "{}", s.plan)?;
            if let Some(p) = &s.plan.partial {
                for (_, name, owned) in &p.owned {
                    let blocks: Vec<String> = owned.iter().map(|iv| format!("{name}{iv}")).collect();
                    writeln!(f, "  each rank computes over the rows it owns of `{name}`: {}", blocks.join(", "))?;
                }
            }
        }
        Ok(())
    }
}
