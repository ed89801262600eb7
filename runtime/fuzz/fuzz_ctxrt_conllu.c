/* fuzz_ctxrt_conllu.c — libFuzzer target: the vocabulary reader, the CoNLL-U
 * reader and validation. The input is VOCAB '\0' TEXT when it holds a NUL byte
 * (a vocabulary is read from the first part and used), else just TEXT (word
 * columns read as integer ids); the byte after the NUL, when it is '1'..'4',
 * picks the word column. A read that succeeds is validated against childsum's
 * spec and a permissive one; a valid tree is linearized, and again with each
 * level's nodes in position and arity groups. Anything but a clean return
 * (crash, hang, leak, sanitizer report) is a bug. */
#include "runtime/ctxrt.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nul = memchr(text, '\0', size);
  CtxrtVocab *vocab = NULL;
  CtxrtError err;
  int column = 1;
  if (nul) {
    size_t vlen = (size_t)(nul - text);
    if (ctxrt_vocab_read_buffer("vocab", text, vlen, &vocab, &err) != CTXRT_OK) return 0;
    text += vlen + 1;
    size -= vlen + 1;
    if (size > 0 && text[0] >= '1' && text[0] <= '4') column = text[0] - '0', text++, size--;
  }
  CtxrtForest *f;
  if (ctxrt_read_conllu_buffer("fuzz", text, size, vocab, column, &f, &err) == CTXRT_OK) {
    static const int64_t bound[] = {8};
    const CtxrtSpec childsum = {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, bound};
    const CtxrtSpec any = {CTXRT_KIND_ANY, 0, 0, 1, CTXRT_VALUES_ALL, NULL};
    if (ctxrt_forest_validate(f, &childsum, &err) == CTXRT_OK) {
      CtxrtLinear *lin;
      if (ctxrt_linear_create(f, 1, 8, &lin, &err) == CTXRT_OK) {
        const int32_t groups[] = {CTXRT_POSITION_GROUP(0), 2, CTXRT_POSITION_GROUP(1)};
        if (ctxrt_linear_set_groups(lin, groups, 3, &err) == CTXRT_OK)
          ctxrt_linear_fill(lin, f, 1, 8, &err);
        ctxrt_linear_destroy(lin);
      }
    }
    ctxrt_forest_validate(f, &any, &err);
    ctxrt_forest_destroy(f);
  }
  ctxrt_vocab_destroy(vocab);
  return 0;
}
