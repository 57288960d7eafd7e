/* The CUDA prelude: what the C prelude gives kernels (emit_c/prelude.c), for device code.
   NVRTC has no C library headers: the fixed-width types and their limits are defined here,
   and the math routines are CUDA's own device functions (sqrt, exp, nearbyint, …). */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(x) x##LL
#define UINT64_C(x) x##ULL
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MAX 9223372036854775807LL
#define INT64_MIN (-INT64_MAX - 1)
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615ULL
#define restrict __restrict__
#define D_ static __device__ __forceinline__
/* The C printer spells infinity and NaN as GCC's builtins (without <math.h>). */
#define __builtin_inff() __int_as_float(0x7f800000)
#define __builtin_nanf(s) __int_as_float(0x7fc00000)

/* The first bad entry or index a run met: its value, the interval it had to lie in, the table
   buffer it came from (-1: a computed index), and 1 once recorded. The host reads it after an
   error (strata_gpu::Program::bad_value) and clears it. */
__device__ int64_t strata_bad[5];
static __device__ __noinline__ void strata_note_bad(int64_t t, int64_t lo, int64_t hi, int64_t site) {
  if (atomicCAS((unsigned long long *)&strata_bad[4], 0ULL, 1ULL) == 0ULL) {
    strata_bad[0] = t; strata_bad[1] = lo; strata_bad[2] = hi; strata_bad[3] = site;
  }
}
/* Neighbor-table entry: -1 means "no neighbor" (the point is absent); anything else must lie in
   [lo, hi), else error 2. Returns a safe coordinate to address with. */
D_ int64_t strata_nb(int64_t t, int64_t lo, int64_t hi, int64_t site, int *err) {
  if (t == -1) return lo;
  if ((uint64_t)t - (uint64_t)lo >= (uint64_t)hi - (uint64_t)lo) { strata_note_bad(t, lo, hi, site); *err = 2; return lo; }
  return t;
}
D_ int strata_ok(int64_t t) { return t != -1; }
D_ int64_t strata_u64_entry(uint64_t t) { return t > (uint64_t)INT64_MAX ? INT64_MIN : (int64_t)t; }
/* A computed index: must lie in [lo, hi), else error 4. */
D_ int64_t strata_ix(int64_t t, int64_t lo, int64_t hi, int *err) {
  if ((uint64_t)t - (uint64_t)lo >= (uint64_t)hi - (uint64_t)lo) { strata_note_bad(t, lo, hi, -1); *err = 4; return lo; }
  return t;
}
/* Position of coordinate c among the sorted coordinates crd[lo..hi), or -1. */
#define STRATA_FIND(name, T) D_ int64_t name(const T *crd, int64_t lo, int64_t hi, int64_t c) { \
  while (lo < hi) { const int64_t mid = lo + (hi - lo) / 2; if (crd[mid] < c) lo = mid + 1; else if (crd[mid] > c) hi = mid; else return mid; } \
  return -1; }
STRATA_FIND(strata_find, int64_t)
STRATA_FIND(strata_find32, int32_t)
D_ int64_t strata_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
D_ int64_t strata_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
D_ double strata_fmax(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : (a > b ? a : b); }
D_ double strata_fmin(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : (a < b ? a : b); }
D_ float strata_fmaxf(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : (a > b ? a : b); }
D_ float strata_fminf(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : (a < b ? a : b); }
#define STRATA_DIVMOD(name, T, SUF) D_ T name(T a, T b, int rem) { \
  T m = fmod##SUF(a, b); if (b == 0) return rem ? m : a / b; T div = (a - m) / b; \
  if (m != 0) { if ((b < 0) != (m < 0)) { m += b; div -= 1; } } else m = copysign##SUF((T)0, b); \
  if (rem) return m; if (div != 0) { T f = floor##SUF(div); return (div - f > (T)0.5) ? f + 1 : f; } \
  return copysign##SUF((T)0, a / b); }
STRATA_DIVMOD(strata_divmod, double, )
STRATA_DIVMOD(strata_divmodf, float, f)
#define STRATA_LOGADDEXP(name, T, SUF) D_ T name(T a, T b) { \
  if (a == b) return a + (T)0.693147180559945309417232121458176568; T d = a - b; \
  if (d > 0) return a + log1p##SUF(exp##SUF(-d)); if (d <= 0) return b + log1p##SUF(exp##SUF(d)); return d; }
STRATA_LOGADDEXP(strata_logaddexp, double, )
STRATA_LOGADDEXP(strata_logaddexpf, float, f)
/* Saturating float-to-integer conversion, NaN to 0 (as Rust's `as`). */
#define STRATA_F2I(name, T, lo, hi) D_ T name(double x) { \
  if (isnan(x)) return 0; if (x <= (double)(lo)) return (T)(lo); if (x >= (double)(hi)) return (T)(hi); return (T)x; }
STRATA_F2I(strata_f2i8, int8_t, INT8_MIN, INT8_MAX)
STRATA_F2I(strata_f2i16, int16_t, INT16_MIN, INT16_MAX)
STRATA_F2I(strata_f2i32, int32_t, INT32_MIN, INT32_MAX)
STRATA_F2I(strata_f2u8, uint8_t, 0, UINT8_MAX)
STRATA_F2I(strata_f2u16, uint16_t, 0, UINT16_MAX)
STRATA_F2I(strata_f2u32, uint32_t, 0, UINT32_MAX)
D_ int64_t strata_f2i64(double x) { if (isnan(x)) return 0; if (x <= -9223372036854775808.0) return INT64_MIN; if (x >= 9223372036854775808.0) return INT64_MAX; return (int64_t)x; }
D_ uint64_t strata_f2u64(double x) { if (isnan(x) || x <= 0.0) return 0; if (x >= 18446744073709551616.0) return UINT64_MAX; return (uint64_t)x; }
/* Constants passed among the extents by their bits (`extents::constant` in the emitter). */
D_ double strata_f64(int64_t b) { return __longlong_as_double(b); }
D_ float strata_f32(int64_t b) { return __int_as_float((int)(uint32_t)b); }
