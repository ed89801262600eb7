/* ctxrt_validate.c — checks a forest against what the model declares.
 *
 * Runs once per input, before any tensor work, in time and memory linear in the
 * forest: per-node checks (arity, dependencies inside the structure and not
 * repeated, value counts, word ids), then per-structure shape checks — trees: one
 * parent per node, exactly one root, every node reachable from it (else a cycle);
 * DAGs: Kahn's algorithm, and on a leftover a walk backwards through unfinished
 * predecessors until it must be on a cycle; sequences: each element depends on
 * the one before it only. No recursion anywhere, so depth costs nothing.
 *
 * Guarantees: the first problem (structures in order, per-node problems in node
 * order before shape problems) is reported with the node's source line (none for
 * generated forests), `structure S` 1-based and the node's user id; a forest that
 * passes can be linearized without further checks.
 */
#include "ctxrt_int.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct Validator {
  const CtxrtForest *f;
  const CtxrtSpec *spec;
  CtxrtError *err;
  int s;              /* current structure, 1-based */
  int32_t first, end; /* its node range */
  int32_t *a, *b, *c; /* scratch, one entry per node of a structure (+1) */
  int32_t *e;         /* scratch, one entry per dependency of a structure */
  int32_t *mark;      /* [num_nodes]: last node that listed this dependency */
} Validator;

/* `structure S, node ID: MESSAGE` at node [n]'s line. */
static CtxrtStatus CTXRT_PRINTF(3, 4)
    node_err(Validator *v, int32_t n, const char *fmt, ...) {
  char tail[CTXRT_MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tail, sizeof tail, fmt, ap);
  va_end(ap);
  return ctxrt__err(v->err, CTXRT_ERR_INVALID, v->f->name, v->f->line[n],
                    "structure %d, node %lld: %s", v->s, (long long)v->f->id[n], tail);
}

static long long uid(const Validator *v, int32_t n) {
  return (long long)v->f->id[n];
}

/* The dependency noun for [count] dependencies of the forest's kind. */
static const char *dep_noun(CtxrtKind kind, int32_t count) {
  int one = count == 1;
  switch (kind) {
  case CTXRT_TREE:
    return one ? "child" : "children";
  case CTXRT_DAG:
    return one ? "predecessor" : "predecessors";
  default:
    return one ? "dependency" : "dependencies";
  }
}

static CtxrtStatus check_deps(Validator *v, int32_t n) {
  const CtxrtForest *f = v->f;
  int32_t count = ctxrt_forest_num_deps(f, n);
  int32_t max = v->spec->max_arity, min = v->spec->min_arity;
  if (f->kind != CTXRT_SEQUENCE && max > 0 && count > max)
    return node_err(v, n, "%d %s, more than the maximum %d", (int)count,
                    dep_noun(f->kind, count), (int)max);
  if (f->kind != CTXRT_SEQUENCE && min > 0 && count > 0 && count < min)
    return node_err(v, n, "%d %s, fewer than the minimum %d", (int)count,
                    dep_noun(f->kind, count), (int)min);
  for (int32_t k = f->dep_begin[n]; k < f->dep_begin[n + 1]; k++) {
    int32_t d = f->dep[k];
    if (d < v->first || d >= v->end)
      return node_err(v, n, "dependency index %d outside its structure", (int)d);
    if (v->mark[d] == n) return node_err(v, n, "dependency %lld listed twice", uid(v, d));
    v->mark[d] = n;
  }
  return CTXRT_OK;
}

static CtxrtStatus check_values(Validator *v, int32_t n) {
  const CtxrtForest *f = v->f;
  const CtxrtSpec *spec = v->spec;
  int32_t want = spec->num_values > 0 ? spec->num_values : 0;
  int32_t have = f->val_begin[n + 1] - f->val_begin[n];
  int leaf = ctxrt_forest_num_deps(f, n) == 0;
  int either = spec->values_on == CTXRT_VALUES_LEAVES && !leaf && want > 0;
  if (have != want && !(either && have == 0)) {
    const char *noun = have == 1 ? "value" : "values";
    if (either)
      return node_err(v, n, "%d %s, expected 0 or %d", (int)have, noun, (int)want);
    return node_err(v, n, "%d %s, expected %d", (int)have, noun, (int)want);
  }
  for (int32_t i = 0; i < have && spec->word_bound; i++) {
    int64_t bound = spec->word_bound[i];
    double x = f->val[f->val_begin[n] + i];
    if (bound <= 0) continue;
    if (!f->val_is_int[f->val_begin[n] + i])
      return node_err(v, n, "value %d is %g, expected an integer word id", (int)i + 1, x);
    if (!(x >= 0 && x < (double)bound))
      return node_err(v, n, "value %d is word id %.0f, outside [0, %lld)", (int)i + 1, x,
                      (long long)bound);
  }
  return CTXRT_OK;
}

/* ---------------------------------------------------------------- trees */

/* From a node not reachable from the root, parent links lead into a cycle; after
 * size steps the walk is on it. [parent] holds local indices. */
static CtxrtStatus tree_cycle(Validator *v, const int32_t *parent, int32_t u) {
  for (int32_t i = 0; i < v->end - v->first; i++)
    u = parent[u];
  int32_t n = v->first + u;
  return ctxrt__err(v->err, CTXRT_ERR_INVALID, v->f->name, v->f->line[n],
                    "structure %d: cycle through node %lld", v->s, uid(v, n));
}

static CtxrtStatus check_tree(Validator *v) {
  const CtxrtForest *f = v->f;
  int32_t size = v->end - v->first, *parent = v->a, *queue = v->b, *seen = v->c;
  for (int32_t i = 0; i < size; i++)
    parent[i] = -1, seen[i] = 0;
  for (int32_t n = v->first; n < v->end; n++)
    for (int32_t k = f->dep_begin[n]; k < f->dep_begin[n + 1]; k++) {
      int32_t c = f->dep[k] - v->first;
      if (parent[c] >= 0)
        return ctxrt__err(v->err, CTXRT_ERR_INVALID, f->name, f->line[n],
                          "structure %d, node %lld: two parents, nodes %lld and %lld",
                          v->s, uid(v, v->first + c), uid(v, v->first + parent[c]),
                          uid(v, n));
      parent[c] = n - v->first;
    }
  int32_t root = -1;
  for (int32_t i = 0; i < size; i++) {
    if (parent[i] >= 0) continue;
    if (root >= 0)
      return ctxrt__err(v->err, CTXRT_ERR_INVALID, f->name, f->line[v->first + i],
                        "structure %d: several roots, nodes %lld and %lld", v->s,
                        uid(v, v->first + root), uid(v, v->first + i));
    root = i;
  }
  if (root < 0)
    return ctxrt__err(v->err, CTXRT_ERR_INVALID, f->name, f->struct_line[v->s - 1],
                      "structure %d: no root (every node is the child of another)", v->s);
  int32_t head = 0, tail = 0;
  queue[tail++] = root;
  seen[root] = 1;
  while (head < tail) {
    int32_t n = v->first + queue[head++];
    for (int32_t k = f->dep_begin[n]; k < f->dep_begin[n + 1]; k++) {
      int32_t c = f->dep[k] - v->first;
      if (!seen[c]) seen[c] = 1, queue[tail++] = c;
    }
  }
  for (int32_t i = 0; tail < size && i < size; i++)
    if (!seen[i]) return tree_cycle(v, parent, i);
  return CTXRT_OK;
}

/* ---------------------------------------------------------------- DAGs */

/* Walks back from unfinished node [u] through unfinished predecessors ([left] > 0)
 * until the walk must be on a cycle. */
static CtxrtStatus dag_cycle(Validator *v, const int32_t *left, int32_t u) {
  const CtxrtForest *f = v->f;
  for (int32_t i = 0; i < v->end - v->first; i++) {
    int32_t n = v->first + u;
    for (int32_t k = f->dep_begin[n]; k < f->dep_begin[n + 1]; k++)
      if (left[f->dep[k] - v->first] > 0) {
        u = f->dep[k] - v->first;
        break;
      }
  }
  int32_t n = v->first + u;
  return ctxrt__err(v->err, CTXRT_ERR_INVALID, f->name, f->line[n],
                    "structure %d: cycle through node %lld", v->s, uid(v, n));
}

static CtxrtStatus check_dag(Validator *v) {
  const CtxrtForest *f = v->f;
  int32_t size = v->end - v->first, base = f->dep_begin[v->first];
  int32_t *left = v->a, *succ_begin = v->b, *queue = v->c, *succ = v->e;
  /* Successor lists, CSR by counting. */
  for (int32_t i = 0; i <= size; i++)
    succ_begin[i] = 0;
  for (int32_t k = base; k < f->dep_begin[v->end]; k++)
    succ_begin[f->dep[k] - v->first + 1]++;
  for (int32_t i = 0; i < size; i++)
    succ_begin[i + 1] += succ_begin[i];
  for (int32_t i = 0; i < size; i++)
    left[i] = succ_begin[i]; /* fill cursor */
  for (int32_t n = v->first; n < v->end; n++)
    for (int32_t k = f->dep_begin[n]; k < f->dep_begin[n + 1]; k++)
      succ[left[f->dep[k] - v->first]++] = n - v->first;
  /* Kahn: a node is ready once all its predecessors are done. */
  int32_t head = 0, tail = 0;
  for (int32_t i = 0; i < size; i++) {
    left[i] = ctxrt_forest_num_deps(f, v->first + i);
    if (left[i] == 0) queue[tail++] = i;
  }
  while (head < tail) {
    int32_t u = queue[head++];
    for (int32_t k = succ_begin[u]; k < succ_begin[u + 1]; k++)
      if (--left[succ[k]] == 0) queue[tail++] = succ[k];
  }
  for (int32_t i = 0; tail < size && i < size; i++)
    if (left[i] > 0) return dag_cycle(v, left, i);
  return CTXRT_OK;
}

/* ---------------------------------------------------------------- driver */

static CtxrtStatus check_sequence(Validator *v) {
  const CtxrtForest *f = v->f;
  for (int32_t n = v->first; n < v->end; n++) {
    int32_t count = ctxrt_forest_num_deps(f, n);
    int ok = n == v->first ? count == 0 : count == 1 && f->dep[f->dep_begin[n]] == n - 1;
    if (!ok)
      return node_err(v, n, "a sequence element depends only on the one before it");
  }
  return CTXRT_OK;
}

static CtxrtStatus check_structure(Validator *v) {
  const CtxrtForest *f = v->f;
  if (v->first == v->end)
    return ctxrt__err(v->err, CTXRT_ERR_INVALID, f->name, f->struct_line[v->s - 1],
                      "structure %d: '%s' with no nodes", v->s, ctxrt_kind_name(f->kind));
  for (int32_t n = v->first; n < v->end; n++) {
    CtxrtStatus st = check_deps(v, n);
    if (st == CTXRT_OK) st = check_values(v, n);
    if (st != CTXRT_OK) return st;
  }
  switch (f->kind) {
  case CTXRT_TREE:
    return check_tree(v);
  case CTXRT_DAG:
    return check_dag(v);
  case CTXRT_SEQUENCE:
    return check_sequence(v);
  case CTXRT_KIND_ANY:
    break;
  }
  return CTXRT_OK;
}

/* Allocates scratch for the largest structure. */
static int alloc_scratch(Validator *v) {
  const CtxrtForest *f = v->f;
  size_t nodes = 1, deps = 1;
  for (int32_t s = 0; s < f->num_structs; s++) {
    int32_t a = f->struct_begin[s], b = f->struct_begin[s + 1];
    if ((size_t)(b - a) + 1 > nodes) nodes = (size_t)(b - a) + 1;
    if ((size_t)(f->dep_begin[b] - f->dep_begin[a]) + 1 > deps)
      deps = (size_t)(f->dep_begin[b] - f->dep_begin[a]) + 1;
  }
  v->a = malloc(nodes * sizeof(int32_t));
  v->b = malloc(nodes * sizeof(int32_t));
  v->c = malloc(nodes * sizeof(int32_t));
  v->e = malloc(deps * sizeof(int32_t));
  v->mark = malloc(((size_t)f->num_nodes + 1) * sizeof(int32_t));
  if (v->mark)
    for (int32_t i = 0; i < f->num_nodes; i++)
      v->mark[i] = -1;
  return v->a && v->b && v->c && v->e && v->mark;
}

CtxrtStatus ctxrt_forest_validate(const CtxrtForest *f, const CtxrtSpec *spec,
                                  CtxrtError *err) {
  if (f->num_structs == 0)
    return ctxrt__err(err, CTXRT_ERR_INVALID, f->name, 1, "empty input (no structures)");
  if (spec->kind != CTXRT_KIND_ANY && spec->kind != f->kind)
    return ctxrt__err(err, CTXRT_ERR_INVALID, f->name, f->struct_line[0],
                      "structure 1 is a '%s', but the model reads '%s' structures",
                      ctxrt_kind_name(f->kind), ctxrt_kind_name(spec->kind));
  Validator v = {f, spec, err, 0, 0, 0, NULL, NULL, NULL, NULL, NULL};
  CtxrtStatus st = alloc_scratch(&v) ? CTXRT_OK : ctxrt__nomem(err, f->name);
  for (int32_t s = 0; st == CTXRT_OK && s < f->num_structs; s++) {
    v.s = s + 1;
    v.first = f->struct_begin[s];
    v.end = f->struct_begin[s + 1];
    st = check_structure(&v);
  }
  free(v.a);
  free(v.b);
  free(v.c);
  free(v.e);
  free(v.mark);
  return st;
}
