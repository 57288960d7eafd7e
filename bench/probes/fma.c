/* Peak floating-point probe: each thread runs independent chains of vector fused multiply-adds
   (enough chains to cover the FMA latency on two pipes), f64 and f32; one FMA counts as two
   flops. Uses AVX-512 when compiled for it, else AVX2/FMA. Prints the median of 7 timed
   repetitions after one warm-up as JSON. Usage: fma (threads from OMP_NUM_THREADS). */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 20000000L
#define REPS 7
#define CHAINS 16

#ifdef __AVX512F__
typedef __m512d vd; typedef __m512 vs;
#define LANES_D 8
#define SET1_D _mm512_set1_pd
#define FMA_D _mm512_fmadd_pd
#define ADD_D _mm512_add_pd
#define SUM_D _mm512_reduce_add_pd
#define SET1_S _mm512_set1_ps
#define FMA_S _mm512_fmadd_ps
#define ADD_S _mm512_add_ps
#define SUM_S _mm512_reduce_add_ps
#define ISA "avx512"
#else
typedef __m256d vd; typedef __m256 vs;
#define LANES_D 4
#define SET1_D _mm256_set1_pd
#define FMA_D _mm256_fmadd_pd
#define ADD_D _mm256_add_pd
static double SUM_D(__m256d v) { double t[4]; _mm256_storeu_pd(t, v); return t[0] + t[1] + t[2] + t[3]; }
#define SET1_S _mm256_set1_ps
#define FMA_S _mm256_fmadd_ps
#define ADD_S _mm256_add_ps
static float SUM_S(__m256 v) { float t[8]; _mm256_storeu_ps(t, v); float s = 0; for (int i = 0; i < 8; ++i) s += t[i]; return s; }
#define ISA "avx2"
#endif

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double run_f64(long iters, double *sink) {
  double total = 0.0;
  double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : total)
  {
    vd acc[CHAINS];
    for (int c = 0; c < CHAINS; ++c) acc[c] = SET1_D(1.0 + c * 1e-3);
    const vd m = SET1_D(0.999999), a = SET1_D(1e-7);
    for (long i = 0; i < iters; ++i)
      for (int c = 0; c < CHAINS; ++c) acc[c] = FMA_D(acc[c], m, a);
    vd s = acc[0];
    for (int c = 1; c < CHAINS; ++c) s = ADD_D(s, acc[c]);
    total += SUM_D(s);
  }
  *sink += total;
  return omp_get_wtime() - t0;
}

static double run_f32(long iters, double *sink) {
  double total = 0.0;
  double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : total)
  {
    vs acc[CHAINS];
    for (int c = 0; c < CHAINS; ++c) acc[c] = SET1_S(1.0f + c * 1e-3f);
    const vs m = SET1_S(0.9999f), a = SET1_S(1e-5f);
    for (long i = 0; i < iters; ++i)
      for (int c = 0; c < CHAINS; ++c) acc[c] = FMA_S(acc[c], m, a);
    vs s = acc[0];
    for (int c = 1; c < CHAINS; ++c) s = ADD_S(s, acc[c]);
    total += SUM_S(s);
  }
  *sink += total;
  return omp_get_wtime() - t0;
}

int main(void) {
  int threads = omp_get_max_threads();
  double td[REPS + 1], ts[REPS + 1], sink = 0.0;
  for (int r = 0; r <= REPS; ++r) {
    td[r] = run_f64(ITERS, &sink);
    ts[r] = run_f32(ITERS, &sink);
  }
  qsort(td + 1, REPS, sizeof(double), cmp);
  qsort(ts + 1, REPS, sizeof(double), cmp);
  double flops_d = 2.0 * LANES_D * CHAINS * (double)ITERS * threads;
  printf("{\"threads\": %d, \"isa\": \"%s\", \"f64_gflops\": %.2f, \"f32_gflops\": %.2f, \"check\": %d}\n", threads, ISA,
         flops_d / td[1 + REPS / 2] / 1e9, 2.0 * flops_d / ts[1 + REPS / 2] / 1e9, sink > 0.0);
  return 0;
}
