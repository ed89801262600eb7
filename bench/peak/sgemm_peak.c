/* sgemm_peak.c — the machine's limits the bench table is measured against.
 *
 * 1. OpenBLAS sgemm peak, with 1 and 2 threads: the best GFLOP/s over a few
 *    square-ish products of the sizes the zoo's levels use (M = batched nodes,
 *    N = gate rows, K = H), repeated until each has run for ~0.2 s.
 * 2. Cache/memory read bandwidth, one thread: a buffer of S bytes (weight-sized,
 *    from 64 KiB to 64 MiB) summed with wide vector loads over and over; the best
 *    GB/s of a few timed rounds per size.
 * Prints lines the runner (bench/run.sh) parses:
 *   peak: threads=T gflops=G
 *   bw: bytes=S gbps=B
 * usage: sgemm_peak [--quick]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static float *fill(size_t n) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) exit(1);
  for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  return p;
}

/* best GFLOP/s of C[m x n] = A[m x k] . B[n x k]^T */
static double gemm_gflops(int m, int n, int k, double secs) {
  float *A = fill((size_t)m * k), *B = fill((size_t)n * k), *C = fill((size_t)m * n);
  double best = 0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, A, k, B, k, 0.0f, C, n);
  for (int round = 0; round < 5; round++) {
    int reps = 0;
    double t0 = now_s(), t;
    do {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, A, k, B, k, 0.0f, C,
                  n);
      reps++;
      t = now_s() - t0;
    } while (t < secs / 5);
    double g = 2.0 * m * n * k * reps / t / 1e9;
    if (g > best) best = g;
  }
  free(A), free(B), free(C);
  return best;
}

/* best GB/s reading [bytes] again and again */
static double read_gbps(size_t bytes, double secs) {
  size_t n = bytes / sizeof(float);
  float *p = fill(n);
  volatile float sink = 0;
  double best = 0;
  for (int round = 0; round < 5; round++) {
    size_t passes = 0;
    double t0 = now_s(), t;
    do {
      float acc[16] = {0};
      for (size_t i = 0; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += p[i + j];
      for (int j = 0; j < 16; j++) sink += acc[j];
      passes++;
      t = now_s() - t0;
    } while (t < secs / 5);
    double g = (double)bytes * (double)passes / t / 1e9;
    if (g > best) best = g;
  }
  (void)sink;
  free(p);
  return best;
}

int main(int argc, char **argv) {
  double secs = argc > 1 && !strcmp(argv[1], "--quick") ? 0.1 : 0.3;
  static const int shapes[][3] = {{256, 768, 256}, {512, 1536, 512}, {384, 1024, 512},
                                  {1024, 1024, 1024}, {128, 4096, 256}, {256, 4096, 512}, {2048, 512, 512}};
  for (int t = 1; t <= 2; t++) {
    openblas_set_num_threads(t);
    double best = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      double g = gemm_gflops(shapes[s][0], shapes[s][1], shapes[s][2], secs);
      if (g > best) best = g;
    }
    printf("peak: threads=%d gflops=%.2f\n", t, best);
    fflush(stdout);
  }
  for (size_t kib = 64; kib <= 64 * 1024; kib *= 2) {
    printf("bw: bytes=%zu gbps=%.2f\n", kib * 1024, read_gbps(kib * 1024, secs / 2));
    fflush(stdout);
  }
  return 0;
}
