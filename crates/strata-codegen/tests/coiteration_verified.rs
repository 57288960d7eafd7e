//! Co-iteration is a verified property: the kernel verifier re-derives, from each fold's own
//! step, that a loop restricted to stored coordinates leaves out only points where the fold
//! keeps its accumulator. A deliberately wrong merge — the row maximum of issue 49's S2 given
//! the row sum's loop over stored entries, as `unify-fold-vars` once did — fails verification,
//! naming the pass, the kernel and the statement.

use std::rc::Rc;

use strata_codegen::sym::{rename, Coord, SExpr};
use strata_codegen::verify_kernels::verify_kernels;
use strata_codegen::{lower, KernelProgram};

const ROWS: &str = r#"
!A = tensor<f64, I[0:4], J[0:5] compressed>
!V = tensor<f64, I[0:4]>
func @add(%acc: f64, %a: f64) -> f64 { return plus(%acc, %a) }
func @max(%acc: f64, %a: f64) -> f64 { return maximum(%acc, %a) }
func @one(%acc: f64, %a: f64) -> f64 { return plus(%acc, plus(%a, 1.0)) }
program @rows(%rowsum: out !V, %rowmax: out !V, %shifted: out !V, %a: !A) {
  %rowsum <- map_reduce(@add, %a, init = 0.0, einsum = "ij->i")
  %rowmax <- map_reduce(@max, %a, init = -1000.0, einsum = "ij->i")
  %shifted <- map_reduce(@one, %a, init = 0.0, einsum = "ij->i")
}
"#;

fn lowered() -> KernelProgram {
    let module = strata_verify::parse(ROWS).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let h = module.function_by_name("rows").unwrap();
    lower(&module, &info.types, h).unwrap()
}

/// The outermost fold of `e`.
fn fold(e: &Rc<SExpr>) -> Rc<SExpr> {
    match &**e {
        SExpr::Reduce { .. } => e.clone(),
        _ => {
            let mut found = None;
            strata_codegen::sym::for_each_part(e, &mut |p| {
                if let (None, strata_codegen::sym::Part::Expr(x)) = (&found, p) {
                    if let Some(f) = Some(fold(x)).filter(|f| matches!(&**f, SExpr::Reduce { .. })) {
                        found = Some(f);
                    }
                }
            });
            found.unwrap_or_else(|| e.clone())
        }
    }
}

#[test]
fn only_the_sum_visits_stored_entries_and_the_program_verifies() {
    let p = lowered();
    let k = p.kernels.iter().find(|k| !k.sets.is_empty()).expect("the row sum iterates stored entries");
    assert_eq!(k.sets.len(), 1, "{p}");
    verify_kernels(&p, "test").unwrap();
}

#[test]
fn a_wrong_merge_of_a_non_annihilating_fold_into_a_stored_loop_is_refused() {
    for victim in [1, 2] {
        let mut p = lowered();
        let ki = p.kernels.iter().position(|k| !k.sets.is_empty()).unwrap();
        let k = &mut p.kernels[ki];
        let set_var = k.sets[0].var.clone();
        // Give the maximum (or the sum of `a + 1`) the sum's loop variable: it now names the set's loop.
        let value = k.stores[victim].value.clone();
        let target = fold(&value);
        let SExpr::Reduce { id, vars, init, scalar, body } = &*target else { panic!("a fold: {value:?}") };
        let from: Vec<_> = vars.iter().map(|(v, _)| v.clone()).collect();
        let to = vec![Coord::Var { dim: set_var.clone(), offset: 0 }];
        let merged = Rc::new(SExpr::Reduce {
            id: *id,
            vars: vec![(set_var.clone(), vars[0].1)],
            init: init.clone(),
            scalar: *scalar,
            body: rename(body, &from, &to, *id),
        });
        k.stores[victim].value = merged;
        let err = verify_kernels(&p, "a-wrong-merge").expect_err("a non-annihilating fold over stored entries only");
        let text = err.to_string();
        assert!(text.contains("after `a-wrong-merge`,"), "{text}");
        assert!(text.contains(&format!("kernel {ki}")), "{text}");
        // A release build's one check after all passes names the last and says an earlier one
        // may be at fault.
        let after_all =
            strata_codegen::verify_kernels::KernelVerifyError { or_earlier: true, ..err.clone() }.to_string();
        assert!(
            after_all.contains("after `a-wrong-merge` or a pass before it ($STRATA_VERIFY_EACH=1 names which),"),
            "{after_all}"
        );
        assert!(text.contains("changes the accumulator where it leaves out"), "{text}");
        assert!(text.contains(if victim == 1 { "maximum" } else { "plus(acc" }), "{text}");
    }
}
