#include <stdint.h>
#include <omp.h>
/* The few C library routines kernels call, declared here rather than through <stdlib.h> and
   <string.h>: parsing headers is a good part of a small kernel's compile (issue 50, item 7).
   For the same reason the helpers below call the compiler's builtins rather than <math.h>'s
   names (the same functions), and <math.h> is included only by a translation unit whose
   kernels call its routines (`emit_c::translation_unit`). */
typedef __SIZE_TYPE__ size_t;
#define NULL ((void *)0)
void *malloc(size_t size);
void *calloc(size_t count, size_t size);
void *aligned_alloc(size_t alignment, size_t size);
void free(void *p);
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);

#ifdef STRATA_WRAP_GOMP_PARALLEL
/* Every `#pragma omp parallel` of this library calls this instead of libgomp's GOMP_parallel
   (GCC links it with -Wl,--wrap=GOMP_parallel: strata_codegen::compile::libs). A region of one
   thread (`if(par_)` false: GCC passes num_threads 1; or the default count, 0, while the run
   asked for one thread) runs its outlined body here, on this thread, as a team of one would:
   its static schedule gives thread 0 of 1 every iteration and its reductions combine the same
   way. libgomp would start a team of one for it, ~1.1 us each (a futex call waking the idle
   pool threads, where there are any). */
void __real_GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
__attribute__((visibility("hidden"))) void __wrap_GOMP_parallel(void (*fn)(void *), void *data,
                                                                 unsigned num_threads, unsigned flags) {
  if (num_threads == 1 || (num_threads == 0 && omp_get_max_threads() == 1)) {
    fn(data);
    return;
  }
  __real_GOMP_parallel(fn, data, num_threads, flags);
}
#endif

/* Runs f(ctx, 0) ... f(ctx, n - 1) on the OpenMP threads the kernels run on (Rust:
   strata_codegen::runtime::ParallelFor): the runtime GEMM's split contraction runs there, on
   threads the program's other kernels keep awake, instead of beside them on its own. */
typedef void (*strata_parallel_fn)(int64_t n, void (*f)(void *ctx, int64_t i), void *ctx);
static void strata_parallel_for(int64_t n, void (*f)(void *ctx, int64_t i), void *ctx) {
  #pragma omp parallel for schedule(static, 1) num_threads(n)
  for (int64_t i = 0; i < n; ++i) f(ctx, i);
}

/* The runtime table (Rust: strata_codegen::runtime::Runtime): strided GEMM,
   dst[m x n] (+)= lhs[m x k] * rhs[k x n], strides in elements (row, column). */
typedef struct {
  void (*gemm_f32)(int64_t m, int64_t n, int64_t k, float *dst, int64_t dst_rs, int64_t dst_cs, int accumulate,
                   const float *lhs, int64_t lhs_rs, int64_t lhs_cs, const float *rhs, int64_t rhs_rs, int64_t rhs_cs,
                   int threads, strata_parallel_fn parallel);
  void (*gemm_f64)(int64_t m, int64_t n, int64_t k, double *dst, int64_t dst_rs, int64_t dst_cs, int accumulate,
                   const double *lhs, int64_t lhs_rs, int64_t lhs_cs, const double *rhs, int64_t rhs_rs,
                   int64_t rhs_cs, int threads, strata_parallel_fn parallel);
  /* A buffer of `len` elements for buffer `buffer` (a sparse result's coordinates and values,
     whose length is known only while running); NULL if it cannot be allocated. */
  void *(*alloc)(int64_t buffer, int64_t len);
  /* Lets MPI progress a distributed run's exchanges (kernels lowered with `polls`). */
  void (*poll)(void);
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
/* An entry of an input table the run checked whole before the kernels: -1 or in [lo, hi). */
static inline int64_t strata_nb_prechecked(int64_t t, int64_t lo) { return t == -1 ? lo : t; }
static inline int strata_ok(int64_t t) { return t != -1; }
static inline int64_t strata_u64_entry(uint64_t t) { return t > (uint64_t)INT64_MAX ? INT64_MIN : (int64_t)t; }
/* Position of coordinate c among the sorted, unique coordinates crd[lo..hi) of a compressed
   level, or -1 where it is not stored. Pure, so the compiler shares repeated searches. Binary
   search down to a run of at most one vector of coordinates (everything before it below c,
   everything after it above), then one comparison of the whole run: an AVX2 masked load (it
   reads no memory past hi) and compare, through GCC's builtins (immintrin.h costs 0.7 s of
   every compile); else a branchless count of the coordinates below c. A sparse row is often
   that short, and a binary search over it mispredicts a branch per step (tests:
   `emit_c/prelude_tests.rs`). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX2__)
typedef int strata_v8si_ __attribute__((vector_size(32)));
typedef long long strata_v4di_ __attribute__((vector_size(32)));
typedef float strata_v8sf_ __attribute__((vector_size(32)));
typedef double strata_v4df_ __attribute__((vector_size(32)));
#define STRATA_LANES32 8
#define STRATA_LANES64 4
#define STRATA_FIND_RUN(T, VT, LOAD, MOVMSK, FT, ...) { \
  if (c != (T)c) return -1; \
  const VT m_ = (VT){__VA_ARGS__} < (T)(hi - lo); \
  const VT v_ = LOAD((const VT *)(crd + lo), m_); \
  const unsigned eq_ = MOVMSK((FT)((v_ == (T)c) & m_)); \
  return eq_ ? lo + __builtin_ctz(eq_) : -1; }
#define STRATA_FIND_RUN32 STRATA_FIND_RUN(int32_t, strata_v8si_, __builtin_ia32_maskloadd256, __builtin_ia32_movmskps256, strata_v8sf_, 0, 1, 2, 3, 4, 5, 6, 7)
#define STRATA_FIND_RUN64 STRATA_FIND_RUN(int64_t, strata_v4di_, __builtin_ia32_maskloadq256, __builtin_ia32_movmskpd256, strata_v4df_, 0, 1, 2, 3)
#else
#define STRATA_LANES32 8
#define STRATA_LANES64 8
#define STRATA_FIND_RUN_ANY { \
  const int64_t end = hi; int64_t n = 0; for (int64_t i = lo; i < hi; ++i) n += crd[i] < c; lo += n; \
  return (lo < end && crd[lo] == c) ? lo : -1; }
#define STRATA_FIND_RUN32 STRATA_FIND_RUN_ANY
#define STRATA_FIND_RUN64 STRATA_FIND_RUN_ANY
#endif
#define STRATA_FIND(name, T, LANES, RUN) static inline __attribute__((pure)) int64_t name(const T *crd, int64_t lo, int64_t hi, int64_t c) { \
  while (hi - lo > LANES) { const int64_t mid = lo + (hi - lo) / 2; if (crd[mid] < c) lo = mid + 1; else if (crd[mid] > c) hi = mid; else return mid; } \
  RUN }
STRATA_FIND(strata_find, int64_t, STRATA_LANES64, STRATA_FIND_RUN64)
STRATA_FIND(strata_find32, int32_t, STRATA_LANES32, STRATA_FIND_RUN32)
/* Lanes of an argmax / argmin fold's vectors of T (emit_c/scan.rs): 16 where the target has
   512-bit registers, else as many as one register of the target holds (256 or 128 bits). GCC
   splits a wider generic vector into element-wise code through the stack on such targets:
   16 float lanes on AVX2 ran a 4096^2 argmax at 42 ms where 8 lanes take 5.5. */
#if defined(__AVX512F__)
#define STRATA_ARG_LANES(T) 16
#elif defined(__AVX__)
#define STRATA_ARG_LANES(T) (32 / sizeof(T) > 4 ? 32 / sizeof(T) : 4)
#else
#define STRATA_ARG_LANES(T) (16 / sizeof(T) > 2 ? 16 / sizeof(T) : 2)
#endif
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
static inline int64_t strata_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
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
static inline double strata_fmax(double a, double b) { return (__builtin_isnan(a) || __builtin_isnan(b)) ? a + b : (a > b ? a : b); }
static inline double strata_fmin(double a, double b) { return (__builtin_isnan(a) || __builtin_isnan(b)) ? a + b : (a < b ? a : b); }
static inline float strata_fmaxf(float a, float b) { return (__builtin_isnan(a) || __builtin_isnan(b)) ? a + b : (a > b ? a : b); }
static inline float strata_fminf(float a, float b) { return (__builtin_isnan(a) || __builtin_isnan(b)) ? a + b : (a < b ? a : b); }
#define STRATA_DIVMOD(name, T, SUF) static inline T name(T a, T b, int rem) { \
  T m = __builtin_fmod##SUF(a, b); if (b == 0) return rem ? m : a / b; T div = (a - m) / b; \
  if (m != 0) { if ((b < 0) != (m < 0)) { m += b; div -= 1; } } else m = __builtin_copysign##SUF(0, b); \
  if (rem) return m; if (div != 0) { T f = __builtin_floor##SUF(div); return (div - f > (T)0.5) ? f + 1 : f; } \
  return __builtin_copysign##SUF(0, a / b); }
STRATA_DIVMOD(strata_divmod, double, )
STRATA_DIVMOD(strata_divmodf, float, f)
#define STRATA_LOGADDEXP(name, T, SUF) static inline T name(T a, T b) { \
  if (a == b) return a + (T)0.693147180559945309417232121458176568; T d = a - b; \
  if (d > 0) return a + __builtin_log1p##SUF(__builtin_exp##SUF(-d)); if (d <= 0) return b + __builtin_log1p##SUF(__builtin_exp##SUF(d)); return d; }
STRATA_LOGADDEXP(strata_logaddexp, double, )
STRATA_LOGADDEXP(strata_logaddexpf, float, f)
/* Saturating float-to-integer conversion, NaN to 0 (as Rust's `as`). */
#define STRATA_F2I(name, T, lo, hi) static inline T name(double x) { \
  if (__builtin_isnan(x)) return 0; if (x <= (double)(lo)) return (T)(lo); if (x >= (double)(hi)) return (T)(hi); return (T)x; }
STRATA_F2I(strata_f2i8, int8_t, INT8_MIN, INT8_MAX)
STRATA_F2I(strata_f2i16, int16_t, INT16_MIN, INT16_MAX)
STRATA_F2I(strata_f2i32, int32_t, INT32_MIN, INT32_MAX)
STRATA_F2I(strata_f2u8, uint8_t, 0, UINT8_MAX)
STRATA_F2I(strata_f2u16, uint16_t, 0, UINT16_MAX)
STRATA_F2I(strata_f2u32, uint32_t, 0, UINT32_MAX)
static inline int64_t strata_f2i64(double x) { if (__builtin_isnan(x)) return 0; if (x <= -9223372036854775808.0) return INT64_MIN; if (x >= 9223372036854775808.0) return INT64_MAX; return (int64_t)x; }
static inline uint64_t strata_f2u64(double x) { if (__builtin_isnan(x) || x <= 0.0) return 0; if (x >= 18446744073709551616.0) return UINT64_MAX; return (uint64_t)x; }

/* A kernel reading memory under a condition is compiled without GCC's loop if-conversion: GCC
   12.2 vectorizes such a select of an unrolled group with masked loads that all take the first
   vector's mask (`emit_program`). Clang has no such pass to turn off. */
#if defined(__GNUC__) && !defined(__clang__)
#define STRATA_NO_IFCVT __attribute__((optimize("no-tree-loop-if-convert")))
#else
#define STRATA_NO_IFCVT
#endif

/* Constants passed among the extents by their bits (`extents::constant` in the emitter). */
static inline double strata_f64(int64_t b) { double x; memcpy(&x, &b, sizeof x); return x; }
static inline float strata_f32(int64_t b) { uint32_t u = (uint32_t)b; float x; memcpy(&x, &u, sizeof x); return x; }
