/* driver_params.c — `ctx params`: a model's parameters, and the -D values that
 * make a weights file fit them.
 *
 *   ctx params MODEL.ctx [-D NAME=VALUE]... [--json]
 *       every parameter: its name, its shape with the dims resolved, and its
 *       type as the model writes it (f32[3*H, H]); the dims and their values
 *   ctx params MODEL.ctx --template W.safetensors [--seed N]
 *       the seeded default weights (those `ctx run` uses without --weights)
 *       written as a file: a place to start from when filling in real ones
 *
 * Both run the front end only (parse, imports, sema): a model whose RA is not
 * built yet still lists its parameters. The parameters come in declaration
 * order, which is RA's and the default initialiser's.
 *
 * ctx_params_fit serves `ctx run --weights`: given a file whose shapes do not
 * fit, it looks for -D values under which they do. It evaluates the model's
 * dim and shape expressions itself (+ - * / on integers, as sema does), so it
 * can try values without running sema again: an axis that depends on one
 * unsolved dim is solved by bisection (shape expressions grow with their dims),
 * and the result is only offered when every shape of the file then fits.
 */
#include "driver/driver.h"
#include "driver/driver_jit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int params_usage(const char *fmt, const char *arg) {
  return ctx_usage_error("params", CTX_PARAMS_USAGE, fmt, arg);
}

int ctx_params_option(int argc, char **argv, int *i, CtxOptions *o) {
  const char *a = argv[*i];
  if (strcmp(a, "--json") == 0) {
    o->params.json = true;
    return CTX_OPT_TAKEN;
  }
  bool is_template = strncmp(a, "--template", 10) == 0 && (a[10] == 0 || a[10] == '=');
  bool is_seed = strncmp(a, "--seed", 6) == 0 && (a[6] == 0 || a[6] == '=');
  if (!is_template && !is_seed) return CTX_OPT_NOT_MINE;
  const char *eq = strchr(a, '=');
  const char *val = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : "";
  if (*val == 0) {
    params_usage("option '%s' needs a value", is_template ? "--template" : "--seed");
    return CTX_OPT_BAD;
  }
  if (is_template) {
    o->params.template_path = val;
    return CTX_OPT_TAKEN;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(val, &end, 10);
  if (*val < '0' || *val > '9' || *end || errno == ERANGE) {
    params_usage("option '--seed' needs a non-negative integer, found '%s'", val);
    return CTX_OPT_BAD;
  }
  o->params.seed = (uint64_t)v;
  o->params.seed_given = true;
  return CTX_OPT_TAKEN;
}

/* ---- evaluating dims and shapes ------------------------------------------ */

/* The model file's dims, with values that may be overridden (the -D of the
 * command line, then the values being tried). */
typedef struct {
  const AstItem **dims; /* the AST_DIM items, in order */
  long *value;          /* their values under the overrides */
  long *over;           /* the override of each, or 0 */
  int n;
} DimEnv;

static int dim_index(const DimEnv *env, const char *name) {
  for (int d = 0; d < env->n; d++)
    if (strcmp(env->dims[d]->name.id, name) == 0) return d;
  return -1;
}

/* [e] as an integer of dims [0, upto) of [env]; false when it is not one
 * (a name that is no such dim, a fraction, division by zero, overflow). */
static bool eval_dim_expr(const AstExpr *e, const DimEnv *env, int upto, long *out) {
  long a, b;
  switch (e->kind) {
  case AST_NUMBER:
    if (!e->u.num.is_int || e->u.num.value > 1e15) return false;
    *out = (long)e->u.num.value;
    return true;
  case AST_NAME: {
    int d = dim_index(env, e->u.name.id);
    if (d < 0 || d >= upto) return false;
    *out = env->value[d];
    return true;
  }
  case AST_UNARY:
    if (e->u.unary.op != AST_OP_NEG || !eval_dim_expr(e->u.unary.operand, env, upto, &a))
      return false;
    *out = -a;
    return true;
  case AST_BINARY:
    if (!eval_dim_expr(e->u.binary.lhs, env, upto, &a) ||
        !eval_dim_expr(e->u.binary.rhs, env, upto, &b))
      return false;
    switch (e->u.binary.op) {
    case AST_OP_ADD:
      return !__builtin_add_overflow(a, b, out);
    case AST_OP_SUB:
      return !__builtin_sub_overflow(a, b, out);
    case AST_OP_MUL:
      return !__builtin_mul_overflow(a, b, out);
    case AST_OP_DIV:
      if (b == 0) return false;
      *out = a / b;
      return true;
    default:
      return false;
    }
  default:
    return false;
  }
}

/* Every dim's value under the overrides; false when one has none. */
static bool env_compute(DimEnv *env) {
  for (int d = 0; d < env->n; d++) {
    if (env->over[d])
      env->value[d] = env->over[d];
    else if (!eval_dim_expr(env->dims[d]->value, env, d, &env->value[d]))
      return false;
  }
  return true;
}

/* Whether [e] depends on dim [d] (through the dims it names, unless overridden). */
static bool depends_on(const AstExpr *e, const DimEnv *env, int d) {
  switch (e->kind) {
  case AST_NAME: {
    int k = dim_index(env, e->u.name.id);
    if (k < d)
      return false; /* not a dim, or one before d: a dim sees only earlier ones */
    if (k == d) return true;
    return !env->over[k] && depends_on(env->dims[k]->value, env, d);
  }
  case AST_UNARY:
    return depends_on(e->u.unary.operand, env, d);
  case AST_BINARY:
    return depends_on(e->u.binary.lhs, env, d) || depends_on(e->u.binary.rhs, env, d);
  default:
    return false;
  }
}

/* The value of dim [d] that gives [e] the value [want] (the others as they
 * are), by bisection over [1, 2^31); 0 when there is none. */
static long solve_dim(DimEnv *env, int d, const AstExpr *e, long want) {
  long keep = env->over[d], lo = 1, hi = (long)1 << 31, v;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    env->over[d] = mid;
    if (env_compute(env) && eval_dim_expr(e, env, env->n, &v) && v >= want)
      hi = mid;
    else
      lo = mid + 1;
  }
  env->over[d] = lo;
  bool ok = env_compute(env) && eval_dim_expr(e, env, env->n, &v) && v == want;
  env->over[d] = keep;
  env_compute(env);
  return ok ? lo : 0;
}

/* ---- fitting a weights file ----------------------------------------------- */

typedef struct {
  DimEnv env;
  const AstItem **params;     /* the AST_PARAM items, in order */
  const CtxrtTensor **tensor; /* the file's tensor for each, or NULL */
  int nparams;
} Fit;

/* Whether every tensor of the fit has the shape its parameter has under the
 * environment (a tensor of another rank never does). */
static bool fits(const Fit *f) {
  for (int i = 0; i < f->nparams; i++) {
    const AstType *t = f->params[i]->type;
    const CtxrtTensor *x = f->tensor[i];
    if (!x || !t) continue;
    if (x->ndim != t->ndims) return false; /* no dims change a rank */
    for (int k = 0; k < t->ndims; k++) {
      long v;
      if (eval_dim_expr(t->dims[k], &f->env, f->env.n, &v) && v == x->shape[k]) continue;
      return false;
    }
  }
  return true;
}

/* Solves axis [k] of parameter [i] (which differs from the file) for one of
 * the unsolved dims it depends on: with [single], only when there is exactly
 * one; else the earliest that gives it the file's length (a derived dim
 * `G = 3*H` is then solved through H). */
static bool solve_axis(Fit *f, bool *solved, int i, int k, bool single) {
  const AstExpr *e = f->params[i]->type->dims[k];
  int deps[64], ndeps = 0;
  for (int d = 0; d < f->env.n && ndeps < 64; d++)
    if (!solved[d] && depends_on(e, &f->env, d)) deps[ndeps++] = d;
  if (ndeps == 0 || (single && ndeps != 1)) return false;
  for (int j = 0; j < ndeps; j++) {
    long value = solve_dim(&f->env, deps[j], e, (long)f->tensor[i]->shape[k]);
    if (!value) continue;
    f->env.over[deps[j]] = value;
    solved[deps[j]] = true;
    env_compute(&f->env);
    return true;
  }
  return false;
}

/* One round of solving: an axis that differs from the file fixes a dim,
 * axes that depend on a single unsolved dim first. False when no axis could
 * be solved. */
static bool solve_round(Fit *f, bool *solved) {
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < f->nparams; i++) {
      const AstType *t = f->params[i]->type;
      const CtxrtTensor *x = f->tensor[i];
      if (!x || !t || x->ndim != t->ndims) continue;
      for (int k = 0; k < t->ndims; k++) {
        long v;
        if (eval_dim_expr(t->dims[k], &f->env, f->env.n, &v) && v == x->shape[k])
          continue;
        if (solve_axis(f, solved, i, k, pass == 0)) return true;
      }
    }
  return false;
}

/* Fills [f] from the model file [model] and the file's tensors paired with
 * the parameters [ps] ([match], ctxrt_weights_match). */
static bool fit_init(Fit *f, CtxSession *s, const AstFile *model, const CtxrtWeights *w,
                     const CtxrtParam *ps, int nps, const int32_t *match) {
  int n = model->nitems;
  f->env.dims = ctx_xmalloc(((size_t)n + 1) * sizeof *f->env.dims);
  f->env.value = calloc((size_t)n + 1, sizeof(long));
  f->env.over = calloc((size_t)n + 1, sizeof(long));
  f->params = ctx_xmalloc(((size_t)n + 1) * sizeof *f->params);
  f->tensor = calloc((size_t)n + 1, sizeof *f->tensor);
  if (!f->env.value || !f->env.over || !f->tensor) ctx_oom();
  for (int i = 0; i < n; i++) {
    const AstItem *it = model->items[i];
    if (it->kind == AST_DIM && it->name.id && it->value) f->env.dims[f->env.n++] = it;
    if (it->kind != AST_PARAM || !it->name.id) continue;
    f->params[f->nparams] = it;
    for (int k = 0; k < nps; k++)
      if (strcmp(ps[k].name, it->name.id) == 0 && match[k] >= 0)
        f->tensor[f->nparams] = &w->tensors[match[k]];
    f->nparams++;
  }
  for (int d = 0; d < s->opts.ndefines; d++) {
    int k = dim_index(&f->env, s->opts.defines[d].name);
    if (k >= 0) f->env.over[k] = s->opts.defines[d].value;
  }
  return env_compute(&f->env);
}

static void fit_free(Fit *f) {
  free(f->env.dims);
  free(f->env.value);
  free(f->env.over);
  free(f->params);
  free(f->tensor);
}

bool ctx_params_fit(CtxSession *s, const char *path, const CtxrtWeights *w, CtxBuf *out) {
  AstFile *model = ctx_pipeline_parse(s, path);
  if (!model || s->diag.errors) return false;
  int nps = 0;
  for (int i = 0; i < model->nitems; i++)
    nps += model->items[i]->kind == AST_PARAM;
  CtxrtParam *ps = calloc((size_t)nps + 1, sizeof *ps);
  int32_t *match = calloc((size_t)nps + 1, sizeof *match);
  if (!ps || !match) ctx_oom();
  nps = 0;
  for (int i = 0; i < model->nitems; i++)
    if (model->items[i]->kind == AST_PARAM && model->items[i]->name.id)
      ps[nps++].name = model->items[i]->name.id;
  ctxrt_weights_match(w, ps, nps, match);
  Fit f = {0};
  bool ok = fit_init(&f, s, model, w, ps, nps, match);
  long *before = calloc((size_t)f.env.n + 1, sizeof *before);
  bool *solved = calloc((size_t)f.env.n + 1, sizeof *solved);
  if (!before || !solved) ctx_oom();
  for (int d = 0; d < f.env.n; d++)
    before[d] = f.env.value[d];
  bool fit = false;
  for (int round = 0; ok && round <= f.env.n; round++) {
    if ((fit = fits(&f))) break;
    if (!solve_round(&f, solved)) break;
  }
  bool changed = false;
  for (int d = 0; fit && d < f.env.n; d++) {
    if (!solved[d] || f.env.value[d] == before[d]) continue;
    ctx_buf_printf(out, "%s-D %s=%ld", changed ? " " : "", f.env.dims[d]->name.id,
                   f.env.value[d]);
    changed = true;
  }
  free(before);
  free(solved);
  fit_free(&f);
  free(ps);
  free(match);
  return fit && changed;
}

/* ---- the verb -------------------------------------------------------------- */

/* The text of [span] (one line) in [*len]; NULL when it spans lines. */
static const char *span_text(CtxSession *s, CtxSpan span, size_t *len) {
  size_t n;
  const char *line = ctx_sources_line(&s->srcs, span.file, span.line, &n);
  if (!line || span.end_line != span.line || span.end_col < span.col ||
      (size_t)span.end_col - 1 > n)
    return NULL;
  *len = (size_t)(span.end_col - span.col);
  return line + span.col - 1;
}

static void print_shape(CtxBuf *b, const SemaType *t) {
  ctx_buf_putc(b, '[');
  for (int d = 0; t && d < t->rank; d++)
    ctx_buf_printf(b, "%s%ld", d ? ", " : "", t->dims[d]);
  ctx_buf_putc(b, ']');
}

static const AstItem *param_item(const AstFile *f, const char *name) {
  for (int i = 0; i < f->nitems; i++)
    if (f->items[i]->kind == AST_PARAM && f->items[i]->name.id &&
        strcmp(f->items[i]->name.id, name) == 0)
      return f->items[i];
  return NULL;
}

/* The type of [p] as the model writes it (f32[3*H, H]), JSON-safe: the
 * language's shape expressions hold no quotes or backslashes. */
static void print_written(CtxBuf *b, CtxSession *s, const AstFile *f,
                          const SemaParam *p) {
  const AstItem *it = param_item(f, p->name);
  size_t len;
  const char *text = it && it->type ? span_text(s, it->type->span, &len) : NULL;
  if (text)
    ctx_buf_write(b, text, len);
  else
    sema_print_type(b, p->type);
}

static bool overridden(const CtxSession *s, const char *dim) {
  for (int d = 0; d < s->opts.ndefines; d++)
    if (strcmp(s->opts.defines[d].name, dim) == 0) return true;
  return false;
}

static void print_json(CtxBuf *b, CtxSession *s, const AstFile *f, const SemaModel *m) {
  ctx_buf_printf(b, "{\"model\": \"%s\", \"dims\": {", m->name);
  for (int d = 0; d < m->ndims; d++)
    ctx_buf_printf(b, "%s\"%s\": %ld", d ? ", " : "", m->dims[d].name, m->dims[d].value);
  ctx_buf_puts(b, "}, \"params\": [");
  for (int i = 0; i < m->nparams; i++) {
    ctx_buf_printf(b, "%s\n  {\"name\": \"%s\", \"shape\": ", i ? "," : "",
                   m->params[i].name);
    print_shape(b, m->params[i].type);
    ctx_buf_puts(b, ", \"type\": \"");
    print_written(b, s, f, &m->params[i]);
    ctx_buf_puts(b, "\"}");
  }
  ctx_buf_puts(b, "\n]}\n");
}

/*   model treelstm: 5 parameters, 5,383,424 values (21.5 MB as float32)
 *   dims: H = 256, V = 20000
 *     Emb    [20000, 768]  f32[V, 3*H]                                    */
static void print_text(CtxBuf *b, CtxSession *s, const AstFile *f, const SemaModel *m) {
  long total = 0;
  int wname = 4, wshape = 5;
  for (int i = 0; i < m->nparams; i++) {
    const SemaType *t = m->params[i].type;
    long n = 1;
    for (int d = 0; t && d < t->rank; d++)
      n *= t->dims[d];
    total += n;
    CtxBuf sh;
    ctx_buf_init(&sh);
    print_shape(&sh, t);
    int ln = (int)strlen(m->params[i].name), ls = (int)strlen(ctx_buf_str(&sh));
    wname = ln > wname ? ln : wname;
    wshape = ls > wshape ? ls : wshape;
    ctx_buf_free(&sh);
  }
  double bytes = (double)total * 4;
  ctx_buf_printf(b, "model %s: %d parameter%s, %ld values (", m->name, m->nparams,
                 m->nparams == 1 ? "" : "s", total);
  if (bytes < 1e3)
    ctx_buf_printf(b, "%.0f bytes", bytes);
  else
    ctx_buf_printf(b, "%.1f %s", bytes < 1e6 ? bytes / 1e3 : bytes / 1e6,
                   bytes < 1e6 ? "kB" : "MB");
  ctx_buf_puts(b, " as float32)\n");
  ctx_buf_puts(b, "dims:");
  for (int d = 0; d < m->ndims; d++)
    ctx_buf_printf(b, "%s %s = %ld%s", d ? "," : "", m->dims[d].name, m->dims[d].value,
                   overridden(s, m->dims[d].name) ? " (-D)" : "");
  ctx_buf_puts(b, m->ndims ? "\n" : " none\n");
  ctx_buf_printf(b, "  %-*s  %-*s  %s\n", wname, "name", wshape, "shape", "declared");
  for (int i = 0; i < m->nparams; i++) {
    CtxBuf sh;
    ctx_buf_init(&sh);
    print_shape(&sh, m->params[i].type);
    ctx_buf_printf(b, "  %-*s  %-*s  ", wname, m->params[i].name, wshape,
                   ctx_buf_str(&sh));
    ctx_buf_free(&sh);
    print_written(b, s, f, &m->params[i]);
    ctx_buf_putc(b, '\n');
  }
}

/* The seeded default weights of [m] into the file --template names. */
static int write_template(CtxSession *s, const SemaModel *m) {
  const CtxParamsOptions *o = &s->opts.params;
  CtxrtParam *ps = calloc((size_t)m->nparams + 1, sizeof *ps);
  if (!ps) ctx_oom();
  for (int i = 0; i < m->nparams; i++) {
    const SemaType *t = m->params[i].type;
    ps[i].name = m->params[i].name;
    ps[i].ndim = t ? t->rank : 0;
    for (int d = 0; t && d < t->rank; d++)
      ps[i].shape[d] = t->dims[d];
  }
  CtxrtWeights *w = NULL;
  CtxrtError err;
  CtxrtStatus st = ctxrt_weights_create(ps, m->nparams, &w, &err);
  if (!st) {
    ctxrt_weights_init(w, o->seed);
    st = ctxrt_st_write_file(o->template_path, w, &err);
  }
  ctxrt_weights_destroy(w);
  free(ps);
  if (st) {
    fprintf(stderr, "%s%s\n", strncmp(err.msg, "error: ", 7) == 0 ? "ctx: " : "",
            err.msg);
    return st == CTXRT_ERR_IO ? CTX_EXIT_USAGE : CTX_EXIT_ICE;
  }
  fprintf(s->out,
          "wrote %s: %d tensor%s, the default weights of seed %" PRIu64
          " (what ctx run uses without --weights)\n",
          o->template_path, m->nparams, m->nparams == 1 ? "" : "s", o->seed);
  return CTX_EXIT_OK;
}

int ctx_params(CtxSession *s) {
  const CtxParamsOptions *o = &s->opts.params;
  if (s->opts.nfiles != 1)
    return params_usage("ctx params takes one model file, found %s", s->opts.files[1]);
  if (o->json && o->template_path)
    return params_usage("give --json or --template, not both%s", "");
  if (o->seed_given && !o->template_path)
    return params_usage("--seed applies to --template only%s", "");
  AstFile *f = ctx_pipeline_parse(s, s->opts.files[0]);
  int nfiles;
  AstFile **files = f && !s->diag.errors ? ctx_pipeline_imports(s, f, &nfiles) : NULL;
  SemaModel *m = files ? sema_check(s->arena, &s->diag, files, nfiles, s->opts.defines,
                                    s->opts.ndefines)
                       : NULL;
  if (!m || s->diag.errors || !m->name) {
    int rc = ctx_session_exit_code(s);
    if (rc) return rc;
    CtxSpan none = {0, 0, 0, 0, 0};
    ctx_diag_error(&s->diag, none, "%s: no model (a module has no parameters)",
                   s->opts.files[0]);
    return CTX_EXIT_INPUT;
  }
  if (o->template_path) return write_template(s, m);
  CtxBuf b;
  ctx_buf_init(&b);
  if (o->json)
    print_json(&b, s, f, m);
  else
    print_text(&b, s, f, m);
  fputs(ctx_buf_str(&b), s->out);
  ctx_buf_free(&b);
  return CTX_EXIT_OK;
}
