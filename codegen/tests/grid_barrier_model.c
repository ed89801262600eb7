/* grid_barrier_model.c — the grid barrier protocol of the CUDA kernels
 * (codegen/cg_nvptx.c, TOOLCHAIN.md "CUDA") modelled on the CPU: one thread
 * per block, C11 atomics in the orderings the PTX uses (atom.add.release.gpu,
 * ld.acquire.gpu), stress-tested over many episodes.
 *
 * Episode e: every block writes its slot of row e, then arrives — block 0
 * adds 0x80000001 - nblocks, the others 1, so the episode adds exactly 2^31
 * to the counter, which starts at 0 and is never reset — and waits until bit
 * 31 of the counter differs from the value its own add returned; then it
 * reads every block's slot of row e and of row e - 1 (which no one may have
 * overwritten yet: rows are reused every two episodes) — here row e, the
 * others were checked in the episode before. A block that passed
 * early, a lost update or a missing acquire/release shows as a wrong value
 * (and, under ThreadSanitizer, as a data race).
 *
 *   grid_barrier_model [BLOCKS [EPISODES]]   exit 0 when every check held
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_BLOCKS = 64 };

typedef struct {
  atomic_uint counter;
  unsigned nblocks;
  long episodes;
  long slot[2][MAX_BLOCKS]; /* row e % 2, one slot per block: plain memory */
  atomic_long errors;
} Grid;

typedef struct {
  Grid *g;
  unsigned block;
} Block;

static void grid_barrier(Grid *g, unsigned block) {
  unsigned add = block == 0 ? 0x80000001u - g->nblocks : 1u;
  unsigned old = atomic_fetch_add_explicit(&g->counter, add, memory_order_release);
  /* a GPU block spins; here threads may outnumber cores, so yield */
  while (((atomic_load_explicit(&g->counter, memory_order_acquire) ^ old) & 0x80000000u) == 0)
    sched_yield();
}

static void *run_block(void *arg) {
  Block *b = arg;
  Grid *g = b->g;
  for (long e = 0; e < g->episodes; e++) {
    g->slot[e % 2][b->block] = e * MAX_BLOCKS + b->block;
    grid_barrier(g, b->block);
    for (unsigned o = 0; o < g->nblocks; o++)
      if (g->slot[e % 2][o] != e * MAX_BLOCKS + o) atomic_fetch_add(&g->errors, 1);
    /* row e % 2 is written again at episode e + 2, after everyone passed the
     * barrier of e + 1, so after everyone read it here */
  }
  return NULL;
}

int main(int argc, char **argv) {
  unsigned nblocks = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
  long episodes = argc > 2 ? atol(argv[2]) : 20000;
  if (nblocks < 1 || nblocks > MAX_BLOCKS || episodes < 1) {
    fprintf(stderr, "usage: grid_barrier_model [BLOCKS (1..%d) [EPISODES]]\n", MAX_BLOCKS);
    return 2;
  }
  static Grid g;
  atomic_init(&g.counter, 0);
  atomic_init(&g.errors, 0);
  g.nblocks = nblocks;
  g.episodes = episodes;
  Block b[MAX_BLOCKS];
  pthread_t t[MAX_BLOCKS];
  for (unsigned i = 0; i < nblocks; i++) {
    b[i] = (Block){&g, i};
    if (pthread_create(&t[i], NULL, run_block, &b[i]) != 0) {
      fprintf(stderr, "grid_barrier_model: cannot create thread %u\n", i);
      return 1;
    }
  }
  for (unsigned i = 0; i < nblocks; i++) pthread_join(t[i], NULL);
  /* each episode adds 2^31: the counter's low 31 bits end at 0 */
  unsigned final = atomic_load(&g.counter);
  long errors = atomic_load(&g.errors);
  printf("%u blocks, %ld episodes: %ld wrong reads, counter 0x%08x\n", nblocks, episodes,
         errors, final);
  return errors == 0 && (final & 0x7fffffffu) == 0 ? 0 : 1;
}
