/* stdlib.h — the ctx standard library, embedded in the compiler.
 *
 * The modules under stdlib/ (nn/lstm.ctx, ...) are ctx source files holding
 * only `def` functions. At build time embed.py copies their text into a C
 * source in the build tree, so the `ctx` binary carries them and needs no
 * installed files. A module is named by its path: `use nn.lstm` is
 * stdlib/nn/lstm.ctx, and diagnostics inside it name that path. This library
 * only hands out text; the driver registers, parses and checks it.
 */
#ifndef CTX_STDLIB_H
#define CTX_STDLIB_H

#include <stddef.h>

typedef struct {
  const char *module; /* "nn.lstm" */
  const char *path;   /* "stdlib/nn/lstm.ctx": the name diagnostics print */
  const char *text;   /* the file's bytes, NUL-terminated */
  size_t len;         /* bytes of text, without the NUL */
} CtxStdlibModule;

/* All modules, sorted by path, ending with an entry whose module is NULL. */
const CtxStdlibModule *ctx_stdlib_modules(void);

/* The text of module [module] ("nn.lstm"), setting [*path] and [*len]; NULL
 * (and nothing set) when there is no such module. */
const char *ctx_stdlib_find(const char *module, const char **path, size_t *len);

/* The module whose name is closest to [module] by edit distance, or NULL
 * when none is close enough to suggest. */
const char *ctx_stdlib_closest(const char *module);

#endif
