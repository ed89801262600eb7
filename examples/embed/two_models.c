/* two_models.c — two libraries of one model, built with different dims and
 * names, in one program:
 *
 *   ctx build examples/treelstm.ctx -D H=64 --name a -o out_a
 *   ctx build examples/treelstm.ctx -D H=128 --name b -o out_b
 *   cc -I out_a -I out_b two_models.c out_a/liba.a out_b/libb.a \
 *      -ljansson -lm -lpthread -o two_models
 *   two_models TREES.ptb
 *
 * Every symbol of a library starts with its name (a_, b_, and the kernels'
 * ctx_a_kernel, ctx_b_kernel); the runtime inside both archives is the same
 * code, linked once. Prints each tree's outputs as `a I: ...` then `b I: ...`.
 * Exit codes: 0 ok, 1 an error, 2 a bad command line.
 */
#include "a.h"
#include "b.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: two_models TREES.ptb\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  static char text[1 << 20];
  size_t len = f ? fread(text, 1, sizeof text, f) : 0;
  if (f) fclose(f);
  if (!f || len == sizeof text) {
    fprintf(stderr, "two_models: cannot read '%s' (or larger than 1 MiB)\n", argv[1]);
    return 1;
  }
  char err[512];
  a_model *ma = NULL;
  b_model *mb = NULL;
  int rc = a_create(NULL, &ma, err, sizeof err);
  if (rc == A_OK) rc = b_create(NULL, &mb, err, sizeof err);
  if (rc == A_OK) rc = a_run_ptb(ma, text, len, err, sizeof err);
  if (rc == A_OK) rc = b_run_ptb(mb, text, len, err, sizeof err);
  if (rc != A_OK) fprintf(stderr, "two_models: %s\n", err);
  for (int64_t i = 0; rc == A_OK && i < a_num_outputs(ma); i++) {
    printf("a %" PRId64 ":", i);
    for (int64_t v = 0; v < a_output_size(); v++) printf(" %.9g", (double)a_output(ma, i)[v]);
    printf("\nb %" PRId64 ":", i);
    for (int64_t v = 0; v < b_output_size(); v++) printf(" %.9g", (double)b_output(mb, i)[v]);
    putchar('\n');
  }
  a_destroy(ma);
  b_destroy(mb);
  return rc == A_OK ? 0 : 1;
}
