/* test_ctxrt_npy.c — the .npy writer and reader: the writer's bytes against what
 * numpy.save (NumPy 1.24) wrote for the same arrays, header alignment for every
 * rank, round trips through memory and files, and every reader error. */
#include "ctxrt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes written by numpy.save for:
 *   np.array([[1.5, -2, 0], [3.25, 1e-3, 7]], dtype=np.float32)
 *   np.array([0.1, -1e300, 2], dtype=np.float64)
 *   np.zeros((123456789012, 0, 1, 1, 1, 1, 1, 1), dtype=np.float32)
 *   np.array(1.5, dtype=np.float32) */
static const unsigned char npy_f32_2x3[152] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65,
    0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34, 0x27, 0x2c, 0x20, 0x27,
    0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27,
    0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70,
    0x65, 0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20, 0x33, 0x29, 0x2c, 0x20, 0x7d, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x0a, 0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x50, 0x40, 0x6f, 0x12, 0x83, 0x3a, 0x00, 0x00, 0xe0, 0x40,
};
static const unsigned char npy_f64_3[152] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65,
    0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x38, 0x27, 0x2c, 0x20, 0x27,
    0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27,
    0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70,
    0x65, 0x27, 0x3a, 0x20, 0x28, 0x33, 0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x0a, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, 0x9c, 0x75, 0x00, 0x88,
    0x3c, 0xe4, 0x37, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,
};
static const unsigned char npy_f32_8d[128] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64,
    0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34, 0x27, 0x2c,
    0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64,
    0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27,
    0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x31, 0x32, 0x33, 0x34,
    0x35, 0x36, 0x37, 0x38, 0x39, 0x30, 0x31, 0x32, 0x2c, 0x20, 0x30, 0x2c, 0x20,
    0x31, 0x2c, 0x20, 0x31, 0x2c, 0x20, 0x31, 0x2c, 0x20, 0x31, 0x2c, 0x20, 0x31,
    0x2c, 0x20, 0x31, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
};
static const unsigned char npy_f32_scalar[132] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65,
    0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34, 0x27, 0x2c, 0x20, 0x27,
    0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27,
    0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70,
    0x65, 0x27, 0x3a, 0x20, 0x28, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x0a, 0x00, 0x00, 0xc0, 0x3f,
};

static void expect_bytes(CtxrtDtype dtype, const void *data, int32_t ndim,
                         const int64_t *shape, const unsigned char *want,
                         size_t want_len) {
  unsigned char *buf;
  size_t len;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_npy_write_buffer(dtype, data, ndim, shape, &buf, &len, &err),
                   CTXRT_OK);
  ck_assert_uint_eq(len, want_len);
  for (size_t i = 0; i < len; i++)
    ck_assert_msg(buf[i] == want[i], "byte %zu: 0x%02x, numpy wrote 0x%02x", i, buf[i],
                  want[i]);
  free(buf);
}

START_TEST(test_numpy_bytes) {
  const float a[] = {1.5f, -2, 0, 3.25f, 1e-3f, 7};
  expect_bytes(CTXRT_F32, a, 2, (const int64_t[]){2, 3}, npy_f32_2x3, sizeof npy_f32_2x3);
  const double b[] = {0.1, -1e300, 2};
  expect_bytes(CTXRT_F64, b, 1, (const int64_t[]){3}, npy_f64_3, sizeof npy_f64_3);
  expect_bytes(CTXRT_F32, NULL, 8, (const int64_t[]){123456789012, 0, 1, 1, 1, 1, 1, 1},
               npy_f32_8d, sizeof npy_f32_8d);
  const float c = 1.5f;
  expect_bytes(CTXRT_F32, &c, 0, NULL, npy_f32_scalar, sizeof npy_f32_scalar);
}
END_TEST

START_TEST(test_header_alignment) {
  /* every rank and first-axis width: the header ends with '\n' on a multiple of 64 */
  static const double zeros[1000];
  int64_t shape[CTXRT_MAX_DIMS];
  for (int32_t ndim = 0; ndim <= CTXRT_MAX_DIMS; ndim++)
    for (int64_t first = 0; first < 1000000000000LL; first = first * 10 + 9) {
      if (ndim == 1 && first >= 1000) break; /* 1-D arrays hold first elements */
      for (int32_t d = 0; d < ndim; d++)
        shape[d] = d == 0 ? first : d == 1 ? 0 : 7;
      unsigned char *buf;
      size_t len;
      CtxrtError err;
      ck_assert_int_eq(
          ctxrt_npy_write_buffer(CTXRT_F64, zeros, ndim, shape, &buf, &len, &err),
          CTXRT_OK);
      size_t header = 10 + (size_t)(buf[8] | buf[9] << 8);
      ck_assert_uint_eq(header % 64, 0);
      ck_assert_int_eq(buf[header - 1], '\n');
      size_t numel = ndim == 0 ? 1 : ndim == 1 ? (size_t)first : 0;
      ck_assert_uint_eq(len, header + 8 * numel);
      free(buf);
      if (ndim == 0) break;
    }
}
END_TEST

START_TEST(test_round_trip) {
  enum { N = 2 * 3 * 4 };
  float f[N];
  double d[N];
  for (int i = 0; i < N; i++)
    f[i] = (float)i * 0.37f - 3, d[i] = i * -1.1e-7 + 1e200;
  const int64_t shape[] = {2, 3, 4};
  const char *path = tu_path("a.npy");
  CtxrtError err;
  CtxrtArray *a;
  ck_assert_int_eq(ctxrt_npy_write_file(path, CTXRT_F32, f, 3, shape, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_npy_read_file(path, &a, &err), CTXRT_OK);
  ck_assert_int_eq(a->dtype, CTXRT_F32);
  ck_assert_int_eq(a->ndim, 3);
  ck_assert(a->shape[0] == 2 && a->shape[1] == 3 && a->shape[2] == 4 && a->numel == N);
  ck_assert_mem_eq(a->data, f, sizeof f);
  ctxrt_array_destroy(a);
  ck_assert_int_eq(
      ctxrt_npy_write_file(path, CTXRT_F64, d, 2, (const int64_t[]){4, 6}, &err),
      CTXRT_OK);
  ck_assert_int_eq(ctxrt_npy_read_file(path, &a, &err), CTXRT_OK);
  ck_assert_int_eq(a->dtype, CTXRT_F64);
  ck_assert(a->ndim == 2 && a->shape[0] == 4 && a->shape[1] == 6);
  ck_assert_mem_eq(a->data, d, sizeof d);
  ctxrt_array_destroy(a);
  /* numpy's own output reads back */
  ck_assert_int_eq(ctxrt_npy_read_buffer("n", npy_f32_8d, sizeof npy_f32_8d, &a, &err),
                   CTXRT_OK);
  ck_assert(a->ndim == 8 && a->shape[0] == 123456789012 && a->numel == 0);
  ctxrt_array_destroy(a);
  ck_assert_int_eq(
      ctxrt_npy_read_buffer("n", npy_f32_scalar, sizeof npy_f32_scalar, &a, &err),
      CTXRT_OK);
  ck_assert(a->ndim == 0 && a->numel == 1 && ((float *)a->data)[0] == 1.5f);
  ctxrt_array_destroy(a);
}
END_TEST

/* Reads the [len] bytes at [bytes] expecting an error; returns the message. */
static const char *read_err(const unsigned char *bytes, size_t len) {
  static char msg[CTXRT_MSG_SIZE];
  CtxrtArray *a = (CtxrtArray *)&a;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_npy_read_buffer("a.npy", bytes, len, &a, &err),
                   CTXRT_ERR_SYNTAX);
  ck_assert_ptr_null(a);
  strcpy(msg, err.msg);
  return msg;
}

/* The error for numpy's 2x3 array with the first [from] replaced by [to]. */
static const char *edited_err(const char *from, const char *to) {
  unsigned char copy[sizeof npy_f32_2x3];
  memcpy(copy, npy_f32_2x3, sizeof copy);
  size_t n = strlen(from), at = 0;
  while (at + n <= sizeof copy && memcmp(copy + at, from, n) != 0)
    at++;
  ck_assert_uint_le(at + n, sizeof copy);
  memcpy(copy + at, to, strlen(to));
  return read_err(copy, sizeof copy);
}

START_TEST(test_read_errors) {
  ck_assert_str_eq(read_err((const unsigned char *)"hello", 5),
                   "a.npy: error: not a .npy file (no magic string)");
  ck_assert_str_eq(read_err(npy_f32_2x3, 40),
                   "a.npy: error: truncated file: header incomplete");
  ck_assert_str_eq(read_err(npy_f32_2x3, sizeof npy_f32_2x3 - 1),
                   "a.npy: error: data holds 23 bytes, but shape and dtype need 24");
  ck_assert_str_eq(edited_err("'<f4'", "'>f4'"),
                   "a.npy: error: unsupported .npy dtype '>f4' (only '<f4' and '<f8')");
  ck_assert_str_eq(edited_err("'<f4'", "'<i4'"),
                   "a.npy: error: unsupported .npy dtype '<i4' (only '<f4' and '<f8')");
  ck_assert_str_eq(edited_err("False", "True,"),
                   "a.npy: error: fortran-order .npy arrays are not supported");
  ck_assert_str_eq(edited_err("(2, 3)", "(2, x)"),
                   "a.npy: error: bad .npy header: expected a dimension in the shape");
  ck_assert_str_eq(edited_err("'shape'", "'shap' "),
                   "a.npy: error: bad .npy header: unknown key");
  ck_assert_str_eq(edited_err("}", " "), "a.npy: error: bad .npy header: expected a key");
  ck_assert_str_eq(edited_err("), }", ") x}"),
                   "a.npy: error: bad .npy header: expected ',' or '}'");
  ck_assert_str_eq(edited_err("'descr': '<f4', ", "                "),
                   "a.npy: error: bad .npy header: missing 'descr', 'fortran_order' or "
                   "'shape'");
  ck_assert_str_eq(edited_err("\x01\x00v", "\x07\x00v"),
                   "a.npy: error: unsupported .npy version 7.0");
  ck_assert_str_eq(edited_err("(2, 3)", "(3, 3)"),
                   "a.npy: error: data holds 24 bytes, but shape and dtype need 36");
}
END_TEST

START_TEST(test_version_2) {
  /* the same array with a version 2.0 header (4-byte length) */
  unsigned char copy[sizeof npy_f32_2x3 + 2];
  memcpy(copy, npy_f32_2x3, 8);
  copy[6] = 2;
  copy[8] = 0x76;
  copy[9] = copy[10] = copy[11] = 0;
  memcpy(copy + 12, npy_f32_2x3 + 10, sizeof npy_f32_2x3 - 10);
  CtxrtArray *a;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_npy_read_buffer("v2", copy, sizeof copy, &a, &err), CTXRT_OK);
  ck_assert(a->ndim == 2 && ((float *)a->data)[3] == 3.25f);
  ctxrt_array_destroy(a);
}
END_TEST

START_TEST(test_write_errors) {
  CtxrtError err;
  float x = 0;
  ck_assert_int_eq(
      ctxrt_npy_write_file(tu_path("no/such/dir.npy"), CTXRT_F32, &x, 0, NULL, &err),
      CTXRT_ERR_IO);
  ck_assert_msg(
      strstr(err.msg, "error: cannot open for writing: no such file or directory"), "%s",
      err.msg);
  unsigned char *buf;
  size_t len;
  ck_assert_int_eq(
      ctxrt_npy_write_buffer(CTXRT_F32, &x, 9, (const int64_t[9]){0}, &buf, &len, &err),
      CTXRT_ERR_ARG);
  ck_assert_int_eq(
      ctxrt_npy_write_buffer(CTXRT_F32, &x, 1, (const int64_t[]){-1}, &buf, &len, &err),
      CTXRT_ERR_ARG);
  ck_assert_str_eq(err.msg, "error: .npy: bad shape");
}
END_TEST

static Suite *npy_suite(void) {
  Suite *s = suite_create("npy");
  TCase *tc = tcase_create("npy");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_numpy_bytes);
  tcase_add_test(tc, test_header_alignment);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_read_errors);
  tcase_add_test(tc, test_version_2);
  tcase_add_test(tc, test_write_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(npy_suite());
}
