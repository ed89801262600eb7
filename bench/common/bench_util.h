/* bench_util.h — what the bench programs share: reading an input file as
 * batches of parsed structures, the clock, and the timing line of
 * `ctx run --time`. */
#ifndef CTX_BENCH_UTIL_H
#define CTX_BENCH_UTIL_H

#include "runtime/ctxrt.h"

#include <stdbool.h>
#include <stddef.h>

/* Prints "PROG: what: msg" and exits with status 1. */
void bench_die(const char *what, const char *msg);

/* 64-byte aligned memory for [n] bytes; exits when there is none. */
void *bench_xmalloc(size_t n);

/* The structures of [path] (bracketed trees when [ptb], else node lists) in
 * batches of [batch], each parsed into a forest; their number in [*nb]. */
CtxrtForest **bench_read_batches(const char *path, bool ptb, int batch, int *nb);

double bench_now_ms(void);

/* Sorts [ms] and prints
 *   time: median_ms=M p10_ms=P p90_ms=Q batches=N batch_size=B */
void bench_print_times(double *ms, int n, int batch);

/* The name bench_die prints. */
extern const char *bench_prog;

#endif
