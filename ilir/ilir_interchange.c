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

enum { NONLINEAR = -1 };

/* The coefficient of [v] in the index expression [e] when [e] is linear in
 * it; NONLINEAR otherwise (a load whose index involves v, a product of
 * variables). */
static long coef(const IlirExpr *e, const IlirVar *v) {
  switch (e->kind) {
  case ILIR_CONST: case ILIR_ARG: return 0;
  case ILIR_VAR: return e->var == v;
  case ILIR_LOAD: return coef(e->a, v) == 0 ? 0 : NONLINEAR;
  case ILIR_BINARY: {
    long a = coef(e->a, v), b = coef(e->b, v);
    if (a == NONLINEAR || b == NONLINEAR) return NONLINEAR;
    if (e->op == ILIR_ADD) return a + b;
    if (e->op == ILIR_SUB) return a - b;
    if (e->op == ILIR_MUL && e->b->kind == ILIR_CONST) return a * e->b->ival;
    if (e->op == ILIR_MUL && e->a->kind == ILIR_CONST) return b * e->a->ival;
    return a == 0 && b == 0 ? 0 : NONLINEAR;
  }
  default: return NONLINEAR;
  }
}

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
    long cj = coef(e->a, s->j), ck = coef(e->a, s->k);
    if (e->buf == s->out_buf || cj == NONLINEAR || (cj != 0 && cj != 1)) s->ok = false;
    if (cj == 1 && (ck == NONLINEAR || ck > 1 || ck < -1)) s->strided = true;
    scan(s, e->a);
    return;
  }
  if (e->kind == ILIR_REDUCE) scan(s, e->lo), scan(s, e->hi);
  scan(s, e->a), scan(s, e->b), scan(s, e->c);
}

/* The terms of a sum tree [e] into [terms]; at most [cap]. */
static int terms_of(IlirExpr *e, IlirExpr **terms, int n, int cap) {
  if (e->kind == ILIR_BINARY && e->op == ILIR_ADD && e->type == ILIR_F32)
    return terms_of(e->b, terms, terms_of(e->a, terms, n, cap), cap);
  if (n < cap) terms[n] = e;
  return n + 1;
}

static bool movable(const IlirStmt *loop, const IlirExpr *r, int out_buf) {
  if (r->kind != ILIR_REDUCE || r->op != ILIR_SUM) return false;
  if (coef(r->lo, loop->var) != 0 || coef(r->hi, loop->var) != 0) return false;
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
  if (coef(st->index, loop->var) != 1) return NULL;
  IlirExpr *terms[16];
  int n = terms_of(st->value, terms, 0, 16), moved = 0;
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
