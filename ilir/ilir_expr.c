/* ilir_expr.c — constructors of ILIR expressions and statements.
 *
 * Integer additions and multiplications of constants fold, and adding 0 or
 * multiplying by 1 disappears, so index arithmetic of fixed shapes prints
 * (and compiles) as plainly as it was written.
 */
#include "ilir/ilir_int.h"

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
    return ILIR_F32;
  default:
    return ILIR_I64;
  }
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

IlirExpr *ilir_binary(CtxArena *a, int op, IlirExpr *x, IlirExpr *y) {
  if (x->type == ILIR_I64 && x->kind == ILIR_CONST && y->kind == ILIR_CONST &&
      y->type == ILIR_I64) {
    if (op == ILIR_ADD) return ilir_const_i(a, x->ival + y->ival);
    if (op == ILIR_SUB) return ilir_const_i(a, x->ival - y->ival);
    if (op == ILIR_MUL) return ilir_const_i(a, x->ival * y->ival);
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
