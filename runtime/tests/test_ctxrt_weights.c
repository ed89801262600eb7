/* test_ctxrt_weights.c — weights: the default initialiser (golden values from an
 * independent transcription of ctxrt.h, float/double agreement), safetensors round
 * trips through memory and files, the writer's exact header, every malformed file
 * with its exact message, the check against the model's parameters, and
 * weights larger than the system can hold. */
#include "ctxrt_testutil.h"
#include "runtime/ctxrt_int.h" /* ctxrt__nomem */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

START_TEST(test_init_golden) {
  static const uint32_t want[] = {0x3d3cf647, 0x3c9830d5, 0xbd740344,
                                  0xbd1ec593, 0x3d36a2da, 0x3d1bff08};
  CtxrtInit init;
  float f[6];
  ctxrt_init_begin(&init, 1234);
  ctxrt_init_fill_f32(&init, f, 2);
  ctxrt_init_fill_f32(&init, f + 2, 4); /* one stream across parameters */
  for (int i = 0; i < 6; i++)
    ck_assert_uint_eq(bits(f[i]), want[i]);
  ctxrt_init_begin(&init, 0);
  ctxrt_init_fill_f32(&init, f, 1);
  ck_assert_uint_eq(bits(f[0]), 0x3d9d010d);
}
END_TEST

START_TEST(test_init_f32_f64_agree) {
  enum { N = 100000 };
  float *f = malloc(N * sizeof *f);
  double *d = malloc(N * sizeof *d);
  CtxrtInit a, b;
  ctxrt_init_begin(&a, 99);
  ctxrt_init_begin(&b, 99);
  ctxrt_init_fill_f32(&a, f, N);
  ctxrt_init_fill_f64(&b, d, 1000);
  ctxrt_init_fill_f64(&b, d + 1000, N - 1000);
  double lo = 1, hi = -1;
  for (int i = 0; i < N; i++) {
    ck_assert(d[i] == (double)f[i]);
    lo = d[i] < lo ? d[i] : lo;
    hi = d[i] > hi ? d[i] : hi;
  }
  ck_assert(lo >= -0.1f && hi <= 0.1f && lo < -0.099 && hi > 0.099);
  free(f);
  free(d);
}
END_TEST

static const CtxrtParam params[] = {
    {"W", 2, {2, 3}},
    {"b", 1, {3}},
    {"s", 0, {0}},
};

static CtxrtWeights *make(uint64_t seed) {
  CtxrtWeights *w;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_weights_create(params, 3, &w, &err), CTXRT_OK);
  ctxrt_weights_init(w, seed);
  return w;
}

START_TEST(test_create_and_init) {
  CtxrtWeights *w = make(5);
  ck_assert_int_eq(w->count, 3);
  const CtxrtTensor *t = ctxrt_weights_find(w, "b");
  ck_assert_ptr_nonnull(t);
  ck_assert(t->ndim == 1 && t->shape[0] == 3 && t->numel == 3);
  ck_assert_ptr_null(ctxrt_weights_find(w, "c"));
  ck_assert_int_eq(ctxrt_weights_find(w, "s")->numel, 1);
  ck_assert_uint_eq((uintptr_t)w->tensors[0].data % 64, 0);
  CtxrtInit init;
  float all[10];
  ctxrt_init_begin(&init, 5);
  ctxrt_init_fill_f32(&init, all, 10);
  ck_assert_mem_eq(w->tensors[0].data, all, 6 * sizeof(float));
  ck_assert_mem_eq(w->tensors[1].data, all + 6, 3 * sizeof(float));
  ck_assert_mem_eq(w->tensors[2].data, all + 9, sizeof(float));
  CtxrtError err;
  ck_assert_int_eq(ctxrt_weights_check(w, "w", params, 3, &err), CTXRT_OK);
  ctxrt_weights_destroy(w);
  CtxrtParam twice[] = {{"W", 1, {2}}, {"W", 1, {2}}};
  ck_assert_int_eq(ctxrt_weights_create(twice, 2, &w, &err), CTXRT_ERR_ARG);
  ck_assert_ptr_null(w);
  ck_assert_str_eq(err.msg, "error: parameter 'W' declared twice");
  CtxrtParam bad[] = {{"W", 9, {0}}};
  ck_assert_int_eq(ctxrt_weights_create(bad, 1, &w, &err), CTXRT_ERR_ARG);
  ck_assert_str_eq(err.msg, "error: parameter 'W' has a bad shape");
}
END_TEST

/* Weights larger than the system can hold are refused before any of them is
 * written (Linux would grant the allocation and its OOM killer end the
 * process as the pages are touched), with the sizes in the message. */
START_TEST(test_create_beyond_memory) {
  CtxrtParam huge[] = {{"W", 2, {1 << 20, 1 << 20}}}; /* 4 TiB of floats */
  CtxrtWeights *w = NULL;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_weights_create(huge, 1, &w, &err), CTXRT_ERR_NOMEM);
  ck_assert_ptr_null(w);
  ck_assert_msg(strstr(err.msg, "error: out of memory: 4096.00 GiB wanted at once, ") == err.msg,
                "%s", err.msg);
  ck_assert_msg(strstr(err.msg, " GiB available (MemAvailable + SwapFree)") != NULL, "%s",
                err.msg);
  /* the next failure without a refusal says the plain message again */
  ck_assert_int_eq(ctxrt__nomem(&err, NULL), CTXRT_ERR_NOMEM);
  ck_assert_str_eq(err.msg, "error: out of memory (or an input too large to hold)");
}
END_TEST

static const char *header_of(const unsigned char *buf, size_t *n) {
  *n = 0;
  for (int i = 7; i >= 0; i--)
    *n = *n << 8 | buf[i];
  return (const char *)buf + 8;
}

START_TEST(test_round_trip_buffer) {
  CtxrtWeights *w = make(7), *r;
  unsigned char *buf;
  size_t len, n;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_st_write_buffer(w, &buf, &len, &err), CTXRT_OK);
  const char *json = header_of(buf, &n);
  const char *want = "{\"W\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]},"
                     "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[36,40]}}";
  ck_assert_uint_eq(n % 8, 0);
  ck_assert_uint_eq(n, (strlen(want) + 7) / 8 * 8);
  ck_assert_int_eq(memcmp(json, want, strlen(want)), 0);
  for (size_t i = strlen(want); i < n; i++)
    ck_assert_int_eq(json[i], ' ');
  ck_assert_uint_eq(len, 8 + n + 40);
  /* data little-endian, in order */
  uint32_t first = (uint32_t)buf[8 + n] | (uint32_t)buf[9 + n] << 8 |
                   (uint32_t)buf[10 + n] << 16 | (uint32_t)buf[11 + n] << 24;
  ck_assert_uint_eq(first, bits(w->tensors[0].data[0]));
  ck_assert_int_eq(ctxrt_st_read_buffer("w", buf, len, &r, &err), CTXRT_OK);
  ck_assert_int_eq(r->count, 3);
  for (int32_t i = 0; i < 3; i++) {
    ck_assert_str_eq(r->tensors[i].name, w->tensors[i].name);
    ck_assert_int_eq(r->tensors[i].ndim, w->tensors[i].ndim);
    ck_assert_int_eq(r->tensors[i].numel, w->tensors[i].numel);
    ck_assert_mem_eq(r->tensors[i].data, w->tensors[i].data,
                     (size_t)w->tensors[i].numel * sizeof(float));
  }
  ck_assert_int_eq(ctxrt_weights_check(r, "w", params, 3, &err), CTXRT_OK);
  ctxrt_weights_destroy(r);
  /* any truncation of a good file is an error, never a crash */
  for (size_t cut = 0; cut < len; cut++) {
    r = (CtxrtWeights *)&r;
    ck_assert_int_eq(ctxrt_st_read_buffer("w", buf, cut, &r, &err), CTXRT_ERR_SYNTAX);
    ck_assert_ptr_null(r);
  }
  free(buf);
  ctxrt_weights_destroy(w);
}
END_TEST

START_TEST(test_round_trip_file) {
  CtxrtWeights *w = make(8), *r;
  CtxrtError err;
  const char *path = tu_path("w.safetensors");
  ck_assert_int_eq(ctxrt_st_write_file(path, w, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_st_read_file(path, &r, &err), CTXRT_OK);
  ck_assert_mem_eq(r->tensors[0].data, w->tensors[0].data, 6 * sizeof(float));
  ctxrt_weights_destroy(r);
  ctxrt_weights_destroy(w);
  ck_assert_int_eq(ctxrt_st_read_file(tu_path("none.safetensors"), &r, &err),
                   CTXRT_ERR_IO);
  ck_assert_ptr_null(r);
}
END_TEST

/* A safetensors buffer: header length [n] ((size_t)-1: strlen(json)), [json],
 * then [data_len] bytes of data (each byte its index). */
static unsigned char *st_buf(size_t n, const char *json, size_t data_len, size_t *len) {
  size_t h = strlen(json);
  unsigned char *buf = malloc(8 + h + data_len + 1);
  if (n == (size_t)-1) n = h;
  for (int i = 0; i < 8; i++)
    buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
  memcpy(buf + 8, json, h);
  for (size_t i = 0; i < data_len; i++)
    buf[8 + h + i] = (unsigned char)i;
  *len = 8 + h + data_len;
  return buf;
}

static CtxrtStatus st_try(const char *json, size_t data_len, CtxrtWeights **w,
                          char *msg) {
  size_t len;
  unsigned char *buf = st_buf((size_t)-1, json, data_len, &len);
  CtxrtError err;
  CtxrtStatus st = ctxrt_st_read_buffer("w", buf, len, w, &err);
  strcpy(msg, st == CTXRT_OK ? "" : err.msg);
  free(buf);
  return st;
}

static const char *st_err(const char *json, size_t data_len) {
  static char msg[CTXRT_MSG_SIZE];
  CtxrtWeights *w = (CtxrtWeights *)&w;
  ck_assert_int_eq(st_try(json, data_len, &w, msg), CTXRT_ERR_SYNTAX);
  ck_assert_ptr_null(w);
  return msg;
}

#define T23 "\"dtype\":\"F32\",\"shape\":[2,3]"

START_TEST(test_malformed) {
  size_t len;
  CtxrtWeights *w;
  CtxrtError err;
  unsigned char *buf = st_buf(1000, "{}", 0, &len);
  ck_assert_int_eq(ctxrt_st_read_buffer("w", buf, 5, &w, &err), CTXRT_ERR_SYNTAX);
  ck_assert_str_eq(err.msg,
                   "w: error: truncated file: 5 bytes, less than the 8-byte header "
                   "length");
  ck_assert_int_eq(ctxrt_st_read_buffer("w", buf, len, &w, &err), CTXRT_ERR_SYNTAX);
  ck_assert_str_eq(err.msg,
                   "w: error: header length 1000 is larger than the file (2 bytes "
                   "after the length)");
  free(buf);
  ck_assert_str_eq(
      st_err("{\"W\":", 0),
      "w: error: bad JSON header: unexpected token near end of file (header byte "
      "5)");
  ck_assert_str_eq(st_err("[1, 2]", 0), "w: error: bad header: expected a JSON object");
  ck_assert_str_eq(st_err("{\"W\":{" T23 ",\"data_offsets\":[0,24]},\"W\":{" T23
                          ",\"data_offsets\":[0,24]}}",
                          24),
                   "w: error: duplicate tensor 'W'");
  ck_assert_str_eq(
      st_err("{\"W\":{\"dtype\":\"I64\",\"shape\":[2,3],\"data_offsets\":[0,48]}}", 48),
      "w: error: tensor 'W' has dtype 'I64'; supported: F32, and F64, F16, BF16 "
      "(converted to F32)");
  ck_assert_str_eq(
      st_err("{\"W\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24),
      "w: error: tensor 'W': data_offsets [0, 24] hold 24 bytes, but shape [2, 3] of "
      "F16 needs 12");
  ck_assert_str_eq(st_err("{\"W\":{\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24),
                   "w: error: tensor 'W': missing 'dtype'");
  ck_assert_str_eq(st_err("{\"W\":5}", 0),
                   "w: error: tensor 'W': expected an object with "
                   "'dtype', 'shape' and 'data_offsets'");
  ck_assert_str_eq(
      st_err("{\"W\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,0]}}", 0),
      "w: error: tensor 'W': 'shape' must be a list of non-negative integers");
  ck_assert_str_eq(
      st_err("{\"W\":{\"dtype\":\"F32\",\"shape\":\"2x3\",\"data_offsets\":[0,0]}}", 0),
      "w: error: tensor 'W': 'shape' must be a list of non-negative integers");
  ck_assert_str_eq(st_err("{\"W\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                          "\"data_offsets\":[0,4]}}",
                          4),
                   "w: error: tensor 'W' has 9 dimensions, at most 8 are supported");
  ck_assert_str_eq(
      st_err("{\"W\":{" T23 ",\"data_offsets\":[24,0]}}", 24),
      "w: error: tensor 'W': 'data_offsets' must be [BEGIN, END] with 0 <= BEGIN "
      "<= END");
  ck_assert_str_eq(
      st_err("{\"W\":{" T23 ",\"data_offsets\":[0]}}", 24),
      "w: error: tensor 'W': 'data_offsets' must be [BEGIN, END] with 0 <= BEGIN "
      "<= END");
  ck_assert_str_eq(
      st_err("{\"W\":{" T23 ",\"data_offsets\":[0,20]}}", 24),
      "w: error: tensor 'W': data_offsets [0, 20] hold 20 bytes, but shape [2, 3] "
      "of F32 needs 24");
  ck_assert_str_eq(st_err("{\"W\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],"
                          "\"data_offsets\":[0,16]}}",
                          16),
                   "w: error: tensor 'W': the shape has too many elements");
}
END_TEST

START_TEST(test_truncated_and_overlap) {
  ck_assert_str_eq(
      st_err("{\"W\":{" T23 ",\"data_offsets\":[0,24]}}", 16),
      "w: error: truncated file: tensor 'W' ends at byte 24 of the data, but the "
      "file holds 16 bytes of data");
  ck_assert_str_eq(
      st_err("{\"A\":{" T23 ",\"data_offsets\":[0,24]},"
             "\"B\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[16,28]}}",
             28),
      "w: error: tensors 'A' and 'B' overlap (data_offsets [0, 24] and [16, 28])");
  ck_assert_str_eq(
      st_err("{\"B\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[16,28]},"
             "\"A\":{" T23 ",\"data_offsets\":[4,28]}}",
             28),
      "w: error: tensors 'A' and 'B' overlap (data_offsets [4, 28] and [16, 28])");
  /* metadata is ignored; empty tensors may sit anywhere; padding spaces are fine;
   * offsets need not start at 0 nor be in order */
  CtxrtWeights *w;
  char msg[CTXRT_MSG_SIZE];
  ck_assert_int_eq(
      st_try("{\"__metadata__\":{\"format\":\"pt\"},"
             "\"E\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[8,8]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]}}     ",
             20, &w, msg),
      CTXRT_OK);
  ck_assert_int_eq(w->count, 3);
  ck_assert_str_eq(w->tensors[0].name, "E");
  ck_assert_int_eq(w->tensors[0].numel, 0);
  uint32_t want = 0x07060504; /* bytes 4..7 of the data, little-endian */
  ck_assert_uint_eq(bits(ctxrt_weights_find(w, "a")->data[0]), want);
  ctxrt_weights_destroy(w);
}
END_TEST

START_TEST(test_check) {
  CtxrtWeights *w = make(1);
  CtxrtError err;
  CtxrtParam missing[] = {
      {"W", 2, {2, 3}}, {"b", 1, {3}}, {"s", 0, {0}}, {"U", 2, {4, 5}}};
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", missing, 4, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "m.st: error: missing tensor 'U' (shape [4, 5])");
  CtxrtParam shaped[] = {{"W", 2, {3, 2}}, {"b", 1, {3}}, {"s", 0, {0}}};
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", shaped, 3, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "m.st: error: tensor 'W' has shape [2, 3], expected [3, 2]");
  CtxrtParam scalar[] = {{"W", 2, {2, 3}}, {"b", 1, {3}}, {"s", 1, {1}}};
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", scalar, 3, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "m.st: error: tensor 's' has shape [], expected [1]");
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", params, 2, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg,
                   "m.st: error: extra tensor 's' (the model has no such parameter)");
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", params, 3, &err), CTXRT_OK);
  ctxrt_weights_destroy(w);
}
END_TEST

/* Weights must be finite: the first element that is not, at its index in
 * the tensor's shape. */
START_TEST(test_check_finite) {
  CtxrtWeights *w = make(1);
  CtxrtError err;
  float *W = (float *)ctxrt_weights_find(w, "W")->data;
  float *b = (float *)ctxrt_weights_find(w, "b")->data;
  W[4] = NAN;
  W[5] = INFINITY;
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", params, 3, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "m.st: error: tensor 'W' holds NaN at [1, 1]; weights must be "
                            "finite numbers");
  W[4] = 0.5f;
  b[0] = -INFINITY;
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", params, 3, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "m.st: error: tensor 'W' holds inf at [1, 2]; weights must be "
                            "finite numbers\n"
                            "m.st: error: tensor 'b' holds -inf at [0]; weights must be "
                            "finite numbers");
  W[5] = b[0] = 1.0f;
  *(float *)ctxrt_weights_find(w, "s")->data = NAN;
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", params, 3, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg, "m.st: error: tensor 's' holds NaN at []; weights must be finite "
                            "numbers");
  *(float *)ctxrt_weights_find(w, "s")->data = 0.0f;
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", params, 3, &err), CTXRT_OK);
  ctxrt_weights_destroy(w);
}
END_TEST

/* Bytes [data] of [n] after the header [json]. */
static CtxrtWeights *st_read_bytes(const char *json, const unsigned char *data, size_t n) {
  size_t len;
  unsigned char *buf = st_buf((size_t)-1, json, n, &len);
  memcpy(buf + len - n, data, n);
  CtxrtWeights *w;
  CtxrtError err;
  CtxrtStatus st = ctxrt_st_read_buffer("w", buf, len, &w, &err);
  free(buf);
  ck_assert_msg(st == CTXRT_OK, "%s", err.msg);
  return w;
}

START_TEST(test_converted_dtypes) {
  /* F64 1.5, -0.1; F16 1, -2, 2^-24 (subnormal), inf, 0x3555; BF16 1, -5 */
  static const unsigned char data[] = {
      0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0xbf,
      0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c, 0x55, 0x35, 0x80, 0x3f, 0xa0, 0xc0};
  CtxrtWeights *w = st_read_bytes(
      "{\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
      "\"h\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[16,26]},"
      "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[26,30]}}",
      data, sizeof data);
  const float *d = ctxrt_weights_find(w, "d")->data, *h = ctxrt_weights_find(w, "h")->data,
              *b = ctxrt_weights_find(w, "b")->data;
  ck_assert(d[0] == 1.5f && d[1] == (float)-0.1);
  ck_assert(h[0] == 1.0f && h[1] == -2.0f && h[2] == 0x1p-24f && h[3] > 3e38f);
  ck_assert(h[4] == 0.333251953125f);
  ck_assert(b[0] == 1.0f && b[1] == -5.0f);
  ck_assert_int_eq(w->num_converted, 3);
  ck_assert_uint_eq(w->converted,
                    CTXRT_CONVERTED_F64 | CTXRT_CONVERTED_F16 | CTXRT_CONVERTED_BF16);
  ctxrt_weights_destroy(w);
  w = st_read_bytes("{\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                    data + 26, 4);
  ck_assert_int_eq(w->num_converted, 0);
  ck_assert_uint_eq(w->converted, 0);
  ctxrt_weights_destroy(w);
}
END_TEST

/* Weights with tensors named [names] of the shapes [2, 3] ([n] of them). */
static CtxrtWeights *named(const char *const *names, int32_t n) {
  CtxrtParam ps[8];
  for (int32_t i = 0; i < n; i++) ps[i] = (CtxrtParam){names[i], 2, {2, 3}};
  CtxrtWeights *w;
  ck_assert_int_eq(ctxrt_weights_create(ps, n, &w, NULL), CTXRT_OK);
  return w;
}

START_TEST(test_check_every_problem) {
  static const char *const file[] = {"cell.U_iou.weight", "W", "junk", "b_F"};
  CtxrtWeights *w = named(file, 4);
  CtxrtParam model[] = {
      {"U_iou", 2, {2, 3}}, {"W", 2, {3, 3}}, {"b_f", 1, {3}}, {"Emb", 2, {9, 3}}};
  CtxrtError err;
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", model, 4, &err), CTXRT_ERR_INVALID);
  ck_assert_str_eq(err.msg,
                   "m.st: error: missing tensor 'U_iou' (shape [2, 3]); the file has "
                   "'cell.U_iou.weight' [2, 3]: rename it\n"
                   "m.st: error: tensor 'W' has shape [2, 3], expected [3, 3]\n"
                   "m.st: error: missing tensor 'b_f' (shape [3]); the file has 'b_F' "
                   "[2, 3]: rename it (and give it the model's shape)\n"
                   "m.st: error: missing tensor 'Emb' (shape [9, 3])\n"
                   "m.st: error: extra tensor 'junk' (the model has no such parameter)");
  int32_t match[4];
  ck_assert_int_eq(ctxrt_weights_match(w, model, 4, match), 2);
  ck_assert(match[0] == 0 && match[1] == 1 && match[2] == 3 && match[3] == -1);
  ctxrt_weights_destroy(w);
}
END_TEST

START_TEST(test_check_many_problems) {
  CtxrtParam model[40];
  char names[40][48];
  for (int i = 0; i < 40; i++) {
    snprintf(names[i], sizeof names[i], "a_parameter_with_a_long_name_number_%d", i);
    model[i] = (CtxrtParam){names[i], 1, {3}};
  }
  CtxrtWeights *w = named(NULL, 0);
  CtxrtError err;
  ck_assert_int_eq(ctxrt_weights_check(w, "m.st", model, 40, &err), CTXRT_ERR_INVALID);
  ck_assert(strlen(err.msg) < sizeof err.msg - 1);
  ck_assert_ptr_nonnull(strstr(err.msg, "number_0' (shape [3])\n"));
  const char *last = strrchr(err.msg, '\n') + 1;
  ck_assert_msg(strncmp(last, "m.st: error: ... and ", 21) == 0, "%s", last);
  int shown = 0;
  for (const char *p = err.msg; (p = strstr(p, "missing tensor")); p++) shown++;
  ck_assert_int_eq(shown + atoi(last + 21), 40);
  ctxrt_weights_destroy(w);
}
END_TEST

START_TEST(test_writer_refuses_duplicates) {
  CtxrtParam two[] = {{"A", 1, {1}}, {"B", 1, {1}}};
  CtxrtWeights *w;
  CtxrtError err;
  unsigned char *buf = (unsigned char *)&buf;
  size_t len;
  ck_assert_int_eq(ctxrt_weights_create(two, 2, &w, &err), CTXRT_OK);
  w->tensors[1].name[0] = 'A';
  ck_assert_int_eq(ctxrt_st_write_buffer(w, &buf, &len, &err), CTXRT_ERR_ARG);
  ck_assert_ptr_null(buf);
  ck_assert_str_eq(err.msg,
                   "error: cannot write a tensor named 'A' (duplicate or reserved)");
  ctxrt_weights_destroy(w);
}
END_TEST

static Suite *weights_suite(void) {
  Suite *s = suite_create("weights");
  TCase *tc = tcase_create("weights");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_init_golden);
  tcase_add_test(tc, test_init_f32_f64_agree);
  tcase_add_test(tc, test_create_and_init);
  tcase_add_test(tc, test_create_beyond_memory);
  tcase_add_test(tc, test_round_trip_buffer);
  tcase_add_test(tc, test_round_trip_file);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_truncated_and_overlap);
  tcase_add_test(tc, test_check);
  tcase_add_test(tc, test_check_finite);
  tcase_add_test(tc, test_writer_refuses_duplicates);
  tcase_add_test(tc, test_converted_dtypes);
  tcase_add_test(tc, test_check_every_problem);
  tcase_add_test(tc, test_check_many_problems);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(weights_suite());
}
