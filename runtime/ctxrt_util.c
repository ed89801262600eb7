/* ctxrt_util.c — the runtime's small shared pieces: error messages, whole-file
 * reading and writing, growable arrays, number parsing and the splitmix64
 * generator.
 *
 * Guarantees: messages always fit CtxrtError.msg (truncated, NUL-terminated);
 * reading a file never allocates more than its size plus a small slack, and a file
 * over CTXRT_MAX_INPUT bytes is refused while it is being read; arrays never grow
 * past CTXRT_MAX_COUNT elements, so every count fits an int32_t.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "ctxrt_int.h"

#include <sys/mman.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CTXRT_X86_DISPATCH 1
#endif

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- memory */

/* The bytes the system can still give this process: MemAvailable plus
 * SwapFree of /proc/meminfo; 0 where that is unknown. */
static uint64_t memory_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[128];
  unsigned long long kib, total = 0;
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1 ||
        sscanf(line, "SwapFree: %llu kB", &kib) == 1) {
      total += kib;
      found++;
    }
  }
  fclose(f);
  return found ? (uint64_t)total * 1024 : 0;
}

/* The last allocation this thread refused because the system could not hold
 * it (ctxrt__fits), for ctxrt__nomem's message. */
static _Thread_local struct {
  uint64_t wanted, available;
} refused;

int ctxrt__fits(size_t bytes) {
  enum { CHECKED = 64 << 20 }; /* smaller ones: malloc's own answer */
  if (bytes < CHECKED) return 1;
  uint64_t avail = memory_available();
  if (!avail || bytes <= avail) return 1;
  refused.wanted = bytes;
  refused.available = avail;
  return 0;
}

/* seqlstm H=256 B=1 (1 MiB of recurrent weights, twice the L2): runs of one
 * kernel took 1.66-1.69 or 2.09-2.11 ms per batch, by process, on 4 KiB
 * pages. */
void *ctxrt__hot_alloc(size_t bytes) {
  enum { HUGE = 2 << 20, SMALL = 256 << 10 };
  if (!ctxrt__fits(bytes)) return NULL;
  if (bytes < SMALL) return aligned_alloc(64, (bytes + 63) / 64 * 64);
  size_t size = (bytes + HUGE - 1) / HUGE * HUGE;
  void *p = aligned_alloc(HUGE, size);
#ifdef MADV_HUGEPAGE
  if (p) (void)madvise(p, size, MADV_HUGEPAGE); /* advice: refused is fine */
#endif
  return p;
}

/* ------------------------------------------------------------ conversion */

static void to_f32_scalar(float *restrict dst, const double *restrict src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = (float)src[i];
}

#ifdef CTXRT_X86_DISPATCH
__attribute__((target("avx512f"))) static void
to_f32_avx512(float *restrict dst, const double *restrict src, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_ps(dst + i, _mm512_cvtpd_ps(_mm512_loadu_pd(src + i)));
    _mm256_storeu_ps(dst + i + 8, _mm512_cvtpd_ps(_mm512_loadu_pd(src + i + 8)));
  }
  to_f32_scalar(dst + i, src + i, n - i);
}

__attribute__((target("avx"))) static void
to_f32_avx(float *restrict dst, const double *restrict src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_ps(dst + i, _mm256_cvtpd_ps(_mm256_loadu_pd(src + i)));
    _mm_storeu_ps(dst + i + 4, _mm256_cvtpd_ps(_mm256_loadu_pd(src + i + 4)));
  }
  to_f32_scalar(dst + i, src + i, n - i);
}
#endif

int ctxrt__to_f32_isa(CtxrtIsa isa, float *restrict dst, const double *restrict src,
                      size_t n) {
  switch (isa) {
  case CTXRT_ISA_SCALAR:
    to_f32_scalar(dst, src, n);
    return 1;
#ifdef CTXRT_X86_DISPATCH
  case CTXRT_ISA_AVX:
    if (!__builtin_cpu_supports("avx")) return 0;
    to_f32_avx(dst, src, n);
    return 1;
  case CTXRT_ISA_AVX512:
    if (!__builtin_cpu_supports("avx512f")) return 0;
    to_f32_avx512(dst, src, n);
    return 1;
#endif
  default:
    return 0;
  }
}

/* dagrnn H=256 B=10 converts 256,000 values a batch: 0.43 ms one at a time
 * (the build's -O2 leaves the loop scalar), 0.13 ms eight at a time with
 * AVX-512 (Zen 5). The widest the CPU has, chosen per call (a CPUID bit
 * the compiler's runtime caches). */
void ctxrt__to_f32(float *restrict dst, const double *restrict src, size_t n) {
  if (!ctxrt__to_f32_isa(CTXRT_ISA_AVX512, dst, src, n) &&
      !ctxrt__to_f32_isa(CTXRT_ISA_AVX, dst, src, n))
    to_f32_scalar(dst, src, n);
}

/* ---------------------------------------------------------------- errors */

void ctxrt_error_clear(CtxrtError *err) {
  if (!err) return;
  err->status = CTXRT_OK;
  err->line = 0;
  err->msg[0] = '\0';
}

CtxrtStatus ctxrt__err(CtxrtError *err, CtxrtStatus status, const char *file,
                       int32_t line, const char *fmt, ...) {
  if (!err) return status;
  err->status = status;
  err->line = line;
  int n;
  if (file && line > 0)
    n = snprintf(err->msg, sizeof err->msg, "%s:%d: error: ", file, (int)line);
  else if (file)
    n = snprintf(err->msg, sizeof err->msg, "%s: error: ", file);
  else
    n = snprintf(err->msg, sizeof err->msg, "error: ");
  if (n < 0) n = 0;
  if ((size_t)n < sizeof err->msg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return status;
}

CtxrtStatus ctxrt__nomem(CtxrtError *err, const char *file) {
  if (refused.wanted) {
    double gib = 1024.0 * 1024 * 1024;
    CtxrtStatus st = ctxrt__err(err, CTXRT_ERR_NOMEM, file, 0,
                                "out of memory: %.2f GiB wanted at once, %.2f GiB available "
                                "(MemAvailable + SwapFree)",
                                (double)refused.wanted / gib, (double)refused.available / gib);
    refused.wanted = 0;
    return st;
  }
  return ctxrt__err(err, CTXRT_ERR_NOMEM, file, 0,
                    "out of memory (or an input too large to hold)");
}

const char *ctxrt__quote(char *buf, const char *s, size_t len) {
  size_t keep = len <= 48 ? len : 45;
  for (size_t i = 0; i < keep; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  if (keep < len) {
    memcpy(buf + keep, "...", 3);
    keep += 3;
  }
  buf[keep] = '\0';
  return buf;
}

/* strerror's text with a lowercase first letter, as messages want. */
static void lower_strerror(char *buf, size_t size, int errnum) {
  snprintf(buf, size, "%s", strerror(errnum));
  if (buf[0] && isupper((unsigned char)buf[0]) && !isupper((unsigned char)buf[1]))
    buf[0] = (char)tolower((unsigned char)buf[0]);
}

/* ---------------------------------------------------------------- files */

CtxrtStatus ctxrt__read_file(const char *path, char **data, size_t *len,
                             CtxrtError *err) {
  char why[128];
  *data = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    lower_strerror(why, sizeof why, errno);
    return ctxrt__err(err, CTXRT_ERR_IO, path, 0, "cannot open: %s", why);
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  CtxrtStatus st = CTXRT_OK;
  while (buf) {
    if (n == cap) {
      if (cap > CTXRT_MAX_INPUT) {
        st = ctxrt__err(err, CTXRT_ERR_NOMEM, path, 0,
                        "file too large (more than %zu bytes)", CTXRT_MAX_INPUT);
        break;
      }
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (st == CTXRT_OK && !buf) st = ctxrt__nomem(err, path);
  if (st == CTXRT_OK && ferror(f)) {
    lower_strerror(why, sizeof why, errno);
    st = ctxrt__err(err, CTXRT_ERR_IO, path, 0, "cannot read: %s", why);
  }
  if (st == CTXRT_OK && n > CTXRT_MAX_INPUT)
    st = ctxrt__err(err, CTXRT_ERR_NOMEM, path, 0, "file too large (more than %zu bytes)",
                    CTXRT_MAX_INPUT);
  fclose(f);
  if (st != CTXRT_OK) {
    free(buf);
    return st;
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return CTXRT_OK;
}

CtxrtStatus ctxrt__write_file(const char *path, const void *data, size_t len,
                              CtxrtError *err) {
  char why[128];
  FILE *f = fopen(path, "wb");
  if (!f) {
    lower_strerror(why, sizeof why, errno);
    return ctxrt__err(err, CTXRT_ERR_IO, path, 0, "cannot open for writing: %s", why);
  }
  size_t put = len ? fwrite(data, 1, len, f) : 0;
  int bad = put != len;
  int saved = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    saved = errno;
  }
  if (bad) {
    lower_strerror(why, sizeof why, saved);
    return ctxrt__err(err, CTXRT_ERR_IO, path, 0, "cannot write: %s", why);
  }
  return CTXRT_OK;
}

char *ctxrt__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---------------------------------------------------------------- arrays */

void *ctxrt__vec_grow(CtxrtVec *v, size_t esz, size_t n, int *failed) {
  if (*failed) return NULL;
  if (n > CTXRT_MAX_COUNT - v->len) {
    *failed = 1;
    return NULL;
  }
  if (v->len + n > v->cap || !v->data) {
    size_t cap = v->cap ? v->cap : 16;
    while (cap < v->len + n)
      cap = cap > CTXRT_MAX_COUNT / 2 ? CTXRT_MAX_COUNT : cap * 2;
    void *p = realloc(v->data, cap * esz);
    if (!p) {
      *failed = 1;
      return NULL;
    }
    v->data = p;
    v->cap = cap;
  }
  void *at = (char *)v->data + v->len * esz;
  v->len += n;
  return at;
}

void ctxrt__vec_free(CtxrtVec *v) {
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

int32_t *ctxrt__sort_i32(int32_t *a, int32_t *tmp, size_t n,
                         int (*cmp)(const void *ctx, int32_t x, int32_t y),
                         const void *ctx) {
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        tmp[k++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
      while (i < mid)
        tmp[k++] = a[i++];
      while (j < hi)
        tmp[k++] = a[j++];
    }
    int32_t *t = a;
    a = tmp;
    tmp = t;
  }
  return a;
}

/* ---------------------------------------------------------------- numbers */

int ctxrt__parse_int(const char *s, size_t len, int64_t *v) {
  size_t i = 0;
  int neg = 0;
  if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == len) return 0;
  uint64_t acc = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  int overflow = 0;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    unsigned d = (unsigned)(s[i] - '0');
    if (acc > (limit - d) / 10)
      overflow = 1;
    else
      acc = acc * 10 + d;
  }
  if (overflow) return -1;
  *v = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
  return 1;
}

/* Whether [s] has the shape of a decimal number; sets [*is_int]. */
static int number_shape(const char *s, size_t len, int *is_int) {
  size_t i = 0, digits = 0;
  if (i < len && (s[i] == '+' || s[i] == '-')) i++;
  while (i < len && s[i] >= '0' && s[i] <= '9')
    i++, digits++;
  *is_int = 1;
  if (i < len && s[i] == '.') {
    *is_int = 0;
    for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
      digits++;
  }
  if (digits == 0) return 0;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    *is_int = 0;
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    size_t exp_digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
      i++, exp_digits++;
    if (exp_digits == 0) return 0;
  }
  return i == len;
}

int ctxrt__parse_number(const char *s, size_t len, double *v, int *is_int) {
  if (!number_shape(s, len, is_int)) return 0;
  char small[128];
  char *copy = len < sizeof small ? small : malloc(len + 1);
  if (!copy) return -1;
  memcpy(copy, s, len);
  copy[len] = '\0';
  errno = 0;
  char *end;
  double d = strtod(copy, &end);
  int ok = end == copy + len;
  /* ERANGE also reports underflow to a denormal or zero, which is fine. */
  int overflow = errno == ERANGE && (d > 1.0 || d < -1.0);
  if (copy != small) free(copy);
  if (!ok) return 0;
  if (overflow) return -1;
  *v = d;
  return 1;
}

/* ---------------------------------------------------------------- splitmix64 */

void ctxrt_rng_seed(CtxrtRng *rng, uint64_t seed) {
  rng->state = seed;
}

uint64_t ctxrt_rng_next(CtxrtRng *rng) {
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

uint64_t ctxrt_rng_below(CtxrtRng *rng, uint64_t m) {
  uint64_t x = ctxrt_rng_next(rng);
  return m ? x % m : 0;
}

double ctxrt_rng_unit(CtxrtRng *rng) {
  return (double)(ctxrt_rng_next(rng) >> 11) * 0x1.0p-53;
}

const char *ctxrt_kind_name(CtxrtKind kind) {
  switch (kind) {
  case CTXRT_TREE:
    return "tree";
  case CTXRT_DAG:
    return "dag";
  case CTXRT_SEQUENCE:
    return "sequence";
  case CTXRT_KIND_ANY:
    break;
  }
  return "any";
}

CtxrtStatus ctxrt__each_line(const char *data, size_t len, int32_t *line, CtxrtLineFn fn,
                             void *ctx) {
  CtxrtStatus st = CTXRT_OK;
  for (size_t pos = 0; pos < len && st == CTXRT_OK;) {
    const char *nl = memchr(data + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - data) : len;
    ++*line;
    st = fn(ctx, data + pos, end - pos);
    pos = end + 1;
  }
  return st;
}
