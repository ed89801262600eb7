/* machine.c — the physical limits the bench table is measured against, on one core.
 *
 * 1. FMA peak: a register-resident loop of independent fused multiply-adds at the
 *    host's widest vector (AVX-512, else AVX2+FMA; a host with neither gets no
 *    figures and exit status 1), on one thread. The loop keeps ACC accumulators in
 *    flight, more than FMA latency x FMA ports needs on any x86 core (4-5 cycles x
 *    2 ports = 10), and touches no memory.
 * 2. The theoretical peak beside it: lanes x 2 FLOPs x FMA ports x clock. The clock
 *    is measured with a chain of dependent integer multiplies (3 cycles each on every
 *    x86 core since the P6), so it is the clock the core really ran at; the port count
 *    comes from a table of the vendors' optimization manuals (fma_ports()).
 * 3. Read bandwidth of each cache level and of DRAM: a buffer of half the level's
 *    size (L1d, L2; the L3 is shared, a quarter of it), and one of 4x the L3 for DRAM,
 *    summed with the widest vector loads into independent accumulators, again and
 *    again. Plus a sweep of sizes for the record, and with --ws the working sets
 *    the limit divides by (the models' recurrent weights), each read forward and
 *    back in turn, as ctx's level products read their weights.
 * Every figure is the best of many short rounds (see fma_peak()).
 * 4. OpenBLAS: openblas_get_corename() and a large sgemm (512^3) on 1 and 2
 *    threads — whether the baselines run on OpenBLAS's real kernel for this CPU.
 * 5. A register tile: the inner loop of ctx's level products (6 rows x 4
 *    vectors with AVX-512, 6 x 2 with AVX2; weights from L1) — not a limit the
 *    table divides by, but what such a loop reaches beside the FMA peak.
 * Prints key=value lines the runner (bench/run.py) parses:
 *   cpu: model=.. family=.. vendor=..
 *   cache: level=L bytes=N source=sysfs|cpuid
 *   clock: ghz=G cpuinfo_mhz=M
 *   fma: lanes=N ports=P source=.. theory_gflops=T
 *   peak: gflops=G
 *   bw: level=L1|L2|L3|DRAM bytes=S gbps=B
 *   sweep: bytes=S gbps=B
 *   ws: bytes=S gbps=B          (one per size of --ws)
 *   blas: corename=.. sgemm1_gflops=G sgemm2_gflops=G
 *   tile: rows=R vectors=V gflops=G
 * usage: machine [--quick] [--ws BYTES,BYTES...]
 */
#include <cblas.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

char *openblas_get_corename(void);

/* Independent accumulators of the FMA loop: 16 covers latency 4 x 2 ports twice
 * over and leaves registers for the operands (32 zmm with AVX-512). */
#define ACC 16

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- FMA peak ------------------------------------------------------------------ */

__attribute__((target("avx512f"))) static double fma_avx512(long iters) {
  __m512 acc[ACC];
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int j = 0; j < ACC; j++) acc[j] = _mm512_set1_ps((float)j);
  for (long i = 0; i < iters; i++)
    for (int j = 0; j < ACC; j++) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  __m512 s = acc[0];
  for (int j = 1; j < ACC; j++) s = _mm512_add_ps(s, acc[j]);
  return (double)_mm512_reduce_add_ps(s);
}

/* AVX2 has 16 ymm registers: 12 accumulators + 2 operands. */
__attribute__((target("avx2,fma"))) static double fma_avx2(long iters) {
  __m256 acc[12];
  __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int j = 0; j < 12; j++) acc[j] = _mm256_set1_ps((float)j);
  for (long i = 0; i < iters; i++)
    for (int j = 0; j < 12; j++) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  float out[8];
  __m256 s = acc[0];
  for (int j = 1; j < 12; j++) s = _mm256_add_ps(s, acc[j]);
  _mm256_storeu_ps(out, s);
  double t = 0;
  for (int j = 0; j < 8; j++) t += out[j];
  return t;
}

static int vec_lanes(void) {
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
  return 0;
}

/* [iters] rounds of the host's widest loop (its accumulators each FMA once a round). */
static double fma_iter(int lanes, long iters) {
  return lanes == 16 ? fma_avx512(iters) : fma_avx2(iters);
}

/* Every rate below is the best of many short rounds (~0.5-8 ms each) over [secs]:
 * on a shared machine a round that ran without being preempted is the core's
 * own speed, and a limit must be the uncontended one. */
static double fma_peak(int lanes, double secs) {
  int accs = lanes == 16 ? ACC : 12;
  double best = 0, t_end = now_s() + secs;
  volatile double sink = 0;
  long iters = 1 << 18; /* 2^18 x 16 FMA x 16 lanes: ~0.5 ms at 250 GFLOP/s */
  do {
    double t0 = now_s();
    sink += fma_iter(lanes, iters);
    double g = (double)iters * accs * lanes * 2.0 / (now_s() - t0) / 1e9;
    if (g > best) best = g;
  } while (now_s() < t_end);
  (void)sink;
  return best;
}

/* ---- a register tile ------------------------------------------------------------- */

/* The loop of a register-tiled level product (codegen/cg_tile.c): TILE_ROWS
 * rows x V vectors of outputs in accumulators; each step loads one row of V
 * weight vectors and broadcasts each row's x from memory. TILE_K rows of
 * weights (32 KiB with AVX-512): a panel that stays in L1. */
enum { TILE_ROWS = 6, TILE_K = 128 };

__attribute__((target("avx512f"))) static double tile_avx512(const float *w, const float *x,
                                                             long reps) {
  __m512 c[TILE_ROWS][4];
  for (int b = 0; b < TILE_ROWS; b++)
    for (int v = 0; v < 4; v++) c[b][v] = _mm512_setzero_ps();
  for (long i = 0; i < reps; i++)
    for (int r = 0; r < TILE_K; r++) {
      __m512 w0 = _mm512_load_ps(w + r * 64), w1 = _mm512_load_ps(w + r * 64 + 16);
      __m512 w2 = _mm512_load_ps(w + r * 64 + 32), w3 = _mm512_load_ps(w + r * 64 + 48);
      for (int b = 0; b < TILE_ROWS; b++) {
        __m512 xb = _mm512_set1_ps(x[b * TILE_K + r]);
        c[b][0] = _mm512_fmadd_ps(xb, w0, c[b][0]), c[b][1] = _mm512_fmadd_ps(xb, w1, c[b][1]);
        c[b][2] = _mm512_fmadd_ps(xb, w2, c[b][2]), c[b][3] = _mm512_fmadd_ps(xb, w3, c[b][3]);
      }
    }
  __m512 s = _mm512_setzero_ps();
  for (int b = 0; b < TILE_ROWS; b++)
    for (int v = 0; v < 4; v++) s = _mm512_add_ps(s, c[b][v]);
  return (double)_mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static double tile_avx2(const float *w, const float *x,
                                                            long reps) {
  __m256 c[TILE_ROWS][2];
  for (int b = 0; b < TILE_ROWS; b++) c[b][0] = c[b][1] = _mm256_setzero_ps();
  for (long i = 0; i < reps; i++)
    for (int r = 0; r < TILE_K; r++) {
      __m256 w0 = _mm256_load_ps(w + r * 16), w1 = _mm256_load_ps(w + r * 16 + 8);
      for (int b = 0; b < TILE_ROWS; b++) {
        __m256 xb = _mm256_broadcast_ss(x + b * TILE_K + r);
        c[b][0] = _mm256_fmadd_ps(xb, w0, c[b][0]), c[b][1] = _mm256_fmadd_ps(xb, w1, c[b][1]);
      }
    }
  __m256 s = _mm256_setzero_ps();
  for (int b = 0; b < TILE_ROWS; b++) s = _mm256_add_ps(s, _mm256_add_ps(c[b][0], c[b][1]));
  float out[8];
  _mm256_storeu_ps(out, s);
  double t = 0;
  for (int j = 0; j < 8; j++) t += out[j];
  return t;
}

/* The tile's best rate over [secs] (as fma_peak); *vectors: its width. */
static double tile_peak(int lanes, double secs, int *vectors) {
  *vectors = lanes == 16 ? 4 : 2;
  float *w = aligned_alloc(64, sizeof(float) * TILE_K * 64), *x = malloc(sizeof(float) * TILE_ROWS * TILE_K);
  if (!w || !x) {
    free(w), free(x);
    return 0;
  }
  for (int i = 0; i < TILE_K * 64; i++) w[i] = 1e-3f * (float)(i % 7);
  for (int i = 0; i < TILE_ROWS * TILE_K; i++) x[i] = 1e-3f * (float)(i % 5);
  double best = 0, t_end = now_s() + secs;
  volatile double sink = 0;
  long reps = 512; /* 512 x 128 x 24 FMA x 16 lanes: ~0.5 ms at 200 GFLOP/s */
  do {
    double t0 = now_s();
    sink += lanes == 16 ? tile_avx512(w, x, reps) : tile_avx2(w, x, reps);
    double g = (double)reps * TILE_K * TILE_ROWS * *vectors * lanes * 2.0 / (now_s() - t0) / 1e9;
    if (g > best) best = g;
  } while (now_s() < t_end);
  (void)sink;
  free(w), free(x);
  return best;
}

/* ---- clock -------------------------------------------------------------------- */

/* GHz from 2^19 x 8 dependent 64-bit multiplies a round, 3 cycles each on every
 * x86 core since the P6 (Intel's and AMD's optimization guides; ~3 ms at 4 GHz).
 * Not adds of an immediate: newer Intel cores (Golden Cove on) fold chains of
 * those at register renaming, and the clock measured 3x too high. */
static double clock_ghz(double secs) {
  double best = 0, t_end = now_s() + secs;
  do {
    long x = 1, one = 1, n = 1 << 19, c = n;
    double t0 = now_s();
    __asm__ volatile("1:\n\t"
                     "imul %2, %0\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\t"
                     "imul %2, %0\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\t"
                     "dec %1\n\tjnz 1b"
                     : "+r"(x), "+r"(c)
                     : "r"(one));
    double g = (double)n * 8 * 3 / (now_s() - t0) / 1e9;
    if (g > best) best = g;
  } while (now_s() < t_end);
  return best;
}

/* "cpu MHz" of /proc/cpuinfo (under a hypervisor: the nominal clock), 0 if absent. */
static double cpuinfo_mhz(char *model, size_t cap, int *family, char *vendor, size_t vcap) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  double mhz = 0;
  char line[512];
  model[0] = vendor[0] = 0;
  *family = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    char *v = strchr(line, ':');
    if (!v) continue;
    v++;
    while (*v == ' ') v++;
    v[strcspn(v, "\n")] = 0;
    if (!strncmp(line, "model name", 10) && !model[0]) snprintf(model, cap, "%s", v);
    else if (!strncmp(line, "cpu MHz", 7) && mhz == 0) mhz = atof(v);
    else if (!strncmp(line, "cpu family", 10) && !*family) *family = atoi(v);
    else if (!strncmp(line, "vendor_id", 9) && !vendor[0]) snprintf(vendor, vcap, "%s", v);
  }
  fclose(f);
  return mhz;
}

/* FMA instructions per cycle at the widest vector, and where that comes from. */
static int fma_ports(const char *vendor, int family, int lanes, const char **src) {
  if (!strcmp(vendor, "AuthenticAMD")) {
    if (family >= 0x1a) {
      *src = "AMD Zen 5 optimization guide: 2 FMA pipes, 512-bit datapath";
      return 2;
    }
    if (family == 0x19 && lanes == 16) {
      *src = "AMD Zen 4 optimization guide: 2 256-bit FMA pipes, 512-bit ops take both";
      return 1;
    }
    *src = "AMD Zen 1-3 optimization guides: 2 FMA pipes (Zen 1: 128-bit, assumed 256)";
    return 2;
  }
  if (lanes == 16) {
    *src = "Intel optimization manual: Xeon Gold/Platinum, 2 512-bit FMA units (ports 0+1, 5)";
    return 2;
  }
  *src = "Intel optimization manual: Haswell and later, 2 256-bit FMA ports (0, 1)";
  return 2;
}

/* ---- bandwidth ------------------------------------------------------------------ */

static float *fill(size_t n) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) exit(1);
  for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  return p;
}

/* Sum of [n] floats (n a multiple of 128): 8 accumulators of 64-byte loads cover
 * 2 loads a cycle x 4 cycles of add latency. */
__attribute__((target("avx512f"))) static float read_avx512(const float *p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
         a7 = a0;
  for (size_t i = 0; i < n; i += 128) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
    a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
    a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
    a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
  }
  a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                     _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  return _mm512_reduce_add_ps(a0);
}

__attribute__((target("avx2"))) static float read_avx2(const float *p, size_t n) {
  __m256 a[8];
  for (int j = 0; j < 8; j++) a[j] = _mm256_setzero_ps();
  for (size_t i = 0; i < n; i += 64)
    for (int j = 0; j < 8; j++) a[j] = _mm256_add_ps(a[j], _mm256_load_ps(p + i + 8 * j));
  float out[8];
  for (int j = 1; j < 8; j++) a[0] = _mm256_add_ps(a[0], a[j]);
  _mm256_storeu_ps(out, a[0]);
  return out[0] + out[7];
}

/* read_avx512 and read_avx2 from the last float back to the first, each
 * block's loads in descending order too. A copy rather than a direction
 * argument: the same loop walking the blocks backwards with each block's
 * loads ascending read 768 KiB at 145-156 GB/s and 1 MiB at 128-146 where
 * this one reads 188-223 and 168-186 (Zen 5, 3 alternating rounds), and
 * the limit wants the fastest order. */
__attribute__((target("avx512f"))) static float read_back_avx512(const float *p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
         a7 = a0;
  for (size_t i = n; i > 0; i -= 128) {
    const float *q = p + i - 128;
    a0 = _mm512_add_ps(a0, _mm512_load_ps(q + 112));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(q + 96));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(q + 80));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(q + 64));
    a4 = _mm512_add_ps(a4, _mm512_load_ps(q + 48));
    a5 = _mm512_add_ps(a5, _mm512_load_ps(q + 32));
    a6 = _mm512_add_ps(a6, _mm512_load_ps(q + 16));
    a7 = _mm512_add_ps(a7, _mm512_load_ps(q));
  }
  a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                     _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  return _mm512_reduce_add_ps(a0);
}

__attribute__((target("avx2"))) static float read_back_avx2(const float *p, size_t n) {
  __m256 a[8];
  for (int j = 0; j < 8; j++) a[j] = _mm256_setzero_ps();
  for (size_t i = n; i > 0; i -= 64)
    for (int j = 0; j < 8; j++) a[j] = _mm256_add_ps(a[j], _mm256_load_ps(p + i - 8 - 8 * j));
  float out[8];
  for (int j = 1; j < 8; j++) a[0] = _mm256_add_ps(a[0], a[j]);
  _mm256_storeu_ps(out, a[0]);
  return out[0] + out[7];
}

/* One pass over [n] floats, forward or (back) from the end. */
static float read_pass(int lanes, const float *p, size_t n, int back) {
  if (back) return lanes == 16 ? read_back_avx512(p, n) : read_back_avx2(p, n);
  return lanes == 16 ? read_avx512(p, n) : read_avx2(p, n);
}

/* Best GB/s reading [bytes] again and again: in the same order every pass,
 * or with [zigzag] forward and back in turn, so each pass starts on what the
 * last one read most recently (what ctx's level products do with their
 * weights: codegen/cg_tile.c, block_at). */
static double read_gbps_order(int lanes, size_t bytes, double secs, int zigzag) {
  size_t n = bytes / sizeof(float) / 128 * 128;
  float *p = fill(n);
  volatile float sink = 0;
  double best = 0, t_end = now_s() + secs;
  /* 64 MiB a round: 0.2-0.5 ms in the caches, one pass of a DRAM-sized buffer
   * (an even number of passes, so a zigzag round ends where it began) */
  size_t passes = bytes >= (64u << 20) ? 1 : (64u << 20) / bytes;
  passes += zigzag && passes % 2;
  sink += read_pass(lanes, p, n, 0); /* into the cache */
  do {
    double t0 = now_s();
    for (size_t k = 0; k < passes; k++)
      sink += read_pass(lanes, p, n, zigzag && k % 2 == 0);
    double g = (double)n * sizeof(float) * (double)passes / (now_s() - t0) / 1e9;
    if (g > best) best = g;
  } while (now_s() < t_end);
  (void)sink;
  free(p);
  return best;
}

static double read_gbps(int lanes, size_t bytes, double secs) {
  return read_gbps_order(lanes, bytes, secs, 0);
}

/* Size of the data (or unified) cache of [level] for cpu0 from sysfs, 0 if unknown. */
static size_t sysfs_cache_bytes(int level) {
  for (int i = 0; i < 8; i++) {
    char path[128], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    int lv = fgets(buf, sizeof buf, f) ? atoi(buf) : 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    f = fopen(path, "r");
    if (!f) continue;
    int instr = fgets(buf, sizeof buf, f) && !strncmp(buf, "Instruction", 11);
    fclose(f);
    if (lv != level || instr) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    f = fopen(path, "r");
    if (!f) continue;
    size_t kib = fgets(buf, sizeof buf, f) ? (size_t)atol(buf) : 0;
    fclose(f);
    return kib * 1024;
  }
  return 0;
}

/* Size of the data (or unified) cache of [level]: sysfs's, else glibc's reading of
 * CPUID (some VMs have no /sys/devices/system/cpu/cpu0/cache: every level read 0
 * there, the limit put every model's weights in DRAM and the table said LIMIT BUG
 * in 17 cells); *[src] says which. */
static size_t cache_bytes(int level, const char **src) {
  size_t b = sysfs_cache_bytes(level);
  *src = "sysfs";
  if (b) return b;
  static const int names[] = {0, _SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE,
                              _SC_LEVEL3_CACHE_SIZE};
  long v = sysconf(names[level]);
  *src = "cpuid";
  return v > 0 ? (size_t)v : 0;
}

/* ---- OpenBLAS ------------------------------------------------------------------ */

/* One [n]^3 product a round. n = 512: ~1 ms at 240 GFLOP/s, short enough for rounds
 * to escape preemption like the FMA loop's, and as fast as 1024^3 and 2048^3 on an
 * idle Zen 5 core (245, 240, 237 GFLOP/s with OpenBLAS 0.3.21 SkylakeX). */
static double sgemm_gflops(int n, int threads, double secs) {
  openblas_set_num_threads(threads);
  float *A = fill((size_t)n * n), *B = fill((size_t)n * n), *C = fill((size_t)n * n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
  double best = 0, t_end = now_s() + secs;
  do {
    double t0 = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    double g = 2.0 * n * n * (double)n / (now_s() - t0) / 1e9;
    if (g > best) best = g;
  } while (now_s() < t_end);
  free(A), free(B), free(C);
  return best;
}

int main(int argc, char **argv) {
  double secs = 0.6;
  const char *ws = "";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      secs = 0.25;
    } else if (!strcmp(argv[i], "--ws") && i + 1 < argc) {
      ws = argv[++i];
    } else {
      fprintf(stderr, "usage: machine [--quick] [--ws BYTES,BYTES...]\n");
      return 2;
    }
  }
  char model[256], vendor[64];
  int family;
  double mhz = cpuinfo_mhz(model, sizeof model, &family, vendor, sizeof vendor);
  printf("cpu: vendor=%s family=%d model=%s\n", vendor, family, model);
  size_t c[4] = {0};
  for (int l = 1; l <= 3; l++) {
    const char *src;
    c[l] = cache_bytes(l, &src);
    printf("cache: level=%d bytes=%zu source=%s\n", l, c[l], src);
  }
  int lanes = vec_lanes();
  if (!lanes) {
    printf("fma: lanes=0 ports=0 source=none theory_gflops=0\n");
    return 1;
  }
  double ghz = clock_ghz(secs);
  printf("clock: ghz=%.3f cpuinfo_mhz=%.0f\n", ghz, mhz);
  const char *src;
  int ports = fma_ports(vendor, family, lanes, &src);
  printf("fma: lanes=%d ports=%d theory_gflops=%.1f source=%s\n", lanes, ports,
         lanes * 2.0 * ports * ghz, src);
  printf("peak: gflops=%.1f\n", fma_peak(lanes, secs));
  fflush(stdout);
  static const char *const names[] = {"L1", "L2", "L3", "DRAM"};
  size_t sizes[4] = {c[1] ? c[1] / 2 : 16384, c[2] ? c[2] / 2 : 262144,
                     c[3] ? c[3] / 4 : 4 << 20, c[3] ? c[3] * 4 : 256 << 20};
  for (int l = 0; l < 4; l++) {
    printf("bw: level=%s bytes=%zu gbps=%.1f\n", names[l], sizes[l],
           read_gbps(lanes, sizes[l], l == 3 ? secs * 2 : secs));
    fflush(stdout);
  }
  /* the sweep also in --quick: the limit reads the L3's bandwidth off it at
   * the weights' size (bench/run.py, limit_ms) */
  for (size_t kib = 16; kib <= 256 * 1024; kib *= 2)
    printf("sweep: bytes=%zu gbps=%.1f\n", kib * 1024, read_gbps(lanes, kib * 1024, secs / 3));
  /* the working sets the limit divides by: each size read forward and back in
   * turn (bench/run.py, step_seconds) */
  for (const char *q = ws; *q;) {
    char *end;
    unsigned long long bytes = strtoull(q, &end, 10);
    if (end == q || bytes < 512 || (*end && *end != ',')) {
      fprintf(stderr, "machine: --ws wants sizes in bytes, at least 512, comma-separated\n");
      return 2;
    }
    printf("ws: bytes=%llu gbps=%.1f\n", bytes, read_gbps_order(lanes, bytes, secs / 2, 1));
    fflush(stdout);
    q = *end ? end + 1 : end;
  }
  const char *core = openblas_get_corename();
  double g1 = sgemm_gflops(512, 1, secs * 4), g2 = sgemm_gflops(512, 2, secs * 4);
  printf("blas: corename=%s sgemm1_gflops=%.1f sgemm2_gflops=%.1f\n", core ? core : "?", g1, g2);
  int vectors;
  double tile = tile_peak(lanes, secs, &vectors);
  printf("tile: rows=%d vectors=%d gflops=%.1f\n", TILE_ROWS, vectors, tile);
  return 0;
}
