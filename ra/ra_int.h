/* ra_int.h — declarations shared by the files of ra/. */
#ifndef CTX_RA_INT_H
#define CTX_RA_INT_H

#include "ra/ra.h"

/* What a name stands for while a function body is lowered. */
typedef enum {
  B_OP,     /* a materialized operator */
  B_REC,    /* field [field] of a recursive call at [dep] (field -1: all, a tuple) */
  B_VAR,    /* an index or dependency variable */
  B_PARAM,  /* parameter [index] */
  B_INPUT,  /* per-node input [index] */
  B_CONST,  /* a dim or a def's shape variable */
  B_NODE,   /* the node parameter of the rec function */
  B_EXPR,   /* an expression lowered where it is used, in scope [scope]: a def's
               argument or a def's local */
  B_FIELD   /* field [field] of the tuple-valued expression [expr] in [scope] */
} RaBindKind;

typedef struct RaBinding RaBinding;
struct RaBinding {
  const char *name;
  RaBindKind kind;
  RaOp *op;
  int index, field;
  RaExpr *dep;
  RaVar *var;
  long value;
  const AstExpr *expr;
  RaBinding *scope;
  RaBinding *next;
};

typedef struct {
  CtxArena *arena;
  CtxDiag *diag;
  const SemaModel *m;
  RaProgram *p;
  RaBinding *globals;
  RaBinding *scope;   /* innermost first, ends in globals */
  RaFunc *fn;         /* the rec function being lowered */
  CtxVec ops;         /* its operators */
  CtxVec *block;      /* statements of the block being lowered */
  bool in_leaf;       /* inside the then-branch of `if leaf(n)` */
  int temps;          /* generated names */
  CtxVec def_sigs;    /* pairs: a def's AstItem, its argument shapes (a string) */
  bool failed;
} RaBuilder;

/* ra_lower.c: expressions. [idx] has one entry per axis of [e]'s type. */
RaExpr *ra_lower(RaBuilder *B, const AstExpr *e, RaExpr **idx);
/* Field [field] of the tuple-valued [e] at [idx]. */
RaExpr *ra_lower_field(RaBuilder *B, const AstExpr *e, int field, RaExpr **idx);
/* Which dependency a node expression names: n.child[k], n.pred[k], n.prev
 * (NULL after reporting an unsupported form). */
RaExpr *ra_node_dep(RaBuilder *B, const AstExpr *arg);
RaExpr *ra_const(RaBuilder *B, double v);
RaExpr *ra_var_ref(RaBuilder *B, RaVar *v);
RaVar *ra_new_var(RaBuilder *B, const char *name, long extent, bool over_deps);
RaBinding *ra_bind(RaBuilder *B, RaBinding *up, const char *name, RaBindKind kind);
/* A new operator of [shape] whose body [make] lowers at its axis variables. */
RaOp *ra_new_op(RaBuilder *B, const char *name, const RaShape *shape, CtxSpan span);
/* Emits an operator [name] holding [e] (or field [field] of the tuple [e],
 * when [field] >= 0) of type [t] at every index, lowered in B->scope. */
RaOp *ra_materialize(RaBuilder *B, const char *name, const AstExpr *e, int field,
                     const SemaType *t);
/* Appends [op] as a statement of the current block. */
void ra_emit_op(RaBuilder *B, RaOp *op);
/* The same, unless an operator of the current block already computes what
 * [op] does (same shape and body, RA_OPT_CSE): then [op], if it is the
 * newest, is dropped and that operator returned. */
RaOp *ra_emit_unique(RaBuilder *B, RaOp *op);
/* Reports a construct RA cannot express yet. */
void ra_unsupported(RaBuilder *B, CtxSpan span, const char *what);
/* The shape of a tensor type (rank 0 for scalars and integers). */
RaShape ra_shape_of(const SemaType *t);
const SemaType *ra_type(RaBuilder *B, const AstExpr *e);

#endif
