//! The pass-toggle harness: a corpus of programs lowered with the whole pipeline and with each
//! optional pass of `pipeline::PASSES` switched off in turn, all compiled, run on the same
//! arguments, and compared — bit for bit where both programs are `bit_exact`, within rounding
//! otherwise (a pass that reassociates a sum). A pass that changes any value fails the test
//! with the program, the pass and the output. One more variant lowers with
//! `LowerOptions::polls` (the kernels of a distributed rank's local program call the runtime's
//! poll from their outermost loops), with a poll that counts its calls: it must change nothing.
//! One more lowers with `LowerOptions::extents_per_site` (every printed extent a slot of its
//! own, every select's cut a piece: a distributed rank's local program): the same values.

use strata_codegen::pipeline::{optional_names, PassSet};
use strata_codegen::{emit_c, exec, LowerOptions};
use strata_entity::Handle;
use strata_ir::{Function, Module, TypeArena};
use strata_runtime::{Tensor, ValueType};

/// One program of the corpus: a verified module, the entry to run and its arguments.
pub struct Case {
    /// Where it comes from (the failure names it).
    pub name: String,
    /// The module.
    pub module: Module,
    /// Its types (from verification).
    pub types: TypeArena,
    /// The entry.
    pub entry: Handle<Function>,
    /// The entry's arguments, one per parameter.
    pub args: Vec<Tensor>,
}

/// A case's outputs with the whole pipeline, and whether that program is `bit_exact`.
type Reference = (Vec<(String, Tensor)>, bool);

/// Lowers, compiles and runs every case with the whole pipeline and with each optional pass
/// disabled; panics on the first difference. Returns how many (case, variant) runs compared
/// equal. Cases the native backend does not compile are skipped (the interpreter runs them).
pub fn same_with_each_pass_disabled(cases: &[Case]) -> usize {
    let passes = optional_names();
    let base = LowerOptions::for_this_machine();
    let variants: Vec<(Option<&str>, LowerOptions)> = std::iter::once((None, base.clone()))
        .chain(passes.iter().map(|&p| {
            (Some(p), LowerOptions { disabled: PassSet::from_names([p]).expect("optional"), ..base.clone() })
        }))
        .chain(std::iter::once((Some("polls (on)"), LowerOptions { polls: true, ..base.clone() })))
        .chain(std::iter::once((
            Some("extents per site (on)"),
            LowerOptions { extents_per_site: true, ..base.clone() },
        )))
        .collect();
    strata_codegen::runtime::set_poll(count_poll);
    // (case, variant, lowered)
    let mut lowered = Vec::new();
    for (ci, c) in cases.iter().enumerate() {
        for (vi, (pass, options)) in variants.iter().enumerate() {
            match strata_codegen::lower_with(&c.module, &c.types, c.entry, options) {
                Ok(p) => lowered.push((ci, vi, p)),
                // A broken invariant is a compiler bug, with every pass or without one.
                Err(e @ strata_codegen::LowerError::Invalid(_)) => {
                    panic!("{}: `{}` disabled: {e}", c.name, pass.unwrap_or("no pass"))
                }
                // Not compiled natively at all: nothing to compare.
                Err(_) if vi == 0 => break,
                Err(e) => panic!("{}: lowering fails with `{}` disabled: {e}", c.name, pass.unwrap_or("-")),
            }
        }
    }
    let programs: Vec<strata_codegen::KernelProgram> = lowered.iter().map(|(_, _, p)| p.clone()).collect();
    let unit = 24;
    let libs = super::build_units(&programs, unit);
    // Each case's results with the whole pipeline, and whether that program is bit-exact.
    let mut full: Vec<Option<Reference>> = (0..cases.len()).map(|_| None).collect();
    let mut compared = 0;
    for (k, (ci, vi, p)) in lowered.iter().enumerate() {
        let c = &cases[*ci];
        let f = &c.module.functions[c.entry];
        let lib = strata_codegen::compile::Loaded::open_symbol(&libs[k / unit], &format!("entry_{k}")).expect("loads");
        let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
        let rty = f.result().map(|r| ValueType::from_ir(&c.types, r));
        let got = exec::run_threads(p, &lib, &c.args, &names, rty.as_ref(), 1);
        let exact = emit_c::bit_exact(p);
        let pass = variants[*vi].0.unwrap_or("-");
        match (&full[*ci], got) {
            (None, Ok(values)) if *vi == 0 => full[*ci] = Some((values, exact)),
            (None, _) if *vi == 0 => {} // a run-time error with every pass: the run tests own it
            (Some((want, want_exact)), Ok(values)) => {
                for ((wn, w), (_, g)) in want.iter().zip(&values) {
                    let both_exact = exact && *want_exact;
                    assert!(
                        super::same(&w.data, &g.data, both_exact) && w.present == g.present,
                        "{} (`@{}`): `{wn}` changes when `{pass}` is disabled ({}); `strata lower FILE --bisect \
                         --arg …` names the pass that changes it",
                        c.name,
                        f.name,
                        if both_exact { "bit for bit" } else { "beyond rounding" }
                    );
                }
                compared += 1;
            }
            (Some(_), Err(e)) => panic!("{} (`@{}`): fails to run when `{pass}` is disabled: {e}", c.name, f.name),
            (None, _) => {}
        }
    }
    compared
}

/// Calls of [`count_poll`].
pub static POLLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The poll the polled variant's kernels call: counts (from any of their threads).
unsafe extern "C" fn count_poll() {
    POLLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}
