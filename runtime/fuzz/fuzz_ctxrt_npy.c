/* fuzz_ctxrt_npy.c — libFuzzer target: the .npy reader. An array that reads is
 * written back and read again, which must give the same shape and bytes.
 * Anything but a clean return (crash, hang, leak, sanitizer report, failed round
 * trip) is a bug. */
#include "runtime/ctxrt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  CtxrtArray *a, *b;
  CtxrtError err;
  if (ctxrt_npy_read_buffer("fuzz", data, size, &a, &err) != CTXRT_OK) return 0;
  unsigned char *buf;
  size_t len;
  if (ctxrt_npy_write_buffer(a->dtype, a->data, a->ndim, a->shape, &buf, &len, &err) !=
      CTXRT_OK)
    abort();
  if (ctxrt_npy_read_buffer("again", buf, len, &b, &err) != CTXRT_OK) abort();
  size_t esz = a->dtype == CTXRT_F64 ? 8 : 4;
  if (b->dtype != a->dtype || b->ndim != a->ndim || b->numel != a->numel ||
      memcmp(b->shape, a->shape, sizeof a->shape[0] * (size_t)a->ndim) != 0 ||
      memcmp(b->data, a->data, esz * (size_t)a->numel) != 0)
    abort();
  ctxrt_array_destroy(b);
  ctxrt_array_destroy(a);
  free(buf);
  return 0;
}
