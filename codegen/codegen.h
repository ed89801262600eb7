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

/* ---- calls of their own signature (ctx repl) --------------------------------
 * A C function around [k] run on a structure of one node, for kernels whose
 * every value is the same at each node (an expression, a call of a def):
 *
 *   float|void NAME(T0 a0, T1 a1, ...)      Ti: float* (CG_ARG_PTR) or float
 *
 * Buffer b of [k] is parameter buf_arg[b] (a float by value is spilled to
 * memory), or, for buf_arg[b] < 0, made by the function for one node and
 * freed before it returns (levels, dependencies, zeroed values, results and
 * scratch; PACKED buffers cannot be made: compile without register tiles).
 * After the kernel ran, result r — the values [res_off[r], res_off[r] +
 * res_size[r]) of row 0 of k->out_buf — is copied to the float* parameter
 * res_arg[r], or, for res_arg[r] < 0 (one result of size 1 at most), returned;
 * without such a result the function returns void. The caller builds the
 * matching call at run time (ctx repl: a libffi ffi_cif). */
typedef enum { CG_ARG_PTR, CG_ARG_F32 } CgArgKind;

typedef struct {
  const char *name;      /* the function's symbol (distinct from k->name) */
  int nargs;
  const CgArgKind *args; /* [nargs] */
  const int *buf_arg;    /* [k->nbufs] */
  int nresults;
  const long *res_off, *res_size;
  const int *res_arg;    /* [nresults] */
} CgCall;

typedef struct CgProfile CgProfile;

/* What cg_jit_compile_with compiles, beside the defaults (NULL: all of them):
 * [passes] another pass pipeline (NULL: "default<O3>") or [fast_isel] the
 * fast code generator (ctx repl compiles for latency); with [call] the call
 * function above, whose address cg_jit_call_entry gives (the kernel itself
 * is then internal, inlined into it); [profile] an instrumented kernel
 * (profiling, below; NULL: the plain one); [jitdump] linked with
 * RuntimeDyld and LLVM's perf JIT event listener, which writes the code and
 * its symbols to a jitdump file (jit-PID.dump under $JITDUMPDIR or $HOME,
 * .debug/jit/) for `perf record -k 1` + `perf inject --jit` — where this LLVM
 * was built with perf support (cg_jit_dumping); [cache_dir] a directory of
 * compiled kernels (cg_cache.c: an object made before by this same program
 * for the same module, pipeline and CPU is linked without optimizing and
 * compiling again, and a new one is kept there; NULL: no cache). */
typedef struct {
  const char *passes;
  const CgCall *call;
  bool fast_isel;
  const CgProfile *profile;
  bool jitdump;
  const char *cache_dir;
} CgJitOptions;

/* cg_jit_compile with options [o]. NULL after reporting an internal compiler
 * error to [diag]. */
CgJit *cg_jit_compile_with(const IlirKernel *k, const CgJitOptions *o, CtxDiag *diag);

/* The call function of a jit made with CgJitOptions.call; valid until
 * cg_jit_free. */
void *cg_jit_call_entry(const CgJit *jit);

/* A 64-bit hash of the host kernel of [k] as emitted, before optimization:
 * kernels with equal hashes are the same code (ctx tune measures plans that
 * lower to one kernel once). False after reporting an internal compiler
 * error to [diag]. */
bool cg_kernel_fingerprint(const IlirKernel *k, uint64_t *hash, CtxDiag *diag);

/* Appends the optimized LLVM IR of [k] for the CPU [cpu] (as
 * cg_emit_objects_cpu takes it; NULL: this host's) as text to [out] (ctx check
 * --dump=llvm). Returns false after reporting an internal compiler error to
 * [diag]. */
bool cg_emit_llvm(CtxBuf *out, const IlirKernel *k, const char *cpu, CtxDiag *diag);

/* Appends the assembly of [k] for the CPU [cpu] (NULL: this host's) to [out]
 * (--emit=asm). Returns false after reporting an internal compiler error to
 * [diag]. */
bool cg_emit_asm(CtxBuf *out, const IlirKernel *k, const char *cpu, CtxDiag *diag);

/* Writes [k] as position-independent object code (default<O3> as the JIT
 * does) for the CPU [cpu]: NULL or "native" (the host's name and features),
 * "generic" (any x86-64: SSE2), "x86-64-v3" (AVX2, FMA) or "x86-64-v4"
 * (AVX-512), the x86-64 psABI levels, so that a library runs on machines
 * other than the one that built it. The kernel's symbol is k->name, and it
 * calls libm (tanhf, ...). Where the host has two CPUs it compiles on two
 * threads (cg_split.c): the object goes to [path] and, when it was compiled
 * in two parts, the second part to [path2] (else [path2], when given, is
 * removed); both link into one kernel. Returns the files written (1 or 2),
 * 0 after reporting an internal compiler error to [diag] (LLVM's message,
 * or a file it cannot write). */
int cg_emit_objects_cpu(const IlirKernel *k, const char *path, const char *path2,
                        const char *cpu, CtxDiag *diag);

/* Whether [cpu] is a CPU cg_emit_objects_cpu takes on this host (the x86-64
 * levels only on an x86-64 host). */
bool cg_cpu_valid(const char *cpu);

/* The vector registers the kernel for [cpu] (as cg_emit_objects_cpu takes it;
 * NULL: the host) is emitted for, floats per register and registers: what
 * register tiles are sized for (SchedPlan vec_floats, vec_regs). */
void cg_cpu_vectors(const char *cpu, int *floats, int *regs);

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
/* Does [k]'s kernel spread sums over the whole grid (a GRID loop), so that it
 * wants every co-resident block whatever the width of its levels? */
bool cg_gpu_all_blocks(const IlirKernel *k);

/* The nodes of a level one block of [k] takes at a time: its warps where
 * [k]'s nodes are on warps (ILIR_BIND_NODE_WARP), else 1. */
int cg_gpu_nodes_per_block(const IlirKernel *k);

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

struct CgProfile {
  CgProfRegion *regions;
  int n;
};

enum { CG_PROF_CYCLES, CG_PROF_RUNS, CG_PROF_ITERS, CG_PROF_BYTES, CG_PROF_FIELDS };

/* The regions of [k] in program order, parents before their children (a
 * malloc'd plan; free it with cg_profile_free). */
CgProfile *cg_profile_plan(const IlirKernel *k);
void cg_profile_free(CgProfile *p);

/* Whether [jit] was compiled with a jitdump being written. */
bool cg_jit_dumping(const CgJit *jit);

/* Whether [jit]'s object came from the kernel cache (CgJitOptions.cache_dir)
 * rather than LLVM's optimizer and code generator. */
bool cg_jit_cached(const CgJit *jit);


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
