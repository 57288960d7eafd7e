//! The C prelude's helpers compiled and run on their own, on each code path the compiler
//! flags select.

use std::process::Command;

use super::PRELUDE;
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
    std::fs::write(&src, format!("{PRELUDE}\n#include <stdio.h>\n{main}")).unwrap();
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
