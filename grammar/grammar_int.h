/* grammar_int.h — declarations shared by the lexer, the parser and the AST
 * builders of grammar/; not part of the stage's public interface. */
#ifndef CTX_GRAMMAR_INT_H
#define CTX_GRAMMAR_INT_H

#include "grammar/grammar.h"

typedef struct {
  int kind; /* a parser token (grammar_parse.h), 0 at end of input */
  CtxSpan span;
  const char *text; /* identifiers and strings (unquoted); arena memory */
  double num;
  bool is_int;
} GrammarToken;

typedef struct {
  CtxArena *arena;
  CtxDiag *diag;
  int file;
  const char *base, *cur, *lim, *tok, *mrk;
  int line;
  const char *line_start;
  int last;          /* kind of the last token handed out (0 at start) */
  bool has_pending;  /* a token held back behind an inserted separator */
  GrammarToken pending;
  char open[AST_MAX_NESTING]; /* the open brackets: '(', '[' or '{' */
  int depth;
  bool stopped;      /* nesting limit hit: the rest of the input is ignored */
  CtxSpan last_end;  /* zero-width, just after the last token handed out */
  bool quiet;        /* a lexical error was reported on this statement */
} GrammarLexer;

void grammar_lexer_init(GrammarLexer *lx, CtxArena *arena, CtxDiag *diag, int file);
/* The next token for the parser, separators inserted (see grammar_lex.re). */
void grammar_lex(GrammarLexer *lx, GrammarToken *tok);
/* A readable name of token [kind] for messages ("')'", "identifier", ...). */
const char *grammar_token_name(int kind);

/* State of one parse, passed to every Bison action. */
typedef struct {
  GrammarLexer lx;
  CtxArena *arena;
  CtxDiag *diag;
  AstFile *file;
  CtxVec items;          /* the file's items as they are parsed */
  GrammarToken last_tok; /* the lookahead, for `found X` in messages */
  bool depth_reported;
  bool start_stmt;       /* ast_parse_stmt: hand out STMT_START first */
  AstStmt *stmt;         /* ast_parse_stmt's result */
} GrammarParser;

/* AST builders (grammar_ast.c). They bound the expression depth: a node
 * deeper than AST_MAX_DEPTH is reported once and replaced by AST_ERROR. */
AstExpr *ast_new_expr(GrammarParser *p, AstExprKind kind, CtxSpan span);
AstExpr *ast_new_unary(GrammarParser *p, AstOp op, AstExpr *operand, CtxSpan span);
AstExpr *ast_new_binary(GrammarParser *p, AstOp op, AstExpr *l, AstExpr *r, CtxSpan span);
AstExpr *ast_finish_expr(GrammarParser *p, AstExpr *e);

#endif
