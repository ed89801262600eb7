/* ctxrt_safetensors.c — reading and writing safetensors files of float tensors.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of JSON mapping each
 * tensor name to {"dtype", "shape", "data_offsets": [BEGIN, END]} (plus an
 * optional "__metadata__", ignored), then the data section, offsets relative to
 * its start. The JSON is parsed by jansson (duplicate keys rejected); every field
 * is checked before any data is touched.
 *
 * F32 tensors are read as they are; F64, F16 and BF16 tensors (what PyTorch
 * saves from double or half-precision models) are converted to float32, round
 * to nearest, and counted in the weights (num_converted) so the caller can say so.
 *
 * Guarantees: no read outside the buffer whatever the header says; memory bounded
 * by a small multiple of the input size; the first
 * problem is reported naming the tensor (file order); data is decoded from
 * little-endian bytes, so the reader works on any host. The writer emits tensors
 * in order, contiguous from offset 0, with the header padded by spaces to a
 * multiple of 8 bytes as the reference implementation does.
 */
#include "ctxrt_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The dtypes read, and their sizes in bytes. */
typedef enum { ST_F32, ST_F64, ST_F16, ST_BF16, ST_NUM_DTYPES } StDtype;
static const char *const st_dtype_names[ST_NUM_DTYPES] = {"F32", "F64", "F16", "BF16"};
static const unsigned st_dtype_bytes[ST_NUM_DTYPES] = {4, 8, 2, 2};

typedef struct StEntry {
  const char *name;
  StDtype dtype;
  int32_t ndim;
  int64_t shape[CTXRT_MAX_DIMS];
  uint64_t begin, end;
} StEntry;

typedef struct StReader {
  const char *file;
  CtxrtError *err;
  uint64_t data_len; /* bytes after the header */
} StReader;

static CtxrtStatus tensor_err(StReader *r, const char *tensor, const char *what) {
  char q[CTXRT_QUOTE_SIZE];
  return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->file, 0, "tensor '%s': %s",
                    ctxrt__quote(q, tensor, strlen(tensor)), what);
}

/* Reads "shape" of [obj] into [e]. */
static CtxrtStatus read_shape(StReader *r, StEntry *e, json_t *obj) {
  char q[CTXRT_QUOTE_SIZE];
  json_t *shape = json_object_get(obj, "shape");
  if (!json_is_array(shape))
    return tensor_err(r, e->name, "'shape' must be a list of non-negative integers");
  if (json_array_size(shape) > CTXRT_MAX_DIMS)
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->file, 0,
                      "tensor '%s' has %zu dimensions, at most %d are supported",
                      ctxrt__quote(q, e->name, strlen(e->name)), json_array_size(shape),
                      CTXRT_MAX_DIMS);
  e->ndim = (int32_t)json_array_size(shape);
  for (int32_t i = 0; i < e->ndim; i++) {
    json_t *d = json_array_get(shape, (size_t)i);
    if (!json_is_integer(d) || json_integer_value(d) < 0)
      return tensor_err(r, e->name, "'shape' must be a list of non-negative integers");
    e->shape[i] = json_integer_value(d);
  }
  return CTXRT_OK;
}

/* Reads one header entry [obj] named [name] into [e] and checks it alone. */
static CtxrtStatus read_entry(StReader *r, StEntry *e, const char *name, json_t *obj) {
  char q[CTXRT_QUOTE_SIZE], q2[CTXRT_QUOTE_SIZE], sh[200];
  e->name = name;
  if (!json_is_object(obj))
    return tensor_err(r, name,
                      "expected an object with 'dtype', 'shape' and "
                      "'data_offsets'");
  json_t *dtype = json_object_get(obj, "dtype");
  if (!json_is_string(dtype)) return tensor_err(r, name, "missing 'dtype'");
  e->dtype = ST_NUM_DTYPES;
  for (int k = 0; k < ST_NUM_DTYPES; k++)
    if (strcmp(json_string_value(dtype), st_dtype_names[k]) == 0) e->dtype = (StDtype)k;
  if (e->dtype == ST_NUM_DTYPES)
    return ctxrt__err(
        r->err, CTXRT_ERR_SYNTAX, r->file, 0,
        "tensor '%s' has dtype '%s'; supported: F32, and F64, F16, BF16 (converted "
        "to F32)",
        ctxrt__quote(q, name, strlen(name)),
        ctxrt__quote(q2, json_string_value(dtype), strlen(json_string_value(dtype))));
  CtxrtStatus st = read_shape(r, e, obj);
  if (st != CTXRT_OK) return st;
  json_t *off = json_object_get(obj, "data_offsets");
  json_t *b = json_array_get(off, 0), *end = json_array_get(off, 1);
  if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(b) ||
      !json_is_integer(end) || json_integer_value(b) < 0 ||
      json_integer_value(end) < json_integer_value(b))
    return tensor_err(r, name,
                      "'data_offsets' must be [BEGIN, END] with 0 <= BEGIN <= END");
  e->begin = (uint64_t)json_integer_value(b);
  e->end = (uint64_t)json_integer_value(end);
  int64_t numel;
  ctxrt__format_shape(sh, sizeof sh, e->ndim, e->shape);
  if (!ctxrt__shape_numel(e->ndim, e->shape, &numel))
    return tensor_err(r, name, "the shape has too many elements");
  unsigned size = st_dtype_bytes[e->dtype];
  if (e->end - e->begin != (uint64_t)numel * size)
    return ctxrt__err(
        r->err, CTXRT_ERR_SYNTAX, r->file, 0,
        "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, but shape %s "
        "of %s needs %llu",
        ctxrt__quote(q, name, strlen(name)), (unsigned long long)e->begin,
        (unsigned long long)e->end, (unsigned long long)(e->end - e->begin), sh,
        st_dtype_names[e->dtype], (unsigned long long)numel * size);
  if (e->end > r->data_len)
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->file, 0,
                      "truncated file: tensor '%s' ends at byte %llu of the data, but "
                      "the file holds %llu bytes of data",
                      ctxrt__quote(q, name, strlen(name)), (unsigned long long)e->end,
                      (unsigned long long)r->data_len);
  return CTXRT_OK;
}

static int by_begin(const void *a, const void *b) {
  const StEntry *x = *(const StEntry *const *)a, *y = *(const StEntry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* Checks that no two non-empty tensors share a byte. */
static CtxrtStatus check_overlap(StReader *r, StEntry *e, size_t n) {
  char q[CTXRT_QUOTE_SIZE], q2[CTXRT_QUOTE_SIZE];
  StEntry **order = malloc((n ? n : 1) * sizeof *order);
  if (!order) return ctxrt__nomem(r->err, r->file);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (e[i].end > e[i].begin) order[m++] = &e[i];
  qsort(order, m, sizeof *order, by_begin);
  CtxrtStatus st = CTXRT_OK;
  for (size_t i = 1; i < m && st == CTXRT_OK; i++)
    if (order[i - 1]->end > order[i]->begin)
      st = ctxrt__err(
          r->err, CTXRT_ERR_SYNTAX, r->file, 0,
          "tensors '%s' and '%s' overlap (data_offsets [%llu, %llu] and "
          "[%llu, %llu])",
          ctxrt__quote(q, order[i - 1]->name, strlen(order[i - 1]->name)),
          ctxrt__quote(q2, order[i]->name, strlen(order[i]->name)),
          (unsigned long long)order[i - 1]->begin, (unsigned long long)order[i - 1]->end,
          (unsigned long long)order[i]->begin, (unsigned long long)order[i]->end);
  free(order);
  return st;
}

/* Parses the JSON header into [*root]; explains jansson's complaint on failure. */
static CtxrtStatus parse_header(StReader *r, const unsigned char *json, size_t len,
                                json_t **root) {
  json_error_t jerr;
  *root = json_loadb((const char *)json, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!*root) {
    /* jansson says: duplicate object key near '"NAME"' */
    static const char dup[] = "duplicate object key near '\"";
    size_t n = strlen(jerr.text);
    if (strncmp(jerr.text, dup, sizeof dup - 1) == 0 && n >= sizeof dup + 1 &&
        strcmp(jerr.text + n - 2, "\"'") == 0) {
      char q[CTXRT_QUOTE_SIZE];
      const char *name = jerr.text + sizeof dup - 1;
      return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->file, 0, "duplicate tensor '%s'",
                        ctxrt__quote(q, name, n - (sizeof dup - 1) - 2));
    }
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->file, 0,
                      "bad JSON header: %s (header byte %d)", jerr.text, jerr.position);
  }
  if (!json_is_object(*root)) {
    json_decref(*root);
    *root = NULL;
    return ctxrt__err(r->err, CTXRT_ERR_SYNTAX, r->file, 0,
                      "bad header: expected a JSON object");
  }
  return CTXRT_OK;
}

/* Reads and checks every entry of [root] into [e] ([*n] of them). */
static CtxrtStatus read_entries(StReader *r, json_t *root, StEntry *e, size_t *n) {
  const char *key;
  json_t *value;
  *n = 0;
  json_object_foreach(root, key, value) {
    if (strcmp(key, "__metadata__") == 0) continue;
    CtxrtStatus st = read_entry(r, &e[*n], key, value);
    if (st != CTXRT_OK) return st;
    ++*n;
  }
  return check_overlap(r, e, *n);
}

static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t le_bytes(const unsigned char *p, unsigned n) {
  uint64_t u = 0;
  for (unsigned i = n; i-- > 0;)
    u = u << 8 | p[i];
  return u;
}

/* IEEE 754 binary16 to float: every half value is exactly a float. */
static float half_float(uint32_t h) {
  uint32_t sign = (h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | man << 13); /* inf, NaN */
  if (exp == 0) { /* zero or subnormal: man * 2^-24 */
    float f = (float)man * 0x1p-24f;
    return sign ? -f : f;
  }
  return bits_float(sign | (exp + 112) << 23 | man << 13);
}

/* One element of dtype [d] at [p] as a float. */
static float st_element(StDtype d, const unsigned char *p) {
  switch (d) {
  case ST_F64: {
    uint64_t u = le_bytes(p, 8);
    double x;
    memcpy(&x, &u, sizeof x);
    return (float)x;
  }
  case ST_F16:
    return half_float((uint32_t)le_bytes(p, 2));
  case ST_BF16: /* the top half of a float */
    return bits_float((uint32_t)le_bytes(p, 2) << 16);
  default:
    return bits_float((uint32_t)le_bytes(p, 4));
  }
}

static int little_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

/* Copies the checked entries out of [data] into new weights. */
static CtxrtStatus make_weights(StReader *r, const StEntry *e, size_t n,
                                const unsigned char *data, CtxrtWeights **out) {
  CtxrtWeights *w = ctxrt__weights_alloc((int32_t)n);
  if (!w) return ctxrt__nomem(r->err, r->file);
  for (size_t i = 0; i < n; i++) {
    CtxrtTensor *t = &w->tensors[w->count++];
    if (!ctxrt__tensor_init(t, e[i].name, strlen(e[i].name), e[i].ndim, e[i].shape)) {
      ctxrt_weights_destroy(w);
      return ctxrt__nomem(r->err, r->file);
    }
    unsigned size = st_dtype_bytes[e[i].dtype];
    if (e[i].dtype == ST_F32 && little_endian()) /* the file's bytes are the floats */
      memcpy(t->data, data + e[i].begin, (size_t)t->numel * sizeof *t->data);
    else
      for (int64_t k = 0; k < t->numel; k++)
        t->data[k] = st_element(e[i].dtype, data + e[i].begin + size * (uint64_t)k);
    if (e[i].dtype != ST_F32) {
      w->num_converted++;
      w->converted |= 1u << (e[i].dtype - 1);
    }
  }
  *out = w;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_st_read_buffer(const char *name, const unsigned char *data, size_t len,
                                 CtxrtWeights **out, CtxrtError *err) {
  StReader r = {name, err, 0};
  *out = NULL;
  if (len < 8)
    return ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0,
                      "truncated file: %zu bytes, less than the 8-byte header length",
                      len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--)
    n = n << 8 | data[i];
  if (n > len - 8)
    return ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0,
                      "header length %llu is larger than the file (%zu bytes after the "
                      "length)",
                      (unsigned long long)n, len - 8);
  r.data_len = len - 8 - n;
  json_t *root;
  CtxrtStatus st = parse_header(&r, data + 8, (size_t)n, &root);
  if (st != CTXRT_OK) return st;
  size_t count = json_object_size(root);
  StEntry *e = calloc(count ? count : 1, sizeof *e);
  if (!e) st = ctxrt__nomem(err, name);
  if (st == CTXRT_OK) st = read_entries(&r, root, e, &count);
  if (st == CTXRT_OK && count > INT32_MAX) st = ctxrt__nomem(err, name);
  if (st == CTXRT_OK) st = make_weights(&r, e, count, data + 8 + n, out);
  free(e);
  json_decref(root);
  return st;
}

CtxrtStatus ctxrt_st_read_file(const char *path, CtxrtWeights **out, CtxrtError *err) {
  char *data;
  size_t len;
  *out = NULL;
  CtxrtStatus st = ctxrt__read_file(path, &data, &len, err);
  if (st != CTXRT_OK) return st;
  st = ctxrt_st_read_buffer(path, (const unsigned char *)data, len, out, err);
  free(data);
  return st;
}

/* ---------------------------------------------------------------- writer */

/* The JSON header for [w] into [*out], with data offsets in order from 0. */
static CtxrtStatus make_header(const CtxrtWeights *w, json_t **out, CtxrtError *err) {
  char q[CTXRT_QUOTE_SIZE];
  json_t *root = json_object();
  uint64_t at = 0;
  *out = NULL;
  for (int32_t i = 0; root && i < w->count; i++) {
    const CtxrtTensor *t = &w->tensors[i];
    if (json_object_get(root, t->name) || strcmp(t->name, "__metadata__") == 0) {
      json_decref(root);
      return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0,
                        "cannot write a tensor named '%s' (duplicate or reserved)",
                        ctxrt__quote(q, t->name, strlen(t->name)));
    }
    json_t *shape = json_array();
    for (int32_t d = 0; d < t->ndim; d++)
      json_array_append_new(shape, json_integer(t->shape[d]));
    uint64_t end = at + (uint64_t)t->numel * 4;
    json_t *entry = json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F32", "shape", shape,
                              "data_offsets", (json_int_t)at, (json_int_t)end);
    if (!entry || json_object_set_new(root, t->name, entry) != 0) {
      json_decref(root);
      root = NULL;
    }
    at = end;
  }
  if (!root) return ctxrt__nomem(err, NULL);
  *out = root;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_st_write_buffer(const CtxrtWeights *w, unsigned char **out, size_t *len,
                                  CtxrtError *err) {
  *out = NULL;
  *len = 0;
  json_t *root;
  CtxrtStatus st = make_header(w, &root, err);
  if (st != CTXRT_OK) return st;
  char *json = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  if (!json) return ctxrt__nomem(err, NULL);
  size_t hlen = strlen(json), padded = (hlen + 7) / 8 * 8, data = 0;
  for (int32_t i = 0; i < w->count; i++)
    data += (size_t)w->tensors[i].numel * 4;
  unsigned char *buf = malloc(8 + padded + data);
  if (!buf) {
    free(json);
    return ctxrt__nomem(err, NULL);
  }
  for (int i = 0; i < 8; i++)
    buf[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  memcpy(buf + 8, json, hlen);
  memset(buf + 8 + hlen, ' ', padded - hlen);
  free(json);
  unsigned char *p = buf + 8 + padded;
  for (int32_t i = 0; i < w->count; i++)
    for (int64_t k = 0; k < w->tensors[i].numel; k++, p += 4) {
      uint32_t u;
      memcpy(&u, &w->tensors[i].data[k], sizeof u);
      for (int b = 0; b < 4; b++)
        p[b] = (unsigned char)(u >> (8 * b));
    }
  *out = buf;
  *len = 8 + padded + data;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_st_write_file(const char *path, const CtxrtWeights *w,
                                CtxrtError *err) {
  unsigned char *buf;
  size_t len;
  CtxrtStatus st = ctxrt_st_write_buffer(w, &buf, &len, err);
  if (st != CTXRT_OK) return st;
  st = ctxrt__write_file(path, buf, len, err);
  free(buf);
  return st;
}
