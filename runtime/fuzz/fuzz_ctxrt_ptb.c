/* fuzz_ctxrt_ptb.c — libFuzzer target: the vocabulary reader, the bracketed-tree
 * reader and validation. The input is VOCAB '\0' TREES when it holds a NUL byte
 * (a vocabulary is read from the first part and used), else just TREES. A read
 * that succeeds is validated against a binary-tree spec and a permissive one.
 * Anything but a clean return (crash, hang, leak, sanitizer report) is a bug. */
#include "runtime/ctxrt.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nul = memchr(text, '\0', size);
  CtxrtVocab *vocab = NULL;
  CtxrtError err;
  if (nul) {
    size_t vlen = (size_t)(nul - text);
    if (ctxrt_vocab_read_buffer("vocab", text, vlen, &vocab, &err) != CTXRT_OK) return 0;
    text += vlen + 1;
    size -= vlen + 1;
  }
  CtxrtForest *f;
  if (ctxrt_read_ptb_buffer("fuzz", text, size, vocab, &f, &err) == CTXRT_OK) {
    static const int64_t bound[] = {8};
    const CtxrtSpec binary = {CTXRT_TREE, 2, 2, 1, CTXRT_VALUES_LEAVES, bound};
    const CtxrtSpec any = {CTXRT_KIND_ANY, 0, 0, 1, CTXRT_VALUES_ALL, NULL};
    ctxrt_forest_validate(f, &binary, &err);
    ctxrt_forest_validate(f, &any, &err);
    for (int32_t n = 0; n < f->num_nodes; n++)
      (void)ctxrt_forest_label(f, n);
    ctxrt_forest_destroy(f);
  }
  ctxrt_vocab_destroy(vocab);
  return 0;
}
