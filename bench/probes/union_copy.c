/* The memory floor of a sparse sum (bench workload sparse_add): the rows of two CSR matrices
   copied, row by row, into one CSR result holding both rows' entries one after the other — the
   bytes a merged union reads and writes (both inputs' positions, coordinates and values; the
   result's positions, coordinates and values) with no comparison at all. A union that merges
   each row cannot run faster than this copy. Stores are plain (write-allocate, as a generated
   kernel's); a second variant streams the values past the cache (non-temporal stores).

   Usage: union_copy [ROWS A_PER_ROW B_PER_ROW] (default: the bench's 2^20 rows, 5 + 5 entries
   per row); threads from OMP_NUM_THREADS, rows split statically. Prints the median of 7 timed
   repetitions after one warm-up as JSON (milliseconds).
   Build: gcc -O3 -march=native -fopenmp -fno-tree-loop-distribute-patterns union_copy.c */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define REPS 7

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Copies rows [r0, r1) of a and b into the result starting at entry k; returns the entries. */
static int64_t copy_rows(int64_t r0, int64_t r1, int64_t k, const int64_t *ap, const int32_t *ac,
                         const double *av, const int64_t *bp, const int32_t *bc, const double *bv,
                         int64_t *op, int32_t *oc, double *ov, int stream) {
  const int64_t k0 = k;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t q = ap[r]; q < ap[r + 1]; ++q, ++k) {
      oc[k] = ac[q];
      if (stream) _mm_stream_si64((long long *)&ov[k], ((const long long *)av)[q]);
      else ov[k] = av[q];
    }
    for (int64_t q = bp[r]; q < bp[r + 1]; ++q, ++k) {
      oc[k] = bc[q];
      if (stream) _mm_stream_si64((long long *)&ov[k], ((const long long *)bv)[q]);
      else ov[k] = bv[q];
    }
    op[r + 1] = k;
  }
  if (stream) _mm_sfence();
  return k - k0;
}

int main(int argc, char **argv) {
  const int64_t rows = argc > 1 ? atoll(argv[1]) : (1L << 20);
  const int64_t pa = argc > 2 ? atoll(argv[2]) : 5, pb = argc > 3 ? atoll(argv[3]) : 5;
  const int64_t na = rows * pa, nb = rows * pb, n = na + nb;
  int64_t *ap = malloc((rows + 1) * 8), *bp = malloc((rows + 1) * 8), *op = malloc((rows + 1) * 8);
  int32_t *ac = malloc(na * 4), *bc = malloc(nb * 4), *oc = malloc(n * 4);
  double *av = malloc(na * 8), *bv = malloc(nb * 8), *ov = malloc(n * 8);
  if (!ap || !bp || !op || !ac || !bc || !oc || !av || !bv || !ov) {
    fprintf(stderr, "union_copy: out of memory\n");
    return 1;
  }
  const int threads = omp_get_max_threads();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r <= rows; ++r) { ap[r] = r * pa; bp[r] = r * pb; op[r] = 0; }
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t q = r * pa; q < (r + 1) * pa; ++q) { ac[q] = (int32_t)(q % rows); av[q] = (double)q; }
    for (int64_t q = r * pb; q < (r + 1) * pb; ++q) { bc[q] = (int32_t)(q % rows); bv[q] = (double)q; }
    for (int64_t q = r * (pa + pb); q < (r + 1) * (pa + pb); ++q) { oc[q] = 0; ov[q] = 0.0; }
  }
  double ms[2][REPS + 1];
  int64_t stored = 0;
  for (int stream = 0; stream < 2; ++stream) {
    for (int rep = 0; rep <= REPS; ++rep) {
      const double t = omp_get_wtime();
#pragma omp parallel reduction(+ : stored)
      {
        const int id = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t r0 = rows * id / nt, r1 = rows * (id + 1) / nt;
        stored += copy_rows(r0, r1, ap[r0] + bp[r0], ap, ac, av, bp, bc, bv, op, oc, ov, stream);
      }
      ms[stream][rep] = (omp_get_wtime() - t) * 1e3;
    }
    qsort(ms[stream] + 1, REPS, sizeof(double), cmp);
  }
  const double bytes = (2.0 * (rows + 1) * 8 + (na + nb) * 12.0) + ((rows + 1) * 8 + n * 12.0);
  printf("{\"threads\": %d, \"rows\": %lld, \"entries\": %lld, \"bytes\": %.0f, \"plain_ms\": %.2f, "
         "\"streamed_values_ms\": %.2f, \"check\": %lld}\n",
         threads, (long long)rows, (long long)n, bytes, ms[0][1 + REPS / 2], ms[1][1 + REPS / 2],
         (long long)(stored / (2 * (REPS + 1))));
  return 0;
}
