/* ra_tests.c — unit tests of RA: building from source text, printing, and
 * the float64 interpreter against values computed here by hand. */
#include "ra/ra.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  CtxSources srcs;
  CtxDiag diag;
  CtxArena *arena;
  RaProgram *p;
} Built;

static void build(Built *b, const char *text) {
  memset(b, 0, sizeof *b);
  ctx_sources_init(&b->srcs);
  ctx_diag_init(&b->diag, &b->srcs, stderr);
  b->arena = ctx_arena_new();
  int id = ctx_sources_add(&b->srcs, "t.ctx", text, strlen(text));
  AstFile *f = ast_parse(b->arena, &b->diag, id);
  ck_assert_int_eq(b->diag.errors, 0);
  SemaModel *m = sema_check(b->arena, &b->diag, &f, 1, NULL, 0);
  ck_assert_int_eq(b->diag.errors, 0);
  b->p = ra_build(b->arena, &b->diag, m, 0);
  ck_assert_ptr_nonnull(b->p);
}

static void done(Built *b) {
  ctx_arena_free(b->arena);
  ctx_sources_free(&b->srcs);
}

static double *run(const RaProgram *p, CtxrtForest *f, const double *const *params,
                   bool all, int64_t *rows) {
  CtxrtError err;
  ctxrt_error_clear(&err);
  double *out = NULL;
  CtxrtStatus st = ra_interp_run(p, f, params, all, &out, rows, &err);
  ck_assert_msg(st == CTXRT_OK, "%s", err.msg);
  return out;
}

static const char treefc[] =
    "model treefc\ndim H = 2\ndim V = 3\n"
    "input t : tree(max_children = 2)\ninput words : i32[t]\n"
    "param Emb : f32[V, H]\nparam W : f32[H, 2*H]\nparam b : f32[H]\n"
    "rec node(n: t) -> f32[H] {\n  if leaf(n) { return Emb[words[n]] }\n"
    "  return relu(W @ [node(n.child[0]); node(n.child[1])] + b)\n}\n"
    "output node(root(t))\n";

START_TEST(treefc_by_hand) {
  Built b;
  build(&b, treefc);
  ck_assert_int_eq(b.p->nparams, 3);
  ck_assert_int_eq(b.p->inputs[0].bound, 3);
  ck_assert(!b.p->inputs[0].read_at_internal);
  double emb[6] = {0.5, -1, 2, 0.25, -3, 1}, w[8] = {1, 2, 3, 4, -1, 0.5, 2, -2},
         bias[2] = {0.1, -0.2};
  const double *params[3] = {emb, w, bias};
  const char *trees = "(1 (2 0) (2 1))\n(0 2)\n";
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_ptb_buffer("in.ptb", trees, strlen(trees), NULL, &f, &err), 0);
  int64_t rows;
  double *out = run(b.p, f, params, false, &rows);
  ck_assert_int_eq(rows, 2);
  double x[4] = {0.5, -1, 2, 0.25};
  for (int i = 0; i < 2; i++) {
    double s = bias[i];
    for (int k = 0; k < 4; k++) s += w[i * 4 + k] * x[k];
    ck_assert_double_eq_tol(out[i], s > 0 ? s : 0, 1e-15);
  }
  ck_assert_double_eq(out[2], -3); /* a single leaf: its embedding */
  ck_assert_double_eq(out[3], 1);
  free(out);
  out = run(b.p, f, params, true, &rows); /* every node, pre-order */
  ck_assert_int_eq(rows, 4);
  ck_assert_double_eq(out[2], 0.5);
  ck_assert_double_eq(out[5], 0.25);
  free(out);
  ctxrt_forest_destroy(f);
  done(&b);
}
END_TEST

START_TEST(childsum_reduction_and_index_form) {
  Built b;
  build(&b, "model cs\ndim H = 2\ninput t : tree(max_children = 3)\n"
            "input x : f32[t, H]\nparam M : f32[H, H]\n"
            "rec f(n: t) -> f32[H] {\n"
            "  let s = sum(k in n.children) f(n.child[k])\n"
            "  let y[i] = sum(j) M[i, j] * s[j]\n"
            "  return tanh(x[n] + y)\n}\noutput f(root(t))\n");
  ck_assert(b.p->inputs[0].read_at_internal);
  double m[4] = {1, -1, 0.5, 2};
  const double *params[1] = {m};
  const char *nodes = "tree\n0 1 2 : 1 2 3\n1 0.5 0\n2 0 0.5\n3 -1 1\n";
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_nodes_buffer("in.nodes", nodes, strlen(nodes), &f, &err), 0);
  int64_t rows;
  double *out = run(b.p, f, params, false, &rows);
  double leaves[3][2] = {{tanh(0.5), tanh(0)}, {tanh(0), tanh(0.5)}, {tanh(-1), tanh(1)}};
  double s[2] = {0, 0};
  for (int c = 0; c < 3; c++) s[0] += leaves[c][0], s[1] += leaves[c][1];
  ck_assert_double_eq_tol(out[0], tanh(1 + s[0] - s[1]), 1e-15);
  ck_assert_double_eq_tol(out[1], tanh(2 + 0.5 * s[0] + 2 * s[1]), 1e-15);
  free(out);
  ctxrt_forest_destroy(f);
  done(&b);
}
END_TEST

START_TEST(print_shows_operators) {
  Built b;
  build(&b, treefc);
  CtxBuf out;
  ctx_buf_init(&out);
  ra_print(&out, b.p);
  const char *s = ctx_buf_str(&out);
  ck_assert_ptr_nonnull(strstr(s, "ra treefc (tree, at most 2 dependencies per node)"));
  ck_assert_ptr_nonnull(strstr(s, "node.mm1[i < 2] = (sum(r"));
  ck_assert_ptr_nonnull(strstr(s, "Emb[words@n, i]"));
  ck_assert_ptr_nonnull(strstr(s, "output node at each root"));
  ctx_buf_free(&out);
  done(&b);
}
END_TEST

START_TEST(missing_value_is_a_runtime_error) {
  Built b;
  build(&b, treefc);
  double emb[6] = {0}, w[8] = {0}, bias[2] = {0};
  const double *params[3] = {emb, w, bias};
  const char *nodes = "tree\n0 : 1 2\n1\n2 1\n";
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_nodes_buffer("in.nodes", nodes, strlen(nodes), &f, &err), 0);
  double *out = NULL;
  int64_t rows;
  ctxrt_error_clear(&err);
  ck_assert_int_ne(ra_interp_run(b.p, f, params, false, &out, &rows, &err), CTXRT_OK);
  ck_assert_str_eq(err.msg, "in.nodes:3: error: node 1 of structure 1 has no value for "
                            "input 'words'");
  ck_assert_ptr_null(out);
  ctxrt_forest_destroy(f);
  done(&b);
}
END_TEST

static Suite *ra_suite(void) {
  Suite *s = suite_create("ra");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, treefc_by_hand);
  tcase_add_test(tc, childsum_reduction_and_index_form);
  tcase_add_test(tc, print_shows_operators);
  tcase_add_test(tc, missing_value_is_a_runtime_error);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(ra_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
