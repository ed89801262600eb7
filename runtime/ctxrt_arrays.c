/* ctxrt_arrays.c — forests from arrays a program already holds (ctx build's
 * NAME_run_arrays / NAME_run_heads, the Python API), so that structures need
 * not be printed as text to be read back.
 *
 * Two layouts, both structure after structure with node indices counted
 * from 0 within each structure:
 *   dependency lists  num_deps[n] per node, deps concatenated (a tree node's
 *                     children, a DAG node's predecessors, in order);
 *   parent arrays     heads[n] per node: its parent or -1 (trees only; the
 *                     children of a node come in index order).
 * Values are num_values doubles per node. Everything a text reader checks is
 * checked here (counts, indices in range, finite values); the shape (roots,
 * cycles, arity, word ids) is ctxrt_forest_validate's job, as for any reader.
 * Messages name the structure (from 1) and the node (its index, from 0).
 */
#include "ctxrt_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ArrayInput {
  const char *name;
  CtxrtError *err;
  int32_t num_structs;
  const int32_t *num_nodes;
  int32_t num_values;
  const double *values;
  CtxrtValuesOn values_on;
  CtxrtBuild b;
} ArrayInput;

/* Checks the counts; sets [*total] to the number of nodes. */
static CtxrtStatus check_counts(ArrayInput *a, int64_t *total) {
  *total = 0;
  if (a->num_structs < 0 || a->num_values < 0 || (a->num_structs > 0 && !a->num_nodes) ||
      (a->num_values > 0 && !a->values && a->num_structs > 0))
    return ctxrt__err(a->err, CTXRT_ERR_ARG, a->name, 0,
                      "bad arguments (a negative count or a missing array)");
  for (int32_t s = 0; s < a->num_structs; s++) {
    if (a->num_nodes[s] < 0)
      return ctxrt__err(a->err, CTXRT_ERR_ARG, a->name, 0, "structure %d: %d nodes",
                        (int)s + 1, (int)a->num_nodes[s]);
    *total += a->num_nodes[s];
    if ((uint64_t)*total * (uint64_t)(a->num_values + 1) > CTXRT_MAX_COUNT)
      return ctxrt__err(a->err, CTXRT_ERR_NOMEM, a->name, 0, "input too large");
  }
  return CTXRT_OK;
}

/* Node [n]'s values (global index [g]), unless it is an internal node of a
 * model that reads values at leaves only. */
static CtxrtStatus node_values(ArrayInput *a, int32_t s, int32_t n, int64_t g, int leaf) {
  if (a->values_on == CTXRT_VALUES_LEAVES && !leaf) return CTXRT_OK;
  const double *v = a->values + g * a->num_values;
  for (int32_t j = 0; j < a->num_values; j++) {
    if (!isfinite(v[j]))
      return ctxrt__err(a->err, CTXRT_ERR_INVALID, a->name, 0,
                        "structure %d, node %d: value %d is %g, expected a finite number",
                        (int)s + 1, (int)n, (int)j + 1, v[j]);
    /* integral values below 2^53 in magnitude count as integers (word ids) */
    int is_int = v[j] > -9.0e15 && v[j] < 9.0e15 && v[j] == (double)(int64_t)v[j];
    ctxrt__build_value(&a->b, v[j], is_int);
  }
  return CTXRT_OK;
}

static CtxrtStatus finish(ArrayInput *a, CtxrtStatus st, CtxrtForest **out) {
  if (st == CTXRT_OK && a->b.failed) st = ctxrt__nomem(a->err, a->name);
  if (st != CTXRT_OK) {
    ctxrt__build_free(&a->b);
    return st;
  }
  return ctxrt__build_finish(&a->b, a->name, out, a->err);
}

/* The dependencies of node [n] (global [g]) of structure [s]: [count] at [d]. */
static CtxrtStatus node_deps(ArrayInput *a, int32_t s, int32_t n, int64_t g,
                             const int32_t *d, int32_t count) {
  int32_t size = a->num_nodes[s], base = (int32_t)(g - n);
  for (int32_t k = 0; k < count; k++) {
    if (d[k] < 0 || d[k] >= size)
      return ctxrt__err(a->err, CTXRT_ERR_INVALID, a->name, 0,
                        "structure %d, node %d: dependency %d outside the structure (%d "
                        "node%s)",
                        (int)s + 1, (int)n, (int)d[k], (int)size, size == 1 ? "" : "s");
    ctxrt__build_dep(&a->b, base + d[k]);
  }
  return CTXRT_OK;
}

CtxrtStatus ctxrt_forest_from_arrays(const char *name, CtxrtKind kind, int32_t num_structs,
                                     const int32_t *num_nodes, const int32_t *num_deps,
                                     const int32_t *deps, int32_t num_values,
                                     const double *values, CtxrtValuesOn values_on,
                                     CtxrtForest **out, CtxrtError *err) {
  *out = NULL;
  ArrayInput a = {name, err, num_structs, num_nodes, num_values, values, values_on, {0}};
  int64_t total;
  CtxrtStatus st = check_counts(&a, &total);
  int seq = kind == CTXRT_SEQUENCE;
  if (st == CTXRT_OK && (kind < CTXRT_TREE || kind > CTXRT_SEQUENCE ||
                         (!seq && total > 0 && !num_deps)))
    st = ctxrt__err(err, CTXRT_ERR_ARG, name, 0, "bad arguments (kind, or no num_deps)");
  if (st != CTXRT_OK) return st;
  ctxrt__build_init(&a.b, kind, 0);
  int64_t g = 0, used = 0;
  for (int32_t s = 0; st == CTXRT_OK && s < num_structs; s++) {
    ctxrt__build_struct(&a.b, 0);
    for (int32_t n = 0; st == CTXRT_OK && n < num_nodes[s]; n++, g++) {
      ctxrt__build_node(&a.b, n, 0);
      int32_t count = seq ? (n > 0) : num_deps[g];
      if (count < 0)
        st = ctxrt__err(err, CTXRT_ERR_INVALID, name, 0, "structure %d, node %d: %d "
                        "dependencies", (int)s + 1, (int)n, (int)count);
      else if (seq && n > 0)
        ctxrt__build_dep(&a.b, (int32_t)g - 1);
      else if (!seq && count > 0 && (!deps || used + count > (int64_t)CTXRT_MAX_COUNT))
        st = ctxrt__err(err, CTXRT_ERR_ARG, name, 0, "bad arguments (no deps array)");
      else if (!seq)
        st = node_deps(&a, s, n, g, deps + used, count);
      if (!seq) used += count > 0 ? count : 0;
      if (st == CTXRT_OK) st = node_values(&a, s, n, g, count == 0);
    }
  }
  return finish(&a, st, out);
}

CtxrtStatus ctxrt_forest_from_heads(const char *name, int32_t num_structs,
                                    const int32_t *num_nodes, const int32_t *heads,
                                    int32_t num_values, const double *values,
                                    CtxrtValuesOn values_on, CtxrtForest **out,
                                    CtxrtError *err) {
  *out = NULL;
  ArrayInput a = {name, err, num_structs, num_nodes, num_values, values, values_on, {0}};
  int64_t total;
  CtxrtStatus st = check_counts(&a, &total);
  if (st == CTXRT_OK && total > 0 && !heads)
    st = ctxrt__err(err, CTXRT_ERR_ARG, name, 0, "bad arguments (no heads array)");
  if (st != CTXRT_OK) return st;
  int32_t *parent = malloc(((size_t)total + 1) * sizeof *parent);
  unsigned char *internal = calloc((size_t)total + 1, 1);
  ctxrt__build_init(&a.b, CTXRT_TREE, 0);
  if (!parent || !internal) st = ctxrt__nomem(err, name);
  int64_t g = 0;
  for (int32_t s = 0; st == CTXRT_OK && s < num_structs; s++)
    for (int32_t n = 0; st == CTXRT_OK && n < num_nodes[s]; n++, g++) {
      int32_t h = heads[g], size = num_nodes[s];
      if (h < -1 || h >= size)
        st = ctxrt__err(err, CTXRT_ERR_INVALID, name, 0, "structure %d, node %d: head %d "
                        "outside the structure (-1 or 0 to %d)", (int)s + 1, (int)n,
                        (int)h, (int)size - 1);
      parent[g] = h < 0 ? -1 : (int32_t)(g - n) + h;
      if (st == CTXRT_OK && h >= 0) internal[parent[g]] = 1;
    }
  g = 0;
  for (int32_t s = 0; st == CTXRT_OK && s < num_structs; s++) {
    ctxrt__build_struct(&a.b, 0);
    for (int32_t n = 0; st == CTXRT_OK && n < num_nodes[s]; n++, g++) {
      ctxrt__build_node(&a.b, n, 0);
      st = node_values(&a, s, n, g, !internal[g]);
    }
  }
  if (st == CTXRT_OK) ctxrt__build_deps_from_parents(&a.b, parent);
  free(parent);
  free(internal);
  return finish(&a, st, out);
}
