/* codegen.h — the CPU backend: ILIR kernels to LLVM IR, optimized and
 * compiled in process (ORC LLJIT) or written as text.
 *
 * One ILIR kernel becomes one LLVM function of the calling convention:
 *
 *   void NAME(void *const *bufs, int64_t num_nodes, int64_t num_levels,
 *             int64_t tid, int64_t nthreads, void (*barrier)(void *),
 *             void *barrier_ctx);
 *
 * (ilir.h's, plus a thread team). Every thread of a team of nthreads >= 1
 * calls it with the same buffers and its own tid in [0, nthreads). A loop of
 * kind ILIR_LOOP_NODES over [lo, hi) runs only this thread's contiguous share:
 * chunk = ceil((hi - lo) / nthreads), [lo + tid * chunk, min(hi, lo + (tid + 1)
 * * chunk)). The body of an ILIR_LOOP_LEVELS loop ends with one call of
 * barrier(barrier_ctx), which must return only once every thread of the team
 * has called it (and publish their stores); with nthreads == 1 it is never
 * called (it may be NULL), nor after a level of one node that is the last
 * or followed by another level of one node (thread 0 computes both). Each node is computed by one thread with the same
 * operations, so results do not depend on nthreads. A kernel with stores
 * outside NODES loops must run with nthreads == 1.
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
typedef void (*CgKernelFn)(void *const *bufs, int64_t num_nodes, int64_t num_levels,
                           int64_t tid, int64_t nthreads, void (*barrier)(void *),
                           void *barrier_ctx);

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

/* ---- the CUDA target (cg_nvptx.c, docs/cuda.md) ------------------------------
 * The same ILIR through the same emitter for nvptx64-nvidia-cuda: one
 * `.visible .entry` k->name(bufs, num_nodes, num_levels, counter), run as
 * one cooperative launch of blocks of CG_GPU_BLOCK_THREADS threads (any
 * number of co-resident blocks); bufs is a device array of the buffers'
 * device pointers, counter a u32 zeroed before the launch (the grid
 * barrier's). */
typedef enum { CG_TARGET_CPU, CG_TARGET_NVPTX } CgTargetKind;

enum { CG_GPU_BLOCK_THREADS = 256 };

/* Appends the PTX of [k] for the GPU architecture [arch] ("sm_90") to
 * [out], or with [llvm_ir] the optimized NVPTX LLVM IR. Returns false after
 * reporting an internal compiler error to [diag]. */
bool cg_emit_ptx(CtxBuf *out, const IlirKernel *k, const char *arch, bool llvm_ir,
                 CtxDiag *diag);

/* The dynamic shared memory [k]'s kernel needs per block, in bytes (the
 * parameters it caches there). */
long cg_gpu_shared_bytes(const IlirKernel *k);

#endif
