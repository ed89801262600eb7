/* driver_tune_space.c — ctx tune's search space and search (driver_tune.c
 * says how candidates run and what the search does). */
#include "driver/driver_tune.h"

#include "codegen/codegen.h"

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

static const int tile_nodes[] = {0, 1, 2, 3, 4, 5, 6, 8, 10, 12};
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
BOOL_KNOB(direct, direct_results)
BOOL_KNOB(views, leaf_views)
BOOL_KNOB(balance, balance_levels)
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
    {"direct_results", 2, get_direct, set_direct}, {"leaf_views", 2, get_views, set_views},
    {"specialize leaf", 2, get_spec, set_spec}, {"balance_levels", 2, get_balance, set_balance},
    {"refactor_recursion", 2, get_refactor, set_refactor},
    {"unroll_recursion", 3, get_unroll, set_unroll},
    {"parallel", 3, get_share_by, set_share_by},
};
enum { NKNOBS = sizeof knobs / sizeof *knobs };

/* Per-operator tile shapes: each register-tiled product of the default kernel,
 * named by the operator it computes, may take a shape of its own (`OP:
 * tile(node, i) by (NB, NO)`): two more knobs each, its nodes and its outputs,
 * where value 0 of the nodes knob is the plan's shape. They apply only where
 * the plan tiles at all. */
enum { MAX_TILE_OPS = 6 };

typedef struct {
  int buf;          /* its buffer in the lowered kernel */
  const char *name; /* the operator */
  long width;       /* its outputs */
} TileOp;

/* A candidate: a plan and its operators' own tile shapes (0 x 0: the plan's). */
typedef struct {
  SchedPlan plan;
  int nb[MAX_TILE_OPS], no[MAX_TILE_OPS];
} Point;

/* ---- candidates ------------------------------------------------------------------------- */

enum { MAX_SKIPPED = 512 };

typedef struct {
  Point pt;
  double ms;      /* median ms per batch; < 0: not measured (why) */
  uint64_t kernel; /* cg_kernel_fingerprint of its kernel */
  char why[160];
} Cand;

typedef struct {
  TuneCtx *T;
  Point def;      /* the default plan */
  TileOp ops[MAX_TILE_OPS];
  int nops;
  int *own_nb, *own_no; /* per buffer of the lowered kernel (legal()) */
  int nbufs;
  Cand *tried;
  int ntried, cap, pruned, wrong, failed;
  int same;       /* plans left out as another's kernel */
  Point skipped[MAX_SKIPPED]; /* pruned ones, not counted twice */
  int nskipped;
  int best;       /* index into tried (-1: none) */
  double end;     /* when the budget ends (ctx_tune_now) */
  double each_s;  /* seconds per candidate so far */
  bool tty;
} Search;

static bool is_op_name(const RaProgram *p, const char *name) {
  for (int f = 0; f < p->nfuncs; f++)
    for (int o = 0; o < p->funcs[f].nops; o++)
      if (strcmp(p->funcs[f].ops[o]->name, name) == 0) return true;
  return false;
}

/* The register-tiled products of [k] whose output is an operator of [p] that a
 * schedule can name, each once, into S->ops. */
static void find_tile_ops(Search *S, const IlirKernel *k, const IlirBlock *b) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    IlirTileParts parts;
    if (s->kind == ILIR_LOOP && s->tile_nodes && ilir_tile_parts(k, s, &parts))
      for (int q = 0; q < parts.n && S->nops < MAX_TILE_OPS; q++) {
        const IlirStmt *st = parts.loop[q]->body.stmts[0];
        const char *name = k->bufs[st->buf].name;
        bool seen = false;
        for (int o = 0; o < S->nops; o++) seen |= strcmp(S->ops[o].name, name) == 0;
        if (!seen && is_op_name(S->T->program, name) && parts.loop[q]->hi->kind == ILIR_CONST)
          S->ops[S->nops++] = (TileOp){st->buf, name, parts.loop[q]->hi->ival};
      }
    find_tile_ops(S, k, &s->body);
    find_tile_ops(S, k, &s->then);
    find_tile_ops(S, k, &s->els);
  }
}

/* The knobs in search order: the plan's tile shape, the operators' own
 * shapes, then the rest of knobs[]. Knob [k] is knobs[*g], or when *g < 0
 * the nodes (*field 0) or outputs (1) of operator *op's shape. */
static int nknobs(const Search *S) { return NKNOBS + 2 * S->nops; }

static void knob_of(const Search *S, int k, int *g, int *op, int *field) {
  *g = k < 2 ? k : k < 2 + 2 * S->nops ? -1 : k - 2 * S->nops;
  *op = (k - 2) / 2, *field = (k - 2) % 2;
}

static int knob_nvals(const Search *S, int k) {
  int g, o, f;
  knob_of(S, k, &g, &o, &f);
  return g >= 0 ? knobs[g].nvals : f == 0 ? NTN : NTO;
}

static int knob_get(const Search *S, const Point *p, int k) {
  int g, o, f;
  knob_of(S, k, &g, &o, &f);
  if (g >= 0) return knobs[g].get(&p->plan);
  if (f == 0) return index_of(tile_nodes, NTN, p->nb[o]);
  return index_of(tile_outs, NTO, p->nb[o] ? p->no[o] : p->plan.tile_outs);
}

/* Operators' own shapes only where the plan tiles, and a shape equal to the
 * plan's is the plan's. */
static void normalize(const Search *S, Point *p) {
  for (int o = 0; o < S->nops; o++)
    if (!p->plan.tile_nodes || !p->nb[o] ||
        (p->nb[o] == p->plan.tile_nodes && p->no[o] == p->plan.tile_outs))
      p->nb[o] = p->no[o] = 0;
}

static void knob_set(const Search *S, Point *p, int k, int v) {
  int g, o, f;
  knob_of(S, k, &g, &o, &f);
  if (g >= 0) {
    knobs[g].set(&p->plan, v);
  } else {
    if (f == 0) {
      p->nb[o] = tile_nodes[v];
      if (!p->no[o]) p->no[o] = p->plan.tile_outs;
    } else {
      if (!p->nb[o]) p->nb[o] = p->plan.tile_nodes;
      p->no[o] = tile_outs[v];
    }
  }
  normalize(S, p);
}

static bool same_plan(const Search *S, const Point *a, const Point *b) {
  for (int k = 0; k < nknobs(S); k++)
    if (knob_get(S, a, k) != knob_get(S, b, k)) return false;
  return true;
}

/* "tile 2x64, -share_weights": how [p] differs from the default. */
static void describe(const Search *S, const Point *pt, char *out, size_t size) {
  const SchedPlan *d = &S->def.plan, *p = &pt->plan;
  size_t n = 0;
  out[0] = 0;
  if (p->tile_nodes != d->tile_nodes || p->tile_outs != d->tile_outs)
    n += (size_t)snprintf(out + n, size - n, p->tile_nodes ? "tile %dx%d" : "no tile",
                          p->tile_nodes, p->tile_outs);
  for (int o = 0; o < S->nops && n < size; o++)
    if (pt->nb[o])
      n += (size_t)snprintf(out + n, size - n, "%s%s: tile %dx%d", n ? ", " : "",
                            S->ops[o].name, pt->nb[o], pt->no[o]);
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

/* [p] as a schedule, as --dump=schedule prints a plan, with the operators'
 * own tile shapes after the plan's tile directive, into [out]. */
static void print_point(const Search *S, const Point *p, CtxBuf *out) {
  CtxBuf b;
  ctx_buf_init(&b);
  sched_print(&b, S->T->program, &p->plan);
  const char *text = ctx_buf_str(&b), *tile = strstr(text, "\n  tile(node, i) by ");
  const char *after = tile ? strchr(tile + 1, '\n') : NULL;
  if (!after) {
    ctx_buf_puts(out, text);
  } else {
    ctx_buf_printf(out, "%.*s", (int)(after + 1 - text), text);
    for (int o = 0; o < S->nops; o++)
      if (p->nb[o])
        ctx_buf_printf(out, "  %s: tile(node, i) by (%d, %d)\n", S->ops[o].name, p->nb[o],
                       p->no[o]);
    ctx_buf_puts(out, after + 1);
  }
  ctx_buf_free(&b);
}

static void write_sched(const Search *S, const Point *p, const char *path) {
  CtxBuf b;
  ctx_buf_init(&b);
  print_point(S, p, &b);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(ctx_buf_str(&b), f);
    fclose(f);
  }
  ctx_buf_free(&b);
}

/* The progress line, from the default's timing on (before it, the
 * default's figure would read 0). */
static void progress(const Search *S) {
  if (S->T->default_ms <= 0) return;
  double left = S->end - ctx_tune_now();
  const Cand *b = S->best >= 0 ? &S->tried[S->best] : NULL;
  fprintf(stderr, "%stune: %d tried, best %.4f ms (default %.4f ms), %.0f s left%s",
          S->tty ? "\r" : "", S->ntried, b ? b->ms : 0.0, S->T->default_ms,
          left > 0 ? left : 0, S->tty ? "   " : "\n");
  fflush(stderr);
}

/* Does the plan [p] schedule the model (sched_apply accepts it: a model
 * without a product to refactor, say, does not take refactor_recursion)?
 * Its kernel's fingerprint into [*kernel]: plans that differ lower to one
 * kernel where codegen fits a tile to the registers (AVX2: (4, 64), (5, 16)
 * and (6, 16) are all 6 rows x 2 vectors) or where a pass has nothing to
 * do, and a kernel is measured once. */
static bool legal(const Search *S, const Point *p, uint64_t *kernel) {
  CtxArena *a = ctx_arena_new();
  CtxDiag quiet;
  ctx_diag_init(&quiet, NULL, NULL);
  SchedPlan copy = p->plan;
  memset(S->own_nb, 0, (size_t)S->nbufs * sizeof *S->own_nb);
  memset(S->own_no, 0, (size_t)S->nbufs * sizeof *S->own_no);
  for (int o = 0; o < S->nops; o++)
    if (p->nb[o] && S->ops[o].buf < S->nbufs)
      S->own_nb[S->ops[o].buf] = p->nb[o], S->own_no[S->ops[o].buf] = p->no[o];
  copy.tile_nb = S->own_nb, copy.tile_no = S->own_no, copy.nsets = S->nbufs;
  IlirKernel *k = ilir_lower(a, &quiet, S->T->program);
  bool ok = k && sched_apply(a, &quiet, k, &copy) && !quiet.errors &&
            cg_kernel_fingerprint(k, kernel, &quiet);
  ctx_arena_free(a);
  return ok;
}

/* Measures [p] unless tried or pruned; returns its index in tried, or -1. */
static int try_plan(Search *S, const Point *p) {
  for (int i = 0; i < S->ntried; i++)
    if (same_plan(S, &S->tried[i].pt, p)) return -1;
  for (int i = 0; i < S->nskipped; i++)
    if (same_plan(S, &S->skipped[i], p)) return -1;
  uint64_t kernel = 0;
  bool def = same_plan(S, p, &S->def);
  if (!def && !legal(S, p, &kernel)) {
    if (S->nskipped < MAX_SKIPPED) S->skipped[S->nskipped++] = *p;
    return S->pruned++, -1;
  }
  if (def && !legal(S, p, &kernel)) kernel = 0; /* measured all the same: its error */
  for (int i = 0; i < S->ntried && !def; i++)
    if (S->tried[i].kernel == kernel) {
      if (S->nskipped < MAX_SKIPPED) S->skipped[S->nskipped++] = *p;
      return S->same++, -1;
    }
  if (S->ntried == S->cap) {
    S->cap = S->cap ? 2 * S->cap : 64;
    S->tried = realloc(S->tried, (size_t)S->cap * sizeof *S->tried);
    if (!S->tried) ctx_oom();
  }
  Cand *c = &S->tried[S->ntried];
  memset(c, 0, sizeof *c);
  c->pt = *p;
  c->kernel = kernel;
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

/* The winner is kept only when it was faster than the default in at least
 * CONFIRM_WINS of CONFIRM_ROUNDS alternating pairs and in their medians: a
 * single median of three runs let a candidate within the noise through (ctx
 * tune confirmed mvrnn B = 10 at 1.06x; 9 rounds re-measured it at 0.99x). */
enum { CONFIRM_ROUNDS = 5, CONFIRM_WINS = 4 };

static bool time_left(const Search *S, int reserve) {
  return ctx_tune_now() + S->each_s * (1 + reserve) < S->end;
}

/* Coordinate descent from the best: each knob's other values in turn. */
static void descend(Search *S) {
  bool changed = true;
  while (changed && time_left(S, 2 * CONFIRM_ROUNDS)) {
    changed = false;
    for (int k = 0; k < nknobs(S) && time_left(S, 2 * CONFIRM_ROUNDS); k++) {
      Point base = S->tried[S->best].pt;
      int before = S->best;
      for (int v = 0; v < knob_nvals(S, k) && time_left(S, 2 * CONFIRM_ROUNDS); v++) {
        if (v == knob_get(S, &base, k)) continue;
        Point p = base;
        knob_set(S, &p, k, v);
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
  for (int misses = 0; misses < 200 && time_left(S, 2 * CONFIRM_ROUNDS);) {
    Point p = S->tried[S->best].pt;
    int moves = 1 + (int)(next_rand(&r) % 2);
    for (int m = 0; m < moves; m++) {
      int k = (int)(next_rand(&r) % (uint64_t)nknobs(S));
      knob_set(S, &p, k, (int)(next_rand(&r) % (uint64_t)knob_nvals(S, k)));
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
 * medians into [*best_ms], [*def_ms], and into [*wins] in how many of the
 * pairs (default, winner) the winner was faster. False if a run failed. */
static bool confirm(Search *S, const Point *best, int rounds, double *best_ms,
                    double *def_ms, int *wins) {
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
  *wins = 0;
  for (int i = 0; i < rounds; i++) *wins += b[i] < d[i];
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

static void write_result(Search *S, const Point *win, double win_ms, double def_ms,
                         bool kept, int wins, FILE *f) {
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
             "interpreter's), %d left out before measuring as plans the model does not "
             "take, %d as the same kernel as one measured\n",
          S->ntried, S->failed, S->wrong, S->pruned, S->same);
  if (S->nops) {
    fputs("# searched: the plan's tile shape and these products' own (OP: tile):", f);
    for (int i = 0; i < S->nops; i++) fprintf(f, "%s %s", i ? "," : "", S->ops[i].name);
    fputs("\n", f);
  }
  fprintf(f, "# median ms per batch (ctx run --time --repeat %ld), confirmed in alternating "
             "runs: default %.4f, this schedule %.4f (%.2fx)\n",
          S->T->repeat, def_ms, win_ms, def_ms / win_ms);
  if (kept)
    fprintf(f, "# faster than the default in %d of %d alternating pairs\n", wins,
            CONFIRM_ROUNDS);
  else
    fprintf(f, "# no candidate beat the default in at least %d of %d alternating pairs and "
               "in their medians: this is the default\n", CONFIRM_WINS, CONFIRM_ROUNDS);
  Cand *sorted = malloc((size_t)S->ntried * sizeof *sorted);
  if (sorted) {
    memcpy(sorted, S->tried, (size_t)S->ntried * sizeof *sorted);
    qsort(sorted, (size_t)S->ntried, sizeof *sorted, cmp_cand);
    fputs("# the fastest candidates (ms per batch, as measured during the search):\n", f);
    for (int i = 0; i < S->ntried && i < 12 && sorted[i].ms > 0; i++) {
      describe(S, &sorted[i].pt, what, sizeof what);
      fprintf(f, "#   %9.4f  %s\n", sorted[i].ms, what);
    }
    free(sorted);
  }
  for (int i = 0, shown = 0; i < S->ntried && shown < 6; i++)
    if (S->tried[i].ms < 0) {
      describe(S, &S->tried[i].pt, what, sizeof what);
      fprintf(f, "# %s: %s: %s\n", shown++ ? "        " : "failed", what, S->tried[i].why);
    }
  CtxBuf b;
  ctx_buf_init(&b);
  print_point(S, win, &b);
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
  T->repeat = 1;
  int i = try_plan(S, &S->def);
  if (i < 0 || S->tried[i].ms <= 0) {
    fprintf(stderr, "ctx: error: the default schedule does not run on the sample: %s\n",
            i >= 0 ? S->tried[i].why : "pruned");
    return 70;
  }
  /* about 0.15 s of timed runs per candidate, and at least 9 batches: the
   * passes over the sample for that (a repeat per pass of every batch cost
   * seqlstm B = 1 4.5 s per candidate, 30 batches of 1.65 ms 90 times: two
   * candidates in a 60 s budget) */
  double pass_ms = S->tried[i].ms * (double)(T->batches > 0 ? T->batches : 1);
  T->repeat = pass_ms > 0 ? (long)(150.0 / pass_ms) : 50;
  long least = T->batches > 0 ? (9 + T->batches - 1) / T->batches : 3;
  if (T->repeat < least) T->repeat = least;
  if (T->repeat > 200) T->repeat = 200;
  (void)s;
  char path[300];
  snprintf(path, sizeof path, "%s/cand.sched", T->dir);
  write_sched(S, &S->def, path);
  if (!ctx_tune_measure(T, path, &S->tried[i].ms, why, sizeof why)) return 70;
  T->default_ms = S->tried[i].ms;
  progress(S);
  return 0;
}

static int search(Search *S, CtxSession *s) {
  int rc = start(S, s);
  if (rc) return rc;
  descend(S);
  explore(S, S->T->opts->tune.seed);
  if (S->tty) fputc('\n', stderr);
  Point win = S->tried[S->best].pt;
  double win_ms = S->tried[S->best].ms, def_ms = S->T->default_ms;
  bool kept = !same_plan(S, &win, &S->def);
  int wins = 0;
  if (kept && (!confirm(S, &win, CONFIRM_ROUNDS, &win_ms, &def_ms, &wins) ||
               win_ms >= def_ms || wins < CONFIRM_WINS)) {
    kept = false;
    win = S->def;
    win_ms = def_ms;
  }
  FILE *f = fopen(S->T->opts->tune.out, "w");
  if (!f) {
    fprintf(stderr, "ctx: error: cannot write %s\n", S->T->opts->tune.out);
    return 2;
  }
  write_result(S, &win, win_ms, def_ms, kept, wins, f);
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
  Search S = {.T = &T, .best = -1, .tty = isatty(2)};
  S.def.plan = sched_default_plan(p->disabled, 0, 0);
  S.def.plan.l2_bytes = o->l2;
  /* the products as register tiling sees them: before direct-results moves
   * their outputs into result rows */
  SchedPlan before = S.def.plan;
  before.direct_results = false;
  IlirKernel *tiles = ilir_lower(s->arena, &s->diag, p);
  if (tiles && sched_apply(s->arena, &s->diag, tiles, &before))
    find_tile_ops(&S, tiles, &tiles->body);
  /* what --dump=schedule names the row tile by (sched_apply sets them) */
  S.def.plan.row_axes[0] = before.row_axes[0];
  S.def.plan.row_axes[1] = before.row_axes[1];
  S.nbufs = k->nbufs;
  S.own_nb = calloc((size_t)S.nbufs, sizeof *S.own_nb);
  S.own_no = calloc((size_t)S.nbufs, sizeof *S.own_no);
  if (!S.own_nb || !S.own_no) ctx_oom();
  S.end = ctx_tune_now() + o->tune.budget_s;
  int rc = search(&S, s);
  free(S.tried);
  free(S.own_nb);
  free(S.own_no);
  for (int i = 0; i < T.noutputs; i++) free(T.outputs[i]);
  remove_tree(T.dir);
  return rc;
}
