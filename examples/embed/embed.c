/* embed.c — a C program that runs a model compiled ahead of time by
 * `ctx build examples/treelstm.ctx -o OUTDIR`: it includes the generated
 * header, makes a model from a weights file (or the seeded defaults), runs it
 * on bracketed trees (SST-style, word ids at the leaves) and prints one line
 * per tree: its index and its output values.
 *
 *   embed [--weights W.safetensors] [--threads N] TREES.ptb
 *
 * The model runs on every core unless --threads N (or the environment
 * variable CTXRT_THREADS) says otherwise; the outputs are the same.
 *
 * Exit codes: 0 ok, 1 an error (printed with the library's message), 2 a bad
 * command line.
 */
#include "treelstm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file [path], malloc'd, its size in [*len]; NULL when unreadable. */
static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *data = NULL;
  size_t cap = 0;
  *len = 0;
  for (;;) {
    if (*len == cap) {
      char *grown = realloc(data, cap = cap ? 2 * cap : 4096);
      if (!grown) break;
      data = grown;
    }
    size_t got = fread(data + *len, 1, cap - *len, f);
    if (got == 0) break;
    *len += got;
  }
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  const char *weights = NULL, *trees = NULL;
  int threads = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc)
      weights = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!trees && argv[i][0] != '-')
      trees = argv[i];
    else
      trees = NULL, i = argc;
  }
  if (!trees) {
    fprintf(stderr, "usage: embed [--weights W.safetensors] [--threads N] TREES.ptb\n");
    return 2;
  }
  size_t len = 0;
  char *text = read_all(trees, &len);
  if (!text) {
    fprintf(stderr, "embed: cannot read '%s'\n", trees);
    return 1;
  }
  char err[512];
  treelstm_model *m = NULL;
  int rc = treelstm_create(weights, &m, err, sizeof err);
  if (rc == TREELSTM_OK) rc = treelstm_set_threads(m, threads, err, sizeof err);
  if (rc == TREELSTM_OK) rc = treelstm_run_ptb(m, text, len, err, sizeof err);
  if (rc != TREELSTM_OK) {
    fprintf(stderr, "embed: %s (code %d)\n", err, rc);
  } else {
    for (int64_t i = 0; i < treelstm_num_outputs(m); i++) {
      const float *row = treelstm_output(m, i);
      printf("%" PRId64 ":", i);
      for (int64_t v = 0; v < treelstm_output_size(); v++) printf(" %.9g", (double)row[v]);
      putchar('\n');
    }
  }
  treelstm_destroy(m);
  free(text);
  return rc == TREELSTM_OK ? 0 : 1;
}
