/* ctxrt_team.c — the thread team a compiled model runs its kernel on
 * (ctxrt.h, "Compiled models").
 *
 * A team of n threads is the caller (tid 0) and n - 1 workers created once and
 * parked on a condition variable between runs. A run publishes the job under
 * the mutex, bumps the job number and wakes the workers; every thread calls the
 * kernel with its tid; the caller then waits until every worker has finished.
 * Inside the kernel the threads meet at ctxrt__team_barrier once per level: a
 * counter and a generation (C11 atomics), the last thread to arrive resets the
 * counter and publishes the next generation with release order, the others
 * spin on it with acquire order (then yield, the cores may be shared), so the
 * stores of a level happen before every read of the next.
 */
#include "ctxrt_int.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

enum { SPINS = 2000 }; /* polls of the generation before yielding */

typedef struct {
  CtxrtTeam *team;
  int64_t tid;
} Worker;

struct CtxrtTeam {
  int64_t n;              /* threads, the caller's included */
  int64_t started;        /* workers created */
  pthread_t *threads;     /* [n - 1] */
  Worker *workers;        /* [n - 1] */
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  uint64_t job;           /* guarded by mu: bumped per run */
  int64_t pending;        /* guarded by mu: workers still running the job */
  bool quit;              /* guarded by mu */
  CtxrtKernelFn kernel;   /* the job, written under mu */
  void *const *bufs;
  int64_t num_nodes, num_levels;
  atomic_int_fast64_t arrived; /* threads at the barrier */
  atomic_uint_fast64_t gen;    /* barrier generation */
};

void ctxrt__team_barrier(void *ctx) {
  CtxrtTeam *t = ctx;
  uint_fast64_t gen = atomic_load_explicit(&t->gen, memory_order_acquire);
  if (atomic_fetch_add_explicit(&t->arrived, 1, memory_order_acq_rel) == t->n - 1) {
    atomic_store_explicit(&t->arrived, 0, memory_order_relaxed);
    atomic_store_explicit(&t->gen, gen + 1, memory_order_release);
    return;
  }
  for (int spin = 0; atomic_load_explicit(&t->gen, memory_order_acquire) == gen; spin++)
    if (spin >= SPINS) sched_yield();
}

static void *worker_main(void *arg) {
  const Worker *w = arg;
  CtxrtTeam *t = w->team;
  uint64_t seen = 0;
  pthread_mutex_lock(&t->mu);
  for (;;) {
    while (!t->quit && t->job == seen) pthread_cond_wait(&t->wake, &t->mu);
    if (t->quit) break;
    seen = t->job;
    CtxrtKernelFn kernel = t->kernel;
    void *const *bufs = t->bufs;
    int64_t nn = t->num_nodes, nl = t->num_levels;
    pthread_mutex_unlock(&t->mu);
    kernel(bufs, nn, nl, w->tid, t->n, ctxrt__team_barrier, t);
    pthread_mutex_lock(&t->mu);
    if (--t->pending == 0) pthread_cond_signal(&t->done);
  }
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

CtxrtTeam *ctxrt__team_create(int64_t n) {
  CtxrtTeam *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->threads = calloc((size_t)n, sizeof *t->threads);
  t->workers = calloc((size_t)n, sizeof *t->workers);
  if (!t->threads || !t->workers || pthread_mutex_init(&t->mu, NULL)) {
    free(t->threads);
    free(t->workers);
    free(t);
    return NULL;
  }
  pthread_cond_init(&t->wake, NULL);
  pthread_cond_init(&t->done, NULL);
  atomic_init(&t->arrived, 0);
  atomic_init(&t->gen, 0);
  for (int64_t i = 0; i + 1 < n; i++) {
    t->workers[i] = (Worker){t, i + 1};
    if (pthread_create(&t->threads[i], NULL, worker_main, &t->workers[i])) break;
    t->started++;
  }
  t->n = t->started + 1; /* fewer threads when the system refuses more */
  return t;
}

int64_t ctxrt__team_size(const CtxrtTeam *t) { return t ? t->n : 1; }

static void serial_barrier(void *ctx) { (void)ctx; }

void ctxrt__team_run(CtxrtTeam *t, CtxrtKernelFn kernel, void *const *bufs,
                     int64_t num_nodes, int64_t num_levels) {
  if (!t || t->n == 1) {
    kernel(bufs, num_nodes, num_levels, 0, 1, serial_barrier, NULL);
    return;
  }
  pthread_mutex_lock(&t->mu);
  t->kernel = kernel;
  t->bufs = bufs;
  t->num_nodes = num_nodes;
  t->num_levels = num_levels;
  t->pending = t->started;
  t->job++;
  pthread_cond_broadcast(&t->wake);
  pthread_mutex_unlock(&t->mu);
  kernel(bufs, num_nodes, num_levels, 0, t->n, ctxrt__team_barrier, t);
  pthread_mutex_lock(&t->mu);
  while (t->pending) pthread_cond_wait(&t->done, &t->mu);
  pthread_mutex_unlock(&t->mu);
}

void ctxrt__team_destroy(CtxrtTeam *t) {
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  t->quit = true;
  pthread_cond_broadcast(&t->wake);
  pthread_mutex_unlock(&t->mu);
  for (int64_t i = 0; i < t->started; i++) pthread_join(t->threads[i], NULL);
  pthread_cond_destroy(&t->wake);
  pthread_cond_destroy(&t->done);
  pthread_mutex_destroy(&t->mu);
  free(t->threads);
  free(t->workers);
  free(t);
}
