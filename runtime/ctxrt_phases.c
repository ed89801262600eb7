/* ctxrt_phases.c — the phases of a batch under unroll_recursion K: which
 * levels end with a barrier (CTXRT_BUF_PHASES in ctxrt.h).
 *
 * Every thread of a team runs every level; a node loop gives thread t the
 * contiguous share [lo + t * c, lo + (t + 1) * c) of its level's ids, c =
 * ceil(len / nthreads) (codegen's thread_share: the one rule that shares a
 * level's nodes). Level l + 1 may follow level l without a barrier, in the
 * same phase, when no thread can see another thread's unfinished work:
 *
 *   - every dependency of a node of l + 1 that lies in the phase (at a level
 *     from the phase's first on) has the node's own thread — the thread
 *     computed it earlier in program order, so it is there without a barrier
 *     (dependencies before the phase were finished at the barrier before it);
 *   - the threads' shares of the phase's levels, as rows of a level (what
 *     level-scratch buffers index, n - levels[l]), do not overlap between
 *     threads: a thread running ahead into the next level writes only rows no
 *     other thread still uses (the hull of each thread's rows over the phase
 *     is disjoint from every other's).
 *
 * A level whose register tile runs split by outputs has barriers of its own
 * around the tile (codegen/cg_tile.c, split_by_outputs), so it needs nothing
 * here. The decision is greedy: a phase grows while it has fewer than K
 * levels and the next level satisfies both rules; every thread reads the
 * same array, so all meet the same barriers. On one thread every phase is K
 * levels; on B sequences (levels of equal length) each thread keeps the same
 * sequences, so phases of K levels hold on any thread count.
 */
#include "ctxrt_int.h"

static int32_t share_chunk(int32_t len, int32_t nthreads) {
  return (len + nthreads - 1) / nthreads;
}

/* The thread whose share of level [l] holds node [v]. */
static int32_t owner(const CtxrtLinear *lin, int32_t l, int32_t v, int32_t nthreads) {
  return (v - lin->level_start[l]) / share_chunk(lin->level_len[l], nthreads);
}

/* Does every dependency of level [next]'s nodes in levels [first, next) have
 * its node's thread? */
static int deps_own(const CtxrtLinear *lin, int32_t first, int32_t next, int32_t nthreads) {
  int32_t lo = lin->level_start[first], K = lin->max_deps;
  for (int32_t v = lin->level_start[next]; v < lin->level_start[next + 1]; v++) {
    int32_t t = owner(lin, next, v, nthreads);
    for (int32_t k = 0; k < lin->num_deps[v]; k++) {
      int32_t d = lin->dep[(int64_t)v * K + k], l = first;
      if (d < lo) continue; /* before the phase: done at its barrier */
      while (lin->level_start[l + 1] <= d) l++;
      if (owner(lin, l, d, nthreads) != t) return 0;
    }
  }
  return 1;
}

/* Are the threads' hulls of rows over levels [first, next] disjoint? */
static int rows_apart(const CtxrtLinear *lin, int32_t first, int32_t next, int32_t nthreads) {
  int32_t prev_hi = 0;
  for (int32_t t = 0; t < nthreads; t++) {
    int32_t lo = INT32_MAX, hi = 0;
    for (int32_t l = first; l <= next; l++) {
      int32_t c = share_chunk(lin->level_len[l], nthreads), a = t * c,
              b = a + c < lin->level_len[l] ? a + c : lin->level_len[l];
      if (a >= b) continue;
      if (a < lo) lo = a;
      if (b > hi) hi = b;
    }
    if (lo >= hi) continue; /* no rows in the phase */
    if (lo < prev_hi) return 0;
    prev_hi = hi;
  }
  return 1;
}

void ctxrt__phases(const CtxrtLinear *lin, int32_t nthreads, int32_t max_levels,
                   int32_t *barrier) {
  int32_t L = lin->num_levels, first = 0;
  if (nthreads < 1) nthreads = 1;
  for (int32_t l = 0; l < L; l++) {
    int32_t next = l + 1;
    int join = next < L && next - first < max_levels &&
               (nthreads == 1 || (deps_own(lin, first, next, nthreads) &&
                                  rows_apart(lin, first, next, nthreads)));
    barrier[l] = !join;
    if (!join) first = next;
  }
}

int32_t ctxrt__steps(const CtxrtLinear *lin, const int32_t *barrier) {
  int32_t L = lin->num_levels, steps = 0;
  for (int32_t l = 0; l < L; l++) {
    int single = lin->level_len[l] == 1, next_single = l + 1 >= L || lin->level_len[l + 1] == 1;
    steps += (!barrier || barrier[l]) && !(single && next_single);
  }
  return steps;
}
