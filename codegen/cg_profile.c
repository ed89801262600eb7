/* cg_profile.c — the regions of a profiled kernel and their instrumentation
 * (codegen.h, "profiling"; ctx run --profile).
 *
 *   IlirKernel --cg_profile_plan--> regions: each top-level statement (a
 *   levels loop, a prologue), each top-level statement of a levels loop's
 *   body (a node loop: one operator, or a fused group), named by the
 *   buffers they store; FLOPs and parameter loads per iteration, counted
 *   statically from the ILIR
 *   cg_emit.c --cg_prof_now / cg_prof_add--> cycle-counter reads around each
 *   region, thread 0's sums in the module's counters array
 *
 * Only thread 0 writes the counters, so they need no atomics and the
 * threads never contend for their cache line; its view is the one a
 * profile shows (the other threads run their shares of the same node loops
 * between the same barriers). A parameter's bytes per execution are
 * min(its size, loads per iteration x iterations) x 4: a weight block a
 * level's product streams counts once per level, an embedding row once per
 * node that reads it — the traffic the region cannot avoid, not what the
 * caches saw. A leaf's row read in place (a view, leaf-views) is a result
 * row, not counted.
 */
#include "codegen/cg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plan: FLOPs and loads ------------------------------------------------ */

/* The constant trip count of [lo, hi), or -1. */
static long trip(const IlirExpr *lo, const IlirExpr *hi) {
  if (!lo || !hi || lo->kind != ILIR_CONST || hi->kind != ILIR_CONST) return -1;
  return hi->ival > lo->ival ? hi->ival - lo->ival : 0;
}

/* Adds [v] to [*acc] unless either is unknown (-1). */
static void add_known(double *acc, double v) {
  *acc = *acc < 0 || v < 0 ? -1 : *acc + v;
}

/* [per] iterations' worth [t] times: unknown when either is, except that
 * nothing repeated any number of times is nothing (a loop over a node's
 * dependencies that only adds rows). */
static double times(double per, long t) {
  if (per == 0) return 0;
  return per < 0 || t < 0 ? -1 : per * (double)t;
}

static double expr_flops(const IlirExpr *e);

/* FLOPs of one evaluation of a sum reduction: 2 per product among the
 * terms of its body, per iteration. */
static double reduce_flops(const IlirExpr *e) {
  IlirExpr *terms[64];
  int n = ilir_sum_terms(e->a, terms, 64);
  long t = trip(e->lo, e->hi);
  if (n > 64) return -1;
  double per = 0;
  for (int i = 0; i < n; i++) {
    if (terms[i]->kind == ILIR_BINARY && terms[i]->op == ILIR_MUL) add_known(&per, 2);
    add_known(&per, expr_flops(terms[i]));
  }
  return times(per, t);
}

/* FLOPs of one evaluation of [e]: those of its sum reductions. */
static double expr_flops(const IlirExpr *e) {
  if (!e) return 0;
  if (e->kind == ILIR_REDUCE && e->op == ILIR_SUM) return reduce_flops(e);
  double f = 0;
  add_known(&f, expr_flops(e->a));
  add_known(&f, expr_flops(e->b));
  add_known(&f, expr_flops(e->c));
  return f;
}

static double block_flops(const IlirBlock *b);

static double stmt_flops(const IlirStmt *s) {
  switch (s->kind) {
  case ILIR_STORE: return expr_flops(s->value);
  case ILIR_IF: {
    double t = block_flops(&s->then), e = block_flops(&s->els);
    return t < 0 || e < 0 ? -1 : t > e ? t : e; /* the costlier arm */
  }
  case ILIR_LOOP: return times(block_flops(&s->body), trip(s->lo, s->hi));
  }
  return -1;
}

static double block_flops(const IlirBlock *b) {
  double f = 0;
  for (int i = 0; i < b->n; i++) add_known(&f, stmt_flops(b->stmts[i]));
  return f;
}

/* Loads of buffer [buf] in one evaluation of [e] (-1: unknown). */
static double expr_loads(const IlirExpr *e, int buf) {
  if (!e) return 0;
  /* a view's parameter row stands for a leaf's result row (sched_views.c),
   * and result rows are not counted */
  if (ilir_is_view(e)) return expr_loads(e->c, buf);
  double n = e->kind == ILIR_LOAD && e->buf == buf ? 1 : 0;
  add_known(&n, expr_loads(e->a, buf));
  add_known(&n, expr_loads(e->b, buf));
  add_known(&n, expr_loads(e->c, buf));
  return e->kind == ILIR_REDUCE ? times(n, trip(e->lo, e->hi)) : n;
}

static double block_loads(const IlirBlock *b, int buf);

static double stmt_loads(const IlirStmt *s, int buf) {
  double n = 0;
  switch (s->kind) {
  case ILIR_STORE:
    add_known(&n, expr_loads(s->index, buf));
    add_known(&n, expr_loads(s->value, buf));
    return n;
  case ILIR_IF:
    add_known(&n, block_loads(&s->then, buf));
    add_known(&n, block_loads(&s->els, buf));
    return n;
  case ILIR_LOOP: return times(block_loads(&s->body, buf), trip(s->lo, s->hi));
  }
  return -1;
}

static double block_loads(const IlirBlock *b, int buf) {
  double n = 0;
  for (int i = 0; i < b->n; i++) add_known(&n, stmt_loads(b->stmts[i], buf));
  return n;
}

/* ---- the plan: names ---------------------------------------------------------- */

static void stores_of(const IlirBlock *b, int *bufs, int *n, int cap);

static void stmt_stores(const IlirStmt *s, int *bufs, int *n, int cap) {
  if (s->kind == ILIR_STORE) {
    for (int i = 0; i < *n; i++)
      if (bufs[i] == s->buf) return;
    if (*n < cap) bufs[(*n)++] = s->buf;
  } else if (s->kind == ILIR_LOOP) {
    stores_of(&s->body, bufs, n, cap);
  } else {
    stores_of(&s->then, bufs, n, cap);
    stores_of(&s->els, bufs, n, cap);
  }
}

static void stores_of(const IlirBlock *b, int *bufs, int *n, int cap) {
  for (int i = 0; i < b->n; i++) stmt_stores(b->stmts[i], bufs, n, cap);
}

enum { MAX_NAMED = 16 };

/* "cell.mm1 (tile 4x64) + g": the buffers [s] stores, in program order, the
 * first marked with the register tile when [s] is one. */
static void name_stores(CtxBuf *out, const IlirKernel *k, const IlirStmt *s) {
  int bufs[MAX_NAMED + 1], n = 0;
  stmt_stores(s, bufs, &n, MAX_NAMED + 1);
  for (int i = 0; i < n && i < MAX_NAMED; i++) {
    ctx_buf_printf(out, "%s%s", i ? " + " : "", k->bufs[bufs[i]].name);
    if (i == 0 && s->kind == ILIR_LOOP && s->tile_nodes)
      ctx_buf_printf(out, " (tile %dx%d)", s->tile_nodes, s->tile_outs);
  }
  if (n > MAX_NAMED) ctx_buf_puts(out, " + ...");
  if (n == 0) ctx_buf_puts(out, "(no stores)");
}

static bool is_const(const IlirExpr *e, long v) {
  return e && e->kind == ILIR_CONST && e->ival == v;
}

/* A top-level statement's name: the level loops by the levels they run. */
static void name_top(CtxBuf *out, const IlirKernel *k, const IlirStmt *s) {
  if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS) {
    bool all = s->hi && s->hi->kind == ILIR_ARG && s->hi->ival == 1;
    ctx_buf_puts(out, !is_const(s->lo, 0) ? "inner levels" : all ? "levels" : "leaf level");
    return;
  }
  ctx_buf_puts(out, "prologue: ");
  name_stores(out, k, s);
}

static void add_region(CgProfile *p, const IlirKernel *k, const IlirStmt *s, int parent) {
  CgProfRegion *r = &p->regions[p->n++];
  CtxBuf name;
  ctx_buf_init(&name);
  if (parent < 0) name_top(&name, k, s);
  else name_stores(&name, k, s);
  r->name = ctx_xmalloc(name.len + 1);
  memcpy(r->name, ctx_buf_str(&name), name.len + 1);
  ctx_buf_free(&name);
  r->parent = parent;
  r->stmt = s;
  r->node_loop = s->kind == ILIR_LOOP && (s->loop == ILIR_LOOP_NODES || s->loop == ILIR_LOOP_PARALLEL);
  bool levels = s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS;
  r->flops = levels ? 0 : r->node_loop ? block_flops(&s->body) : stmt_flops(s);
  r->params = ctx_xmalloc(((size_t)k->nbufs + 1) * sizeof *r->params);
  for (int b = 0; b < k->nbufs && !levels; b++) {
    if (k->bufs[b].kind != ILIR_BUF_PARAM && k->bufs[b].kind != ILIR_BUF_PACKED) continue;
    double n = r->node_loop ? block_loads(&s->body, b) : stmt_loads(s, b);
    if (n == 0) continue;
    long size = k->bufs[b].size;
    r->params[r->nparams][0] = size;
    r->params[r->nparams][1] = n < 0 || n > (double)size ? size : (long)n;
    r->nparams++;
  }
}

CgProfile *cg_profile_plan(const IlirKernel *k) {
  CgProfile *p = calloc(1, sizeof *p);
  if (!p) ctx_oom();
  int cap = 0;
  for (int i = 0; i < k->body.n; i++) {
    const IlirStmt *s = k->body.stmts[i];
    cap += 1 + (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS ? s->body.n : 0);
  }
  p->regions = calloc((size_t)cap + 1, sizeof *p->regions);
  if (!p->regions) ctx_oom();
  for (int i = 0; i < k->body.n; i++) {
    const IlirStmt *s = k->body.stmts[i];
    int top = p->n;
    add_region(p, k, s, -1);
    if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS)
      for (int j = 0; j < s->body.n; j++) add_region(p, k, s->body.stmts[j], top);
  }
  return p;
}

void cg_profile_free(CgProfile *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) {
    free(p->regions[i].name);
    free(p->regions[i].params);
  }
  free(p->regions);
  free(p);
}

int cg_prof_region(const CgProfile *prof, const IlirStmt *s) {
  for (int i = 0; prof && i < prof->n; i++)
    if (prof->regions[i].stmt == s) return i;
  return -1;
}

/* ---- the instrumentation ------------------------------------------------------- */

static LLVMValueRef readcyclecounter(LLVMModuleRef mod, LLVMTypeRef *ft) {
  static const char name[] = "llvm.readcyclecounter";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  *ft = LLVMIntrinsicGetType(ctx, id, NULL, 0);
  return LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
}

LLVMValueRef cg_prof_now(LLVMBuilderRef b, LLVMModuleRef mod) {
  LLVMTypeRef ft;
  LLVMValueRef f = readcyclecounter(mod, &ft);
  return LLVMBuildCall2(b, ft, f, NULL, 0, "prof.t");
}

LLVMValueRef cg_prof_globals(LLVMModuleRef mod, const IlirKernel *k, const CgProfile *prof) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  size_t len = strlen(k->name) + 16;
  char *name = ctx_xmalloc(len);
  snprintf(name, len, "%s%s", k->name, CG_PROF_COUNTERS_SUFFIX);
  LLVMTypeRef at = LLVMArrayType2(i64, (uint64_t)(prof->n * CG_PROF_FIELDS));
  LLVMValueRef g = LLVMAddGlobal(mod, at, name);
  LLVMSetInitializer(g, LLVMConstNull(at));
  LLVMSetAlignment(g, 64);
  snprintf(name, len, "%s%s", k->name, CG_PROF_CYCLES_SUFFIX);
  LLVMValueRef fn = LLVMAddFunction(mod, name, LLVMFunctionType(i64, NULL, 0, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  LLVMBuildRet(b, cg_prof_now(b, mod));
  LLVMDisposeBuilder(b);
  free(name);
  return g;
}

/* counters[at] += [v] */
static void bump(LLVMBuilderRef b, LLVMValueRef counters, LLVMTypeRef i64, long at,
                 LLVMValueRef v) {
  LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)at, 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, i64, counters, &idx, 1, "");
  LLVMValueRef old = LLVMBuildLoad2(b, i64, p, "");
  LLVMBuildStore(b, LLVMBuildAdd(b, old, v, ""), p);
}

/* Bytes of parameters region [r] read over [iters] iterations (see the top). */
static LLVMValueRef param_bytes(LLVMBuilderRef b, LLVMTypeRef i64, const CgProfRegion *r,
                                LLVMValueRef iters) {
  LLVMValueRef sum = LLVMConstInt(i64, 0, 0);
  for (int i = 0; i < r->nparams; i++) {
    LLVMValueRef size = LLVMConstInt(i64, (unsigned long long)r->params[i][0], 0);
    LLVMValueRef n = LLVMBuildMul(b, iters, LLVMConstInt(i64, (unsigned long long)r->params[i][1], 0), "");
    LLVMValueRef less = LLVMBuildICmp(b, LLVMIntSLT, n, size, "");
    sum = LLVMBuildAdd(b, sum, LLVMBuildSelect(b, less, n, size, ""), "");
  }
  return LLVMBuildMul(b, sum, LLVMConstInt(i64, 4, 0), "");
}

void cg_prof_add(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef counters, LLVMValueRef tid,
                 const CgProfile *prof, int r, LLVMValueRef t0, LLVMValueRef iters) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMValueRef t1 = cg_prof_now(b, mod);
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef add = LLVMAppendBasicBlockInContext(ctx, fn, "prof");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, fn, "prof.done");
  LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, tid, LLVMConstInt(i64, 0, 0), "");
  LLVMBuildCondBr(b, first, add, done);
  LLVMPositionBuilderAtEnd(b, add);
  long at = (long)r * CG_PROF_FIELDS;
  bump(b, counters, i64, at + CG_PROF_CYCLES, LLVMBuildSub(b, t1, t0, ""));
  bump(b, counters, i64, at + CG_PROF_RUNS, LLVMConstInt(i64, 1, 0));
  bump(b, counters, i64, at + CG_PROF_ITERS, iters);
  bump(b, counters, i64, at + CG_PROF_BYTES, param_bytes(b, i64, &prof->regions[r], iters));
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
}
