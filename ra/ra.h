/* ra.h — RA: a model as tensor operators over the nodes of its structure.
 *
 * RA is built from a checked model (sema). Every `let` of a recursive
 * function becomes an operator RaOp: a tensor of known shape whose element
 * at index variables (i, j, ...) is a scalar expression RaExpr in index form
 * — reads of parameters, per-node inputs, other operators of the same node
 * and results of recursive calls at dependencies of the node (children,
 * predecessors, the previous element), elementwise functions, selections
 * and reductions. The vector sugar of the language is gone: `W @ x` is
 * `sum(k) W[i, k] * x[k]`, `g[H:2*H]` is `g[i + H]`, `[a; b]` is a
 * selection on the first index. Matrix products whose operands do not
 * depend on a reduction variable become operators of their own, so no
 * product is recomputed per element.
 *
 * A function's body is a small structured program over these operators:
 * operators in order, `if` on structure-only conditions (leaf tests, arity
 * comparisons), and `return` of one operator per result field. Recursion
 * closes through RA_SRC_REC reads: the result of a function at a dependency
 * of the current node; a dependency that does not exist (a leaf's child, the
 * first element's predecessor) reads as zeros.
 *
 * The float64 reference interpreter (ra_interp.c) executes RA node by node
 * in dependency order, with no batching and no fusion: it is the oracle
 * every backend and schedule is checked against.
 */
#ifndef CTX_RA_H
#define CTX_RA_H

#include "runtime/ctxrt.h"
#include "sema/sema.h"

enum { RA_MAX_RANK = SEMA_MAX_RANK };

typedef struct {
  int rank;
  long dims[RA_MAX_RANK];
  long size; /* product of dims (1 for a scalar) */
} RaShape;

/* A per-node input, e.g. `words : i32[t]` or `x : f32[g, D]`. On each node
 * its values are [offset, offset + row.size) of the node's value list. */
typedef struct {
  const char *name;
  bool is_int;
  RaShape row;
  long offset;
  long bound; /* an i32 input used as row ids of a parameter: ids must be in
                 [0, bound); 0 when it is not used that way */
  bool read_at_internal; /* some function reads it at a non-leaf node */
} RaInput;

typedef struct {
  const char *name;
  RaShape shape;
} RaParam;

/* An index variable: an axis of an operator, or the variable of a reduction. */
typedef struct {
  const char *name;
  int id;          /* slot in its function's variable table */
  long extent;     /* [0, extent) */
  bool over_deps;  /* ranges over the node's dependencies instead */
} RaVar;

typedef enum {
  RA_CONST,    /* value */
  RA_VAR,      /* var */
  RA_READ,     /* src[idx...] */
  RA_UNARY,    /* fn(a) */
  RA_BINARY,   /* a op b */
  RA_SELECT,   /* c ? a : b */
  RA_REDUCE,   /* op over var of a */
  RA_NUM_DEPS  /* number of dependencies of the current node */
} RaExprKind;

typedef enum { RA_SRC_PARAM, RA_SRC_INPUT, RA_SRC_OP, RA_SRC_REC } RaSrcKind;

typedef enum {
  RA_FN_NEG, RA_FN_NOT, RA_FN_SIGMOID, RA_FN_TANH, RA_FN_RELU, RA_FN_EXP, RA_FN_LOG,
  RA_FN_SQRT, RA_FN_ABS
} RaFn;

typedef enum {
  RA_ADD, RA_SUB, RA_MUL, RA_DIV, RA_EQ, RA_NE, RA_LT, RA_LE, RA_GT, RA_GE, RA_AND, RA_OR,
  RA_SUM, RA_MAX /* reductions */
} RaBinOp;

typedef struct RaExpr RaExpr;
struct RaExpr {
  RaExprKind kind;
  double value;      /* RA_CONST */
  RaVar *var;        /* RA_VAR, RA_REDUCE */
  int op;            /* RaFn for RA_UNARY, RaBinOp for RA_BINARY and RA_REDUCE */
  RaExpr *a, *b, *c; /* operands; RA_SELECT: c ? a : b; RA_REDUCE: body a */
  /* RA_READ */
  RaSrcKind src;
  int index;         /* parameter / input / operator / function index */
  int field;         /* RA_SRC_REC: result field */
  RaExpr *dep;       /* RA_SRC_INPUT and RA_SRC_REC: which dependency of the
                        node (an integer expression), or NULL for the node
                        itself */
  RaExpr **idx;
  int nidx;
};

typedef struct {
  const char *name; /* the let's name, or a generated one: g.mm1, cell.h */
  int id;           /* index in its function's operator table */
  RaShape shape;
  RaVar **vars;     /* one per axis */
  RaExpr *body;
  CtxSpan span;
} RaOp;

typedef enum { RA_STMT_OP, RA_STMT_IF, RA_STMT_RETURN } RaStmtKind;

typedef struct RaStmt RaStmt;
typedef struct {
  RaStmt **stmts;
  int n;
} RaBlock;

struct RaStmt {
  RaStmtKind kind;
  RaOp *op;            /* RA_STMT_OP */
  RaExpr *cond;        /* RA_STMT_IF */
  RaBlock then, els;
  RaOp **results;      /* RA_STMT_RETURN: one operator per result field */
};

typedef struct {
  const char *name;
  int nfields;
  const char **field_names; /* NULL entries for unnamed fields */
  RaShape *fields;
  RaBlock body;
  RaOp **ops;
  int nops;
  int nvars;
} RaFunc;

typedef struct {
  const char *name;
  SemaStructKind kind;
  long max_arity;
  RaInput *inputs;
  int ninputs;
  long values_per_node; /* sum of the inputs' row sizes */
  RaParam *params;
  int nparams;
  RaFunc *funcs;
  int nfuncs;
  int out_func, out_field; /* output: funcs[out_func] field out_field at roots */
  RaShape out_shape;
  int out_nfields;          /* 1; or a tuple output: all out_nfields fields of
                               funcs[out_func] from out_field 0 on, one row of
                               out_shape = [sum of their sizes] (grep tag:
                               TUPLE-OUTPUT) */
  unsigned disabled;        /* RA_OPT_* turned off (ILIR reads it too) */
} RaProgram;

/* The optimizations of RA and ILIR, all on by default. `--disable=NAME`
 * turns one off; the differential tests run every backend with each one
 * disabled (grep tag: OPT-FLAGS). */
enum {
  RA_OPT_CONCAT_SPLIT = 1, /* W @ [a; b] as the sum of W's parts times a and b */
  RA_OPT_PRODUCT_OPS = 2,  /* a product reading no bound variable is an operator */
  RA_OPT_INTERCHANGE = 4,  /* ILIR: column-reading reductions accumulate by rows */
  RA_OPT_SPECIALIZE_LEAF = 8, /* sched: the leaf level and the others as separate loops */
  RA_OPT_REGISTER_TILE = 16,  /* sched: level products in register tiles, packed weights */
  RA_OPT_VECTOR_MATH = 32,    /* codegen: exp, tanh, sigmoid inline (vectorizable) */
  RA_OPT_CSE = 64,            /* one operator for equal operators of a block */
  RA_OPT_HOIST_PRODUCTS = 128, /* sched: products with every dependency's result
                                  computed once per node, at its own level */
  RA_OPT_DENSE_SCRATCH = 256,  /* sched: operators' rows for one level at a time */
  RA_OPT_FUSE_EPILOGUE = 512,  /* sched: elementwise statements into a tile's epilogue */
  RA_OPT_HOIST_INVARIANT = 1024, /* sched: operators the same at every node computed
                                    once per run */
  RA_OPT_ALL_DEPS = 2048, /* sched: sums over a node's dependencies run over all K
                             slots, absent ones reading the zero row */
  RA_OPT_SHARE_WEIGHTS = 4096, /* sched: register tiles reading the same weights as one */
  RA_OPT_HOIST_LOCAL = 8192, /* sched: operators reading only their node's inputs, for
                                the whole batch before the levels */
  RA_OPT_DIRECT_RESULTS = 16384, /* sched: returned operators computed in their result
                                   rows, not copied there */
  RA_OPT_GRID_FUSION = 65536, /* sched (cuda): a level's elementwise rest in its grid loop,
                                one grid barrier a level (sched_gpu.c, fuse_level) */
  RA_OPT_LEAF_VIEWS = 32768, /* sched: leaves' parameter rows read where they are, not
                               copied into result rows */
  RA_OPT_BALANCE_LEVELS = 131072 /* sched: levels evened out at run time where the level
                                    products' weights exceed the L2 (balance_levels) */
};

/* The optimizations that are off unless `--enable=NAME` turns them on: built
 * and tested (a differential_jit_with_<NAME> test in lang-tests/CMakeLists.txt
 * runs with each enabled), but not faster on this project's benchmarks yet
 * (docs/architecture.md). None at present. */
enum { RA_OPT_DEFAULT_OFF = 0 };

/* The flag named [name] ("concat-split", "product-ops", "interchange",
 * "specialize-leaf", "register-tile", "vector-math", "cse", "hoist-products",
 * "dense-scratch", "fuse-epilogue", "hoist-invariant"), or 0.
 * [names] (may be NULL) receives the list of names for messages. */
unsigned ra_opt_lookup(const char *name, const char **names);

/* Builds RA from the checked model [m] in [arena], with the optimizations in
 * [disabled] turned off. Constructs RA cannot express yet are reported to
 * [diag]; returns NULL after any error. */
RaProgram *ra_build(CtxArena *arena, CtxDiag *diag, const SemaModel *m, unsigned disabled);

/* Writes [p] in readable form (ctx check --dump=ra). */
void ra_print(CtxBuf *out, const RaProgram *p);

/* Checks RA's invariants (indices in range, variables bound, shapes of
 * returns); reports an internal compiler error to [diag] and returns false
 * when one fails. */
bool ra_verify(const RaProgram *p, CtxDiag *diag);

/* Runs [p] in float64 over every structure of [forest] (already validated
 * against the program) with the parameters [params] (params[i]: the
 * row-major float64 values of p->params[i]).
 *
 * [all_nodes] false: one row per output node (tree roots, last elements,
 * DAG sinks; ctxrt_forest_outputs order); true: one row per node in the
 * forest's order. Each row has p->out_shape.size values. On success returns
 * CTXRT_OK with a malloc'd array in [*out] and the row count in [*rows].
 * Bad data found only while running (a word id out of range, a value that a
 * node lacks) returns an error status with `FILE:LINE: error: ...` in [err]. */
CtxrtStatus ra_interp_run(const RaProgram *p, const CtxrtForest *forest,
                          const double *const *params, bool all_nodes, double **out,
                          int64_t *rows, CtxrtError *err);

#endif
