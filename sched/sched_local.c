/* sched_local.c — node-local operators computed for the whole batch before
 * the levels (hoist-local).
 *
 * An operator that reads only parameters and its own node's inputs — the
 * word's embedding x = Emb[w], and products of it such as childsum's W_iou x
 * and W_f x or dagrnn's W x — does not depend on the recursion. Computed
 * level by level, each level streams those weights again, for a level of a
 * few nodes; moved into a prologue over all nodes,
 *
 *   for n in nodes [0, num_nodes) { LOCAL }      (then a barrier)
 *   for l in levels [0, num_levels) { for n in level l { REST } }
 *
 * register-tile makes its products one matrix product over the whole batch,
 * which reads each weight once. Done for a levels loop over all levels (a
 * model whose leaves are specialized computes its leaf-only operators at
 * the leaves alone). An operator is node-local when it stores only into
 * SCRATCH rows of its node, reads only parameters, invariant values, the
 * node's VALUES/IVALUES row and other node-local operators' rows of the same
 * node, and nothing else stores into its buffer. Its buffer keeps a row per
 * node (dense-scratch leaves it alone: sched_keep_node_rows).
 */
#include "sched/sched_int.h"

#include <string.h>

typedef struct {
  const IlirKernel *k;
  const IlirVar *n;
  bool *local;   /* [nbufs]: buffers of node-local operators found so far */
  int *writers;  /* [nbufs]: statements of the whole kernel storing into it */
} Local;

/* Is [index] [n]'s row of buffer [buf]: n * size + something not reading n? */
static bool own_row(const Local *L, const IlirExpr *index, int buf) {
  long size = L->k->bufs[buf].kind == ILIR_BUF_VALUES || L->k->bufs[buf].kind == ILIR_BUF_IVALUES
                  ? L->k->values_per_node
                  : L->k->bufs[buf].size;
  return ilir_coef(index, L->n) == size;
}

static bool local_expr(const Local *L, const IlirExpr *e) {
  if (!e) return true;
  if (e->kind == ILIR_LOAD) {
    switch (L->k->bufs[e->buf].kind) {
    case ILIR_BUF_PARAM: case ILIR_BUF_INVARIANT: break;
    case ILIR_BUF_VALUES: case ILIR_BUF_IVALUES:
      if (!own_row(L, e->a, e->buf)) return false;
      break;
    case ILIR_BUF_SCRATCH:
      if (!L->local[e->buf] || !own_row(L, e->a, e->buf)) return false;
      break;
    default: return false;
    }
  }
  if (e->kind == ILIR_ARG) return false;
  return local_expr(L, e->a) && local_expr(L, e->b) && local_expr(L, e->c) &&
         local_expr(L, e->lo) && local_expr(L, e->hi);
}

/* Is the statement tree [s] node-local? Its stores' buffers go into [out]. */
static bool local_stmt(const Local *L, const IlirStmt *s, int *out, int *nout) {
  switch (s->kind) {
  case ILIR_STORE:
    if (L->k->bufs[s->buf].kind != ILIR_BUF_SCRATCH || !own_row(L, s->index, s->buf) ||
        !local_expr(L, s->index) || !local_expr(L, s->value) || *nout == 8)
      return false;
    out[(*nout)++] = s->buf;
    return true;
  case ILIR_LOOP:
    if (s->loop != ILIR_LOOP_SERIAL && s->loop != ILIR_LOOP_VECTOR && s->loop != ILIR_LOOP_UNROLL)
      return false;
    if (!local_expr(L, s->lo) || !local_expr(L, s->hi)) return false;
    for (int i = 0; i < s->body.n; i++)
      if (!local_stmt(L, s->body.stmts[i], out, nout)) return false;
    return true;
  default: return false;
  }
}

static void count_writers(int *writers, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_STORE) writers[s->buf]++;
    count_writers(writers, &s->body);
    count_writers(writers, &s->then);
    count_writers(writers, &s->els);
  }
}

/* Moves the node-local statements of the nodes loop [nodes] into a new loop
 * over all nodes, returned (NULL when there are none). */
static IlirStmt *split_local(CtxArena *a, Local *L, IlirStmt *nodes) {
  IlirStmt **mine = CTX_NEW_ARRAY(a, IlirStmt *, nodes->body.n);
  int nmine = 0, kept = 0;
  L->n = nodes->var;
  for (int i = 0; i < nodes->body.n; i++) {
    IlirStmt *s = nodes->body.stmts[i];
    int bufs[8], nb = 0;
    bool ok = local_stmt(L, s, bufs, &nb) && nb > 0;
    for (int b = 0; b < nb && ok; b++) ok = L->writers[bufs[b]] == 1;
    if (ok) {
      for (int b = 0; b < nb; b++) L->local[bufs[b]] = true;
      mine[nmine++] = s;
    } else {
      nodes->body.stmts[kept++] = s;
    }
  }
  nodes->body.n = kept;
  if (!nmine) return NULL;
  IlirBlock body = {mine, nmine};
  return ilir_loop(a, nodes->var, ilir_const_i(a, 0), ilir_arg(a, 0), ILIR_LOOP_NODES, body);
}

/* Is [s] a levels loop over every level, [0, num_levels)? */
static bool all_levels(const IlirStmt *s) {
  return s->kind == ILIR_LOOP && s->loop == ILIR_LOOP_LEVELS && s->lo->kind == ILIR_CONST &&
         s->lo->ival == 0 && s->hi->kind == ILIR_ARG && s->hi->ival == 1;
}

void sched_hoist_local(CtxArena *a, IlirKernel *k) {
  Local L = {k, NULL, CTX_NEW_ARRAY(a, bool, k->nbufs), CTX_NEW_ARRAY(a, int, k->nbufs)};
  count_writers(L.writers, &k->body);
  int cap = k->body.n;
  for (int i = 0; i < k->body.n; i++) cap += all_levels(k->body.stmts[i]) ? k->body.stmts[i]->body.n : 0;
  IlirStmt **out = CTX_NEW_ARRAY(a, IlirStmt *, cap + 1);
  int n = 0;
  for (int i = 0; i < k->body.n; i++) {
    IlirStmt *lv = k->body.stmts[i];
    if (all_levels(lv))
      for (int j = 0; j < lv->body.n; j++) {
        IlirStmt *nodes = lv->body.stmts[j];
        if (nodes->kind != ILIR_LOOP || nodes->loop != ILIR_LOOP_NODES || nodes->tile_nodes)
          continue;
        IlirStmt *pro = split_local(a, &L, nodes);
        if (pro) out[n++] = pro;
      }
    out[n++] = lv;
  }
  k->body = (IlirBlock){out, n};
}
