/* grammar_parse.y — the ctx parser (Bison, pure, LALR(1), with locations).
 *
 * Builds the AST of one source file (grammar.h). Each rule group carries the
 * grammar it implements in its comment; docs/language.md is the reference.
 * Error recovery resynchronises at statement and item separators (SEP, which
 * the lexer inserts at line ends), so independent mistakes are all reported.
 * Syntax errors read `expected X, found Y` (yyreport_syntax_error below).
 */
%code requires {
#include "grammar/grammar_int.h"
}

%code {
#include <string.h>

static int yylex(YYSTYPE *lval, CtxSpan *lloc, GrammarParser *p);
static void yyerror(CtxSpan *loc, GrammarParser *p, const char *msg);

#define YYMAXDEPTH 200000

#define YYLLOC_DEFAULT(Cur, Rhs, N)                                   \
  do {                                                                \
    if (N) {                                                          \
      (Cur) = ctx_span_join(YYRHSLOC(Rhs, 1), YYRHSLOC(Rhs, N));      \
    } else {                                                          \
      (Cur) = YYRHSLOC(Rhs, 0);                                       \
      (Cur).line = (Cur).end_line;                                    \
      (Cur).col = (Cur).end_col;                                      \
    }                                                                 \
  } while (0)

#define A (p->arena)
static AstIdent ident(const char *id, CtxSpan span) { AstIdent i = {id, span}; return i; }
static void *to_array(GrammarParser *p, CtxVec v, size_t size);
static AstIdent *idents(GrammarParser *p, CtxVec v) { return to_array(p, v, sizeof(AstIdent)); }
static void *boxed(GrammarParser *p, const void *v, size_t size);
#define BOX(v) boxed(p, &(v), sizeof(v))
static AstItem *new_item(GrammarParser *p, AstItemKind kind, CtxSpan span);
static AstStmt *new_stmt(GrammarParser *p, AstStmtKind kind, CtxSpan span);
static AstType *new_type(GrammarParser *p, AstTypeKind kind, CtxSpan span);
static void check_directive(GrammarParser *p, const AstDirective *d);
}

%define api.pure full
%define api.prefix {grammar_yy}
%define api.location.type {CtxSpan}
%define parse.error custom
%locations
%param {GrammarParser *p}
%expect 0

%union {
  const char *str;
  GrammarToken tok;
  AstExpr *expr;
  AstType *type;
  AstStmt *stmt;
  AstItem *item;
  AstBlock block;
  AstBlock *pblock;
  AstSubscript *sub;
  AstSchedArg *sarg;
  AstDirective *dir;
  AstField *field;
  CtxVec vec;
  int op;
}

%token END 0 "end of file"
%token <str> IDENT "identifier"
%token <tok> NUMBER "number"
%token <str> STRING "string"
%token SEP "newline"
%token EQ "'=='" NE "'!='" LE "'<='" GE "'>='" AND "'&&'" OR "'||'" ARROW "'->'"
/* Reserved words: spelled in grammar/keywords.def (KEYWORD-TABLE). */
%token T_MODEL "'model'" T_DIM "'dim'" T_INPUT "'input'" T_PARAM "'param'"
%token T_REC "'rec'" T_DEF "'def'" T_OUTPUT "'output'" T_USE "'use'"
%token T_SCHEDULE "'schedule'" T_LET "'let'" T_IF "'if'" T_ELSE "'else'"
%token T_RETURN "'return'" T_FOR "'for'" T_IN "'in'" T_F32 "'f32'" T_I32 "'i32'"
%token T_TREE "'tree'" T_DAG "'dag'" T_SEQUENCE "'sequence'" T_SUM "'sum'" T_MAX "'max'"
/* Never produced by the lexer: yylex hands it out first when the parser was
 * started by ast_parse_stmt, selecting the one-statement grammar. */
%token STMT_START "start of a statement"

/* A reduction's body extends over a product: `sum(k) a * b` is one sum. */
%precedence REDUCE_BODY
%precedence '*' '/' '@'

%type <item> item rec def schedule
%type <expr> expr or_expr and_expr cmp_expr add_expr mul_expr unary postfix primary
%type <expr> reduce opt_range
%type <op> cmp_op red_op
%type <type> type ret_type
%type <block> block
%type <pblock> opt_else
%type <stmt> stmt
%type <sub> subscript
%type <sarg> sarg
%type <dir> directive
%type <field> field param
%type <str> dotted use_path
%type <vec> stmts exprs opt_args names fields params opt_params subscripts concat_list
%type <vec> directives sargs sarg_list

%start top

%%

/* top := file | (ast_parse_stmt) stmt-or-expr SEP */
top
  : file
  | STMT_START stmt SEP           { p->stmt = $2; }
  | STMT_START expr SEP           { p->stmt = new_stmt(p, AST_RETURN, @2); p->stmt->u.ret.value = $2; }
  ;

/* file := { item SEP } */
file
  : %empty
  | file item SEP   { ctx_vec_push(A, &p->items, $2); }
  | file error SEP  { yyerrok; }
  | file error block SEP { yyerrok; }
  ;

/* item := 'model' NAME | 'dim' NAME '=' expr | 'input' NAME ':' type
 *       | 'param' NAME ':' type | 'use' path | 'use' STRING | rec | def
 *       | 'output' expr | schedule */
item
  : T_MODEL IDENT                 { $$ = new_item(p, AST_MODEL, @$); $$->name = ident($2, @2); }
  | T_DIM IDENT '=' expr          { $$ = new_item(p, AST_DIM, @$); $$->name = ident($2, @2); $$->value = $4; }
  | T_INPUT IDENT ':' type        { $$ = new_item(p, AST_INPUT, @$); $$->name = ident($2, @2); $$->type = $4; }
  | T_PARAM IDENT ':' type        { $$ = new_item(p, AST_PARAM, @$); $$->name = ident($2, @2); $$->type = $4; }
  | T_USE use_path                { $$ = new_item(p, AST_USE, @$); $$->name = ident($2, @2); }
  | T_USE STRING                  { $$ = new_item(p, AST_USE, @$); $$->name = ident($2, @2); $$->use_file = true; }
  | rec
  | def
  | T_OUTPUT expr                 { $$ = new_item(p, AST_OUTPUT, @$); $$->value = $2; }
  | schedule
  ;

use_path
  : IDENT
  | use_path '.' IDENT            { $$ = ctx_arena_printf(A, "%s.%s", $1, $3); }
  ;

/* rec := 'rec' NAME '(' NAME ':' NAME ')' '->' ret_type block */
rec
  : T_REC IDENT '(' IDENT ':' IDENT ')' ARROW ret_type block {
      $$ = new_item(p, AST_REC, @$);
      $$->name = ident($2, @2);
      AstField f = {$4, @4, NULL};
      $$->params = BOX(f);
      $$->nparams = 1;
      $$->domain = ident($6, @6);
      $$->type = $9;
      $$->body = $10;
    }
  ;

/* def := 'def' NAME '(' [param {',' param}] ')' '->' ret_type block */
def
  : T_DEF IDENT '(' opt_params ')' ARROW ret_type block {
      $$ = new_item(p, AST_DEF, @$);
      $$->name = ident($2, @2);
      $$->params = to_array(p, $4, sizeof(AstField));
      $$->nparams = $4.len;
      $$->type = $7;
      $$->body = $8;
    }
  ;

opt_params
  : %empty                        { memset(&$$, 0, sizeof $$); }
  | params
  ;
params
  : param                         { memset(&$$, 0, sizeof $$); ctx_vec_push(A, &$$, $1); }
  | params ',' param              { $$ = $1; ctx_vec_push(A, &$$, $3); }
  ;
param
  : IDENT ':' type                { AstField f = {$1, @1, $3}; $$ = BOX(f); }
  ;

/* ret_type := type | '(' field {',' field} ')'    field := [NAME ':'] type */
ret_type
  : type
  | '(' fields ')' {
      $$ = new_type(p, AST_TYPE_TUPLE, @$);
      $$->fields = to_array(p, $2, sizeof(AstField));
      $$->nfields = $2.len;
    }
  ;
fields
  : field                         { memset(&$$, 0, sizeof $$); ctx_vec_push(A, &$$, $1); }
  | fields ',' field              { $$ = $1; ctx_vec_push(A, &$$, $3); }
  ;
field
  : IDENT ':' type                { AstField f = {$1, @1, $3}; $$ = BOX(f); }
  | type                          { AstField f = {NULL, @1, $1}; $$ = BOX(f); }
  ;

/* type := ('f32' | 'i32') ['[' expr {',' expr} ']']
 *       | 'tree' '(' NAME '=' expr ')' | 'dag' '(' NAME '=' expr ')' | 'sequence' */
type
  : T_F32                         { $$ = new_type(p, AST_TYPE_F32, @$); }
  | T_I32                         { $$ = new_type(p, AST_TYPE_I32, @$); }
  | T_F32 '[' exprs ']'           { $$ = new_type(p, AST_TYPE_F32, @$); $$->dims = (AstExpr **)$3.items; $$->ndims = $3.len; }
  | T_I32 '[' exprs ']'           { $$ = new_type(p, AST_TYPE_I32, @$); $$->dims = (AstExpr **)$3.items; $$->ndims = $3.len; }
  | T_TREE '(' IDENT '=' expr ')' { $$ = new_type(p, AST_TYPE_TREE, @$); $$->arg = $3; $$->arg_span = @3; $$->arity = $5; }
  | T_DAG '(' IDENT '=' expr ')'  { $$ = new_type(p, AST_TYPE_DAG, @$); $$->arg = $3; $$->arg_span = @3; $$->arity = $5; }
  | T_SEQUENCE                    { $$ = new_type(p, AST_TYPE_SEQUENCE, @$); }
  ;

/* block := '{' { stmt SEP } '}' */
block
  : '{' stmts '}'                 { $$.stmts = (AstStmt **)$2.items; $$.n = $2.len; $$.span = @$; }
  ;
stmts
  : %empty                        { memset(&$$, 0, sizeof $$); }
  | stmts stmt SEP                { $$ = $1; ctx_vec_push(A, &$$, $2); }
  | stmts error SEP               { $$ = $1; yyerrok; }
  | stmts error block SEP         { $$ = $1; yyerrok; }
  ;

/* stmt := 'let' NAME '=' expr | 'let' NAME '[' NAME {',' NAME} ']' '=' expr
 *       | 'let' '(' NAME {',' NAME} ')' '=' expr
 *       | 'if' expr block ['else' (block | if)] | 'return' expr
 *       | 'for' NAME 'in' expr block */
stmt
  : T_LET IDENT '=' expr {
      $$ = new_stmt(p, AST_LET, @$);
      AstIdent id = ident($2, @2);
      $$->u.let.names = BOX(id);
      $$->u.let.nnames = 1;
      $$->u.let.value = $4;
    }
  | T_LET IDENT '[' names ']' '=' expr {
      $$ = new_stmt(p, AST_LET, @$);
      AstIdent id = ident($2, @2);
      $$->u.let.names = BOX(id);
      $$->u.let.nnames = 1;
      $$->u.let.idx = idents(p, $4);
      $$->u.let.nidx = $4.len;
      $$->u.let.value = $7;
    }
  | T_LET '(' names ')' '=' expr {
      $$ = new_stmt(p, AST_LET, @$);
      $$->u.let.names = idents(p, $3);
      $$->u.let.nnames = $3.len;
      $$->u.let.destructure = true;
      $$->u.let.value = $6;
    }
  | T_IF expr block opt_else {
      $$ = new_stmt(p, AST_IF, @$);
      $$->u.if_.cond = $2;
      $$->u.if_.then = $3;
      $$->u.if_.els = $4;
    }
  | T_RETURN expr                 { $$ = new_stmt(p, AST_RETURN, @$); $$->u.ret.value = $2; }
  | T_FOR IDENT T_IN expr block {
      $$ = new_stmt(p, AST_FOR, @$);
      $$->u.for_.var = ident($2, @2);
      $$->u.for_.range = $4;
      $$->u.for_.body = $5;
    }
  ;

opt_else
  : %empty                        { $$ = NULL; }
  | T_ELSE block                  { $$ = BOX($2); }
  | T_ELSE T_IF expr block opt_else {
      AstStmt *s = new_stmt(p, AST_IF, ctx_span_join(@2, @5));
      s->u.if_.cond = $3;
      s->u.if_.then = $4;
      s->u.if_.els = $5;
      AstBlock b = {NULL, 1, s->span};
      b.stmts = CTX_NEW(A, AstStmt *);
      b.stmts[0] = s;
      $$ = BOX(b);
    }
  ;

names
  : IDENT                         { memset(&$$, 0, sizeof $$); AstIdent i = ident($1, @1); ctx_vec_push(A, &$$, BOX(i)); }
  | names ',' IDENT               { $$ = $1; AstIdent i = ident($3, @3); ctx_vec_push(A, &$$, BOX(i)); }
  ;

/* Expressions, loosest first:  ||   &&   == != < <= > >=   + -   * / @
 * unary - !   sum(...) max(...)   postfix: call [subscripts] .field */
expr : or_expr ;

or_expr
  : and_expr
  | or_expr OR and_expr           { $$ = ast_new_binary(p, AST_OP_OR, $1, $3, @$); }
  ;
and_expr
  : cmp_expr
  | and_expr AND cmp_expr         { $$ = ast_new_binary(p, AST_OP_AND, $1, $3, @$); }
  ;
cmp_expr
  : add_expr
  | add_expr cmp_op add_expr      { $$ = ast_new_binary(p, $2, $1, $3, @$); }
  ;
cmp_op
  : EQ { $$ = AST_OP_EQ; } | NE { $$ = AST_OP_NE; } | '<' { $$ = AST_OP_LT; }
  | LE { $$ = AST_OP_LE; } | '>' { $$ = AST_OP_GT; } | GE { $$ = AST_OP_GE; }
  ;
add_expr
  : mul_expr
  | add_expr '+' mul_expr         { $$ = ast_new_binary(p, AST_OP_ADD, $1, $3, @$); }
  | add_expr '-' mul_expr         { $$ = ast_new_binary(p, AST_OP_SUB, $1, $3, @$); }
  ;
mul_expr
  : unary
  | mul_expr '*' unary            { $$ = ast_new_binary(p, AST_OP_MUL, $1, $3, @$); }
  | mul_expr '/' unary            { $$ = ast_new_binary(p, AST_OP_DIV, $1, $3, @$); }
  | mul_expr '@' unary            { $$ = ast_new_binary(p, AST_OP_MATMUL, $1, $3, @$); }
  ;
unary
  : postfix
  | '-' unary                     { $$ = ast_new_unary(p, AST_OP_NEG, $2, @$); }
  | '!' unary                     { $$ = ast_new_unary(p, AST_OP_NOT, $2, @$); }
  | reduce
  ;

/* reduce := ('sum' | 'max') '(' NAME ['in' expr] ')' product */
reduce
  : red_op '(' IDENT opt_range ')' mul_expr %prec REDUCE_BODY {
      $$ = ast_new_expr(p, AST_REDUCE, @$);
      $$->u.reduce.op = $1;
      $$->u.reduce.var = $3;
      $$->u.reduce.var_span = @3;
      $$->u.reduce.range = $4;
      $$->u.reduce.body = $6;
      $$ = ast_finish_expr(p, $$);
    }
  ;
red_op : T_SUM { $$ = AST_OP_SUM; } | T_MAX { $$ = AST_OP_MAX; } ;
opt_range
  : %empty                        { $$ = NULL; }
  | T_IN expr                     { $$ = $2; }
  ;

postfix
  : primary
  | postfix '[' subscripts ']' {
      $$ = ast_new_expr(p, AST_INDEX, @$);
      $$->u.index.base = $1;
      $$->u.index.subs = to_array(p, $3, sizeof(AstSubscript));
      $$->u.index.nsubs = $3.len;
      $$ = ast_finish_expr(p, $$);
    }
  | postfix '.' IDENT {
      $$ = ast_new_expr(p, AST_MEMBER, @$);
      $$->u.member.base = $1;
      $$->u.member.field = $3;
      $$->u.member.field_span = @3;
      $$ = ast_finish_expr(p, $$);
    }
  ;

subscripts
  : subscript                     { memset(&$$, 0, sizeof $$); ctx_vec_push(A, &$$, $1); }
  | subscripts ',' subscript      { $$ = $1; ctx_vec_push(A, &$$, $3); }
  ;
/* subscript := expr | [expr] ':' [expr] */
subscript
  : expr                          { AstSubscript s = {NULL, NULL, $1, false, @$}; $$ = BOX(s); }
  | expr ':' expr                 { AstSubscript s = {$1, $3, NULL, true, @$}; $$ = BOX(s); }
  | expr ':'                      { AstSubscript s = {$1, NULL, NULL, true, @$}; $$ = BOX(s); }
  | ':' expr                      { AstSubscript s = {NULL, $2, NULL, true, @$}; $$ = BOX(s); }
  | ':'                           { AstSubscript s = {NULL, NULL, NULL, true, @$}; $$ = BOX(s); }
  ;

/* primary := NUMBER | NAME | NAME '(' [expr {',' expr}] ')' | '(' expr ')'
 *          | '(' expr ',' expr {',' expr} ')' | '[' expr {';' expr} ']' */
primary
  : NUMBER {
      $$ = ast_new_expr(p, AST_NUMBER, @$);
      $$->u.num.value = $1.num;
      $$->u.num.is_int = $1.is_int;
      $$->u.num.text = $1.text;
    }
  | IDENT                         { $$ = ast_new_expr(p, AST_NAME, @$); $$->u.name.id = $1; }
  | IDENT '(' opt_args ')' {
      $$ = ast_new_expr(p, AST_CALL, @$);
      $$->u.call.callee = $1;
      $$->u.call.callee_span = @1;
      $$->u.call.args = (AstExpr **)$3.items;
      $$->u.call.nargs = $3.len;
      $$ = ast_finish_expr(p, $$);
    }
  | '(' expr ')'                  { $$ = $2; }
  | '(' expr ',' exprs ')' {
      $$ = ast_new_expr(p, AST_TUPLE, @$);
      CtxVec v;
      memset(&v, 0, sizeof v);
      ctx_vec_push(A, &v, $2);
      for (int i = 0; i < $4.len; i++) ctx_vec_push(A, &v, $4.items[i]);
      $$->u.list.elems = (AstExpr **)v.items;
      $$->u.list.n = v.len;
      $$ = ast_finish_expr(p, $$);
    }
  | '[' concat_list ']' {
      $$ = ast_new_expr(p, AST_CONCAT, @$);
      $$->u.list.elems = (AstExpr **)$2.items;
      $$->u.list.n = $2.len;
      $$ = ast_finish_expr(p, $$);
    }
  ;

opt_args
  : %empty                        { memset(&$$, 0, sizeof $$); }
  | exprs
  ;
exprs
  : expr                          { memset(&$$, 0, sizeof $$); ctx_vec_push(A, &$$, $1); }
  | exprs ',' expr                { $$ = $1; ctx_vec_push(A, &$$, $3); }
  ;
concat_list
  : expr                          { memset(&$$, 0, sizeof $$); ctx_vec_push(A, &$$, $1); }
  | concat_list ';' expr          { $$ = $1; ctx_vec_push(A, &$$, $3); }
  ;

/* schedule := 'schedule' NAME ['for' NAME] '{' { directive SEP } '}'
 * directive := [NAME {'.' NAME} ':'] NAME { [','] sarg }
 * sarg := NAME {'.' NAME} | NUMBER | 'in' | '==' | '(' sarg {',' sarg} ')' */
schedule
  : T_SCHEDULE IDENT '{' directives '}' {
      $$ = new_item(p, AST_SCHEDULE, @$);
      $$->name = ident($2, @2);
      $$->directives = to_array(p, $4, sizeof(AstDirective));
      $$->ndirectives = $4.len;
    }
  | T_SCHEDULE IDENT T_FOR IDENT '{' directives '}' {
      $$ = new_item(p, AST_SCHEDULE, @$);
      $$->name = ident($2, @2);
      $$->target = ident($4, @4);
      $$->directives = to_array(p, $6, sizeof(AstDirective));
      $$->ndirectives = $6.len;
    }
  ;
directives
  : %empty                        { memset(&$$, 0, sizeof $$); }
  | directives directive SEP      { $$ = $1; ctx_vec_push(A, &$$, $2); check_directive(p, $2); }
  | directives error SEP          { $$ = $1; yyerrok; }
  ;
directive
  : IDENT sargs {
      AstDirective d = {@$, {NULL, @1}, ident($1, @1), to_array(p, $2, sizeof(AstSchedArg)), $2.len};
      $$ = BOX(d);
    }
  | dotted ':' IDENT sargs {
      AstDirective d = {@$, ident($1, @1), ident($3, @3), to_array(p, $4, sizeof(AstSchedArg)), $4.len};
      $$ = BOX(d);
    }
  ;
sargs
  : %empty                        { memset(&$$, 0, sizeof $$); }
  | sargs sarg                    { $$ = $1; ctx_vec_push(A, &$$, $2); }
  | sargs ',' sarg                { $$ = $1; $3->after_comma = true; ctx_vec_push(A, &$$, $3); }
  ;
sarg
  : dotted                        { AstSchedArg a = {AST_SARG_NAME, @$, false, $1, 0, NULL, 0}; $$ = BOX(a); }
  | T_IN                          { AstSchedArg a = {AST_SARG_NAME, @$, false, "in", 0, NULL, 0}; $$ = BOX(a); }
  | EQ                            { AstSchedArg a = {AST_SARG_NAME, @$, false, "==", 0, NULL, 0}; $$ = BOX(a); }
  | NUMBER {
      AstSchedArg a = {AST_SARG_INT, @$, false, $1.text, (long)$1.num, NULL, 0};
      if (!$1.is_int) ctx_diag_error(p->diag, @1, "expected an integer, found '%s'", $1.text);
      $$ = BOX(a);
    }
  | '(' sarg_list ')' {
      AstSchedArg a = {AST_SARG_LIST, @$, false, NULL, 0, to_array(p, $2, sizeof(AstSchedArg)), $2.len};
      $$ = BOX(a);
    }
  ;
sarg_list
  : sarg                          { memset(&$$, 0, sizeof $$); ctx_vec_push(A, &$$, $1); }
  | sarg_list ',' sarg            { $$ = $1; $3->after_comma = true; ctx_vec_push(A, &$$, $3); }
  ;
dotted
  : IDENT
  | dotted '.' IDENT              { $$ = ctx_arena_printf(A, "%s.%s", $1, $3); }
  ;

%%

static int yylex(YYSTYPE *lval, CtxSpan *lloc, GrammarParser *p) {
  if (p->start_stmt) {
    p->start_stmt = false;
    memset(lloc, 0, sizeof *lloc);
    lloc->file = p->lx.file;
    lloc->line = lloc->end_line = lloc->col = lloc->end_col = 1;
    lval->str = NULL;
    return STMT_START;
  }
  GrammarToken t;
  grammar_lex(&p->lx, &t);
  p->last_tok = t;
  *lloc = t.span;
  if (t.kind == NUMBER)
    lval->tok = t;
  else
    lval->str = t.text;
  return t.kind;
}

static void yyerror(CtxSpan *loc, GrammarParser *p, const char *msg) {
  if (strcmp(msg, "memory exhausted") == 0)
    ctx_diag_error(p->diag, *loc, "input nested too deeply for the parser");
  else
    ctx_diag_error(p->diag, *loc, "%s", msg);
}

/* Appends a token's name without Bison's double quotes. */
static void append_name(CtxBuf *b, GrammarParser *p, yysymbol_kind_t sym) {
  const char *s = yysymbol_name(sym);
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
    ctx_buf_write(b, s + 1, n - 2);
  else
    ctx_buf_puts(b, s);
  (void)p;
}

/* What the offending token was, for `found X`. */
static void describe_found(CtxBuf *b, GrammarParser *p, yysymbol_kind_t sym) {
  const GrammarToken *t = &p->last_tok;
  const CtxSource *src = ctx_sources_get(p->diag->srcs, p->lx.file);
  switch (t->kind) {
  case IDENT: ctx_buf_printf(b, "identifier '%s'", t->text); return;
  case NUMBER: ctx_buf_printf(b, "number '%s'", t->text); return;
  case STRING: ctx_buf_puts(b, "string"); return;
  case SEP: {
    size_t len;
    const char *line = ctx_sources_line(p->diag->srcs, p->lx.file, t->span.line, &len);
    size_t col = (size_t)t->span.col - 1;
    char c = line && col < len ? line[col] : '\n';
    if (c == ';' || c == '}') ctx_buf_printf(b, "'%c'", c);
    else if (line && col >= len && t->span.line >= (int)1 && src &&
             line + len == src->text + src->len)
      ctx_buf_puts(b, "end of file");
    else ctx_buf_puts(b, "newline");
    return;
  }
  default: append_name(b, p, sym);
  }
}

/* Tokens that can start an expression: listed together as "expression". */
static bool starts_expr(yysymbol_kind_t s) {
  static const char *const starters[] = {"identifier", "number", "'sum'", "'max'",
                                         "'('",        "'['",    "'-'",   "'!'"};
  CtxBuf b;
  ctx_buf_init(&b);
  append_name(&b, NULL, s);
  bool found = false;
  for (size_t i = 0; i < sizeof starters / sizeof starters[0]; i++)
    found |= strcmp(ctx_buf_str(&b), starters[i]) == 0;
  ctx_buf_free(&b);
  return found;
}

static int yyreport_syntax_error(const yypcontext_t *ctx, GrammarParser *p) {
  enum { MAX_LIST = 5 };
  if (p->lx.quiet) return 0; /* the lexer already reported this statement */
  yysymbol_kind_t exp[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
  CtxBuf b;
  ctx_buf_init(&b);
  bool any_expr = false;
  for (int i = 0; i < n; i++) any_expr |= exp[i] == YYSYMBOL_NUMBER;
  yysymbol_kind_t shown[MAX_LIST + 1];
  int k = 0;
  for (int i = 0; i < n && k <= MAX_LIST; i++) {
    if (any_expr && starts_expr(exp[i])) continue;
    shown[k++] = exp[i];
  }
  if (any_expr || k > 0) ctx_buf_puts(&b, "expected ");
  if (any_expr) ctx_buf_puts(&b, "expression");
  for (int i = 0; i < k && i < MAX_LIST; i++) {
    bool last = i == k - 1 && k <= MAX_LIST;
    if (any_expr || i > 0) ctx_buf_puts(&b, last ? " or " : ", ");
    append_name(&b, p, shown[i]);
  }
  if (k > MAX_LIST) ctx_buf_puts(&b, ", ...");
  ctx_buf_puts(&b, n > 0 ? ", found " : "unexpected ");
  describe_found(&b, p, yypcontext_token(ctx));
  ctx_diag_error(p->diag, *yypcontext_location(ctx), "%s", ctx_buf_str(&b));
  ctx_buf_free(&b);
  return 0;
}

static void *to_array(GrammarParser *p, CtxVec v, size_t size) {
  char *arr = ctx_arena_alloc(A, size * (size_t)v.len);
  for (int i = 0; i < v.len; i++) memcpy(arr + size * (size_t)i, v.items[i], size);
  return arr;
}

static void *boxed(GrammarParser *p, const void *v, size_t size) {
  void *b = ctx_arena_alloc(A, size);
  memcpy(b, v, size);
  return b;
}

static AstItem *new_item(GrammarParser *p, AstItemKind kind, CtxSpan span) {
  AstItem *it = CTX_NEW(A, AstItem);
  it->kind = kind;
  it->span = span;
  return it;
}

static AstStmt *new_stmt(GrammarParser *p, AstStmtKind kind, CtxSpan span) {
  AstStmt *s = CTX_NEW(A, AstStmt);
  s->kind = kind;
  s->span = span;
  return s;
}

static AstType *new_type(GrammarParser *p, AstTypeKind kind, CtxSpan span) {
  AstType *t = CTX_NEW(A, AstType);
  t->kind = kind;
  t->span = span;
  return t;
}

/* A directive's verb must be a schedule directive of the keyword table; the
 * meaning of its arguments is checked by sched/. */
static void check_directive(GrammarParser *p, const AstDirective *d) {
  const AstWord *w = ast_word_lookup(d->verb.id, strlen(d->verb.id));
  if (w && w->cls == KW_DIRECTIVE) return;
  ctx_diag_error(p->diag, d->verb.span, "unknown schedule directive '%s'", d->verb.id);
  int count, best = 3;
  const AstWord *words = ast_words(&count), *guess = NULL;
  for (int i = 0; i < count; i++) {
    if (words[i].cls != KW_DIRECTIVE) continue;
    int dist = ctx_edit_distance(d->verb.id, words[i].spelling, 2);
    if (dist < best) best = dist, guess = &words[i];
  }
  if (guess) ctx_diag_note(p->diag, d->verb.span, "did you mean '%s'?", guess->spelling);
}
