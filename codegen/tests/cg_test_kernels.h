/* cg_test_kernels.h — what the codegen unit tests (codegen_tests.c,
 * codegen_tile_tests.c, cg_profile_tests.c) share: ILIR kernels built by
 * hand (structs filled in directly, in an arena) and JIT-compiled, and a
 * team of threads to run them on. Static inline: each suite uses only some
 * of them. */
#ifndef CG_TEST_KERNELS_H
#define CG_TEST_KERNELS_H

#include "codegen/codegen.h"

#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ---- building kernels -------------------------------------------------------- */

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  CtxSources srcs;
  CtxDiag diag;
} T;

static inline void t_init(T *t, const char *name) {
  memset(t, 0, sizeof *t);
  t->a = ctx_arena_new();
  ctx_sources_init(&t->srcs);
  ctx_diag_init(&t->diag, &t->srcs, NULL);
  t->k = CTX_NEW(t->a, IlirKernel);
  t->k->name = name;
  t->k->bufs = CTX_NEW_ARRAY(t->a, IlirBuf, 16);
}

static inline void t_done(T *t) {
  ctx_sources_free(&t->srcs);
  ctx_arena_free(t->a);
}

static inline int buf(T *t, const char *name, IlirBufKind kind, long size) {
  IlirBuf *b = &t->k->bufs[t->k->nbufs];
  b->name = name;
  b->kind = kind;
  b->size = size;
  return t->k->nbufs++;
}

/* Short names for the ILIR constructors (ilir.h), in the test's arena. */
static inline IlirVar *var(T *t, const char *name) { return ilir_new_var(t->a, t->k, name); }
static inline IlirExpr *ci(T *t, long v) { return ilir_const_i(t->a, v); }
static inline IlirExpr *cf(T *t, float v) { return ilir_const_f(t->a, v); }
static inline IlirExpr *vr(T *t, IlirVar *v) { return ilir_var(t->a, v); }
static inline IlirExpr *arg(T *t, long which) { return ilir_arg(t->a, which); }
static inline IlirExpr *ld(T *t, int b, IlirExpr *i) { return ilir_load(t->a, t->k, b, i); }
static inline IlirExpr *un(T *t, int op, IlirExpr *x) { return ilir_unary(t->a, op, x); }
static inline IlirExpr *bin(T *t, int op, IlirExpr *x, IlirExpr *y) {
  return ilir_binary(t->a, op, x, y);
}
static inline IlirExpr *red(T *t, int op, IlirVar *v, IlirExpr *lo, IlirExpr *hi, IlirExpr *body) {
  return ilir_reduce(t->a, op, v, lo, hi, body);
}

static inline IlirBlock block(T *t, int n, IlirStmt **stmts) {
  IlirBlock b = {CTX_NEW_ARRAY(t->a, IlirStmt *, n), n};
  memcpy(b.stmts, stmts, sizeof *stmts * (size_t)n);
  return b;
}

static inline IlirStmt *loop(T *t, IlirVar *v, IlirExpr *lo, IlirExpr *hi, IlirStmt *body) {
  return ilir_loop(t->a, v, lo, hi, ILIR_LOOP_SERIAL, block(t, 1, &body));
}

static inline IlirStmt *store(T *t, int b, IlirExpr *index, IlirExpr *value) {
  return ilir_store(t->a, b, index, value);
}

/* The level and node loops around [body] (which reads node variable [n]):
 *   for l in [0, num_levels) for n in [levels[l], levels[l + 1]) body */
static inline void levels_around(T *t, int levels, IlirVar *n, IlirStmt *body) {
  IlirVar *l = var(t, "l");
  t->k->levels_buf = levels;
  IlirStmt *nodes = loop(t, n, ld(t, levels, vr(t, l)),
                         ld(t, levels, bin(t, ILIR_ADD, vr(t, l), ci(t, 1))), body);
  nodes->loop = ILIR_LOOP_NODES;
  IlirStmt *lv = loop(t, l, ci(t, 0), arg(t, 1), nodes);
  lv->loop = ILIR_LOOP_LEVELS;
  t->k->body = block(t, 1, &lv);
}

static inline CgKernelFn compile(T *t, CgJit **jit) {
  *jit = cg_jit_compile(t->k, &t->diag);
  ck_assert_ptr_nonnull(*jit);
  ck_assert_int_eq(t->diag.errors + t->diag.ice, 0);
  return cg_jit_kernel(*jit);
}

static inline bool close_to(double got, double want) {
  return fabs(got - want) <= 1e-5 + 1e-5 * fabs(want);
}

/* ---- threads: a kernel on a team of threads ---------------------------------- */

/* The teams' batch: NN nodes in LV levels (their sizes in codegen_tests.c,
 * threads_agree); teams of up to MAXT threads. */
enum { LV = 9, NN = 20 + 1 + 1 + 11 + 5 + 1 + 3 + 2 + 1, MAXT = 4 };

typedef struct {
  CgKernelFn fn;
  void **bufs;
  int64_t tid, nthreads, nodes;
  pthread_barrier_t *barrier;
  int64_t levels;
} Member;

static atomic_int barrier_calls; /* by every thread of run_team_levels' teams */

static inline void member_barrier(void *ctx) {
  atomic_fetch_add(&barrier_calls, 1);
  pthread_barrier_wait(ctx);
}

static inline void *member_main(void *arg) {
  const Member *m = arg;
  m->fn(m->bufs, m->nodes, m->levels, m->tid, m->nthreads, member_barrier, m->barrier);
  return NULL;
}

/* Runs [fn] over [nodes] nodes in [levels] levels on [nthreads] threads
 * (the caller one of them). */
static inline void run_team_levels(CgKernelFn fn, void **bufs, int nthreads, int64_t nodes,
                                   int64_t levels) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
  Member m[MAXT];
  pthread_t th[MAXT];
  for (int i = 0; i < nthreads; i++)
    m[i] = (Member){fn, bufs, i, nthreads, nodes, &barrier, levels};
  for (int i = 1; i < nthreads; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, member_main, &m[i]), 0);
  member_main(&m[0]);
  for (int i = 1; i < nthreads; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
}

static inline void run_team_nodes(CgKernelFn fn, void **bufs, int nthreads, int64_t nodes) {
  run_team_levels(fn, bufs, nthreads, nodes, LV);
}

#endif
