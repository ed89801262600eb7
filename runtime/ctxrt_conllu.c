/* ctxrt_conllu.c — the CoNLL-U reader (Universal Dependencies treebanks: one
 * dependency tree per sentence; see docs/formats.md).
 *
 * The format, as far as ctx reads it. A sentence is a block of lines ended by
 * a blank line (or the end of the input); lines starting with '#' are
 * comments. Every other line has ten fields separated by single tabs:
 *     ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC
 * ID is a word's index in its sentence (1, 2, 3, ...), a multiword token's
 * range (`3-4`) or an empty node (`5.1`); the last two carry no word of the
 * tree and are skipped. HEAD is the index of the word's head, 0 for the root.
 * Every word becomes a node carrying one value, the id of one of its columns
 * (FORM by default) through the vocabulary, or the column read as an integer
 * word id without one; a node's children are its dependents in sentence
 * order.
 *
 * Heads may point forwards, so they are kept raw while a sentence is read and
 * resolved when it ends (a head outside the sentence is reported then, at the
 * word's line). The tree's shape (one root, no cycle) is ctxrt_forest_validate's
 * job, like every reader's. Guarantees: one pass, no recursion, memory linear
 * in the input; the first problem stops the read with its line.
 */
#include "ctxrt_int.h"

#include <stdlib.h>
#include <string.h>

enum { CONLLU_FIELDS = 10, FIELD_ID = 0, FIELD_HEAD = 6 };

static const char *const field_names[CONLLU_FIELDS] = {
    "ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC"};

typedef struct ConlluReader {
  const char *name;
  const CtxrtVocab *vocab;
  int column; /* the field holding the word */
  CtxrtError *err;
  CtxrtBuild b;
  CtxrtVec parent;  /* int32_t per node: its parent (global index), or -1 */
  CtxrtVec head;    /* int64_t per node of the current sentence: raw HEAD */
  int32_t line;
  int in_sentence;  /* a word, multiword or empty-node line seen since the blank */
  int32_t first;    /* global index of the current sentence's first node */
} ConlluReader;

typedef struct Field {
  const char *s;
  size_t len;
} Field;

static int sentence(const ConlluReader *r) {
  return (int)r->b.struct_line.len;
}

static CtxrtStatus quoted(ConlluReader *r, CtxrtStatus st, const char *fmt, Field f) {
  char q[CTXRT_QUOTE_SIZE];
  return ctxrt__err(r->err, st, r->name, r->line, fmt, ctxrt__quote(q, f.s, f.len));
}

/* Splits [s, s + n) at tabs into [fields]; returns the number of fields (up
 * to one past CONLLU_FIELDS: more are not counted further). */
static int split_fields(const char *s, size_t n, Field *fields) {
  int count = 0;
  size_t start = 0;
  for (size_t i = 0; i <= n && count <= CONLLU_FIELDS; i++) {
    if (i < n && s[i] != '\t') continue;
    if (count < CONLLU_FIELDS) fields[count] = (Field){s + start, i - start};
    count++;
    start = i + 1;
  }
  return count;
}

static int all_digits(const char *s, size_t len) {
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

/* Whether [id] is DIGITS SEP DIGITS: a multiword token (SEP '-') or an empty
 * node (SEP '.'). */
static int is_special_id(Field id, char sep) {
  const char *at = memchr(id.s, sep, id.len);
  if (!at) return 0;
  size_t left = (size_t)(at - id.s);
  return all_digits(id.s, left) && all_digits(at + 1, id.len - left - 1);
}

/* Resolves the heads of the sentence that just ended into parent links. */
static CtxrtStatus end_sentence(ConlluReader *r) {
  if (!r->in_sentence) return CTXRT_OK;
  r->in_sentence = 0;
  int32_t end = (int32_t)r->b.id.len, words = end - r->first;
  const int64_t *head = r->head.data;
  int32_t *parent = ctxrt__vec_grow(&r->parent, sizeof *parent, (size_t)words, &r->b.failed);
  if (!parent) return ctxrt__nomem(r->err, r->name);
  for (int32_t w = 0; w < words; w++) {
    if (head[w] > words)
      return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name,
                        CTXRT_AT(r->b.line, int32_t, r->first + w),
                        "structure %d, node %d: head %lld outside the sentence (%d word%s)",
                        sentence(r), (int)w + 1, (long long)head[w], (int)words,
                        words == 1 ? "" : "s");
    parent[w] = head[w] == 0 ? -1 : r->first + (int32_t)head[w] - 1;
  }
  r->head.len = 0;
  return CTXRT_OK;
}

/* The word id of [f], the word column of node [node] (1-based). */
static CtxrtStatus word_value(ConlluReader *r, int32_t node, Field f) {
  char q[CTXRT_QUOTE_SIZE];
  int64_t id;
  if (r->vocab) {
    id = ctxrt_vocab_word_id(r->vocab, f.s, f.len);
    if (id < 0)
      return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name, r->line,
                        "structure %d, node %d: unknown word '%s'", sentence(r), (int)node,
                        ctxrt__quote(q, f.s, f.len));
  } else {
    int ok = ctxrt__parse_int(f.s, f.len, &id);
    if (ok <= 0)
      return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                        "structure %d, node %d: word '%s' is not an integer id%s",
                        sentence(r), (int)node, ctxrt__quote(q, f.s, f.len),
                        ok < 0 ? " (out of range)" : " (no vocabulary given)");
  }
  ctxrt__build_value(&r->b, (double)id, 1);
  return CTXRT_OK;
}

/* A word line: node ID with [fields]. */
static CtxrtStatus word_line(ConlluReader *r, const Field *fields) {
  int32_t want = (int32_t)r->b.id.len - r->first + 1;
  int64_t id, head;
  int ok = ctxrt__parse_int(fields[FIELD_ID].s, fields[FIELD_ID].len, &id);
  if (ok == 0 || !all_digits(fields[FIELD_ID].s, fields[FIELD_ID].len))
    return quoted(r, CTXRT_ERR_SYNTAX,
                  "expected a word id (an integer, N-M or N.M), found '%s'", fields[FIELD_ID]);
  if (ok < 0 || id != want) {
    char q[CTXRT_QUOTE_SIZE];
    const Field f = fields[FIELD_ID];
    return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name, r->line,
                      "structure %d: expected word id %d, found '%s'", sentence(r),
                      (int)want, ctxrt__quote(q, f.s, f.len));
  }
  const Field h = fields[FIELD_HEAD];
  ok = all_digits(h.s, h.len) ? ctxrt__parse_int(h.s, h.len, &head) : 0;
  if (ok <= 0) {
    char q[CTXRT_QUOTE_SIZE];
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                      "structure %d, node %d: expected a head (0 or a word id), found '%s'",
                      sentence(r), (int)want, ctxrt__quote(q, h.s, h.len));
  }
  int64_t *raw = ctxrt__vec_grow(&r->head, sizeof *raw, 1, &r->b.failed);
  if (raw) *raw = head;
  ctxrt__build_node(&r->b, id, r->line);
  if (r->b.failed) return ctxrt__nomem(r->err, r->name);
  CtxrtStatus st = word_value(r, want, fields[r->column]);
  return st == CTXRT_OK && r->b.failed ? ctxrt__nomem(r->err, r->name) : st;
}

/* A line that is not blank and not a comment. */
static CtxrtStatus content_line(ConlluReader *r, const char *s, size_t n) {
  Field fields[CONLLU_FIELDS];
  int count = split_fields(s, n, fields);
  if (count != CONLLU_FIELDS)
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                      "expected %d tab-separated columns, found %s%d", CONLLU_FIELDS,
                      count > CONLLU_FIELDS ? "more than " : "",
                      count > CONLLU_FIELDS ? CONLLU_FIELDS : count);
  for (int i = 0; i < CONLLU_FIELDS; i++)
    if (fields[i].len == 0)
      return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                        "column %d (%s) is empty (write '_' for no value)", i + 1,
                        field_names[i]);
  if (!r->in_sentence) {
    r->in_sentence = 1;
    r->first = (int32_t)r->b.id.len;
    ctxrt__build_struct(&r->b, r->line);
  }
  if (is_special_id(fields[FIELD_ID], '-') || is_special_id(fields[FIELD_ID], '.'))
    return CTXRT_OK; /* multiword tokens and empty nodes are not words of the tree */
  return word_line(r, fields);
}

static CtxrtStatus conllu_line(void *ctx, const char *s, size_t n) {
  ConlluReader *r = ctx;
  if (n > 0 && s[n - 1] == '\r') n--; /* CRLF files read the same */
  size_t i = 0;
  while (i < n && ctxrt__is_blank(s[i]))
    i++;
  if (i == n) return end_sentence(r);
  if (s[0] == '#') return CTXRT_OK;
  return content_line(r, s, n);
}

int ctxrt_conllu_column(const char *name) {
  for (int i = 1; i <= 4; i++)
    if (strcmp(name, field_names[i]) == 0) return i;
  return -1;
}

CtxrtStatus ctxrt_read_conllu_buffer(const char *name, const char *data, size_t len,
                                     const CtxrtVocab *vocab, int column,
                                     CtxrtForest **out, CtxrtError *err) {
  *out = NULL;
  if (column < 1 || column > 4)
    return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0,
                      "CoNLL-U word column %d, expected 1 to 4 (FORM, LEMMA, UPOS, XPOS)",
                      column);
  if (len > CTXRT_MAX_INPUT)
    return ctxrt__err(err, CTXRT_ERR_NOMEM, name, 0, "input too large");
  ConlluReader r;
  memset(&r, 0, sizeof r);
  r.name = name;
  r.vocab = vocab;
  r.column = column;
  r.err = err;
  ctxrt__build_init(&r.b, CTXRT_TREE, 0);
  CtxrtStatus st = ctxrt__each_line(data, len, &r.line, conllu_line, &r);
  if (st == CTXRT_OK) st = end_sentence(&r);
  if (st == CTXRT_OK) {
    ctxrt__build_deps_from_parents(&r.b, r.parent.data);
    st = ctxrt__build_finish(&r.b, name, out, err);
  } else {
    ctxrt__build_free(&r.b);
  }
  ctxrt__vec_free(&r.parent);
  ctxrt__vec_free(&r.head);
  return st;
}

CtxrtStatus ctxrt_read_conllu_file(const char *path, const CtxrtVocab *vocab, int column,
                                   CtxrtForest **out, CtxrtError *err) {
  char *data;
  size_t len;
  *out = NULL;
  CtxrtStatus st = ctxrt__read_file(path, &data, &len, err);
  if (st != CTXRT_OK) return st;
  st = ctxrt_read_conllu_buffer(path, data, len, vocab, column, out, err);
  free(data);
  return st;
}
