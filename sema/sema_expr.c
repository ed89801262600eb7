/* sema_expr.c — types of expressions: names, operators, tuples, concat.
 *
 * Every expression gets a SemaType, recorded in the model's side table.
 * Elementwise + - * / need equal shapes or a scalar on one side (integer
 * literals and dims are scalars); @ is a matrix-vector or matrix-matrix
 * product; comparisons, && || ! build conditions, whose operands may only be
 * structure integers — never tensor values. An operand of the error type
 * makes the result the error type without another report.
 */
#include "sema/sema_int.h"

static SemaType *type_name(Sema *S, Scope *scope, const AstExpr *e) {
  const char *id = e->u.name.id;
  Sym *s = sema_lookup(S, scope, id);
  if (!s) {
    sema_unknown(S, scope, e->span, "name", id);
    return sema_error_type(S);
  }
  switch (s->kind) {
  case SYM_DIM: case SYM_SHAPEVAR: case SYM_PARAM: case SYM_LOCAL: case SYM_NODE:
    return s->type ? s->type : sema_error_type(S);
  case SYM_INPUT:
    ctx_diag_error(S->diag, e->span, "per-node input '%s' must be indexed by a node, as "
                   "'%s[n]'", id, id);
    break;
  case SYM_STRUCT:
    ctx_diag_error(S->diag, e->span, "'%s' is the structure; use 'root(%s)' for its root",
                   id, id);
    break;
  case SYM_INDEX:
    ctx_diag_error(S->diag, e->span, "index variable '%s' may only be used in a subscript",
                   id);
    break;
  case SYM_CHILDVAR: /* a child slot: x[k], nothing computed from it */
    ctx_diag_error(S->diag, e->span, "child variable '%s' may only be a whole subscript, as "
                   "'x[%s]' or 'n.child[%s]'", id, id, id);
    break;
  case SYM_REC: case SYM_DEF:
    ctx_diag_error(S->diag, e->span, "'%s' is a function; call it", id);
    break;
  case SYM_MODEL:
    ctx_diag_error(S->diag, e->span, "'%s' is the model's name", id);
    break;
  }
  return sema_error_type(S);
}

/* An operand of an elementwise op: a tensor, or an integer as a scalar. */
static bool as_tensor(Sema *S, const AstExpr *e, SemaType *t, SemaType **out) {
  if (t->kind == SEMA_TENSOR) {
    *out = t;
    return true;
  }
  if (t->kind == SEMA_INT) {
    *out = sema_tensor_type(S, SEMA_F32, 0, NULL);
    return true;
  }
  if (t->kind != SEMA_ERROR)
    ctx_diag_error(S->diag, e->span, "expected a tensor, found %s", sema_type_str(S, t));
  return false;
}

static SemaType *elementwise(Sema *S, const AstExpr *e, SemaType *a, SemaType *b) {
  const AstExpr *l = e->u.binary.lhs, *r = e->u.binary.rhs;
  if (a->kind == SEMA_INT && b->kind == SEMA_INT) {
    long v = 0;
    bool c = a->is_const && b->is_const;
    long x = a->value, y = b->value;
    switch (e->u.binary.op) {
    case AST_OP_ADD: c = c && !__builtin_add_overflow(x, y, &v); break;
    case AST_OP_SUB: c = c && !__builtin_sub_overflow(x, y, &v); break;
    case AST_OP_MUL: c = c && !__builtin_mul_overflow(x, y, &v); break;
    default: c = c && y != 0 && x % y == 0; v = c ? x / y : 0; break;
    }
    return sema_int_type(S, c, v);
  }
  SemaType *x, *y;
  bool lok = as_tensor(S, l, a, &x), rok = as_tensor(S, r, b, &y); /* report both */
  if (!lok || !rok) return sema_error_type(S);
  if (a->kind == SEMA_INT) x = sema_tensor_type(S, y->elem, 0, NULL);
  if (b->kind == SEMA_INT) y = sema_tensor_type(S, x->elem, 0, NULL);
  if (x->elem != y->elem) {
    ctx_diag_error(S->diag, e->span, "cannot mix %s and %s in '%s'", sema_type_str(S, x),
                   sema_type_str(S, y), ast_op_name(e->u.binary.op));
    return sema_error_type(S);
  }
  if (x->rank == 0) return y;
  if (y->rank == 0 || sema_type_eq(x, y)) return x;
  ctx_diag_error(S->diag, e->span, "shapes do not match: %s %s %s", sema_type_str(S, x),
                 ast_op_name(e->u.binary.op), sema_type_str(S, y));
  if (e->u.binary.op == AST_OP_MUL && x->rank == 2 && y->rank >= 1 && y->rank <= 2 &&
      x->dims[1] == y->dims[0]) /* a matrix times a vector or matrix it fits */
    ctx_diag_note(S->diag, e->span, "'*' is elementwise; for the matrix product write '@'");
  return sema_error_type(S);
}

static SemaType *matmul(Sema *S, const AstExpr *e, SemaType *a, SemaType *b) {
  SemaType *x, *y;
  bool lok = as_tensor(S, e->u.binary.lhs, a, &x); /* report both operands */
  bool rok = as_tensor(S, e->u.binary.rhs, b, &y);
  if (!lok || !rok) return sema_error_type(S);
  if (x->rank != 2 || (y->rank != 1 && y->rank != 2) || x->elem != SEMA_F32 ||
      y->elem != SEMA_F32) {
    ctx_diag_error(S->diag, e->span, "'@' needs an f32 matrix and an f32 vector or matrix, "
                   "found %s @ %s", sema_type_str(S, x), sema_type_str(S, y));
    return sema_error_type(S);
  }
  if (x->dims[1] != y->dims[0]) {
    ctx_diag_error(S->diag, e->span, "inner dimensions differ: %s @ %s", sema_type_str(S, x),
                   sema_type_str(S, y));
    return sema_error_type(S);
  }
  long dims[2] = {x->dims[0], y->rank == 2 ? y->dims[1] : 0};
  return sema_tensor_type(S, SEMA_F32, y->rank, dims);
}

/* An operand of a comparison or logical operator. */
static bool cond_operand(Sema *S, const AstExpr *e, SemaType *t, SemaTypeKind want) {
  if (t->kind == want || t->kind == SEMA_ERROR) return t->kind == want;
  if (t->kind == SEMA_TENSOR || t->kind == SEMA_TUPLE)
    ctx_diag_error(S->diag, e->span, "condition depends on tensor values; control flow may "
                   "depend only on the structure");
  else
    ctx_diag_error(S->diag, e->span, "expected %s, found %s",
                   want == SEMA_INT ? "an integer" : "a condition", sema_type_str(S, t));
  return false;
}

static SemaType *type_binary(Sema *S, Scope *scope, const AstExpr *e) {
  SemaType *a = sema_expr(S, scope, e->u.binary.lhs);
  SemaType *b = sema_expr(S, scope, e->u.binary.rhs);
  switch (e->u.binary.op) {
  case AST_OP_ADD: case AST_OP_SUB: case AST_OP_MUL: case AST_OP_DIV:
    return elementwise(S, e, a, b);
  case AST_OP_MATMUL: return matmul(S, e, a, b);
  case AST_OP_AND: case AST_OP_OR: {
    bool ok = cond_operand(S, e->u.binary.lhs, a, SEMA_BOOL);
    ok &= cond_operand(S, e->u.binary.rhs, b, SEMA_BOOL);
    return ok ? sema_bool_type(S) : sema_error_type(S);
  }
  default: {
    bool ok = cond_operand(S, e->u.binary.lhs, a, SEMA_INT);
    ok &= cond_operand(S, e->u.binary.rhs, b, SEMA_INT);
    return ok ? sema_bool_type(S) : sema_error_type(S);
  }
  }
}

static SemaType *type_unary(Sema *S, Scope *scope, const AstExpr *e) {
  SemaType *t = sema_expr(S, scope, e->u.unary.operand);
  if (e->u.unary.op == AST_OP_NOT)
    return cond_operand(S, e->u.unary.operand, t, SEMA_BOOL) ? t : sema_error_type(S);
  if (t->kind == SEMA_INT) return sema_int_type(S, t->is_const, -t->value);
  SemaType *x;
  return as_tensor(S, e->u.unary.operand, t, &x) ? x : sema_error_type(S);
}

static SemaType *type_tuple(Sema *S, Scope *scope, const AstExpr *e) {
  SemaType *r = CTX_NEW(S->arena, SemaType);
  r->kind = SEMA_TUPLE;
  r->nfields = e->u.list.n;
  r->fields = CTX_NEW_ARRAY(S->arena, SemaType *, r->nfields);
  bool ok = true;
  for (int i = 0; i < r->nfields; i++) {
    SemaType *t = sema_expr(S, scope, e->u.list.elems[i]);
    ok &= as_tensor(S, e->u.list.elems[i], t, &r->fields[i]);
  }
  return ok ? r : sema_error_type(S);
}

/* [a; b] and concat(a, b): same trailing axes, the first axes add up. */
SemaType *sema_concat(Sema *S, Scope *scope, const AstExpr *e, AstExpr **elems, int n);
SemaType *sema_concat(Sema *S, Scope *scope, const AstExpr *e, AstExpr **elems, int n) {
  SemaType *first = NULL;
  long total = 0;
  bool ok = true;
  for (int i = 0; i < n; i++) {
    SemaType *t = sema_expr(S, scope, elems[i]), *x;
    if (!as_tensor(S, elems[i], t, &x)) {
      ok = false;
      continue;
    }
    if (x->rank == 0) x = sema_tensor_type(S, x->elem, 1, (long[]){1});
    if (!first) first = x;
    bool same = x->rank == first->rank && x->elem == first->elem;
    for (int j = 1; same && j < x->rank; j++) same = x->dims[j] == first->dims[j];
    if (!same) {
      ctx_diag_error(S->diag, elems[i]->span, "cannot concatenate %s with %s: the axes after "
                     "the first must match", sema_type_str(S, x), sema_type_str(S, first));
      ok = false;
    }
    total += x->dims[0];
  }
  if (!ok || !first) {
    if (ok) ctx_diag_error(S->diag, e->span, "nothing to concatenate");
    return sema_error_type(S);
  }
  SemaType *r = sema_tensor_type(S, first->elem, first->rank, first->dims);
  r->dims[0] = total;
  return r;
}

static SemaType *type_of(Sema *S, Scope *scope, const AstExpr *e) {
  switch (e->kind) {
  case AST_ERROR: return sema_error_type(S);
  case AST_NUMBER:
    if (e->u.num.is_int) return sema_int_type(S, true, (long)e->u.num.value);
    return sema_tensor_type(S, SEMA_F32, 0, NULL);
  case AST_NAME: return type_name(S, scope, e);
  case AST_UNARY: return type_unary(S, scope, e);
  case AST_BINARY: return type_binary(S, scope, e);
  case AST_CALL: return sema_call(S, scope, e);
  case AST_INDEX: return sema_index(S, scope, e);
  case AST_MEMBER: return sema_member(S, scope, e);
  case AST_TUPLE: return type_tuple(S, scope, e);
  case AST_CONCAT: return sema_concat(S, scope, e, e->u.list.elems, e->u.list.n);
  case AST_REDUCE: return sema_reduce(S, scope, e);
  }
  return sema_error_type(S);
}

SemaType *sema_expr(Sema *S, Scope *scope, const AstExpr *e) {
  SemaType *t = type_of(S, scope, e);
  sema_record(S, e, t);
  return t;
}
