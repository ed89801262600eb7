/* cg_call.c — a C function of its own signature around a kernel run on one
 * node (codegen.h, CgCall): what ctx repl compiles an expression or a call
 * of a def into, and calls through libffi.
 *
 *   float|void NAME(a0, a1, ..., out0, out1, ...)
 *     bufs[b] = the parameter CgCall.buf_arg[b] (a pointer, or a float
 *               argument spilled to the stack), or a buffer made here for a
 *               structure of one node: levels {0, 1}, num_deps {0}, every
 *               dependency slot absent (= num_nodes = 1), zeroed rows for
 *               values, results and scratch (calloc, freed before returning)
 *     KERNEL(bufs, 1, 1, 0, 1, NULL, NULL)
 *     the result fields copied from row 0 of the output's RESULT buffer to
 *     their pointer parameters, or one scalar field returned
 *
 * The wrapper is emitted into the kernel's module before it is optimized,
 * so the kernel is inlined into it. A kernel with PACKED buffers (weights
 * transposed when a model is loaded) cannot be called this way: the caller
 * compiles without register tiles.
 */
#include "codegen/cg_int.h"

#include <stdlib.h>

typedef struct {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef ptr, i32, i64, f32;
  LLVMValueRef calloc_fn, free_fn;
  LLVMTypeRef calloc_ty, free_ty;
} CallEmitter;

/* A private constant i32 array of [n] elements, element 0 [first], the others [rest]. */
static LLVMValueRef const_i32s(CallEmitter *C, const char *name, long n, int first, int rest) {
  LLVMValueRef *v = ctx_xmalloc(sizeof *v * (size_t)(n + 1));
  for (long i = 0; i < n; i++) v[i] = LLVMConstInt(C->i32, (unsigned long long)(i ? rest : first), 0);
  LLVMTypeRef t = LLVMArrayType2(C->i32, (uint64_t)n);
  LLVMValueRef g = LLVMAddGlobal(C->mod, t, name);
  LLVMSetInitializer(g, LLVMConstArray2(C->i32, v, (uint64_t)n));
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  free(v);
  return g;
}

/* calloc([elems] + 1, 4): one spare element keeps a zero-sized buffer valid. */
static LLVMValueRef zeroed(CallEmitter *C, long elems) {
  LLVMValueRef args[2] = {LLVMConstInt(C->i64, (unsigned long long)elems + 1, 0),
                          LLVMConstInt(C->i64, 4, 0)};
  return LLVMBuildCall2(C->b, C->calloc_ty, C->calloc_fn, args, 2, "buf");
}

/* The pointer for buffer [b] that the wrapper makes itself (NULL: it
 * cannot); [*owned] when it must be freed. */
static LLVMValueRef made_buffer(CallEmitter *C, const IlirKernel *k, int b, bool *owned) {
  const IlirBuf *buf = &k->bufs[b];
  *owned = false;
  switch (buf->kind) {
  case ILIR_BUF_LEVELS: return const_i32s(C, "call.levels", 2, 0, 1);
  case ILIR_BUF_PHASES: return const_i32s(C, "call.phases", 1, 1, 1); /* one level */
  case ILIR_BUF_ARITY_END: /* the one node (a leaf) is in the group of K = 0 only */
    return const_i32s(C, "call.arity_end", 1, buf->size == 0, 0);
  case ILIR_BUF_NUM_DEPS: return const_i32s(C, "call.num_deps", 2, 0, 0);
  case ILIR_BUF_DEP: return const_i32s(C, "call.dep", k->max_deps + 1, 1, 1);
  case ILIR_BUF_VALUES:
  case ILIR_BUF_IVALUES:
  case ILIR_BUF_RESULT:
  case ILIR_BUF_SCRATCH:
  case ILIR_BUF_LEVEL_SCRATCH: /* (num_nodes + 1) rows of [size] */
    *owned = true;
    return zeroed(C, 2 * (buf->kind == ILIR_BUF_VALUES || buf->kind == ILIR_BUF_IVALUES
                              ? k->values_per_node
                              : buf->size));
  case ILIR_BUF_INVARIANT:
  case ILIR_BUF_PARAM:
    *owned = true;
    return zeroed(C, buf->size);
  case ILIR_BUF_PACKED: break;
  }
  return NULL;
}

static void declare_libc(CallEmitter *C) {
  LLVMTypeRef cargs[2] = {C->i64, C->i64};
  C->calloc_ty = LLVMFunctionType(C->ptr, cargs, 2, 0);
  C->calloc_fn = LLVMAddFunction(C->mod, "calloc", C->calloc_ty);
  C->free_ty = LLVMFunctionType(LLVMVoidTypeInContext(C->ctx), &C->ptr, 1, 0);
  C->free_fn = LLVMAddFunction(C->mod, "free", C->free_ty);
}

/* The wrapper's LLVM function type. */
static LLVMTypeRef call_type(CallEmitter *C, const CgCall *call, bool *ret_f32) {
  LLVMTypeRef *ps = ctx_xmalloc(sizeof *ps * (size_t)(call->nargs + 1));
  for (int i = 0; i < call->nargs; i++) ps[i] = call->args[i] == CG_ARG_F32 ? C->f32 : C->ptr;
  *ret_f32 = false;
  for (int r = 0; r < call->nresults; r++) *ret_f32 |= call->res_arg[r] < 0;
  LLVMTypeRef ft = LLVMFunctionType(*ret_f32 ? C->f32 : LLVMVoidTypeInContext(C->ctx), ps,
                                    (unsigned)call->nargs, 0);
  free(ps);
  return ft;
}

/* Copies the result fields out of [res] (the output RESULT buffer's row 0)
 * and returns the returned scalar, if any. */
static LLVMValueRef copy_results(CallEmitter *C, const CgCall *call, LLVMValueRef fn,
                                 LLVMValueRef res) {
  LLVMValueRef ret = NULL;
  for (int r = 0; r < call->nresults; r++) {
    LLVMValueRef off = LLVMConstInt(C->i64, (unsigned long long)call->res_off[r], 0);
    LLVMValueRef src = LLVMBuildGEP2(C->b, C->f32, res, &off, 1, "field");
    if (call->res_arg[r] < 0) {
      ret = LLVMBuildLoad2(C->b, C->f32, src, "ret");
      continue;
    }
    LLVMValueRef dst = LLVMGetParam(fn, (unsigned)call->res_arg[r]);
    LLVMBuildMemCpy(C->b, dst, 4, src, 4,
                    LLVMConstInt(C->i64, (unsigned long long)call->res_size[r] * 4, 0));
  }
  return ret;
}

/* Emits the body: buffers, the kernel call, the results, the frees. */
static bool emit_body(CallEmitter *C, const IlirKernel *k, const CgCall *call,
                      LLVMValueRef fn, LLVMValueRef kernel, CtxDiag *diag) {
  LLVMValueRef table = LLVMBuildAlloca(C->b, LLVMArrayType2(C->ptr, (uint64_t)k->nbufs + 1),
                                       "bufs");
  LLVMValueRef *ptrs = ctx_xmalloc(sizeof *ptrs * (size_t)(k->nbufs + 1));
  bool *owned = ctx_xmalloc(sizeof *owned * (size_t)(k->nbufs + 1));
  bool ok = true;
  for (int b = 0; b < k->nbufs && ok; b++) {
    int a = call->buf_arg[b];
    owned[b] = false;
    if (a >= 0 && call->args[a] == CG_ARG_F32) {
      ptrs[b] = LLVMBuildAlloca(C->b, C->f32, "scalar");
      LLVMBuildStore(C->b, LLVMGetParam(fn, (unsigned)a), ptrs[b]);
    } else if (a >= 0) {
      ptrs[b] = LLVMGetParam(fn, (unsigned)a);
    } else if (!(ptrs[b] = made_buffer(C, k, b, &owned[b]))) {
      CTX_ICE(diag, "codegen: buffer '%s' of '%s' cannot be made for a call",
              k->bufs[b].name, k->name);
      ok = false;
    }
    LLVMValueRef idx = LLVMConstInt(C->i64, (unsigned long long)b, 0);
    if (ok) LLVMBuildStore(C->b, ptrs[b], LLVMBuildGEP2(C->b, C->ptr, table, &idx, 1, ""));
  }
  LLVMValueRef ret = NULL;
  if (ok) {
    LLVMValueRef null = LLVMConstNull(C->ptr), one = LLVMConstInt(C->i64, 1, 0);
    LLVMValueRef args[7] = {table, one, one, LLVMConstInt(C->i64, 0, 0), one, null, null};
    LLVMBuildCall2(C->b, LLVMGlobalGetValueType(kernel), kernel, args, 7, "");
    ret = copy_results(C, call, fn, ptrs[k->out_buf]);
    for (int b = 0; b < k->nbufs; b++)
      if (owned[b]) LLVMBuildCall2(C->b, C->free_ty, C->free_fn, &ptrs[b], 1, "");
    if (ret) LLVMBuildRet(C->b, ret);
    else LLVMBuildRetVoid(C->b);
  }
  free(ptrs);
  free(owned);
  return ok;
}

bool cg_emit_call(LLVMContextRef ctx, LLVMModuleRef mod, const IlirKernel *k,
                  const CgCall *call, CtxDiag *diag) {
  CallEmitter C = {ctx, mod, LLVMCreateBuilderInContext(ctx), LLVMPointerTypeInContext(ctx, 0),
                   LLVMInt32TypeInContext(ctx), LLVMInt64TypeInContext(ctx),
                   LLVMFloatTypeInContext(ctx), NULL, NULL, NULL, NULL};
  LLVMValueRef kernel = LLVMGetNamedFunction(mod, k->name);
  if (!kernel) {
    CTX_ICE(diag, "codegen: no kernel '%s' to call", k->name);
    LLVMDisposeBuilder(C.b);
    return false;
  }
  declare_libc(&C);
  bool ret_f32;
  LLVMTypeRef ft = call_type(&C, call, &ret_f32);
  LLVMValueRef fn = LLVMAddFunction(mod, call->name, ft);
  LLVMPositionBuilderAtEnd(C.b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  bool ok = emit_body(&C, k, call, fn, kernel, diag);
  /* inlined into the wrapper; nothing else calls it */
  LLVMSetLinkage(kernel, LLVMInternalLinkage);
  LLVMDisposeBuilder(C.b);
  return ok;
}
