/* ctxrt_team.c — the thread team a compiled model runs its kernel on
 * (ctxrt.h, "Compiled models").
 *
 * A team of n threads is the caller (tid 0) and n - 1 workers created once.
 * A run writes the job's fields and then bumps the job number (release); the
 * workers, polling it (acquire), each call the job's prelude (the host's
 * own work split over the team, if any) and the kernel with their tid and
 * count down `pending`, which the caller, after its own share, polls down to
 * zero. Between runs a worker polls for about SPIN_NS before it sleeps on a
 * condition variable (then the run wakes it): back-to-back inferences — a
 * serving loop, a benchmark — start in well under a microsecond instead of
 * the ~10 us of a wake-up, and an idle model costs no CPU. Inside the kernel
 * the threads meet at ctxrt__team_barrier once per level: a counter and a
 * generation (C11 atomics), the last thread to arrive resets the counter and
 * publishes the next generation with release order, the others spin on it
 * with acquire order (then yield, the cores may be shared), so the stores of
 * a level happen before every read of the next.
 */
#include "ctxrt_int.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

enum { SPINS = 2000 };             /* polls of a barrier's generation before yielding */
enum { SPIN_NS = 200 * 1000 };     /* how long an idle worker polls before it sleeps */

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
  pthread_cond_t wake;
  int64_t sleepers;       /* guarded by mu: workers waiting on wake */
  atomic_uint_fast64_t job;    /* bumped per run, after the job's fields */
  atomic_int_fast64_t pending; /* workers still running the job */
  atomic_bool quit;
  const CtxrtPrelude *prelude; /* the job: written before job is bumped */
  CtxrtKernelFn kernel;
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

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The next job number after [seen] (or anything once the team quits):
 * polled for SPIN_NS, then waited for on the condition variable. */
static uint64_t next_job(CtxrtTeam *t, uint64_t seen) {
  uint64_t job;
  int64_t start = now_ns();
  for (int poll = 1;; poll++) {
    job = atomic_load_explicit(&t->job, memory_order_acquire);
    if (job != seen || atomic_load_explicit(&t->quit, memory_order_acquire)) return job;
    if (poll % 64 == 0 && now_ns() - start > SPIN_NS) break;
  }
  pthread_mutex_lock(&t->mu);
  t->sleepers++;
  while ((job = atomic_load_explicit(&t->job, memory_order_acquire)) == seen &&
         !atomic_load_explicit(&t->quit, memory_order_acquire))
    pthread_cond_wait(&t->wake, &t->mu);
  t->sleepers--;
  pthread_mutex_unlock(&t->mu);
  return job;
}

static void *worker_main(void *arg) {
  const Worker *w = arg;
  CtxrtTeam *t = w->team;
  uint64_t seen = 0;
  for (;;) {
    seen = next_job(t, seen);
    if (atomic_load_explicit(&t->quit, memory_order_acquire)) break;
    if (t->prelude) t->prelude->fn(t->prelude->arg, w->tid, t->n, ctxrt__team_barrier, t);
    t->kernel(t->bufs, t->num_nodes, t->num_levels, w->tid, t->n, ctxrt__team_barrier, t);
    atomic_fetch_sub_explicit(&t->pending, 1, memory_order_release);
  }
  return NULL;
}

/* Wakes the sleeping workers after the job number or quit changed. The
 * sleepers check both under the mutex, so none misses the change. */
static void wake_sleepers(CtxrtTeam *t) {
  pthread_mutex_lock(&t->mu);
  if (t->sleepers) pthread_cond_broadcast(&t->wake);
  pthread_mutex_unlock(&t->mu);
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
  atomic_init(&t->job, 0);
  atomic_init(&t->pending, 0);
  atomic_init(&t->quit, false);
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

void ctxrt__team_run(CtxrtTeam *t, const CtxrtPrelude *prelude, CtxrtKernelFn kernel,
                     void *const *bufs, int64_t num_nodes, int64_t num_levels) {
  if (!t || t->n == 1) {
    if (prelude) prelude->fn(prelude->arg, 0, 1, serial_barrier, NULL);
    kernel(bufs, num_nodes, num_levels, 0, 1, serial_barrier, NULL);
    return;
  }
  t->prelude = prelude; /* no worker reads these until the job number moves */
  t->kernel = kernel;
  t->bufs = bufs;
  t->num_nodes = num_nodes;
  t->num_levels = num_levels;
  atomic_store_explicit(&t->pending, t->started, memory_order_relaxed);
  atomic_fetch_add_explicit(&t->job, 1, memory_order_release);
  wake_sleepers(t);
  if (prelude) prelude->fn(prelude->arg, 0, t->n, ctxrt__team_barrier, t);
  kernel(bufs, num_nodes, num_levels, 0, t->n, ctxrt__team_barrier, t);
  for (int spin = 0; atomic_load_explicit(&t->pending, memory_order_acquire); spin++)
    if (spin >= SPINS) sched_yield();
}

void ctxrt__team_destroy(CtxrtTeam *t) {
  if (!t) return;
  atomic_store_explicit(&t->quit, true, memory_order_release);
  wake_sleepers(t);
  for (int64_t i = 0; i < t->started; i++) pthread_join(t->threads[i], NULL);
  pthread_cond_destroy(&t->wake);
  pthread_mutex_destroy(&t->mu);
  free(t->threads);
  free(t->workers);
  free(t);
}
