/* test_ctxrt_cuda.c — the CUDA driver loader without a GPU (ctxrt_cuda.c):
 * a missing driver gives the documented message and CTXRT_ERR_DEVICE, the
 * toolkit's stub libcuda.so (every entry point present, every call
 * returning 34) resolves every symbol and reports the driver's error by
 * name, and a model with a CUDA kernel fails to be created the same way,
 * freeing what it made. Tests that need the stub are skipped (with a note)
 * where the toolkit is not installed; with a real driver present the
 * no-driver test uses a path that does not exist.
 */
#include "ctxrt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

START_TEST(test_no_driver) {
  CtxrtError err;
  int32_t n = 7;
  setenv("CTXRT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  ck_assert_int_eq(ctxrt_cuda_probe(&n, &err), CTXRT_ERR_DEVICE);
  ck_assert_int_eq(n, 0);
  ck_assert_str_eq(err.msg, "error: no CUDA driver (/nonexistent/libcuda.so.1 not found)");
  unsetenv("CTXRT_CUDA_DRIVER");
  if (ctxrt_cuda_probe(&n, &err) == CTXRT_ERR_DEVICE && strstr(err.msg, "not found"))
    ck_assert_str_eq(err.msg, "error: no CUDA driver (libcuda.so.1 not found)");
}
END_TEST

START_TEST(test_stub_driver) {
  if (access(STUB, R_OK) != 0) {
    fprintf(stderr, "note: %s absent (no CUDA toolkit): stub test skipped\n", STUB);
    return;
  }
  CtxrtError err;
  int32_t n = 7;
  setenv("CTXRT_CUDA_DRIVER", STUB, 1);
  ck_assert_int_eq(ctxrt_cuda_probe(&n, &err), CTXRT_ERR_DEVICE);
  unsetenv("CTXRT_CUDA_DRIVER");
  ck_assert_int_eq(n, 0);
  /* every symbol resolved (else "has no cu..."), cuInit reported by name */
  ck_assert_str_eq(err.msg, "error: CUDA driver: cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)");
}
END_TEST

/* A CUDA model (a PTX text that is never compiled: the driver fails first). */
static const CtxrtModelBuf bufs[2] = {{CTXRT_BUF_LEVELS, 0, -1, 0, 0, 0, 0, 0},
                                      {CTXRT_BUF_RESULT, 1, -1, 0, 0, 0, 0, 0}};
static const int64_t bound[] = {0};
static const CtxrtModelDesc desc = {
    "gpu", NULL, 2, bufs, 0, NULL, {CTXRT_TREE, 2, 0, 0, CTXRT_VALUES_LEAVES, bound},
    2, 1, 0, 1, ".version 7.8\n.target sm_90\n", "k", 256, 0, 0, 0, 0, 0};

START_TEST(test_model_without_gpu) {
  CtxrtError err;
  CtxrtModel *m = (CtxrtModel *)&err;
  setenv("CTXRT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  ck_assert_int_eq(ctxrt_model_load(&desc, NULL, 0, &m, &err), CTXRT_ERR_DEVICE);
  ck_assert_ptr_null(m);
  ck_assert_str_eq(err.msg, "error: no CUDA driver (/nonexistent/libcuda.so.1 not found)");
  if (access(STUB, R_OK) == 0) {
    setenv("CTXRT_CUDA_DRIVER", STUB, 1);
    ck_assert_int_eq(ctxrt_model_load(&desc, NULL, 0, &m, &err), CTXRT_ERR_DEVICE);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.msg, "error: CUDA driver: cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)");
  }
  unsetenv("CTXRT_CUDA_DRIVER");
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("cuda");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_no_driver);
  tcase_add_test(tc, test_stub_driver);
  tcase_add_test(tc, test_model_without_gpu);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(cuda_suite());
}
