/* test_ctxrt_conllu.c — the CoNLL-U reader: a UD sentence with a multiword
 * token, an empty node and comments, its node order and children, the word
 * columns, every error with its exact message and line (reader and
 * validation: HEAD, cycles, roots, IDs, columns, words), a vocabulary's
 * fallback word (both word readers), files, and a long input. */
#include "ctxrt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ten tab-separated columns: ID FORM LEMMA HEAD, the rest '_'. */
#define W(id, form, lemma, head) id "\t" form "\t" lemma "\t_\t_\t_\t" head "\t_\t_\t_\n"

static const char vocab_text[] = "<unk>\nthe\ndog\nbarks\nloud\nbark\nit\n's\nit's\n";

static CtxrtVocab *vocab(void) {
  CtxrtVocab *v;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_vocab_read_buffer("v", vocab_text, strlen(vocab_text), &v, &err),
                   CTXRT_OK);
  return v;
}

static CtxrtStatus read(const char *text, int column, CtxrtForest **f, CtxrtError *err) {
  CtxrtVocab *v = vocab();
  CtxrtStatus st = ctxrt_read_conllu_buffer("x", text, strlen(text), v, column, f, err);
  ctxrt_vocab_destroy(v);
  return st;
}

static char msg[CTXRT_MSG_SIZE];

/* The reader's message for [text] (with the vocabulary when [with_vocab]). */
static const char *read_err(const char *text, int with_vocab) {
  CtxrtForest *f = (CtxrtForest *)&f;
  CtxrtError err;
  CtxrtStatus st = with_vocab ? read(text, 1, &f, &err)
                              : ctxrt_read_conllu_buffer("x", text, strlen(text), NULL, 1,
                                                         &f, &err);
  ck_assert_msg(st != CTXRT_OK, "expected an error reading: %s", text);
  ck_assert_int_eq(err.status, st);
  ck_assert_ptr_null(f);
  snprintf(msg, sizeof msg, "%s", err.msg);
  return msg;
}

/* Reads [text] (must succeed) and returns validation's message, "" when it
 * passes as childsum's input (trees, at most 8 children, a word everywhere). */
static const char *validate_err(const char *text) {
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_msg(read(text, 1, &f, &err) == CTXRT_OK, "unexpected error: %s", err.msg);
  CtxrtSpec spec = {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){9}};
  ctxrt_error_clear(&err);
  CtxrtStatus st = ctxrt_forest_validate(f, &spec, &err);
  snprintf(msg, sizeof msg, "%s", st == CTXRT_OK ? "" : err.msg);
  ctxrt_forest_destroy(f);
  return msg;
}

static const char sentence[] =
    "# sent_id = 1\n"
    "# text = It's the dog barks\n"
    "1-2\tIt's\t_\t_\t_\t_\t_\t_\t_\t_\n"
    W("1", "it", "it", "4")
    W("2", "'s", "bark", "4")
    W("3", "the", "the", "4")
    W("4", "barks", "bark", "0")
    "4.1\tloud\tloud\t_\t_\t_\t_\t_\t4:advmod\t_\n"
    "\n"
    "# sent_id = 2\n"
    W("1", "dog", "dog", "2")
    W("2", "barks", "bark", "0")
    "\n";

START_TEST(test_sentence) {
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(read(sentence, 1, &f, &err), CTXRT_OK);
  ck_assert_int_eq(f->kind, CTXRT_TREE);
  ck_assert_int_eq(f->num_structs, 2);
  ck_assert_int_eq(f->num_nodes, 6);
  ck_assert_int_eq(f->struct_begin[1], 4);
  ck_assert_int_eq(f->struct_line[0], 3); /* the first line that is not a comment */
  ck_assert_int_eq(f->struct_line[1], 11);
  /* ids are the word IDs; the root (word 4) has words 1, 2, 3 as children */
  const double forms[] = {6, 7, 1, 3, 2, 3};
  for (int32_t n = 0; n < 6; n++) {
    ck_assert_int_eq(f->val_begin[n + 1] - f->val_begin[n], 1);
    ck_assert(f->val[f->val_begin[n]] == forms[n]);
    ck_assert_int_eq(f->val_is_int[n], 1);
  }
  ck_assert_int_eq(f->id[0], 1);
  ck_assert_int_eq(f->id[3], 4);
  ck_assert_int_eq(f->id[4], 1);
  ck_assert_int_eq(f->line[3], 7);
  ck_assert_int_eq(ctxrt_forest_num_deps(f, 3), 3);
  for (int32_t k = 0; k < 3; k++)
    ck_assert_int_eq(f->dep[f->dep_begin[3] + k], k);
  ck_assert_int_eq(ctxrt_forest_num_deps(f, 0), 0);
  ck_assert_int_eq(ctxrt_forest_num_deps(f, 5), 1);
  ck_assert_int_eq(f->dep[f->dep_begin[5]], 4);
  ck_assert_ptr_null(ctxrt_forest_label(f, 0));
  int32_t roots[2];
  ck_assert_int_eq(ctxrt_forest_outputs(f, roots), 2);
  ck_assert_int_eq(roots[0], 3);
  ck_assert_int_eq(roots[1], 5);
  ctxrt_forest_destroy(f);
  ck_assert_str_eq(validate_err(sentence), "");
}
END_TEST

START_TEST(test_columns) {
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(read(sentence, ctxrt_conllu_column("LEMMA"), &f, &err), CTXRT_OK);
  ck_assert(f->val[1] == 5); /* 's -> bark */
  ck_assert(f->val[3] == 5);
  ctxrt_forest_destroy(f);
  ck_assert_int_eq(ctxrt_conllu_column("FORM"), 1);
  ck_assert_int_eq(ctxrt_conllu_column("XPOS"), 4);
  ck_assert_int_eq(ctxrt_conllu_column("HEAD"), -1);
  ck_assert_int_eq(ctxrt_conllu_column("lemma"), -1);
  f = (CtxrtForest *)&f;
  ck_assert_int_eq(ctxrt_read_conllu_buffer("x", "", 0, NULL, 5, &f, &err), CTXRT_ERR_ARG);
  ck_assert_ptr_null(f);
  ck_assert_str_eq(err.msg,
                   "error: CoNLL-U word column 5, expected 1 to 4 (FORM, LEMMA, UPOS, XPOS)");
  /* without a vocabulary the column holds integer word ids */
  const char *ids = W("1", "17", "_", "0");
  ck_assert_int_eq(ctxrt_read_conllu_buffer("x", ids, strlen(ids), NULL, 1, &f, &err),
                   CTXRT_OK);
  ck_assert(f->val[0] == 17);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_blank_lines_and_crlf) {
  /* several blank lines, a comment-only block, CRLF, no final blank line */
  const char *text = "\n\n# newdoc\n\n" W("1", "dog", "_", "0") "   \n\n"
                     "1\tthe\t_\t_\t_\t_\t2\t_\t_\t_\r\n"
                     "2\tdog\t_\t_\t_\t_\t0\t_\t_\t_\r\n";
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(read(text, 1, &f, &err), CTXRT_OK);
  ck_assert_int_eq(f->num_structs, 2);
  ck_assert_int_eq(f->num_nodes, 3);
  ck_assert(f->val[2] == 2);
  ck_assert_int_eq(f->struct_line[1], 8);
  ctxrt_forest_destroy(f);
  /* an empty input reads as no structures, which validation reports */
  ck_assert_int_eq(read("# only a comment\n\n", 1, &f, &err), CTXRT_OK);
  ck_assert_int_eq(f->num_structs, 0);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_syntax_errors) {
  ck_assert_str_eq(read_err("1\tdog\t_\t_\t_\t_\t0\t_\t_\n", 1),
                   "x:1: error: expected 10 tab-separated columns, found 9");
  ck_assert_str_eq(read_err("1 dog _ _ _ _ 0 _ _ _\n", 1),
                   "x:1: error: expected 10 tab-separated columns, found 1");
  ck_assert_str_eq(read_err(W("1", "dog", "_", "0\t_"), 1),
                   "x:1: error: expected 10 tab-separated columns, found more than 10");
  ck_assert_str_eq(read_err("1\tdog\t_\t_\t_\t_\t\t_\t_\t_\n", 1),
                   "x:1: error: column 7 (HEAD) is empty (write '_' for no value)");
  ck_assert_str_eq(read_err(W("a", "dog", "_", "0"), 1),
                   "x:1: error: expected a word id (an integer, N-M or N.M), found 'a'");
  ck_assert_str_eq(read_err(W("+1", "dog", "_", "0"), 1),
                   "x:1: error: expected a word id (an integer, N-M or N.M), found '+1'");
  ck_assert_str_eq(read_err(W("1-", "dog", "_", "0"), 1),
                   "x:1: error: expected a word id (an integer, N-M or N.M), found '1-'");
  ck_assert_str_eq(read_err(W("1", "dog", "_", "_"), 1),
                   "x:1: error: structure 1, node 1: expected a head (0 or a word id), "
                   "found '_'");
  ck_assert_str_eq(read_err(W("1", "dog", "_", "-1"), 1),
                   "x:1: error: structure 1, node 1: expected a head (0 or a word id), "
                   "found '-1'");
  ck_assert_str_eq(read_err(W("1", "dog", "_", "99999999999999999999"), 1),
                   "x:1: error: structure 1, node 1: expected a head (0 or a word id), "
                   "found '99999999999999999999'");
}
END_TEST

START_TEST(test_id_and_head_errors) {
  ck_assert_str_eq(read_err(W("1", "the", "_", "2") W("3", "dog", "_", "0"), 1),
                   "x:2: error: structure 1: expected word id 2, found '3'");
  ck_assert_str_eq(read_err(W("1", "dog", "_", "0") "\n" W("2", "dog", "_", "0"), 1),
                   "x:3: error: structure 2: expected word id 1, found '2'");
  ck_assert_str_eq(read_err(W("0", "dog", "_", "0"), 1),
                   "x:1: error: structure 1: expected word id 1, found '0'");
  ck_assert_str_eq(read_err(W("1", "the", "_", "3") W("2", "dog", "_", "0") "\n", 1),
                   "x:1: error: structure 1, node 1: head 3 outside the sentence (2 words)");
  ck_assert_str_eq(read_err(W("1", "dog", "_", "0") "\n" W("1", "dog", "_", "2"), 1),
                   "x:3: error: structure 2, node 1: head 2 outside the sentence (1 word)");
}
END_TEST

START_TEST(test_word_errors) {
  ck_assert_str_eq(read_err(W("1", "the", "_", "2") W("2", "cat", "_", "0"), 1),
                   "x:2: error: structure 1, node 2: unknown word 'cat'");
  ck_assert_str_eq(read_err(W("1", "dog", "_", "0"), 0),
                   "x:1: error: structure 1, node 1: word 'dog' is not an integer id (no "
                   "vocabulary given)");
  ck_assert_str_eq(read_err(W("1", "99999999999999999999", "_", "0"), 0),
                   "x:1: error: structure 1, node 1: word '99999999999999999999' is not an "
                   "integer id (out of range)");
}
END_TEST

START_TEST(test_shape_errors) {
  /* two roots, no root, cycles, a word heading itself */
  ck_assert_str_eq(validate_err(W("1", "the", "_", "0") W("2", "dog", "_", "0")),
                   "x:2: error: structure 1: several roots, nodes 1 and 2");
  ck_assert_str_eq(validate_err("# c\n" W("1", "the", "_", "2") W("2", "dog", "_", "1")),
                   "x:2: error: structure 1: no root (every node is the child of another)");
  ck_assert_str_eq(validate_err(W("1", "the", "_", "0") W("2", "dog", "_", "3")
                                    W("3", "barks", "_", "2")),
                   "x:3: error: structure 1: cycle through node 3");
  ck_assert_str_eq(validate_err(W("1", "the", "_", "0") W("2", "dog", "_", "2")),
                   "x:2: error: structure 1: cycle through node 2");
  /* more children than childsum's maximum */
  char text[2048] = W("1", "dog", "_", "0");
  for (int w = 2; w <= 10; w++) {
    char line[64];
    snprintf(line, sizeof line, "%d\tthe\t_\t_\t_\t_\t1\t_\t_\t_\n", w);
    strcat(text, line);
  }
  ck_assert_str_eq(validate_err(text),
                   "x:1: error: structure 1, node 1: 9 children, more than the maximum 8");
  /* a word id past the model's vocabulary */
  CtxrtForest *f;
  CtxrtError err;
  ck_assert_int_eq(read(W("1", "it's", "_", "0"), 1, &f, &err), CTXRT_OK);
  CtxrtSpec spec = {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){8}};
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg,
                   "x:1: error: structure 1, node 1: value 1 is word id 8, outside [0, 8)");
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_fallback) {
  /* unknown words take the fallback's id, in CoNLL-U and bracketed trees */
  CtxrtVocab *v = vocab();
  CtxrtError err;
  ck_assert_int_eq(ctxrt_vocab_set_fallback(v, "cow", 3, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "error: the fallback word 'cow' is not in the vocabulary");
  ck_assert_int_eq(ctxrt_vocab_word_id(v, "cat", 3), -1);
  ck_assert_int_eq(ctxrt_vocab_set_fallback(v, "<unk>", 5, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_vocab_word_id(v, "cat", 3), 0);
  ck_assert_int_eq(ctxrt_vocab_word_id(v, "dog", 3), 2);
  ck_assert_int_eq(ctxrt_vocab_lookup(v, "cat", 3), -1); /* lookup itself is unchanged */
  const char *text = W("1", "the", "_", "2") W("2", "cat", "_", "0");
  CtxrtForest *f;
  ck_assert_int_eq(ctxrt_read_conllu_buffer("x", text, strlen(text), v, 1, &f, &err),
                   CTXRT_OK);
  ck_assert(f->val[0] == 1 && f->val[1] == 0);
  ctxrt_forest_destroy(f);
  ck_assert_int_eq(ctxrt_read_ptb_buffer("x", "(1 (2 cat) (3 dog))", 19, v, &f, &err),
                   CTXRT_OK);
  ck_assert(f->val[0] == 0 && f->val[1] == 2);
  ctxrt_forest_destroy(f);
  ctxrt_vocab_destroy(v);
}
END_TEST

START_TEST(test_files) {
  CtxrtForest *f;
  CtxrtError err;
  const char *path = tu_write("s.conllu", sentence, (size_t)-1);
  CtxrtVocab *v = vocab();
  ck_assert_int_eq(ctxrt_read_conllu_file(path, v, 1, &f, &err), CTXRT_OK);
  ck_assert_int_eq(f->num_nodes, 6);
  ck_assert_str_eq(f->name, path);
  ctxrt_forest_destroy(f);
  ck_assert_int_eq(ctxrt_read_conllu_file(tu_path("missing.conllu"), v, 1, &f, &err),
                   CTXRT_ERR_IO);
  ck_assert_ptr_null(f);
  ctxrt_vocab_destroy(v);
}
END_TEST

START_TEST(test_long_sentence_and_many) {
  /* a 100,000-word chain (each word heads the next: depth 100,000) */
  enum { N = 100000 };
  char *text = malloc((size_t)N * 40 + 16);
  size_t len = 0;
  for (int w = 1; w <= N; w++)
    len += (size_t)sprintf(text + len, "%d\tdog\t_\t_\t_\t_\t%d\t_\t_\t_\n", w,
                           w == 1 ? 0 : w - 1);
  CtxrtForest *f;
  CtxrtError err;
  CtxrtVocab *v = vocab();
  ck_assert_int_eq(ctxrt_read_conllu_buffer("x", text, len, v, 1, &f, &err), CTXRT_OK);
  CtxrtSpec spec = {CTXRT_TREE, 8, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){9}};
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ck_assert_int_eq(f->num_nodes, N);
  ctxrt_forest_destroy(f);
  free(text);
  char *many = tu_repeat(W("1", "the", "_", "2") W("2", "dog", "_", "0") "\n", 100000);
  ck_assert_int_eq(ctxrt_read_conllu_buffer("x", many, strlen(many), v, 1, &f, &err),
                   CTXRT_OK);
  ck_assert_int_eq(f->num_structs, 100000);
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_OK);
  ctxrt_forest_destroy(f);
  free(many);
  ctxrt_vocab_destroy(v);
}
END_TEST

static Suite *conllu_suite(void) {
  Suite *s = suite_create("conllu");
  TCase *tc = tcase_create("reader");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_sentence);
  tcase_add_test(tc, test_columns);
  tcase_add_test(tc, test_blank_lines_and_crlf);
  tcase_add_test(tc, test_syntax_errors);
  tcase_add_test(tc, test_id_and_head_errors);
  tcase_add_test(tc, test_word_errors);
  tcase_add_test(tc, test_shape_errors);
  tcase_add_test(tc, test_fallback);
  tcase_add_test(tc, test_files);
  tcase_add_test(tc, test_long_sentence_and_many);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(conllu_suite());
}
