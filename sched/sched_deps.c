/* sched_deps.c — sums over a node's dependencies with a fixed trip count
 * (all-deps).
 *
 * A sum over the dependencies, `sum(p in [0, num_deps[n])) X[dep[n * K + p]
 * * S + ..] + ..`, has a trip count that varies from node to node, so the
 * output loop around it (for i in [0, H)) is a loop with an inner loop of
 * unknown length: LLVM neither vectorizes it nor the activation after it
 * (dagrnn's tanh ran scalar: 60% of its kernel). But the linearizer stores
 * num_nodes in the dependency slots a node does not have (runtime/ctxrt.h,
 * CTXRT_BUF_DEP), and row num_nodes of every RESULT and SCRATCH buffer is
 * zero and never stored (ilir.h: stores write their own node's row). So when
 * every term of the sum is a load of such a buffer at a dependency's row,
 * summing over all K slots adds only zeros: the sum becomes `sum(p in [0,
 * K))`, which codegen unrolls and the output loop vectorizes. Done for K <= 4
 * (dagrnn's K = 2); a tree of arity 8 with mostly one or two children
 * would read more zero rows than it saves. Sums of +0.0 are exact; only the
 * sign of a zero result may differ from the interpreter's (-0 + +0 = +0).
 */
#include "sched/sched_int.h"

enum { MAX_ALL_DEPS = 4 };

/* Does [e] read [p] only through loads of the DEP buffer? */
static bool p_only_in_dep(const IlirKernel *k, const IlirExpr *e, const IlirVar *p) {
  if (!e) return true;
  if (e->kind == ILIR_VAR) return e->var != p;
  if (e->kind == ILIR_LOAD && e->buf == k->dep_buf) return true;
  return p_only_in_dep(k, e->a, p) && p_only_in_dep(k, e->b, p) && p_only_in_dep(k, e->c, p);
}

/* Is [e] a load of a RESULT or SCRATCH buffer at a row the DEP buffer gives
 * for slot [p]? */
static bool dep_row_load(const IlirKernel *k, const IlirExpr *e, const IlirVar *p) {
  if (e->kind != ILIR_LOAD) return false;
  IlirBufKind kind = k->bufs[e->buf].kind;
  return (kind == ILIR_BUF_RESULT || kind == ILIR_BUF_SCRATCH) && ilir_uses(e->a, p) &&
         p_only_in_dep(k, e->a, p);
}

static void fix_expr(const IlirKernel *k, CtxArena *a, IlirExpr *e) {
  if (!e) return;
  fix_expr(k, a, e->a);
  fix_expr(k, a, e->b);
  fix_expr(k, a, e->c);
  if (e->kind != ILIR_REDUCE || e->op != ILIR_SUM || e->lo->kind != ILIR_CONST ||
      e->lo->ival != 0 || e->hi->kind != ILIR_LOAD || e->hi->buf != k->num_deps_buf)
    return;
  IlirExpr *terms[16];
  int n = ilir_sum_terms(e->a, terms, 16);
  if (n > 16) return;
  for (int t = 0; t < n; t++)
    if (!dep_row_load(k, terms[t], e->var)) return;
  e->hi = ilir_const_i(a, k->max_deps);
}

static void fix_block(const IlirKernel *k, CtxArena *a, IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    switch (s->kind) {
    case ILIR_STORE: fix_expr(k, a, s->value); break;
    case ILIR_IF:
      fix_expr(k, a, s->cond);
      fix_block(k, a, &s->then);
      fix_block(k, a, &s->els);
      break;
    default: fix_block(k, a, &s->body); break;
    }
  }
}

void sched_all_deps(CtxArena *a, IlirKernel *k) {
  if (k->max_deps < 1 || k->max_deps > MAX_ALL_DEPS || k->dep_buf < 0 ||
      k->num_deps_buf < 0)
    return;
  fix_block(k, a, &k->body);
}
