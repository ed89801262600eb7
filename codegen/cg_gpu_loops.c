/* cg_gpu_loops.c — the loops a GPU schedule binds to the grid's blocks,
 * threads and warps (ilir.h, IlirBind), on a target that has them
 * (CgTarget.sreg: NVPTX): block shares, thread strides, warp-shuffle sums and
 * the GRID loops of a fused level. The CPU backend runs the same bound loops
 * as ordinary loops (cg_emit.c, emit_loop). */
#include "codegen/cg_emit_int.h"

enum { WARP_LANES = 32 };

/* tid.x's lane in its warp, and (in *warp) the warp's index in the block. */
static LLVMValueRef warp_lane(CgEmit *E, LLVMValueRef *warp) {
  LLVMValueRef tid = E->tgt->sreg(E->b, E->mod, CG_SREG_TID);
  *warp = LLVMBuildLShr(E->b, tid, cg_const_i64(E, 5), "warp");
  return LLVMBuildAnd(E->b, tid, cg_const_i64(E, WARP_LANES - 1), "lane");
}

/* This [lane]'s part of the sum [e] = sum(r in [lo, hi)) x of a WARP loop
 * (emit_warp_store): the terms lo + lane, lo + lane + 32, ... Where the
 * range is a multiple of 32 terms the loop counts the lane's terms, a
 * constant, so LLVM unrolls it and the lane's loads are in flight together
 * (from the lane up to hi, the count depends on the lane). */
static LLVMValueRef lane_part(CgEmit *E, const IlirExpr *e, LLVMValueRef lane) {
  long span = e->hi->ival - e->lo->ival; /* constants: ilir_warp_sum */
  bool whole = span % WARP_LANES == 0;
  LLVMValueRef lo = LLVMBuildAdd(E->b, cg_emit_expr(E, e->lo), lane, "");
  CgLoop L;
  if (whole) cg_loop_open(E, &L, cg_const_i64(E, 0), cg_const_i64(E, span / WARP_LANES), "k");
  else cg_loop_open(E, &L, lo, cg_emit_expr(E, e->hi), cg_var_name(e->var));
  LLVMPositionBuilderBefore(E->b, LLVMGetNextInstruction(L.iv));
  LLVMValueRef acc = LLVMBuildPhi(E->b, E->f32, "acc");
  LLVMPositionBuilderAtEnd(E->b, L.body);
  LLVMValueRef r = whole ? LLVMBuildAdd(E->b, lo, LLVMBuildMul(E->b, L.iv, cg_const_i64(E, WARP_LANES), ""), "")
                         : L.iv;
  LLVMValueRef x = cg_bind_var(E, e->var, r) ? cg_emit_expr(E, e->a) : LLVMGetUndef(E->f32);
  /* a product term and its addition may fuse (fma.rn.f32) */
  if (LLVMIsAInstruction(x) && LLVMGetInstructionOpcode(x) == LLVMFMul)
    LLVMSetFastMathFlags(x, LLVMFastMathAllowContract);
  LLVMValueRef next = LLVMBuildFAdd(E->b, acc, x, "");
  LLVMSetFastMathFlags(next, LLVMFastMathAllowContract);
  LLVMBasicBlockRef end = cg_loop_close_by(E, &L, whole ? 1 : WARP_LANES);
  if (!E->failed) E->vars[e->var->id] = NULL;
  LLVMValueRef vals[2] = {LLVMConstReal(E->f32, 0), next};
  LLVMBasicBlockRef from[2] = {L.pre, end};
  LLVMAddIncoming(acc, vals, from, 2);
  return acc;
}

/* Code from here runs on [lane] 0 alone, up to lane0_end (its join block). */
static LLVMBasicBlockRef lane0_begin(CgEmit *E, LLVMValueRef lane) {
  LLVMBasicBlockRef st = cg_new_block(E, "lane0"), done = cg_new_block(E, "lane0.done");
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, lane, cg_const_i64(E, 0), ""), st, done);
  LLVMPositionBuilderAtEnd(E->b, st);
  return done;
}

static void lane0_end(CgEmit *E, LLVMBasicBlockRef done) {
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, done);
}

/* The store [s] of sums of an iteration of a WARP loop (ilir_store_sums:
 * out[idx] = one or several sums added) with this thread's [lane] of the
 * warp: the lane adds its part of each sum (lane_part); the target's
 * warp_sum folds the lanes' parts; lane 0 stores. */
static void emit_warp_store(CgEmit *E, const IlirStmt *s, LLVMValueRef lane) {
  IlirExpr *terms[ILIR_WARP_MAX_TERMS];
  LLVMValueRef part = NULL;
  int nt = ilir_store_sums(s, terms);
  for (int t = 0; t < nt && !E->failed; t++) {
    LLVMValueRef p = lane_part(E, terms[t], lane);
    part = part ? LLVMBuildFAdd(E->b, part, p, "") : p;
  }
  if (!part) {
    cg_fail(E, E->f32, "a warp loop without sums, buffer", s->buf);
    return;
  }
  LLVMValueRef sum = E->tgt->warp_sum(E->b, E->mod, part);
  LLVMBasicBlockRef done = lane0_begin(E, lane);
  LLVMValueRef idx = cg_emit_expr(E, s->index);
  LLVMBuildStore(E->b, sum, LLVMBuildInBoundsGEP2(E->b, E->f32, E->bufs[s->buf], &idx, 1, ""));
  lane0_end(E, done);
}

/* An iteration of a WARP loop [w] of a GRID loop, one store of sums or
 * fused (ilir.h, IlirBind): each store of sums an emit_warp_store, each
 * elementwise one by lane 0, which stored the sums and elements it reads
 * (program order; the verifier saw to it). */
static void emit_warp_stores(CgEmit *E, const IlirStmt *w, LLVMValueRef lane) {
  for (int i = 0; i < w->body.n && !E->failed; i++) {
    const IlirStmt *s = w->body.stmts[i];
    IlirExpr *terms[ILIR_WARP_MAX_TERMS];
    if (ilir_store_sums(s, terms) > 0) {
      emit_warp_store(E, s, lane);
      continue;
    }
    LLVMBasicBlockRef done = lane0_begin(E, lane);
    cg_emit_store(E, s);
    lane0_end(E, done);
  }
}

/* Must every level end at the grid barrier (a GPU target, a kernel with a
 * GRID loop)? Then a level's sums run on every block, not on block 0 alone,
 * so a level of one node cannot skip the barrier before them, even in a
 * chain of single nodes — nor the leaves' level before the first of them. */
bool cg_grid_level(const CgEmit *E) { return E->tgt->sreg && cg_gpu_all_blocks(E->k); }

/* This warp's index among all the grid's warps (block b's warp w is b *
 * warps + w), their count into [*nwarps], and the lane into [*lane]. */
static LLVMValueRef grid_warp(CgEmit *E, LLVMValueRef *nwarps, LLVMValueRef *lane) {
  const CgTarget *t = E->tgt;
  LLVMValueRef warps = cg_const_i64(E, t->block_threads / WARP_LANES), warp;
  *lane = warp_lane(E, &warp);
  *nwarps = LLVMBuildMul(E->b, t->sreg(E->b, E->mod, CG_SREG_NCTAID), warps, "nwarps");
  return LLVMBuildAdd(E->b, LLVMBuildMul(E->b, t->sreg(E->b, E->mod, CG_SREG_CTAID), warps, ""),
                      warp, "gwarp");
}

/* A GRID loop (ilir.h) over the nodes [lo, hi): for each of its WARP loops
 * (I iterations from i0), the pairs p = node * I + i in [0, (hi - lo) I)
 * taken by the grid's warps in turn — warp w of block b is the grid's warp
 * b * warps + w — each emit_warp_stores; then the grid barrier, unless the
 * loop ends its level, whose grid barrier follows at once (cg_grid_level): a
 * fused level (sched_gpu.c, fuse_level) waits at one barrier. Every lane of
 * a warp runs the same pairs. */
static void emit_grid_loop(CgEmit *E, const IlirStmt *s) {
  LLVMValueRef lo = cg_emit_expr(E, s->lo), hi = cg_emit_expr(E, s->hi);
  LLVMValueRef nwarps, lane, gwarp = grid_warp(E, &nwarps, &lane);
  LLVMValueRef nodes = LLVMBuildSub(E->b, hi, lo, "");
  for (int k = 0; k < s->body.n && !E->failed; k++) {
    const IlirStmt *w = s->body.stmts[k];
    LLVMValueRef I = cg_const_i64(E, w->hi->ival - w->lo->ival);
    CgLoop L;
    cg_loop_open(E, &L, gwarp, LLVMBuildMul(E->b, nodes, I, ""), "pair");
    LLVMValueRef n = LLVMBuildAdd(E->b, lo, LLVMBuildSDiv(E->b, L.iv, I, ""), "");
    LLVMValueRef i = LLVMBuildAdd(E->b, cg_emit_expr(E, w->lo), LLVMBuildSRem(E->b, L.iv, I, ""), "");
    if (cg_bind_var(E, s->var, n) && cg_bind_var(E, w->var, i)) emit_warp_stores(E, w, lane);
    cg_loop_close_step(E, &L, nwarps);
    if (!E->failed) E->vars[w->var->id] = NULL;
  }
  if (!E->failed) E->vars[s->var->id] = NULL;
  const IlirBlock *level = E->level_body;
  bool ends_level = level && level->n > 0 && level->stmts[level->n - 1] == s;
  if (!E->failed && !ends_level) cg_emit_barrier(E, NULL);
}

/* A loop bound to GPU blocks, threads or warps (ilir.h, IlirBind) on a
 * target that has them: a BLOCK loop runs this block's contiguous share of
 * its nodes (as thread_share, by block index), a THREAD loop the iterations
 * lo + tid.x + k * block_threads, a WARP loop the iterations lo + warp + k *
 * warps (warp = tid.x / 32; each iteration's sum shared among the warp's
 * lanes, emit_warp_store), then the block's barrier. Every lane of a warp
 * runs the same iterations, so all of them reach the shuffles. A NODE_WARP
 * loop runs the nodes lo + gwarp + k * nwarps (the grid's warp gwarp, as in
 * emit_grid_loop); in its body a THREAD loop runs the iterations lo + lane +
 * 32 k, a WARP loop every iteration on the whole warp, each then the warp's
 * barrier (a block's warps are on different nodes: no block barrier there).
 * There a lane's own sums (emit_reduce) are loops not unrolled: unrolled,
 * with the lanes loop's few iterations a lane (8 at H = 256), ptxas took 255
 * registers for dagrnn's and spilled; not unrolled, 62 and no spill. */
static void emit_bound_loop(CgEmit *E, const IlirStmt *s) {
  const CgTarget *t = E->tgt;
  LLVMValueRef lo = cg_emit_expr(E, s->lo), hi = cg_emit_expr(E, s->hi), lane = NULL;
  LLVMValueRef nwarps = NULL;
  long step = 1;
  bool team = E->warp_team;
  if (s->bind == ILIR_BIND_WARP) {
    LLVMValueRef warp;
    lane = warp_lane(E, &warp);
    if (!team) {
      lo = LLVMBuildAdd(E->b, lo, warp, "");
      step = t->block_threads / WARP_LANES;
    }
  } else if (s->bind == ILIR_BIND_NODE_WARP) {
    LLVMValueRef own_lane;
    lo = LLVMBuildAdd(E->b, lo, grid_warp(E, &nwarps, &own_lane), "");
    E->warp_team = true;
  } else if (team) { /* THREAD: the warp's lanes */
    LLVMValueRef warp;
    lo = LLVMBuildAdd(E->b, lo, warp_lane(E, &warp), "");
    step = WARP_LANES;
  } else if (s->bind == ILIR_BIND_BLOCK) {
    LLVMValueRef tid = E->tid, n = E->nthreads;
    E->tid = t->sreg(E->b, E->mod, CG_SREG_CTAID);
    E->nthreads = t->sreg(E->b, E->mod, CG_SREG_NCTAID);
    cg_thread_share(E, &lo, &hi);
    E->tid = tid, E->nthreads = n;
  } else {
    lo = LLVMBuildAdd(E->b, lo, t->sreg(E->b, E->mod, CG_SREG_TID), "");
    step = t->block_threads;
  }
  CgLoop L;
  cg_loop_open(E, &L, lo, hi, cg_var_name(s->var));
  if (cg_bind_var(E, s->var, L.iv)) {
    if (lane) emit_warp_store(E, s->body.stmts[0], lane);
    else cg_emit_block(E, &s->body);
  }
  if (nwarps) cg_loop_close_step(E, &L, nwarps);
  else cg_loop_close_by(E, &L, step);
  E->warp_team = team;
  bool rows = s->bind == ILIR_BIND_THREAD || s->bind == ILIR_BIND_WARP;
  if (rows && !E->failed) (team ? t->warp_barrier : t->block_barrier)(E->b, E->mod);
  if (!E->failed) E->vars[s->var->id] = NULL;
}

/* Dispatch of cg_emit_bound_loop (cg_emit_int.h). */
void cg_emit_bound_loop(CgEmit *E, const IlirStmt *s) {
  if (s->bind == ILIR_BIND_GRID) emit_grid_loop(E, s);
  else emit_bound_loop(E, s);
}
