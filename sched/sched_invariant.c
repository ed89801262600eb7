/* sched_invariant.c — hoisting node-independent work (hoist-invariant).
 *
 * An operator whose value reads only parameters (and other such operators),
 *
 *   let bias = tanh(U @ b) + c        inside a rec function
 *
 * is the same at every node, yet the lowered kernel computes it once per node
 * into the node's scratch row. This pass moves its loop nest out of the
 * levels into a prologue that runs once per inference,
 *
 *   for once in parallel [0, 1) {              one thread; a barrier after
 *     for i in [0, H) { bias[i] = tanh(..) + c[i] }
 *   }
 *   for l in levels [..] { for n in nodes [..] { .. bias[i] .. } }
 *
 * and the operator's buffer becomes an INVARIANT buffer of one row: the
 * store n * S + x and every load n * S + x become x. The nodes loops' other
 * copies of the statement (an operator before `if leaf(n)` is in the leaf
 * and in the inner levels after leaf specialization) go away.
 *
 * A statement qualifies when it is a loop nest over constant ranges (or a
 * single store) storing into a scratch buffer at its node's row and its
 * value reads no node, no input, no dependency and no per-node buffer —
 * only parameters and operators already hoisted. Statements are taken in
 * order, so an operator of hoisted operators is hoisted too and the
 * prologue computes them in order. A buffer qualifies only if every access
 * to it is at the row of its nodes loop's node (n * S + x, x not reading n),
 * which is how lowering reads an operator.
 */
#include "sched/sched_int.h"

#include <string.h>

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  bool *rows_only;  /* [nbufs]: scratch accessed only at its node's row */
  bool *hoisted;    /* [nbufs] */
  CtxVec prologue;  /* IlirStmt *, in order */
  const IlirVar *node;
} Inv;

/* ---- which statements are invariant ----------------------------------------------- */

/* [e] at node 0: a row index n * S + x as x. */
static IlirExpr *no_node(const Inv *I, IlirExpr *e) {
  return ilir_subst(I->a, e, I->node, ilir_const_i(I->a, 0));
}

/* Does [e] read only parameters, hoisted buffers, constants and variables
 * other than the node? */
static bool invariant_expr(const Inv *I, IlirExpr *e) {
  if (!e) return true;
  switch (e->kind) {
  case ILIR_VAR: return e->var != I->node;
  case ILIR_ARG: return false;
  case ILIR_LOAD: /* a hoisted buffer still at n * S + x: x must be invariant */
    if (I->hoisted[e->buf]) return invariant_expr(I, no_node(I, e->a));
    return I->k->bufs[e->buf].kind == ILIR_BUF_PARAM && invariant_expr(I, e->a);
  default: break;
  }
  return invariant_expr(I, e->a) && invariant_expr(I, e->b) && invariant_expr(I, e->c) &&
         invariant_expr(I, e->lo) && invariant_expr(I, e->hi);
}

/* The buffer [s] stores into when it is an invariant nest (every store into
 * that one buffer), else -1. */
static int invariant_stmt(const Inv *I, const IlirStmt *s) {
  if (s->kind == ILIR_STORE) {
    bool ok = I->rows_only[s->buf] && invariant_expr(I, s->value) &&
              invariant_expr(I, no_node(I, s->index));
    return ok ? s->buf : -1;
  }
  if (s->kind != ILIR_LOOP || s->loop != ILIR_LOOP_SERIAL || s->tile_nodes ||
      s->lo->kind != ILIR_CONST || s->hi->kind != ILIR_CONST || s->body.n < 1)
    return -1;
  int buf = -1;
  for (int i = 0; i < s->body.n; i++) {
    int b = invariant_stmt(I, s->body.stmts[i]);
    if (b < 0 || (buf >= 0 && b != buf)) return -1;
    buf = b;
  }
  return buf;
}

/* ---- rewriting ------------------------------------------------------------------ */

/* Hoists what it can from [b], a block inside the nodes loop of I->node. */
static void hoist_block(Inv *I, IlirBlock *b) {
  int out = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    int buf = invariant_stmt(I, s);
    if (buf >= 0) {
      if (!I->hoisted[buf]) {
        I->hoisted[buf] = true;
        /* its node's row dropped from its accesses (n * S + x -> x; the node
         * appears nowhere else in an invariant statement) */
        ctx_vec_push(I->a, &I->prologue,
                     ilir_subst_stmt(I->a, s, I->node, ilir_const_i(I->a, 0)));
      }
      continue; /* computed in the prologue */
    }
    if (s->kind == ILIR_IF) hoist_block(I, &s->then), hoist_block(I, &s->els);
    b->stmts[out++] = s;
  }
  b->n = out;
}

static void hoist_nodes(Inv *I, IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind != ILIR_LOOP || s->tile_nodes) continue;
    if (s->loop == ILIR_LOOP_NODES) {
      I->node = s->var;
      hoist_block(I, &s->body);
      I->node = NULL;
    } else if (s->loop == ILIR_LOOP_LEVELS) {
      hoist_nodes(I, &s->body);
    }
  }
}

/* n * S + x -> x for a load of a hoisted buffer in the nodes loop of n. */
static IlirExpr *unrowed_index(SchedRewrite *R, IlirExpr *index, int buf) {
  (void)buf;
  return ilir_subst(R->a, index, R->node, ilir_const_i(R->a, 0));
}

void sched_hoist_invariant(CtxArena *a, IlirKernel *k, const bool *only) {
  Inv I;
  memset(&I, 0, sizeof I);
  I.a = a;
  I.k = k;
  I.rows_only = CTX_NEW_ARRAY(a, bool, k->nbufs);
  I.hoisted = CTX_NEW_ARRAY(a, bool, k->nbufs);
  for (int b = 0; b < k->nbufs; b++)
    I.rows_only[b] = k->bufs[b].kind == ILIR_BUF_SCRATCH && (!only || only[b]);
  sched_keep_node_rows(k, I.rows_only);
  hoist_nodes(&I, &k->body);
  if (!I.prologue.len) return;
  SchedRewrite R = {a, k, I.hoisted, unrowed_index, NULL, NULL};
  sched_rewrite_accesses(&R, &k->body);
  for (int b = 0; b < k->nbufs; b++)
    if (I.hoisted[b]) k->bufs[b].kind = ILIR_BUF_INVARIANT;
  IlirBlock once = {(IlirStmt **)I.prologue.items, I.prologue.len};
  IlirStmt **body = CTX_NEW_ARRAY(a, IlirStmt *, k->body.n + 1);
  body[0] = ilir_loop(a, ilir_new_var(a, k, "once"), ilir_const_i(a, 0), ilir_const_i(a, 1),
                      ILIR_LOOP_PARALLEL, once);
  memcpy(body + 1, k->body.stmts, (size_t)k->body.n * sizeof *body);
  k->body.stmts = body;
  k->body.n++;
}
