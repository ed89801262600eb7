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
  B_FIELD,  /* field [field] of the tuple-valued expression [expr] in [scope] */
  B_IXLET,  /* a def's index-form `let y[i, j] = ...` [stmt], lowered where it is
               used with its index names standing for the use's indices */
  B_SUBST   /* an index name of a B_IXLET: the already lowered [value] */
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
  const AstStmt *stmt; /* B_IXLET */
  RaExpr *subst;       /* B_SUBST */
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
  RaVar *loop_var;    /* inside `for k in n.children`: k, every new operator's
                         first axis (ra_new_op); NULL elsewhere */
  CtxVec loop_copies; /* operators copying destructured fields out of a loop */
  bool probe_loop;    /* ra_lower.c: asking whether an expression uses the loop */
  int temps;          /* generated names */
  CtxVec def_sigs;    /* triples: a def's AstItem, its argument shapes (a string), the
                         first call with them (an AstExpr) */
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
/* A new operator of [shape] (with the for loop's child axis in front, inside
 * a for loop). Its body goes in with ra_op_body. */
RaOp *ra_new_op(RaBuilder *B, const char *name, const RaShape *shape, CtxSpan span);
/* Is [op] an operator of the for loop being lowered (its first axis the
 * loop's k)? Reads of it there index it by k first. */
bool ra_per_child(const RaBuilder *B, const RaOp *op);
/* The axis variables of [op] that [shape] of ra_new_op described (without
 * the child axis). */
RaVar **ra_op_axes(const RaBuilder *B, RaOp *op);
/* Sets [op]'s body: [body], or for an operator of a for loop `k < num_deps ?
 * body : 0`, so that the rows of children a node lacks are zeros. */
void ra_op_body(RaBuilder *B, RaOp *op, RaExpr *body);
/* Emits an operator [name] holding [e] (or field [field] of the tuple [e],
 * when [field] >= 0) of type [t] at every index, lowered in B->scope. */
RaOp *ra_materialize(RaBuilder *B, const char *name, const AstExpr *e, int field,
                     const SemaType *t);
/* The operator [name] of the index-form let [s] (`let y[i, j] = body`),
 * lowered in B->scope and emitted ([unique]: as ra_emit_unique does). */
RaOp *ra_index_let_op(RaBuilder *B, const char *name, const AstStmt *s, bool unique);
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
