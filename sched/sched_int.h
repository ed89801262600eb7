/* sched_int.h — declarations shared by the files of sched/. */
#ifndef CTX_SCHED_INT_H
#define CTX_SCHED_INT_H

#include "sched/sched.h"

/* Clears flags[b] of every buffer b accessed other than at the row of the
 * innermost nodes loop's node n: n * S + x, S the buffer's size, x not
 * reading n (sched_apply.c). */
void sched_keep_node_rows(const IlirKernel *k, bool *flags);

/* Rewrites the index of every access to a buffer b with flags[b] (loads,
 * and stores when into such a buffer) as at(R, index, b); R->node and
 * R->level are the innermost nodes and levels loops' variables there.
 * Expressions may be shared, so new nodes are made where anything changes. */
typedef struct SchedRewrite SchedRewrite;
struct SchedRewrite {
  CtxArena *a;
  IlirKernel *k;
  const bool *flags;
  IlirExpr *(*at)(SchedRewrite *R, IlirExpr *index, int buf);
  const IlirVar *node, *level;
};
void sched_rewrite_accesses(SchedRewrite *R, IlirBlock *b);

/* Hoisting of node-independent operators into a prologue that runs once per
 * inference (sched_invariant.c); only the buffers of [only] (NULL: any). */
void sched_hoist_invariant(CtxArena *a, IlirKernel *k, const bool *only);

/* A schedule's directives (sched_plan.c): the buffers its hoist, dense and
 * tile directives name, into [plan] (before the passes); its loop directives
 * applied to [k] (after hoisting, before tiling), false after reporting one
 * that does not apply. */
void sched_schedule_sets(CtxArena *a, const IlirKernel *k, SchedPlan *plan);
bool sched_schedule_loops(CtxArena *a, CtxDiag *diag, IlirKernel *k, const SchedPlan *plan);

/* A product with one dependency's result computed once per node, at the end
 * of the node's level (hoist-products, refactor_recursion):
 *   for i in [0, cols) { out[n * cols + i] = sum(r in [0, rows))
 *                          param[off + i * stride + r] * res[n * row + roff + r] } */
typedef struct {
  int param, res, out; /* W's buffer, the results' buffer, P's */
  long off, stride;    /* W[off + i * stride + r] */
  long rows, cols;     /* R, I */
  long row, roff;      /* res[m * row + roff + r] */
} SchedProduct;

/* [e]'s value with the variables [i] and [r] at 0, when [e] is a linear index
 * of constants and those two variables only (sched_apply.c). */
bool sched_offset_of(const IlirExpr *e, const IlirVar *i, const IlirVar *r, long *out);

/* P's buffer for [p] (named W.SUFFIXn): one of [made] (SchedProduct *) with
 * the same product, or a new RESULT buffer of [k], recorded in [made]. */
int sched_product_buffer(CtxArena *a, IlirKernel *k, CtxVec *made, const SchedProduct *p,
                         const char *suffix);

/* The loop of [p] for node [n]. */
IlirStmt *sched_product_loop(CtxArena *a, IlirKernel *k, const SchedProduct *p, IlirVar *n);

/* Appends the loop computing each product of [made] to every node loop of
 * [k]'s levels loops, after the node's other statements. */
void sched_add_products(CtxArena *a, IlirKernel *k, const CtxVec *made);

/* Is buffer [b] in [set] (one of plan's sets; NULL: every buffer)? Buffers
 * that passes add after the sets were made are in no set. */
bool sched_in_set(const SchedPlan *plan, const bool *set, int b);

/* Sums over a node's dependencies of their RESULT/SCRATCH rows run over all
 * K slots, absent ones reading the zero row (sched_deps.c, all-deps). */
void sched_all_deps(CtxArena *a, IlirKernel *k);

/* Consecutive register tiles over the same nodes whose products read the
 * same PACKED weights, as one tile of two products (sched_share.c,
 * share-weights; after fuse-epilogue). */
void sched_share_weights(CtxArena *a, IlirKernel *k);

/* Node-local operators (reading only parameters and their node's inputs)
 * moved out of a levels loop over all levels into a loop over all nodes
 * before it (sched_local.c, hoist-local). */
void sched_hoist_local(CtxArena *a, IlirKernel *k);

/* Returned operators computed in their function's result rows instead of
 * copied there (sched_results.c, direct-results). */
void sched_direct_results(CtxArena *a, IlirKernel *k);
/* Is every register tile in [b] one codegen takes (ilir_tile_parts)? */
bool sched_tiles_ok(const IlirKernel *k, const IlirBlock *b);

/* A leaf's copy of a parameter row into its result row dropped, its parents
 * reading the parameter's row in its place (sched_views.c, leaf-views). */
void sched_leaf_views(CtxArena *a, IlirKernel *k);

/* The recursion primitives (sched_recur.c): unroll_recursion's PHASES buffer
 * for phases of up to [levels] levels; refactor_recursion's products per node,
 * false after reporting (at the directive of [plan]'s schedule) that there is
 * nothing to refactor; sets plan->refactored_by_place. */
void sched_unroll_recursion(CtxArena *a, IlirKernel *k, int levels);
bool sched_refactor_recursion(CtxArena *a, CtxDiag *diag, IlirKernel *k, SchedPlan *plan);
/* A schedule's `[OP:] parallel AXIS` directives on the register tiles of
 * [k] (sched_plan.c; after tiling and fusion): how the threads share them
 * (IlirStmt.share); false after reporting one that does not apply. */
bool sched_schedule_shares(CtxArena *a, CtxDiag *diag, IlirKernel *k, const SchedPlan *plan);

/* `specialize n.num_children == K` (sched_spec.c): each levels loop's node
 * loops split by the linearizer's arity groups, the arity a constant in
 * each group's copy; ARITY_END buffers added to [k]. */
void sched_specialize_arity(CtxArena *a, IlirKernel *k, const SchedPlan *plan);

/* The ARITY_END buffer of a linearizer group (ilir.h), added to [k]: the
 * nodes with [key] dependencies, or for key = -1 - p those that are
 * dependency p of their parent. */
int sched_group_end(CtxArena *a, IlirKernel *k, long key);

/* The body of the nodes loop [nodes] for nodes without dependencies (a
 * tree's leaves, its level 0), from its general body (sched_spec.c): the
 * number of dependencies is 0, so the loops and sums over them vanish, an
 * operator that is then zero (childsum's sum of the children's h) reads as
 * zero, and so do the products of weights with it. */
IlirBlock sched_no_deps_body(CtxArena *a, const IlirKernel *k, const IlirStmt *nodes);

#endif
