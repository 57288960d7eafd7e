//! The examples and every interpreted operation run through `strata run` and match
//! independent numpy / SciPy oracles (tests/oracles/*.py), with data generated at the seeds'
//! sizes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> String {
    let out = Command::new(root().join("scripts/python-env")).output().expect("scripts/python-env runs");
    assert!(out.status.success(), "cannot set up the Python oracles:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8").trim().to_string()
}

/// Runs an oracle script against the `strata` binary; returns its output, failing on a mismatch.
fn oracle(script: &str) -> String {
    oracle_with(script, &[])
}

fn oracle_with(script: &str, extra: &[&str]) -> String {
    oracle_env(script, extra, &[])
}

/// [`oracle_with`] with further environment variables for `strata`.
fn oracle_env(script: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let tag: Vec<&str> = extra.iter().chain(env.iter().map(|(k, _)| k)).copied().collect();
    let work = std::env::temp_dir().join(format!("strata-{script}-{}-{}", tag.join("-"), std::process::id()));
    let out = Command::new(python())
        .arg(root().join("tests/oracles").join(script))
        .arg(env!("CARGO_BIN_EXE_strata"))
        .arg(&work)
        .args(extra)
        .env("STRATA_CACHE_DIR", work.join("cache"))
        .envs(env.iter().copied())
        .output()
        .expect("python runs");
    let _ = std::fs::remove_dir_all(&work);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains(" passed, 0 failed"), "{text}");
    text
}

#[test]
fn examples_match_numpy_and_scipy() {
    // The default backend (native where it compiles) and the reference interpreter alone.
    for backend in ["auto", "interp"] {
        let text = oracle_with("check_examples.py", &["--backend", backend]);
        for check in [
            "ok nabla.f1",
            "ok spmv_from_csc",
            "ok ragged_row_sum",
            "ok gemm_packed_4d",
            "ok distributed_axpy",
            "ok threshold",
        ] {
            assert!(text.contains(check), "{backend}: {check} missing:\n{text}");
        }
    }
}

#[test]
fn stencils_streaming_their_results_match_numpy() {
    // A cache of 0 bytes makes every eligible result go out with streaming stores, so the
    // examples' small fields take that path too (large results take it on any machine).
    let text = oracle_env(
        "check_examples.py",
        &["--backend", "native", "horizontal_diffusion", "distributed_stencils"],
        &[("STRATA_CACHE_BYTES", "0")],
    );
    assert!(
        text.contains("ok horizontal_diffusion") && text.contains("ok distributed/laplacian_of_laplacian"),
        "{text}"
    );
}

#[test]
fn trust_repros_match_numpy_on_both_backends() {
    // Issue 31: nested neighbor reductions, folds over the neighbors every operand has, empty
    // intervals, storage validated for both backends, unsigned tables, GEMM on infinities.
    let text = oracle("check_trust.py");
    for check in ["ok n1_nested_reduce native", "ok r3_gemm_inf_f32 native", "ok r2_row_65_of_64 native"] {
        assert!(text.contains(check), "{check} missing:\n{text}");
    }
}

#[test]
fn trust2_cases_and_generated_multi_output_programs_match_numpy_and_scipy() {
    // Issue 49: sibling folds over one sparse operand (S1/S2, and 40 generated programs in every
    // storage format with folds of every fill behaviour), `where` on every small shape (A1),
    // zero padding into affine contractions (C1), an extent-1 matmul through reshapes (C2).
    // `STRATA_TRUST2_COUNT` raises the generated count for a long run.
    let count = std::env::var("STRATA_TRUST2_COUNT").unwrap_or_else(|_| "40".into());
    let text = oracle_with("check_trust2.py", &["", "--count", &count]);
    for check in ["ok s2_rowsum_rowmax native", "ok s1_dot_and_count native", "ok a1_where_every_small_shape native"] {
        assert!(text.contains(check), "{check} missing:\n{text}");
    }
    assert!(text.contains(" 0 failed"), "{text}");
    // The fixed cases again, natively with each optional pass disabled in turn, against numpy.
    let text = oracle_with("check_trust2.py", &["", "--count", "0", "--toggle"]);
    for check in ["ok s2_rowsum_rowmax native without unify-fold-vars", "ok c2_matmul_concat_rowsum native without"] {
        assert!(text.contains(check), "{check} missing:\n{text}");
    }
    assert!(text.contains(" 0 failed"), "{text}");
}

#[test]
fn generated_affine_contractions_over_rolled_and_padded_operands_match_numpy() {
    // Issue 49's item 5: `concat` padding and `roll` (strided views joined) feeding
    // `map_reduce_aff` with strides, dilations and `padding = v`, extent-1 rows of a matmul
    // collapsed, reductions of the same operand beside it; 48 instances in 6 programs, each
    // also run natively with every optional pass disabled in turn (`--toggle`).
    // `STRATA_TRUST2_COUNT` (instances) raises it for a long run.
    let count = std::env::var("STRATA_TRUST2_COUNT").unwrap_or_else(|_| "48".into());
    let text = oracle_with("check_affine.py", &["", "--count", &count, "--toggle"]);
    for check in ["ok affine_0 native\n", "ok affine_0 native without unify-fold-vars", " 0 failed"] {
        assert!(text.contains(check), "{check} missing:\n{text}");
    }
}

#[test]
fn random_neighbor_reduction_programs_match_numpy_on_both_backends() {
    // Generated with their numpy formulation: nested reductions both ways, through calls,
    // counting and non-annihilating payloads, weights on narrower neighbor intervals, skips.
    let text = oracle("check_random_meshes.py");
    assert!(text.contains("240 passed, 0 failed"), "{text}");
}

#[test]
fn sparse_ragged_and_skip_semantics_match_scipy_on_both_backends() {
    // Natively also with each optional pass disabled in turn (`--toggle`), against SciPy.
    let text = oracle_with("check_sparse.py", &["", "--toggle"]);
    for check in [
        "ok csc_spgemm native without gustavson",
        "ok csr_spmv_cumsum native without coiterate",
        "ok issue12_neighbor_count native",
        "ok issue12_row_entries interp",
        "ok issue12_ragged_lengths native",
        "ok coo_from_csc_row_exp native",
        "ok csc_spgemm native",
        "ok csr_ata native",
        "ok spgemm_tens native",
        "ok spgemm_dense_rows native",
        "ok spgemm_cancelling native",
        "ok entries_csr_coordinates interp",
        "ok entries_roundtrip_csc native",
        "ok entries_ranks native",
        "ok entries_assemble_uneven native",
        "ok entries_nonzero interp",
        "ok entries_compact interp",
        "ok entries_assemble interp",
        "ok entries_assemble_out_of_interval native",
        "ok ragged_cumsum native",
        "ok ragged_rank native",
        "ok ragged2_roundtrip native",
        "ok ragged2_cumsum native",
        "ok csr_spmv_cumsum native",
    ] {
        assert!(text.contains(check), "{check} missing:\n{text}");
    }
}

#[test]
fn every_interpreted_operation_matches_numpy() {
    let text = oracle("check_ops.py");
    assert!(text.contains("ok neighbors_skip_values") && text.contains("ok pack_product_unpack"), "{text}");
}

#[test]
fn natively_compiled_operations_match_numpy() {
    let text = oracle_with("check_ops.py", &["--backend", "native"]);
    // Every operation the interpreter runs on dense and nested tensors compiles natively.
    assert!(text.contains(" passed, 0 failed, 0 skipped"), "{text}");
    for case in ["gather_scatter_reshape", "neighbors_skip_values", "pack_product_unpack", "tile_map_transpose_get_set"]
    {
        assert!(text.contains(&format!("ok {case}\n")), "{case}: {text}");
    }
}

#[test]
fn generated_distributed_gathers_match_numpy_at_one_to_four_ranks() {
    // Issue 49's item 5: random gathers — source distributed along the indexed dimension
    // (named or positional) or replicated, indices replicated or distributed, then an
    // elementwise op, a sum or a weighted row sum — as one process and at 1–4 ranks, against
    // numpy; scatters into a destination distributed along the indexed dimension likewise, with
    // an index outside it and distributed indices ending in clear errors.
    // `STRATA_TRUST2_COUNT` (programs) raises it for a long run.
    let mpi = Command::new(root().join("scripts/mpi-env")).output().expect("scripts/mpi-env runs");
    assert!(mpi.status.success(), "Open MPI is needed:\n{}", String::from_utf8_lossy(&mpi.stderr));
    let count = std::env::var("STRATA_TRUST2_COUNT").unwrap_or_else(|_| "6".into());
    let text = oracle_with("check_dist_gather.py", &["--count", &count]);
    assert!(text.contains("ok scatter_errors_are_clear") && text.contains(" 0 failed"), "{text}");
}

#[test]
fn distributed_examples_match_numpy_on_several_ranks() {
    let mpi = Command::new(root().join("scripts/mpi-env")).output().expect("scripts/mpi-env runs");
    assert!(mpi.status.success(), "Open MPI is needed:\n{}", String::from_utf8_lossy(&mpi.stderr));
    // The 3-row tridiagonal leaves rank 0 empty at 4 ranks; 3 ranks split 64 and 66 rows unevenly.
    for ranks in ["2", "3", "4"] {
        let text = oracle_with(
            "check_examples.py",
            &[
                "--ranks",
                ranks,
                "distributed_stencils",
                "distributed_nabla",
                "distributed_normalize",
                "distributed_sparse",
            ],
        );
        assert!(text.contains("ok distributed/nabla: bit for bit"), "{text}");
        assert!(text.contains("ok distributed/sparse_residual: rows bit for bit"), "{text}");
    }
    // The axpy example declares a team of 4.
    oracle_with("check_examples.py", &["--ranks", "4", "distributed"]);
}
