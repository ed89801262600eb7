/* sched_results.c — returned operators computed in their result rows
 * (direct-results).
 *
 * ilir_lower gives every operator a scratch row per node, and `return`
 * copies the operators a function returns into its result row:
 *
 *   for j in [0, S) { R[n * RS + off + j] = X[n * S + j] }
 *
 * Where X is written and read only at its own node's row, inside the levels
 * (sched_keep_node_rows), and every copy of X goes to the same place of the
 * same result buffer, X's accesses become accesses of that place — X[n * S
 * + x] is R[n * RS + off + x] — and the copies go: each element is stored
 * once instead of stored, loaded and stored again. That is one pass over a
 * node's state less at every node; mvrnn's is a 4,096-float matrix per node,
 * which the leaves copied twice (the embedding row into the operator's row,
 * that into the result).
 *
 * It is sound because nothing reads a node's result row before the copy
 * would have written it: within a level a node reads only the rows of
 * dependencies (earlier levels), and the hoisted products that read the
 * node's own row run after its body. A rewrite that would leave a register
 * tile in a form codegen does not take (ilir_tile_parts: a product's output
 * read by the product other than at dependencies' rows, two epilogues
 * writing one buffer) is not made: each operator is tried on its own, and
 * kept only if every tile of the kernel still is one. */
#include "sched/sched_int.h"

#include <string.h>

/* Where the copies of a scratch buffer go. */
typedef struct {
  int copies;   /* copy loops of it found; -1: it cannot move */
  int res;      /* their result buffer */
  long off;     /* and the place in its rows */
} Dest;

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  Dest *dest;
  const IlirVar *node; /* the innermost nodes loop's variable */
  int only;            /* the buffer being moved (rewrite) */
} Walk;

/* Is [s] (in the nodes loop over [n]) a copy `for j in [0, S) { R[n * RS + off
 * + j] = X[n * S + j] }` of a scratch row into a result row? Gives X, R, off. */
static bool is_copy(const IlirKernel *k, const IlirStmt *s, const IlirVar *n,
                    int *x, int *r, long *off) {
  if (!n || s->kind != ILIR_LOOP || s->loop != ILIR_LOOP_SERIAL || s->tile_nodes ||
      s->body.n != 1 || s->body.stmts[0]->kind != ILIR_STORE || s->lo->kind != ILIR_CONST ||
      s->lo->ival != 0 || s->hi->kind != ILIR_CONST)
    return false;
  const IlirStmt *st = s->body.stmts[0];
  const IlirExpr *v = st->value;
  if (v->kind != ILIR_LOAD || k->bufs[v->buf].kind != ILIR_BUF_SCRATCH ||
      k->bufs[st->buf].kind != ILIR_BUF_RESULT)
    return false;
  long S = k->bufs[v->buf].size, RS = k->bufs[st->buf].size, xoff, roff;
  if (s->hi->ival != S || ilir_coef(v->a, n) != S || ilir_coef(v->a, s->var) != 1 ||
      ilir_coef(st->index, n) != RS || ilir_coef(st->index, s->var) != 1 ||
      !sched_offset_of(v->a, n, s->var, &xoff) || xoff != 0 ||
      !sched_offset_of(st->index, n, s->var, &roff) || roff < 0 || roff + S > RS)
    return false;
  *x = v->buf, *r = st->buf, *off = roff;
  return true;
}

static void find_copies(Walk *W, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    int x, r;
    long off;
    if (is_copy(W->k, s, W->node, &x, &r, &off)) {
      Dest *d = &W->dest[x];
      if (d->copies == 0) *d = (Dest){1, r, off};
      else if (d->copies > 0 && d->res == r && d->off == off) d->copies++;
      else d->copies = -1;
      continue;
    }
    if (s->kind == ILIR_IF) {
      find_copies(W, &s->then), find_copies(W, &s->els);
    } else if (s->kind == ILIR_LOOP) {
      const IlirVar *node = W->node;
      if (s->loop == ILIR_LOOP_NODES) W->node = s->var;
      find_copies(W, &s->body);
      W->node = node;
    }
  }
}

/* X[n * S + x] as R[n * RS + off + x]. */
static IlirExpr *moved_index(Walk *W, IlirExpr *index) {
  const Dest *d = &W->dest[W->only];
  long grow = W->k->bufs[d->res].size - W->k->bufs[W->only].size;
  IlirExpr *shift = ilir_binary(W->a, ILIR_ADD,
                                ilir_binary(W->a, ILIR_MUL, ilir_var(W->a, (IlirVar *)W->node),
                                            ilir_const_i(W->a, grow)),
                                ilir_const_i(W->a, d->off));
  return ilir_binary(W->a, ILIR_ADD, index, shift);
}

static IlirExpr *move_loads(Walk *W, IlirExpr *e) {
  if (!e) return NULL;
  IlirExpr *x = move_loads(W, e->a), *y = move_loads(W, e->b), *c = move_loads(W, e->c);
  IlirExpr *lo = move_loads(W, e->lo), *hi = move_loads(W, e->hi);
  bool load = e->kind == ILIR_LOAD && e->buf == W->only;
  if (!load && x == e->a && y == e->b && c == e->c && lo == e->lo && hi == e->hi) return e;
  IlirExpr *copy = CTX_NEW(W->a, IlirExpr); /* expressions may be shared */
  *copy = *e;
  copy->a = load ? moved_index(W, x) : x;
  if (load) copy->buf = W->dest[W->only].res;
  copy->b = y, copy->c = c, copy->lo = lo, copy->hi = hi;
  return copy;
}

/* Moves W->only's accesses into its result rows in [b] and drops its copies. */
static void move(Walk *W, IlirBlock *b) {
  int out = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    int x, r;
    long off;
    if (is_copy(W->k, s, W->node, &x, &r, &off) && x == W->only) continue;
    b->stmts[out++] = s;
    if (s->kind == ILIR_STORE) {
      s->value = move_loads(W, s->value);
      s->index = move_loads(W, s->index);
      if (s->buf == W->only) {
        s->index = moved_index(W, s->index);
        s->buf = W->dest[W->only].res;
      }
    } else if (s->kind == ILIR_IF) {
      s->cond = move_loads(W, s->cond);
      move(W, &s->then), move(W, &s->els);
    } else {
      s->lo = move_loads(W, s->lo), s->hi = move_loads(W, s->hi);
      const IlirVar *node = W->node;
      if (s->loop == ILIR_LOOP_NODES) W->node = s->var;
      move(W, &s->body);
      W->node = node;
    }
  }
  b->n = out;
}

bool sched_tiles_ok(const IlirKernel *k, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    IlirTileParts parts;
    if (s->kind == ILIR_IF && (!sched_tiles_ok(k, &s->then) || !sched_tiles_ok(k, &s->els)))
      return false;
    if (s->kind != ILIR_LOOP) continue;
    if ((s->tile_nodes && !ilir_tile_parts(k, s, &parts)) || !sched_tiles_ok(k, &s->body))
      return false;
  }
  return true;
}

void sched_direct_results(CtxArena *a, IlirKernel *k) {
  Dest *dest = CTX_NEW_ARRAY(a, Dest, k->nbufs);
  bool *rows = CTX_NEW_ARRAY(a, bool, k->nbufs);
  Walk W = {a, k, dest, NULL, -1};
  find_copies(&W, &k->body);
  for (int b = 0; b < k->nbufs; b++) rows[b] = dest[b].copies > 0;
  sched_keep_node_rows(k, rows);
  for (int b = 0; b < k->nbufs; b++) {
    if (!rows[b]) continue;
    IlirBlock saved = ilir_clone_block(a, k->body);
    W.only = b, W.node = NULL;
    move(&W, &k->body);
    if (!sched_tiles_ok(k, &k->body)) k->body = saved;
  }
}
