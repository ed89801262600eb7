/* pipeline.c — the whole compiler pipeline in one place.
 *
 *   text --grammar--> AST --sema--> typed AST --ra--> RA --ilir--> ILIR
 *        --sched--> scheduled ILIR --codegen--> machine code
 *
 * Each step reports through the session's diagnostics; the pipeline stops
 * after any step that reported errors. Today the front end (grammar) is in
 * place; later stages plug in below it.
 */
#include "driver/driver.h"
#include "sched/sched.h"
#ifdef CTX_HAVE_JIT
#include "codegen/codegen.h"
#endif

#include <stdlib.h>
#include <string.h>

void ctx_session_init(CtxSession *s, FILE *out, FILE *err) {
  memset(s, 0, sizeof *s);
  ctx_sources_init(&s->srcs);
  ctx_diag_init(&s->diag, &s->srcs, err);
  s->arena = ctx_arena_new();
  s->out = out;
  s->opts.error_limit = 20;
}

void ctx_session_free(CtxSession *s) {
  ctx_arena_free(s->arena);
  ctx_sources_free(&s->srcs);
}

int ctx_usage_error(const char *verb, const char *usage, const char *fmt, const char *arg) {
  fputs("ctx: error: ", stderr);
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  if (verb)
    fprintf(stderr, "usage: %s\n(see 'ctx %s --help')\n", usage, verb);
  else
    fputs("usage: ctx <verb> [options] FILE...\n(see 'ctx --help')\n", stderr);
  return CTX_EXIT_USAGE;
}

int ctx_session_exit_code(const CtxSession *s) {
  if (s->diag.ice) return CTX_EXIT_ICE;
  return s->diag.errors ? CTX_EXIT_INPUT : CTX_EXIT_OK;
}

const char *ctx_kernel_cache_dir(void) {
  static char dir[4096];
  const char *env = getenv("CTX_CACHE_DIR"), *base = getenv("XDG_CACHE_HOME");
  if (env) {
    if (!*env || strcmp(env, "off") == 0 || strlen(env) >= sizeof dir) return NULL;
    strcpy(dir, env);
  } else if (base && *base && base[0] == '/') {
    if (snprintf(dir, sizeof dir, "%s/ctx/kernels", base) >= (int)sizeof dir) return NULL;
  } else {
    const char *home = getenv("HOME");
    if (!home || home[0] != '/' ||
        snprintf(dir, sizeof dir, "%s/.cache/ctx/kernels", home) >= (int)sizeof dir)
      return NULL;
  }
  return dir;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A .sched file holds schedule blocks only (reported at the first item that
 * is not one: a model given as a schedule would otherwise err on every line). */
static void check_sched_file(CtxSession *s, const AstFile *f) {
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i];
    if (it->kind != AST_SCHEDULE) {
      ctx_diag_error(&s->diag, it->span, "only schedule blocks may appear in a .sched file");
      return;
    }
  }
}

AstFile *ctx_pipeline_parse(CtxSession *s, const char *path) {
  char err[512];
  int id = ctx_sources_load(&s->srcs, path, CTX_MAX_SOURCE_BYTES, err, sizeof err);
  if (!id) {
    CtxSpan none = {0, 0, 0, 0, 0};
    ctx_diag_error(&s->diag, none, "%s", err);
    return NULL;
  }
  if (s->opts.dump == DUMP_TOKENS) {
    CtxBuf b;
    ctx_buf_init(&b);
    ast_dump_tokens(&b, &s->diag, id);
    fputs(ctx_buf_str(&b), s->out);
    ctx_buf_free(&b);
  }
  AstFile *f = ast_parse(s->arena, &s->diag, id);
  if (has_suffix(path, ".sched")) check_sched_file(s, f);
  if (s->opts.dump == DUMP_AST) {
    CtxBuf b;
    ctx_buf_init(&b);
    ast_print(&b, f);
    fputs(ctx_buf_str(&b), s->out);
    ctx_buf_free(&b);
  }
  return f;
}

/* The target's schedule of the -s file, checked against [p]; NULL after
 * errors. */
static const Schedule *load_schedule(CtxSession *s, const RaProgram *p) {
  bool cuda = s->opts.target == CTX_TARGET_CUDA;
  SchedTarget want = cuda ? SCHED_CUDA : SCHED_CPU;
  const char *tname = cuda ? "cuda" : "cpu";
  const char *path = s->opts.schedule;
  int errors = s->diag.errors;
  AstFile *f = ctx_pipeline_parse(s, path);
  if (!f || s->diag.errors > errors) return NULL;
  check_sched_file(s, f);
  const Schedule *cpu = NULL;
  for (int i = 0; i < f->nitems; i++) {
    if (f->items[i]->kind != AST_SCHEDULE) continue;
    Schedule *sch = sched_check(s->arena, &s->diag, f->items[i], p);
    if (!sch || sch->target != want) continue;
    if (cpu)
      ctx_diag_error(&s->diag, f->items[i]->span,
                     "a second %s schedule for model '%s'; -s applies one", tname, p->name);
    cpu = sch;
  }
  if (s->diag.errors > errors) return NULL;
  if (!cpu) {
    CtxSpan file = {f->file, 0, 0, 0, 0}; /* `path: error: ...` */
    ctx_diag_error(&s->diag, file, "no %s schedule for model '%s' (schedule %s for %s "
                   "{ ... })", tname, p->name, p->name, tname);
  }
  return cpu;
}

/* The default plan's kernel for batches of one structure on one thread
 * (`ctx run --batch 1 --threads 1`, whose kernel is compiled for the run): the plan with
 * refactor_recursion when that reads each weight block at one place of the
 * parents only (treefc: W_0 h0 for the nodes that are child 0, W_1 h1 for
 * child 1), so that a level of one or two nodes reads only the halves of
 * the weights its nodes' places need, at no more multiply-adds; else NULL.
 * treefc B=1, 7 alternating rounds on the Intel host (2 MiB L2): 0.894x the
 * time at H=256, 0.872x at H=512 (100 SST trees; 30 trees 0.916x, 0.899x);
 * at B=10 its half-height place tiles made it 1.06-1.08x, and where the
 * refactored products sum several children (treelstm's U_iou (h0 + h1))
 * they multiply the work, so the default leaves it off there. Nor on two
 * threads: the place products share a level by nodes, where the default's
 * level of one or two nodes is shared by outputs, each thread's half of W
 * kept in its own L2 — treefc H=512 B=1 on two threads took 1.52x the
 * default's time with it (H=256 0.96x; 5 alternating rounds). */
static IlirKernel *batch_one_kernel(CtxSession *s, const RaProgram *p, const SchedPlan *def,
                                    SchedPlan *out) {
  if (s->opts.run.batch != 1 || s->opts.run.threads != 1 || s->opts.schedule || p->disabled)
    return NULL;
  CtxDiag quiet;
  ctx_diag_init(&quiet, NULL, NULL);
  SchedPlan plan = *def;
  plan.refactor_recursion = true;
  /* Nor balanced levels: balancing one tree moves its nodes between the
   * place products' groups of 1-3 nodes; treefc H=512 B=1, whose 2 MiB a
   * level fill the L2 (sched_apply.c, balance_threads), took 1.13x the time
   * balanced (5 alternating rounds). */
  plan.balance_levels = false;
  IlirKernel *k = ilir_lower(s->arena, &quiet, p);
  if (!k || !sched_apply(s->arena, &quiet, k, &plan) || quiet.errors || !plan.refactored_by_place)
    return NULL;
  *out = plan;
  return k;
}

IlirKernel *ctx_pipeline_kernel(CtxSession *s, const RaProgram *p) {
  const Schedule *sch = s->opts.schedule ? load_schedule(s, p) : NULL;
  if (s->opts.schedule && !sch) return NULL;
  if (s->opts.target == CTX_TARGET_CUDA) {
    IlirKernel *k = ilir_lower(s->arena, &s->diag, p);
    SchedGpuPlan gpu;
    SchedPlan plan = sched_cuda_plan(&s->diag, sch, p->disabled, &gpu);
    gpu.shared_limit = sched_gpu_shared_limit(s->opts.gpu_arch);
    return k && sched_apply(s->arena, &s->diag, k, &plan) && sched_gpu_apply(s->arena, &s->diag, k, &gpu)
               ? k
               : NULL;
  }
  int vl = 0, regs = 0; /* 0: this host's */
#ifdef CTX_HAVE_JIT
  cg_cpu_vectors(s->opts.build.cpu, &vl, &regs); /* ctx build/check --cpu */
#endif
  SchedPlan plan = sch ? sched_schedule_plan(&s->diag, sch, p->disabled)
                       : sched_default_plan(p->disabled, vl, regs);
  plan.vec_floats = vl, plan.vec_regs = regs, plan.l2_bytes = s->opts.l2;
  /* the batch-one trial lowers its own kernel; the plan's is lowered only
   * when it does not qualify */
  SchedPlan one;
  IlirKernel *k = sch ? NULL : batch_one_kernel(s, p, &plan, &one);
  if (k) {
    plan = one;
  } else if (!(k = ilir_lower(s->arena, &s->diag, p)) ||
             !sched_apply(s->arena, &s->diag, k, &plan)) {
    return NULL;
  }
  if (s->opts.dump == DUMP_SCHEDULE) {
    CtxBuf b;
    ctx_buf_init(&b);
    sched_print(&b, p, &plan);
    fputs(ctx_buf_str(&b), s->out);
    ctx_buf_free(&b);
  }
  return k;
}

/* Checks the model file [f] through sema, RA and ILIR and prints the dump
 * the options ask for; returns its RA (NULL after errors, or for a module). */
static RaProgram *check_model(CtxSession *s, AstFile *f, int errors) {
  int nfiles;
  AstFile **files = ctx_pipeline_imports(s, f, &nfiles);
  SemaModel *m = files ? sema_check(s->arena, &s->diag, files, nfiles, s->opts.defines,
                                    s->opts.ndefines)
                       : NULL;
  if (!m || !m->output_func || s->diag.errors > errors) return NULL; /* or a module */
  RaProgram *p = ra_build(s->arena, &s->diag, m, s->opts.disabled);
  IlirKernel *k = p ? ctx_pipeline_kernel(s, p) : NULL;
  CtxBuf b;
  ctx_buf_init(&b);
  if (p && s->opts.dump == DUMP_RA) ra_print(&b, p);
  if (k && s->opts.dump == DUMP_ILIR) ilir_print(&b, k);
#ifdef CTX_HAVE_JIT
  bool cuda = s->opts.target == CTX_TARGET_CUDA && !s->opts.gpu_on_cpu;
  if (k && s->opts.dump == DUMP_LLVM && !cuda) cg_emit_llvm(&b, k, s->opts.build.cpu, &s->diag);
  if (k && s->opts.dump == DUMP_ASM) cg_emit_asm(&b, k, s->opts.build.cpu, &s->diag);
  if (k && (s->opts.dump == DUMP_PTX || (s->opts.dump == DUMP_LLVM && cuda)))
    cg_emit_ptx(&b, k, s->opts.gpu_arch, s->opts.dump == DUMP_LLVM, &s->diag);
#endif
  fputs(ctx_buf_str(&b), s->out);
  ctx_buf_free(&b);
  return p;
}

/* Checks the schedule blocks of [f] against the model [p]; a cpu schedule is
 * also planned and applied to a kernel of its own, as `-s` does, so that a
 * schedule given either way gets the same errors and warnings. */
static void check_schedules(CtxSession *s, const AstFile *f, const RaProgram *p) {
  for (int i = 0; i < f->nitems; i++) {
    if (f->items[i]->kind != AST_SCHEDULE) continue;
    Schedule *sch = sched_check(s->arena, &s->diag, f->items[i], p);
    if (!sch || sch->target != SCHED_CPU) continue;
    IlirKernel *k = ilir_lower(s->arena, &s->diag, p);
    SchedPlan plan = sched_schedule_plan(&s->diag, sch, p->disabled);
    plan.l2_bytes = s->opts.l2;
    if (k) sched_apply(s->arena, &s->diag, k, &plan);
  }
}

int ctx_pipeline_check(CtxSession *s) {
  RaProgram *model = NULL;
  CtxVec scheds = {0}; /* files holding schedules, checked against the model */
  for (int i = 0; i < s->opts.nfiles && !ctx_diag_should_stop(&s->diag); i++) {
    int errors = s->diag.errors;
    AstFile *f = ctx_pipeline_parse(s, s->opts.files[i]);
    bool dump_front = s->opts.dump == DUMP_TOKENS || s->opts.dump == DUMP_AST;
    if (!f || s->diag.errors > errors || s->opts.syntax_only || dump_front) continue;
    ctx_vec_push(s->arena, &scheds, f);
    if (has_suffix(s->opts.files[i], ".sched")) continue;
    RaProgram *p = check_model(s, f, errors);
    if (p) model = p;
  }
  for (int i = 0; model && i < scheds.len; i++) check_schedules(s, scheds.items[i], model);
  return ctx_session_exit_code(s);
}

/* parse -> sema -> RA for the model of ctx run. */
RaProgram *ctx_pipeline_ra(CtxSession *s, const char *path) {
  AstFile *f = ctx_pipeline_parse(s, path);
  if (!f || s->diag.errors) return NULL;
  int nfiles;
  AstFile **files = ctx_pipeline_imports(s, f, &nfiles);
  if (!files) return NULL;
  SemaModel *m = sema_check(s->arena, &s->diag, files, nfiles, s->opts.defines,
                            s->opts.ndefines);
  if (!m || !m->output_func || s->diag.errors) { /* a module has no output */
    if (!s->diag.errors) {
      CtxSpan file = {f->file, 0, 0, 0, 0};
      ctx_diag_error(&s->diag, file, "no model to run");
    }
    return NULL;
  }
  RaProgram *p = ra_build(s->arena, &s->diag, m, s->opts.disabled);
  if (!p || s->diag.errors) return NULL; /* ra_build verifies what it built */
  return p;
}
