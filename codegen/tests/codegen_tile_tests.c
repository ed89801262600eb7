/* codegen_tile_tests.c — unit tests of the CPU backend's register tiles
 * (cg_tile.c) and blocked matrix-vector products (cg_rowdot.c): ILIR kernels
 * built by hand (cg_test_kernels.h), JIT-compiled and run on 1-4 threads;
 * their sums are compared with values computed here in C, and their
 * optimized IR is searched for the code each shape should get. */
#include "cg_test_kernels.h"

#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

static Suite *codegen_tile_suite(void) {
  Suite *s = suite_create("codegen_tile");
  TCase *tc = tcase_create("jit");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, register_tile);
  tcase_add_test(tc, register_tile_shapes_agree);
  tcase_add_test(tc, streamed_tile_prefetched);
  tcase_add_test(tc, tiles_share_barriers);
  tcase_add_test(tc, row_dots_blocked);
  tcase_add_test(tc, node_matrix_copied_when_strided);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(codegen_tile_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
