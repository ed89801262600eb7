/* ra_lower.c — lowering checked expressions to RA's index form.
 *
 * ra_lower(e, idx) returns the scalar expression for the element of [e] at
 * the index expressions [idx] (one per axis of e's type). Elementwise
 * operations pass the index through; a slice shifts it; a concatenation
 * selects on the first index; a matrix product becomes a sum over its inner
 * axis — materialized as an operator of its own when none of its operands
 * can depend on a reduction variable, inlined otherwise. A `def` call is
 * inlined by substitution: its parameters and locals stand for expressions
 * lowered where they are used (B_EXPR bindings), so a def works inside a
 * reduction as well as outside. Sema has checked every expression, so shapes
 * agree and names resolve; what RA cannot express yet is reported here.
 */
#include "ra/ra_int.h"

#include <string.h>

/* ---- small constructors ------------------------------------------------------ */

static RaExpr *new_expr(RaBuilder *B, RaExprKind kind) {
  RaExpr *e = CTX_NEW(B->arena, RaExpr);
  e->kind = kind;
  return e;
}

RaExpr *ra_const(RaBuilder *B, double v) {
  RaExpr *e = new_expr(B, RA_CONST);
  e->value = v;
  return e;
}

RaExpr *ra_var_ref(RaBuilder *B, RaVar *v) {
  RaExpr *e = new_expr(B, RA_VAR);
  e->var = v;
  return e;
}

static RaExpr *binary(RaBuilder *B, int op, RaExpr *a, RaExpr *b) {
  if (a->kind == RA_CONST && b->kind == RA_CONST && op <= RA_MUL) /* dim arithmetic */
    return ra_const(B, op == RA_ADD ? a->value + b->value
                       : op == RA_SUB ? a->value - b->value : a->value * b->value);
  RaExpr *e = new_expr(B, RA_BINARY);
  e->op = op;
  e->a = a;
  e->b = b;
  return e;
}

static RaExpr *unary(RaBuilder *B, int fn, RaExpr *a) {
  RaExpr *e = new_expr(B, RA_UNARY);
  e->op = fn;
  e->a = a;
  return e;
}

/* [a] + [c], folding a zero offset away. */
static RaExpr *offset(RaBuilder *B, RaExpr *a, RaExpr *c) {
  if (c->kind == RA_CONST && c->value == 0) return a;
  if (a->kind == RA_CONST && c->kind == RA_CONST) return ra_const(B, a->value + c->value);
  return binary(B, RA_ADD, a, c);
}

static RaExpr *read(RaBuilder *B, RaSrcKind src, int index, RaExpr **idx, int n) {
  RaExpr *e = new_expr(B, RA_READ);
  e->src = src;
  e->index = index;
  e->nidx = n;
  e->idx = CTX_NEW_ARRAY(B->arena, RaExpr *, n);
  if (n) memcpy(e->idx, idx, sizeof(RaExpr *) * (size_t)n);
  return e;
}

/* A read of operator [op] at [idx] ([n] entries); an operator of the for
 * loop being lowered is read at the loop's k first. */
static RaExpr *read_op(RaBuilder *B, RaOp *op, RaExpr **idx, int n) {
  if (!ra_per_child(B, op)) return read(B, RA_SRC_OP, op->id, idx, n);
  RaExpr *full[RA_MAX_RANK];
  full[0] = ra_var_ref(B, B->loop_var);
  if (n) memcpy(full + 1, idx, sizeof(RaExpr *) * (size_t)n);
  return read(B, RA_SRC_OP, op->id, full, n + 1);
}

RaVar *ra_new_var(RaBuilder *B, const char *name, long extent, bool over_deps) {
  RaVar *v = CTX_NEW(B->arena, RaVar);
  v->name = name;
  v->id = B->fn->nvars++;
  v->extent = extent;
  v->over_deps = over_deps;
  return v;
}

RaBinding *ra_bind(RaBuilder *B, RaBinding *up, const char *name, RaBindKind kind) {
  RaBinding *b = CTX_NEW(B->arena, RaBinding);
  b->name = name;
  b->kind = kind;
  b->next = up;
  return b;
}

static RaBinding *lookup(RaBuilder *B, const char *name) {
  for (RaBinding *b = B->scope; b; b = b->next)
    if (strcmp(b->name, name) == 0) return b;
  return NULL;
}

void ra_unsupported(RaBuilder *B, CtxSpan span, const char *what) {
  ctx_diag_error(B->diag, span, "%s is not supported by RA yet", what);
  B->failed = true;
}

RaShape ra_shape_of(const SemaType *t) {
  RaShape s;
  memset(&s, 0, sizeof s);
  s.size = 1;
  if (!t || t->kind != SEMA_TENSOR) return s;
  s.rank = t->rank;
  for (int i = 0; i < t->rank; i++) {
    s.dims[i] = t->dims[i];
    s.size *= t->dims[i];
  }
  return s;
}

const SemaType *ra_type(RaBuilder *B, const AstExpr *e) {
  const SemaType *t = sema_type_of(B->m, e);
  if (!t) CTX_ICE(B->diag, "expression at %d:%d has no type", e->span.line, e->span.col);
  return t;
}

/* Rank of [e]'s type; 0 for integers (sema does not type every subscript). */
static int rank_of(RaBuilder *B, const AstExpr *e) {
  const SemaType *t = sema_type_of(B->m, e);
  return t && t->kind == SEMA_TENSOR ? t->rank : 0;
}

/* An error stand-in after a reported problem. */
static RaExpr *failed(RaBuilder *B) {
  B->failed = true;
  return ra_const(B, 0);
}

/* ---- names, nodes and calls ---------------------------------------------------- */

/* Lowers [e] with B->scope set to [scope]. */
static RaExpr *lower_in(RaBuilder *B, RaBinding *scope, const AstExpr *e, int field,
                        RaExpr **idx) {
  RaBinding *saved = B->scope;
  B->scope = scope;
  RaExpr *r = field < 0 ? ra_lower(B, e, idx) : ra_lower_field(B, e, field, idx);
  B->scope = saved;
  return r;
}

static RaExpr *lower_name(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  RaBinding *b = lookup(B, e->u.name.id);
  int n = rank_of(B, e);
  if (!b) {
    CTX_ICE(B->diag, "unbound name '%s' after sema", e->u.name.id);
    return failed(B);
  }
  switch (b->kind) {
  case B_OP: return read_op(B, b->op, idx, n);
  case B_PARAM: return read(B, RA_SRC_PARAM, b->index, idx, n);
  case B_VAR: return ra_var_ref(B, b->var);
  case B_CONST: return ra_const(B, (double)b->value);
  case B_REC: {
    RaExpr *r = read(B, RA_SRC_REC, b->index, idx, n);
    r->field = b->field < 0 ? 0 : b->field;
    r->dep = b->dep;
    return r;
  }
  case B_EXPR: return lower_in(B, b->scope, b->expr, -1, idx);
  case B_FIELD: return lower_in(B, b->scope, b->expr, b->field, idx);
  case B_SUBST: return b->subst;
  case B_IXLET: { /* y at idx: the let's body with its index names bound to idx */
    RaBinding *env = b->scope;
    for (int i = 0; i < b->stmt->u.let.nidx; i++) {
      env = ra_bind(B, env, b->stmt->u.let.idx[i].id, B_SUBST);
      env->subst = idx[i];
    }
    return lower_in(B, env, b->stmt->u.let.value, -1, NULL);
  }
  default: break;
  }
  ra_unsupported(B, e->span, "using this name as a value");
  return failed(B);
}

RaExpr *ra_node_dep(RaBuilder *B, const AstExpr *arg) {
  if (arg->kind == AST_MEMBER && strcmp(arg->u.member.field, "prev") == 0)
    return ra_const(B, 0);
  if (arg->kind == AST_INDEX && arg->u.index.nsubs == 1 && !arg->u.index.subs[0].is_slice)
    return ra_lower(B, arg->u.index.subs[0].index, NULL);
  ra_unsupported(B, arg->span, "this node expression");
  return NULL;
}

static int rec_index(RaBuilder *B, const char *name) {
  for (int i = 0; i < B->p->nfuncs; i++)
    if (strcmp(B->p->funcs[i].name, name) == 0) return i;
  return -1;
}

static const AstItem *def_item(RaBuilder *B, const char *name) {
  for (int i = 0; i < B->m->nfuncs; i++)
    if (!B->m->funcs[i].is_rec && strcmp(B->m->funcs[i].item->name.id, name) == 0)
      return B->m->funcs[i].item;
  return NULL;
}

/* Binds the shape variables of [def]'s parameter types (names that are not
 * visible dims, alone or as c*V / V*c) to the sizes of the call's arguments. */
static RaBinding *bind_shape_vars(RaBuilder *B, RaBinding *env, const AstItem *def,
                                  const AstExpr *call) {
  for (int i = 0; i < def->nparams && i < call->u.call.nargs; i++) {
    const AstType *pt = def->params[i].type;
    const SemaType *at = ra_type(B, call->u.call.args[i]);
    for (int d = 0; pt->kind <= AST_TYPE_I32 && d < pt->ndims && at && d < at->rank; d++) {
      const AstExpr *x = pt->dims[d];
      long scale = 1;
      if (x->kind == AST_BINARY && x->u.binary.op == AST_OP_MUL) {
        const AstExpr *l = x->u.binary.lhs, *r = x->u.binary.rhs;
        const AstExpr *num = l->kind == AST_NUMBER ? l : r;
        x = l->kind == AST_NUMBER ? r : l;
        if (num->kind != AST_NUMBER || num->u.num.value < 1) continue;
        scale = (long)num->u.num.value;
      }
      if (x->kind != AST_NAME) continue;
      bool bound = false;
      for (RaBinding *b = env; b && !bound; b = b->next) bound = !strcmp(b->name, x->u.name.id);
      if (bound) continue; /* a dim the def sees, or bound by an earlier parameter */
      env = ra_bind(B, env, x->u.name.id, B_CONST);
      env->value = at->dims[d] / scale;
    }
  }
  return env;
}

/* Sema types a def's body once, at its first call; RA reads those types, so
 * every call of a def must have the same argument shapes. */
static bool same_shapes_as_before(RaBuilder *B, const AstItem *def, const AstExpr *call) {
  CtxBuf sig;
  ctx_buf_init(&sig);
  for (int i = 0; i < call->u.call.nargs; i++) {
    if (i) ctx_buf_puts(&sig, ", ");
    sema_print_type(&sig, ra_type(B, call->u.call.args[i]));
  }
  bool ok = true;
  for (int i = 0; i + 2 < B->def_sigs.len; i += 3) {
    if (B->def_sigs.items[i] != def) continue;
    ok = strcmp(B->def_sigs.items[i + 1], ctx_buf_str(&sig)) == 0;
    if (!ok) {
      const AstExpr *first = B->def_sigs.items[i + 2];
      ctx_diag_error(B->diag, call->span, "'%s' is called here with arguments (%s), and "
                     "elsewhere with (%s): a def takes one set of shapes for now",
                     def->name.id, ctx_buf_str(&sig), (const char *)B->def_sigs.items[i + 1]);
      ctx_diag_note(B->diag, first->span, "the call with (%s)",
                    (const char *)B->def_sigs.items[i + 1]);
    }
    ctx_buf_free(&sig);
    B->failed |= !ok;
    return ok;
  }
  ctx_vec_push(B->arena, &B->def_sigs, (void *)def);
  ctx_vec_push(B->arena, &B->def_sigs, ctx_arena_strdup(B->arena, ctx_buf_str(&sig)));
  ctx_vec_push(B->arena, &B->def_sigs, (void *)call);
  ctx_buf_free(&sig);
  return true;
}

static bool uses_bound_var_in(RaBuilder *B, RaBinding *scope, const AstExpr *e);
static bool loop_invariant(RaBuilder *B, RaBinding *scope, const AstExpr *e);

/* Binds [name] in [env] to [value] (lowered in [scope]): an operator of its
 * own when [compute] and it reads no variable bound around it, so that an
 * intermediate of the def is computed once; otherwise an expression lowered
 * where it is used. */
static RaBinding *def_local(RaBuilder *B, RaBinding *env, const AstItem *def,
                            const char *name, const AstExpr *value, RaBinding *scope,
                            bool compute) {
  const SemaType *t = sema_type_of(B->m, value);
  if (compute && t && t->kind == SEMA_TENSOR && !uses_bound_var_in(B, scope, value)) {
    RaBinding *saved = B->scope;
    RaVar *loop = B->loop_var; /* the same for every child: once per node */
    if (loop_invariant(B, scope, value)) B->loop_var = NULL;
    B->scope = scope;
    const char *opname = ctx_arena_printf(B->arena, "%s.%s", def->name.id, name);
    RaOp *op = ra_materialize(B, opname, value, -1, t);
    B->scope = saved;
    B->loop_var = loop;
    env = ra_bind(B, env, name, B_OP);
    env->op = op;
    return env;
  }
  env = ra_bind(B, env, name, B_EXPR);
  env->expr = value;
  env->scope = scope;
  return env;
}

/* A def's `let y[i, j] = body` [s] in [env]: an operator `DEF.y` when the
 * body reads no variable bound around the call (its own index names aside),
 * as ra_build's index-form lets are; otherwise an expression lowered where y
 * is used (B_IXLET), its index names bound to the use's indices. */
static RaBinding *def_index_let(RaBuilder *B, RaBinding *env, const AstItem *def,
                                const AstStmt *s) {
  const char *name = s->u.let.names[0].id;
  RaBinding *own = env;
  for (int i = 0; i < s->u.let.nidx; i++) own = ra_bind(B, own, s->u.let.idx[i].id, B_CONST);
  if (uses_bound_var_in(B, own, s->u.let.value)) {
    env = ra_bind(B, env, name, B_IXLET);
    env->stmt = s;
    env->scope = env->next;
    return env;
  }
  RaBinding *saved = B->scope;
  B->scope = env;
  RaOp *op = ra_index_let_op(B, ctx_arena_printf(B->arena, "%s.%s", def->name.id, name), s, true);
  B->scope = saved;
  env = ra_bind(B, env, name, B_OP);
  env->op = op;
  return env;
}

/* Inlines a def call: returns its result expression (or tuple) and, in
 * [*scope], the bindings it is to be lowered in. */
static const AstExpr *inline_def(RaBuilder *B, const AstItem *def, const AstItem *own,
                                 const AstExpr *call, RaBinding **scope) {
  if (!same_shapes_as_before(B, def, call)) return NULL;
  /* A def of the model sees the model's dims; an imported one sees nothing
   * (its own item says which, [def] being that or sema's copy of it). */
  bool imported = false;
  for (int i = 0; i < B->m->nfuncs; i++)
    if (B->m->funcs[i].item == own) imported = B->m->funcs[i].imported;
  RaBinding *env = bind_shape_vars(B, imported ? NULL : B->globals, def, call);
  for (int i = 0; i < def->nparams; i++) {
    const AstExpr *arg = call->u.call.args[i];
    const char *name = def->params[i].name;
    env = def_local(B, env, def, name, arg, B->scope, arg->kind != AST_NAME);
  }
  for (int i = 0; i < def->body.n; i++) {
    const AstStmt *s = def->body.stmts[i];
    if (s->kind == AST_RETURN) {
      *scope = env;
      return s->u.ret.value;
    }
    if (s->kind != AST_LET) {
      ra_unsupported(B, s->span, "this statement in a def");
      return NULL;
    }
    if (s->u.let.nidx) {
      env = def_index_let(B, env, def, s);
      continue;
    }
    if (!s->u.let.destructure) {
      env = def_local(B, env, def, s->u.let.names[0].id, s->u.let.value, env, true);
      continue;
    }
    for (int k = 0; k < s->u.let.nnames; k++) {
      RaBinding *b = ra_bind(B, env, s->u.let.names[k].id, B_FIELD);
      b->expr = s->u.let.value;
      b->field = k;
      b->scope = env;
      env = b;
    }
  }
  ra_unsupported(B, call->span, "a def without a final return");
  return NULL;
}

static RaExpr *lower_call(RaBuilder *B, const AstExpr *e, int field, RaExpr **idx) {
  static const struct { const char *name; RaFn fn; } fns[] = {
      {"sigmoid", RA_FN_SIGMOID}, {"tanh", RA_FN_TANH}, {"relu", RA_FN_RELU},
      {"exp", RA_FN_EXP},         {"log", RA_FN_LOG},   {"sqrt", RA_FN_SQRT},
      {"abs", RA_FN_ABS}};
  const char *f = e->u.call.callee;
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (strcmp(f, fns[i].name) == 0)
      return unary(B, fns[i].fn, ra_lower(B, e->u.call.args[0], idx));
  if (strcmp(f, "leaf") == 0)
    return binary(B, RA_EQ, new_expr(B, RA_NUM_DEPS), ra_const(B, 0));
  int r = rec_index(B, f);
  if (r >= 0) {
    int n = field >= 0 ? B->p->funcs[r].fields[field].rank : rank_of(B, e);
    RaExpr *x = read(B, RA_SRC_REC, r, idx, n);
    x->field = field < 0 ? 0 : field;
    x->dep = ra_node_dep(B, e->u.call.args[0]);
    return x->dep ? x : failed(B);
  }
  const AstItem *own = def_item(B, f);
  const SemaInstance *copy = sema_instance_of(B->m, e); /* other shapes: sema's copy */
  const AstItem *def = copy ? copy->item : own;
  if (def) {
    RaBinding *scope = NULL;
    const AstExpr *ret = inline_def(B, def, own, e, &scope);
    return ret ? lower_in(B, scope, ret, field, idx) : failed(B);
  }
  ra_unsupported(B, e->span, "this call");
  return failed(B);
}

/* ---- subscripts, members, concatenation ---------------------------------------- */

/* Is [x] a word id: a read of a per-node i32 input? */
static bool is_word(const RaBuilder *B, const RaExpr *x) {
  return x && x->kind == RA_READ && x->src == RA_SRC_INPUT && B->p->inputs[x->index].is_int;
}

/* [x] reads a word id somewhere. */
static bool reads_word(const RaBuilder *B, const RaExpr *x) {
  if (!x) return false;
  if (is_word(B, x)) return true;
  for (int i = 0; x->kind == RA_READ && i < x->nidx; i++)
    if (reads_word(B, x->idx[i])) return true;
  return reads_word(B, x->a) || reads_word(B, x->b) || reads_word(B, x->c);
}

/* [x], or the word id read by the scalar operator [x] reads (`let w =
 * words[n]`): the id itself, which the input's validation can bound. */
static RaExpr *word_id(RaBuilder *B, RaExpr *x) {
  if (x->kind != RA_READ || x->src != RA_SRC_OP || x->nidx != 0) return x;
  const RaOp *op = B->ops.items[x->index];
  return is_word(B, op->body) ? op->body : x;
}

/* The index of [base] for `base[subs]` at [idx]: a plain subscript fixes an
 * axis, a slice shifts an output axis, missing trailing axes pass through. */
static RaExpr *lower_index(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  const AstExpr *base = e->u.index.base;
  RaBinding *b = base->kind == AST_NAME ? lookup(B, base->u.name.id) : NULL;
  RaInput *in = b && b->kind == B_INPUT ? &B->p->inputs[b->index] : NULL;
  int first = in ? 1 : 0; /* words[n], x[n, j]: the node, then the row's axes */
  int rank = in ? in->row.rank : rank_of(B, base), j = 0;
  RaExpr *v[RA_MAX_RANK];
  for (int a = 0; a < rank; a++) {
    const AstSubscript *s = a + first < e->u.index.nsubs ? &e->u.index.subs[a + first] : NULL;
    if (s && !s->is_slice) {
      v[a] = word_id(B, ra_lower(B, s->index, NULL));
      const RaExpr *x = v[a];
      bool word = is_word(B, x);
      if (word && in) {
        ctx_diag_error(B->diag, s->index->span, "a per-node input's values are selected by "
                       "constants, index variables or slices, not by a word id");
        return failed(B);
      }
      if (word) { /* a word id selects a row: the input's validation bounds it */
        RaInput *w = &B->p->inputs[x->index];
        long len = in ? in->row.dims[a] : ra_type(B, base)->dims[a];
        if (w->bound == 0 || len < w->bound) w->bound = len;
      } else if (reads_word(B, x)) {
        /* The input's validation bounds the ids it reads, not values computed
         * from them: words[n] + 1 could reach a row past the last. */
        ctx_diag_error(B->diag, s->index->span, "a row is selected by a per-node i32 input "
                       "as read (Emb[words[n]]), not by a value computed from one");
        return failed(B);
      }
    } else {
      RaExpr *lo = s && s->lo ? ra_lower(B, s->lo, NULL) : ra_const(B, 0);
      v[a] = offset(B, idx[j++], lo);
    }
  }
  if (!in) return ra_lower(B, base, v);
  if (!B->in_leaf) in->read_at_internal = true;
  return read(B, RA_SRC_INPUT, b->index, v, rank);
}

static RaExpr *lower_member(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  const char *f = e->u.member.field;
  if (strcmp(f, "num_children") == 0 || strcmp(f, "num_preds") == 0)
    return new_expr(B, RA_NUM_DEPS);
  const SemaType *t = ra_type(B, e->u.member.base);
  for (int i = 0; t && t->kind == SEMA_TUPLE && i < t->nfields; i++)
    if (t->names && t->names[i] && strcmp(t->names[i], f) == 0)
      return ra_lower_field(B, e->u.member.base, i, idx);
  ra_unsupported(B, e->span, "this member access");
  return failed(B);
}

/* [a; b; ...]: the part that holds index idx[0]. */
static RaExpr *lower_concat(RaBuilder *B, AstExpr *const *parts, int n, RaExpr **idx) {
  long off[64], len[64], total = 0;
  if (n > 64) {
    ra_unsupported(B, parts[0]->span, "a concatenation of more than 64 parts");
    return failed(B);
  }
  int rank = 1; /* the result's: a scalar part is one element (sema_concat) */
  for (int i = 0; i < n; i++) {
    const SemaType *t = ra_type(B, parts[i]);
    bool scalar = t->kind != SEMA_TENSOR || t->rank == 0;
    off[i] = total;
    len[i] = scalar ? 1 : t->dims[0];
    total += len[i];
    if (!scalar && t->rank > rank) rank = t->rank;
  }
  RaExpr *v[RA_MAX_RANK], *result = NULL;
  for (int i = n - 1; i >= 0; i--) {
    memcpy(v, idx, sizeof(RaExpr *) * (size_t)rank);
    v[0] = offset(B, idx[0], ra_const(B, (double)-off[i]));
    RaExpr *part = ra_lower(B, parts[i], v);
    if (!result) {
      result = part;
      continue;
    }
    RaExpr *sel = new_expr(B, RA_SELECT);
    sel->c = binary(B, RA_LT, idx[0], ra_const(B, (double)(off[i] + len[i])));
    sel->a = part;
    sel->b = result;
    result = sel;
  }
  return result;
}

/* ---- products and reductions ---------------------------------------------------- */

/* Does [e] read a variable bound around it (a reduction's or an index-form
 * let's)? If not, its value does not change inside them and can be computed
 * once, as an operator of its own. */
static bool uses_bound_var(RaBuilder *B, const AstExpr *e);

static bool uses_bound_var_in(RaBuilder *B, RaBinding *scope, const AstExpr *e) {
  RaBinding *saved = B->scope;
  B->scope = scope;
  bool r = uses_bound_var(B, e);
  B->scope = saved;
  return r;
}

static bool any_bound(RaBuilder *B, AstExpr *const *es, int n) {
  for (int i = 0; i < n; i++)
    if (es[i] && uses_bound_var(B, es[i])) return true;
  return false;
}

/* Does [e] read variable [v]? */
static bool expr_uses_var(const RaExpr *e, const RaVar *v) {
  if (!e) return false;
  if ((e->kind == RA_VAR || e->kind == RA_REDUCE) && e->var == v) return true;
  if (expr_uses_var(e->a, v) || expr_uses_var(e->b, v) || expr_uses_var(e->c, v) ||
      expr_uses_var(e->dep, v))
    return true;
  for (int i = 0; e->kind == RA_READ && i < e->nidx; i++)
    if (expr_uses_var(e->idx[i], v)) return true;
  return false;
}

/* With B->probe_loop, uses_bound_var asks instead whether a name depends on
 * the for loop's child variable: k itself, an operator of the loop, a field
 * of a recursive call at n.child[k]. */
static bool name_uses_loop(RaBuilder *B, const RaBinding *b) {
  switch (b->kind) {
  case B_VAR: return b->var == B->loop_var;
  case B_OP: return ra_per_child(B, b->op);
  case B_REC: return expr_uses_var(b->dep, B->loop_var);
  case B_SUBST: return expr_uses_var(b->subst, B->loop_var);
  case B_IXLET: return true; /* not looked into: as if it did */
  case B_EXPR: case B_FIELD: return uses_bound_var_in(B, b->scope, b->expr);
  default: return false;
  }
}

/* Inside a for loop, is [e] (in [scope]) the same for every child slot? Then
 * an operator made for it needs no child axis. */
static bool loop_invariant(RaBuilder *B, RaBinding *scope, const AstExpr *e) {
  if (!B->loop_var) return false;
  B->probe_loop = true;
  bool uses = uses_bound_var_in(B, scope, e);
  B->probe_loop = false;
  return !uses;
}

static bool uses_bound_var(RaBuilder *B, const AstExpr *e) {
  switch (e->kind) {
  case AST_NAME: {
    RaBinding *b = lookup(B, e->u.name.id);
    if (!b) return false;
    if (B->probe_loop) return name_uses_loop(B, b);
    if (b->kind == B_VAR || b->kind == B_SUBST || b->kind == B_IXLET) return true;
    if (b->kind == B_EXPR || b->kind == B_FIELD) return uses_bound_var_in(B, b->scope, b->expr);
    return false;
  }
  case AST_UNARY: return uses_bound_var(B, e->u.unary.operand);
  case AST_BINARY:
    return uses_bound_var(B, e->u.binary.lhs) || uses_bound_var(B, e->u.binary.rhs);
  case AST_CALL: return any_bound(B, e->u.call.args, e->u.call.nargs);
  case AST_MEMBER: return uses_bound_var(B, e->u.member.base);
  case AST_TUPLE: case AST_CONCAT: return any_bound(B, e->u.list.elems, e->u.list.n);
  case AST_INDEX:
    if (uses_bound_var(B, e->u.index.base)) return true;
    for (int i = 0; i < e->u.index.nsubs; i++) {
      const AstSubscript *s = &e->u.index.subs[i];
      AstExpr *parts[3] = {s->lo, s->hi, s->index};
      if (any_bound(B, parts, 3)) return true;
    }
    return false;
  case AST_REDUCE: { /* its own variable is internal to it */
    RaBinding *inner = ra_bind(B, B->scope, e->u.reduce.var, B_CONST);
    AstExpr *parts[2] = {e->u.reduce.range, e->u.reduce.body};
    RaBinding *saved = B->scope;
    B->scope = inner;
    bool r = any_bound(B, parts, 2);
    B->scope = saved;
    return r;
  }
  default: return false;
  }
}

/* The parts of a concatenation, or NULL when [e] is not one. */
static AstExpr *const *concat_parts(const AstExpr *e, int *n) {
  if (e->kind == AST_CONCAT) {
    *n = e->u.list.n;
    return e->u.list.elems;
  }
  if (e->kind == AST_CALL && strcmp(e->u.call.callee, "concat") == 0) {
    *n = e->u.call.nargs;
    return e->u.call.args;
  }
  return NULL;
}

/* sum(k < K) lhs[i, off + k] * rhs[k (, j)] at [idx]. */
static RaExpr *product_part(RaBuilder *B, const AstExpr *lhs, const AstExpr *rhs, long off,
                            RaExpr **idx) {
  const SemaType *rt = ra_type(B, rhs);
  RaVar *k = ra_new_var(B, NULL, rt->dims[0], false);
  k->name = ctx_arena_printf(B->arena, "r%d", k->id); /* never shadows a user's name */
  RaExpr *li[2] = {idx[0], offset(B, ra_var_ref(B, k), ra_const(B, (double)off))};
  RaExpr *ri[2] = {ra_var_ref(B, k), rt->rank == 2 ? idx[1] : NULL};
  RaExpr *prod = binary(B, RA_MUL, ra_lower(B, lhs, li), ra_lower(B, rhs, ri));
  RaExpr *r = new_expr(B, RA_REDUCE);
  r->op = RA_SUM;
  r->var = k;
  r->a = prod;
  return r;
}

/* lhs @ rhs at [idx]. A product with a concatenation, W @ [a; b], is the
 * sum of the products with its parts, so no element selects between parts. */
static RaExpr *product_at(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  const AstExpr *lhs = e->u.binary.lhs, *rhs = e->u.binary.rhs;
  int n;
  AstExpr *const *parts = concat_parts(rhs, &n);
  if (!parts || (B->p->disabled & RA_OPT_CONCAT_SPLIT)) return product_part(B, lhs, rhs, 0, idx);
  RaExpr *sum = NULL;
  long off = 0;
  for (int i = 0; i < n; i++) {
    RaExpr *p = product_part(B, lhs, parts[i], off, idx);
    sum = sum ? binary(B, RA_ADD, sum, p) : p;
    off += ra_type(B, parts[i])->dims[0];
  }
  return sum;
}

/* Variables known to correspond while comparing two operators' bodies. */
typedef struct {
  const RaVar *a[RA_MAX_RANK + 16], *b[RA_MAX_RANK + 16];
  int n;
} VarPairs;

static bool same_var(const VarPairs *vp, const RaVar *a, const RaVar *b) {
  for (int i = vp->n - 1; i >= 0; i--)
    if (vp->a[i] == a || vp->b[i] == b) return vp->a[i] == a && vp->b[i] == b;
  return a == b;
}

/* Do [a] and [b] compute the same values, their variables paired by [vp]? */
static bool same_expr(VarPairs *vp, const RaExpr *a, const RaExpr *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind || a->op != b->op || a->value != b->value) return false;
  switch (a->kind) {
  case RA_VAR: return same_var(vp, a->var, b->var);
  case RA_READ:
    if (a->src != b->src || a->index != b->index || a->field != b->field ||
        a->nidx != b->nidx || !same_expr(vp, a->dep, b->dep))
      return false;
    for (int i = 0; i < a->nidx; i++)
      if (!same_expr(vp, a->idx[i], b->idx[i])) return false;
    return true;
  case RA_REDUCE: {
    if (a->var->extent != b->var->extent || a->var->over_deps != b->var->over_deps ||
        vp->n == (int)(sizeof vp->a / sizeof vp->a[0]))
      return false;
    vp->a[vp->n] = a->var, vp->b[vp->n] = b->var, vp->n++;
    bool same = same_expr(vp, a->a, b->a);
    vp->n--;
    return same;
  }
  default:
    return same_expr(vp, a->a, b->a) && same_expr(vp, a->b, b->b) &&
           same_expr(vp, a->c, b->c);
  }
}

/* An operator of the current block equal to [op] (same shape, same body),
 * or NULL. */
static RaOp *earlier_equal_op(const RaBuilder *B, const RaOp *op) {
  for (int i = 0; i < B->block->len; i++) {
    const RaStmt *s = B->block->items[i];
    const RaOp *o = s->kind == RA_STMT_OP ? s->op : NULL;
    if (!o || o->shape.rank != op->shape.rank || ra_per_child(B, o) != ra_per_child(B, op))
      continue;
    VarPairs vp = {{0}, {0}, op->shape.rank};
    bool same = true;
    for (int k = 0; k < op->shape.rank && same; k++) {
      same = o->shape.dims[k] == op->shape.dims[k];
      vp.a[k] = o->vars[k], vp.b[k] = op->vars[k];
    }
    if (same && same_expr(&vp, o->body, op->body)) return (RaOp *)o;
  }
  return NULL;
}

RaOp *ra_emit_unique(RaBuilder *B, RaOp *op) {
  RaOp *same = B->p->disabled & RA_OPT_CSE ? NULL : earlier_equal_op(B, op);
  if (!same) {
    ra_emit_op(B, op);
    return op;
  }
  if (B->ops.items[B->ops.len - 1] == op) B->ops.len--; /* never emitted */
  return same;
}

/* A matrix product: an operator of its own unless it depends on a variable
 * bound around it, where it is computed in place. */
static RaExpr *lower_matmul(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  if ((B->p->disabled & RA_OPT_PRODUCT_OPS) || uses_bound_var(B, e))
    return product_at(B, e, idx);
  RaShape shape = ra_shape_of(ra_type(B, e));
  RaVar *loop = B->loop_var; /* a product the same for every child: once per node */
  if (loop_invariant(B, B->scope, e)) B->loop_var = NULL;
  RaOp *op = ra_new_op(B, "", &shape, e->span);
  RaExpr *vars[RA_MAX_RANK];
  RaVar **axes = ra_op_axes(B, op);
  for (int i = 0; i < shape.rank; i++) vars[i] = ra_var_ref(B, axes[i]);
  ra_op_body(B, op, product_at(B, e, vars));
  RaOp *used = ra_emit_unique(B, op);
  if (used == op) /* named in the order emitted: inner products first */
    op->name = ctx_arena_printf(B->arena, "%s.mm%d", B->fn->name, ++B->temps);
  B->loop_var = loop;
  return read_op(B, used, idx, shape.rank);
}

static RaExpr *lower_reduce(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  bool deps = e->u.reduce.range != NULL;
  long extent = deps ? B->p->max_arity : sema_extent_of(B->m, &e->u.reduce.var);
  RaVar *k = ra_new_var(B, e->u.reduce.var, extent, deps);
  RaBinding *saved = B->scope;
  B->scope = ra_bind(B, B->scope, e->u.reduce.var, B_VAR);
  B->scope->var = k;
  RaExpr *r = new_expr(B, RA_REDUCE);
  r->op = e->u.reduce.op == AST_OP_MAX ? RA_MAX : RA_SUM;
  r->var = k;
  r->a = ra_lower(B, e->u.reduce.body, idx);
  B->scope = saved;
  return r;
}

static int bin_op(AstOp op) {
  switch (op) {
  case AST_OP_ADD: return RA_ADD;
  case AST_OP_SUB: return RA_SUB;
  case AST_OP_MUL: return RA_MUL;
  case AST_OP_DIV: return RA_DIV;
  case AST_OP_EQ: return RA_EQ;
  case AST_OP_NE: return RA_NE;
  case AST_OP_LT: return RA_LT;
  case AST_OP_LE: return RA_LE;
  case AST_OP_GT: return RA_GT;
  case AST_OP_GE: return RA_GE;
  case AST_OP_AND: return RA_AND;
  default: return RA_OR;
  }
}

static RaExpr *lower_binary(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  if (e->u.binary.op == AST_OP_MATMUL) return lower_matmul(B, e, idx);
  const AstExpr *l = e->u.binary.lhs, *r = e->u.binary.rhs;
  return binary(B, bin_op(e->u.binary.op), ra_lower(B, l, rank_of(B, l) ? idx : NULL),
                ra_lower(B, r, rank_of(B, r) ? idx : NULL));
}

RaExpr *ra_lower(RaBuilder *B, const AstExpr *e, RaExpr **idx) {
  switch (e->kind) {
  case AST_NUMBER: return ra_const(B, e->u.num.value);
  case AST_NAME: return lower_name(B, e, idx);
  case AST_UNARY:
    return unary(B, e->u.unary.op == AST_OP_NEG ? RA_FN_NEG : RA_FN_NOT,
                 ra_lower(B, e->u.unary.operand, idx));
  case AST_BINARY: return lower_binary(B, e, idx);
  case AST_CALL:
    if (strcmp(e->u.call.callee, "concat") == 0)
      return lower_concat(B, e->u.call.args, e->u.call.nargs, idx);
    return lower_call(B, e, -1, idx);
  case AST_INDEX: return lower_index(B, e, idx);
  case AST_MEMBER: return lower_member(B, e, idx);
  case AST_CONCAT: return lower_concat(B, e->u.list.elems, e->u.list.n, idx);
  case AST_REDUCE: return lower_reduce(B, e, idx);
  default: break;
  }
  ra_unsupported(B, e->span, "this expression");
  return failed(B);
}

RaExpr *ra_lower_field(RaBuilder *B, const AstExpr *e, int field, RaExpr **idx) {
  if (e->kind == AST_TUPLE) return ra_lower(B, e->u.list.elems[field], idx);
  if (e->kind == AST_CALL) return lower_call(B, e, field, idx);
  if (e->kind == AST_NAME) {
    RaBinding *b = lookup(B, e->u.name.id);
    if (b && b->kind == B_REC) {
      RaExpr *x = read(B, RA_SRC_REC, b->index, idx, B->p->funcs[b->index].fields[field].rank);
      x->field = field;
      x->dep = b->dep;
      return x;
    }
    if (b && b->kind == B_EXPR) return lower_in(B, b->scope, b->expr, field, idx);
  }
  ra_unsupported(B, e->span, "taking a field of this expression");
  return failed(B);
}
