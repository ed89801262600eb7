/* sched_recur.c — the recursion primitives: unroll_recursion K and
 * refactor_recursion (docs/language.md, "Applying a schedule (CPU)").
 *
 * Unroll_recursion K. The levels loop runs in phases of up to K consecutive
 * levels with no barrier between the levels of a phase: a node's
 * computation is followed by its parent's on the same thread without
 * waiting for the team. Which levels may share a phase depends on the batch
 * and the thread count, so the kernel gets a PHASES buffer (ilir.h) that the
 * runtime fills per batch from exactly the rule codegen shares a level's
 * nodes by (runtime/ctxrt_linearize.c, "phases"), and codegen leaves out the barrier
 * after level l where phases[l] is 0. The pass only adds the buffer; the
 * dump shows it and the levels loops' conditional barrier.
 *
 * Refactor_recursion (CORTEX's recursion refactoring). A product of a weight
 * that does not depend on the node with a linear combination of its
 * dependencies' results,
 *
 *   sum(r in [0, R)) W[c + i * s + r] * (res[dep(n, a) * S + off + r] + res[dep(n, b) * S + off + r] + ...)
 *
 * (treelstm's U_iou @ (h0 + h1); U_f @ h0 and U_f @ h1 alike), becomes
 *
 *   P[dep(n, a) * I + i] + P[dep(n, b) * I + i] + ...,
 *   P[m * I + i] = sum(r in [0, R)) W[c + i * s + r] * res[m * S + off + r]
 *
 * with P computed for every node m at the end of its own level, right after
 * its result (a RESULT buffer: the absent dependency's row stays zero, as W
 * times zeros is). The recursion's back edge moves from the children's
 * states to the product: the parent's operator becomes elementwise over
 * the children's rows of P, and the product runs in the children's level,
 * where register tiling computes it with the rest of that level. Every node
 * computes P, leaves and the root included, so the work is one product per
 * node rather than one per edge that reads it; the latency gain, where
 * there is one, is in the shorter chain of dependent products. A product
 * with the same weight block and rows is computed once (U_f h0 and U_f h1
 * share P).
 *
 * On a tree, a P that parents read at one place a only — treefc's W [h0; h1]
 * = W_0 h0 + W_1 h1 makes P0 read at child 0, P1 at child 1 — is computed
 * only for the nodes that are child a (place_products): one product per edge
 * again, none for the root, and a level reads only the halves of W its
 * nodes' places need. treefc B=1 on an Intel host (2 MiB L2), the default
 * plan with refactor_recursion against it, 5 alternating pairs: 0.87x the
 * time at H=512, 0.90x at H=256 (computing both halves for every node had
 * been 1.79x on a Zen 5); at B=10 1.07-1.09x (two half-height tiles a level
 * instead of one), so the default plan leaves it off, but for `ctx run
 * --batch 1 --threads 1`, whose kernel is compiled for batches of one structure and
 * takes it where every product it makes is read at one place, of two or
 * more (driver/pipeline.c, batch_one_kernel; plan->refactored_by_place).
 */
#include "sched/sched_int.h"

#include <string.h>

/* ---- unroll_recursion ------------------------------------------------------------- */

void sched_unroll_recursion(CtxArena *a, IlirKernel *k, int levels) {
  if (levels <= 1 || ilir_find_buf(k, ILIR_BUF_PHASES) >= 0) return;
  ilir_add_buf(a, k, (IlirBuf){.name = "phases", .kind = ILIR_BUF_PHASES, .size = levels,
                               .index = -1, .func = -1});
}

/* ---- refactor_recursion ----------------------------------------------------------- */

enum { MAX_SCOPE = 64, MAX_TERMS = 16, MAX_MADE = 64, MAX_PLACES = 8 };
#define ALL_PLACES (~0u)

typedef struct {
  const IlirVar *var;
  long extent; /* a loop over [0, extent), else 0 */
} Scope;

/* The one store into a SCRATCH buffer, in a loop over [var], when there is
 * exactly one ([count]). */
typedef struct {
  const IlirStmt *store;
  const IlirVar *var;
  int count;
} Def;

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  Def *defs;         /* [k->nbufs] */
  Scope scope[MAX_SCOPE];
  int depth;
  CtxVec made;       /* SchedProduct * */
  unsigned places[MAX_MADE]; /* per product of made, where its readers read it
                                (bit a: at dependency a; ALL_PLACES: anywhere) */
  int store_buf;     /* the store being rewritten */
  int nonlinear_buf; /* a store whose product reads dependencies otherwise, or -1 */
} Refactor;

/* Splits [idx] = dep * S + off + r (a sum in any order) into its parts;
 * [*dep] a load of the DEP buffer not reading r. */
static bool dep_row(const Refactor *R, const IlirExpr *idx, const IlirVar *r,
                    const IlirExpr **dep, long *S, long *off, int *rs) {
  switch (idx->kind) {
  case ILIR_CONST: *off += idx->ival; return true;
  case ILIR_VAR: return idx->var == r && ++*rs == 1;
  case ILIR_BINARY:
    if (idx->op == ILIR_ADD)
      return dep_row(R, idx->a, r, dep, S, off, rs) && dep_row(R, idx->b, r, dep, S, off, rs);
    if (idx->op == ILIR_MUL && idx->b->kind == ILIR_CONST && idx->a->kind == ILIR_LOAD &&
        idx->a->buf == R->k->dep_buf && !*dep && !ilir_uses(idx->a, r)) {
      *dep = idx->a;
      *S = idx->b->ival;
      return true;
    }
    return false;
  default: return false;
  }
}

/* The output loop of W's index [w] (exactly one enclosing loop variable over
 * a constant range, with a positive coefficient) into [*out]. */
static bool weight_form(const Refactor *R, const IlirExpr *w, const IlirVar *r, SchedProduct *p,
                        const Scope **out) {
  if (w->kind != ILIR_LOAD || R->k->bufs[w->buf].kind != ILIR_BUF_PARAM ||
      ilir_coef(w->a, r) != 1)
    return false;
  *out = NULL;
  for (int d = 0; d < R->depth; d++) {
    long c = ilir_coef(w->a, R->scope[d].var);
    if (c == 0) continue;
    if (*out || R->scope[d].extent <= 0 || c < 0) return false;
    *out = &R->scope[d];
    p->stride = c;
  }
  if (!*out || !sched_offset_of(w->a, (*out)->var, r, &p->off)) return false;
  p->param = w->buf;
  p->cols = (*out)->extent;
  return true;
}

static void find_defs(const IlirKernel *k, const IlirBlock *b, const IlirVar *var, Def *defs) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE && k->bufs[s->buf].kind == ILIR_BUF_SCRATCH) {
      defs[s->buf].store = s;
      defs[s->buf].var = var;
      defs[s->buf].count++;
    }
    find_defs(k, &s->body, s->kind == ILIR_LOOP ? s->var : NULL, defs);
    find_defs(k, &s->then, NULL, defs);
    find_defs(k, &s->els, NULL, defs);
  }
}

/* The terms of the sum [x] inside a reduction over [r], each operator that
 * is itself a sum (treegru's s = h0 + h1, read at s[n * S + r]) replaced by
 * its terms at r; how many, which may exceed [cap]. */
static int expand_terms(Refactor *R, IlirExpr *x, const IlirVar *r, IlirExpr **terms, int cap,
                        int depth) {
  IlirExpr *mine[MAX_TERMS];
  int n = ilir_sum_terms(x, mine, MAX_TERMS), out = 0;
  if (n > MAX_TERMS) return cap + 1;
  for (int t = 0; t < n; t++) {
    const IlirExpr *l = mine[t];
    const Def *d = l->kind == ILIR_LOAD ? &R->defs[l->buf] : NULL;
    if (d && d->count == 1 && d->var && depth < 4 &&
        ilir_same_expr(d->store->index, l->a, d->var, r)) {
      IlirExpr *v = ilir_subst(R->a, d->store->value, d->var, ilir_var(R->a, (IlirVar *)r));
      int m = expand_terms(R, v, r, terms + out, cap - out, depth + 1);
      if (m > cap - out) return cap + 1;
      out += m;
    } else {
      if (out >= cap) return cap + 1;
      terms[out++] = mine[t];
    }
  }
  return out;
}

/* Term [l] of the sum a product over [r] multiplies with its weight (at the
 * output loop [out]): a dependency's result row, or a sum over the
 * dependencies of one (*over, childsum's s); its row into [*p] and the
 * dependency's id into [*dep]. */
static bool term_form(const Refactor *R, const IlirExpr *l, const IlirVar *r, const Scope *out,
                      SchedProduct *p, const IlirExpr **dep, const IlirExpr **over) {
  int rs = 0;
  *dep = *over = NULL;
  if (l->kind == ILIR_REDUCE && l->op == ILIR_SUM && !ilir_uses(l->lo, r) &&
      !ilir_uses(l->hi, r)) {
    *over = l;
    l = l->a;
  }
  if (l->kind != ILIR_LOAD || R->k->bufs[l->buf].kind != ILIR_BUF_RESULT ||
      !dep_row(R, l->a, r, dep, &p->row, &p->roff, &rs) || rs != 1 || !*dep ||
      ilir_uses(*dep, out->var))
    return false;
  p->res = l->buf;
  return true;
}

/* The constant a of a read dep[n * K + a] of the node's dependency a, or
 * -1 when [dep] reads another place (a loop over the dependencies). */
static int dep_place(const Refactor *R, const IlirExpr *dep) {
  IlirExpr *atoms[2];
  long coefs[2], a;
  int m = ilir_linear(dep->a, atoms, coefs, 2, &a);
  if (m != 1 || atoms[0]->kind != ILIR_VAR || coefs[0] != R->k->max_deps || a < 0 ||
      a >= R->k->max_deps || a >= MAX_PLACES)
    return -1;
  return (int)a;
}

/* Records that product buffer [buf] is read at dependency [place] (-1: at
 * any). */
static void note_place(Refactor *R, int buf, int place) {
  for (int i = 0; i < R->made.len && i < MAX_MADE; i++)
    if (((const SchedProduct *)R->made.items[i])->out == buf)
      R->places[i] |= place < 0 ? ALL_PLACES : 1u << place;
}

/* The reduction [e] as a sum of reads of P, or NULL when it is not a
 * product of a weight with a sum of dependencies' result rows. */
static IlirExpr *refactored(Refactor *R, IlirExpr *e) {
  if (e->op != ILIR_SUM || e->lo->kind != ILIR_CONST || e->lo->ival != 0 ||
      e->hi->kind != ILIR_CONST || e->a->kind != ILIR_BINARY || e->a->op != ILIR_MUL)
    return NULL;
  for (int side = 0; side < 2; side++) {
    IlirExpr *w = side ? e->a->a : e->a->b, *x = side ? e->a->b : e->a->a;
    SchedProduct p = {0}, each[MAX_TERMS];
    const Scope *out;
    if (!weight_form(R, w, e->var, &p, &out)) continue;
    p.rows = e->hi->ival;
    IlirExpr *terms[MAX_TERMS];
    const IlirExpr *deps[MAX_TERMS], *over[MAX_TERMS];
    int n = expand_terms(R, x, e->var, terms, MAX_TERMS, 0);
    bool ok = n <= MAX_TERMS;
    for (int t = 0; t < n && ok; t++) {
      each[t] = p;
      ok = term_form(R, terms[t], e->var, out, &each[t], &deps[t], &over[t]);
    }
    if (!ok) continue;
    IlirExpr *sum = NULL;
    for (int t = 0; t < n; t++) {
      int buf = sched_product_buffer(R->a, R->k, &R->made, &each[t], "refactored");
      note_place(R, buf, over[t] ? -1 : dep_place(R, deps[t]));
      IlirExpr *at = ilir_binary(R->a, ILIR_ADD,
                                 ilir_binary(R->a, ILIR_MUL, (IlirExpr *)deps[t],
                                             ilir_const_i(R->a, p.cols)),
                                 ilir_var(R->a, (IlirVar *)out->var));
      IlirExpr *read = ilir_load(R->a, R->k, buf, at);
      if (over[t])
        read = ilir_reduce(R->a, ILIR_SUM, over[t]->var, over[t]->lo, over[t]->hi, read);
      sum = sum ? ilir_binary(R->a, ILIR_ADD, sum, read) : read;
    }
    return sum;
  }
  return NULL;
}

/* Does [e] read a RESULT row through the DEP buffer? */
static bool reads_deps(const IlirKernel *k, const IlirExpr *e) {
  if (!e) return false;
  if (e->kind == ILIR_LOAD && k->bufs[e->buf].kind == ILIR_BUF_RESULT &&
      ilir_reads(e->a, k->dep_buf))
    return true;
  return reads_deps(k, e->a) || reads_deps(k, e->b) || reads_deps(k, e->c) ||
         reads_deps(k, e->lo) || reads_deps(k, e->hi);
}

static IlirExpr *refactor_expr(Refactor *R, IlirExpr *e) {
  if (!e) return NULL;
  if (e->kind == ILIR_REDUCE) {
    IlirExpr *p = R->depth < MAX_SCOPE ? refactored(R, e) : NULL;
    if (p) return p;
    if (e->op == ILIR_SUM && e->a->kind == ILIR_BINARY && e->a->op == ILIR_MUL &&
        reads_deps(R->k, e->a) && R->nonlinear_buf < 0)
      R->nonlinear_buf = R->store_buf;
    if (R->depth < MAX_SCOPE) {
      R->scope[R->depth++] = (Scope){e->var, 0};
      e->a = refactor_expr(R, e->a);
      R->depth--;
    }
    return e;
  }
  e->a = refactor_expr(R, e->a);
  e->b = refactor_expr(R, e->b);
  e->c = refactor_expr(R, e->c);
  return e;
}

static void refactor_block(Refactor *R, IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      R->store_buf = s->buf;
      s->value = refactor_expr(R, s->value);
    } else if (s->kind == ILIR_IF) {
      refactor_block(R, &s->then);
      refactor_block(R, &s->els);
    } else if (R->depth < MAX_SCOPE) {
      bool fixed = s->lo->kind == ILIR_CONST && s->lo->ival == 0 && s->hi->kind == ILIR_CONST;
      R->scope[R->depth++] = (Scope){s->var, fixed ? s->hi->ival : 0};
      refactor_block(R, &s->body);
      R->depth--;
    }
  }
}

/* Is [m] a single bit? */
static bool one_place(unsigned m) { return m && !(m & (m - 1)); }

/* After each node loop of each levels loop of [R]'s kernel, the products of
 * R->made read at one place a only, in a loop over the level's nodes that
 * are dependency a of their parent (the linearizer's position groups, an
 * ARITY_END buffer of size -1 - a for each place, in ascending order); the
 * other products in the node loop itself (sched_add_products). Each thread
 * takes the nodes of its own share of the level (team_lo), which it computed
 * the results of. Only on trees (one parent per node) and without arity
 * groups (whose buffers would follow these in the table); false when it does
 * not apply. */
static bool place_products(Refactor *R, const SchedPlan *plan) {
  CtxArena *a = R->a;
  IlirKernel *k = R->k;
  unsigned used = 0;
  for (int i = 0; i < R->made.len && i < MAX_MADE; i++)
    if (one_place(R->places[i])) used |= R->places[i];
  if (!k->tree || plan->narity || R->made.len > MAX_MADE || !used) return false;
  CtxVec everywhere = {0};
  for (int i = 0; i < R->made.len; i++)
    if (!one_place(R->places[i])) ctx_vec_push(a, &everywhere, R->made.items[i]);
  if (everywhere.len) sched_add_products(a, k, &everywhere);
  int ends[MAX_PLACES];
  for (int p = 0; p < MAX_PLACES; p++)
    ends[p] = used >> p & 1 ? sched_group_end(a, k, -1 - p) : -1;
  for (int i = 0; i < k->body.n; i++) {
    IlirStmt *lv = k->body.stmts[i];
    if (lv->kind != ILIR_LOOP || lv->loop != ILIR_LOOP_LEVELS) continue;
    CtxVec body = {0};
    for (int j = 0; j < lv->body.n; j++) {
      IlirStmt *nodes = lv->body.stmts[j];
      ctx_vec_push(a, &body, nodes);
      if (nodes->kind != ILIR_LOOP || nodes->loop != ILIR_LOOP_NODES) continue;
      IlirExpr *from = nodes->lo;
      for (int p = 0; p < MAX_PLACES; p++) {
        if (ends[p] < 0) continue;
        CtxVec prods = {0};
        for (int m = 0; m < R->made.len; m++)
          if (R->places[m] == 1u << p)
            ctx_vec_push(a, &prods, sched_product_loop(a, k, R->made.items[m], nodes->var));
        IlirExpr *end = ilir_load(a, k, ends[p], ilir_var(a, lv->var));
        IlirStmt *loop = ilir_loop(a, nodes->var, from, end, ILIR_LOOP_NODES,
                                   (IlirBlock){(IlirStmt **)prods.items, prods.len});
        loop->team_lo = nodes->lo, loop->team_hi = nodes->hi;
        ctx_vec_push(a, &body, loop);
        from = end;
      }
    }
    lv->body = (IlirBlock){(IlirStmt **)body.items, body.len};
  }
  return true;
}

/* The operator of the model that buffer [b] holds, or NULL. */
static const RaOp *buf_op(const RaProgram *p, const IlirBuf *b) {
  for (int f = 0; p && f < p->nfuncs; f++)
    for (int o = 0; o < p->funcs[f].nops; o++)
      if (strcmp(p->funcs[f].ops[o]->name, b->name) == 0) return p->funcs[f].ops[o];
  return NULL;
}

/* The error when nothing can be refactored, with a note at the operator that
 * reads the dependencies otherwise (or at the model's first operator). */
static void nothing_to_refactor(CtxDiag *diag, const IlirKernel *k, const SchedPlan *plan,
                                const SchedDirective *d, int nonlinear_buf) {
  const RaProgram *p = plan->schedule ? plan->schedule->program : NULL;
  const RaOp *op = nonlinear_buf >= 0 ? buf_op(p, &k->bufs[nonlinear_buf]) : NULL;
  if (op) {
    ctx_diag_error(diag, d->span, "nothing to refactor: '%s' reads the dependencies' "
                   "results, but not as a weight times a sum of them (a product of them with "
                   "each other, or of a nonlinear function of them)", op->name);
    ctx_diag_note(diag, op->span, "'%s' is defined here", op->name);
    return;
  }
  ctx_diag_error(diag, d->span, "nothing to refactor: no product of a weight with a sum of "
                 "the dependencies' results%s", plan->hoist_products
                     ? " is left (hoist computes the products read through a loop over "
                       "the dependencies once per node already)"
                     : "");
  for (int f = 0; p && f < p->nfuncs; f++)
    if (p->funcs[f].nops) {
      ctx_diag_note(diag, p->funcs[f].ops[0]->span, "the recursion of model '%s' is "
                    "defined here", p->name);
      break;
    }
}

bool sched_refactor_recursion(CtxArena *a, CtxDiag *diag, IlirKernel *k, SchedPlan *plan) {
  Refactor R;
  memset(&R, 0, sizeof R);
  R.a = a;
  R.k = k;
  R.nonlinear_buf = -1;
  R.defs = CTX_NEW_ARRAY(a, Def, k->nbufs);
  find_defs(k, &k->body, NULL, R.defs);
  refactor_block(&R, &k->body);
  if (R.made.len) {
    bool by_place = place_products(&R, plan);
    if (!by_place) sched_add_products(a, k, &R.made);
    unsigned places = 0;
    for (int i = 0; i < R.made.len && by_place; i++) {
      by_place = one_place(R.places[i]);
      places |= R.places[i];
    }
    plan->refactored_by_place = by_place && !one_place(places);
    return true;
  }
  const Schedule *s = plan->schedule;
  for (int i = 0; s && i < s->ndirs; i++)
    if (s->dirs[i].verb == SCHED_REFACTOR_RECURSION) {
      nothing_to_refactor(diag, k, plan, &s->dirs[i], R.nonlinear_buf);
      return false;
    }
  /* a plan made without a schedule (ctx tune's) fails the same way */
  ctx_diag_error(diag, (CtxSpan){0}, "nothing to refactor in kernel %s", k->name);
  return false;
}
