/* ilir_simplify.c — the simplifier: index arithmetic in one canonical form,
 * and control flow that constants decide removed.
 *
 * An integer expression built of +, - and multiplications by constants is a
 * linear form c0 + c1 * a1 + c2 * a2 + ... over atoms (variables, loads,
 * arguments, products of two variables); it is rebuilt as
 * a1 * c1 + a2 * c2 + ... + c0 with the atoms in the order they first appear,
 * equal atoms merged and zero terms dropped: (8 + ((i * 8) + r)) becomes
 * ((i * 8) + r) + 8, (x + 3) * 4 becomes (x * 4) + 12, (i + 1) - i becomes 1.
 * Float arithmetic is left as written (x + 0 is not x for x = -0).
 * An `if` on a constant becomes the branch taken, a loop over an empty
 * constant range disappears.
 */
#include "ilir/ilir_int.h"

enum { MAX_TERMS = 32 };

typedef struct {
  IlirExpr *atom[MAX_TERMS];
  long coef[MAX_TERMS];
  int n;
  long c;
  bool ok; /* fits in MAX_TERMS */
} Linear;

static void add_term(Linear *L, IlirExpr *atom, long coef) {
  for (int i = 0; i < L->n; i++)
    if (ilir_same_expr(L->atom[i], atom, NULL, NULL)) {
      L->coef[i] += coef;
      return;
    }
  if (L->n == MAX_TERMS) {
    L->ok = false;
    return;
  }
  L->atom[L->n] = atom;
  L->coef[L->n++] = coef;
}

/* Adds [scale] times the integer expression [e] to [L]. */
static void collect(Linear *L, IlirExpr *e, long scale) {
  if (e->kind == ILIR_CONST) {
    L->c += scale * e->ival;
  } else if (e->kind == ILIR_BINARY && (e->op == ILIR_ADD || e->op == ILIR_SUB)) {
    collect(L, e->a, scale);
    collect(L, e->b, e->op == ILIR_ADD ? scale : -scale);
  } else if (e->kind == ILIR_BINARY && e->op == ILIR_MUL && e->b->kind == ILIR_CONST) {
    collect(L, e->a, scale * e->b->ival);
  } else if (e->kind == ILIR_BINARY && e->op == ILIR_MUL && e->a->kind == ILIR_CONST) {
    collect(L, e->b, scale * e->a->ival);
  } else {
    add_term(L, e, scale);
  }
}

static IlirExpr *rebuild(CtxArena *a, const Linear *L) {
  IlirExpr *sum = NULL;
  for (int i = 0; i < L->n; i++) {
    if (L->coef[i] == 0) continue;
    IlirExpr *t = L->coef[i] == 1 ? L->atom[i]
                                  : ilir_binary(a, ILIR_MUL, L->atom[i], ilir_const_i(a, L->coef[i]));
    sum = sum ? ilir_binary(a, ILIR_ADD, sum, t) : t;
  }
  if (!sum) return ilir_const_i(a, L->c);
  return L->c ? ilir_binary(a, ILIR_ADD, sum, ilir_const_i(a, L->c)) : sum;
}

static bool is_linear_op(const IlirExpr *e) {
  return e->kind == ILIR_BINARY && e->type == ILIR_I64 &&
         (e->op == ILIR_ADD || e->op == ILIR_SUB ||
          (e->op == ILIR_MUL && (e->a->kind == ILIR_CONST || e->b->kind == ILIR_CONST)));
}

int ilir_linear(IlirExpr *e, IlirExpr **atoms, long *coefs, int cap, long *konst) {
  Linear L = {{0}, {0}, 0, 0, true};
  collect(&L, e, 1);
  if (!L.ok) return -1;
  int n = 0;
  for (int i = 0; i < L.n; i++) {
    if (!L.coef[i]) continue;
    if (n == cap) return -1;
    atoms[n] = L.atom[i], coefs[n++] = L.coef[i];
  }
  *konst = L.c;
  return n;
}

static IlirExpr *simplify_expr(CtxArena *a, IlirExpr *e) {
  if (!e) return NULL;
  e->a = simplify_expr(a, e->a);
  e->b = simplify_expr(a, e->b);
  e->c = simplify_expr(a, e->c);
  e->lo = simplify_expr(a, e->lo);
  e->hi = simplify_expr(a, e->hi);
  if (!is_linear_op(e)) return e;
  Linear L = {{0}, {0}, 0, 0, true};
  collect(&L, e, 1);
  return L.ok ? rebuild(a, &L) : e;
}

static void simplify_block(CtxArena *a, IlirBlock *b) {
  int out = 0;
  for (int i = 0; i < b->n; i++) {
    IlirStmt *s = b->stmts[i];
    s->lo = simplify_expr(a, s->lo);
    s->hi = simplify_expr(a, s->hi);
    s->index = simplify_expr(a, s->index);
    s->value = simplify_expr(a, s->value);
    s->cond = simplify_expr(a, s->cond);
    if (s->kind == ILIR_IF) {
      simplify_block(a, &s->then);
      simplify_block(a, &s->els);
      if (s->cond->kind == ILIR_CONST) { /* the branch taken, in place */
        const IlirBlock *taken = s->cond->ival ? &s->then : &s->els;
        IlirStmt **grown = CTX_NEW_ARRAY(a, IlirStmt *, b->n + taken->n);
        for (int k = 0; k < out; k++) grown[k] = b->stmts[k];
        for (int k = 0; k < taken->n; k++) grown[out++] = taken->stmts[k];
        for (int k = i + 1; k < b->n; k++) grown[out + k - i - 1] = b->stmts[k];
        b->n = out + b->n - i - 1;
        b->stmts = grown;
        i = out - 1;
        continue;
      }
    } else if (s->kind == ILIR_LOOP) {
      simplify_block(a, &s->body);
      if (s->lo->kind == ILIR_CONST && s->hi->kind == ILIR_CONST && s->lo->ival >= s->hi->ival)
        continue; /* never runs */
      if (!s->body.n && s->loop != ILIR_LOOP_LEVELS) continue; /* does nothing */
    }
    b->stmts[out++] = s;
  }
  b->n = out;
}

void ilir_simplify(CtxArena *arena, IlirKernel *k) { simplify_block(arena, &k->body); }
