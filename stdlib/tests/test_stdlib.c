/* test_stdlib.c — the embedded standard library against its source files.
 *
 * Every .ctx file under stdlib/ is embedded (CMake passes the count it globbed), each
 * embedded text equals its file byte for byte (read from CTX_SOURCE_DIR),
 * modules are found by name and misspellings get a suggestion.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stdlib/stdlib.h"

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 20); /* stdlib modules are a few KiB; 1 MiB is ample */
  *len = fread(buf, 1, 1 << 20, f);
  fclose(f);
  return buf;
}

START_TEST(text_equals_source) {
  int n = 0;
  for (const CtxStdlibModule *m = ctx_stdlib_modules(); m->module; m++, n++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", CTX_SOURCE_DIR, m->path);
    size_t len;
    char *text = read_file(path, &len);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    ck_assert_uint_eq(len, m->len);
    ck_assert_msg(memcmp(text, m->text, len) == 0, "%s differs from its embedded text", path);
    ck_assert_int_eq(m->text[m->len], '\0');
    free(text);
  }
  ck_assert_int_eq(n, CTX_STDLIB_COUNT);
}
END_TEST

START_TEST(find_by_name) {
  const char *path = NULL;
  size_t len = 0;
  const char *text = ctx_stdlib_find("nn.lstm", &path, &len);
  ck_assert_ptr_nonnull(text);
  ck_assert_str_eq(path, "stdlib/nn/lstm.ctx");
  ck_assert_uint_eq(strlen(text), len);
  ck_assert_ptr_null(ctx_stdlib_find("nn.lstmm", &path, &len));
  ck_assert_ptr_null(ctx_stdlib_find("nn/lstm", &path, &len));
  ck_assert_str_eq(ctx_stdlib_closest("nn.lstmm"), "nn.lstm");
  ck_assert_str_eq(ctx_stdlib_closest("nn.linaer"), "nn.linear");
  ck_assert_ptr_null(ctx_stdlib_closest("vision.conv2d"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("stdlib");
  TCase *tc = tcase_create("embedded");
  tcase_add_test(tc, text_equals_source);
  tcase_add_test(tc, find_by_name);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
