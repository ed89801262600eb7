/* ctxrt_int.h — declarations shared by the runtime's own files, not installed.
 *
 * Every symbol still carries the ctxrt_ prefix (they end up in users' programs);
 * private ones use ctxrt__ so they are easy to tell apart from the public API.
 */
#ifndef CTXRT_INT_H
#define CTXRT_INT_H

#include "ctxrt.h"

#include <stdarg.h>

#if defined(__GNUC__) || defined(__clang__)
#define CTXRT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CTXRT_PRINTF(a, b)
#endif

/* Largest input file or buffer a reader takes, and the largest count any flat
 * array may reach: indices are int32_t. */
#define CTXRT_MAX_INPUT ((size_t)INT32_MAX)
#define CTXRT_MAX_COUNT ((size_t)INT32_MAX - 1)

/* Buffer size for ctxrt__quote: 48 bytes of token, "...", NUL. */
#define CTXRT_QUOTE_SIZE 56

/* --- errors (ctxrt_util.c) --------------------------------------------------- */

/* Fills [err] with `FILE:LINE: error: ...` ([line] 0: `FILE: error: ...`; [file]
 * NULL: `error: ...`) and returns [status]. */
CtxrtStatus ctxrt__err(CtxrtError *err, CtxrtStatus status, const char *file,
                       int32_t line, const char *fmt, ...) CTXRT_PRINTF(5, 6);

/* The out-of-memory error for [file]. */
CtxrtStatus ctxrt__nomem(CtxrtError *err, const char *file);

/* Can the system hold [bytes] more for this process? From 64 MiB on, not
 * when they exceed /proc/meminfo's MemAvailable + SwapFree: Linux grants
 * such a malloc (overcommit) and its OOM killer ends the process when the
 * pages are written (treelstm -D H=30000's 11 GB of U_iou on a 24 GB
 * machine); refused, ctxrt__nomem says how much was wanted and available. */
int ctxrt__fits(size_t bytes);

/* [bytes] of memory for weights the kernels read at every level, aligned to
 * 64 bytes; from 256 KiB on, in transparent huge pages where the system
 * gives them (madvise): physically contiguous 2 MiB, so which cache sets a
 * matrix occupies no longer depends on where the system put its 4 KiB
 * pages. Freed with free(); NULL when out of memory or when the system
 * cannot hold them (ctxrt__fits). */
void *ctxrt__hot_alloc(size_t bytes);

/* dst[i] = (float)src[i] for i < n (rounded to nearest), in the widest
 * vectors the CPU converts. */
void ctxrt__to_f32(float *restrict dst, const double *restrict src, size_t n);

/* The instruction sets ctxrt__to_f32 chooses from. */
typedef enum { CTXRT_ISA_SCALAR, CTXRT_ISA_AVX, CTXRT_ISA_AVX512, CTXRT_ISA_COUNT } CtxrtIsa;

/* ctxrt__to_f32 in [isa]'s instructions: 1, or 0 (nothing written) where the
 * CPU, or this build, lacks them. For the tests, which check each one. */
int ctxrt__to_f32_isa(CtxrtIsa isa, float *restrict dst, const double *restrict src,
                      size_t n);

/* Copies the [len] bytes at [s] into [buf] (CTXRT_QUOTE_SIZE bytes) for use inside
 * quotes in a message: control characters become '?', long tokens are cut and end
 * in "...". Returns [buf]. */
const char *ctxrt__quote(char *buf, const char *s, size_t len);

/* --- files (ctxrt_util.c) ---------------------------------------------------- */

/* Reads the whole file [path] into a malloc'ed buffer [*data] of [*len] bytes (plus
 * a NUL byte after them). Larger than CTXRT_MAX_INPUT is an error. */
CtxrtStatus ctxrt__read_file(const char *path, char **data, size_t *len, CtxrtError *err);

/* Writes [len] bytes to the file [path], replacing it. */
CtxrtStatus ctxrt__write_file(const char *path, const void *data, size_t len,
                              CtxrtError *err);

/* A copy of [s] in a new malloc'ed string, or NULL when out of memory. */
char *ctxrt__strdup(const char *s);

/* --- growable arrays (ctxrt_util.c) ------------------------------------------ */

typedef struct CtxrtVec {
  void *data;
  size_t len, cap; /* in elements */
} CtxrtVec;

/* Appends [n] uninitialised elements of [esz] bytes to [v] and returns a pointer to
 * the first, or NULL (setting [*failed]) when out of memory or past
 * CTXRT_MAX_COUNT elements. Does nothing once [*failed] is set. */
void *ctxrt__vec_grow(CtxrtVec *v, size_t esz, size_t n, int *failed);
void ctxrt__vec_free(CtxrtVec *v);

#define CTXRT_AT(v, T, i) (((T *)(v).data)[i])

/* Sorts the [n] indices at [a] stably by [cmp] (a bottom-up merge sort: O(n log n)
 * whatever the keys, so crafted inputs cannot make it quadratic, as they could a
 * hash table), using [tmp] of [n] entries. Returns whichever of [a] and [tmp]
 * holds the result. */
int32_t *ctxrt__sort_i32(int32_t *a, int32_t *tmp, size_t n,
                         int (*cmp)(const void *ctx, int32_t x, int32_t y),
                         const void *ctx);

/* --- forest builder (ctxrt_forest.c) ----------------------------------------- */

/* Readers and generators append structures and nodes in node order; a node's
 * values and dependencies must be appended before the next node starts. Failures
 * are sticky in [failed] and reported once by ctxrt__build_finish. */
typedef struct CtxrtBuild {
  CtxrtKind kind;
  int has_labels;
  int failed;
  CtxrtVec struct_begin, struct_line; /* int32_t */
  CtxrtVec id;                        /* int64_t */
  CtxrtVec line, dep_begin, dep;      /* int32_t */
  CtxrtVec val_begin;                 /* int32_t */
  CtxrtVec val;                       /* double */
  CtxrtVec val_is_int;                /* unsigned char */
  CtxrtVec label;                     /* int32_t, when has_labels */
  CtxrtVec labels;                    /* char */
} CtxrtBuild;

void ctxrt__build_init(CtxrtBuild *b, CtxrtKind kind, int has_labels);
void ctxrt__build_free(CtxrtBuild *b);
void ctxrt__build_struct(CtxrtBuild *b, int32_t line);
/* Returns the new node's global index (meaningless once failed). */
int32_t ctxrt__build_node(CtxrtBuild *b, int64_t id, int32_t line);
void ctxrt__build_value(CtxrtBuild *b, double v, int is_int);
void ctxrt__build_dep(CtxrtBuild *b, int32_t dep);
/* Sets the label of the last node. */
void ctxrt__build_label(CtxrtBuild *b, const char *s, size_t len);
/* Replaces all dependencies by the children lists that [parent] describes
 * ([parent][i] a node index, before or after i (CoNLL-U heads point either
 * way), or -1 for a root), children in increasing index order. */
void ctxrt__build_deps_from_parents(CtxrtBuild *b, const int32_t *parent);
/* Moves everything into a new forest named [name] and frees [b] either way. */
CtxrtStatus ctxrt__build_finish(CtxrtBuild *b, const char *name, CtxrtForest **out,
                                CtxrtError *err);

/* --- numbers (ctxrt_util.c) -------------------------------------------------- */

/* Parses the [len]-byte token [s] as a decimal integer with an optional sign.
 * Returns 1 and sets [*v], 0 when it is not an integer, -1 when out of range. */
int ctxrt__parse_int(const char *s, size_t len, int64_t *v);

/* Parses [s] as a decimal number: [+-] digits [. digits] [(e|E) [+-] digits],
 * with digits on at least one side of the point (no inf, nan or hex). Returns 1
 * and sets [*v] and [*is_int] (no point and no exponent), 0 when it is not a
 * number, -1 when its magnitude overflows a double. */
int ctxrt__parse_number(const char *s, size_t len, double *v, int *is_int);

/* --- generators (ctxrt_genspec.c) ------------------------------------------- */

/* Checks the sizes and limits of [spec]; messages quote [text]. */
CtxrtStatus ctxrt__gen_check(const CtxrtGenSpec *spec, const char *text, CtxrtError *err);
/* Which nodes carry values, the default resolved. */
CtxrtGenValues ctxrt__gen_values(const CtxrtGenSpec *spec);
/* Nodes in one structure of [spec] (which passed ctxrt__gen_check). */
int64_t ctxrt__gen_struct_nodes(const CtxrtGenSpec *spec);

/* --- tensors (ctxrt_weights.c) ---------------------------------------------- */

/* The element count of a shape into [*numel]; 0 when the rank is out of range, a
 * dimension is negative or the count exceeds 2^60. */
int ctxrt__shape_numel(int32_t ndim, const int64_t *shape, int64_t *numel);
/* "[2, 3]" into [buf]. */
void ctxrt__format_shape(char *buf, size_t size, int32_t ndim, const int64_t *shape);
/* Weights with room for [count] tensors and none filled in. */
CtxrtWeights *ctxrt__weights_alloc(int32_t count);
/* Gives [t] a copy of the name and an uninitialised aligned data block; 0 when out
 * of memory or the shape is bad (free what was set with ctxrt_weights_destroy). */
int ctxrt__tensor_init(CtxrtTensor *t, const char *name, size_t name_len, int32_t ndim,
                       const int64_t *shape);

/* Calls [fn]([ctx], line, length) for each line of [data] ([len] bytes, lines
 * split at '\n', the newline not included), counting lines in [*line], and
 * stops at the first status other than CTXRT_OK, which it returns. */
typedef CtxrtStatus (*CtxrtLineFn)(void *ctx, const char *s, size_t n);
CtxrtStatus ctxrt__each_line(const char *data, size_t len, int32_t *line, CtxrtLineFn fn,
                             void *ctx);

/* Blank characters inside a line of the text formats (not the newline). */
static inline int ctxrt__is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* --- the thread team of a compiled model (ctxrt_team.c) ------------------------ */

typedef struct CtxrtTeam CtxrtTeam;

/* A team of [n] >= 2 threads: the caller and n - 1 parked workers (fewer when
 * the system refuses to create more: ctxrt__team_size). NULL when out of
 * memory. */
CtxrtTeam *ctxrt__team_create(int64_t n);

/* The threads of [team], the caller's included; 1 for NULL. */
int64_t ctxrt__team_size(const CtxrtTeam *team);

/* Work of the host's run on every thread of a team before the kernel
 * (ctxrt__team_run): fn(arg, tid, nthreads, barrier, ctx), which may meet
 * the team at barrier(ctx) — and must, before the kernel reads what it
 * wrote. */
typedef struct {
  void (*fn)(void *arg, int64_t tid, int64_t nthreads, void (*barrier)(void *), void *ctx);
  void *arg;
} CtxrtPrelude;

/* Runs [prelude] (NULL: none), then [kernel], on every thread of [team]
 * (NULL: on the caller alone) and returns when all have finished. */
void ctxrt__team_run(CtxrtTeam *team, const CtxrtPrelude *prelude, CtxrtKernelFn kernel,
                     void *const *bufs, int64_t num_nodes, int64_t num_levels);

/* The float value rows [w0, w1) of [lin] (new ids) from [f], which
 * ctxrt_linear_fill left out under skip_val after checking every node's
 * value count and setting has_val: rows of nodes without values zero. */
void ctxrt__linear_val_rows(CtxrtLinear *lin, const CtxrtForest *f, int32_t w0, int32_t w1);

/* The phases of [lin] on [nthreads] threads under unroll_recursion
 * [max_levels] (ctxrt_linearize.c, "phases"): barrier[l] = 1 where a barrier must follow
 * level l, 0 where level l + 1 runs in the same phase ([num_levels] entries); ctxrt_linearize.c. */
void ctxrt__phases(const CtxrtLinear *lin, int32_t nthreads, int32_t max_levels,
                   int32_t *barrier);

/* The dependency steps of [lin]: the level ends at which the kernel waits for
 * its team (a barrier where [barrier] says so, NULL: after every level; none
 * between levels of one node, codegen's barrier_skippable). */
int32_t ctxrt__steps(const CtxrtLinear *lin, const int32_t *barrier);

/* The team's barrier (the kernel's barrier argument, ctx = the team). */
void ctxrt__team_barrier(void *ctx);

/* Stops and joins the workers and frees [team]; NULL is allowed. */
void ctxrt__team_destroy(CtxrtTeam *team);

/* ---- CUDA (ctxrt_cuda.c) ------------------------------------------------------ */

typedef struct CtxrtCuda CtxrtCuda;

/* The GPU side of a model with a CUDA kernel (desc->ptx): the driver, the
 * module, the weights uploaded from the host buffers [host_bufs] (PARAM and
 * PACKED entries). CTXRT_ERR_DEVICE without a driver or GPU. */
CtxrtStatus ctxrt__cuda_create(const CtxrtModelDesc *d, void *const *host_bufs, CtxrtCuda **out,
                               CtxrtError *err);
void ctxrt__cuda_destroy(CtxrtCuda *g);

/* One batch: the inputs at [host] (as the CPU kernel would get them) copied,
 * the kernel run, and the output buffer's rows (num_nodes + 1 of them) at
 * [*result], valid until the next run. */
CtxrtStatus ctxrt__cuda_run(CtxrtCuda *g, void *const *host, const CtxrtLinear *lin,
                            int64_t widest, const float **result, CtxrtError *err);

#endif /* CTXRT_INT_H */
