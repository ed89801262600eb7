/* support_diag.c — source files and diagnostics.
 *
 * A diagnostic renders as (STYLE.md):
 *
 *   path:line:col: error: message
 *      14 |   let c = i * u + hc * c0
 *         |                   ^~
 *
 * Columns are byte columns in the message (what editors jump to); the caret
 * is placed by code points so it sits under the right character of UTF-8
 * text. Tabs in the echoed line become single spaces so the caret stays
 * aligned. Very long lines are echoed as a window around the span.
 */
#include "support/support.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { LINE_WINDOW = 120 }; /* bytes of a long line echoed around the caret */

void ctx_sources_init(CtxSources *srcs) { memset(srcs, 0, sizeof *srcs); }

void ctx_sources_free(CtxSources *srcs) {
  for (int i = 1; i < srcs->len; i++) {
    free(srcs->files[i].text);
    free(srcs->files[i].line_start);
    free((char *)srcs->files[i].name);
  }
  free(srcs->files);
  ctx_sources_init(srcs);
}

int ctx_sources_add(CtxSources *srcs, const char *name, const char *text, size_t len) {
  if (srcs->len == 0) srcs->len = 1; /* id 0 = no file */
  if (srcs->len >= srcs->cap) {
    srcs->cap = srcs->cap ? srcs->cap * 2 : 8;
    srcs->files = ctx_xrealloc(srcs->files, sizeof(CtxSource) * (size_t)srcs->cap);
  }
  CtxSource *s = &srcs->files[srcs->len];
  memset(s, 0, sizeof *s);
  size_t nlen = strlen(name);
  char *n = ctx_xmalloc(nlen + 1);
  memcpy(n, name, nlen + 1);
  s->name = n;
  s->text = ctx_xmalloc(len + 1);
  if (len) memcpy(s->text, text, len);
  s->text[len] = 0;
  s->len = len;
  return srcs->len++;
}

int ctx_sources_load(CtxSources *srcs, const char *path, size_t max_bytes, char *err,
                     size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return 0;
  }
  CtxBuf buf;
  ctx_buf_init(&buf);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (buf.len + n > max_bytes) {
      snprintf(err, errlen, "'%s' is larger than %zu bytes", path, max_bytes);
      fclose(f);
      ctx_buf_free(&buf);
      return 0;
    }
    ctx_buf_write(&buf, chunk, n);
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    snprintf(err, errlen, "cannot read '%s'", path);
    ctx_buf_free(&buf);
    return 0;
  }
  int id = ctx_sources_add(srcs, path, ctx_buf_str(&buf), buf.len);
  ctx_buf_free(&buf);
  return id;
}

const CtxSource *ctx_sources_get(const CtxSources *srcs, int id) {
  return id > 0 && id < srcs->len ? &srcs->files[id] : NULL;
}

static void index_lines(CtxSource *s) {
  int n = 1;
  for (size_t i = 0; i < s->len; i++) n += s->text[i] == '\n';
  s->line_start = ctx_xmalloc(sizeof(size_t) * ((size_t)n + 1));
  int k = 0;
  s->line_start[k++] = 0;
  for (size_t i = 0; i < s->len; i++)
    if (s->text[i] == '\n') s->line_start[k++] = i + 1;
  s->line_start[k] = s->len + 1;
  s->num_lines = n;
}

const char *ctx_sources_line(CtxSources *srcs, int id, int line, size_t *len) {
  if (id <= 0 || id >= srcs->len) return NULL;
  CtxSource *s = &srcs->files[id];
  if (!s->line_start) index_lines(s);
  if (line < 1 || line > s->num_lines) return NULL;
  size_t b = s->line_start[line - 1], e = s->line_start[line] - 1;
  if (e > s->len) e = s->len;
  if (e > b && s->text[e - 1] == '\r') e--;
  *len = e - b;
  return s->text + b;
}

void ctx_diag_init(CtxDiag *diag, CtxSources *srcs, FILE *out) {
  memset(diag, 0, sizeof *diag);
  diag->srcs = srcs;
  diag->out = out;
  diag->error_limit = 20;
}

bool ctx_diag_should_stop(const CtxDiag *diag) { return diag->limit_reached; }

CtxSpan ctx_span_join(CtxSpan a, CtxSpan b) {
  if (a.file == 0) return b;
  if (b.file == 0 || b.file != a.file) return a;
  CtxSpan s = a;
  s.end_line = b.end_line;
  s.end_col = b.end_col;
  return s;
}

/* Echoes the span's first line with a caret and tildes under the span. */
static void render_source(CtxDiag *diag, CtxSpan span) {
  size_t len;
  const char *text = ctx_sources_line(diag->srcs, span.file, span.line, &len);
  if (!text) return;
  size_t col = (size_t)(span.col > 0 ? span.col - 1 : 0);
  if (col > len) col = len;
  size_t end = span.end_line == span.line && span.end_col > span.col
                   ? (size_t)(span.end_col - 1)
                   : (span.end_line > span.line ? len : col + 1);
  if (end > len) end = len > col ? len : col + 1;
  size_t from = 0, to = len;
  if (len > LINE_WINDOW) { /* a window around the caret */
    from = col > LINE_WINDOW / 3 ? col - LINE_WINDOW / 3 : 0;
    while (from > 0 && ((unsigned char)text[from] & 0xC0) == 0x80) from--;
    to = from + LINE_WINDOW < len ? from + LINE_WINDOW : len;
    if (end > to) end = to > col ? to : col + 1;
  }
  fprintf(diag->out, "%5d | ", span.line);
  for (size_t i = from; i < to; i++) {
    unsigned char c = (unsigned char)text[i];
    fputc(c == '\t' ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : c, diag->out);
  }
  fputs("\n      | ", diag->out);
  for (size_t i = ctx_utf8_width(text + from, col - from); i > 0; i--) fputc(' ', diag->out);
  fputc('^', diag->out);
  size_t w = end > col + 1 ? ctx_utf8_width(text + col + 1, end - col - 1) : 0;
  for (; w > 0; w--) fputc('~', diag->out);
  fputc('\n', diag->out);
}

static const char *sev_name[] = {"error", "warning", "note"};

void ctx_diag_report(CtxDiag *diag, CtxSeverity sev, CtxSpan span, const char *fmt,
                     va_list ap) {
  if (sev == CTX_SEV_NOTE && diag->suppress_notes) return;
  if (diag->limit_reached) {
    diag->suppress_notes = true;
    return;
  }
  diag->suppress_notes = false;
  if (sev == CTX_SEV_ERROR) diag->errors++;
  if (sev == CTX_SEV_WARNING) diag->warnings++;
  if (sev == CTX_SEV_ERROR && diag->error_limit > 0 && diag->errors >= diag->error_limit)
    diag->limit_reached = true;
  if (!diag->out) return; /* counted, not printed */
  const CtxSource *src = ctx_sources_get(diag->srcs, span.file);
  if (src && span.line > 0)
    fprintf(diag->out, "%s:%d:%d: ", src->name, span.line, span.col);
  else if (src)
    fprintf(diag->out, "%s: ", src->name);
  else
    fputs("ctx: ", diag->out);
  fprintf(diag->out, "%s: ", sev_name[sev]);
  vfprintf(diag->out, fmt, ap);
  fputc('\n', diag->out);
  if (src && span.line > 0) render_source(diag, span);
  if (diag->limit_reached)
    fprintf(diag->out, "ctx: error: too many errors (%d), stopping now\n", diag->errors);
}

void ctx_diag_error(CtxDiag *diag, CtxSpan span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctx_diag_report(diag, CTX_SEV_ERROR, span, fmt, ap);
  va_end(ap);
}

void ctx_diag_warning(CtxDiag *diag, CtxSpan span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctx_diag_report(diag, CTX_SEV_WARNING, span, fmt, ap);
  va_end(ap);
}

void ctx_diag_note(CtxDiag *diag, CtxSpan span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctx_diag_report(diag, CTX_SEV_NOTE, span, fmt, ap);
  va_end(ap);
}

void ctx_diag_ice(CtxDiag *diag, const char *cfile, int cline, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag->ice = true;
  diag->errors++;
  if (diag->out) {
    fprintf(diag->out, "ctx: internal compiler error: ");
    vfprintf(diag->out, fmt, ap);
    fprintf(diag->out, " (at %s:%d)\n", cfile, cline);
  }
  va_end(ap);
}
