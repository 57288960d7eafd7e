//! The file-test runner.
//!
//! Every `tests/filetests/**/*.strata` file starts with a header naming its kinds:
//! - `// test: check` — the file parses and verifies cleanly;
//! - `// test: roundtrip` — printing and re-parsing gives an equal module, and printing is
//!   idempotent, as the flat and fully typed forms are (`strata fmt --flat`, `--types`);
//! - `// test: error` — a list of cases separated by `// -----`. Each case marks the lines that
//!   must carry an error with a trailing `// error: <substring of the message>`; every reported
//!   diagnostic must be expected, and the fully rendered diagnostics are stored below the case
//!   as `//# ` lines.
//!
//! - `// test: run` — `// run: @entry(args) == value` lines, each run on the reference
//!   interpreter and on native code and answered by a value written by hand ([`runs`]);
//! - `// test: loops`, `// test: c`, `// test: cuda` — the last entry's loop kernels, generated
//!   C, or GPU schedule and generated CUDA (lowered for GPU 0), stored below the program as
//!   `//# ` lines, lowered for a pinned machine ([`snapshots`]).
//!
//! With `STRATA_BLESS=1` the `//# ` blocks are rewritten from the current output; otherwise a
//! difference fails with a unified diff. `STRATA_FILTER=substr` runs only matching files.

#![deny(missing_docs)]

use std::path::{Path, PathBuf};

use strata_ir::{Diagnostic, Module};

pub mod runs;
pub mod snapshots;

/// The result of running a directory of file tests.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Files that passed.
    pub passed: usize,
    /// One message per failing file.
    pub failures: Vec<String>,
    /// Every diagnostic code seen in error tests.
    pub codes_seen: Vec<String>,
    /// Number of error cases run.
    pub error_cases: usize,
}

/// The separator between error cases.
pub const CASE_SEPARATOR: &str = "// -----";
const BLESSED: &str = "//#";

/// Runs every `.strata` file below `root`.
pub fn run_dir(root: &Path, bless: bool, filter: Option<&str>) -> Outcome {
    let mut files = Vec::new();
    collect(root, &mut files);
    files.sort();
    let mut outcome = Outcome::default();
    for f in files {
        let rel = f.strip_prefix(root).unwrap_or(&f).to_string_lossy().replace('\\', "/");
        if filter.is_some_and(|s| !rel.contains(s)) {
            continue;
        }
        match run_file(&f, &rel, bless, &mut outcome) {
            Ok(()) => outcome.passed += 1,
            Err(msg) => outcome.failures.push(format!("{rel}: {msg}")),
        }
    }
    outcome
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "strata") {
            out.push(p);
        }
    }
}

fn header_kinds(src: &str) -> Vec<String> {
    src.lines()
        .take_while(|l| l.starts_with("//"))
        .filter_map(|l| l.strip_prefix("// test:"))
        .flat_map(|l| l.split(',').map(|k| k.trim().to_string()).collect::<Vec<_>>())
        .collect()
}

fn run_file(path: &Path, rel: &str, bless: bool, outcome: &mut Outcome) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let kinds = header_kinds(&src);
    if kinds.is_empty() {
        return Err("missing `// test: …` header".into());
    }
    for kind in &kinds {
        match kind.as_str() {
            "check" => drop(check_clean(&src)?),
            "roundtrip" => roundtrip(&src)?,
            "error" => run_errors(path, rel, &src, bless, outcome)?,
            "run" => {
                let module = check_clean(&src)?;
                let info = strata_verify::verify(&module).map_err(|d| render_plain("input", &src, &d))?;
                runs::run_lines(&src, &module, &info.types)?;
            }
            "loops" | "c" | "cuda" => snapshot(path, &src, kind, bless)?,
            other => return Err(format!("unknown test kind `{other}`")),
        }
    }
    Ok(())
}

/// Parses and verifies; the error text lists the diagnostics.
pub fn check_clean(src: &str) -> Result<Module, String> {
    let module = strata_verify::parse(src).map_err(|d| render_plain("input", src, &d))?;
    strata_verify::verify(&module).map_err(|d| render_plain("input", src, &d))?;
    Ok(module)
}

/// Checks that printing is a fixed point and re-parsing gives an equal module.
pub fn roundtrip(src: &str) -> Result<(), String> {
    let m1 = strata_syntax::parse(src).map_err(|d| render_plain("input", src, &d))?;
    let p1 = m1.to_string();
    let m2 = strata_syntax::parse(&p1)
        .map_err(|d| format!("printed module does not parse:\n{}\n{p1}", render_plain("printed", &p1, &d)))?;
    if m1 != m2 {
        return Err(format!("re-parsed module differs from the original; printed text:\n{p1}"));
    }
    let p2 = m2.to_string();
    if p1 != p2 {
        return Err(format!("printing is not idempotent:\n{}", diff(&p1, &p2)));
    }
    // The flat and the fully typed forms (`strata fmt --flat`, `--types`) are fixed points too.
    if let Ok(elaborated) = strata_verify::parse(src) {
        type Form = fn(&Module) -> Module;
        let forms: [(&str, Form); 2] = [("flat", Module::flattened), ("fully typed", Module::with_all_types)];
        for (form, make) in forms {
            let text = make(&elaborated).to_string();
            let again = strata_verify::parse(&text)
                .map_err(|d| format!("the {form} form does not parse:\n{}\n{text}", render_plain(form, &text, &d)))?;
            let text2 = make(&again).to_string();
            if text != text2 {
                return Err(format!("the {form} form is not a fixed point:\n{}", diff(&text, &text2)));
            }
        }
    }
    Ok(())
}

fn render_plain(name: &str, src: &str, diags: &[Diagnostic]) -> String {
    strata_report::render(name, src, diags, false)
}

/// Compares (or, blessing, rewrites) the `//# ` block below the program with its lowered form.
fn snapshot(path: &Path, src: &str, kind: &str, bless: bool) -> Result<(), String> {
    let case = split_cases(src).into_iter().next().expect("one case");
    let module = check_clean(&case.code)?;
    let info = strata_verify::verify(&module).map_err(|d| render_plain("input", &case.code, &d))?;
    let got = normalize(&snapshots::lowered(&module, &info.types, kind)?);
    if bless {
        let mut out = case.code.clone();
        for l in got.lines() {
            out.push_str(BLESSED);
            if !l.is_empty() {
                out.push(' ');
                out.push_str(l);
            }
            out.push('\n');
        }
        if out != src {
            std::fs::write(path, out).map_err(|e| format!("cannot bless: {e}"))?;
        }
        return Ok(());
    }
    if normalize(&case.blessed) != got {
        return Err(format!(
            "the {kind} snapshot differs (run with STRATA_BLESS=1 to accept):\n{}",
            diff(&normalize(&case.blessed), &got)
        ));
    }
    Ok(())
}

/// A unified diff of two texts.
pub fn diff(expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual).unified_diff().header("expected", "actual").to_string()
}

struct Case {
    code: String,
    blessed: String,
}

fn split_cases(src: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut code = Vec::new();
    let mut blessed = Vec::new();
    let flush = |code: &mut Vec<&str>, blessed: &mut Vec<String>, cases: &mut Vec<Case>| {
        while code.last().is_some_and(|l: &&str| l.trim().is_empty()) {
            code.pop();
        }
        cases.push(Case { code: code.join("\n") + "\n", blessed: blessed.join("\n") });
        code.clear();
        blessed.clear();
    };
    for line in src.lines() {
        if line.trim_end() == CASE_SEPARATOR {
            flush(&mut code, &mut blessed, &mut cases);
        } else if let Some(b) = line.strip_prefix(BLESSED) {
            blessed.push(b.strip_prefix(' ').unwrap_or(b).to_string());
        } else {
            code.push(line);
        }
    }
    flush(&mut code, &mut blessed, &mut cases);
    cases
}

fn normalize(s: &str) -> String {
    s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim_end().to_string()
}

fn run_errors(path: &Path, rel: &str, src: &str, bless: bool, outcome: &mut Outcome) -> Result<(), String> {
    let cases = split_cases(src);
    let mut rendered_all = Vec::new();
    let mut problems = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let diags = match strata_verify::parse(&case.code) {
            Err(d) => d,
            Ok(m) => strata_verify::verify(&m).err().unwrap_or_default(),
        };
        outcome.error_cases += 1;
        outcome.codes_seen.extend(diags.iter().map(|d| d.code.to_string()));
        let name = format!("{rel}#{}", i + 1);
        let rendered = normalize(&strata_report::render(&name, &case.code, &diags, false));
        check_expectations(&case.code, &diags).unwrap_or_else(|e| problems.push(format!("case {}: {e}", i + 1)));
        if !bless && normalize(&case.blessed) != rendered {
            problems.push(format!(
                "case {}: rendered diagnostics differ (run with STRATA_BLESS=1 to accept):\n{}",
                i + 1,
                diff(&normalize(&case.blessed), &rendered)
            ));
        }
        rendered_all.push(rendered);
    }
    if bless {
        let mut out = String::new();
        for (i, (case, rendered)) in cases.iter().zip(&rendered_all).enumerate() {
            if i > 0 {
                out.push_str(CASE_SEPARATOR);
                out.push('\n');
            }
            out.push_str(&case.code);
            for l in rendered.lines() {
                if l.is_empty() {
                    out.push_str(BLESSED);
                } else {
                    out.push_str(BLESSED);
                    out.push(' ');
                    out.push_str(l);
                }
                out.push('\n');
            }
        }
        if out != src {
            std::fs::write(path, out).map_err(|e| format!("cannot bless: {e}"))?;
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Matches `// error: text` annotations against the diagnostics' primary lines.
fn check_expectations(code: &str, diags: &[Diagnostic]) -> Result<(), String> {
    let mut expected: Vec<(usize, String, bool)> = Vec::new();
    for (n, line) in code.lines().enumerate() {
        // Several annotations on one line are allowed: `// error: a // error: b`.
        for part in line.split("// error: ").skip(1) {
            expected.push((n + 1, part.trim().to_string(), false));
        }
    }
    if expected.is_empty() {
        return Err("no `// error:` annotation in an error case".into());
    }
    let mut unexpected = Vec::new();
    for d in diags {
        let (line, _) = d.primary.span.line_col(code);
        let fits = |e: &(usize, String, bool)| e.0 == line && d.message.contains(e.1.as_str());
        // Prefer an expectation not matched yet, so two equal messages need two annotations.
        let slot = match expected.iter().position(|e| !e.2 && fits(e)) {
            Some(i) => Some(i),
            None => expected.iter().position(fits),
        };
        match slot.map(|i| &mut expected[i]) {
            Some(e) => e.2 = true,
            None => unexpected.push(format!("unexpected diagnostic on line {line}: {} [{}]", d.message, d.code)),
        }
    }
    let missing: Vec<String> = expected
        .iter()
        .filter(|e| !e.2)
        .map(|(l, t, _)| format!("expected an error containing {t:?} on line {l}"))
        .collect();
    if unexpected.is_empty() && missing.is_empty() {
        Ok(())
    } else {
        Err([unexpected, missing].concat().join("; "))
    }
}

/// Every static diagnostic code (`strata::parse::…`, `strata::verify::…`) found in the sources.
pub fn declared_codes(crates_dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    collect_rs(crates_dir, &mut files);
    let mut codes = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        let mut rest = text.as_str();
        while let Some(i) = rest.find("\"strata::") {
            let tail = &rest[i + 1..];
            let end = tail.find('"').unwrap_or(0);
            let code = &tail[..end];
            // Static diagnostics only; run-time errors (`strata::run::…`) are tested by the CLI tests.
            let is_static = code.starts_with("strata::parse::") || code.starts_with("strata::verify::");
            if is_static
                && code.matches("::").count() == 2
                && code.chars().all(|c| c.is_ascii_lowercase() || c == ':' || c == '_')
            {
                codes.push(code.to_string());
            }
            rest = &tail[end..];
        }
    }
    codes.sort();
    codes.dedup();
    codes
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("target") && !p.ends_with("strata-filetests") {
                collect_rs(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
