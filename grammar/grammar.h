/* grammar.h — the ctx front end: lexer, parser, AST and its printer.
 *
 * Text in, AST out. The lexer (grammar_lex.re, re2c) turns a registered
 * source into tokens, inserting statement separators at line ends the way Go
 * does; the parser (grammar_parse.y, a pure Bison LALR(1) parser with
 * locations) builds the AST in an arena. Syntax errors are reported through a
 * CtxDiag as `expected X, found Y`; the parser recovers at statement and item
 * boundaries, so one run reports several independent errors. Parsing never
 * prints, exits or crashes: any byte string gives either an AST or
 * diagnostics, in time and memory linear in its length.
 *
 * The AST is plain data. Names are arena strings; every node has a CtxSpan.
 * The printer writes the canonical form of a file (2-space indentation, one
 * space around binary operators, the fewest parentheses that keep the tree),
 * and parse -> print -> parse -> print is a fixed point (lang-tests check it).
 */
#ifndef CTX_GRAMMAR_H
#define CTX_GRAMMAR_H

#include "support/support.h"

/* Limits that keep every later pass's recursion bounded. */
enum {
  AST_MAX_NESTING = 256, /* open brackets/braces at once */
  AST_MAX_DEPTH = 2000   /* depth of one expression tree */
};

/* ---- the keyword table (grep tag: KEYWORD-TABLE) ------------------------ */

typedef enum {
  KW_DECL, KW_CONTROL, KW_TYPE, KW_REDUCE, KW_ACCESSOR, KW_BUILTIN,
  KW_TYPEARG, KW_DIRECTIVE, KW_SCHEDARG
} AstWordClass;

typedef struct {
  const char *spelling;
  AstWordClass cls;
  int token; /* parser token for reserved words, 0 for contextual ones */
} AstWord;

/* The whole table, [*count] entries, in keywords.def order. */
const AstWord *ast_words(int *count);
/* The entry for [name], or NULL. */
const AstWord *ast_word_lookup(const char *name, size_t len);

/* ---- expressions ------------------------------------------------------- */

typedef enum {
  AST_ERROR,   /* stands in for something that failed to parse */
  AST_NUMBER,  /* 3, 0.5, 1e-3 */
  AST_NAME,    /* x */
  AST_UNARY,   /* -x, !x */
  AST_BINARY,  /* a + b, W @ x, a == b, ... */
  AST_CALL,    /* f(a, b) */
  AST_INDEX,   /* x[i, j], g[0:H], Emb[words[n]] */
  AST_MEMBER,  /* cell(n).h, n.child, n.num_children */
  AST_TUPLE,   /* (a, b) */
  AST_CONCAT,  /* [a; b] */
  AST_REDUCE   /* sum(k) body, sum(k in n.children) body, max(k) body */
} AstExprKind;

typedef enum {
  AST_OP_ADD = 1, AST_OP_SUB, AST_OP_MUL, AST_OP_DIV, AST_OP_MATMUL,
  AST_OP_EQ, AST_OP_NE, AST_OP_LT, AST_OP_LE, AST_OP_GT, AST_OP_GE,
  AST_OP_AND, AST_OP_OR, AST_OP_NEG, AST_OP_NOT, AST_OP_SUM, AST_OP_MAX
} AstOp;

/* Spelling of [op] ("+", "@", "sum", ...). */
const char *ast_op_name(AstOp op);

typedef struct AstExpr AstExpr;

typedef struct {
  AstExpr *lo, *hi; /* a slice lo:hi when is_slice; either may be NULL */
  AstExpr *index;   /* a plain index otherwise */
  bool is_slice;
  CtxSpan span;
} AstSubscript;

struct AstExpr {
  AstExprKind kind;
  CtxSpan span;
  int depth; /* height of this tree, bounded by AST_MAX_DEPTH */
  union {
    struct { double value; bool is_int; const char *text; } num;
    struct { const char *id; } name;
    struct { AstOp op; AstExpr *operand; } unary;
    struct { AstOp op; AstExpr *lhs, *rhs; } binary;
    struct { const char *callee; CtxSpan callee_span; AstExpr **args; int nargs; } call;
    struct { AstExpr *base; AstSubscript *subs; int nsubs; } index;
    struct { AstExpr *base; const char *field; CtxSpan field_span; } member;
    struct { AstExpr **elems; int n; } list; /* AST_TUPLE and AST_CONCAT */
    struct {
      AstOp op; const char *var; CtxSpan var_span;
      AstExpr *range; /* `in RANGE`, or NULL for an index-form reduction */
      AstExpr *body;
    } reduce;
  } u;
};

/* ---- types ------------------------------------------------------------- */

typedef enum {
  AST_TYPE_F32, AST_TYPE_I32, /* tensors: elem[dims] (no dims: a scalar) */
  AST_TYPE_TREE, AST_TYPE_DAG, AST_TYPE_SEQUENCE, /* structures */
  AST_TYPE_TUPLE /* (h: f32[H], c: f32[H]) — function results only */
} AstTypeKind;

typedef struct AstType AstType;
typedef struct {
  const char *name; /* NULL for an unnamed tuple field */
  CtxSpan name_span;
  AstType *type;
} AstField;

struct AstType {
  AstTypeKind kind;
  CtxSpan span;
  AstExpr **dims; int ndims;         /* tensors */
  const char *arg; CtxSpan arg_span; /* tree/dag: max_children / max_preds */
  AstExpr *arity;                    /* tree/dag: its value */
  AstField *fields; int nfields;     /* tuples */
};

/* ---- statements -------------------------------------------------------- */

typedef enum { AST_LET, AST_IF, AST_RETURN, AST_FOR } AstStmtKind;

typedef struct AstStmt AstStmt;
typedef struct {
  AstStmt **stmts;
  int n;
  CtxSpan span;
} AstBlock;

typedef struct {
  const char *id;
  CtxSpan span;
} AstIdent;

struct AstStmt {
  AstStmtKind kind;
  CtxSpan span;
  union {
    struct {
      AstIdent *names; int nnames; bool destructure; /* let (a, b) = ... */
      AstIdent *idx; int nidx;                        /* let y[i, j] = ... */
      AstExpr *value;
    } let;
    struct { AstExpr *cond; AstBlock then; AstBlock *els; } if_;
    struct { AstExpr *value; } ret;
    struct { AstIdent var; AstExpr *range; AstBlock body; } for_;
  } u;
};

/* ---- schedules ----------------------------------------------------------- */

typedef enum { AST_SARG_NAME, AST_SARG_INT, AST_SARG_LIST } AstSchedArgKind;

typedef struct AstSchedArg AstSchedArg;
struct AstSchedArg {
  AstSchedArgKind kind;
  CtxSpan span;
  bool after_comma;  /* written after a ',' */
  const char *name;  /* NAME: a word or dotted path ("i.inner", "to", "in") */
  long value;        /* INT */
  AstSchedArg *elems; int n; /* LIST: (a, b) */
};

typedef struct {
  CtxSpan span;
  AstIdent op;  /* `g:` target; id NULL when absent */
  AstIdent verb;
  AstSchedArg *args; int nargs;
} AstDirective;

/* ---- items ------------------------------------------------------------- */

typedef enum {
  AST_MODEL, AST_DIM, AST_INPUT, AST_PARAM, AST_USE, AST_REC, AST_DEF,
  AST_OUTPUT, AST_SCHEDULE
} AstItemKind;

typedef struct {
  AstItemKind kind;
  CtxSpan span;
  AstIdent name; /* model/dim/input/param/rec/def/schedule name; use: the path */
  bool use_file; /* use "path" rather than use a.b */
  AstExpr *value; /* dim value, output expression */
  AstType *type;  /* input/param type; rec/def result type */
  AstField *params; int nparams; /* rec: one (n: t) whose type is a NAME; def: many */
  AstIdent domain; /* rec: the structure name t of (n: t) */
  AstBlock body;
  AstIdent target; /* schedule ... for TARGET; id NULL when absent */
  AstDirective *directives; int ndirectives;
} AstItem;

typedef struct {
  int file; /* CtxSources id */
  AstItem **items;
  int nitems;
} AstFile;

/* ---- entry points ---------------------------------------------------------- */

/* Parses source [file] of [diag]'s sources into an AST allocated in [arena].
 * Always returns a file (possibly with AST_ERROR parts); syntax errors go to
 * [diag]. */
AstFile *ast_parse(CtxArena *arena, CtxDiag *diag, int file);

/* Parses source [file] as one statement (`let ...`, `return ...`, ...) or
 * one expression, which comes back as an AST_RETURN of it: a line typed at
 * ctx repl's prompt. Returns NULL after reporting a syntax error to [diag]
 * (no recovery: the first error ends the parse). */
AstStmt *ast_parse_stmt(CtxArena *arena, CtxDiag *diag, int file);

/* A deep copy of [it] in [arena]: its own expressions, types and statements
 * (sema types a def's body once per set of argument shapes, each copy with
 * its own types); names, spans and directives shared. */
AstItem *ast_clone_item(CtxArena *arena, const AstItem *it);

/* Writes the canonical text of [f] to [out]. */
void ast_print(CtxBuf *out, const AstFile *f);
void ast_print_expr(CtxBuf *out, const AstExpr *e);
void ast_print_type(CtxBuf *out, const AstType *t);

/* Token dump for --dump=tokens: one token per line with its position. */
void ast_dump_tokens(CtxBuf *out, CtxDiag *diag, int file);

#endif
