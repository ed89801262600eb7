/* codegen_tests.c — unit tests of the CPU backend: ILIR kernels built by hand
 * (structs filled in directly, in an arena), JIT-compiled and run on small
 * linearized batches; their results are compared with values computed here
 * in C. Also the text outputs (LLVM IR, assembly) and internal errors. */
#include "codegen/codegen.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- building kernels -------------------------------------------------------- */

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  CtxSources srcs;
  CtxDiag diag;
} T;

static void t_init(T *t, const char *name) {
  memset(t, 0, sizeof *t);
  t->a = ctx_arena_new();
  ctx_sources_init(&t->srcs);
  ctx_diag_init(&t->diag, &t->srcs, NULL);
  t->k = CTX_NEW(t->a, IlirKernel);
  t->k->name = name;
  t->k->bufs = CTX_NEW_ARRAY(t->a, IlirBuf, 16);
}

static void t_done(T *t) {
  ctx_sources_free(&t->srcs);
  ctx_arena_free(t->a);
}

static int buf(T *t, const char *name, IlirBufKind kind, long size) {
  IlirBuf *b = &t->k->bufs[t->k->nbufs];
  b->name = name;
  b->kind = kind;
  b->size = size;
  return t->k->nbufs++;
}

/* Short names for the ILIR constructors (ilir.h), in the test's arena. */
static IlirVar *var(T *t, const char *name) { return ilir_new_var(t->a, t->k, name); }
static IlirExpr *ci(T *t, long v) { return ilir_const_i(t->a, v); }
static IlirExpr *cf(T *t, float v) { return ilir_const_f(t->a, v); }
static IlirExpr *vr(T *t, IlirVar *v) { return ilir_var(t->a, v); }
static IlirExpr *arg(T *t, long which) { return ilir_arg(t->a, which); }
static IlirExpr *ld(T *t, int b, IlirExpr *i) { return ilir_load(t->a, t->k, b, i); }
static IlirExpr *un(T *t, int op, IlirExpr *x) { return ilir_unary(t->a, op, x); }
static IlirExpr *bin(T *t, int op, IlirExpr *x, IlirExpr *y) {
  return ilir_binary(t->a, op, x, y);
}
static IlirExpr *sel(T *t, IlirExpr *c, IlirExpr *x, IlirExpr *y) {
  return ilir_select(t->a, c, x, y);
}
static IlirExpr *red(T *t, int op, IlirVar *v, IlirExpr *lo, IlirExpr *hi, IlirExpr *body) {
  return ilir_reduce(t->a, op, v, lo, hi, body);
}

static IlirBlock block(T *t, int n, IlirStmt **stmts) {
  IlirBlock b = {CTX_NEW_ARRAY(t->a, IlirStmt *, n), n};
  memcpy(b.stmts, stmts, sizeof *stmts * (size_t)n);
  return b;
}

static IlirStmt *loop(T *t, IlirVar *v, IlirExpr *lo, IlirExpr *hi, IlirStmt *body) {
  return ilir_loop(t->a, v, lo, hi, ILIR_LOOP_SERIAL, block(t, 1, &body));
}

static IlirStmt *store(T *t, int b, IlirExpr *index, IlirExpr *value) {
  return ilir_store(t->a, b, index, value);
}

static IlirStmt *ifs(T *t, IlirExpr *c, IlirStmt *then, IlirStmt *els) {
  IlirStmt *s = CTX_NEW(t->a, IlirStmt);
  s->kind = ILIR_IF;
  s->cond = c;
  s->then = block(t, 1, &then);
  s->els = block(t, 1, &els);
  return s;
}

/* The level and node loops around [body] (which reads node variable [n]):
 *   for l in [0, num_levels) for n in [levels[l], levels[l + 1]) body */
static void levels_around(T *t, int levels, IlirVar *n, IlirStmt *body) {
  IlirVar *l = var(t, "l");
  t->k->levels_buf = levels;
  IlirStmt *nodes = loop(t, n, ld(t, levels, vr(t, l)),
                         ld(t, levels, bin(t, ILIR_ADD, vr(t, l), ci(t, 1))), body);
  nodes->loop = ILIR_LOOP_NODES;
  IlirStmt *lv = loop(t, l, ci(t, 0), arg(t, 1), nodes);
  lv->loop = ILIR_LOOP_LEVELS;
  t->k->body = block(t, 1, &lv);
}

static CgKernelFn compile(T *t, CgJit **jit) {
  *jit = cg_jit_compile(t->k, &t->diag);
  ck_assert_ptr_nonnull(*jit);
  ck_assert_int_eq(t->diag.errors + t->diag.ice, 0);
  return cg_jit_kernel(*jit);
}

static bool close_to(double got, double want) {
  return fabs(got - want) <= 1e-5 + 1e-5 * fabs(want);
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

enum { LV = 9, NN = 20 + 1 + 1 + 11 + 5 + 1 + 3 + 2 + 1, MAXT = 4 };

typedef struct {
  CgKernelFn fn;
  void **bufs;
  int64_t tid, nthreads, nodes;
  pthread_barrier_t *barrier;
  int64_t levels;
} Member;

static atomic_int barrier_calls; /* by every thread of run_team's teams */

static void member_barrier(void *ctx) {
  atomic_fetch_add(&barrier_calls, 1);
  pthread_barrier_wait(ctx);
}

static void *member_main(void *arg) {
  const Member *m = arg;
  m->fn(m->bufs, m->nodes, m->levels, m->tid, m->nthreads, member_barrier, m->barrier);
  return NULL;
}

/* Runs [fn] over [nodes] nodes in [levels] levels on [nthreads] threads
 * (the caller one of them). */
static void run_team_levels(CgKernelFn fn, void **bufs, int nthreads, int64_t nodes,
                            int64_t levels) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
  Member m[MAXT];
  pthread_t th[MAXT];
  for (int i = 0; i < nthreads; i++)
    m[i] = (Member){fn, bufs, i, nthreads, nodes, &barrier, levels};
  for (int i = 1; i < nthreads; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, member_main, &m[i]), 0);
  member_main(&m[0]);
  for (int i = 1; i < nthreads; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
}

static void run_team_nodes(CgKernelFn fn, void **bufs, int nthreads, int64_t nodes) {
  run_team_levels(fn, bufs, nthreads, nodes, LV);
}

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

/* ---- register tiles: a product of packed weights, odd sizes, 1-3 threads ---- */

enum { TI = 83, TR = 37 }; /* outputs (blocks, one vector, 3 floats), reductions */

/* out[n, i] = sum(r) x[n, r] * P[r * TI + i] + sum(r) y[n, r] * P[r * TI + i] over
 * nodes [0, num_nodes), tiled 4 nodes x 64 outputs, with the epilogue
 * act[n, i] = tanh(out[n, i]) * 0.5; P stored in panels of [panel] columns; r in
 * [0, R). */
static void tiled_kernel(T *t, long panel, long R) {
  int x = buf(t, "x", ILIR_BUF_SCRATCH, R), y = buf(t, "y", ILIR_BUF_SCRATCH, R);
  int pk = buf(t, "W.packed", ILIR_BUF_PACKED, R * TI);
  t->k->bufs[pk].pack = (IlirPack){0, R, R, TI, panel};
  int out = buf(t, "out", ILIR_BUF_RESULT, TI), act = buf(t, "act", ILIR_BUF_RESULT, TI);
  IlirVar *n = var(t, "n"), *i = var(t, "i"), *r = var(t, "r"), *r2 = var(t, "r2");
  IlirVar *i2 = var(t, "i2");
  IlirExpr *term[2];
  IlirVar *rv[2] = {r, r2};
  int src[2] = {x, y};
  for (int k = 0; k < 2; k++) {
    IlirExpr *at = bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, rv[k]), ci(t, TI)), vr(t, i));
    IlirExpr *xv = ld(t, src[k], bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, R)),
                                     vr(t, rv[k])));
    term[k] = red(t, ILIR_SUM, rv[k], ci(t, 0), ci(t, R), bin(t, ILIR_MUL, xv, ld(t, pk, at)));
  }
  IlirStmt *st = store(t, out, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, TI)), vr(t, i)),
                       bin(t, ILIR_ADD, term[0], term[1]));
  IlirExpr *row2 = bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, TI)), vr(t, i2));
  IlirStmt *epi = store(t, act, row2,
                        bin(t, ILIR_MUL, un(t, ILIR_TANH, ld(t, out, row2)), cf(t, 0.5f)));
  IlirStmt *both[2] = {loop(t, i, ci(t, 0), ci(t, TI), st), loop(t, i2, ci(t, 0), ci(t, TI), epi)};
  IlirStmt *nodes = ilir_loop(t->a, n, ci(t, 0), arg(t, 0), ILIR_LOOP_NODES, block(t, 2, both));
  nodes->tile_nodes = 4;
  nodes->tile_outs = 64;
  t->k->body = block(t, 1, &nodes);
  ck_assert(ilir_verify(t->k, &t->diag));
}

/* tiled_kernel's inputs (reductions of R): x and y for NN + 1 nodes, the weights w (row-major,
 * for the expected sums) and the same in tiled_kernel's packed layout pk. */
static void tiled_inputs(const T *t, float *x, float *y, float *w, float *pk, long R) {
  for (int k = 0; k < (NN + 1) * R; k++) {
    x[k] = (float)((k * 37) % 101) / 50.0f - 1.0f;
    y[k] = (float)((k * 53) % 89) / 45.0f - 1.0f;
  }
  const IlirPack *layout = &t->k->bufs[2].pack;
  for (int i = 0; i < TI; i++)
    for (int r = 0; r < R; r++) {
      w[i * R + r] = (float)((i * 31 + r * 17) % 97) / 48.0f - 1.0f;
      pk[ilir_pack_at(layout, r, i)] = w[i * R + r];
    }
}

/* What tiled_kernel computes at node n, output i: sum(r) (x[n, r] + y[n, r]) w[i, r]
 * in double (inputs from tiled_inputs, reductions of R). */
static double tiled_sum(const float *x, const float *y, const float *w, int n, int i, long R) {
  double s = 0;
  for (long r = 0; r < R; r++) s += ((double)x[n * R + r] + y[n * R + r]) * w[i * R + r];
  return s;
}

START_TEST(register_tile) {
  /* one panel; panels of 32 (the last one 19 wide); panels of one vector;
   * and panels of 32 read by plain loops (the tile turned off) */
  static const long panels[] = {0, 32, 16, 32};
  for (size_t pi = 0; pi < sizeof panels / sizeof panels[0]; pi++) {
    T t;
    t_init(&t, "ctx_tiled_kernel");
    tiled_kernel(&t, panels[pi], TR);
    if (pi == 3) t.k->body.stmts[0]->tile_nodes = t.k->body.stmts[0]->tile_outs = 0;
    CgJit *jit;
    CgKernelFn fn = compile(&t, &jit);
    static float x[(NN + 1) * TR], y[(NN + 1) * TR], w[TI * TR], pk[TR * TI];
    static float res[(NN + 1) * TI], act[(NN + 1) * TI];
    tiled_inputs(&t, x, y, w, pk, TR);
    void *bufs[] = {x, y, pk, res, act};
    /* 1-4 threads: shares of 45, 23/22, 15 and 12/9 nodes leave every
     * remainder of the 4-node tiles; 1, 3 and 6 nodes on 2-4 threads run
     * split by outputs where there are enough blocks (panels of 16: five) */
    static const int counts[] = {NN, 1, 3, 6};
    for (int run = 0; run < MAXT + 3 * (MAXT - 1); run++) {
      int nt = run < MAXT ? run + 1 : 2 + (run - MAXT) % (MAXT - 1);
      int nodes = run < MAXT ? NN : counts[1 + (run - MAXT) / (MAXT - 1)];
      memset(res, 0, sizeof res);
      memset(act, 0, sizeof act);
      run_team_nodes(fn, bufs, nt, nodes);
      for (int n = 0; n < nodes; n++)
        for (int i = 0; i < TI; i++) {
          double want = tiled_sum(x, y, w, n, i, TR);
          ck_assert_msg(close_to(res[n * TI + i], want),
                        "n=%d i=%d: %g, want %g (%d threads, panels of %ld)", n, i,
                        (double)res[n * TI + i], want, nt, panels[pi]);
          ck_assert(close_to(act[n * TI + i], tanh(res[n * TI + i]) * 0.5));
        }
      ck_assert_float_eq(res[nodes * TI], 0); /* the row after the last node: untouched */
    }
    cg_jit_free(jit);
    t_done(&t);
  }
}
END_TEST

/* A register tile's sums do not depend on how the nodes fall into tiles:
 * every row of a tile, whatever its shape (4 rows, the rests of 1-3, a
 * share by outputs), adds r in the same parts and order, so 1-4 threads and
 * 1, 3, 6 or NN nodes give the same bits. With r over 2 * TR (even, parts of
 * TR): the block of 4 vectors sums r in one part (ONE_PART_VECTORS), the
 * single vectors and the 3 floats past it in two. */
START_TEST(register_tile_shapes_agree) {
  enum { R2 = 2 * TR };
  T t;
  t_init(&t, "ctx_tiled_kernel");
  tiled_kernel(&t, 0, R2);
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  static float x[(NN + 1) * R2], y[(NN + 1) * R2], w[TI * R2], pk[R2 * TI];
  static float want[(NN + 1) * TI], res[(NN + 1) * TI], act[(NN + 1) * TI];
  tiled_inputs(&t, x, y, w, pk, R2);
  void *bufs[] = {x, y, pk, want, act};
  run_team_nodes(fn, bufs, 1, NN);
  for (int n = 0; n < NN; n++)
    for (int i = 0; i < TI; i++) {
      double s = tiled_sum(x, y, w, n, i, R2);
      ck_assert_msg(close_to(want[n * TI + i], s), "n=%d i=%d: %g, want %g", n, i,
                    (double)want[n * TI + i], s);
    }
  bufs[3] = res;
  static const int counts[] = {NN, 1, 3, 6};
  for (int c = 0; c < 4; c++)
    for (int nt = 1; nt <= MAXT; nt++) {
      memset(res, 0, sizeof res);
      run_team_nodes(fn, bufs, nt, counts[c]);
      ck_assert_msg(memcmp(res, want, (size_t)counts[c] * TI * sizeof *res) == 0,
                    "%d nodes on %d threads: not the bits of %d nodes on one", counts[c], nt,
                    NN);
    }
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* A tile of 12 rows over weights that stream from the L3 (tile_streams)
 * prefetches them ahead (cg_tile.c, prefetch_ahead); the same tile over
 * weights the L2 holds does not. Both sum right, on 1 and 2 threads. */
START_TEST(streamed_tile_prefetched) {
  for (int streams = 0; streams < 2; streams++) {
    T t;
    t_init(&t, "ctx_tiled_kernel");
    tiled_kernel(&t, 32, TR);
    IlirStmt *nodes = t.k->body.stmts[0];
    nodes->tile_nodes = 12;
    nodes->tile_outs = 32;
    nodes->tile_streams = streams;
    CtxBuf ir;
    ctx_buf_init(&ir);
    ck_assert(cg_emit_llvm(&ir, t.k, NULL, &t.diag));
    bool prefetched = strstr(ctx_buf_str(&ir), "call void @llvm.prefetch") != NULL;
    ck_assert_msg(prefetched == (streams == 1), "streams %d: prefetched %d", streams, prefetched);
    ctx_buf_free(&ir);
    CgJit *jit;
    CgKernelFn fn = compile(&t, &jit);
    static float x[(NN + 1) * TR], y[(NN + 1) * TR], w[TI * TR], pk[TR * TI];
    static float res[(NN + 1) * TI], act[(NN + 1) * TI];
    tiled_inputs(&t, x, y, w, pk, TR);
    void *bufs[] = {x, y, pk, res, act};
    for (int nt = 1; nt <= 2; nt++) {
      memset(res, 0, sizeof res);
      run_team_nodes(fn, bufs, nt, NN);
      for (int n = 0; n < NN; n++)
        for (int i = 0; i < TI; i++) {
          double want = tiled_sum(x, y, w, n, i, TR);
          ck_assert_msg(close_to(res[n * TI + i], want), "n=%d i=%d: %g, want %g", n, i,
                        (double)res[n * TI + i], want);
        }
    }
    cg_jit_free(jit);
    t_done(&t);
  }
}
END_TEST

/* A tile over nodes [levels[l], levels[l + 1]) computing [dst] = [src] P
 * (TR of src's columns, TI outputs, P packed in panels of 16), 4 rows x 16
 * outputs; with [act], the epilogue act = tanh(dst) * 0.5. */
static IlirStmt *level_tile(T *t, int lv, IlirVar *l, int src, long stride, int pk, int dst,
                            int act) {
  IlirVar *n = var(t, "n"), *i = var(t, "i"), *r = var(t, "r"), *i2 = var(t, "i2");
  IlirExpr *xv = ld(t, src, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, stride)), vr(t, r)));
  IlirExpr *w = ld(t, pk, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, r), ci(t, TI)), vr(t, i)));
  IlirStmt *st = store(t, dst, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, TI)), vr(t, i)),
                       red(t, ILIR_SUM, r, ci(t, 0), ci(t, TR), bin(t, ILIR_MUL, xv, w)));
  IlirExpr *row2 = bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, TI)), vr(t, i2));
  IlirStmt *body[2] = {loop(t, i, ci(t, 0), ci(t, TI), st), NULL};
  if (act >= 0)
    body[1] = loop(t, i2, ci(t, 0), ci(t, TI),
                   store(t, act, row2,
                         bin(t, ILIR_MUL, un(t, ILIR_TANH, ld(t, dst, row2)), cf(t, 0.5f))));
  IlirStmt *nodes = ilir_loop(t->a, n, ld(t, lv, vr(t, l)),
                              ld(t, lv, bin(t, ILIR_ADD, vr(t, l), ci(t, 1))), ILIR_LOOP_NODES,
                              block(t, act >= 0 ? 2 : 1, body));
  nodes->tile_nodes = 4;
  nodes->tile_outs = 16;
  return nodes;
}

/* Two tiles in a level, the second reading what the first's epilogue wrote
 * in every node's row, the level ending with the second. Split by outputs
 * (levels of 3 nodes, tiles of 4 rows, 5 blocks of outputs), the barrier
 * before the second tile and the one at the level's end come right after
 * the tiles' barriers after them and are left out (cg_emit_int.h,
 * synced_after): 3 barriers a level, not 5. The sums agree on 1-4 threads. */
START_TEST(tiles_share_barriers) {
  T t;
  t_init(&t, "ctx_two_tiles");
  int x = buf(&t, "x", ILIR_BUF_SCRATCH, TR);
  int pk = buf(&t, "W.packed", ILIR_BUF_PACKED, TR * TI);
  t.k->bufs[pk].pack = (IlirPack){0, TR, TR, TI, 16};
  int lv = buf(&t, "levels", ILIR_BUF_LEVELS, 1);
  int out = buf(&t, "out", ILIR_BUF_RESULT, TI), act = buf(&t, "act", ILIR_BUF_RESULT, TI);
  int out2 = buf(&t, "out2", ILIR_BUF_RESULT, TI);
  IlirVar *l = var(&t, "l");
  IlirStmt *tiles[2] = {level_tile(&t, lv, l, x, TR, pk, out, act),
                        level_tile(&t, lv, l, act, TI, pk, out2, -1)};
  IlirStmt *levels =
      ilir_loop(t.a, l, ci(&t, 0), arg(&t, 1), ILIR_LOOP_LEVELS, block(&t, 2, tiles));
  t.k->levels_buf = lv;
  t.k->body = block(&t, 1, &levels);
  ck_assert(ilir_verify(t.k, &t.diag));
  CgJit *jit;
  CgKernelFn fn = compile(&t, &jit);
  enum { NODES = 6, LEVELS = 2 };
  static float xs[NODES * TR], w[TI * TR], pks[TR * TI];
  static float o[(NODES + 1) * TI], a[(NODES + 1) * TI], o2[(NODES + 1) * TI];
  for (int k = 0; k < NODES * TR; k++) xs[k] = (float)((k * 37) % 101) / 50.0f - 1.0f;
  for (int i = 0; i < TI; i++)
    for (int r = 0; r < TR; r++) {
      w[i * TR + r] = (float)((i * 31 + r * 17) % 97) / 48.0f - 1.0f;
      pks[ilir_pack_at(&t.k->bufs[pk].pack, r, i)] = w[i * TR + r];
    }
  int32_t lvl[LEVELS + 1] = {0, 3, 6};
  void *bufs[] = {xs, pks, lvl, o, a, o2};
  for (int nt = 1; nt <= MAXT; nt++) {
    memset(o2, 0, sizeof o2);
    atomic_store(&barrier_calls, 0);
    run_team_levels(fn, bufs, nt, NODES, LEVELS);
    int calls = atomic_load(&barrier_calls);
    ck_assert_int_eq(calls, nt > 1 ? nt * 3 * LEVELS : 0);
    for (int n = 0; n < NODES; n++)
      for (int i = 0; i < TI; i++) {
        double want = 0;
        for (int r = 0; r < TR; r++) {
          double s = 0;
          for (int q = 0; q < TR; q++) s += (double)xs[n * TR + q] * w[r * TR + q];
          want += tanh(s) * 0.5 * w[i * TR + r];
        }
        ck_assert_msg(close_to(o2[n * TI + i], want), "%d threads, n=%d i=%d: %g, want %g", nt,
                      n, i, (double)o2[n * TI + i], want);
      }
  }
  cg_jit_free(jit);
  t_done(&t);
}
END_TEST

/* ---- matrix-vector products over contiguous rows (cg_rowdot.c) ---------------- */

enum { RN = 3, RR = 48 };

/* out[n * I + i] = sum(r in [0, R)) m[(n * I + i) * R + r] * x[n * R + r],
 * R = RR, m a node's matrix and x a vector of its own; with [to_self] x is
 * out itself (I = R): the sums read the outputs' buffer, which the blocked
 * code must leave to the plain loop. The kernel's optimized IR goes to [ir]. */
static void row_dot_kernel(T *t, long I, bool to_self, CtxBuf *ir) {
  int m = buf(t, "m", ILIR_BUF_SCRATCH, I * RR);
  int x = buf(t, "x", ILIR_BUF_SCRATCH, RR);
  int lv = buf(t, "levels", ILIR_BUF_LEVELS, 1);
  int out = buf(t, "f.result", ILIR_BUF_RESULT, I);
  IlirVar *n = var(t, "n"), *i = var(t, "i"), *r = var(t, "r");
  IlirExpr *row = bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, I)), vr(t, i));
  IlirExpr *mrow = bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, I * RR)),
                       bin(t, ILIR_MUL, vr(t, i), ci(t, RR)));
  IlirExpr *mm = ld(t, m, bin(t, ILIR_ADD, mrow, vr(t, r)));
  IlirExpr *xr = ld(t, to_self ? out : x,
                    bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, RR)), vr(t, r)));
  IlirExpr *sum = red(t, ILIR_SUM, r, ci(t, 0), ci(t, RR), bin(t, ILIR_MUL, mm, xr));
  levels_around(t, lv, n, loop(t, i, ci(t, 0), ci(t, I), store(t, out, row, sum)));
  ck_assert(ilir_verify(t->k, &t->diag));
  ctx_buf_init(ir);
  ck_assert(cg_emit_llvm(ir, t->k, NULL, &t->diag));
}

/* As many outputs as the host's vectors have lanes at a time (cg_rowdot.c's
 * loops in the IR), and the sums are right. A loop whose sums read the
 * outputs' buffer, or whose outputs are not a multiple of the lanes, stays a
 * plain loop (and is right too: the sums over out, zero, are zero). */
START_TEST(row_dots_blocked) {
  int vl, regs;
  cg_cpu_vectors(NULL, &vl, &regs);
  const struct { long I; bool to_self; } cases[] = {{32, false}, {RR, true}, {36, false}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    T t;
    t_init(&t, "ctx_row_dot_kernel");
    CtxBuf ir;
    long I = cases[c].I;
    row_dot_kernel(&t, I, cases[c].to_self, &ir);
    bool folded = strstr(ctx_buf_str(&ir), "rowdot.") != NULL; /* cg_rowdot.c's loops */
    bool want_folded = !cases[c].to_self && I % vl == 0 && RR % vl == 0;
    ck_assert_msg(folded == want_folded, "case %zu: folded %d (%d lanes)", c, folded, vl);
    ctx_buf_free(&ir);
    CgJit *jit;
    CgKernelFn fn = compile(&t, &jit);
    static float m[RN * RR * RR], x[RN * RR], out[(RN + 1) * RR];
    for (long k = 0; k < RN * I * RR; k++) m[k] = (float)((k * 37) % 101) / 50.0f - 1.0f;
    for (int k = 0; k < RN * RR; k++) x[k] = (float)((k * 53) % 89) / 45.0f - 1.0f;
    memset(out, 0, sizeof out);
    int32_t lvl[2] = {0, RN};
    void *bufs[] = {m, x, lvl, out};
    fn(bufs, RN, 1, 0, 1, NULL, NULL);
    for (int n = 0; n < RN; n++)
      for (long i = 0; i < I; i++) {
        double want = 0;
        for (int r = 0; r < RR && !cases[c].to_self; r++)
          want += (double)m[(n * I + i) * RR + r] * x[n * RR + r];
        ck_assert_msg(close_to(out[n * I + i], want), "case %zu n=%d i=%ld: %g, want %g", c, n,
                      i, (double)out[n * I + i], want);
      }
    cg_jit_free(jit);
    t_done(&t);
  }
}
END_TEST

/* ---- a node's matrix in a register tile: copied only when strided ---------- */

/* nodes, weight rows (tiled), reduction: long enough that the copy stays a
 * loop (of 20 rows, in the tile's function of its own, LLVM unrolled it and
 * kept the rows in registers) */
enum { MN = 2, MI = 16, MK = 160 };

/* out[n, i, j] = sum(k) w[i * MK + k] * m[n][k * S + j] for j < J: a node's
 * matrix (rows S floats apart) times weights, the i loop tiled 4 rows x J
 * outputs, as mvrnn's P = WM [A; B]. The kernel's optimized IR goes to [ir]. */
static void matrix_kernel(T *t, long J, long S, CtxBuf *ir) {
  int w = buf(t, "w", ILIR_BUF_PARAM, MI * MK);
  int m = buf(t, "m", ILIR_BUF_SCRATCH, MK * S);
  int lv = buf(t, "levels", ILIR_BUF_LEVELS, 1);
  int out = buf(t, "f.result", ILIR_BUF_RESULT, MI * J);
  IlirVar *n = var(t, "n"), *i = var(t, "i"), *j = var(t, "j"), *k = var(t, "k");
  IlirExpr *wk = ld(t, w, bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, i), ci(t, MK)), vr(t, k)));
  IlirExpr *mrow = bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, MK * S)),
                       bin(t, ILIR_MUL, vr(t, k), ci(t, S)));
  IlirExpr *mk = ld(t, m, bin(t, ILIR_ADD, mrow, vr(t, j)));
  IlirExpr *sum = red(t, ILIR_SUM, k, ci(t, 0), ci(t, MK), bin(t, ILIR_MUL, wk, mk));
  IlirExpr *at = bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, n), ci(t, MI * J)),
                     bin(t, ILIR_ADD, bin(t, ILIR_MUL, vr(t, i), ci(t, J)), vr(t, j)));
  IlirStmt *rows = loop(t, i, ci(t, 0), ci(t, MI), loop(t, j, ci(t, 0), ci(t, J),
                                                       store(t, out, at, sum)));
  rows->tile_nodes = 4;
  rows->tile_outs = (int)J;
  levels_around(t, lv, n, rows);
  ck_assert(ilir_verify(t->k, &t->diag));
  ctx_buf_init(ir);
  ck_assert(cg_emit_llvm(ir, t->k, NULL, &t->diag));
}

/* A block of one vector of outputs: rows a vector apart are contiguous and
 * read in place; rows two vectors apart are copied to the stack first
 * (cg_tile.c, pack_blocks: its "r.copy" loop). Both sum right. */
START_TEST(node_matrix_copied_when_strided) {
  int vl, regs;
  cg_cpu_vectors(NULL, &vl, &regs);
  for (long S = vl; S <= 2L * vl; S += vl) {
    T t;
    t_init(&t, "ctx_matrix_kernel");
    CtxBuf ir;
    long J = vl;
    matrix_kernel(&t, J, S, &ir);
    bool copied = strstr(ctx_buf_str(&ir), "r.copy") != NULL;
    ck_assert_msg(copied == (S != J), "rows %ld apart: copied %d (%d lanes)", S, copied, vl);
    ctx_buf_free(&ir);
    CgJit *jit;
    CgKernelFn fn = compile(&t, &jit);
    static float w[MI * MK], m[MN * MK * 32], out[(MN + 1) * MI * 16];
    for (int q = 0; q < MI * MK; q++) w[q] = (float)((q * 37) % 101) / 50.0f - 1.0f;
    for (long q = 0; q < MN * MK * S; q++) m[q] = (float)((q * 53) % 89) / 45.0f - 1.0f;
    memset(out, 0, sizeof out);
    int32_t lvl[2] = {0, MN};
    void *bufs[] = {w, m, lvl, out};
    fn(bufs, MN, 1, 0, 1, NULL, NULL);
    for (int n = 0; n < MN; n++)
      for (int i = 0; i < MI; i++)
        for (long j = 0; j < J; j++) {
          double want = 0;
          for (int k = 0; k < MK; k++)
            want += (double)w[i * MK + k] * m[(n * MK + k) * S + j];
          float got = out[(n * MI + i) * J + j];
          ck_assert_msg(close_to(got, want), "rows %ld apart, n=%d i=%d j=%ld: %g, want %g", S,
                        n, i, j, (double)got, want);
        }
    ck_assert_float_eq(out[MN * MI * J], 0);
    cg_jit_free(jit);
    t_done(&t);
  }
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
  tcase_add_test(tc, register_tile);
  tcase_add_test(tc, register_tile_shapes_agree);
  tcase_add_test(tc, streamed_tile_prefetched);
  tcase_add_test(tc, tiles_share_barriers);
  tcase_add_test(tc, row_dots_blocked);
  tcase_add_test(tc, node_matrix_copied_when_strided);
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
