/* fuzz_ctxrt_nodes.c — libFuzzer target: the node-list reader, then validation
 * against specs for each kind (trees with words at leaves or everywhere, DAGs
 * with features, sequences) and a permissive one, the output nodes, and the
 * linearization by height and in balanced levels (CtxrtLinear.balance: any
 * DAG in any order, cycles an error), each dependency checked to lie in a
 * lower level. Anything but a clean return (crash, hang, leak, sanitizer
 * report) is a bug. */
#include "runtime/ctxrt.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  CtxrtForest *f;
  CtxrtError err;
  if (ctxrt_read_nodes_buffer("fuzz", (const char *)data, size, &f, &err) != CTXRT_OK)
    return 0;
  static const int64_t word[] = {16, 0};
  const CtxrtSpec specs[] = {
      {CTXRT_TREE, 2, 2, 1, CTXRT_VALUES_LEAVES, word},
      {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, word},
      {CTXRT_DAG, 2, 0, 2, CTXRT_VALUES_ALL, NULL},
      {CTXRT_SEQUENCE, 0, 0, 2, CTXRT_VALUES_ALL, word},
      {CTXRT_KIND_ANY, 0, 0, 0, CTXRT_VALUES_LEAVES, NULL},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    ctxrt_forest_validate(f, &specs[i], &err);
  int32_t *out = malloc(((size_t)f->num_nodes + 1) * sizeof *out);
  if (out && ctxrt_forest_outputs(f, out) > f->num_nodes) abort();
  free(out);
  CtxrtLinear *lin;
  if (ctxrt_linear_create(NULL, 0, 0, &lin, &err) == CTXRT_OK) {
    for (int balance = 0; balance < 2; balance++) {
      lin->balance = (unsigned char)balance;
      if (ctxrt_linear_fill(lin, f, 0, 0, &err) != CTXRT_OK) continue;
      for (int32_t l = 0, w = 0; l < lin->num_levels; l++)
        for (; w < lin->level_start[l + 1]; w++)
          for (int32_t k = 0; k < lin->num_deps[w]; k++)
            if (lin->dep[(size_t)w * (size_t)lin->max_deps + (size_t)k] >= lin->level_start[l])
              abort();
    }
    ctxrt_linear_destroy(lin);
  }
  ctxrt_forest_destroy(f);
  return 0;
}
