//! The canonical text printer.
//!
//! `module.to_string()` is the module's source text in canonical form: one item per paragraph,
//! one statement per line, every value with its type (but those the text left out:
//! [`Module::with_all_types`] writes them too), keyword attributes in a fixed order, and every
//! comment the parser attached. Printing is idempotent and `parse(print(m)) == m`.

mod ops;
mod types;

use std::fmt::{self, Write};

use strata_entity::Handle;

use crate::module::{ExprKind, Function, FunctionKind, Item, Module, ParamMode, Statement};
use crate::span::SourceInfo;
use crate::types::Type;

pub use types::{is_identifier, TypeDisplay};

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An instance of a generic function is the generic one, written once.
        let items: Vec<Item> = self
            .items
            .iter()
            .copied()
            .filter(|i| !matches!(i, Item::Function(h) if self.functions[*h].instance_of.is_some()))
            .collect();
        for (i, item) in items.iter().enumerate() {
            // Items are separated by a blank line, except a run of aliases written together.
            let alias_run = match (i.checked_sub(1).map(|p| items[p]), *item) {
                (Some(Item::Alias(_)), Item::Alias(h)) => {
                    self.aliases.meta(h).leading.first().is_none_or(|c| c != "\n")
                }
                _ => false,
            };
            if i > 0 && !alias_run {
                f.write_str("\n")?;
            }
            match *item {
                Item::Alias(h) => {
                    let a = &self.aliases[h];
                    let info = self.aliases.meta(h);
                    write_leading(f, info, "", true)?;
                    // An alias prints its definition, never itself.
                    write!(f, "!{} = {}", a.name, TypeDisplay::expanded(self, a.ty))?;
                    write_trailing(f, info)?;
                }
                Item::Ring(h) => {
                    let r = &self.rings[h];
                    let info = self.rings.meta(h);
                    write_leading(f, info, "", true)?;
                    write!(
                        f,
                        "ring @{}<{}>(zero = {}, add = @{}, mul = @{})",
                        r.name,
                        r.element,
                        r.zero,
                        self.source_name(r.add),
                        self.source_name(r.mul)
                    )?;
                    write_trailing(f, info)?;
                }
                Item::Function(h) => self.write_function(f, h)?,
            }
        }
        if !self.trailing_comments.is_empty() {
            if !items.is_empty() {
                f.write_str("\n")?;
            }
            for c in &self.trailing_comments {
                writeln!(f, "//{c}")?;
            }
        }
        Ok(())
    }
}

impl Module {
    fn write_function(&self, f: &mut fmt::Formatter<'_>, h: Handle<crate::module::Function>) -> fmt::Result {
        let func = &self.functions[h];
        let info = self.functions.meta(h);
        write_leading(f, info, "", true)?;
        let kw = match func.kind {
            FunctionKind::Func => "func",
            FunctionKind::Program => "program",
        };
        write!(f, "{kw} @{}(", func.name)?;
        for (i, &p) in func.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            let e = &func.exprs[p];
            let mode = match e.kind {
                ExprKind::Param(ParamMode::Out) => "out ",
                _ => "",
            };
            if func.untyped.contains(&p) {
                write!(f, "%{}", e.name)?;
            } else {
                write!(f, "%{}: {mode}{}", e.name, TypeDisplay::new(self, e.ty))?;
            }
        }
        f.write_str(")")?;
        if !func.result_inferred && !func.results.is_empty() {
            let results: Vec<String> = func.results.iter().map(|&r| TypeDisplay::new(self, r).to_string()).collect();
            write!(f, " -> {}", results.join(", "))?;
        }
        f.write_str(" {")?;
        write_trailing(f, info)?;
        for (s, stmt) in func.body.iter() {
            if matches!(stmt, Statement::Let(v) if func.inline.contains(v) || func.is_further_result(*v)) {
                continue;
            }
            let sinfo = func.body.meta(s);
            write_leading(f, sinfo, "  ", false)?;
            f.write_str("  ")?;
            self.write_statement(f, func, stmt)?;
            write_trailing(f, sinfo)?;
        }
        for c in &func.closing_comments {
            writeln!(f, "  //{c}")?;
        }
        f.write_str("}\n")
    }

    fn write_statement(&self, f: &mut fmt::Formatter<'_>, func: &Function, stmt: &Statement) -> fmt::Result {
        match stmt {
            Statement::Let(v) => {
                let e = &func.exprs[*v];
                // `%q, %r = call(@divmod, …)` binds every result of a multi-result call.
                let bound = func.call_results(*v);
                let names: Vec<String> = bound.iter().map(|&b| format!("%{}", func.exprs[b].name)).collect();
                write!(f, "{} = ", names.join(", "))?;
                match &e.kind {
                    ExprKind::Op(op) => ops::write_op(f, self, func, op)?,
                    ExprKind::Param(_) => f.write_str("<param>")?,
                }
                if func.untyped.contains(v) {
                    return Ok(());
                }
                let types: Vec<String> =
                    bound.iter().map(|&b| TypeDisplay::new(self, func.exprs[b].ty).to_string()).collect();
                write!(f, " : {}", types.join(", "))
            }
            Statement::Assign { target, domain, value } => {
                write!(f, "%{}", func.exprs[*target].name)?;
                if let Some(d) = domain {
                    f.write_str("[")?;
                    for (i, (n, iv)) in d.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{n}{iv}")?;
                    }
                    f.write_str("]")?;
                }
                write!(f, " <- {}", ops::operand(self, func, *value))
            }
            Statement::Return(vs) => {
                let values: Vec<String> = vs.iter().map(|&v| ops::operand(self, func, v)).collect();
                write!(f, "return {}", values.join(", "))
            }
        }
    }

    /// The module with every statement's type written out (after `strata_verify::elaborate`
    /// filled in those the text left out), and so every value as its own statement: what
    /// `strata fmt --types` prints, the canonical fully typed form.
    pub fn with_all_types(&self) -> Module {
        let mut m = self.flattened();
        let handles: Vec<_> = m.functions.handles().collect();
        for h in handles {
            // A generic function has no types to write: its instances have them.
            let f = &mut m.functions[h];
            if !f.is_generic() {
                f.untyped.clear();
                f.result_inferred = false;
            }
        }
        m
    }

    /// The module with every value written in place (literal operands, nested calls) printed as
    /// its own named statement instead: what `strata fmt --flat` prints.
    pub fn flattened(&self) -> Module {
        let mut m = self.clone();
        let handles: Vec<_> = m.functions.handles().collect();
        for h in handles {
            let f = &mut m.functions[h];
            // A literal operand's type is its user's choice, not inferable from the `constant`
            // alone: once it stands on its own it is written out.
            let literals: Vec<_> = f
                .inline
                .iter()
                .filter(|v| matches!(f.exprs[*v].kind, ExprKind::Op(crate::Op::Constant { .. })))
                .collect();
            if f.is_generic() {
                // Its literals have no type until an instance gives them one: they stay in place.
                f.inline.retain(|v| literals.contains(&v));
            } else {
                f.untyped.retain(|v| !literals.contains(&v));
                f.inline.clear();
            }
        }
        m
    }

    /// The canonical text of a type, using aliases.
    pub fn type_to_string(&self, ty: Handle<Type>) -> String {
        let mut s = String::new();
        let _ = write!(s, "{}", TypeDisplay::new(self, ty));
        s
    }
}

/// Writes leading comments; the entry `"\n"` stands for a blank line. Blank lines at the start
/// of an item's comments are dropped (items are already separated by one).
fn write_leading(f: &mut fmt::Formatter<'_>, info: &SourceInfo, indent: &str, at_item: bool) -> fmt::Result {
    let mut lines = info.leading.iter().peekable();
    if at_item {
        while lines.peek().is_some_and(|c| *c == "\n") {
            lines.next();
        }
    }
    let mut prev_blank = false;
    for c in lines {
        if c == "\n" {
            if !prev_blank {
                f.write_str("\n")?;
            }
            prev_blank = true;
        } else {
            writeln!(f, "{indent}//{c}")?;
            prev_blank = false;
        }
    }
    Ok(())
}

fn write_trailing(f: &mut fmt::Formatter<'_>, info: &SourceInfo) -> fmt::Result {
    for c in &info.trailing {
        write!(f, "  //{c}")?;
    }
    f.write_str("\n")
}
