/* sched_apply.c — the schedule's transformations of lowered ILIR.
 *
 * ilir_lower gives one level loop whose node loop holds every function's
 * body (dynamic batching). The transformations below follow, each a pass
 * that a plan turns on (sched_apply lists them in order; the default CPU
 * schedule turns on all of them; `--disable=NAME` turns one off).
 * Hoisting node-independent operators (hoist-invariant) is in
 * sched_invariant.c; a schedule's arity groups (`specialize
 * n.num_children == K`) in sched_spec.c, its `parallel` in sched_plan.c.
 *
 * Leaf specialization (specialize-leaf). A node is at level 0 exactly when
 * it has no dependencies (the linearizer's levels: 0 for a node without
 * dependencies, one more than the highest dependency otherwise), so a body
 * `PRE; if num_deps[n] == 0 { LEAF } else { INNER }` becomes
 *
 *   for l in levels [0, num_levels > 0)          { for n in level l { PRE; LEAF } }
 *   for l in levels [num_levels > 0, num_levels) { for n in level l { PRE; INNER } }
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
#include "sched/sched_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sched_host_vectors(int *floats, int *regs) {
  *floats = 4, *regs = 16;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) *floats = 16, *regs = 32;
  else if (__builtin_cpu_supports("avx")) *floats = 8;
#endif
}

long sched_host_l2(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
  long n = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (n > 0) return n;
#endif
  /* the cache of level 2 among cpu0's, as sysfs lists them ("2048K") */
  for (int i = 0; i < 8; i++) {
    char path[80], buf[32];
    long level = 0, size = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    if (fgets(buf, sizeof buf, f)) level = strtol(buf, NULL, 10);
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (level != 2 || !(f = fopen(path, "r"))) continue;
    char *end = buf;
    if (fgets(buf, sizeof buf, f)) size = strtol(buf, &end, 10);
    fclose(f);
    return *end == 'K' ? size << 10 : *end == 'M' ? size << 20 : size;
  }
  return 0;
}

/* As many rows as fit with the whole block of outputs (sched.h). */
static void fit_tile_rows(SchedPlan *plan) {
  int vl = plan->vec_floats, regs = plan->vec_regs;
  if (vl <= 0 || regs <= 0) sched_host_vectors(&vl, &regs);
  int iv = plan->tile_outs / vl;
  if (plan->tile_nodes <= 0 || iv < 1 || !ilir_tile_fits(1, plan->tile_nodes, iv, regs)) return;
  /* each weight vector loaded feeds every row, and a level of 10 nodes is two
   * tiles (6 + 4), not three (4 + 4 + 2). Zen 5, B=10, one thread, 5
   * alternating rounds against 4 x 64: seqlstm 0.87-0.88x the time, treefc
   * 0.87-0.89x, childsum 0.94-0.95x, treelstm 0.96-0.97x, treegru 0.96-0.99x,
   * dagrnn 1.02x; 5 x 64 and 8 x 48 were slower than 6 x 64 */
  while (plan->tile_nodes < ILIR_TILE_MAX_ROWS && ilir_tile_fits(1, plan->tile_nodes + 1, iv, regs))
    plan->tile_nodes++;
}

SchedPlan sched_default_plan(unsigned disabled, int vec_floats, int vec_regs) {
  SchedPlan plan;
  memset(&plan, 0, sizeof plan);
  plan.specialize_leaf = !(disabled & RA_OPT_SPECIALIZE_LEAF);
  plan.hoist_invariant = !(disabled & RA_OPT_HOIST_INVARIANT);
  plan.hoist_products = !(disabled & RA_OPT_HOIST_PRODUCTS);
  plan.dense_scratch = !(disabled & RA_OPT_DENSE_SCRATCH);
  plan.interchange = !(disabled & RA_OPT_INTERCHANGE);
  plan.fuse_epilogue = !(disabled & RA_OPT_FUSE_EPILOGUE);
  plan.all_deps = !(disabled & RA_OPT_ALL_DEPS);
  plan.share_weights = !(disabled & RA_OPT_SHARE_WEIGHTS);
  plan.hoist_local = !(disabled & RA_OPT_HOIST_LOCAL);
  plan.direct_results = !(disabled & RA_OPT_DIRECT_RESULTS);
  plan.leaf_views = !(disabled & RA_OPT_LEAF_VIEWS);
  plan.balance_levels = !(disabled & RA_OPT_BALANCE_LEVELS);
  if (!(disabled & RA_OPT_REGISTER_TILE)) {
    plan.tile_nodes = 4;
    plan.tile_outs = 64;
    /* a node's own product has rows to spare: 6 x 64 keeps 24 accumulators
     * (MV-RNN H=128 B=10, P = WM [A; B]: 0.80-0.84x the time of 4 x 64 in
     * alternating runs) */
    plan.row_tile_rows = 6;
    plan.row_tile_outs = 64;
  }
  plan.vec_floats = vec_floats, plan.vec_regs = vec_regs;
  fit_tile_rows(&plan);
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

/* [prefix] (cloned when [copy]) followed by [rest]. */
static IlirBlock joined(CtxArena *a, const IlirBlock *prefix, bool copy, IlirBlock rest) {
  IlirBlock b = {CTX_NEW_ARRAY(a, IlirStmt *, prefix->n + rest.n + 1), prefix->n + rest.n};
  for (int i = 0; i < prefix->n; i++)
    b.stmts[i] = copy ? ilir_clone_stmt(a, prefix->stmts[i]) : prefix->stmts[i];
  memcpy(b.stmts + prefix->n, rest.stmts, (size_t)rest.n * sizeof *b.stmts);
  return b;
}

static void specialize_leaf(CtxArena *a, IlirKernel *k) {
  if (k->body.n != 1) return;
  const IlirStmt *levels = k->body.stmts[0];
  if (levels->kind != ILIR_LOOP || levels->loop != ILIR_LOOP_LEVELS || levels->body.n != 1)
    return;
  const IlirStmt *nodes = levels->body.stmts[0];
  if (nodes->kind != ILIR_LOOP || nodes->loop != ILIR_LOOP_NODES || nodes->body.n < 1) return;
  /* the statements before the test (operators defined before `if leaf(n)`)
   * go into both loops */
  const IlirStmt *test = nodes->body.stmts[nodes->body.n - 1];
  if (test->kind != ILIR_IF || !is_leaf_test(k, test->cond, nodes->var)) return;
  IlirBlock prefix = {nodes->body.stmts, nodes->body.n - 1};
  IlirExpr *first_inner = ilir_binary(a, ILIR_GT, ilir_arg(a, 1), ilir_const_i(a, 0));
  IlirStmt **both = CTX_NEW_ARRAY(a, IlirStmt *, 2);
  both[0] = level_loop(a, levels, ilir_const_i(a, 0), first_inner,
                       joined(a, &prefix, false, test->then));
  both[1] = level_loop(a, levels, first_inner, levels->hi, joined(a, &prefix, true, test->els));
  k->body.stmts = both;
  k->body.n = 2;
}

/* specialize-leaf for a tree model without `if leaf(n)` whose nodes' work
 * depends on their number of children (childsum's sums over them): the
 * leaves — a tree's level 0, about half its nodes — in a levels loop of their
 * own, without the work that is zero at a leaf (sched_no_deps_body: U_iou
 * times the children's sum). After hoist-local, which moves the operators
 * that read only the node's input (childsum's W_iou x, W_f x) to the batch's
 * prologue from a loop over all levels, and before all-deps, which makes the
 * sums over the children run over all K slots. Not for a DAG or a sequence:
 * their level 0 is a node or two of each structure. */
static void specialize_leaf_level(CtxArena *a, IlirKernel *k) {
  int at = -1;
  for (int i = 0; i < k->body.n; i++)
    if (k->body.stmts[i]->kind == ILIR_LOOP && k->body.stmts[i]->loop == ILIR_LOOP_LEVELS) {
      if (at >= 0) return; /* leaves already apart */
      at = i;
    }
  if (!k->tree || at < 0) return;
  const IlirStmt *levels = k->body.stmts[at];
  if (levels->body.n != 1) return;
  const IlirStmt *nodes = levels->body.stmts[0];
  if (nodes->kind != ILIR_LOOP || nodes->loop != ILIR_LOOP_NODES ||
      !ilir_block_reads(&nodes->body, k->num_deps_buf))
    return;
  IlirExpr *first_inner = ilir_binary(a, ILIR_GT, ilir_arg(a, 1), ilir_const_i(a, 0));
  IlirStmt **body = CTX_NEW_ARRAY(a, IlirStmt *, k->body.n + 1);
  memcpy(body, k->body.stmts, (size_t)at * sizeof *body);
  body[at] = level_loop(a, levels, ilir_const_i(a, 0), first_inner,
                        sched_no_deps_body(a, k, nodes));
  body[at + 1] = level_loop(a, levels, first_inner, levels->hi, nodes->body);
  memcpy(body + at + 2, k->body.stmts + at + 1, (size_t)(k->body.n - at - 1) * sizeof *body);
  k->body = (IlirBlock){body, k->body.n + 1};
}

/* ---- hoisting products with dependencies' results ------------------------------------ */

/* A product over the dependencies, `sum(k in [0, num_deps[n])) f(sum(r in [0,
 * R)) W[c + i * s + r] * res[dep[n * K + k] * S + off + r])`, multiplies the
 * same weight block with the result of every node once per user of that
 * node. With
 *
 *   P[m * I + i] = sum(r in [0, R)) W[c + i * s + r] * res[m * S + off + r]
 *
 * computed for every node m at the end of its own level (a RESULT buffer: the
 * absent dependency's row stays zero, as W times zeros is), the read becomes
 * P[dep[n * K + k] * I + i]: one product per node instead of one per edge
 * (childsum's forget gates, dagrnn's predecessors), and one that register
 * tiling then computes for a whole level at once. Only reads through a
 * variable ranging over the dependencies are hoisted: a fixed slot
 * (n.child[0]) may use different weights per slot, and hoisting those would
 * compute every slot's product at every node. */

enum { MAX_SCOPE = 64 };

typedef struct {
  const IlirVar *var;
  long extent;    /* a loop over [0, extent), else 0 */
  bool over_deps; /* a reduction over [0, num_deps[n])) */
} Scope;

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  Scope scope[MAX_SCOPE];
  int depth;
  CtxVec made; /* SchedProduct * */
} Hoister;


/* Does [e] read a variable that ranges over the dependencies? */
static bool uses_dep_var(const Hoister *H, const IlirExpr *e) {
  for (int d = 0; d < H->depth; d++)
    if (H->scope[d].over_deps && ilir_uses(e, H->scope[d].var)) return true;
  return false;
}

/* [idx] as dep[..] * S + at, at = off + r; fills *row, *off and *dep. */
static bool result_row(const Hoister *H, const IlirExpr *idx, const IlirVar *r, long *row,
                       long *off, IlirExpr **dep) {
  if (idx->kind != ILIR_BINARY || idx->op != ILIR_ADD) return false;
  const IlirExpr *m = idx->a, *at = idx->b;
  if (m->kind != ILIR_BINARY || m->op != ILIR_MUL || m->b->kind != ILIR_CONST ||
      m->a->kind != ILIR_LOAD || m->a->buf != H->k->dep_buf || !uses_dep_var(H, m->a))
    return false;
  if (ilir_coef(at, r) != 1 || !sched_offset_of(at, r, r, off)) return false;
  *row = m->b->ival;
  *dep = m->a;
  return true;
}

/* [e] with its hoistable products replaced by reads of P. */
static IlirExpr *hoist_expr(Hoister *H, IlirExpr *e) {
  if (!e) return NULL;
  if (e->kind == ILIR_REDUCE) {
    bool deps = e->hi->kind == ILIR_LOAD && e->hi->buf == H->k->num_deps_buf;
    if (H->depth < MAX_SCOPE && e->op == ILIR_SUM && e->lo->kind == ILIR_CONST &&
        e->lo->ival == 0 && e->hi->kind == ILIR_CONST && e->a->kind == ILIR_BINARY &&
        e->a->op == ILIR_MUL) {
      for (int side = 0; side < 2; side++) {
        IlirExpr *w = side ? e->a->a : e->a->b, *x = side ? e->a->b : e->a->a;
        if (w->kind != ILIR_LOAD || H->k->bufs[w->buf].kind != ILIR_BUF_PARAM ||
            x->kind != ILIR_LOAD || H->k->bufs[x->buf].kind != ILIR_BUF_RESULT)
          continue;
        SchedProduct h = {.param = w->buf, .res = x->buf, .out = -1, .rows = e->hi->ival};
        IlirExpr *dep;
        if (!result_row(H, x->a, e->var, &h.row, &h.roff, &dep)) continue;
        /* W[c + i * s + r]: exactly one enclosing output loop variable i */
        const Scope *out = NULL;
        bool ok = ilir_coef(w->a, e->var) == 1;
        for (int d = 0; d < H->depth && ok; d++) {
          long c = ilir_coef(w->a, H->scope[d].var);
          if (c == 0) continue;
          ok = !out && H->scope[d].extent > 0 && c > 0;
          out = &H->scope[d];
          h.stride = c;
        }
        if (!ok || !out || !sched_offset_of(w->a, out->var, e->var, &h.off)) continue;
        h.cols = out->extent;
        int p = sched_product_buffer(H->a, H->k, &H->made, &h, "hoisted");
        IlirExpr *at = ilir_binary(H->a, ILIR_ADD,
                                   ilir_binary(H->a, ILIR_MUL, dep,
                                               ilir_const_i(H->a, out->extent)),
                                   ilir_var(H->a, (IlirVar *)out->var));
        return ilir_load(H->a, H->k, p, at);
      }
    }
    if (H->depth < MAX_SCOPE) {
      H->scope[H->depth++] = (Scope){e->var, 0, deps};
      e->a = hoist_expr(H, e->a);
      H->depth--;
    }
    return e;
  }
  e->a = hoist_expr(H, e->a);
  e->b = hoist_expr(H, e->b);
  e->c = hoist_expr(H, e->c);
  return e;
}

static void hoist_block(Hoister *H, IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      s->value = hoist_expr(H, s->value);
    } else if (s->kind == ILIR_IF) {
      hoist_block(H, &s->then);
      hoist_block(H, &s->els);
    } else if (H->depth < MAX_SCOPE) {
      bool zero = s->lo->kind == ILIR_CONST && s->lo->ival == 0;
      bool fixed = zero && s->hi->kind == ILIR_CONST;
      /* a `for k in n.children` loop runs k over [0, num_deps[n]), as the
       * zoo's sum(k in n.children) does */
      bool deps = zero && s->hi->kind == ILIR_LOAD && s->hi->buf == H->k->num_deps_buf;
      H->scope[H->depth++] = (Scope){s->var, fixed ? s->hi->ival : 0, deps};
      hoist_block(H, &s->body);
      H->depth--;
    }
  }
}

IlirStmt *sched_product_loop(CtxArena *a, IlirKernel *k, const SchedProduct *p, IlirVar *n) {
  IlirVar *i = ilir_new_var(a, k, "i"), *r = ilir_new_var(a, k, "r");
  IlirExpr *wi = ilir_binary(a, ILIR_ADD,
                             ilir_binary(a, ILIR_ADD, ilir_const_i(a, p->off),
                                         ilir_binary(a, ILIR_MUL, ilir_var(a, i),
                                                     ilir_const_i(a, p->stride))),
                             ilir_var(a, r));
  IlirExpr *xi = ilir_binary(a, ILIR_ADD,
                             ilir_binary(a, ILIR_MUL, ilir_var(a, n), ilir_const_i(a, p->row)),
                             ilir_binary(a, ILIR_ADD, ilir_const_i(a, p->roff), ilir_var(a, r)));
  IlirExpr *sum = ilir_reduce(a, ILIR_SUM, r, ilir_const_i(a, 0), ilir_const_i(a, p->rows),
                              ilir_binary(a, ILIR_MUL, ilir_load(a, k, p->param, wi),
                                          ilir_load(a, k, p->res, xi)));
  IlirExpr *at = ilir_binary(a, ILIR_ADD,
                             ilir_binary(a, ILIR_MUL, ilir_var(a, n), ilir_const_i(a, p->cols)),
                             ilir_var(a, i));
  return ilir_loop(a, i, ilir_const_i(a, 0), ilir_const_i(a, p->cols), ILIR_LOOP_SERIAL,
                   one(a, ilir_store(a, p->out, at, sum)));
}

void sched_add_products(CtxArena *a, IlirKernel *k, const CtxVec *made) {
  for (int i = 0; i < k->body.n; i++) {
    IlirStmt *lv = k->body.stmts[i];
    if (lv->kind != ILIR_LOOP || lv->loop != ILIR_LOOP_LEVELS) continue;
    for (int j = 0; j < lv->body.n; j++) {
      IlirStmt *nodes = lv->body.stmts[j];
      if (nodes->kind != ILIR_LOOP || nodes->loop != ILIR_LOOP_NODES) continue;
      IlirStmt **all = CTX_NEW_ARRAY(a, IlirStmt *, nodes->body.n + made->len);
      memcpy(all, nodes->body.stmts, (size_t)nodes->body.n * sizeof *all);
      for (int p = 0; p < made->len; p++)
        all[nodes->body.n + p] = sched_product_loop(a, k, made->items[p], nodes->var);
      nodes->body.stmts = all;
      nodes->body.n += made->len;
    }
  }
}

int sched_product_buffer(CtxArena *a, IlirKernel *k, CtxVec *made, const SchedProduct *p,
                         const char *suffix) {
  for (int i = 0; i < made->len; i++) {
    const SchedProduct *o = made->items[i];
    if (o->param == p->param && o->res == p->res && o->off == p->off &&
        o->stride == p->stride && o->rows == p->rows && o->cols == p->cols &&
        o->row == p->row && o->roff == p->roff)
      return o->out;
  }
  SchedProduct *copy = CTX_NEW(a, SchedProduct);
  *copy = *p;
  copy->out = ilir_add_buf(
      a, k,
      (IlirBuf){.name = ctx_arena_printf(a, "%s.%s%d", k->bufs[p->param].name, suffix, made->len),
                .kind = ILIR_BUF_RESULT, .size = p->cols, .index = k->bufs[p->res].index,
                .func = k->bufs[p->res].func});
  ctx_vec_push(a, made, copy);
  return copy->out;
}

static void hoist_products(CtxArena *a, IlirKernel *k) {
  Hoister H;
  memset(&H, 0, sizeof H);
  H.a = a;
  H.k = k;
  hoist_block(&H, &k->body);
  if (H.made.len) sched_add_products(a, k, &H.made);
}

/* ---- register tiling ----------------------------------------------------------------- */

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  SchedPlan *plan;
  int npacks; /* PACKED buffers added */
  long l2;        /* the plan's L2 per core in bytes, or this host's (0: unknown) */
  bool in_levels; /* inside a levels loop */
  bool *wide;     /* per buffer: its product takes the wide tile (wide_products); NULL: none */
  long level_sum;   /* the weight blocks' bytes of this level's nodes loops so far */
  long level_bytes; /* the most a level's products read (balance_threads) */
} Tiler;

bool sched_offset_of(const IlirExpr *e, const IlirVar *i, const IlirVar *r, long *out) {
  long x, y;
  switch (e->kind) {
  case ILIR_CONST: *out = e->ival; return true;
  case ILIR_VAR: *out = 0; return e->var == i || e->var == r;
  case ILIR_BINARY:
    if (!sched_offset_of(e->a, i, r, &x) || !sched_offset_of(e->b, i, r, &y)) return false;
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
  return ilir_add_buf(
      T->a, k,
      (IlirBuf){.name = ctx_arena_printf(T->a, "%s.packed%d", k->bufs[param].name, T->npacks++),
                .kind = ILIR_BUF_PACKED, .size = pk.rows * pk.cols, .index = ra_param,
                .pack = pk});
}

/* The panel width of the PACKED copies a tile reads (ilir.h): on the CPU the
 * block of outputs codegen's register tile of nb rows covers on the plan's CPU
 * (cg_tile.c, tile_vectors: at most tile_outs, nb * iv accumulators, iv
 * weights, x and a spare in the vector registers), so that a block reads
 * its panel's rows whole and in order. A panel wider than the block has the
 * block read every row's part at the panel's stride: on an AVX2 host (16
 * registers of 8 floats), the default tile(node, i) by (4, 64) makes blocks
 * of 16 floats in panels of 64, and treelstm H=512 B=10 ran 0.61x the time
 * with panels of 16 (5 alternating rounds). (Register tiles are a CPU pass:
 * the CUDA plan leaves them out.) */
static long panel_width(const SchedPlan *plan, int nb, long tile_outs) {
  int vl = plan->vec_floats, regs = plan->vec_regs;
  if (vl <= 0 || regs <= 0) sched_host_vectors(&vl, &regs);
  nb = nb < 1 ? 1 : nb > ILIR_TILE_MAX_ROWS ? ILIR_TILE_MAX_ROWS : nb;
  long iv = tile_outs / vl > 0 ? tile_outs / vl : 1;
  while (iv > 1 && !ilir_tile_fits(1, nb, iv, regs)) iv--;
  return iv * vl;
}

/* The register tile of a product storing into [buf]: its operator's `OP:
 * tile` sizes when a schedule gave them, else the plan's. */
static bool own_shape(const SchedPlan *plan, int buf) {
  return plan->tile_nb && buf < plan->nsets && plan->tile_nb[buf] > 0;
}

static void tile_shape(const SchedPlan *plan, int buf, int *nb, int *no) {
  bool own = own_shape(plan, buf);
  *nb = own ? plan->tile_nb[buf] : plan->tile_nodes;
  *no = own ? plan->tile_no[buf] : plan->tile_outs;
}

/* The wide tile (wide_products): two vectors of outputs and as many rows as
 * fit with them, 12 x 32 with AVX-512's 32 registers of 16 floats (6 x 16
 * with AVX2's 16 of 8, where the default's blocks are that already). */
static void wide_shape(const SchedPlan *plan, int *nb, int *no) {
  int vl = plan->vec_floats, regs = plan->vec_regs;
  if (vl <= 0 || regs <= 0) sched_host_vectors(&vl, &regs);
  int r = 1;
  while (r < ILIR_TILE_MAX_ROWS && ilir_tile_fits(1, r + 1, 2, regs)) r++;
  *nb = r, *no = 2 * vl;
}

/* The register tile of a level product storing into [buf]: tile_shape, or
 * the wide tile where wide_products chose it (then true). */
static bool level_shape(const Tiler *T, int buf, int *nb, int *no) {
  bool wide = T->wide && !own_shape(T->plan, buf) && T->wide[buf];
  if (wide) wide_shape(T->plan, nb, no);
  else tile_shape(T->plan, buf, nb, no);
  return wide;
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
    if (ilir_uses(x, i) || ilir_reads(x, out) || ilir_uses(w->a, n) ||
        ilir_coef(w->a, t->var) != 1 || stride < 0 || !sched_offset_of(w->a, i, t->var, &off))
      continue;
    int nb, no;
    level_shape(T, out, &nb, &no);
    *term = (Term){t, x, w->buf, {off, stride, t->hi->ival, I, panel_width(T->plan, nb, no)}};
    return true;
  }
  return false;
}

/* May a product storing into [buf] be tiled? Always, unless a schedule's
 * tile directives name operators and [buf] is another operator. */
static bool tile_allowed(const Tiler *T, int buf) {
  return T->k->bufs[buf].kind != ILIR_BUF_SCRATCH || sched_in_set(T->plan, T->plan->tile_only, buf);
}

/* Operand rows. A term's x that computes — treelstm's U_iou (h0 + h1),
 * treegru's U_h (r * s) — the register tile would compute once per block of
 * outputs (96 times at treelstm's H = 512) and per r, inside the loop of
 * multiply-adds: two loads, an add and a broadcast from a register for each
 * of its nb rows. Computed once into a row of its own per node (a SCRATCH
 * buffer, one level's rows after dense_scratch) the tile broadcasts it
 * straight from memory. Returns the load of x's row and appends to [pre]
 * the loop that fills it; x itself when it only reads (a load, a view). */
static IlirExpr *operand_row(Tiler *T, const IlirStmt *nodes, const IlirStmt *s,
                             const Term *term, CtxVec *pre) {
  IlirExpr *x = term->x;
  if (x->kind != ILIR_UNARY && x->kind != ILIR_BINARY) return x;
  long R = term->reduce->hi->ival;
  const char *of = T->k->bufs[s->body.stmts[0]->buf].name;
  int row = ilir_add_buf(T->a, T->k,
                         (IlirBuf){.name = ctx_arena_printf(T->a, "%s.x%d", of, pre->len),
                                   .kind = ILIR_BUF_SCRATCH, .size = R, .index = -1,
                                   .func = -1});
  IlirVar *r = ilir_new_var(T->a, T->k, "r");
  IlirExpr *base = ilir_binary(T->a, ILIR_MUL, ilir_var(T->a, nodes->var), ilir_const_i(T->a, R));
  IlirStmt *fill = ilir_store(T->a, row, ilir_binary(T->a, ILIR_ADD, base, ilir_var(T->a, r)),
                              ilir_subst(T->a, x, term->reduce->var, ilir_var(T->a, r)));
  ctx_vec_push(T->a, pre, ilir_loop(T->a, r, ilir_const_i(T->a, 0), ilir_const_i(T->a, R),
                                    ILIR_LOOP_SERIAL, one(T->a, fill)));
  return ilir_load(T->a, T->k, row,
                   ilir_binary(T->a, ILIR_ADD, base, ilir_var(T->a, term->reduce->var)));
}

enum { MAX_TERMS = 16 };

/* A block of weights a level's products read (wide_products). */
typedef struct {
  int param;
  long off, stride;
} WeightBlock;

/* The terms of [s] into [parts] when it is a tileable product in the node
 * loop [nodes] (tile_product): their number, 0 when it is not one. */
static int product_terms(Tiler *T, const IlirStmt *nodes, const IlirStmt *s, Term *parts) {
  if (s->kind != ILIR_LOOP || s->loop != ILIR_LOOP_SERIAL || s->body.n != 1 ||
      s->lo->kind != ILIR_CONST || s->lo->ival != 0 || s->hi->kind != ILIR_CONST)
    return 0;
  const IlirStmt *st = s->body.stmts[0];
  if (st->kind != ILIR_STORE || ilir_coef(st->index, s->var) != 1) return 0;
  if (!tile_allowed(T, st->buf)) return 0;
  IlirExpr *terms[MAX_TERMS];
  int n = ilir_sum_terms(st->value, terms, MAX_TERMS);
  if (n > MAX_TERMS) return 0;
  for (int t = 0; t < n; t++)
    if (!tile_term(T, terms[t], nodes->var, s->var, s->hi->ival, st->buf, &parts[t])) return 0;
  return n;
}

/* Wide tiles for the products of a level whose weights the L2 cannot hold.
 * A level of B=10 trees is ~10 nodes; the default tile of 6 x 64 does them
 * as 6 + 4 rows, each panel of weights read twice, the first time from the
 * L3 where they do not stay in the L2 between levels. A tile of 12 x 32
 * reads each panel once, for all of them, and its multiply-adds overlap
 * that stream better (a microbenchmark of 10 rows over 4 MiB: 0.87x the
 * time; over weights the L2 holds, equal). H=512 B=10, 5 alternating
 * rounds on a 2 MiB L2, one thread: treegru (3 MiB a level) 0.97x the time,
 * treelstm (4 MiB) 0.97x, seqlstm (4 MiB) 0.95x, childsum (4 MiB) 0.96x;
 * two threads 0.80-0.95x; B=1 1.00-1.01x. Where the weights fit, wide
 * tiles were slower (dagrnn, 1 MiB: 1.07x; treefc, 2 MiB, before codegen
 * prefetched wide tiles' weights: 1.03x).
 * Products that share a block take the wide shape too: treelstm's U_f h0
 * and U_f h1, one tile of two products after share_weights, where codegen
 * fits 7 rows x 2 vectors of each (not 12: cg_tile.c, tile_vectors; 7
 * rows leave too few general registers for their 14 row pointers and
 * reload some every step, yet 6 rows took 1.025x the time) and prefetches
 * the block ahead as it streams in (cg_tile.c, prefetch_ahead).
 * With the plan's 6 x 64 they had been 3 rows x 4 vectors, each panel read
 * from the L3 by a level's first tile of 3 rows and from the L2 by the
 * others, 100 us of treelstm H=512's 230 us a level; neither the shape
 * alone (6 x 32: 1.00x) nor the prefetches alone (1.00x) changed that. Both,
 * Intel host (2 MiB L2), 9 alternating rounds against the plan's shape:
 * treelstm H=512 B=10 0.941x the time (0.92-0.96), two threads 0.929x;
 * balanced trees (levels of ~36 nodes) 0.997x; B=1 1.005x.
 * Weights that fill the L2 count as exceeding it: a level that reads as
 * many bytes as the L2 holds finds few of them there at the next level (a
 * cyclic pass over a cache's size under LRU misses every time, and the
 * level's rows take their share of it); treefc H=512, 2 MiB a level on a
 * 2 MiB L2, read its weights from the L3 at 28 GB/s with the plan's tile.
 * Wide and balanced (balance_threads), Intel host, 5-7 alternating rounds
 * against the plan's tile: B=10 0.906-0.945x the time, two threads 0.945x;
 * a batch of one tree 1.00x. A product over a group of a level's nodes
 * (IlirStmt.team_lo: refactor_recursion's places, specialize's arities)
 * keeps the plan's tile: it runs over a part of the level, and `ctx run
 * --batch 1`'s refactored treefc (driver/pipeline.c, batch_one_kernel),
 * whose place groups hold 1-3 nodes, took 1.10x the time with wide tiles
 * (2 vectors a row: half the chains of multiply-adds of the plan's 4).
 * Returns per buffer whether the product storing into it takes the wide
 * tile: inside a levels loop, when the level's weight blocks (each counted
 * once) fill or exceed the plan's L2, every product of the level that no
 * `OP: tile` sizes, unless the loop is a group's; NULL when none does.
 * Adds the blocks' bytes to T->level_sum (balance_threads). */
static bool *wide_products(Tiler *T, const IlirStmt *nodes) {
  if (!T->in_levels || T->l2 <= 0) return NULL;
  enum { MAX_BLOCKS = 64 };
  WeightBlock block[MAX_BLOCKS];
  int nblocks = 0, n = nodes->body.n;
  bool *product = CTX_NEW_ARRAY(T->a, bool, (size_t)n + 1);
  long bytes = 0;
  Term parts[MAX_TERMS];
  for (int i = 0; i < n; i++) {
    int nterms = product_terms(T, nodes, nodes->body.stmts[i], parts);
    product[i] = nterms > 0;
    for (int t = 0; t < nterms; t++) {
      const IlirPack *pk = &parts[t].pack;
      int b = 0;
      while (b < nblocks && !(block[b].param == parts[t].param && block[b].off == pk->off &&
                              block[b].stride == pk->stride))
        b++;
      if (b == MAX_BLOCKS) return NULL;
      if (b == nblocks) {
        block[nblocks++] = (WeightBlock){parts[t].param, pk->off, pk->stride};
        bytes += pk->rows * pk->cols * (long)sizeof(float);
      }
    }
  }
  T->level_sum += bytes;
  if (bytes < T->l2 || nodes->team_lo) return NULL;
  bool *wide = CTX_NEW_ARRAY(T->a, bool, (size_t)T->k->nbufs), any = false;
  for (int i = 0; i < n; i++)
    if (product[i]) wide[nodes->body.stmts[i]->body.stmts[0]->buf] = any = true;
  return any ? wide : NULL;
}

/* A node loop over the nodes of [nodes] (its range and team) with [body]. */
static IlirStmt *nodes_like(CtxArena *a, const IlirStmt *nodes, IlirBlock body) {
  IlirStmt *loop = ilir_loop(a, nodes->var, nodes->lo, nodes->hi, ILIR_LOOP_NODES, body);
  loop->team_lo = nodes->team_lo, loop->team_hi = nodes->team_hi;
  return loop;
}

/* [s] as a register-tiled node loop over [nodes]' range, or NULL when it is
 * not a sum of products with parameter blocks; the loops filling its
 * operand rows appended to [pre]. */
static IlirStmt *tile_product(Tiler *T, const IlirStmt *nodes, const IlirStmt *s,
                              CtxVec *pre) {
  Term parts[MAX_TERMS];
  int n = product_terms(T, nodes, s, parts);
  if (!n) return NULL;
  const IlirStmt *st = s->body.stmts[0];
  long I = s->hi->ival;
  IlirExpr *sum = NULL;
  for (int t = 0; t < n; t++) {
    int p = packed_buffer(T, parts[t].param, parts[t].pack);
    IlirVar *r = parts[t].reduce->var;
    IlirExpr *at = ilir_binary(T->a, ILIR_ADD,
                               ilir_binary(T->a, ILIR_MUL, ilir_var(T->a, r),
                                           ilir_const_i(T->a, I)),
                               ilir_var(T->a, s->var));
    IlirExpr *x = ilir_reduce(T->a, ILIR_SUM, r, parts[t].reduce->lo, parts[t].reduce->hi,
                              ilir_binary(T->a, ILIR_MUL, operand_row(T, nodes, s, &parts[t], pre),
                                          ilir_load(T->a, T->k, p, at)));
    sum = sum ? ilir_binary(T->a, ILIR_ADD, sum, x) : x;
  }
  IlirStmt *store = ilir_store(T->a, st->buf, st->index, sum);
  IlirStmt *outs = ilir_loop(T->a, s->var, s->lo, s->hi, ILIR_LOOP_SERIAL, one(T->a, store));
  IlirStmt *tiled = nodes_like(T->a, nodes, one(T->a, outs));
  tiled->tile_streams = level_shape(T, st->buf, &tiled->tile_nodes, &tiled->tile_outs);
  return tiled;
}

/* Marks in [rd] the buffers [e] reads. */
static void expr_reads(const IlirExpr *e, bool *rd) {
  if (!e) return;
  if (e->kind == ILIR_LOAD) rd[e->buf] = true;
  expr_reads(e->a, rd), expr_reads(e->b, rd), expr_reads(e->c, rd);
  expr_reads(e->lo, rd), expr_reads(e->hi, rd);
}

/* Marks in [rd] the buffers [s] reads and in [wr] those it writes. */
static void stmt_accesses(const IlirStmt *s, bool *rd, bool *wr) {
  if (s->kind == ILIR_STORE) {
    wr[s->buf] = true;
    expr_reads(s->index, rd), expr_reads(s->value, rd);
    return;
  }
  expr_reads(s->lo, rd), expr_reads(s->hi, rd), expr_reads(s->cond, rd);
  const IlirBlock *bs[3] = {&s->body, &s->then, &s->els};
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < bs[j]->n; i++) stmt_accesses(bs[j]->stmts[i], rd, wr);
}

/* A statement of a node's body: its tiled form (NULL: not a tileable
 * product) and the buffers it reads and writes (stmt_accesses). */
typedef struct {
  IlirStmt *s, *tile;
  CtxVec pre; /* the tile's operand rows' loops (operand_row) */
  bool *rd, *wr;
} NodeStmt;

/* May [x] and [y] run in either order: neither writes a buffer the other
 * reads or writes? */
static bool commute(int nbufs, const NodeStmt *x, const NodeStmt *y) {
  for (int b = 0; b < nbufs; b++)
    if ((x->wr[b] && (y->rd[b] || y->wr[b])) || (y->wr[b] && x->rd[b])) return false;
  return true;
}

/* A node's statements in an order that splits well around its tileable
 * products: a statement after a product that it commutes with, and with
 * everything between, moves to just before that product, into the node loop
 * of the statements before it. MV-RNN's P = WM [A; B] reads what B a and
 * A b, before W's level product, read — the children's matrices: after them,
 * in the same node's loop, it finds those in L2 (in a loop of its own after
 * the product, a level's children's matrices, 64 KiB each at H = 128, had
 * left L2 by then). */
static void hoist_past_products(int nbufs, NodeStmt *body, int n) {
  for (int i = 1; i < n; i++) {
    if (body[i].tile) continue;
    int to = -1;
    for (int j = i - 1; j >= 0 && commute(nbufs, &body[i], &body[j]); j--)
      if (body[j].tile) to = j; /* just before the nearest product passed */
    if (to < 0) continue;
    NodeStmt moved = body[i];
    memmove(body + to + 1, body + to, (size_t)(i - to) * sizeof *body);
    body[to] = moved;
  }
}

/* Splits the node loop [nodes] around its tileable products; NULL when it
 * has none. */
static IlirBlock *split_nodes(Tiler *T, const IlirStmt *nodes) {
  CtxVec out = {0}, run = {0};
  int n = nodes->body.n, nbufs = T->k->nbufs, tiled = 0;
  NodeStmt *body = CTX_NEW_ARRAY(T->a, NodeStmt, n > 0 ? (size_t)n : 1);
  for (int i = 0; i < n; i++) {
    body[i].s = nodes->body.stmts[i];
    body[i].tile = tile_product(T, nodes, body[i].s, &body[i].pre);
    tiled += body[i].tile != NULL;
  }
  if (!tiled) return NULL;
  for (int i = 0; i < n; i++) {
    body[i].rd = CTX_NEW_ARRAY(T->a, bool, 2 * (size_t)nbufs);
    body[i].wr = body[i].rd + nbufs;
    stmt_accesses(body[i].s, body[i].rd, body[i].wr);
  }
  hoist_past_products(nbufs, body, n);
  for (int i = 0; i < n; i++) {
    if (!body[i].tile) {
      ctx_vec_push(T->a, &run, body[i].s);
      continue;
    }
    for (int p = 0; p < body[i].pre.len; p++) ctx_vec_push(T->a, &run, body[i].pre.items[p]);
    if (run.len) {
      IlirBlock b = {(IlirStmt **)run.items, run.len};
      ctx_vec_push(T->a, &out, nodes_like(T->a, nodes, b));
      run = (CtxVec){0};
    }
    ctx_vec_push(T->a, &out, body[i].tile);
  }
  if (run.len) {
    IlirBlock b = {(IlirStmt **)run.items, run.len};
    ctx_vec_push(T->a, &out, nodes_like(T->a, nodes, b));
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
    if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_NODES && !s->tile_nodes) {
      T->wide = wide_products(T, s);
      split = split_nodes(T, s);
      T->wide = NULL;
    } else if (s->kind == ILIR_LOOP) {
      bool outer = T->in_levels;
      T->in_levels |= s->loop == ILIR_LOOP_LEVELS;
      if (s->loop == ILIR_LOOP_LEVELS) T->level_sum = 0;
      tile_block(T, &s->body);
      if (s->loop == ILIR_LOOP_LEVELS && T->level_sum > T->level_bytes)
        T->level_bytes = T->level_sum;
      T->in_levels = outer;
    }
    if (split) {
      for (int j = 0; j < split->n; j++) ctx_vec_push(T->a, &v, split->stmts[j]);
      continue;
    }
    ctx_vec_push(T->a, &v, s);
  }
  b->stmts = (IlirStmt **)v.items;
  b->n = v.len;
}

/* Products inside a node: a loop `for t in [0, T) { for j in [0, J) { out[..]
 * = sum(r) x(t, r) * y[.. + r * RS + j] } }` — MV-RNN's P = WM A, a matrix
 * times the node's matrix — is a register tile as it is, over t: of its
 * operator's `OP: tile` sizes, else the plan's row tile, else its level
 * tile. */
static void tile_rows(Tiler *T, IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_IF) {
      tile_rows(T, &s->then);
      tile_rows(T, &s->els);
      continue;
    }
    if (s->kind != ILIR_LOOP || s->tile_nodes) continue;
    const IlirStmt *outs, *store;
    if (s->loop == ILIR_LOOP_SERIAL && s->lo->kind == ILIR_CONST && s->hi->kind == ILIR_CONST) {
      SchedPlan *plan = T->plan;
      bool rows = plan->row_tile_rows > 0 && plan->row_tile_outs > 0;
      s->tile_nodes = rows ? plan->row_tile_rows : plan->tile_nodes;
      s->tile_outs = rows ? plan->row_tile_outs : plan->tile_outs;
      if (ilir_tiled_parts(T->k, s, &outs, &store) && tile_allowed(T, store->buf)) {
        if (own_shape(plan, store->buf))
          tile_shape(plan, store->buf, &s->tile_nodes, &s->tile_outs);
        if (!plan->row_axes[0])
          plan->row_axes[0] = s->var->name, plan->row_axes[1] = outs->var->name;
        continue;
      }
      s->tile_nodes = s->tile_outs = 0;
    }
    tile_rows(T, &s->body);
  }
}

/* balance_levels: the most threads whose share of [bytes], the weight blocks
 * of the level that reads the most (wide_products counts them, each once in
 * each of its nodes loops), still exceeds [l2], the plan's L2 (or this
 * host's), and at least one where the whole fills it (as wide_products counts
 * it: treefc H=512, 2 MiB on a 2 MiB L2, wide and balanced 0.906x the time at
 * B=10, wide alone 0.948x, balanced alone 1.01x); 0 when one thread's whole
 * does not fill it. A share of two threads that only fills it stays
 * unbalanced (treelstm H=512 on two threads, 2 MiB each, 1.02x balanced). The
 * runtime levels a batch evenly on as many threads or fewer
 * (CtxrtModelDesc.balance_threads): with the weights streaming from the L3 at
 * every level, a level of one node waits on them about as long as a level of
 * several, and ASAP levels leave a tree batch's top levels with one or two
 * nodes (the tallest tree's) and its bottom ones with dozens. Evened out
 * (runtime/ctxrt_linearize.c, balance_levels), 7 alternating rounds on the
 * Intel host (2 MiB L2) against --disable=balance-levels, B=10, one thread:
 * treelstm H=512 (4 MiB a level) 0.967x the time, treegru H=512 (3 MiB)
 * 0.955x, childsum H=512 0.958x, seqlstm H=512 1.017x (0.97-1.03: its
 * sequences are all as long, nothing moves); B=1 1.003x. Balanced whatever
 * the weights, nothing was gained where they fit the L2 (H=256: treelstm
 * 0.986x, treegru 0.991x; treefc H=512, 2 MiB, 1.013x), nor on two threads
 * for treelstm H=512, each thread's half of the weights in its own L2
 * (1.04x), which this rule leaves unbalanced. */
static int balance_threads(long bytes, long l2) {
  if (l2 <= 0 || bytes < l2) return 0;
  long t = (bytes - 1) / l2;
  return t < 1 ? 1 : t > 1024 ? 1024 : (int)t;
}

static void register_tile(CtxArena *a, IlirKernel *k, SchedPlan *plan) {
  Tiler T = {a, k, plan, 0, plan->l2_bytes > 0 ? plan->l2_bytes : sched_host_l2(), false, NULL,
             0, 0};
  if (plan->tile_nodes > 0 && plan->tile_outs > 0) tile_block(&T, &k->body);
  tile_rows(&T, &k->body);
  if (plan->balance_levels) k->balance_threads = balance_threads(T.level_bytes, T.l2);
}

/* ---- epilogue fusion ----------------------------------------------------------------- */

/* A tiled level product is followed by the node loop of what comes after it
 * in each node's body. Its leading elementwise statements over the product's
 * outputs — `for i in [0, J) { g[n, i] = sigmoid(mm[n, i] + b[i]) }`, and
 * after it whatever reads only those same elements — move into the tile as
 * epilogues (ilir.h), so codegen applies them to each block of outputs while
 * it is in L1, instead of in another pass over the level. Statements with a
 * reduction (childsum's sum over the children) stay where they are: inside
 * the epilogue they measured 2x slower. On by default (`--disable=
 * fuse-epilogue). Measured on one thread, runs with and without it
 * alternating, medians: treegru H=256 faster (B=10 0.977 -> 0.953 ms, B=1
 * 0.204 -> 0.198 ms; faster in 18 and 19 of 21 pairs), every other bench
 * case equal within this machine's noise (+-3%; treefc H=256 runs are
 * bimodal, 0.43 or 0.53 ms at B=10 with either setting). An earlier figure
 * that had it slower (childsum H=64 B=10 0.24 against 0.17 ms) does not
 * reproduce in alternating runs, with this codegen or the one before; on
 * childsum it moves only the bias additions (the activations come after the
 * sum over the children). */
static bool has_reduce(const IlirExpr *e) {
  return e && (e->kind == ILIR_REDUCE || has_reduce(e->a) || has_reduce(e->b) ||
               has_reduce(e->c));
}

/* A loop of one store without a reduction: it vectorizes as an epilogue (a
 * reduction inside would keep the loop around it scalar). */
static bool elementwise(const IlirStmt *s) {
  return s->kind == ILIR_LOOP && s->body.n == 1 && s->body.stmts[0]->kind == ILIR_STORE &&
         !has_reduce(s->body.stmts[0]->value);
}

static void fuse_block(CtxArena *a, IlirKernel *k, IlirBlock *b) {
  int out = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS) fuse_block(a, k, &s->body);
    b->stmts[out++] = s;
    IlirStmt *next = i + 1 < b->n ? b->stmts[i + 1] : NULL;
    if (s->kind != ILIR_LOOP || s->loop != ILIR_LOOP_NODES || !s->tile_nodes || !next ||
        next->kind != ILIR_LOOP || next->loop != ILIR_LOOP_NODES || next->tile_nodes ||
        next->var != s->var || !ilir_same_expr(next->lo, s->lo, NULL, NULL) ||
        !ilir_same_expr(next->hi, s->hi, NULL, NULL))
      continue;
    int moved = 0;
    IlirStmt **grown = CTX_NEW_ARRAY(a, IlirStmt *, s->body.n + next->body.n);
    memcpy(grown, s->body.stmts, (size_t)s->body.n * sizeof *grown);
    IlirBlock saved = s->body;
    s->body.stmts = grown;
    for (; moved < next->body.n && elementwise(next->body.stmts[moved]); moved++) {
      s->body.stmts[s->body.n++] = next->body.stmts[moved];
      const IlirStmt *outs, *store;
      if (!ilir_tiled_parts(k, s, &outs, &store)) {
        s->body.n--;
        break;
      }
    }
    if (!moved) {
      s->body = saved;
      continue;
    }
    next->body.stmts += moved;
    next->body.n -= moved;
    if (!next->body.n) i++; /* all of it moved */
  }
  b->n = out;
}

/* ---- buffers read and written only at their node's row ---------------------- */

typedef struct {
  const IlirKernel *k;
  bool *flags;
  const IlirVar *node;  /* the innermost nodes loop's variable */
  int levels;           /* levels loops around */
} RowScan;

/* A nodes loop outside the levels (hoist-local's prologue) writes rows that
 * the levels read later: not rows of one level. */
static void scan_access(RowScan *R, int buf, const IlirExpr *index) {
  if (R->flags[buf] &&
      (!R->node || !R->levels || ilir_coef(index, R->node) != R->k->bufs[buf].size))
    R->flags[buf] = false;
}

static void scan_expr(RowScan *R, const IlirExpr *e) {
  if (!e) return;
  if (e->kind == ILIR_LOAD) scan_access(R, e->buf, e->a);
  scan_expr(R, e->a), scan_expr(R, e->b), scan_expr(R, e->c);
  scan_expr(R, e->lo), scan_expr(R, e->hi);
}

static void scan_block(RowScan *R, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      scan_access(R, s->buf, s->index);
      scan_expr(R, s->index), scan_expr(R, s->value);
    } else if (s->kind == ILIR_IF) {
      scan_expr(R, s->cond);
      scan_block(R, &s->then), scan_block(R, &s->els);
    } else {
      scan_expr(R, s->lo), scan_expr(R, s->hi);
      const IlirVar *node = R->node;
      if (s->loop == ILIR_LOOP_NODES) R->node = s->var;
      R->levels += s->loop == ILIR_LOOP_LEVELS;
      scan_block(R, &s->body);
      R->levels -= s->loop == ILIR_LOOP_LEVELS;
      R->node = node;
    }
  }
}

void sched_keep_node_rows(const IlirKernel *k, bool *flags) {
  RowScan R = {k, flags, NULL, 0};
  scan_block(&R, &k->body);
}

/* [e] with the index of each load of a buffer of R->flags rewritten. */
static IlirExpr *map_loads(SchedRewrite *R, IlirExpr *e) {
  if (!e) return NULL;
  IlirExpr *x = map_loads(R, e->a), *y = map_loads(R, e->b), *c = map_loads(R, e->c);
  IlirExpr *lo = map_loads(R, e->lo), *hi = map_loads(R, e->hi);
  bool load = e->kind == ILIR_LOAD && R->flags[e->buf];
  if (!load && x == e->a && y == e->b && c == e->c && lo == e->lo && hi == e->hi) return e;
  IlirExpr *copy = CTX_NEW(R->a, IlirExpr); /* expressions may be shared */
  *copy = *e;
  copy->a = load ? R->at(R, x, e->buf) : x;
  copy->b = y, copy->c = c, copy->lo = lo, copy->hi = hi;
  return copy;
}

void sched_rewrite_accesses(SchedRewrite *R, IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      s->value = map_loads(R, s->value);
      s->index = map_loads(R, s->index);
      if (R->flags[s->buf]) s->index = R->at(R, s->index, s->buf);
    } else if (s->kind == ILIR_IF) {
      s->cond = map_loads(R, s->cond);
      sched_rewrite_accesses(R, &s->then), sched_rewrite_accesses(R, &s->els);
    } else {
      s->lo = map_loads(R, s->lo), s->hi = map_loads(R, s->hi);
      const IlirVar *node = R->node, *level = R->level;
      if (s->loop == ILIR_LOOP_NODES) R->node = s->var;
      if (s->loop == ILIR_LOOP_LEVELS) R->level = s->var;
      sched_rewrite_accesses(R, &s->body);
      R->node = node, R->level = level;
    }
  }
}

/* ---- dense scratch ---------------------------------------------------------------- */

/* An operator's scratch row is written and read only at the node of its nodes
 * loop, and only while that node's level is computed. Such a buffer needs rows
 * for one level, not for every node: its accesses n * S + x become
 * (n - levels[l]) * S + x and it becomes a LEVEL_SCRATCH buffer of
 * (widest level + 1) rows. A 100,000-node chain then keeps one row per
 * operator instead of 100,000. (Every nodes loop is inside a levels loop.) */

/* (n * S + x) - levels[l] * S */
static IlirExpr *rebase(SchedRewrite *R, IlirExpr *index, int buf) {
  CtxArena *a = R->a;
  IlirExpr *start = ilir_load(a, R->k, R->k->levels_buf, ilir_var(a, (IlirVar *)R->level));
  return ilir_binary(a, ILIR_SUB, index,
                     ilir_binary(a, ILIR_MUL, start, ilir_const_i(a, R->k->bufs[buf].size)));
}

static void dense_scratch(CtxArena *a, IlirKernel *k, const SchedPlan *plan) {
  bool *dense = CTX_NEW_ARRAY(a, bool, k->nbufs);
  for (int b = 0; b < k->nbufs; b++)
    dense[b] = k->bufs[b].kind == ILIR_BUF_SCRATCH && sched_in_set(plan, plan->dense_only, b);
  sched_keep_node_rows(k, dense);
  SchedRewrite R = {a, k, dense, rebase, NULL, NULL};
  sched_rewrite_accesses(&R, &k->body);
  for (int b = 0; b < k->nbufs; b++)
    if (dense[b]) k->bufs[b].kind = ILIR_BUF_LEVEL_SCRATCH;
}

static int tiles_in(const IlirBlock *b) {
  int n = 0;
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    n += s->kind == ILIR_LOOP && s->tile_nodes > 0;
    n += tiles_in(&s->body) + tiles_in(&s->then) + tiles_in(&s->els);
  }
  return n;
}

/* A schedule's `tile` that made no register tile at all says so, rather
 * than leaving the kernel untiled without a word: a level product is tiled
 * in the internal nodes' own loop, which `specialize leaf` makes. */
static void warn_untiled(CtxDiag *diag, const SchedPlan *plan) {
  const Schedule *sc = plan->schedule;
  for (int i = 0; i < sc->ndirs; i++)
    if (sc->dirs[i].verb == SCHED_TILE) {
      ctx_diag_warning(diag, sc->dirs[i].span, "not applied: no product was tiled%s",
                       plan->specialize_leaf ? "" : " (a level product is tiled in the "
                       "internal nodes' own loop: add 'specialize leaf')");
      return;
    }
}

bool sched_apply(CtxArena *arena, CtxDiag *diag, IlirKernel *k, SchedPlan *plan) {
  if (plan->failed) return false;
  if (plan->specialize_leaf) specialize_leaf(arena, k);
  if (plan->schedule) sched_schedule_sets(arena, k, plan);
  if (plan->hoist_invariant) sched_hoist_invariant(arena, k, plan->hoist_only);
  if (plan->hoist_products) hoist_products(arena, k);
  if (plan->refactor_recursion && !sched_refactor_recursion(arena, diag, k, plan)) return false;
  if (plan->hoist_local) sched_hoist_local(arena, k);
  if (plan->specialize_leaf) specialize_leaf_level(arena, k);
  if (plan->all_deps) sched_all_deps(arena, k);
  if (plan->schedule && !sched_schedule_loops(arena, diag, k, plan)) return false;
  if ((plan->tile_nodes > 0 && plan->tile_outs > 0) ||
      (plan->row_tile_rows > 0 && plan->row_tile_outs > 0)) {
    register_tile(arena, k, plan);
    if (!tiles_in(&k->body)) { /* --dump=schedule then shows no tile */
      if (plan->schedule) warn_untiled(diag, plan);
      plan->tile_nodes = plan->tile_outs = 0;
    }
  }
  if (plan->fuse_epilogue) fuse_block(arena, k, &k->body);
  if (plan->share_weights) sched_share_weights(arena, k);
  if (plan->nparallel && !sched_schedule_shares(arena, diag, k, plan)) return false;
  sched_specialize_arity(arena, k, plan);
  if (plan->interchange) ilir_interchange(arena, k);
  if (plan->direct_results) sched_direct_results(arena, k);
  if (plan->leaf_views) sched_leaf_views(arena, k);
  if (plan->dense_scratch) dense_scratch(arena, k, plan);
  sched_unroll_recursion(arena, k, plan->unroll_recursion);
  ilir_simplify(arena, k);
  return ilir_verify(k, diag);
}
