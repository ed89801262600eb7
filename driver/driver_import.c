/* driver_import.c — resolves a model's `use` items into the files sema checks.
 *
 * Between parsing and sema: starting from the model file, every `use` item is
 * resolved, depth first, to a source — `use nn.lstm` to the embedded standard
 * library module stdlib/nn/lstm.ctx (registered under that name, so
 * diagnostics inside it say where), `use "lib/x.ctx"` to a file relative to
 * the importing file's directory — which is registered, parsed and resolved
 * in turn. Each source is loaded once however often it is used; a `use` that
 * reaches a file still being resolved is an import cycle. The result is the
 * list sema_check takes: the model first, then every imported file. Sema
 * reads no files; this is the one place imports touch the file system.
 */
/* realpath is an XSI extension in glibc: strict C11 hides it. */
#define _XOPEN_SOURCE 700

#include "driver/driver.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "stdlib/stdlib.h"

typedef struct {
  AstFile *ast;
  const char *key;     /* identity: "stdlib:MODULE" or the file's real path */
  const char *name;    /* the name it is registered under */
  bool is_stdlib;
  bool open;           /* its imports are being resolved (a cycle reaches it) */
  int parent;          /* the file whose `use` loaded it; -1 for the model */
  const AstItem *via;  /* that `use` item */
} ImportFile;

typedef struct {
  CtxSession *s;
  ImportFile *files;
  int n, cap;
} Importer;

static int add_file(Importer *im, const char *key, const char *name, int parent,
                    const AstItem *via) {
  if (im->n == im->cap) {
    im->cap = im->cap ? 2 * im->cap : 8;
    ImportFile *grown = CTX_NEW_ARRAY(im->s->arena, ImportFile, im->cap);
    if (im->n) memcpy(grown, im->files, sizeof *grown * (size_t)im->n);
    im->files = grown;
  }
  ImportFile *f = &im->files[im->n];
  f->key = key;
  f->name = name;
  f->parent = parent;
  f->via = via;
  return im->n++;
}

/* The identity of a file: its real path when it exists, else [path]. */
static const char *file_key(CtxArena *arena, const char *path) {
  char real[PATH_MAX];
  return ctx_arena_strdup(arena, realpath(path, real) ? real : path);
}

/* [rel] relative to the directory of [from] (a registered file name). */
static const char *relative_to(CtxArena *arena, const char *from, const char *rel) {
  const char *slash = strrchr(from, '/');
  if (rel[0] == '/' || !slash) return rel;
  return ctx_arena_printf(arena, "%.*s/%s", (int)(slash - from), from, rel);
}

/* An error at the `use` in file [from] that reaches file [to], still being
 * resolved, with a note at each other `use` on the cycle. Names are quoted as
 * the `use` items spell them. */
static void report_cycle(Importer *im, int from, int to, const AstItem *use) {
  ctx_diag_error(&im->s->diag, use->name.span, "import cycle: '%s' imports itself, "
                 "directly or not", use->name.id);
  for (int i = from; i != to && i > 0; i = im->files[i].parent)
    ctx_diag_note(&im->s->diag, im->files[i].via->name.span, "'%s' is imported here, on "
                  "the cycle", im->files[i].via->name.id);
}

/* Registers the source a `use` in file [from] names; returns its source id,
 * or 0 after reporting why it cannot be loaded. Sets [*key] and [*stdlib]. */
static int load_source(Importer *im, int from, const AstItem *use, const char **key,
                       bool *is_stdlib) {
  CtxSession *s = im->s;
  const char *name = use->name.id;
  *is_stdlib = !use->use_file;
  if (!use->use_file) {
    const char *path, *text;
    size_t len;
    *key = ctx_arena_printf(s->arena, "stdlib:%s", name);
    for (int i = 0; i < im->n; i++)
      if (strcmp(im->files[i].key, *key) == 0) return -1; /* loaded already */
    if ((text = ctx_stdlib_find(name, &path, &len)))
      return ctx_sources_add(&s->srcs, path, text, len);
    ctx_diag_error(&s->diag, use->name.span, "module '%s' not found", name);
    const char *near = ctx_stdlib_closest(name);
    if (near) ctx_diag_note(&s->diag, use->name.span, "did you mean '%s'?", near);
    return 0;
  }
  if (im->files[from].is_stdlib) {
    ctx_diag_error(&s->diag, use->name.span, "a standard library module may use only "
                   "other modules, not files");
    return 0;
  }
  const char *path = relative_to(s->arena, im->files[from].name, name);
  *key = file_key(s->arena, path);
  for (int i = 0; i < im->n; i++)
    if (strcmp(im->files[i].key, *key) == 0) return -1;
  char err[512];
  int id = ctx_sources_load(&s->srcs, path, CTX_MAX_SOURCE_BYTES, err, sizeof err);
  if (!id) ctx_diag_error(&s->diag, use->name.span, "%s", err);
  return id;
}

static int find_key(const Importer *im, const char *key) {
  for (int i = 0; i < im->n; i++)
    if (strcmp(im->files[i].key, key) == 0) return i;
  return -1;
}

/* Resolves the `use` items of file [at], depth first. */
static void resolve(Importer *im, int at) {
  im->files[at].open = true;
  const AstFile *f = im->files[at].ast;
  for (int i = 0; i < f->nitems && !ctx_diag_should_stop(&im->s->diag); i++) {
    const AstItem *use = f->items[i];
    if (use->kind != AST_USE || !use->name.id) continue;
    const char *key = NULL;
    bool is_stdlib;
    int id = load_source(im, at, use, &key, &is_stdlib);
    if (id == 0) continue;
    if (id < 0) {
      int old = find_key(im, key);
      if (im->files[old].open) report_cycle(im, at, old, use);
      continue;
    }
    int k = add_file(im, key, ctx_sources_get(&im->s->srcs, id)->name, at, use);
    im->files[k].is_stdlib = is_stdlib;
    im->files[k].ast = ast_parse(im->s->arena, &im->s->diag, id);
    resolve(im, k);
  }
  im->files[at].open = false;
}

AstFile **ctx_pipeline_imports(CtxSession *s, AstFile *model, int *nfiles) {
  Importer im = {s, NULL, 0, 0};
  const CtxSource *src = ctx_sources_get(&s->srcs, model->file);
  int root = add_file(&im, file_key(s->arena, src->name), src->name, -1, NULL);
  im.files[root].ast = model;
  int errors = s->diag.errors;
  resolve(&im, root);
  AstFile **files = CTX_NEW_ARRAY(s->arena, AstFile *, im.n);
  for (int i = 0; i < im.n; i++) files[i] = im.files[i].ast;
  *nfiles = im.n;
  return s->diag.errors > errors ? NULL : files;
}
