/* driver_tune.c — ctx tune: a schedule found by measurement.
 *
 * A candidate is a plan of the default schedule's kind (sched.h SchedPlan:
 * which passes run, the register tile's shape), written out by sched_print
 * as a `.sched` file; the tuner measures it the way a user would, with `ctx
 * run -s CAND.sched --time` on the sample in a child process (a candidate
 * that crashes or hangs costs its time, not the search), and checks its
 * outputs against the interpreter's on the same sample before it may win.
 *
 * The search (driver_tune_space.c has the space): the default plan first,
 * then coordinate descent — each knob's other values with the rest at the
 * best so far, kept when faster by more than the noise margin — until a
 * round changes nothing, then seeded random moves of one or two knobs from
 * the best while the budget lasts. Given the same timings and seed it makes
 * the same choices. Before measuring, a plan is scheduled and emitted in
 * process: one the model does not take is left out, and so is one whose
 * kernel, as emitted, is one already measured (its hash,
 * cg_kernel_fingerprint; register tiles that codegen fits to the same
 * shape, passes with nothing to do).
 * Finally the winner and the default run again in alternation, and the
 * winner is kept only when still faster: the tuned schedule is never slower
 * than the default on the sample, as far as this machine can tell.
 */
#include "driver/driver_tune.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------------------- */

static int tune_usage(const char *fmt, const char *arg) {
  return ctx_usage_error("tune", CTX_TUNE_USAGE, fmt, arg);
}

/* The options of ctx run that describe the sample; passed on to every run. */
static const char *const forwarded[] = {"--input", "--gen",  "--format", "--vocab",
                                        "--conllu-column", "--unk", "--weights",
                                        "--seed", "--batch", "--threads"};

static bool is_option(const char *a, const char *name) {
  size_t n = strlen(name);
  return strncmp(a, name, n) == 0 && (a[n] == 0 || a[n] == '=');
}

static void forward(CtxOptions *o, int argc, char **argv, int from, int to) {
  if (!o->tune.fwd) o->tune.fwd = ctx_xmalloc(((size_t)argc + 1) * sizeof(char *));
  for (int k = from; k <= to; k++) o->tune.fwd[o->tune.nfwd++] = argv[k];
}

static bool parse_seconds(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*s == 0 || *end || errno || !(v > 0) || v > 86400) return false;
  *out = v;
  return true;
}

int ctx_tune_option(int argc, char **argv, int *i, CtxOptions *o) {
  const char *a = argv[*i];
  int from = *i;
  for (size_t k = 0; k < sizeof forwarded / sizeof *forwarded; k++) {
    if (!is_option(a, forwarded[k])) continue;
    int rc = ctx_run_option(argc, argv, i, o);
    if (rc == CTX_OPT_TAKEN) forward(o, argc, argv, from, *i);
    return rc;
  }
  if (is_option(a, "--disable") || is_option(a, "--enable")) {
    bool apart = strchr(a, '=') == NULL && from + 1 < argc; /* --disable NAME */
    forward(o, argc, argv, from, apart ? from + 1 : from);
    return CTX_OPT_NOT_MINE; /* the common options parse it too */
  }
  bool budget = is_option(a, "--budget"), seed = is_option(a, "--search-seed");
  bool out = strcmp(a, "-o") == 0 || is_option(a, "--output");
  if (!budget && !seed && !out) {
    if (is_option(a, "--repeat") || is_option(a, "--time") || is_option(a, "--interp") ||
        is_option(a, "--profile")) {
      tune_usage("option '%s' does not apply to 'ctx tune' (it times candidates itself)", a);
      return CTX_OPT_BAD;
    }
    return CTX_OPT_NOT_MINE;
  }
  const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
  const char *val = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : "";
  if (*val == 0) {
    tune_usage("option '%s' needs a value", a);
    return CTX_OPT_BAD;
  }
  if (out) {
    o->tune.out = val;
  } else if (budget && !parse_seconds(val, &o->tune.budget_s)) {
    tune_usage("option '--budget' needs a number of seconds, found '%s'", val);
    return CTX_OPT_BAD;
  } else if (seed) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (*val < '0' || *val > '9' || *end || errno) {
      tune_usage("option '--search-seed' needs a non-negative integer, found '%s'", val);
      return CTX_OPT_BAD;
    }
    o->tune.seed = (uint64_t)v;
  }
  return CTX_OPT_TAKEN;
}

/* ---- running ctx ------------------------------------------------------------------------ */

double ctx_tune_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs `ctx run MODEL ARGS... [forwarded]` with stdout and stderr into
 * [log]; kills it after [limit_s]. Returns its exit status, -1 when it
 * could not run or was killed. */
static int run_ctx(const TuneCtx *T, const char *const *args, int nargs, const char *log,
                   double limit_s) {
  const CtxOptions *o = T->opts;
  int n = 0, cap = 9 + nargs + o->tune.nfwd + 2 * o->ndefines;
  char **argv = ctx_xmalloc((size_t)cap * sizeof(char *));
  char (*defs)[128] = ctx_xmalloc((size_t)(o->ndefines + 1) * sizeof *defs);
  argv[n++] = (char *)T->self;
  argv[n++] = "run";
  argv[n++] = (char *)T->model;
  for (int k = 0; k < o->ndefines; k++) {
    snprintf(defs[k], sizeof defs[k], "-D%s=%ld", o->defines[k].name, o->defines[k].value);
    argv[n++] = defs[k];
  }
  for (int k = 0; k < o->tune.nfwd; k++) argv[n++] = (char *)o->tune.fwd[k];
  char l2[32];
  if (o->l2) { /* the kernels' tiles as the tuner's own plan sizes them */
    snprintf(l2, sizeof l2, "--l2=%ld", o->l2);
    argv[n++] = l2;
  }
  for (int k = 0; k < nargs; k++) argv[n++] = (char *)args[k];
  argv[n] = NULL;
  int status = -1;
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(log, "w", stdout);
    if (f && dup2(fileno(stdout), 2) >= 0) execv(T->self, argv);
    _exit(127);
  }
  if (pid > 0) {
    double end = ctx_tune_now() + limit_s;
    int st = 0;
    pid_t r;
    struct timespec nap = {0, 2000000}; /* 2 ms */
    while ((r = waitpid(pid, &st, WNOHANG)) == 0 && ctx_tune_now() < end) nanosleep(&nap, NULL);
    if (r == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
    } else if (r == pid && WIFEXITED(st)) {
      status = WEXITSTATUS(st);
    }
  }
  free(defs);
  free(argv);
  return status;
}

/* The first line of [path] that starts with [prefix], into [line]. */
static bool find_line(const char *path, const char *prefix, char *line, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool found = false;
  while (!found && fgets(line, (int)size, f)) found = strncmp(line, prefix, strlen(prefix)) == 0;
  fclose(f);
  return found;
}

/* The last line of [path] that starts with "ctx: " or holds "error" (why
 * a run failed), into [why]. */
static void failure(const char *path, char *why, size_t size) {
  snprintf(why, size, "ctx run failed without a message");
  FILE *f = fopen(path, "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "error") || strncmp(line, "ctx: ", 5) == 0) {
      line[strcspn(line, "\n")] = 0;
      snprintf(why, size, "%s", line);
    }
  if (f) fclose(f);
}

bool ctx_tune_reference(TuneCtx *T, char *why, size_t size) {
  char out[600], log[600];
  snprintf(out, sizeof out, "%s/cand", T->dir);
  mkdir(out, 0700);
  snprintf(out, sizeof out, "%s/ref", T->dir);
  mkdir(out, 0700);
  DIR *d = opendir(out);
  snprintf(out, sizeof out, "%s/ref/out.npy", T->dir);
  snprintf(log, sizeof log, "%s/ref.log", T->dir);
  const char *args[] = {"--interp", "--output", out};
  int rc = d ? run_ctx(T, args, 3, log, 3600) : -1;
  if (rc != 0) failure(log, why, size);
  struct dirent *e; /* out.npy, or out.FIELD.npy per field of a tuple */
  while (rc == 0 && d && (e = readdir(d)))
    if (e->d_name[0] != '.' && T->noutputs < TUNE_MAX_OUTPUTS)
      T->outputs[T->noutputs++] = strcpy(ctx_xmalloc(strlen(e->d_name) + 1), e->d_name);
  if (d) closedir(d);
  if (rc == 0 && !T->noutputs) snprintf(why, size, "the interpreter wrote no outputs");
  return rc == 0 && T->noutputs;
}

/* Runs the schedule in [sched] [repeat] times per batch; the median ms per
 * batch into [*ms], the batches of a pass into T->batches. */
static bool time_schedule(TuneCtx *T, const char *sched, long repeat, double limit_s, double *ms,
                          char *why, size_t size) {
  char out[600], log[600], rep[32], line[512];
  snprintf(out, sizeof out, "%s/cand/out.npy", T->dir);
  snprintf(log, sizeof log, "%s/cand.log", T->dir);
  snprintf(rep, sizeof rep, "%ld", repeat);
  const char *args[] = {"-s", sched, "--time", "--repeat", rep, "--output", out};
  int rc = run_ctx(T, args, 7, log, limit_s);
  if (rc != 0) {
    if (rc < 0) snprintf(why, size, "did not finish in %.0f s (or was killed)", limit_s);
    else if (rc == 127) snprintf(why, size, "could not start %s", T->self);
    else failure(log, why, size);
    return false;
  }
  const char *m;
  if (!find_line(log, "time: ", line, sizeof line) || !(m = strstr(line, "median_ms="))) {
    snprintf(why, size, "no time line in ctx run's output");
    return false;
  }
  *ms = strtod(m + 10, NULL);
  const char *nb = strstr(line, "batches=");
  long batches = nb ? strtol(nb + 8, NULL, 10) / repeat : 0;
  if (batches > 0) T->batches = batches;
  return *ms > 0;
}

bool ctx_tune_measure(TuneCtx *T, const char *sched, double *ms, char *why, size_t size) {
  double runs = (double)T->repeat * (double)(T->batches > 0 ? T->batches : 1);
  double limit = T->default_ms > 0 ? 30 + T->default_ms * 1e-3 * runs * 20 : 600;
  if (!time_schedule(T, sched, T->repeat, limit, ms, why, size)) return false;
  return ctx_tune_outputs_match(T, why, size);
}

/* ---- outputs against the interpreter's -------------------------------------------------- */

typedef struct {
  unsigned char *data; /* the whole file */
  size_t size, offset; /* the values start at offset */
  int item;            /* 4 (<f4) or 8 (<f8) */
} Npy;

static bool npy_read(const char *path, Npy *n) {
  memset(n, 0, sizeof *n);
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  n->data = size > 10 ? ctx_xmalloc((size_t)size + 1) : NULL;
  bool ok = n->data && fread(n->data, 1, (size_t)size, f) == (size_t)size;
  fclose(f);
  if (!ok || memcmp(n->data, "\x93NUMPY", 6) != 0) return false;
  n->size = (size_t)size;
  n->data[size] = 0;
  size_t hlen = n->data[6] == 1 ? (size_t)n->data[8] | (size_t)n->data[9] << 8
                                : (size_t)n->data[8] | (size_t)n->data[9] << 8 |
                                      (size_t)n->data[10] << 16 | (size_t)n->data[11] << 24;
  n->offset = (n->data[6] == 1 ? 10 : 12) + hlen;
  if (n->offset > n->size) return false;
  char *h = (char *)n->data + (n->data[6] == 1 ? 10 : 12); /* the header dict */
  unsigned char end = n->data[n->offset];
  n->data[n->offset] = 0;
  n->item = strstr(h, "'<f4'") ? 4 : strstr(h, "'<f8'") ? 8 : 0;
  n->data[n->offset] = end;
  return n->item && (n->size - n->offset) % (size_t)n->item == 0;
}

static double npy_at(const Npy *n, size_t i) {
  const unsigned char *p = n->data + n->offset + i * (size_t)n->item;
  if (n->item == 4) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  double d;
  memcpy(&d, p, 8);
  return d;
}

/* Is every value of [got] within the JIT's tolerance of [want]'s? The
 * differential tests' bound: float32 against float64, 1e-4 + 1e-4 |want|. */
static bool npy_match(const char *want_path, const char *got_path, char *why, size_t size) {
  Npy want, got;
  bool ok = npy_read(want_path, &want);
  ok = npy_read(got_path, &got) && ok;
  if (!ok) snprintf(why, size, "could not read the outputs (%s)", got_path);
  size_t n = ok ? (want.size - want.offset) / (size_t)want.item : 0;
  if (ok && n != (got.size - got.offset) / (size_t)got.item) {
    snprintf(why, size, "%zu outputs, the interpreter has %zu",
             (got.size - got.offset) / (size_t)got.item, n);
    ok = false;
  }
  for (size_t i = 0; ok && i < n; i++) {
    double w = npy_at(&want, i), g = npy_at(&got, i);
    if (!(fabs(w - g) <= 1e-4 + 1e-4 * fabs(w))) {
      snprintf(why, size, "output %zu is %.9g, the interpreter's %.9g", i, g, w);
      ok = false;
    }
  }
  free(want.data);
  free(got.data);
  return ok;
}

bool ctx_tune_outputs_match(TuneCtx *T, char *why, size_t size) {
  char want[700], got[700];
  /* one file for an output, or one per field of a tuple (OUT.FIELD.npy) */
  for (int k = 0; k < T->noutputs; k++) {
    snprintf(want, sizeof want, "%s/ref/%s", T->dir, T->outputs[k]);
    snprintf(got, sizeof got, "%s/cand/%s", T->dir, T->outputs[k]);
    if (!npy_match(want, got, why, size)) return false;
    remove(got);
  }
  return true;
}
