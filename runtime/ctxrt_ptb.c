/* ctxrt_ptb.c — the bracketed-tree reader (Penn / Stanford Sentiment Treebank
 * form, one tree per line; see docs/formats.md).
 *
 * Grammar of one non-blank, non-comment line (tokens: '(', ')', and runs of
 * characters other than whitespace and parentheses):
 *     line    := tree END-OF-LINE
 *     tree    := '(' LABEL content ')'
 *     content := WORD | tree { tree }
 * A node whose content is a WORD is a leaf carrying one value, its word id; other
 * nodes are internal and carry none. Nodes are numbered in pre-order (the order of
 * their opening parentheses); a node's id is its position within its tree.
 *
 * The parser is a state machine with an explicit stack of open nodes, so nesting
 * depth costs heap memory (bounded by the input size), never C stack. It records
 * each node's parent and builds the children lists once at the end. Guarantees:
 * the first malformed line stops the read with a message naming that line.
 */
#include "ctxrt_int.h"

#include <stdlib.h>
#include <string.h>

typedef enum TokKind { TOK_OPEN, TOK_CLOSE, TOK_WORD, TOK_EOL } TokKind;

typedef struct Tok {
  TokKind kind;
  const char *s;
  size_t len;
} Tok;

typedef struct PtbReader {
  const char *name;
  const CtxrtVocab *vocab;
  CtxrtError *err;
  CtxrtBuild b;
  CtxrtVec parent;    /* int32_t per node: its parent, or -1 */
  CtxrtVec stack;     /* int32_t: the open nodes, innermost last */
  int32_t line;       /* current line, 1-based */
  int32_t tree_begin; /* global index of the current tree's root */
} PtbReader;

/* The next token of the line [s, s + n) from [*i]. */
static Tok next_tok(const char *s, size_t n, size_t *i) {
  while (*i < n && ctxrt__is_blank(s[*i]))
    ++*i;
  Tok t = {TOK_EOL, s + *i, 0};
  if (*i == n) return t;
  if (s[*i] == '(' || s[*i] == ')') {
    t.kind = s[*i] == '(' ? TOK_OPEN : TOK_CLOSE;
    t.len = 1;
    ++*i;
    return t;
  }
  t.kind = TOK_WORD;
  while (*i < n && !ctxrt__is_blank(s[*i]) && s[*i] != '(' && s[*i] != ')')
    ++*i, ++t.len;
  return t;
}

/* "expected WHAT, found TOKEN". */
static CtxrtStatus expected(PtbReader *r, const char *what, Tok t) {
  char q[CTXRT_QUOTE_SIZE];
  if (t.kind == TOK_EOL)
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                      "expected %s, found end of line", what);
  return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line, "expected %s, found '%s'",
                    what, ctxrt__quote(q, t.s, t.len));
}

static void open_node(PtbReader *r) {
  int32_t index = (int32_t)r->b.id.len;
  ctxrt__build_node(&r->b, index - r->tree_begin, r->line);
  int32_t *p = ctxrt__vec_grow(&r->parent, sizeof *p, 1, &r->b.failed);
  if (p) *p = r->stack.len ? CTXRT_AT(r->stack, int32_t, r->stack.len - 1) : -1;
  int32_t *top = ctxrt__vec_grow(&r->stack, sizeof *top, 1, &r->b.failed);
  if (top) *top = index;
}

/* The leaf word [t] of the node just opened: its id becomes the node's value. */
static CtxrtStatus leaf_word(PtbReader *r, Tok t) {
  char q[CTXRT_QUOTE_SIZE];
  int32_t node = (int32_t)r->b.id.len - 1 - r->tree_begin;
  int structure = (int)r->b.struct_line.len;
  int64_t id;
  if (r->vocab) {
    id = ctxrt_vocab_word_id(r->vocab, t.s, t.len);
    if (id < 0)
      return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name, r->line,
                        "structure %d, node %d: unknown word '%s'", structure, (int)node,
                        ctxrt__quote(q, t.s, t.len));
  } else {
    int ok = ctxrt__parse_int(t.s, t.len, &id);
    if (ok == 0)
      return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                        "structure %d, node %d: word '%s' is not an integer id (no "
                        "vocabulary given)",
                        structure, (int)node, ctxrt__quote(q, t.s, t.len));
    if (ok < 0)
      return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                        "structure %d, node %d: word id '%s' out of range", structure,
                        (int)node, ctxrt__quote(q, t.s, t.len));
  }
  ctxrt__build_value(&r->b, (double)id, 1);
  return CTXRT_OK;
}

/* Pops the innermost open node; returns whether the tree is complete. */
static int close_node(PtbReader *r) {
  r->stack.len--;
  return r->stack.len == 0;
}

typedef enum PtbState {
  S_LABEL,
  S_AFTER_LABEL,
  S_LEAF_CLOSE,
  S_AFTER_CHILD,
  S_DONE
} PtbState;

/* One step of the state machine: consumes [t] in state [*state]. */
static CtxrtStatus step(PtbReader *r, PtbState *state, Tok t) {
  switch (*state) {
  case S_LABEL:
    if (t.kind != TOK_WORD) return expected(r, "a label", t);
    ctxrt__build_label(&r->b, t.s, t.len);
    *state = S_AFTER_LABEL;
    return CTXRT_OK;
  case S_AFTER_LABEL:
    if (t.kind == TOK_OPEN) {
      open_node(r);
      *state = S_LABEL;
      return CTXRT_OK;
    }
    if (t.kind != TOK_WORD) return expected(r, "a word or '('", t);
    *state = S_LEAF_CLOSE;
    return leaf_word(r, t);
  case S_LEAF_CLOSE:
    if (t.kind != TOK_CLOSE) return expected(r, "')'", t);
    *state = close_node(r) ? S_DONE : S_AFTER_CHILD;
    return CTXRT_OK;
  case S_AFTER_CHILD:
    if (t.kind == TOK_OPEN) {
      open_node(r);
      *state = S_LABEL;
    } else if (t.kind == TOK_CLOSE) {
      *state = close_node(r) ? S_DONE : S_AFTER_CHILD;
    } else {
      return expected(r, "'(' or ')'", t);
    }
    return CTXRT_OK;
  case S_DONE:
    if (t.kind != TOK_EOL) return expected(r, "end of line after the tree", t);
    return CTXRT_OK;
  }
  return CTXRT_OK;
}

/* Parses one tree from the line [s, s + n), which holds something other than
 * blanks and a comment. */
static CtxrtStatus parse_line(PtbReader *r, const char *s, size_t n) {
  size_t i = 0;
  Tok t = next_tok(s, n, &i);
  if (t.kind != TOK_OPEN) return expected(r, "'('", t);
  r->tree_begin = (int32_t)r->b.id.len;
  r->stack.len = 0;
  ctxrt__build_struct(&r->b, r->line);
  open_node(r);
  PtbState state = S_LABEL;
  for (;;) {
    t = next_tok(s, n, &i);
    CtxrtStatus st = step(r, &state, t);
    if (st != CTXRT_OK) return st;
    if (r->b.failed) return ctxrt__nomem(r->err, r->name);
    if (t.kind == TOK_EOL) return CTXRT_OK;
  }
}

/* Whether the line [s, s + n) is blank or a comment. */
static int skip_line(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && ctxrt__is_blank(s[i]))
    i++;
  return i == n || s[i] == '#';
}

/* One line of input: a tree, or a blank or comment line. */
static CtxrtStatus ptb_line(void *r, const char *s, size_t n) {
  return skip_line(s, n) ? CTXRT_OK : parse_line(r, s, n);
}

CtxrtStatus ctxrt_read_ptb_buffer(const char *name, const char *data, size_t len,
                                  const CtxrtVocab *vocab, CtxrtForest **out,
                                  CtxrtError *err) {
  *out = NULL;
  if (len > CTXRT_MAX_INPUT)
    return ctxrt__err(err, CTXRT_ERR_NOMEM, name, 0, "input too large");
  PtbReader r = {name, vocab, err, {0}, {0}, {0}, 0, 0};
  ctxrt__build_init(&r.b, CTXRT_TREE, 1);
  CtxrtStatus st = ctxrt__each_line(data, len, &r.line, ptb_line, &r);
  if (st == CTXRT_OK) {
    ctxrt__build_deps_from_parents(&r.b, r.parent.data);
    st = ctxrt__build_finish(&r.b, name, out, err);
  } else {
    ctxrt__build_free(&r.b);
  }
  ctxrt__vec_free(&r.parent);
  ctxrt__vec_free(&r.stack);
  return st;
}

CtxrtStatus ctxrt_read_ptb_file(const char *path, const CtxrtVocab *vocab,
                                CtxrtForest **out, CtxrtError *err) {
  char *data;
  size_t len;
  *out = NULL;
  CtxrtStatus st = ctxrt__read_file(path, &data, &len, err);
  if (st != CTXRT_OK) return st;
  st = ctxrt_read_ptb_buffer(path, data, len, vocab, out, err);
  free(data);
  return st;
}
