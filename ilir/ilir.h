/* ilir.h — ILIR: the loop IR that RA is lowered to, and that schedules
 * transform and backends compile.
 *
 * An ILIR kernel is one function run once per inference over a linearized
 * batch of structures (runtime/ctxrt.h, CtxrtLinear): node ids are numbered
 * so that every dependency level is one contiguous id range and leaves come
 * first. The kernel's loops may have bounds read at run time
 * (level_start[l]) and its indices may be uninterpreted functions of loop
 * variables — dep(n, k), the k-th dependency of node n, and num_deps(n) —
 * which are loads from arrays the linearizer fills.
 *
 * Values are 64-bit integers (indices, loop variables, the results of
 * comparisons) or 32-bit floats (tensor elements). Every tensor lives in a
 * buffer the caller passes in; the kernel keeps no state of its own.
 *
 * The recursion of RA becomes two loops: over levels in order (dynamic
 * batching: a level's nodes depend only on earlier levels) and over the nodes
 * of a level (independent of each other). Every dependency slot of a node
 * that does not exist holds the id num_nodes, whose result row the caller
 * keeps zero — so reading an absent child's result needs no test.
 */
#ifndef CTX_ILIR_H
#define CTX_ILIR_H

#include "ra/ra.h"

/* ---- buffers: the kernel's arguments ----------------------------------------- */

typedef enum {
  ILIR_BUF_PARAM,     /* f32[size]: a parameter, row-major */
  ILIR_BUF_VALUES,    /* f32[(num_nodes + 1) * V]: per-node input values */
  ILIR_BUF_IVALUES,   /* i32[(num_nodes + 1) * V]: the same values as integers */
  ILIR_BUF_RESULT,    /* f32[(num_nodes + 1) * size]: a function's result rows */
  ILIR_BUF_SCRATCH,   /* f32[(num_nodes + 1) * size]: an operator's value per node */
  ILIR_BUF_DEP,       /* i32[num_nodes * K]: dependency ids, num_nodes when absent */
  ILIR_BUF_NUM_DEPS,  /* i32[num_nodes] */
  ILIR_BUF_LEVELS,    /* i32[num_levels + 1]: level l is ids [levels[l], levels[l+1]) */
  ILIR_BUF_PACKED,    /* f32[rows * cols]: a block of parameter [index], transposed
                         once when the weights are loaded (IlirPack) */
  ILIR_BUF_LEVEL_SCRATCH, /* f32[(widest level + 1) * size]: an operator's value per
                             node of the level being computed, at row n - levels[l] */
  ILIR_BUF_INVARIANT, /* f32[size]: an operator's value that is the same at every
                         node, computed once per run before the levels */
  ILIR_BUF_PHASES,    /* i32[num_levels]: 1 where a barrier follows level l, 0 where
                         the next level runs in the same phase (unroll_recursion:
                         phases of up to [size] levels; the runtime decides them per
                         batch and thread count, ctxrt.h CTXRT_BUF_PHASES). Read by
                         codegen only, never by ILIR expressions */
  ILIR_BUF_ARITY_END  /* i32[num_levels]: a schedule's `specialize n.num_children ==
                         K` (K = size): the linearizer orders each level's nodes by
                         these buffers in table order, those with exactly K
                         dependencies first; entry l is where level l's group of
                         them ends (it starts where the previous group ends, the
                         first at levels[l]; the rest follow the last group). A
                         negative size -1 - p groups instead the nodes that are
                         dependency p of their parent (a tree's child p:
                         refactor_recursion's products read at one place only,
                         sched_recur.c) */
} IlirBufKind;

/* A PACKED buffer holds element (r, c) = param[off + c * stride + r] for c in
 * [0, cols), r in [0, rows) — the columns of a matrix product's weight block
 * made rows, so that a register tile reads a row of outputs' weights with one
 * vector load. ILIR indexes it logically, P[r * cols + c]. In memory the
 * columns are cut into panels of [panel] (0: one panel of all cols), each
 * panel stored row by row: (r, c) lives at
 *
 *   (c / panel) * panel * rows + r * w + c % panel,  w = min(panel, cols - c / panel * panel)
 *
 * so a tile of outputs inside one panel reads its weights as one contiguous
 * stream over r (the hardware prefetchers follow it; a stride of cols floats
 * per r does not, and a matrix-vector product ran at half the speed).
 * grep: PACKED-PANELS (runtime/ctxrt_model.c packs the same layout). */
typedef struct {
  long off, stride, rows, cols, panel;
} IlirPack;

/* Where (r, c) of [pack] lives in its buffer (the layout above). */
long ilir_pack_at(const IlirPack *pack, long r, long c);

typedef struct {
  const char *name;
  IlirBufKind kind;
  long size;  /* elements per node (VALUES, RESULT, SCRATCH) or in all (PARAM) */
  int index;  /* RA parameter (PARAM, PACKED) / function / operator it holds */
  int func;   /* SCRATCH: the function of the operator */
  IlirPack pack; /* PACKED */
  bool shared;   /* PARAM: the CUDA target copies it into each block's shared
                    memory at the kernel's start (a schedule's `cache W in shared`) */
} IlirBuf;

/* ---- expressions ----------------------------------------------------------------- */

typedef enum { ILIR_I64, ILIR_F32 } IlirType;

typedef enum {
  ILIR_CONST,     /* ival (I64) or fval (F32) */
  ILIR_VAR,       /* a loop or reduction variable (I64) */
  ILIR_LOAD,      /* buf[a]; F32 from f32 buffers, I64 (sign-extended) from i32 ones */
  ILIR_UNARY,     /* op: IlirUnOp of a */
  ILIR_BINARY,    /* op: IlirBinOp of a, b (both of the result type, except
                     comparisons: I64 result of two operands of one type) */
  ILIR_SELECT,    /* c (I64, nonzero = true) ? a : b; ival 1: a view (ilir_is_view) */
  ILIR_REDUCE,    /* op (ILIR_SUM / ILIR_MAXR) over var in [lo, hi) of a (F32) */
  ILIR_TO_F32,    /* a (I64) converted to F32 */
  ILIR_ARG        /* a kernel argument (I64): ival 0 = num_nodes, 1 = num_levels */
} IlirExprKind;

typedef enum {
  ILIR_NEG, ILIR_NOT, ILIR_SIGMOID, ILIR_TANH, ILIR_RELU, ILIR_EXP, ILIR_LOG,
  ILIR_SQRT, ILIR_ABS
} IlirUnOp;

typedef enum {
  ILIR_ADD, ILIR_SUB, ILIR_MUL, ILIR_DIV, ILIR_EQ, ILIR_NE, ILIR_LT, ILIR_LE, ILIR_GT,
  ILIR_GE, ILIR_AND, ILIR_OR, ILIR_SUM, ILIR_MAXR
} IlirBinOp;

typedef struct IlirVar {
  const char *name; /* printed as is; split variables print as i.o / i.i */
  int id;           /* dense, per kernel */
} IlirVar;

typedef struct IlirExpr IlirExpr;
struct IlirExpr {
  IlirExprKind kind;
  IlirType type;
  long ival;
  float fval;
  IlirVar *var;      /* VAR, REDUCE */
  int buf;           /* LOAD: index into the kernel's buffers */
  int op;
  IlirExpr *a, *b, *c;
  IlirExpr *lo, *hi; /* REDUCE bounds (I64) */
};

/* ---- statements ---------------------------------------------------------------------- */

typedef enum {
  ILIR_LOOP,   /* for var in [lo, hi) { body } */
  ILIR_STORE,  /* buf[index] = value (F32) */
  ILIR_IF      /* if cond { then } else { els } */
} IlirStmtKind;

typedef enum {
  ILIR_LOOP_SERIAL,
  ILIR_LOOP_LEVELS,   /* over dependency levels: in order, a barrier between */
  ILIR_LOOP_NODES,    /* over the nodes of one level: independent iterations */
  ILIR_LOOP_PARALLEL, /* outside the levels: iterations are shared among the
                         threads like a NODES loop's, and a barrier follows the
                         loop; it is where INVARIANT buffers are written, and
                         only they (bounds inference: a loop over [0, 1), one
                         thread computing the whole body) */
  ILIR_LOOP_VECTOR,   /* iterations may run in SIMD lanes */
  ILIR_LOOP_UNROLL
} IlirLoopKind;

/* Where a loop's iterations run on a GPU (sched_gpu.c; codegen.h). BLOCK: a
 * NODES loop whose nodes are shared among the thread blocks as a NODES loop's
 * among the threads of a team; THREAD: a loop inside a BLOCK loop's body whose
 * iterations are shared among the threads of the block, followed by a barrier
 * of the block (no thread of the block reads in one what another writes in it:
 * sched_gpu_verify); WARP: such a loop whose body is one store of a sum
 * (ilir_warp_sum), its iterations shared among the block's warps, each sum
 * among the warp's lanes (lane l adds the terms l, l + 32, ...; shuffles fold
 * the lanes' parts; lane 0 stores), then the block's barrier; GRID: a NODES
 * loop of WARP loops only, every (node, iteration) pair of each of them one
 * warp's, shared among all the warps of the grid, then a grid barrier. On
 * the CPU a BLOCK or GRID loop is a NODES loop, a THREAD or WARP loop an
 * ordinary one and the barrier nothing.
 *
 * A WARP loop in a GRID loop may be fused (sched_gpu.c, fuse_level: a
 * level's sums and the elementwise rest of the node's body, grouped by
 * output element): its body is several stores, each either of sums
 * (ilir_store_sums: the warp's lanes share them, lane 0 stores) or
 * elementwise (no reduction: lane 0 computes and stores it). Lane 0 so
 * makes every store of an iteration, in program order: an elementwise store
 * may read what an earlier store of the same iteration stored, at that very
 * element; the sums read no buffer the loop stores but at other nodes' rows
 * (dep[...]: earlier levels'); distinct (node, iteration) pairs store
 * distinct elements (sched_gpu_verify checks all three). A GRID loop that
 * ends its level (a fused level is that loop alone) leaves its grid barrier
 * to the level's.
 *
 * NODE_WARP (`bind node to warp`): a NODES loop whose nodes are shared among
 * all the warps of the grid, a node a warp at a time (the warps of a block
 * on different nodes); the THREAD and WARP loops of its body are then the
 * warp's own: a THREAD loop's iterations shared among the warp's lanes, a
 * WARP loop's iterations one after another, each sum among the lanes; each
 * followed by the warp's barrier, not the block's. On the CPU it is a NODES
 * loop as BLOCK is. */
typedef enum {
  ILIR_BIND_NONE, ILIR_BIND_BLOCK, ILIR_BIND_THREAD, ILIR_BIND_WARP, ILIR_BIND_GRID,
  ILIR_BIND_NODE_WARP
} IlirBind;

typedef enum { ILIR_SHARE_AUTO, ILIR_SHARE_NODES, ILIR_SHARE_OUTPUTS } IlirShare;

typedef struct IlirStmt IlirStmt;
typedef struct {
  IlirStmt **stmts;
  int n;
} IlirBlock;

struct IlirStmt {
  IlirStmtKind kind;
  /* LOOP */
  IlirVar *var;
  IlirExpr *lo, *hi;
  IlirLoopKind loop;
  IlirBlock body;
  /* A NODES or SERIAL loop `for t` with tile_nodes > 0 is a register-tiled
   * matrix product (sched_apply): its body starts with one or two loops
   * (products over the same J, the second reading nothing the first writes:
   * share-weights) `for j in [0, J) {
   * out[idx] = T }` where idx moves by one element per j and T is a sum of
   * terms `sum(r in [0, R)) x * y[..]`, x not reading j, y's index moving by
   * one element per j and not with t (a PACKED weight block P[r * J + j] for
   * the products of a level's nodes, a node's matrix for products inside a
   * node). After that loop the body may hold epilogue loops `for j2 in
   * [0, J) { Y[idx2] = f }` (idx2 moving by one per j2; Ys distinct and read
   * by the product at most at dependencies' rows) whose f reads each buffer
   * the tile writes only at
   * the element of the same t and j2 — the activations after a level's
   * product. It means exactly that loop nest; codegen computes it tile_nodes
   * iterations of t x tile_outs outputs at a time in registers, and runs the
   * epilogues on each such block of outputs as soon as it is stored. */
  int tile_nodes, tile_outs;
  /* A tiled level product whose weights the L2 cannot hold (sched_apply.c,
   * wide_products): they stream in from the L3 at every level, and codegen
   * prefetches them ahead in its tiles of many rows (cg_tile.c). */
  bool tile_streams;
  IlirBind bind; /* LOOP: GPU binding (IlirBind) */
  /* A tiled NODES loop: how a team's threads share it (a schedule's
   * `parallel`): AUTO by nodes or, for a level too small to give every
   * thread a full tile, by outputs (codegen decides per level); NODES always
   * by nodes; OUTPUTS always by outputs (every thread all the nodes, a share
   * of the output blocks). */
  IlirShare share;
  /* A NODES loop over part of a level (a schedule's arity groups,
   * sched_spec.c): [team_lo, team_hi) is the whole level, whose share a
   * thread takes (as of any NODES loop over it) and runs the part of it in
   * [lo, hi) — so every node stays on the thread that runs it in the loops
   * over the whole level, and no barrier is needed between them. NULL: the
   * loop's own range. */
  IlirExpr *team_lo, *team_hi;
  /* STORE */
  int buf;
  IlirExpr *index, *value;
  /* IF */
  IlirExpr *cond;
  IlirBlock then, els;
};

typedef struct {
  const char *name;      /* the kernel's symbol, e.g. ctx_treelstm_kernel */
  IlirBuf *bufs;
  int nbufs;
  int nvars;
  long max_deps;         /* K: the row width of the DEP buffer */
  bool tree;             /* the structure is a tree: its level 0, the nodes without
                            dependencies, is its leaves (sched_apply.c,
                            specialize_leaf) */
  long values_per_node;  /* V */
  IlirBlock body;
  /* where the output lives: RESULT buffer [out_buf], values [out_off, out_off +
   * out_size) of each node's row */
  int out_buf;
  long out_off, out_size;
  int levels_buf, num_deps_buf, dep_buf, values_buf, ivalues_buf;
  unsigned disabled; /* the RaProgram's RA_OPT_* bits turned off (codegen reads some) */
  int balance_threads; /* runs of at most this many threads linearize their batch in
                          balanced levels (a schedule's `balance_levels`:
                          sched_apply.c; CtxrtModelDesc.balance_threads); 0: never */
} IlirKernel;

/* The kernel's calling convention (codegen emits exactly this signature):
 *
 *   void NAME(void *const *bufs, int64_t num_nodes, int64_t num_levels,
 *             int64_t tid, int64_t nthreads, void (*barrier)(void *),
 *             void *barrier_ctx);
 *
 * bufs[i] points to the data of kernel->bufs[i], sized as IlirBufKind says.
 * RESULT and SCRATCH buffers hold num_nodes + 1 rows; the caller zeroes the
 * last row of each RESULT buffer (the absent dependency). Every thread of a
 * team runs the whole kernel: an ILIR_LOOP_NODES loop runs this thread's
 * contiguous share of its range, and each iteration of the ILIR_LOOP_LEVELS
 * loop ends at the barrier (codegen.h). */

/* ---- building ILIR (ilir_expr.c) -------------------------------------------------
 * Constructors for passes, backends and tests; everything in [a]. Integer
 * arithmetic, comparisons and logic on constants fold, and so does a select on a
 * constant condition; a load takes its type from the buffer. */
IlirExpr *ilir_const_i(CtxArena *a, long v);
IlirExpr *ilir_const_f(CtxArena *a, float v);
IlirExpr *ilir_var(CtxArena *a, IlirVar *v);
IlirExpr *ilir_arg(CtxArena *a, long which);
IlirExpr *ilir_load(CtxArena *a, const IlirKernel *k, int buf, IlirExpr *index);
IlirExpr *ilir_unary(CtxArena *a, int op, IlirExpr *x);
IlirExpr *ilir_binary(CtxArena *a, int op, IlirExpr *x, IlirExpr *y);
IlirExpr *ilir_select(CtxArena *a, IlirExpr *c, IlirExpr *x, IlirExpr *y);
IlirExpr *ilir_to_f32(CtxArena *a, IlirExpr *x);
IlirExpr *ilir_reduce(CtxArena *a, int op, IlirVar *v, IlirExpr *lo, IlirExpr *hi,
                      IlirExpr *body);

/* Index analysis. ILIR_NONLINEAR: [e] is not linear in [v] (a load whose
 * index involves v, a product of variables). */
enum { ILIR_NONLINEAR = -1 };
/* Are [a] and [b] the same expression, with [va] in [a] standing for [vb] in
 * [b] (both NULL: exactly the same)? */
bool ilir_same_expr(const IlirExpr *a, const IlirExpr *b, const IlirVar *va,
                    const IlirVar *vb);
/* The coefficient of [v] in the integer expression [e], or ILIR_NONLINEAR. */
long ilir_coef(const IlirExpr *e, const IlirVar *v);
/* The first buffer of [k] of [kind], or -1. */
int ilir_find_buf(const IlirKernel *k, IlirBufKind kind);
/* Appends [b] to [k]'s buffers (a new array in [a], so no pass may keep a
 * pointer into the old one across it); returns its index. */
int ilir_add_buf(CtxArena *a, IlirKernel *k, IlirBuf b);
/* Does [e] load from buffer [buf] anywhere? */
bool ilir_reads(const IlirExpr *e, int buf);
/* Does any statement of [b] (of [k]) load from buffer [buf] (in a value, an
 * index, a bound or a condition)? */
bool ilir_block_reads(const IlirBlock *b, int buf);
/* Does the statement tree [s] store into buffer [buf] anywhere? */
bool ilir_stores(const IlirStmt *s, int buf);
bool ilir_kernel_reads(const IlirKernel *k, int buf);
/* Does [e] mention [v] anywhere (indices of loads included)? */
bool ilir_uses(const IlirExpr *e, const IlirVar *v);
/* The terms of the float sum tree [e] (a + b + ...) into [terms] (at most
 * [cap]); returns their number, which may exceed cap. */
int ilir_sum_terms(IlirExpr *e, IlirExpr **terms, int cap);
/* Is [e] a view (sched_views.c): c ? P[..] : R[..], a float select of two
 * loads marked so (ival 1) because both indices may be computed whichever
 * arm is chosen — codegen reads it through one pointer chosen per row? */
bool ilir_is_view(const IlirExpr *e);
/* A register tile's products (IlirStmt): its leading output loops, each one
 * store of a sum of terms; the epilogue loops follow them. At most
 * ILIR_TILE_MAX_PRODUCTS of them, over at most ILIR_TILE_MAX_ROWS rows. */
enum { ILIR_TILE_MAX_PRODUCTS = 2, ILIR_TILE_MAX_ROWS = 12 };
typedef struct {
  const IlirStmt *loop[ILIR_TILE_MAX_PRODUCTS]; /* for j in [0, J) { out[idx] = T } */
  int n;
} IlirTileParts;
/* Do [products] products' register tiles of [rows] rows x [vectors] vectors
 * fit [regs] vector registers: the accumulators, a weight vector per column
 * of vectors, the broadcast x and a spare? The one budget codegen fits its
 * tiles to (cg_tile.c), the panels are sized by (sched_apply.c) and ctx
 * tune prunes with (driver_tune_space.c). */
static inline bool ilir_tile_fits(int products, int rows, int vectors, int regs) {
  return products * rows * vectors + vectors + 2 <= regs;
}
/* Is [s] a register-tiled product as IlirStmt describes? On success [*parts]
 * holds its products; the epilogue loops are s->body.stmts[parts->n ..]. */
bool ilir_tile_parts(const IlirKernel *k, const IlirStmt *s, IlirTileParts *parts);
/* ilir_tile_parts for a tile of exactly one product: [*out_loop] is its
 * output loop and [*store] the store inside. */
bool ilir_tiled_parts(const IlirKernel *k, const IlirStmt *s, const IlirStmt **out_loop,
                      const IlirStmt **store);
/* Can a GPU warp compute each iteration of the loop [s] (ILIR_BIND_WARP): is
 * its body one store of a sum over a constant range of at least 32 terms, or
 * of several such sums added (treefc's W0 h0 + W1 h1)? With [strided], also:
 * does a load of one of the sums read along its variable (coefficient 1) at
 * places 32 or more elements apart from one iteration of [s] to the next (a
 * weight row per output: one thread per output would read 32 rows at once,
 * a warp reads one row along its lanes)? */
bool ilir_warp_sum(const IlirStmt *s, bool strided);
enum { ILIR_WARP_MAX_TERMS = 8 };
/* The sums of such a loop's store into [terms] (ILIR_WARP_MAX_TERMS at
 * most); returns their number, 0 when it is not one. */
int ilir_warp_terms(const IlirStmt *s, IlirExpr **terms);
/* The same for the store [st] itself: is its value one sum over a constant
 * range of at least 32 terms, or several added (a statement of a fused
 * WARP loop, IlirBind)? */
int ilir_store_sums(const IlirStmt *st, IlirExpr **terms);
/* [e] with [v] replaced by [by]; new nodes where anything changed
 * (expressions may be shared), [e] itself where nothing did. */
IlirExpr *ilir_subst(CtxArena *a, IlirExpr *e, const IlirVar *v, IlirExpr *by);
/* A deep copy of [s] (statements and expressions; the same variables). */
IlirStmt *ilir_clone_stmt(CtxArena *a, const IlirStmt *s);
/* A deep copy of every statement of [b]. */
IlirBlock ilir_clone_block(CtxArena *a, IlirBlock b);
/* A deep copy of [s] with [v] replaced by [by] everywhere (ilir_loops.c). */
IlirStmt *ilir_subst_stmt(CtxArena *a, const IlirStmt *s, const IlirVar *v, IlirExpr *by);
IlirVar *ilir_new_var(CtxArena *a, IlirKernel *k, const char *name);
IlirStmt *ilir_loop(CtxArena *a, IlirVar *v, IlirExpr *lo, IlirExpr *hi, IlirLoopKind kind,
                    IlirBlock body);
IlirStmt *ilir_store(CtxArena *a, int buf, IlirExpr *index, IlirExpr *value);
/* Lowers [p] to a kernel in [arena]. Reports what it cannot lower to [diag]
 * and returns NULL then. */
IlirKernel *ilir_lower(CtxArena *arena, CtxDiag *diag, const RaProgram *p);

/* Loop transformations (ilir_loops.c) of a serial loop [s] over a constant
 * range; each returns false, changing nothing, where it does not apply.
 * Split: the loop as `for v.outer { for v.inner in [0, factor) }` and a loop
 * over the rest, into [*out]. Unroll: one copy of the body per iteration
 * (at most [max_copies]), into [*out]. Reorder: a perfect nest of two loops
 * around one store of independent elements with the loops swapped. */
bool ilir_split_loop(CtxArena *a, IlirKernel *k, const IlirStmt *s, long factor,
                     IlirBlock *out);
bool ilir_unroll_loop(CtxArena *a, const IlirStmt *s, long max_copies, IlirBlock *out);
bool ilir_reorder_loops(CtxArena *a, const IlirStmt *s, IlirStmt **out);

/* Writes [k] in readable form (ctx check --dump=ilir). */
void ilir_print(CtxBuf *out, const IlirKernel *k);

/* Checks types, buffer indices and variable scoping, then the bounds of
 * every access (ilir_check_bounds); an internal compiler error on [diag] and
 * false when one fails. */
bool ilir_verify(const IlirKernel *k, CtxDiag *diag);

/* Interchange (ilir_interchange.c): reductions whose reads run down columns
 * accumulate with the reduction loop outside (loops already register-tiled
 * are left alone). */
void ilir_interchange(CtxArena *arena, IlirKernel *k);

/* The simplifier (ilir_simplify.c): index arithmetic in a canonical linear
 * form with constants folded, `if`s on constants, loops that never run and
 * loops with empty bodies (but a levels loop: its barriers) removed. In
 * place; new nodes in [arena]. */
void ilir_simplify(CtxArena *arena, IlirKernel *k);
/* The integer expression [e] as the simplifier sees it: konst + the sum of
 * coefs[i] * atoms[i] (variables, loads, ... ; equal atoms merged, none with
 * a zero coefficient). Returns the number of atoms, or -1 when there are
 * more than [cap]. */
int ilir_linear(IlirExpr *e, IlirExpr **atoms, long *coefs, int cap, long *konst);

/* Bounds inference (ilir_bounds.c): infers the range of every buffer index
 * from the loops around it and checks that it lies inside its buffer, and
 * that every store writes the row of the innermost nodes loop's node. */
bool ilir_check_bounds(const IlirKernel *k, CtxDiag *diag);

#endif
