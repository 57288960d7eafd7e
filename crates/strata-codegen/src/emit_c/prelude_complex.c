/* Complex scalars: included after the prelude by a translation unit that uses them. */
#include <math.h>
#include <complex.h>
/* Generated names never clash with these, but dimension names like `I` must not meet the macro. */
#undef I
#undef complex

/* Complex arithmetic as the interpreter's (strata_runtime::complex): numpy's textbook product
   and Smith's quotient, numpy's formulas for the functions C lacks, `sign(z) = z / |z|`. */
#define STRATA_COMPLEX(T, C, f, MK)                                                                  \
  static inline C strata_cmul##f(C a, C b) {                                                      \
    T ar = creal##f(a), ai = cimag##f(a), br = creal##f(b), bi = cimag##f(b);                    \
    return MK(ar * br - ai * bi, ar * bi + ai * br);                                              \
  }                                                                                               \
  static inline C strata_cdiv##f(C a, C b) {                                                      \
    T ar = creal##f(a), ai = cimag##f(a), br = creal##f(b), bi = cimag##f(b);                    \
    T abr = fabs##f(br), abi = fabs##f(bi);                                                       \
    if (abr >= abi) {                                                                             \
      if (abr == 0 && abi == 0) return MK(ar / abr, ai / abr);                                    \
      T rat = bi / br, scl = (T)1.0 / (br + bi * rat);                                             \
      return MK((ar + ai * rat) * scl, (ai - ar * rat) * scl);                                    \
    }                                                                                             \
    T rat = br / bi, scl = (T)1.0 / (bi + br * rat);                                               \
    return MK((ar * rat + ai) * scl, (ai * rat - ar) * scl);                                      \
  }                                                                                               \
  /* numpy's power: x ** 0 is 1; 0 ** b is 0 for a positive real part of b, else NaN. */         \
  static inline C strata_cpow##f(C a, C b) {                                                      \
    T ar = creal##f(a), ai = cimag##f(a), br = creal##f(b), bi = cimag##f(b);                    \
    if (br == 0 && bi == 0) return MK(1, 0);                                                      \
    if (ar == 0 && ai == 0) return br > 0 ? MK(0, 0) : MK(NAN, NAN);                              \
    return cpow##f(a, b);                                                                         \
  }                                                                                               \
  static inline T strata_cabs##f(C z) { return hypot##f(creal##f(z), cimag##f(z)); }               \
  static inline uint8_t strata_cisnan##f(C z) { return isnan(creal##f(z)) || isnan(cimag##f(z)); } \
  static inline uint8_t strata_cisinf##f(C z) { return isinf(creal##f(z)) || isinf(cimag##f(z)); } \
  static inline uint8_t strata_cisfinite##f(C z) {                                                \
    return isfinite(creal##f(z)) && isfinite(cimag##f(z));                                        \
  }                                                                                               \
  static inline C strata_cround##f(C z) { return MK(nearbyint##f(creal##f(z)), nearbyint##f(cimag##f(z))); } \
  static inline C strata_csign##f(C z) {                                                          \
    T re = creal##f(z), im = cimag##f(z), m = hypot##f(re, im);                                    \
    if (isnan(re) || isnan(im)) return MK(NAN, NAN);                                              \
    if (m == 0) return MK(0, 0);                                                                  \
    if (isinf(re) && isinf(im)) return MK(NAN, NAN);                                              \
    if (isinf(m)) {                                                                               \
      T dr = isinf(re) ? (re > 0 ? 1 : -1) : 0, di = isinf(im) ? (im > 0 ? 1 : -1) : 0;           \
      T n = hypot##f(dr, di);                                                                     \
      return MK(dr / n, di / n);                                                                  \
    }                                                                                             \
    return MK(re / m, im / m);                                                                    \
  }                                                                                               \
  static inline C strata_clog2##f(C z) {                                                          \
    C l = clog##f(z);                                                                             \
    return MK(creal##f(l) / (T)0.693147180559945309417232121458176568, cimag##f(l) / (T)0.693147180559945309417232121458176568); \
  }                                                                                               \
  static inline C strata_clog10##f(C z) {                                                         \
    C l = clog##f(z);                                                                             \
    return MK(creal##f(l) / (T)2.30258509299404568401799145468436421, cimag##f(l) / (T)2.30258509299404568401799145468436421); \
  }                                                                                               \
  static inline C strata_cexpm1##f(C z) {                                                         \
    T re = creal##f(z), im = cimag##f(z), a = sin##f(im / 2);                                     \
    if (!isfinite(re) || !isfinite(im)) { C e = cexp##f(z); return MK(creal##f(e) - 1, cimag##f(e)); } \
    return MK((expm1##f(re) * cos##f(im) - 2 * a * a) + 0, exp##f(re) * sin##f(im));               \
  }                                                                                               \
  static inline C strata_ctanh##f(C z) {                                                          \
    T re = creal##f(z), im = cimag##f(z);                                                         \
    if (isinf(re) && isfinite(im)) return MK(copysign##f(1, re), copysign##f(0, im));             \
    return ctanh##f(z);                                                                           \
  }                                                                                               \
  static inline C strata_clog1p##f(C z) {                                                         \
    T re = creal##f(z), im = cimag##f(z);                                                         \
    return MK(log##f(hypot##f(re + 1, im)), atan2##f(im, re + 1));                                  \
  }
STRATA_COMPLEX(double, double _Complex, , CMPLX)
STRATA_COMPLEX(float, float _Complex, f, CMPLXF)
