/* ctxrt_nodes.c — the node-list reader (trees with a word on every node,
 * variable arity, DAGs, sequences; see docs/formats.md).
 *
 * Grammar, line by line ('#' starts a comment to the end of the line; tokens are
 * separated by whitespace, and ':' is a token of its own even without spaces):
 *     line   := [ header | node ]
 *     header := 'tree' | 'dag' | 'sequence'
 *     node   := ID { VALUE } [ ':' { DEP } ]
 * A dependency may name a node listed later in its structure, so dependency ids
 * are kept raw while a structure is read; when it ends, its nodes are sorted by id
 * (a merge sort: no crafted ids can make this quadratic, as they could a hash
 * table), repeated ids are reported, and every dependency is resolved to a global
 * node index by binary search. Sequences list no dependencies: each element gets
 * the one before it.
 *
 * Guarantees: one pass over the input, no recursion, O(n log n) time and memory
 * linear in the input; reports, with the line, the first malformed line, then
 * (when its structure ends) a duplicate id (the earliest repeat) or unknown
 * dependency id (the first in node order); a dependency listed in a sequence and a
 * change of structure kind at once. Everything else (arity, cycles, roots, values)
 * is ctxrt_forest_validate's job.
 */
#include "ctxrt_int.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- lexer */

typedef struct Tok {
  const char *s;
  size_t len; /* 0: end of line */
} Tok;

static Tok next_tok(const char *s, size_t n, size_t *i) {
  while (*i < n && ctxrt__is_blank(s[*i]))
    ++*i;
  Tok t = {s + *i, 0};
  if (*i == n || s[*i] == '#') {
    *i = n;
    return t;
  }
  if (s[*i] == ':') {
    ++*i;
    t.len = 1;
    return t;
  }
  while (*i < n && !ctxrt__is_blank(s[*i]) && s[*i] != ':' && s[*i] != '#')
    ++*i, ++t.len;
  return t;
}

static int tok_is(Tok t, const char *word) {
  return t.len == strlen(word) && memcmp(t.s, word, t.len) == 0;
}

/* ---------------------------------------------------------------- reader */

typedef struct NodesReader {
  const char *name;
  CtxrtError *err;
  CtxrtBuild b;
  CtxrtVec raw;        /* int64_t: the current structure's dependency ids */
  CtxrtVec order, tmp; /* int32_t: the current structure's nodes, sorted by id */
  int32_t line;
  int32_t first;    /* global index of the current structure's first node */
  int32_t dep_base; /* b.dep.len when the current structure started */
} NodesReader;

static CtxrtStatus syntax(NodesReader *r, const char *fmt, Tok t) {
  char q[CTXRT_QUOTE_SIZE];
  return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line, fmt,
                    ctxrt__quote(q, t.s, t.len));
}

static int compare_ids(const void *ctx, int32_t x, int32_t y) {
  const int64_t *id = ctx;
  return id[x] < id[y] ? -1 : id[x] > id[y];
}

/* The global index of the node with id [key] in the current structure, or -1. */
static int32_t find_id(const NodesReader *r, int64_t key) {
  const int64_t *id = r->b.id.data;
  const int32_t *order = r->order.data;
  size_t lo = 0, hi = r->order.len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (id[order[mid]] == key) return order[mid];
    if (id[order[mid]] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Sorts the current structure's nodes by id and reports the earliest node that
 * repeats an id. */
static CtxrtStatus sort_ids(NodesReader *r) {
  size_t n = r->b.id.len - (size_t)r->first;
  int32_t *order = ctxrt__vec_grow(&r->order, sizeof *order, n, &r->b.failed);
  int32_t *tmp = ctxrt__vec_grow(&r->tmp, sizeof *tmp, n, &r->b.failed);
  if (!order || !tmp) return ctxrt__nomem(r->err, r->name);
  for (size_t i = 0; i < n; i++)
    order[i] = r->first + (int32_t)i;
  const int64_t *id = r->b.id.data;
  int32_t *sorted = ctxrt__sort_i32(order, tmp, n, compare_ids, id);
  if (sorted != order) memcpy(order, sorted, n * sizeof *order);
  int32_t again = -1, first = -1; /* stable: equal ids in node order */
  for (size_t i = 1, run = 0; i < n; i++) {
    if (id[order[i]] != id[order[i - 1]])
      run = i;
    else if (again < 0 || order[i] < again)
      again = order[i], first = order[run];
  }
  if (again < 0) return CTXRT_OK;
  return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name,
                    CTXRT_AT(r->b.line, int32_t, again),
                    "structure %d, node %lld: duplicate id, first listed on line %d",
                    (int)r->b.struct_line.len, (long long)id[again],
                    (int)CTXRT_AT(r->b.line, int32_t, first));
}

/* Checks ids and resolves the raw dependency ids of the structure that just
 * ended. */
static CtxrtStatus end_structure(NodesReader *r) {
  int s = (int)r->b.struct_line.len;
  if (s == 0) return CTXRT_OK;
  r->order.len = r->tmp.len = 0;
  CtxrtStatus st = sort_ids(r);
  if (st != CTXRT_OK || r->b.kind == CTXRT_SEQUENCE) return st;
  int32_t end = (int32_t)r->b.id.len;
  const int64_t *raw = r->raw.data;
  for (int32_t n = r->first; n < end; n++) {
    int32_t from = CTXRT_AT(r->b.dep_begin, int32_t, n) - r->dep_base;
    int32_t to = (n + 1 < end ? CTXRT_AT(r->b.dep_begin, int32_t, n + 1) - r->dep_base
                              : (int32_t)r->raw.len);
    for (int32_t k = from; k < to; k++) {
      int32_t dep = find_id(r, raw[k]);
      if (dep < 0)
        return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name,
                          CTXRT_AT(r->b.line, int32_t, n),
                          "structure %d, node %lld: unknown dependency %lld", s,
                          (long long)CTXRT_AT(r->b.id, int64_t, n), (long long)raw[k]);
      ctxrt__build_dep(&r->b, dep);
    }
  }
  return r->b.failed ? ctxrt__nomem(r->err, r->name) : CTXRT_OK;
}

/* A 'tree', 'dag' or 'sequence' line of kind [kind]; [after] is the next token. */
static CtxrtStatus header(NodesReader *r, CtxrtKind kind, Tok word, Tok after) {
  char q[CTXRT_QUOTE_SIZE], q2[CTXRT_QUOTE_SIZE];
  if (after.len)
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                      "unexpected '%s' after '%s'", ctxrt__quote(q, after.s, after.len),
                      ctxrt__quote(q2, word.s, word.len));
  CtxrtStatus st = end_structure(r);
  if (st != CTXRT_OK) return st;
  int s = (int)r->b.struct_line.len + 1;
  if (r->b.kind != CTXRT_KIND_ANY && r->b.kind != kind)
    return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name, r->line,
                      "structure %d is a '%s', but structure 1 is a '%s'", s,
                      ctxrt_kind_name(kind), ctxrt_kind_name(r->b.kind));
  r->b.kind = kind;
  ctxrt__build_struct(&r->b, r->line);
  r->first = (int32_t)r->b.id.len;
  r->dep_base = (int32_t)r->b.dep.len;
  r->raw.len = 0;
  return CTXRT_OK;
}

/* The node's id token [t]; starts the node. */
static CtxrtStatus node_start(NodesReader *r, Tok t) {
  int64_t id;
  int ok = ctxrt__parse_int(t.s, t.len, &id);
  if (r->b.struct_line.len == 0)
    return ok > 0 ? ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->name, r->line,
                               "expected 'tree', 'dag' or 'sequence' before the first "
                               "node")
                  : syntax(r, "expected 'tree', 'dag' or 'sequence', found '%s'", t);
  if (ok == 0 || t.s[0] == '+' || t.s[0] == '-')
    return syntax(r, "expected a node id (a non-negative integer), found '%s'", t);
  if (ok < 0) return syntax(r, "node id '%s' out of range", t);
  int32_t node = ctxrt__build_node(&r->b, id, r->line);
  if (r->b.failed) return ctxrt__nomem(r->err, r->name);
  if (r->b.kind == CTXRT_SEQUENCE) {
    if (node > r->first) ctxrt__build_dep(&r->b, node - 1);
  } else {
    CTXRT_AT(r->b.dep_begin, int32_t, node) = r->dep_base + (int32_t)r->raw.len;
  }
  return CTXRT_OK;
}

/* A dependency token [t] of the current node. */
static CtxrtStatus node_dep(NodesReader *r, Tok t) {
  int64_t id;
  int ok = ctxrt__parse_int(t.s, t.len, &id);
  if (ok == 0 || t.s[0] == '+' || t.s[0] == '-')
    return syntax(r, "expected a dependency id, found '%s'", t);
  if (ok < 0) return syntax(r, "dependency id '%s' out of range", t);
  if (r->b.kind == CTXRT_SEQUENCE)
    return ctxrt__err(r->err, CTXRT_ERR_INVALID, r->name, r->line,
                      "structure %d, node %lld: a sequence lists no dependencies (each "
                      "element depends on the one before it)",
                      (int)r->b.struct_line.len,
                      (long long)CTXRT_AT(r->b.id, int64_t, r->b.id.len - 1));
  int64_t *p = ctxrt__vec_grow(&r->raw, sizeof *p, 1, &r->b.failed);
  if (!p) return ctxrt__nomem(r->err, r->name);
  *p = id;
  return CTXRT_OK;
}

/* One line [s, s + n). */
static CtxrtStatus parse_line(NodesReader *r, const char *s, size_t n);

static CtxrtStatus nodes_line(void *r, const char *s, size_t n) { return parse_line(r, s, n); }

static CtxrtStatus parse_line(NodesReader *r, const char *s, size_t n) {
  size_t i = 0;
  Tok t = next_tok(s, n, &i);
  if (!t.len) return CTXRT_OK;
  static const struct {
    const char *word;
    CtxrtKind kind;
  } kinds[] = {{"tree", CTXRT_TREE}, {"dag", CTXRT_DAG}, {"sequence", CTXRT_SEQUENCE}};
  for (size_t k = 0; k < 3; k++)
    if (tok_is(t, kinds[k].word)) return header(r, kinds[k].kind, t, next_tok(s, n, &i));
  CtxrtStatus st = node_start(r, t);
  int deps = 0;
  while (st == CTXRT_OK && (t = next_tok(s, n, &i)).len) {
    if (deps) {
      st = node_dep(r, t);
    } else if (tok_is(t, ":")) {
      deps = 1;
    } else {
      double v;
      int is_int, ok = ctxrt__parse_number(t.s, t.len, &v, &is_int);
      if (ok == 0) return syntax(r, "expected a number, found '%s'", t);
      if (ok < 0) return syntax(r, "number '%s' out of range", t);
      ctxrt__build_value(&r->b, v, is_int);
    }
  }
  if (st == CTXRT_OK && r->b.failed) return ctxrt__nomem(r->err, r->name);
  return st;
}

CtxrtStatus ctxrt_read_nodes_buffer(const char *name, const char *data, size_t len,
                                    CtxrtForest **out, CtxrtError *err) {
  *out = NULL;
  if (len > CTXRT_MAX_INPUT)
    return ctxrt__err(err, CTXRT_ERR_NOMEM, name, 0, "input too large");
  NodesReader r;
  memset(&r, 0, sizeof r);
  r.name = name;
  r.err = err;
  ctxrt__build_init(&r.b, CTXRT_KIND_ANY, 0);
  CtxrtStatus st = ctxrt__each_line(data, len, &r.line, nodes_line, &r);
  if (st == CTXRT_OK) st = end_structure(&r);
  if (st == CTXRT_OK)
    st = ctxrt__build_finish(&r.b, name, out, err);
  else
    ctxrt__build_free(&r.b);
  ctxrt__vec_free(&r.raw);
  ctxrt__vec_free(&r.order);
  ctxrt__vec_free(&r.tmp);
  return st;
}

CtxrtStatus ctxrt_read_nodes_file(const char *path, CtxrtForest **out, CtxrtError *err) {
  char *data;
  size_t len;
  *out = NULL;
  CtxrtStatus st = ctxrt__read_file(path, &data, &len, err);
  if (st != CTXRT_OK) return st;
  st = ctxrt_read_nodes_buffer(path, data, len, out, err);
  free(data);
  return st;
}
