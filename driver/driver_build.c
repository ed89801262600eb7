/* driver_build.c — `ctx build MODEL.ctx -o OUTDIR`: a model compiled ahead of
 * time into a library with a small C API.
 *
 *   MODEL.ctx --pipeline, ilir_lower--> kernel --cg_emit_object-->
 *       OUTDIR/NAME_kernel.o (PIC, host CPU, default<O3> as the JIT)
 *   RaProgram + kernel --ctx_model_desc_init--> the model descriptor -->
 *       OUTDIR/NAME_model.c (descriptor + the API as thin wrappers over
 *       ctxrt_model_*) and OUTDIR/NAME.h (the documented API)
 *   $CC (default cc) -c NAME_model.c; $CC -shared kernel.o model.o libctxrt.a
 *       -ljansson -lm -lpthread --> OUTDIR/libNAME.so
 *   ar -M (an MRI script: kernel.o, model.o, every member of libctxrt.a) -->
 *       OUTDIR/libNAME.a (link it with -ljansson -lm -lpthread)
 *
 * NAME is the model's name or --name's; every generated symbol starts with
 * NAME_ (the kernel's is ctx_NAME_kernel), so libraries of one model built
 * with different dims and names link into one program. --cpu picks the CPU
 * the kernel is compiled for (cg_emit_object_cpu); libctxrt.a and ctxrt.h
 * are ctx_build_runtime's (the ones installed with this ctx). Exit codes: 2
 * for a bad command line or an output directory that cannot be made, 1 for
 * errors in the model, 70 when LLVM, the C compiler or ar fails (their
 * messages are passed on) or no runtime is found.
 */
/* realpath is an XSI extension in glibc: strict C11 hides it. */
#define _XOPEN_SOURCE 700

#include "driver/driver.h"
#include "driver/driver_jit.h"
#include "codegen/codegen.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Set by driver/CMakeLists.txt: the build tree's runtime, the directory the
 * build tree's ctx is in, and the install dirs relative to the prefix. */
#ifndef CTX_RT_LIB
#define CTX_RT_LIB "libctxrt.a"
#endif
#ifndef CTX_RT_INCLUDE
#define CTX_RT_INCLUDE "runtime"
#endif
#ifndef CTX_BUILD_BINDIR
#define CTX_BUILD_BINDIR "driver"
#endif
#ifndef CTX_INSTALL_BINDIR
#define CTX_INSTALL_BINDIR "bin"
#endif
#ifndef CTX_INSTALL_LIBDIR
#define CTX_INSTALL_LIBDIR "lib"
#endif
#ifndef CTX_INSTALL_INCLUDEDIR
#define CTX_INSTALL_INCLUDEDIR "include"
#endif

extern char **environ;

typedef struct {
  CtxSession *s;
  const RaProgram *p;
  IlirKernel *k;
  CtxModelDesc desc;
  const char *dir;
  const char *name; /* the model's name: the prefix of every symbol */
  char *upper;      /* the same in upper case (macros) */
  char *ptx;        /* --target cuda: the kernel's PTX */
  CtxRuntime rt;    /* the libctxrt.a and ctxrt.h it links */
} CtxBuild;

/* ---- the runtime it links ----------------------------------------------- */

static char *copy_str(const char *s) {
  char *p = ctx_xmalloc(strlen(s) + 1);
  strcpy(p, s);
  return p;
}

/* malloc'd DIR/NAME. */
static char *joined_path(const char *dir, const char *name) {
  char *p = ctx_xmalloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* [rt] from the prefix [prefix] laid out as `cmake --install` lays it out,
 * when both files are there; [looked] gets the library's path either way. */
static bool runtime_in(CtxRuntime *rt, const char *prefix, const char *from, CtxBuf *looked) {
  char *lib = joined_path(prefix, CTX_INSTALL_LIBDIR "/libctxrt.a");
  char *inc = joined_path(prefix, CTX_INSTALL_INCLUDEDIR);
  char *h = joined_path(inc, "ctxrt.h");
  bool ok = is_file(lib) && is_file(h);
  ctx_buf_printf(looked, "%s%s (%s)", ctx_buf_str(looked)[0] ? ", " : "", lib, from);
  free(h);
  if (!ok) return free(lib), free(inc), false;
  rt->lib = lib, rt->include = inc, rt->from = from;
  return true;
}

/* The prefix of the executable [exe] (realpath'd) when it sits in the
 * prefix's CTX_INSTALL_BINDIR, malloc'd; NULL otherwise. */
static char *install_prefix(const char *exe) {
  const char *bindir = CTX_INSTALL_BINDIR;
  const char *slash = strrchr(exe, '/');
  size_t n = strlen(bindir), dir = slash ? (size_t)(slash - exe) : 0;
  if (bindir[0] == '/' || dir < n + 1 || exe[dir - n - 1] != '/' ||
      strncmp(exe + dir - n, bindir, n) != 0)
    return NULL;
  char *prefix = ctx_xmalloc(dir - n);
  memcpy(prefix, exe, dir - n - 1);
  prefix[dir - n - 1] = 0;
  return prefix;
}

/* Whether the directory of [exe] is the build tree's CTX_BUILD_BINDIR. */
static bool in_build_tree(const char *exe) {
  char real[PATH_MAX];
  const char *slash = strrchr(exe, '/');
  if (!slash || !realpath(CTX_BUILD_BINDIR, real)) return false;
  return strlen(real) == (size_t)(slash - exe) && strncmp(exe, real, strlen(real)) == 0;
}

bool ctx_build_runtime(CtxRuntime *rt) {
  memset(rt, 0, sizeof *rt);
  CtxBuf looked;
  ctx_buf_init(&looked);
  const char *home = getenv("CTX_HOME");
  char exe[PATH_MAX];
  bool ok = false;
  if (home && *home) {
    ok = runtime_in(rt, home, "CTX_HOME", &looked);
  } else if (realpath("/proc/self/exe", exe)) {
    char *prefix = install_prefix(exe);
    ok = prefix && runtime_in(rt, prefix, "installed with ctx", &looked);
    free(prefix);
    if (!ok && in_build_tree(exe)) {
      rt->lib = copy_str(CTX_RT_LIB);
      rt->include = copy_str(CTX_RT_INCLUDE);
      rt->from = "the build tree";
      ok = true;
    }
  }
  if (!ok) rt->looked = copy_str(ctx_buf_str(&looked));
  ctx_buf_free(&looked);
  return ok;
}

void ctx_build_runtime_free(CtxRuntime *rt) {
  free(rt->lib), free(rt->include), free(rt->looked);
  memset(rt, 0, sizeof *rt);
}

/* ---- command line ------------------------------------------------------- */

static int build_usage(const char *fmt, const char *arg) {
  return ctx_usage_error("build", CTX_BUILD_USAGE, fmt, arg);
}

/* --name NAME / --name=NAME and --cpu likewise; CTX_OPT_NOT_MINE for others. */
static int name_or_cpu(int argc, char **argv, int *i, CtxOptions *o) {
  const char *a = argv[*i], *val = NULL;
  const char **slot = NULL;
  static const char *const opts[] = {"--name", "--cpu"};
  for (int k = 0; k < 2 && !slot; k++) {
    size_t n = strlen(opts[k]);
    if (strncmp(a, opts[k], n) != 0 || (a[n] != 0 && a[n] != '=')) continue;
    slot = k ? &o->build.cpu : &o->build.name;
    val = a[n] == '=' ? a + n + 1 : *i + 1 < argc ? argv[++*i] : "";
  }
  if (!slot) return CTX_OPT_NOT_MINE;
  if (*val == 0) return build_usage("option '%s' needs a value", a), CTX_OPT_BAD;
  if (*slot) return build_usage("option '%s' given twice", a), CTX_OPT_BAD;
  *slot = val;
  return CTX_OPT_TAKEN;
}

int ctx_build_option(int argc, char **argv, int *i, CtxOptions *o) {
  int taken = name_or_cpu(argc, argv, i, o);
  if (taken != CTX_OPT_NOT_MINE) return taken;
  const char *a = argv[*i], *val = NULL;
  if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
    o->build.verbose = true;
    return CTX_OPT_TAKEN;
  }
  if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)
    val = *i + 1 < argc ? argv[++*i] : "";
  else if (strncmp(a, "-o", 2) == 0)
    val = a + 2;
  else if (strncmp(a, "--output=", 9) == 0)
    val = a + 9;
  if (strncmp(a, "--dump", 6) == 0 || strncmp(a, "--emit", 6) == 0 ||
      strcmp(a, "--syntax-only") == 0) {
    build_usage("option '%s' does not apply to 'ctx build'", a);
    return CTX_OPT_BAD;
  }
  if (!val) return CTX_OPT_NOT_MINE;
  if (*val == 0) return build_usage("option '%s' needs a directory", a), CTX_OPT_BAD;
  if (o->build.out) return build_usage("option '%s' given twice", a), CTX_OPT_BAD;
  o->build.out = val;
  return CTX_OPT_TAKEN;
}

/* Whether [s] is a C identifier of at most 64 characters. */
static bool c_identifier(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
  size_t n = 1;
  for (; s[n]; n++)
    if (!(isalnum((unsigned char)s[n]) || s[n] == '_')) return false;
  return n <= 64;
}

/* One model file, a good --name and --cpu, and an output directory that
 * exists or can be made. */
static int check_command(const CtxOptions *o) {
  if (o->nfiles != 1)
    return build_usage(o->nfiles ? "ctx build takes one model file, found %s"
                                 : "no model file%s",
                       o->nfiles ? o->files[1] : "");
  if (!o->build.out) return build_usage("no output directory; give -o OUTDIR%s", "");
  if (o->build.name && !c_identifier(o->build.name))
    return build_usage("--name '%s' is not a C identifier (letters, digits and '_', not "
                       "starting with a digit, at most 64)", o->build.name);
  if (o->build.name && (strncmp(o->build.name, "ctxrt", 5) == 0 ||
                        strncmp(o->build.name, "ctx_", 4) == 0))
    return build_usage("--name '%s' starts like the runtime's symbols (ctxrt, ctx_)",
                       o->build.name);
  if (o->build.cpu && !cg_cpu_valid(o->build.cpu))
    return build_usage("--cpu '%s': give native, generic, x86-64-v3 or x86-64-v4 (the "
                       "last three on x86-64 hosts)", o->build.cpu);
  struct stat st;
  const char *dir = o->build.out;
  if (stat(dir, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return build_usage("'%s' is not a directory", dir);
    if (access(dir, W_OK) != 0) return build_usage("cannot write to the directory '%s'", dir);
    return 0;
  }
  if (mkdir(dir, 0777) != 0) {
    fprintf(stderr, "ctx: error: cannot create the output directory '%s': %s\n", dir,
            strerror(errno));
    return CTX_EXIT_USAGE;
  }
  return 0;
}

/* ---- files and processes ------------------------------------------------ */

/* OUTDIR/PREFIX NAME SUFFIX, malloc'd. */
static char *out_path(const CtxBuild *b, const char *prefix, const char *suffix) {
  CtxBuf buf;
  ctx_buf_init(&buf);
  ctx_buf_printf(&buf, "%s/%s%s%s", b->dir, prefix, b->name, suffix);
  char *path = ctx_xmalloc(strlen(ctx_buf_str(&buf)) + 1);
  strcpy(path, ctx_buf_str(&buf));
  ctx_buf_free(&buf);
  return path;
}

static bool write_text(const char *path, const CtxBuf *text) {
  FILE *f = fopen(path, "wb");
  const char *s = ctx_buf_str(text);
  bool ok = f && fwrite(s, 1, strlen(s), f) == strlen(s);
  if (f && fclose(f) != 0) ok = false;
  if (!ok) fprintf(stderr, "ctx: error: cannot write '%s': %s\n", path, strerror(errno));
  return ok;
}

/* Runs argv[0] (looked up in PATH) with stdin from [in] (NULL: inherited) and
 * waits; with --verbose it first prints the command line on the session's
 * output. Returns 0, or CTX_EXIT_ICE after saying what failed. */
static int run_tool(const CtxBuild *b, char *const *argv, const char *in, const char *what) {
  if (b->s->opts.build.verbose) {
    fputs("+", b->s->out);
    for (int i = 0; argv[i]; i++) fprintf(b->s->out, " %s", argv[i]);
    fprintf(b->s->out, in ? " < %s\n" : "\n", in);
    fflush(b->s->out);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in) posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ), status = 0;
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    fprintf(stderr, "ctx: error: cannot run '%s' (%s): %s%s\n", argv[0], what, strerror(rc),
            strcmp(what, "ar") ? "; set CC to a C compiler" : "");
    return CTX_EXIT_ICE;
  }
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return CTX_EXIT_ICE;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    fprintf(stderr, "ctx: error: cannot run '%s' (%s); set CC to a C compiler\n", argv[0], what);
  else
    fprintf(stderr, "ctx: error: '%s' failed (%s, status %d)\n", argv[0], what,
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return CTX_EXIT_ICE;
}

/* The C compiler's words ($CC split at blanks, else "cc") followed by the
 * [n] words of [args], NULL-terminated; [*copy] holds the words' storage. */
static char **cc_command(const char *const *args, int n, char **copy) {
  const char *cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";
  *copy = ctx_xmalloc(strlen(cc) + 1);
  strcpy(*copy, cc);
  char **argv = ctx_xmalloc((strlen(cc) + (size_t)n + 2) * sizeof *argv);
  int m = 0;
  char *save = NULL;
  for (char *w = strtok_r(*copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
    argv[m++] = w;
  if (m == 0) argv[m++] = "cc";
  for (int i = 0; i < n; i++) argv[m++] = (char *)args[i];
  argv[m] = NULL;
  return argv;
}

static int run_cc(const CtxBuild *b, const char *const *args, int n, const char *what) {
  char *copy;
  char **argv = cc_command(args, n, &copy);
  int rc = run_tool(b, argv, NULL, what);
  free(argv);
  free(copy);
  return rc;
}

/* ---- the header --------------------------------------------------------- */

/* "[256]", "[4, 8]", "[]" */
static void print_shape(CtxBuf *out, int ndim, const long *dims) {
  ctx_buf_putc(out, '[');
  for (int d = 0; d < ndim; d++) ctx_buf_printf(out, "%s%ld", d ? ", " : "", dims[d]);
  ctx_buf_putc(out, ']');
}

/* The header's comment: what the model reads and returns, its parameters. */
static void header_comment(CtxBuf *h, const CtxBuild *b) {
  const RaProgram *p = b->p;
  const char *n = b->name;
  ctx_buf_printf(h, "/* %s.h — the model '%s', compiled ahead of time by `ctx build`.\n"
                 " * Generated from %s; do not edit.\n *\n", n, n, b->s->opts.files[0]);
  const char *cpu = b->s->opts.build.cpu;
  ctx_buf_printf(h, " * Link with lib%s.so, or with lib%s.a -ljansson -lm -lpthread (both hold\n"
                 " * the kernel and libctxrt). The kernel was compiled for %s%s\n"
                 " * (ctx build --cpu).\n"
                 " * Several libraries (ctx build --name) link into one program. A run\n"
                 " * splits each level of nodes over a team of threads, the calling one\n"
                 " * included: one per online core, or the environment variable\n"
                 " * CTXRT_THREADS when set, or %s_set_threads. Results do not depend on\n"
                 " * the count. Use one model from one thread at a time.\n *\n",
                 n, n, cpu && strcmp(cpu, "native") ? "any CPU of level " : "the CPU that built it",
                 cpu && strcmp(cpu, "native") ? cpu : "", n);
  ctx_buf_printf(h, " * Input: %ss, at most %ld dependencies a node (0: no limit), %ld value%s\n"
                 " * per node (%s). Bracketed trees carry one word id at each leaf.\n"
                 " * Structures come as text (bracketed trees, node lists: ctx's\n"
                 " * docs/formats.md) or as arrays (%s_run_arrays).\n",
                 ctxrt_kind_name(b->desc.desc.spec.kind), p->max_arity, p->values_per_node,
                 p->values_per_node == 1 ? "" : "s",
                 b->desc.desc.spec.values_on == CTXRT_VALUES_ALL ? "every node" : "leaves", n);
  for (int i = 0; i < p->ninputs; i++)
    if (p->inputs[i].is_int && p->inputs[i].bound > 0)
      ctx_buf_printf(h, " * Input '%s': word ids in [0, %ld).\n", p->inputs[i].name,
                     p->inputs[i].bound);
  ctx_buf_puts(h, " * Output: one row per structure (its root / sink / last element) of\n"
                  " * shape ");
  print_shape(h, p->out_shape.rank, p->out_shape.dims);
  ctx_buf_printf(h, ", %s_output_size() floats.\n *\n"
                 " * Weights: a safetensors file (F32; F64, F16, BF16 converted) with\n * exactly these tensors:\n", n);
  for (int i = 0; i < p->nparams; i++) {
    ctx_buf_printf(h, " *   %s ", p->params[i].name);
    print_shape(h, p->params[i].shape.rank, p->params[i].shape.dims);
    ctx_buf_putc(h, '\n');
  }
  ctx_buf_printf(h, " * or, without a file, `ctx run`'s seeded defaults.\n *\n"
                 " * Every int function returns %s_OK (0) or an error code below, and\n"
                 " * writes the message (`FILE:LINE: error: ...`) to err[0 .. errlen)\n"
                 " * (NUL-terminated, truncated; err may be NULL).\n */\n", b->upper);
}

/* NAME_run_arrays (and NAME_run_heads for tree models) and what a caller
 * needs to lay its arrays out. */
static void header_arrays(CtxBuf *h, const CtxBuild *b) {
  const char *n = b->name;
  const CtxrtSpec *spec = &b->desc.desc.spec;
  ctx_buf_printf(h, "/* Runs the model on [num_structs] structures held as arrays (no text).\n"
                 " * Structure s has num_nodes[s] nodes; per-node arrays hold the nodes of\n"
                 " * all structures one after the other, and node indices count from 0\n"
                 " * within their structure. Node n depends on num_deps[n] nodes, listed in\n"
                 " * order in [deps] (all nodes' lists concatenated): %s.\n"
                 " * [values] holds %s_num_values() doubles per node (word ids as\n"
                 " * integral values%s).\n * Checked as text is (a dependency outside its\n"
                 " * structure, cycles, roots, arity, word ids): messages name the\n"
                 " * structure (from 1) and the node (its index). The arrays are not kept. */\n"
                 "int %s_run_arrays(%s_model *m, int32_t num_structs, const int32_t *num_nodes,\n"
                 "    const int32_t *num_deps, const int32_t *deps, const double *values,\n"
                 "    char *err, size_t errlen);\n\n",
                 spec->kind == CTXRT_TREE  ? "a node's children"
                 : spec->kind == CTXRT_DAG ? "a node's predecessors"
                                           : "none for sequences (both may be NULL: each "
                                             "element\n * depends on the one before it)",
                 n, spec->values_on == CTXRT_VALUES_LEAVES
                        ? "; internal nodes' are ignored" : "",
                 n, n);
  if (spec->kind == CTXRT_TREE)
    ctx_buf_printf(h, "/* The same with each tree as a parent array: heads[n] is node n's\n"
                   " * parent (an index within its structure) or -1 for the root (CoNLL-U's\n"
                   " * HEAD minus one); a node's children come in index order. */\n"
                   "int %s_run_heads(%s_model *m, int32_t num_structs, const int32_t *num_nodes,\n"
                   "    const int32_t *heads, const double *values, char *err, size_t errlen);\n\n",
                   n, n);
  ctx_buf_printf(h, "/* Values per node of the arrays above; the kind of structure the model\n"
                 " * reads (1 tree, 2 DAG, 3 sequence); the shape of one output row into\n"
                 " * dims[0 .. rank) (room for 8), returning its rank. */\n"
                 "int %s_num_values(void);\nint %s_kind(void);\n"
                 "int %s_output_shape(int64_t *dims);\n\n", n, n, n);
}

static void header_api(CtxBuf *h, const CtxBuild *b) {
  const char *n = b->name, *u = b->upper;
  ctx_buf_printf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
                 "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", u, u);
  ctx_buf_printf(h, "enum {\n  %s_OK = 0,\n  %s_ERR_IO = 1,      /* a file could not be read */\n"
                 "  %s_ERR_SYNTAX = 2,  /* malformed input text or weights file */\n"
                 "  %s_ERR_INVALID = 3, /* input or weights that do not fit the model */\n"
                 "  %s_ERR_ARG = 4,     /* a bad argument */\n"
                 "  %s_ERR_NOMEM = 5    /* out of memory */\n};\n\n", u, u, u, u, u, u);
  ctx_buf_printf(h, "typedef struct %s_model %s_model;\n\n", n, n);
  ctx_buf_printf(h, "/* A model with the weights of the safetensors file [weights_path], or the\n"
                 " * seeded defaults (seed 0) when it is NULL, in [*out] (NULL on failure).\n"
                 " * F64, F16 and BF16 tensors are converted to float32; on success err\n"
                 " * holds the note that says so (`W.safetensors: note: 2 tensors\n"
                 " * converted to float32 from F64`), or \"\" when none was converted. */\n"
                 "int %s_create(const char *weights_path, %s_model **out, char *err,\n"
                 "              size_t errlen);\n\n", n, n);
  ctx_buf_printf(h, "/* The same with the default weights of [seed] (ctx run --seed). */\n"
                 "int %s_create_seeded(uint64_t seed, %s_model **out, char *err, size_t errlen);\n\n",
                 n, n);
  ctx_buf_printf(h, "/* Runs the model on the [len] bytes of bracketed trees (one a line, leaf\n"
                 " * tokens integer word ids, or words of %s_set_vocab's vocabulary) at\n"
                 " * [text]; the outputs replace the last run's. */\n"
                 "int %s_run_ptb(%s_model *m, const char *text, size_t len, char *err,\n"
                 "               size_t errlen);\n\n", n, n, n);
  ctx_buf_printf(h, "/* The same for node lists (docs/formats.md). */\n"
                 "int %s_run_nodes(%s_model *m, const char *text, size_t len, char *err,\n"
                 "                 size_t errlen);\n\n", n, n);
  ctx_buf_printf(h, "/* The same for CoNLL-U dependency trees (one per sentence, a node per\n"
                 " * word, children in sentence order): the word of each node is its [column]\n"
                 " * (\"FORM\", \"LEMMA\", \"UPOS\" or \"XPOS\"; NULL: FORM), looked up in the\n"
                 " * vocabulary of %s_set_vocab, or an integer word id without one. */\n"
                 "int %s_run_conllu(%s_model *m, const char *text, size_t len, const char *column,\n"
                 "                  char *err, size_t errlen);\n\n"
                 "/* The vocabulary of the text runs from now on (ctx run --vocab, --unk): the\n"
                 " * [len] bytes at [words], one word a line (id: its line from 0), words not\n"
                 " * in it taking [unk]'s id when [unk] is not NULL; [words] NULL: none (words\n"
                 " * are integer ids). On failure the model keeps its vocabulary. */\n"
                 "int %s_set_vocab(%s_model *m, const char *words, size_t len, const char *unk,\n"
                 "                 char *err, size_t errlen);\n\n"
                 "/* Whether the runs from now on give a row for every node, in the input's\n"
                 " * order (ctx run --all-nodes), not one per structure. */\n"
                 "void %s_set_all_nodes(%s_model *m, int all_nodes);\n\n", n, n, n, n, n, n, n);
  header_arrays(h, b);
  ctx_buf_printf(h, "/* The number of output rows of the last successful run (0 before). */\n"
                 "int64_t %s_num_outputs(const %s_model *m);\n\n"
                 "/* Row [i] of the last run's outputs, %s_output_size() floats, valid until\n"
                 " * the next run or destroy; NULL when [i] is out of range. */\n"
                 "const float *%s_output(const %s_model *m, int64_t i);\n\n"
                 "/* Floats per output row. */\nint64_t %s_output_size(void);\n\n"
                 "/* Frees [m]; NULL is allowed. */\nvoid %s_destroy(%s_model *m);\n\n",
                 n, n, n, n, n, n, n, n);
  ctx_output_header_api(h, b->p, n);
  ctx_buf_printf(h, "/* Runs [m] on [threads] threads from its next run on; 0: the default\n"
                 " * (CTXRT_THREADS, else one per online core). %s_ERR_ARG when negative. */\n"
                 "int %s_set_threads(%s_model *m, int threads, char *err, size_t errlen);\n\n",
                 u, n, n);
  ctx_buf_printf(h, "/* For programs that drive the runtime library themselves (ctx's\n"
                 " * runtime/ctxrt.h, linked into this library): the model's descriptor, a\n"
                 " * `const CtxrtModelDesc *`, for ctxrt_model_load and ctxrt_model_run on\n"
                 " * forests already read. */\n"
                 "const void *%s_descriptor(void);\n\n", n);
  ctx_buf_printf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s_H */\n", u);
}

/* ---- the descriptor and the API (NAME_model.c) ----------------------------- */

/* The static tables of the descriptor: buffers, parameters, word bounds. */
static void model_tables(CtxBuf *c, const CtxBuild *b) {
  const CtxrtModelDesc *d = &b->desc.desc;
  const char *n = b->name;
  ctx_buf_printf(c, "static const CtxrtModelBuf %s_bufs[] = {\n", n);
  for (int32_t i = 0; i < d->num_bufs; i++)
    ctx_buf_printf(c, "  {%d, %lld, %d, %lld, %lld, %lld, %lld, %lld}, /* %s */\n",
                   (int)d->bufs[i].kind, (long long)d->bufs[i].size, (int)d->bufs[i].param,
                   (long long)d->bufs[i].off, (long long)d->bufs[i].stride,
                   (long long)d->bufs[i].rows, (long long)d->bufs[i].cols,
                   (long long)d->bufs[i].panel, b->k->bufs[i].name);
  ctx_buf_printf(c, "  {0, 0, -1, 0, 0, 0, 0, 0}\n};\n\nstatic const CtxrtParam %s_params[] = {\n", n);
  for (int32_t i = 0; i < d->num_params; i++) {
    ctx_buf_printf(c, "  {\"%s\", %d, {", d->params[i].name, (int)d->params[i].ndim);
    for (int32_t k = 0; k < d->params[i].ndim; k++)
      ctx_buf_printf(c, "%s%lld", k ? ", " : "", (long long)d->params[i].shape[k]);
    ctx_buf_puts(c, "}},\n");
  }
  ctx_buf_printf(c, "  {\"\", 0, {0}}\n};\n\nstatic const int64_t %s_word_bound[] = {", n);
  for (int32_t i = 0; i < d->spec.num_values; i++)
    ctx_buf_printf(c, "%lld, ", (long long)d->spec.word_bound[i]);
  ctx_buf_puts(c, "0};\n\n");
}

static void model_desc(CtxBuf *c, const CtxBuild *b) {
  const CtxrtModelDesc *d = &b->desc.desc;
  const char *n = b->name;
  if (d->ptx)
    ctx_buf_printf(c, "extern const char %s_ptx[]; /* NAME_kernel.o: the PTX */\n\n", n);
  else
    ctx_buf_printf(c, "void %s(void *const *bufs, int64_t num_nodes, int64_t num_levels,\n"
                   "    int64_t tid, int64_t nthreads, void (*barrier)(void *), void *barrier_ctx);\n\n",
                   b->k->name);
  model_tables(c, b);
  ctx_buf_printf(c, "static const CtxrtModelDesc %s_desc = {\n  \"%s\", %s,\n", n, n,
                 d->ptx ? "NULL" : b->k->name);
  ctx_buf_printf(c, "  %d, %s_bufs,\n  %d, %s_params,\n", (int)d->num_bufs, n,
                 (int)d->num_params, n);
  ctx_buf_printf(c, "  {(CtxrtKind)%d, %d, %d, %d, (CtxrtValuesOn)%d, %s_word_bound},\n",
                 (int)d->spec.kind, (int)d->spec.max_arity, (int)d->spec.min_arity,
                 (int)d->spec.num_values, (int)d->spec.values_on, n);
  ctx_buf_printf(c, "  %d, %d, %lld, %lld,\n", (int)d->max_deps, (int)d->out_buf,
                 (long long)d->out_off, (long long)d->out_size);
  if (d->ptx)
    ctx_buf_printf(c, "  %s_ptx, \"%s\", %d, %lld\n};\n\n", n, d->ptx_entry,
                   (int)d->gpu_block_threads, (long long)d->gpu_shared_bytes);
  else
    ctx_buf_puts(c, "  NULL, NULL, 0, 0\n};\n\n");
}

/* NAME_run_arrays, NAME_run_heads and the layout accessors. */
static void model_arrays(CtxBuf *c, const CtxBuild *b) {
  const char *n = b->name;
  const RaShape *sh = &b->p->out_shape;
  for (int heads = 0; heads < 1 + (b->desc.desc.spec.kind == CTXRT_TREE); heads++)
    ctx_buf_printf(c, "int %s_run_%s(%s_model *m, int32_t num_structs, const int32_t *num_nodes,\n"
                   "    %s, const double *values, char *err, size_t errlen) {\n"
                   "  CtxrtError e;\n"
                   "  if (!m) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){CTXRT_ERR_ARG, 0, "
                   "\"error: no model\"}, err, errlen);\n"
                   "  CtxrtStatus st = ctxrt_model_run_arrays((CtxrtModel *)m, num_structs, "
                   "num_nodes, %s, values, &e);\n"
                   "  return %s_status(st, &e, err, errlen);\n}\n\n",
                   n, heads ? "heads" : "arrays", n,
                   heads ? "const int32_t *heads" : "const int32_t *num_deps, const int32_t *deps",
                   n, heads ? "NULL, NULL, heads" : "num_deps, deps, NULL", n);
  ctx_buf_printf(c, "int %s_num_values(void) { return %s_desc.spec.num_values; }\n\n"
                 "int %s_kind(void) { return (int)%s_desc.spec.kind; }\n\n"
                 "int %s_output_shape(int64_t *dims) {\n", n, n, n, n, n);
  for (int d = 0; d < sh->rank; d++)
    ctx_buf_printf(c, "  dims[%d] = %ld;\n", d, sh->dims[d]);
  ctx_buf_printf(c, "  (void)dims;\n  return %d;\n}\n\n", sh->rank);
}

/* The API of NAME.h over ctxrt_model_*; a NAME_model is a CtxrtModel. */
static void model_api(CtxBuf *c, const CtxBuild *b) {
  const char *n = b->name;
  ctx_buf_printf(c, "static int %s_status(CtxrtStatus st, const CtxrtError *e, char *err,\n"
                 "                      size_t errlen) {\n"
                 "  if (err && errlen) snprintf(err, errlen, \"%%s\", st ? e->msg : \"\");\n"
                 "  return (int)st;\n}\n\n", n);
  ctx_buf_printf(c, "static int %s_load(const char *path, uint64_t seed, %s_model **out,\n"
                 "                    char *err, size_t errlen) {\n"
                 "  CtxrtError e;\n  CtxrtModel *m = NULL;\n"
                 "  if (!out) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){CTXRT_ERR_ARG, 0,"
                 " \"error: out is NULL\"}, err, errlen);\n"
                 "  CtxrtStatus st = ctxrt_model_load(&%s_desc, path, seed, &m, &e);\n"
                 "  *out = (%s_model *)m;\n"
                 "  /* on success e.msg is \"\" or the note of converted tensors */\n"
                 "  if (!st && err && errlen) snprintf(err, errlen, \"%%s\", e.msg);\n"
                 "  return st ? %s_status(st, &e, err, errlen) : %s_OK;\n}\n\n",
                 n, n, n, n, n, n, b->upper);
  ctx_buf_printf(c, "int %s_create(const char *weights_path, %s_model **out, char *err,\n"
                 "              size_t errlen) {\n"
                 "  return %s_load(weights_path, 0, out, err, errlen);\n}\n\n"
                 "int %s_create_seeded(uint64_t seed, %s_model **out, char *err, size_t errlen) {\n"
                 "  return %s_load(NULL, seed, out, err, errlen);\n}\n\n", n, n, n, n, n, n);
  for (int nodes = 0; nodes < 2; nodes++)
    ctx_buf_printf(c, "int %s_run_%s(%s_model *m, const char *text, size_t len, char *err,\n"
                   "                size_t errlen) {\n  CtxrtError e;\n"
                   "  if (!m || (!text && len)) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){"
                   "CTXRT_ERR_ARG, 0, \"error: no model or no text\"}, err, errlen);\n"
                   "  CtxrtStatus st = ctxrt_model_run_text((CtxrtModel *)m, \"%s\", text ? text : \"\","
                   " len, %d, &e);\n  return %s_status(st, &e, err, errlen);\n}\n\n",
                   n, nodes ? "nodes" : "ptb", n, n, nodes ? "nodes" : "ptb", nodes, n);
  ctx_buf_printf(c, "int %s_run_conllu(%s_model *m, const char *text, size_t len, const char *column,\n"
                 "                  char *err, size_t errlen) {\n  CtxrtError e;\n"
                 "  int col = ctxrt_conllu_column(column ? column : \"FORM\");\n"
                 "  if (!m || (!text && len) || col < 0) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){"
                 "CTXRT_ERR_ARG, 0, \"error: no model, no text or a column not FORM, LEMMA, UPOS or"
                 " XPOS\"}, err, errlen);\n"
                 "  CtxrtStatus st = ctxrt_model_run_conllu((CtxrtModel *)m, \"conllu\", text ? text :"
                 " \"\", len, col, &e);\n  return %s_status(st, &e, err, errlen);\n}\n\n"
                 "int %s_set_vocab(%s_model *m, const char *words, size_t len, const char *unk,\n"
                 "                 char *err, size_t errlen) {\n  CtxrtError e;\n"
                 "  if (!m) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){CTXRT_ERR_ARG, 0, "
                 "\"error: no model\"}, err, errlen);\n"
                 "  CtxrtStatus st = ctxrt_model_set_vocab((CtxrtModel *)m, \"vocab\", words, len, unk,"
                 " &e);\n  return %s_status(st, &e, err, errlen);\n}\n\n"
                 "void %s_set_all_nodes(%s_model *m, int all_nodes) {\n"
                 "  if (m) ctxrt_model_set_all_nodes((CtxrtModel *)m, all_nodes);\n}\n\n",
                 n, n, n, n, n, n, n, n, n, n);
  model_arrays(c, b);
  ctx_buf_printf(c, "int64_t %s_num_outputs(const %s_model *m) {\n  int64_t rows = 0;\n"
                 "  if (m) ctxrt_model_outputs((const CtxrtModel *)m, &rows);\n"
                 "  return rows;\n}\n\n", n, n);
  ctx_buf_printf(c, "const float *%s_output(const %s_model *m, int64_t i) {\n  int64_t rows = 0;\n"
                 "  const float *out = m ? ctxrt_model_outputs((const CtxrtModel *)m, &rows) : NULL;\n"
                 "  return i >= 0 && i < rows ? out + i * %s_desc.out_size : NULL;\n}\n\n",
                 n, n, n);
  ctx_buf_printf(c, "int %s_set_threads(%s_model *m, int threads, char *err, size_t errlen) {\n"
                 "  CtxrtError e;\n"
                 "  CtxrtStatus st = ctxrt_model_set_threads((CtxrtModel *)m, threads, &e);\n"
                 "  return %s_status(st, &e, err, errlen);\n}\n\n", n, n, n);
  ctx_buf_printf(c, "int64_t %s_output_size(void) { return %s_desc.out_size; }\n\n"
                 "void %s_destroy(%s_model *m) { ctxrt_model_destroy((CtxrtModel *)m); }\n\n"
                 "const void *%s_descriptor(void) { return &%s_desc; }\n",
                 n, n, n, n, n, n);
  ctx_output_model_api(c, b->p, n);
}

static void model_source(CtxBuf *c, const CtxBuild *b) {
  ctx_buf_printf(c, "/* %s_model.c — the model '%s' for libctxrt: its descriptor and the API\n"
                 " * of %s.h. Generated by `ctx build` from %s; do not edit. */\n"
                 "#include \"ctxrt.h\"\n#include \"%s.h\"\n\n#include <stdio.h>\n\n",
                 b->name, b->name, b->name, b->s->opts.files[0], b->name);
  model_desc(c, b);
  model_api(c, b);
}

/* ---- compiling and linking ---------------------------------------------- */

/* NAME_model.c -> NAME_model.o; libNAME.so. */
static int compile_and_link(const CtxBuild *b, const char *kernel_o) {
  char *src = out_path(b, "", "_model.c"), *obj = out_path(b, "", "_model.o");
  char *so = out_path(b, "lib", ".so");
  const char *cc_args[] = {"-std=c11", "-O2", "-fPIC", "-I", b->dir, "-I", b->rt.include,
                           "-c", src, "-o", obj};
  int rc = run_cc(b, cc_args, (int)(sizeof cc_args / sizeof *cc_args), "compiling the model");
  const char *ld_args[] = {"-shared", "-o",  so,   kernel_o,    obj,
                           b->rt.lib, "-ljansson", "-lm", "-lpthread"};
  if (!rc) rc = run_cc(b, ld_args, (int)(sizeof ld_args / sizeof *ld_args), "linking the library");
  free(src);
  free(obj);
  free(so);
  return rc;
}

/* libNAME.a: the two objects and libctxrt's members, through an MRI script
 * (names with blanks or MRI's special characters cannot be written there). */
static int archive(const CtxBuild *b, const char *kernel_o) {
  char *obj = out_path(b, "", "_model.o"), *lib = out_path(b, "lib", ".a");
  char *mri = out_path(b, "", ".mri");
  const char *paths[] = {obj, lib, kernel_o, b->rt.lib};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
    if (strpbrk(paths[i], " \t\n;*+,()'\"")) {
      fprintf(stderr, "ctx: error: cannot archive '%s' (a blank or one of ;*+,()'\" in "
              "the path)\n", paths[i]);
      free(obj), free(lib), free(mri);
      return CTX_EXIT_USAGE;
    }
  CtxBuf text;
  ctx_buf_init(&text);
  ctx_buf_printf(&text, "CREATE %s\nADDLIB %s\nADDMOD %s\nADDMOD %s\nSAVE\nEND\n", lib,
                 b->rt.lib, kernel_o, obj);
  remove(lib);
  int rc = write_text(mri, &text) ? 0 : CTX_EXIT_ICE;
  char *argv[] = {"ar", "-M", NULL};
  if (!rc) rc = run_tool(b, argv, mri, "ar");
  remove(mri);
  ctx_buf_free(&text);
  free(obj), free(lib), free(mri);
  return rc;
}

/* Writes NAME.h and NAME_model.c. */
static int write_sources(const CtxBuild *b) {
  CtxBuf h, c;
  ctx_buf_init(&h);
  ctx_buf_init(&c);
  header_comment(&h, b);
  header_api(&h, b);
  model_source(&c, b);
  char *hp = out_path(b, "", ".h"), *cp = out_path(b, "", "_model.c");
  bool ok = write_text(hp, &h) && write_text(cp, &c);
  free(hp);
  free(cp);
  ctx_buf_free(&h);
  ctx_buf_free(&c);
  return ok ? 0 : CTX_EXIT_ICE;
}

/* --target cuda: the kernel's PTX as the string NAME_ptx in NAME_kernel.c,
 * compiled to [kernel_o]; the descriptor runs it (ctxrt_cuda.c). */
static int ptx_object(CtxBuild *b, const char *kernel_o) {
  CtxBuf ptx, c;
  ctx_buf_init(&ptx);
  ctx_buf_init(&c);
  int rc = cg_emit_ptx(&ptx, b->k, b->s->opts.gpu_arch, false, &b->s->diag) ? 0 : CTX_EXIT_ICE;
  ctx_buf_printf(&c, "/* %s_kernel.c — the PTX of the model '%s' (%s). Generated by `ctx build "
                 "--target cuda`; do not edit. */\nconst char %s_ptx[] =\n\"", b->name, b->name,
                 b->s->opts.gpu_arch, b->name);
  for (const char *p = ctx_buf_str(&ptx); *p; p++) {
    if (*p == '\n') ctx_buf_puts(&c, "\\n\"\n\"");
    else if (*p == '"' || *p == '\\') ctx_buf_printf(&c, "\\%c", *p);
    else if (*p == '\t') ctx_buf_puts(&c, "\\t");
    else ctx_buf_putc(&c, *p);
  }
  ctx_buf_puts(&c, "\";\n");
  char *src = out_path(b, "", "_kernel.c");
  if (!rc && !write_text(src, &c)) rc = CTX_EXIT_ICE;
  const char *cc_args[] = {"-O0", "-fPIC", "-c", src, "-o", kernel_o};
  if (!rc) rc = run_cc(b, cc_args, (int)(sizeof cc_args / sizeof *cc_args), "compiling the PTX");
  if (!rc) {
    b->ptx = ctx_xmalloc(strlen(ctx_buf_str(&ptx)) + 1);
    strcpy(b->ptx, ctx_buf_str(&ptx));
  }
  free(src);
  ctx_buf_free(&ptx);
  ctx_buf_free(&c);
  return rc;
}

/* ---- the verb ----------------------------------------------------------- */

/* Lowers the model, writes its object file, sources and libraries. */
static int build_all(CtxBuild *b) {
  b->k = ctx_pipeline_kernel(b->s, b->p);
  char *kernel_o = out_path(b, "", "_kernel.o");
  int rc = 0;
  /* The kernel's symbol carries the library's name, so that two builds of
   * one model link into one program. */
  if (b->k) b->k->name = ctx_arena_printf(b->s->arena, "ctx_%s_kernel", b->name);
  /* --on-cpu: the cuda-scheduled kernel as a CPU object (docs/cuda.md) */
  bool cuda = b->s->opts.target == CTX_TARGET_CUDA && !b->s->opts.gpu_on_cpu;
  if (!b->k || (cuda ? ptx_object(b, kernel_o) != 0
                     : !cg_emit_object_cpu(b->k, kernel_o, b->s->opts.build.cpu, &b->s->diag))) {
    rc = ctx_session_exit_code(b->s);
    rc = rc ? rc : CTX_EXIT_ICE;
  }
  if (!rc) {
    ctx_model_desc_init(&b->desc, b->p, b->k, NULL);
    if (cuda) ctx_model_desc_cuda(&b->desc, b->k, b->ptx);
    rc = write_sources(b);
  }
  if (!rc) rc = compile_and_link(b, kernel_o);
  if (!rc) rc = archive(b, kernel_o);
  if (!rc)
    fprintf(b->s->out, "built %s/lib%s.so, %s/lib%s.a and %s/%s.h\n", b->dir, b->name, b->dir,
            b->name, b->dir, b->name);
  free(kernel_o);
  return rc;
}

int ctx_build(CtxSession *s) {
  int rc = check_command(&s->opts);
  if (rc) return rc;
  CtxBuild b;
  memset(&b, 0, sizeof b);
  b.s = s;
  b.dir = s->opts.build.out;
  if (!ctx_build_runtime(&b.rt)) {
    fprintf(stderr, "ctx: error: cannot find the runtime (libctxrt.a and ctxrt.h)%s%s; set "
            "CTX_HOME to the prefix ctx was installed in\n", b.rt.looked[0] ? " at " : "",
            b.rt.looked);
    ctx_build_runtime_free(&b.rt);
    return CTX_EXIT_ICE;
  }
  if (s->opts.build.verbose)
    fprintf(s->out, "runtime: %s and %s/ctxrt.h (%s)\n", b.rt.lib, b.rt.include, b.rt.from);
  b.p = ctx_pipeline_ra(s, s->opts.files[0]);
  if (!b.p) {
    ctx_build_runtime_free(&b.rt);
    rc = ctx_session_exit_code(s);
    return rc ? rc : CTX_EXIT_ICE;
  }
  b.name = s->opts.build.name ? s->opts.build.name : b.p->name;
  b.upper = ctx_xmalloc(strlen(b.name) + 1);
  for (size_t i = 0; i <= strlen(b.name); i++)
    b.upper[i] = (char)toupper((unsigned char)b.name[i]);
  rc = build_all(&b);
  ctx_model_desc_free(&b.desc);
  free(b.upper);
  free(b.ptx);
  ctx_build_runtime_free(&b.rt);
  return rc;
}
