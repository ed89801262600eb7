/* cg_nvptx.c — the NVPTX target of the one emitter (cg_target.h) and PTX
 * emission for NVIDIA GPUs.
 *
 *   IlirKernel --cg_emit_target_module(cg_target_nvptx)--> module for
 *   nvptx64-nvidia-cuda (the machine's data layout) --default<O3>--> PTX text
 *   (LLVMAssemblyFile: NVPTX has no object files)
 *
 * The kernel is one persistent cooperative kernel per batch (docs/cuda.md):
 *
 *   .visible .entry NAME(u64 bufs, u64 num_nodes, u64 num_levels, u64 counter)
 *
 * bufs points at a device array of the buffers' device pointers (ilir.h's
 * order), counter at a u32 the host zeroes before each launch (the grid
 * barrier's). Every thread of the grid is a thread of ilir.h's team (tid the
 * global index, nthreads the grid's threads); loops bound to blocks and
 * threads use the block index and the thread's index in the block. The grid
 * barrier follows TOOLCHAIN.md ("CUDA"): bar.sync; thread 0 of each block
 * adds 1 to the counter with release semantics (block 0 adds 0x80000001 -
 * nblocks, so each episode adds exactly 2^31 and bit 31 flips once all have
 * arrived) and spins with acquire loads until bit 31 differs from the value
 * its add returned; bar.sync. LLVM 19 drops the orderings of IR atomics on
 * NVPTX and cannot select fences, so both accesses are inline PTX.
 *
 * Parameters marked `shared` (a schedule's cache directive) are copied by
 * each block into its dynamic shared memory at the start (the host sets the
 * size: cg_gpu_shared_bytes) and read from there; the others are read-only
 * global loads (ld.global.nc: read-only, noalias, global).
 */
#include "codegen/cg_target.h"

#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

static LLVMValueRef call_intrinsic(LLVMBuilderRef b, LLVMModuleRef mod, const char *name,
                                   LLVMValueRef *args, unsigned nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), f, args, nargs, "");
}

static LLVMValueRef nvptx_sreg(LLVMBuilderRef b, LLVMModuleRef mod, CgSreg which) {
  static const char *const names[] = {
      [CG_SREG_TID] = "llvm.nvvm.read.ptx.sreg.tid.x",
      [CG_SREG_NTID] = "llvm.nvvm.read.ptx.sreg.ntid.x",
      [CG_SREG_CTAID] = "llvm.nvvm.read.ptx.sreg.ctaid.x",
      [CG_SREG_NCTAID] = "llvm.nvvm.read.ptx.sreg.nctaid.x"};
  LLVMValueRef v = call_intrinsic(b, mod, names[which], NULL, 0);
  return LLVMBuildZExt(b, v, LLVMInt64TypeInContext(LLVMGetModuleContext(mod)), "");
}

static void nvptx_block_barrier(LLVMBuilderRef b, LLVMModuleRef mod) {
  call_intrinsic(b, mod, "llvm.nvvm.barrier0", NULL, 0);
}

/* bar.warp.sync with every lane in the member mask */
static void nvptx_warp_barrier(LLVMBuilderRef b, LLVMModuleRef mod) {
  LLVMValueRef all = LLVMConstInt(LLVMInt32TypeInContext(LLVMGetModuleContext(mod)),
                                  0xffffffffu, 0);
  call_intrinsic(b, mod, "llvm.nvvm.bar.warp.sync", &all, 1);
}

/* x summed over the warp's lanes by five butterfly shuffles (each lane adds
 * the value of the lane whose index differs in one bit: 16, 8, 4, 2, 1
 * apart), every lane taking part (member mask all ones; c = 0x1f: the whole
 * warp is one segment). Every lane ends with the same sum. */
static LLVMValueRef nvptx_warp_sum(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  for (unsigned d = 16; d > 0; d /= 2) {
    LLVMValueRef args[4] = {LLVMConstInt(i32, 0xffffffffu, 0), x, LLVMConstInt(i32, d, 0),
                            LLVMConstInt(i32, 0x1f, 0)};
    x = LLVMBuildFAdd(b, x, call_intrinsic(b, mod, "llvm.nvvm.shfl.sync.bfly.f32", args, 4), "");
  }
  return x;
}

/* Inline PTX [text] with [constraints], returning an i32, of [n] operands. */
static LLVMValueRef ptx_asm(LLVMBuilderRef b, LLVMModuleRef mod, const char *text,
                            const char *constraints, LLVMValueRef *ops, unsigned n) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef params[2] = {LLVMInt64TypeInContext(ctx), LLVMInt32TypeInContext(ctx)};
  LLVMTypeRef ft = LLVMFunctionType(LLVMInt32TypeInContext(ctx), params, n, 0);
  LLVMValueRef f = LLVMGetInlineAsm(ft, text, strlen(text), constraints, strlen(constraints),
                                    1, 0, LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(b, ft, f, ops, n, "");
}

static void nvptx_grid_barrier(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef counter) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx);
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef arrive = LLVMAppendBasicBlockInContext(ctx, fn, "grid.arrive");
  LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(ctx, fn, "grid.spin");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, fn, "grid.done");
  nvptx_block_barrier(b, mod);
  LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, nvptx_sreg(b, mod, CG_SREG_TID),
                                     LLVMConstInt(i64, 0, 0), "");
  LLVMBuildCondBr(b, first, arrive, done);
  LLVMPositionBuilderAtEnd(b, arrive);
  LLVMValueRef nb = LLVMBuildTrunc(b, nvptx_sreg(b, mod, CG_SREG_NCTAID), i32, "");
  LLVMValueRef block0 = LLVMBuildICmp(b, LLVMIntEQ, nvptx_sreg(b, mod, CG_SREG_CTAID),
                                      LLVMConstInt(i64, 0, 0), "");
  LLVMValueRef add = LLVMBuildSelect(
      b, block0, LLVMBuildSub(b, LLVMConstInt(i32, 0x80000001u, 0), nb, ""),
      LLVMConstInt(i32, 1, 0), "");
  LLVMTypeRef gptr = LLVMPointerTypeInContext(ctx, 1); /* the global address space */
  LLVMValueRef at = LLVMBuildPtrToInt(b, LLVMBuildAddrSpaceCast(b, counter, gptr, ""), i64, "");
  LLVMValueRef ops[2] = {at, add};
  LLVMValueRef old = ptx_asm(b, mod, "atom.add.release.gpu.global.u32 $0, [$1], $2;",
                             "=r,l,r,~{memory}", ops, 2);
  LLVMBuildBr(b, spin);
  LLVMPositionBuilderAtEnd(b, spin);
  LLVMValueRef cur = ptx_asm(b, mod, "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l,~{memory}",
                             &at, 1);
  LLVMValueRef flip = LLVMBuildAnd(b, LLVMBuildXor(b, cur, old, ""),
                                   LLVMConstInt(i32, 0x80000000u, 0), "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, flip, LLVMConstInt(i32, 0, 0), ""), spin,
                  done);
  LLVMPositionBuilderAtEnd(b, done);
  nvptx_block_barrier(b, mod);
}

/* exp, tanh, sigmoid: cg_math.c's; log(x) = lg2.approx(x) * ln 2 (relative
 * error about 2^-22, within TESTING.md's tolerance); NULL for the rest. */
static LLVMValueRef nvptx_math(LLVMBuilderRef b, LLVMModuleRef mod, int op, LLVMValueRef x) {
  switch (op) {
  case ILIR_SIGMOID: return cg_math_sigmoid(b, mod, x);
  case ILIR_TANH: return cg_math_tanh(b, mod, x);
  case ILIR_EXP: return cg_math_exp(b, mod, x);
  case ILIR_LOG: {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef ft = LLVMFunctionType(f32, &f32, 1, 0);
    static const char text[] = "lg2.approx.f32 $0, $1;", cons[] = "=f,f";
    LLVMValueRef f = LLVMGetInlineAsm(ft, text, sizeof text - 1, cons, sizeof cons - 1, 0, 0,
                                      LLVMInlineAsmDialectATT, 0);
    LLVMValueRef l2 = LLVMBuildCall2(b, ft, f, &x, 1, "");
    return LLVMBuildFMul(b, l2, LLVMConstReal(f32, 0.69314718055994530942), "");
  }
  default: return NULL;
  }
}

/* ---- the entry point ------------------------------------------------------------ */

/* @ctx.shared: the block's dynamic shared memory, as floats. */
static LLVMValueRef shared_base(LLVMModuleRef mod) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef arr = LLVMArrayType2(LLVMFloatTypeInContext(ctx), 0);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(mod, arr, "ctx_shared", 3);
  LLVMSetLinkage(g, LLVMExternalLinkage);
  LLVMSetAlignment(g, 16);
  return g;
}

long cg_gpu_shared_bytes(const IlirKernel *k) {
  long floats = 0;
  for (int i = 0; i < k->nbufs; i++)
    if (k->bufs[i].shared) floats += (k->bufs[i].size + 3) / 4 * 4; /* 16-byte aligned */
  return floats * 4;
}

/* Does [b] hold a loop bound as [bind]? */
static bool block_has(const IlirBlock *b, IlirBind bind) {
  for (int i = 0; i < b->n; i++) {
    const IlirStmt *s = b->stmts[i];
    if ((s->kind == ILIR_LOOP && s->bind == bind) || block_has(&s->body, bind) ||
        block_has(&s->then, bind) || block_has(&s->els, bind))
      return true;
  }
  return false;
}

bool cg_gpu_all_blocks(const IlirKernel *k) { return block_has(&k->body, ILIR_BIND_GRID); }

int cg_gpu_nodes_per_block(const IlirKernel *k) {
  return block_has(&k->body, ILIR_BIND_NODE_WARP) ? CG_GPU_BLOCK_THREADS / 32 : 1;
}

/* Copies [n] floats from [src] to [dst] with the block's threads. */
static void block_copy(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef dst, LLVMValueRef src,
                       long n) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx), f32 = LLVMFloatTypeInContext(ctx);
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(ctx, fn, "stage");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, fn, "stage.body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(ctx, fn, "stage.exit");
  LLVMValueRef lo = nvptx_sreg(b, mod, CG_SREG_TID);
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef iv = LLVMBuildPhi(b, i64, "i");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, iv, LLVMConstInt(i64, (unsigned long long)n, 0), ""),
                  body, exit);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef v = LLVMBuildLoad2(b, f32, LLVMBuildInBoundsGEP2(b, f32, src, &iv, 1, ""), "");
  LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, f32, dst, &iv, 1, ""));
  LLVMValueRef next = LLVMBuildNSWAdd(
      b, iv, LLVMConstInt(i64, (unsigned long long)cg_target_nvptx.block_threads, 0), "");
  LLVMBuildBr(b, head);
  LLVMValueRef vals[2] = {lo, next};
  LLVMBasicBlockRef from[2] = {pre, body};
  LLVMAddIncoming(iv, vals, from, 2);
  LLVMPositionBuilderAtEnd(b, exit);
}

/* bufs[i] as a pointer known to be global (a parameter cached in shared
 * memory: its copy there), so loads become ld.global(.nc) / ld.shared. */
static LLVMValueRef buffer_arg(LLVMBuilderRef b, LLVMModuleRef mod, const IlirKernel *k, int i,
                               LLVMValueRef bufs, LLVMValueRef shared, long *shared_off) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
  LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)i, 0);
  /* loaded as global pointers: after inlining, infer-address-spaces makes
   * every access through them global (and read-only ones ld.global.nc) */
  LLVMTypeRef gptr = LLVMPointerTypeInContext(ctx, 1);
  LLVMValueRef g = LLVMBuildLoad2(b, gptr, LLVMBuildInBoundsGEP2(b, ptr, bufs, &idx, 1, ""),
                                  k->bufs[i].name);
  LLVMValueRef p = LLVMBuildAddrSpaceCast(b, g, ptr, "");
  if (!k->bufs[i].shared) return p;
  LLVMValueRef off = LLVMConstInt(i64, (unsigned long long)*shared_off, 0);
  LLVMValueRef s = LLVMBuildInBoundsGEP2(b, LLVMFloatTypeInContext(ctx), shared, &off, 1, "");
  *shared_off += (k->bufs[i].size + 3) / 4 * 4;
  block_copy(b, mod, s, p, k->bufs[i].size);
  return LLVMBuildAddrSpaceCast(b, s, ptr, "");
}

/* kernel(bufs, num_nodes, num_levels, counter): the buffers (shared copies
 * made, then a block barrier), the global thread index and count, and the
 * body with barrier NULL and barrier_ctx the counter. */
static void nvptx_entry(LLVMBuilderRef b, LLVMModuleRef mod, const IlirKernel *k,
                        LLVMValueRef body) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef params[4] = {ptr, i64, i64, ptr};
  LLVMValueRef fn = LLVMAddFunction(mod, k->name,
                                    LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 4, 0));
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  int n = k->nbufs;
  LLVMValueRef *args = ctx_xmalloc(((size_t)n + 6) * sizeof *args);
  LLVMValueRef shared = cg_gpu_shared_bytes(k) ? shared_base(mod) : NULL;
  long off = 0;
  for (int i = 0; i < n; i++) args[i] = buffer_arg(b, mod, k, i, LLVMGetParam(fn, 0), shared, &off);
  if (shared) nvptx_block_barrier(b, mod);
  LLVMValueRef ntid = nvptx_sreg(b, mod, CG_SREG_NTID);
  LLVMValueRef gtid = LLVMBuildAdd(
      b, LLVMBuildMul(b, nvptx_sreg(b, mod, CG_SREG_CTAID), ntid, ""),
      nvptx_sreg(b, mod, CG_SREG_TID), "gtid");
  args[n] = LLVMGetParam(fn, 1);
  args[n + 1] = LLVMGetParam(fn, 2);
  args[n + 2] = gtid;
  args[n + 3] = LLVMBuildMul(b, nvptx_sreg(b, mod, CG_SREG_NCTAID), ntid, "nthreads");
  args[n + 4] = LLVMConstNull(ptr);
  args[n + 5] = LLVMGetParam(fn, 3);
  LLVMBuildCall2(b, LLVMGlobalGetValueType(body), body, args, (unsigned)n + 6, "");
  LLVMBuildRetVoid(b);
  free(args);
  /* No launch-bound annotation: with .maxntid 256 or .reqntid 256 ptxas 13.0
   * caps the registers at 64 and the GRU and LSTM cells spill; without one
   * they fit in 72 and nothing spills. */
}

const CgTarget cg_target_nvptx = {CG_TARGET_NVPTX,    1,
                                  64,                 CG_GPU_BLOCK_THREADS,
                                  true,               true,
                                  nvptx_sreg,         nvptx_grid_barrier,
                                  nvptx_block_barrier, nvptx_warp_barrier,
                                  nvptx_warp_sum,     nvptx_math,
                                  nvptx_entry};

/* ---- PTX ---------------------------------------------------------------------------- */

static LLVMTargetMachineRef nvptx_machine(const char *arch, CtxDiag *diag) {
  cg_llvm_options();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  static const char triple[] = "nvptx64-nvidia-cuda";
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    CTX_ICE(diag, "codegen: LLVM has no NVPTX target: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, arch, "",
                                                    LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                                    LLVMCodeModelDefault);
  if (!tm) CTX_ICE(diag, "codegen: cannot make an NVPTX target machine for '%s'", arch);
  return tm;
}

bool cg_emit_ptx(CtxBuf *out, const IlirKernel *k, const char *arch, bool llvm_ir,
                 CtxDiag *diag) {
  LLVMTargetMachineRef tm = nvptx_machine(arch, diag);
  if (!tm) return false;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(k->name, ctx);
  LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, layout);
  LLVMDisposeTargetData(layout);
  bool ok = cg_emit_target_module(ctx, mod, k, &cg_target_nvptx, diag);
  char *msg = NULL;
  if (ok) {
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (err) {
      char *m = LLVMGetErrorMessage(err);
      CTX_ICE(diag, "codegen: optimizing the NVPTX kernel: %s", m);
      LLVMDisposeErrorMessage(m);
      ok = false;
    }
  }
  if (ok && llvm_ir) {
    msg = LLVMPrintModuleToString(mod);
    ctx_buf_puts(out, msg);
  } else if (ok) {
    LLVMMemoryBufferRef mem = NULL;
    ok = !LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &mem);
    if (ok) ctx_buf_write(out, LLVMGetBufferStart(mem), LLVMGetBufferSize(mem));
    else CTX_ICE(diag, "codegen: emitting PTX: %s", msg ? msg : "");
    if (mem) LLVMDisposeMemoryBuffer(mem);
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ok;
}
