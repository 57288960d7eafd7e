//! Building IR directly: the front door for front ends that make programs rather than parse
//! them (`strata.fields`, the array front end, GTIR lowering).
//!
//! A [`ModuleBuilder`] holds a module under construction. Each function is made by a
//! [`FunctionBuilder`]: parameters get the types the caller gives; every operation's result
//! type is inferred by the verifier's own rules the moment it is added, so a front end never
//! computes intervals, broadcasts or shifts itself, and a wrong operation is refused at the
//! call that made it, with the verifier's diagnostic. [`ModuleBuilder::finish`] verifies the
//! whole module once more, so what a builder returns is exactly what `verify` accepts.
//!
//! Built IR has no source text: spans are [`Span::UNKNOWN`] and the printer invents value
//! names (`%v0`, `%p0`, …). A front end locates a diagnostic in its own terms (a Python line,
//! a GTIR node) with [`BuildError::at`].

use std::collections::HashMap;
use std::fmt;

use strata_entity::{Arena, Handle, HandleSet};
use strata_ir::{
    BinaryOp, Diagnostic, DimName, Expr, ExprKind, Function, FunctionKind, Interval, Item, Level, Literal, Module, Op,
    ParamMode, Placement, Scalar, SourceInfo, Span, Statement, TensorType, Type, TypeArena, Value,
};

use crate::context::Cx;

/// A refused operation: the verifier's diagnostic, and where the front end made it.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildError {
    /// What the verifier found.
    pub diagnostic: Box<Diagnostic>,
    /// Where, in the front end's terms (`"lap.py:12"`), if it said.
    pub location: Option<String>,
}

impl BuildError {
    fn new(d: Diagnostic) -> BuildError {
        BuildError { diagnostic: Box::new(d), location: None }
    }

    /// The error located at `location` (in the caller's terms).
    pub fn at(mut self, location: impl Into<String>) -> BuildError {
        self.location = Some(location.into());
        self
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.diagnostic;
        if let Some(l) = &self.location {
            write!(f, "{l}: ")?;
        }
        write!(f, "{}", d.message)?;
        if let Some(h) = &d.help {
            write!(f, " (help: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

impl From<Box<Diagnostic>> for BuildError {
    fn from(d: Box<Diagnostic>) -> Self {
        BuildError { diagnostic: d, location: None }
    }
}

/// A module under construction.
#[derive(Clone, Debug, Default)]
pub struct ModuleBuilder {
    module: Module,
}

impl ModuleBuilder {
    /// An empty module.
    pub fn new() -> ModuleBuilder {
        ModuleBuilder::default()
    }

    /// The module built so far.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The type arena, to make types with.
    pub fn types(&mut self) -> &mut TypeArena {
        &mut self.module.types
    }

    /// The scalar type `s`.
    pub fn scalar(&mut self, s: Scalar) -> Handle<Type> {
        self.module.types.insert(Type::Scalar(s))
    }

    /// A tuple of `fields`.
    pub fn tuple(&mut self, fields: Vec<Handle<Type>>) -> Handle<Type> {
        self.module.types.insert(Type::Tuple(fields))
    }

    /// A dense tensor of `element` over `dims` (name and interval), on the host. With no
    /// dimensions, the element type itself (a scalar broadcasts by name).
    pub fn dense(&mut self, element: Handle<Type>, dims: &[(DimName, Interval)]) -> Handle<Type> {
        if dims.is_empty() {
            return element;
        }
        let levels = dims.iter().map(|(n, iv)| Level::dense(n.clone(), *iv)).collect();
        self.tensor(element, levels, Placement::HOST)
    }

    /// A tensor of `element` over `levels` at `placement`.
    pub fn tensor(&mut self, element: Handle<Type>, levels: Vec<Level>, placement: Placement) -> Handle<Type> {
        self.module.types.insert(Type::Tensor(TensorType { element, levels, placement }))
    }

    /// Starts the function or program `name`.
    pub fn function(&mut self, name: impl Into<String>, kind: FunctionKind) -> FunctionBuilder<'_> {
        let func = Function {
            name: name.into(),
            kind,
            params: Vec::new(),
            results: Vec::new(),
            result_inferred: false,
            exprs: Arena::new(),
            body: Arena::new(),
            closing_comments: Vec::new(),
            untyped: HandleSet::new(),
            inline: HandleSet::new(),
            instance_of: None,
        };
        FunctionBuilder { mb: self, func }
    }

    /// The payload `(acc: T, x: T) -> T` returning `op(acc, x)` (a fold's), named after `op`.
    ///
    /// # Errors
    /// `op` is not defined on `t`.
    pub fn binary_function(&mut self, op: BinaryOp, t: Scalar) -> Result<Handle<Function>, BuildError> {
        let ty = self.scalar(t);
        let mut f = self.function(op.keyword(), FunctionKind::Func);
        let acc = f.param(ty, ParamMode::In);
        let x = f.param(ty, ParamMode::In);
        let r = f.op(Op::Binary { op, lhs: acc, rhs: x })?;
        Ok(f.finish_returning(&[r]))
    }

    /// The function named `name`, if built.
    pub fn function_by_name(&self, name: &str) -> Option<Handle<Function>> {
        self.module.function_by_name(name)
    }

    /// Type `ty` of `from` as a type of this module.
    pub fn import_type(&mut self, from: &Module, ty: Handle<Type>) -> Handle<Type> {
        reintern(&from.types, &mut self.module.types, ty, &mut HashMap::new())
    }

    /// Copies function `f` of `from` (and the functions it refers to) into this module, once:
    /// a second copy of an equal function returns the first. Types are re-interned here.
    pub fn import(&mut self, from: &Module, f: Handle<Function>) -> Handle<Function> {
        let mut done = HashMap::new();
        self.import_with(from, f, &mut done)
    }

    fn import_with(
        &mut self,
        from: &Module,
        f: Handle<Function>,
        done: &mut HashMap<Handle<Function>, Handle<Function>>,
    ) -> Handle<Function> {
        if let Some(&h) = done.get(&f) {
            return h;
        }
        let mut func = from.functions[f].clone();
        let mut types = HashMap::new();
        let exprs: Vec<Value> = func.exprs.handles().collect();
        for v in exprs {
            let e = &mut func.exprs[v];
            e.ty = reintern(&from.types, &mut self.module.types, e.ty, &mut types);
            if let ExprKind::Op(op) = &mut e.kind {
                if let Some(g) = op.function_mut() {
                    *g = self.import_with(from, *g, done);
                }
            }
        }
        for r in &mut func.results {
            *r = reintern(&from.types, &mut self.module.types, *r, &mut types);
        }
        let h = self.add(func);
        done.insert(f, h);
        h
    }

    /// Appends `func`, or returns the function already there that differs at most by its
    /// name. A new function whose name is taken gets a numbered one (`name_1`, …), so names
    /// stay unique.
    fn add(&mut self, mut func: Function) -> Handle<Function> {
        if let Some((h, _)) = self.module.functions.iter().find(|(_, g)| g.same_but_name(&func)) {
            return h;
        }
        let base = func.name.clone();
        let mut k = 0;
        while self.module.function_by_name(&func.name).is_some() {
            k += 1;
            func.name = format!("{base}_{k}");
        }
        let h = self.module.functions.append(func, SourceInfo::default());
        self.module.items.push(Item::Function(h));
        h
    }

    /// The module as built, without verifying it as a whole (every op was checked as it was
    /// added; use [`ModuleBuilder::finish`] for the checks only a whole module allows).
    pub fn into_module(self) -> Module {
        self.module
    }

    /// The module, verified as a whole.
    ///
    /// # Errors
    /// The verifier's diagnostics (none for a module every op of which was accepted as it was
    /// added, but an `out` left unwritten or a missing `return` is found only here).
    pub fn finish(self) -> Result<(Module, crate::ModuleInfo), Vec<Diagnostic>> {
        let info = crate::verify(&self.module)?;
        Ok((self.module, info))
    }
}

/// `ty` of `from` as a type of `to`.
fn reintern(
    from: &TypeArena,
    to: &mut TypeArena,
    ty: Handle<Type>,
    memo: &mut HashMap<Handle<Type>, Handle<Type>>,
) -> Handle<Type> {
    if let Some(&t) = memo.get(&ty) {
        return t;
    }
    let t = match &from[ty] {
        Type::Tensor(t) => {
            let element = reintern(from, to, t.element, memo);
            to.insert(Type::Tensor(TensorType { element, levels: t.levels.clone(), placement: t.placement.clone() }))
        }
        Type::Tuple(fields) => {
            let fields = fields.iter().map(|&f| reintern(from, to, f, memo)).collect();
            to.insert(Type::Tuple(fields))
        }
        other => to.insert(other.clone()),
    };
    memo.insert(ty, t);
    t
}

/// One function under construction; dropped without [`FunctionBuilder::finish`], it leaves
/// the module as it was.
pub struct FunctionBuilder<'m> {
    mb: &'m mut ModuleBuilder,
    func: Function,
}

impl FunctionBuilder<'_> {
    /// The module builder, to make types with.
    pub fn module(&mut self) -> &mut ModuleBuilder {
        self.mb
    }

    /// A new parameter of type `ty`, named `p0`, `p1`, … by its position.
    pub fn param(&mut self, ty: Handle<Type>, mode: ParamMode) -> Value {
        let name = format!("p{}", self.func.params.len());
        self.named_param(name, ty, mode)
    }

    /// A new parameter named `name` (the name arguments are passed under).
    pub fn named_param(&mut self, name: impl Into<String>, ty: Handle<Type>, mode: ParamMode) -> Value {
        let v = self.func.exprs.append(Expr { name: name.into(), ty, kind: ExprKind::Param(mode) }, Span::UNKNOWN);
        self.func.params.push(v);
        v
    }

    /// Names `v` (`%name` in diagnostics and printed text; built values are `%v0`, `%v1`, …).
    pub fn rename(&mut self, v: Value, name: impl Into<String>) {
        self.func.exprs[v].name = name.into();
    }

    /// The type of `v`.
    pub fn ty(&self, v: Value) -> Handle<Type> {
        self.func.exprs[v].ty
    }

    /// The type arena (to read types with).
    pub fn types(&self) -> &TypeArena {
        &self.mb.module.types
    }

    /// `ty` as the printer writes it.
    pub fn show(&self, ty: Handle<Type>) -> String {
        strata_ir::print::TypeDisplay::in_arena(&self.mb.module, &self.mb.module.types, ty).to_string()
    }

    /// Adds `op`, whose result type the verifier infers from its operands.
    ///
    /// # Errors
    /// The verifier's diagnostic when the operands do not fit the op (an interval not covered,
    /// a dimension missing, element types that differ, …).
    pub fn op(&mut self, op: Op) -> Result<Value, BuildError> {
        if op.has_declared_type() {
            return Err(BuildError::new(Diagnostic::new(
                "strata::build::declared_type",
                format!("`{}` has a declared type: build it with `op_as`", op.name()),
                Span::UNKNOWN,
                "no type given",
            )));
        }
        let placeholder = self.mb.module.types.insert(Type::Tuple(Vec::new()));
        let t = self.infer(&op, placeholder)?;
        Ok(self.push(op, t))
    }

    /// Adds `op` with the declared type `ty` (`constant`, `convert`, `coordinates`,
    /// `nonzeros`, `assemble`; for others, `ty` must be the inferred type).
    ///
    /// # Errors
    /// The verifier's diagnostic, or a type mismatch.
    pub fn op_as(&mut self, op: Op, ty: Handle<Type>) -> Result<Value, BuildError> {
        let t = self.infer(&op, ty)?;
        if t != ty {
            let show = |t| self.show(t);
            return Err(BuildError::new(Diagnostic::new(
                "strata::verify::type_mismatch",
                format!("`{}` produces `{}`, not `{}`", op.name(), show(t), show(ty)),
                Span::UNKNOWN,
                "declared type differs from the inferred one",
            )));
        }
        Ok(self.push(op, ty))
    }

    /// A scalar constant of type `s`.
    ///
    /// # Errors
    /// A literal that is not a value of `s`.
    pub fn constant(&mut self, value: Literal, s: Scalar) -> Result<Value, BuildError> {
        let ty = self.mb.scalar(s);
        self.op_as(Op::Constant { value }, ty)
    }

    fn infer(&mut self, op: &Op, declared: Handle<Type>) -> Result<Handle<Type>, BuildError> {
        let (t, errors) = self.with_cx(|cx| crate::rules::infer(cx, op, declared));
        let t = t?;
        // Rules that check a payload report into `errors` as well as failing.
        match errors.into_iter().next() {
            Some(d) => Err(BuildError::new(d)),
            None => Ok(t),
        }
    }

    /// Runs `f` in a verification context over the function built so far (the rules read
    /// the module and grow its type arena, which is lent to them meanwhile).
    fn with_cx<R>(
        &mut self,
        f: impl FnOnce(&mut Cx) -> Result<R, Box<Diagnostic>>,
    ) -> (Result<R, BuildError>, Vec<Diagnostic>) {
        let mut errors = Vec::new();
        let mut types = std::mem::take(&mut self.mb.module.types);
        let expr_types = self.func.exprs.iter().map(|(_, e)| e.ty).collect();
        let mut cx = Cx {
            module: &self.mb.module,
            types: &mut types,
            func: &self.func,
            expr_types,
            span: Span::UNKNOWN,
            errors: &mut errors,
            spec: None,
        };
        let r = f(&mut cx).map_err(BuildError::from);
        self.mb.module.types = types;
        (r, errors)
    }

    fn push(&mut self, op: Op, ty: Handle<Type>) -> Value {
        let name = format!("v{}", self.func.exprs.len());
        let v = self.func.exprs.append(Expr { name, ty, kind: ExprKind::Op(op) }, Span::UNKNOWN);
        self.func.body.append(Statement::Let(v), SourceInfo::default());
        v
    }

    /// `target[domain] <- value` (a program's `out` parameter; the whole target when `domain`
    /// is `None`).
    ///
    /// # Errors
    /// The verifier's diagnostic (not an output, a domain not covered, …).
    pub fn assign(
        &mut self,
        target: Value,
        domain: Option<Vec<(DimName, Interval)>>,
        value: Value,
    ) -> Result<(), BuildError> {
        let d = domain.clone();
        self.with_cx(|cx| crate::function::check_assign(cx, target, d.as_deref(), value)).0?;
        self.func.body.append(Statement::Assign { target, domain, value }, SourceInfo::default());
        Ok(())
    }

    /// Ends a `func` returning `values` (its result types are theirs) and adds it to the
    /// module; a function equal but for its name already there is returned instead.
    pub fn finish_returning(mut self, values: &[Value]) -> Handle<Function> {
        self.func.results = values.iter().map(|&v| self.func.exprs[v].ty).collect();
        self.func.body.append(Statement::Return(values.to_vec()), SourceInfo::default());
        self.mb.add(self.func)
    }

    /// Ends a `program` and adds it to the module.
    pub fn finish(self) -> Handle<Function> {
        self.mb.add(self.func)
    }
}
