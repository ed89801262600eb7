/* ctxrt_gen.c — seeded, deterministic generators of input batches: random binary
 * trees, complete binary trees, random trees of bounded arity, chains, grid DAGs
 * and sequences, with word ids and/or feature vectors on their nodes.
 *
 * The exact algorithms and the order of draws from the one splitmix64 stream are
 * specified in ctxrt.h ("Generators"); this file must match that text, because
 * tests and other implementations (the benchmark baselines) reproduce the batches
 * from it. Per structure, the shape is drawn first into a local parent array (trees)
 * and then the nodes are emitted in node order with their values.
 *
 * Guarantees: the same spec gives the same forest, bit for bit, on every platform;
 * every generated forest passes ctxrt_forest_validate for its own kind (trees have
 * one root, DAGs no cycle); no recursion, so a 100,000-node chain is as cheap as
 * any other shape; sizes are checked against CTXRT_GEN_MAX_NODES / _VALUES first.
 */
#include "ctxrt_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct Gen {
  const CtxrtGenSpec *spec;
  CtxrtRng rng;
  CtxrtBuild b;
  int64_t size;      /* nodes per structure */
  int32_t *local;    /* [size]: parent within the structure, -1 for the root */
  int32_t *children; /* [size]: number of children (trees) */
  int32_t *work;     /* [2 * size]: the binary tree stack, or the nary open list */
  int32_t *parent;   /* [all nodes]: global parents, for trees */
} Gen;

/* A random binary tree of spec->size leaves in pre-order: a subtree of m > 1
 * leaves gives 1 + below(m - 1) of them to its left child. */
static void shape_binary(Gen *g) {
  int32_t *stack = g->work, top = 0, next = 0; /* pairs (leaves, parent) */
  stack[top++] = (int32_t)g->spec->size;
  stack[top++] = -1;
  while (top) {
    int32_t p = stack[--top], m = stack[--top], me = next++;
    g->local[me] = p;
    if (m == 1) continue;
    int32_t left = 1 + (int32_t)ctxrt_rng_below(&g->rng, (uint64_t)(m - 1));
    stack[top++] = m - left; /* the right subtree, built after the left */
    stack[top++] = me;
    stack[top++] = left;
    stack[top++] = me;
  }
}

/* A random tree of size nodes with at most size2 children per node. */
static void shape_nary(Gen *g) {
  int32_t *open = g->work, nopen = 0, k = (int32_t)g->spec->size2;
  for (int32_t i = 0; i < g->size; i++)
    g->children[i] = 0;
  g->local[0] = -1;
  open[nopen++] = 0;
  for (int32_t i = 1; i < g->size; i++) {
    int32_t j = (int32_t)ctxrt_rng_below(&g->rng, (uint64_t)nopen), p = open[j];
    g->local[i] = p;
    if (++g->children[p] == k) open[j] = open[--nopen];
    open[nopen++] = i;
  }
}

/* Fills g->local for one tree-shaped structure. */
static void shape_tree(Gen *g) {
  switch (g->spec->shape) {
  case CTXRT_GEN_BINARY:
    shape_binary(g);
    break;
  case CTXRT_GEN_NARY:
    shape_nary(g);
    break;
  case CTXRT_GEN_COMPLETE:
    for (int32_t i = 0; i < g->size; i++)
      g->local[i] = i ? (i - 1) / 2 : -1;
    break;
  default: /* chain */
    for (int32_t i = 0; i < g->size; i++)
      g->local[i] = i - 1;
    break;
  }
  for (int32_t i = 0; i < g->size; i++)
    g->children[i] = 0;
  for (int32_t i = 1; i < g->size; i++)
    g->children[g->local[i]]++;
}

/* Appends node [i] of the structure starting at global index [first]. */
static void emit_node(Gen *g, int32_t first, int32_t i, CtxrtKind kind) {
  const CtxrtGenSpec *spec = g->spec;
  int32_t n = ctxrt__build_node(&g->b, i, 0);
  int leaf;
  if (kind == CTXRT_TREE) {
    if (!g->b.failed) g->parent[n] = g->local[i] < 0 ? -1 : first + g->local[i];
    leaf = g->children[i] == 0;
  } else if (kind == CTXRT_DAG) {
    int32_t cols = (int32_t)spec->size2, r = i / cols, c = i % cols;
    if (r > 0) ctxrt__build_dep(&g->b, n - cols);
    if (c > 0) ctxrt__build_dep(&g->b, n - 1);
    leaf = r == 0 && c == 0;
  } else {
    if (i > 0) ctxrt__build_dep(&g->b, n - 1);
    leaf = i == 0;
  }
  if (!leaf && ctxrt__gen_values(spec) == CTXRT_GEN_VALUES_LEAVES) return;
  if (spec->vocab > 0)
    ctxrt__build_value(&g->b, (double)ctxrt_rng_below(&g->rng, (uint64_t)spec->vocab), 1);
  for (int64_t d = 0; d < spec->features; d++)
    ctxrt__build_value(&g->b, (double)(float)(2.0 * ctxrt_rng_unit(&g->rng) - 1.0), 0);
}

static CtxrtKind gen_kind(CtxrtGenShape shape) {
  if (shape == CTXRT_GEN_GRID) return CTXRT_DAG;
  if (shape == CTXRT_GEN_SEQUENCE) return CTXRT_SEQUENCE;
  return CTXRT_TREE;
}

/* Scratch for trees: per-structure shape arrays and the global parent array. */
static int gen_alloc(Gen *g, int64_t total) {
  size_t size = (size_t)g->size;
  g->local = malloc(size * sizeof *g->local);
  g->children = malloc(size * sizeof *g->children);
  g->work = malloc((2 * size + 2) * sizeof *g->work);
  g->parent = malloc((size_t)total * sizeof *g->parent);
  return g->local && g->children && g->work && g->parent;
}

static void gen_free(Gen *g) {
  free(g->local);
  free(g->children);
  free(g->work);
  free(g->parent);
}

CtxrtStatus ctxrt_generate(const CtxrtGenSpec *spec, CtxrtForest **out, CtxrtError *err) {
  char name[256];
  *out = NULL;
  ctxrt_gen_format(spec, name, sizeof name);
  CtxrtStatus st = ctxrt__gen_check(spec, name, err);
  if (st != CTXRT_OK) return st;
  CtxrtKind kind = gen_kind(spec->shape);
  int64_t count = spec->count ? spec->count : 1;
  Gen g = {spec, {0}, {0}, ctxrt__gen_struct_nodes(spec), NULL, NULL, NULL, NULL};
  ctxrt_rng_seed(&g.rng, spec->seed);
  ctxrt__build_init(&g.b, kind, 0);
  if (kind == CTXRT_TREE && !gen_alloc(&g, g.size * count)) g.b.failed = 1;
  for (int64_t s = 0; s < count && !g.b.failed; s++) {
    int32_t first = (int32_t)g.b.id.len;
    ctxrt__build_struct(&g.b, 0);
    if (kind == CTXRT_TREE) shape_tree(&g);
    for (int32_t i = 0; i < g.size; i++)
      emit_node(&g, first, i, kind);
  }
  if (kind == CTXRT_TREE) ctxrt__build_deps_from_parents(&g.b, g.parent);
  st = ctxrt__build_finish(&g.b, name, out, err);
  gen_free(&g);
  return st;
}
