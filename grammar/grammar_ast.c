/* grammar_ast.c — AST construction helpers, the parse entry point, the token
 * dump, and operator names.
 *
 * Every expression node records its depth; a node that would be deeper than
 * AST_MAX_DEPTH is reported once per file and replaced by AST_ERROR, so every
 * recursive walk over an AST (printer, sema) is bounded.
 */
#include "grammar/grammar_int.h"
#include "grammar_parse.h"

#include <string.h>

static int child_depth(const AstExpr *e) { return e ? e->depth : 0; }

static int max_depth(const AstExpr *e) {
  int d = 0;
  switch (e->kind) {
  case AST_UNARY: d = child_depth(e->u.unary.operand); break;
  case AST_BINARY:
    d = child_depth(e->u.binary.lhs);
    if (child_depth(e->u.binary.rhs) > d) d = child_depth(e->u.binary.rhs);
    break;
  case AST_CALL:
    for (int i = 0; i < e->u.call.nargs; i++)
      if (child_depth(e->u.call.args[i]) > d) d = child_depth(e->u.call.args[i]);
    break;
  case AST_INDEX:
    d = child_depth(e->u.index.base);
    for (int i = 0; i < e->u.index.nsubs; i++) {
      const AstSubscript *s = &e->u.index.subs[i];
      const AstExpr *parts[3] = {s->lo, s->hi, s->index};
      for (int j = 0; j < 3; j++)
        if (child_depth(parts[j]) > d) d = child_depth(parts[j]);
    }
    break;
  case AST_MEMBER: d = child_depth(e->u.member.base); break;
  case AST_TUPLE:
  case AST_CONCAT:
    for (int i = 0; i < e->u.list.n; i++)
      if (child_depth(e->u.list.elems[i]) > d) d = child_depth(e->u.list.elems[i]);
    break;
  case AST_REDUCE:
    d = child_depth(e->u.reduce.body);
    if (child_depth(e->u.reduce.range) > d) d = child_depth(e->u.reduce.range);
    break;
  default: break;
  }
  return d + 1;
}

AstExpr *ast_new_expr(GrammarParser *p, AstExprKind kind, CtxSpan span) {
  AstExpr *e = CTX_NEW(p->arena, AstExpr);
  e->kind = kind;
  e->span = span;
  e->depth = 1;
  return e;
}

AstExpr *ast_finish_expr(GrammarParser *p, AstExpr *e) {
  e->depth = max_depth(e);
  if (e->depth <= AST_MAX_DEPTH) return e;
  if (!p->depth_reported)
    ctx_diag_error(p->diag, e->span, "expression nested too deeply (more than %d levels)",
                   AST_MAX_DEPTH);
  p->depth_reported = true;
  return ast_new_expr(p, AST_ERROR, e->span);
}

AstExpr *ast_new_unary(GrammarParser *p, AstOp op, AstExpr *operand, CtxSpan span) {
  AstExpr *e = ast_new_expr(p, AST_UNARY, span);
  e->u.unary.op = op;
  e->u.unary.operand = operand;
  return ast_finish_expr(p, e);
}

AstExpr *ast_new_binary(GrammarParser *p, AstOp op, AstExpr *l, AstExpr *r, CtxSpan span) {
  AstExpr *e = ast_new_expr(p, AST_BINARY, span);
  e->u.binary.op = op;
  e->u.binary.lhs = l;
  e->u.binary.rhs = r;
  return ast_finish_expr(p, e);
}

AstFile *ast_parse(CtxArena *arena, CtxDiag *diag, int file) {
  GrammarParser p;
  memset(&p, 0, sizeof p);
  p.arena = arena;
  p.diag = diag;
  p.file = CTX_NEW(arena, AstFile);
  p.file->file = file;
  grammar_lexer_init(&p.lx, arena, diag, file);
  grammar_yyparse(&p);
  p.file->items = (AstItem **)p.items.items;
  p.file->nitems = p.items.len;
  return p.file;
}

AstStmt *ast_parse_stmt(CtxArena *arena, CtxDiag *diag, int file) {
  GrammarParser p;
  memset(&p, 0, sizeof p);
  p.arena = arena;
  p.diag = diag;
  p.file = CTX_NEW(arena, AstFile);
  p.file->file = file;
  p.start_stmt = true;
  grammar_lexer_init(&p.lx, arena, diag, file);
  int errors = diag->errors;
  grammar_yyparse(&p);
  return diag->errors > errors ? NULL : p.stmt;
}

const char *ast_op_name(AstOp op) {
  switch (op) {
  case AST_OP_ADD: return "+";
  case AST_OP_SUB: case AST_OP_NEG: return "-";
  case AST_OP_MUL: return "*";
  case AST_OP_DIV: return "/";
  case AST_OP_MATMUL: return "@";
  case AST_OP_EQ: return "==";
  case AST_OP_NE: return "!=";
  case AST_OP_LT: return "<";
  case AST_OP_LE: return "<=";
  case AST_OP_GT: return ">";
  case AST_OP_GE: return ">=";
  case AST_OP_AND: return "&&";
  case AST_OP_OR: return "||";
  case AST_OP_NOT: return "!";
  case AST_OP_SUM: return "sum";
  case AST_OP_MAX: return "max";
  }
  return "?";
}

const char *grammar_token_name(int kind) {
  static const char punct[] = "+-*/@=<>!(){}[],:.;";
  static const char *const punct_names[] = {"'+'", "'-'", "'*'", "'/'", "'@'", "'='",
                                            "'<'", "'>'", "'!'", "'('", "')'", "'{'",
                                            "'}'", "'['", "']'", "','", "':'", "'.'",
                                            "';'"};
  switch (kind) {
  case 0: return "end of file";
  case IDENT: return "identifier";
  case NUMBER: return "number";
  case STRING: return "string";
  case SEP: return "separator";
  case EQ: return "'=='";
  case NE: return "'!='";
  case LE: return "'<='";
  case GE: return "'>='";
  case AND: return "'&&'";
  case OR: return "'||'";
  case ARROW: return "'->'";
  default: break;
  }
  int count;
  const AstWord *w = ast_words(&count);
  for (int i = 0; i < count; i++)
    if (w[i].token == kind) return w[i].spelling;
  const char *at = kind > 0 && kind < 128 ? strchr(punct, kind) : NULL;
  return at ? punct_names[at - punct] : "token";
}

void ast_dump_tokens(CtxBuf *out, CtxDiag *diag, int file) {
  CtxArena *arena = ctx_arena_new();
  GrammarLexer lx;
  grammar_lexer_init(&lx, arena, diag, file);
  for (;;) {
    GrammarToken t;
    grammar_lex(&lx, &t);
    ctx_buf_printf(out, "%d:%d: %s", t.span.line, t.span.col, grammar_token_name(t.kind));
    if (t.kind == IDENT || t.kind == NUMBER || t.kind == STRING)
      ctx_buf_printf(out, " '%s'", t.text);
    ctx_buf_putc(out, '\n');
    if (t.kind == 0) break;
  }
  ctx_arena_free(arena);
}

/* ---- copies --------------------------------------------------------------- */

static AstExpr *clone_expr(CtxArena *a, const AstExpr *e);

static AstExpr **clone_exprs(CtxArena *a, AstExpr *const *es, int n) {
  AstExpr **r = CTX_NEW_ARRAY(a, AstExpr *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) r[i] = clone_expr(a, es[i]);
  return r;
}

static AstExpr *clone_expr(CtxArena *a, const AstExpr *e) {
  if (!e) return NULL;
  AstExpr *r = CTX_NEW(a, AstExpr);
  *r = *e;
  switch (e->kind) {
  case AST_UNARY: r->u.unary.operand = clone_expr(a, e->u.unary.operand); break;
  case AST_BINARY:
    r->u.binary.lhs = clone_expr(a, e->u.binary.lhs);
    r->u.binary.rhs = clone_expr(a, e->u.binary.rhs);
    break;
  case AST_CALL: r->u.call.args = clone_exprs(a, e->u.call.args, e->u.call.nargs); break;
  case AST_INDEX:
    r->u.index.base = clone_expr(a, e->u.index.base);
    r->u.index.subs = CTX_NEW_ARRAY(a, AstSubscript, e->u.index.nsubs > 0 ? e->u.index.nsubs : 1);
    for (int i = 0; i < e->u.index.nsubs; i++) {
      const AstSubscript *s = &e->u.index.subs[i];
      r->u.index.subs[i] = *s;
      r->u.index.subs[i].lo = clone_expr(a, s->lo);
      r->u.index.subs[i].hi = clone_expr(a, s->hi);
      r->u.index.subs[i].index = clone_expr(a, s->index);
    }
    break;
  case AST_MEMBER: r->u.member.base = clone_expr(a, e->u.member.base); break;
  case AST_TUPLE: case AST_CONCAT:
    r->u.list.elems = clone_exprs(a, e->u.list.elems, e->u.list.n);
    break;
  case AST_REDUCE:
    r->u.reduce.range = clone_expr(a, e->u.reduce.range);
    r->u.reduce.body = clone_expr(a, e->u.reduce.body);
    break;
  default: break; /* numbers, names, errors: nothing below */
  }
  return r;
}

static AstType *clone_type(CtxArena *a, const AstType *t) {
  if (!t) return NULL;
  AstType *r = CTX_NEW(a, AstType);
  *r = *t;
  r->dims = clone_exprs(a, t->dims, t->ndims);
  r->arity = clone_expr(a, t->arity);
  r->fields = CTX_NEW_ARRAY(a, AstField, t->nfields > 0 ? t->nfields : 1);
  for (int i = 0; i < t->nfields; i++) {
    r->fields[i] = t->fields[i];
    r->fields[i].type = clone_type(a, t->fields[i].type);
  }
  return r;
}

static AstBlock clone_block(CtxArena *a, const AstBlock *b);

static AstStmt *clone_stmt(CtxArena *a, const AstStmt *s) {
  AstStmt *r = CTX_NEW(a, AstStmt);
  *r = *s;
  switch (s->kind) {
  case AST_LET: /* the names too: sema keys an index-form let's extents on them */
    r->u.let.names = CTX_NEW_ARRAY(a, AstIdent, s->u.let.nnames > 0 ? s->u.let.nnames : 1);
    for (int i = 0; i < s->u.let.nnames; i++) r->u.let.names[i] = s->u.let.names[i];
    r->u.let.idx = CTX_NEW_ARRAY(a, AstIdent, s->u.let.nidx > 0 ? s->u.let.nidx : 1);
    for (int i = 0; i < s->u.let.nidx; i++) r->u.let.idx[i] = s->u.let.idx[i];
    r->u.let.value = clone_expr(a, s->u.let.value);
    break;
  case AST_IF:
    r->u.if_.cond = clone_expr(a, s->u.if_.cond);
    r->u.if_.then = clone_block(a, &s->u.if_.then);
    if (s->u.if_.els) {
      r->u.if_.els = CTX_NEW(a, AstBlock);
      *r->u.if_.els = clone_block(a, s->u.if_.els);
    }
    break;
  case AST_RETURN: r->u.ret.value = clone_expr(a, s->u.ret.value); break;
  case AST_FOR:
    r->u.for_.range = clone_expr(a, s->u.for_.range);
    r->u.for_.body = clone_block(a, &s->u.for_.body);
    break;
  }
  return r;
}

static AstBlock clone_block(CtxArena *a, const AstBlock *b) {
  AstBlock r = *b;
  r.stmts = CTX_NEW_ARRAY(a, AstStmt *, b->n > 0 ? b->n : 1);
  for (int i = 0; i < b->n; i++) r.stmts[i] = clone_stmt(a, b->stmts[i]);
  return r;
}

AstItem *ast_clone_item(CtxArena *a, const AstItem *it) {
  AstItem *r = CTX_NEW(a, AstItem);
  *r = *it;
  r->value = clone_expr(a, it->value);
  r->type = clone_type(a, it->type);
  r->params = CTX_NEW_ARRAY(a, AstField, it->nparams > 0 ? it->nparams : 1);
  for (int i = 0; i < it->nparams; i++) {
    r->params[i] = it->params[i];
    r->params[i].type = clone_type(a, it->params[i].type);
  }
  r->body = clone_block(a, &it->body);
  return r;
}
