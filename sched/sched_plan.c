/* sched_plan.c — a checked schedule applied: its directives as a SchedPlan
 * and as loop transformations of the operators they name.
 *
 * With a schedule (`ctx run/build/check -s FILE.sched`) the kernel gets
 * exactly the transformations it asks for; without one, the default plan
 * (sched_default_plan). What each directive does on the CPU:
 *
 *   dynamic_batch, persist   always so: one level loop, one thread team with a
 *                            barrier between levels (nothing to turn on)
 *   specialize leaf          specialize-leaf
 *   hoist OP, ...            hoist-invariant for those operators and the
 *                            products they read (computed once per run when
 *                            they read only parameters), and hoist-products
 *   dense OP, ...            dense-scratch for those operators
 *   fuse OP, ...             fuse-epilogue
 *   OP: tile(node, AXIS) by (NB, NO)
 *                            register-tile the level products OP is or reads,
 *                            NB nodes x NO outputs
 *   tile(ROWS, AXIS) by (NR, NO)
 *                            register-tile the products inside a node (a
 *                            matrix times the node's matrix: MV-RNN's P), NR
 *                            rows x NO outputs; without it they take the level
 *                            products' tile
 *   OP: split AXIS by F      ilir_split_loop on OP's loops over AXIS
 *   OP: unroll AXIS [by F]   ilir_unroll_loop: all iterations when at most F (64
 *                            without F), else after a split by F, AXIS.inner
 *   OP: reorder A, B         ilir_reorder_loops on OP's nest A { B }
 *   OP: vectorize AXIS       OP's loops over AXIS become vector loops (codegen
 *                            asks LLVM to vectorize them); AXIS.inner of an
 *                            earlier tile(node, AXIS) is the tile's vectors
 *   interchange              as without a schedule (--disable=interchange):
 *                            it chooses the form of a reduction, not a schedule
 *   specialize n.num_children == K
 *                            sched_spec.c: the level's nodes of arity K in a
 *                            loop of their own
 *   [OP:] parallel node / AXIS
 *                            OP's (every) tiled level product shared among the
 *                            threads by nodes / by outputs along AXIS
 *                            (sched_schedule_shares; without it codegen's
 *                            automatic choice)
 *
 *   unroll_recursion K       the levels loops in phases of up to K levels with no
 *                            barrier inside a phase where that is sound (the
 *                            runtime decides per batch: sched_recur.c)
 *   refactor_recursion       products with a sum of the dependencies' results as
 *                            one product per node (sched_recur.c); an error when
 *                            the model has none
 *   balance_levels           balance-levels: the runtime levels a batch evenly
 *                            when the level products' weights exceed the L2
 *                            (on one thread: fill it)
 *                            (sched_apply.c, balance_threads)
 *
 * The rest — cache and bind (GPU directives) — the CPU backend does not
 * apply; each draws a warning at the directive. A directive that names an
 * axis no loop of its operator has (left) is an error at the directive.
 */
#include "sched/sched_int.h"

#include <string.h>

enum { MAX_UNROLL = 64 }; /* copies a full unroll may make */

/* Is buffer [b] of [k] an operator named [name]? */
static bool op_buf(const IlirKernel *k, int b, const char *name) {
  IlirBufKind kind = k->bufs[b].kind;
  return (kind == ILIR_BUF_SCRATCH || kind == ILIR_BUF_LEVEL_SCRATCH ||
          kind == ILIR_BUF_INVARIANT) &&
         strcmp(k->bufs[b].name, name) == 0;
}

static bool *op_set(CtxArena *a, const IlirKernel *k, bool *set, const RaOp *const *ops,
                    int nops) {
  if (!set) set = CTX_NEW_ARRAY(a, bool, k->nbufs);
  for (int b = 0; b < k->nbufs; b++)
    for (int i = 0; i < nops; i++)
      if (op_buf(k, b, ops[i]->name)) set[b] = true;
  return set;
}

/* ---- the statements of an operator ---------------------------------------------- */

/* Does [s] store into a buffer of [set]? */
static bool stores_into(const IlirStmt *s, const bool *set) {
  if (s->kind == ILIR_STORE) return set[s->buf];
  const IlirBlock *bs[3] = {&s->body, &s->then, &s->els};
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < bs[j]->n; i++)
      if (stores_into(bs[j]->stmts[i], set)) return true;
  return false;
}

/* Marks the scratch buffers [e] reads. */
static void mark_reads(const IlirKernel *k, const IlirExpr *e, bool *set) {
  if (!e) return;
  if (e->kind == ILIR_LOAD && k->bufs[e->buf].kind == ILIR_BUF_SCRATCH) set[e->buf] = true;
  mark_reads(k, e->a, set), mark_reads(k, e->b, set), mark_reads(k, e->c, set);
  mark_reads(k, e->lo, set), mark_reads(k, e->hi, set);
}

/* Adds to [set] the buffers the stores into [ops] read (the products an
 * operator is the sum of: concat-split and product-ops make them operators
 * of their own). */
static void add_reads(const IlirKernel *k, const IlirBlock *b, const bool *ops, bool *set) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE && ops[s->buf]) mark_reads(k, s->value, set);
    add_reads(k, &s->body, ops, set);
    add_reads(k, &s->then, ops, set);
    add_reads(k, &s->els, ops, set);
  }
}

/* ---- loop directives --------------------------------------------------------------- */

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  const SchedDirective *d;
  const bool *ops;  /* the operator's buffers */
  const char *axis;
  int applied;      /* loops transformed */
} Apply;

/* The directive on loop [s] (over the axis, storing into the operator):
 * its replacement statements appended to [out]; false to keep [s]. */
static bool transform(Apply *A, IlirStmt *s, CtxVec *out) {
  IlirBlock b;
  IlirStmt *r;
  switch (A->d->verb) {
  case SCHED_SPLIT:
    if (!ilir_split_loop(A->a, A->k, s, A->d->factors[0], &b)) return false;
    break;
  case SCHED_UNROLL: {
    long f = A->d->nfactors ? A->d->factors[0] : MAX_UNROLL;
    if (ilir_unroll_loop(A->a, s, f, &b)) break; /* at most f iterations: all */
    if (!A->d->nfactors || !ilir_split_loop(A->a, A->k, s, f, &b)) return false;
    IlirStmt *outer = b.stmts[0]; /* split, then the inner loop unrolled */
    IlirBlock copies;
    if (!ilir_unroll_loop(A->a, outer->body.stmts[0], f, &copies)) return false;
    outer->body = copies;
    break;
  }
  case SCHED_REORDER:
    if (!ilir_reorder_loops(A->a, s, &r)) return false;
    b = (IlirBlock){&r, 1};
    break;
  case SCHED_VECTORIZE:
    if (s->loop != ILIR_LOOP_SERIAL || s->tile_nodes) return false;
    s->loop = ILIR_LOOP_VECTOR;
    b = (IlirBlock){&s, 1};
    break;
  default: return false;
  }
  for (int i = 0; i < b.n; i++) ctx_vec_push(A->a, out, b.stmts[i]);
  A->applied++;
  return true;
}

static void apply_block(Apply *A, IlirBlock *b) {
  CtxVec out = {0};
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    bool mine = s->kind == ILIR_LOOP && strcmp(s->var->name, A->axis) == 0 &&
                stores_into(s, A->ops);
    if (mine && transform(A, s, &out)) continue;
    if (s->kind != ILIR_STORE && !mine) { /* a loop over the axis stays whole */
      apply_block(A, &s->body);
      apply_block(A, &s->then);
      apply_block(A, &s->els);
    }
    ctx_vec_push(A->a, &out, s);
  }
  b->stmts = (IlirStmt **)out.items;
  b->n = out.len;
}

/* Does a directive of [s] before [i] register-tile [d]'s operator over the
 * axis that `AXIS.inner` of [d] names? The tile's vectors are that axis. */
static bool tiled_inner(const Schedule *s, int i, const SchedDirective *d) {
  const char *axis = d->axes[0], *dot = strrchr(axis, '.');
  if (!dot || strcmp(dot, ".inner") != 0) return false;
  for (int j = 0; j < i; j++) {
    const SchedDirective *t = &s->dirs[j];
    if (t->verb == SCHED_TILE && t->op && strcmp(t->op->name, d->op->name) == 0 &&
        t->naxes == 2 && strlen(t->axes[1]) == (size_t)(dot - axis) &&
        strncmp(t->axes[1], axis, (size_t)(dot - axis)) == 0)
      return true;
  }
  return false;
}

static bool loop_directive(CtxArena *a, CtxDiag *diag, IlirKernel *k, const Schedule *s,
                           int i) {
  const SchedDirective *d = &s->dirs[i];
  if (d->verb == SCHED_VECTORIZE && tiled_inner(s, i, d)) return true; /* the tile's vectors */
  static const char *const verbs[] = {[SCHED_SPLIT] = "split", [SCHED_UNROLL] = "unroll",
                                      [SCHED_REORDER] = "reorder",
                                      [SCHED_VECTORIZE] = "vectorize"};
  const RaOp *op = d->op;
  Apply A = {a, k, d, op_set(a, k, NULL, &op, 1), d->axes[0], 0};
  if (strcmp(A.axis, "node") == 0) {
    ctx_diag_error(diag, d->span,
                   "'%s' cannot %s the node axis: the nodes of a level are the schedule's "
                   "dynamic batch (tile(node, AXIS) groups them in register tiles)",
                   op->name, verbs[d->verb]);
    return false;
  }
  if (d->verb == SCHED_UNROLL && d->nfactors && d->factors[0] > MAX_UNROLL) {
    ctx_diag_error(diag, d->span, "an unroll factor is at most %d", MAX_UNROLL);
    return false;
  }
  if (d->verb == SCHED_REORDER && (d->naxes != 2 || strcmp(d->axes[1], "node") == 0)) {
    ctx_diag_error(diag, d->span, "'reorder' swaps two loops of one operator, as in: "
                                  "OP: reorder i, j");
    return false;
  }
  apply_block(&A, &k->body);
  if (!A.applied) {
    if (d->verb == SCHED_REORDER)
      ctx_diag_error(diag, d->span, "cannot reorder '%s' of '%s': it needs a nest '%s' { '%s' } "
                     "of one store of distinct, independent elements", d->axes[0], op->name,
                     d->axes[0], d->axes[1]);
    else if (d->verb == SCHED_UNROLL && !d->nfactors)
      ctx_diag_error(diag, d->span, "cannot unroll '%s' of '%s': no loop over it with a "
                     "constant range of at most %d iterations left", A.axis, op->name,
                     MAX_UNROLL);
    else
      ctx_diag_error(diag, d->span, "cannot %s '%s' of '%s': no loop over it with a constant "
                     "range left", verbs[d->verb], A.axis, op->name);
    ctx_diag_note(diag, op->span, "'%s' is defined here", op->name);
    return false;
  }
  return true;
}

/* ---- the plan ------------------------------------------------------------------------- */

enum { MAX_UNROLL_RECURSION = 16 }; /* levels a phase of unroll_recursion may hold */

/* unroll_recursion K / refactor_recursion ([s]'s directive [i]) into [plan];
 * false after an error: a factor over the limit, or the verb given twice. */
static bool recursion_directive(CtxDiag *diag, const Schedule *s, int i, SchedPlan *plan) {
  const SchedDirective *d = &s->dirs[i];
  for (int j = 0; j < i; j++)
    if (s->dirs[j].verb == d->verb) {
      ctx_diag_error(diag, d->span, "a second '%s': a schedule gives it once",
                     d->verb == SCHED_REFACTOR_RECURSION ? "refactor_recursion"
                                                         : "unroll_recursion");
      ctx_diag_note(diag, s->dirs[j].span, "the first is here");
      return false;
    }
  if (d->verb == SCHED_REFACTOR_RECURSION) {
    plan->refactor_recursion = true;
    return true;
  }
  if (d->nfactors != 1 || d->factors[0] < 1 || d->factors[0] > MAX_UNROLL_RECURSION) {
    ctx_diag_error(diag, d->span, "unroll_recursion runs at most %d levels in a phase "
                   "(unroll_recursion 1: a barrier after every level, as without it)",
                   MAX_UNROLL_RECURSION);
    return false;
  }
  plan->unroll_recursion = (int)d->factors[0];
  return true;
}

SchedPlan sched_schedule_plan(CtxDiag *diag, const Schedule *s, unsigned disabled) {
  SchedPlan plan;
  memset(&plan, 0, sizeof plan);
  plan.interchange = !(disabled & RA_OPT_INTERCHANGE); /* a form, not a schedule choice */
  plan.schedule = s;
  bool bare_tile = false; /* a tile directive without an operator: every product's sizes */
  bool row_tile = false;  /* one for the products inside a node */
  for (int i = 0; i < s->ndirs; i++) {
    const SchedDirective *d = &s->dirs[i];
    switch (d->verb) {
    case SCHED_DYNAMIC_BATCH: case SCHED_PERSIST: break;
    case SCHED_SPECIALIZE:
      if (d->naxes == 1 && strcmp(d->axes[0], "arity") == 0)
        plan.arity[plan.narity++] = d->factors[0]; /* sched_check: at most SCHED_MAX_ARITIES */
      else
        plan.specialize_leaf = true;
      break;
    case SCHED_FUSE: plan.fuse_epilogue = true; break;
    case SCHED_HOIST: plan.hoist_invariant = plan.hoist_products = true; break;
    case SCHED_HOIST_INVARIANT: plan.hoist_invariant = true; break;
    case SCHED_HOIST_PRODUCTS: plan.hoist_products = true; break;
    case SCHED_HOIST_LOCAL: plan.hoist_local = true; break;
    case SCHED_DIRECT_RESULTS: plan.direct_results = true; break;
    case SCHED_LEAF_VIEWS: plan.leaf_views = true; break;
    case SCHED_ALL_DEPS: plan.all_deps = true; break;
    case SCHED_SHARE_WEIGHTS: plan.share_weights = true; break;
    case SCHED_BALANCE_LEVELS: plan.balance_levels = true; break;
    case SCHED_DENSE: plan.dense_scratch = true; break;
    case SCHED_TILE: {
      bool level = d->naxes == 2 && strcmp(d->axes[0], "node") == 0;
      bool rows = d->naxes == 2 && !level && strcmp(d->axes[1], "node") != 0 &&
                  (!d->op || d->op->shape.rank >= 2);
      if (!level && !rows) {
        ctx_diag_error(diag, d->span, "the cpu backend tiles a level's products over "
                                      "(node, AXIS) and a matrix operator's own over (ROWS, "
                                      "AXIS): write OP: tile(node, i) by (NB, NO)");
        plan.failed = true;
      } else if (d->factors[0] > ILIR_TILE_MAX_ROWS || d->factors[1] > 256) {
        ctx_diag_error(diag, d->span, "a register tile holds at most %d %s x 256 outputs",
                       ILIR_TILE_MAX_ROWS, level ? "nodes" : "rows");
        plan.failed = true;
      } else if (!level && !d->op) { /* products inside a node */
        plan.row_tile_rows = (int)d->factors[0];
        plan.row_tile_outs = (int)d->factors[1];
        row_tile = true;
      } else if (!level) { /* an operator's own sizes (sched_schedule_sets); rows on */
        if (!row_tile) {
          plan.row_tile_rows = (int)d->factors[0];
          plan.row_tile_outs = (int)d->factors[1];
        }
      } else if (!d->op || !bare_tile) { /* an operator's own sizes: sched_schedule_sets */
        plan.tile_nodes = (int)d->factors[0];
        plan.tile_outs = (int)d->factors[1];
        bare_tile |= !d->op;
      }
      break;
    }
    case SCHED_PARALLEL:
      if (plan.nparallel == SCHED_MAX_PARALLEL) {
        ctx_diag_error(diag, d->span, "at most %d 'parallel' directives", SCHED_MAX_PARALLEL);
        plan.failed = true;
        break;
      }
      plan.parallel[plan.nparallel].op = d->op;
      plan.parallel[plan.nparallel].axis = d->axes[0];
      plan.parallel[plan.nparallel++].span = d->span;
      break;
    case SCHED_UNROLL_RECURSION: case SCHED_REFACTOR_RECURSION:
      plan.failed |= !recursion_directive(diag, s, i, &plan);
      break;
    case SCHED_CACHE: case SCHED_BIND:
      ctx_diag_warning(diag, d->span, "not applied: '%s' is a GPU directive",
                       d->verb == SCHED_CACHE ? "cache" : "bind");
      break;
    default: break; /* the loop directives: sched_schedule_loops */
    }
  }
  /* without a row tile, a node's own products take the level products' tile */
  if (!row_tile && !plan.row_tile_rows)
    plan.row_tile_rows = plan.tile_nodes, plan.row_tile_outs = plan.tile_outs;
  return plan;
}

/* [set] (made when NULL) with the buffers of [ops] and those they read. */
static bool *ops_and_reads(CtxArena *a, const IlirKernel *k, bool *set, const RaOp *const *ops,
                           int nops) {
  bool *mine = op_set(a, k, NULL, ops, nops);
  set = op_set(a, k, set, ops, nops);
  add_reads(k, &k->body, mine, set);
  return set;
}

/* The sizes of [d], `OP: tile(node, AXIS) by (NB, NO)`, for OP's buffers
 * and the products it reads; a later directive wins where two overlap. */
static void own_tile(CtxArena *a, const IlirKernel *k, SchedPlan *plan,
                     const SchedDirective *d) {
  if (d->nfactors != 2) return;
  bool *set = ops_and_reads(a, k, NULL, &d->op, 1);
  if (!plan->tile_nb) {
    plan->tile_nb = CTX_NEW_ARRAY(a, int, k->nbufs);
    plan->tile_no = CTX_NEW_ARRAY(a, int, k->nbufs);
  }
  for (int b = 0; b < k->nbufs; b++)
    if (set[b]) plan->tile_nb[b] = (int)d->factors[0], plan->tile_no[b] = (int)d->factors[1];
}

bool sched_in_set(const SchedPlan *plan, const bool *set, int b) {
  return !set || (b < plan->nsets && set[b]);
}

void sched_schedule_sets(CtxArena *a, const IlirKernel *k, SchedPlan *plan) {
  const Schedule *s = plan->schedule;
  plan->nsets = k->nbufs;
  bool all_hoist = false, all_dense = false, all_tile = false;
  for (int i = 0; i < s->ndirs; i++) {
    const SchedDirective *d = &s->dirs[i];
    bool hoist = d->verb == SCHED_HOIST || d->verb == SCHED_HOIST_INVARIANT;
    all_hoist |= hoist && !d->nops;
    all_dense |= d->verb == SCHED_DENSE && !d->nops;
    all_tile |= d->verb == SCHED_TILE && !d->op;
    if (hoist && d->nops)
      plan->hoist_only = ops_and_reads(a, k, plan->hoist_only, d->ops, d->nops);
    if (d->verb == SCHED_DENSE && d->nops)
      plan->dense_only = op_set(a, k, plan->dense_only, d->ops, d->nops);
    if (d->verb == SCHED_TILE && d->op) {
      plan->tile_only = ops_and_reads(a, k, plan->tile_only, &d->op, 1);
      own_tile(a, k, plan, d);
    }
  }
  /* a directive without operators: every operator (no set) */
  if (all_hoist) plan->hoist_only = NULL;
  if (all_dense) plan->dense_only = NULL;
  if (all_tile) plan->tile_only = NULL;
}

bool sched_schedule_loops(CtxArena *a, CtxDiag *diag, IlirKernel *k, const SchedPlan *plan) {
  const Schedule *s = plan->schedule;
  bool ok = true;
  for (int i = 0; i < s->ndirs; i++) {
    const SchedDirective *d = &s->dirs[i];
    if (d->verb == SCHED_SPLIT || d->verb == SCHED_UNROLL || d->verb == SCHED_REORDER ||
        d->verb == SCHED_VECTORIZE)
      ok &= loop_directive(a, diag, k, s, i);
  }
  return ok;
}

/* ---- parallel: how the threads share the level products ------------------------------ */

typedef struct {
  const IlirKernel *k;
  const bool *ops;  /* the operator's buffers and those it reads; NULL: all */
  const char *axis; /* "node", or the output axis to share */
  int matched;      /* tiles given the share */
  const char *other; /* a tile's output axis that is not [axis] */
} Share;

static void share_block(Share *S, IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind != ILIR_LOOP) continue;
    if (s->loop != ILIR_LOOP_NODES || !s->tile_nodes) {
      share_block(S, &s->body);
      continue;
    }
    IlirTileParts parts;
    if ((S->ops && !stores_into(s, S->ops)) || !ilir_tile_parts(S->k, s, &parts)) continue;
    if (strcmp(S->axis, "node") == 0) {
      s->share = ILIR_SHARE_NODES;
      S->matched++;
    } else if (strcmp(parts.loop[0]->var->name, S->axis) == 0) {
      s->share = ILIR_SHARE_OUTPUTS;
      S->matched++;
    } else {
      S->other = parts.loop[0]->var->name;
    }
  }
}

/* One `[OP:] parallel AXIS` on [k]'s tiles; false after reporting why it
 * cannot apply. */
static bool share_directive(CtxArena *a, CtxDiag *diag, IlirKernel *k, const RaOp *op,
                            const char *axis, CtxSpan span) {
  Share S = {k, op ? ops_and_reads(a, k, NULL, &op, 1) : NULL, axis, 0, NULL};
  share_block(&S, &k->body);
  if (S.matched || strcmp(axis, "node") == 0) return true; /* untiled: by nodes anyway */
  const char *what = op ? ctx_arena_printf(a, "'%s'", op->name) : "no operator";
  if (S.other)
    ctx_diag_error(diag, span, "'%s' is not the output axis of %s (its outputs run over "
                   "'%s')", axis, op ? ctx_arena_printf(a, "the level product of %s", what)
                                     : "a level product", S.other);
  else
    ctx_diag_error(diag, span, "%s: only a tile's outputs can be shared among the threads "
                   "(OP: tile(node, %s) by (NB, NO))",
                   op ? ctx_arena_printf(a, "%s is not a register-tiled level product", what)
                      : "the schedule tiles no level product", axis);
  if (op) ctx_diag_note(diag, op->span, "'%s' is defined here", op->name);
  return false;
}

bool sched_schedule_shares(CtxArena *a, CtxDiag *diag, IlirKernel *k, const SchedPlan *plan) {
  bool ok = true;
  for (int pass = 0; pass < 2; pass++) /* the whole model's first: an operator's wins */
    for (int i = 0; i < plan->nparallel; i++)
      if ((plan->parallel[i].op != NULL) == pass)
        ok &= share_directive(a, diag, k, plan->parallel[i].op, plan->parallel[i].axis,
                              plan->parallel[i].span);
  return ok;
}
