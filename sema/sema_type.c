/* sema_type.c — sema's types: constructors, equality, printing, and the side
 * table that maps each checked AstExpr to its type.
 *
 * Types are immutable once built and allocated in the check's arena; the
 * error type is one shared value per check. The side table is an
 * open-addressing hash keyed by the expression's address (the AST outlives
 * nothing that sema builds, both live in the same arena).
 */
#include "sema/sema_int.h"

#include <string.h>

struct SemaTable {
  CtxArena *arena;
  const void **keys; /* an AstExpr, or an index variable (sema_extent_of) */
  SemaType **vals;
  size_t cap, len;
};

SemaType *sema_error_type(Sema *S) {
  SemaType *t = CTX_NEW(S->arena, SemaType);
  t->kind = SEMA_ERROR;
  return t;
}

SemaType *sema_int_type(Sema *S, bool is_const, long value) {
  SemaType *t = CTX_NEW(S->arena, SemaType);
  t->kind = SEMA_INT;
  t->is_const = is_const;
  t->value = value;
  return t;
}

SemaType *sema_bool_type(Sema *S) {
  SemaType *t = CTX_NEW(S->arena, SemaType);
  t->kind = SEMA_BOOL;
  return t;
}

SemaType *sema_tensor_type(Sema *S, SemaElem elem, int rank, const long *dims) {
  SemaType *t = CTX_NEW(S->arena, SemaType);
  t->kind = SEMA_TENSOR;
  t->elem = elem;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  return t;
}

SemaType *sema_node_type(Sema *S, SemaNodeRel rel) {
  SemaType *t = CTX_NEW(S->arena, SemaType);
  t->kind = SEMA_NODE;
  t->rel = rel;
  return t;
}

/* Tuple field names do not take part: a returned (h, c) matches
 * (h: f32[H], c: f32[H]). */
bool sema_type_eq(const SemaType *a, const SemaType *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case SEMA_TENSOR:
    if (a->elem != b->elem || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
      if (a->dims[i] != b->dims[i]) return false;
    return true;
  case SEMA_TUPLE:
    if (a->nfields != b->nfields) return false;
    for (int i = 0; i < a->nfields; i++)
      if (!sema_type_eq(a->fields[i], b->fields[i])) return false;
    return true;
  default:
    return true;
  }
}

void sema_print_type(CtxBuf *out, const SemaType *t) {
  switch (t->kind) {
  case SEMA_ERROR: ctx_buf_puts(out, "<error>"); break;
  case SEMA_INT: ctx_buf_puts(out, "an integer"); break;
  case SEMA_BOOL: ctx_buf_puts(out, "a condition"); break;
  case SEMA_NODE: ctx_buf_puts(out, "a node"); break;
  case SEMA_RANGE: ctx_buf_puts(out, "a range of children"); break;
  case SEMA_TENSOR:
    ctx_buf_puts(out, t->elem == SEMA_F32 ? "f32" : "i32");
    if (t->rank == 0) break;
    ctx_buf_putc(out, '[');
    for (int i = 0; i < t->rank; i++) ctx_buf_printf(out, "%s%ld", i ? ", " : "", t->dims[i]);
    ctx_buf_putc(out, ']');
    break;
  case SEMA_TUPLE:
    ctx_buf_putc(out, '(');
    for (int i = 0; i < t->nfields; i++) {
      if (i) ctx_buf_puts(out, ", ");
      if (t->names && t->names[i]) ctx_buf_printf(out, "%s: ", t->names[i]);
      sema_print_type(out, t->fields[i]);
    }
    ctx_buf_putc(out, ')');
    break;
  }
}

const char *sema_type_str(Sema *S, const SemaType *t) {
  CtxBuf b;
  ctx_buf_init(&b);
  sema_print_type(&b, t);
  const char *s = ctx_arena_strdup(S->arena, ctx_buf_str(&b));
  ctx_buf_free(&b);
  return s;
}

const char *sema_struct_word(SemaStructKind k) {
  return k == SEMA_TREE ? "tree" : k == SEMA_DAG ? "dag" : "sequence";
}

/* ---- the side table -------------------------------------------------------- */

SemaTable *sema_table_new(CtxArena *arena) {
  SemaTable *t = CTX_NEW(arena, SemaTable);
  t->arena = arena;
  t->cap = 256;
  t->keys = CTX_NEW_ARRAY(arena, const void *, t->cap);
  t->vals = CTX_NEW_ARRAY(arena, SemaType *, t->cap);
  return t;
}

static size_t slot_of(const SemaTable *t, const void *e) {
  size_t h = (size_t)(uintptr_t)e;
  h ^= h >> 17;
  h *= 0x9e3779b97f4a7c15ull & SIZE_MAX;
  size_t i = h & (t->cap - 1);
  while (t->keys[i] && t->keys[i] != e) i = (i + 1) & (t->cap - 1);
  return i;
}

static void table_grow(SemaTable *t) {
  const void **keys = t->keys;
  SemaType **vals = t->vals;
  size_t cap = t->cap;
  t->cap *= 2;
  t->keys = CTX_NEW_ARRAY(t->arena, const void *, t->cap);
  t->vals = CTX_NEW_ARRAY(t->arena, SemaType *, t->cap);
  for (size_t i = 0; i < cap; i++) {
    if (!keys[i]) continue;
    size_t j = slot_of(t, keys[i]);
    t->keys[j] = keys[i];
    t->vals[j] = vals[i];
  }
}

/* The first type recorded for [e] wins (def bodies are checked once per
 * instantiation; the first one is kept). */
void sema_record(Sema *S, const void *e, SemaType *type) {
  SemaTable *t = S->m->types;
  if (2 * (t->len + 1) > t->cap) table_grow(t);
  size_t i = slot_of(t, e);
  if (t->keys[i]) return;
  t->keys[i] = e;
  t->vals[i] = type;
  t->len++;
}

SemaType *sema_type_of(const SemaModel *m, const void *e) {
  if (!m || !m->types) return NULL;
  size_t i = slot_of(m->types, e);
  return m->types->keys[i] ? m->types->vals[i] : NULL;
}

long sema_extent_of(const SemaModel *m, const void *var) {
  const SemaType *t = sema_type_of(m, var);
  return t && t->kind == SEMA_INT ? t->value : 0;
}
