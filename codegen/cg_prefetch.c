/* cg_prefetch.c — software prefetches of the rows a node gathers from a
 * parameter by its input value (Emb[words[n]]): the next node's, at the top
 * of a nodes loop, and a register tile's block of them before its products
 * (cg_tile.c). CPU only. */
#include "codegen/cg_emit_int.h"

void cg_emit_prefetch(CgEmit *E, LLVMValueRef at) {
  static const char name[] = "llvm.prefetch";
  LLVMTypeRef pt = LLVMTypeOf(at);
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(E->mod, id, &pt, 1);
  LLVMValueRef args[4] = {at, LLVMConstInt(E->i32, 0, 0), LLVMConstInt(E->i32, 3, 0),
                          LLVMConstInt(E->i32, 1, 0)};
  LLVMBuildCall2(E->b, LLVMIntrinsicGetType(E->ctx, id, &pt, 1), f, args, 4, "");
}

/* Every variable of [e] is [n] or already has a value. */
static bool vars_known(const CgEmit *E, const IlirExpr *e, const IlirVar *n) {
  if (!e) return true;
  if (e->kind == ILIR_VAR && e->var != n && !E->vars[e->var->id]) return false;
  if (e->kind == ILIR_REDUCE) return false;
  return vars_known(E, e->a, n) && vars_known(E, e->b, n) && vars_known(E, e->c, n);
}

static bool has_var(const IlirExpr *e, const IlirVar *v) {
  return e && ((e->kind == ILIR_VAR && e->var == v) || has_var(e->a, v) || has_var(e->b, v) ||
               has_var(e->c, v));
}

/* [atom] (of a row's index) may be evaluated for node n + 1: it does not
 * involve n, or it is ivalues[n * V + k] itself. ivalues has a row past the
 * last node; no other per-node buffer does (dep[(n + 1) * K] would read past
 * the end at the last node), so nothing else that reads n qualifies. */
static bool next_row_safe(const CgEmit *E, IlirExpr *atom, const IlirVar *n) {
  if (!has_var(atom, n)) return vars_known(E, atom, n);
  if (atom->kind != ILIR_LOAD || E->k->bufs[atom->buf].kind != ILIR_BUF_IVALUES) return false;
  IlirExpr *in[4];
  long c[4], k;
  int m = ilir_linear(atom->a, in, c, 4, &k);
  return m == 1 && in[0]->kind == ILIR_VAR && in[0]->var == n;
}

enum { PREFETCH_LINES = 64 }; /* at most 4 KiB of a row: the hardware prefetcher takes the rest */

/* Which part of a row's lines to prefetch: elements [from, from + count)
 * when [from] is set (else all), of those lines part [part] of [parts]. */
typedef struct {
  LLVMValueRef from;
  long count;
  int part, parts;
} RowPart;

/* Loads of [e] from a parameter at a row chosen by node [n]'s input value
 * (Emb[words[n] * W + i], i over [0, I) of the loop [inner]): prefetches
 * the part [rp] of the row node [next] will read, so the gather's miss to
 * memory overlaps this node's work (treelstm's leaves: a 3 KiB row of a 60
 * MiB table each). */
static void prefetch_rows_in(CgEmit *E, const IlirExpr *e, const IlirStmt *inner,
                             const IlirVar *n, LLVMValueRef next, RowPart rp) {
  if (!e || E->failed) return;
  if (e->kind == ILIR_LOAD && E->k->bufs[e->buf].kind == ILIR_BUF_PARAM) {
    enum { MAX_ATOMS = 16 };
    IlirExpr *atoms[MAX_ATOMS];
    long coefs[MAX_ATOMS], konst;
    bool use[MAX_ATOMS];
    int na = ilir_linear(e->a, atoms, coefs, MAX_ATOMS, &konst), unit = 0, by_node = 0;
    for (int i = 0; i < na; i++) {
      bool is_i = atoms[i]->kind == ILIR_VAR && atoms[i]->var == inner->var;
      unit += is_i && coefs[i] == 1;
      by_node += has_var(atoms[i], n); /* ivalues[n * V + k]: next_row_safe */
      use[i] = !is_i;
      if ((is_i && coefs[i] != 1) || (!is_i && !next_row_safe(E, atoms[i], n))) return;
    }
    if (na < 0 || unit != 1 || !by_node) return;
    LLVMValueRef now = E->vars[n->id];
    E->vars[n->id] = next;
    LLVMValueRef row = cg_linear_sum(E, atoms, coefs, na, use, konst);
    E->vars[n->id] = now;
    long I = rp.from ? rp.count : inner->hi->ival, lines = (I + 15) / 16;
    if (lines > PREFETCH_LINES) lines = PREFETCH_LINES;
    if (rp.from) row = LLVMBuildAdd(E->b, row, rp.from, "");
    for (long l = lines * rp.part / rp.parts; l < lines * (rp.part + 1) / rp.parts; l++) {
      LLVMValueRef at = LLVMBuildAdd(E->b, row, cg_const_i64(E, l * 16), "");
      /* a plain GEP: the row of a node past the level may be any row */
      cg_emit_prefetch(E, LLVMBuildGEP2(E->b, E->f32, E->bufs[e->buf], &at, 1, ""));
    }
    return;
  }
  prefetch_rows_in(E, e->a, inner, n, next, rp);
  prefetch_rows_in(E, e->b, inner, n, next, rp);
  prefetch_rows_in(E, e->c, inner, n, next, rp);
}

/* The part [rp] of the gathered rows that the loops directly in the nodes
 * loop [s] (constant bounds [0, I)) read for node [next] (at most ivalues'
 * row past the last node). */
static void prefetch_rows(CgEmit *E, const IlirStmt *s, LLVMValueRef next, RowPart rp) {
  for (int i = 0; i < s->body.n && !E->failed; i++) {
    const IlirStmt *c = s->body.stmts[i];
    if (c->kind != ILIR_LOOP || c->tile_nodes || !c->lo || !c->hi ||
        c->lo->kind != ILIR_CONST || c->lo->ival != 0 || c->hi->kind != ILIR_CONST)
      continue;
    for (int j = 0; j < c->body.n; j++)
      if (c->body.stmts[j]->kind == ILIR_STORE)
        prefetch_rows_in(E, c->body.stmts[j]->value, c, s->var, next, rp);
  }
}

/* Before statement [i] of an iteration of the nodes loop [s] (node = iv):
 * a part of the rows of node iv + 1. Their lines go in ROW_PARTS parts
 * spread over the body's n statements, statement i taking the parts p with
 * ROW_PARTS i / n <= p < ROW_PARTS (i + 1) / n (integer quotients):
 * treelstm's leaf, three statements, has half of each row prefetched after
 * the gather of its own row and half before its last statement; a body of
 * one statement has it all at the top. Further ahead gained nothing:
 * treelstm H=256 B=10's leaf level (152 rows of 3 KiB from a 60 MiB table)
 * took 0.043-0.053 ms a run one node ahead, 0.051-0.056 two, 0.049-0.061
 * three, 0.049-0.051 four (Zen 5, 3 rounds); its sigmoids and tanhs are most
 * of that time. On the Intel host (2 MiB L2), all 48 lines of a row at the
 * top kept the core's line fill buffers full while the node's own row and
 * gates waited behind them: the leaf level 0.080-0.082 ms, 0.067 in two
 * parts (0.074-0.078 in three); the whole run, 9 alternating rounds,
 * treelstm B=10 0.987x the time (H=512 0.980x, B=1 0.984x), treegru 0.992x,
 * treefc (rows copied, no gates) 1.003x. */
enum { ROW_PARTS = 2 };

void cg_prefetch_next_rows(CgEmit *E, const IlirStmt *s, LLVMValueRef iv, int i) {
  int n = s->body.n;
  for (int p = ROW_PARTS * i / n; p < ROW_PARTS * (i + 1) / n; p++)
    prefetch_rows(E, s, LLVMBuildAdd(E->b, iv, cg_const_i64(E, 1), ""),
                  (RowPart){NULL, 0, p, ROW_PARTS});
}

enum { PREFETCH_TILE_NODES = 16 };

/* Before a register tile's block of outputs [from, from + count) over this
 * thread's nodes [lo, hi) of a level: that block of the rows its epilogues
 * gather for those nodes and for node hi, the next level's first
 * (seqlstm's Emb[words[n]], 4 KiB of an 80 MiB table: at B=1 the next
 * step's row arrives while this step's product runs, where its epilogue
 * waited on memory block by block). A block at a time, so the misses spread
 * over the level rather than filling the core's miss buffers at once; at
 * most PREFETCH_TILE_NODES nodes, so a wide level's rows do not crowd the L1. */
void cg_prefetch_tile_rows(CgEmit *E, const IlirStmt *s, LLVMValueRef lo, LLVMValueRef hi,
                           LLVMValueRef from, long count) {
  if (E->tgt->kind != CG_TARGET_CPU || !E->level) return;
  LLVMValueRef end = LLVMBuildAdd(E->b, hi, cg_const_i64(E, 1), "");
  LLVMValueRef cap = LLVMBuildAdd(E->b, lo, cg_const_i64(E, PREFETCH_TILE_NODES), "");
  end = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, cap, end, ""), cap, end, "");
  CgLoop L;
  cg_loop_open(E, &L, lo, end, "pf.n");
  prefetch_rows(E, s, L.iv, (RowPart){from, count, 0, 1});
  cg_loop_close(E, &L);
}
