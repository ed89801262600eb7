/* driver.h — the `ctx` program: command line, sessions, and the pipeline.
 *
 * The driver is the only part of ctx that prints to the terminal on its own
 * account or chooses exit codes (support.h lists them). A session owns the
 * sources, the diagnostics sink and the arenas of one compiler invocation;
 * pipeline.c runs the stages in order in one function and stops after any
 * stage that reported errors.
 */
#ifndef CTX_DRIVER_H
#define CTX_DRIVER_H

#include "sema/sema.h"

typedef enum { DUMP_NONE, DUMP_TOKENS, DUMP_AST } CtxDump;

typedef struct {
  CtxDump dump;
  int error_limit;
  const char **files;
  int nfiles;
  bool syntax_only;     /* --syntax-only: parse, do not check */
  SemaDefine *defines;  /* -D NAME=VALUE */
  int ndefines;
} CtxOptions;

typedef struct {
  CtxSources srcs;
  CtxDiag diag;
  CtxArena *arena; /* front-end lifetime: ASTs */
  CtxOptions opts;
  FILE *out; /* dumps and results */
} CtxSession;

void ctx_session_init(CtxSession *s, FILE *out, FILE *err);
void ctx_session_free(CtxSession *s);

/* Loads and parses [path]; dumps it when the options say so. Returns the
 * AST, or NULL when the file could not be read. Errors go to the session's
 * diagnostics. */
AstFile *ctx_pipeline_parse(CtxSession *s, const char *path);

/* Runs the front end over every file of the options (ctx check). Returns an
 * exit code. */
int ctx_pipeline_check(CtxSession *s);

/* The exit code the session's diagnostics call for. */
int ctx_session_exit_code(const CtxSession *s);

/* Largest source file ctx reads. */
#define CTX_MAX_SOURCE_BYTES ((size_t)256 << 20)

#endif
