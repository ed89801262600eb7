/* test_ctxrt_phases.c — unroll_recursion's phases (ctxrt__phases): every
 * generator shape on 1-4 threads and K = 1..4 checked against an independent
 * verifier of what a phase without barriers needs (every dependency inside
 * the phase on its node's thread by the contiguous share codegen uses; no
 * two threads' level rows overlapping within a phase, pairwise), phases of
 * at most K levels, exactly K on one thread, and sequences keeping K-level
 * phases on two threads; the dependency steps (ctxrt__steps).
 */
#include "ctxrt_testutil.h"
#include "runtime/ctxrt_int.h"

#include <stdlib.h>

static CtxrtLinear *linear(const char *text) {
  CtxrtGenSpec spec;
  CtxrtError err;
  CtxrtForest *f;
  CtxrtLinear *lin;
  ck_assert_msg(ctxrt_gen_parse(text, &spec, &err) == CTXRT_OK, "%s", err.msg);
  ck_assert_msg(ctxrt_generate(&spec, &f, &err) == CTXRT_OK, "%s", err.msg);
  ck_assert_msg(ctxrt_linear_create(f, 0, 0, &lin, &err) == CTXRT_OK, "%s", err.msg);
  ctxrt_forest_destroy(f);
  return lin;
}

/* Thread of node [v] at level [l] on [T] threads, as codegen's thread_share
 * gives a level's ids: chunk = ceil(len / T), thread t from lo + t * chunk. */
static int thread_of(const CtxrtLinear *lin, int l, int v, int T) {
  int len = lin->level_len[l], chunk = (len + T - 1) / T;
  return (v - lin->level_start[l]) / chunk;
}

static int level_of(const CtxrtLinear *lin, int v) {
  int l = 0;
  while (lin->level_start[l + 1] <= v) l++;
  return l;
}

static int single(const CtxrtLinear *lin, int l) {
  return l >= lin->num_levels || lin->level_len[l] == 1;
}

/* Checks the phases [barrier] of [lin] on [T] threads under K: at most K
 * levels a phase; and over the barriers the kernel meets — those of
 * [barrier] but the ones between two single-node levels, which codegen
 * leaves out (barrier_skippable) — every dependency since the last on its
 * node's thread, no two threads' rows of those levels alike. */
static void verify(const CtxrtLinear *lin, const int32_t *barrier, int T, int K) {
  int L = lin->num_levels, first = 0;
  for (int l = 0; l < L; l++) {
    ck_assert_int_le(l - first + 1, K);
    if (l == L - 1) ck_assert_int_eq(barrier[l], 1);
    if (barrier[l]) first = l + 1;
  }
  first = 0;
  for (int l = 0; l < L; l++) {
    if (l > first) { /* l runs after first, the kernel meeting no barrier between */
      for (int v = lin->level_start[l]; v < lin->level_start[l + 1]; v++)
        for (int k = 0; k < lin->num_deps[v]; k++) {
          int d = lin->dep[v * lin->max_deps + k], dl = level_of(lin, d);
          if (dl >= first)
            ck_assert_int_eq(thread_of(lin, dl, d, T), thread_of(lin, l, v, T));
        }
      for (int a = first; a <= l; a++) /* rows of level a vs level l, other threads */
        for (int r = 0; r < lin->level_len[a]; r++)
          if (r < lin->level_len[l]) {
            int ta = thread_of(lin, a, lin->level_start[a] + r, T);
            int tl = thread_of(lin, l, lin->level_start[l] + r, T);
            ck_assert_int_eq(ta, tl);
          }
    }
    if (barrier[l] && !(single(lin, l) && single(lin, l + 1))) first = l + 1;
  }
}

static const char *const shapes[] = {
    "binary:leaves=9,count=1",      "binary:leaves=30,count=10,seed=3",
    "complete:height=5,count=2",    "nary:nodes=60,arity=4,count=3,seed=1",
    "chain:nodes=20,count=3",       "grid:rows=5,cols=6,count=2",
    "sequence:length=12,count=10",  "sequence:length=9,count=7",
    /* chains of single nodes above levels of many: leaves shared by threads
     * joined by one parent, whose single parent reads another thread's leaf */
    "binary:leaves=200,count=1,seed=2", "binary:leaves=60,count=1,seed=7",
    "nary:nodes=80,arity=2,count=1,seed=4",
};

START_TEST(test_phases_sound) {
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    CtxrtLinear *lin = linear(shapes[s]);
    int32_t *barrier = calloc((size_t)lin->num_levels + 1, sizeof *barrier);
    for (int T = 1; T <= 4; T++)
      for (int K = 1; K <= 4; K++) {
        ctxrt__phases(lin, T, K, barrier);
        verify(lin, barrier, T, K);
        int phases = 0;
        for (int l = 0; l < lin->num_levels; l++) phases += barrier[l];
        if (T == 1 || K == 1) /* one thread: phases of exactly K */
          ck_assert_int_eq(phases, (lin->num_levels + K - 1) / K);
        ck_assert_int_le(ctxrt__steps(lin, barrier), ctxrt__steps(lin, NULL));
      }
    free(barrier);
    ctxrt_linear_destroy(lin);
  }
}
END_TEST

START_TEST(test_sequences_keep_phases) {
  CtxrtLinear *lin = linear("sequence:length=12,count=10");
  int32_t barrier[12];
  ctxrt__phases(lin, 2, 2, barrier);
  for (int l = 0; l < 12; l++) ck_assert_int_eq(barrier[l], l % 2);
  ck_assert_int_eq(ctxrt__steps(lin, NULL), 12);
  ck_assert_int_eq(ctxrt__steps(lin, barrier), 6);
  ctxrt_linear_destroy(lin);
}
END_TEST

START_TEST(test_chain_of_single_nodes) {
  /* levels of one node need no barrier between them whatever the phases */
  CtxrtLinear *lin = linear("chain:nodes=10");
  ck_assert_int_eq(ctxrt__steps(lin, NULL), 0);
  ctxrt_linear_destroy(lin);
}
END_TEST

int main(void) {
  Suite *s = suite_create("phases");
  TCase *tc = tcase_create("phases");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_phases_sound);
  tcase_add_test(tc, test_sequences_keep_phases);
  tcase_add_test(tc, test_chain_of_single_nodes);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
