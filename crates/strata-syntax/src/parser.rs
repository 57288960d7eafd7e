//! The recursive-descent parser: tokens to a [`Module`].
//!
//! Items are parsed in order; names resolve to earlier definitions only. On an error the parser
//! records a diagnostic, skips to the next line (statement errors) or the next item keyword
//! (item errors) and goes on, so one run reports several errors. Values whose definition failed
//! are *poisoned*: statements using them are dropped without further messages.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use strata_entity::{Arena, Handle};
use strata_ir::{
    AffineExpr, AffineMap, Device, Diagnostic, DimName, Expr, ExprKind, Extent, Function, FunctionKind, Interval, Item,
    Level, LevelFormat, Module, ParamMode, Placement, QuotientOp, Ring, Scalar, SourceInfo, Span, Statement, Team,
    TensorType, Type, TypeAlias, Value,
};

use crate::ast::{AttrValue, CallAst, Keyword, Spanned};
use crate::comments::CommentCursor;
use crate::lexer::{lex, Tok, Token};
use crate::lower::{lower_op, Globals, Scope};

/// The outcome of one parse step: a diagnostic to report, or a silent failure caused by an
/// earlier, already reported error.
pub(crate) enum Fail {
    Report(Box<Diagnostic>),
    Silent,
}

impl From<Diagnostic> for Fail {
    fn from(d: Diagnostic) -> Self {
        Fail::Report(Box::new(d))
    }
}

pub(crate) type PResult<T> = Result<T, Fail>;

/// Parses a whole module. Returns every diagnostic found if there is any.
pub fn parse(src: &str) -> Result<Module, Vec<Diagnostic>> {
    let (tokens, comments, mut errors) = lex(src);
    let mut p = Parser {
        tokens,
        pos: 0,
        module: Module::default(),
        comments: CommentCursor::new(src, comments),
        errors: Vec::new(),
        declared_globals: Globals::default(),
        untyped: Vec::new(),
        inline: Vec::new(),
        depth: 0,
    };
    p.collect_global_names();
    p.module_items();
    errors.append(&mut p.errors);
    if errors.is_empty() {
        Ok(p.module)
    } else {
        errors.sort_by_key(|d| d.primary.span.start);
        Err(errors)
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    module: Module,
    comments: CommentCursor,
    errors: Vec<Diagnostic>,
    /// The file's `@names` (see [`Globals`]).
    declared_globals: Globals,
    /// The values of the function being parsed whose type the text leaves out.
    untyped: Vec<Value>,
    /// The values of the function being parsed written inside another statement.
    inline: Vec<Value>,
    /// How deep the attribute value being parsed is nested.
    depth: usize,
}

/// How deep values may be nested in the text (see `Parser::attr_value`).
pub const MAX_NESTING: usize = 1000;

/// Lowers a call whose operands may be written in place (literals and nested calls), each
/// becoming an untyped value of its own, in the order they are written (innermost first).
struct InPlace<'p> {
    module: &'p Module,
    lookup: &'p dyn Fn(&str, Span) -> PResult<Value>,
    declared_globals: &'p Globals,
    exprs: RefCell<&'p mut Arena<Expr, Span>>,
    /// The values made so far, in statement order.
    values: RefCell<Vec<Value>>,
    /// The type `()` that stands for a type left out.
    placeholder: Handle<Type>,
}

impl InPlace<'_> {
    fn lower(&self, call: &CallAst) -> PResult<strata_ir::Op> {
        let in_place = |v: &Spanned<AttrValue>| self.operand(v);
        let cx = Scope {
            module: self.module,
            value: self.lookup,
            in_place: &in_place,
            declared_globals: self.declared_globals,
        };
        lower_op(call, &cx)
    }

    fn operand(&self, v: &Spanned<AttrValue>) -> PResult<Value> {
        let (op, ty) = match &v.node {
            AttrValue::Call(call) => (self.lower(call)?, call.ty.unwrap_or(self.placeholder)),
            _ => (strata_ir::Op::Constant { value: crate::lower::literal_of(v)? }, self.placeholder),
        };
        let expr = Expr { name: String::new(), ty, kind: ExprKind::Op(op) };
        let h = self.exprs.borrow_mut().append(expr, v.span);
        self.values.borrow_mut().push(h);
        Ok(h)
    }
}

/// Per-function parsing state.
struct FunctionScope {
    values: HashMap<String, Value>,
    poisoned: HashSet<String>,
}

fn err(code: &'static str, message: impl Into<String>, span: Span, label: impl Into<String>) -> Fail {
    Fail::Report(Box::new(Diagnostic::new(code, message, span, label)))
}

impl Parser {
    // ---- token cursor ----

    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.tokens[(self.pos + k).min(self.tokens.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.tokens[self.pos].span
    }

    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    fn unexpected(&self, expected: &str) -> Fail {
        if matches!(self.peek(), Tok::Error) {
            // The lexer has reported this token already.
            return Fail::Silent;
        }
        let found = self.peek().describe();
        // When the offending token starts a new line, the problem is at the end of the
        // previous one: point there.
        let span = if self.tokens[self.pos].line_start && self.pos > 0 {
            let end = self.prev_span().end as usize;
            Span::new(end, end)
        } else {
            self.span()
        };
        err(
            "strata::parse::unexpected_token",
            format!("expected {expected}, found {found}"),
            span,
            format!("expected {expected}"),
        )
    }

    fn expect(&mut self, tok: &Tok, expected: &str) -> PResult<Span> {
        if self.peek() == tok {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn ident(&mut self, expected: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                let sp = self.bump().span;
                Ok((s, sp))
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    fn report(&mut self, f: Fail) {
        if let Fail::Report(d) = f {
            self.errors.push(*d);
        }
    }

    /// After a failed statement that began at token `start`: skips to the first token of a later
    /// line (or a `}` / end of file), never past a statement that has not been tried.
    fn recover_statement(&mut self, start: usize) {
        while !matches!(self.peek(), Tok::Eof | Tok::RBrace) {
            if self.pos > start && self.tokens[self.pos].line_start {
                break;
            }
            self.bump();
        }
    }

    /// After a failed item that began at token `start`: skips to the next line that starts an
    /// item.
    fn recover_item(&mut self, start: usize) {
        while !matches!(self.peek(), Tok::Eof) {
            let t = &self.tokens[self.pos];
            let item_start = matches!(&t.tok, Tok::Ident(k) if k == "func" || k == "program" || k == "ring")
                || matches!(t.tok, Tok::Alias(_));
            if self.pos > start && t.line_start && item_start {
                break;
            }
            self.bump();
        }
    }

    fn collect_global_names(&mut self) {
        for w in self.tokens.windows(2) {
            if let (Tok::Ident(k), Tok::Global(n)) = (&w[0].tok, &w[1].tok) {
                if k == "func" || k == "program" || k == "ring" {
                    self.declared_globals.declared.insert(n.clone());
                }
            }
        }
    }

    // ---- items ----

    fn module_items(&mut self) {
        loop {
            let start = self.pos;
            match self.peek().clone() {
                Tok::Eof => break,
                Tok::Alias(_) => {
                    if let Err(e) = self.alias_item() {
                        self.report(e);
                        self.recover_item(start);
                    }
                }
                Tok::Ident(k) if k == "ring" => {
                    if let Err(e) = self.ring_item() {
                        self.report(e);
                        self.recover_item(start);
                    }
                }
                Tok::Ident(k) if k == "func" || k == "program" => {
                    if let Err(e) = self.function_item() {
                        self.report(e);
                        self.recover_item(start);
                    }
                }
                _ => {
                    let f = err(
                        "strata::parse::unexpected_token",
                        format!(
                            "expected an item (`func`, `program`, `ring` or `!Alias = type`), found {}",
                            self.peek().describe()
                        ),
                        self.span(),
                        "not an item",
                    );
                    self.report(f);
                    self.recover_item(start);
                }
            }
        }
        self.module.trailing_comments = self.comments.rest();
    }

    fn check_global_unique(&self, name: &str, span: Span) -> PResult<()> {
        let taken = self.declared_globals.functions.contains_key(name) || self.declared_globals.rings.contains(name);
        if taken {
            return Err(err(
                "strata::parse::duplicate_definition",
                format!("`@{name}` is defined twice"),
                span,
                "second definition",
            ));
        }
        Ok(())
    }

    fn alias_item(&mut self) -> PResult<()> {
        let start = self.span();
        let Tok::Alias(name) = self.bump().tok else { unreachable!("checked by caller") };
        if self.module.aliases.iter().any(|(_, a)| a.name == name) {
            return Err(err(
                "strata::parse::duplicate_definition",
                format!("type alias `!{name}` is defined twice"),
                start,
                "second definition",
            ));
        }
        self.expect(&Tok::Eq, "`=` after the alias name")?;
        let ty = self.parse_type()?;
        let span = start.join(self.prev_span());
        let info = self.comments.info(span);
        let h = self.module.aliases.append(TypeAlias { name, ty }, info);
        self.module.items.push(Item::Alias(h));
        Ok(())
    }

    fn ring_item(&mut self) -> PResult<()> {
        let start = self.bump().span;
        let (name, name_span) = match self.peek().clone() {
            Tok::Global(n) => (n, self.bump().span),
            _ => return Err(self.unexpected("a ring name `@name`")),
        };
        self.check_global_unique(&name, name_span)?;
        self.expect(&Tok::Lt, "`<` and the ring's element type")?;
        let (ename, espan) = self.ident("a scalar element type")?;
        let element = Scalar::from_name(&ename).ok_or_else(|| {
            err("strata::parse::unknown_type", format!("unknown scalar type `{ename}`"), espan, "not a scalar type")
        })?;
        self.expect(&Tok::Gt, "`>`")?;
        let call = self.call_args(String::from("ring"), name_span)?;
        let mut zero = None;
        let mut add = None;
        let mut mul = None;
        if let Some(p) = call.positional.first() {
            return Err(err(
                "strata::parse::unexpected_argument",
                "ring parameters are keywords: `zero`, `add`, `mul`",
                p.span,
                "write `key = value`",
            ));
        }
        for kw in &call.keywords {
            match kw.key.as_str() {
                "zero" => zero = Some(crate::lower::literal_of(&kw.value)?),
                "add" | "mul" => {
                    let AttrValue::Global(fname) = &kw.value.node else {
                        return Err(err(
                            "strata::parse::wrong_attribute",
                            format!("`{}` expects a function `@name`", kw.key),
                            kw.value.span,
                            "not a function",
                        ));
                    };
                    let f = self.resolve_function(fname, kw.value.span)?;
                    if kw.key == "add" {
                        add = Some(f);
                    } else {
                        mul = Some(f);
                    }
                }
                other => {
                    return Err(err(
                        "strata::parse::unknown_attribute",
                        format!("rings have no parameter `{other}`"),
                        kw.key_span,
                        "expected `zero`, `add` or `mul`",
                    ))
                }
            }
        }
        let missing = |what: &str| {
            err(
                "strata::parse::missing_attribute",
                format!("ring `@{name}` needs `{what}`"),
                call.span,
                format!("`{what} = …` missing"),
            )
        };
        let ring = Ring {
            zero: zero.ok_or_else(|| missing("zero"))?,
            add: add.ok_or_else(|| missing("add"))?,
            mul: mul.ok_or_else(|| missing("mul"))?,
            name,
            element,
        };
        let span = start.join(self.prev_span());
        let info = self.comments.info(span);
        self.declared_globals.rings.insert(ring.name.clone());
        let h = self.module.rings.append(ring, info);
        self.module.items.push(Item::Ring(h));
        Ok(())
    }

    fn resolve_function(&self, name: &str, span: Span) -> PResult<Handle<Function>> {
        crate::lower::resolve_function(&self.declared_globals, name, span)
    }

    fn function_item(&mut self) -> PResult<()> {
        let kw = self.bump();
        let kind =
            if matches!(&kw.tok, Tok::Ident(k) if k == "program") { FunctionKind::Program } else { FunctionKind::Func };
        let (name, name_span) = match self.peek().clone() {
            Tok::Global(n) => (n, self.bump().span),
            _ => return Err(self.unexpected("a function name `@name`")),
        };
        self.check_global_unique(&name, name_span)?;
        let mut exprs: Arena<Expr, Span> = Arena::new();
        let mut scope = FunctionScope { values: HashMap::new(), poisoned: HashSet::new() };
        let mut params = Vec::new();
        self.expect(&Tok::LParen, "`(` and the parameter list")?;
        while !matches!(self.peek(), Tok::RParen) {
            let (pname, pspan) = match self.peek().clone() {
                Tok::Value(n) => (n, self.bump().span),
                _ => return Err(self.unexpected("a parameter `%name`")),
            };
            // A `func` parameter may leave its type out: the function is generic, typed per call.
            if kind == FunctionKind::Func && matches!(self.peek(), Tok::Comma | Tok::RParen) {
                let ty = self.placeholder_type();
                let h = self.param(&mut exprs, &mut scope, pname, pspan, ty, ParamMode::In)?;
                self.untyped.push(h);
                params.push(h);
                if !self.eat(&Tok::Comma) {
                    break;
                }
                continue;
            }
            self.expect(&Tok::Colon, "`:` and the parameter type")?;
            let mut mode = ParamMode::In;
            if matches!(self.peek(), Tok::Ident(k) if k == "out") {
                let ospan = self.bump().span;
                if kind == FunctionKind::Func {
                    return Err(Fail::Report(Box::new(
                        Diagnostic::new(
                            "strata::parse::out_param_in_func",
                            "a `func` cannot have `out` parameters",
                            ospan,
                            "only programs write outputs",
                        )
                        .with_help("return the result, or make this a `program`"),
                    )));
                }
                mode = ParamMode::Out;
            }
            let ty = self.parse_type()?;
            let h = self.param(&mut exprs, &mut scope, pname, pspan, ty, mode)?;
            params.push(h);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RParen, "`,` or `)`")?;
        let mut results = Vec::new();
        let mut result_inferred = false;
        if self.eat(&Tok::Arrow) {
            let rspan = self.prev_span();
            if kind == FunctionKind::Program {
                return Err(Fail::Report(Box::new(
                    Diagnostic::new(
                        "strata::parse::program_result",
                        "a `program` has no result type",
                        rspan,
                        "programs write `out` parameters instead",
                    )
                    .with_help("declare an `out` parameter and assign to it with `<-`"),
                )));
            }
            results.push(self.parse_type()?);
            // Several results: `-> T1, T2` (`(T1, T2)` is one tuple-typed result).
            while self.eat(&Tok::Comma) {
                results.push(self.parse_type()?);
            }
        } else if kind == FunctionKind::Func {
            // Left out: inferred from the returned value.
            if !matches!(self.peek(), Tok::LBrace) {
                return Err(self.unexpected("`->` and the result type, or `{`"));
            }
            result_inferred = true;
        }
        self.expect(&Tok::LBrace, "`{`")?;
        let header = kw.span.join(self.prev_span());
        let info = self.comments.info(header);
        let mut body: Arena<Statement, SourceInfo> = Arena::new();
        loop {
            match self.peek() {
                Tok::RBrace => break,
                Tok::Eof => {
                    return Err(err(
                        "strata::parse::unexpected_token",
                        format!("`@{name}` is missing its closing `}}`"),
                        self.span(),
                        "file ends here",
                    ))
                }
                _ => {}
            }
            let start = self.span();
            let start_pos = self.pos;
            let inline_before = self.inline.len();
            match self.statement(kind, &mut exprs, &mut scope) {
                Ok(stmts) => {
                    for &v in &self.inline[inline_before..] {
                        body.append(Statement::Let(v), SourceInfo::default());
                    }
                    let span = start.join(self.prev_span());
                    let sinfo = self.comments.info(span);
                    let mut stmts = stmts.into_iter();
                    body.append(stmts.next().expect("a statement"), sinfo);
                    for further in stmts {
                        body.append(further, SourceInfo::default());
                    }
                }
                Err(e) => {
                    self.report(e);
                    self.recover_statement(start_pos);
                }
            }
        }
        let close = self.bump().span;
        let closing_comments = self.comments.before(close.start as usize);
        let untyped = std::mem::take(&mut self.untyped);
        let inline = std::mem::take(&mut self.inline);
        // Values written in place get names no statement of the function uses: `_1`, `_2`, …
        let mut n = 0;
        for &v in &inline {
            let fresh = loop {
                n += 1;
                let candidate = format!("_{n}");
                if !scope.values.contains_key(&candidate) {
                    break candidate;
                }
            };
            exprs[v].name = fresh;
        }
        let f = Function {
            name,
            kind,
            params,
            results,
            result_inferred,
            exprs,
            body,
            closing_comments,
            untyped: untyped.into_iter().collect(),
            inline: inline.into_iter().collect(),
            instance_of: None,
        };
        let name = f.name.clone();
        let h = self.module.functions.append(f, info);
        self.declared_globals.functions.insert(name, h);
        self.module.items.push(Item::Function(h));
        Ok(())
    }

    /// Declares parameter `%name` of type `ty`.
    fn param(
        &mut self,
        exprs: &mut Arena<Expr, Span>,
        scope: &mut FunctionScope,
        name: String,
        span: Span,
        ty: Handle<Type>,
        mode: ParamMode,
    ) -> PResult<Value> {
        if scope.values.contains_key(&name) {
            return Err(err(
                "strata::parse::duplicate_value",
                format!("parameter `%{name}` is declared twice"),
                span,
                "second declaration",
            ));
        }
        let h = exprs.append(Expr { name: name.clone(), ty, kind: ExprKind::Param(mode) }, span.join(self.prev_span()));
        scope.values.insert(name, h);
        Ok(h)
    }

    fn lookup_value(&self, scope: &FunctionScope, name: &str, span: Span) -> PResult<Value> {
        if let Some(&v) = scope.values.get(name) {
            return Ok(v);
        }
        if scope.poisoned.contains(name) {
            return Err(Fail::Silent);
        }
        Err(err(
            "strata::parse::unknown_value",
            format!("no value named `%{name}` is defined before this point"),
            span,
            "unknown value",
        ))
    }

    fn statement(
        &mut self,
        kind: FunctionKind,
        exprs: &mut Arena<Expr, Span>,
        scope: &mut FunctionScope,
    ) -> PResult<Vec<Statement>> {
        match self.peek().clone() {
            Tok::Ident(k) if k == "return" => {
                let rspan = self.bump().span;
                if kind == FunctionKind::Program {
                    return Err(err(
                        "strata::parse::return_in_program",
                        "`return` in a `program`",
                        rspan,
                        "programs assign to `out` parameters",
                    ));
                }
                let mut values =
                    vec![self.statement_operand(exprs, scope, "the returned value `%name` or an operation")?];
                while self.eat(&Tok::Comma) {
                    values.push(self.statement_operand(exprs, scope, "a further returned value")?);
                }
                Ok(vec![Statement::Return(values)])
            }
            Tok::Value(name) => {
                let name_span = self.bump().span;
                match self.peek() {
                    Tok::Eq | Tok::Comma => {
                        // `%q, %r = call(…)` binds the results of a multi-result call.
                        let mut names = vec![(name, name_span)];
                        while self.eat(&Tok::Comma) {
                            match self.peek().clone() {
                                Tok::Value(n) => names.push((n, self.bump().span)),
                                _ => return Err(self.unexpected("a further result `%name`")),
                            }
                        }
                        self.expect(&Tok::Eq, "`=`")?;
                        let result = self.let_statement(&names, exprs, scope);
                        if result.is_err() {
                            scope.poisoned.extend(names.into_iter().map(|(n, _)| n));
                        }
                        result
                    }
                    Tok::Assign | Tok::LBracket => {
                        if kind == FunctionKind::Func {
                            return Err(err(
                                "strata::parse::assign_in_func",
                                "assignment in a `func`",
                                name_span,
                                "only programs assign to outputs",
                            ));
                        }
                        let target = self.lookup_value(scope, &name, name_span)?;
                        let mut domain = None;
                        if self.eat(&Tok::LBracket) {
                            let mut d = Vec::new();
                            while !matches!(self.peek(), Tok::RBracket) {
                                let (dn, _) = self.ident("a dimension `Name[start:stop]`")?;
                                let iv = self.interval()?;
                                d.push((DimName(dn), iv));
                                if !self.eat(&Tok::Comma) {
                                    break;
                                }
                            }
                            self.expect(&Tok::RBracket, "`,` or `]`")?;
                            domain = Some(d);
                        }
                        self.expect(&Tok::Assign, "`<-`")?;
                        let value =
                            self.statement_operand(exprs, scope, "the assigned value `%name` or an operation")?;
                        Ok(vec![Statement::Assign { target, domain, value }])
                    }
                    _ => Err(self.unexpected("`=` or `<-`")),
                }
            }
            _ => Err(self.unexpected("a statement (`%name = op(…) : type`, `%out <- %value` or `return %value`)")),
        }
    }

    /// `%x = op(…) [: T]`, or `%a, %b = call(…) [: T1, T2]` for a multi-result call (one `Let`
    /// per result, each a `call` taking its own).
    fn let_statement(
        &mut self,
        names: &[(String, Span)],
        exprs: &mut Arena<Expr, Span>,
        scope: &mut FunctionScope,
    ) -> PResult<Vec<Statement>> {
        for (name, span) in names {
            if scope.values.contains_key(name) || names.iter().filter(|(n, _)| n == name).count() > 1 {
                return Err(err(
                    "strata::parse::duplicate_value",
                    format!("value `%{name}` is defined twice"),
                    *span,
                    "redefined here",
                ));
            }
        }
        let (op_name, op_span) = self.ident("an operation name")?;
        let call = self.call_args(op_name, op_span)?;
        // `: type` may be left out: the verifier's inference fills it in (`elaborate`). A type
        // written without its `:` is an error, not the start of the next statement.
        if matches!(self.peek(), Tok::Alias(_)) || matches!(self.peek(), Tok::Ident(n) if n != "return") {
            self.expect(&Tok::Colon, "`:` and the result type")?;
        }
        let omitted = !matches!(self.peek(), Tok::Colon);
        let mut types = Vec::new();
        if omitted {
            types.resize(names.len(), self.placeholder_type());
        } else {
            self.bump();
            types.push(self.parse_type()?);
            while types.len() < names.len() {
                self.expect(&Tok::Comma, "`,` and the type of the next result")?;
                types.push(self.parse_type()?);
            }
        }
        let op = self.with_in_place(exprs, scope, |w| w.lower(&call))?;
        let span = names[0].1.join(call.span);
        self.check_results(&op, names.len(), span)?;
        let mut stmts = Vec::new();
        for (k, ((name, name_span), ty)) in names.iter().zip(types).enumerate() {
            let mut op = op.clone();
            if let strata_ir::Op::Call { result, .. } = &mut op {
                *result = k as u32;
            }
            let h = exprs.append(Expr { name: name.clone(), ty, kind: ExprKind::Op(op) }, name_span.join(call.span));
            if omitted {
                self.untyped.push(h);
            }
            scope.values.insert(name.clone(), h);
            stmts.push(Statement::Let(h));
        }
        Ok(stmts)
    }

    /// Checks that `op` binds as many values (`bound`) as it has results: several only for a
    /// `call` of a function with several.
    fn check_results(&self, op: &strata_ir::Op, bound: usize, span: Span) -> PResult<()> {
        let (have, what) = match op {
            strata_ir::Op::Call { func, .. } => {
                let f = &self.module.functions[*func];
                // A program has no results to count: the verifier says it cannot be called.
                if f.kind == FunctionKind::Program {
                    return Ok(());
                }
                // An inferred result list has as many entries as the `return` has values.
                let n = if f.result_inferred {
                    f.body.iter().find_map(|(_, s)| if let Statement::Return(vs) = s { Some(vs.len()) } else { None })
                } else {
                    Some(f.results.len())
                };
                (n.unwrap_or(1), format!("`@{}`", f.name))
            }
            _ => (1, format!("`{}`", op.name())),
        };
        if have == bound {
            return Ok(());
        }
        Err(Fail::Report(Box::new(
            Diagnostic::new(
                "strata::parse::result_count_mismatch",
                format!(
                    "{what} has {have} result{}, but {bound} value{} bound",
                    if have == 1 { "" } else { "s" },
                    if bound == 1 { " is" } else { "s are" }
                ),
                span,
                "results and names differ",
            )
            .with_help(if have > 1 {
                "bind each result: `%a, %b = call(@f, …)` (a call written in place has one result)"
            } else {
                "bind one name"
            }),
        )))
    }

    /// The type `()` that stands for a type the text leaves out (until `elaborate`).
    fn placeholder_type(&mut self) -> Handle<Type> {
        self.module.types.insert(Type::Tuple(Vec::new()))
    }

    /// Runs `f` with an [`InPlace`] lowering; the values it writes in place become statements
    /// of their own just before the current one.
    fn with_in_place<T>(
        &mut self,
        exprs: &mut Arena<Expr, Span>,
        scope: &FunctionScope,
        f: impl FnOnce(&InPlace) -> PResult<T>,
    ) -> PResult<T> {
        let placeholder = self.placeholder_type();
        let (out, values) = {
            let lookup = |n: &str, sp: Span| self.lookup_value(scope, n, sp);
            let written = InPlace {
                module: &self.module,
                lookup: &lookup,
                declared_globals: &self.declared_globals,
                exprs: RefCell::new(exprs),
                values: RefCell::new(Vec::new()),
                placeholder,
            };
            let out = f(&written)?;
            (out, written.values.into_inner())
        };
        for v in values {
            if let ExprKind::Op(op) = &exprs[v].kind {
                self.check_results(op, 1, *exprs.meta(v))?;
            }
            if exprs[v].ty == placeholder {
                self.untyped.push(v);
            }
            self.inline.push(v);
        }
        Ok(out)
    }

    /// The operand of `return` or `<-`: `%name`, or an operation or literal written in place.
    fn statement_operand(
        &mut self,
        exprs: &mut Arena<Expr, Span>,
        scope: &FunctionScope,
        expected: &str,
    ) -> PResult<Value> {
        if let Tok::Value(name) = self.peek().clone() {
            let span = self.bump().span;
            return self.lookup_value(scope, &name, span);
        }
        if !matches!(self.peek(), Tok::Ident(_) | Tok::Int(_) | Tok::Float(_) | Tok::Minus) {
            return Err(self.unexpected(expected));
        }
        let v = self.attr_value()?;
        if !v.node.is_in_place_operand() {
            return Err(err(
                "strata::parse::unexpected_token",
                format!("expected {expected}, found {}", v.node.describe()),
                v.span,
                "not a value",
            ));
        }
        self.with_in_place(exprs, scope, |w| w.operand(&v))
    }

    /// Parses `(args)` after an op name.
    fn call_args(&mut self, name: String, name_span: Span) -> PResult<CallAst> {
        self.expect(&Tok::LParen, "`(` and the operation's arguments")?;
        let mut positional = Vec::new();
        let mut keywords: Vec<Keyword> = Vec::new();
        while !matches!(self.peek(), Tok::RParen) {
            if let (Tok::Ident(k), Tok::Eq) = (self.peek().clone(), self.peek_at(1).clone()) {
                let key_span = self.bump().span;
                self.bump();
                if keywords.iter().any(|kw| kw.key == k) {
                    return Err(err(
                        "strata::parse::duplicate_attribute",
                        format!("attribute `{k}` is given twice"),
                        key_span,
                        "again here",
                    ));
                }
                let value = self.attr_value()?;
                keywords.push(Keyword { key: k, key_span, value });
            } else {
                if let Some(kw) = keywords.last() {
                    let v = self.attr_value()?;
                    return Err(Fail::Report(Box::new(
                        Diagnostic::new(
                            "strata::parse::positional_after_keyword",
                            "positional argument after a keyword attribute",
                            v.span,
                            "positional argument",
                        )
                        .with_label(kw.key_span, "keyword attribute")
                        .with_help("write value operands first, then `key = value` attributes"),
                    )));
                }
                positional.push(self.attr_value()?);
            }
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        let close = self.expect(&Tok::RParen, "`,` or `)`")?;
        Ok(CallAst { name, name_span, positional, keywords, span: name_span.join(close), ty: None })
    }

    // ---- attributes ----

    /// Applies a sign to an integer token's magnitude, checking the 64-bit range.
    fn int_value(&self, neg: bool, magnitude: u64, span: Span) -> PResult<i64> {
        let v = if neg { -(magnitude as i128) } else { magnitude as i128 };
        i64::try_from(v).map_err(|_| {
            err(
                "strata::parse::invalid_number",
                format!("integer literal `{v}` does not fit in 64 bits"),
                span,
                "too large",
            )
        })
    }

    fn signed_int(&mut self) -> PResult<i64> {
        let neg = self.eat(&Tok::Minus);
        match self.peek().clone() {
            Tok::Int(v) => {
                let span = self.bump().span;
                self.int_value(neg, v, span)
            }
            _ => Err(self.unexpected("an integer")),
        }
    }

    fn interval(&mut self) -> PResult<Interval> {
        self.expect(&Tok::LBracket, "`[start:stop]`")?;
        let start = self.signed_int()?;
        self.expect(&Tok::Colon, "`:` between start and stop")?;
        let stop = self.signed_int()?;
        self.expect(&Tok::RBracket, "`]`")?;
        Ok(Interval::new(start, stop))
    }

    /// An attribute value or operand, nested at most [`MAX_NESTING`] deep (calls written in
    /// place, lists, tuples): deeper text is refused with a located error instead of
    /// exhausting the stack of this parser or of the passes that walk the nesting.
    fn attr_value(&mut self) -> PResult<Spanned<AttrValue>> {
        if self.depth >= MAX_NESTING {
            let d = Diagnostic::new(
                "strata::parse::too_deep",
                format!("expression nested deeper than {MAX_NESTING} levels"),
                self.span(),
                "nested too deep",
            );
            return Err(Fail::Report(Box::new(d.with_help("name intermediate values with `%v = …` statements"))));
        }
        self.depth += 1;
        let value = self.attr_value_at_depth();
        self.depth -= 1;
        value
    }

    fn attr_value_at_depth(&mut self) -> PResult<Spanned<AttrValue>> {
        let start = self.span();
        let node = match self.peek().clone() {
            Tok::Minus => {
                self.bump();
                match self.peek().clone() {
                    Tok::Int(v) => {
                        let span = self.bump().span;
                        AttrValue::Int(self.int_value(true, v, span)?)
                    }
                    Tok::Float(x) => {
                        self.bump();
                        AttrValue::Float(-x)
                    }
                    Tok::Ident(w) if w == "inf" => {
                        self.bump();
                        AttrValue::Float(f64::NEG_INFINITY)
                    }
                    _ => return Err(self.unexpected("a number after `-`")),
                }
            }
            Tok::Int(v) => {
                let span = self.bump().span;
                AttrValue::Int(self.int_value(false, v, span)?)
            }
            Tok::Float(x) => {
                self.bump();
                AttrValue::Float(x)
            }
            Tok::Str(s) => {
                self.bump();
                AttrValue::Str(s)
            }
            Tok::Value(v) => {
                self.bump();
                AttrValue::Value(v)
            }
            Tok::Global(g) => {
                self.bump();
                AttrValue::Global(g)
            }
            Tok::Ident(w) => {
                self.bump();
                match w.as_str() {
                    "true" => AttrValue::Bool(true),
                    "false" => AttrValue::Bool(false),
                    "inf" => AttrValue::Float(f64::INFINITY),
                    "nan" => AttrValue::Float(f64::NAN),
                    _ if matches!(self.peek(), Tok::LParen) => {
                        let name_span = self.prev_span();
                        let mut call = self.call_args(w, name_span)?;
                        // A call written in place may carry its type (`constant` and `convert`
                        // need one): `unpack(convert(%c) : tensor<…>)`.
                        if self.eat(&Tok::Colon) {
                            call.ty = Some(self.parse_type()?);
                        }
                        AttrValue::Call(Box::new(call))
                    }
                    _ if matches!(self.peek(), Tok::LBracket) => {
                        let iv = self.interval()?;
                        AttrValue::Interval(w, iv)
                    }
                    _ => AttrValue::Word(w),
                }
            }
            Tok::LBracket => {
                self.bump();
                let items = self.attr_list(&Tok::RBracket)?;
                AttrValue::List(items)
            }
            Tok::LParen => {
                self.bump();
                let items = self.attr_list(&Tok::RParen)?;
                if self.eat(&Tok::Arrow) {
                    AttrValue::Map(self.affine_map(items, start)?)
                } else {
                    AttrValue::Tuple(items)
                }
            }
            _ => return Err(self.unexpected("an attribute value")),
        };
        Ok(Spanned { node, span: start.join(self.prev_span()) })
    }

    fn attr_list(&mut self, close: &Tok) -> PResult<Vec<Spanned<AttrValue>>> {
        let mut items = Vec::new();
        while self.peek() != close {
            items.push(self.attr_value()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(close, &format!("`,` or {}", close.describe()))?;
        Ok(items)
    }

    fn affine_map(&mut self, dims: Vec<Spanned<AttrValue>>, start: Span) -> PResult<AffineMap> {
        for (i, d) in dims.iter().enumerate() {
            let ok = matches!(&d.node, AttrValue::Word(w) if *w == format!("d{i}"));
            if !ok {
                return Err(err(
                    "strata::parse::invalid_affine_map",
                    format!("affine map dimensions must be named `d0, d1, …` in order; position {i} should be `d{i}`"),
                    d.span,
                    "unexpected dimension name",
                ));
            }
        }
        let num_dims = dims.len() as u32;
        self.expect(&Tok::LParen, "`(` and the map's results")?;
        let mut results = Vec::new();
        while !matches!(self.peek(), Tok::RParen) {
            results.push(self.affine_expr(num_dims)?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RParen, "`,` or `)`")?;
        let _ = start;
        Ok(AffineMap { num_dims, results })
    }

    /// `expr := ['-'] term (('+' | '-') term)*`.
    fn affine_expr(&mut self, num_dims: u32) -> PResult<AffineExpr> {
        let start = self.span();
        let mut sign = if self.eat(&Tok::Minus) { -1 } else { 1 };
        let mut e = AffineExpr::default();
        loop {
            let t = self.affine_term(num_dims, sign < 0)?;
            e = e.scaled_add(&t, 1).ok_or_else(|| self.affine_overflow(start))?;
            if self.eat(&Tok::Plus) {
                sign = 1;
            } else if self.eat(&Tok::Minus) {
                sign = -1;
            } else {
                return Ok(e);
            }
        }
    }

    fn affine_overflow(&self, start: Span) -> Fail {
        err(
            "strata::parse::invalid_number",
            "affine coefficients do not fit in 64 bits",
            start.join(self.prev_span()),
            "overflows",
        )
    }

    /// `term := factor (('*' factor) | ('floordiv' INT) | ('mod' INT))*`, negated if `negate`:
    /// products need one constant factor (the map stays affine), divisors are positive
    /// constants.
    fn affine_term(&mut self, num_dims: u32, negate: bool) -> PResult<AffineExpr> {
        let start = self.span();
        let neg =
            |p: &Self, e: &AffineExpr| AffineExpr::default().scaled_add(e, -1).ok_or_else(|| p.affine_overflow(start));
        // A leading integer takes the sign itself, so that `-9223372036854775808*d0` fits.
        let (mut e, mut pending) = match self.peek().clone() {
            Tok::Int(c) if negate => {
                let span = self.bump().span;
                (AffineExpr::constant(self.int_value(true, c, span)?), false)
            }
            _ => (self.affine_factor(num_dims)?, negate),
        };
        loop {
            if self.eat(&Tok::Star) {
                let rhs = self.affine_factor(num_dims)?;
                let product = match (e.as_constant(), rhs.as_constant()) {
                    (Some(k), _) => AffineExpr::default().scaled_add(&rhs, k),
                    (None, Some(k)) => AffineExpr::default().scaled_add(&e, k),
                    (None, None) => {
                        return Err(err(
                            "strata::parse::invalid_affine_map",
                            "a product of two loop-dependent expressions is not affine",
                            start.join(self.prev_span()),
                            "one factor must be a constant",
                        ))
                    }
                };
                e = product.ok_or_else(|| self.affine_overflow(start))?;
                continue;
            }
            let op = match self.peek() {
                Tok::Ident(w) if w == "floordiv" => QuotientOp::FloorDiv,
                Tok::Ident(w) if w == "mod" => QuotientOp::Mod,
                _ if pending => return neg(self, &e),
                _ => return Ok(e),
            };
            if negate && !pending {
                // `-c floordiv k` is `-(c floordiv k)`: take the sign back out of the constant.
                e = neg(self, &e)?;
                pending = true;
            }
            self.bump();
            let by = match self.peek().clone() {
                Tok::Int(k) if k > 0 => {
                    let span = self.bump().span;
                    self.int_value(false, k, span)?
                }
                _ => {
                    let span = self.span();
                    return Err(err(
                        "strata::parse::invalid_affine_map",
                        format!("`{}` needs a positive integer divisor", op.keyword()),
                        span,
                        "expected a positive integer",
                    ));
                }
            };
            e = e.quotient(op, by);
        }
    }

    /// `factor := INT | dN | '(' expr ')'`.
    fn affine_factor(&mut self, num_dims: u32) -> PResult<AffineExpr> {
        match self.peek().clone() {
            Tok::Int(c) => {
                let span = self.bump().span;
                Ok(AffineExpr::constant(self.int_value(false, c, span)?))
            }
            Tok::Ident(_) => Ok(AffineExpr::dim(self.affine_dim(num_dims)?)),
            Tok::LParen => {
                self.bump();
                let e = self.affine_expr(num_dims)?;
                self.expect(&Tok::RParen, "`)`")?;
                Ok(e)
            }
            _ => Err(self.unexpected("an affine term (`dN`, `c*dN`, an integer or `(…)`)")),
        }
    }

    fn affine_dim(&mut self, num_dims: u32) -> PResult<u32> {
        let (w, span) = self.ident("a loop dimension `dN`")?;
        let d = w.strip_prefix('d').and_then(|n| n.parse::<u32>().ok());
        match d {
            Some(d) if d < num_dims => Ok(d),
            Some(_) => Err(err(
                "strata::parse::invalid_affine_map",
                format!("`{w}` is not among the map's {num_dims} dimensions"),
                span,
                "out of range",
            )),
            None => Err(err(
                "strata::parse::invalid_affine_map",
                format!("`{w}` is not a loop dimension"),
                span,
                "expected `d0`, `d1`, …",
            )),
        }
    }

    // ---- types ----

    fn parse_type(&mut self) -> PResult<Handle<Type>> {
        match self.peek().clone() {
            Tok::Alias(name) => {
                let span = self.bump().span;
                match self.module.aliases.iter().find(|(_, a)| a.name == name) {
                    Some((_, a)) => Ok(a.ty),
                    None => Err(err(
                        "strata::parse::unknown_type",
                        format!("no type alias `!{name}` is defined before this point"),
                        span,
                        "unknown alias",
                    )),
                }
            }
            Tok::Ident(w) if w == "tensor" => self.tensor_type(),
            Tok::Ident(w) => {
                let span = self.bump().span;
                match Scalar::from_name(&w) {
                    Some(s) => Ok(self.module.types.insert(Type::Scalar(s))),
                    None => Err(Fail::Report(Box::new(
                        Diagnostic::new(
                            "strata::parse::unknown_type",
                            format!("unknown type `{w}`"),
                            span,
                            "not a type",
                        )
                        .with_help("scalar types are bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, index"),
                    ))),
                }
            }
            Tok::LParen => {
                let start = self.bump().span;
                let mut fields = Vec::new();
                let mut trailing_comma = false;
                while !matches!(self.peek(), Tok::RParen) {
                    fields.push(self.parse_type()?);
                    trailing_comma = self.eat(&Tok::Comma);
                    if !trailing_comma {
                        break;
                    }
                }
                self.expect(&Tok::RParen, "`,` or `)`")?;
                if self.eat(&Tok::Arrow) {
                    let result = self.parse_type()?;
                    return Ok(self.module.types.insert(Type::Function { params: fields, result }));
                }
                if fields.is_empty() {
                    return Err(err(
                        "strata::parse::empty_tuple",
                        "empty tuple type",
                        start.join(self.prev_span()),
                        "a tuple needs at least one field",
                    ));
                }
                if fields.len() == 1 && !trailing_comma {
                    return Ok(fields[0]);
                }
                Ok(self.module.types.insert(Type::Tuple(fields)))
            }
            _ => Err(self.unexpected("a type")),
        }
    }

    fn tensor_type(&mut self) -> PResult<Handle<Type>> {
        self.bump();
        self.expect(&Tok::Lt, "`<` after `tensor`")?;
        let mut levels = Vec::new();
        if let Tok::Shape(dims) = self.peek().clone() {
            self.bump();
            for (i, n) in dims.iter().enumerate() {
                levels.push(Level::dense(DimName::positional(i), Interval::from_len(*n)));
            }
        }
        let element = self.parse_type()?;
        let mut placement = Placement::HOST;
        let positional = !levels.is_empty();
        while self.eat(&Tok::Comma) {
            let (name, span) = self.ident("a dimension `Name[start:stop]` or `device = …` / `team = …`")?;
            if self.eat(&Tok::Eq) {
                match name.as_str() {
                    "device" => {
                        let d = match self.peek().clone() {
                            Tok::Ident(d) | Tok::Str(d) => {
                                self.bump();
                                d
                            }
                            _ => return Err(self.unexpected("a device name")),
                        };
                        placement.device = if d == "cpu" { Device::Cpu } else { Device::Named(d) };
                    }
                    "team" if matches!(self.peek(), Tok::Ident(w) if w == "world") => {
                        self.bump();
                        placement.team = Some(Team { ranks: Team::WORLD });
                    }
                    "team" => {
                        let n = self.signed_int()?;
                        if n < 1 || n > u32::MAX as i64 {
                            return Err(err(
                                "strata::parse::invalid_team",
                                format!("a team has at least one rank, not {n}"),
                                self.prev_span(),
                                "team size",
                            ));
                        }
                        placement.team = Some(Team { ranks: n as u32 });
                    }
                    other => {
                        return Err(err(
                            "strata::parse::unknown_attribute",
                            format!("tensor types have no attribute `{other}`"),
                            span,
                            "expected `device` or `team`",
                        ))
                    }
                }
                continue;
            }
            if positional {
                return Err(Fail::Report(Box::new(
                    Diagnostic::new(
                        "strata::parse::mixed_shape_forms",
                        "named dimensions cannot follow a positional shape",
                        span,
                        "named dimension",
                    )
                    .with_help("write every dimension by name: `tensor<f32, _0[0:4], _1[0:8], J[0:3]>`"),
                )));
            }
            if !matches!(self.peek(), Tok::LBracket) {
                return Err(self.unexpected(&format!("`[start:stop]` after dimension `{name}`")));
            }
            let iv = self.interval()?;
            let format = self.level_format()?;
            levels.push(Level { name: DimName(name), interval: iv, format });
        }
        self.expect(&Tok::Gt, "`,` or `>` closing the tensor type")?;
        Ok(self.module.types.insert(Type::Tensor(TensorType { element, levels, placement })))
    }

    fn level_format(&mut self) -> PResult<LevelFormat> {
        let Tok::Ident(kw) = self.peek().clone() else {
            return Ok(LevelFormat::Dense);
        };
        if self.tokens[self.pos].line_start {
            // A word on the next line is not this level's format (the `>` is missing).
            return Ok(LevelFormat::Dense);
        }
        let span = self.span();
        let base = match kw.as_str() {
            "dense" => LevelFormat::Dense,
            "compressed" => LevelFormat::COMPRESSED,
            "singleton" => LevelFormat::Singleton { unique: true, ordered: true },
            "ragged" => LevelFormat::Ragged { total: Extent::Dynamic },
            "block" => LevelFormat::Block,
            _ => {
                return Err(Fail::Report(Box::new(
                    Diagnostic::new(
                        "strata::parse::unknown_format",
                        format!("unknown level format `{kw}`"),
                        span,
                        "not a format",
                    )
                    .with_help("level formats are dense, compressed, singleton, ragged and block"),
                )))
            }
        };
        self.bump();
        if !self.eat(&Tok::LParen) {
            return Ok(base);
        }
        let mut fmt = base;
        while !matches!(self.peek(), Tok::RParen) {
            let (opt, ospan) = self.ident("a format option")?;
            let bad = || {
                err("strata::parse::unknown_format", format!("`{kw}` has no option `{opt}`"), ospan, "unknown option")
            };
            match (&mut fmt, opt.as_str()) {
                (LevelFormat::Compressed { unique, .. } | LevelFormat::Singleton { unique, .. }, "nonunique") => {
                    *unique = false
                }
                (LevelFormat::Compressed { ordered, .. } | LevelFormat::Singleton { ordered, .. }, "nonordered") => {
                    *ordered = false
                }
                (LevelFormat::Compressed { nnz: n, .. }, "nnz") | (LevelFormat::Ragged { total: n }, "total") => {
                    self.expect(&Tok::Eq, "`=`")?;
                    *n = if self.eat(&Tok::Question) {
                        Extent::Dynamic
                    } else {
                        let v = self.signed_int()?;
                        if v < 0 {
                            return Err(err(
                                "strata::parse::invalid_number",
                                "a count cannot be negative",
                                self.prev_span(),
                                "negative",
                            ));
                        }
                        Extent::Static(v as u64)
                    };
                }
                _ => return Err(bad()),
            }
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RParen, "`,` or `)`")?;
        Ok(fmt)
    }
}
