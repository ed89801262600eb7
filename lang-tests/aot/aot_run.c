/* aot_run.c — runs a model that `ctx build` compiled, for the differential
 * test of ahead-of-time libraries (differential.py --aot-run).
 *
 *   aot_run OUTDIR MODEL --weights W.safetensors --input FILE --format ptb|nodes
 *           [--vocab FILE] [--all-nodes] [--threads N] --output OUT.npy
 *
 * It loads OUTDIR/libMODEL.so, takes the model's descriptor from
 * MODEL_descriptor() and runs it through libctxrt like `ctx run` does: read
 * and validate the input, load the weights, one run, the outputs (float32)
 * as .npy [rows, out_size]. Errors: the library's message, exit 1; a bad
 * command line, exit 2.
 */
#include "runtime/ctxrt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "aot_run: %s: %s\n", what, msg);
  return 1;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *model = NULL, *weights = NULL, *input = NULL, *format = "ptb";
  const char *vocab_path = NULL, *output = NULL;
  int all_nodes = 0, threads = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--weights") && v) weights = v, i++;
    else if (!strcmp(a, "--input") && v) input = v, i++;
    else if (!strcmp(a, "--format") && v) format = v, i++;
    else if (!strcmp(a, "--vocab") && v) vocab_path = v, i++;
    else if (!strcmp(a, "--output") && v) output = v, i++;
    else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
    else if (!strcmp(a, "--all-nodes")) all_nodes = 1;
    else if (!dir && a[0] != '-') dir = a;
    else if (!model && a[0] != '-') model = a;
    else dir = NULL, i = argc;
  }
  if (!dir || !model || !input || !output) {
    fprintf(stderr, "usage: aot_run OUTDIR MODEL --weights W --input FILE --format ptb|nodes "
                    "[--vocab FILE] [--all-nodes] [--threads N] --output OUT.npy\n");
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
  CtxrtVocab *vocab = NULL;
  CtxrtForest *forest = NULL;
  CtxrtModel *m = NULL;
  float *out = NULL;
  int rc = 1;
  CtxrtStatus st = vocab_path ? ctxrt_vocab_read_file(vocab_path, &vocab, &err) : CTXRT_OK;
  if (!st)
    st = strcmp(format, "nodes") ? ctxrt_read_ptb_file(input, vocab, &forest, &err)
                                  : ctxrt_read_nodes_file(input, &forest, &err);
  if (!st) st = ctxrt_forest_validate(forest, &desc->spec, &err);
  if (!st) st = ctxrt_model_load(desc, weights, 0, &m, &err);
  if (!st) st = ctxrt_model_set_threads(m, threads, &err);
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
      ctxrt_npy_write_file(output, CTXRT_F32, out, 2, shape, &err)) {
    fail("error", err.msg);
    goto done;
  }
  rc = 0;
done:
  free(out);
  ctxrt_model_destroy(m);
  ctxrt_forest_destroy(forest);
  ctxrt_vocab_destroy(vocab);
  dlclose(lib);
  return rc;
}
