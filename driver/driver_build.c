/* driver_build.c — `ctx build MODEL.ctx -o OUTDIR`: a model compiled ahead of
 * time into a library with a small C API.
 *
 *   MODEL.ctx --pipeline, ilir_lower--> kernel --cg_emit_objects_cpu-->
 *       OUTDIR/NAME_kernel.o (PIC, host CPU, default<O3> as the JIT), and on
 *       a host of two CPUs NAME_kernel_part.o, a share of the kernel's tiles
 *       compiled on a second thread (cg_split.c)
 *   RaProgram + kernel --ctx_model_desc_init--> the model descriptor -->
 *       OUTDIR/NAME_model.c (descriptor + the API as thin wrappers over
 *       ctxrt_model_*) and OUTDIR/NAME.h (the documented API)
 *   $CC (default cc) -c NAME_model.c; $CC -shared kernel.o model.o libctxrt.a
 *       -ljansson -lm -lpthread --> OUTDIR/libNAME.so
 *   kernel.o, model.o and every member of libctxrt.a, with a symbol index
 *       (driver_archive.c) --> OUTDIR/libNAME.a (link it with -ljansson -lm
 *       -lpthread)
 *
 * The C compiler compiles NAME_model.c while LLVM compiles the kernel, and
 * the archive is written while the library links: each pair needs only what
 * came before it.
 * NAME is the model's name or --name's; every generated symbol starts with
 * NAME_ (the kernel's is ctx_NAME_kernel), so libraries of one model built
 * with different dims and names link into one program. --cpu picks the CPU
 * the kernel is compiled for (cg_emit_objects_cpu); libctxrt.a and ctxrt.h
 * are ctx_build_runtime's (the ones installed with this ctx). Exit codes: 2
 * for a bad command line or an output directory that cannot be made, 1 for
 * errors in the model, 70 when LLVM or the C compiler fails (their
 * messages are passed on), the archive cannot be written or no runtime is
 * found.
 */
/* realpath is an XSI extension in glibc: strict C11 hides it. */
#define _XOPEN_SOURCE 700

#include "driver/driver_build.h"
#include "codegen/codegen.h"

#include <ctype.h>
#include <errno.h>
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

int ctx_build_option(int argc, char **argv, int *i, CtxOptions *o) {
  int taken = ctx_value_option("build", CTX_BUILD_USAGE, "--name", argc, argv, i, &o->build.name);
  if (taken == CTX_OPT_NOT_MINE)
    taken = ctx_value_option("build", CTX_BUILD_USAGE, "--cpu", argc, argv, i, &o->build.cpu);
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
    return build_usage("--cpu '%s': " CTX_CPU_CHOICES, o->build.cpu);
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

/* Starts argv[0] (looked up in PATH) into [*pid]; with --verbose it first
 * prints the command line on the session's output. Returns 0, or
 * CTX_EXIT_ICE after saying what failed. */
static int spawn_tool(const CtxBuild *b, char *const *argv, const char *what, pid_t *pid) {
  if (b->s->opts.build.verbose) {
    fputs("+", b->s->out);
    for (int i = 0; argv[i]; i++) fprintf(b->s->out, " %s", argv[i]);
    fputs("\n", b->s->out);
    fflush(b->s->out);
  }
  int rc = posix_spawnp(pid, argv[0], NULL, NULL, argv, environ);
  if (rc == 0) return 0;
  fprintf(stderr, "ctx: error: cannot run '%s' (%s): %s; set CC to a C compiler\n", argv[0],
          what, strerror(rc));
  return CTX_EXIT_ICE;
}

/* Waits for [pid], the run of [argv0] doing [what]: 0, or CTX_EXIT_ICE after
 * saying what failed. */
static int wait_tool(pid_t pid, const char *argv0, const char *what) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return CTX_EXIT_ICE;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    fprintf(stderr, "ctx: error: cannot run '%s' (%s); set CC to a C compiler\n", argv0, what);
  else
    fprintf(stderr, "ctx: error: '%s' failed (%s, status %d)\n", argv0, what,
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return CTX_EXIT_ICE;
}

/* $CC, or "cc" (as messages name it). */
static const char *cc_name(void) {
  const char *cc = getenv("CC");
  return cc && *cc ? cc : "cc";
}

/* The C compiler's words ($CC split at blanks, else "cc") followed by the
 * [n] words of [args], NULL-terminated; [*copy] holds the words' storage. */
static char **cc_command(const char *const *args, int n, char **copy) {
  const char *cc = cc_name();
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

/* The C compiler on [args]; with [pid], started into *pid, not waited for. */
static int start_cc(const CtxBuild *b, const char *const *args, int n, const char *what,
                    pid_t *pid) {
  char *copy;
  char **argv = cc_command(args, n, &copy);
  pid_t own;
  int rc = spawn_tool(b, argv, what, pid ? pid : &own);
  if (!rc && !pid) rc = wait_tool(own, argv[0], what);
  free(argv);
  free(copy);
  return rc;
}

static int run_cc(const CtxBuild *b, const char *const *args, int n, const char *what) {
  return start_cc(b, args, n, what, NULL);
}

/* ---- compiling and linking ---------------------------------------------- */

/* NAME_model.c -> NAME_model.o, started into [*pid] (NULL: waited for).
 * Unoptimized: the file is a descriptor and calls into the runtime, with no
 * loop of its own, and -O2 took twice the CPU time (0.15 against 0.07 s)
 * while the kernel compiles on both cores beside it. */
static int compile_model(const CtxBuild *b, pid_t *pid) {
  char *src = out_path(b, "", "_model.c"), *obj = out_path(b, "", "_model.o");
  const char *cc_args[] = {"-std=c11", "-O0", "-fPIC", "-I", b->dir, "-I", b->rt.include,
                           "-c", src, "-o", obj};
  int rc = start_cc(b, cc_args, (int)(sizeof cc_args / sizeof *cc_args), "compiling the model",
                    pid);
  free(src);
  free(obj);
  return rc;
}

/* The objects both libraries are made of, into [in]: [kernel_o], the
 * kernel's second part where it has one, [model_o] and libctxrt.a. Their
 * count. */
static int library_inputs(const CtxBuild *b, const char *kernel_o, const char *model_o,
                          const char *in[4]) {
  int n = 0;
  in[n++] = kernel_o;
  if (b->kernel_part) in[n++] = b->kernel_part;
  in[n++] = model_o;
  in[n++] = b->rt.lib;
  return n;
}

/* libNAME.so, started into [*pid]. */
static int link_start(const CtxBuild *b, const char *kernel_o, pid_t *pid) {
  char *obj = out_path(b, "", "_model.o"), *so = out_path(b, "lib", ".so");
  const char *ld_args[10] = {"-shared", "-o", so};
  int n = 3 + library_inputs(b, kernel_o, obj, ld_args + 3);
  const char *libs[] = {"-ljansson", "-lm", "-lpthread"};
  for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) ld_args[n++] = libs[i];
  int rc = start_cc(b, ld_args, n, "linking the library", pid);
  free(obj);
  free(so);
  return rc;
}

/* libNAME.a (driver_archive.c). */
static int archive(const CtxBuild *b, const char *kernel_o) {
  char *obj = out_path(b, "", "_model.o"), *lib = out_path(b, "lib", ".a"), *error = NULL;
  const char *inputs[4];
  int n = library_inputs(b, kernel_o, obj, inputs);
  if (b->s->opts.build.verbose) {
    fprintf(b->s->out, "+ (archive) %s:", lib);
    for (int i = 0; i < n; i++) fprintf(b->s->out, " %s", inputs[i]);
    fprintf(b->s->out, "\n");
    fflush(b->s->out);
  }
  int rc = ctx_archive_write(lib, inputs, n, &error) ? 0 : CTX_EXIT_ICE;
  if (rc) fprintf(stderr, "ctx: error: %s\n", error);
  free(error);
  free(obj);
  free(lib);
  return rc;
}

/* Writes NAME.h and NAME_model.c. */
static int write_sources(const CtxBuild *b) {
  CtxBuf h, c;
  ctx_buf_init(&h);
  ctx_buf_init(&c);
  ctx_build_header(&h, b);
  ctx_build_model_source(&c, b);
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

/* The kernel's object file; the CPU's while the C compiler compiles the
 * model's source (written first: it needs the kernel's buffers, not its
 * code), the PTX's before (the source embeds it). */
/* The descriptor, NAME.h and NAME_model.c, and the latter's compilation
 * (started into [*pid]; NULL: waited for). */
static int model_sources(CtxBuild *b, bool cuda, pid_t *pid) {
  ctx_model_desc_init(&b->desc, b->p, b->k, NULL);
  if (cuda) ctx_model_desc_cuda(&b->desc, b->k, b->ptx);
  int rc = write_sources(b);
  return rc ? rc : compile_model(b, pid);
}

static int kernel_failed(const CtxBuild *b) {
  int rc = ctx_session_exit_code(b->s);
  return rc ? rc : CTX_EXIT_ICE;
}

static int kernel_and_model(CtxBuild *b, const char *kernel_o) {
  if (b->s->opts.target == CTX_TARGET_CUDA && !b->s->opts.gpu_on_cpu)
    return ptx_object(b, kernel_o) ? kernel_failed(b) : model_sources(b, true, NULL);
  pid_t cc = 0;
  int rc = model_sources(b, false, &cc);
  char *part_o = out_path(b, "", "_kernel_part.o");
  int nobj = cg_emit_objects_cpu(b->k, kernel_o, part_o, b->s->opts.build.cpu, &b->s->diag);
  b->kernel_part = nobj == 2 ? part_o : NULL;
  if (nobj != 2) free(part_o);
  bool ok = nobj > 0;
  if (cc) rc = wait_tool(cc, cc_name(), "compiling the model");
  return ok ? rc : kernel_failed(b);
}

/* Lowers the model, writes its object file, sources and libraries. */
static int build_all(CtxBuild *b) {
  b->k = ctx_pipeline_kernel(b->s, b->p);
  char *kernel_o = out_path(b, "", "_kernel.o");
  /* The kernel's symbol carries the library's name, so that two builds of
   * one model link into one program. --on-cpu: the cuda-scheduled kernel as a
   * CPU object (docs/cuda.md). */
  if (b->k) b->k->name = ctx_arena_printf(b->s->arena, "ctx_%s_kernel", b->name);
  int rc = b->k ? kernel_and_model(b, kernel_o) : kernel_failed(b);
  /* The archive and the shared library from the same two objects, at once. */
  pid_t ld = 0;
  if (!rc) rc = link_start(b, kernel_o, &ld);
  if (!rc) rc = archive(b, kernel_o);
  if (ld) {
    int ld_rc = wait_tool(ld, cc_name(), "linking the library");
    if (!rc) rc = ld_rc;
  }
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
  free(b.kernel_part);
  free(b.ptx);
  ctx_build_runtime_free(&b.rt);
  return rc;
}
