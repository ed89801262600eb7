/* fuzz_model.c — libFuzzer target for the front and middle: parser, sema, RA.
 *
 * Any byte string must go through parsing, semantic checking and, for a
 * valid model, building RA, without a crash, a hang or a sanitizer report.
 */
#include "ra/ra.h"


int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  CtxDiag diag;
  ctx_diag_init(&diag, &srcs, NULL);
  CtxArena *arena = ctx_arena_new();
  int id = ctx_sources_add(&srcs, "fuzz.ctx", (const char *)data, size);
  AstFile *f = ast_parse(arena, &diag, id);
  SemaModel *m = diag.errors == 0 ? sema_check(arena, &diag, &f, 1, NULL, 0) : NULL;
  if (m && m->output_func && diag.errors == 0) ra_build(arena, &diag, m, 0);
  ctx_arena_free(arena);
  ctx_sources_free(&srcs);
  return 0;
}
