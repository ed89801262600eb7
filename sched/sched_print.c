/* sched_print.c — the schedule a kernel was compiled with, as a `.sched`
 * file (`--dump=schedule`).
 *
 * The default plan prints as the directives that ask for exactly its passes;
 * a schedule file's plan prints as its directives in canonical form, those
 * the CPU backend does not apply left as comments. Either way the text,
 * given back with `-s`, plans the same kernel: every pass of the default
 * plan has a directive (hoist_invariant, hoist_products, hoist_local,
 * all_deps, share_weights, balance_levels; a `tile`, `hoist` or `dense` without operators
 * applies to every operator), and what a schedule does not choose
 * (`interchange`, the RA and codegen options) is the command line's
 * `--disable` either way, so a comment names it.
 */
#include "sched/sched_int.h"

#include <string.h>

static const char *verb_name(SchedVerb v) {
  static const char *const names[] = {
      [SCHED_DYNAMIC_BATCH] = "dynamic_batch", [SCHED_SPECIALIZE] = "specialize",
      [SCHED_FUSE] = "fuse", [SCHED_HOIST] = "hoist", [SCHED_DENSE] = "dense",
      [SCHED_HOIST_INVARIANT] = "hoist_invariant", [SCHED_HOIST_PRODUCTS] = "hoist_products",
      [SCHED_HOIST_LOCAL] = "hoist_local", [SCHED_DIRECT_RESULTS] = "direct_results",
      [SCHED_LEAF_VIEWS] = "leaf_views", [SCHED_ALL_DEPS] = "all_deps",
      [SCHED_SHARE_WEIGHTS] = "share_weights", [SCHED_SPLIT] = "split", [SCHED_TILE] = "tile",
      [SCHED_REORDER] = "reorder", [SCHED_VECTORIZE] = "vectorize", [SCHED_UNROLL] = "unroll",
      [SCHED_UNROLL_RECURSION] = "unroll_recursion",
      [SCHED_REFACTOR_RECURSION] = "refactor_recursion", [SCHED_PARALLEL] = "parallel",
      [SCHED_PERSIST] = "persist", [SCHED_CACHE] = "cache", [SCHED_BIND] = "bind",
      [SCHED_BALANCE_LEVELS] = "balance_levels"};
  return names[v];
}

/* "a, b, c" */
static void names(CtxBuf *out, const char *const *xs, int n) {
  for (int i = 0; i < n; i++) ctx_buf_printf(out, "%s%s", i ? ", " : "", xs[i]);
}

/* The arguments of [d] after its verb, as sched_check reads them. */
static void print_args(CtxBuf *out, const Schedule *s, const SchedDirective *d) {
  switch (d->verb) {
  case SCHED_SPECIALIZE:
    if (d->naxes == 1 && strcmp(d->axes[0], "arity") == 0)
      ctx_buf_printf(out, " n.%s == %ld",
                     s->program->kind == SEMA_TREE ? "num_children" : "num_preds",
                     d->factors[0]);
    else
      ctx_buf_puts(out, " leaf");
    break;
  case SCHED_FUSE: case SCHED_HOIST: case SCHED_DENSE: case SCHED_HOIST_INVARIANT:
    for (int i = 0; i < d->nops; i++) ctx_buf_printf(out, "%s %s", i ? "," : "", d->ops[i]->name);
    break;
  case SCHED_SPLIT:
    ctx_buf_printf(out, " %s by %ld", d->axes[0], d->factors[0]);
    break;
  case SCHED_TILE:
    ctx_buf_puts(out, "(");
    names(out, d->axes, d->naxes);
    ctx_buf_puts(out, ") by (");
    for (int i = 0; i < d->nfactors; i++) ctx_buf_printf(out, "%s%ld", i ? ", " : "", d->factors[i]);
    ctx_buf_puts(out, ")");
    break;
  case SCHED_REORDER: case SCHED_VECTORIZE: case SCHED_PARALLEL:
    ctx_buf_puts(out, " ");
    names(out, d->axes, d->naxes);
    break;
  case SCHED_UNROLL:
    ctx_buf_printf(out, " %s", d->axes[0]);
    if (d->nfactors) ctx_buf_printf(out, " by %ld", d->factors[0]);
    break;
  case SCHED_UNROLL_RECURSION: ctx_buf_printf(out, " %ld", d->factors[0]); break;
  case SCHED_CACHE: {
    const RaProgram *p = s->program;
    for (int i = 0; i < d->nparams; i++)
      ctx_buf_printf(out, "%s %s", i ? "," : "", p->params[d->params[i]].name);
    ctx_buf_printf(out, " in %s", d->where[0]);
    break;
  }
  case SCHED_BIND:
    for (int i = 0; i < d->naxes; i++)
      ctx_buf_printf(out, "%s %s to %s", i ? "," : "", d->axes[i], d->where[i]);
    break;
  default: break; /* no arguments */
  }
}

void sched_print_directive(CtxBuf *out, const Schedule *s, const SchedDirective *d) {
  if (d->op) ctx_buf_printf(out, "%s: ", d->op->name);
  ctx_buf_puts(out, verb_name(d->verb));
  print_args(out, s, d);
}

/* Does the CPU backend apply [d]? (sched_plan.c warns about the others.) */
static bool cpu_applies(const SchedDirective *d) {
  return d->verb != SCHED_CACHE && d->verb != SCHED_BIND;
}

/* The default plan's passes (or a plan made like it: ctx tune's) as
 * directives. */
static void print_default(CtxBuf *out, const RaProgram *p, const SchedPlan *plan) {
  ctx_buf_puts(out, "  dynamic_batch\n");
  if (plan->specialize_leaf) ctx_buf_puts(out, "  specialize leaf\n");
  for (int i = 0; i < plan->narity; i++)
    ctx_buf_printf(out, "  specialize n.%s == %ld\n",
                   p->kind == SEMA_TREE ? "num_children" : "num_preds", plan->arity[i]);
  if (plan->hoist_invariant && plan->hoist_products) ctx_buf_puts(out, "  hoist\n");
  else if (plan->hoist_invariant) ctx_buf_puts(out, "  hoist_invariant\n");
  else if (plan->hoist_products) ctx_buf_puts(out, "  hoist_products\n");
  if (plan->hoist_local) ctx_buf_puts(out, "  hoist_local\n");
  if (plan->all_deps) ctx_buf_puts(out, "  all_deps\n");
  if (plan->tile_nodes > 0 && plan->tile_outs > 0)
    ctx_buf_printf(out, "  tile(node, i) by (%d, %d)\n",
                   plan->tile_nodes, plan->tile_outs);
  if (plan->row_axes[0] && plan->row_tile_rows > 0 && plan->row_tile_outs > 0)
    ctx_buf_printf(out, "  tile(%s, %s) by (%d, %d)\n", plan->row_axes[0], plan->row_axes[1],
                   plan->row_tile_rows, plan->row_tile_outs);
  if (plan->fuse_epilogue) ctx_buf_puts(out, "  fuse\n");
  if (plan->share_weights) ctx_buf_puts(out, "  share_weights\n");
  if (plan->direct_results) ctx_buf_puts(out, "  direct_results\n");
  if (plan->leaf_views) ctx_buf_puts(out, "  leaf_views\n");
  if (plan->dense_scratch) ctx_buf_puts(out, "  dense\n");
  for (int i = 0; i < plan->nparallel; i++)
    ctx_buf_printf(out, "  %s%sparallel %s\n", plan->parallel[i].op ? plan->parallel[i].op->name : "",
                   plan->parallel[i].op ? ": " : "", plan->parallel[i].axis);
  if (plan->refactor_recursion) ctx_buf_puts(out, "  refactor_recursion\n");
  if (plan->balance_levels) ctx_buf_puts(out, "  balance_levels\n");
  if (plan->unroll_recursion > 1)
    ctx_buf_printf(out, "  unroll_recursion %d\n", plan->unroll_recursion);
  ctx_buf_puts(out, "  persist\n");
}

void sched_print(CtxBuf *out, const RaProgram *p, const SchedPlan *plan) {
  const Schedule *s = plan->schedule;
  const char *model = p->name;
  if (s)
    ctx_buf_printf(out, "# the schedule applied to %s (its file's cpu schedule)\n", model);
  else
    ctx_buf_printf(out, "# the default cpu schedule of %s; edit it and apply it with -s FILE\n",
                   model);
  if (!plan->interchange)
    ctx_buf_puts(out, "# compiled with --disable=interchange (a form, not a schedule choice)\n");
  ctx_buf_printf(out, "schedule %s for cpu {\n", model);
  if (!s) print_default(out, p, plan);
  for (int i = 0; s && i < s->ndirs; i++) {
    const SchedDirective *d = &s->dirs[i];
    ctx_buf_puts(out, cpu_applies(d) ? "  " : "  # not applied on the cpu: ");
    sched_print_directive(out, s, d);
    ctx_buf_puts(out, "\n");
  }
  ctx_buf_puts(out, "}\n");
}
