/* ilir_print.c — ILIR in readable form (`ctx check --dump=ilir`) and its
 * verifier.
 *
 *   kernel ctx_treefc_kernel
 *     buf 0 Emb: param f32[5120]
 *     ...
 *   for l in levels [0, num_levels) {
 *     for n in nodes [levels[l], levels[(l + 1)]) {
 *       if (num_deps[n] == 0) {
 *         for i in [0, 256) {
 *           node.ret0[((n * 256) + i)] = Emb[...]
 */
#include "ilir/ilir_int.h"

#include <stdlib.h>

static const char *const un_names[] = {"-", "!", "sigmoid", "tanh", "relu",
                                       "exp", "log", "sqrt", "abs"};
static const char *const bin_names[] = {"+", "-", "*", "/", "==", "!=", "<", "<=",
                                        ">", ">=", "&&", "||", "sum", "max"};
static const char *const buf_kinds[] = {"param f32", "values f32", "values i32",
                                        "result f32", "scratch f32", "dep i32",
                                        "num_deps i32", "levels i32", "packed f32",
                                        "level scratch f32", "invariant f32", "phases i32",
                                        "arity end i32"};
static const char *const loop_kinds[] = {"", "levels ", "nodes ", "parallel ", "vector ",
                                         "unroll "};

static void print_expr(CtxBuf *out, const IlirKernel *k, const IlirExpr *e) {
  switch (e->kind) {
  case ILIR_CONST:
    if (e->type == ILIR_I64) ctx_buf_printf(out, "%ld", e->ival);
    else ctx_buf_printf(out, "%.9gf", (double)e->fval);
    break;
  case ILIR_VAR: ctx_buf_puts(out, e->var->name); break;
  case ILIR_ARG: ctx_buf_puts(out, e->ival == 0 ? "num_nodes" : "num_levels"); break;
  case ILIR_LOAD:
    ctx_buf_printf(out, "%s[", k->bufs[e->buf].name);
    print_expr(out, k, e->a);
    ctx_buf_putc(out, ']');
    break;
  case ILIR_UNARY:
    ctx_buf_printf(out, "%s(", un_names[e->op]);
    print_expr(out, k, e->a);
    ctx_buf_putc(out, ')');
    break;
  case ILIR_BINARY:
    ctx_buf_putc(out, '(');
    print_expr(out, k, e->a);
    ctx_buf_printf(out, " %s ", bin_names[e->op]);
    print_expr(out, k, e->b);
    ctx_buf_putc(out, ')');
    break;
  case ILIR_SELECT:
    ctx_buf_puts(out, "select(");
    print_expr(out, k, e->c);
    ctx_buf_puts(out, ", ");
    print_expr(out, k, e->a);
    ctx_buf_puts(out, ", ");
    print_expr(out, k, e->b);
    ctx_buf_putc(out, ')');
    break;
  case ILIR_REDUCE:
    ctx_buf_printf(out, "%s(%s in [", bin_names[e->op], e->var->name);
    print_expr(out, k, e->lo);
    ctx_buf_puts(out, ", ");
    print_expr(out, k, e->hi);
    ctx_buf_puts(out, ")) ");
    print_expr(out, k, e->a);
    break;
  case ILIR_TO_F32:
    ctx_buf_puts(out, "f32(");
    print_expr(out, k, e->a);
    ctx_buf_putc(out, ')');
    break;
  }
}

static void indent(CtxBuf *out, int level) {
  for (int i = 0; i < level; i++) ctx_buf_puts(out, "  ");
}

static void print_block(CtxBuf *out, const IlirKernel *k, const IlirBlock *b, int level) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    indent(out, level);
    if (s->kind == ILIR_LOOP) {
      ctx_buf_printf(out, "for %s in %s[", s->var->name, loop_kinds[s->loop]);
      print_expr(out, k, s->lo);
      ctx_buf_puts(out, ", ");
      print_expr(out, k, s->hi);
      ctx_buf_putc(out, ')');
      if (s->team_lo) { /* the level whose thread shares it cuts from */
        ctx_buf_puts(out, " of [");
        print_expr(out, k, s->team_lo);
        ctx_buf_puts(out, ", ");
        print_expr(out, k, s->team_hi);
        ctx_buf_putc(out, ')');
      }
      if (s->tile_nodes)
        ctx_buf_printf(out, " register tile %d x %d%s", s->tile_nodes, s->tile_outs,
                       s->tile_streams ? " streamed" : "");
      if (s->tile_nodes && s->share)
        ctx_buf_puts(out, s->share == ILIR_SHARE_OUTPUTS ? " shared by outputs"
                                                         : " shared by nodes");
      if (s->bind)
        ctx_buf_puts(out, s->bind == ILIR_BIND_BLOCK    ? " bound to block"
                          : s->bind == ILIR_BIND_THREAD ? " bound to thread"
                          : s->bind == ILIR_BIND_WARP   ? " bound to warp"
                          : s->bind == ILIR_BIND_GRID   ? " bound to grid"
                                                        : " bound to warps");
      int ph = s->loop == ILIR_LOOP_LEVELS ? ilir_find_buf(k, ILIR_BUF_PHASES) : -1;
      if (ph >= 0)
        ctx_buf_printf(out, " in phases (barrier after l when %s[%s])", k->bufs[ph].name,
                       s->var->name);
      ctx_buf_puts(out, " {\n");
      print_block(out, k, &s->body, level + 1);
    } else if (s->kind == ILIR_STORE) {
      ctx_buf_printf(out, "%s[", k->bufs[s->buf].name);
      print_expr(out, k, s->index);
      ctx_buf_puts(out, "] = ");
      print_expr(out, k, s->value);
      ctx_buf_putc(out, '\n');
      continue;
    } else {
      ctx_buf_puts(out, "if ");
      print_expr(out, k, s->cond);
      ctx_buf_puts(out, " {\n");
      print_block(out, k, &s->then, level + 1);
      if (s->els.n) {
        indent(out, level);
        ctx_buf_puts(out, "} else {\n");
        print_block(out, k, &s->els, level + 1);
      }
    }
    indent(out, level);
    ctx_buf_puts(out, "}\n");
  }
}

/* The name of RA parameter [index]'s buffer. */
static const char *param_name(const IlirKernel *k, int index) {
  for (int i = 0; i < k->nbufs; i++)
    if (k->bufs[i].kind == ILIR_BUF_PARAM && k->bufs[i].index == index) return k->bufs[i].name;
  return "?";
}

void ilir_print(CtxBuf *out, const IlirKernel *k) {
  ctx_buf_printf(out, "kernel %s (K = %ld, V = %ld)\n", k->name, k->max_deps,
                 k->values_per_node);
  if (k->balance_threads > 0)
    ctx_buf_printf(out, "  levels balanced on up to %d thread%s\n", k->balance_threads,
                   k->balance_threads == 1 ? "" : "s");
  for (int i = 0; i < k->nbufs; i++) {
    const IlirBuf *b = &k->bufs[i];
    bool per_node = b->kind != ILIR_BUF_PARAM && b->kind != ILIR_BUF_LEVELS &&
                    b->kind != ILIR_BUF_PACKED && b->kind != ILIR_BUF_INVARIANT &&
                    b->kind != ILIR_BUF_PHASES && b->kind != ILIR_BUF_ARITY_END;
    const char *rows = b->kind == ILIR_BUF_LEVEL_SCRATCH ? "level nodes x "
                       : per_node                            ? "nodes x "
                                                             : "";
    if (b->kind == ILIR_BUF_PHASES) /* one flag per level; size is K */
      ctx_buf_printf(out, "  buf %d %s: %s[levels], phases of up to %ld levels", i, b->name,
                     buf_kinds[b->kind], b->size);
    else if (b->kind == ILIR_BUF_ARITY_END && b->size < 0)
      ctx_buf_printf(out, "  buf %d %s: %s[levels]: nodes that are dependency %ld", i, b->name,
                     buf_kinds[b->kind], -1 - b->size);
    else if (b->kind == ILIR_BUF_ARITY_END)
      ctx_buf_printf(out, "  buf %d %s: %s[levels]: nodes with %ld dependencies", i, b->name,
                     buf_kinds[b->kind], b->size);
    else
      ctx_buf_printf(out, "  buf %d %s: %s[%s%ld]", i, b->name, buf_kinds[b->kind], rows,
                     b->size);
    if (b->kind == ILIR_BUF_PACKED) {
      ctx_buf_printf(out, " = %s[%ld + c * %ld + r] at [r * %ld + c], r < %ld",
                     param_name(k, b->index), b->pack.off, b->pack.stride, b->pack.cols,
                     b->pack.rows);
      if (b->pack.panel > 0 && b->pack.panel < b->pack.cols)
        ctx_buf_printf(out, ", in panels of %ld", b->pack.panel);
    }
    if (b->shared) ctx_buf_puts(out, " in shared");
    ctx_buf_putc(out, '\n');
  }
  ctx_buf_printf(out, "  output: %s[n * %ld + %ld ...], %ld values\n",
                 k->bufs[k->out_buf].name, k->bufs[k->out_buf].size, k->out_off, k->out_size);
  print_block(out, k, &k->body, 0);
}

/* ---- the verifier ------------------------------------------------------------------------ */

typedef struct {
  const IlirKernel *k;
  CtxDiag *diag;
  unsigned char *live; /* variables bound by enclosing loops and reductions */
  bool ok;
} Verify;

static void fail(Verify *V, const char *what) {
  if (V->ok) CTX_ICE(V->diag, "ILIR of '%s': %s", V->k->name, what);
  V->ok = false;
}

static void verify_expr(Verify *V, const IlirExpr *e) {
  if (!e) {
    fail(V, "a missing operand");
    return;
  }
  switch (e->kind) {
  case ILIR_VAR:
    if (e->var->id >= V->k->nvars || !V->live[e->var->id]) fail(V, "an unbound variable");
    break;
  case ILIR_LOAD:
    if (e->buf < 0 || e->buf >= V->k->nbufs) {
      fail(V, "a load from no buffer");
      return;
    }
    verify_expr(V, e->a);
    if (e->a->type != ILIR_I64) fail(V, "a load at a float index");
    break;
  case ILIR_UNARY: verify_expr(V, e->a); break;
  case ILIR_BINARY:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    if (e->a->type != e->b->type) fail(V, "a binary operation on mixed types");
    break;
  case ILIR_SELECT:
    verify_expr(V, e->c), verify_expr(V, e->a), verify_expr(V, e->b);
    if (e->c->type != ILIR_I64 || e->a->type != e->b->type) fail(V, "an ill-typed select");
    break;
  case ILIR_REDUCE:
    verify_expr(V, e->lo), verify_expr(V, e->hi);
    V->live[e->var->id] = 1;
    verify_expr(V, e->a);
    V->live[e->var->id] = 0;
    if (e->a->type != ILIR_F32) fail(V, "a reduction of integers");
    break;
  case ILIR_TO_F32:
    verify_expr(V, e->a);
    if (e->a->type != ILIR_I64) fail(V, "a conversion of a float");
    break;
  default: break;
  }
}

static void verify_block(Verify *V, const IlirBlock *b) {
  for (int i = 0; i < b->n && V->ok; i++) {
    const IlirStmt *s = b->stmts[i];
    if (s->kind == ILIR_LOOP) {
      verify_expr(V, s->lo), verify_expr(V, s->hi);
      if (V->live[s->var->id]) fail(V, "a loop rebinds a live variable");
      IlirTileParts parts;
      if (s->tile_nodes && !ilir_tile_parts(V->k, s, &parts))
        fail(V, "a register tile that is not a product of packed weights");
      V->live[s->var->id] = 1;
      verify_block(V, &s->body);
      V->live[s->var->id] = 0;
    } else if (s->kind == ILIR_STORE) {
      verify_expr(V, s->index), verify_expr(V, s->value);
      if (s->buf < 0 || s->buf >= V->k->nbufs ||
          ilir_buf_type(V->k->bufs[s->buf].kind) != ILIR_F32 || s->value->type != ILIR_F32)
        fail(V, "a store that is not a float into a float buffer");
    } else {
      verify_expr(V, s->cond);
      if (s->cond->type != ILIR_I64) fail(V, "a float condition");
      verify_block(V, &s->then), verify_block(V, &s->els);
    }
  }
}

bool ilir_verify(const IlirKernel *k, CtxDiag *diag) {
  Verify V = {k, diag, ctx_xmalloc((size_t)k->nvars + 1), true};
  for (int i = 0; i <= k->nvars; i++) V.live[i] = 0;
  verify_block(&V, &k->body);
  free(V.live);
  return V.ok && ilir_check_bounds(k, diag);
}
