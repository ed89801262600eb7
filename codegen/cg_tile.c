/* cg_tile.c — register-tiled products (ilir.h: a NODES loop with
 * tile_nodes > 0): the level's products as matrix-matrix tiles of nb nodes x
 * a block of outputs held in vector registers, weights streamed from their
 * packed panels, the epilogues fused after each tile, the rows left after
 * the full tiles as one tile of that many rows, and the split of a level
 * among the threads by nodes or by outputs (cg_emit.c emits the rest).
 */
#include "codegen/cg_emit_int.h"

#include <stdio.h>
#include <string.h>

enum { MAX_ACC = 64, MAX_TERMS = 16, MAX_STREAMS = 2 * MAX_TERMS, MAX_ROWS = ILIR_TILE_MAX_ROWS };

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
  LLVMValueRef copy[MAX_STREAMS]; /* the stream's block in a copy, or NULL (pack_blocks) */
  long copy_width;                /* that block's width in floats */
  int split;                      /* K: each output sums K parts of r (emit_tile) */
  LLVMValueRef partial;           /* the sums between passes (emit_tile), or NULL */
  int rows;                       /* the rows of a full tile */
  int epilogues;                  /* the epilogue functions made so far (emit_epilogues) */
} CgTile;

static LLVMTypeRef vec_type(CgEmit *E, int vl) {
  return vl > 1 ? LLVMVectorType(E->f32, (unsigned)vl) : E->f32;
}

/* [x] in every lane of a vector of [vl] floats. */
static LLVMValueRef splat(CgEmit *E, LLVMValueRef x, int vl) {
  if (vl == 1) return x;
  LLVMValueRef v = LLVMBuildInsertElement(E->b, LLVMGetPoison(vec_type(E, vl)), x,
                                          cg_const_i64(E, 0), "");
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(E->i32, (unsigned)vl));
  return LLVMBuildShuffleVector(E->b, v, LLVMGetPoison(vec_type(E, vl)), zeros, "");
}

static LLVMValueRef elem_ptr(CgEmit *E, int buf, LLVMValueRef idx) {
  return cg_buf_at(E, buf, idx, E->f32);
}

static LLVMValueRef plus(CgEmit *E, LLVMValueRef x, long c) {
  return c ? LLVMBuildNSWAdd(E->b, x, cg_const_i64(E, c), "") : x;
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
 * IR; B = 10 about 5% faster in alternating runs on a loaded machine).
 * A j2 loop of two or more sigmoids or tanhs (treelstm's c and h: some 60
 * instructions a vector) is not unrolled: unrolled, its count / vl copies
 * made the t loop one block of ~800 lines that LLVM's loop strength
 * reduction took 30 ms over; `ctx build` of treelstm 0.37 -> 0.31 s, its
 * kernel as fast (5 alternating rounds, H=256: B=1 0.98x, B=10 1.02x). A
 * single tanh (treefc) stays unrolled: 1.04x slower not. */
static void emit_epilogues_here(CgEmit *E, const CgTile *T, LLVMValueRef lo,
                                LLVMValueRef hi, LLVMValueRef i0, long count) {
  CgLoop Lt, L;
  cg_loop_open(E, &Lt, lo, hi, "epi.t");
  if (!cg_bind_var(E, T->nodes->var, Lt.iv)) return;
  for (int e = T->nprod; e < T->nodes->body.n && !E->failed; e++) {
    const IlirStmt *lp = T->nodes->body.stmts[e];
    cg_loop_open(E, &L, cg_const_i64(E, 0), cg_const_i64(E, count), "epi");
    if (cg_bind_var(E, lp->var, LLVMBuildNSWAdd(E->b, i0, L.iv, "")))
      cg_emit_store(E, lp->body.stmts[0]);
    LLVMBasicBlockRef latch = cg_loop_close(E, &L);
    cg_loop_hints(E, latch, false, 1, cg_transcendentals(lp->body.stmts[0]->value) < 2);
    E->vars[lp->var->id] = NULL;
  }
  cg_loop_close(E, &Lt);
}

typedef struct {
  const CgTile *T;
  long count;
} CgEpilogues;

static LLVMValueRef epilogues_body(CgEmit *E, LLVMValueRef *extra, void *arg) {
  const CgEpilogues *c = arg;
  E->stack_n0 = extra[0], E->stack_i0 = extra[2]; /* the tile's rows (cg_emit_tiled) */
  emit_epilogues_here(E, c->T, extra[0], extra[1], extra[2], c->count);
  return NULL;
}

/* The epilogues as above, on the CPU in a function of their own
 * (cg_emit_outlined, `NAME.tileN.epiM(..., lo, hi, i0)`). Inline, what they
 * read that does not change along the tile's loops — the biases, the
 * constants of sigmoid and tanh — is loaded before those loops and held in
 * registers across the products, where the tile's accumulators need them:
 * treelstm at H = 64 (its whole output one block of the tile) had all 24
 * accumulators of U_f's tile on the stack, loaded and stored at every step.
 * A call per tile costs a few instructions beside its epilogues' work. */
static void emit_epilogues(CgEmit *E, CgTile *T, LLVMValueRef lo, LLVMValueRef hi,
                           LLVMValueRef i0, long count) {
  if (E->tgt->kind != CG_TARGET_CPU) {
    emit_epilogues_here(E, T, lo, hi, i0, count);
    return;
  }
  size_t len;
  const char *tile = LLVMGetValueName2(E->fn, &len);
  char name[200];
  snprintf(name, sizeof name, "%.*s.epi%d", (int)len, tile, T->epilogues++);
  CgEpilogues c = {T, count};
  LLVMValueRef extra[3] = {lo, hi, i0};
  /* the tile's own variables are bound in its blocks, not where the call
   * stands; the epilogues bind theirs */
  const IlirVar *own[ILIR_TILE_MAX_PRODUCTS + 1] = {T->nodes->var};
  LLVMValueRef was[ILIR_TILE_MAX_PRODUCTS + 1];
  for (int p = 0; p < T->nprod; p++) own[p + 1] = T->prod[p].loop->var;
  for (int v = 0; v <= T->nprod; v++) was[v] = E->vars[own[v]->id], E->vars[own[v]->id] = NULL;
  cg_emit_outlined(E, name, NULL, NULL, extra, 3, epilogues_body, &c);
  for (int v = 0; v <= T->nprod; v++) E->vars[own[v]->id] = was[v];
}

/* Does [y] read a PACKED copy (ilir.h, PACKED-PANELS)? */
static bool reads_packed(const CgEmit *E, const IlirExpr *y) {
  return y->kind == ILIR_LOAD && E->k->bufs[y->buf].kind == ILIR_BUF_PACKED;
}

/* Is [e] exactly `r * cols + j` — how the tiler reads a PACKED copy
 * (sched_apply.c tile_product)? */
static bool packed_row_form(const IlirExpr *e, const IlirVar *r, const IlirVar *j, long cols) {
  if (e->kind != ILIR_BINARY || e->op != ILIR_ADD || e->b->kind != ILIR_VAR || e->b->var != j)
    return false;
  const IlirExpr *rc = e->a; /* r * cols; just r for one column (the product folded) */
  if (cols == 1 && rc->kind == ILIR_VAR) return rc->var == r;
  return rc->kind == ILIR_BINARY && rc->op == ILIR_MUL && rc->a->kind == ILIR_VAR &&
         rc->a->var == r && rc->b->kind == ILIR_CONST && rc->b->ival == cols;
}


/* Where a term of a tile reads y for the block of outputs from i0. A PACKED
 * copy (ilir.h, PACKED-PANELS) is read at base + r * step: base the block's
 * place in its panel, step the panel's width (the last panel may be
 * narrower) — one contiguous stream over r. Any other y (a node's matrix) is
 * read at its own index, base NULL. */
typedef struct {
  LLVMValueRef base, step;
  LLVMValueRef copy; /* non-NULL: the block copied here (pack_blocks), rows step apart */
} CgStream;

static CgStream tile_stream(CgEmit *E, const IlirExpr *red, const IlirVar *j, LLVMValueRef i0) {
  const IlirExpr *p = red->a->b;
  CgStream st = {NULL, NULL, NULL};
  if (!reads_packed(E, p)) return st;
  const IlirPack *pk = &E->k->bufs[p->buf].pack;
  long panel = cg_pack_panel(pk), tail = pk->cols % panel;
  if (!packed_row_form(p->a, red->var, j, pk->cols)) {
    cg_fail(E, E->i64, "packed weights read at an unknown index, buffer", p->buf);
    return st;
  }
  /* blocks never straddle a panel (emit_tiled), so i0's panel is the block's */
  LLVMValueRef p0 = LLVMBuildMul(E->b, LLVMBuildSDiv(E->b, i0, cg_const_i64(E, panel), ""),
                                 cg_const_i64(E, panel), "panel");
  st.base = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, p0, cg_const_i64(E, pk->rows), ""),
                         LLVMBuildSub(E->b, i0, p0, ""), "");
  st.step = cg_const_i64(E, panel);
  if (tail) {
    LLVMValueRef last = LLVMBuildICmp(E->b, LLVMIntSGE, p0, cg_const_i64(E, pk->cols - tail), "");
    st.step = LLVMBuildSelect(E->b, last, cg_const_i64(E, tail), st.step, "step");
  }
  return st;
}

/* Binds every product's output variable to [i] (the outputs from i). */
static bool bind_outs(CgEmit *E, const CgTile *T, LLVMValueRef i) {
  for (int p = 0; p < T->nprod; p++)
    if (!cg_bind_var(E, T->prod[p].loop->var, i)) return false;
  return true;
}

/* The address of y(r, i0) of stream [S] (r bound; every output variable
 * bound to i0), or NULL after an ICE: in its copy, in its PACKED panel, at
 * a view's row (a leaf's row where it is: one pointer per row) or at y's own
 * index. */
static LLVMValueRef stream_row(CgEmit *E, const CgTile *T, const CgStreamTerms *S, CgStream st,
                               LLVMValueRef r, LLVMValueRef i0) {
  const IlirExpr *y = S->red[0]->a->b;
  if (!cg_bind_var(E, S->red[0]->var, r) || !bind_outs(E, T, i0)) return NULL;
  if (st.copy) {
    LLVMValueRef at = LLVMBuildMul(E->b, r, st.step, "");
    return LLVMBuildGEP2(E->b, E->f32, st.copy, &at, 1, "");
  }
  if (ilir_is_view(y)) return cg_view_ptr(E, y);
  LLVMValueRef at = st.base ? LLVMBuildAdd(E->b, st.base, LLVMBuildMul(E->b, r, st.step, ""), "")
                            : cg_emit_expr(E, y->a);
  return elem_ptr(E, y->buf, at);
}

/* Weights that stream in from the L3 at every level (IlirStmt.tile_streams)
 * are prefetched into L1 this far ahead of the row a tile step reads, in
 * tiles of more than PREFETCH_ROWS rows. With 10 rows, 20 multiply-adds a
 * row of 32 weights, the loop keeps too few of its loads in flight to cover
 * the L3's latency, and the hardware prefetcher does not run far enough
 * ahead: seqlstm H=512 B=10 (4 MiB of weights a step, 10 rows) 0.87-0.88x
 * the time at 4 KiB ahead (2 KiB 0.88x, 6 KiB 0.87x, 8 KiB 0.88x, 12 KiB
 * 0.91x; into the L2 only, 0.91x), two threads 0.89x; treegru H=512 0.96x,
 * childsum 0.97x, treelstm 0.99x (5 alternating rounds). Tiles of 6 rows or
 * fewer (B=1, a level's rest) stay without: they wait on the stream anyway,
 * and the extra loads made them 1.01-1.02x. A row counts once per product
 * the stream feeds: treelstm's tile of U_f h0 and U_f h1, 7 rows of each,
 * does 28 multiply-adds per 128 bytes of U_f, more than a one-product tile
 * of 12 rows does (sched_apply.c, wide_products). */
enum { PREFETCH_AHEAD_BYTES = 4096, PREFETCH_ROWS = 6 };

/* Prefetches the row of stream [st] that the step PREFETCH_AHEAD_BYTES
 * ahead of row [row] reads: iv * vl floats, a cache line per 16 of them.
 * A plain GEP: past the last row it may point beyond the weights (a
 * prefetch does not fault). */
static void prefetch_ahead(CgEmit *E, CgStream st, LLVMValueRef row, int iv, int vl) {
  long row_bytes = (long)iv * vl * (long)sizeof(float);
  LLVMValueRef rows = cg_const_i64(E, PREFETCH_AHEAD_BYTES / row_bytes);
  LLVMValueRef ahead = LLVMBuildMul(E->b, st.step, rows, "");
  LLVMValueRef fut = LLVMBuildGEP2(E->b, E->f32, row, &ahead, 1, "ahead");
  for (long l = 0; l < (long)iv * vl; l += 16) {
    LLVMValueRef off = cg_const_i64(E, l);
    cg_emit_prefetch(E, LLVMBuildGEP2(E->b, E->f32, fut, &off, 1, ""));
  }
}

/* How an access of [buf] at [index] moves in tile [T]: [*dn] elements from
 * one node to the next, [*dv] from one value of [v] to the next (stack
 * rows' arithmetic included, cg_buf_node_step); false where either is not a
 * constant. A block of such accesses is then addressed from its first one:
 * LLVM folded each row's and vector's own index expression to the same
 * code, but spent much of its time doing so on the wide tiles. */
static bool tile_strides(const CgEmit *E, const CgTile *T, int buf, const IlirExpr *index,
                         const IlirVar *v, long *dn, long *dv) {
  *dv = ilir_coef(index, v); /* cg_buf_at moves with the index alone */
  *dn = cg_buf_node_step(E, buf, T->nodes->var, ilir_coef(index, T->nodes->var));
  return *dv != ILIR_NONLINEAR && *dn != ILIR_NONLINEAR;
}

/* Where a tile's steps read each term's x: x(n0 + b, r) at first[t] + b *
 * dn[t] + r * dr[t] where x is a load of floats that moves by constants
 * (tile_strides: a level's rows of a scratch buffer, U_iou (h0 + h1)'s
 * sums); first[t] NULL where it does not (a child's row through dep, a
 * view), and x is then emitted from its index at each step. */
typedef struct {
  LLVMValueRef first[ILIR_TILE_MAX_PRODUCTS];
  long dn[ILIR_TILE_MAX_PRODUCTS], dr[ILIR_TILE_MAX_PRODUCTS];
} XBlock;

/* [X] for the rows from n0 of stream [S], at the builder's place. */
static bool x_block(CgEmit *E, const CgTile *T, const CgStreamTerms *S, LLVMValueRef n0,
                    XBlock *X) {
  for (int t = 0; t < S->n; t++) {
    const IlirExpr *x = S->red[t]->a->a;
    const IlirVar *r = S->red[t]->var;
    X->first[t] = NULL;
    if (x->kind != ILIR_LOAD || x->type != ILIR_F32 ||
        E->k->bufs[x->buf].kind == ILIR_BUF_PACKED ||
        !tile_strides(E, T, x->buf, x->a, r, &X->dn[t], &X->dr[t]))
      continue;
    if (!cg_bind_var(E, r, cg_const_i64(E, 0)) || !cg_bind_var(E, T->nodes->var, n0))
      return false;
    X->first[t] = elem_ptr(E, x->buf, cg_emit_expr(E, x->a));
    E->vars[r->id] = NULL;
  }
  return !E->failed;
}

/* One step r of stream [S]: iv vector loads of y's row, each feeding nb
 * multiply-adds per term of the stream, with x(n0 + b, r) of that term;
 * acc[p * nb * iv + b * iv + v] is product p's, row b's, vector v's. */
static void tile_step(CgEmit *E, const CgTile *T, const CgStreamTerms *S, CgStream st,
                      LLVMValueRef r, LLVMValueRef n0, int nb, LLVMValueRef i0, int iv, int vl,
                      const XBlock *X, LLVMValueRef *acc) {
  LLVMTypeRef vt = vec_type(E, vl);
  LLVMValueRef w[MAX_ACC];
  LLVMValueRef row = stream_row(E, T, S, st, r, i0);
  if (!row) return;
  if (T->nodes->tile_streams && st.base && !st.copy && S->n * nb > PREFETCH_ROWS &&
      E->tgt->kind == CG_TARGET_CPU)
    prefetch_ahead(E, st, row, iv, vl);
  for (int v = 0; v < iv; v++) {
    LLVMValueRef off = cg_const_i64(E, (long)v * vl);
    w[v] = LLVMBuildLoad2(E->b, vt, LLVMBuildGEP2(E->b, E->f32, row, &off, 1, ""), "w");
    LLVMSetAlignment(w[v], st.copy ? (unsigned)vl * 4 : 4);
  }
  for (int t = 0; t < S->n && !E->failed; t++) {
    LLVMValueRef *a = acc + S->prod[t] * nb * iv;
    if (!cg_bind_var(E, S->red[t]->var, r)) return;
    LLVMValueRef at = X->first[t] ? LLVMBuildMul(E->b, r, cg_const_i64(E, X->dr[t]), "") : NULL;
    for (int b = 0; b < nb; b++) {
      LLVMValueRef x;
      if (at) {
        LLVMValueRef off = LLVMBuildAdd(E->b, at, cg_const_i64(E, b * X->dn[t]), "");
        x = cg_load_at(E, S->red[t]->a->a->buf, E->f32,
                       LLVMBuildInBoundsGEP2(E->b, E->f32, X->first[t], &off, 1, ""));
      } else {
        if (!cg_bind_var(E, T->nodes->var, plus(E, n0, b))) return;
        x = cg_emit_expr(E, S->red[t]->a->a);
      }
      LLVMValueRef xb = splat(E, x, vl);
      for (int v = 0; v < iv; v++) a[b * iv + v] = cg_math_fmuladd(E->b, E->mod, xb, w[v], a[b * iv + v]);
    }
  }
  for (int t = 0; t < S->n; t++) E->vars[S->red[t]->var->id] = NULL;
}

/* The sums over r of one stream, for the parts q0 .. q0 + P - 1 of the K
 * equal parts of its r range, into acc[q * na ...] (na accumulators per
 * part, each one chain of multiply-adds over its part's r in order). */
static void tile_stream_sum(CgEmit *E, const CgTile *T, int g, LLVMValueRef n0, int nb,
                            LLVMValueRef i0, int iv, int vl, LLVMValueRef *acc, int na,
                            int q0, int P) {
  LLVMValueRef phi[MAX_ACC], next[MAX_ACC];
  const CgStreamTerms *S = &T->stream[g];
  CgStream st = {NULL, cg_const_i64(E, T->copy_width), T->copy[g]};
  if (!st.copy) st = tile_stream(E, S->red[0], T->prod[S->prod[0]].loop->var, i0);
  if (E->failed) return;
  long part = S->red[0]->hi->ival / T->split;
  XBlock X;
  if (!x_block(E, T, S, n0, &X)) return;
  CgLoop L;
  cg_loop_open(E, &L, cg_const_i64(E, 0), cg_const_i64(E, part), "r");
  LLVMPositionBuilderBefore(E->b, LLVMGetNextInstruction(L.iv));
  for (int a = 0; a < P * na; a++) phi[a] = next[a] = LLVMBuildPhi(E->b, vec_type(E, vl), "acc");
  LLVMPositionBuilderAtEnd(E->b, L.body);
  /* A tile of at least half the full rows over PACKED weights takes two
   * steps of r an iteration (the same chains in the same order): 9
   * alternating rounds, H=256, B=10: treelstm 0.95x the time, treegru 0.95x,
   * treefc 0.97x, childsum 0.97x; B=1 (mostly shorter tiles) 0.90-1.01x.
   * Shorter tiles and node matrices stay one step: mvrnn B=10 with every
   * tile unrolled 1.31x, and treelstm's ctx build 1.14x against 1.07x.
   * Since tiles are even (tile_rows), most are within a row or two of the
   * full one: unrolling those too, on the Intel host of 2026-12-07, 5-9
   * alternating rounds against full tiles only, B=10: seqlstm H=256 0.96x
   * the time, treelstm 0.97x, treegru 0.98x; B=1 0.99-1.01x; ctx build of
   * treelstm unchanged (0.16-0.17 s). */
  int U = E->tgt->kind == CG_TARGET_CPU && 2 * nb >= T->rows && st.base && part % 2 == 0 ? 2 : 1;
  for (int u = 0; u < U; u++)
    for (int q = 0; q < P && !E->failed; q++)
      tile_step(E, T, S, st, plus(E, L.iv, (q0 + q) * part + u), n0, nb, i0, iv, vl, &X,
                next + q * na);
  LLVMBasicBlockRef end = cg_loop_close_by(E, &L, U);
  for (int a = 0; a < P * na; a++) {
    LLVMValueRef vals[2] = {acc[a], next[a]};
    LLVMBasicBlockRef from[2] = {L.pre, end};
    LLVMAddIncoming(phi[a], vals, from, 2);
    acc[a] = phi[a];
  }
}

/* How many of the K parts of the r range a tile of na accumulators sums at
 * once: the most (a divisor of K) whose accumulators, a row of weights and x
 * fit the registers. */
static int parts_at_once(const CgEmit *E, int K, int na, int iv) {
  int P = K;
  while (P > 1 && P * na + iv + 2 > E->vec_regs) P /= 2;
  return P;
}

/* One tile: rows t in [n0, n0 + nb) x outputs [i0, i0 + iv * vl) of every
 * product, summed in nprod * nb * iv accumulators of vl floats, then stored.
 *
 * Each output is the sum of K chains of multiply-adds, one per K-th of the
 * r range (T->split), added in order: (c0 + c1) + ... A tile of a few rows
 * has too few chains to cover the FMA's latency (AVX2's one row of 2
 * vectors: 2 chains, 4 cycles each); it sums the K parts at once, K times
 * the chains. A tile whose registers hold fewer parts sums them in passes,
 * the sum so far kept on the stack between passes. The rows add up alike in
 * every shape of tile, so results do not depend on how a level's nodes fall
 * into tiles (the thread count, the batch). */
static void emit_tile(CgEmit *E, CgTile *T, LLVMValueRef n0, int nb, LLVMValueRef i0, int iv,
                      int vl) {
  LLVMValueRef acc[MAX_ACC], sum[MAX_ACC];
  int na = T->nprod * nb * iv, P = parts_at_once(E, T->split, na, iv), passes = T->split / P;
  if (passes > 1 && !T->partial)
    T->partial = cg_entry_buffer(E, (long)MAX_ACC * vl, "partial");
  LLVMTypeRef vt = vec_type(E, vl);
  for (int pass = 0; pass < passes && !E->failed; pass++) {
    for (int a = 0; a < P * na; a++) acc[a] = LLVMConstNull(vt);
    for (int g = 0; g < T->nstreams && !E->failed; g++)
      tile_stream_sum(E, T, g, n0, nb, i0, iv, vl, acc, na, pass * P, P);
    for (int a = 0; a < na && !E->failed; a++) {
      LLVMValueRef off = cg_const_i64(E, (long)a * vl);
      LLVMValueRef at = passes > 1 ? LLVMBuildGEP2(E->b, E->f32, T->partial, &off, 1, "") : NULL;
      if (pass > 0) {
        sum[a] = LLVMBuildLoad2(E->b, vt, at, "sum");
        LLVMSetAlignment(sum[a], (unsigned)vl * 4);
      }
      for (int q = 0; q < P; q++)
        sum[a] = pass == 0 && q == 0 ? acc[a] : LLVMBuildFAdd(E->b, sum[a], acc[q * na + a], "");
      if (pass + 1 < passes) LLVMSetAlignment(LLVMBuildStore(E->b, sum[a], at), (unsigned)vl * 4);
    }
  }
  /* Each product's block is stored from the address of its first vector
   * where it moves by constants (tile_strides): its index emitted once a
   * tile, not once a vector (the stores had been half of treelstm's tile
   * code before optimization). */
  for (int p = 0; p < T->nprod && !E->failed; p++) {
    const IlirStmt *store = T->prod[p].store;
    const IlirVar *out = T->prod[p].loop->var;
    long dn, di;
    LLVMValueRef first = NULL;
    if (tile_strides(E, T, store->buf, store->index, out, &dn, &di)) {
      cg_bind_var(E, T->nodes->var, n0), cg_bind_var(E, out, i0);
      first = elem_ptr(E, store->buf, cg_emit_expr(E, store->index));
    }
    for (int b = 0; b < nb && !E->failed; b++)
      for (int v = 0; v < iv && !E->failed; v++) {
        LLVMValueRef at;
        if (first) {
          LLVMValueRef off = cg_const_i64(E, b * dn + (long)v * vl * di);
          at = LLVMBuildInBoundsGEP2(E->b, E->f32, first, &off, 1, "");
        } else {
          cg_bind_var(E, T->nodes->var, plus(E, n0, b));
          cg_bind_var(E, out, plus(E, i0, (long)v * vl));
          at = elem_ptr(E, store->buf, cg_emit_expr(E, store->index));
        }
        LLVMSetAlignment(LLVMBuildStore(E->b, sum[(p * nb + b) * iv + v], at), 4);
      }
  }
}

/* Do nb rows x iv vectors of every product fit the registers (nprod * nb *
 * iv accumulators, iv weights, x and one spare), with a block that is a
 * divisor of every PACKED panel the tile reads (no block straddles two
 * panels)? */
static bool tile_fits(const CgEmit *E, const CgTile *T, int nb, int iv, int vl) {
  int na = T->nprod * nb;
  if (!ilir_tile_fits(T->nprod, nb, iv, E->vec_regs) || na * iv > MAX_ACC) return false;
  for (int g = 0; g < T->nstreams; g++) {
    const IlirExpr *ye = T->stream[g].red[0]->a->b;
    const IlirBuf *y = ye->kind == ILIR_LOAD ? &E->k->bufs[ye->buf] : NULL;
    long panel = y && y->kind == ILIR_BUF_PACKED ? cg_pack_panel(&y->pack) : 0;
    if (panel && panel != y->pack.cols && panel % ((long)iv * vl)) return false;
  }
  return true;
}

/* The panel width all the tile's PACKED streams share (0: none, or several). */
static long tile_panel(const CgEmit *E, const CgTile *T) {
  long panel = 0;
  for (int g = 0; g < T->nstreams; g++) {
    const IlirExpr *ye = T->stream[g].red[0]->a->b;
    const IlirBuf *y = ye->kind == ILIR_LOAD ? &E->k->bufs[ye->buf] : NULL;
    if (!y || y->kind != ILIR_BUF_PACKED) continue;
    long p = cg_pack_panel(&y->pack);
    if (panel && p != panel) return 0;
    panel = p;
  }
  return panel;
}

/* The vectors per block of outputs, at most the schedule's tile_outs, and
 * the rows per tile [nb]: the most vectors that fit with nb rows; but when
 * that block is narrower than the panels it reads (each weight row then
 * read in parts, at the panel's stride), a block of the whole panel with
 * fewer rows, down to half of nb, if one fits. The panels are as wide as a
 * one-product tile of nb rows on this host (sched_apply.c, panel_width);
 * products sharing a weight stream need more accumulators: treelstm's
 * U_f h0 and U_f h1 with AVX2's 16 registers, 3 rows x 16 floats instead of
 * 4 x 8 (H=512 B=10: 0.79x the time, 5 alternating rounds). */
static int tile_vectors(const CgEmit *E, const CgTile *T, int *nb, int vl, int want) {
  int asked = want / vl > 0 ? want / vl : 1, iv = asked;
  while (iv > 1 && !tile_fits(E, T, *nb, iv, vl)) iv--;
  long panel = tile_panel(E, T);
  int whole = panel % vl ? 0 : (int)(panel / vl);
  if (whole > iv && whole <= asked)
    for (int b = *nb - 1; b >= 2 && 2 * b >= *nb; b--)
      if (tile_fits(E, T, b, whole, vl)) return *nb = b, whole;
  /* a block narrower than asked leaves registers for more rows: each weight
   * vector loaded then feeds more of them, and a level of 10 nodes is two
   * tiles, not three (AVX2's 16 registers: 6 rows x 16 floats instead of 4;
   * B=10 seqlstm H=256 0.83x the time, childsum H=512 0.88x, treegru 0.90x,
   * treefc 0.94x, dagrnn 1.03x, 3 alternating rounds) */
  while (iv < asked && *nb < MAX_ROWS && tile_fits(E, T, *nb + 1, iv, vl)) ++*nb;
  return iv;
}

/* A level's rows [lo, hi) in tiles of at most nb rows, as even as they go:
 * ceil(n / nb) tiles, the first n % tiles of them one row longer. A level of
 * 13 nodes with tiles of 6 is 5 + 4 + 4, not 6 + 6 + 1: every shape reads the
 * weights once per tile, and a tile of one row waits on them (a multiply-add
 * per vector loaded) where one of four does four. */
typedef struct {
  LLVMValueRef lo, tiles, base, longer; /* tiles, their rows, how many have one more */
} TileRows;

static TileRows tile_rows(CgEmit *E, LLVMValueRef lo, LLVMValueRef hi, int nb) {
  LLVMValueRef n = LLVMBuildSub(E->b, hi, lo, "");
  LLVMValueRef tiles = LLVMBuildSDiv(E->b, plus(E, n, nb - 1), cg_const_i64(E, nb), "tiles");
  LLVMValueRef some = LLVMBuildICmp(E->b, LLVMIntSGT, tiles, cg_const_i64(E, 0), "");
  LLVMValueRef k = LLVMBuildSelect(E->b, some, tiles, cg_const_i64(E, 1), "");
  LLVMValueRef base = LLVMBuildSDiv(E->b, n, k, "base");
  return (TileRows){lo, tiles, base, LLVMBuildSub(E->b, n, LLVMBuildMul(E->b, base, k, ""), "")};
}

/* The [t]th tile of [R]: its rows, its first row in *n0. */
static LLVMValueRef tile_at(CgEmit *E, const TileRows *R, LLVMValueRef t, LLVMValueRef *n0) {
  LLVMValueRef longer = LLVMBuildICmp(E->b, LLVMIntSLT, t, R->longer, "");
  LLVMValueRef before = LLVMBuildSelect(E->b, longer, t, R->longer, "");
  *n0 = LLVMBuildAdd(E->b, LLVMBuildAdd(E->b, R->lo, LLVMBuildMul(E->b, t, R->base, ""), ""),
                     before, "n0");
  return LLVMBuildAdd(E->b, R->base, LLVMBuildZExt(E->b, longer, E->i64, ""), "rows");
}

/* One tile of [rows] rows from n0 (1 to nb): a switch on the count, a tile
 * shape per case. */
static void emit_tiles(CgEmit *E, CgTile *T, LLVMValueRef n0, LLVMValueRef rows, int nb,
                       LLVMValueRef i0, int iv, int vl) {
  if (nb == 1) {
    emit_tile(E, T, n0, 1, i0, iv, vl);
    return;
  }
  LLVMBasicBlockRef done = cg_new_block(E, "tile.done");
  LLVMValueRef sw = LLVMBuildSwitch(E->b, rows, done, (unsigned)nb);
  for (int c = nb; c >= 1 && !E->failed; c--) {
    LLVMBasicBlockRef bb = cg_new_block(E, c == nb ? "tile" : "tile.short");
    LLVMAddCase(sw, cg_const_i64(E, c), bb);
    LLVMPositionBuilderAtEnd(E->b, bb);
    emit_tile(E, T, n0, c, i0, iv, vl);
    LLVMBuildBr(E->b, done);
  }
  LLVMPositionBuilderAtEnd(E->b, done);
}

/* K for [T] (emit_tile): 2 where every stream's r range halves into parts of
 * at least 8 on the CPU, else 1. AVX2, 3 to 7 alternating rounds against
 * K = 1: B=1 treefc H=256 0.80x the time, treelstm 0.93-0.94x, seqlstm 0.93x,
 * childsum 0.95x, treegru 0.93x; B=10 treegru H=512 0.97x, childsum 0.98x,
 * treefc 0.99x, dagrnn 1.01x, seqlstm H=512 0.98x but H=256 1.03x (its
 * levels of 10 rows: tiles of 6 and 4 rows, each in two passes). K = 4 was no
 * faster than 2 (treelstm H=256 B=1 0.97x against 0.93x). */
/* A block of outputs of at least ONE_PART_VECTORS vectors, over reductions
 * of at most ONE_PART_MAX_R, sums r in one part: a row of the tile then has
 * as many chains of multiply-adds as vectors, and every shape of tile reads
 * its weights as one stream, in order. AVX-512's blocks of 4 vectors (64
 * outputs), one row, 768 KiB of panels in the L2 (Zen 5, C): one part
 * 195-205 GB/s, two parts (two streams 32 KiB apart) 148-154. Longer
 * reductions keep two parts, for accuracy: dagrnn H=512's chains of 512
 * took its error against the interpreter from 1.2x the bench's tolerance to
 * 1.7x (its weights stream from the L3 there, where two parts are no
 * slower). A narrower block (AVX2's 2 vectors, a wide tile's 2, the single
 * vectors past the last block) keeps tile_split's K. */
enum { ONE_PART_VECTORS = 4, ONE_PART_MAX_R = 256 };

/* K for a block of [iv] vectors of [T]: 1 where one part serves (above),
 * else [split] (tile_split). */
static int block_split(const CgTile *T, int split, int iv) {
  if (iv < ONE_PART_VECTORS) return split;
  for (int g = 0; g < T->nstreams; g++)
    if (T->stream[g].red[0]->hi->ival > ONE_PART_MAX_R) return split;
  return 1;
}

static int tile_split(const CgEmit *E, const CgTile *T) {
  int K = 2;
  if (E->tgt->kind != CG_TARGET_CPU) return 1;
  for (int g = 0; g < T->nstreams; g++) {
    long R = T->stream[g].red[0]->hi->ival;
    if (R % K || R / K < 8) return 1;
  }
  return K;
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
        if (reads_packed(E, y) &&
            red0->a->b->kind == ILIR_LOAD && red0->a->b->buf == y->buf &&
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

/* ---- copies of a node's matrix ------------------------------------------ */

/* The rows of y a block of outputs reads, R rows of iv * vl floats, stay in
 * L1 across the tile's rows when they are contiguous (PACKED weights). A
 * node's own matrix (mvrnn's P, a child's A and B) is read in place, its
 * rows H floats apart: at H = 128, 512 bytes, so a block of 16 columns maps
 * to 8 of the L1's 64 sets and does not stay there. Such a stream is copied,
 * block by block, into a contiguous buffer on the stack when the tile's rows
 * reuse it (constant rows, at least two tiles of them; y the same for all of
 * them), as BLAS packs its B: mvrnn H=128 B=10 0.96x the time (5 alternating
 * rounds; its product 90 GFLOP/s, 83 before), H=64 unchanged (1.00x: rows
 * 256 bytes apart already spread over 16 sets). At most 16 KiB per stream,
 * half an L1: AVX-512's blocks of 64 columns (128 KiB a stream at H=128)
 * are read in place as before. A block as wide as the rows are apart (the
 * whole matrix, AVX-512's 64 columns at H=64) is contiguous already, and is
 * read in place too: copying it cost mvrnn H=64 7% (B=1 0.93-0.96x the time
 * without, B=10 0.93-0.96x; 7 alternating rounds, twice). */
enum { MAX_COPY_FLOATS = 4096 };

/* How far apart y's rows are (its index's coefficient of r; a view's two
 * matrices alike), or ILIR_NONLINEAR. */
static long row_stride(const IlirExpr *y, const IlirVar *r) {
  if (y->kind == ILIR_LOAD) return ilir_coef(y->a, r);
  if (y->kind != ILIR_SELECT) return ILIR_NONLINEAR;
  long a = row_stride(y->a, r);
  return a == row_stride(y->b, r) ? a : ILIR_NONLINEAR;
}

/* Does stream [g] read a block of [width] floats a row that a copy would
 * make contiguous (pack_blocks)? Not PACKED weights, nor rows [width] apart. */
static bool needs_copy(const CgEmit *E, const CgTile *T, int g, long width) {
  const IlirExpr *red = T->stream[g].red[0], *y = red->a->b;
  return !reads_packed(E, y) && row_stride(y, red->var) != width;
}

static bool pack_worth(const CgEmit *E, const CgTile *T, int nb, long width) {
  const IlirStmt *s = T->nodes;
  if (E->tgt->kind != CG_TARGET_CPU || s->lo->kind != ILIR_CONST ||
      s->hi->kind != ILIR_CONST || s->hi->ival - s->lo->ival < 2L * nb)
    return false;
  bool any = false;
  for (int g = 0; g < T->nstreams; g++) {
    const IlirExpr *red = T->stream[g].red[0], *y = red->a->b;
    if (!needs_copy(E, T, g, width)) continue;
    if (T->stream[g].n != 1 || ilir_uses(y, s->var) || red->hi->ival * width > MAX_COPY_FLOATS)
      return false;
    any = true;
  }
  return any;
}

/* Copies, for the block of outputs from i0 (width floats), every stream's
 * R rows that needs_copy into T->copy[g] (made at the function's entry on first
 * use), rows width apart. */
static void pack_blocks(CgEmit *E, CgTile *T, LLVMValueRef i0, long width, int vl) {
  T->copy_width = width;
  LLVMTypeRef vt = vec_type(E, vl);
  for (int g = 0; g < T->nstreams && !E->failed; g++) {
    const CgStreamTerms *S = &T->stream[g];
    if (!needs_copy(E, T, g, width)) continue;
    long R = S->red[0]->hi->ival;
    if (!T->copy[g]) T->copy[g] = cg_entry_buffer(E, R * width, "copy");
    CgStream none = {NULL, NULL, NULL};
    CgLoop L;
    cg_loop_open(E, &L, cg_const_i64(E, 0), cg_const_i64(E, R), "r.copy");
    LLVMValueRef from = stream_row(E, T, S, none, L.iv, i0);
    if (!from) return;
    LLVMValueRef to = LLVMBuildMul(E->b, L.iv, cg_const_i64(E, width), "");
    for (long v = 0; v < width; v += vl) {
      LLVMValueRef off = cg_const_i64(E, v), dst = LLVMBuildAdd(E->b, to, off, "");
      LLVMValueRef x = LLVMBuildLoad2(E->b, vt, LLVMBuildGEP2(E->b, E->f32, from, &off, 1, ""), "");
      LLVMSetAlignment(x, 4);
      LLVMValueRef st = LLVMBuildStore(E->b, x, LLVMBuildGEP2(E->b, E->f32, T->copy[g], &dst, 1, ""));
      LLVMSetAlignment(st, (unsigned)vl * 4);
    }
    E->vars[S->red[0]->var->id] = NULL;
    cg_loop_close(E, &L);
  }
}

/* Should a tiled level product run split by outputs (every thread all of
 * the level's rows, a share of the output blocks) rather than by nodes?
 * A schedule's `parallel` fixes it (IlirStmt.share); otherwise two
 * or more threads and at least as many output blocks as threads, and a
 * level with fewer rows than give every thread a full tile: such a level's
 * time is its weights' bandwidth, and split by outputs each thread reads
 * only its share of them — the same share at every level, which stays in its
 * core's L2 (CORTEX's model persistence, on the CPU). Every thread decides
 * alike from the level's size, so all meet the same barriers.
 *
 * The level's other statements then read elements another core wrote
 * (treegru's z = g[H:2H] and r * s after U_rz's tile split at 2H / 2).
 * Sharing the outputs alike everywhere — each thread the same share of
 * every segment of H outputs in the tiles and in the elementwise nodes
 * loops, which then ran over all the level's nodes — kept those on one
 * core, and changed nothing measurable: treegru H=512 B=10, two threads on
 * the Zen 5 (a cache line 450-520 ns there and back), 1.045x the time,
 * median of 9 alternating rounds (0.95-1.30), every region of the profile
 * as before. Nor did prefetching
 * all the level's rows of x right after the barrier (1.02-1.09x), nor
 * scratch rows per node instead of per level (1.00-1.02x). */
static LLVMValueRef split_by_outputs(CgEmit *E, LLVMValueRef lo, LLVMValueRef hi, int nb,
                                     long blocks) {
  LLVMValueRef many = LLVMBuildICmp(E->b, LLVMIntSGT, E->nthreads, cg_const_i64(E, 1), "");
  LLVMValueRef enough = LLVMBuildICmp(E->b, LLVMIntSGE, cg_const_i64(E, blocks), E->nthreads, "");
  LLVMValueRef rows = LLVMBuildSub(E->b, hi, lo, "");
  LLVMValueRef few = LLVMBuildICmp(E->b, LLVMIntSLT, rows,
                                   LLVMBuildMul(E->b, E->nthreads, cg_const_i64(E, nb), ""), "");
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
    LLVMValueRef b0 = LLVMBuildSDiv(E->b, lo, cg_const_i64(E, width), "");
    LLVMValueRef b1 = LLVMBuildSDiv(E->b, hi, cg_const_i64(E, width), "");
    cg_thread_share(E, &b0, &b1);
    lo = LLVMBuildMul(E->b, b0, cg_const_i64(E, width), "");
    hi = LLVMBuildMul(E->b, b1, cg_const_i64(E, width), "");
  } else {
    LLVMValueRef first = LLVMBuildICmp(E->b, LLVMIntEQ, E->tid, cg_const_i64(E, 0), "");
    hi = LLVMBuildSelect(E->b, first, hi, lo, "");
  }
  *from = LLVMBuildSelect(E->b, by_outs, lo, *from, "");
  *to = LLVMBuildSelect(E->b, by_outs, hi, *to, "");
}

/* The block of outputs the loop's [iv]th step over [from, to) (blocks of
 * [width]) works on: in order on even levels, from the last block back on odd
 * ones. Each block's panel of weights then comes first in the next level's
 * product right after the last, while it is still in cache: weights larger
 * than the L2 are no longer all evicted before they are read again, as they
 * are in the same order every level under LRU (treegru H=512's 3 MiB in a
 * 2 MiB L2). Blocks are independent (an epilogue reads the products only at
 * its own output, ilir_tile_parts), so any order gives the same results. */
static LLVMValueRef block_at(CgEmit *E, LLVMValueRef iv, LLVMValueRef from, LLVMValueRef to,
                             long width) {
  if (!E->level || E->tgt->kind != CG_TARGET_CPU) return iv;
  LLVMValueRef odd = LLVMBuildTrunc(E->b, E->level, E->i1, "odd");
  LLVMValueRef back = LLVMBuildSub(E->b, LLVMBuildSub(E->b, to, cg_const_i64(E, width), ""),
                                   LLVMBuildSub(E->b, iv, from, ""), "");
  return LLVMBuildSelect(E->b, odd, back, iv, "i0");
}

/* The tiled product [s] over this thread's share of its nodes (or of its
 * outputs: split_by_outputs): outputs in blocks of iv vectors, then single
 * vectors, then single floats; for each block, the nodes in even tiles of
 * at most nb rows (tile_rows). The block of P a block of outputs reads (R
 * rows of iv * vl floats) stays in cache across the nodes. The epilogues run
 * on each tile as soon as it is stored (per
 * tile rather than once per block over all the rows: the stored block is
 * then at most nb rows, still in L1, and the elementwise work interleaves
 * with the products; childsum H=64 B=10 0.165 ms per block, 0.152 ms per
 * tile, in 11 alternating runs). Split by outputs, a barrier before the tile
 * (the rows it reads may come from another thread's share of nodes, or from
 * a level of one node after which no barrier ran) and after it (what follows
 * runs split by nodes again). */
void cg_emit_tiled(CgEmit *E, const IlirStmt *s) {
  CgTile T;
  memset(&T, 0, sizeof T);
  T.nodes = s;
  IlirTileParts parts;
  if (!ilir_tile_parts(E->k, s, &parts)) {
    cg_fail(E, E->i64, "register tile of unknown form, tile_nodes", s->tile_nodes);
    return;
  }
  for (int p = 0; p < parts.n; p++)
    T.prod[p] = (CgProduct){parts.loop[p], parts.loop[p]->body.stmts[0]};
  T.nprod = parts.n;
  if (!tile_streams(E, &T)) {
    cg_fail(E, E->i64, "register tile with too many terms, products", T.nprod);
    return;
  }
  T.I = parts.loop[0]->hi->ival;
  int split = tile_split(E, &T);
  int vl = E->vec_floats, nb = s->tile_nodes < MAX_ROWS ? s->tile_nodes : MAX_ROWS;
  int iv = tile_vectors(E, &T, &nb, vl, s->tile_outs);
  T.rows = nb;
  long full = T.I - T.I % ((long)iv * vl), vec = T.I - T.I % vl;
  LLVMValueRef lo = cg_emit_expr(E, s->lo), hi = cg_emit_expr(E, s->hi), by_outs = NULL;
  if (s->loop == ILIR_LOOP_NODES && s->team_lo) {
    /* nodes whose rows this thread computed: no barrier (an empty share,
     * hi < lo, makes no tile: tile_rows) */
    cg_team_share(E, s, &lo, &hi);
  } else if (s->loop == ILIR_LOOP_NODES) {
    by_outs = s->share == ILIR_SHARE_AUTO ? split_by_outputs(E, lo, hi, nb, full / ((long)iv * vl))
                                          : LLVMConstInt(E->i1, s->share == ILIR_SHARE_OUTPUTS, 0);
    LLVMValueRef nlo = lo, nhi = hi;
    cg_thread_share(E, &nlo, &nhi);
    lo = LLVMBuildSelect(E->b, by_outs, lo, nlo, "");
    hi = LLVMBuildSelect(E->b, by_outs, hi, nhi, "");
    LLVMValueRef skip = LLVMBuildNot(E->b, by_outs, "");
    if (E->synced_after && cg_follows(E, E->synced_after, s)) /* just met (CgEmit) */
      skip = LLVMBuildOr(E->b, skip, E->synced_when, "synced");
    cg_emit_barrier(E, skip);
  }
  /* the level scratch buffers this tile alone stores and reads (cg_emit.c,
   * "tile rows"): a block of rows x outputs on the stack, the tile's own */
  bool rows_on_stack = cg_open_stack_rows(E, s, nb, (long)iv * vl);
  const struct { long from, to; int iv, vl; } seg[3] = {
      {0, full, iv, vl}, {full, vec, 1, vl}, {vec, T.I, 1, 1}};
  for (int g = 0; g < 3 && !E->failed; g++) {
    if (seg[g].from >= seg[g].to) continue;
    long width = (long)seg[g].iv * seg[g].vl;
    T.split = block_split(&T, split, seg[g].iv);
    LLVMValueRef from = cg_const_i64(E, seg[g].from), to = cg_const_i64(E, seg[g].to);
    output_share(E, by_outs, g == 0, width, &from, &to);
    CgLoop Li, Ln;
    cg_loop_open(E, &Li, from, to, "i0");
    LLVMValueRef i0 = g == 0 ? block_at(E, Li.iv, from, to, width) : Li.iv;
    if (g == 0 && pack_worth(E, &T, nb, width)) pack_blocks(E, &T, i0, width, seg[g].vl);
    if (s->loop == ILIR_LOOP_NODES) cg_prefetch_tile_rows(E, s, lo, hi, i0, width);
    TileRows R = tile_rows(E, lo, hi, nb);
    cg_loop_open(E, &Ln, cg_const_i64(E, 0), R.tiles, "t");
    LLVMValueRef n0, rows = tile_at(E, &R, Ln.iv, &n0);
    E->stack_n0 = n0, E->stack_i0 = i0;
    emit_tiles(E, &T, n0, rows, nb, i0, seg[g].iv, seg[g].vl);
    if (s->body.n > T.nprod && !E->failed)
      emit_epilogues(E, &T, n0, LLVMBuildAdd(E->b, n0, rows, ""), i0, width);
    cg_loop_close_by(E, &Ln, 1);
    memset(T.copy, 0, sizeof T.copy);
    cg_loop_close_by(E, &Li, width);
  }
  if (rows_on_stack) cg_close_stack_rows(E, s);
  if (E->failed) return;
  if (s->loop == ILIR_LOOP_NODES && !E->level) {
    cg_emit_barrier(E, NULL); /* a prologue */
  } else if (by_outs) {
    cg_emit_barrier(E, LLVMBuildNot(E->b, by_outs, ""));
    E->synced_after = s, E->synced_when = by_outs;
  }
  E->vars[s->var->id] = NULL;
  for (int p = 0; p < T.nprod; p++) E->vars[T.prod[p].loop->var->id] = NULL;
}

