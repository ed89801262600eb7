/* ilir_expr.c — constructors of ILIR expressions and statements.
 *
 * Integer additions and multiplications of constants fold, and adding 0 or
 * multiplying by 1 disappears, so index arithmetic of fixed shapes prints
 * (and compiles) as plainly as it was written.
 */
#include "ilir/ilir_int.h"

#include <string.h>

static IlirExpr *new_expr(CtxArena *a, IlirExprKind kind, IlirType type) {
  IlirExpr *e = CTX_NEW(a, IlirExpr);
  e->kind = kind;
  e->type = type;
  return e;
}

IlirExpr *ilir_const_i(CtxArena *a, long v) {
  IlirExpr *e = new_expr(a, ILIR_CONST, ILIR_I64);
  e->ival = v;
  return e;
}

IlirExpr *ilir_const_f(CtxArena *a, float v) {
  IlirExpr *e = new_expr(a, ILIR_CONST, ILIR_F32);
  e->fval = v;
  return e;
}

IlirExpr *ilir_var(CtxArena *a, IlirVar *v) {
  IlirExpr *e = new_expr(a, ILIR_VAR, ILIR_I64);
  e->var = v;
  return e;
}

IlirExpr *ilir_arg(CtxArena *a, long which) {
  IlirExpr *e = new_expr(a, ILIR_ARG, ILIR_I64);
  e->ival = which;
  return e;
}

IlirType ilir_buf_type(IlirBufKind kind) {
  switch (kind) {
  case ILIR_BUF_PARAM: case ILIR_BUF_VALUES: case ILIR_BUF_RESULT: case ILIR_BUF_SCRATCH:
  case ILIR_BUF_PACKED: case ILIR_BUF_LEVEL_SCRATCH: case ILIR_BUF_INVARIANT:
    return ILIR_F32;
  default:
    return ILIR_I64;
  }
}

int ilir_find_buf(const IlirKernel *k, IlirBufKind kind) {
  for (int b = 0; b < k->nbufs; b++)
    if (k->bufs[b].kind == kind) return b;
  return -1;
}

int ilir_add_buf(CtxArena *a, IlirKernel *k, IlirBuf b) {
  IlirBuf *bufs = CTX_NEW_ARRAY(a, IlirBuf, (size_t)k->nbufs + 1);
  memcpy(bufs, k->bufs, (size_t)k->nbufs * sizeof *bufs);
  bufs[k->nbufs] = b;
  k->bufs = bufs;
  return k->nbufs++;
}

IlirExpr *ilir_load(CtxArena *a, const IlirKernel *k, int buf, IlirExpr *index) {
  IlirExpr *e = new_expr(a, ILIR_LOAD, ilir_buf_type(k->bufs[buf].kind));
  e->buf = buf;
  e->a = index;
  return e;
}

IlirExpr *ilir_unary(CtxArena *a, int op, IlirExpr *x) {
  IlirExpr *e = new_expr(a, ILIR_UNARY, op == ILIR_NOT ? ILIR_I64 : x->type);
  e->op = op;
  e->a = x;
  return e;
}

static bool is_const_i(const IlirExpr *e, long v) {
  return e->kind == ILIR_CONST && e->type == ILIR_I64 && e->ival == v;
}

/* The integer comparison or logic [op] of two constants. */
static long fold_compare(int op, long x, long y) {
  switch (op) {
  case ILIR_EQ: return x == y;
  case ILIR_NE: return x != y;
  case ILIR_LT: return x < y;
  case ILIR_LE: return x <= y;
  case ILIR_GT: return x > y;
  case ILIR_GE: return x >= y;
  case ILIR_AND: return x && y;
  default: return x || y; /* ILIR_OR */
  }
}

IlirExpr *ilir_binary(CtxArena *a, int op, IlirExpr *x, IlirExpr *y) {
  if (x->type == ILIR_I64 && x->kind == ILIR_CONST && y->kind == ILIR_CONST &&
      y->type == ILIR_I64) {
    if (op == ILIR_ADD) return ilir_const_i(a, x->ival + y->ival);
    if (op == ILIR_SUB) return ilir_const_i(a, x->ival - y->ival);
    if (op == ILIR_MUL) return ilir_const_i(a, x->ival * y->ival);
    if (op >= ILIR_EQ && op <= ILIR_OR) return ilir_const_i(a, fold_compare(op, x->ival, y->ival));
  }
  if (op == ILIR_ADD && is_const_i(y, 0)) return x;
  if (op == ILIR_ADD && is_const_i(x, 0)) return y;
  if (op == ILIR_MUL && is_const_i(y, 1)) return x;
  if (op == ILIR_MUL && is_const_i(x, 1)) return y;
  if (op == ILIR_MUL && (is_const_i(x, 0) || is_const_i(y, 0))) return ilir_const_i(a, 0);
  bool cmp = op >= ILIR_EQ && op <= ILIR_OR;
  IlirExpr *e = new_expr(a, ILIR_BINARY, cmp ? ILIR_I64 : x->type);
  e->op = op;
  e->a = x;
  e->b = y;
  return e;
}

IlirExpr *ilir_select(CtxArena *a, IlirExpr *c, IlirExpr *x, IlirExpr *y) {
  if (c->kind == ILIR_CONST && c->type == ILIR_I64) return c->ival ? x : y;
  IlirExpr *e = new_expr(a, ILIR_SELECT, x->type);
  e->c = c;
  e->a = x;
  e->b = y;
  return e;
}

IlirExpr *ilir_to_f32(CtxArena *a, IlirExpr *x) {
  if (x->kind == ILIR_CONST) return ilir_const_f(a, (float)x->ival);
  IlirExpr *e = new_expr(a, ILIR_TO_F32, ILIR_F32);
  e->a = x;
  return e;
}

IlirExpr *ilir_reduce(CtxArena *a, int op, IlirVar *v, IlirExpr *lo, IlirExpr *hi,
                      IlirExpr *body) {
  IlirExpr *e = new_expr(a, ILIR_REDUCE, ILIR_F32);
  e->op = op;
  e->var = v;
  e->lo = lo;
  e->hi = hi;
  e->a = body;
  return e;
}

IlirExpr *ilir_subst(CtxArena *a, IlirExpr *e, const IlirVar *v, IlirExpr *by) {
  if (!e) return NULL;
  if (e->kind == ILIR_VAR) return e->var == v ? by : e;
  IlirExpr *x = ilir_subst(a, e->a, v, by), *y = ilir_subst(a, e->b, v, by);
  IlirExpr *c = ilir_subst(a, e->c, v, by);
  IlirExpr *lo = ilir_subst(a, e->lo, v, by), *hi = ilir_subst(a, e->hi, v, by);
  if (x == e->a && y == e->b && c == e->c && lo == e->lo && hi == e->hi) return e;
  IlirExpr *copy = CTX_NEW(a, IlirExpr);
  *copy = *e;
  copy->a = x, copy->b = y, copy->c = c, copy->lo = lo, copy->hi = hi;
  return copy;
}

static IlirExpr *clone_expr(CtxArena *a, const IlirExpr *e) {
  if (!e) return NULL;
  IlirExpr *c = CTX_NEW(a, IlirExpr);
  *c = *e;
  c->a = clone_expr(a, e->a), c->b = clone_expr(a, e->b), c->c = clone_expr(a, e->c);
  c->lo = clone_expr(a, e->lo), c->hi = clone_expr(a, e->hi);
  return c;
}

IlirBlock ilir_clone_block(CtxArena *a, IlirBlock b) {
  IlirBlock c = {CTX_NEW_ARRAY(a, IlirStmt *, b.n > 0 ? b.n : 1), b.n};
  for (int i = 0; i < b.n; i++) c.stmts[i] = ilir_clone_stmt(a, b.stmts[i]);
  return c;
}

IlirStmt *ilir_clone_stmt(CtxArena *a, const IlirStmt *s) {
  IlirStmt *c = CTX_NEW(a, IlirStmt);
  *c = *s;
  c->lo = clone_expr(a, s->lo), c->hi = clone_expr(a, s->hi);
  c->index = clone_expr(a, s->index), c->value = clone_expr(a, s->value);
  c->cond = clone_expr(a, s->cond);
  c->body = ilir_clone_block(a, s->body);
  c->then = ilir_clone_block(a, s->then);
  c->els = ilir_clone_block(a, s->els);
  return c;
}

IlirVar *ilir_new_var(CtxArena *a, IlirKernel *k, const char *name) {
  IlirVar *v = CTX_NEW(a, IlirVar);
  v->name = name;
  v->id = k->nvars++;
  return v;
}

IlirStmt *ilir_loop(CtxArena *a, IlirVar *v, IlirExpr *lo, IlirExpr *hi, IlirLoopKind kind,
                    IlirBlock body) {
  IlirStmt *s = CTX_NEW(a, IlirStmt);
  s->kind = ILIR_LOOP;
  s->var = v;
  s->lo = lo;
  s->hi = hi;
  s->loop = kind;
  s->body = body;
  return s;
}

IlirStmt *ilir_store(CtxArena *a, int buf, IlirExpr *index, IlirExpr *value) {
  IlirStmt *s = CTX_NEW(a, IlirStmt);
  s->kind = ILIR_STORE;
  s->buf = buf;
  s->index = index;
  s->value = value;
  return s;
}

/* ---- index analysis ---------------------------------------------------------------- */

bool ilir_same_expr(const IlirExpr *a, const IlirExpr *b, const IlirVar *va,
                    const IlirVar *vb) {
  if (!a || !b || (a == b && !va)) return a == b;
  if (a->kind != b->kind || a->type != b->type || a->op != b->op || a->ival != b->ival ||
      a->buf != b->buf)
    return false;
  if (a->var != b->var && !(va && a->var == va && b->var == vb)) return false;
  if (a->kind == ILIR_CONST && a->fval != b->fval) return false;
  return ilir_same_expr(a->a, b->a, va, vb) && ilir_same_expr(a->b, b->b, va, vb) &&
         ilir_same_expr(a->c, b->c, va, vb) && ilir_same_expr(a->lo, b->lo, va, vb) &&
         ilir_same_expr(a->hi, b->hi, va, vb);
}

long ilir_coef(const IlirExpr *e, const IlirVar *v) {
  switch (e->kind) {
  case ILIR_CONST: case ILIR_ARG: return 0;
  case ILIR_VAR: return e->var == v;
  case ILIR_LOAD: return ilir_coef(e->a, v) == 0 ? 0 : ILIR_NONLINEAR;
  case ILIR_BINARY: {
    long a = ilir_coef(e->a, v), b = ilir_coef(e->b, v);
    if (a == ILIR_NONLINEAR || b == ILIR_NONLINEAR) return ILIR_NONLINEAR;
    if (e->op == ILIR_ADD) return a + b;
    if (e->op == ILIR_SUB) return a - b;
    if (e->op == ILIR_MUL && e->b->kind == ILIR_CONST) return a * e->b->ival;
    if (e->op == ILIR_MUL && e->a->kind == ILIR_CONST) return b * e->a->ival;
    return a == 0 && b == 0 ? 0 : ILIR_NONLINEAR;
  }
  default: return ILIR_NONLINEAR;
  }
}

bool ilir_uses(const IlirExpr *e, const IlirVar *v) {
  if (!e) return false;
  if ((e->kind == ILIR_VAR || e->kind == ILIR_REDUCE) && e->var == v) return true;
  return ilir_uses(e->a, v) || ilir_uses(e->b, v) || ilir_uses(e->c, v) ||
         ilir_uses(e->lo, v) || ilir_uses(e->hi, v);
}

static int sum_terms(IlirExpr *e, IlirExpr **terms, int n, int cap) {
  if (e->kind == ILIR_BINARY && e->op == ILIR_ADD && e->type == ILIR_F32)
    return sum_terms(e->b, terms, sum_terms(e->a, terms, n, cap), cap);
  if (n < cap) terms[n] = e;
  return n + 1;
}

int ilir_sum_terms(IlirExpr *e, IlirExpr **terms, int cap) {
  return sum_terms(e, terms, 0, cap);
}

bool ilir_reads(const IlirExpr *e, int buf) {
  if (!e) return false;
  if (e->kind == ILIR_LOAD && e->buf == buf) return true;
  return ilir_reads(e->a, buf) || ilir_reads(e->b, buf) || ilir_reads(e->c, buf) ||
         ilir_reads(e->lo, buf) || ilir_reads(e->hi, buf);
}

bool ilir_stores(const IlirStmt *s, int buf) {
  if (s->kind == ILIR_STORE) return s->buf == buf;
  const IlirBlock *bs[3] = {&s->body, &s->then, &s->els};
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < bs[j]->n; i++)
      if (ilir_stores(bs[j]->stmts[i], buf)) return true;
  return false;
}

bool ilir_block_reads(const IlirBlock *b, int buf) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (ilir_reads(s->lo, buf) || ilir_reads(s->hi, buf) || ilir_reads(s->team_lo, buf) ||
        ilir_reads(s->team_hi, buf) || ilir_reads(s->index, buf) || ilir_reads(s->value, buf) ||
        ilir_reads(s->cond, buf) || ilir_block_reads(&s->body, buf) || ilir_block_reads(&s->then, buf) ||
        ilir_block_reads(&s->els, buf))
      return true;
  }
  return false;
}

bool ilir_kernel_reads(const IlirKernel *k, int buf) {
  return buf >= 0 && ilir_block_reads(&k->body, buf);
}

/* Does [e] read [buf] other than at a dependency's row (an index through
 * dep[]: an earlier level, never a row the tile's level writes)? */
static bool reads_own_rows(const IlirKernel *k, const IlirExpr *e, int buf) {
  if (!e) return false;
  if (e->kind == ILIR_LOAD && e->buf == buf && !ilir_reads(e->a, k->dep_buf)) return true;
  return reads_own_rows(k, e->a, buf) || reads_own_rows(k, e->b, buf) ||
         reads_own_rows(k, e->c, buf) || reads_own_rows(k, e->lo, buf) ||
         reads_own_rows(k, e->hi, buf);
}

/* Is [y] a load of a float buffer moving by one element per [j], by a
 * nonzero stride per [r], and not with [row]? */
static bool row_load(const IlirKernel *k, const IlirExpr *y, const IlirVar *r, const IlirVar *row,
                     const IlirVar *j, long *rs) {
  if (y->kind != ILIR_LOAD || y->buf < 0 || y->buf >= k->nbufs ||
      ilir_buf_type(k->bufs[y->buf].kind) != ILIR_F32)
    return false;
  *rs = ilir_coef(y->a, r);
  return *rs != ILIR_NONLINEAR && *rs != 0 && ilir_coef(y->a, j) == 1 && !ilir_uses(y->a, row);
}

bool ilir_is_view(const IlirExpr *e) {
  return e->kind == ILIR_SELECT && e->ival == 1 && e->type == ILIR_F32 &&
         e->a->kind == ILIR_LOAD && e->b->kind == ILIR_LOAD;
}

/* Is [t] a term sum(r in [0, R)) x * y[.. + r * RS + j] of a product tiled over
 * [row] and [j]: y's index moving by one element per j and not with [row], x
 * not reading j, neither reading the buffer [out] other than at dependencies'
 * rows (direct-results: a node's matrix product into its result row, from its
 * children's rows of it)? y may be a view whose two loads move alike. */
static bool tiled_term(const IlirKernel *k, const IlirExpr *t, const IlirVar *row,
                       const IlirVar *j, int out) {
  if (t->kind != ILIR_REDUCE || t->op != ILIR_SUM || t->lo->kind != ILIR_CONST ||
      t->lo->ival != 0 || t->hi->kind != ILIR_CONST)
    return false;
  const IlirExpr *m = t->a, *y = m->b;
  if (m->kind != ILIR_BINARY || m->op != ILIR_MUL) return false;
  long rs, rs2;
  bool ok = ilir_is_view(y) /* a leaf's row where it is (leaf-views): both the same way */
                ? row_load(k, y->a, t->var, row, j, &rs) &&
                      row_load(k, y->b, t->var, row, j, &rs2) && rs == rs2 &&
                      !ilir_uses(y->c, t->var) && !ilir_uses(y->c, j) && !ilir_uses(y->c, row)
                : row_load(k, y, t->var, row, j, &rs);
  return ok && !ilir_uses(m->a, j) && !reads_own_rows(k, m, out);
}

/* What a tile writes: buffer [buf] at [index], an expression of [var]. */
typedef struct {
  int buf;
  const IlirExpr *index;
  const IlirVar *var;
} Written;

/* Does [e] read the buffers of [w] only at their written element, [j2] for
 * their output variable? */
static bool reads_only_at(const IlirExpr *e, const Written *w, int nw, const IlirVar *j2) {
  if (!e) return true;
  if (e->kind == ILIR_LOAD)
    for (int i = 0; i < nw; i++)
      if (e->buf == w[i].buf && !ilir_same_expr(e->a, w[i].index, j2, w[i].var)) return false;
  return reads_only_at(e->a, w, nw, j2) && reads_only_at(e->b, w, nw, j2) &&
         reads_only_at(e->c, w, nw, j2) && reads_only_at(e->lo, w, nw, j2) &&
         reads_only_at(e->hi, w, nw, j2);
}

/* Are s->body.stmts[parts->n ..] epilogues of the tile with [parts]
 * (ilir.h)? */
static bool epilogues_ok(const IlirKernel *k, const IlirStmt *s, const IlirTileParts *parts) {
  enum { MAX_EPI = 32 };
  if (s->body.n > MAX_EPI) return false;
  Written w[MAX_EPI];
  int nw = 0;
  const IlirStmt *il = parts->loop[0];
  for (int p = 0; p < parts->n; p++) {
    const IlirStmt *st = parts->loop[p]->body.stmts[0];
    w[nw++] = (Written){st->buf, st->index, parts->loop[p]->var};
  }
  for (int e = parts->n; e < s->body.n; e++) {
    const IlirStmt *lp = s->body.stmts[e];
    if (lp->kind != ILIR_LOOP || lp->loop != ILIR_LOOP_SERIAL || lp->tile_nodes ||
        lp->body.n != 1 || lp->body.stmts[0]->kind != ILIR_STORE ||
        !ilir_same_expr(lp->lo, il->lo, NULL, NULL) || !ilir_same_expr(lp->hi, il->hi, NULL, NULL))
      return false;
    const IlirStmt *y = lp->body.stmts[0];
    if (ilir_coef(y->index, lp->var) != 1 || !reads_only_at(y->value, w, nw, lp->var) ||
        !reads_only_at(y->index, w, nw, lp->var))
      return false;
    for (int p = 0; p < parts->n; p++)
      if (reads_own_rows(k, parts->loop[p]->body.stmts[0]->value, y->buf)) return false;
    for (int i = 0; i < nw; i++)
      if (w[i].buf == y->buf) return false;
    w[nw++] = (Written){y->buf, y->index, lp->var};
  }
  return true;
}

/* Is [il] a product loop of a tile over [row] (ilir.h) whose terms read none
 * of the outputs of [parts] (the products before it) nor its own? */
static bool product_loop(const IlirKernel *k, const IlirStmt *il, const IlirVar *row,
                         const IlirTileParts *parts) {
  if (il->kind != ILIR_LOOP || il->body.n != 1 || il->lo->kind != ILIR_CONST ||
      il->lo->ival != 0 || il->hi->kind != ILIR_CONST || il->body.stmts[0]->kind != ILIR_STORE)
    return false;
  const IlirStmt *st = il->body.stmts[0];
  if (ilir_coef(st->index, il->var) != 1) return false;
  if (parts->n && (il->hi->ival != parts->loop[0]->hi->ival)) return false;
  IlirExpr *terms[16];
  int n = ilir_sum_terms(st->value, terms, 16);
  if (n > 16) return false;
  for (int t = 0; t < n; t++) {
    if (!tiled_term(k, terms[t], row, il->var, st->buf)) return false;
    for (int p = 0; p < parts->n; p++)
      if (ilir_reads(terms[t], parts->loop[p]->body.stmts[0]->buf)) return false;
  }
  return true;
}

/* Does [e] load along [r] at places [i] moves 32 or more elements apart? */
static bool loads_rows(const IlirExpr *e, const IlirVar *r, const IlirVar *i) {
  if (!e) return false;
  if (e->kind == ILIR_LOAD) {
    long ci = ilir_coef(e->a, i);
    if (ilir_coef(e->a, r) == 1 && ci != ILIR_NONLINEAR && (ci >= 32 || ci <= -32)) return true;
  }
  return loads_rows(e->a, r, i) || loads_rows(e->b, r, i) || loads_rows(e->c, r, i);
}

int ilir_warp_terms(const IlirStmt *s, IlirExpr **terms) {
  if (s->kind != ILIR_LOOP || s->body.n != 1) return 0;
  return ilir_store_sums(s->body.stmts[0], terms);
}

int ilir_store_sums(const IlirStmt *st, IlirExpr **terms) {
  if (st->kind != ILIR_STORE) return 0;
  int n = ilir_sum_terms(st->value, terms, ILIR_WARP_MAX_TERMS);
  if (n < 1 || n > ILIR_WARP_MAX_TERMS) return 0;
  for (int t = 0; t < n; t++) {
    const IlirExpr *v = terms[t];
    if (v->kind != ILIR_REDUCE || v->op != ILIR_SUM || v->lo->kind != ILIR_CONST ||
        v->hi->kind != ILIR_CONST || v->hi->ival - v->lo->ival < 32)
      return 0;
  }
  return n;
}

bool ilir_warp_sum(const IlirStmt *s, bool strided) {
  IlirExpr *terms[ILIR_WARP_MAX_TERMS];
  int n = ilir_warp_terms(s, terms);
  if (n == 0 || !strided) return n > 0;
  for (int t = 0; t < n; t++)
    if (loads_rows(terms[t]->a, terms[t]->var, s->var)) return true;
  return false;
}

bool ilir_tile_parts(const IlirKernel *k, const IlirStmt *s, IlirTileParts *parts) {
  parts->n = 0;
  if (s->kind != ILIR_LOOP || (s->loop != ILIR_LOOP_NODES && s->loop != ILIR_LOOP_SERIAL) ||
      s->tile_nodes <= 0 || s->tile_outs <= 0 || s->body.n < 1)
    return false;
  while (parts->n < ILIR_TILE_MAX_PRODUCTS && parts->n < s->body.n &&
         product_loop(k, s->body.stmts[parts->n], s->var, parts)) {
    parts->loop[parts->n] = s->body.stmts[parts->n];
    parts->n++;
  }
  return parts->n > 0 && epilogues_ok(k, s, parts);
}

bool ilir_tiled_parts(const IlirKernel *k, const IlirStmt *s, const IlirStmt **out_loop,
                      const IlirStmt **store) {
  IlirTileParts parts;
  if (!ilir_tile_parts(k, s, &parts) || parts.n != 1) return false;
  *out_loop = parts.loop[0];
  *store = parts.loop[0]->body.stmts[0];
  return true;
}

long ilir_pack_at(const IlirPack *pack, long r, long c) {
  long panel = pack->panel > 0 && pack->panel < pack->cols ? pack->panel : pack->cols;
  long p0 = c / panel * panel, w = pack->cols - p0 < panel ? pack->cols - p0 : panel;
  return p0 * pack->rows + r * w + (c - p0);
}
