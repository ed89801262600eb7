/* fuzz_ctxrt_genspec.c — libFuzzer target: the generator spec parser. A spec that
 * parses and is small enough is generated and validated against its own kind;
 * its canonical form must parse to the same spec. Anything but a clean return
 * (crash, hang, leak, sanitizer report, a generated forest that fails
 * validation) is a bug. */
#include "runtime/ctxrt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Nodes per batch above which generating is skipped, to keep runs fast. */
#define FUZZ_MAX_NODES 20000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  CtxrtGenSpec spec, again;
  CtxrtError err;
  if (ctxrt_gen_parse(text, &spec, &err) == CTXRT_OK) {
    char canon[512];
    if (ctxrt_gen_format(&spec, canon, sizeof canon) >= sizeof canon) abort();
    if (ctxrt_gen_parse(canon, &again, &err) != CTXRT_OK || again.size != spec.size ||
        again.size2 != spec.size2 || again.seed != spec.seed ||
        again.vocab != spec.vocab || again.features != spec.features)
      abort();
    int64_t per = spec.shape == CTXRT_GEN_COMPLETE ? ((int64_t)2 << spec.size)
                  : spec.shape == CTXRT_GEN_GRID   ? spec.size * spec.size2
                                                   : 2 * spec.size;
    int64_t count = spec.count ? spec.count : 1;
    int64_t each = 1 + (spec.vocab > 0) + spec.features;
    CtxrtForest *f;
    if (per * count * each <= FUZZ_MAX_NODES &&
        ctxrt_generate(&spec, &f, &err) == CTXRT_OK) {
      const CtxrtSpec check = {
          f->kind, 0, 0, (spec.vocab > 0) + (int32_t)spec.features, CTXRT_VALUES_LEAVES,
          NULL};
      if (ctxrt_forest_validate(f, &check, &err) != CTXRT_OK) abort();
      ctxrt_forest_destroy(f);
    }
  }
  free(text);
  return 0;
}
