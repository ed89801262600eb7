/* sema_stmt.c — statements of function bodies: lets, if, for, return.
 *
 * Each block is a scope. A block returns when its last reachable statement
 * is a return or an if/else whose branches both return; code after a return
 * is an error. Conditions must be structure conditions (sema_expr reports a
 * tensor-valued operand); returns must match the declared result type.
 */
#include "sema/sema_int.h"

static void bind_local(Sema *S, Scope *scope, const AstIdent *id, SemaType *t) {
  Sym *s = sema_bind(S, scope, id->id, id->span, SYM_LOCAL);
  if (s) s->type = t;
}

static void check_let(Sema *S, Scope *scope, const AstStmt *st) {
  if (st->u.let.nidx > 0) {
    bind_local(S, scope, &st->u.let.names[0], sema_index_let(S, scope, st));
    return;
  }
  SemaType *t = sema_expr(S, scope, st->u.let.value);
  if (!st->u.let.destructure) {
    if (t->kind == SEMA_NODE || t->kind == SEMA_RANGE || t->kind == SEMA_BOOL) {
      ctx_diag_error(S->diag, st->u.let.value->span, "'let' must name a tensor, found %s",
                     sema_type_str(S, t));
      t = sema_error_type(S);
    }
    bind_local(S, scope, &st->u.let.names[0], t);
    return;
  }
  int n = st->u.let.nnames;
  if (t->kind != SEMA_ERROR && (t->kind != SEMA_TUPLE || t->nfields != n)) {
    ctx_diag_error(S->diag, st->u.let.value->span, "cannot destructure %s into %d names",
                   sema_type_str(S, t), n);
    t = sema_error_type(S);
  }
  for (int i = 0; i < n; i++)
    bind_local(S, scope, &st->u.let.names[i], t->kind == SEMA_TUPLE ? t->fields[i] : t);
}

static void check_return(Sema *S, Scope *scope, const AstStmt *st) {
  SemaType *t = sema_expr(S, scope, st->u.ret.value);
  if (t->kind == SEMA_ERROR || S->fn_result->kind == SEMA_ERROR) return;
  if (t->kind == SEMA_INT && S->fn_result->kind == SEMA_TENSOR && S->fn_result->rank == 0)
    return;
  if (!sema_type_eq(t, S->fn_result))
    ctx_diag_error(S->diag, st->u.ret.value->span, "returns %s, but '%s' is declared to "
                   "return %s", sema_type_str(S, t), S->fn->name.id,
                   sema_type_str(S, S->fn_result));
}

static void check_cond(Sema *S, Scope *scope, const AstExpr *c) {
  SemaType *t = sema_expr(S, scope, c);
  if (t->kind == SEMA_BOOL || t->kind == SEMA_ERROR) return;
  if (t->kind == SEMA_TENSOR || t->kind == SEMA_TUPLE)
    ctx_diag_error(S->diag, c->span, "condition depends on tensor values; control flow may "
                   "depend only on the structure");
  else
    ctx_diag_error(S->diag, c->span, "expected a condition, found %s", sema_type_str(S, t));
}

static void check_for(Sema *S, Scope *scope, const AstStmt *st) {
  SemaType *r = sema_expr(S, scope, st->u.for_.range);
  if (r->kind != SEMA_RANGE && r->kind != SEMA_ERROR)
    ctx_diag_error(S->diag, st->u.for_.range->span, "'for' ranges over 'n.children' or "
                   "'n.preds', not %s", sema_type_str(S, r));
  Scope inner = {NULL, scope};
  Sym *k = sema_bind(S, &inner, st->u.for_.var.id, st->u.for_.var.span, SYM_CHILDVAR);
  (void)k;
  if (sema_block(S, &inner, &st->u.for_.body))
    ctx_diag_error(S->diag, st->span, "'return' inside 'for' is not allowed");
}

/* Checks [st]; returns true when it returns on every path. */
static bool check_stmt(Sema *S, Scope *scope, const AstStmt *st) {
  switch (st->kind) {
  case AST_LET: check_let(S, scope, st); return false;
  case AST_RETURN: check_return(S, scope, st); return true;
  case AST_FOR: check_for(S, scope, st); return false;
  case AST_IF: {
    check_cond(S, scope, st->u.if_.cond);
    bool a = sema_block(S, scope, &st->u.if_.then);
    bool b = st->u.if_.els ? sema_block(S, scope, st->u.if_.els) : false;
    return a && b;
  }
  }
  return false;
}

bool sema_block(Sema *S, Scope *up, const AstBlock *b) {
  Scope scope = {NULL, up};
  bool returned = false;
  for (int i = 0; i < b->n; i++) {
    if (returned) {
      ctx_diag_error(S->diag, b->stmts[i]->span, "unreachable code after 'return'");
      return true;
    }
    returned = check_stmt(S, &scope, b->stmts[i]);
  }
  return returned;
}
