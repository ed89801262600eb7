/* tuple_main.c — the per-field API of a library built from a model with a
 * tuple output (lang-tests/run/output_tuple.ctx, model `pair`, fields h and
 * c): runs the bracketed trees of argv[1] and prints each row's fields as
 *   ROW h: V V V
 *   ROW c: V V V
 * for tuple_test.py to compare with `ctx run --output OUT.npz`. */
#include "pair.h"

#include <stdio.h>
#include <stdlib.h>

static int print_field(const char *name, const float *v, int64_t n, int64_t row) {
  if (!v) return 1;
  printf("%lld %s:", (long long)row, name);
  for (int64_t i = 0; i < n; i++) printf(" %.9g", v[i]);
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text, f);
  fclose(f);
  char err[512];
  pair_model *m = NULL;
  if (pair_create(NULL, &m, err, sizeof err) || pair_run_ptb(m, text, len, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  /* the fields lie side by side in the row that pair_output returns */
  if (pair_output_h_offset() != 0 || pair_output_c_offset() != pair_output_h_size() ||
      pair_output_h_size() + pair_output_c_size() != pair_output_size())
    return 3;
  int bad = 0;
  for (int64_t r = 0; r < pair_num_outputs(m); r++) {
    if (pair_output_h(m, r) != pair_output(m, r) ||
        pair_output_c(m, r) != pair_output(m, r) + pair_output_c_offset())
      bad = 1;
    bad |= print_field("h", pair_output_h(m, r), pair_output_h_size(), r);
    bad |= print_field("c", pair_output_c(m, r), pair_output_c_size(), r);
  }
  if (pair_output_h(m, pair_num_outputs(m)) || pair_output_c(m, -1)) bad = 1;
  pair_destroy(m);
  return bad ? 4 : 0;
}
