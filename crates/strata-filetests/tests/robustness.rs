//! Robustness: parse + verify never panic, on at least 10,000 mutated variants of the examples
//! and file tests, and every diagnostic points inside the source.

use std::panic;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn corpus() -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["examples", "tests/filetests"] {
        collect(&workspace().join(dir), &mut files);
    }
    files.sort();
    files.into_iter().map(|f| std::fs::read_to_string(f).expect("readable")).collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "strata") {
            out.push(p);
        }
    }
}

/// The shared deterministic generator: a failure names a reproducible variant.
struct Rng(strata_runtime::random::XorShift);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "%",
    "@",
    "!",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    "{",
    "}",
    ",",
    ":",
    "=",
    "->",
    "<-",
    "-",
    "+",
    "*",
    "?",
    "\"",
    "//",
    "tensor<",
    "x",
    "4x8x",
    "0",
    "-1",
    "99999999999999999999",
    "1e999",
    "nan",
    "-inf",
    "NB_0",
    "NB_Vertex",
    "_0",
    "_7",
    "compressed",
    "singleton",
    "ragged",
    "block",
    "team = 0",
    "device = ",
    "func",
    "program",
    "ring",
    "return",
    "out",
    "\u{e9}",
    "\u{1F600}",
    "\t",
    "\n",
    "%x",
    "@f",
    "!T",
    "I[5:2]",
    "I[0:0]",
    "(d0, d1) -> (d0)",
    "einsum = \"ij->\"",
    "dim = NB_1",
    "offset = -9223372036854775807",
    "perm = [0, 0]",
    "tile = [0]",
    "shape = []",
    "groups = [[]]",
    "coordinates = [9]",
    "neighbor = -5",
    "ranks = 0",
    "init = (0.0, (1, true))",
    "tensor<tensor<tensor<f32>>>",
];

fn mutate(src: &str, rng: &mut Rng) -> String {
    let mut s: Vec<char> = src.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let n = s.len();
        match rng.below(7) {
            0 if n > 0 => {
                let a = rng.below(n);
                let b = (a + 1 + rng.below(12)).min(n);
                s.drain(a..b);
            }
            1 => {
                let at = rng.below(n + 1);
                let frag: Vec<char> = FRAGMENTS[rng.below(FRAGMENTS.len())].chars().collect();
                s.splice(at..at, frag);
            }
            2 if n > 1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                s.swap(a, b);
            }
            3 => {
                // Duplicate or drop a whole line.
                let text: String = s.iter().collect();
                let mut lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let i = rng.below(lines.len());
                    if rng.below(2) == 0 {
                        lines.insert(i, lines[i]);
                    } else {
                        lines.remove(i);
                    }
                }
                s = lines.join("\n").chars().collect();
            }
            4 if n > 0 => {
                // Replace a digit run by another number.
                let at = rng.below(n);
                if let Some(p) = (at..n).find(|&i| s[i].is_ascii_digit()) {
                    let end = (p..n).find(|&i| !s[i].is_ascii_digit()).unwrap_or(n);
                    let repl = ["0", "1", "65536", "9223372036854775807", "3", "64"][rng.below(6)];
                    s.splice(p..end, repl.chars());
                }
            }
            5 if n > 0 => {
                // Replace an identifier by another one from the text.
                let at = rng.below(n);
                if let Some(p) = (at..n).find(|&i| s[i].is_ascii_alphabetic()) {
                    let end = (p..n).find(|&i| !(s[i].is_ascii_alphanumeric() || s[i] == '_')).unwrap_or(n);
                    let repl = ["I", "J", "f32", "i1", "compressed", "plus", "call", "map_reduce", "tensor", "NB_0"]
                        [rng.below(10)];
                    s.splice(p..end, repl.chars());
                }
            }
            _ => {
                let at = rng.below(n + 1);
                let c = char::from_u32(rng.below(0x250) as u32).unwrap_or('?');
                s.insert(at, c);
            }
        }
    }
    s.into_iter().collect()
}

static LAST_PANIC: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

fn check_one(src: &str) -> Result<(), String> {
    let result = panic::catch_unwind(|| {
        let diags = match strata_syntax::parse(src) {
            Err(d) => d,
            Ok(m) => {
                let printed = m.to_string();
                // Anything that parses must print to text that parses again.
                if let Err(d) = strata_syntax::parse(&printed) {
                    return Err(format!("printed text does not parse: {:?}\n{printed}", d[0].message));
                }
                strata_verify::verify(&m).err().unwrap_or_default()
            }
        };
        for d in &diags {
            let s = d.primary.span;
            if s.end as usize > src.len()
                || !src.is_char_boundary(s.start as usize)
                || !src.is_char_boundary(s.end as usize)
            {
                return Err(format!("diagnostic `{}` has a span outside the source: {s:?}", d.message));
            }
        }
        // Rendering must not panic either.
        let _ = strata_cli::render("fuzz.strata", src, &diags, false);
        Ok(())
    });
    match result {
        Ok(r) => r,
        Err(_) => Err(format!("panicked: {}", LAST_PANIC.lock().map(|s| s.clone()).unwrap_or_default())),
    }
}

#[test]
fn ten_thousand_mutants_never_panic() {
    let corpus = corpus();
    assert!(!corpus.is_empty());
    panic::set_hook(Box::new(|info| {
        if let Ok(mut s) = LAST_PANIC.lock() {
            *s = info.to_string();
        }
    }));
    let mut rng = Rng(strata_runtime::random::XorShift::new(0x5EED_5EED_1234_5678));
    let mut failures = Vec::new();
    let total = 12_000;
    for i in 0..total {
        let base = &corpus[i % corpus.len()];
        let variant = mutate(base, &mut rng);
        if let Err(why) = check_one(&variant) {
            failures.push(format!("variant {i}: {why}\n--- input ---\n{variant}"));
            if failures.len() >= 3 {
                break;
            }
        }
    }
    let _ = panic::take_hook();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn degenerate_inputs() {
    for src in ["", "\n", "//", "func", "func @f(", "}", "tensor<", "!T = tensor<4x", "\u{feff}func", "\0\0\0", "%%%%"]
    {
        check_one(src).unwrap_or_else(|e| panic!("{src:?}: {e}"));
    }
}

#[test]
fn big_programs_parse_and_verify_without_deep_recursion() {
    // Issue 31: one function of 60,000 statements and 30,000 functions calling each other
    // (verification used to be quadratic in both: 47 s for 100k statements), and nesting far
    // beyond the limit (a stack overflow before): a located error.
    let mut long = String::from("func @g(%x: f64) -> f64 {\n  %v0 = plus(%x, 1.0) : f64\n");
    for i in 1..60_000 {
        long.push_str(&format!("  %v{i} = plus(%v{}, 1.0) : f64\n", i - 1));
    }
    long.push_str("  return %v59999\n}\n");
    let first = |d: Vec<strata_ir::Diagnostic>| d[0].message.clone();
    let m = strata_verify::parse(&long).map_err(first).expect("parses");
    strata_verify::verify(&m).map_err(first).expect("verifies");
    let mut many = String::from("func @f0(%x: f64) -> f64 {\n  return plus(%x, 1.0)\n}\n");
    for i in 1..30_000 {
        many.push_str(&format!("func @f{i}(%x: f64) -> f64 {{\n  return plus(call(@f{}, %x), 1.0)\n}}\n", i - 1));
    }
    let m = strata_verify::parse(&many).map_err(first).expect("parses");
    strata_verify::verify(&m).map_err(first).expect("verifies");
    let deep = format!("func @f(%x: f64) -> f64 {{\n  return {}%x{}\n}}\n", "neg(".repeat(20_000), ")".repeat(20_000));
    // Parsed on a thread with a small stack: the limit keeps the recursion shallow.
    let parsed = std::thread::Builder::new()
        .stack_size(4 << 20)
        .spawn(move || strata_syntax::parse(&deep).err().map(|d| d[0].code))
        .unwrap()
        .join()
        .expect("no stack overflow");
    assert_eq!(parsed, Some("strata::parse::too_deep"));
}
