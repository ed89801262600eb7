/* test_ctxrt_validate.c — ctxrt_forest_validate: every rule with its exact
 * message and line, the order in which problems are reported, long cycles, and
 * forests edited by hand (dependencies outside their structure, bad sequences). */
#include "ctxrt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int64_t V20000[] = {20000};
static const CtxrtSpec binary = {CTXRT_TREE, 2, 0, 1, CTXRT_VALUES_LEAVES, V20000};
static const CtxrtSpec childsum = {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, V20000};
static const CtxrtSpec dagrnn = {CTXRT_DAG, 2, 0, 2, CTXRT_VALUES_ALL, NULL};
static const CtxrtSpec anything = {CTXRT_KIND_ANY, 0, 0, 0, CTXRT_VALUES_LEAVES, NULL};

START_TEST(test_valid_inputs) {
  ck_assert_str_eq(tu_validate("tree\n0 : 1 2\n1 5\n2 6\ntree\n7 3\n", &binary), "");
  ck_assert_str_eq(tu_validate("tree\n0 1 : 1 2\n1 5\n2 6\n", &childsum), "");
  ck_assert_str_eq(
      tu_validate("dag\n0 1 2\n1 1 2 : 0\n2 1 2 : 0\n3 1 2 : 1 2\n", &dagrnn), "");
  /* a node listed before the one it depends on, and shared predecessors */
  ck_assert_str_eq(
      tu_validate("dag\n3 0 0 : 1 2\n1 0 0 : 0\n2 0 0 : 0 1\n0 0 0\n", &dagrnn), "");
  ck_assert_str_eq(tu_validate("sequence\n0\n1\n2\n", &anything), "");
}
END_TEST

START_TEST(test_empty) {
  ck_assert_str_eq(tu_validate("# nothing\n", &binary),
                   "x:1: error: empty input (no structures)");
  ck_assert_str_eq(tu_validate("tree\n0\ntree\n\ntree\n0\n", &anything),
                   "x:3: error: structure 2: 'tree' with no nodes");
}
END_TEST

START_TEST(test_kind) {
  ck_assert_str_eq(
      tu_validate("\ndag\n0 5\n", &binary),
      "x:2: error: structure 1 is a 'dag', but the model reads 'tree' structures");
  ck_assert_str_eq(tu_validate("sequence\n0 5\n", &dagrnn),
                   "x:1: error: structure 1 is a 'sequence', but the model reads 'dag' "
                   "structures");
}
END_TEST

START_TEST(test_arity) {
  ck_assert_str_eq(
      tu_validate("tree\n0 : 1 2 3\n1 5\n2 6\n3 7\n", &binary),
      "x:2: error: structure 1, node 0: 3 children, more than the maximum 2");
  ck_assert_str_eq(
      tu_validate("dag\n0 0 0\n1 0 0\n2 0 0\n3 0 0 : 0 1 2\n", &dagrnn),
      "x:5: error: structure 1, node 3: 3 predecessors, more than the maximum 2");
  CtxrtSpec strict = binary;
  strict.min_arity = 2;
  ck_assert_str_eq(tu_validate("tree\n0 : 1\n1 : 2 3\n2 5\n3 6\n", &strict),
                   "x:2: error: structure 1, node 0: 1 child, fewer than the minimum 2");
  ck_assert_str_eq(tu_validate("tree\n0 : 1 2\n1 5\n2 6\n", &strict), "");
  /* max_arity 0: no limit */
  ck_assert_str_eq(
      tu_validate("tree\n0 : 1 2 3 4 5 6 7 8 9\n1\n2\n3\n4\n5\n6\n7\n8\n9\n", &anything),
      "");
}
END_TEST

START_TEST(test_repeated_dependency) {
  ck_assert_str_eq(tu_validate("dag\n0 0 0\n1 0 0 : 0 0\n", &dagrnn),
                   "x:3: error: structure 1, node 1: dependency 0 listed twice");
  ck_assert_str_eq(tu_validate("tree\n0 : 1 1\n1 4\n", &binary),
                   "x:2: error: structure 1, node 0: dependency 1 listed twice");
}
END_TEST

START_TEST(test_tree_shape) {
  ck_assert_str_eq(tu_validate("tree\n0 : 1 2\n1 : 2\n2 4\n", &binary),
                   "x:3: error: structure 1, node 2: two parents, nodes 0 and 1");
  ck_assert_str_eq(tu_validate("tree\n0 : 1\n1 4\n2 5\n", &binary),
                   "x:4: error: structure 1: several roots, nodes 0 and 2");
  ck_assert_str_eq(
      tu_validate("tree\n0 4\ntree\n0 : 1\n1 : 0\n", &binary),
      "x:3: error: structure 2: no root (every node is the child of another)");
  /* one root, one parent each, but 1 and 2 form a loop away from the root */
  ck_assert_str_eq(tu_validate("tree\n0 4\n1 : 2\n2 : 1\n", &binary),
                   "x:4: error: structure 1: cycle through node 2");
  ck_assert_str_eq(tu_validate("tree\n0 4\n5 : 5\n", &binary),
                   "x:3: error: structure 1: cycle through node 5");
}
END_TEST

START_TEST(test_dag_cycle) {
  /* Kahn finishes node 3 only; the walk back from node 0 lands on the cycle */
  const char *msg = tu_validate("dag\n0 0 0 : 2\n1 0 0 : 0\n2 0 0 : 1\n3 0 0\n", &dagrnn);
  ck_assert_str_eq(msg, "x:4: error: structure 1: cycle through node 2");
  ck_assert_str_eq(tu_validate("dag\n0 0 0\n1 0 0 : 1\n", &dagrnn),
                   "x:3: error: structure 1: cycle through node 1");
  /* a node hanging off a cycle is not named: the named node is on the cycle */
  ck_assert_str_eq(tu_validate("dag\n9 0 0 : 5\n5 0 0 : 6\n6 0 0 : 5\n", &dagrnn),
                   "x:3: error: structure 1: cycle through node 5");
}
END_TEST

START_TEST(test_values) {
  ck_assert_str_eq(tu_validate("tree\n0 1 2 : 1\n1 3\n", &childsum),
                   "x:2: error: structure 1, node 0: 2 values, expected 1");
  ck_assert_str_eq(tu_validate("tree\n0 1 : 1\n1\n", &childsum),
                   "x:3: error: structure 1, node 1: 0 values, expected 1");
  /* leaves only: internal nodes may carry none or all values */
  ck_assert_str_eq(tu_validate("tree\n0 7 : 1 2\n1 3\n2 4\n", &binary), "");
  ck_assert_str_eq(tu_validate("tree\n0 : 1 2\n1 3\n2\n", &binary),
                   "x:4: error: structure 1, node 2: 0 values, expected 1");
  ck_assert_str_eq(tu_validate("tree\n0 1 2 : 1 2\n1 3\n2 4\n", &binary),
                   "x:2: error: structure 1, node 0: 2 values, expected 0 or 1");
  ck_assert_str_eq(tu_validate("dag\n0 1 2 3\n", &dagrnn),
                   "x:2: error: structure 1, node 0: 3 values, expected 2");
  CtxrtSpec none = anything;
  ck_assert_str_eq(tu_validate("tree\n0 5\n", &none),
                   "x:2: error: structure 1, node 0: 1 value, expected 0");
}
END_TEST

START_TEST(test_word_ids) {
  ck_assert_str_eq(
      tu_validate("tree\n0 : 1 2\n1 5\n2 20000\n", &binary),
      "x:4: error: structure 1, node 2: value 1 is word id 20000, outside [0, "
      "20000)");
  ck_assert_str_eq(tu_validate("tree\n0 -1\n", &childsum),
                   "x:2: error: structure 1, node 0: value 1 is word id -1, outside [0, "
                   "20000)");
  ck_assert_str_eq(tu_validate("tree\n0 1.5\n", &childsum),
                   "x:2: error: structure 1, node 0: value 1 is 1.5, expected an integer "
                   "word id");
  ck_assert_str_eq(tu_validate("tree\n0 2e0\n", &childsum),
                   "x:2: error: structure 1, node 0: value 1 is 2, expected an integer "
                   "word id");
  /* a word id and a feature: only the first value is bounded */
  static const int64_t bounds[] = {10, 0};
  CtxrtSpec mixed = {CTXRT_TREE, 2, 0, 2, CTXRT_VALUES_ALL, bounds};
  ck_assert_str_eq(tu_validate("tree\n0 9 -3.5\n", &mixed), "");
  ck_assert_str_eq(
      tu_validate("tree\n0 9 -3.5 : 1\n1 10 0\n", &mixed),
      "x:3: error: structure 1, node 1: value 1 is word id 10, outside [0, 10)");
  /* PTB leaves against the vocabulary size */
  CtxrtForest *f = tu_ptb("(1 (2 3) (2 4))\n(1 (2 3) (2 5))");
  CtxrtSpec five = {CTXRT_TREE, 2, 2, 1, CTXRT_VALUES_LEAVES, (const int64_t[]){5}};
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_validate(f, &five, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg,
                   "x:2: error: structure 2, node 2: value 1 is word id 5, outside "
                   "[0, 5)");
  ck_assert_int_eq(err.line, 2);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_report_order) {
  /* per-node problems in node order come before shape problems */
  ck_assert_str_eq(
      tu_validate("tree\n0 : 1\n1 4\n2 5\n3 : 1 2 3 4\n4\n", &binary),
      "x:5: error: structure 1, node 3: 4 children, more than the maximum 2");
  /* structures in order */
  ck_assert_str_eq(
      tu_validate("tree\n0 : 1\n1 4\n2 5\ntree\n0 : 1 2 3\n1 4\n2 4\n3 4\n", &binary),
      "x:4: error: structure 1: several roots, nodes 0 and 2");
}
END_TEST

/* A [kind] structure of n nodes where node i depends on node (i + 1) % n. */
static char *ring(const char *kind, int n) {
  size_t cap = (size_t)n * 24 + 16, at = 0;
  char *text = malloc(cap);
  at += (size_t)snprintf(text, cap, "%s\n", kind);
  for (int i = 0; i < n; i++)
    at += (size_t)snprintf(text + at, cap - at, "%d 0 0 : %d\n", i, (i + 1) % n);
  return text;
}

START_TEST(test_long_cycle) {
  char *text = ring("dag", 100000);
  ck_assert_str_eq(tu_validate(text, &dagrnn),
                   "x:2: error: structure 1: cycle through node 0");
  free(text);
  /* as a tree: every node a child, so no root */
  text = ring("tree", 100000);
  CtxrtSpec tree2 = {CTXRT_TREE, 2, 0, 2, CTXRT_VALUES_ALL, NULL};
  ck_assert_str_eq(
      tu_validate(text, &tree2),
      "x:1: error: structure 1: no root (every node is the child of another)");
  free(text);
}
END_TEST

START_TEST(test_hand_edited_forest) {
  CtxrtForest *f = tu_nodes("dag\n0 0 0\n1 0 0 : 0\ndag\n0 0 0\n1 0 0 : 0\n");
  CtxrtError err;
  f->dep[1] = 0; /* structure 2's node 1 now depends on structure 1's node 0 */
  ck_assert_int_eq(ctxrt_forest_validate(f, &dagrnn, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg,
                   "x:6: error: structure 2, node 1: dependency index 0 outside its "
                   "structure");
  ctxrt_forest_destroy(f);
  f = tu_nodes("sequence\n0\n1\n2\n");
  f->dep[1] = 0; /* element 2 now depends on element 0 */
  ck_assert_int_eq(ctxrt_forest_validate(f, &anything, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "x:4: error: structure 1, node 2: a sequence element depends "
                            "only on the one before it");
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_outputs) {
  CtxrtForest *f = tu_nodes("dag\n0\n1 : 0\n2 : 0\n3 : 1\ndag\n5\n");
  int32_t out[8];
  ck_assert_int_eq(ctxrt_forest_outputs(f, NULL), 3);
  ck_assert_int_eq(ctxrt_forest_outputs(f, out), 3);
  ck_assert(out[0] == 2 && out[1] == 3 && out[2] == 4);
  ctxrt_forest_destroy(f);
  f = tu_ptb("(1 (2 3) (4 5))\n(0 1)\n");
  ck_assert_int_eq(ctxrt_forest_outputs(f, out), 2);
  ck_assert(out[0] == 0 && out[1] == 3);
  ctxrt_forest_destroy(f);
  f = tu_nodes("sequence\n0\n1\n2\nsequence\n0\n");
  ck_assert_int_eq(ctxrt_forest_outputs(f, out), 2);
  ck_assert(out[0] == 2 && out[1] == 3);
  ctxrt_forest_destroy(f);
}
END_TEST

static Suite *validate_suite(void) {
  Suite *s = suite_create("validate");
  TCase *tc = tcase_create("rules");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_valid_inputs);
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_kind);
  tcase_add_test(tc, test_arity);
  tcase_add_test(tc, test_repeated_dependency);
  tcase_add_test(tc, test_tree_shape);
  tcase_add_test(tc, test_dag_cycle);
  tcase_add_test(tc, test_values);
  tcase_add_test(tc, test_word_ids);
  tcase_add_test(tc, test_report_order);
  tcase_add_test(tc, test_long_cycle);
  tcase_add_test(tc, test_hand_edited_forest);
  tcase_add_test(tc, test_outputs);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(validate_suite());
}
