/* Memory-bandwidth probe (STREAM-style): triad a[i] = b[i] + s*c[i] (24 bytes per element:
   two reads, one write, write-allocate not counted, as STREAM) and a read-only sum (8 bytes
   per element). Arrays of 2^25 doubles (256 MiB each), first-touched by the threads that use
   them; prints the median of 10 timed repetitions after one warm-up as JSON.
   Usage: stream (threads from OMP_NUM_THREADS). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1L << 25)
#define REPS 10

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  double *a = aligned_alloc(4096, N * sizeof(double));
  double *b = aligned_alloc(4096, N * sizeof(double));
  double *c = aligned_alloc(4096, N * sizeof(double));
  if (!a || !b || !c) { fprintf(stderr, "stream: out of memory\n"); return 1; }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
  double triad[REPS + 1], read[REPS + 1], sink = 0.0;
  const double s = 3.0;
  for (int r = 0; r <= REPS; ++r) {
    double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < N; ++i) a[i] = b[i] + s * c[i];
    triad[r] = omp_get_wtime() - t0;
    double sum = 0.0;
    t0 = omp_get_wtime();
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
    for (long i = 0; i < N; ++i) sum += a[i];
    read[r] = omp_get_wtime() - t0;
    sink += sum;
  }
  qsort(triad + 1, REPS, sizeof(double), cmp);
  qsort(read + 1, REPS, sizeof(double), cmp);
  double tt = triad[1 + REPS / 2], tr = read[1 + REPS / 2];
  printf("{\"threads\": %d, \"triad_gbps\": %.3f, \"read_gbps\": %.3f, \"check\": %.1f}\n", omp_get_max_threads(),
         3.0 * 8.0 * N / tt / 1e9, 8.0 * N / tr / 1e9, sink / (REPS + 1) / N);
  free(a); free(b); free(c);
  return 0;
}
