/* cg_profile_tests.c — unit tests of a profiled kernel (codegen.h,
 * "profiling"): the plan of a hand-built kernel (regions, names, FLOPs,
 * parameter loads), the counters after running it on a known batch, the
 * kernel without a profile free of instrumentation, and the JIT's symbols. */
#include "cg_test_kernels.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

enum { R = 3, I = 4 };

/* x * k + y */
static IlirExpr *lin(T *t, IlirExpr *x, long k, IlirExpr *y) {
  return bin(t, ILIR_ADD, bin(t, ILIR_MUL, x, ci(t, k)), y);
}

/* for l in levels [0, num_levels) { for n in nodes [levels[l], levels[l+1]) {
 *   for i in [0, I) out[n * I + i] = sum(r in [0, R)) x[n * R + r] * W[r * I + i] } } */
static void build(T *t) {
  t_init(t, "ctx_prof_test_kernel");
  int w = buf(t, "W", ILIR_BUF_PARAM, R * I);
  int x = buf(t, "values", ILIR_BUF_VALUES, R);
  int lv = buf(t, "levels", ILIR_BUF_LEVELS, 1);
  int out = buf(t, "out", ILIR_BUF_RESULT, I);
  t->k->values_per_node = R;
  IlirVar *n = var(t, "n"), *i = var(t, "i"), *r = var(t, "r");
  IlirExpr *xv = ld(t, x, lin(t, vr(t, n), R, vr(t, r)));
  IlirExpr *wv = ld(t, w, lin(t, vr(t, r), I, vr(t, i)));
  IlirExpr *sum = red(t, ILIR_SUM, r, ci(t, 0), ci(t, R), bin(t, ILIR_MUL, xv, wv));
  IlirStmt *st = store(t, out, lin(t, vr(t, n), I, vr(t, i)), sum);
  levels_around(t, lv, n, loop(t, i, ci(t, 0), ci(t, I), st));
}

START_TEST(plan_of_a_product) {
  T t;
  build(&t);
  CgProfile *p = cg_profile_plan(t.k);
  ck_assert_int_eq(p->n, 2);
  ck_assert_str_eq(p->regions[0].name, "levels");
  ck_assert_int_eq(p->regions[0].parent, -1);
  ck_assert_str_eq(p->regions[1].name, "out");
  ck_assert_int_eq(p->regions[1].parent, 0);
  ck_assert(p->regions[1].node_loop);
  ck_assert(p->regions[1].flops == 2.0 * R * I); /* per node */
  ck_assert_int_eq(p->regions[1].nparams, 1);    /* W, read R * I times a node */
  ck_assert_int_eq(p->regions[1].params[0][0], R * I);
  ck_assert_int_eq(p->regions[1].params[0][1], R * I);
  cg_profile_free(p);
  t_done(&t);
}
END_TEST

/* Thread 1 runs alone below: its barrier need not wait for anyone. */
static void no_wait(void *ctx) { (void)ctx; }

START_TEST(counters_after_a_run) {
  T t;
  build(&t);
  CgProfile *p = cg_profile_plan(t.k);
  CgJitOptions opts = {.profile = p};
  CgJit *jit = cg_jit_compile_with(t.k, &opts, &t.diag);
  ck_assert_ptr_nonnull(jit);
  float w[R * I], x[6 * R], out[6 * I];
  for (int e = 0; e < R * I; e++) w[e] = (float)(e % 5) - 2;
  for (int e = 0; e < 6 * R; e++) x[e] = (float)(e % 3);
  int32_t levels[3] = {0, 3, 5}; /* levels of 3 and 2 nodes */
  void *bufs[4] = {w, x, levels, out};
  int64_t *c = cg_jit_counters(jit);
  ck_assert_ptr_nonnull(c);
  memset(c, 0, 2 * CG_PROF_FIELDS * sizeof *c);
  uint64_t c0 = cg_jit_cycles(jit);
  cg_jit_kernel(jit)(bufs, 5, 2, 0, 1, NULL, NULL);
  ck_assert_uint_gt(cg_jit_cycles(jit), c0);
  ck_assert_int_eq(c[CG_PROF_RUNS], 1);
  ck_assert_int_eq(c[CG_PROF_ITERS], 2); /* levels */
  const int64_t *node = c + CG_PROF_FIELDS;
  ck_assert_int_eq(node[CG_PROF_RUNS], 2);
  ck_assert_int_eq(node[CG_PROF_ITERS], 5);                 /* nodes */
  ck_assert_int_eq(node[CG_PROF_BYTES], 2 * R * I * 4);     /* W once per level */
  ck_assert_int_ge(c[CG_PROF_CYCLES], node[CG_PROF_CYCLES]); /* the parent holds it */
  for (int n = 0; n < 5; n++)
    for (int i = 0; i < I; i++) {
      float want = 0;
      for (int r = 0; r < R; r++) want += x[n * R + r] * w[r * I + i];
      ck_assert_float_eq_tol(out[n * I + i], want, 1e-5);
    }
  /* thread 1 of 2 adds nothing */
  memset(c, 0, 2 * CG_PROF_FIELDS * sizeof *c);
  cg_jit_kernel(jit)(bufs, 5, 1, 1, 2, no_wait, NULL);
  ck_assert_int_eq(c[CG_PROF_RUNS] + node[CG_PROF_RUNS], 0);
  cg_jit_free(jit);
  cg_profile_free(p);
  t_done(&t);
}
END_TEST

START_TEST(plain_kernel_and_symbols) {
  T t;
  build(&t);
  CtxBuf ir;
  ctx_buf_init(&ir);
  ck_assert(cg_emit_llvm(&ir, t.k, NULL, &t.diag));
  ck_assert_ptr_null(strstr(ctx_buf_str(&ir), "readcyclecounter"));
  ck_assert_ptr_null(strstr(ctx_buf_str(&ir), ".prof"));
  ctx_buf_free(&ir);
  CgJit *jit = cg_jit_compile(t.k, &t.diag);
  ck_assert_ptr_nonnull(jit);
  ck_assert_ptr_null(cg_jit_counters(jit));
  const CgJitSym *syms;
  int n = cg_jit_symbols(jit, &syms), found = 0;
  for (int s = 0; s < n; s++)
    if (strcmp(syms[s].name, t.k->name) == 0) {
      found++;
      ck_assert_uint_eq(syms[s].addr, (uint64_t)(uintptr_t)cg_jit_kernel(jit));
      ck_assert_uint_gt(syms[s].size, 16);
    }
  ck_assert_int_eq(found, 1);
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cg_profile");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, plan_of_a_product);
  tcase_add_test(tc, counters_after_a_run);
  tcase_add_test(tc, plain_kernel_and_symbols);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
