/* ctxrt_testutil.c — helpers shared by the runtime's Check suites (see the header).
 * The temporary directory is made once in the parent before the tests fork and
 * removed with its files after they all ran. */
#include "ctxrt_testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

const char *tu_path(const char *name) {
  static char bufs[4][512];
  static int next;
  char *b = bufs[next++ % 4];
  snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
  return b;
}

const char *tu_write(const char *name, const void *data, size_t len) {
  const char *path = tu_path(name);
  if (len == (size_t)-1) len = strlen(data);
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot create %s", path);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
  return path;
}

CtxrtForest *tu_nodes(const char *text) {
  CtxrtForest *f;
  CtxrtError err;
  CtxrtStatus st = ctxrt_read_nodes_buffer("x", text, strlen(text), &f, &err);
  ck_assert_msg(st == CTXRT_OK, "unexpected error: %s", err.msg);
  return f;
}

CtxrtForest *tu_ptb(const char *text) {
  CtxrtForest *f;
  CtxrtError err;
  CtxrtStatus st = ctxrt_read_ptb_buffer("x", text, strlen(text), NULL, &f, &err);
  ck_assert_msg(st == CTXRT_OK, "unexpected error: %s", err.msg);
  return f;
}

static char msgbuf[CTXRT_MSG_SIZE];

const char *tu_nodes_err(const char *text) {
  CtxrtForest *f = (CtxrtForest *)&f;
  CtxrtError err;
  CtxrtStatus st = ctxrt_read_nodes_buffer("x", text, strlen(text), &f, &err);
  ck_assert_msg(st != CTXRT_OK, "expected an error reading: %s", text);
  ck_assert_int_eq(err.status, st);
  ck_assert_ptr_null(f);
  snprintf(msgbuf, sizeof msgbuf, "%s", err.msg);
  return msgbuf;
}

const char *tu_ptb_err(const char *text) {
  CtxrtForest *f = (CtxrtForest *)&f;
  CtxrtError err;
  CtxrtStatus st = ctxrt_read_ptb_buffer("x", text, strlen(text), NULL, &f, &err);
  ck_assert_msg(st != CTXRT_OK, "expected an error reading: %s", text);
  ck_assert_int_eq(err.status, st);
  ck_assert_ptr_null(f);
  snprintf(msgbuf, sizeof msgbuf, "%s", err.msg);
  return msgbuf;
}

const char *tu_validate(const char *text, const CtxrtSpec *spec) {
  CtxrtForest *f = tu_nodes(text);
  CtxrtError err;
  ctxrt_error_clear(&err);
  CtxrtStatus st = ctxrt_forest_validate(f, spec, &err);
  ck_assert_int_eq(st, err.status);
  snprintf(msgbuf, sizeof msgbuf, "%s", st == CTXRT_OK ? "" : err.msg);
  ctxrt_forest_destroy(f);
  return msgbuf;
}

char *tu_repeat(const char *piece, size_t count) {
  size_t n = strlen(piece);
  char *s = malloc(n * count + 1);
  ck_assert_ptr_nonnull(s);
  for (size_t i = 0; i < count; i++)
    memcpy(s + i * n, piece, n);
  s[n * count] = '\0';
  return s;
}

static void remove_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      unlink(tu_path(e->d_name));
  closedir(d);
  rmdir(tmpdir);
}

int tu_run(Suite *s) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/ctxrt-test-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  remove_tmpdir();
  return failed ? 1 : 0;
}
