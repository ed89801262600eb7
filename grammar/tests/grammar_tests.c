/* grammar_tests.c — unit tests of the lexer and parser entry points. */
#include "grammar/grammar.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  CtxSources srcs;
  CtxDiag diag;
  CtxArena *arena;
  char *err;
  size_t errlen;
  FILE *errf;
  AstFile *file;
} Parsed;

static void parse(Parsed *p, const char *text, size_t len) {
  memset(p, 0, sizeof *p);
  ctx_sources_init(&p->srcs);
  p->errf = open_memstream(&p->err, &p->errlen);
  ctx_diag_init(&p->diag, &p->srcs, p->errf);
  p->arena = ctx_arena_new();
  int id = ctx_sources_add(&p->srcs, "t.ctx", text, len);
  p->file = ast_parse(p->arena, &p->diag, id);
  fflush(p->errf);
}

static void done(Parsed *p) {
  fclose(p->errf);
  free(p->err);
  ctx_arena_free(p->arena);
  ctx_sources_free(&p->srcs);
}

static char *print(const AstFile *f) {
  CtxBuf b;
  ctx_buf_init(&b);
  ast_print(&b, f);
  return b.data ? b.data : calloc(1, 1);
}

START_TEST(keyword_table) {
  int n;
  const AstWord *w = ast_words(&n);
  ck_assert_int_gt(n, 20);
  const AstWord *m = ast_word_lookup("model", 5);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_ne(m->token, 0);
  ck_assert_int_eq(ast_word_lookup("sigmoid", 7)->cls, KW_BUILTIN);
  ck_assert_ptr_null(ast_word_lookup("sigmoi", 6));
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) ck_assert_str_ne(w[i].spelling, w[j].spelling);
}
END_TEST

START_TEST(parse_minimal) {
  Parsed p;
  const char *src = "model m\ndim H = 4\nparam W: f32[H, 2 * H]\n";
  parse(&p, src, strlen(src));
  ck_assert_int_eq(p.diag.errors, 0);
  ck_assert_int_eq(p.file->nitems, 3);
  ck_assert_int_eq(p.file->items[2]->type->ndims, 2);
  char *out = print(p.file);
  ck_assert_str_eq(out, "model m\n\ndim H = 4\n\nparam W: f32[H, 2 * H]\n");
  free(out);
  done(&p);
}
END_TEST

START_TEST(newline_rules) {
  Parsed p;
  const char *src = "dim A = 1 +\n  2\ndim B = 3\n  * 4\ndim C = (5,\n 6)\n";
  parse(&p, src, strlen(src));
  ck_assert_int_eq(p.diag.errors, 0);
  ck_assert_int_eq(p.file->nitems, 3);
  done(&p);
}
END_TEST

START_TEST(reduce_binds_products) {
  Parsed p;
  const char *src = "dim A = sum(k) a * b + c\ndim B = x * (sum(k) y) * z\n";
  parse(&p, src, strlen(src));
  ck_assert_int_eq(p.diag.errors, 0);
  AstExpr *a = p.file->items[0]->value;
  ck_assert_int_eq(a->kind, AST_BINARY);
  ck_assert_int_eq(a->u.binary.op, AST_OP_ADD);
  ck_assert_int_eq(a->u.binary.lhs->kind, AST_REDUCE);
  char *out = print(p.file);
  ck_assert_str_eq(out, "dim A = sum(k) a * b + c\ndim B = x * (sum(k) y) * z\n");
  free(out);
  done(&p);
}
END_TEST

START_TEST(nul_and_bad_utf8) {
  Parsed p;
  const char src[] = "model m\x00\ndim \xff = 3\n";
  parse(&p, src, sizeof src - 1);
  ck_assert_int_ge(p.diag.errors, 2);
  ck_assert_ptr_nonnull(strstr(p.err, "t.ctx:1:8: error: NUL byte in source"));
  ck_assert_ptr_nonnull(strstr(p.err, "t.ctx:2:5: error: invalid UTF-8 byte 0xff"));
  done(&p);
}
END_TEST

START_TEST(deep_nesting_bounded) {
  size_t n = 10000;
  char *src = malloc(2 * n + 16);
  strcpy(src, "dim A = ");
  size_t k = strlen(src);
  for (size_t i = 0; i < n; i++) src[k++] = '(';
  src[k++] = '1';
  for (size_t i = 0; i < n; i++) src[k++] = ')';
  src[k] = 0;
  Parsed p;
  parse(&p, src, k);
  ck_assert_int_ge(p.diag.errors, 1);
  ck_assert_ptr_nonnull(strstr(p.err, "brackets nested too deeply"));
  done(&p);
  /* a long unary chain: bounded by the expression depth limit */
  strcpy(src, "dim A = ");
  k = strlen(src);
  for (size_t i = 0; i < n; i++) src[k++] = '-';
  src[k++] = '1';
  src[k] = 0;
  parse(&p, src, k);
  ck_assert_int_eq(p.diag.errors, 1);
  ck_assert_ptr_nonnull(strstr(p.err, "expression nested too deeply"));
  done(&p);
  free(src);
}
END_TEST

START_TEST(empty_and_comment_only) {
  Parsed p;
  parse(&p, "", 0);
  ck_assert_int_eq(p.diag.errors, 0);
  ck_assert_int_eq(p.file->nitems, 0);
  done(&p);
  parse(&p, "# only a comment", 16);
  ck_assert_int_eq(p.diag.errors, 0);
  done(&p);
}
END_TEST

/* 10 MB of declarations parse, and 10 MB of garbage ends in bounded time
 * (the error limit stops reporting; the parser still reads to the end). */
START_TEST(ten_megabytes) {
  const char *line = "dim A = (1 + 2) * 3\n";
  size_t n = strlen(line), count = (10u << 20) / n;
  char *src = malloc(n * count + 1);
  for (size_t i = 0; i < count; i++) memcpy(src + i * n, line, n);
  src[n * count] = 0;
  Parsed p;
  parse(&p, src, n * count);
  ck_assert_int_eq(p.diag.errors, 0);
  ck_assert_int_eq(p.file->nitems, (int)count);
  done(&p);
  for (size_t i = 0; i < n * count; i++) src[i] = "){;@x\n"[i % 6];
  parse(&p, src, n * count);
  ck_assert(ctx_diag_should_stop(&p.diag));
  done(&p);
  free(src);
}
END_TEST

static Suite *grammar_suite(void) {
  Suite *s = suite_create("grammar");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, keyword_table);
  tcase_add_test(tc, parse_minimal);
  tcase_add_test(tc, newline_rules);
  tcase_add_test(tc, reduce_binds_products);
  tcase_add_test(tc, nul_and_bad_utf8);
  tcase_add_test(tc, deep_nesting_bounded);
  tcase_add_test(tc, empty_and_comment_only);
  tcase_add_test(tc, ten_megabytes);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(grammar_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
