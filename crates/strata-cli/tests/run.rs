//! `strata run` and `strata sig` on bad input: clear messages, non-zero exits, inputs untouched.

#[path = "scratch/mod.rs"]
mod scratch;
use scratch::{scratch, Scratch};

use std::path::Path;
use std::process::{Command, Output};

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata")).args(args).env("NO_COLOR", "1").output().unwrap()
}

fn tmp(name: &str) -> Scratch {
    scratch(&format!("run-{name}"))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const DIV: &str = "func @f(%a: tensor<i32, I[0:3]>, %b: tensor<i32, I[0:3]>) -> tensor<i32, I[0:3]> {\n  %q = divides(%a, %b) : tensor<i32, I[0:3]>\n  return %q\n}\n";

#[test]
fn integer_division_by_zero_is_a_located_error() {
    let d = tmp("div");
    let f = write(&d, "div.strata", DIV);
    let o = strata(&["run", &f, "--arg", "a=ones", "--arg", "b=zeros"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("div.strata:2:3: error: integer division by zero in `divides` (1 / 0)"), "{e}");
    assert!(e.contains("strata::run::division_by_zero"), "{e}");
}

#[test]
fn ones_and_printing() {
    let d = tmp("print");
    let f = write(&d, "div.strata", DIV);
    let o = strata(&["run", &f, "--arg", "a=ones", "--arg", "b=ones"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "result =\n[1, 1, 1]\n");
}

#[test]
fn neighbor_table_entries_outside_the_source_interval_are_errors() {
    let d = tmp("table");
    let f = write(
        &d,
        "t.strata",
        "func @f(%v: tensor<f64, V[0:3]>, %t: tensor<i32, E[0:2], NB_V[0:2]>) -> tensor<f64, E[0:2]> {\n  %s = unstructured_shift(%v, %t, neighbor = 1) : tensor<f64, E[0:2]>\n  return %s\n}\n",
    );
    // random:3 fills the table with values in [0, 10): some are >= 3.
    let o = strata(&["run", &f, "--arg", "v=ones", "--arg", "t=random:3"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("is outside `V[0:3]`") && e.contains("strata::run::index_out_of_interval"), "{e}");
    // The native backend alone names the entry, its table and the interval too.
    let o = strata(&["run", &f, "--backend", "native", "--arg", "v=ones", "--arg", "t=random:3"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("of `%t` is outside `V[0:3]`") && e.contains("entry "), "{e}");
}

#[test]
fn missing_and_unknown_arguments_are_named() {
    let d = tmp("args");
    let f = write(&d, "div.strata", DIV);
    let o = strata(&["run", &f, "--arg", "a=ones"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("missing --arg for `b` of `@f`"), "{}", stderr(&o));
    let o = strata(&["run", &f, "--arg", "a=ones", "--arg", "b=ones", "--arg", "c=ones"]);
    assert!(stderr(&o).contains("`@f` has no parameter `c` (parameters: `a`, `b`)"), "{}", stderr(&o));
    let o = strata(&["run", &f, "--entry", "nope", "--arg", "a=ones"]);
    assert!(stderr(&o).contains("no entry `@nope`; the file defines @f"), "{}", stderr(&o));
    let o = strata(&["run", &f, "--arg", "a"]);
    assert!(stderr(&o).contains("--arg `a` is not of the form NAME=VALUE"), "{}", stderr(&o));
}

#[test]
fn native_backend_runs_compiles_once_and_reports_what_it_cannot_compile() {
    let d = tmp("native");
    let f = write(&d, "div.strata", DIV);
    let cache = d.join("cache");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", &f, "--backend", "native", "--time"];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_strata")).args(&args).env("STRATA_CACHE_DIR", &cache).output().unwrap()
    };
    let o = run(&["--arg", "a=ones", "--arg", "b=ones"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "result =\n[1, 1, 1]\n");
    assert!(stderr(&o).contains("(cold)"), "{}", stderr(&o));
    let o = run(&["--arg", "a=ones", "--arg", "b=ones"]);
    assert!(stderr(&o).contains("(cached)"), "{}", stderr(&o));
    let o = run(&["--arg", "a=ones", "--arg", "b=zeros"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("native run of `@f` failed: integer division by zero"), "{}", stderr(&o));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tri = root.join("examples/sparse/spmv_csr.strata").display().to_string();
    let o = strata(&["run", &tri, "--backend", "native", "--entry", "spmv", "--arg", "a=ones", "--arg", "x=ones"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("min 4096, max 4096"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // Sparse tensors of tuples are not read natively: refused by name, and `auto` runs the
    // interpreter after a note.
    let tuples_dir = tmp("sparse-tuples");
    let tuples = write(
        &tuples_dir,
        "t.strata",
        "func @f(%a: tensor<(f64, f64), I[0:3] compressed>) -> tensor<f64, I[0:3]> {\n  \
         %x = tuple_get(%a, index = 0) : tensor<f64, I[0:3] compressed>\n  \
         %d = convert(%x, mode = copy) : tensor<f64, I[0:3]>\n  return %d\n}\n",
    );
    let o = strata(&["run", &tuples, "--backend", "native", "--arg", "a=ones"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("the native backend does not handle sparse or ragged tensors of tuples or tensors (`%a`) yet"),
        "{}",
        stderr(&o)
    );
    let o = strata(&["run", &tuples, "--arg", "a=ones"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "result =\n[1, 1, 1]\n");
    assert!(stderr(&o).contains("note:") && stderr(&o).contains("tensors of tuples"), "{}", stderr(&o));
}

/// A tile payload that reads its accumulator transposed cannot run as a per-position fold.
const TILE_ACC_T: &str = "func @mac(%acc: tensor<2x2xf64>, %a: tensor<2x2xf64>) -> tensor<2x2xf64> {
  %t = transpose(%acc, perm = [1, 0]) : tensor<2x2xf64>
  %s = plus(%t, %a) : tensor<2x2xf64>
  return %s
}
func @f(%a: tensor<4x4xf64>) -> tensor<2x2xf64> {
  %p = pack(%a, tile = [2, 2]) : tensor<2x2x tensor<2x2xf64>>
  %z = constant(value = 0.0) : tensor<2 x tensor<2x2xf64>>
  %r = map_reduce_aff(@mac, %p, init = %z, domain = [2, 2], outputs = 1, shape = [2], out_map = (d0, d1) -> (d0), maps = [(d0, d1) -> (d0, d1)]) : tensor<2 x tensor<2x2xf64>>
  %g = constant(value = 1) : index
  %e = get(%r, %g) : tensor<2x2xf64>
  return %e
}
";

#[test]
fn native_backend_refuses_tile_payloads_reading_the_accumulator_elsewhere() {
    let d = tmp("tile-acc");
    let f = write(&d, "tile.strata", TILE_ACC_T);
    let o = strata(&["run", &f, "--arg", "a=ones"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = strata(&["run", &f, "--backend", "native", "--arg", "a=ones"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("does not compile `@mac as a tile payload that reads its accumulator at other positions`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn lower_prints_loops_and_readable_c() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lap = root.join("examples/stencil/laplacian.strata").display().to_string();
    let o = strata(&["lower", &lap, "--to", "loops"]);
    let loops = String::from_utf8_lossy(&o.stdout);
    assert!(
        loops.contains("kernel 0: %out <- %_1") && loops.contains("for I in [0:5], J in [0:7], K in [0:9]:"),
        "{loops}"
    );
    let o = strata(&["lower", &lap, "--to", "c"]);
    let c = String::from_utf8_lossy(&o.stdout);
    assert!(
        c.contains("/* kernel 0: %out <- %_1 */")
            && c.contains("const double *restrict inp_b1")
            && c.contains("for (int64_t d_I = 0; d_I < x0; ++d_I) {  /* I[0:x0] */"),
        "{c}"
    );
    // The C names no size: the values of its extent slots follow it.
    assert!(c.contains("/* the extents a run at these sizes passes: x0 = 5, "), "{c}");
}

#[test]
fn npy_shape_and_dtype_mismatches_name_the_argument() {
    let d = tmp("npy");
    let f = write(&d, "div.strata", DIV);
    // Write a 4-element int32 .npy with strata itself, then feed it where 3 are expected.
    let g = write(&d, "four.strata", "func @g(%a: tensor<i32, I[0:4]>) -> tensor<i32, I[0:4]> {\n  return %a\n}\n");
    let four = d.join("four.npy").display().to_string();
    assert_eq!(strata(&["run", &g, "--arg", "a=ones", "--out", &format!("result={four}")]).status.code(), Some(0));
    let o = strata(&["run", &f, "--arg", &format!("a={four}"), "--arg", "b=ones"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("argument `a`")
            && e.contains("holds dtype int32, shape [4], but the program expects dtype int32, shape [3]"),
        "{e}"
    );
    let h = write(&d, "f64.strata", "func @g(%a: tensor<f64, I[0:4]>) -> tensor<f64, I[0:4]> {\n  return %a\n}\n");
    let o = strata(&["run", &h, "--arg", &format!("a={four}")]);
    assert!(
        stderr(&o).contains("holds dtype int32, shape [4], but the program expects dtype float64, shape [4]"),
        "{}",
        stderr(&o)
    );
    let o = strata(&["run", &h, "--arg", "a=/nonexistent.npy"]);
    assert!(stderr(&o).contains("cannot read `/nonexistent.npy`"), "{}", stderr(&o));
}

#[test]
fn outputs_never_overwrite_inputs() {
    let d = tmp("overwrite");
    let g = write(&d, "id.strata", "func @g(%a: tensor<i32, I[0:4]>) -> tensor<i32, I[0:4]> {\n  return %a\n}\n");
    let p = d.join("a.npy").display().to_string();
    assert_eq!(strata(&["run", &g, "--arg", "a=ones", "--out", &format!("result={p}")]).status.code(), Some(0));
    let before = std::fs::read(&p).unwrap();
    let o = strata(&["run", &g, "--arg", &format!("a={p}"), "--out", &format!("result={p}")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("would overwrite an input file"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn sig_describes_entries_for_scripts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let nabla = root.join("examples/stencil/nabla.strata").display().to_string();
    let o = strata(&["sig", "--json", &nabla]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("strata sig --json prints JSON");
    let entries = json["entries"].as_array().expect("a list of entries");
    let entry = entries.iter().find(|e| e["name"] == "nabla").expect("the program @nabla");
    let out = &entry["results"][0];
    assert_eq!(out["name"], "out");
    assert_eq!(out["type"], "tensor<(f64, f64), Vertex[0:5440]>");
    assert_eq!(out["dtype"], serde_json::json!(["float64", "float64"]));
    assert_eq!(out["shape"], serde_json::json!([5440]));
    assert_eq!(out["format"], "dense");
    let v2e = entry["params"].as_array().unwrap().iter().find(|p| p["name"] == "v2e").expect("a v2e parameter");
    assert_eq!(v2e["type"], "tensor<i32, Vertex[0:5440], NB_Edge[0:7]>");
    assert_eq!(v2e["dtype"], "int32");
    assert_eq!(v2e["shape"], serde_json::json!([5440, 7]));
    let spmv = root.join("examples/sparse/spmv_csr.strata").display().to_string();
    let o = strata(&["sig", "--json", &spmv]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let spmv = json["entries"].as_array().unwrap().iter().find(|e| e["name"] == "spmv").expect("@spmv");
    let a = &spmv["params"][0];
    assert_eq!(
        (a["shape"].clone(), a["format"].clone()),
        (serde_json::Value::Null, serde_json::json!("csr")),
        "{json}"
    );
    let o = strata(&["sig", &nabla]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("program @nabla\n  out out: tensor<(f64, f64), Vertex[0:5440]>")
    );
}

#[test]
fn array_api_operations_in_programs_point_to_the_front_end() {
    let d = tmp("array");
    let f = write(&d, "s.strata", "func @f(%x: tensor<f64, I[0:4]>) -> tensor<f64, I[0:4]> {\n  %s = array.sort(%x, axis = 0) : tensor<f64, I[0:4]>\n  return %s\n}\n");
    let o = strata(&["run", &f, "--arg", "x=ones"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("`array.sort` is not an operation of the IR") && e.contains("strata::parse::unknown_op"), "{e}");
}

#[test]
fn corrupt_and_foreign_npy_files_are_errors_not_panics() {
    let d = tmp("corrupt");
    let f = write(&d, "id.strata", "func @g(%a: tensor<f64, I[0:4]>) -> tensor<f64, I[0:4]> {\n  return %a\n}\n");
    let cases: [(&str, &[u8], &str); 3] = [
        ("garbage.npy", b"not a numpy file at all", "magic not found"),
        (
            "truncated.npy",
            b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }",
            "cannot read",
        ),
        ("empty.npy", b"", "cannot read"),
    ];
    for (name, bytes, want) in cases {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let o = strata(&["run", &f, "--arg", &format!("a={}", p.display())]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert!(stderr(&o).contains(want), "{name}: {}", stderr(&o));
    }
}

#[test]
fn repeat_times_preallocated_and_allocating_runs_and_writes_json() {
    // A program whose out parameter is written whole: the repeated runs reuse and renew it, and
    // the result still equals 2 * ones.
    let d = tmp("repeat");
    let f = write(
        &d,
        "twice.strata",
        "program @p(%out: out tensor<f64, I[0:1000]>, %x: tensor<f64, I[0:1000]>) {\n  %y = plus(%x, %x) : tensor<f64, I[0:1000]>\n  %out <- %y\n}\n",
    );
    let json = d.join("t.json");
    let out = d.join("out.npy");
    let o = strata(&[
        "run",
        &f,
        "--backend",
        "native",
        "--arg",
        "x=ones",
        "--repeat",
        "4",
        "--time",
        "--timings",
        &json.display().to_string(),
        "--out",
        &format!("out={}", out.display()),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("4 runs, preallocated outputs: median") && e.contains("4 runs, allocating outputs: median"),
        "{e}"
    );
    let text = std::fs::read_to_string(&json).unwrap();
    for key in ["\"compile_s\"", "\"cached\"", "\"first_s\"", "\"preallocated_s\"", "\"allocating_s\""] {
        assert!(text.contains(key), "{key} missing in {text}");
    }
    let count = |key: &str| {
        let list = text.split(key).nth(1).unwrap();
        let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
        list.split(',').filter(|s| s.trim().parse::<f64>().is_ok_and(|t| t > 0.0)).count()
    };
    assert_eq!((count("\"preallocated_s\""), count("\"allocating_s\"")), (4, 4), "{text}");
    // The values after the repeated runs: 2.0 everywhere (npy header, then 1000 little-endian f64).
    let bytes = std::fs::read(&out).unwrap();
    let data = &bytes[bytes.len() - 8000..];
    assert!(data.chunks(8).all(|c| f64::from_le_bytes(c.try_into().unwrap()) == 2.0));
}

#[test]
fn unwritable_timings_path_is_a_clear_error() {
    let d = tmp("timings-bad");
    let f = write(&d, "div.strata", DIV);
    let bad = d.join("no/such/dir/t.json");
    let o = strata(&[
        "run",
        &f,
        "--backend",
        "native",
        "--arg",
        "a=ones",
        "--arg",
        "b=ones",
        "--repeat",
        "1",
        "--timings",
        &bad.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot write the timings"), "{}", stderr(&o));
}

const NNZ_IN: &str = "func @f(%a: tensor<f64, Row[0:3], Col[0:4] compressed(nnz = 2)>) -> tensor<f64, Row[0:3], Col[0:4]> {\n  %c = convert(%a, mode = copy) : tensor<f64, Row[0:3], Col[0:4]>\n  return %c\n}\n";
const NNZ_OUT: &str = "func @f(%a: tensor<f64, Row[0:3], Col[0:4]>) -> tensor<f64, Row[0:3], Col[0:4] compressed(nnz = N)> {\n  %c = convert(%a, mode = copy) : tensor<f64, Row[0:3], Col[0:4] compressed(nnz = N)>\n  return %c\n}\n";

#[test]
fn static_extents_in_types_are_checked_on_arguments_and_results() {
    let d = tmp("nnz");
    let f = write(&d, "in.strata", NNZ_IN);
    for backend in ["interp", "native"] {
        let o = strata(&["run", &f, "--backend", backend, "--arg", "a=ones"]);
        assert_ne!(o.status.code(), Some(0), "{backend}");
        let e = stderr(&o);
        assert!(e.contains("argument `a`: level `Col` stores 12 entries, but its type says `nnz = 2`"), "{e}");
    }
    let bad = write(&d, "out.strata", &NNZ_OUT.replace('N', "5"));
    let good = write(&d, "out12.strata", &NNZ_OUT.replace('N', "12"));
    let out = d.join("r.npz");
    for backend in ["interp", "native"] {
        let o = strata(&[
            "run",
            &bad,
            "--backend",
            backend,
            "--arg",
            "a=ones",
            "--out",
            &format!("result={}", out.display()),
        ]);
        assert_eq!(o.status.code(), Some(1), "{backend}");
        let e = stderr(&o);
        assert!(
            e.contains(
                "`result` of `@f`: level `Col` stores 12 entries, but its type says `nnz = 5`; nothing was written"
            ),
            "{e}"
        );
        assert!(!out.exists(), "{backend}: a result contradicting its type was written");
        let o = strata(&["run", &good, "--backend", backend, "--arg", "a=ones"]);
        assert_eq!(o.status.code(), Some(0), "{backend}: {}", stderr(&o));
    }
}

#[test]
fn without_a_c_compiler_the_interpreter_runs_with_one_notice() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lap = root.join("examples/stencil/laplacian.strata").display().to_string();
    let dir = tmp("no-cc");
    let run = |backend: &str| {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["run", "--backend", backend, &lap, "--arg", "inp=ones"])
            .env("CC", "/nonexistent/cc")
            // An empty kernel cache: nothing compiled earlier can stand in for the compiler.
            .env("STRATA_CACHE_DIR", &dir)
            .output()
            .unwrap()
    };
    let o = run("auto");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("note:").count(), 1, "{err}");
    assert!(
        err.contains("cannot run the C compiler `/nonexistent/cc`") && err.contains("reference interpreter"),
        "{err}"
    );
    // The laplacian of ones is zero everywhere.
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("min 0, max 0") || out.contains("[[[0, 0"), "{out}");
    let o = run("native");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot run the C compiler"), "{}", stderr(&o));
}

/// Issue 49: `auto` never fails where the interpreter succeeds. A native failure the
/// interpreter does not share — here a C compiler that rejects everything, a failure of the
/// native path after lowering — returns the interpreter's result with one warning naming the
/// entry and the reason; `native` reports the failure.
#[test]
fn auto_returns_the_interpreters_result_with_one_warning_when_native_code_fails() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lap = root.join("examples/stencil/laplacian.strata").display().to_string();
    let dir = tmp("failing-cc");
    let run = |backend: &str| {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["run", "--backend", backend, &lap, "--arg", "inp=ones"])
            .env("CC", "false")
            .env("STRATA_CACHE_DIR", &dir)
            .output()
            .unwrap()
    };
    let o = run("auto");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("the native backend failed on `@laplacian`") && err.contains("interpreter's result"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("min 0, max 0") || out.contains("[[[0, 0"), "{out}");
    let o = run("native");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning:"), "{}", stderr(&o));
}
