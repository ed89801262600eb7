/* embed.c — a C program that runs a model compiled ahead of time by
 * `ctx build examples/treelstm.ctx -o OUTDIR`: it includes the generated
 * header, makes a model from a weights file (or the seeded defaults), runs it
 * on bracketed trees (SST-style, word ids at the leaves) and prints one line
 * per tree: its index and its output values.
 *
 *   embed [--weights W.safetensors] [--threads N] [--arrays | --heads] TREES.ptb
 *
 * By default the library reads the text. With --arrays or --heads the
 * program parses the trees itself (as one that holds trees already would)
 * and passes them as arrays: dependency lists (treelstm_run_arrays) or
 * parent arrays (treelstm_run_heads).
 *
 * The model runs on every core unless --threads N (or the environment
 * variable CTXRT_THREADS) says otherwise; the outputs are the same.
 *
 * Exit codes: 0 ok, 1 an error (printed with the library's message), 2 a bad
 * command line.
 */
#include "treelstm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file [path], malloc'd, its size in [*len]; NULL when unreadable. */
static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *data = NULL;
  size_t cap = 0;
  *len = 0;
  for (;;) {
    if (*len == cap) {
      char *grown = realloc(data, cap = cap ? 2 * cap : 4096);
      if (!grown) break;
      data = grown;
    }
    size_t got = fread(data + *len, 1, cap - *len, f);
    if (got == 0) break;
    *len += got;
  }
  fclose(f);
  return data;
}

/* Trees as arrays: per node (trees one after the other) its parent within
 * its tree (-1: the root), its word (leaves) and its number of children. */
typedef struct {
  int32_t num_trees, num_nodes;
  int32_t *tree_nodes; /* [num_trees] */
  int32_t *parent, *num_children, *children; /* [num_nodes] each */
  double *words;                             /* [num_nodes], 0 at internal nodes */
} Trees;

/* Parses bracketed trees `(LABEL WORD)` / `(LABEL TREE...)`, one a line,
 * into [t]: a small parser for this example, not a validating one (the
 * library checks the arrays). Returns 0, or -1 on malformed text. */
static int parse_trees(const char *s, size_t len, Trees *t) {
  size_t cap = len / 2 + 1; /* a node takes at least "()" */
  t->tree_nodes = calloc(cap, sizeof(int32_t));
  t->parent = calloc(cap, sizeof(int32_t));
  t->num_children = calloc(cap, sizeof(int32_t));
  t->children = calloc(cap, sizeof(int32_t));
  t->words = calloc(cap, sizeof(double));
  int32_t *open = calloc(cap, sizeof(int32_t)), depth = 0, first = 0;
  if (!t->tree_nodes || !t->parent || !t->num_children || !t->children || !t->words || !open)
    return free(open), -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '(') {
      if (depth == 0) first = t->num_nodes, t->num_trees++;
      int32_t n = t->num_nodes++;
      t->parent[n] = depth ? open[depth - 1] - first : -1;
      if (depth) t->num_children[open[depth - 1]]++;
      open[depth++] = n;
      while (i + 1 < len && s[i + 1] != ' ' && s[i + 1] != '(' && s[i + 1] != ')') i++;
    } else if (s[i] == ')') {
      if (depth == 0) return free(open), -1;
      if (--depth == 0) t->tree_nodes[t->num_trees - 1] = t->num_nodes - first;
    } else if (s[i] >= '0' && s[i] <= '9' && depth) {
      t->words[open[depth - 1]] = strtod(s + i, NULL);
      while (i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9') i++;
    }
  }
  /* children lists in order: a node's children follow it in pre-order */
  int32_t at = 0;
  for (int32_t n = 0, base = 0, tree = 0; n < t->num_nodes; n++) {
    if (n - base == t->tree_nodes[tree]) base = n, tree++;
    for (int32_t c = n + 1; c < base + t->tree_nodes[tree]; c++)
      if (t->parent[c] == n - base) t->children[at++] = c - base;
  }
  free(open);
  return depth == 0 ? 0 : -1;
}

static void free_trees(Trees *t) {
  free(t->tree_nodes), free(t->parent), free(t->num_children), free(t->children);
  free(t->words);
}

/* Runs [m] on the text [text] as the [mode] says: 0 text, 1 arrays, 2 heads. */
static int run_model(treelstm_model *m, const char *text, size_t len, int mode, char *err,
                     size_t errlen) {
  if (mode == 0) return treelstm_run_ptb(m, text, len, err, errlen);
  Trees t = {0};
  int rc = parse_trees(text, len, &t);
  if (rc != 0)
    snprintf(err, errlen, "malformed trees");
  else if (mode == 1)
    rc = treelstm_run_arrays(m, t.num_trees, t.tree_nodes, t.num_children, t.children,
                             t.words, err, errlen);
  else
    rc = treelstm_run_heads(m, t.num_trees, t.tree_nodes, t.parent, t.words, err, errlen);
  free_trees(&t);
  return rc;
}

int main(int argc, char **argv) {
  const char *weights = NULL, *trees = NULL;
  int threads = 0, mode = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--arrays") == 0 || strcmp(argv[i], "--heads") == 0)
      mode = argv[i][2] == 'a' ? 1 : 2;
    else if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc)
      weights = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!trees && argv[i][0] != '-')
      trees = argv[i];
    else
      trees = NULL, i = argc;
  }
  if (!trees) {
    fprintf(stderr, "usage: embed [--weights W.safetensors] [--threads N] [--arrays | "
                    "--heads] TREES.ptb\n");
    return 2;
  }
  size_t len = 0;
  char *text = read_all(trees, &len);
  if (!text) {
    fprintf(stderr, "embed: cannot read '%s'\n", trees);
    return 1;
  }
  char err[512];
  treelstm_model *m = NULL;
  int rc = treelstm_create(weights, &m, err, sizeof err);
  if (rc == TREELSTM_OK && err[0]) fprintf(stderr, "embed: %s\n", err); /* a note */
  if (rc == TREELSTM_OK) rc = treelstm_set_threads(m, threads, err, sizeof err);
  if (rc == TREELSTM_OK) rc = run_model(m, text, len, mode, err, sizeof err);
  if (rc != TREELSTM_OK) {
    fprintf(stderr, "embed: %s (code %d)\n", err, rc);
  } else {
    for (int64_t i = 0; i < treelstm_num_outputs(m); i++) {
      const float *row = treelstm_output(m, i);
      printf("%" PRId64 ":", i);
      for (int64_t v = 0; v < treelstm_output_size(); v++) printf(" %.9g", (double)row[v]);
      putchar('\n');
    }
  }
  treelstm_destroy(m);
  free(text);
  return rc == TREELSTM_OK ? 0 : 1;
}
