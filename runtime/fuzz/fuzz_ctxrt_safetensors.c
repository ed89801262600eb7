/* fuzz_ctxrt_safetensors.c — libFuzzer target: the safetensors reader. A file
 * that reads is checked against a fixed parameter list, written back, and read
 * again, which must succeed with the same tensors. Anything but a clean return
 * (crash, hang, leak, sanitizer report, failed round trip) is a bug. */
#include "runtime/ctxrt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  CtxrtWeights *w, *again;
  CtxrtError err;
  if (ctxrt_st_read_buffer("fuzz", data, size, &w, &err) != CTXRT_OK) return 0;
  static const CtxrtParam params[] = {{"W", 2, {2, 3}}, {"b", 1, {3}}};
  ctxrt_weights_check(w, "fuzz", params, 2, &err);
  unsigned char *buf;
  size_t len;
  if (ctxrt_st_write_buffer(w, &buf, &len, &err) == CTXRT_OK) {
    if (ctxrt_st_read_buffer("again", buf, len, &again, &err) != CTXRT_OK) abort();
    if (again->count != w->count) abort();
    for (int32_t i = 0; i < w->count; i++)
      if (strcmp(again->tensors[i].name, w->tensors[i].name) != 0 ||
          memcmp(again->tensors[i].data, w->tensors[i].data,
                 (size_t)w->tensors[i].numel * sizeof(float)) != 0)
        abort();
    ctxrt_weights_destroy(again);
    free(buf);
  }
  ctxrt_weights_destroy(w);
  return 0;
}
