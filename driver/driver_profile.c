/* driver_profile.c — ctx run --profile: where a run's time goes; and
 * --perf-map: the JIT-compiled functions named for perf.
 *
 *   the wall clock around each run (driver_run.c) = linearization + buffers
 *   and output rows (ctxrt_model_times) + the kernel + the rest
 *   the kernel = its top-level regions (levels loops, prologues), each =
 *   its node loops + the rest (the level loop itself, barriers, a level's
 *   wait for the slowest thread), from thread 0's cycle counters
 *
 * Cycles become seconds by the ratio of the cycle counter to
 * CLOCK_MONOTONIC over all the profiled runs (one calibration spanning
 * milliseconds or more: no sleep, no guess of the clock rate). Every row
 * says ms per run and its share of the run's wall time, so the rows of a
 * group add up to their parent's; the rest rows keep that true.
 */
#include "driver/driver_profile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* After each run: the counters and the model's timings so far, and the
 * run's wall time. */
typedef struct {
  int64_t *counters;
  CtxrtModelTimes times;
  int64_t batch; /* which batch of the input the run was */
  double ms;
} Snapshot;

struct CtxProfile {
  CgProfile *plan;
  uint64_t c0;
  double t0;
  Snapshot *snaps;
  int64_t runs, cap;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t counters_size(const CtxProfile *p) {
  return (size_t)p->plan->n * CG_PROF_FIELDS * sizeof(int64_t);
}

CtxProfile *ctx_profile_create(const IlirKernel *k) {
  CtxProfile *p = calloc(1, sizeof *p);
  if (!p) ctx_oom();
  p->plan = cg_profile_plan(k);
  return p;
}

const CgProfile *ctx_profile_plan(const CtxProfile *p) { return p->plan; }

static void drop_snapshots(CtxProfile *p) {
  for (int64_t i = 0; i < p->runs; i++) free(p->snaps[i].counters);
  p->runs = 0;
}

void ctx_profile_free(CtxProfile *p) {
  if (!p) return;
  drop_snapshots(p);
  free(p->snaps);
  cg_profile_free(p->plan);
  free(p);
}

void ctx_profile_start(CtxProfile *p, CgJit *jit, CtxrtModel *model) {
  memset(cg_jit_counters(jit), 0, counters_size(p));
  ctxrt_model_reset_times(model);
  drop_snapshots(p);
  p->t0 = now_s();
  p->c0 = cg_jit_cycles(jit);
}

void ctx_profile_add_run(CtxProfile *p, const CgJit *jit, const CtxrtModel *model,
                         int64_t batch, double ms) {
  if (p->runs == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 16;
    p->snaps = realloc(p->snaps, (size_t)p->cap * sizeof *p->snaps);
    if (!p->snaps) ctx_oom();
  }
  Snapshot *s = &p->snaps[p->runs++];
  s->counters = ctx_xmalloc(counters_size(p) + 1);
  memcpy(s->counters, cg_jit_counters(jit), counters_size(p));
  ctxrt_model_times(model, &s->times);
  s->batch = batch;
  s->ms = ms;
}

/* ---- the runs shown ------------------------------------------------------------ */

/* Sums over the runs shown: each batch's faster half (by wall time), so
 * that a run the machine preempted (a loaded machine stretches one run in
 * ten by milliseconds) does not make the mean, and every batch counts
 * alike. A faster half of all the runs, when the batches differ in size, is
 * mostly the smaller batches: mvrnn H=128 B=10 over the bench's 100 trees
 * showed 1,186 MFLOP per run where a batch's mean is 1,398, and two
 * schedules compared on their profiles were compared on different trees
 * (childsum B=1: 9.03 MFLOP per run in one run, 9.45 in the next). Every
 * row sums the same runs, so the rows still add up. */
typedef struct {
  int64_t *counters;
  CtxrtModelTimes times;
  double wall_s;
  int64_t shown, batches; /* every batch ran alike: p->runs / batches each */
} Totals;

/* By batch, then by wall time. */
static int cmp_batch_ms(const void *a, const void *b) {
  const Snapshot *x = *(const Snapshot *const *)a, *y = *(const Snapshot *const *)b;
  if (x->batch != y->batch) return (x->batch > y->batch) - (x->batch < y->batch);
  return (x->ms > y->ms) - (x->ms < y->ms);
}

/* Run [i]'s own counters and timings into [t] (added). */
static void add_run(const CtxProfile *p, int64_t i, Totals *t) {
  const Snapshot *s = &p->snaps[i], *prev = i ? &p->snaps[i - 1] : NULL;
  size_t n = counters_size(p) / sizeof(int64_t);
  for (size_t f = 0; f < n; f++) t->counters[f] += s->counters[f] - (prev ? prev->counters[f] : 0);
  t->times.linearize_s += s->times.linearize_s - (prev ? prev->times.linearize_s : 0);
  t->times.bind_s += s->times.bind_s - (prev ? prev->times.bind_s : 0);
  t->times.kernel_s += s->times.kernel_s - (prev ? prev->times.kernel_s : 0);
  t->times.copy_s += s->times.copy_s - (prev ? prev->times.copy_s : 0);
  t->times.levels += s->times.levels - (prev ? prev->times.levels : 0);
  t->times.steps += s->times.steps - (prev ? prev->times.steps : 0);
  t->wall_s += s->ms * 1e-3;
  t->shown++;
}

static Totals faster_half(const CtxProfile *p) {
  Totals t;
  memset(&t, 0, sizeof t);
  t.counters = calloc(counters_size(p) / sizeof(int64_t) + 1, sizeof(int64_t));
  const Snapshot **order = ctx_xmalloc(((size_t)p->runs + 1) * sizeof *order);
  if (!t.counters) ctx_oom();
  for (int64_t i = 0; i < p->runs; i++) order[i] = &p->snaps[i];
  qsort(order, (size_t)p->runs, sizeof *order, cmp_batch_ms);
  for (int64_t from = 0, to; from < p->runs; from = to) {
    for (to = from + 1; to < p->runs && order[to]->batch == order[from]->batch; to++)
      continue;
    for (int64_t k = from; k < from + (to - from + 1) / 2; k++)
      add_run(p, order[k] - p->snaps, &t);
    t.batches++;
  }
  free(order);
  return t;
}

/* ---- the table ----------------------------------------------------------------- */

/* One row: totals over the runs (flops < 0: unknown). */
typedef struct {
  double s, flops, bytes, iters;
  const char *unit; /* of iters: "nodes", "levels", "runs", or NULL: none shown */
} Row;

typedef struct {
  CtxBuf *out;
  double wall_s, runs;
  int width; /* of the name column */
} Table;

static void print_row(Table *t, int depth, const char *name, const Row *r) {
  ctx_buf_printf(t->out, "%*s%-*s %9.4f %6.1f%%", 2 * depth, "", t->width - 2 * depth, name,
                 r->s / t->runs * 1e3, t->wall_s > 0 ? 100 * r->s / t->wall_s : 0.0);
  if (r->flops > 0 && r->s > 0)
    ctx_buf_printf(t->out, " %11.3f %9.1f", r->flops / t->runs * 1e-6, r->flops / r->s * 1e-9);
  else
    ctx_buf_printf(t->out, " %11s %9s", r->flops < 0 ? "?" : "-", r->flops < 0 ? "?" : "-");
  if (r->bytes > 0) ctx_buf_printf(t->out, " %9.3f", r->bytes / t->runs * 1e-6);
  else ctx_buf_printf(t->out, " %9s", "-");
  if (r->unit) ctx_buf_printf(t->out, " %10.1f %s", r->iters / t->runs, r->unit);
  ctx_buf_putc(t->out, '\n');
}

static void add_row(Row *to, const Row *r) {
  to->s += r->s;
  to->flops = to->flops < 0 || r->flops < 0 ? -1 : to->flops + r->flops;
  to->bytes += r->bytes;
}

/* Region [i]'s totals from [c] (its counters) at [hz] cycles per second. */
static Row region_row(const CgProfile *plan, const int64_t *c, int i, double hz) {
  const CgProfRegion *g = &plan->regions[i];
  const int64_t *f = c + (size_t)i * CG_PROF_FIELDS;
  Row r = {(double)f[CG_PROF_CYCLES] / hz, 0, (double)f[CG_PROF_BYTES],
           (double)f[CG_PROF_ITERS], NULL};
  r.flops = g->flops < 0 ? -1 : g->flops * r.iters;
  r.unit = g->node_loop ? "nodes" : g->stmt->kind == ILIR_LOOP ? "levels" : "runs";
  return r;
}

/* The rows of top-level region [i] and of its children; returns its row. */
static Row print_region(Table *t, const CgProfile *plan, const int64_t *c, int i, double hz) {
  Row top = region_row(plan, c, i, hz), sum = {0, 0, 0, 0, NULL};
  bool group = false;
  for (int j = i + 1; j < plan->n && plan->regions[j].parent == i; j++) {
    Row r = region_row(plan, c, j, hz);
    add_row(&sum, &r);
    group = true;
  }
  if (group) {
    top.flops = sum.flops;
    top.bytes = sum.bytes;
  }
  print_row(t, 2, plan->regions[i].name, &top);
  for (int j = i + 1; j < plan->n && plan->regions[j].parent == i; j++) {
    Row r = region_row(plan, c, j, hz);
    print_row(t, 3, plan->regions[j].name, &r);
  }
  if (group) {
    Row rest = {top.s - sum.s, 0, 0, 0, NULL};
    print_row(t, 3, "(rest: level loop, barriers)", &rest);
  }
  return top;
}

static int name_width(const CgProfile *plan) {
  int w = 42; /* "(rest: starting and joining the team)" at depth 2 */
  for (int i = 0; i < plan->n; i++) {
    int len = (int)strlen(plan->regions[i].name) + (plan->regions[i].parent < 0 ? 4 : 6);
    if (len > w) w = len;
  }
  return w;
}

/* Which runs the table shows: "the faster half of N" (one batch, as
 * `--batch` left the input whole), "the faster half of N: each of B
 * batches' faster K of R", or "every run: B batches, once each" (no run
 * to leave out: `--repeat 1`). */
static void runs_shown(CtxBuf *out, const CtxProfile *p, const Totals *tot) {
  if (tot->batches <= 1)
    ctx_buf_printf(out, "the faster half of %" PRId64, p->runs);
  else if (tot->shown == p->runs)
    ctx_buf_printf(out, "every run: %" PRId64 " batches, once each", tot->batches);
  else
    ctx_buf_printf(out,
                   "the faster half of %" PRId64 ": each of %" PRId64
                   " batches' faster %" PRId64 " of %" PRId64,
                   p->runs, tot->batches, tot->shown / tot->batches,
                   p->runs / tot->batches);
}

static void header(Table *t, const CtxProfile *p, const Totals *tot, int threads,
                   const char *name, double hz) {
  ctx_buf_printf(t->out, "profile: model %s, %" PRId64 " run%s (", name, tot->shown,
                 tot->shown == 1 ? "" : "s");
  runs_shown(t->out, p, tot);
  ctx_buf_printf(t->out, "), %d thread%s%s; cycle counter %.3f GHz\n", threads,
                 threads == 1 ? "" : "s",
                 threads > 1
                     ? " (kernel regions: thread 0's time; FLOPs and bytes: every "
                       "thread's nodes)"
                     : "",
                 hz * 1e-9);
  ctx_buf_printf(t->out, "%-*s %9s %7s %11s %9s %9s %s\n", t->width, "region", "ms/run",
                 "share", "MFLOP/run", "GFLOP/s", "MB/run", "per run");
}

/* The kernel's regions, then the rest of the kernel's time, into [t]. */
static Row kernel_rows(Table *t, const CgProfile *plan, const Totals *tot, double hz) {
  Row regions = {0, 0, 0, 0, NULL};
  for (int i = 0; i < plan->n; i++)
    if (plan->regions[i].parent < 0) {
      Row r = print_region(t, plan, tot->counters, i, hz);
      add_row(&regions, &r);
    }
  Row rest = {tot->times.kernel_s - regions.s, 0, 0, 0, NULL};
  print_row(t, 2, "(rest: starting and joining the team)", &rest);
  Row kernel = {tot->times.kernel_s, regions.flops, regions.bytes, 0, NULL};
  return kernel;
}

void ctx_profile_report(CtxProfile *p, CgJit *jit, int threads, const char *name,
                        CtxBuf *out) {
  double t1 = now_s();
  uint64_t c1 = cg_jit_cycles(jit);
  double hz = t1 > p->t0 && c1 > p->c0 ? (double)(c1 - p->c0) / (t1 - p->t0) : 1e9;
  Totals tot = faster_half(p);
  const CtxrtModelTimes *mt = &tot.times;
  Table t = {out, tot.wall_s, tot.shown > 0 ? (double)tot.shown : 1, name_width(p->plan)};
  header(&t, p, &tot, threads, name, hz);
  CtxBuf body;
  ctx_buf_init(&body);
  t.out = &body;
  Row kernel = kernel_rows(&t, p->plan, &tot, hz);
  t.out = out;
  Row run = {t.wall_s, kernel.flops, kernel.bytes, 0, NULL};
  Row lin = {mt->linearize_s, 0, 0, 0, NULL}, bind = {mt->bind_s + mt->copy_s, 0, 0, 0, NULL};
  Row other = {t.wall_s - mt->linearize_s - mt->bind_s - mt->copy_s - mt->kernel_s, 0, 0, 0,
               NULL};
  print_row(&t, 0, "run", &run);
  print_row(&t, 1, "linearization", &lin);
  print_row(&t, 1, "buffers and output rows", &bind);
  print_row(&t, 1, "kernel", &kernel);
  ctx_buf_puts(out, ctx_buf_str(&body));
  print_row(&t, 1, "(rest: driver)", &other);
  /* the dependency chain: levels, and the level ends where the team waits
   * (fewer under unroll_recursion, whose phases run without barriers) */
  double shown = tot.shown > 0 ? (double)tot.shown : 1;
  ctx_buf_printf(out, "steps: levels_per_run=%.1f barriers_per_run=%.1f\n",
                 (double)mt->levels / shown, (double)mt->steps / shown);
  ctx_buf_free(&body);
  free(tot.counters);
}

/* ---- perf ---------------------------------------------------------------------- */

bool ctx_perf_map_write(const CgJit *jit, char *path, size_t path_size) {
  snprintf(path, path_size, "/tmp/perf-%ld.map", (long)getpid());
  FILE *f = fopen(path, "a");
  if (!f) return false;
  const CgJitSym *syms;
  int n = cg_jit_symbols(jit, &syms);
  for (int i = 0; i < n; i++)
    fprintf(f, "%" PRIx64 " %" PRIx64 " %s\n", syms[i].addr, syms[i].size, syms[i].name);
  return fclose(f) == 0;
}
