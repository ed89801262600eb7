/* codegen_call_tests.c — unit tests of CgCall (codegen.h): a hand-built
 * one-node kernel wrapped in a C function of its own signature, called
 * directly through a C function pointer of that signature (ctx repl calls
 * the same functions through libffi). */
#include "codegen/codegen.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { N = 3 };

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  CtxSources srcs;
  CtxDiag diag;
  int p, s, levels, res;
} T;

static int buf(T *t, const char *name, IlirBufKind kind, long size) {
  IlirBuf *b = &t->k->bufs[t->k->nbufs];
  b->name = name;
  b->kind = kind;
  b->size = size;
  return t->k->nbufs++;
}

static IlirStmt *nodes_loop(T *t, IlirVar *n, IlirVar *l, IlirStmt **body, int nbody) {
  IlirBlock b = {CTX_NEW_ARRAY(t->a, IlirStmt *, nbody), nbody};
  memcpy(b.stmts, body, sizeof *body * (size_t)nbody);
  IlirStmt *s = ilir_loop(t->a, n, ilir_load(t->a, t->k, t->levels, ilir_var(t->a, l)),
                          ilir_load(t->a, t->k, t->levels,
                                    ilir_binary(t->a, ILIR_ADD, ilir_var(t->a, l),
                                                ilir_const_i(t->a, 1))),
                          ILIR_LOOP_NODES, b);
  return s;
}

/* Per node n: res[n, 0..N) = p[i] * s, res[n, N] = sum_i p[i] (two fields). */
static void build(T *t) {
  memset(t, 0, sizeof *t);
  t->a = ctx_arena_new();
  ctx_sources_init(&t->srcs);
  ctx_diag_init(&t->diag, &t->srcs, NULL);
  t->k = CTX_NEW(t->a, IlirKernel);
  t->k->name = "ctx_call_kernel";
  t->k->bufs = CTX_NEW_ARRAY(t->a, IlirBuf, 8);
  t->p = buf(t, "p", ILIR_BUF_PARAM, N);
  t->s = buf(t, "s", ILIR_BUF_PARAM, 1);
  t->levels = buf(t, "levels", ILIR_BUF_LEVELS, 1);
  t->res = buf(t, "f.result", ILIR_BUF_RESULT, N + 1);
  t->k->levels_buf = t->levels;
  CtxArena *a = t->a;
  IlirVar *l = ilir_new_var(a, t->k, "l"), *n = ilir_new_var(a, t->k, "n");
  IlirVar *i = ilir_new_var(a, t->k, "i"), *r = ilir_new_var(a, t->k, "r");
  IlirExpr *row = ilir_binary(a, ILIR_MUL, ilir_var(a, n), ilir_const_i(a, N + 1));
  IlirExpr *scaled = ilir_binary(a, ILIR_MUL, ilir_load(a, t->k, t->p, ilir_var(a, i)),
                                 ilir_load(a, t->k, t->s, ilir_const_i(a, 0)));
  IlirStmt *st = ilir_store(a, t->res, ilir_binary(a, ILIR_ADD, row, ilir_var(a, i)), scaled);
  IlirBlock one = {CTX_NEW_ARRAY(a, IlirStmt *, 1), 1};
  one.stmts[0] = st;
  IlirStmt *lanes = ilir_loop(a, i, ilir_const_i(a, 0), ilir_const_i(a, N), ILIR_LOOP_SERIAL, one);
  IlirExpr *sum = ilir_reduce(a, ILIR_SUM, r, ilir_const_i(a, 0), ilir_const_i(a, N),
                              ilir_load(a, t->k, t->p, ilir_var(a, r)));
  IlirStmt *total = ilir_store(a, t->res, ilir_binary(a, ILIR_ADD, row, ilir_const_i(a, N)), sum);
  IlirStmt *body[2] = {lanes, total};
  IlirStmt *nl = nodes_loop(t, n, l, body, 2);
  IlirBlock lb = {CTX_NEW_ARRAY(a, IlirStmt *, 1), 1};
  lb.stmts[0] = nl;
  IlirStmt *levels = ilir_loop(a, l, ilir_const_i(a, 0), ilir_arg(a, 1), ILIR_LOOP_LEVELS, lb);
  t->k->body.stmts = CTX_NEW_ARRAY(a, IlirStmt *, 1);
  t->k->body.stmts[0] = levels;
  t->k->body.n = 1;
  t->k->out_buf = t->res;
  t->k->out_size = N;
}

static void done(T *t) {
  ctx_sources_free(&t->srcs);
  ctx_arena_free(t->a);
}

/* float f(const float *p, float s, float *out): out = p * s, returns sum(p) */
START_TEST(pointer_scalar_and_return) {
  T t;
  build(&t);
  CgArgKind args[3] = {CG_ARG_PTR, CG_ARG_F32, CG_ARG_PTR};
  int buf_arg[4] = {0, 1, -1, -1};
  long off[2] = {0, N}, size[2] = {N, 1};
  int res_arg[2] = {2, -1};
  CgCall call = {"ctx_call_test", 3, args, buf_arg, 2, off, size, res_arg};
  CgJitOptions o = {.call = &call, .fast_isel = true};
  CgJit *jit = cg_jit_compile_with(t.k, &o, &t.diag);
  ck_assert_ptr_nonnull(jit);
  ck_assert_int_eq(t.diag.errors + t.diag.ice, 0);
  float (*fn)(const float *, float, float *) =
      (float (*)(const float *, float, float *))(uintptr_t)cg_jit_call_entry(jit);
  float p[N] = {1.5f, -2.0f, 0.25f}, out[N] = {0};
  float total = fn(p, 2.0f, out);
  for (int i = 0; i < N; i++) ck_assert_float_eq(out[i], p[i] * 2.0f);
  ck_assert(fabsf(total - (1.5f - 2.0f + 0.25f)) < 1e-6f);
  total = fn(p, -1.0f, out); /* again: the made buffers start zeroed each call */
  ck_assert_float_eq(out[2], -0.25f);
  ck_assert(fabsf(total + 0.25f) < 1e-6f);
  cg_jit_free(jit);
  done(&t);
}
END_TEST

/* void f(const float *p, const float *s, float *a, float *b): both fields out */
START_TEST(two_outputs) {
  T t;
  build(&t);
  CgArgKind args[4] = {CG_ARG_PTR, CG_ARG_PTR, CG_ARG_PTR, CG_ARG_PTR};
  int buf_arg[4] = {0, 1, -1, -1};
  long off[2] = {0, N}, size[2] = {N, 1};
  int res_arg[2] = {2, 3};
  CgCall call = {"ctx_call_test2", 4, args, buf_arg, 2, off, size, res_arg};
  CgJitOptions o = {.passes = "default<O1>", .call = &call};
  CgJit *jit = cg_jit_compile_with(t.k, &o, &t.diag);
  ck_assert_ptr_nonnull(jit);
  void (*fn)(const float *, const float *, float *, float *) =
      (void (*)(const float *, const float *, float *, float *))(uintptr_t)cg_jit_call_entry(jit);
  float p[N] = {1, 2, 3}, s = 0.5f, a[N] = {0}, b = 0;
  fn(p, &s, a, &b);
  ck_assert_float_eq(a[1], 1.0f);
  ck_assert_float_eq(b, 6.0f);
  cg_jit_free(jit);
  done(&t);
}
END_TEST

/* A PACKED buffer cannot be made by the call: an internal error, no JIT. */
START_TEST(packed_is_ice) {
  T t;
  build(&t);
  buf(&t, "packed", ILIR_BUF_PACKED, 4);
  CgArgKind args[3] = {CG_ARG_PTR, CG_ARG_F32, CG_ARG_PTR};
  int buf_arg[5] = {0, 1, -1, -1, -1};
  long off[1] = {0}, size[1] = {N};
  int res_arg[1] = {2};
  CgCall call = {"ctx_call_test3", 3, args, buf_arg, 1, off, size, res_arg};
  CgJitOptions o = {.call = &call, .fast_isel = true};
  ck_assert_ptr_null(cg_jit_compile_with(t.k, &o, &t.diag));
  ck_assert(t.diag.ice);
  done(&t);
}
END_TEST

static Suite *call_suite(void) {
  Suite *s = suite_create("codegen_call");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, pointer_scalar_and_return);
  tcase_add_test(tc, two_outputs);
  tcase_add_test(tc, packed_is_ice);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(call_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
