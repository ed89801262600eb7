/* sched_gpu.c — schedules for the CUDA target: the plan of a `schedule M
 * for cuda` block (or the default one), the GPU bindings and shared-memory
 * caching applied to scheduled ILIR, and the check that keeps the bound ILIR
 * sound on both backends.
 *
 * The passes the CPU uses that do not depend on the machine are shared
 * (sched_apply: leaf specialization, hoisting, dense scratch, the loop
 * directives); register tiles and epilogue fusion are CPU code shapes and
 * stay off. After them, sched_gpu_apply:
 *
 *   bind node to block     every NODES loop's nodes shared among the blocks
 *                          (ILIR_BIND_BLOCK), every loop of its body over the
 *                          output rows shared among the block's threads
 *                          (ILIR_BIND_THREAD, a block barrier after each) or,
 *                          for a sum a warp can share (row_bind), its warps
 *                          (ILIR_BIND_WARP) — the default; where a NODES
 *                          loop's body is not all loops the kernel keeps
 *                          nodes on threads
 *   bind i to warp|thread  those loops on warps wherever legal / on threads
 *   bind i to grid         as warp, and each level's warp loops that read only
 *                          earlier levels move into a loop over the whole grid
 *                          (split_grid; by default where they are big enough);
 *                          where the rest of the node's body is elementwise it
 *                          joins them there, grouped by output element, and
 *                          the level waits at one grid barrier (fuse_level)
 *   bind node to warp      as block, but every NODES loop's nodes shared
 *                          among the grid's warps (ILIR_BIND_NODE_WARP), a
 *                          node's rows among the warp's lanes; no grid loops
 *   bind node to thread    each GPU thread one node (ilir.h's team, unbound)
 *   cache W, ... in shared parameters copied into each block's shared memory
 *                          at the kernel's start, in order while they fit in
 *                          the architecture's shared memory per block; the
 *                          rest are read through the read-only path (a
 *                          warning says which)
 *
 * Soundness (sched_gpu_verify; TESTING.md "CUDA without a GPU"): the CPU
 * backend runs bound loops as ordinary loops and block barriers as nothing,
 * which computes the same values as the GPU only if inside a barrier-free
 * phase no thread reads what another thread writes. A phase is one THREAD
 * or WARP loop (a warp's lanes exchange their parts of a sum by shuffles,
 * not memory): each of its iterations stores only elements of its own (indices
 * moving with the loop variable) and reads a buffer the loop stores into only
 * at an element the same iteration stores. Across blocks the CPU team's rule
 * holds (every store writes the row of the node being computed).
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

/* Shared memory per block by opt-in, bytes (CUDA C Programming Guide,
 * "Technical Specifications per Compute Capability": 8.0: 163 KB, 8.6 / 8.9:
 * 99 KB, 9.0: 227 KB). */
long sched_gpu_shared_limit(const char *arch) {
  if (arch && strcmp(arch, "sm_80") == 0) return 163L * 1024;
  if (arch && (strcmp(arch, "sm_86") == 0 || strcmp(arch, "sm_89") == 0)) return 99L * 1024;
  return 227L * 1024;
}

static void cuda_directive(CtxDiag *diag, const SchedDirective *d, SchedPlan *plan,
                           SchedGpuPlan *gpu) {
  switch (d->verb) {
  case SCHED_DYNAMIC_BATCH: case SCHED_PERSIST: break; /* always so: one kernel */
  case SCHED_SPECIALIZE:
    if (d->naxes == 1 && strcmp(d->axes[0], "arity") == 0)
      ctx_diag_warning(diag, d->span, "not applied: the cuda backend specializes the leaves "
                                      "only");
    else
      plan->specialize_leaf = true;
    break;
  case SCHED_HOIST: plan->hoist_invariant = plan->hoist_products = true; break;
  case SCHED_DENSE: plan->dense_scratch = true; break;
  case SCHED_HOIST_INVARIANT: plan->hoist_invariant = true; break;
  case SCHED_HOIST_PRODUCTS: plan->hoist_products = true; break;
  case SCHED_HOIST_LOCAL: plan->hoist_local = true; break;
  case SCHED_ALL_DEPS: plan->all_deps = true; break;
  case SCHED_BIND:
    for (int a = 0; a < d->naxes; a++)
      if (strcmp(d->axes[a], "node") == 0) {
        gpu->bind_warps = strcmp(d->where[a], "warp") == 0;
        gpu->bind_blocks = gpu->bind_warps || strcmp(d->where[a], "block") == 0;
      } else {
        gpu->rows = strcmp(d->where[a], "warp") == 0   ? SCHED_ROWS_WARP
                    : strcmp(d->where[a], "grid") == 0 ? SCHED_ROWS_GRID
                                                       : SCHED_ROWS_THREAD;
      }
    if (gpu->bind_warps && gpu->rows == SCHED_ROWS_GRID) {
      ctx_diag_warning(diag, d->span, "not applied: 'i to grid' with nodes on warps; a node's "
                                      "sums stay on its warp");
      gpu->rows = SCHED_ROWS_AUTO;
    }
    break;
  case SCHED_CACHE:
    if (d->where[0] && strcmp(d->where[0], "shared") == 0) {
      for (int i = 0; i < d->nparams && gpu->ncache < SCHED_MAX_CACHE; i++)
        gpu->cache[gpu->ncache++] = d->params[i];
      gpu->cache_span = d->span;
    } else {
      ctx_diag_warning(diag, d->span, "not applied: the cuda backend keeps a node's values "
                                      "in registers where it can; 'cache ... in registers' "
                                      "is not a directive of it");
    }
    break;
  case SCHED_UNROLL_RECURSION: case SCHED_REFACTOR_RECURSION:
    ctx_diag_warning(diag, d->span, "not applied: the cuda backend runs the levels one at a "
                                    "time with a grid barrier between them (the recursion "
                                    "primitives are cpu directives for now)");
    break;
  case SCHED_TILE: case SCHED_FUSE: case SCHED_SHARE_WEIGHTS: case SCHED_PARALLEL:
    ctx_diag_warning(diag, d->span, "not applied: the cuda backend shares a level's nodes "
                                    "among blocks and their rows among threads (bind)");
    break;
  case SCHED_DIRECT_RESULTS:
    ctx_diag_warning(diag, d->span, "not applied: the cuda backend keeps each operator's "
                                    "row and copies the returned ones (direct_results is a "
                                    "cpu directive for now)");
    break;
  case SCHED_LEAF_VIEWS:
    ctx_diag_warning(diag, d->span, "not applied: the cuda backend copies the leaves' "
                                    "parameter rows into their result rows (leaf_views is a "
                                    "cpu directive for now)");
    break;
  case SCHED_BALANCE_LEVELS:
    ctx_diag_warning(diag, d->span, "not applied: the cuda backend keeps its weights on "
                                    "chip or in the L2 across levels (balance_levels evens "
                                    "out a cpu thread's levels)");
    break;
  default: break; /* split, unroll, reorder, vectorize: sched_schedule_loops */
  }
}

SchedPlan sched_cuda_plan(CtxDiag *diag, const Schedule *s, unsigned disabled,
                          SchedGpuPlan *gpu) {
  memset(gpu, 0, sizeof *gpu);
  gpu->bind_blocks = true;
  gpu->shared_limit = sched_gpu_shared_limit(NULL);
  gpu->fuse = !(disabled & RA_OPT_GRID_FUSION);
  SchedPlan plan = sched_default_plan(disabled | RA_OPT_REGISTER_TILE | RA_OPT_FUSE_EPILOGUE |
                                          RA_OPT_DIRECT_RESULTS | RA_OPT_LEAF_VIEWS,
                                      0, 0);
  if (!s) return plan;
  memset(&plan, 0, sizeof plan);
  plan.interchange = !(disabled & RA_OPT_INTERCHANGE);
  plan.schedule = s;
  for (int i = 0; i < s->ndirs; i++) cuda_directive(diag, &s->dirs[i], &plan, gpu);
  return plan;
}

/* ---- binding ------------------------------------------------------------------------ */

/* Does every store inside [s] move with [v] (distinct iterations, distinct
 * elements)? */
static bool stores_move(const IlirStmt *s, const IlirVar *v) {
  if (s->kind == ILIR_STORE) {
    long c = ilir_coef(s->index, v);
    return c != 0 && c != ILIR_NONLINEAR;
  }
  const IlirBlock *bs[3] = {&s->body, &s->then, &s->els};
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < bs[j]->n; i++)
      if (!stores_move(bs[j]->stmts[i], v)) return false;
  return true;
}

/* Where a loop of a block whose stores move with its variable runs: on the
 * block's warps where each iteration is a sum a warp can share among its
 * lanes (ilir_warp_sum) and either the schedule says `bind i to warp` or,
 * by default, the sum reads a row of weights per output (one thread per
 * output would read 32 rows at once, 32 cache lines a load, and rows in
 * shared memory in the same bank; a warp reads a row along its lanes, one
 * line a load), else on its threads. */
static IlirBind row_bind(const IlirStmt *s, SchedRowBind rows) {
  if (rows == SCHED_ROWS_THREAD || !ilir_warp_sum(s, rows == SCHED_ROWS_AUTO))
    return ILIR_BIND_THREAD;
  return ILIR_BIND_WARP;
}

/* Binds the statements of a block loop's body [b] (when [bind]): a loop
 * whose stores move with its variable to threads or warps (row_bind), a
 * loop of such loops (over a node's dependencies, say) stays a loop every
 * thread of the block runs alike, with its inner loops bound. Returns false
 * when a statement is neither. */
static bool bind_rows(IlirBlock *b, bool bind, SchedRowBind rows) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind != ILIR_LOOP || s->tile_nodes || s->loop == ILIR_LOOP_NODES) return false;
    if (stores_move(s, s->var)) {
      if (bind) s->bind = row_bind(s, rows);
    } else if (!bind_rows(&s->body, bind, rows)) {
      return false;
    }
  }
  return true;
}

/* Visits the NODES loops of [b]: counts those that cannot be bound into
 * [*bad], and binds them all when [bind], to blocks or (with [warps]) to
 * the grid's warps. */
static void bind_nodes(IlirBlock *b, bool bind, bool warps, SchedRowBind rows, int *bad) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_NODES) {
      if (s->tile_nodes || !bind_rows(&s->body, false, rows)) (*bad)++;
      if (!bind) continue;
      s->bind = warps ? ILIR_BIND_NODE_WARP : ILIR_BIND_BLOCK;
      bind_rows(&s->body, true, rows);
      continue;
    }
    if (s->kind == ILIR_LOOP) bind_nodes(&s->body, bind, warps, rows, bad);
    if (s->kind == ILIR_IF)
      bind_nodes(&s->then, bind, warps, rows, bad), bind_nodes(&s->els, bind, warps, rows, bad);
  }
}

/* ---- a level's sums over the whole grid ------------------------------------------- */

static bool stmt_loads(const IlirStmt *s, int buf) {
  IlirBlock one = {(IlirStmt **)&s, 1};
  return ilir_block_reads(&one, buf);
}

/* Does [s] read a buffer that one of [before] (n of them) stores into? */
static bool reads_any_stored(const IlirKernel *k, const IlirStmt *s, IlirStmt *const *before,
                             int n) {
  for (int b = 0; b < k->nbufs; b++) {
    if (!stmt_loads(s, b)) continue;
    for (int i = 0; i < n; i++)
      if (ilir_stores(before[i], b)) return true;
  }
  return false;
}

/* Does [e] contain a reduction? */
static bool has_reduce(const IlirExpr *e) {
  return e && (e->kind == ILIR_REDUCE || has_reduce(e->a) || has_reduce(e->b) ||
               has_reduce(e->c) || has_reduce(e->lo) || has_reduce(e->hi));
}

/* [e] (inside a sum over [r]) with each load of a buffer that a loop of
 * [body] before [at] stores — `for j { X[ix(j)] = f(j) }`, f elementwise
 * (no reduction), itself so rewritten for what it reads from the loops
 * before it — replaced by f at the element it reads, where the load is
 * X[ix(r)]: a sum over treegru's `s = h0 + h1` reads the children's rows
 * themselves; or a sum over the children accumulated in X
 * (inline_accumulation). A load that does not fit stays (the sum then reads
 * what the body stores, and keeps its block). */
static IlirExpr *inline_producers(CtxArena *a, const IlirKernel *k, IlirExpr *e, const IlirVar *r,
                                  IlirStmt *const *body, int at);

/* The sum X[ix(r)] = sum(c in [lo, hi)) f(c, r) where [body][q] zeroes X
 * (`for j { X[ix(j)] = 0 }`) and [body][q + 1] is the only other store of it
 * before [at], adding to it (`for c in [lo, hi) { for j { X[ix(j)] = X[ix(j)]
 * + f(c, j) } }`: childsum's sum over the children), f itself inlined; or
 * NULL. [e] is the load X[ix(r)]. */
static IlirExpr *inline_accumulation(CtxArena *a, const IlirKernel *k, const IlirExpr *e,
                                     const IlirVar *r, IlirStmt *const *body, int q, int at) {
  const IlirStmt *z = body[q], *acc = q + 1 < at ? body[q + 1] : NULL;
  const IlirStmt *zs = z->kind == ILIR_LOOP && z->body.n == 1 ? z->body.stmts[0] : NULL;
  if (!zs || zs->kind != ILIR_STORE || zs->buf != e->buf || zs->value->kind != ILIR_CONST ||
      zs->value->fval != 0 || !ilir_same_expr(e->a, zs->index, r, z->var) || !acc ||
      acc->kind != ILIR_LOOP || acc->body.n != 1)
    return NULL;
  const IlirStmt *in = acc->body.stmts[0];
  const IlirStmt *st = in->kind == ILIR_LOOP && in->body.n == 1 ? in->body.stmts[0] : NULL;
  if (!st || st->kind != ILIR_STORE || st->buf != e->buf || !ilir_same_expr(e->a, st->index, r, in->var))
    return NULL;
  const IlirExpr *v = st->value; /* X[ix(j)] + f */
  if (v->kind != ILIR_BINARY || v->op != ILIR_ADD || v->a->kind != ILIR_LOAD || v->a->buf != e->buf ||
      !ilir_same_expr(v->a->a, st->index, NULL, NULL) || ilir_reads(v->b, e->buf) ||
      has_reduce(v->b) || ilir_reads(acc->lo, e->buf) || ilir_reads(acc->hi, e->buf))
    return NULL;
  for (int q2 = q + 2; q2 < at; q2++)
    if (ilir_stores(body[q2], e->buf)) return NULL;
  IlirExpr *f = ilir_subst(a, v->b, in->var, ilir_var(a, (IlirVar *)r));
  f = inline_producers(a, k, f, r, body, q);
  return ilir_reduce(a, ILIR_SUM, acc->var, acc->lo, acc->hi, f);
}

static IlirExpr *inline_producers(CtxArena *a, const IlirKernel *k, IlirExpr *e, const IlirVar *r,
                                  IlirStmt *const *body, int at) {
  if (!e) return NULL;
  if (e->kind == ILIR_LOAD) {
    for (int q = 0; q < at; q++) {
      IlirStmt *p = body[q];
      if (!ilir_stores(p, e->buf)) continue;
      IlirExpr *red = inline_accumulation(a, k, e, r, body, q, at);
      if (red) return red;
      const IlirStmt *st = p->kind == ILIR_LOOP && p->body.n == 1 ? p->body.stmts[0] : NULL;
      if (!st || st->kind != ILIR_STORE || st->buf != e->buf || has_reduce(st->value) ||
          !ilir_same_expr(e->a, st->index, r, p->var) || stmt_loads(p, e->buf))
        return e;
      for (int q2 = q + 1; q2 < at; q2++) /* the last store of X before the sum */
        if (ilir_stores(body[q2], e->buf)) return e;
      IlirExpr *f = ilir_subst(a, st->value, p->var, ilir_var(a, (IlirVar *)r));
      return inline_producers(a, k, f, r, body, q);
    }
    return e;
  }
  IlirExpr *x = inline_producers(a, k, e->a, r, body, at);
  IlirExpr *y = inline_producers(a, k, e->b, r, body, at);
  IlirExpr *c = inline_producers(a, k, e->c, r, body, at);
  if (x == e->a && y == e->b && c == e->c) return e;
  IlirExpr *copy = CTX_NEW(a, IlirExpr);
  *copy = *e;
  copy->a = x, copy->b = y, copy->c = c;
  return copy;
}

/* inline_producers on each sum of the sum tree [e] (a WARP loop's value). */
static IlirExpr *inline_sums(CtxArena *a, const IlirKernel *k, IlirExpr *e, IlirStmt *const *body,
                             int at) {
  if (e->kind == ILIR_REDUCE) {
    IlirExpr *v = inline_producers(a, k, e->a, e->var, body, at);
    return v == e->a ? e : ilir_reduce(a, e->op, e->var, e->lo, e->hi, v);
  }
  if (e->kind != ILIR_BINARY || e->op != ILIR_ADD) return e;
  IlirExpr *x = inline_sums(a, k, e->a, body, at), *y = inline_sums(a, k, e->b, body, at);
  return x == e->a && y == e->b ? e : ilir_binary(a, ILIR_ADD, x, y);
}

/* Multiply-adds per node at which a level's sums go to the whole grid by
 * default: 64 Ki (256 KiB of float weights a node). One multiprocessor
 * streams that from L2 in a few microseconds, longer than the grid barrier
 * the split adds (an estimate from the GPUs' published bandwidths, not yet
 * measured: docs/cuda.md). */
enum { GRID_MIN_MACS = 64 * 1024 };

/* Splits the block loop [b->stmts[at]] of a level: the WARP loops of its
 * body that read nothing an earlier statement of the body or of [b] stores
 * (after inline_sums), and whose output no earlier statement of the body
 * reads or writes, move
 * into a NODES loop before it bound to the grid (ILIR_BIND_GRID): every
 * (node, output) pair one warp's, all the grid's warps at work on a level of
 * one node; a grid barrier after it. By default only where they are
 * GRID_MIN_MACS or more multiply-adds a node; with `bind i to grid`
 * wherever one moves. Returns the loops inserted (0 or 1). */
static int split_grid(CtxArena *a, const IlirKernel *k, IlirBlock *b, int at, SchedRowBind rows) {
  IlirStmt *s = b->stmts[at];
  IlirStmt **moved = CTX_NEW_ARRAY(a, IlirStmt *, s->body.n);
  IlirStmt **kept = CTX_NEW_ARRAY(a, IlirStmt *, s->body.n);
  int nm = 0, nk = 0;
  long macs = 0;
  IlirStmt **inlined = CTX_NEW_ARRAY(a, IlirStmt *, s->body.n); /* per moved loop, or NULL */
  for (int i = 0; i < s->body.n; i++) {
    IlirStmt *w = s->body.stmts[i], *cand = w, *ist = NULL;
    if (w->kind == ILIR_LOOP && w->bind == ILIR_BIND_WARP) {
      /* a sum of what the body's earlier loops computed elementwise from
       * earlier levels reads those levels itself, if it moves */
      IlirStmt *st = w->body.stmts[0];
      IlirExpr *v = inline_sums(a, k, st->value, s->body.stmts, i);
      if (v != st->value) {
        ist = ilir_store(a, st->buf, st->index, v);
        cand = ilir_loop(a, w->var, w->lo, w->hi, w->loop, (IlirBlock){&ist, 1});
      }
    }
    bool ok = w->kind == ILIR_LOOP && w->bind == ILIR_BIND_WARP && w->lo->kind == ILIR_CONST &&
              w->hi->kind == ILIR_CONST && !reads_any_stored(k, cand, s->body.stmts, i) &&
              !reads_any_stored(k, cand, b->stmts, at);
    if (ok) {
      long cn = ilir_coef(w->body.stmts[0]->index, s->var);
      int out = w->body.stmts[0]->buf;
      ok = cn != 0 && cn != ILIR_NONLINEAR;
      for (int j = 0; ok && j < i; j++)
        ok = !stmt_loads(s->body.stmts[j], out) && !ilir_stores(s->body.stmts[j], out);
    }
    if (!ok) {
      kept[nk++] = w;
      continue;
    }
    IlirExpr *terms[ILIR_WARP_MAX_TERMS];
    int nt = ilir_warp_terms(w, terms);
    for (int t = 0; t < nt; t++)
      macs += (w->hi->ival - w->lo->ival) * (terms[t]->hi->ival - terms[t]->lo->ival);
    inlined[nm] = ist;
    moved[nm++] = w;
  }
  if (nm == 0 || (rows == SCHED_ROWS_AUTO && macs < GRID_MIN_MACS)) return 0;
  for (int m = 0; m < nm; m++)
    if (inlined[m]) moved[m]->body.stmts[0] = inlined[m];
  IlirStmt *grid = ilir_loop(a, s->var, s->lo, s->hi, ILIR_LOOP_NODES, (IlirBlock){moved, nm});
  grid->team_lo = s->team_lo, grid->team_hi = s->team_hi;
  grid->bind = ILIR_BIND_GRID;
  s->body = (IlirBlock){kept, nk};
  IlirStmt **stmts = CTX_NEW_ARRAY(a, IlirStmt *, b->n + 1);
  memcpy(stmts, b->stmts, sizeof *stmts * (size_t)at);
  stmts[at] = grid;
  memcpy(stmts + at + 1, b->stmts + at, sizeof *stmts * (size_t)(b->n - at));
  b->stmts = stmts, b->n++;
  return 1;
}

static bool fuse_level(CtxArena *a, IlirKernel *k, IlirBlock *b, int at);

/* split_grid on every block loop directly inside a levels loop of [b], then
 * fuse_level where it applies and [fuse] (--disable=grid-fusion: not). Returns
 * the number of levels fused. */
static int grid_levels(CtxArena *a, IlirKernel *k, IlirBlock *b, bool level, SchedRowBind rows,
                       bool fuse) {
  int fused = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (level && s->kind == ILIR_LOOP && s->bind == ILIR_BIND_BLOCK) {
      int added = split_grid(a, k, b, i, rows);
      if (added && fuse && fuse_level(a, k, b, i)) fused++, added = 0; /* the block loop is gone */
      i += added;
      continue;
    }
    if (s->kind == ILIR_LOOP)
      fused += grid_levels(a, k, &s->body, s->loop == ILIR_LOOP_LEVELS, rows, fuse);
    if (s->kind == ILIR_IF)
      fused += grid_levels(a, k, &s->then, level, rows, fuse) +
               grid_levels(a, k, &s->els, level, rows, fuse);
  }
  return fused;
}

/* ---- one grid barrier a level: the node's elementwise rest in the grid loop ------- */

enum { LINEAR_CAP = 16 };

/* Are the integer expressions [x] and [y] a constant apart (ilir_linear's
 * forms: the same atoms, the same coefficients)? The constant x - y into [*d]. */
static bool const_apart(IlirExpr *x, IlirExpr *y, long *d) {
  IlirExpr *ax[LINEAR_CAP], *ay[LINEAR_CAP];
  long cx[LINEAR_CAP], cy[LINEAR_CAP], kx, ky;
  int nx = ilir_linear(x, ax, cx, LINEAR_CAP, &kx), ny = ilir_linear(y, ay, cy, LINEAR_CAP, &ky);
  if (nx < 0 || nx != ny) return false;
  for (int i = 0; i < nx; i++) {
    bool found = false;
    for (int j = 0; j < ny && !found; j++)
      found = cx[i] == cy[j] && ilir_same_expr(ax[i], ay[j], NULL, NULL);
    if (!found) return false;
  }
  *d = kx - ky;
  return true;
}

/* Is the index [e] in another node's row: no [n] among its atoms, a
 * dependency id (dep[...]) among them? Such a row is an earlier level's
 * (the team's rule: a node reads other nodes' rows only from earlier
 * levels), which nothing in this level stores. */
static bool other_row(const IlirKernel *k, IlirExpr *e, const IlirVar *n) {
  IlirExpr *atoms[LINEAR_CAP];
  long coefs[LINEAR_CAP], c;
  int na = ilir_linear(e, atoms, coefs, LINEAR_CAP, &c);
  bool dep = false;
  for (int i = 0; i < na; i++) {
    if (atoms[i]->kind == ILIR_VAR && atoms[i]->var == n) return false;
    dep |= atoms[i]->kind == ILIR_LOAD && atoms[i]->buf == k->dep_buf;
  }
  return dep;
}

/* Does every load in [e] (of statement [at] of the fused WARP loop [w], a
 * store of sums when [sums]) of a buffer [w] stores read another node's row
 * or, elementwise, the element an earlier statement of [w] stores? */
static bool fused_loads_ok(const IlirKernel *k, const IlirVar *n, const IlirStmt *w, int at,
                           bool sums, IlirExpr *e) {
  if (!e) return true;
  if (e->kind == ILIR_LOAD && ilir_stores(w, e->buf) && !other_row(k, e->a, n)) {
    bool earlier = false;
    long d;
    for (int q = 0; q < at && !sums && !earlier; q++) {
      const IlirStmt *p = w->body.stmts[q];
      earlier = p->buf == e->buf && const_apart(p->index, e->a, &d) && d == 0;
    }
    if (!earlier) return false;
  }
  return fused_loads_ok(k, n, w, at, sums, e->a) && fused_loads_ok(k, n, w, at, sums, e->b) &&
         fused_loads_ok(k, n, w, at, sums, e->c) && fused_loads_ok(k, n, w, at, sums, e->lo) &&
         fused_loads_ok(k, n, w, at, sums, e->hi);
}

/* Do the stores of the fused WARP loop [w] in the GRID loop over [n] write
 * distinct elements at distinct (node, iteration) pairs: each index
 * n * cn + i * ci + ..., the stores of one buffer a constant apart by at
 * least a band of ci x iterations, the node's bands within |cn|? */
static bool fused_stores_move(const IlirVar *n, const IlirStmt *w) {
  long G = w->hi->ival - w->lo->ival;
  for (int i = 0; i < w->body.n; i++) {
    const IlirStmt *st = w->body.stmts[i];
    long cn = ilir_coef(st->index, n), ci = ilir_coef(st->index, w->var), lo = 0, hi = 0, d;
    if (cn == 0 || cn == ILIR_NONLINEAR || ci == 0 || ci == ILIR_NONLINEAR) return false;
    for (int j = 0; j < w->body.n; j++) {
      const IlirStmt *o = w->body.stmts[j];
      if (j == i || o->buf != st->buf) continue;
      if (!const_apart(o->index, st->index, &d) || labs(d) < labs(ci) * G) return false;
      lo = d < lo ? d : lo, hi = d > hi ? d : hi;
    }
    if (labs(cn) < hi - lo + labs(ci) * G) return false;
  }
  return true;
}

/* What breaks the discipline of the fused WARP loop [w] (ilir.h, IlirBind)
 * in the GRID loop over [n], or NULL. */
static const char *fused_unsound(const IlirKernel *k, const IlirVar *n, const IlirStmt *w) {
  for (int i = 0; i < w->body.n; i++) {
    const IlirStmt *st = w->body.stmts[i];
    IlirExpr *terms[ILIR_WARP_MAX_TERMS];
    if (st->kind != ILIR_STORE) return "a fused warp loop holding a statement not a store";
    bool sums = ilir_store_sums(st, terms) > 0;
    if (!sums && (has_reduce(st->value) || has_reduce(st->index)))
      return "a store of a fused warp loop neither of sums nor elementwise";
    if (!fused_loads_ok(k, n, w, i, sums, st->value) ||
        !fused_loads_ok(k, n, w, i, sums, st->index))
      return sums ? "a sum that reads what its fused warp loop stores"
                  : "a read of an element no earlier store of its iteration stores";
  }
  if (!fused_stores_move(n, w)) return "stores of a fused warp loop not each pair's own elements";
  return NULL;
}

/* Is the WARP loop [w] of a GRID loop fused (more than one store of sums)? */
static bool fused_warp(const IlirStmt *w) { return !(w->body.n == 1 && ilir_warp_sum(w, false)); }

/* What makes the GRID loop [s] unsound, or NULL: WARP loops over constant
 * ranges only, each fused (fused_unsound) or storing at its node's row:
 * its index n * cn + i * ci + ..., with the rows of the nodes apart by at
 * least a row of the loop's (|cn| >= |ci| x its iterations), so the grid's
 * warps store distinct elements; those are then checked as phases. */
static const char *grid_unsound(const IlirKernel *k, const IlirStmt *s) {
  for (int i = 0; i < s->body.n; i++) {
    const IlirStmt *w = s->body.stmts[i];
    if (w->kind != ILIR_LOOP || w->bind != ILIR_BIND_WARP || w->lo->kind != ILIR_CONST ||
        w->hi->kind != ILIR_CONST)
      return "not warp loops over constant ranges only";
    if (fused_warp(w)) {
      const char *why = fused_unsound(k, s->var, w);
      if (why) return why;
      continue;
    }
    long cn = ilir_coef(w->body.stmts[0]->index, s->var);
    long ci = ilir_coef(w->body.stmts[0]->index, w->var);
    if (cn == 0 || cn == ILIR_NONLINEAR || ci == 0 || ci == ILIR_NONLINEAR ||
        labs(cn) < labs(ci) * (w->hi->ival - w->lo->ival))
      return "a warp loop not storing at its node's row";
  }
  return NULL;
}

/* The most statements a fused WARP loop may hold: each is emitted once and
 * run at every (node, element) pair (treelstm's level makes 14, seqlstm's
 * 13; a wider loop of a kept statement would make a long straight body). */
enum { FUSE_MAX_STMTS = 32 };

/* The loop [w] (`for i in [0, m * G) { one store }`) as m stores with
 * i := g + j * G, j in [0, m), appended to [out] at [*n]. */
static void unroll_by(CtxArena *a, const IlirStmt *w, IlirVar *g, long G, IlirStmt **out, int *n) {
  const IlirStmt *st = w->body.stmts[0];
  for (long j = 0; j < w->hi->ival / G; j++) {
    IlirExpr *at = ilir_binary(a, ILIR_ADD, ilir_var(a, g), ilir_const_i(a, j * G));
    out[(*n)++] = ilir_store(a, st->buf, ilir_subst(a, st->index, w->var, at),
                             ilir_subst(a, st->value, w->var, at));
  }
}

/* A level [b] split by split_grid (the GRID loop at [at], the node's block
 * loop after it) made one GRID loop, the level's only statement, so that it
 * ends at its one grid barrier: where the block loop holds THREAD loops of
 * one elementwise store each and every loop of the two runs over [0, m * G)
 * for the smallest extent G, one fused WARP loop `for g in [0, G)` holds
 * every loop's stores at g + j * G in order — the sums of element g, then
 * the rest computed from them (ilir.h, IlirBind). Where that is not sound
 * (grid_unsound: an elementwise store that reads another element of what
 * the level computes, say) or not of that shape (a kept sum: treegru's
 * U_h (r * s), mvrnn's; childsum's accumulations), the level stays split,
 * two grid barriers. Returns whether it fused. */
static bool fuse_level(CtxArena *a, IlirKernel *k, IlirBlock *b, int at) {
  if (at != 0 || b->n != 2 || b->stmts[1]->team_lo) return false;
  const IlirStmt *grid = b->stmts[0], *blk = b->stmts[1];
  int nl = grid->body.n + blk->body.n, nst = 0;
  IlirStmt **loops = CTX_NEW_ARRAY(a, IlirStmt *, nl);
  memcpy(loops, grid->body.stmts, sizeof *loops * (size_t)grid->body.n);
  memcpy(loops + grid->body.n, blk->body.stmts, sizeof *loops * (size_t)blk->body.n);
  long G = 0;
  for (int q = 0; q < nl; q++) {
    const IlirStmt *l = loops[q];
    const IlirStmt *st = l->kind == ILIR_LOOP && l->body.n == 1 ? l->body.stmts[0] : NULL;
    if (!st || st->kind != ILIR_STORE || l->lo->kind != ILIR_CONST || l->lo->ival != 0 ||
        l->hi->kind != ILIR_CONST || l->hi->ival <= 0)
      return false;
    if (q >= grid->body.n && (l->bind != ILIR_BIND_THREAD || has_reduce(st->value) ||
                              has_reduce(st->index)))
      return false;
    G = G == 0 || l->hi->ival < G ? l->hi->ival : G;
  }
  for (int q = 0; q < nl; q++) {
    if (loops[q]->hi->ival % G) return false;
    nst += (int)(loops[q]->hi->ival / G);
  }
  if (nst > FUSE_MAX_STMTS) return false;
  IlirVar *g = ilir_new_var(a, k, "i");
  IlirStmt **stmts = CTX_NEW_ARRAY(a, IlirStmt *, nst);
  int n = 0;
  for (int q = 0; q < nl; q++) unroll_by(a, loops[q], g, G, stmts, &n);
  IlirStmt **w = CTX_NEW_ARRAY(a, IlirStmt *, 1);
  w[0] = ilir_loop(a, g, ilir_const_i(a, 0), ilir_const_i(a, G), ILIR_LOOP_SERIAL,
                   (IlirBlock){stmts, n});
  w[0]->bind = ILIR_BIND_WARP;
  IlirStmt *fused = ilir_loop(a, grid->var, grid->lo, grid->hi, ILIR_LOOP_NODES, (IlirBlock){w, 1});
  fused->bind = ILIR_BIND_GRID;
  if (grid_unsound(k, fused)) return false;
  b->stmts[0] = fused, b->n = 1;
  return true;
}

static void cache_params(CtxDiag *diag, IlirKernel *k, const SchedGpuPlan *gpu) {
  long used = 0;
  for (int c = 0; c < gpu->ncache; c++) {
    for (int b = 0; b < k->nbufs; b++) {
      IlirBuf *buf = &k->bufs[b];
      if (buf->kind != ILIR_BUF_PARAM || buf->index != gpu->cache[c] || buf->shared) continue;
      long bytes = (buf->size + 3) / 4 * 16;
      if (used + bytes > gpu->shared_limit) {
        ctx_diag_warning(diag, gpu->cache_span, "'%s' (%ld KB) does not fit in the %ld KB of "
                         "shared memory per block left: read from global memory", buf->name,
                         bytes / 1024, (gpu->shared_limit - used) / 1024);
        continue;
      }
      buf->shared = true;
      used += bytes;
    }
  }
}

bool sched_gpu_apply(CtxArena *arena, CtxDiag *diag, IlirKernel *k, const SchedGpuPlan *gpu) {
  int bad = 0;
  if (gpu->bind_blocks) bind_nodes(&k->body, false, false, gpu->rows, &bad);
  if (gpu->bind_blocks && !bad) {
    bind_nodes(&k->body, true, gpu->bind_warps, gpu->rows, &bad);
    if (!gpu->bind_warps && (gpu->rows == SCHED_ROWS_AUTO || gpu->rows == SCHED_ROWS_GRID) &&
        grid_levels(arena, k, &k->body, false, gpu->rows, gpu->fuse))
      ilir_simplify(arena, k); /* the fused stores' indices, i + 256 and the like */
  }
  cache_params(diag, k, gpu);
  return sched_gpu_verify(k, diag) && ilir_verify(k, diag);
}

/* ---- the check ---------------------------------------------------------------------- */

typedef struct {
  const IlirKernel *k;
  CtxDiag *diag;
  const IlirVar *var;  /* the THREAD loop's */
  const IlirStmt *stores[64];
  int nstores;
  bool ok;
} Phase;

static void phase_fail(Phase *P, const char *what) {
  if (P->ok)
    CTX_ICE(P->diag, "sched: unsound GPU binding in kernel '%s': %s (loop '%s')", P->k->name,
            what, P->var->name);
  P->ok = false;
}

static void collect_stores(Phase *P, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      long c = ilir_coef(s->index, P->var);
      if (c == 0 || c == ILIR_NONLINEAR) phase_fail(P, "a store not of the thread's own elements");
      if (P->nstores < 64) P->stores[P->nstores++] = s;
      else phase_fail(P, "too many stores");
    }
    if (s->kind == ILIR_LOOP && s->bind) phase_fail(P, "a bound loop inside a thread loop");
    collect_stores(P, &s->body), collect_stores(P, &s->then), collect_stores(P, &s->els);
  }
}

/* Every load of a buffer the phase stores into is of an element it stores. */
static void check_loads(Phase *P, const IlirExpr *e) {
  if (!e) return;
  if (e->kind == ILIR_LOAD) {
    bool stored = false, same = false;
    for (int i = 0; i < P->nstores; i++) {
      if (P->stores[i]->buf != e->buf) continue;
      stored = true;
      same |= ilir_same_expr(P->stores[i]->index, e->a, NULL, NULL);
    }
    if (stored && !same) phase_fail(P, "a read of another thread's element in one phase");
  }
  check_loads(P, e->a), check_loads(P, e->b), check_loads(P, e->c);
  check_loads(P, e->lo), check_loads(P, e->hi);
}

static void check_block_loads(Phase *P, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    check_loads(P, s->lo), check_loads(P, s->hi), check_loads(P, s->index);
    check_loads(P, s->value), check_loads(P, s->cond);
    check_block_loads(P, &s->body), check_block_loads(P, &s->then);
    check_block_loads(P, &s->els);
  }
}

/* Is the THREAD or WARP loop [s] a sound phase (the header's discipline)? */
static bool phase_sound(const IlirKernel *k, CtxDiag *diag, const IlirStmt *s) {
  Phase P = {k, diag, s->var, {0}, 0, true};
  collect_stores(&P, &s->body);
  check_block_loads(&P, &s->body);
  return P.ok;
}

static bool verify_block(const IlirKernel *k, CtxDiag *diag, const IlirBlock *b, bool in_block) {
  bool ok = true;
  for (int i = 0; i < b->n && ok; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_LOOP && s->bind == ILIR_BIND_WARP && !ilir_warp_sum(s, false)) {
      CTX_ICE(diag, "sched: a warp loop that is not one store of a sum in kernel '%s' (loop '%s')",
              k->name, s->var->name);
      return false;
    }
    bool rows = s->bind == ILIR_BIND_THREAD || s->bind == ILIR_BIND_WARP;
    if (s->kind == ILIR_LOOP && rows && in_block) {
      ok = phase_sound(k, diag, s);
      continue;
    }
    if (in_block && s->kind == ILIR_LOOP && !s->bind) { /* every thread alike */
      ok = verify_block(k, diag, &s->body, true);
      continue;
    }
    if (in_block || (s->kind == ILIR_LOOP && rows)) {
      CTX_ICE(diag, "sched: unsound GPU binding in kernel '%s': %s", k->name,
              in_block ? "a statement of a block loop outside a thread loop"
                       : "a thread loop outside a block loop");
      return false;
    }
    bool blk = s->kind == ILIR_LOOP && (s->bind == ILIR_BIND_BLOCK || s->bind == ILIR_BIND_GRID ||
                                        s->bind == ILIR_BIND_NODE_WARP);
    if (blk && s->loop != ILIR_LOOP_NODES) {
      CTX_ICE(diag, "sched: a block, warps or grid loop that is not a nodes loop in kernel '%s'",
              k->name);
      return false;
    }
    if (s->kind == ILIR_LOOP && s->bind == ILIR_BIND_GRID) {
      const char *why = grid_unsound(k, s);
      if (why) {
        CTX_ICE(diag, "sched: unsound grid loop in kernel '%s': %s", k->name, why);
        return false;
      }
      for (int w = 0; w < s->body.n && ok; w++)
        if (!fused_warp(s->body.stmts[w])) ok = phase_sound(k, diag, s->body.stmts[w]);
      continue;
    }
    ok = verify_block(k, diag, &s->body, blk) && verify_block(k, diag, &s->then, false) &&
         verify_block(k, diag, &s->els, false);
  }
  return ok;
}

bool sched_gpu_verify(const IlirKernel *k, CtxDiag *diag) {
  return verify_block(k, diag, &k->body, false);
}
