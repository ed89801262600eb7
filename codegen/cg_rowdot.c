/* cg_rowdot.c — matrix-vector products whose rows are contiguous: a loop
 * `for i in [lo, hi) { out[.. + i] = sum(r in [0, R)) a[.. + r] * b[.. + r] }`
 * with both factors read along r: a node's own matrix times a vector
 * (mvrnn's B a and A v), a weight read row by row where no register tile
 * runs (refactor_recursion's per-node products, `--disable=register-tile`).
 *
 * LLVM's loop vectorizer widens such a loop along r, one output at a time:
 * vl products a row, then a horizontal sum of the row's vector (extracts and
 * adds, ~12 dependent instructions) and a scalar store, some 21
 * instructions an output. Here vl outputs are computed together: vl
 * accumulators, one a row, each summing its row's products lane by lane
 * over r, then one tree of two-source shuffles and adds folds the vl
 * vectors into the vl sums (log2 vl levels, vl - 1 adds), stored as one
 * vector. One thread, H=256, 5 alternating rounds: treelstm under
 * `refactor_recursion` 0.94x the time at B=1 and 0.95x at B=10; childsum
 * with `--disable=register-tile` 0.88-0.94x at B=1 (two runs). mvrnn's
 * products (the default schedule) stay as fast (0.99-1.01x): their rows are child
 * matrices read from memory for the first time, and the loads, not the
 * sums, take their time.
 *
 * The sum is reassociated (lanes of r, then the tree), as the vectorized
 * loop's is: results differ from the reference by rounding only.
 */
#include "codegen/cg_emit_int.h"

/* Is [e] a float load (or a view, ilir_is_view) whose element moves by one
 * with [r], from a buffer that is not PACKED (in panels)? */
static bool contiguous_in(const CgEmit *E, const IlirExpr *e, const IlirVar *r) {
  if (ilir_is_view(e))
    return !ilir_uses(e->c, r) && contiguous_in(E, e->a, r) && contiguous_in(E, e->b, r);
  return e->kind == ILIR_LOAD && e->type == ILIR_F32 && e->buf >= 0 &&
         e->buf < E->k->nbufs && E->k->bufs[e->buf].kind != ILIR_BUF_PACKED &&
         ilir_coef(e->a, r) == 1;
}

/* The loop [s] in this form with vl-divisible trip counts, or NULL: its
 * reduction. */
static const IlirExpr *row_dot_form(const CgEmit *E, const IlirStmt *s, int vl) {
  if (s->lo->kind != ILIR_CONST || s->hi->kind != ILIR_CONST ||
      (s->hi->ival - s->lo->ival) % vl != 0 || s->hi->ival <= s->lo->ival ||
      s->body.n != 1 || s->body.stmts[0]->kind != ILIR_STORE)
    return NULL;
  const IlirStmt *st = s->body.stmts[0];
  const IlirExpr *sum = st->value;
  if (st->buf < 0 || st->buf >= E->k->nbufs ||
      E->k->bufs[st->buf].kind == ILIR_BUF_PACKED || ilir_coef(st->index, s->var) != 1 ||
      sum->kind != ILIR_REDUCE || sum->op != ILIR_SUM || sum->lo->kind != ILIR_CONST ||
      sum->lo->ival != 0 || sum->hi->kind != ILIR_CONST || sum->hi->ival <= 0 ||
      sum->hi->ival % vl != 0)
    return NULL;
  /* every output of a block is read before the block is stored: nothing
   * may read the outputs' buffer, in an index either */
  const IlirExpr *p = sum->a;
  if (ilir_reads(sum, st->buf) || ilir_reads(st->index, st->buf) ||
      p->kind != ILIR_BINARY || p->op != ILIR_MUL || !contiguous_in(E, p->a, sum->var) ||
      !contiguous_in(E, p->b, sum->var))
    return NULL;
  return sum;
}

/* A pointer to the element the load or view [e] reads (its variables bound). */
static LLVMValueRef element_ptr(CgEmit *E, const IlirExpr *e) {
  if (ilir_is_view(e)) return cg_view_ptr(E, e);
  return cg_buf_at(E, e->buf, cg_emit_expr(E, e->a), E->f32);
}

static LLVMValueRef load_vec(CgEmit *E, LLVMTypeRef vt, LLVMValueRef at) {
  LLVMValueRef v = LLVMBuildLoad2(E->b, vt, at, "");
  LLVMSetAlignment(v, 4);
  return v;
}

/* v[0 .. n) folded into one vector whose lane t is the sum of v[t]'s lanes
 * (n = vl): at each level, chunks of s lanes — the even chunks of the pair
 * (a, b) side by side plus the odd ones — so lanes [0, s) hold a's partial
 * sums and [s, 2s) b's; s halves until it is 1. */
static LLVMValueRef fold_rows(CgEmit *E, LLVMValueRef *v, int vl) {
  LLVMValueRef even[64], odd[64];
  for (int n = vl, s = vl / 2; n > 1; n /= 2, s /= 2) {
    for (int lane = 0; lane < vl; lane++) {
      int chunk = lane / s, at = lane % s;
      even[lane] = LLVMConstInt(E->i32, (unsigned)(2 * chunk * s + at), 0);
      odd[lane] = LLVMConstInt(E->i32, (unsigned)((2 * chunk + 1) * s + at), 0);
    }
    LLVMValueRef me = LLVMConstVector(even, (unsigned)vl),
                 mo = LLVMConstVector(odd, (unsigned)vl);
    for (int p = 0; p < n / 2; p++) {
      LLVMValueRef lo = LLVMBuildShuffleVector(E->b, v[2 * p], v[2 * p + 1], me, "");
      LLVMValueRef hi = LLVMBuildShuffleVector(E->b, v[2 * p], v[2 * p + 1], mo, "");
      v[p] = LLVMBuildFAdd(E->b, lo, hi, "");
    }
  }
  return v[0];
}

bool cg_emit_row_dots(CgEmit *E, const IlirStmt *s) {
  enum { MAX_VL = 64 };
  int vl = E->vec_floats;
  if (E->tgt->kind != CG_TARGET_CPU || vl < 4 || vl > MAX_VL || (vl & (vl - 1)) ||
      (s->loop != ILIR_LOOP_SERIAL && s->loop != ILIR_LOOP_VECTOR))
    return false;
  const IlirExpr *sum = row_dot_form(E, s, vl);
  if (!sum) return false;
  const IlirStmt *st = s->body.stmts[0];
  const IlirExpr *fa = sum->a->a, *fb = sum->a->b;
  LLVMTypeRef vt = LLVMVectorType(E->f32, (unsigned)vl);
  CgLoop Li, Lr;
  cg_loop_open(E, &Li, cg_emit_expr(E, s->lo), cg_emit_expr(E, s->hi), "rowdot.i");
  /* each row's accumulator: a phi of the r loop, from zero */
  cg_loop_open(E, &Lr, cg_const_i64(E, 0), cg_const_i64(E, sum->hi->ival), "rowdot.r");
  LLVMValueRef acc[MAX_VL], next[MAX_VL];
  LLVMPositionBuilderBefore(E->b, LLVMGetNextInstruction(Lr.iv));
  for (int t = 0; t < vl; t++)
    acc[t] = LLVMBuildPhi(E->b, vt, "acc");
  LLVMPositionBuilderAtEnd(E->b, Lr.body);
  if (!cg_bind_var(E, sum->var, Lr.iv)) return true;
  for (int t = 0; t < vl && !E->failed; t++) {
    if (!cg_bind_var(E, s->var, LLVMBuildNSWAdd(E->b, Li.iv, cg_const_i64(E, t), "")))
      break;
    LLVMValueRef a = load_vec(E, vt, element_ptr(E, fa)),
                 b = load_vec(E, vt, element_ptr(E, fb));
    next[t] = cg_math_fmuladd(E->b, E->mod, a, b, acc[t]);
  }
  if (E->failed) return true;
  LLVMBasicBlockRef end = cg_loop_close_by(E, &Lr, vl);
  E->vars[sum->var->id] = NULL;
  LLVMValueRef zero = LLVMConstNull(vt);
  for (int t = 0; t < vl; t++) {
    LLVMValueRef vals[2] = {zero, next[t]};
    LLVMBasicBlockRef from[2] = {Lr.pre, end};
    LLVMAddIncoming(acc[t], vals, from, 2);
  }
  LLVMValueRef sums = fold_rows(E, acc, vl);
  if (!cg_bind_var(E, s->var, Li.iv)) return true;
  LLVMValueRef at = cg_buf_at(E, st->buf, cg_emit_expr(E, st->index), E->f32);
  LLVMSetAlignment(LLVMBuildStore(E->b, sums, at), 4);
  cg_loop_close_by(E, &Li, vl);
  if (!E->failed) E->vars[s->var->id] = NULL;
  return true;
}
