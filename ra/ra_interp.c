/* ra_interp.c — the float64 reference interpreter of RA.
 *
 * Executes a program over a validated forest node by node in dependency
 * order (Kahn's algorithm over the forest's dependency arrays: every node
 * after all the nodes it depends on), with no batching and no fusion. At each
 * node every recursive function runs its body: operators are evaluated
 * element by element into per-function scratch buffers, `if` picks a block,
 * `return` stores the result fields in the node's slot of the function's
 * result table. A read of a dependency the node does not have yields 0.
 *
 * Everything is iterative except the evaluation of one expression tree,
 * whose depth is bounded by the front end's expression-depth limit.
 */
#include "ra/ra.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const RaProgram *p;
  const CtxrtForest *f;
  const double *const *params;
  double **res;       /* [func]: num_nodes rows of the function's result fields */
  long *res_size;     /* [func]: values per node */
  long **field_off;   /* [func][field]: offset of a field within a row */
  double ***ops;      /* [func][op]: scratch buffer */
  double **vars;      /* [func]: variable values */
  const RaFunc *fn;   /* the function being run */
  int32_t node;       /* the node being computed */
  CtxrtError *err;
  CtxrtStatus st;
} Interp;

static void fail(Interp *I, CtxrtStatus st, const char *fmt, ...) {
  if (I->st != CTXRT_OK) return;
  I->st = st;
  int32_t line = I->f->line[I->node];
  int n = line > 0 ? snprintf(I->err->msg, sizeof I->err->msg, "%s:%d: error: ",
                              I->f->name, line)
                   : snprintf(I->err->msg, sizeof I->err->msg, "%s: error: ", I->f->name);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(I->err->msg + n, sizeof I->err->msg - (size_t)n, fmt, ap);
  va_end(ap);
  I->err->status = st;
  I->err->line = line;
}

/* The structure (1-based) holding node [n], for messages. */
static int struct_of(const CtxrtForest *f, int32_t n) {
  int lo = 0, hi = f->num_structs - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (f->struct_begin[mid] <= n) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

static double eval(Interp *I, const RaExpr *e);

/* The node a read refers to, or -1 when that dependency does not exist. */
static int32_t dep_node(Interp *I, const RaExpr *dep) {
  if (!dep) return I->node;
  double k = eval(I, dep);
  int32_t n = ctxrt_forest_num_deps(I->f, I->node);
  if (k < 0 || k >= n) return -1;
  return I->f->dep[I->f->dep_begin[I->node] + (int32_t)k];
}

/* Row-major offset of [e]'s indices in [shape]; -1 (reported) when one is
 * outside its axis. */
static long flat_index(Interp *I, const RaExpr *e, const RaShape *shape, const char *what) {
  long off = 0;
  for (int i = 0; i < e->nidx; i++) {
    double x = eval(I, e->idx[i]);
    if (!(x >= 0 && x < (double)shape->dims[i])) {
      fail(I, CTXRT_ERR_INVALID, "node %lld of structure %d: index %.17g of '%s' is outside "
           "[0, %ld)", (long long)I->f->id[I->node], struct_of(I->f, I->node), x, what,
           shape->dims[i]);
      return -1;
    }
    off = off * shape->dims[i] + (long)x;
  }
  return off;
}

static double read_input(Interp *I, const RaExpr *e) {
  const RaInput *in = &I->p->inputs[e->index];
  int32_t n = dep_node(I, e->dep);
  if (n < 0) return 0;
  int32_t have = I->f->val_begin[n + 1] - I->f->val_begin[n];
  if (have < in->offset + in->row.size) {
    int32_t saved = I->node;
    I->node = n;
    fail(I, CTXRT_ERR_INVALID, "node %lld of structure %d has no value for input '%s'",
         (long long)I->f->id[n], struct_of(I->f, n), in->name);
    I->node = saved;
    return 0;
  }
  long off = flat_index(I, e, &in->row, in->name);
  return off < 0 ? 0 : I->f->val[I->f->val_begin[n] + in->offset + off];
}

static double read(Interp *I, const RaExpr *e) {
  const RaProgram *p = I->p;
  long off;
  switch (e->src) {
  case RA_SRC_PARAM:
    off = flat_index(I, e, &p->params[e->index].shape, p->params[e->index].name);
    return off < 0 ? 0 : I->params[e->index][off];
  case RA_SRC_INPUT: return read_input(I, e);
  case RA_SRC_OP: {
    const RaOp *op = I->fn->ops[e->index];
    off = flat_index(I, e, &op->shape, op->name);
    return off < 0 ? 0 : I->ops[I->fn - p->funcs][e->index][off];
  }
  case RA_SRC_REC: {
    int32_t n = dep_node(I, e->dep);
    if (n < 0) return 0; /* a dependency the node does not have */
    const RaFunc *f = &p->funcs[e->index];
    off = flat_index(I, e, &f->fields[e->field], f->name);
    if (off < 0) return 0;
    return I->res[e->index][n * I->res_size[e->index] + I->field_off[e->index][e->field] + off];
  }
  }
  return 0;
}

static double apply_fn(int fn, double x) {
  switch (fn) {
  case RA_FN_NEG: return -x;
  case RA_FN_NOT: return x == 0;
  case RA_FN_SIGMOID: return 1 / (1 + exp(-x));
  case RA_FN_TANH: return tanh(x);
  case RA_FN_RELU: return x > 0 ? x : 0;
  case RA_FN_EXP: return exp(x);
  case RA_FN_LOG: return log(x);
  case RA_FN_SQRT: return sqrt(x);
  default: return fabs(x);
  }
}

static double apply_op(int op, double a, double b) {
  switch (op) {
  case RA_ADD: return a + b;
  case RA_SUB: return a - b;
  case RA_MUL: return a * b;
  case RA_DIV: return a / b;
  case RA_EQ: return a == b;
  case RA_NE: return a != b;
  case RA_LT: return a < b;
  case RA_LE: return a <= b;
  case RA_GT: return a > b;
  case RA_GE: return a >= b;
  case RA_AND: return a != 0 && b != 0;
  default: return a != 0 || b != 0;
  }
}

/* ---- sums over a range, a chunk of terms at a time ---------------------------------- */

/* A sum's terms are computed as the element-by-element loop would compute
 * them, in the same order with the same operations, CHUNK values of the
 * reduction variable at a time: a read that the variable moves along a
 * contiguous or strided row becomes a pointer and a stride, found once, not
 * an index evaluated per term (U[i, r] * h@dep(0)[r]: the matrix-vector
 * products that are nearly all of a model's work). A term of any other form
 * (a conditional, an input, a nested sum, an index computed from a read), or
 * a read that would leave its axis anywhere in the range, takes the
 * element-by-element loop, which reports the error exactly as before. */
enum { CHUNK = 64 };

/* Does [e] mention the variable [v]? */
static bool mentions(const RaExpr *e, const RaVar *v) {
  if (!e) return false;
  if ((e->kind == RA_VAR || e->kind == RA_REDUCE) && e->var == v) return true;
  if (mentions(e->a, v) || mentions(e->b, v) || mentions(e->c, v) || mentions(e->dep, v))
    return true;
  for (int i = 0; i < e->nidx; i++)
    if (mentions(e->idx[i], v)) return true;
  return false;
}

/* Can [e] be evaluated without reading anything (so without an error)? */
static bool pure(const RaExpr *e) {
  if (!e) return true;
  if (e->kind == RA_READ || e->kind == RA_REDUCE) return false;
  return pure(e->a) && pure(e->b) && pure(e->c);
}

/* A read [e] over k in [0, n): the element at k = 0 ([*at], NULL when the
 * dependency is missing: zeros) and the distance between consecutive ones.
 * False unless each index is k itself or a pure expression without k, the
 * dependency is pure and without k, and every index stays on its axis. */
static bool strided_read(Interp *I, const RaExpr *e, const RaVar *k, long n, const double **at,
                         long *stride) {
  const RaProgram *p = I->p;
  const RaShape *shape;
  const double *base;
  if (e->dep && (mentions(e->dep, k) || !pure(e->dep))) return false;
  switch (e->src) {
  case RA_SRC_PARAM:
    shape = &p->params[e->index].shape;
    base = I->params[e->index];
    break;
  case RA_SRC_OP:
    shape = &I->fn->ops[e->index]->shape;
    base = I->ops[I->fn - p->funcs][e->index];
    break;
  case RA_SRC_REC: {
    int32_t node = dep_node(I, e->dep);
    shape = &p->funcs[e->index].fields[e->field];
    base = node < 0 ? NULL
                    : I->res[e->index] + node * I->res_size[e->index] +
                          I->field_off[e->index][e->field];
    break;
  }
  default: return false;
  }
  long off = 0, step = 0;
  for (int i = 0; i < e->nidx; i++) {
    const RaExpr *x = e->idx[i];
    long pos = 0;
    if (x->kind == RA_VAR && x->var == k) {
      if (n > shape->dims[i]) return false;
      step += 1;
    } else {
      if (mentions(x, k) || !pure(x)) return false;
      double v = eval(I, x);
      if (!(v >= 0 && v < (double)shape->dims[i])) return false;
      pos = (long)v;
    }
    off = off * shape->dims[i] + pos;
    step = i + 1 < e->nidx ? step * shape->dims[i + 1] : step;
  }
  *at = base ? base + off : NULL;
  *stride = step;
  return true;
}

/* [e] at k = k0 .. k0 + m - 1 into out[0 .. m); false when it has a form
 * this does not take (see above). */
static bool eval_chunk(Interp *I, const RaExpr *e, const RaVar *k, long n, long k0, int m,
                       double *out) {
  double rhs[CHUNK];
  switch (e->kind) {
  case RA_CONST:
    for (int j = 0; j < m; j++) out[j] = e->value;
    return true;
  case RA_VAR: {
    double v = e->var == k ? 0 : I->vars[I->fn - I->p->funcs][e->var->id];
    for (int j = 0; j < m; j++) out[j] = e->var == k ? (double)(k0 + j) : v;
    return true;
  }
  case RA_READ: {
    const double *at;
    long stride;
    if (!strided_read(I, e, k, n, &at, &stride)) return false;
    for (int j = 0; j < m; j++) out[j] = at ? at[(k0 + j) * stride] : 0;
    return true;
  }
  case RA_UNARY:
    if (!eval_chunk(I, e->a, k, n, k0, m, out)) return false;
    for (int j = 0; j < m; j++) out[j] = apply_fn(e->op, out[j]);
    return true;
  case RA_BINARY:
    if (!eval_chunk(I, e->a, k, n, k0, m, out) || !eval_chunk(I, e->b, k, n, k0, m, rhs))
      return false;
    if (e->op == RA_MUL) /* the common operators without a call per term */
      for (int j = 0; j < m; j++) out[j] *= rhs[j];
    else if (e->op == RA_ADD)
      for (int j = 0; j < m; j++) out[j] += rhs[j];
    else
      for (int j = 0; j < m; j++) out[j] = apply_op(e->op, out[j], rhs[j]);
    return true;
  default: return false;
  }
}

/* The sum [e] over its n terms in order, a chunk at a time; false (nothing
 * changed) when a term has a form eval_chunk does not take. */
static bool chunked_sum(Interp *I, const RaExpr *e, long n, double *acc) {
  double terms[CHUNK];
  double sum = 0;
  for (long k0 = 0; k0 < n; k0 += CHUNK) {
    int m = n - k0 < CHUNK ? (int)(n - k0) : CHUNK;
    if (!eval_chunk(I, e->a, e->var, n, k0, m, terms)) return false;
    for (int j = 0; j < m; j++) sum += terms[j];
  }
  *acc = sum;
  return true;
}

static double reduce(Interp *I, const RaExpr *e) {
  double *var = &I->vars[I->fn - I->p->funcs][e->var->id];
  long n = e->var->over_deps ? ctxrt_forest_num_deps(I->f, I->node) : e->var->extent;
  double acc = e->op == RA_MAX ? -INFINITY : 0;
  if (e->op != RA_MAX && n > 0 && chunked_sum(I, e, n, &acc)) {
    *var = (double)(n - 1);
    return acc;
  }
  for (long k = 0; k < n; k++) {
    *var = (double)k;
    double x = eval(I, e->a);
    acc = e->op == RA_MAX ? (x > acc ? x : acc) : acc + x;
  }
  return acc;
}

static double eval(Interp *I, const RaExpr *e) {
  switch (e->kind) {
  case RA_CONST: return e->value;
  case RA_VAR: return I->vars[I->fn - I->p->funcs][e->var->id];
  case RA_READ: return read(I, e);
  case RA_UNARY: return apply_fn(e->op, eval(I, e->a));
  case RA_BINARY: return apply_op(e->op, eval(I, e->a), eval(I, e->b));
  case RA_SELECT: return eval(I, e->c) != 0 ? eval(I, e->a) : eval(I, e->b);
  case RA_REDUCE: return reduce(I, e);
  case RA_NUM_DEPS: return ctxrt_forest_num_deps(I->f, I->node);
  }
  return 0;
}

/* Evaluates every element of [op] into its buffer, row-major. */
static void run_op(Interp *I, const RaOp *op) {
  double *out = I->ops[I->fn - I->p->funcs][op->id];
  double *vars = I->vars[I->fn - I->p->funcs];
  long pos[RA_MAX_RANK] = {0};
  for (int i = 0; i < op->shape.rank; i++) vars[op->vars[i]->id] = 0;
  for (long n = 0; n < op->shape.size && I->st == CTXRT_OK; n++) {
    out[n] = eval(I, op->body);
    for (int i = op->shape.rank - 1; i >= 0; i--) { /* next index, last axis fastest */
      if (++pos[i] < op->shape.dims[i]) {
        vars[op->vars[i]->id] = (double)pos[i];
        break;
      }
      pos[i] = 0;
      vars[op->vars[i]->id] = 0;
    }
  }
}

/* Runs [b]; true when it returned. */
static bool run_block(Interp *I, const RaBlock *b) {
  int f = (int)(I->fn - I->p->funcs);
  for (int i = 0; i < b->n && I->st == CTXRT_OK; i++) {
    const RaStmt *s = b->stmts[i];
    if (s->kind == RA_STMT_OP) {
      run_op(I, s->op);
    } else if (s->kind == RA_STMT_IF) {
      if (run_block(I, eval(I, s->cond) != 0 ? &s->then : &s->els)) return true;
    } else {
      double *row = I->res[f] + (long)I->node * I->res_size[f];
      for (int k = 0; k < I->fn->nfields; k++)
        memcpy(row + I->field_off[f][k], I->ops[f][s->results[k]->id],
               sizeof(double) * (size_t)I->fn->fields[k].size);
      return true;
    }
  }
  return false;
}

/* ---- order, storage, the entry point ------------------------------------------------ */

/* Nodes in an order where each comes after all its dependencies (Kahn's
 * algorithm); NULL when out of memory. The forest is validated: no cycles. */
static int32_t *dependency_order(const CtxrtForest *f) {
  int32_t n = f->num_nodes, m = f->dep_begin[n];
  int32_t *left = calloc((size_t)n + 1, sizeof *left), *order = malloc(sizeof *order * ((size_t)n + 1));
  int32_t *users_begin = calloc((size_t)n + 2, sizeof(int32_t)), *users = malloc(sizeof(int32_t) * ((size_t)m + 1));
  if (!left || !order || !users_begin || !users) {
    free(left), free(order), free(users_begin), free(users);
    return NULL;
  }
  for (int32_t e = 0; e < m; e++) users_begin[f->dep[e] + 2]++;
  for (int32_t v = 0; v < n; v++) users_begin[v + 2] += users_begin[v + 1];
  for (int32_t v = 0; v < n; v++)
    for (int32_t e = f->dep_begin[v]; e < f->dep_begin[v + 1]; e++)
      users[users_begin[f->dep[e] + 1]++] = v;
  int32_t head = 0, tail = 0;
  for (int32_t v = 0; v < n; v++) {
    left[v] = f->dep_begin[v + 1] - f->dep_begin[v];
    if (left[v] == 0) order[tail++] = v;
  }
  while (head < tail) {
    int32_t v = order[head++];
    for (int32_t e = users_begin[v]; e < users_begin[v + 1]; e++)
      if (--left[users[e]] == 0) order[tail++] = users[e];
  }
  free(left), free(users_begin), free(users);
  return order;
}

static void free_storage(Interp *I) {
  for (int f = 0; f < I->p->nfuncs; f++) {
    if (I->res) free(I->res[f]);
    if (I->field_off) free(I->field_off[f]);
    if (I->vars) free(I->vars[f]);
    for (int o = 0; I->ops && I->ops[f] && o < I->p->funcs[f].nops; o++) free(I->ops[f][o]);
    if (I->ops) free(I->ops[f]);
  }
  free(I->res), free(I->res_size), free(I->field_off), free(I->ops), free(I->vars);
}

static bool alloc_storage(Interp *I) {
  const RaProgram *p = I->p;
  size_t nf = (size_t)p->nfuncs;
  I->res = calloc(nf, sizeof *I->res);
  I->res_size = calloc(nf, sizeof *I->res_size);
  I->field_off = calloc(nf, sizeof *I->field_off);
  I->ops = calloc(nf, sizeof *I->ops);
  I->vars = calloc(nf, sizeof *I->vars);
  if (!I->res || !I->res_size || !I->field_off || !I->ops || !I->vars) return false;
  for (int f = 0; f < p->nfuncs; f++) {
    const RaFunc *fn = &p->funcs[f];
    I->field_off[f] = calloc((size_t)fn->nfields, sizeof(long));
    I->vars[f] = calloc((size_t)fn->nvars + 1, sizeof(double));
    I->ops[f] = calloc((size_t)fn->nops + 1, sizeof(double *));
    if (!I->field_off[f] || !I->vars[f] || !I->ops[f]) return false;
    for (int k = 0; k < fn->nfields; k++) {
      I->field_off[f][k] = I->res_size[f];
      I->res_size[f] += fn->fields[k].size;
    }
    I->res[f] = calloc((size_t)I->f->num_nodes * (size_t)I->res_size[f] + 1, sizeof(double));
    if (!I->res[f]) return false;
    for (int o = 0; o < fn->nops; o++)
      if (!(I->ops[f][o] = calloc((size_t)fn->ops[o]->shape.size, sizeof(double))))
        return false;
  }
  return true;
}

/* Copies the output rows: every node, or the output nodes. */
static CtxrtStatus collect(Interp *I, bool all_nodes, double **out, int64_t *rows) {
  const RaProgram *p = I->p;
  int32_t *nodes = malloc(sizeof(int32_t) * ((size_t)I->f->num_nodes + 1));
  if (!nodes) return CTXRT_ERR_NOMEM;
  int32_t n = I->f->num_nodes;
  if (all_nodes)
    for (int32_t v = 0; v < n; v++) nodes[v] = v;
  else
    n = ctxrt_forest_outputs(I->f, nodes);
  long size = p->out_shape.size, off = I->field_off[p->out_func][p->out_field];
  double *rowsbuf = n < 0 ? NULL : malloc(sizeof(double) * ((size_t)n * (size_t)size + 1));
  if (!rowsbuf) {
    free(nodes);
    return CTXRT_ERR_NOMEM;
  }
  for (int32_t r = 0; r < n; r++)
    memcpy(rowsbuf + (long)r * size,
           I->res[p->out_func] + (long)nodes[r] * I->res_size[p->out_func] + off,
           sizeof(double) * (size_t)size);
  free(nodes);
  *out = rowsbuf;
  *rows = n;
  return CTXRT_OK;
}

CtxrtStatus ra_interp_run(const RaProgram *p, const CtxrtForest *forest,
                          const double *const *params, bool all_nodes, double **out,
                          int64_t *rows, CtxrtError *err) {
  Interp I;
  memset(&I, 0, sizeof I);
  I.p = p;
  I.f = forest;
  I.params = params;
  I.err = err;
  *out = NULL;
  *rows = 0;
  int32_t *order = dependency_order(forest);
  if (!order || !alloc_storage(&I)) {
    free(order);
    free_storage(&I);
    snprintf(err->msg, sizeof err->msg, "%s: error: out of memory", forest->name);
    return err->status = CTXRT_ERR_NOMEM;
  }
  for (int32_t i = 0; i < forest->num_nodes && I.st == CTXRT_OK; i++) {
    I.node = order[i];
    for (int f = 0; f < p->nfuncs && I.st == CTXRT_OK; f++) {
      I.fn = &p->funcs[f];
      run_block(&I, &I.fn->body);
    }
  }
  free(order);
  if (I.st == CTXRT_OK) I.st = collect(&I, all_nodes, out, rows);
  free_storage(&I);
  return I.st;
}
