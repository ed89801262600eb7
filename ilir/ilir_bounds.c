/* ilir_bounds.c — bounds inference: the range of every buffer index, and the
 * check that each lies inside its buffer.
 *
 * An index is inferred as  base * scale + [lo, hi]  where base is nothing, a
 * node id (the variable of a nodes loop: < num_nodes), a dependency's node id
 * (a load from dep: <= num_nodes, the absent one's row being the last) or a
 * level (the variable of a levels loop: < num_levels), and [lo, hi] an
 * interval from the bounds of the loops and reductions around it. A row of a
 * per-node buffer must be read at a node or dependency with scale = the row's
 * size and [lo, hi] inside the row; parameters at constant ranges inside
 * them; levels[l] and levels[l + 1] at a level. Inside `select(v < c, ..)` and
 * `if v < c` (and the other comparisons of a variable with a constant) each
 * arm sees v's interval narrowed accordingly. Indices computed from input
 * values (word ids) are checked when the input is validated, not here.
 *
 * Stores are stricter: only into a row of the node of the innermost nodes
 * loop, so that the threads sharing a level never write the same row and a
 * kernel never writes outside a nodes loop (which every thread would run).
 * The one exception is an INVARIANT buffer: written only inside a parallel
 * loop over [0, 1) outside every nodes loop, which one thread runs.
 */
#include "ilir/ilir_int.h"

#include <stdlib.h>

/* NODE: a node id; DEP: a dependency's; LEVEL: a level; LSTART: levels[l], the
 * level's first node; LNODE: a node id minus its level's first (the row of a
 * level scratch buffer); INPUT: computed from input values. */
typedef enum {
  BASE_NONE, BASE_NODE, BASE_DEP, BASE_LEVEL, BASE_LSTART, BASE_LNODE, BASE_INPUT, BASE_UNKNOWN
} Base;

typedef struct {
  Base base;
  long scale, lo, hi;
} Range;

typedef struct {
  long lo, hi;  /* a variable's interval (BASE_NONE) */
  Base base;    /* or what it is */
} VarRange;

typedef struct {
  const IlirKernel *k;
  CtxDiag *diag;
  VarRange *vars;       /* [nvars]; base BASE_UNKNOWN when not in scope */
  const IlirVar *node;  /* the innermost nodes loop's variable */
  bool once;            /* inside a parallel loop over [0, 1) */
  bool inner;           /* inside a levels loop that starts after level 0: the
                           kernel has two levels or more when it runs */
  bool ok;
} Bounds;

static const Range unknown = {BASE_UNKNOWN, 0, 0, 0};

static Range interval(long lo, long hi) { return (Range){BASE_NONE, 0, lo, hi}; }

static void fail(Bounds *B, const char *what, const char *buf) {
  if (B->ok) CTX_ICE(B->diag, "ILIR of '%s': %s '%s'", B->k->name, what, buf);
  B->ok = false;
}

static Range mul(Range x, long c) {
  if (x.base == BASE_UNKNOWN || x.base == BASE_INPUT) return x;
  Range r = {x.base, x.scale * c, x.lo * c, x.hi * c};
  if (c < 0) r.lo = x.hi * c, r.hi = x.lo * c;
  return r;
}

static Range add(Range x, Range y, int sign) {
  if (x.base == BASE_UNKNOWN || y.base == BASE_UNKNOWN) return unknown;
  if (x.base == BASE_INPUT || y.base == BASE_INPUT) return (Range){BASE_INPUT, 0, 0, 0};
  if (sign < 0) y = mul(y, -1);
  Range r = x.base != BASE_NONE ? x : y;
  if (x.base != BASE_NONE && y.base != BASE_NONE) { /* node - levels[l]: a level's row */
    bool lnode = (x.base == BASE_NODE && y.base == BASE_LSTART) ||
                 (x.base == BASE_LSTART && y.base == BASE_NODE);
    if (!lnode || x.scale != -y.scale) return unknown;
    r = (Range){BASE_LNODE, x.base == BASE_NODE ? x.scale : y.scale, 0, 0};
  }
  r.lo = x.lo + y.lo;
  r.hi = x.hi + y.hi;
  return r;
}

static Range range_of(Bounds *B, const IlirExpr *e);

static Range load_range(Bounds *B, const IlirExpr *e) {
  const IlirKernel *k = B->k;
  switch (k->bufs[e->buf].kind) {
  case ILIR_BUF_DEP: return (Range){BASE_DEP, 1, 0, 0};
  case ILIR_BUF_NUM_DEPS: return interval(0, k->max_deps);
  case ILIR_BUF_IVALUES: return (Range){BASE_INPUT, 0, 0, 0};
  case ILIR_BUF_LEVELS: {
    Range at = range_of(B, e->a);
    bool first = at.base == BASE_LEVEL && at.scale == 1 && at.lo == 0 && at.hi == 0;
    return first ? (Range){BASE_LSTART, 1, 0, 0} : unknown;
  }
  default: return unknown;
  }
}

static Range range_of(Bounds *B, const IlirExpr *e) {
  switch (e->kind) {
  case ILIR_CONST: return interval(e->ival, e->ival);
  case ILIR_VAR: {
    const VarRange *v = &B->vars[e->var->id];
    if (v->base == BASE_NONE) return interval(v->lo, v->hi);
    if (v->base == BASE_NODE || v->base == BASE_LEVEL) return (Range){v->base, 1, 0, 0};
    return unknown;
  }
  case ILIR_LOAD: return load_range(B, e);
  case ILIR_BINARY:
    if (e->op == ILIR_ADD || e->op == ILIR_SUB)
      return add(range_of(B, e->a), range_of(B, e->b), e->op == ILIR_ADD ? 1 : -1);
    if (e->op == ILIR_MUL && e->b->kind == ILIR_CONST) return mul(range_of(B, e->a), e->b->ival);
    if (e->op == ILIR_MUL && e->a->kind == ILIR_CONST) return mul(range_of(B, e->b), e->a->ival);
    return unknown;
  default: return unknown;
  }
}

/* Is [r] inside a buffer of [size] elements ([per_node]: a row of [size] at
 * a node or dependency)? */
static bool fits(Range r, long size, bool per_node) {
  if (r.base == BASE_INPUT) return !per_node; /* a word id: validated before the run */
  if (per_node)
    return (r.base == BASE_NODE || r.base == BASE_DEP) && r.scale == size && r.lo >= 0 &&
           r.hi < size;
  return r.base == BASE_NONE && r.lo >= 0 && r.hi < size;
}

static void check_access(Bounds *B, int buf, const IlirExpr *index, bool store) {
  const IlirBuf *b = &B->k->bufs[buf];
  Range r = range_of(B, index);
  bool ok;
  switch (b->kind) {
  case ILIR_BUF_PARAM: case ILIR_BUF_PACKED: case ILIR_BUF_INVARIANT:
    ok = fits(r, b->size, false);
    break;
  case ILIR_BUF_LEVELS: /* levels[l], levels[l + 1]; levels[1] (where the leaves end) */
    ok = (r.base == BASE_LEVEL && r.scale == 1 && r.lo >= 0 && r.hi <= 1) ||
         (B->inner && r.base == BASE_NONE && r.lo >= 0 && r.hi <= 1);
    break;
  case ILIR_BUF_ARITY_END: ok = r.base == BASE_LEVEL && r.scale == 1 && r.lo == 0 && r.hi == 0; break;
  case ILIR_BUF_DEP:
    ok = r.base == BASE_NODE && r.scale == B->k->max_deps && r.lo >= 0 && r.hi < r.scale;
    break;
  case ILIR_BUF_NUM_DEPS: ok = r.base == BASE_NODE && r.scale == 1 && r.lo == 0 && r.hi == 0; break;
  case ILIR_BUF_VALUES: case ILIR_BUF_IVALUES:
    ok = fits(r, B->k->values_per_node, true);
    break;
  case ILIR_BUF_LEVEL_SCRATCH:
    ok = r.base == BASE_LNODE && r.scale == b->size && r.lo >= 0 && r.hi < b->size;
    break;
  default: ok = fits(r, b->size, true); break;
  }
  if (!ok) fail(B, store ? "a store outside the buffer" : "a load outside the buffer", b->name);
  if (store && ok && b->kind == ILIR_BUF_INVARIANT) {
    if (!B->once || B->node) fail(B, "a store outside a parallel loop over [0, 1) into", b->name);
  } else if (store && ok && ((r.base != BASE_NODE && r.base != BASE_LNODE) || !B->node))
    fail(B, "a store outside the row of the nodes loop's node into", b->name);
}

/* Narrows the interval of v in `v OP c` (or `c OP v`) to where [cond] is
 * [truth]; returns false (nothing narrowed) for other conditions. */
static bool narrow(Bounds *B, const IlirExpr *cond, bool truth, VarRange *saved,
                   const IlirVar **var) {
  if (cond->kind != ILIR_BINARY || cond->op < ILIR_LT || cond->op > ILIR_GE) return false;
  const IlirExpr *v = cond->a, *c = cond->b;
  int op = cond->op;
  if (v->kind == ILIR_CONST && c->kind != ILIR_CONST) { /* c OP v: v OP' c */
    const IlirExpr *t = v;
    v = c, c = t;
    op = op == ILIR_LT ? ILIR_GT : op == ILIR_LE ? ILIR_GE : op == ILIR_GT ? ILIR_LT : ILIR_LE;
  }
  if (c->kind != ILIR_CONST || c->type != ILIR_I64) return false;
  long off = 0; /* v + off OP c (a slice of a concatenation: i + 1 < 3) */
  if (v->kind == ILIR_BINARY && (v->op == ILIR_ADD || v->op == ILIR_SUB)) {
    const IlirExpr *x = v->a, *k = v->b;
    if (v->op == ILIR_ADD && x->kind == ILIR_CONST) x = v->b, k = v->a;
    if (k->kind != ILIR_CONST || k->type != ILIR_I64) return false;
    off = v->op == ILIR_ADD ? k->ival : -k->ival;
    v = x;
  }
  if (v->kind != ILIR_VAR) return false;
  VarRange *r = &B->vars[v->var->id];
  if (r->base != BASE_NONE) return false;
  if (!truth) /* not (v < c) is v >= c, ... */
    op = op == ILIR_LT ? ILIR_GE : op == ILIR_LE ? ILIR_GT : op == ILIR_GT ? ILIR_LE : ILIR_LT;
  *saved = *r;
  *var = v->var;
  long k = c->ival - off;
  if (op == ILIR_LT && r->hi > k - 1) r->hi = k - 1;
  if (op == ILIR_LE && r->hi > k) r->hi = k;
  if (op == ILIR_GT && r->lo < k + 1) r->lo = k + 1;
  if (op == ILIR_GE && r->lo < k) r->lo = k;
  return true;
}

static void walk_expr(Bounds *B, const IlirExpr *e);

/* [e] where [cond] is [truth]. */
static void walk_under(Bounds *B, const IlirExpr *cond, bool truth, const IlirExpr *e) {
  VarRange saved;
  const IlirVar *v = NULL;
  bool narrowed = narrow(B, cond, truth, &saved, &v);
  walk_expr(B, e);
  if (narrowed) B->vars[v->id] = saved;
}

static void walk_expr(Bounds *B, const IlirExpr *e) {
  if (!e || !B->ok) return;
  if (e->kind == ILIR_SELECT) {
    walk_expr(B, e->c);
    walk_under(B, e->c, true, e->a);
    walk_under(B, e->c, false, e->b);
    return;
  }
  if (e->kind == ILIR_LOAD) check_access(B, e->buf, e->a, false);
  if (e->kind == ILIR_REDUCE) {
    Range lo = range_of(B, e->lo), hi = range_of(B, e->hi);
    VarRange saved = B->vars[e->var->id];
    bool fixed = lo.base == BASE_NONE && hi.base == BASE_NONE;
    B->vars[e->var->id] = fixed ? (VarRange){lo.lo, hi.hi - 1, BASE_NONE}
                                : (VarRange){0, 0, BASE_UNKNOWN};
    walk_expr(B, e->a);
    B->vars[e->var->id] = saved;
    walk_expr(B, e->lo), walk_expr(B, e->hi);
    return;
  }
  walk_expr(B, e->a), walk_expr(B, e->b), walk_expr(B, e->c);
}

static void walk_block(Bounds *B, const IlirBlock *blk) {
  for (int i = 0; i < blk->n && B->ok; i++) {
    const IlirStmt *s = blk->stmts[i];
    if (s->kind == ILIR_STORE) {
      walk_expr(B, s->index), walk_expr(B, s->value);
      if (B->ok) check_access(B, s->buf, s->index, true);
    } else if (s->kind == ILIR_IF) {
      walk_expr(B, s->cond);
      for (int arm = 0; arm < 2; arm++) {
        VarRange saved;
        const IlirVar *v = NULL;
        bool narrowed = narrow(B, s->cond, arm == 0, &saved, &v);
        walk_block(B, arm == 0 ? &s->then : &s->els);
        if (narrowed) B->vars[v->id] = saved;
      }
    } else {
      walk_expr(B, s->lo), walk_expr(B, s->hi);
      VarRange saved = B->vars[s->var->id];
      const IlirVar *node = B->node;
      bool once = B->once, inner = B->inner;
      Range lo = range_of(B, s->lo), hi = range_of(B, s->hi);
      if (s->loop == ILIR_LOOP_PARALLEL)
        B->once = lo.base == BASE_NONE && hi.base == BASE_NONE && lo.lo == 0 && hi.hi == 1;
      if (s->loop == ILIR_LOOP_NODES) {
        B->vars[s->var->id] = (VarRange){0, 0, BASE_NODE};
        B->node = s->var;
      } else if (s->loop == ILIR_LOOP_LEVELS) {
        B->vars[s->var->id] = (VarRange){0, 0, BASE_LEVEL};
        B->inner = !(lo.base == BASE_NONE && lo.lo == 0);
      } else if (lo.base == BASE_NONE && hi.base == BASE_NONE) {
        B->vars[s->var->id] = (VarRange){lo.lo, hi.hi - 1, BASE_NONE};
      } else {
        B->vars[s->var->id] = (VarRange){0, 0, BASE_UNKNOWN};
      }
      walk_block(B, &s->body);
      B->vars[s->var->id] = saved;
      B->node = node;
      B->once = once, B->inner = inner;
    }
  }
}

bool ilir_check_bounds(const IlirKernel *k, CtxDiag *diag) {
  Bounds B = {k, diag, calloc((size_t)k->nvars + 1, sizeof(VarRange)), NULL, false, false, true};
  if (!B.vars) ctx_oom();
  for (int i = 0; i <= k->nvars; i++) B.vars[i].base = BASE_UNKNOWN;
  walk_block(&B, &k->body);
  free(B.vars);
  return B.ok;
}
