/* driver_flops.c — how many floating-point operations a run of a model does,
 * counted on its RA (for the GFLOP/s of `ctx run --time`).
 *
 * The count is the model's arithmetic, independent of the engine and the
 * schedule: one per arithmetic operation or function (+ - * /, sigmoid, tanh,
 * exp, ...), a reduction's accumulation one per term, so a multiply-add is
 * two, the usual convention of GFLOP/s figures; an operation is counted once
 * per combination of the variables it reads (in `U @ (h0 + h1)` the sum once
 * per column, not once per element of U). Comparisons, index arithmetic and
 * reads count nothing. A node runs the statements of its
 * rec functions whose conditions hold for it; a condition on the structure
 * (leaf(n), n.num_children == 2: RA reads them as the number of
 * dependencies) is decided for each number of dependencies, any other by the
 * more expensive branch. The optimizations RA applied (concat-split, CSE, ...)
 * are in the count; what later passes hoist (work done once per run instead
 * of once per node) is not taken off, so the figure is the work of the model,
 * a little above what the kernel does.
 */
#include "driver/driver.h"
#include "driver/driver_jit.h"

#include <stdlib.h>

/* [e] as a number for a node of [ndeps] dependencies; false when it is not a
 * function of the structure alone. */
static bool structural_value(const RaExpr *e, long ndeps, double *out) {
  double a, b;
  switch (e->kind) {
  case RA_CONST:
    *out = e->value;
    return true;
  case RA_NUM_DEPS:
    *out = (double)ndeps;
    return true;
  case RA_UNARY:
    if (!structural_value(e->a, ndeps, &a)) return false;
    if (e->op == RA_FN_NEG)
      *out = -a;
    else if (e->op == RA_FN_NOT)
      *out = a == 0;
    else
      return false;
    return true;
  case RA_BINARY:
    if (!structural_value(e->a, ndeps, &a) || !structural_value(e->b, ndeps, &b))
      return false;
    switch (e->op) {
    case RA_ADD:
      *out = a + b;
      return true;
    case RA_SUB:
      *out = a - b;
      return true;
    case RA_MUL:
      *out = a * b;
      return true;
    case RA_EQ:
      *out = a == b;
      return true;
    case RA_NE:
      *out = a != b;
      return true;
    case RA_LT:
      *out = a < b;
      return true;
    case RA_LE:
      *out = a <= b;
      return true;
    case RA_GT:
      *out = a > b;
      return true;
    case RA_GE:
      *out = a >= b;
      return true;
    case RA_AND:
      *out = a != 0 && b != 0;
      return true;
    case RA_OR:
      *out = a != 0 || b != 0;
      return true;
    default:
      return false;
    }
  default:
    return false;
  }
}

static bool is_arith(int op) {
  return op == RA_ADD || op == RA_SUB || op == RA_MUL || op == RA_DIV;
}

/* The variables an expression reads, as a set of RaVar ids (ids past 63
 * share the last bit), and their extents. */
typedef struct {
  long ndeps;     /* of the node being counted */
  double ext[64]; /* the extent of each variable seen */
} Vars;

static uint64_t var_bit(const RaVar *x) {
  return (uint64_t)1 << (x->id < 63 ? x->id : 63);
}

static double extent(const Vars *v, const RaVar *x) {
  return x->over_deps ? (double)v->ndeps : (double)x->extent;
}

/* How many times an operation reading the variables [mask] runs: once per
 * combination of their values. */
static double times(const Vars *v, uint64_t mask) {
  double n = 1;
  for (int b = 0; b < 64; b++)
    if (mask >> b & 1) n *= v->ext[b];
  return n;
}

static double expr_cost(const RaExpr *e, Vars *v, uint64_t *mask);

/* The variables the indices of a read use (index arithmetic costs nothing). */
static uint64_t read_vars(const RaExpr *e, Vars *v) {
  uint64_t m = 0, sub;
  for (int k = 0; k < e->nidx; k++) {
    expr_cost(e->idx[k], v, &sub);
    m |= sub;
  }
  if (e->dep) {
    expr_cost(e->dep, v, &sub);
    m |= sub;
  }
  return m;
}

/* The operations of [e] over all the values of the variables it reads, which
 * go to [*mask]: a node costs one per combination of the variables below it,
 * so a subexpression that does not read an axis is counted once, not once
 * per element of that axis (U·(h_0 + h_1): the sum once per column). */
static double expr_cost(const RaExpr *e, Vars *v, uint64_t *mask) {
  uint64_t ma = 0, mb = 0, mc = 0;
  double cost;
  *mask = 0;
  if (!e) return 0;
  switch (e->kind) {
  case RA_VAR:
    v->ext[e->var->id < 63 ? e->var->id : 63] = extent(v, e->var);
    *mask = var_bit(e->var);
    return 0;
  case RA_READ:
    *mask = read_vars(e, v);
    return 0;
  case RA_UNARY:
    cost = expr_cost(e->a, v, mask);
    return cost + (e->op == RA_FN_NOT ? 0 : times(v, *mask));
  case RA_BINARY:
    cost = expr_cost(e->a, v, &ma) + expr_cost(e->b, v, &mb);
    *mask = ma | mb;
    return cost + (is_arith(e->op) ? times(v, *mask) : 0);
  case RA_SELECT: {
    double c = expr_cost(e->c, v, &mc), a = expr_cost(e->a, v, &ma),
           b = expr_cost(e->b, v, &mb);
    *mask = ma | mb | mc;
    return c + (a > b ? a : b);
  }
  case RA_REDUCE: {
    uint64_t bit = var_bit(e->var);
    v->ext[e->var->id < 63 ? e->var->id : 63] = extent(v, e->var);
    cost = expr_cost(e->a, v, &ma);
    *mask = ma & ~bit;
    return cost + times(v, ma | bit); /* one accumulation per term */
  }
  default:
    return 0;
  }
}

/* The operations of the operator [op]: its body over every element. */
static double op_flops(const RaOp *op, long ndeps) {
  Vars v;
  v.ndeps = ndeps;
  for (int b = 0; b < 64; b++)
    v.ext[b] = 1;
  uint64_t mask;
  return expr_cost(op->body, &v, &mask);
}

/* Operations of statements [from, n) of [b], up to a return ([*ret] set when
 * one is reached); a branch that returns ends the block for that node. */
static double block_flops(const RaBlock *b, int from, long ndeps, bool *ret) {
  double sum = 0;
  *ret = false;
  for (int i = from; i < b->n; i++) {
    const RaStmt *st = b->stmts[i];
    if (st->kind == RA_STMT_RETURN) {
      *ret = true;
      return sum;
    }
    if (st->kind == RA_STMT_OP) {
      sum += op_flops(st->op, ndeps);
      continue;
    }
    bool rt, re, rr;
    double c, t = block_flops(&st->then, 0, ndeps, &rt),
              e = block_flops(&st->els, 0, ndeps, &re);
    double rest = block_flops(b, i + 1, ndeps, &rr);
    double path_t = t + (rt ? 0 : rest), path_e = e + (re ? 0 : rest);
    bool take_t = structural_value(st->cond, ndeps, &c) ? c != 0 : path_t >= path_e;
    *ret = take_t ? rt || rr : re || rr;
    return sum + (take_t ? path_t : path_e);
  }
  return sum;
}

double ctx_flops_node(const RaProgram *p, long ndeps) {
  double sum = 0;
  bool ret;
  for (int f = 0; f < p->nfuncs; f++)
    sum += block_flops(&p->funcs[f].body, 0, ndeps, &ret);
  return sum;
}

double ctx_flops_forest(const RaProgram *p, const CtxrtForest *f) {
  enum { CACHED = 64 };
  double cache[CACHED];
  for (int k = 0; k < CACHED; k++)
    cache[k] = -1;
  double sum = 0;
  for (int32_t n = 0; n < f->num_nodes; n++) {
    long d = (long)ctxrt_forest_num_deps(f, n);
    if (d >= CACHED) {
      sum += ctx_flops_node(p, d);
      continue;
    }
    if (cache[d] < 0) cache[d] = ctx_flops_node(p, d);
    sum += cache[d];
  }
  return sum;
}
