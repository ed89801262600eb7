/* fuzz_ctxrt_nodes.c — libFuzzer target: the node-list reader, then validation
 * against specs for each kind (trees with words at leaves or everywhere, DAGs
 * with features, sequences) and a permissive one, and the output nodes. Anything but a
 * clean return (crash, hang, leak, sanitizer report) is a bug. */
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
  ctxrt_forest_destroy(f);
  return 0;
}
