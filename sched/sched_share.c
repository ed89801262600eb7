/* sched_share.c — register tiles that read the same weights become one tile
 * (share-weights).
 *
 * treelstm's forget gates are two products with one weight matrix, U_f h0
 * and U_f h1, each its own tile after register-tile and fuse-epilogue:
 *
 *   for n in level register tile { for i { mm2[n, i] = sum(r) h0(n, r) * P[r, i] }; EPI2 }
 *   for n in level register tile { for i { mm3[n, i] = sum(r) h1(n, r) * P[r, i] }; EPI3 }
 *
 * so every level reads P twice. Merged, the tile computes both products
 * (ilir.h allows ILIR_TILE_MAX_PRODUCTS) and codegen loads each row of P
 * once for both (codegen/cg_tile.c, streams) — for a level of a few nodes,
 * whose time is the weights' bandwidth, that is a fifth less to read:
 *
 *   for n in level register tile { for i { mm2 = .. }; for i { mm3 = .. }; EPI2; EPI3 }
 *
 * Legal when the second product reads nothing the first tile writes
 * (products or epilogues) and the first tile's epilogues neither read nor
 * write the second product's output: then only the order of independent
 * statements changes. ilir_tile_parts checks the result.
 *
 * Tiles that read different weights stay apart. One tile for all of a
 * level's products would read the level's weights in one pass, block by
 * block; tried on treelstm written with U_iou's three gates as products of
 * their own (U_iou[0:H] @ s, ...), all five products in one tile (up to six
 * allowed, rows cut to fit the 32 registers): Zen 5, H=256, 3 alternating
 * rounds, 1.23-1.34x the time of the default's two tiles at B=1 and
 * 1.20-1.37x at B=10; with panels of 16 to match its blocks, B=1 1.01-1.13x.
 * Five products leave registers for one vector of outputs, and each row of
 * a weight feeds fewer multiply-adds. Only with tiles of one row (`tile(node,
 * i) by (1, 64)`: blocks of 64 outputs again) did one pass pay, and only on
 * levels of one node: a chain of 60 of them 0.86-0.90x the time of the
 * default's (3 rounds), but B=10 1.31-1.62x in every shape tried (6 x 16 to
 * 2 x 64). A level of a few nodes would want the one tile, a wide level the
 * two: a choice per level, at run time, that the kernel does not make yet.
 */
#include "sched/sched_int.h"

#include <string.h>

/* Does [e] read any buffer that [s] (a statement tree) stores into? */
static bool reads_stored(const IlirExpr *e, const IlirStmt *s) {
  if (s->kind == ILIR_STORE) return ilir_reads(e, s->buf);
  if (s->kind == ILIR_IF) {
    for (int i = 0; i < s->then.n; i++)
      if (reads_stored(e, s->then.stmts[i])) return true;
    for (int i = 0; i < s->els.n; i++)
      if (reads_stored(e, s->els.stmts[i])) return true;
    return false;
  }
  for (int i = 0; i < s->body.n; i++)
    if (reads_stored(e, s->body.stmts[i])) return true;
  return false;
}

/* Do the products of [a] and [b] (one each) read a PACKED buffer in common? */
static bool share_packed(const IlirKernel *k, const IlirStmt *a, const IlirStmt *b) {
  IlirExpr *ta[16], *tb[16];
  int na = ilir_sum_terms(a->body.stmts[0]->value, ta, 16);
  int nb = ilir_sum_terms(b->body.stmts[0]->value, tb, 16);
  for (int i = 0; i < na && i < 16; i++)
    for (int j = 0; j < nb && j < 16; j++) {
      const IlirExpr *ya = ta[i]->a->b, *yb = tb[j]->a->b;
      if (ya->buf == yb->buf && k->bufs[ya->buf].kind == ILIR_BUF_PACKED &&
          ta[i]->hi->ival == tb[j]->hi->ival)
        return true;
    }
  return false;
}

/* [s] and [t] (consecutive tiles) as one, or NULL. */
static IlirStmt *merge(CtxArena *a, const IlirKernel *k, IlirStmt *s, IlirStmt *t) {
  IlirTileParts ps, pt;
  if (s->kind != ILIR_LOOP || t->kind != ILIR_LOOP || s->loop != ILIR_LOOP_NODES ||
      t->loop != ILIR_LOOP_NODES || !s->tile_nodes || !t->tile_nodes || s->var != t->var ||
      s->tile_nodes != t->tile_nodes || s->tile_outs != t->tile_outs ||
      !ilir_same_expr(s->lo, t->lo, NULL, NULL) || !ilir_same_expr(s->hi, t->hi, NULL, NULL) ||
      !ilir_tile_parts(k, s, &ps) || !ilir_tile_parts(k, t, &pt) || ps.n != 1 || pt.n != 1 ||
      !share_packed(k, ps.loop[0], pt.loop[0]))
    return NULL;
  const IlirStmt *second = pt.loop[0]->body.stmts[0];
  if (reads_stored(second->value, s) || reads_stored(second->index, s)) return NULL;
  for (int e = 1; e < s->body.n; e++) {
    const IlirStmt *epi = s->body.stmts[e]->body.stmts[0];
    if (epi->buf == second->buf || ilir_reads(epi->value, second->buf)) return NULL;
  }
  IlirStmt *m = CTX_NEW(a, IlirStmt);
  *m = *s;
  m->body.n = s->body.n + t->body.n;
  m->body.stmts = CTX_NEW_ARRAY(a, IlirStmt *, m->body.n);
  int n = 0;
  m->body.stmts[n++] = s->body.stmts[0];
  m->body.stmts[n++] = t->body.stmts[0];
  for (int e = 1; e < s->body.n; e++) m->body.stmts[n++] = s->body.stmts[e];
  for (int e = 1; e < t->body.n; e++) m->body.stmts[n++] = t->body.stmts[e];
  IlirTileParts pm;
  return ilir_tile_parts(k, m, &pm) && pm.n == 2 ? m : NULL;
}

static void share_block(CtxArena *a, const IlirKernel *k, IlirBlock *b) {
  int out = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS) share_block(a, k, &s->body);
    IlirStmt *m = i + 1 < b->n ? merge(a, k, s, b->stmts[i + 1]) : NULL;
    b->stmts[out++] = m ? m : s;
    if (m) i++;
  }
  b->n = out;
}

void sched_share_weights(CtxArena *a, IlirKernel *k) { share_block(a, k, &k->body); }
