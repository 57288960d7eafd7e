//! The C prelude's helpers compiled and run on their own, on each code path the compiler
//! flags select.

use std::process::Command;

use super::{PRELUDE, PRELUDE_COMPLEX};
use crate::compile::{compiler, FLAGS};

/// `strata_find` and `strata_find32` against a plain scan: sorted unique runs of every length
/// up to three vectors (so binary search and the run comparison both run), keys at, between,
/// below and above the stored coordinates, beyond `int32_t` for the 32-bit coordinates, and
/// runs that end at the end of their array.
const FIND_TEST: &str = r#"
static uint64_t rng_ = 88172645463325252ull;
static int64_t next_(void) { rng_ ^= rng_ << 13; rng_ ^= rng_ >> 7; rng_ ^= rng_ << 17; return (int64_t)(rng_ >> 1); }
static int64_t expect_(const int64_t *crd, int64_t lo, int64_t hi, int64_t c) {
  for (int64_t i = lo; i < hi; ++i) if (crd[i] == c) return i;
  return -1;
}
int main(void) {
  for (int trial = 0; trial < 4000; ++trial) {
    const int64_t n = trial % 40, lo = next_() % 5;
    /* The run ends at the end of a heap block of exactly its size. */
    int64_t *c64 = malloc((lo + n + 1) * sizeof(int64_t));
    int32_t *c32 = malloc((lo + n + 1) * sizeof(int32_t));
    int64_t x = -(next_() % 50) - (trial % 3 == 0 ? INT64_C(1) << 40 : 0);
    for (int64_t i = 0; i < lo + n; ++i) { x += 1 + next_() % 4; c64[i] = x; }
    for (int64_t i = 0; i < lo + n; ++i) c32[i] = (int32_t)(c64[i] - c64[0] - 7);
    int64_t e32[lo + n + 1];
    for (int64_t i = 0; i < lo + n; ++i) e32[i] = c32[i];
    const int64_t first = lo + n > 0 ? c64[0] : 0, last = lo + n > 0 ? c64[lo + n - 1] : 0;
    for (int64_t c = first - 3; c <= last + 3; ++c) {
      if (strata_find(c64, lo, lo + n, c) != expect_(c64, lo, lo + n, c)) { printf("find %lld\n", (long long)c); return 1; }
      const int64_t c2 = c - first - 7;
      if (strata_find32(c32, lo, lo + n, c2) != expect_(e32, lo, lo + n, c2)) { printf("find32 %lld\n", (long long)c2); return 1; }
      /* Keys that only agree with a stored coordinate in their low 32 bits. */
      if (strata_find32(c32, lo, lo + n, c2 + (INT64_C(1) << 32)) != -1) { printf("find32 wide %lld\n", (long long)c2); return 1; }
    }
    free(c64);
    free(c32);
  }
  puts("ok");
  return 0;
}
"#;

/// Compiles `main` after the prelude with the kernel flags (but a program, not a library)
/// and `extra`, runs it, and returns its output.
fn run_c(main: &str, extra: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("strata-prelude-{}-{}", std::process::id(), extra.join("")));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("t.c"), dir.join("t"));
    std::fs::write(&src, format!("{PRELUDE}{PRELUDE_COMPLEX}\n#include <stdio.h>\n{main}")).unwrap();
    let flags = FLAGS.iter().filter(|f| !matches!(**f, "-shared" | "-fPIC"));
    let built =
        Command::new(compiler()).args(flags).args(extra).arg(&src).arg("-o").arg(&exe).arg("-lm").output().unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let ran = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stdout));
    String::from_utf8_lossy(&ran.stdout).into_owned()
}

#[test]
fn finds_agree_with_a_scan_on_the_vector_path() {
    assert_eq!(run_c(FIND_TEST, &[]).trim(), "ok");
}

#[test]
fn finds_agree_with_a_scan_on_the_portable_path() {
    assert_eq!(run_c(FIND_TEST, &["-mno-avx2"]).trim(), "ok");
}

/// `<math.h>` is included exactly where a kernel may need it: any call that is not Strata's,
/// OpenMP's, a builtin or declared by the prelude, or one of the header's constants; never for
/// words in comments, pragmas, string literals, attributes or a member's call.
#[test]
fn the_math_header_is_included_where_a_kernel_calls_the_library() {
    use super::uses_math_header as math;
    assert!(math("  x = exp(a);"));
    assert!(math("  y = sinf (a);"));
    assert!(math("  y = isnan(a);"));
    assert!(math("  y = HUGE_VAL;"));
    assert!(math("  y = some_new_routine(a);"), "an unknown call includes the header");
    assert!(!math("  y = strata_fmax(a, b); z = __builtin_inff(); w = __builtin_nanf(\"\");"));
    assert!(!math("  p = aligned_alloc(64, n); memcpy(p, q, n); free(p); k = INT64_C(3);"));
    assert!(!math("  rt->gemm_f64(m, n, k); rt->alloc(3, n); s.f(x);"));
    assert!(!math("/* exp(x) in a comment */ // sin(y)\n  x = 1;"));
    assert!(!math("  #pragma omp parallel for reduction(max:e_) if(par_)\n  _Pragma(\"omp simd\") x = 1;"));
    assert!(!math("  double r[8] __attribute__((aligned(64))); const int t = omp_get_thread_num();"));
    assert!(!math("  for (i = 0; i < n; ++i) if (sizeof(double) == 8) return e_;"));
}

/// A translation unit parses only the headers its kernels use: none of `<math.h>` and
/// `<complex.h>` for a stencil, both for complex arithmetic.
#[test]
fn a_translation_unit_includes_the_sections_its_body_uses() {
    use super::translation_unit;
    let plain = translation_unit("/* t */\n", |o| o.push_str("static int strata_k(void) { return 0; }\n"));
    assert!(!plain.contains("#include <math.h>") && !plain.contains("#include <complex.h>"));
    let math = translation_unit("/* t */\n", |o| o.push_str("static double strata_k(double x) { return exp(x); }\n"));
    assert!(math.contains("#include <math.h>") && !math.contains("#include <complex.h>"));
    let complex = translation_unit("/* t */\n", |o| {
        o.push_str("static double _Complex strata_k(double _Complex z) { return z; }\n")
    });
    assert!(complex.contains("#include <math.h>") && complex.contains("#include <complex.h>"));
    // Each compiles with the kernel flags.
    for (i, unit) in [plain, math, complex].iter().enumerate() {
        let dir = std::env::temp_dir().join(format!("strata-units-{}-{i}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, obj) = (dir.join("u.c"), dir.join("u.o"));
        std::fs::write(&src, unit).unwrap();
        let flags = FLAGS.iter().filter(|f| !matches!(**f, "-shared"));
        let built = Command::new(compiler()).args(flags).arg("-c").arg(&src).arg("-o").arg(&obj).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(built.status.success(), "unit {i}: {}", String::from_utf8_lossy(&built.stderr));
    }
}

/// A region whose `if(par_)` is false, or any region of a run asking for one thread, runs on
/// the calling thread through the prelude's `__wrap_GOMP_parallel` where the kernel libraries
/// are linked with it (GCC: no libgomp team of one, so `omp_get_level()` stays 0 inside), and
/// computes what a team computes: every iteration runs, and the error flags combine by `max`
/// on both paths.
#[test]
fn a_region_of_one_thread_runs_on_the_caller_and_combines_its_flags() {
    const REGIONS: &str = r#"
static int region(int par_, int *e, double *sum) {
  int e_ = 0, level = -1;
  double s = 0;
  #pragma omp parallel for schedule(static) reduction(max:e_) reduction(+:s) if(par_)
  for (int i = 0; i < 1000; ++i) {
    s += i;
    if (i == 999) level = omp_get_level();
    if (i == 42) e_ = 7;
    if (i == 900) e_ = e_ > 3 ? e_ : 3;
  }
  *e = e_;
  *sum = s;
  return level;
}
int main(void) {
  int e0, e1, e2;
  double s0, s1, s2;
  const int serial = region(0, &e0, &s0), parallel = region(1, &e1, &s1);
  omp_set_num_threads(1); /* a run asking for one thread (strata_entry's `threads`) */
  const int one = region(1, &e2, &s2);
  printf("%d %d %d %d %d %d %.0f %.0f %.0f\n", serial, parallel, one, e0, e1, e2, s0, s1, s2);
  return 0;
}
"#;
    let wrap = ["-DSTRATA_WRAP_GOMP_PARALLEL", "-Wl,--wrap=GOMP_parallel"];
    let libs = crate::compile::libs(&compiler());
    let wrapped = wrap.iter().all(|w| libs.contains(w));
    // GCC's kernel libraries (linked without the default libraries) have the wrapper, so this
    // test runs it wherever the kernels do.
    assert_eq!(wrapped, libs.contains(&"-nodefaultlibs"), "{libs:?}");
    // With the wrapper (where the kernels have it) and without it (libgomp's team of one).
    for with in [wrapped, false] {
        let out = run_c(REGIONS, if with { &wrap } else { &[] });
        let f: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(f[3..], ["7", "7", "7", "499500", "499500", "499500"], "{out}");
        assert_eq!(f[1], "1", "a parallel region is a team: {out}");
        let caller = if with { "0" } else { "1" };
        assert_eq!(f[0], caller, "where the region of one thread ran: {out}");
        assert_eq!(f[2], caller, "where the region of a one-thread run ran: {out}");
    }
}
