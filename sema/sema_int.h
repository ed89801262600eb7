/* sema_int.h — private declarations shared by the sema_*.c files.
 *
 * A Sema carries the state of one check: the arena and diagnostics, the
 * model being filled in, the global symbols, and the function whose body is
 * being checked. Local names live in Scopes, one per block, chained to the
 * enclosing one; lookup walks the chain, then the globals.
 */
#ifndef CTX_SEMA_INT_H
#define CTX_SEMA_INT_H

#include "sema/sema.h"

typedef enum {
  SYM_DIM, SYM_STRUCT, SYM_INPUT, SYM_PARAM, SYM_REC, SYM_DEF, SYM_MODEL,
  SYM_LOCAL,    /* a let or def parameter: [type] */
  SYM_NODE,     /* the node parameter of a rec function */
  SYM_INDEX,    /* an index variable of sum(k) or let y[i, j] */
  SYM_CHILDVAR, /* k of sum(k in n.children) / for k in n.children */
  SYM_SHAPEVAR  /* a def's shape variable bound at a call: [type] is an int */
} SymKind;

typedef struct Sym Sym;
struct Sym {
  const char *name;
  CtxSpan span;
  SymKind kind;
  SemaType *type;
  long extent;        /* SYM_INDEX: inferred extent, 0 while unknown */
  int index;          /* SYM_INPUT/SYM_PARAM/SYM_REC/SYM_DEF: slot in the model */
  const AstItem *item;
  bool active;        /* SYM_DEF: its body is being checked */
  bool checked;       /* SYM_DEF: its body was checked once */
  bool imported;      /* SYM_DEF: defined in an imported file (files[1..]) */
  const char *shapes; /* SYM_DEF: the argument shapes its own item was checked with */
  Sym *next;
};

typedef struct Scope Scope;
struct Scope {
  Sym *syms;
  Scope *up;
};

typedef struct {
  CtxArena *arena;
  CtxDiag *diag;
  SemaModel *m;
  Scope globals;  /* the model's names; its `up` is [lib] */
  Scope lib;      /* the defs of imported files (grep tag: SEMA-LIB-SCOPE) */
  Scope *top;     /* where lookups end: &globals, or &lib inside an imported def,
                     which so never sees the model's dims, params or functions */
  bool has_structure;
  /* the function being checked */
  const AstItem *fn;
  SemaType *fn_result;
  bool in_rec;
  const char *node_name; /* rec: the name n of (n: t) */
  bool in_output;
  bool in_for;           /* checking the body of a `for` loop */
} Sema;

/* sema_type.c */
SemaType *sema_error_type(Sema *S);
SemaType *sema_int_type(Sema *S, bool is_const, long value);
SemaType *sema_bool_type(Sema *S);
SemaType *sema_tensor_type(Sema *S, SemaElem elem, int rank, const long *dims);
SemaType *sema_node_type(Sema *S, SemaNodeRel rel);
bool sema_type_eq(const SemaType *a, const SemaType *b);
const char *sema_type_str(Sema *S, const SemaType *t);
/* Records [t] for [e]: an AstExpr, or an index variable's address (see
 * sema_extent_of). */
void sema_record(Sema *S, const void *e, SemaType *t);
SemaTable *sema_table_new(CtxArena *arena);
const char *sema_struct_word(SemaStructKind k);

/* sema_scope.c */
/* Binds [name] in [scope]; reports a duplicate (with a note at the first)
 * and returns NULL when [scope] already has it. */
Sym *sema_bind(Sema *S, Scope *scope, const char *name, CtxSpan span, SymKind kind);
Sym *sema_lookup(Sema *S, Scope *scope, const char *name);
/* The symbol [name] of [scope] itself (not the scopes around it), or NULL. */
Sym *sema_find(Scope *scope, const char *name);
/* Reports "unknown name" for [name] with a did-you-mean note. */
void sema_unknown(Sema *S, Scope *scope, CtxSpan span, const char *what, const char *name);
/* Evaluates a dim expression over dims, shape variables and integers. */
bool sema_const_eval(Sema *S, Scope *scope, const AstExpr *e, long *out);

/* sema_expr.c */
SemaType *sema_expr(Sema *S, Scope *scope, const AstExpr *e);

/* sema_call.c */
SemaType *sema_call(Sema *S, Scope *scope, const AstExpr *e);
SemaType *sema_member(Sema *S, Scope *scope, const AstExpr *e);
/* Checks the body of [fn] (rec or def) against [result]. */
void sema_function_body(Sema *S, Scope *params, const AstItem *fn, SemaType *result);

/* sema_index.c */
SemaType *sema_index(Sema *S, Scope *scope, const AstExpr *e);
SemaType *sema_reduce(Sema *S, Scope *scope, const AstExpr *e);
SemaType *sema_index_let(Sema *S, Scope *scope, const AstStmt *st);

/* sema_stmt.c */
/* Checks [b] in a new scope under [up]; returns true when every path
 * through it returns. */
bool sema_block(Sema *S, Scope *up, const AstBlock *b);

#endif
