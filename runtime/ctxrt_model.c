/* ctxrt_model.c — running a compiled kernel over linearized forests (ctxrt.h,
 * "Compiled models"): the one implementation behind ctx run's JIT path and the
 * libraries ctx build writes.
 *
 * A model owns the per-batch buffers (RESULT / SCRATCH rows, the DEP copy, the
 * linearizer, the output rows) and grows them only when a batch needs more.
 * The forest must have been validated against desc->spec: the kernel checks
 * nothing (word ids index parameters directly).
 *
 * The kernel runs on the model's thread team (ctxrt_team.c), created at the
 * first run that needs more than one thread and kept until the count changes.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "ctxrt_int.h"

#include <sched.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_THREADS = 1024 };

struct CtxrtModel {
  const CtxrtModelDesc *d;
  CtxrtWeights *owned;  /* ctxrt_model_load's weights, or NULL */
  void **bufs;          /* [num_bufs]: what the kernel gets */
  float **rows;         /* [num_bufs]: RESULT and SCRATCH rows, PACKED copies */
  size_t *rows_cap;     /* [num_bufs]: their capacities in floats */
  int32_t *dep;         /* the DEP buffer: lin->dep with -1 -> num_nodes */
  size_t dep_cap;
  CtxrtLinear *lin;
  float *out;           /* the model's own output rows */
  size_t out_cap;
  int64_t out_rows;
  int32_t none[1];      /* the data of buffers with zero-sized rows: never read */
  int32_t threads;      /* ctxrt_model_set_threads: 0 = the default */
  CtxrtTeam *team;      /* NULL until a run needs more than one thread */
  int32_t team_want;    /* the count [team] was created for */
  CtxrtCuda *gpu;       /* a CUDA kernel's GPU side (desc->ptx), else NULL */
  CtxrtModelTimes times; /* ctxrt_model_times */
  int all_nodes;        /* ctxrt_model_set_all_nodes: the text and array runs' rows */
  CtxrtVocab *vocab;    /* ctxrt_model_set_vocab: the words of the text runs, or NULL */
  int32_t *phases;      /* the PHASES buffer (unroll_recursion), else NULL */
  size_t phases_cap;
  int32_t steps;        /* this batch's dependency steps (ctxrt__steps) */
};

/* [b]'s block of [t] transposed into panels (CTXRT_BUF_PACKED) in a new
 * array; NULL when out of memory. grep: PACKED-PANELS (ilir/ilir.h). */
static float *pack(const CtxrtModelBuf *b, const CtxrtTensor *t) {
  float *p = ctxrt__hot_alloc((size_t)(b->rows * b->cols + 1) * sizeof *p);
  if (!p) return NULL;
  int64_t panel = b->panel > 0 && b->panel < b->cols ? b->panel : b->cols;
  for (int64_t c = 0; c < b->cols; c++) {
    int64_t p0 = c / panel * panel, w = b->cols - p0 < panel ? b->cols - p0 : panel;
    float *col = p + p0 * b->rows + (c - p0);
    for (int64_t r = 0; r < b->rows; r++) col[r * w] = t->data[b->off + c * b->stride + r];
  }
  return p;
}

/* Does [b]'s block lie inside a parameter of [numel] floats? */
static bool pack_fits(const CtxrtModelBuf *b, int64_t numel) {
  if (b->rows <= 0 || b->cols <= 0 || b->off < 0 || b->stride < 0 || b->panel < 0 ||
      b->size != b->rows * b->cols)
    return false;
  return b->off + (b->cols - 1) * b->stride + b->rows <= numel;
}

/* Points the PARAM buffers of [m] at the tensors of [w] and fills the PACKED
 * ones from them. */
static CtxrtStatus bind_params(CtxrtModel *m, const CtxrtWeights *w, CtxrtError *err) {
  const CtxrtModelDesc *d = m->d;
  for (int32_t b = 0; b < d->num_bufs; b++) {
    const CtxrtModelBuf *mb = &d->bufs[b];
    if (mb->kind != CTXRT_BUF_PARAM && mb->kind != CTXRT_BUF_PACKED) continue;
    int32_t pi = mb->param;
    if (pi < 0 || pi >= d->num_params)
      return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "model '%s': bad parameter index %d",
                        d->name, (int)pi);
    const CtxrtTensor *t = ctxrt_weights_find(w, d->params[pi].name);
    bool sized = mb->kind == CTXRT_BUF_PARAM ? t && t->numel == mb->size
                                            : t && pack_fits(mb, t->numel);
    if (!sized)
      return ctxrt__err(err, CTXRT_ERR_INVALID, NULL, 0,
                        "model '%s': %s parameter '%s' in the weights", d->name,
                        t ? "mis-sized" : "no", d->params[pi].name);
    if (mb->kind == CTXRT_BUF_PARAM) {
      m->bufs[b] = t->data;
    } else {
      if (!(m->rows[b] = pack(mb, t))) return ctxrt__nomem(err, NULL);
      m->bufs[b] = m->rows[b];
    }
  }
  return CTXRT_OK;
}

CtxrtStatus ctxrt_model_create(const CtxrtModelDesc *desc, const CtxrtWeights *weights,
                               CtxrtModel **out, CtxrtError *err) {
  *out = NULL;
  CtxrtModel *m = calloc(1, sizeof *m);
  size_t n = (size_t)(desc->num_bufs > 0 ? desc->num_bufs : 0) + 1;
  if (m) {
    m->d = desc;
    m->bufs = calloc(n, sizeof *m->bufs);
    m->rows = calloc(n, sizeof *m->rows);
    m->rows_cap = calloc(n, sizeof *m->rows_cap);
  }
  if (!m || !m->bufs || !m->rows || !m->rows_cap) {
    ctxrt_model_destroy(m);
    return ctxrt__nomem(err, NULL);
  }
  CtxrtStatus st = bind_params(m, weights, err);
  if (!st && desc->ptx) st = ctxrt__cuda_create(desc, m->bufs, &m->gpu, err);
  if (st) {
    ctxrt_model_destroy(m);
    return st;
  }
  *out = m;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_model_load(const CtxrtModelDesc *desc, const char *weights_path,
                             uint64_t seed, CtxrtModel **out, CtxrtError *err) {
  *out = NULL;
  CtxrtWeights *w = NULL;
  CtxrtStatus st;
  if (weights_path) {
    st = ctxrt_st_read_file(weights_path, &w, err);
    if (!st) st = ctxrt_weights_check(w, weights_path, desc->params, desc->num_params, err);
  } else {
    st = ctxrt_weights_create(desc->params, desc->num_params, &w, err);
    if (!st) ctxrt_weights_init(w, seed);
  }
  if (!st) st = ctxrt_model_create(desc, w, out, err);
  if (st) {
    ctxrt_weights_destroy(w);
    return st;
  }
  (*out)->owned = w;
  ctxrt_error_clear(err);
  if (err && weights_path) ctxrt_weights_note(w, weights_path, err->msg, sizeof err->msg);
  return CTXRT_OK;
}

void ctxrt_model_destroy(CtxrtModel *m) {
  if (!m) return;
  ctxrt__team_destroy(m->team);
  ctxrt__cuda_destroy(m->gpu);
  if (m->rows)
    for (int32_t b = 0; b < m->d->num_bufs; b++) free(m->rows[b]);
  free(m->rows);
  free(m->rows_cap);
  free(m->bufs);
  free(m->dep);
  free(m->phases);
  free(m->out);
  ctxrt_linear_destroy(m->lin);
  ctxrt_weights_destroy(m->owned);
  ctxrt_vocab_destroy(m->vocab);
  free(m);
}

CtxrtStatus ctxrt_model_set_threads(CtxrtModel *m, int32_t threads, CtxrtError *err) {
  if (!m) return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "no model");
  if (threads < 0)
    return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "a thread count must be 0 or more, not %d",
                      (int)threads);
  m->threads = threads;
  return CTXRT_OK;
}

/* The CPUs this process may run on (its affinity: taskset, a cpuset), else
 * the cores online. A process pinned to one CPU that ran a thread per core
 * ran them all on that CPU: treefc H=256 B=10 under `taskset -c 1` took 0.80
 * ms per batch on two threads, 0.44 on one. */
static long usable_cpus(void) {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return sysconf(_SC_NPROCESSORS_ONLN);
}

int32_t ctxrt_model_threads(const CtxrtModel *m) {
  long n = m->threads;
  const char *env = getenv("CTXRT_THREADS");
  if (n <= 0 && env) n = strtol(env, NULL, 10);
  if (n <= 0) n = usable_cpus();
  return (int32_t)(n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n);
}

/* The team for this run: the current one, or a new one when the count changed
 * (NULL for one thread, and when a team cannot be created: the caller alone). */
static CtxrtTeam *team_for_run(CtxrtModel *m) {
  int32_t n = ctxrt_model_threads(m);
  if (n == m->team_want) return m->team;
  ctxrt__team_destroy(m->team);
  m->team = n > 1 ? ctxrt__team_create(n) : NULL;
  m->team_want = m->team || n == 1 ? n : 0;
  return m->team;
}

/* A RESULT or SCRATCH buffer of num_nodes + 1 rows; the last row zero. NULL
 * when out of memory. */
static float *node_rows(CtxrtModel *m, int32_t b, int64_t num_nodes) {
  size_t size = (size_t)m->d->bufs[b].size;
  size_t need = ((size_t)num_nodes + 1) * size + 1;
  if (need > m->rows_cap[b]) {
    free(m->rows[b]);
    m->rows_cap[b] = 0;
    m->rows[b] = ctxrt__fits(need * sizeof(float)) ? calloc(need, sizeof(float)) : NULL;
    if (!m->rows[b]) return NULL;
    m->rows_cap[b] = need;
  }
  memset(m->rows[b] + (size_t)num_nodes * size, 0, size * sizeof(float));
  return m->rows[b];
}

/* lin->dep with the absent slots (-1) pointing at the zero row num_nodes. */
static int32_t *dep_rows(CtxrtModel *m, const CtxrtLinear *lin) {
  size_t n = (size_t)lin->num_nodes * (size_t)lin->max_deps + 1;
  if (n > m->dep_cap) {
    free(m->dep);
    m->dep_cap = 0;
    m->dep = malloc(n * sizeof *m->dep);
    if (!m->dep) return NULL;
    m->dep_cap = n;
  }
  for (size_t i = 0; i + 1 < n; i++) m->dep[i] = lin->dep[i] < 0 ? lin->num_nodes : lin->dep[i];
  return m->dep;
}

/* The PHASES buffer of K = [max_levels] for [lin] on the team of this run;
 * NULL when out of memory. */
static int32_t *phase_flags(CtxrtModel *m, const CtxrtLinear *lin, int64_t max_levels) {
  size_t n = (size_t)lin->num_levels + 1;
  if (n > m->phases_cap) {
    free(m->phases);
    m->phases_cap = 0;
    m->phases = malloc(n * sizeof *m->phases);
    if (!m->phases) return NULL;
    m->phases_cap = n;
  }
  int32_t k = max_levels < 1 ? 1 : max_levels > INT32_MAX ? INT32_MAX : (int32_t)max_levels;
  ctxrt__phases(lin, m->gpu ? 1 : ctxrt_model_threads(m), k, m->phases);
  m->steps = ctxrt__steps(lin, m->phases);
  return m->phases;
}

static int64_t widest_level(const CtxrtLinear *lin) {
  int32_t w = 0;
  for (int32_t l = 0; l < lin->num_levels; l++)
    if (lin->level_len[l] > w) w = lin->level_len[l];
  return w;
}

/* Points every non-parameter buffer at this batch's data; false when out of
 * memory. */
static bool bind_buffers(CtxrtModel *m, const CtxrtLinear *lin) {
  int64_t widest = widest_level(lin);
  m->steps = ctxrt__steps(lin, NULL);
  int32_t group = 0; /* the ARITY_END buffers' groups, in table order */
  for (int32_t b = 0; b < m->d->num_bufs; b++) {
    void *data = NULL;
    switch ((CtxrtBufKind)m->d->bufs[b].kind) {
    case CTXRT_BUF_PARAM: case CTXRT_BUF_PACKED: continue;
    case CTXRT_BUF_VALUES: data = lin->val; break;
    case CTXRT_BUF_IVALUES: data = lin->ival; break;
    case CTXRT_BUF_DEP:
      if (!(data = dep_rows(m, lin))) return false;
      break;
    case CTXRT_BUF_NUM_DEPS: data = lin->num_deps; break;
    case CTXRT_BUF_LEVELS: data = lin->level_start; break;
    case CTXRT_BUF_ARITY_END: data = lin->group_end + (size_t)group++ * (size_t)lin->num_levels; break;
    case CTXRT_BUF_RESULT:
    case CTXRT_BUF_SCRATCH:
      if (!(data = node_rows(m, b, lin->num_nodes))) return false;
      break;
    case CTXRT_BUF_LEVEL_SCRATCH:
      if (!(data = node_rows(m, b, widest))) return false;
      break;
    case CTXRT_BUF_INVARIANT:
      if (!(data = node_rows(m, b, 0))) return false;
      break;
    case CTXRT_BUF_PHASES:
      if (!(data = phase_flags(m, lin, m->d->bufs[b].size))) return false;
      break;
    }
    m->bufs[b] = data ? data : m->none;
  }
  return true;
}

/* The model's own output buffer, large enough for [rows] rows. */
static float *own_rows(CtxrtModel *m, int64_t rows) {
  size_t need = (size_t)rows * (size_t)m->d->out_size + 1;
  if (need > m->out_cap) {
    free(m->out);
    m->out_cap = 0;
    m->out = malloc(need * sizeof(float));
    if (!m->out) return NULL;
    m->out_cap = need;
  }
  return m->out;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ctxrt_model_times(const CtxrtModel *m, CtxrtModelTimes *times) { *times = m->times; }

void ctxrt_model_reset_times(CtxrtModel *m) { memset(&m->times, 0, sizeof m->times); }

/* The model's linearization, empty, grouping each level's nodes by the
 * arities of its ARITY_END buffers (a schedule's `specialize n.num_children
 * == K`). */
static CtxrtStatus new_linear(CtxrtModel *m, CtxrtError *err) {
  int32_t arity[CTXRT_MAX_GROUPS], n = 0;
  for (int32_t b = 0; b < m->d->num_bufs; b++)
    if (m->d->bufs[b].kind == CTXRT_BUF_ARITY_END) {
      if (n == CTXRT_MAX_GROUPS)
        return ctxrt__err(err, CTXRT_ERR_INVALID, NULL, 0, "model '%s': more than %d arity "
                          "groups", m->d->name, CTXRT_MAX_GROUPS);
      arity[n++] = (int32_t)m->d->bufs[b].size;
    }
  CtxrtStatus st = ctxrt_linear_create(NULL, 0, 0, &m->lin, err);
  if (!st && (st = ctxrt_linear_set_groups(m->lin, arity, n, err))) {
    ctxrt_linear_destroy(m->lin);
    m->lin = NULL;
  }
  if (!st) /* skip_val: per run (ctxrt_model_run) */
    m->lin->skip_ival = (m->d->unread_values & CTXRT_UNREAD_IVAL) != 0;
  return st;
}

/* The float value rows a run's linearization leaves to its team
 * (ctxrt_model_run): each thread converts its share of the rows, then the
 * team meets; thread 0 notes when. */
typedef struct {
  CtxrtLinear *lin;
  const CtxrtForest *forest;
  double done_s;
} ValRows;

static void val_rows_share(void *arg, int64_t tid, int64_t nthreads, void (*barrier)(void *),
                           void *ctx) {
  ValRows *job = arg;
  int64_t n = job->lin->num_nodes;
  ctxrt__linear_val_rows(job->lin, job->forest, (int32_t)(n * tid / nthreads),
                         (int32_t)(n * (tid + 1) / nthreads));
  barrier(ctx);
  if (tid == 0) job->done_s = now_s();
}

/* Float values per batch worth converting on the team rather than on the
 * caller alone: dagrnn's 512 features a node, 1000 nodes a batch of 10
 * grids, were 0.6 ms of a 3.4 ms run on two threads, all of it on one. */
enum { TEAM_VAL_ROWS_MIN = 64 * 1024 };

CtxrtStatus ctxrt_model_run(CtxrtModel *m, const CtxrtForest *forest, int all_nodes,
                            float *out, CtxrtError *err) {
  const CtxrtModelDesc *d = m->d;
  int32_t v = d->spec.num_values, deps = d->max_deps;
  m->out_rows = 0;
  double t0 = now_s();
  CtxrtStatus st = m->lin ? CTXRT_OK : new_linear(m, err);
  if (st) return st;
  /* the float rows of a large batch go to the team (val_rows_share) */
  bool want_val = (d->unread_values & CTXRT_UNREAD_VAL) == 0;
  CtxrtTeam *team = m->gpu ? NULL : team_for_run(m);
  bool share_val = want_val && ctxrt__team_size(team) > 1 &&
                   (int64_t)forest->num_nodes * v >= TEAM_VAL_ROWS_MIN;
  m->lin->skip_val = !want_val || share_val;
  m->lin->balance = !m->gpu && ctxrt__team_size(team) <= d->balance_threads;
  if ((st = ctxrt_linear_fill(m->lin, forest, v, deps, err))) return st;
  CtxrtLinear *lin = m->lin;
  ValRows job = {lin, forest, 0.0};
  CtxrtPrelude prelude = {val_rows_share, &job};
  int64_t rows = all_nodes ? lin->num_nodes : lin->num_outputs;
  double t1 = now_s();
  float *dst = out ? out : own_rows(m, rows);
  if (!dst || !bind_buffers(m, lin)) return ctxrt__nomem(err, NULL);
  double t2 = now_s();
  const float *res = m->rows[d->out_buf];
  if (m->gpu) {
    st = ctxrt__cuda_run(m->gpu, m->bufs, lin, widest_level(lin), &res, err);
    if (st) return st;
  } else {
    ctxrt__team_run(team, share_val ? &prelude : NULL, d->kernel, m->bufs, lin->num_nodes,
                    lin->num_levels);
  }
  double t3 = now_s();
  if (share_val) { /* the team's conversion counts as linearization */
    t1 += job.done_s - t2;
    t2 = job.done_s;
  }
  size_t stride = (size_t)d->bufs[d->out_buf].size, size = (size_t)d->out_size;
  for (int64_t r = 0; r < rows; r++) {
    size_t node = (size_t)(all_nodes ? lin->to_new[r] : lin->outputs[r]);
    memcpy(dst + (size_t)r * size, res + node * stride + (size_t)d->out_off,
           size * sizeof(float));
  }
  if (!out) m->out_rows = rows;
  m->times.runs++;
  m->times.linearize_s += t1 - t0;
  m->times.bind_s += t2 - t1;
  m->times.kernel_s += t3 - t2;
  m->times.copy_s += now_s() - t3;
  m->times.levels += lin->num_levels;
  m->times.steps += m->steps;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_model_run_text(CtxrtModel *m, const char *name, const char *data,
                                 size_t len, int nodes, CtxrtError *err) {
  CtxrtForest *f = NULL;
  m->out_rows = 0;
  CtxrtStatus st = nodes ? ctxrt_read_nodes_buffer(name, data, len, &f, err)
                         : ctxrt_read_ptb_buffer(name, data, len, m->vocab, &f, err);
  if (!st) st = ctxrt_forest_validate(f, &m->d->spec, err);
  if (!st) st = ctxrt_model_run(m, f, m->all_nodes, NULL, err);
  ctxrt_forest_destroy(f);
  return st;
}

CtxrtStatus ctxrt_model_run_conllu(CtxrtModel *m, const char *name, const char *data,
                                   size_t len, int column, CtxrtError *err) {
  CtxrtForest *f = NULL;
  m->out_rows = 0;
  CtxrtStatus st = ctxrt_read_conllu_buffer(name, data, len, m->vocab, column, &f, err);
  if (!st) st = ctxrt_forest_validate(f, &m->d->spec, err);
  if (!st) st = ctxrt_model_run(m, f, m->all_nodes, NULL, err);
  ctxrt_forest_destroy(f);
  return st;
}

void ctxrt_model_set_all_nodes(CtxrtModel *m, int all_nodes) { m->all_nodes = all_nodes != 0; }

CtxrtStatus ctxrt_model_set_vocab(CtxrtModel *m, const char *name, const char *data, size_t len,
                                  const char *unk, CtxrtError *err) {
  CtxrtVocab *v = NULL;
  if (data) {
    CtxrtStatus st = ctxrt_vocab_read_buffer(name, data, len, &v, err);
    if (!st && unk) st = ctxrt_vocab_set_fallback(v, unk, strlen(unk), err);
    if (st) {
      ctxrt_vocab_destroy(v);
      return st;
    }
  }
  ctxrt_vocab_destroy(m->vocab);
  m->vocab = v;
  return CTXRT_OK;
}

CtxrtStatus ctxrt_model_run_arrays(CtxrtModel *m, int32_t num_structs,
                                   const int32_t *num_nodes, const int32_t *num_deps,
                                   const int32_t *deps, const int32_t *heads,
                                   const double *values, CtxrtError *err) {
  const CtxrtSpec *spec = &m->d->spec;
  CtxrtForest *f = NULL;
  m->out_rows = 0;
  CtxrtStatus st;
  if (heads && spec->kind != CTXRT_TREE)
    st = ctxrt__err(err, CTXRT_ERR_ARG, "arrays", 0, "parent arrays describe trees, but "
                    "the model reads '%s' structures", ctxrt_kind_name(spec->kind));
  else if (heads)
    st = ctxrt_forest_from_heads("arrays", num_structs, num_nodes, heads, spec->num_values,
                                 values, spec->values_on, &f, err);
  else
    st = ctxrt_forest_from_arrays("arrays", spec->kind, num_structs, num_nodes, num_deps,
                                  deps, spec->num_values, values, spec->values_on, &f, err);
  if (!st) st = ctxrt_forest_validate(f, spec, err);
  if (!st) st = ctxrt_model_run(m, f, m->all_nodes, NULL, err);
  ctxrt_forest_destroy(f);
  return st;
}

const float *ctxrt_model_outputs(const CtxrtModel *m, int64_t *rows) {
  *rows = m->out_rows;
  return m->out_rows ? m->out : NULL;
}
