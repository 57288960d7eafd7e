//! Expressions: the emitter of one program (buffers, locals, literals) and the C of scalar expressions, loads, folds and casts.

use super::*;
use crate::sym::{for_each_coord_part, for_each_part, Part};

#[derive(Clone)]
pub(super) struct Emitter<'p> {
    pub(super) program: &'p KernelProgram,
    /// The schedule of the kernel being emitted.
    pub(super) schedule: &'p crate::schedule::Schedule,
    /// Strip-local buffers of the kernel being emitted (see `ScanKernel::local`).
    pub(super) local: Option<Local>,
    /// Loops of the kernel being emitted that visit stored coordinates (`Kernel::sets`).
    pub(super) sets: &'p [CoIteration],
    /// Values the kernel being emitted stages in rolling windows (`Nest::windows`).
    pub(super) windows: &'p [Window],
    /// Table entries bound to variables at the current statement ([`tables`]).
    pub(super) entries: Vec<tables::BoundEntry>,
    /// The next bound entry's number, unique in the kernel's function.
    pub(super) next_entry: Rc<std::cell::Cell<usize>>,
    /// The input tables (buffer, source interval) every entry of which a run checks before
    /// the kernels ([`KernelProgram::input_tables`], `exec::Buffers::new`): their entries are
    /// not checked again where read ([`tables`]).
    pub(super) prechecked: Rc<[(usize, strata_ir::Interval)]>,
    /// Set when the kernel's C reads memory under a condition (a `select` branch, an unstored
    /// sparse entry): the kernel is then compiled without GCC's loop if-conversion
    /// (see `emit_program`).
    pub(super) conditional_reads: Rc<std::cell::Cell<bool>>,
}

/// Whether `e` reads memory (a buffer, sparse storage, a neighbor table, a fold's operands).
pub(super) fn reads_memory(e: &Rc<SExpr>) -> bool {
    fn part(p: Part, found: &mut bool) {
        match p {
            Part::Expr(e) => {
                *found |=
                    matches!(&**e, SExpr::Load(_) | SExpr::Sparse(_) | SExpr::Guard { .. } | SExpr::Reduce { .. });
                if !*found {
                    for_each_part(e, &mut |q| part(q, found));
                }
            }
            Part::Coord(c) => {
                *found |= matches!(c, Coord::Table { .. });
                for_each_coord_part(c, &mut |q| part(q, found));
            }
        }
    }
    let mut found = false;
    part(Part::Expr(e), &mut found);
    found
}

/// Whether evaluating `e` where a `select` does not choose it cannot fail or read out of bounds,
/// so that both branches may be computed before the choice: constants, loop coordinates,
/// accumulators, loads at loop variables plus constants (in bounds over the loops' whole
/// ranges: the kernel verifier checks that wherever no enclosing condition narrows a loop
/// variable, and a select whose condition reads an index is never speculated), and arithmetic
/// on them that cannot fail (no integer division but by a positive constant, no integer power:
/// the C sets the run's error for a zero divisor or a negative exponent).
fn speculable(e: &SExpr) -> bool {
    match e {
        SExpr::Const(_) | SExpr::Absent(_) | SExpr::Acc(_) => true,
        SExpr::Index(c) => matches!(c, Coord::Var { .. } | Coord::Const(_)),
        SExpr::Load(l) => l.coords.iter().all(|c| matches!(c, Coord::Var { .. } | Coord::Const(_))),
        SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) => speculable(a),
        SExpr::Binary(BinaryOp::Divides | BinaryOp::Modulo, a, b, s) if !s.is_float() => {
            matches!(&**b, SExpr::Const(v) if v.as_i128() > 0) && speculable(a)
        }
        // A negative integer exponent is a run-time error.
        SExpr::Binary(BinaryOp::Power, _, _, s) if !s.is_float() => false,
        SExpr::Binary(_, a, b, _) => speculable(a) && speculable(b),
        SExpr::Select(c, t, f) => !reads_index(c) && speculable(c) && speculable(t) && speculable(f),
        SExpr::Sparse(_) | SExpr::Guard { .. } | SExpr::Reduce { .. } | SExpr::Present(_) => false,
    }
}

/// Whether `e` reads a coordinate as a value (a condition that may bound a loop variable: a
/// concatenation's pieces choose by one, and their branches read only where it holds).
fn reads_index(e: &Rc<SExpr>) -> bool {
    let mut found = matches!(&**e, SExpr::Index(_));
    if !found {
        for_each_part(e, &mut |p| {
            if let Part::Expr(x) = p {
                found |= reads_index(x);
            }
        });
    }
    found
}

/// Where a kernel's strip-local buffers live: `loc{b}[(scan - start) * width + (column - jb)]`.
#[derive(Clone)]
pub(super) struct Local {
    pub(super) buffers: Vec<usize>,
    pub(super) scan: (String, i64),
    /// The strip's column variable, when the kernel is strip-mined.
    pub(super) column: Option<String>,
}

/// The C loop variable of a dimension (`d_I`), or of a fresh variable (`f_…`, never clashing).
pub(super) fn var(name: &str) -> String {
    let clean =
        |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect::<String>();
    match name.strip_prefix('$') {
        Some(rest) => format!("f_{}", clean(rest)),
        None => format!("d_{}", clean(name)),
    }
}

pub(super) fn literal(v: Sv) -> String {
    if let Some(slot) = super::extents::constant(v) {
        return slot;
    }
    match v {
        Sv::Bool(b) => (b as u8).to_string(),
        Sv::F64(x) => float_lit(x, ""),
        Sv::F32(x) => float_lit(x as f64, "f"),
        Sv::C64(z) => format!("CMPLXF({}, {})", float_lit(z.re as f64, "f"), float_lit(z.im as f64, "f")),
        Sv::C128(z) => format!("CMPLX({}, {})", float_lit(z.re, ""), float_lit(z.im, "")),
        Sv::I64(x) | Sv::Index(x) => {
            if x == i64::MIN {
                "INT64_MIN".into()
            } else {
                format!("INT64_C({x})")
            }
        }
        Sv::U64(x) => format!("UINT64_C({x})"),
        other => format!("(({}){})", c_type(other.scalar()), other.as_i128()),
    }
}

pub(super) fn float_lit(x: f64, suffix: &str) -> String {
    // `<math.h>`'s NAN and INFINITY, spelled as glibc defines them: without the header.
    if x.is_nan() {
        "__builtin_nanf(\"\")".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "__builtin_inff()".into()
        } else {
            "(-__builtin_inff())".into()
        }
    } else {
        format!("{x:.17e}{suffix}")
    }
}

impl Emitter<'_> {
    /// A value computed by statements: `stmts` (each ending in `;`), then `value`. In C a GNU
    /// statement expression; in CUDA, whose NVRTC has no GNU extensions, an immediately invoked
    /// lambda capturing by reference (inlined: the same code).
    pub(super) fn block(&self, stmts: &str, value: &str) -> String {
        match self.program.gpu {
            None => format!("({{ {stmts} {value}; }})"),
            Some(_) => format!("([&] {{ {stmts} return {value}; }}())"),
        }
    }

    pub(super) fn buffer(&self, b: usize) -> &Buffer {
        &self.program.buffers[b]
    }

    pub(super) fn coord(&self, c: &Coord) -> String {
        match c {
            Coord::Var { dim, offset } => super::extents::shifted(var(dim.as_str()), *offset),
            // A constant coordinate is printed as an extent (often it is one: a window's first
            // row, an interval's last point).
            Coord::Const(k) => match ext(*k) {
                e if e.starts_with('x') => e,
                _ => format!("INT64_C({k})"),
            },
            Coord::Computed { value, source, offset } => {
                let t = format!(
                    "strata_ix((int64_t)({}), {}, {}, err)",
                    self.value(value),
                    ext(source.start),
                    ext(source.stop)
                );
                super::extents::shifted(t, *offset)
            }
            Coord::Table { table, source, offset } => {
                super::extents::shifted(self.table_coord(table, *source), *offset)
            }
        }
    }

    /// Whether [`Self::load`] reads buffer `b` from a rolling window or a strip-local array
    /// rather than from its row-major buffer.
    /// Whether the schedule lets fold `r` sum in any order.
    pub(super) fn reassociates(&self, r: &SExpr) -> bool {
        matches!(r, SExpr::Reduce { id, .. } if self.schedule.reassociate.contains(id))
    }

    pub(super) fn in_scratch(&self, b: usize) -> bool {
        self.windows.iter().any(|w| w.buffer == b) || self.local.as_ref().is_some_and(|loc| loc.buffers.contains(&b))
    }

    pub(super) fn load(&self, l: &Load) -> String {
        if let Some(w) = self.windows.iter().find(|w| w.buffer == l.buffer) {
            return self.window_load(w, l);
        }
        if let Some(loc) = self.local.as_ref().filter(|loc| loc.buffers.contains(&l.buffer)) {
            // Read and written at the current point only (checked by `kernel_passes::fuse_scans`).
            let (k, start) = &loc.scan;
            return match &loc.column {
                Some(j) => format!("loc{}[({k} - ({start})) * {STRIP} + ({j} - jb)]", l.buffer),
                None => format!("loc{}[{k} - ({start})]", l.buffer),
            };
        }
        let b = self.buffer(l.buffer);
        let shape: Vec<i64> = b.levels.iter().map(|x| x.interval.len() as i64).collect();
        let mut stride = 1i64;
        let mut terms = Vec::new();
        for (k, (lv, c)) in b.levels.iter().zip(&l.coords).enumerate().rev() {
            let rel = super::extents::relative(self.coord(c), lv.interval.start);
            // The innermost level is contiguous by construction; any other level's stride is
            // an extent even where it is 1 (an extent-1 level inside), so the text does not
            // depend on it.
            terms.push(if k + 1 == b.levels.len() { rel } else { format!("{rel} * {}", ext(stride)) });
            stride *= shape[k];
        }
        terms.reverse();
        let idx = if terms.is_empty() { "0".to_string() } else { terms.join(" + ") };
        format!("{}[{idx}]", self.name(l.buffer))
    }

    /// The C name of buffer `b`: its parameter name, made an identifier and unique.
    pub(super) fn name(&self, b: usize) -> String {
        let clean: String =
            self.buffer(b).name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        if clean.starts_with(|c: char| c.is_ascii_digit()) {
            format!("v{clean}_b{b}")
        } else {
            format!("{clean}_b{b}")
        }
    }

    /// The C condition under which the value exists (skip values propagate); `None` when it
    /// always does — what decides the shape of the code around it.
    pub(super) fn presence(&self, e: &SExpr) -> Option<String> {
        let and = |parts: Vec<Option<String>>| {
            let p: Vec<String> = parts.into_iter().flatten().collect();
            (!p.is_empty()).then(|| format!("({})", p.join(" && ")))
        };
        let all = |parts: Vec<String>| parts.into_iter().map(Some).collect::<Vec<_>>();
        match e {
            SExpr::Load(l) => and(all(self.load_present(l))),
            // An unstored entry is the fill value, present; only a ragged run's end skips.
            SExpr::Sparse(r) => {
                let mut parts: Vec<String> = r.coords.iter().flat_map(|c| self.coord_present(c)).collect();
                let at = self.sparse_position(r, r.coords.len());
                if at.skipped {
                    parts.push(format!("({} != {})", at.position, sparse::SKIPPED));
                }
                and(all(parts))
            }
            SExpr::Const(_) | SExpr::Acc(_) | SExpr::Present(_) | SExpr::Reduce { .. } => None,
            SExpr::Absent(_) => Some("0".into()),
            SExpr::Guard { table, source, value } => {
                let mut parts = all(self.table_present(table, *source));
                parts.push(self.presence(value));
                and(parts)
            }
            SExpr::Index(c) => and(all(self.coord_present(c))),
            SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) => self.presence(a),
            SExpr::Binary(_, a, b, _) => and(vec![self.presence(a), self.presence(b)]),
            SExpr::Select(c, t, f) => {
                let (pc, pt, pf) = (self.presence(c), self.presence(t), self.presence(f));
                if pt.is_none() && pf.is_none() {
                    pc
                } else {
                    let one = |p: Option<String>| p.unwrap_or_else(|| "1".into());
                    and(vec![pc, Some(format!("({} ? {} : {})", self.value(c), one(pt), one(pf)))])
                }
            }
        }
    }

    /// [`Self::presence`] as a C expression (`1` when the value always exists).
    pub(super) fn present(&self, e: &SExpr) -> String {
        self.presence(e).unwrap_or_else(|| "1".into())
    }

    pub(super) fn load_present(&self, l: &Load) -> Vec<String> {
        l.coords.iter().flat_map(|c| self.coord_present(c)).collect()
    }

    pub(super) fn coord_present(&self, c: &Coord) -> Vec<String> {
        match c {
            Coord::Table { table, source, .. } => self.table_present(table, *source),
            Coord::Computed { value, .. } => self.presence(value).into_iter().collect(),
            _ => vec![],
        }
    }

    pub(super) fn value(&self, e: &SExpr) -> String {
        match e {
            SExpr::Load(l) => self.load(l),
            SExpr::Sparse(r) => {
                let values = self.name(self.program.sparse[r.tensor].values);
                let at = self.sparse_position(r, r.coords.len());
                if at.unstored || at.skipped {
                    self.conditional_reads.set(true);
                    // Zero where not stored: the fill value (or, skipped, the absent value).
                    self.block(&format!("const int64_t p_ = {};", at.position), &format!("p_ < 0 ? 0 : {values}[p_]"))
                } else {
                    format!("{values}[{}]", at.position)
                }
            }
            SExpr::Const(v) => literal(*v),
            SExpr::Absent(t) => literal(Sv::zero(*t)),
            SExpr::Index(c) => self.coord(c),
            SExpr::Unary(op, a, s) => self.unary(*op, &self.value(a), *s),
            // Division of an integer by a positive constant needs no zero or overflow check.
            SExpr::Binary(op @ (BinaryOp::Divides | BinaryOp::Modulo), a, b, s)
                if !s.is_float() && matches!(&**b, SExpr::Const(v) if v.as_i128() > 0) =>
            {
                let sym = if *op == BinaryOp::Divides { "/" } else { "%" };
                format!("(({}) {sym} {})", self.value(a), self.value(b))
            }
            SExpr::Binary(op, a, b, s) => self.binary(*op, &self.value(a), &self.value(b), *s),
            SExpr::Select(c, t, f) => {
                let reads = reads_memory(t) || reads_memory(f);
                if reads && self.program.gpu.is_none() && !reads_index(c) && speculable(t) && speculable(f) {
                    // Both branches computed before the choice (they cannot fail): no read under a
                    // condition, so GCC's loop if-conversion stays on and the select vectorizes as
                    // a blend of plain loads (see `conditional_reads`).
                    return format!(
                        "({{ __auto_type sel_t_ = {}; __auto_type sel_f_ = {}; ({}) ? sel_t_ : sel_f_; }})",
                        self.value(t),
                        self.value(f),
                        self.value(c)
                    );
                }
                if reads {
                    self.conditional_reads.set(true);
                }
                format!("({} ? {} : {})", self.value(c), self.value(t), self.value(f))
            }
            SExpr::Cast(a, from, to) => cast(&self.value(a), *from, *to),
            SExpr::Present(a) => format!("((uint8_t){})", self.present(a)),
            SExpr::Acc(id) => format!("acc{id}"),
            SExpr::Guard { table, source, value } => self.guarded(table, *source, value),
            SExpr::Reduce { id, vars, init, scalar, body } => {
                let mut invariants = Vec::new();
                let body = hoist_reductions(body, &mut invariants, &|r| invariant(r, vars, *id));
                if let Some(m) = moments::recognize(*id, vars, init, *scalar, &body, &invariants, self.reassociates(e))
                {
                    return self.moments(&m, &invariants);
                }
                let before: String = invariants
                    .iter()
                    .map(|r| {
                        let SExpr::Reduce { id: h, scalar: t, .. } = &**r else { unreachable!("hoisted reductions") };
                        format!("{} acc{h} = {}; ", c_type(*t), self.value(r))
                    })
                    .collect();
                let sums = if self.reassociates(e) { vec![format!("acc{id}")] } else { Vec::new() };
                let loops = self.fold_loops(vars, &sums);
                let step = self.fold_step(*id, &body);
                self.block(
                    &format!("{before}{} acc{id} = {}; {loops}{{ {step} }}", c_type(*scalar), self.value(init)),
                    &format!("acc{id}"),
                )
            }
        }
    }

    /// The loop headers of a fold's variables, outermost first; the innermost keeps partial
    /// sums of the accumulators `simd_sums` in vector lanes (see [`reassociable`]) when there
    /// are any. Variables that visit stored coordinates get [`Self::set_loop`]s.
    pub(super) fn fold_loops(
        &self,
        vars: &[(strata_ir::DimName, strata_ir::Interval)],
        simd_sums: &[String],
    ) -> String {
        let mut loops = String::new();
        for (i, (v, range)) in vars.iter().enumerate() {
            if let Some(c) = self.set_of(v) {
                loops.push_str(&self.set_loop(c));
                continue;
            }
            if i + 1 == vars.len() && !simd_sums.is_empty() {
                let _ = write!(loops, "_Pragma(\"omp simd reduction(+:{})\") ", simd_sums.join(","));
            }
            let d = var(v.as_str());
            let _ = write!(loops, "for (int64_t {d} = {}; {d} < {}; ++{d}) ", ext(range.start), ext(range.stop));
        }
        loops
    }

    /// One step of fold `id`: the accumulator becomes `body` where `body` exists.
    /// Its table entries are bound first ([`Self::bind_tables`]).
    pub(super) fn fold_step(&self, id: u32, body: &Rc<SExpr>) -> String {
        let (decls, em) = self.bind_tables(&[body]);
        match em.presence(body) {
            None => format!("{decls}acc{id} = {};", em.value(body)),
            Some(p) => format!("{decls}if ({p}) acc{id} = {};", em.value(body)),
        }
    }

    pub(super) fn unary(&self, op: UnaryOp, a: &str, s: Scalar) -> String {
        if s.is_complex() {
            return complex_unary(op, a, s);
        }
        let f32 = s == Scalar::F32;
        let m = |name: &str| format!("{name}{}({a})", if f32 { "f" } else { "" });
        match op {
            UnaryOp::Not => format!("((uint8_t)!({a}))"),
            UnaryOp::Neg if s.is_float() => format!("(-({a}))"),
            UnaryOp::Neg => format!("(({})(({})0 - ({})({a})))", c_type(s), unsigned_of(s), unsigned_of(s)),
            UnaryOp::Abs if s.is_float() => m("fabs"),
            UnaryOp::Abs if matches!(s, Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64) => a.to_string(),
            UnaryOp::Abs => {
                let (t, u) = (c_type(s), unsigned_of(s));
                self.block(&format!("{t} x_ = {a};"), &format!("(({t})(x_ < 0 ? ({u})0 - ({u})x_ : ({u})x_))"))
            }
            UnaryOp::Sqrt => m("sqrt"),
            UnaryOp::Exp => m("exp"),
            UnaryOp::Log => m("log"),
            UnaryOp::Sin => m("sin"),
            UnaryOp::Cos => m("cos"),
            UnaryOp::Tan => m("tan"),
            UnaryOp::Tanh => m("tanh"),
            UnaryOp::Floor => m("floor"),
            UnaryOp::Ceil => m("ceil"),
            // The default rounding mode rounds ties to even.
            UnaryOp::Round => m("nearbyint"),
            UnaryOp::Trunc => m("trunc"),
            UnaryOp::Acos => m("acos"),
            UnaryOp::Acosh => m("acosh"),
            UnaryOp::Asin => m("asin"),
            UnaryOp::Asinh => m("asinh"),
            UnaryOp::Atan => m("atan"),
            UnaryOp::Atanh => m("atanh"),
            UnaryOp::Cosh => m("cosh"),
            UnaryOp::Sinh => m("sinh"),
            UnaryOp::Expm1 => m("expm1"),
            UnaryOp::Log1p => m("log1p"),
            UnaryOp::Log2 => m("log2"),
            UnaryOp::Log10 => m("log10"),
            UnaryOp::Cbrt => m("cbrt"),
            UnaryOp::Gamma => m("tgamma"),
            UnaryOp::Sign if s.is_float() => {
                let t = c_type(s);
                self.block(
                    &format!("{t} x_ = {a};"),
                    &format!("x_ > 0 ? ({t})1 : (x_ < 0 ? ({t})-1 : (x_ == 0 ? ({t})0 : x_))"),
                )
            }
            UnaryOp::Sign => {
                let t = c_type(s);
                self.block(&format!("{t} x_ = {a};"), &format!("({t})((x_ > 0) - (x_ < 0))"))
            }
            // The classification macros return any nonzero int (glibc's `isinf(-inf)` is -1).
            UnaryOp::IsNan if s.is_float() => format!("((uint8_t)(isnan({a}) != 0))"),
            UnaryOp::IsInf if s.is_float() => format!("((uint8_t)(isinf({a}) != 0))"),
            UnaryOp::IsFinite if s.is_float() => format!("((uint8_t)(isfinite({a}) != 0))"),
            UnaryOp::IsNan | UnaryOp::IsInf => format!("((void)({a}), (uint8_t)0)"),
            UnaryOp::IsFinite => format!("((void)({a}), (uint8_t)1)"),
            UnaryOp::SignBit => format!("((uint8_t)(signbit({a}) != 0))"),
            UnaryOp::BitNot if s == Scalar::Bool => format!("((uint8_t)!({a}))"),
            UnaryOp::BitNot => format!("(({})~({a}))", c_type(s)),
            UnaryOp::Real | UnaryOp::Conj => a.to_string(),
            UnaryOp::Imag => format!("((void)({a}), ({})0)", c_type(s)),
        }
    }

    pub(super) fn binary(&self, op: BinaryOp, a: &str, b: &str, s: Scalar) -> String {
        let t = c_type(s);
        let u = unsigned_of(s);
        let wrap = |sym: &str| format!("(({t})(({u})({a}) {sym} ({u})({b})))");
        let cmp = |sym: &str| format!("((uint8_t)(({a}) {sym} ({b})))");
        if s.is_complex() {
            // The verifier admits `+ - * / **`, `eq` and `ne` on complex operands.
            let f = if s == Scalar::C64 { "f" } else { "" };
            return match op {
                BinaryOp::Plus => format!("(({a}) + ({b}))"),
                BinaryOp::Minus => format!("(({a}) - ({b}))"),
                BinaryOp::Multiplies => format!("strata_cmul{f}(({a}), ({b}))"),
                BinaryOp::Divides => format!("strata_cdiv{f}(({a}), ({b}))"),
                BinaryOp::Power => format!("strata_cpow{f}(({a}), ({b}))"),
                BinaryOp::Ne => cmp("!="),
                _ => cmp("=="),
            };
        }
        match op {
            BinaryOp::Plus if s.is_float() => format!("(({a}) + ({b}))"),
            BinaryOp::Minus if s.is_float() => format!("(({a}) - ({b}))"),
            BinaryOp::Multiplies if s.is_float() => format!("(({a}) * ({b}))"),
            BinaryOp::Divides if s.is_float() => format!("(({a}) / ({b}))"),
            BinaryOp::Plus => wrap("+"),
            BinaryOp::Minus => wrap("-"),
            BinaryOp::Multiplies => wrap("*"),
            BinaryOp::Divides | BinaryOp::Modulo if s.is_float() => {
                format!("fmod{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" })
            }
            BinaryOp::Divides | BinaryOp::Modulo => {
                let sym = if op == BinaryOp::Divides { "/" } else { "%" };
                // Wrapping MIN / -1 and a run-time error for a zero divisor, as the interpreter.
                let sym_is_mod = if op == BinaryOp::Divides { "1" } else { "0" };
                self.block(
                    &format!("{t} a_ = {a}, b_ = {b};"),
                    &format!("(b_ == 0) ? (*err = 1, ({t})0) : ((b_ == ({t})-1) ? (({t})(({u})0 - ({u})a_) * ({t})({sym_is_mod})) : ({t})(a_ {sym} b_))"),
                )
            }
            BinaryOp::Power if s.is_float() => format!("pow{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Power => self.block(
                &format!("{u} r_ = 1, x_ = ({u})({a}); int64_t e_ = (int64_t)({b}); if (e_ < 0) *err = 3; for (; e_ > 0; e_ >>= 1) {{ if (e_ & 1) r_ *= x_; x_ *= x_; }}"),
                &format!("({t})r_"),
            ),
            BinaryOp::Maximum if s.is_float() => format!("strata_fmax{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Minimum if s.is_float() => format!("strata_fmin{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Maximum => self.block(&format!("{t} a_ = {a}, b_ = {b};"), "a_ > b_ ? a_ : b_"),
            BinaryOp::Minimum => self.block(&format!("{t} a_ = {a}, b_ = {b};"), "a_ < b_ ? a_ : b_"),
            BinaryOp::And => format!("((uint8_t)(({a}) && ({b})))"),
            BinaryOp::Or => format!("((uint8_t)(({a}) || ({b})))"),
            BinaryOp::Xor => format!("((uint8_t)((({a}) != 0) != (({b}) != 0)))"),
            BinaryOp::Eq => cmp("=="),
            BinaryOp::Ne => cmp("!="),
            BinaryOp::Less => cmp("<"),
            BinaryOp::LessEqual => cmp("<="),
            BinaryOp::Greater => cmp(">"),
            BinaryOp::GreaterEqual => cmp(">="),
            BinaryOp::FloorDivide | BinaryOp::Remainder if s.is_float() => format!(
                "strata_divmod{}(({a}), ({b}), {})",
                if s == Scalar::F32 { "f" } else { "" },
                (op == BinaryOp::Remainder) as u8
            ),
            BinaryOp::FloorDivide | BinaryOp::Remainder => {
                // Floor rounding, a zero divisor gives 0 and MIN / -1 wraps, as numpy.
                let q = if s.is_signed() {
                    "(b_ == 0 ? 0 : (b_ == -1 ? (T_)((U_)0 - (U_)a_) : (T_)(a_ / b_ - ((a_ % b_ != 0) && ((a_ < 0) != (b_ < 0))))))"
                } else {
                    "(b_ == 0 ? 0 : a_ / b_)"
                };
                let v = if op == BinaryOp::FloorDivide { "q_" } else { "(b_ == 0 ? (T_)0 : (T_)((U_)a_ - (U_)q_ * (U_)b_))" };
                self.block(&format!("typedef {t} T_; typedef {u} U_; T_ a_ = {a}, b_ = {b}; T_ q_ = {q};"), v)
            }
            BinaryOp::BitAnd => format!("(({t})(({a}) & ({b})))"),
            BinaryOp::BitOr => format!("(({t})(({a}) | ({b})))"),
            BinaryOp::BitXor => format!("(({t})(({a}) ^ ({b})))"),
            BinaryOp::ShiftLeft => {
                let bits = 8 * s.size_bytes();
                self.block(&format!("{t} a_ = {a}; int64_t b_ = (int64_t)({b});"), &format!("(b_ < 0 || b_ >= {bits}) ? ({t})0 : ({t})(({u})a_ << b_)"))
            }
            BinaryOp::ShiftRight => {
                let bits = 8 * s.size_bytes();
                self.block(&format!("{t} a_ = {a}; int64_t b_ = (int64_t)({b});"), &format!("(b_ < 0 || b_ >= {bits}) ? (a_ < 0 ? ({t})-1 : ({t})0) : ({t})(a_ >> b_)"))
            }
            BinaryOp::Atan2 => format!("atan2{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Hypot => format!("hypot{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::CopySign => format!("copysign{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::NextAfter => format!("nextafter{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::LogAddExp => format!("strata_logaddexp{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
        }
    }
}

pub(super) fn cast(a: &str, from: Scalar, to: Scalar) -> String {
    if from == to {
        return a.to_string();
    }
    if to == Scalar::Bool {
        return format!("((uint8_t)(({a}) != 0))");
    }
    if from.is_float() && !to.is_inexact() {
        let f = match to {
            Scalar::I8 => "strata_f2i8",
            Scalar::I16 => "strata_f2i16",
            Scalar::I32 => "strata_f2i32",
            Scalar::I64 | Scalar::Index => "strata_f2i64",
            Scalar::U8 => "strata_f2u8",
            Scalar::U16 => "strata_f2u16",
            Scalar::U32 => "strata_f2u32",
            _ => "strata_f2u64",
        };
        return format!("{f}((double)({a}))");
    }
    // Integer to integer wraps (through the unsigned type of the target width).
    if !from.is_inexact() && !to.is_inexact() {
        return format!("(({})({})({a}))", c_type(to), unsigned_of(to));
    }
    format!("(({})({a}))", c_type(to))
}

/// A unary builtin on a complex operand, as `strata_runtime::complex` computes it: C's complex
/// functions, and the prelude's `strata_c*` helpers where C has none.
fn complex_unary(op: UnaryOp, a: &str, s: Scalar) -> String {
    let f = if s == Scalar::C64 { "f" } else { "" };
    let c = |name: &str| format!("c{name}{f}({a})");
    let helper = |name: &str| format!("strata_c{name}{f}({a})");
    match op {
        UnaryOp::Neg => format!("(-({a}))"),
        UnaryOp::Conj => format!("conj{f}({a})"),
        UnaryOp::Real => format!("creal{f}({a})"),
        UnaryOp::Imag => format!("cimag{f}({a})"),
        UnaryOp::Abs => helper("abs"),
        UnaryOp::IsNan => helper("isnan"),
        UnaryOp::IsInf => helper("isinf"),
        UnaryOp::IsFinite => helper("isfinite"),
        UnaryOp::Round => helper("round"),
        UnaryOp::Sign => helper("sign"),
        UnaryOp::Log2 => helper("log2"),
        UnaryOp::Log10 => helper("log10"),
        UnaryOp::Expm1 => helper("expm1"),
        UnaryOp::Log1p => helper("log1p"),
        UnaryOp::Sqrt => c("sqrt"),
        UnaryOp::Exp => c("exp"),
        UnaryOp::Log => c("log"),
        UnaryOp::Sin => c("sin"),
        UnaryOp::Cos => c("cos"),
        UnaryOp::Tan => c("tan"),
        UnaryOp::Sinh => c("sinh"),
        UnaryOp::Cosh => c("cosh"),
        UnaryOp::Tanh => helper("tanh"),
        UnaryOp::Asin => c("asin"),
        UnaryOp::Acos => c("acos"),
        UnaryOp::Atan => c("atan"),
        UnaryOp::Asinh => c("asinh"),
        UnaryOp::Acosh => c("acosh"),
        UnaryOp::Atanh => c("atanh"),
        // Refused on complex operands by the verifier.
        UnaryOp::Not
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Trunc
        | UnaryOp::Cbrt
        | UnaryOp::Gamma
        | UnaryOp::SignBit
        | UnaryOp::BitNot => a.to_string(),
    }
}
