/* cg_emit.c — ILIR to LLVM IR: one kernel, one function.
 *
 * The exported function has ilir.h's signature; it loads bufs[i] once and
 * calls an internal, always-inlined body function whose buffer parameters
 * are `noalias` (every buffer is a distinct allocation), so after inlining
 * LLVM knows stores to result rows do not clobber parameters or indices.
 *
 * Loops are a header with an i64 phi (for var in [lo, hi), bounds evaluated
 * once before the loop), reductions the same with a float phi accumulator.
 * `select` and `if` branch: the arm not taken may load at an index that is
 * meaningless for the node (a word id at an internal node), so both arms are
 * never evaluated unconditionally; simplifycfg turns safe ones into selects.
 * Comparisons and logic produce i64 0/1 as ILIR says.
 *
 * Threads (codegen.h): every thread of a team runs the whole function; a
 * NODES or PARALLEL loop runs only the thread's contiguous share of its
 * range, and the body of a LEVELS loop, and a PARALLEL loop, end with
 * barrier(barrier_ctx) when nthreads > 1 — except between levels of a single
 * node, and inside a phase of unroll_recursion (barrier_skippable).
 *
 * Assumes a kernel that ilir_verify accepts; a construct it does not know is
 * an internal compiler error and the module is then not used.
 */
#include "codegen/cg_int.h"
#include "codegen/cg_target.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  int levels; /* LEVELS loops open around the builder's position */
  const CgProfile *prof;    /* NULL: no instrumentation (codegen.h, "profiling") */
  LLVMValueRef prof_counters;
  bool failed;
} CgEmit;

/* An open loop: for iv in [lo, hi). */
typedef struct {
  LLVMBasicBlockRef pre, header, body, exit;
  LLVMValueRef lo, iv;
} CgLoop;

static LLVMValueRef emit_expr(CgEmit *E, const IlirExpr *e);
static void emit_block(CgEmit *E, const IlirBlock *blk);
static void emit_tiled(CgEmit *E, const IlirStmt *s);
static void emit_store(CgEmit *E, const IlirStmt *s);

static LLVMValueRef fail(CgEmit *E, LLVMTypeRef type, const char *what, int kind) {
  if (!E->failed) CTX_ICE(E->diag, "codegen: %s %d in kernel '%s'", what, kind, E->k->name);
  E->failed = true;
  return LLVMGetUndef(type);
}

static LLVMTypeRef type_of(const CgEmit *E, IlirType t) {
  return t == ILIR_F32 ? E->f32 : E->i64;
}

static LLVMBasicBlockRef new_block(CgEmit *E, const char *name) {
  return LLVMAppendBasicBlockInContext(E->ctx, E->fn, name);
}

static LLVMValueRef const_i64(CgEmit *E, long v) {
  return LLVMConstInt(E->i64, (unsigned long long)v, 1);
}

static LLVMValueRef const_f32(CgEmit *E, double v) { return LLVMConstReal(E->f32, v); }

/* ---- loops --------------------------------------------------------------- */

/* Opens `for iv in [lo, hi)` at the builder's position and leaves the builder
 * in the loop body. */
static void loop_open(CgEmit *E, CgLoop *L, LLVMValueRef lo, LLVMValueRef hi,
                      const char *name) {
  L->pre = LLVMGetInsertBlock(E->b);
  L->header = new_block(E, name);
  L->body = new_block(E, "body");
  L->exit = new_block(E, "exit");
  L->lo = lo;
  LLVMBuildBr(E->b, L->header);
  LLVMPositionBuilderAtEnd(E->b, L->header);
  L->iv = LLVMBuildPhi(E->b, E->i64, name);
  LLVMValueRef more = LLVMBuildICmp(E->b, LLVMIntSLT, L->iv, hi, "");
  LLVMBuildCondBr(E->b, more, L->body, L->exit);
  LLVMPositionBuilderAtEnd(E->b, L->body);
}

/* Closes [L] (stepping by [step]) from the builder's block (the end of the
 * body) and leaves the builder after the loop. Returns that last body block. */
static LLVMBasicBlockRef loop_close_by(CgEmit *E, CgLoop *L, long step) {
  LLVMBasicBlockRef end = LLVMGetInsertBlock(E->b);
  LLVMValueRef next = LLVMBuildNSWAdd(E->b, L->iv, const_i64(E, step), "");
  LLVMBuildBr(E->b, L->header);
  LLVMValueRef vals[2] = {L->lo, next};
  LLVMBasicBlockRef from[2] = {L->pre, end};
  LLVMAddIncoming(L->iv, vals, from, 2);
  LLVMPositionBuilderAtEnd(E->b, L->exit);
  return end;
}

static LLVMBasicBlockRef loop_close(CgEmit *E, CgLoop *L) { return loop_close_by(E, L, 1); }

static const char *var_name(const IlirVar *v) { return v && v->name ? v->name : "v"; }

static bool bind_var(CgEmit *E, const IlirVar *v, LLVMValueRef val) {
  if (!v || v->id < 0 || v->id >= E->k->nvars) {
    fail(E, E->i64, "variable out of range, id", v ? v->id : -1);
    return false;
  }
  E->vars[v->id] = val;
  return true;
}

/* ---- expressions --------------------------------------------------------- */

/* [v] (of ILIR type [t]) as an i1: nonzero is true. */
static LLVMValueRef truth(CgEmit *E, LLVMValueRef v, IlirType t) {
  if (t == ILIR_F32) return LLVMBuildFCmp(E->b, LLVMRealUNE, v, const_f32(E, 0), "");
  return LLVMBuildICmp(E->b, LLVMIntNE, v, const_i64(E, 0), "");
}

static LLVMValueRef to_i64(CgEmit *E, LLVMValueRef bit) {
  return LLVMBuildZExt(E->b, bit, E->i64, "");
}

/* A call of the one-argument float intrinsic [name] (llvm.exp and so on). */
static LLVMValueRef intrinsic1(CgEmit *E, const char *name, LLVMValueRef x) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(E->mod, id, &E->f32, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(E->ctx, id, &E->f32, 1);
  return LLVMBuildCall2(E->b, ft, f, &x, 1, "");
}

/* A call of the libm function `float NAME(float)`, declared without side
 * effects so that LLVM may hoist or drop it. */
static LLVMValueRef libm1(CgEmit *E, const char *name, LLVMValueRef x) {
  LLVMTypeRef ft = LLVMFunctionType(E->f32, &E->f32, 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(E->mod, name);
  if (!f) {
    f = LLVMAddFunction(E->mod, name, ft);
    static const char *const attrs[] = {"nounwind", "willreturn", "nosync", "nofree"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
      unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateEnumAttribute(E->ctx, kind, 0));
    }
    unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(E->ctx, mem, 0)); /* memory(none) */
  }
  return LLVMBuildCall2(E->b, ft, f, &x, 1, "");
}

static LLVMValueRef emit_unary_f32(CgEmit *E, int op, LLVMValueRef x) {
  LLVMValueRef own = E->tgt->math ? E->tgt->math(E->b, E->mod, op, x) : NULL;
  if (own) return own;
  if (!(E->k->disabled & RA_OPT_VECTOR_MATH)) {
    if (op == ILIR_SIGMOID) return cg_math_sigmoid(E->b, E->mod, x);
    if (op == ILIR_TANH) return cg_math_tanh(E->b, E->mod, x);
    if (op == ILIR_EXP) return cg_math_exp(E->b, E->mod, x);
  }
  switch (op) {
  case ILIR_NEG: return LLVMBuildFNeg(E->b, x, "");
  case ILIR_SIGMOID: {
    LLVMValueRef ex = intrinsic1(E, "llvm.exp", LLVMBuildFNeg(E->b, x, ""));
    LLVMValueRef den = LLVMBuildFAdd(E->b, const_f32(E, 1), ex, "");
    return LLVMBuildFDiv(E->b, const_f32(E, 1), den, "");
  }
  case ILIR_TANH: return libm1(E, "tanhf", x);
  case ILIR_RELU: {
    LLVMValueRef pos = LLVMBuildFCmp(E->b, LLVMRealOGT, x, const_f32(E, 0), "");
    return LLVMBuildSelect(E->b, pos, x, const_f32(E, 0), "");
  }
  case ILIR_EXP: return intrinsic1(E, "llvm.exp", x);
  case ILIR_LOG: return intrinsic1(E, "llvm.log", x);
  case ILIR_SQRT: return intrinsic1(E, "llvm.sqrt", x);
  case ILIR_ABS: return intrinsic1(E, "llvm.fabs", x);
  default: return fail(E, E->f32, "float unary op", op);
  }
}

static LLVMValueRef emit_unary_i64(CgEmit *E, int op, LLVMValueRef x) {
  LLVMValueRef zero = const_i64(E, 0);
  switch (op) {
  case ILIR_NEG: return LLVMBuildNSWSub(E->b, zero, x, "");
  case ILIR_RELU:
    return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, x, zero, ""), x, zero, "");
  case ILIR_ABS:
    return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, x, zero, ""),
                           LLVMBuildNSWSub(E->b, zero, x, ""), x, "");
  default: return fail(E, E->i64, "integer unary op", op);
  }
}

static LLVMValueRef emit_unary(CgEmit *E, const IlirExpr *e) {
  LLVMValueRef x = emit_expr(E, e->a);
  if (e->op == ILIR_NOT) return to_i64(E, LLVMBuildNot(E->b, truth(E, x, e->a->type), ""));
  if (e->a->type == ILIR_F32) return emit_unary_f32(E, e->op, x);
  return emit_unary_i64(E, e->op, x);
}

/* Comparison predicates, indexed by op - ILIR_EQ. */
static const LLVMRealPredicate real_pred[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                              LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
static const LLVMIntPredicate int_pred[] = {LLVMIntEQ,  LLVMIntNE,  LLVMIntSLT,
                                            LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};

static LLVMValueRef emit_binary(CgEmit *E, const IlirExpr *e) {
  LLVMValueRef x = emit_expr(E, e->a), y = emit_expr(E, e->b);
  bool f = e->a->type == ILIR_F32;
  switch (e->op) {
  case ILIR_ADD: return f ? LLVMBuildFAdd(E->b, x, y, "") : LLVMBuildAdd(E->b, x, y, "");
  case ILIR_SUB: return f ? LLVMBuildFSub(E->b, x, y, "") : LLVMBuildSub(E->b, x, y, "");
  case ILIR_MUL: return f ? LLVMBuildFMul(E->b, x, y, "") : LLVMBuildMul(E->b, x, y, "");
  case ILIR_DIV: return f ? LLVMBuildFDiv(E->b, x, y, "") : LLVMBuildSDiv(E->b, x, y, "");
  case ILIR_EQ: case ILIR_NE: case ILIR_LT: case ILIR_LE: case ILIR_GT: case ILIR_GE:
    if (f) return to_i64(E, LLVMBuildFCmp(E->b, real_pred[e->op - ILIR_EQ], x, y, ""));
    return to_i64(E, LLVMBuildICmp(E->b, int_pred[e->op - ILIR_EQ], x, y, ""));
  case ILIR_AND:
    return to_i64(E, LLVMBuildAnd(E->b, truth(E, x, e->a->type), truth(E, y, e->b->type), ""));
  case ILIR_OR:
    return to_i64(E, LLVMBuildOr(E->b, truth(E, x, e->a->type), truth(E, y, e->b->type), ""));
  default: return fail(E, type_of(E, e->type), "binary op", e->op);
  }
}

/* Does the kernel write buffers of [kind]? */
static bool buf_writable(IlirBufKind kind) {
  return kind == ILIR_BUF_RESULT || kind == ILIR_BUF_SCRATCH ||
         kind == ILIR_BUF_LEVEL_SCRATCH || kind == ILIR_BUF_INVARIANT;
}

/* A PACKED buffer's panel width as stored (ilir.h): its cols when 0 or wider. */
static long pack_panel(const IlirPack *pk) {
  return pk->panel > 0 && pk->panel < pk->cols ? pk->panel : pk->cols;
}

/* Where the logical element [idx] = r * cols + c of a PACKED buffer stored
 * in panels lives (ilir.h, PACKED-PANELS; ilir_pack_at). Tiles compute their
 * stream's place once per block (tile_stream); this is for any other read. */
static LLVMValueRef packed_at(CgEmit *E, const IlirPack *pk, LLVMValueRef idx) {
  long panel = pack_panel(pk);
  if (panel == pk->cols) return idx;
  LLVMValueRef cols = const_i64(E, pk->cols), width = const_i64(E, panel);
  LLVMValueRef r = LLVMBuildSDiv(E->b, idx, cols, ""), c = LLVMBuildSRem(E->b, idx, cols, "");
  LLVMValueRef p0 = LLVMBuildSub(E->b, c, LLVMBuildSRem(E->b, c, width, ""), "");
  LLVMValueRef left = LLVMBuildSub(E->b, cols, p0, "");
  LLVMValueRef narrow = LLVMBuildICmp(E->b, LLVMIntSLT, left, width, "");
  LLVMValueRef w = LLVMBuildSelect(E->b, narrow, left, width, "");
  LLVMValueRef at = LLVMBuildMul(E->b, p0, const_i64(E, pk->rows), "");
  at = LLVMBuildAdd(E->b, at, LLVMBuildMul(E->b, r, w, ""), "");
  return LLVMBuildAdd(E->b, at, LLVMBuildSub(E->b, c, p0, ""), "");
}

static LLVMValueRef emit_load(CgEmit *E, const IlirExpr *e) {
  if (e->buf < 0 || e->buf >= E->k->nbufs) return fail(E, type_of(E, e->type), "load of buffer", e->buf);
  LLVMValueRef idx = emit_expr(E, e->a);
  if (E->k->bufs[e->buf].kind == ILIR_BUF_PACKED) idx = packed_at(E, &E->k->bufs[e->buf].pack, idx);
  bool f = e->type == ILIR_F32;
  LLVMTypeRef elem = f ? E->f32 : E->i32;
  LLVMValueRef at = LLVMBuildInBoundsGEP2(E->b, elem, E->bufs[e->buf], &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(E->b, elem, at, E->k->bufs[e->buf].name);
  /* not a copy in shared memory: the kernel writes that at its start */
  if (E->tgt->invariant_readonly && !buf_writable(E->k->bufs[e->buf].kind) &&
      !E->k->bufs[e->buf].shared) {
    static const char kind[] = "invariant.load";
    LLVMSetMetadata(v, LLVMGetMDKindIDInContext(E->ctx, kind, sizeof kind - 1),
                    LLVMMetadataAsValue(E->ctx, LLVMMDNodeInContext2(E->ctx, NULL, 0)));
  }
  return f ? v : LLVMBuildSExt(E->b, v, E->i64, "");
}

/* c ? a : b with only the chosen arm evaluated. */
static LLVMValueRef emit_select(CgEmit *E, const IlirExpr *e) {
  LLVMValueRef c = truth(E, emit_expr(E, e->c), e->c->type);
  LLVMBasicBlockRef then = new_block(E, "sel.then"), els = new_block(E, "sel.else");
  LLVMBasicBlockRef join = new_block(E, "sel.join");
  LLVMBuildCondBr(E->b, c, then, els);
  LLVMPositionBuilderAtEnd(E->b, then);
  LLVMValueRef vals[2];
  LLVMBasicBlockRef from[2];
  vals[0] = emit_expr(E, e->a);
  from[0] = LLVMGetInsertBlock(E->b);
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, els);
  vals[1] = emit_expr(E, e->b);
  from[1] = LLVMGetInsertBlock(E->b);
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, join);
  LLVMValueRef phi = LLVMBuildPhi(E->b, type_of(E, e->type), "sel");
  LLVMAddIncoming(phi, vals, from, 2);
  return phi;
}

/* sum or max of [e->a] over e->var in [lo, hi): the sum from 0, the max from
 * -inf with `x > acc ? x : acc` like the reference interpreter. The sum's
 * additions may be reassociated, so the vectorizer can split it in lanes. */
static LLVMValueRef emit_reduce(CgEmit *E, const IlirExpr *e) {
  if (e->op != ILIR_SUM && e->op != ILIR_MAXR) return fail(E, E->f32, "reduction op", e->op);
  LLVMValueRef lo = emit_expr(E, e->lo), hi = emit_expr(E, e->hi);
  LLVMValueRef init = e->op == ILIR_SUM ? const_f32(E, 0) : const_f32(E, -INFINITY);
  CgLoop L;
  loop_open(E, &L, lo, hi, var_name(e->var));
  /* the accumulator's phi goes first in the header, next to the iv's */
  LLVMPositionBuilderBefore(E->b, LLVMGetNextInstruction(L.iv));
  LLVMValueRef acc = LLVMBuildPhi(E->b, E->f32, "acc");
  LLVMPositionBuilderAtEnd(E->b, L.body);
  LLVMValueRef x = bind_var(E, e->var, L.iv) ? emit_expr(E, e->a) : LLVMGetUndef(E->f32);
  LLVMValueRef next;
  if (e->op == ILIR_SUM) {
    next = LLVMBuildFAdd(E->b, acc, x, "");
    LLVMSetFastMathFlags(next, LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
  } else {
    LLVMValueRef gt = LLVMBuildFCmp(E->b, LLVMRealOGT, x, acc, "");
    next = LLVMBuildSelect(E->b, gt, x, acc, "");
  }
  LLVMBasicBlockRef end = loop_close(E, &L);
  if (!E->failed) E->vars[e->var->id] = NULL;
  LLVMValueRef vals[2] = {init, next};
  LLVMBasicBlockRef from[2] = {L.pre, end};
  LLVMAddIncoming(acc, vals, from, 2);
  return acc;
}

static LLVMValueRef emit_expr(CgEmit *E, const IlirExpr *e) {
  if (!e) return fail(E, E->i64, "missing expression, kind", -1);
  switch (e->kind) {
  case ILIR_CONST:
    return e->type == ILIR_F32 ? const_f32(E, e->fval) : const_i64(E, e->ival);
  case ILIR_VAR:
    if (!e->var || e->var->id < 0 || e->var->id >= E->k->nvars || !E->vars[e->var->id])
      return fail(E, E->i64, "variable out of scope, id", e->var ? e->var->id : -1);
    return E->vars[e->var->id];
  case ILIR_ARG:
    if (e->ival < 0 || e->ival > 1) return fail(E, E->i64, "kernel argument", (int)e->ival);
    return E->args[e->ival];
  case ILIR_LOAD: return emit_load(E, e);
  case ILIR_UNARY: return emit_unary(E, e);
  case ILIR_BINARY: return emit_binary(E, e);
  case ILIR_SELECT: return emit_select(E, e);
  case ILIR_REDUCE: return emit_reduce(E, e);
  case ILIR_TO_F32: return LLVMBuildSIToFP(E->b, emit_expr(E, e->a), E->f32, "");
  }
  return fail(E, E->i64, "expression kind", (int)e->kind);
}

/* ---- statements ---------------------------------------------------------- */

static void emit_store(CgEmit *E, const IlirStmt *s) {
  if (s->buf < 0 || s->buf >= E->k->nbufs) {
    fail(E, E->f32, "store to buffer", s->buf);
    return;
  }
  LLVMValueRef idx = emit_expr(E, s->index);
  LLVMValueRef v = emit_expr(E, s->value);
  LLVMValueRef at = LLVMBuildInBoundsGEP2(E->b, E->f32, E->bufs[s->buf], &idx, 1, "");
  LLVMBuildStore(E->b, v, at);
}

/* This thread's share of [*lo, *hi): chunk = ceil((hi - lo) / nthreads),
 * [lo + tid * chunk, min(hi, that + chunk)); an empty range past hi. */
static void thread_share(CgEmit *E, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMValueRef n = LLVMBuildSub(E->b, *hi, *lo, "");
  LLVMValueRef last = LLVMBuildSub(E->b, E->nthreads, const_i64(E, 1), "");
  LLVMValueRef chunk = LLVMBuildSDiv(E->b, LLVMBuildAdd(E->b, n, last, ""), E->nthreads, "chunk");
  LLVMValueRef start = LLVMBuildAdd(E->b, *lo, LLVMBuildMul(E->b, E->tid, chunk, ""), "start");
  LLVMValueRef end = LLVMBuildAdd(E->b, start, chunk, "");
  LLVMValueRef over = LLVMBuildICmp(E->b, LLVMIntSGT, end, *hi, "");
  *lo = start;
  *hi = LLVMBuildSelect(E->b, over, *hi, end, "end");
}

/* barrier(barrier_ctx) when nthreads > 1 (and not [skip], an i1 or NULL),
 * between acq_rel fences: the other threads' stores of this level are
 * visible after it, and no access to a (noalias) buffer moves across it. */
static void emit_barrier(CgEmit *E, LLVMValueRef skip) {
  LLVMBasicBlockRef call = new_block(E, "barrier"), join = new_block(E, "barrier.done");
  LLVMValueRef many = LLVMBuildICmp(E->b, LLVMIntSGT, E->nthreads, const_i64(E, 1), "");
  if (skip) many = LLVMBuildAnd(E->b, many, LLVMBuildNot(E->b, skip, ""), "");
  LLVMBuildCondBr(E->b, many, call, join);
  LLVMPositionBuilderAtEnd(E->b, call);
  if (E->tgt->grid_barrier) {
    E->tgt->grid_barrier(E->b, E->mod, E->barrier_ctx); /* the counter (cg_target.h) */
  } else {
    LLVMBuildFence(E->b, LLVMAtomicOrderingAcquireRelease, 0, "");
    LLVMBuildCall2(E->b, E->barrier_ty, E->barrier, &E->barrier_ctx, 1, "");
    LLVMBuildFence(E->b, LLVMAtomicOrderingAcquireRelease, 0, "");
  }
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, join);
}

/* Marks the loop whose back edge is the terminator of [latch] with
 * llvm.loop.vectorize.enable (a vector loop of the schedule): LLVM's loop
 * vectorizer then vectorizes it where it is legal whatever its cost model
 * says. The loop ID is a distinct node whose first operand is itself. */
static void ask_vectorize(CgEmit *E, LLVMBasicBlockRef latch) {
  static const char key[] = "llvm.loop.vectorize.enable", loop[] = "llvm.loop";
  LLVMMetadataRef on[2] = {LLVMMDStringInContext2(E->ctx, key, sizeof key - 1),
                           LLVMValueAsMetadata(LLVMConstInt(E->i1, 1, 0))};
  LLVMMetadataRef self = LLVMTemporaryMDNode(E->ctx, NULL, 0);
  LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(E->ctx, on, 2)};
  LLVMMetadataRef id = LLVMMDNodeInContext2(E->ctx, ops, 2);
  LLVMMetadataReplaceAllUsesWith(self, id);
  LLVMSetMetadata(LLVMGetBasicBlockTerminator(latch),
                  LLVMGetMDKindIDInContext(E->ctx, loop, sizeof loop - 1),
                  LLVMMetadataAsValue(E->ctx, id));
}

/* levels[i] */
static LLVMValueRef level_start(CgEmit *E, LLVMValueRef i) {
  LLVMValueRef at = LLVMBuildInBoundsGEP2(E->b, E->i32, E->bufs[E->k->levels_buf], &i, 1, "");
  return LLVMBuildSExt(E->b, LLVMBuildLoad2(E->b, E->i32, at, "levels"), E->i64, "");
}

/* Is level [l] a single node? */
static LLVMValueRef single_node(CgEmit *E, LLVMValueRef l) {
  LLVMValueRef n = LLVMBuildSub(E->b, level_start(E, LLVMBuildAdd(E->b, l, const_i64(E, 1), "")),
                                level_start(E, l), "");
  return LLVMBuildICmp(E->b, LLVMIntEQ, n, const_i64(E, 1), "");
}

/* May the barrier after level [l] be left out? A level of one node runs on
 * thread 0 alone (its nodes loops' shares: one node for thread 0, none for
 * the others), so between it and a next level of one node (or the end) no
 * other thread writes or reads anything: a chain of single-node levels — a
 * sequence, the top of a tree — runs without barriers. Every thread decides
 * alike from levels[], so all call the barrier equally often. */
static LLVMValueRef barrier_skippable(CgEmit *E, LLVMValueRef l) {
  int lv = E->k->levels_buf;
  if (lv < 0 || lv >= E->k->nbufs || E->k->bufs[lv].kind != ILIR_BUF_LEVELS)
    return fail(E, E->i1, "levels loop without a levels buffer, levels_buf", lv);
  LLVMValueRef next = LLVMBuildAdd(E->b, l, const_i64(E, 1), "");
  LLVMValueRef last = LLVMBuildICmp(E->b, LLVMIntSGE, next, E->args[1], "");
  LLVMValueRef at = LLVMBuildSelect(E->b, last, l, next, ""); /* levels[] in bounds */
  LLVMValueRef next_single = LLVMBuildOr(E->b, last, single_node(E, at), "");
  LLVMValueRef skip = LLVMBuildAnd(E->b, single_node(E, l), next_single, "");
  int ph = ilir_find_buf(E->k, ILIR_BUF_PHASES); /* unroll_recursion: phases[l] == 0 */
  if (ph < 0) return skip;
  LLVMValueRef flag = LLVMBuildInBoundsGEP2(E->b, E->i32, E->bufs[ph], &l, 1, "");
  LLVMValueRef in_phase = LLVMBuildICmp(E->b, LLVMIntEQ, LLVMBuildLoad2(E->b, E->i32, flag, "phase"),
                                        LLVMConstInt(E->i32, 0, 0), "");
  return LLVMBuildOr(E->b, skip, in_phase, "");
}

/* A loop bound to GPU blocks or threads (ilir.h, IlirBind) on a target that
 * has them: a BLOCK loop runs this block's contiguous share of its nodes (as
 * thread_share, by block index), a THREAD loop the iterations lo + tid.x +
 * k * block_threads, then the block's barrier. */
static void emit_bound_loop(CgEmit *E, const IlirStmt *s) {
  const CgTarget *t = E->tgt;
  LLVMValueRef lo = emit_expr(E, s->lo), hi = emit_expr(E, s->hi);
  long step = 1;
  if (s->bind == ILIR_BIND_BLOCK) {
    LLVMValueRef tid = E->tid, n = E->nthreads;
    E->tid = t->sreg(E->b, E->mod, CG_SREG_CTAID);
    E->nthreads = t->sreg(E->b, E->mod, CG_SREG_NCTAID);
    thread_share(E, &lo, &hi);
    E->tid = tid, E->nthreads = n;
  } else {
    lo = LLVMBuildAdd(E->b, lo, t->sreg(E->b, E->mod, CG_SREG_TID), "");
    step = t->block_threads;
  }
  CgLoop L;
  loop_open(E, &L, lo, hi, var_name(s->var));
  if (bind_var(E, s->var, L.iv)) emit_block(E, &s->body);
  loop_close_by(E, &L, step);
  if (s->bind == ILIR_BIND_THREAD && !E->failed) t->block_barrier(E->b, E->mod);
  if (!E->failed) E->vars[s->var->id] = NULL;
}

static void emit_loop(CgEmit *E, const IlirStmt *s) {
  if (s->bind && E->tgt->sreg) {
    emit_bound_loop(E, s);
    return;
  }
  if (s->tile_nodes) {
    emit_tiled(E, s);
    return;
  }
  LLVMValueRef lo = emit_expr(E, s->lo), hi = emit_expr(E, s->hi);
  if (s->loop == ILIR_LOOP_NODES && s->team_lo) { /* this thread's share of the level, in [lo, hi) */
    LLVMValueRef tlo = emit_expr(E, s->team_lo), thi = emit_expr(E, s->team_hi);
    thread_share(E, &tlo, &thi);
    lo = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, tlo, lo, ""), tlo, lo, "");
    hi = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, thi, hi, ""), thi, hi, "");
  } else if (s->loop == ILIR_LOOP_NODES || s->loop == ILIR_LOOP_PARALLEL) {
    thread_share(E, &lo, &hi);
  }
  CgLoop L;
  loop_open(E, &L, lo, hi, var_name(s->var));
  E->levels += s->loop == ILIR_LOOP_LEVELS;
  if (bind_var(E, s->var, L.iv)) emit_block(E, &s->body);
  E->levels -= s->loop == ILIR_LOOP_LEVELS;
  if (s->loop == ILIR_LOOP_LEVELS && !E->failed) emit_barrier(E, barrier_skippable(E, L.iv));
  LLVMBasicBlockRef latch = loop_close(E, &L);
  if (s->loop == ILIR_LOOP_VECTOR && !E->failed) ask_vectorize(E, latch);
  if (s->loop == ILIR_LOOP_PARALLEL && !E->failed) emit_barrier(E, NULL);
  if (s->loop == ILIR_LOOP_NODES && !E->levels && !E->failed) emit_barrier(E, NULL);
  if (!E->failed) E->vars[s->var->id] = NULL;
}

/* ---- register-tiled products (ilir.h: a NODES loop with tile_nodes > 0) ---- */

enum { MAX_ACC = 64, MAX_TERMS = 16, MAX_STREAMS = 2 * MAX_TERMS };

/* The parts of a tile (ilir.h): for t { product loops `for j in [0, I) {
 * out[idx] = sum of terms sum(r in [0, R)) x * y[.. + r * RS + j] }`;
 * epilogues }. Terms of different products that read the same PACKED y form
 * one stream: each row of weights it loads feeds all of them (share-weights:
 * treelstm's U_f h0 and U_f h1). */
typedef struct {
  const IlirStmt *loop, *store; /* the product's output loop and its store */
} CgProduct;

typedef struct {
  const IlirExpr *red[ILIR_TILE_MAX_PRODUCTS]; /* its term in each product it feeds */
  int prod[ILIR_TILE_MAX_PRODUCTS];
  int n;
} CgStreamTerms;

typedef struct {
  const IlirStmt *nodes;
  CgProduct prod[ILIR_TILE_MAX_PRODUCTS];
  int nprod;
  CgStreamTerms stream[MAX_STREAMS];
  int nstreams;
  long I;
} CgTile;

static LLVMTypeRef vec_type(CgEmit *E, int vl) {
  return vl > 1 ? LLVMVectorType(E->f32, (unsigned)vl) : E->f32;
}

/* [x] in every lane of a vector of [vl] floats. */
static LLVMValueRef splat(CgEmit *E, LLVMValueRef x, int vl) {
  if (vl == 1) return x;
  LLVMValueRef v = LLVMBuildInsertElement(E->b, LLVMGetPoison(vec_type(E, vl)), x,
                                          const_i64(E, 0), "");
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(E->i32, (unsigned)vl));
  return LLVMBuildShuffleVector(E->b, v, LLVMGetPoison(vec_type(E, vl)), zeros, "");
}

/* a * b + c, fused where the host has FMA (llvm.fmuladd). */
static LLVMValueRef fmuladd(CgEmit *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c,
                            int vl) {
  static const char name[] = "llvm.fmuladd";
  LLVMTypeRef vt = vec_type(E, vl);
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(E->mod, id, &vt, 1);
  LLVMValueRef args[3] = {a, b, c};
  return LLVMBuildCall2(E->b, LLVMIntrinsicGetType(E->ctx, id, &vt, 1), f, args, 3, "");
}

static LLVMValueRef elem_ptr(CgEmit *E, int buf, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(E->b, E->f32, E->bufs[buf], &idx, 1, "");
}

static LLVMValueRef plus(CgEmit *E, LLVMValueRef x, long c) {
  return c ? LLVMBuildNSWAdd(E->b, x, const_i64(E, c), "") : x;
}

/* The tile's epilogue loops (ilir.h) on the block of outputs [i0, i0 +
 * count) of rows [lo, hi), right after the tile of those rows is stored (it
 * is still in L1): for t { for each epilogue in order { for j2 { its store }
 * } } — a loop per epilogue, innermost, so each vectorizes as it would have
 * in a node loop of its own; over a tile's nb rows LLVM unrolls the t loop.
 * Emitted once per tile shape (after the loop of single rows, once for all
 * of them), not per row, to keep the code small. Each j2 runs over [0,
 * count), a constant trip count, at output i0 + j2: LLVM then vectorizes it
 * without runtime checks, remainder and epilogue loops, which it made for
 * [i0, i0 + count) (treelstm's kernel: 5,765 -> 4,534 lines of optimized
 * IR; B = 10 about 5% faster in alternating runs on a loaded machine). */
static void emit_epilogues(CgEmit *E, const CgTile *T, LLVMValueRef lo, LLVMValueRef hi,
                           LLVMValueRef i0, long count) {
  CgLoop Lt, L;
  loop_open(E, &Lt, lo, hi, "epi.t");
  if (!bind_var(E, T->nodes->var, Lt.iv)) return;
  for (int e = T->nprod; e < T->nodes->body.n && !E->failed; e++) {
    const IlirStmt *lp = T->nodes->body.stmts[e];
    loop_open(E, &L, const_i64(E, 0), const_i64(E, count), "epi");
    if (bind_var(E, lp->var, LLVMBuildNSWAdd(E->b, i0, L.iv, "")))
      emit_store(E, lp->body.stmts[0]);
    loop_close(E, &L);
    E->vars[lp->var->id] = NULL;
  }
  loop_close(E, &Lt);
}

/* Is [e] exactly `r * cols + j` — how the tiler reads a PACKED copy
 * (sched_apply.c tile_product)? */
static bool packed_row_form(const IlirExpr *e, const IlirVar *r, const IlirVar *j, long cols) {
  return e->kind == ILIR_BINARY && e->op == ILIR_ADD && e->a->kind == ILIR_BINARY &&
         e->a->op == ILIR_MUL && e->a->a->kind == ILIR_VAR && e->a->a->var == r &&
         e->a->b->kind == ILIR_CONST && e->a->b->ival == cols && e->b->kind == ILIR_VAR &&
         e->b->var == j;
}


/* Where a term of a tile reads y for the block of outputs from i0. A PACKED
 * copy (ilir.h, PACKED-PANELS) is read at base + r * step: base the block's
 * place in its panel, step the panel's width (the last panel may be
 * narrower) — one contiguous stream over r. Any other y (a node's matrix) is
 * read at its own index, base NULL. */
typedef struct {
  LLVMValueRef base, step;
} CgStream;

static CgStream tile_stream(CgEmit *E, const IlirExpr *red, const IlirVar *j, LLVMValueRef i0) {
  const IlirExpr *p = red->a->b;
  CgStream st = {NULL, NULL};
  if (E->k->bufs[p->buf].kind != ILIR_BUF_PACKED) return st;
  const IlirPack *pk = &E->k->bufs[p->buf].pack;
  long panel = pack_panel(pk), tail = pk->cols % panel;
  if (!packed_row_form(p->a, red->var, j, pk->cols)) {
    fail(E, E->i64, "packed weights read at an unknown index, buffer", p->buf);
    return st;
  }
  /* blocks never straddle a panel (emit_tiled), so i0's panel is the block's */
  LLVMValueRef p0 = LLVMBuildMul(E->b, LLVMBuildSDiv(E->b, i0, const_i64(E, panel), ""),
                                 const_i64(E, panel), "panel");
  st.base = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, p0, const_i64(E, pk->rows), ""),
                         LLVMBuildSub(E->b, i0, p0, ""), "");
  st.step = const_i64(E, panel);
  if (tail) {
    LLVMValueRef last = LLVMBuildICmp(E->b, LLVMIntSGE, p0, const_i64(E, pk->cols - tail), "");
    st.step = LLVMBuildSelect(E->b, last, const_i64(E, tail), st.step, "step");
  }
  return st;
}

/* Binds every product's output variable to [i] (the outputs from i). */
static bool bind_outs(CgEmit *E, const CgTile *T, LLVMValueRef i) {
  for (int p = 0; p < T->nprod; p++)
    if (!bind_var(E, T->prod[p].loop->var, i)) return false;
  return true;
}

/* One step r of stream [S]: iv vector loads of y's row, each feeding nb
 * multiply-adds per term of the stream, with x(n0 + b, r) of that term;
 * acc[p * nb * iv + b * iv + v] is product p's, row b's, vector v's. */
static void tile_step(CgEmit *E, const CgTile *T, const CgStreamTerms *S, CgStream st,
                      LLVMValueRef r, LLVMValueRef n0, int nb, LLVMValueRef i0, int iv, int vl,
                      LLVMValueRef *acc) {
  const IlirExpr *y = S->red[0]->a->b;
  LLVMTypeRef vt = vec_type(E, vl);
  LLVMValueRef w[MAX_ACC];
  if (!bind_var(E, S->red[0]->var, r) || !bind_outs(E, T, i0)) return;
  LLVMValueRef row = st.base ? LLVMBuildAdd(E->b, st.base, LLVMBuildMul(E->b, r, st.step, ""), "")
                             : emit_expr(E, y->a);
  for (int v = 0; v < iv; v++) {
    w[v] = LLVMBuildLoad2(E->b, vt, elem_ptr(E, y->buf, plus(E, row, (long)v * vl)), "w");
    LLVMSetAlignment(w[v], 4);
  }
  for (int t = 0; t < S->n && !E->failed; t++) {
    LLVMValueRef *a = acc + S->prod[t] * nb * iv;
    if (!bind_var(E, S->red[t]->var, r)) return;
    for (int b = 0; b < nb; b++) {
      if (!bind_var(E, T->nodes->var, plus(E, n0, b))) return;
      LLVMValueRef xb = splat(E, emit_expr(E, S->red[t]->a->a), vl);
      for (int v = 0; v < iv; v++) a[b * iv + v] = fmuladd(E, xb, w[v], a[b * iv + v], vl);
    }
  }
  for (int t = 0; t < S->n; t++) E->vars[S->red[t]->var->id] = NULL;
}

/* The sums over r of one stream into [acc] (na accumulators, each one chain
 * of multiply-adds over r, so every row sums in the same order whatever the
 * tile's shape: results do not depend on the thread count). Cutting a
 * single row's r range in halves with separate accumulators, to cover the
 * FMA latency, measured no faster (seqlstm H=256 B=1 1.06 vs 1.08 ms, treefc
 * H=256 B=1 0.037 vs 0.034 ms): those rows wait on their weights' stream,
 * not on the FMAs. */
static void tile_stream_sum(CgEmit *E, const CgTile *T, const CgStreamTerms *S,
                            LLVMValueRef n0, int nb, LLVMValueRef i0, int iv, int vl,
                            LLVMValueRef *acc, int na) {
  LLVMValueRef phi[MAX_ACC], next[MAX_ACC];
  CgStream st = tile_stream(E, S->red[0], T->prod[S->prod[0]].loop->var, i0);
  if (E->failed) return;
  CgLoop L;
  loop_open(E, &L, const_i64(E, 0), const_i64(E, S->red[0]->hi->ival), "r");
  LLVMPositionBuilderBefore(E->b, LLVMGetNextInstruction(L.iv));
  for (int a = 0; a < na; a++) phi[a] = next[a] = LLVMBuildPhi(E->b, vec_type(E, vl), "acc");
  LLVMPositionBuilderAtEnd(E->b, L.body);
  tile_step(E, T, S, st, L.iv, n0, nb, i0, iv, vl, next);
  LLVMBasicBlockRef end = loop_close(E, &L);
  for (int a = 0; a < na; a++) {
    LLVMValueRef vals[2] = {acc[a], next[a]};
    LLVMBasicBlockRef from[2] = {L.pre, end};
    LLVMAddIncoming(phi[a], vals, from, 2);
    acc[a] = phi[a];
  }
}

/* One tile: rows t in [n0, n0 + nb) x outputs [i0, i0 + iv * vl) of every
 * product, summed in nprod * nb * iv accumulators of vl floats, then stored. */
static void emit_tile(CgEmit *E, const CgTile *T, LLVMValueRef n0, int nb, LLVMValueRef i0,
                      int iv, int vl) {
  LLVMValueRef acc[MAX_ACC];
  int na = T->nprod * nb * iv;
  for (int a = 0; a < na; a++) acc[a] = LLVMConstNull(vec_type(E, vl));
  for (int g = 0; g < T->nstreams && !E->failed; g++)
    tile_stream_sum(E, T, &T->stream[g], n0, nb, i0, iv, vl, acc, na);
  for (int p = 0; p < T->nprod && !E->failed; p++) {
    const IlirStmt *store = T->prod[p].store;
    for (int b = 0; b < nb && !E->failed; b++) {
      bind_var(E, T->nodes->var, plus(E, n0, b));
      for (int v = 0; v < iv && !E->failed; v++) {
        bind_var(E, T->prod[p].loop->var, plus(E, i0, (long)v * vl));
        LLVMValueRef st = LLVMBuildStore(E->b, acc[(p * nb + b) * iv + v],
                                         elem_ptr(E, store->buf, emit_expr(E, store->index)));
        LLVMSetAlignment(st, 4);
      }
    }
  }
}

/* The vectors per block of outputs: at most the schedule's tile_outs, what
 * the registers hold (nprod * nb * iv accumulators, iv weights, x and one
 * spare), and a divisor of every PACKED panel the tile reads so that no
 * block straddles two panels. */
static int tile_vectors(const CgEmit *E, const CgTile *T, int nb, int vl, int want) {
  int iv = want / vl > 0 ? want / vl : 1, na = T->nprod * nb;
  for (; iv > 1; iv--) {
    bool fits = na * iv + iv + 2 <= E->vec_regs && na * iv <= MAX_ACC;
    for (int g = 0; g < T->nstreams && fits; g++) {
      const IlirBuf *y = &E->k->bufs[T->stream[g].red[0]->a->b->buf];
      long panel = y->kind == ILIR_BUF_PACKED ? pack_panel(&y->pack) : 0;
      fits = !panel || panel == y->pack.cols || panel % ((long)iv * vl) == 0;
    }
    if (fits) break;
  }
  return iv;
}

/* The rows [rest, hi) left after the tiles of nb rows — fewer than nb — as
 * one tile of exactly that many rows: a level of 2 or 3 nodes still reads
 * each weight once for all of them (a switch on the count, a tile shape per
 * case). */
static void emit_rest(CgEmit *E, const CgTile *T, LLVMValueRef rest, LLVMValueRef hi, int nb,
                      LLVMValueRef i0, int iv, int vl) {
  LLVMBasicBlockRef done = new_block(E, "rest.done");
  LLVMValueRef q = LLVMBuildSub(E->b, hi, rest, "");
  LLVMValueRef sw = LLVMBuildSwitch(E->b, q, done, (unsigned)nb - 1);
  for (int c = 1; c < nb && !E->failed; c++) {
    LLVMBasicBlockRef bb = new_block(E, "rest");
    LLVMAddCase(sw, const_i64(E, c), bb);
    LLVMPositionBuilderAtEnd(E->b, bb);
    emit_tile(E, T, rest, c, i0, iv, vl);
    LLVMBuildBr(E->b, done);
  }
  LLVMPositionBuilderAtEnd(E->b, done);
}

/* Groups the terms of [T]'s products into streams: a term joins an earlier
 * one of another product that reads the same PACKED buffer over the same r
 * range; any other term is a stream of its own. False when there are too
 * many. */
static bool tile_streams(CgEmit *E, CgTile *T) {
  for (int p = 0; p < T->nprod; p++) {
    IlirExpr *terms[MAX_TERMS];
    int n = ilir_sum_terms(T->prod[p].store->value, terms, MAX_TERMS);
    if (n > MAX_TERMS) return false;
    for (int t = 0; t < n; t++) {
      const IlirExpr *y = terms[t]->a->b;
      CgStreamTerms *S = NULL;
      for (int g = 0; g < T->nstreams && !S; g++) {
        const IlirExpr *red0 = T->stream[g].red[0];
        if (E->k->bufs[y->buf].kind == ILIR_BUF_PACKED && red0->a->b->buf == y->buf &&
            red0->hi->ival == terms[t]->hi->ival && T->stream[g].prod[T->stream[g].n - 1] != p)
          S = &T->stream[g];
      }
      if (!S) {
        if (T->nstreams == MAX_STREAMS) return false;
        S = &T->stream[T->nstreams++];
      }
      S->red[S->n] = terms[t];
      S->prod[S->n++] = p;
    }
  }
  return true;
}

/* Should a tiled level product run split by outputs (every thread all of
 * the level's rows, a share of the output blocks) rather than by nodes?
 * A schedule's `parallel` fixes it (IlirStmt.share); otherwise two
 * or more threads and at least as many output blocks as threads, and a
 * level with fewer rows than give every thread a full tile: such a level's
 * time is its weights' bandwidth, and split by outputs each thread reads
 * only its share of them — the same share at every level, which stays in its
 * core's L2 (CORTEX's model persistence, on the CPU). Every thread decides
 * alike from the level's size, so all meet the same barriers. */
static LLVMValueRef split_by_outputs(CgEmit *E, LLVMValueRef lo, LLVMValueRef hi, int nb,
                                     long blocks) {
  LLVMValueRef many = LLVMBuildICmp(E->b, LLVMIntSGT, E->nthreads, const_i64(E, 1), "");
  LLVMValueRef enough = LLVMBuildICmp(E->b, LLVMIntSGE, const_i64(E, blocks), E->nthreads, "");
  LLVMValueRef rows = LLVMBuildSub(E->b, hi, lo, "");
  LLVMValueRef few = LLVMBuildICmp(E->b, LLVMIntSLT, rows,
                                   LLVMBuildMul(E->b, E->nthreads, const_i64(E, nb), ""), "");
  return LLVMBuildAnd(E->b, LLVMBuildAnd(E->b, many, enough, ""), few, "by.outs");
}

/* The output range [*from, *to) of a segment for this thread: when split by
 * outputs, its share of the segment's blocks of [width] (the segments after
 * the first: thread 0's); else all of it. */
static void output_share(CgEmit *E, LLVMValueRef by_outs, bool blocks, long width,
                         LLVMValueRef *from, LLVMValueRef *to) {
  if (!by_outs) return;
  LLVMValueRef lo = *from, hi = *to;
  if (blocks) {
    LLVMValueRef b0 = LLVMBuildSDiv(E->b, lo, const_i64(E, width), "");
    LLVMValueRef b1 = LLVMBuildSDiv(E->b, hi, const_i64(E, width), "");
    thread_share(E, &b0, &b1);
    lo = LLVMBuildMul(E->b, b0, const_i64(E, width), "");
    hi = LLVMBuildMul(E->b, b1, const_i64(E, width), "");
  } else {
    LLVMValueRef first = LLVMBuildICmp(E->b, LLVMIntEQ, E->tid, const_i64(E, 0), "");
    hi = LLVMBuildSelect(E->b, first, hi, lo, "");
  }
  *from = LLVMBuildSelect(E->b, by_outs, lo, *from, "");
  *to = LLVMBuildSelect(E->b, by_outs, hi, *to, "");
}

/* The tiled product [s] over this thread's share of its nodes (or of its
 * outputs: split_by_outputs): outputs in blocks of iv vectors, then single
 * vectors, then single floats; for each block, nodes nb at a time, then the
 * rest as one tile. The block of P a block of outputs reads (R rows of iv *
 * vl floats) stays in cache across the nodes. The epilogues run on each
 * tile of nb rows as soon as it is stored, and on the rest after it (per
 * tile rather than once per block over all the rows: the stored block is
 * then at most nb rows, still in L1, and the elementwise work interleaves
 * with the products; childsum H=64 B=10 0.165 ms per block, 0.152 ms per
 * tile, in 11 alternating runs). Split by outputs, a barrier before the tile
 * (the rows it reads may come from another thread's share of nodes, or from
 * a level of one node after which no barrier ran) and after it (what follows
 * runs split by nodes again). */
static void emit_tiled(CgEmit *E, const IlirStmt *s) {
  CgTile T;
  memset(&T, 0, sizeof T);
  T.nodes = s;
  IlirTileParts parts;
  if (!ilir_tile_parts(E->k, s, &parts)) {
    fail(E, E->i64, "register tile of unknown form, tile_nodes", s->tile_nodes);
    return;
  }
  for (int p = 0; p < parts.n; p++)
    T.prod[p] = (CgProduct){parts.loop[p], parts.loop[p]->body.stmts[0]};
  T.nprod = parts.n;
  if (!tile_streams(E, &T)) {
    fail(E, E->i64, "register tile with too many terms, products", T.nprod);
    return;
  }
  T.I = parts.loop[0]->hi->ival;
  int vl = E->vec_floats, nb = s->tile_nodes < 8 ? s->tile_nodes : 8;
  int iv = tile_vectors(E, &T, nb, vl, s->tile_outs);
  long full = T.I - T.I % ((long)iv * vl), vec = T.I - T.I % vl;
  LLVMValueRef lo = emit_expr(E, s->lo), hi = emit_expr(E, s->hi), by_outs = NULL;
  if (s->loop == ILIR_LOOP_NODES) {
    by_outs = s->share == ILIR_SHARE_AUTO ? split_by_outputs(E, lo, hi, nb, full / ((long)iv * vl))
                                          : LLVMConstInt(E->i1, s->share == ILIR_SHARE_OUTPUTS, 0);
    LLVMValueRef nlo = lo, nhi = hi;
    thread_share(E, &nlo, &nhi);
    lo = LLVMBuildSelect(E->b, by_outs, lo, nlo, "");
    hi = LLVMBuildSelect(E->b, by_outs, hi, nhi, "");
    emit_barrier(E, LLVMBuildNot(E->b, by_outs, ""));
  }
  const struct { long from, to; int iv, vl; } seg[3] = {
      {0, full, iv, vl}, {full, vec, 1, vl}, {vec, T.I, 1, 1}};
  for (int g = 0; g < 3 && !E->failed; g++) {
    if (seg[g].from >= seg[g].to) continue;
    long width = (long)seg[g].iv * seg[g].vl;
    LLVMValueRef from = const_i64(E, seg[g].from), to = const_i64(E, seg[g].to);
    output_share(E, by_outs, g == 0, width, &from, &to);
    CgLoop Li, Ln;
    loop_open(E, &Li, from, to, "i0");
    LLVMValueRef count = LLVMBuildSDiv(E->b, LLVMBuildSub(E->b, hi, lo, ""), const_i64(E, nb), "");
    LLVMValueRef rest = LLVMBuildAdd(E->b, lo, LLVMBuildMul(E->b, count, const_i64(E, nb), ""), "");
    loop_open(E, &Ln, lo, rest, "n0");
    emit_tile(E, &T, Ln.iv, nb, Li.iv, seg[g].iv, seg[g].vl);
    if (s->body.n > T.nprod && !E->failed)
      emit_epilogues(E, &T, Ln.iv, plus(E, Ln.iv, nb), Li.iv, width);
    loop_close_by(E, &Ln, nb);
    if (nb > 1 && !E->failed) emit_rest(E, &T, rest, hi, nb, Li.iv, seg[g].iv, seg[g].vl);
    if (s->body.n > T.nprod && !E->failed) emit_epilogues(E, &T, rest, hi, Li.iv, width);
    loop_close_by(E, &Li, width);
  }
  if (E->failed) return;
  if (s->loop == ILIR_LOOP_NODES && !E->levels) emit_barrier(E, NULL); /* a prologue */
  else if (by_outs) emit_barrier(E, LLVMBuildNot(E->b, by_outs, ""));
  E->vars[s->var->id] = NULL;
  for (int p = 0; p < T.nprod; p++) E->vars[T.prod[p].loop->var->id] = NULL;
}

static void emit_if(CgEmit *E, const IlirStmt *s) {
  LLVMValueRef c = truth(E, emit_expr(E, s->cond), s->cond ? s->cond->type : ILIR_I64);
  LLVMBasicBlockRef then = new_block(E, "if.then"), els = new_block(E, "if.else");
  LLVMBasicBlockRef join = new_block(E, "if.join");
  LLVMBuildCondBr(E->b, c, then, els);
  LLVMPositionBuilderAtEnd(E->b, then);
  emit_block(E, &s->then);
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, els);
  emit_block(E, &s->els);
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, join);
}

/* A profiled region's iterations (cg_profile.c): a node or levels loop's
 * whole range, evaluated before it; one otherwise. */
static LLVMValueRef prof_iters(CgEmit *E, const IlirStmt *s) {
  if (s->kind != ILIR_LOOP || s->loop == ILIR_LOOP_SERIAL || s->loop == ILIR_LOOP_VECTOR ||
      s->loop == ILIR_LOOP_UNROLL)
    return const_i64(E, 1);
  return LLVMBuildSub(E->b, emit_expr(E, s->hi), emit_expr(E, s->lo), "prof.n");
}

static void emit_block(CgEmit *E, const IlirBlock *blk) {
  for (int i = 0; i < blk->n && !E->failed; i++) {
    const IlirStmt *s = blk->stmts[i];
    int region = cg_prof_region(E->prof, s);
    LLVMValueRef iters = NULL, t0 = NULL;
    if (region >= 0) {
      iters = prof_iters(E, s);
      t0 = cg_prof_now(E->b, E->mod);
    }
    switch (s->kind) {
    case ILIR_LOOP: emit_loop(E, s); break;
    case ILIR_STORE: emit_store(E, s); break;
    case ILIR_IF: emit_if(E, s); break;
    default: fail(E, E->i64, "statement kind", (int)s->kind); break;
    }
    if (region >= 0 && !E->failed)
      cg_prof_add(E->b, E->mod, E->prof_counters, E->tid, E->prof, region, t0, iters);
  }
}

/* ---- the functions --------------------------------------------------------- */

static void add_attr(CgEmit *E, LLVMValueRef fn, unsigned index, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(E->ctx, kind, 0));
}

enum { TEAM_ARGS = 6 }; /* num_nodes, num_levels, tid, nthreads, barrier, barrier_ctx */

/* The internal body: (ptr noalias b0, ..., i64 num_nodes, i64 num_levels,
 * i64 tid, i64 nthreads, ptr barrier, ptr barrier_ctx). */
static LLVMValueRef body_function(CgEmit *E) {
  int n = E->k->nbufs;
  LLVMTypeRef *params = ctx_xmalloc(((size_t)n + TEAM_ARGS) * sizeof *params);
  for (int i = 0; i < n; i++) params[i] = E->ptr;
  for (int i = 0; i < 4; i++) params[n + i] = E->i64;
  params[n + 4] = params[n + 5] = E->ptr;
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(E->ctx), params,
                                    (unsigned)n + TEAM_ARGS, 0);
  free(params);
  LLVMValueRef fn = LLVMAddFunction(E->mod, "ctx.kernel.body", ft);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  add_attr(E, fn, LLVMAttributeFunctionIndex, "alwaysinline");
  add_attr(E, fn, LLVMAttributeFunctionIndex, "nounwind");
  for (int i = 0; i < n; i++) {
    bool writable = buf_writable(E->k->bufs[i].kind);
    if (!writable || !E->tgt->alias_writable) add_attr(E, fn, (unsigned)i + 1, "noalias");
    if (!writable) add_attr(E, fn, (unsigned)i + 1, "readonly");
  }
  return fn;
}

/* The exported entry: loads bufs[i] and calls the body. */
static void entry_function(CgEmit *E, LLVMValueRef body) {
  int n = E->k->nbufs;
  LLVMTypeRef params[1 + TEAM_ARGS] = {E->ptr, E->i64, E->i64, E->i64, E->i64, E->ptr, E->ptr};
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(E->ctx), params, 1 + TEAM_ARGS, 0);
  LLVMValueRef fn = LLVMAddFunction(E->mod, E->k->name, ft);
  add_attr(E, fn, LLVMAttributeFunctionIndex, "nounwind");
  /* Use the widest vectors the host has (LLVM prefers 256 bits by default,
   * even with AVX-512). */
  static const char key[] = "prefer-vector-width", width[] = "512";
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(E->ctx, key, sizeof key - 1, width,
                                                    sizeof width - 1));
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->ctx, fn, "entry"));
  LLVMValueRef *args = ctx_xmalloc(((size_t)n + TEAM_ARGS) * sizeof *args);
  for (int i = 0; i < n; i++) {
    LLVMValueRef idx = const_i64(E, i);
    LLVMValueRef at = LLVMBuildInBoundsGEP2(E->b, E->ptr, LLVMGetParam(fn, 0), &idx, 1, "");
    args[i] = LLVMBuildLoad2(E->b, E->ptr, at, E->k->bufs[i].name);
  }
  for (int i = 0; i < TEAM_ARGS; i++) args[n + i] = LLVMGetParam(fn, (unsigned)i + 1);
  LLVMBuildCall2(E->b, LLVMGlobalGetValueType(body), body, args, (unsigned)n + TEAM_ARGS, "");
  LLVMBuildRetVoid(E->b);
  free(args);
}

/* The host's vector registers: 32 of 16 floats with AVX-512, 16 of 8 with
 * AVX, 16 of 4 otherwise (the SSE / NEON width). */
static void host_vectors(CgEmit *E, const char *target_features) {
  char *host = target_features ? NULL : LLVMGetHostCPUFeatures();
  const char *features = target_features ? target_features : host;
  bool avx512 = features && strstr(features, "+avx512f");
  bool avx = features && strstr(features, "+avx,");
  LLVMDisposeMessage(host);
  E->vec_floats = avx512 ? 16 : avx ? 8 : 4;
  E->vec_regs = avx512 ? 32 : 16;
}

static void init_types(CgEmit *E) {
  E->i1 = LLVMInt1TypeInContext(E->ctx);
  E->i32 = LLVMInt32TypeInContext(E->ctx);
  E->i64 = LLVMInt64TypeInContext(E->ctx);
  E->f32 = LLVMFloatTypeInContext(E->ctx);
  E->ptr = LLVMPointerTypeInContext(E->ctx, 0);
  E->barrier_ty = LLVMFunctionType(LLVMVoidTypeInContext(E->ctx), &E->ptr, 1, 0);
}

const CgTarget cg_target_cpu = {CG_TARGET_CPU, 0, 0, 0, false, false,
                                NULL, NULL, NULL, NULL, NULL};

static bool emit_module(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                        const CgTarget *t, const char *features, const CgProfile *prof,
                        CtxDiag *diag);

bool cg_emit_module(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                    const CgProfile *prof, CtxDiag *diag) {
  return emit_module(ctx, mod, k, &cg_target_cpu, NULL, prof, diag);
}

bool cg_emit_target_module(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                           const CgTarget *t, CtxDiag *diag) {
  return emit_module(ctx, mod, k, t, NULL, NULL, diag);
}

bool cg_emit_module_for(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                        const char *features, const CgProfile *prof, CtxDiag *diag) {
  return emit_module(ctx, mod, k, &cg_target_cpu, features, prof, diag);
}

/* [k] into [mod] for target [t]; a CPU's vector plan from [features] (NULL:
 * the host's); instrumented for [prof] (NULL: not). */
static bool emit_module(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                        const CgTarget *t, const char *features, const CgProfile *prof,
                        CtxDiag *diag) {
  CgEmit E;
  memset(&E, 0, sizeof E);
  E.ctx = ctx;
  E.mod = mod;
  E.k = k;
  E.tgt = t;
  E.diag = diag;
  E.prof = prof;
  if (prof) E.prof_counters = cg_prof_globals(mod, k, prof);
  E.b = LLVMCreateBuilderInContext(ctx);
  init_types(&E);
  if (t->vec_floats) E.vec_floats = t->vec_floats, E.vec_regs = t->vec_regs;
  else host_vectors(&E, features);
  E.bufs = ctx_xmalloc(((size_t)k->nbufs + 1) * sizeof *E.bufs);
  E.vars = calloc((size_t)k->nvars + 1, sizeof *E.vars);
  if (!E.vars) ctx_oom();
  E.fn = body_function(&E);
  for (int i = 0; i < k->nbufs; i++) E.bufs[i] = LLVMGetParam(E.fn, (unsigned)i);
  E.args[0] = LLVMGetParam(E.fn, (unsigned)k->nbufs);
  E.args[1] = LLVMGetParam(E.fn, (unsigned)k->nbufs + 1);
  E.tid = LLVMGetParam(E.fn, (unsigned)k->nbufs + 2);
  E.nthreads = LLVMGetParam(E.fn, (unsigned)k->nbufs + 3);
  E.barrier = LLVMGetParam(E.fn, (unsigned)k->nbufs + 4);
  E.barrier_ctx = LLVMGetParam(E.fn, (unsigned)k->nbufs + 5);
  LLVMPositionBuilderAtEnd(E.b, new_block(&E, "entry"));
  emit_block(&E, &k->body);
  LLVMBuildRetVoid(E.b);
  if (t->entry) t->entry(E.b, mod, k, E.fn);
  else entry_function(&E, E.fn);
  LLVMDisposeBuilder(E.b);
  free(E.bufs);
  free(E.vars);
  if (E.failed) return false;
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    CTX_ICE(diag, "codegen: invalid LLVM IR for kernel '%s': %s", k->name, msg);
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMDisposeMessage(msg);
  return true;
}
