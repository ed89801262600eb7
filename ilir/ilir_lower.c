/* ilir_lower.c — RA to ILIR: recursion becomes loops over dependency levels.
 *
 *   for l in levels [0, num_levels)                  dynamic batching
 *     for n in nodes [levels[l], levels[l + 1])      a level's nodes
 *       <each recursive function's body at node n>
 *
 * An RA operator becomes a loop nest storing its elements into its scratch
 * buffer's row for n; `return` copies the result operators into the
 * function's result row; `if` on the structure stays an `if`, and the
 * statements after an `if` whose branch returns move into the other branch.
 * A read of a function's result at a dependency becomes a load at
 * dep[n * K + k], which the caller points at a zero row when the dependency
 * does not exist. RA's double expressions become I64 index arithmetic where
 * they compute indices, sizes and conditions, and F32 everywhere else.
 */
#include "ilir/ilir_int.h"

#include <string.h>

typedef struct {
  CtxArena *a;
  CtxDiag *diag;
  const RaProgram *p;
  IlirKernel *k;
  CtxVec bufs;
  int *res_buf;    /* [func] */
  int **op_buf;    /* [func][op] */
  int *param_buf;  /* [param] */
  const RaFunc *fn;
  IlirVar **vars;  /* RA variable id -> ILIR variable, for fn */
  IlirVar *node;   /* n */
} Lower;

static int add_buf(Lower *L, const char *name, IlirBufKind kind, long size, int index,
                   int func) {
  IlirBuf *b = CTX_NEW(L->a, IlirBuf);
  *b = (IlirBuf){name, kind, size, index, func, {0, 0, 0, 0, 0}, false};
  ctx_vec_push(L->a, &L->bufs, b);
  return L->bufs.len - 1;
}

static void declare_buffers(Lower *L) {
  const RaProgram *p = L->p;
  L->param_buf = CTX_NEW_ARRAY(L->a, int, p->nparams);
  for (int i = 0; i < p->nparams; i++)
    L->param_buf[i] = add_buf(L, p->params[i].name, ILIR_BUF_PARAM, p->params[i].shape.size, i, 0);
  L->k->values_buf = add_buf(L, "values", ILIR_BUF_VALUES, p->values_per_node, 0, 0);
  L->k->ivalues_buf = add_buf(L, "ivalues", ILIR_BUF_IVALUES, p->values_per_node, 0, 0);
  L->k->dep_buf = add_buf(L, "dep", ILIR_BUF_DEP, p->max_arity, 0, 0);
  L->k->num_deps_buf = add_buf(L, "num_deps", ILIR_BUF_NUM_DEPS, 1, 0, 0);
  L->k->levels_buf = add_buf(L, "levels", ILIR_BUF_LEVELS, 1, 0, 0);
  L->res_buf = CTX_NEW_ARRAY(L->a, int, p->nfuncs);
  L->op_buf = CTX_NEW_ARRAY(L->a, int *, p->nfuncs);
  for (int f = 0; f < p->nfuncs; f++) {
    const RaFunc *fn = &p->funcs[f];
    long size = 0;
    for (int k = 0; k < fn->nfields; k++) size += fn->fields[k].size;
    L->res_buf[f] = add_buf(L, ctx_arena_printf(L->a, "%s.result", fn->name), ILIR_BUF_RESULT,
                            size, f, f);
    L->op_buf[f] = CTX_NEW_ARRAY(L->a, int, fn->nops);
    for (int o = 0; o < fn->nops; o++)
      L->op_buf[f][o] = add_buf(L, fn->ops[o]->name, ILIR_BUF_SCRATCH, fn->ops[o]->shape.size,
                                o, f);
  }
}

/* ---- expressions -------------------------------------------------------------------- */

static IlirExpr *lower_i(Lower *L, const RaExpr *e);
static IlirExpr *lower_f(Lower *L, const RaExpr *e);

/* Does [e] compute an integer (an index, a count, a condition)? */
static bool is_int(const Lower *L, const RaExpr *e) {
  switch (e->kind) {
  case RA_CONST: return e->value == (double)(long)e->value;
  case RA_VAR: case RA_NUM_DEPS: return true;
  case RA_READ: return e->src == RA_SRC_INPUT && L->p->inputs[e->index].is_int;
  case RA_UNARY: return e->op == RA_FN_NOT || (e->op == RA_FN_NEG && is_int(L, e->a));
  case RA_BINARY:
    if (e->op >= RA_EQ) return true;
    return e->op != RA_DIV && is_int(L, e->a) && is_int(L, e->b);
  default: return false;
  }
}

static IlirVar *var_of(Lower *L, const RaVar *v) {
  if (!L->vars[v->id]) L->vars[v->id] = ilir_new_var(L->a, L->k, v->name);
  return L->vars[v->id];
}

static IlirExpr *node_var(Lower *L) { return ilir_var(L->a, L->node); }

/* Row-major offset of [e]'s indices in a tensor of [shape]. */
static IlirExpr *flat(Lower *L, const RaExpr *e, const RaShape *shape) {
  IlirExpr *off = ilir_const_i(L->a, 0);
  for (int i = 0; i < e->nidx; i++)
    off = ilir_binary(L->a, ILIR_ADD, ilir_binary(L->a, ILIR_MUL, off,
                                                  ilir_const_i(L->a, shape->dims[i])),
                      lower_i(L, e->idx[i]));
  return off;
}

/* [row] * [size] + [off] */
static IlirExpr *row_index(Lower *L, IlirExpr *row, long size, IlirExpr *off) {
  return ilir_binary(L->a, ILIR_ADD, ilir_binary(L->a, ILIR_MUL, row, ilir_const_i(L->a, size)),
                     off);
}

/* The node a read refers to: n, or dep[n * K + k]. */
static IlirExpr *read_node(Lower *L, const RaExpr *dep) {
  if (!dep) return node_var(L);
  IlirExpr *slot = row_index(L, node_var(L), L->p->max_arity, lower_i(L, dep));
  return ilir_load(L->a, L->k, L->k->dep_buf, slot);
}

static IlirExpr *lower_read(Lower *L, const RaExpr *e) {
  const RaProgram *p = L->p;
  switch (e->src) {
  case RA_SRC_PARAM:
    return ilir_load(L->a, L->k, L->param_buf[e->index], flat(L, e, &p->params[e->index].shape));
  case RA_SRC_INPUT: {
    const RaInput *in = &p->inputs[e->index];
    IlirExpr *off = ilir_binary(L->a, ILIR_ADD, ilir_const_i(L->a, in->offset),
                                flat(L, e, &in->row));
    int buf = in->is_int ? L->k->ivalues_buf : L->k->values_buf;
    return ilir_load(L->a, L->k, buf, row_index(L, read_node(L, e->dep), p->values_per_node, off));
  }
  case RA_SRC_OP: {
    const RaOp *op = L->fn->ops[e->index];
    int buf = L->op_buf[L->fn - p->funcs][e->index];
    return ilir_load(L->a, L->k, buf, row_index(L, node_var(L), op->shape.size,
                                                flat(L, e, &op->shape)));
  }
  case RA_SRC_REC: {
    const RaFunc *f = &p->funcs[e->index];
    long off = 0;
    for (int k = 0; k < e->field; k++) off += f->fields[k].size;
    IlirExpr *at = ilir_binary(L->a, ILIR_ADD, ilir_const_i(L->a, off),
                               flat(L, e, &f->fields[e->field]));
    return ilir_load(L->a, L->k, L->res_buf[e->index],
                     row_index(L, read_node(L, e->dep), L->k->bufs[L->res_buf[e->index]].size, at));
  }
  }
  return ilir_const_i(L->a, 0);
}

static IlirExpr *num_deps(Lower *L) {
  return ilir_load(L->a, L->k, L->k->num_deps_buf, node_var(L));
}

static IlirExpr *lower_reduce(Lower *L, const RaExpr *e) {
  IlirExpr *hi = e->var->over_deps ? num_deps(L) : ilir_const_i(L->a, e->var->extent);
  return ilir_reduce(L->a, e->op == RA_MAX ? ILIR_MAXR : ILIR_SUM, var_of(L, e->var),
                     ilir_const_i(L->a, 0), hi, lower_f(L, e->a));
}

/* RaFn and IlirUnOp, RaBinOp and IlirBinOp list the same operations in the
 * same order (grep tag: RA-ILIR-OPS). */
static IlirExpr *lower_binary(Lower *L, const RaExpr *e, bool want_int) {
  bool ints = is_int(L, e->a) && is_int(L, e->b);
  if (e->op >= RA_EQ) { /* comparisons and logic: I64 */
    bool logic = e->op == RA_AND || e->op == RA_OR;
    IlirExpr *x = ints || logic ? lower_i(L, e->a) : lower_f(L, e->a);
    IlirExpr *y = ints || logic ? lower_i(L, e->b) : lower_f(L, e->b);
    IlirExpr *c = ilir_binary(L->a, e->op, x, y);
    return want_int ? c : ilir_to_f32(L->a, c);
  }
  if (want_int) return ilir_binary(L->a, e->op, lower_i(L, e->a), lower_i(L, e->b));
  return ilir_binary(L->a, e->op, lower_f(L, e->a), lower_f(L, e->b));
}

static IlirExpr *lower_i(Lower *L, const RaExpr *e) {
  switch (e->kind) {
  case RA_CONST: return ilir_const_i(L->a, (long)e->value);
  case RA_VAR: return ilir_var(L->a, var_of(L, e->var));
  case RA_NUM_DEPS: return num_deps(L);
  case RA_READ: return lower_read(L, e);
  case RA_UNARY:
    if (e->op == RA_FN_NOT) return ilir_unary(L->a, ILIR_NOT, lower_i(L, e->a));
    return ilir_binary(L->a, ILIR_SUB, ilir_const_i(L->a, 0), lower_i(L, e->a));
  case RA_BINARY: return lower_binary(L, e, true);
  default: /* a float used as a condition: nonzero is true */
    return ilir_binary(L->a, ILIR_NE, lower_f(L, e), ilir_const_f(L->a, 0));
  }
}

static IlirExpr *lower_f(Lower *L, const RaExpr *e) {
  if (is_int(L, e) && e->kind != RA_BINARY) return ilir_to_f32(L->a, lower_i(L, e));
  switch (e->kind) {
  case RA_CONST: return ilir_const_f(L->a, (float)e->value);
  case RA_READ: return lower_read(L, e);
  case RA_UNARY: return ilir_unary(L->a, e->op, lower_f(L, e->a));
  case RA_BINARY:
    if (is_int(L, e)) return ilir_to_f32(L->a, lower_binary(L, e, true));
    return lower_binary(L, e, false);
  case RA_SELECT:
    return ilir_select(L->a, lower_i(L, e->c), lower_f(L, e->a), lower_f(L, e->b));
  case RA_REDUCE: return lower_reduce(L, e);
  default: return ilir_to_f32(L->a, lower_i(L, e));
  }
}

/* ---- statements ---------------------------------------------------------------------- */

static IlirBlock to_block(CtxVec v) {
  IlirBlock b = {(IlirStmt **)v.items, v.len};
  return b;
}

/* Wraps [inner] in loops over [vars][0..rank) from the outermost axis. */
static IlirStmt *loop_nest(Lower *L, IlirVar **vars, const long *dims, int rank,
                           IlirStmt *inner) {
  for (int i = rank - 1; i >= 0; i--) {
    CtxVec body = {0};
    ctx_vec_push(L->a, &body, inner);
    inner = ilir_loop(L->a, vars[i], ilir_const_i(L->a, 0), ilir_const_i(L->a, dims[i]),
                      ILIR_LOOP_SERIAL, to_block(body));
  }
  return inner;
}

/* The body of an operator of a `for k in n.children` loop, `k < num_deps ?
 * e : 0` with k its first axis (ra_op_body): e, or NULL for any other. */
static const RaExpr *per_child_body(const RaOp *op) {
  const RaExpr *b = op->body, *c = b->c;
  if (op->shape.rank == 0 || b->kind != RA_SELECT || c->kind != RA_BINARY || c->op != RA_LT ||
      c->a->kind != RA_VAR || c->a->var != op->vars[0] || c->b->kind != RA_NUM_DEPS ||
      b->b->kind != RA_CONST || b->b->value != 0)
    return NULL;
  return b->a;
}

/* op[n, i, j, ...] = body. An operator of a for loop computes the rows of
 * the node's children, k in [0, num_deps), and zeros the rest up to K. */
static void lower_op(Lower *L, const RaOp *op, CtxVec *out) {
  IlirVar *vars[RA_MAX_RANK];
  IlirExpr *off = ilir_const_i(L->a, 0);
  for (int i = 0; i < op->shape.rank; i++) {
    vars[i] = var_of(L, op->vars[i]);
    off = ilir_binary(L->a, ILIR_ADD,
                      ilir_binary(L->a, ILIR_MUL, off, ilir_const_i(L->a, op->shape.dims[i])),
                      ilir_var(L->a, vars[i]));
  }
  int buf = L->op_buf[L->fn - L->p->funcs][op->id];
  IlirExpr *at = row_index(L, node_var(L), op->shape.size, off);
  const RaExpr *child = per_child_body(op);
  if (!child) {
    ctx_vec_push(L->a, out, loop_nest(L, vars, op->shape.dims, op->shape.rank,
                                      ilir_store(L->a, buf, at, lower_f(L, op->body))));
    return;
  }
  IlirStmt *rows = loop_nest(L, vars + 1, op->shape.dims + 1, op->shape.rank - 1,
                             ilir_store(L->a, buf, at, lower_f(L, child)));
  IlirStmt *zeros = loop_nest(L, vars + 1, op->shape.dims + 1, op->shape.rank - 1,
                              ilir_store(L->a, buf, at, ilir_const_f(L->a, 0)));
  IlirExpr *k = ilir_load(L->a, L->k, L->k->num_deps_buf, node_var(L));
  IlirExpr *most = ilir_const_i(L->a, op->shape.dims[0]);
  for (int part = 0; part < 2; part++) {
    CtxVec body = {0};
    ctx_vec_push(L->a, &body, part ? zeros : rows);
    IlirVar *v = part ? ilir_new_var(L->a, L->k, op->vars[0]->name) : vars[0];
    IlirStmt *loop = ilir_loop(L->a, v, part ? k : ilir_const_i(L->a, 0), part ? most : k,
                               ILIR_LOOP_SERIAL, to_block(body));
    if (part) loop = ilir_subst_stmt(L->a, loop, vars[0], ilir_var(L->a, v));
    ctx_vec_push(L->a, out, loop);
  }
}

/* result[n, field k] = results[k][n, ...] for every field. */
static void lower_return(Lower *L, const RaStmt *s, CtxVec *out) {
  int f = (int)(L->fn - L->p->funcs);
  long off = 0, rsize = L->k->bufs[L->res_buf[f]].size;
  for (int k = 0; k < L->fn->nfields; k++) {
    const RaOp *op = s->results[k];
    IlirVar *j = ilir_new_var(L->a, L->k, "j");
    IlirExpr *jx = ilir_var(L->a, j);
    IlirExpr *src = ilir_load(L->a, L->k, L->op_buf[f][op->id],
                              row_index(L, node_var(L), op->shape.size, jx));
    IlirExpr *dst = row_index(L, node_var(L), rsize, ilir_binary(L->a, ILIR_ADD,
                                                                 ilir_const_i(L->a, off), jx));
    CtxVec body = {0};
    ctx_vec_push(L->a, &body, ilir_store(L->a, L->res_buf[f], dst, src));
    ctx_vec_push(L->a, out, ilir_loop(L->a, j, ilir_const_i(L->a, 0),
                                      ilir_const_i(L->a, op->shape.size), ILIR_LOOP_SERIAL,
                                      to_block(body)));
    off += op->shape.size;
  }
}

/* The statements that run after a block unless it returns: what follows
 * its `if` in the enclosing block, then what follows that block's `if`, ... */
typedef struct Cont {
  RaStmt *const *stmts;
  int n;
  const struct Cont *next;
} Cont;

/* [n] statements, then — unless they return — the continuation [k]. An
 * `if` takes everything after it into both branches, each going on with
 * what follows it: `if A { return x } else { if B { return y } }; return z`
 * returns z where neither A nor B holds. */
static void lower_stmts(Lower *L, RaStmt *const *stmts, int n, const Cont *k, CtxVec *out) {
  for (int i = 0; i < n; i++) {
    const RaStmt *s = stmts[i];
    if (s->kind == RA_STMT_OP) {
      lower_op(L, s->op, out);
    } else if (s->kind == RA_STMT_RETURN) {
      lower_return(L, s, out);
      return;
    } else {
      Cont after = {stmts + i + 1, n - i - 1, k};
      IlirStmt *st = CTX_NEW(L->a, IlirStmt);
      st->kind = ILIR_IF;
      st->cond = lower_i(L, s->cond);
      CtxVec then = {0}, els = {0};
      lower_stmts(L, s->then.stmts, s->then.n, &after, &then);
      lower_stmts(L, s->els.stmts, s->els.n, &after, &els);
      st->then = to_block(then);
      st->els = to_block(els);
      ctx_vec_push(L->a, out, st);
      return; /* what follows went into both branches */
    }
  }
  if (k) lower_stmts(L, k->stmts, k->n, k->next, out);
}

/* for l in levels { for n in level l { every function at n } } */
static IlirBlock level_loops(Lower *L) {
  CtxVec per_node = {0};
  for (int f = 0; f < L->p->nfuncs; f++) {
    L->fn = &L->p->funcs[f];
    L->vars = CTX_NEW_ARRAY(L->a, IlirVar *, L->fn->nvars + 1);
    lower_stmts(L, L->fn->body.stmts, L->fn->body.n, NULL, &per_node);
  }
  IlirVar *l = ilir_new_var(L->a, L->k, "l");
  IlirExpr *lx = ilir_var(L->a, l);
  IlirExpr *lo = ilir_load(L->a, L->k, L->k->levels_buf, lx);
  IlirExpr *hi = ilir_load(L->a, L->k, L->k->levels_buf,
                           ilir_binary(L->a, ILIR_ADD, lx, ilir_const_i(L->a, 1)));
  CtxVec level = {0}, all = {0};
  ctx_vec_push(L->a, &level, ilir_loop(L->a, L->node, lo, hi, ILIR_LOOP_NODES,
                                       to_block(per_node)));
  ctx_vec_push(L->a, &all, ilir_loop(L->a, l, ilir_const_i(L->a, 0), ilir_arg(L->a, 1),
                                     ILIR_LOOP_LEVELS, to_block(level)));
  return to_block(all);
}

IlirKernel *ilir_lower(CtxArena *arena, CtxDiag *diag, const RaProgram *p) {
  Lower L;
  memset(&L, 0, sizeof L);
  L.a = arena;
  L.diag = diag;
  L.p = p;
  L.k = CTX_NEW(arena, IlirKernel);
  L.k->name = ctx_arena_printf(arena, "ctx_%s_kernel", p->name);
  L.k->max_deps = p->max_arity;
  L.k->tree = p->kind == SEMA_TREE;
  L.k->disabled = p->disabled;
  L.k->values_per_node = p->values_per_node;
  declare_buffers(&L);
  L.k->bufs = CTX_NEW_ARRAY(arena, IlirBuf, L.bufs.len);
  for (int i = 0; i < L.bufs.len; i++) L.k->bufs[i] = *(IlirBuf *)L.bufs.items[i];
  L.k->nbufs = L.bufs.len;
  L.node = ilir_new_var(arena, L.k, "n");
  L.k->body = level_loops(&L);
  L.k->out_buf = L.res_buf[p->out_func];
  for (int k = 0; k < p->out_field; k++) L.k->out_off += p->funcs[p->out_func].fields[k].size;
  L.k->out_size = p->out_shape.size;
  return ilir_verify(L.k, diag) ? L.k : NULL;
}
