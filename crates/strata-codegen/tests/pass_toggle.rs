//! Every optional pass can be switched off without changing a value: the corpus — every entry
//! of the examples and of tests/programs, every entry of the file tests that run
//! (tests/filetests/run) on random values and every `// run:` line on its own values, and
//! generated sparse programs with several outputs over one operand (the `unify-fold-vars` bug's
//! shape) — runs with the whole pipeline and with each optional pass disabled in turn (`common::toggle`). The generated dense programs of differential.rs
//! get the same check there; the Python oracles' programs get it through `strata run
//! --disable-pass`, against numpy and SciPy (`check_sparse.main_with --toggle`: in CI,
//! check_sparse.py, check_affine.py and check_trust2.py's fixed cases; its generated programs in
//! long runs).

mod common;

use std::path::Path;

use common::fill;
use common::toggle::{same_with_each_pass_disabled, Case};
use strata_runtime::ValueType;

/// The entries of every `.strata` file in `dirs` with random arguments, and the runs of its
/// `// run:` lines on their values.
fn file_cases(dirs: &[&str]) -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cases = Vec::new();
    let mut files = Vec::new();
    for dir in dirs {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "strata") {
                    files.push(p);
                }
            }
        }
    }
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(module) = strata_verify::parse(&text) else { continue };
        let Ok(info) = strata_verify::verify(&module) else { continue };
        let name = format!("{}", path.strip_prefix(&root).unwrap_or(&path).display());
        // A file test's `// run:` lines: their entries on the values written there.
        let runs = strata_filetests::runs::run_arguments(&text, &module, &info.types)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (entry, args) in runs {
            let h = module.function_by_name(&entry).expect("checked");
            let args = args.into_iter().map(|v| v.into_tensor().expect("dense run values")).collect();
            cases.push(Case {
                name: format!("{name} (run line)"),
                module: module.clone(),
                types: info.types.clone(),
                entry: h,
                args,
            });
        }
        let entries: Vec<_> = module.entries().map(|(h, _)| h).collect();
        for h in entries {
            let f = &module.functions[h];
            let args = f
                .params
                .iter()
                .enumerate()
                .map(|(i, &p)| {
                    let vt = ValueType::from_ir(&info.types, f.exprs[p].ty);
                    fill(&vt, i as u64 + 11, common::table_source_len(&info.types, f, &vt))
                })
                .collect();
            cases.push(Case { name: name.clone(), module: module.clone(), types: info.types.clone(), entry: h, args });
        }
    }
    cases
}

#[test]
fn examples_and_file_tests_are_unchanged_by_each_pass() {
    let cases = file_cases(&["examples", "tests/programs", "tests/filetests/run"]);
    assert!(cases.len() > 50, "{} entries", cases.len());
    let compared = same_with_each_pass_disabled(&cases);
    eprintln!("{} entries, {compared} runs with one pass disabled equal the whole pipeline's", cases.len());
    assert!(compared > cases.len() * 5, "{compared}");
    // The examples' stencils have kernels of several levels: their polled variants polled.
    assert!(common::toggle::POLLS.load(std::sync::atomic::Ordering::Relaxed) > 0, "no kernel called its poll");
}

/// A program with several outputs folding one sparse operand (CSR, DCSR, CSC) in ways that do
/// and do not annihilate at zero, beside a product with a dense vector.
fn sparse_multi_output(k: usize) -> Case {
    let mut rng = strata_runtime::random::XorShift::new(k as u64 + 49);
    let (m, n) = (1 + rng.below(6) as usize, 1 + rng.below(6) as usize);
    let (levels, ij) = match k % 3 {
        0 => (format!("I[0:{m}], J[0:{n}] compressed"), "ij"),
        1 => (format!("I[0:{m}] compressed, J[0:{n}] compressed"), "ij"),
        _ => (format!("J[0:{n}], I[0:{m}] compressed"), "ji"),
    };
    let folds = [
        ("sum", "plus(%acc, %a)", "0.0"),
        ("max", "maximum(%acc, %a)", "-1000.0"),
        ("count", "plus(%acc, 1.0)", "0.0"),
        ("expsum", "plus(%acc, exp(%a))", "0.0"),
        ("prod", "multiplies(%acc, %a)", "1.0"),
        ("sumsq", "plus(%acc, multiplies(%a, %a))", "0.0"),
    ];
    let pick: Vec<usize> = (0..3).map(|i| if i == 0 { 0 } else { rng.below(folds.len() as u64) as usize }).collect();
    let mut text =
        String::from("func @mac(%acc: f64, %a: f64, %x: f64) -> f64 { return plus(%acc, multiplies(%a, %x)) }\n");
    for (i, &f) in pick.iter().enumerate() {
        text += &format!("func @f{i}(%acc: f64, %a: f64) -> f64 {{ return {} }}\n", folds[f].1);
    }
    let outs: Vec<String> = (0..pick.len()).map(|i| format!("%o{i}: out tensor<f64, I[0:{m}]>")).collect();
    text += &format!(
        "program @rows({}, %y: out tensor<f64, I[0:{m}]>, %a: tensor<f64, {levels}>, %x: tensor<f64, J[0:{n}]>) {{\n",
        outs.join(", ")
    );
    for (i, &f) in pick.iter().enumerate() {
        text += &format!("  %o{i} <- map_reduce(@f{i}, %a, init = {}, einsum = \"{ij}->i\")\n", folds[f].2);
    }
    text += &format!("  %y <- map_reduce(@mac, %a, %x, init = 0.0, einsum = \"{ij},j->i\")\n}}\n");
    let module = strata_verify::parse(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let info = strata_verify::verify(&module).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let h = module.function_by_name("rows").unwrap();
    let f = &module.functions[h];
    let args = f
        .params
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let vt = ValueType::from_ir(&info.types, f.exprs[p].ty);
            let mut t = fill(&vt, (k * 8 + i) as u64, None);
            // Negative entries and empty rows: a maximum that sees only stored entries differs.
            common::sparsify(&mut t, &mut strata_runtime::random::XorShift::new(k as u64 * 3 + i as u64), 0.4);
            t
        })
        .collect();
    Case {
        name: format!("generated sparse program {k}:\n{text}"),
        module: module.clone(),
        types: info.types,
        entry: h,
        args,
    }
}

#[test]
fn generated_sparse_multi_output_programs_are_unchanged_by_each_pass() {
    let cases: Vec<Case> = (0..40).map(sparse_multi_output).collect();
    let compared = same_with_each_pass_disabled(&cases);
    assert!(compared >= 40 * 10, "{compared}");
}
