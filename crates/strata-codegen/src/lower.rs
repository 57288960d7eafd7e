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

    /// Buffers for a value of type `ty` (one per scalar leaf), and the symbolic value reading them.
    fn bind(
        &mut self,
        name: &str,
        ty: Handle<Type>,
        param: Option<usize>,
        written: bool,
        func: &Function,
    ) -> Result<(Sym, Vec<usize>), LowerError> {
        let sparse = split(self.types, ty).0.iter().any(|l| !l.format.is_dense_like());
        if sparse {
            // Storage and the presence of an output are per scalar; a temporary (a scan's with
            // a tuple state) holds every field densely.
            if param.is_some() || name == "result" {
                self.check_storage(name, ty, func)?;
            }
            match (param, written) {
                (Some(_), false) => return Ok(self.bind_storage(name, ty, param)),
                // Results and `out` parameters are written in the logical form (values, and
                // for ragged types which exist), whatever their storage format; temporaries (a
                // scan's) hold their values densely, their readers decide what exists.
                (None, true) | (Some(_), true) => {}
                (None, false) => {
                    return Err(self.unsupported_type(format!("the sparse or ragged value `%{name}`"), func))
                }
            }
        }
        let (levels, element) = flat(self.types, ty).map_err(|w| self.unsupported_type(w, func))?;
        let mut ls = Vec::new();
        leaves(self.types, element, Vec::new(), &mut ls).map_err(|w| self.unsupported_type(w, func))?;
        let mut ids = Vec::new();
        let mut exprs = Vec::new();
        for (path, scalar) in ls {
            let suffix: String = path.iter().map(|i| format!(".f{i}")).collect();
            let id = self.buffers.len();
            self.buffers.push(Buffer {
                name: format!("{name}{suffix}"),
                scalar,
                levels: levels.clone(),
                param,
                field: path,
                written,
                temp: param.is_none() && name != "result",
                overwritten: false,
                role: Role::Elements,
            });
            ids.push(id);
            let coords = level_vars(&levels);
            exprs.push(Rc::new(SExpr::Load(Rc::new(Load { buffer: id, coords }))));
        }
        let written_out = name == "result" || (param.is_some() && written);
        if written_out && has_ragged(&split(self.types, ty).0) {
            // A ragged result or `out` parameter in the logical form: values, and which exist
            // (a sparse one's unstored entries are zeros, so its values are all there is).
            let mut presence = self.buffers[ids[0]].clone();
            presence.name = format!("{name}.present");
            presence.scalar = Scalar::U8;
            presence.role = Role::Presence;
            let at = self.buffers.len();
            ids.push(at);
            self.buffers.push(presence);
            // Read back (a program reading its `out` parameter), an element exists where the
            // presence says so.
            if param.is_some() {
                let present = Rc::new(SExpr::Load(Rc::new(Load { buffer: at, coords: level_vars(&levels) })));
                let exists =
                    Rc::new(SExpr::Binary(BinaryOp::Ne, present, Rc::new(SExpr::Const(Sv::U8(0))), Scalar::U8));
                let absent = Rc::new(SExpr::Absent(self.buffers[ids[0]].scalar));
                exprs = exprs.into_iter().map(|v| Rc::new(SExpr::Select(exists.clone(), v, absent.clone()))).collect();
            }
        }
        Ok((assemble(self.types, element, &mut exprs.into_iter()), ids))
    }

    /// The stores writing `leaves` into buffers `ids` (as [`Self::bind`] made them): one per
    /// leaf, and for a ragged result or `out` parameter which elements exist.
    fn stores(&self, ids: &[usize], leaves: &[Rc<SExpr>]) -> Vec<Store> {
        let mut stores: Vec<Store> =
            ids.iter().zip(leaves).map(|(&buffer, value)| Store { buffer, value: value.clone() }).collect();
        if let (Some(&p), [leaf]) = (ids.last(), leaves) {
            if self.buffers[p].role == Role::Presence {
                stores.push(Store { buffer: p, value: Rc::new(SExpr::Present(leaf.clone())) });
            }
        }
        stores
    }

    /// Refuses sparse and ragged tensors whose elements are not scalars (storage and the
    /// presence of a result are per scalar).
    fn check_storage(&self, name: &str, ty: Handle<Type>, func: &Function) -> Result<(), LowerError> {
        if !matches!(self.types[split(self.types, ty).1], Type::Scalar(_)) {
            return Err(
                self.unsupported_type(format!("sparse or ragged tensors of tuples or tensors (`%{name}`)"), func)
            );
        }
        Ok(())
    }

    /// The kernel writing a sparse function result as storage ([`crate::kernel::CompressedOut`]):
    /// for a result with compressed or singleton levels (no ragged ones) and scalar elements.
    /// `None` for every other result.
    fn compressed_return(
        &mut self,
        func: &Function,
        rty: Handle<Type>,
        value: Sym,
    ) -> Result<Option<Kernel>, LowerError> {
        let levels = split(self.types, rty).0;
        if !levels.iter().any(|l| l.format.is_sparse()) || has_ragged(&levels) || levels.is_empty() {
            return Ok(None);
        }
        self.check_storage("result", rty, func)?;
        let scalar = self.element_scalar(rty);
        let last = levels.len() - 1;
        let domain = dense_levels(&levels);
        let outer = domain[..last].to_vec();
        let mut storage = |name: &str, scalar: Scalar, part: StoragePart| {
            self.buffers.push(Buffer {
                name: format!("result.{name}"),
                scalar,
                levels: outer.clone(),
                param: None,
                field: Vec::new(),
                written: true,
                temp: false,
                overwritten: false,
                role: Role::Storage(part),
            });
            self.buffers.len() - 1
        };
        let positions = storage("pos", Scalar::I64, StoragePart::Positions(last));
        let coordinates = storage("crd", coordinate_scalar(levels[last].interval), StoragePart::Coordinates(last));
        let values = storage("values", scalar, StoragePart::Values);
        let leaf = value.leaves().into_iter().next().expect("checked: scalar elements");
        let mut k = Kernel::nest(
            "return (the non-zeros of a sparse result)".into(),
            domain,
            vec![Store { buffer: values, value: leaf }],
        );
        k.kind = KernelKind::Nest(Nest {
            windows: Vec::new(),
            compressed: Some(crate::kernel::CompressedOut { positions, coordinates, workspace: None }),
        });
        Ok(Some(k))
    }

    /// The storage buffers of sparse or ragged parameter `name` (checked by
    /// [`Self::check_storage`]) in the formats [`crate::sparse::storage_formats`] chooses, and
    /// the value reading them.
    fn bind_storage(&mut self, name: &str, ty: Handle<Type>, param: Option<usize>) -> (Sym, Vec<usize>) {
        let (levels, element) = split(self.types, ty);
        let mut ids = Vec::new();
        let mut buffer = |this: &mut Self, suffix: String, scalar: Scalar, part: StoragePart| {
            this.buffers.push(Buffer {
                name: format!("{name}.{suffix}"),
                scalar,
                levels: Vec::new(),
                param,
                field: Vec::new(),
                written: false,
                temp: false,
                overwritten: false,
                role: Role::Storage(part),
            });
            ids.push(this.buffers.len() - 1);
            this.buffers.len() - 1
        };
        let mut storage = Vec::new();
        let formats = crate::sparse::storage_formats(&levels);
        for (k, (l, format)) in levels.iter().zip(formats).enumerate() {
            storage.push(match format {
                LevelFormat::Compressed { .. } => crate::sparse::LevelStorage::Compressed {
                    positions: buffer(self, format!("pos{k}"), Scalar::I64, StoragePart::Positions(k)),
                    coordinates: buffer(
                        self,
                        format!("crd{k}"),
                        coordinate_scalar(l.interval),
                        StoragePart::Coordinates(k),
                    ),
                },
                LevelFormat::Ragged { .. } => crate::sparse::LevelStorage::Ragged {
                    offsets: buffer(self, format!("off{k}"), Scalar::I64, StoragePart::Offsets(k)),
                },
                _ => crate::sparse::LevelStorage::Dense { size: l.interval.len() },
            });
        }
        let scalar = self.element_scalar(element);
        let values = buffer(self, "values".into(), scalar, StoragePart::Values);
        self.sparse.push(crate::sparse::SparseTensor { name: name.into(), levels: levels.clone(), storage, values });
        let coords = level_vars(&levels);
        let read = crate::sym::SparseRead { tensor: self.sparse.len() - 1, coords };
        (Sym::Scalar(Rc::new(SExpr::Sparse(Rc::new(read)))), ids)
    }

    fn ty_of(&self, e: &Expr) -> Handle<Type> {
        e.ty
    }

    fn element_scalar(&self, ty: Handle<Type>) -> Scalar {
        strata_ir::element_scalar(self.types, ty).unwrap_or(Scalar::Bool)
    }

    /// Inlines `func` applied to `args` (its first result: a payload's only one).
    fn inline(&mut self, fh: Handle<Function>, args: Vec<Sym>) -> Result<Sym, LowerError> {
        self.inline_result(fh, args, 0)
    }

    /// Inlines `func` applied to `args`; its result `which`.
    fn inline_result(&mut self, fh: Handle<Function>, args: Vec<Sym>, which: usize) -> Result<Sym, LowerError> {
        let scale = self.call_scale.take().unwrap_or(1.0);
        let evals = self.evaluations.of(self.module, self.types, fh);
        self.frames.push((evals, scale));
        let result = self.inline_body(fh, args, which);
        self.frames.pop();
        result
    }

    /// [`Self::inline_result`] in its frame.
    fn inline_body(&mut self, fh: Handle<Function>, args: Vec<Sym>, which: usize) -> Result<Sym, LowerError> {
        let func = &self.module.functions[fh];
        let mut env: Vec<Option<Sym>> = vec![None; func.exprs.len()];
        for (&p, a) in func.params.iter().zip(args) {
            env[p.index()] = Some(a);
        }
        for (_, stmt) in func.body.iter() {
            match stmt {
                Statement::Let(v) => {
                    let s = self.op(func, &env, *v)?;
                    env[v.index()] = Some(self.keep_reused(func, *v, s));
                }
                Statement::Return(vs) => return Ok(env[vs[which].index()].clone().expect("defined")),
                Statement::Assign { .. } => {
                    return Err(LowerError::Unsupported { op: "assignment".into(), func: func.name.clone() })
                }
            }
        }
        Err(LowerError::Unsupported { op: "a function without return".into(), func: func.name.clone() })
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

    /// A scan: materialized into a temporary by its own kernel (a sequential loop along `dim`
    /// carrying the state in registers), read back by the consumers.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &mut self,
        func: &Function,
        e: &Expr,
        env: &[Option<Sym>],
        f: Handle<Function>,
        args: &[Value],
        dim: &DimName,
        forward: bool,
        init: &strata_ir::Init,
    ) -> Result<Sym, LowerError> {
        let levels = split(self.types, e.ty).0;
        let unsupported = |what: &str| LowerError::Unsupported { op: format!("scan {what}"), func: func.name.clone() };
        let arg_syms: Vec<Sym> = args.iter().map(|a| env[a.index()].clone().expect("defined")).collect();
        // The scan is computed once for its whole domain, so its operands may depend on its own
        // dimensions only.
        let own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        if !depends_only_on(arg_syms.iter().flat_map(Sym::leaves), &own) {
            return Err(unsupported("inside a loop over other dimensions"));
        }
        // Operands reading sparse or ragged storage are computed into dense temporaries first
        // (with presence where a ragged run ends): the scan reads each point once, in order.
        let mut operands = Vec::new();
        for (a, sym) in args.iter().zip(arg_syms) {
            let parts = sym.leaves();
            if !parts.iter().any(crate::sparse::reads_sparse) {
                operands.push(sym);
                continue;
            }
            let ae = &func.exprs[*a];
            let (alevels, element) = split(self.types, ae.ty);
            let scalars: Vec<Scalar> = parts.iter().map(|_| self.element_scalar(ae.ty)).collect();
            let comment = format!("%{} (read by a scan; computed once, densely)", ae.name);
            let reads = self.materialize(dense_levels(&alevels), &parts, &scalars, comment);
            operands.push(assemble(self.types, element, &mut reads.into_iter()));
        }
        let leaves: Vec<Rc<SExpr>> = operands.iter().flat_map(Sym::leaves).collect();
        let element = split(self.types, e.ty).1;
        let (states, state) = match init {
            strata_ir::Init::Literal(l) => self.state_registers(l, element, func)?,
            // A state tensor (over the other dimensions), read at the point of each column.
            strata_ir::Init::Value(v) => {
                let sym = env[v.index()].clone().expect("defined");
                if !depends_only_on(sym.leaves(), &own) {
                    return Err(unsupported("with an initial state computed inside a loop"));
                }
                self.state_registers_from(&sym, element)
            }
        };
        // A position past a ragged run skips the step (a segmented scan); the result is
        // absent there too (below).
        let updates = self.guarded_steps(f, state, operands, &states)?;
        if updates
            .iter()
            .any(|u| matches!(&**u, SExpr::Load(l) if l.coords.iter().any(|c| matches!(c, Coord::Table { .. }))))
        {
            return Err(unsupported("through neighbor tables"));
        }
        let dim_level = levels.iter().find(|l| &l.name == dim).expect("verified").clone();
        let outer: Vec<Level> = levels.iter().filter(|l| &l.name != dim).cloned().collect();
        let comment =
            format!("%{} = scan(@{}, dim = {dim}, forward = {forward})", e.name, self.module.functions[f].name);
        let scan = ScanLoop { dim: dim_level, forward, states, updates, last_only: false, arg_best: None };
        let scalars: Vec<Scalar> = scan.states.iter().map(|st| st.1).collect();
        let result = self.push_state_kernel("scan", e, func, comment, outer, scan)?;
        // Where a step was skipped the result is absent, like the operand there.
        let mut reads = result
            .leaves()
            .into_iter()
            .zip(scalars)
            .map(|(r, scalar)| crate::fill::only_where(&leaves, r, scalar, &self.sparse));
        Ok(assemble(self.types, split(self.types, e.ty).1, &mut reads))
    }

    /// The next value of each state register of `states` (current values `state`) after one
    /// step of payload `f` on `operands`: absent, so the step is skipped and the state kept,
    /// wherever an operand is absent, whatever the payload reads ([`crate::fill::only_where`]).
    fn guarded_steps(
        &mut self,
        f: Handle<Function>,
        state: Sym,
        operands: Vec<Sym>,
        states: &[StateRegister],
    ) -> Result<Vec<Rc<SExpr>>, LowerError> {
        let leaves: Vec<Rc<SExpr>> = operands.iter().flat_map(Sym::leaves).collect();
        let mut call_args = vec![state];
        call_args.extend(operands);
        let steps = self.inline(f, call_args)?.leaves();
        Ok(steps
            .into_iter()
            .zip(states)
            .map(|(u, st)| crate::fill::only_where(&leaves, u, st.1, &self.sparse))
            .collect())
    }

    /// Pushes a kernel running `scan` over `domain` whose stores write each state register
    /// into its own buffer of `e`'s value (at every step, or the final state for
    /// `last_only`); returns the value reading those buffers.
    fn push_state_kernel(
        &mut self,
        prefix: &str,
        e: &Expr,
        func: &Function,
        comment: String,
        domain: Vec<Level>,
        scan: ScanLoop,
    ) -> Result<Sym, LowerError> {
        let name = format!("{prefix}{}", self.kernels.len());
        let (sym, ids) = self.bind(&name, e.ty, None, true, func)?;
        let stores = ids
            .iter()
            .zip(&scan.states)
            .map(|(&buffer, (id, _, _))| Store { buffer, value: Rc::new(SExpr::Acc(*id)) })
            .collect();
        self.kernels.push(Kernel {
            comment,
            domain,
            stores,
            sets: Vec::new(),
            kind: KernelKind::Scan(ScanKernel { scan, chain: Vec::new(), local: Vec::new() }),
        });
        Ok(sym)
    }

    /// Seed 000's extraction of temporaries, for values read through a neighbor table: when
    /// such a value itself reads through a neighbor table (the FVM flux on edges, read per
    /// vertex), substituting it would recompute it, with a second level of indirect loads, at
    /// every neighbor reference. Instead one kernel computes it once over its own domain into a
    /// temporary, with a presence column (0, or the skip value -1 where the value is absent)
    /// read back through the same guard as a neighbor-table skip; the result reads those. A
    /// value present everywhere needs no presence column; values absent at the same points
    /// ([`crate::sym::skip_conditions`]) share one.
    /// Other values (and values depending on loop variables outside their own domain) are
    /// returned unchanged.
    fn extract_temporary(&mut self, e: &Expr, value: Sym) -> Sym {
        let Some(t) = self.temporary_candidate(e, &value) else { return value };
        if !crate::extract::worth_extracting(&t.parts, &t.levels) {
            return value;
        }
        self.keep(e, value, t, "it is read through a neighbor table")
    }

    /// Extraction of temporaries by reuse ([`crate::extract`]'s reuse rule): value `v` of
    /// `func` (the function being lowered or inlined, the innermost frame) is computed once
    /// into a temporary when recomputing it at each of its evaluations would cost more than the
    /// temporary's trip through the cache or memory, or would make the code grow with the
    /// reuse (a value reused at every level of a chain).
    fn keep_reused(&mut self, func: &Function, v: Value, value: Sym) -> Sym {
        let Some((counts, scale)) = self.frames.last() else { return value };
        let evaluations = counts.evaluations[v.index()] * scale;
        let e = &func.exprs[v];
        if evaluations <= 1.0 || counts.reads[v.index()] <= 1.0 {
            return value;
        }
        let Some(t) = self.temporary_candidate(e, &value) else { return value };
        if t.levels.is_empty() || !t.levels.iter().all(|l| l.format.is_dense_like()) {
            return value;
        }
        let points: f64 = t.levels.iter().map(|l| l.interval.len() as f64).product();
        let bytes = points * t.scalars.iter().map(|s| s.size_bytes() as f64).sum::<f64>();
        if !crate::extract::worth_keeping(evaluations, crate::extract::work(&t.parts), bytes, self.cache_bytes) {
            return value;
        }
        let why = format!("computed {evaluations:.0} times per point if inlined");
        self.keep(e, value, t, &why)
    }

    /// The scalar leaves of `value` (of expression `e`) and its levels, when it can be computed
    /// into temporaries over its own domain: scalar leaves (no tensor elements), reading loop
    /// variables of its own levels only.
    fn temporary_candidate(&self, e: &Expr, value: &Sym) -> Option<Candidate> {
        let parts = value.leaves();
        let (levels, element) = split(self.types, e.ty);
        let mut typed = Vec::new();
        // Tensor elements have no scalar leaf list: nothing is extracted then.
        leaves(self.types, element, Vec::new(), &mut typed).ok()?;
        let scalars: Vec<Scalar> = typed.into_iter().map(|(_, s)| s).collect();
        let own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        let local = depends_only_on(parts.iter().cloned(), &own);
        (local && scalars.len() == parts.len()).then_some(Candidate { levels, element, parts, scalars })
    }

    /// Computes candidate `t` of `value` (expression `e`) into temporaries, once per equal
    /// value; returns how to read them.
    fn keep(&mut self, e: &Expr, value: Sym, t: Candidate, why: &str) -> Sym {
        if let Some((_, read)) = self.temporaries.iter().find(|(v, _)| *v == value) {
            return read.clone();
        }
        let comment = format!("%tmp{} = %{} (a temporary: {why})", self.kernels.len(), e.name);
        let reads = self.materialize(t.levels, &t.parts, &t.scalars, comment);
        let read = assemble(self.types, t.element, &mut reads.into_iter());
        self.temporaries.push((value, read.clone()));
        read
    }

    /// One kernel computing `parts` (the scalar leaves of a value over `levels`, of types
    /// `scalars`) into temporaries; returns their reads. A leaf that can be absent (a skipped
    /// neighbor, a position past a ragged run) gets a presence column too — 0, or the skip value
    /// −1 where absent, read back through the same guard as a neighbor-table skip; values
    /// absent at the same points ([`crate::sym::skip_conditions`]) share one.
    fn materialize(
        &mut self,
        levels: Vec<Level>,
        parts: &[Rc<SExpr>],
        scalars: &[Scalar],
        comment: String,
    ) -> Vec<Rc<SExpr>> {
        let name = format!("tmp{}", self.kernels.len());
        let coords = level_vars(&levels);
        let mut stores = Vec::new();
        let mut reads = Vec::new();
        for (i, (leaf, &scalar)) in parts.iter().zip(scalars).enumerate() {
            let mut temp = |suffix: &str, scalar: Scalar| {
                self.buffers.push(Buffer::temporary(format!("{name}.{i}{suffix}"), scalar, levels.clone(), vec![i]));
                self.buffers.len() - 1
            };
            let vb = temp("", scalar);
            stores.push(Store { buffer: vb, value: leaf.clone() });
            let read_value = Rc::new(SExpr::Load(Rc::new(Load { buffer: vb, coords: coords.clone() })));
            if !crate::fill::may_skip(leaf, &self.sparse) {
                reads.push(read_value);
                continue;
            }
            let skips = crate::sym::skip_conditions(leaf);
            let shared = skips.as_ref().and_then(|c| {
                self.presence
                    .iter()
                    .find(|(l, k, _)| *l == levels && k.len() == c.len() && c.iter().all(|x| k.contains(x)))
            });
            let pb = match shared {
                Some((_, _, pb)) => *pb,
                None => {
                    let pb = temp(".present", Scalar::I8);
                    let present = Rc::new(SExpr::Select(
                        Rc::new(SExpr::Present(leaf.clone())),
                        Rc::new(SExpr::Const(Sv::I8(0))),
                        Rc::new(SExpr::Const(Sv::I8(-1))),
                    ));
                    stores.push(Store { buffer: pb, value: present });
                    if let Some(c) = skips {
                        self.presence.push((levels.clone(), c, pb));
                    }
                    pb
                }
            };
            reads.push(Rc::new(SExpr::Guard {
                table: Rc::new(Load { buffer: pb, coords: coords.clone() }),
                source: strata_ir::Interval::new(0, 1),
                value: read_value,
            }));
        }
        self.kernels.push(Kernel::nest(comment, levels, stores));
        reads
    }

    /// The levels of a scatter kernel's operand (type `ty`) and of its result `e`'s temporary,
    /// both dense; the operand's values must depend on its own levels only (not on loops
    /// around the op).
    fn scatter_levels(
        &self,
        func: &Function,
        e: &Expr,
        ty: Handle<Type>,
        values: impl IntoIterator<Item = Rc<SExpr>>,
        what: &str,
    ) -> Result<(Vec<Level>, Vec<Level>), LowerError> {
        let dense = |ty| dense_levels(&split(self.types, ty).0);
        let operand = dense(ty);
        let own: Vec<&DimName> = operand.iter().map(|l| &l.name).collect();
        if !depends_only_on(values, &own) {
            return Err(LowerError::Unsupported {
                op: format!("{what} inside a loop over other dimensions"),
                func: func.name.clone(),
            });
        }
        Ok((operand.clone(), dense(e.ty)))
    }

    /// `coordinates` / `nonzeros` of `value` (type `ty`) along `dim` into a temporary over the
    /// result's levels (a [`crate::kernel::Scatter::Compact`] kernel over the other levels),
    /// read back with its presence: the runs' ends are skips.
    fn compact(
        &mut self,
        func: &Function,
        e: &Expr,
        value: Rc<SExpr>,
        ty: Handle<Type>,
        dim: &DimName,
        coordinates: bool,
    ) -> Result<Sym, LowerError> {
        let (operand, levels) = self.scatter_levels(func, e, ty, [value.clone()], "`coordinates` or `nonzeros`")?;
        let at = operand.iter().find(|l| &l.name == dim).expect("verified dimension");
        let name = format!("tmp{}", self.kernels.len());
        let scalar = self.element_scalar(e.ty);
        self.buffers.push(Buffer::temporary(format!("{name}.{}", e.name), scalar, levels.clone(), Vec::new()));
        let buffer = self.buffers.len() - 1;
        self.buffers.push(Buffer::temporary(format!("{name}.present"), Scalar::I8, levels.clone(), Vec::new()));
        let presence = self.buffers.len() - 1;
        let mut k = Kernel::nest(
            format!(
                "%{} = {} of the non-zeros along {dim}",
                e.name,
                if coordinates { "coordinates" } else { "values" }
            ),
            levels[..levels.len() - 1].to_vec(),
            Vec::new(),
        );
        // Over a sparse or ragged operand read directly, the loop visits its stored
        // coordinates along `dim` (unstored entries are zeros, never listed).
        if let SExpr::Sparse(r) = &*value {
            let level = r.coords.iter().position(|c| matches!(c, Coord::Var { dim: d, offset: 0 } if d == dim));
            let stored = level.filter(|&l| {
                !matches!(self.sparse[r.tensor].storage[l], crate::sparse::LevelStorage::Dense { .. })
                    && r.coords[..l].iter().all(|c| !matches!(c, Coord::Var { dim: d, .. } if d == dim))
            });
            if let Some(level) = stored {
                k.sets.push(crate::sparse::CoIteration {
                    var: dim.clone(),
                    range: at.interval,
                    set: crate::sparse::IterSet::Stored { read: r.clone(), level },
                    merge: false,
                });
            }
        }
        k.kind = KernelKind::Scatter(crate::kernel::Scatter::Compact {
            dim: Level::dense(dim.clone(), at.interval),
            value,
            element: self.element_scalar(ty),
            coordinates,
            buffer,
            presence,
        });
        self.kernels.push(k);
        let coords = level_vars(&levels);
        Ok(Sym::Scalar(Rc::new(SExpr::Guard {
            table: Rc::new(Load { buffer: presence, coords: coords.clone() }),
            source: strata_ir::Interval::new(0, 1),
            value: Rc::new(SExpr::Load(Rc::new(Load { buffer, coords }))),
        })))
    }

    /// `assemble` of `coordinates` and `values` (type `ty`, ragged) along `dim` into a zeroed
    /// temporary over the result's levels (a [`crate::kernel::Scatter::AddAt`] kernel over the
    /// operands' levels), read back as a dense value.
    fn assemble(
        &mut self,
        func: &Function,
        e: &Expr,
        coordinate: Rc<SExpr>,
        value: Rc<SExpr>,
        ty: Handle<Type>,
        dim: &DimName,
    ) -> Result<Sym, LowerError> {
        let (operand, levels) = self.scatter_levels(func, e, ty, [coordinate.clone(), value.clone()], "`assemble`")?;
        let target = levels.iter().position(|l| &l.name == dim).expect("verified dimension");
        let scalar = self.element_scalar(e.ty);
        self.buffers.push(Buffer::temporary(
            format!("tmp{}.{}", self.kernels.len(), e.name),
            scalar,
            levels.clone(),
            Vec::new(),
        ));
        let buffer = self.buffers.len() - 1;
        let mut k = Kernel::nest(
            format!("%{} = the values added at their coordinates along {dim}", e.name),
            operand,
            Vec::new(),
        );
        k.kind = KernelKind::Scatter(crate::kernel::Scatter::AddAt { coordinate, value, buffer, target });
        self.kernels.push(k);
        Ok(Sym::Scalar(Rc::new(SExpr::Load(Rc::new(Load { buffer, coords: level_vars(&levels) })))))
    }

    /// A neighbor table computed by the program (`e`, value `t`): one kernel stores it into a
    /// temporary over its own levels, absent entries as the skip value `-1` (an absent table
    /// entry is a missing neighbor, as in the interpreter); returns the load of it.
    fn materialize_table(
        &mut self,
        func: &Function,
        e: &Expr,
        t: Rc<SExpr>,
        op: &str,
    ) -> Result<Rc<SExpr>, LowerError> {
        let levels = split(self.types, e.ty).0;
        let own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        if !depends_only_on([t.clone()], &own) {
            return Err(LowerError::Unsupported {
                op: format!("{op} through a neighbor table computed inside a loop over other dimensions"),
                func: func.name.clone(),
            });
        }
        let scalar = self.element_scalar(e.ty);
        self.buffers.push(Buffer::temporary(
            format!("table{}.{}", self.kernels.len(), e.name),
            scalar,
            levels.clone(),
            Vec::new(),
        ));
        let b = self.buffers.len() - 1;
        let skip = Rc::new(SExpr::Const(Sv::from_i128(scalar, -1)));
        let value = Rc::new(SExpr::Select(Rc::new(SExpr::Present(t.clone())), t, skip));
        self.kernels.push(Kernel::nest(
            format!("%{} (a computed neighbor table, materialized)", e.name),
            levels.clone(),
            vec![Store { buffer: b, value }],
        ));
        let coords = level_vars(&levels);
        Ok(Rc::new(SExpr::Load(Rc::new(Load { buffer: b, coords }))))
    }

    /// One state register per scalar leaf of `element`, initialized from `init`, and the state
    /// as a value reading them (scans and tuple folds).
    fn state_registers(
        &mut self,
        init: &Literal,
        element: Handle<Type>,
        func: &Function,
    ) -> Result<(Vec<StateRegister>, Sym), LowerError> {
        let init_sym = self.literal_sym(init, element, func)?;
        Ok(self.state_registers_from(&init_sym, element))
    }

    /// [`Self::state_registers`] starting from a value (a fold's `init` tensor at the point).
    fn state_registers_from(&mut self, init: &Sym, element: Handle<Type>) -> (Vec<StateRegister>, Sym) {
        let mut typed = Vec::new();
        leaves(self.types, element, Vec::new(), &mut typed).expect("scalar leaves");
        let mut states = Vec::new();
        let mut acc_exprs = Vec::new();
        for (leaf, (_, scalar)) in init.leaves().into_iter().zip(typed) {
            let id = self.fresh_id();
            states.push((id, scalar, leaf));
            acc_exprs.push(Rc::new(SExpr::Acc(id)));
        }
        (states, assemble(self.types, element, &mut acc_exprs.into_iter()))
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

    /// A fold of payload `f` over `red` from `init`, with `elems` the operand elements.
    #[allow(clippy::too_many_arguments)]
    fn contraction(
        &mut self,
        func: &Function,
        e: &Expr,
        f: Handle<Function>,
        init: &strata_ir::Init,
        env: &[Option<Sym>],
        id: u32,
        red: Vec<(DimName, strata_ir::Interval)>,
        elems: Vec<Sym>,
    ) -> Result<Sym, LowerError> {
        let (_, leaf) = flat(self.types, e.ty).map_err(|w| self.unsupported_type(w, func))?;
        let Type::Scalar(scalar) = self.types[leaf] else {
            let init = match init {
                strata_ir::Init::Literal(l) => self.literal_sym(l, leaf, func)?,
                strata_ir::Init::Value(v) => env[v.index()].clone().expect("defined"),
            };
            return self.tuple_fold(func, e, f, &init, red, elems);
        };
        let inner = element_levels(self.types, e.ty);
        let init = match init {
            strata_ir::Init::Literal(l) => {
                Rc::new(SExpr::Const(Sv::from_literal(l, scalar).unwrap_or(Sv::zero(scalar))))
            }
            strata_ir::Init::Value(v) => env[v.index()].clone().expect("defined").scalar(),
        };
        let operands: Vec<Rc<SExpr>> = elems.iter().flat_map(Sym::leaves).collect();
        if inner.is_empty() {
            let mut call_args = vec![Sym::Scalar(Rc::new(SExpr::Acc(id)))];
            call_args.extend(elems);
            let body = self.inline(f, call_args)?.scalar();
            let body = crate::fill::only_where(&operands, body, scalar, &self.sparse);
            return Ok(Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: red, init, scalar, body })));
        }
        // Tensor elements: the fold runs per element position, which is exact when the payload
        // reads its accumulator at that same position only (e.g. `plus(%acc, product_2d(…))`).
        let at: Vec<Coord> = (0..inner.len()).map(|k| Coord::Var { dim: element_var(k), offset: 0 }).collect();
        let placeholder = acc_placeholder(id);
        let acc = Rc::new(SExpr::Load(Rc::new(Load { buffer: placeholder, coords: at.clone() })));
        let mut call_args = vec![Sym::Scalar(acc)];
        call_args.extend(elems);
        let body = self.inline_on_elements(f, call_args)?.scalar();
        let body = crate::sym::replace_loads(&body, &|l| {
            (l.buffer == placeholder && l.coords == at).then(|| Rc::new(SExpr::Acc(id)))
        });
        if reads(&body, placeholder) {
            return Err(LowerError::Unsupported {
                op: format!(
                    "@{} as a tile payload that reads its accumulator at other positions",
                    self.module.functions[f].name
                ),
                func: func.name.clone(),
            });
        }
        let body = crate::fill::only_where(&operands, body, scalar, &self.sparse);
        Ok(Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: red, init, scalar, body })))
    }

    /// A fold whose accumulator is a tuple (e.g. an argmax's `(value, index)`): a kernel of its
    /// own that runs the reduced dimension sequentially with one state register per field —
    /// the scan machinery, keeping only the final state — into temporaries the result reads.
    /// Several reduced dimensions run as one sequential loop over their row-major product. The
    /// operands and `init` (a constant, or a tensor read at the result's point) may depend on
    /// the result's and the reduced dimensions only.
    #[allow(clippy::too_many_arguments)]
    fn tuple_fold(
        &mut self,
        func: &Function,
        e: &Expr,
        f: Handle<Function>,
        init: &Sym,
        red: Vec<(DimName, strata_ir::Interval)>,
        elems: Vec<Sym>,
    ) -> Result<Sym, LowerError> {
        let refuse = |why: &str| LowerError::Unsupported {
            op: format!("a fold with a tuple accumulator {why}"),
            func: func.name.clone(),
        };
        let (dim, interval, elems) = match red.as_slice() {
            [(d, iv)] => (d.clone(), *iv, elems),
            // Several reduced dimensions: one sequential loop over their row-major product,
            // each coordinate computed from it (the interpreter's order).
            _ => {
                let t = crate::sym::fresh("f", self.fresh_id(), 0);
                let total: u64 = red.iter().map(|(_, iv)| iv.len()).product();
                let mut stride = total;
                let mut elems = elems;
                for (d, iv) in &red {
                    stride /= iv.len().max(1);
                    let at = index(Coord::Var { dim: t.clone(), offset: 0 });
                    let local = bin(
                        BinaryOp::Modulo,
                        bin(BinaryOp::Divides, at, ix(stride as i64)),
                        ix(iv.len().max(1) as i64),
                    );
                    let c = Coord::Computed {
                        value: local,
                        source: strata_ir::Interval::from_len(iv.len()),
                        offset: iv.start,
                    };
                    elems = elems.iter().map(|x| x.map(&mut |leaf| substitute(leaf, d, &c))).collect();
                }
                (t, strata_ir::Interval::from_len(total), elems)
            }
        };
        let (levels, element) = split(self.types, e.ty);
        let mut own: Vec<&DimName> = levels.iter().map(|l| &l.name).collect();
        if !depends_only_on(init.leaves(), &own) {
            return Err(refuse("inside a loop over other dimensions"));
        }
        own.push(&dim);
        if !depends_only_on(elems.iter().flat_map(Sym::leaves), &own) {
            return Err(refuse("inside a loop over other dimensions"));
        }
        let (states, state) = self.state_registers_from(init, element);
        let updates = self.guarded_steps(f, state, elems, &states)?;
        if updates.iter().any(crate::sparse::reads_sparse) {
            return Err(refuse("over sparse or ragged values"));
        }
        // The vector lanes number their blocks of 64 steps in 32 bits.
        let arg_best = arg_best(&states, &updates, &dim).filter(|_| interval.len() < 1 << 36);
        let comment = format!("%{} = fold of @{} with a tuple accumulator", e.name, self.module.functions[f].name);
        let dim = Level::dense(dim, interval);
        let scan = ScanLoop { arg_best, dim, forward: true, states, updates, last_only: true };
        self.push_state_kernel("fold", e, func, comment, levels, scan)
    }

    /// Inlines payload `f` on single elements `args`. Tensor elements (expressions over the
    /// [`element_var`]s and the enclosing loop variables) are handed to the payload as values
    /// over its parameters' own dimensions, and its result is renamed back; the enclosing loop
    /// variables are renamed out of the way meanwhile, as the names may coincide (`_0`, `_1`).
    fn inline_on_elements(&mut self, fh: Handle<Function>, args: Vec<Sym>) -> Result<Sym, LowerError> {
        let callee = &self.module.functions[fh];
        let types = self.types;
        let param_types: Vec<Handle<Type>> = callee.params.iter().map(|p| callee.exprs[*p].ty).collect();
        let result_type = callee.result();
        if param_types.iter().chain(&result_type).all(|&t| split(types, t).0.is_empty()) {
            return self.inline(fh, args);
        }
        let mut outer: Vec<DimName> = Vec::new();
        for x in args.iter().flat_map(Sym::leaves) {
            for v in crate::sym::free_vars(&x) {
                if !v.as_str().starts_with('$') && !outer.contains(&v) {
                    outer.push(v);
                }
            }
        }
        let uid = self.fresh_id();
        let temps: Vec<DimName> = (0..outer.len()).map(|i| crate::sym::fresh("o", uid, i)).collect();
        let var = |d: &DimName| Coord::Var { dim: d.clone(), offset: 0 };
        let mut passed = Vec::new();
        for (a, &pt) in args.iter().zip(&param_types) {
            let own = split(types, pt).0.iter().map(|l| var(&l.name)).collect();
            let (mut from, mut to) = element_exit(own, element_levels(types, pt).len());
            from.extend(outer.iter().cloned());
            to.extend(temps.iter().map(var));
            passed.push(self.rename_vars(a, &from, &to));
        }
        let r = self.inline(fh, passed)?;
        let (mut from, mut to) = match result_type {
            Some(rt) => {
                let names: Vec<DimName> = split(types, rt).0.iter().map(|l| l.name.clone()).collect();
                element_entry(&names, element_levels(types, rt).len())
            }
            None => (Vec::new(), Vec::new()),
        };
        from.extend(temps);
        to.extend(outer.iter().map(var));
        Ok(self.rename_vars(&r, &from, &to))
    }

    /// `dot_general` over a ring, as a fold over the contracting dimensions.
    #[allow(clippy::too_many_arguments)]
    fn dot(
        &mut self,
        func: &Function,
        e: &Expr,
        env: &[Option<Sym>],
        lhs: Value,
        rhs: Value,
        ring: strata_ir::RingRef,
        lc: &[u32],
        rc: &[u32],
        lb: &[u32],
        rb: &[u32],
    ) -> Result<Sym, LowerError> {
        use strata_ir::{BinaryOp, BuiltinRing, RingRef};
        let result = split(self.types, e.ty).0;
        let scalar = self.element_scalar(e.ty);
        let id = self.fresh_id();
        let (la, lr) = (split(self.types, func.exprs[lhs].ty).0, split(self.types, func.exprs[rhs].ty).0);
        let red: Vec<(DimName, strata_ir::Interval)> = lc
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                (crate::sym::fresh("c", id, k), strata_ir::Interval::from_len(la[i as usize].interval.len()))
            })
            .collect();
        let a_free: Vec<usize> =
            (0..la.len()).filter(|i| !lc.contains(&(*i as u32)) && !lb.contains(&(*i as u32))).collect();
        let b_free: Vec<usize> =
            (0..lr.len()).filter(|i| !rc.contains(&(*i as u32)) && !rb.contains(&(*i as u32))).collect();
        let target = |levels: &[Level],
                      contract: &[u32],
                      batch: &[u32],
                      free: &[usize],
                      free_base: usize|
         -> Vec<Coord> {
            (0..levels.len())
                .map(|i| {
                    let l = &levels[i];
                    if let Some(k) = contract.iter().position(|&c| c as usize == i) {
                        Coord::Var { dim: red[k].0.clone(), offset: l.interval.start }
                    } else if let Some(k) = batch.iter().position(|&c| c as usize == i) {
                        Coord::Var { dim: result[k].name.clone(), offset: l.interval.start - result[k].interval.start }
                    } else {
                        let k = free_base + free.iter().position(|&f| f == i).expect("free");
                        Coord::Var { dim: result[k].name.clone(), offset: l.interval.start - result[k].interval.start }
                    }
                })
                .collect()
        };
        let ta = target(&la, lc, lb, &a_free, lb.len());
        let tb = target(&lr, rc, rb, &b_free, lb.len() + a_free.len());
        let a = self.rename_sym(&env[lhs.index()].clone().expect("defined"), &la, &ta).scalar();
        let b = self.rename_sym(&env[rhs.index()].clone().expect("defined"), &lr, &tb).scalar();
        let acc = Rc::new(SExpr::Acc(id));
        let (zero, body) = match ring {
            RingRef::Builtin(r) => {
                let (add, mul, zero) = match r {
                    BuiltinRing::PlusTimes => (BinaryOp::Plus, BinaryOp::Multiplies, Sv::zero(scalar)),
                    BuiltinRing::MaxPlus => (BinaryOp::Maximum, BinaryOp::Plus, extreme(scalar, false)),
                    BuiltinRing::MinPlus => (BinaryOp::Minimum, BinaryOp::Plus, extreme(scalar, true)),
                    BuiltinRing::OrAnd => (BinaryOp::Or, BinaryOp::And, Sv::Bool(false)),
                };
                let prod = Rc::new(SExpr::Binary(mul, a, b, scalar));
                (zero, Rc::new(SExpr::Binary(add, acc, prod, scalar)))
            }
            RingRef::User(h) => {
                let r = &self.module.rings[h];
                let zero = Sv::from_literal(&r.zero, scalar).unwrap_or(Sv::zero(scalar));
                let (add, mul) = (r.add, r.mul);
                let prod = self.inline(mul, vec![Sym::Scalar(a), Sym::Scalar(b)])?;
                (zero, self.inline(add, vec![Sym::Scalar(acc), prod])?.scalar())
            }
        };
        Ok(Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: red, init: Rc::new(SExpr::Const(zero)), scalar, body })))
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
            Op::ShiftInit { arg: a, table } | Op::UnstructuredShift { arg: a, table, .. } => {
                let neighbor = match op {
                    Op::UnstructuredShift { neighbor, .. } => Coord::Const(*neighbor),
                    _ => {
                        let (levels, _) = split(self.types, e.ty);
                        let k = levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max().expect("verified");
                        Coord::Var { dim: DimName::neighbor_counter(k), offset: 0 }
                    }
                };
                let Sym::Scalar(t) = arg(table) else { return Err(unsupported()) };
                // A computed table (masked, composed) is materialized first: its entries are
                // loaded once per neighbor reference.
                let t = match &*t {
                    SExpr::Load(_) => t,
                    _ => self.materialize_table(func, &func.exprs[*table], t, op.name())?,
                };
                let SExpr::Load(tl) = &*t else { unreachable!("a table load") };
                let table_levels = &self.buffers[tl.buffer].levels;
                let tag = table_levels.iter().find(|l| l.name.table_source().is_some()).expect("verified table");
                let src = tag.name.table_source().expect("tag");
                let coords: Vec<Coord> = table_levels
                    .iter()
                    .zip(&tl.coords)
                    .map(|(l, c)| if l.name == tag.name { neighbor.clone() } else { c.clone() })
                    .collect();
                let load = Rc::new(Load { buffer: tl.buffer, coords });
                let (x_levels, _) = split(self.types, func.exprs[*a].ty);
                let source = x_levels.iter().find(|l| l.name == src).expect("verified source").interval;
                let with = Coord::Table { table: load.clone(), source, offset: 0 };
                let operand = self.extract_temporary(&func.exprs[*a], arg(a));
                operand.map(&mut |x| {
                    // A skipped neighbor makes the shifted value absent. Reading the table
                    // where the value reads its source coordinate carries the skip when the
                    // value's existence depends on that read; otherwise (a value constant along
                    // the source, a reduction's result, a select that may take the other
                    // branch) the value is guarded by the entry explicitly.
                    let shifted = substitute(x, &src, &with);
                    if crate::sym::presence_reads(x, &src) {
                        shifted
                    } else {
                        Rc::new(SExpr::Guard { table: load.clone(), source, value: shifted })
                    }
                })
            }
            Op::ShiftApply { arg: a, neighbor } => {
                let (levels, _) = split(self.types, func.exprs[*a].ty);
                let k = levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max().expect("verified");
                arg(a).map(&mut |x| substitute(x, &DimName::neighbor_counter(k), &Coord::Const(*neighbor)))
            }
            Op::CanDeref { arg: a } => Sym::Scalar(Rc::new(SExpr::Present(arg(a).leaves()[0].clone()))),
            Op::Reduce { func: f, args, init } => {
                let k = args
                    .iter()
                    .filter_map(|x| {
                        split(self.types, func.exprs[*x].ty)
                            .0
                            .iter()
                            .filter_map(|l| l.name.neighbor_counter_index())
                            .max()
                    })
                    .max()
                    .expect("verified");
                let counter = DimName::neighbor_counter(k);
                // Broadcasting by name intersects the operands' neighbor intervals: the fold
                // visits the neighbors every operand has (none when they do not overlap).
                let range = args
                    .iter()
                    .filter_map(|x| split(self.types, func.exprs[*x].ty).0.into_iter().find(|l| l.name == counter))
                    .map(|l| l.interval)
                    .reduce(strata_ir::Interval::intersect)
                    .expect("verified");
                // A tuple accumulator (e.g. the smallest neighbor and which it is): a fold kernel
                // of its own, skipping absent neighbors as the scalar fold does.
                let element = split(self.types, e.ty).1;
                // The fold binds a variable of its own, never the user's `NB_k`: a reduction
                // nested in another's operand (V2E of an E2V sum) reads the outer counter
                // through its table while looping over its own, so the two must not share a
                // name. It is named by the fold's height (one more than the folds nested in its
                // operands): a fold is always higher than every fold inside it, so no
                // substitution captures, and equal sibling folds (the nabla's two components)
                // keep equal loops, which the emitter shares.
                let height = args.iter().flat_map(|a| arg(a).leaves()).map(|x| crate::sym::fold_height(&x)).max();
                let var = crate::sym::fresh("n", height.unwrap_or(0) + 1, 0);
                let bound = Coord::Var { dim: var.clone(), offset: 0 };
                let operand = |a: &Value| arg(a).map(&mut |x| substitute(x, &counter, &bound));
                if matches!(self.types[element], Type::Tuple(_)) {
                    let init = self.literal_sym(init, element, func)?;
                    let elems = args.iter().map(operand).collect();
                    return self.tuple_fold(func, e, *f, &init, vec![(var, range)], elems);
                }
                let scalar = self.element_scalar(e.ty);
                let Some(init) = Sv::from_literal(init, scalar) else {
                    return Err(self.unsupported_type("this reduction's initial value", func));
                };
                let id = self.fresh_id();
                let operands: Vec<Rc<SExpr>> = args.iter().flat_map(|a| operand(a).leaves()).collect();
                let mut call_args = vec![Sym::Scalar(Rc::new(SExpr::Acc(id)))];
                call_args.extend(args.iter().map(operand));
                let body = self.inline(*f, call_args)?.scalar();
                // A skipped neighbor is skipped for the whole step, whatever the payload reads.
                let body = crate::fill::only_where(&operands, body, scalar, &self.sparse);
                Sym::Scalar(Rc::new(SExpr::Reduce {
                    id,
                    vars: vec![(var, range)],
                    init: Rc::new(SExpr::Const(init)),
                    scalar,
                    body,
                }))
            }
            Op::Subset { arg: a, .. } | Op::AddDim { arg: a, .. } => arg(a),
            // The dropped dimension is read at its one position.
            Op::DropDim { arg: a, dim } => {
                let levels = split(self.types, func.exprs[*a].ty).0;
                // Kept levels keep their order under the result's names.
                let mut result = split(self.types, e.ty).0.into_iter();
                let to: Vec<Coord> = levels
                    .iter()
                    .map(|l| {
                        if &l.name == dim {
                            Coord::Const(l.interval.start)
                        } else {
                            Coord::Var { dim: result.next().expect("one per kept level").name, offset: 0 }
                        }
                    })
                    .collect();
                self.rename_sym(&arg(a), &levels, &to)
            }
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
            Op::CollapseShape { arg: a, groups, .. } => {
                let (result, levels) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
                let mut to = vec![Coord::Const(0); levels.len()];
                for (gi, g) in groups.iter().enumerate() {
                    let r = &result[gi];
                    if let [m] = g.as_slice() {
                        let l = &levels[*m as usize];
                        to[*m as usize] =
                            Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start };
                        continue;
                    }
                    // Position within the merged dimension, split back into the group's members.
                    let p = sub(index(Coord::Var { dim: r.name.clone(), offset: 0 }), ix(r.interval.start));
                    for (j, &m) in g.iter().enumerate() {
                        let l = &levels[m as usize];
                        let stride: i64 =
                            g[j + 1..].iter().map(|&k| levels[k as usize].interval.len() as i64).product();
                        let len = l.interval.len() as i64;
                        let local = bin(
                            strata_ir::BinaryOp::Modulo,
                            bin(strata_ir::BinaryOp::Divides, p.clone(), ix(stride)),
                            ix(len.max(1)),
                        );
                        to[m as usize] = Coord::Computed {
                            value: local,
                            source: strata_ir::Interval::from_len(len as u64),
                            offset: l.interval.start,
                        };
                    }
                }
                self.rename_sym(&arg(a), &levels, &to)
            }
            Op::ExpandShape { arg: a, groups, .. } => {
                let (result, levels) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
                let mut to = Vec::new();
                for (l, g) in levels.iter().zip(groups) {
                    if let [r] = g.as_slice() {
                        let r = &result[*r as usize];
                        to.push(Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start });
                        continue;
                    }
                    // Linearize the group's coordinates.
                    let mut lin = ix(0);
                    for (j, &r) in g.iter().enumerate() {
                        let rl = &result[r as usize];
                        let stride: i64 =
                            g[j + 1..].iter().map(|&k| result[k as usize].interval.len() as i64).product();
                        let pos = sub(index(Coord::Var { dim: rl.name.clone(), offset: 0 }), ix(rl.interval.start));
                        lin = add(lin, mul(pos, ix(stride)));
                    }
                    to.push(Coord::Computed {
                        value: lin,
                        source: strata_ir::Interval::from_len(l.interval.len()),
                        offset: l.interval.start,
                    });
                }
                self.rename_sym(&arg(a), &levels, &to)
            }
            Op::Get { arg: a, indices } => {
                let levels = split(self.types, func.exprs[*a].ty).0;
                let mut from: Vec<DimName> = levels.iter().map(|l| l.name.clone()).collect();
                let mut to: Vec<Coord> = levels
                    .iter()
                    .zip(indices)
                    .map(|(l, i)| Coord::Computed { value: arg(i).scalar(), source: l.interval, offset: 0 })
                    .collect();
                // A tensor element becomes a value over the result's own dimensions.
                let own = level_vars(&split(self.types, e.ty).0);
                let (ef, et) = element_exit(own, element_levels(self.types, e.ty).len());
                from.extend(ef);
                to.extend(et);
                self.rename_vars(&arg(a), &from, &to)
            }
            Op::Set { arg: a, indices, value } => {
                let levels = split(self.types, func.exprs[*a].ty).0;
                // The element at the indices (checked against the intervals) is replaced.
                let mut hit = Rc::new(SExpr::Const(Sv::Bool(true)));
                for (l, i) in levels.iter().zip(indices) {
                    let here = index(Coord::Var { dim: l.name.clone(), offset: 0 });
                    let at = index(Coord::Computed { value: arg(i).scalar(), source: l.interval, offset: 0 });
                    let eq = Rc::new(SExpr::Binary(strata_ir::BinaryOp::Eq, here, at, Scalar::Index));
                    hit = Rc::new(SExpr::Binary(strata_ir::BinaryOp::And, hit, eq, Scalar::Bool));
                }
                // A tensor element is stored over the element variables.
                let vt = func.exprs[*value].ty;
                let names: Vec<DimName> = split(self.types, vt).0.iter().map(|l| l.name.clone()).collect();
                let (from, to) = element_entry(&names, element_levels(self.types, vt).len());
                let new_value = self.rename_vars(&arg(value), &from, &to);
                let (old, new) = (arg(a).leaves(), new_value.leaves());
                let mut sel =
                    old.iter().zip(&new).map(|(o, n)| Rc::new(SExpr::Select(hit.clone(), n.clone(), o.clone())));
                assemble(self.types, split(self.types, e.ty).1, &mut sel)
            }
            Op::Gather { source, indices, coordinates, mode } => {
                // A copy's slice dimensions follow its batch dimensions; a view's slices are its
                // tensor elements (their dimensions are the element variables).
                let mut result = split(self.types, e.ty).0;
                if *mode == strata_ir::Mode::View {
                    let inner = element_levels(self.types, e.ty);
                    result.extend(inner.iter().enumerate().map(|(k, l)| Level { name: element_var(k), ..l.clone() }));
                }
                let (src, idx) =
                    (split(self.types, func.exprs[*source].ty).0, split(self.types, func.exprs[*indices].ty).0);
                let nb = idx.len() - 1;
                // The index tensor read at (batch, k).
                let idx_at = |this: &mut Self, k: usize| -> Rc<SExpr> {
                    let mut to: Vec<Coord> = idx[..nb]
                        .iter()
                        .zip(&result)
                        .map(|(l, r)| Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start })
                        .collect();
                    to.push(Coord::Const(idx[nb].interval.start + k as i64));
                    this.rename_sym(&arg(indices), &idx, &to).scalar()
                };
                let mut slice = nb;
                let mut to = Vec::new();
                for (d, l) in src.iter().enumerate() {
                    match coordinates.iter().position(|&c| c as usize == d) {
                        Some(k) => to.push(Coord::Computed { value: idx_at(self, k), source: l.interval, offset: 0 }),
                        None => {
                            let r = &result[slice];
                            slice += 1;
                            to.push(Coord::Var { dim: r.name.clone(), offset: l.interval.start - r.interval.start });
                        }
                    }
                }
                let value = self.rename_sym(&arg(source), &src, &to);
                // Every index is checked, also where the source does not depend on it (a
                // constant or broadcast source reads no element at that coordinate): the
                // always-true `strata_ix(i) >= MIN` keeps the check's side effect.
                let checked = to
                    .iter()
                    .filter(|c| matches!(c, Coord::Computed { .. }))
                    .map(|c| {
                        Rc::new(SExpr::Binary(
                            BinaryOp::GreaterEqual,
                            Rc::new(SExpr::Index(c.clone())),
                            Rc::new(SExpr::Const(Sv::Index(i64::MIN))),
                            Scalar::Index,
                        ))
                    })
                    .reduce(|a, b| Rc::new(SExpr::Binary(BinaryOp::And, a, b, Scalar::Bool)));
                match checked {
                    Some(ok) => {
                        let mut leaves =
                            value.leaves().into_iter().map(|l| Rc::new(SExpr::Select(ok.clone(), l.clone(), l)));
                        assemble(self.types, split(self.types, e.ty).1, &mut leaves)
                    }
                    None => value,
                }
            }
            // A view's values are slice tensors: their element variables are the slice dimensions.
            Op::Scatter { source, dest, indices, coordinates, mode: _ } => {
                let dst = split(self.types, func.exprs[*dest].ty).0;
                let src = flat(self.types, func.exprs[*source].ty).map_err(|w| self.unsupported_type(w, func))?.0;
                let idx = split(self.types, func.exprs[*indices].ty).0;
                let nb = idx.len() - 1;
                let id = self.fresh_id();
                let batch: Vec<(DimName, strata_ir::Interval)> = (0..nb)
                    .map(|k| (crate::sym::fresh("s", id, k), strata_ir::Interval::from_len(idx[k].interval.len())))
                    .collect();
                // Does batch entry `b` address this point of `dest`? (Every index is checked.)
                let mut hit = Rc::new(SExpr::Const(Sv::Bool(true)));
                for (k, &c) in coordinates.iter().enumerate() {
                    let mut to: Vec<Coord> = idx[..nb]
                        .iter()
                        .zip(&batch)
                        .map(|(l, b)| Coord::Var { dim: b.0.clone(), offset: l.interval.start })
                        .collect();
                    to.push(Coord::Const(idx[nb].interval.start + k as i64));
                    let at = self.rename_sym(&arg(indices), &idx, &to).scalar();
                    let l = &dst[c as usize];
                    let at = index(Coord::Computed { value: at, source: l.interval, offset: 0 });
                    let here = index(Coord::Var { dim: l.name.clone(), offset: 0 });
                    let eq = Rc::new(SExpr::Binary(strata_ir::BinaryOp::Eq, here, at, Scalar::Index));
                    hit = Rc::new(SExpr::Binary(strata_ir::BinaryOp::And, hit, eq, Scalar::Bool));
                }
                // The scattered value: batch dims from the batch loop, slice dims from the point.
                let slice_dims: Vec<&Level> = dst
                    .iter()
                    .enumerate()
                    .filter(|(d, _)| !coordinates.contains(&(*d as u32)))
                    .map(|(_, l)| l)
                    .collect();
                let to: Vec<Coord> = src
                    .iter()
                    .enumerate()
                    .map(|(d, l)| {
                        if d < nb {
                            Coord::Var { dim: batch[d].0.clone(), offset: l.interval.start }
                        } else {
                            let t = slice_dims[d - nb];
                            Coord::Var { dim: t.name.clone(), offset: l.interval.start - t.interval.start }
                        }
                    })
                    .collect();
                let val = self.rename_sym(&arg(source), &src, &to).scalar();
                let scalar = self.element_scalar(e.ty);
                let acc = Rc::new(SExpr::Acc(id));
                let body = Rc::new(SExpr::Select(hit, val, acc));
                let init = arg(dest).scalar();
                Sym::Scalar(Rc::new(SExpr::Reduce { id, vars: batch, init, scalar, body }))
            }
            Op::Concat { args, dim, .. } => {
                let result = split(self.types, e.ty).0;
                let r = result.iter().find(|l| &l.name == dim).expect("verified").clone();
                let positional = dim.position().is_some();
                let mut pieces = Vec::new();
                let mut next = r.interval.start;
                for x in args {
                    let levels = split(self.types, func.exprs[*x].ty).0;
                    let pl = levels.iter().find(|l| &l.name == dim).expect("verified").interval;
                    let start = if positional { next } else { pl.start };
                    next = start + pl.len() as i64;
                    let shifted = arg(x).map(&mut |v| shift(v, dim, pl.start - start));
                    pieces.push((start + pl.len() as i64, shifted));
                }
                // The piece holding the coordinate, chosen lazily (untaken pieces are not read).
                let (_, mut out) = pieces.pop().expect("at least one piece");
                while let Some((stop, p)) = pieces.pop() {
                    let cond = Rc::new(SExpr::Binary(
                        strata_ir::BinaryOp::Less,
                        index(Coord::Var { dim: dim.clone(), offset: 0 }),
                        ix(stop),
                        Scalar::Index,
                    ));
                    let (pl, ol) = (p.leaves(), out.leaves());
                    let mut sel =
                        pl.iter().zip(&ol).map(|(a, b)| Rc::new(SExpr::Select(cond.clone(), a.clone(), b.clone())));
                    out = assemble(self.types, split(self.types, e.ty).1, &mut sel);
                }
                out
            }
            Op::Map { func: f, args, .. } => {
                let args = args.iter().map(arg).collect();
                self.inline_on_elements(*f, args)?
            }
            Op::Pack { arg: a, tile, layout, padding } => {
                let (result, levels) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
                let deeper = element_levels(self.types, func.exprs[*a].ty).len();
                let tile_levels = split(self.types, split(self.types, e.ty).1).0;
                let read = crate::nested::pack_read(&result, &tile_levels, &levels, deeper, tile, layout);
                let s = scalar_of(a);
                let x = self.rename_vars(&arg(a), &read.from, &read.to);
                match (read.inside, padding, x) {
                    (None, _, x) => x,
                    (Some(inside), Some(pad), Sym::Scalar(x)) => Sym::Scalar(
                        crate::affine::padded(inside, x, pad, s)
                            .ok_or_else(|| self.unsupported_type("padded tiles of tuples", func))?,
                    ),
                    _ => return Err(self.unsupported_type("padded tiles of tuples or tensors", func)),
                }
            }
            Op::Unpack { arg: a, layout, shape: _ } => {
                let (levels, outer) = (split(self.types, e.ty).0, split(self.types, func.exprs[*a].ty).0);
                let tile = split(self.types, func.exprs[*a].ty).1;
                let tile_levels = split(self.types, tile).0;
                let deeper = element_levels(self.types, tile).len();
                let (from, to) = crate::nested::unpack_read(&levels, &outer, &tile_levels, deeper, layout);
                self.rename_vars(&arg(a), &from, &to)
            }
            // Placement does not change values; the single-process backend computes in place.
            Op::ToDevice { arg: a, .. } | Op::Distribute { arg: a, .. } | Op::Collect { arg: a } => arg(a),
            Op::MapReduce { func: f, args, init, subscripts } => {
                let result = split(self.types, e.ty).0;
                let letters = subscripts.loop_letters();
                let n_out = subscripts.output.len();
                let id = self.fresh_id();
                // Each letter's loop variable and range (positional offsets for reductions).
                let mut extent = vec![0u64; letters.len()];
                for (subs, x) in subscripts.inputs.iter().zip(args) {
                    for (c, l) in subs.iter().zip(split(self.types, func.exprs[*x].ty).0) {
                        extent[letters.iter().position(|y| y == c).expect("letter")] = l.interval.len();
                    }
                }
                let red: Vec<(DimName, strata_ir::Interval)> = (n_out..letters.len())
                    .map(|k| (crate::sym::fresh("r", id, k), strata_ir::Interval::from_len(extent[k])))
                    .collect();
                let mut elems = Vec::new();
                for (subs, x) in subscripts.inputs.iter().zip(args) {
                    let levels = split(self.types, func.exprs[*x].ty).0;
                    let to: Vec<Coord> = subs
                        .iter()
                        .zip(&levels)
                        .map(|(c, l)| {
                            let k = letters.iter().position(|y| y == c).expect("letter");
                            if k < n_out {
                                Coord::Var {
                                    dim: result[k].name.clone(),
                                    offset: l.interval.start - result[k].interval.start,
                                }
                            } else {
                                Coord::Var { dim: red[k - n_out].0.clone(), offset: l.interval.start }
                            }
                        })
                        .collect();
                    elems.push(self.rename_sym(&Sym::Scalar(arg(x).scalar()), &levels, &to));
                }
                self.contraction(func, e, *f, init, env, id, red, elems)?
            }
            Op::MapReduceAff { func: f, args, init, domain, outputs, shape, out_map, maps, padding } => {
                let ro = *outputs as usize;
                let result = split(self.types, e.ty).0;
                let unsupported_map = || LowerError::Unsupported {
                    op: "map_reduce_aff with this access map".into(),
                    func: func.name.clone(),
                };
                // The write map must send each output loop to one result dimension, covering it.
                let mut loop_of_result = vec![usize::MAX; ro];
                for (r, ex) in out_map.results.iter().enumerate() {
                    match ex.terms.as_slice() {
                        [(d, 1)]
                            if ex.constant == 0
                                && ex.is_linear()
                                && (*d as usize) < ro
                                && domain[*d as usize] == shape[r] =>
                        {
                            loop_of_result[r] = *d as usize
                        }
                        _ => return Err(unsupported_map()),
                    }
                }
                let id = self.fresh_id();
                let red: Vec<(DimName, strata_ir::Interval)> = (ro..domain.len())
                    .map(|d| (crate::sym::fresh("a", id, d), strata_ir::Interval::from_len(domain[d])))
                    .collect();
                // Loop d's value, counted from 0.
                let var = |d: u32| -> Result<Rc<SExpr>, LowerError> {
                    let d = d as usize;
                    if d < ro {
                        let r = loop_of_result.iter().position(|&x| x == d).ok_or_else(unsupported_map)?;
                        Ok(sub(
                            index(Coord::Var { dim: result[r].name.clone(), offset: 0 }),
                            ix(result[r].interval.start),
                        ))
                    } else {
                        Ok(index(Coord::Var { dim: red[d - ro].0.clone(), offset: 0 }))
                    }
                };
                let mut elems = Vec::new();
                for (m, x) in maps.iter().zip(args) {
                    let levels = split(self.types, func.exprs[*x].ty).0;
                    let mut to = Vec::new();
                    let mut inside = None;
                    for (ex, l) in m.results.iter().zip(&levels) {
                        if padding.is_some() {
                            // Reads may leave the operand: clamp them in, select the padding.
                            let (here, clamped) = crate::affine::inside_and_clamped(
                                crate::affine::affine_value(ex, &var)?,
                                l.interval.len(),
                            );
                            inside = Some(crate::affine::and(inside, here));
                            to.push(Coord::Computed {
                                value: clamped,
                                source: strata_ir::Interval::from_len(l.interval.len()),
                                offset: l.interval.start,
                            });
                            continue;
                        }
                        to.push(match ex.terms.as_slice() {
                            [] if ex.is_linear() => Coord::Const(l.interval.start + ex.constant),
                            [(d, 1)] if ex.is_linear() && (*d as usize) < ro => {
                                let r = loop_of_result
                                    .iter()
                                    .position(|&x| x == *d as usize)
                                    .ok_or_else(unsupported_map)?;
                                Coord::Var {
                                    dim: result[r].name.clone(),
                                    offset: l.interval.start + ex.constant - result[r].interval.start,
                                }
                            }
                            [(d, 1)] if ex.is_linear() => Coord::Var {
                                dim: red[*d as usize - ro].0.clone(),
                                offset: l.interval.start + ex.constant,
                            },
                            // A general access (linear, or with floordiv / mod): computed (and
                            // checked) per point.
                            _ => Coord::Computed {
                                value: add(crate::affine::affine_value(ex, &var)?, ix(l.interval.start)),
                                source: l.interval,
                                offset: 0,
                            },
                        });
                    }
                    let read = self.rename_sym(&Sym::Scalar(arg(x).scalar()), &levels, &to);
                    elems.push(match (inside, padding) {
                        (Some(inside), Some(p)) => {
                            let s = self.element_scalar(func.exprs[*x].ty);
                            Sym::Scalar(
                                crate::affine::padded(inside, read.scalar(), p, s)
                                    .ok_or_else(|| self.unsupported_type("padding of tuple elements", func))?,
                            )
                        }
                        _ => read,
                    });
                }
                self.contraction(func, e, *f, init, env, id, red, elems)?
            }
            Op::DotGeneral { lhs, rhs, ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
                self.dot(func, e, env, *lhs, *rhs, *ring, lhs_contract, rhs_contract, lhs_batch, rhs_batch)?
            }
            Op::Product2d { lhs, rhs, ring } => self.dot(func, e, env, *lhs, *rhs, *ring, &[1], &[0], &[], &[])?,
            Op::Transpose { arg: a, perm, kind } => {
                let result = split(self.types, e.ty).0;
                let levels = split(self.types, func.exprs[*a].ty).0;
                let mut to = vec![Coord::Const(0); levels.len()];
                for (i, &p) in kind.as_gather(perm).iter().enumerate() {
                    let p = p as usize;
                    to[p] = Coord::Var {
                        dim: result[i].name.clone(),
                        offset: levels[p].interval.start - result[i].interval.start,
                    };
                }
                self.rename_sym(&arg(a), &levels, &to)
            }
            Op::Broadcast { arg: a, .. } | Op::BroadcastInDim { arg: a, .. } => {
                let result = split(self.types, e.ty).0;
                let levels = split(self.types, func.exprs[*a].ty).0;
                let dims: Vec<usize> = match op {
                    Op::BroadcastInDim { dims, .. } => dims.iter().map(|&d| d as usize).collect(),
                    _ => (0..levels.len()).collect(),
                };
                let to: Vec<Coord> = levels
                    .iter()
                    .zip(&dims)
                    .map(|(l, &d)| {
                        if l.interval.len() == 1 && result[d].interval.len() != 1 {
                            Coord::Const(l.interval.start)
                        } else {
                            Coord::Var {
                                dim: result[d].name.clone(),
                                offset: l.interval.start - result[d].interval.start,
                            }
                        }
                    })
                    .collect();
                self.rename_sym(&arg(a), &levels, &to)
            }
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
}

impl LowerOptions {
    /// The options for this machine ([`crate::machine::cache_bytes`]).
    pub fn for_this_machine() -> LowerOptions {
        LowerOptions { cache_bytes: crate::machine::cache_bytes() }
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
    let mut program =
        KernelProgram { entry: func.name.clone(), buffers: l.buffers, kernels: l.kernels, sparse: l.sparse };
    crate::pipeline::run(&mut program, observe)?;
    Ok(program)
}

/// Whether every expression of `exprs` reads loop variables of `own` only (so it can be
/// computed once over that domain, in a kernel of its own).
fn depends_only_on(exprs: impl IntoIterator<Item = Rc<SExpr>>, own: &[&DimName]) -> bool {
    exprs.into_iter().all(|x| crate::sym::free_vars(&x).iter().all(|v| own.contains(&v)))
}

/// The zero of `(max, +)` (`min = false`: the lowest value) or `(min, +)` (the highest).
fn extreme(s: Scalar, highest: bool) -> Sv {
    if s.is_float() {
        return Sv::from_f64(s, if highest { f64::INFINITY } else { f64::NEG_INFINITY });
    }
    let (lo, hi): (i128, i128) = match s {
        Scalar::I8 => (i8::MIN.into(), i8::MAX.into()),
        Scalar::I16 => (i16::MIN.into(), i16::MAX.into()),
        Scalar::I32 => (i32::MIN.into(), i32::MAX.into()),
        Scalar::I64 | Scalar::Index => (i64::MIN.into(), i64::MAX.into()),
        Scalar::U8 => (0, u8::MAX.into()),
        Scalar::U16 => (0, u16::MAX.into()),
        Scalar::U32 => (0, u32::MAX.into()),
        Scalar::U64 => (0, u64::MAX.into()),
        _ => (0, 0),
    };
    Sv::from_i128(s, if highest { hi } else { lo })
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
