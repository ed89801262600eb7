/* sched_views.c — the leaves' parameter rows read where they are
 * (leaf-views).
 *
 * A leaf that returns a parameter's row — mvrnn's `return (Emb[words[n]],
 * EmbM[words[n]])` — copies it into its result row at the leaf level
 * (specialize-leaf's loop over level 0, after direct-results):
 *
 *   for i, j { R[n * RS + off + x(i, j)] = P[ivalues[n] * S + x(i, j)] }
 *
 * x covering [0, S) once. The parents read that component at their
 * dependencies' rows, R[d * RS + off + y] with d = dep[...]. Where those are
 * its only reads (but the leaf level's own, which read P directly then) and
 * the kernel's output lies elsewhere in the row, the copy goes and each such
 * read becomes
 *
 *   d < levels[1] ? P[ivalues[d] * S + y] : R[d * RS + off + y]
 *
 * The leaves are the nodes of level 0, ids [0, levels[1]); the absent
 * dependency, num_nodes, is not among them (its zero row is read as before).
 * Codegen chooses the row's pointer once and loads through it
 * (cg_emit.c, cg_view_ptr): such a read vectorizes and register-tiles as a
 * plain load does. mvrnn H=128 stores 64 KiB less per leaf, and loads
 * them once, from the parameter, instead of twice.
 *
 * A rewrite that would leave a register tile in a form codegen does not take
 * is not made (each view is tried on its own, as direct-results does). */
#include "sched/sched_int.h"

#include <string.h>

enum { MAX_VIEWS = 8, MAX_NEST = 4, MAX_ATOMS = 16 };

/* Where the walk is: outside the levels, in the leaf level, in the others. */
typedef enum { OUTSIDE, LEAVES, INNER } Where;

/* How an access of a view's buffer meets it (classify). */
typedef enum { CANNOT = -1, ELSEWHERE, OWN_ROW, DEP_ROW } Meets;

typedef struct {
  int res;              /* the RESULT buffer */
  long off, size;       /* its component [off, off + size) of a row */
  int param;            /* the parameter whose rows the leaves copy */
  IlirExpr *word;       /* the copy's row of P: ivalues[...] at the leaf's node */
  const IlirVar *node;  /* that node */
  const IlirStmt *store; /* the copy's store */
  bool bad;
} View;

typedef struct {
  CtxArena *a;
  IlirKernel *k;
  View view[MAX_VIEWS];
  int nviews;
  long *lo, *hi;        /* per variable: its range while in scope */
  bool *known;
  const IlirVar *node;  /* the innermost nodes loop's variable */
  Where level;
  int only;             /* the view being rewritten */
} Views;

/* What entering a loop or a reduction over [var] changes, to restore. */
typedef struct {
  int id;
  Where level;
  bool known;
  long lo, hi;
  const IlirVar *node;
} Scope;

/* [var] in [lo, hi) from here on (known when both are constants). */
static Scope enter(Views *V, const IlirVar *var, const IlirExpr *lo, const IlirExpr *hi) {
  int id = var->id;
  Scope sc = {id, V->level, V->known[id], V->lo[id], V->hi[id], V->node};
  V->known[id] = lo->kind == ILIR_CONST && hi->kind == ILIR_CONST;
  V->lo[id] = lo->ival, V->hi[id] = hi->ival - 1;
  return sc;
}

static void leave(Views *V, Scope sc) {
  V->known[sc.id] = sc.known, V->lo[sc.id] = sc.lo, V->hi[sc.id] = sc.hi;
  V->node = sc.node, V->level = sc.level;
}

static bool leaf_level(const IlirStmt *s);

/* enter() for the loop [s], also its nodes variable or its levels. */
static Scope enter_loop(Views *V, const IlirStmt *s) {
  Scope sc = enter(V, s->var, s->lo, s->hi);
  if (s->loop == ILIR_LOOP_NODES) V->node = s->var;
  if (s->loop == ILIR_LOOP_LEVELS) V->level = leaf_level(s) ? LEAVES : INNER;
  return sc;
}

/* Is [s] the leaf level: a levels loop over [0, (num_levels > 0))? */
static bool leaf_level(const IlirStmt *s) {
  const IlirExpr *hi = s->hi;
  return s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS && s->lo->kind == ILIR_CONST &&
         s->lo->ival == 0 && hi->kind == ILIR_BINARY && hi->op == ILIR_GT &&
         hi->a->kind == ILIR_ARG && hi->a->ival == 1 && hi->b->kind == ILIR_CONST &&
         hi->b->ival == 0;
}

/* Is [s], in the leaf level's nodes loop over [n], a copy of a parameter row
 * into a result row's component? Fills [v]. */
static bool row_copy(const IlirKernel *k, const IlirStmt *s, const IlirVar *n, View *v) {
  const IlirVar *vars[MAX_NEST];
  long extent[MAX_NEST];
  int nest = 0;
  while (s->kind == ILIR_LOOP) {
    if (s->loop != ILIR_LOOP_SERIAL || s->tile_nodes || s->body.n != 1 || nest == MAX_NEST ||
        s->lo->kind != ILIR_CONST || s->lo->ival != 0 || s->hi->kind != ILIR_CONST)
      return false;
    vars[nest] = s->var, extent[nest++] = s->hi->ival;
    s = s->body.stmts[0];
  }
  if (s->kind != ILIR_STORE || k->bufs[s->buf].kind != ILIR_BUF_RESULT ||
      s->value->kind != ILIR_LOAD || k->bufs[s->value->buf].kind != ILIR_BUF_PARAM)
    return false;
  IlirExpr *ia[MAX_ATOMS], *va[MAX_ATOMS];
  long ic[MAX_ATOMS], vc[MAX_ATOMS], off, vconst;
  int ni = ilir_linear(s->index, ia, ic, MAX_ATOMS, &off);
  int nv = ilir_linear(s->value->a, va, vc, MAX_ATOMS, &vconst);
  /* R[n * RS + off + x] = P[word * S + x]: nothing else in either index */
  if (ni != nest + 1 || nv != nest + 1 || vconst != 0) return false;
  long RS = k->bufs[s->buf].size, S = 0;
  IlirExpr *word = NULL;
  for (int i = 0; i < nv; i++)
    if (va[i]->kind == ILIR_LOAD && va[i]->buf == k->ivalues_buf && ilir_uses(va[i], n))
      word = va[i], S = vc[i];
  if (!word || ilir_coef(s->index, n) != RS) return false;
  /* x the same on both sides, covering [0, S) once: the variables'
   * coefficients, in increasing order, 1, e1, e1 * e2, ... */
  long coef[MAX_NEST], want = 1;
  for (int d = 0; d < nest; d++) {
    coef[d] = ilir_coef(s->index, vars[d]);
    if (coef[d] != ilir_coef(s->value->a, vars[d])) return false;
  }
  bool used[MAX_NEST] = {false};
  for (int step = 0; step < nest; step++) {
    int found = -1;
    for (int d = 0; d < nest; d++)
      if (!used[d] && coef[d] == want) found = d;
    if (found < 0) return false;
    used[found] = true;
    want *= extent[found];
  }
  if (want != S || off < 0 || off + S > RS) return false;
  *v = (View){s->buf, off, S, s->value->buf, word, n, s, false};
  return true;
}

static void find_copies(Views *V, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind != ILIR_LOOP) continue;
    if (leaf_level(s)) {
      for (int j = 0; j < s->body.n; j++) {
        const IlirStmt *nodes = s->body.stmts[j];
        if (nodes->kind != ILIR_LOOP || nodes->loop != ILIR_LOOP_NODES) continue;
        for (int c = 0; c < nodes->body.n && V->nviews < MAX_VIEWS; c++)
          if (row_copy(V->k, nodes->body.stmts[c], nodes->var, &V->view[V->nviews]))
            V->nviews++;
      }
    }
  }
}

/* The range [*lo, *hi] of konst + the atoms but [skip], all variables in
 * scope with known ranges; false otherwise. */
static bool rest_range(const Views *V, IlirExpr **atoms, const long *coefs, int n, int skip,
                       long konst, long *lo, long *hi) {
  *lo = *hi = konst;
  for (int i = 0; i < n; i++) {
    if (i == skip) continue;
    if (atoms[i]->kind != ILIR_VAR || !V->known[atoms[i]->var->id]) return false;
    long a = coefs[i] * V->lo[atoms[i]->var->id], b = coefs[i] * V->hi[atoms[i]->var->id];
    *lo += a < b ? a : b;
    *hi += a < b ? b : a;
  }
  return true;
}

/* How the access of [v]'s buffer at [index] meets view [v]: not at all, at
 * the node's own row or at a dependency's (*row: its atom), or in a way the
 * view cannot serve. */
static Meets classify(const Views *V, const View *v, IlirExpr *index, IlirExpr **row) {
  IlirExpr *atoms[MAX_ATOMS];
  long coefs[MAX_ATOMS], konst, lo, hi;
  int n = ilir_linear(index, atoms, coefs, MAX_ATOMS, &konst);
  long RS = V->k->bufs[v->res].size;
  int at = -1;
  for (int i = 0; i < n; i++)
    if (coefs[i] == RS) at = i;
  if (at < 0 || !rest_range(V, atoms, coefs, n, at, konst, &lo, &hi)) return CANNOT;
  if (hi < v->off || lo >= v->off + v->size) return ELSEWHERE;
  if (lo < v->off || hi >= v->off + v->size) return CANNOT;
  *row = atoms[at];
  if (atoms[at]->kind == ILIR_VAR && atoms[at]->var == V->node) return OWN_ROW;
  if (atoms[at]->kind == ILIR_LOAD && atoms[at]->buf == V->k->dep_buf) return DEP_ROW;
  return CANNOT;
}

/* Marks the views the access of [buf] at [index] rules out: a load, or the
 * store [st]. */
static void check_access(Views *V, int buf, IlirExpr *index, const IlirStmt *st) {
  for (int i = 0; i < V->nviews; i++) {
    View *v = &V->view[i];
    if (v->res != buf || v->bad) continue;
    IlirExpr *row;
    Meets how = classify(V, v, index, &row);
    if (how == ELSEWHERE) continue;
    if (st) /* a store: the copy itself, or an inner node's own row */
      v->bad |= !(st == v->store || (V->level == INNER && how == OWN_ROW));
    else /* a load: the leaf's own row at the leaf level, a row in the inner levels */
      v->bad |= !((V->level == LEAVES && how == OWN_ROW) ||
                  (V->level == INNER && how != CANNOT));
  }
}

static void scan_expr(Views *V, IlirExpr *e) {
  if (!e) return;
  if (e->kind == ILIR_REDUCE) {
    Scope sc = enter(V, e->var, e->lo, e->hi);
    scan_expr(V, e->a);
    leave(V, sc);
    return;
  }
  if (e->kind == ILIR_LOAD) check_access(V, e->buf, e->a, NULL);
  scan_expr(V, e->a), scan_expr(V, e->b), scan_expr(V, e->c);
  scan_expr(V, e->lo), scan_expr(V, e->hi);
}

static void scan(Views *V, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) {
      scan_expr(V, s->index), scan_expr(V, s->value);
      check_access(V, s->buf, s->index, s);
    } else if (s->kind == ILIR_IF) {
      scan_expr(V, s->cond);
      scan(V, &s->then), scan(V, &s->els);
    } else {
      scan_expr(V, s->lo), scan_expr(V, s->hi);
      Scope sc = enter_loop(V, s);
      scan(V, &s->body);
      leave(V, sc);
    }
  }
}

/* P[word(at node [row]) * S + (index - row * RS - off)] */
static IlirExpr *param_load(Views *V, const View *v, IlirExpr *index, IlirExpr *row) {
  CtxArena *a = V->a;
  IlirExpr *word = ilir_subst(a, v->word, v->node, row);
  IlirExpr *base = ilir_binary(a, ILIR_ADD, ilir_binary(a, ILIR_MUL, row,
                                                        ilir_const_i(a, V->k->bufs[v->res].size)),
                               ilir_const_i(a, v->off));
  IlirExpr *at = ilir_binary(a, ILIR_ADD, ilir_binary(a, ILIR_MUL, word, ilir_const_i(a, v->size)),
                             ilir_binary(a, ILIR_SUB, index, base));
  return ilir_load(a, V->k, v->param, at);
}

static IlirExpr *view_loads(Views *V, IlirExpr *e) {
  if (!e) return NULL;
  if (e->kind == ILIR_LOAD) {
    const View *v = &V->view[V->only];
    IlirExpr *row;
    Meets how = e->buf == v->res ? classify(V, v, e->a, &row) : ELSEWHERE;
    if (how == OWN_ROW && V->level == LEAVES) return param_load(V, v, e->a, row);
    if (how != DEP_ROW || V->level != INNER) return e;
    IlirExpr *leaves = ilir_load(V->a, V->k, V->k->levels_buf, ilir_const_i(V->a, 1));
    IlirExpr *view = ilir_select(V->a, ilir_binary(V->a, ILIR_LT, row, leaves),
                                 param_load(V, v, e->a, row), e);
    view->ival = 1; /* both indices are safe to compute: ilir_is_view */
    return view;
  }
  Scope sc = {0};
  if (e->kind == ILIR_REDUCE) sc = enter(V, e->var, e->lo, e->hi);
  IlirExpr *x = view_loads(V, e->a), *y = view_loads(V, e->b), *c = view_loads(V, e->c);
  if (e->kind == ILIR_REDUCE) leave(V, sc);
  if (x == e->a && y == e->b && c == e->c) return e;
  IlirExpr *copy = CTX_NEW(V->a, IlirExpr); /* expressions may be shared */
  *copy = *e;
  copy->a = x, copy->b = y, copy->c = c;
  return copy;
}

/* view_loads over [b], tracking the ranges classify needs; drops the copy. */
static void rewrite(Views *V, IlirBlock *b) {
  int out = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    const View *v = &V->view[V->only];
    View c;
    if (V->level == LEAVES && V->node && row_copy(V->k, s, V->node, &c) && c.res == v->res &&
        c.off == v->off && c.param == v->param)
      continue;
    b->stmts[out++] = s;
    if (s->kind == ILIR_STORE) {
      s->value = view_loads(V, s->value);
    } else if (s->kind == ILIR_IF) {
      s->cond = view_loads(V, s->cond);
      rewrite(V, &s->then), rewrite(V, &s->els);
    } else {
      Scope sc = enter_loop(V, s);
      rewrite(V, &s->body);
      leave(V, sc);
    }
  }
  b->n = out;
}

void sched_leaf_views(CtxArena *a, IlirKernel *k) {
  Views V;
  memset(&V, 0, sizeof V);
  V.a = a, V.k = k;
  find_copies(&V, &k->body);
  if (!V.nviews) return;
  V.lo = CTX_NEW_ARRAY(a, long, (size_t)k->nvars + 1);
  V.hi = CTX_NEW_ARRAY(a, long, (size_t)k->nvars + 1);
  V.known = CTX_NEW_ARRAY(a, bool, (size_t)k->nvars + 1);
  scan(&V, &k->body);
  for (int i = 0; i < V.nviews; i++) {
    View *v = &V.view[i];
    if (k->out_buf == v->res && k->out_off < v->off + v->size &&
        v->off < k->out_off + k->out_size)
      v->bad = true;
  }
  for (int i = 0; i < V.nviews; i++) {
    if (V.view[i].bad) continue;
    IlirBlock saved = ilir_clone_block(a, k->body);
    V.only = i;
    rewrite(&V, &k->body);
    if (!sched_tiles_ok(k, &k->body)) k->body = saved;
  }
}
