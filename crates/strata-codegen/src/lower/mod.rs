//! Lowering a verified entry into fused loop kernels ([`KernelProgram`]).
//!
//! Each output — a function's result, or each assignment of a program — becomes one loop nest
//! over its domain whose body is the fully inlined scalar expression of the value (see
//! [`crate::sym`]). Calls are inlined, shifts become coordinate arithmetic, neighbor
//! reductions become inner loops with the skip test; no intermediate tensor is materialized.
//! Operations this backend does not compile yet are reported by name, never approximated.

use std::rc::Rc;

use strata_entity::Handle;
use strata_ir::{
    BinaryOp, DimName, Expr, ExprKind, Function, FunctionKind, Level, LevelFormat, Literal, Module, Op, ParamMode,
    Scalar, Statement, Type, TypeArena, Value,
};
use strata_runtime::storage::{has_ragged, keeps_zeros};
use strata_runtime::Sv;

use crate::kernel::{
    arg_best, Buffer, Kernel, KernelKind, KernelProgram, Nest, Role, ScanKernel, ScanLoop, StateRegister, StoragePart,
    Store,
};
use crate::nested::{element_entry, element_exit, element_levels, element_var, flat, split};
use crate::sym::{add, bin, index, ix, level_vars, mul, reads, shift, sub, substitute, Coord, Load, SExpr, Sym};

mod bind;
mod indexing;
mod inlining;
mod reshapes;
mod shifts;
mod state;
mod structured;
mod temporaries;

/// Why an entry cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// An operation the native backend does not compile yet.
    #[error("the native backend does not compile `{op}` yet (in `@{func}`); run with `--backend interp`")]
    Unsupported {
        /// The op.
        op: String,
        /// Where.
        func: String,
    },
    /// A type the native backend does not handle yet.
    #[error("the native backend does not handle {what} yet (in `@{func}`); run with `--backend interp`")]
    UnsupportedType {
        /// What.
        what: String,
        /// Where.
        func: String,
    },
    /// The loop IR broke an invariant after a pass (a compiler bug, reported instead of
    /// generating code that could read out of bounds).
    #[error("internal error in the native backend (please report it): {0}")]
    Invalid(#[from] crate::verify_kernels::KernelVerifyError),
}

impl LowerError {
    /// What is not compiled, without the advice to switch backends.
    pub fn reason(&self) -> String {
        match self {
            LowerError::Unsupported { op, func } => {
                format!("the native backend does not compile `{op}` yet (in `@{func}`)")
            }
            LowerError::UnsupportedType { what, func } => {
                format!("the native backend does not handle {what} yet (in `@{func}`)")
            }
            LowerError::Invalid(e) => format!("internal error in the native backend: {e}"),
        }
    }
}

struct Lowerer<'m> {
    module: &'m Module,
    types: &'m TypeArena,
    buffers: Vec<Buffer>,
    kernels: Vec<Kernel>,
    sparse: Vec<crate::sparse::SparseTensor>,
    next_acc: u32,
    /// Values already extracted into temporaries, and how to read them.
    temporaries: Vec<(Sym, Sym)>,
    /// Presence columns of temporaries by their levels and skip conditions (shared by values
    /// that are absent at the same points, e.g. the x and y fluxes of the nabla).
    presence: Vec<(Vec<Level>, Vec<Load>, usize)>,
    /// Evaluations per point of every function's values if everything were inlined.
    evaluations: crate::extract::Evaluations,
    /// The functions being lowered or inlined, innermost last: their values' evaluations, and
    /// the evaluations per point of the call being inlined.
    frames: Vec<(Rc<crate::extract::Counts>, f64)>,
    /// The evaluations of the call whose callee is inlined next (set by `Op::Call`).
    call_scale: Option<f64>,
    /// The cache one core shares, in bytes (extraction's working-set rule).
    cache_bytes: i64,
}

/// A value that can be computed into temporaries over its own domain.
struct Candidate {
    levels: Vec<Level>,
    element: Handle<Type>,
    parts: Vec<Rc<SExpr>>,
    scalars: Vec<Scalar>,
}

/// The scalar leaves of an element type with their field paths.
fn leaves(
    types: &TypeArena,
    ty: Handle<Type>,
    path: Vec<usize>,
    out: &mut Vec<(Vec<usize>, Scalar)>,
) -> Result<(), String> {
    match &types[ty] {
        Type::Scalar(s) => out.push((path, *s)),
        Type::Tuple(fs) => {
            for (i, f) in fs.iter().enumerate() {
                let mut p = path.clone();
                p.push(i);
                leaves(types, *f, p, out)?;
            }
        }
        Type::Tensor(_) => return Err("tensors of tensors".into()),
        Type::Function { .. } => return Err("function values".into()),
    }
    Ok(())
}

/// The placeholder buffer of accumulator `id` while a payload over tensor elements is inlined
/// (never emitted: replaced by the accumulator register once its reads are checked).
fn acc_placeholder(id: u32) -> usize {
    usize::MAX - id as usize
}

/// Builds a [`Sym`] of the tuple shape of `ty` from leaf expressions in order.
fn assemble(types: &TypeArena, ty: Handle<Type>, leaves: &mut impl Iterator<Item = Rc<SExpr>>) -> Sym {
    match &types[ty] {
        Type::Tuple(fs) => Sym::Tuple(fs.iter().map(|f| assemble(types, *f, leaves)).collect()),
        _ => Sym::Scalar(leaves.next().expect("one leaf per scalar")),
    }
}

impl<'m> Lowerer<'m> {
    fn unsupported_type(&self, what: impl Into<String>, func: &Function) -> LowerError {
        LowerError::UnsupportedType { what: what.into(), func: func.name.clone() }
    }

    fn ty_of(&self, e: &Expr) -> Handle<Type> {
        e.ty
    }

    fn element_scalar(&self, ty: Handle<Type>) -> Scalar {
        strata_ir::element_scalar(self.types, ty).unwrap_or(Scalar::Bool)
    }

    fn literal_sym(&self, lit: &Literal, ty: Handle<Type>, func: &Function) -> Result<Sym, LowerError> {
        let (_, element) = flat(self.types, ty).map_err(|w| self.unsupported_type(w, func))?;
        Ok(match (&self.types[element], lit) {
            (Type::Tuple(fs), Literal::Tuple(items)) => {
                Sym::Tuple(fs.iter().zip(items).map(|(f, l)| self.literal_sym(l, *f, func)).collect::<Result<_, _>>()?)
            }
            (Type::Scalar(s), l) => Sym::Scalar(Rc::new(SExpr::Const(Sv::from_literal(l, *s).unwrap_or(Sv::zero(*s))))),
            _ => return Err(self.unsupported_type("this constant", func)),
        })
    }

    /// A new identifier for an accumulator or a set of fresh loop variables.
    fn fresh_id(&mut self) -> u32 {
        self.next_acc += 1;
        self.next_acc - 1
    }

    /// Renames a value's dimensions `levels` to coordinates `to`.
    fn rename_sym(&mut self, s: &Sym, levels: &[Level], to: &[Coord]) -> Sym {
        let from: Vec<DimName> = levels.iter().map(|l| l.name.clone()).collect();
        self.rename_vars(s, &from, to)
    }

    /// Renames loop variables `from` to coordinates `to` (at once) in every leaf of `s`.
    fn rename_vars(&mut self, s: &Sym, from: &[DimName], to: &[Coord]) -> Sym {
        let uid = self.fresh_id();
        s.map(&mut |x| crate::sym::rename(x, from, to, uid))
    }

    /// The value of let `v`; a float value of a sparse type is `+0.0` where it is zero, as
    /// storage keeps no sign of a zero (`strata_runtime::storage::canonical_fill`): `x + 0.0`
    /// turns `-0.0` into `+0.0` and leaves every other value as it is.
    fn op(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let s = self.op_value(func, env, v)?;
        let (levels, element) = split(self.types, func.exprs[v].ty);
        Ok(match self.types[element] {
            Type::Scalar(sc) if !keeps_zeros(&levels) && sc.is_float() => s.map(&mut |x| {
                Rc::new(SExpr::Binary(BinaryOp::Plus, x.clone(), Rc::new(SExpr::Const(Sv::zero(sc))), sc))
            }),
            _ => s,
        })
    }

    fn op_value(&mut self, func: &Function, env: &[Option<Sym>], v: Value) -> Result<Sym, LowerError> {
        let e = &func.exprs[v];
        let ExprKind::Op(op) = &e.kind else { unreachable!("lets define ops") };
        let arg = |x: &Value| env[x.index()].clone().expect("defined before use");
        let scalar_of = |x: &Value| self.element_scalar(func.exprs[*x].ty);
        let unsupported = || LowerError::Unsupported { op: op.name().to_string(), func: func.name.clone() };
        Ok(match op {
            Op::Constant { value } => self.literal_sym(value, self.ty_of(e), func)?,
            Op::Unary { op: u, arg: a } => Sym::Scalar(Rc::new(SExpr::Unary(*u, arg(a).scalar(), scalar_of(a)))),
            Op::Binary { op: b, lhs, rhs } => {
                Sym::Scalar(Rc::new(SExpr::Binary(*b, arg(lhs).scalar(), arg(rhs).scalar(), scalar_of(lhs))))
            }
            Op::Select { cond, on_true, on_false } => {
                let (c, t, f) = (arg(cond).scalar(), arg(on_true), arg(on_false));
                let (tl, fl) = (t.leaves(), f.leaves());
                let mut sel = tl.iter().zip(&fl).map(|(a, b)| Rc::new(SExpr::Select(c.clone(), a.clone(), b.clone())));
                assemble(self.types, split(self.types, e.ty).1, &mut sel)
            }
            Op::Cast { arg: a, to } => Sym::Scalar(Rc::new(SExpr::Cast(arg(a).scalar(), scalar_of(a), *to))),
            Op::MakeTuple { fields } => Sym::Tuple(fields.iter().map(arg).collect()),
            Op::TupleGet { tuple, index } => match arg(tuple) {
                Sym::Tuple(fs) => fs[*index as usize].clone(),
                Sym::Scalar(_) => return Err(unsupported()),
            },
            Op::Call { func: f, args, result } => {
                let args = args.iter().map(arg).collect();
                self.call_scale = self.frames.last().map(|(counts, scale)| counts.evaluations[v.index()] * scale);
                self.inline_result(*f, args, *result as usize)?
            }
            Op::CartesianShift { arg: a, dim, offset } => arg(a).map(&mut |x| shift(x, dim, *offset)),
            Op::ShiftInit { .. } | Op::UnstructuredShift { .. } => self.neighbor_shift(func, env, v)?,
            Op::ShiftApply { arg: a, neighbor } => {
                let (levels, _) = split(self.types, func.exprs[*a].ty);
                let k = levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max().expect("verified");
                arg(a).map(&mut |x| substitute(x, &DimName::neighbor_counter(k), &Coord::Const(*neighbor)))
            }
            Op::CanDeref { arg: a } => Sym::Scalar(Rc::new(SExpr::Present(arg(a).leaves()[0].clone()))),
            Op::Reduce { .. } => self.neighbor_reduce(func, env, v)?,
            Op::Subset { arg: a, .. } | Op::AddDim { arg: a, .. } => arg(a),
            // The dropped dimension is read at its one position.
            Op::DropDim { .. } => self.drop_dim(func, env, v)?,
            // A change of storage: the same values by name (the result's level order is its
            // buffer's); a result without ragged levels has no runs, so skipped elements become
            // zeros (the interpreter's `convert`).
            Op::Convert { arg: a, .. } if split(self.types, e.ty).1 != split(self.types, func.exprs[*a].ty).1 => {
                // Between a tensor of tiles and its flat form: the same buffer, renamed.
                let (levels, element) = split(self.types, e.ty);
                let (operand, operand_element) = split(self.types, func.exprs[*a].ty);
                let (from, to) = if let Type::Tensor(tile) = &self.types[operand_element] {
                    let deeper = element_levels(self.types, operand_element).len();
                    crate::nested::flatten_read(&levels, &operand, tile.levels.len(), deeper)
                } else {
                    let deeper = element_levels(self.types, element).len();
                    crate::nested::nest_read(&operand, &levels, deeper)
                };
                self.rename_vars(&arg(a), &from, &to)
            }
            Op::Convert { arg: a, .. } => {
                let to = split(self.types, e.ty).0;
                let x = arg(a);
                if has_ragged(&to) || !crate::fill::may_skip_sym(&x, &self.sparse) {
                    return Ok(x);
                }
                let Sym::Scalar(x) = x else {
                    return Err(self
                        .unsupported_type("converting the storage of tensors of tuples with skipped elements", func));
                };
                let zero = Rc::new(SExpr::Const(Sv::zero(scalar_of(a))));
                Sym::Scalar(Rc::new(SExpr::Select(Rc::new(SExpr::Present(x.clone())), x, zero)))
            }
            Op::Scan { func: f, args, dim, forward, init } => self.scan(func, e, env, *f, args, dim, *forward, init)?,
            Op::CollapseShape { .. } => self.collapse_shape(func, env, v)?,
            Op::ExpandShape { .. } => self.expand_shape(func, env, v)?,
            Op::Get { .. } => self.get(func, env, v)?,
            Op::Set { .. } => self.set(func, env, v)?,
            Op::Gather { .. } => self.gather(func, env, v)?,
            // A view's values are slice tensors: their element variables are the slice dimensions.
            Op::Scatter { .. } => self.scatter(func, env, v)?,
            Op::Concat { .. } => self.concat(func, env, v)?,
            Op::Map { func: f, args, .. } => {
                let args = args.iter().map(arg).collect();
                self.inline_on_elements(*f, args)?
            }
            Op::Pack { .. } => self.pack(func, env, v)?,
            Op::Unpack { .. } => self.unpack(func, env, v)?,
            // Placement does not change values; the single-process backend computes in place.
            Op::ToDevice { arg: a, .. } | Op::Distribute { arg: a, .. } | Op::Collect { arg: a } => arg(a),
            Op::MapReduce { .. } => self.map_reduce(func, env, v)?,
            Op::MapReduceAff { .. } => self.map_reduce_aff(func, env, v)?,
            Op::DotGeneral { lhs, rhs, ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
                self.dot(func, e, env, *lhs, *rhs, *ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch)?
            }
            Op::Product2d { lhs, rhs, ring } => self.dot(func, e, env, *lhs, *rhs, *ring, &[1], &[0], &[], &[])?,
            Op::Transpose { .. } => self.transpose(func, env, v)?,
            Op::Broadcast { .. } | Op::BroadcastInDim { .. } => self.broadcast(func, env, v)?,
            // The result's one level (renumbered to `_0` when positional) is the coordinate.
            Op::Pos { .. } => {
                let level = split(self.types, e.ty).0.into_iter().next().expect("pos has one level");
                Sym::Scalar(Rc::new(SExpr::Index(Coord::Var { dim: level.name, offset: 0 })))
            }
            Op::Coordinates { arg: a, dim } | Op::Nonzeros { arg: a, dim } => {
                let coordinates = matches!(op, Op::Coordinates { .. });
                self.compact(func, e, arg(a).scalar(), func.exprs[*a].ty, dim, coordinates)?
            }
            Op::Assemble { coordinates, values, dim } => {
                let (c, x) = (arg(coordinates).scalar(), arg(values).scalar());
                self.assemble(func, e, c, x, func.exprs[*values].ty, dim)?
            }
        })
    }
}

/// What lowering decides from the machine, read once by the caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LowerOptions {
    /// The cache one core shares, in bytes: whether a temporary stays in cache.
    pub cache_bytes: i64,
    /// Optional passes of [`crate::pipeline::PASSES`] not to run (`$STRATA_DISABLE_PASSES`,
    /// `strata lower --disable-pass`): every program computes the same values without them.
    pub disabled: crate::pipeline::PassSet,
    /// Kernels call the runtime's `poll` every few iterations of their outermost loop
    /// ([`crate::runtime::set_poll`]): a distributed rank's local program, whose halo exchange
    /// is under way while its interior runs, lets MPI move the bytes meanwhile.
    pub polls: bool,
    /// Every extent the C prints takes a run-time slot of its own, zero included, rather than
    /// one slot per distinct value: the text then depends on the program's structure alone,
    /// never on which of its sizes are equal or zero (`emit_c`'s extents). A distributed
    /// rank's local program: every rank prints the same text and loads the same kernel.
    pub extents_per_site: bool,
    /// Lower for CUDA GPU `N` ([`crate::placement`]): the passes that shape loops for a CPU's
    /// caches and vector lanes ([`crate::pipeline::gpu_skipped`]) do not run, and the schedule
    /// pass decides how each kernel maps onto the GPU's threads ([`crate::schedule::Gpu`]).
    pub gpu: Option<u32>,
}

impl LowerOptions {
    /// The options for this machine ([`crate::machine::cache_bytes`]), with the passes
    /// `$STRATA_DISABLE_PASSES` names disabled ([`crate::pipeline::PassSet::from_env`]).
    pub fn for_this_machine() -> LowerOptions {
        LowerOptions {
            cache_bytes: crate::machine::cache_bytes(),
            disabled: crate::pipeline::PassSet::from_env(),
            polls: false,
            extents_per_site: false,
            gpu: None,
        }
    }
}

/// Lowers `entry` of a verified module (`types` from verification) into kernels, for this
/// machine.
pub fn lower(module: &Module, types: &TypeArena, entry: Handle<Function>) -> Result<KernelProgram, LowerError> {
    lower_with(module, types, entry, &LowerOptions::for_this_machine())
}

/// [`lower`] with the machine facts given.
pub fn lower_with(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    options: &LowerOptions,
) -> Result<KernelProgram, LowerError> {
    lower_observed(module, types, entry, options, &mut |_, _| {})
}

/// [`lower_with`], showing `observe` the kernel program after lowering and after each pass of
/// [`crate::pipeline::PASSES`] (with its name).
pub fn lower_observed(
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    options: &LowerOptions,
    observe: &mut dyn FnMut(&str, &KernelProgram),
) -> Result<KernelProgram, LowerError> {
    let func = &module.functions[entry];
    if func.is_generic() {
        return Err(LowerError::Unsupported {
            op: "a generic function as the entry (it has types only at its uses)".into(),
            func: func.name.clone(),
        });
    }
    let mut l = Lowerer {
        module,
        types,
        buffers: Vec::new(),
        kernels: Vec::new(),
        sparse: Vec::new(),
        next_acc: 0,
        temporaries: Vec::new(),
        presence: Vec::new(),
        evaluations: Default::default(),
        frames: Vec::new(),
        call_scale: None,
        cache_bytes: options.cache_bytes,
    };
    let evals = l.evaluations.of(module, types, entry);
    l.frames.push((evals, 1.0));
    let mut env: Vec<Option<Sym>> = vec![None; func.exprs.len()];
    let mut param_buffers: Vec<Vec<usize>> = Vec::new();
    for (i, &p) in func.params.iter().enumerate() {
        let e = &func.exprs[p];
        let out = e.kind == ExprKind::Param(ParamMode::Out);
        let (sym, ids) = l.bind(&e.name, e.ty, Some(i), out, func)?;
        env[p.index()] = Some(sym);
        param_buffers.push(ids);
    }
    for (_, stmt) in func.body.iter() {
        match stmt {
            Statement::Let(v) => {
                let s = l.op(func, &env, *v)?;
                env[v.index()] = Some(l.keep_reused(func, *v, s));
            }
            Statement::Assign { target, domain, value } => {
                let p = func.params.iter().position(|x| x == target).expect("verified out parameter");
                let mut dom = l.buffers[param_buffers[p][0]].levels.clone();
                for (name, iv) in domain.iter().flatten() {
                    if let Some(lv) = dom.iter_mut().find(|lv| &lv.name == name) {
                        lv.interval = *iv;
                    }
                }
                let mut leaves = env[value.index()].clone().expect("defined").leaves();
                let name = &func.exprs[*target].name;
                // A value reading the target itself (an in-place update through shifted reads) is
                // computed whole into temporaries first, then copied: the interpreter evaluates
                // the value before assigning it.
                if param_buffers[p].iter().any(|&b| leaves.iter().any(|v| reads(v, b))) {
                    let mut stores = Vec::new();
                    let mut copies = Vec::new();
                    for (&b, value) in param_buffers[p].iter().zip(&leaves) {
                        let target = &l.buffers[b];
                        let name = format!("tmp{}.{}", l.kernels.len(), target.name);
                        let t = Buffer::temporary(name, target.scalar, target.levels.clone(), target.field.clone());
                        let coords = level_vars(&t.levels);
                        l.buffers.push(t);
                        let tb = l.buffers.len() - 1;
                        stores.push(Store { buffer: tb, value: value.clone() });
                        copies.push(Rc::new(SExpr::Load(Rc::new(Load { buffer: tb, coords }))));
                    }
                    l.kernels.push(Kernel::nest(
                        format!("%{name} <- %{}, computed before it is assigned", func.exprs[*value].name),
                        dom.clone(),
                        stores,
                    ));
                    leaves = copies;
                }
                let stores = l.stores(&param_buffers[p], &leaves);
                l.kernels.push(Kernel::nest(
                    format!("%{} <- %{}", func.exprs[*target].name, func.exprs[*value].name),
                    dom,
                    stores,
                ));
            }
            Statement::Return(vs) => {
                // An entry with several results runs as a program writing them
                // (`strata_verify::results_as_outputs`).
                let (Some(rty), [v]) = (func.result(), vs.as_slice()) else {
                    return Err(LowerError::Unsupported {
                        op: "an entry with several results (run it through `strata_verify::results_as_outputs`)".into(),
                        func: func.name.clone(),
                    });
                };
                if let Some(k) = l.compressed_return(func, rty, env[v.index()].clone().expect("defined"))? {
                    l.kernels.push(k);
                    continue;
                }
                let (sym_levels, _) =
                    flat(types, rty).map_err(|what| LowerError::UnsupportedType { what, func: func.name.clone() })?;
                let (_, ids) = l.bind("result", rty, None, true, func)?;
                let leaves = env[v.index()].clone().expect("defined").leaves();
                let stores = l.stores(&ids, &leaves);
                l.kernels.push(Kernel::nest(format!("return %{}", func.exprs[*v].name), sym_levels, stores));
            }
        }
    }
    if func.kind == FunctionKind::Func && !l.kernels.iter().any(|k| k.comment.starts_with("return")) {
        return Err(LowerError::Unsupported { op: "a function without return".into(), func: func.name.clone() });
    }
    let mut program = KernelProgram {
        entry: func.name.clone(),
        buffers: l.buffers,
        kernels: l.kernels,
        sparse: l.sparse,
        cache_bytes: options.cache_bytes,
        polls: options.polls,
        extents_per_site: options.extents_per_site,
        gpu: options.gpu,
    };
    let disabled = match options.gpu {
        Some(_) => options.disabled.union(crate::pipeline::gpu_skipped()),
        None => options.disabled,
    };
    crate::pipeline::run_with(&mut program, disabled, observe)?;
    Ok(program)
}

/// Whether every expression of `exprs` reads loop variables of `own` only (so it can be
/// computed once over that domain, in a kernel of its own).
fn depends_only_on(exprs: impl IntoIterator<Item = Rc<SExpr>>, own: &[&DimName]) -> bool {
    exprs.into_iter().all(|x| crate::sym::free_vars(&x).iter().all(|v| own.contains(&v)))
}

/// The element type of a compressed level's coordinates (offsets within `interval`):
/// `int32` where they fit, as SciPy stores them (a third less memory traffic than `int64` for
/// a matrix's indices and values), else `int64`.
fn coordinate_scalar(interval: strata_ir::Interval) -> Scalar {
    if interval.len() <= i32::MAX as u64 {
        Scalar::I32
    } else {
        Scalar::I64
    }
}

/// `levels` as dense levels (same names and intervals): how kernels loop over them.
fn dense_levels(levels: &[Level]) -> Vec<Level> {
    levels.iter().map(|l| Level::dense(l.name.clone(), l.interval)).collect()
}
