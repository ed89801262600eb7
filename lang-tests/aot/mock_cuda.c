/* mock_cuda.c — a stand-in for the CUDA driver (libcuda.so.1) on a machine
 * without a GPU, for testing ctxrt_cuda.c end to end (lang-tests/aot/cuda_mock.py).
 *
 * It implements the entry points the runtime looks up with the same
 * signatures. "Device" memory is host memory the mock tracks: every copy,
 * memset and every pointer of the kernel's pointer table is checked against
 * the allocations (an error is a message and abort()), so a wrong size or
 * offset in the runtime shows here, and under AddressSanitizer as well. The
 * PTX cannot run, so a launch runs the CPU build of the same CUDA-scheduled
 * kernel (`ctx build --target cuda --on-cpu`: the same ILIR, so the same
 * buffer table), which MOCK_CUDA_KERNEL_LIB names, on one thread with the
 * launch's pointer table — after checking the launch as the driver would:
 * cooperative grid within occupancy x SMs, 256-thread blocks, the barrier
 * counter zeroed, no cuMemcpyHtoD still in flight on the legacy stream when
 * the kernel runs on a non-blocking one (from pageable memory that copy
 * returns once the data is staged, and a non-blocking stream does not wait
 * for its DMA).
 * As the real driver, the occupancy query and the launch refuse more than
 * 48 KB of dynamic shared memory with CUDA_ERROR_INVALID_VALUE unless the
 * function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES was set to at
 * least that amount first (cuFuncSetAttribute, up to the opt-in limit).
 * MOCK_CUDA_NBUFS is the kernel's buffer count (for the table check); where
 * MOCK_CUDA_REPORT names a file, each launch appends a line `shared N blocks
 * G device D` (its dynamic shared memory, grid and GPU) to it, so a test can
 * tell which path it ran. MOCK_CUDA_DEVICES is the number of GPUs (default 1).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*KernelFn)(void *const *, int64_t, int64_t, int64_t, int64_t, void (*)(void *),
                         void *);

enum {
  SMS = 4,
  PER_SM = 2,
  OPTIN = 232448,
  MAX_ALLOCS = 4096,
  DEFAULT_SHARED = 48 * 1024, /* dynamic shared memory without the opt-in */
  INVALID_VALUE = 1,          /* CUDA_ERROR_INVALID_VALUE */
  ATTR_MAX_DYN_SHARED = 8     /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
};

static struct {
  char *base[MAX_ALLOCS];
  size_t size[MAX_ALLOCS];
  int n;
  void *dyn_fn;        /* the function whose attribute was set, */
  int dyn_shared;      /* to this many bytes */
  int legacy_pending;  /* a cuMemcpyHtoD's DMA may be pending on the legacy stream */
  unsigned stream_flags;
} mem;

static void die(const char *what) {
  fprintf(stderr, "mock_cuda: %s\n", what);
  abort();
}

/* Is [p, p + n) inside one allocation? */
static int inside(const void *p, size_t n) {
  const char *c = p;
  for (int i = 0; i < mem.n; i++)
    if (mem.base[i] && c >= mem.base[i] && c + n <= mem.base[i] + mem.size[i]) return 1;
  return 0;
}

CUresult cuInit(unsigned flags);
CUresult cuInit(unsigned flags) { return flags ? 1 : 0; }
/* MOCK_CUDA_DEVICES GPUs (default 1) */
static int devices(void) {
  const char *n = getenv("MOCK_CUDA_DEVICES");
  return n && atoi(n) > 0 ? atoi(n) : 1;
}
static int the_device = -1; /* the one whose context is retained */
CUresult cuDeviceGet(int *d, int ordinal);
CUresult cuDeviceGet(int *d, int ordinal) {
  *d = ordinal;
  return ordinal >= 0 && ordinal < devices() ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGetCount(int *n) { *n = devices(); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev);
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  *v = attr == 16 ? SMS : attr == 95 ? 1 : attr == 97 ? OPTIN : 0;
  return 0;
}
static int the_ctx;
CUresult cuDevicePrimaryCtxRetain(void **c, int dev);
CUresult cuDevicePrimaryCtxRetain(void **c, int dev) {
  if (dev < 0 || dev >= devices()) return 101;
  the_device = dev;
  *c = &the_ctx;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev);
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return dev == the_device ? 0 : 101; }
CUresult cuCtxSetCurrent(void *c);
CUresult cuCtxSetCurrent(void *c) { return c == &the_ctx ? 0 : 201; }

static void *kernel_lib;
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opts, void **vals);
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opts, void **vals) {
  (void)n, (void)opts, (void)vals;
  if (!strstr(image, ".visible .entry")) return 218; /* CUDA_ERROR_INVALID_PTX */
  const char *lib = getenv("MOCK_CUDA_KERNEL_LIB");
  kernel_lib = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!kernel_lib) die("MOCK_CUDA_KERNEL_LIB does not load");
  *m = kernel_lib;
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name);
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  *f = dlsym(m, name);
  return *f ? 0 : 500; /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuModuleUnload(void *m);
CUresult cuModuleUnload(void *m) { dlclose(m); return 0; }
CUresult cuFuncSetAttribute(void *f, int attr, int v);
CUresult cuFuncSetAttribute(void *f, int attr, int v) {
  if (!f || attr != ATTR_MAX_DYN_SHARED || v < 0 || v > OPTIN) return INVALID_VALUE;
  mem.dyn_fn = f, mem.dyn_shared = v;
  return 0;
}
/* May F use SHM bytes of dynamic shared memory? */
static int shared_allowed(void *f, size_t shm) {
  size_t limit = f && f == mem.dyn_fn ? (size_t)mem.dyn_shared : DEFAULT_SHARED;
  return shm <= (limit > DEFAULT_SHARED ? limit : DEFAULT_SHARED);
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int threads, size_t shm);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int threads, size_t shm) {
  if (!shared_allowed(f, shm)) return INVALID_VALUE;
  *n = threads == 256 && shm <= OPTIN ? PER_SM : 0;
  return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (mem.n == MAX_ALLOCS) return 2;
  char *b = malloc(n ? n : 1);
  if (!b) return 2;
  memset(b, 0xA5, n); /* not zero: the runtime must zero what it needs */
  mem.base[mem.n] = b, mem.size[mem.n] = n, mem.n++;
  *p = (CUdeviceptr)(uintptr_t)b;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemFree_v2(CUdeviceptr p) {
  for (int i = 0; i < mem.n; i++)
    if (mem.base[i] == (char *)(uintptr_t)p) {
      free(mem.base[i]);
      mem.base[i] = NULL;
      return 0;
    }
  die("cuMemFree of memory not allocated");
  return 1;
}
CUresult cuMemAllocHost_v2(void **p, size_t n);
CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void *p);
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n);
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  if (!inside((void *)(uintptr_t)d, n)) die("cuMemcpyHtoD outside an allocation");
  memcpy((void *)(uintptr_t)d, s, n);
  mem.legacy_pending = 1;
  return 0;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
  (void)st;
  if (!inside((void *)(uintptr_t)d, n)) die("cuMemcpyHtoDAsync outside an allocation");
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st);
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  (void)st;
  if (!inside((void *)(uintptr_t)s, n)) die("cuMemcpyDtoH outside an allocation");
  memcpy(d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *st);
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *st) {
  (void)st;
  if (!inside((void *)(uintptr_t)d, n * 4)) die("cuMemsetD32 outside an allocation");
  for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)d + 4 * i, &v, 4);
  return 0;
}
static int the_stream;
CUresult cuStreamCreate(void **s, unsigned flags);
CUresult cuStreamCreate(void **s, unsigned flags) {
  mem.stream_flags = flags;
  *s = &the_stream;
  return 0;
}
CUresult cuStreamDestroy_v2(void *s);
CUresult cuStreamDestroy_v2(void *s) { return s == &the_stream ? 0 : 400; }
CUresult cuStreamSynchronize(void *s);
CUresult cuStreamSynchronize(void *s) { return s == &the_stream ? 0 : 400; }

CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shm, void *st, void **p);
CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shm, void *st, void **p) {
  if (st != &the_stream || gx < 1 || gy != 1 || gz != 1 || by != 1 || bz != 1) return 1;
  if (gx > SMS * PER_SM) return 720; /* CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE */
  if (bx != 256) die("a block is not 256 threads");
  if (!shared_allowed(f, shm)) return INVALID_VALUE; /* not opted in */
  void *const *bufs = *(void *const **)p[0];
  int64_t nodes = *(int64_t *)p[1], levels = *(int64_t *)p[2];
  unsigned *counter = *(unsigned **)p[3];
  const char *nb = getenv("MOCK_CUDA_NBUFS");
  int n = nb ? atoi(nb) : 0;
  if (!inside(bufs, (size_t)n * sizeof *bufs)) die("the pointer table is outside an allocation");
  for (int i = 0; i < n; i++)
    if (!inside(bufs[i], 4)) die("a buffer pointer is outside every allocation");
  if (!inside(counter, 4) || *counter != 0) die("the barrier counter is not zero");
  if (mem.legacy_pending && (mem.stream_flags & 1)) /* CU_STREAM_NON_BLOCKING */
    die("a launch on a non-blocking stream while a cuMemcpyHtoD may still be in flight on "
        "the legacy stream");
  const char *report = getenv("MOCK_CUDA_REPORT");
  FILE *rf = report ? fopen(report, "a") : NULL;
  if (report && !rf) die("MOCK_CUDA_REPORT cannot be opened");
  if (rf) fprintf(rf, "shared %u blocks %u device %d\n", shm, gx, the_device), fclose(rf);
  KernelFn kernel;
  *(void **)&kernel = f; /* dlsym's result (POSIX) */
  kernel(bufs, nodes, levels, 0, 1, NULL, NULL);
  *counter = 0x80000000u; /* as an odd number of grid barriers leaves it */
  return 0;
}
CUresult cuGetErrorName(CUresult r, const char **name);
CUresult cuGetErrorName(CUresult r, const char **name) {
  *name = r == 0               ? "CUDA_SUCCESS"
          : r == INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
          : r == 101           ? "CUDA_ERROR_INVALID_DEVICE"
          : r == 720           ? "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"
                               : "CUDA_ERROR_MOCK";
  return 0;
}
