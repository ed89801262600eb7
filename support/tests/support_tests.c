/* support_tests.c — unit tests of support/: arenas, buffers, strings,
 * sources and diagnostic rendering. */
#include "support/support.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

START_TEST(arena_zeroed_aligned) {
  CtxArena *a = ctx_arena_new();
  for (int i = 1; i < 2000; i++) {
    unsigned char *p = ctx_arena_alloc(a, (size_t)i);
    ck_assert_uint_eq((uintptr_t)p % _Alignof(max_align_t), 0);
    for (int j = 0; j < i; j++) ck_assert_uint_eq(p[j], 0);
    memset(p, 0xAB, (size_t)i);
  }
  ck_assert_uint_gt(ctx_arena_bytes(a), 1000000);
  ctx_arena_free(a);
}
END_TEST

START_TEST(arena_big_and_mark) {
  CtxArena *a = ctx_arena_new();
  char *keep = ctx_arena_strdup(a, "kept");
  CtxArenaMark m = ctx_arena_mark(a);
  for (int i = 0; i < 100; i++) ctx_arena_alloc(a, 100000);
  ctx_arena_release(a, m);
  ck_assert_str_eq(keep, "kept");
  char *p = ctx_arena_alloc(a, 16);
  ck_assert_uint_eq(p[0], 0);
  ck_assert_str_eq(ctx_arena_printf(a, "%d-%s", 42, "x"), "42-x");
  ctx_arena_free(a);
}
END_TEST

START_TEST(vec_grows) {
  CtxArena *a = ctx_arena_new();
  CtxVec v = {0};
  int vals[100];
  for (int i = 0; i < 100; i++) {
    vals[i] = i;
    ctx_vec_push(a, &v, &vals[i]);
  }
  ck_assert_int_eq(v.len, 100);
  for (int i = 0; i < 100; i++) ck_assert_int_eq(*(int *)v.items[i], i);
  ctx_arena_free(a);
}
END_TEST

START_TEST(buf_printf) {
  CtxBuf b;
  ctx_buf_init(&b);
  ck_assert_str_eq(ctx_buf_str(&b), "");
  for (int i = 0; i < 1000; i++) ctx_buf_printf(&b, "%d,", i % 10);
  ck_assert_uint_eq(b.len, 2000);
  ctx_buf_clear(&b);
  ctx_buf_puts(&b, "ab");
  ctx_buf_putc(&b, 'c');
  ck_assert_str_eq(ctx_buf_str(&b), "abc");
  ctx_buf_free(&b);
}
END_TEST

START_TEST(edit_distance) {
  ck_assert_int_eq(ctx_edit_distance("h0", "hc", 3), 1);
  ck_assert_int_eq(ctx_edit_distance("tile", "tilee", 3), 1);
  ck_assert_int_eq(ctx_edit_distance("abc", "abc", 3), 0);
  ck_assert_int_eq(ctx_edit_distance("kitten", "sitting", 5), 3);
  ck_assert_int_eq(ctx_edit_distance("a", "abcdefgh", 2), 3);
}
END_TEST

START_TEST(utf8) {
  ck_assert_int_eq(ctx_utf8_invalid_at("abc", 3), -1);
  ck_assert_int_eq(ctx_utf8_invalid_at("a\xc3\xa9z", 4), -1);
  ck_assert_int_eq(ctx_utf8_invalid_at("ab\xff", 3), 2);
  ck_assert_int_eq(ctx_utf8_invalid_at("\xc0\xaf", 2), 0);     /* overlong */
  ck_assert_int_eq(ctx_utf8_invalid_at("\xed\xa0\x80", 3), 0); /* surrogate */
  ck_assert_int_eq(ctx_utf8_invalid_at("x\xe2\x82", 3), 1);    /* truncated */
  ck_assert_uint_eq(ctx_utf8_width("a\xc3\xa9z", 4), 3);
}
END_TEST

/* Renders one diagnostic on [text] and returns what was printed (malloc'd). */
static char *render(const char *text, CtxSpan span, const char *msg) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  span.file = ctx_sources_add(&srcs, "m.ctx", text, strlen(text));
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  CtxDiag d;
  ctx_diag_init(&d, &srcs, f);
  ctx_diag_error(&d, span, "%s", msg);
  fclose(f);
  ck_assert_int_eq(d.errors, 1);
  ctx_sources_free(&srcs);
  return out;
}

START_TEST(diag_caret) {
  CtxSpan sp = {0, 2, 19, 2, 21};
  char *out = render("model m\n  let c = i * u + hc * c0\n", sp, "unknown tensor 'hc'");
  ck_assert_str_eq(out, "m.ctx:2:19: error: unknown tensor 'hc'\n"
                        "    2 |   let c = i * u + hc * c0\n"
                        "      |                   ^~\n");
  free(out);
}
END_TEST

START_TEST(diag_utf8_and_tabs) {
  CtxSpan sp = {0, 1, 7, 1, 8}; /* byte column 7: after "é" (2 bytes) and a tab */
  char *out = render("\t\xc3\xa9 = @x", sp, "unexpected character '@'");
  ck_assert_str_eq(out, "m.ctx:1:7: error: unexpected character '@'\n"
                        "    1 |  \xc3\xa9 = @x\n"
                        "      |      ^\n");
  free(out);
}
END_TEST

START_TEST(diag_long_line_window) {
  char *text = malloc(100001);
  memset(text, 'a', 100000);
  text[100000] = 0;
  CtxSpan sp = {0, 1, 50000, 1, 50003};
  char *out = render(text, sp, "x");
  ck_assert_ptr_nonnull(strstr(out, "m.ctx:1:50000: error: x\n"));
  ck_assert_uint_lt(strlen(out), 400);
  ck_assert_ptr_nonnull(strstr(out, "^~~\n"));
  free(out);
  free(text);
}
END_TEST

START_TEST(diag_limit_and_notes) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  int id = ctx_sources_add(&srcs, "f", "x\n", 2);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  CtxDiag d;
  ctx_diag_init(&d, &srcs, f);
  d.error_limit = 2;
  CtxSpan sp = {id, 1, 1, 1, 2};
  for (int i = 0; i < 5; i++) {
    ctx_diag_error(&d, sp, "e%d", i);
    ctx_diag_note(&d, sp, "n%d", i);
  }
  fclose(f);
  ck_assert(ctx_diag_should_stop(&d));
  ck_assert_int_eq(d.errors, 2);
  ck_assert_ptr_nonnull(strstr(out, "f:1:1: note: n0"));
  ck_assert_ptr_nonnull(strstr(out, "too many errors (2), stopping now"));
  ck_assert_ptr_null(strstr(out, "e2"));
  ck_assert_ptr_null(strstr(out, "n2"));
  free(out);
  ctx_sources_free(&srcs);
}
END_TEST

START_TEST(diag_ice_and_nofile) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  CtxDiag d;
  ctx_diag_init(&d, &srcs, f);
  CtxSpan none = {0, 0, 0, 0, 0};
  ctx_diag_error(&d, none, "cannot open 'x'");
  CTX_ICE(&d, "bad %s", "state");
  fclose(f);
  ck_assert(d.ice);
  ck_assert_ptr_nonnull(strstr(out, "ctx: error: cannot open 'x'\n"));
  ck_assert_ptr_nonnull(strstr(out, "ctx: internal compiler error: bad state (at "));
  free(out);
  ctx_sources_free(&srcs);
}
END_TEST

/* Without an output, diagnostics are counted and nothing is printed. */
START_TEST(diag_counts_only) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  int id = ctx_sources_add(&srcs, "f", "x\n", 2);
  CtxDiag d;
  ctx_diag_init(&d, &srcs, NULL);
  d.error_limit = 2;
  CtxSpan sp = {id, 1, 1, 1, 2};
  ctx_diag_warning(&d, sp, "w");
  for (int i = 0; i < 3; i++) ctx_diag_error(&d, sp, "e%d", i);
  ck_assert_int_eq(d.warnings, 1);
  ck_assert_int_eq(d.errors, 2);
  ck_assert(ctx_diag_should_stop(&d));
  CTX_ICE(&d, "bad %s", "state");
  ck_assert(d.ice);
  ctx_sources_free(&srcs);
}
END_TEST

START_TEST(sources_lines) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  int id = ctx_sources_add(&srcs, "f", "one\r\ntwo\n\nfour", 14);
  size_t len;
  const char *l = ctx_sources_line(&srcs, id, 1, &len);
  ck_assert_uint_eq(len, 3);
  ck_assert(strncmp(l, "one", 3) == 0);
  l = ctx_sources_line(&srcs, id, 4, &len);
  ck_assert(strncmp(l, "four", len) == 0 && len == 4);
  ck_assert_ptr_null(ctx_sources_line(&srcs, id, 5, &len));
  char err[256];
  ck_assert_int_eq(ctx_sources_load(&srcs, "/nonexistent/x.ctx", 100, err, sizeof err), 0);
  ck_assert_ptr_nonnull(strstr(err, "cannot open '/nonexistent/x.ctx'"));
  ctx_sources_free(&srcs);
}
END_TEST

static Suite *support_suite(void) {
  Suite *s = suite_create("support");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, arena_zeroed_aligned);
  tcase_add_test(tc, arena_big_and_mark);
  tcase_add_test(tc, vec_grows);
  tcase_add_test(tc, buf_printf);
  tcase_add_test(tc, edit_distance);
  tcase_add_test(tc, utf8);
  tcase_add_test(tc, diag_caret);
  tcase_add_test(tc, diag_utf8_and_tabs);
  tcase_add_test(tc, diag_long_line_window);
  tcase_add_test(tc, diag_limit_and_notes);
  tcase_add_test(tc, diag_ice_and_nofile);
  tcase_add_test(tc, diag_counts_only);
  tcase_add_test(tc, sources_lines);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(support_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
