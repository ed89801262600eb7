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

/* ---- profiling and perf (ctx run --profile, --perf-map; cg_profile.c) ----
 *
 * A profiled kernel brackets each top-level statement of its body (a levels
 * loop, a prologue loop) and each top-level statement of a levels loop's
 * body (a node loop: one operator or a fused group) with reads of the cycle
 * counter (llvm.readcyclecounter). Thread 0 alone adds, per region, the
 * cycles, the executions, the iterations (a node loop's nodes over its whole
 * range: every thread's share; a levels loop's levels) and the bytes of
 * parameters it read into a global array of the module (CG_PROF_FIELDS
 * int64 per region). An unprofiled kernel is exactly the plain one. */

/* One profiled region of a kernel. */
typedef struct {
  char *name;     /* "leaf level", "inner levels", "cell.mm1 (tile 4x64) + g" */
  int parent;     /* the enclosing region's index, -1 at the top */
  const IlirStmt *stmt;
  bool node_loop; /* iterations are nodes (a NODES or PARALLEL loop) */
  /* FLOPs per iteration: 2 per multiply-add of the sum reductions (a matrix
   * product's work; elementwise operations are not counted), -1 when a
   * trip count is not a constant */
  double flops;
  int nparams;    /* parameter buffers read: [size, loads per iteration] */
  long (*params)[2];
} CgProfRegion;

typedef struct {
  CgProfRegion *regions;
  int n;
} CgProfile;

enum { CG_PROF_CYCLES, CG_PROF_RUNS, CG_PROF_ITERS, CG_PROF_BYTES, CG_PROF_FIELDS };

/* The regions of [k] in program order, parents before their children (a
 * malloc'd plan; free it with cg_profile_free). */
CgProfile *cg_profile_plan(const IlirKernel *k);
void cg_profile_free(CgProfile *p);

/* What cg_jit_compile_with compiles: [profile] NULL for the plain kernel;
 * [jitdump]: link with RuntimeDyld and LLVM's perf JIT event listener, which
 * writes the code and its symbols to a jitdump file (jit-PID.dump under
 * $JITDUMPDIR or $HOME, .debug/jit/) for `perf record -k 1` + `perf inject
 * --jit` — where this LLVM was built with perf support (cg_jit_dumping). */
typedef struct {
  const CgProfile *profile;
  bool jitdump;
} CgJitOptions;

/* Whether [jit] was compiled with a jitdump being written. */
bool cg_jit_dumping(const CgJit *jit);

/* cg_jit_compile with [opts]. */
CgJit *cg_jit_compile_with(const IlirKernel *k, const CgJitOptions *opts, CtxDiag *diag);

/* The counters of a kernel compiled with a profile: profile->n *
 * CG_PROF_FIELDS int64 (zero them to start over); NULL without a profile. */
int64_t *cg_jit_counters(const CgJit *jit);

/* The cycle counter the profiled kernel reads, now (0 without a profile). */
uint64_t cg_jit_cycles(const CgJit *jit);

/* A function of the compiled code: its name, address and size in bytes. */
typedef struct {
  char *name;
  uint64_t addr, size;
} CgJitSym;

/* The functions [jit]'s code holds (from its object file's symbol table),
 * into [*syms] (owned by [jit]); returns their number. */
int cg_jit_symbols(const CgJit *jit, const CgJitSym **syms);

#endif
