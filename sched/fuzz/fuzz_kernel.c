/* fuzz_kernel.c — libFuzzer target for the middle end through scheduling:
 * parser, sema, RA, ILIR lowering, the default schedule's passes (or those
 * of the model file's first cpu schedule block that checks), the simplifier
 * and the verifier with bounds inference.
 *
 * The first byte chooses which optimizations are off (RA_OPT_* bits), the
 * rest is the model: any byte string must go through without a crash, a
 * hang, a sanitizer report or an internal compiler error — a valid model
 * (and schedule) must always yield a kernel the verifier accepts, or a
 * schedule error.
 */
#include "sched/sched.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* --dump=schedule's promise: the schedule a kernel was compiled with, printed,
 * checks and plans again without an error. */
static void reprint(CtxArena *arena, CtxSources *srcs, const RaProgram *p, const SchedPlan *plan) {
  CtxBuf b;
  ctx_buf_init(&b);
  sched_print(&b, p, plan);
  CtxDiag diag;
  ctx_diag_init(&diag, srcs, NULL);
  int id = ctx_sources_add(srcs, "dump.sched", ctx_buf_str(&b), strlen(ctx_buf_str(&b)));
  AstFile *f = ast_parse(arena, &diag, id);
  const Schedule *again = NULL;
  for (int i = 0; diag.errors == 0 && !again && i < f->nitems; i++)
    if (f->items[i]->kind == AST_SCHEDULE) again = sched_check(arena, &diag, f->items[i], p);
  if (again) sched_schedule_plan(&diag, again, 0);
  if (!again || diag.errors) abort();
  ctx_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size == 0) return 0;
  unsigned disabled = data[0];
  CtxSources srcs;
  ctx_sources_init(&srcs);
  CtxDiag diag;
  ctx_diag_init(&diag, &srcs, NULL);
  CtxArena *arena = ctx_arena_new();
  int id = ctx_sources_add(&srcs, "fuzz.ctx", (const char *)data + 1, size - 1);
  AstFile *f = ast_parse(arena, &diag, id);
  SemaModel *m = diag.errors == 0 ? sema_check(arena, &diag, &f, 1, NULL, 0) : NULL;
  RaProgram *p = m && m->output_func && diag.errors == 0 ? ra_build(arena, &diag, m, disabled)
                                                        : NULL;
  IlirKernel *k = p && diag.errors == 0 ? ilir_lower(arena, &diag, p) : NULL;
  const Schedule *sch = NULL;
  for (int i = 0; k && !sch && i < f->nitems; i++)
    if (f->items[i]->kind == AST_SCHEDULE) {
      sch = sched_check(arena, &diag, f->items[i], p);
      if (sch && sch->target != SCHED_CPU) sch = NULL;
    }
  if (k) {
    SchedPlan plan = sch ? sched_schedule_plan(&diag, sch, disabled) : sched_default_plan(disabled, 0, 0);
    if (sched_apply(arena, &diag, k, &plan) && diag.errors == 0) reprint(arena, &srcs, p, &plan);
  }
  if (diag.ice) abort(); /* a valid model the compiler could not compile */
  ctx_arena_free(arena);
  ctx_sources_free(&srcs);
  return 0;
}
