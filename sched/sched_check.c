/* sched_check.c — checking schedule directives against a model.
 *
 * Each directive is matched against its verb's form (the usage strings of
 * the table below, which docs/language.md repeats); names resolve to the
 * model's operators, their axes and its parameters. An error points at the
 * offending word in the schedule, with a note at the definition in the model
 * or a suggestion. Axes made by `split` and `tile` (`i.outer`, `i.inner`)
 * exist for the directives after them.
 */
#include "sched/sched.h"

#include <stdarg.h>
#include <string.h>

typedef struct {
  CtxArena *a;
  CtxDiag *d;
  const RaProgram *p;
  const AstDirective *dir;
  SchedDirective *out;
  const AstSchedArg *args;
  int nargs, pos;      /* the argument cursor */
  CtxVec made;         /* pairs: operator, axis name made by split/tile */
  bool ok;
} Check;

typedef struct {
  const char *name;
  SchedVerb verb;
  int op; /* 0: no `OP:`, 1: required, 2: optional */
  const char *usage;
  void (*args)(Check *c);
} VerbInfo;

static void bad(Check *c, CtxSpan span, const char *fmt, ...) CTX_PRINTF(3, 4);

/* Reports the directive's first error (later ones would only echo it). */
static void bad(Check *c, CtxSpan span, const char *fmt, ...) {
  if (c->ok) {
    va_list ap;
    va_start(ap, fmt);
    ctx_diag_report(c->d, CTX_SEV_ERROR, span, fmt, ap);
    va_end(ap);
  }
  c->ok = false;
}

static const AstSchedArg *next(Check *c) {
  return c->pos < c->nargs ? &c->args[c->pos++] : NULL;
}

/* ---- names ---------------------------------------------------------------------- */

static const RaOp *find_op(const Check *c, const char *name) {
  for (int f = 0; f < c->p->nfuncs; f++)
    for (int o = 0; o < c->p->funcs[f].nops; o++)
      if (strcmp(c->p->funcs[f].ops[o]->name, name) == 0) return c->p->funcs[f].ops[o];
  return NULL;
}

/* "g, f0, f1 and c": the operators of the model, for messages (the first
 * 24; `ctx check --dump=ra` shows them all). */
static const char *op_list(const Check *c) {
  CtxBuf b;
  ctx_buf_init(&b);
  CtxVec names = {0}; /* each name once: a leaf branch repeats the others' */
  for (int f = 0; f < c->p->nfuncs; f++)
    for (int o = 0; o < c->p->funcs[f].nops; o++) {
      const char *name = c->p->funcs[f].ops[o]->name;
      bool seen = false;
      for (int i = 0; i < names.len && !seen; i++) seen = strcmp(names.items[i], name) == 0;
      if (!seen) ctx_vec_push(c->a, &names, (void *)name);
    }
  for (int i = 0; i < names.len && i < 24; i++)
    ctx_buf_printf(&b, "%s%s", i == 0 ? "" : i + 1 == names.len ? " and " : ", ",
                   (const char *)names.items[i]);
  if (names.len > 24) ctx_buf_printf(&b, " and %d more", names.len - 24);
  const char *r = ctx_arena_strdup(c->a, ctx_buf_str(&b));
  ctx_buf_free(&b);
  return r;
}

/* Reports an unknown operator with the closest operator's definition. */
static void unknown_op(Check *c, const char *name, CtxSpan span) {
  bad(c, span, "unknown operator '%s' (the operators: %s)", name, op_list(c));
  const RaOp *best = NULL;
  int dist = 3;
  for (int f = 0; f < c->p->nfuncs; f++)
    for (int o = 0; o < c->p->funcs[f].nops; o++) {
      int d = ctx_edit_distance(name, c->p->funcs[f].ops[o]->name, 2);
      if (d < dist) dist = d, best = c->p->funcs[f].ops[o];
    }
  if (best) ctx_diag_note(c->d, best->span, "did you mean '%s'?", best->name);
}

static bool has_axis(const Check *c, const RaOp *op, const char *axis) {
  if (strcmp(axis, "node") == 0) return true;
  for (int i = 0; i < op->shape.rank; i++)
    if (strcmp(op->vars[i]->name, axis) == 0) return true;
  for (int i = 0; i + 1 < c->made.len; i += 2)
    if (c->made.items[i] == op && strcmp(c->made.items[i + 1], axis) == 0) return true;
  return false;
}

static void make_halves(Check *c, const RaOp *op, const char *axis) {
  ctx_vec_push(c->a, &c->made, (void *)op);
  ctx_vec_push(c->a, &c->made, ctx_arena_printf(c->a, "%s.outer", axis));
  ctx_vec_push(c->a, &c->made, (void *)op);
  ctx_vec_push(c->a, &c->made, ctx_arena_printf(c->a, "%s.inner", axis));
}

/* An axis of the directive's operator (or, without one, of any operator). */
static void take_axis(Check *c, const AstSchedArg *a) {
  if (!a || a->kind != AST_SARG_NAME) {
    bad(c, a ? a->span : c->dir->span, "expected an axis, found %s", a ? "a number" : "nothing");
    return;
  }
  const RaOp *op = c->out->op;
  bool found = op && has_axis(c, op, a->name);
  for (int f = 0; !op && !found && f < c->p->nfuncs; f++)
    for (int o = 0; !found && o < c->p->funcs[f].nops; o++)
      found = has_axis(c, c->p->funcs[f].ops[o], a->name);
  if (!found && op) {
    CtxBuf b; /* node, the operator's index variables, the halves made so far */
    ctx_buf_init(&b);
    ctx_buf_puts(&b, "node");
    for (int i = 0; i < op->shape.rank; i++) ctx_buf_printf(&b, ", %s", op->vars[i]->name);
    for (int i = 0; i + 1 < c->made.len; i += 2)
      if (c->made.items[i] == op) ctx_buf_printf(&b, ", %s", (const char *)c->made.items[i + 1]);
    bad(c, a->span, "unknown axis '%s' (the axes of '%s': %s)", a->name, op->name,
        ctx_buf_str(&b));
    ctx_buf_free(&b);
  }
  if (!found) {
    bad(c, a->span, "unknown axis '%s'", a->name);
    if (op) ctx_diag_note(c->d, op->span, "'%s' is defined here", op->name);
  }
  if (c->out->naxes < SCHED_MAX_ARGS) c->out->axes[c->out->naxes++] = a->name;
}

static void take_factor(Check *c, const AstSchedArg *a) {
  if (!a || a->kind != AST_SARG_INT) {
    bad(c, a ? a->span : c->dir->span, "expected a factor, found %s",
        a ? (a->name ? a->name : "a list") : "nothing");
    return;
  }
  if (a->value <= 0) bad(c, a->span, "a factor must be positive, found %s", a->name);
  if (c->out->nfactors < SCHED_MAX_ARGS) c->out->factors[c->out->nfactors++] = a->value;
}

static bool word(Check *c, const char *w) {
  const AstSchedArg *a = next(c);
  if (a && a->kind == AST_SARG_NAME && strcmp(a->name, w) == 0) return true;
  bad(c, a ? a->span : c->dir->span, "expected '%s' here", w);
  return false;
}

static void take_op(Check *c, const AstSchedArg *a) {
  if (!a || a->kind != AST_SARG_NAME) {
    bad(c, a ? a->span : c->dir->span, "expected an operator, found %s", "something else");
    return;
  }
  const RaOp *op = find_op(c, a->name);
  if (!op) unknown_op(c, a->name, a->span);
  else if (c->out->nops < SCHED_MAX_ARGS) c->out->ops[c->out->nops++] = op;
}

/* ---- the verbs' argument forms -------------------------------------------------------- */

static void no_args(Check *c) { (void)c; }

/* A note at the model's recursion: its first operator. */
static void note_model(Check *c) {
  for (int f = 0; f < c->p->nfuncs; f++)
    if (c->p->funcs[f].nops) {
      const char *what = c->p->kind == SEMA_SEQUENCE ? "a sequence"
                         : c->p->kind == SEMA_DAG    ? "a DAG"
                                                     : "a tree";
      ctx_diag_note(c->d, c->p->funcs[f].ops[0]->span, "model '%s' recurses over %s (at most "
                    "%ld dependencies per node)", c->p->name, what, c->p->max_arity);
      return;
    }
}

/* `leaf`, `leaf(n)` or `n.num_children == K` (`n.num_preds == K` for a DAG):
 * axes[0] "leaf" or "arity", factors[0] K. */
static void specialize_args(Check *c) {
  const AstSchedArg *a = next(c);
  const char *usage = "'specialize leaf' or 'specialize n.num_children == K'";
  const char *dot = a && a->kind == AST_SARG_NAME ? strchr(a->name, '.') : NULL;
  if (a && a->kind == AST_SARG_NAME && strcmp(a->name, "leaf") == 0) {
    const AstSchedArg *n = c->pos < c->nargs ? &c->args[c->pos] : NULL;
    if (n && n->kind == AST_SARG_LIST && !n->after_comma) { /* leaf(n) */
      c->pos++;
      if (n->n != 1 || n->elems[0].kind != AST_SARG_NAME || strchr(n->elems[0].name, '.'))
        bad(c, n->span, "expected one node name, as in 'leaf(n)'");
    }
    c->out->axes[c->out->naxes++] = "leaf";
    return;
  }
  bool children = dot && strcmp(dot, ".num_children") == 0;
  if (!children && !(dot && strcmp(dot, ".num_preds") == 0)) {
    bad(c, a ? a->span : c->dir->span, "only 'leaf' and the arity can be specialized: %s",
        usage);
    return;
  }
  if (c->p->kind == SEMA_SEQUENCE) { /* every element but the first: one predecessor */
    bad(c, a->span, "a sequence's arity is 1 at every element but the first (a leaf): "
        "specialize leaf says all there is");
    note_model(c);
    return;
  }
  if (children != (c->p->kind == SEMA_TREE)) {
    bad(c, a->span, "the arity of a %s's node is %s", children ? "DAG" : "tree",
        children ? "n.num_preds" : "n.num_children");
    note_model(c);
    return;
  }
  if (!word(c, "==")) return;
  const AstSchedArg *k = next(c);
  if (!k || k->kind != AST_SARG_INT) {
    bad(c, k ? k->span : c->dir->span, "expected a number of dependencies after '=='");
    return;
  }
  if (k->value > c->p->max_arity) {
    bad(c, k->span, "no node has %ld dependencies: model '%s' allows at most %ld", k->value,
        c->p->name, c->p->max_arity);
    note_model(c);
  }
  c->out->axes[c->out->naxes++] = "arity";
  c->out->factors[c->out->nfactors++] = k->value;
}

/* The axis of `[OP:] parallel AXIS`: node, or an axis of the operator (of
 * some operator without one), not a reduction's variable. */
static bool reduces_over(const RaExpr *e, const char *name) {
  if (!e) return false;
  if (e->kind == RA_REDUCE && strcmp(e->var->name, name) == 0) return true;
  return reduces_over(e->a, name) || reduces_over(e->b, name) || reduces_over(e->c, name);
}

static void parallel_args(Check *c) {
  const AstSchedArg *a = c->pos < c->nargs ? &c->args[c->pos] : NULL;
  const RaOp *op = c->out->op;
  if (a && a->kind == AST_SARG_NAME && op && !has_axis(c, op, a->name) &&
      reduces_over(op->body, a->name)) {
    c->pos++;
    bad(c, a->span, "'%s' is a reduction axis of '%s': the cpu backend shares a level's "
        "outputs or its nodes among threads, not the terms of a sum", a->name, op->name);
    ctx_diag_note(c->d, op->span, "'%s' is defined here", op->name);
    return;
  }
  take_axis(c, next(c));
}

static void ops_args(Check *c) {
  while (c->pos < c->nargs && c->ok) take_op(c, next(c));
  if (c->out->verb == SCHED_FUSE && c->out->nops == 1 && c->ok)
    bad(c, c->dir->span, "'fuse' needs at least two operators (or none: every operator)");
}

static void split_args(Check *c) {
  const AstSchedArg *axis = c->pos < c->nargs ? &c->args[c->pos] : NULL;
  take_axis(c, next(c));
  if (word(c, "by")) take_factor(c, next(c));
  if (c->ok && axis) make_halves(c, c->out->op, axis->name);
}

static void tile_args(Check *c) {
  const AstSchedArg *axes = next(c);
  if (!axes || axes->kind != AST_SARG_LIST || axes->n < 2) {
    bad(c, axes ? axes->span : c->dir->span, "expected a list of axes, as %s", "(node, i)");
    return;
  }
  for (int i = 0; i < axes->n; i++) take_axis(c, &axes->elems[i]);
  if (!word(c, "by")) return;
  const AstSchedArg *fs = next(c);
  if (!fs || fs->kind != AST_SARG_LIST || fs->n != axes->n) {
    bad(c, fs ? fs->span : c->dir->span, "expected one factor per axis, as %s", "(4, 16)");
    return;
  }
  for (int i = 0; i < fs->n; i++) take_factor(c, &fs->elems[i]);
  for (int i = 0; c->ok && c->out->op && i < axes->n; i++)
    make_halves(c, c->out->op, axes->elems[i].name);
}

static void axes_args(Check *c) {
  while (c->pos < c->nargs && c->ok) take_axis(c, next(c));
  if (c->out->verb == SCHED_REORDER && c->out->naxes < 2 && c->ok)
    bad(c, c->dir->span, "'reorder' needs at least two axes");
}

static void axis_args(Check *c) { take_axis(c, next(c)); }

static void unroll_args(Check *c) {
  take_axis(c, next(c));
  if (c->pos < c->nargs && word(c, "by")) take_factor(c, next(c));
}

static void factor_args(Check *c) { take_factor(c, next(c)); }

static void cache_args(Check *c) {
  const AstSchedArg *a;
  while ((a = next(c)) && !(a->kind == AST_SARG_NAME && strcmp(a->name, "in") == 0)) {
    int idx = -1;
    for (int i = 0; a->kind == AST_SARG_NAME && i < c->p->nparams; i++)
      if (strcmp(c->p->params[i].name, a->name) == 0) idx = i;
    if (idx < 0) bad(c, a->span, "unknown parameter '%s'", a->name ? a->name : "");
    else if (c->out->nparams < SCHED_MAX_ARGS) c->out->params[c->out->nparams++] = idx;
  }
  const AstSchedArg *w = next(c);
  if (!a || !w || w->kind != AST_SARG_NAME ||
      (strcmp(w->name, "shared") != 0 && strcmp(w->name, "registers") != 0)) {
    bad(c, w ? w->span : c->dir->span, "expected 'in shared' or 'in registers'");
    return;
  }
  c->out->where[0] = w->name;
}

static void bind_args(Check *c) {
  while (c->pos < c->nargs && c->ok) {
    take_axis(c, next(c));
    if (!word(c, "to")) return;
    const AstSchedArg *w = next(c);
    const char *axis = c->out->naxes > 0 ? c->out->axes[c->out->naxes - 1] : NULL;
    bool node = axis && strcmp(axis, "node") == 0;
    static const char *const rows_to = "an operator's output rows bind to 'thread', 'warp' "
                                       "or 'grid'; nodes to 'block', 'warp' or 'thread'";
    if (!w || w->kind != AST_SARG_NAME ||
        (strcmp(w->name, "block") != 0 && strcmp(w->name, "thread") != 0 &&
         strcmp(w->name, "warp") != 0 && strcmp(w->name, "grid") != 0)) {
      bad(c, w ? w->span : c->dir->span, "expected 'block', 'thread', 'warp' or 'grid'");
      return;
    }
    bool node_word = strcmp(w->name, "block") == 0 || strcmp(w->name, "thread") == 0 ||
                     strcmp(w->name, "warp") == 0;
    bool row_word = strcmp(w->name, "block") != 0;
    if (node ? !node_word : !row_word) {
      bad(c, w->span, "%s", rows_to);
      return;
    }
    c->out->where[c->out->naxes - 1] = w->name;
  }
}

/* The verbs: keep in step with grammar/keywords.def (class DIRECTIVE). */
static const VerbInfo verbs[] = {
    {"dynamic_batch", SCHED_DYNAMIC_BATCH, 0, "dynamic_batch", no_args},
    {"specialize", SCHED_SPECIALIZE, 0, "specialize leaf | specialize n.num_children == K",
     specialize_args},
    {"fuse", SCHED_FUSE, 0, "fuse OP, OP, ...", ops_args},
    {"hoist", SCHED_HOIST, 0, "hoist OP, ...", ops_args},
    {"dense", SCHED_DENSE, 0, "dense OP, ...", ops_args},
    {"hoist_invariant", SCHED_HOIST_INVARIANT, 0, "hoist_invariant OP, ...", ops_args},
    {"hoist_products", SCHED_HOIST_PRODUCTS, 0, "hoist_products", no_args},
    {"hoist_local", SCHED_HOIST_LOCAL, 0, "hoist_local", no_args},
    {"direct_results", SCHED_DIRECT_RESULTS, 0, "direct_results", no_args},
    {"leaf_views", SCHED_LEAF_VIEWS, 0, "leaf_views", no_args},
    {"all_deps", SCHED_ALL_DEPS, 0, "all_deps", no_args},
    {"share_weights", SCHED_SHARE_WEIGHTS, 0, "share_weights", no_args},
    {"split", SCHED_SPLIT, 1, "OP: split AXIS by FACTOR", split_args},
    {"tile", SCHED_TILE, 2, "[OP:] tile(AXIS, AXIS) by (FACTOR, FACTOR)", tile_args},
    {"reorder", SCHED_REORDER, 1, "OP: reorder AXIS, AXIS, ...", axes_args},
    {"vectorize", SCHED_VECTORIZE, 1, "OP: vectorize AXIS", axis_args},
    {"unroll", SCHED_UNROLL, 1, "OP: unroll AXIS [by FACTOR]", unroll_args},
    {"unroll_recursion", SCHED_UNROLL_RECURSION, 0, "unroll_recursion FACTOR", factor_args},
    {"parallel", SCHED_PARALLEL, 2, "[OP:] parallel AXIS", parallel_args},
    {"persist", SCHED_PERSIST, 0, "persist", no_args},
    {"cache", SCHED_CACHE, 0, "cache PARAM, ... in shared|registers", cache_args},
    {"bind", SCHED_BIND, 2, "[OP:] bind node to block|warp|thread, AXIS to thread|warp|grid",
     bind_args},
    {"refactor_recursion", SCHED_REFACTOR_RECURSION, 0, "refactor_recursion", no_args},
    {"balance_levels", SCHED_BALANCE_LEVELS, 0, "balance_levels", no_args},
};

static const VerbInfo *find_verb(const char *name) {
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (strcmp(verbs[i].name, name) == 0) return &verbs[i];
  return NULL;
}

/* ---- directives and blocks ------------------------------------------------------------- */

static void check_directive(Check *c, const AstDirective *d, SchedDirective *out) {
  const VerbInfo *v = find_verb(d->verb.id);
  memset(out, 0, sizeof *out);
  c->dir = d;
  c->out = out;
  c->args = d->args;
  c->nargs = d->nargs;
  c->pos = 0;
  if (!v) return; /* the parser reported it */
  out->verb = v->verb;
  out->span = d->span;
  if (d->op.id && v->op == 0)
    bad(c, d->op.span, "'%s' applies to the whole model, not to an operator", v->name);
  else if (!d->op.id && v->op == 1)
    bad(c, d->verb.span, "'%s' needs an operator, as in: %s", v->name, v->usage);
  if (d->op.id && c->ok && !(out->op = find_op(c, d->op.id))) unknown_op(c, d->op.id, d->op.span);
  if (c->ok) v->args(c);
  if (c->ok && c->pos < c->nargs)
    bad(c, c->args[c->pos].span, "unexpected argument; the form is: %s", v->usage);
}

/* Is [b] the same choice as the earlier [a]: a second `parallel` of one
 * operator (or of the whole model), or a second `specialize` of one arity? */
static bool repeats(const SchedDirective *a, const SchedDirective *b) {
  if (a->verb != b->verb) return false;
  if (a->verb == SCHED_PARALLEL) return a->op == b->op;
  return a->verb == SCHED_SPECIALIZE && a->naxes == 1 && b->naxes == 1 &&
         strcmp(a->axes[0], b->axes[0]) == 0 &&
         (strcmp(a->axes[0], "leaf") == 0 || a->factors[0] == b->factors[0]);
}

/* Directives that repeat (or contradict) an earlier one; false after
 * reporting them. */
static bool check_repeats(CtxDiag *diag, const Schedule *s) {
  bool ok = true;
  int arities = 0;
  for (int i = 0; i < s->ndirs; i++) {
    const SchedDirective *d = &s->dirs[i];
    if (d->verb == SCHED_SPECIALIZE && d->naxes == 1 && strcmp(d->axes[0], "arity") == 0 &&
        ++arities == SCHED_MAX_ARITIES + 1) {
      ctx_diag_error(diag, d->span, "at most %d arities can be specialized", SCHED_MAX_ARITIES);
      ok = false;
    }
    for (int j = 0; j < i; j++)
      if (repeats(&s->dirs[j], d)) {
        if (d->verb == SCHED_PARALLEL)
          ctx_diag_error(diag, d->span, "a second 'parallel' for %s%s%s: one axis is shared "
                         "among the threads", d->op ? "'" : "the whole model",
                         d->op ? d->op->name : "", d->op ? "'" : "");
        else
          ctx_diag_error(diag, d->span, "this is specialized already");
        ctx_diag_note(diag, s->dirs[j].span, "the first is here");
        ok = false;
        break;
      }
  }
  return ok;
}

Schedule *sched_check(CtxArena *arena, CtxDiag *diag, const AstItem *item,
                      const RaProgram *p) {
  Schedule *s = CTX_NEW(arena, Schedule);
  s->model = item->name.id;
  s->program = p;
  bool ok = true;
  if (strcmp(item->name.id, p->name) != 0) {
    ctx_diag_error(diag, item->name.span, "this schedule is for model '%s', not '%s'",
                   item->name.id, p->name);
    ok = false;
  }
  const char *t = item->target.id ? item->target.id : "cpu";
  if (strcmp(t, "cuda") == 0) s->target = SCHED_CUDA;
  else if (strcmp(t, "cpu") != 0) {
    ctx_diag_error(diag, item->target.span, "unknown target '%s' (targets: cpu, cuda)", t);
    ok = false;
  }
  s->dirs = CTX_NEW_ARRAY(arena, SchedDirective, item->ndirectives);
  s->ndirs = item->ndirectives;
  Check c;
  memset(&c, 0, sizeof c);
  c.a = arena, c.d = diag, c.p = p;
  for (int i = 0; i < item->ndirectives; i++) {
    c.ok = true;
    check_directive(&c, &item->directives[i], &s->dirs[i]);
    ok &= c.ok;
  }
  ok &= check_repeats(diag, s);
  return ok ? s : NULL;
}
