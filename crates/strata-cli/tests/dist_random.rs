//! Differential testing of distributed runs: randomly generated programs over a block-distributed
//! `I` (`team = world`) run on 1, 2 and 3 MPI ranks must write the same bytes as one process.
//! The programs mix what distribution has to get right: elementwise ops over intervals that do
//! not align (halos), cartesian shifts along `I` and `J`, neighbor shifts and reductions through
//! tables over `I` with skip values (rows planned from the entries at run time), reductions over
//! `I` (stages whose partials are combined), scans along `I` (carried rank to rank) and along
//! `J`, `collect`s read inside the program (gathered on every rank, shifted whole, distributed
//! again), `concat`s along `I` (each rank joining the operands its rows reach), payloads that
//! ignore their operand (counting), and `I` intervals of 1–2 rows, so that
//! some ranks hold none. Values are `i64`, so reassociated sums are still exact and the
//! comparison is byte for byte.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use common::{require_mpi, strata};
use strata_runtime::random::XorShift;

/// A value: its `I` interval and, optionally, its `J` extent (`I` absent after a reduction).
#[derive(Clone, Debug)]
struct V {
    name: String,
    i: Option<(i64, i64)>,
    j: Option<i64>,
}

fn ty(v: &V) -> String {
    ty_of(v.i, v.j, "")
}

fn ty_of(i: Option<(i64, i64)>, j: Option<i64>, extra: &str) -> String {
    let mut dims = Vec::new();
    if let Some((s, e)) = i {
        dims.push(format!("I[{s}:{e}] block"));
    }
    if let Some(n) = j {
        dims.push(format!("J[0:{n}]"));
    }
    if !extra.is_empty() {
        dims.push(extra.to_string());
    }
    dims.push("team = world".into());
    format!("tensor<i64, {}>", dims.join(", "))
}

/// A neighbor table parameter: its name, rows, width and the source interval its entries index.
struct Table {
    name: String,
    rows: (i64, i64),
    width: i64,
    source: (i64, i64),
}

struct Program {
    text: String,
    params: Vec<String>,
    tables: Vec<Table>,
}

fn generate(rng: &mut XorShift, id: usize) -> Program {
    let mut vals: Vec<V> = Vec::new();
    let mut params = Vec::new();
    let mut sig = Vec::new();
    let j = if rng.below(2) == 0 { Some(rng.range(2, 4)) } else { None };
    for p in 0..2 + rng.below(2) as usize {
        let s = rng.range(-2, 2);
        // Short intervals leave ranks without rows.
        let len = if rng.below(4) == 0 { rng.range(1, 3) } else { rng.range(4, 10) };
        let v = V { name: format!("p{p}"), i: Some((s, s + len)), j: if rng.below(3) == 0 { None } else { j } };
        sig.push(format!("%{}: {}", v.name, ty(&v)));
        params.push(v.name.clone());
        vals.push(v);
    }
    let mut body = String::new();
    let mut helpers = String::new();
    let mut tables = Vec::new();
    let mut n = 0;
    let mut guard = 0;
    let steps = 3 + rng.below(5) as usize;
    while n < steps && guard < 200 {
        guard += 1;
        let a = vals[rng.below(vals.len() as u64) as usize].clone();
        let b = vals[rng.below(vals.len() as u64) as usize].clone();
        let name = format!("v{n}");
        let out = |i, j| V { name: name.clone(), i, j };
        let (op, v): (String, V) = match rng.below(11) {
            0..=2 => {
                // Name-based broadcast: intervals intersect, a missing dimension broadcasts (the
                // result's levels in the first operand's order, so the one with I comes first).
                let (a, b) = if a.i.is_none() && b.i.is_some() { (b, a) } else { (a, b) };
                let i = match (a.i, b.i) {
                    (Some(x), Some(y)) => {
                        let r = (x.0.max(y.0), x.1.min(y.1));
                        if r.0 >= r.1 {
                            continue;
                        }
                        Some(r)
                    }
                    (x, y) => x.or(y),
                };
                let o = ["plus", "minus", "multiplies", "maximum", "minimum"][rng.below(5) as usize];
                (format!("{o}(%{}, %{})", a.name, b.name), out(i, a.j.or(b.j)))
            }
            3 if a.i.is_some() => {
                let off = rng.range(-2, 3);
                let (s, e) = a.i.expect("I");
                (format!("cartesian_shift(%{}, dim = I, offset = {off})", a.name), out(Some((s - off, e - off)), a.j))
            }
            4 if a.i.is_some() => {
                // A table over I whose entries index `a`'s I rows (a quarter of them skips).
                let (s, e) = a.i.expect("I");
                let lo = rng.range(-2, 2);
                let rows = (lo, lo + rng.range(1, 9));
                let width = rng.range(1, 4);
                let tb = format!("tb{n}");
                sig.push(format!("%{tb}: tensor<i32, I[{}:{}] block, NB_I[0:{width}], team = world>", rows.0, rows.1));
                params.push(tb.clone());
                tables.push(Table { name: tb.clone(), rows, width, source: (s, e) });
                if rng.below(3) == 0 {
                    let k = rng.range(0, width - 1);
                    (format!("unstructured_shift(%{}, %{tb}, neighbor = {k})", a.name), out(Some(rows), a.j))
                } else {
                    let sh = ty_of(Some(rows), a.j, &format!("NB_0[0:{width}]"));
                    let _ = writeln!(body, "  %sh{n} = shift_init(%{}, %{tb}) : {sh}", a.name);
                    let rt = ty_of(Some(rows), a.j, "");
                    // Sums, counts that ignore the neighbor (a skip must not count), maxima.
                    let step = match rng.below(3) {
                        0 => "%s = plus(%acc, %x)",
                        1 => "%one = constant(value = 1) : i64\n  %s = plus(%acc, %one)",
                        _ => "%s = maximum(%acc, %x)",
                    };
                    let _ = writeln!(
                        helpers,
                        "func @red{id}_{n}(%acc: {rt}, %x: {rt}) -> {rt} {{\n  {step} : {rt}\n  return %s\n}}\n"
                    );
                    (format!("reduce(@red{id}_{n}, %sh{n}, init = 0)"), out(Some(rows), a.j))
                }
            }
            5 if a.i.is_some() => {
                // A reduction over I: a stage, partials combined in rank order.
                let (einsum, fold) = match (a.j, rng.below(3)) {
                    (Some(_), 0) => ("ij->j", "plus"),
                    (Some(_), 1) => ("ij->j", "maximum"),
                    (Some(_), _) => ("ij->", "plus"),
                    (None, 0) => ("i->", "minimum"),
                    (None, _) => ("i->", "plus"),
                };
                let _ = writeln!(
                    helpers,
                    "func @fold{id}_{n}(%acc: i64, %x: i64) -> i64 {{\n  %s = {fold}(%acc, %x) : i64\n  return %s\n}}\n"
                );
                let j = if einsum.ends_with('j') { a.j } else { None };
                (format!("map_reduce(@fold{id}_{n}, %{}, init = 3, einsum = \"{einsum}\")", a.name), out(None, j))
            }
            6..=7 if a.i.is_some() => {
                // A scan along I (rank after rank) or along J (local).
                let along_i = a.j.is_none() || rng.below(2) == 0;
                let col = if along_i { ty_of(None, a.j, "") } else { ty_of(a.i, None, "") };
                let o = ["plus", "maximum", "minus"][rng.below(3) as usize];
                let _ = writeln!(
                    helpers,
                    "func @step{id}_{n}(%s: {col}, %x: {col}) -> {col} {{\n  %r = {o}(%x, %s) : {col}\n  return %r\n}}\n"
                );
                let (dim, fw) = (if along_i { "I" } else { "J" }, rng.below(2) == 0);
                (format!("scan(@step{id}_{n}, %{}, dim = {dim}, forward = {fw}, init = 1)", a.name), out(a.i, a.j))
            }
            8 if a.i.is_some() => {
                // A collect read inside the program (a stage: blocks gathered on every rank), a
                // shift of the whole value on every rank, distributed again.
                let (s, e) = a.i.expect("I");
                let off = rng.range(-2, 3);
                let host = |i: (i64, i64)| {
                    let j = a.j.map_or(String::new(), |n| format!(", J[0:{n}]"));
                    format!("tensor<i64, I[{}:{}]{j}>", i.0, i.1)
                };
                let shifted = (s - off, e - off);
                let _ = writeln!(body, "  %c{n} = collect(%{}) : {}", a.name, host((s, e)));
                let _ = writeln!(body, "  %h{n} = cartesian_shift(%c{n}, dim = I, offset = {off}) : {}", host(shifted));
                (format!("distribute(%h{n}, ranks = world, dim = I)"), out(Some(shifted), a.j))
            }
            9 if a.i.is_some() && b.i.is_some() && a.j == b.j => {
                // A concat along I of `a` and `b` moved to start where `a` ends (the ranks'
                // rows reach one operand or both; a shift later reads across the seam).
                let ((s, e), (bs, be)) = (a.i.expect("I"), b.i.expect("I"));
                let off = bs - e;
                let moved = V { name: format!("m{n}"), i: Some((e, e + be - bs)), j: b.j };
                let _ =
                    writeln!(body, "  %m{n} = cartesian_shift(%{}, dim = I, offset = {off}) : {}", b.name, ty(&moved));
                (format!("concat(%{}, %m{n}, dim = I)", a.name), out(Some((s, e + be - bs)), a.j))
            }
            _ => continue,
        };
        let _ = writeln!(body, "  %{} = {op} : {}", v.name, ty(&v));
        vals.push(v);
        n += 1;
    }
    // The result: the last value that still has I (else the last value).
    let last = vals.iter().rev().find(|v| v.i.is_some()).unwrap_or(vals.last().expect("values")).clone();
    let text =
        format!("{helpers}func @g{id}({}) -> {} {{\n{body}  return %{}\n}}\n", sig.join(", "), ty(&last), last.name);
    Program { text, params, tables }
}

/// A `.npy` of `int32` rows × width: entries in the source interval, a quarter skips (-1).
fn write_table(path: &Path, t: &Table, rng: &mut XorShift) {
    let (rows, width) = ((t.rows.1 - t.rows.0) as usize, t.width as usize);
    let header = format!("{{'descr': '<i4', 'fortran_order': False, 'shape': ({rows}, {width}), }}");
    let mut h = header.into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&h);
    for _ in 0..rows * width {
        let e = if rng.below(4) == 0 { -1 } else { rng.range(t.source.0, t.source.1 - 1) as i32 };
        bytes.extend_from_slice(&e.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn random_distributed_programs_equal_one_process_on_1_to_3_ranks() {
    require_mpi();
    let dir = std::env::temp_dir().join(format!("strata-dist-random-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = XorShift::new(20261124);
    let (mut ran, mut with_tables, mut stages, mut collects, mut concats) = (0, 0, 0, 0, 0);
    for id in 0..24 {
        let p = generate(&mut rng, id);
        let file = dir.join(format!("g{id}.strata"));
        std::fs::write(&file, &p.text).unwrap();
        let mut args: Vec<String> = vec!["run".into(), file.display().to_string()];
        for (k, name) in p.params.iter().enumerate() {
            let value = match p.tables.iter().find(|t| &t.name == name) {
                Some(t) => {
                    let path = dir.join(format!("g{id}_{name}.npy"));
                    write_table(&path, t, &mut rng);
                    path.display().to_string()
                }
                None => format!("random:{}", id * 10 + k),
            };
            args.extend(["--arg".into(), format!("{name}={value}")]);
        }
        // Every fourth program natively on each rank, the others in the interpreter (faster).
        let backend = if id % 4 == 0 { "auto" } else { "interp" };
        args.extend(["--backend".into(), backend.into()]);
        let run = |extra: &[String], out: &Path| {
            let mut v = args.clone();
            v.extend(extra.iter().cloned());
            v.extend(["--out".into(), format!("result={}", out.display())]);
            let o = strata(&v);
            let e = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "program {id} ({extra:?}):\n{}\n{e}", p.text);
            std::fs::read(out).unwrap()
        };
        let single = run(&[], &dir.join(format!("g{id}.npy")));
        for ranks in 1..=3 {
            let got = run(&["--ranks".into(), ranks.to_string()], &dir.join(format!("g{id}_r{ranks}.npy")));
            assert!(got == single, "program {id} on {ranks} ranks differs from one process:\n{}", p.text);
        }
        ran += 1;
        with_tables += usize::from(!p.tables.is_empty());
        stages += usize::from(p.text.contains("map_reduce") || p.text.contains("dim = I,"));
        collects += usize::from(p.text.contains("collect("));
        concats += usize::from(p.text.contains("concat("));
    }
    // The generator must reach what it is for.
    assert!(
        with_tables >= 5 && stages >= 5 && collects >= 4 && concats >= 4,
        "{ran} programs, {with_tables} with tables, {stages} with stages, {collects} with collects, {concats} with concats"
    );
    eprintln!(
        "{ran} programs, {with_tables} with tables, {stages} with stages, {collects} with collects, {concats} with concats"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
