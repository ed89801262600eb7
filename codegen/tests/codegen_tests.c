/* codegen_tests.c — unit tests of the CPU backend: ILIR kernels built by hand
 * (structs filled in directly, in an arena), JIT-compiled and run on small
 * linearized batches; their results are compared with values computed here
 * in C. Also the text outputs (LLVM IR, assembly) and internal errors. The
 * register tiles are tested in codegen_tile_tests.c; the builders and the
 * team of threads both files use are in cg_test_kernels.h. */
#include "cg_test_kernels.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- building kernels (the rest in cg_test_kernels.h) ------------------------ */

static IlirExpr *sel(T *t, IlirExpr *c, IlirExpr *x, IlirExpr *y) {
  return ilir_select(t->a, c, x, y);
}

static IlirStmt *ifs(T *t, IlirExpr *c, IlirStmt *then, IlirStmt *els) {
  IlirStmt *s = CTX_NEW(t->a, IlirStmt);
  s->kind = ILIR_IF;
  s->cond = c;
  s->then = block(t, 1, &then);
  s->els = block(t, 1, &els);
  return s;
}

/* ---- a chain: result[n, i] = tanh(sum_k result[dep(n, k), i] + p[i]) ------- */

enum { H = 4 };

static void chain_kernel(T *t) {
  int p = buf(t, "p", ILIR_BUF_PARAM, H);
  int dep = buf(t, "dep", ILIR_BUF_DEP, 1);
  int nd = buf(t, "num_deps", ILIR_BUF_NUM_DEPS, 1);
  int lv = buf(t, "levels", ILIR_BUF_LEVELS, 1);
  int res = buf(t, "f.result", ILIR_BUF_RESULT, H);
  IlirVar *n = var(t, "n"), *i = var(t, "i"), *k = var(t, "k");
  IlirExpr *child = ld(t, dep, bin(t, ILIR_ADD, vr(t, n), vr(t, k)));
  IlirExpr *sum = red(t, ILIR_SUM, k, ci(t, 0), ld(t, nd, vr(t, n)),
                      ld(t, res, bin(t, ILIR_ADD, bin(t, ILIR_MUL, child, ci(t, H)), vr(t, i))));
  IlirExpr *val = un(t, ILIR_TANH, bin(t, ILIR_ADD, sum, ld(t, p, vr(t, i))));
  IlirStmt *st = store(t, res, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, H)), vr(t, i)), val);
  levels_around(t, lv, n, loop(t, i, ci(t, 0), ci(t, H), st));
}

/* Runs the chain kernel on nodes 0 (leaf) <- 1 <- 2 (root) and checks it. */
static void check_chain(CgKernelFn fn) {
  /* node 3 is the absent dependency */
  float p[H] = {0.1f, -0.2f, 0.3f, 0.5f};
  int32_t dep[3] = {3, 0, 1}, nd[3] = {0, 1, 1}, lv[4] = {0, 1, 2, 3};
  float res[4 * H] = {0};
  void *bufs[] = {p, dep, nd, lv, res};
  fn(bufs, 3, 3, 0, 1, NULL, NULL);
  double want[H] = {0};
  for (int node = 0; node < 3; node++)
    for (int i = 0; i < H; i++) {
      want[i] = tanh(want[i] * (node > 0) + p[i]);
      ck_assert_msg(close_to(res[node * H + i], want[i]), "node %d lane %d: %g vs %g", node,
                    i, res[node * H + i], want[i]);
    }
  for (int i = 0; i < H; i++) ck_assert(res[3 * H + i] == 0);
}

START_TEST(chain_three_levels) {
  T t;
  t_init(&t, "ctx_chain_kernel");
  chain_kernel(&t);
  CgJit *jit;
  check_chain(compile(&t, &jit));
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* ---- the kernel cache (cg_cache.c) ------------------------------------------- */

/* The chain kernel compiled with the kernel cache in [dir] and [passes]
 * (NULL: the default), checked; returns whether it came from the cache. */
static bool cached_chain_with(const char *dir, const char *passes, bool fast_isel) {
  T t;
  t_init(&t, "ctx_chain_kernel");
  chain_kernel(&t);
  CgJitOptions o = {.cache_dir = dir, .passes = passes, .fast_isel = fast_isel};
  CgJit *jit = cg_jit_compile_with(t.k, &o, &t.diag);
  ck_assert_ptr_nonnull(jit);
  ck_assert_int_eq(t.diag.errors + t.diag.ice, 0);
  check_chain(cg_jit_kernel(jit));
  bool cached = cg_jit_cached(jit);
  cg_jit_free(jit);
  t_done(&t);
  return cached;
}

static bool cached_chain(const char *dir, const char *passes) {
  return cached_chain_with(dir, passes, false);
}

/* The entries (*.kernel files) in [dir], the last one's path in [last]. */
static int cache_entries(const char *dir, char *last, size_t n) {
  DIR *d = opendir(dir);
  int count = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".kernel") && !strchr(strstr(e->d_name, ".kernel") + 1, '.')) {
      count++;
      if (last) snprintf(last, n, "%s/%s", dir, e->d_name);
    }
  if (d) closedir(d);
  return count;
}

static char *temp_dir(char *buf, size_t n) {
  snprintf(buf, n, "%s/ctx-cache-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(buf));
  return buf;
}

static void remove_dir(const char *dir) {
  char path[4096];
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  if (d) closedir(d);
  rmdir(dir);
}

START_TEST(kernel_cache_hit) {
  char base[256], dir[300];
  temp_dir(base, sizeof base);
  snprintf(dir, sizeof dir, "%s/a/b", base); /* made on the first store */
  ck_assert(!cached_chain(dir, NULL));
  ck_assert_int_eq(cache_entries(dir, NULL, 0), 1);
  ck_assert(cached_chain(dir, NULL));
  ck_assert(cached_chain(dir, NULL));
  ck_assert_int_eq(cache_entries(dir, NULL, 0), 1);
  /* another pass pipeline is another kernel */
  ck_assert(!cached_chain(dir, "default<O1>"));
  ck_assert(cached_chain(dir, "default<O1>"));
  ck_assert_int_eq(cache_entries(dir, NULL, 0), 2);
  /* and another code generator's level (the REPL's fast instruction
   * selection) another object */
  ck_assert(!cached_chain_with(dir, NULL, true));
  ck_assert(cached_chain_with(dir, NULL, true));
  ck_assert(cached_chain(dir, NULL));
  ck_assert_int_eq(cache_entries(dir, NULL, 0), 3);
  remove_dir(dir);
  snprintf(dir, sizeof dir, "%s/a", base);
  rmdir(dir);
  rmdir(base);
}
END_TEST

/* A damaged entry (its object's bytes, or its key) is a miss, and the
 * compiled kernel replaces it. */
START_TEST(kernel_cache_damaged) {
  char dir[256], entry[4096];
  temp_dir(dir, sizeof dir);
  ck_assert(!cached_chain(dir, NULL));
  ck_assert_int_eq(cache_entries(dir, entry, sizeof entry), 1);
  FILE *f = fopen(entry, "r+b");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, -64, SEEK_END), 0);
  for (int i = 0; i < 16; i++) fputc(0xcc, f);
  fclose(f);
  ck_assert(!cached_chain(dir, NULL));
  ck_assert(cached_chain(dir, NULL));
  f = fopen(entry, "r+b"); /* the key's first line */
  ck_assert_ptr_nonnull(f);
  fputc('X', f);
  fclose(f);
  ck_assert(!cached_chain(dir, NULL));
  ck_assert(cached_chain(dir, NULL));
  f = fopen(entry, "wb"); /* empty */
  fclose(f);
  ck_assert(!cached_chain(dir, NULL));
  ck_assert(cached_chain(dir, NULL));
  ck_assert_int_eq(cache_entries(dir, NULL, 0), 1);
  remove_dir(dir);
}
END_TEST

/* CTX_CACHE_MAX_MB bounds the directory: at 0 nothing is kept; a directory
 * that cannot be made is no cache, not an error. */
START_TEST(kernel_cache_limits) {
  char dir[256];
  temp_dir(dir, sizeof dir);
  setenv("CTX_CACHE_MAX_MB", "0", 1);
  ck_assert(!cached_chain(dir, NULL));
  ck_assert_int_eq(cache_entries(dir, NULL, 0), 0);
  ck_assert(!cached_chain(dir, NULL));
  unsetenv("CTX_CACHE_MAX_MB");
  ck_assert(!cached_chain("/proc/self/no-such-dir", NULL));
  ck_assert(!cached_chain("/proc/self/no-such-dir", NULL));
  remove_dir(dir);
}
END_TEST

/* ---- reductions, selects and the unary functions, per node -------------------- */

START_TEST(max_select_unary) {
  T t;
  t_init(&t, "ctx_misc_kernel");
  int val = buf(&t, "values", ILIR_BUF_VALUES, 4);
  int ival = buf(&t, "ivalues", ILIR_BUF_IVALUES, 4);
  int lv = buf(&t, "levels", ILIR_BUF_LEVELS, 1);
  int res = buf(&t, "f.result", ILIR_BUF_RESULT, 8);
  IlirVar *n = var(&t, "n"), *j = var(&t, "j");
  IlirExpr *row = bin(&t, ILIR_MUL, vr(&t, n), ci(&t, 4));
  IlirExpr *v0 = ld(&t, val, row);
  IlirExpr *mx = red(&t, ILIR_MAXR, j, ci(&t, 0), ci(&t, 4),
                     ld(&t, val, bin(&t, ILIR_ADD, row, vr(&t, j))));
  /* the arm not taken reads far out of bounds: it must not be evaluated */
  IlirExpr *far = ld(&t, val, ci(&t, 1L << 40));
  IlirExpr *pick = sel(&t, bin(&t, ILIR_GT, ld(&t, ival, row), ci(&t, 2)),
                       un(&t, ILIR_SIGMOID, v0), sel(&t, ci(&t, 0), far, un(&t, ILIR_NEG, v0)));
  IlirExpr *outs[8] = {mx, pick, un(&t, ILIR_RELU, v0), un(&t, ILIR_EXP, v0),
                       un(&t, ILIR_LOG, un(&t, ILIR_ABS, v0)), un(&t, ILIR_SQRT, un(&t, ILIR_ABS, v0)),
                       red(&t, ILIR_SUM, var(&t, "e"), ci(&t, 0), ci(&t, 0), cf(&t, 1)),
                       bin(&t, ILIR_DIV,
                           ilir_to_f32(t.a, bin(&t, ILIR_AND, ld(&t, ival, row),
                                                un(&t, ILIR_NOT, vr(&t, n)))),
                           cf(&t, 2))};
  IlirStmt *st[8];
  for (int o = 0; o < 8; o++)
    st[o] = store(&t, res, bin(&t, ILIR_ADD, bin(&t, ILIR_MUL, vr(&t, n), ci(&t, 8)), ci(&t, o)),
                  outs[o]);
  IlirStmt *body = loop(&t, var(&t, "unused"), ci(&t, 0), ci(&t, 1), st[0]);
  body->body = block(&t, 8, st);
  levels_around(&t, lv, n, body);
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  float v[3 * 4] = {0.5f, 2, -1, 0.25f, -0.75f, -3, -2, -4, 1.5f, 0, 0, 0};
  int32_t iv[3 * 4] = {3, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0};
  int32_t lvl[2] = {0, 3};
  float r[4 * 8] = {0};
  void *bufs[] = {v, iv, lvl, r};
  fn(bufs, 3, 1, 0, 1, NULL, NULL);
  for (int node = 0; node < 3; node++) {
    double x = v[node * 4], m = -INFINITY;
    for (int q = 0; q < 4; q++) m = v[node * 4 + q] > m ? v[node * 4 + q] : m;
    double want[8] = {m, iv[node * 4] > 2 ? 1 / (1 + exp(-x)) : -x, x > 0 ? x : 0, exp(x),
                      log(fabs(x)), sqrt(fabs(x)), 0, (iv[node * 4] != 0 && node == 0) / 2.0};
    for (int o = 0; o < 8; o++)
      ck_assert_msg(close_to(r[node * 8 + o], want[o]), "node %d out %d: %g vs %g", node, o,
                    r[node * 8 + o], want[o]);
  }
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* ---- a gather: result[n, i] = emb[words[n], i], the next node's row prefetched -- */

enum { GW = 40, GV = 50 };

/* result[n * GW + i] = emb[words[m] * GW + i], m = dep[n] when [through_dep]
 * (a dep buffer after ivalues), else n; whether the IR prefetches a row. */
static bool gather_kernel(T *t, bool through_dep) {
  int emb = buf(t, "emb", ILIR_BUF_PARAM, (long)GV * GW);
  int ival = buf(t, "ivalues", ILIR_BUF_IVALUES, 1);
  int dep = through_dep ? buf(t, "dep", ILIR_BUF_DEP, 1) : -1;
  int lv = buf(t, "levels", ILIR_BUF_LEVELS, 1);
  int res = buf(t, "f.result", ILIR_BUF_RESULT, GW);
  IlirVar *n = var(t, "n"), *i = var(t, "i");
  IlirExpr *m = through_dep ? ld(t, dep, vr(t, n)) : vr(t, n);
  IlirExpr *row = bin(t, ILIR_MUL, ld(t, ival, m), ci(t, GW));
  IlirStmt *st = store(t, res, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, GW)), vr(t, i)),
                       ld(t, emb, bin(t, ILIR_ADD, row, vr(t, i))));
  levels_around(t, lv, n, loop(t, i, ci(t, 0), ci(t, GW), st));
  CtxBuf ir;
  ctx_buf_init(&ir);
  ck_assert(cg_emit_llvm(&ir, t->k, NULL, &t->diag));
  bool prefetches = strstr(ctx_buf_str(&ir), "@llvm.prefetch") != NULL;
  ctx_buf_free(&ir);
  return prefetches;
}

START_TEST(gathered_rows_prefetched) {
  T t;
  t_init(&t, "ctx_gather_kernel");
  ck_assert(gather_kernel(&t, false));
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  static float e[GV * GW], r[4 * GW];
  for (int k = 0; k < GV * GW; k++) e[k] = (float)k;
  /* the row past the last node (ivalues has one) may name any row at all:
   * a prefetch of it must not fault */
  int32_t iv[4] = {3, 49, 0, 1 << 30};
  int32_t lvl[2] = {0, 3};
  void *bufs[] = {e, iv, lvl, r};
  fn(bufs, 3, 1, 0, 1, NULL, NULL);
  for (int node = 0; node < 3; node++)
    for (int k = 0; k < GW; k++) ck_assert_float_eq(r[node * GW + k], e[iv[node] * GW + k]);
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* A row chosen through a dependency (emb[words[dep[n]]]) is not prefetched:
 * dep has no row past the last node, so dep[n + 1] would read past its end. */
START_TEST(rows_through_deps_not_prefetched) {
  T t;
  t_init(&t, "ctx_gather_dep_kernel");
  ck_assert(!gather_kernel(&t, true));
  t_done(&t);
}
END_TEST

/* ---- a node's gate loop: sigmoid over 256 floats, 4 vectors an iteration ------ */

/* result[n * 256 + i] = op(values[n * 256 + i]); the step of its
 * vector loop in the optimized IR, in floats (0: none found). */
static long gate_loop_step(int op) {
  T t;
  t_init(&t, "ctx_gate_kernel");
  enum { W = 256 };
  int val = buf(&t, "values", ILIR_BUF_VALUES, W);
  int lv = buf(&t, "levels", ILIR_BUF_LEVELS, 1);
  int res = buf(&t, "f.result", ILIR_BUF_RESULT, W);
  IlirVar *n = var(&t, "n"), *i = var(&t, "i");
  IlirExpr *at = bin(&t, ILIR_ADD, bin(&t, ILIR_MUL, vr(&t, n), ci(&t, W)), vr(&t, i));
  IlirExpr *x = ld(&t, val, at);
  IlirStmt *st = store(&t, res, at, un(&t, op, x));
  levels_around(&t, lv, n, loop(&t, i, ci(&t, 0), ci(&t, W), st));
  CtxBuf ir;
  ctx_buf_init(&ir);
  ck_assert(cg_emit_llvm(&ir, t.k, NULL, &t.diag));
  const char *step = strstr(ctx_buf_str(&ir), "= add nuw i64 %index, ");
  long floats = step ? strtol(step + strlen("= add nuw i64 %index, "), NULL, 10) : 0;
  ctx_buf_free(&ir);
  t_done(&t);
  return floats;
}

/* A loop of sigmoids or tanhs runs 4 host vectors an iteration (cg_emit.c,
 * interleave_count; LLVM's own choice for them is 1). */
START_TEST(gate_loops_interleaved) {
  int vl, regs;
  cg_cpu_vectors(NULL, &vl, &regs);
  ck_assert_int_eq(gate_loop_step(ILIR_SIGMOID), 4 * vl);
  ck_assert_int_eq(gate_loop_step(ILIR_TANH), 4 * vl);
}
END_TEST

/* ---- if on num_deps: leaves take their value, others twice their child's ---- */

START_TEST(if_on_num_deps) {
  T t;
  t_init(&t, "ctx_if_kernel");
  int val = buf(&t, "values", ILIR_BUF_VALUES, 1);
  int dep = buf(&t, "dep", ILIR_BUF_DEP, 2);
  int nd = buf(&t, "num_deps", ILIR_BUF_NUM_DEPS, 1);
  int lv = buf(&t, "levels", ILIR_BUF_LEVELS, 1);
  int res = buf(&t, "f.result", ILIR_BUF_RESULT, 1);
  IlirVar *n = var(&t, "n"), *k = var(&t, "k");
  IlirExpr *kids = red(&t, ILIR_SUM, k, ci(&t, 0), ci(&t, 2),
                       ld(&t, res, ld(&t, dep, bin(&t, ILIR_ADD, bin(&t, ILIR_MUL, vr(&t, n), ci(&t, 2)), vr(&t, k)))));
  IlirStmt *st = ifs(&t, bin(&t, ILIR_EQ, ld(&t, nd, vr(&t, n)), ci(&t, 0)),
                     store(&t, res, vr(&t, n), ld(&t, val, vr(&t, n))),
                     store(&t, res, vr(&t, n), bin(&t, ILIR_MUL, kids, cf(&t, 2))));
  levels_around(&t, lv, n, st);
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  /* leaves 0, 1, 2; node 3 = (0, 1); node 4 = (3, 2); node 5 is absent */
  float v[6] = {1, 2, 3, 0, 0, 0};
  int32_t dp[10] = {5, 5, 5, 5, 5, 5, 0, 1, 3, 2}, ndp[5] = {0, 0, 0, 2, 2};
  int32_t lvl[4] = {0, 3, 4, 5};
  float r[6] = {0};
  void *bufs[] = {v, dp, ndp, lvl, r};
  fn(bufs, 5, 3, 0, 1, NULL, NULL);
  float want[6] = {1, 2, 3, 6, 18, 0};
  for (int i = 0; i < 6; i++) ck_assert_msg(r[i] == want[i], "node %d: %g", i, r[i]);
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* ---- threads: the chain kernel on a team, bit for bit ----------------------- */

static void run_team(CgKernelFn fn, void **bufs, int nthreads) {
  run_team_nodes(fn, bufs, nthreads, NN);
}

/* Levels of 20, 1, 1, 11, 5, 1, 3, 2, 1 nodes (fewer than threads at the top;
 * runs of single-node levels, between which there is no barrier), each
 * node's one dependency in the level below; 1, 2, 3 and 4 threads agree. */
START_TEST(threads_agree) {
  T t;
  t_init(&t, "ctx_chain_kernel");
  chain_kernel(&t);
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  static const int32_t sizes[LV] = {20, 1, 1, 11, 5, 1, 3, 2, 1};
  float p[H] = {0.1f, -0.2f, 0.3f, 0.5f};
  int32_t dep[NN], nd[NN], lv[LV + 1] = {0};
  for (int l = 0; l < LV; l++) lv[l + 1] = lv[l] + sizes[l];
  for (int l = 0; l < LV; l++)
    for (int n = lv[l]; n < lv[l + 1]; n++) {
      nd[n] = l > 0;
      dep[n] = l > 0 ? lv[l - 1] + (n * 7) % sizes[l - 1] : NN;
    }
  static float want[(NN + 1) * H], res[(NN + 1) * H];
  void *bufs[] = {p, dep, nd, lv, want};
  fn(bufs, NN, LV, 0, 1, NULL, NULL);
  bufs[4] = res;
  for (int nt = 1; nt <= MAXT; nt++) {
    memset(res, 0, sizeof res);
    atomic_store(&barrier_calls, 0);
    run_team(fn, bufs, nt);
    ck_assert_mem_eq(res, want, sizeof res);
    /* after every level but 1 (followed by a single node) and 8 (the last) */
    ck_assert_int_eq(atomic_load(&barrier_calls), nt > 1 ? nt * 7 : 0);
  }
  ck_assert(want[(NN - 1) * H] != 0);
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* ---- the inline exp, tanh and sigmoid (cg_math.c) against libm --------------- */

enum { NM = 8000 };

START_TEST(vector_math_accuracy) {
  T t;
  t_init(&t, "ctx_math_kernel");
  int in = buf(&t, "x", ILIR_BUF_SCRATCH, 1);
  int out[3];
  static const int ops[3] = {ILIR_EXP, ILIR_TANH, ILIR_SIGMOID};
  IlirStmt *st[3];
  IlirVar *n = var(&t, "n");
  for (int o = 0; o < 3; o++) {
    out[o] = buf(&t, "y", ILIR_BUF_RESULT, 1);
    st[o] = store(&t, out[o], vr(&t, n), un(&t, ops[o], ld(&t, in, vr(&t, n))));
  }
  IlirStmt *body = ilir_loop(t.a, n, ci(&t, 0), arg(&t, 0), ILIR_LOOP_SERIAL, block(&t, 3, st));
  t.k->body = block(&t, 1, &body);
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  static float x[NM + 1], y[3][NM + 1];
  int m = 0;
  static const float special[] = {0.0f, -0.0f, 1e-30f, -1e-8f, 1e-3f, 0.0624f, 0.0626f,
                                  -0.0626f, 88.0f, 88.7f, 88.8f, -87.0f, -87.5f, -104.5f,
                                  INFINITY, -INFINITY, NAN};
  for (size_t k = 0; k < sizeof special / sizeof special[0]; k++) x[m++] = special[k];
  while (m < NM / 2) x[m] = -110.0f + 440.0f * (float)m / NM, m++;
  /* and [-2, 2], densest near 0, where tanh's relative precision is at stake */
  for (int k = 0; m < NM; k++, m++) {
    float u = 2.0f * (float)k / (NM / 2) - 1.0f;
    x[m] = 2.0f * u * u * u;
  }
  void *bufs[] = {x, y[0], y[1], y[2]};
  fn(bufs, NM, 0, 0, 1, NULL, NULL);
  for (int k = 0; k < NM; k++) {
    double v = x[k], e = exp(v), th = tanh(v), sg = 1 / (1 + exp(-v));
    if (isnan(v)) {
      ck_assert(isnan(y[0][k]) && isnan(y[1][k]) && isnan(y[2][k]));
      continue;
    }
    if (v > 88.72283935546875) ck_assert(isinf(y[0][k]) && y[0][k] > 0);
    else if (v < -104) ck_assert_float_eq(y[0][k], 0);
    else ck_assert_msg(fabs(y[0][k] - e) <= 3e-7 * e + 2e-45, "exp(%.9g) = %.9g", v,
                       (double)y[0][k]); /* denormals: absolute */
    double tol = fabs(v) < 0.0625 ? 1e-6 * fabs(th) : 2e-7;
    ck_assert_msg(fabs(y[1][k] - th) <= tol, "tanh(%.9g) = %.9g", v, (double)y[1][k]);
    /* below -87.33 the sigmoid is under FLT_MIN and may be flushed to 0
     * (vrcpps, AVX2's reciprocal estimate, flushes denormal results) */
    double stol = 3e-7 * sg + (v < -87.33 ? 1.2e-38 : 2e-45);
    ck_assert_msg(fabs(y[2][k] - sg) <= stol, "sigmoid(%.9g) = %.9g", v, (double)y[2][k]);
  }
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* ---- text and errors ------------------------------------------------------------ */

START_TEST(llvm_and_asm_text) {
  T t;
  t_init(&t, "ctx_chain_kernel");
  chain_kernel(&t);
  CtxBuf ir, as;
  ctx_buf_init(&ir);
  ctx_buf_init(&as);
  ck_assert(cg_emit_llvm(&ir, t.k, NULL, &t.diag));
  ck_assert_ptr_nonnull(strstr(ctx_buf_str(&ir), "define void @ctx_chain_kernel(ptr"));
  ck_assert_ptr_null(strstr(ctx_buf_str(&ir), "tanhf")); /* inline (cg_math.c) */
  ctx_buf_free(&ir);
  ctx_buf_init(&ir);
  t.k->disabled = RA_OPT_VECTOR_MATH;
  ck_assert(cg_emit_llvm(&ir, t.k, NULL, &t.diag));
  ck_assert_ptr_nonnull(strstr(ctx_buf_str(&ir), "tanhf"));
  ck_assert(cg_emit_asm(&as, t.k, NULL, &t.diag));
  ck_assert_ptr_nonnull(strstr(ctx_buf_str(&as), "ctx_chain_kernel:"));
  ck_assert_int_eq(t.diag.ice, 0);
  ctx_buf_free(&ir);
  ctx_buf_free(&as);
  t_done(&t);
}
END_TEST

START_TEST(bad_kernel_is_ice) {
  T t;
  t_init(&t, "ctx_bad_kernel");
  int res = buf(&t, "f.result", ILIR_BUF_RESULT, 1);
  IlirVar *n = var(&t, "n");
  IlirStmt *st = store(&t, res, vr(&t, n), ld(&t, 7, ci(&t, 0))); /* no buffer 7 */
  t.k->body = block(&t, 1, &st);
  IlirStmt *l = loop(&t, n, ci(&t, 0), arg(&t, 0), st);
  t.k->body = block(&t, 1, &l);
  ck_assert_ptr_null(cg_jit_compile(t.k, &t.diag));
  ck_assert(t.diag.ice);
  t_done(&t);
}
END_TEST

/* ---- bounds inference (ilir_check_bounds through ilir_verify) --------------------- */

/* for n in nodes [0, num_nodes) { for i in [0, 4) { res[n * rs + i] = p[i + shift] } },
 * the store's row at dep[n] instead of n when [at_dep], the outer loop serial
 * when [serial]: does ilir_verify accept it? */
static bool bounds_ok(long rs, long shift, bool at_dep, bool serial) {
  T t;
  t_init(&t, "ctx_bounds_kernel");
  int p = buf(&t, "p", ILIR_BUF_PARAM, 4), dep = buf(&t, "dep", ILIR_BUF_DEP, 1);
  int res = buf(&t, "f.result", ILIR_BUF_RESULT, 4);
  t.k->max_deps = 1;
  IlirVar *n = var(&t, "n"), *i = var(&t, "i");
  IlirExpr *row = at_dep ? ld(&t, dep, vr(&t, n)) : vr(&t, n);
  IlirStmt *st = store(&t, res, bin(&t, ILIR_ADD, bin(&t, ILIR_MUL, row, ci(&t, rs)), vr(&t, i)),
                       ld(&t, p, bin(&t, ILIR_ADD, vr(&t, i), ci(&t, shift))));
  IlirStmt *nodes = loop(&t, n, ci(&t, 0), arg(&t, 0), loop(&t, i, ci(&t, 0), ci(&t, 4), st));
  nodes->loop = serial ? ILIR_LOOP_SERIAL : ILIR_LOOP_NODES;
  t.k->body = block(&t, 1, &nodes);
  bool ok = ilir_verify(t.k, &t.diag);
  ck_assert_int_eq(t.diag.ice, ok ? 0 : 1);
  t_done(&t);
  return ok;
}

START_TEST(bounds_checked) {
  ck_assert(bounds_ok(4, 0, false, false));
  ck_assert(!bounds_ok(4, 1, false, false));  /* p[4] */
  ck_assert(!bounds_ok(4, -1, false, false)); /* p[-1] */
  ck_assert(!bounds_ok(3, 0, false, false));  /* rows of 4 written as rows of 3 */
  ck_assert(!bounds_ok(4, 0, true, false));   /* a store into a dependency's row */
  ck_assert(!bounds_ok(4, 0, false, true));   /* a store outside a nodes loop */
}
END_TEST

/* ---- a prologue: invariant buffers computed once, before the levels -------------- */

/* for once in parallel [0, extent) { for i in [0, 4) { inv[i] = p[i] * 2 } }
 * then the chain's levels with res[n * 4 + i] = inv[i] + sum(k) res[dep(n, k) * 4 + i];
 * the invariant store inside the nodes loop instead when [in_nodes]. */
static void invariant_kernel(T *t, long extent, bool in_nodes) {
  int p = buf(t, "p", ILIR_BUF_PARAM, H);
  int dep = buf(t, "dep", ILIR_BUF_DEP, 1);
  int nd = buf(t, "num_deps", ILIR_BUF_NUM_DEPS, 1);
  int lv = buf(t, "levels", ILIR_BUF_LEVELS, 1);
  int res = buf(t, "f.result", ILIR_BUF_RESULT, H);
  int inv = buf(t, "inv", ILIR_BUF_INVARIANT, H);
  t->k->max_deps = 1;
  IlirVar *n = var(t, "n"), *i = var(t, "i"), *k = var(t, "k"), *j = var(t, "j");
  IlirVar *once = var(t, "once");
  IlirStmt *pro = loop(t, j, ci(t, 0), ci(t, H),
                       store(t, inv, vr(t, j), bin(t, ILIR_MUL, ld(t, p, vr(t, j)), cf(t, 2))));
  IlirExpr *child = ld(t, dep, bin(t, ILIR_ADD, vr(t, n), vr(t, k)));
  IlirExpr *sum = red(t, ILIR_SUM, k, ci(t, 0), ld(t, nd, vr(t, n)),
                      ld(t, res, bin(t, ILIR_ADD, bin(t, ILIR_MUL, child, ci(t, H)), vr(t, i))));
  IlirStmt *st = store(t, res, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, H)), vr(t, i)),
                       bin(t, ILIR_ADD, ld(t, inv, vr(t, i)), sum));
  IlirStmt *node_body[2] = {pro, loop(t, i, ci(t, 0), ci(t, H), st)};
  t->k->levels_buf = lv;
  IlirVar *l = var(t, "l");
  IlirStmt *nodes = ilir_loop(t->a, n, ld(t, lv, vr(t, l)),
                              ld(t, lv, bin(t, ILIR_ADD, vr(t, l), ci(t, 1))), ILIR_LOOP_NODES,
                              block(t, in_nodes ? 2 : 1, node_body + (in_nodes ? 0 : 1)));
  IlirStmt *levels = ilir_loop(t->a, l, ci(t, 0), arg(t, 1), ILIR_LOOP_LEVELS,
                               block(t, 1, &nodes));
  IlirStmt *top[2] = {ilir_loop(t->a, once, ci(t, 0), ci(t, extent), ILIR_LOOP_PARALLEL,
                                block(t, 1, &pro)),
                      levels};
  t->k->body = in_nodes ? block(t, 1, &levels) : block(t, 2, top);
}

/* Levels as in threads_agree; 1-4 threads agree with values computed here. */
START_TEST(invariant_prologue) {
  T t;
  t_init(&t, "ctx_invariant_kernel");
  invariant_kernel(&t, 1, false);
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  static const int32_t sizes[LV] = {20, 1, 1, 11, 5, 1, 3, 2, 1};
  float p[H] = {0.1f, -0.2f, 0.3f, 0.5f}, inv[H];
  int32_t dep[NN], nd[NN], lv[LV + 1] = {0};
  static float want[(NN + 1) * H], res[(NN + 1) * H];
  for (int l = 0; l < LV; l++) lv[l + 1] = lv[l] + sizes[l];
  for (int l = 0; l < LV; l++)
    for (int n = lv[l]; n < lv[l + 1]; n++) {
      nd[n] = l > 0;
      dep[n] = l > 0 ? lv[l - 1] + (n * 7) % sizes[l - 1] : NN;
      for (int i = 0; i < H; i++)
        want[n * H + i] = p[i] * 2 + (l > 0 ? want[dep[n] * H + i] : 0);
    }
  void *bufs[] = {p, dep, nd, lv, res, inv};
  for (int nt = 1; nt <= MAXT; nt++) {
    memset(res, 0, sizeof res);
    memset(inv, 0, sizeof inv);
    run_team(fn, bufs, nt);
    for (int e = 0; e < NN * H; e++) ck_assert(close_to(res[e], want[e]));
  }
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* Invariant buffers are written only in a parallel loop over [0, 1). */
START_TEST(invariant_stores_checked) {
  for (int c = 0; c < 2; c++) {
    T t;
    t_init(&t, "ctx_invariant_kernel");
    invariant_kernel(&t, c == 0 ? 2 : 1, c == 1); /* two threads' iterations; per node */
    ck_assert(!ilir_verify(t.k, &t.diag));
    ck_assert_int_eq(t.diag.ice, 1);
    t_done(&t);
  }
}
END_TEST

static Suite *codegen_suite(void) {
  Suite *s = suite_create("codegen");
  TCase *tc = tcase_create("jit");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, chain_three_levels);
  tcase_add_test(tc, kernel_cache_hit);
  tcase_add_test(tc, kernel_cache_damaged);
  tcase_add_test(tc, kernel_cache_limits);
  tcase_add_test(tc, max_select_unary);
  tcase_add_test(tc, if_on_num_deps);
  tcase_add_test(tc, threads_agree);
  tcase_add_test(tc, vector_math_accuracy);
  tcase_add_test(tc, gathered_rows_prefetched);
  tcase_add_test(tc, rows_through_deps_not_prefetched);
  tcase_add_test(tc, gate_loops_interleaved);
  tcase_add_test(tc, llvm_and_asm_text);
  tcase_add_test(tc, bad_kernel_is_ice);
  tcase_add_test(tc, bounds_checked);
  tcase_add_test(tc, invariant_prologue);
  tcase_add_test(tc, invariant_stores_checked);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(codegen_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
