/* cg_jit.c — the optimized module of a kernel, compiled in process (ORC
 * LLJIT) or written as LLVM IR or host assembly.
 *
 *   IlirKernel --cg_emit_module--> module (host triple and data layout set
 *   first, so O3's vectorizer has the host's cost model) --default<O3>-->
 *   LLJIT (libm functions defined as absolute symbols, anything else from
 *   the process) --lookup--> CgKernelFn
 *
 * Ownership follows the LLVM C API: LLJIT consumes its builder, the builder
 * its target machine builder, which consumes the TargetMachine; adding the
 * module consumes the ThreadSafeModule; LLVMGetErrorMessage consumes the
 * error. Every LLVM failure is an internal compiler error with LLVM's
 * message, and everything made so far is disposed.
 */
#include "codegen/cg_int.h"

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct CgJit {
  LLVMOrcLLJITRef jit;
  CgKernelFn fn;
};

/* Reports [err] (consumed) as an internal compiler error about [what]. */
static void report_error(CtxDiag *diag, const char *what, LLVMErrorRef err) {
  char *msg = LLVMGetErrorMessage(err);
  CTX_ICE(diag, "codegen: %s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
}

/* The CPU levels of --cpu (the x86-64 psABI micro-architecture levels): LLVM's
 * CPU name and the features the emitter plans vector widths with (the CPU
 * implies them; naming them here keeps that plan and the code in step). */
static const struct {
  const char *name, *llvm_cpu, *features;
} cpu_levels[] = {
    {"generic", "x86-64", ""},
    {"x86-64-v3", "x86-64-v3", "+avx,+avx2,+fma"},
    {"x86-64-v4", "x86-64-v4", "+avx512f,+avx,+avx2,+fma"},
};

bool cg_cpu_valid(const char *cpu) {
  if (!cpu || strcmp(cpu, "native") == 0) return true;
  char *triple = LLVMGetDefaultTargetTriple();
  bool x86 = strncmp(triple, "x86_64", 6) == 0;
  LLVMDisposeMessage(triple);
  for (size_t i = 0; i < sizeof cpu_levels / sizeof *cpu_levels; i++)
    if (strcmp(cpu, cpu_levels[i].name) == 0) return x86;
  return false;
}

LLVMTargetMachineRef cg_host_machine(CtxDiag *diag, bool pic) {
  return cg_cpu_machine(diag, pic, NULL, NULL);
}

LLVMTargetMachineRef cg_host_machine_at(CtxDiag *diag, bool pic, LLVMCodeGenOptLevel level) {
  return cg_cpu_machine_at(diag, pic, NULL, NULL, level);
}

LLVMTargetMachineRef cg_cpu_machine(CtxDiag *diag, bool pic, const char *cpu_name,
                                    const char **features_used) {
  return cg_cpu_machine_at(diag, pic, cpu_name, features_used, LLVMCodeGenLevelAggressive);
}

/* [cpu]'s entry in cpu_levels, or NULL for the host. */
static int cpu_level(const char *cpu) {
  for (int i = 0; cpu && i < (int)(sizeof cpu_levels / sizeof *cpu_levels); i++)
    if (strcmp(cpu, cpu_levels[i].name) == 0) return i;
  return -1;
}

LLVMTargetMachineRef cg_cpu_machine_at(CtxDiag *diag, bool pic, const char *cpu_name,
                                       const char **features_used, LLVMCodeGenOptLevel opt) {
  int level = cpu_level(cpu_name);
  if (features_used) *features_used = level >= 0 ? cpu_levels[level].features : NULL;
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
    CTX_ICE(diag, "codegen: LLVM has no target for this host");
    return NULL;
  }
  char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
  LLVMTargetRef target;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    CTX_ICE(diag, "codegen: no LLVM target for '%s': %s", triple, msg);
  } else if (level >= 0 && strncmp(triple, "x86_64", 6) != 0) {
    CTX_ICE(diag, "codegen: CPU level '%s' on the host '%s'", cpu_name, triple);
  } else {
    char *cpu = level >= 0 ? LLVMCreateMessage(cpu_levels[level].llvm_cpu)
                           : LLVMGetHostCPUName();
    char *features = level >= 0 ? LLVMCreateMessage(cpu_levels[level].features)
                                : LLVMGetHostCPUFeatures();
    tm = LLVMCreateTargetMachine(target, triple, cpu, features, opt,
                                 pic ? LLVMRelocPIC : LLVMRelocDefault,
                                 pic ? LLVMCodeModelDefault : LLVMCodeModelJITDefault);
    if (!tm) CTX_ICE(diag, "codegen: cannot make a target machine for '%s'", cpu);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeMessage(triple);
  return tm;
}

/* The optimized module of [k] in [ctx] for [tm] (whose features are
 * [features], NULL: the host's), or NULL after an error. */
static LLVMModuleRef build_module(LLVMContextRef ctx, const IlirKernel *k,
                                  LLVMTargetMachineRef tm, const char *features,
                                  const CgJitOptions *o, CtxDiag *diag) {
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(k->name, ctx);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, layout);
  LLVMDisposeTargetData(layout);
  if (!cg_emit_module_for(ctx, mod, k, features, diag) ||
      (o && o->call && !cg_emit_call(ctx, mod, k, o->call, diag))) {
    LLVMDisposeModule(mod);
    return NULL;
  }
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  const char *passes = o && o->passes ? o->passes : "default<O3>";
  LLVMErrorRef err = LLVMRunPasses(mod, passes, tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (err) {
    report_error(diag, "optimizing the kernel", err);
    LLVMDisposeModule(mod);
    return NULL;
  }
  return mod;
}

/* ---- the JIT ------------------------------------------------------------------ */

/* The libm functions the generated code may call (tanhf directly, the others
 * where LLVM expands an intrinsic into a call), defined by this process's own
 * libm so that nothing depends on how the executable was linked. */
typedef struct {
  const char *name;
  float (*fn)(float);
} CgLibm;

static LLVMErrorRef define_libm(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd) {
  const CgLibm libm[] = {{"tanhf", tanhf}, {"expf", expf},   {"logf", logf},
                         {"sqrtf", sqrtf}, {"fabsf", fabsf}, {"exp2f", exp2f},
                         {"log2f", log2f}};
  enum { N = sizeof libm / sizeof libm[0] };
  LLVMOrcCSymbolMapPair pairs[N];
  for (int i = 0; i < N; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, libm[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)libm[i].fn;
    pairs[i].Sym.Flags.GenericFlags =
        LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, N);
  LLVMErrorRef err = LLVMOrcJITDylibDefine(jd, mu);
  if (err) LLVMOrcDisposeMaterializationUnit(mu);
  return err;
}

/* An LLJIT for [tm] (consumed) whose main dylib resolves libm and the
 * process's symbols; NULL after an error. */
static LLVMOrcLLJITRef make_jit(LLVMTargetMachineRef tm, CtxDiag *diag) {
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  LLVMOrcLLJITRef jit;
  LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, builder);
  if (err) {
    report_error(diag, "creating the JIT", err);
    return NULL;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  err = define_libm(jit, jd);
  if (!err)
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
  if (err) {
    report_error(diag, "setting up the JIT's symbols", err);
    LLVMConsumeError(LLVMOrcDisposeLLJIT(jit));
    return NULL;
  }
  LLVMOrcJITDylibAddGenerator(jd, gen);
  return jit;
}

/* Adds [mod] (consumed, made in [tsc]) to [jit] and looks up [name]. */
static CgKernelFn add_and_lookup(LLVMOrcLLJITRef jit, LLVMOrcThreadSafeContextRef tsc,
                                 LLVMModuleRef mod, const char *name, CtxDiag *diag) {
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
  LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm);
  if (err) {
    report_error(diag, "adding the kernel to the JIT", err);
    return NULL;
  }
  LLVMOrcExecutorAddress addr = 0;
  err = LLVMOrcLLJITLookup(jit, &addr, name);
  if (err) {
    report_error(diag, "compiling the kernel", err);
    return NULL;
  }
  return (CgKernelFn)(uintptr_t)addr;
}

CgJit *cg_jit_compile(const IlirKernel *k, CtxDiag *diag) {
  return cg_jit_compile_with(k, NULL, diag);
}

CgJit *cg_jit_compile_with(const IlirKernel *k, const CgJitOptions *o, CtxDiag *diag) {
  LLVMTargetMachineRef tm =
      o && o->fast_isel ? cg_host_machine_at(diag, false, LLVMCodeGenLevelNone)
                        : cg_host_machine(diag, false);
  if (!tm) return NULL;
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef mod = build_module(LLVMOrcThreadSafeContextGetContext(tsc), k, tm, NULL, o, diag);
  LLVMOrcLLJITRef jit = NULL;
  if (mod) {
    jit = make_jit(tm, diag); /* consumes tm */
    tm = NULL;
    if (!jit) LLVMDisposeModule(mod);
  }
  if (tm) LLVMDisposeTargetMachine(tm);
  const char *entry = o && o->call ? o->call->name : k->name;
  CgKernelFn fn = jit ? add_and_lookup(jit, tsc, mod, entry, diag) : NULL;
  LLVMOrcDisposeThreadSafeContext(tsc); /* the module holds its own reference */
  if (!fn) {
    if (jit) LLVMConsumeError(LLVMOrcDisposeLLJIT(jit));
    return NULL;
  }
  CgJit *j = ctx_xmalloc(sizeof *j);
  j->jit = jit;
  j->fn = fn;
  return j;
}

CgKernelFn cg_jit_kernel(const CgJit *jit) { return jit->fn; }

void *cg_jit_call_entry(const CgJit *jit) { return (void *)(uintptr_t)jit->fn; }

void cg_jit_free(CgJit *jit) {
  if (!jit) return;
  LLVMConsumeError(LLVMOrcDisposeLLJIT(jit->jit));
  free(jit);
}

/* ---- text and object files ---------------------------------------------------- */

typedef enum { EMIT_LLVM, EMIT_ASM, EMIT_OBJECT } EmitKind;

/* Builds and optimizes [k]'s module for [cpu] (NULL: the host; PIC for
 * objects) and writes it as [kind]: into [out], or to the file [path]. */
static bool emit(const IlirKernel *k, EmitKind kind, CtxBuf *out, const char *path,
                 const char *cpu, CtxDiag *diag) {
  const char *features = NULL;
  LLVMTargetMachineRef tm = cg_cpu_machine(diag, kind == EMIT_OBJECT, cpu, &features);
  if (!tm) return false;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = build_module(ctx, k, tm, features, NULL, diag);
  bool ok = mod != NULL;
  char *msg = NULL;
  if (mod && kind == EMIT_LLVM) {
    msg = LLVMPrintModuleToString(mod);
    ctx_buf_puts(out, msg);
  } else if (mod && kind == EMIT_ASM) {
    LLVMMemoryBufferRef mem = NULL;
    ok = !LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &mem);
    if (ok) ctx_buf_write(out, LLVMGetBufferStart(mem), LLVMGetBufferSize(mem));
    else CTX_ICE(diag, "codegen: emitting assembly: %s", msg ? msg : "");
    if (mem) LLVMDisposeMemoryBuffer(mem);
  } else if (mod) {
    ok = !LLVMTargetMachineEmitToFile(tm, mod, path, LLVMObjectFile, &msg);
    if (!ok) CTX_ICE(diag, "codegen: writing the object file '%s': %s", path, msg ? msg : "");
  }
  LLVMDisposeMessage(msg);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ok;
}

bool cg_emit_llvm(CtxBuf *out, const IlirKernel *k, CtxDiag *diag) {
  return emit(k, EMIT_LLVM, out, NULL, NULL, diag);
}

bool cg_emit_asm(CtxBuf *out, const IlirKernel *k, CtxDiag *diag) {
  return emit(k, EMIT_ASM, out, NULL, NULL, diag);
}

bool cg_emit_object(const IlirKernel *k, const char *path, CtxDiag *diag) {
  return emit(k, EMIT_OBJECT, NULL, path, NULL, diag);
}

bool cg_emit_object_cpu(const IlirKernel *k, const char *path, const char *cpu,
                        CtxDiag *diag) {
  return emit(k, EMIT_OBJECT, NULL, path, cpu, diag);
}
