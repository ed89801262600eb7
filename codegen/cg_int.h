/* cg_int.h — declarations shared by the files of codegen/. */
#ifndef CTX_CG_INT_H
#define CTX_CG_INT_H

#include "codegen/codegen.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

/* Builds the kernel function of [k] (codegen.h's calling convention) into
 * the new module [mod] of [ctx]. Returns false after reporting an internal
 * compiler error to [diag] (an ILIR construct it cannot compile). */
bool cg_emit_module(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                    const CgProfile *prof, CtxDiag *diag);

/* The instrumentation of a profiled kernel (cg_profile.c; codegen.h). */

/* The names of [k]'s counters array and cycle-counter function. */
#define CG_PROF_COUNTERS_SUFFIX ".prof"
#define CG_PROF_CYCLES_SUFFIX ".cycles"

/* Adds the counters array of [prof] and the function `i64 NAME.cycles()` to
 * [mod]; returns the array. */
LLVMValueRef cg_prof_globals(LLVMModuleRef mod, const IlirKernel *k, const CgProfile *prof);

/* The region of [prof] that statement [s] is, or -1. */
int cg_prof_region(const CgProfile *prof, const IlirStmt *s);

/* The cycle counter now, at [b]. */
LLVMValueRef cg_prof_now(LLVMBuilderRef b, LLVMModuleRef mod);

/* At [b]: when [tid] is 0, adds to region [r]'s counters the cycles since
 * [t0], one execution, [iters] iterations and the bytes of parameters they
 * read; leaves [b] after it. */
void cg_prof_add(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef counters, LLVMValueRef tid,
                 const CgProfile *prof, int r, LLVMValueRef t0, LLVMValueRef iters);

/* Adds the call function [call] around the kernel of [k] (already emitted
 * into [mod]) and makes the kernel internal (cg_call.c; codegen.h, CgCall).
 * False after reporting an internal compiler error to [diag]. */
bool cg_emit_call(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                  const CgCall *call, CtxDiag *diag);
/* The same for a target whose LLVM feature string is [features] (NULL: the
 * host's): it sets the vector width and register count the emitter plans
 * register tiles with. */
bool cg_emit_module_for(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                        const char *features, const CgProfile *prof, CtxDiag *diag);

/* exp, tanh and sigmoid of the float [x] as straight-line IR at [b]'s
 * position (cg_math.c: accuracy and range there). */
LLVMValueRef cg_math_exp(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x);
LLVMValueRef cg_math_tanh(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x);
LLVMValueRef cg_math_sigmoid(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x);
/* x * y + z (floats or vectors of them), fused where the target has FMA
 * (llvm.fmuladd): one rounding instead of two, half the instructions. */
LLVMValueRef cg_math_fmuladd(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x,
                             LLVMValueRef y, LLVMValueRef z);

/* A TargetMachine for the host CPU (its name and features) at the code
 * generator's level [level], or NULL after reporting an internal compiler
 * error; [pic]: position-independent code for an object file, else for the
 * JIT (cg_jit_compile_with). */
LLVMTargetMachineRef cg_host_machine_at(CtxDiag *diag, bool pic, LLVMCodeGenOptLevel level);

/* The same for the CPU level [cpu] (codegen.h's cg_cpu_valid names; NULL or
 * "native": the host's); [*features] is set to the feature string used
 * (static, or NULL for the host's). */
LLVMTargetMachineRef cg_cpu_machine(CtxDiag *diag, bool pic, const char *cpu,
                                    const char **features);
/* LLVM's command-line options ctx sets (and CTX_LLVM_OPTIONS), once per
 * process, before the first target machine. */
void cg_llvm_options(void);
/* The same at the code generator's level [level]. */
LLVMTargetMachineRef cg_cpu_machine_at(CtxDiag *diag, bool pic, const char *cpu,
                                       const char **features, LLVMCodeGenOptLevel level);

/* FNV-1a, 64 bits, over [n] bytes of [p]. */
uint64_t cg_fnv64(const char *p, size_t n);

/* The kernel cache (cg_cache.c). cg_cache_key appends to [key] everything
 * the object code of the unoptimized [mod] depends on (this program file,
 * LLVM's version and [llvm_options], [passes], the code generator's
 * [codegen_level] (an LLVMCodeGenOptLevel), [tm]); false when this host
 * cannot say which program it is (then there is no caching). cg_cache_load
 * returns the object stored under exactly [key] in [dir], or NULL;
 * cg_cache_store keeps [obj] there (making [dir]; failures are misses
 * later, not errors). */
bool cg_cache_key(CtxBuf *key, LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *passes,
                  int codegen_level, const char *llvm_options);
LLVMMemoryBufferRef cg_cache_load(const char *dir, const CtxBuf *key);
void cg_cache_store(const char *dir, const CtxBuf *key, LLVMMemoryBufferRef obj);

/* A kernel compiled in parts (cg_split.c). cg_compile_threads: the threads
 * it may compile on, 2 on a host of two or more CPUs, else 1
 * (CTX_COMPILE_THREADS=1 says 1). cg_compile_parts optimizes [mod] (kernel
 * [kernel]'s, as emitted) with [passes] and compiles it for [tm] into
 * obj[0]; with [tm2] (a second target machine, the same CPU) a share of its
 * tiles goes to obj[1], compiled on a second thread, their symbols global
 * ([hidden]: of hidden visibility, for a shared library). Returns the
 * objects made, 0 after an internal compiler error reported to [diag].
 * cg_optimize runs [passes] over [mod] for [tm]: NULL, or LLVM's message
 * (malloc'd; callable from any thread). */
int cg_compile_threads(void);
char *cg_optimize(LLVMModuleRef mod, const char *passes, LLVMTargetMachineRef tm);
int cg_compile_parts(LLVMModuleRef mod, const char *kernel, LLVMTargetMachineRef tm,
                     LLVMTargetMachineRef tm2, bool hidden, const char *passes,
                     LLVMMemoryBufferRef obj[2], CtxDiag *diag);

/* The vector registers of a CPU with [features] (NULL: the host's), floats
 * per register and registers (cg_emit.c). */
void cg_features_vectors(const char *features, int *floats, int *regs);

#endif
