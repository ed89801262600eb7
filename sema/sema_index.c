/* sema_index.c — subscripts, reductions and index-form lets.
 *
 * A subscript drops an axis (an integer constant in range, an i32 scalar for
 * a row gather, an index variable) or keeps it (a slice lo:hi with constant
 * bounds). Index variables of sum(k) and `let y[i, j]` have no declared
 * range: each use `x[.., k, ..]` bounds k's extent by that axis's length, and
 * `x[.., c + k, ..]` by the length minus c; the extent is the smallest bound,
 * so every use stays in range (WM[i, k] * A[k, j] sums over A's rows). Child
 * access n.child[k] / n.pred[k] takes a constant below the declared maximum
 * or a variable ranging over n.children / n.preds.
 */
#include "sema/sema_int.h"

#include <string.h>

static void set_extent(Sema *S, Sym *k, const AstExpr *at, long ext) {
  if (ext <= 0) {
    ctx_diag_error(S->diag, at->span, "index '%s' would have no values here", k->name);
  } else if (k->extent == 0 || ext < k->extent) {
    k->extent = ext; /* every use must stay in bounds: the smallest wins */
  }
}

static Sym *index_var(Sema *S, Scope *scope, const AstExpr *e) {
  Sym *s = e->kind == AST_NAME ? sema_lookup(S, scope, e->u.name.id) : NULL;
  return s && s->kind == SYM_INDEX ? s : NULL;
}

/* k, c + k or k + c: sets k's extent from an axis of length [len]. */
static bool index_form(Sema *S, Scope *scope, const AstExpr *e, long len) {
  Sym *k = index_var(S, scope, e);
  long c = 0;
  if (!k && e->kind == AST_BINARY && e->u.binary.op == AST_OP_ADD) {
    const AstExpr *l = e->u.binary.lhs, *r = e->u.binary.rhs;
    if ((k = index_var(S, scope, r))) {
      if (!sema_const_eval(S, scope, l, &c)) return true;
    } else if ((k = index_var(S, scope, l))) {
      if (!sema_const_eval(S, scope, r, &c)) return true;
    }
  }
  if (!k) return false;
  set_extent(S, k, e, len - c);
  return true;
}

static bool slice(Sema *S, Scope *scope, const AstSubscript *sub, long len, long *out) {
  long lo = 0, hi = len;
  if (sub->lo && !sema_const_eval(S, scope, sub->lo, &lo)) return false;
  if (sub->hi && !sema_const_eval(S, scope, sub->hi, &hi)) return false;
  if (lo < 0 || lo >= hi || hi > len) {
    ctx_diag_error(S->diag, sub->span, "slice %ld:%ld is out of range for an axis of length "
                   "%ld", lo, hi, len);
    return false;
  }
  *out = hi - lo;
  return true;
}

/* A plain subscript that drops an axis of length [len]. */
static bool point(Sema *S, Scope *scope, const AstExpr *e, long len) {
  if (index_form(S, scope, e, len)) return true;
  Sym *k = e->kind == AST_NAME ? sema_lookup(S, scope, e->u.name.id) : NULL;
  if (k && k->kind == SYM_CHILDVAR) { /* a child slot: below the declared maximum */
    long most = S->m->structure.max_arity;
    if (most > 0 && most <= len) return true;
    ctx_diag_error(S->diag, e->span, "'%s' counts children up to %ld, but this axis has "
                   "length %ld", k->name, most, len);
    return false;
  }
  SemaType *t = sema_expr(S, scope, e);
  if (t->kind == SEMA_INT && t->is_const) {
    if (t->value >= 0 && t->value < len) return true;
    ctx_diag_error(S->diag, e->span, "index %ld is out of range for an axis of length %ld",
                   t->value, len);
    return false;
  }
  if (t->kind == SEMA_TENSOR && t->elem == SEMA_I32 && t->rank == 0) return true;
  if (t->kind != SEMA_ERROR)
    ctx_diag_error(S->diag, e->span, "a subscript must be a constant, an index variable or "
                   "an i32 scalar, found %s", sema_type_str(S, t));
  return false;
}

static SemaType *apply_subs(Sema *S, Scope *scope, const AstExpr *e, SemaType *t,
                            const AstSubscript *subs, int n) {
  if (t->kind == SEMA_ERROR) return t;
  if (t->kind != SEMA_TENSOR || n > t->rank) {
    ctx_diag_error(S->diag, e->span, "%d subscript%s for %s", n, n == 1 ? "" : "s",
                   sema_type_str(S, t));
    return sema_error_type(S);
  }
  long dims[SEMA_MAX_RANK];
  int rank = 0;
  bool ok = true;
  for (int i = 0; i < n; i++) {
    if (subs[i].is_slice) ok &= slice(S, scope, &subs[i], t->dims[i], &dims[rank++]);
    else ok &= point(S, scope, subs[i].index, t->dims[i]);
  }
  for (int i = n; i < t->rank; i++) dims[rank++] = t->dims[i];
  return ok ? sema_tensor_type(S, t->elem, rank, dims) : sema_error_type(S);
}

/* n.child[k] / n.pred[k] */
/* The misuse of n.child / n.pred: sema_member says what is wrong. */
static SemaType *child(Sema *S, Scope *scope, const AstExpr *e, SemaType *bt) {
  if (bt->kind == SEMA_ERROR) return bt;
  SemaType *m = sema_expr(S, scope, e->u.index.base);
  if (m->kind != SEMA_ERROR) CTX_ICE(S->diag, "child access typed as a value");
  return sema_error_type(S);
}

/* Is [e] made of integers and dims alone (`K - 1`): a constant expression
 * sema_const_eval takes without an error for what it is not? */
static bool dims_only(Sema *S, Scope *scope, const AstExpr *e) {
  switch (e->kind) {
  case AST_NUMBER: return true;
  case AST_NAME: {
    Sym *s = sema_lookup(S, scope, e->u.name.id);
    return s && (s->kind == SYM_DIM || s->kind == SYM_SHAPEVAR);
  }
  case AST_UNARY: return e->u.unary.op == AST_OP_NEG && dims_only(S, scope, e->u.unary.operand);
  case AST_BINARY:
    return dims_only(S, scope, e->u.binary.lhs) && dims_only(S, scope, e->u.binary.rhs);
  default: return false;
  }
}

static SemaType *child_access(Sema *S, Scope *scope, const AstExpr *e) {
  const AstExpr *mb = e->u.index.base;
  SemaType *bt = sema_expr(S, scope, mb->u.member.base);
  if (bt->kind != SEMA_NODE || bt->rel != SEMA_NODE_SELF) return child(S, scope, e, bt);
  SemaStructKind want = strcmp(mb->u.member.field, "child") == 0 ? SEMA_TREE : SEMA_DAG;
  const SemaStructure *st = &S->m->structure;
  if (st->kind != want) return child(S, scope, e, bt);
  const AstSubscript *sub = &e->u.index.subs[0];
  if (e->u.index.nsubs != 1 || sub->is_slice) {
    ctx_diag_error(S->diag, e->span, "'%s' takes one index", mb->u.member.field);
    return sema_error_type(S);
  }
  const AstExpr *k = sub->index;
  Sym *v = k->kind == AST_NAME ? sema_lookup(S, scope, k->u.name.id) : NULL;
  if (v && v->kind == SYM_CHILDVAR) return sema_node_type(S, SEMA_NODE_CHILD);
  long c;
  if (dims_only(S, scope, k) && sema_const_eval(S, scope, k, &c)) {
    if (c >= 0 && c < st->max_arity) return sema_node_type(S, SEMA_NODE_CHILD);
    ctx_diag_error(S->diag, k->span, "child index %ld is out of range: '%s' has at most %ld "
                   "%s", c, st->name, st->max_arity, want == SEMA_TREE ? "children" : "preds");
    return sema_error_type(S);
  }
  ctx_diag_error(S->diag, k->span, "a child index must be a constant or a variable over "
                 "'%s.%s'", S->node_name ? S->node_name : "n",
                 want == SEMA_TREE ? "children" : "preds");
  return sema_error_type(S);
}

SemaType *sema_index(Sema *S, Scope *scope, const AstExpr *e) {
  const AstExpr *b = e->u.index.base;
  if (b->kind == AST_MEMBER && (strcmp(b->u.member.field, "child") == 0 ||
                                strcmp(b->u.member.field, "pred") == 0))
    return child_access(S, scope, e);
  Sym *s = b->kind == AST_NAME ? sema_lookup(S, scope, b->u.name.id) : NULL;
  if (!s || s->kind != SYM_INPUT)
    return apply_subs(S, scope, e, sema_expr(S, scope, b), e->u.index.subs, e->u.index.nsubs);
  /* a per-node input: x[n, ...] */
  if (!s->type) return sema_error_type(S);
  const AstSubscript *sub = &e->u.index.subs[0];
  SemaType *nt = sub->is_slice ? NULL : sema_expr(S, scope, sub->index);
  if (nt && nt->kind == SEMA_ERROR) return nt;
  if (!nt || nt->kind != SEMA_NODE) {
    ctx_diag_error(S->diag, sub->span, "the first subscript of per-node input '%s' must be "
                   "a node", s->name);
    return sema_error_type(S);
  }
  return apply_subs(S, scope, e, s->type, e->u.index.subs + 1, e->u.index.nsubs - 1);
}

/* sum(k) body / sum(k in n.children) body, and max. */
SemaType *sema_reduce(Sema *S, Scope *scope, const AstExpr *e) {
  Scope inner = {NULL, scope};
  Sym *k = sema_bind(S, &inner, e->u.reduce.var, e->u.reduce.var_span, SYM_INDEX);
  if (e->u.reduce.range) {
    SemaType *r = sema_expr(S, scope, e->u.reduce.range);
    if (r->kind == SEMA_ERROR) return r;
    if (r->kind != SEMA_RANGE) {
      ctx_diag_error(S->diag, e->u.reduce.range->span, "a reduction ranges over "
                     "'n.children' or 'n.preds', not %s", sema_type_str(S, r));
      return sema_error_type(S);
    }
    k->kind = SYM_CHILDVAR;
  }
  SemaType *t = sema_expr(S, &inner, e->u.reduce.body), *x = t;
  if (t->kind == SEMA_ERROR) return t;
  if (t->kind != SEMA_TENSOR || t->elem != SEMA_F32) {
    ctx_diag_error(S->diag, e->u.reduce.body->span, "'%s' needs an f32 tensor, found %s",
                   ast_op_name(e->u.reduce.op), sema_type_str(S, t));
    return sema_error_type(S);
  }
  if (k->kind == SYM_INDEX && k->extent == 0) {
    ctx_diag_error(S->diag, e->u.reduce.var_span, "cannot infer the extent of '%s'; use it as "
                   "a subscript", k->name);
    return sema_error_type(S);
  }
  if (k->kind == SYM_INDEX) sema_record(S, &e->u.reduce.var, sema_int_type(S, true, k->extent));
  return x;
}

/* let y[i, j] = body: body is a scalar for each (i, j). */
SemaType *sema_index_let(Sema *S, Scope *scope, const AstStmt *st) {
  Scope inner = {NULL, scope};
  Sym *vars[SEMA_MAX_RANK];
  int n = st->u.let.nidx;
  if (n > SEMA_MAX_RANK) {
    ctx_diag_error(S->diag, st->span, "a tensor may have at most %d axes", SEMA_MAX_RANK);
    return sema_error_type(S);
  }
  for (int i = 0; i < n; i++) {
    vars[i] = sema_bind(S, &inner, st->u.let.idx[i].id, st->u.let.idx[i].span, SYM_INDEX);
    if (!vars[i]) return sema_error_type(S);
  }
  SemaType *t = sema_expr(S, &inner, st->u.let.value);
  if (t->kind == SEMA_ERROR) return t;
  if (t->kind != SEMA_TENSOR || t->rank != 0) {
    ctx_diag_error(S->diag, st->u.let.value->span, "the value of an index-form let must be a "
                   "scalar, found %s", sema_type_str(S, t));
    return sema_error_type(S);
  }
  long dims[SEMA_MAX_RANK];
  for (int i = 0; i < n; i++) {
    dims[i] = vars[i]->extent;
    if (dims[i] == 0) {
      ctx_diag_error(S->diag, vars[i]->span, "cannot infer the extent of '%s'; use it as a "
                     "subscript", vars[i]->name);
      return sema_error_type(S);
    }
    sema_record(S, &st->u.let.idx[i], sema_int_type(S, true, dims[i]));
  }
  return sema_tensor_type(S, t->elem, n, dims);
}
