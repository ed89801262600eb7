/* driver_jit.h — ctx run's compiled path (driver_jit.c), private to driver/.
 *
 * A CtxJitExec holds what running one compiled kernel over batch after batch
 * needs: the kernel's buffer table, the linearizer and the per-node buffers,
 * reused from batch to batch when large enough (a timed loop allocates only
 * when a batch is larger than any before it).
 */
#ifndef CTX_DRIVER_JIT_H
#define CTX_DRIVER_JIT_H

#include "codegen/codegen.h"

typedef struct {
  const RaProgram *p;
  const IlirKernel *k;
  CgKernelFn fn;
  const CtxrtWeights *weights;
  void **bufs;         /* [k->nbufs]: what the kernel gets */
  float **rows;        /* [k->nbufs]: RESULT and SCRATCH buffers, owned */
  size_t *rows_cap;    /* [k->nbufs]: their capacities in floats */
  int32_t *dep;        /* the DEP buffer: lin->dep with -1 -> num_nodes */
  size_t dep_cap;
  CtxrtLinear *lin;
  int32_t none[1]; /* the data of buffers with zero-sized rows: never read */
} CtxJitExec;

/* Prepares [x] to run [fn], the kernel [k] lowered from [p], with the
 * parameters of [weights] (checked against [p]). */
void ctx_jit_exec_init(CtxJitExec *x, const RaProgram *p, const IlirKernel *k,
                       CgKernelFn fn, const CtxrtWeights *weights);

/* The number of output rows [forest] gives: its outputs, or its nodes with
 * [all_nodes]. */
int64_t ctx_jit_rows(const CtxrtForest *forest, bool all_nodes);

/* Linearizes [forest] (validated against the program), runs the kernel and
 * writes its output rows (ctx_jit_rows of them, k->out_size floats each) to
 * [out]: one per output node in ctxrt_forest_outputs order, or one per node
 * in the forest's order with [all_nodes]. Returns the linearizer's status
 * with [err] set on failure. */
CtxrtStatus ctx_jit_exec_run(CtxJitExec *x, const CtxrtForest *forest, bool all_nodes,
                             float *out, CtxrtError *err);

void ctx_jit_exec_free(CtxJitExec *x);

#endif
