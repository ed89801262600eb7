/* driver_jit.c — ctx run's compiled path: a JIT-compiled kernel run over a
 * linearized forest.
 *
 *   forest --ctxrt_linear_fill--> levels, dep, num_deps, val, ival
 *   buffers (ilir.h's IlirBuf list): PARAM -> the float32 weights, VALUES /
 *   IVALUES / NUM_DEPS / LEVELS -> the linearizer's arrays, DEP -> a copy
 *   with every absent slot (-1) pointing at row num_nodes, RESULT / SCRATCH
 *   -> (num_nodes + 1) rows, the last RESULT row zero
 *   kernel(bufs, num_nodes, num_levels) --> output rows gathered in the
 *   forest's order
 *
 * The forest must have been validated against the program (word ids in
 * range, values where the model reads them): the kernel checks nothing.
 */
#include "driver/driver_jit.h"

#include <stdlib.h>
#include <string.h>

void ctx_jit_exec_init(CtxJitExec *x, const RaProgram *p, const IlirKernel *k,
                       CgKernelFn fn, const CtxrtWeights *weights) {
  memset(x, 0, sizeof *x);
  x->p = p;
  x->k = k;
  x->fn = fn;
  x->weights = weights;
  size_t n = (size_t)k->nbufs + 1;
  x->bufs = calloc(n, sizeof *x->bufs);
  x->rows = calloc(n, sizeof *x->rows);
  x->rows_cap = calloc(n, sizeof *x->rows_cap);
  if (!x->bufs || !x->rows || !x->rows_cap) ctx_oom();
  for (int b = 0; b < k->nbufs; b++)
    if (k->bufs[b].kind == ILIR_BUF_PARAM) {
      const CtxrtTensor *t = ctxrt_weights_find(weights, p->params[k->bufs[b].index].name);
      x->bufs[b] = t ? t->data : NULL;
    }
}

void ctx_jit_exec_free(CtxJitExec *x) {
  if (x->rows)
    for (int b = 0; b < x->k->nbufs; b++) free(x->rows[b]);
  free(x->rows);
  free(x->rows_cap);
  free(x->bufs);
  free(x->dep);
  ctxrt_linear_destroy(x->lin);
  memset(x, 0, sizeof *x);
}

int64_t ctx_jit_rows(const CtxrtForest *forest, bool all_nodes) {
  return all_nodes ? forest->num_nodes : ctxrt_forest_outputs(forest, NULL);
}

/* A RESULT or SCRATCH buffer of num_nodes + 1 rows; the last row zero. */
static float *node_rows(CtxJitExec *x, int b, int64_t num_nodes) {
  size_t size = (size_t)x->k->bufs[b].size;
  size_t need = ((size_t)num_nodes + 1) * size + 1;
  if (need > x->rows_cap[b]) {
    free(x->rows[b]);
    x->rows[b] = calloc(need, sizeof(float));
    if (!x->rows[b]) ctx_oom();
    x->rows_cap[b] = need;
  }
  memset(x->rows[b] + (size_t)num_nodes * size, 0, size * sizeof(float));
  return x->rows[b];
}

/* lin->dep with the absent slots (-1) pointing at the zero row num_nodes. */
static int32_t *dep_rows(CtxJitExec *x, const CtxrtLinear *lin) {
  size_t n = (size_t)lin->num_nodes * (size_t)lin->max_deps + 1;
  if (n > x->dep_cap) {
    free(x->dep);
    x->dep = ctx_xmalloc(n * sizeof *x->dep);
    x->dep_cap = n;
  }
  for (size_t i = 0; i + 1 < n; i++) x->dep[i] = lin->dep[i] < 0 ? lin->num_nodes : lin->dep[i];
  return x->dep;
}

/* Points every non-parameter buffer at this batch's data. */
static void bind_buffers(CtxJitExec *x, const CtxrtLinear *lin) {
  for (int b = 0; b < x->k->nbufs; b++) {
    void *data = NULL;
    switch (x->k->bufs[b].kind) {
    case ILIR_BUF_PARAM: continue;
    case ILIR_BUF_VALUES: data = lin->val; break;
    case ILIR_BUF_IVALUES: data = lin->ival; break;
    case ILIR_BUF_DEP: data = dep_rows(x, lin); break;
    case ILIR_BUF_NUM_DEPS: data = lin->num_deps; break;
    case ILIR_BUF_LEVELS: data = lin->level_start; break;
    case ILIR_BUF_RESULT:
    case ILIR_BUF_SCRATCH: data = node_rows(x, b, lin->num_nodes); break;
    }
    x->bufs[b] = data ? data : x->none;
  }
}

CtxrtStatus ctx_jit_exec_run(CtxJitExec *x, const CtxrtForest *forest, bool all_nodes,
                             float *out, CtxrtError *err) {
  const IlirKernel *k = x->k;
  CtxrtStatus st;
  int32_t v = (int32_t)x->p->values_per_node, deps = (int32_t)x->p->max_arity;
  if (!x->lin)
    st = ctxrt_linear_create(forest, v, deps, &x->lin, err);
  else
    st = ctxrt_linear_fill(x->lin, forest, v, deps, err);
  if (st) return st;
  const CtxrtLinear *lin = x->lin;
  bind_buffers(x, lin);
  x->fn(x->bufs, lin->num_nodes, lin->num_levels);
  const float *res = x->rows[k->out_buf];
  size_t stride = (size_t)k->bufs[k->out_buf].size, size = (size_t)k->out_size;
  int64_t rows = all_nodes ? lin->num_nodes : lin->num_outputs;
  for (int64_t r = 0; r < rows; r++) {
    size_t node = (size_t)(all_nodes ? lin->to_new[r] : lin->outputs[r]);
    memcpy(out + (size_t)r * size, res + node * stride + (size_t)k->out_off,
           size * sizeof(float));
  }
  return CTXRT_OK;
}
