/* fuzz_parser.c — libFuzzer target for the front end.
 *
 * Any byte string must parse without a crash, a hang or a sanitizer report.
 * When it parses without errors, its printed form must parse without errors
 * and print to the same text (the printer's fixed-point property).
 */
#include "grammar/grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Parses [text] and returns its printed form (malloc'd), or NULL on errors. */
static char *parse_print(const char *text, size_t len) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  CtxDiag diag;
  ctx_diag_init(&diag, &srcs, NULL);
  diag.error_limit = 0;
  CtxArena *arena = ctx_arena_new();
  int id = ctx_sources_add(&srcs, "fuzz.ctx", text, len);
  AstFile *f = ast_parse(arena, &diag, id);
  char *out = NULL;
  if (diag.errors == 0) {
    CtxBuf b;
    ctx_buf_init(&b);
    ast_print(&b, f);
    out = strdup(ctx_buf_str(&b));
    ctx_buf_free(&b);
  }
  ctx_arena_free(arena);
  ctx_sources_free(&srcs);
  return out;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char *first = parse_print((const char *)data, size);
  if (!first) return 0;
  char *second = parse_print(first, strlen(first));
  if (!second || strcmp(first, second) != 0) {
    fprintf(stderr, "printer is not a fixed point:\n--- first\n%s--- second\n%s", first,
            second ? second : "(errors)\n");
    abort();
  }
  free(first);
  free(second);
  return 0;
}
