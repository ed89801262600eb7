/* bench_linearize.c — what linearization costs inside a timed inference.
 *
 * Makes SST-like batches of random binary trees (ctxrt_generate "binary", one word
 * id per leaf; leaves per tree 2 + below(18) + below(18), plus below(20) one time
 * in ten: 2..55, mean about 20, as SST sentences), written as node lists and read
 * back so one forest holds trees of different sizes. For batch sizes 1, 10 and
 * 100 it linearizes each of NBATCH batches REPS times with ctxrt_linear_fill into
 * one reused CtxrtLinear (the timed-loop path: no allocation), and also times
 * ctxrt_linear_create + destroy (allocating) and ctxrt_forest_validate for scale.
 * Prints the median ns per batch and per node over all runs, and the median over
 * batches of each batch's fastest run (less noisy on a loaded machine). Usage:
 * bench_linearize [REPS] (default 200).
 */
#include "runtime/ctxrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBATCH 64   /* distinct batches per size, so caches see varied shapes */
#define VOCAB 21701 /* the SST vocabulary size CORTEX-style setups use */

static void die(const char *what, const CtxrtError *err) {
  fprintf(stderr, "bench_linearize: %s: %s\n", what, err->msg);
  exit(1);
}

/* Appends one random binary tree of [leaves] leaves as a node list to [buf]. */
static size_t append_tree(char *buf, size_t at, size_t cap, int64_t leaves,
                          uint64_t seed) {
  CtxrtGenSpec spec = {CTXRT_GEN_BINARY,        leaves, 0, 1, seed, VOCAB, 0,
                       CTXRT_GEN_VALUES_DEFAULT};
  CtxrtForest *f;
  CtxrtError err;
  if (ctxrt_generate(&spec, &f, &err) != CTXRT_OK) die("generate", &err);
  at += (size_t)snprintf(buf + at, cap - at, "tree\n");
  for (int32_t n = 0; n < f->num_nodes; n++) {
    at += (size_t)snprintf(buf + at, cap - at, "%d", (int)n);
    if (f->val_begin[n + 1] > f->val_begin[n])
      at += (size_t)snprintf(buf + at, cap - at, " %d", (int)f->val[f->val_begin[n]]);
    if (f->dep_begin[n + 1] > f->dep_begin[n])
      at += (size_t)snprintf(buf + at, cap - at, " : %d %d", (int)f->dep[f->dep_begin[n]],
                             (int)f->dep[f->dep_begin[n] + 1]);
    at += (size_t)snprintf(buf + at, cap - at, "\n");
  }
  ctxrt_forest_destroy(f);
  return at;
}

static CtxrtForest *make_batch(CtxrtRng *rng, int size) {
  size_t cap = (size_t)size * 4096, at = 0;
  char *buf = malloc(cap);
  if (!buf) exit(1);
  for (int t = 0; t < size; t++) {
    int64_t leaves =
        2 + (int64_t)ctxrt_rng_below(rng, 18) + (int64_t)ctxrt_rng_below(rng, 18);
    if (ctxrt_rng_below(rng, 10) == 0) leaves += (int64_t)ctxrt_rng_below(rng, 20);
    at = append_tree(buf, at, cap, leaves, ctxrt_rng_next(rng));
  }
  CtxrtForest *f;
  CtxrtError err;
  if (ctxrt_read_nodes_buffer("batch", buf, at, &f, &err) != CTXRT_OK) die("read", &err);
  free(buf);
  return f;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

enum { FILL, CREATE, VALIDATE };

/* One timed call of [what] on [f]. */
static double time_one(int what, CtxrtLinear *lin, const CtxrtForest *f) {
  static const CtxrtSpec spec = {CTXRT_TREE, 2, 2, 1, CTXRT_VALUES_LEAVES, NULL};
  CtxrtError err;
  CtxrtLinear *tmp;
  double t0 = now_ns();
  CtxrtStatus st = what == FILL     ? ctxrt_linear_fill(lin, f, 1, 2, &err)
                   : what == CREATE ? ctxrt_linear_create(f, 1, 2, &tmp, &err)
                                    : ctxrt_forest_validate(f, &spec, &err);
  if (what == CREATE && st == CTXRT_OK) ctxrt_linear_destroy(tmp);
  double t1 = now_ns();
  if (st != CTXRT_OK) die("linearize", &err);
  return t1 - t0;
}

static void bench_size(int size, int reps, CtxrtRng *rng) {
  CtxrtForest *batch[NBATCH];
  int64_t nodes = 0, leaves = 0;
  for (int b = 0; b < NBATCH; b++) {
    batch[b] = make_batch(rng, size);
    nodes += batch[b]->num_nodes;
    leaves += (batch[b]->num_nodes + size) / 2;
  }
  CtxrtLinear *lin;
  CtxrtError err;
  if (ctxrt_linear_create(NULL, 0, 0, &lin, &err) != CTXRT_OK) die("create", &err);
  double *t = malloc((size_t)reps * NBATCH * sizeof *t),
         mean_nodes = (double)nodes / NBATCH;
  const char *names[] = {"fill (reused)", "create+destroy", "validate"};
  printf("batch %3d: %6.1f nodes/batch, %5.1f leaves/tree\n", size, mean_nodes,
         (double)leaves / NBATCH / size);
  for (int what = FILL; what <= VALIDATE; what++) {
    for (int r = 0; r < reps; r++)
      for (int b = 0; b < NBATCH; b++)
        t[r * NBATCH + b] = time_one(what, lin, batch[b]);
    double best[NBATCH]; /* each batch's fastest run: less noise on a loaded host */
    for (int b = 0; b < NBATCH; b++) {
      best[b] = t[b];
      for (int r = 1; r < reps; r++)
        if (t[r * NBATCH + b] < best[b]) best[b] = t[r * NBATCH + b];
    }
    double med = median(t, (size_t)reps * NBATCH), bmed = median(best, NBATCH);
    printf("  %-15s median %8.0f ns/batch %6.2f ns/node | median of bests %8.0f ns/batch "
           "%6.2f ns/node\n",
           names[what], med, med / mean_nodes, bmed, bmed / mean_nodes);
  }
  free(t);
  ctxrt_linear_destroy(lin);
  for (int b = 0; b < NBATCH; b++)
    ctxrt_forest_destroy(batch[b]);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 200;
  if (reps < 1) reps = 1;
  CtxrtRng rng;
  ctxrt_rng_seed(&rng, 2021);
  const int sizes[] = {1, 10, 100};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    bench_size(sizes[i], reps, &rng);
  return 0;
}
