/* driver_jit.h — a compiled kernel's model descriptor (runtime/ctxrt.h,
 * "Compiled models"), private to driver/.
 *
 * ctx run fills one in for the JIT-compiled kernel and runs it with
 * ctxrt_model_*; ctx build fills in the same one and writes it as C
 * (driver_build.c), so both run through the one runtime implementation. The
 * input spec serves ctx run --interp too.
 */
#ifndef CTX_DRIVER_JIT_H
#define CTX_DRIVER_JIT_H

#include "ilir/ilir.h"

typedef struct {
  CtxrtModelDesc desc;
  CtxrtModelBuf *bufs;  /* [k->nbufs], owned */
  CtxrtParam *params;   /* [p->nparams], owned (names borrowed from [p]) */
  int64_t *bound;       /* [p->values_per_node]: word bounds, owned */
} CtxModelDesc;

/* The model's parameters as libctxrt sees them (a malloc'd array, names
 * borrowed from [p]). */
CtxrtParam *ctx_model_params(const RaProgram *p);

/* Whether a function of [p] reads an input at internal nodes. */
bool ctx_reads_at_internal(const RaProgram *p);

/* What an input of [p] must be (kind, arity, values per node, everywhere or at
 * leaves only, word bounds) into [spec]; returns its word_bound array
 * (malloc'd, free it). */
int64_t *ctx_input_spec(const RaProgram *p, CtxrtSpec *spec);

/* Describes the kernel [k] lowered from [p], entry point [fn] (NULL when the
 * descriptor is only written out). */
void ctx_model_desc_init(CtxModelDesc *m, const RaProgram *p, const IlirKernel *k,
                         CtxrtKernelFn fn);

/* Makes [m] describe the CUDA kernel of [k] whose PTX is [ptx] (borrowed:
 * it must outlive [m]) instead of a CPU entry point (docs/cuda.md). */
void ctx_model_desc_cuda(CtxModelDesc *m, const IlirKernel *k, const char *ptx);

void ctx_model_desc_free(CtxModelDesc *m);

/* Floating-point operations of [p] at one node of [ndeps] dependencies, and
 * over every node of [f], counted on RA (driver_flops.c says how). */
double ctx_flops_node(const RaProgram *p, long ndeps);
double ctx_flops_forest(const RaProgram *p, const CtxrtForest *f);

#endif
