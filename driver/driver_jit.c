/* driver_jit.c — the model descriptor of a compiled kernel: what libctxrt's
 * ctxrt_model_* need to run it (ctx run) or what ctx build writes as C.
 *
 *   RaProgram -> params (declaration order), the input spec (kind, arity,
 *   values per node and where, word bounds), K = max_arity
 *   IlirKernel -> the buffer table (ILIR buffer kinds map one to one onto
 *   CtxrtBufKind), the output's buffer, offset and size
 */
#include "driver/driver_jit.h"
#ifdef CTX_HAVE_JIT
#include "codegen/codegen.h"
#endif

#include <stdlib.h>
#include <string.h>

_Static_assert((int)ILIR_BUF_PARAM == CTXRT_BUF_PARAM && (int)ILIR_BUF_VALUES == CTXRT_BUF_VALUES &&
                   (int)ILIR_BUF_IVALUES == CTXRT_BUF_IVALUES &&
                   (int)ILIR_BUF_RESULT == CTXRT_BUF_RESULT &&
                   (int)ILIR_BUF_SCRATCH == CTXRT_BUF_SCRATCH &&
                   (int)ILIR_BUF_DEP == CTXRT_BUF_DEP &&
                   (int)ILIR_BUF_NUM_DEPS == CTXRT_BUF_NUM_DEPS &&
                   (int)ILIR_BUF_LEVELS == CTXRT_BUF_LEVELS &&
                   (int)ILIR_BUF_PACKED == CTXRT_BUF_PACKED &&
                   (int)ILIR_BUF_LEVEL_SCRATCH == CTXRT_BUF_LEVEL_SCRATCH &&
                   (int)ILIR_BUF_INVARIANT == CTXRT_BUF_INVARIANT &&
                   (int)ILIR_BUF_PHASES == CTXRT_BUF_PHASES &&
                   (int)ILIR_BUF_ARITY_END == CTXRT_BUF_ARITY_END,
               "ILIR and libctxrt buffer kinds differ");

CtxrtParam *ctx_model_params(const RaProgram *p) {
  CtxrtParam *ps = calloc((size_t)p->nparams + 1, sizeof *ps);
  if (!ps) ctx_oom();
  for (int k = 0; k < p->nparams; k++) {
    ps[k].name = p->params[k].name;
    ps[k].ndim = p->params[k].shape.rank;
    for (int d = 0; d < p->params[k].shape.rank; d++)
      ps[k].shape[d] = p->params[k].shape.dims[d];
  }
  return ps;
}

bool ctx_reads_at_internal(const RaProgram *p) {
  for (int k = 0; k < p->ninputs; k++)
    if (p->inputs[k].read_at_internal) return true;
  return false;
}

static CtxrtKind rt_kind(SemaStructKind kind) {
  switch (kind) {
  case SEMA_TREE:
    return CTXRT_TREE;
  case SEMA_DAG:
    return CTXRT_DAG;
  default:
    return CTXRT_SEQUENCE;
  }
}

int64_t *ctx_input_spec(const RaProgram *p, CtxrtSpec *spec) {
  int64_t *bound = calloc((size_t)p->values_per_node + 1, sizeof *bound);
  if (!bound) ctx_oom();
  memset(spec, 0, sizeof *spec);
  spec->kind = rt_kind(p->kind);
  spec->max_arity = (int32_t)p->max_arity;
  spec->num_values = (int32_t)p->values_per_node;
  spec->values_on = ctx_reads_at_internal(p) ? CTXRT_VALUES_ALL : CTXRT_VALUES_LEAVES;
  spec->word_bound = bound;
  for (int k = 0; k < p->ninputs; k++) {
    const RaInput *in = &p->inputs[k];
    if (in->is_int && in->bound > 0)
      for (long v = 0; v < in->row.size; v++) bound[in->offset + v] = in->bound;
  }
  return bound;
}

void ctx_model_desc_init(CtxModelDesc *m, const RaProgram *p, const IlirKernel *k,
                         CtxrtKernelFn fn) {
  memset(m, 0, sizeof *m);
  m->params = ctx_model_params(p);
  m->bufs = calloc((size_t)k->nbufs + 1, sizeof *m->bufs);
  if (!m->bufs) ctx_oom();
  for (int b = 0; b < k->nbufs; b++) {
    m->bufs[b].kind = (int32_t)k->bufs[b].kind;
    m->bufs[b].size = k->bufs[b].size;
    bool param = k->bufs[b].kind == ILIR_BUF_PARAM || k->bufs[b].kind == ILIR_BUF_PACKED;
    m->bufs[b].param = param ? k->bufs[b].index : -1;
    if (k->bufs[b].kind == ILIR_BUF_PACKED) {
      m->bufs[b].off = k->bufs[b].pack.off;
      m->bufs[b].stride = k->bufs[b].pack.stride;
      m->bufs[b].rows = k->bufs[b].pack.rows;
      m->bufs[b].cols = k->bufs[b].pack.cols;
      m->bufs[b].panel = k->bufs[b].pack.panel;
    }
  }
  m->bound = ctx_input_spec(p, &m->desc.spec);
  CtxrtModelDesc *d = &m->desc;
  d->name = p->name;
  d->kernel = fn;
  d->num_bufs = k->nbufs;
  d->bufs = m->bufs;
  d->num_params = p->nparams;
  d->params = m->params;
  d->max_deps = (int32_t)p->max_arity;
  d->out_buf = k->out_buf;
  d->out_off = k->out_off;
  d->out_size = k->out_size;
  d->unread_values = (ilir_kernel_reads(k, k->values_buf) ? 0 : CTXRT_UNREAD_VAL) |
                     (ilir_kernel_reads(k, k->ivalues_buf) ? 0 : CTXRT_UNREAD_IVAL);
  d->balance_threads = k->balance_threads;
}

#ifdef CTX_HAVE_JIT
void ctx_model_desc_cuda(CtxModelDesc *m, const IlirKernel *k, const char *ptx) {
  m->desc.kernel = NULL;
  m->desc.ptx = ptx;
  m->desc.ptx_entry = k->name;
  m->desc.gpu_block_threads = CG_GPU_BLOCK_THREADS;
  m->desc.gpu_shared_bytes = cg_gpu_shared_bytes(k);
  m->desc.gpu_all_blocks = cg_gpu_all_blocks(k);
  m->desc.gpu_nodes_per_block = cg_gpu_nodes_per_block(k);
}
#endif

void ctx_model_desc_free(CtxModelDesc *m) {
  free(m->bufs);
  free(m->params);
  free(m->bound);
  memset(m, 0, sizeof *m);
}
