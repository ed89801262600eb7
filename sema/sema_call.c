/* sema_call.c — calls, structure accessors and function bodies.
 *
 * Calls are builtins (elementwise sigmoid tanh relu exp log sqrt abs, and
 * concat), the structure accessors leaf(n) and root(t), rec functions and
 * defs. A rec call is where well-founded recursion is enforced: inside a rec
 * function its argument must be a child (n.child[k]), a predecessor
 * (n.pred[k]) or the previous element (n.prev) of the function's node; in
 * the output it must be root(t). A def is checked at each call with its
 * shape variables bound to the argument shapes (its body once per def).
 */
#include "sema/sema_int.h"

#include <string.h>

SemaType *sema_concat(Sema *S, Scope *scope, const AstExpr *e, AstExpr **elems, int n);
SemaType *sema_resolve_type(Sema *S, Scope *scope, const AstType *t);

static const char *const elementwise_builtins[] = {"sigmoid", "tanh", "relu", "exp",
                                                   "log", "sqrt", "abs"};

static const char *closest_builtin(const char *name);

static bool want_args(Sema *S, const AstExpr *e, int n) {
  if (e->u.call.nargs == n) return true;
  ctx_diag_error(S->diag, e->span, "'%s' takes %d argument%s, but %d %s given",
                 e->u.call.callee, n, n == 1 ? "" : "s", e->u.call.nargs,
                 e->u.call.nargs == 1 ? "was" : "were");
  return false;
}

static SemaType *builtin(Sema *S, Scope *scope, const AstExpr *e) {
  if (!want_args(S, e, 1)) return sema_error_type(S);
  SemaType *t = sema_expr(S, scope, e->u.call.args[0]);
  if (t->kind == SEMA_TENSOR && t->elem == SEMA_F32) return t;
  if (t->kind != SEMA_ERROR)
    ctx_diag_error(S->diag, e->u.call.args[0]->span, "'%s' needs an f32 tensor, found %s",
                   e->u.call.callee, sema_type_str(S, t));
  return sema_error_type(S);
}

/* leaf(n): n is the function's node. root(t): t is the structure. */
static SemaType *accessor(Sema *S, Scope *scope, const AstExpr *e, bool is_root) {
  if (!want_args(S, e, 1)) return sema_error_type(S);
  const AstExpr *a = e->u.call.args[0];
  Sym *s = a->kind == AST_NAME ? sema_lookup(S, scope, a->u.name.id) : NULL;
  if (a->kind == AST_NAME && !s) {
    sema_unknown(S, scope, a->span, "name", a->u.name.id);
    return sema_error_type(S);
  }
  if (is_root && s && s->kind == SYM_STRUCT) return sema_node_type(S, SEMA_NODE_ROOT);
  if (!is_root && s && s->kind == SYM_NODE) return sema_bool_type(S);
  if (is_root)
    ctx_diag_error(S->diag, a->span, "'root' takes the structure input '%s'",
                   S->m->structure.name);
  else
    ctx_diag_error(S->diag, a->span, "'leaf' takes the node of the enclosing rec function");
  return sema_error_type(S);
}

static SemaType *rec_call(Sema *S, Scope *scope, const AstExpr *e, Sym *f) {
  if (!want_args(S, e, 1)) return sema_error_type(S);
  const AstExpr *a = e->u.call.args[0];
  SemaType *t = sema_expr(S, scope, a);
  if (t->kind == SEMA_ERROR) return t;
  if (t->kind != SEMA_NODE) {
    ctx_diag_error(S->diag, a->span, "'%s' takes a node, found %s", f->name,
                   sema_type_str(S, t));
  } else if (S->in_output && t->rel != SEMA_NODE_ROOT) {
    ctx_diag_error(S->diag, a->span, "the output must apply '%s' to 'root(%s)'", f->name,
                   S->m->structure.name);
  } else if (!S->in_output && !S->in_rec) {
    ctx_diag_error(S->diag, e->span, "rec function '%s' may be called only from rec "
                   "functions and the output", f->name);
  } else if (!S->in_output && t->rel == SEMA_NODE_SELF) {
    ctx_diag_error(S->diag, a->span, "recursive call must go to a child of '%s'; '%s' itself "
                   "would recurse forever", S->node_name, S->node_name);
  } else if (!S->in_output && t->rel == SEMA_NODE_ROOT) {
    ctx_diag_error(S->diag, a->span, "recursive call must go to a child of '%s', not to the "
                   "root", S->node_name);
  } else {
    return f->type ? f->type : sema_error_type(S);
  }
  return sema_error_type(S);
}

/* A shape entry c * V or V * c whose V is not bound yet: binds V to
 * [have] / c, so `g: f32[3*H]` alone fixes H. False when [d] has another
 * form. */
static bool solve_axis(Sema *S, Scope *vars, const AstExpr *d, long have, bool *ok) {
  if (d->kind != AST_BINARY || d->u.binary.op != AST_OP_MUL) return false;
  const AstExpr *v = d->u.binary.rhs, *c = d->u.binary.lhs;
  if (v->kind != AST_NAME || sema_lookup(S, vars, v->u.name.id)) {
    v = d->u.binary.lhs;
    c = d->u.binary.rhs;
  }
  if (v->kind != AST_NAME || sema_lookup(S, vars, v->u.name.id)) return false;
  long k;
  *ok = sema_const_eval(S, vars, c, &k) && k > 0 && have % k == 0;
  if (*ok) {
    Sym *s = sema_bind(S, vars, v->u.name.id, v->span, SYM_SHAPEVAR);
    s->type = sema_int_type(S, true, have / k);
  }
  return true;
}

/* Binds or checks one axis of a def parameter against an argument. */
static bool bind_axis(Sema *S, Scope *vars, const AstExpr *d, long have) {
  if (d->kind == AST_NAME) {
    Sym *s = sema_lookup(S, vars, d->u.name.id);
    if (!s) {
      s = sema_bind(S, vars, d->u.name.id, d->span, SYM_SHAPEVAR);
      s->type = sema_int_type(S, true, have);
      return true;
    }
  }
  bool ok;
  if (solve_axis(S, vars, d, have, &ok)) return ok;
  long want;
  return sema_const_eval(S, vars, d, &want) && want == have;
}

static bool bind_param(Sema *S, Scope *vars, const AstField *p, const AstExpr *a,
                       SemaType *t) {
  const AstType *pt = p->type;
  bool ok = t->kind == SEMA_TENSOR && pt->kind <= AST_TYPE_I32 && t->rank == pt->ndims &&
            (t->elem == SEMA_F32) == (pt->kind == AST_TYPE_F32);
  for (int j = 0; ok && j < pt->ndims; j++) ok = bind_axis(S, vars, pt->dims[j], t->dims[j]);
  if (!ok) {
    CtxBuf b;
    ctx_buf_init(&b);
    ast_print_type(&b, pt);
    ctx_diag_error(S->diag, a->span, "argument '%s' must be %s, found %s", p->name,
                   ctx_buf_str(&b), sema_type_str(S, t));
    ctx_diag_note(S->diag, p->name_span, "parameter '%s' is declared here", p->name);
    ctx_buf_free(&b);
  }
  return ok;
}

/* The argument types of a call, as one string (a def's instance key). */
static const char *arg_shapes(Sema *S, SemaType **args, int n) {
  CtxBuf b;
  ctx_buf_init(&b);
  for (int i = 0; i < n; i++) {
    if (i) ctx_buf_puts(&b, ", ");
    sema_print_type(&b, args[i]);
  }
  const char *r = ctx_arena_strdup(S->arena, ctx_buf_str(&b));
  ctx_buf_free(&b);
  return r;
}

/* The copy of [f]'s item typed for the argument shapes [shapes], made and
 * checked by instantiate; NULL for the first shapes (the item itself). */
static const AstItem *instance_for(Sema *S, const Sym *f, const char *shapes) {
  for (int i = 0; i < S->m->instances.len; i++) {
    const SemaInstance *in = S->m->instances.items[i];
    if (in->def == f->item && strcmp(in->shapes, shapes) == 0) return in->item;
  }
  return NULL;
}

/* Binds the parameters of [f] to the argument types [args] and checks its
 * body once per set of argument shapes: the first on the def's own item, any
 * other on a copy of it with types of its own, which the call [e] then names
 * (SemaModel.instances); returns the result type. */
static SemaType *instantiate(Sema *S, const AstExpr *e, Sym *f, SemaType **args) {
  const AstItem *it = f->item;
  Scope *vars = CTX_NEW(S->arena, Scope);
  bool ok = true;
  for (int i = 0; i < it->nparams; i++)
    ok &= bind_param(S, vars, &it->params[i], e->u.call.args[i], args[i]);
  if (!ok) return sema_error_type(S);
  if (f->active) {
    ctx_diag_error(S->diag, e->span, "def '%s' calls itself; only rec functions may recurse",
                   f->name);
    return sema_error_type(S);
  }
  const char *shapes = arg_shapes(S, args, it->nparams);
  const AstItem *item = it; /* the def's own, or its copy for other shapes */
  bool fresh = !f->checked;
  if (f->checked && f->shapes && strcmp(shapes, f->shapes) != 0) {
    item = instance_for(S, f, shapes);
    fresh = !item;
    if (fresh) item = ast_clone_item(S->arena, it);
  }
  SemaType *result = f->type ? f->type : sema_resolve_type(S, vars, item->type);
  if (result->kind == SEMA_ERROR) return result;
  if (item != it) {
    SemaInstance *in = CTX_NEW(S->arena, SemaInstance);
    *in = (SemaInstance){e, it, item, shapes};
    ctx_vec_push(S->arena, &S->m->instances, in);
  } else if (fresh) {
    f->checked = true;
    f->shapes = shapes;
  }
  if (fresh) {
    f->active = true;
    for (int i = 0; i < it->nparams; i++) {
      Sym *p = sema_bind(S, vars, item->params[i].name, item->params[i].name_span, SYM_LOCAL);
      if (p) p->type = args[i];
    }
    sema_function_body(S, vars, item, result);
    f->active = false;
  }
  return result;
}

/* Arguments are typed in the caller's scope; the def's shapes and body in
 * its own (the library scope for an imported def: SEMA-LIB-SCOPE). */
static SemaType *def_call(Sema *S, Scope *scope, const AstExpr *e, Sym *f) {
  const AstItem *it = f->item;
  if (!want_args(S, e, it->nparams)) return sema_error_type(S);
  bool ok = true;
  SemaType **args = CTX_NEW_ARRAY(S->arena, SemaType *, it->nparams);
  for (int i = 0; i < it->nparams; i++) {
    args[i] = sema_expr(S, scope, e->u.call.args[i]);
    if (args[i]->kind == SEMA_ERROR) ok = false;
  }
  if (!ok) return sema_error_type(S);
  Scope *top = S->top;
  if (f->imported) S->top = &S->lib;
  SemaType *result = instantiate(S, e, f, args);
  S->top = top;
  return result;
}

SemaType *sema_call(Sema *S, Scope *scope, const AstExpr *e) {
  const char *name = e->u.call.callee;
  for (size_t i = 0; i < sizeof elementwise_builtins / sizeof *elementwise_builtins; i++)
    if (strcmp(name, elementwise_builtins[i]) == 0) return builtin(S, scope, e);
  if (strcmp(name, "concat") == 0)
    return sema_concat(S, scope, e, e->u.call.args, e->u.call.nargs);
  if (strcmp(name, "leaf") == 0) return accessor(S, scope, e, false);
  if (strcmp(name, "root") == 0) return accessor(S, scope, e, true);
  Sym *f = sema_lookup(S, scope, name);
  if (f && f->kind == SYM_REC) return rec_call(S, scope, e, f);
  if (f && f->kind == SYM_DEF) return def_call(S, scope, e, f);
  const char *near = f ? NULL : closest_builtin(name);
  if (f) {
    ctx_diag_error(S->diag, e->u.call.callee_span, "'%s' is not a function", name);
  } else if (near) {
    ctx_diag_error(S->diag, e->u.call.callee_span, "unknown function '%s'", name);
    ctx_diag_note(S->diag, e->u.call.callee_span, "did you mean the builtin '%s'?", near);
  } else {
    sema_unknown(S, scope, e->u.call.callee_span, "function", name);
  }
  return sema_error_type(S);
}

/* The builtin whose name is closest to [name] (a typo: `tahn`), or NULL. */
static const char *closest_builtin(const char *name) {
  static const char *const others[] = {"concat", "leaf", "root"};
  size_t len = strlen(name);
  int cap = len <= 2 ? 0 : len <= 5 ? 2 : 3, best = cap + 1;
  const char *near = NULL;
  for (size_t i = 0; i < sizeof elementwise_builtins / sizeof *elementwise_builtins + 3; i++) {
    size_t nb = sizeof elementwise_builtins / sizeof *elementwise_builtins;
    const char *b = i < nb ? elementwise_builtins[i] : others[i - nb];
    int d = ctx_edit_distance(name, b, cap);
    if (d < best) best = d, near = b;
  }
  return near;
}

/* ---- members: node accessors and tuple fields -------------------------------- */

static SemaType *node_member(Sema *S, const AstExpr *e) {
  const char *f = e->u.member.field;
  SemaStructKind k = S->m->structure.kind;
  struct { const char *name; SemaStructKind kind; SemaTypeKind type; } table[] = {
      {"children", SEMA_TREE, SEMA_RANGE},     {"num_children", SEMA_TREE, SEMA_INT},
      {"preds", SEMA_DAG, SEMA_RANGE},         {"num_preds", SEMA_DAG, SEMA_INT},
      {"prev", SEMA_SEQUENCE, SEMA_NODE},      {"child", SEMA_TREE, SEMA_ERROR},
      {"pred", SEMA_DAG, SEMA_ERROR}};
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    if (strcmp(f, table[i].name) != 0) continue;
    if (table[i].kind != k) {
      ctx_diag_error(S->diag, e->u.member.field_span, "'%s' is defined on a %s, but '%s' is "
                     "a %s", f, sema_struct_word(table[i].kind), S->m->structure.name,
                     sema_struct_word(k));
      return sema_error_type(S);
    }
    if (table[i].type == SEMA_ERROR) break;
    SemaType *t = CTX_NEW(S->arena, SemaType);
    t->kind = table[i].type;
    t->rel = SEMA_NODE_CHILD;
    return t;
  }
  if (strcmp(f, "child") == 0 || strcmp(f, "pred") == 0)
    ctx_diag_error(S->diag, e->span, "'%s' needs an index, as '%s[0]'", f, f);
  else
    ctx_diag_error(S->diag, e->u.member.field_span, "a node has no field '%s'", f);
  return sema_error_type(S);
}

SemaType *sema_member(Sema *S, Scope *scope, const AstExpr *e) {
  SemaType *t = sema_expr(S, scope, e->u.member.base);
  if (t->kind == SEMA_ERROR) return t;
  if (t->kind == SEMA_NODE) {
    if (t->rel == SEMA_NODE_SELF) return node_member(S, e);
    ctx_diag_error(S->diag, e->u.member.base->span, "structure accessors apply only to the "
                   "node of the enclosing rec function");
    return sema_error_type(S);
  }
  for (int i = 0; t->kind == SEMA_TUPLE && t->names && i < t->nfields; i++)
    if (t->names[i] && strcmp(t->names[i], e->u.member.field) == 0) return t->fields[i];
  ctx_diag_error(S->diag, e->u.member.field_span, "%s has no field '%s'", sema_type_str(S, t),
                 e->u.member.field);
  return sema_error_type(S);
}

void sema_function_body(Sema *S, Scope *params, const AstItem *fn, SemaType *result) {
  Sema saved = *S;
  S->fn = fn;
  S->fn_result = result;
  S->in_rec = fn->kind == AST_REC;
  S->node_name = S->in_rec ? fn->params[0].name : NULL;
  S->in_output = false;
  if (!sema_block(S, params, &fn->body))
    ctx_diag_error(S->diag, fn->name.span, "not every path of '%s' returns a value",
                   fn->name.id);
  S->fn = saved.fn;
  S->fn_result = saved.fn_result;
  S->in_rec = saved.in_rec;
  S->node_name = saved.node_name;
  S->in_output = saved.in_output;
}

const SemaInstance *sema_instance_of(const SemaModel *m, const AstExpr *call) {
  for (int i = 0; i < m->instances.len; i++) {
    const SemaInstance *in = m->instances.items[i];
    if (in->call == call) return in;
  }
  return NULL;
}
