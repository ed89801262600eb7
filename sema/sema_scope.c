/* sema_scope.c — names: binding, lookup, "did you mean" suggestions, and the
 * evaluation of integer constant expressions (dims, slice bounds, shapes).
 *
 * Globals (dims, inputs, params, functions) share one namespace; each block
 * of a function body has its own scope, so a let may shadow an outer name
 * but not a name of its own block. The defs of imported files live in a
 * library scope above the globals; inside an imported def, lookups stop at
 * the library scope, so library code never sees a model's names.
 */
#include "sema/sema_int.h"

#include <limits.h>
#include <string.h>

Sym *sema_find(Scope *scope, const char *name) {
  for (Sym *s = scope->syms; s; s = s->next)
    if (strcmp(s->name, name) == 0) return s;
  return NULL;
}

Sym *sema_bind(Sema *S, Scope *scope, const char *name, CtxSpan span, SymKind kind) {
  Sym *old = sema_find(scope, name);
  if (old) {
    ctx_diag_error(S->diag, span, "duplicate definition of '%s'", name);
    ctx_diag_note(S->diag, old->span, "'%s' first defined here", name);
    return NULL;
  }
  Sym *s = CTX_NEW(S->arena, Sym);
  s->name = name;
  s->span = span;
  s->kind = kind;
  s->next = scope->syms;
  scope->syms = s;
  return s;
}

/* Local scopes end in NULL; lookups then continue at S->top and the scopes
 * above it (the model's globals, then the library's defs). */
Sym *sema_lookup(Sema *S, Scope *scope, const char *name) {
  bool passed_top = false;
  for (Scope *sc = scope; sc; sc = sc->up) {
    Sym *s = sema_find(sc, name);
    if (s) return s;
    passed_top |= sc == S->top;
  }
  for (Scope *sc = S->top; !passed_top && sc; sc = sc->up) {
    Sym *s = sema_find(sc, name);
    if (s) return s;
  }
  return NULL;
}

static void closest_in(Scope *sc, const char *name, const Sym **best, int *dist) {
  for (Sym *s = sc->syms; s; s = s->next) {
    if (s->kind == SYM_MODEL) continue;
    int d = ctx_edit_distance(name, s->name, *dist);
    if (d < *dist) {
      *dist = d;
      *best = s;
    }
  }
}

void sema_unknown(Sema *S, Scope *scope, CtxSpan span, const char *what, const char *name) {
  ctx_diag_error(S->diag, span, "unknown %s '%s'", what, name);
  size_t len = strlen(name);
  int cap = len <= 2 ? 1 : len <= 5 ? 2 : 3;
  const Sym *best = NULL;
  int dist = cap + 1;
  bool passed_top = false;
  for (Scope *sc = scope; sc; sc = sc->up) {
    closest_in(sc, name, &best, &dist);
    passed_top |= sc == S->top;
  }
  for (Scope *sc = S->top; !passed_top && sc; sc = sc->up) closest_in(sc, name, &best, &dist);
  if (best) ctx_diag_note(S->diag, best->span, "did you mean '%s'?", best->name);
}

/* ---- integer constant expressions ------------------------------------------ */

static bool arith(Sema *S, const AstExpr *e, long a, long b, long *out) {
  long r = 0;
  bool ovf = false;
  switch (e->u.binary.op) {
  case AST_OP_ADD: ovf = __builtin_add_overflow(a, b, &r); break;
  case AST_OP_SUB: ovf = __builtin_sub_overflow(a, b, &r); break;
  case AST_OP_MUL: ovf = __builtin_mul_overflow(a, b, &r); break;
  case AST_OP_DIV:
    if (b == 0) {
      ctx_diag_error(S->diag, e->span, "division by zero in a constant expression");
      return false;
    }
    if (a % b != 0) {
      ctx_diag_error(S->diag, e->span, "%ld / %ld is not exact", a, b);
      return false;
    }
    r = a / b;
    break;
  default:
    ctx_diag_error(S->diag, e->span, "'%s' is not allowed in a constant expression",
                   ast_op_name(e->u.binary.op));
    return false;
  }
  if (ovf) {
    ctx_diag_error(S->diag, e->span, "constant expression overflows");
    return false;
  }
  *out = r;
  return true;
}

static bool const_name(Sema *S, Scope *scope, const AstExpr *e, long *out) {
  Sym *s = sema_lookup(S, scope, e->u.name.id);
  if (!s) {
    sema_unknown(S, scope, e->span, "name", e->u.name.id);
    return false;
  }
  if ((s->kind == SYM_DIM || s->kind == SYM_SHAPEVAR) && s->type) {
    *out = s->type->value;
    return true;
  }
  if (s->kind == SYM_DIM && !s->checked) {
    ctx_diag_error(S->diag, e->span, "dim '%s' is used before its definition", e->u.name.id);
    return false;
  }
  if (s->kind == SYM_DIM) return false; /* its own definition failed */
  ctx_diag_error(S->diag, e->span, "'%s' is not a dim; a constant expression may use only "
                 "dims and integers", e->u.name.id);
  return false;
}

bool sema_const_eval(Sema *S, Scope *scope, const AstExpr *e, long *out) {
  long a, b;
  switch (e->kind) {
  case AST_ERROR: return false;
  case AST_NUMBER:
    if (e->u.num.is_int && e->u.num.value <= (double)LONG_MAX) {
      *out = (long)e->u.num.value;
      return true;
    }
    ctx_diag_error(S->diag, e->span, "expected an integer, found '%s'", e->u.num.text);
    return false;
  case AST_NAME: return const_name(S, scope, e, out);
  case AST_UNARY:
    if (e->u.unary.op != AST_OP_NEG) break;
    if (!sema_const_eval(S, scope, e->u.unary.operand, &a)) return false;
    *out = -a;
    return true;
  case AST_BINARY:
    if (!sema_const_eval(S, scope, e->u.binary.lhs, &a)) return false;
    if (!sema_const_eval(S, scope, e->u.binary.rhs, &b)) return false;
    return arith(S, e, a, b, out);
  default: break;
  }
  ctx_diag_error(S->diag, e->span, "expected a constant expression of dims and integers");
  return false;
}
