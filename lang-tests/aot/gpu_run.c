/* gpu_run.c — runs a model that `ctx build` compiled (for the CPU or with
 * --target cuda) and times it: the harness of the GPU check's bundle
 * (scripts/gpu-check.sh, docs/cuda.md).
 *
 *   gpu_run OUTDIR MODEL --input FILE --format ptb|nodes [--weights W]
 *           [--all-nodes] [--output OUT.npy] [--repeat R]
 *   gpu_run --probe
 *
 * Like aot_run: loads OUTDIR/libMODEL.so, reads and validates the input,
 * loads the weights (seeded defaults without --weights), runs once and writes
 * the outputs as .npy. With --repeat R it then runs the whole input R more
 * times and prints `time_us: median=M p10=A p90=B runs=R` — what a user
 * waits for per call: linearization, copies, the kernel, the outputs back.
 * --probe: exit 0 when a CUDA driver and a GPU are present, 77 otherwise
 * (with the reason). Errors: the library's message, exit 1; bad command
 * line, exit 2.
 */
#include "runtime/ctxrt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "gpu_run: %s: %s\n", what, msg);
  return 1;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int probe(void) {
  CtxrtError err;
  int32_t n = 0;
  if (ctxrt_cuda_probe(&n, &err)) {
    fprintf(stderr, "gpu_run: %s\n", err.msg);
    return 77;
  }
  printf("%d CUDA GPU%s\n", (int)n, n == 1 ? "" : "s");
  return 0;
}

/* Runs [m] [reps] times over [f] and prints the latencies. */
static int time_runs(CtxrtModel *m, const CtxrtForest *f, int all_nodes, float *out, int reps) {
  double *us = malloc(sizeof(double) * (size_t)(reps + 1));
  CtxrtError err;
  if (!us) return fail("error", "out of memory");
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    if (ctxrt_model_run(m, f, all_nodes, out, &err)) {
      free(us);
      return fail("error", err.msg);
    }
    us[r] = now_us() - t0;
  }
  qsort(us, (size_t)reps, sizeof *us, cmp);
  printf("time_us: median=%.2f p10=%.2f p90=%.2f runs=%d\n", us[reps / 2], us[reps / 10],
         us[reps - 1 - reps / 10], reps);
  free(us);
  return 0;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *model = NULL, *weights = NULL, *input = NULL, *format = "ptb";
  const char *output = NULL;
  int all_nodes = 0, reps = 0;
  if (argc == 2 && !strcmp(argv[1], "--probe")) return probe();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--weights") && v) weights = v, i++;
    else if (!strcmp(a, "--input") && v) input = v, i++;
    else if (!strcmp(a, "--format") && v) format = v, i++;
    else if (!strcmp(a, "--output") && v) output = v, i++;
    else if (!strcmp(a, "--repeat") && v) reps = atoi(v), i++;
    else if (!strcmp(a, "--all-nodes")) all_nodes = 1;
    else if (!dir && a[0] != '-') dir = a;
    else if (!model && a[0] != '-') model = a;
    else dir = NULL, i = argc;
  }
  if (!dir || !model || !input || reps < 0) {
    fprintf(stderr, "usage: gpu_run OUTDIR MODEL --input FILE --format ptb|nodes [--weights W] "
                    "[--all-nodes] [--output OUT.npy] [--repeat R]\n       gpu_run --probe\n");
    return 2;
  }
  char path[4096], sym[256];
  snprintf(path, sizeof path, "%s/lib%s.so", dir, model);
  snprintf(sym, sizeof sym, "%s_descriptor", model);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail("cannot load", dlerror());
  const void *(*descriptor)(void);
  *(void **)&descriptor = dlsym(lib, sym);
  if (!descriptor) return fail("no descriptor", dlerror());
  const CtxrtModelDesc *desc = descriptor();

  CtxrtError err;
  CtxrtForest *forest = NULL;
  CtxrtModel *m = NULL;
  float *out = NULL;
  int rc = 1;
  CtxrtStatus st = strcmp(format, "nodes") ? ctxrt_read_ptb_file(input, NULL, &forest, &err)
                                           : ctxrt_read_nodes_file(input, &forest, &err);
  if (!st) st = ctxrt_forest_validate(forest, &desc->spec, &err);
  if (!st) st = ctxrt_model_load(desc, weights, 0, &m, &err);
  if (st) {
    fail("error", err.msg);
    goto done;
  }
  int64_t rows = all_nodes ? forest->num_nodes : ctxrt_forest_outputs(forest, NULL);
  out = malloc(sizeof(float) * (size_t)(rows * desc->out_size + 1));
  if (!out) {
    fail("error", "out of memory");
    goto done;
  }
  int64_t shape[2] = {rows, desc->out_size};
  if (ctxrt_model_run(m, forest, all_nodes, out, &err) ||
      (output && ctxrt_npy_write_file(output, CTXRT_F32, out, 2, shape, &err))) {
    fail("error", err.msg);
    goto done;
  }
  rc = reps ? time_runs(m, forest, all_nodes, out, reps) : 0;
done:
  free(out);
  ctxrt_model_destroy(m);
  ctxrt_forest_destroy(forest);
  dlclose(lib);
  return rc;
}
