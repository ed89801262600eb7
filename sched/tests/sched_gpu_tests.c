/* sched_gpu_tests.c — the soundness check of GPU-bound ILIR (sched_gpu_verify,
 * docs/cuda.md): kernels built by hand with block and thread loops, one that
 * keeps the discipline and one for each way of breaking it (a read of
 * another thread's element inside a phase, a store that does not move with
 * the thread's loop, a statement of a block loop outside any thread loop, a
 * thread loop outside a block loop, a block loop that is not a nodes loop),
 * and grid loops of warp loops, plain and fused (sched_gpu.c, fuse_level). */
#include "sched/sched.h"

#include <check.h>
#include <string.h>

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  CtxSources srcs;
  CtxDiag diag;
  int x, y;      /* two scratch buffers of 8 floats per node */
  int p;         /* a parameter of 64 floats */
  IlirVar *n, *i, *j;
} T;

static void t_init(T *t) {
  memset(t, 0, sizeof *t);
  t->a = ctx_arena_new();
  ctx_sources_init(&t->srcs);
  ctx_diag_init(&t->diag, &t->srcs, NULL);
  t->k = CTX_NEW(t->a, IlirKernel);
  t->k->name = "k";
  t->k->bufs = CTX_NEW_ARRAY(t->a, IlirBuf, 4);
  t->k->bufs[0] = (IlirBuf){"x", ILIR_BUF_SCRATCH, 8, 0, 0, {0, 0, 0, 0, 0}, false};
  t->k->bufs[1] = (IlirBuf){"y", ILIR_BUF_SCRATCH, 8, 0, 0, {0, 0, 0, 0, 0}, false};
  t->k->bufs[2] = (IlirBuf){"p", ILIR_BUF_PARAM, 64, 0, 0, {0, 0, 0, 0, 0}, false};
  t->k->bufs[3] = (IlirBuf){"dep", ILIR_BUF_DEP, 1, 0, 0, {0, 0, 0, 0, 0}, false};
  t->k->nbufs = 4;
  t->x = 0, t->y = 1, t->p = 2, t->k->dep_buf = 3;
  t->n = ilir_new_var(t->a, t->k, "n");
  t->i = ilir_new_var(t->a, t->k, "i");
  t->j = ilir_new_var(t->a, t->k, "j");
}

static void t_done(T *t) {
  ctx_sources_free(&t->srcs);
  ctx_arena_free(t->a);
}

/* n * 8 + v + off */
static IlirExpr *row(T *t, IlirVar *v, long off) {
  IlirExpr *e = ilir_binary(t->a, ILIR_MUL, ilir_var(t->a, t->n), ilir_const_i(t->a, 8));
  if (v) e = ilir_binary(t->a, ILIR_ADD, e, ilir_var(t->a, v));
  return ilir_binary(t->a, ILIR_ADD, e, ilir_const_i(t->a, off));
}

static IlirBlock block(T *t, int n, IlirStmt **s) {
  IlirBlock b = {CTX_NEW_ARRAY(t->a, IlirStmt *, n), n};
  memcpy(b.stmts, s, sizeof *s * (size_t)n);
  return b;
}

static IlirStmt *bound(T *t, IlirVar *v, IlirBind bind, IlirLoopKind kind, int n,
                       IlirStmt **body) {
  long hi = bind == ILIR_BIND_BLOCK || bind == ILIR_BIND_GRID || bind == ILIR_BIND_NODE_WARP ? 4
                                                                                            : 8;
  IlirStmt *s = ilir_loop(t->a, v, ilir_const_i(t->a, 0), ilir_const_i(t->a, hi), kind,
                          block(t, n, body));
  s->bind = bind;
  return s;
}

static IlirStmt *thread_loop(T *t, IlirVar *v, int n, IlirStmt **body) {
  return bound(t, v, ILIR_BIND_THREAD, ILIR_LOOP_SERIAL, n, body);
}

/* The kernel: one nodes loop over n bound as [bind] holding [body]. */
static bool verify_in(T *t, IlirBind bind, int n, IlirStmt **body) {
  IlirStmt *nodes = bound(t, t->n, bind, ILIR_LOOP_NODES, n, body);
  t->k->body = block(t, 1, &nodes);
  t->k->nvars = 3;
  return sched_gpu_verify(t->k, &t->diag);
}

/* The kernel: one block loop over n holding [body]. */
static bool verify(T *t, int n, IlirStmt **body) { return verify_in(t, ILIR_BIND_BLOCK, n, body); }

START_TEST(test_sound) {
  T t;
  t_init(&t);
  /* phase 1 writes x, phase 2 reads x at any element: a barrier between */
  IlirStmt *w = ilir_store(t.a, t.x, row(&t, t.i, 0), ilir_const_f(t.a, 1));
  IlirStmt *r = ilir_store(t.a, t.y, row(&t, t.j, 0),
                           ilir_load(t.a, t.k, t.x, row(&t, NULL, 7)));
  /* and a phase that reads back its own element */
  IlirStmt *own = ilir_store(t.a, t.x, row(&t, t.i, 0),
                             ilir_load(t.a, t.k, t.x, row(&t, t.i, 0)));
  IlirStmt *phases[3] = {thread_loop(&t, t.i, 1, &w), thread_loop(&t, t.j, 1, &r),
                         thread_loop(&t, t.i, 1, &own)};
  ck_assert(verify(&t, 3, phases));
  ck_assert_int_eq(t.diag.ice, 0);
  t_done(&t);
}
END_TEST

START_TEST(test_read_of_another_thread) {
  T t;
  t_init(&t);
  IlirStmt *s[2] = {ilir_store(t.a, t.x, row(&t, t.i, 0), ilir_const_f(t.a, 1)),
                    ilir_store(t.a, t.y, row(&t, t.i, 0),
                               ilir_load(t.a, t.k, t.x, row(&t, t.i, 1)))};
  IlirStmt *phase = thread_loop(&t, t.i, 2, s);
  ck_assert(!verify(&t, 1, &phase));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

/* Nodes on warps (NODE_WARP): the phases of a node's body are checked as a
 * block's are; a read of another lane's element in one phase is unsound. */
START_TEST(test_node_warp) {
  T t;
  t_init(&t);
  IlirStmt *w = ilir_store(t.a, t.x, row(&t, t.i, 0), ilir_const_f(t.a, 1));
  IlirStmt *r = ilir_store(t.a, t.y, row(&t, t.j, 0), ilir_load(t.a, t.k, t.x, row(&t, NULL, 7)));
  IlirStmt *phases[2] = {thread_loop(&t, t.i, 1, &w), thread_loop(&t, t.j, 1, &r)};
  ck_assert(verify_in(&t, ILIR_BIND_NODE_WARP, 2, phases));
  ck_assert_int_eq(t.diag.ice, 0);
  IlirStmt *s[2] = {ilir_store(t.a, t.x, row(&t, t.i, 0), ilir_const_f(t.a, 1)),
                    ilir_store(t.a, t.y, row(&t, t.i, 0),
                               ilir_load(t.a, t.k, t.x, row(&t, t.i, 1)))};
  IlirStmt *phase = thread_loop(&t, t.i, 2, s);
  ck_assert(!verify_in(&t, ILIR_BIND_NODE_WARP, 1, &phase));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

START_TEST(test_store_not_moving) {
  T t;
  t_init(&t);
  IlirStmt *s = ilir_store(t.a, t.x, row(&t, NULL, 0), ilir_const_f(t.a, 1));
  IlirStmt *phase = thread_loop(&t, t.i, 1, &s);
  ck_assert(!verify(&t, 1, &phase));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

START_TEST(test_statement_outside_phase) {
  T t;
  t_init(&t);
  IlirStmt *s = ilir_store(t.a, t.x, row(&t, NULL, 0), ilir_const_f(t.a, 1));
  ck_assert(!verify(&t, 1, &s));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

START_TEST(test_thread_loop_outside_block) {
  T t;
  t_init(&t);
  IlirStmt *s = ilir_store(t.a, t.x, ilir_var(t.a, t.i), ilir_const_f(t.a, 1));
  IlirStmt *phase = thread_loop(&t, t.i, 1, &s);
  t.k->body = block(&t, 1, &phase);
  t.k->nvars = 3;
  ck_assert(!sched_gpu_verify(t.k, &t.diag));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

START_TEST(test_block_loop_not_nodes) {
  T t;
  t_init(&t);
  IlirStmt *s = ilir_store(t.a, t.x, row(&t, t.i, 0), ilir_const_f(t.a, 1));
  IlirStmt *phase = thread_loop(&t, t.i, 1, &s);
  IlirStmt *blk = bound(&t, t.n, ILIR_BIND_BLOCK, ILIR_LOOP_SERIAL, 1, &phase);
  t.k->body = block(&t, 1, &blk);
  t.k->nvars = 3;
  ck_assert(!sched_gpu_verify(t.k, &t.diag));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

/* x[n * 8 + i] = sum(j in [0, R)) y[n * 8 + j] (R terms), in a loop over i
 * bound as [bind] */
static IlirStmt *sum_loop(T *t, IlirBind bind, long R) {
  IlirExpr *sum = ilir_reduce(t->a, ILIR_SUM, t->j, ilir_const_i(t->a, 0), ilir_const_i(t->a, R),
                              ilir_load(t->a, t->k, t->y, row(t, t->j, 0)));
  IlirStmt *s = ilir_store(t->a, t->x, row(t, t->i, 0), sum);
  return bound(t, t->i, bind, ILIR_LOOP_SERIAL, 1, &s);
}

START_TEST(test_warp_sum_sound) {
  T t;
  t_init(&t);
  IlirStmt *phase = sum_loop(&t, ILIR_BIND_WARP, 32);
  ck_assert(ilir_warp_sum(phase, false));
  ck_assert(verify(&t, 1, &phase));
  ck_assert_int_eq(t.diag.ice, 0);
  t_done(&t);
}
END_TEST

/* a warp loop of fewer than 32 terms, or of a store that is not a sum */
START_TEST(test_warp_loop_not_a_sum) {
  T t;
  t_init(&t);
  IlirStmt *phase = sum_loop(&t, ILIR_BIND_WARP, 31);
  ck_assert(!ilir_warp_sum(phase, false));
  ck_assert(!verify(&t, 1, &phase));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
  t_init(&t);
  IlirStmt *s = ilir_store(t.a, t.x, row(&t, t.i, 0), ilir_const_f(t.a, 1));
  phase = bound(&t, t.i, ILIR_BIND_WARP, ILIR_LOOP_SERIAL, 1, &s);
  ck_assert(!verify(&t, 1, &phase));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

/* ilir_warp_sum's [strided]: y read along j at rows i moves 32 apart, or 1 */
START_TEST(test_warp_sum_strided) {
  T t;
  t_init(&t);
  IlirExpr *at = ilir_binary(t.a, ILIR_ADD,
                             ilir_binary(t.a, ILIR_MUL, ilir_var(t.a, t.i), ilir_const_i(t.a, 64)),
                             ilir_var(t.a, t.j));
  IlirExpr *sum = ilir_reduce(t.a, ILIR_SUM, t.j, ilir_const_i(t.a, 0), ilir_const_i(t.a, 64),
                              ilir_load(t.a, t.k, t.y, at));
  IlirStmt *s = ilir_store(t.a, t.x, row(&t, t.i, 0), sum);
  IlirStmt *rows = bound(&t, t.i, ILIR_BIND_THREAD, ILIR_LOOP_SERIAL, 1, &s);
  ck_assert(ilir_warp_sum(rows, true));
  IlirStmt *flat = sum_loop(&t, ILIR_BIND_THREAD, 64); /* y[n * 8 + j]: i not in it */
  ck_assert(ilir_warp_sum(flat, false));
  ck_assert(!ilir_warp_sum(flat, true));
  t_done(&t);
}
END_TEST

/* The kernel: one grid loop over n (ILIR_BIND_GRID) holding [body]. */
static bool verify_grid(T *t, int n, IlirStmt **body) { return verify_in(t, ILIR_BIND_GRID, n, body); }

START_TEST(test_grid_sound) {
  T t;
  t_init(&t);
  IlirStmt *w = sum_loop(&t, ILIR_BIND_WARP, 32); /* x[n * 8 + i], i < 8 */
  ck_assert(verify_grid(&t, 1, &w));
  ck_assert_int_eq(t.diag.ice, 0);
  t_done(&t);
}
END_TEST

/* a thread loop in a grid loop; warps whose rows overlap (x[n * 4 + i] for
 * i < 8: node n's i = 4 is node n + 1's i = 0) */
START_TEST(test_grid_unsound) {
  T t;
  t_init(&t);
  IlirStmt *s = ilir_store(t.a, t.x, row(&t, t.i, 0), ilir_const_f(t.a, 1));
  IlirStmt *thr = thread_loop(&t, t.i, 1, &s);
  ck_assert(!verify_grid(&t, 1, &thr));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
  t_init(&t);
  IlirStmt *w = sum_loop(&t, ILIR_BIND_WARP, 32);
  IlirExpr *at = ilir_binary(t.a, ILIR_ADD,
                             ilir_binary(t.a, ILIR_MUL, ilir_var(t.a, t.n), ilir_const_i(t.a, 4)),
                             ilir_var(t.a, t.i));
  w->body.stmts[0] = ilir_store(t.a, t.x, at, w->body.stmts[0]->value);
  ck_assert(!verify_grid(&t, 1, &w));
  ck_assert_int_eq(t.diag.ice, 1);
  t_done(&t);
}
END_TEST

/* ---- fused warp loops (sched_gpu.c, fuse_level) ---- */

/* row * n + i + off; with [dep], row * dep[n] + i + off (another node's row) */
static IlirExpr *at(T *t, bool dep, long row, long off) {
  IlirExpr *node = ilir_var(t->a, t->n);
  if (dep) node = ilir_load(t->a, t->k, t->k->dep_buf, node);
  IlirExpr *e = ilir_binary(t->a, ILIR_MUL, node, ilir_const_i(t->a, row));
  e = ilir_binary(t->a, ILIR_ADD, e, ilir_var(t->a, t->i));
  return ilir_binary(t->a, ILIR_ADD, e, ilir_const_i(t->a, off));
}

/* buf[row * n + i + off] = sum(j in [0, R)) p[j] + from[row * n + j] (when [from] >= 0) */
static IlirStmt *sum_store(T *t, int buf, long row, long off, long R, int from) {
  IlirExpr *x = ilir_load(t->a, t->k, t->p, ilir_var(t->a, t->j));
  if (from >= 0) {
    IlirExpr *ix = ilir_binary(t->a, ILIR_MUL, ilir_var(t->a, t->n), ilir_const_i(t->a, row));
    ix = ilir_binary(t->a, ILIR_ADD, ix, ilir_var(t->a, t->j));
    x = ilir_binary(t->a, ILIR_ADD, x, ilir_load(t->a, t->k, from, ix));
  }
  IlirExpr *sum =
      ilir_reduce(t->a, ILIR_SUM, t->j, ilir_const_i(t->a, 0), ilir_const_i(t->a, R), x);
  return ilir_store(t->a, buf, at(t, false, row, off), sum);
}

/* y[yrow n + i] = x[16 n + i + off] + x[16 dep[n] + i] (a child's row) */
static IlirStmt *tail_store(T *t, long off, long yrow) {
  IlirExpr *v = ilir_binary(t->a, ILIR_ADD, ilir_load(t->a, t->k, t->x, at(t, false, 16, off)),
                            ilir_load(t->a, t->k, t->x, at(t, true, 16, 0)));
  return ilir_store(t->a, t->y, at(t, false, yrow, 0), v);
}

/* A grid loop of one warp loop over i in [0, 8) fused of [body]. */
static bool verify_fused(T *t, int n, IlirStmt **body) {
  IlirStmt *w = bound(t, t->i, ILIR_BIND_WARP, ILIR_LOOP_SERIAL, n, body);
  return verify_grid(t, 1, &w);
}

/* x's two bands of 8 (i and i + 8) of sums, then an elementwise store that
 * reads them at its own element and a child's row */
START_TEST(test_fused_sound) {
  T t;
  t_init(&t);
  IlirStmt *s[3] = {sum_store(&t, t.x, 16, 0, 32, -1), sum_store(&t, t.x, 16, 8, 32, -1),
                    tail_store(&t, 8, 16)};
  ck_assert(verify_fused(&t, 3, s));
  ck_assert_int_eq(t.diag.ice, 0);
  t_done(&t);
}
END_TEST

/* Each way of breaking a fused warp loop's discipline: 0 an elementwise
 * read of another iteration's element, 1 of an element stored only later,
 * 2 a sum that reads what the loop stores, 3 two stores of one element,
 * 4 nodes' rows that overlap (y[4 n + i], i < 8: node n's i = 4 is node
 * n + 1's i = 0),
 * 5 a reduction that is no warp sum (4 terms), 6 a nested loop. */
START_TEST(test_fused_unsound) {
  for (int c = 0; c < 7; c++) {
    T t;
    t_init(&t);
    IlirStmt *s[3] = {sum_store(&t, t.x, 16, 0, 32, -1), sum_store(&t, t.x, 16, 8, 32, -1),
                      tail_store(&t, 8, 16)};
    IlirStmt *late[3] = {s[0], s[2], s[1]};
    IlirStmt **body = s;
    if (c == 0) s[2] = tail_store(&t, 9, 16);
    if (c == 1) body = late;
    if (c == 2) s[1] = sum_store(&t, t.x, 16, 8, 32, t.y);
    if (c == 3) s[1] = sum_store(&t, t.x, 16, 0, 32, -1), s[2] = tail_store(&t, 0, 16);
    if (c == 4) s[2] = tail_store(&t, 8, 4);
    if (c == 5) s[1] = sum_store(&t, t.x, 16, 8, 4, -1);
    if (c == 6) s[1] = thread_loop(&t, t.j, 1, &s[1]);
    ck_assert_msg(!verify_fused(&t, 3, body), "case %d", c);
    ck_assert_int_eq(t.diag.ice, 1);
    t_done(&t);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("sched_gpu");
  TCase *tc = tcase_create("verify");
  tcase_add_test(tc, test_sound);
  tcase_add_test(tc, test_read_of_another_thread);
  tcase_add_test(tc, test_node_warp);
  tcase_add_test(tc, test_store_not_moving);
  tcase_add_test(tc, test_statement_outside_phase);
  tcase_add_test(tc, test_thread_loop_outside_block);
  tcase_add_test(tc, test_block_loop_not_nodes);
  tcase_add_test(tc, test_warp_sum_sound);
  tcase_add_test(tc, test_warp_loop_not_a_sum);
  tcase_add_test(tc, test_warp_sum_strided);
  tcase_add_test(tc, test_grid_sound);
  tcase_add_test(tc, test_grid_unsound);
  tcase_add_test(tc, test_fused_sound);
  tcase_add_test(tc, test_fused_unsound);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
