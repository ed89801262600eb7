/* cg_cache.c — compiled kernels kept on disk, so that running the same
 * kernel again skips LLVM's optimizer and code generator (codegen.h,
 * CgJitOptions.cache_dir).
 *
 * An entry is one file in the cache directory, NAME.kernel, named by a
 * 64-bit hash of its key: the key, a line with the object's length and
 * hash, a NUL, then the object file the JIT links. The key says everything LLVM's output depends on:
 *   - this program file (device, inode, size, modification time of
 *     /proc/self/exe: a rebuilt ctx starts from an empty cache, so no entry
 *     outlives the emitter, pass pipeline or runtime that made it);
 *   - LLVM's version, the command-line options ctx gave it (with
 *     CTX_LLVM_OPTIONS), the pass pipeline and the target machine (triple,
 *     CPU, features, optimization level, the JIT's code model);
 *   - the unoptimized module, by its 128-bit FNV-1a hash and its length
 *     (the emitter's output is a function of the kernel alone: value names
 *     are counters, and no address of this process is in it).
 * A lookup compares the entry's whole key with the key, so a 64-bit
 * collision of names is a miss, never another kernel, and checks the
 * object's length and hash. Anything unexpected — no /proc/self/exe, an
 * unreadable, short or damaged file — is a miss too: the kernel is compiled
 * as if there were no cache. An entry is written to a temporary
 * file and renamed into place, so processes sharing the directory see a
 * whole entry or none. A hit touches its file; after a store, when the
 * directory holds more than CACHE_LIMIT_MB (or $CTX_CACHE_MAX_MB), the least
 * recently used entries go until it holds three quarters of that.
 */
#include "codegen/cg_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { CACHE_LIMIT_MB = 256 };

__extension__ typedef unsigned __int128 CgU128;

/* FNV-1a, 128 bits, over [n] bytes of [p]. */
static CgU128 fnv128(const char *p, size_t n) {
  const CgU128 prime = ((CgU128)1 << 88) | 0x13B;
  CgU128 h = ((CgU128)0x6c62272e07bb0142ULL << 64) | 0x62b821756295c58dULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * prime;
  return h;
}

uint64_t cg_fnv64(const char *p, size_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
  return h;
}

bool cg_cache_key(CtxBuf *key, LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *passes,
                  int codegen_level, const char *llvm_options) {
  struct stat st;
  if (stat("/proc/self/exe", &st) != 0) return false;
  unsigned major, minor, patch;
  LLVMGetVersion(&major, &minor, &patch);
  char *triple = LLVMGetTargetMachineTriple(tm), *cpu = LLVMGetTargetMachineCPU(tm),
       *features = LLVMGetTargetMachineFeatureString(tm);
  char *ir = LLVMPrintModuleToString(mod);
  size_t len = strlen(ir);
  CgU128 h = fnv128(ir, len);
  ctx_buf_printf(key,
                 "ctx kernel cache 2\nprogram %llu %llu %lld %lld.%09ld\nllvm %u.%u.%u\n"
                 "options %s\npasses %s\ncodegen level %d\ntarget %s\ncpu %s\nfeatures %s\n"
                 "module %zu %016llx%016llx\n",
                 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, major,
                 minor, patch, llvm_options, passes, codegen_level, triple, cpu, features, len,
                 (unsigned long long)(h >> 64), (unsigned long long)h);
  LLVMDisposeMessage(ir);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  return true;
}

/* DIR/NAME.kernel for the entry of [key] (freed by the caller). */
static char *entry_path(const char *dir, const CtxBuf *key) {
  const char *k = ctx_buf_str(key);
  size_t n = strlen(dir) + 40;
  char *path = ctx_xmalloc(n);
  snprintf(path, n, "%s/%016llx.kernel", dir, (unsigned long long)cg_fnv64(k, strlen(k)));
  return path;
}

/* The line after an entry's key: the object's length and 64-bit hash, so
 * that a file damaged after it was written is a miss. */
static void object_line(char *line, size_t n, const char *obj, size_t size) {
  snprintf(line, n, "object %zu %016llx\n", size, (unsigned long long)cg_fnv64(obj, size));
}

LLVMMemoryBufferRef cg_cache_load(const char *dir, const CtxBuf *key) {
  char *path = entry_path(dir, key);
  size_t size = 0;
  char *data = ctx_read_file(path, &size);
  const char *k = ctx_buf_str(key);
  size_t klen = strlen(k);
  LLVMMemoryBufferRef obj = NULL;
  char *nul = data && size > klen && memcmp(data, k, klen) == 0 ? memchr(data + klen, 0, size - klen)
                                                                : NULL;
  if (nul) {
    const char *o = nul + 1;
    size_t osize = size - (size_t)(o - data);
    char line[64];
    object_line(line, sizeof line, o, osize);
    if (osize > 0 && strcmp(data + klen, line) == 0) {
      obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(o, osize, "ctx-cached-kernel");
      (void)utimensat(AT_FDCWD, path, NULL, 0); /* recently used */
    }
  }
  free(data);
  free(path);
  return obj;
}

/* Writes [n] bytes of [head], then [m] of [tail], to [path] through a
 * temporary file renamed into place. */
static bool write_whole(const char *path, const char *head, size_t n, const char *tail,
                        size_t m) {
  size_t len = strlen(path) + 8;
  char *tmp = ctx_xmalloc(len);
  snprintf(tmp, len, "%s.XXXXXX", path);
  int fd = mkstemp(tmp);
  bool ok = fd >= 0;
  if (ok) {
    FILE *f = fdopen(fd, "wb");
    ok = f && fwrite(head, 1, n, f) == n && fwrite(tail, 1, m, f) == m;
    if (f) ok = fclose(f) == 0 && ok;
    else close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
  }
  free(tmp);
  return ok;
}

/* mkdir -p [dir]. */
static bool make_dirs(const char *dir) {
  char *p = ctx_xmalloc(strlen(dir) + 1);
  strcpy(p, dir);
  bool ok = true;
  for (char *s = p + 1; ok && *s; s++)
    if (*s == '/') {
      *s = '\0';
      ok = mkdir(p, 0777) == 0 || errno == EEXIST;
      *s = '/';
    }
  ok = ok && (mkdir(p, 0777) == 0 || errno == EEXIST);
  free(p);
  return ok;
}

typedef struct {
  char *name;
  time_t used;
  long long bytes;
} CacheFile;

static int by_use(const void *a, const void *b) {
  const CacheFile *x = a, *y = b;
  return (x->used > y->used) - (x->used < y->used);
}

/* Removes the least recently used entries of [dir] (by modification time)
 * while it holds more than 3/4 of the limit, when it holds more than the
 * limit. Only NAME.kernel files count. */
static void trim(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  CacheFile *files = NULL;
  size_t n = 0, cap = 0;
  long long total = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *dot = strrchr(e->d_name, '.');
    if (!dot || strcmp(dot, ".kernel") != 0) continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *path = ctx_xmalloc(len);
    snprintf(path, len, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) {
      free(path);
      continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      files = realloc(files, cap * sizeof *files);
      if (!files) ctx_oom();
    }
    files[n++] = (CacheFile){path, st.st_mtime, (long long)st.st_size};
    total += st.st_size;
  }
  closedir(d);
  const char *env = getenv("CTX_CACHE_MAX_MB");
  char *end = NULL;
  long long mb = env ? strtoll(env, &end, 10) : CACHE_LIMIT_MB;
  if (!env || end == env || *end || mb < 0) mb = CACHE_LIMIT_MB;
  const long long limit = mb << 20;
  if (total > limit) {
    qsort(files, n, sizeof *files, by_use);
    for (size_t i = 0; i < n && total > limit / 4 * 3; i++)
      if (unlink(files[i].name) == 0) total -= files[i].bytes;
  }
  for (size_t i = 0; i < n; i++) free(files[i].name);
  free(files);
}

void cg_cache_store(const char *dir, const CtxBuf *key, LLVMMemoryBufferRef obj) {
  if (!make_dirs(dir)) return;
  char *path = entry_path(dir, key);
  const char *o = LLVMGetBufferStart(obj);
  size_t osize = LLVMGetBufferSize(obj);
  CtxBuf head;
  ctx_buf_init(&head);
  char line[64];
  object_line(line, sizeof line, o, osize);
  ctx_buf_puts(&head, ctx_buf_str(key));
  ctx_buf_puts(&head, line);
  (void)write_whole(path, ctx_buf_str(&head), strlen(ctx_buf_str(&head)) + 1, o, osize);
  ctx_buf_free(&head);
  free(path);
  trim(dir);
}
