/* repl_run.c — ctx repl's input, weights and runs: :tree, :nodes, :input,
 * :gen, :clear, :run, :interp, :time, :save.
 *
 *   trees typed with :tree (bracketed, accumulated) | a file | a --gen spec |
 *   nothing: three generated structures of the model's kind
 *     --libctxrt--> a forest, validated against the model (ctx_input_spec)
 *   weights: the :weights file or the seeded defaults (:seed), kept while
 *     the model's parameters stay the same
 *   :run: the JIT-compiled kernel (repl_build_jit) through ctxrt_model_run;
 *   :interp: ra_interp_run in float64, and the largest difference to the JIT
 *
 * The forest is read again for each command (it is small; reading it is not
 * what a REPL waits on), so nothing about it outlives the command. Bad trees,
 * files and weights print libctxrt's message and leave the session as it was.
 */
#include "driver/repl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SUMMARY_ROWS = 5, SUMMARY_VALUES = 6, DEFAULT_TIME_RUNS = 100 };

static void report(Repl *R, const CtxrtError *err) {
  const char *msg = err->msg[0] ? err->msg : "error: failed without a message";
  fflush(R->out);
  bool placed = strncmp(msg, "error: ", 7) == 0 || strstr(msg, ": error: ");
  fprintf(R->err, "%s%s\n", placed ? "" : "error: ", msg);
}

/* ---- input -------------------------------------------------------------------- */

bool repl_add_tree(Repl *R, const char *text) {
  CtxrtForest *f = NULL;
  CtxrtError err;
  if (ctxrt_read_ptb_buffer("<tree>", text, strlen(text), NULL, &f, &err)) {
    report(R, &err);
    return false;
  }
  if (R->input_path || R->gen) repl_clear_input(R);
  ctx_buf_printf(&R->trees, "%s\n", text);
  R->ntrees += f->num_structs;
  fprintf(R->out, "%d tree%s, %d node%s in this one\n", R->ntrees, R->ntrees == 1 ? "" : "s",
          (int)f->num_nodes, f->num_nodes == 1 ? "" : "s");
  ctxrt_forest_destroy(f);
  return true;
}

void repl_clear_input(Repl *R) {
  ctx_buf_clear(&R->trees);
  R->ntrees = 0;
  free(R->input_path);
  free(R->gen);
  R->input_path = R->gen = NULL;
}

static char *dup_str(const char *s) {
  char *d = ctx_xmalloc(strlen(s) + 1);
  strcpy(d, s);
  return d;
}

void repl_set_input(Repl *R, const char *path, bool nodes) {
  repl_clear_input(R);
  R->input_path = dup_str(path);
  R->input_nodes = nodes;
}

void repl_set_gen(Repl *R, const char *spec) {
  CtxrtGenSpec g;
  CtxrtError err;
  if (ctxrt_gen_parse(spec, &g, &err)) {
    report(R, &err);
    return;
  }
  repl_clear_input(R);
  R->gen = dup_str(spec);
}

/* Fills vocab and features of [g] from what [p] reads (as ctx run's --gen). */
static void gen_defaults(const RaProgram *p, CtxrtGenSpec *g) {
  int64_t features = p->values_per_node, vocab = 0;
  for (int k = 0; k < p->ninputs; k++) {
    if (!p->inputs[k].is_int) continue;
    if (k != 0 || p->inputs[k].row.size != 1) return; /* another layout: leave it */
    vocab = p->inputs[k].bound > 0 ? p->inputs[k].bound : 20000;
    features--;
  }
  if (!g->vocab) g->vocab = vocab;
  if (!g->features) g->features = features;
  if (g->values == CTXRT_GEN_VALUES_DEFAULT && ctx_reads_at_internal(p))
    g->values = CTXRT_GEN_VALUES_ALL;
}

/* Three small structures of the model's kind: the input when none was given. */
static void default_spec(const RaProgram *p, CtxrtGenSpec *g) {
  memset(g, 0, sizeof *g);
  g->count = 3;
  if (p->kind == SEMA_DAG) {
    g->shape = CTXRT_GEN_GRID, g->size = 3, g->size2 = 4;
  } else if (p->kind == SEMA_SEQUENCE) {
    g->shape = CTXRT_GEN_SEQUENCE, g->size = 8;
  } else if (p->max_arity == 2) {
    g->shape = CTXRT_GEN_BINARY, g->size = 6;
  } else if (p->max_arity == 1) {
    g->shape = CTXRT_GEN_CHAIN, g->size = 5;
  } else {
    g->shape = CTXRT_GEN_NARY, g->size = 10, g->size2 = p->max_arity > 0 ? p->max_arity : 3;
  }
}

/* The session's input for [p], validated; NULL after printing why. */
static CtxrtForest *read_input(Repl *R, const RaProgram *p) {
  CtxrtForest *f = NULL;
  CtxrtError err;
  CtxrtStatus st;
  CtxrtGenSpec g;
  if (R->ntrees) {
    st = ctxrt_read_ptb_buffer("<trees>", ctx_buf_str(&R->trees), R->trees.len, NULL, &f, &err);
  } else if (R->input_path) {
    st = R->input_nodes ? ctxrt_read_nodes_file(R->input_path, &f, &err)
                        : ctxrt_read_ptb_file(R->input_path, NULL, &f, &err);
  } else {
    if (R->gen) st = ctxrt_gen_parse(R->gen, &g, &err);
    else default_spec(p, &g), st = CTXRT_OK;
    if (!st) gen_defaults(p, &g);
    if (!st) st = ctxrt_generate(&g, &f, &err);
  }
  if (!st) {
    CtxrtSpec spec;
    int64_t *bound = ctx_input_spec(p, &spec);
    st = ctxrt_forest_validate(f, &spec, &err);
    free(bound);
  }
  if (!st) return f;
  report(R, &err);
  ctxrt_forest_destroy(f);
  return NULL;
}

/* ---- weights --------------------------------------------------------------------- */

static char *params_key(const CtxrtParam *ps, int n) {
  CtxBuf b;
  ctx_buf_init(&b);
  for (int i = 0; i < n; i++) {
    ctx_buf_printf(&b, "%s[", ps[i].name);
    for (int d = 0; d < ps[i].ndim; d++) ctx_buf_printf(&b, "%" PRId64 ",", ps[i].shape[d]);
    ctx_buf_puts(&b, "];");
  }
  char *key = dup_str(ctx_buf_str(&b));
  ctx_buf_free(&b);
  return key;
}

void repl_weights_changed(Repl *R) {
#ifdef CTX_HAVE_JIT
  if (R->build && R->build->model) {
    ctxrt_model_destroy(R->build->model);
    R->build->model = NULL;
    ctx_model_desc_free(&R->build->desc);
  }
#endif
  ctxrt_weights_destroy(R->weights);
  R->weights = NULL;
  free(R->weights_key);
  R->weights_key = NULL;
}

CtxrtWeights *repl_weights(Repl *R, const CtxrtParam *ps, int n) {
  char *key = params_key(ps, n);
  if (R->weights && strcmp(key, R->weights_key) == 0) {
    free(key);
    return R->weights;
  }
  repl_weights_changed(R);
  CtxrtError err;
  CtxrtStatus st;
  CtxrtWeights *w = NULL;
  if (R->weights_path) {
    st = ctxrt_st_read_file(R->weights_path, &w, &err);
    if (!st) st = ctxrt_weights_check(w, R->weights_path, ps, n, &err);
  } else {
    st = ctxrt_weights_create(ps, n, &w, &err);
    if (!st) ctxrt_weights_init(w, R->seed);
  }
  if (st) {
    report(R, &err);
    ctxrt_weights_destroy(w);
    free(key);
    return NULL;
  }
  R->weights = w;
  R->weights_key = key;
  return w;
}

/* ---- runs ------------------------------------------------------------------------ */

void repl_run_free(Repl *R) {
  repl_clear_input(R);
  ctx_buf_free(&R->trees);
  repl_weights_changed(R);
  free(R->last);
  R->last = NULL;
}

static const char *row_meaning(const RaProgram *p, bool all_nodes) {
  if (all_nodes) return "one row per node";
  if (p->kind == SEMA_TREE) return "one row per tree (its root)";
  return p->kind == SEMA_DAG ? "one row per sink" : "one row per sequence (its last element)";
}

/*   model treelstm: 1 tree, 9 nodes from <trees>
 *   output [1, 256], one row per tree (its root):
 *     0: -0.05679 -0.04687 ... norm=0.7812 */
static void print_rows(Repl *R, const RaProgram *p, const CtxrtForest *f, bool all_nodes,
                       const double *rows, int64_t n) {
  FILE *out = R->out;
  const RaShape *sh = &p->out_shape;
  fprintf(out, "model %s: %d %s%s, %d node%s from %s\n", p->name, (int)f->num_structs,
          ctxrt_kind_name(f->kind), f->num_structs == 1 ? "" : "s", (int)f->num_nodes,
          f->num_nodes == 1 ? "" : "s", f->name);
  fprintf(out, "output [%" PRId64, n);
  for (int d = 0; d < sh->rank; d++) fprintf(out, ", %ld", sh->dims[d]);
  fprintf(out, "], %s:\n", row_meaning(p, all_nodes));
  for (int64_t r = 0; r < n && r < SUMMARY_ROWS; r++) {
    double norm = 0;
    fprintf(out, "  %" PRId64 ":", r);
    for (long v = 0; v < sh->size; v++) {
      double x = rows[r * sh->size + v];
      norm += x * x;
      if (v < SUMMARY_VALUES) fprintf(out, " %.4g", x);
    }
    fprintf(out, "%s norm=%.4g\n", sh->size > SUMMARY_VALUES ? " ..." : "", sqrt(norm));
  }
  if (n > SUMMARY_ROWS)
    fprintf(out, "  ... (%" PRId64 " more row%s)\n", n - SUMMARY_ROWS,
            n - SUMMARY_ROWS == 1 ? "" : "s");
}

static int64_t out_rows(const CtxrtForest *f, bool all_nodes) {
  return all_nodes ? f->num_nodes : ctxrt_forest_outputs(f, NULL);
}

/* Runs the JIT-compiled kernel on the input into R->last. The build, or NULL
 * after printing why; [*forest] the input (the caller destroys it). */
static ReplBuild *run_jit(Repl *R, bool all_nodes, CtxrtForest **forest, double *ms) {
  ReplBuild *b = repl_build_jit(R);
  if (!b) return NULL;
  CtxrtForest *f = read_input(R, b->p);
  if (!f) return NULL;
  int64_t n = out_rows(f, all_nodes);
  long size = b->p->out_shape.size;
  free(R->last);
  R->last = ctx_xmalloc(sizeof(float) * (size_t)(n * size + 1));
  R->last_rows = 0;
  CtxrtError err;
  double t0 = repl_now_ms();
  CtxrtStatus st = ctxrt_model_run(b->model, f, all_nodes, R->last, &err);
  *ms = repl_now_ms() - t0;
  if (st) {
    report(R, &err);
    ctxrt_forest_destroy(f);
    return NULL;
  }
  R->last_rows = n;
  R->last_size = size;
  R->last_rank = b->p->out_shape.rank;
  memcpy(R->last_dims, b->p->out_shape.dims, sizeof R->last_dims);
  *forest = f;
  return b;
}

void repl_cmd_run(Repl *R, bool all_nodes) {
#ifdef CTX_HAVE_JIT
  bool compiles = !R->build || R->build_gen != R->gen_no || !R->build->jit;
  CtxrtForest *f = NULL;
  double ms;
  ReplBuild *b = run_jit(R, all_nodes, &f, &ms);
  if (!b) return;
  size_t count = (size_t)(R->last_rows * R->last_size);
  double *rows = ctx_xmalloc(sizeof(double) * (count + 1));
  for (size_t i = 0; i < count; i++) rows[i] = R->last[i];
  print_rows(R, b->p, f, all_nodes, rows, R->last_rows);
  if (compiles) fprintf(R->out, "time: jit_ms=%.1f run_ms=%.3f\n", b->compile_ms, ms);
  else fprintf(R->out, "time: run_ms=%.3f\n", ms);
  free(rows);
  ctxrt_forest_destroy(f);
#else
  repl_cmd_interp(R, all_nodes);
#endif
}

/* The interpreter's rows for the input, or NULL after printing why. */
static double *run_interp(Repl *R, const RaProgram *p, const CtxrtForest *f, bool all_nodes,
                          int64_t *n) {
  CtxrtParam *ps = ctx_model_params(p);
  CtxrtWeights *w = repl_weights(R, ps, p->nparams);
  free(ps);
  if (!w) return NULL;
  double **params = ctx_xmalloc(sizeof *params * (size_t)(p->nparams + 1));
  for (int k = 0; k < p->nparams; k++) {
    const CtxrtTensor *t = ctxrt_weights_find(w, p->params[k].name);
    params[k] = ctx_xmalloc(sizeof(double) * (size_t)(t->numel + 1));
    for (int64_t e = 0; e < t->numel; e++) params[k][e] = t->data[e];
  }
  double *rows = NULL;
  CtxrtError err;
  CtxrtStatus st = ra_interp_run(p, f, (const double *const *)params, all_nodes, &rows, n, &err);
  for (int k = 0; k < p->nparams; k++) free(params[k]);
  free(params);
  if (st) {
    report(R, &err);
    free(rows);
    return NULL;
  }
  return rows;
}

void repl_cmd_interp(Repl *R, bool all_nodes) {
  ReplBuild *b = repl_build(R, true);
  if (!b) return;
  CtxrtForest *f = read_input(R, b->p);
  if (!f) return;
  int64_t n = 0;
  double *rows = run_interp(R, b->p, f, all_nodes, &n);
  /* the build may have been replaced by nothing; b is still R->build */
  if (rows) print_rows(R, b->p, f, all_nodes, rows, n);
#ifdef CTX_HAVE_JIT
  CtxrtForest *jf = NULL;
  double ms;
  if (rows && run_jit(R, all_nodes, &jf, &ms)) {
    double diff = 0, excess = 0;
    for (size_t i = 0; i < (size_t)(n * R->last_size); i++) {
      double d = fabs(rows[i] - (double)R->last[i]);
      diff = fmax(diff, d);
      excess = fmax(excess, d - (1e-5 + 1e-4 * fabs(rows[i]))); /* docs/testing.md */
    }
    fprintf(R->out, "jit vs interp: max |difference| %.3g, %s the float32 tolerance (rtol "
            "1e-4, atol 1e-5)\n", diff, excess > 0 ? "over" : "within");
    ctxrt_forest_destroy(jf);
  }
#endif
  free(rows);
  ctxrt_forest_destroy(f);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void repl_cmd_time(Repl *R, long reps) {
#ifdef CTX_HAVE_JIT
  if (reps <= 0) reps = DEFAULT_TIME_RUNS;
  CtxrtForest *f = NULL;
  double ms;
  ReplBuild *b = run_jit(R, false, &f, &ms); /* compiles, warms up */
  if (!b) return;
  double *t = ctx_xmalloc(sizeof *t * (size_t)(reps + 1));
  long done = 0;
  CtxrtError err;
  for (; done < reps && !ctx_repl_interrupted; done++) {
    double t0 = repl_now_ms();
    if (ctxrt_model_run(b->model, f, 0, R->last, &err)) {
      report(R, &err);
      break;
    }
    t[done] = repl_now_ms() - t0;
  }
  if (ctx_repl_interrupted) fprintf(R->out, "interrupted after %ld of %ld runs\n", done, reps);
  if (done > 0) {
    qsort(t, (size_t)done, sizeof *t, cmp_double);
    double median = done % 2 ? t[done / 2] : (t[done / 2 - 1] + t[done / 2]) / 2;
    fprintf(R->out, "time: median_ms=%.4f p10_ms=%.4f p90_ms=%.4f runs=%ld\n", median,
            t[(done - 1) / 10], t[(done - 1) - (done - 1) / 10], done);
  }
  free(t);
  ctxrt_forest_destroy(f);
#else
  (void)reps;
  repl_error(R, "ctx was built without LLVM: :time measures the compiled kernel");
#endif
}

void repl_cmd_save(Repl *R, const char *path) {
  if (!R->last || !R->last_rows) {
    repl_error(R, "nothing to save: :run first");
    return;
  }
  int64_t shape[SEMA_MAX_RANK + 1];
  shape[0] = R->last_rows;
  for (int d = 0; d < R->last_rank; d++) shape[d + 1] = R->last_dims[d];
  CtxrtError err;
  if (ctxrt_npy_write_file(path, CTXRT_F32, R->last, R->last_rank + 1, shape, &err)) {
    report(R, &err);
    return;
  }
  fprintf(R->out, "saved float32 [%" PRId64, R->last_rows);
  for (int d = 0; d < R->last_rank; d++) fprintf(R->out, ", %ld", R->last_dims[d]);
  fprintf(R->out, "] to %s\n", path);
}
