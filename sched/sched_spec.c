/* sched_spec.c — arity specialization: a schedule's `specialize
 * n.num_children == K` (n.num_preds for a DAG).
 *
 * The linearizer orders the nodes of each level by arity groups (runtime/
 * ctxrt.h, ctxrt_linear_set_groups): the nodes with exactly K1 dependencies
 * first, then those with K2, ..., then the rest, and hands the kernel where
 * each group ends in an ARITY_END buffer per K (ilir.h). Each node loop of a
 * levels loop that is not a register tile,
 *
 *   for l in levels [..] { .. for n in nodes [levels[l], levels[l + 1]) { BODY } .. }
 *
 * becomes one node loop per group and one over the rest,
 *
 *   for n in nodes [levels[l], arity2[l]) of [levels[l], levels[l + 1]) {
 *     BODY with num_deps[n] = 2 }
 *   for n in nodes [arity2[l], levels[l + 1]) of [levels[l], levels[l + 1]) { BODY }
 *
 * where the arity is a constant: sums and loops over the dependencies get
 * constant trip counts and tests of it (`if n.num_children == 2`, a leaf
 * test) fold. The register tiles (the level products) stay over the whole
 * level: split by groups they measured slower (childsum H=256 B=10, one
 * thread: 1.05-1.11x, more partial tiles). A group's loop runs the part of
 * this thread's share of the whole level that lies in the group (`of [..]`,
 * IlirStmt.team_lo), so every node stays on the thread that computes it in
 * the tiles and no barrier is needed between them. Each node still computes
 * and writes its own rows, so only the order of a level's nodes changes —
 * which nothing may depend on (they are independent) — and the outputs are
 * read back through the linearizer's permutation as always.
 *
 * The leaf level of specialize-leaf (a levels loop [0, num_levels > 0)) has
 * only nodes without dependencies and is left alone. Runs after register
 * tiling, fusion and share-weights (their loops are final), and before
 * interchange and dense-scratch.
 */
#include "sched/sched_int.h"

#include <math.h>
#include <string.h>


typedef struct {
  CtxArena *a;
  const IlirKernel *k;
  const IlirVar *n; /* the node loop's variable */
  long arity;
} Spec;

static bool is_const(const IlirExpr *e) {
  return e && e->kind == ILIR_CONST && e->type == ILIR_I64;
}

/* [e] with num_deps[n] the constant arity, folded where that makes constants
 * (new nodes throughout: expressions may be shared). */
static IlirExpr *spec_expr(const Spec *S, const IlirExpr *e) {
  if (!e) return NULL;
  CtxArena *a = S->a;
  if (e->kind == ILIR_LOAD && e->buf == S->k->num_deps_buf && e->a->kind == ILIR_VAR &&
      e->a->var == S->n)
    return ilir_const_i(a, S->arity);
  IlirExpr *x = spec_expr(S, e->a), *y = spec_expr(S, e->b), *c = spec_expr(S, e->c);
  switch (e->kind) {
  case ILIR_BINARY: return ilir_binary(a, e->op, x, y); /* the constructors fold */
  case ILIR_SELECT: return ilir_select(a, c, x, y);
  case ILIR_TO_F32: return ilir_to_f32(a, x);
  case ILIR_REDUCE:
    return ilir_reduce(a, e->op, e->var, spec_expr(S, e->lo), spec_expr(S, e->hi), x);
  default: {
    IlirExpr *copy = CTX_NEW(a, IlirExpr);
    *copy = *e;
    copy->a = x, copy->b = y, copy->c = c;
    return copy;
  }
  }
}

static IlirBlock spec_block(const Spec *S, const IlirBlock *b);

static IlirStmt *spec_stmt(const Spec *S, const IlirStmt *s) {
  IlirStmt *c = CTX_NEW(S->a, IlirStmt);
  *c = *s;
  c->lo = spec_expr(S, s->lo), c->hi = spec_expr(S, s->hi);
  c->index = spec_expr(S, s->index), c->value = spec_expr(S, s->value);
  c->cond = spec_expr(S, s->cond);
  c->body = spec_block(S, &s->body);
  c->then = spec_block(S, &s->then);
  c->els = spec_block(S, &s->els);
  return c;
}

/* An `if` on the arity folds here already (the simplifier does not fold
 * comparisons of constants). */
static IlirBlock spec_block(const Spec *S, const IlirBlock *b) {
  CtxVec out = {0};
  for (int i = 0; i < b->n; i++) {
    IlirStmt *c = spec_stmt(S, b->stmts[i]);
    if (c->kind == ILIR_IF && is_const(c->cond)) {
      const IlirBlock *taken = c->cond->ival ? &c->then : &c->els;
      for (int j = 0; j < taken->n; j++) ctx_vec_push(S->a, &out, taken->stmts[j]);
    } else {
      ctx_vec_push(S->a, &out, c);
    }
  }
  return (IlirBlock){(IlirStmt **)out.items, out.len};
}

int sched_group_end(CtxArena *a, IlirKernel *k, long key) {
  const char *name = key >= 0 ? ctx_arena_printf(a, "arity%ld", key)
                              : ctx_arena_printf(a, "place%ld", -1 - key);
  return ilir_add_buf(a, k, (IlirBuf){.name = name, .kind = ILIR_BUF_ARITY_END, .size = key});
}

/* Is [lv] specialize-leaf's loop over the leaf level alone? */
static bool leaf_levels(const IlirStmt *lv) {
  const IlirExpr *hi = lv->hi;
  return lv->lo->kind == ILIR_CONST && lv->lo->ival == 0 && hi->kind == ILIR_BINARY &&
         hi->op == ILIR_GT && hi->a->kind == ILIR_ARG && hi->a->ival == 1;
}

/* The node loop [nodes] of levels loop [lv] as a loop per group and one over
 * the rest, into [out]. */
static void split_groups(CtxArena *a, const IlirKernel *k, const IlirStmt *lv,
                         const IlirStmt *nodes, const SchedPlan *plan, const int *bufs,
                         CtxVec *out) {
  IlirExpr *from = nodes->lo;
  for (int g = 0; g < plan->narity; g++) {
    IlirExpr *end = ilir_load(a, k, bufs[g], ilir_var(a, lv->var));
    Spec S = {a, k, nodes->var, plan->arity[g]};
    IlirStmt *loop = ilir_loop(a, nodes->var, from, end, ILIR_LOOP_NODES,
                               spec_block(&S, &nodes->body));
    loop->team_lo = nodes->lo, loop->team_hi = nodes->hi;
    ctx_vec_push(a, out, loop);
    from = end;
  }
  IlirStmt *rest = ilir_loop(a, nodes->var, from, nodes->hi, ILIR_LOOP_NODES, nodes->body);
  rest->team_lo = nodes->lo, rest->team_hi = nodes->hi;
  ctx_vec_push(a, out, rest);
}

void sched_specialize_arity(CtxArena *a, IlirKernel *k, const SchedPlan *plan) {
  if (!plan->narity || k->num_deps_buf < 0) return;
  int bufs[SCHED_MAX_ARITIES];
  for (int g = 0; g < plan->narity; g++) bufs[g] = sched_group_end(a, k, plan->arity[g]);
  for (int i = 0; i < k->body.n; i++) {
    IlirStmt *lv = k->body.stmts[i];
    if (lv->kind != ILIR_LOOP || lv->loop != ILIR_LOOP_LEVELS || leaf_levels(lv)) continue;
    CtxVec out = {0};
    for (int j = 0; j < lv->body.n; j++) {
      IlirStmt *s = lv->body.stmts[j];
      if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_NODES && !s->tile_nodes)
        split_groups(a, k, lv, s, plan, bufs, &out);
      else
        ctx_vec_push(a, &out, s);
    }
    lv->body = (IlirBlock){(IlirStmt **)out.items, out.len};
  }
}

/* ---- nodes without dependencies ---------------------------------------------------- */

/* With no dependencies, a sum over them is 0, and so is an operator that
 * starts at 0 and adds them up (childsum's s = sum of the children's h); a
 * product of weights with such an operator is 0 too (W x 0 = 0 for every
 * finite W, and the runtime takes only finite weights: ctxrt_weights_check),
 * and adding it changes nothing. Such operators are then read as the constant
 * 0, and their stores, which nothing reads any more, are dropped — in the
 * leaves' loop of a tree without `if leaf(n)` (sched_apply.c, specialize_leaf)
 * whole level products go: U_iou s, for every leaf. An operator's row is read
 * only at its own node (sched_keep_node_rows checks it), so the leaves' rows
 * that are no longer written are read by nothing. */

typedef struct {
  CtxArena *a;
  const IlirKernel *k;
  bool *zero; /* the operators known to be 0 */
} Zero;

static bool is_zero(const IlirExpr *e) {
  return e && e->kind == ILIR_CONST && e->type == ILIR_F32 && e->fval == 0.0f;
}

static bool empty_range(const IlirExpr *lo, const IlirExpr *hi) {
  return is_const(lo) && is_const(hi) && lo->ival >= hi->ival;
}

/* Weights and finite constants: their product with 0 is 0. */
static bool finite(const IlirKernel *k, const IlirExpr *e) {
  if (e->kind == ILIR_CONST) return e->type == ILIR_I64 || isfinite(e->fval);
  return e->kind == ILIR_LOAD && k->bufs[e->buf].kind == ILIR_BUF_PARAM;
}

static IlirExpr *zero_expr(const Zero *Z, IlirExpr *e) {
  if (!e) return NULL;
  if (e->kind == ILIR_LOAD && Z->zero[e->buf]) return ilir_const_f(Z->a, 0.0f);
  IlirExpr *x = zero_expr(Z, e->a), *y = zero_expr(Z, e->b), *c = zero_expr(Z, e->c);
  bool f32 = e->kind == ILIR_BINARY && e->type == ILIR_F32;
  if ((f32 && e->op == ILIR_MUL &&
       ((is_zero(x) && finite(Z->k, y)) || (is_zero(y) && finite(Z->k, x)))) ||
      (e->kind == ILIR_REDUCE && e->op == ILIR_SUM && (is_zero(x) || empty_range(e->lo, e->hi))))
    return ilir_const_f(Z->a, 0.0f);
  if (f32 && (e->op == ILIR_ADD || e->op == ILIR_SUB) && is_zero(y)) return x;
  if (f32 && e->op == ILIR_ADD && is_zero(x)) return y;
  if ((e->kind == ILIR_UNARY && e->op == ILIR_NEG && is_zero(x)) ||
      (e->kind == ILIR_SELECT && is_zero(x) && is_zero(y)))
    return x;
  e->a = x, e->b = y, e->c = c; /* sched_no_deps_body's block is a copy of its own */
  return e;
}

/* Marks the buffers [b] stores into (*stored) and those it stores anything
 * but 0 into (*other), loops that never run left out. */
static void scan_stores(const IlirBlock *b, bool *stored, bool *other) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      stored[s->buf] = true;
      other[s->buf] |= !is_zero(s->value);
    } else if (s->kind == ILIR_IF) {
      scan_stores(&s->then, stored, other);
      scan_stores(&s->els, stored, other);
    } else if (!empty_range(s->lo, s->hi)) {
      scan_stores(&s->body, stored, other);
    }
  }
}

/* [b] with the zero operators read as 0 and their stores and the loops that
 * never run left out. */
static void zero_block(const Zero *Z, IlirBlock *b) {
  int out = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      if (Z->zero[s->buf]) continue;
      s->value = zero_expr(Z, s->value);
    } else if (s->kind == ILIR_IF) {
      zero_block(Z, &s->then);
      zero_block(Z, &s->els);
    } else {
      if (empty_range(s->lo, s->hi)) continue;
      zero_block(Z, &s->body);
    }
    b->stmts[out++] = s;
  }
  b->n = out;
}

IlirBlock sched_no_deps_body(CtxArena *a, const IlirKernel *k, const IlirStmt *nodes) {
  Spec S = {a, k, nodes->var, 0};
  IlirBlock b = spec_block(&S, &nodes->body);
  bool *rows = CTX_NEW_ARRAY(a, bool, k->nbufs);
  for (int i = 0; i < k->nbufs; i++) rows[i] = k->bufs[i].kind == ILIR_BUF_SCRATCH;
  sched_keep_node_rows(k, rows);
  bool *stored = CTX_NEW_ARRAY(a, bool, k->nbufs), *other = CTX_NEW_ARRAY(a, bool, k->nbufs);
  Zero Z = {a, k, CTX_NEW_ARRAY(a, bool, k->nbufs)};
  for (;;) { /* each round drops an operator's stores: at most one round per operator */
    zero_block(&Z, &b); /* folds what is known zero so far */
    memset(stored, 0, (size_t)k->nbufs * sizeof *stored);
    memset(other, 0, (size_t)k->nbufs * sizeof *other);
    scan_stores(&b, stored, other);
    bool more = false;
    for (int i = 0; i < k->nbufs; i++)
      if (rows[i] && stored[i] && !other[i]) Z.zero[i] = more = true;
    if (!more) return b;
  }
}
