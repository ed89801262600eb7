/* driver_tune_space.c — ctx tune's search space and search (driver_tune.c
 * says how candidates run and what the search does). */
#include "driver/driver_tune.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the space ---------------------------------------------------------------------------- */

/* A knob: one choice of the plan, as an index into its values. */
typedef struct {
  const char *name;
  int nvals;
  int (*get)(const SchedPlan *p);
  void (*set)(SchedPlan *p, int v);
} Knob;

static const int tile_nodes[] = {0, 1, 2, 3, 4, 5, 6, 8};
static const int tile_outs[] = {16, 32, 48, 64, 96, 128, 192, 256};
enum { NTN = sizeof tile_nodes / sizeof *tile_nodes, NTO = sizeof tile_outs / sizeof *tile_outs };

static int index_of(const int *xs, int n, int x) {
  for (int i = 0; i < n; i++)
    if (xs[i] == x) return i;
  return 0;
}

#define BOOL_KNOB(fn, field)                                                 \
  static int get_##fn(const SchedPlan *p) { return p->field; }              \
  static void set_##fn(SchedPlan *p, int v) { p->field = v != 0; }
BOOL_KNOB(spec, specialize_leaf)
BOOL_KNOB(local, hoist_local)
BOOL_KNOB(deps, all_deps)
BOOL_KNOB(fuse, fuse_epilogue)
BOOL_KNOB(share, share_weights)
BOOL_KNOB(dense, dense_scratch)
static int get_hoist(const SchedPlan *p) { return p->hoist_invariant && p->hoist_products; }
static void set_hoist(SchedPlan *p, int v) { p->hoist_invariant = p->hoist_products = v != 0; }
static int get_nb(const SchedPlan *p) { return index_of(tile_nodes, NTN, p->tile_nodes); }
static void set_nb(SchedPlan *p, int v) {
  p->tile_nodes = tile_nodes[v];
  if (!p->tile_outs) p->tile_outs = 64;
}
static int get_no(const SchedPlan *p) { return index_of(tile_outs, NTO, p->tile_outs); }
static void set_no(SchedPlan *p, int v) { p->tile_outs = tile_outs[v]; }
BOOL_KNOB(refactor, refactor_recursion)
/* unroll_recursion: off (1), 2 or 3 levels per phase */
static int get_unroll(const SchedPlan *p) { return p->unroll_recursion > 1 ? p->unroll_recursion - 1 : 0; }
static void set_unroll(SchedPlan *p, int v) { p->unroll_recursion = v ? v + 1 : 0; }
/* how the threads share the level products: codegen's choice per level, by
 * nodes always, or by outputs (`parallel i`) always */
static int get_share_by(const SchedPlan *p) {
  return !p->nparallel ? 0 : strcmp(p->parallel[0].axis, "node") == 0 ? 1 : 2;
}
static void set_share_by(SchedPlan *p, int v) {
  p->nparallel = v != 0;
  p->parallel[0].op = NULL;
  p->parallel[0].axis = v == 1 ? "node" : "i";
}

/* The tile's shape first: it matters most. */
static const Knob knobs[] = {
    {"tile nodes", NTN, get_nb, set_nb},       {"tile outputs", NTO, get_no, set_no},
    {"share_weights", 2, get_share, set_share}, {"fuse", 2, get_fuse, set_fuse},
    {"hoist_local", 2, get_local, set_local},  {"all_deps", 2, get_deps, set_deps},
    {"hoist", 2, get_hoist, set_hoist},        {"dense", 2, get_dense, set_dense},
    {"specialize leaf", 2, get_spec, set_spec},
    {"refactor_recursion", 2, get_refactor, set_refactor},
    {"unroll_recursion", 3, get_unroll, set_unroll},
    {"parallel", 3, get_share_by, set_share_by},
};
enum { NKNOBS = sizeof knobs / sizeof *knobs };

/* ---- the cost model -------------------------------------------------------------------- */

typedef struct {
  int vec_floats, vec_regs; /* this CPU's vectors (codegen's choice) */
  long widest;              /* outputs of the widest register-tiled product (0: none) */
} Machine;

/* Would codegen build the register tile [p] asks for? A tile needing more
 * accumulators than the vector registers hold is shrunk (cg_tile.c,
 * tile_vectors) to one that is tried anyway, and outputs beyond the widest
 * product change nothing: neither is worth a measurement. */
static bool worth_measuring(const Machine *m, const SchedPlan *p) {
  if (p->tile_nodes == 0) return p->tile_outs == 64; /* one "no tile" candidate */
  if (!m->widest) return p->tile_nodes == 4 && p->tile_outs == 64; /* nothing to tile */
  int iv = p->tile_outs / m->vec_floats;
  if (iv < 1 || p->tile_nodes * iv + iv + 2 > m->vec_regs) return false;
  long wide = (m->widest + m->vec_floats - 1) / m->vec_floats * m->vec_floats;
  return p->tile_outs <= wide || p->tile_outs == tile_outs[0];
}

static void visit_tiles(const IlirKernel *k, const IlirBlock *b, long *widest) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    IlirTileParts parts;
    if (s->kind == ILIR_LOOP && s->tile_nodes && ilir_tile_parts(k, s, &parts) &&
        parts.loop[0]->hi->kind == ILIR_CONST && parts.loop[0]->hi->ival > *widest)
      *widest = parts.loop[0]->hi->ival;
    visit_tiles(k, &s->body, widest);
    visit_tiles(k, &s->then, widest);
    visit_tiles(k, &s->els, widest);
  }
}

static Machine machine_of(const IlirKernel *k) {
  Machine m = {8, 16, 0};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) m.vec_floats = 16, m.vec_regs = 32;
  if (k) visit_tiles(k, &k->body, &m.widest);
  return m;
}

/* ---- candidates ------------------------------------------------------------------------- */

enum { MAX_SKIPPED = 512 };

typedef struct {
  SchedPlan plan;
  double ms;      /* median ms per batch; < 0: not measured (why) */
  char why[160];
} Cand;

typedef struct {
  TuneCtx *T;
  Machine m;
  SchedPlan def;  /* the default plan */
  Cand *tried;
  int ntried, cap, pruned, wrong, failed;
  SchedPlan skipped[MAX_SKIPPED]; /* pruned ones, not counted twice */
  int nskipped;
  int best;       /* index into tried (-1: none) */
  double end;     /* when the budget ends (ctx_tune_now) */
  double each_s;  /* seconds per candidate so far */
  bool tty;
} Search;

static bool same_plan(const SchedPlan *a, const SchedPlan *b) {
  for (int k = 0; k < NKNOBS; k++)
    if (knobs[k].get(a) != knobs[k].get(b)) return false;
  return true;
}

/* "tile 2x64, -share_weights": how [p] differs from the default. */
static void describe(const Search *S, const SchedPlan *p, char *out, size_t size) {
  const SchedPlan *d = &S->def;
  size_t n = 0;
  out[0] = 0;
  if (p->tile_nodes != d->tile_nodes || p->tile_outs != d->tile_outs)
    n += (size_t)snprintf(out + n, size - n, p->tile_nodes ? "tile %dx%d" : "no tile",
                          p->tile_nodes, p->tile_outs);
  for (int k = 2; k < NKNOBS && n < size; k++) {
    if (knobs[k].get(p) == knobs[k].get(d)) continue;
    const char *sep = n ? ", " : "";
    if (knobs[k].set == set_unroll)
      n += (size_t)snprintf(out + n, size - n, "%sunroll_recursion %d", sep,
                            p->unroll_recursion > 1 ? p->unroll_recursion : 1);
    else if (knobs[k].set == set_share_by)
      n += (size_t)snprintf(out + n, size - n, "%sparallel %s", sep,
                            p->nparallel ? p->parallel[0].axis : "(codegen's choice)");
    else
      n += (size_t)snprintf(out + n, size - n, "%s%c%s", sep, knobs[k].get(p) ? '+' : '-',
                            knobs[k].name);
  }
  if (!n) snprintf(out, size, "the default");
}

static void write_sched(const Search *S, const SchedPlan *p, const char *path) {
  CtxBuf b;
  ctx_buf_init(&b);
  sched_print(&b, S->T->program, p);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(ctx_buf_str(&b), f);
    fclose(f);
  }
  ctx_buf_free(&b);
}

static void progress(const Search *S) {
  double left = S->end - ctx_tune_now();
  const Cand *b = S->best >= 0 ? &S->tried[S->best] : NULL;
  fprintf(stderr, "%stune: %d tried, best %.4f ms (default %.4f ms), %.0f s left%s",
          S->tty ? "\r" : "", S->ntried, b ? b->ms : 0.0, S->T->default_ms,
          left > 0 ? left : 0, S->tty ? "   " : "\n");
  fflush(stderr);
}

/* Does the plan [p] schedule the model (sched_apply accepts it: a model
 * without a product to refactor, say, does not take refactor_recursion)? */
static bool legal(const Search *S, const SchedPlan *p) {
  CtxArena *a = ctx_arena_new();
  CtxDiag quiet;
  ctx_diag_init(&quiet, NULL, NULL);
  SchedPlan copy = *p;
  IlirKernel *k = ilir_lower(a, &quiet, S->T->program);
  bool ok = k && sched_apply(a, &quiet, k, &copy) && !quiet.errors;
  ctx_arena_free(a);
  return ok;
}

/* Measures [p] unless tried or pruned; returns its index in tried, or -1. */
static int try_plan(Search *S, const SchedPlan *p) {
  for (int i = 0; i < S->ntried; i++)
    if (same_plan(&S->tried[i].plan, p)) return -1;
  for (int i = 0; i < S->nskipped; i++)
    if (same_plan(&S->skipped[i], p)) return -1;
  if (!same_plan(p, &S->def) && (!worth_measuring(&S->m, p) || !legal(S, p))) {
    if (S->nskipped < MAX_SKIPPED) S->skipped[S->nskipped++] = *p;
    return S->pruned++, -1;
  }
  if (S->ntried == S->cap) {
    S->cap = S->cap ? 2 * S->cap : 64;
    S->tried = realloc(S->tried, (size_t)S->cap * sizeof *S->tried);
    if (!S->tried) ctx_oom();
  }
  Cand *c = &S->tried[S->ntried];
  memset(c, 0, sizeof *c);
  c->plan = *p;
  char path[300];
  snprintf(path, sizeof path, "%s/cand.sched", S->T->dir);
  write_sched(S, p, path);
  double t0 = ctx_tune_now();
  if (!ctx_tune_measure(S->T, path, &c->ms, c->why, sizeof c->why)) {
    if (strncmp(c->why, "output ", 7) == 0 || strstr(c->why, "interpreter")) S->wrong++;
    else S->failed++;
    c->ms = -1;
    char what[200];
    describe(S, p, what, sizeof what);
    fprintf(stderr, "%stune: %s: %s\n", S->tty ? "\r" : "", what, c->why);
  }
  double took = ctx_tune_now() - t0;
  S->each_s = S->ntried ? (S->each_s * S->ntried + took) / (S->ntried + 1) : took;
  int i = S->ntried++;
  /* the best moves only for more than the noise between runs (1%) */
  if (c->ms > 0 && (S->best < 0 || c->ms < S->tried[S->best].ms * 0.99)) S->best = i;
  progress(S);
  return i;
}

static bool time_left(const Search *S, int reserve) {
  return ctx_tune_now() + S->each_s * (1 + reserve) < S->end;
}

/* Coordinate descent from the best: each knob's other values in turn. */
static void descend(Search *S) {
  bool changed = true;
  while (changed && time_left(S, 6)) {
    changed = false;
    for (int k = 0; k < NKNOBS && time_left(S, 6); k++) {
      SchedPlan base = S->tried[S->best].plan;
      int before = S->best;
      for (int v = 0; v < knobs[k].nvals && time_left(S, 6); v++) {
        if (v == knobs[k].get(&base)) continue;
        SchedPlan p = base;
        knobs[k].set(&p, v);
        try_plan(S, &p);
      }
      changed |= S->best != before;
    }
  }
}

static uint64_t next_rand(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* Random moves of one or two knobs from the best, seeded. */
static void explore(Search *S, uint64_t seed) {
  uint64_t r = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int misses = 0; misses < 200 && time_left(S, 6);) {
    SchedPlan p = S->tried[S->best].plan;
    int moves = 1 + (int)(next_rand(&r) % 2);
    for (int m = 0; m < moves; m++) {
      const Knob *k = &knobs[next_rand(&r) % NKNOBS];
      k->set(&p, (int)(next_rand(&r) % (uint64_t)k->nvals));
    }
    if (try_plan(S, &p) < 0) misses++;
  }
}

/* ---- confirming and writing --------------------------------------------------------------- */

static int cmp_ms(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The winner and the default in alternation, [rounds] times each; their
 * medians into [*best_ms], [*def_ms]. False if a run failed. */
static bool confirm(Search *S, const SchedPlan *best, int rounds, double *best_ms,
                    double *def_ms) {
  char bpath[300], dpath[300], why[160];
  snprintf(bpath, sizeof bpath, "%s/best.sched", S->T->dir);
  snprintf(dpath, sizeof dpath, "%s/default.sched", S->T->dir);
  write_sched(S, best, bpath);
  write_sched(S, &S->def, dpath);
  double b[8], d[8];
  for (int i = 0; i < rounds; i++)
    if (!ctx_tune_measure(S->T, dpath, &d[i], why, sizeof why) ||
        !ctx_tune_measure(S->T, bpath, &b[i], why, sizeof why))
      return false;
  qsort(b, (size_t)rounds, sizeof *b, cmp_ms);
  qsort(d, (size_t)rounds, sizeof *d, cmp_ms);
  *best_ms = b[rounds / 2];
  *def_ms = d[rounds / 2];
  return true;
}

static int cmp_cand(const void *a, const void *b) {
  const Cand *x = a, *y = b;
  double u = x->ms > 0 ? x->ms : 1e300, v = y->ms > 0 ? y->ms : 1e300;
  return (u > v) - (u < v);
}

static void write_result(Search *S, const SchedPlan *win, double win_ms, double def_ms,
                         bool kept, FILE *f) {
  const CtxOptions *o = S->T->opts;
  char what[200];
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  fprintf(f, "# %s — a cpu schedule for %s found by ctx tune (%s)\n",
          o->tune.out, S->T->model, date);
  fprintf(f, "# command: ctx tune %s", S->T->model);
  for (int k = 0; k < o->ndefines; k++)
    fprintf(f, " -D %s=%ld", o->defines[k].name, o->defines[k].value);
  for (int k = 0; k < o->tune.nfwd; k++) fprintf(f, " %s", o->tune.fwd[k]);
  fprintf(f, " --budget %g --search-seed %llu\n", o->tune.budget_s,
          (unsigned long long)o->tune.seed);
  fprintf(f, "# %d candidates measured (%d failed, %d gave outputs other than the "
             "interpreter's), %d left out before measuring (tiles codegen would shrink "
             "or wider than every product, plans the model does not take)\n",
          S->ntried, S->failed, S->wrong, S->pruned);
  fprintf(f, "# median ms per batch (ctx run --time --repeat %ld), confirmed in alternating "
             "runs: default %.4f, this schedule %.4f (%.2fx)\n",
          S->T->repeat, def_ms, win_ms, def_ms / win_ms);
  if (!kept)
    fputs("# no candidate beat the default in the confirming runs: this is the default\n", f);
  Cand *sorted = malloc((size_t)S->ntried * sizeof *sorted);
  if (sorted) {
    memcpy(sorted, S->tried, (size_t)S->ntried * sizeof *sorted);
    qsort(sorted, (size_t)S->ntried, sizeof *sorted, cmp_cand);
    fputs("# the fastest candidates (ms per batch, as measured during the search):\n", f);
    for (int i = 0; i < S->ntried && i < 12 && sorted[i].ms > 0; i++) {
      describe(S, &sorted[i].plan, what, sizeof what);
      fprintf(f, "#   %9.4f  %s\n", sorted[i].ms, what);
    }
    free(sorted);
  }
  for (int i = 0, shown = 0; i < S->ntried && shown < 6; i++)
    if (S->tried[i].ms < 0) {
      describe(S, &S->tried[i].plan, what, sizeof what);
      fprintf(f, "# %s: %s: %s\n", shown++ ? "        " : "failed", what, S->tried[i].why);
    }
  CtxBuf b;
  ctx_buf_init(&b);
  sched_print(&b, S->T->program, win);
  const char *text = strchr(ctx_buf_str(&b), '\n'); /* after dump's own first line */
  fputs(text ? text + 1 : ctx_buf_str(&b), f);
  ctx_buf_free(&b);
}

/* ---- ctx tune -------------------------------------------------------------------------------- */

static void remove_tree(const char *dir) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "ctx: warning: could not remove %s\n", dir);
}

/* Reference outputs, then the default's timing, which sets the repeat count. */
static int start(Search *S, CtxSession *s) {
  TuneCtx *T = S->T;
  char why[400];
  if (!ctx_tune_reference(T, why, sizeof why)) {
    fprintf(stderr, "ctx: error: the sample does not run on the interpreter: %s\n", why);
    return 3;
  }
  T->repeat = 3;
  int i = try_plan(S, &S->def);
  if (i < 0 || S->tried[i].ms <= 0) {
    fprintf(stderr, "ctx: error: the default schedule does not run on the sample: %s\n",
            i >= 0 ? S->tried[i].why : "pruned");
    return 70;
  }
  /* about 0.15 s of timed runs per candidate */
  double ms = S->tried[i].ms;
  T->repeat = ms > 0 ? (long)(150.0 / ms) : 50;
  if (T->repeat < 3) T->repeat = 3;
  if (T->repeat > 200) T->repeat = 200;
  (void)s;
  char path[300];
  snprintf(path, sizeof path, "%s/cand.sched", T->dir);
  write_sched(S, &S->def, path);
  if (!ctx_tune_measure(T, path, &S->tried[i].ms, why, sizeof why)) return 70;
  T->default_ms = S->tried[i].ms;
  return 0;
}

static int search(Search *S, CtxSession *s) {
  int rc = start(S, s);
  if (rc) return rc;
  descend(S);
  explore(S, S->T->opts->tune.seed);
  if (S->tty) fputc('\n', stderr);
  SchedPlan win = S->tried[S->best].plan;
  double win_ms = S->tried[S->best].ms, def_ms = S->T->default_ms;
  bool kept = !same_plan(&win, &S->def);
  if (kept && (!confirm(S, &win, 3, &win_ms, &def_ms) || win_ms >= def_ms)) {
    kept = false;
    win = S->def;
    win_ms = def_ms;
  }
  FILE *f = fopen(S->T->opts->tune.out, "w");
  if (!f) {
    fprintf(stderr, "ctx: error: cannot write %s\n", S->T->opts->tune.out);
    return 2;
  }
  write_result(S, &win, win_ms, def_ms, kept, f);
  fclose(f);
  fprintf(s->out, "tuned: %s default_ms=%.4f tuned_ms=%.4f speedup=%.2f candidates=%d -> %s\n",
          S->T->name, def_ms, win_ms, def_ms / win_ms, S->ntried, S->T->opts->tune.out);
  return 0;
}

int ctx_tune(CtxSession *s) {
  CtxOptions *o = &s->opts;
  if (o->nfiles != 1) return ctx_usage_error("tune", CTX_TUNE_USAGE, "one model file%s", "");
  if (!o->run.input && !o->run.gen)
    return ctx_usage_error("tune", CTX_TUNE_USAGE, "the sample: --input FILE (or --gen SPEC)%s",
                           "");
  if (!o->tune.out)
    return ctx_usage_error("tune", CTX_TUNE_USAGE, "where to write the schedule: -o FILE%s", "");
  if (o->schedule || o->target == CTX_TARGET_CUDA)
    return ctx_usage_error("tune", CTX_TUNE_USAGE, "ctx tune searches cpu schedules itself "
                           "(no -s, no --target cuda)%s", "");
  if (o->tune.budget_s <= 0) o->tune.budget_s = 60;
  RaProgram *p = ctx_pipeline_ra(s, o->files[0]);
  IlirKernel *k = p ? ctx_pipeline_kernel(s, p) : NULL;
  if (!k) return ctx_session_exit_code(s);
  static char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "ctx: error: cannot find the ctx binary (/proc/self/exe)\n");
    return 70;
  }
  self[n] = 0;
  TuneCtx T = {.opts = o, .self = self, .model = o->files[0], .name = p->name, .program = p};
  snprintf(T.dir, sizeof T.dir, "%s/ctx-tune-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(T.dir)) {
    fprintf(stderr, "ctx: error: cannot make a scratch directory in /tmp\n");
    return 70;
  }
  Search S = {.T = &T, .m = machine_of(k), .def = sched_default_plan(p->disabled), .best = -1,
              .tty = isatty(2)};
  S.end = ctx_tune_now() + o->tune.budget_s;
  int rc = search(&S, s);
  free(S.tried);
  for (int i = 0; i < T.noutputs; i++) free(T.outputs[i]);
  remove_tree(T.dir);
  return rc;
}
