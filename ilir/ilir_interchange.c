/* ilir_interchange.c — reductions turned inside out where memory says so.
 *
 * An operator element that sums over k, `out[.. j] = T + sum(k) body`,
 * computes its innermost loop j to the end for each k when that makes the
 * reads contiguous:
 *
 *   for j { out[.. j] = T + sum(k) A[.. k] * B[k * J + j] }
 * becomes
 *   for j { out[.. j] = T }
 *   for k { for j { out[.. j] = out[.. j] + A[.. k] * B[k * J + j] } }
 *
 * It applies when every read in the reduction that moves with j moves by one
 * element per j, and some read moves by more than one element per k — the
 * matrix-matrix products of index-form lets (MV-RNN's P), whose k-innermost
 * form reads a column and neither vectorizes nor stays in cache. Matrix-vector
 * products already read rows contiguously in k and are left alone. Only the
 * summation order changes (float tolerances, TESTING.md).
 */
#include "ilir/ilir_int.h"

typedef struct {
  const IlirVar *j, *k;
  int out_buf;
  bool ok;       /* no read forbids the change */
  bool strided;  /* some read moves by more than one element per k */
} Scan;

/* Checks every load of the reduction body [e]. */
static void scan(Scan *s, const IlirExpr *e) {
  if (!e) return;
  if (e->kind == ILIR_LOAD) {
    long cj = ilir_coef(e->a, s->j), ck = ilir_coef(e->a, s->k);
    if (e->buf == s->out_buf || cj == ILIR_NONLINEAR || (cj != 0 && cj != 1)) s->ok = false;
    if (cj == 1 && (ck == ILIR_NONLINEAR || ck > 1 || ck < -1)) s->strided = true;
    scan(s, e->a);
    return;
  }
  if (e->kind == ILIR_REDUCE) scan(s, e->lo), scan(s, e->hi);
  scan(s, e->a), scan(s, e->b), scan(s, e->c);
}

static bool movable(const IlirStmt *loop, const IlirExpr *r, int out_buf) {
  if (r->kind != ILIR_REDUCE || r->op != ILIR_SUM) return false;
  if (ilir_coef(r->lo, loop->var) != 0 || ilir_coef(r->hi, loop->var) != 0) return false;
  Scan s = {loop->var, r->var, out_buf, true, false};
  scan(&s, r->a);
  return s.ok && s.strided;
}

static IlirBlock one(CtxArena *a, IlirStmt *s) {
  IlirBlock b = {CTX_NEW_ARRAY(a, IlirStmt *, 1), 1};
  b.stmts[0] = s;
  return b;
}

/* The loop `for j { out[x] = value }` as loops that accumulate the movable
 * reductions with k outside j; NULL when nothing moves. */
static IlirBlock *interchange(CtxArena *a, const IlirKernel *k, const IlirStmt *loop) {
  if (loop->body.n != 1 || loop->body.stmts[0]->kind != ILIR_STORE) return NULL;
  const IlirStmt *st = loop->body.stmts[0];
  if (ilir_coef(st->index, loop->var) != 1) return NULL;
  IlirExpr *terms[16];
  int n = ilir_sum_terms(st->value, terms, 16), moved = 0;
  if (n > 16) return NULL;
  IlirExpr *rest = NULL;
  IlirBlock *out = CTX_NEW(a, IlirBlock);
  out->stmts = CTX_NEW_ARRAY(a, IlirStmt *, n + 1);
  for (int i = 0; i < n; i++)
    if (!movable(loop, terms[i], st->buf)) rest = rest ? ilir_binary(a, ILIR_ADD, rest, terms[i]) : terms[i];
  out->stmts[out->n++] = ilir_loop(a, loop->var, loop->lo, loop->hi, loop->loop,
                                   one(a, ilir_store(a, st->buf, st->index,
                                                     rest ? rest : ilir_const_f(a, 0))));
  for (int i = 0; i < n; i++) {
    IlirExpr *r = terms[i];
    if (!movable(loop, r, st->buf)) continue;
    IlirExpr *acc = ilir_binary(a, ILIR_ADD, ilir_load(a, k, st->buf, st->index), r->a);
    IlirStmt *inner = ilir_loop(a, loop->var, loop->lo, loop->hi, loop->loop,
                                one(a, ilir_store(a, st->buf, st->index, acc)));
    out->stmts[out->n++] = ilir_loop(a, r->var, r->lo, r->hi, ILIR_LOOP_SERIAL, one(a, inner));
    moved++;
  }
  return moved ? out : NULL;
}

static void walk(CtxArena *a, const IlirKernel *k, IlirBlock *b) {
  CtxVec v = {0};
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_LOOP && s->tile_nodes) { /* a register tile: computed as it is */
      ctx_vec_push(a, &v, s);
      continue;
    }
    IlirBlock *repl = s->kind == ILIR_LOOP ? interchange(a, k, s) : NULL;
    if (repl) {
      for (int r = 0; r < repl->n; r++) ctx_vec_push(a, &v, repl->stmts[r]);
      continue;
    }
    if (s->kind == ILIR_LOOP) walk(a, k, &s->body);
    if (s->kind == ILIR_IF) walk(a, k, &s->then), walk(a, k, &s->els);
    ctx_vec_push(a, &v, s);
  }
  b->stmts = (IlirStmt **)v.items;
  b->n = v.len;
}

void ilir_interchange(CtxArena *arena, IlirKernel *k) { walk(arena, k, &k->body); }
