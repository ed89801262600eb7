/* cg_jit.c — the optimized module of a kernel, compiled in process (ORC
 * LLJIT) or written as LLVM IR or host assembly.
 *
 *   IlirKernel --cg_emit_module--> module (host triple and data layout set
 *   first, so O3's vectorizer has the host's cost model) --default<O3>-->
 *   object file (the target machine's code generator; or the kernel cache's
 *   copy of it, cg_cache.c, which skips both steps) --> LLJIT (libm
 *   functions defined as absolute symbols, anything else from the process)
 *   --lookup--> CgKernelFn
 *
 * Ownership follows the LLVM C API: LLJIT consumes its builder, the builder
 * its target machine builder, which consumes the TargetMachine; adding the
 * object consumes its memory buffer; LLVMGetErrorMessage consumes the
 * error. Every LLVM failure is an internal compiler error with LLVM's
 * message, and everything made so far is disposed.
 */
#include "codegen/cg_int.h"

#include <llvm-c/Error.h>
#include <llvm-c/Support.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Object.h>
#include <llvm-c/Orc.h>
#include <llvm-c/OrcEE.h>
#include <llvm-c/Target.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct CgJit {
  LLVMOrcLLJITRef jit;
  CgKernelFn fn;
  int64_t *counters;          /* a profiled kernel's (codegen.h), else NULL */
  uint64_t (*cycles)(void);   /* a profiled kernel's cycle counter, else NULL */
  CgJitSym *syms;             /* the objects' functions: addresses once looked up */
  char **secs;                /* [nsyms]: the section of each, until then */
  int *objs;                  /* [nsyms]: and the object (0: the kernel's, 1: its second part) */
  int nsyms, syms_cap, noted; /* noted: the objects note_symbols has seen */
  bool jitdump;               /* LLVM's perf listener writes a jitdump */
  bool cached;                /* its object came from the kernel cache */
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

void cg_cpu_vectors(const char *cpu, int *floats, int *regs) {
  int level = cpu_level(cpu);
  cg_features_vectors(level >= 0 ? cpu_levels[level].features : NULL, floats, regs);
}

/* LLVM's own options, once per process, before any target machine.
 * -unroll-allow-partial=false: O3's partial unrolling of loops whose trip
 * count is not a small constant. Codegen unrolls the loops that pay (register
 * tiles, vector loops); LLVM's partial unrolling of the rest measured
 * 0.98-1.03x the run time on every zoo model and costs a quarter of the
 * optimizer's time (`ctx build examples/treelstm.ctx` 0.41 -> 0.38 s). Full
 * unrolling of small constant loops (a node's 2 predecessors) stays on.
 * CTX_LLVM_OPTIONS (space-separated, as llc takes them; for experiments)
 * comes after, so it can say otherwise. */
static char llvm_options_text[600];

void cg_llvm_options(void) {
  static bool done;
  if (done) return;
  done = true;
  const char *env = getenv("CTX_LLVM_OPTIONS");
  static char buf[512];
  const char *argv[32] = {"ctx", "-unroll-allow-partial=false"};
  int argc = 2;
  if (env && strlen(env) < sizeof buf) {
    strcpy(buf, env);
    for (char *t = strtok(buf, " "); t && argc < 32; t = strtok(NULL, " ")) argv[argc++] = t;
  }
  size_t at = 0;
  for (int i = 1; i < argc && at < sizeof llvm_options_text; i++)
    at += (size_t)snprintf(llvm_options_text + at, sizeof llvm_options_text - at, "%s%s",
                           i > 1 ? " " : "", argv[i]);
  LLVMParseCommandLineOptions(argc, argv, NULL);
}

/* The options cg_llvm_options gave LLVM, as one line (the kernel cache's
 * key: cg_cache.c). */
static const char *llvm_options(void) {
  cg_llvm_options();
  return llvm_options_text;
}

LLVMTargetMachineRef cg_cpu_machine_at(CtxDiag *diag, bool pic, const char *cpu_name,
                                       const char **features_used, LLVMCodeGenOptLevel opt) {
  cg_llvm_options();
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

/* The module of [k] in [ctx] for [tm] (whose features are [features], NULL:
 * the host's) as emitted, before optimization, or NULL after an error. */
static LLVMModuleRef emit_module(LLVMContextRef ctx, const IlirKernel *k,
                                 LLVMTargetMachineRef tm, const char *features,
                                 const CgJitOptions *o, CtxDiag *diag) {
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(k->name, ctx);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, layout);
  LLVMDisposeTargetData(layout);
  if (!cg_emit_module_for(ctx, mod, k, features, o ? o->profile : NULL, diag) ||
      (o && o->call && !cg_emit_call(ctx, mod, k, o->call, diag))) {
    LLVMDisposeModule(mod);
    return NULL;
  }
  return mod;
}

static const char *pass_pipeline(const CgJitOptions *o) {
  return o && o->passes ? o->passes : "default<O3>";
}

/* Runs [o]'s pass pipeline over [mod]; false after an error. */
static bool optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, const CgJitOptions *o,
                     CtxDiag *diag) {
  char *error = cg_optimize(mod, pass_pipeline(o), tm);
  bool ok = !error;
  if (error) CTX_ICE(diag, "codegen: %s", error);
  free(error);
  return ok;
}

/* The optimized module of [k] in [ctx] for [tm], or NULL after an error. */
static LLVMModuleRef build_module(LLVMContextRef ctx, const IlirKernel *k,
                                  LLVMTargetMachineRef tm, const char *features,
                                  const CgJitOptions *o, CtxDiag *diag) {
  LLVMModuleRef mod = emit_module(ctx, k, tm, features, o, diag);
  if (mod && !optimize(mod, tm, o, diag)) {
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
/* The object linking layer of a JIT that tells perf about its code (a
 * jitdump, codegen.h): RuntimeDyld, the layer LLVM's JIT event listeners
 * attach to, with LLVM's perf listener; [ctx] a bool set to whether this
 * LLVM has one (it is built with perf support or not). */
static LLVMOrcObjectLayerRef perf_layer(void *ctx, LLVMOrcExecutionSessionRef es,
                                        const char *triple) {
  (void)triple;
  LLVMOrcObjectLayerRef layer = LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager(es);
  LLVMJITEventListenerRef perf = LLVMCreatePerfJITEventListener();
  if (perf) LLVMOrcRTDyldObjectLinkingLayerRegisterJITEventListener(layer, perf);
  *(bool *)ctx = perf != NULL;
  return layer;
}

static LLVMOrcLLJITRef make_jit(LLVMTargetMachineRef tm, bool *jitdump, CtxDiag *diag) {
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  if (jitdump) LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(builder, perf_layer, jitdump);
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

static char *copy(const char *str) {
  size_t n = strlen(str) + 1;
  return memcpy(ctx_xmalloc(n), str, n);
}

/* The object file's functions ([ctx] the CgJit): the symbols of nonzero size
 * in a code section, with their offsets there (ObjectTransformLayer: the
 * object passes through unchanged). perf needs a function's size, which
 * only the object's symbol table says. */
static LLVMErrorRef note_symbols(void *ctx, LLVMMemoryBufferRef *obj) {
  CgJit *j = ctx;
  char *msg = NULL;
  LLVMBinaryRef bin = LLVMCreateBinary(*obj, NULL, &msg);
  LLVMDisposeMessage(msg);
  if (!bin) return NULL; /* not an object it can read: no symbols, no error */
  LLVMSymbolIteratorRef sym = LLVMObjectFileCopySymbolIterator(bin);
  LLVMSectionIteratorRef sec = LLVMObjectFileCopySectionIterator(bin);
  for (; !LLVMObjectFileIsSymbolIteratorAtEnd(bin, sym); LLVMMoveToNextSymbol(sym)) {
    const char *name = LLVMGetSymbolName(sym);
    if (!name || !*name || !LLVMGetSymbolSize(sym)) continue;
    LLVMMoveToContainingSection(sec, sym);
    if (LLVMObjectFileIsSectionIteratorAtEnd(bin, sec)) continue;
    const char *sname = LLVMGetSectionName(sec);
    /* .text, or .ltext in the JIT's large code model */
    if (!sname || !strstr(sname, "text")) continue;
    if (j->nsyms == j->syms_cap) {
      j->syms_cap = j->syms_cap ? 2 * j->syms_cap : 8;
      j->syms = realloc(j->syms, (size_t)j->syms_cap * sizeof *j->syms);
      j->secs = realloc(j->secs, (size_t)j->syms_cap * sizeof *j->secs);
      j->objs = realloc(j->objs, (size_t)j->syms_cap * sizeof *j->objs);
      if (!j->syms || !j->secs || !j->objs) ctx_oom();
    }
    j->objs[j->nsyms] = j->noted;
    j->secs[j->nsyms] = copy(sname);
    CgJitSym *s = &j->syms[j->nsyms++];
    s->name = copy(name);
    s->addr = LLVMGetSymbolAddress(sym);
    s->size = LLVMGetSymbolSize(sym);
  }
  LLVMDisposeSectionIterator(sec);
  LLVMDisposeSymbolIterator(sym);
  LLVMDisposeBinary(bin);
  j->noted++;
  return NULL;
}

/* Turns the noted offsets into addresses: each object's text section was
 * loaded as one block, at [kernel] - the kernel's offset for the object that
 * holds the kernel and, for its second part (cg_split.c), where the JIT
 * placed one of its global functions (a lookup). Functions of other
 * sections are dropped. */
static void place_symbols(CgJit *j, const char *kernel_name, uint64_t kernel) {
  enum { MAX_OBJS = 2 };
  const char *text[MAX_OBJS] = {NULL, NULL};
  uint64_t base[MAX_OBJS] = {0, 0};
  for (int i = 0; i < j->nsyms; i++) {
    int o = j->objs[i];
    if (o < MAX_OBJS && strcmp(j->syms[i].name, kernel_name) == 0)
      text[o] = j->secs[i], base[o] = kernel - j->syms[i].addr;
  }
  for (int i = 0; i < j->nsyms; i++) {
    int o = j->objs[i];
    LLVMOrcExecutorAddress addr = 0;
    if (o >= MAX_OBJS || text[o]) continue;
    LLVMErrorRef err = LLVMOrcLLJITLookup(j->jit, &addr, j->syms[i].name);
    if (err) LLVMConsumeError(err); /* a local symbol: not looked up */
    else text[o] = j->secs[i], base[o] = addr - j->syms[i].addr;
  }
  int kept = 0;
  for (int i = 0; i < j->nsyms; i++) {
    int o = j->objs[i];
    if (o < MAX_OBJS && text[o] && strcmp(j->secs[i], text[o]) == 0) {
      j->syms[i].addr += base[o];
      j->syms[kept++] = j->syms[i];
    } else {
      free(j->syms[i].name);
    }
  }
  for (int i = 0; i < j->nsyms; i++) free(j->secs[i]);
  free(j->secs);
  free(j->objs);
  j->secs = NULL;
  j->objs = NULL;
  j->nsyms = kept;
}

/* Adds the object file [obj] (consumed) to [jit] and looks up [name]. */
static uint64_t add_and_lookup(LLVMOrcLLJITRef jit, LLVMMemoryBufferRef obj, const char *name,
                               CtxDiag *diag) {
  LLVMErrorRef err = LLVMOrcLLJITAddObjectFile(jit, LLVMOrcLLJITGetMainJITDylib(jit), obj);
  if (err) {
    report_error(diag, "adding the kernel to the JIT", err);
    return 0;
  }
  LLVMOrcExecutorAddress addr = 0;
  err = LLVMOrcLLJITLookup(jit, &addr, name);
  if (err) {
    report_error(diag, "linking the kernel", err);
    return 0;
  }
  return addr;
}

/* The address of [kernel]'s symbol with [suffix] in [jit], or 0 after an
 * internal compiler error. */
static uint64_t lookup_suffixed(LLVMOrcLLJITRef jit, const char *kernel, const char *suffix,
                                CtxDiag *diag) {
  size_t n = strlen(kernel) + strlen(suffix) + 1;
  char *name = ctx_xmalloc(n);
  snprintf(name, n, "%s%s", kernel, suffix);
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef err = LLVMOrcLLJITLookup(jit, &addr, name);
  free(name);
  if (err) report_error(diag, "finding the profile counters", err);
  return err ? 0 : addr;
}

static void jit_free_syms(CgJit *j) {
  for (int i = 0; i < j->nsyms; i++) {
    free(j->syms[i].name);
    if (j->secs) free(j->secs[i]);
  }
  free(j->syms);
  free(j->secs);
  free(j->objs);
}

/* Adds [obj] (consumed) to the JIT, then its lookups: the kernel, its
 * symbols' addresses, a profile's counters. False after an error. */
static bool finish(CgJit *j, LLVMMemoryBufferRef obj, const IlirKernel *k, const char *entry,
                   const CgProfile *prof, CtxDiag *diag) {
  uint64_t addr = add_and_lookup(j->jit, obj, entry, diag);
  if (!addr) return false;
  j->fn = (CgKernelFn)(uintptr_t)addr;
  place_symbols(j, entry, addr);
  if (!prof) return true;
  uint64_t counters = lookup_suffixed(j->jit, k->name, CG_PROF_COUNTERS_SUFFIX, diag);
  uint64_t cycles = counters ? lookup_suffixed(j->jit, k->name, CG_PROF_CYCLES_SUFFIX, diag) : 0;
  j->counters = (int64_t *)(uintptr_t)counters;
  j->cycles = (uint64_t(*)(void))(uintptr_t)cycles;
  return cycles != 0;
}

/* The code generator's level [o] asks for: none (fast instruction
 * selection, the REPL) or aggressive (ctx run). */
static LLVMCodeGenOptLevel codegen_level(const CgJitOptions *o) {
  return o && o->fast_isel ? LLVMCodeGenLevelNone : LLVMCodeGenLevelAggressive;
}

/* Two objects in one cache entry: "ctx parts\n", their sizes (8 bytes
 * each, this host's order), their bytes. An object file alone is an entry
 * of one (ELF starts otherwise). */
static const char parts_magic[] = "ctx parts\n";

static LLVMMemoryBufferRef pack_parts(LLVMMemoryBufferRef obj[2]) {
  size_t m = sizeof parts_magic - 1;
  size_t n0 = LLVMGetBufferSize(obj[0]), n1 = LLVMGetBufferSize(obj[1]);
  uint64_t sizes[2] = {n0, n1};
  char *blob = ctx_xmalloc(m + sizeof sizes + n0 + n1);
  memcpy(blob, parts_magic, m);
  memcpy(blob + m, sizes, sizeof sizes);
  memcpy(blob + m + sizeof sizes, LLVMGetBufferStart(obj[0]), n0);
  memcpy(blob + m + sizeof sizes + n0, LLVMGetBufferStart(obj[1]), n1);
  LLVMMemoryBufferRef b =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(blob, m + sizeof sizes + n0 + n1, "ctx-parts");
  free(blob);
  return b;
}

/* The objects of cache entry [blob] (consumed) into obj: their count, 0 for
 * a damaged entry. */
static int unpack_parts(LLVMMemoryBufferRef blob, LLVMMemoryBufferRef obj[2]) {
  const char *p = LLVMGetBufferStart(blob);
  size_t n = LLVMGetBufferSize(blob), m = sizeof parts_magic - 1;
  uint64_t sizes[2];
  if (n < m || memcmp(p, parts_magic, m) != 0) {
    obj[0] = blob;
    return 1;
  }
  int got = 0;
  if (n >= m + sizeof sizes) {
    memcpy(sizes, p + m, sizeof sizes);
    const char *at = p + m + sizeof sizes;
    size_t rest = n - m - sizeof sizes;
    if (sizes[0] <= rest && sizes[1] == rest - sizes[0]) {
      obj[0] = LLVMCreateMemoryBufferWithMemoryRangeCopy(at, sizes[0], "ctx-cached-kernel");
      obj[1] = LLVMCreateMemoryBufferWithMemoryRangeCopy(at + sizes[0], sizes[1],
                                                         "ctx-cached-kernel-part");
      got = 2;
    }
  }
  LLVMDisposeMemoryBuffer(blob);
  return got;
}

/* The object files of [k] for [tm] into obj (obj[1]: a second part,
 * cg_split.c): from [o]'s cache when it holds them, else optimized and
 * compiled here, on two threads where the host has two CPUs (and kept in the
 * cache). Their count; 0 after an error. */
static int kernel_objects(const IlirKernel *k, LLVMTargetMachineRef tm, const CgJitOptions *o,
                          LLVMMemoryBufferRef obj[2], bool *cached, CtxDiag *diag) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = emit_module(ctx, k, tm, NULL, o, diag);
  int n = 0;
  CtxBuf key;
  ctx_buf_init(&key);
  bool keyed = mod && o && o->cache_dir &&
               cg_cache_key(&key, mod, tm, pass_pipeline(o), (int)codegen_level(o), llvm_options());
  LLVMMemoryBufferRef blob = keyed ? cg_cache_load(o->cache_dir, &key) : NULL;
  if (blob) n = unpack_parts(blob, obj);
  *cached = n > 0;
  if (mod && !n) {
    /* one object where a profile's counters, a call's wrapper or fast
     * instruction selection (the REPL, where compiling is quick) are asked */
    bool split = cg_compile_threads() >= 2 && !(o && (o->profile || o->call || o->fast_isel));
    LLVMTargetMachineRef tm2 = split ? cg_host_machine_at(diag, false, codegen_level(o)) : NULL;
    n = cg_compile_parts(mod, k->name, tm, tm2, false, pass_pipeline(o), obj, diag);
    if (tm2) LLVMDisposeTargetMachine(tm2);
    if (n && keyed) {
      LLVMMemoryBufferRef entry = n == 2 ? pack_parts(obj) : obj[0];
      cg_cache_store(o->cache_dir, &key, entry);
      if (n == 2) LLVMDisposeMemoryBuffer(entry);
    }
  }
  ctx_buf_free(&key);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return n;
}

CgJit *cg_jit_compile_with(const IlirKernel *k, const CgJitOptions *opts, CtxDiag *diag) {
  const CgProfile *prof = opts ? opts->profile : NULL;
  bool want_dump = opts && opts->jitdump, dumping = false;
  LLVMTargetMachineRef tm = cg_host_machine_at(diag, false, codegen_level(opts));
  if (!tm) return NULL;
  CgJit *j = calloc(1, sizeof *j);
  if (!j) ctx_oom();
  LLVMMemoryBufferRef obj[2] = {NULL, NULL};
  int nobj = kernel_objects(k, tm, opts, obj, &j->cached, diag);
  if (nobj) {
    j->jit = make_jit(tm, want_dump ? &dumping : NULL, diag); /* consumes tm */
    tm = NULL;
  }
  if (tm) LLVMDisposeTargetMachine(tm);
  if (j->jit)
    LLVMOrcObjectTransformLayerSetTransform(LLVMOrcLLJITGetObjTransformLayer(j->jit),
                                            note_symbols, j);
  /* the second part first: the kernel's object links against its tiles */
  bool ok = j->jit != NULL;
  if (ok && nobj == 2) {
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFile(j->jit, jd, obj[1]);
    obj[1] = NULL;
    if (err) report_error(diag, "adding the kernel's second part to the JIT", err), ok = false;
  }
  const char *entry = opts && opts->call ? opts->call->name : k->name;
  if (ok) ok = finish(j, obj[0], k, entry, prof, diag);
  else if (obj[0]) LLVMDisposeMemoryBuffer(obj[0]);
  if (obj[1]) LLVMDisposeMemoryBuffer(obj[1]);
  j->jitdump = dumping;
  if (!ok) {
    cg_jit_free(j);
    return NULL;
  }
  return j;
}

CgJit *cg_jit_compile(const IlirKernel *k, CtxDiag *diag) {
  return cg_jit_compile_with(k, NULL, diag);
}

CgKernelFn cg_jit_kernel(const CgJit *jit) { return jit->fn; }

void *cg_jit_call_entry(const CgJit *jit) { return (void *)(uintptr_t)jit->fn; }

int64_t *cg_jit_counters(const CgJit *jit) { return jit->counters; }

uint64_t cg_jit_cycles(const CgJit *jit) { return jit->cycles ? jit->cycles() : 0; }

bool cg_jit_dumping(const CgJit *jit) { return jit->jitdump; }

bool cg_jit_cached(const CgJit *jit) { return jit->cached; }

int cg_jit_symbols(const CgJit *jit, const CgJitSym **syms) {
  *syms = jit->syms;
  return jit->nsyms;
}

void cg_jit_free(CgJit *jit) {
  if (!jit) return;
  if (jit->jit) LLVMConsumeError(LLVMOrcDisposeLLJIT(jit->jit));
  jit_free_syms(jit);
  free(jit);
}

/* ---- text and object files ---------------------------------------------------- */

typedef enum { EMIT_LLVM, EMIT_ASM } EmitKind;

/* Builds and optimizes [k]'s module for [cpu] (NULL: the host) and
 * appends it as [kind] to [out]. */
static bool emit(const IlirKernel *k, EmitKind kind, CtxBuf *out, const char *cpu,
                 CtxDiag *diag) {
  const char *features = NULL;
  LLVMTargetMachineRef tm = cg_cpu_machine(diag, false, cpu, &features);
  if (!tm) return false;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = build_module(ctx, k, tm, features, NULL, diag);
  bool ok = mod != NULL;
  char *msg = NULL;
  if (mod && kind == EMIT_LLVM) {
    msg = LLVMPrintModuleToString(mod);
    ctx_buf_puts(out, msg);
  } else if (mod) {
    LLVMMemoryBufferRef mem = NULL;
    ok = !LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &mem);
    if (ok) ctx_buf_write(out, LLVMGetBufferStart(mem), LLVMGetBufferSize(mem));
    else CTX_ICE(diag, "codegen: emitting assembly: %s", msg ? msg : "");
    if (mem) LLVMDisposeMemoryBuffer(mem);
  }
  LLVMDisposeMessage(msg);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ok;
}

/* FNV-1a over the unoptimized module's text: the emitter's output is a
 * function of what it emits alone (value names are counters), so equal
 * hashes are the same program up to a collision of 64-bit hashes. */
bool cg_kernel_fingerprint(const IlirKernel *k, uint64_t *hash, CtxDiag *diag) {
  const char *features = NULL;
  LLVMTargetMachineRef tm = cg_cpu_machine(diag, false, NULL, &features);
  if (!tm) return false;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(k->name, ctx);
  bool ok = cg_emit_module_for(ctx, mod, k, features, NULL, diag);
  if (ok) {
    char *text = LLVMPrintModuleToString(mod);
    *hash = cg_fnv64(text, strlen(text));
    LLVMDisposeMessage(text);
  }
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ok;
}

bool cg_emit_llvm(CtxBuf *out, const IlirKernel *k, const char *cpu, CtxDiag *diag) {
  return emit(k, EMIT_LLVM, out, cpu, diag);
}

bool cg_emit_asm(CtxBuf *out, const IlirKernel *k, const char *cpu, CtxDiag *diag) {
  return emit(k, EMIT_ASM, out, cpu, diag);
}

static bool write_object(LLVMMemoryBufferRef obj, const char *path, CtxDiag *diag) {
  FILE *f = fopen(path, "wb");
  size_t n = LLVMGetBufferSize(obj);
  bool ok = f && fwrite(LLVMGetBufferStart(obj), 1, n, f) == n;
  if (f && fclose(f) != 0) ok = false;
  if (!ok) CTX_ICE(diag, "codegen: cannot write the object file '%s'", path);
  return ok;
}

int cg_emit_objects_cpu(const IlirKernel *k, const char *path, const char *path2,
                        const char *cpu, CtxDiag *diag) {
  const char *features = NULL;
  LLVMTargetMachineRef tm = cg_cpu_machine(diag, true, cpu, &features), tm2 = NULL;
  if (!tm) return 0;
  if (path2 && cg_compile_threads() >= 2) tm2 = cg_cpu_machine(diag, true, cpu, NULL);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = emit_module(ctx, k, tm, features, NULL, diag);
  LLVMMemoryBufferRef obj[2] = {NULL, NULL};
  int n = mod ? cg_compile_parts(mod, k->name, tm, tm2, true, pass_pipeline(NULL), obj, diag) : 0;
  const char *paths[2] = {path, path2};
  for (int i = 0; i < n; i++)
    if (!write_object(obj[i], paths[i], diag)) n = 0;
  if (path2 && n == 1) remove(path2); /* an earlier build's second part */
  for (int i = 0; i < 2; i++)
    if (obj[i]) LLVMDisposeMemoryBuffer(obj[i]);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  if (tm2) LLVMDisposeTargetMachine(tm2);
  return n;
}
