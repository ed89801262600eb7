/* ctxrt_linearize.c — the linearizer: a forest into the flat, level-ordered arrays
 * generated code reads (ARCHITECTURE.md, "The runtime contract"; CtxrtLinear in
 * ctxrt.h).
 *
 * Runs on the host inside every timed inference, so it is a few linear passes
 * with no recursion and, once its buffers are large enough, no allocation:
 *   1. levels: one scan from the last node down when every dependency follows its
 *      node (pre-order trees: PTB, the generators' trees), else one scan up when
 *      every dependency precedes it (sequences, grids, post-order lists), else
 *      Kahn's algorithm over a reverse-edge index (any DAG order; finds cycles);
 *      with `balance`, then the levels evened out (balance_levels);
 *   2. a counting sort of the nodes by level, stable in forest order;
 *   3. one pass in new-id order writing dependency rows and dense value rows;
 *   4. the outputs (nodes nothing depends on), in forest order;
 *   5. (per run, under unroll_recursion) the phases: which levels end with a barrier.
 * Assumes the forest came from a reader or generator (its offset arrays are
 * consistent); checks what would otherwise break the arrays: dependencies out of
 * range, cycles, arity over the fixed K, value counts.
 */
#include "ctxrt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 64 /* a cache line, and an AVX-512 vector */

/* --- errors ------------------------------------------------------------------- */

/* `structure S, node ID: MESSAGE` at forest node [n]'s line. */
static CtxrtStatus CTXRT_PRINTF(4, 5)
    node_err(const CtxrtForest *f, CtxrtError *err, int32_t n, const char *fmt, ...) {
  char tail[CTXRT_MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tail, sizeof tail, fmt, ap);
  va_end(ap);
  int32_t lo = 0, hi = f->num_structs; /* last s with struct_begin[s] <= n */
  while (hi - lo > 1) {
    int32_t mid = lo + (hi - lo) / 2;
    if (f->struct_begin[mid] <= n)
      lo = mid;
    else
      hi = mid;
  }
  return ctxrt__err(err, CTXRT_ERR_INVALID, f->name, f->line[n],
                    "structure %d, node %lld: %s", (int)lo + 1, (long long)f->id[n],
                    tail);
}

/* --- buffers ------------------------------------------------------------------ */

/* Makes [*p] hold at least [bytes] (contents not kept); 0 when out of memory. */
static int ensure(void **p, size_t *cap, size_t bytes) {
  bytes = (bytes + ALIGN - 1) / ALIGN * ALIGN;
  if (bytes == 0) bytes = ALIGN;
  if (*cap >= bytes) return 1;
  free(*p);
  *cap = 0;
  *p = aligned_alloc(ALIGN, bytes);
  if (!*p) return 0;
  *cap = bytes;
  return 1;
}

static size_t round_up(size_t x) {
  return (x + ALIGN - 1) / ALIGN * ALIGN;
}

/* Does one of [lin]'s groups take the nodes at a place in their parents? */
static int positions(const CtxrtLinear *lin) {
  for (int32_t g = 0; g < lin->num_groups; g++)
    if (lin->group_arity[g] < 0) return 1;
  return 0;
}

/* Lays the public arrays out in [lin]'s block (allocating it when too small) for
 * [n] nodes, [levels] levels, K and V already set. */
static int carve(CtxrtLinear *lin, int32_t n, int32_t levels) {
  size_t sn = (size_t)n, nk = sn * (size_t)lin->max_deps,
         nv = sn * (size_t)lin->num_values;
  size_t sizes[] = {((size_t)levels + 1) * 4,
                    (size_t)levels * 4,
                    sn * 4,
                    nk * 4,
                    sn * 4,
                    sn * 4,
                    sn * 4,
                    nv * 4,
                    nv * 4,
                    sn,
                    (size_t)levels * (size_t)lin->num_groups * 4,
                    positions(lin) ? sn * 4 : 0};
  size_t off[sizeof sizes / sizeof sizes[0]], total = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    off[i] = total;
    total += round_up(sizes[i]);
  }
  if (!ensure(&lin->block_, &lin->cap_, total)) return 0;
  char *b = lin->block_;
  lin->level_start = (int32_t *)(void *)(b + off[0]);
  lin->level_len = (int32_t *)(void *)(b + off[1]);
  lin->num_deps = (int32_t *)(void *)(b + off[2]);
  lin->dep = (int32_t *)(void *)(b + off[3]);
  lin->to_input = (int32_t *)(void *)(b + off[4]);
  lin->to_new = (int32_t *)(void *)(b + off[5]);
  lin->outputs = (int32_t *)(void *)(b + off[6]);
  lin->val = (float *)(void *)(b + off[7]);
  lin->ival = (int32_t *)(void *)(b + off[8]);
  lin->has_val = (unsigned char *)(b + off[9]);
  lin->group_end = (int32_t *)(void *)(b + off[10]);
  lin->position_ = (int32_t *)(void *)(b + off[11]);
  return 1;
}

/* Back to an empty linearization (memory kept). */
static void make_empty(CtxrtLinear *lin) {
  lin->kind = CTXRT_KIND_ANY;
  lin->num_nodes = lin->num_levels = lin->leaf_end = 0;
  lin->max_deps = lin->num_values = lin->num_outputs = 0;
  if (lin->block_) carve(lin, 0, 0);
  if (lin->level_start) lin->level_start[0] = 0;
}

/* --- 1. levels ---------------------------------------------------------------- */

typedef struct Levels {
  int32_t *level; /* [num_nodes], by forest index */
  int32_t kmax;   /* most dependencies of a node */
  int32_t count;  /* number of levels */
} Levels;

/* One scan from the last node down; 0 at the first dependency that does not follow
 * its node (or lies out of range). */
static int levels_down(const CtxrtForest *f, Levels *lv) {
  const int32_t *db = f->dep_begin, *dep = f->dep;
  int32_t n = f->num_nodes, *level = lv->level, kmax = 0, top = -1;
  for (int32_t v = n - 1; v >= 0; v--) {
    int32_t b = db[v], e = db[v + 1], l = 0;
    if (e - b > kmax) kmax = e - b;
    for (int32_t k = b; k < e; k++) {
      int32_t d = dep[k];
      if (d <= v || d >= n) return 0;
      if (level[d] >= l) l = level[d] + 1;
    }
    level[v] = l;
    if (l > top) top = l;
  }
  lv->kmax = kmax;
  lv->count = top + 1;
  return 1;
}

/* One scan from the first node up; 0 at the first dependency that does not
 * precede its node (or lies out of range). */
static int levels_up(const CtxrtForest *f, Levels *lv) {
  const int32_t *db = f->dep_begin, *dep = f->dep;
  int32_t n = f->num_nodes, *level = lv->level, kmax = 0, top = -1;
  for (int32_t v = 0; v < n; v++) {
    int32_t b = db[v], e = db[v + 1], l = 0;
    if (e - b > kmax) kmax = e - b;
    for (int32_t k = b; k < e; k++) {
      int32_t d = dep[k];
      if (d >= v || d < 0) return 0;
      if (level[d] >= l) l = level[d] + 1;
    }
    level[v] = l;
    if (l > top) top = l;
  }
  lv->kmax = kmax;
  lv->count = top + 1;
  return 1;
}

/* Kahn left node [u] unfinished: walk back through unfinished dependencies
 * (each unfinished node has one) until the walk must be on a cycle. */
static CtxrtStatus cycle_err(const CtxrtForest *f, const int32_t *pending, int32_t u,
                             CtxrtError *err) {
  for (int32_t step = 0; step < f->num_nodes; step++)
    for (int32_t k = f->dep_begin[u]; k < f->dep_begin[u + 1]; k++)
      if (pending[f->dep[k]] > 0) {
        u = f->dep[k];
        break;
      }
  return node_err(f, err, u, "on a dependency cycle");
}

/* Reverse-edge index: the nodes depending on d are users[ubegin[d] ..
 * ubegin[d + 1]). Checks every dependency is in range. */
static CtxrtStatus index_users(const CtxrtForest *f, int32_t *ubegin, int32_t *users,
                               CtxrtError *err) {
  int32_t n = f->num_nodes;
  memset(ubegin, 0, ((size_t)n + 1) * sizeof *ubegin);
  for (int32_t v = 0; v < n; v++)
    for (int32_t k = f->dep_begin[v]; k < f->dep_begin[v + 1]; k++) {
      int32_t d = f->dep[k];
      if (d < 0 || d >= n || d == v)
        return node_err(f, err, v, "dependency %d out of range or on itself", (int)d);
      ubegin[d + 1]++;
    }
  for (int32_t v = 0; v < n; v++)
    ubegin[v + 1] += ubegin[v];
  for (int32_t v = 0; v < n; v++) /* ubegin[d] is d's fill cursor for now */
    for (int32_t k = f->dep_begin[v]; k < f->dep_begin[v + 1]; k++)
      users[ubegin[f->dep[k]]++] = v;
  for (int32_t v = n; v > 0; v--)
    ubegin[v] = ubegin[v - 1];
  ubegin[0] = 0;
  return CTXRT_OK;
}

/* Kahn's algorithm in any node order; [scratch] holds the level array then
 * ubegin[n + 1], users[edges], queue[n], pending[n]. */
static CtxrtStatus levels_kahn(const CtxrtForest *f, Levels *lv, CtxrtError *err) {
  int32_t n = f->num_nodes, *level = lv->level;
  int32_t *ubegin = level + n, *users = ubegin + n + 1;
  int32_t *queue = users + f->dep_begin[n], *pending = queue + n;
  CtxrtStatus st = index_users(f, ubegin, users, err);
  if (st != CTXRT_OK) return st;
  int32_t tail = 0, kmax = 0, top = n > 0 ? 0 : -1;
  for (int32_t v = 0; v < n; v++) {
    pending[v] = f->dep_begin[v + 1] - f->dep_begin[v];
    if (pending[v] > kmax) kmax = pending[v];
    level[v] = 0;
    if (pending[v] == 0) queue[tail++] = v;
  }
  for (int32_t head = 0; head < tail; head++) {
    int32_t v = queue[head], l = level[v] + 1;
    for (int32_t k = ubegin[v]; k < ubegin[v + 1]; k++) {
      int32_t u = users[k];
      if (level[u] < l) level[u] = l;
      if (--pending[u] == 0) {
        queue[tail++] = u;
        if (level[u] > top) top = level[u];
      }
    }
  }
  if (tail < n)
    for (int32_t v = 0; v < n; v++)
      if (pending[v] > 0) return cycle_err(f, pending, v, err);
  lv->kmax = kmax;
  lv->count = top + 1;
  return CTXRT_OK;
}

/* Balanced levels (CtxrtLinear.balance): each node with dependencies goes to
 * a level between its height and its latest level (one below the latest of
 * the nodes that depend on it; the last level for those nothing depends on).
 * Level by level from 1, a level takes the nodes that must go there (at their
 * latest) and then, least slack first, ready nodes (every dependency placed
 * below) until it holds its share of the nodes left, ceil(left / levels
 * left). Leaves stay at level 0 and the level count stays the height's; only
 * the sizes even out. A tree batch's top levels, of one or two nodes of its
 * tallest tree, then also run the short trees' and side branches' nodes
 * that ASAP levels put at the bottom (SST trees, 10 a batch: levels of 36,
 * 24, 17, ..., 2, 1, 1, 1 become 7 or 8 each). Where a level's weights
 * stream from beyond the L2, a level of one node costs about as much as a
 * level of several, so evening them out saves whole levels' worth of
 * weight traffic (the kernel's descriptor says when: balance_threads).
 * The ready nodes wait in a binary heap by latest level, so the work is
 * O(n log n) whatever the shape (a bucket per level, scanned upwards from
 * each level, was quadratic in the height for a long sequence beside many
 * small trees). [lv->level] holds the heights on entry and the levels on
 * return; [scratch] (BALANCE_SCRATCH(n, edges) int32s) starts with it. */
#define BALANCE_SCRATCH(n, edges) (7 * (size_t)(n) + 1 + (size_t)(edges))

/* A min-heap [heap] of [*size] nodes keyed by [key]: [v] added. */
static void heap_push(int32_t *heap, int32_t *size, const int32_t *key, int32_t v) {
  int32_t i = (*size)++;
  while (i > 0 && key[heap[(i - 1) / 2]] > key[v]) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = v;
}

/* The heap's node of the least key, taken out. */
static int32_t heap_pop(int32_t *heap, int32_t *size, const int32_t *key) {
  int32_t top = heap[0], v = heap[--*size], i = 0, n = *size;
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && key[heap[c + 1]] < key[heap[c]]) c++;
    if (key[heap[c]] >= key[v]) break;
    heap[i] = heap[c];
    i = c;
  }
  if (n > 0) heap[i] = v;
  return top;
}

static void balance_levels(const CtxrtForest *f, Levels *lv, int32_t *scratch) {
  int32_t n = f->num_nodes, L = lv->count, *level = lv->level;
  const int32_t *db = f->dep_begin;
  int32_t *ubegin = scratch + n, *users = ubegin + n + 1, *order = users + db[n];
  int32_t *latest = order + n, *pending = latest + n, *born = pending + n, *heap = born + n;
  /* level, ubegin, users, order, latest, pending, born, heap: BALANCE_SCRATCH */
  int32_t *count = heap; /* the counting sort's, before the heap is used */
  CtxrtError unused;
  if (L < 3 || index_users(f, ubegin, users, &unused) != CTXRT_OK) return;
  /* order: highest first, so that a node comes before its dependencies */
  memset(count, 0, (size_t)L * sizeof *count);
  for (int32_t v = 0; v < n; v++)
    count[level[v]]++;
  for (int32_t l = L - 1, at = 0; l >= 0; l--) {
    int32_t c = count[l];
    count[l] = at;
    at += c;
  }
  for (int32_t v = 0; v < n; v++)
    order[count[level[v]]++] = v;
  for (int32_t v = 0; v < n; v++)
    latest[v] = L - 1;
  for (int32_t i = 0; i < n; i++)
    for (int32_t u = order[i], k = db[u]; k < db[u + 1]; k++)
      if (latest[f->dep[k]] >= latest[u]) latest[f->dep[k]] = latest[u] - 1;
  int32_t left = 0, nborn = 0, size = 0;
  for (int32_t v = 0; v < n; v++) {
    pending[v] = db[v + 1] - db[v];
    left += pending[v] > 0;
  }
  for (int32_t v = 0; v < n; v++)
    if (db[v + 1] == db[v])
      for (int32_t k = ubegin[v]; k < ubegin[v + 1]; k++)
        if (--pending[users[k]] == 0) born[nborn++] = users[k];
  for (int32_t l = 1; l < L; l++) {
    for (int32_t i = 0; i < nborn; i++) /* ready from this level on */
      heap_push(heap, &size, latest, born[i]);
    nborn = 0;
    /* those at their latest (at the top: no ready node's is below l), then
     * the least slack up to the level's share */
    int32_t share = (left + (L - l) - 1) / (L - l), taken = 0;
    while (size > 0 && (taken < share || latest[heap[0]] == l)) {
      int32_t v = heap_pop(heap, &size, latest);
      level[v] = l;
      taken++, left--;
      for (int32_t k = ubegin[v]; k < ubegin[v + 1]; k++)
        if (--pending[users[k]] == 0) born[nborn++] = users[k];
    }
  }
}

/* Fills [lv] for [f], growing [lin]'s scratch as needed. */
static CtxrtStatus compute_levels(CtxrtLinear *lin, const CtxrtForest *f, Levels *lv,
                                  CtxrtError *err) {
  size_t n = (size_t)f->num_nodes;
  int balance = lin->balance != 0;
  if (!ensure(&lin->scratch_, &lin->scratch_cap_,
              (balance ? BALANCE_SCRATCH(n, f->dep_begin[n]) : n) * 4))
    return ctxrt__nomem(err, f->name);
  lv->level = lin->scratch_;
  CtxrtStatus st = CTXRT_OK;
  if (!levels_down(f, lv) && !levels_up(f, lv)) {
    size_t bytes = (4 * n + 1 + (size_t)f->dep_begin[n]) * 4;
    if (!ensure(&lin->scratch_, &lin->scratch_cap_, bytes))
      return ctxrt__nomem(err, f->name);
    lv->level = lin->scratch_;
    st = levels_kahn(f, lv, err);
  }
  if (st == CTXRT_OK && balance) balance_levels(f, lv, lin->scratch_);
  return st;
}

/* --- 2. numbering ------------------------------------------------------------- */

/* Within each level, the nodes of each group in turn, then the rest
 * (stable: each in the order numbering gave them), by a counting sort per
 * level; to_new serves as the scratch row and is rebuilt, outputs (not yet
 * filled: dep_rows) holds each node's group. O(nodes x groups) to find the
 * groups, the first that takes a node in table order, then O(nodes). A
 * node's place among its parent's dependencies (position groups) is in
 * position_, -1 for a root. */
static void group_nodes(CtxrtLinear *lin, const CtxrtForest *f) {
  int32_t L = lin->num_levels, G = lin->num_groups, *tmp = lin->to_new, *at = lin->position_;
  int32_t *group = lin->outputs;
  const int32_t *db = f->dep_begin;
  int places = positions(lin);
  if (places) {
    for (int32_t v = 0; v < lin->num_nodes; v++)
      at[v] = -1;
    for (int32_t u = 0; u < lin->num_nodes; u++)
      for (int32_t j = db[u]; j < db[u + 1]; j++)
        at[f->dep[j]] = j - db[u];
  }
  for (int32_t w = 0; w < lin->num_nodes; w++) { /* no branch on the node: places alternate */
    int32_t v = lin->to_input[w], c = db[v + 1] - db[v], p = places ? at[v] : -1, in = G;
    for (int32_t h = G - 1; h >= 0; h--) {
      int32_t key = lin->group_arity[h];
      in = (key >= 0 ? key == c : p == -1 - key) ? h : in;
    }
    group[w] = in;
  }
  for (int32_t l = 0; l < L; l++) {
    int32_t s = lin->level_start[l], e = lin->level_start[l + 1];
    int32_t at_group[CTXRT_MAX_GROUPS + 1] = {0};
    for (int32_t w = s; w < e; w++)
      at_group[group[w]]++;
    for (int32_t g = 0, pos = s; g <= G; g++) { /* counts to each group's first slot */
      int32_t count = at_group[g];
      at_group[g] = pos;
      pos += count;
      if (g < G) lin->group_end[g * L + l] = pos;
    }
    for (int32_t w = s; w < e; w++)
      tmp[at_group[group[w]]++] = lin->to_input[w];
    memcpy(lin->to_input + s, tmp + s, (size_t)(e - s) * sizeof *tmp);
  }
  for (int32_t w = 0; w < lin->num_nodes; w++)
    lin->to_new[lin->to_input[w]] = w;
}

/* A stable counting sort of the forest's nodes by level. */
static void number_nodes(CtxrtLinear *lin, const CtxrtForest *f, const Levels *lv) {
  int32_t n = lin->num_nodes, L = lv->count;
  int32_t *start = lin->level_start, *len = lin->level_len;
  memset(len, 0, (size_t)L * sizeof *len);
  for (int32_t v = 0; v < n; v++)
    len[lv->level[v]]++;
  start[0] = 0;
  for (int32_t l = 0; l < L; l++) {
    start[l + 1] = start[l] + len[l];
    len[l] = start[l]; /* now the level's fill cursor */
  }
  for (int32_t v = 0; v < n; v++) {
    int32_t w = len[lv->level[v]]++;
    lin->to_new[v] = w;
    lin->to_input[w] = v;
  }
  for (int32_t l = 0; l < L; l++)
    len[l] = start[l + 1] - start[l];
  lin->num_levels = L;
  if (lin->num_groups) group_nodes(lin, f);
  lin->leaf_end = L > 0 ? start[1] : 0;
}

/* --- 3. rows ------------------------------------------------------------------ */

static int32_t to_int(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return CTXRT_NOT_INT;
  int32_t t = (int32_t)x;
  return (double)t == x ? t : CTXRT_NOT_INT;
}

void ctxrt__linear_val_rows(CtxrtLinear *lin, const CtxrtForest *f, int32_t w0, int32_t w1) {
  const int32_t *restrict vb = f->val_begin, *restrict to_input = lin->to_input;
  const double *restrict val = f->val;
  const unsigned char *restrict has = lin->has_val;
  int32_t V = lin->num_values;
  float *restrict fr = lin->val + (size_t)w0 * (size_t)V;
  for (int32_t w = w0; w < w1; w++, fr += V) {
    const double *restrict x = val + vb[to_input[w]];
    if (has[w]) ctxrt__to_f32(fr, x, (size_t)V);
    else memset(fr, 0, (size_t)V * sizeof *fr);
  }
}

/* Dense value rows in new-id order: the value counts checked, has_val, the
 * int32 rows unless skip_ival, the float rows unless skip_val
 * (ctxrt__linear_val_rows). Pointers are copied to restrict-qualified
 * locals so the compiler need not reload them after every store. */
static CtxrtStatus value_rows(CtxrtLinear *lin, const CtxrtForest *f, CtxrtError *err) {
  const int32_t *restrict vb = f->val_begin, *restrict to_input = lin->to_input;
  const double *restrict val = f->val;
  int32_t *restrict ir = lin->ival;
  unsigned char *restrict has = lin->has_val;
  int32_t n = lin->num_nodes, V = lin->num_values;
  for (int32_t w = 0; w < n; w++, ir += V) {
    int32_t v = to_input[w], b = vb[v], c = vb[v + 1] - b;
    if (c != V && c != 0)
      return node_err(f, err, v, "expected %d values or none, found %d", (int)V, (int)c);
    has[w] = c != 0;
    const double *restrict x = val + b;
    if (!lin->skip_ival) {
      if (c) for (int32_t j = 0; j < V; j++) ir[j] = to_int(x[j]);
      else memset(ir, 0, (size_t)V * sizeof *ir); /* to_int(0) */
    }
  }
  if (!lin->skip_val) ctxrt__linear_val_rows(lin, f, 0, n);
  return CTXRT_OK;
}

/* Dependency rows in new-id order (K already covers every node); marks in [used]
 * (by forest index) every node something depends on. */
static void dep_rows(CtxrtLinear *lin, const CtxrtForest *f, int32_t *restrict used) {
  const int32_t *restrict db = f->dep_begin, *restrict fdep = f->dep;
  const int32_t *restrict to_new = lin->to_new, *restrict to_input = lin->to_input;
  int32_t *restrict num_deps = lin->num_deps, *restrict row = lin->dep;
  int32_t n = lin->num_nodes, K = lin->max_deps;
  memset(used, 0, (size_t)n * sizeof *used);
  for (int32_t w = 0; w < n; w++, row += K) {
    int32_t v = to_input[w], b = db[v], c = db[v + 1] - b, k = 0;
    num_deps[w] = c;
    for (; k < c; k++) {
      int32_t d = fdep[b + k];
      row[k] = to_new[d];
      used[d] = 1;
    }
    for (; k < K; k++)
      row[k] = -1;
  }
}

/* --- 4. outputs and the entry points ------------------------------------------ */

/* Compacts [lin->outputs], which holds the used flags, into the new ids of the
 * unused nodes in forest order (the write index never passes the read index). */
static void collect_outputs(CtxrtLinear *lin) {
  int32_t count = 0, *out = lin->outputs;
  for (int32_t v = 0; v < lin->num_nodes; v++)
    if (!out[v]) out[count++] = lin->to_new[v];
  lin->num_outputs = count;
}

static CtxrtStatus fill(CtxrtLinear *lin, const CtxrtForest *f, int32_t num_values,
                        int32_t max_deps, CtxrtError *err) {
  Levels lv = {NULL, 0, 0};
  CtxrtStatus st = compute_levels(lin, f, &lv, err);
  if (st != CTXRT_OK) return st;
  int32_t n = f->num_nodes, K = max_deps > 0 ? max_deps : lv.kmax;
  if (lv.kmax > K) /* name the first node, in forest order, with too many */
    for (int32_t v = 0; v < n; v++) {
      int32_t c = f->dep_begin[v + 1] - f->dep_begin[v];
      if (c > K)
        return node_err(f, err, v, "%d dependencies, more than the most allowed, %d",
                        (int)c, (int)K);
    }
  if ((int64_t)n * K > INT32_MAX || (int64_t)n * num_values > INT32_MAX)
    return ctxrt__nomem(err, f->name);
  lin->max_deps = K;
  lin->num_values = num_values;
  if (!carve(lin, n, lv.count)) return ctxrt__nomem(err, f->name);
  lin->num_nodes = n;
  number_nodes(lin, f, &lv);
  dep_rows(lin, f, lin->outputs);
  if (num_values == 0)
    memset(lin->has_val, 0, (size_t)n);
  else if ((st = value_rows(lin, f, err)) != CTXRT_OK)
    return st;
  collect_outputs(lin);
  lin->kind = f->kind;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_linear_fill(CtxrtLinear *lin, const CtxrtForest *f, int32_t num_values,
                              int32_t max_deps, CtxrtError *err) {
  make_empty(lin);
  if (num_values < 0 || max_deps < 0)
    return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0,
                      "linearize: negative num_values (%d) or max_deps (%d)",
                      (int)num_values, (int)max_deps);
  CtxrtStatus st = fill(lin, f, num_values, max_deps, err);
  if (st != CTXRT_OK) make_empty(lin);
  return st;
}

CtxrtStatus ctxrt_linear_set_groups(CtxrtLinear *lin, const int32_t *arity, int32_t n,
                                    CtxrtError *err) {
  if (n < 0 || n > CTXRT_MAX_GROUPS)
    return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "linearize: %d groups, at most %d", (int)n,
                      CTXRT_MAX_GROUPS);
  for (int32_t g = 0; g < n; g++)
    for (int32_t h = 0; h <= g; h++)
      if (arity[g] < CTXRT_POSITION_GROUP(1 << 30) || (h < g && arity[h] == arity[g]))
        return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0,
                          "linearize: group %d (%d) out of range or repeated", (int)g,
                          (int)arity[g]);
  make_empty(lin);
  lin->num_groups = n;
  if (n) memcpy(lin->group_arity, arity, (size_t)n * sizeof *arity);
  if (!carve(lin, 0, 0)) return ctxrt__nomem(err, NULL);
  return CTXRT_OK;
}

CtxrtStatus ctxrt_linear_create(const CtxrtForest *f, int32_t num_values,
                                int32_t max_deps, CtxrtLinear **out, CtxrtError *err) {
  *out = NULL;
  CtxrtLinear *lin = calloc(1, sizeof *lin);
  if (!lin || !carve(lin, 0, 0)) {
    ctxrt_linear_destroy(lin);
    return ctxrt__nomem(err, f ? f->name : NULL);
  }
  make_empty(lin);
  if (f) {
    CtxrtStatus st = ctxrt_linear_fill(lin, f, num_values, max_deps, err);
    if (st != CTXRT_OK) {
      ctxrt_linear_destroy(lin);
      return st;
    }
  }
  *out = lin;
  return CTXRT_OK;
}

void ctxrt_linear_destroy(CtxrtLinear *lin) {
  if (!lin) return;
  free(lin->block_);
  free(lin->scratch_);
  free(lin);
}

/* --- 5. phases ------------------------------------------------------------------
 *
 * The phases of a batch under unroll_recursion K: which levels end with a
 * barrier (CTXRT_BUF_PHASES in ctxrt.h), for the team's thread count, given
 * by the model at each run.
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

/* Is level [l] a single node (the kernel then leaves out the barrier
 * between it and a next single node: codegen's barrier_skippable)? */
static int single(const CtxrtLinear *lin, int32_t l) {
  return l >= lin->num_levels || lin->level_len[l] == 1;
}

/* The level of node [d] (binary search over level_start). */
static int32_t level_of(const CtxrtLinear *lin, int32_t d) {
  int32_t lo = 0, hi = lin->num_levels - 1;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo + 1) / 2;
    if (lin->level_start[mid] <= d) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* The barriers the kernel meets are those of [barrier] but the ones
 * between two single-node levels, which it leaves out whatever the phases
 * say. A phase ending at such a level then goes on into the next: a level
 * of leaves shared by two threads, joined by a single parent, then that
 * parent's single parent reading a leaf of the other thread, met no barrier
 * at all. So every node's dependencies computed by another thread are
 * checked against the barriers met; where none lies between, one is put at
 * the last level end that the kernel keeps: before the node's level, or else
 * after the dependency's (which has more than one node: a level of one runs
 * on thread 0, as does a node reading across a kept-out barrier). */
static void met_barriers(const CtxrtLinear *lin, int32_t nthreads, int32_t *barrier) {
  int32_t L = lin->num_levels, K = lin->max_deps, synced = 0; /* levels below it are done */
  for (int32_t m = 1; m < L; m++) {
    if (barrier[m - 1] && !(single(lin, m - 1) && single(lin, m))) synced = m;
    for (int32_t v = lin->level_start[m]; v < lin->level_start[m + 1]; v++) {
      int32_t t = owner(lin, m, v, nthreads);
      for (int32_t k = 0; k < lin->num_deps[v]; k++) {
        int32_t d = lin->dep[(int64_t)v * K + k];
        if (d < lin->level_start[synced]) continue;
        int32_t j = level_of(lin, d);
        if (owner(lin, j, d, nthreads) == t) continue;
        int32_t b = single(lin, m - 1) && single(lin, m) ? j : m - 1;
        barrier[b] = 1;
        synced = b + 1;
      }
    }
  }
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
  if (nthreads > 1) met_barriers(lin, nthreads, barrier);
}

int32_t ctxrt__steps(const CtxrtLinear *lin, const int32_t *barrier) {
  int32_t L = lin->num_levels, steps = 0;
  for (int32_t l = 0; l < L; l++) {
    steps += (!barrier || barrier[l]) && !(single(lin, l) && single(lin, l + 1));
  }
  return steps;
}
