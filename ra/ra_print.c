/* ra_print.c — RA in readable form (`ctx check --dump=ra`) and its verifier.
 *
 *   rec cell -> (h: f32[256], c: f32[256])
 *     if deps == 0 {
 *       g[i < 768] = Emb[words@n, i] + b_iou[i]
 *       ...
 *       return (cell.h, c)
 *     }
 *
 * Reads print as NAME[index, ...]; a recursive result at a dependency as
 * cell.h@dep(0)[i]; a per-node input as words@n; reductions as
 * sum(k < 256) ... or sum(k in deps) ....
 */
#include "ra/ra_int.h"

static const char *const fn_names[] = {"-", "!", "sigmoid", "tanh", "relu",
                                       "exp", "log", "sqrt", "abs"};
static const char *const op_names[] = {"+", "-", "*", "/", "==", "!=", "<", "<=",
                                       ">", ">=", "&&", "||", "sum", "max"};

static void print_expr(CtxBuf *out, const RaProgram *p, const RaFunc *fn, const RaExpr *e);

static void print_idx(CtxBuf *out, const RaProgram *p, const RaFunc *fn, const RaExpr *e,
                      const char *lead) {
  if (e->nidx == 0 && !*lead) return;
  ctx_buf_putc(out, '[');
  ctx_buf_puts(out, lead);
  for (int i = 0; i < e->nidx; i++) {
    if (i || *lead) ctx_buf_puts(out, ", ");
    print_expr(out, p, fn, e->idx[i]);
  }
  ctx_buf_putc(out, ']');
}

static void print_dep(CtxBuf *out, const RaProgram *p, const RaFunc *fn, const RaExpr *dep) {
  if (!dep) {
    ctx_buf_puts(out, "@n");
    return;
  }
  ctx_buf_puts(out, "@dep(");
  print_expr(out, p, fn, dep);
  ctx_buf_putc(out, ')');
}

static void print_read(CtxBuf *out, const RaProgram *p, const RaFunc *fn, const RaExpr *e) {
  switch (e->src) {
  case RA_SRC_PARAM: ctx_buf_puts(out, p->params[e->index].name); break;
  case RA_SRC_INPUT:
    ctx_buf_puts(out, p->inputs[e->index].name);
    print_dep(out, p, fn, e->dep);
    break;
  case RA_SRC_OP: ctx_buf_puts(out, fn->ops[e->index]->name); break;
  case RA_SRC_REC: {
    const RaFunc *f = &p->funcs[e->index];
    ctx_buf_puts(out, f->name);
    if (f->nfields > 1 || f->field_names[0])
      ctx_buf_printf(out, ".%s", f->field_names[e->field] ? f->field_names[e->field]
                                                          : "?");
    print_dep(out, p, fn, e->dep);
    break;
  }
  }
  print_idx(out, p, fn, e, "");
}

static void print_expr(CtxBuf *out, const RaProgram *p, const RaFunc *fn, const RaExpr *e) {
  switch (e->kind) {
  case RA_CONST: ctx_buf_printf(out, "%.17g", e->value); break;
  case RA_VAR: ctx_buf_puts(out, e->var->name); break;
  case RA_READ: print_read(out, p, fn, e); break;
  case RA_UNARY:
    ctx_buf_printf(out, "%s(", fn_names[e->op]);
    print_expr(out, p, fn, e->a);
    ctx_buf_putc(out, ')');
    break;
  case RA_BINARY:
    ctx_buf_putc(out, '(');
    print_expr(out, p, fn, e->a);
    ctx_buf_printf(out, " %s ", op_names[e->op]);
    print_expr(out, p, fn, e->b);
    ctx_buf_putc(out, ')');
    break;
  case RA_SELECT:
    ctx_buf_puts(out, "select(");
    print_expr(out, p, fn, e->c);
    ctx_buf_puts(out, ", ");
    print_expr(out, p, fn, e->a);
    ctx_buf_puts(out, ", ");
    print_expr(out, p, fn, e->b);
    ctx_buf_putc(out, ')');
    break;
  case RA_REDUCE:
    if (e->var->over_deps)
      ctx_buf_printf(out, "%s(%s in deps) ", op_names[e->op], e->var->name);
    else
      ctx_buf_printf(out, "%s(%s < %ld) ", op_names[e->op], e->var->name, e->var->extent);
    print_expr(out, p, fn, e->a);
    break;
  case RA_NUM_DEPS: ctx_buf_puts(out, "deps"); break;
  }
}

static void print_shape(CtxBuf *out, const RaShape *s, bool is_int) {
  ctx_buf_puts(out, is_int ? "i32" : "f32");
  for (int i = 0; i < s->rank; i++) ctx_buf_printf(out, "%s%ld", i ? ", " : "[", s->dims[i]);
  if (s->rank) ctx_buf_putc(out, ']');
}

static void indent(CtxBuf *out, int level) {
  for (int i = 0; i < level; i++) ctx_buf_puts(out, "  ");
}

static void print_block(CtxBuf *out, const RaProgram *p, const RaFunc *fn, const RaBlock *b,
                        int level) {
  for (int i = 0; i < b->n; i++) {
    const RaStmt *s = b->stmts[i];
    indent(out, level);
    if (s->kind == RA_STMT_OP) {
      ctx_buf_puts(out, s->op->name);
      for (int k = 0; k < s->op->shape.rank; k++)
        ctx_buf_printf(out, "%s%s < %ld", k ? ", " : "[", s->op->vars[k]->name,
                       s->op->vars[k]->extent);
      ctx_buf_puts(out, s->op->shape.rank ? "] = " : " = ");
      print_expr(out, p, fn, s->op->body);
    } else if (s->kind == RA_STMT_RETURN) {
      ctx_buf_puts(out, "return (");
      for (int k = 0; k < fn->nfields; k++)
        ctx_buf_printf(out, "%s%s", k ? ", " : "", s->results[k]->name);
      ctx_buf_putc(out, ')');
    } else {
      ctx_buf_puts(out, "if ");
      print_expr(out, p, fn, s->cond);
      ctx_buf_puts(out, " {\n");
      print_block(out, p, fn, &s->then, level + 1);
      indent(out, level);
      ctx_buf_putc(out, '}');
      if (s->els.n) {
        ctx_buf_puts(out, " else {\n");
        print_block(out, p, fn, &s->els, level + 1);
        indent(out, level);
        ctx_buf_putc(out, '}');
      }
    }
    ctx_buf_putc(out, '\n');
  }
}

void ra_print(CtxBuf *out, const RaProgram *p) {
  static const char *const kinds[] = {"tree", "dag", "sequence"};
  ctx_buf_printf(out, "ra %s (%s, at most %ld dependencies per node)\n", p->name,
                 kinds[p->kind], p->max_arity);
  for (int i = 0; i < p->ninputs; i++) {
    const RaInput *in = &p->inputs[i];
    ctx_buf_printf(out, "input %s: ", in->name);
    print_shape(out, &in->row, in->is_int);
    ctx_buf_printf(out, " per node, values %ld..%ld", in->offset, in->offset + in->row.size);
    if (in->bound) ctx_buf_printf(out, ", ids < %ld", in->bound);
    ctx_buf_puts(out, in->read_at_internal ? ", read at every node\n" : ", read at leaves\n");
  }
  for (int i = 0; i < p->nparams; i++) {
    ctx_buf_printf(out, "param %s: ", p->params[i].name);
    print_shape(out, &p->params[i].shape, false);
    ctx_buf_putc(out, '\n');
  }
  for (int f = 0; f < p->nfuncs; f++) {
    const RaFunc *fn = &p->funcs[f];
    ctx_buf_printf(out, "\nrec %s -> (", fn->name);
    for (int k = 0; k < fn->nfields; k++) {
      if (k) ctx_buf_puts(out, ", ");
      if (fn->field_names[k]) ctx_buf_printf(out, "%s: ", fn->field_names[k]);
      print_shape(out, &fn->fields[k], false);
    }
    ctx_buf_puts(out, ")\n");
    print_block(out, p, fn, &fn->body, 1);
  }
  const RaFunc *of = &p->funcs[p->out_func];
  ctx_buf_printf(out, "\noutput %s", of->name);
  if (p->out_nfields == 1 && of->field_names[p->out_field])
    ctx_buf_printf(out, ".%s", of->field_names[p->out_field]);
  ctx_buf_puts(out, " at each root\n");
}

/* ---- the verifier ------------------------------------------------------------------ */

static bool verify_expr(const RaProgram *p, const RaFunc *fn, const RaExpr *e, CtxDiag *d) {
  if (!e) {
    CTX_ICE(d, "RA: missing operand in '%s'", fn->name);
    return false;
  }
  if ((e->kind == RA_VAR || e->kind == RA_REDUCE) && (!e->var || e->var->id >= fn->nvars)) {
    CTX_ICE(d, "RA: unbound variable in '%s'", fn->name);
    return false;
  }
  if (e->kind == RA_READ) {
    int rank = -1;
    switch (e->src) {
    case RA_SRC_PARAM: rank = e->index < p->nparams ? p->params[e->index].shape.rank : -1; break;
    case RA_SRC_INPUT: rank = e->index < p->ninputs ? p->inputs[e->index].row.rank : -1; break;
    case RA_SRC_OP: rank = e->index < fn->nops ? fn->ops[e->index]->shape.rank : -1; break;
    case RA_SRC_REC:
      rank = e->index < p->nfuncs && e->field < p->funcs[e->index].nfields
                 ? p->funcs[e->index].fields[e->field].rank : -1;
      break;
    }
    if (rank != e->nidx) {
      CTX_ICE(d, "RA: a read in '%s' has %d indices for rank %d", fn->name, e->nidx, rank);
      return false;
    }
    for (int i = 0; i < e->nidx; i++)
      if (!verify_expr(p, fn, e->idx[i], d)) return false;
    return !e->dep || verify_expr(p, fn, e->dep, d);
  }
  const RaExpr *kids[3] = {e->a, e->b, e->c};
  int n = e->kind == RA_SELECT ? 3 : e->kind == RA_BINARY ? 2
          : (e->kind == RA_UNARY || e->kind == RA_REDUCE) ? 1 : 0;
  for (int i = 0; i < n; i++)
    if (!verify_expr(p, fn, kids[i], d)) return false;
  return true;
}

static bool verify_block(const RaProgram *p, const RaFunc *fn, const RaBlock *b, CtxDiag *d) {
  for (int i = 0; i < b->n; i++) {
    const RaStmt *s = b->stmts[i];
    if (s->kind == RA_STMT_OP && !verify_expr(p, fn, s->op->body, d)) return false;
    if (s->kind == RA_STMT_IF &&
        (!verify_expr(p, fn, s->cond, d) || !verify_block(p, fn, &s->then, d) ||
         !verify_block(p, fn, &s->els, d)))
      return false;
    for (int k = 0; s->kind == RA_STMT_RETURN && k < fn->nfields; k++) {
      const RaShape *a = &s->results[k]->shape, *want = &fn->fields[k];
      if (a->size != want->size || a->rank != want->rank) {
        CTX_ICE(d, "RA: '%s' returns a field of the wrong shape", fn->name);
        return false;
      }
    }
  }
  return true;
}

bool ra_verify(const RaProgram *p, CtxDiag *diag) {
  for (int f = 0; f < p->nfuncs; f++)
    if (!verify_block(p, &p->funcs[f], &p->funcs[f].body, diag)) return false;
  return true;
}
