/* support_arena.c — zeroed bump arenas with mark/release, and the one place
 * that handles running out of memory.
 *
 * Chunks form a singly linked list, newest first. A mark records the current
 * chunk and its fill level; releasing frees newer chunks and rewinds. With
 * CTX_ARENA_DEBUG every allocation is its own malloc'd chunk, so
 * AddressSanitizer sees overflows between allocations.
 */
#include "support/support.h"

#include <stdlib.h>
#include <string.h>

void ctx_oom(void) {
  fputs("ctx: fatal error: out of memory\n", stderr);
  abort();
}

void *ctx_xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) ctx_oom();
  return p;
}

void *ctx_xrealloc(void *ptr, size_t size) {
  void *p = realloc(ptr, size ? size : 1);
  if (!p) ctx_oom();
  return p;
}

typedef struct Chunk {
  struct Chunk *prev;
  size_t size, used;
  _Alignas(max_align_t) unsigned char data[];
} Chunk;

struct CtxArena {
  Chunk *top;
  size_t bytes;
};

enum { CHUNK_SIZE = 64 * 1024, ALIGN = _Alignof(max_align_t) };

CtxArena *ctx_arena_new(void) {
  CtxArena *a = ctx_xmalloc(sizeof *a);
  a->top = NULL;
  a->bytes = 0;
  return a;
}

static void free_chunks_until(CtxArena *a, Chunk *stop) {
  while (a->top && a->top != stop) {
    Chunk *prev = a->top->prev;
    free(a->top);
    a->top = prev;
  }
}

void ctx_arena_free(CtxArena *arena) {
  if (!arena) return;
  free_chunks_until(arena, NULL);
  free(arena);
}

static Chunk *new_chunk(CtxArena *a, size_t need) {
#ifdef CTX_ARENA_DEBUG
  size_t size = need;
#else
  size_t size = need > CHUNK_SIZE ? need : CHUNK_SIZE;
#endif
  if (size > SIZE_MAX - sizeof(Chunk)) ctx_oom();
  Chunk *c = ctx_xmalloc(sizeof(Chunk) + size);
  c->prev = a->top;
  c->size = size;
  c->used = 0;
  a->top = c;
  return c;
}

void *ctx_arena_alloc(CtxArena *arena, size_t size) {
  size_t need = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
  if (need < size) ctx_oom(); /* overflow */
  if (need == 0) need = ALIGN;
  Chunk *c = arena->top;
#ifdef CTX_ARENA_DEBUG
  c = new_chunk(arena, size ? size : 1);
  need = c->size;
#else
  if (!c || c->size - c->used < need) c = new_chunk(arena, need);
#endif
  void *p = c->data + c->used;
  c->used += need;
  arena->bytes += size;
  memset(p, 0, size ? size : 1);
  return p;
}

char *ctx_arena_strndup(CtxArena *arena, const char *s, size_t len) {
  char *p = ctx_arena_alloc(arena, len + 1);
  memcpy(p, s, len);
  return p;
}

char *ctx_arena_strdup(CtxArena *arena, const char *s) {
  return ctx_arena_strndup(arena, s, strlen(s));
}

char *ctx_arena_printf(CtxArena *arena, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = ctx_arena_alloc(arena, (size_t)(n < 0 ? 0 : n) + 1);
  if (n > 0) vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

CtxArenaMark ctx_arena_mark(CtxArena *arena) {
  CtxArenaMark m = {arena->top, arena->top ? arena->top->used : 0};
  return m;
}

void ctx_arena_release(CtxArena *arena, CtxArenaMark mark) {
  free_chunks_until(arena, mark.chunk);
  if (arena->top) arena->top->used = mark.used;
}

size_t ctx_arena_bytes(const CtxArena *arena) { return arena->bytes; }

void ctx_vec_push(CtxArena *arena, CtxVec *vec, void *item) {
  if (vec->len == vec->cap) {
    int cap = vec->cap ? vec->cap * 2 : 4;
    void **items = CTX_NEW_ARRAY(arena, void *, cap);
    if (vec->len) memcpy(items, vec->items, sizeof(void *) * (size_t)vec->len);
    vec->items = items;
    vec->cap = cap;
  }
  vec->items[vec->len++] = item;
}
