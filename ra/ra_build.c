/* ra_build.c — building RA from a checked model: the program's interface
 * (structure, per-node inputs, parameters, output) and each recursive
 * function's body as operators, conditions and returns.
 *
 * Every `let` becomes an operator named after it (schedules refer to these
 * names); `let (h, c) = f(n.child[0])` binds h and c to the call's result
 * fields without copying; a returned field that is not already an operator
 * becomes one named `<function>.<field>`. Expressions are lowered by
 * ra_lower.c.
 */
#include "ra/ra_int.h"

#include <string.h>

RaOp *ra_new_op(RaBuilder *B, const char *name, const RaShape *shape, CtxSpan span) {
  RaOp *op = CTX_NEW(B->arena, RaOp);
  op->name = name;
  op->id = B->ops.len;
  op->shape = *shape;
  op->span = span;
  int first = B->loop_var ? 1 : 0; /* inside a for loop: the child axis first */
  if (first) {
    memmove(op->shape.dims + 1, op->shape.dims, sizeof(long) * (size_t)shape->rank);
    op->shape.dims[0] = B->loop_var->extent;
    op->shape.rank++;
    op->shape.size *= B->loop_var->extent;
  }
  op->vars = CTX_NEW_ARRAY(B->arena, RaVar *, op->shape.rank);
  if (first) op->vars[0] = B->loop_var;
  static const char *const axis[RA_MAX_RANK] = {"i", "j", "i2", "i3", "i4", "i5", "i6", "i7"};
  for (int i = 0; i < shape->rank; i++)
    op->vars[first + i] = ra_new_var(B, axis[i], shape->dims[i], false);
  ctx_vec_push(B->arena, &B->ops, op);
  return op;
}

RaVar **ra_op_axes(const RaBuilder *B, RaOp *op) {
  return op->vars + (ra_per_child(B, op) ? 1 : 0);
}

bool ra_per_child(const RaBuilder *B, const RaOp *op) {
  return B->loop_var && op->shape.rank > 0 && op->vars[0] == B->loop_var;
}

void ra_op_body(RaBuilder *B, RaOp *op, RaExpr *body) {
  if (!ra_per_child(B, op)) {
    op->body = body;
    return;
  }
  RaExpr *sel = CTX_NEW(B->arena, RaExpr), *lt = CTX_NEW(B->arena, RaExpr);
  RaExpr *deps = CTX_NEW(B->arena, RaExpr);
  deps->kind = RA_NUM_DEPS;
  lt->kind = RA_BINARY;
  lt->op = RA_LT;
  lt->a = ra_var_ref(B, B->loop_var);
  lt->b = deps;
  sel->kind = RA_SELECT;
  sel->c = lt;
  sel->a = body;
  sel->b = ra_const(B, 0);
  op->body = sel;
}

void ra_emit_op(RaBuilder *B, RaOp *op) {
  RaStmt *s = CTX_NEW(B->arena, RaStmt);
  s->kind = RA_STMT_OP;
  s->op = op;
  ctx_vec_push(B->arena, B->block, s);
}

static RaBlock to_block(CtxVec v) {
  RaBlock b = {(RaStmt **)v.items, v.len};
  return b;
}

RaOp *ra_materialize(RaBuilder *B, const char *name, const AstExpr *e, int field,
                         const SemaType *t) {
  RaShape shape = ra_shape_of(t);
  RaOp *op = ra_new_op(B, name, &shape, e->span);
  RaExpr *idx[RA_MAX_RANK];
  RaVar **axes = ra_op_axes(B, op);
  for (int i = 0; i < shape.rank; i++) idx[i] = ra_var_ref(B, axes[i]);
  ra_op_body(B, op, field < 0 ? ra_lower(B, e, idx) : ra_lower_field(B, e, field, idx));
  return ra_emit_unique(B, op);
}

static void bind_op(RaBuilder *B, const char *name, RaOp *op) {
  B->scope = ra_bind(B, B->scope, name, B_OP);
  B->scope->op = op;
}

/* let y[i, j] = body, as an operator [name] lowered in B->scope. */
RaOp *ra_index_let_op(RaBuilder *B, const char *name, const AstStmt *s, bool unique) {
  RaShape shape;
  memset(&shape, 0, sizeof shape);
  shape.rank = s->u.let.nidx;
  shape.size = 1;
  for (int i = 0; i < shape.rank; i++) {
    shape.dims[i] = sema_extent_of(B->m, &s->u.let.idx[i]);
    shape.size *= shape.dims[i];
  }
  RaOp *op = ra_new_op(B, name, &shape, s->span);
  RaBinding *saved = B->scope;
  RaVar **axes = ra_op_axes(B, op);
  for (int i = 0; i < shape.rank; i++) {
    axes[i]->name = s->u.let.idx[i].id;
    B->scope = ra_bind(B, B->scope, s->u.let.idx[i].id, B_VAR);
    B->scope->var = axes[i];
  }
  ra_op_body(B, op, ra_lower(B, s->u.let.value, NULL));
  B->scope = saved;
  if (unique) return ra_emit_unique(B, op);
  ra_emit_op(B, op);
  return op;
}

static void lower_index_let(RaBuilder *B, const AstStmt *s) {
  bind_op(B, s->u.let.names[0].id, ra_index_let_op(B, s->u.let.names[0].id, s, false));
}

/* let (a, b) = value: fields of a recursive call are bound, not copied. */
static void lower_destructure(RaBuilder *B, const AstStmt *s) {
  const AstExpr *v = s->u.let.value;
  const SemaType *t = ra_type(B, v);
  int rec = -1;
  for (int i = 0; v->kind == AST_CALL && i < B->p->nfuncs; i++)
    if (strcmp(B->p->funcs[i].name, v->u.call.callee) == 0) rec = i;
  if (rec >= 0) {
    RaExpr *dep = ra_node_dep(B, v->u.call.args[0]);
    for (int k = 0; k < s->u.let.nnames; k++) {
      B->scope = ra_bind(B, B->scope, s->u.let.names[k].id, B_REC);
      B->scope->index = rec;
      B->scope->field = k;
      B->scope->dep = dep;
    }
    return;
  }
  for (int k = 0; k < s->u.let.nnames; k++) {
    const char *name = s->u.let.names[k].id;
    bind_op(B, name, ra_materialize(B, name, v, k, t->fields[k]));
  }
}

static void lower_block(RaBuilder *B, const AstBlock *b, CtxVec *out);
static void lower_for(RaBuilder *B, const AstStmt *s);
static void copy_loop_fields(RaBuilder *B, RaBinding *start, CtxSpan span);
static void drop_unread_copies(RaBuilder *B, RaFunc *fn);

static void lower_return(RaBuilder *B, const AstStmt *s) {
  RaFunc *fn = B->fn;
  const AstExpr *v = s->u.ret.value;
  RaStmt *st = CTX_NEW(B->arena, RaStmt);
  st->kind = RA_STMT_RETURN;
  st->results = CTX_NEW_ARRAY(B->arena, RaOp *, fn->nfields);
  const SemaType *t = ra_type(B, v);
  for (int k = 0; k < fn->nfields; k++) {
    const AstExpr *part = v->kind == AST_TUPLE ? v->u.list.elems[k] : v;
    if (part->kind == AST_NAME) { /* an operator already */
      const char *id = part->u.name.id;
      for (RaBinding *b = B->scope; b; b = b->next)
        if (strcmp(b->name, id) == 0) {
          if (b->kind == B_OP) st->results[k] = b->op;
          break;
        }
      if (st->results[k]) continue;
    }
    const char *fname = fn->field_names[k] ? fn->field_names[k]
                                           : ctx_arena_printf(B->arena, "ret%d", k);
    const char *name = ctx_arena_printf(B->arena, "%s.%s", fn->name, fname);
    bool tuple = t->kind == SEMA_TUPLE && v->kind != AST_TUPLE;
    st->results[k] = ra_materialize(B, name, v->kind == AST_TUPLE ? part : v, tuple ? k : -1,
                                 t->kind == SEMA_TUPLE ? t->fields[k] : t);
  }
  ctx_vec_push(B->arena, B->block, st);
}

static bool is_leaf_test(const AstExpr *c) {
  return c->kind == AST_CALL && strcmp(c->u.call.callee, "leaf") == 0;
}

static void lower_if(RaBuilder *B, const AstStmt *s) {
  RaStmt *st = CTX_NEW(B->arena, RaStmt);
  st->kind = RA_STMT_IF;
  st->cond = ra_lower(B, s->u.if_.cond, NULL);
  bool in_leaf = B->in_leaf;
  CtxVec then = {0}, els = {0};
  B->in_leaf = in_leaf || is_leaf_test(s->u.if_.cond);
  lower_block(B, &s->u.if_.then, &then);
  B->in_leaf = in_leaf;
  if (s->u.if_.els) lower_block(B, s->u.if_.els, &els);
  st->then = to_block(then);
  st->els = to_block(els);
  ctx_vec_push(B->arena, B->block, st);
}

static void lower_stmt(RaBuilder *B, const AstStmt *s) {
  switch (s->kind) {
  case AST_LET:
    if (s->u.let.nidx) lower_index_let(B, s);
    else if (s->u.let.destructure) lower_destructure(B, s);
    else {
      const SemaType *t = ra_type(B, s->u.let.value);
      const char *name = s->u.let.names[0].id;
      if (t && t->kind == SEMA_TUPLE) { /* let r = f(...): r.h later */
        B->scope = ra_bind(B, B->scope, name, B_EXPR);
        B->scope->expr = s->u.let.value;
        B->scope->scope = B->scope->next;
      } else {
        RaOp *op = ra_materialize(B, name, s->u.let.value, -1, t);
        op->span = s->u.let.names[0].span; /* schedules point here */
        bind_op(B, name, op);
      }
    }
    break;
  case AST_IF: lower_if(B, s); break;
  case AST_RETURN: lower_return(B, s); break;
  case AST_FOR: lower_for(B, s); break;
  }
}

/* for k in n.children { lets }: every operator made in the body has the
 * child axis k [0, K) first, zeros where k >= the node's number of
 * dependencies (ra_op_body); its let's name stays bound after the loop,
 * where sema gave it that axis too. */
static void lower_for(RaBuilder *B, const AstStmt *s) {
  RaVar *k = ra_new_var(B, s->u.for_.var.id, B->p->max_arity, false);
  B->scope = ra_bind(B, B->scope, s->u.for_.var.id, B_VAR);
  B->scope->var = k;
  RaBinding *start = B->scope;
  B->loop_var = k;
  for (int i = 0; i < s->u.for_.body.n && !B->failed; i++) {
    const AstStmt *st = s->u.for_.body.stmts[i];
    if (st->kind == AST_LET) lower_stmt(B, st); /* sema allows no return, no nested for */
    else ra_unsupported(B, st->span, "an 'if' inside a 'for' loop");
  }
  copy_loop_fields(B, start, s->span);
  B->loop_var = NULL;
}

/* The fields of recursive calls a for loop's body destructured (`let (hk,
 * ck) = cell(n.child[k])`), read in place inside the loop, as operators
 * [K, ...] for the code after it (at [span], the loop); build_func drops
 * those it does not read. */
static void copy_loop_fields(RaBuilder *B, RaBinding *start, CtxSpan span) {
  for (RaBinding *b = B->scope; b && b != start; b = b->next) {
    if (b->kind != B_REC) continue;
    RaShape field = B->p->funcs[b->index].fields[b->field];
    RaOp *op = ra_new_op(B, b->name, &field, span);
    RaExpr *r = CTX_NEW(B->arena, RaExpr), **idx = CTX_NEW_ARRAY(B->arena, RaExpr *, field.rank);
    RaVar **axes = ra_op_axes(B, op);
    for (int i = 0; i < field.rank; i++) idx[i] = ra_var_ref(B, axes[i]);
    *r = (RaExpr){.kind = RA_READ, .src = RA_SRC_REC, .index = b->index, .field = b->field,
                  .dep = b->dep, .idx = idx, .nidx = field.rank};
    ra_op_body(B, op, r);
    ra_emit_op(B, op);
    ctx_vec_push(B->arena, &B->loop_copies, op);
    bind_op(B, b->name, op);
  }
}

/* ---- dropping the unread copies of copy_loop_fields ------------------------------- */

static void mark_reads(const RaExpr *e, bool *read) {
  if (!e) return;
  if (e->kind == RA_READ && e->src == RA_SRC_OP) read[e->index] = true;
  mark_reads(e->a, read), mark_reads(e->b, read), mark_reads(e->c, read);
  mark_reads(e->dep, read);
  for (int i = 0; e->kind == RA_READ && i < e->nidx; i++) mark_reads(e->idx[i], read);
}

static void mark_block(const RaFunc *fn, const RaBlock *b, bool *read) {
  for (int i = 0; i < b->n; i++) {
    const RaStmt *s = b->stmts[i];
    if (s->kind == RA_STMT_OP) mark_reads(s->op->body, read);
    if (s->kind == RA_STMT_IF) {
      mark_reads(s->cond, read);
      mark_block(fn, &s->then, read);
      mark_block(fn, &s->els, read);
    }
    for (int k = 0; s->kind == RA_STMT_RETURN && k < fn->nfields; k++)
      read[s->results[k]->id] = true;
  }
}

static void drop_unread(RaBlock *b, const bool *drop) {
  int n = 0;
  for (int i = 0; i < b->n; i++) {
    RaStmt *s = b->stmts[i];
    if (s->kind == RA_STMT_IF) drop_unread(&s->then, drop), drop_unread(&s->els, drop);
    if (s->kind != RA_STMT_OP || !drop[s->op->id]) b->stmts[n++] = s;
  }
  b->n = n;
}

static void drop_unread_copies(RaBuilder *B, RaFunc *fn) {
  if (!B->loop_copies.len) return;
  bool *read = CTX_NEW_ARRAY(B->arena, bool, fn->nops + 1);
  bool *drop = CTX_NEW_ARRAY(B->arena, bool, fn->nops + 1);
  mark_block(fn, &fn->body, read);
  for (int i = 0; i < B->loop_copies.len; i++) {
    const RaOp *op = B->loop_copies.items[i];
    drop[op->id] = !read[op->id];
  }
  drop_unread(&fn->body, drop);
}

/* Lowers [b] into [out]; names bound inside stay inside. */
static void lower_block(RaBuilder *B, const AstBlock *b, CtxVec *out) {
  CtxVec *saved_block = B->block;
  RaBinding *saved_scope = B->scope;
  B->block = out;
  for (int i = 0; i < b->n && !B->failed; i++) lower_stmt(B, b->stmts[i]);
  B->block = saved_block;
  B->scope = saved_scope;
}

/* ---- the program ---------------------------------------------------------------- */

static void build_interface(RaBuilder *B) {
  const SemaModel *m = B->m;
  RaProgram *p = B->p;
  p->name = m->name;
  p->kind = m->structure.kind;
  p->max_arity = m->structure.max_arity;
  p->ninputs = m->ninputs;
  p->inputs = CTX_NEW_ARRAY(B->arena, RaInput, m->ninputs);
  for (int i = 0; i < m->ninputs; i++) {
    RaInput *in = &p->inputs[i];
    in->name = m->inputs[i].name;
    in->is_int = m->inputs[i].row->elem == SEMA_I32;
    in->row = ra_shape_of(m->inputs[i].row);
    in->offset = p->values_per_node;
    p->values_per_node += in->row.size;
    B->globals = ra_bind(B, B->globals, in->name, B_INPUT);
    B->globals->index = i;
  }
  p->nparams = m->nparams;
  p->params = CTX_NEW_ARRAY(B->arena, RaParam, m->nparams);
  for (int i = 0; i < m->nparams; i++) {
    p->params[i].name = m->params[i].name;
    p->params[i].shape = ra_shape_of(m->params[i].type);
    B->globals = ra_bind(B, B->globals, p->params[i].name, B_PARAM);
    B->globals->index = i;
  }
  for (int i = 0; i < m->ndims; i++) {
    B->globals = ra_bind(B, B->globals, m->dims[i].name, B_CONST);
    B->globals->value = m->dims[i].value;
  }
}

/* The rec functions' signatures, so that calls between them resolve. */
static void declare_funcs(RaBuilder *B) {
  const SemaModel *m = B->m;
  RaProgram *p = B->p;
  p->funcs = CTX_NEW_ARRAY(B->arena, RaFunc, m->nfuncs);
  for (int i = 0; i < m->nfuncs; i++) {
    if (!m->funcs[i].is_rec) continue;
    RaFunc *fn = &p->funcs[p->nfuncs++];
    const SemaType *t = m->funcs[i].result;
    bool tuple = t->kind == SEMA_TUPLE;
    fn->name = m->funcs[i].item->name.id;
    fn->nfields = tuple ? t->nfields : 1;
    fn->fields = CTX_NEW_ARRAY(B->arena, RaShape, fn->nfields);
    fn->field_names = CTX_NEW_ARRAY(B->arena, const char *, fn->nfields);
    for (int k = 0; k < fn->nfields; k++) {
      fn->fields[k] = ra_shape_of(tuple ? t->fields[k] : t);
      fn->field_names[k] = tuple && t->names ? t->names[k] : NULL;
    }
  }
}

static void build_func(RaBuilder *B, RaFunc *fn, const AstItem *item) {
  memset(&B->ops, 0, sizeof B->ops);
  B->fn = fn;
  B->temps = 0;
  B->in_leaf = false;
  memset(&B->loop_copies, 0, sizeof B->loop_copies);
  B->scope = ra_bind(B, B->globals, item->params[0].name, B_NODE);
  CtxVec body = {0};
  lower_block(B, &item->body, &body);
  fn->body = to_block(body);
  fn->ops = (RaOp **)B->ops.items;
  fn->nops = B->ops.len;
  drop_unread_copies(B, fn);
}

/* output f(root(t)) or f(root(t)).field */
static void build_output(RaBuilder *B) {
  const AstExpr *e = B->m->output;
  const char *field = NULL;
  if (e->kind == AST_MEMBER) {
    field = e->u.member.field;
    e = e->u.member.base;
  }
  RaProgram *p = B->p;
  for (int i = 0; i < p->nfuncs; i++) {
    if (strcmp(p->funcs[i].name, e->u.call.callee) != 0) continue;
    p->out_func = i;
    for (int k = 0; field && k < p->funcs[i].nfields; k++)
      if (p->funcs[i].field_names[k] && strcmp(p->funcs[i].field_names[k], field) == 0)
        p->out_field = k;
    p->out_shape = p->funcs[i].fields[p->out_field];
    p->out_nfields = 1;
    if (!field && p->funcs[i].nfields > 1) { /* the whole tuple, fields side by side */
      p->out_nfields = p->funcs[i].nfields;
      memset(&p->out_shape, 0, sizeof p->out_shape);
      p->out_shape.rank = 1;
      for (int k = 0; k < p->out_nfields; k++) p->out_shape.dims[0] += p->funcs[i].fields[k].size;
      p->out_shape.size = p->out_shape.dims[0];
    }
    return;
  }
  CTX_ICE(B->diag, "output function '%s' not found", e->u.call.callee);
  B->failed = true;
}

unsigned ra_opt_lookup(const char *name, const char **names) {
  static const struct { const char *name; unsigned bit; } opts[] = {
      {"concat-split", RA_OPT_CONCAT_SPLIT},
      {"product-ops", RA_OPT_PRODUCT_OPS},
      {"interchange", RA_OPT_INTERCHANGE},
      {"specialize-leaf", RA_OPT_SPECIALIZE_LEAF},
      {"register-tile", RA_OPT_REGISTER_TILE},
      {"vector-math", RA_OPT_VECTOR_MATH},
      {"cse", RA_OPT_CSE},
      {"hoist-products", RA_OPT_HOIST_PRODUCTS},
      {"dense-scratch", RA_OPT_DENSE_SCRATCH},
      {"fuse-epilogue", RA_OPT_FUSE_EPILOGUE},
      {"hoist-invariant", RA_OPT_HOIST_INVARIANT},
      {"all-deps", RA_OPT_ALL_DEPS},
      {"share-weights", RA_OPT_SHARE_WEIGHTS},
      {"hoist-local", RA_OPT_HOIST_LOCAL},
      {"direct-results", RA_OPT_DIRECT_RESULTS},
      {"leaf-views", RA_OPT_LEAF_VIEWS},
      {"grid-fusion", RA_OPT_GRID_FUSION},
      {"balance-levels", RA_OPT_BALANCE_LEVELS}};
  if (names)
    *names = "concat-split, product-ops, interchange, specialize-leaf, register-tile, "
             "vector-math, cse, hoist-products, dense-scratch, fuse-epilogue, "
             "hoist-invariant, all-deps, share-weights, hoist-local, direct-results, "
             "leaf-views, grid-fusion, balance-levels";
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
    if (strcmp(opts[i].name, name) == 0) return opts[i].bit;
  return 0;
}

RaProgram *ra_build(CtxArena *arena, CtxDiag *diag, const SemaModel *m, unsigned disabled) {
  RaBuilder B;
  memset(&B, 0, sizeof B);
  B.arena = arena;
  B.diag = diag;
  B.m = m;
  B.p = CTX_NEW(arena, RaProgram);
  B.p->disabled = disabled;
  build_interface(&B);
  declare_funcs(&B);
  for (int i = 0, r = 0; i < m->nfuncs && !B.failed; i++)
    if (m->funcs[i].is_rec) build_func(&B, &B.p->funcs[r++], m->funcs[i].item);
  if (!B.failed) build_output(&B);
  if (B.failed || diag->ice) return NULL;
  return ra_verify(B.p, diag) ? B.p : NULL;
}
