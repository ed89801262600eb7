/* ctxrt_genspec.c — generator spec strings: parsing (`binary:leaves=20,seed=7`),
 * range checks and the canonical form.
 *
 * The syntax and the meaning of every key are documented in ctxrt.h (section
 * "Generators") and docs/formats.md. Guarantees: a spec accepted by ctxrt_gen_parse
 * passes ctxrt__gen_check, so ctxrt_generate accepts it; the canonical string
 * parses back to an equivalent spec; every rejection says which key is wrong and
 * why, as `error: bad generator spec 'TEXT': WHY`.
 */
#include "ctxrt_int.h"

#include <stdio.h>
#include <string.h>

typedef struct ShapeInfo {
  CtxrtGenShape shape;
  const char *name;
  const char *key1, *key2; /* names of size and size2; key2 may be NULL */
} ShapeInfo;

static const ShapeInfo shapes[] = {
    {CTXRT_GEN_BINARY, "binary", "leaves", NULL},
    {CTXRT_GEN_COMPLETE, "complete", "height", NULL},
    {CTXRT_GEN_NARY, "nary", "nodes", "arity"},
    {CTXRT_GEN_CHAIN, "chain", "nodes", NULL},
    {CTXRT_GEN_GRID, "grid", "rows", "cols"},
    {CTXRT_GEN_SEQUENCE, "sequence", "length", NULL},
};
#define NUM_SHAPES (sizeof shapes / sizeof shapes[0])

/* The largest complete-tree height within CTXRT_GEN_MAX_NODES (2^26 nodes). */
#define MAX_HEIGHT 25

static const ShapeInfo *shape_info(CtxrtGenShape shape) {
  for (size_t i = 0; i < NUM_SHAPES; i++)
    if (shapes[i].shape == shape) return &shapes[i];
  return NULL;
}

static CtxrtStatus bad(CtxrtError *err, const char *text, const char *fmt, ...)
    CTXRT_PRINTF(3, 4);

/* `error: bad generator spec 'TEXT': WHY`. */
static CtxrtStatus bad(CtxrtError *err, const char *text, const char *fmt, ...) {
  char why[CTXRT_MSG_SIZE], q[CTXRT_QUOTE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "bad generator spec '%s': %s",
                    ctxrt__quote(q, text, strlen(text)), why);
}

CtxrtGenValues ctxrt__gen_values(const CtxrtGenSpec *spec) {
  if (spec->values != CTXRT_GEN_VALUES_DEFAULT) return spec->values;
  return spec->shape == CTXRT_GEN_BINARY || spec->shape == CTXRT_GEN_COMPLETE
             ? CTXRT_GEN_VALUES_LEAVES
             : CTXRT_GEN_VALUES_ALL;
}

int64_t ctxrt__gen_struct_nodes(const CtxrtGenSpec *spec) {
  switch (spec->shape) {
  case CTXRT_GEN_BINARY:
    return 2 * spec->size - 1;
  case CTXRT_GEN_COMPLETE:
    return ((int64_t)2 << spec->size) - 1;
  case CTXRT_GEN_GRID:
    return spec->size * spec->size2;
  default:
    return spec->size;
  }
}

/* Checks a size key: at least [min], and small enough that the nodes fit. */
static CtxrtStatus check_size(CtxrtError *err, const char *text, const char *key,
                              int64_t v, int64_t min, int64_t max) {
  if (v < min || v > max)
    return bad(err, text, "'%s' must be from %lld to %lld, found %lld", key,
               (long long)min, (long long)max, (long long)v);
  return CTXRT_OK;
}

CtxrtStatus ctxrt__gen_check(const CtxrtGenSpec *spec, const char *text,
                             CtxrtError *err) {
  const ShapeInfo *info = shape_info(spec->shape);
  if (!info) return bad(err, text, "unknown shape %d", (int)spec->shape);
  const int64_t lim = CTXRT_GEN_MAX_NODES;
  CtxrtStatus st = spec->shape == CTXRT_GEN_COMPLETE
                       ? check_size(err, text, info->key1, spec->size, 0, MAX_HEIGHT)
                       : check_size(err, text, info->key1, spec->size, 1, lim);
  if (st == CTXRT_OK && info->key2)
    st = check_size(err, text, info->key2, spec->size2, 1, lim);
  if (st == CTXRT_OK && spec->count)
    st = check_size(err, text, "count", spec->count, 1, lim);
  if (st == CTXRT_OK && spec->vocab)
    st = check_size(err, text, "vocab", spec->vocab, 1, INT32_MAX);
  if (st == CTXRT_OK && spec->features)
    st = check_size(err, text, "features", spec->features, 1, CTXRT_GEN_MAX_VALUES);
  if (st != CTXRT_OK) return st;
  if ((unsigned)spec->values > CTXRT_GEN_VALUES_LEAVES)
    return bad(err, text, "unknown 'values' setting %d", (int)spec->values);
  int64_t per = ctxrt__gen_struct_nodes(spec), count = spec->count ? spec->count : 1;
  if (per > lim || count > lim / per)
    return bad(err, text, "%lld nodes in all, more than the limit %lld",
               (long long)per * (long long)count, (long long)lim);
  int64_t nodes = per * count, each = (spec->vocab > 0) + spec->features;
  if (each && nodes > CTXRT_GEN_MAX_VALUES / each)
    return bad(err, text, "%lld values in all, more than the limit %lld",
               (long long)nodes * (long long)each, (long long)CTXRT_GEN_MAX_VALUES);
  return CTXRT_OK;
}

/* ---------------------------------------------------------------- parsing */

/* Parses the unsigned decimal [s, s + len) into [*v]; 0 if not one, -1 if it
 * exceeds [max]. */
static int parse_unsigned(const char *s, size_t len, uint64_t max, uint64_t *v) {
  uint64_t acc = 0;
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    unsigned d = (unsigned)(s[i] - '0');
    if (acc > (max - d) / 10) return -1;
    acc = acc * 10 + d;
  }
  *v = acc;
  return 1;
}

/* Stores value [val] of [key] (both [len]-delimited) into [spec]; [seen] tracks
 * keys given: bits 0-1 size keys, then count, seed, vocab, features, values. */
static CtxrtStatus set_key(CtxrtGenSpec *spec, const ShapeInfo *info, const char *key,
                           size_t klen, const char *val, size_t vlen, unsigned *seen,
                           const char *text, CtxrtError *err) {
  static const char *const common[] = {"count", "seed", "vocab", "features", "values"};
  char qk[CTXRT_QUOTE_SIZE], qv[CTXRT_QUOTE_SIZE];
  const char *names[7] = {info->key1, info->key2, common[0], common[1],
                          common[2],  common[3],  common[4]};
  int which = -1;
  for (int i = 0; i < 7 && which < 0; i++)
    if (names[i] && strlen(names[i]) == klen && memcmp(names[i], key, klen) == 0)
      which = i;
  ctxrt__quote(qk, key, klen);
  ctxrt__quote(qv, val, vlen);
  if (which < 0)
    return bad(err, text,
               "unknown key '%s' for '%s' (expected %s%s%s, count, seed, "
               "vocab, features or values)",
               qk, info->name, info->key1, info->key2 ? ", " : "",
               info->key2 ? info->key2 : "");
  if (*seen & (1u << which)) return bad(err, text, "'%s' given twice", qk);
  *seen |= 1u << which;
  if (which == 6) {
    if (vlen == 3 && memcmp(val, "all", 3) == 0)
      spec->values = CTXRT_GEN_VALUES_ALL;
    else if (vlen == 6 && memcmp(val, "leaves", 6) == 0)
      spec->values = CTXRT_GEN_VALUES_LEAVES;
    else
      return bad(err, text, "'values' must be 'leaves' or 'all', found '%s'", qv);
    return CTXRT_OK;
  }
  uint64_t v;
  int ok = parse_unsigned(val, vlen, which == 3 ? UINT64_MAX : (uint64_t)INT64_MAX, &v);
  if (ok == 0)
    return bad(err, text, "'%s' needs a non-negative integer, found '%s'", qk, qv);
  if (ok < 0) return bad(err, text, "'%s' out of range, found '%s'", qk, qv);
  if (which >= 2 && which != 3 && v == 0)
    return bad(err, text, "'%s' must be at least 1, found 0", qk);
  switch (which) {
  case 0:
    spec->size = (int64_t)v;
    break;
  case 1:
    spec->size2 = (int64_t)v;
    break;
  case 2:
    spec->count = (int64_t)v;
    break;
  case 3:
    spec->seed = v;
    break;
  case 4:
    spec->vocab = (int64_t)v;
    break;
  default:
    spec->features = (int64_t)v;
    break;
  }
  return CTXRT_OK;
}

/* Parses the parameter list [p] (after the ':') into [spec]. */
static CtxrtStatus parse_params(CtxrtGenSpec *spec, const ShapeInfo *info, const char *p,
                                const char *text, CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  unsigned seen = 0;
  for (;;) {
    size_t len = strcspn(p, ",");
    const char *eq = memchr(p, '=', len);
    if (!eq || eq == p)
      return bad(err, text, "expected KEY=VALUE, found '%s'", ctxrt__quote(q, p, len));
    CtxrtStatus st = set_key(spec, info, p, (size_t)(eq - p), eq + 1,
                             len - (size_t)(eq - p) - 1, &seen, text, err);
    if (st != CTXRT_OK) return st;
    if (p[len] == '\0') break;
    p += len + 1;
  }
  if (!(seen & 1u)) return bad(err, text, "missing '%s'", info->key1);
  if (info->key2 && !(seen & 2u)) return bad(err, text, "missing '%s'", info->key2);
  return CTXRT_OK;
}

CtxrtStatus ctxrt_gen_parse(const char *text, CtxrtGenSpec *out, CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  memset(out, 0, sizeof *out);
  size_t len = strcspn(text, ":");
  const ShapeInfo *info = NULL;
  for (size_t i = 0; i < NUM_SHAPES; i++)
    if (strlen(shapes[i].name) == len && memcmp(shapes[i].name, text, len) == 0)
      info = &shapes[i];
  if (!info)
    return bad(err, text,
               "unknown shape '%s' (expected binary, complete, nary, chain, "
               "grid or sequence)",
               ctxrt__quote(q, text, len));
  out->shape = info->shape;
  CtxrtStatus st = text[len] == ':' ? parse_params(out, info, text + len + 1, text, err)
                                    : bad(err, text, "missing '%s'", info->key1);
  if (st == CTXRT_OK) st = ctxrt__gen_check(out, text, err);
  if (st != CTXRT_OK) memset(out, 0, sizeof *out);
  return st;
}

size_t ctxrt_gen_format(const CtxrtGenSpec *spec, char *buf, size_t size) {
  const ShapeInfo *info = shape_info(spec->shape);
  if (!info) return (size_t)snprintf(buf, size, "invalid");
  char part[4][64] = {"", "", "", ""};
  if (info->key2)
    snprintf(part[0], sizeof part[0], ",%s=%lld", info->key2, (long long)spec->size2);
  if (spec->vocab)
    snprintf(part[1], sizeof part[1], ",vocab=%lld", (long long)spec->vocab);
  if (spec->features)
    snprintf(part[2], sizeof part[2], ",features=%lld", (long long)spec->features);
  snprintf(part[3], sizeof part[3], ",values=%s",
           ctxrt__gen_values(spec) == CTXRT_GEN_VALUES_ALL ? "all" : "leaves");
  int n = snprintf(buf, size, "%s:%s=%lld%s,count=%lld,seed=%llu%s%s%s", info->name,
                   info->key1, (long long)spec->size, part[0],
                   (long long)(spec->count ? spec->count : 1),
                   (unsigned long long)spec->seed, part[1], part[2], part[3]);
  return n < 0 ? 0 : (size_t)n;
}
