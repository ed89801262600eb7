/* repl_model.c — ctx repl's model: its text (a :load file and the items
 * typed at the prompt) and the builds made from it (repl.h).
 *
 *   file text + typed sources --repl_session_open--> one CtxSession, every
 *   source parsed, items assembled (a typed item replaces the file's or an
 *   earlier typed item of the same key) --sema, RA--> ReplBuild
 *   --repl_build_jit: the schedule (an inline block, -s / :schedule FILE or
 *   the default), the JIT (compiled for latency: repl_jit_options; kept
 *   in the kernel cache, as ctx run's), the weights--> a loaded CtxrtModel
 *
 * A build is remade only after the model, the dims (:set) or the schedule
 * changed (gen_no); everything it holds goes with it.
 */
#include "driver/repl.h"
#include "sched/sched.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The JIT of the REPL: O3 as ctx run, but without register tiles (the
 * session turns RA_OPT_REGISTER_TILE off: tiles make the IR several times
 * larger) and with fast instruction selection. It compiles in about a
 * quarter of ctx run's time and the kernel runs about 2.5 times slower
 * (bench/repl/README.md); CTX_REPL_JIT=full compiles as ctx run does. */
CgJitOptions repl_jit_options(const Repl *R) {
  CgJitOptions o = {.fast_isel = !R->full_jit};
  return o;
}

void repl_error(Repl *R, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(R->out);
  fputs("error: ", R->err);
  vfprintf(R->err, fmt, ap);
  fputc('\n', R->err);
  va_end(ap);
}

double repl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the model's text --------------------------------------------------------- */

const char *repl_item_key(CtxArena *a, const AstItem *it) {
  static const char *const kinds[] = {
      [AST_MODEL] = "model", [AST_DIM] = "dim",  [AST_INPUT] = "input",
      [AST_PARAM] = "param", [AST_USE] = "use",  [AST_REC] = "rec",
      [AST_DEF] = "def",     [AST_OUTPUT] = "output", [AST_SCHEDULE] = "schedule"};
  switch (it->kind) {
  case AST_MODEL:
  case AST_OUTPUT: return kinds[it->kind];
  case AST_SCHEDULE:
    return ctx_arena_printf(a, "schedule %s for %s", it->name.id,
                            it->target.id ? it->target.id : "cpu");
  default: return ctx_arena_printf(a, "%s %s", kinds[it->kind], it->name.id);
  }
}

static void source_free(ReplSource *src) {
  free(src->name);
  free(src->text);
  for (int i = 0; i < src->nkeys; i++) free(src->keys[i]);
  free(src->keys);
}

void repl_model_changed(Repl *R) { R->gen_no++; }

void repl_model_free(Repl *R) {
  repl_build_free(R->build);
  R->build = NULL;
  for (int i = 0; i < R->ntyped; i++) source_free(&R->typed[i]);
  free(R->typed);
  R->typed = NULL;
  R->ntyped = 0;
  free(R->model_path);
  free(R->model_text);
  R->model_path = R->model_text = NULL;
}

static bool source_has_key(const ReplSource *src, const char *key) {
  for (int i = 0; i < src->nkeys; i++)
    if (strcmp(src->keys[i], key) == 0) return true;
  return false;
}

/* Is the typed item [key] of typed source [at] replaced by a later one? */
static bool replaced_later(const Repl *R, int at, const char *key) {
  for (int i = at + 1; i < R->ntyped; i++)
    if (source_has_key(&R->typed[i], key)) return true;
  return false;
}

/* Drops typed sources all of whose items later ones replaced, so that a long
 * session of redefinitions keeps only the live text. */
static void prune_typed(Repl *R) {
  int n = 0;
  for (int i = 0; i < R->ntyped; i++) {
    bool live = false;
    for (int k = 0; k < R->typed[i].nkeys && !live; k++)
      live = !replaced_later(R, i, R->typed[i].keys[k]);
    if (live) R->typed[n++] = R->typed[i];
    else source_free(&R->typed[i]);
  }
  R->ntyped = n;
}

static char *read_text(Repl *R, const char *path) {
  CtxSources srcs;
  ctx_sources_init(&srcs);
  char err[512];
  int id = ctx_sources_load(&srcs, path, CTX_MAX_SOURCE_BYTES, err, sizeof err);
  char *text = NULL;
  if (id) {
    const CtxSource *src = ctx_sources_get(&srcs, id);
    text = ctx_xmalloc(src->len + 1);
    memcpy(text, src->text, src->len + 1);
  } else {
    repl_error(R, "%s", err);
  }
  ctx_sources_free(&srcs);
  return text;
}

bool repl_load(Repl *R, const char *path) {
  char *text = read_text(R, path);
  if (!text) return false;
  repl_model_free(R);
  R->model_path = ctx_xmalloc(strlen(path) + 1);
  strcpy(R->model_path, path);
  R->model_text = text;
  repl_model_changed(R);
  ReplBuild *b = repl_build(R, false);
  if (b && b->m)
    fprintf(R->out, "loaded %s: model %s, %d params, %d functions\n", path,
            b->m->name ? b->m->name : "(none)", b->m->nparams, b->m->nfuncs);
  return b != NULL;
}

bool repl_reload(Repl *R) {
  if (!R->model_path) {
    repl_error(R, "no model file to reload (:load FILE first)");
    return false;
  }
  char *text = read_text(R, R->model_path);
  if (!text) return false;
  free(R->model_text);
  R->model_text = text;
  repl_model_changed(R);
  ReplBuild *b = repl_build(R, false);
  if (b) fprintf(R->out, "reloaded %s\n", R->model_path);
  return b != NULL;
}

/* Was an item of [key] typed before? */
static bool had_key(const Repl *R, const char *key) {
  for (int i = 0; i < R->ntyped; i++)
    if (source_has_key(&R->typed[i], key)) return true;
  return false;
}

void repl_add_items(Repl *R, const char *text) {
  ReplBuild probe;
  memset(&probe, 0, sizeof probe);
  ctx_session_init(&probe.s, R->out, R->err);
  char *name = ctx_arena_printf(probe.s.arena, "<repl:%d>", R->input_no);
  int id = ctx_sources_add(&probe.s.srcs, name, text, strlen(text));
  AstFile *f = ast_parse(probe.s.arena, &probe.s.diag, id);
  if (probe.s.diag.errors || f->nitems == 0) {
    ctx_session_free(&probe.s);
    return;
  }
  /* the keys the file had, for "defined" / "redefined" */
  CtxVec file_keys = {0};
  if (R->model_text) {
    int fid = ctx_sources_add(&probe.s.srcs, R->model_path, R->model_text,
                              strlen(R->model_text));
    CtxDiag quiet;
    ctx_diag_init(&quiet, &probe.s.srcs, NULL);
    AstFile *mf = ast_parse(probe.s.arena, &quiet, fid);
    for (int i = 0; i < mf->nitems; i++)
      ctx_vec_push(probe.s.arena, &file_keys, (void *)repl_item_key(probe.s.arena, mf->items[i]));
  }
  ReplSource src = {ctx_xmalloc(strlen(name) + 1), ctx_xmalloc(strlen(text) + 1),
                    ctx_xmalloc(sizeof(char *) * (size_t)f->nitems), f->nitems};
  strcpy(src.name, name);
  strcpy(src.text, text);
  for (int i = 0; i < f->nitems; i++) {
    const char *key = repl_item_key(probe.s.arena, f->items[i]);
    bool old = had_key(R, key);
    for (int k = 0; k < file_keys.len && !old; k++) old = strcmp(file_keys.items[k], key) == 0;
    fprintf(R->out, "%s %s\n", old ? "redefined" : "defined", key);
    src.keys[i] = ctx_xmalloc(strlen(key) + 1);
    strcpy(src.keys[i], key);
  }
  ctx_session_free(&probe.s);
  R->typed = ctx_xrealloc(R->typed, sizeof *R->typed * (size_t)(R->ntyped + 1));
  R->typed[R->ntyped++] = src;
  prune_typed(R);
  repl_model_changed(R);
  /* a complete model is checked at once: its errors show now, not at :run */
  ReplBuild *b = repl_build(R, false);
  (void)b;
}

/* ---- sessions and builds --------------------------------------------------------- */

/* Appends the items of [f] that no typed item replaces (typed source [at] and
 * later; -1: the file's, replaced by any typed item). */
static void add_live(Repl *R, CtxArena *a, CtxVec *items, const AstFile *f, int at) {
  for (int i = 0; i < f->nitems; i++) {
    const char *key = repl_item_key(a, f->items[i]);
    if (!replaced_later(R, at, key)) ctx_vec_push(a, items, f->items[i]);
  }
}

bool repl_session_open(Repl *R, ReplBuild *b) {
  memset(b, 0, sizeof *b);
  ctx_session_init(&b->s, R->out, R->err);
  b->s.opts = R->opts;
  b->s.opts.defines = R->defines;
  b->s.opts.ndefines = R->ndefines;
  b->s.opts.schedule = R->sched_path;
  CtxArena *a = b->s.arena;
  CtxVec items = {0};
  b->file = CTX_NEW(a, AstFile);
  if (R->model_text) {
    b->model_src = ctx_sources_add(&b->s.srcs, R->model_path, R->model_text,
                                   strlen(R->model_text));
    add_live(R, a, &items, ast_parse(a, &b->s.diag, b->model_src), -1);
    b->file->file = b->model_src;
  }
  for (int i = 0; i < R->ntyped; i++) {
    int id = ctx_sources_add(&b->s.srcs, R->typed[i].name, R->typed[i].text,
                             strlen(R->typed[i].text));
    if (!b->file->file) b->file->file = id;
    add_live(R, a, &items, ast_parse(a, &b->s.diag, id), i);
  }
  b->file->items = (AstItem **)items.items;
  b->file->nitems = items.len;
  b->parsed = b->s.diag.errors == 0;
  return b->parsed;
}

void repl_session_close(ReplBuild *b) {
#ifdef CTX_HAVE_JIT
  ctxrt_model_destroy(b->model);
  ctx_model_desc_free(&b->desc);
  cg_jit_free(b->jit);
#endif
  ctx_session_free(&b->s);
}

void repl_build_free(ReplBuild *b) {
  if (!b) return;
  repl_session_close(b);
  free(b);
}

/* Does the model have what a run needs: a structure input, a rec and an
 * output? */
static bool complete(const AstFile *f) {
  bool structure = false, rec = false, output = false;
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i];
    if (it->kind == AST_INPUT && it->type && it->type->kind >= AST_TYPE_TREE &&
        it->type->kind <= AST_TYPE_SEQUENCE)
      structure = true;
    rec |= it->kind == AST_REC;
    output |= it->kind == AST_OUTPUT;
  }
  return structure && rec && output;
}

/* Sema over the assembled file (quietly for an incomplete model, which is
 * checked only for :params and completion), then RA when complete. */
static bool check_build(ReplBuild *b) {
  CtxSession *s = &b->s;
  bool full = complete(b->file);
  CtxDiag quiet;
  ctx_diag_init(&quiet, &s->srcs, NULL);
  CtxDiag *diag = full ? &s->diag : &quiet;
  int nfiles;
  AstFile **files = ctx_pipeline_imports(s, b->file, &nfiles);
  if (!files) return false;
  b->m = sema_check(s->arena, diag, files, nfiles, s->opts.defines, s->opts.ndefines);
  if (!full) return true;
  if (!b->m || s->diag.errors) {
    b->m = NULL;
    return false;
  }
  b->p = ra_build(s->arena, &s->diag, b->m, s->opts.disabled);
  return b->p && !s->diag.errors;
}

ReplBuild *repl_build(Repl *R, bool need_ra) {
  ReplBuild *b = R->build;
  if (b && R->build_gen == R->gen_no && (b->p || !need_ra)) return b;
  repl_build_free(b);
  R->build = NULL;
  if (!R->model_text && R->ntyped == 0) {
    if (need_ra) repl_error(R, "no model: :load FILE, or type its items");
    return NULL;
  }
  b = ctx_xmalloc(sizeof *b);
  bool ok = repl_session_open(R, b) && check_build(b);
  if (ok && need_ra && !b->p)
    repl_error(R, "the model is incomplete: it needs a structure input (input t : tree(...)), "
               "a rec function and an output");
  if (!ok || (need_ra && !b->p)) {
    repl_build_free(b);
    return NULL;
  }
  R->build = b;
  R->build_gen = R->gen_no;
  return b;
}

/* The cpu schedule block of the model typed or loaded inline (the last one),
 * or NULL. */
static const AstItem *inline_schedule(const ReplBuild *b) {
  const AstItem *found = NULL;
  for (int i = 0; i < b->file->nitems; i++) {
    const AstItem *it = b->file->items[i];
    if (it->kind == AST_SCHEDULE && (!it->target.id || strcmp(it->target.id, "cpu") == 0))
      found = it;
  }
  return found;
}

/* RA -> ILIR under an inline schedule block, else as ctx run does (-s FILE or
 * the default schedule). */
static IlirKernel *build_kernel(ReplBuild *b) {
  const AstItem *it = inline_schedule(b);
  if (!it) return ctx_pipeline_kernel(&b->s, b->p);
  CtxSession *s = &b->s;
  Schedule *sch = sched_check(s->arena, &s->diag, it, b->p);
  if (!sch || s->diag.errors) return NULL;
  IlirKernel *k = ilir_lower(s->arena, &s->diag, b->p);
  SchedPlan plan = sched_schedule_plan(&s->diag, sch, b->p->disabled);
  return k && !s->diag.errors && sched_apply(s->arena, &s->diag, k, &plan) ? k : NULL;
}

ReplBuild *repl_build_jit(Repl *R) {
#ifdef CTX_HAVE_JIT
  ReplBuild *b = repl_build(R, true);
  if (!b) return NULL;
  if (!b->jit) {
    double t0 = repl_now_ms();
    if (!b->k) b->k = build_kernel(b);
    CgJitOptions o = repl_jit_options(R);
    o.cache_dir = ctx_kernel_cache_dir(); /* models only: not every expression */
    if (b->k) b->jit = cg_jit_compile_with(b->k, &o, &b->s.diag);
    if (!b->jit) return NULL;
    b->compile_ms = repl_now_ms() - t0;
  }
  CtxrtParam *ps = ctx_model_params(b->p);
  CtxrtWeights *w = repl_weights(R, ps, b->p->nparams);
  free(ps);
  if (!w) return NULL;
  if (!b->model) {
    CtxrtError err;
    ctx_model_desc_init(&b->desc, b->p, b->k, cg_jit_kernel(b->jit));
    if (ctxrt_model_create(&b->desc.desc, w, &b->model, &err) ||
        ctxrt_model_set_threads(b->model, R->threads, &err)) {
      repl_error(R, "%s", err.msg);
      ctxrt_model_destroy(b->model);
      b->model = NULL;
      ctx_model_desc_free(&b->desc);
      return NULL;
    }
  }
  return b;
#else
  repl_error(R, "ctx was built without LLVM: use :interp");
  (void)R;
  return NULL;
#endif
}

/* ---- showing the model ------------------------------------------------------------- */

void repl_show(Repl *R) {
  ReplBuild tmp, *b = &tmp;
  if (!repl_session_open(R, b)) {
    repl_session_close(b);
    return;
  }
  CtxBuf out;
  ctx_buf_init(&out);
  ast_print(&out, b->file);
  fputs(ctx_buf_str(&out), R->out);
  if (b->file->nitems == 0) fputs("(the model is empty)\n", R->out);
  ctx_buf_free(&out);
  repl_session_close(b);
}

bool repl_write_model(Repl *R, const char *path) {
  ReplBuild tmp, *b = &tmp;
  bool ok = repl_session_open(R, b);
  if (ok) {
    CtxBuf out;
    ctx_buf_init(&out);
    ast_print(&out, b->file);
    FILE *f = fopen(path, "w");
    ok = f && fputs(ctx_buf_str(&out), f) >= 0;
    if (f && fclose(f)) ok = false;
    if (!ok) repl_error(R, "cannot write '%s'", path);
    ctx_buf_free(&out);
  }
  repl_session_close(b);
  return ok;
}

void repl_params(Repl *R) {
  bool any = R->model_text || R->ntyped;
  ReplBuild *b = any ? repl_build(R, false) : NULL;
  if (any && (!b || !b->m)) return; /* errors reported */
  if (!any && !R->nvars) fputs("(no model, no values)\n", R->out);
  CtxBuf t;
  ctx_buf_init(&t);
  for (int i = 0; b && i < b->m->ndims; i++)
    fprintf(R->out, "dim %s = %ld\n", b->m->dims[i].name, b->m->dims[i].value);
  for (int i = 0; b && i < b->m->nparams; i++) {
    ctx_buf_clear(&t);
    sema_print_type(&t, b->m->params[i].type);
    fprintf(R->out, "param %s : %s\n", b->m->params[i].name, ctx_buf_str(&t));
  }
  for (int i = 0; i < R->nvars; i++) {
    fprintf(R->out, "let %s : f32", R->vars[i].name);
    for (int d = 0; d < R->vars[i].rank; d++)
      fprintf(R->out, "%s%ld", d ? ", " : "[", R->vars[i].dims[d]);
    fputs(R->vars[i].rank ? "]\n" : "\n", R->out);
  }
  ctx_buf_free(&t);
}

void repl_dump(Repl *R, const char *stage) {
  CtxBuf out;
  ctx_buf_init(&out);
  if (strcmp(stage, "tokens") == 0 || strcmp(stage, "ast") == 0) {
    ReplBuild tmp, *b = &tmp;
    repl_session_open(R, b);
    for (int id = 1; stage[0] == 't' && id <= b->s.srcs.len - 1; id++) {
      ctx_buf_printf(&out, "%s:\n", ctx_sources_get(&b->s.srcs, id)->name);
      ast_dump_tokens(&out, &b->s.diag, id);
    }
    if (stage[0] == 'a') ast_print(&out, b->file);
    repl_session_close(b);
  } else if (strcmp(stage, "ra") == 0) {
    ReplBuild *b = repl_build(R, true);
    if (b) ra_print(&out, b->p);
  } else if (strcmp(stage, "ilir") == 0 || strcmp(stage, "llvm") == 0 ||
             strcmp(stage, "asm") == 0) {
    ReplBuild *b = repl_build(R, true);
    if (b && !b->k) b->k = build_kernel(b);
    if (b && b->k && stage[0] == 'i') ilir_print(&out, b->k);
#ifdef CTX_HAVE_JIT
    if (b && b->k && stage[0] == 'l') cg_emit_llvm(&out, b->k, NULL, &b->s.diag);
    if (b && b->k && stage[0] == 'a') cg_emit_asm(&out, b->k, NULL, &b->s.diag);
#else
    if (stage[0] != 'i') repl_error(R, "ctx was built without LLVM");
#endif
  } else {
    repl_error(R, "unknown stage '%s' for :dump (stages: tokens, ast, ra, ilir, llvm, asm)",
               stage);
  }
  fputs(ctx_buf_str(&out), R->out);
  ctx_buf_free(&out);
}

void repl_model_names(Repl *R, CtxVec *out, CtxArena *a) {
  ReplBuild *b = R->build;
  if (b && b->m) {
    for (int i = 0; i < b->m->ndims; i++) ctx_vec_push(a, out, (void *)b->m->dims[i].name);
    for (int i = 0; i < b->m->nparams; i++) ctx_vec_push(a, out, (void *)b->m->params[i].name);
    for (int i = 0; i < b->m->nfuncs; i++)
      ctx_vec_push(a, out, (void *)b->m->funcs[i].item->name.id);
  }
  for (int i = 0; i < R->nvars; i++) ctx_vec_push(a, out, R->vars[i].name);
}
