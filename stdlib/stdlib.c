/* stdlib.c — lookups in the embedded standard library.
 *
 * The table itself is generated at build time (embed.py -> stdlib_data.c in
 * the build tree); this file only searches it. Module names are few (a
 * handful), so a linear scan is the whole index.
 */
#include "stdlib/stdlib.h"

#include <string.h>

#include "support/support.h"

const char *ctx_stdlib_find(const char *module, const char **path, size_t *len) {
  for (const CtxStdlibModule *m = ctx_stdlib_modules(); m->module; m++) {
    if (strcmp(m->module, module) != 0) continue;
    *path = m->path;
    *len = m->len;
    return m->text;
  }
  return NULL;
}

const char *ctx_stdlib_closest(const char *module) {
  /* The same cap as sema's name suggestions: short names allow fewer edits. */
  size_t n = strlen(module);
  int cap = n <= 2 ? 1 : n <= 5 ? 2 : 3, best_dist = cap + 1;
  const char *best = NULL;
  for (const CtxStdlibModule *m = ctx_stdlib_modules(); m->module; m++) {
    int d = ctx_edit_distance(module, m->module, cap);
    if (d < best_dist) {
      best_dist = d;
      best = m->module;
    }
  }
  return best;
}
