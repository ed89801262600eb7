/* ctxrt_vocab.c — vocabularies: one word per line, id = line number from 0,
 * looked up by binary search in the ids sorted by word.
 *
 * Guarantees: reading costs O(n log n) comparisons and a lookup O(log n),
 * whatever the words (a hash table would let a crafted file make reading
 * quadratic); every word is stored once in a single pool, with memory linear in
 * the input. Lines are stripped of blanks at both ends; an empty line keeps its id
 * but matches nothing. A word that could never match a PTB token (whitespace, a
 * parenthesis or a NUL byte in it) and a word listed twice are errors naming the
 * line (for duplicates, the earliest line that repeats a word).
 */
#include "ctxrt_int.h"

#include <stdlib.h>
#include <string.h>

struct CtxrtVocab {
  int32_t count;
  int32_t nsorted; /* non-empty words */
  int32_t *sorted; /* ids of the non-empty words, sorted by word */
  int32_t *offset; /* [count + 1]: word i is pool[offset[i] .. offset[i+1]-1) */
  char *pool;      /* the words, each followed by a NUL */
  int32_t fallback; /* the id readers give unknown words; -1: none (an error) */
};

static size_t word_len(const CtxrtVocab *v, int32_t id) {
  return (size_t)(v->offset[id + 1] - v->offset[id] - 1);
}

/* Orders [word] of [len] bytes against word [id]: bytes, then length. */
static int compare(const CtxrtVocab *v, const char *word, size_t len, int32_t id) {
  size_t other = word_len(v, id), n = len < other ? len : other;
  int c = n ? memcmp(word, v->pool + v->offset[id], n) : 0;
  if (c) return c;
  return len < other ? -1 : len > other;
}

static int compare_ids(const void *ctx, int32_t x, int32_t y) {
  const CtxrtVocab *v = ctx;
  return compare(v, v->pool + v->offset[x], word_len(v, x), y);
}

int32_t ctxrt_vocab_size(const CtxrtVocab *v) {
  return v->count;
}

int32_t ctxrt_vocab_lookup(const CtxrtVocab *v, const char *word, size_t len) {
  int32_t lo = 0, hi = v->nsorted;
  if (len == 0) return -1;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    int c = compare(v, word, len, v->sorted[mid]);
    if (c == 0) return v->sorted[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return -1;
}

const char *ctxrt_vocab_word(const CtxrtVocab *v, int32_t id) {
  if (id < 0 || id >= v->count) return NULL;
  return v->pool + v->offset[id];
}

void ctxrt_vocab_destroy(CtxrtVocab *v) {
  if (!v) return;
  free(v->sorted);
  free(v->offset);
  free(v->pool);
  free(v);
}

/* Allocates a vocabulary with room for [lines] words and [len] bytes of text. */
static CtxrtVocab *vocab_alloc(size_t lines, size_t len) {
  CtxrtVocab *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->sorted = malloc((lines + 1) * sizeof *v->sorted);
  v->offset = malloc((lines + 1) * sizeof *v->offset);
  v->pool = malloc(len + lines + 1);
  if (!v->sorted || !v->offset || !v->pool) {
    ctxrt_vocab_destroy(v);
    return NULL;
  }
  v->offset[0] = 0;
  v->fallback = -1;
  return v;
}

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Whether the non-empty [word] could be a PTB token. */
static int is_token(const char *w, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (is_blank(w[i]) || w[i] == '(' || w[i] == ')' || w[i] == '\0') return 0;
  return 1;
}

/* Appends the (stripped) word on line [lineno] (0-based = its id). */
static CtxrtStatus add_word(CtxrtVocab *v, const char *name, int32_t lineno,
                            const char *w, size_t len, CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  if (len > 0 && !is_token(w, len))
    return ctxrt__err(err, CTXRT_ERR_SYNTAX, name, lineno + 1,
                      "word '%s' contains whitespace, a parenthesis or a NUL byte",
                      ctxrt__quote(q, w, len));
  int32_t at = v->offset[v->count];
  memcpy(v->pool + at, w, len);
  v->pool[at + (int32_t)len] = '\0';
  if (len > 0) v->sorted[v->nsorted++] = v->count;
  v->count++;
  v->offset[v->count] = at + (int32_t)len + 1;
  return CTXRT_OK;
}

/* Sorts the words and reports the earliest line that repeats one. */
static CtxrtStatus sort_words(CtxrtVocab *v, const char *name, CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  int32_t *tmp = malloc(((size_t)v->nsorted + 1) * sizeof *tmp);
  if (!tmp) return ctxrt__nomem(err, name);
  int32_t *s = ctxrt__sort_i32(v->sorted, tmp, (size_t)v->nsorted, compare_ids, v);
  if (s != v->sorted) memcpy(v->sorted, s, (size_t)v->nsorted * sizeof *s);
  free(tmp);
  int32_t first = -1, again = -1; /* stable sort: equal words in id order */
  for (int32_t i = 1; i < v->nsorted; i++)
    if (compare_ids(v, v->sorted[i - 1], v->sorted[i]) == 0 &&
        (again < 0 || v->sorted[i] < again)) {
      int32_t k = i - 1;
      while (k > 0 && compare_ids(v, v->sorted[k - 1], v->sorted[i]) == 0)
        k--;
      first = v->sorted[k];
      again = v->sorted[i];
    }
  if (again < 0) return CTXRT_OK;
  return ctxrt__err(
      err, CTXRT_ERR_SYNTAX, name, again + 1, "duplicate word '%s', first on line %d",
      ctxrt__quote(q, v->pool + v->offset[again], word_len(v, again)), (int)first + 1);
}

CtxrtStatus ctxrt_vocab_read_buffer(const char *name, const char *data, size_t len,
                                    CtxrtVocab **out, CtxrtError *err) {
  *out = NULL;
  if (len > CTXRT_MAX_INPUT)
    return ctxrt__err(err, CTXRT_ERR_NOMEM, name, 0, "input too large");
  size_t lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += data[i] == '\n';
  if (len && data[len - 1] != '\n') lines++;
  CtxrtVocab *v = vocab_alloc(lines, len);
  if (!v) return ctxrt__nomem(err, name);
  CtxrtStatus st = CTXRT_OK;
  for (size_t pos = 0; pos < len && st == CTXRT_OK;) {
    const char *nl = memchr(data + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - data) : len, from = pos, to = end;
    while (from < to && is_blank(data[from]))
      from++;
    while (to > from && is_blank(data[to - 1]))
      to--;
    st = add_word(v, name, v->count, data + from, to - from, err);
    pos = end + 1;
  }
  if (st == CTXRT_OK) st = sort_words(v, name, err);
  if (st != CTXRT_OK) {
    ctxrt_vocab_destroy(v);
    return st;
  }
  *out = v;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_vocab_read_file(const char *path, CtxrtVocab **out, CtxrtError *err) {
  char *data;
  size_t len;
  *out = NULL;
  CtxrtStatus st = ctxrt__read_file(path, &data, &len, err);
  if (st != CTXRT_OK) return st;
  st = ctxrt_vocab_read_buffer(path, data, len, out, err);
  free(data);
  return st;
}

CtxrtStatus ctxrt_vocab_set_fallback(CtxrtVocab *v, const char *word, size_t len,
                                     CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  int32_t id = ctxrt_vocab_lookup(v, word, len);
  if (id < 0)
    return ctxrt__err(err, CTXRT_ERR_INVALID, NULL, 0,
                      "the fallback word '%s' is not in the vocabulary",
                      ctxrt__quote(q, word, len));
  v->fallback = id;
  return CTXRT_OK;
}

int32_t ctxrt_vocab_word_id(const CtxrtVocab *v, const char *word, size_t len) {
  int32_t id = ctxrt_vocab_lookup(v, word, len);
  return id >= 0 ? id : v->fallback;
}
