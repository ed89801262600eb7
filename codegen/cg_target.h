/* cg_target.h — what the one ILIR emitter (cg_emit.c) asks of a target.
 *
 * cg_emit.c translates ILIR to LLVM IR once for every target; where the CPU
 * and an NVIDIA GPU differ it calls the hooks below. The CPU target has none
 * (every hook NULL: the emitter's own code is the CPU's — a thread team, a
 * barrier call between fences, libm where cg_math.c has no version, host
 * vector widths, the exported team entry point); the NVPTX target
 * (cg_nvptx.c) has all of them:
 *
 *   team index        the kernel's tid / nthreads: the global thread index
 *                     and count (each GPU thread is a thread of the team)
 *   bound loops       ILIR_BIND_BLOCK: nodes shared among the blocks by
 *                     block index; ILIR_BIND_THREAD: iterations shared among
 *                     the block's threads, then a block barrier (bar.sync);
 *                     ILIR_BIND_WARP: iterations shared among the block's
 *                     warps, each one's sum among the warp's lanes, folded
 *                     by butterfly shuffles (shfl.sync.bfly), then bar.sync;
 *                     ILIR_BIND_NODE_WARP: nodes shared among the grid's
 *                     warps, the THREAD / WARP loops of a node's body then
 *                     the warp's (lanes; one sum at a time), each followed by
 *                     the warp's barrier (bar.warp.sync)
 *   barriers          the grid barrier (inline PTX, TOOLCHAIN.md "CUDA")
 *                     instead of the team's barrier call and the fences
 *                     (LLVM 19 cannot select fences for NVPTX)
 *   math              exp / tanh / sigmoid always from cg_math.c, log from
 *                     lg2.approx (llvm.exp/log and libm calls do not lower)
 *   buffers           writable buffers are not `noalias` (the barriers are
 *                     inline asm, which alias analysis would otherwise move
 *                     their accesses across); read-only ones stay noalias
 *                     and their loads are invariant (ld.global.nc)
 *   entry point       a .entry kernel (bufs, num_nodes, num_levels,
 *                     barrier counter), buffers cached in shared memory
 *                     copied in first
 *
 * The pass pipeline (default<O3>) is the same; the emission differs: objects
 * and host assembly for the CPU (cg_jit.c), PTX text for NVPTX (cg_ptx.c).
 */
#ifndef CTX_CG_TARGET_H
#define CTX_CG_TARGET_H

#include "codegen/cg_int.h"

typedef enum { CG_SREG_TID, CG_SREG_NTID, CG_SREG_CTAID, CG_SREG_NCTAID } CgSreg;

typedef struct CgTarget {
  CgTargetKind kind;
  int vec_floats, vec_regs;   /* 0: the host's (cg_emit.c) */
  long block_threads;         /* threads per block (NVPTX), a constant step */
  bool alias_writable;        /* writable buffers may not be noalias */
  bool invariant_readonly;    /* loads of read-only buffers are !invariant.load
                                 (NVPTX: ld.global.nc through the pointer table),
                                 except of those copied into shared memory */
  /* a special register (NVPTX), as i64 at [b] */
  LLVMValueRef (*sreg)(LLVMBuilderRef b, LLVMModuleRef mod, CgSreg which);
  /* the grid barrier at [b] on the counter [counter] (a pointer) */
  void (*grid_barrier)(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef counter);
  /* the block barrier at [b] */
  void (*block_barrier)(LLVMBuilderRef b, LLVMModuleRef mod);
  /* the barrier of the warp at [b] (every lane of the warp must reach it;
   * it orders their memory accesses as the block barrier does the block's) */
  void (*warp_barrier)(LLVMBuilderRef b, LLVMModuleRef mod);
  /* the sum of the float [x] over the 32 lanes of the warp, in every lane
   * (every lane of the warp must call it) */
  LLVMValueRef (*warp_sum)(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x);
  /* the float unary ILIR op [op] of [x], or NULL: the emitter's own */
  LLVMValueRef (*math)(LLVMBuilderRef b, LLVMModuleRef mod, int op, LLVMValueRef x);
  /* the exported entry point of [k] calling the internal [body] (codegen.h's
   * body signature) */
  void (*entry)(LLVMBuilderRef b, LLVMModuleRef mod, const IlirKernel *k, LLVMValueRef body);
} CgTarget;

extern const CgTarget cg_target_cpu;
extern const CgTarget cg_target_nvptx;

/* Builds [k] for [t] into [mod] (cg_emit_module for the CPU target). */
bool cg_emit_target_module(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                           const CgTarget *t, CtxDiag *diag);

#endif
