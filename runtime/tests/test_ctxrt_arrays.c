/* test_ctxrt_arrays.c — forests from arrays (dependency lists and parent
 * arrays): the same forest as the text readers make, every kind, values on
 * leaves only, and every error with its exact message. */
#include "ctxrt_testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static char msg[CTXRT_MSG_SIZE];

/* Asserts that [a] and [b] hold the same structures, dependencies and values. */
static void same_forest(const CtxrtForest *a, const CtxrtForest *b) {
  ck_assert_int_eq(a->kind, b->kind);
  ck_assert_int_eq(a->num_structs, b->num_structs);
  ck_assert_int_eq(a->num_nodes, b->num_nodes);
  for (int32_t s = 0; s <= a->num_structs; s++)
    ck_assert_int_eq(a->struct_begin[s], b->struct_begin[s]);
  for (int32_t n = 0; n <= a->num_nodes; n++) {
    ck_assert_int_eq(a->dep_begin[n], b->dep_begin[n]);
    ck_assert_int_eq(a->val_begin[n], b->val_begin[n]);
  }
  for (int32_t k = 0; k < a->dep_begin[a->num_nodes]; k++)
    ck_assert_int_eq(a->dep[k], b->dep[k]);
  for (int32_t k = 0; k < a->val_begin[a->num_nodes]; k++) {
    ck_assert(a->val[k] == b->val[k]);
    ck_assert_int_eq(a->val_is_int[k], b->val_is_int[k]);
  }
}

START_TEST(test_tree_lists_and_heads) {
  /* (3 (2 17) (4 (2 5) (3 901))) and a one-node tree (0 7) */
  CtxrtForest *text = tu_ptb("(3 (2 17) (4 (2 5) (3 901)))\n(0 7)\n");
  const int32_t num_nodes[] = {5, 1}, num_deps[] = {2, 0, 2, 0, 0, 0};
  const int32_t deps[] = {1, 2, 3, 4}, heads[] = {-1, 0, 0, 2, 2, -1};
  const double values[] = {-1, 17, 1.5, 5, 901, 7}; /* internal nodes' are ignored */
  CtxrtForest *f, *g;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_from_arrays("a", CTXRT_TREE, 2, num_nodes, num_deps, deps, 1,
                                            values, CTXRT_VALUES_LEAVES, &f, &err),
                   CTXRT_OK);
  same_forest(f, text);
  ck_assert_str_eq(f->name, "a");
  ck_assert_int_eq(f->id[4], 4);
  ck_assert_int_eq(f->id[5], 0);
  ck_assert_int_eq(ctxrt_forest_from_heads("h", 2, num_nodes, heads, 1, values,
                                           CTXRT_VALUES_LEAVES, &g, &err),
                   CTXRT_OK);
  same_forest(g, text);
  ctxrt_forest_destroy(f);
  ctxrt_forest_destroy(g);
  ctxrt_forest_destroy(text);
}
END_TEST

START_TEST(test_dag_sequence_values) {
  CtxrtForest *text = tu_nodes("dag\n0 0.5 1\n1 2 3 : 0\n2 4 5 : 0\n3 6 7.25 : 1 2\n"
                               "dag\n0 1 2\n");
  const int32_t num_nodes[] = {4, 1}, num_deps[] = {0, 1, 1, 2, 0}, deps[] = {0, 0, 1, 2};
  const double values[] = {0.5, 1, 2, 3, 4, 5, 6, 7.25, 1, 2};
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_from_arrays("a", CTXRT_DAG, 2, num_nodes, num_deps, deps, 2,
                                            values, CTXRT_VALUES_ALL, &f, &err),
                   CTXRT_OK);
  same_forest(f, text);
  ctxrt_forest_destroy(f);
  ctxrt_forest_destroy(text);
  text = tu_nodes("sequence\n0 3\n1 14\n2 15\nsequence\n0 9\n");
  const int32_t seq_nodes[] = {3, 1};
  const double words[] = {3, 14, 15, 9};
  ck_assert_int_eq(ctxrt_forest_from_arrays("a", CTXRT_SEQUENCE, 2, seq_nodes, NULL, NULL, 1,
                                            words, CTXRT_VALUES_ALL, &f, &err),
                   CTXRT_OK);
  same_forest(f, text);
  ctxrt_forest_destroy(f);
  ctxrt_forest_destroy(text);
  /* no structures: validation reports the empty input */
  ck_assert_int_eq(ctxrt_forest_from_arrays("a", CTXRT_TREE, 0, NULL, NULL, NULL, 1, NULL,
                                            CTXRT_VALUES_ALL, &f, &err),
                   CTXRT_OK);
  CtxrtSpec spec = {CTXRT_TREE, 2, 0, 1, CTXRT_VALUES_ALL, NULL};
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "a:1: error: empty input (no structures)");
  ctxrt_forest_destroy(f);
}
END_TEST

/* The message of a failing ctxrt_forest_from_arrays (tree, one value). */
static const char *lists_err(int32_t ns, const int32_t *nn, const int32_t *nd,
                             const int32_t *d, const double *v, CtxrtStatus want) {
  CtxrtForest *f = (CtxrtForest *)&f;
  CtxrtError err;
  CtxrtStatus st = ctxrt_forest_from_arrays("a", CTXRT_TREE, ns, nn, nd, d, 1, v,
                                            CTXRT_VALUES_ALL, &f, &err);
  ck_assert_int_eq(st, want);
  ck_assert_int_eq(err.status, st);
  ck_assert_ptr_null(f);
  snprintf(msg, sizeof msg, "%s", err.msg);
  return msg;
}

static const char *heads_err(int32_t ns, const int32_t *nn, const int32_t *h,
                             const double *v, CtxrtStatus want) {
  CtxrtForest *f = (CtxrtForest *)&f;
  CtxrtError err;
  CtxrtStatus st = ctxrt_forest_from_heads("h", ns, nn, h, 1, v, CTXRT_VALUES_ALL, &f, &err);
  ck_assert_int_eq(st, want);
  ck_assert_ptr_null(f);
  snprintf(msg, sizeof msg, "%s", err.msg);
  return msg;
}

START_TEST(test_errors) {
  const int32_t two[] = {2}, bad_count[] = {-3}, nd[] = {1, 0}, far[] = {2}, neg[] = {-1};
  const int32_t neg_deps[] = {-1, 0};
  const double v[] = {1, 2};
  ck_assert_str_eq(lists_err(1, two, nd, far, v, CTXRT_ERR_INVALID),
                   "a: error: structure 1, node 0: dependency 2 outside the structure (2 "
                   "nodes)");
  ck_assert_str_eq(lists_err(1, two, nd, neg, v, CTXRT_ERR_INVALID),
                   "a: error: structure 1, node 0: dependency -1 outside the structure (2 "
                   "nodes)");
  ck_assert_str_eq(lists_err(1, two, neg_deps, far, v, CTXRT_ERR_INVALID),
                   "a: error: structure 1, node 0: -1 dependencies");
  ck_assert_str_eq(lists_err(1, bad_count, nd, far, v, CTXRT_ERR_ARG),
                   "a: error: structure 1: -3 nodes");
  ck_assert_str_eq(lists_err(-1, two, nd, far, v, CTXRT_ERR_ARG),
                   "a: error: bad arguments (a negative count or a missing array)");
  ck_assert_str_eq(lists_err(1, two, nd, far, NULL, CTXRT_ERR_ARG),
                   "a: error: bad arguments (a negative count or a missing array)");
  ck_assert_str_eq(lists_err(1, two, NULL, far, v, CTXRT_ERR_ARG),
                   "a: error: bad arguments (kind, or no num_deps)");
  ck_assert_str_eq(lists_err(1, two, nd, NULL, v, CTXRT_ERR_ARG),
                   "a: error: bad arguments (no deps array)");
  const double nan_v[] = {1, NAN}, inf_v[] = {INFINITY, 0};
  const int32_t ok_deps[] = {1};
  ck_assert_str_eq(lists_err(1, two, nd, ok_deps, nan_v, CTXRT_ERR_INVALID),
                   "a: error: structure 1, node 1: value 1 is nan, expected a finite number");
  ck_assert_str_eq(lists_err(1, two, nd, ok_deps, inf_v, CTXRT_ERR_INVALID),
                   "a: error: structure 1, node 0: value 1 is inf, expected a finite number");
  const int32_t h_far[] = {-1, 2}, h_neg[] = {-2, 0};
  ck_assert_str_eq(heads_err(1, two, h_far, v, CTXRT_ERR_INVALID),
                   "h: error: structure 1, node 1: head 2 outside the structure (-1 or 0 to "
                   "1)");
  ck_assert_str_eq(heads_err(1, two, h_neg, v, CTXRT_ERR_INVALID),
                   "h: error: structure 1, node 0: head -2 outside the structure (-1 or 0 to "
                   "1)");
  ck_assert_str_eq(heads_err(1, two, NULL, v, CTXRT_ERR_ARG),
                   "h: error: bad arguments (no heads array)");
}
END_TEST

START_TEST(test_shape_errors_by_validation) {
  /* heads that make two roots, a cycle; a word id that is not an integer */
  const int32_t three[] = {3}, roots[] = {-1, -1, 0}, cycle[] = {-1, 2, 1};
  const double v[] = {1, 2, 3}, frac[] = {1, 2.5, 3};
  CtxrtSpec spec = {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){10}};
  const int32_t *cases[] = {roots, cycle};
  const char *want[] = {"h: error: structure 1: several roots, nodes 0 and 1",
                        "h: error: structure 1: cycle through node 2"};
  for (int i = 0; i < 2; i++) {
    CtxrtForest *f;
    CtxrtError err;
    ck_assert_int_eq(ctxrt_forest_from_heads("h", 1, three, cases[i], 1, v,
                                             CTXRT_VALUES_ALL, &f, &err),
                     CTXRT_OK);
    ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_ERR_INVALID);
    ck_assert_str_eq(err.msg, want[i]);
    ctxrt_forest_destroy(f);
  }
  const int32_t chain[] = {-1, 0, 1};
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_from_heads("h", 1, three, chain, 1, frac, CTXRT_VALUES_ALL,
                                           &f, &err),
                   CTXRT_OK);
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg,
                   "h: error: structure 1, node 1: value 1 is 2.5, expected an integer word id");
  ctxrt_forest_destroy(f);
}
END_TEST

static Suite *arrays_suite(void) {
  Suite *s = suite_create("arrays");
  TCase *tc = tcase_create("arrays");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_tree_lists_and_heads);
  tcase_add_test(tc, test_dag_sequence_values);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_shape_errors_by_validation);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(arrays_suite());
}
