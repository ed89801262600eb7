/* ctxrt_npy.c — NumPy `.npy` arrays: the writer for ctx's outputs and a small
 * reader (for tests and for comparing outputs).
 *
 * Format (numpy/lib/format.py): the magic "\x93NUMPY", a version (1.0 here), a
 * little-endian header length (2 bytes in 1.0, 4 in 2.0 and 3.0), then an ASCII
 * Python dict literal ending in '\n', padded with spaces so that the data starts
 * on a multiple of 64 bytes, then the raw data in C order.
 *
 * Guarantees: the writer's bytes equal numpy.save's (NumPy >= 1.24, which also
 * leaves GROWTH_AXIS_MAX_DIGITS = 21 spare columns for the first axis); values are
 * stored little-endian whatever the host. The reader accepts '<f4' and '<f8' in C
 * order, checks the data length exactly and never reads outside its buffer.
 */
#include "ctxrt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
#define ARRAY_ALIGN 64            /* numpy's ARRAY_ALIGN */
#define GROWTH_AXIS_MAX_DIGITS 21 /* numpy's GROWTH_AXIS_MAX_DIGITS */

static size_t dtype_size(CtxrtDtype dtype) {
  return dtype == CTXRT_F64 ? 8 : 4;
}

/* ---------------------------------------------------------------- writer */

/* Python's repr of the shape tuple: "()", "(5,)", "(2, 3)". */
static void shape_repr(char *buf, size_t size, int32_t ndim, const int64_t *shape) {
  size_t at = (size_t)snprintf(buf, size, "(");
  for (int32_t i = 0; i < ndim; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? ", " : "",
                           (long long)shape[i]);
  snprintf(buf + at, size - at, ndim == 1 ? ",)" : ")");
}

/* The header (magic through the final '\n') into [buf]; returns its length. */
static size_t make_header(char *buf, CtxrtDtype dtype, int32_t ndim,
                          const int64_t *shape) {
  char tuple[CTXRT_MAX_DIMS * 24 + 8], first[24];
  shape_repr(tuple, sizeof tuple, ndim, shape);
  char *dict = buf + MAGIC_LEN + 4;
  int len = sprintf(dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                    dtype == CTXRT_F64 ? "<f8" : "<f4", tuple);
  if (ndim > 0) {
    int digits = snprintf(first, sizeof first, "%lld", (long long)shape[0]);
    for (int i = digits; i < GROWTH_AXIS_MAX_DIGITS; i++)
      dict[len++] = ' ';
  }
  /* numpy: padlen = ARRAY_ALIGN - ((MAGIC_LEN + 4 + hlen) % ARRAY_ALIGN), where
   * hlen counts the '\n'; the pad is 1..64 spaces. */
  size_t hlen = (size_t)len + 1;
  size_t pad = ARRAY_ALIGN - ((MAGIC_LEN + 4 + hlen) % ARRAY_ALIGN);
  memset(dict + len, ' ', pad);
  dict[(size_t)len + pad] = '\n';
  hlen += pad;
  memcpy(buf, MAGIC, MAGIC_LEN);
  buf[6] = 1; /* version 1.0 */
  buf[7] = 0;
  buf[8] = (char)(hlen & 0xff);
  buf[9] = (char)(hlen >> 8);
  return MAGIC_LEN + 4 + hlen;
}

CtxrtStatus ctxrt_npy_write_buffer(CtxrtDtype dtype, const void *data, int32_t ndim,
                                   const int64_t *shape, unsigned char **out, size_t *len,
                                   CtxrtError *err) {
  int64_t numel;
  *out = NULL;
  *len = 0;
  if (dtype != CTXRT_F32 && dtype != CTXRT_F64)
    return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, ".npy: unknown dtype %d", (int)dtype);
  if (!ctxrt__shape_numel(ndim, shape, &numel) ||
      (uint64_t)numel > (SIZE_MAX - 1024) / dtype_size(dtype))
    return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, ".npy: bad shape");
  char header[1024];
  size_t hlen = make_header(header, dtype, ndim, shape);
  size_t esz = dtype_size(dtype), bytes = (size_t)numel * esz;
  unsigned char *buf = malloc(hlen + bytes + 1);
  if (!buf) return ctxrt__nomem(err, NULL);
  memcpy(buf, header, hlen);
  const unsigned char *src = data;
  for (size_t i = 0; i < (size_t)numel; i++) {
    uint64_t u = 0;
    if (esz == 8)
      memcpy(&u, src + 8 * i, 8);
    else {
      uint32_t v;
      memcpy(&v, src + 4 * i, 4);
      u = v;
    }
    for (size_t b = 0; b < esz; b++)
      buf[hlen + i * esz + b] = (unsigned char)(u >> (8 * b));
  }
  *out = buf;
  *len = hlen + bytes;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_npy_write_file(const char *path, CtxrtDtype dtype, const void *data,
                                 int32_t ndim, const int64_t *shape, CtxrtError *err) {
  unsigned char *buf;
  size_t len;
  CtxrtStatus st = ctxrt_npy_write_buffer(dtype, data, ndim, shape, &buf, &len, err);
  if (st == CTXRT_OK) st = ctxrt__write_file(path, buf, len, err);
  free(buf);
  return st;
}

/* ---------------------------------------------------------------- reader */

typedef struct Dict {
  const char *s, *end;
  const char *file;
  CtxrtError *err;
} Dict;

static void skip_ws(Dict *d) {
  while (d->s < d->end && (*d->s == ' ' || *d->s == '\t' || *d->s == '\n'))
    d->s++;
}

static int eat(Dict *d, char c) {
  skip_ws(d);
  if (d->s < d->end && *d->s == c) {
    d->s++;
    return 1;
  }
  return 0;
}

static CtxrtStatus bad_header(Dict *d, const char *what) {
  return ctxrt__err(d->err, CTXRT_ERR_SYNTAX, d->file, 0, "bad .npy header: %s", what);
}

/* A quoted string into [buf] (at most [size] - 1 bytes). */
static int read_str(Dict *d, char *buf, size_t size) {
  skip_ws(d);
  if (d->s >= d->end || (*d->s != '\'' && *d->s != '"')) return 0;
  char quote = *d->s++;
  size_t n = 0;
  while (d->s < d->end && *d->s != quote) {
    if (n + 1 >= size) return 0;
    buf[n++] = *d->s++;
  }
  buf[n] = '\0';
  return d->s < d->end && *d->s++ == quote;
}

/* The shape tuple "(2, 3)", "(5,)" or "()". */
static CtxrtStatus read_shape(Dict *d, CtxrtArray *a) {
  if (!eat(d, '(')) return bad_header(d, "expected a shape tuple");
  a->ndim = 0;
  while (!eat(d, ')')) {
    skip_ws(d);
    const char *start = d->s;
    while (d->s < d->end && *d->s >= '0' && *d->s <= '9')
      d->s++;
    int64_t v;
    if (ctxrt__parse_int(start, (size_t)(d->s - start), &v) != 1)
      return bad_header(d, "expected a dimension in the shape");
    if (a->ndim == CTXRT_MAX_DIMS) return bad_header(d, "more than 8 dimensions");
    a->shape[a->ndim++] = v;
    if (!eat(d, ',') && !(skip_ws(d), d->s < d->end && *d->s == ')'))
      return bad_header(d, "expected ',' or ')' in the shape");
  }
  return CTXRT_OK;
}

/* One "'key': value" pair; [seen] collects bits 1 descr, 2 fortran_order, 4 shape. */
static CtxrtStatus read_pair(Dict *d, CtxrtArray *a, unsigned *seen) {
  char key[32], val[32];
  if (!read_str(d, key, sizeof key) || !eat(d, ':'))
    return bad_header(d, "expected a key");
  if (strcmp(key, "descr") == 0) {
    *seen |= 1;
    if (!read_str(d, val, sizeof val)) return bad_header(d, "expected a 'descr' string");
    if (strcmp(val, "<f4") == 0)
      a->dtype = CTXRT_F32;
    else if (strcmp(val, "<f8") == 0)
      a->dtype = CTXRT_F64;
    else
      return ctxrt__err(d->err, CTXRT_ERR_SYNTAX, d->file, 0,
                        "unsupported .npy dtype '%s' (only '<f4' and '<f8')", val);
  } else if (strcmp(key, "fortran_order") == 0) {
    *seen |= 2;
    skip_ws(d);
    if (d->end - d->s >= 4 && memcmp(d->s, "True", 4) == 0)
      return ctxrt__err(d->err, CTXRT_ERR_SYNTAX, d->file, 0,
                        "fortran-order .npy arrays are not supported");
    if (d->end - d->s < 5 || memcmp(d->s, "False", 5) != 0)
      return bad_header(d, "expected True or False");
    d->s += 5;
  } else if (strcmp(key, "shape") == 0) {
    *seen |= 4;
    CtxrtStatus st = read_shape(d, a);
    if (st != CTXRT_OK) return st;
  } else {
    return bad_header(d, "unknown key");
  }
  return CTXRT_OK;
}

static CtxrtStatus read_dict(Dict *d, CtxrtArray *a) {
  unsigned seen = 0;
  if (!eat(d, '{')) return bad_header(d, "expected '{'");
  while (!eat(d, '}')) {
    CtxrtStatus st = read_pair(d, a, &seen);
    if (st != CTXRT_OK) return st;
    if (!eat(d, ',') && !(skip_ws(d), d->s < d->end && *d->s == '}'))
      return bad_header(d, "expected ',' or '}'");
  }
  skip_ws(d);
  if (d->s != d->end) return bad_header(d, "text after the dict");
  if (seen != 7) return bad_header(d, "missing 'descr', 'fortran_order' or 'shape'");
  return CTXRT_OK;
}

/* The header of [data] into [a]; [*offset] is where the data starts. */
static CtxrtStatus read_header(const char *name, const unsigned char *data, size_t len,
                               CtxrtArray *a, size_t *offset, CtxrtError *err) {
  if (len < MAGIC_LEN + 4 || memcmp(data, MAGIC, MAGIC_LEN) != 0)
    return ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0,
                      "not a .npy file (no magic string)");
  int major = data[6];
  size_t hlen, at = MAGIC_LEN + 4;
  if (major == 1) {
    hlen = (size_t)data[8] | (size_t)data[9] << 8;
  } else if ((major == 2 || major == 3) && len >= MAGIC_LEN + 6) {
    hlen = (size_t)data[8] | (size_t)data[9] << 8 | (size_t)data[10] << 16 |
           (size_t)data[11] << 24;
    at += 2;
  } else {
    return ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0, "unsupported .npy version %d.%d",
                      major, (int)data[7]);
  }
  if (hlen > len - at)
    return ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0,
                      "truncated file: header incomplete");
  Dict d = {(const char *)data + at, (const char *)data + at + hlen, name, err};
  *offset = at + hlen;
  return read_dict(&d, a);
}

CtxrtStatus ctxrt_npy_read_buffer(const char *name, const unsigned char *data, size_t len,
                                  CtxrtArray **out, CtxrtError *err) {
  *out = NULL;
  CtxrtArray *a = calloc(1, sizeof *a);
  if (!a) return ctxrt__nomem(err, name);
  size_t offset = 0;
  CtxrtStatus st = read_header(name, data, len, a, &offset, err);
  if (st == CTXRT_OK && !ctxrt__shape_numel(a->ndim, a->shape, &a->numel))
    st = ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0, "bad .npy header: shape too large");
  size_t esz = dtype_size(a->dtype);
  if (st == CTXRT_OK && (uint64_t)a->numel != (len - offset) / esz)
    st = ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0,
                    "data holds %zu bytes, but shape and dtype need %llu", len - offset,
                    (unsigned long long)a->numel * esz);
  if (st == CTXRT_OK && (len - offset) % esz)
    st = ctxrt__err(err, CTXRT_ERR_SYNTAX, name, 0,
                    "data holds %zu bytes, not whole "
                    "elements",
                    len - offset);
  if (st == CTXRT_OK && !(a->data = malloc((size_t)a->numel * esz + 1)))
    st = ctxrt__nomem(err, name);
  if (st != CTXRT_OK) {
    ctxrt_array_destroy(a);
    return st;
  }
  unsigned char *dst = a->data;
  for (size_t i = 0; i < (size_t)a->numel; i++) {
    uint64_t u = 0;
    for (size_t b = 0; b < esz; b++)
      u |= (uint64_t)data[offset + i * esz + b] << (8 * b);
    if (esz == 8)
      memcpy(dst + 8 * i, &u, 8);
    else {
      uint32_t v = (uint32_t)u;
      memcpy(dst + 4 * i, &v, 4);
    }
  }
  *out = a;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_npy_read_file(const char *path, CtxrtArray **out, CtxrtError *err) {
  char *data;
  size_t len;
  *out = NULL;
  CtxrtStatus st = ctxrt__read_file(path, &data, &len, err);
  if (st != CTXRT_OK) return st;
  st = ctxrt_npy_read_buffer(path, (const unsigned char *)data, len, out, err);
  free(data);
  return st;
}

void ctxrt_array_destroy(CtxrtArray *a) {
  if (!a) return;
  free(a->data);
  free(a);
}
