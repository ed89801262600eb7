/* sched_apply.c — the schedule's transformations of lowered ILIR.
 *
 * ilir_lower gives one level loop whose node loop holds every function's
 * body (dynamic batching). Two transformations follow, each a pass that a
 * plan turns on (the default CPU schedule turns on both; `--disable=NAME`
 * turns one off):
 *
 * Leaf specialization (specialize-leaf). A node is at level 0 exactly when
 * it has no dependencies (the linearizer's levels: 0 for a node without
 * dependencies, one more than the highest dependency otherwise), so a body
 * that is one `if num_deps[n] == 0 { LEAF } else { INNER }` becomes
 *
 *   for l in levels [0, num_levels > 0)          { for n in level l { LEAF } }
 *   for l in levels [num_levels > 0, num_levels) { for n in level l { INNER } }
 *
 * and the inner levels' bodies are straight-line code.
 *
 * Register tiling (register-tile). In a node loop, an output loop that is a
 * sum of matrix-vector products with parameter blocks,
 *
 *   for i in [0, I) { out[n * S + i] = sum(r in [0, R)) W[c + i * s + r] * x(n, r) + ... }
 *
 * (x not reading i, W not reading n), becomes a node loop of its own — the
 * node loop splits around it, which keeps every node on the thread that
 * computes its other statements, since codegen shares identical node ranges
 * identically — marked as a register tile, with W read through a PACKED
 * copy transposed at load time, P[r * I + i] = W[c + i * s + r]:
 *
 *   for n in nodes [..] register tile NB nodes x IO outputs {
 *     for i in [0, I) { out[n * S + i] = sum(r in [0, R)) x(n, r) * P[r * I + i] }
 *   }
 *
 * Codegen keeps NB x IO accumulators in vector registers, so each row of P it
 * loads feeds NB nodes and each x(n, r) it computes feeds IO outputs: the
 * level's products become one matrix-matrix product instead of a
 * matrix-vector product per node. Only the order of the sums changes.
 */
#include "sched/sched.h"

#include <string.h>

SchedPlan sched_default_plan(unsigned disabled) {
  SchedPlan plan = {0, 0, 0};
  plan.specialize_leaf = !(disabled & RA_OPT_SPECIALIZE_LEAF);
  if (!(disabled & RA_OPT_REGISTER_TILE)) {
    plan.tile_nodes = 4;
    plan.tile_outs = 64;
  }
  return plan;
}

/* ---- leaf specialization --------------------------------------------------------- */

/* Is [c] the test num_deps[n] == 0? */
static bool is_leaf_test(const IlirKernel *k, const IlirExpr *c, const IlirVar *n) {
  return c->kind == ILIR_BINARY && c->op == ILIR_EQ && c->b->kind == ILIR_CONST &&
         c->b->ival == 0 && c->a->kind == ILIR_LOAD && c->a->buf == k->num_deps_buf &&
         c->a->a->kind == ILIR_VAR && c->a->a->var == n;
}

static IlirBlock one(CtxArena *a, IlirStmt *s) {
  IlirBlock b = {CTX_NEW_ARRAY(a, IlirStmt *, 1), 1};
  b.stmts[0] = s;
  return b;
}

/* for l in levels [lo, hi) { for n in nodes [levels[l], levels[l + 1]) { body } }
 * with the variables and node bounds of [levels]. */
static IlirStmt *level_loop(CtxArena *a, const IlirStmt *levels, IlirExpr *lo, IlirExpr *hi,
                            IlirBlock body) {
  const IlirStmt *nodes = levels->body.stmts[0];
  IlirStmt *inner = ilir_loop(a, nodes->var, nodes->lo, nodes->hi, ILIR_LOOP_NODES, body);
  return ilir_loop(a, levels->var, lo, hi, ILIR_LOOP_LEVELS, one(a, inner));
}

static void specialize_leaf(CtxArena *a, IlirKernel *k) {
  if (k->body.n != 1) return;
  const IlirStmt *levels = k->body.stmts[0];
  if (levels->kind != ILIR_LOOP || levels->loop != ILIR_LOOP_LEVELS || levels->body.n != 1)
    return;
  const IlirStmt *nodes = levels->body.stmts[0];
  if (nodes->kind != ILIR_LOOP || nodes->loop != ILIR_LOOP_NODES || nodes->body.n != 1) return;
  const IlirStmt *test = nodes->body.stmts[0];
  if (test->kind != ILIR_IF || !is_leaf_test(k, test->cond, nodes->var)) return;
  IlirExpr *first_inner = ilir_binary(a, ILIR_GT, ilir_arg(a, 1), ilir_const_i(a, 0));
  IlirStmt **both = CTX_NEW_ARRAY(a, IlirStmt *, 2);
  both[0] = level_loop(a, levels, ilir_const_i(a, 0), first_inner, test->then);
  both[1] = level_loop(a, levels, first_inner, levels->hi, test->els);
  k->body.stmts = both;
  k->body.n = 2;
}

/* ---- register tiling ----------------------------------------------------------------- */

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  const SchedPlan *plan;
  int npacks; /* PACKED buffers added */
} Tiler;

/* The value of the index [e], linear in [i] and [r] with nothing else
 * variable, at i = r = 0; false when [e] is something else. */
static bool offset_of(const IlirExpr *e, const IlirVar *i, const IlirVar *r, long *out) {
  long x, y;
  switch (e->kind) {
  case ILIR_CONST: *out = e->ival; return true;
  case ILIR_VAR: *out = 0; return e->var == i || e->var == r;
  case ILIR_BINARY:
    if (!offset_of(e->a, i, r, &x) || !offset_of(e->b, i, r, &y)) return false;
    if (e->op == ILIR_ADD) *out = x + y;
    else if (e->op == ILIR_SUB) *out = x - y;
    else if (e->op == ILIR_MUL) *out = x * y;
    else return false;
    return true;
  default: return false;
  }
}

/* The PACKED buffer holding P[r * I + i] = W[off + i * stride + r] (W the
 * PARAM buffer [param]), added
 * to the kernel when no earlier product uses the same block. */
static int packed_buffer(Tiler *T, int param, IlirPack pk) {
  IlirKernel *k = T->k;
  int ra_param = k->bufs[param].index;
  for (int b = 0; b < k->nbufs; b++)
    if (k->bufs[b].kind == ILIR_BUF_PACKED && k->bufs[b].index == ra_param &&
        !memcmp(&k->bufs[b].pack, &pk, sizeof pk))
      return b;
  IlirBuf *bufs = CTX_NEW_ARRAY(T->a, IlirBuf, k->nbufs + 1);
  memcpy(bufs, k->bufs, (size_t)k->nbufs * sizeof *bufs);
  IlirBuf *b = &bufs[k->nbufs];
  b->name = ctx_arena_printf(T->a, "%s.packed%d", k->bufs[param].name, T->npacks++);
  b->kind = ILIR_BUF_PACKED;
  b->size = pk.rows * pk.cols;
  b->index = ra_param;
  b->pack = pk;
  k->bufs = bufs;
  return k->nbufs++;
}

static bool reads(const IlirExpr *e, int buf) {
  if (!e) return false;
  if (e->kind == ILIR_LOAD && e->buf == buf) return true;
  return reads(e->a, buf) || reads(e->b, buf) || reads(e->c, buf) || reads(e->lo, buf) ||
         reads(e->hi, buf);
}

/* One term of a tileable product: sum(r in [0, R)) x * W[...]. */
typedef struct {
  IlirExpr *reduce, *x;
  int param;
  IlirPack pack;
} Term;

/* Is [t] sum(r in [0, R)) of a parameter block W[off + i * stride + r] times
 * an x that reads neither i nor the buffer [out]? Fills [term] when it is. */
static bool tile_term(Tiler *T, IlirExpr *t, const IlirVar *n, const IlirVar *i, long I,
                      int out, Term *term) {
  if (t->kind != ILIR_REDUCE || t->op != ILIR_SUM || t->lo->kind != ILIR_CONST ||
      t->lo->ival != 0 || t->hi->kind != ILIR_CONST || t->hi->ival <= 0)
    return false;
  IlirExpr *m = t->a;
  if (m->kind != ILIR_BINARY || m->op != ILIR_MUL) return false;
  for (int side = 0; side < 2; side++) {
    IlirExpr *w = side ? m->a : m->b, *x = side ? m->b : m->a;
    if (w->kind != ILIR_LOAD || T->k->bufs[w->buf].kind != ILIR_BUF_PARAM) continue;
    long stride = ilir_coef(w->a, i), off;
    if (ilir_uses(x, i) || reads(x, out) || ilir_uses(w->a, n) ||
        ilir_coef(w->a, t->var) != 1 || stride < 0 || !offset_of(w->a, i, t->var, &off))
      continue;
    *term = (Term){t, x, w->buf, {off, stride, t->hi->ival, I}};
    return true;
  }
  return false;
}

/* [s] as a register-tiled node loop over [nodes]' range, or NULL when it is
 * not a sum of products with parameter blocks. */
static IlirStmt *tile_product(Tiler *T, const IlirStmt *nodes, const IlirStmt *s) {
  if (s->kind != ILIR_LOOP || s->loop != ILIR_LOOP_SERIAL || s->body.n != 1 ||
      s->lo->kind != ILIR_CONST || s->lo->ival != 0 || s->hi->kind != ILIR_CONST)
    return NULL;
  const IlirStmt *st = s->body.stmts[0];
  if (st->kind != ILIR_STORE || ilir_coef(st->index, s->var) != 1) return NULL;
  IlirExpr *terms[16];
  Term parts[16];
  long I = s->hi->ival;
  int n = ilir_sum_terms(st->value, terms, 16);
  if (n > 16) return NULL;
  for (int t = 0; t < n; t++)
    if (!tile_term(T, terms[t], nodes->var, s->var, I, st->buf, &parts[t])) return NULL;
  IlirExpr *sum = NULL;
  for (int t = 0; t < n; t++) {
    int p = packed_buffer(T, parts[t].param, parts[t].pack);
    IlirVar *r = parts[t].reduce->var;
    IlirExpr *at = ilir_binary(T->a, ILIR_ADD,
                               ilir_binary(T->a, ILIR_MUL, ilir_var(T->a, r),
                                           ilir_const_i(T->a, I)),
                               ilir_var(T->a, s->var));
    IlirExpr *x = ilir_reduce(T->a, ILIR_SUM, r, parts[t].reduce->lo, parts[t].reduce->hi,
                              ilir_binary(T->a, ILIR_MUL, parts[t].x,
                                          ilir_load(T->a, T->k, p, at)));
    sum = sum ? ilir_binary(T->a, ILIR_ADD, sum, x) : x;
  }
  IlirStmt *store = ilir_store(T->a, st->buf, st->index, sum);
  IlirStmt *outs = ilir_loop(T->a, s->var, s->lo, s->hi, ILIR_LOOP_SERIAL, one(T->a, store));
  IlirStmt *tiled = ilir_loop(T->a, nodes->var, nodes->lo, nodes->hi, ILIR_LOOP_NODES,
                              one(T->a, outs));
  tiled->tile_nodes = T->plan->tile_nodes;
  tiled->tile_outs = T->plan->tile_outs;
  return tiled;
}

/* Splits the node loop [nodes] around its tileable products; NULL when it
 * has none. */
static IlirBlock *split_nodes(Tiler *T, const IlirStmt *nodes) {
  CtxVec out = {0}, run = {0};
  int tiled = 0;
  for (int i = 0; i < nodes->body.n; i++) {
    IlirStmt *s = nodes->body.stmts[i];
    IlirStmt *t = tile_product(T, nodes, s);
    if (!t) {
      ctx_vec_push(T->a, &run, s);
      continue;
    }
    if (run.len) {
      IlirBlock b = {(IlirStmt **)run.items, run.len};
      ctx_vec_push(T->a, &out, ilir_loop(T->a, nodes->var, nodes->lo, nodes->hi,
                                         ILIR_LOOP_NODES, b));
      run = (CtxVec){0};
    }
    ctx_vec_push(T->a, &out, t);
    tiled++;
  }
  if (!tiled) return NULL;
  if (run.len) {
    IlirBlock b = {(IlirStmt **)run.items, run.len};
    ctx_vec_push(T->a, &out, ilir_loop(T->a, nodes->var, nodes->lo, nodes->hi,
                                       ILIR_LOOP_NODES, b));
  }
  IlirBlock *b = CTX_NEW(T->a, IlirBlock);
  *b = (IlirBlock){(IlirStmt **)out.items, out.len};
  return b;
}

static void tile_block(Tiler *T, IlirBlock *b) {
  CtxVec v = {0};
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    IlirBlock *split = NULL;
    if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_NODES && !s->tile_nodes)
      split = split_nodes(T, s);
    else if (s->kind == ILIR_LOOP)
      tile_block(T, &s->body);
    if (split) {
      for (int j = 0; j < split->n; j++) ctx_vec_push(T->a, &v, split->stmts[j]);
      continue;
    }
    ctx_vec_push(T->a, &v, s);
  }
  b->stmts = (IlirStmt **)v.items;
  b->n = v.len;
}

static void register_tile(CtxArena *a, IlirKernel *k, const SchedPlan *plan) {
  Tiler T = {a, k, plan, 0};
  tile_block(&T, &k->body);
}

bool sched_apply(CtxArena *arena, CtxDiag *diag, IlirKernel *k, const SchedPlan *plan) {
  if (plan->specialize_leaf) specialize_leaf(arena, k);
  if (plan->tile_nodes > 0 && plan->tile_outs > 0) register_tile(arena, k, plan);
  return ilir_verify(k, diag);
}
