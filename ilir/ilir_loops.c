/* ilir_loops.c — loop transformations: split, unroll, reorder.
 *
 * Each rewrites one serial loop over a constant range [lo, hi) (an operator's
 * axis; the level and node loops are the schedule's own) and keeps its
 * meaning exactly: the same stores of the same values in an order that only
 * differs where the statements are independent.
 *
 *   split by F:   for i in [lo, hi) { S(i) }
 *             ->  for i.outer in [0, E / F) { for i.inner in [0, F) {
 *                   S(lo + i.outer * F + i.inner) } }
 *                 for i in [lo + E - E % F, hi) { S(i) }      (E = hi - lo; the
 *                                                               rest, when E % F)
 *   unroll:       for i in [lo, hi) { S(i) }  ->  S(lo); S(lo + 1); ...; S(hi - 1)
 *   reorder:      for i { for j { S } }  ->  for j { for i { S } }
 *
 * Split and unroll run the iterations in their order, so they apply to any
 * loop. Reorder changes the order, so it applies only to a perfect nest of
 * one store whose value reads nothing the nest writes: every iteration is
 * then independent of every other.
 */
#include "ilir/ilir_int.h"

static IlirBlock one(CtxArena *a, IlirStmt *s) {
  IlirBlock b = {CTX_NEW_ARRAY(a, IlirStmt *, 1), 1};
  b.stmts[0] = s;
  return b;
}

static bool constant_range(const IlirStmt *s, long *lo, long *hi) {
  if (s->kind != ILIR_LOOP || s->loop == ILIR_LOOP_LEVELS || s->loop == ILIR_LOOP_NODES ||
      s->loop == ILIR_LOOP_PARALLEL || s->tile_nodes || s->lo->kind != ILIR_CONST ||
      s->hi->kind != ILIR_CONST)
    return false;
  *lo = s->lo->ival;
  *hi = s->hi->ival;
  return true;
}

static IlirBlock subst_block(CtxArena *a, IlirBlock b, const IlirVar *v, IlirExpr *by) {
  IlirBlock c = {CTX_NEW_ARRAY(a, IlirStmt *, b.n > 0 ? b.n : 1), b.n};
  for (int i = 0; i < b.n; i++) c.stmts[i] = ilir_subst_stmt(a, b.stmts[i], v, by);
  return c;
}

IlirStmt *ilir_subst_stmt(CtxArena *a, const IlirStmt *s, const IlirVar *v, IlirExpr *by) {
  IlirStmt *c = ilir_clone_stmt(a, s);
  c->lo = ilir_subst(a, c->lo, v, by), c->hi = ilir_subst(a, c->hi, v, by);
  c->index = ilir_subst(a, c->index, v, by), c->value = ilir_subst(a, c->value, v, by);
  c->cond = ilir_subst(a, c->cond, v, by);
  c->body = subst_block(a, c->body, v, by);
  c->then = subst_block(a, c->then, v, by);
  c->els = subst_block(a, c->els, v, by);
  return c;
}

bool ilir_split_loop(CtxArena *a, IlirKernel *k, const IlirStmt *s, long factor,
                     IlirBlock *out) {
  long lo, hi;
  if (factor < 1 || !constant_range(s, &lo, &hi)) return false;
  long extent = hi > lo ? hi - lo : 0, whole = extent / factor;
  IlirStmt **stmts = CTX_NEW_ARRAY(a, IlirStmt *, 2);
  int n = 0;
  if (whole > 0) {
    IlirVar *o = ilir_new_var(a, k, ctx_arena_printf(a, "%s.outer", s->var->name));
    IlirVar *in = ilir_new_var(a, k, ctx_arena_printf(a, "%s.inner", s->var->name));
    IlirExpr *at = ilir_binary(a, ILIR_ADD,
                               ilir_binary(a, ILIR_ADD, ilir_const_i(a, lo),
                                           ilir_binary(a, ILIR_MUL, ilir_var(a, o),
                                                       ilir_const_i(a, factor))),
                               ilir_var(a, in));
    IlirStmt *inner = ilir_loop(a, in, ilir_const_i(a, 0), ilir_const_i(a, factor), s->loop,
                                subst_block(a, s->body, s->var, at));
    stmts[n++] = ilir_loop(a, o, ilir_const_i(a, 0), ilir_const_i(a, whole), ILIR_LOOP_SERIAL,
                           one(a, inner));
  }
  if (extent % factor) {
    IlirStmt *rest = ilir_clone_stmt(a, s);
    rest->lo = ilir_const_i(a, lo + whole * factor);
    stmts[n++] = rest;
  }
  *out = (IlirBlock){stmts, n};
  return true;
}

bool ilir_unroll_loop(CtxArena *a, const IlirStmt *s, long max_copies, IlirBlock *out) {
  long lo, hi;
  if (!constant_range(s, &lo, &hi) || hi - lo > max_copies) return false;
  long extent = hi > lo ? hi - lo : 0;
  IlirBlock b = {CTX_NEW_ARRAY(a, IlirStmt *, extent * s->body.n + 1), 0};
  for (long i = lo; i < hi; i++)
    for (int j = 0; j < s->body.n; j++)
      b.stmts[b.n++] = ilir_subst_stmt(a, s->body.stmts[j], s->var, ilir_const_i(a, i));
  *out = b;
  return true;
}

/* Does [e] read any buffer the statements of [b] store into? */
static bool reads_stored(const IlirExpr *e, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE && ilir_reads(e, s->buf)) return true;
    if (s->kind == ILIR_LOOP && reads_stored(e, &s->body)) return true;
    if (s->kind == ILIR_IF && (reads_stored(e, &s->then) || reads_stored(e, &s->els)))
      return true;
  }
  return false;
}

bool ilir_reorder_loops(CtxArena *a, const IlirStmt *s, IlirStmt **out) {
  long lo, hi;
  if (!constant_range(s, &lo, &hi) || s->body.n != 1) return false;
  const IlirStmt *in = s->body.stmts[0];
  if (!constant_range(in, &lo, &hi) || in->body.n != 1) return false;
  const IlirStmt *st = in->body.stmts[0];
  if (st->kind != ILIR_STORE || reads_stored(st->value, &in->body) ||
      reads_stored(st->index, &in->body))
    return false;
  /* distinct iterations must store distinct elements: the index moves with
   * both variables, the one moving it less never as far as one step of the
   * other (i * J + j for j in [0, J)) */
  long ci = ilir_coef(st->index, s->var), cj = ilir_coef(st->index, in->var);
  if (ci == ILIR_NONLINEAR || cj == ILIR_NONLINEAR || ci == 0 || cj == 0) return false;
  long ei = s->hi->ival - s->lo->ival, ej = in->hi->ival - in->lo->ival;
  ci = ci < 0 ? -ci : ci, cj = cj < 0 ? -cj : cj;
  if (ci < cj ? ci * (ei - 1) >= cj : cj * (ej - 1) >= ci) return false;
  IlirStmt *outer_now = ilir_loop(a, s->var, s->lo, s->hi, s->loop, one(a, (IlirStmt *)st));
  *out = ilir_loop(a, in->var, in->lo, in->hi, in->loop, one(a, outer_now));
  return true;
}
