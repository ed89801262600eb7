/* test_ctxrt_model.c — compiled models (ctxrt_model_*) with a hand-written
 * kernel: res[n] = scale * value[n] + the sum of res over n's children, level
 * by level, absent children reading the zero row num_nodes. Hand-worked
 * outputs for roots and all nodes, batch after batch with buffer reuse,
 * seeded and file weights, and every error.
 */
#include "ctxrt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { B_LEVELS, B_NUM_DEPS, B_DEP, B_VALUES, B_SCALE, B_RES, NBUFS };
#define K 2

/* The kernel ABI (ctxrt.h): tid's contiguous share of each level, a barrier
 * after each level. Only tid 0 uses Check's asserts (they are not
 * thread-safe); the others abort on a broken invariant. */
static void sum_kernel(void *const *bufs, int64_t num_nodes, int64_t num_levels, int64_t tid,
                       int64_t nthreads, void (*barrier)(void *), void *barrier_ctx) {
  const int32_t *lv = bufs[B_LEVELS], *nd = bufs[B_NUM_DEPS], *dep = bufs[B_DEP];
  const float *val = bufs[B_VALUES], *scale = bufs[B_SCALE];
  float *res = bufs[B_RES];
  if (tid == 0) ck_assert_float_eq(res[num_nodes], 0.0f);
  for (int64_t l = 0; l < num_levels; l++) {
    int64_t chunk = (lv[l + 1] - lv[l] + nthreads - 1) / nthreads;
    int64_t lo = lv[l] + tid * chunk, hi = lo + chunk < lv[l + 1] ? lo + chunk : lv[l + 1];
    for (int64_t n = lo; n < hi; n++) {
      float r = scale[0] * val[n];
      for (int k = 0; k < K; k++) r += res[dep[n * K + k]];
      if (nd[n] > K) abort();
      res[n] = r;
    }
    if (nthreads > 1) barrier(barrier_ctx);
  }
}

static const CtxrtModelBuf bufs[NBUFS] = {
    {CTXRT_BUF_LEVELS, 0, -1, 0, 0, 0, 0, 0}, {CTXRT_BUF_NUM_DEPS, 0, -1, 0, 0, 0, 0, 0},
    {CTXRT_BUF_DEP, 0, -1, 0, 0, 0, 0, 0},    {CTXRT_BUF_VALUES, 1, -1, 0, 0, 0, 0, 0},
    {CTXRT_BUF_PARAM, 1, 0, 0, 0, 0, 0, 0},   {CTXRT_BUF_RESULT, 1, -1, 0, 0, 0, 0, 0}};
static const CtxrtParam params[] = {{"scale", 0, {0}}};
static const int64_t bound[] = {100};

static const CtxrtModelDesc desc = {
    "sum", sum_kernel, NBUFS, bufs, 1, params,
    {CTXRT_TREE, K, 0, 1, CTXRT_VALUES_LEAVES, bound}, K, B_RES, 0, 1, NULL, NULL, 0, 0, 0, 0, 0, 0};

static CtxrtWeights *scale_weights(float scale) {
  CtxrtWeights *w;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_weights_create(params, 1, &w, &err), CTXRT_OK);
  w->tensors[0].data[0] = scale;
  return w;
}

START_TEST(test_roots_and_all_nodes) {
  CtxrtWeights *w = scale_weights(2);
  CtxrtModel *m;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_model_create(&desc, w, &m, &err), CTXRT_OK);
  CtxrtForest *f = tu_ptb("(0 (1 3) (1 4))\n(0 5)\n");
  float out[8] = {0};
  ck_assert_int_eq(ctxrt_model_run(m, f, 0, out, &err), CTXRT_OK);
  ck_assert_float_eq(out[0], 14.0f);
  ck_assert_float_eq(out[1], 10.0f);
  ck_assert_int_eq(ctxrt_model_run(m, f, 1, out, &err), CTXRT_OK);
  const float all[] = {14, 6, 8, 10};
  for (int i = 0; i < 4; i++) ck_assert_float_eq(out[i], all[i]);
  int64_t rows = -1;
  ck_assert_ptr_null(ctxrt_model_outputs(m, &rows));
  ck_assert_int_eq(rows, 0);
  ctxrt_forest_destroy(f);
  /* a larger batch, then a smaller one: buffers grow, then are reused */
  const char *texts[] = {"(0 (0 (1 1) (1 2)) (0 (1 3) (1 4)))\n", "(0 9)\n"};
  const float want[] = {20, 18};
  for (int t = 0; t < 2; t++) {
    ck_assert_int_eq(ctxrt_model_run_text(m, "x", texts[t], strlen(texts[t]), 0, &err),
                     CTXRT_OK);
    const float *o = ctxrt_model_outputs(m, &rows);
    ck_assert_int_eq(rows, 1);
    ck_assert_float_eq(o[0], want[t]);
  }
  ctxrt_model_destroy(m);
  ctxrt_model_destroy(NULL);
  ctxrt_weights_destroy(w);
}
END_TEST

START_TEST(test_load) {
  CtxrtModel *m;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_model_load(&desc, NULL, 0, &m, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_model_run_text(m, "x", "(0 7)", 5, 0, &err), CTXRT_OK);
  int64_t rows;
  float seeded = ctxrt_model_outputs(m, &rows)[0];
  ck_assert(seeded != 0.0f && seeded > -0.71f && seeded < 0.71f);
  ctxrt_model_destroy(m);
  CtxrtWeights *w = scale_weights(3);
  ck_assert_int_eq(ctxrt_st_write_file(tu_path("w.safetensors"), w, &err), CTXRT_OK);
  ctxrt_weights_destroy(w);
  ck_assert_int_eq(ctxrt_model_load(&desc, tu_path("w.safetensors"), 0, &m, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_model_run_text(m, "x", "(0 7)", 5, 0, &err), CTXRT_OK);
  ck_assert_float_eq(ctxrt_model_outputs(m, &rows)[0], 21.0f);
  ctxrt_model_destroy(m);
}
END_TEST

START_TEST(test_errors) {
  CtxrtModel *m = (CtxrtModel *)1;
  CtxrtError err;
  CtxrtParam other[] = {{"other", 0, {0}}};
  CtxrtWeights *w;
  ck_assert_int_eq(ctxrt_weights_create(other, 1, &w, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_model_create(&desc, w, &m, &err), CTXRT_ERR_INVALID);
  ck_assert_ptr_null(m);
  ck_assert_str_eq(err.msg, "error: model 'sum': no parameter 'scale' in the weights");
  ctxrt_weights_destroy(w);
  ck_assert_int_eq(ctxrt_model_load(&desc, tu_path("none.safetensors"), 0, &m, &err),
                   CTXRT_ERR_IO);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(ctxrt_model_load(&desc, NULL, 0, &m, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_model_run_text(m, "x", "(0 (1 2)", 8, 0, &err), CTXRT_ERR_SYNTAX);
  ck_assert_int_eq(ctxrt_model_run_text(m, "x", "(0 100)", 7, 0, &err), CTXRT_ERR_INVALID);
  ck_assert_int_eq(ctxrt_model_run_text(m, "x", "(0 (1 1) (1 2) (1 3))", 21, 0, &err),
                   CTXRT_ERR_INVALID);
  int64_t rows = -1;
  ck_assert_ptr_null(ctxrt_model_outputs(m, &rows));
  ck_assert_int_eq(rows, 0);
  ctxrt_model_destroy(m);
}
END_TEST

/* Appends a complete binary tree of [depth] levels, leaf words 0..96, to
 * text[*at ..]. */
static void full_tree(char *text, size_t *at, int depth, int *word) {
  if (depth == 0) {
    *at += (size_t)sprintf(text + *at, "(1 %d)", (*word)++ % 97);
    return;
  }
  *at += (size_t)sprintf(text + *at, "(0 ");
  full_tree(text, at, depth - 1, word);
  text[(*at)++] = ' ';
  full_tree(text, at, depth - 1, word);
  *at += (size_t)sprintf(text + *at, ")");
}

/* The same outputs, bit for bit, on 1, 2, 3 and 4 threads (more threads than
 * nodes in the top levels), and back to 1, for every node of uneven trees;
 * runs back to back and after the team's workers fell asleep. */
START_TEST(test_threads) {
  CtxrtWeights *w = scale_weights(0.37f);
  CtxrtModel *m;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_model_create(&desc, w, &m, &err), CTXRT_OK);
  ck_assert_int_gt(ctxrt_model_threads(m), 0);
  ck_assert_int_eq(ctxrt_model_set_threads(m, -1, &err), CTXRT_ERR_ARG);
  static char text[1 << 16];
  size_t at = 0;
  int word = 1;
  for (int depth = 0; depth <= 9; depth += 3) {
    full_tree(text, &at, depth, &word);
    text[at++] = '\n';
  }
  text[at] = 0;
  CtxrtForest *f = tu_ptb(text);
  enum { MAXN = 1200 };
  ck_assert_int_le(f->num_nodes, MAXN);
  static float want[MAXN], got[MAXN];
  ck_assert_int_eq(ctxrt_model_set_threads(m, 1, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_model_threads(m), 1);
  ck_assert_int_eq(ctxrt_model_run(m, f, 1, want, &err), CTXRT_OK);
  const int32_t counts[] = {2, 4, 3, 1, 4};
  for (int c = 0; c < 5; c++) {
    ck_assert_int_eq(ctxrt_model_set_threads(m, counts[c], &err), CTXRT_OK);
    for (int rep = 0; rep < 6; rep++) {
      /* back to back (the workers still polling for the next run) and after
       * a pause of 2 ms (the workers asleep) */
      if (rep >= 3) nanosleep(&(struct timespec){0, 2000000}, NULL);
      memset(got, 0, sizeof got);
      ck_assert_int_eq(ctxrt_model_run(m, f, 1, got, &err), CTXRT_OK);
      ck_assert_mem_eq(got, want, (size_t)f->num_nodes * sizeof *got);
    }
  }
  ctxrt_forest_destroy(f);
  ctxrt_model_destroy(m);
  ctxrt_weights_destroy(w);
}
END_TEST

static Suite *model_suite(void) {
  Suite *s = suite_create("model");
  TCase *tc = tcase_create("model");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_roots_and_all_nodes);
  tcase_add_test(tc, test_load);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_threads);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(model_suite());
}
