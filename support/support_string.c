/* support_string.c — growable text buffers and small string helpers
 * (edit distance for "did you mean" notes, UTF-8 checks for the lexer and
 * caret placement). */
#include "support/support.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ctx_buf_init(CtxBuf *buf) { memset(buf, 0, sizeof *buf); }

void ctx_buf_free(CtxBuf *buf) {
  free(buf->data);
  ctx_buf_init(buf);
}

void ctx_buf_clear(CtxBuf *buf) {
  buf->len = 0;
  if (buf->data) buf->data[0] = 0;
}

static void reserve(CtxBuf *buf, size_t extra) {
  if (buf->len + extra + 1 <= buf->cap) return;
  size_t cap = buf->cap ? buf->cap : 64;
  while (cap < buf->len + extra + 1) cap *= 2;
  buf->data = ctx_xrealloc(buf->data, cap);
  buf->cap = cap;
}

void ctx_buf_write(CtxBuf *buf, const char *s, size_t len) {
  reserve(buf, len);
  memcpy(buf->data + buf->len, s, len);
  buf->len += len;
  buf->data[buf->len] = 0;
}

void ctx_buf_putc(CtxBuf *buf, char c) { ctx_buf_write(buf, &c, 1); }
void ctx_buf_puts(CtxBuf *buf, const char *s) { ctx_buf_write(buf, s, strlen(s)); }

void ctx_buf_vprintf(CtxBuf *buf, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  if (n > 0) {
    reserve(buf, (size_t)n);
    vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap2);
    buf->len += (size_t)n;
  }
  va_end(ap2);
}

void ctx_buf_printf(CtxBuf *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctx_buf_vprintf(buf, fmt, ap);
  va_end(ap);
}

const char *ctx_buf_str(const CtxBuf *buf) { return buf->data ? buf->data : ""; }

int ctx_edit_distance(const char *a, const char *b, int cap) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return cap + 1;
  if ((int)(la > lb ? la - lb : lb - la) > cap) return cap + 1;
  int row[65];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0], best = row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int sub = diag + (a[i - 1] != b[j - 1]);
      int v = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
      row[j] = v < sub ? v : sub;
      diag = up;
      if (row[j] < best) best = row[j];
    }
    if (best > cap) return cap + 1;
  }
  return row[lb] > cap ? cap + 1 : row[lb];
}

/* Length of the UTF-8 sequence starting at [s] (at most [n] bytes), or 0 if
 * it is invalid (overlong forms, surrogates and values past U+10FFFF too). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (len == 0 || c > 0xF4 || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
  if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
  if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
  if (c == 0xF4 && s[1] >= 0x90) return 0; /* > U+10FFFF */
  return len;
}

long ctx_utf8_invalid_at(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    size_t k = utf8_seq(p + i, len - i);
    if (k == 0) return (long)i;
    i += k;
  }
  return -1;
}

size_t ctx_utf8_width(const char *s, size_t len) {
  size_t w = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) w++;
  return w;
}

char *ctx_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *data = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = ctx_xmalloc((size_t)n + 1);
    if (fread(data, 1, (size_t)n, f) == (size_t)n) {
      data[n] = '\0';
    } else {
      if (!ferror(f)) errno = EIO; /* shorter than it said */
      free(data);
      data = NULL;
    }
  }
  int saved = errno;
  fclose(f);
  errno = saved;
  if (data) *size = (size_t)n;
  return data;
}
