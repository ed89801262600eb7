/* sched_spec_tests.c — arity specialization (sched_specialize_arity,
 * sched_spec.c) on kernels built by hand: each node loop of a levels loop
 * becomes a loop per arity group (bounds from the ARITY_END buffers, in the
 * plan's order, the arity a constant, an `if` on it folded) and one over the
 * rest (the body as it was), every one of them cut from the thread's share of
 * the whole level; register tiles and specialize-leaf's leaf level are left
 * alone; the result passes the ILIR verifier. */
#include "sched/sched_int.h"

#include <check.h>
#include <string.h>

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  CtxSources srcs;
  CtxDiag diag;
  IlirVar *l, *n;
} T;

enum { BUF_X, BUF_DEP, BUF_NUM_DEPS, BUF_LEVELS, NBUFS };

static void t_init(T *t) {
  memset(t, 0, sizeof *t);
  t->a = ctx_arena_new();
  ctx_sources_init(&t->srcs);
  ctx_diag_init(&t->diag, &t->srcs, NULL);
  IlirKernel *k = t->k = CTX_NEW(t->a, IlirKernel);
  k->name = "k";
  k->bufs = CTX_NEW_ARRAY(t->a, IlirBuf, NBUFS);
  k->bufs[BUF_X] = (IlirBuf){"x", ILIR_BUF_SCRATCH, 1, 0, 0, {0, 0, 0, 0, 0}, false};
  k->bufs[BUF_DEP] = (IlirBuf){"dep", ILIR_BUF_DEP, 2, 0, 0, {0, 0, 0, 0, 0}, false};
  k->bufs[BUF_NUM_DEPS] = (IlirBuf){"num_deps", ILIR_BUF_NUM_DEPS, 1, 0, 0, {0, 0, 0, 0, 0}, false};
  k->bufs[BUF_LEVELS] = (IlirBuf){"levels", ILIR_BUF_LEVELS, 1, 0, 0, {0, 0, 0, 0, 0}, false};
  k->nbufs = NBUFS;
  k->max_deps = 2;
  k->dep_buf = BUF_DEP, k->num_deps_buf = BUF_NUM_DEPS, k->levels_buf = BUF_LEVELS;
  k->values_buf = k->ivalues_buf = -1;
  t->l = ilir_new_var(t->a, k, "l");
  t->n = ilir_new_var(t->a, k, "n");
}

static void t_done(T *t) {
  ctx_sources_free(&t->srcs);
  ctx_arena_free(t->a);
}

static IlirBlock one(T *t, IlirStmt *s) {
  IlirBlock b = {CTX_NEW_ARRAY(t->a, IlirStmt *, 1), 1};
  b.stmts[0] = s;
  return b;
}

static IlirExpr *level_start(T *t, long plus) {
  IlirExpr *at = ilir_binary(t->a, ILIR_ADD, ilir_var(t->a, t->l), ilir_const_i(t->a, plus));
  return ilir_load(t->a, t->k, BUF_LEVELS, at);
}

/* for l in levels [lo, hi) { for n in nodes [levels[l], levels[l + 1]) {
 *   if num_deps[n] == 0 { x[n] = 1 } else { x[n] = float(num_deps[n]) } } } */
static IlirStmt *levels_loop(T *t, IlirExpr *lo, IlirExpr *hi, int tile) {
  CtxArena *a = t->a;
  IlirExpr *nd = ilir_load(a, t->k, BUF_NUM_DEPS, ilir_var(a, t->n));
  IlirStmt *leaf = ilir_store(a, BUF_X, ilir_var(a, t->n), ilir_const_f(a, 1));
  IlirStmt *inner = ilir_store(a, BUF_X, ilir_var(a, t->n), ilir_to_f32(a, nd));
  IlirStmt *test = CTX_NEW(a, IlirStmt);
  test->kind = ILIR_IF;
  test->cond = ilir_binary(a, ILIR_EQ, nd, ilir_const_i(a, 0));
  test->then = one(t, leaf), test->els = one(t, inner);
  IlirStmt *nodes = ilir_loop(a, t->n, level_start(t, 0), level_start(t, 1), ILIR_LOOP_NODES,
                              one(t, test));
  nodes->tile_nodes = tile;
  return ilir_loop(a, t->l, lo, hi, ILIR_LOOP_LEVELS, one(t, nodes));
}

static IlirStmt *loop_at(const IlirStmt *lv, int i) { return lv->body.stmts[i]; }

START_TEST(test_groups) {
  T t;
  t_init(&t);
  t.k->body = one(&t, levels_loop(&t, ilir_const_i(t.a, 0), ilir_arg(t.a, 1), 0));
  SchedPlan plan;
  memset(&plan, 0, sizeof plan);
  plan.arity[0] = 2, plan.arity[1] = 1, plan.narity = 2;
  sched_specialize_arity(t.a, t.k, &plan);
  ck_assert_int_eq(t.k->nbufs, NBUFS + 2);
  ck_assert_int_eq(t.k->bufs[NBUFS].kind, ILIR_BUF_ARITY_END);
  ck_assert_int_eq(t.k->bufs[NBUFS].size, 2);
  ck_assert_int_eq(t.k->bufs[NBUFS + 1].size, 1);
  const IlirStmt *lv = t.k->body.stmts[0];
  ck_assert_int_eq(lv->body.n, 3);
  for (int g = 0; g < 3; g++) {
    const IlirStmt *s = loop_at(lv, g);
    ck_assert_int_eq(s->loop, ILIR_LOOP_NODES);
    ck_assert(ilir_same_expr(s->team_lo, level_start(&t, 0), NULL, NULL));
    ck_assert(ilir_same_expr(s->team_hi, level_start(&t, 1), NULL, NULL));
    /* [levels[l], arity2[l]), [arity2[l], arity1[l]), [arity1[l], levels[l + 1]) */
    if (g == 0) ck_assert(ilir_same_expr(s->lo, level_start(&t, 0), NULL, NULL));
    else ck_assert(s->lo->kind == ILIR_LOAD && s->lo->buf == NBUFS + g - 1);
    if (g == 2) ck_assert(ilir_same_expr(s->hi, level_start(&t, 1), NULL, NULL));
    else ck_assert(s->hi->kind == ILIR_LOAD && s->hi->buf == NBUFS + g);
  }
  for (int g = 0; g < 2; g++) { /* the test folded, the arity a constant */
    const IlirStmt *s = loop_at(lv, g);
    ck_assert_int_eq(s->body.n, 1);
    const IlirStmt *st = s->body.stmts[0];
    ck_assert_int_eq(st->kind, ILIR_STORE);
    ck_assert(st->value->kind == ILIR_CONST && st->value->fval == (float)plan.arity[g]);
  }
  ck_assert_int_eq(loop_at(lv, 2)->body.stmts[0]->kind, ILIR_IF); /* the rest: as it was */
  ck_assert(ilir_verify(t.k, &t.diag));
  t_done(&t);
}
END_TEST

START_TEST(test_leaves_and_tiles_alone) {
  T t;
  t_init(&t);
  IlirExpr *first = ilir_binary(t.a, ILIR_GT, ilir_arg(t.a, 1), ilir_const_i(t.a, 0));
  IlirStmt *both[2] = {levels_loop(&t, ilir_const_i(t.a, 0), first, 0),
                       levels_loop(&t, first, ilir_arg(t.a, 1), 4)};
  t.k->body = (IlirBlock){both, 2};
  SchedPlan plan;
  memset(&plan, 0, sizeof plan);
  plan.arity[0] = 0, plan.narity = 1;
  sched_specialize_arity(t.a, t.k, &plan);
  ck_assert_int_eq(t.k->nbufs, NBUFS + 1);
  ck_assert_int_eq(both[0]->body.n, 1); /* the leaf level */
  ck_assert_int_eq(both[1]->body.n, 1); /* a register tile */
  ck_assert_ptr_null(loop_at(both[1], 0)->team_lo);
  plan.narity = 0; /* no groups: nothing */
  sched_specialize_arity(t.a, t.k, &plan);
  ck_assert_int_eq(t.k->nbufs, NBUFS + 1);
  t_done(&t);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_spec");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_groups);
  tcase_add_test(tc, test_leaves_and_tiles_alone);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
