/* ctxrt_weights.c — weights as named float32 tensors: creating them from the
 * model's parameter list, looking them up, checking a file's tensors against the
 * parameter list, and the seeded default initialiser.
 *
 * Every tensor owns its name and a 64-byte aligned data block (so generated code
 * may use aligned vector loads); the safetensors reader builds weights through
 * the same helpers. Guarantees: the initialiser's values are exactly those
 * documented in ctxrt.h (one splitmix64 stream, declaration order, row-major),
 * identical in float and double; the checker reports the first problem in
 * declaration order, naming the tensor and both shapes.
 */
#include "ctxrt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes per allocation unit of tensor data: a cache line, and AVX-512's width. */
#define DATA_ALIGN 64

/* Elements above this are refused, so byte counts never overflow. */
#define MAX_NUMEL ((int64_t)1 << 60)

int ctxrt__shape_numel(int32_t ndim, const int64_t *shape, int64_t *numel) {
  int64_t n = 1;
  if (ndim < 0 || ndim > CTXRT_MAX_DIMS) return 0;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return 0;
    if (shape[i] && n > MAX_NUMEL / shape[i]) return 0;
    n *= shape[i];
  }
  *numel = n;
  return 1;
}

void ctxrt__format_shape(char *buf, size_t size, int32_t ndim, const int64_t *shape) {
  size_t at = 0;
  at += (size_t)snprintf(buf, size, "[");
  for (int32_t i = 0; i < ndim && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? ", " : "",
                           (long long)shape[i]);
  if (at < size) snprintf(buf + at, size - at, "]");
}

CtxrtWeights *ctxrt__weights_alloc(int32_t count) {
  CtxrtWeights *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->tensors = calloc(count > 0 ? (size_t)count : 1, sizeof *w->tensors);
  if (!w->tensors) {
    free(w);
    return NULL;
  }
  return w;
}

int ctxrt__tensor_init(CtxrtTensor *t, const char *name, size_t name_len, int32_t ndim,
                       const int64_t *shape) {
  if (!ctxrt__shape_numel(ndim, shape, &t->numel)) return 0;
  if ((uint64_t)t->numel > (SIZE_MAX - DATA_ALIGN) / sizeof(float)) return 0;
  t->ndim = ndim;
  for (int32_t i = 0; i < ndim; i++)
    t->shape[i] = shape[i];
  size_t bytes = (size_t)t->numel * sizeof(float);
  bytes = (bytes + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
  t->data = aligned_alloc(DATA_ALIGN, bytes ? bytes : DATA_ALIGN);
  t->name = malloc(name_len + 1);
  if (!t->data || !t->name) return 0;
  memcpy(t->name, name, name_len);
  t->name[name_len] = '\0';
  return 1;
}

void ctxrt_weights_destroy(CtxrtWeights *w) {
  if (!w) return;
  for (int32_t i = 0; i < w->count; i++) {
    free(w->tensors[i].name);
    free(w->tensors[i].data);
  }
  free(w->tensors);
  free(w);
}

const CtxrtTensor *ctxrt_weights_find(const CtxrtWeights *w, const char *name) {
  for (int32_t i = 0; i < w->count; i++)
    if (strcmp(w->tensors[i].name, name) == 0) return &w->tensors[i];
  return NULL;
}

CtxrtStatus ctxrt_weights_create(const CtxrtParam *params, int32_t n, CtxrtWeights **out,
                                 CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  *out = NULL;
  if (n < 0) return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "negative parameter count");
  CtxrtWeights *w = ctxrt__weights_alloc(n);
  if (!w) return ctxrt__nomem(err, NULL);
  for (int32_t i = 0; i < n; i++) {
    const char *name = params[i].name;
    int64_t numel = 0;
    CtxrtStatus st = CTXRT_OK;
    if (!ctxrt__shape_numel(params[i].ndim, params[i].shape, &numel))
      st = ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "parameter '%s' has a bad shape",
                      ctxrt__quote(q, name, strlen(name)));
    else if (ctxrt_weights_find(w, name))
      st = ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "parameter '%s' declared twice",
                      ctxrt__quote(q, name, strlen(name)));
    else if (!ctxrt__tensor_init(&w->tensors[w->count++], name, strlen(name),
                                 params[i].ndim, params[i].shape))
      st = ctxrt__nomem(err, NULL);
    if (st != CTXRT_OK) {
      ctxrt_weights_destroy(w);
      return st;
    }
    memset(w->tensors[i].data, 0, (size_t)numel * sizeof(float));
  }
  *out = w;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_weights_check(const CtxrtWeights *w, const char *name,
                                const CtxrtParam *params, int32_t n, CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE], want[200], got[200];
  for (int32_t i = 0; i < n; i++) {
    const CtxrtParam *p = &params[i];
    const CtxrtTensor *t = ctxrt_weights_find(w, p->name);
    ctxrt__quote(q, p->name, strlen(p->name));
    ctxrt__format_shape(want, sizeof want, p->ndim, p->shape);
    if (!t)
      return ctxrt__err(err, CTXRT_ERR_INVALID, name, 0, "missing tensor '%s' (shape %s)",
                        q, want);
    int same = t->ndim == p->ndim;
    for (int32_t d = 0; same && d < p->ndim; d++)
      same = t->shape[d] == p->shape[d];
    if (!same) {
      ctxrt__format_shape(got, sizeof got, t->ndim, t->shape);
      return ctxrt__err(err, CTXRT_ERR_INVALID, name, 0,
                        "tensor '%s' has shape %s, expected %s", q, got, want);
    }
  }
  for (int32_t i = 0; i < w->count; i++) {
    int known = 0;
    for (int32_t j = 0; j < n && !known; j++)
      known = strcmp(w->tensors[i].name, params[j].name) == 0;
    if (!known)
      return ctxrt__err(err, CTXRT_ERR_INVALID, name, 0,
                        "extra tensor '%s' (the model has no such parameter)",
                        ctxrt__quote(q, w->tensors[i].name, strlen(w->tensors[i].name)));
  }
  return CTXRT_OK;
}

/* ---------------------------------------------------------------- initialiser */

void ctxrt_init_begin(CtxrtInit *init, uint64_t seed) {
  ctxrt_rng_seed(&init->rng, seed);
}

/* One default weight: uniform in [-0.1, 0.1], computed in double, rounded to float. */
static float init_draw(CtxrtInit *init) {
  return (float)(ctxrt_rng_unit(&init->rng) * 0.2 - 0.1);
}

void ctxrt_init_fill_f32(CtxrtInit *init, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = init_draw(init);
}

void ctxrt_init_fill_f64(CtxrtInit *init, double *dst, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = (double)init_draw(init);
}

void ctxrt_weights_init(CtxrtWeights *w, uint64_t seed) {
  CtxrtInit init;
  ctxrt_init_begin(&init, seed);
  for (int32_t i = 0; i < w->count; i++)
    ctxrt_init_fill_f32(&init, w->tensors[i].data, (size_t)w->tensors[i].numel);
}
