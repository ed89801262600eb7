/* driver_output.c — what a run returns, written out: `.npy` and `.npz`
 * files, the summary's rows, and the per-field part of a built library's API.
 *
 * A model's output is one tensor, or a tuple (`output cell(root(t))` of a
 * function returning `(h, c)`): then every output row holds all the fields
 * side by side, in declaration order (RA's out_nfields, grep tag
 * TUPLE-OUTPUT), and the kernel, the interpreter and ctxrt_model_run write
 * such rows unchanged. This file splits them by field:
 *
 *   --output OUT.npz   one array per field, named after it (`h`, `c`; an
 *                      unnamed field by its position, `0`, `1`; a single
 *                      unnamed output `output`), in a ZIP archive of stored
 *                      .npy members as numpy.savez writes them
 *   --output OUT.npy   a single output: that file; a tuple: OUT.FIELD.npy
 *                      per field (OUT.h.npy, OUT.c.npy) — or, where OUT is a
 *                      device or a pipe (/dev/null), every field there
 *
 * Each array has shape [rows, field's dims...]. The ZIP writer knows only
 * what numpy.load needs: no compression, no ZIP64 (an archive over 4 GiB is
 * an error), a fixed time stamp so that equal outputs give equal files.
 */
#include "driver/driver.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- fields ----------------------------------------------------------------- */

int ctx_output_nfields(const RaProgram *p) { return p->out_nfields > 1 ? p->out_nfields : 1; }

RaShape ctx_output_field(const RaProgram *p, int k, const char **name, long *off, char *buf,
                         size_t bufsize) {
  const RaFunc *f = &p->funcs[p->out_func];
  int field = p->out_nfields > 1 ? k : p->out_field;
  *off = 0;
  for (int i = 0; p->out_nfields > 1 && i < k; i++) *off += f->fields[i].size;
  if (f->field_names[field])
    *name = f->field_names[field];
  else if (p->out_nfields > 1) {
    snprintf(buf, bufsize, "%d", k);
    *name = buf;
  } else
    *name = "output";
  return f->fields[field];
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Field [k]'s values of every row as a .npy file in memory. */
static CtxrtStatus field_npy(const RaProgram *p, int k, int64_t rows, const void *data,
                             bool f64, unsigned char **npy, size_t *len, const char **name,
                             char *buf, size_t bufsize, CtxrtError *err) {
  long off, width = p->out_shape.size;
  RaShape sh = ctx_output_field(p, k, name, &off, buf, bufsize);
  size_t esize = f64 ? sizeof(double) : sizeof(float);
  char *part = ctx_xmalloc((size_t)rows * (size_t)sh.size * esize + 1);
  for (int64_t r = 0; r < rows; r++)
    memcpy(part + (size_t)r * (size_t)sh.size * esize,
           (const char *)data + ((size_t)r * (size_t)width + (size_t)off) * esize,
           (size_t)sh.size * esize);
  int64_t shape[RA_MAX_RANK + 1];
  shape[0] = rows;
  for (int d = 0; d < sh.rank; d++) shape[d + 1] = sh.dims[d];
  CtxrtStatus st = ctxrt_npy_write_buffer(f64 ? CTXRT_F64 : CTXRT_F32, part, sh.rank + 1,
                                          shape, npy, len, err);
  free(part);
  return st;
}

static CtxrtStatus fail(CtxrtError *err, const char *path, const char *what) {
  snprintf(err->msg, sizeof err->msg, "%s: error: %s", path, what);
  err->status = CTXRT_ERR_IO;
  err->line = 0;
  return CTXRT_ERR_IO;
}

static CtxrtStatus write_bytes(const char *path, const void *data, size_t len, CtxrtError *err) {
  FILE *f = fopen(path, "wb");
  if (!f) return fail(err, path, "cannot open for writing");
  bool ok = fwrite(data, 1, len, f) == len;
  ok = fclose(f) == 0 && ok;
  return ok ? CTXRT_OK : fail(err, path, "write failed");
}

/* ---- ZIP (stored members only) ------------------------------------------------ */

/* CRC-32 as ZIP uses it (the reflected polynomial 0xEDB88320, PKWARE's
 * APPNOTE 4.4.7), bitwise: outputs are small next to computing them. */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

static void put16(CtxBuf *b, unsigned v) {
  ctx_buf_putc(b, (char)(v & 0xFF));
  ctx_buf_putc(b, (char)((v >> 8) & 0xFF));
}

static void put32(CtxBuf *b, uint32_t v) {
  put16(b, v & 0xFFFF);
  put16(b, v >> 16);
}

/* The fields of a local (sig 0x04034b50) or central (0x02014b50) header that
 * both share, from "version needed" to the name's length (APPNOTE 4.3.7). */
static void zip_common(CtxBuf *b, uint32_t crc, uint32_t size, size_t namelen) {
  put16(b, 20);      /* version needed: 2.0 */
  put16(b, 0);       /* flags */
  put16(b, 0);       /* method: stored */
  put16(b, 0);       /* time 00:00:00 */
  put16(b, 33);      /* date 1980-01-01: (0 << 9) | (1 << 5) | 1 */
  put32(b, crc);
  put32(b, size);    /* compressed */
  put32(b, size);    /* uncompressed */
  put16(b, (unsigned)namelen);
}

typedef struct {
  CtxBuf data, central;
  int entries;
} Zip;

static void zip_add(Zip *z, const char *name, const unsigned char *bytes, size_t len) {
  uint32_t crc = crc32_of(bytes, len), at = (uint32_t)z->data.len;
  put32(&z->data, 0x04034b50u);
  zip_common(&z->data, crc, (uint32_t)len, strlen(name));
  put16(&z->data, 0); /* extra field length */
  ctx_buf_puts(&z->data, name);
  ctx_buf_write(&z->data, (const char *)bytes, len);
  put32(&z->central, 0x02014b50u);
  put16(&z->central, 20); /* version made by */
  zip_common(&z->central, crc, (uint32_t)len, strlen(name));
  put16(&z->central, 0);  /* extra */
  put16(&z->central, 0);  /* comment */
  put16(&z->central, 0);  /* disk */
  put16(&z->central, 0);  /* internal attributes */
  put32(&z->central, 0);  /* external attributes */
  put32(&z->central, at);
  ctx_buf_puts(&z->central, name);
  z->entries++;
}

static void zip_finish(Zip *z) {
  uint32_t at = (uint32_t)z->data.len, size = (uint32_t)z->central.len;
  ctx_buf_write(&z->data, z->central.data ? z->central.data : "", z->central.len);
  put32(&z->data, 0x06054b50u);
  put16(&z->data, 0);
  put16(&z->data, 0);
  put16(&z->data, (unsigned)z->entries);
  put16(&z->data, (unsigned)z->entries);
  put32(&z->data, size);
  put32(&z->data, at);
  put16(&z->data, 0); /* comment */
}

/* ---- writing ------------------------------------------------------------------ */

static CtxrtStatus write_npz(const char *path, const RaProgram *p, int64_t rows,
                             const void *data, bool f64, CtxrtError *err) {
  Zip z;
  memset(&z, 0, sizeof z);
  ctx_buf_init(&z.data);
  ctx_buf_init(&z.central);
  CtxrtStatus st = CTXRT_OK;
  for (int k = 0; k < ctx_output_nfields(p) && !st; k++) {
    unsigned char *npy = NULL;
    size_t len = 0;
    const char *name;
    char buf[16];
    st = field_npy(p, k, rows, data, f64, &npy, &len, &name, buf, sizeof buf, err);
    if (!st && z.data.len + len + 4096 > 0xFFFFFFFFu)
      st = fail(err, path, "over 4 GiB: write one .npy per field instead (--output OUT.npy)");
    if (!st) {
      char *member = ctx_xmalloc(strlen(name) + 5);
      sprintf(member, "%s.npy", name);
      zip_add(&z, member, npy, len);
      free(member);
    }
    free(npy);
  }
  if (!st) {
    zip_finish(&z);
    st = write_bytes(path, z.data.data, z.data.len, err);
  }
  ctx_buf_free(&z.data);
  ctx_buf_free(&z.central);
  return st;
}

CtxrtStatus ctx_output_write(const char *path, const RaProgram *p, int64_t rows,
                             const void *data, bool f64, CtxrtError *err) {
  if (has_suffix(path, ".npz")) return write_npz(path, p, rows, data, f64, err);
  int n = ctx_output_nfields(p);
  size_t stem = strlen(path) - (has_suffix(path, ".npy") ? 4 : 0);
  struct stat sb; /* /dev/null, a pipe: every field there, one after another */
  bool device = stat(path, &sb) == 0 && (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode));
  CtxrtStatus st = CTXRT_OK;
  for (int k = 0; k < n && !st; k++) {
    unsigned char *npy = NULL;
    size_t len = 0;
    const char *name;
    char buf[16];
    st = field_npy(p, k, rows, data, f64, &npy, &len, &name, buf, sizeof buf, err);
    char *file = ctx_xmalloc(stem + strlen(name) + 8);
    if (n == 1 || device)
      strcpy(file, path);
    else
      sprintf(file, "%.*s.%s.npy", (int)stem, path, name);
    if (!st) st = write_bytes(file, npy, len, err);
    free(file);
    free(npy);
  }
  return st;
}

/* ---- the summary ---------------------------------------------------------------- */

/*   output [8, 256], one row per tree (its root):      a single output
 *   output h [8, 256], one row per tree (its root):    per field of a tuple
 *     0: 0.0123 -0.0456 ... (at most [values] values, at most [max_rows] rows)
 *     ... (3 more rows)                                                      */
void ctx_output_summary(FILE *out, const RaProgram *p, int64_t rows, const double *data,
                        const char *meaning, int max_rows, int values) {
  for (int k = 0; k < ctx_output_nfields(p); k++) {
    long off;
    const char *name;
    char buf[16];
    RaShape sh = ctx_output_field(p, k, &name, &off, buf, sizeof buf);
    fprintf(out, "output%s%s [%lld", p->out_nfields > 1 ? " " : "",
            p->out_nfields > 1 ? name : "", (long long)rows);
    for (int d = 0; d < sh.rank; d++) fprintf(out, ", %ld", sh.dims[d]);
    fprintf(out, "], %s:\n", meaning);
    for (int64_t row = 0; row < rows && row < max_rows; row++) {
      fprintf(out, "  %lld:", (long long)row);
      for (long v = 0; v < sh.size && v < values; v++)
        fprintf(out, " %.6g", data[row * p->out_shape.size + off + v]);
      fputs(sh.size > values ? " ...\n" : "\n", out);
    }
    if (rows > max_rows)
      fprintf(out, "  ... (%lld more row%s)\n", (long long)(rows - max_rows),
              rows - max_rows == 1 ? "" : "s");
  }
}

/* ---- a built library's per-field API ---------------------------------------------- */

void ctx_output_header_api(CtxBuf *h, const RaProgram *p, const char *n) {
  if (p->out_nfields <= 1) return;
  ctx_buf_printf(h, "/* The output is a tuple of %d fields; an output row holds them side by\n"
                 " * side, in this order. Field FIELD of row [i]: %s_output_FIELD(m, i),\n"
                 " * %s_output_FIELD_size() floats, %s_output_FIELD_offset() floats into\n"
                 " * the row; NULL when [i] is out of range. */\n", p->out_nfields, n, n, n);
  for (int k = 0; k < p->out_nfields; k++) {
    long off;
    const char *f;
    char buf[16];
    RaShape sh = ctx_output_field(p, k, &f, &off, buf, sizeof buf);
    ctx_buf_printf(h, "const float *%s_output_%s(const %s_model *m, int64_t i); /* [", n, f, n);
    for (int d = 0; d < sh.rank; d++) ctx_buf_printf(h, "%s%ld", d ? ", " : "", sh.dims[d]);
    ctx_buf_printf(h, "] */\nint64_t %s_output_%s_size(void);\n"
                   "int64_t %s_output_%s_offset(void);\n", n, f, n, f);
  }
  ctx_buf_putc(h, '\n');
}

void ctx_output_model_api(CtxBuf *c, const RaProgram *p, const char *n) {
  for (int k = 0; p->out_nfields > 1 && k < p->out_nfields; k++) {
    long off;
    const char *f;
    char buf[16];
    RaShape sh = ctx_output_field(p, k, &f, &off, buf, sizeof buf);
    ctx_buf_printf(c, "\nconst float *%s_output_%s(const %s_model *m, int64_t i) {\n"
                   "  const float *row = %s_output(m, i);\n"
                   "  return row ? row + %ld : NULL;\n}\n\n"
                   "int64_t %s_output_%s_size(void) { return %ld; }\n\n"
                   "int64_t %s_output_%s_offset(void) { return %ld; }\n",
                   n, f, n, n, off, n, f, sh.size, n, f, off);
  }
}
