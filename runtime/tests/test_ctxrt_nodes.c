/* test_ctxrt_nodes.c — the node-list reader: the examples of docs/formats.md,
 * node order and forward references, value flags, every reader error with its
 * exact message and line, a 100,000-node chain, files. */
#include "ctxrt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_deps(const CtxrtForest *f, int32_t node, int32_t count,
                       const int32_t *want) {
  ck_assert_int_eq(ctxrt_forest_num_deps(f, node), count);
  for (int32_t k = 0; k < count; k++)
    ck_assert_int_eq(f->dep[f->dep_begin[node] + k], want[k]);
}

static int32_t num_vals(const CtxrtForest *f, int32_t node) {
  return f->val_begin[node + 1] - f->val_begin[node];
}

START_TEST(test_tree_example) {
  CtxrtForest *f = tu_nodes("# a tree with a word on every node (childsum style)\n"
                            "tree\n"
                            "0 17 : 1 2 3\n"
                            "1 5\n"
                            "2 901 : 4\n"
                            "3 6\n"
                            "4 7\n");
  ck_assert_int_eq(f->kind, CTXRT_TREE);
  ck_assert_int_eq(f->num_structs, 1);
  ck_assert_int_eq(f->struct_line[0], 2);
  ck_assert_int_eq(f->num_nodes, 5);
  ck_assert_ptr_null(f->label);
  ck_assert_ptr_null(ctxrt_forest_label(f, 0));
  check_deps(f, 0, 3, (const int32_t[]){1, 2, 3});
  check_deps(f, 2, 1, (const int32_t[]){4});
  const double words[] = {17, 5, 901, 6, 7};
  for (int32_t n = 0; n < 5; n++) {
    ck_assert_int_eq(f->id[n], n);
    ck_assert_int_eq(f->line[n], n + 3);
    ck_assert_int_eq(num_vals(f, n), 1);
    ck_assert(f->val[f->val_begin[n]] == words[n]);
    ck_assert_int_eq(f->val_is_int[f->val_begin[n]], 1);
  }
  CtxrtSpec spec = {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){1000}};
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_dag_example) {
  CtxrtForest *f = tu_nodes("# a 2x2 grid DAG with a 3-float feature vector per node\n"
                            "dag\n"
                            "0 0.1 0.2 0.3\n"
                            "1 0.4 0.5 0.6 : 0\n"
                            "2 0.7 0.8 0.9 : 0\n"
                            "3 1.0 1.1 1.2 : 1 2\n");
  ck_assert_int_eq(f->kind, CTXRT_DAG);
  check_deps(f, 0, 0, NULL);
  check_deps(f, 1, 1, (const int32_t[]){0});
  check_deps(f, 3, 2, (const int32_t[]){1, 2});
  ck_assert_int_eq(f->val_begin[4], 12);
  ck_assert(f->val[0] == 0.1 && f->val[11] == 1.2 && f->val[9] == 1.0);
  for (int i = 0; i < 12; i++)
    ck_assert_int_eq(f->val_is_int[i], 0);
  CtxrtSpec spec = {CTXRT_DAG, 2, 0, 3, CTXRT_VALUES_ALL, NULL};
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_sequence_example) {
  CtxrtForest *f =
      tu_nodes("# a sequence of four word ids\nsequence\n0 3\n1 14\n2 15\n3 92\n"
               "sequence\n7 1\n5 2\n");
  ck_assert_int_eq(f->kind, CTXRT_SEQUENCE);
  ck_assert_int_eq(f->num_structs, 2);
  check_deps(f, 0, 0, NULL);
  check_deps(f, 1, 1, (const int32_t[]){0});
  check_deps(f, 3, 1, (const int32_t[]){2});
  /* listing order, not id order, makes the sequence */
  check_deps(f, 4, 0, NULL);
  check_deps(f, 5, 1, (const int32_t[]){4});
  ck_assert_int_eq(f->id[4], 7);
  ck_assert_int_eq(f->id[5], 5);
  CtxrtSpec spec = {CTXRT_SEQUENCE, 0, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){100}};
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_order_and_forward_refs) {
  /* ids neither dense nor in order; dependencies name later nodes; the colon
   * needs no spaces; comments after nodes */
  CtxrtForest *f = tu_nodes("tree\n"
                            "40:30 10   # the root\n"
                            "10 1\n"
                            "30 2:20\n"
                            "20 3 # leaf\n"
                            "\n"
                            "tree\n"
                            "40 9\n");
  ck_assert_int_eq(f->num_structs, 2);
  ck_assert_int_eq(f->num_nodes, 5);
  ck_assert_int_eq(f->id[0], 40);
  ck_assert_int_eq(f->id[2], 30);
  check_deps(f, 0, 2, (const int32_t[]){2, 1});
  check_deps(f, 2, 1, (const int32_t[]){3});
  ck_assert_int_eq(num_vals(f, 0), 0);
  ck_assert_int_eq(num_vals(f, 2), 1);
  ck_assert_int_eq(f->struct_begin[1], 4);
  ck_assert_int_eq(f->struct_line[1], 7);
  ck_assert_int_eq(f->line[4], 8);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_value_forms) {
  CtxrtForest *f = tu_nodes("dag\n0 3 -2 +4 1.5 1e3 .5 5. -0.25E-2 007\n");
  static const double want[] = {3, -2, 4, 1.5, 1000, 0.5, 5, -0.0025, 7};
  static const unsigned char is_int[] = {1, 1, 1, 0, 0, 0, 0, 0, 1};
  ck_assert_int_eq(num_vals(f, 0), 9);
  for (int i = 0; i < 9; i++) {
    ck_assert(f->val[i] == want[i]);
    ck_assert_int_eq(f->val_is_int[i], is_int[i]);
  }
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_empty_input) {
  CtxrtForest *f = tu_nodes("# only a comment\n\n   \n");
  ck_assert_int_eq(f->num_structs, 0);
  ck_assert_int_eq(f->kind, CTXRT_KIND_ANY);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_syntax_errors) {
  ck_assert_str_eq(
      tu_nodes_err("0 1\n"),
      "x:1: error: expected 'tree', 'dag' or 'sequence' before the first node");
  ck_assert_str_eq(tu_nodes_err("# c\nforest\n"),
                   "x:2: error: expected 'tree', 'dag' or 'sequence', found 'forest'");
  ck_assert_str_eq(tu_nodes_err("tree 5\n"), "x:1: error: unexpected '5' after 'tree'");
  ck_assert_str_eq(tu_nodes_err("dag:\n"), "x:1: error: unexpected ':' after 'dag'");
  ck_assert_str_eq(tu_nodes_err("tree\nx 1\n"),
                   "x:2: error: expected a node id (a non-negative integer), found 'x'");
  ck_assert_str_eq(tu_nodes_err("tree\n-1\n"),
                   "x:2: error: expected a node id (a non-negative integer), found '-1'");
  ck_assert_str_eq(tu_nodes_err("tree\n: 1\n"),
                   "x:2: error: expected a node id (a non-negative integer), found ':'");
  ck_assert_str_eq(tu_nodes_err("tree\n99999999999999999999\n"),
                   "x:2: error: node id '99999999999999999999' out of range");
  ck_assert_str_eq(tu_nodes_err("tree\n0 abc\n"),
                   "x:2: error: expected a number, found 'abc'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 nan\n"),
                   "x:2: error: expected a number, found 'nan'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 inf\n"),
                   "x:2: error: expected a number, found 'inf'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 0x10\n"),
                   "x:2: error: expected a number, found '0x10'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 1.\n1 .\n"),
                   "x:3: error: expected a number, found '.'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 1e\n"),
                   "x:2: error: expected a number, found '1e'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 1e999\n"),
                   "x:2: error: number '1e999' out of range");
  ck_assert_str_eq(tu_nodes_err("tree\n0 : x\n"),
                   "x:2: error: expected a dependency id, found 'x'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 : -1\n"),
                   "x:2: error: expected a dependency id, found '-1'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 : 1 : 2\n"),
                   "x:2: error: expected a dependency id, found ':'");
  ck_assert_str_eq(tu_nodes_err("tree\n0 : 99999999999999999999\n"),
                   "x:2: error: dependency id '99999999999999999999' out of range");
}
END_TEST

START_TEST(test_structure_errors) {
  ck_assert_str_eq(
      tu_nodes_err("tree\n0 : 1\n1\n1\n"),
      "x:4: error: structure 1, node 1: duplicate id, first listed on line 3");
  /* the earliest line that repeats an id is named */
  ck_assert_str_eq(
      tu_nodes_err("sequence\n5\n3\n7\n5\n3\n5\n"),
      "x:5: error: structure 1, node 5: duplicate id, first listed on line 2");
  /* ids are checked when the structure ends, so a later malformed line in the same
   * structure is reported first */
  ck_assert_str_eq(tu_nodes_err("dag\n1\n1\n2 x\n"),
                   "x:4: error: expected a number, found 'x'");
  ck_assert_str_eq(
      tu_nodes_err("dag\n1\n1\ndag\n2 x\n"),
      "x:3: error: structure 1, node 1: duplicate id, first listed on line 2");
  ck_assert_str_eq(tu_nodes_err("tree\n0\ntree\n0 : 5\n1\n"),
                   "x:4: error: structure 2, node 0: unknown dependency 5");
  /* an unknown dependency is found when its structure ends, at the line naming it */
  ck_assert_str_eq(tu_nodes_err("dag\n0\n1 : 0 7\n2 : 1\n"),
                   "x:3: error: structure 1, node 1: unknown dependency 7");
  /* ids of another structure do not count */
  ck_assert_str_eq(tu_nodes_err("dag\n0\n1 : 0\ndag\n2 : 1\n"),
                   "x:5: error: structure 2, node 2: unknown dependency 1");
  ck_assert_str_eq(tu_nodes_err("tree\n0\n\ndag\n0\n"),
                   "x:4: error: structure 2 is a 'dag', but structure 1 is a 'tree'");
  ck_assert_str_eq(
      tu_nodes_err("sequence\n0 1\n1 2 : 0\n"),
      "x:3: error: structure 1, node 1: a sequence lists no dependencies (each "
      "element depends on the one before it)");
}
END_TEST

START_TEST(test_error_status_and_line) {
  CtxrtForest *f;
  CtxrtError err;
  const char *text = "tree\n0\n0\n";
  ck_assert_int_eq(ctxrt_read_nodes_buffer("in", text, strlen(text), &f, &err),
                   CTXRT_ERR_INVALID);
  ck_assert_int_eq(err.line, 3);
  text = "tree\n0 x\n";
  ck_assert_int_eq(ctxrt_read_nodes_buffer("in", text, strlen(text), &f, &err),
                   CTXRT_ERR_SYNTAX);
  ck_assert_int_eq(err.line, 2);
  /* a NULL error struct is allowed */
  ck_assert_int_eq(ctxrt_read_nodes_buffer("in", text, strlen(text), &f, NULL),
                   CTXRT_ERR_SYNTAX);
  ck_assert_ptr_null(f);
}
END_TEST

START_TEST(test_unterminated_buffer) {
  /* the buffer is not NUL-terminated: the reader must stop at len */
  char text[] = {'t', 'r', 'e', 'e', '\n', '0', ' ', '7', '1'};
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_nodes_buffer("in", text, 8, &f, &err), CTXRT_OK);
  ck_assert(f->val[0] == 7);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_long_chain) {
  enum { N = 100000 };
  size_t cap = (size_t)N * 24 + 16, at = 0;
  char *text = malloc(cap);
  at += (size_t)snprintf(text, cap, "tree\n");
  /* listed leaf first, so every dependency is a forward or backward reference */
  for (int i = N - 1; i >= 0; i--)
    at += (size_t)(i == N - 1 ? snprintf(text + at, cap - at, "%d 1\n", i)
                              : snprintf(text + at, cap - at, "%d 2 : %d\n", i, i + 1));
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_nodes_buffer("chain", text, at, &f, &err), CTXRT_OK);
  ck_assert_int_eq(f->num_nodes, N);
  for (int32_t n = 1; n < N; n++)
    check_deps(f, n, 1, (const int32_t[]){n - 1});
  CtxrtSpec spec = {CTXRT_TREE, 1, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){3}};
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ctxrt_forest_destroy(f);
  free(text);
}
END_TEST

START_TEST(test_files) {
  const char *path = tu_write("in.nodes", "dag\n0 1.5\n1 2.5 : 0\n", (size_t)-1);
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_nodes_file(path, &f, &err), CTXRT_OK);
  ck_assert_str_eq(f->name, path);
  ck_assert_int_eq(f->num_nodes, 2);
  ctxrt_forest_destroy(f);
  path = tu_write("bad.nodes", "dag\n0 1.5\n1 2.5 : 3\n", (size_t)-1);
  ck_assert_int_eq(ctxrt_read_nodes_file(path, &f, &err), CTXRT_ERR_INVALID);
  char want[600];
  snprintf(want, sizeof want, "%s:3: error: structure 1, node 1: unknown dependency 3",
           path);
  ck_assert_str_eq(err.msg, want);
  ck_assert_int_eq(ctxrt_read_nodes_file(tu_path("nope"), &f, &err), CTXRT_ERR_IO);
}
END_TEST

static Suite *nodes_suite(void) {
  Suite *s = suite_create("nodes");
  TCase *tc = tcase_create("reader");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_tree_example);
  tcase_add_test(tc, test_dag_example);
  tcase_add_test(tc, test_sequence_example);
  tcase_add_test(tc, test_order_and_forward_refs);
  tcase_add_test(tc, test_value_forms);
  tcase_add_test(tc, test_empty_input);
  tcase_add_test(tc, test_syntax_errors);
  tcase_add_test(tc, test_structure_errors);
  tcase_add_test(tc, test_error_status_and_line);
  tcase_add_test(tc, test_unterminated_buffer);
  tcase_add_test(tc, test_long_chain);
  tcase_add_test(tc, test_files);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(nodes_suite());
}
