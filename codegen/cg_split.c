/* cg_split.c — a CPU kernel compiled in two parts on two threads.
 *
 * LLVM optimizes and compiles one module on one thread, and a kernel's
 * register tiles (NAME.tileN, functions of their own: cg_emit.c,
 * emit_tiled_outlined) are most of its code. On a host of two or more CPUs
 * the tiles are shared out between two modules by their size in
 * instructions, the body and its entry kept in the first:
 *
 *   the module --bitcode--> a copy in a context of its own (a second thread)
 *   first:  the body, the entry and its tiles; the second's tiles declared
 *   second: the second's tiles (external, hidden); everything else deleted
 *   each: default<O3>, then an object file; the two link as one kernel
 *
 * A tile in the second part is then no longer internal: LLVM can neither
 * inline it (it does not, being noinline) nor change its calling convention
 * (fastcc), so both parts call it by the C one. On a 2-core Zen 5 host,
 * medians of 21 alternating runs: `ctx build examples/treelstm.ctx` 0.43 ->
 * 0.34 s (it writes the second part as NAME_kernel_part.o beside
 * NAME_kernel.o; 0.38 s on one thread, CTX_COMPILE_THREADS=1, the tiles as
 * functions of their own already cheaper to optimize), `ctx run --no-cache`
 * of the same 0.41 -> 0.28 s (the JIT links the two objects; the kernel
 * cache keeps them as one entry). Run time with the tiles outlined, one
 * thread, 5-7 alternating rounds: 0.92-1.02x on treelstm, treegru, treefc,
 * seqlstm, childsum, dagrnn, mvrnn H=128; mvrnn H=64 B=10 1.02x.
 */
#include "codegen/cg_int.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Is [fn] one of kernel [k]'s outlined tiles ("K.tileN")? Its helpers
 * ("K.tileN.epiM": cg_tile.c) are not tiles: they go where their tile goes
 * (helper_of). */
static bool is_tile(LLVMValueRef fn, const char *k) {
  size_t len, kl = strlen(k);
  const char *name = LLVMGetValueName2(fn, &len);
  if (len <= kl + 5 || strncmp(name, k, kl) != 0 || strncmp(name + kl, ".tile", 5) != 0 ||
      LLVMCountBasicBlocks(fn) == 0)
    return false;
  for (size_t i = kl + 5; i < len; i++)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

/* Is [fn] a helper of the tile [tile] ("TILE.*")? */
static bool helper_of(LLVMValueRef fn, LLVMValueRef tile) {
  size_t len, tl;
  const char *name = LLVMGetValueName2(fn, &len), *t = LLVMGetValueName2(tile, &tl);
  return len > tl + 1 && strncmp(name, t, tl) == 0 && name[tl] == '.' &&
         LLVMCountBasicBlocks(fn) > 0;
}

static long instructions(LLVMValueRef fn) {
  long n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb;
       bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
      n++;
  return n;
}

/* [fn]'s name, malloc'd. */
static char *name_of(LLVMValueRef fn) {
  size_t len;
  const char *name = LLVMGetValueName2(fn, &len);
  char *copy = ctx_xmalloc(len + 1);
  memcpy(copy, name, len);
  copy[len] = '\0';
  return copy;
}

/* Turns [fn] into a declaration of the same name, type and visibility
 * (LLVM-C has no "delete the body": a new declaration takes its uses). */
static void make_declaration(LLVMModuleRef mod, LLVMValueRef fn) {
  char *copy = name_of(fn);
  LLVMSetValueName2(fn, "", 0);
  LLVMValueRef decl = LLVMAddFunction(mod, copy, LLVMGlobalGetValueType(fn));
  LLVMSetVisibility(decl, LLVMGetVisibility(fn));
  LLVMReplaceAllUsesWith(fn, decl);
  LLVMDeleteFunction(fn);
  free(copy);
}

/* Whether [fn]'s name is among [names] ([n] of them). */
static bool named(LLVMValueRef fn, char **names, int n) {
  size_t len;
  const char *name = LLVMGetValueName2(fn, &len);
  for (int i = 0; i < n; i++)
    if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) return true;
  return false;
}

/* Keeps in [mod] the definitions of [names] only ([keep]) or all but them
 * (![keep]); the others become declarations, deleted when nothing calls
 * them. */
static void keep_only(LLVMModuleRef mod, char **names, int n, bool keep) {
  LLVMValueRef fn = LLVMGetFirstFunction(mod);
  while (fn) {
    LLVMValueRef next = LLVMGetNextFunction(fn);
    if (LLVMCountBasicBlocks(fn) > 0 && named(fn, names, n) != keep)
      make_declaration(mod, fn);
    fn = next;
  }
  for (fn = LLVMGetFirstFunction(mod); fn;) {
    LLVMValueRef next = LLVMGetNextFunction(fn);
    if (LLVMCountBasicBlocks(fn) == 0 && !LLVMGetFirstUse(fn)) LLVMDeleteFunction(fn);
    fn = next;
  }
  /* and the variables only the deleted code used (each is defined once, in
   * the part that uses it or else the first) */
  if (!keep) return;
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g;) {
    LLVMValueRef next = LLVMGetNextGlobal(g);
    if (!LLVMGetFirstUse(g)) LLVMDeleteGlobal(g);
    g = next;
  }
}

typedef struct {
  LLVMModuleRef mod;       /* the part's module (its own context on a thread) */
  LLVMTargetMachineRef tm; /* its own target machine */
  const char *passes;
  LLVMMemoryBufferRef obj; /* the object file, or NULL */
  char *error;             /* what failed, malloc'd */
} Part;

/* "[what]: [msg]", malloc'd. */
static char *message(const char *what, const char *msg) {
  size_t n = strlen(what) + (msg ? strlen(msg) : 0) + 3;
  char *m = ctx_xmalloc(n);
  snprintf(m, n, "%s: %s", what, msg ? msg : "");
  return m;
}

static void part_error(Part *p, const char *what, char *msg) { p->error = message(what, msg); }

char *cg_optimize(LLVMModuleRef mod, const char *passes, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(mod, passes, tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!err) return NULL;
  char *msg = LLVMGetErrorMessage(err);
  char *m = message("optimizing the kernel", msg);
  LLVMDisposeErrorMessage(msg);
  return m;
}

/* Optimizes and compiles one part. */
static void compile_part(Part *p) {
  p->error = cg_optimize(p->mod, p->passes, p->tm);
  if (p->error) return;
  char *msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(p->tm, p->mod, LLVMObjectFile, &msg, &p->obj)) {
    part_error(p, "compiling the kernel", msg);
    p->obj = NULL;
  }
  LLVMDisposeMessage(msg);
}

typedef struct {
  Part part;
  LLVMMemoryBufferRef bitcode;
  char **names;
  int n;
} Second;

/* The second part, on its thread: the module read back from the bitcode in
 * a context of its own, cut down to its tiles, compiled. */
static void *second_part(void *arg) {
  Second *s = arg;
  LLVMContextRef ctx = LLVMContextCreate();
  if (LLVMParseBitcodeInContext2(ctx, s->bitcode, &s->part.mod)) {
    part_error(&s->part, "reading the kernel's bitcode back", NULL);
  } else {
    keep_only(s->part.mod, s->names, s->n, true);
    compile_part(&s->part);
    LLVMDisposeModule(s->part.mod);
  }
  LLVMContextDispose(ctx);
  return NULL;
}

int cg_compile_threads(void) {
  const char *env = getenv("CTX_COMPILE_THREADS");
  if (env && *env) return atoi(env) >= 2 ? 2 : 1;
  return sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
}

int cg_compile_parts(LLVMModuleRef mod, const char *kernel, LLVMTargetMachineRef tm,
                     LLVMTargetMachineRef tm2, bool hidden, const char *passes,
                     LLVMMemoryBufferRef obj[2], CtxDiag *diag) {
  /* The tiles, largest first (with their helpers), each to the part with
   * fewer instructions. */
  long size[2] = {0, 0};
  int ntiles = 0, nfns = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    nfns++;
    if (is_tile(fn, kernel)) ntiles++;
  }
  LLVMValueRef *tiles = ctx_xmalloc(((size_t)ntiles + 1) * sizeof *tiles);
  long *tsize = ctx_xmalloc(((size_t)ntiles + 1) * sizeof *tsize);
  int t = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    if (is_tile(fn, kernel)) tsize[t] = 0, tiles[t++] = fn;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    int of = -1;
    for (int i = 0; i < ntiles && of < 0; i++)
      if (fn == tiles[i] || helper_of(fn, tiles[i])) of = i;
    if (of >= 0) tsize[of] += instructions(fn);
    else size[0] += instructions(fn);
  }
  char **second = ctx_xmalloc(((size_t)nfns + 1) * sizeof *second);
  int n2 = 0;
  for (int done = 0; tm2 && done < ntiles; done++) {
    int big = -1;
    for (int i = 0; i < ntiles; i++)
      if (tiles[i] && (big < 0 || tsize[i] > tsize[big])) big = i;
    int to = size[1] < size[0];
    size[to] += tsize[big];
    if (to == 1) {
      /* the tile called from the first part; its helpers, called from the
       * tile alone, stay internal to the second */
      second[n2++] = name_of(tiles[big]);
      for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
        if (helper_of(fn, tiles[big])) second[n2++] = name_of(fn);
      LLVMSetLinkage(tiles[big], LLVMExternalLinkage);
      if (hidden) LLVMSetVisibility(tiles[big], LLVMHiddenVisibility);
    }
    tiles[big] = NULL;
  }
  Second s = {{NULL, tm2, passes, NULL, NULL}, NULL, second, n2};
  pthread_t thread;
  bool threaded = false;
  if (n2 > 0) {
    s.bitcode = LLVMWriteBitcodeToMemoryBuffer(mod);
    keep_only(mod, second, n2, false);
    threaded = pthread_create(&thread, NULL, second_part, &s) == 0;
    if (!threaded) second_part(&s);
  }
  Part first = {mod, tm, passes, NULL, NULL};
  compile_part(&first);
  if (threaded) pthread_join(thread, NULL);
  int nobj = 0;
  const char *error = first.error ? first.error : s.part.error;
  if (error) {
    CTX_ICE(diag, "codegen: %s", error);
    if (first.obj) LLVMDisposeMemoryBuffer(first.obj);
    if (s.part.obj) LLVMDisposeMemoryBuffer(s.part.obj);
  } else {
    obj[nobj++] = first.obj;
    if (s.part.obj) obj[nobj++] = s.part.obj;
  }
  free(first.error);
  free(s.part.error);
  if (s.bitcode) LLVMDisposeMemoryBuffer(s.bitcode);
  for (int i = 0; i < n2; i++)
    free(second[i]);
  free(second);
  free(tiles);
  free(tsize);
  return nobj;
}
