/* bench_util.c — see bench_util.h. */
#include "bench/common/bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *bench_prog = "bench";

void bench_die(const char *what, const char *msg) {
  fprintf(stderr, "%s: %s%s%s\n", bench_prog, what, msg ? ": " : "", msg ? msg : "");
  exit(1);
}

void *bench_xmalloc(size_t n) {
  void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
  if (!p) bench_die("out of memory", NULL);
  return p;
}

/* Parses [len] bytes at [text] into out[(*count)++]. */
static void parse(const char *path, bool ptb, const char *text, size_t len, CtxrtForest **out,
                  int *count) {
  CtxrtError err;
  CtxrtStatus st = ptb ? ctxrt_read_ptb_buffer(path, text, len, NULL, &out[*count], &err)
                       : ctxrt_read_nodes_buffer(path, text, len, &out[*count], &err);
  if (st) bench_die("read", err.msg);
  (*count)++;
}

/* Splits the text into one chunk per batch of [batch] structures (PTB: a tree
 * a line; node lists: a structure from its kind line) and parses each. */
CtxrtForest **bench_read_batches(const char *path, bool ptb, int batch, int *nb) {
  FILE *fp = fopen(path, "rb");
  if (!fp) bench_die("cannot open", path);
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *text = bench_xmalloc((size_t)len + 1);
  if (fread(text, 1, (size_t)len, fp) != (size_t)len) bench_die("cannot read", path);
  fclose(fp);
  text[len] = 0;
  int count = 0, in_batch = 0;
  CtxrtForest **out = malloc(sizeof *out * ((size_t)len + 1)); /* at most a batch a byte */
  if (!out) bench_die("out of memory", NULL);
  const char *start = text;
  for (const char *ln = text; ln && *ln;) {
    const char *nl = strchr(ln, '\n');
    const char *t = ln;
    while (*t == ' ' || *t == '\t') t++;
    bool begins = ptb ? (*t == '(')
                      : (!strncmp(t, "tree", 4) || !strncmp(t, "dag", 3) ||
                         !strncmp(t, "sequence", 8));
    if (begins && in_batch == batch) { /* flush [start, ln) */
      parse(path, ptb, start, (size_t)(ln - start), out, &count);
      start = ln;
      in_batch = 0;
    }
    if (begins) in_batch++;
    ln = nl ? nl + 1 : NULL;
  }
  if (in_batch) parse(path, ptb, start, strlen(start), out, &count);
  free(text);
  *nb = count;
  return out;
}

double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void bench_print_times(double *ms, int n, int batch) {
  qsort(ms, (size_t)n, sizeof *ms, cmp_double);
  double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  printf("time: median_ms=%.4f p10_ms=%.4f p90_ms=%.4f batches=%d batch_size=%d\n", median,
         ms[(n - 1) / 10], ms[(n - 1) - (n - 1) / 10], n, batch);
}
