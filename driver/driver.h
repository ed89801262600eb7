/* driver.h — the `ctx` program: command line, sessions, and the pipeline.
 *
 * The driver is the only part of ctx that prints to the terminal on its own
 * account or chooses exit codes (support.h lists them). A session owns the
 * sources, the diagnostics sink and the arenas of one compiler invocation;
 * pipeline.c runs the stages in order in one function and stops after any
 * stage that reported errors.
 */
#ifndef CTX_DRIVER_H
#define CTX_DRIVER_H

#include "ilir/ilir.h"

typedef enum { DUMP_NONE, DUMP_TOKENS, DUMP_AST, DUMP_RA, DUMP_ILIR, DUMP_LLVM, DUMP_ASM, DUMP_PTX,
               DUMP_SCHEDULE } CtxDump;

typedef enum { CTX_FORMAT_AUTO, CTX_FORMAT_PTB, CTX_FORMAT_NODES, CTX_FORMAT_CONLLU } CtxFormat;

/* The options of `ctx run` (driver_run.c; see `ctx run --help`). */
typedef struct {
  const char *weights; /* --weights W.safetensors, or NULL: seeded defaults */
  const char *input;   /* --input FILE */
  const char *gen;     /* --gen SPEC */
  const char *vocab;   /* --vocab FILE (bracketed trees, CoNLL-U) */
  const char *conllu_column; /* --conllu-column FORM|LEMMA|UPOS|XPOS (default FORM) */
  const char *unk;     /* --unk WORD: the vocabulary word unknown words become */
  const char *output;  /* --output OUT.npy, or NULL: print a summary */
  CtxFormat format;    /* --format ptb|nodes|conllu */
  bool all_nodes;      /* --all-nodes */
  bool interp;         /* --interp: the float64 reference interpreter */
  uint64_t seed;       /* --seed N for the default weights (default 0) */
  bool time;           /* --time: print the latency per batch */
  uint64_t batch;      /* --batch B: structures per batch (0: all in one) */
  uint64_t repeat;     /* --repeat R: run every batch R times (0: once) */
  uint64_t threads;    /* --threads N (0: every core; ctxrt_model_set_threads) */
  const char *device;  /* --device N: the GPU of --target cuda (CTXRT_CUDA_DEVICE) */
  bool profile;        /* --profile: where the time goes (driver_profile.c) */
  bool perf_map;       /* --perf-map: /tmp/perf-PID.map for perf */
  bool jitdump;        /* --perf-jitdump: LLVM's jitdump for perf inject --jit */
  bool no_cache;       /* --no-cache: compile the kernel, not from the kernel cache */
} CtxRunOptions;

/* The options of `ctx build` (driver_build.c; see `ctx build --help`). */
typedef struct {
  const char *out;  /* -o OUTDIR */
  const char *name; /* --name NAME: the library's name and symbol prefix */
  const char *cpu;  /* --cpu native|generic|x86-64-v3|x86-64-v4 (NULL: native) */
  bool verbose;     /* -v, --verbose: the runtime used and every command run */
} CtxBuildOptions;

/* The options of `ctx params` (driver_params.c; see `ctx params --help`). */
typedef struct {
  bool json;                 /* --json */
  const char *template_path; /* --template W.safetensors */
  uint64_t seed;             /* --seed N for the template (default 0) */
  bool seed_given;
} CtxParamsOptions;
/* --target: where the kernel runs (docs/cuda.md). */
typedef struct {
  const char *out;   /* -o FILE.sched */
  double budget_s;   /* --budget SECONDS (0: the default, 60) */
  uint64_t seed;     /* --search-seed N */
  const char **fwd;  /* the options passed on to every ctx run (malloc'd) */
  int nfwd;
} CtxTuneOptions;

typedef enum { CTX_TARGET_CPU, CTX_TARGET_CUDA } CtxTarget;

typedef struct {
  CtxDump dump;
  CtxTarget target;     /* --target cpu|cuda */
  const char *gpu_arch; /* --gpu-arch sm_80|sm_86|sm_89|sm_90 (default sm_90) */
  bool gpu_on_cpu;      /* --on-cpu: the cuda-scheduled kernel on the CPU backend */
  long l2;              /* --l2 SIZE: the L2 per core the cpu kernel is for (0: this host's) */
  int error_limit;
  const char **files;
  int nfiles;
  bool syntax_only;     /* --syntax-only: parse, do not check */
  unsigned disabled;    /* --disable=NAME,...: RA_OPT_* turned off */
  const char *schedule; /* -s FILE.sched: the target's schedule to apply (NULL: default) */
  SemaDefine *defines;  /* -D NAME=VALUE */
  int ndefines;
  CtxRunOptions run;    /* ctx run only */
  CtxBuildOptions build; /* ctx build only */
  CtxParamsOptions params; /* ctx params only */
  CtxTuneOptions tune;     /* ctx tune only */
} CtxOptions;

typedef struct {
  CtxSources srcs;
  CtxDiag diag;
  CtxArena *arena; /* front-end lifetime: ASTs */
  CtxOptions opts;
  FILE *out; /* dumps and results */
} CtxSession;

void ctx_session_init(CtxSession *s, FILE *out, FILE *err);
void ctx_session_free(CtxSession *s);

/* Loads and parses [path]; dumps it when the options say so. Returns the
 * AST, or NULL when the file could not be read. Errors go to the session's
 * diagnostics. */
AstFile *ctx_pipeline_parse(CtxSession *s, const char *path);

/* Resolves the `use` items of [model] and of what they import, depth first
 * (driver_import.c): `use nn.lstm` loads the embedded stdlib module,
 * registered as stdlib/nn/lstm.ctx; `use "x.ctx"` loads a file relative to
 * the importing file's directory. Returns the files for sema_check (the model
 * first) and sets [*nfiles], or NULL after reporting an unknown module, an
 * unreadable file, an import cycle or a syntax error in an imported file. */
AstFile **ctx_pipeline_imports(CtxSession *s, AstFile *model, int *nfiles);

/* Runs the front end over every file of the options (ctx check). Returns an
 * exit code. */
int ctx_pipeline_check(CtxSession *s);

/* Parses and checks the model [path] (files[0] of the options) and builds its
 * RA. Returns NULL after any error (reported to the session's diagnostics). */
RaProgram *ctx_pipeline_ra(CtxSession *s, const char *path);

/* RA -> ILIR with the schedule's transformations applied: the cpu schedule
 * of the -s file, checked against [p], or the default schedule (without what
 * --disable turns off); NULL after reporting errors. */
IlirKernel *ctx_pipeline_kernel(CtxSession *s, const RaProgram *p);

/* ctx run: reads one option of the verb at argv[*i] (advancing [*i] past its
 * value) into s->opts.run. Returns CTX_OPT_NOT_MINE for an option it does not
 * know, CTX_OPT_TAKEN, or CTX_OPT_BAD after printing a usage error. */
enum { CTX_OPT_NOT_MINE, CTX_OPT_TAKEN, CTX_OPT_BAD };
#define CTX_RUN_USAGE "ctx run MODEL.ctx [--interp] [--input FILE | --gen SPEC] [options]"
int ctx_run_option(int argc, char **argv, int *i, CtxOptions *o);

/* ctx run: compiles the model, reads the input and the weights, runs the
 * model and writes or prints its outputs. Returns an exit code. */
int ctx_run(CtxSession *s);

/* ctx build (needs LLVM): an option of the verb (as ctx_run_option), and
 * the verb: the model compiled ahead of time into OUTDIR/libNAME.so,
 * OUTDIR/libNAME.a and OUTDIR/NAME.h. Returns an exit code. */
#define CTX_BUILD_USAGE \
  "ctx build MODEL.ctx -o OUTDIR [--name NAME] [--cpu CPU] [-v] [-D NAME=VALUE]..."
int ctx_build_option(int argc, char **argv, int *i, CtxOptions *o);
int ctx_build(CtxSession *s);

/* The runtime ctx build links (libctxrt.a, the directory of ctxrt.h): under
 * $CTX_HOME when set, else in the prefix this ctx is installed in (the
 * install dirs of GNUInstallDirs relative to the realpath of
 * /proc/self/exe), else the build tree's when this is the build tree's ctx.
 * ctx_build_runtime fills [rt] (malloc'd; ctx_build_runtime_free) and
 * returns true, or false with rt->looked listing where it looked. */
typedef struct {
  char *lib, *include;
  const char *from; /* "CTX_HOME", "installed with ctx" or "the build tree" */
  char *looked;     /* on failure: the libraries looked for, with their source */
} CtxRuntime;
bool ctx_build_runtime(CtxRuntime *rt);
void ctx_build_runtime_free(CtxRuntime *rt);

/* ctx params: an option of the verb (as ctx_run_option), and the verb: the
 * model's parameters with their shapes and the dims, as text or JSON, or
 * (--template) the seeded default weights written as a safetensors file.
 * Returns an exit code. */
#define CTX_PARAMS_USAGE \
  "ctx params MODEL.ctx [-D NAME=VALUE]... [--json | --template W.safetensors]"
int ctx_params_option(int argc, char **argv, int *i, CtxOptions *o);
int ctx_params(CtxSession *s);

/* The -D values (`-D H=64 -D V=100` into [out]) under which the shapes of the
 * tensors of [w] (paired with the parameters by ctxrt_weights_match) are those
 * of the parameters of the model file [path]. False when there are none, or
 * when the shapes fit already. */
bool ctx_params_fit(CtxSession *s, const char *path, const CtxrtWeights *w, CtxBuf *out);
/* ctx repl (repl_main.c, docs/repl.md): an option of the verb (--weights,
 * --threads, --seed; as ctx_run_option), and the verb: an interactive
 * session on the model files[0] (optional). Returns 0 after :quit or the end
 * of input. */
#define CTX_REPL_USAGE "ctx repl [MODEL.ctx] [-s FILE.sched] [-D NAME=VALUE]... [--weights W] [--threads N]"
int ctx_repl_option(int argc, char **argv, int *i, CtxOptions *o);
int ctx_repl(CtxSession *s);

#define CTX_TUNE_USAGE                                                                      \
  "ctx tune MODEL.ctx --input SAMPLE [-D NAME=VALUE]... [--batch B] [--threads N] "         \
  "[--budget SECONDS] -o MODEL.tuned.sched"
int ctx_tune_option(int argc, char **argv, int *i, CtxOptions *o);
int ctx_tune(CtxSession *s);
/* A run's outputs (driver_output.c). A model's output is one tensor or a
 * tuple whose fields lie side by side in each output row (RaProgram's
 * out_nfields). ctx_output_nfields: how many fields (1 for a tensor);
 * ctx_output_field: field [k]'s shape, its name in [*name] (the field's name,
 * its position for an unnamed field of a tuple, "output" for an unnamed
 * tensor; [buf] holds a made-up one) and its offset in the row in [*off]. */
int ctx_output_nfields(const RaProgram *p);
RaShape ctx_output_field(const RaProgram *p, int k, const char **name, long *off, char *buf,
                         size_t bufsize);
/* Writes [rows] output rows at [data] (doubles when [f64], else floats) to
 * [path]: OUT.npz, one array per field; OUT.npy for a tensor; OUT.FIELD.npy
 * per field of a tuple. An I/O failure is an error status with the message
 * in [err]. */
CtxrtStatus ctx_output_write(const char *path, const RaProgram *p, int64_t rows,
                             const void *data, bool f64, CtxrtError *err);
/* The summary's output lines: per field, its shape and [meaning], then at
 * most [max_rows] rows of at most [values] values. */
void ctx_output_summary(FILE *out, const RaProgram *p, int64_t rows, const double *data,
                        const char *meaning, int max_rows, int values);
/* ctx build: the per-field accessors of a tuple output, NAME_output_FIELD,
 * NAME_output_FIELD_size and NAME_output_FIELD_offset, for the header [h]
 * and the model source [c] of the library with prefix [name]; nothing for a
 * tensor output. */
void ctx_output_header_api(CtxBuf *h, const RaProgram *p, const char *name);
void ctx_output_model_api(CtxBuf *c, const RaProgram *p, const char *name);

/* An option [arg] that verb [verb] (usage line [usage], help text [help])
 * does not take: a planned feature says so, a typo gets the closest option
 * of the help text (driver_opts.c). Prints a usage error; returns
 * CTX_EXIT_USAGE. */
int ctx_unknown_option(const char *verb, const char *usage, const char *help, const char *arg);
/* The same for a verb [name] that is none of [verbs]. */
int ctx_unknown_verb(const char *name, const char *const *verbs, int nverbs);

/* `OPT VALUE` or `OPT=VALUE` at argv[*i] into *[slot] (*i past the value):
 * CTX_OPT_NOT_MINE when argv[*i] is not [opt], CTX_OPT_BAD after a usage
 * error of [verb] ([usage]): no value, or [opt] given twice. */
int ctx_value_option(const char *verb, const char *usage, const char *opt, int argc,
                     char **argv, int *i, const char **slot);

/* What `--cpu` takes (ctx build, ctx check), after "--cpu 'X': ". */
#define CTX_CPU_CHOICES \
  "give native, generic, x86-64-v3 or x86-64-v4 (the last three on x86-64 hosts)"

/* Prints `ctx: error: [fmt]` (with [arg]) and the usage line of [verb]
 * ([usage]; NULL: the general one) to stderr; returns CTX_EXIT_USAGE. */
int ctx_usage_error(const char *verb, const char *usage, const char *fmt, const char *arg);

/* The exit code the session's diagnostics call for. */
int ctx_session_exit_code(const CtxSession *s);

/* The directory of the kernel cache (codegen.h, CgJitOptions.cache_dir):
 * $CTX_CACHE_DIR, else $XDG_CACHE_HOME/ctx/kernels, else
 * $HOME/.cache/ctx/kernels; NULL (no cache) when CTX_CACHE_DIR is empty or
 * "off", or none of them is set. A static buffer. */
const char *ctx_kernel_cache_dir(void);

/* Largest source file ctx reads. */
#define CTX_MAX_SOURCE_BYTES ((size_t)256 << 20)

#endif
