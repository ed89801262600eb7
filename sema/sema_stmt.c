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

static bool check_stmt(Sema *S, Scope *scope, const AstStmt *st);

/* A let of the body of `for k in n.children` [sym], seen after the loop: one
 * row per child slot, [K, ...], zeros where the node has fewer children. */
static void export_loop_let(Sema *S, Scope *scope, const Sym *sym, long k) {
  if (sym->kind != SYM_LOCAL || !sym->type || sym->type->kind != SEMA_TENSOR) return;
  if (sym->type->rank >= SEMA_MAX_RANK) {
    ctx_diag_error(S->diag, sym->span, "'%s' has %d axes; a let in a 'for' loop gets one "
                   "more and may have at most %d", sym->name, sym->type->rank,
                   SEMA_MAX_RANK - 1);
    return;
  }
  long dims[SEMA_MAX_RANK];
  dims[0] = k;
  for (int i = 0; i < sym->type->rank; i++) dims[i + 1] = sym->type->dims[i];
  Sym *out = sema_bind(S, scope, sym->name, sym->span, SYM_LOCAL);
  if (out) out->type = sema_tensor_type(S, sym->type->elem, sym->type->rank + 1, dims);
}

/* for k in n.children { lets }: the body once per child slot k below the
 * declared maximum; each of its lets is visible after the loop with a
 * leading child axis (docs/language.md, "Statements"). */
static void check_for(Sema *S, Scope *scope, const AstStmt *st) {
  SemaType *r = sema_expr(S, scope, st->u.for_.range);
  if (r->kind != SEMA_RANGE && r->kind != SEMA_ERROR)
    ctx_diag_error(S->diag, st->u.for_.range->span, "'for' ranges over 'n.children' or "
                   "'n.preds', not %s", sema_type_str(S, r));
  if (S->in_for)
    ctx_diag_error(S->diag, st->span, "a 'for' loop inside a 'for' loop is not supported; "
                   "use a reduction (sum(j in n.children) ...) inside the loop");
  Scope inner = {NULL, scope}, body = {NULL, &inner};
  sema_bind(S, &inner, st->u.for_.var.id, st->u.for_.var.span, SYM_CHILDVAR);
  bool saved = S->in_for;
  S->in_for = true;
  for (int i = 0; i < st->u.for_.body.n; i++) {
    const AstStmt *s = st->u.for_.body.stmts[i];
    if (check_stmt(S, &body, s))
      ctx_diag_error(S->diag, s->span, "'return' inside 'for' is not allowed");
  }
  S->in_for = saved;
  long k = S->m->structure.max_arity;
  if (k <= 0 && r->kind == SEMA_RANGE) {
    ctx_diag_error(S->diag, st->span, "a 'for' loop needs a declared maximum number of "
                   "children (max_children = K)");
    return;
  }
  /* in binding order, so that a later duplicate is reported at the later let */
  int n = 0;
  for (Sym *sym = body.syms; sym; sym = sym->next) n++;
  for (int i = n - 1; i >= 0; i--) {
    Sym *sym = body.syms;
    for (int j = 0; j < i; j++) sym = sym->next;
    export_loop_let(S, scope, sym, k);
  }
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
