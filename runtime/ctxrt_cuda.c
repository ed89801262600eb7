/* ctxrt_cuda.c — running a model's PTX kernel on an NVIDIA GPU through the
 * CUDA driver API (ctxrt.h, "Compiled models"; docs/cuda.md).
 *
 * The driver is loaded at run time: dlopen("libcuda.so.1") (or the path in
 * CTXRT_CUDA_DRIVER), never linked, so a program built with the runtime
 * starts on a machine without one and gets `error: no CUDA driver
 * (libcuda.so.1 not found)` only when it creates a CUDA model; once loaded
 * it stays mapped (RTLD_NODELETE) until the process exits. Entry points
 * are looked up by their versioned names (cuMemAlloc_v2, ...: the
 * unversioned ones are the 32-bit ABI). The few types and constants used are
 * declared here; where the toolkit's cuda.h is found at build time they are
 * checked against it.
 *
 *   create   cuInit, device 0's primary context, the PTX module (the driver
 *            JIT-compiles it for the GPU at hand; its log in the error), the
 *            occupancy check (cooperative launch supported, blocks of
 *            CTXRT_CUDA_THREADS co-resident: grid <= occupancy x SMs, else a
 *            loud error, never a hang), a stream, the weights uploaded once
 *            (on that stream, synchronized)
 *   run      the linearized batch's arrays and the device pointer table
 *            packed into one pinned buffer, one asynchronous copy, zero rows
 *            and the barrier counter set, one cooperative launch, the output
 *            rows copied back, one synchronization
 *
 * A run's buffers grow and are kept, as on the CPU.
 */
#include "ctxrt_int.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CTXRT_HAVE_CUDA_H
#include <cuda.h>
#endif

/* ---- the driver API (the subset used, CUDA 12/13 ABI) --------------------------- */

typedef int CtxCuResult;
typedef int CtxCuDevice;
typedef void *CtxCuHandle; /* CUcontext, CUmodule, CUfunction, CUstream */
typedef unsigned long long CtxCuPtr;

enum {
  CU_ATTR_SM_COUNT = 16,       /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
  CU_ATTR_COOPERATIVE = 95,    /* CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH */
  CU_ATTR_SHARED_OPTIN = 97,   /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  CU_FUNC_DYN_SHARED = 8,      /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  CU_JIT_LOG = 5,              /* CU_JIT_ERROR_LOG_BUFFER */
  CU_JIT_LOG_SIZE = 6,         /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
  CU_STREAM_NONBLOCKING = 1,   /* CU_STREAM_NON_BLOCKING */
  STATIC_SHARED_MAX = 48 * 1024 /* above: dynamic shared memory by opt-in */
};

#ifdef CTXRT_HAVE_CUDA_H
_Static_assert((int)CU_ATTR_SM_COUNT == (int)CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT &&
                   (int)CU_ATTR_COOPERATIVE == (int)CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH &&
                   (int)CU_ATTR_SHARED_OPTIN ==
                       (int)CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN &&
                   (int)CU_FUNC_DYN_SHARED == (int)CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
                   (int)CU_JIT_LOG == (int)CU_JIT_ERROR_LOG_BUFFER &&
                   (int)CU_JIT_LOG_SIZE == (int)CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES &&
                   (int)CU_STREAM_NONBLOCKING == (int)CU_STREAM_NON_BLOCKING &&
                   sizeof(CtxCuPtr) == sizeof(CUdeviceptr) &&
                   sizeof(CtxCuResult) == sizeof(CUresult),
               "the driver API declarations differ from cuda.h");
#endif

/* One entry per function: its versioned symbol and its slot in CtxrtCudaApi. */
#define CTXRT_CUDA_FUNCS(X)                                                                  \
  X(init, "cuInit", (unsigned))                                                              \
  X(device_get, "cuDeviceGet", (CtxCuDevice *, int))                                         \
  X(device_count, "cuDeviceGetCount", (int *))                                               \
  X(device_attr, "cuDeviceGetAttribute", (int *, int, CtxCuDevice))                          \
  X(ctx_retain, "cuDevicePrimaryCtxRetain", (CtxCuHandle *, CtxCuDevice))                    \
  X(ctx_release, "cuDevicePrimaryCtxRelease_v2", (CtxCuDevice))                              \
  X(ctx_set, "cuCtxSetCurrent", (CtxCuHandle))                                               \
  X(module_load, "cuModuleLoadDataEx", (CtxCuHandle *, const void *, unsigned, int *, void **)) \
  X(module_function, "cuModuleGetFunction", (CtxCuHandle *, CtxCuHandle, const char *))      \
  X(module_unload, "cuModuleUnload", (CtxCuHandle))                                          \
  X(func_attr, "cuFuncSetAttribute", (CtxCuHandle, int, int))                                \
  X(occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor", (int *, CtxCuHandle, int, size_t)) \
  X(mem_alloc, "cuMemAlloc_v2", (CtxCuPtr *, size_t))                                        \
  X(mem_free, "cuMemFree_v2", (CtxCuPtr))                                                    \
  X(host_alloc, "cuMemAllocHost_v2", (void **, size_t))                                      \
  X(host_free, "cuMemFreeHost", (void *))                                                    \
  X(copy_htod_async, "cuMemcpyHtoDAsync_v2", (CtxCuPtr, const void *, size_t, CtxCuHandle))  \
  X(copy_dtoh_async, "cuMemcpyDtoHAsync_v2", (void *, CtxCuPtr, size_t, CtxCuHandle))        \
  X(memset32_async, "cuMemsetD32Async", (CtxCuPtr, unsigned, size_t, CtxCuHandle))           \
  X(stream_create, "cuStreamCreate", (CtxCuHandle *, unsigned))                              \
  X(stream_destroy, "cuStreamDestroy_v2", (CtxCuHandle))                                     \
  X(stream_sync, "cuStreamSynchronize", (CtxCuHandle))                                       \
  X(launch_coop, "cuLaunchCooperativeKernel",                                                \
    (CtxCuHandle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,      \
     CtxCuHandle, void **))                                                                  \
  X(error_name, "cuGetErrorName", (CtxCuResult, const char **))

typedef struct {
  void *lib;
#define CTXRT_CUDA_SLOT(field, sym, args) CtxCuResult(*field) args;
  CTXRT_CUDA_FUNCS(CTXRT_CUDA_SLOT)
#undef CTXRT_CUDA_SLOT
} CtxrtCudaApi;

/* The name of the driver's error [r]: cuGetErrorName's, or for the codes a
 * machine without a working driver gives, cuda.h's (the toolkit's stub
 * library answers cuGetErrorName with 34 too). */
static const char *cu_error_name(const CtxrtCudaApi *api, CtxCuResult r) {
  static const struct { int code; const char *name; } known[] = {
      {2, "CUDA_ERROR_OUT_OF_MEMORY"},        {34, "CUDA_ERROR_STUB_LIBRARY"},
      {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"}, {100, "CUDA_ERROR_NO_DEVICE"},
      {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},  {218, "CUDA_ERROR_INVALID_PTX"},
      {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
      {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"}};
  const char *name = NULL;
  if (api->error_name && api->error_name(r, &name) == 0 && name) return name;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].code == r) return known[i].name;
  return "unknown error";
}

/* [r] as `error: CUDA driver: WHAT failed: NAME (r)` in [err]. */
static CtxrtStatus cu_fail(const CtxrtCudaApi *api, CtxCuResult r, const char *what,
                           CtxrtError *err) {
  const char *name = cu_error_name(api, r);
  return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "CUDA driver: %s failed: %s (%d)", what,
                    name, r);
}

static CtxrtStatus api_load(CtxrtCudaApi *api, CtxrtError *err) {
  memset(api, 0, sizeof *api);
  const char *path = getenv("CTXRT_CUDA_DRIVER");
  if (!path || !*path) path = "libcuda.so.1";
  /* never unmapped (as CUDA's own runtime never unloads it): after cuInit
   * the driver may have threads and exit-time handlers in the process, and
   * unmapping its code under them can crash the process at exit, after a
   * correct run */
  api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!api->lib)
    return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "no CUDA driver (%s not found)", path);
#define CTXRT_CUDA_LOOKUP(field, sym, args)                                                  \
  *(void **)&api->field = dlsym(api->lib, sym);                                              \
  if (!api->field) {                                                                         \
    dlclose(api->lib);                                                                       \
    api->lib = NULL;                                                                         \
    return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "the CUDA driver %s has no %s", path,  \
                      sym);                                                                  \
  }
  CTXRT_CUDA_FUNCS(CTXRT_CUDA_LOOKUP)
#undef CTXRT_CUDA_LOOKUP
  return CTXRT_OK;
}

static void api_unload(CtxrtCudaApi *api) {
  if (api->lib) dlclose(api->lib);
  api->lib = NULL;
}

CtxrtStatus ctxrt_cuda_probe(int32_t *devices, CtxrtError *err) {
  CtxrtCudaApi api;
  int n = 0;
  *devices = 0;
  CtxrtStatus st = api_load(&api, err);
  if (st) return st;
  CtxCuResult r = api.init(0);
  if (r) st = cu_fail(&api, r, "cuInit", err);
  else if ((r = api.device_count(&n))) st = cu_fail(&api, r, "cuDeviceGetCount", err);
  else if (n < 1) st = ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "no CUDA GPU found");
  *devices = st ? 0 : n;
  api_unload(&api);
  return st;
}

/* ---- a model on the GPU ------------------------------------------------------------- */

struct CtxrtCuda {
  CtxrtCudaApi api;
  const CtxrtModelDesc *d;
  CtxCuDevice dev;
  CtxCuHandle ctx, module, fn, stream;
  bool ctx_held;
  int max_blocks;           /* co-resident blocks: occupancy x SMs */
  CtxCuPtr weights;         /* every PARAM / PACKED buffer, one block */
  CtxCuPtr *dptr;           /* [num_bufs]: this run's device pointers */
  CtxCuPtr *rows;           /* [num_bufs]: RESULT, SCRATCH, ... device rows */
  size_t *rows_cap;         /* [num_bufs]: their sizes in bytes */
  CtxCuPtr batch, counter;  /* the packed inputs and pointer table; the barrier's u32 */
  size_t batch_cap;
  unsigned char *pinned;    /* the host side of [batch] */
  size_t pinned_cap;
  float *out;               /* pinned: the output buffer's rows, copied back */
  size_t out_cap;
};

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The bytes of buffer [b]'s data for a batch (inputs: what the host holds; none
 * of a view of the values the linearizer skipped, which the kernel never reads). */
static size_t buf_bytes(const CtxrtModelBuf *b, const CtxrtLinear *lin, int64_t widest) {
  size_t n = (size_t)lin->num_nodes, v = (size_t)lin->num_values;
  switch ((CtxrtBufKind)b->kind) {
  case CTXRT_BUF_VALUES: return lin->skip_val ? 0 : n * v * 4;
  case CTXRT_BUF_IVALUES: return lin->skip_ival ? 0 : n * v * 4;
  case CTXRT_BUF_DEP: return n * (size_t)lin->max_deps * 4;
  case CTXRT_BUF_NUM_DEPS: return n * 4;
  case CTXRT_BUF_LEVELS: return ((size_t)lin->num_levels + 1) * 4;
  case CTXRT_BUF_ARITY_END: return (size_t)lin->num_levels * 4;
  case CTXRT_BUF_RESULT: case CTXRT_BUF_SCRATCH: return (n + 1) * (size_t)b->size * 4;
  case CTXRT_BUF_LEVEL_SCRATCH: return ((size_t)widest + 1) * (size_t)b->size * 4;
  case CTXRT_BUF_INVARIANT: return (size_t)b->size * 4;
  default: return (size_t)b->size * 4; /* PARAM, PACKED */
  }
}

static bool is_input(int32_t kind) {
  return kind == CTXRT_BUF_VALUES || kind == CTXRT_BUF_IVALUES || kind == CTXRT_BUF_DEP ||
         kind == CTXRT_BUF_NUM_DEPS || kind == CTXRT_BUF_LEVELS || kind == CTXRT_BUF_ARITY_END;
}

/* The ordinal of the GPU a model runs on, among those the driver lists (so
 * counted after CUDA_VISIBLE_DEVICES): the environment variable
 * CTXRT_CUDA_DEVICE's, default 0. A value that is not a GPU of this machine
 * is an error, never a run on another GPU. */
static CtxrtStatus device_ordinal(CtxrtCudaApi *a, int *ordinal, CtxrtError *err) {
  int n = 0;
  CtxCuResult r = a->device_count(&n);
  if (r) return cu_fail(a, r, "cuDeviceGetCount", err);
  if (n < 1) return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "no CUDA GPU found");
  const char *env = getenv("CTXRT_CUDA_DEVICE");
  *ordinal = 0;
  if (!env || !*env) return CTXRT_OK;
  char *end;
  long v = strtol(env, &end, 10);
  if (*end || env[0] < '0' || env[0] > '9' || v < 0 || v >= n) {
    if (n == 1)
      return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "CTXRT_CUDA_DEVICE=%s: not a GPU of "
                        "this machine (the CUDA driver lists one: 0)", env);
    return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "CTXRT_CUDA_DEVICE=%s: not a GPU of this "
                      "machine (the CUDA driver lists %d: 0 to %d)", env, n, n - 1);
  }
  *ordinal = (int)v;
  return CTXRT_OK;
}

/* Context, module, function, stream; the occupancy and co-residency checks. */
static CtxrtStatus open_kernel(CtxrtCuda *g, CtxrtError *err) {
  CtxrtCudaApi *a = &g->api;
  CtxCuResult r;
  int sms = 0, coop = 0, optin = 0, per_sm = 0, ordinal = 0;
  if ((r = a->init(0))) return cu_fail(a, r, "cuInit", err);
  CtxrtStatus st = device_ordinal(a, &ordinal, err);
  if (st) return st;
  if ((r = a->device_get(&g->dev, ordinal))) return cu_fail(a, r, "cuDeviceGet", err);
  if ((r = a->ctx_retain(&g->ctx, g->dev))) return cu_fail(a, r, "cuDevicePrimaryCtxRetain", err);
  g->ctx_held = true;
  if ((r = a->ctx_set(g->ctx))) return cu_fail(a, r, "cuCtxSetCurrent", err);
  char log[4096] = "";
  int opts[2] = {CU_JIT_LOG, CU_JIT_LOG_SIZE};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  if ((r = a->module_load(&g->module, g->d->ptx, 2, opts, vals))) {
    return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "CUDA driver: loading the kernel's PTX "
                      "failed: %s (%d): %.3000s", cu_error_name(a, r), r, log);
  }
  if ((r = a->module_function(&g->fn, g->module, g->d->ptx_entry)))
    return cu_fail(a, r, "cuModuleGetFunction", err);
  if ((r = a->device_attr(&sms, CU_ATTR_SM_COUNT, g->dev)) ||
      (r = a->device_attr(&coop, CU_ATTR_COOPERATIVE, g->dev)) ||
      (r = a->device_attr(&optin, CU_ATTR_SHARED_OPTIN, g->dev)))
    return cu_fail(a, r, "cuDeviceGetAttribute", err);
  if (!coop)
    return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "model '%s': the GPU cannot launch "
                      "cooperative kernels (one kernel per batch needs it)", g->d->name);
  int64_t shared = g->d->gpu_shared_bytes;
  if (shared > optin)
    return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "model '%s': the kernel caches %lld bytes "
                      "of weights in shared memory, the GPU has %d per block", g->d->name,
                      (long long)shared, optin);
  if (shared > STATIC_SHARED_MAX && (r = a->func_attr(g->fn, CU_FUNC_DYN_SHARED, (int)shared)))
    return cu_fail(a, r, "cuFuncSetAttribute", err);
  if ((r = a->occupancy(&per_sm, g->fn, g->d->gpu_block_threads, (size_t)shared)))
    return cu_fail(a, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor", err);
  if (per_sm < 1)
    return ctxrt__err(err, CTXRT_ERR_DEVICE, NULL, 0, "model '%s': no block of %d threads of "
                      "the kernel fits on a multiprocessor (registers or shared memory)",
                      g->d->name, (int)g->d->gpu_block_threads);
  g->max_blocks = per_sm * sms;
  if ((r = a->stream_create(&g->stream, CU_STREAM_NONBLOCKING)))
    return cu_fail(a, r, "cuStreamCreate", err);
  return CTXRT_OK;
}

/* The weights (host data at host[b] for PARAM / PACKED buffers) in one block,
 * copied on the model's stream, which is then synchronized. Not with the
 * "synchronous" cuMemcpyHtoD: from pageable memory it returns once the data
 * is staged, its DMA still pending on the legacy default stream, which a
 * non-blocking stream does not wait for; the first kernel could read
 * weights not yet written. */
static CtxrtStatus upload_weights(CtxrtCuda *g, void *const *host, CtxrtError *err) {
  const CtxrtModelDesc *d = g->d;
  size_t total = 16;
  for (int32_t b = 0; b < d->num_bufs; b++)
    if (d->bufs[b].kind == CTXRT_BUF_PARAM || d->bufs[b].kind == CTXRT_BUF_PACKED)
      total += align16((size_t)d->bufs[b].size * 4);
  CtxCuResult r = g->api.mem_alloc(&g->weights, total);
  if (r) return cu_fail(&g->api, r, "allocating the weights (cuMemAlloc)", err);
  size_t at = 0;
  for (int32_t b = 0; b < d->num_bufs; b++) {
    if (d->bufs[b].kind != CTXRT_BUF_PARAM && d->bufs[b].kind != CTXRT_BUF_PACKED) continue;
    size_t bytes = (size_t)d->bufs[b].size * 4;
    g->dptr[b] = g->weights + at;
    if (bytes && (r = g->api.copy_htod_async(g->dptr[b], host[b], bytes, g->stream)))
      return cu_fail(&g->api, r, "uploading the weights (cuMemcpyHtoDAsync)", err);
    at += align16(bytes);
  }
  if ((r = g->api.stream_sync(g->stream)))
    return cu_fail(&g->api, r, "uploading the weights (cuStreamSynchronize)", err);
  return CTXRT_OK;
}

CtxrtStatus ctxrt__cuda_create(const CtxrtModelDesc *d, void *const *host_bufs, CtxrtCuda **out,
                               CtxrtError *err) {
  *out = NULL;
  if (!d->ptx || !d->ptx_entry || d->gpu_block_threads < 1)
    return ctxrt__err(err, CTXRT_ERR_ARG, NULL, 0, "model '%s': no CUDA kernel", d->name);
  CtxrtCuda *g = calloc(1, sizeof *g);
  size_t n = (size_t)(d->num_bufs > 0 ? d->num_bufs : 0) + 1;
  if (g) {
    g->d = d;
    g->dptr = calloc(n, sizeof *g->dptr);
    g->rows = calloc(n, sizeof *g->rows);
    g->rows_cap = calloc(n, sizeof *g->rows_cap);
  }
  if (!g || !g->dptr || !g->rows || !g->rows_cap) {
    ctxrt__cuda_destroy(g);
    return ctxrt__nomem(err, NULL);
  }
  CtxrtStatus st = api_load(&g->api, err);
  if (!st) st = open_kernel(g, err);
  if (!st) st = upload_weights(g, host_bufs, err);
  CtxCuResult r;
  if (!st && (r = g->api.mem_alloc(&g->counter, 16)))
    st = cu_fail(&g->api, r, "cuMemAlloc", err);
  if (st) {
    ctxrt__cuda_destroy(g);
    return st;
  }
  *out = g;
  return CTXRT_OK;
}

void ctxrt__cuda_destroy(CtxrtCuda *g) {
  if (!g) return;
  CtxrtCudaApi *a = &g->api;
  if (a->lib) {
    if (g->ctx_held) a->ctx_set(g->ctx); /* as in a run: possibly another thread */
    if (g->stream) a->stream_sync(g->stream), a->stream_destroy(g->stream);
    for (int32_t b = 0; g->rows && b < g->d->num_bufs; b++)
      if (g->rows[b]) a->mem_free(g->rows[b]);
    if (g->weights) a->mem_free(g->weights);
    if (g->batch) a->mem_free(g->batch);
    if (g->counter) a->mem_free(g->counter);
    if (g->pinned) a->host_free(g->pinned);
    if (g->out) a->host_free(g->out);
    if (g->module) a->module_unload(g->module);
    if (g->ctx_held) a->ctx_release(g->dev);
    api_unload(a);
  }
  free(g->dptr);
  free(g->rows);
  free(g->rows_cap);
  free(g);
}

/* ---- a batch ------------------------------------------------------------------------- */

/* Device memory of at least [need] bytes at [*p] (capacity [*cap]). */
static CtxCuResult grow_device(CtxrtCuda *g, CtxCuPtr *p, size_t *cap, size_t need) {
  if (need <= *cap && *p) return 0;
  if (*p) g->api.mem_free(*p);
  *p = 0;
  *cap = 0;
  CtxCuResult r = g->api.mem_alloc(p, need + 16);
  if (!r) *cap = need + 16;
  return r;
}

static CtxCuResult grow_pinned(CtxrtCuda *g, void **p, size_t *cap, size_t need) {
  if (need <= *cap && *p) return 0;
  if (*p) g->api.host_free(*p);
  *p = NULL;
  *cap = 0;
  CtxCuResult r = g->api.host_alloc(p, need + 16);
  if (!r) *cap = need + 16;
  return r;
}

/* The batch's inputs (host data at host[b]) and the device pointer table,
 * packed into the pinned buffer: returns its size, the table at [*table]. */
static size_t pack_batch(CtxrtCuda *g, void *const *host, const CtxrtLinear *lin,
                         int64_t widest, size_t *table, bool copy) {
  const CtxrtModelDesc *d = g->d;
  size_t at = 0;
  for (int32_t b = 0; b < d->num_bufs; b++) {
    if (!is_input(d->bufs[b].kind)) continue;
    size_t bytes = buf_bytes(&d->bufs[b], lin, widest);
    if (copy) {
      if (bytes) memcpy(g->pinned + at, host[b], bytes);
      g->dptr[b] = g->batch + at;
    }
    at += align16(bytes + 4); /* never empty: every pointer distinct */
  }
  *table = at;
  if (copy) memcpy(g->pinned + at, g->dptr, (size_t)d->num_bufs * sizeof *g->dptr);
  return at + (size_t)d->num_bufs * sizeof *g->dptr;
}

/* Device rows for RESULT, SCRATCH, LEVEL_SCRATCH and INVARIANT buffers, the
 * last row of RESULT and SCRATCH zeroed (the absent dependency). */
static CtxrtStatus bind_rows(CtxrtCuda *g, const CtxrtLinear *lin, int64_t widest,
                             CtxrtError *err) {
  const CtxrtModelDesc *d = g->d;
  for (int32_t b = 0; b < d->num_bufs; b++) {
    int32_t k = d->bufs[b].kind;
    if (k == CTXRT_BUF_PARAM || k == CTXRT_BUF_PACKED || is_input(k)) continue;
    size_t bytes = buf_bytes(&d->bufs[b], lin, widest);
    CtxCuResult r = grow_device(g, &g->rows[b], &g->rows_cap[b], bytes);
    if (r) return cu_fail(&g->api, r, "allocating a batch's rows (cuMemAlloc)", err);
    g->dptr[b] = g->rows[b];
    size_t row = (size_t)d->bufs[b].size;
    if ((k == CTXRT_BUF_RESULT || k == CTXRT_BUF_SCRATCH) && row &&
        (r = g->api.memset32_async(g->rows[b] + (size_t)lin->num_nodes * row * 4, 0, row,
                                   g->stream)))
      return cu_fail(&g->api, r, "cuMemsetD32Async", err);
  }
  return CTXRT_OK;
}

CtxrtStatus ctxrt__cuda_run(CtxrtCuda *g, void *const *host, const CtxrtLinear *lin,
                            int64_t widest, const float **result, CtxrtError *err) {
  const CtxrtModelDesc *d = g->d;
  CtxrtCudaApi *a = &g->api;
  CtxCuResult r;
  /* the context is current per thread: a model may run on another thread
   * than the one that created it */
  if ((r = a->ctx_set(g->ctx))) return cu_fail(a, r, "cuCtxSetCurrent", err);
  size_t table, bytes = pack_batch(g, host, lin, widest, &table, false);
  size_t out_bytes = buf_bytes(&d->bufs[d->out_buf], lin, widest);
  if ((r = grow_device(g, &g->batch, &g->batch_cap, bytes)) ||
      (r = grow_pinned(g, (void **)&g->pinned, &g->pinned_cap, bytes)) ||
      (r = grow_pinned(g, (void **)&g->out, &g->out_cap, out_bytes)))
    return cu_fail(a, r, "allocating a batch's buffers", err);
  CtxrtStatus st = bind_rows(g, lin, widest, err);
  if (st) return st;
  pack_batch(g, host, lin, widest, &table, true);
  if ((r = a->copy_htod_async(g->batch, g->pinned, bytes, g->stream)) ||
      (r = a->memset32_async(g->counter, 0, 1, g->stream)))
    return cu_fail(a, r, "copying the batch to the GPU", err);
  CtxCuPtr bufs = g->batch + table;
  int64_t nodes = lin->num_nodes, levels = lin->num_levels;
  void *params[4] = {&bufs, &nodes, &levels, &g->counter};
  int64_t per = d->gpu_nodes_per_block > 1 ? d->gpu_nodes_per_block : 1;
  int64_t blocks = widest < 1 ? 1 : (widest + per - 1) / per;
  if (blocks > g->max_blocks || d->gpu_all_blocks) blocks = g->max_blocks;
  r = a->launch_coop(g->fn, (unsigned)blocks, 1, 1, (unsigned)d->gpu_block_threads, 1, 1,
                     (unsigned)d->gpu_shared_bytes, g->stream, params);
  if (r) return cu_fail(a, r, "launching the kernel (cuLaunchCooperativeKernel)", err);
  if ((r = a->copy_dtoh_async(g->out, g->rows[d->out_buf], out_bytes, g->stream)))
    return cu_fail(a, r, "copying the outputs back", err);
  if ((r = a->stream_sync(g->stream))) return cu_fail(a, r, "running the kernel", err);
  *result = g->out;
  return CTXRT_OK;
}
