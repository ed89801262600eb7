/* grammar_print.c — the AST printer (`ctx --dump=ast`).
 *
 * Writes the canonical text of a file: 2-space indentation, one space around
 * binary operators, and the fewest parentheses that keep the tree. Printing
 * the parse of printed text gives the same text (lang-tests check this for
 * every construct). Comments are not part of the AST and are not printed.
 */
#include "grammar/grammar.h"

#include <string.h>

enum { P_OR = 1, P_AND, P_CMP, P_ADD, P_MUL, P_UNARY, P_POSTFIX };

static int op_prec(AstOp op) {
  switch (op) {
  case AST_OP_OR: return P_OR;
  case AST_OP_AND: return P_AND;
  case AST_OP_ADD: case AST_OP_SUB: return P_ADD;
  case AST_OP_MUL: case AST_OP_DIV: case AST_OP_MATMUL: return P_MUL;
  case AST_OP_NEG: case AST_OP_NOT: return P_UNARY;
  default: return P_CMP;
  }
}

/* A reduction reaches as far right as a product does, so it binds like an
 * addition operand: `sum(k) a * b + c` is `(sum(k) a * b) + c`. */
static int expr_prec(const AstExpr *e) {
  switch (e->kind) {
  case AST_BINARY: return op_prec(e->u.binary.op);
  case AST_UNARY: return P_UNARY;
  case AST_REDUCE: return P_ADD;
  default: return P_POSTFIX;
  }
}

static void print_at(CtxBuf *out, const AstExpr *e, int min_prec);

static void print_list(CtxBuf *out, AstExpr *const *elems, int n, const char *sep) {
  for (int i = 0; i < n; i++) {
    if (i) ctx_buf_puts(out, sep);
    print_at(out, elems[i], P_OR);
  }
}

static void print_subscripts(CtxBuf *out, const AstExpr *e) {
  ctx_buf_putc(out, '[');
  for (int i = 0; i < e->u.index.nsubs; i++) {
    const AstSubscript *s = &e->u.index.subs[i];
    if (i) ctx_buf_puts(out, ", ");
    if (!s->is_slice) {
      print_at(out, s->index, P_OR);
      continue;
    }
    if (s->lo) print_at(out, s->lo, P_OR);
    ctx_buf_putc(out, ':');
    if (s->hi) print_at(out, s->hi, P_OR);
  }
  ctx_buf_putc(out, ']');
}

static void print_binary(CtxBuf *out, const AstExpr *e) {
  int prec = op_prec(e->u.binary.op);
  const AstExpr *rhs = e->u.binary.rhs;
  /* Comparisons do not chain, so both sides must bind tighter. */
  print_at(out, e->u.binary.lhs, prec == P_CMP ? P_CMP + 1 : prec);
  ctx_buf_printf(out, " %s ", ast_op_name(e->u.binary.op));
  int rmin = prec + 1;
  if (rhs->kind == AST_REDUCE && prec <= P_ADD) rmin = P_ADD; /* a + sum(k) b */
  print_at(out, rhs, rmin);
}

static void print_reduce(CtxBuf *out, const AstExpr *e) {
  ctx_buf_printf(out, "%s(%s", ast_op_name(e->u.reduce.op), e->u.reduce.var);
  if (e->u.reduce.range) {
    ctx_buf_puts(out, " in ");
    print_at(out, e->u.reduce.range, P_OR);
  }
  ctx_buf_puts(out, ") ");
  const AstExpr *body = e->u.reduce.body;
  print_at(out, body, body->kind == AST_REDUCE ? P_ADD : P_MUL);
}

static void print_at(CtxBuf *out, const AstExpr *e, int min_prec) {
  bool paren = expr_prec(e) < min_prec;
  if (paren) ctx_buf_putc(out, '(');
  switch (e->kind) {
  case AST_ERROR: ctx_buf_puts(out, "<error>"); break;
  case AST_NUMBER: ctx_buf_puts(out, e->u.num.text); break;
  case AST_NAME: ctx_buf_puts(out, e->u.name.id); break;
  case AST_UNARY:
    ctx_buf_puts(out, ast_op_name(e->u.unary.op));
    print_at(out, e->u.unary.operand, P_UNARY);
    break;
  case AST_BINARY: print_binary(out, e); break;
  case AST_CALL:
    ctx_buf_printf(out, "%s(", e->u.call.callee);
    print_list(out, e->u.call.args, e->u.call.nargs, ", ");
    ctx_buf_putc(out, ')');
    break;
  case AST_INDEX:
    print_at(out, e->u.index.base, P_POSTFIX);
    print_subscripts(out, e);
    break;
  case AST_MEMBER:
    print_at(out, e->u.member.base, P_POSTFIX);
    ctx_buf_printf(out, ".%s", e->u.member.field);
    break;
  case AST_TUPLE:
    ctx_buf_putc(out, '(');
    print_list(out, e->u.list.elems, e->u.list.n, ", ");
    ctx_buf_putc(out, ')');
    break;
  case AST_CONCAT:
    ctx_buf_putc(out, '[');
    print_list(out, e->u.list.elems, e->u.list.n, "; ");
    ctx_buf_putc(out, ']');
    break;
  case AST_REDUCE: print_reduce(out, e); break;
  }
  if (paren) ctx_buf_putc(out, ')');
}

void ast_print_expr(CtxBuf *out, const AstExpr *e) { print_at(out, e, P_OR); }

static void print_field(CtxBuf *out, const AstField *f) {
  if (f->name) ctx_buf_printf(out, "%s: ", f->name);
  ast_print_type(out, f->type);
}

void ast_print_type(CtxBuf *out, const AstType *t) {
  switch (t->kind) {
  case AST_TYPE_F32:
  case AST_TYPE_I32:
    ctx_buf_puts(out, t->kind == AST_TYPE_F32 ? "f32" : "i32");
    if (t->ndims) {
      ctx_buf_putc(out, '[');
      print_list(out, t->dims, t->ndims, ", ");
      ctx_buf_putc(out, ']');
    }
    break;
  case AST_TYPE_TREE:
  case AST_TYPE_DAG:
    ctx_buf_printf(out, "%s(%s = ", t->kind == AST_TYPE_TREE ? "tree" : "dag", t->arg);
    ast_print_expr(out, t->arity);
    ctx_buf_putc(out, ')');
    break;
  case AST_TYPE_SEQUENCE: ctx_buf_puts(out, "sequence"); break;
  case AST_TYPE_TUPLE:
    ctx_buf_putc(out, '(');
    for (int i = 0; i < t->nfields; i++) {
      if (i) ctx_buf_puts(out, ", ");
      print_field(out, &t->fields[i]);
    }
    ctx_buf_putc(out, ')');
    break;
  }
}

static void indent(CtxBuf *out, int level) {
  for (int i = 0; i < level; i++) ctx_buf_puts(out, "  ");
}

static void print_block(CtxBuf *out, const AstBlock *b, int level);

static void print_idents(CtxBuf *out, const AstIdent *ids, int n) {
  for (int i = 0; i < n; i++) ctx_buf_printf(out, "%s%s", i ? ", " : "", ids[i].id);
}

static void print_if(CtxBuf *out, const AstStmt *s, int level) {
  ctx_buf_puts(out, "if ");
  ast_print_expr(out, s->u.if_.cond);
  ctx_buf_putc(out, ' ');
  print_block(out, &s->u.if_.then, level);
  const AstBlock *els = s->u.if_.els;
  if (!els) return;
  ctx_buf_puts(out, " else ");
  if (els->n == 1 && els->stmts[0]->kind == AST_IF)
    print_if(out, els->stmts[0], level);
  else
    print_block(out, els, level);
}

static void print_stmt(CtxBuf *out, const AstStmt *s, int level) {
  indent(out, level);
  switch (s->kind) {
  case AST_LET:
    ctx_buf_puts(out, "let ");
    if (s->u.let.destructure) {
      ctx_buf_putc(out, '(');
      print_idents(out, s->u.let.names, s->u.let.nnames);
      ctx_buf_putc(out, ')');
    } else {
      ctx_buf_puts(out, s->u.let.names[0].id);
    }
    if (s->u.let.nidx) {
      ctx_buf_putc(out, '[');
      print_idents(out, s->u.let.idx, s->u.let.nidx);
      ctx_buf_putc(out, ']');
    }
    ctx_buf_puts(out, " = ");
    ast_print_expr(out, s->u.let.value);
    break;
  case AST_IF: print_if(out, s, level); break;
  case AST_RETURN:
    ctx_buf_puts(out, "return ");
    ast_print_expr(out, s->u.ret.value);
    break;
  case AST_FOR:
    ctx_buf_printf(out, "for %s in ", s->u.for_.var.id);
    ast_print_expr(out, s->u.for_.range);
    ctx_buf_putc(out, ' ');
    print_block(out, &s->u.for_.body, level);
    break;
  }
  ctx_buf_putc(out, '\n');
}

static void print_block(CtxBuf *out, const AstBlock *b, int level) {
  ctx_buf_puts(out, "{\n");
  for (int i = 0; i < b->n; i++) print_stmt(out, b->stmts[i], level + 1);
  indent(out, level);
  ctx_buf_putc(out, '}');
}

static void print_sargs(CtxBuf *out, const AstSchedArg *args, int n) {
  for (int i = 0; i < n; i++) {
    const AstSchedArg *a = &args[i];
    if (i) ctx_buf_puts(out, a->after_comma ? ", " : " ");
    if (a->kind == AST_SARG_LIST) {
      ctx_buf_putc(out, '(');
      print_sargs(out, a->elems, a->n);
      ctx_buf_putc(out, ')');
    } else {
      ctx_buf_puts(out, a->name);
    }
  }
}

static void print_schedule(CtxBuf *out, const AstItem *it) {
  ctx_buf_printf(out, "schedule %s", it->name.id);
  if (it->target.id) ctx_buf_printf(out, " for %s", it->target.id);
  ctx_buf_puts(out, " {\n");
  for (int i = 0; i < it->ndirectives; i++) {
    const AstDirective *d = &it->directives[i];
    ctx_buf_puts(out, "  ");
    if (d->op.id) ctx_buf_printf(out, "%s: ", d->op.id);
    ctx_buf_puts(out, d->verb.id);
    if (d->nargs && d->args[0].kind != AST_SARG_LIST) ctx_buf_putc(out, ' ');
    print_sargs(out, d->args, d->nargs);
    ctx_buf_putc(out, '\n');
  }
  ctx_buf_puts(out, "}");
}

static void print_function(CtxBuf *out, const AstItem *it) {
  ctx_buf_printf(out, "%s %s(", it->kind == AST_REC ? "rec" : "def", it->name.id);
  if (it->kind == AST_REC) {
    ctx_buf_printf(out, "%s: %s", it->params[0].name, it->domain.id);
  } else {
    for (int i = 0; i < it->nparams; i++) {
      if (i) ctx_buf_puts(out, ", ");
      print_field(out, &it->params[i]);
    }
  }
  ctx_buf_puts(out, ") -> ");
  ast_print_type(out, it->type);
  ctx_buf_putc(out, ' ');
  print_block(out, &it->body, 0);
}

static void print_item(CtxBuf *out, const AstItem *it) {
  switch (it->kind) {
  case AST_MODEL: ctx_buf_printf(out, "model %s", it->name.id); break;
  case AST_DIM:
    ctx_buf_printf(out, "dim %s = ", it->name.id);
    ast_print_expr(out, it->value);
    break;
  case AST_INPUT:
  case AST_PARAM:
    ctx_buf_printf(out, "%s %s: ", it->kind == AST_INPUT ? "input" : "param", it->name.id);
    ast_print_type(out, it->type);
    break;
  case AST_USE:
    if (it->use_file) {
      ctx_buf_puts(out, "use \"");
      for (const char *c = it->name.id; *c; c++) {
        if (*c == '"' || *c == '\\') ctx_buf_putc(out, '\\');
        if (*c == '\n') ctx_buf_puts(out, "\\n");
        else if (*c == '\t') ctx_buf_puts(out, "\\t");
        else ctx_buf_putc(out, *c);
      }
      ctx_buf_putc(out, '"');
    } else {
      ctx_buf_printf(out, "use %s", it->name.id);
    }
    break;
  case AST_REC:
  case AST_DEF: print_function(out, it); break;
  case AST_OUTPUT:
    ctx_buf_puts(out, "output ");
    ast_print_expr(out, it->value);
    break;
  case AST_SCHEDULE: print_schedule(out, it); break;
  }
  ctx_buf_putc(out, '\n');
}

/* Blank lines separate groups: functions and schedules stand alone. */
static bool stands_alone(const AstItem *it) {
  return it->kind == AST_REC || it->kind == AST_DEF || it->kind == AST_SCHEDULE;
}

void ast_print(CtxBuf *out, const AstFile *f) {
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i], *prev = i ? f->items[i - 1] : NULL;
    if (prev && (prev->kind != it->kind || stands_alone(it))) ctx_buf_putc(out, '\n');
    print_item(out, it);
  }
}
