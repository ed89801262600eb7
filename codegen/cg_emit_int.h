/* cg_emit_int.h — what the emitter's files share (cg_emit.c: the kernel
 * and its statements; cg_tile.c: register-tiled products; cg_rowdot.c:
 * matrix-vector rows; cg_prefetch.c: gathered rows' prefetches;
 * cg_gpu_loops.c: loops bound to a GPU's blocks, threads and warps).
 * Private to codegen/. */
#ifndef CTX_CG_EMIT_INT_H
#define CTX_CG_EMIT_INT_H

#include "codegen/cg_int.h"
#include "codegen/cg_target.h"

typedef struct {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn; /* the body function */
  LLVMTypeRef i1, i32, i64, f32, ptr, barrier_ty;
  LLVMValueRef *bufs; /* [k->nbufs]: the body's buffer parameters */
  LLVMValueRef *vars; /* [k->nvars]: the value of each variable in scope */
  LLVMValueRef args[2]; /* num_nodes, num_levels */
  LLVMValueRef tid, nthreads, barrier, barrier_ctx; /* the team (codegen.h) */
  const IlirKernel *k;
  const CgTarget *tgt; /* what differs between targets (cg_target.h) */
  CtxDiag *diag;
  int vec_floats, vec_regs; /* the host's vector width in floats and register count */
  LLVMValueRef level; /* the innermost LEVELS loop's index; NULL outside the levels */
  const IlirBlock *level_body; /* and its body (a GRID loop that ends it: cg_gpu_loops.c) */
  bool warp_team; /* inside a NODE_WARP loop: THREAD / WARP loops are the warp's */
  /* The register tile of a level body after which, when [synced_when] holds
   * (the same on every thread), the team just met at a barrier: a barrier
   * right after it — the next tile's before its products, the level's end —
   * has nothing to wait for and is left out then (cg_tile.c). */
  const IlirStmt *synced_after;
  LLVMValueRef synced_when;
  const CgProfile *prof;    /* NULL: no instrumentation (codegen.h, "profiling") */
  LLVMValueRef prof_counters;
  int tiles; /* the tiles outlined so far (emit_tiled_outlined) */
  /* Stack rows (cg_emit.c): [k->nbufs] the nodes loop — untiled, or a
   * level's register tile — whose iterations alone write and read each level
   * scratch buffer, or NULL. While that loop is emitted, on_stack[b] holds
   * and E->bufs[b] is a block on this function's stack: node n's element at
   * idx is at (n - stack_n0) stack_w + idx - (n - levels[l]) size - stack_i0,
   * n the loop's variable stack_node (cg_buf_at). */
  const IlirStmt **stack_loop;
  bool *on_stack;
  const IlirVar *stack_node;
  LLVMValueRef stack_n0, stack_i0;
  long stack_w;
  bool failed;
} CgEmit;

/* An open loop: for iv in [lo, hi). */
typedef struct {
  LLVMBasicBlockRef pre, header, body, exit;
  LLVMValueRef lo, iv;
} CgLoop;

/* An internal compiler error about [what] ([kind]); a value of [type] to go on with. */
LLVMValueRef cg_fail(CgEmit *E, LLVMTypeRef type, const char *what, int kind);
LLVMBasicBlockRef cg_new_block(CgEmit *E, const char *name);
LLVMValueRef cg_const_i64(CgEmit *E, long v);

/* Opens the loop [L] for iv in [lo, hi) at the builder; cg_loop_close_by
 * steps it by [step], closes it and leaves the builder after it (returns the
 * last body block). */
void cg_loop_open(CgEmit *E, CgLoop *L, LLVMValueRef lo, LLVMValueRef hi, const char *name);
LLVMBasicBlockRef cg_loop_close_by(CgEmit *E, CgLoop *L, long step);
/* cg_loop_close_by with a step computed at run time. */
LLVMBasicBlockRef cg_loop_close_step(CgEmit *E, CgLoop *L, LLVMValueRef step);
LLVMBasicBlockRef cg_loop_close(CgEmit *E, CgLoop *L);
/* LLVM's hints for the loop closed by [latch]'s branch (cg_emit.c). */
void cg_loop_hints(CgEmit *E, LLVMBasicBlockRef latch, bool vectorize, int interleave,
                   bool unroll);
/* The sigmoids, tanhs and exps in [e]. */
int cg_transcendentals(const IlirExpr *e);

/* [v] takes the value [val] in what is emitted next; false after an ICE. */
bool cg_bind_var(CgEmit *E, const IlirVar *v, LLVMValueRef val);
/* [v]'s name for LLVM values ("v" when it has none). */
const char *cg_var_name(const IlirVar *v);

LLVMValueRef cg_emit_expr(CgEmit *E, const IlirExpr *e);
/* The element a view reads (ilir_is_view), through the row's pointer
 * chosen once (cg_emit.c). */
LLVMValueRef cg_view_ptr(CgEmit *E, const IlirExpr *e);
void cg_emit_store(CgEmit *E, const IlirStmt *s);
/* The address of element [idx] (i64) of buffer [buf], of [elem]s: in its
 * block on the stack while its loop runs (CgEmit, stack rows). */
LLVMValueRef cg_buf_at(CgEmit *E, int buf, LLVMValueRef idx, LLVMTypeRef elem);
/* A load of one [elem] of buffer [buf] from [at] (an address in it), with
 * what the target knows of the buffer (a read-only one is invariant). */
LLVMValueRef cg_load_at(CgEmit *E, int buf, LLVMTypeRef elem, LLVMValueRef at);
/* How many elements cg_buf_at's address of [buf] moves when node variable
 * [n] moves by one and the index by [didx] with it, or ILIR_NONLINEAR where
 * that is not a constant. */
long cg_buf_node_step(const CgEmit *E, int buf, const IlirVar *n, long didx);
/* The stack blocks of the loop [s]'s buffers (CgEmit.stack_loop), [rows] x
 * [w] floats each (w = 0: one row of the buffer's own size), for node
 * variable [s->var]; the caller sets stack_n0 and stack_i0. False when it
 * has none. cg_close_stack_rows gives the buffers their rows back. */
bool cg_open_stack_rows(CgEmit *E, const IlirStmt *s, int rows, long w);
void cg_close_stack_rows(CgEmit *E, const IlirStmt *s);
/* A stack buffer of [floats] floats, 64-byte aligned, made at the entry of
 * the function being emitted. */
LLVMValueRef cg_entry_buffer(CgEmit *E, long floats, const char *name);
void cg_emit_block(CgEmit *E, const IlirBlock *blk);
/* sum(coefs[i] * atoms[i]) + konst over the atoms [use] says, as an i64
 * (the terms of ilir_linear). */
LLVMValueRef cg_linear_sum(CgEmit *E, IlirExpr **atoms, const long *coefs, int n,
                           const bool *use, long konst);

/* This thread's contiguous share of the node range [*lo, *hi). */
void cg_thread_share(CgEmit *E, LLVMValueRef *lo, LLVMValueRef *hi);
/* For a nodes loop with a team range [s] (IlirStmt.team_lo): the part of
 * this thread's share of [team_lo, team_hi) that lies in [*lo, *hi). */
void cg_team_share(CgEmit *E, const IlirStmt *s, LLVMValueRef *lo, LLVMValueRef *hi);
/* A barrier of the team, unless [skip] (NULL: never skipped). */
void cg_emit_barrier(CgEmit *E, LLVMValueRef skip);

/* What cg_emit_outlined's function holds: emitted by [T], a copy of the
 * emitter bound to the function's parameters ([extra] the caller's extra
 * values there); returns the value the function returns. */
typedef LLVMValueRef (*CgOutlinedBody)(CgEmit *T, LLVMValueRef *extra, void *arg);
/* A call of a new internal noinline function [name] that takes the
 * kernel's buffers, the team, the level and the loop variables in scope,
 * then [extra], and holds what [body] emits (cg_emit.c). */
LLVMValueRef cg_emit_outlined(CgEmit *E, const char *name, LLVMTypeRef ret, LLVMValueRef synced,
                              LLVMValueRef *extra, int nextra, CgOutlinedBody body, void *arg);

/* The panel width of a PACKED copy (ilir.h, PACKED-PANELS). */
long cg_pack_panel(const IlirPack *pk);

/* Is [s] the statement right after [prev] in the level body being emitted? */
bool cg_follows(const CgEmit *E, const IlirStmt *prev, const IlirStmt *s);
/* The register-tiled product [s] (cg_tile.c). */
void cg_emit_tiled(CgEmit *E, const IlirStmt *s);
/* Prefetches the block [from, from + count) of the gathered rows the
 * register tile [s] over nodes [lo, hi) reads (cg_prefetch.c). */
void cg_prefetch_tile_rows(CgEmit *E, const IlirStmt *s, LLVMValueRef lo, LLVMValueRef hi,
                           LLVMValueRef from, long count);
/* The loop [s] when it is a matrix-vector product over contiguous rows,
 * vl outputs at a time (cg_rowdot.c); false, nothing emitted, otherwise. */
bool cg_emit_row_dots(CgEmit *E, const IlirStmt *s);

/* A prefetch of the cache line at [at] into L1, for reading (a plain
 * address: it may point past a buffer, a prefetch does not fault). */
void cg_emit_prefetch(CgEmit *E, LLVMValueRef at);
/* Before statement [i] of an iteration (node [iv]) of the nodes loop [s]:
 * prefetches of a part of the rows the next node gathers (cg_prefetch.c). */
void cg_prefetch_next_rows(CgEmit *E, const IlirStmt *s, LLVMValueRef iv, int i);

/* The loop [s] bound to GPU blocks, threads or warps, or a GRID loop, on a
 * target with special registers (cg_gpu_loops.c). */
void cg_emit_bound_loop(CgEmit *E, const IlirStmt *s);
/* Must every level end at the grid barrier (a GPU target and a kernel with
 * a GRID loop)? (cg_gpu_loops.c) */
bool cg_grid_level(const CgEmit *E);

#endif
