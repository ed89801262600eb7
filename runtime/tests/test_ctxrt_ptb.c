/* test_ctxrt_ptb.c — the bracketed-tree reader and vocabularies: good inputs and
 * their node order, every error with its exact message and line, a 100,000-deep
 * tree, and reading from files. */
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

START_TEST(test_sst_example) {
  CtxrtForest *f = tu_ptb("(3 (2 17) (4 (2 5) (3 901)))\n");
  ck_assert_int_eq(f->kind, CTXRT_TREE);
  ck_assert_int_eq(f->num_structs, 1);
  ck_assert_int_eq(f->num_nodes, 5);
  ck_assert_str_eq(f->name, "x");
  /* pre-order: 0 root, 1 leaf 17, 2 internal, 3 leaf 5, 4 leaf 901 */
  check_deps(f, 0, 2, (const int32_t[]){1, 2});
  check_deps(f, 1, 0, NULL);
  check_deps(f, 2, 2, (const int32_t[]){3, 4});
  check_deps(f, 3, 0, NULL);
  const char *labels[] = {"3", "2", "4", "2", "3"};
  const double words[] = {0, 17, 0, 5, 901};
  for (int32_t n = 0; n < 5; n++) {
    ck_assert_int_eq(f->id[n], n);
    ck_assert_int_eq(f->line[n], 1);
    ck_assert_str_eq(ctxrt_forest_label(f, n), labels[n]);
    int leaf = ctxrt_forest_num_deps(f, n) == 0;
    ck_assert_int_eq(f->val_begin[n + 1] - f->val_begin[n], leaf);
    if (leaf) {
      ck_assert(f->val[f->val_begin[n]] == words[n]);
      ck_assert_int_eq(f->val_is_int[f->val_begin[n]], 1);
    }
  }
  ck_assert_int_eq(f->struct_begin[0], 0);
  ck_assert_int_eq(f->struct_begin[1], 5);
  ck_assert_int_eq(f->struct_line[0], 1);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_several_trees_blank_and_comments) {
  CtxrtForest *f =
      tu_ptb("# comment\n\n  (1 (2 3) (4 5))\r\n   \n\t(0 7)\n(a (b (c 9)))");
  ck_assert_int_eq(f->num_structs, 3);
  ck_assert_int_eq(f->num_nodes, 7);
  ck_assert_int_eq(f->struct_begin[1], 3);
  ck_assert_int_eq(f->struct_begin[2], 4);
  ck_assert_int_eq(f->struct_line[0], 3);
  ck_assert_int_eq(f->struct_line[1], 5);
  ck_assert_int_eq(f->struct_line[2], 6);
  /* ids restart per tree; dependencies are global indices */
  ck_assert_int_eq(f->id[4], 0);
  ck_assert_int_eq(f->id[6], 2);
  check_deps(f, 4, 1, (const int32_t[]){5});
  check_deps(f, 5, 1, (const int32_t[]){6});
  ck_assert(f->val[f->val_begin[6]] == 9);
  ck_assert_str_eq(ctxrt_forest_label(f, 5), "b");
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_empty_input) {
  CtxrtForest *f = tu_ptb("# nothing here\n\n");
  ck_assert_int_eq(f->num_structs, 0);
  ck_assert_int_eq(f->num_nodes, 0);
  ck_assert_int_eq(f->struct_begin[0], 0);
  ctxrt_forest_destroy(f);
  f = tu_ptb("");
  ck_assert_int_eq(f->num_structs, 0);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_syntax_errors) {
  ck_assert_str_eq(tu_ptb_err("foo"), "x:1: error: expected '(', found 'foo'");
  ck_assert_str_eq(tu_ptb_err(")"), "x:1: error: expected '(', found ')'");
  ck_assert_str_eq(tu_ptb_err("("), "x:1: error: expected a label, found end of line");
  ck_assert_str_eq(tu_ptb_err("()"), "x:1: error: expected a label, found ')'");
  ck_assert_str_eq(tu_ptb_err("(("), "x:1: error: expected a label, found '('");
  ck_assert_str_eq(tu_ptb_err("(1)"), "x:1: error: expected a word or '(', found ')'");
  ck_assert_str_eq(tu_ptb_err("(1"),
                   "x:1: error: expected a word or '(', found end of line");
  ck_assert_str_eq(tu_ptb_err("(1 2 3)"), "x:1: error: expected ')', found '3'");
  ck_assert_str_eq(tu_ptb_err("(1 2 (3 4))"), "x:1: error: expected ')', found '('");
  ck_assert_str_eq(tu_ptb_err("(1 (2 3) foo)"),
                   "x:1: error: expected '(' or ')', found 'foo'");
  ck_assert_str_eq(tu_ptb_err("(1 (2 3)"),
                   "x:1: error: expected '(' or ')', found end of line");
  ck_assert_str_eq(tu_ptb_err("(1 2) (3 4)"),
                   "x:1: error: expected end of line after the tree, found '('");
  ck_assert_str_eq(tu_ptb_err("(1 2))"),
                   "x:1: error: expected end of line after the tree, found ')'");
  /* one tree per line: a tree may not continue on the next line */
  ck_assert_str_eq(tu_ptb_err("(1\n  (2 3))"),
                   "x:1: error: expected a word or '(', found end of line");
  /* the line number counts blank and comment lines */
  ck_assert_str_eq(tu_ptb_err("(1 2)\n\n# c\n(1 2 (3)\n"),
                   "x:4: error: expected ')', found '('");
}
END_TEST

START_TEST(test_word_errors) {
  ck_assert_str_eq(tu_ptb_err("(1 (2 3) (2 abc))"),
                   "x:1: error: structure 1, node 2: word 'abc' is not an integer id (no "
                   "vocabulary given)");
  ck_assert_str_eq(
      tu_ptb_err("(1 2)\n(1 99999999999999999999)"),
      "x:2: error: structure 2, node 0: word id '99999999999999999999' out of "
      "range");
  /* control characters are shown as '?', long tokens are cut */
  ck_assert_str_eq(tu_ptb_err("(1 a\001b)"),
                   "x:1: error: structure 1, node 0: word 'a?b' is not an integer id (no "
                   "vocabulary given)");
  char *word = tu_repeat("w", 100);
  char text[200];
  snprintf(text, sizeof text, "(1 %s)", word);
  ck_assert_str_eq(
      tu_ptb_err(text),
      "x:1: error: structure 1, node 0: word "
      "'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww...' is not an integer id "
      "(no vocabulary given)");
  free(word);
}
END_TEST

START_TEST(test_negative_word_reads) {
  /* a negative id is well-formed; validation rejects it against V */
  CtxrtForest *f = tu_ptb("(1 -4)");
  ck_assert(f->val[0] == -4);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_vocab) {
  const char *text = "the\ncat\r\nsat\n-LRB-";
  CtxrtVocab *v;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_vocab_read_buffer("v", text, strlen(text), &v, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_vocab_size(v), 4);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "the", 3), 0);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "cat", 3), 1);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "sat", 3), 2);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "-LRB-", 5), 3);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "dog", 3), -1);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "th", 2), -1);
  ck_assert_str_eq(ctxrt_vocab_word(v, 1), "cat");
  ck_assert_ptr_null(ctxrt_vocab_word(v, 4));
  CtxrtForest *f;
  const char *trees = "(1 (2 the) (3 (2 cat) (2 -LRB-)))\n(0 sat)";
  ck_assert_int_eq(ctxrt_read_ptb_buffer("t", trees, strlen(trees), v, &f, &err),
                   CTXRT_OK);
  ck_assert_int_eq(f->num_nodes, 6);
  ck_assert(f->val[0] == 0 && f->val[1] == 1 && f->val[2] == 3 && f->val[3] == 2);
  ctxrt_forest_destroy(f);
  const char *bad = "(1 (2 the) (3 cat))\n(1 (2 the) (3 dog))";
  f = (CtxrtForest *)&f;
  ck_assert_int_eq(ctxrt_read_ptb_buffer("t", bad, strlen(bad), v, &f, &err),
                   CTXRT_ERR_INVALID);
  ck_assert_ptr_null(f);
  ck_assert_str_eq(err.msg, "t:2: error: structure 2, node 2: unknown word 'dog'");
  ck_assert_int_eq(err.line, 2);
  /* with a vocabulary, numbers are words too */
  ck_assert_int_eq(ctxrt_read_ptb_buffer("t", "(1 7)", 5, v, &f, &err),
                   CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "t:1: error: structure 1, node 0: unknown word '7'");
  ctxrt_vocab_destroy(v);
}
END_TEST

static const char *vocab_err(const char *text) {
  static char msg[CTXRT_MSG_SIZE];
  CtxrtVocab *v = (CtxrtVocab *)&v;
  CtxrtError err;
  ck_assert_int_ne(ctxrt_vocab_read_buffer("v", text, strlen(text), &v, &err), CTXRT_OK);
  ck_assert_ptr_null(v);
  strcpy(msg, err.msg);
  return msg;
}

START_TEST(test_vocab_errors) {
  ck_assert_str_eq(vocab_err("a\nb\na\n"),
                   "v:3: error: duplicate word 'a', first on line 1");
  ck_assert_str_eq(vocab_err("a\nb\nc\nb\na\nb\n"),
                   "v:4: error: duplicate word 'b', first on line 2");
  ck_assert_str_eq(
      vocab_err("a\nb c\n"),
      "v:2: error: word 'b c' contains whitespace, a parenthesis or a NUL byte");
  ck_assert_str_eq(
      vocab_err("(\n"),
      "v:1: error: word '(' contains whitespace, a parenthesis or a NUL byte");
  CtxrtVocab *v;
  CtxrtError err;
  /* blanks around a word are dropped; an empty line keeps its id */
  const char *text = "  a\t\n\n \nb \r\n\n";
  ck_assert_int_eq(ctxrt_vocab_read_buffer("v", text, strlen(text), &v, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_vocab_size(v), 5);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "a", 1), 0);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "b", 1), 3);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "", 0), -1);
  ck_assert_str_eq(ctxrt_vocab_word(v, 1), "");
  ctxrt_vocab_destroy(v);
  ck_assert_int_eq(ctxrt_vocab_read_buffer("v", "", 0, &v, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_vocab_size(v), 0);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "a", 1), -1);
  ctxrt_vocab_destroy(v);
}
END_TEST

START_TEST(test_files) {
  const char *vpath = tu_write("words.txt", "good\nbad\n", (size_t)-1);
  const char *tpath = tu_write("trees.txt", "(4 (3 good) (0 bad))\n", (size_t)-1);
  CtxrtVocab *v;
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_vocab_read_file(vpath, &v, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_read_ptb_file(tpath, v, &f, &err), CTXRT_OK);
  ck_assert_str_eq(f->name, tpath);
  ck_assert(f->val[0] == 0 && f->val[1] == 1);
  ctxrt_forest_destroy(f);
  ctxrt_vocab_destroy(v);
  const char *missing = tu_path("missing.txt");
  char want[600];
  snprintf(want, sizeof want, "%s: error: cannot open: no such file or directory",
           missing);
  ck_assert_int_eq(ctxrt_read_ptb_file(missing, NULL, &f, &err), CTXRT_ERR_IO);
  ck_assert_str_eq(err.msg, want);
  ck_assert_int_eq(ctxrt_vocab_read_file(missing, &v, &err), CTXRT_ERR_IO);
  ck_assert_str_eq(err.msg, want);
  const char *bad = tu_write("bad.txt", "(1 2)\n(1 x)\n", (size_t)-1);
  ck_assert_int_eq(ctxrt_read_ptb_file(bad, NULL, &f, &err), CTXRT_ERR_SYNTAX);
  snprintf(
      want, sizeof want,
      "%s:2: error: structure 2, node 0: word 'x' is not an integer id (no vocabulary "
      "given)",
      bad);
  ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(test_deep_chain) {
  enum { DEPTH = 100000 };
  char *open = tu_repeat("(0 ", DEPTH), *close = tu_repeat(")", DEPTH);
  size_t n = strlen(open) + strlen(close) + 16;
  char *text = malloc(n);
  snprintf(text, n, "%s(1 7)%s\n", open, close);
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_ptb_buffer("deep", text, strlen(text), NULL, &f, &err),
                   CTXRT_OK);
  ck_assert_int_eq(f->num_nodes, DEPTH + 1);
  for (int32_t i = 0; i < DEPTH; i++) {
    ck_assert_int_eq(ctxrt_forest_num_deps(f, i), 1);
    ck_assert_int_eq(f->dep[f->dep_begin[i]], i + 1);
  }
  ck_assert(f->val[0] == 7);
  ck_assert_int_eq(f->val_begin[f->num_nodes], 1);
  CtxrtSpec spec = {CTXRT_TREE, 2, 0, 1, CTXRT_VALUES_LEAVES, (const int64_t[]){10}};
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ctxrt_forest_destroy(f);
  /* the same depth left unclosed is a clean error */
  text[strlen(open) + 5] = '\0';
  ck_assert_int_eq(ctxrt_read_ptb_buffer("deep", text, strlen(text), NULL, &f, &err),
                   CTXRT_ERR_SYNTAX);
  ck_assert_str_eq(err.msg, "deep:1: error: expected '(' or ')', found end of line");
  free(text);
  free(open);
  free(close);
}
END_TEST

START_TEST(test_large_input) {
  /* ~12 MB of trees: linear time, memory bounded by the input */
  char *text = tu_repeat("(2 (1 (0 11) (0 22)) (1 (0 33) (3 (0 44) (0 55))))\n", 240000);
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_read_ptb_buffer("big", text, strlen(text), NULL, &f, &err),
                   CTXRT_OK);
  ck_assert_int_eq(f->num_structs, 240000);
  ck_assert_int_eq(f->num_nodes, 240000 * 9);
  CtxrtSpec spec = {CTXRT_TREE, 2, 2, 1, CTXRT_VALUES_LEAVES, (const int64_t[]){56}};
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ctxrt_forest_destroy(f);
  free(text);
}
END_TEST

static Suite *ptb_suite(void) {
  Suite *s = suite_create("ptb");
  TCase *tc = tcase_create("reader");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_sst_example);
  tcase_add_test(tc, test_several_trees_blank_and_comments);
  tcase_add_test(tc, test_empty_input);
  tcase_add_test(tc, test_syntax_errors);
  tcase_add_test(tc, test_word_errors);
  tcase_add_test(tc, test_negative_word_reads);
  tcase_add_test(tc, test_vocab);
  tcase_add_test(tc, test_vocab_errors);
  tcase_add_test(tc, test_files);
  tcase_add_test(tc, test_deep_chain);
  tcase_add_test(tc, test_large_input);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(ptb_suite());
}
