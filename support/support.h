/* support.h — the pieces every stage of ctx stands on.
 *
 * Arenas: the compiler allocates from zeroed bump arenas tied to pipeline
 * lifetimes and frees whole arenas, never single nodes. Out of memory aborts
 * with a message in one place (ctx_oom); no caller checks for NULL.
 *
 * Buffers: growable byte buffers for building text (printers, messages).
 *
 * Sources and diagnostics: every file the compiler reads is registered with a
 * CtxSources table so that a CtxSpan (file, line, column range) can be rendered
 * as `path:line:col: error: message`, the source line, and a caret with `~`
 * under the span (STYLE.md). Stages never print or exit: they report through a
 * CtxDiag sink and the driver decides exit codes.
 */
#ifndef CTX_SUPPORT_H
#define CTX_SUPPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define CTX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CTX_NORETURN __attribute__((noreturn))
#else
#define CTX_PRINTF(f, a)
#define CTX_NORETURN
#endif

/* ---- memory ------------------------------------------------------------ */

/* Reports that the process ran out of memory and aborts. The one place. */
CTX_NORETURN void ctx_oom(void);

/* malloc/realloc that never return NULL (they call ctx_oom). */
void *ctx_xmalloc(size_t size);
void *ctx_xrealloc(void *ptr, size_t size);

typedef struct CtxArena CtxArena;
typedef struct {
  void *chunk;
  size_t used;
} CtxArenaMark;

CtxArena *ctx_arena_new(void);
/* Frees [arena] and everything allocated from it. NULL is allowed. */
void ctx_arena_free(CtxArena *arena);
/* Returns [size] zeroed bytes aligned for any type, valid until the arena is
 * freed or released past this point. [size] 0 returns a unique pointer. */
void *ctx_arena_alloc(CtxArena *arena, size_t size);
/* Copies [len] bytes of [s] and appends a NUL. */
char *ctx_arena_strndup(CtxArena *arena, const char *s, size_t len);
char *ctx_arena_strdup(CtxArena *arena, const char *s);
char *ctx_arena_printf(CtxArena *arena, const char *fmt, ...) CTX_PRINTF(2, 3);
/* Scratch lifetimes: everything allocated after [ctx_arena_mark] is freed by
 * [ctx_arena_release] with that mark. */
CtxArenaMark ctx_arena_mark(CtxArena *arena);
void ctx_arena_release(CtxArena *arena, CtxArenaMark mark);
/* Bytes handed out so far (for statistics and tests). */
size_t ctx_arena_bytes(const CtxArena *arena);

#define CTX_NEW(arena, T) ((T *)ctx_arena_alloc((arena), sizeof(T)))
#define CTX_NEW_ARRAY(arena, T, n) ((T *)ctx_arena_alloc((arena), sizeof(T) * (size_t)(n)))

/* A growable array of pointers allocated from an arena (old storage is left
 * in the arena when it grows: cheap, and freed with the arena). */
typedef struct {
  void **items;
  int len, cap;
} CtxVec;
void ctx_vec_push(CtxArena *arena, CtxVec *vec, void *item);

/* ---- buffers ----------------------------------------------------------- */

typedef struct {
  char *data; /* always NUL-terminated when non-NULL */
  size_t len, cap;
} CtxBuf;

void ctx_buf_init(CtxBuf *buf);
void ctx_buf_free(CtxBuf *buf);
void ctx_buf_clear(CtxBuf *buf);
void ctx_buf_putc(CtxBuf *buf, char c);
void ctx_buf_puts(CtxBuf *buf, const char *s);
void ctx_buf_write(CtxBuf *buf, const char *s, size_t len);
void ctx_buf_printf(CtxBuf *buf, const char *fmt, ...) CTX_PRINTF(2, 3);
void ctx_buf_vprintf(CtxBuf *buf, const char *fmt, va_list ap);
/* The contents as a C string ("" for an empty buffer). */
const char *ctx_buf_str(const CtxBuf *buf);

/* ---- files ------------------------------------------------------------- */

/* The whole file at [path], malloc'd (one byte more, a NUL after the data),
 * its length in [*size]; NULL when it cannot be read (errno says why). */
char *ctx_read_file(const char *path, size_t *size);

/* ---- strings ----------------------------------------------------------- */

/* Levenshtein distance of [a] and [b], capped at [cap] + 1 (used for
 * "did you mean" notes). */
int ctx_edit_distance(const char *a, const char *b, int cap);
/* Checks [len] bytes of [s] for valid UTF-8. Returns the byte offset of the
 * first invalid sequence, or -1 when the text is valid. */
long ctx_utf8_invalid_at(const char *s, size_t len);
/* Number of UTF-8 code points in the first [len] bytes of [s]. */
size_t ctx_utf8_width(const char *s, size_t len);

/* ---- sources ----------------------------------------------------------- */

/* A position range in a source: 1-based line and column (bytes), end
 * exclusive. file 0 means "no location". */
typedef struct {
  int file;
  int line, col;
  int end_line, end_col;
} CtxSpan;

typedef struct {
  const char *name; /* as the user wrote it */
  char *text;       /* NUL-terminated; may contain NULs before len */
  size_t len;
  size_t *line_start; /* computed on first use */
  int num_lines;
} CtxSource;

typedef struct {
  CtxSource *files; /* index 0 is unused */
  int len, cap;
} CtxSources;

void ctx_sources_init(CtxSources *srcs);
void ctx_sources_free(CtxSources *srcs);
/* Registers a copy of [len] bytes of [text] under [name]; returns its id. */
int ctx_sources_add(CtxSources *srcs, const char *name, const char *text, size_t len);
/* Reads [path] and registers it. Returns the id, or 0 with a message in
 * [err] (size [errlen]) when the file cannot be read or is over [max_bytes]. */
int ctx_sources_load(CtxSources *srcs, const char *path, size_t max_bytes, char *err,
                     size_t errlen);
const CtxSource *ctx_sources_get(const CtxSources *srcs, int id);
/* The text of line [line] (1-based) of file [id] without its newline; sets
 * [*len]. NULL when out of range. */
const char *ctx_sources_line(CtxSources *srcs, int id, int line, size_t *len);

/* ---- diagnostics -------------------------------------------------------- */

typedef enum { CTX_SEV_ERROR, CTX_SEV_WARNING, CTX_SEV_NOTE } CtxSeverity;

typedef struct {
  CtxSources *srcs;
  FILE *out;          /* where rendered diagnostics go; NULL: nowhere */
  int error_limit;    /* stop reporting after this many errors; 0 = no limit */
  int errors, warnings;
  bool limit_reached; /* set once error_limit errors were reported */
  bool ice;           /* an internal compiler error was reported */
  bool suppress_notes; /* notes of a suppressed error are suppressed too */
} CtxDiag;

/* [out] NULL: diagnostics are counted (errors, warnings, ice, the limit) but
 * not printed — for fuzz targets and tests that only look at the counts. */
void ctx_diag_init(CtxDiag *diag, CtxSources *srcs, FILE *out);
/* Reports an error at [span]. After error_limit errors, one final line says
 * reporting stopped, and later diagnostics are dropped. */
void ctx_diag_error(CtxDiag *diag, CtxSpan span, const char *fmt, ...) CTX_PRINTF(3, 4);
void ctx_diag_warning(CtxDiag *diag, CtxSpan span, const char *fmt, ...) CTX_PRINTF(3, 4);
/* A note belongs to the error or warning just before it. */
void ctx_diag_note(CtxDiag *diag, CtxSpan span, const char *fmt, ...) CTX_PRINTF(3, 4);
void ctx_diag_report(CtxDiag *diag, CtxSeverity sev, CtxSpan span, const char *fmt,
                     va_list ap);
/* An internal compiler error: a bug in ctx, not in the input. Names the ctx
 * source file and line; the driver exits with its own code (70). */
void ctx_diag_ice(CtxDiag *diag, const char *cfile, int cline, const char *fmt, ...)
    CTX_PRINTF(4, 5);
#define CTX_ICE(diag, ...) ctx_diag_ice((diag), __FILE__, __LINE__, __VA_ARGS__)
/* True once stages should stop (error limit reached). */
bool ctx_diag_should_stop(const CtxDiag *diag);

/* Joins two spans: from the start of [a] to the end of [b]. */
CtxSpan ctx_span_join(CtxSpan a, CtxSpan b);

/* Exit codes (STYLE.md). Only driver/ uses them. */
enum {
  CTX_EXIT_OK = 0,
  CTX_EXIT_INPUT = 1,
  CTX_EXIT_USAGE = 2,
  CTX_EXIT_RUNTIME = 3,
  CTX_EXIT_ICE = 70
};

#endif
