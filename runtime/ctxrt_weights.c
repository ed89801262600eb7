/* ctxrt_weights.c — weights as named float32 tensors: creating them from the
 * model's parameter list, looking them up, checking a file's tensors against the
 * parameter list, and the seeded default initialiser.
 *
 * Every tensor owns its name and a 64-byte aligned data block (so generated code
 * may use aligned vector loads); the safetensors reader builds weights through
 * the same helpers. Guarantees: the initialiser's values are exactly those
 * documented in ctxrt.h (one splitmix64 stream, declaration order, row-major),
 * identical in float and double; the checker reports every problem, parameters
 * in declaration order then extra tensors, naming the tensor and both shapes,
 * and pairs a missing parameter with the file's tensor that looks like it.
 */
#include "ctxrt_int.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
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
  t->data = ctxrt__hot_alloc(bytes ? bytes : DATA_ALIGN);
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

/* ------------------------------------------------------------ checking a file */

/* Levenshtein distance of [a] and [b] ignoring case, or 3 when it is above 2
 * (all the matcher needs). */
static int near_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64 || (n > m ? n - m : m - n) > 2) return 3;
  int row[65];
  for (size_t j = 0; j <= m; j++) row[j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= m; j++) {
      int up = row[j];
      int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
      int best = diag + !same;
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[m] > 2 ? 3 : row[m];
}

/* How well the tensor name [t] matches the parameter [p]: 0 for PyTorch's
 * spelling of it (`enc.cell.U_iou.weight`: module path and `.weight` dropped),
 * 1 when only the case differs, 2 and 3 for one and two letters apart, and
 * 4 for no match. */
static int name_score(const char *t, const char *p) {
  size_t n = strlen(t);
  char key[128];
  if (n >= sizeof key) return 4;
  memcpy(key, t, n + 1);
  if (n > 7 && strcmp(key + n - 7, ".weight") == 0) key[n - 7] = '\0';
  const char *dot = strrchr(key, '.');
  const char *last = dot ? dot + 1 : key;
  if (strcmp(last, p) == 0) return 0;
  if (strlen(last) == strlen(p) && near_distance(last, p) == 0) return 1;
  int d = near_distance(last, p);
  if (d <= 2 && strlen(p) > (size_t)(2 * d)) return d + 1;
  return 4;
}

static int is_param(const CtxrtParam *params, int32_t n, const char *name) {
  for (int32_t j = 0; j < n; j++)
    if (strcmp(params[j].name, name) == 0) return 1;
  return 0;
}

int32_t ctxrt_weights_match(const CtxrtWeights *w, const CtxrtParam *params, int32_t n,
                            int32_t *match) {
  int32_t guesses = 0;
  for (int32_t i = 0; i < n; i++) {
    match[i] = -1;
    for (int32_t t = 0; t < w->count && match[i] < 0; t++)
      if (strcmp(w->tensors[t].name, params[i].name) == 0) match[i] = t;
  }
  /* the best guesses first: score 0 for every parameter, then 1, ... */
  for (int score = 0; score < 4; score++)
    for (int32_t i = 0; i < n; i++) {
      if (match[i] >= 0) continue;
      for (int32_t t = 0; t < w->count && match[i] < 0; t++) {
        int taken = is_param(params, n, w->tensors[t].name);
        for (int32_t j = 0; j < n && !taken; j++) taken = match[j] == t;
        if (!taken && name_score(w->tensors[t].name, params[i].name) == score) {
          match[i] = t;
          guesses++;
        }
      }
    }
  return guesses;
}

static int same_shape(const CtxrtTensor *t, const CtxrtParam *p) {
  if (t->ndim != p->ndim) return 0;
  for (int32_t d = 0; d < p->ndim; d++)
    if (t->shape[d] != p->shape[d]) return 0;
  return 1;
}

/* The problems of a check, gathered into one message of several lines. */
typedef struct {
  CtxrtError *err;
  const char *file;
  int32_t count, shown;
} Problems;

static void problem(Problems *pr, const char *fmt, ...) CTXRT_PRINTF(2, 3);
static void problem(Problems *pr, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  pr->count++;
  if (!pr->err) return;
  size_t at = pr->count == 1 ? 0 : strlen(pr->err->msg);
  /* keep room for the line that counts the problems not shown */
  size_t need = strlen(pr->file) + strlen(line) + 16 + 80;
  if (pr->shown < pr->count - 1 || at + need > sizeof pr->err->msg) return;
  snprintf(pr->err->msg + at, sizeof pr->err->msg - at, "%s%s: error: %s",
           at ? "\n" : "", pr->file, line);
  pr->shown++;
}

/* A weight that is infinite or NaN: a damaged file, or a model that diverged
 * in training. The kernels take weights as finite numbers (W times 0 is 0:
 * sched_spec.c leaves out products of weights with zeros). The first such
 * element, as its index in the tensor's shape. */
static void check_finite(Problems *pr, const CtxrtTensor *t, const char *q) {
  /* a pass without branches first: |x| + 2^23 in the bits sets the sign
   * bit only for an exponent of all ones, an infinity or a NaN (treelstm
   * H=512's 123 MB of embeddings: a few ms, against 50 for isfinite element
   * by element) */
  uint32_t any = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    uint32_t bits;
    memcpy(&bits, t->data + i, sizeof bits);
    any |= (bits & 0x7fffffffu) + 0x00800000u;
  }
  for (int64_t i = 0; (any & 0x80000000u) && i < t->numel; i++) {
    if (isfinite(t->data[i])) continue;
    int64_t idx[CTXRT_MAX_DIMS]; /* i in the shape, last dimension fastest */
    for (int64_t d = t->ndim - 1, rest = i; d >= 0; d--) {
      idx[d] = rest % t->shape[d]; /* no dimension is 0: element i exists */
      rest /= t->shape[d];
    }
    char at[32 * CTXRT_MAX_DIMS];
    ctxrt__format_shape(at, sizeof at, t->ndim, idx);
    problem(pr, "tensor '%s' holds %s at %s; weights must be finite numbers", q,
            isnan(t->data[i]) ? "NaN" : t->data[i] > 0 ? "inf" : "-inf", at);
    return;
  }
}

static void check_param(Problems *pr, const CtxrtWeights *w, const CtxrtParam *p,
                        int32_t match) {
  char q[CTXRT_QUOTE_SIZE], q2[CTXRT_QUOTE_SIZE], want[200], got[200];
  ctxrt__quote(q, p->name, strlen(p->name));
  ctxrt__format_shape(want, sizeof want, p->ndim, p->shape);
  const CtxrtTensor *t = match >= 0 ? &w->tensors[match] : NULL;
  if (t) ctxrt__format_shape(got, sizeof got, t->ndim, t->shape);
  if (!t)
    problem(pr, "missing tensor '%s' (shape %s)", q, want);
  else if (strcmp(t->name, p->name) != 0)
    problem(pr, "missing tensor '%s' (shape %s); the file has '%s' %s: rename it%s", q,
            want, ctxrt__quote(q2, t->name, strlen(t->name)), got,
            same_shape(t, p) ? "" : " (and give it the model's shape)");
  else if (!same_shape(t, p))
    problem(pr, "tensor '%s' has shape %s, expected %s", q, got, want);
  else
    check_finite(pr, t, q);
}

CtxrtStatus ctxrt_weights_check(const CtxrtWeights *w, const char *name,
                                const CtxrtParam *params, int32_t n, CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  int32_t *match = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof *match);
  if (!match) return ctxrt__nomem(err, name);
  ctxrt_weights_match(w, params, n, match);
  Problems pr = {err, name ? name : "weights", 0, 0};
  for (int32_t i = 0; i < n; i++) check_param(&pr, w, &params[i], match[i]);
  for (int32_t t = 0; t < w->count; t++) {
    int used = 0;
    for (int32_t i = 0; i < n && !used; i++) used = match[i] == t;
    if (!used)
      problem(&pr, "extra tensor '%s' (the model has no such parameter)",
              ctxrt__quote(q, w->tensors[t].name, strlen(w->tensors[t].name)));
  }
  free(match);
  if (!pr.count) return CTXRT_OK;
  if (err) {
    err->status = CTXRT_ERR_INVALID;
    err->line = 0;
    if (pr.shown < pr.count) {
      size_t at = strlen(err->msg);
      snprintf(err->msg + at, sizeof err->msg - at,
               "\n%s: error: ... and %d more problems", pr.file,
               (int)(pr.count - pr.shown));
    }
  }
  return CTXRT_ERR_INVALID;
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

void ctxrt_weights_note(const CtxrtWeights *w, const char *path, char *buf, size_t len) {
  if (!len) return;
  buf[0] = 0;
  if (!w || !w->num_converted) return;
  snprintf(buf, len, "%s: note: %d tensor%s converted to float32 from%s%s%s", path,
           (int)w->num_converted, w->num_converted == 1 ? "" : "s",
           w->converted & CTXRT_CONVERTED_F64 ? " F64" : "",
           w->converted & CTXRT_CONVERTED_F16 ? " F16" : "",
           w->converted & CTXRT_CONVERTED_BF16 ? " BF16" : "");
}

void ctxrt_weights_init(CtxrtWeights *w, uint64_t seed) {
  CtxrtInit init;
  ctxrt_init_begin(&init, seed);
  for (int32_t i = 0; i < w->count; i++)
    ctxrt_init_fill_f32(&init, w->tensors[i].data, (size_t)w->tensors[i].numel);
}
