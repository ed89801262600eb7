/* codegen.h — the CPU backend: ILIR kernels to LLVM IR, optimized and
 * compiled in process (ORC LLJIT) or written as text.
 *
 * One ILIR kernel becomes one LLVM function of exactly the calling
 * convention of ilir.h:
 *
 *   void NAME(void *const *bufs, int64_t num_nodes, int64_t num_levels);
 *
 * Loops become basic blocks with an i64 phi induction variable, reductions
 * inner loops with a float phi accumulator, elementwise functions LLVM
 * intrinsics where they exist (llvm.exp/log/sqrt/fabs.f32) and libm calls
 * otherwise (tanhf). The body is emitted into an internal function whose
 * buffer arguments are `noalias` (the caller passes distinct buffers), and
 * the module is optimized with `default<O3>` for the host CPU, so the
 * vectorizer has the host's cost model. Floating-point arithmetic is strict
 * except the accumulators of reductions, which may be reassociated (and so
 * vectorized): results differ from a serial float32 sum by rounding only.
 *
 * The library never prints or exits: LLVM failures are internal compiler
 * errors on the CtxDiag passed in, with LLVM's message.
 */
#ifndef CTX_CODEGEN_H
#define CTX_CODEGEN_H

#include "ilir/ilir.h"

/* The compiled kernel (ilir.h's calling convention). */
typedef void (*CgKernelFn)(void *const *bufs, int64_t num_nodes, int64_t num_levels);

typedef struct CgJit CgJit;

/* Compiles [k] for the host CPU. Returns the JIT holding the code, or NULL
 * after reporting an internal compiler error to [diag]. */
CgJit *cg_jit_compile(const IlirKernel *k, CtxDiag *diag);

/* The entry point of the kernel [jit] holds; valid until cg_jit_free. */
CgKernelFn cg_jit_kernel(const CgJit *jit);

/* Frees [jit] and its code. NULL is allowed. */
void cg_jit_free(CgJit *jit);

/* Appends the optimized LLVM IR of [k] as text to [out] (ctx check
 * --dump=llvm). Returns false after reporting an internal compiler error to
 * [diag]. */
bool cg_emit_llvm(CtxBuf *out, const IlirKernel *k, CtxDiag *diag);

/* Appends the host assembly of [k] to [out] (--emit=asm). Returns false
 * after reporting an internal compiler error to [diag]. */
bool cg_emit_asm(CtxBuf *out, const IlirKernel *k, CtxDiag *diag);

/* Writes [k] as a position-independent object file for the host CPU (its name
 * and features, default<O3> as the JIT does) to [path]; the kernel's symbol is
 * k->name, and it calls libm (tanhf, ...). Returns false after reporting an
 * internal compiler error to [diag] (LLVM's message, or a file it cannot
 * write). */
bool cg_emit_object(const IlirKernel *k, const char *path, CtxDiag *diag);

#endif
