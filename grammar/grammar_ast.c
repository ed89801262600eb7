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
