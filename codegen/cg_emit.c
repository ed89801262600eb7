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
 * Beside it: register-tiled products (cg_tile.c), matrix-vector rows
 * (cg_rowdot.c), prefetches of gathered rows (cg_prefetch.c) and the loops a
 * GPU schedule binds to blocks, threads and warps (cg_gpu_loops.c).
 *
 * Assumes a kernel that ilir_verify accepts; a construct it does not know is
 * an internal compiler error and the module is then not used.
 */
#include "codegen/cg_emit_int.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


LLVMValueRef cg_fail(CgEmit *E, LLVMTypeRef type, const char *what, int kind) {
  if (!E->failed) CTX_ICE(E->diag, "codegen: %s %d in kernel '%s'", what, kind, E->k->name);
  E->failed = true;
  return LLVMGetUndef(type);
}

static LLVMTypeRef type_of(const CgEmit *E, IlirType t) {
  return t == ILIR_F32 ? E->f32 : E->i64;
}

LLVMBasicBlockRef cg_new_block(CgEmit *E, const char *name) {
  return LLVMAppendBasicBlockInContext(E->ctx, E->fn, name);
}

LLVMValueRef cg_const_i64(CgEmit *E, long v) {
  return LLVMConstInt(E->i64, (unsigned long long)v, 1);
}

static LLVMValueRef const_f32(CgEmit *E, double v) { return LLVMConstReal(E->f32, v); }

/* ---- loops --------------------------------------------------------------- */

/* Opens `for iv in [lo, hi)` at the builder's position and leaves the builder
 * in the loop body. */
void cg_loop_open(CgEmit *E, CgLoop *L, LLVMValueRef lo, LLVMValueRef hi,
                      const char *name) {
  L->pre = LLVMGetInsertBlock(E->b);
  L->header = cg_new_block(E, name);
  L->body = cg_new_block(E, "body");
  L->exit = cg_new_block(E, "exit");
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
LLVMBasicBlockRef cg_loop_close_by(CgEmit *E, CgLoop *L, long step) {
  return cg_loop_close_step(E, L, cg_const_i64(E, step));
}

LLVMBasicBlockRef cg_loop_close_step(CgEmit *E, CgLoop *L, LLVMValueRef step) {
  LLVMBasicBlockRef end = LLVMGetInsertBlock(E->b);
  LLVMValueRef next = LLVMBuildNSWAdd(E->b, L->iv, step, "");
  LLVMBuildBr(E->b, L->header);
  LLVMValueRef vals[2] = {L->lo, next};
  LLVMBasicBlockRef from[2] = {L->pre, end};
  LLVMAddIncoming(L->iv, vals, from, 2);
  LLVMPositionBuilderAtEnd(E->b, L->exit);
  return end;
}

LLVMBasicBlockRef cg_loop_close(CgEmit *E, CgLoop *L) { return cg_loop_close_by(E, L, 1); }

const char *cg_var_name(const IlirVar *v) { return v && v->name ? v->name : "v"; }

bool cg_bind_var(CgEmit *E, const IlirVar *v, LLVMValueRef val) {
  if (!v || v->id < 0 || v->id >= E->k->nvars) {
    cg_fail(E, E->i64, "variable out of range, id", v ? v->id : -1);
    return false;
  }
  E->vars[v->id] = val;
  return true;
}

/* ---- expressions --------------------------------------------------------- */

/* [v] (of ILIR type [t]) as an i1: nonzero is true. */
static LLVMValueRef truth(CgEmit *E, LLVMValueRef v, IlirType t) {
  if (t == ILIR_F32) return LLVMBuildFCmp(E->b, LLVMRealUNE, v, const_f32(E, 0), "");
  return LLVMBuildICmp(E->b, LLVMIntNE, v, cg_const_i64(E, 0), "");
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
  default: return cg_fail(E, E->f32, "float unary op", op);
  }
}

static LLVMValueRef emit_unary_i64(CgEmit *E, int op, LLVMValueRef x) {
  LLVMValueRef zero = cg_const_i64(E, 0);
  switch (op) {
  case ILIR_NEG: return LLVMBuildNSWSub(E->b, zero, x, "");
  case ILIR_RELU:
    return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, x, zero, ""), x, zero, "");
  case ILIR_ABS:
    return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, x, zero, ""),
                           LLVMBuildNSWSub(E->b, zero, x, ""), x, "");
  default: return cg_fail(E, E->i64, "integer unary op", op);
  }
}

static LLVMValueRef emit_unary(CgEmit *E, const IlirExpr *e) {
  LLVMValueRef x = cg_emit_expr(E, e->a);
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
  LLVMValueRef x = cg_emit_expr(E, e->a), y = cg_emit_expr(E, e->b);
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
  default: return cg_fail(E, type_of(E, e->type), "binary op", e->op);
  }
}

/* Does the kernel write buffers of [kind]? */
static bool buf_writable(IlirBufKind kind) {
  return kind == ILIR_BUF_RESULT || kind == ILIR_BUF_SCRATCH ||
         kind == ILIR_BUF_LEVEL_SCRATCH || kind == ILIR_BUF_INVARIANT;
}

/* A PACKED buffer's panel width as stored (ilir.h): its cols when 0 or wider. */
long cg_pack_panel(const IlirPack *pk) {
  return pk->panel > 0 && pk->panel < pk->cols ? pk->panel : pk->cols;
}

/* Where the logical element [idx] = r * cols + c of a PACKED buffer stored
 * in panels lives (ilir.h, PACKED-PANELS; ilir_pack_at). Tiles compute their
 * stream's place once per block (tile_stream); this is for any other read. */
static LLVMValueRef packed_at(CgEmit *E, const IlirPack *pk, LLVMValueRef idx) {
  long panel = cg_pack_panel(pk);
  if (panel == pk->cols) return idx;
  LLVMValueRef cols = cg_const_i64(E, pk->cols), width = cg_const_i64(E, panel);
  LLVMValueRef r = LLVMBuildSDiv(E->b, idx, cols, ""), c = LLVMBuildSRem(E->b, idx, cols, "");
  LLVMValueRef p0 = LLVMBuildSub(E->b, c, LLVMBuildSRem(E->b, c, width, ""), "");
  LLVMValueRef left = LLVMBuildSub(E->b, cols, p0, "");
  LLVMValueRef narrow = LLVMBuildICmp(E->b, LLVMIntSLT, left, width, "");
  LLVMValueRef w = LLVMBuildSelect(E->b, narrow, left, width, "");
  LLVMValueRef at = LLVMBuildMul(E->b, p0, cg_const_i64(E, pk->rows), "");
  at = LLVMBuildAdd(E->b, at, LLVMBuildMul(E->b, r, w, ""), "");
  return LLVMBuildAdd(E->b, at, LLVMBuildSub(E->b, c, p0, ""), "");
}

static LLVMValueRef emit_load(CgEmit *E, const IlirExpr *e) {
  if (e->buf < 0 || e->buf >= E->k->nbufs) return cg_fail(E, type_of(E, e->type), "load of buffer", e->buf);
  LLVMValueRef idx = cg_emit_expr(E, e->a);
  if (E->k->bufs[e->buf].kind == ILIR_BUF_PACKED) idx = packed_at(E, &E->k->bufs[e->buf].pack, idx);
  bool f = e->type == ILIR_F32;
  LLVMTypeRef elem = f ? E->f32 : E->i32;
  LLVMValueRef v = cg_load_at(E, e->buf, elem, cg_buf_at(E, e->buf, idx, elem));
  return f ? v : LLVMBuildSExt(E->b, v, E->i64, "");
}

LLVMValueRef cg_load_at(CgEmit *E, int buf, LLVMTypeRef elem, LLVMValueRef at) {
  LLVMValueRef v = LLVMBuildLoad2(E->b, elem, at, E->k->bufs[buf].name);
  /* not a copy in shared memory: the kernel writes that at its start */
  if (E->tgt->invariant_readonly && !buf_writable(E->k->bufs[buf].kind) &&
      !E->k->bufs[buf].shared) {
    static const char kind[] = "invariant.load";
    LLVMSetMetadata(v, LLVMGetMDKindIDInContext(E->ctx, kind, sizeof kind - 1),
                    LLVMMetadataAsValue(E->ctx, LLVMMDNodeInContext2(E->ctx, NULL, 0)));
  }
  return v;
}

LLVMValueRef cg_linear_sum(CgEmit *E, IlirExpr **atoms, const long *coefs, int n,
                           const bool *use, long konst) {
  LLVMValueRef sum = cg_const_i64(E, konst);
  for (int i = 0; i < n; i++)
    if (use[i])
      sum = LLVMBuildAdd(E->b, sum, LLVMBuildMul(E->b, cg_emit_expr(E, atoms[i]),
                                                 cg_const_i64(E, coefs[i]), ""), "");
  return sum;
}

/* The address a view (ilir_is_view: c ? P[ia] : R[ib]) reads: the terms
 * both indices share (the same atom, the same coefficient: what moves with
 * the loops inside a row) added once to a pointer chosen between the rows —
 * select(c, P + rest_a, R + rest_b) is then the same for the whole row, and
 * LLVM hoists it; the loads vectorize as a plain row's do. Plain GEPs: the
 * arm not taken may point anywhere (an inner node's word). */
LLVMValueRef cg_view_ptr(CgEmit *E, const IlirExpr *e) {
  enum { MAX_ATOMS = 16 };
  IlirExpr *aa[MAX_ATOMS], *ba[MAX_ATOMS];
  long ac[MAX_ATOMS], bc[MAX_ATOMS], ak, bk;
  int na = ilir_linear(e->a->a, aa, ac, MAX_ATOMS, &ak);
  int nb = ilir_linear(e->b->a, ba, bc, MAX_ATOMS, &bk);
  if (na < 0 || nb < 0) return cg_fail(E, E->ptr, "view with too many index terms", na);
  bool arest[MAX_ATOMS], brest[MAX_ATOMS], common[MAX_ATOMS];
  for (int i = 0; i < na; i++) arest[i] = true, common[i] = false;
  for (int j = 0; j < nb; j++) brest[j] = true;
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb && arest[i]; j++)
      if (brest[j] && ac[i] == bc[j] && ilir_same_expr(aa[i], ba[j], NULL, NULL))
        arest[i] = brest[j] = false, common[i] = true;
  LLVMValueRef c = truth(E, cg_emit_expr(E, e->c), e->c->type);
  LLVMValueRef ra = cg_linear_sum(E, aa, ac, na, arest, ak);
  LLVMValueRef rb = cg_linear_sum(E, ba, bc, nb, brest, bk);
  LLVMValueRef pa = LLVMBuildGEP2(E->b, E->f32, E->bufs[e->a->buf], &ra, 1, "");
  LLVMValueRef pb = LLVMBuildGEP2(E->b, E->f32, E->bufs[e->b->buf], &rb, 1, "");
  LLVMValueRef row = LLVMBuildSelect(E->b, c, pa, pb, "view");
  LLVMValueRef at = cg_linear_sum(E, aa, ac, na, common, 0);
  return LLVMBuildGEP2(E->b, E->f32, row, &at, 1, "");
}

/* c ? a : b with only the chosen arm evaluated (a view: one load through the
 * chosen row, cg_view_ptr). */
static LLVMValueRef emit_select(CgEmit *E, const IlirExpr *e) {
  if (ilir_is_view(e)) return LLVMBuildLoad2(E->b, E->f32, cg_view_ptr(E, e), "view");
  LLVMValueRef c = truth(E, cg_emit_expr(E, e->c), e->c->type);
  LLVMBasicBlockRef then = cg_new_block(E, "sel.then"), els = cg_new_block(E, "sel.else");
  LLVMBasicBlockRef join = cg_new_block(E, "sel.join");
  LLVMBuildCondBr(E->b, c, then, els);
  LLVMPositionBuilderAtEnd(E->b, then);
  LLVMValueRef vals[2];
  LLVMBasicBlockRef from[2];
  vals[0] = cg_emit_expr(E, e->a);
  from[0] = LLVMGetInsertBlock(E->b);
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, els);
  vals[1] = cg_emit_expr(E, e->b);
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
  if (e->op != ILIR_SUM && e->op != ILIR_MAXR) return cg_fail(E, E->f32, "reduction op", e->op);
  LLVMValueRef lo = cg_emit_expr(E, e->lo), hi = cg_emit_expr(E, e->hi);
  LLVMValueRef init = e->op == ILIR_SUM ? const_f32(E, 0) : const_f32(E, -INFINITY);
  CgLoop L;
  cg_loop_open(E, &L, lo, hi, cg_var_name(e->var));
  /* the accumulator's phi goes first in the header, next to the iv's */
  LLVMPositionBuilderBefore(E->b, LLVMGetNextInstruction(L.iv));
  LLVMValueRef acc = LLVMBuildPhi(E->b, E->f32, "acc");
  LLVMPositionBuilderAtEnd(E->b, L.body);
  LLVMValueRef x = cg_bind_var(E, e->var, L.iv) ? cg_emit_expr(E, e->a) : LLVMGetUndef(E->f32);
  LLVMValueRef next;
  if (e->op == ILIR_SUM) {
    next = LLVMBuildFAdd(E->b, acc, x, "");
    LLVMSetFastMathFlags(next, LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
  } else {
    LLVMValueRef gt = LLVMBuildFCmp(E->b, LLVMRealOGT, x, acc, "");
    next = LLVMBuildSelect(E->b, gt, x, acc, "");
  }
  LLVMBasicBlockRef end = cg_loop_close(E, &L);
  if (E->warp_team && !E->failed) cg_loop_hints(E, end, false, 1, false); /* cg_gpu_loops.c */
  if (!E->failed) E->vars[e->var->id] = NULL;
  LLVMValueRef vals[2] = {init, next};
  LLVMBasicBlockRef from[2] = {L.pre, end};
  LLVMAddIncoming(acc, vals, from, 2);
  return acc;
}

LLVMValueRef cg_emit_expr(CgEmit *E, const IlirExpr *e) {
  if (!e) return cg_fail(E, E->i64, "missing expression, kind", -1);
  switch (e->kind) {
  case ILIR_CONST:
    return e->type == ILIR_F32 ? const_f32(E, e->fval) : cg_const_i64(E, e->ival);
  case ILIR_VAR:
    if (!e->var || e->var->id < 0 || e->var->id >= E->k->nvars || !E->vars[e->var->id])
      return cg_fail(E, E->i64, "variable out of scope, id", e->var ? e->var->id : -1);
    return E->vars[e->var->id];
  case ILIR_ARG:
    if (e->ival < 0 || e->ival > 1) return cg_fail(E, E->i64, "kernel argument", (int)e->ival);
    return E->args[e->ival];
  case ILIR_LOAD: return emit_load(E, e);
  case ILIR_UNARY: return emit_unary(E, e);
  case ILIR_BINARY: return emit_binary(E, e);
  case ILIR_SELECT: return emit_select(E, e);
  case ILIR_REDUCE: return emit_reduce(E, e);
  case ILIR_TO_F32: return LLVMBuildSIToFP(E->b, cg_emit_expr(E, e->a), E->f32, "");
  }
  return cg_fail(E, E->i64, "expression kind", (int)e->kind);
}

/* ---- statements ---------------------------------------------------------- */

void cg_emit_store(CgEmit *E, const IlirStmt *s) {
  if (s->buf < 0 || s->buf >= E->k->nbufs) {
    cg_fail(E, E->f32, "store to buffer", s->buf);
    return;
  }
  LLVMValueRef idx = cg_emit_expr(E, s->index);
  LLVMValueRef v = cg_emit_expr(E, s->value);
  LLVMBuildStore(E->b, v, cg_buf_at(E, s->buf, idx, E->f32));
}

void cg_team_share(CgEmit *E, const IlirStmt *s, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMValueRef tlo = cg_emit_expr(E, s->team_lo), thi = cg_emit_expr(E, s->team_hi);
  cg_thread_share(E, &tlo, &thi);
  *lo = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, tlo, *lo, ""), tlo, *lo, "");
  *hi = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, thi, *hi, ""), thi, *hi, "");
}

/* This thread's share of [*lo, *hi): chunk = ceil((hi - lo) / nthreads),
 * [lo + tid * chunk, min(hi, that + chunk)); an empty range past hi. */
void cg_thread_share(CgEmit *E, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMValueRef n = LLVMBuildSub(E->b, *hi, *lo, "");
  LLVMValueRef last = LLVMBuildSub(E->b, E->nthreads, cg_const_i64(E, 1), "");
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
void cg_emit_barrier(CgEmit *E, LLVMValueRef skip) {
  LLVMBasicBlockRef call = cg_new_block(E, "barrier"), join = cg_new_block(E, "barrier.done");
  LLVMValueRef many = LLVMBuildICmp(E->b, LLVMIntSGT, E->nthreads, cg_const_i64(E, 1), "");
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

/* Marks the loop whose back edge is the terminator of [latch] with its
 * hints (a distinct loop ID whose first operand is itself):
 * llvm.loop.vectorize.enable when [vectorize] (a vector loop of the
 * schedule: LLVM's loop vectorizer then vectorizes it where it is legal
 * whatever its cost model says), llvm.loop.interleave.count when
 * [interleave] > 1, llvm.loop.unroll.disable when not [unroll]. */
void cg_loop_hints(CgEmit *E, LLVMBasicBlockRef latch, bool vectorize, int interleave,
                   bool unroll) {
  static const char on_key[] = "llvm.loop.vectorize.enable", il_key[] = "llvm.loop.interleave.count",
                    nu_key[] = "llvm.loop.unroll.disable", loop[] = "llvm.loop";
  LLVMMetadataRef self = LLVMTemporaryMDNode(E->ctx, NULL, 0), ops[4] = {self};
  int n = 1;
  if (vectorize) {
    LLVMMetadataRef on[2] = {LLVMMDStringInContext2(E->ctx, on_key, sizeof on_key - 1),
                             LLVMValueAsMetadata(LLVMConstInt(E->i1, 1, 0))};
    ops[n++] = LLVMMDNodeInContext2(E->ctx, on, 2);
  }
  if (interleave > 1) {
    LLVMMetadataRef il[2] = {LLVMMDStringInContext2(E->ctx, il_key, sizeof il_key - 1),
                             LLVMValueAsMetadata(LLVMConstInt(E->i32, (unsigned)interleave, 0))};
    ops[n++] = LLVMMDNodeInContext2(E->ctx, il, 2);
  }
  if (!unroll) {
    LLVMMetadataRef nu = LLVMMDStringInContext2(E->ctx, nu_key, sizeof nu_key - 1);
    ops[n++] = LLVMMDNodeInContext2(E->ctx, &nu, 1);
  }
  if (n == 1) {
    LLVMDisposeTemporaryMDNode(self);
    return;
  }
  LLVMMetadataRef id = LLVMMDNodeInContext2(E->ctx, ops, (size_t)n);
  LLVMMetadataReplaceAllUsesWith(self, id);
  LLVMSetMetadata(LLVMGetBasicBlockTerminator(latch),
                  LLVMGetMDKindIDInContext(E->ctx, loop, sizeof loop - 1),
                  LLVMMetadataAsValue(E->ctx, id));
}

int cg_transcendentals(const IlirExpr *e) {
  if (!e) return 0;
  bool self = e->kind == ILIR_UNARY &&
              (e->op == ILIR_SIGMOID || e->op == ILIR_TANH || e->op == ILIR_EXP);
  return self + cg_transcendentals(e->a) + cg_transcendentals(e->b) + cg_transcendentals(e->c);
}

/* The interleave count for the loop [s] on the CPU: 4 for an innermost
 * loop of stores, a sigmoid, tanh or exp among them, of a constant trip
 * count of at least 8 host vectors (a node's gates: 256 floats); else 1,
 * LLVM's own choice. One lane's exp is a chain of some 20 dependent
 * operations (~70 cycles); a vector iteration at a time, the out-of-order
 * core's scheduler fills with the chains of 2 or 3 iterations and the loop
 * runs at their latency, ~20 cycles a vector for one sigmoid on Zen 3. Four
 * vectors an iteration interleave 4 chains in program order.
 * (-force-vector-interleave=2 was slower than 1, 4 the fastest; LLVM picks
 * 1 for these loops.) */
static int interleave_count(const CgEmit *E, const IlirStmt *s) {
  if (E->tgt->kind != CG_TARGET_CPU || s->loop == ILIR_LOOP_UNROLL || !s->lo || !s->hi ||
      s->lo->kind != ILIR_CONST || s->hi->kind != ILIR_CONST ||
      s->hi->ival - s->lo->ival < 8L * E->vec_floats)
    return 1;
  bool any = false;
  for (int i = 0; i < s->body.n; i++) {
    const IlirStmt *c = s->body.stmts[i];
    if (c->kind != ILIR_STORE) return 1;
    any |= cg_transcendentals(c->value) > 0;
  }
  return any ? 4 : 1;
}

/* levels[i] */
static LLVMValueRef level_start(CgEmit *E, LLVMValueRef i) {
  LLVMValueRef at = LLVMBuildInBoundsGEP2(E->b, E->i32, E->bufs[E->k->levels_buf], &i, 1, "");
  return LLVMBuildSExt(E->b, LLVMBuildLoad2(E->b, E->i32, at, "levels"), E->i64, "");
}

/* Is level [l] a single node? */
static LLVMValueRef single_node(CgEmit *E, LLVMValueRef l) {
  LLVMValueRef n = LLVMBuildSub(E->b, level_start(E, LLVMBuildAdd(E->b, l, cg_const_i64(E, 1), "")),
                                level_start(E, l), "");
  return LLVMBuildICmp(E->b, LLVMIntEQ, n, cg_const_i64(E, 1), "");
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
    return cg_fail(E, E->i1, "levels loop without a levels buffer, levels_buf", lv);
  LLVMValueRef next = LLVMBuildAdd(E->b, l, cg_const_i64(E, 1), "");
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

bool cg_follows(const CgEmit *E, const IlirStmt *prev, const IlirStmt *s) {
  const IlirBlock *b = E->level_body;
  for (int i = 1; b && i < b->n; i++)
    if (b->stmts[i] == s) return b->stmts[i - 1] == prev;
  return false;
}

/* ---- stack rows ------------------------------------------------------------ */

/* Node rows. A level scratch buffer that one untiled nodes loop alone writes
 * and reads holds values that live for one iteration: node n's row is
 * written and read while n is computed (dense-scratch's rows,
 * sched_apply.c). Its rows for the whole level are then no use; one row on
 * the stack of each thread serves, and stays in L1 from one node to the
 * next. treelstm's leaves put Emb's row plus the bias in such a buffer before
 * the gates read it: the 149 leaves of an SST batch of 10 wrote 458 KiB at H
 * = 256, beside the 1 MiB of weights the L2 holds. With the row on the stack
 * the leaf level took 0.073 ms against 0.094 (profiles, Intel host of
 * 2026-12-07), the kernel 0.979x the time (11 alternating rounds,
 * 0.95-1.02); B = 1 0.991x, balanced trees 0.992x, H = 512 0.983x; seqlstm
 * (its c) 1.00x. The rows of a kernel take at most NODE_ROWS_MAX floats (64
 * KiB) of a thread's stack (a built library's kernel runs on its caller's
 * thread too); buffers past that keep their rows. A register tile inside
 * the loop (mvrnn's P without leaf specialization) addresses its buffers
 * itself (cg_tile.c): a buffer it touches is not taken.
 *
 * Tile rows. A level scratch buffer that one register tile's products store
 * and its epilogues read (and write), each at the output it computes, lives
 * only while the tile runs: treelstm's U_iou (h0 + h1) before its bias
 * (cell.mm1), U_f h0, U_f h1 and their sigmoids (cell.mm2, cell.mm3, f0,
 * f1). The tile keeps it in a block of its rows x outputs on the stack, in
 * L1, instead of rows for the whole level (cg_tile.c, cg_emit_tiled).
 *
 * The ILIR and the runtime's buffers stay as they were (their rows simply
 * go unused). CPU only: a GPU's threads have no such stack. */
enum { NODE_ROWS_MAX = 16384 };

typedef struct {
  const IlirKernel *k;
  const IlirStmt **owner[2]; /* [nbufs]: node rows' loop, tile rows' tile, while
                                every access seen is in it */
  bool *other[2];            /* [nbufs]: an access elsewhere was seen */
} StackRows;

/* Where an access stands: the innermost nodes loop (NULL: none) and whether
 * it is untiled; the level's register tile (NULL: none) and the variable of
 * the output loop of it the access is the body of (NULL: elsewhere). */
typedef struct {
  const IlirStmt *loop;
  bool untiled;
  const IlirStmt *tile;
  const IlirVar *out;
} Where;

/* Is [index] (n - levels[l]) * size + [out], n the tile's node? */
static bool at_own_output(const IlirKernel *k, IlirExpr *index, const IlirVar *n,
                          const IlirVar *out, long size) {
  IlirExpr *atoms[4];
  long coefs[4], konst;
  int m = ilir_linear(index, atoms, coefs, 4, &konst);
  if (m != 3 || konst) return false;
  int seen = 0;
  for (int i = 0; i < m; i++) {
    const IlirExpr *a = atoms[i];
    if (a->kind == ILIR_VAR && a->var == n && coefs[i] == size) seen |= 1;
    else if (a->kind == ILIR_VAR && a->var == out && coefs[i] == 1) seen |= 2;
    else if (a->kind == ILIR_LOAD && a->buf == k->levels_buf && coefs[i] == -size)
      seen |= 4;
  }
  return seen == 7;
}

static void claim(StackRows *R, int kind, int buf, const IlirStmt *by) {
  const IlirStmt **owner = &R->owner[kind][buf];
  if (!by || (*owner && *owner != by)) R->other[kind][buf] = true;
  else *owner = by;
}

/* An access of [buf] at [index] from [w]. */
static void stack_access(StackRows *R, int buf, IlirExpr *index, Where w) {
  if (buf < 0 || buf >= R->k->nbufs || R->k->bufs[buf].kind != ILIR_BUF_LEVEL_SCRATCH)
    return;
  bool own = w.tile && w.out &&
             at_own_output(R->k, index, w.tile->var, w.out, R->k->bufs[buf].size);
  claim(R, 0, buf, w.untiled ? w.loop : NULL);
  claim(R, 1, buf, own ? w.tile : NULL);
}

static void stack_rows_in_expr(StackRows *R, IlirExpr *e, Where w) {
  if (!e) return;
  if (ilir_is_view(e)) w.untiled = false, w.tile = NULL; /* a row pointer of its own */
  if (e->kind == ILIR_LOAD) stack_access(R, e->buf, e->a, w);
  stack_rows_in_expr(R, e->a, w), stack_rows_in_expr(R, e->b, w);
  stack_rows_in_expr(R, e->c, w), stack_rows_in_expr(R, e->lo, w);
  stack_rows_in_expr(R, e->hi, w);
}

static void stack_rows_in_block(StackRows *R, const IlirBlock *b, Where w) {
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    Where inner = w;
    inner.out = NULL;
    if (s->kind == ILIR_STORE) {
      stack_access(R, s->buf, s->index, w);
      stack_rows_in_expr(R, s->index, w), stack_rows_in_expr(R, s->value, w);
    } else if (s->kind == ILIR_IF) {
      stack_rows_in_expr(R, s->cond, inner);
      stack_rows_in_block(R, &s->then, inner), stack_rows_in_block(R, &s->els, inner);
    } else if (s->loop == ILIR_LOOP_NODES && s->tile_nodes > 0) {
      /* a level's tile: its output loops (products, epilogues) */
      inner = (Where){s, false, s, NULL};
      for (int j = 0; j < s->body.n; j++) {
        const IlirStmt *o = s->body.stmts[j];
        inner.out = o->kind == ILIR_LOOP ? o->var : NULL;
        IlirBlock one = {&s->body.stmts[j], 1};
        stack_rows_in_block(R, o->kind == ILIR_LOOP ? &o->body : &one, inner);
      }
    } else {
      stack_rows_in_expr(R, s->lo, inner), stack_rows_in_expr(R, s->hi, inner);
      if (s->loop == ILIR_LOOP_NODES) inner.loop = s, inner.untiled = true;
      /* a node's matrix tile (mvrnn's P) addresses its buffers itself */
      if (s->tile_nodes > 0) inner.untiled = false, inner.tile = NULL;
      stack_rows_in_block(R, &s->body, inner);
    }
  }
}

/* E->stack_loop for the kernel (all NULL off the CPU). */
static void find_stack_rows(CgEmit *E) {
  size_t n = (size_t)E->k->nbufs + 1;
  E->stack_loop = calloc(n, sizeof *E->stack_loop);
  E->on_stack = calloc(n, sizeof *E->on_stack);
  const IlirStmt **tiles = calloc(n, sizeof *tiles);
  bool *other = calloc(2 * n, sizeof *other);
  if (!E->stack_loop || !E->on_stack || !tiles || !other) ctx_oom();
  if (E->tgt->kind == CG_TARGET_CPU) {
    StackRows R = {E->k, {E->stack_loop, tiles}, {other, other + n}};
    stack_rows_in_block(&R, &E->k->body, (Where){NULL, false, NULL, NULL});
  }
  long floats = 0; /* all the kernel's node rows, on every thread's stack */
  for (int b = 0; b < E->k->nbufs; b++) {
    if (other[b] || floats + E->k->bufs[b].size > NODE_ROWS_MAX) E->stack_loop[b] = NULL;
    if (E->stack_loop[b]) floats += E->k->bufs[b].size;
    else if (!other[n + (size_t)b]) E->stack_loop[b] = tiles[b];
  }
  free(tiles);
  free(other);
}

LLVMValueRef cg_buf_at(CgEmit *E, int buf, LLVMValueRef idx, LLVMTypeRef elem) {
  if (E->on_stack && E->on_stack[buf]) { /* (n - n0) w + idx - (n - l0) size - i0 */
    LLVMValueRef n = E->vars[E->stack_node->id];
    LLVMValueRef row = LLVMBuildSub(E->b, n, level_start(E, E->level), "");
    row = LLVMBuildMul(E->b, row, cg_const_i64(E, E->k->bufs[buf].size), "");
    LLVMValueRef at = LLVMBuildSub(E->b, idx, row, "");
    at = LLVMBuildSub(E->b, at, E->stack_i0, "");
    LLVMValueRef r = LLVMBuildMul(E->b, LLVMBuildSub(E->b, n, E->stack_n0, ""),
                                  cg_const_i64(E, E->stack_w), "");
    idx = LLVMBuildAdd(E->b, r, at, "");
  }
  return LLVMBuildInBoundsGEP2(E->b, elem, E->bufs[buf], &idx, 1, "");
}

long cg_buf_node_step(const CgEmit *E, int buf, const IlirVar *n, long didx) {
  if (didx == ILIR_NONLINEAR || !E->on_stack || !E->on_stack[buf]) return didx;
  return n == E->stack_node ? didx - E->k->bufs[buf].size + E->stack_w : ILIR_NONLINEAR;
}

LLVMValueRef cg_entry_buffer(CgEmit *E, long floats, const char *name) {
  LLVMBuilderRef at = LLVMCreateBuilderInContext(E->ctx);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(E->fn);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(at, first);
  else LLVMPositionBuilderAtEnd(at, entry);
  LLVMValueRef buf = LLVMBuildAlloca(at, LLVMArrayType2(E->f32, (uint64_t)floats), name);
  LLVMSetAlignment(buf, 64);
  LLVMDisposeBuilder(at);
  return buf;
}

bool cg_open_stack_rows(CgEmit *E, const IlirStmt *s, int rows, long w) {
  bool any = false;
  for (int b = 0; b < E->k->nbufs && E->level; b++)
    if (E->stack_loop[b] == s) {
      long floats = (long)rows * (w ? w : E->k->bufs[b].size);
      E->bufs[b] = cg_entry_buffer(E, floats, E->k->bufs[b].name);
      E->on_stack[b] = any = true;
    }
  E->stack_node = s->var, E->stack_w = w;
  return any;
}

void cg_close_stack_rows(CgEmit *E, const IlirStmt *s) {
  for (int b = 0; b < E->k->nbufs; b++)
    if (E->stack_loop[b] == s && E->on_stack[b]) /* the function's own parameter again */
      E->bufs[b] = LLVMGetParam(E->fn, (unsigned)b), E->on_stack[b] = false;
}

static void emit_tiled_outlined(CgEmit *E, const IlirStmt *s);

static void emit_loop(CgEmit *E, const IlirStmt *s) {
  if (s->bind && E->tgt->sreg) {
    cg_emit_bound_loop(E, s);
    return;
  }
  if (s->tile_nodes) {
    if (E->tgt->kind == CG_TARGET_CPU) emit_tiled_outlined(E, s);
    else cg_emit_tiled(E, s);
    return;
  }
  if (cg_emit_row_dots(E, s)) return;
  LLVMValueRef lo = cg_emit_expr(E, s->lo), hi = cg_emit_expr(E, s->hi);
  if (s->loop == ILIR_LOOP_NODES && s->team_lo) {
    cg_team_share(E, s, &lo, &hi);
  } else if (s->loop == ILIR_LOOP_NODES || s->loop == ILIR_LOOP_PARALLEL) {
    cg_thread_share(E, &lo, &hi);
  }
  CgLoop L;
  cg_loop_open(E, &L, lo, hi, cg_var_name(s->var));
  LLVMValueRef outer_level = E->level;
  const IlirBlock *outer_body = E->level_body;
  if (s->loop == ILIR_LOOP_LEVELS)
    E->level = L.iv, E->level_body = &s->body, E->synced_after = NULL;
  if (cg_bind_var(E, s->var, L.iv)) {
    if (s->loop == ILIR_LOOP_NODES && E->tgt->kind == CG_TARGET_CPU) {
      bool rows = cg_open_stack_rows(E, s, 1, 0); /* node rows: n0 = n */
      E->stack_n0 = L.iv, E->stack_i0 = cg_const_i64(E, 0);
      for (int i = 0; i < s->body.n && !E->failed; i++) { /* the next node's rows in parts */
        cg_prefetch_next_rows(E, s, L.iv, i);
        cg_emit_block(E, &(IlirBlock){&s->body.stmts[i], 1});
      }
      if (rows) cg_close_stack_rows(E, s);
    } else {
      cg_emit_block(E, &s->body);
    }
  }
  E->level = outer_level, E->level_body = outer_body;
  if (s->loop == ILIR_LOOP_LEVELS && !E->failed) {
    LLVMValueRef skip = cg_grid_level(E) ? NULL : barrier_skippable(E, L.iv);
    /* a level that ends with a tile after whose barrier nothing ran (CgEmit) */
    if (skip && s->body.n > 0 && E->synced_after == s->body.stmts[s->body.n - 1])
      skip = LLVMBuildOr(E->b, skip, E->synced_when, "synced");
    cg_emit_barrier(E, skip);
  }
  LLVMBasicBlockRef latch = cg_loop_close(E, &L);
  if (!E->failed) cg_loop_hints(E, latch, s->loop == ILIR_LOOP_VECTOR, interleave_count(E, s), true);
  if (s->loop == ILIR_LOOP_PARALLEL && !E->failed) cg_emit_barrier(E, NULL);
  if (s->loop == ILIR_LOOP_NODES && !E->level && !E->failed) cg_emit_barrier(E, NULL);
  if (!E->failed) E->vars[s->var->id] = NULL;
}

static void emit_if(CgEmit *E, const IlirStmt *s) {
  LLVMValueRef c = truth(E, cg_emit_expr(E, s->cond), s->cond ? s->cond->type : ILIR_I64);
  LLVMBasicBlockRef then = cg_new_block(E, "if.then"), els = cg_new_block(E, "if.else");
  LLVMBasicBlockRef join = cg_new_block(E, "if.join");
  LLVMBuildCondBr(E->b, c, then, els);
  LLVMPositionBuilderAtEnd(E->b, then);
  cg_emit_block(E, &s->then);
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, els);
  cg_emit_block(E, &s->els);
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, join);
}

/* A profiled region's iterations (cg_profile.c): a node or levels loop's
 * whole range, evaluated before it; one otherwise. */
static LLVMValueRef prof_iters(CgEmit *E, const IlirStmt *s) {
  if (s->kind != ILIR_LOOP || s->loop == ILIR_LOOP_SERIAL || s->loop == ILIR_LOOP_VECTOR ||
      s->loop == ILIR_LOOP_UNROLL)
    return cg_const_i64(E, 1);
  return LLVMBuildSub(E->b, cg_emit_expr(E, s->hi), cg_emit_expr(E, s->lo), "prof.n");
}

void cg_emit_block(CgEmit *E, const IlirBlock *blk) {
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
    case ILIR_STORE: cg_emit_store(E, s); break;
    case ILIR_IF: emit_if(E, s); break;
    default: cg_fail(E, E->i64, "statement kind", (int)s->kind); break;
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

enum { MAX_INLINED_BUFS = 64 }; /* body_function */

/* The CPU kernel's function attributes: the widest vectors the host has
 * (LLVM prefers 256 bits by default, even with AVX-512); divisions marked
 * arcp (cg_math.c's quotients) as a reciprocal estimate and one Newton step,
 * in vectors and scalars. */
static void cpu_attrs(CgEmit *E, LLVMValueRef fn) {
  static const char key[] = "prefer-vector-width", width[] = "512";
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(E->ctx, key, sizeof key - 1, width,
                                                    sizeof width - 1));
  static const char rkey[] = "reciprocal-estimates", rval[] = "vec-divf:1,divf:1";
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(E->ctx, rkey, sizeof rkey - 1, rval,
                                                    sizeof rval - 1));
}

/* What [fn]'s first parameters, the kernel's buffers, promise: noalias
 * (but writable ones where the target lets them alias), readonly. */
static void buffer_attrs(CgEmit *E, LLVMValueRef fn) {
  for (int i = 0; i < E->k->nbufs; i++) {
    bool writable = buf_writable(E->k->bufs[i].kind);
    if (!writable || !E->tgt->alias_writable) add_attr(E, fn, (unsigned)i + 1, "noalias");
    if (!writable) add_attr(E, fn, (unsigned)i + 1, "readonly");
  }
}

/* Binds [E] to [fn]'s parameters (b0, ..., num_nodes, num_levels, tid,
 * nthreads, barrier, barrier_ctx, ...), the body's and a tile's first ones. */
static void bind_params(CgEmit *E, LLVMValueRef fn) {
  unsigned n = (unsigned)E->k->nbufs;
  E->fn = fn;
  for (unsigned i = 0; i < n; i++) E->bufs[i] = LLVMGetParam(fn, i);
  E->args[0] = LLVMGetParam(fn, n);
  E->args[1] = LLVMGetParam(fn, n + 1);
  E->tid = LLVMGetParam(fn, n + 2);
  E->nthreads = LLVMGetParam(fn, n + 3);
  E->barrier = LLVMGetParam(fn, n + 4);
  E->barrier_ctx = LLVMGetParam(fn, n + 5);
}

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
  /* Inlined, each noalias buffer becomes a scope that every access lists
   * the others of: a kernel of N buffers has accesses with N-scope lists,
   * which the SLP vectorizer compares pairwise (a model of 200 chained lets
   * took 3.9 s to compile, 1000 over a minute). Beyond MAX_INLINED_BUFS the
   * body stays a function of its own: the noalias arguments say the same. */
  bool inline_body = n <= MAX_INLINED_BUFS || E->tgt->kind != CG_TARGET_CPU;
  add_attr(E, fn, LLVMAttributeFunctionIndex, inline_body ? "alwaysinline" : "noinline");
  add_attr(E, fn, LLVMAttributeFunctionIndex, "nounwind");
  if (!inline_body) cpu_attrs(E, fn);
  buffer_attrs(E, fn);
  return fn;
}

/* The exported entry: loads bufs[i] and calls the body. */
static void entry_function(CgEmit *E, LLVMValueRef body) {
  int n = E->k->nbufs;
  LLVMTypeRef params[1 + TEAM_ARGS] = {E->ptr, E->i64, E->i64, E->i64, E->i64, E->ptr, E->ptr};
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(E->ctx), params, 1 + TEAM_ARGS, 0);
  LLVMValueRef fn = LLVMAddFunction(E->mod, E->k->name, ft);
  add_attr(E, fn, LLVMAttributeFunctionIndex, "nounwind");
  cpu_attrs(E, fn);
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->ctx, fn, "entry"));
  LLVMValueRef *args = ctx_xmalloc(((size_t)n + TEAM_ARGS) * sizeof *args);
  for (int i = 0; i < n; i++) {
    LLVMValueRef idx = cg_const_i64(E, i);
    LLVMValueRef at = LLVMBuildInBoundsGEP2(E->b, E->ptr, LLVMGetParam(fn, 0), &idx, 1, "");
    args[i] = LLVMBuildLoad2(E->b, E->ptr, at, E->k->bufs[i].name);
  }
  for (int i = 0; i < TEAM_ARGS; i++) args[n + i] = LLVMGetParam(fn, (unsigned)i + 1);
  LLVMBuildCall2(E->b, LLVMGlobalGetValueType(body), body, args, (unsigned)n + TEAM_ARGS, "");
  LLVMBuildRetVoid(E->b);
  free(args);
}

/* A call, where the builder stands, of a new function [name] (internal,
 * noinline): `name(b0, ..., num_nodes, num_levels, tid, nthreads, barrier,
 * barrier_ctx, synced, [level], the loop variables in scope, extra...)`. Its
 * body is what [body] emits with a copy of the emitter bound to those
 * parameters ([extra] to its own), returning the value the function returns
 * ([ret]; NULL for void). [synced] (NULL: false) is the team's state as the
 * function starts: it just met at a barrier after E->synced_after when it
 * holds (cg_emit_tiled). Unused parameters cost nothing: LLVM drops them
 * from an internal function. */
LLVMValueRef cg_emit_outlined(CgEmit *E, const char *name, LLVMTypeRef ret, LLVMValueRef synced,
                              LLVMValueRef *extra, int nextra, CgOutlinedBody body, void *arg) {
  int n = E->k->nbufs, nv = E->k->nvars, np = n + TEAM_ARGS + 1 + (E->level != NULL);
  size_t most = (size_t)np + (size_t)nv + (size_t)nextra;
  LLVMTypeRef *params = ctx_xmalloc(most * sizeof *params);
  LLVMValueRef *args = ctx_xmalloc(most * sizeof *args);
  for (int i = 0; i < n; i++) params[i] = E->ptr, args[i] = E->bufs[i];
  LLVMValueRef team[TEAM_ARGS] = {E->args[0], E->args[1], E->tid, E->nthreads, E->barrier,
                                  E->barrier_ctx};
  for (int i = 0; i < TEAM_ARGS; i++) params[n + i] = LLVMTypeOf(team[i]), args[n + i] = team[i];
  params[n + TEAM_ARGS] = E->i1;
  args[n + TEAM_ARGS] = synced ? synced : LLVMConstInt(E->i1, 0, 0);
  if (E->level) params[np - 1] = LLVMTypeOf(E->level), args[np - 1] = E->level;
  int *var_of = ctx_xmalloc(((size_t)nv + 1) * sizeof *var_of), nargs = np;
  for (int v = 0; v < nv; v++)
    if (E->vars[v]) {
      var_of[nargs - np] = v;
      params[nargs] = LLVMTypeOf(E->vars[v]);
      args[nargs++] = E->vars[v];
    }
  int first_extra = nargs;
  for (int i = 0; i < nextra; i++) params[nargs] = LLVMTypeOf(extra[i]), args[nargs++] = extra[i];
  LLVMTypeRef ft = LLVMFunctionType(ret ? ret : LLVMVoidTypeInContext(E->ctx), params,
                                    (unsigned)nargs, 0);
  LLVMValueRef fn = LLVMAddFunction(E->mod, name, ft);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  add_attr(E, fn, LLVMAttributeFunctionIndex, "noinline");
  add_attr(E, fn, LLVMAttributeFunctionIndex, "nounwind");
  cpu_attrs(E, fn);
  buffer_attrs(E, fn);
  /* the body, emitted in the new function by a copy of the emitter bound to
   * its parameters */
  CgEmit T = *E;
  T.bufs = ctx_xmalloc(((size_t)n + 1) * sizeof *T.bufs);
  T.vars = calloc((size_t)nv + 1, sizeof *T.vars);
  if (!T.vars) ctx_oom();
  bind_params(&T, fn);
  T.synced_after = synced ? E->synced_after : NULL;
  T.synced_when = synced ? LLVMGetParam(fn, (unsigned)n + TEAM_ARGS) : NULL;
  if (E->level) T.level = LLVMGetParam(fn, (unsigned)np - 1);
  for (int a = np; a < first_extra; a++) T.vars[var_of[a - np]] = LLVMGetParam(fn, (unsigned)a);
  LLVMValueRef *own = ctx_xmalloc(((size_t)nextra + 1) * sizeof *own);
  for (int i = 0; i < nextra; i++) own[i] = LLVMGetParam(fn, (unsigned)(first_extra + i));
  LLVMBasicBlockRef at = LLVMGetInsertBlock(E->b);
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->ctx, fn, "entry"));
  LLVMValueRef value = body(&T, own, arg);
  if (ret) LLVMBuildRet(E->b, value ? value : LLVMGetUndef(ret));
  else LLVMBuildRetVoid(E->b);
  LLVMPositionBuilderAtEnd(E->b, at);
  E->failed = T.failed;
  E->tiles = T.tiles;
  LLVMValueRef call = LLVMBuildCall2(E->b, ft, fn, args, (unsigned)nargs, "");
  free(own);
  free(T.bufs);
  free(T.vars);
  free(var_of);
  free(params);
  free(args);
  return call;
}

typedef struct {
  const IlirStmt *s;
  bool synced; /* the tile ends with the team just met at a barrier */
} CgTiledCall;

static LLVMValueRef tiled_body(CgEmit *T, LLVMValueRef *extra, void *arg) {
  (void)extra;
  CgTiledCall *c = arg;
  cg_emit_tiled(T, c->s);
  c->synced = T->synced_after == c->s && T->synced_when;
  return c->synced ? T->synced_when : LLVMConstInt(T->i1, 0, 0);
}

/* A register-tiled product on the CPU as a function of its own
 * (cg_emit_outlined), `NAME.tileN(...)`, returning whether the team just
 * met at a barrier (CgEmit's synced_when; false when the tile leaves that as
 * it was). A kernel's tiles are most of its code, and as functions of their
 * own they compile on a second thread beside the rest (cg_split.c); the call
 * is one per tile a level, nothing beside the tile's work (run times in
 * cg_split.c). */
static void emit_tiled_outlined(CgEmit *E, const IlirStmt *s) {
  /* the team's state as the tile starts: the tile just before it met the
   * team at a barrier when synced_when holds (cg_emit_tiled) */
  bool follows = E->synced_after && E->synced_when && cg_follows(E, E->synced_after, s);
  char name[160];
  snprintf(name, sizeof name, "%s.tile%d", E->k->name, E->tiles++);
  CgTiledCall c = {s, false};
  LLVMValueRef ret = cg_emit_outlined(E, name, E->i1, follows ? E->synced_when : NULL, NULL, 0,
                                      tiled_body, &c);
  if (c.synced && !E->failed) E->synced_after = s, E->synced_when = ret;
}

/* The vector registers of a CPU with [target_features] (NULL: the host's):
 * 32 of 16 floats with AVX-512, 16 of 8 with AVX, 16 of 4 otherwise (the
 * SSE / NEON width). */
void cg_features_vectors(const char *target_features, int *floats, int *regs) {
  char *host = target_features ? NULL : LLVMGetHostCPUFeatures();
  const char *features = target_features ? target_features : host;
  bool avx512 = features && strstr(features, "+avx512f");
  bool avx = features && strstr(features, "+avx,");
  LLVMDisposeMessage(host);
  *floats = avx512 ? 16 : avx ? 8 : 4;
  *regs = avx512 ? 32 : 16;
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
                                NULL, NULL, NULL, NULL, NULL, NULL, NULL};

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
  else cg_features_vectors(features, &E.vec_floats, &E.vec_regs);
  E.bufs = ctx_xmalloc(((size_t)k->nbufs + 1) * sizeof *E.bufs);
  E.vars = calloc((size_t)k->nvars + 1, sizeof *E.vars);
  if (!E.vars) ctx_oom();
  bind_params(&E, body_function(&E));
  find_stack_rows(&E);
  LLVMPositionBuilderAtEnd(E.b, cg_new_block(&E, "entry"));
  cg_emit_block(&E, &k->body);
  LLVMBuildRetVoid(E.b);
  if (t->entry) t->entry(E.b, mod, k, E.fn);
  else entry_function(&E, E.fn);
  LLVMDisposeBuilder(E.b);
  free(E.bufs);
  free(E.vars);
  free(E.stack_loop);
  free(E.on_stack);
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
