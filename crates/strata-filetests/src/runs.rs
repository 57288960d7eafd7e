//! `// test: run`: `// run:` lines run the file's entries on both backends (Cranelift's
//! runtests), each answered by values written by hand:
//!
//! ```text
//! // run: @saxpy(2.0, [1, 2, 3], [1, 1, 1]) == [3, 5, 7]
//! // run: @mean([0.1, 0.2]) ~= 0.15
//! ```
//!
//! Arguments are the entry's inputs in order (a program's `out` parameters start as zeros), as
//! numbers or nested lists in row-major order; the expected value is the first result (a
//! function's, or a program's first `out`). `==` compares exactly, `~=` within a relative
//! 1e-12. The reference interpreter and native code must both give it.

use strata_engine::{Backend, Options};
use strata_ir::{ExprKind, Module, ParamMode, TypeArena};
use strata_runtime::{Column, Data, ElemType, Sv, Tensor, Value, ValueType};

/// A literal: a number or a list.
#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Int(i128),
    Float(f64),
    List(Vec<Lit>),
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip();
        let hit = self.s.get(self.at) == Some(&c);
        self.at += hit as usize;
        hit
    }

    fn lit(&mut self) -> Result<Lit, String> {
        self.skip();
        if self.eat(b'[') {
            let mut items = Vec::new();
            if self.eat(b']') {
                return Ok(Lit::List(items));
            }
            loop {
                items.push(self.lit()?);
                if self.eat(b']') {
                    return Ok(Lit::List(items));
                }
                if !self.eat(b',') {
                    return Err(format!("expected `,` or `]` at column {}", self.at + 1));
                }
            }
        }
        let start = self.at;
        while self.at < self.s.len() && !matches!(self.s[self.at], b',' | b']' | b')' | b' ') {
            self.at += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
        match word {
            "true" => return Ok(Lit::Int(1)),
            "false" => return Ok(Lit::Int(0)),
            "inf" => return Ok(Lit::Float(f64::INFINITY)),
            "-inf" => return Ok(Lit::Float(f64::NEG_INFINITY)),
            "nan" => return Ok(Lit::Float(f64::NAN)),
            _ => {}
        }
        if let Ok(i) = word.parse::<i128>() {
            return Ok(Lit::Int(i));
        }
        word.parse::<f64>().map(Lit::Float).map_err(|_| format!("`{word}` is not a number"))
    }
}

/// One `// run:` line: the entry, its arguments, exact or approximate, the expected value.
struct RunLine {
    entry: String,
    args: Vec<Lit>,
    approx: bool,
    want: Lit,
}

fn parse_line(text: &str) -> Result<RunLine, String> {
    let text = text.trim();
    let rest = text.strip_prefix('@').ok_or("a run line starts with `@entry(`")?;
    let open = rest.find('(').ok_or("expected `(` after the entry")?;
    let entry = rest[..open].trim().to_string();
    let mut p = Parser { s: rest.as_bytes(), at: open + 1 };
    let mut args = Vec::new();
    if !p.eat(b')') {
        loop {
            args.push(p.lit()?);
            if p.eat(b')') {
                break;
            }
            if !p.eat(b',') {
                return Err("expected `,` or `)` after an argument".into());
            }
        }
    }
    let tail = rest[p.at..].trim();
    let (approx, want) = match (tail.strip_prefix("=="), tail.strip_prefix("~=")) {
        (Some(w), _) => (false, w),
        (_, Some(w)) => (true, w),
        _ => return Err("expected `== VALUE` or `~= VALUE` after the call".into()),
    };
    let want = Parser { s: want.as_bytes(), at: 0 }.lit()?;
    Ok(RunLine { entry, args, approx, want })
}

fn flatten(l: &Lit, out: &mut Vec<Lit>, shape: &mut Vec<usize>, depth: usize) -> Result<(), String> {
    match l {
        Lit::List(items) => {
            match shape.get(depth) {
                Some(&n) if n != items.len() => return Err(format!("a ragged list: {n} and {} items", items.len())),
                Some(_) => {}
                None => shape.push(items.len()),
            }
            items.iter().try_for_each(|x| flatten(x, out, shape, depth + 1))
        }
        x => {
            out.push(x.clone());
            Ok(())
        }
    }
}

/// The literal as a value of type `ty` (dense, of scalars).
fn value(l: &Lit, ty: &ValueType, what: &str) -> Result<Value, String> {
    let ElemType::Scalar(s) = ty.element else { return Err(format!("{what}: run lines take tensors of scalars")) };
    let (mut flat, mut shape) = (Vec::new(), Vec::new());
    flatten(l, &mut flat, &mut shape, 0)?;
    if shape != ty.shape() {
        return Err(format!("{what}: a value of shape {shape:?}, but the type has shape {:?}", ty.shape()));
    }
    let col = Column::from_fn(s, flat.len(), |i| match flat[i] {
        Lit::Int(v) => Sv::from_i128(s, v),
        Lit::Float(v) => Sv::from_f64(s, v),
        Lit::List(_) => unreachable!("flattened"),
    });
    Ok(Value::Tensor(Tensor { ty: ty.clone(), data: Data::Scalars(col), present: None }))
}

fn close(a: Sv, b: Sv, approx: bool) -> bool {
    let (x, y) = (a.as_f64(), b.as_f64());
    match (a.scalar().is_float(), approx) {
        (true, true) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()) || (x.is_nan() && y.is_nan()),
        (true, false) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// The `// run:` lines of `src`, with their line numbers.
fn lines_of(src: &str) -> Vec<(usize, &str)> {
    src.lines().enumerate().filter_map(|(n, l)| l.strip_prefix("// run:").map(|r| (n + 1, r))).collect()
}

/// The arguments of entry `f` (of a module whose types are `types`) that `line` gives: its
/// inputs in order, its `out` parameters as zeros.
fn arguments(line: &RunLine, f: &strata_ir::Function, types: &TypeArena) -> Result<Vec<Value>, String> {
    let inputs = f.params.iter().filter(|&&q| f.exprs[q].kind != ExprKind::Param(ParamMode::Out)).count();
    if inputs != line.args.len() {
        return Err(format!("`@{}` takes {inputs} inputs, the line gives {}", line.entry, line.args.len()));
    }
    let mut given = line.args.iter();
    f.params
        .iter()
        .map(|&q| {
            let ty = ValueType::from_ir(types, f.exprs[q].ty);
            match f.exprs[q].kind {
                ExprKind::Param(ParamMode::Out) => Ok(Value::Tensor(Tensor::zeros(&ty))),
                _ => value(given.next().expect("counted"), &ty, &format!("`%{}`", f.exprs[q].name)),
            }
        })
        .collect()
}

/// The runs `// run:` lines of `src` ask for (`module` verified with `types`): each line's
/// entry and its arguments, one per parameter (`out` parameters as zeros) — for harnesses that
/// run the same programs another way (the pass-toggle test).
///
/// # Errors
/// A line that does not parse, names no entry, or gives values of the wrong count or shape.
pub fn run_arguments(src: &str, module: &Module, types: &TypeArena) -> Result<Vec<(String, Vec<Value>)>, String> {
    lines_of(src)
        .into_iter()
        .map(|(n, text)| {
            let at = |e: String| format!("line {n}: {e}");
            let line = parse_line(text).map_err(at)?;
            let h = module.function_by_name(&line.entry).ok_or_else(|| at(format!("no entry `@{}`", line.entry)))?;
            let args = arguments(&line, &module.functions[h], types).map_err(at)?;
            Ok((line.entry, args))
        })
        .collect()
}

/// Runs every `// run:` line of `src` (verified as `module` with `types`) on both backends.
pub fn run_lines(src: &str, module: &Module, types: &TypeArena) -> Result<(), String> {
    let lines = lines_of(src);
    if lines.is_empty() {
        return Err("a run test without `// run:` lines".into());
    }
    for (n, text) in lines {
        let at = |e: String| format!("line {n}: {e}");
        let line = parse_line(text).map_err(at)?;
        let h = module.function_by_name(&line.entry).ok_or_else(|| at(format!("no entry `@{}`", line.entry)))?;
        for backend in [Backend::Interp, Backend::Native] {
            let p = strata_engine::prepare(module, types, h, &Options::with_backend(backend))
                .map_err(|e| at(format!("{backend}: {e}")))?;
            let args = arguments(&line, &p.module().functions[p.entry()], p.types()).map_err(at)?;
            let ran = p.run(&args).map_err(|e| at(format!("{backend}: {e}")))?;
            let (name, got) = ran.values.into_iter().next().ok_or_else(|| at("no result".into()))?;
            let got = got.into_tensor().map_err(|e| at(e.to_string()))?;
            let want = value(&line.want, &got.ty, "the expected value").map_err(at)?;
            let (Data::Scalars(g), Value::Tensor(Tensor { data: Data::Scalars(w), .. })) = (&got.data, &want) else {
                return Err(at("results of scalars only".into()));
            };
            if let Some(i) = (0..g.len()).find(|&i| !close(g.get(i), w.get(i), line.approx)) {
                return Err(at(format!("{backend}: `{name}` element {i} is {:?}, expected {:?}", g.get(i), w.get(i))));
            }
        }
    }
    Ok(())
}
