/* aot_time.c — times a model compiled ahead of time by `ctx build`.
 *
 * It loads OUTDIR/libMODEL.so, takes the model's descriptor from
 * MODEL_descriptor() (the generated header's hook for programs that drive
 * libctxrt themselves), and runs it the way `ctx run --time` runs the JIT's
 * kernel: the input split into batches of --batch structures, every batch
 * parsed and validated before timing, one warm-up pass, then --repeat passes,
 * each batch timed from parsed structures in memory to all root outputs
 * (ctxrt_model_run: linearization included). It prints
 *   time: median_ms=M p10_ms=P p90_ms=Q batches=N batch_size=B
 * and with --output writes the root outputs of the last pass as float32 .npy.
 *
 * usage: aot_time OUTDIR MODEL --input FILE [--weights W.safetensors]
 *                 [--batch B] [--repeat R] [--threads T] [--output OUT.npy]
 */
#include "bench/common/bench_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  bench_prog = "aot_time";
  const char *dir = NULL, *model = NULL, *input = NULL, *weights = NULL, *output = NULL;
  int batch = 1, repeat = 5, threads = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--input") && v) input = v, i++;
    else if (!strcmp(a, "--weights") && v) weights = v, i++;
    else if (!strcmp(a, "--output") && v) output = v, i++;
    else if (!strcmp(a, "--batch") && v) batch = atoi(v), i++;
    else if (!strcmp(a, "--repeat") && v) repeat = atoi(v), i++;
    else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
    else if (!dir && a[0] != '-') dir = a;
    else if (!model && a[0] != '-') model = a;
    else bench_die("bad argument", a);
  }
  if (!dir || !model || !input || batch < 1 || repeat < 1)
    bench_die("usage: aot_time OUTDIR MODEL --input FILE [--weights W] [--batch B] "
              "[--repeat R] [--threads T] [--output OUT.npy]", NULL);
  char path[4096], sym[256];
  snprintf(path, sizeof path, "%s/lib%s.so", dir, model);
  snprintf(sym, sizeof sym, "%s_descriptor", model);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) bench_die("cannot load", dlerror());
  const void *(*descriptor)(void);
  *(void **)&descriptor = dlsym(lib, sym);
  if (!descriptor) bench_die("no descriptor", dlerror());
  const CtxrtModelDesc *desc = descriptor();

  CtxrtError err;
  CtxrtModel *m;
  if (ctxrt_model_load(desc, weights, 0, &m, &err)) bench_die("model", err.msg);
  if (ctxrt_model_set_threads(m, threads, &err)) bench_die("threads", err.msg);
  size_t len = strlen(input);
  bool ptb = len > 4 && !strcmp(input + len - 4, ".ptb");
  int nb;
  CtxrtForest **batches = bench_read_batches(input, ptb, batch, &nb);
  size_t total = 0;
  for (int i = 0; i < nb; i++) {
    if (ctxrt_forest_validate(batches[i], &desc->spec, &err)) bench_die("validate", err.msg);
    total += (size_t)ctxrt_forest_outputs(batches[i], NULL);
  }
  size_t size = (size_t)desc->out_size;
  float *out = bench_xmalloc(sizeof(float) * (total + 1) * size);
  double *ms = bench_xmalloc(sizeof *ms * (size_t)nb * (size_t)repeat);
  for (int r = -1; r < repeat; r++) /* r = -1: the warm-up pass */
    for (int i = 0, row = 0; i < nb; i++) {
      double t0 = bench_now_ms();
      if (ctxrt_model_run(m, batches[i], 0, out + (size_t)row * size, &err))
        bench_die("run", err.msg);
      if (r >= 0) ms[r * nb + i] = bench_now_ms() - t0;
      row += ctxrt_forest_outputs(batches[i], NULL);
    }
  bench_print_times(ms, nb * repeat, batch);
  if (output) {
    int64_t shape[2] = {(int64_t)total, (int64_t)size};
    if (ctxrt_npy_write_file(output, CTXRT_F32, out, 2, shape, &err)) bench_die("output", err.msg);
  }
  for (int i = 0; i < nb; i++) ctxrt_forest_destroy(batches[i]);
  free(batches);
  free(out);
  free(ms);
  ctxrt_model_destroy(m);
  dlclose(lib);
  return 0;
}
