//! The CUDA printer checked without a GPU: every example entry (and every entry of
//! tests/programs) the CUDA back end prints is compiled by the host's C++ compiler with a small
//! emulation of CUDA's thread model — every block and thread of each launch run in turn, with
//! `blockIdx`, `threadIdx`, `blockDim` and `gridDim` set as the GPU sets them — and must give
//! the interpreter's result bit for bit on random inputs (each GPU thread folds in the
//! interpreter's order, and the host's math library is the interpreter's) — up to rounding
//! where the `gpu-sums` pass reassociates a long float sum; the corpus runs with that pass
//! and without it. What this checks is
//! the generated text itself: the grid mapping, the grid-stride loops, the buffer table, the
//! extents, the statement lambdas, the error codes. What it cannot check (the device's own
//! math library, memory model and compiler) `scripts/gpu-check` checks on a GPU.

mod common;

use std::path::Path;

use common::same;
use strata_codegen::emit_c::cuda::{emit_cuda, launches, Launch};
use strata_codegen::exec::{self, Buffers, Layout};
use strata_codegen::pipeline::PassSet;
use strata_codegen::{KernelProgram, LowerOptions};
use strata_runtime::{Tensor, ValueType};

/// What CUDA gives a kernel, for the host: the thread coordinates as globals, the device
/// intrinsics the prelude uses, and a launch running every thread of the grid in turn.
const EMULATION: &str = r#"
#include <math.h>
#include <string.h>
struct strata_dim3_ { unsigned x, y, z; };
static strata_dim3_ threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, sizeof d); return d; }
static inline int atomicMax(int *p, int v) { int o = *p; if (v > o) *p = v; return o; }
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long c, unsigned long long v) {
  unsigned long long o = *p; if (o == c) *p = v; return o;
}
typedef void (*strata_kernel_)(void *const *, int *);
static int strata_launch_(strata_kernel_ k, void *const *buf, unsigned gx, unsigned gy, unsigned bx, unsigned by) {
  int status = 0;
  gridDim = {gx, gy, 1};
  blockDim = {bx, by, 1};
  for (unsigned y = 0; y < gy; ++y)
    for (unsigned x = 0; x < gx; ++x)
      for (unsigned ty = 0; ty < by; ++ty)
        for (unsigned tx = 0; tx < bx; ++tx) {
          blockIdx = {x, y, 0};
          threadIdx = {tx, ty, 0};
          k(buf, &status);
        }
  return status;
}
"#;

/// One printed program: its name, the lowered program, its CUDA's extents, the entry's
/// arguments and the interpreter's answer.
struct Case {
    name: String,
    program: KernelProgram,
    extents: Vec<i64>,
    args: Vec<Tensor>,
    names: Vec<String>,
    result_ty: Option<ValueType>,
    want: Result<Vec<(String, Tensor)>, String>,
}

/// Program `k`'s CUDA inside a namespace of its own (the kernels' C linkage dropped: every
/// program names its kernels alike), and its launcher `emulate_{k}`, which runs launch `i` of
/// `launches`.
fn unit_source(k: usize, cuda: &str, launches: &[Launch]) -> String {
    let body = cuda.replace("extern \"C\" __global__", "__global__");
    let list: Vec<String> = launches.iter().map(|l| format!("p{k}::{}", l.function)).collect();
    format!(
        "namespace p{k} {{\n{body}\n}}\nextern \"C\" int emulate_{k}(int kernel, void *const *buf, unsigned gx, unsigned gy, unsigned bx, unsigned by) {{\n  static const strata_kernel_ ks[] = {{{}}};\n  return strata_launch_(ks[kernel], buf, gx, gy, bx, by);\n}}\nextern \"C\" long long *emulate_bad_{k}(void) {{ return (long long *)p{k}::strata_bad; }}\n",
        list.join(", ")
    )
}

/// The host's C++ compiler.
fn cxx() -> String {
    std::env::var("CXX").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| "c++".into())
}

type Emulate = unsafe extern "C" fn(i32, *const *mut std::ffi::c_void, u32, u32, u32, u32) -> i32;

/// A program's record of the first bad value its kernels met (`strata_bad` of the prelude).
type BadRecord = unsafe extern "C" fn() -> *mut i64;

/// Runs `c`'s kernels with `emulate`, the launches at its sizes; an error names the bad value
/// `bad` recorded, as a GPU run's does.
fn run(c: &Case, emulate: Emulate, bad: BadRecord) -> Result<Vec<(String, Tensor)>, String> {
    let layout = Layout::of(&c.program, c.extents.clone());
    let mut buffers = Buffers::new(&layout, &c.args).map_err(|e| e.to_string())?;
    let mut spare = [0u64; 8];
    let (memory, extents) = buffers.memory();
    let mut table: Vec<*mut std::ffi::c_void> =
        memory.iter().map(|&(p, bytes)| if bytes == 0 { spare.as_mut_ptr().cast() } else { p.cast() }).collect();
    let mut extents = extents.to_vec();
    table.push(extents.as_mut_ptr().cast());
    let all = launches(&c.program);
    let mut scratch = vec![0u64; all.iter().map(|l| l.scratch).max().unwrap_or(0).div_ceil(8).max(2) as usize];
    table.push(scratch.as_mut_ptr().cast());
    for (k, Launch { grid, block, .. }) in all.iter().enumerate() {
        // SAFETY: the table holds the program's buffers (alive, of their types and lengths)
        // and its extents and scratch, as the kernels index them.
        let code = unsafe { emulate(k as i32, table.as_ptr(), grid[0], grid[1], block[0], block[1]) };
        if code != 0 {
            // SAFETY: the record is the program's five `int64_t`, alive with its library.
            let d = unsafe { std::slice::from_raw_parts_mut(bad(), 5) };
            let value = (d[4] != 0).then(|| strata_codegen::compile::BadValue {
                value: d[0],
                interval: strata_ir::Interval::new(d[1], d[2]),
                table: usize::try_from(d[3]).ok(),
            });
            d.fill(0);
            exec::code_error(code, || value.clone().map(|b| buffers.describe(b))).map_err(|e| e.to_string())?;
        }
    }
    Ok(buffers.into_results(&layout, &c.args, &c.names, c.result_ty.as_ref()))
}

/// Compiles the CUDA of every case for the host with the emulation (units of 24 programs, two
/// compiles at a time) and runs each: its results or its error.
fn emulated(cases: &[(String, Case)]) -> Vec<Result<Vec<(String, Tensor)>, String>> {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("strata-cuda-emulated-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let units: Vec<String> = cases
        .chunks(24)
        .enumerate()
        .map(|(u, chunk)| {
            let mut src = EMULATION.to_string();
            for (i, (cuda, c)) in chunk.iter().enumerate() {
                src.push_str(&unit_source(u * 24 + i, cuda, &launches(&c.program)));
            }
            src
        })
        .collect();
    let libs: Vec<std::path::PathBuf> = std::thread::scope(|s| {
        let mut out = Vec::new();
        for (pair_index, pair) in units.chunks(2).enumerate() {
            let hs: Vec<_> = pair
                .iter()
                .enumerate()
                .map(|(j, src)| {
                    let dir = &dir;
                    s.spawn(move || {
                        let u = pair_index * 2 + j;
                        let cpp = dir.join(format!("unit{u}.cpp"));
                        let so = dir.join(format!("unit{u}.so"));
                        std::fs::write(&cpp, src).unwrap();
                        let status = std::process::Command::new(cxx())
                            .args([
                                "-std=c++17",
                                "-O1",
                                "-ffp-contract=off",
                                "-fno-fast-math",
                                "-shared",
                                "-fPIC",
                                "-w",
                                "-o",
                            ])
                            .arg(&so)
                            .arg(&cpp)
                            .output()
                            .expect("a C++ compiler ($CXX, else c++)");
                        assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
                        so
                    })
                })
                .collect();
            out.extend(hs.into_iter().map(|h| h.join().expect("compile thread")));
        }
        out
    });
    let loaded: Vec<libloading::Library> =
        // SAFETY: the units were compiled above from generated code and the emulation.
        libs.iter().map(|so| unsafe { libloading::Library::new(so) }.expect("loads")).collect();
    let results = cases
        .iter()
        .enumerate()
        .map(|(k, (_, c))| {
            // SAFETY: `emulate_{k}` and `emulate_bad_{k}` are what `unit_source` wrote.
            let (emulate, bad): (Emulate, BadRecord) = unsafe {
                (
                    *loaded[k / 24].get::<Emulate>(format!("emulate_{k}").as_bytes()).unwrap(),
                    *loaded[k / 24].get::<BadRecord>(format!("emulate_bad_{k}").as_bytes()).unwrap(),
                )
            };
            run(c, emulate, bad)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    results
}

#[test]
fn cuda_kernels_emulated_on_the_host_equal_the_interpreter() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cases = Vec::new();
    let dirs = std::fs::read_dir(root.join("examples")).unwrap().flatten().map(|d| d.path());
    let mut files: Vec<_> = dirs
        .chain([root.join("tests/programs")])
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "strata"))
        .collect();
    files.sort();
    // The whole pipeline, and without `gpu-sums` (every fold in one thread, in order: then
    // every result must be the interpreter's bit for bit).
    let options = LowerOptions { gpu: Some(0), ..LowerOptions::for_this_machine() };
    let off = PassSet::from_names(["gpu-sums"]).unwrap();
    let variants = [("", options.clone()), (" (gpu-sums off)", LowerOptions { disabled: off, ..options })];
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let module = strata_verify::parse(&text).unwrap();
        let info = strata_verify::verify(&module).unwrap();
        let interp = strata_interp::Interpreter::new(&module, &info.types);
        for (h, f) in module.entries() {
            let args = common::entry_args(&info.types, f);
            let want = interp.run(h, args.clone()).map(|o| o.values).map_err(|e| e.to_diagnostic().message);
            for (variant, options) in &variants {
                let Ok(program) = strata_codegen::lower_with(&module, &info.types, h, options) else { continue };
                let Ok((cuda, extents)) = emit_cuda(&program) else { continue };
                cases.push((
                    cuda,
                    Case {
                        name: format!("{}@{}{variant}", file.file_name().unwrap().to_string_lossy(), f.name),
                        program,
                        extents,
                        args: args.clone(),
                        names: f.params.iter().map(|&q| f.exprs[q].name.clone()).collect(),
                        result_ty: f.result().map(|r| ValueType::from_ir(&info.types, r)),
                        want: want.clone(),
                    },
                ));
            }
        }
    }
    let results = emulated(&cases);
    let (mut compared, mut reassociated) = (Vec::new(), Vec::new());
    for ((_, c), got) in cases.iter().zip(results) {
        match (&c.want, got) {
            (Ok(want), Ok(got)) => {
                // Bit for bit, but where a split sum reassociates floats.
                let exact =
                    c.program.kernels.iter().all(|k| k.schedule.as_ref().is_none_or(|s| s.reassociate.is_empty()));
                if !exact {
                    reassociated.push(c.name.clone());
                }
                for ((wn, w), (gn, g)) in want.iter().zip(&got) {
                    assert_eq!(wn, gn);
                    assert!(
                        same(&w.data, &g.data, exact),
                        "{}: `{wn}` differs between the CUDA and the interpreter",
                        c.name
                    );
                }
                compared.push(c.name.clone());
            }
            // Both reject the data (an index outside its interval).
            (Err(_), Err(_)) => {}
            (w, g) => panic!("{}: interpreter {:?} but CUDA {:?}", c.name, w.as_ref().map(|_| "ok"), g.map(|_| "ok")),
        }
    }
    for must in [
        "laplacian.strata@laplacian",
        "horizontal_diffusion.strata@horizontal_diffusion",
        "trust.strata@where45",
        "trust.strata@rowsum_rowmax",
        "sparse_native.strata@spmv_csr",
        "whole_sums.strata@sums",
        "whole_sums.strata@sum_neighbors",
        "whole_sums.strata@rows",
        "nabla.strata@nabla",
        "tridiagonal.strata@solve_tridiag",
        "gemm_2d.strata@entry",
        "spmv_csr.strata@spmv",
        "ragged_row_sum.strata@row_sum",
        "tuple_folds.strata@max_count",
        "neighbor_tuple_reduce.strata@lowest_neighbor",
        "in_place_update.strata@two_sweeps",
    ] {
        assert!(compared.iter().any(|c| c == must), "{must} was not compared; compared: {compared:?}");
    }
    // Whole float sums run split (schedule::Gpu::Split) and agree up to rounding; so do rows
    // summed in lanes (schedule::Gpu::Lanes).
    for split in ["whole_sums.strata@sums", "whole_sums.strata@rows"] {
        assert!(reassociated.iter().any(|c| c == split), "{split} not reassociated: {reassociated:?}");
    }
    eprintln!("{} entries' CUDA equal the interpreter ({} up to rounding)", compared.len(), reassociated.len());
}

#[test]
fn a_gpu_index_error_names_the_value_as_the_cpu_does() {
    let text = "func @pick(%x: tensor<f64, I[0:5]>, %idx: tensor<i64, B[0:3], C[0:1]>) -> tensor<f64, B[0:3]> {\n  return gather(%x, %idx, coordinates = [0], mode = copy)\n}\n";
    let module = strata_verify::parse(text).unwrap();
    let info = strata_verify::verify(&module).unwrap();
    let (h, f) = module.entries().next().unwrap();
    let mut args = common::entry_args(&info.types, f);
    args[1].data = strata_runtime::Data::Scalars(strata_runtime::Column::I64(vec![1, 7, 2]));
    let names: Vec<String> = f.params.iter().map(|&q| f.exprs[q].name.clone()).collect();
    let result_ty = f.result().map(|r| ValueType::from_ir(&info.types, r));
    // The C's error.
    let cpu = strata_codegen::lower(&module, &info.types, h).unwrap();
    let (so, _) = strata_codegen::compile::build(&strata_codegen::emit_c::emit(&cpu)).unwrap();
    let lib = strata_codegen::compile::Loaded::open(&so).unwrap();
    let want = exec::run_threads(&cpu, &lib, &args, &names, result_ty.as_ref(), 1).map(|_| ()).unwrap_err().to_string();
    assert!(want.contains("7 is outside [0:5]"), "{want}");
    // The CUDA's, emulated.
    let options = LowerOptions { gpu: Some(0), ..LowerOptions::for_this_machine() };
    let program = strata_codegen::lower_with(&module, &info.types, h, &options).unwrap();
    let (cuda, extents) = emit_cuda(&program).unwrap();
    let case = Case { name: "pick".into(), program, extents, args, names, result_ty, want: Err(String::new()) };
    let got = emulated(&[(cuda, case)]).pop().unwrap().map(|_| ()).unwrap_err();
    assert_eq!(got, want);
}
