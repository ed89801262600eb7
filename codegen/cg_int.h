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
                    CtxDiag *diag);

/* Adds the call function [call] around the kernel of [k] (already emitted
 * into [mod]) and makes the kernel internal (cg_call.c; codegen.h, CgCall).
 * False after reporting an internal compiler error to [diag]. */
bool cg_emit_call(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                  const CgCall *call, CtxDiag *diag);
/* The same for a target whose LLVM feature string is [features] (NULL: the
 * host's): it sets the vector width and register count the emitter plans
 * register tiles with. */
bool cg_emit_module_for(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                        const char *features, CtxDiag *diag);

/* exp, tanh and sigmoid of the float [x] as straight-line IR at [b]'s
 * position (cg_math.c: accuracy and range there). */
LLVMValueRef cg_math_exp(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x);
LLVMValueRef cg_math_tanh(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x);
LLVMValueRef cg_math_sigmoid(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x);

/* A TargetMachine for the host CPU (its name and features), O3, or NULL after
 * reporting an internal compiler error; [pic]: position-independent code for
 * an object file (ctx build), else for the JIT. */
LLVMTargetMachineRef cg_host_machine(CtxDiag *diag, bool pic);
/* The same at the code generator's level [level] (cg_jit_compile_with). */
LLVMTargetMachineRef cg_host_machine_at(CtxDiag *diag, bool pic, LLVMCodeGenOptLevel level);

/* The same for the CPU level [cpu] (codegen.h's cg_cpu_valid names; NULL or
 * "native": the host's); [*features] is set to the feature string used
 * (static, or NULL for the host's). */
LLVMTargetMachineRef cg_cpu_machine(CtxDiag *diag, bool pic, const char *cpu,
                                    const char **features);
/* The same at the code generator's level [level]. */
LLVMTargetMachineRef cg_cpu_machine_at(CtxDiag *diag, bool pic, const char *cpu,
                                       const char **features, LLVMCodeGenOptLevel level);

#endif
