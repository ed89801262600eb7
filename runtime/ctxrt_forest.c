/* ctxrt_forest.c — the forest: its builder (used by every reader and generator),
 * its accessors and its destructor.
 *
 * A forest is a dozen flat arrays (see CtxrtForest in ctxrt.h). The builder
 * appends to growable arrays in node order and, at the end, hands them over to the
 * forest without copying, closing each offset array with its final entry.
 * Guarantees: after ctxrt__build_finish every offset array is complete
 * (struct_begin[num_structs] == num_nodes, dep_begin[num_nodes] == number of
 * dependencies, val_begin[num_nodes] == number of values); every array pointer is
 * non-NULL (even for an empty forest) except label and labels without labels.
 */
#include "ctxrt_int.h"

#include <stdlib.h>
#include <string.h>

void ctxrt__build_init(CtxrtBuild *b, CtxrtKind kind, int has_labels) {
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->has_labels = has_labels;
}

void ctxrt__build_free(CtxrtBuild *b) {
  CtxrtVec *all[] = {&b->struct_begin, &b->struct_line, &b->id,        &b->line,
                     &b->dep_begin,    &b->dep,         &b->val_begin, &b->val,
                     &b->val_is_int,   &b->label,       &b->labels};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    ctxrt__vec_free(all[i]);
}

static void push_i32(CtxrtBuild *b, CtxrtVec *v, int32_t x) {
  int32_t *p = ctxrt__vec_grow(v, sizeof x, 1, &b->failed);
  if (p) *p = x;
}

void ctxrt__build_struct(CtxrtBuild *b, int32_t line) {
  push_i32(b, &b->struct_begin, (int32_t)b->id.len);
  push_i32(b, &b->struct_line, line);
}

int32_t ctxrt__build_node(CtxrtBuild *b, int64_t id, int32_t line) {
  int32_t index = (int32_t)b->id.len;
  int64_t *p = ctxrt__vec_grow(&b->id, sizeof id, 1, &b->failed);
  if (p) *p = id;
  push_i32(b, &b->line, line);
  push_i32(b, &b->dep_begin, (int32_t)b->dep.len);
  push_i32(b, &b->val_begin, (int32_t)b->val.len);
  if (b->has_labels) push_i32(b, &b->label, -1);
  return index;
}

void ctxrt__build_value(CtxrtBuild *b, double v, int is_int) {
  double *p = ctxrt__vec_grow(&b->val, sizeof v, 1, &b->failed);
  if (p) *p = v;
  unsigned char *q = ctxrt__vec_grow(&b->val_is_int, 1, 1, &b->failed);
  if (q) *q = (unsigned char)(is_int != 0);
}

void ctxrt__build_dep(CtxrtBuild *b, int32_t dep) {
  push_i32(b, &b->dep, dep);
}

void ctxrt__build_label(CtxrtBuild *b, const char *s, size_t len) {
  if (!b->has_labels || b->failed || b->label.len == 0) return;
  int32_t at = (int32_t)b->labels.len;
  char *p = ctxrt__vec_grow(&b->labels, 1, len + 1, &b->failed);
  if (!p) return;
  memcpy(p, s, len);
  p[len] = '\0';
  CTXRT_AT(b->label, int32_t, b->label.len - 1) = at;
}

void ctxrt__build_deps_from_parents(CtxrtBuild *b, const int32_t *parent) {
  size_t n = b->id.len;
  b->dep.len = 0;
  if (b->failed || n == 0) return;
  int32_t *begin = b->dep_begin.data;
  /* Count children per node into begin[p + 1], then prefix-sum. */
  for (size_t i = 0; i < n; i++)
    begin[i] = 0;
  int32_t roots = 0;
  for (size_t i = 0; i < n; i++) {
    if (parent[i] < 0)
      roots++;
    else if ((size_t)parent[i] + 1 < n)
      begin[parent[i] + 1]++;
  }
  for (size_t i = 1; i < n; i++)
    begin[i] += begin[i - 1];
  size_t edges = n - (size_t)roots;
  if (!ctxrt__vec_grow(&b->dep, sizeof(int32_t), edges, &b->failed)) return;
  /* Children come in increasing index order because i increases. */
  int32_t *fill = malloc(n * sizeof *fill);
  if (!fill) {
    b->failed = 1;
    return;
  }
  memcpy(fill, begin, n * sizeof *fill);
  int32_t *dep = b->dep.data;
  for (size_t i = 0; i < n; i++)
    if (parent[i] >= 0) dep[fill[parent[i]]++] = (int32_t)i;
  free(fill);
}

/* Moves [v] out as a plain array with room for at least [extra] more elements. */
static void *take(CtxrtVec *v, size_t esz, size_t extra, int *failed) {
  if (!ctxrt__vec_grow(v, esz, extra, failed)) return NULL;
  v->len -= extra;
  void *p = v->data;
  v->data = NULL;
  v->len = v->cap = 0;
  return p;
}

CtxrtStatus ctxrt__build_finish(CtxrtBuild *b, const char *name, CtxrtForest **out,
                                CtxrtError *err) {
  *out = NULL;
  CtxrtForest *f = calloc(1, sizeof *f);
  if (!f || b->failed) goto nomem;
  f->kind = b->kind;
  f->num_structs = (int32_t)b->struct_line.len;
  f->num_nodes = (int32_t)b->id.len;
  push_i32(b, &b->struct_begin, f->num_nodes);
  push_i32(b, &b->dep_begin, (int32_t)b->dep.len);
  push_i32(b, &b->val_begin, (int32_t)b->val.len);
  f->name = ctxrt__strdup(name);
  f->struct_begin = take(&b->struct_begin, sizeof(int32_t), 0, &b->failed);
  f->struct_line = take(&b->struct_line, sizeof(int32_t), 1, &b->failed);
  f->id = take(&b->id, sizeof(int64_t), 1, &b->failed);
  f->line = take(&b->line, sizeof(int32_t), 1, &b->failed);
  f->dep_begin = take(&b->dep_begin, sizeof(int32_t), 0, &b->failed);
  f->dep = take(&b->dep, sizeof(int32_t), 1, &b->failed);
  f->val_begin = take(&b->val_begin, sizeof(int32_t), 0, &b->failed);
  f->val = take(&b->val, sizeof(double), 1, &b->failed);
  f->val_is_int = take(&b->val_is_int, 1, 1, &b->failed);
  if (b->has_labels) {
    f->label = take(&b->label, sizeof(int32_t), 1, &b->failed);
    f->labels = take(&b->labels, 1, 1, &b->failed);
  }
  if (b->failed || !f->name) goto nomem;
  ctxrt__build_free(b);
  *out = f;
  return CTXRT_OK;
nomem:
  ctxrt_forest_destroy(f);
  ctxrt__build_free(b);
  return ctxrt__nomem(err, name);
}

void ctxrt_forest_destroy(CtxrtForest *f) {
  if (!f) return;
  free(f->name);
  free(f->struct_begin);
  free(f->struct_line);
  free(f->id);
  free(f->line);
  free(f->dep_begin);
  free(f->dep);
  free(f->val_begin);
  free(f->val);
  free(f->val_is_int);
  free(f->label);
  free(f->labels);
  free(f);
}

int32_t ctxrt_forest_num_deps(const CtxrtForest *f, int32_t node) {
  return f->dep_begin[node + 1] - f->dep_begin[node];
}

int32_t ctxrt_forest_outputs(const CtxrtForest *f, int32_t *out) {
  unsigned char *used = calloc((size_t)f->num_nodes + 1, 1);
  if (!used) return -1;
  for (int32_t k = 0; k < f->dep_begin[f->num_nodes]; k++)
    if (f->dep[k] >= 0 && f->dep[k] < f->num_nodes) used[f->dep[k]] = 1;
  int32_t count = 0;
  for (int32_t n = 0; n < f->num_nodes; n++)
    if (!used[n]) {
      if (out) out[count] = n;
      count++;
    }
  free(used);
  return count;
}

const char *ctxrt_forest_label(const CtxrtForest *f, int32_t node) {
  if (!f->label || f->label[node] < 0) return NULL;
  return f->labels + f->label[node];
}
