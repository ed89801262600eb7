/* sched.h — schedules: the directives of a `schedule` block, checked against
 * a model and recorded as plain data.
 *
 * A schedule names what to do, not how: dynamic batching, leaf
 * specialization, fusion, loop splits and tiles, vectorization, unrolling,
 * parallel loops, persistence, caching and GPU bindings (docs/language.md,
 * "Schedules"). sched_check resolves every name a directive uses — the
 * model's operators (the `let`s of its recursive functions), their axes
 * (`node`, the index variables of the operator, and the `.outer`/`.inner`
 * halves of an axis that an earlier split or tile made), its parameters —
 * and checks every argument's form, reporting errors at the directive in the
 * schedule file with a note at the definition in the model. The result is
 * data that the scheduling passes apply to ILIR.
 */
#ifndef CTX_SCHED_H
#define CTX_SCHED_H

#include "ilir/ilir.h"

typedef enum {
  SCHED_DYNAMIC_BATCH, SCHED_SPECIALIZE, SCHED_FUSE, SCHED_HOIST, SCHED_DENSE,
  SCHED_HOIST_INVARIANT, SCHED_HOIST_PRODUCTS, SCHED_HOIST_LOCAL, SCHED_DIRECT_RESULTS,
  SCHED_LEAF_VIEWS, SCHED_ALL_DEPS, SCHED_SHARE_WEIGHTS,
  SCHED_SPLIT, SCHED_TILE, SCHED_REORDER, SCHED_VECTORIZE, SCHED_UNROLL,
  SCHED_UNROLL_RECURSION, SCHED_PARALLEL, SCHED_PERSIST, SCHED_CACHE, SCHED_BIND,
  SCHED_REFACTOR_RECURSION, SCHED_BALANCE_LEVELS
} SchedVerb;

enum { SCHED_MAX_ARGS = 8 };
/* arities `specialize n.num_children == K` may name (the runtime's
 * CTXRT_MAX_GROUPS); `parallel` directives in one schedule */
enum { SCHED_MAX_ARITIES = 8, SCHED_MAX_PARALLEL = 16 };

typedef struct {
  SchedVerb verb;
  CtxSpan span;
  const RaOp *op;                      /* the `OP:` target, or NULL */
  const RaOp *ops[SCHED_MAX_ARGS];     /* fuse / hoist / dense */
  int nops;
  const char *axes[SCHED_MAX_ARGS];    /* split, tile, reorder, vectorize, unroll,
                                          parallel, bind (in order) */
  int naxes;
  long factors[SCHED_MAX_ARGS];        /* split, tile, unroll, unroll_recursion */
  int nfactors;
  int params[SCHED_MAX_ARGS];          /* cache: RaProgram parameter indices */
  int nparams;
  const char *where[SCHED_MAX_ARGS];   /* cache: "shared" / "registers"; bind: "block" /
                                          "thread" per axis */
} SchedDirective;

typedef enum { SCHED_CPU, SCHED_CUDA } SchedTarget;

typedef struct {
  const char *model;
  const RaProgram *program; /* the model it was checked against */
  SchedTarget target;
  SchedDirective *dirs;
  int ndirs;
} Schedule;

/* Checks the schedule block [item] against [p] (built from the model whose
 * definitions [model_file] holds). Returns the schedule, or NULL after
 * reporting errors to [diag]. */
Schedule *sched_check(CtxArena *arena, CtxDiag *diag, const AstItem *item,
                      const RaProgram *p);

/* ---- applying a schedule (sched_apply.c) ------------------------------------------ */

/* The transformations to apply to a lowered kernel. */
typedef struct {
  bool specialize_leaf;        /* the leaf level as a loop of its own */
  bool hoist_invariant;        /* operators the same at every node: once per run */
  bool hoist_products;         /* products with every dependency's result: per node */
  bool dense_scratch;          /* operators' rows for one level, not every node */
  bool interchange;            /* untiled column-reading reductions by rows (ilir.h) */
  bool fuse_epilogue;          /* elementwise statements after a tile into the tile */
  bool all_deps;             /* sums over dependencies over all K slots (all-deps) */
  bool share_weights;          /* tiles reading the same weights as one (share-weights) */
  bool hoist_local;            /* node-local operators before the levels (hoist-local) */
  bool direct_results;         /* returned operators in their result rows (direct-results) */
  bool leaf_views;             /* leaves' parameter rows read in place (leaf-views) */
  int tile_nodes, tile_outs;   /* register tiles of level products; 0: none */
  int row_tile_rows, row_tile_outs; /* register tiles of products inside a node (MV-RNN's
                                  P = WM [A; B]): rows x outputs; 0: tile_nodes x tile_outs */
  int vec_floats, vec_regs;    /* the vector registers of the CPU the kernel is for
                                  (codegen.h, cg_cpu_vectors); 0: this host's */
  long l2_bytes;               /* its L2 cache per core, which levels' weights that
                                  fill or exceed take wide tiles (sched_apply.c,
                                  wide_products); 0: this host's (`--l2`) */
  const char *row_axes[2];     /* set by sched_apply: the rows' and outputs' axes of the
                                  first such product tiled (--dump=schedule names them) */
  int unroll_recursion;        /* levels loops in phases of up to this many levels,
                                  no barrier inside a phase (sched_recur.c); 0, 1: none */
  bool refactor_recursion;     /* products with dependencies' results as one product
                                  per node, read by the parent (sched_recur.c) */
  bool refactored_by_place;    /* set by sched_apply: refactor_recursion made only
                                  products that parents read at one place each, of at
                                  least two places (treefc's W_0 h0, W_1 h1): no more
                                  multiply-adds than without it */
  bool balance_levels;         /* runs whose threads' shares of the level products'
                                  weights exceed the L2 (one thread: fill it)
                                  linearize in balanced levels
                                  (sched_apply.c, balance_threads; balance-levels) */
  /* from a schedule (sched_plan.c): its directives, and per buffer of the
   * kernel the operators its hoist, dense and tile directives name (NULL:
   * every operator) */
  const Schedule *schedule;
  bool *hoist_only, *dense_only, *tile_only;
  int *tile_nb, *tile_no; /* per buffer: its `OP: tile` sizes (0: tile_nodes/tile_outs) */
  int nsets;              /* the buffers those sets cover (later passes add buffers) */
  /* `specialize n.num_children == K` (n.num_preds for DAGs): each level's
   * nodes of exactly arity[i] dependencies in a loop of their own, with the
   * arity a constant (sched_spec.c); in the schedule's order */
  long arity[SCHED_MAX_ARITIES];
  int narity;
  /* `[OP:] parallel AXIS`: how the threads share the level products of OP
   * (NULL: every level product), by nodes (axis "node") or by outputs along
   * AXIS; without one, codegen's automatic choice (IlirShare) */
  struct {
    const RaOp *op;
    const char *axis;
    CtxSpan span;
  } parallel[SCHED_MAX_PARALLEL];
  int nparallel;
  bool failed; /* the schedule asked for what cannot be done (reported) */
} SchedPlan;

/* The default CPU schedule's plan, without the optimizations [disabled]
 * (RA_OPT_* bits), for a CPU of [vec_floats] x [vec_regs] vector registers
 * (codegen.h, cg_cpu_vectors; 0: this host's), which it records. Its register
 * tile of level products has 64 outputs and as many rows as those registers
 * hold with the whole block: 6 with AVX-512's 32 registers of 16 floats; 4
 * where the block does not fit 4 rows (AVX2), which codegen narrows and
 * regrows itself (cg_tile.c, tile_vectors). */
SchedPlan sched_default_plan(unsigned disabled, int vec_floats, int vec_regs);
/* This host's vector registers as codegen counts them (cg_emit.c,
 * cg_features_vectors): 32 of 16 floats with AVX-512, 16 of 8 with AVX, 16
 * of 4 otherwise; for plans that do not name them (vec_floats 0). */
void sched_host_vectors(int *floats, int *regs);
/* This host's L2 cache per core in bytes (sysconf, else sysfs); 0 when
 * neither says. */
long sched_host_l2(void);

/* The plan of the checked schedule [s] for the CPU (sched_plan.c); with
 * [disabled] for what is not a schedule's choice. Directives it cannot apply
 * are reported to [diag]: errors set plan.failed, warnings say what is not
 * applied. */
SchedPlan sched_schedule_plan(CtxDiag *diag, const Schedule *s, unsigned disabled);

/* Applies [plan] to [k] in place (new nodes in [arena]) and verifies the
 * result; false after reporting errors (a schedule's directive that does not
 * apply) or an internal compiler error to [diag]. */
bool sched_apply(CtxArena *arena, CtxDiag *diag, IlirKernel *k, SchedPlan *plan);

/* ---- printing a schedule (sched_print.c) ------------------------------------------ */

/* Prints the cpu schedule [plan] applies to [p] as a `.sched` file that,
 * given back with -s (and the same --disable), plans the same kernel. */
void sched_print(CtxBuf *out, const RaProgram *p, const SchedPlan *plan);

/* Prints [d] (of [s]) in the form sched_check reads, without a newline. */
void sched_print_directive(CtxBuf *out, const Schedule *s, const SchedDirective *d);

/* ---- the CUDA target (sched_gpu.c) ------------------------------------------------- */

enum { SCHED_MAX_CACHE = 16 };

/* How a block's threads share an operator's output rows (`bind i to ...`). */
typedef enum { SCHED_ROWS_AUTO, SCHED_ROWS_THREAD, SCHED_ROWS_WARP, SCHED_ROWS_GRID } SchedRowBind;

/* What a CUDA schedule adds to the shared passes' plan. */
typedef struct {
  bool bind_blocks;               /* nodes to blocks, rows to threads (else nodes to
                                     threads) */
  bool bind_warps;                /* with bind_blocks: nodes to the grid's warps
                                     instead, rows to the warp's lanes */
  SchedRowBind rows;              /* a block's rows: warps for sums where that reads
                                     rows along the lanes (auto), or as the schedule says */
  int cache[SCHED_MAX_CACHE];     /* RaProgram parameters to cache in shared memory */
  int ncache;
  CtxSpan cache_span;             /* the cache directive (warnings) */
  long shared_limit;              /* shared memory per block, bytes */
  bool fuse;                      /* a level's elementwise rest into its grid loop
                                     (--disable=grid-fusion turns it off) */
} SchedGpuPlan;

/* Shared memory per block of the GPU architecture [arch] ("sm_90"; NULL:
 * sm_90), bytes. */
long sched_gpu_shared_limit(const char *arch);

/* The plan of the checked cuda schedule [s] (NULL: the default CUDA
 * schedule) for the shared passes, and its GPU part into [*gpu]; directives
 * the cuda backend does not apply draw warnings on [diag]. */
SchedPlan sched_cuda_plan(CtxDiag *diag, const Schedule *s, unsigned disabled,
                          SchedGpuPlan *gpu);

/* Binds the loops of [k] (after sched_apply) to blocks, threads and warps,
 * moves a level's sums into loops over the whole grid (new statements in
 * [arena]) and marks the parameters cached in shared memory as [gpu] says,
 * then checks the result with sched_gpu_verify. False after an error
 * reported to [diag]. */
bool sched_gpu_apply(CtxArena *arena, CtxDiag *diag, IlirKernel *k, const SchedGpuPlan *gpu);

/* Checks that [k]'s bound loops are sound (sched_gpu.c: no thread reads what
 * another writes inside a phase between barriers); an internal compiler error
 * on [diag] and false when not. */
bool sched_gpu_verify(const IlirKernel *k, CtxDiag *diag);

#endif
