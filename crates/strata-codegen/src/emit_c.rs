//! C code for a [`KernelProgram`]: one function per kernel, named loops over the domain, the
//! fused expression per store, and `strata_entry(void **buffers)` running the kernels in order.
//!
//! Semantics match the reference interpreter bit for bit: integer arithmetic wraps (computed in
//! unsigned types), integer division by zero and neighbor-table entries outside their source
//! interval return an error code, float casts saturate, `maximum`/`minimum` propagate NaN, and
//! the code is compiled without floating-point contraction (no fused multiply-add). A point
//! whose value is absent (a skipped neighbor) stores zero; only present values are computed.

use std::fmt::Write;
use std::rc::Rc;

use strata_ir::{BinaryOp, Scalar, UnaryOp};
use strata_runtime::Sv;

use crate::kernel::{Buffer, CompressedOut, Kernel, KernelKind, KernelProgram, ScanLoop, Scatter, Store, Window};
use crate::matmul::MatMul;
use crate::sparse::CoIteration;

mod moments;
mod sparse;
mod tables;
mod window;
use crate::sym::{Coord, Load, SExpr};
use sparse::SetBounds;

/// The C type of a scalar.
pub fn c_type(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool | Scalar::U8 => "uint8_t",
        Scalar::I8 => "int8_t",
        Scalar::I16 => "int16_t",
        Scalar::I32 => "int32_t",
        Scalar::I64 | Scalar::Index => "int64_t",
        Scalar::U16 => "uint16_t",
        Scalar::U32 => "uint32_t",
        Scalar::U64 => "uint64_t",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
    }
}

fn unsigned_of(s: Scalar) -> &'static str {
    match s {
        Scalar::I8 | Scalar::U8 | Scalar::Bool => "uint8_t",
        Scalar::I16 | Scalar::U16 => "uint16_t",
        Scalar::I32 | Scalar::U32 => "uint32_t",
        _ => "uint64_t",
    }
}

const PRELUDE: &str = r#"#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <omp.h>

/* The runtime table (Rust: strata_codegen::runtime::Runtime): strided GEMM,
   dst[m x n] (+)= lhs[m x k] * rhs[k x n], strides in elements (row, column). */
typedef struct {
  void (*gemm_f32)(int64_t m, int64_t n, int64_t k, float *dst, int64_t dst_rs, int64_t dst_cs, int accumulate,
                   const float *lhs, int64_t lhs_rs, int64_t lhs_cs, const float *rhs, int64_t rhs_rs, int64_t rhs_cs,
                   int threads);
  void (*gemm_f64)(int64_t m, int64_t n, int64_t k, double *dst, int64_t dst_rs, int64_t dst_cs, int accumulate,
                   const double *lhs, int64_t lhs_rs, int64_t lhs_cs, const double *rhs, int64_t rhs_rs,
                   int64_t rhs_cs, int threads);
  /* A buffer of `len` elements for buffer `buffer` (a sparse result's coordinates and values,
     whose length is known only while running); NULL if it cannot be allocated. */
  void *(*alloc)(int64_t buffer, int64_t len);
} strata_rt;

/* Vector math: loops calling these vectorize with the variants in glibc's libmvec (at most
   4 ulp from the correctly rounded result, as glibc documents; the scalar libm the interpreter
   uses is within 1 ulp). */
#if defined(__x86_64__)
#define STRATA_VECTOR_MATH(T, f) _Pragma("omp declare simd notinbranch") T f(T);
STRATA_VECTOR_MATH(double, exp) STRATA_VECTOR_MATH(float, expf)
STRATA_VECTOR_MATH(double, log) STRATA_VECTOR_MATH(float, logf)
STRATA_VECTOR_MATH(double, sin) STRATA_VECTOR_MATH(float, sinf)
STRATA_VECTOR_MATH(double, cos) STRATA_VECTOR_MATH(float, cosf)
STRATA_VECTOR_MATH(double, tan) STRATA_VECTOR_MATH(float, tanf)
STRATA_VECTOR_MATH(double, tanh) STRATA_VECTOR_MATH(float, tanhf)
#endif

/* The first bad entry or index a run met: its value, the interval it had to lie in, and the
   table buffer it came from (-1: a computed index). Read by the caller after an error
   (strata_error_detail), so its message names them. Cold and out of line, so that a checked
   access in a hot loop costs one unsigned compare and a branch never taken. */
static int64_t strata_bad[5];
__attribute__((cold, noinline)) static void strata_note_bad(int64_t t, int64_t lo, int64_t hi, int64_t site) {
  _Pragma("omp critical(strata_bad)")
  if (!strata_bad[4]) { strata_bad[0] = t; strata_bad[1] = lo; strata_bad[2] = hi; strata_bad[3] = site; strata_bad[4] = 1; }
}
const int64_t *strata_error_detail(void) { return strata_bad; }
/* Neighbor-table entry: -1 means "no neighbor" (the point is absent); anything else must lie in
   [lo, hi). Returns a safe coordinate to address with. */
static inline int64_t strata_nb(int64_t t, int64_t lo, int64_t hi, int64_t site, int *err) {
  if (t == -1) return lo;
  if (__builtin_expect((uint64_t)t - (uint64_t)lo >= (uint64_t)hi - (uint64_t)lo, 0)) { strata_note_bad(t, lo, hi, site); *err = 2; return lo; }
  return t;
}
static inline int strata_ok(int64_t t) { return t != -1; }
static inline int64_t strata_u64_entry(uint64_t t) { return t > (uint64_t)INT64_MAX ? INT64_MIN : (int64_t)t; }
/* Position of coordinate c among the sorted, unique coordinates crd[lo..hi) of a compressed
   level, or -1 where it is not stored. Pure, so the compiler shares repeated searches. */
#define STRATA_FIND(name, T) static inline __attribute__((pure)) int64_t name(const T *crd, int64_t lo, int64_t hi, int64_t c) { \
  const int64_t end = hi; \
  while (lo < hi) { const int64_t mid = lo + (hi - lo) / 2; if (crd[mid] < c) lo = mid + 1; else hi = mid; } \
  return (lo < end && crd[lo] == c) ? lo : -1; }
STRATA_FIND(strata_find, int64_t)
STRATA_FIND(strata_find32, int32_t)
/* A computed index: must lie in [lo, hi), else error 4. */
static inline int64_t strata_ix(int64_t t, int64_t lo, int64_t hi, int *err) {
  if (__builtin_expect((uint64_t)t - (uint64_t)lo >= (uint64_t)hi - (uint64_t)lo, 0)) { strata_note_bad(t, lo, hi, -1); *err = 4; return lo; }
  return t;
}
/* Sorts a[0..n) in place by insertion: for the short lists (at most 32) of a sparse row. */
static void strata_sort_i64(int64_t *a, int64_t n) {
  for (int64_t i = 1; i < n; ++i) { const int64_t x = a[i]; int64_t j = i; while (j > 0 && a[j - 1] > x) { a[j] = a[j - 1]; --j; } a[j] = x; }
}
static inline int64_t strata_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
/* Streaming (non-temporal) stores, for results larger than the last-level cache: no later reader
   would find them in cache, and streaming them skips reading each line before writing it.
   strata_stream copies a row of whole 64-byte lines out of cache (compiler builtins rather
   than <immintrin.h>, whose parsing alone costs ~80 ms per compile); the stores are weakly
   ordered, so each thread ends its share with strata_stream_fence(). */
typedef long long strata_line __attribute__((vector_size(64), may_alias));
static inline void strata_stream(void *restrict dst, const void *restrict src, size_t bytes) {
#if defined(__clang__)
  if (((uintptr_t)dst & 63) == 0) {
    for (size_t i = 0; i < bytes; i += 64) __builtin_nontemporal_store(*(const strata_line *)((const char *)src + i), (strata_line *)((char *)dst + i));
    return;
  }
#elif defined(__GNUC__) && defined(__AVX512F__)
  if (((uintptr_t)dst & 63) == 0) {
    for (size_t i = 0; i < bytes; i += 64) __builtin_ia32_movntdq512((strata_line *)((char *)dst + i), *(const strata_line *)((const char *)src + i));
    return;
  }
#elif defined(__GNUC__) && defined(__AVX__)
  typedef long long half_ __attribute__((vector_size(32), may_alias));
  if (((uintptr_t)dst & 31) == 0) {
    for (size_t i = 0; i < bytes; i += 32) __builtin_ia32_movntdq256((half_ *)((char *)dst + i), *(const half_ *)((const char *)src + i));
    return;
  }
#elif defined(__GNUC__) && defined(__SSE2__)
  typedef long long quarter_ __attribute__((vector_size(16), may_alias));
  if (((uintptr_t)dst & 15) == 0) {
    for (size_t i = 0; i < bytes; i += 16) __builtin_ia32_movntdq((quarter_ *)((char *)dst + i), *(const quarter_ *)((const char *)src + i));
    return;
  }
#endif
  memcpy(dst, src, bytes);
}
static inline void strata_stream_fence(void) {
#if defined(__SSE__) && !defined(__clang__)
  __builtin_ia32_sfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
static inline double strata_fmax(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : (a > b ? a : b); }
static inline double strata_fmin(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : (a < b ? a : b); }
static inline float strata_fmaxf(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : (a > b ? a : b); }
static inline float strata_fminf(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : (a < b ? a : b); }
#define STRATA_DIVMOD(name, T, SUF) static inline T name(T a, T b, int rem) { \
  T m = fmod##SUF(a, b); if (b == 0) return rem ? m : a / b; T div = (a - m) / b; \
  if (m != 0) { if ((b < 0) != (m < 0)) { m += b; div -= 1; } } else m = copysign##SUF(0, b); \
  if (rem) return m; if (div != 0) { T f = floor##SUF(div); return (div - f > (T)0.5) ? f + 1 : f; } \
  return copysign##SUF(0, a / b); }
STRATA_DIVMOD(strata_divmod, double, )
STRATA_DIVMOD(strata_divmodf, float, f)
#define STRATA_LOGADDEXP(name, T, SUF) static inline T name(T a, T b) { \
  if (a == b) return a + (T)0.693147180559945309417232121458176568; T d = a - b; \
  if (d > 0) return a + log1p##SUF(exp##SUF(-d)); if (d <= 0) return b + log1p##SUF(exp##SUF(d)); return d; }
STRATA_LOGADDEXP(strata_logaddexp, double, )
STRATA_LOGADDEXP(strata_logaddexpf, float, f)
/* Saturating float-to-integer conversion, NaN to 0 (as Rust's `as`). */
#define STRATA_F2I(name, T, lo, hi) static inline T name(double x) { \
  if (isnan(x)) return 0; if (x <= (double)(lo)) return (T)(lo); if (x >= (double)(hi)) return (T)(hi); return (T)x; }
STRATA_F2I(strata_f2i8, int8_t, INT8_MIN, INT8_MAX)
STRATA_F2I(strata_f2i16, int16_t, INT16_MIN, INT16_MAX)
STRATA_F2I(strata_f2i32, int32_t, INT32_MIN, INT32_MAX)
STRATA_F2I(strata_f2u8, uint8_t, 0, UINT8_MAX)
STRATA_F2I(strata_f2u16, uint16_t, 0, UINT16_MAX)
STRATA_F2I(strata_f2u32, uint32_t, 0, UINT32_MAX)
static inline int64_t strata_f2i64(double x) { if (isnan(x)) return 0; if (x <= -9223372036854775808.0) return INT64_MIN; if (x >= 9223372036854775808.0) return INT64_MAX; return (int64_t)x; }
static inline uint64_t strata_f2u64(double x) { if (isnan(x) || x <= 0.0) return 0; if (x >= 18446744073709551616.0) return UINT64_MAX; return (uint64_t)x; }
"#;

#[derive(Clone)]
struct Emitter<'p> {
    program: &'p KernelProgram,
    /// Strip-local buffers of the kernel being emitted (see `ScanKernel::local`).
    local: Option<Local>,
    /// Loops of the kernel being emitted that visit stored coordinates (`Kernel::sets`).
    sets: &'p [CoIteration],
    /// Values the kernel being emitted stages in rolling windows (`Nest::windows`).
    windows: &'p [Window],
    /// Table entries bound to variables at the current statement ([`tables`]).
    entries: Vec<tables::BoundEntry>,
    /// The next bound entry's number, unique in the kernel's function.
    next_entry: Rc<std::cell::Cell<usize>>,
}

/// Where a kernel's strip-local buffers live: `loc{b}[(scan - start) * width + (column - jb)]`.
#[derive(Clone)]
struct Local {
    buffers: Vec<usize>,
    scan: (String, i64),
    /// The strip's column variable, when the kernel is strip-mined.
    column: Option<String>,
}

/// The C loop variable of a dimension (`d_I`), or of a fresh variable (`f_…`, never clashing).
fn var(name: &str) -> String {
    let clean =
        |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect::<String>();
    match name.strip_prefix('$') {
        Some(rest) => format!("f_{}", clean(rest)),
        None => format!("d_{}", clean(name)),
    }
}

fn literal(v: Sv) -> String {
    match v {
        Sv::Bool(b) => (b as u8).to_string(),
        Sv::F64(x) => float_lit(x, ""),
        Sv::F32(x) => float_lit(x as f64, "f"),
        Sv::I64(x) | Sv::Index(x) => {
            if x == i64::MIN {
                "INT64_MIN".into()
            } else {
                format!("INT64_C({x})")
            }
        }
        Sv::U64(x) => format!("UINT64_C({x})"),
        other => format!("(({}){})", c_type(other.scalar()), other.as_i128()),
    }
}

fn float_lit(x: f64, suffix: &str) -> String {
    if x.is_nan() {
        "NAN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "INFINITY".into()
        } else {
            "(-INFINITY)".into()
        }
    } else {
        format!("{x:.17e}{suffix}")
    }
}

impl Emitter<'_> {
    fn buffer(&self, b: usize) -> &Buffer {
        &self.program.buffers[b]
    }

    fn coord(&self, c: &Coord) -> String {
        match c {
            Coord::Var { dim, offset } => {
                if *offset == 0 {
                    var(dim.as_str())
                } else {
                    format!("({} + {offset})", var(dim.as_str()))
                }
            }
            Coord::Const(k) => format!("INT64_C({k})"),
            Coord::Computed { value, source, offset } => {
                let t = format!("strata_ix((int64_t)({}), {}, {}, err)", self.value(value), source.start, source.stop);
                if *offset == 0 {
                    t
                } else {
                    format!("({t} + {offset})")
                }
            }
            Coord::Table { table, source, offset } => {
                let t = self.table_coord(table, *source);
                if *offset == 0 {
                    t
                } else {
                    format!("({t} + {offset})")
                }
            }
        }
    }

    /// Whether [`Self::load`] reads buffer `b` from a rolling window or a strip-local array
    /// rather than from its row-major buffer.
    fn in_scratch(&self, b: usize) -> bool {
        self.windows.iter().any(|w| w.buffer == b) || self.local.as_ref().is_some_and(|loc| loc.buffers.contains(&b))
    }

    fn load(&self, l: &Load) -> String {
        if let Some(w) = self.windows.iter().find(|w| w.buffer == l.buffer) {
            return self.window_load(w, l);
        }
        if let Some(loc) = self.local.as_ref().filter(|loc| loc.buffers.contains(&l.buffer)) {
            // Read and written at the current point only (checked by `kernel_passes::fuse_scans`).
            let (k, start) = &loc.scan;
            return match &loc.column {
                Some(j) => format!("loc{}[({k} - ({start})) * {STRIP} + ({j} - jb)]", l.buffer),
                None => format!("loc{}[{k} - ({start})]", l.buffer),
            };
        }
        let b = self.buffer(l.buffer);
        let shape: Vec<i64> = b.levels.iter().map(|x| x.interval.len() as i64).collect();
        let mut stride = 1i64;
        let mut terms = Vec::new();
        for (k, (lv, c)) in b.levels.iter().zip(&l.coords).enumerate().rev() {
            let _ = k;
            let rel = if lv.interval.start == 0 {
                self.coord(c)
            } else {
                format!("({} - ({}))", self.coord(c), lv.interval.start)
            };
            terms.push(if stride == 1 { rel } else { format!("{rel} * {stride}") });
            stride *= shape[k];
        }
        terms.reverse();
        let idx = if terms.is_empty() { "0".to_string() } else { terms.join(" + ") };
        format!("{}[{idx}]", self.name(l.buffer))
    }

    /// The C name of buffer `b`: its parameter name, made an identifier and unique.
    fn name(&self, b: usize) -> String {
        let clean: String =
            self.buffer(b).name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        if clean.starts_with(|c: char| c.is_ascii_digit()) {
            format!("v{clean}_b{b}")
        } else {
            format!("{clean}_b{b}")
        }
    }

    /// Whether the value exists (skip values propagate).
    fn present(&self, e: &SExpr) -> String {
        let and = |parts: Vec<String>| {
            let p: Vec<String> = parts.into_iter().filter(|s| s != "1").collect();
            if p.is_empty() {
                "1".to_string()
            } else {
                format!("({})", p.join(" && "))
            }
        };
        match e {
            SExpr::Load(l) => and(self.load_present(l)),
            // An unstored entry is the fill value, present; only a ragged run's end skips.
            SExpr::Sparse(r) => {
                let mut parts: Vec<String> = r.coords.iter().flat_map(|c| self.coord_present(c)).collect();
                let at = self.sparse_position(r, r.coords.len());
                if at.skipped {
                    parts.push(format!("({} != {})", at.position, sparse::SKIPPED));
                }
                and(parts)
            }
            SExpr::Const(_) | SExpr::Acc(_) | SExpr::Present(_) | SExpr::Reduce { .. } => "1".into(),
            SExpr::Absent(_) => "0".into(),
            SExpr::Guard { table, source, value } => {
                let mut parts = self.table_present(table, *source);
                parts.push(self.present(value));
                and(parts)
            }
            SExpr::Index(c) => and(self.coord_present(c)),
            SExpr::Unary(_, a, _) | SExpr::Cast(a, _, _) => self.present(a),
            SExpr::Binary(_, a, b, _) => and(vec![self.present(a), self.present(b)]),
            SExpr::Select(c, t, f) => {
                let (pc, pt, pf) = (self.present(c), self.present(t), self.present(f));
                if pt == "1" && pf == "1" {
                    pc
                } else {
                    and(vec![pc, format!("({} ? {pt} : {pf})", self.value(c))])
                }
            }
        }
    }

    fn load_present(&self, l: &Load) -> Vec<String> {
        l.coords.iter().flat_map(|c| self.coord_present(c)).collect()
    }

    fn coord_present(&self, c: &Coord) -> Vec<String> {
        match c {
            Coord::Table { table, source, .. } => self.table_present(table, *source),
            Coord::Computed { value, .. } => vec![self.present(value)],
            _ => vec![],
        }
    }

    fn value(&self, e: &SExpr) -> String {
        match e {
            SExpr::Load(l) => self.load(l),
            SExpr::Sparse(r) => {
                let values = self.name(self.program.sparse[r.tensor].values);
                let at = self.sparse_position(r, r.coords.len());
                if at.unstored || at.skipped {
                    // Zero where not stored: the fill value (or, skipped, the absent value).
                    format!("({{ const int64_t p_ = {}; p_ < 0 ? 0 : {values}[p_]; }})", at.position)
                } else {
                    format!("{values}[{}]", at.position)
                }
            }
            SExpr::Const(v) => literal(*v),
            SExpr::Absent(t) => literal(Sv::zero(*t)),
            SExpr::Index(c) => self.coord(c),
            SExpr::Unary(op, a, s) => self.unary(*op, &self.value(a), *s),
            // Division of an integer by a positive constant needs no zero or overflow check.
            SExpr::Binary(op @ (BinaryOp::Divides | BinaryOp::Modulo), a, b, s)
                if !s.is_float() && matches!(&**b, SExpr::Const(v) if v.as_i128() > 0) =>
            {
                let sym = if *op == BinaryOp::Divides { "/" } else { "%" };
                format!("(({}) {sym} {})", self.value(a), self.value(b))
            }
            SExpr::Binary(op, a, b, s) => self.binary(*op, &self.value(a), &self.value(b), *s),
            SExpr::Select(c, t, f) => format!("({} ? {} : {})", self.value(c), self.value(t), self.value(f)),
            SExpr::Cast(a, from, to) => cast(&self.value(a), *from, *to),
            SExpr::Present(a) => format!("((uint8_t){})", self.present(a)),
            SExpr::Acc(id) => format!("acc{id}"),
            SExpr::Guard { table, source, value } => self.guarded(table, *source, value),
            SExpr::Reduce { id, vars, init, scalar, body } => {
                let mut invariants = Vec::new();
                let body = hoist_reductions(body, &mut invariants, &|r| invariant(r, vars, *id));
                if let Some(m) = moments::recognize(*id, vars, init, *scalar, &body, &invariants, reassociable(e)) {
                    return self.moments(&m, &invariants);
                }
                let before: String = invariants
                    .iter()
                    .map(|r| {
                        let SExpr::Reduce { id: h, scalar: t, .. } = &**r else { unreachable!("hoisted reductions") };
                        format!("{} acc{h} = {}; ", c_type(*t), self.value(r))
                    })
                    .collect();
                let sums = if reassociable(e) { vec![format!("acc{id}")] } else { Vec::new() };
                let loops = self.fold_loops(vars, &sums);
                let step = self.fold_step(*id, &body);
                format!(
                    "({{ {before}{} acc{id} = {}; {loops}{{ {step} }} acc{id}; }})",
                    c_type(*scalar),
                    self.value(init)
                )
            }
        }
    }

    /// The loop headers of a fold's variables, outermost first; the innermost keeps partial
    /// sums of the accumulators `simd_sums` in vector lanes (see [`reassociable`]) when there
    /// are any. Variables that visit stored coordinates get [`Self::set_loop`]s.
    fn fold_loops(&self, vars: &[(strata_ir::DimName, strata_ir::Interval)], simd_sums: &[String]) -> String {
        let mut loops = String::new();
        for (i, (v, range)) in vars.iter().enumerate() {
            if let Some(c) = self.set_of(v) {
                loops.push_str(&self.set_loop(c));
                continue;
            }
            if i + 1 == vars.len() && !simd_sums.is_empty() {
                let _ = write!(loops, "_Pragma(\"omp simd reduction(+:{})\") ", simd_sums.join(","));
            }
            let d = var(v.as_str());
            let _ = write!(loops, "for (int64_t {d} = {}; {d} < {}; ++{d}) ", range.start, range.stop);
        }
        loops
    }

    /// One step of fold `id`: the accumulator becomes `body` where `body` exists.
    /// Its table entries are bound first ([`Self::bind_tables`]).
    fn fold_step(&self, id: u32, body: &Rc<SExpr>) -> String {
        let (decls, em) = self.bind_tables(&[body]);
        match em.present(body).as_str() {
            "1" => format!("{decls}acc{id} = {};", em.value(body)),
            p => format!("{decls}if ({p}) acc{id} = {};", em.value(body)),
        }
    }

    fn unary(&self, op: UnaryOp, a: &str, s: Scalar) -> String {
        let f32 = s == Scalar::F32;
        let m = |name: &str| format!("{name}{}({a})", if f32 { "f" } else { "" });
        match op {
            UnaryOp::Not => format!("((uint8_t)!({a}))"),
            UnaryOp::Neg if s.is_float() => format!("(-({a}))"),
            UnaryOp::Neg => format!("(({})(({})0 - ({})({a})))", c_type(s), unsigned_of(s), unsigned_of(s)),
            UnaryOp::Abs if s.is_float() => m("fabs"),
            UnaryOp::Abs if matches!(s, Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64) => a.to_string(),
            UnaryOp::Abs => {
                format!(
                    "({{ {t} x_ = {a}; (({t})(x_ < 0 ? ({u})0 - ({u})x_ : ({u})x_)); }})",
                    t = c_type(s),
                    u = unsigned_of(s)
                )
            }
            UnaryOp::Sqrt => m("sqrt"),
            UnaryOp::Exp => m("exp"),
            UnaryOp::Log => m("log"),
            UnaryOp::Sin => m("sin"),
            UnaryOp::Cos => m("cos"),
            UnaryOp::Tan => m("tan"),
            UnaryOp::Tanh => m("tanh"),
            UnaryOp::Floor => m("floor"),
            UnaryOp::Ceil => m("ceil"),
            // The default rounding mode rounds ties to even.
            UnaryOp::Round => m("nearbyint"),
            UnaryOp::Trunc => m("trunc"),
            UnaryOp::Acos => m("acos"),
            UnaryOp::Acosh => m("acosh"),
            UnaryOp::Asin => m("asin"),
            UnaryOp::Asinh => m("asinh"),
            UnaryOp::Atan => m("atan"),
            UnaryOp::Atanh => m("atanh"),
            UnaryOp::Cosh => m("cosh"),
            UnaryOp::Sinh => m("sinh"),
            UnaryOp::Expm1 => m("expm1"),
            UnaryOp::Log1p => m("log1p"),
            UnaryOp::Log2 => m("log2"),
            UnaryOp::Log10 => m("log10"),
            UnaryOp::Sign if s.is_float() => {
                format!(
                    "({{ {t} x_ = {a}; x_ > 0 ? ({t})1 : (x_ < 0 ? ({t})-1 : (x_ == 0 ? ({t})0 : x_)); }})",
                    t = c_type(s)
                )
            }
            UnaryOp::Sign => format!("({{ {t} x_ = {a}; ({t})((x_ > 0) - (x_ < 0)); }})", t = c_type(s)),
            // The classification macros return any nonzero int (glibc's `isinf(-inf)` is -1).
            UnaryOp::IsNan if s.is_float() => format!("((uint8_t)(isnan({a}) != 0))"),
            UnaryOp::IsInf if s.is_float() => format!("((uint8_t)(isinf({a}) != 0))"),
            UnaryOp::IsFinite if s.is_float() => format!("((uint8_t)(isfinite({a}) != 0))"),
            UnaryOp::IsNan | UnaryOp::IsInf => format!("((void)({a}), (uint8_t)0)"),
            UnaryOp::IsFinite => format!("((void)({a}), (uint8_t)1)"),
            UnaryOp::SignBit => format!("((uint8_t)(signbit({a}) != 0))"),
            UnaryOp::BitNot if s == Scalar::Bool => format!("((uint8_t)!({a}))"),
            UnaryOp::BitNot => format!("(({})~({a}))", c_type(s)),
        }
    }

    fn binary(&self, op: BinaryOp, a: &str, b: &str, s: Scalar) -> String {
        let t = c_type(s);
        let u = unsigned_of(s);
        let wrap = |sym: &str| format!("(({t})(({u})({a}) {sym} ({u})({b})))");
        let cmp = |sym: &str| format!("((uint8_t)(({a}) {sym} ({b})))");
        match op {
            BinaryOp::Plus if s.is_float() => format!("(({a}) + ({b}))"),
            BinaryOp::Minus if s.is_float() => format!("(({a}) - ({b}))"),
            BinaryOp::Multiplies if s.is_float() => format!("(({a}) * ({b}))"),
            BinaryOp::Divides if s.is_float() => format!("(({a}) / ({b}))"),
            BinaryOp::Plus => wrap("+"),
            BinaryOp::Minus => wrap("-"),
            BinaryOp::Multiplies => wrap("*"),
            BinaryOp::Divides | BinaryOp::Modulo if s.is_float() => {
                format!("fmod{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" })
            }
            BinaryOp::Divides | BinaryOp::Modulo => {
                let sym = if op == BinaryOp::Divides { "/" } else { "%" };
                // Wrapping MIN / -1 and a run-time error for a zero divisor, as the interpreter.
                format!(
                    "({{ {t} a_ = {a}, b_ = {b}; (b_ == 0) ? (*err = 1, ({t})0) : ((b_ == ({t})-1) ? (({t})(({u})0 - ({u})a_) * ({t})({sym_is_mod})) : ({t})(a_ {sym} b_)); }})",
                    sym_is_mod = if op == BinaryOp::Divides { "1" } else { "0" }
                )
            }
            BinaryOp::Power if s.is_float() => format!("pow{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Power => format!(
                "({{ {u} r_ = 1, x_ = ({u})({a}); int64_t e_ = (int64_t)({b}); if (e_ < 0) *err = 3; for (; e_ > 0; e_ >>= 1) {{ if (e_ & 1) r_ *= x_; x_ *= x_; }} ({t})r_; }})"
            ),
            BinaryOp::Maximum if s.is_float() => format!("strata_fmax{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Minimum if s.is_float() => format!("strata_fmin{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Maximum => format!("({{ {t} a_ = {a}, b_ = {b}; a_ > b_ ? a_ : b_; }})"),
            BinaryOp::Minimum => format!("({{ {t} a_ = {a}, b_ = {b}; a_ < b_ ? a_ : b_; }})"),
            BinaryOp::And => format!("((uint8_t)(({a}) && ({b})))"),
            BinaryOp::Or => format!("((uint8_t)(({a}) || ({b})))"),
            BinaryOp::Xor => format!("((uint8_t)((({a}) != 0) != (({b}) != 0)))"),
            BinaryOp::Eq => cmp("=="),
            BinaryOp::Ne => cmp("!="),
            BinaryOp::Less => cmp("<"),
            BinaryOp::LessEqual => cmp("<="),
            BinaryOp::Greater => cmp(">"),
            BinaryOp::GreaterEqual => cmp(">="),
            BinaryOp::FloorDivide | BinaryOp::Remainder if s.is_float() => format!(
                "strata_divmod{}(({a}), ({b}), {})",
                if s == Scalar::F32 { "f" } else { "" },
                (op == BinaryOp::Remainder) as u8
            ),
            BinaryOp::FloorDivide | BinaryOp::Remainder => {
                // Floor rounding, a zero divisor gives 0 and MIN / -1 wraps, as numpy.
                let q = if s.is_signed() {
                    "(b_ == 0 ? 0 : (b_ == -1 ? (T_)((U_)0 - (U_)a_) : (T_)(a_ / b_ - ((a_ % b_ != 0) && ((a_ < 0) != (b_ < 0))))))"
                } else {
                    "(b_ == 0 ? 0 : a_ / b_)"
                };
                let v = if op == BinaryOp::FloorDivide { "q_" } else { "(b_ == 0 ? (T_)0 : (T_)((U_)a_ - (U_)q_ * (U_)b_))" };
                format!("({{ typedef {t} T_; typedef {u} U_; T_ a_ = {a}, b_ = {b}; T_ q_ = {q}; {v}; }})")
            }
            BinaryOp::BitAnd => format!("(({t})(({a}) & ({b})))"),
            BinaryOp::BitOr => format!("(({t})(({a}) | ({b})))"),
            BinaryOp::BitXor => format!("(({t})(({a}) ^ ({b})))"),
            BinaryOp::ShiftLeft => {
                let bits = 8 * s.size_bytes();
                format!("({{ {t} a_ = {a}; int64_t b_ = (int64_t)({b}); (b_ < 0 || b_ >= {bits}) ? ({t})0 : ({t})(({u})a_ << b_); }})")
            }
            BinaryOp::ShiftRight => {
                let bits = 8 * s.size_bytes();
                format!("({{ {t} a_ = {a}; int64_t b_ = (int64_t)({b}); (b_ < 0 || b_ >= {bits}) ? (a_ < 0 ? ({t})-1 : ({t})0) : ({t})(a_ >> b_); }})")
            }
            BinaryOp::Atan2 => format!("atan2{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::Hypot => format!("hypot{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::CopySign => format!("copysign{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::NextAfter => format!("nextafter{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
            BinaryOp::LogAddExp => format!("strata_logaddexp{}(({a}), ({b}))", if s == Scalar::F32 { "f" } else { "" }),
        }
    }
}

fn cast(a: &str, from: Scalar, to: Scalar) -> String {
    if from == to {
        return a.to_string();
    }
    if to == Scalar::Bool {
        return format!("((uint8_t)(({a}) != 0))");
    }
    if from.is_float() && !to.is_float() {
        let f = match to {
            Scalar::I8 => "strata_f2i8",
            Scalar::I16 => "strata_f2i16",
            Scalar::I32 => "strata_f2i32",
            Scalar::I64 | Scalar::Index => "strata_f2i64",
            Scalar::U8 => "strata_f2u8",
            Scalar::U16 => "strata_f2u16",
            Scalar::U32 => "strata_f2u32",
            _ => "strata_f2u64",
        };
        return format!("{f}((double)({a}))");
    }
    // Integer to integer wraps (through the unsigned type of the target width).
    if !from.is_float() && !to.is_float() {
        return format!("(({})({})({a}))", c_type(to), unsigned_of(to));
    }
    format!("(({})({a}))", c_type(to))
}

/// Collects the accumulator types of every reduction in `e`.
/// The pragma sharing a kernel's outermost loop among threads (error flags combined by max),
/// when the kernel has enough work (`par_`, see [`PARALLEL_MIN`]).
const PARALLEL_FOR: &str = "#pragma omp parallel for schedule(static) reduction(max:e_) if(par_)";

/// The least work (points times the longest fold's steps) worth starting threads for: a
/// parallel region costs microseconds, which a small elementwise kernel does not amortize.
const PARALLEL_MIN: i64 = 1 << 15;

/// A kernel's work estimate: its points times the steps of its longest fold or scan.
fn work(k: &Kernel) -> i64 {
    fn longest(p: crate::sym::Part, best: &mut i64) {
        if let crate::sym::Part::Expr(e) = p {
            if let SExpr::Reduce { vars, .. } = &**e {
                *best = (*best).max(vars.iter().map(|(_, i)| i.len() as i64).product());
            }
            crate::sym::for_each_part(e, &mut |q| longest(q, best));
        }
    }
    let mut steps = k.scan().map_or(1, |sc| sc.dim.interval.len() as i64);
    for e in k.exprs() {
        longest(crate::sym::Part::Expr(e), &mut steps);
    }
    let points: i64 = k.domain.iter().map(|l| l.interval.len() as i64).product();
    points.saturating_mul(steps.max(1))
}

/// Opens one loop per level of `domain` (the outermost shared among threads, each thread with
/// its own error pointer), indenting `indent`; a level that visits stored coordinates
/// (`Kernel::sets`) loops over their positions. Returns the number of braces to close.
fn open_domain_loops(out: &mut String, em: &Emitter, domain: &[strata_ir::Level], indent: &mut String) -> usize {
    open_loops(out, em, domain, indent, Some(PARALLEL_FOR))
}

/// [`open_domain_loops`], the outermost loop shared among threads by `pragma`, if any.
fn open_loops(
    out: &mut String,
    em: &Emitter,
    domain: &[strata_ir::Level],
    indent: &mut String,
    pragma: Option<&str>,
) -> usize {
    let mut braces = 0;
    for (depth, l) in domain.iter().enumerate() {
        let d = var(l.name.as_str());
        if let Some(c) = em.set_of(&l.name) {
            // The positions' bounds first: OpenMP wants a plain counted loop.
            let _ = writeln!(out, "{indent}{{  /* {} in {} */", l.name, c.set);
            indent.push_str("  ");
            let Some(SetBounds { v, parent, first, last, coordinate, range }) = em.set_bounds(c) else {
                // A union: a sequential merge of the members' positions.
                let _ = writeln!(out, "{indent}{} {{", em.union_loop(c));
                indent.push_str("  ");
                if depth == 0 {
                    let _ = writeln!(out, "{indent}int *err = &e_;");
                }
                braces += 2;
                continue;
            };
            let _ = writeln!(out, "{indent}const int64_t pp_{v} = {parent};");
            let _ = writeln!(
                out,
                "{indent}const int64_t q0_{v} = pp_{v} < 0 ? 0 : {first}, qe_{v} = pp_{v} < 0 ? 0 : {last};"
            );
            if let (0, Some(pragma)) = (depth, pragma) {
                let _ = writeln!(out, "{indent}{pragma}");
            }
            let _ = writeln!(out, "{indent}for (int64_t q_{v} = q0_{v}; q_{v} < qe_{v}; ++q_{v}) {{");
            indent.push_str("  ");
            if depth == 0 {
                let _ = writeln!(out, "{indent}int *err = &e_;");
            }
            let _ = writeln!(out, "{indent}const int64_t {v} = {coordinate};");
            if let Some((lo, hi)) = range {
                let _ = writeln!(out, "{indent}if ({v} < {lo} || {v} >= {hi}) continue;");
            }
            braces += 2;
            continue;
        }
        if let (0, Some(pragma)) = (depth, pragma) {
            let _ = writeln!(out, "{indent}{pragma}");
        }
        let _ = writeln!(
            out,
            "{indent}for (int64_t {d} = {}; {d} < {}; ++{d}) {{  /* {}{} */",
            l.interval.start, l.interval.stop, l.name, l.interval
        );
        indent.push_str("  ");
        if depth == 0 {
            let _ = writeln!(out, "{indent}int *err = &e_;");
        }
        braces += 1;
    }
    braces
}

/// Opens the loop over strips `[jb, je)` of level `inner` (shared among threads when it is
/// the outermost loop); returns the level's C variable, which the caller loops over inside.
fn open_strip(out: &mut String, inner: &strata_ir::Level, outermost: bool, indent: &mut String) -> String {
    let (start, stop) = (inner.interval.start, inner.interval.stop);
    if outermost {
        let _ = writeln!(out, "{indent}{PARALLEL_FOR}");
    }
    let _ = writeln!(
        out,
        "{indent}for (int64_t jb = {start}; jb < {stop}; jb += {STRIP}) {{  /* strips of {}{} */",
        inner.name, inner.interval
    );
    indent.push_str("  ");
    if outermost {
        let _ = writeln!(out, "{indent}int *err = &e_;");
    }
    let _ = writeln!(out, "{indent}const int64_t je = jb + {STRIP} < {stop} ? jb + {STRIP} : {stop};");
    var(inner.name.as_str())
}

/// Folds shorter than this run per point rather than in strips.
const SHORT_FOLD: i64 = 16;

/// Strip length of the innermost loop in contraction kernels (accumulator rows on the stack).
pub const STRIP: i64 = 256;

/// Replaces the reductions `e` always evaluates (not under a select branch, a short-circuit
/// operator or another reduction) for which `pick` holds by their accumulators, collecting
/// them (once per id). Each collected reduction is preceded by the reductions hoisted out of
/// its own body: those that do not depend on its loop variables nor its accumulator (loop
/// invariants, e.g. a row mean inside a variance), evaluated once instead of once per step.
fn hoist_reductions(e: &Rc<SExpr>, out: &mut Vec<Rc<SExpr>>, pick: &dyn Fn(&Rc<SExpr>) -> bool) -> Rc<SExpr> {
    let mut go = |x: &Rc<SExpr>| hoist_reductions(x, out, pick);
    match &**e {
        SExpr::Reduce { id, vars, init, scalar, body } if pick(e) => {
            if !out.iter().any(|r| matches!(&**r, SExpr::Reduce { id: other, .. } if other == id)) {
                let body = hoist_reductions(body, out, &|r| invariant(r, vars, *id));
                let (vars, init) = (vars.clone(), init.clone());
                out.push(Rc::new(SExpr::Reduce { id: *id, vars, init, scalar: *scalar, body }));
            }
            Rc::new(SExpr::Acc(*id))
        }
        SExpr::Unary(op, a, s) => Rc::new(SExpr::Unary(*op, go(a), *s)),
        SExpr::Cast(a, from, to) => Rc::new(SExpr::Cast(go(a), *from, *to)),
        SExpr::Binary(op, a, b, s) if !matches!(op, BinaryOp::And | BinaryOp::Or) => {
            let a = go(a);
            Rc::new(SExpr::Binary(*op, a, go(b), *s))
        }
        SExpr::Select(c, t, f) => Rc::new(SExpr::Select(go(c), t.clone(), f.clone())),
        _ => e.clone(),
    }
}

/// The shortest fold whose floating-point sum may be reassociated.
pub const REASSOCIATE_MIN: i64 = 64;

/// Whether fold `r` may sum in any order: a floating-point `acc + x` (`x` free of the
/// accumulator, so the fold is a plain sum) whose innermost loop runs at least
/// [`REASSOCIATE_MIN`] times. The C compiler then keeps partial sums in vector lanes; the result
/// equals the interpreter's sequential sum up to rounding (as numpy's pairwise sums or a BLAS
/// would), not bit for bit. Every other fold keeps the sequential order exactly.
fn reassociable(r: &SExpr) -> bool {
    let SExpr::Reduce { id, vars, scalar, body, .. } = r else { return false };
    let Some((_, inner)) = vars.last() else { return false };
    let Some((_, s)) = sum_term(body, *id) else { return false };
    scalar.is_float() && s == *scalar && inner.len() as i64 >= REASSOCIATE_MIN
}

/// The term `x` of a fold body `acc + x` or `x + acc` over accumulator `id`, `x` free of the
/// accumulator (the fold is a plain sum), and the addition's type.
fn sum_term(body: &Rc<SExpr>, id: u32) -> Option<(&Rc<SExpr>, Scalar)> {
    let SExpr::Binary(BinaryOp::Plus, a, b, s) = &**body else { return None };
    let term = match (&**a, &**b) {
        (SExpr::Acc(x), _) if *x == id => b,
        (_, SExpr::Acc(x)) if *x == id => a,
        _ => return None,
    };
    (!crate::sym::reads_acc(term, id)).then_some((term, *s))
}

/// Whether the generated code computes exactly what the interpreter does, bit for bit. Not so
/// when it sums in another order (a runtime GEMM, a reassociable fold) or calls vector math
/// (transcendental functions, within 4 ulp): floating-point results then agree
/// up to rounding.
pub fn bit_exact(program: &KernelProgram) -> bool {
    fn any(p: crate::sym::Part, found: &mut bool) {
        if let crate::sym::Part::Expr(e) = p {
            *found |= reassociable(e)
                || matches!(
                    &**e,
                    SExpr::Unary(op, ..) if vector_math(*op)
                )
                || matches!(
                    &**e,
                    SExpr::Binary(BinaryOp::Atan2 | BinaryOp::Hypot | BinaryOp::LogAddExp | BinaryOp::Power, _, _, s) if s.is_float()
                );
            crate::sym::for_each_part(e, &mut |q| any(q, found));
        }
    }
    let mut found = program.kernels.iter().any(|k| k.matmul().is_some());
    for e in program.kernels.iter().flat_map(Kernel::exprs) {
        any(crate::sym::Part::Expr(e), &mut found);
    }
    !found
}

/// Whether the op calls a math library routine whose vector variant (libmvec) may round
/// differently from the scalar one the interpreter calls.
fn vector_math(op: UnaryOp) -> bool {
    !matches!(
        op,
        UnaryOp::Not
            | UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sqrt
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc
            | UnaryOp::Sign
            | UnaryOp::IsNan
            | UnaryOp::IsInf
            | UnaryOp::IsFinite
            | UnaryOp::SignBit
            | UnaryOp::BitNot
    )
}

/// Whether every load of fold `r`'s body that depends on its innermost variable has that
/// variable as its last (contiguous) coordinate, and some load does.
fn contiguous_fold(r: &Rc<SExpr>) -> bool {
    let SExpr::Reduce { vars, body, .. } = &**r else { return false };
    vars.last().is_some_and(|(v, _)| matches!(loads_along(body, v), (true, true)))
}

/// Whether reduction `r` can be evaluated outside fold `id` over `vars`.
fn invariant(r: &Rc<SExpr>, vars: &[(strata_ir::DimName, strata_ir::Interval)], id: u32) -> bool {
    !crate::sym::free_vars(r).iter().any(|v| vars.iter().any(|(d, _)| d == v)) && !crate::sym::reads_acc(r, id)
}

/// The C translation unit for `program`, exporting `strata_entry`.
pub fn emit(program: &KernelProgram) -> String {
    emit_many(&[("strata_entry", program)])
}

/// One translation unit holding several programs, each exported under its own symbol (used to
/// compile many programs with one compiler run).
pub fn emit_many(programs: &[(&str, &KernelProgram)]) -> String {
    let mut out = String::new();
    let names: Vec<String> = programs.iter().map(|(_, p)| format!("`@{}`", p.entry)).collect();
    let _ = writeln!(out, "/* Generated by Strata from {}. */", names.join(", "));
    out.push_str(PRELUDE);
    for (symbol, program) in programs {
        emit_program(&mut out, symbol, program);
    }
    out
}

fn emit_program(out: &mut String, symbol: &str, program: &KernelProgram) {
    let _ = writeln!(out, "\n/* `@{}` -> {symbol}. Buffers (row-major over their intervals):", program.entry);
    for (i, b) in program.buffers.iter().enumerate() {
        let dims: Vec<String> = b.levels.iter().map(|l| format!("{}{}", l.name, l.interval)).collect();
        let _ = writeln!(
            out,
            "   b{i}: %{} {} [{}]{}",
            b.name,
            c_type(b.scalar),
            dims.join(", "),
            if b.written { " (written)" } else { "" }
        );
    }
    out.push_str("*/\n");
    for (ki, k) in program.kernels.iter().enumerate() {
        let em = Emitter {
            program,
            local: None,
            sets: &k.sets,
            windows: k.windows(),
            entries: Vec::new(),
            next_entry: Rc::default(),
        };
        let _ = writeln!(out, "\n/* kernel {ki}: {} */", k.comment);
        let _ = writeln!(out, "static int {symbol}_kernel{ki}(void **buf, const strata_rt *rt, int threads) {{");
        // Threads share the outermost loop; each has its own error flag, combined at the end.
        let parallel = !k.domain.is_empty();
        if parallel {
            let _ = writeln!(out, "  int e_ = 0;");
        } else {
            let _ = writeln!(out, "  int e_ = 0; int *err = &e_;");
        }
        let _ = writeln!(
            out,
            "  const int par_ = {}; (void)par_;  /* enough work for threads */",
            (work(k) >= PARALLEL_MIN) as i32
        );
        for (i, b) in program.buffers.iter().enumerate() {
            let c = if b.written { "" } else { "const " };
            let _ = writeln!(
                out,
                "  {c}{} *restrict {} = ({c}{} *)buf[{i}];",
                c_type(b.scalar),
                em.name(i),
                c_type(b.scalar)
            );
        }
        match &k.kind {
            KernelKind::Scatter(sc) => emit_scatter(out, &em, k, sc),
            KernelKind::Gemm(mm) => emit_matmul(out, &em, k, mm),
            KernelKind::Scan(sk) => emit_scan(out, &em, k, &sk.scan),
            KernelKind::Nest(n) => emit_nest(out, &em, k, n),
        }
        let _ = writeln!(out, "  return e_;\n}}");
    }
    let _ = writeln!(
        out,
        "\nint {symbol}(void **buf, int threads, const strata_rt *rt) {{\n  int e;\n  strata_bad[4] = 0;\n  if (threads > 0) omp_set_num_threads(threads);"
    );
    for ki in 0..program.kernels.len() {
        let _ = writeln!(out, "  if ((e = {symbol}_kernel{ki}(buf, rt, threads))) return e;");
    }
    let _ = writeln!(out, "  return 0;\n}}");
}

/// The loop nest of a [`KernelKind::Nest`] kernel: a sparse result's two passes, a windowed
/// nest, a nest over stored coordinates, a contraction's strips, or plain loops.
fn emit_nest(out: &mut String, em: &Emitter, k: &Kernel, n: &crate::kernel::Nest) {
    if let Some(c) = &n.compressed {
        return emit_compressed(out, em, k, c);
    }
    if !n.windows.is_empty() {
        return window::emit_windowed(out, em, k);
    }
    // Loops over stored coordinates: plain loop nests, folds evaluated per point (strips
    // and shared fold loops would hoist a set's loop out of the loops its parent
    // position depends on).
    if !k.sets.is_empty() {
        return emit_loops(out, em, k);
    }
    // Contraction kernels: the innermost dimension is strip-mined and each always-evaluated
    // reduction keeps a row of accumulators, so the reduction loops run outside the
    // innermost loop, which vectorizes; every point still folds in the same order.
    let mut hoisted = Vec::new();
    let hoisted_stores: Vec<Rc<SExpr>> =
        if !k.domain.is_empty() && k.stores.iter().all(|st| em.present(&st.value) == "1") {
            k.stores.iter().map(|st| hoist_reductions(&st.value, &mut hoisted, &|_| true)).collect()
        } else {
            Vec::new()
        };
    // Sums along rows that are contiguous in memory run per point as vector reductions
    // instead (strips would read them with a stride).
    // Short folds (neighbor reductions) also stay per point: their few steps read one
    // table row, which strips would read with a stride.
    let long = |r: &Rc<SExpr>| matches!(&**r, SExpr::Reduce { vars, .. } if vars.iter().map(|(_, i)| i.len() as i64).product::<i64>() >= SHORT_FOLD);
    if !hoisted.is_empty() && hoisted.iter().any(long) && !hoisted.iter().all(|r| reassociable(r) && contiguous_fold(r))
    {
        return emit_contraction(out, em, k, &hoisted, &hoisted_stores);
    }
    emit_loops(out, em, k);
}

/// A plain loop nest: one loop per domain level (the outermost shared among threads), the
/// stores at each point.
fn emit_loops(out: &mut String, em: &Emitter, k: &Kernel) {
    let mut indent = String::from("  ");
    let braces = open_domain_loops(out, em, &k.domain, &mut indent);
    // Folds over the same loop variables (the x and y sums of the nabla over one neighbor
    // table) share one loop: their table reads and checks happen once per step.
    let mut folds = Vec::new();
    let hoisted: Vec<Store> = k
        .stores
        .iter()
        .map(|st| Store { buffer: st.buffer, value: hoist_reductions(&st.value, &mut folds, &|_| true) })
        .collect();
    let shared = folds.windows(2).any(|w| fold_vars(&w[0]) == fold_vars(&w[1]));
    if shared && k.sets.is_empty() && k.stores.iter().all(|st| em.present(&st.value) == "1") {
        emit_sibling_folds(out, em, &folds, &indent);
        emit_stores(out, em, &hoisted, &indent);
    } else {
        emit_stores(out, em, &k.stores, &indent);
    }
    close_loops(out, &mut indent, braces);
}

/// The loop variables of fold `r`.
fn fold_vars(r: &SExpr) -> Option<&[(strata_ir::DimName, strata_ir::Interval)]> {
    match r {
        SExpr::Reduce { vars, .. } => Some(vars),
        _ => None,
    }
}

/// Hoisted folds (in dependency order) as accumulator registers at the current point; runs of
/// consecutive folds over the same variables that do not read each other share one loop, each
/// stepping in its own order (results unchanged).
fn emit_sibling_folds(out: &mut String, em: &Emitter, folds: &[Rc<SExpr>], indent: &str) {
    let mut groups: Vec<Vec<&Rc<SExpr>>> = Vec::new();
    for f in folds {
        let joins = groups.last().is_some_and(|g| {
            fold_vars(g[0]) == fold_vars(f)
                && !g.iter().any(|h| matches!(&***h, SExpr::Reduce { id, .. } if crate::sym::reads_acc(f, *id)))
        });
        match groups.last_mut() {
            Some(g) if joins => g.push(f),
            _ => groups.push(vec![f]),
        }
    }
    for g in groups {
        if let [one] = g[..] {
            let SExpr::Reduce { id, scalar, .. } = &**one else { unreachable!("hoisted folds") };
            let _ = writeln!(out, "{indent}{} acc{id} = {};", c_type(*scalar), em.value(one));
            continue;
        }
        let mut steps = Vec::new();
        let mut sums = Vec::new();
        let bodies: Vec<&Rc<SExpr>> =
            g.iter().filter_map(|f| if let SExpr::Reduce { body, .. } = &***f { Some(body) } else { None }).collect();
        let (decls, step_em) = em.bind_tables(&bodies);
        steps.push(decls);
        for f in &g {
            let SExpr::Reduce { id, init, scalar, body, .. } = &***f else { unreachable!("hoisted folds") };
            let _ = writeln!(out, "{indent}{} acc{id} = {};", c_type(*scalar), em.value(init));
            steps.push(step_em.fold_step(*id, body));
            sums.push(format!("acc{id}"));
        }
        let simd = if g.iter().all(|f| reassociable(f)) { sums } else { Vec::new() };
        let loops = em.fold_loops(fold_vars(g[0]).expect("a fold"), &simd);
        let _ = writeln!(out, "{indent}{loops}{{ {} }}", steps.join(" "));
    }
}

/// One store per point: `target = value`, or zero where the value is absent.
fn emit_stores(out: &mut String, em: &Emitter, stores: &[Store], indent: &str) {
    let values: Vec<&Rc<SExpr>> = stores.iter().map(|s| &s.value).collect();
    let (decls, em) = em.bind_tables(&values);
    if !decls.is_empty() {
        let _ = writeln!(out, "{indent}{}", decls.trim_end());
    }
    for s in stores {
        let b = &em.program.buffers[s.buffer];
        let coords = crate::sym::level_vars(&b.levels);
        let target = em.load(&Load { buffer: s.buffer, coords });
        let p = em.present(&s.value);
        let v = em.value(&s.value);
        if p == "1" {
            let _ = writeln!(out, "{indent}{target} = {v};");
        } else {
            let _ = writeln!(out, "{indent}{target} = {p} ? {v} : ({})0;", c_type(b.scalar));
        }
    }
}

/// A kernel writing a sparse result as storage ([`CompressedOut`]), in two passes over the
/// rows, which threads share in static blocks (so each thread's rows are consecutive, in
/// thread order). The first bounds each row's entries — the iterations of its loop over stored
/// coordinates (a Gustavson row: the stored entries of the `B` rows it visits), or, for a
/// loop over the whole interval, the exact count of non-zero values. The run allocates the
/// coordinates and values for the bound's total (`rt->alloc`; pages never written cost no
/// memory), and the second pass computes the values once, each thread writing its rows' non-zeros
/// one after the other from its first row's bounded start and counting them into the
/// positions. A prefix sum makes the counts row starts, and each thread's entries move down to
/// theirs (nothing moves when the bound was exact). Within a row the innermost loop runs in
/// order, so coordinates are sorted; a Gustavson row puts the columns it touched in order.
fn emit_compressed(out: &mut String, em: &Emitter, k: &Kernel, c: &CompressedOut) {
    let Some((inner, outer)) = k.domain.split_last() else { unreachable!("a compressed result has a level") };
    let [store] = &k.stores[..] else { unreachable!("one store: the values") };
    let (pos, crd, val) = (em.name(c.positions), em.name(c.coordinates), em.name(store.buffer));
    let t = c_type(em.program.buffers[store.buffer].scalar);
    // The row: the outer coordinates, row-major.
    let row = row_major(outer, |_, l| var(l.name.as_str()));
    let rows: u64 = outer.iter().map(|l| l.interval.len()).product();
    let j = var(inner.name.as_str());
    let start = inner.interval.start;
    let width = inner.interval.len();
    // The workspace's bitmaps: one bit per column, one bit per word of those.
    let words1 = width.div_ceil(64);
    let words0 = words1.div_ceil(64);
    let ws = c.workspace.as_ref().map(|w| {
        let SExpr::Reduce { id, vars, init, scalar, body } = &*w.fold else { unreachable!("a workspace runs a fold") };
        (w, *id, vars, init, c_type(*scalar), body)
    });
    // A merge (union) visits rows sequentially: no loop to share, so one thread runs it.
    let shared = outer.first().is_some_and(|l| !em.set_of(&l.name).is_some_and(|c| c.is_union()));
    let pragma = shared.then_some("#pragma omp for schedule(static)");
    let mut indent = String::from("  ");
    let _ = writeln!(out, "{indent}{{");
    indent.push_str("  ");
    let _ = writeln!(out, "{indent}const int nt_ = (par_ && {}) ? omp_get_max_threads() : 1;", shared as i32);
    let _ = writeln!(out, "{indent}int64_t tn_[nt_], ts_[nt_], at_[nt_ + 1];");
    let _ = writeln!(out, "{indent}for (int i_ = 0; i_ < nt_; ++i_) {{ tn_[i_] = 0; ts_[i_] = 0; }}");
    let _ = writeln!(out, "{indent}int64_t *st_ = calloc({rows} + 1, sizeof(int64_t));  /* bounded row starts */");
    let _ = writeln!(out, "{indent}if (!st_) return 5;");
    let _ = writeln!(out, "{indent}st_[0] = 0;");
    for phase in 0..2 {
        let _ = writeln!(
            out,
            "{indent}/* {} */",
            if phase == 0 { "bound each row's entries" } else { "write each row's non-zeros" }
        );
        let _ = writeln!(out, "{indent}#pragma omp parallel num_threads(nt_) reduction(max:e_)");
        let _ = writeln!(out, "{indent}{{");
        indent.push_str("  ");
        if phase == 1 {
            let _ = writeln!(out, "{indent}const int t_ = omp_get_thread_num();");
            let _ = writeln!(out, "{indent}int64_t n_ = -1, s_ = 0;");
            if let Some((_, _, _, _, wt, _)) = &ws {
                let _ = writeln!(
                    out,
                    "{indent}/* the row's workspace (Gustavson): accumulators, the touched columns, and a bitmap of them with a bitmap of its non-zero words */"
                );
                // One more element each: `malloc(0)` may return NULL.
                let _ = writeln!(out, "{indent}{wt} *w_ = malloc(({width} + 1) * sizeof({wt}));");
                let _ = writeln!(out, "{indent}int64_t *ls_ = malloc(({width} + 1) * sizeof(int64_t));");
                let _ = writeln!(
                    out,
                    "{indent}uint64_t *bm1_ = calloc({words1} + 1, sizeof(uint64_t)), *bm0_ = calloc({words0} + 1, sizeof(uint64_t));"
                );
                let _ = writeln!(out, "{indent}if (!w_ || !ls_ || !bm1_ || !bm0_) e_ = 5;");
            }
        }
        let braces = open_loops(out, em, outer, &mut indent, pragma);
        let _ = writeln!(out, "{indent}if (e_ != 5) {{");
        indent.push_str("  ");
        let _ = writeln!(out, "{indent}const int64_t r_ = {row};");
        if phase == 0 {
            let _ = writeln!(out, "{indent}int64_t n_ = 0;");
        } else {
            let _ = writeln!(out, "{indent}if (n_ < 0) {{ n_ = s_ = ts_[t_] = st_[r_]; }}");
            let _ = writeln!(out, "{indent}const int64_t n0_ = n_;");
        }
        let append = format!("if (v_ != 0) {{ {crd}[n_] = {j} - ({start}); {val}[n_] = v_; ++n_; }}");
        match (&ws, phase) {
            (None, _) => {
                let bound = em.set_of(&inner.name).and_then(|c| em.set_bound(&c.set));
                match (bound, phase) {
                    // The bound from the positions alone.
                    (Some(bound), 0) => {
                        let _ = writeln!(out, "{indent}n_ = {bound};");
                    }
                    _ => {
                        let (p, v) = (em.present(&store.value), em.value(&store.value));
                        let action = if phase == 0 { "n_ += v_ != 0;" } else { &append };
                        let inner_braces = open_loops(out, em, std::slice::from_ref(inner), &mut indent, None);
                        let _ = writeln!(out, "{indent}if ({p}) {{ const {t} v_ = {v}; {action} }}");
                        close_loops(out, &mut indent, inner_braces);
                    }
                }
            }
            // The bound: the lengths of the `B` rows the fold visits.
            (Some((_, _, vars, ..)), 0) => {
                let bound = em.set_of(&inner.name).and_then(|cj| em.set_bound(&cj.set));
                let Some(bound) = bound else { unreachable!("the workspace pass adds a compressed column loop") };
                let _ = writeln!(out, "{indent}{}n_ += {bound};", em.fold_loops(vars, &[]));
                let _ = writeln!(out, "{indent}if (n_ > {width}) n_ = {width};");
            }
            (Some((w, id, vars, init, wt, body)), _) => {
                let Some(cj) = em.set_of(&inner.name) else { unreachable!("the workspace pass adds the column loop") };
                let _ = writeln!(out, "{indent}int64_t nl_ = 0;");
                let _ = writeln!(out, "{indent}{}{}{{", em.fold_loops(vars, &[]), em.set_loop(cj));
                let _ = writeln!(out, "{indent}  const int64_t t_ = {j} - ({start});");
                let _ = writeln!(
                    out,
                    "{indent}  uint64_t *wd_ = &bm1_[t_ >> 6]; const uint64_t bit_ = UINT64_C(1) << (t_ & 63);"
                );
                let _ = writeln!(
                    out,
                    "{indent}  if (!(*wd_ & bit_)) {{ *wd_ |= bit_; bm0_[t_ >> 12] |= UINT64_C(1) << ((t_ >> 6) & 63); ls_[nl_++] = t_; w_[t_] = {}; }}",
                    em.value(init)
                );
                let _ = writeln!(out, "{indent}  {wt} acc{id} = w_[t_]; {} w_[t_] = acc{id};", em.fold_step(*id, body));
                let _ = writeln!(out, "{indent}}}");
                let _ = writeln!(
                    out,
                    "{indent}/* the touched columns in order (the bitmaps cleared): a few sorted, more read off the bitmaps */"
                );
                let _ = writeln!(
                    out,
                    "{indent}if (nl_ <= 32) {{ strata_sort_i64(ls_, nl_); for (int64_t l_ = 0; l_ < nl_; ++l_) {{ bm1_[ls_[l_] >> 6] = 0; bm0_[ls_[l_] >> 12] = 0; }} }}"
                );
                let _ = writeln!(
                    out,
                    "{indent}else {{ nl_ = 0; for (int64_t u_ = 0; u_ < {words0}; ++u_) {{ uint64_t x_ = bm0_[u_]; bm0_[u_] = 0; \
                     while (x_) {{ const int64_t wi_ = u_ * 64 + __builtin_ctzll(x_); x_ &= x_ - 1; uint64_t y_ = bm1_[wi_]; bm1_[wi_] = 0; \
                     while (y_) {{ ls_[nl_++] = wi_ * 64 + __builtin_ctzll(y_); y_ &= y_ - 1; }} }} }} }}"
                );
                let (p, v) = (em.present(&w.value), em.value(&w.value));
                let _ = writeln!(out, "{indent}for (int64_t l_ = 0; l_ < nl_; ++l_) {{");
                let _ = writeln!(
                    out,
                    "{indent}  const int64_t {j} = ls_[l_] + ({start}); const {wt} acc{id} = w_[ls_[l_]]; (void){j}; (void)acc{id};"
                );
                let _ = writeln!(out, "{indent}  if ({p}) {{ const {t} v_ = {v}; {append} }}");
                let _ = writeln!(out, "{indent}}}");
            }
        }
        if phase == 0 {
            let _ = writeln!(out, "{indent}st_[r_ + 1] = n_;");
        } else {
            let _ = writeln!(out, "{indent}{pos}[r_ + 1] = n_ - n0_;");
        }
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
        close_loops(out, &mut indent, braces);
        if phase == 1 {
            let _ = writeln!(out, "{indent}tn_[t_] = n_ < 0 ? 0 : n_ - s_;");
            if ws.is_some() {
                let _ = writeln!(out, "{indent}free(w_); free(ls_); free(bm1_); free(bm0_);");
            }
        }
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
        if phase == 0 {
            let _ = writeln!(out, "{indent}/* bounded row starts; allocate for their total */");
            let _ = writeln!(out, "{indent}for (int64_t r_ = 0; r_ < {rows}; ++r_) st_[r_ + 1] += st_[r_];");
            let _ = writeln!(out, "{indent}if (e_ != 5) {{");
            for b in [c.coordinates, store.buffer] {
                let bt = c_type(em.program.buffers[b].scalar);
                let _ = writeln!(out, "{indent}  {} = ({bt} *)(buf[{b}] = rt->alloc({b}, st_[{rows}]));", em.name(b));
                let _ = writeln!(out, "{indent}  if (!{}) e_ = 5;", em.name(b));
            }
            let _ = writeln!(out, "{indent}}}");
            let _ = writeln!(out, "{indent}if (e_ == 5) {{ free(st_); return 5; }}");
        }
    }
    let _ = writeln!(out, "{indent}/* row starts; each thread's entries move down to theirs */");
    let _ = writeln!(out, "{indent}{pos}[0] = 0;");
    let _ = writeln!(out, "{indent}for (int64_t r_ = 0; r_ < {rows}; ++r_) {pos}[r_ + 1] += {pos}[r_];");
    let _ = writeln!(out, "{indent}at_[0] = 0;");
    let _ = writeln!(out, "{indent}for (int i_ = 0; i_ < nt_; ++i_) {{");
    let _ = writeln!(out, "{indent}  at_[i_ + 1] = at_[i_] + tn_[i_];");
    let _ = writeln!(out, "{indent}  if (tn_[i_] > 0 && ts_[i_] != at_[i_]) {{");
    let ct = c_type(em.program.buffers[c.coordinates].scalar);
    let _ = writeln!(out, "{indent}    memmove({crd} + at_[i_], {crd} + ts_[i_], tn_[i_] * sizeof({ct}));");
    let _ = writeln!(out, "{indent}    memmove({val} + at_[i_], {val} + ts_[i_], tn_[i_] * sizeof({t}));");
    let _ = writeln!(out, "{indent}  }}");
    let _ = writeln!(out, "{indent}}}");
    let _ = writeln!(out, "{indent}free(st_);");
    let _ = writeln!(out, "{indent}if (e_ == 5) return 5;");
    indent.truncate(indent.len() - 2);
    let _ = writeln!(out, "{indent}}}");
}

/// A kernel storing at data-dependent positions ([`Scatter`]). A compaction runs a
/// sequential loop over its dimension per domain point (over the stored coordinates where the
/// lowering found a set), counting the listed entries and marking the rest of the run absent;
/// an addition at coordinates checks each coordinate against its interval (error 4) and that
/// coordinates and values exist together (error 6). Threads share the outermost loop only
/// where distinct points write distinct rows.
fn emit_scatter(out: &mut String, em: &Emitter, k: &Kernel, sc: &Scatter) {
    let mut indent = String::from("  ");
    match sc {
        Scatter::Compact { dim, value, element, coordinates, buffer, presence } => {
            let row = row_major(&k.domain, |_, l| var(l.name.as_str()));
            let run = dim.interval.len();
            let (buf, pres) = (em.name(*buffer), em.name(*presence));
            let t = c_type(em.program.buffers[*buffer].scalar);
            let braces = open_domain_loops(out, em, &k.domain, &mut indent);
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}  const int64_t b_ = ({row}) * {run};");
            let _ = writeln!(out, "{indent}  int64_t n_ = 0;");
            let d = var(dim.name.as_str());
            let header = match em.set_of(&dim.name) {
                Some(c) => em.set_loop(c),
                None => format!("for (int64_t {d} = {}; {d} < {}; ++{d}) ", dim.interval.start, dim.interval.stop),
            };
            let (p, v) = (em.present(value), em.value(value));
            let listed = if *coordinates { format!("({t}){d}") } else { "v_".to_string() };
            let _ = writeln!(
                out,
                "{indent}  {header}{{ if ({p}) {{ const {} v_ = {v}; if (v_ != 0) {{ {buf}[b_ + n_] = {listed}; {pres}[b_ + n_] = 0; ++n_; }} }} }}",
                c_type(*element)
            );
            let _ = writeln!(out, "{indent}  for (; n_ < {run}; ++n_) {{ {buf}[b_ + n_] = 0; {pres}[b_ + n_] = -1; }}");
            let _ = writeln!(out, "{indent}}}");
            close_loops(out, &mut indent, braces);
        }
        Scatter::AddAt { coordinate, value, buffer, target } => {
            let levels = &em.program.buffers[*buffer].levels;
            let shared = k.domain.first().is_some_and(|l| levels.iter().any(|b| b.name == l.name));
            let braces = open_loops(out, em, &k.domain, &mut indent, shared.then_some(PARALLEL_FOR));
            let at = row_major(levels, |i, l| if i == *target { "x_".to_string() } else { var(l.name.as_str()) });
            let span = levels[*target].interval;
            let (pc, c) = (em.present(coordinate), em.value(coordinate));
            let (pv, v) = (em.present(value), em.value(value));
            let buf = em.name(*buffer);
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}  const int pc_ = {pc}, pv_ = {pv};");
            let _ = writeln!(
                out,
                "{indent}  if (pc_ && pv_) {{ const int64_t x_ = (int64_t)({c}); if (x_ < {} || x_ >= {}) *err = 4; else {buf}[{at}] += {v}; }}",
                span.start, span.stop
            );
            let _ = writeln!(out, "{indent}  else if (pc_ != pv_) *err = 6;");
            let _ = writeln!(out, "{indent}}}");
            close_loops(out, &mut indent, braces);
        }
    }
}

/// The row-major offset (a C expression) of the point whose coordinate along `levels[i]` is
/// the C expression `coordinate(i, level)`.
fn row_major(levels: &[strata_ir::Level], coordinate: impl Fn(usize, &strata_ir::Level) -> String) -> String {
    levels.iter().enumerate().fold(String::from("0"), |at, (i, l)| {
        format!("({at}) * {} + ({} - ({}))", l.interval.len(), coordinate(i, l), l.interval.start)
    })
}

/// Closes `n` loops opened at `indent`.
fn close_loops(out: &mut String, indent: &mut String, n: usize) {
    for _ in 0..n {
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
    }
}

/// A scan kernel, with its chained stages (`ScanKernel::chain`). Unless the scanned dimension is
/// the contiguous one of its reads, the innermost domain level is strip-mined and each strip
/// keeps a row of state registers, so each sequential loop runs outside a loop over
/// independent columns that vectorizes (every column still updates in order: results are
/// unchanged). Strip-local buffers (`ScanKernel::local`) live in scratch arrays per strip. A fold
/// with a tuple accumulator (`last_only`) stores its final state after the sequential loop.
fn emit_scan(out: &mut String, em: &Emitter, k: &Kernel, sc: &ScanLoop) {
    let stages: Vec<(&ScanLoop, &[Store])> =
        std::iter::once((sc, &k.stores[..])).chain(k.chain().iter().map(|st| (&st.scan, &st.stores[..]))).collect();
    let along = stages.iter().all(|(s, _)| s.updates.iter().all(|u| contiguous_along(u, &s.dim.name)));
    let mut indent = String::from("  ");
    let (inner, outer) = match k.domain.split_last() {
        Some((i, o)) if !along => (Some(i), o),
        _ => (None, &k.domain[..]),
    };
    open_domain_loops(out, em, outer, &mut indent);
    let mut open = outer.len();
    let column = inner.map(|inner| {
        open += 1;
        open_strip(out, inner, outer.is_empty(), &mut indent)
    });
    let local_em;
    let em = if k.local().is_empty() {
        em
    } else {
        let width = if column.is_some() { STRIP } else { 1 };
        for &b in k.local() {
            let t = c_type(em.program.buffers[b].scalar);
            let _ = writeln!(
                out,
                "{indent}{t} loc{b}[{}];  /* %{} for this strip, in cache */",
                sc.dim.interval.len() as i64 * width,
                em.program.buffers[b].name
            );
        }
        let scan = (var(sc.dim.name.as_str()), sc.dim.interval.start);
        local_em = Emitter {
            program: em.program,
            local: Some(Local { buffers: k.local().to_vec(), scan, column: column.clone() }),
            sets: em.sets,
            windows: em.windows,
            entries: em.entries.clone(),
            next_entry: em.next_entry.clone(),
        };
        &local_em
    };
    for (sc, stores) in stages {
        emit_scan_stage(out, em, sc, stores, column.as_deref(), &mut indent);
    }
    close_loops(out, &mut indent, open);
}

/// One sequential loop of a scan kernel, inside the domain loops (and the strip loop over
/// `column`, when strip-mined).
fn emit_scan_stage(
    out: &mut String,
    em: &Emitter,
    sc: &ScanLoop,
    stores: &[Store],
    column: Option<&str>,
    indent: &mut String,
) {
    // A step whose update is absent (a skipped neighbor, a position past a ragged run) is
    // skipped, keeping the state, as the interpreter's folds and scans do.
    let guard: Vec<String> = sc.updates.iter().map(|u| em.present(u)).filter(|p| p != "1").collect();
    // Inside a strip, each column reads its state from the row and writes it back.
    let strip = column.map(|j| {
        for (id, t, init) in &sc.states {
            let _ = writeln!(out, "{indent}{} st{id}[{STRIP}];  /* scan state per column */", c_type(*t));
            let _ =
                writeln!(out, "{indent}for (int64_t {j} = jb; {j} < je; ++{j}) st{id}[{j} - jb] = {};", em.value(init));
        }
        let load: Vec<String> =
            sc.states.iter().map(|(id, t, _)| format!("{} acc{id} = st{id}[{j} - jb];", c_type(*t))).collect();
        let save: Vec<String> = sc.states.iter().map(|(id, _, _)| format!("st{id}[{j} - jb] = acc{id};")).collect();
        (format!("for (int64_t {j} = jb; {j} < je; ++{j}) {{"), load.join(" "), save.join(" "))
    });
    if strip.is_none() {
        for (id, t, init) in &sc.states {
            let _ = writeln!(out, "{indent}{} acc{id} = {};  /* scan state */", c_type(*t), em.value(init));
        }
        if let Some(best) = sc.arg_best.as_ref().filter(|_| sc.last_only && sc.forward && guard.is_empty()) {
            emit_arg_best(out, em, sc, best, indent);
            emit_stores(out, em, stores, indent);
            return;
        }
    }
    let d = var(sc.dim.name.as_str());
    let (a, b) = (sc.dim.interval.start, sc.dim.interval.stop);
    if sc.forward {
        let _ = writeln!(
            out,
            "{indent}for (int64_t {d} = {a}; {d} < {b}; ++{d}) {{  /* {}{} in order */",
            sc.dim.name, sc.dim.interval
        );
    } else {
        let _ = writeln!(
            out,
            "{indent}for (int64_t {d} = {}; {d} >= {a}; --{d}) {{  /* {}{} backward */",
            b - 1,
            sc.dim.name,
            sc.dim.interval
        );
    }
    indent.push_str("  ");
    let mut steps = 1;
    if let Some((head, load, _)) = &strip {
        let _ = writeln!(out, "{indent}{head}");
        indent.push_str("  ");
        steps += 1;
        let _ = writeln!(out, "{indent}{load}");
    }
    if !guard.is_empty() {
        let _ = writeln!(out, "{indent}if ({}) {{", guard.join(" && "));
        indent.push_str("  ");
    }
    for ((id, t, _), u) in sc.states.iter().zip(&sc.updates) {
        let _ = writeln!(out, "{indent}{} next{id} = {};", c_type(*t), em.value(u));
    }
    for (id, _, _) in &sc.states {
        let _ = writeln!(out, "{indent}acc{id} = next{id};");
    }
    if !guard.is_empty() {
        close_loops(out, indent, 1);
    }
    if !sc.last_only {
        emit_stores(out, em, stores, indent);
    }
    if let Some((_, _, save)) = &strip {
        let _ = writeln!(out, "{indent}{save}");
    }
    close_loops(out, indent, steps);
    if sc.last_only {
        match &strip {
            Some((head, load, _)) => {
                let _ = writeln!(out, "{indent}{head}  /* the final states */");
                indent.push_str("  ");
                let _ = writeln!(out, "{indent}{load}");
                emit_stores(out, em, stores, indent);
                close_loops(out, indent, 1);
            }
            None => emit_stores(out, em, stores, indent),
        }
    }
}

/// Lanes per vector register of an argmax / argmin fold (see `kernel::ArgBest`), and the
/// independent vectors it keeps, so that consecutive steps do not wait on one compare-and-blend
/// chain (measured on 4096² `f32` rows in L2: 2.0 ms with one vector, 0.8 ms with four).
const LANES: i64 = 16;
const VECTORS: i64 = 4;

/// An argmax / argmin fold as explicit vector code (GCC vector extensions, so it compiles for
/// any target): lane `l` of vector `u` folds every element `j ≡ 16u + l` (mod 64) of each full
/// block of 64, keeping its best value and the block it came from in registers; a strictly
/// better value replaces the lane's, so each lane keeps its first best. The lanes combine
/// into the state registers by best value, then smallest index — the sequential fold's answer
/// (a lane that ever took a value holds one strictly better than the initial state) — and the
/// remaining elements fold in order after them. NaN is never better, as in the sequential
/// fold.
fn emit_arg_best(out: &mut String, em: &Emitter, sc: &ScanLoop, best: &crate::kernel::ArgBest, indent: &str) {
    let [(v, vt, _), (i, it, _)] = &sc.states[..] else { unreachable!("two states") };
    let (vt, it) = (c_type(*vt), c_type(*it));
    let d = var(sc.dim.name.as_str());
    let (a, b) = (sc.dim.interval.start, sc.dim.interval.stop);
    let better = if best.less { "<" } else { ">" };
    let x = em.value(&best.value);
    let block = LANES * VECTORS;
    let _ = writeln!(
        out,
        "{indent}{{  /* arg{} over {}{} in {VECTORS} vectors of {LANES} lanes */",
        if best.less { "min" } else { "max" },
        sc.dim.name,
        sc.dim.interval
    );
    let _ = writeln!(out, "{indent}  typedef {vt} vv_ __attribute__((vector_size({LANES} * sizeof({vt}))));");
    let _ = writeln!(out, "{indent}  typedef int32_t vb_ __attribute__((vector_size({LANES} * sizeof(int32_t))));");
    let vectors: Vec<i64> = (0..VECTORS).collect();
    let decls: Vec<String> =
        vectors.iter().map(|u| format!("vv_ bv{u} = (vv_){{0}} + acc{v}; vb_ bb{u} = (vb_){{0}} - 1;")).collect();
    let _ = writeln!(out, "{indent}  {}", decls.join(" "));
    // The block counter fits the lanes' 32-bit block numbers: `Lowerer` recognizes only folds
    // of fewer than 2^36 steps.
    let _ = writeln!(out, "{indent}  int64_t jb = {a}; vb_ kv = {{0}};");
    let _ = writeln!(out, "{indent}  for (; jb + {block} <= {b}; jb += {block}, kv += 1) {{");
    // A value loaded contiguously along the fold is read as vectors straight from its buffer;
    // any other is computed into a block of lanes first.
    let direct = matches!(&*best.value, SExpr::Load(l) if !em.in_scratch(l.buffer))
        && contiguous_along(&best.value, &sc.dim.name);
    if !direct {
        let _ = writeln!(
            out,
            "{indent}    {vt} xs[{block}];\n{indent}    _Pragma(\"omp simd\") for (int l = 0; l < {block}; ++l) {{ const int64_t {d} = jb + l; xs[l] = {x}; }}"
        );
    }
    for u in &vectors {
        let source = if direct {
            format!("{{ const int64_t {d} = jb + {}; memcpy(&x, &{x}, sizeof x); {} }}", u * LANES, prefetch_ahead(&x))
        } else {
            format!("memcpy(&x, xs + {}, sizeof x);", u * LANES)
        };
        let _ = writeln!(
            out,
            "{indent}    {{ vv_ x; {source} const __typeof__(x > x) g = x {better} bv{u}; \
             bv{u} = (vv_)(((__typeof__(g))x & g) | ((__typeof__(g))bv{u} & ~g)); \
             const vb_ gb = __builtin_convertvector(g, vb_); bb{u} = (kv & gb) | (bb{u} & ~gb); }}"
        );
    }
    let _ = writeln!(out, "{indent}  }}");
    let stores: Vec<String> = vectors
        .iter()
        .map(|u| {
            format!("memcpy(bvs + {0}, &bv{u}, sizeof bv{u}); memcpy(bbs + {0}, &bb{u}, sizeof bb{u});", u * LANES)
        })
        .collect();
    let _ = writeln!(out, "{indent}  {{ {vt} bvs[{block}]; int32_t bbs[{block}]; {}", stores.join(" "));
    let _ = writeln!(
        out,
        "{indent}    {vt} m = acc{v}; for (int l = 0; l < {block}; ++l) m = bvs[l] {better} m ? bvs[l] : m;"
    );
    let _ = writeln!(
        out,
        "{indent}    int64_t bi = INT64_MAX; for (int l = 0; l < {block}; ++l) {{ const int64_t i_ = {a} + (int64_t)bbs[l] * {block} + l; bi = (bbs[l] >= 0 && bvs[l] == m && i_ < bi) ? i_ : bi; }}"
    );
    let _ = writeln!(out, "{indent}    if (bi != INT64_MAX) {{ acc{v} = m; acc{i} = ({it})bi; }} }}");
    let _ = writeln!(
        out,
        "{indent}  for (int64_t {d} = jb; {d} < {b}; ++{d}) {{ {vt} x = {x}; if (x {better} acc{v}) {{ acc{v} = x; acc{i} = ({it}){d}; }} }}"
    );
    let _ = writeln!(out, "{indent}}}");
}

/// How far ahead of a vector loop's contiguous reads the loop asks for memory. The hardware
/// prefetcher alone kept a core's row stream of a 64 MiB matrix (partly in L3 between calls) at
/// about 45 GB/s on the AMD EPYC this was measured on; requests 8 KiB ahead raised it to about 60
/// (1–2 KiB gained less, 16 KiB no more), and cost nothing on rows that come from DRAM only.
const PREFETCH_BYTES: i64 = 8192;

/// A request for the 64-byte line `PREFETCH_BYTES` after the element `load` (a C lvalue) reads
/// (integer arithmetic: the address may lie past the buffer; a prefetch never faults).
fn prefetch_ahead(load: &str) -> String {
    format!("__builtin_prefetch((const void *)((uintptr_t)&{load} + {PREFETCH_BYTES}));")
}

/// Whether every load in `e` that depends on `dim` has it as its last (contiguous) coordinate.
fn contiguous_along(e: &Rc<SExpr>, dim: &strata_ir::DimName) -> bool {
    loads_along(e, dim).0
}

/// For the loads in `e` that depend on `dim`: whether all have it as their last (contiguous)
/// coordinate, and whether there is any.
fn loads_along(e: &Rc<SExpr>, dim: &strata_ir::DimName) -> (bool, bool) {
    fn visit(p: crate::sym::Part, v: &strata_ir::DimName, ok: &mut bool, seen: &mut bool) {
        if let crate::sym::Part::Expr(e) = p {
            if let SExpr::Load(l) = &**e {
                if l.coords.iter().any(|c| matches!(c, Coord::Var { dim, .. } if dim == v)) {
                    *seen = true;
                    *ok &= matches!(l.coords.last(), Some(Coord::Var { dim, .. }) if dim == v);
                }
            }
            crate::sym::for_each_part(e, &mut |q| visit(q, v, ok, seen));
        }
    }
    let (mut ok, mut seen) = (true, false);
    visit(crate::sym::Part::Expr(e), dim, &mut ok, &mut seen);
    (ok, seen)
}

/// A matrix-product kernel: the initial value stored first (when not zero), then one runtime
/// GEMM call per batch point, each parallel over the entry's threads.
fn emit_matmul(out: &mut String, em: &Emitter, k: &Kernel, mm: &MatMul) {
    if let Some(init) = &mm.init {
        let _ = writeln!(out, "  /* the initial value, accumulated onto below */");
        emit_loops(out, em, &k.elementwise(mm.buffers[0], init.clone()));
    }
    let _ = writeln!(out, "  /* a matrix product ({mm}): the runtime GEMM */");
    let _ = writeln!(out, "  const int nthreads = threads > 0 ? threads : omp_get_max_threads();");
    // Threads share the outermost batch loop when it has work for each (every product then
    // runs on one thread); otherwise each product is parallel inside.
    let by_batch = mm.batch.first().map(|b| b.extent);
    match by_batch {
        Some(n) => {
            let _ = writeln!(out, "  const int by_batch = {n} >= 4 * nthreads;");
            let _ = writeln!(out, "  const int gemm_threads = by_batch ? 1 : nthreads;");
        }
        None => {
            let _ = writeln!(out, "  const int gemm_threads = nthreads;");
        }
    }
    let mut indent = String::from("  ");
    let mut at = mm.offsets.map(|o| o.to_string());
    for (i, b) in mm.batch.iter().enumerate() {
        let v = format!("bt{i}");
        if i == 0 {
            let _ = writeln!(out, "{indent}#pragma omp parallel for schedule(static) if(by_batch)");
        }
        let _ = writeln!(out, "{indent}for (int64_t {v} = 0; {v} < {}; ++{v}) {{  /* batch {b} */", b.extent);
        indent.push_str("  ");
        for (a, s) in at.iter_mut().zip(b.strides) {
            if s != 0 {
                *a = format!("{a} + {v} * {s}");
            }
        }
    }
    let [o, l, r] = mm.buffers.map(|b| em.name(b));
    let f = if mm.scalar == Scalar::F32 { "gemm_f32" } else { "gemm_f64" };
    let (m, n, kk) = (&mm.m, &mm.n, &mm.k);
    let _ = writeln!(
        out,
        "{indent}rt->{f}({}, {}, {}, {o} + {}, {}, {}, {}, {l} + {}, {}, {}, {r} + {}, {}, {}, gemm_threads);",
        m.extent,
        n.extent,
        kk.extent,
        at[0],
        m.strides[0],
        n.strides[0],
        i32::from(mm.init.is_some()),
        at[1],
        m.strides[1],
        kk.strides[1],
        at[2],
        kk.strides[2],
        n.strides[2],
    );
    for _ in &mm.batch {
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
    }
    if let Some(epilogue) = &mm.epilogue {
        let _ = writeln!(out, "  /* the epilogue, in place */");
        emit_loops(out, em, &k.elementwise(mm.buffers[0], epilogue.clone()));
    }
}

/// The loop nest of a contraction kernel (see [`hoist_reductions`]): outer loops, then strips
/// of the innermost dimension holding one accumulator row per reduction.
fn emit_contraction(out: &mut String, em: &Emitter, k: &Kernel, reductions: &[Rc<SExpr>], stores: &[Rc<SExpr>]) {
    let (inner, outer) = k.domain.split_last().expect("a non-empty domain");
    let mut indent = String::from("  ");
    open_domain_loops(out, em, outer, &mut indent);
    let j = open_strip(out, inner, outer.is_empty(), &mut indent);
    let strip = format!("for (int64_t {j} = jb; {j} < je; ++{j})");
    for (ri, r) in reductions.iter().enumerate() {
        let SExpr::Reduce { id, vars, init, scalar, body } = &**r else { unreachable!("hoisted reductions") };
        let t = c_type(*scalar);
        // Hoisted invariants this fold reads, from their rows.
        let deps: String = reductions[..ri]
            .iter()
            .filter_map(|h| match &**h {
                SExpr::Reduce { id: h, scalar: ht, .. } if crate::sym::reads_acc(body, *h) => {
                    Some(format!("{} acc{h} = row{h}[{j} - jb]; ", c_type(*ht)))
                }
                _ => None,
            })
            .collect();
        let _ = writeln!(out, "{indent}{t} row{id}[{STRIP}];");
        let _ = writeln!(out, "{indent}{strip} row{id}[{j} - jb] = {};", em.value(init));
        let (loops, step) = (em.fold_loops(vars, &[]), em.fold_step(*id, body));
        let _ = writeln!(out, "{indent}{loops}{{");
        let _ = writeln!(
            out,
            "{indent}  {strip} {{ {deps}{t} acc{id} = row{id}[{j} - jb]; {step} row{id}[{j} - jb] = acc{id}; }}"
        );
        let _ = writeln!(out, "{indent}}}");
    }
    let _ = writeln!(out, "{indent}{strip} {{");
    for r in reductions {
        let SExpr::Reduce { id, scalar, .. } = &**r else { unreachable!("hoisted reductions") };
        let _ = writeln!(out, "{indent}  {} acc{id} = row{id}[{j} - jb];", c_type(*scalar));
    }
    for (st, value) in k.stores.iter().zip(stores) {
        let b = &em.program.buffers[st.buffer];
        let coords = crate::sym::level_vars(&b.levels);
        let target = em.load(&Load { buffer: st.buffer, coords });
        let _ = writeln!(out, "{indent}  {target} = {};", em.value(value));
    }
    let _ = writeln!(out, "{indent}}}");
    for _ in 0..=outer.len() {
        indent.truncate(indent.len() - 2);
        let _ = writeln!(out, "{indent}}}");
    }
}
