/* sema.h — semantic analysis: names, shapes, recursion and control flow.
 *
 * AST in, checked model out. sema_check resolves every name of a model file,
 * evaluates its dims (with -D overrides), gives every expression a concrete
 * type — an f32/i32 tensor of known shape, a tuple of them, a structure node,
 * an integer or a boolean — and checks the rules that make a model
 * compilable: recursive calls go only to children (trees), predecessors
 * (DAGs) or the previous element (sequences), so recursion is well-founded;
 * `if` conditions depend only on the structure, never on tensor values; every
 * path of a function returns a value of its declared type; the output is a
 * recursive function applied to the structure's root. Each error is reported
 * once through the CtxDiag, at the span of its cause, with notes; checking
 * continues past errors (an erroneous expression gets the error type, which
 * silences follow-on reports).
 *
 * The result is plain data for the later stages (RA): the dims with values,
 * the structure, per-node inputs, params, functions, and a side table from
 * each checked AstExpr to its SemaType (sema_type_of). Everything lives in
 * the arena given to sema_check, next to the AST it points into.
 */
#ifndef CTX_SEMA_H
#define CTX_SEMA_H

#include "grammar/grammar.h"

enum { SEMA_MAX_RANK = 8 }; /* axes of one tensor */
/* Elements of one tensor: 2^40, 4 TiB of float32, beyond any machine's
 * memory (mvrnn's EmbM at V=20000, H=512 is 2^32.3); below it, sizes in
 * bytes and their sums stay far from overflowing 64 bits. */
#define SEMA_MAX_ELEMS (1L << 40)

typedef enum {
  SEMA_ERROR,  /* an erroneous expression; never reported twice */
  SEMA_TENSOR, /* f32/i32 with a concrete shape (rank 0: a scalar) */
  SEMA_TUPLE,  /* a function result (h: f32[H], c: f32[H]) */
  SEMA_INT,    /* structure integers, dims, integer literals */
  SEMA_BOOL,   /* conditions */
  SEMA_NODE,   /* a node of the structure */
  SEMA_RANGE   /* n.children / n.preds, the range of a reduction or loop */
} SemaTypeKind;

typedef enum { SEMA_F32, SEMA_I32 } SemaElem;

/* Which node a SEMA_NODE is, relative to the enclosing rec function. */
typedef enum { SEMA_NODE_SELF, SEMA_NODE_CHILD, SEMA_NODE_ROOT } SemaNodeRel;

typedef struct SemaType SemaType;
struct SemaType {
  SemaTypeKind kind;
  SemaElem elem; int rank; long dims[SEMA_MAX_RANK]; /* SEMA_TENSOR */
  int nfields; SemaType **fields; const char **names; /* SEMA_TUPLE; names may be NULL */
  bool is_const; long value;                          /* SEMA_INT */
  SemaNodeRel rel;                                    /* SEMA_NODE */
};

typedef enum { SEMA_TREE, SEMA_DAG, SEMA_SEQUENCE } SemaStructKind;

typedef struct { const char *name; long value; CtxSpan span; } SemaDim;

typedef struct {
  const char *name;  /* the input's name, e.g. "t" */
  SemaStructKind kind;
  long max_arity;    /* max_children / max_preds; 1 for a sequence */
  CtxSpan span;
} SemaStructure;

/* A per-node input `words : i32[t]`: [row] is the type of one node's entry
 * (i32 scalar for words, f32[D] for `x : f32[g, D]`). */
typedef struct { const char *name; SemaType *row; CtxSpan span; } SemaInput;
typedef struct { const char *name; SemaType *type; CtxSpan span; } SemaParam;

typedef struct {
  const AstItem *item; /* AST_REC or AST_DEF; an imported def's points into its file */
  bool is_rec;
  bool imported;       /* a def of an imported file: it sees none of the model's names */
  SemaType *result;    /* NULL for a def whose result uses shape variables */
} SemaFunc;

/* A call of a def with argument shapes other than those its first call
 * gave: sema typed a copy of the def's item for them (ast_clone_item), which
 * this call lowers instead of the def's own item (one copy per set of
 * shapes, shared by the calls with them). */
typedef struct {
  const AstExpr *call;
  const AstItem *def;  /* the def's own item */
  const AstItem *item; /* the copy typed for this call's shapes */
  const char *shapes;  /* those shapes, as sema prints them */
} SemaInstance;

/* A command-line override `-D NAME=VALUE`. */
typedef struct { const char *name; long value; } SemaDefine;

typedef struct SemaTable SemaTable; /* AstExpr* -> SemaType*, private */

typedef struct {
  const char *name; /* the model's name */
  SemaDim *dims; int ndims;
  SemaStructure structure;
  SemaInput *inputs; int ninputs;
  SemaParam *params; int nparams;
  SemaFunc *funcs; int nfuncs;
  CtxVec instances; /* SemaInstance *, one per call that lowers a copy */
  const AstExpr *output;   /* the output expression */
  const SemaFunc *output_func;
  SemaType *output_type;
  SemaTable *types;
} SemaModel;

/* The copy of a def that the call [call] lowers, or NULL when it lowers the
 * def's own item. */
const SemaInstance *sema_instance_of(const SemaModel *m, const AstExpr *call);

/* Checks the model in [files] with the overrides [defines]. files[0] is the
 * model file; files[1..] are the files it imports, directly or not, already
 * resolved and parsed by the caller (sema reads no files). An imported file
 * may hold only `def` and `use` items (anything else is an error pointing
 * into it); its defs are visible to the model and to every imported def, but
 * an imported def sees none of the model's names; a def name is unique
 * across all files. When files[0] itself holds only defs and uses it is
 * checked as a module: no model, structure or output is required. Errors go
 * to [diag]; everything is allocated in [arena]. Returns the model, or NULL
 * when files[0] holds no declarations at all (an empty file has nothing to
 * check). When diag->errors grew, the model is incomplete: use it only for
 * diagnostics. */
SemaModel *sema_check(CtxArena *arena, CtxDiag *diag, AstFile **files, int nfiles,
                      const SemaDefine *defines, int ndefines);

/* The type sema gave the AstExpr [e], or NULL when [e] was not checked (a def body is
 * typed at its first instantiation only). */
SemaType *sema_type_of(const SemaModel *m, const void *e);

/* The extent sema inferred for an index variable: [var] is
 * `&e->u.reduce.var` of a reduction `sum(k) ...` (without `in`), or
 * `&st->u.let.idx[i]` of an index-form `let y[i, j] = ...`. 0 when unknown. */
long sema_extent_of(const SemaModel *m, const void *var);

/* Writes [t] as the user spells types: f32[4, 8], (f32[4], f32[4]), ... */
void sema_print_type(CtxBuf *out, const SemaType *t);

#endif
