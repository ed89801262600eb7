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

struct CtxProfile {
  CgProfile *plan;
  uint64_t c0;
  double t0, wall_ms;
  int64_t runs;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

CtxProfile *ctx_profile_create(const IlirKernel *k) {
  CtxProfile *p = calloc(1, sizeof *p);
  if (!p) ctx_oom();
  p->plan = cg_profile_plan(k);
  return p;
}

const CgProfile *ctx_profile_plan(const CtxProfile *p) { return p->plan; }

void ctx_profile_free(CtxProfile *p) {
  if (!p) return;
  cg_profile_free(p->plan);
  free(p);
}

void ctx_profile_start(CtxProfile *p, CgJit *jit, CtxrtModel *model) {
  memset(cg_jit_counters(jit), 0, (size_t)p->plan->n * CG_PROF_FIELDS * sizeof(int64_t));
  ctxrt_model_reset_times(model);
  p->wall_ms = 0;
  p->runs = 0;
  p->t0 = now_s();
  p->c0 = cg_jit_cycles(jit);
}

void ctx_profile_add_run(CtxProfile *p, double ms) {
  p->wall_ms += ms;
  p->runs++;
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
  int w = 34;
  for (int i = 0; i < plan->n; i++) {
    int len = (int)strlen(plan->regions[i].name) + (plan->regions[i].parent < 0 ? 4 : 6);
    if (len > w) w = len;
  }
  return w;
}

static void header(Table *t, const CtxProfile *p, int threads, const char *name, double hz) {
  ctx_buf_printf(t->out,
                 "profile: model %s, %" PRId64 " run%s, %d thread%s%s; cycle counter %.3f "
                 "GHz\n",
                 name, p->runs, p->runs == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
                 threads > 1 ? " (kernel regions: thread 0's time; FLOPs and bytes: every "
                               "thread's nodes)"
                             : "",
                 hz * 1e-9);
  ctx_buf_printf(t->out, "%-*s %9s %7s %11s %9s %9s %s\n", t->width, "region", "ms/run",
                 "share", "MFLOP/run", "GFLOP/s", "MB/run", "per run");
}

void ctx_profile_report(CtxProfile *p, CgJit *jit, const CtxrtModel *model, int threads,
                        const char *name, CtxBuf *out) {
  double t1 = now_s();
  uint64_t c1 = cg_jit_cycles(jit);
  double hz = t1 > p->t0 && c1 > p->c0 ? (double)(c1 - p->c0) / (t1 - p->t0) : 1e9;
  CtxrtModelTimes mt;
  ctxrt_model_times(model, &mt);
  Table t = {out, p->wall_ms * 1e-3, p->runs > 0 ? (double)p->runs : 1, name_width(p->plan)};
  header(&t, p, threads, name, hz);
  const int64_t *c = cg_jit_counters(jit);
  Row kernel = {mt.kernel_s, 0, 0, 0, NULL}, regions = {0, 0, 0, 0, NULL};
  CtxBuf body;
  ctx_buf_init(&body);
  t.out = &body;
  for (int i = 0; i < p->plan->n; i++)
    if (p->plan->regions[i].parent < 0) {
      Row r = print_region(&t, p->plan, c, i, hz);
      add_row(&regions, &r);
    }
  Row rest = {mt.kernel_s - regions.s, 0, 0, 0, NULL};
  print_row(&t, 2, "(rest: starting and joining the team)", &rest);
  t.out = out;
  kernel.flops = regions.flops;
  kernel.bytes = regions.bytes;
  Row run = {t.wall_s, kernel.flops, kernel.bytes, 0, NULL};
  Row lin = {mt.linearize_s, 0, 0, 0, NULL}, bind = {mt.bind_s + mt.copy_s, 0, 0, 0, NULL};
  Row other = {t.wall_s - mt.linearize_s - mt.bind_s - mt.copy_s - mt.kernel_s, 0, 0, 0, NULL};
  print_row(&t, 0, "run", &run);
  print_row(&t, 1, "linearization", &lin);
  print_row(&t, 1, "buffers and output rows", &bind);
  print_row(&t, 1, "kernel", &kernel);
  ctx_buf_puts(out, ctx_buf_str(&body));
  print_row(&t, 1, "(rest: driver)", &other);
  ctx_buf_free(&body);
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
