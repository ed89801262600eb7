/* driver_flops.c — how many floating-point operations a run of a model does,
 * counted on its RA (for the GFLOP/s of `ctx run --time`).
 *
 * The count is the model's arithmetic as written, independent of the engine
 * and the schedule: one per arithmetic operation or function (+ - * /,
 * sigmoid, tanh, exp, ...), a reduction's accumulation one per term, so a
 * multiply-add is two, the usual convention of GFLOP/s figures. Comparisons,
 * index arithmetic and reads count nothing. A node runs the statements of its
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

/* Operations of one evaluation of [e]. */
static double expr_flops(const RaExpr *e, long ndeps) {
  if (!e) return 0;
  switch (e->kind) {
  case RA_UNARY:
    return (e->op == RA_FN_NOT ? 0 : 1) + expr_flops(e->a, ndeps);
  case RA_BINARY:
    return (is_arith(e->op) ? 1 : 0) + expr_flops(e->a, ndeps) + expr_flops(e->b, ndeps);
  case RA_SELECT: {
    double a = expr_flops(e->a, ndeps), b = expr_flops(e->b, ndeps);
    return expr_flops(e->c, ndeps) + (a > b ? a : b);
  }
  case RA_REDUCE: {
    double n = e->var->over_deps ? (double)ndeps : (double)e->var->extent;
    return n * (expr_flops(e->a, ndeps) + 1);
  }
  default:
    return 0;
  }
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
      sum += (double)st->op->shape.size * expr_flops(st->op->body, ndeps);
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
