//! The per-function verification context: the growing type arena, the inferred type of every
//! expression, and helpers shared by the typing rules.

use strata_entity::Handle;
use strata_ir::print::TypeDisplay;
use strata_ir::{
    element_of, Diagnostic, DimName, Expr, Function, Level, Literal, Module, Placement, Scalar, Span, TensorType, Type,
    TypeArena, Value,
};

/// A value seen as a tensor: scalars and tuples are 0-d tensors of themselves on the host.
#[derive(Clone, Debug)]
pub(crate) struct View {
    /// Element type.
    pub element: Handle<Type>,
    /// Levels (empty for scalars).
    pub levels: Vec<Level>,
    /// Placement (host for scalars).
    pub placement: Placement,
    /// Whether the value's type is a tensor type.
    pub is_tensor: bool,
}

impl View {
    pub fn level(&self, name: &DimName) -> Option<&Level> {
        self.levels.iter().find(|l| &l.name == name)
    }

    pub fn rank(&self) -> usize {
        self.levels.len()
    }

    pub fn highest_neighbor_counter(&self) -> Option<u32> {
        self.levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max()
    }

    pub fn without(&self, name: &DimName) -> Vec<Level> {
        self.levels.iter().filter(|l| &l.name != name).cloned().collect()
    }
}

/// Verification state for one function.
pub(crate) struct Cx<'m> {
    pub module: &'m Module,
    pub types: &'m mut TypeArena,
    pub func: &'m Function,
    /// The type of every expression verified so far (declared type where inference failed).
    pub expr_types: Vec<Handle<Type>>,
    /// The span of the expression being verified.
    pub span: Span,
    pub errors: &'m mut Vec<Diagnostic>,
    /// Set while specializing (`crate::specialize`): a function used at other types than its
    /// own is instantiated at them instead of being an error.
    pub spec: Option<&'m mut crate::specialize::Specializer>,
}

/// The result of a typing rule.
pub(crate) type RuleResult = Result<Handle<Type>, Box<Diagnostic>>;

impl<'m> Cx<'m> {
    /// Whether an entry is being specialized at other parameter types (a rank's local
    /// program): every statement is inferred again, and any function used at other types is
    /// instantiated.
    pub fn specializing(&self) -> bool {
        self.spec.as_deref().is_some_and(|s| s.mode == crate::specialize::Retype::All)
    }

    pub fn ty(&self, v: Value) -> Handle<Type> {
        self.expr_types[v.index()]
    }

    pub fn expr(&self, v: Value) -> &Expr {
        &self.func.exprs[v]
    }

    pub fn show(&self, ty: Handle<Type>) -> String {
        TypeDisplay::in_arena(self.module, self.types, ty).to_string()
    }

    pub fn view_of_type(&self, ty: Handle<Type>) -> View {
        match &self.types[ty] {
            Type::Tensor(t) => {
                View { element: t.element, levels: t.levels.clone(), placement: t.placement.clone(), is_tensor: true }
            }
            _ => View { element: ty, levels: Vec::new(), placement: Placement::HOST, is_tensor: false },
        }
    }

    pub fn view(&self, v: Value) -> View {
        self.view_of_type(self.ty(v))
    }

    pub fn element(&self, v: Value) -> Handle<Type> {
        element_of(self.types, self.ty(v))
    }

    pub fn scalar_of(&self, ty: Handle<Type>) -> Option<Scalar> {
        match self.types[ty] {
            Type::Scalar(s) => Some(s),
            _ => None,
        }
    }

    pub fn intern(&mut self, ty: Type) -> Handle<Type> {
        self.types.insert(ty)
    }

    pub fn scalar(&mut self, s: Scalar) -> Handle<Type> {
        self.types.insert(Type::Scalar(s))
    }

    pub fn tensor(&mut self, element: Handle<Type>, levels: Vec<Level>, placement: Placement) -> Handle<Type> {
        self.types.insert(Type::Tensor(TensorType { element, levels, placement }))
    }

    /// A tensor result, or the bare element when no operand was a tensor.
    pub fn tensor_or_element(
        &mut self,
        any_tensor: bool,
        element: Handle<Type>,
        levels: Vec<Level>,
        placement: Placement,
    ) -> Handle<Type> {
        if any_tensor || !levels.is_empty() {
            self.tensor(element, levels, placement)
        } else {
            element
        }
    }

    /// A diagnostic at the current expression.
    pub fn error(&self, code: &'static str, message: impl Into<String>, label: impl Into<String>) -> Box<Diagnostic> {
        Box::new(Diagnostic::new(code, message, self.span, label))
    }

    /// The error for an extent or bound that leaves the 64-bit range.
    pub fn overflow(&self, what: &str) -> Box<Diagnostic> {
        self.error("strata::verify::size_overflow", format!("{what} does not fit in 64 bits"), "too large")
    }

    /// `[start:stop)` from wide bounds, or the overflow error.
    pub fn interval(&self, start: i128, stop: i128, what: &str) -> Result<strata_ir::Interval, Box<Diagnostic>> {
        strata_ir::Interval::from_wide(start, stop).ok_or_else(|| self.overflow(what))
    }

    /// The product of extents, or the overflow error.
    pub fn product(&self, extents: impl IntoIterator<Item = u64>, what: &str) -> Result<u64, Box<Diagnostic>> {
        extents
            .into_iter()
            .try_fold(1u64, |acc, n| acc.checked_mul(n))
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(|| self.overflow(what))
    }

    /// The operand's view, or an error if it is not a tensor.
    pub fn need_tensor(&self, v: Value, op: &str) -> Result<View, Box<Diagnostic>> {
        let view = self.view(v);
        if !view.is_tensor {
            let d =
                self.error("strata::verify::expected_tensor", format!("`{op}` needs a tensor operand"), "not a tensor");
            return Err(self.with_operand(d, v));
        }
        Ok(view)
    }

    /// The operand's view, or an error naming its first level that is not dense.
    pub fn require_dense(&self, v: Value, op: &str) -> Result<View, Box<Diagnostic>> {
        self.require_levels(v, op, |f| f == strata_ir::LevelFormat::Dense)
    }

    /// The view of `v`, whose levels must all be dense or `block` (distributed rows of dense
    /// data), else a `format_not_supported` error naming `op`.
    pub fn require_dense_like(&self, v: Value, op: &str) -> Result<View, Box<Diagnostic>> {
        self.require_levels(v, op, strata_ir::LevelFormat::is_dense_like)
    }

    fn require_levels(
        &self,
        v: Value,
        op: &str,
        ok: impl Fn(strata_ir::LevelFormat) -> bool,
    ) -> Result<View, Box<Diagnostic>> {
        let view = self.view(v);
        if let Some(l) = view.levels.iter().find(|l| !ok(l.format)) {
            let d = self.error(
                "strata::verify::format_not_supported",
                format!("`{op}` needs dense levels, but `{}` is `{}`", l.name, l.format.keyword()),
                "not dense",
            );
            return Err(Box::new(self.with_operand(d, v).with_help("insert a `convert` to a dense tensor first")));
        }
        Ok(view)
    }

    /// Adds a label showing an operand's type at its definition.
    #[allow(clippy::boxed_local)] // diagnostics travel boxed so rule results stay small
    pub fn with_operand(&self, d: Box<Diagnostic>, v: Value) -> Box<Diagnostic> {
        // A value written in place is labelled at its own text: its generated name is not.
        let text = if self.func.inline.contains(&v) {
            format!("has type `{}`", self.show(self.ty(v)))
        } else {
            format!("`%{}` has type `{}`", self.expr(v).name, self.show(self.ty(v)))
        };
        Box::new(d.with_label(*self.func.exprs.meta(v), text))
    }

    /// Whether `lit` can be a value of type `ty` (numbers convert within their family; tuples
    /// field by field; a tensor type takes a splat of its element).
    pub fn literal_fits(&self, lit: &Literal, ty: Handle<Type>) -> bool {
        match (&self.types[ty], lit) {
            (Type::Scalar(s), Literal::Bool(_)) => *s == Scalar::Bool,
            (Type::Scalar(s), Literal::Int(i)) => s.is_numeric() && int_fits(*s, *i),
            (Type::Scalar(s), Literal::Float(_)) => s.is_inexact(),
            (Type::Tuple(fields), Literal::Tuple(items)) => {
                fields.len() == items.len() && fields.iter().zip(items).all(|(f, i)| self.literal_fits(i, *f))
            }
            (Type::Tensor(t), _) => self.literal_fits(lit, t.element),
            _ => false,
        }
    }
}

/// Whether integer `v` is representable in `s` (floats take any integer).
pub(crate) fn int_fits(s: Scalar, v: i64) -> bool {
    match s {
        Scalar::I8 => i8::try_from(v).is_ok(),
        Scalar::I16 => i16::try_from(v).is_ok(),
        Scalar::I32 => i32::try_from(v).is_ok(),
        Scalar::U8 => u8::try_from(v).is_ok(),
        Scalar::U16 => u16::try_from(v).is_ok(),
        Scalar::U32 => u32::try_from(v).is_ok(),
        Scalar::U64 => v >= 0,
        _ => true,
    }
}

/// The name a dimension takes at result position `pos`: named dimensions keep their name,
/// positional ones are renumbered.
pub(crate) fn rename_at(name: &DimName, pos: usize) -> DimName {
    if name.position().is_some() {
        DimName::positional(pos)
    } else {
        name.clone()
    }
}

/// Renames positional dimensions to their final positions and reports duplicates.
pub(crate) fn renumber(levels: Vec<Level>) -> Result<Vec<Level>, DimName> {
    let out: Vec<Level> =
        levels.into_iter().enumerate().map(|(i, l)| Level { name: rename_at(&l.name, i), ..l }).collect();
    for (i, l) in out.iter().enumerate() {
        if out[..i].iter().any(|o| o.name == l.name) {
            return Err(l.name.clone());
        }
    }
    Ok(out)
}

/// Lists a function's parameter types and its result, if it has exactly one.
pub(crate) fn signature(module: &Module, f: Handle<Function>) -> (Vec<Handle<Type>>, Option<Handle<Type>>) {
    let func = &module.functions[f];
    (func.params.iter().map(|&p| func.exprs[p].ty).collect(), func.result())
}
